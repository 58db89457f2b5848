#include "tls/session.h"

#include "core/log.h"
#include "core/stats.h"
#include "tls/sesscache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <openssl/rand.h>

/* One ticket key (nginx's ngx_ssl_ticket_key_t). */
typedef gw_tls_ticket_key_t tkey_t;

/* Resumption settings of one SSL_CTX, in its ex_data. */
typedef struct sess_conf {
    gw_sesscache_t *zone; /* shared cache, or NULL */
    const char *remote;   /* ssl_session_cache redis:// URL (the config's), or NULL */
    int64_t remote_timeout_ms;
    int tickets;             /* ssl_session_tickets */
    int64_t timeout_s;       /* ssl_session_timeout in seconds (>= 1) */
    tkey_t *keys;            /* from files: keys[0] encrypts; NULL = automatic keys */
    const char *keys_remote; /* ssl_session_ticket_key redis:// URL, or NULL */
    size_t n_keys;
    unsigned char ident[32]; /* server block identity, mixed into automatic keys */
    /* automatic keys of epoch auto_epoch (current) and the one before (process-local) */
    int64_t auto_epoch;
    tkey_t auto_keys[2];
} sess_conf_t;

static int ex_index = -1;
static int ssl_ex_index = -1; /* per SSL: a session fetched from the remote cache */
static gw_tls_remote_store_fn remote_store;
static gw_tls_remote_keys_fn remote_keys;

void gw_tls_session_set_remote_keys(gw_tls_remote_keys_fn fn)
{
    remote_keys = fn;
}

typedef struct prefetched {
    unsigned char id[32];
    size_t id_len;
    unsigned char *der;
    size_t der_len;
} prefetched_t;

static void prefetched_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl,
                            void *argp)
{
    prefetched_t *p = ptr;
    if (!p)
        return;
    OPENSSL_clear_free(p->der, p->der_len);
    free(p);
}

void gw_tls_session_set_remote_store(gw_tls_remote_store_fn fn)
{
    remote_store = fn;
}
/* Secret of the automatic ticket keys: drawn once in the master, inherited by the workers
 * through fork() (so all agree) and kept across reloads (tickets survive a reload). */
static unsigned char master_secret[32];
static int have_secret;

static void conf_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
    sess_conf_t *c = ptr;
    if (!c)
        return;
    gw_sesscache_release(c->zone);
    if (c->keys)
        OPENSSL_cleanse(c->keys, c->n_keys * sizeof(*c->keys));
    free(c->keys);
    OPENSSL_cleanse(c, sizeof(*c));
    free(c);
}

static sess_conf_t *conf_of(SSL *ssl)
{
    return ex_index < 0 ? NULL : SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), ex_index);
}

/* ---- shared cache callbacks ---- */

