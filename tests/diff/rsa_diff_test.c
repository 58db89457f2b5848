/*
 * Differential test of mb8_rsa_private_crt (mb8/rsa.h) against OpenSSL's raw RSA
 * (EVP_PKEY_decrypt with RSA_NO_PADDING): 8 different keys per size, 8 different inputs
 * per batch, edge values, mixed batches (unused lanes, in >= n, a key of another size,
 * one key in all lanes), blinding, a corrupted cached key (fault check), key import
 * rejections, a constant-time check (secrets poisoned for valgrind memcheck: run the test
 * under `valgrind --error-exitcode=1` to check it; natively it is a plain batch), and a
 * timing line.
 *
 * Environment: MB8_RSA_SEED (input PRNG seed, printed), MB8_RSA_ITERS (batches per
 * size: 2048 gets that many, 3072 a third, 4096 a sixth; default 12), MB8_RSA_SIZES ("2048",
 * "2048,3072", ...; default all three; 2048 and 3072 are always loaded), MB8_RSA_GENKEYS=1
 * (generate fresh keys with OpenSSL instead of reading the 8 fixed keys per size in
 * tests/diff/rsa_keys/rsaBITS.pem, made by `openssl genpkey`; generation of 4096-bit keys takes
 * seconds). On a mismatch the seed, size, lane and the key's modulus are printed.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "memcheck.h"

#include "bn52.h" /* internal layout: to corrupt a cached dp, and to poison secrets */
#include "mb8/rsa.h"

#define NKEYS 8
#define NSIZES 3
#define MAXB 512 /* bytes of a 4096-bit number */

static const unsigned SIZES[NSIZES] = {2048, 3072, 4096};

struct tkey {
    EVP_PKEY *pk;
    EVP_PKEY_CTX *dctx;
    BIGNUM *n, *e, *d;
    mb8_rsa_key_t *mk;
    uint8_t nb[MAXB];
    uint8_t eb[MAXB];
    size_t elen;
    uint8_t p[MAXB / 2], q[MAXB / 2], dp[MAXB / 2], dq[MAXB / 2], qi[MAXB / 2];
};

static struct tkey keys[NSIZES][NKEYS];
static int have_size[NSIZES];
static uint64_t seed, rng;
static unsigned iters = 12;
static void *scratch;

