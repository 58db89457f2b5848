#include "tls/tls.h"
#include "tls/sni_ack.h"
#include "tls/verify.h"
#include "tls/keys.h"

#include "core/log.h"
#include "core/stats.h"
#include "tls/ocsp.h"
#include "tls/session.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/conf.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/bn.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

static SSL_async_callback_fn async_callback;

void gw_tls_set_async_callback(SSL_async_callback_fn cb)
{
    async_callback = cb;
}

int gw_tls_init(void)
{
    if (!OPENSSL_init_ssl(OPENSSL_INIT_LOAD_SSL_STRINGS | OPENSSL_INIT_LOAD_CRYPTO_STRINGS, NULL))
        return -1;
    return 0;
}

/* RFC 7301 §3.2: the server selects one of the client's protocols, in our order of
 * preference: "h2" first where the server block speaks HTTP/2 (arg non-NULL: `http2 on`,
 * RFC 9113 §3.2), then "http/1.1"; "in the event that the server supports no protocols
 * that the client advertises, then the server SHALL respond with a fatal
 * no_application_protocol alert". */
static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg)
{
    static const unsigned char h2_h11[] = {2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
    const unsigned char *ours = arg ? h2_h11 : h2_h11 + 3;
    unsigned ours_len = arg ? sizeof(h2_h11) : sizeof(h2_h11) - 3;
    unsigned char *sel = NULL;
    unsigned char sel_len = 0;
    if (SSL_select_next_proto(&sel, &sel_len, ours, ours_len, in, inlen) ==
        OPENSSL_NPN_NEGOTIATED) {
        *out = sel;
        *outlen = sel_len;
        return SSL_TLSEXT_ERR_OK;
    }
    return SSL_TLSEXT_ERR_ALERT_FATAL;
}

static int proto_range(unsigned bits, int *min, int *max, uint64_t *no)
{
    static const struct {
        unsigned bit;
        int ver;
        uint64_t op;
    } map[] = {{GW_PROTO_TLSV1, TLS1_VERSION, SSL_OP_NO_TLSv1},
               {GW_PROTO_TLSV1_1, TLS1_1_VERSION, SSL_OP_NO_TLSv1_1},
               {GW_PROTO_TLSV1_2, TLS1_2_VERSION, SSL_OP_NO_TLSv1_2},
               {GW_PROTO_TLSV1_3, TLS1_3_VERSION, SSL_OP_NO_TLSv1_3}};
    *min = *max = 0;
    *no = 0;
    for (size_t i = 0; i < 4; i++) {
        if (bits & map[i].bit) {
            if (!*min)
                *min = map[i].ver;
            *max = map[i].ver;
        }
    }
    /* holes inside the range (e.g. TLSv1 TLSv1.2) are closed with SSL_OP_NO_* */
    for (size_t i = 0; i < 4; i++)
        if (!(bits & map[i].bit) && map[i].ver > *min && map[i].ver < *max)
            *no |= map[i].op;
    return *min ? 0 : -1;
}

static uint64_t server_options(const gw_server_t *s, uint64_t no_versions)
{
    uint64_t op = SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_IGNORE_UNEXPECTED_EOF |
                  SSL_OP_SINGLE_ECDH_USE | no_versions;
    if (s->srv.ssl_prefer_server_ciphers == 1)
        op |= SSL_OP_CIPHER_SERVER_PREFERENCE;
    if (s->srv.ssl_session_tickets == 0)
        op |= SSL_OP_NO_TICKET;
    if (s->srv.sendfile == 1)
        op |= SSL_OP_ENABLE_KTLS; /* OpenSSL falls back to its own records without it */
    return op;
}

static int apply_conf_cmds(SSL_CTX *ctx, SSL *ssl, const gw_server_t *s, char *why, size_t cap)
{
    if (!s->srv.n_conf_cmds)
        return 0;
    SSL_CONF_CTX *cctx = SSL_CONF_CTX_new();
    if (!cctx) {
        snprintf(why, cap, "out of memory");
        return -1;
    }
    SSL_CONF_CTX_set_flags(cctx, SSL_CONF_FLAG_FILE | SSL_CONF_FLAG_SERVER |
                                     SSL_CONF_FLAG_CERTIFICATE | SSL_CONF_FLAG_SHOW_ERRORS);
    if (ctx)
        SSL_CONF_CTX_set_ssl_ctx(cctx, ctx);
    else
        SSL_CONF_CTX_set_ssl(cctx, ssl);
    for (size_t i = 0; i < s->srv.n_conf_cmds; i++) {
        const gw_conf_cmd_t *c = &s->srv.conf_cmds[i];
        if (SSL_CONF_cmd(cctx, c->name, c->value) <= 0) {
            char r[512];
            gw_ssl_reason(r, sizeof(r));
            snprintf(why, cap, "ssl_conf_command \"%s\" \"%s\" failed: %s", c->name, c->value, r);
            SSL_CONF_CTX_free(cctx);
            return -1;
        }
    }
    if (!SSL_CONF_CTX_finish(cctx)) {
        char r[512];
        gw_ssl_reason(r, sizeof(r));
        snprintf(why, cap, "ssl_conf_command: %s", r);
        SSL_CONF_CTX_free(cctx);
        return -1;
    }
    SSL_CONF_CTX_free(cctx);
    return 0;
}

/* A session id context that differs per server block, so that a session created under
 * one virtual server is never resumed under another (RFC 8446 §4.6.1 lets the server
 * refuse; OpenSSL checks this context on resumption). It is made of what identifies the
 * block to a client and its policy: names, certificates (their DER, not their paths),
 * protocols, ciphers and ssl_conf_command, and not of the file name or line, so the same
 * block on another gateway of a fleet (sessions in Redis, shared ticket keys), or after a
 * reload, resumes the same sessions. */
static void set_sid_ctx(SSL_CTX *ctx, const gw_server_t *s)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_MD_CTX *m = EVP_MD_CTX_new();
    if (!m)
        return;
    EVP_DigestInit_ex(m, EVP_sha256(), NULL);
    for (size_t i = 0; i < s->server_names.n; i++)
        EVP_DigestUpdate(m, s->server_names.v[i], strlen(s->server_names.v[i]) + 1);
    int more = SSL_CTX_set_current_cert(ctx, SSL_CERT_SET_FIRST);
    while (more) {
        X509 *x = SSL_CTX_get0_certificate(ctx);
        unsigned char *der = NULL;
        int n = x ? i2d_X509(x, &der) : -1;
        if (n > 0)
            EVP_DigestUpdate(m, der, (size_t)n);
        OPENSSL_free(der);
        more = SSL_CTX_set_current_cert(ctx, SSL_CERT_SET_NEXT);
    }
    ERR_clear_error();
    char pol[64];
    int pl = snprintf(pol, sizeof(pol), "|%u|", s->srv.ssl_protocols);
    EVP_DigestUpdate(m, pol, (size_t)pl);
    if (s->srv.ssl_ciphers)
        EVP_DigestUpdate(m, s->srv.ssl_ciphers, strlen(s->srv.ssl_ciphers) + 1);
    for (size_t i = 0; i < s->srv.n_conf_cmds; i++) {
        EVP_DigestUpdate(m, s->srv.conf_cmds[i].name, strlen(s->srv.conf_cmds[i].name) + 1);
        EVP_DigestUpdate(m, s->srv.conf_cmds[i].value, strlen(s->srv.conf_cmds[i].value) + 1);
    }
    EVP_DigestFinal_ex(m, md, &mdlen);
    EVP_MD_CTX_free(m);
    SSL_CTX_set_session_id_context(ctx, md,
                                   mdlen > SSL_MAX_SID_CTX_LENGTH ? SSL_MAX_SID_CTX_LENGTH : mdlen);
}

