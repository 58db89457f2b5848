/*
 * Session resumption of a server block's SSL_CTX: the session cache mode
 * (`ssl_session_cache`), the shared cache callbacks (tls/sesscache.h), the session
 * lifetime (`ssl_session_timeout`) and the session ticket keys (`ssl_session_ticket_key`
 * files, or keys derived from a master secret that rotate on a schedule).
 *
 * OpenSSL runs the cache and ticket callbacks of the SSL_CTX a connection was created
 * with (the default server of its listen address); the callbacks then use the settings of
 * the server block chosen by SNI (SSL_get_SSL_CTX), so a session or a ticket stays inside
 * the block that made it (keys and cache entries are per block, and the session id
 * context, set per block by tls.c, is checked by OpenSSL on every resumption).
 */
#ifndef GW_TLS_SESSION_H
#define GW_TLS_SESSION_H

#include <stddef.h>

#include <openssl/ssl.h>

#include "conf/conf.h"

/**
 * Configure resumption on ctx for server block s (called by gw_tls_ctx_new, in the master,
 * before fork): cache mode and size, SSL_CTX_set_timeout(ssl_session_timeout), the shared
 * zone (gw_sesscache_acquire; the zone is released when ctx is freed), the new/get/remove
 * session callbacks, and the ticket key callback with the keys read from the
 * ssl_session_ticket_key files (48 or 80 bytes each) or, without files, automatic keys.
 * Returns 0, or -1 after writing "directive: reason" to why (cap bytes): unreadable key
 * file, wrong key file size, zone size conflict or mmap failure.
 */
int gw_tls_session_setup(SSL_CTX *ctx, const gw_server_t *s, char *why, size_t cap);

/** A session ticket key (nginx's layout of a key file: name, HMAC secret, AES key). */
typedef struct gw_tls_ticket_key {
    unsigned char name[16];
    unsigned char hmac[32];
    unsigned char aes[32];
    size_t size; /* 16: AES-128-CBC, 16-byte HMAC secret; 32: AES-256-CBC, 32 bytes */
} gw_tls_ticket_key_t;

/**
 * The remote (Redis) ticket keys, installed by the worker's HTTP layer: fills keys (cap
 * entries) for `ssl_session_ticket_key redis://` url with the current key first (it
 * encrypts) and the others (decrypt only), rotating every period_s seconds; returns how
 * many, 0 while none is known yet (automatic local keys are used then). Must not block.
 */
typedef size_t (*gw_tls_remote_keys_fn)(const char *url, int64_t period_s,
                                        gw_tls_ticket_key_t *keys, size_t cap);
void gw_tls_session_set_remote_keys(gw_tls_remote_keys_fn fn);

/**
 * The remote (Redis) session store, installed by the worker's HTTP layer
 * (http/resume.c): called from the new-session callback with the cache URL of the
 * connection's server block, the session ID (1..32 bytes), its DER (der_len bytes) and
 * the seconds it has left. Must not block (fire-and-forget). NULL: sessions are not
 * stored remotely.
 */
typedef void (*gw_tls_remote_store_fn)(const char *url, const unsigned char *id, size_t id_len,
                                       const unsigned char *der, size_t der_len, int64_t ttl_s);
void gw_tls_session_set_remote_store(gw_tls_remote_store_fn fn);

/**
 * From a ClientHello callback, after the SNI switch: does this hello offer a session
 * that the server block's remote cache (ssl_session_cache redis://) may hold? That is a
 * TLS 1.3 pre_shared_key whose first identity is a stateful ticket (1..32 bytes, tickets
 * off), or a TLS 1.2 session ID (when TLS 1.3 will not be negotiated and no session
 * ticket is offered). Returns 1 and fills id (32 bytes), *id_len, *url (borrowed from the
 * configuration) and *timeout_ms; 0 when there is nothing to look up (*url is still set
 * when the block has a remote cache, else NULL); never fails.
 */
int gw_tls_session_remote_lookup(SSL *ssl, unsigned char id[32], size_t *id_len, const char **url,
                                 int64_t *timeout_ms);

/**
 * Hand a session fetched from the remote cache (der_len bytes of i2d_SSL_SESSION, for
 * session id) to this connection's get-session callback, which OpenSSL calls later in
 * the same handshake. Copied. Returns 0, or -1 when out of memory (the handshake then
 * goes on as a full one).
 */
int gw_tls_session_prefetched(SSL *ssl, const unsigned char *id, size_t id_len,
                              const unsigned char *der, size_t der_len);

/**
 * From a ClientHello callback, after the SNI switch: when the server block takes its
 * ticket keys from a fleet (`ssl_session_ticket_key redis://`) and the fleet's current
 * key is not known yet (just after a start or reload, or Redis out of reach), this
 * connection issues no ticket: none in TLS 1.3 (SSL_set_num_tickets 0), a session ID
 * instead in TLS 1.2 (SSL_OP_NO_TICKET), so no client holds a ticket that the other
 * gateways of the fleet cannot decrypt. Asking for the keys also starts fetching them.
 * Does nothing for other blocks; never fails.
 */
void gw_tls_session_fleet_gate(SSL *ssl);

/**
 * At a worker's start: when ctx's server block takes its ticket keys from a fleet, start
 * fetching them now (not at the first handshake), so that tickets of the other gateways
 * are decrypted, and this one issues tickets, from the first milliseconds on. Never fails.
 */
void gw_tls_session_prime(SSL_CTX *ctx);

#endif
