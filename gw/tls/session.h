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

#endif
