/*
 * tlsgate TLS13-KDF and TLS1-PRF: the KDFs libssl fetches for the key schedules,
 * - "TLS13-KDF": the HKDF steps of TLS 1.3 (RFC 8446 §7.1), every HKDF-Expand-Label and
 *   HKDF-Extract of a handshake (ssl/tls13_enc.c: about 17 derivations per full handshake);
 * - "TLS1-PRF": the TLS 1.2 PRF (RFC 5246 §5, P_hash), for the master secret, the key
 *   block and both Finished messages (ssl/t1_enc.c).
 *
 * Same parameters, modes and results as OpenSSL 3.0's default implementation
 * (providers/implementations/kdfs/hkdf.c), without its per-call overhead: the default
 * fetches the digest by name for every context, allocates an HMAC context, a digest
 * context per HMAC, and an EVP_MAC (with another digest fetch) for every Extract. Here the
 * parameters are copied into the context's own buffers, HMAC (RFC 2104) runs on
 * OpenSSL's SHA-256 / SHA-384 block functions through their plain structures, and the
 * HMAC key schedule (the hash states after the ipad and opad blocks) of a secret is
 * kept for the next derivations from the same secret (key_cache below): a handshake
 * expands each traffic secret two or three times (key, iv, finished key) and the
 * handshake and master secrets three or four times. With the two digests of TLS 1.3's cipher suites (SHA2-256: AES-128-GCM,
 * ChaCha20-Poly1305, AES-128-CCM; SHA2-384: AES-256-GCM). Any other digest is delegated to
 * the default provider's TLS13-KDF in the private library context (dflt.c).
 *
 * The low-level SHA256_* / SHA384_* functions are deprecated in OpenSSL 3.0 in favour of
 * EVP_MD, whose context copy (needed to reuse an HMAC key schedule) allocates; they remain
 * in 3.x and run the same assembly as the default provider's digests.
 *
 * TLS13-KDF parameters (OSSL_KDF_PARAM_*): "mode" (int 1 = EXTRACT_ONLY, 2 = EXPAND_ONLY, or the
 * string names; EXTRACT_AND_EXPAND is refused as by OpenSSL), "digest", "properties"
 * (used only when delegating), "key", "salt", "prefix", "label", "data". As in OpenSSL,
 * "data" is cleared by every call that sets parameters without it.
 * - EXPAND_ONLY: HKDF-Expand(key, HkdfLabel(outlen, prefix || label, data), outlen),
 *   RFC 8446 §7.1 HKDF-Expand-Label; prefix || label at most 255 bytes, data at most
 *   255, outlen at most 255 * hash length (RFC 5869 §2.3).
 * - EXTRACT_ONLY: without "salt", HKDF-Extract(salt = "", IKM = key); with "salt",
 *   HKDF-Extract(Derive-Secret(salt, label, ""), key), RFC 8446 §7.1's "derived" step;
 *   without "key", IKM is a string of hash-length zeros. outlen must be the hash length.
 *
 * TLS1-PRF parameters: "digest", "properties", "secret", "seed" (repeatable: the seeds
 * are appended, across calls too, until a reset; at most 1,024 bytes in all, as in
 * OpenSSL). out = P_hash(secret, seed) truncated to outlen (RFC 5246 §5); outlen > 0.
 * TLS 1.0/1.1's "MD5-SHA1" PRF and any digest but SHA-256/384 are delegated.
 */
#define OPENSSL_SUPPRESS_DEPRECATED /* SHA256_Init & co: see above */

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/sha.h>

#include "glue.h"
#include "prov.h"
#include "tcache.h"

enum tg_md { TG_MD_NONE, TG_MD_SHA256, TG_MD_SHA384, TG_MD_OTHER };

#define KDF_INLINE 64   /* parameter bytes kept inside the context before allocating */
#define MD_MAX 48       /* SHA-384 */
#define BLOCK_MAX 128   /* SHA-384 block */
#define NAME_MAX_LEN 64 /* digest name / properties kept for delegation */

/* One octet-string parameter: inline up to KDF_INLINE bytes, else on the heap. */
struct kdf_buf {
    unsigned char *p; /* inl or heap; NULL when not set */
    size_t len;
    unsigned char inl[KDF_INLINE];
};

/* The "digest" and "properties" parameters, shared by both KDFs. */
struct kdf_digest {
    enum tg_md md;
    char mdname[NAME_MAX_LEN]; /* as given, for delegation */
    char *props;               /* "properties", for delegation; NULL if not set */
};

typedef struct tg_kdf {
    TG_PROV *prov;
    int mode; /* EVP_KDF_HKDF_MODE_*; 0 (EXTRACT_AND_EXPAND) until set */
    struct kdf_digest dg;
    struct kdf_buf key, salt, prefix, label, data;
} TG_KDF;

/* TLS13-KDF's octet-string parameters and their buffers: set_ctx_params takes the first
 * four in any call, "data" (last) its own way; reset and dup treat all alike. */
