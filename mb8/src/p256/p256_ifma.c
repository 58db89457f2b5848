/*
 * The AVX-512 IFMA kernels of mb8/p256.h: ECDH, key generation and ECDSA signing for 8
 * lanes at once. See p256_internal.h for the kernel contract; the results are
 * bit-identical to the portable reference (p256_ref.c).
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

#include "../common/booth.h"
#include "../common/ct.h"
#include "p256_internal.h"

#define IFMA __attribute__((target("avx512f,avx512vl,avx512bw,avx512ifma"), always_inline)) inline
#define IFMA_FN __attribute__((target("avx512f,avx512vl,avx512bw,avx512ifma")))

#define NB MB8_P256_SCALAR_BYTES
#define NP MB8_P256_POINT_BYTES
#define M52 ((((uint64_t)1) << 52) - 1)

typedef __m512i v8;

typedef struct {
    v8 v[5];
} fe8;

typedef struct {
    fe8 x, y, z; /* homogeneous projective, Montgomery form */
} pt8;

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
#define COMB_W 37
#define COMB_E 64
/* ECDH: 52 windows of 5-bit signed digits */
#define ECDH_W 52
#include "p256_ifma_table.h"

/* One lane's 5 x 52-bit numbers to and from bytes: the portable kernel's conversions. */
#define from_bytes mb8__p256_from_bytes
#define to_bytes mb8__p256_to_bytes

/* Transposed staging: limb j of lane i at [j][i]. */
typedef struct {
    alignas(64) uint64_t l[5][MB8_LANES];
} stage8;

static void stage_put(stage8 *s, unsigned lane, const uint8_t b[NB])
{
    uint64_t v[5];
    from_bytes(v, b);
    for (int j = 0; j < 5; j++)
        s->l[j][lane] = v[j];
    mb8__wipe(v, sizeof v);
}

static void stage_get(uint8_t b[NB], const stage8 *s, unsigned lane)
{
    uint64_t v[5];
    for (int j = 0; j < 5; j++)
        v[j] = s->l[j][lane];
    to_bytes(b, v);
    mb8__wipe(v, sizeof v);
}

static IFMA void fe8_load(fe8 *r, const stage8 *s)
{
    for (int j = 0; j < 5; j++)
        r->v[j] = _mm512_load_si512((const void *)s->l[j]);
}

static IFMA void fe8_store(stage8 *s, const fe8 *a)
{
    for (int j = 0; j < 5; j++)
        _mm512_store_si512((void *)s->l[j], a->v[j]);
}

static IFMA void fe8_bcast(fe8 *r, const uint64_t c[5])
{
    for (int j = 0; j < 5; j++)
        r->v[j] = _mm512_set1_epi64((long long)c[j]);
}

/* ---- vector helpers ------------------------------------------------------------------ */

static IFMA v8 vmask52(void)
{
    return _mm512_set1_epi64((long long)M52);
}

/* lane mask (bit i) -> all-ones 64-bit elements */
static IFMA v8 kvec(__mmask8 k)
{
    return _mm512_maskz_set1_epi64(k, -1);
}

/* (m & a) | (~m & b) */
static IFMA v8 vsel(v8 m, v8 a, v8 b)
{
    return _mm512_ternarylogic_epi64(m, a, b, 0xCA);
}

/* bit i set when lane i of a is zero */
static IFMA __mmask8 fe8_is_zero(const fe8 *a)
{
    v8 o = _mm512_or_si512(_mm512_or_si512(a->v[0], a->v[1]),
                           _mm512_or_si512(_mm512_or_si512(a->v[2], a->v[3]), a->v[4]));
    return _mm512_cmpeq_epi64_mask(o, _mm512_setzero_si512());
}

static IFMA __mmask8 fe8_eq(const fe8 *a, const fe8 *b)
{
    fe8 d;
    for (int j = 0; j < 5; j++)
        d.v[j] = _mm512_xor_si512(a->v[j], b->v[j]);
    return fe8_is_zero(&d);
}

/* bit i set when lane i of a (limbs < 2^52) is below the constant m */
static IFMA __mmask8 fe8_lt(const fe8 *a, const uint64_t m[5])
{
    v8 borrow = _mm512_setzero_si512();
#pragma GCC unroll 5
    for (int j = 0; j < 5; j++) {
        v8 d =
            _mm512_sub_epi64(_mm512_sub_epi64(a->v[j], _mm512_set1_epi64((long long)m[j])), borrow);
        borrow = _mm512_srli_epi64(d, 63);
    }
    return _mm512_test_epi64_mask(borrow, borrow);
}

/* r = t mod m for t < 2m (limbs 0..3 < 2^52, limb 4 < 2^53): t - m when that does not
 * borrow. */
static IFMA void reduce_once(fe8 *r, const v8 t[5], const uint64_t m[5])
{
    const v8 msk = vmask52();
    v8 d[5], c = _mm512_setzero_si512();
#pragma GCC unroll 5
    for (int j = 0; j < 5; j++) {
        v8 x = _mm512_add_epi64(_mm512_sub_epi64(t[j], _mm512_set1_epi64((long long)m[j])), c);
        c = _mm512_srai_epi64(x, 52); /* 0 or -1 */
        d[j] = j < 4 ? _mm512_and_si512(x, msk) : x;
    }
    /* c = -1: t < m, keep t */
#pragma GCC unroll 5
    for (int j = 0; j < 5; j++)
        r->v[j] = vsel(c, t[j], d[j]);
}

/* Carry propagation of t[0..4] (lazy limbs < 2^63) into 52-bit limbs, then reduce once
 * (the value must be below 2m). */
static IFMA void norm_reduce(fe8 *r, v8 t[5], const uint64_t m[5])
{
    const v8 msk = vmask52();
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        t[j + 1] = _mm512_add_epi64(t[j + 1], _mm512_srli_epi64(t[j], 52));
        t[j] = _mm512_and_si512(t[j], msk);
    }
    reduce_once(r, t, m);
}

