#include "tls/ocsp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ocsp.h>
#include <openssl/x509.h>

#include "core/log.h"
#include "core/privs.h"

#define OCSP_FILE_MAX (1024 * 1024) /* bytes; real responses are a few KiB */
#define FUTURE_SLACK_S 300          /* thisUpdate this far ahead is clock skew, not a bug */

/* One stapled response: the certificate it is for and its DER bytes. */
typedef struct staple {
    X509 *cert; /* a reference to the SSL_CTX's certificate */
    unsigned char *der;
    size_t len;
    time_t next_update; /* 0 = the response has no nextUpdate */
} staple_t;

typedef struct staples {
    staple_t *v;
    size_t n;
} staples_t;

static int ctx_index = -1;

static void staples_free(staples_t *st)
{
    if (!st)
        return;
    for (size_t i = 0; i < st->n; i++) {
        X509_free(st->v[i].cert);
        OPENSSL_free(st->v[i].der);
    }
    free(st->v);
    free(st);
}

static void ex_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
    staples_free(ptr);
}

/* RFC 6066 §8: called by OpenSSL only when the client sent status_request, after the
 * certificate was chosen; the answer is a copy OpenSSL frees. */
static int status_cb(SSL *ssl, void *arg)
{
    const staples_t *st = arg;
    X509 *x = SSL_get_certificate(ssl);
    if (!st || !x)
        return SSL_TLSEXT_ERR_NOACK;
    for (size_t i = 0; i < st->n; i++) {
        const staple_t *p = &st->v[i];
        if (p->cert != x && X509_cmp(p->cert, x) != 0)
            continue;
        if (p->next_update && p->next_update < time(NULL))
            return SSL_TLSEXT_ERR_NOACK; /* expired: a client would reject the handshake */
        unsigned char *copy = OPENSSL_memdup(p->der, p->len);
        if (!copy)
            return SSL_TLSEXT_ERR_NOACK;
        if (!SSL_set_tlsext_status_ocsp_resp(ssl, copy, (long)p->len)) {
            OPENSSL_free(copy);
            return SSL_TLSEXT_ERR_NOACK;
        }
        return SSL_TLSEXT_ERR_OK;
    }
    return SSL_TLSEXT_ERR_NOACK;
}

static int read_file(const char *path, unsigned char **out, size_t *len, char *why, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, cap, "cannot open: %s", strerror(errno));
        return -1;
    }
    unsigned char *buf = malloc(OCSP_FILE_MAX + 1);
    if (!buf)
        abort();
    size_t n = fread(buf, 1, OCSP_FILE_MAX + 1, f);
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (err) {
        snprintf(why, cap, "cannot read: %s", strerror(err));
        free(buf);
        return -1;
    }
    if (n > OCSP_FILE_MAX) {
        snprintf(why, cap, "larger than %d bytes: not an OCSP response", OCSP_FILE_MAX);
        free(buf);
        return -1;
    }
    *out = buf;
    *len = n;
    return 0;
}

/* Is the SingleResponse's CertID (RFC 6960 §4.1.1) that of cert? The serial and the hash
 * of the issuer's name must match; with the issuer known, its key hash too. */
static int certid_matches(const OCSP_CERTID *cid, X509 *cert, X509 *issuer)
{
    ASN1_OCTET_STRING *name_hash = NULL, *key_hash = NULL;
    ASN1_OBJECT *md_obj = NULL;
    ASN1_INTEGER *serial = NULL;
    if (!OCSP_id_get0_info(&name_hash, &md_obj, &key_hash, &serial, (OCSP_CERTID *)cid))
        return 0;
    if (!serial || ASN1_INTEGER_cmp(serial, X509_get0_serialNumber(cert)) != 0)
        return 0;
    const EVP_MD *md = EVP_get_digestbyobj(md_obj);
    if (!md)
        return 0;
    if (issuer) {
        OCSP_CERTID *mine = OCSP_cert_to_id(md, cert, issuer);
        int ok = mine && OCSP_id_cmp(mine, cid) == 0;
        OCSP_CERTID_free(mine);
        return ok;
    }
    unsigned char h[EVP_MAX_MD_SIZE];
    unsigned int hl = 0;
    if (!X509_NAME_digest(X509_get_issuer_name(cert), md, h, &hl))
        return 0;
    return name_hash && (unsigned)name_hash->length == hl && memcmp(name_hash->data, h, hl) == 0;
}

static time_t asn1_time(const ASN1_GENERALIZEDTIME *t)
{
    struct tm tm;
    if (!t || !ASN1_TIME_to_tm(t, &tm))
        return 0;
    return timegm(&tm);
}

static void fmt_time(char *buf, size_t cap, time_t t)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, cap, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

typedef struct cert_ref {
    X509 *cert;
    X509 *issuer; /* from the certificate's chain; NULL when not there */
} cert_ref_t;

