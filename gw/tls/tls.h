/*
 * TLS through the system OpenSSL 3: one SSL_CTX per server block, SNI switching,
 * ALPN, and the self-signed certificates of the embedded default configuration.
 */
#ifndef GW_TLS_TLS_H
#define GW_TLS_TLS_H

#include <stddef.h>

#include <openssl/ssl.h>

#include "conf/conf.h"
#include "tls/sni.h"

/**
 * The async callback installed on the SSL_CTX of every server with `ssl_async on` and
 * `ssl_async_notify callback` (set once, before contexts are built). OpenSSL calls it,
 * possibly from an accelerator's thread, when a paused job may be resumed; the SSL's
 * callback argument is set per connection with SSL_set_async_callback_arg().
 */
void gw_tls_set_async_callback(SSL_async_callback_fn cb);

/** One-time OpenSSL initialisation (libssl, error strings). Returns 0, or -1 when
 * OPENSSL_init_ssl fails. */
int gw_tls_init(void);

/**
 * A new SSL_CTX of method (TLS_server_method, TLS_client_method), OpenSSL's error queue
 * cleared first. Returns it (caller owns), or NULL after adding "FILE:LINE: DIRECTIVE:
 * SSL_CTX_new failed: reason" (OpenSSL's reason) to errs.
 */
SSL_CTX *gw_tls_ctx_alloc(const SSL_METHOD *method, const char *file, int line,
                          const char *directive, gw_errlist_t *errs);

/**
 * Build the SSL_CTX of server block s: protocols, ciphers, options (client-initiated
 * renegotiation refused, compression off), every certificate/key pair (RSA and ECDSA
 * side by side: OpenSSL picks by the client's signature algorithms), session cache and
 * tickets, session id context unique to the block, ALPN "http/1.1", and the
 * ssl_conf_command list, applied last. client_hello_cb is installed as the ClientHello
 * callback (SNI switching) with arg NULL.
 *
 * Returns a new SSL_CTX (caller owns; SSL_CTX_free), or NULL after adding
 * "FILE:LINE: server: reason" messages (with OpenSSL's reasons) to errs.
 */
SSL_CTX *gw_tls_ctx_new(const gw_server_t *s, SSL_client_hello_cb_fn client_hello_cb,
                        gw_errlist_t *errs);

/**
 * Extract the host_name of the server_name extension (RFC 6066 §3) from the ClientHello
 * being processed in a ClientHello callback. Returns 1 and points *name and *len into
 * OpenSSL's copy of the hello, 0 when the client sent no SNI, -1 when the extension is
 * malformed (the handshake should then fail with a decode_error alert).
 */
int gw_tls_hello_sni(SSL *ssl, const unsigned char **name, size_t *len);

/**
 * Switch a handshaking connection to server block s's SSL_CTX (from a ClientHello
 * callback): certificates, and also the protocol range, options and cipher lists that
 * SSL_set_SSL_CTX alone would not carry over. ctx and s are borrowed (SSL_set_SSL_CTX
 * takes its own reference to ctx). Returns 1, or 0 on failure with OpenSSL's error queue
 * set; the SSL may then be half switched and the caller must fail the handshake.
 */
int gw_tls_switch(SSL *ssl, SSL_CTX *ctx, const gw_server_t *s);

/**
 * After a successful handshake: the protocol (enum gw_hs_proto, core/stats.h) and the key
 * type of the certificate the handshake used (enum gw_hs_key: GW_HS_KEY_NONE for a
 * resumed session, which uses none). Never fails: unknown cases are "other".
 */
void gw_tls_handshake_kind(SSL *ssl, int *proto, int *key);
/**
 * The key exchange group of a completed handshake (enum gw_hs_group). From
 * SSL_get_negotiated_group: a built-in group's NID, or for a provider's group (the hybrid
 * X25519MLKEM768 of the tlsgate provider) TLSEXT_nid_unknown | its TLS id, whose name
 * SSL_group_to_name gives ("X25519MLKEM768": what a $ssl_curve log variable can print).
 */
int gw_tls_handshake_group(SSL *ssl);

/**
 * Make sure dir holds the embedded default's certificates: default-rsa.{crt,key}
 * (RSA-2048) and default-ecdsa.{crt,key} (ECDSA P-256), self-signed for CN=localhost
 * with subjectAltName DNS:localhost, IP:127.0.0.1, IP:::1, valid 10 years. Existing
 * files are kept. Keys are written mode 0600, atomically (temporary file + rename).
 * Returns 0, or -1 after adding a message to errs.
 */
int gw_tls_make_default_certs(const char *dir, gw_errlist_t *errs);

#endif
