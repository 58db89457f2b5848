/*
 * prov_kdf: tlsgate's TLS13-KDF and TLS1-PRF (prov/kdf.c) against OpenSSL's default
 * provider.
 *
 * Both implementations are fetched from one library context holding tlsgate.so and the
 * default provider ("provider=tlsgate" / "provider=default") and given the same
 * parameters; their outputs, or their refusals, must agree:
 * - random inputs for SHA-256 and SHA-384 under each of their names, both modes, keys
 *   from 0 to 200 bytes (longer than a SHA-256 block: hashed first), labels, contexts and
 *   output lengths around the block boundaries;
 * - the per-thread cache of HMAC key schedules: keys that differ in one byte, the same
 *   bytes under the other digest, a prefix of a cached key, more live keys than entries,
 *   other threads;
 * - edge values: output lengths 0, 255 * hash length and one more, 65,535 and one more;
 *   prefix + label of 255 and 256 bytes, context of 255 and 256; extract into a wrong
 *   length; no digest, no mode, EXTRACT_AND_EXPAND, modes as strings; "data" forgotten by
 *   a later call without it; digests we delegate (SHA-512, SHA-1) and ones both refuse;
 *   dupctx; the size parameter;
 * - TLS1-PRF: random secrets, seeds split into up to five parts (some empty), output
 *   lengths; MD5-SHA1 and SHA-512 (delegated); no digest / secret / seed, empty output,
 *   1,024 bytes of seed and one more, seeds appended across calls until a reset, dupctx;
 * - TLS 1.3 handshakes (each cipher suite, HelloRetryRequest, resumption, key update)
 *   and TLS 1.2 handshakes (SHA-256 and SHA-384 suites, with and without the extended
 *   master secret, resumption) between a server that prefers tlsgate and a client with
 *   only the default provider, with the exported keying material compared on both sides.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/pem.h>
#include <openssl/provider.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "prov_env.h"
#include "tls_pair.h"

static struct prov_env g_env; /* lib: tlsgate + default; plain: default only (the TLS client) */
static EVP_KDF *g_tg, *g_df;
static EVP_KDF *g_prf_tg, *g_prf_df;

struct in {
    const char *md;
    int mode; /* EVP_KDF_HKDF_MODE_*, or -1: not set */
    const char *mode_str;
    const unsigned char *key, *salt, *prefix, *label, *data;
    size_t key_len, salt_len, prefix_len, label_len, data_len;
    int has_key, has_salt, has_prefix, has_label, has_data;
};

/* The TLS13-KDF parameters of in, in ps (10 at most); returns ps. */
static OSSL_PARAM *build(const struct in *in, OSSL_PARAM *ps)
{
    OSSL_PARAM *p = ps;

    if (in->md != NULL)
        *p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)in->md, 0);
    if (in->mode_str != NULL)
        *p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_MODE, (char *)in->mode_str, 0);
    else if (in->mode >= 0)
        *p++ = OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, (int *)&in->mode);
    if (in->has_key)
        *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)in->key, in->key_len);
    if (in->has_salt)
        *p++ =
            OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)in->salt, in->salt_len);
    if (in->has_prefix)
        *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_PREFIX, (void *)in->prefix,
                                                 in->prefix_len);
    if (in->has_label)
        *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_LABEL, (void *)in->label,
                                                 in->label_len);
    if (in->has_data)
        *p++ =
            OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_DATA, (void *)in->data, in->data_len);
    *p = OSSL_PARAM_construct_end();
    return ps;
}

/*
 * The inputs of TLS 1.3's HKDF-Expand-Label / Derive-Secret (RFC 8446 7.1) as TLS13-KDF
 * takes them: md, mode, the key, the "tls13 " prefix and the label; no salt, no data.
 */
static struct in tls13_in(const char *md, int mode, const unsigned char *key, size_t key_len,
                          const unsigned char *label, size_t label_len)
{
    static const unsigned char prefix[] = "tls13 ";
    struct in in = {.md = md,
                    .mode = mode,
                    .key = key,
                    .key_len = key_len,
                    .prefix = prefix,
                    .prefix_len = 6,
                    .label = label,
                    .label_len = label_len,
                    .has_key = 1,
                    .has_prefix = 1,
                    .has_label = 1};

    return in;
}

