/*
 * The differential tests of mb8's P-256 and P-384 (mb8/p256.h, mb8/p384.h) against OpenSSL
 * and known answers, shared by tests/diff/p256_diff_test.c and p384_diff_test.c: each
 * includes its curve's internal header (which names the curve: mb8/src/common/ec_internal.h)
 * and defines its known answers before including this file: KEY_X, KEY_U and RFC6979 (RFC
 * 6979 A.2.5 / A.2.6: the key and the signatures of "sample" and "test"), R5903_I, _GI,
 * _R, _GR, _GIR (RFC 5903 §8.1 / §8.2 ECDH). The rest comes from OpenSSL: the curve
 * (EC_curve_nist2nid("P-<8 NB>")), n and p, and ECDSA's digest SHA-<8 NB>.
 *
 * Every call carries 8 different inputs. Public keys are compared with EC_POINT_mul, ECDH
 * secrets with EVP_PKEY_derive, ECDSA signatures with the (r, s) computed by BIGNUM
 * arithmetic for the same k and verified by ECDSA_do_verify. A failure prints the seed
 * (P256_DIFF_SEED=<seed>, P384_DIFF_SEED=<seed> repeats the run) and the lane.
 * P256_DIFF_QUICK=1 (P384_...) shortens every loop (for valgrind, see
 * tests/diff/zz-ct.cmake).
 */
#ifndef TESTS_DIFF_EC_DIFF_TEST_H
#define TESTS_DIFF_EC_DIFF_TEST_H

#define OPENSSL_SUPPRESS_DEPRECATED /* the EC_KEY / EC_POINT API is the simplest oracle */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>

#include "mb8/cpu.h"
#include "mb8/status.h"

#include "diff_util.h"
#include "memcheck.h"

/* mb8's scratch for the elliptic-curve calls (mb8/status.h; one call at a time) */
static alignas(MB8_SCRATCH_ALIGN) uint8_t g_scratch[65536];

#define NB MB8__EC_NB
#define NP MB8__EC_NP
#define NSETUP MB8__EC_NSETUP
#define STR_(x) #x
#define STR(x) STR_(x)
/* "P256": the prefix of the environment variables */
#define ENV STR(MB8__EC_UC)
#define L MB8_LANES

static EC_GROUP *g_group;
static BIGNUM *g_n, *g_p; /* the group order, the field prime */
static int g_nid;         /* OpenSSL's name of the curve */
static const EVP_MD *g_md;
static void expect_zero(const char *what, unsigned lane, const uint8_t *b, size_t n)
{
    static const uint8_t z[NP];
    expect_bytes(what, lane, b, z, n);
}

/* Fails the test unless the n bytes at b (n <= NSETUP) are still the 0xAA they were filled
 * with: an output a call must not write. */
static void expect_untouched(const char *what, unsigned lane, const uint8_t *b, size_t n)
{
    uint8_t aa[NSETUP];
    memset(aa, 0xAA, sizeof aa);
    expect_bytes(what, lane, b, aa, n);
}

/* 1 when the big-endian scalar is in [1, n-1]. */
static int scalar_valid(const uint8_t d[NB])
{
    BIGNUM *b = BN_bin2bn(d, NB, NULL);
    int ok = !BN_is_zero(b) && BN_cmp(b, g_n) < 0;
    BN_free(b);
    return ok;
}

/* A random scalar in [1, n-1]. */
static void rng_scalar(uint8_t d[NB])
{
    do
        rng_bytes(d, NB);
    while (!scalar_valid(d));
}

/* OpenSSL's d * G, uncompressed. */
static void ossl_pub(uint8_t out[NP], const uint8_t d[NB])
{
    BIGNUM *b = BN_bin2bn(d, NB, NULL);
    EC_POINT *P = EC_POINT_new(g_group);
    assert_int_equal(EC_POINT_mul(g_group, P, b, NULL, NULL, NULL), 1);
    assert_int_equal(EC_POINT_point2oct(g_group, P, POINT_CONVERSION_UNCOMPRESSED, out, NP, NULL),
                     NP);
    EC_POINT_free(P);
    BN_free(b);
}

/* An EVP_PKEY for the point enc (and the private d when not NULL); NULL when OpenSSL
 * rejects the point. */
static EVP_PKEY *ossl_key(const uint8_t *d, const uint8_t enc[NP])
{
    EC_KEY *k = EC_KEY_new_by_curve_name(g_nid);
    EC_POINT *P = EC_POINT_new(g_group);
    EVP_PKEY *pk = NULL;
    if (EC_POINT_oct2point(g_group, P, enc, NP, NULL) == 1 && EC_KEY_set_public_key(k, P) == 1) {
        if (d != NULL) {
            BIGNUM *b = BN_bin2bn(d, NB, NULL);
            assert_int_equal(EC_KEY_set_private_key(k, b), 1);
            BN_free(b);
        }
        pk = EVP_PKEY_new();
        assert_int_equal(EVP_PKEY_set1_EC_KEY(pk, k), 1);
    }
    ERR_clear_error();
    EC_POINT_free(P);
    EC_KEY_free(k);
    return pk;
}

/* OpenSSL's ECDH: 1 and out on success, 0 when the peer point is rejected. */
static int ossl_ecdh(uint8_t out[NB], const uint8_t d[NB], const uint8_t peer[NP])
{
    uint8_t pub[NP];
    ossl_pub(pub, d);
    EVP_PKEY *mine = ossl_key(d, pub);
    EVP_PKEY *theirs = ossl_key(NULL, peer);
    assert_non_null(mine);
    int ok = 0;
    if (theirs != NULL) {
        EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(mine, NULL);
        assert_int_equal(EVP_PKEY_derive_init(ctx), 1);
        if (EVP_PKEY_derive_set_peer(ctx, theirs) == 1) {
            size_t len = NB;
            ok = EVP_PKEY_derive(ctx, out, &len) == 1;
            if (ok)
                assert_int_equal(len, NB);
        }
        EVP_PKEY_CTX_free(ctx);
    }
    ERR_clear_error();
    EVP_PKEY_free(theirs);
    EVP_PKEY_free(mine);
    return ok;
}

/* The ECDSA (r, s) for (e, d, k) by BIGNUM arithmetic: r = x(kG) mod n, s = k^-1 (e + r d). */
static int ossl_sign_k(uint8_t r_out[NB], uint8_t s_out[NB], const uint8_t e_b[NB],
                       const uint8_t d_b[NB], const uint8_t k_b[NB])
{
    BN_CTX *ctx = BN_CTX_new();
    BIGNUM *e = BN_bin2bn(e_b, NB, NULL), *d = BN_bin2bn(d_b, NB, NULL);
    BIGNUM *k = BN_bin2bn(k_b, NB, NULL), *x = BN_new(), *r = BN_new(), *s = BN_new();
    EC_POINT *R = EC_POINT_new(g_group);
    assert_int_equal(EC_POINT_mul(g_group, R, k, NULL, NULL, ctx), 1);
    assert_int_equal(EC_POINT_get_affine_coordinates(g_group, R, x, NULL, ctx), 1);
    assert_int_equal(BN_nnmod(r, x, g_n, ctx), 1);
    assert_int_equal(BN_nnmod(e, e, g_n, ctx), 1);
    assert_int_equal(BN_mod_mul(s, r, d, g_n, ctx), 1);
    assert_int_equal(BN_mod_add(s, s, e, g_n, ctx), 1);
    assert_non_null(BN_mod_inverse(k, k, g_n, ctx));
    assert_int_equal(BN_mod_mul(s, s, k, g_n, ctx), 1);
    int ok = !BN_is_zero(r) && !BN_is_zero(s);
    assert_int_equal(BN_bn2binpad(r, r_out, NB), NB);
    assert_int_equal(BN_bn2binpad(s, s_out, NB), NB);
    EC_POINT_free(R);
    BN_free(e);
    BN_free(d);
    BN_free(k);
    BN_free(x);
    BN_free(r);
    BN_free(s);
    BN_CTX_free(ctx);
    return ok;
}

