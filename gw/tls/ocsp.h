/*
 * OCSP stapling from files (nginx's `ssl_stapling on; ssl_stapling_file FILE;`): DER OCSP
 * responses (RFC 6960 §4.2.1, e.g. `openssl ocsp -respout`) read when the SSL_CTX is built
 * (start, `-t`, every reload), matched to the server's certificates, and sent in the
 * CertificateStatus message / status_request certificate entry extension (RFC 6066 §8,
 * RFC 8446 §4.4.2.1) only to clients that asked for it.
 */
#ifndef GW_TLS_OCSP_H
#define GW_TLS_OCSP_H

#include <openssl/ssl.h>

#include "conf/conf.h"

/**
 * Load the `ssl_stapling_file` responses of server block s into ctx (which already holds
 * every certificate of s) and install the status callback. Does nothing (returns 0) when
 * `ssl_stapling` is off or no file is given (`ssl_stapling on` without a file only logs a
 * warning: tlsgate does not query OCSP responders).
 *
 * Each file must hold exactly one DER OCSPResponse (at most 1 MiB). A response whose
 * responseStatus is not successful is logged as a warning and not stapled. A successful
 * one must carry a SingleResponse for at least one certificate of the block (matched by
 * serial number and issuer name hash, and by issuer key hash when the issuer is in the
 * certificate's chain); every certificate it matches staples that whole response. Two
 * files for the same certificate are an error. Warnings (logged at `warn`, also by
 * `tlsgate -t`): certificate status revoked or unknown, thisUpdate in the future, and
 * nextUpdate passed - such an expired response is never stapled (clients reject it).
 * When the certificate's issuer is in its chain file, the response's signature is
 * checked (RFC 6960 §4.2.2.2: the issuer or a responder it delegated) and a failure is
 * a warning (nginx does not check ssl_stapling_file at all); without the issuer it is
 * not checked.
 *
 * Returns 0, or -1 after adding "FILE:LINE: ssl_stapling_file: reason" messages to errs
 * (unreadable file, not DER, trailing bytes, too large, no basic response, for none of
 * the certificates, duplicate). The responses are owned by ctx (freed with it).
 */
int gw_ocsp_ctx_setup(SSL_CTX *ctx, const gw_server_t *s, gw_errlist_t *errs);

#endif
