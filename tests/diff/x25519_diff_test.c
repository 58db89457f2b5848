/*
 * mb8 X25519 (mb8/x25519.h) against the RFC 7748 vectors and OpenSSL's X25519.
 *
 * Known answers go 8 different vectors to a call, rotated through the lanes; random inputs
 * are checked lane by lane against EVP_PKEY_derive / EVP_PKEY_get_raw_public_key. A failure
 * prints the seed (X25519_DIFF_SEED=<seed> repeats the run) and the lane.
 * X25519_DIFF_QUICK=1 shortens every loop (for valgrind).
 *
 * The public API runs whichever kernel mb8_cpu_has_ifma() selects: CTest runs this binary
 * twice, as diff_x25519 (the IFMA kernel on an IFMA machine) and as diff_x25519_portable
 * (MB8_FORCE_PORTABLE=1). test_ifma_vs_reference calls both kernels directly (skipped
 * without IFMA).
 */
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
#include <openssl/err.h>
#include <openssl/evp.h>

#include "mb8/cpu.h"
#include "mb8/status.h"
#include "mb8/x25519.h"
#include "x25519/x25519_internal.h" /* the kernels, for the IFMA-vs-reference comparison */

#include "diff_util.h"
#include "memcheck.h"

/* mb8's scratch for the elliptic-curve calls (mb8/status.h; one call at a time) */
static alignas(MB8_SCRATCH_ALIGN) uint8_t g_scratch[65536];

#define N MB8_X25519_BYTES


/* ---- helpers ---------------------------------------------------------------------- */

/* OpenSSL's X25519(k, u): 1 and out on success, 0 when derive fails (all-zero result). */
static int ossl_x25519(uint8_t out[N], const uint8_t k[N], const uint8_t u[N])
{
    EVP_PKEY *priv = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, k, N);
    EVP_PKEY *peer = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, NULL, u, N);
    assert_non_null(priv);
    assert_non_null(peer);
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(priv, NULL);
    assert_non_null(ctx);
    assert_int_equal(EVP_PKEY_derive_init(ctx), 1);
    assert_int_equal(EVP_PKEY_derive_set_peer_ex(ctx, peer, 0), 1);
    size_t len = N;
    int ok = EVP_PKEY_derive(ctx, out, &len) == 1;
    if (ok)
        assert_int_equal(len, N);
    ERR_clear_error();
    EVP_PKEY_CTX_free(ctx);
    EVP_PKEY_free(peer);
    EVP_PKEY_free(priv);
    return ok;
}

static void ossl_public_key(uint8_t out[N], const uint8_t k[N])
{
    EVP_PKEY *priv = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, k, N);
    assert_non_null(priv);
    size_t len = N;
    assert_int_equal(EVP_PKEY_get_raw_public_key(priv, out, &len), 1);
    assert_int_equal(len, N);
    EVP_PKEY_free(priv);
}

/* One mb8_x25519 batch: scalars, points, outputs and the lane pointers to them. */
struct xbatch {
    uint8_t k[8][N], u[8][N], o[8][N];
    const uint8_t *kp[8], *up[8];
    uint8_t *out[8];
};

/* Random scalars and points (rng_bytes) in every lane, all lanes used, outputs 0xAA. */
static void xbatch_random(struct xbatch *b)
{
    for (unsigned i = 0; i < 8; i++) {
        /* cppcheck-suppress uninitvar ; rng_bytes only writes b->k[i] (and b->u[i]) */
        rng_bytes(b->k[i], N);
        rng_bytes(b->u[i], N); /* half of them have bit 255 set */
        b->kp[i] = b->k[i];
        b->up[i] = b->u[i];
        b->out[i] = b->o[i];
    }
    memset(b->o, 0xAA, sizeof b->o);
}

static mb8_status_t xbatch_run(struct xbatch *b)
{
    return mb8_x25519(b->out, b->kp, b->up, g_scratch);
}

