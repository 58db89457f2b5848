/*
 * Sizing and watching OpenSSL's secure heap (`ssl_secure_heap`, gw/core/privs.c).
 *
 * OpenSSL 3.0 puts per-connection secrets there too (the server's ephemeral X25519/ECDHE
 * private key; with tlsgate's provider also its copy of the scalar) and does not fall back to
 * the ordinary heap when the arena is full: the allocation fails and so does the
 * handshake. Measured per connection (tests/integ/secheap_probe.c, docs/security.md):
 * 32 bytes with OpenSSL's default provider, 96 bytes with tlsgate's (TLS 1.3: held for
 * the connection's life, not only in flight; TLS 1.2 ECDHE: 32 / 64 bytes until the
 * client's key exchange; TLS 1.2 RSA key exchange: 0).
 *
 * So that a worker runs out of connections (worker_connections) before its secure heap
 * fills, as an nginx user expects:
 * - without `ssl_secure_heap`, the size is 8 MiB or, when worker_connections needs more,
 *   the next power of two of gw_secheap_need();
 * - with an explicit size too small for worker_connections, start-up, `-t` and reload
 *   warn (gw_secheap_check);
 * - a handshake that fails because the heap is full is logged at alert with the figures
 *   (gw_secheap_failed), at most once a second.
 */
#ifndef GW_TLS_SECHEAP_H
#define GW_TLS_SECHEAP_H

#include <stddef.h>
#include <stdint.h>

#include "conf/conf.h"

#define GW_SECHEAP_MIN_DEFAULT ((int64_t)8 << 20) /* the default when it is enough */
#define GW_SECHEAP_CONN_DEFAULT 64    /* bytes per connection, default provider (32, x2) */
#define GW_SECHEAP_CONN_TLSGATE 256   /* with tlsgate's provider (96, x2, rounded up) */
#define GW_SECHEAP_CONN_PROVIDER 2048 /* another provider (unknown: a 1 KiB key object, x2) */
#define GW_SECHEAP_KEYS_RESERVE                                                                    \
    ((int64_t)1 << 20) /* keys and ticket keys, before they
                                                      are loaded (the default's estimate) */

/**
 * Bytes of secure heap one connection of conf may hold: GW_SECHEAP_CONN_PROVIDER when an
 * `ssl_provider` other than "default" and "tlsgate" is loaded (its key objects may live
 * there), GW_SECHEAP_CONN_TLSGATE with tlsgate's (its ephemeral keys keep their 32-byte
 * scalar there), else GW_SECHEAP_CONN_DEFAULT. Each is at least twice the measured figure
 * (the buddy allocator's fragmentation).
 */
size_t gw_secheap_per_conn(const gw_conf_t *conf);

/**
 * Bytes one worker's secure heap needs for conf beyond what keys_bytes already holds:
 * worker_connections x gw_secheap_per_conn() + the tlsgate provider's idle-time pools
 * (4 kinds x pool_size entries of 128 bytes, each rounded to a power of two) + keys_bytes.
 */
int64_t gw_secheap_need(const gw_conf_t *conf, int64_t keys_bytes);

/**
 * The secure heap size for conf: `ssl_secure_heap` when set (0: off), else the default
 * (max(GW_SECHEAP_MIN_DEFAULT, gw_secheap_need(conf, GW_SECHEAP_KEYS_RESERVE)), capped at
 * 1 GiB; gw_privs_secure_heap rounds it up to a power of two). Bytes.
 */
int64_t gw_secheap_size(const gw_conf_t *conf);

/**
 * Set up the secure heap for conf (gw_privs_secure_heap(gw_secheap_size(conf))) before any
 * key is read, and remember the arena's size (the first one: it cannot change until a
 * restart). Start, `-t` and reload (the later calls only log when the size would change).
 */
void gw_secheap_init(const gw_conf_t *conf);

/**
 * After conf's keys are loaded (they hold CRYPTO_secure_used() bytes now): when the arena
 * is smaller than gw_secheap_need(conf, used), add a warning (gw_warn_add: shown by `-t`,
 * logged at start and reload) naming the sizes and the worker_connections it fits.
 * Nothing when the secure heap is off.
 */
void gw_secheap_check(const gw_conf_t *conf);

/**
 * A handshake just failed with OpenSSL's errors still queued (peeked, not consumed): when
 * the secure heap is on and either an error is ERR_R_MALLOC_FAILURE or less than
 * GW_SECHEAP_CONN_PROVIDER bytes are left, count it and log at alert (at most once per
 * second, with the number of such failures since the last line) "the secure heap is full
 * (U of S bytes in use) ...". Returns 1 when the failure was counted, else 0. peer: the
 * client's address text, for the log.
 */
int gw_secheap_failed(const char *peer);

#endif