static int new_session(SSL *ssl, SSL_SESSION *sess)
{
    sess_conf_t *c = conf_of(ssl);
    if (!c || (!c->zone && !(c->remote && remote_store)))
        return 0;
    /* a TLS 1.3 stateless ticket carries the session itself: nothing to keep */
    if (SSL_version(ssl) == TLS1_3_VERSION && !(SSL_get_options(ssl) & SSL_OP_NO_TICKET))
        return 0;
    unsigned int id_len;
    const unsigned char *id = SSL_SESSION_get_id(sess, &id_len);
    unsigned char der[GW_SESSCACHE_MAX_DER];
    int n = i2d_SSL_SESSION(sess, NULL);
    if (n > 0 && !c->zone && (size_t)n <= 16384) {
        /* remote: any length Redis takes; the slot limit is the shared zone's */
        unsigned char *big = malloc((size_t)n), *q = big;
        if (big && i2d_SSL_SESSION(sess, &q) == n) {
            int64_t ttl = (int64_t)SSL_SESSION_get_time(sess) +
                          (int64_t)SSL_SESSION_get_timeout(sess) - (int64_t)time(NULL);
            if (ttl > 0) {
                remote_store(c->remote, id, id_len, big, (size_t)n, ttl);
                GW_STAT_ADD(sess_stores, 1);
            }
        }
        if (big)
            OPENSSL_clear_free(big, (size_t)n); /* it holds the master secret */
        return 0;
    }
    if (n <= 0 || (size_t)n > sizeof(der) || !c->zone) {
        if (n > 0 && c->zone) {
            /* counted by the cache; logged at debug: a long session is a config fact */
            gw_sesscache_store(c->zone, id, id_len, der, (size_t)n, INT64_MAX, 0);
            gw_log(GW_LOG_DEBUG, 0, "session of %d bytes is too long for the shared cache", n);
        }
        return 0;
    }
    unsigned char *p = der;
    i2d_SSL_SESSION(sess, &p);
    int64_t now = (int64_t)time(NULL);
    int64_t expire = (int64_t)SSL_SESSION_get_time(sess) + (int64_t)SSL_SESSION_get_timeout(sess);
    if (gw_sesscache_store(c->zone, id, id_len, der, (size_t)n, expire, now) == 0)
        GW_STAT_ADD(sess_stores, 1);
    OPENSSL_cleanse(der, (size_t)n);
    return 0; /* we keep no reference */
}

static SSL_SESSION *get_session(SSL *ssl, const unsigned char *id, int id_len, int *copy)
{
    *copy = 0;
    sess_conf_t *c = conf_of(ssl);
    if (!c || id_len <= 0)
        return NULL;
    if (!c->zone) {
        prefetched_t *pf = ssl_ex_index < 0 ? NULL : SSL_get_ex_data(ssl, ssl_ex_index);
        if (!pf || pf->id_len != (size_t)id_len || memcmp(pf->id, id, pf->id_len) != 0) {
            if (c->remote)
                GW_STAT_ADD(sess_misses, 1);
            return NULL;
        }
        const unsigned char *q = pf->der;
        SSL_SESSION *sess = d2i_SSL_SESSION(NULL, &q, (long)pf->der_len);
        if (!sess)
            ERR_clear_error();
        GW_STAT_ADD(sess_hits, sess ? 1 : 0);
        GW_STAT_ADD(sess_misses, sess ? 0 : 1);
        return sess;
    }
    unsigned char der[GW_SESSCACHE_MAX_DER];
    int n = gw_sesscache_fetch(c->zone, id, (size_t)id_len, (int64_t)time(NULL), der, sizeof(der));
    if (n <= 0) {
        GW_STAT_ADD(sess_misses, 1);
        return NULL;
    }
    GW_STAT_ADD(sess_hits, 1);
    const unsigned char *p = der;
    SSL_SESSION *sess = d2i_SSL_SESSION(NULL, &p, n);
    OPENSSL_cleanse(der, (size_t)n);
    if (!sess) {
        ERR_clear_error();
        gw_sesscache_remove(c->zone, id, (size_t)id_len);
    }
    return sess; /* OpenSSL takes our reference (*copy = 0) */
}

static void remove_session(SSL_CTX *ctx, SSL_SESSION *sess)
{
    sess_conf_t *c = SSL_CTX_get_ex_data(ctx, ex_index);
    if (!c || !c->zone)
        return;
    unsigned int id_len;
    const unsigned char *id = SSL_SESSION_get_id(sess, &id_len);
    gw_sesscache_remove(c->zone, id, id_len);
}

/* ---- ticket keys ---- */