/* Fails the test when lane i's output o is not the 0xAA it was filled with. */
static void expect_untouched(const char *what, unsigned i, const uint8_t o[N])
{
    uint8_t aa[N];
    memset(aa, 0xAA, N);
    expect_bytes(what, i, o, aa, N);
}

/* Lane i of a mb8_x25519 call (status st, output o filled with 0xAA before) against
 * OpenSSL's X25519(k, u): with no scalar (k NULL) UNUSED and o untouched; else OK and
 * OpenSSL's result, or ZERO_RESULT and all zero where OpenSSL's derive fails. Returns
 * whether OpenSSL's derive succeeded (0 for an unused lane). */
static int check_lane(const char *what, mb8_status_t st, unsigned i, const uint8_t o[N],
                      const uint8_t *k, const uint8_t *u)
{
    uint8_t w[N] = {0};
    if (k == NULL) {
        expect_status(what, st, i, MB8_STATUS_UNUSED);
        expect_untouched(what, i, o);
        return 0;
    }
    int ok = ossl_x25519(w, k, u);
    expect_status(what, st, i, ok ? MB8_STATUS_OK : MB8_STATUS_ZERO_RESULT);
    if (!ok)
        memset(w, 0, N);
    expect_bytes(what, i, o, w, N);
    return ok;
}

/* ---- RFC 7748 known answers ------------------------------------------------------- */

/* (scalar, u, X25519(scalar, u)); the last one is filled in from OpenSSL at run time. */
static const char *const KAT[8][3] = {
    /* §5.2, first vector */
    {"a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
     "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
     "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552"},
    /* §5.2, second vector (u has its top bit set) */
    {"4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d",
     "e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493",
     "95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957"},
    /* §5.2, iterated, after 1 iteration: X25519(9, 9) */
    {"0900000000000000000000000000000000000000000000000000000000000000",
     "0900000000000000000000000000000000000000000000000000000000000000",
     "422c8e7a6227d7bca1350b3e2bb7279f7897b87bb6854b783c60e80311ae3079"},
    /* §6.1: Alice's public key */
    {"77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a",
     "0900000000000000000000000000000000000000000000000000000000000000",
     "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"},
    /* §6.1: Bob's public key */
    {"5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb",
     "0900000000000000000000000000000000000000000000000000000000000000",
     "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"},
    /* §6.1: Alice's shared secret */
    {"77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a",
     "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f",
     "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742"},
    /* §6.1: Bob's shared secret */
    {"5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb",
     "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a",
     "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742"},
    /* the first vector's scalar with the second vector's point (answer from OpenSSL) */
    {"a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
     "e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493", NULL},
};

static uint8_t kat_k[8][N], kat_u[8][N], kat_out[8][N];

static void load_kats(void)
{
    for (int j = 0; j < 8; j++) {
        unhex(kat_k[j], N, KAT[j][0]);
        unhex(kat_u[j], N, KAT[j][1]);
        if (KAT[j][2] != NULL) {
            unhex(kat_out[j], N, KAT[j][2]);
            uint8_t o[N];
            assert_int_equal(ossl_x25519(o, kat_k[j], kat_u[j]), 1);
            expect_bytes("KAT vs OpenSSL", (unsigned)j, o, kat_out[j], N);
        } else {
            assert_int_equal(ossl_x25519(kat_out[j], kat_k[j], kat_u[j]), 1);
        }
    }
}

/* All 8 rotations: vector j in lane (j + r) % 8. */
static void test_rfc7748_vectors_rotated(void **state)
{
    load_kats();
    for (unsigned r = 0; r < 8; r++) {
        uint8_t o[8][N];
        uint8_t *out[8];
        const uint8_t *k[8], *u[8];
        for (unsigned j = 0; j < 8; j++) {
            unsigned lane = (j + r) % 8;
            k[lane] = kat_k[j];
            u[lane] = kat_u[j];
            out[lane] = o[lane];
        }
        memset(o, 0xAA, sizeof o);
        mb8_status_t st = mb8_x25519(out, k, u, g_scratch);
        assert_int_equal(st, 0);
        for (unsigned j = 0; j < 8; j++)
            expect_bytes("RFC 7748 vector", (j + r) % 8, o[(j + r) % 8], kat_out[j], N);
    }
}