/* ---- Montgomery multiplication -------------------------------------------------------- */

/* t[0..9] = a * b (lazy limbs) */
static IFMA void mul_wide(v8 t[10], const fe8 *a, const fe8 *b)
{
    const v8 z = _mm512_setzero_si512();
#pragma GCC unroll 10
    for (int k = 0; k < 10; k++)
        t[k] = z;
#pragma GCC unroll 5
    for (int i = 0; i < 5; i++) {
#pragma GCC unroll 5
        for (int j = 0; j < 5; j++) {
            t[i + j] = _mm512_madd52lo_epu64(t[i + j], a->v[i], b->v[j]);
            t[i + j + 1] = _mm512_madd52hi_epu64(t[i + j + 1], a->v[i], b->v[j]);
        }
    }
}

/* t[0..9] = a^2: cross products once, doubled, plus the squares */
static IFMA void sqr_wide(v8 t[10], const fe8 *a)
{
    const v8 z = _mm512_setzero_si512();
#pragma GCC unroll 10
    for (int k = 0; k < 10; k++)
        t[k] = z;
#pragma GCC unroll 5
    for (int i = 0; i < 5; i++) {
#pragma GCC unroll 5
        for (int j = i + 1; j < 5; j++) {
            t[i + j] = _mm512_madd52lo_epu64(t[i + j], a->v[i], a->v[j]);
            t[i + j + 1] = _mm512_madd52hi_epu64(t[i + j + 1], a->v[i], a->v[j]);
        }
    }
#pragma GCC unroll 10
    for (int k = 0; k < 10; k++)
        t[k] = _mm512_add_epi64(t[k], t[k]);
#pragma GCC unroll 5
    for (int i = 0; i < 5; i++) {
        t[2 * i] = _mm512_madd52lo_epu64(t[2 * i], a->v[i], a->v[i]);
        t[2 * i + 1] = _mm512_madd52hi_epu64(t[2 * i + 1], a->v[i], a->v[i]);
    }
}

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

/* r = a + b mod m (a, b < m) */
static IFMA void madd(fe8 *r, const fe8 *a, const fe8 *b, const uint64_t m[5])
{
    v8 t[5];
#pragma GCC unroll 5
    for (int j = 0; j < 5; j++)
        t[j] = _mm512_add_epi64(a->v[j], b->v[j]);
    norm_reduce(r, t, m);
}

/* r = a - b mod m (a, b < m) */
static IFMA void msub(fe8 *r, const fe8 *a, const fe8 *b, const uint64_t m[5])
{
    const v8 msk = vmask52();
    v8 d[5], c = _mm512_setzero_si512();
#pragma GCC unroll 5
    for (int j = 0; j < 5; j++) {
        v8 x = _mm512_add_epi64(_mm512_sub_epi64(a->v[j], b->v[j]), c);
        c = _mm512_srai_epi64(x, 52); /* 0 or -1 */
        d[j] = _mm512_and_si512(x, msk);
    }
    /* c = -1: borrow, add m */
    v8 cc = _mm512_setzero_si512();
#pragma GCC unroll 5
    for (int j = 0; j < 5; j++) {
        v8 x = _mm512_add_epi64(
            _mm512_add_epi64(d[j], _mm512_and_si512(c, _mm512_set1_epi64((long long)m[j]))), cc);
        cc = _mm512_srli_epi64(x, 52);
        r->v[j] = _mm512_and_si512(x, msk);
    }
}

/* Field elements mod p live in [0, 2p) (limbs < 2^52): fmul and fsqr take and return such
 * values without a final subtraction; fadd and fsub reduce mod 2p; fcanon gives the
 * canonical value (< p) where equality or zero is tested and for the outputs. */
static IFMA void fadd(fe8 *r, const fe8 *a, const fe8 *b)
{
    madd(r, a, b, P2_M);
}

static IFMA void fcanon(fe8 *r, const fe8 *a)
{
    reduce_once(r, a->v, P_M);
}

static IFMA void fsub(fe8 *r, const fe8 *a, const fe8 *b)
{
    msub(r, a, b, P2_M);
}

static IFMA_FN void fsqr_n(fe8 *r, const fe8 *a, int n)
{
    fsqr(r, a);
    for (int i = 1; i < n; i++)
        fsqr(r, r);
}

/* r = a^(p-2) = a^-1 (0 for 0), Montgomery form: the fixed addition chain
 * p - 2 = ffffffff 00000001 00000000 00000000 00000000 ffffffff ffffffff fffffffd. */
static IFMA_FN void finv(fe8 *r, const fe8 *a)
{
    fe8 x2, x3, x6, x12, x15, x30, x32, t;
    fsqr(&t, a);
    fmul(&x2, &t, a); /* 2^2 - 1 */
    fsqr(&t, &x2);
    fmul(&x3, &t, a); /* 2^3 - 1 */
    fsqr_n(&t, &x3, 3);
    fmul(&x6, &t, &x3);
    fsqr_n(&t, &x6, 6);
    fmul(&x12, &t, &x6);
    fsqr_n(&t, &x12, 3);
    fmul(&x15, &t, &x3);
    fsqr_n(&t, &x15, 15);
    fmul(&x30, &t, &x15);
    fsqr_n(&t, &x30, 2);
    fmul(&x32, &t, &x2);
    fsqr_n(&t, &x32, 32);
    fmul(&t, &t, a); /* ffffffff00000001 */
    fsqr_n(&t, &t, 128);
    fmul(&t, &t, &x32);
    fsqr_n(&t, &t, 32);
    fmul(&t, &t, &x32);
    fsqr_n(&t, &t, 30);
    fmul(&t, &t, &x30);
    fsqr_n(&t, &t, 2);
    fmul(r, &t, a);
    mb8__wipe(&x2, sizeof x2);
    mb8__wipe(&x3, sizeof x3);
    mb8__wipe(&x6, sizeof x6);
    mb8__wipe(&x12, sizeof x12);
    mb8__wipe(&x15, sizeof x15);
    mb8__wipe(&x30, sizeof x30);
    mb8__wipe(&x32, sizeof x32);
    mb8__wipe(&t, sizeof t);
}

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
    mb8__wipe(&x2, sizeof x2);
    mb8__wipe(&x10, sizeof x10);
    mb8__wipe(&x20, sizeof x20);
    mb8__wipe(&t, sizeof t);
    mb8__wipe(&acc, sizeof acc);
}

