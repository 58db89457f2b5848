/*
 * The AVX-512 IFMA kernels of mb8/p256.h: ECDH, key generation and ECDSA signing for 8
 * lanes at once. See p256_internal.h for the kernel contract; the results are
 * bit-identical to the portable reference (p256_ref.c). This file holds the constants, the
 * reductions, the inversions and fadd_m; the rest is shared with P-384: the lower layer in
 * common/ec_ifma_field.h, the points, scalar multiplications and entry points in
 * common/ec_ifma_impl.h.
 *
 * Layout: as rsa_ifma.c, transposed: a number of 5 radix-2^52 limbs for the 8 lanes is 5
 * zmm vectors; vector j holds limb j of every lane. Nothing crosses lanes.
 *
 * Field: Montgomery arithmetic with R = 2^260, like the reference. Mod n every value is
 * canonical (< n); mod p values live in [0, 2p) (no final subtraction after a
 * multiplication; additions and subtractions reduce mod 2p) and are made canonical only
 * where they are compared or output.
 * Multiplication is separated operand scanning: the 10-limb product (50 IFMA, 25 for a
 * square with the cross products doubled), then 5 reduction rounds. Mod p the reduction
 * needs no multiplication for the quotient digit (p = -1 mod 2^52: k0 = 1, y = the low
 * limb) nor for limb 0 (t + y (2^52 - 1) = ((t >> 52) + y) 2^52) and p's limb 2 is 0: 6
 * IFMA per round. Mod n it is the generic round (y = lo(t k0), 10 IFMA) and a final masked
 * subtraction makes the result canonical.
 *
 * Points: the comb (below) uses the complete mixed addition of Renes-Costello-Batina 2016
 * (Algorithm 5, a = -3) on homogeneous projective coordinates; ECDH runs in Jacobian
 * coordinates with incomplete formulas whose exceptional cases it never meets (see
 * pt_mul), the infinity and zero-digit cases being masks.
 *
 * Variable base (ECDH): 52 windows of 5 bits with signed (Booth) digits in [-16, 16], a
 * per-lane Jacobian table of 1P..16P; each lane's entry is selected by a scan of all 16
 * entries with all-ones mask vectors (vpternlogq), never through a secret index, and
 * negated by a mask. Per window 5 doublings (dbl-2001-b, 4M + 4S) and one addition
 * (add-1998-cmo-2, 12M + 4S). Before #19: 64 windows of 4 unsigned bits on projective
 * coordinates, with a conversion to Jacobian and back around each window's doublings and
 * the complete addition (14 multiplications, 23 additions) per window.
 *
 * Fixed base (key generation, ECDSA's kG): a comb of 37 windows of 7 bits with signed
 * (Booth) digits in [-64, 64]: window w holds the affine multiples j 2^(7w) G, j = 1..64
 * (p256_ifma_table.h, generated offline, 185 KB); every digit but the first costs one
 * complete mixed addition (RCB Algorithm 5) and no doubling. Each lane's entry is picked
 * by register permutes (vpermt2q) indexed by the digit over all 64 entries of the window,
 * loaded in full every time (comb_select), negated by a masked subtraction for a negative
 * digit, and the addition's result discarded by a mask for a zero digit (the affine table
 * has no infinity). 65 windows of 4 bits with a scan of 8 entries before: 37 instead of 64
 * additions (#19).
 *
 * Inversions: Fermat; mod p by the fixed addition chain for p - 2 (255 squarings, 12
 * multiplications), mod n by an addition chain for the public n - 2 (252 squarings, 44
 * multiplications, values kept below 2n until the end; see ninv).
 *
 * Constant time: no branch and no memory index depends on a scalar, nonce, digest or
 * point; range and curve checks are masks; loop counts and window positions are fixed.
 * Secrets: the named buffers (scalars, digits, tables, accumulators) are wiped at the end;
 * the leaf arithmetic leaves its few vectors to be overwritten, as in the reference.
 *
 * Compiled for AVX-512F/VL/BW/IFMA by target attribute; only called when
 * mb8_cpu_has_ifma() (p256.c).
 */