static const struct {
    const char *key;
    size_t off; /* of the struct kdf_buf in TG_KDF */
} kdf_bufs[] = {
    {OSSL_KDF_PARAM_KEY, offsetof(TG_KDF, key)},
    {OSSL_KDF_PARAM_SALT, offsetof(TG_KDF, salt)},
    {OSSL_KDF_PARAM_PREFIX, offsetof(TG_KDF, prefix)},
    {OSSL_KDF_PARAM_LABEL, offsetof(TG_KDF, label)},
    {OSSL_KDF_PARAM_DATA, offsetof(TG_KDF, data)},
};
#define KDF_N_BUFS (sizeof(kdf_bufs) / sizeof(kdf_bufs[0]))
#define KDF_BUF(x, i) ((struct kdf_buf *)((char *)(x) + kdf_bufs[i].off))

typedef union {
    SHA256_CTX s256;
    SHA512_CTX s512;
} sha_ctx;

/* The hash states after absorbing key ^ ipad and key ^ opad (RFC 2104 §2). */
struct hmac_key {
    enum tg_md md;
    sha_ctx in, out;
};

static size_t md_size(enum tg_md md)
{
    return md == TG_MD_SHA256 ? SHA256_DIGEST_LENGTH : SHA384_DIGEST_LENGTH;
}

static size_t md_block(enum tg_md md)
{
    return md == TG_MD_SHA256 ? SHA256_CBLOCK : SHA512_CBLOCK;
}

static void sha_init(enum tg_md md, sha_ctx *c)
{
    if (md == TG_MD_SHA256)
        SHA256_Init(&c->s256);
    else
        SHA384_Init(&c->s512);
}

static void sha_update(enum tg_md md, sha_ctx *c, const void *p, size_t n)
{
    if (n == 0)
        return;
    if (md == TG_MD_SHA256)
        SHA256_Update(&c->s256, p, n);
    else
        SHA384_Update(&c->s512, p, n);
}

static void sha_final(enum tg_md md, sha_ctx *c, unsigned char *out)
{
    if (md == TG_MD_SHA256)
        SHA256_Final(out, &c->s256);
    else
        SHA384_Final(out, &c->s512);
}

static void hmac_setkey(struct hmac_key *k, enum tg_md md, const unsigned char *key, size_t len)
{
    unsigned char blk[BLOCK_MAX];
    size_t bs = md_block(md), i;

    memset(blk, 0, sizeof(blk));
    if (len > bs) { /* RFC 2104 §2: longer keys are hashed first */
        sha_ctx c;

        sha_init(md, &c);
        sha_update(md, &c, key, len);
        sha_final(md, &c, blk);
        OPENSSL_cleanse(&c, sizeof(c));
    } else if (len > 0) {
        memcpy(blk, key, len);
    }
    k->md = md;
    for (i = 0; i < bs; i++)
        blk[i] ^= 0x36;
    sha_init(md, &k->in);
    sha_update(md, &k->in, blk, bs);
    for (i = 0; i < bs; i++)
        blk[i] ^= 0x36 ^ 0x5c;
    sha_init(md, &k->out);
    sha_update(md, &k->out, blk, bs);
    OPENSSL_cleanse(blk, sizeof(blk));
}

/* out = HMAC(k, m1 || m2 || m3); out has md_size(k->md) bytes. */
static void hmac_run(const struct hmac_key *k, const void *m1, size_t l1, const void *m2, size_t l2,
                     const void *m3, size_t l3, unsigned char *out)
{
    sha_ctx c = k->in;
    unsigned char inner[MD_MAX];

    sha_update(k->md, &c, m1, l1);
    sha_update(k->md, &c, m2, l2);
    sha_update(k->md, &c, m3, l3);
    sha_final(k->md, &c, inner);
    c = k->out;
    sha_update(k->md, &c, inner, md_size(k->md));
    sha_final(k->md, &c, out);
    OPENSSL_cleanse(&c, sizeof(c));
    OPENSSL_cleanse(inner, sizeof(inner));
}

/* HKDF-Expand (RFC 5869 §2.3): T(i) = HMAC(PRK, T(i-1) || info || i). outlen <= 255 * HashLen. */
static void hkdf_expand(const struct hmac_key *prk, const unsigned char *info, size_t infolen,
                        unsigned char *out, size_t outlen)
{
    unsigned char t[MD_MAX] = {0}; /* read with length 0 first: gcc 12 -O2 warns otherwise */
    size_t hl = md_size(prk->md), done = 0;
    unsigned char ctr = 1;

    while (done < outlen) {
        size_t n = outlen - done < hl ? outlen - done : hl;

        hmac_run(prk, t, done > 0 ? hl : 0, info, infolen, &ctr, 1, t);
        memcpy(out + done, t, n);
        done += n;
        ctr++;
    }
    OPENSSL_cleanse(t, sizeof(t));
}

/*
 * Per-thread cache of HMAC key schedules, KEY_CACHE entries, least recently used out.
 * A lookup compares the key with every entry in constant time (ct_equal); whether it
 * hits depends only on which secret the protocol derives from, not on secret values.
 * An entry holds a secret's HMAC key schedule (and the secret, to compare): at most
 * KEY_CACHE recent secrets per thread, overwritten by the following derivations (one
 * handshake uses about 9 distinct secrets), wiped when they leave the cache, at thread
 * exit and at provider teardown (tg_kdf_cache_wipe). Keys longer than MD_MAX bytes are
 * not cached.
 */