/* ssl_ecdh_curve: the key exchange groups, on a context (ssl NULL) or a connection
 * switched to another server's context (ctx NULL). "auto" is OpenSSL 3.0's own default
 * list (ssl/t1_lib.c supported_groups_default) after the hybrid post-quantum groups of
 * draft-ietf-tls-ecdhe-mlkem when a provider announces them (ours, prov/kem.c): a client
 * with a X25519MLKEM768 key share gets it, one without gets X25519 as before. "auto" never
 * fails (without any provider group the list is OpenSSL's default); an explicit list that
 * OpenSSL refuses (an unknown name) is a configuration error: -1 with why. */
#define GW_GROUPS_DEFAULT                                                                          \
    "X25519:P-256:X448:P-521:P-384:ffdhe2048:ffdhe3072:ffdhe4096:ffdhe6144:ffdhe8192"
#define GW_GROUPS_PQ "X25519MLKEM768:SecP256r1MLKEM768:" GW_GROUPS_DEFAULT

static int set_groups(SSL_CTX *ctx, SSL *ssl, const char *list, char *why, size_t cap)
{
    if (list == NULL || strcmp(list, "auto") == 0) {
        ERR_set_mark();
        if (!(ctx ? SSL_CTX_set1_groups_list(ctx, GW_GROUPS_PQ)
                  : SSL_set1_groups_list(ssl, GW_GROUPS_PQ)))
            (void)(ctx ? SSL_CTX_set1_groups_list(ctx, GW_GROUPS_DEFAULT)
                       : SSL_set1_groups_list(ssl, GW_GROUPS_DEFAULT));
        ERR_pop_to_mark();
        return 0;
    }
    if (!(ctx ? SSL_CTX_set1_groups_list(ctx, list) : SSL_set1_groups_list(ssl, list))) {
        gw_ssl_reason(why, cap);
        return -1;
    }
    return 0;
}