/* Public keys: the §6.1 keys, 9 (-> the 1-iteration value) and random scalars, rotated. */
static void test_public_key_vectors_and_random(void **state)
{
    uint8_t k[8][N], want[8][N];
    load_kats();
    memcpy(k[0], kat_k[3], N);
    memcpy(want[0], kat_out[3], N); /* Alice */
    memcpy(k[1], kat_k[4], N);
    memcpy(want[1], kat_out[4], N); /* Bob */
    memcpy(k[2], kat_k[2], N);
    memcpy(want[2], kat_out[2], N); /* 9 */
    rng_state = g_seed ^ 0x5151;
    for (unsigned j = 3; j < 8; j++) {
        rng_bytes(k[j], N);
        ossl_public_key(want[j], k[j]);
    }
    for (unsigned r = 0; r < 8; r++) {
        uint8_t o[8][N];
        uint8_t *out[8];
        const uint8_t *kp[8];
        for (unsigned j = 0; j < 8; j++) {
            kp[(j + r) % 8] = k[j];
            out[(j + r) % 8] = o[(j + r) % 8];
        }
        assert_int_equal(mb8_x25519_public_key(out, kp, g_scratch), 0);
        for (unsigned j = 0; j < 8; j++)
            expect_bytes("public key", (j + r) % 8, o[(j + r) % 8], want[j], N);
    }
    /* random batches with random unused lanes */
    int rounds = g_quick ? 4 : 256;
    for (int it = 0; it < rounds; it++) {
        uint8_t kk[8][N], o[8][N], w[N];
        uint8_t *out[8];
        const uint8_t *kp[8];
        for (unsigned i = 0; i < 8; i++) {
            rng_bytes(kk[i], N);
            kp[i] = (rng_next() & 7) == 0 ? NULL : kk[i];
            out[i] = o[i];
        }
        memset(o, 0xAA, sizeof o);
        mb8_status_t st = mb8_x25519_public_key(out, kp, g_scratch);
        for (unsigned i = 0; i < 8; i++) {
            if (kp[i] == NULL) {
                expect_status("public key unused", st, i, MB8_STATUS_UNUSED);
                expect_untouched("public key unused", i, o[i]);
                continue;
            }
            expect_status("public key", st, i, MB8_STATUS_OK);
            ossl_public_key(w, kk[i]);
            expect_bytes("public key random", i, o[i], w, N);
        }
    }
}

/* §5.2 iterated: k, u <- X25519(k, u), k. The chain moves one lane per call; the other 7
 * lanes carry the 7 other known answers (rotated too) and are checked every call. */
static void test_rfc7748_iterated(void **state)
{
    static const char ONE[] = "422c8e7a6227d7bca1350b3e2bb7279f7897b87bb6854b783c60e80311ae3079";
    static const char THOUSAND[] =
        "684cf59ba83309552800ef566f2f4d3c1c3887c49360e3875f2eb94d99532c51";
    uint8_t k[N] = {9}, u[N] = {9}, want[N];
    int iters = g_quick ? 20 : 1000;
    load_kats();
    for (int it = 0; it < iters; it++) {
        unsigned chain = (unsigned)it % 8;
        uint8_t o[8][N];
        uint8_t *out[8];
        const uint8_t *kp[8], *up[8];
        for (unsigned i = 0; i < 8; i++) {
            out[i] = o[i];
            unsigned j = (i + (unsigned)it) % 8; /* known answer j in lane i */
            kp[i] = kat_k[j];
            up[i] = kat_u[j];
        }
        kp[chain] = k;
        up[chain] = u;
        assert_int_equal(mb8_x25519(out, kp, up, g_scratch), 0);
        for (unsigned i = 0; i < 8; i++) {
            if (i != chain)
                expect_bytes("iterated: neighbour", i, o[i], kat_out[(i + (unsigned)it) % 8], N);
        }
        memcpy(u, k, N);
        memcpy(k, o[chain], N);
        if (it == 0) {
            unhex(want, N, ONE);
            expect_bytes("iterated x1", chain, k, want, N);
        }
    }
    if (iters == 1000) {
        unhex(want, N, THOUSAND);
        expect_bytes("iterated x1000", 999 % 8, k, want, N);
    }
}