#define KEY_CACHE 4

struct key_ent {
    uint64_t used; /* tick of the last use; 0 = empty */
    enum tg_md md;
    size_t len;
    unsigned char key[MD_MAX];
    struct hmac_key k;
};

struct key_cache {
    uint64_t tick;
    struct key_ent e[KEY_CACHE];
};

static struct tg_tcache key_cache_tc =
    TG_TCACHE_INIT(sizeof(struct key_cache), _Alignof(struct key_cache));

void tg_kdf_cache_wipe(void)
{
    tg_tcache_wipe(&key_cache_tc);
}

/* 1 if a and b (len <= MD_MAX bytes) are equal; reads every byte, no early exit. */
static int ct_equal(const unsigned char *a, const unsigned char *b, size_t len)
{
    uint64_t d = 0, wa, wb;
    size_t i = 0;

    for (; i + 8 <= len; i += 8) {
        memcpy(&wa, a + i, 8);
        memcpy(&wb, b + i, 8);
        d |= wa ^ wb;
    }
    for (; i < len; i++)
        d |= (uint64_t)(a[i] ^ b[i]);
    return (int)(((d | (0 - d)) >> 63) ^ 1);
}

/* The HMAC key schedule of key: from the cache, or computed there (or into tmp). */
static const struct hmac_key *hmac_key(struct hmac_key *tmp, enum tg_md md,
                                       const unsigned char *key, size_t len)
{
    struct key_cache *c;
    struct key_ent *hit = NULL, *lru;
    size_t i;

    if (len > MD_MAX || (c = tg_tcache_get(&key_cache_tc, 1)) == NULL) {
        hmac_setkey(tmp, md, key, len);
        return tmp;
    }
    lru = &c->e[0];
    for (i = 0; i < KEY_CACHE; i++) {
        struct key_ent *e = &c->e[i];

        if (e->used != 0 && e->md == md && e->len == len && ct_equal(e->key, key, len))
            hit = e;
        if (e->used < lru->used)
            lru = e;
    }
    if (hit == NULL) {
        hit = lru;
        OPENSSL_cleanse(hit, sizeof(*hit));
        hmac_setkey(&hit->k, md, key, len);
        if (len > 0)
            memcpy(hit->key, key, len);
        hit->len = len;
        hit->md = md;
    }
    hit->used = ++c->tick;
    return &hit->k;
}

/*
 * HKDF-Expand-Label (RFC 8446 §7.1) with the context's prefix and label. Returns 1, or 0
 * with an error raised when a length does not fit HkdfLabel or HKDF-Expand.
 */
static int expand_label(TG_KDF *x, const struct hmac_key *prk, const unsigned char *data,
                        size_t datalen, unsigned char *out, size_t outlen)
{
    unsigned char info[2 + 1 + 255 + 1 + 255];
    size_t ll = x->prefix.len + x->label.len, n = 0;

    if (ll > 255 || datalen > 255) {
        TG_RAISE(x->prov, TG_R_BAD_ARGUMENT,
                 "TLS13-KDF: prefix + label (%zu bytes) or data (%zu bytes) longer than 255", ll,
                 datalen);
        return 0;
    }
    if (outlen > 255 * md_size(prk->md)) {
        TG_RAISE(x->prov, TG_R_BAD_ARGUMENT,
                 "TLS13-KDF: %zu bytes asked, HKDF-Expand gives at most %zu", outlen,
                 255 * md_size(prk->md));
        return 0;
    }
    info[n++] = (unsigned char)(outlen >> 8);
    info[n++] = (unsigned char)outlen;
    info[n++] = (unsigned char)ll;
    if (x->prefix.len > 0)
        memcpy(info + n, x->prefix.p, x->prefix.len);
    n += x->prefix.len;
    if (x->label.len > 0)
        memcpy(info + n, x->label.p, x->label.len);
    n += x->label.len;
    info[n++] = (unsigned char)datalen;
    if (datalen > 0)
        memcpy(info + n, data, datalen);
    n += datalen;
    hkdf_expand(prk, info, n, out, outlen);
    OPENSSL_cleanse(info, n);
    return 1;
}

/* The hash of the empty string per digest, for the "derived" step; computed once. */
static unsigned char empty_hash[2][MD_MAX];
static pthread_once_t empty_once = PTHREAD_ONCE_INIT;

static void empty_init(void)
{
    sha_ctx c;

    sha_init(TG_MD_SHA256, &c);
    sha_final(TG_MD_SHA256, &c, empty_hash[0]);
    sha_init(TG_MD_SHA384, &c);
    sha_final(TG_MD_SHA384, &c, empty_hash[1]);
}