#include <immintrin.h>
#include <stdalign.h>
#include <string.h>

#include "../common/ct.h"
#include "p256_internal.h"


#define NB MB8_P256_SCALAR_BYTES
#define NP MB8_P256_POINT_BYTES
#define NL MB8__EC_NL /* 5 limbs */

/* ---- constants (the same values as p256_ref.c) --------------------------------------- */

static const uint64_t P_M[5] = {0xfffffffffffffULL, 0x00fffffffffffULL, 0x0000000000000ULL,
                                0x0001000000000ULL, 0x0ffffffff0000ULL};
/* 2p: field elements are kept below 2p between operations (see fmul) */
static const uint64_t P2_M[5] = {0xffffffffffffeULL, 0x01fffffffffffULL, 0x0000000000000ULL,
                                 0x0002000000000ULL, 0x1fffffffe0000ULL};
static const uint64_t P_RR[5] = {0x0000000000300ULL, 0xffffffff00000ULL, 0xffffefffffffbULL,
                                 0xfdfffffffffffULL, 0x0000004ffffffULL};
static const uint64_t P_ONE[5] = {0x0000000000010ULL, 0xf000000000000ULL, 0xfffffffffffffULL,
                                  0xffeffffffffffULL, 0x00000000fffffULL};
static const uint64_t N_M[5] = {0x9cac2fc632551ULL, 0xada7179e84f3bULL, 0xfffffffbce6faULL,
                                0x0000fffffffffULL, 0x0ffffffff0000ULL};
static const uint64_t N_K0 = 0x1c8aaee00bc4fULL;
static const uint64_t N_RR[5] = {0x5cc0dea6dc3baULL, 0x192a067d8a084ULL, 0xbec59615571bbULL,
                                 0x1fc245b2392b6ULL, 0x0e12d9559d956ULL};
static const uint64_t B_MONT[5] = {0xdf6229c4bddfdULL, 0xca8843090d89cULL, 0x212ed6acf005cULL,
                                   0x83415a220abf7ULL, 0x0c30061dd4874ULL};
/* the comb: 37 windows of 7-bit signed digits, 64 multiples of G each */
#define EC_COMB_W 37
#define EC_COMB_E 64
#define EC_COMB_TABLE P256_COMB
/* ECDH: 52 windows of 5-bit signed digits */
#define EC_ECDH_W 52
#include "p256_ifma_table.h"

#include "../common/ec_ifma_field.h"

/* r = t * 2^-260 mod p, below 2p (not canonical), for t < 4p^2 (t = a b with a, b < 2p:
 * (t + q p) / 2^260 < 4p^2 / 2^260 + p < 2p). */
static IFMA void redc_p(fe8 *r, v8 t[10])
{
    const v8 msk = vmask52();
    const v8 p1 = _mm512_set1_epi64((long long)P_M[1]);
    const v8 p3 = _mm512_set1_epi64((long long)P_M[3]);
    const v8 p4 = _mm512_set1_epi64((long long)P_M[4]);
#pragma GCC unroll 5
    for (int i = 0; i < 5; i++) {
        v8 y = _mm512_and_si512(t[i], msk);
        /* t[i] + y (2^52 - 1) = ((t[i] >> 52) + y) 2^52 */
        t[i + 1] = _mm512_add_epi64(t[i + 1], _mm512_add_epi64(_mm512_srli_epi64(t[i], 52), y));
        t[i + 1] = _mm512_madd52lo_epu64(t[i + 1], p1, y);
        t[i + 2] = _mm512_madd52hi_epu64(t[i + 2], p1, y);
        t[i + 3] = _mm512_madd52lo_epu64(t[i + 3], p3, y);
        t[i + 4] = _mm512_madd52hi_epu64(t[i + 4], p3, y);
        t[i + 4] = _mm512_madd52lo_epu64(t[i + 4], p4, y);
        t[i + 5] = _mm512_madd52hi_epu64(t[i + 5], p4, y);
    }
    /* carry propagation only: the result stays below 2p (see fmul) */
#pragma GCC unroll 4
    for (int j = 5; j < 9; j++) {
        t[j + 1] = _mm512_add_epi64(t[j + 1], _mm512_srli_epi64(t[j], 52));
        r->v[j - 5] = _mm512_and_si512(t[j], msk);
    }
    r->v[4] = t[9];
}