/* Build each certificate's chain once, at load. A certificate loaded without intermediates
 * (and no SSL_CTX extra chain) has no chain, and then OpenSSL 3.0 builds one from the
 * context's store on every handshake (ssl_add_cert_chain: an X509_STORE_CTX and
 * X509_verify_cert per Certificate message). SSL_CTX_build_cert_chain runs the same
 * verification against the same store now and keeps the result, so the Certificate
 * message is unchanged: the leaf plus whatever the store supplies (usually nothing).
 * A chain that cannot be built (a security-level failure) is left to the handshake, as
 * before. The current certificate is restored afterwards. */
static void prebuild_chains(SSL_CTX *ctx)
{
    STACK_OF(X509) *extra = NULL;
    SSL_CTX_get_extra_chain_certs_only(ctx, &extra);
    if (extra) /* OpenSSL sends these and never builds a chain */
        return;
    X509 *current = SSL_CTX_get0_certificate(ctx);
    for (long r = SSL_CTX_set_current_cert(ctx, SSL_CERT_SET_FIRST); r == 1;
         r = SSL_CTX_set_current_cert(ctx, SSL_CERT_SET_NEXT)) {
        STACK_OF(X509) *chain = NULL;
        SSL_CTX_get0_chain_certs(ctx, &chain);
        if (chain)
            continue;
        if (SSL_CTX_build_cert_chain(ctx, SSL_BUILD_CHAIN_FLAG_IGNORE_ERROR |
                                              SSL_BUILD_CHAIN_FLAG_CLEAR_ERROR) <= 0)
            ERR_clear_error();
    }
    if (current)
        SSL_CTX_select_current_cert(ctx, current);
    ERR_clear_error();
}

SSL_CTX *gw_tls_ctx_alloc(const SSL_METHOD *method, const char *file, int line,
                          const char *directive, gw_errlist_t *errs)
{
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(method);
    if (!ctx) {
        char why[1024];
        gw_ssl_reason(why, sizeof(why));
        gw_errlist_add(errs, "%s:%d: %s: SSL_CTX_new failed: %s", file, line, directive, why);
    }
    return ctx;
}

