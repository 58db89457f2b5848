/*
 * prov_gcm: tlsgate's AES-128/256-GCM (prov/cipher_gcm.c, intel-ipsec-mb) against the default
 * provider's, differentially, on seeded random inputs (the seed is printed; GCM_SEED=N
 * repeats a run):
 * - the streaming interface over record sizes 0..70,000 bytes, IV lengths 1..60, AAD 0..300
 *   bytes given in one or several pieces, data in one or several updates, in place and not:
 *   same ciphertext and tag; each side decrypts the other's; a flipped tag, ciphertext or
 *   AAD byte fails the final on both; misuse (final twice, AAD after data, no tag when
 *   decrypting, a tag when encrypting) fails on both;
 * - the TLS 1.2 path (TLS1 AAD control, fixed and explicit nonces, EVP_Cipher in place):
 *   same record bytes and return values, each side reads the other's records, a bad tag,
 *   a short record or a bad AAD length fails on both;
 * - more live contexts than the per-thread cache of expanded keys, and a copied context
 *   that outlives its original;
 * - TLS 1.3 (TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384) and TLS 1.2
 *   (ECDHE-ECDSA-AES128/256-GCM) handshakes between a server preferring tlsgate and a
 *   client with only the default provider, records of 1..16,384 bytes both ways, a key
 *   update, with the provider's gcm_records counter showing the cipher was ours.
 * With TLSGATE_GCM=off (the second CTest run), the provider must offer no cipher and the
 * handshakes must still work (OpenSSL's AES-GCM).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "prov_env.h"
#include "tls_pair.h"

static struct prov_env g_env; /* lib: tlsgate + default; plain: default */
static int g_off;             /* TLSGATE_GCM=off */
static int g_avail;           /* the provider offers AES-GCM here */
static uint64_t g_state;

static uint64_t rnd(void)
{
    g_state ^= g_state << 13;
    g_state ^= g_state >> 7;
    g_state ^= g_state << 17;
    return g_state;
}

static void fill(unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)rnd();
}

static uint64_t counter(const char *name)
{
    uint64_t v = 0;
    OSSL_PARAM ps[2] = {OSSL_PARAM_construct_uint64(name, &v), OSSL_PARAM_END};
    assert_true(OSSL_PROVIDER_get_params(g_env.tg, ps));
    return v;
}

static int setup(void **state)
{
    (void)state;
    const char *seed = getenv("GCM_SEED");
    g_state = seed ? strtoull(seed, NULL, 10) : (uint64_t)time(NULL);
    if (g_state == 0)
        g_state = 1;
    printf("prov_gcm: seed %llu (GCM_SEED=N to repeat)\n", (unsigned long long)g_state);
    const char *off = getenv("TLSGATE_GCM");
    g_off = off && strcmp(off, "off") == 0;
    if (!prov_env_load(&g_env, 1))
        return -1;
    ERR_set_mark();
    EVP_CIPHER *c = EVP_CIPHER_fetch(g_env.lib, "AES-128-GCM", "provider=tlsgate");
    ERR_pop_to_mark();
    g_avail = c != NULL;
    EVP_CIPHER_free(c);
    printf("prov_gcm: tlsgate AES-GCM %s\n", g_avail ? "available" : "not offered here");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    prov_env_free(&g_env);
    return 0;
}

static EVP_CIPHER *fetch_tg(const char *name)
{
    ERR_set_mark();
    EVP_CIPHER *c = EVP_CIPHER_fetch(g_env.lib, name, "provider=tlsgate");
    ERR_pop_to_mark();
    return c;
}

static void test_available(void **state)
{
    (void)state;
    EVP_CIPHER *c = fetch_tg("AES-256-GCM");
    if (g_off) {
        assert_null(c); /* TLSGATE_GCM=off: OpenSSL's code, no cipher of ours */
        return;
    }
    if (c == NULL)
        skip(); /* no intel-ipsec-mb or no VAES here: nothing of ours to compare */
    assert_int_equal(EVP_CIPHER_get_mode(c), EVP_CIPH_GCM_MODE);
    assert_int_equal(EVP_CIPHER_get_key_length(c), 32);
    assert_int_equal(EVP_CIPHER_get_iv_length(c), 12);
    assert_int_equal(EVP_CIPHER_get_block_size(c), 1);
    assert_true(EVP_CIPHER_get_flags(c) & EVP_CIPH_FLAG_AEAD_CIPHER);
    EVP_CIPHER_free(c);
}