/* t[5..9] = t * 2^-260 mod n, lazy limbs (below 2n for t < 4n^2: (t + q n) / 2^260 < 4n^2 /
 * 2^260 + n < 2n) */
static IFMA void redc_n_rounds(v8 t[10])
{
    const v8 z = _mm512_setzero_si512();
    const v8 k0 = _mm512_set1_epi64((long long)N_K0);
#pragma GCC unroll 5
    for (int i = 0; i < 5; i++) {
        /* the quotient digit lo(t[i] k0): IFMA reads the low 52 bits of t[i] and its
         * low half is below 2^52, so no mask is needed */
        v8 y = _mm512_madd52lo_epu64(z, t[i], k0);
#pragma GCC unroll 5
        for (int j = 0; j < 5; j++) {
            const v8 nj = _mm512_set1_epi64((long long)N_M[j]);
            t[i + j] = _mm512_madd52lo_epu64(t[i + j], nj, y);
            t[i + j + 1] = _mm512_madd52hi_epu64(t[i + j + 1], nj, y);
        }
        t[i + 1] = _mm512_add_epi64(t[i + 1], _mm512_srli_epi64(t[i], 52));
    }
}

/* r = t * 2^-260 mod n, canonical */
static IFMA void redc_n(fe8 *r, v8 t[10])
{
    redc_n_rounds(t);
    norm_reduce(r, t + 5, N_M);
}

/* r = t * 2^-260 mod n, below 2n (limbs < 2^52), for t < 4n^2: the inversion's chain,
 * which keeps its values in [0, 2n) and reduces once at the end */
static IFMA void redc_n_lazy(fe8 *r, v8 t[10])
{
    const v8 msk = vmask52();
    redc_n_rounds(t);
#pragma GCC unroll 4
    for (int j = 5; j < 9; j++) {
        t[j + 1] = _mm512_add_epi64(t[j + 1], _mm512_srli_epi64(t[j], 52));
        r->v[j - 5] = _mm512_and_si512(t[j], msk);
    }
    r->v[4] = t[9];
}

static IFMA void fmul(fe8 *r, const fe8 *a, const fe8 *b)
{
    v8 t[10];
    mul_wide(t, a, b);
    redc_p(r, t);
}

static IFMA void fsqr(fe8 *r, const fe8 *a)
{
    v8 t[10];
    sqr_wide(t, a);
    redc_p(r, t);
}

static IFMA_FN __attribute__((noinline)) void nmul(fe8 *r, const fe8 *a, const fe8 *b)
{
    v8 t[10];
    mul_wide(t, a, b);
    redc_n(r, t);
}

/* r = a b and r = a^(2^k) mod n for a, b < 2n, below 2n (ninv) */
static IFMA_FN __attribute__((noinline)) void nmul_lazy(fe8 *r, const fe8 *a, const fe8 *b)
{
    v8 t[10];
    mul_wide(t, a, b);
    redc_n_lazy(r, t);
}

static IFMA_FN __attribute__((noinline)) void nsqr_lazy_k(fe8 *r, const fe8 *a, int k)
{
    v8 t[10];
    fe8 x = *a;
    for (int i = 0; i < k; i++) { /* k is public */
        sqr_wide(t, &x);
        redc_n_lazy(&x, t);
    }
    *r = x;
}

