/*
 * Counters shared by the master and all workers (one anonymous MAP_SHARED mapping made
 * by the master before it forks), read by the status pages (stub_status, status,
 * metrics). Updated with relaxed atomics: they are statistics, not synchronisation.
 *
 * Each worker process has a slot (gw_worker_stats_t) that only it writes: gauges,
 * async-job counters and its observability block (gw_obs_t: handshake counters by
 * protocol x key type x resumption, log2 histograms in microseconds of accept ->
 * handshake done and of async-job pauses, and a copy of the tlsgate provider's metrics).
 * A reader sums the live slots. When the master reaps a worker it folds the worker's
 * counters into `retired` (under the seqlock fold_seq), so totals never go backwards
 * across worker exits and reloads.
 */
#ifndef GW_CORE_STATS_H
#define GW_CORE_STATS_H

#include <stdint.h>

#include "tlsgate/prov.h"

#define GW_STATS_MAX_WORKERS 1024 /* slots: current and draining generations together */

/* Handshake counters: protocol x key type of the certificate used x resumed. */
enum gw_hs_proto { GW_HS_TLS12 = 0, GW_HS_TLS13, GW_HS_PROTO_OTHER, GW_HS_PROTOS };
enum gw_hs_key {
    GW_HS_KEY_RSA = 0, /* RSA or RSA-PSS certificate */
    GW_HS_KEY_ECDSA,   /* EC certificate */
    GW_HS_KEY_OTHER,   /* another key type (Ed25519, ...) */
    GW_HS_KEY_NONE,    /* no certificate used: a resumed session (or an external PSK) */
    GW_HS_KEYS
};

/* Handshake counters by key exchange group (SSL_get_negotiated_group; the hybrid
 * post-quantum groups are a provider's, named by SSL_group_to_name). */
enum gw_hs_group {
    GW_HS_G_X25519MLKEM768 = 0,
    GW_HS_G_SECP256R1MLKEM768,
    GW_HS_G_X25519,
    GW_HS_G_P256,
    GW_HS_G_P384,
    GW_HS_G_P521,
    GW_HS_G_X448,
    GW_HS_G_FFDHE, /* any ffdhe group */
    GW_HS_G_OTHER, /* another group (brainpool, another provider's) */
    GW_HS_G_NONE,  /* no (EC)DHE: TLS 1.2 RSA key exchange, a resumption with psk_ke */
    GW_HS_GROUPS
};

/**
 * One process's observability counters (a worker's slot, or the retired total). Every
 * field is a uint64_t word, so that folding and copying can go word by word.
 */
typedef struct gw_obs {
    uint64_t hs[GW_HS_PROTOS][GW_HS_KEYS][2]; /* completed handshakes; [..][..][1]: resumed */
    uint64_t hs_group[GW_HS_GROUPS];          /* completed handshakes by group */
    tlsgate_hist_t hs_us;                     /* TCP accept -> SSL_do_handshake success, µs */
    tlsgate_hist_t async_pause_us;            /* SSL_ERROR_WANT_ASYNC -> the job resumed, µs */
    uint64_t prov_valid;                      /* != 0: prov holds a provider snapshot */
    tlsgate_metrics_t prov; /* the provider's "metrics", counted from worker start */
} gw_obs_t;

/** Per worker process. A slot is live while pid > 0 (-1: reserved during the fork). */
typedef struct gw_worker_stats {
    int32_t pid;
    uint32_t generation;
    int64_t conns;           /* open connections */
    int64_t reading;         /* of which handshaking or reading a request head */
    int64_t writing;         /* processing or writing a response */
    int64_t waiting;         /* idle keep-alive */
    int64_t paused;          /* async jobs paused now */
    uint64_t resumed;        /* paused jobs resumed */
    uint64_t drained;        /* connections closed while a job was paused, freed after it */
    uint64_t want_async_job; /* SSL_ERROR_WANT_ASYNC_JOB: the job pool was exhausted */
    gw_obs_t obs;            /* written by the worker only (plain relaxed stores) */
} gw_worker_stats_t;

/** What the master folds in when it reaps a worker (see gw_stats_retire_slot). */
typedef struct gw_retired {
    uint64_t workers; /* worker processes folded in */
    uint64_t resumed, drained, want_async_job;
    gw_obs_t obs;
} gw_retired_t;