static size_t ctx_certs(SSL_CTX *ctx, cert_ref_t *out, size_t cap)
{
    size_t n = 0;
    if (!SSL_CTX_set_current_cert(ctx, SSL_CERT_SET_FIRST))
        return 0;
    do {
        X509 *x = SSL_CTX_get0_certificate(ctx);
        if (!x || n == cap)
            continue;
        STACK_OF(X509) *chain = NULL;
        SSL_CTX_get0_chain_certs(ctx, &chain);
        out[n].cert = x;
        out[n].issuer = NULL;
        for (int i = 0; chain && i < sk_X509_num(chain); i++) {
            X509 *c = sk_X509_value(chain, i);
            if (X509_check_issued(c, x) == X509_V_OK) {
                out[n].issuer = c;
                break;
            }
        }
        n++;
    } while (SSL_CTX_set_current_cert(ctx, SSL_CERT_SET_NEXT));
    return n;
}

/* RFC 6960 §4.2.2.2: the response must be signed by the issuer itself or by a responder
 * it delegated (id-kp-OCSPSigning). Checked against the issuer found in the chain file,
 * trusted as it is (partial chain). 0, or -1 with the reason in why. */
static int verify_signature(OCSP_BASICRESP *bs, X509 *issuer, char *why, size_t cap)
{
    X509_STORE *store = X509_STORE_new();
    STACK_OF(X509) *certs = sk_X509_new_null();
    int ok = store && certs && X509_STORE_add_cert(store, issuer) &&
             X509_STORE_set_flags(store, X509_V_FLAG_PARTIAL_CHAIN) &&
             sk_X509_push(certs, issuer) > 0;
    ERR_clear_error();
    if (ok)
        ok = OCSP_basic_verify(bs, certs, store, 0) == 1;
    if (!ok)
        gw_ssl_reason(why, cap);
    sk_X509_free(certs);
    X509_STORE_free(store);
    return ok ? 0 : -1;
}

/* Load one file; returns 0 (added, or skipped with a warning) or -1 (error in errs). */
static int load_one(staples_t *st, const cert_ref_t *certs, size_t n_certs, const char *path,
                    const char *where, int inherited, gw_errlist_t *errs)
{
    char why[512];
    unsigned char *der = NULL;
    size_t len = 0;
    if (read_file(path, &der, &len, why, sizeof(why)) != 0) {
        gw_errlist_add(errs, "%s: ssl_stapling_file: \"%s\": %s", where, path, why);
        return -1;
    }
    const unsigned char *p = der;
    ERR_clear_error();
    OCSP_RESPONSE *resp = len ? d2i_OCSP_RESPONSE(NULL, &p, (long)len) : NULL;
    OCSP_BASICRESP *bs = NULL;
    int rc = -1, matched = 0, verified = 0;
    if (!resp || (size_t)(p - der) != len) {
        if (resp)
            snprintf(why, sizeof(why), "%zu bytes after the DER OCSP response",
                     len - (size_t)(p - der));
        else if (len == 0)
            snprintf(why, sizeof(why), "empty file");
        else
            gw_ssl_reason(why, sizeof(why));
        gw_errlist_add(errs, "%s: ssl_stapling_file: \"%s\" is not a DER OCSP response: %s", where,
                       path, why);
        goto out;
    }
    int status = OCSP_response_status(resp);
    if (status != OCSP_RESPONSE_STATUS_SUCCESSFUL) {
        gw_log(GW_LOG_WARN, 0, "%s: ssl_stapling_file: \"%s\": responseStatus is %s: not stapled",
               where, path, OCSP_response_status_str(status));
        rc = 0;
        goto out;
    }
    bs = OCSP_response_get1_basic(resp);
    if (!bs) {
        gw_ssl_reason(why, sizeof(why));
        gw_errlist_add(errs, "%s: ssl_stapling_file: \"%s\": no basic OCSP response: %s", where,
                       path, why);
        goto out;
    }
    rc = 0;
    time_t now = time(NULL);
    for (int i = 0; i < OCSP_resp_count(bs) && rc == 0; i++) {
        OCSP_SINGLERESP *sr = OCSP_resp_get0(bs, i);
        const OCSP_CERTID *cid = OCSP_SINGLERESP_get0_id(sr);
        for (size_t c = 0; c < n_certs; c++) {
            if (!certid_matches(cid, certs[c].cert, certs[c].issuer))
                continue;
            char subject[256];
            X509_NAME_oneline(X509_get_subject_name(certs[c].cert), subject, sizeof(subject));
            for (size_t k = 0; k < st->n; k++) {
                if (X509_cmp(st->v[k].cert, certs[c].cert) == 0) {
                    gw_errlist_add(errs,
                                   "%s: ssl_stapling_file: \"%s\": a second OCSP "
                                   "response for the certificate %s",
                                   where, path, subject);
                    rc = -1;
                }
            }
            if (rc)
                break;
            int reason = 0;
            ASN1_GENERALIZEDTIME *rev = NULL, *thisupd = NULL, *nextupd = NULL;
            int cs = OCSP_single_get0_status(sr, &reason, &rev, &thisupd, &nextupd);
            if (cs != V_OCSP_CERTSTATUS_GOOD)
                gw_log(GW_LOG_WARN, 0, "%s: ssl_stapling_file: \"%s\": the certificate %s is %s",
                       where, path, subject, OCSP_cert_status_str(cs));
            time_t tu = asn1_time(thisupd), nu = nextupd ? asn1_time(nextupd) : 0;
            char ts[64];
            if (tu > now + FUTURE_SLACK_S) {
                fmt_time(ts, sizeof(ts), tu);
                gw_log(GW_LOG_WARN, 0,
                       "%s: ssl_stapling_file: \"%s\": thisUpdate %s is in the "
                       "future",
                       where, path, ts);
            }
            if (nextupd && nu < now) {
                fmt_time(ts, sizeof(ts), nu);
                gw_log(GW_LOG_WARN, 0,
                       "%s: ssl_stapling_file: \"%s\": expired (nextUpdate %s): "
                       "not stapled until it is replaced",
                       where, path, ts);
            }
            if (certs[c].issuer && !verified) {
                verified = 1;
                if (verify_signature(bs, certs[c].issuer, why, sizeof(why)) != 0)
                    gw_log(GW_LOG_WARN, 0,
                           "%s: ssl_stapling_file: \"%s\": the signature does "
                           "not verify with the issuer of %s in the certificate file: %s",
                           where, path, subject, why);
            }
            staple_t *v = realloc(st->v, (st->n + 1) * sizeof(*v));
            if (!v)
                abort();
            st->v = v;
            staple_t *sp = &st->v[st->n++];
            X509_up_ref(certs[c].cert);
            sp->cert = certs[c].cert;
            sp->der = OPENSSL_memdup(der, len);
            if (!sp->der)
                abort();
            sp->len = len;
            sp->next_update = nextupd ? (nu ? nu : 1) : 0;
            matched++;
        }
    }
    if (rc == 0 && !matched && inherited) {
        /* http-level files serve every server: each takes the responses for its own
         * certificates (nginx staples its one file whatever the certificate) */
        gw_log(GW_LOG_INFO, 0,
               "%s: ssl_stapling_file: \"%s\" (from http) is for none of this server's "
               "certificates: not stapled here",
               where, path);
    } else if (rc == 0 && !matched) {
        gw_errlist_add(errs,
                       "%s: ssl_stapling_file: \"%s\": the OCSP response is for none of "
                       "the server's certificates",
                       where, path);
        rc = -1;
    }
out:
    OCSP_BASICRESP_free(bs);
    OCSP_RESPONSE_free(resp);
    free(der);
    return rc;
}