static void derive(const sess_conf_t *c, int64_t epoch, tkey_t *k)
{
    unsigned char msg[64], out[64];
    unsigned int len = 0;
    static const char label[] = "tlsgate ticket key";
    size_t off = sizeof(label) - 1;
    memcpy(msg, label, off);
    for (int i = 7; i >= 0; i--)
        msg[off++] = (unsigned char)((uint64_t)epoch >> (8 * i));
    memcpy(msg + off, c->ident, 32);
    off += 32;
    HMAC(EVP_sha512(), master_secret, sizeof(master_secret), msg, off, out, &len);
    memcpy(k->hmac, out, 32);
    memcpy(k->aes, out + 32, 32);
    msg[0] ^= 0x80; /* a second, independent output for the key name */
    HMAC(EVP_sha256(), master_secret, sizeof(master_secret), msg, off, out, &len);
    memcpy(k->name, out, 16);
    k->size = 32;
    OPENSSL_cleanse(out, sizeof(out));
}

/* The automatic keys for now: [0] current epoch, [1] the previous one. */
static const tkey_t *auto_keys(sess_conf_t *c)
{
    int64_t epoch = (int64_t)time(NULL) / c->timeout_s;
    if (epoch != c->auto_epoch) {
        derive(c, epoch, &c->auto_keys[0]);
        derive(c, epoch - 1, &c->auto_keys[1]);
        c->auto_epoch = epoch;
    }
    return c->auto_keys;
}

static int key_init(const tkey_t *k, unsigned char *iv, EVP_CIPHER_CTX *ectx, EVP_MAC_CTX *hctx,
                    int enc)
{
    OSSL_PARAM params[3];
    params[0] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, (void *)k->hmac, k->size);
    params[1] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0);
    params[2] = OSSL_PARAM_construct_end();
    const EVP_CIPHER *cipher = k->size == 16 ? EVP_aes_128_cbc() : EVP_aes_256_cbc();
    if (!EVP_CipherInit_ex(ectx, cipher, NULL, k->aes, iv, enc) ||
        !EVP_MAC_CTX_set_params(hctx, params))
        return -1;
    return 0;
}

/* The decrypt answer for a ticket under key number i of the list: 1 resumes, 2 resumes
 * and issues a new ticket. A TLS 1.3 client uses a ticket once (RFC 8446 Appendix C.4),
 * so a TLS 1.3 resumption always renews (as nginx's ngx_ssl_ticket_key_callback does):
 * without it every other reconnection is a full handshake. TLS 1.2 renews when the
 * ticket was made under an older key. */
static int renew(SSL *ssl, size_t i)
{
    return i == 0 && SSL_version(ssl) != TLS1_3_VERSION ? 1 : 2;
}

/* SSL_CTX_set_tlsext_ticket_key_evp_cb: RFC 5077 §4's recommended ticket construction
 * (key name, IV, AES-CBC, HMAC-SHA256), done by OpenSSL with our keys. */
static int ticket_key(SSL *ssl, unsigned char key_name[16], unsigned char iv[16],
                      EVP_CIPHER_CTX *ectx, EVP_MAC_CTX *hctx, int enc)
{
    sess_conf_t *c = conf_of(ssl);
    if (!c || !c->tickets)
        return 0; /* encrypt: no ticket; decrypt: unknown key, full handshake */
    const tkey_t *keys = c->keys ? c->keys : auto_keys(c);
    size_t n = c->keys ? c->n_keys : 2;
    tkey_t fleet[4];
    size_t nf =
        c->keys_remote && remote_keys ? remote_keys(c->keys_remote, c->timeout_s, fleet, 4) : 0;
    if (nf) {
        /* the fleet's keys; the local automatic ones still decrypt (tickets of an older
         * release; gw_tls_session_fleet_gate keeps this one from issuing any before the
         * fleet's key is known) */
        if (enc)
            keys = fleet, n = nf;
        else
            for (size_t i = 0; i < nf; i++)
                if (memcmp(key_name, fleet[i].name, 16) == 0) {
                    int r = key_init(&fleet[i], iv, ectx, hctx, 0) == 0 ? renew(ssl, i) : -1;
                    OPENSSL_cleanse(fleet, sizeof(fleet));
                    return r;
                }
    }
    if (enc) {
        if (RAND_bytes(iv, EVP_MAX_IV_LENGTH > 16 ? 16 : EVP_MAX_IV_LENGTH) != 1)
            return -1;
        memcpy(key_name, keys[0].name, 16);
        int r = key_init(&keys[0], iv, ectx, hctx, 1) == 0 ? 1 : -1;
        OPENSSL_cleanse(fleet, sizeof(fleet));
        return r;
    }
    for (size_t i = 0; i < n; i++) {
        if (memcmp(key_name, keys[i].name, 16) != 0)
            continue;
        if (key_init(&keys[i], iv, ectx, hctx, 0) != 0)
            return -1;
        return renew(ssl, i);
    }
    return 0;
}