/* ECDSA_do_verify of (r, s) on digest e under d's public key. */
static int ossl_verify(const uint8_t r_b[NB], const uint8_t s_b[NB], const uint8_t e[NB],
                       const uint8_t d[NB])
{
    uint8_t pub[NP];
    ossl_pub(pub, d);
    EC_KEY *k = EC_KEY_new_by_curve_name(g_nid);
    EC_POINT *P = EC_POINT_new(g_group);
    assert_int_equal(EC_POINT_oct2point(g_group, P, pub, NP, NULL), 1);
    assert_int_equal(EC_KEY_set_public_key(k, P), 1);
    ECDSA_SIG *sig = ECDSA_SIG_new();
    assert_int_equal(ECDSA_SIG_set0(sig, BN_bin2bn(r_b, NB, NULL), BN_bin2bn(s_b, NB, NULL)), 1);
    int ok = ECDSA_do_verify(e, NB, sig, k) == 1;
    ERR_clear_error();
    ECDSA_SIG_free(sig);
    EC_POINT_free(P);
    EC_KEY_free(k);
    return ok;
}

/* ---- known answers ------------------------------------------------------------------ */

static void test_known_answers(void **state)
{
    (void)state;
    uint8_t x[NB], u[NP], i_[NB], gi[NP], r_[NB], gr[NP], gir[NB];
    unhex(x, NB, KEY_X);
    unhex(u, NP, KEY_U);
    unhex(i_, NB, R5903_I);
    unhex(gi, NP, R5903_GI);
    unhex(r_, NB, R5903_R);
    unhex(gr, NP, R5903_GR);
    unhex(gir, NB, R5903_GIR);

    /* public keys: x, i, r, 1 (G) and 4 random, rotated through the lanes */
    uint8_t d[L][NB], want[L][NP];
    memcpy(d[0], x, NB);
    memcpy(want[0], u, NP);
    memcpy(d[1], i_, NB);
    memcpy(want[1], gi, NP);
    memcpy(d[2], r_, NB);
    memcpy(want[2], gr, NP);
    memset(d[3], 0, NB);
    d[3][NB - 1] = 1;
    rng_state = g_seed ^ 0x1234;
    for (unsigned j = 4; j < L; j++)
        rng_scalar(d[j]);
    for (unsigned j = 0; j < L; j++) {
        uint8_t o[NP];
        ossl_pub(o, d[j]);
        if (j < 3)
            expect_bytes("KAT public key vs OpenSSL", j, o, want[j], NP);
        else
            memcpy(want[j], o, NP);
    }
    for (unsigned rot = 0; rot < L; rot++) {
        uint8_t o[L][NP];
        uint8_t *out[L];
        const uint8_t *dp[L];
        for (unsigned j = 0; j < L; j++) {
            dp[(j + rot) % L] = d[j];
            out[(j + rot) % L] = o[(j + rot) % L];
        }
        assert_int_equal(MB8__EC_API(public_key)(out, dp, g_scratch), 0);
        for (unsigned j = 0; j < L; j++)
            expect_bytes("KAT public key", (j + rot) % L, o[(j + rot) % L], want[j], NP);
    }

    /* ECDH: both RFC 5903 directions plus 6 random pairs */
    {
        uint8_t dd[L][NB], q[L][NP], w[L][NB], o[L][NB];
        uint8_t *out[L];
        const uint8_t *dp[L], *qp[L];
        memcpy(dd[0], i_, NB);
        memcpy(q[0], gr, NP);
        memcpy(dd[1], r_, NB);
        memcpy(q[1], gi, NP);
        for (unsigned j = 2; j < L; j++) {
            uint8_t t[NB];
            rng_scalar(dd[j]);
            rng_scalar(t);
            ossl_pub(q[j], t);
        }
        for (unsigned j = 0; j < L; j++) {
            assert_int_equal(ossl_ecdh(w[j], dd[j], q[j]), 1);
            if (j < 2)
                expect_bytes("RFC 5903 vs OpenSSL", j, w[j], gir, NB);
            dp[j] = dd[j];
            qp[j] = q[j];
            out[j] = o[j];
        }
        assert_int_equal(MB8__EC_API(ecdh)(out, dp, qp, g_scratch), 0);
        for (unsigned j = 0; j < L; j++)
            expect_bytes("KAT ECDH", j, o[j], w[j], NB);
    }

    /* ECDSA: RFC 6979's two signatures, in lanes 3 and 6, with random neighbours */
    {
        uint8_t e[L][NB], dd[L][NB], k[L][NB], wr[L][NB], ws[L][NB], or_[L][NB], os[L][NB];
        uint8_t *rp[L], *sp[L];
        const uint8_t *ep[L], *dp[L], *kp[L];
        for (unsigned j = 0; j < L; j++) {
            rng_bytes(e[j], NB);
            rng_scalar(dd[j]);
            rng_scalar(k[j]);
        }
        for (unsigned v = 0; v < 2; v++) {
            unsigned lane = v ? 6 : 3;
            unsigned int len = NB;
            assert_int_equal(
                EVP_Digest(RFC6979[v][0], strlen(RFC6979[v][0]), e[lane], &len, g_md, NULL), 1);
            memcpy(dd[lane], x, NB);
            unhex(k[lane], NB, RFC6979[v][1]);
        }
        for (unsigned j = 0; j < L; j++) {
            assert_int_equal(ossl_sign_k(wr[j], ws[j], e[j], dd[j], k[j]), 1);
            ep[j] = e[j];
            dp[j] = dd[j];
            kp[j] = k[j];
            rp[j] = or_[j];
            sp[j] = os[j];
        }
        for (unsigned v = 0; v < 2; v++) {
            unsigned lane = v ? 6 : 3;
            uint8_t r[NB], s[NB];
            unhex(r, NB, RFC6979[v][2]);
            unhex(s, NB, RFC6979[v][3]);
            expect_bytes("RFC 6979 r vs BIGNUM", lane, wr[lane], r, NB);
            expect_bytes("RFC 6979 s vs BIGNUM", lane, ws[lane], s, NB);
        }
        assert_int_equal(MB8__EC_API(ecdsa_sign)(rp, sp, ep, dp, kp, g_scratch), 0);
        for (unsigned j = 0; j < L; j++) {
            expect_bytes("KAT ECDSA r", j, or_[j], wr[j], NB);
            expect_bytes("KAT ECDSA s", j, os[j], ws[j], NB);
            assert_true(ossl_verify(or_[j], os[j], e[j], dd[j]));
        }
    }
}

/* ---- random differential ------------------------------------------------------------ */

