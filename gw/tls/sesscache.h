/*
 * The shared TLS session cache (`ssl_session_cache shared:NAME:SIZE`): serialized
 * sessions (i2d_SSL_SESSION DER) keyed by session ID, in one anonymous MAP_SHARED mapping
 * that the master creates before it forks, so every worker sees the others' sessions.
 * nginx's ngx_ssl_session_cache is the model: a zone per NAME, reused across reloads while
 * NAME and SIZE are unchanged, least recently used entries evicted when it is full,
 * expired entries never returned.
 *
 * Layout: a header (lock, counters, LRU list ends), a hash table of slot indexes, then
 * fixed-size slots of GW_SESSCACHE_SLOT bytes, each holding one session of at most
 * GW_SESSCACHE_MAX_DER bytes. The lock is a process-shared, robust pthread mutex: when a
 * worker dies holding it, the next locker gets EOWNERDEAD, empties the cache (the dead
 * worker may have left a list half linked) and marks the mutex consistent, so no worker
 * ever waits for a dead one. Nothing here uses OpenSSL, so it is unit-tested directly
 * (tests/unit/tls_sesscache_test.c).
 */
#ifndef GW_TLS_SESSCACHE_H
#define GW_TLS_SESSCACHE_H

#include <stddef.h>
#include <stdint.h>

/** Bytes of one slot, header included. 1 MB holds about 3,600 slots. */
#define GW_SESSCACHE_SLOT 288
/** Longest session ID (SSL_MAX_SSL_SESSION_ID_LENGTH; RFC 5246 §7.4.1.2). */
#define GW_SESSCACHE_MAX_ID 32
/** Longest serialized session a slot holds; longer ones are not cached (counted). */
#define GW_SESSCACHE_MAX_DER (GW_SESSCACHE_SLOT - 56)

typedef struct gw_sesscache gw_sesscache_t;

/** Counters of a zone since it was created (shared by all workers). */
typedef struct gw_sesscache_stats {
    uint64_t slots;      /* capacity in sessions */
    uint64_t used;       /* sessions held now (expired ones included until reused) */
    uint64_t stores;     /* sessions stored */
    uint64_t hits;       /* lookups that found a live session */
    uint64_t misses;     /* lookups that found nothing, or an expired session */
    uint64_t evictions;  /* live sessions dropped to make room (LRU) */
    uint64_t oversized;  /* sessions longer than GW_SESSCACHE_MAX_DER, not stored */
    uint64_t recoveries; /* times the lock was found held by a dead process */
} gw_sesscache_stats_t;

/**
 * Create a zone of bytes bytes (whole mapping, header included) in a new anonymous
 * MAP_SHARED mapping. Must be called before fork() for the children to share it.
 * Returns the zone, or NULL with errno set: EINVAL when bytes is too small for one slot
 * (at least 32 KiB is sensible), ENOMEM / mmap's errors, or a pthread_mutex_init error.
 */
gw_sesscache_t *gw_sesscache_create(size_t bytes);

/** Unmap a zone made by gw_sesscache_create (other processes keep their mapping). */
void gw_sesscache_destroy(gw_sesscache_t *z);

/**
 * The zone NAME of SIZE bytes for a configuration being built (nginx shared memory zone
 * semantics). A zone of the same NAME and SIZE that exists already (from the running
 * configuration, or an earlier server block of this one) is returned with its sessions,
 * a reference more; otherwise a new one is created. build identifies the configuration
 * being built (any pointer, e.g. the config): NAME declared in the same build with another
 * SIZE is an error. Returns the zone, or NULL after writing a reason to why (cap bytes):
 * size conflict, or creation failure. Release each reference with gw_sesscache_release.
 * Master process only; not thread-safe.
 */
gw_sesscache_t *gw_sesscache_acquire(const char *name, size_t bytes, const void *build, char *why,
                                     size_t cap);

/** Drop a reference from gw_sesscache_acquire; the last one unmaps the zone. NULL ok. */
void gw_sesscache_release(gw_sesscache_t *z);

/**
 * Store a session: id (1..GW_SESSCACHE_MAX_ID bytes), der (its i2d_SSL_SESSION form,
 * der_len bytes), expiring at expire (seconds, the same clock as now). An entry with the
 * same id is replaced. When no slot is free, the least recently used entry is dropped
 * (expired entries are taken first when the LRU end is expired). Returns 0; -1 when
 * der_len exceeds GW_SESSCACHE_MAX_DER (counted as oversized), id_len is 0 or too long,
 * or expire <= now.
 */
int gw_sesscache_store(gw_sesscache_t *z, const uint8_t *id, size_t id_len, const uint8_t *der,
                       size_t der_len, int64_t expire, int64_t now);

/**
 * Look a session up by id. When a live entry is found (expire > now), copy its DER into
 * out (cap bytes; GW_SESSCACHE_MAX_DER always suffices), make it the most recently used,
 * and return its length. Returns 0 when absent or expired (an expired entry is freed),
 * -1 when cap is too small (the entry stays).
 */
int gw_sesscache_fetch(gw_sesscache_t *z, const uint8_t *id, size_t id_len, int64_t now,
                       uint8_t *out, size_t cap);

/** Remove the session id if present (OpenSSL's remove callback: a session that failed). */
void gw_sesscache_remove(gw_sesscache_t *z, const uint8_t *id, size_t id_len);

/** Copy the zone's counters into st. */
void gw_sesscache_get_stats(gw_sesscache_t *z, gw_sesscache_stats_t *st);

#endif