/* ---- random differential ---------------------------------------------------------- */

static void test_random_vs_openssl(void **state)
{
    int rounds = g_quick ? 8 : 640; /* 8 lanes each: 5,120 lanes minus the unused ones */
    rng_state = g_seed;
    for (int it = 0; it < rounds; it++) {
        struct xbatch b;
        xbatch_random(&b);
        for (unsigned i = 0; i < 8; i++)
            if (rng_next() % 16 == 0)
                b.kp[i] = NULL;
        mb8_status_t st = xbatch_run(&b);
        for (unsigned i = 0; i < 8; i++)
            check_lane("random vs OpenSSL", st, i, b.o[i], b.kp[i], b.u[i]);
    }
}

/* ---- edge cases ------------------------------------------------------------------- */

/* The small-order u-coordinates (canonical and not) known to give an all-zero result. */
static const char *const SMALL_ORDER[] = {
    "0000000000000000000000000000000000000000000000000000000000000000", /* 0 */
    "0100000000000000000000000000000000000000000000000000000000000000", /* 1 */
    "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800", /* order 8 */
    "5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157", /* order 8 */
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", /* p - 1 */
    "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", /* p = 0 */
    "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", /* p + 1 = 1 */
    /* Lists for implementations that do not mask bit 255 also carry the order-8 points
     * plus p (cdeb..b880, 4c9c..11d7); with RFC 7748's masking those are other, ordinary
     * points (OpenSSL agrees), so they are not here. Each entry is also tried with bit
     * 255 set. */
};
#define N_SMALL (sizeof SMALL_ORDER / sizeof SMALL_ORDER[0])

static void test_small_order_points(void **state)
{
    /* Each small-order point, with and without bit 255, in every lane, next to 7 valid
     * lanes; the zero lane must not disturb its neighbours. */
    rng_state = g_seed ^ 0xbad;
    for (unsigned s = 0; s < 2 * N_SMALL; s++) {
        uint8_t bad[N];
        unhex(bad, N, SMALL_ORDER[s % N_SMALL]);
        if (s >= N_SMALL)
            bad[31] ^= 0x80;
        for (unsigned lane = 0; lane < 8; lane += (g_quick ? 7 : 1)) {
            struct xbatch b;
            xbatch_random(&b);
            b.up[lane] = bad;
            mb8_status_t st = xbatch_run(&b);
            /* OpenSSL rejects it too: ZERO_RESULT, an all-zero output */
            assert_int_equal(check_lane("small order", st, lane, b.o[lane], b.k[lane], bad), 0);
            for (unsigned i = 0; i < 8; i++)
                if (i != lane)
                    assert_int_equal(
                        check_lane("small order neighbour", st, i, b.o[i], b.k[i], b.u[i]), 1);
        }
    }
}

/* u >= p (non-canonical, RFC 7748 §5 "MUST accept") and u with bit 255 set: the same
 * result as the reduced / masked value, and as OpenSSL. */