/* a^(p-2) = a^-1 mod p (finv, common/ec_ifma_impl.h): after the common start (x2 .. x32 in
 * pow[1..7], x_k = a^(2^k - 1)), the rest of the fixed addition chain of
 * p - 2 = ffffffff 00000001 00000000 00000000 00000000 ffffffff ffffffff fffffffd
 * into pow[8]. */
#define EC_FINV_POWS 9
static const struct ec_chain_step FINV_TAIL[5] = {
    {8, 7, 32, 0}, /* ffffffff00000001 */
    {8, 8, 128, 7}, {8, 8, 32, 7}, {8, 8, 30, 6}, {8, 8, 2, 0},
};

/* The low 128 bits of n - 2 = ffffffff 00000000 ffffffff ffffffff bce6faad a7179e84
 * f3b9cac2 fc63254f as a sliding window of width 5 (public; generated and checked offline):
 * square `sq` times, then multiply by a^odd. */
static const struct {
    uint8_t sq, odd;
} NINV_LOW[23] = {{5, 23}, {5, 19}, {5, 19}, {6, 31}, {6, 21}, {6, 27}, {6, 19}, {5, 17},
                  {5, 15}, {6, 15}, {2, 1},  {9, 19}, {5, 25}, {5, 27}, {5, 19}, {4, 9},
                  {5, 11}, {9, 23}, {3, 7},  {5, 3},  {8, 25}, {7, 21}, {6, 15}};

/* r = a^(n-2) = a^-1 mod n (0 for 0), Montgomery form, canonical, for a < n: a^1, a^3, ...,
 * a^31, then x32 = a^(2^32 - 1) for the top 128 bits (ffffffff 00000000 ffffffff
 * ffffffff) and the sliding window above for the rest: 252 squarings and 44
 * multiplications (fixed 4-bit windows before: 256 and 78). Intermediate values stay in
 * [0, 2n) (nmul_lazy), one subtraction at the end. Only the public exponent shapes the
 * sequence. */
static IFMA_FN void ninv(fe8 *r, const fe8 *a)
{
    fe8 odd[16], x2, x10, x20, t, acc; /* odd[i] = a^(2i + 1) */
    odd[0] = *a;
    nsqr_lazy_k(&x2, a, 1);
    for (int i = 1; i < 16; i++)
        nmul_lazy(&odd[i], &odd[i - 1], &x2);
    /* odd[15] = a^31 = a^(2^5 - 1) */
    nsqr_lazy_k(&t, &odd[15], 5);
    nmul_lazy(&x10, &t, &odd[15]);
    nsqr_lazy_k(&t, &x10, 10);
    nmul_lazy(&x20, &t, &x10);
    nsqr_lazy_k(&t, &x20, 10);
    nmul_lazy(&t, &t, &x10); /* x30 */
    nsqr_lazy_k(&t, &t, 2);
    nmul_lazy(&x20, &t, &odd[1]); /* x32 (in x20's place) */
    nsqr_lazy_k(&acc, &x20, 64);
    nmul_lazy(&acc, &acc, &x20);
    nsqr_lazy_k(&acc, &acc, 32);
    nmul_lazy(&acc, &acc, &x20);
    for (int i = 0; i < 23; i++) {
        nsqr_lazy_k(&acc, &acc, NINV_LOW[i].sq);
        nmul_lazy(&acc, &acc, &odd[NINV_LOW[i].odd >> 1]);
    }
    reduce_once(r, acc.v, N_M);
    mb8__wipe(odd, sizeof odd);
    wipe_fe8(&x2, &x10, &x20, &t, &acc, (fe8 *)NULL);
}

/* A sum that feeds nothing but fmul / fsqr (the point formulas of common/ec_ifma_impl.h):
 * reduced here, since fmul wants its inputs below 2p (P-384's fadd_m leaves it lazy). */
static IFMA void fadd_m(fe8 *r, const fe8 *a, const fe8 *b)
{
    fadd(r, a, b);
}

#include "../common/ec_ifma_impl.h"