/* in, in words (for a failure), in buf; returns buf. */
static const char *describe(const struct in *in, char *buf, size_t len)
{
    snprintf(buf, len, "md %s mode %d key %zu salt %d/%zu label %zu data %d/%zu",
             in->md ? in->md : "(none)", in->mode, in->key_len, in->has_salt, in->salt_len,
             in->label_len, in->has_data, in->data_len);
    return buf;
}

/* Derives outlen bytes with kdf from ps; returns 1 on success, 0 on refusal. */
static int kdf_derive(EVP_KDF *kdf, const OSSL_PARAM *ps, unsigned char *out, size_t outlen)
{
    EVP_KDF_CTX *c = EVP_KDF_CTX_new(kdf);
    int ok;

    assert_non_null(c);
    ok = EVP_KDF_derive(c, out, outlen, ps) > 0;
    EVP_KDF_CTX_free(c);
    ERR_clear_error();
    return ok;
}

/*
 * tlsgate's tg and the default provider's df agree on ps: the same success and, on
 * success, the same outlen bytes. Returns tg's success; fails the test (with the caller's
 * line and `what`, the inputs) when they disagree.
 */
static int kdfs_agree(EVP_KDF *tg, EVP_KDF *df, const OSSL_PARAM *ps, size_t outlen,
                      const char *what, int line)
{
    unsigned char *a = calloc(1, outlen + 1), *b = calloc(1, outlen + 1);
    int ra, rb;

    assert_non_null(a);
    assert_non_null(b);
    ra = kdf_derive(tg, ps, a, outlen);
    rb = kdf_derive(df, ps, b, outlen);
    if (ra != rb || (ra && memcmp(a, b, outlen) != 0)) {
        fprintf(stderr, "line %d: %s out %zu: tlsgate %d default %d%s\n", line, what, outlen, ra,
                rb, ra && rb ? " (different bytes)" : "");
        fail();
    }
    free(a);
    free(b);
    return ra;
}

/* Derives with one implementation; returns 1 on success, 0 on refusal. */
static int derive(EVP_KDF *kdf, const struct in *in, unsigned char *out, size_t outlen)
{
    OSSL_PARAM ps[10];

    return kdf_derive(kdf, build(in, ps), out, outlen);
}

/* Both implementations agree: same success and, on success, the same bytes. */
static int agree_(const struct in *in, size_t outlen, int line)
{
    OSSL_PARAM ps[10];
    char what[160];

    return kdfs_agree(g_tg, g_df, build(in, ps), outlen, describe(in, what, sizeof(what)), line);
}
#define agree(in, outlen) agree_((in), (outlen), __LINE__)

static size_t md_len(const char *md)
{
    return strstr(md, "256") != NULL ? 32 : 48;
}

static unsigned rnd(unsigned n)
{
    unsigned v;

    assert_true(RAND_bytes((unsigned char *)&v, sizeof(v)) == 1);
    return n == 0 ? 0 : v % n;
}

static void fill(unsigned char *p, size_t n)
{
    if (n > 0)
        assert_true(RAND_bytes(p, (int)n) == 1);
}

static const char *const md_names[] = {"SHA2-256", "SHA2-384", "SHA256",
                                       "sha384",   "SHA-256",  "2.16.840.1.101.3.4.2.2"};
#define N_MD (sizeof(md_names) / sizeof(md_names[0]))

/* The buffers a random TLS13-KDF case's input points into. */
struct rand_bufs {
    unsigned char key[200], salt[200], label[64], data[255];
};

/*
 * n random cases in mode, each with a random digest name: make fills the rest of the
 * input (in b's buffers) for the digest's length hl and returns the output length to
 * ask for; both implementations must agree on each.
 */
static void random_agree(int n, int mode,
                         size_t (*make)(struct in *in, size_t hl, struct rand_bufs *b))
{
    struct rand_bufs b;

    for (int i = 0; i < n; i++) {
        const char *md = md_names[rnd(N_MD)];
        struct in in = tls13_in(md, mode, b.key, 0, b.label, 0);
        size_t outlen = make(&in, md_len(md), &b);

        assert_true(agree(&in, outlen));
    }
}