/* ---- points --------------------------------------------------------------------------- */

/* R = P1 + (x2, y2) with (x2, y2) affine (Z2 = 1), P1 anything including infinity, the
 * affine point never infinity: Renes-Costello-Batina 2016, Algorithm 5 (a = -3). */
static IFMA_FN void pt_add_affine(pt8 *R, const pt8 *P1, const fe8 *X2, const fe8 *Y2)
{
    fe8 b;
    fe8_bcast(&b, B_MONT);
    const fe8 *X1 = &P1->x, *Y1 = &P1->y, *Z1 = &P1->z;
    fe8 t0, t1, t2, t3, t4, X3, Y3, Z3;
    fmul(&t0, X1, X2);
    fmul(&t1, Y1, Y2);
    fadd(&t3, X2, Y2);
    fadd(&t4, X1, Y1);
    fmul(&t3, &t3, &t4);
    fadd(&t4, &t0, &t1);
    fsub(&t3, &t3, &t4);
    fmul(&t4, Y2, Z1);
    fadd(&t4, &t4, Y1);
    fmul(&Y3, X2, Z1);
    fadd(&Y3, &Y3, X1);
    fmul(&Z3, &b, Z1);
    fsub(&X3, &Y3, &Z3);
    fadd(&Z3, &X3, &X3);
    fadd(&X3, &X3, &Z3);
    fsub(&Z3, &t1, &X3);
    fadd(&X3, &t1, &X3);
    fmul(&Y3, &b, &Y3);
    fadd(&t1, Z1, Z1);
    fadd(&t2, &t1, Z1);
    fsub(&Y3, &Y3, &t2);
    fsub(&Y3, &Y3, &t0);
    fadd(&t1, &Y3, &Y3);
    fadd(&Y3, &t1, &Y3);
    fadd(&t1, &t0, &t0);
    fadd(&t0, &t1, &t0);
    fsub(&t0, &t0, &t2);
    fmul(&t1, &t4, &Y3);
    fmul(&t2, &t0, &Y3);
    fmul(&Y3, &X3, &Z3);
    fadd(&Y3, &Y3, &t2);
    fmul(&X3, &t3, &X3);
    fsub(&X3, &X3, &t1);
    fmul(&Z3, &t4, &Z3);
    fmul(&t1, &t3, &t0);
    fadd(&Z3, &Z3, &t1);
    R->x = X3;
    R->y = Y3;
    R->z = Z3;
}

/* R = 2 P1 in Jacobian coordinates (x = X/Z^2, y = Y/Z^3), a = -3: dbl-2001-b (Bernstein-
 * Lange EFD), 4M + 4S with Z3 = 2 Y Z. Correct for every point of this prime-order curve
 * (no point has y = 0); the point at infinity must be given as (X : Y : 0) with Y != 0,
 * and stays so. R may alias P1. */
static IFMA_FN void jdbl(pt8 *R, const pt8 *P1)
{
    fe8 delta, gamma, beta, alpha, t, u;
    fsqr(&delta, &P1->z);
    fsqr(&gamma, &P1->y);
    fmul(&beta, &P1->x, &gamma);
    fsub(&t, &P1->x, &delta);
    fadd(&u, &P1->x, &delta);
    fmul(&alpha, &t, &u);
    fadd(&t, &alpha, &alpha);
    fadd(&alpha, &t, &alpha); /* 3 (x - z^2)(x + z^2) */
    fmul(&t, &P1->y, &P1->z);
    fadd(&R->z, &t, &t); /* Z3 = 2 Y Z */
    fadd(&beta, &beta, &beta);
    fadd(&beta, &beta, &beta); /* 4 beta */
    fsqr(&t, &alpha);
    fsub(&t, &t, &beta);
    fsub(&R->x, &t, &beta); /* X3 = alpha^2 - 8 beta */
    fsub(&t, &beta, &R->x);
    fmul(&t, &alpha, &t);
    fsqr(&gamma, &gamma);
    fadd(&gamma, &gamma, &gamma);
    fadd(&gamma, &gamma, &gamma);
    fadd(&gamma, &gamma, &gamma); /* 8 gamma^2 */
    fsub(&R->y, &t, &gamma);      /* Y3 = alpha (4 beta - X3) - 8 gamma^2 */
}

/* R = P1 + P2 in Jacobian coordinates, add-1998-cmo-2 (Bernstein-Lange EFD): 12M + 4S.
 * Not complete: P1 and P2 must not be infinity and P1 != +-P2 (pt_mul shows that its
 * additions never meet these cases for a scalar in [1, n-1], and masks the infinities).
 * R may alias P1 or P2. */