SSL_CTX *gw_tls_ctx_new(const gw_server_t *s, SSL_client_hello_cb_fn client_hello_cb,
                        gw_errlist_t *errs)
{
    char why[1024];
    const char *file = s->file ? s->file : "<config>";
    SSL_CTX *ctx = gw_tls_ctx_alloc(TLS_server_method(), file, s->line, "server", errs);
    if (!ctx)
        return NULL;
    int min, max;
    uint64_t no;
    if (proto_range(s->srv.ssl_protocols, &min, &max, &no) != 0) {
        gw_errlist_add(errs, "%s:%d: ssl_protocols: no protocol enabled", file, s->line);
        goto fail;
    }
    if (!SSL_CTX_set_min_proto_version(ctx, min) || !SSL_CTX_set_max_proto_version(ctx, max)) {
        gw_ssl_reason(why, sizeof(why));
        gw_errlist_add(errs, "%s:%d: ssl_protocols: %s", file, s->line, why);
        goto fail;
    }
    SSL_CTX_set_options(ctx, server_options(s, no));
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_RELEASE_BUFFERS);
    if (s->srv.ssl_buffer_size > 0)
        SSL_CTX_set_max_send_fragment(ctx, (long)s->srv.ssl_buffer_size);
    /* read what the socket holds in one read (a record's header and body, or several
     * records), not 5 bytes then the body: one syscall per request record, and a short
     * read tells the connection the socket is drained (http/conn.c rd_ready) */
    SSL_CTX_set_read_ahead(ctx, 1);
    const char *ciphers = s->srv.ssl_ciphers; /* the merge step set the default */
    if (!SSL_CTX_set_cipher_list(ctx, ciphers)) {
        gw_ssl_reason(why, sizeof(why));
        gw_errlist_add(errs, "%s:%d: ssl_ciphers: invalid cipher list \"%s\": %s", file, s->line,
                       ciphers, why);
        goto fail;
    }
    if (set_groups(ctx, NULL, s->srv.ssl_ecdh_curve, why, sizeof(why)) != 0) {
        gw_errlist_add(errs, "%s:%d: ssl_ecdh_curve: invalid group list \"%s\": %s", file, s->line,
                       s->srv.ssl_ecdh_curve, why);
        goto fail;
    }
    for (size_t i = 0; i < s->srv.n_certs; i++) {
        const gw_cert_pair_t *p = &s->srv.certs[i];
        if (SSL_CTX_use_certificate_chain_file(ctx, p->cert) != 1) {
            gw_ssl_reason(why, sizeof(why));
            gw_errlist_add(errs, "%s:%d: ssl_certificate: cannot load \"%s\": %s", file,
                           p->cert_line ? p->cert_line : s->line, p->cert, why);
            goto fail;
        }
        char where[1024];
        snprintf(where, sizeof(where), "%s:%d", file, p->key_line ? p->key_line : s->line);
        /* read into the secure heap, ssl_password_file, mode warning: tls/keys.c */
        if (!p->key)
            snprintf(why, sizeof(why), "no key");
        if (!p->key ||
            !gw_tls_use_key_file(ctx, p->key, s->srv.ssl_password_file, where, why, sizeof(why))) {
            gw_errlist_add(errs, "%s:%d: ssl_certificate_key: cannot load \"%s\": %s", file,
                           p->key_line ? p->key_line : s->line, p->key ? p->key : "(none)", why);
            goto fail;
        }
        if (SSL_CTX_check_private_key(ctx) != 1) {
            gw_ssl_reason(why, sizeof(why));
            gw_errlist_add(errs, "%s:%d: ssl_certificate_key: \"%s\" does not match \"%s\": %s",
                           file, p->key_line ? p->key_line : s->line, p->key, p->cert, why);
            goto fail;
        }
    }
    if (gw_tls_session_setup(ctx, s, why, sizeof(why)) != 0) {
        gw_errlist_add(errs, "%s:%d: %s", file, s->line, why);
        goto fail;
    }
    set_sid_ctx(ctx, s);
    SSL_CTX_set_alpn_select_cb(ctx, alpn_select, s->srv.http2 == 1 ? (void *)ctx : NULL);
    if (client_hello_cb)
        SSL_CTX_set_client_hello_cb(ctx, client_hello_cb, NULL);
    gw_tls_sni_ack_setup(ctx); /* RFC 6066 §3: acknowledge a server_name that was used */
    if (gw_tls_verify_setup(ctx, s, errs) != 0) /* mutual TLS: tls/verify.c */
        goto fail;
    if (s->srv.ssl_async == 1) {
        /* Every SSL call runs in an async job that an accelerator may pause. */
        SSL_CTX_set_mode(ctx, SSL_MODE_ASYNC);
        if (s->srv.ssl_async_notify != GW_ASYNC_NOTIFY_FD && async_callback)
            SSL_CTX_set_async_callback(ctx, async_callback);
    }
    if (apply_conf_cmds(ctx, NULL, s, why, sizeof(why)) != 0) {
        gw_errlist_add(errs, "%s:%d: %s", file, s->line, why);
        goto fail;
    }
    prebuild_chains(ctx);
    if (gw_ocsp_ctx_setup(ctx, s, errs) != 0)
        goto fail;
    return ctx;