/* One streaming run: returns 1 (and out/tag) or 0 when some step failed. */
struct run {
    const unsigned char *key, *iv, *aad, *in;
    size_t ivlen, aadlen, len;
    unsigned char *out, *tag; /* tag: 16 bytes, input when decrypting */
    int enc, inplace;
    unsigned aad_pieces, data_pieces;
    size_t cuts[8]; /* random cut points (fractions of 1024) */
};

static int stream(EVP_CIPHER *ciph, const struct run *r)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int ok = 0, n;
    unsigned char *buf = r->out;
    if (r->inplace)
        memcpy(buf, r->in, r->len);
    const unsigned char *src = r->inplace ? buf : r->in;
    if (!EVP_CipherInit_ex2(ctx, ciph, NULL, NULL, r->enc, NULL))
        goto out;
    OSSL_PARAM ps[2] = {
        OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_AEAD_IVLEN, (size_t *)&r->ivlen),
        OSSL_PARAM_END};
    if (!EVP_CIPHER_CTX_set_params(ctx, ps))
        goto out;
    if (!EVP_CipherInit_ex2(ctx, NULL, r->key, r->iv, r->enc, NULL))
        goto out;
    if (!r->enc && !EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, 16, r->tag))
        goto out;
    size_t done = 0;
    for (unsigned i = 0; i < r->aad_pieces; i++) {
        size_t end = i + 1 == r->aad_pieces ? r->aadlen : r->aadlen * r->cuts[i] / 1024;
        if (end < done)
            end = done;
        if (!EVP_CipherUpdate(ctx, NULL, &n, r->aad + done, (int)(end - done)))
            goto out;
        done = end;
    }
    done = 0;
    for (unsigned i = 0; i < r->data_pieces; i++) {
        size_t end = i + 1 == r->data_pieces ? r->len : r->len * r->cuts[4 + i] / 1024;
        if (end < done)
            end = done;
        if (!EVP_CipherUpdate(ctx, buf + done, &n, src + done, (int)(end - done)))
            goto out;
        if ((size_t)n != end - done)
            goto out;
        done = end;
    }
    if (!EVP_CipherFinal_ex(ctx, buf + done, &n) || n != 0)
        goto out;
    if (r->enc && !EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, r->tag))
        goto out;
    ok = 1;
out:
    EVP_CIPHER_CTX_free(ctx);
    ERR_clear_error();
    return ok;
}

static void diff_stream(const char *name, size_t keylen)
{
    EVP_CIPHER *tg = fetch_tg(name);
    if (tg == NULL)
        skip(); /* nothing of ours to compare (and nothing to free) */
    EVP_CIPHER *df = EVP_CIPHER_fetch(g_env.plain, name, NULL);
    assert_non_null(df);
    static const size_t lens[] = {0,   1,   15,   16,   17,    31,    33,    64,   255,
                                  256, 257, 1000, 4096, 16383, 16384, 16401, 70000};
    static const size_t ivlens[] = {12, 12, 12, 1, 8, 16, 60};
    static const size_t aadlens[] = {0, 5, 13, 16, 17, 300};
    unsigned char key[32], iv[64], aad[300], tag[2][16], tagx[16];
    unsigned char *in = malloc(70000), *o1 = malloc(70000), *o2 = malloc(70000),
                  *o3 = malloc(70000);
    for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
        for (int rep = 0; rep < 6; rep++) {
            struct run r = {.key = key, .iv = iv, .aad = aad, .in = in, .enc = 1};
            fill(key, sizeof(key));
            r.ivlen = ivlens[rnd() % 7];
            fill(iv, r.ivlen);
            r.aadlen = aadlens[rnd() % 6];
            fill(aad, r.aadlen);
            r.len = lens[li];
            fill(in, r.len);
            r.inplace = rep & 1;
            r.aad_pieces = 1 + (unsigned)(rnd() % 3);
            r.data_pieces = 1 + (unsigned)(rnd() % 4);
            for (int k = 0; k < 8; k++)
                r.cuts[k] = rnd() % 1025;
            for (int k = 1; k < 4; k++) /* increasing cut points */
                if (r.cuts[k] < r.cuts[k - 1])
                    r.cuts[k] = r.cuts[k - 1];
            for (int k = 5; k < 8; k++)
                if (r.cuts[k] < r.cuts[k - 1])
                    r.cuts[k] = r.cuts[k - 1];
            (void)keylen;
            r.out = o1, r.tag = tag[0];
            int a = stream(tg, &r);
            r.out = o2, r.tag = tag[1];
            int b = stream(df, &r);
            if (a != 1 || b != 1 || memcmp(o1, o2, r.len) != 0 || memcmp(tag[0], tag[1], 16))
                fail_msg("%s len %zu ivlen %zu aad %zu pieces %u/%u inplace %d: tlsgate %d "
                         "default %d, bytes %s, tag %s",
                         name, r.len, r.ivlen, r.aadlen, r.aad_pieces, r.data_pieces, r.inplace, a,
                         b, memcmp(o1, o2, r.len) ? "differ" : "same",
                         memcmp(tag[0], tag[1], 16) ? "differs" : "same");
            /* each decrypts the other's */
            struct run d = r;
            d.enc = 0;
            d.in = o2;
            d.out = o3;
            d.tag = tag[1];
            assert_int_equal(stream(tg, &d), 1);
            assert_memory_equal(o3, in, r.len);
            d.in = o1;
            d.tag = tag[0];
            assert_int_equal(stream(df, &d), 1);
            assert_memory_equal(o3, in, r.len);
            /* tampering: tag, ciphertext, AAD: both refuse */
            int what = (int)(rnd() % 3);
            memcpy(tagx, tag[0], 16);
            if (what == 0 || (what == 1 && r.len == 0) || (what == 2 && r.aadlen == 0))
                tagx[rnd() % 16] ^= (unsigned char)(1u << (rnd() % 8));
            else if (what == 1)
                o1[rnd() % r.len] ^= 0x01;
            else
                aad[rnd() % r.aadlen] ^= 0x80;
            d.in = o1;
            d.tag = tagx;
            assert_int_equal(stream(tg, &d), 0);
            assert_int_equal(stream(df, &d), 0);
        }
    }
    free(in), free(o1), free(o2), free(o3);
    EVP_CIPHER_free(tg);
    EVP_CIPHER_free(df);
}