static void test_noncanonical_and_top_bit(void **state)
{
    rng_state = g_seed ^ 0x7777;
    /* p + d for d = 0..18 (all of [p, 2^255)), each also with bit 255 set: 38 points */
    uint8_t pts[38][N], canon[38][N];
    for (unsigned d = 0; d < 19; d++) {
        uint8_t *x = pts[d];
        memset(x, 0xff, N);
        x[0] = (uint8_t)(0xed + d); /* 0xed + d <= 0xff: no carry */
        x[31] = 0x7f;
        memset(canon[d], 0, N);
        canon[d][0] = (uint8_t)d;
        memcpy(pts[19 + d], x, N);
        pts[19 + d][31] |= 0x80;
        memcpy(canon[19 + d], canon[d], N);
    }
    for (unsigned base = 0; base < 38; base += 8) {
        uint8_t k[8][N], o[8][N], oc[8][N];
        uint8_t *out[8], *outc[8];
        const uint8_t *kp[8], *up[8], *uc[8];
        for (unsigned i = 0; i < 8; i++) {
            unsigned j = (base + i) % 38;
            rng_bytes(k[i], N);
            kp[i] = k[i];
            up[i] = pts[j];
            uc[i] = canon[j];
            out[i] = o[i];
            outc[i] = oc[i];
        }
        mb8_status_t st = mb8_x25519(out, kp, up, g_scratch);
        mb8_status_t stc = mb8_x25519(outc, kp, uc, g_scratch);
        assert_int_equal(st, stc);
        for (unsigned i = 0; i < 8; i++) {
            unsigned j = (base + i) % 38;
            /* p + 0 = 0 and p + 1 = 1 are of small order */
            assert_int_equal(check_lane("non-canonical vs OpenSSL", st, i, o[i], k[i], pts[j]),
                             j % 19 >= 2);
            expect_bytes("non-canonical vs canonical", i, o[i], oc[i], N);
        }
    }
    /* random u with bit 255 set vs the same u with it cleared */
    for (int it = 0; it < (g_quick ? 1 : 16); it++) {
        struct xbatch b1, b0; /* the same scalars; u with bit 255 set, and cleared */
        xbatch_random(&b1);
        xbatch_random(&b0);
        for (unsigned i = 0; i < 8; i++) {
            b1.u[i][31] |= 0x80;
            memcpy(b0.u[i], b1.u[i], N);
            b0.u[i][31] &= 0x7f;
            b0.kp[i] = b1.k[i];
        }
        assert_int_equal(xbatch_run(&b1), 0);
        assert_int_equal(xbatch_run(&b0), 0);
        for (unsigned i = 0; i < 8; i++)
            expect_bytes("top bit", i, b1.o[i], b0.o[i], N);
    }
}

/* ---- partial batches, several small-order lanes ------------------------------------ */

/* Every lane pattern: each of the 255 non-empty masks (16 in quick mode) with random
 * scalars and points, about a quarter of the used lanes on a (random) small-order point;
 * every used lane checked against OpenSSL, every unused lane untouched. */
static void test_partial_batches_vs_openssl(void **state)
{
    rng_state = g_seed ^ 0xfeed;
    for (unsigned m = 1; m < 256; m += (g_quick ? 17 : 1)) {
        struct xbatch b;
        xbatch_random(&b);
        for (unsigned i = 0; i < 8; i++) {
            if ((rng_next() & 3) == 0) {
                unhex(b.u[i], N, SMALL_ORDER[rng_next() % N_SMALL]);
                b.u[i][31] ^= (uint8_t)(rng_next() & 0x80);
            }
            if (!(m >> i & 1))
                b.kp[i] = NULL;
        }
        mb8_status_t st = xbatch_run(&b);
        for (unsigned i = 0; i < 8; i++)
            check_lane("partial vs OpenSSL", st, i, b.o[i], b.kp[i], b.u[i]);
    }
}

/* ---- the IFMA kernel against the reference kernel, directly ------------------------ */

/* Inputs that stress the limb bounds: all-ones and all-zero scalars and points, p - 1,
 * p .. 2^255 - 1 (non-canonical), bit 255 set, single bits, then random bytes. */