fail:
    SSL_CTX_free(ctx);
    ERR_clear_error();
    return NULL;
}

int gw_tls_hello_sni(SSL *ssl, const unsigned char **name, size_t *len)
{
    const unsigned char *p;
    size_t n;
    if (!SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_server_name, &p, &n))
        return 0;
    return gw_tls_parse_sni(p, n, name, len);
}

int gw_tls_switch(SSL *ssl, SSL_CTX *ctx, const gw_server_t *s)
{
    if (SSL_get_SSL_CTX(ssl) == ctx)
        return 1;
    if (!SSL_set_SSL_CTX(ssl, ctx))
        return 0;
    int min, max;
    uint64_t no;
    if (proto_range(s->srv.ssl_protocols, &min, &max, &no) != 0)
        return 0;
    SSL_clear_options(ssl, SSL_get_options(ssl));
    SSL_set_options(ssl, SSL_CTX_get_options(ctx));
    SSL_set_min_proto_version(ssl, min);
    SSL_set_max_proto_version(ssl, max);
    if (!SSL_set_cipher_list(ssl, s->srv.ssl_ciphers))
        return 0;
    char gwhy[256];
    if (set_groups(NULL, ssl, s->srv.ssl_ecdh_curve, gwhy, sizeof(gwhy)) != 0)
        return 0;
    SSL_set_num_tickets(ssl, SSL_CTX_get_num_tickets(ctx));
    gw_tls_verify_switch(ssl, ctx); /* mutual TLS: tls/verify.c */
    if (s->srv.ssl_buffer_size > 0)
        SSL_set_max_send_fragment(ssl, (long)s->srv.ssl_buffer_size);
    char why[256];
    if (apply_conf_cmds(NULL, ssl, s, why, sizeof(why)) != 0)
        return 0;
    return 1;
}

int gw_tls_handshake_group(SSL *ssl)
{
    int nid = SSL_get_negotiated_group(ssl);

    if (nid == 0 || nid == NID_undef)
        return GW_HS_G_NONE;
    if (nid & TLSEXT_nid_unknown) {
        const char *name = SSL_group_to_name(ssl, nid);
        if (name && OPENSSL_strcasecmp(name, "X25519MLKEM768") == 0)
            return GW_HS_G_X25519MLKEM768;
        if (name && OPENSSL_strcasecmp(name, "SecP256r1MLKEM768") == 0)
            return GW_HS_G_SECP256R1MLKEM768;
        return GW_HS_G_OTHER;
    }
    switch (nid) {
    case NID_X25519:
        return GW_HS_G_X25519;
    case NID_X9_62_prime256v1:
        return GW_HS_G_P256;
    case NID_secp384r1:
        return GW_HS_G_P384;
    case NID_secp521r1:
        return GW_HS_G_P521;
    case NID_X448:
        return GW_HS_G_X448;
    case NID_ffdhe2048:
    case NID_ffdhe3072:
    case NID_ffdhe4096:
    case NID_ffdhe6144:
    case NID_ffdhe8192:
        return GW_HS_G_FFDHE;
    default:
        return GW_HS_G_OTHER;
    }
}

void gw_tls_handshake_kind(SSL *ssl, int *proto, int *key)
{
    int v = SSL_version(ssl);
    *proto = v == TLS1_3_VERSION   ? GW_HS_TLS13
             : v == TLS1_2_VERSION ? GW_HS_TLS12
                                   : GW_HS_PROTO_OTHER;
    if (SSL_session_reused(ssl)) {
        *key = GW_HS_KEY_NONE;
        return;
    }
    /* after the handshake, the current certificate is the one the server selected */
    X509 *x = SSL_get_certificate(ssl);
    EVP_PKEY *pk = x ? X509_get0_pubkey(x) : NULL;
    *key = GW_HS_KEY_OTHER;
    if (!pk) {
        *key = GW_HS_KEY_NONE;
        return;
    }
    switch (EVP_PKEY_get_base_id(pk)) {
    case EVP_PKEY_RSA:
    case EVP_PKEY_RSA_PSS:
        *key = GW_HS_KEY_RSA;
        return;
    case EVP_PKEY_EC:
        *key = GW_HS_KEY_ECDSA;
        return;
    default:
        /* a provider-only key type has no legacy id: ask by name */
        if (EVP_PKEY_is_a(pk, "RSA") || EVP_PKEY_is_a(pk, "RSA-PSS"))
            *key = GW_HS_KEY_RSA;
        else if (EVP_PKEY_is_a(pk, "EC"))
            *key = GW_HS_KEY_ECDSA;
        return;
    }
}