static void test_random_public_key_and_ecdh(void **state)
{
    (void)state;
    int rounds = g_quick ? 2 : 100;
    rng_state = g_seed;
    for (int it = 0; it < rounds; it++) {
        uint8_t d[L][NB], t[L][NB], q[L][NP], pub[L][NP], sec[L][NB], w[NP];
        uint8_t *pubs[L], *secs[L];
        const uint8_t *dp[L], *tp[L], *qp[L];
        for (unsigned i = 0; i < L; i++) {
            rng_scalar(d[i]);
            rng_scalar(t[i]);
            dp[i] = (rng_next() % 16) == 0 ? NULL : d[i];
            tp[i] = t[i];
            pubs[i] = pub[i];
            secs[i] = sec[i];
            qp[i] = q[i];
        }
        /* the peers' public keys by mb8 (checked against OpenSSL) */
        uint8_t *qs[L];
        for (unsigned i = 0; i < L; i++)
            qs[i] = q[i];
        assert_int_equal(MB8__EC_API(public_key)(qs, tp, g_scratch), 0);
        for (unsigned i = 0; i < L; i++) {
            ossl_pub(w, t[i]);
            expect_bytes("random peer public key", i, q[i], w, NP);
        }
        memset(pub, 0xAA, sizeof pub);
        memset(sec, 0xAA, sizeof sec);
        mb8_status_t st = MB8__EC_API(public_key)(pubs, dp, g_scratch);
        mb8_status_t st2 = MB8__EC_API(ecdh)(secs, dp, qp, g_scratch);
        for (unsigned i = 0; i < L; i++) {
            if (dp[i] == NULL) {
                expect_status("unused", st, i, MB8_STATUS_UNUSED);
                expect_status("unused", st2, i, MB8_STATUS_UNUSED);
                expect_untouched("unused public key", i, pub[i], NP);
                expect_untouched("unused ECDH", i, sec[i], NB);
                continue;
            }
            expect_status("random public key", st, i, MB8_STATUS_OK);
            ossl_pub(w, d[i]);
            expect_bytes("random public key", i, pub[i], w, NP);
            expect_status("random ECDH", st2, i, MB8_STATUS_OK);
            assert_int_equal(ossl_ecdh(w, d[i], q[i]), 1);
            expect_bytes("random ECDH", i, sec[i], w, NB);
        }
    }
}

static void test_random_ecdsa(void **state)
{
    (void)state;
    int rounds = g_quick ? 2 : 100;
    rng_state = g_seed ^ 0xec;
    for (int it = 0; it < rounds; it++) {
        uint8_t e[L][NB], d[L][NB], k[L][NB], r[L][NB], s[L][NB], wr[NB], ws[NB];
        uint8_t *rp[L], *sp[L];
        const uint8_t *ep[L], *dp[L], *kp[L];
        for (unsigned i = 0; i < L; i++) {
            rng_bytes(e[i], NB);
            if (it % 4 == 1)
                memset(e[i], 0xff, 8); /* e >= n most of the time */
            rng_scalar(d[i]);
            rng_scalar(k[i]);
            ep[i] = e[i];
            dp[i] = (rng_next() % 16) == 0 ? NULL : d[i];
            kp[i] = k[i];
            rp[i] = r[i];
            sp[i] = s[i];
        }
        memset(r, 0xAA, sizeof r);
        memset(s, 0xAA, sizeof s);
        mb8_status_t st = MB8__EC_API(ecdsa_sign)(rp, sp, ep, dp, kp, g_scratch);
        for (unsigned i = 0; i < L; i++) {
            if (dp[i] == NULL) {
                expect_status("sign unused", st, i, MB8_STATUS_UNUSED);
                expect_untouched("sign unused r", i, r[i], NB);
                expect_untouched("sign unused s", i, s[i], NB);
                continue;
            }
            expect_status("random sign", st, i, MB8_STATUS_OK);
            assert_int_equal(ossl_sign_k(wr, ws, e[i], d[i], k[i]), 1);
            expect_bytes("random sign r", i, r[i], wr, NB);
            expect_bytes("random sign s", i, s[i], ws, NB);
            if (!ossl_verify(r[i], s[i], e[i], d[i])) {
                fprintf(stderr, "lane %u: ECDSA_do_verify failed (%s=%llu)\n", i, g_seed_var,
                        (unsigned long long)g_seed);
                fail();
            }
        }
    }
}

/* ---- edge cases --------------------------------------------------------------------- */

/* n - 1, n, n + 1, 2^(8 NB) - 1, 0, 1 */
static void special_scalar(uint8_t d[NB], unsigned which)
{
    assert_int_equal(BN_bn2binpad(g_n, d, NB), NB);
    switch (which) {
    case 0:
        d[NB - 1] -= 1;
        break;
    case 1:
        break;
    case 2:
        d[NB - 1] += 1;
        break;
    case 3:
        memset(d, 0xff, NB);
        break;
    case 4:
        memset(d, 0, NB);
        break;
    default:
        memset(d, 0, NB);
        d[NB - 1] = 1;
        break;
    }
}

static void test_edge_scalars(void **state)
{
    (void)state;
    rng_state = g_seed ^ 0xed9e;
    /* lanes: n-1, n, n+1, 2^(8 NB)-1, 0, 1, random, random — for keygen, ECDH and as d and k
     * in ECDSA */
    uint8_t d[L][NB], peer[L][NP], pub[L][NP], sec[L][NB], w[NP];
    uint8_t *pubs[L], *secs[L];
    const uint8_t *dp[L], *qp[L];
    for (unsigned i = 0; i < L; i++) {
        uint8_t t[NB];
        if (i < 6)
            special_scalar(d[i], i);
        else
            rng_scalar(d[i]);
        rng_scalar(t);
        ossl_pub(peer[i], t);
        dp[i] = d[i];
        qp[i] = peer[i];
        pubs[i] = pub[i];
        secs[i] = sec[i];
    }
    static const int valid[L] = {1, 0, 0, 0, 0, 1, 1, 1};
    mb8_status_t st = MB8__EC_API(public_key)(pubs, dp, g_scratch);
    mb8_status_t st2 = MB8__EC_API(ecdh)(secs, dp, qp, g_scratch);
    for (unsigned i = 0; i < L; i++) {
        assert_int_equal(scalar_valid(d[i]), valid[i]);
        if (!valid[i]) {
            expect_status("edge keygen", st, i, MB8_STATUS_BAD_INPUT);
            expect_status("edge ECDH", st2, i, MB8_STATUS_BAD_INPUT);
            expect_zero("edge keygen output", i, pub[i], NP);
            expect_zero("edge ECDH output", i, sec[i], NB);
            continue;
        }
        expect_status("edge keygen", st, i, MB8_STATUS_OK);
        expect_status("edge ECDH", st2, i, MB8_STATUS_OK);
        ossl_pub(w, d[i]);
        expect_bytes("edge keygen", i, pub[i], w, NP);
        assert_int_equal(ossl_ecdh(w, d[i], peer[i]), 1);
        expect_bytes("edge ECDH", i, sec[i], w, NB);
    }
    /* ECDSA: the special values as d (k random), then as k (d random) */
    for (unsigned as_k = 0; as_k < 2; as_k++) {
        uint8_t e[L][NB], other[L][NB], r[L][NB], s[L][NB], wr[NB], ws[NB];
        uint8_t *rp[L], *sp[L];
        const uint8_t *ep[L], *kp[L], *pp[L];
        for (unsigned i = 0; i < L; i++) {
            rng_bytes(e[i], NB);
            rng_scalar(other[i]);
            ep[i] = e[i];
            pp[i] = as_k ? other[i] : d[i];
            kp[i] = as_k ? d[i] : other[i];
            rp[i] = r[i];
            sp[i] = s[i];
        }
        memset(e[7], 0, NB); /* e = 0 is legal */
        mb8_status_t sst = MB8__EC_API(ecdsa_sign)(rp, sp, ep, pp, kp, g_scratch);
        for (unsigned i = 0; i < L; i++) {
            if (!valid[i]) {
                expect_status("edge sign", sst, i, MB8_STATUS_BAD_INPUT);
                expect_zero("edge sign r", i, r[i], NB);
                expect_zero("edge sign s", i, s[i], NB);
                continue;
            }
            expect_status("edge sign", sst, i, MB8_STATUS_OK);
            assert_int_equal(ossl_sign_k(wr, ws, e[i], pp[i], kp[i]), 1);
            expect_bytes("edge sign r", i, r[i], wr, NB);
            expect_bytes("edge sign s", i, s[i], ws, NB);
            assert_true(ossl_verify(r[i], s[i], e[i], pp[i]));
        }
    }
}

