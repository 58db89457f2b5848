/*
 * The fleet session cache (`ssl_session_cache redis://...`) on a worker's connections:
 * the ClientHello callback looks the offered session up in Redis and pauses the handshake
 * (SSL_CLIENT_HELLO_RETRY: SSL_do_handshake answers SSL_ERROR_WANT_CLIENT_HELLO_CB) until
 * the reply or the timeout, the way a handshake waits for an accelerator; the fetched
 * session then reaches OpenSSL's get-session callback (tls/session.h). New sessions are
 * written with SET ... EX, fire-and-forget. Keys: "tlsgate:sess:" + the session ID bytes.
 */
#ifndef GW_HTTP_RESUME_H
#define GW_HTTP_RESUME_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "net/loop.h"
#include "tls/session.h"

struct gw_conn;

/**
 * Called last by the ClientHello callback of connection c (after the SNI switch).
 * Returns SSL_CLIENT_HELLO_SUCCESS (nothing to look up, Redis not ready, the lookup is
 * done: hit, miss or timed out), or SSL_CLIENT_HELLO_RETRY while a lookup is in flight;
 * the connection is then driven again (gw_conn_hello_resume) after the loop pass in
 * which the reply or the timeout came. Never fails the handshake.
 */
int gw_resume_client_hello(struct gw_conn *c, SSL *ssl);

/** The worker's loop, where Redis connections and lookup timers live; until it is set
 * (the master, `-t`) remote lookups and stores are skipped. */
void gw_resume_init(gw_loop_t *loop);

/** The remote store for tls/session.h (gw_tls_session_set_remote_store): SET key der EX
 * ttl_s on the worker's Redis connection of url; dropped when it is not ready. */
void gw_resume_store(const char *url, const unsigned char *id, size_t id_len,
                     const unsigned char *der, size_t der_len, int64_t ttl_s);

/**
 * The remote ticket keys for tls/session.h (gw_tls_session_set_remote_keys): the fleet's
 * keys of url for period_s-second epochs, kept fresh from Redis by a timer of the
 * worker's loop (started on the first call, which returns 0). keys[0] is the current
 * epoch's key (encrypts), then the previous and next epochs' when known (decrypt).
 * Returns the number of keys (at most 3; cap must be >= 3), 0 while the current key is
 * not known (Redis not reached yet): the caller falls back to its local keys.
 */
size_t gw_resume_ticket_keys(const char *url, int64_t period_s, gw_tls_ticket_key_t *keys,
                             size_t cap);

/** At a worker's start (worker.c): start fetching the fleet ticket keys of every server
 * block of cycle that uses `ssl_session_ticket_key redis://` (gw_tls_session_prime). */
/** Are the current keys of every fleet (ssl_session_ticket_key redis://) whose fetch was
 * started known? 1 also when there is none. The worker accepts once they are (or after a
 * bounded wait): a fresh gateway then decrypts the fleet's tickets from its first
 * connection on. */
int gw_resume_fleet_ready(void);

struct gw_cycle;
void gw_resume_worker_start(const struct gw_cycle *cycle);

#endif