static IFMA_FN void jadd(pt8 *R, const pt8 *P1, const pt8 *P2)
{
    fe8 z1z1, z2z2, u1, u2, s1, s2, h, r, hh, hhh, v, t, X3, Y3, Z3;
    fsqr(&z1z1, &P1->z);
    fsqr(&z2z2, &P2->z);
    fmul(&u1, &P1->x, &z2z2);
    fmul(&u2, &P2->x, &z1z1);
    fmul(&t, &z2z2, &P2->z);
    fmul(&s1, &P1->y, &t);
    fmul(&t, &z1z1, &P1->z);
    fmul(&s2, &P2->y, &t);
    fmul(&t, &P1->z, &P2->z);
    fsub(&h, &u2, &u1);
    fsub(&r, &s2, &s1);
    fmul(&Z3, &t, &h); /* Z1 Z2 H */
    fsqr(&hh, &h);
    fmul(&hhh, &hh, &h);
    fmul(&v, &u1, &hh);
    fsqr(&t, &r);
    fsub(&t, &t, &hhh);
    fsub(&t, &t, &v);
    fsub(&X3, &t, &v); /* r^2 - H^3 - 2 U1 H^2 */
    fsub(&t, &v, &X3);
    fmul(&t, &r, &t);
    fmul(&s1, &s1, &hhh);
    fsub(&Y3, &t, &s1); /* r (U1 H^2 - X3) - S1 H^3 */
    R->x = X3;
    R->y = Y3;
    R->z = Z3;
}

static IFMA void pt_infinity(pt8 *R)
{
    const v8 z = _mm512_setzero_si512();
    for (int j = 0; j < 5; j++)
        R->x.v[j] = R->z.v[j] = z;
    fe8_bcast(&R->y, P_ONE);
}

/* Booth recoding for ECDH's windows, as booth7 below with 5-bit windows: the signed digit
 * of window w (w = 0..51) of each lane comes from the 6 bits v = k bits 5w + 4 .. 5w - 1
 * (bit -1 = 0, bits above 255 = 0): |d| = ceil(v / 2) for v < 32, ceil((63 - v) / 2)
 * otherwise (then d <= 0), so |d| <= 16 and k = sum d_w 2^(5w); the top digit (bits 254,
 * 255) is never negative. Public positions, branch-free digit arithmetic. */
static void booth5(uint64_t mag[ECDH_W][MB8_LANES], uint64_t neg[ECDH_W][MB8_LANES],
                   const uint8_t k[MB8_LANES][NB], unsigned lane_mask)
{
    for (unsigned i = 0; i < MB8_LANES; i++) {
        uint8_t le[NB + 2];
        for (int j = 0; j < NB; j++)
            le[j] = (lane_mask >> i) & 1 ? k[i][NB - 1 - j] : 0; /* lane use is public */
        le[NB] = le[NB + 1] = 0;
        for (int w = 0; w < ECDH_W; w++) {
            int bit = 5 * w - 1; /* lowest bit of the 6-bit group */
            uint64_t v;
            if (bit < 0) { /* public position */
                v = ((uint64_t)le[0] << 1) & 0x3F;
            } else {
                uint64_t two = (uint64_t)le[bit >> 3] | ((uint64_t)le[(bit >> 3) + 1] << 8);
                v = (two >> (bit & 7)) & 0x3F;
            }
            uint64_t s = mb8__value_barrier(0 - (v >> 5)); /* all-ones when v >= 32 */
            uint64_t d = ((63 - v) & s) | (v & ~s);
            mag[w][i] = (d >> 1) + (d & 1);
            neg[w][i] = s;
        }
        mb8__wipe(le, sizeof le);
    }
}

/* Each lane's entry dig of tab (16 entries), by a scan of all 16 with mask vectors. */
static IFMA void tab_select(pt8 *sel, const pt8 tab[16], v8 d)
{
    v8 s[15];
    for (int j = 0; j < 15; j++)
        s[j] = _mm512_setzero_si512();
    for (int i = 0; i < 16; i++) {
        const v8 m = kvec(_mm512_cmpeq_epi64_mask(d, _mm512_set1_epi64(i)));
        const v8 *e = (const v8 *)&tab[i];
#pragma GCC unroll 15
        for (int j = 0; j < 15; j++)
            s[j] = _mm512_ternarylogic_epi64(s[j], e[j], m, 0xF8); /* s | (e & m) */
    }
    memcpy(sel, s, sizeof *sel);
}

/* R = k * P1 (each lane its own k and P1), Jacobian in and out: 52 windows of 5 bits with
 * signed (Booth) digits, most significant first; each lane's entry |d| P of its table
 * 1P..16P (Jacobian) chosen by a scan of all 16, negated by a mask for d < 0.
 *
 * The incomplete jadd is safe here: before the addition of window w the accumulator is
 * 32 m P, m = sum of the digits above w weighted = floor((k + 2^(5w+4)) / 2^(5w+5)) >= 0
 * (Booth partial sums), and |d| <= 16. If m = 0 the accumulator is infinity and the
 * result is the entry (a mask, inf); if d = 0 the result is the accumulator (a mask).
 * Otherwise 32 m >= 32 > |d|, and 32 m + d is the next partial sum, below n (at the last
 * window it is k itself), so 32 m P is neither d P nor -d P: no doubling case for a scalar
 * in [1, n-1] (P has prime order n); lanes with another scalar or an invalid point
 * compute garbage, in the same time, and are failed by the caller. The table's additions
 * (i-1)P + P, i >= 3, are no exception either. Infinity in the accumulator is
 * (X : Y : 0), which jdbl keeps at Z = 0. */