/* s = 0: e = -r d mod n gives s = 0 -> BAD_INPUT (only that lane). */
static void test_sign_zero_s(void **state)
{
    (void)state;
    rng_state = g_seed ^ 0x5005;
    uint8_t e[L][NB], d[L][NB], k[L][NB], r[L][NB], s[L][NB], wr[NB], ws[NB];
    uint8_t *rp[L], *sp[L];
    const uint8_t *ep[L], *dp[L], *kp[L];
    for (unsigned i = 0; i < L; i++) {
        rng_bytes(e[i], NB);
        rng_scalar(d[i]);
        rng_scalar(k[i]);
        ep[i] = e[i];
        dp[i] = d[i];
        kp[i] = k[i];
        rp[i] = r[i];
        sp[i] = s[i];
    }
    /* lane 2: e = n - (r d mod n) */
    ossl_sign_k(wr, ws, e[2], d[2], k[2]);
    {
        BN_CTX *ctx = BN_CTX_new();
        BIGNUM *rb = BN_bin2bn(wr, NB, NULL), *db = BN_bin2bn(d[2], NB, NULL), *t = BN_new();
        assert_int_equal(BN_mod_mul(t, rb, db, g_n, ctx), 1);
        assert_int_equal(BN_mod_sub(t, g_n, t, g_n, ctx), 1);
        assert_int_equal(BN_bn2binpad(t, e[2], NB), NB);
        BN_free(rb);
        BN_free(db);
        BN_free(t);
        BN_CTX_free(ctx);
    }
    assert_int_equal(ossl_sign_k(wr, ws, e[2], d[2], k[2]), 0);
    mb8_status_t st = MB8__EC_API(ecdsa_sign)(rp, sp, ep, dp, kp, g_scratch);
    for (unsigned i = 0; i < L; i++) {
        if (i == 2) {
            expect_status("s = 0", st, i, MB8_STATUS_BAD_INPUT);
            expect_zero("s = 0 r", i, r[i], NB);
            expect_zero("s = 0 s", i, s[i], NB);
            continue;
        }
        expect_status("s = 0 neighbour", st, i, MB8_STATUS_OK);
        assert_int_equal(ossl_sign_k(wr, ws, e[i], d[i], k[i]), 1);
        expect_bytes("s = 0 neighbour r", i, r[i], wr, NB);
        expect_bytes("s = 0 neighbour s", i, s[i], ws, NB);
    }
}

/* Invalid peer points mixed with valid ones. */
static void test_bad_points(void **state)
{
    (void)state;
    rng_state = g_seed ^ 0xbad;
    for (unsigned rot = 0; rot < (g_quick ? 1u : 8u); rot++) {
        uint8_t d[L][NB], q[L][NP], sec[L][NB], w[NB];
        uint8_t *secs[L];
        const uint8_t *dp[L], *qp[L];
        int want_ok[L];
        for (unsigned i = 0; i < L; i++) {
            uint8_t t[NB];
            rng_scalar(d[i]);
            rng_scalar(t);
            ossl_pub(q[i], t);
            dp[i] = d[i];
            qp[i] = q[i];
            secs[i] = sec[i];
            want_ok[i] = 1;
        }
        /* kinds 0..5 of bad point in lanes (kind + rot) % 8; lanes 6, 7 (rotated) stay valid */
        for (unsigned kind = 0; kind < 6; kind++) {
            unsigned i = (kind + rot) % L;
            want_ok[i] = 0;
            switch (kind) {
            case 0:
                q[i][NP - 1] ^= 1;
                break; /* y off by one bit: not on curve */
            case 1:
                q[i][0] = 0x02;
                break; /* compressed prefix */
            case 2:
                q[i][0] = 0x00;
                break; /* infinity prefix */
            case 3:
                memset(q[i] + 1, 0, NP - 1);
                break; /* (0, 0) */
            case 4:
                assert_int_equal(BN_bn2binpad(g_p, q[i] + 1, NB), NB);
                break; /* x = p */
            default: { /* y + p: y >= p, same residue */
                /* pick the point so that y + p < 2^(8 NB); else y = 2^(8 NB) - 1 */
                uint8_t yb[NB];
                BIGNUM *y = BN_bin2bn(q[i] + 1 + NB, NB, NULL);
                BN_add(y, y, g_p);
                if (BN_num_bytes(y) <= NB) {
                    BN_bn2binpad(y, yb, NB);
                    memcpy(q[i] + 1 + NB, yb, NB);
                } else {
                    memset(q[i] + 1 + NB, 0xff, NB); /* y = 2^(8 NB) - 1 >= p */
                }
                BN_free(y);
                break;
            }
            }
        }
        memset(sec, 0xAA, sizeof sec);
        mb8_status_t st = MB8__EC_API(ecdh)(secs, dp, qp, g_scratch);
        for (unsigned i = 0; i < L; i++) {
            int ok = ossl_ecdh(w, d[i], q[i]);
            assert_int_equal(ok, want_ok[i]);
            if (!ok) {
                expect_status("bad point", st, i, MB8_STATUS_BAD_INPUT);
                expect_zero("bad point output", i, sec[i], NB);
            } else {
                expect_status("bad point neighbour", st, i, MB8_STATUS_OK);
                expect_bytes("bad point neighbour", i, sec[i], w, NB);
            }
        }
    }
}