static void edge_bytes(uint8_t b[N], unsigned kind)
{
    switch (kind % 8) {
    case 0:
        memset(b, 0xff, N);
        break;
    case 1:
        memset(b, 0, N);
        b[rng_next() % N] = (uint8_t)(1u << (rng_next() % 8));
        break;
    case 2: /* p - 1 + d, d in 0..19 */
        memset(b, 0xff, N);
        b[0] = (uint8_t)(0xec + rng_next() % 20);
        b[31] = 0x7f;
        break;
    case 3: /* 2^255 - 2^k patterns */
        memset(b, 0xff, N);
        b[31] = 0x7f;
        memset(b, 0, rng_next() % N);
        break;
    case 4: /* random with many 0xff limbs */
        rng_bytes(b, N);
        for (int i = 0; i < N; i++)
            if (rng_next() & 1)
                b[i] = 0xff;
        break;
    default:
        rng_bytes(b, N);
        break;
    }
}

static void test_ifma_vs_reference(void **state)
{
    if (!mb8_cpu_has_ifma()) {
        fprintf(stderr, "  (no AVX-512 IFMA or MB8_FORCE_PORTABLE=1: skipped)\n");
        skip();
    }
    rng_state = g_seed ^ 0x1f3a;
    int rounds = g_quick ? 16 : 2000;
    for (int it = 0; it < rounds; it++) {
        uint8_t k[8][N], u[8][N], o1[8][N], o2[8][N];
        unsigned mask = (unsigned)(rng_next() & 0xff);
        if (it % 4 != 0)
            mask = 0xff;
        if (mask == 0)
            mask = 1;
        for (unsigned i = 0; i < 8; i++) {
            unsigned kind = (unsigned)(rng_next() % 16); /* half edge cases, half random */
            edge_bytes(k[i], kind);
            edge_bytes(u[i], (unsigned)(rng_next() % 16));
        }
        memset(o1, 0xAA, sizeof o1);
        memset(o2, 0xAA, sizeof o2);
        mb8__x25519_ladder52_ifma(o1, (const uint8_t(*)[N])k, (const uint8_t(*)[N])u, mask);
        mb8__x25519_ladder51_ref(o2, (const uint8_t(*)[N])k, (const uint8_t(*)[N])u, mask);
        for (unsigned i = 0; i < 8; i++)
            expect_bytes("IFMA vs reference", i, o1[i], o2[i], N);
        /* key generation kernel (u = 9) against the reference ladder on u = 9 */
        uint8_t nine[8][N];
        memset(nine, 0, sizeof nine);
        for (unsigned i = 0; i < 8; i++)
            nine[i][0] = 9;
        memset(o1, 0xAA, sizeof o1);
        memset(o2, 0xAA, sizeof o2);
        mb8__x25519_base_ifma(o1, (const uint8_t(*)[N])k, mask, g_scratch);
        mb8__x25519_ladder51_ref(o2, (const uint8_t(*)[N])k, (const uint8_t(*)[N])nine, mask);
        for (unsigned i = 0; i < 8; i++)
            expect_bytes("IFMA base vs reference", i, o1[i], o2[i], N);
    }
}

/* NULL scalars (unused), NULL point/out with a scalar (bad input), all lanes unused, and
 * outputs aliasing inputs. */