/* A test's cipher: its state (the CMUnitTest's initial state, main()). */
struct gcm_alg {
    const char *name;
    size_t keylen;
};
static const struct gcm_alg aes128 = {"AES-128-GCM", 16}, aes256 = {"AES-256-GCM", 32};

static void test_stream(void **state)
{
    const struct gcm_alg *a = *state;

    diff_stream(a->name, a->keylen);
}

/* More live contexts than the provider's per-thread cache of expanded keys (64): records
 * interleaved over 200 keys (each use may find its expansion taken by another key), and a
 * copy that outlives its original (the copy shares the original's expansion, which the
 * original's free wipes). */
static void test_many_contexts(void **state)
{
    (void)state;
    enum { N = 200 };
    EVP_CIPHER *tg = fetch_tg("AES-256-GCM");
    if (tg == NULL)
        skip(); /* nothing of ours to compare (and nothing to free) */
    EVP_CIPHER *df = EVP_CIPHER_fetch(g_env.plain, "AES-256-GCM", NULL);
    EVP_CIPHER_CTX *a[N], *b[N];
    unsigned char key[32], iv[12], msg[300], o1[300], o2[300], t1[16], t2[16];
    int n;
    for (int i = 0; i < N; i++) {
        fill(key, sizeof(key));
        a[i] = EVP_CIPHER_CTX_new();
        b[i] = EVP_CIPHER_CTX_new();
        assert_true(EVP_EncryptInit_ex2(a[i], tg, key, NULL, NULL));
        assert_true(EVP_EncryptInit_ex2(b[i], df, key, NULL, NULL));
    }
    for (int round = 0; round < 3; round++) {
        for (int j = 0; j < N; j++) {
            int i = (int)((j * 7 + round * 13) % N);
            size_t len = rnd() % sizeof(msg);
            fill(iv, sizeof(iv));
            fill(msg, len);
            assert_true(EVP_EncryptInit_ex2(a[i], NULL, NULL, iv, NULL));
            assert_true(EVP_EncryptInit_ex2(b[i], NULL, NULL, iv, NULL));
            assert_true(EVP_EncryptUpdate(a[i], o1, &n, msg, (int)len));
            assert_true(EVP_EncryptUpdate(b[i], o2, &n, msg, (int)len));
            assert_true(EVP_EncryptFinal_ex(a[i], o1 + len, &n));
            assert_true(EVP_EncryptFinal_ex(b[i], o2 + len, &n));
            assert_true(EVP_CIPHER_CTX_ctrl(a[i], EVP_CTRL_AEAD_GET_TAG, 16, t1));
            assert_true(EVP_CIPHER_CTX_ctrl(b[i], EVP_CTRL_AEAD_GET_TAG, 16, t2));
            if (memcmp(o1, o2, len) != 0 || memcmp(t1, t2, 16) != 0)
                fail_msg("context %d round %d (%zu bytes): tlsgate and default differ", i, round,
                         len);
        }
    }
    /* a copy outlives its original */
    EVP_CIPHER_CTX *cp = EVP_CIPHER_CTX_new();
    assert_true(EVP_CIPHER_CTX_copy(cp, a[0]));
    EVP_CIPHER_CTX_free(a[0]);
    a[0] = cp;
    fill(iv, sizeof(iv));
    fill(msg, 100);
    assert_true(EVP_EncryptInit_ex2(a[0], NULL, NULL, iv, NULL));
    assert_true(EVP_EncryptInit_ex2(b[0], NULL, NULL, iv, NULL));
    assert_true(EVP_EncryptUpdate(a[0], o1, &n, msg, 100) && EVP_EncryptFinal_ex(a[0], o1, &n));
    assert_true(EVP_EncryptUpdate(b[0], o2, &n, msg, 100) && EVP_EncryptFinal_ex(b[0], o2, &n));
    assert_memory_equal(o1, o2, 100);
    for (int i = 0; i < N; i++) {
        EVP_CIPHER_CTX_free(a[i]);
        EVP_CIPHER_CTX_free(b[i]);
    }
    EVP_CIPHER_free(tg);
    EVP_CIPHER_free(df);
}

