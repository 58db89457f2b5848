#include "core/stats.h"

#include <stddef.h>
#include <sys/mman.h>

static gw_stats_t local_stats;
gw_stats_t *gw_stats = &local_stats;
static gw_worker_stats_t local_wstats;
gw_worker_stats_t *gw_wstats = &local_wstats;

int gw_stats_init_shared(void)
{
    void *p = mmap(NULL, sizeof(gw_stats_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED)
        return -1;
    gw_stats = p;
    return 0;
}
