/*
 * Mutual TLS (issue #23): a server block's client certificate verification
 * (ssl_verify_client, ssl_client_certificate, ssl_trusted_certificate, ssl_verify_depth,
 * ssl_crl), as nginx does it: the handshake always completes (the verify callback accepts
 * whatever OpenSSL found) and the HTTP layer answers a missing or bad certificate with
 * the 400 page (gw_tls_verify_result), so the client gets a readable answer instead of an
 * alert.
 */
#ifndef GW_TLS_VERIFY_H
#define GW_TLS_VERIFY_H

#include <openssl/ssl.h>

#include "conf/conf.h"

/**
 * Set up ctx for server block s: nothing with ssl_verify_client off; else SSL_VERIFY_PEER,
 * the depth, the CA files (ssl_client_certificate: also the CA names sent to clients;
 * ssl_trusted_certificate) and the CRLs. Returns 0, or -1 after adding "FILE:LINE:
 * DIRECTIVE: reason" to errs (unreadable file, no certificate in it).
 */
int gw_tls_verify_setup(SSL_CTX *ctx, const gw_server_t *s, gw_errlist_t *errs);

/** After an SNI switch to ctx: the verify mode, callback and depth of ctx (SSL_set_SSL_CTX
 * does not carry them over). */
void gw_tls_verify_switch(SSL *ssl, SSL_CTX *ctx);

/**
 * After the handshake, for a request on a block with ssl_verify_client mode: NULL when
 * the request may go on, else the reason line of nginx's 400 page ("No required SSL
 * certificate was sent" or "The SSL certificate error").
 */
const char *gw_tls_verify_result(SSL *ssl, int mode);

#endif