static IFMA_FN void pt_mul(pt8 *R, const pt8 *P1, const uint64_t mag[ECDH_W][MB8_LANES],
                           const uint64_t neg[ECDH_W][MB8_LANES], pt8 tab[16])
{
    pt8 acc, sel, t;
    fe8 ny, zf;
    const v8 zero = _mm512_setzero_si512(), one = _mm512_set1_epi64(1);
    for (int j = 0; j < 5; j++)
        zf.v[j] = zero;
    tab[0] = *P1;
    for (int i = 1; i < 16; i++) { /* tab[i] = (i + 1) P */
        if (i & 1)
            jdbl(&tab[i], &tab[i / 2]);
        else
            jadd(&tab[i], &tab[i - 1], P1);
    }
    v8 inf = _mm512_set1_epi64(-1); /* all digits so far 0 */
    for (int w = ECDH_W - 1; w >= 0; w--) {
        if (w != ECDH_W - 1)
            for (int i = 0; i < 5; i++)
                jdbl(&acc, &acc);
        const v8 d = _mm512_load_si512((const void *)mag[w]);
        const v8 sgn = _mm512_load_si512((const void *)neg[w]);
        const v8 dz = kvec(_mm512_cmpeq_epi64_mask(d, zero));
        tab_select(&sel, tab, _mm512_sub_epi64(d, one));
        fsub(&ny, &zf, &sel.y);
        for (int j = 0; j < 5; j++)
            sel.y.v[j] = vsel(sgn, ny.v[j], sel.y.v[j]);
        if (w == ECDH_W - 1) {
            acc = sel; /* the top digit; Z = 0 (infinity) where it is 0 */
        } else {
            jadd(&t, &acc, &sel);
            v8 *a = (v8 *)&acc;
            const v8 *sv = (const v8 *)&sel, *tv = (const v8 *)&t;
            for (int j = 0; j < 15; j++)
                a[j] = vsel(dz, a[j], vsel(inf, sv[j], tv[j]));
        }
        inf = _mm512_and_si512(inf, dz);
    }
    *R = acc;
    mb8__wipe(tab, 16 * sizeof(pt8));
    mb8__wipe(&acc, sizeof acc);
    mb8__wipe(&sel, sizeof sel);
    mb8__wipe(&t, sizeof t);
    mb8__wipe(&ny, sizeof ny);
}

/* The comb's signed 7-bit digits of every lane's scalar (common/booth.h). */
static void booth7(uint64_t mag[COMB_W][MB8_LANES], uint64_t neg[COMB_W][MB8_LANES],
                   const uint8_t k[MB8_LANES][NB], unsigned lane_mask)
{
    mb8__booth7(mag, neg, COMB_W, &k[0][0], NB, lane_mask);
}

/* (x, y) = entry |d| of one comb window for every lane (the digit's magnitude mag in
 * 1..64; for 0 some entry, discarded by the caller). The window's limb j is 8 vectors of
 * 8 entries (p256_ifma_table.h); vpermt2q picks each lane's entry among 16 of them by
 * the low 4 bits of the lane's index, and two masked blends by bits 4 and 5 choose among
 * the 4 groups. The digit is only a register operand (permute index, blend mask): no
 * memory address depends on it, every entry is loaded for every selection, and the
 * permutes and blends have data-independent latency. */
static IFMA void comb_select(fe8 *x, fe8 *y, const uint64_t tab[10][COMB_E], v8 mag)
{
    const v8 idx = _mm512_sub_epi64(mag, _mm512_set1_epi64(1));
    const __mmask8 b4 = _mm512_test_epi64_mask(idx, _mm512_set1_epi64(16));
    const __mmask8 b5 = _mm512_test_epi64_mask(idx, _mm512_set1_epi64(32));
#pragma GCC unroll 10
    for (int j = 0; j < 10; j++) {
        const v8 *t = (const v8 *)tab[j];
        v8 r0 = _mm512_permutex2var_epi64(_mm512_load_si512(t + 0), idx, _mm512_load_si512(t + 1));
        v8 r1 = _mm512_permutex2var_epi64(_mm512_load_si512(t + 2), idx, _mm512_load_si512(t + 3));
        v8 r2 = _mm512_permutex2var_epi64(_mm512_load_si512(t + 4), idx, _mm512_load_si512(t + 5));
        v8 r3 = _mm512_permutex2var_epi64(_mm512_load_si512(t + 6), idx, _mm512_load_si512(t + 7));
        v8 lo = _mm512_mask_blend_epi64(b4, r0, r1);
        v8 hi = _mm512_mask_blend_epi64(b4, r2, r3);
        v8 r = _mm512_mask_blend_epi64(b5, lo, hi);
        if (j < 5)
            x->v[j] = r;
        else
            y->v[j - 5] = r;
    }
}

/* R = k G by the comb: sum over w of d_w 2^(7w) G, one mixed addition per window but the
 * first (which is the selected point itself, or infinity). */
static IFMA_FN void pt_mul_g(pt8 *R, const uint8_t k[MB8_LANES][NB], unsigned lane_mask,
                             uint64_t mag[COMB_W][MB8_LANES], uint64_t neg[COMB_W][MB8_LANES])
{
    pt8 acc, t;
    fe8 x, y, ny, zf, one;
    booth7(mag, neg, k, lane_mask);
    const v8 zero = _mm512_setzero_si512();
    for (int j = 0; j < 5; j++)
        zf.v[j] = zero;
    fe8_bcast(&one, P_ONE);
    for (int w = 0; w < COMB_W; w++) {
        const v8 d = _mm512_load_si512((const void *)mag[w]);
        const v8 sgn = _mm512_load_si512((const void *)neg[w]);
        const v8 z = kvec(_mm512_cmpeq_epi64_mask(d, zero));
        comb_select(&x, &y, P256_COMB[w], d);
        /* y = -y for negative digits; for d = 0 the entry is discarded below */
        fsub(&ny, &zf, &y);
        for (int j = 0; j < 5; j++)
            y.v[j] = vsel(sgn, ny.v[j], y.v[j]);
        if (w == 0) { /* acc = (x : y : 1), or infinity (0 : 1 : 0) where d = 0 */
            for (int j = 0; j < 5; j++) {
                acc.x.v[j] = vsel(z, zero, x.v[j]);
                acc.y.v[j] = vsel(z, one.v[j], y.v[j]);
                acc.z.v[j] = vsel(z, zero, one.v[j]);
            }
            continue;
        }
        pt_add_affine(&t, &acc, &x, &y);
        v8 *a = (v8 *)&acc;
        const v8 *tv = (const v8 *)&t;
        for (int j = 0; j < 15; j++)
            a[j] = vsel(z, a[j], tv[j]);
    }
    *R = acc;
    mb8__wipe(mag, COMB_W * sizeof(*mag));
    mb8__wipe(neg, COMB_W * sizeof(*neg));
    mb8__wipe(&acc, sizeof acc);
    mb8__wipe(&t, sizeof t);
    mb8__wipe(&x, sizeof x);
    mb8__wipe(&y, sizeof y);
    mb8__wipe(&ny, sizeof ny);
}