/* Expand: any key length now and then, any label, data of the digest's length or any. */
static size_t expand_case(struct in *in, size_t hl, struct rand_bufs *b)
{
    size_t outs[] = {hl, 12, 16, 32, 1, hl - 1, hl + 1, 2 * hl, 3 * hl + 7};

    in->data = b->data;
    in->has_data = rnd(4) != 0;
    in->key_len = rnd(8) == 0 ? rnd(sizeof(b->key) + 1) : hl;
    in->label_len = rnd(sizeof(b->label) + 1);
    in->data_len = in->has_data ? (rnd(2) ? hl : rnd(sizeof(b->data) + 1)) : 0;
    fill(b->key, in->key_len);
    fill(b->label, in->label_len);
    fill(b->data, in->data_len);
    return outs[rnd(sizeof(outs) / sizeof(outs[0]))];
}

/* Extract ("derived"): key and salt each absent, of the digest's length or any. */
static size_t extract_case(struct in *in, size_t hl, struct rand_bufs *b)
{
    static const unsigned char label[] = "derived";

    in->label = label;
    in->label_len = 7;
    in->salt = b->salt;
    in->has_key = rnd(4) != 0;
    in->has_salt = rnd(4) != 0;
    in->key_len = in->has_key ? (rnd(4) ? hl : rnd(sizeof(b->key) + 1)) : 0;
    in->salt_len = in->has_salt ? (rnd(4) ? hl : rnd(sizeof(b->salt) + 1)) : 0;
    fill(b->key, in->key_len);
    fill(b->salt, in->salt_len);
    return hl;
}

static void test_random_expand(void **state)
{
    (void)state;
    random_agree(3000, EVP_KDF_HKDF_MODE_EXPAND_ONLY, expand_case);
}

static void test_random_extract(void **state)
{
    (void)state;
    random_agree(2000, EVP_KDF_HKDF_MODE_EXTRACT_ONLY, extract_case);
}

/* The cache must never answer for a different key, digest or length. */
static void test_cache_keys(void **state)
{
    unsigned char keys[7][48], out[48];
    static const unsigned char label[] = "key";
    size_t i, round;

    (void)state;
    fill(keys[0], 48);
    for (i = 1; i < 7; i++) { /* each differs from the first in one bit, at the start or end */
        memcpy(keys[i], keys[0], 48);
        keys[i][i % 2 ? 0 : 47] ^= (unsigned char)(1u << i);
    }
    for (round = 0; round < 40; round++) {
        size_t k = round % 7;
        struct in in = tls13_in(round % 3 ? "SHA2-384" : "SHA2-256", EVP_KDF_HKDF_MODE_EXPAND_ONLY,
                                keys[k], round % 5 == 0 ? 32 : 48, label, 3);

        /* 48 bytes under both digests, and 32: a prefix of the same bytes */
        assert_true(agree(&in, 32));
        assert_true(agree(&in, 48));
        /* the same key again right away (a hit) and after the others (evicted) */
        assert_true(agree(&in, 12));
    }
    (void)out;
}

static void *thread_main(void *arg)
{
    (void)arg;
    test_cache_keys(NULL);
    test_random_extract(NULL);
    return NULL;
}