static void test_lane_bookkeeping(void **state)
{
    load_kats();
    uint8_t o[8][N];
    uint8_t *out[8];
    const uint8_t *kp[8], *up[8];
    for (unsigned i = 0; i < 8; i++) {
        out[i] = o[i];
        kp[i] = NULL;
        up[i] = NULL;
    }
    /* all unused: nothing written */
    memset(o, 0xAA, sizeof o);
    assert_int_equal(mb8_x25519(out, kp, up, g_scratch), 0x11111111u);
    assert_int_equal(mb8_x25519_public_key(out, kp, g_scratch), 0x11111111u);
    for (unsigned i = 0; i < 8; i++)
        expect_untouched("all unused", i, o[i]);

    /* lanes: 0 ok, 1 unused, 2 ok, 3 point NULL, 4 unused, 5 out NULL, 6 zero, 7 ok */
    static const uint8_t zero_u[N];
    kp[0] = kat_k[0];
    up[0] = kat_u[0];
    kp[2] = kat_k[5];
    up[2] = kat_u[5];
    kp[3] = kat_k[1];
    up[3] = NULL;
    up[4] = kat_u[2];
    kp[5] = kat_k[2];
    up[5] = kat_u[2];
    out[5] = NULL;
    kp[6] = kat_k[6];
    up[6] = zero_u;
    kp[7] = kat_k[7];
    up[7] = kat_u[7];
    memset(o, 0xAA, sizeof o);
    mb8_status_t st = mb8_x25519(out, kp, up, g_scratch);
    static const unsigned want[8] = {
        MB8_STATUS_OK,     MB8_STATUS_UNUSED,    MB8_STATUS_OK,          MB8_STATUS_BAD_INPUT,
        MB8_STATUS_UNUSED, MB8_STATUS_BAD_INPUT, MB8_STATUS_ZERO_RESULT, MB8_STATUS_OK};
    for (unsigned i = 0; i < 8; i++)
        expect_status("mixed lanes", st, i, want[i]);
    assert_false(mb8_status_all_ok(st));
    expect_bytes("mixed lanes", 0, o[0], kat_out[0], N);
    expect_bytes("mixed lanes", 2, o[2], kat_out[5], N);
    expect_bytes("mixed lanes", 7, o[7], kat_out[7], N);
    for (unsigned i = 1; i < 6; i += (i == 1 ? 2 : 1)) /* lanes 1, 3, 4, 5: untouched */
        expect_untouched("mixed lanes", i, o[i]);

    /* out aliasing the point (even lanes) or the scalar (odd lanes) */
    uint8_t buf[8][2][N];
    for (unsigned i = 0; i < 8; i++) {
        memcpy(buf[i][0], kat_k[i], N);
        memcpy(buf[i][1], kat_u[i], N);
        kp[i] = buf[i][0];
        up[i] = buf[i][1];
        out[i] = buf[i][i & 1 ? 0 : 1];
    }
    assert_int_equal(mb8_x25519(out, kp, up, g_scratch), 0);
    for (unsigned i = 0; i < 8; i++)
        expect_bytes("aliased output", i, out[i], kat_out[i], N);
}

/* The constant-time check (docs/constant-time.md): under valgrind memcheck (the ctest
 * memcheck_x25519 runs this file so), the scalars and the points are marked undefined, so
 * any branch or memory index derived from them, or from the shared secret, is an error.
 * Only the status word and the outputs are released afterwards. A small-order point and
 * an unused lane are included, so the zero-result check is covered too. Natively it is a
 * plain differential batch. */
static void test_constant_time_memcheck(void **state)
{
    struct xbatch b;
    xbatch_random(&b);
    memset(b.u[2], 0, N); /* small order: ZERO_RESULT */
    b.kp[5] = NULL;       /* unused */
    VALGRIND_MAKE_MEM_UNDEFINED(b.k, sizeof(b.k));
    VALGRIND_MAKE_MEM_UNDEFINED(b.u, sizeof(b.u));
    mb8_status_t st = xbatch_run(&b);
    VALGRIND_MAKE_MEM_DEFINED(&st, sizeof(st));
    VALGRIND_MAKE_MEM_DEFINED(b.o, sizeof(b.o));
    VALGRIND_MAKE_MEM_DEFINED(b.k, sizeof(b.k));
    VALGRIND_MAKE_MEM_DEFINED(b.u, sizeof(b.u));
    for (unsigned i = 0; i < MB8_LANES; i++) /* lane 2 ZERO_RESULT, lane 5 UNUSED */
        assert_int_equal(check_lane("ct", st, i, b.o[i], b.kp[i], b.u[i]), i != 2 && i != 5);
    /* key generation too */
    uint8_t pub[MB8_LANES][N], pwant[MB8_LANES][N];
    uint8_t *pubs[MB8_LANES];
    for (unsigned i = 0; i < MB8_LANES; i++) {
        b.kp[i] = b.k[i];
        pubs[i] = pub[i];
        ossl_public_key(pwant[i], b.k[i]);
    }
    VALGRIND_MAKE_MEM_UNDEFINED(b.k, sizeof(b.k));
    st = mb8_x25519_public_key(pubs, b.kp, g_scratch);
    VALGRIND_MAKE_MEM_DEFINED(&st, sizeof(st));
    VALGRIND_MAKE_MEM_DEFINED(pub, sizeof(pub));
    VALGRIND_MAKE_MEM_DEFINED(b.k, sizeof(b.k));
    for (unsigned i = 0; i < MB8_LANES; i++) {
        expect_status("ct pub", st, i, MB8_STATUS_OK);
        expect_bytes("ct pub", i, pub[i], pwant[i], N);
    }
}

