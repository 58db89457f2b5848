/*
 * Counters shared by the master and all workers (one anonymous MAP_SHARED mapping made
 * by the master before it forks), read by the status page. Updated with relaxed atomics:
 * they are statistics, not synchronisation.
 */
#ifndef GW_CORE_STATS_H
#define GW_CORE_STATS_H

#include <stdint.h>

#define GW_STATS_MAX_WORKERS 1024 /* slots: current and draining generations together */

/** Per worker process, for async TLS (ssl_async). A slot is live while pid != 0. */
typedef struct gw_worker_stats {
    int32_t pid;
    uint32_t generation;
    int64_t conns;          /* open connections */
    int64_t reading;        /* of which handshaking or reading a request head */
    int64_t writing;        /* processing or writing a response */
    int64_t waiting;        /* idle keep-alive */
    int64_t paused;         /* async jobs paused now */
    uint64_t resumed;       /* paused jobs resumed */
    uint64_t drained;       /* connections closed while a job was paused, freed after it */
    uint64_t want_async_job; /* SSL_ERROR_WANT_ASYNC_JOB: the job pool was exhausted */
} gw_worker_stats_t;

typedef struct gw_stats {
    uint64_t accepted;          /* connections accepted */
    uint64_t handled;           /* connections handled (not dropped at the limit) */
    uint64_t requests;          /* HTTP requests parsed */
    uint64_t handshakes;        /* completed TLS handshakes */
    uint64_t handshakes_failed; /* TLS handshakes that failed or were abandoned */
    uint64_t handshakes_resumed; /* of which resumed */
    uint64_t tls12, tls13;      /* completed handshakes by version */
    uint64_t responses[6];      /* by status class: [1]=1xx ... [5]=5xx */
    uint64_t reloads;           /* successful configuration reloads */
    uint64_t worker_restarts;   /* workers respawned after an unexpected exit */
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

#endif