static int do_extract(TG_KDF *x, unsigned char *out, size_t outlen)
{
    static const unsigned char zeros[MD_MAX];
    size_t hl = md_size(x->dg.md);
    unsigned char derived[MD_MAX];
    struct hmac_key k;
    int ok = 1;

    if (outlen != hl) {
        TG_RAISE(x->prov, TG_R_BUFFER_TOO_SMALL, "TLS13-KDF: extract gives %zu bytes, %zu asked",
                 hl, outlen);
        return 0;
    }
    if (x->salt.p == NULL) {
        hmac_setkey(&k, x->dg.md, NULL, 0); /* salt = "": HMAC with an empty key */
    } else {
        struct hmac_key tmp;

        pthread_once(&empty_once, empty_init);
        ok = expand_label(x, hmac_key(&tmp, x->dg.md, x->salt.p, x->salt.len),
                          empty_hash[x->dg.md == TG_MD_SHA384], hl, derived, hl);
        OPENSSL_cleanse(&tmp, sizeof(tmp));
        if (ok)
            hmac_setkey(&k, x->dg.md, derived, hl);
        OPENSSL_cleanse(derived, sizeof(derived));
    }
    if (ok) {
        if (x->key.p != NULL)
            hmac_run(&k, x->key.p, x->key.len, NULL, 0, NULL, 0, out);
        else
            hmac_run(&k, zeros, hl, NULL, 0, NULL, 0, out);
    }
    OPENSSL_cleanse(&k, sizeof(k));
    return ok;
}

static int do_expand(TG_KDF *x, unsigned char *out, size_t outlen)
{
    struct hmac_key k;
    int ok;

    if (x->key.p == NULL) {
        TG_RAISE(x->prov, TG_R_NO_KEY, "TLS13-KDF: no key (the secret to expand)");
        return 0;
    }
    if (outlen > 0xFFFF) {
        TG_RAISE(x->prov, TG_R_BAD_ARGUMENT, "TLS13-KDF: %zu bytes asked, HkdfLabel allows 65535",
                 outlen);
        return 0;
    }
    ok = expand_label(x, hmac_key(&k, x->dg.md, x->key.p, x->key.len), x->data.p, x->data.len, out,
                      outlen);
    OPENSSL_cleanse(&k, sizeof(k));
    return ok;
}

/* ---- parameters ---- */

static void buf_clear(struct kdf_buf *b)
{
    if (b->p != NULL && b->p != b->inl)
        OPENSSL_clear_free(b->p, b->len);
    else if (b->p != NULL)
        OPENSSL_cleanse(b->inl, b->len);
    b->p = NULL;
    b->len = 0;
}

static int buf_set(TG_PROV *prov, struct kdf_buf *b, const void *p, size_t len)
{
    buf_clear(b);
    if (len <= KDF_INLINE) {
        b->p = b->inl;
    } else if ((b->p = OPENSSL_malloc(len)) == NULL) {
        TG_RAISE(prov, TG_R_INTERNAL, "KDF: out of memory (%zu bytes)", len);
        return 0;
    }
    if (len > 0)
        memcpy(b->p, p, len);
    b->len = len;
    return 1;
}

static int param_octets(TG_PROV *prov, const char *alg, const OSSL_PARAM *p, struct kdf_buf *b)
{
    if (p->data_type != OSSL_PARAM_OCTET_STRING || (p->data == NULL && p->data_size != 0)) {
        TG_RAISE(prov, TG_R_BAD_ARGUMENT, "%s: parameter \"%s\" must be an octet string", alg,
                 p->key);
        return 0;
    }
    return buf_set(prov, b, p->data, p->data_size);
}

static int ascii_caseeq(const char *a, const char *b)
{
    for (; *a != '\0' && *b != '\0'; a++, b++) {
        char ca = *a >= 'A' && *a <= 'Z' ? (char)(*a - 'A' + 'a') : *a;
        char cb = *b >= 'A' && *b <= 'Z' ? (char)(*b - 'A' + 'a') : *b;

        if (ca != cb)
            return 0;
    }
    return *a == *b;
}

/* The names OpenSSL 3.0's default provider gives SHA-256 and SHA-384 (providers/names.h). */
static enum tg_md md_from_name(const char *name)
{
    static const char *const n256[] = {"SHA2-256", "SHA-256", "SHA256", "2.16.840.1.101.3.4.2.1"};
    static const char *const n384[] = {"SHA2-384", "SHA-384", "SHA384", "2.16.840.1.101.3.4.2.2"};
    size_t i;

    if (strcmp(name, n384[0]) == 0) /* what libssl passes: EVP_MD_get0_name() */
        return TG_MD_SHA384;
    if (strcmp(name, n256[0]) == 0)
        return TG_MD_SHA256;
    for (i = 0; i < sizeof(n256) / sizeof(n256[0]); i++) {
        if (ascii_caseeq(name, n256[i]))
            return TG_MD_SHA256;
        if (ascii_caseeq(name, n384[i]))
            return TG_MD_SHA384;
    }
    return TG_MD_OTHER;
}