static void test_cache_threads(void **state)
{
    pthread_t t[3];
    size_t i;

    (void)state;
    for (i = 0; i < 3; i++)
        assert_int_equal(pthread_create(&t[i], NULL, thread_main, NULL), 0);
    test_cache_keys(NULL);
    for (i = 0; i < 3; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
}

/* The input with *len at max succeeds, with *len at max + 1 is refused, by both. */
static void at_limit_(struct in *x, size_t *len, size_t max, size_t outlen, int line)
{
    *len = max;
    assert_true(agree_(x, outlen, line));
    *len = max + 1;
    assert_false(agree_(x, outlen, line));
}
#define at_limit(x, len, max, outlen) at_limit_((x), (len), (max), (outlen), __LINE__)

static void test_edges(void **state)
{
    static const struct {
        int mode;
        const char *name; /* NULL: the mode is passed as a number */
        int ok;
    } modes[] = {
        {EVP_KDF_HKDF_MODE_EXTRACT_AND_EXPAND, NULL, 0},
        {-1, NULL, 0},
        {7, NULL, 0},
        {7, "EXPAND_ONLY", 1},
        {7, "extract_only", 1},
        {7, "EXTRACT_AND_EXPAND", 0},
        {7, "SIDEWAYS", 0},
    };
    unsigned char key[48], long_label[300], data[300];
    size_t m;

    (void)state;
    fill(key, sizeof(key));
    fill(long_label, sizeof(long_label));
    fill(data, sizeof(data));
    for (m = 0; m < 2; m++) {
        const char *md = m ? "SHA2-384" : "SHA2-256";
        size_t hl = md_len(md);
        struct in in = tls13_in(md, EVP_KDF_HKDF_MODE_EXPAND_ONLY, key, hl, long_label, 5);
        struct in x;

        in.data = data;
        x = in;

        /* output lengths */
        assert_true(agree(&in, 0) || 1); /* whatever OpenSSL does with 0, the same */
        assert_true(agree(&in, 255 * hl));
        assert_false(agree(&in, 255 * hl + 1));
        assert_false(agree(&in, 65536));
        /* prefix + label and context limits (one length byte each) */
        at_limit(&x, &x.label_len, 249, hl);
        x = in;
        x.has_data = 1;
        at_limit(&x, &x.data_len, 255, hl);
        /* empty key, no prefix, empty label */
        x = in;
        x.key_len = 0;
        x.has_prefix = 0;
        x.label_len = 0;
        assert_true(agree(&x, hl));
        /* extract: only into the hash length */
        x = in;
        x.mode = EVP_KDF_HKDF_MODE_EXTRACT_ONLY;
        assert_true(agree(&x, hl));
        assert_false(agree(&x, hl - 1));
        assert_false(agree(&x, hl + 1));
        /* empty salt is a salt (the "derived" step runs), unlike no salt */
        x.has_salt = 1;
        x.salt = key;
        x.salt_len = 0;
        assert_true(agree(&x, hl));
        /* modes: a number, or a name (which wins over the number) */
        for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
            x = in;
            x.mode = modes[i].mode;
            x.mode_str = modes[i].name;
            assert_int_equal(agree(&x, hl) != 0, modes[i].ok);
        }
        /* no digest */
        x = in;
        x.md = NULL;
        assert_false(agree(&x, hl));
    }
}

static void test_digests(void **state)
{
    unsigned char key[64], label[8];
    static const char *const ok[] = {"SHA2-512", "SHA1", "SHA2-224", "SHA3-256", "SHA2-512/256"};
    static const char *const bad[] = {"SHAKE256", "no-such-digest", ""};
    size_t i, mode;

    (void)state;
    fill(key, sizeof(key));
    fill(label, sizeof(label));
    for (mode = 1; mode <= 2; mode++) {
        for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
            struct in in = tls13_in(ok[i], (int)mode, key, 64, label, 8);
            EVP_MD *md = EVP_MD_fetch(g_env.lib, ok[i], "provider=default");

            assert_non_null(md);
            assert_true(agree(&in, (size_t)EVP_MD_get_size(md)));
            if (mode == EVP_KDF_HKDF_MODE_EXPAND_ONLY)
                assert_true(agree(&in, 100));
            EVP_MD_free(md);
        }
        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            struct in in = tls13_in(bad[i], (int)mode, key, 64, label, 8);

            assert_false(agree(&in, 32));
        }
    }
}

