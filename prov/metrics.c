/*
 * tlsgate provider: counters and histograms, and the metrics snapshot (the provider
 * parameter "metrics", tlsgate/prov.h). Process-wide, relaxed atomics: every thread and
 * the timer count without a lock.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "prov.h"
#include "tlsgate/prov.h"

_Atomic uint64_t tg_counters[TG_C_COUNT];
const char *const tg_counter_names[TG_C_COUNT] = {
    "requests",      "requests_async", "sync",         "fallbacks",
    "batches",       "batch_fill_1",   "batch_fill_2", "batch_fill_3",
    "batch_fill_4",  "batch_fill_5",   "batch_fill_6", "batch_fill_7",
    "batch_fill_8",  "flush_full",     "flush_poll",   "flush_timer",
    "flush_resume",  "queue_wait_us",  "pool_hits",    "pool_misses",
    "flush_age",     "mode_single",    "mode_batch",   "probes",
    "probes_joined", "gcm_records",    "gcm_bytes",    "gcm_tag_failures",
};
_Atomic uint64_t tg_op_counters[TG_OP_COUNT + 1][TG_C_COUNT];

static const char *const tg_op_names[TG_OP_COUNT] = {
    "rsa2048", "rsa3072",       "rsa4096",    "ecdsa_p256", "ecdh_p256",   "keygen_p256",
    "x25519",  "keygen_x25519", "ecdsa_p384", "ecdh_p384",  "keygen_p384", "mlkem768",
};
/* The public enum tlsgate_alg must follow enum tg_op (metrics are indexed by it). */
_Static_assert((int)TLSGATE_ALG_RSA2048 == (int)TG_OP_RSA2048 &&
                   (int)TLSGATE_ALG_ECDSA_P256 == (int)TG_OP_ECDSA_P256 &&
                   (int)TLSGATE_ALG_ECDH_P256 == (int)TG_OP_ECDH_P256 &&
                   (int)TLSGATE_ALG_KEYGEN_P256 == (int)TG_OP_KEYGEN_P256 &&
                   (int)TLSGATE_ALG_X25519 == (int)TG_OP_X25519 &&
                   (int)TLSGATE_ALG_KEYGEN_X25519 == (int)TG_OP_KEYGEN_X25519 &&
                   (int)TLSGATE_ALG_ECDSA_P384 == (int)TG_OP_ECDSA_P384 &&
                   (int)TLSGATE_ALG_ECDH_P384 == (int)TG_OP_ECDH_P384 &&
                   (int)TLSGATE_ALG_KEYGEN_P384 == (int)TG_OP_KEYGEN_P384 &&
                   (int)TLSGATE_ALG_MLKEM768 == (int)TG_OP_MLKEM768 &&
                   (int)TLSGATE_ALG_COUNT == (int)TG_OP_COUNT,
               "enum tlsgate_alg follows enum tg_op");

static struct {
    _Atomic uint64_t count, sum, bucket[TLSGATE_HIST_BUCKETS];
} tg_hists[TG_OP_COUNT][TG_H_COUNT];

void tg_hist_add(enum tg_op op, enum tg_hist h, uint64_t us)
{
    atomic_fetch_add_explicit(&tg_hists[op][h].count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&tg_hists[op][h].sum, us, memory_order_relaxed);
    atomic_fetch_add_explicit(&tg_hists[op][h].bucket[tlsgate_hist_bucket(us)], 1,
                              memory_order_relaxed);
}

static void hist_copy(tlsgate_hist_t *d, enum tg_op op, enum tg_hist h)
{
    d->count = atomic_load_explicit(&tg_hists[op][h].count, memory_order_relaxed);
    d->sum = atomic_load_explicit(&tg_hists[op][h].sum, memory_order_relaxed);
    for (unsigned b = 0; b < TLSGATE_HIST_BUCKETS; b++)
        d->bucket[b] = atomic_load_explicit(&tg_hists[op][h].bucket[b], memory_order_relaxed);
}

/* Where each per-algorithm counter goes in the snapshot (fill[] is filled by a loop). */
static const struct {
    size_t off; /* offsetof(tlsgate_alg_metrics_t, field), a uint64_t */
    enum tg_counter c;
} tg_alg_fields[] = {
/* (the array's size fails to compile unless field is 8 bytes, as the copy below assumes) */
#define F(field, c)                                                                                \
    {                                                                                              \
        offsetof(tlsgate_alg_metrics_t, field) +                                                   \
            0 * sizeof(char[sizeof(((tlsgate_alg_metrics_t *)0)->field) == 8 ? 1 : -1]),           \
            c                                                                                      \
    }
    F(requests, TG_C_REQUESTS),
    F(requests_async, TG_C_REQUESTS_ASYNC),
    F(single, TG_C_SYNC),
    F(fallbacks, TG_C_FALLBACKS),
    F(pool_hits, TG_C_POOL_HITS),
    F(pool_misses, TG_C_POOL_MISSES),
    F(batches, TG_C_BATCHES),
    F(flush_full, TG_C_FLUSH_FULL),
    F(flush_poll, TG_C_FLUSH_POLL),
    F(flush_age, TG_C_FLUSH_AGE),
    F(flush_timer, TG_C_FLUSH_TIMER),
    F(flush_resume, TG_C_FLUSH_RESUME),
    F(mode_single, TG_C_MODE_SINGLE),
    F(mode_batch, TG_C_MODE_BATCH),
    F(probes, TG_C_PROBES),
    F(probes_joined, TG_C_PROBES_JOINED),
#undef F
};

void tg_metrics_snapshot(struct tlsgate_metrics *m)
{
    memset(m, 0, sizeof(*m));
    m->version = TLSGATE_METRICS_VERSION;
    m->n_alg = TLSGATE_ALG_COUNT;
    for (int op = 0; op < TG_OP_COUNT; op++) {
        tlsgate_alg_metrics_t *a = &m->alg[op];
#define C(c) atomic_load_explicit(&tg_op_counters[op][c], memory_order_relaxed)
        snprintf(a->name, sizeof(a->name), "%s", tg_op_names[op]);
        for (size_t i = 0; i < sizeof(tg_alg_fields) / sizeof(tg_alg_fields[0]); i++) {
            uint64_t v = C(tg_alg_fields[i].c);

            memcpy((char *)a + tg_alg_fields[i].off, &v, sizeof(v));
        }
        for (int k = 0; k < MB8_LANES; k++)
            a->fill[k] = C(TG_C_FILL1 + k);
#undef C
        hist_copy(&a->queue_wait_us, (enum tg_op)op, TG_H_QUEUE_WAIT);
        hist_copy(&a->batch_us, (enum tg_op)op, TG_H_BATCH);
    }
    m->gcm_records = atomic_load_explicit(&tg_counters[TG_C_GCM_RECORDS], memory_order_relaxed);
    m->gcm_bytes = atomic_load_explicit(&tg_counters[TG_C_GCM_BYTES], memory_order_relaxed);
    m->gcm_tag_failures =
        atomic_load_explicit(&tg_counters[TG_C_GCM_TAG_FAILURES], memory_order_relaxed);
}