typedef struct gw_stats {
    uint64_t accepted;           /* connections accepted */
    uint64_t handled;            /* connections handled (not dropped at the limit) */
    uint64_t requests;           /* HTTP requests parsed */
    uint64_t handshakes;         /* completed TLS handshakes */
    uint64_t handshakes_failed;  /* TLS handshakes that failed or were abandoned */
    uint64_t handshakes_resumed; /* of which resumed */
    uint64_t tls12, tls13;       /* completed handshakes by version */
    uint64_t responses[6];       /* by status class: [1]=1xx ... [5]=5xx */
    uint64_t reloads;            /* successful configuration reloads */
    uint64_t worker_restarts;    /* workers respawned after an unexpected exit */
    uint64_t redis_errors;       /* Redis (session cache, ticket keys) unreachable, slow or
                                   failing: connects failed, connections lost, timeouts */
    uint64_t sess_hits;          /* ssl_session_cache shared:/redis:// lookups that found a
                                   session (OpenSSL may still refuse it: other block) */
    uint64_t sess_misses;        /* lookups that found none (or timed out) */
    uint64_t sess_stores;        /* sessions written to the shared or remote cache */
    uint32_t fold_seq;           /* seqlock: odd while the master folds a slot into retired */
    uint32_t n_slots;            /* slots ever used (high-water mark): readers scan these */
    gw_retired_t retired;        /* counters of the workers that exited */
    gw_worker_stats_t workers[GW_STATS_MAX_WORKERS];
} gw_stats_t;

/** The shared counters; points at a private zeroed block until gw_stats_init_shared(). */
extern gw_stats_t *gw_stats;

/** Map the shared block (master, before forking). Returns 0, or -1 with errno. */
int gw_stats_init_shared(void);

#define GW_STAT_ADD(field, n) __atomic_fetch_add(&gw_stats->field, (n), __ATOMIC_RELAXED)
#define GW_STAT_GET(field) __atomic_load_n(&gw_stats->field, __ATOMIC_RELAXED)

/** This worker's slot (the master points it at the slot it assigned, in the forked
 * child; a private dummy elsewhere, or when all GW_STATS_MAX_WORKERS slots are taken). */
extern gw_worker_stats_t *gw_wstats;
#define GW_WSTAT_ADD(field, n) __atomic_fetch_add(&gw_wstats->field, (n), __ATOMIC_RELAXED)

/* One writer per slot: an increment is a relaxed load and a relaxed store (no locked
 * read-modify-write); readers in other processes see each word whole. */
static inline void gw_obs_inc(uint64_t *w, uint64_t n)
{
    __atomic_store_n(w, __atomic_load_n(w, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

/** Record value v (µs) into histogram h of the caller's own slot. */
static inline void gw_obs_hist_add(tlsgate_hist_t *h, uint64_t v)
{
    gw_obs_inc(&h->bucket[tlsgate_hist_bucket(v)], 1);
    gw_obs_inc(&h->sum, v);
    gw_obs_inc(&h->count, 1);
}

/**
 * Count a completed handshake in this worker's slot: proto (enum gw_hs_proto), key (enum
 * gw_hs_key), resumed (0/1), and its duration from accept in µs. Out-of-range enums are
 * counted as "other"; never fails.
 */
void gw_stats_handshake(int proto, int key, int resumed, uint64_t us);
/** Counts one completed handshake under its key exchange group (enum gw_hs_group; out of
 * range counts as GW_HS_G_OTHER). */
void gw_stats_handshake_group(int group);

/** Record an async job pause of us µs in this worker's slot. */
static inline void gw_stats_async_pause(uint64_t us)
{
    gw_obs_hist_add(&gw_wstats->obs.async_pause_us, us);
}

/**
 * Store a provider metrics snapshot m into slot ws (the worker's own), minus base (the
 * snapshot taken when the worker started; NULL: none), so that counts inherited from the
 * master across fork() are not counted in every worker. A counter below its base (the
 * provider reset) is stored as is. Names are copied NUL-terminated. Word by word with
 * relaxed stores; marks the slot's snapshot valid. m must be a TLSGATE_METRICS_VERSION
 * snapshot with n_alg == TLSGATE_ALG_COUNT (the caller checked it).
 */
void gw_stats_store_provider(gw_worker_stats_t *ws, const tlsgate_metrics_t *m,
                             const tlsgate_metrics_t *base);

/**
 * Add the counters of obs src into dst (histograms, handshake counters, provider
 * metrics), with relaxed atomic loads and stores; dst's provider names are taken from
 * src when dst has none. Used by the master's fold and by readers summing slots.
 */
void gw_obs_add(gw_obs_t *dst, const gw_obs_t *src);

/**
 * Master, after reaping the worker of slot (0 <= slot < GW_STATS_MAX_WORKERS; anything
 * else is ignored): fold its counters into st->retired and clear the slot, inside the
 * fold_seq seqlock so that a reader never counts them twice or not at all.
 */
void gw_stats_retire_slot(gw_stats_t *st, int slot);

/**
 * Master, before forking a worker: reserve a free slot of st (cleared, pid -1, the given
 * generation) and raise n_slots. Returns its index, or -1 when all are taken.
 */
int gw_stats_alloc_slot(gw_stats_t *st, uint32_t generation);

#endif