/* NULL lanes, NULL outputs/inputs with a scalar, all lanes unused, outputs aliasing inputs. */
static void test_lane_bookkeeping(void **state)
{
    (void)state;
    rng_state = g_seed ^ 0x1a9e;
    uint8_t d[L][NB], q[L][NP], o[L][NP], w[NP];
    uint8_t *out[L];
    const uint8_t *dp[L], *qp[L];
    for (unsigned i = 0; i < L; i++) {
        uint8_t t[NB];
        rng_scalar(d[i]);
        rng_scalar(t);
        ossl_pub(q[i], t);
        out[i] = o[i];
        dp[i] = NULL;
        qp[i] = NULL;
    }
    memset(o, 0xAA, sizeof o);
    assert_int_equal(MB8__EC_API(ecdh)(out, dp, qp, g_scratch), 0x11111111u);
    assert_int_equal(MB8__EC_API(public_key)(out, dp, g_scratch), 0x11111111u);
    const uint8_t *np[L] = {0};
    uint8_t *nr[L] = {0};
    assert_int_equal(MB8__EC_API(ecdsa_sign)(nr, nr, np, dp, np, g_scratch), 0x11111111u);
    for (unsigned i = 0; i < L; i++)
        expect_untouched("NULL outputs", i, o[i], NP);

    /* ECDH: 0 ok, 1 unused, 2 peer NULL, 3 out NULL, others ok */
    for (unsigned i = 0; i < L; i++) {
        dp[i] = d[i];
        qp[i] = q[i];
    }
    dp[1] = NULL;
    qp[2] = NULL;
    out[3] = NULL;
    mb8_status_t st = MB8__EC_API(ecdh)(out, dp, qp, g_scratch);
    for (unsigned i = 0; i < L; i++) {
        unsigned want = i == 1               ? MB8_STATUS_UNUSED
                        : (i == 2 || i == 3) ? MB8_STATUS_BAD_INPUT
                                             : MB8_STATUS_OK;
        expect_status("mixed ECDH", st, i, want);
        if (want == MB8_STATUS_OK) {
            assert_int_equal(ossl_ecdh(w, d[i], q[i]), 1);
            expect_bytes("mixed ECDH", i, o[i], w, NB);
        } else if (i != 3) {
            expect_untouched("mixed ECDH", i, o[i], NP);
        }
    }
    out[3] = o[3];

    /* aliasing: ECDH output over the scalar; public key output over a 65-byte buffer
     * holding the scalar; signature r over the digest and s over the nonce */
    uint8_t buf[L][NP], want[L][NP];
    for (unsigned i = 0; i < L; i++) {
        memcpy(buf[i], d[i], NB);
        dp[i] = buf[i];
        qp[i] = q[i];
        out[i] = buf[i];
        assert_int_equal(ossl_ecdh(want[i], d[i], q[i]), 1);
    }
    assert_int_equal(MB8__EC_API(ecdh)(out, dp, qp, g_scratch), 0);
    for (unsigned i = 0; i < L; i++)
        expect_bytes("aliased ECDH", i, buf[i], want[i], NB);
    for (unsigned i = 0; i < L; i++) {
        memcpy(buf[i], d[i], NB);
        ossl_pub(want[i], d[i]);
    }
    assert_int_equal(MB8__EC_API(public_key)(out, dp, g_scratch), 0);
    for (unsigned i = 0; i < L; i++)
        expect_bytes("aliased public key", i, buf[i], want[i], NP);

    uint8_t e[L][NB], k[L][NB], wr[L][NB], ws[L][NB];
    uint8_t *rp[L], *sp[L];
    const uint8_t *ep[L], *kp[L];
    for (unsigned i = 0; i < L; i++) {
        rng_bytes(e[i], NB);
        rng_scalar(k[i]);
        assert_int_equal(ossl_sign_k(wr[i], ws[i], e[i], d[i], k[i]), 1);
        ep[i] = e[i];
        kp[i] = k[i];
        dp[i] = d[i];
        rp[i] = e[i];
        sp[i] = k[i];
    }
    assert_int_equal(MB8__EC_API(ecdsa_sign)(rp, sp, ep, dp, kp, g_scratch), 0);
    for (unsigned i = 0; i < L; i++) {
        expect_bytes("aliased r", i, e[i], wr[i], NB);
        expect_bytes("aliased s", i, k[i], ws[i], NB);
    }
}

/* ---- partial batches ---------------------------------------------------------------- */

/* Every lane count 1..7 (random positions), through the public API, against OpenSSL. */
static void test_partial_batches(void **state)
{
    (void)state;
    rng_state = g_seed ^ 0x9a27;
    for (unsigned used = 1; used < L; used++) {
        uint8_t d[L][NB], t[NB], q[L][NP], e[L][NB], k[L][NB], pub[L][NP], sec[L][NB];
        uint8_t r[L][NB], s[L][NB], w[NP], wr[NB], ws[NB];
        uint8_t *pubs[L], *secs[L], *rp[L], *sp[L];
        const uint8_t *dp[L], *qp[L], *ep[L], *kp[L];
        unsigned mask = 0;
        while ((unsigned)__builtin_popcount(mask) < used)
            mask |= 1u << (rng_next() % L);
        for (unsigned i = 0; i < L; i++) {
            rng_scalar(d[i]);
            rng_scalar(t);
            ossl_pub(q[i], t);
            rng_bytes(e[i], NB);
            rng_scalar(k[i]);
            dp[i] = (mask >> i) & 1 ? d[i] : NULL;
            qp[i] = q[i];
            ep[i] = e[i];
            kp[i] = k[i];
            pubs[i] = pub[i];
            secs[i] = sec[i];
            rp[i] = r[i];
            sp[i] = s[i];
        }
        memset(pub, 0xAA, sizeof pub);
        memset(sec, 0xAA, sizeof sec);
        memset(r, 0xAA, sizeof r);
        memset(s, 0xAA, sizeof s);
        mb8_status_t st1 = MB8__EC_API(public_key)(pubs, dp, g_scratch);
        mb8_status_t st2 = MB8__EC_API(ecdh)(secs, dp, qp, g_scratch);
        mb8_status_t st3 = MB8__EC_API(ecdsa_sign)(rp, sp, ep, dp, kp, g_scratch);
        for (unsigned i = 0; i < L; i++) {
            if (!((mask >> i) & 1)) {
                expect_status("partial keygen unused", st1, i, MB8_STATUS_UNUSED);
                expect_status("partial ECDH unused", st2, i, MB8_STATUS_UNUSED);
                expect_status("partial sign unused", st3, i, MB8_STATUS_UNUSED);
                expect_untouched("partial keygen unused", i, pub[i], NB);
                expect_untouched("partial ECDH unused", i, sec[i], NB);
                expect_untouched("partial sign unused r", i, r[i], NB);
                expect_untouched("partial sign unused s", i, s[i], NB);
                continue;
            }
            expect_status("partial keygen", st1, i, MB8_STATUS_OK);
            expect_status("partial ECDH", st2, i, MB8_STATUS_OK);
            expect_status("partial sign", st3, i, MB8_STATUS_OK);
            ossl_pub(w, d[i]);
            expect_bytes("partial keygen", i, pub[i], w, NP);
            assert_int_equal(ossl_ecdh(w, d[i], q[i]), 1);
            expect_bytes("partial ECDH", i, sec[i], w, NB);
            assert_int_equal(ossl_sign_k(wr, ws, e[i], d[i], k[i]), 1);
            expect_bytes("partial sign r", i, r[i], wr, NB);
            expect_bytes("partial sign s", i, s[i], ws, NB);
            assert_true(ossl_verify(r[i], s[i], e[i], d[i]));
        }
    }
}

/* ---- IFMA kernels against the portable reference ------------------------------------- */

/* A scalar for the kernel comparison: mostly random, often one of the edge values or a
 * pattern that stresses the signed-digit (Booth) recoding of the comb. */