/* Affine (x, y), canonical, of R; bit i set when lane i is infinity (then x = y = 0). */
static IFMA_FN __mmask8 pt_to_affine(fe8 *x, fe8 *y, const pt8 *R)
{
    fe8 zi, t, one;
    fcanon(&t, &R->z);
    __mmask8 inf = fe8_is_zero(&t);
    finv(&zi, &R->z);
    for (int j = 0; j < 5; j++)
        one.v[j] = j == 0 ? _mm512_set1_epi64(1) : _mm512_setzero_si512();
    fmul(&t, &R->x, &zi);
    fmul(&t, &t, &one);
    fcanon(x, &t);
    fmul(&t, &R->y, &zi);
    fmul(&t, &t, &one);
    fcanon(y, &t);
    mb8__wipe(&zi, sizeof zi);
    mb8__wipe(&t, sizeof t);
    return inf;
}

/* Affine x, canonical, of a Jacobian R (x = X / Z^2); bit i set when lane i is infinity
 * (then x = 0). */
static IFMA_FN __mmask8 jac_to_affine_x(fe8 *x, const pt8 *R)
{
    fe8 zi, t, one;
    fcanon(&t, &R->z);
    __mmask8 inf = fe8_is_zero(&t);
    finv(&zi, &R->z);
    fsqr(&zi, &zi);
    for (int j = 0; j < 5; j++)
        one.v[j] = j == 0 ? _mm512_set1_epi64(1) : _mm512_setzero_si512();
    fmul(&t, &R->x, &zi);
    fmul(&t, &t, &one);
    fcanon(x, &t);
    mb8__wipe(&zi, sizeof zi);
    mb8__wipe(&t, sizeof t);
    return inf;
}

/* lane status word from per-lane bit masks: bad -> BAD_INPUT, else zero -> ZERO_RESULT */
static mb8_status_t lanes_status(unsigned lane_mask, unsigned bad, unsigned zero)
{
    mb8_status_t st = 0;
    for (unsigned i = 0; i < MB8_LANES; i++) {
        uint64_t b = mb8__value_barrier(0 - (uint64_t)((bad >> i) & 1));
        uint64_t z = mb8__value_barrier(0 - (uint64_t)((zero >> i) & 1));
        uint64_t s = (b & MB8_STATUS_BAD_INPUT) | (~b & z & MB8_STATUS_ZERO_RESULT);
        s &= 0 - (uint64_t)((lane_mask >> i) & 1);
        st |= (mb8_status_t)s << (4u * i);
    }
    return st;
}

static void mask_bytes(uint8_t *b, size_t n, unsigned keep_bit)
{
    uint8_t m = (uint8_t)(0 - (keep_bit & 1));
    for (size_t i = 0; i < n; i++)
        b[i] &= m;
}

/* Scalars of the used lanes into s (others 0); bit i of the result set when lane i's
 * scalar is in [1, n-1]. */
static IFMA_FN __mmask8 scalar_load8(fe8 *s, const uint8_t k[MB8_LANES][NB], unsigned lane_mask)
{
    stage8 st;
    memset(&st, 0, sizeof st);
    for (unsigned i = 0; i < MB8_LANES; i++)
        if ((lane_mask >> i) & 1)
            stage_put(&st, i, k[i]);
    fe8_load(s, &st);
    mb8__wipe(&st, sizeof st);
    return fe8_lt(s, N_M) & (__mmask8)~fe8_is_zero(s);
}


/* Point inputs of the used lanes (0x04 || X || Y) as Montgomery projective points; bit i
 * of the result set when lane i is a valid encoding of a point on the curve (SEC 1
 * §3.2.2.1: prefix, X < p, Y < p, Y^2 = X^3 - 3X + b), as peer_load in p256_ref.c. */
static IFMA_FN __mmask8 peer_load8(pt8 *Q, const uint8_t peer[MB8_LANES][NP], unsigned lane_mask)
{
    stage8 sx, sy;
    fe8 x, y, rr, lhs, rhs, t, one, b;
    unsigned pre_ok = 0;
    memset(&sx, 0, sizeof sx);
    memset(&sy, 0, sizeof sy);
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (!((lane_mask >> i) & 1)) /* public */
            continue;
        uint64_t pre = (uint64_t)(peer[i][0] ^ 0x04);
        pre_ok |= (unsigned)((((pre | (0 - pre)) >> 63) ^ 1) << i);
        stage_put(&sx, i, peer[i] + 1);
        stage_put(&sy, i, peer[i] + 1 + NB);
    }
    fe8_load(&x, &sx);
    fe8_load(&y, &sy);
    __mmask8 ok = (__mmask8)pre_ok & fe8_lt(&x, P_M) & fe8_lt(&y, P_M);
    fe8_bcast(&rr, P_RR);
    fmul(&Q->x, &x, &rr);
    fmul(&Q->y, &y, &rr);
    fe8_bcast(&Q->z, P_ONE);
    fe8_bcast(&one, P_ONE);
    fe8_bcast(&b, B_MONT);
    fsqr(&lhs, &Q->y);
    fsqr(&rhs, &Q->x);
    fsub(&t, &rhs, &one);
    fsub(&t, &t, &one);
    fsub(&t, &t, &one);
    fmul(&rhs, &t, &Q->x);
    fadd(&rhs, &rhs, &b);
    fcanon(&lhs, &lhs);
    fcanon(&rhs, &rhs);
    ok &= fe8_eq(&lhs, &rhs);
    return ok;
}