/* "digest" or "properties" into d: 1 taken, 0 refused (error raised), -1 another key. */
static int digest_param(TG_PROV *prov, const char *alg, struct kdf_digest *d, const OSSL_PARAM *p)
{
    int is_md = strcmp(p->key, OSSL_KDF_PARAM_DIGEST) == 0;

    if (!is_md && strcmp(p->key, OSSL_KDF_PARAM_PROPERTIES) != 0)
        return -1;
    if (p->data_type != OSSL_PARAM_UTF8_STRING || p->data == NULL ||
        strlen(p->data) >= NAME_MAX_LEN) {
        TG_RAISE(prov, TG_R_BAD_ARGUMENT, "%s: parameter \"%s\" must be a string of under %d bytes",
                 alg, p->key, NAME_MAX_LEN);
        return 0;
    }
    if (is_md) {
        strcpy(d->mdname, p->data);
        d->md = md_from_name(d->mdname);
        return 1;
    }
    OPENSSL_free(d->props);
    if ((d->props = OPENSSL_strdup(p->data)) == NULL) {
        TG_RAISE(prov, TG_R_INTERNAL, "%s: out of memory", alg);
        return 0;
    }
    return 1;
}

static int digest_dup(struct kdf_digest *to, const struct kdf_digest *from)
{
    to->md = from->md;
    memcpy(to->mdname, from->mdname, sizeof(to->mdname));
    return from->props == NULL || (to->props = OPENSSL_strdup(from->props)) != NULL;
}

/*
 * A KDF's set_ctx_params: "digest" and "properties" into dg (digest_param), every other
 * key of params to set(x, p) (1: taken or not ours, 0: refused, error raised). Returns 1,
 * or 0 at the first refusal. alg names the KDF in errors.
 */
static int kdf_params_walk(TG_PROV *prov, const char *alg, struct kdf_digest *dg,
                           const OSSL_PARAM params[], int (*set)(void *x, const OSSL_PARAM *p),
                           void *x)
{
    for (const OSSL_PARAM *p = params; p != NULL && p->key != NULL; p++) {
        int r = digest_param(prov, alg, dg, p);

        if (r == 0 || (r < 0 && !set(x, p)))
            return 0;
    }
    return 1;
}

/* One TLS13-KDF parameter other than the digest's (kdf_params_walk). */
static int kdf_set_one(void *vctx, const OSSL_PARAM *p)
{
    TG_KDF *x = vctx;
    const char *k = p->key;

    if (strcmp(k, OSSL_KDF_PARAM_MODE) == 0) {
        int n;

        if (p->data_type == OSSL_PARAM_UTF8_STRING && p->data != NULL) {
            if (ascii_caseeq(p->data, "EXTRACT_AND_EXPAND"))
                n = EVP_KDF_HKDF_MODE_EXTRACT_AND_EXPAND;
            else if (ascii_caseeq(p->data, "EXTRACT_ONLY"))
                n = EVP_KDF_HKDF_MODE_EXTRACT_ONLY;
            else if (ascii_caseeq(p->data, "EXPAND_ONLY"))
                n = EVP_KDF_HKDF_MODE_EXPAND_ONLY;
            else
                n = -1;
        } else if (!OSSL_PARAM_get_int(p, &n)) {
            n = -1;
        }
        if (n != EVP_KDF_HKDF_MODE_EXTRACT_AND_EXPAND && n != EVP_KDF_HKDF_MODE_EXTRACT_ONLY &&
            n != EVP_KDF_HKDF_MODE_EXPAND_ONLY) {
            TG_RAISE(x->prov, TG_R_BAD_ARGUMENT, "TLS13-KDF: invalid mode");
            return 0;
        }
        x->mode = n;
        return 1;
    }
    for (size_t i = 0; i < KDF_N_BUFS - 1; i++) /* all but "data" */
        if (strcmp(k, kdf_bufs[i].key) == 0)
            return param_octets(x->prov, "TLS13-KDF", p, KDF_BUF(x, i));
    return 1;
}

static int kdf_set_ctx_params(void *vctx, const OSSL_PARAM params[])
{
    TG_KDF *x = vctx;
    const OSSL_PARAM *p;

    if (params == NULL)
        return 1;
    if (!kdf_params_walk(x->prov, "TLS13-KDF", &x->dg, params, kdf_set_one, x))
        return 0;
    if (x->mode == EVP_KDF_HKDF_MODE_EXTRACT_AND_EXPAND) {
        TG_RAISE(x->prov, TG_R_BAD_ARGUMENT,
                 "TLS13-KDF: mode must be EXTRACT_ONLY or EXPAND_ONLY (RFC 8446 §7.1)");
        return 0;
    }
    /* OpenSSL's TLS13-KDF forgets "data" on every call that does not set it again. */
    buf_clear(&x->data);
    if ((p = OSSL_PARAM_locate_const(params, OSSL_KDF_PARAM_DATA)) != NULL &&
        !param_octets(x->prov, "TLS13-KDF", p, &x->data))
        return 0;
    return 1;
}