static uint64_t next64(void)
{
    uint64_t z = (rng += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static void rand_bytes(uint8_t *b, size_t len)
{
    for (size_t i = 0; i < len; i++)
        b[i] = (uint8_t)next64();
}

/* A uniform-ish random value < n (bits/8 bytes): random bytes reduced mod n. */
static void rand_below(uint8_t *out, const struct tkey *k, unsigned bits)
{
    uint8_t buf[MAXB];
    rand_bytes(buf, bits / 8);
    BIGNUM *x = BN_bin2bn(buf, (int)(bits / 8), NULL);
    BN_CTX *ctx = BN_CTX_new();
    assert_non_null(x);
    assert_int_equal(BN_mod(x, x, k->n, ctx), 1);
    assert_int_equal(BN_bn2binpad(x, out, (int)(bits / 8)), (int)(bits / 8));
    BN_free(x);
    BN_CTX_free(ctx);
}

static void get_param(EVP_PKEY *pk, const char *name, uint8_t *out, size_t len, BIGNUM **keep)
{
    BIGNUM *b = NULL;
    assert_int_equal(EVP_PKEY_get_bn_param(pk, name, &b), 1);
    assert_int_equal(BN_bn2binpad(b, out, (int)len), (int)len);
    if (keep)
        *keep = b;
    else
        BN_free(b);
}

struct gen_job {
    unsigned si, first, step;
};

static void *gen_thread(void *arg)
{
    struct gen_job *j = arg;
    for (unsigned i = j->first; i < NKEYS; i += j->step) {
        EVP_PKEY *pk = NULL;
        do { /* the mb8 key format wants p and q of exactly bits/2 bits (OpenSSL's do) */
            EVP_PKEY_free(pk);
            pk = EVP_RSA_gen(SIZES[j->si]);
        } while (!pk);
        keys[j->si][i].pk = pk;
    }
    return NULL;
}

/* Fills k from its OpenSSL key k->pk (bits bits): the parameters, the mb8 key, a raw
 * decryption context. */
static void load_tkey(struct tkey *k, unsigned bits)
{
    size_t hb = bits / 16;
    get_param(k->pk, OSSL_PKEY_PARAM_RSA_N, k->nb, bits / 8, &k->n);
    assert_int_equal(EVP_PKEY_get_bn_param(k->pk, OSSL_PKEY_PARAM_RSA_E, &k->e), 1);
    assert_int_equal(EVP_PKEY_get_bn_param(k->pk, OSSL_PKEY_PARAM_RSA_D, &k->d), 1);
    k->elen = (size_t)BN_num_bytes(k->e);
    BN_bn2bin(k->e, k->eb);
    get_param(k->pk, OSSL_PKEY_PARAM_RSA_FACTOR1, k->p, hb, NULL);
    get_param(k->pk, OSSL_PKEY_PARAM_RSA_FACTOR2, k->q, hb, NULL);
    get_param(k->pk, OSSL_PKEY_PARAM_RSA_EXPONENT1, k->dp, hb, NULL);
    get_param(k->pk, OSSL_PKEY_PARAM_RSA_EXPONENT2, k->dq, hb, NULL);
    get_param(k->pk, OSSL_PKEY_PARAM_RSA_COEFFICIENT1, k->qi, hb, NULL);
    k->mk = aligned_alloc(64, (mb8_rsa_key_size(bits) + 63) / 64 * 64);
    assert_non_null(k->mk);
    assert_int_equal(
        mb8_rsa_key_init(k->mk, bits, k->nb, k->eb, k->elen, k->p, k->q, k->dp, k->dq, k->qi), 0);
    assert_int_equal(mb8_rsa_key_bits(k->mk), bits);
    k->dctx = EVP_PKEY_CTX_new(k->pk, NULL);
    assert_non_null(k->dctx);
    assert_int_equal(EVP_PKEY_decrypt_init(k->dctx), 1);
    assert_int_equal(EVP_PKEY_CTX_set_rsa_padding(k->dctx, RSA_NO_PADDING), 1);
}

/* Frees what load_tkey made, and the OpenSSL key. */
static void free_tkey(struct tkey *k)
{
    mb8_rsa_key_dispose(k->mk);
    free(k->mk);
    EVP_PKEY_CTX_free(k->dctx);
    EVP_PKEY_free(k->pk);
    BN_free(k->n);
    BN_free(k->e);
    BN_free(k->d);
}

static void setup_key(unsigned si, unsigned i)
{
    load_tkey(&keys[si][i], SIZES[si]);
}

static int group_setup(void **state)
{
    const char *s = getenv("MB8_RSA_SEED");
    seed = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL);
    rng = seed;
    printf("rsa_diff: seed %llu (MB8_RSA_SEED to repeat)\n", (unsigned long long)seed);
    if ((s = getenv("MB8_RSA_ITERS")))
        iters = (unsigned)strtoul(s, NULL, 0);
    const char *sizes = getenv("MB8_RSA_SIZES");
    for (unsigned si = 0; si < NSIZES; si++) {
        char name[8];
        snprintf(name, sizeof name, "%u", SIZES[si]);
        have_size[si] = !sizes || strstr(sizes, name);
    }
    have_size[0] = have_size[1] = 1; /* 2048, and 3072 for the BAD_KEY cases, always */
    for (unsigned si = 0; si < NSIZES; si++) {
        if (!have_size[si])
            continue;
        if (!getenv("MB8_RSA_GENKEYS") || strcmp(getenv("MB8_RSA_GENKEYS"), "1") != 0) {
            char path[512];
            snprintf(path, sizeof path, "%s/rsa%u.pem", RSA_KEYS_DIR, SIZES[si]);
            FILE *fp = fopen(path, "r");
            if (!fp) {
                fprintf(stderr, "rsa_diff: cannot open %s\n", path);
                return -1;
            }
            for (unsigned i = 0; i < NKEYS; i++)
                if (!(keys[si][i].pk = PEM_read_PrivateKey(fp, NULL, NULL, NULL))) {
                    fprintf(stderr, "rsa_diff: %s: key %u unreadable\n", path, i);
                    fclose(fp);
                    return -1;
                }
            fclose(fp);
            for (unsigned i = 0; i < NKEYS; i++)
                setup_key(si, i);
            continue;
        }
        pthread_t th[2];
        struct gen_job jobs[2] = {{si, 0, 2}, {si, 1, 2}};
        for (int t = 0; t < 2; t++)
            if (pthread_create(&th[t], NULL, gen_thread, &jobs[t]) != 0)
                return -1;
        for (int t = 0; t < 2; t++)
            pthread_join(th[t], NULL);
        for (unsigned i = 0; i < NKEYS; i++)
            setup_key(si, i);
    }
    scratch = aligned_alloc(64, mb8_rsa_scratch_size(4096));
    return scratch ? 0 : -1;
}

static int group_teardown(void **state)
{
    for (unsigned si = 0; si < NSIZES; si++)
        for (unsigned i = 0; i < NKEYS; i++) {
            if (keys[si][i].pk)
                free_tkey(&keys[si][i]);
        }
    free(scratch);
    return 0;
}

/* OpenSSL's raw private operation. */
static void ref_op(const struct tkey *k, unsigned bits, const uint8_t *in, uint8_t *out)
{
    size_t outlen = bits / 8;
    if (EVP_PKEY_decrypt(k->dctx, out, &outlen, in, bits / 8) != 1 || outlen != bits / 8) {
        ERR_print_errors_fp(stderr);
        fail_msg("OpenSSL raw RSA failed");
    }
}

static void dump_fail(unsigned bits, unsigned lane, const struct tkey *k, const char *what)
{
    char *hex = BN_bn2hex(k->n);
    print_error("rsa_diff: MISMATCH seed %llu size %u lane %u: %s\n  n = %s\n",
                (unsigned long long)seed, bits, lane, what, hex);
    OPENSSL_free(hex);
}

struct batch {
    uint8_t in[MB8_LANES][MAXB], out[MB8_LANES][MAXB], exp[MB8_LANES][MAXB];
    uint8_t bl[MB8_LANES][MAXB], ub[MB8_LANES][MAXB];
    const uint8_t *inp[MB8_LANES];
    uint8_t *outp[MB8_LANES];
    const mb8_rsa_key_t *kp[MB8_LANES];
    const struct tkey *tk[MB8_LANES];
    const uint8_t *blp[MB8_LANES], *ubp[MB8_LANES];
};

static void batch_init(struct batch *b)
{
    memset(b, 0, sizeof *b);
    for (unsigned i = 0; i < MB8_LANES; i++) {
        b->outp[i] = b->out[i];
        memset(b->out[i], 0xAA, MAXB);
    }
}

/* Blinding values for lane i: r random < n, blind = r^e mod n, unblind = r^-1 mod n. */
static void make_blind(struct batch *b, unsigned i, unsigned bits)
{
    const struct tkey *k = b->tk[i];
    BN_CTX *ctx = BN_CTX_new();
    BIGNUM *r = BN_new(), *x = BN_new();
    assert_true(ctx && r && x);
    do
        assert_int_equal(BN_rand_range(r, k->n), 1);
    while (!BN_mod_inverse(x, r, k->n, ctx));
    assert_int_equal(BN_bn2binpad(x, b->ub[i], (int)(bits / 8)), (int)(bits / 8));
    assert_int_equal(BN_mod_exp(x, r, k->e, k->n, ctx), 1);
    assert_int_equal(BN_bn2binpad(x, b->bl[i], (int)(bits / 8)), (int)(bits / 8));
    b->blp[i] = b->bl[i];
    b->ubp[i] = b->ub[i];
    BN_free(r);
    BN_free(x);
    BN_CTX_free(ctx);
}

/* Lane i of b on key k: a random input below n (bits bits), a blinding pair if blinded. */
static void set_lane(struct batch *b, unsigned i, const struct tkey *k, unsigned bits, int blinded)
{
    b->tk[i] = k;
    b->kp[i] = k->mk;
    b->inp[i] = b->in[i];
    rand_below(b->in[i], k, bits);
    if (blinded)
        make_blind(b, i, bits);
}

/* A fresh batch, lane i on key keys[si][(i + first) % NKEYS] (set_lane). */
static void fill_batch(struct batch *b, unsigned si, unsigned first, int blinded)
{
    batch_init(b);
    for (unsigned i = 0; i < MB8_LANES; i++)
        set_lane(b, i, &keys[si][(i + first) % NKEYS], SIZES[si], blinded);
}

static mb8_status_t run(struct batch *b, int blinded)
{
    return mb8_rsa_private_crt(b->outp, b->inp, b->kp, blinded ? b->blp : NULL,
                               blinded ? b->ubp : NULL, scratch);
}

/* Lanes expected OK must match OpenSSL byte for byte. */
static void check_ok_lanes(struct batch *b, mb8_status_t st, unsigned bits, unsigned ok_mask)
{
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (!(ok_mask >> i & 1))
            continue;
        if (mb8_status_lane(st, i) != MB8_STATUS_OK) {
            dump_fail(bits, i, b->tk[i], "status not OK");
            fail_msg("lane %u status %u", i, mb8_status_lane(st, i));
        }
        ref_op(b->tk[i], bits, b->in[i], b->exp[i]);
        if (memcmp(b->out[i], b->exp[i], bits / 8) != 0) {
            dump_fail(bits, i, b->tk[i], "output differs from OpenSSL");
            fail_msg("lane %u output differs", i);
        }
    }
}

