/*
 * The client-side SSL_CTX of each `proxy_pass https://` location (issue #23), built with
 * the cycle in the master (so certificate keys are read before privileges are dropped)
 * and stored in the location's settings (gw_deploy_loc_t.proxy_ssl_ctx): protocols,
 * ciphers, verification (proxy_ssl_verify, proxy_ssl_trusted_certificate,
 * proxy_ssl_verify_depth), a client certificate, and client-side session caching whose
 * sessions proxy/upstream_tls.c keeps per upstream server.
 */
#ifndef GW_TLS_UPSTREAM_CTX_H
#define GW_TLS_UPSTREAM_CTX_H

#include <openssl/ssl.h>

#include "conf/conf.h"

/**
 * Build the SSL_CTX of every https location of conf. Returns 0, or -1 after adding
 * "FILE:LINE: DIRECTIVE: reason" messages to errs (unreadable CA file, certificate or key,
 * a key that does not match, a bad cipher list); the contexts built so far stay in conf
 * and are freed by gw_tls_upstream_ctxs_free.
 */
int gw_tls_upstream_ctxs_build(gw_conf_t *conf, gw_errlist_t *errs);

/** Free the contexts gw_tls_upstream_ctxs_build stored in conf (before gw_conf_free). */
void gw_tls_upstream_ctxs_free(gw_conf_t *conf);

/**
 * The new-session callback's hook: proxy/upstream_tls.c installs fn, called with each new
 * client session of an upstream connection (OpenSSL's reference is passed on: fn returns
 * 1 when it keeps it, 0 when OpenSSL should drop it).
 */
void gw_tls_upstream_set_session_cb(int (*fn)(SSL *ssl, SSL_SESSION *sess));

#endif