/* ---- self-signed certificates for the embedded default ---- */

static int write_atomic(const char *path, mode_t mode, int (*emit)(FILE *, void *), void *arg)
{
    char tmp[4096 + 32];
    int n = snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
    if (n < 0 || (size_t)n >= sizeof(tmp)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return -1;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        unlink(tmp);
        return -1;
    }
    int ok = emit(f, arg);
    if (fclose(f) != 0 || !ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

static int emit_key(FILE *f, void *arg)
{
    return PEM_write_PrivateKey(f, arg, NULL, NULL, 0, NULL, NULL);
}

static int emit_cert(FILE *f, void *arg)
{
    return PEM_write_X509(f, arg);
}

static X509 *self_sign(EVP_PKEY *pkey)
{
    X509 *x = X509_new();
    if (!x)
        return NULL;
    X509_set_version(x, 2);
    unsigned char serial[16];
    ASN1_INTEGER *sn = NULL;
    BIGNUM *bn = NULL;
    if (RAND_bytes(serial, sizeof(serial)) != 1)
        goto fail;
    serial[0] &= 0x7f;
    bn = BN_bin2bn(serial, sizeof(serial), NULL);
    sn = bn ? BN_to_ASN1_INTEGER(bn, NULL) : NULL;
    if (!sn || !X509_set_serialNumber(x, sn))
        goto fail;
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 10L * 365 * 24 * 3600);
    X509_set_pubkey(x, pkey);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"tlsgate", -1, -1,
                               0);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"localhost", -1, -1,
                               0);
    X509_set_issuer_name(x, name);
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
    static const char *const exts[][2] = {
        {"subjectAltName", "DNS:localhost,IP:127.0.0.1,IP:::1"},
        {"basicConstraints", "critical,CA:FALSE"},
        {"keyUsage", "critical,digitalSignature,keyEncipherment"},
        {"extendedKeyUsage", "serverAuth"},
    };
    for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
        X509_EXTENSION *e = X509V3_EXT_conf(NULL, &v3, exts[i][0], exts[i][1]);
        if (!e)
            goto fail;
        X509_add_ext(x, e, -1);
        X509_EXTENSION_free(e);
    }
    if (!X509_sign(x, pkey, EVP_sha256()))
        goto fail;
    ASN1_INTEGER_free(sn);
    BN_free(bn);
    return x;
fail:
    ASN1_INTEGER_free(sn);
    BN_free(bn);
    X509_free(x);
    return NULL;
}

int gw_tls_make_default_certs(const char *dir, gw_errlist_t *errs)
{
    static const char *const kinds[] = {"rsa", "ecdsa"};
    for (size_t i = 0; i < 2; i++) {
        char crt[4096], key[4096];
        snprintf(crt, sizeof(crt), "%s/default-%s.crt", dir, kinds[i]);
        snprintf(key, sizeof(key), "%s/default-%s.key", dir, kinds[i]);
        if (access(crt, R_OK) == 0 && access(key, R_OK) == 0)
            continue;
        EVP_PKEY *pkey = i == 0 ? EVP_RSA_gen(2048) : EVP_EC_gen("P-256");
        X509 *x = pkey ? self_sign(pkey) : NULL;
        int ok = x && write_atomic(key, 0600, emit_key, pkey) == 0 &&
                 write_atomic(crt, 0644, emit_cert, x) == 0;
        int e = errno;
        X509_free(x);
        EVP_PKEY_free(pkey);
        if (!ok) {
            char why[512];
            gw_ssl_reason(why, sizeof(why));
            gw_errlist_add(errs, "%s: cannot create the default %s certificate: %s", crt, kinds[i],
                           e ? strerror(e) : why);
            return -1;
        }
    }
    return 0;
}