/* Misuse gives the same verdict on both sides. */
static int misuse(EVP_CIPHER *c, int what)
{
    unsigned char key[32] = {1}, iv[12] = {2}, buf[64] = {3}, tag[16] = {4};
    int n, ok = 1;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int enc = what != 2;
    ok &= EVP_CipherInit_ex2(ctx, c, key, iv, enc, NULL);
    switch (what) {
    case 0: /* final twice (the IV is used once) */
        ok &= EVP_CipherUpdate(ctx, buf, &n, buf, 32);
        ok &= EVP_CipherFinal_ex(ctx, buf, &n);
        ok = ok && EVP_CipherFinal_ex(ctx, buf, &n);
        break;
    case 1: /* AAD after data */
        ok &= EVP_CipherUpdate(ctx, buf, &n, buf, 32);
        ok = ok && EVP_CipherUpdate(ctx, NULL, &n, buf, 5);
        break;
    case 2: /* decrypt without a tag */
        ok &= EVP_CipherUpdate(ctx, buf, &n, buf, 32);
        ok = ok && EVP_CipherFinal_ex(ctx, buf, &n);
        break;
    case 3: /* a tag given when encrypting */
        ok = ok && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, 16, tag);
        break;
    case 4: /* reading the tag before the final */
        ok &= EVP_CipherUpdate(ctx, buf, &n, buf, 32);
        ok = ok && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, tag);
        break;
    case 5: /* data after the final, without a new IV */
        ok &= EVP_CipherUpdate(ctx, buf, &n, buf, 32);
        ok &= EVP_CipherFinal_ex(ctx, buf, &n);
        ok = ok && EVP_CipherUpdate(ctx, buf, &n, buf, 32);
        break;
    case 6: /* a new IV after the final: works again */
        ok &= EVP_CipherUpdate(ctx, buf, &n, buf, 32);
        ok &= EVP_CipherFinal_ex(ctx, buf, &n);
        ok = ok && EVP_CipherInit_ex2(ctx, NULL, NULL, iv, 1, NULL);
        ok = ok && EVP_CipherUpdate(ctx, buf, &n, buf, 32) && EVP_CipherFinal_ex(ctx, buf, &n);
        break;
    case 7: /* the tag's length: 17 bytes refused */
        ok &= EVP_CipherUpdate(ctx, buf, &n, buf, 32);
        ok &= EVP_CipherFinal_ex(ctx, buf, &n);
        ok = ok && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 17, buf);
        break;
    }
    EVP_CIPHER_CTX_free(ctx);
    ERR_clear_error();
    return ok;
}

static void test_misuse(void **state)
{
    (void)state;
    EVP_CIPHER *tg = fetch_tg("AES-256-GCM");
    if (tg == NULL)
        skip(); /* nothing of ours to compare (and nothing to free) */
    EVP_CIPHER *df = EVP_CIPHER_fetch(g_env.plain, "AES-256-GCM", NULL);
    for (int w = 0; w < 8; w++) {
        int a = misuse(tg, w), b = misuse(df, w);
        if (a != b)
            fail_msg("misuse case %d: tlsgate %d, default %d", w, a, b);
    }
    EVP_CIPHER_free(tg);
    EVP_CIPHER_free(df);
}