/* canonical x of the used lanes to bytes */
static IFMA_FN void fe8_out(uint8_t *const out[MB8_LANES], const fe8 *a, unsigned lane_mask)
{
    stage8 s;
    fe8_store(&s, a);
    for (unsigned i = 0; i < MB8_LANES; i++)
        if ((lane_mask >> i) & 1)
            stage_get(out[i], &s, i);
    mb8__wipe(&s, sizeof s);
}

/* The kernels' tables, in the caller's scratch (MB8__EC_WS_BYTES, 64-byte aligned). */
struct p256_ws {
    pt8 tab[16];                                 /* pt_mul: 0P..15P */
    alignas(64) uint64_t mag[ECDH_W][MB8_LANES]; /* pt_mul, pt_mul_g: Booth digits, magnitudes */
    alignas(64) uint64_t neg[ECDH_W][MB8_LANES]; /* ... and signs */
};
_Static_assert(sizeof(struct p256_ws) <= MB8__EC_WS_BYTES, "MB8__EC_WS_BYTES too small");

IFMA_FN mb8_status_t mb8__p256_ecdh_ifma(uint8_t out[MB8_LANES][NB],
                                         const uint8_t priv[MB8_LANES][NB],
                                         const uint8_t peer[MB8_LANES][NP], unsigned lane_mask,
                                         void *ws)
{
    struct p256_ws *w = ws;
    pt8 Q, R;
    fe8 d, x;
    uint8_t *outp[MB8_LANES];
    __mmask8 ok = scalar_load8(&d, priv, lane_mask);
    ok &= peer_load8(&Q, peer, lane_mask);
    booth5(w->mag, w->neg, priv, lane_mask);
    pt_mul(&R, &Q, (const uint64_t(*)[MB8_LANES])w->mag, (const uint64_t(*)[MB8_LANES])w->neg,
           w->tab);
    __mmask8 inf = jac_to_affine_x(&x, &R);
    for (unsigned i = 0; i < MB8_LANES; i++)
        outp[i] = out[i];
    fe8_out(outp, &x, lane_mask);
    unsigned keep = (unsigned)(ok & (__mmask8)~inf);
    for (unsigned i = 0; i < MB8_LANES; i++)
        if ((lane_mask >> i) & 1)
            mask_bytes(out[i], NB, keep >> i);
    mb8_status_t st = lanes_status(lane_mask, (unsigned)(__mmask8)~ok, inf);
    mb8__wipe(w->mag, sizeof w->mag);
    mb8__wipe(w->neg, sizeof w->neg);
    mb8__wipe(&Q, sizeof Q);
    mb8__wipe(&R, sizeof R);
    mb8__wipe(&d, sizeof d);
    mb8__wipe(&x, sizeof x);
    return st;
}

/* ---- key generation --------------------------------------------------------------------- */

IFMA_FN mb8_status_t mb8__p256_public_key_ifma(uint8_t out[MB8_LANES][NP],
                                               const uint8_t priv[MB8_LANES][NB],
                                               unsigned lane_mask, void *ws)
{
    struct p256_ws *w = ws;
    pt8 R;
    fe8 d, x, y;
    uint8_t *xp[MB8_LANES], *yp[MB8_LANES];
    __mmask8 ok = scalar_load8(&d, priv, lane_mask);
    pt_mul_g(&R, priv, lane_mask, w->mag, w->neg);
    __mmask8 inf = pt_to_affine(&x, &y, &R); /* never for d in [1, n-1] */
    for (unsigned i = 0; i < MB8_LANES; i++) {
        xp[i] = out[i] + 1;
        yp[i] = out[i] + 1 + NB;
    }
    fe8_out(xp, &x, lane_mask);
    fe8_out(yp, &y, lane_mask);
    unsigned keep = (unsigned)(ok & (__mmask8)~inf);
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if ((lane_mask >> i) & 1) {
            out[i][0] = 0x04;
            mask_bytes(out[i], NP, keep >> i);
        }
    }
    mb8_status_t st = lanes_status(lane_mask, (unsigned)(__mmask8)(~ok | inf), 0);
    mb8__wipe(&R, sizeof R);
    mb8__wipe(&d, sizeof d);
    mb8__wipe(&x, sizeof x);
    mb8__wipe(&y, sizeof y);
    return st;
}

/* ---- ECDSA ------------------------------------------------------------------------------ */

/* The nonce-only part (the future sign_setup), as ecdsa_setup in p256_ref.c: r = x(kG) mod
 * n, with the blinding factor b = k, kb_inv = (k b)^-1 and b, Montgomery form mod n. Bit i
 * of the result set when lane i's k is in [1, n-1] and r != 0. */
static IFMA_FN __mmask8 ecdsa_setup8(fe8 *r_m, fe8 *kb_inv_m, fe8 *b_m,
                                     const uint8_t k_bytes[MB8_LANES][NB], unsigned lane_mask,
                                     struct p256_ws *w)
{
    pt8 R;
    fe8 k, x, y, rr;
    __mmask8 ok = scalar_load8(&k, k_bytes, lane_mask);
    pt_mul_g(&R, k_bytes, lane_mask, w->mag, w->neg);
    __mmask8 inf = pt_to_affine(&x, &y, &R);
    fe8_bcast(&rr, N_RR);
    nmul(r_m, &x, &rr); /* x < p < 2n: reduced mod n on the way */
    ok &= (__mmask8)~inf & (__mmask8)~fe8_is_zero(r_m);
    nmul(b_m, &k, &rr);
    nmul(kb_inv_m, b_m, b_m);
    ninv(kb_inv_m, kb_inv_m);
    mb8__wipe(&R, sizeof R);
    mb8__wipe(&k, sizeof k);
    mb8__wipe(&x, sizeof x);
    mb8__wipe(&y, sizeof y);
    return ok;
}

