/*
 * Observability pages: a consistent snapshot of the shared counters (gw/core/stats.h)
 * summed over the live worker slots and the retired total, rendered as JSON (`status;`)
 * or in the Prometheus text exposition format 0.0.4 (`metrics;`). libc only, so the
 * formatting is unit-tested on hand-made snapshots (tests/unit/core_obs_test.c).
 */
#ifndef GW_CORE_OBS_H
#define GW_CORE_OBS_H

#include <stddef.h>
#include <stdint.h>

#include "core/stats.h"

/** A growing output buffer. Zero-initialise; data is NUL-terminated when len > 0; the
 * owner frees data with free(). failed is set (and stays set) when memory ran out. */
typedef struct gw_obuf {
    char *data;
    size_t len, cap;
    int failed;
} gw_obuf_t;

/** Append printf-formatted text; on failure sets b->failed and leaves b->len as it was. */
void gw_obuf_printf(gw_obuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** One live worker slot as read. */
typedef struct gw_obs_worker {
    int slot;
    int32_t pid;
    uint32_t generation;
    int64_t conns, reading, writing, waiting, paused;
    uint64_t resumed, drained, want_async_job;
    gw_obs_t obs;
} gw_obs_worker_t;

/** Everything a status page shows. Totals are retired + live workers. */
typedef struct gw_obs_snapshot {
    /* stub_status counters (process-wide, monotonic) */
    uint64_t accepted, handled, requests;
    uint64_t handshakes, handshakes_failed, handshakes_resumed, tls12, tls13;
    uint64_t responses[6];
    uint64_t reloads, worker_restarts;
    uint64_t redis_errors;                        /* see gw_stats_t */
    uint64_t sess_hits, sess_misses, sess_stores; /* see gw_stats_t */
    /* gauges: live workers only */
    int64_t active, reading, writing, waiting, paused;
    /* async job counters, observability block: retired + live */
    uint64_t resumed, drained, want_async_job;
    uint64_t retired_workers;
    gw_obs_t total;
    size_t n_workers;         /* live workers read, in workers[] */
    gw_obs_worker_t *workers; /* owned: gw_obs_snapshot_free() */
    int consistent;           /* 0: a fold kept running (the master died in it?) */
} gw_obs_snapshot_t;

/**
 * Read st into *out (zeroed first): sums over live slots (pid > 0) and the retired block,
 * retried while the master folds a slot (fold_seq). Allocates out->workers (free with
 * gw_obs_snapshot_free even on failure). Returns 0, or -1 when memory ran out (out then
 * holds the totals without the per-worker list).
 */
int gw_obs_collect(const gw_stats_t *st, gw_obs_snapshot_t *out);

/** Free what gw_obs_collect allocated; s may be NULL. */
void gw_obs_snapshot_free(gw_obs_snapshot_t *s);

/**
 * Render s as one JSON object (application/json) into b: connection gauges, the
 * stub_status counters, handshakes by protocol/key type/resumption, the accept ->
 * handshake and async pause histograms, the provider's metrics per algorithm (`"provider":
 * null` when no provider snapshot exists) and every live worker's slot. Histograms are
 * {"count","sum","buckets":[[le_us, n], ...]} with non-cumulative counts, le_us the
 * inclusive upper bound in µs (null for the last, unbounded bucket); trailing empty
 * buckets are left out. Returns 0, or -1 when b->failed.
 */
int gw_obs_format_json(const gw_obs_snapshot_t *s, gw_obuf_t *b);

/**
 * Render s in the Prometheus text format (`text/plain; version=0.0.4`) into b: every
 * metric family with # HELP and # TYPE, names prefixed tlsgate_, histograms with
 * cumulative _bucket{le} (seconds; batch sizes 1..8), +Inf, _sum and _count (count ==
 * +Inf bucket by construction). Returns 0, or -1 when b->failed.
 */
int gw_obs_format_prometheus(const gw_obs_snapshot_t *s, gw_obuf_t *b);

/** Label text of the enums: "TLSv1.2"/"TLSv1.3"/"other", "rsa"/"ecdsa"/"other"/"none". */
const char *gw_obs_proto_name(int proto);
const char *gw_obs_key_name(int key);
/** Label of enum gw_hs_group: "X25519MLKEM768", "X25519", "P-256", ..., "other", "none". */
const char *gw_obs_group_name(int group);

/**
 * The name of provider algorithm a (index into tlsgate_metrics_t.alg) for labels: the
 * provider's own name when it is made of [A-Za-z0-9_] only, else a built-in one
 * ("rsa2048", ... or "alg<N>"). Written into buf (at least 20 bytes); returns buf.
 */
const char *gw_obs_alg_name(const tlsgate_metrics_t *m, size_t a, char *buf, size_t cap);

#endif