/* TLS 1.2 records through EVP_Cipher with the TLS1 AAD control (what libssl does). */
static int tls12_record(EVP_CIPHER_CTX *ctx, int enc, unsigned char *rec, size_t reclen,
                        uint64_t seq, int *outlen)
{
    unsigned char aad[13];
    for (int i = 0; i < 8; i++)
        aad[i] = (unsigned char)(seq >> (56 - 8 * i));
    aad[8] = 23, aad[9] = 3, aad[10] = 3;
    /* libssl's length field: explicit nonce + payload when sealing, the whole record when
     * opening (the cipher subtracts what is not payload) */
    size_t l = enc && reclen >= 16 ? reclen - 16 : reclen;
    aad[11] = (unsigned char)(l >> 8), aad[12] = (unsigned char)l;
    int pad = EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_TLS1_AAD, 13, aad);
    if (pad <= 0) {
        ERR_clear_error();
        return -2;
    }
    if (pad != 16)
        return -3;
    *outlen = EVP_Cipher(ctx, rec, rec, (unsigned int)reclen);
    ERR_clear_error();
    return 1;
}

static void diff_tls12(const char *name, int klen)
{
    EVP_CIPHER *tg = fetch_tg(name);
    if (tg == NULL)
        skip(); /* nothing of ours to compare (and nothing to free) */
    EVP_CIPHER *df = EVP_CIPHER_fetch(g_env.plain, name, NULL);
    unsigned char key[32], iv[12], *a = malloc(20000), *b = malloc(20000), *p = malloc(20000);
    fill(key, sizeof(key));
    fill(iv, sizeof(iv));
    EVP_CIPHER_CTX *et = EVP_CIPHER_CTX_new(), *ed = EVP_CIPHER_CTX_new(),
                   *dt = EVP_CIPHER_CTX_new(), *dd = EVP_CIPHER_CTX_new();
    assert_true(EVP_CipherInit_ex(et, tg, NULL, key, NULL, 1));
    assert_true(EVP_CipherInit_ex(ed, df, NULL, key, NULL, 1));
    assert_true(EVP_CipherInit_ex(dt, tg, NULL, key, NULL, 0));
    assert_true(EVP_CipherInit_ex(dd, df, NULL, key, NULL, 0));
    /* the whole IV (length -1): both encrypters count from the same invocation field */
    assert_true(EVP_CIPHER_CTX_ctrl(et, EVP_CTRL_GCM_SET_IV_FIXED, -1, iv));
    assert_true(EVP_CIPHER_CTX_ctrl(ed, EVP_CTRL_GCM_SET_IV_FIXED, -1, iv));
    assert_true(EVP_CIPHER_CTX_ctrl(dt, EVP_CTRL_GCM_SET_IV_FIXED, 4, iv));
    assert_true(EVP_CIPHER_CTX_ctrl(dd, EVP_CTRL_GCM_SET_IV_FIXED, 4, iv));
    static const size_t plens[] = {0, 1, 16, 100, 1000, 4095, 16384, 0, 17, 16383};
    for (uint64_t seq = 0; seq < 40; seq++) {
        size_t plen = seq < 10 ? plens[seq] : (size_t)(rnd() % 16385);
        size_t reclen = 8 + plen + 16;
        fill(a + 8, plen);
        memcpy(p, a + 8, plen);
        memcpy(b, a, reclen);
        int la = 0, lb = 0;
        assert_int_equal(tls12_record(et, 1, a, reclen, seq, &la), 1);
        assert_int_equal(tls12_record(ed, 1, b, reclen, seq, &lb), 1);
        if (la != lb || la != (int)reclen || memcmp(a, b, reclen) != 0)
            fail_msg("%s TLS 1.2 record %llu (%zu bytes): tlsgate %d, default %d, bytes %s", name,
                     (unsigned long long)seq, plen, la, lb,
                     memcmp(a, b, reclen) ? "differ" : "same");
        /* each reads the other's record */
        /* EVP_Cipher answers the record's length (libssl strips nonce and tag) */
        assert_int_equal(tls12_record(dt, 0, b, reclen, seq, &la), 1);
        assert_int_equal(la, (int)reclen);
        assert_memory_equal(b + 8, p, plen);
        assert_int_equal(tls12_record(dd, 0, a, reclen, seq, &lb), 1);
        assert_int_equal(lb, (int)reclen);
        assert_memory_equal(a + 8, p, plen);
    }
    /* a bad tag; a record shorter than nonce + tag; an AAD whose length cannot hold them */
    fill(a + 8, 100);
    memcpy(b, a, 124);
    int la = 0, lb = 0;
    tls12_record(et, 1, a, 124, 99, &la);
    memcpy(b, a, 124);
    b[123] ^= 1;
    memcpy(p, b, 124);
    assert_int_equal(tls12_record(dt, 0, b, 124, 99, &la), 1);
    assert_int_equal(tls12_record(dd, 0, p, 124, 99, &lb), 1);
    assert_true(la <= 0 && lb <= 0);
    assert_int_equal(tls12_record(dt, 0, a, 20, 100, &la), tls12_record(dd, 0, a, 20, 100, &lb));
    assert_int_equal(tls12_record(dt, 0, a, 10, 101, &la), tls12_record(dd, 0, a, 10, 101, &lb));
    assert_int_equal(tls12_record(et, 1, a, 5, 101, &la), tls12_record(ed, 1, a, 5, 101, &lb));
    (void)klen;
    EVP_CIPHER_CTX_free(et), EVP_CIPHER_CTX_free(ed), EVP_CIPHER_CTX_free(dt),
        EVP_CIPHER_CTX_free(dd);
    free(a), free(b), free(p);
    EVP_CIPHER_free(tg);
    EVP_CIPHER_free(df);
}