/* Parameters set before derive: "data" is forgotten by a later call that does not set it. */
static void test_params_lifecycle(void **state)
{
    unsigned char key[48], data[48], a[48], b[48];
    static const unsigned char label[] = "c hs traffic";
    EVP_KDF *kdfs[2] = {g_tg, g_df};
    unsigned char res[2][4][48];
    size_t k, hl = 48;
    OSSL_PARAM ps[10], sz[2];
    size_t size;

    (void)state;
    fill(key, sizeof(key));
    fill(data, sizeof(data));
    for (k = 0; k < 2; k++) {
        struct in in =
            tls13_in("SHA2-384", EVP_KDF_HKDF_MODE_EXPAND_ONLY, key, hl, label, sizeof(label) - 1);
        struct in only_md = {.md = "SHA2-384", .mode = -1};
        EVP_KDF_CTX *c = EVP_KDF_CTX_new(kdfs[k]), *d;

        assert_non_null(c);
        in.data = data;
        in.data_len = hl;
        in.has_data = 1;
        build(&in, ps);
        assert_true(EVP_KDF_CTX_set_params(c, ps));
        assert_true(EVP_KDF_derive(c, res[k][0], hl, NULL) > 0); /* with data */
        d = EVP_KDF_CTX_dup(c);
        if (d != NULL) { /* the default provider's TLS13-KDF in 3.0 has no dupctx */
            assert_true(EVP_KDF_derive(d, a, hl, NULL) > 0);
            assert_memory_equal(a, res[k][0], hl);
            EVP_KDF_CTX_free(d);
        }
        build(&only_md, ps);
        assert_true(EVP_KDF_derive(c, res[k][1], hl, ps) > 0); /* data forgotten */
        /* the size: unbounded when expanding, the hash length when extracting */
        sz[0] = OSSL_PARAM_construct_size_t(OSSL_KDF_PARAM_SIZE, &size);
        sz[1] = OSSL_PARAM_construct_end();
        assert_true(EVP_KDF_CTX_get_params(c, sz));
        assert_true(size == SIZE_MAX);
        in.mode = EVP_KDF_HKDF_MODE_EXTRACT_ONLY;
        in.has_data = 0;
        build(&in, ps);
        assert_true(EVP_KDF_CTX_set_params(c, ps));
        assert_true(EVP_KDF_CTX_get_params(c, sz));
        assert_int_equal(size, hl);
        assert_int_equal(EVP_KDF_CTX_get_kdf_size(c), hl);
        assert_true(EVP_KDF_derive(c, res[k][2], hl, NULL) > 0);
        EVP_KDF_CTX_reset(c);
        assert_false(EVP_KDF_derive(c, res[k][3], hl, NULL) > 0); /* nothing set any more */
        ERR_clear_error();
        EVP_KDF_CTX_free(c);
    }
    assert_memory_equal(res[0][0], res[1][0], hl);
    assert_memory_equal(res[0][1], res[1][1], hl);
    assert_memory_not_equal(res[0][0], res[0][1], hl);
    assert_memory_equal(res[0][2], res[1][2], hl);
    /* dup of ours keeps every parameter */
    {
        struct in in = tls13_in("SHA2-256", EVP_KDF_HKDF_MODE_EXTRACT_ONLY, key, 32, label, 7);
        EVP_KDF_CTX *c = EVP_KDF_CTX_new(g_tg), *d;

        in.salt = data;
        in.salt_len = 32;
        in.has_salt = 1;
        build(&in, ps);
        assert_true(EVP_KDF_CTX_set_params(c, ps));
        d = EVP_KDF_CTX_dup(c);
        assert_non_null(d);
        EVP_KDF_CTX_free(c);
        assert_true(EVP_KDF_derive(d, a, 32, NULL) > 0);
        EVP_KDF_CTX_free(d);
        assert_true(derive(g_df, &in, b, 32));
        assert_memory_equal(a, b, 32);
    }
}

/* ---- TLS1-PRF ---- */

struct prf_in {
    const char *md;
    const unsigned char *secret;
    size_t secret_len;
    int has_secret;
    const unsigned char *seed[5];
    size_t seed_len[5];
    int nseed;
};

/* The TLS1-PRF parameters of in, in ps (8 at most); returns ps. */
static OSSL_PARAM *prf_build(const struct prf_in *in, OSSL_PARAM *ps)
{
    OSSL_PARAM *p = ps;
    int i;

    if (in->md != NULL)
        *p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)in->md, 0);
    if (in->has_secret)
        *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SECRET, (void *)in->secret,
                                                 in->secret_len);
    for (i = 0; i < in->nseed; i++)
        *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SEED, (void *)in->seed[i],
                                                 in->seed_len[i]);
    *p = OSSL_PARAM_construct_end();
    return ps;
}

static int prf_agree_(const struct prf_in *in, size_t outlen, int line)
{
    OSSL_PARAM ps[8];
    char what[96];

    snprintf(what, sizeof(what), "TLS1-PRF md %s secret %d/%zu seeds %d",
             in->md ? in->md : "(none)", in->has_secret, in->secret_len, in->nseed);
    return kdfs_agree(g_prf_tg, g_prf_df, prf_build(in, ps), outlen, what, line);
}

static int prf_derive(EVP_KDF *kdf, const struct prf_in *in, unsigned char *out, size_t outlen)
{
    OSSL_PARAM ps[8];

    return kdf_derive(kdf, prf_build(in, ps), out, outlen);
}
#define prf_agree(in, outlen) prf_agree_((in), (outlen), __LINE__)