TG_CONST_CTX_PARAMS(kdf_settable_ctx_params, OSSL_PARAM_utf8_string(OSSL_KDF_PARAM_MODE, NULL, 0),
                    OSSL_PARAM_int(OSSL_KDF_PARAM_MODE, NULL),
                    OSSL_PARAM_utf8_string(OSSL_KDF_PARAM_PROPERTIES, NULL, 0),
                    OSSL_PARAM_utf8_string(OSSL_KDF_PARAM_DIGEST, NULL, 0),
                    OSSL_PARAM_octet_string(OSSL_KDF_PARAM_KEY, NULL, 0),
                    OSSL_PARAM_octet_string(OSSL_KDF_PARAM_SALT, NULL, 0),
                    OSSL_PARAM_octet_string(OSSL_KDF_PARAM_PREFIX, NULL, 0),
                    OSSL_PARAM_octet_string(OSSL_KDF_PARAM_LABEL, NULL, 0),
                    OSSL_PARAM_octet_string(OSSL_KDF_PARAM_DATA, NULL, 0), OSSL_PARAM_END)

/* ---- delegation (digests other than SHA-256 / SHA-384) ---- */

#define KDFF(id, type) TG_DFLT(tg_dflt_kdf_tls13, OSSL_FUNC_KDF_##id, OSSL_FUNC_kdf_##type##_fn *)

/* A default-provider TLS13-KDF context holding our parameters, or NULL (error raised). */
static void *dflt_ctx(TG_KDF *x)
{
    OSSL_PARAM ps[10], *p = ps;
    void *d;

    if ((d = KDFF(NEWCTX, newctx)(x->prov->dflt_provctx)) == NULL) {
        TG_RAISE(x->prov, TG_R_DELEGATION_FAILED, "TLS13-KDF: default provider context");
        return NULL;
    }
    if (x->dg.props != NULL)
        *p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_PROPERTIES, x->dg.props, 0);
    *p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, x->dg.mdname, 0);
    *p++ = OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &x->mode);
    if (x->key.p != NULL)
        *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, x->key.p, x->key.len);
    if (x->salt.p != NULL)
        *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, x->salt.p, x->salt.len);
    if (x->prefix.p != NULL)
        *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_PREFIX, x->prefix.p, x->prefix.len);
    if (x->label.p != NULL)
        *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_LABEL, x->label.p, x->label.len);
    if (x->data.p != NULL)
        *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_DATA, x->data.p, x->data.len);
    *p = OSSL_PARAM_construct_end();
    if (!KDFF(SET_CTX_PARAMS, set_ctx_params)(d, ps)) {
        KDFF(FREECTX, freectx)(d);
        return NULL; /* the default provider raised why */
    }
    return d;
}

/* ---- dispatch ---- */

/* Frees a TG_KDF or TG_PRF context, wiped by its reset. */
static void ctx_free(void *vctx, void (*reset)(void *))
{
    if (vctx == NULL)
        return;
    reset(vctx);
    OPENSSL_free(vctx);
}

/* A copy of src, a TG_KDF or TG_PRF context of size bytes: a new one for its provider,
 * filled by copy (1, or 0 out of memory; then the copy is wiped by reset and freed). */
static void *ctx_dup(const void *src, size_t size, int (*copy)(void *to, const void *from),
                     void (*reset)(void *))
{
    void *x = tg_ctx_new(*(TG_PROV *const *)src, size);

    if (x != NULL && !copy(x, src)) {
        ctx_free(x, reset);
        x = NULL;
    }
    return x;
}

/* newctx, freectx and dupctx of a KDF whose context type T starts with its TG_PROV *, from
 * its pfx_reset (wipes the context) and pfx_copy (for ctx_dup). */