static void test_tls12(void **state)
{
    const struct gcm_alg *a = *state;

    diff_tls12(a->name, a->keylen);
}

/* ---- handshakes ---- */

static void xfer(SSL *from, SSL *to, size_t n)
{
    static unsigned char msg[16384], buf[16384];
    fill(msg, n);
    assert_int_equal(SSL_write(from, msg, (int)n), (int)n);
    size_t got = 0;
    while (got < n) {
        int r = SSL_read(to, buf + got, (int)(n - got));
        assert_true(r > 0);
        got += (size_t)r;
    }
    assert_memory_equal(msg, buf, n);
}

static void test_handshakes(void **state)
{
    (void)state;
    EVP_PKEY *key;
    X509 *crt;
    assert_true(tls_self_signed(g_env.plain, NULL, &key, &crt));
    SSL_CTX *sc = SSL_CTX_new_ex(g_env.lib, "?provider=tlsgate", TLS_server_method());
    SSL_CTX *cc = SSL_CTX_new_ex(g_env.plain, NULL, TLS_client_method());
    assert_non_null(sc);
    assert_non_null(cc);
    assert_true(SSL_CTX_use_certificate(sc, crt));
    assert_true(SSL_CTX_use_PrivateKey(sc, key));
    const char *suites[] = {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384",
                            "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384"};
    static const size_t sizes[] = {1, 2, 15, 16, 17, 100, 1000, 4096, 16383, 16384};
    for (int i = 0; i < 4; i++) {
        int tls12 = i >= 2;
        uint64_t before = counter("gcm_records");
        SSL *c, *s;
        assert_true(tls_pair(cc, sc, suites[i], 40000, &c, &s));
        assert_true(tls_pump(c, s));
        assert_string_equal(SSL_get_cipher_name(s), tls12 ? suites[i] : suites[i]);
        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
            if (k == 5 && !tls12)
                assert_true(SSL_key_update(s, SSL_KEY_UPDATE_REQUESTED));
            xfer(s, c, sizes[k]);
            xfer(c, s, sizes[k]);
        }
        uint64_t after = counter("gcm_records");
        if (!g_avail)
            assert_true(after == before); /* OpenSSL's cipher did it */
        else
            assert_true(after >= before + 2 * 10); /* both directions' records were ours */
        SSL_shutdown(c);
        SSL_shutdown(s);
        SSL_free(c);
        SSL_free(s);
    }
    SSL_CTX_free(sc);
    SSL_CTX_free(cc);
    EVP_PKEY_free(key);
    X509_free(crt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_available),
        {"test_stream_128", test_stream, NULL, NULL, (void *)&aes128},
        {"test_stream_256", test_stream, NULL, NULL, (void *)&aes256},
        cmocka_unit_test(test_misuse),
        cmocka_unit_test(test_many_contexts),
        {"test_tls12_128", test_tls12, NULL, NULL, (void *)&aes128},
        {"test_tls12_256", test_tls12, NULL, NULL, (void *)&aes256},
        cmocka_unit_test(test_handshakes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