static int load_key_file(const char *path, tkey_t *k, char *why, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, cap, "ssl_session_ticket_key: cannot open \"%s\": %s", path, strerror(errno));
        return -1;
    }
    unsigned char buf[81];
    size_t n = fread(buf, 1, sizeof(buf), f);
    int err = ferror(f);
    fclose(f);
    if (err || (n != 48 && n != 80)) {
        OPENSSL_cleanse(buf, sizeof(buf));
        if (err)
            snprintf(why, cap, "ssl_session_ticket_key: cannot read \"%s\"", path);
        else
            snprintf(why, cap, "ssl_session_ticket_key: \"%s\" must hold 48 or 80 bytes, not %s%zu",
                     path, n > 80 ? "more than " : "", n > 80 ? (size_t)80 : n);
        return -1;
    }
    size_t ks = n == 48 ? 16 : 32;
    memcpy(k->name, buf, 16);
    memcpy(k->hmac, buf + 16, ks);
    memcpy(k->aes, buf + 16 + ks, ks);
    k->size = ks;
    OPENSSL_cleanse(buf, sizeof(buf));
    return 0;
}

static void server_ident(const gw_server_t *s, unsigned char out[32])
{
    EVP_MD_CTX *m = EVP_MD_CTX_new();
    unsigned int len = 0;
    memset(out, 0, 32);
    if (!m)
        return;
    EVP_DigestInit_ex(m, EVP_sha256(), NULL);
    for (size_t i = 0; i < s->server_names.n; i++)
        EVP_DigestUpdate(m, s->server_names.v[i], strlen(s->server_names.v[i]) + 1);
    EVP_DigestUpdate(m, "", 1);
    for (size_t i = 0; i < s->srv.n_certs; i++)
        EVP_DigestUpdate(m, s->srv.certs[i].cert, strlen(s->srv.certs[i].cert) + 1);
    EVP_DigestFinal_ex(m, out, &len);
    EVP_MD_CTX_free(m);
}

