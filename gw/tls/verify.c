#include "tls/verify.h"

#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include "core/log.h"

/* nginx's ngx_ssl_verify_callback: the handshake goes on whatever the chain's state; the
 * result (SSL_get_verify_result) is judged per request */
static int verify_cb(int ok, X509_STORE_CTX *x)
{
    (void)ok;
    (void)x;
    return 1;
}

static int load_cas(SSL_CTX *ctx, const char *file, int send_names, const gw_server_t *s,
                    const char *directive, gw_errlist_t *errs)
{
    char why[512];
    ERR_clear_error();
    if (SSL_CTX_load_verify_locations(ctx, file, NULL) != 1) {
        gw_ssl_reason(why, sizeof(why));
        gw_errlist_add(errs, "%s:%d: %s: cannot load \"%s\": %s", s->file ? s->file : "<config>",
                       s->line, directive, file, why);
        return -1;
    }
    if (send_names) {
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(file);
        if (!names) {
            gw_ssl_reason(why, sizeof(why));
            gw_errlist_add(errs, "%s:%d: %s: no certificate in \"%s\": %s",
                           s->file ? s->file : "<config>", s->line, directive, file, why);
            return -1;
        }
        SSL_CTX_set_client_CA_list(ctx, names);
    }
    ERR_clear_error();
    return 0;
}

int gw_tls_verify_setup(SSL_CTX *ctx, const gw_server_t *s, gw_errlist_t *errs)
{
    const gw_deploy_srv_t *d = &s->srv.dep;
    if (d->ssl_verify_client <= GW_VERIFY_OFF)
        return 0;
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, verify_cb);
    SSL_CTX_set_verify_depth(ctx, d->ssl_verify_depth >= 0 ? d->ssl_verify_depth : 1);
    if (d->ssl_client_certificate &&
        load_cas(ctx, d->ssl_client_certificate, 1, s, "ssl_client_certificate", errs) != 0)
        return -1;
    if (d->ssl_trusted_certificate &&
        load_cas(ctx, d->ssl_trusted_certificate, 0, s, "ssl_trusted_certificate", errs) != 0)
        return -1;
    if (d->ssl_crl) {
        X509_STORE *st = SSL_CTX_get_cert_store(ctx);
        X509_LOOKUP *lk = st ? X509_STORE_add_lookup(st, X509_LOOKUP_file()) : NULL;
        ERR_clear_error();
        if (!lk || X509_load_crl_file(lk, d->ssl_crl, X509_FILETYPE_PEM) <= 0) {
            char why[512];
            gw_ssl_reason(why, sizeof(why));
            gw_errlist_add(errs, "%s:%d: ssl_crl: cannot load \"%s\": %s",
                           s->file ? s->file : "<config>", s->line, d->ssl_crl, why);
            return -1;
        }
        X509_STORE_set_flags(st, X509_V_FLAG_CRL_CHECK | X509_V_FLAG_CRL_CHECK_ALL);
    }
    return 0;
}

void gw_tls_verify_switch(SSL *ssl, SSL_CTX *ctx)
{
    SSL_set_verify(ssl, SSL_CTX_get_verify_mode(ctx), SSL_CTX_get_verify_callback(ctx));
    SSL_set_verify_depth(ssl, SSL_CTX_get_verify_depth(ctx));
}

/* nginx's ngx_ssl_verify_error_optional: the errors optional_no_ca lets through */
static int ca_error(long r)
{
    return r == X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT ||
           r == X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN || r == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT ||
           r == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY ||
           r == X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE;
}

const char *gw_tls_verify_result(SSL *ssl, int mode)
{
    if (mode <= GW_VERIFY_OFF || !ssl)
        return NULL;
    X509 *x = SSL_get0_peer_certificate(ssl);
    if (!x)
        return mode == GW_VERIFY_ON ? "No required SSL certificate was sent" : NULL;
    long r = SSL_get_verify_result(ssl);
    if (r == X509_V_OK || (mode == GW_VERIFY_OPTIONAL_NO_CA && ca_error(r)))
        return NULL;
    return "The SSL certificate error";
}