static void pool_scalar(uint8_t d[NB])
{
    unsigned kind = (unsigned)(rng_next() % 16);
    switch (kind) {
    case 0:
        special_scalar(d, (unsigned)(rng_next() % 6));
        break;
    case 1: /* every nibble 8 (Booth digit -8 everywhere), random top byte */
        memset(d, 0x88, NB);
        d[0] = (uint8_t)rng_next();
        break;
    case 2: /* every nibble 7 or f (digits 8, or -1 / 0 with carries), random top byte */
        memset(d, rng_next() % 2 ? 0x77 : 0xff, NB);
        d[0] = (uint8_t)rng_next();
        break;
    case 3: /* small */
        memset(d, 0, NB);
        d[NB - 1] = (uint8_t)(rng_next() % 17);
        break;
    case 4: /* top bit set, rest sparse */
        memset(d, 0, NB);
        d[0] = 0x80;
        d[NB - 1 - rng_next() % NB] |= (uint8_t)rng_next();
        break;
    case 5: /* n - small */
        special_scalar(d, 0);
        d[NB - 1] = (uint8_t)(d[NB - 1] - rng_next() % 64);
        break;
    case 6: /* alternating nibbles */
        memset(d, rng_next() % 2 ? 0x0f : 0xf0, NB);
        break;
    case 7: /* every 7-bit group of the IFMA comb 0, 63, 64 or 127: its Booth digits 0, 32,
             * +-64, 64 and -1 */
        memset(d, 0, NB);
        for (unsigned w = 0; w < (8 * NB + 6) / 7; w++) {
            static const unsigned g[4] = {0x00, 0x3f, 0x40, 0x7f};
            unsigned v = g[rng_next() % 4];
            for (unsigned b = 0; b < 7; b++) {
                unsigned bit = 7 * w + b; /* little-endian bit position */
                if (bit < 8 * NB && ((v >> b) & 1))
                    d[NB - 1 - bit / 8] |= (uint8_t)(1u << (bit % 8));
            }
        }
        break;
    case 8: { /* a 5-bit pattern repeated (the ECDH windows): 10000 gives Booth digit -16
               * everywhere, 01111 +16, 11111 0 with carries */
        static const unsigned pat[] = {0x10, 0x0f, 0x1f, 0x00, 0x15};
        unsigned v = pat[rng_next() % 5];
        memset(d, 0, NB);
        for (int bit = 0; bit < 8 * NB; bit++)
            if ((v >> (bit % 5)) & 1)
                d[NB - 1 - bit / 8] |= (uint8_t)(1u << (bit % 8));
        break;
    }
    case 9: /* leading zero windows: random below 2^(8 * (1..NB-1)) */
        rng_bytes(d, NB);
        memset(d, 0, 1 + rng_next() % (NB - 1));
        break;
    default:
        rng_bytes(d, NB);
        break;
    }
}

/* A point: mostly valid, else off the curve, a bad prefix, or x or y >= p. */
static void pool_point(uint8_t q[NP])
{
    uint8_t t[NB];
    rng_scalar(t);
    ossl_pub(q, t);
    switch (rng_next() % 8) {
    case 0:
        q[1 + rng_next() % (NP - 1)] ^= (uint8_t)(1u << (rng_next() % 8));
        break;
    case 1:
        q[0] = (uint8_t)(rng_next() % 8);
        break;
    case 2:
        memset(q + 1 + (rng_next() % 2) * NB, 0xff, NB);
        break;
    case 3:
        rng_bytes(q + 1, NP - 1);
        break;
    default:
        break;
    }
}

/* Random inputs (edge scalars, invalid points, random lane subsets) through both kernels:
 * the same outputs byte for byte, the same status words, the unused lanes untouched. */
static void test_ifma_vs_reference(void **state)
{
    (void)state;
    if (!mb8_cpu_has_ifma()) {
        fprintf(stderr,
                "  (no AVX-512 IFMA kernel on this CPU or MB8_FORCE_PORTABLE=1: skipped)\n");
        skip();
    }
    rng_state = g_seed ^ 0x1f3a;
    int rounds = g_quick ? 4 : 150;
    for (int it = 0; it < rounds; it++) {
        uint8_t d[L][NB], q[L][NP], e[L][NB], k[L][NB];
        uint8_t o1[2][L][NP], o2[2][L][NB], r[2][L][NB], s[2][L][NB];
        unsigned mask = it % 3 == 0 ? 0xFFu : (unsigned)(rng_next() % 255) + 1;
        for (unsigned i = 0; i < L; i++) {
            pool_scalar(d[i]);
            pool_scalar(k[i]);
            pool_point(q[i]);
            rng_bytes(e[i], NB);
            if (rng_next() % 4 == 0)
                memset(e[i], 0xff, NB / 2 + 1); /* e >= n */
        }
        if (it % 7 == 3) { /* a lane with k = d: r = x(dG) */
            memcpy(k[it % L], d[it % L], NB);
        }
        mb8_status_t st[2][3] = {{0}};
        for (int kern = 0; kern < 2; kern++) {
            memset(o1[kern], 0xAA, sizeof o1[kern]);
            memset(o2[kern], 0xAA, sizeof o2[kern]);
            memset(r[kern], 0xAA, sizeof r[kern]);
            memset(s[kern], 0xAA, sizeof s[kern]);
            const uint8_t(*dc)[NB] = (const uint8_t(*)[NB])d;
            const uint8_t(*kc)[NB] = (const uint8_t(*)[NB])k;
            const uint8_t(*ec)[NB] = (const uint8_t(*)[NB])e;
            const uint8_t(*qc)[NP] = (const uint8_t(*)[NP])q;
            if (kern == 0) {
                st[0][0] = MB8__EC_FN(public_key_ref)(o1[0], dc, mask);
                st[0][1] = MB8__EC_FN(ecdh_ref)(o2[0], dc, qc, mask);
                st[0][2] = MB8__EC_FN(ecdsa_sign_ref)(r[0], s[0], ec, dc, kc, mask);
            } else {
                st[1][0] = MB8__EC_FN(public_key_ifma)(o1[1], dc, mask, g_scratch);
                st[1][1] = MB8__EC_FN(ecdh_ifma)(o2[1], dc, qc, mask, g_scratch);
                st[1][2] = MB8__EC_FN(ecdsa_sign_ifma)(r[1], s[1], ec, dc, kc, mask, g_scratch);
            }
        }
        for (int f = 0; f < 3; f++) {
            if (st[0][f] != st[1][f]) {
                fprintf(stderr,
                        "kernel %d: IFMA status 0x%08x, reference 0x%08x, mask 0x%02x "
                        "(%s=%llu)\n",
                        f, (unsigned)st[1][f], (unsigned)st[0][f], mask, g_seed_var,
                        (unsigned long long)g_seed);
                fail();
            }
        }
        for (unsigned i = 0; i < L; i++) {
            expect_bytes("IFMA vs ref keygen", i, o1[1][i], o1[0][i], NP);
            expect_bytes("IFMA vs ref ECDH", i, o2[1][i], o2[0][i], NB);
            expect_bytes("IFMA vs ref ECDSA r", i, r[1][i], r[0][i], NB);
            expect_bytes("IFMA vs ref ECDSA s", i, s[1][i], s[0][i], NB);
            if (!((mask >> i) & 1)) { /* not written */
                expect_untouched("IFMA ECDH not written", i, o2[1][i], NB);
                expect_untouched("IFMA ECDSA r not written", i, r[1][i], NB);
                continue;
            }
            /* valid keygen lanes also against OpenSSL (the comb's Booth patterns) */
            if (mb8_status_lane(st[1][0], i) == MB8_STATUS_OK) {
                uint8_t w[NP];
                ossl_pub(w, d[i]);
                expect_bytes("IFMA keygen vs OpenSSL", i, o1[1][i], w, NP);
            }
        }
    }
}