int gw_tls_session_setup(SSL_CTX *ctx, const gw_server_t *s, char *why, size_t cap)
{
    if (ex_index < 0) {
        ex_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, conf_free);
        if (ex_index < 0) {
            snprintf(why, cap, "ssl_session_cache: no SSL_CTX ex_data index");
            return -1;
        }
        ssl_ex_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, prefetched_free);
        if (ssl_ex_index < 0) {
            snprintf(why, cap, "ssl_session_cache: no SSL ex_data index");
            return -1;
        }
    }
    if (!have_secret) {
        if (RAND_bytes(master_secret, sizeof(master_secret)) != 1) {
            snprintf(why, cap, "ssl_session_ticket_key: no random bytes for the key secret");
            return -1;
        }
        have_secret = 1;
    }
    sess_conf_t *c = calloc(1, sizeof(*c));
    if (!c)
        abort();
    c->tickets = s->srv.ssl_session_tickets != 0;
    c->timeout_s =
        s->srv.ssl_session_timeout_ms > 0 ? (s->srv.ssl_session_timeout_ms + 999) / 1000 : 300;
    c->auto_epoch = INT64_MIN;
    server_ident(s, c->ident);
    /* owned by ctx from here on: conf_free runs with SSL_CTX_free */
    SSL_CTX_set_ex_data(ctx, ex_index, c);

    const gw_strlist_t *kf = &s->srv.ssl_session_ticket_keys;
    if (kf->n == 1 && strncmp(kf->v[0], "redis://", 8) == 0) {
        c->keys_remote = kf->v[0];
    } else if (kf->n) {
        c->keys = calloc(kf->n, sizeof(*c->keys));
        if (!c->keys)
            abort();
        c->n_keys = kf->n;
        for (size_t i = 0; i < kf->n; i++) {
            if (strncmp(kf->v[i], "redis://", 8) == 0) {
                snprintf(why, cap,
                         "ssl_session_ticket_key: %s cannot be mixed with key "
                         "files",
                         kf->v[i]);
                return -1;
            }
            if (load_key_file(kf->v[i], &c->keys[i], why, cap) != 0)
                return -1;
        }
    }

    long mode = SSL_SESS_CACHE_OFF;
    switch (s->srv.ssl_session_cache) {
    case GW_SESSION_CACHE_BUILTIN:
        mode = SSL_SESS_CACHE_SERVER;
        SSL_CTX_sess_set_cache_size(
            ctx, s->srv.ssl_session_cache_size > 0 ? s->srv.ssl_session_cache_size : 20480);
        break;
    case GW_SESSION_CACHE_SHARED:
        c->zone = gw_sesscache_acquire(s->srv.ssl_session_cache_name,
                                       (size_t)s->srv.ssl_session_cache_bytes, s->file, why, cap);
        if (!c->zone) {
            char tmp[512];
            snprintf(tmp, sizeof(tmp), "ssl_session_cache: %s", why);
            snprintf(why, cap, "%s", tmp);
            return -1;
        }
        mode = SSL_SESS_CACHE_SERVER;
        if (s->srv.ssl_session_cache_size > 0)
            SSL_CTX_sess_set_cache_size(ctx, s->srv.ssl_session_cache_size);
        else
            mode |= SSL_SESS_CACHE_NO_INTERNAL;
        SSL_CTX_sess_set_new_cb(ctx, new_session);
        SSL_CTX_sess_set_get_cb(ctx, get_session);
        SSL_CTX_sess_set_remove_cb(ctx, remove_session);
        break;
    case GW_SESSION_CACHE_REDIS:
        c->remote = s->srv.ssl_session_cache_redis;
        c->remote_timeout_ms = s->srv.ssl_session_cache_redis_timeout_ms;
        mode = SSL_SESS_CACHE_SERVER | SSL_SESS_CACHE_NO_INTERNAL;
        SSL_CTX_sess_set_new_cb(ctx, new_session);
        SSL_CTX_sess_set_get_cb(ctx, get_session);
        break;
    default:
        /* TLS 1.3 stateful tickets need the cache: without cache and tickets, send none */
        if (s->srv.ssl_session_tickets == 0)
            SSL_CTX_set_num_tickets(ctx, 0);
        break;
    }
    SSL_CTX_set_session_cache_mode(ctx, mode);
    SSL_CTX_set_timeout(ctx, (long)c->timeout_s);
    /* always: OpenSSL calls the callback of the connection's first SSL_CTX, whose block
     * may have tickets off while the block chosen by SNI has them on */
    SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, ticket_key);
    return 0;
}

/* ---- the remote cache's ClientHello side ---- */

/* Does the hello's supported_versions list TLS 1.3 (RFC 8446 §4.2.1)? */
static int offers_tls13(SSL *ssl)
{
    const unsigned char *p;
    size_t n;
    if (!SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_supported_versions, &p, &n) || n < 1)
        return 0;
    size_t len = p[0];
    if (len + 1 > n)
        return 0;
    for (size_t i = 1; i + 1 < len + 1; i += 2)
        if (p[i] == 0x03 && p[i + 1] == 0x04)
            return 1;
    return 0;
}