static void test_prf_random(void **state)
{
    static const char *const mds[] = {"SHA2-256", "SHA2-384", "SHA256",  "SHA384",
                                      "sha2-384", "MD5-SHA1", "SHA2-512"};
    unsigned char secret[200], seed[5][120];
    int i, j;

    (void)state;
    for (i = 0; i < 2000; i++) {
        struct prf_in in = {.md = mds[rnd(i % 10 == 0 ? 7 : 5)], .secret = secret, .has_secret = 1};
        size_t outs[] = {12, 48, 72, 104, 136, 1, 32, 33, 200};

        in.secret_len = rnd(4) ? 48 : rnd(sizeof(secret) + 1);
        fill(secret, in.secret_len);
        in.nseed = 1 + (int)rnd(5);
        for (j = 0; j < in.nseed; j++) {
            in.seed[j] = rnd(6) ? seed[j] : NULL;
            in.seed_len[j] = in.seed[j] != NULL ? rnd(sizeof(seed[j]) + 1) : 0;
            if (in.seed[j] != NULL)
                fill(seed[j], in.seed_len[j]);
        }
        if (in.nseed == 1 && in.seed_len[0] == 0) { /* keep most cases valid */
            in.seed[0] = seed[0];
            in.seed_len[0] = 13;
            fill(seed[0], 13); /* not yet written when this comes first: valgrind saw it */
        }
        (void)prf_agree(&in, outs[rnd(sizeof(outs) / sizeof(outs[0]))]);
    }
}

/* A TLS1-PRF input: digest md, a 48-byte secret (a TLS master secret's length), one seed. */
static struct prf_in prf_in_1seed(const char *md, const unsigned char *secret,
                                  const unsigned char *seed, size_t seed_len)
{
    struct prf_in in = {.md = md,
                        .secret = secret,
                        .secret_len = 48,
                        .has_secret = 1,
                        .seed = {seed},
                        .seed_len = {seed_len},
                        .nseed = 1};

    return in;
}

static void test_prf_edges(void **state)
{
    unsigned char secret[48], seed[1025];
    EVP_KDF *kdfs[2] = {g_prf_tg, g_prf_df};
    unsigned char res[2][3][64];
    size_t k;

    (void)state;
    fill(secret, sizeof(secret));
    fill(seed, sizeof(seed));
    {
        struct prf_in in = prf_in_1seed("SHA2-384", secret, seed, 77);
        struct prf_in x = in;

        assert_true(prf_agree(&in, 48));
        assert_false(prf_agree(&in, 0));
        x.md = NULL;
        assert_false(prf_agree(&x, 48));
        x = in;
        x.has_secret = 0;
        assert_false(prf_agree(&x, 48));
        x = in;
        x.secret_len = 0; /* an empty secret is a secret */
        assert_true(prf_agree(&x, 48));
        x = in;
        x.nseed = 0;
        assert_false(prf_agree(&x, 48));
        x.nseed = 1;
        x.seed_len[0] = 0;
        assert_false(prf_agree(&x, 48));
        x.seed_len[0] = 1024;
        assert_true(prf_agree(&x, 48));
        x.seed_len[0] = 1025;
        assert_false(prf_agree(&x, 48));
        x.nseed = 2; /* 1,000 + 24 and 1,000 + 25 */
        x.seed[1] = seed + 1000;
        x.seed_len[0] = 1000;
        x.seed_len[1] = 24;
        assert_true(prf_agree(&x, 48));
        x.seed_len[1] = 25;
        assert_false(prf_agree(&x, 48));
        x = in;
        x.md = "SHAKE256";
        assert_false(prf_agree(&x, 48));
        x.md = "MD5-SHA1";
        assert_true(prf_agree(&x, 48));
        x.secret_len = 47; /* odd: the two halves overlap by a byte */
        assert_true(prf_agree(&x, 100));
    }
    /* seeds are appended across calls until a reset */
    for (k = 0; k < 2; k++) {
        EVP_KDF_CTX *c = EVP_KDF_CTX_new(kdfs[k]), *d;
        OSSL_PARAM ps[4];

        assert_non_null(c);
        ps[0] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, "SHA2-256", 0);
        ps[1] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SECRET, secret, 48);
        ps[2] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SEED, seed, 20);
        ps[3] = OSSL_PARAM_construct_end();
        assert_true(EVP_KDF_CTX_set_params(c, ps));
        assert_true(EVP_KDF_derive(c, res[k][0], 64, NULL) > 0);
        ps[0] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SEED, seed + 20, 30);
        ps[1] = OSSL_PARAM_construct_end();
        assert_true(EVP_KDF_derive(c, res[k][1], 64, ps) > 0); /* seed = 50 bytes now */
        d = EVP_KDF_CTX_dup(c);
        if (d != NULL) {
            unsigned char a[64];

            assert_true(EVP_KDF_derive(d, a, 64, NULL) > 0);
            assert_memory_equal(a, res[k][1], 64);
            EVP_KDF_CTX_free(d);
        }
        EVP_KDF_CTX_reset(c);
        assert_false(EVP_KDF_derive(c, res[k][2], 64, NULL) > 0);
        ERR_clear_error();
        EVP_KDF_CTX_free(c);
    }
    assert_memory_equal(res[0][0], res[1][0], 64);
    assert_memory_equal(res[0][1], res[1][1], 64);
    {
        struct prf_in in = prf_in_1seed("SHA2-256", secret, seed, 50);
        unsigned char b[64];

        assert_true(prf_derive(g_prf_df, &in, b, 64));
        assert_memory_equal(b, res[0][1], 64);
    }
}