/* The constant-time check (docs/constant-time.md): under valgrind memcheck (ctest ct_p256, ct_p384)
 * the private scalars and nonces are marked undefined, so any branch or memory index
 * derived from them is an error. An invalid scalar, an invalid point and an unused lane
 * are included, so the range checks and status masks are covered. Natively it is a plain
 * differential batch. */
/*
 * The split signature (mb8_<curve>_ecdsa_sign_setup + _complete): byte for byte the signature
 * of mb8_<curve>_ecdsa_sign (and OpenSSL's) for the same nonce; the setups of the IFMA and the
 * portable kernel are identical; a failed setup (k = 0, k = n) fails its lane only, and its
 * zeros make the completion fail too; a bad private key fails at completion.
 */
static void test_sign_setup_complete(void **state)
{
    (void)state;
    int rounds = g_quick ? 2 : 40;
    rng_state = g_seed ^ 0x5e;
    for (int it = 0; it < rounds; it++) {
        uint8_t e[L][NB], d[L][NB], k[L][NB], r[L][NB], s[L][NB], r2[L][NB], s2[L][NB];
        uint8_t su[L][NSETUP], su_ref[L][NSETUP];
        uint8_t *rp[L], *sp[L], *r2p[L], *s2p[L], *sup[L];
        const uint8_t *ep[L], *dp[L], *kp[L], *supc[L];
        for (unsigned i = 0; i < L; i++) {
            rng_bytes(e[i], NB);
            rng_scalar(d[i]);
            rng_scalar(k[i]);
            ep[i] = e[i];
            dp[i] = d[i];
            kp[i] = k[i];
            rp[i] = r[i];
            sp[i] = s[i];
            r2p[i] = r2[i];
            s2p[i] = s2[i];
            sup[i] = su[i];
            supc[i] = su[i];
        }
        if (it == 0) {
            memset(k[2], 0, NB);                               /* k = 0: setup fails */
            assert_int_equal(BN_bn2binpad(g_n, k[5], NB), NB); /* k = n */
            memset(d[6], 0, NB);                               /* d = 0: completion fails */
        }
        mb8_status_t st1 = MB8__EC_API(ecdsa_sign)(rp, sp, ep, dp, kp, g_scratch);
        mb8_status_t st2 = MB8__EC_API(ecdsa_sign_setup)(sup, kp, g_scratch);
        mb8_status_t st3 = MB8__EC_API(ecdsa_sign_complete)(r2p, s2p, ep, dp, supc);
        /* both kernels' setups, directly */
        assert_int_equal(MB8__EC_FN(ecdsa_setup_ref)(su_ref, (const uint8_t(*)[NB])k, 0xFF), st2);
        if (mb8_cpu_has_ifma()) {
            uint8_t su_ifma[L][NSETUP];
            assert_int_equal(
                MB8__EC_FN(ecdsa_setup_ifma)(su_ifma, (const uint8_t(*)[NB])k, 0xFF, g_scratch),
                st2);
            assert_memory_equal(su_ifma, su_ref, sizeof su_ref);
        }
        assert_memory_equal(su, su_ref, sizeof su_ref);
        for (unsigned i = 0; i < L; i++) {
            unsigned want1 = mb8_status_lane(st1, i);
            if (it == 0 && (i == 2 || i == 5)) {
                expect_status("setup of a bad nonce", st2, i, MB8_STATUS_BAD_INPUT);
                static const uint8_t zeros[NSETUP];
                expect_bytes("failed setup", i, su[i], zeros, NSETUP);
            } else {
                expect_status("setup", st2, i, MB8_STATUS_OK);
            }
            expect_status("complete vs sign", st3, i, want1);
            if (want1 == MB8_STATUS_OK) {
                expect_bytes("split r", i, r2[i], r[i], NB);
                expect_bytes("split s", i, s2[i], s[i], NB);
            } else {
                expect_zero("failed completion r", i, r2[i], NB);
                expect_zero("failed completion s", i, s2[i], NB);
            }
        }
        if (it == 0)
            expect_status("complete with d = 0", st3, 6, MB8_STATUS_BAD_INPUT);
    }
}

/* The lanes of a constant-time call: BAD_INPUT for the lanes in bad, UNUSED for those in
 * unused, else OK with got[i] == want[i] (the first n bytes of rows of `row` bytes). */
static void expect_ct_lanes(const char *what, mb8_status_t st, unsigned bad, unsigned unused,
                            const void *got, const void *want, size_t row, size_t n)
{
    for (unsigned i = 0; i < L; i++) {
        if ((bad >> i) & 1)
            expect_status(what, st, i, MB8_STATUS_BAD_INPUT);
        else if ((unused >> i) & 1)
            expect_status(what, st, i, MB8_STATUS_UNUSED);
        else {
            expect_status(what, st, i, MB8_STATUS_OK);
            expect_bytes(what, i, (const uint8_t *)got + i * row, (const uint8_t *)want + i * row,
                         n);
        }
    }
}

static void test_constant_time_memcheck(void **state)
{
    (void)state;
    rng_state = g_seed ^ 0xc7;
    uint8_t d[L][NB], q[L][NP], o[L][NP], w[L][NP];
    uint8_t *out[L];
    const uint8_t *dp[L], *qp[L];
    for (unsigned i = 0; i < L; i++) {
        uint8_t t[NB];
        rng_scalar(d[i]);
        rng_scalar(t);
        ossl_pub(q[i], t);
        dp[i] = d[i];
        qp[i] = q[i];
        out[i] = o[i];
    }
    special_scalar(d[1], 1); /* n: BAD_INPUT */
    q[4][40] ^= 1;           /* not on the curve: BAD_INPUT */
    dp[6] = NULL;            /* unused */
    for (unsigned i = 0; i < L; i++)
        if (i != 1 && i != 4 && i != 6)
            assert_int_equal(ossl_ecdh(w[i], d[i], q[i]), 1);
    VALGRIND_MAKE_MEM_UNDEFINED(d, sizeof d);
    mb8_status_t st = MB8__EC_API(ecdh)(out, dp, qp, g_scratch);
    VALGRIND_MAKE_MEM_DEFINED(&st, sizeof st);
    VALGRIND_MAKE_MEM_DEFINED(o, sizeof o);
    VALGRIND_MAKE_MEM_DEFINED(d, sizeof d);
    expect_ct_lanes("ct ECDH", st, 1u << 1 | 1u << 4, 1u << 6, o, w, NP, NB);

    /* key generation */
    for (unsigned i = 0; i < L; i++)
        if (i != 1 && i != 6)
            ossl_pub(w[i], d[i]);
    VALGRIND_MAKE_MEM_UNDEFINED(d, sizeof d);
    st = MB8__EC_API(public_key)(out, dp, g_scratch);
    VALGRIND_MAKE_MEM_DEFINED(&st, sizeof st);
    VALGRIND_MAKE_MEM_DEFINED(o, sizeof o);
    VALGRIND_MAKE_MEM_DEFINED(d, sizeof d);
    expect_ct_lanes("ct pub", st, 1u << 1, 1u << 6, o, w, NP, NP);

    /* ECDSA: d, k and the digest undefined; lane 1 has d = n (BAD_INPUT), lane 3 k = 0 */
    uint8_t e[L][NB], k[L][NB], r[L][NB], s[L][NB], wr[L][NB], ws[L][NB];
    uint8_t *rp[L], *sp[L];
    const uint8_t *ep[L], *kp[L];
    for (unsigned i = 0; i < L; i++) {
        rng_bytes(e[i], NB);
        rng_scalar(k[i]);
        ep[i] = e[i];
        kp[i] = k[i];
        rp[i] = r[i];
        sp[i] = s[i];
    }
    memset(k[3], 0, NB);
    for (unsigned i = 0; i < L; i++)
        if (i != 1 && i != 3 && i != 6)
            assert_int_equal(ossl_sign_k(wr[i], ws[i], e[i], d[i], k[i]), 1);
    VALGRIND_MAKE_MEM_UNDEFINED(d, sizeof d);
    VALGRIND_MAKE_MEM_UNDEFINED(k, sizeof k);
    VALGRIND_MAKE_MEM_UNDEFINED(e, sizeof e);
    st = MB8__EC_API(ecdsa_sign)(rp, sp, ep, dp, kp, g_scratch);
    VALGRIND_MAKE_MEM_DEFINED(&st, sizeof st);
    VALGRIND_MAKE_MEM_DEFINED(r, sizeof r);
    VALGRIND_MAKE_MEM_DEFINED(s, sizeof s);
    VALGRIND_MAKE_MEM_DEFINED(d, sizeof d);
    VALGRIND_MAKE_MEM_DEFINED(k, sizeof k);
    VALGRIND_MAKE_MEM_DEFINED(e, sizeof e);
    expect_ct_lanes("ct sign r", st, 1u << 1 | 1u << 3, 1u << 6, r, wr, NB, NB);
    expect_ct_lanes("ct sign s", st, 1u << 1 | 1u << 3, 1u << 6, s, ws, NB, NB);
}

