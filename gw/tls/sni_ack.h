/*
 * The server's acknowledgement of SNI (RFC 6066 §3): "A server that receives a client
 * hello containing the server_name extension MAY use the information contained in the
 * extension to guide its selection of an appropriate certificate to return to the
 * client, and/or other aspects of security policy. In this event, the server SHALL
 * include an extension of type server_name in the (extended) server hello. The
 * extension_data field of this extension SHALL be empty."
 *
 * OpenSSL sends that empty extension (in the ServerHello of TLS 1.2, the
 * EncryptedExtensions of TLS 1.3; never on a resumption, where the RFC forbids it) only
 * when a servername callback answers SSL_TLSEXT_ERR_OK. tlsgate chooses the server block
 * in its ClientHello callback, so this callback only reports what that one decided.
 */
#ifndef GW_TLS_SNI_ACK_H
#define GW_TLS_SNI_ACK_H

#include <openssl/ssl.h>

/** Install the servername callback on ctx (every server block's SSL_CTX: OpenSSL runs
 * the callback of the context the connection has switched to). Never fails. */
void gw_tls_sni_ack_setup(SSL_CTX *ctx);

/**
 * Mark that this handshake's server_name was used to choose its server block (called
 * from the ClientHello callback, before OpenSSL runs the servername callback): the
 * ServerHello/EncryptedExtensions then carries the empty server_name extension. Returns
 * 0, or -1 when OpenSSL cannot store the mark (out of memory: no acknowledgement).
 */
int gw_tls_sni_used(SSL *ssl);

#endif