/* The caller's scratch: NULL or misaligned fails every used lane (outputs untouched);
 * garbage in the scratch changes nothing; after a call it holds no secret (all zero). */
static void test_scratch(void **state)
{
    (void)state;
    struct xbatch x; /* its scalars and points; outputs go to o and pk */
    uint8_t o[2][8][N], pk[2][8][N];
    uint8_t *out[8], *pout[8];
    static alignas(MB8_SCRATCH_ALIGN) uint8_t zero[65536];

    assert_true(mb8_x25519_scratch_size() <= sizeof g_scratch);
    rng_state = g_seed ^ 0x5c5c;
    xbatch_random(&x);
    void *bad[2] = {NULL, g_scratch + 16};
    for (int b = 0; b < 2; b++) {
        memset(o, 0xAA, sizeof o);
        memset(pk, 0xAA, sizeof pk);
        for (unsigned j = 0; j < 8; j++) {
            out[j] = o[0][j];
            pout[j] = pk[0][j];
        }
        assert_int_equal(mb8_x25519(out, x.kp, x.up, bad[b]), 0x22222222u);
        assert_int_equal(mb8_x25519_public_key(pout, x.kp, bad[b]), 0x22222222u);
        for (size_t i = 0; i < sizeof o[0]; i++)
            assert_int_equal(((uint8_t *)o[0])[i] & ((uint8_t *)pk[0])[i], 0xAA);
    }
    mb8_status_t st[2];
    for (int g = 0; g < 2; g++) {
        uint8_t *sc = g == 0 ? g_scratch : zero;
        memset(sc, g == 0 ? 0x5A : 0, g == 0 ? sizeof g_scratch : sizeof zero);
        for (unsigned j = 0; j < 8; j++) {
            out[j] = o[g][j];
            pout[j] = pk[g][j];
        }
        st[g] = mb8_x25519(out, x.kp, x.up, sc); /* random u: a zero result is possible */
        assert_int_equal(mb8_x25519_public_key(pout, x.kp, sc), 0);
    }
    assert_int_equal(st[0], st[1]);
    assert_memory_equal(o[0], o[1], sizeof o[0]);
    assert_memory_equal(pk[0], pk[1], sizeof pk[0]);
    for (size_t i = 0; i < sizeof zero; i++)
        if (zero[i] != 0)
            fail_msg("scratch byte %zu not wiped (%02x)", i, zero[i]);
    memset(g_scratch, 0, sizeof g_scratch);
}

int main(void)
{
    diff_init("x25519_diff_test", "X25519");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scratch),
        cmocka_unit_test(test_rfc7748_vectors_rotated),
        cmocka_unit_test(test_public_key_vectors_and_random),
        cmocka_unit_test(test_rfc7748_iterated),
        cmocka_unit_test(test_random_vs_openssl),
        cmocka_unit_test(test_small_order_points),
        cmocka_unit_test(test_noncanonical_and_top_bit),
        cmocka_unit_test(test_partial_batches_vs_openssl),
        cmocka_unit_test(test_ifma_vs_reference),
        cmocka_unit_test(test_lane_bookkeeping),
        cmocka_unit_test(test_constant_time_memcheck),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