static void random_batches(unsigned si, unsigned n_iters, int blinded)
{
    unsigned bits = SIZES[si];
    struct batch *b = malloc(sizeof *b);
    assert_non_null(b);
    for (unsigned it = 0; it < n_iters; it++) {
        fill_batch(b, si, it, blinded);
        if (it == 0) { /* edge values: 0, 1, n - 1, leading zero bytes */
            memset(b->in[0], 0, bits / 8);
            memset(b->in[1], 0, bits / 8);
            b->in[1][bits / 8 - 1] = 1;
            memcpy(b->in[2], b->tk[2]->nb, bits / 8);
            b->in[2][bits / 8 - 1] -= 1; /* n is odd: no borrow */
            memset(b->in[3], 0, 3);
        }
        mb8_status_t st = run(b, blinded);
        check_ok_lanes(b, st, bits, 0xFF);
    }
    free(b);
}

/* Random batches of every loaded size (MB8_RSA_SIZES), unblinded and blinded: 2048 gets
 * MB8_RSA_ITERS batches, the slower cases a share of them (iters / div rounded up; div 0:
 * one batch). */
static void test_random(void **state)
{
    static const struct {
        unsigned si, div;
        int blinded;
    } cases[] = {{0, 1, 0}, {1, 3, 0}, {2, 6, 0}, {0, 2, 1}, {2, 0, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        if (have_size[cases[c].si])
            random_batches(cases[c].si,
                           cases[c].div ? (iters + cases[c].div - 1) / cases[c].div : 1,
                           cases[c].blinded);
}

/* Unused lanes, in >= n, a 3072-bit key among 2048-bit ones. */
static void test_mixed(void **state)
{
    const unsigned bits = 2048;
    struct batch *b = malloc(sizeof *b);
    assert_non_null(b);
    fill_batch(b, 0, 0, 0);
    b->inp[1] = NULL;                         /* unused */
    b->inp[4] = NULL;                         /* unused */
    memcpy(b->in[3], b->tk[3]->nb, bits / 8); /* in == n: BAD_INPUT */
    memset(b->in[7], 0xFF, bits / 8);         /* in = 2^2048 - 1: BAD_INPUT */
    set_lane(b, 6, &keys[1][6], 3072, 0);     /* 3072-bit key: BAD_KEY */
    mb8_status_t st = run(b, 0);
    check_ok_lanes(b, st, bits, 0x25); /* lanes 0, 2, 5 */
    uint8_t aa[MAXB], zero[MAXB] = {0};
    memset(aa, 0xAA, sizeof aa);
    assert_int_equal(mb8_status_lane(st, 1), MB8_STATUS_UNUSED);
    assert_int_equal(mb8_status_lane(st, 4), MB8_STATUS_UNUSED);
    assert_memory_equal(b->out[1], aa, MAXB);
    assert_memory_equal(b->out[4], aa, MAXB);
    assert_int_equal(mb8_status_lane(st, 3), MB8_STATUS_BAD_INPUT);
    assert_int_equal(mb8_status_lane(st, 7), MB8_STATUS_BAD_INPUT);
    assert_memory_equal(b->out[3], zero, bits / 8);
    assert_memory_equal(b->out[7], zero, bits / 8);
    assert_int_equal(mb8_status_lane(st, 6), MB8_STATUS_BAD_KEY);
    assert_memory_equal(b->out[6], aa, MAXB);
    assert_false(mb8_status_all_ok(st));

    /* the batch size is the first used lane's: a 3072-bit lane 0 makes the others BAD_KEY */
    set_lane(b, 1, &keys[0][1], bits, 0);
    set_lane(b, 0, &keys[1][0], 3072, 0);
    b->kp[6] = keys[0][6].mk;
    b->tk[6] = &keys[0][6];
    st = run(b, 0);
    check_ok_lanes(b, st, 3072, 0x01);
    for (unsigned i = 1; i < MB8_LANES; i++)
        assert_int_equal(mb8_status_lane(st, i), i == 4 ? MB8_STATUS_UNUSED : MB8_STATUS_BAD_KEY);
    free(b);
}

static void test_same_key(void **state)
{
    const unsigned bits = 2048;
    struct batch *b = malloc(sizeof *b);
    assert_non_null(b);
    batch_init(b);
    for (unsigned i = 0; i < MB8_LANES; i++)
        set_lane(b, i, &keys[0][5], bits, 0);
    mb8_status_t st = run(b, 0);
    check_ok_lanes(b, st, bits, 0xFF);
    for (unsigned i = 1; i < MB8_LANES; i++)
        assert_memory_not_equal(b->out[0], b->out[i], bits / 8);
    free(b);
}

/* Blinding: a wrong pair is caught by the fault check; half a pair is BAD_INPUT. */
static void test_blinding_errors(void **state)
{
    const unsigned bits = 2048;
    struct batch *b = malloc(sizeof *b);
    uint8_t zero[MAXB] = {0};
    assert_non_null(b);
    fill_batch(b, 0, 0, 1);
    b->ub[2][bits / 8 - 1] ^= 1; /* wrong unblinding value */
    b->blp[5] = NULL;            /* half a pair */
    mb8_status_t st = run(b, 1);
    check_ok_lanes(b, st, bits, 0xDB);
    assert_int_equal(mb8_status_lane(st, 2), MB8_STATUS_VERIFY_FAIL);
    assert_memory_equal(b->out[2], zero, bits / 8);
    assert_int_equal(mb8_status_lane(st, 5), MB8_STATUS_BAD_INPUT);
    free(b);
}

/*
 * Batches the IFMA kernel cannot run entirely as 8-lane mod-n steps: lanes blinded and
 * unblinded in one batch (blind/unblind NULL per lane), and a lane whose key has another
 * public exponent (e = 3) than the others, so the fault check runs per lane. Every lane
 * must still match OpenSSL.
 */
static void test_mixed_paths(void **state)
{
    const unsigned bits = 2048;
    struct tkey k3;
    EVP_PKEY_CTX *gctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
    BIGNUM *e3 = BN_new();
    EVP_PKEY *pk = NULL;
    struct batch *b = malloc(sizeof *b);

    assert_true(gctx && e3 && b);
    assert_int_equal(BN_set_word(e3, 3), 1);
    assert_int_equal(EVP_PKEY_keygen_init(gctx), 1);
    assert_int_equal(EVP_PKEY_CTX_set_rsa_keygen_bits(gctx, (int)bits), 1);
    assert_int_equal(EVP_PKEY_CTX_set1_rsa_keygen_pubexp(gctx, e3), 1);
    assert_int_equal(EVP_PKEY_keygen(gctx, &pk), 1);
    memset(&k3, 0, sizeof(k3));
    k3.pk = pk;
    load_tkey(&k3, bits);
    for (int round = 0; round < 3; round++) {
        fill_batch(b, 0, 0, 1);
        if (round != 1)
            set_lane(b, 3, &k3, bits, 1);
        if (round >= 1) { /* lanes 1 and 6 unblinded (both pointers NULL) */
            b->blp[1] = b->ubp[1] = NULL;
            b->blp[6] = b->ubp[6] = NULL;
        }
        mb8_status_t st = run(b, 1);
        check_ok_lanes(b, st, bits, 0xFF);
    }
    free_tkey(&k3); /* and pk */
    EVP_PKEY_CTX_free(gctx);
    BN_free(e3);
    free(b);
}

/* A corrupted cached dp: that lane is VERIFY_FAIL with zeroed output, the others right. */
static void test_fault(void **state)
{
    const unsigned bits = 2048;
    size_t ksz = mb8_rsa_key_size(bits);
    mb8_rsa_key_t *bad = aligned_alloc(64, (ksz + 63) / 64 * 64);
    mb8_rsa_key_t *bad2 = aligned_alloc(64, (ksz + 63) / 64 * 64);
    struct batch *b = malloc(sizeof *b);
    uint8_t zero[MAXB] = {0};
    assert_true(bad && bad2 && b);
    memcpy(bad, keys[0][2].mk, ksz);
    mb8__rsa_dp(bad)[7] ^= UINT64_C(1) << 13;
    /* a dp that is wrong already at import: only the fault check can notice */
    uint8_t dq[MAXB / 2];
    const struct tkey *k5 = &keys[0][5];
    memcpy(dq, k5->dq, bits / 16);
    dq[bits / 16 - 1] ^= 2;
    assert_int_equal(
        mb8_rsa_key_init(bad2, bits, k5->nb, k5->eb, k5->elen, k5->p, k5->q, k5->dp, dq, k5->qi),
        0);
    fill_batch(b, 0, 0, 0);
    b->kp[2] = bad;
    b->kp[5] = bad2;
    mb8_status_t st = run(b, 0);
    check_ok_lanes(b, st, bits, 0xDB);
    assert_int_equal(mb8_status_lane(st, 2), MB8_STATUS_VERIFY_FAIL);
    assert_int_equal(mb8_status_lane(st, 5), MB8_STATUS_VERIFY_FAIL);
    assert_memory_equal(b->out[2], zero, bits / 8);
    assert_memory_equal(b->out[5], zero, bits / 8);
    mb8_rsa_key_dispose(bad);
    mb8_rsa_key_dispose(bad2);
    assert_int_equal(mb8_rsa_key_bits(bad), 0);
    free(bad);
    free(bad2);
    free(b);
}

/* Key import rejects what it documents, sizes, and argument errors of the operation. */
static void test_api_errors(void **state)
{
    const unsigned bits = 2048;
    const struct tkey *k = &keys[0][0], *k1 = &keys[0][1];
    size_t ksz = mb8_rsa_key_size(bits);
    mb8_rsa_key_t *t = aligned_alloc(64, (ksz + 63) / 64 * 64);
    uint8_t buf[MAXB], e[MAXB];
    assert_non_null(t);
    assert_int_equal(mb8_rsa_key_size(1024), 0);
    assert_int_equal(mb8_rsa_key_size(2047), 0);
    assert_int_equal(mb8_rsa_scratch_size(1024), 0);
    assert_true(mb8_rsa_key_size(2048) < mb8_rsa_key_size(3072));
    assert_true(mb8_rsa_scratch_size(3072) < mb8_rsa_scratch_size(4096));
    assert_int_equal(
        mb8_rsa_key_init(t, 1024, k->nb, k->eb, k->elen, k->p, k->q, k->dp, k->dq, k->qi), -1);
    /* p q != n: q of another key */
    assert_int_equal(
        mb8_rsa_key_init(t, bits, k->nb, k->eb, k->elen, k->p, k1->q, k->dp, k->dq, k->qi), -1);
    assert_int_equal(mb8_rsa_key_bits(t), 0);
    /* even p */
    memcpy(buf, k->p, bits / 16);
    buf[bits / 16 - 1] ^= 1;
    assert_int_equal(
        mb8_rsa_key_init(t, bits, k->nb, k->eb, k->elen, buf, k->q, k->dp, k->dq, k->qi), -1);
    /* even e, e = 1, e_len 0 */
    memcpy(e, k->eb, k->elen);
    e[k->elen - 1] ^= 1;
    assert_int_equal(mb8_rsa_key_init(t, bits, k->nb, e, k->elen, k->p, k->q, k->dp, k->dq, k->qi),
                     -1);
    e[0] = 1;
    assert_int_equal(mb8_rsa_key_init(t, bits, k->nb, e, 1, k->p, k->q, k->dp, k->dq, k->qi), -1);
    assert_int_equal(mb8_rsa_key_init(t, bits, k->nb, k->eb, 0, k->p, k->q, k->dp, k->dq, k->qi),
                     -1);
    /* qinv >= p, dp >= p */
    assert_int_equal(
        mb8_rsa_key_init(t, bits, k->nb, k->eb, k->elen, k->p, k->q, k->dp, k->dq, k->p), -1);
    assert_int_equal(
        mb8_rsa_key_init(t, bits, k->nb, k->eb, k->elen, k->p, k->q, k->p, k->dq, k->qi), -1);
    assert_int_equal(
        mb8_rsa_key_init(t, bits, NULL, k->eb, k->elen, k->p, k->q, k->dp, k->dq, k->qi), -1);
    /* a good import into the same memory still works afterwards */
    assert_int_equal(
        mb8_rsa_key_init(t, bits, k->nb, k->eb, k->elen, k->p, k->q, k->dp, k->dq, k->qi), 0);
    mb8_rsa_key_dispose(t);
    mb8_rsa_key_dispose(NULL);

    /* operation argument errors */
    struct batch *b = malloc(sizeof *b);
    assert_non_null(b);
    fill_batch(b, 0, 0, 0);
    mb8_status_t st = mb8_rsa_private_crt(b->outp, b->inp, b->kp, NULL, NULL, NULL);
    for (unsigned i = 0; i < MB8_LANES; i++)
        assert_int_equal(mb8_status_lane(st, i), MB8_STATUS_BAD_INPUT);
    st = mb8_rsa_private_crt(b->outp, NULL, b->kp, NULL, NULL, scratch);
    for (unsigned i = 0; i < MB8_LANES; i++)
        assert_int_equal(mb8_status_lane(st, i), MB8_STATUS_UNUSED);
    b->kp[3] = NULL;
    b->kp[4] = t; /* disposed: not initialised */
    b->outp[6] = NULL;
    st = run(b, 0);
    check_ok_lanes(b, st, bits, 0xA7);
    assert_int_equal(mb8_status_lane(st, 3), MB8_STATUS_BAD_KEY);
    assert_int_equal(mb8_status_lane(st, 4), MB8_STATUS_BAD_KEY);
    assert_int_equal(mb8_status_lane(st, 6), MB8_STATUS_BAD_INPUT);
    /* in place: out == in */
    fill_batch(b, 0, 0, 0);
    for (unsigned i = 0; i < MB8_LANES; i++) {
        ref_op(b->tk[i], bits, b->in[i], b->exp[i]);
        b->outp[i] = b->in[i];
    }
    st = run(b, 0);
    assert_true(mb8_status_all_ok(st));
    for (unsigned i = 0; i < MB8_LANES; i++)
        assert_memory_equal(b->in[i], b->exp[i], bits / 8);
    free(b);
    free(t);
}

/*
 * ctgrind-style check: the secret parts of 8 key copies (p, q, dp, dq, qInv, their R^2 and
 * k0) and the blinding values are marked undefined for memcheck, so any branch or memory
 * index that depends on them is an error under valgrind. The status word and the outputs
 * are declassified after the call (they are released on purpose).
 */
static void test_ct_poison(void **state)
{
    const unsigned bits = 2048;
    size_t ksz = mb8_rsa_key_size(bits);
    mb8_rsa_key_t *ck[MB8_LANES];
    struct batch *b = malloc(sizeof *b);
    assert_non_null(b);
    batch_init(b);
    for (unsigned i = 0; i < MB8_LANES; i++) {
        ck[i] = aligned_alloc(64, (ksz + 63) / 64 * 64);
        assert_non_null(ck[i]);
        memcpy(ck[i], keys[0][i].mk, ksz);
        set_lane(b, i, &keys[0][i], bits, i != 4); /* one lane unblinded: both paths */
        b->kp[i] = ck[i];
    }
    memcpy(b->in[6], b->tk[6]->nb, bits / 8); /* in == n: the BAD_INPUT mask path */
    for (unsigned i = 0; i < MB8_LANES; i++) {
        size_t h = ck[i]->h;
        VALGRIND_MAKE_MEM_UNDEFINED(mb8__rsa_p(ck[i]), 7 * h * sizeof(uint64_t)); /* p..qinvr */
        VALGRIND_MAKE_MEM_UNDEFINED(&ck[i]->k0p, 2 * sizeof(uint64_t));
        VALGRIND_MAKE_MEM_UNDEFINED(b->bl[i], bits / 8);
        VALGRIND_MAKE_MEM_UNDEFINED(b->ub[i], bits / 8);
    }
    mb8_status_t st = run(b, 1);
    VALGRIND_MAKE_MEM_DEFINED(&st, sizeof st);
    for (unsigned i = 0; i < MB8_LANES; i++)
        VALGRIND_MAKE_MEM_DEFINED(b->out[i], bits / 8);
    check_ok_lanes(b, st, bits, 0xBF);
    assert_int_equal(mb8_status_lane(st, 6), MB8_STATUS_BAD_INPUT);
    for (unsigned i = 0; i < MB8_LANES; i++) {
        VALGRIND_MAKE_MEM_DEFINED(ck[i], ksz);
        mb8_rsa_key_dispose(ck[i]);
        free(ck[i]);
    }
    free(b);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Not a benchmark: one line of ops/s to see where the reference stands. */
static void test_timing(void **state)
{
    const unsigned bits = 2048;
    struct batch *b = malloc(sizeof *b);
    assert_non_null(b);
    fill_batch(b, 0, 0, 1);
    /* best of 3 rounds each, interleaved: the machine may be shared */
    unsigned nb = iters < 4 ? 1 : 4;
    double best_mb8 = 1e9, best_ossl = 1e9;
    for (int round = 0; round < 3; round++) {
        double t0 = now();
        for (unsigned r = 0; r < nb; r++)
            assert_true(mb8_status_all_ok(run(b, 1)));
        double t1 = now();
        for (unsigned r = 0; r < nb; r++)
            for (unsigned i = 0; i < MB8_LANES; i++)
                ref_op(b->tk[i], bits, b->in[i], b->exp[i]);
        double t2 = now();
        best_mb8 = t1 - t0 < best_mb8 ? t1 - t0 : best_mb8;
        best_ossl = t2 - t1 < best_ossl ? t2 - t1 : best_ossl;
    }
    printf("rsa_diff: RSA-2048 private: mb8 reference (blinded, fault-checked) %.0f ops/s, "
           "OpenSSL EVP_PKEY_decrypt raw %.0f ops/s (best of 3 x %u ops)\n",
           nb * MB8_LANES / best_mb8, nb * MB8_LANES / best_ossl, nb * MB8_LANES);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random),      cmocka_unit_test(test_mixed),
        cmocka_unit_test(test_same_key),    cmocka_unit_test(test_blinding_errors),
        cmocka_unit_test(test_mixed_paths), cmocka_unit_test(test_fault),
        cmocka_unit_test(test_api_errors),  cmocka_unit_test(test_ct_poison),
        cmocka_unit_test(test_timing),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