int gw_tls_session_remote_lookup(SSL *ssl, unsigned char id[32], size_t *id_len, const char **url,
                                 int64_t *timeout_ms)
{
    sess_conf_t *c = conf_of(ssl);
    *url = NULL;
    if (!c || !c->remote)
        return 0;
    *url = c->remote; /* also when returning 0: the caller may connect ahead */
    int max = (int)SSL_get_max_proto_version(ssl);
    int tls13 = offers_tls13(ssl) && (max == 0 || max >= TLS1_3_VERSION);
    const unsigned char *p;
    size_t n;
    if (tls13) {
        /* RFC 8446 §4.2.11: identities<7..2^16-1> of {identity<1..2^16-1>, uint32 age};
         * with tickets off, OpenSSL's stateful ticket is the session ID */
        if (!(SSL_get_options(ssl) & SSL_OP_NO_TICKET) ||
            !SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_psk, &p, &n) || n < 4)
            return 0;
        size_t ilen = (size_t)p[2] << 8 | p[3];
        if (ilen < 1 || ilen > 32 || 4 + ilen > n)
            return 0;
        memcpy(id, p + 4, ilen);
        *id_len = ilen;
    } else {
        /* RFC 5077 §3.4: a non-empty ticket is used instead of the session ID */
        if (!(SSL_get_options(ssl) & SSL_OP_NO_TICKET) &&
            SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_session_ticket, &p, &n) && n > 0)
            return 0;
        size_t sl = SSL_client_hello_get0_session_id(ssl, &p);
        if (sl < 1 || sl > 32)
            return 0;
        memcpy(id, p, sl);
        *id_len = sl;
    }
    *url = c->remote;
    *timeout_ms = c->remote_timeout_ms > 0 ? c->remote_timeout_ms : 100;
    return 1;
}

int gw_tls_session_prefetched(SSL *ssl, const unsigned char *id, size_t id_len,
                              const unsigned char *der, size_t der_len)
{
    if (ssl_ex_index < 0 || id_len < 1 || id_len > 32 || der_len < 1)
        return -1;
    prefetched_t *p = calloc(1, sizeof(*p));
    if (!p || !(p->der = malloc(der_len))) {
        free(p);
        return -1;
    }
    memcpy(p->id, id, id_len);
    p->id_len = id_len;
    memcpy(p->der, der, der_len);
    p->der_len = der_len;
    prefetched_t *old = SSL_get_ex_data(ssl, ssl_ex_index);
    if (!SSL_set_ex_data(ssl, ssl_ex_index, p)) {
        OPENSSL_clear_free(p->der, der_len);
        free(p);
        return -1;
    }
    if (old) {
        OPENSSL_clear_free(old->der, old->der_len);
        free(old);
    }
    return 0;
}

void gw_tls_session_fleet_gate(SSL *ssl)
{
    sess_conf_t *c = conf_of(ssl);
    if (!c || !c->tickets || !c->keys_remote || !remote_keys)
        return;
    tkey_t fleet[4];
    size_t nf = remote_keys(c->keys_remote, c->timeout_s, fleet, 4);
    OPENSSL_cleanse(fleet, sizeof(fleet));
    if (nf)
        return;
    SSL_set_num_tickets(ssl, 0);
    SSL_set_options(ssl, SSL_OP_NO_TICKET);
}

void gw_tls_session_prime(SSL_CTX *ctx)
{
    sess_conf_t *c = ex_index < 0 ? NULL : SSL_CTX_get_ex_data(ctx, ex_index);
    if (!c || !c->tickets || !c->keys_remote || !remote_keys)
        return;
    tkey_t fleet[4];
    remote_keys(c->keys_remote, c->timeout_s, fleet, 4);
    OPENSSL_cleanse(fleet, sizeof(fleet));
}