#define KDF_CTX_FUNCTIONS(pfx, T)                                                                  \
    _Static_assert(offsetof(T, prov) == 0, "tg_ctx_new sets the first member");                    \
    static void *pfx##_newctx(void *provctx)                                                       \
    {                                                                                              \
        return tg_ctx_new(provctx, sizeof(T));                                                     \
    }                                                                                              \
    static void pfx##_freectx(void *vctx)                                                          \
    {                                                                                              \
        ctx_free(vctx, pfx##_reset);                                                               \
    }                                                                                              \
    static void *pfx##_dupctx(void *vctx)                                                          \
    {                                                                                              \
        return ctx_dup(vctx, sizeof(T), pfx##_copy, pfx##_reset);                                  \
    }

static void kdf_reset(void *vctx)
{
    TG_KDF *x = vctx;
    TG_PROV *prov = x->prov;

    for (size_t i = 0; i < KDF_N_BUFS; i++)
        buf_clear(KDF_BUF(x, i));
    OPENSSL_free(x->dg.props);
    OPENSSL_cleanse(x, sizeof(*x));
    x->prov = prov;
}

static int kdf_copy(void *to, const void *from)
{
    TG_KDF *x = to;
    const TG_KDF *src = from;

    x->mode = src->mode;
    if (!digest_dup(&x->dg, &src->dg))
        return 0;
    for (size_t i = 0; i < KDF_N_BUFS; i++) {
        const struct kdf_buf *b = KDF_BUF(src, i);

        if (b->p != NULL && !buf_set(x->prov, KDF_BUF(x, i), b->p, b->len))
            return 0;
    }
    return 1;
}

KDF_CTX_FUNCTIONS(kdf, TG_KDF)

static int kdf_derive(void *vctx, unsigned char *out, size_t outlen, const OSSL_PARAM params[])
{
    TG_KDF *x = vctx;

    if (!kdf_set_ctx_params(x, params))
        return 0;
    if (x->dg.md == TG_MD_NONE) {
        TG_RAISE(x->prov, TG_R_BAD_ARGUMENT, "TLS13-KDF: no digest set");
        return 0;
    }
    if (x->mode != EVP_KDF_HKDF_MODE_EXTRACT_ONLY && x->mode != EVP_KDF_HKDF_MODE_EXPAND_ONLY) {
        TG_RAISE(x->prov, TG_R_BAD_ARGUMENT, "TLS13-KDF: no mode set");
        return 0;
    }
    if (x->dg.md == TG_MD_OTHER) {
        void *d = dflt_ctx(x);
        int ok;

        if (d == NULL)
            return 0;
        ok = KDFF(DERIVE, derive)(d, out, outlen, NULL);
        KDFF(FREECTX, freectx)(d);
        return ok;
    }
    if (out == NULL) {
        TG_RAISE(x->prov, TG_R_BAD_ARGUMENT, "TLS13-KDF: no output buffer");
        return 0;
    }
    return x->mode == EVP_KDF_HKDF_MODE_EXTRACT_ONLY ? do_extract(x, out, outlen)
                                                     : do_expand(x, out, outlen);
}

static int kdf_get_ctx_params(void *vctx, OSSL_PARAM params[])
{
    TG_KDF *x = vctx;
    OSSL_PARAM *p = OSSL_PARAM_locate(params, OSSL_KDF_PARAM_SIZE);
    size_t sz;

    if (p == NULL)
        return -2; /* as OpenSSL's: nothing we know was asked */
    if (x->mode != EVP_KDF_HKDF_MODE_EXTRACT_ONLY) {
        sz = SIZE_MAX;
    } else if (x->dg.md == TG_MD_NONE) {
        TG_RAISE(x->prov, TG_R_BAD_ARGUMENT, "TLS13-KDF: no digest set");
        return 0;
    } else if (x->dg.md == TG_MD_OTHER) {
        void *d = dflt_ctx(x);
        int ok;

        if (d == NULL)
            return 0;
        ok = KDFF(GET_CTX_PARAMS, get_ctx_params)(d, params);
        KDFF(FREECTX, freectx)(d);
        return ok;
    } else {
        sz = md_size(x->dg.md);
    }
    return OSSL_PARAM_set_size_t(p, sz);
}

TG_CONST_CTX_PARAMS(kdf_gettable_ctx_params, OSSL_PARAM_size_t(OSSL_KDF_PARAM_SIZE, NULL),
                    OSSL_PARAM_END)

const OSSL_DISPATCH tg_tls13_kdf_functions[] = TG_KDF_FUNCTIONS(kdf, kdf_gettable_ctx_params);

/* ---- TLS1-PRF (RFC 5246 §5) ---- */

#define PRF_SEED_MAX 1024 /* OpenSSL's TLS1_PRF_MAXBUF */

typedef struct tg_prf {
    TG_PROV *prov;
    struct kdf_digest dg;
    struct kdf_buf secret;
    size_t seedlen;
    unsigned char seed[PRF_SEED_MAX];
} TG_PRF;

#define PRFF(id, type)                                                                             \
    TG_DFLT(tg_dflt_kdf_tls1_prf, OSSL_FUNC_KDF_##id, OSSL_FUNC_kdf_##type##_fn *)

static void prf_reset(void *vctx)
{
    TG_PRF *x = vctx;
    TG_PROV *prov = x->prov;

    buf_clear(&x->secret);
    OPENSSL_free(x->dg.props);
    OPENSSL_cleanse(x->seed, x->seedlen);
    memset(x, 0, offsetof(TG_PRF, seed)); /* seedlen too */
    x->prov = prov;
}

static int prf_copy(void *to, const void *from)
{
    TG_PRF *x = to;
    const TG_PRF *src = from;

    if (!digest_dup(&x->dg, &src->dg) ||
        (src->secret.p != NULL && !buf_set(x->prov, &x->secret, src->secret.p, src->secret.len)))
        return 0;
    memcpy(x->seed, src->seed, src->seedlen);
    x->seedlen = src->seedlen;
    return 1;
}

KDF_CTX_FUNCTIONS(prf, TG_PRF)

/* One TLS1-PRF parameter other than the digest's (kdf_params_walk). */
static int prf_set_one(void *vctx, const OSSL_PARAM *p)
{
    TG_PRF *x = vctx;
    const char *k = p->key;

    if (strcmp(k, OSSL_KDF_PARAM_SECRET) == 0) {
        if (!param_octets(x->prov, "TLS1-PRF", p, &x->secret))
            return 0;
    } else if (strcmp(k, OSSL_KDF_PARAM_SEED) == 0) {
        if (p->data_type != OSSL_PARAM_OCTET_STRING) {
            TG_RAISE(x->prov, TG_R_BAD_ARGUMENT, "TLS1-PRF: \"seed\" must be an octet string");
            return 0;
        }
        if (p->data == NULL || p->data_size == 0)
            return 1;
        if (p->data_size > PRF_SEED_MAX - x->seedlen) {
            TG_RAISE(x->prov, TG_R_BAD_ARGUMENT, "TLS1-PRF: seeds longer than %d bytes in all",
                     PRF_SEED_MAX);
            return 0;
        }
        memcpy(x->seed + x->seedlen, p->data, p->data_size);
        x->seedlen += p->data_size;
    }
    return 1;
}

static int prf_set_ctx_params(void *vctx, const OSSL_PARAM params[])
{
    TG_PRF *x = vctx;

    return kdf_params_walk(x->prov, "TLS1-PRF", &x->dg, params, prf_set_one, x);
}

TG_CONST_CTX_PARAMS(prf_settable_ctx_params,
                    OSSL_PARAM_utf8_string(OSSL_KDF_PARAM_PROPERTIES, NULL, 0),
                    OSSL_PARAM_utf8_string(OSSL_KDF_PARAM_DIGEST, NULL, 0),
                    OSSL_PARAM_octet_string(OSSL_KDF_PARAM_SECRET, NULL, 0),
                    OSSL_PARAM_octet_string(OSSL_KDF_PARAM_SEED, NULL, 0), OSSL_PARAM_END)

static int prf_get_ctx_params(void *vctx, OSSL_PARAM params[])
{
    OSSL_PARAM *p = OSSL_PARAM_locate(params, OSSL_KDF_PARAM_SIZE);

    (void)vctx;
    return p == NULL ? -2 : OSSL_PARAM_set_size_t(p, SIZE_MAX);
}

/* The default provider's TLS1-PRF for other digests: a context with our parameters. */
static int prf_delegate(TG_PRF *x, unsigned char *out, size_t outlen)
{
    OSSL_PARAM ps[5], *p = ps;
    void *d = PRFF(NEWCTX, newctx)(x->prov->dflt_provctx);
    int ok;

    if (d == NULL) {
        TG_RAISE(x->prov, TG_R_DELEGATION_FAILED, "TLS1-PRF: default provider context");
        return 0;
    }
    if (x->dg.props != NULL)
        *p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_PROPERTIES, x->dg.props, 0);
    *p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, x->dg.mdname, 0);
    *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SECRET, x->secret.p, x->secret.len);
    *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SEED, x->seed, x->seedlen);
    *p = OSSL_PARAM_construct_end();
    ok = PRFF(DERIVE, derive)(d, out, outlen, ps);
    PRFF(FREECTX, freectx)(d);
    return ok;
}