/* s = (k b)^-1 (b e + (b r) d) mod n (the future sign_complete), canonical; bit i of the
 * result set when lane i's d is in [1, n-1] and s != 0. */
static IFMA_FN __mmask8 ecdsa_complete8(fe8 *s, const fe8 *r_m, const fe8 *kb_inv_m, const fe8 *b_m,
                                        const uint8_t e_bytes[MB8_LANES][NB],
                                        const uint8_t d_bytes[MB8_LANES][NB], unsigned lane_mask)
{
    fe8 d, e, rr, br, t, one;
    stage8 st;
    __mmask8 ok = scalar_load8(&d, d_bytes, lane_mask);
    memset(&st, 0, sizeof st);
    for (unsigned i = 0; i < MB8_LANES; i++)
        if ((lane_mask >> i) & 1)
            stage_put(&st, i, e_bytes[i]);
    fe8_load(&e, &st);
    fe8_bcast(&rr, N_RR);
    nmul(&d, &d, &rr);
    nmul(&e, &e, &rr); /* e may be >= n: reduced here */
    nmul(&br, b_m, r_m);
    nmul(&t, &br, &d); /* b r d */
    nmul(&e, &e, b_m); /* b e */
    madd(&t, &t, &e, N_M);
    nmul(&t, &t, kb_inv_m);
    for (int j = 0; j < 5; j++)
        one.v[j] = j == 0 ? _mm512_set1_epi64(1) : _mm512_setzero_si512();
    nmul(s, &t, &one);
    ok &= (__mmask8)~fe8_is_zero(s);
    mb8__wipe(&st, sizeof st);
    mb8__wipe(&d, sizeof d);
    mb8__wipe(&e, sizeof e);
    mb8__wipe(&br, sizeof br);
    mb8__wipe(&t, sizeof t);
    return ok;
}

IFMA_FN mb8_status_t mb8__p256_ecdsa_sign_ifma(uint8_t r[MB8_LANES][NB], uint8_t s[MB8_LANES][NB],
                                               const uint8_t e[MB8_LANES][NB],
                                               const uint8_t d[MB8_LANES][NB],
                                               const uint8_t k[MB8_LANES][NB], unsigned lane_mask,
                                               void *ws)
{
    fe8 r_m, kb_inv_m, b_m, rv, sv, one;
    uint8_t *rp[MB8_LANES], *sp[MB8_LANES];
    __mmask8 ok = ecdsa_setup8(&r_m, &kb_inv_m, &b_m, k, lane_mask, ws);
    ok &= ecdsa_complete8(&sv, &r_m, &kb_inv_m, &b_m, e, d, lane_mask);
    for (int j = 0; j < 5; j++)
        one.v[j] = j == 0 ? _mm512_set1_epi64(1) : _mm512_setzero_si512();
    nmul(&rv, &r_m, &one);
    for (unsigned i = 0; i < MB8_LANES; i++) {
        rp[i] = r[i];
        sp[i] = s[i];
    }
    fe8_out(rp, &rv, lane_mask);
    fe8_out(sp, &sv, lane_mask);
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if ((lane_mask >> i) & 1) {
            mask_bytes(r[i], NB, (unsigned)ok >> i);
            mask_bytes(s[i], NB, (unsigned)ok >> i);
        }
    }
    mb8_status_t st = lanes_status(lane_mask, (unsigned)(__mmask8)~ok, 0);
    mb8__wipe(&r_m, sizeof r_m);
    mb8__wipe(&kb_inv_m, sizeof kb_inv_m);
    mb8__wipe(&b_m, sizeof b_m);
    mb8__wipe(&rv, sizeof rv);
    mb8__wipe(&sv, sizeof sv);
    return st;
}

IFMA_FN mb8_status_t mb8__p256_ecdsa_setup_ifma(uint8_t out[MB8_LANES][MB8_P256_SETUP_BYTES],
                                                const uint8_t k[MB8_LANES][NB], unsigned lane_mask,
                                                void *ws)
{
    fe8 r_m, kb_inv_m, b_m, v, one;
    uint8_t buf[MB8_LANES][NB], *bp[MB8_LANES];
    const fe8 *parts[3] = {&r_m, &kb_inv_m, &b_m};
    __mmask8 ok = ecdsa_setup8(&r_m, &kb_inv_m, &b_m, k, lane_mask, ws);

    for (int j = 0; j < 5; j++)
        one.v[j] = j == 0 ? _mm512_set1_epi64(1) : _mm512_setzero_si512();
    for (unsigned i = 0; i < MB8_LANES; i++)
        bp[i] = buf[i];
    for (int part = 0; part < 3; part++) { /* out of the Montgomery domain, canonical */
        nmul(&v, parts[part], &one);
        fe8_out(bp, &v, lane_mask);
        for (unsigned i = 0; i < MB8_LANES; i++)
            if ((lane_mask >> i) & 1)
                memcpy(out[i] + part * NB, buf[i], NB);
    }
    for (unsigned i = 0; i < MB8_LANES; i++)
        if ((lane_mask >> i) & 1)
            mask_bytes(out[i], MB8_P256_SETUP_BYTES, (unsigned)ok >> i);
    mb8_status_t st = lanes_status(lane_mask, (unsigned)(__mmask8)~ok, 0);
    mb8__wipe(&r_m, sizeof r_m);
    mb8__wipe(&kb_inv_m, sizeof kb_inv_m);
    mb8__wipe(&b_m, sizeof b_m);
    mb8__wipe(&v, sizeof v);
    mb8__wipe(buf, sizeof buf);
    return st;
}