/* ---- TLS through libssl: a server preferring tlsgate, a plain client ---- */

static SSL_SESSION *one_handshake(SSL_CTX *cc, SSL_CTX *sc, const char *suite, const char *groups,
                                  SSL_SESSION *resume, int *reused)
{
    int tls12 = strncmp(suite, "TLS_", 4) != 0; /* a TLS 1.2 cipher name */
    SSL *c, *s;
    unsigned char ek[2][64], msg[64], buf[64];
    SSL_SESSION *sess;
    int i;

    assert_true(tls_pair(cc, sc, suite, 0, &c, &s));
    if (groups != NULL)
        assert_true(SSL_set1_groups_list(c, groups));
    if (resume != NULL)
        assert_true(SSL_set_session(c, resume));
    assert_true(tls_pump(c, s));
    assert_int_equal(SSL_version(s), tls12 ? TLS1_2_VERSION : TLS1_3_VERSION);
    *reused = SSL_session_reused(s);
    /* both sides derived the same secrets: exporter, and data both ways incl. a key update */
    assert_true(SSL_export_keying_material(c, ek[0], 64, "EXPORTER-test", 13, NULL, 0, 0));
    assert_true(SSL_export_keying_material(s, ek[1], 64, "EXPORTER-test", 13, NULL, 0, 0));
    assert_memory_equal(ek[0], ek[1], 64);
    for (i = 0; i < 3; i++) {
        fill(msg, sizeof(msg));
        if (i == 1 && !tls12)
            assert_true(SSL_key_update(s, SSL_KEY_UPDATE_REQUESTED));
        assert_int_equal(SSL_write(s, msg, sizeof(msg)), (int)sizeof(msg));
        assert_int_equal(SSL_read(c, buf, sizeof(buf)), (int)sizeof(buf));
        assert_memory_equal(msg, buf, sizeof(msg));
        assert_int_equal(SSL_write(c, msg, sizeof(msg)), (int)sizeof(msg));
        assert_int_equal(SSL_read(s, buf, sizeof(buf)), (int)sizeof(buf));
        assert_memory_equal(msg, buf, sizeof(msg));
    }
    sess = SSL_get1_session(c);
    /* a clean close keeps the session resumable (SSL_free would mark it not resumable) */
    SSL_shutdown(c);
    SSL_shutdown(s);
    SSL_free(c);
    SSL_free(s);
    return sess;
}

