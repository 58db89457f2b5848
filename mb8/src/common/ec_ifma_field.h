/*
 * The lower layer of the P-256 and P-384 AVX-512 IFMA kernels (p256/p256_ifma.c,
 * p384/p384_ifma.c; common/ec_ifma_impl.h is the upper one): the 8-lane types (a number
 * mod p or n is NL zmm vectors, vector j holding limb j of every lane), transposed
 * staging to and from bytes, lane masks and selection, comparisons, the reduction by one
 * subtraction, the schoolbook products (mul_wide, sqr_wide: IFMA) and the modular sums and
 * differences. The including file defines NL, NB, P_M and P2_M (p and 2p) before it, and
 * the reductions mod p and n (redc_p, redc_n) and the rest after it.
 */
#include <immintrin.h>
#include <stdalign.h>
#include <stdarg.h>
#include <string.h>

#include "ct.h"

#define IFMA __attribute__((target("avx512f,avx512vl,avx512bw,avx512ifma"), always_inline)) inline
#define IFMA_FN __attribute__((target("avx512f,avx512vl,avx512bw,avx512ifma")))
#define M52 ((((uint64_t)1) << 52) - 1)
/* #pragma GCC unroll with a macro count (the pragma itself does not expand macros) */
#define EC_PRAGMA_(x) _Pragma(#x)
#define EC_UNROLL(n) EC_PRAGMA_(GCC unroll n)

typedef __m512i v8;

typedef struct {
    v8 v[NL];
} fe8;

typedef struct {
    fe8 x, y, z; /* homogeneous projective, Montgomery form */
} pt8;

/* One lane's NL x 52-bit numbers to and from bytes: the portable kernel's conversions. */
#define from_bytes MB8__EC_FN(from_bytes)
#define to_bytes MB8__EC_FN(to_bytes)

/* Transposed staging: limb j of lane i at [j][i]. */
typedef struct {
    alignas(64) uint64_t l[NL][MB8_LANES];
} stage8;

static void stage_put(stage8 *s, unsigned lane, const uint8_t b[NB])
{
    uint64_t v[NL];
    from_bytes(v, b);
    for (int j = 0; j < NL; j++)
        s->l[j][lane] = v[j];
    mb8__wipe(v, sizeof v);
}

static void stage_get(uint8_t b[NB], const stage8 *s, unsigned lane)
{
    uint64_t v[NL];
    for (int j = 0; j < NL; j++)
        v[j] = s->l[j][lane];
    to_bytes(b, v);
    mb8__wipe(v, sizeof v);
}

static IFMA void fe8_load(fe8 *r, const stage8 *s)
{
    for (int j = 0; j < NL; j++)
        r->v[j] = _mm512_load_si512((const void *)s->l[j]);
}

static IFMA void fe8_store(stage8 *s, const fe8 *a)
{
    for (int j = 0; j < NL; j++)
        _mm512_store_si512((void *)s->l[j], a->v[j]);
}

static IFMA void fe8_bcast(fe8 *r, const uint64_t c[NL])
{
    for (int j = 0; j < NL; j++)
        r->v[j] = _mm512_set1_epi64((long long)c[j]);
}

/* Wipes the field elements listed, up to a (fe8 *)NULL (an inversion's powers and temporaries). */
static void wipe_fe8(fe8 *a, ...)
{
    va_list ap;
    va_start(ap, a);
    for (fe8 *p = a; p != NULL; p = va_arg(ap, fe8 *))
        mb8__wipe(p, sizeof *p);
    va_end(ap);
}

/* One step of an addition chain over saved powers (finv, common/ec_ifma_impl.h):
 * pow[dst] = pow[src]^(2^sq) pow[mul] (sq >= 1). The steps are public constants. */
struct ec_chain_step {
    uint8_t dst, src, sq, mul;
};

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
    v8 o = a->v[0];
    for (int j = 1; j < NL; j++)
        o = _mm512_or_si512(o, a->v[j]);
    return _mm512_cmpeq_epi64_mask(o, _mm512_setzero_si512());
}

static IFMA __mmask8 fe8_eq(const fe8 *a, const fe8 *b)
{
    fe8 d;
    for (int j = 0; j < NL; j++)
        d.v[j] = _mm512_xor_si512(a->v[j], b->v[j]);
    return fe8_is_zero(&d);
}

/* bit i set when lane i of a (limbs < 2^52) is below the constant m */
static IFMA __mmask8 fe8_lt(const fe8 *a, const uint64_t m[NL])
{
    v8 borrow = _mm512_setzero_si512();
    EC_UNROLL(NL)
    for (int j = 0; j < NL; j++) {
        v8 d =
            _mm512_sub_epi64(_mm512_sub_epi64(a->v[j], _mm512_set1_epi64((long long)m[j])), borrow);
        borrow = _mm512_srli_epi64(d, 63);
    }
    return _mm512_test_epi64_mask(borrow, borrow);
}

