/*
 * TLS through libssl in memory, for the provider's tests (tests/prov/cipher_gcm_test.c,
 * kdf_test.c): a self-signed server certificate, a client and a server joined by a BIO
 * pair, and the loop that drives both handshakes. Each returns 1, or 0 with OpenSSL's
 * errors printed; the callers assert.
 */
#ifndef TESTS_PROV_TLS_PAIR_H
#define TESTS_PROV_TLS_PAIR_H

#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

/*
 * A P-256 key (from lib with propq) and a self-signed certificate for "localhost" of it,
 * valid from a minute ago for an hour. On failure *key and *crt are NULL.
 */
static inline int tls_self_signed(OSSL_LIB_CTX *lib, const char *propq, EVP_PKEY **key, X509 **crt)
{
    X509_NAME *n;

    *key = EVP_PKEY_Q_keygen(lib, propq, "EC", "P-256");
    *crt = X509_new_ex(lib, propq);
    if (*key == NULL || *crt == NULL || !ASN1_INTEGER_set(X509_get_serialNumber(*crt), 1) ||
        X509_gmtime_adj(X509_getm_notBefore(*crt), -60) == NULL ||
        X509_gmtime_adj(X509_getm_notAfter(*crt), 3600) == NULL || !X509_set_pubkey(*crt, *key) ||
        (n = X509_get_subject_name(*crt)) == NULL ||
        !X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"localhost", -1,
                                    -1, 0) ||
        !X509_set_issuer_name(*crt, n) || X509_sign(*crt, *key, EVP_sha256()) <= 0) {
        ERR_print_errors_fp(stderr);
        EVP_PKEY_free(*key);
        X509_free(*crt);
        *key = NULL;
        *crt = NULL;
        return 0;
    }
    return 1;
}

/*
 * A client *c of cc and a server *s of sc joined by a BIO pair (bufsize bytes each way, 0:
 * OpenSSL's default), the client offering only `suite`: a TLS 1.3 ciphersuite ("TLS_..."),
 * else a TLS 1.2 cipher, and then TLS 1.2 at most.
 */
static inline int tls_pair(SSL_CTX *cc, SSL_CTX *sc, const char *suite, size_t bufsize, SSL **c,
                           SSL **s)
{
    int tls12 = strncmp(suite, "TLS_", 4) != 0;
    BIO *cb = NULL, *sb = NULL;

    *c = SSL_new(cc);
    *s = SSL_new(sc);
    if (*c == NULL || *s == NULL || !BIO_new_bio_pair(&cb, bufsize, &sb, bufsize)) {
        ERR_print_errors_fp(stderr);
        SSL_free(*c);
        SSL_free(*s);
        *c = *s = NULL;
        return 0;
    }
    SSL_set_bio(*c, cb, cb);
    SSL_set_bio(*s, sb, sb);
    SSL_set_connect_state(*c);
    SSL_set_accept_state(*s);
    if (tls12 ? SSL_set_max_proto_version(*c, TLS1_2_VERSION) && SSL_set_cipher_list(*c, suite)
              : SSL_set_ciphersuites(*c, suite))
        return 1;
    ERR_print_errors_fp(stderr);
    return 0;
}

/* Runs both handshakes (the records move through the BIO pair) until both are done. */
static inline int tls_pump(SSL *c, SSL *s)
{
    int i, rc = 0, rs = 0;

    for (i = 0; i < 200 && (rc != 1 || rs != 1); i++) {
        if (rc != 1) {
            rc = SSL_do_handshake(c);
            if (rc != 1 && SSL_get_error(c, rc) != SSL_ERROR_WANT_READ)
                break;
        }
        if (rs != 1) {
            rs = SSL_do_handshake(s);
            if (rs != 1 && SSL_get_error(s, rs) != SSL_ERROR_WANT_READ)
                break;
        }
    }
    if (rc == 1 && rs == 1)
        return 1;
    ERR_print_errors_fp(stderr);
    return 0;
}

#endif