/* test_scratch's inputs (valid keys, nonces, digests and peer points) and the outputs of
 * one round of the scratch-taking entry points. */
struct scratch_in {
    uint8_t d[L][NB], k[L][NB], e[L][NB], q[L][NP];
    const uint8_t *dp[L], *kp[L], *ep[L], *qp[L];
};
struct scratch_out {
    uint8_t pub[L][NP], sec[L][NB], r[L][NB], s[L][NB], su[L][NSETUP];
};

/* public_key, ecdh, ecdsa_sign and ecdsa_sign_setup on in with the scratch given, into o;
 * each must return want. */
static void scratch_round(struct scratch_out *o, const struct scratch_in *in, void *scratch,
                          mb8_status_t want)
{
    uint8_t *po[L], *so[L], *ro[L], *sso[L], *suo[L];
    for (unsigned j = 0; j < L; j++) {
        po[j] = o->pub[j];
        so[j] = o->sec[j];
        ro[j] = o->r[j];
        sso[j] = o->s[j];
        suo[j] = o->su[j];
    }
    assert_int_equal(MB8__EC_API(public_key)(po, in->dp, scratch), want);
    assert_int_equal(MB8__EC_API(ecdh)(so, in->dp, in->qp, scratch), want);
    assert_int_equal(MB8__EC_API(ecdsa_sign)(ro, sso, in->ep, in->dp, in->kp, scratch), want);
    assert_int_equal(MB8__EC_API(ecdsa_sign_setup)(suo, in->kp, scratch), want);
}

/* The caller's scratch: NULL or misaligned fails every used lane (outputs untouched) on
 * every kernel; a scratch full of garbage gives the same results as a zeroed one; after
 * a call the scratch holds no secret (the kernels wipe their tables: all zero again). */
static void test_scratch(void **state)
{
    (void)state;
    struct scratch_in in;
    struct scratch_out out[2];
    static alignas(MB8_SCRATCH_ALIGN) uint8_t zero[65536];

    assert_true(MB8__EC_API(scratch_size)() <= sizeof g_scratch);
    assert_int_equal(MB8__EC_API(scratch_size)() % 8, 0);
    rng_state = g_seed ^ 0x5c7a;
    for (unsigned j = 0; j < L; j++) {
        uint8_t t[NB];
        /* cppcheck-suppress uninitvar ; rng_scalar writes in.d[j] */
        rng_scalar(in.d[j]);
        rng_scalar(in.k[j]);
        rng_scalar(in.e[j]);
        rng_scalar(t);
        ossl_pub(in.q[j], t);
        in.dp[j] = in.d[j];
        in.kp[j] = in.k[j];
        in.ep[j] = in.e[j];
        in.qp[j] = in.q[j];
    }
    /* unusable scratch: every lane BAD_INPUT, nothing written */
    void *bad[2] = {NULL, g_scratch + 8};
    for (int b = 0; b < 2; b++) {
        memset(&out[0], 0xAA, sizeof out[0]);
        scratch_round(&out[0], &in, bad[b], 0x22222222u);
        for (size_t i = 0; i < sizeof out[0]; i++)
            assert_int_equal(((const uint8_t *)&out[0])[i], 0xAA);
    }
    /* garbage vs zeroed scratch: the same outputs; the zeroed one is zero again after */
    memset(g_scratch, 0x5A, sizeof g_scratch);
    scratch_round(&out[0], &in, g_scratch, 0);
    memset(zero, 0, sizeof zero);
    scratch_round(&out[1], &in, zero, 0);
    assert_memory_equal(&out[0], &out[1], sizeof out[0]);
    for (size_t i = 0; i < sizeof zero; i++)
        if (zero[i] != 0)
            fail_msg("scratch byte %zu not wiped (%02x)", i, zero[i]);
    /* the results are right, too */
    for (unsigned j = 0; j < L; j++) {
        uint8_t w[NP];
        ossl_pub(w, in.d[j]);
        expect_bytes("public key with caller scratch", j, out[1].pub[j], w, NP);
    }
    memset(g_scratch, 0, sizeof g_scratch);
}

int main(void)
{
    diff_init(STR(MB8__EC) "_diff_test", ENV);
    char name[16], md[16];
    snprintf(name, sizeof name, "P-%d", 8 * NB);
    snprintf(md, sizeof md, "SHA%d", 8 * NB);
    g_nid = EC_curve_nist2nid(name);
    g_md = EVP_get_digestbyname(md);
    g_group = EC_GROUP_new_by_curve_name(g_nid);
    g_p = BN_new();
    if (g_nid == NID_undef || g_md == NULL || g_group == NULL || g_p == NULL ||
        EC_GROUP_get_curve(g_group, g_p, NULL, NULL, NULL) != 1) {
        fprintf(stderr, "%s or %s: not in this OpenSSL\n", name, md);
        return 1;
    }
    g_n = BN_dup(EC_GROUP_get0_order(g_group));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scratch),
        cmocka_unit_test(test_known_answers),
        cmocka_unit_test(test_random_public_key_and_ecdh),
        cmocka_unit_test(test_random_ecdsa),
        cmocka_unit_test(test_edge_scalars),
        cmocka_unit_test(test_sign_zero_s),
        cmocka_unit_test(test_bad_points),
        cmocka_unit_test(test_lane_bookkeeping),
        cmocka_unit_test(test_constant_time_memcheck),
        cmocka_unit_test(test_partial_batches),
        cmocka_unit_test(test_ifma_vs_reference),
        cmocka_unit_test(test_sign_setup_complete),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    BN_free(g_n);
    BN_free(g_p);
    EC_GROUP_free(g_group);
    return rc;
}

#endif