static int prf_derive(void *vctx, unsigned char *out, size_t outlen, const OSSL_PARAM params[])
{
    TG_PRF *x = vctx;
    struct hmac_key tmp;
    const struct hmac_key *k;
    unsigned char a[MD_MAX], t[MD_MAX];
    size_t hl, done = 0;

    if (!prf_set_ctx_params(x, params))
        return 0;
    if (x->dg.md == TG_MD_NONE) {
        TG_RAISE(x->prov, TG_R_BAD_ARGUMENT, "TLS1-PRF: no digest set");
        return 0;
    }
    if (x->secret.p == NULL) {
        TG_RAISE(x->prov, TG_R_NO_KEY, "TLS1-PRF: no secret set");
        return 0;
    }
    if (x->seedlen == 0) {
        TG_RAISE(x->prov, TG_R_BAD_ARGUMENT, "TLS1-PRF: no seed set");
        return 0;
    }
    if (outlen == 0 || out == NULL) {
        TG_RAISE(x->prov, TG_R_BAD_ARGUMENT, "TLS1-PRF: no output asked");
        return 0;
    }
    if (x->dg.md == TG_MD_OTHER)
        return prf_delegate(x, out, outlen);
    hl = md_size(x->dg.md);
    k = hmac_key(&tmp, x->dg.md, x->secret.p, x->secret.len);
    /* P_hash: A(1) = HMAC(secret, seed), out = HMAC(secret, A(i) || seed) ..., A(i+1) = HMAC(secret, A(i)) */
    hmac_run(k, x->seed, x->seedlen, NULL, 0, NULL, 0, a);
    for (;;) {
        size_t n = outlen - done < hl ? outlen - done : hl;

        hmac_run(k, a, hl, x->seed, x->seedlen, NULL, 0, t);
        memcpy(out + done, t, n);
        done += n;
        if (done == outlen)
            break;
        hmac_run(k, a, hl, NULL, 0, NULL, 0, a);
    }
    OPENSSL_cleanse(a, sizeof(a));
    OPENSSL_cleanse(t, sizeof(t));
    OPENSSL_cleanse(&tmp, sizeof(tmp));
    return 1;
}

const OSSL_DISPATCH tg_tls1_prf_functions[] = TG_KDF_FUNCTIONS(prf, kdf_gettable_ctx_params);