static void test_tls_handshakes(void **state)
{
    static const char *const suites[] = {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384",
                                         "TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_CCM_SHA256"};
    SSL_CTX *sc = SSL_CTX_new_ex(g_env.lib, "?provider=tlsgate", TLS_server_method());
    SSL_CTX *cc = SSL_CTX_new_ex(g_env.plain, NULL, TLS_client_method());
    EVP_KDF *used;
    EVP_PKEY *key;
    X509 *crt;
    size_t i;

    (void)state;
    assert_non_null(sc);
    assert_non_null(cc);
    /* the server's libssl fetches ours */
    used = EVP_KDF_fetch(g_env.lib, "TLS13-KDF", "?provider=tlsgate");
    assert_non_null(used);
    assert_string_equal(OSSL_PROVIDER_get0_name(EVP_KDF_get0_provider(used)), "tlsgate");
    EVP_KDF_free(used);
    used = EVP_KDF_fetch(g_env.lib, "TLS1-PRF", "?provider=tlsgate");
    assert_non_null(used);
    assert_string_equal(OSSL_PROVIDER_get0_name(EVP_KDF_get0_provider(used)), "tlsgate");
    EVP_KDF_free(used);
    assert_true(tls_self_signed(g_env.lib, "provider=default", &key, &crt));
    assert_true(SSL_CTX_use_certificate(sc, crt));
    assert_true(SSL_CTX_use_PrivateKey(sc, key));
    assert_true(SSL_CTX_set_ciphersuites(sc,
                                         "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:"
                                         "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_CCM_SHA256"));
    assert_true(SSL_CTX_set1_groups_list(sc, "P-256:X25519"));
    SSL_CTX_set_session_cache_mode(cc, SSL_SESS_CACHE_CLIENT);
    for (i = 0; i < sizeof(suites) / sizeof(suites[0]); i++) {
        int reused;
        /* X25519 key share, P-256 preferred by the server: a HelloRetryRequest */
        SSL_SESSION *sess =
            one_handshake(cc, sc, suites[i], i % 2 ? "X25519:P-256" : NULL, NULL, &reused);

        assert_false(reused);
        assert_non_null(sess);
        /* resumption: PSK binders and the resumption master secret */
        SSL_SESSION_free(one_handshake(cc, sc, suites[i], NULL, sess, &reused));
        assert_true(reused);
        SSL_SESSION_free(sess);
    }
    /* TLS 1.2: the PRF with SHA-256 and SHA-384, with and without extended master secret */
    {
        static const char *const ciphers[] = {"ECDHE-ECDSA-AES128-GCM-SHA256",
                                              "ECDHE-ECDSA-AES256-GCM-SHA384",
                                              "ECDHE-ECDSA-CHACHA20-POLY1305"};

        for (i = 0; i < 2 * sizeof(ciphers) / sizeof(ciphers[0]); i++) {
            int reused;
            SSL_SESSION *sess;

            if (i % 2)
                SSL_CTX_set_options(cc, SSL_OP_NO_EXTENDED_MASTER_SECRET);
            else
                SSL_CTX_clear_options(cc, SSL_OP_NO_EXTENDED_MASTER_SECRET);
            sess = one_handshake(cc, sc, ciphers[i / 2], NULL, NULL, &reused);
            assert_false(reused);
            SSL_SESSION_free(one_handshake(cc, sc, ciphers[i / 2], NULL, sess, &reused));
            assert_true(reused);
            SSL_SESSION_free(sess);
        }
    }
    SSL_CTX_free(sc);
    SSL_CTX_free(cc);
    EVP_PKEY_free(key);
    X509_free(crt);
}

static int setup(void **state)
{
    (void)state;
    if (!prov_env_load(&g_env, 1))
        return -1;
    g_tg = EVP_KDF_fetch(g_env.lib, "TLS13-KDF", "provider=tlsgate");
    g_df = EVP_KDF_fetch(g_env.lib, "TLS13-KDF", "provider=default");
    g_prf_tg = EVP_KDF_fetch(g_env.lib, "TLS1-PRF", "provider=tlsgate");
    g_prf_df = EVP_KDF_fetch(g_env.lib, "TLS1-PRF", "provider=default");
    if (g_tg == NULL || g_df == NULL || g_prf_tg == NULL || g_prf_df == NULL) {
        ERR_print_errors_fp(stderr);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    EVP_KDF_free(g_tg);
    EVP_KDF_free(g_df);
    EVP_KDF_free(g_prf_tg);
    EVP_KDF_free(g_prf_df);
    prov_env_free(&g_env);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_expand),
        cmocka_unit_test(test_random_extract),
        cmocka_unit_test(test_cache_keys),
        cmocka_unit_test(test_cache_threads),
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_digests),
        cmocka_unit_test(test_params_lifecycle),
        cmocka_unit_test(test_prf_random),
        cmocka_unit_test(test_prf_edges),
        cmocka_unit_test(test_tls_handshakes),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
