#include "core/stats.h"

#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

static gw_stats_t local_stats;
gw_stats_t *gw_stats = &local_stats;
static gw_worker_stats_t local_wstats;
gw_worker_stats_t *gw_wstats = &local_wstats;

/* The numeric part of an algorithm's metrics: uint64_t words from `requests` to the end. */
#define ALG_WORDS_OFF offsetof(tlsgate_alg_metrics_t, requests)
#define ALG_WORDS ((sizeof(tlsgate_alg_metrics_t) - ALG_WORDS_OFF) / sizeof(uint64_t))
_Static_assert(offsetof(tlsgate_metrics_t, gcm_tag_failures) ==
                   offsetof(tlsgate_metrics_t, gcm_records) + 2 * sizeof(uint64_t),
               "the record cipher counters are 3 consecutive words");
_Static_assert(ALG_WORDS_OFF % sizeof(uint64_t) == 0, "alg metrics words misaligned");
_Static_assert((sizeof(tlsgate_alg_metrics_t) - ALG_WORDS_OFF) % sizeof(uint64_t) == 0,
               "alg metrics not whole words");
_Static_assert(offsetof(gw_obs_t, prov) == offsetof(gw_obs_t, prov_valid) + sizeof(uint64_t),
               "gw_obs_t layout");
_Static_assert(offsetof(gw_obs_t, prov_valid) % sizeof(uint64_t) == 0, "gw_obs_t layout");
#define OBS_HEAD_WORDS (offsetof(gw_obs_t, prov_valid) / sizeof(uint64_t))

