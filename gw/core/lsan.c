#include "core/lsan.h"

#if defined(__SANITIZE_ADDRESS__)
#include <stdint.h>
#include <stdio.h>

#include <openssl/crypto.h>
#include <sanitizer/lsan_interface.h>

void gw_lsan_register_secure_heap(void)
{
    void *probe = OPENSSL_secure_malloc(16);
    if (!probe)
        return;
    uintptr_t at = (uintptr_t)probe;
    OPENSSL_secure_free(probe);
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof(line), f)) {
        unsigned long a, b;
        if (sscanf(line, "%lx-%lx", &a, &b) == 2 && at >= a && at < b) {
            __lsan_register_root_region((void *)a, b - a);
            break;
        }
    }
    fclose(f);
}
#else
void gw_lsan_register_secure_heap(void)
{
}
#endif