int gw_ocsp_ctx_setup(SSL_CTX *ctx, const gw_server_t *s, gw_errlist_t *errs)
{
    char where[4200];
    snprintf(where, sizeof(where), "%s:%d", s->file ? s->file : "<config>", s->line);
    if (s->srv.ssl_stapling != 1) {
        if (s->srv.ssl_stapling_files.n && !s->srv.ssl_stapling_files_inherited)
            gw_warn_add("%s: ssl_stapling_file is ignored without \"ssl_stapling on\"", where);
        return 0;
    }
    if (s->srv.ssl_stapling_files.n == 0) {
        gw_log(GW_LOG_WARN, 0,
               "%s: ssl_stapling: no \"ssl_stapling_file\" given: OCSP "
               "responders are not queried, nothing is stapled",
               where);
        return 0;
    }
    if (ctx_index < 0) {
        ctx_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, ex_free);
        if (ctx_index < 0) {
            gw_errlist_add(errs, "%s: ssl_stapling: SSL_CTX_get_ex_new_index failed", where);
            return -1;
        }
    }
    cert_ref_t certs[16];
    size_t n_certs = ctx_certs(ctx, certs, sizeof(certs) / sizeof(certs[0]));
    staples_t *st = calloc(1, sizeof(*st));
    if (!st)
        abort();
    int rc = 0;
    for (size_t i = 0; i < s->srv.ssl_stapling_files.n; i++)
        if (load_one(st, certs, n_certs, s->srv.ssl_stapling_files.v[i], where,
                     s->srv.ssl_stapling_files_inherited, errs) != 0)
            rc = -1;
    if (rc != 0 || !SSL_CTX_set_ex_data(ctx, ctx_index, st)) {
        if (rc == 0)
            gw_errlist_add(errs, "%s: ssl_stapling: SSL_CTX_set_ex_data failed", where);
        staples_free(st);
        return -1;
    }
    SSL_CTX_set_tlsext_status_cb(ctx, status_cb);
    SSL_CTX_set_tlsext_status_arg(ctx, st);
    return 0;
}