/* r = t mod m for t < 2m (limbs 0..NL-2 < 2^52, limb NL-1 < 2^53): t - m when that does not
 * borrow. */
static IFMA void reduce_once(fe8 *r, const v8 t[NL], const uint64_t m[NL])
{
    const v8 msk = vmask52();
    v8 d[NL], c = _mm512_setzero_si512();
    EC_UNROLL(NL)
    for (int j = 0; j < NL; j++) {
        v8 x = _mm512_add_epi64(_mm512_sub_epi64(t[j], _mm512_set1_epi64((long long)m[j])), c);
        c = _mm512_srai_epi64(x, 52); /* 0 or -1 */
        d[j] = j < NL - 1 ? _mm512_and_si512(x, msk) : x;
    }
    /* c = -1: t < m, keep t */
    EC_UNROLL(NL)
    for (int j = 0; j < NL; j++)
        r->v[j] = vsel(c, t[j], d[j]);
}

/* Signed carry propagation of t[0..NL-1] (lazy limbs, |t| < 2^62, the value nonnegative;
 * P-384's reduction mod p leaves negative limbs, P-256's none) into 52-bit limbs, then
 * reduce once (the value must be below 2m). */
static IFMA void norm_reduce(fe8 *r, v8 t[NL], const uint64_t m[NL])
{
    const v8 msk = vmask52();
    EC_UNROLL(NL - 1)
    for (int j = 0; j < NL - 1; j++) {
        t[j + 1] = _mm512_add_epi64(t[j + 1], _mm512_srai_epi64(t[j], 52));
        t[j] = _mm512_and_si512(t[j], msk);
    }
    reduce_once(r, t, m);
}

/* ---- Montgomery multiplication -------------------------------------------------------- */

/* t[0..2NL-1] = the sum of a_i b_j 2^(52 (i + j)) over all i, j (cross = 0), or over
 * j > i only (cross = 1, for a square; a constant after inlining) */
static IFMA void products(v8 t[2 * NL], const fe8 *a, const fe8 *b, int cross)
{
    const v8 z = _mm512_setzero_si512();
    EC_UNROLL(2 * NL)
    for (int k = 0; k < 2 * NL; k++)
        t[k] = z;
    EC_UNROLL(NL)
    for (int i = 0; i < NL; i++) {
        EC_UNROLL(NL)
        for (int j = cross ? i + 1 : 0; j < NL; j++) {
            t[i + j] = _mm512_madd52lo_epu64(t[i + j], a->v[i], b->v[j]);
            t[i + j + 1] = _mm512_madd52hi_epu64(t[i + j + 1], a->v[i], b->v[j]);
        }
    }
}

/* t[0..2NL-1] = a * b (lazy limbs below 2^57) */
static IFMA void mul_wide(v8 t[2 * NL], const fe8 *a, const fe8 *b)
{
    products(t, a, b, 0);
}

/* t[0..2NL-1] = a^2: cross products once, doubled, plus the squares */
static IFMA void sqr_wide(v8 t[2 * NL], const fe8 *a)
{
    products(t, a, a, 1);
    EC_UNROLL(2 * NL)
    for (int k = 0; k < 2 * NL; k++)
        t[k] = _mm512_add_epi64(t[k], t[k]);
    EC_UNROLL(NL)
    for (int i = 0; i < NL; i++) {
        t[2 * i] = _mm512_madd52lo_epu64(t[2 * i], a->v[i], a->v[i]);
        t[2 * i + 1] = _mm512_madd52hi_epu64(t[2 * i + 1], a->v[i], a->v[i]);
    }
}

static IFMA void madd(fe8 *r, const fe8 *a, const fe8 *b, const uint64_t m[NL])
{
    v8 t[NL];
    EC_UNROLL(NL)
    for (int j = 0; j < NL; j++)
        t[j] = _mm512_add_epi64(a->v[j], b->v[j]);
    norm_reduce(r, t, m);
}

/* r = a - b mod m (a, b < m) */
static IFMA void msub(fe8 *r, const fe8 *a, const fe8 *b, const uint64_t m[NL])
{
    const v8 msk = vmask52();
    v8 d[NL], c = _mm512_setzero_si512();
    EC_UNROLL(NL)
    for (int j = 0; j < NL; j++) {
        v8 x = _mm512_add_epi64(_mm512_sub_epi64(a->v[j], b->v[j]), c);
        c = _mm512_srai_epi64(x, 52); /* 0 or -1 */
        d[j] = _mm512_and_si512(x, msk);
    }
    /* c = -1: borrow, add m */
    v8 cc = _mm512_setzero_si512();
    EC_UNROLL(NL)
    for (int j = 0; j < NL; j++) {
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

/* r = 3a, mod 2p as fadd (the point formulas' "t = a + a; r = t + a"); r may alias a */
static IFMA void ftriple(fe8 *r, const fe8 *a)
{
    fe8 t;
    fadd(&t, a, a);
    fadd(r, &t, a);
}