int gw_stats_init_shared(void)
{
    void *p =
        mmap(NULL, sizeof(gw_stats_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    gw_stats = p;
    return 0;
}

static uint64_t ld(const uint64_t *w)
{
    return __atomic_load_n(w, __ATOMIC_RELAXED);
}

static void st(uint64_t *w, uint64_t v)
{
    __atomic_store_n(w, v, __ATOMIC_RELAXED);
}

void gw_stats_handshake(int proto, int key, int resumed, uint64_t us)
{
    if (proto < 0 || proto >= GW_HS_PROTOS)
        proto = GW_HS_PROTO_OTHER;
    if (key < 0 || key >= GW_HS_KEYS)
        key = GW_HS_KEY_OTHER;
    gw_obs_t *o = &gw_wstats->obs;
    gw_obs_inc(&o->hs[proto][key][resumed ? 1 : 0], 1);
    gw_obs_hist_add(&o->hs_us, us);
}

void gw_stats_handshake_group(int group)
{
    if (group < 0 || group >= GW_HS_GROUPS)
        group = GW_HS_G_OTHER;
    gw_obs_inc(&gw_wstats->obs.hs_group[group], 1);
}

/* Copy a provider name into dst (16 bytes, always NUL-terminated) unless dst has one. */
static void take_name(char *dst, const char *src)
{
    if (dst[0] || !src[0])
        return;
    size_t n = strnlen(src, sizeof(((tlsgate_alg_metrics_t *)0)->name) - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

void gw_stats_store_provider(gw_worker_stats_t *ws, const tlsgate_metrics_t *m,
                             const tlsgate_metrics_t *base)
{
    tlsgate_metrics_t *d = &ws->obs.prov;
    d->version = TLSGATE_METRICS_VERSION;
    d->n_alg = TLSGATE_ALG_COUNT;
    for (size_t a = 0; a < TLSGATE_ALG_COUNT; a++) {
        take_name(d->alg[a].name, m->alg[a].name);
        const uint64_t *src = (const uint64_t *)((const char *)&m->alg[a] + ALG_WORDS_OFF);
        const uint64_t *b =
            base ? (const uint64_t *)((const char *)&base->alg[a] + ALG_WORDS_OFF) : NULL;
        uint64_t *dst = (uint64_t *)((char *)&d->alg[a] + ALG_WORDS_OFF);
        for (size_t i = 0; i < ALG_WORDS; i++) {
            uint64_t v = src[i];
            if (b && v >= b[i])
                v -= b[i];
            st(&dst[i], v);
        }
    }
    const uint64_t *gs = &m->gcm_records, *gb = base ? &base->gcm_records : NULL;
    uint64_t *gd = &d->gcm_records;
    for (size_t i = 0; i < 3; i++) /* gcm_records, gcm_bytes, gcm_tag_failures */
        st(&gd[i], gb && gs[i] >= gb[i] ? gs[i] - gb[i] : gs[i]);
    /* release: a reader that sees prov_valid (acquire) sees the names written above */
    __atomic_store_n(&ws->obs.prov_valid, 1, __ATOMIC_RELEASE);
}

void gw_obs_add(gw_obs_t *dst, const gw_obs_t *src)
{
    /* handshake counters and the two histograms: leading words */
    uint64_t *dw = (uint64_t *)dst;
    const uint64_t *sw = (const uint64_t *)src;
    for (size_t i = 0; i < OBS_HEAD_WORDS; i++)
        st(&dw[i], ld(&dw[i]) + ld(&sw[i]));
    if (!__atomic_load_n(&src->prov_valid, __ATOMIC_ACQUIRE))
        return;
    dst->prov.version = TLSGATE_METRICS_VERSION;
    dst->prov.n_alg = TLSGATE_ALG_COUNT;
    for (size_t a = 0; a < TLSGATE_ALG_COUNT; a++) {
        take_name(dst->prov.alg[a].name, src->prov.alg[a].name);
        uint64_t *d = (uint64_t *)((char *)&dst->prov.alg[a] + ALG_WORDS_OFF);
        const uint64_t *s = (const uint64_t *)((const char *)&src->prov.alg[a] + ALG_WORDS_OFF);
        for (size_t i = 0; i < ALG_WORDS; i++)
            st(&d[i], ld(&d[i]) + ld(&s[i]));
    }
    st(&dst->prov.gcm_records, ld(&dst->prov.gcm_records) + ld(&src->prov.gcm_records));
    st(&dst->prov.gcm_bytes, ld(&dst->prov.gcm_bytes) + ld(&src->prov.gcm_bytes));
    st(&dst->prov.gcm_tag_failures,
       ld(&dst->prov.gcm_tag_failures) + ld(&src->prov.gcm_tag_failures));
    __atomic_store_n(&dst->prov_valid, 1, __ATOMIC_RELEASE);
}

static void clear_words(void *p, size_t bytes)
{
    /* word by word, relaxed: a reader may be looking (it retries on fold_seq) */
    uint64_t *w = p;
    for (size_t i = 0; i < bytes / sizeof(uint64_t); i++)
        st(&w[i], 0);
}

void gw_stats_retire_slot(gw_stats_t *s, int slot)
{
    if (!s || slot < 0 || slot >= GW_STATS_MAX_WORKERS)
        return;
    gw_worker_stats_t *ws = &s->workers[slot];
    uint32_t seq = __atomic_load_n(&s->fold_seq, __ATOMIC_RELAXED);
    __atomic_store_n(&s->fold_seq, seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    gw_retired_t *r = &s->retired;
    int32_t pid = __atomic_load_n(&ws->pid, __ATOMIC_RELAXED);
    if (pid != 0) {
        if (pid > 0) /* not a slot whose fork failed */
            st(&r->workers, ld(&r->workers) + 1);
        st(&r->resumed, ld(&r->resumed) + ld(&ws->resumed));
        st(&r->drained, ld(&r->drained) + ld(&ws->drained));
        st(&r->want_async_job, ld(&r->want_async_job) + ld(&ws->want_async_job));
        gw_obs_add(&r->obs, &ws->obs);
    }
    __atomic_store_n(&ws->pid, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&ws->generation, 0, __ATOMIC_RELAXED);
    clear_words(&ws->conns, sizeof(*ws) - offsetof(gw_worker_stats_t, conns));
    __atomic_store_n(&s->fold_seq, seq + 2, __ATOMIC_RELEASE);
}

int gw_stats_alloc_slot(gw_stats_t *s, uint32_t generation)
{
    for (int i = 0; i < GW_STATS_MAX_WORKERS; i++) {
        gw_worker_stats_t *ws = &s->workers[i];
        if (__atomic_load_n(&ws->pid, __ATOMIC_RELAXED) != 0)
            continue;
        clear_words(&ws->conns, sizeof(*ws) - offsetof(gw_worker_stats_t, conns));
        __atomic_store_n(&ws->generation, generation, __ATOMIC_RELAXED);
        __atomic_store_n(&ws->pid, -1, __ATOMIC_RELAXED); /* reserved until the fork is done */
        if ((uint32_t)i + 1 > __atomic_load_n(&s->n_slots, __ATOMIC_RELAXED))
            __atomic_store_n(&s->n_slots, (uint32_t)i + 1, __ATOMIC_RELEASE);
        return i;
    }
    return -1;
}
