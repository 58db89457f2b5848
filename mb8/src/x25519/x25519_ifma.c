/*
 * The AVX-512 IFMA X25519 kernel (RFC 7748 §5) for 8 lanes at once: see x25519_internal.h
 * for the contract; the design is below (radix 2^52 as in Intel's crypto_mb x25519 kernel).
 *
 * Layout: a field element of the 8 lanes is 5 zmm vectors; vector j holds limb j (radix
 * 2^52) of every lane, so nothing ever crosses lanes. Value = sum l_j 2^(52 j).
 *
 * Limb invariant ("normalised"): every limb below 2^52 and l_4 below 2^48 (value < 2^256).
 * vpmadd52luq/huq read only the low 52 bits of their multiplicands, so every operand of a
 * multiplication must be normalised; fe8_norm() restores the invariant after additions,
 * subtractions and products (one carry chain, see there).
 *
 * Multiplication: 25 products as lo/hi halves (50 IFMA) into columns z_0..z_9, each column
 * a sum of at most 10 terms below 2^52, so z_k < 10 * 2^52 < 2^56. Columns 5..9 fold down
 * with 2^260 = 2^5 * 2^255 = 32 * 19 = 608 (mod p): z_k (k >= 5) has weight
 * 2^(52 k) = 2^260 2^(52 (k - 5)). First z_5 .. z_8 pass their bits from 2^52 up to the
 * next column (a short chain of shift/add; each carry < 16, so z_9 < 2^44 + 16 as z_9 is
 * the single term hi(a_4 b_4) < 2^44 with a_4, b_4 < 2^48); then with zl_k the low 52 bits
 * of z_k (the only bits an IFMA reads):
 *     608 zl_k 2^(52 (k-5)) = lo(608 zl_k) 2^(52 (k-5)) + hi(608 zl_k) 2^(52 (k-4)),
 * two IFMA per column, ten in all. For k = 9, hi(608 z_9) < 4 has weight 2^52 times
 * column 4's, so it is added to r_4 shifted left by 52, and fe8_norm folds r_4's bits
 * from 2^255 up. After the fold every r_k < 10 * 2^52 + 2 * 2^52 < 2^56, r_4 < 2^57.
 *
 * Constant time: the same instruction sequence for every lane and every input; the ladder's
 * conditional swap is an XOR with an all-ones/all-zero mask vector made from each lane's
 * scalar bit; the inversion is a fixed chain; no secret index, no secret branch. Key
 * generation (fixed base, below) reads every entry of a table row and keeps one per lane by
 * mask vectors; only the row number (the digit position) indexes memory.
 *
 * Key generation (mb8__x25519_base_ifma) does not run the ladder: [k] B on the Edwards form
 * with a precomputed table, then u = (1 + y) / (1 - y) (see the section below).
 *
 * Compiled for AVX-512F/VL/BW/IFMA by target attribute; only called when
 * mb8_cpu_has_ifma() (x25519.c).
 */
#include <immintrin.h>
#include <string.h>

#include "../common/ct.h"
#include "x25519_internal.h"

#define IFMA __attribute__((target("avx512f,avx512vl,avx512bw,avx512ifma"), always_inline)) inline
#define IFMA_FN __attribute__((target("avx512f,avx512vl,avx512bw,avx512ifma")))

typedef __m512i v8;

typedef struct {
    v8 l[5];
} fe8;

#define M52 ((((uint64_t)1) << 52) - 1)
#define M47 ((((uint64_t)1) << 47) - 1)

#define madlo _mm512_madd52lo_epu64
#define madhi _mm512_madd52hi_epu64

/*
 * Restores the invariant from limbs below 2^62 (any l_4 < 2^62): first the bits of l_4 at
 * 2^255 and up fold into l_0 (2^255 = 19 mod p; 19 c < 2^20), then one carry chain
 * l_0 -> l_1 -> ... -> l_4. Each carry is < 2^11, so l_4 ends below 2^47 + 2^11 < 2^48
 * and every other limb below 2^52: the result is normalised, value < 2^256, and
 * congruent to the input. (Folding before the chain, not after, is what makes the bound
 * strict: a fold after it could leave a limb at exactly 2^52, which an IFMA reads as 0.)
 */
static IFMA void fe8_norm(fe8 *r, v8 l0, v8 l1, v8 l2, v8 l3, v8 l4)
{
    const v8 m52 = _mm512_set1_epi64((long long)M52), m47 = _mm512_set1_epi64((long long)M47);
    v8 c = _mm512_srli_epi64(l4, 47);
    l4 = _mm512_and_si512(l4, m47);
    /* 19 c = 16 c + 2 c + c */
    l0 = _mm512_add_epi64(
        l0,
        _mm512_add_epi64(_mm512_add_epi64(_mm512_slli_epi64(c, 4), _mm512_slli_epi64(c, 1)), c));
    l1 = _mm512_add_epi64(l1, _mm512_srli_epi64(l0, 52));
    r->l[0] = _mm512_and_si512(l0, m52);
    l2 = _mm512_add_epi64(l2, _mm512_srli_epi64(l1, 52));
    r->l[1] = _mm512_and_si512(l1, m52);
    l3 = _mm512_add_epi64(l3, _mm512_srli_epi64(l2, 52));
    r->l[2] = _mm512_and_si512(l2, m52);
    l4 = _mm512_add_epi64(l4, _mm512_srli_epi64(l3, 52));
    r->l[3] = _mm512_and_si512(l3, m52);
    r->l[4] = l4;
}

/* Folds the 10 columns (z_k < 2^56, z_9 < 2^44) down to 5 and normalises (see the top). */
static IFMA void fe8_reduce(fe8 *r, const v8 z[10])
{
    const v8 c608 = _mm512_set1_epi64(608);
    v8 r0 = z[0], r1 = z[1], r2 = z[2], r3 = z[3], r4 = z[4];
    /* carry z_5 .. z_8 up by their bits from 2^52 (< 16 each): then the IFMA's view of
     * z_k (its low 52 bits) plus the carry taken out of it is exactly z_k's value */
    v8 z6 = _mm512_add_epi64(z[6], _mm512_srli_epi64(z[5], 52));
    v8 z7 = _mm512_add_epi64(z[7], _mm512_srli_epi64(z6, 52));
    v8 z8 = _mm512_add_epi64(z[8], _mm512_srli_epi64(z7, 52));
    v8 z9 = _mm512_add_epi64(z[9], _mm512_srli_epi64(z8, 52)); /* < 2^44 + 2^4 */
    r0 = madlo(r0, z[5], c608);
    r1 = madhi(r1, z[5], c608);
    r1 = madlo(r1, z6, c608);
    r2 = madhi(r2, z6, c608);
    r2 = madlo(r2, z7, c608);
    r3 = madhi(r3, z7, c608);
    r3 = madlo(r3, z8, c608);
    r4 = madhi(r4, z8, c608);
    r4 = madlo(r4, z9, c608);
    /* hi(608 z_9) < 4 at weight 2^260: r_4 (weight 2^208) + it * 2^52 < 2^57 */
    r4 = _mm512_add_epi64(r4, _mm512_slli_epi64(madhi(_mm512_setzero_si512(), z9, c608), 52));
    fe8_norm(r, r0, r1, r2, r3, r4);
}

/* r = a b mod p (normalised in, normalised out; r may alias a or b). Separate lo and hi
 * accumulators per column keep each IFMA dependency chain at most 5 long. */
static IFMA void fe8_mul(fe8 *r, const fe8 *a, const fe8 *b)
{
    const v8 zero = _mm512_setzero_si512();
    v8 lo[10], hi[10], z[10];
#pragma GCC unroll 10
    for (int k = 0; k < 10; k++)
        lo[k] = hi[k] = zero;
#pragma GCC unroll 5
    for (int i = 0; i < 5; i++) {
#pragma GCC unroll 5
        for (int j = 0; j < 5; j++) {
            lo[i + j] = madlo(lo[i + j], a->l[i], b->l[j]);
            hi[i + j + 1] = madhi(hi[i + j + 1], a->l[i], b->l[j]);
        }
    }
    z[0] = lo[0];
#pragma GCC unroll 10
    for (int k = 1; k < 9; k++)
        z[k] = _mm512_add_epi64(lo[k], hi[k]);
    z[9] = hi[9];
    fe8_reduce(r, z);
}

/* r = a^2 mod p: the 10 cross products once (lo and hi), the column sums doubled, then the
 * 5 squares: 30 IFMA. Column bound as fe8_mul (at most 4 cross terms doubled + 2). */
static IFMA void fe8_sqr(fe8 *r, const fe8 *a)
{
    const v8 zero = _mm512_setzero_si512();
    v8 lo[10], hi[10], z[10];
#pragma GCC unroll 10
    for (int k = 0; k < 10; k++)
        lo[k] = hi[k] = zero;
#pragma GCC unroll 5
    for (int i = 0; i < 5; i++) {
#pragma GCC unroll 5
        for (int j = i + 1; j < 5; j++) {
            lo[i + j] = madlo(lo[i + j], a->l[i], a->l[j]);
            hi[i + j + 1] = madhi(hi[i + j + 1], a->l[i], a->l[j]);
        }
    }
#pragma GCC unroll 10
    for (int k = 0; k < 10; k++)
        z[k] = _mm512_slli_epi64(_mm512_add_epi64(lo[k], hi[k]), 1);
#pragma GCC unroll 5
    for (int i = 0; i < 5; i++) {
        z[2 * i] = madlo(z[2 * i], a->l[i], a->l[i]);
        z[2 * i + 1] = madhi(z[2 * i + 1], a->l[i], a->l[i]);
    }
    fe8_reduce(r, z);
}

/* r = a + b (normalised: limbs of the sum < 2^53). */
static IFMA void fe8_add(fe8 *r, const fe8 *a, const fe8 *b)
{
    fe8_norm(r, _mm512_add_epi64(a->l[0], b->l[0]), _mm512_add_epi64(a->l[1], b->l[1]),
             _mm512_add_epi64(a->l[2], b->l[2]), _mm512_add_epi64(a->l[3], b->l[3]),
             _mm512_add_epi64(a->l[4], b->l[4]));
}

/*
 * r = a - b + 16 p. 16 p in radix 2^52 has the limbs 16 (2^52 - 19), 16 (2^52 - 1) (x3)
 * and 16 (2^47 - 1): limbs 0..3 are >= 2^56 - 304 > 2^52 > b_j, limb 4 is 2^51 - 16 >
 * 2^48 > b_4, so no limb goes negative; every limb stays below 2^57.
 */
static IFMA void fe8_sub(fe8 *r, const fe8 *a, const fe8 *b)
{
    const v8 p0 = _mm512_set1_epi64((long long)(16 * (M52 - 18))),
             p1 = _mm512_set1_epi64((long long)(16 * M52)),
             p4 = _mm512_set1_epi64((long long)(16 * M47));
    fe8_norm(r, _mm512_sub_epi64(_mm512_add_epi64(a->l[0], p0), b->l[0]),
             _mm512_sub_epi64(_mm512_add_epi64(a->l[1], p1), b->l[1]),
             _mm512_sub_epi64(_mm512_add_epi64(a->l[2], p1), b->l[2]),
             _mm512_sub_epi64(_mm512_add_epi64(a->l[3], p1), b->l[3]),
             _mm512_sub_epi64(_mm512_add_epi64(a->l[4], p4), b->l[4]));
}

/*
 * r = a + c e for a small constant c < 2^17 (a24 = 121665, or u = 9): lo(c e_j) at column
 * j, hi(c e_j) < 2^17 at column j + 1, and hi(c e_4) (< 2^13: e_4 < 2^48) at column 5,
 * which folds as 608 hi(c e_4) < 2^23 into column 0. Every limb stays below 2^54.
 */
static IFMA void fe8_add_mulsmall(fe8 *r, const fe8 *a, const fe8 *e, uint64_t c)
{
    const v8 vc = _mm512_set1_epi64((long long)c);
    v8 r0 = madlo(a->l[0], e->l[0], vc);
    v8 r1 = madhi(madlo(a->l[1], e->l[1], vc), e->l[0], vc);
    v8 r2 = madhi(madlo(a->l[2], e->l[2], vc), e->l[1], vc);
    v8 r3 = madhi(madlo(a->l[3], e->l[3], vc), e->l[2], vc);
    v8 r4 = madhi(madlo(a->l[4], e->l[4], vc), e->l[3], vc);
    r0 = madlo(r0, madhi(_mm512_setzero_si512(), e->l[4], vc), _mm512_set1_epi64(608));
    fe8_norm(r, r0, r1, r2, r3, r4);
}

/* Swaps f and g in the lanes where mask is all-ones, leaves them where it is zero. */
static IFMA void fe8_cswap(fe8 *f, fe8 *g, v8 mask)
{
#pragma GCC unroll 5
    for (int j = 0; j < 5; j++) {
        /* d = (f ^ g) & mask: truth table 0x28 over (A = f, B = g, C = mask) */
        v8 d = _mm512_ternarylogic_epi64(f->l[j], g->l[j], mask, 0x28);
        f->l[j] = _mm512_xor_si512(f->l[j], d);
        g->l[j] = _mm512_xor_si512(g->l[j], d);
    }
}

/* r = a^(2^n) for n >= 1. Not inlined: the inversion's squaring runs are latency bound
 * anyway, and a loop keeps the code small. */
static IFMA_FN __attribute__((noinline)) void fe8_sqrn(fe8 *r, const fe8 *a, int n)
{
    fe8 t;
    fe8_sqr(&t, a);
    for (int i = 1; i < n; i++)
        fe8_sqr(&t, &t);
    *r = t;
}

static IFMA_FN __attribute__((noinline)) void fe8_mul_noinline(fe8 *r, const fe8 *a, const fe8 *b)
{
    fe8_mul(r, a, b);
}

#define FE8_SQR1(r, a) fe8_sqrn(r, a, 1)

/* r = z^(p - 2) = z^(2^255 - 21): the chain of the reference (254 S + 11 M); 0 -> 0. */
static IFMA_FN void fe8_invert(fe8 *r, const fe8 *z)
{
    MB8__X25519_INVERT(fe8, FE8_SQR1, fe8_sqrn, fe8_mul_noinline, mb8__wipe, r, z);
}

/* Lane bytes -> 5 limbs of 52 bits, bit 255 dropped (RFC 7748 §5): normalised (l_4 has 47
 * bits). */
static void limbs_from_bytes(uint64_t l[5], const uint8_t s[32])
{
    uint64_t w0 = mb8__x25519_load64_le(s), w1 = mb8__x25519_load64_le(s + 8),
             w2 = mb8__x25519_load64_le(s + 16), w3 = mb8__x25519_load64_le(s + 24);
    l[0] = w0 & M52;
    l[1] = ((w0 >> 52) | (w1 << 12)) & M52;
    l[2] = ((w1 >> 40) | (w2 << 24)) & M52;
    l[3] = ((w2 >> 28) | (w3 << 36)) & M52;
    l[4] = (w3 >> 16) & M47;
}

/* Normalised limbs (value < 2^256) -> the canonical 32 bytes (value mod p), per lane,
 * without branches: the fold and chain of fe8_norm give v < 2^255 + 2^208 < 2p, then
 * v - q p with q = (v + 19) >> 255 in {0, 1}, as the reference's tobytes. */
/* h[0] += 19 c, then the carries of limbs 0..3 into the next (52-bit limbs). */
static void add19_carry(uint64_t h[5], uint64_t c)
{
    h[0] += 19 * c;
    for (int j = 0; j < 4; j++) {
        h[j + 1] += h[j] >> 52;
        h[j] &= M52;
    }
}

static void limbs_to_bytes(uint8_t s[32], const uint64_t in[5])
{
    uint64_t h[5] = {in[0], in[1], in[2], in[3], in[4]};
    uint64_t c = h[4] >> 47;
    h[4] &= M47;
    add19_carry(h, c);
    uint64_t q = (h[0] + 19) >> 52;
    q = (h[1] + q) >> 52;
    q = (h[2] + q) >> 52;
    q = (h[3] + q) >> 52;
    q = (h[4] + q) >> 47;
    add19_carry(h, q);
    h[4] &= M47;
    mb8__x25519_store64_le(s, h[0] | (h[1] << 52));
    mb8__x25519_store64_le(s + 8, (h[1] >> 12) | (h[2] << 40));
    mb8__x25519_store64_le(s + 16, (h[2] >> 24) | (h[3] << 28));
    mb8__x25519_store64_le(s + 24, (h[3] >> 36) | (h[4] << 16));
}

/*
 * The ladder of RFC 7748 §5 on 8 lanes; x1 the input u, kw the clamped scalars (4 64-bit
 * words, transposed). Returns x2 / z2 in *res (normalised, not canonical).
 */
static IFMA void ladder8(fe8 *res, const fe8 *x1, const v8 kw[4])
{
    const v8 zero = _mm512_setzero_si512(), one = _mm512_set1_epi64(1);
    fe8 x2, z2, x3, z3, a, b, c, d, aa, bb, e, da, cb, t;
    v8 swap = zero;

#pragma GCC unroll 5
    for (int j = 0; j < 5; j++) {
        x2.l[j] = z2.l[j] = z3.l[j] = zero;
        x3.l[j] = x1->l[j];
    }
    x2.l[0] = one;
    z3.l[0] = one;

    for (int pos = 254; pos >= 0; pos--) {
        /* pos is public: the word and shift depend only on the loop counter */
        v8 bit = _mm512_and_si512(_mm512_srl_epi64(kw[pos >> 6], _mm_cvtsi32_si128(pos & 63)), one);
        swap = _mm512_xor_si512(swap, bit);
        v8 mask = _mm512_sub_epi64(zero, swap);
        fe8_cswap(&x2, &x3, mask);
        fe8_cswap(&z2, &z3, mask);
        swap = bit;

        fe8_add(&a, &x2, &z2); /* A = x_2 + z_2 */
        fe8_sub(&b, &x2, &z2); /* B = x_2 - z_2 */
        fe8_add(&c, &x3, &z3); /* C = x_3 + z_3 */
        fe8_sub(&d, &x3, &z3); /* D = x_3 - z_3 */
        fe8_sqr(&aa, &a);      /* AA = A^2 */
        fe8_sqr(&bb, &b);      /* BB = B^2 */
        fe8_mul(&da, &d, &a);  /* DA = D * A */
        fe8_mul(&cb, &c, &b);  /* CB = C * B */
        fe8_sub(&e, &aa, &bb); /* E = AA - BB */
        fe8_add(&t, &da, &cb); /* x_3 = (DA + CB)^2 */
        fe8_sqr(&x3, &t);
        fe8_sub(&t, &da, &cb); /* z_3 = x_1 * (DA - CB)^2 */
        fe8_sqr(&z3, &t);
        fe8_mul(&x2, &aa, &bb);                /* x_2 = AA * BB */
        fe8_add_mulsmall(&t, &aa, &e, 121665); /* z_2 = E * (AA + a24 * E) */
        fe8_mul(&z3, &z3, x1);
        fe8_mul(&z2, &e, &t);
    }
    v8 mask = _mm512_sub_epi64(zero, swap);
    fe8_cswap(&x2, &x3, mask);
    fe8_cswap(&z2, &z3, mask);

    /* x_2 * z_2^(p - 2); z_2 = 0 (small-order input) gives 0 */
    fe8_invert(&z2, &z2);
    fe8_mul(res, &x2, &z2);

    mb8__wipe(&x2, sizeof x2);
    mb8__wipe(&z2, sizeof z2);
    mb8__wipe(&x3, sizeof x3);
    mb8__wipe(&z3, sizeof z3);
    mb8__wipe(&a, sizeof a);
    mb8__wipe(&b, sizeof b);
    mb8__wipe(&c, sizeof c);
    mb8__wipe(&d, sizeof d);
    mb8__wipe(&aa, sizeof aa);
    mb8__wipe(&bb, sizeof bb);
    mb8__wipe(&e, sizeof e);
    mb8__wipe(&da, sizeof da);
    mb8__wipe(&cb, sizeof cb);
    mb8__wipe(&t, sizeof t);
    mb8__wipe(&swap, sizeof swap);
}

/* Transposed inputs: limbs of u (unused lanes: 9) and the clamped scalar words (unused
 * lanes: the clamped zero scalar). Lanes outside lane_mask are not read. */
struct x25519_io8 {
    uint64_t u[5][MB8_LANES] __attribute__((aligned(64)));
    uint64_t k[4][MB8_LANES] __attribute__((aligned(64)));
};

static void load_lanes(struct x25519_io8 *io, const uint8_t k[MB8_LANES][MB8_X25519_BYTES],
                       const uint8_t u[MB8_LANES][MB8_X25519_BYTES], unsigned lane_mask)
{
    for (unsigned i = 0; i < MB8_LANES; i++) {
        uint8_t kc[32];
        uint64_t l[5] = {9, 0, 0, 0, 0};
        memset(kc, 0, sizeof kc);
        if (lane_mask & (1u << i)) { /* public: which lanes are used */
            memcpy(kc, k[i], 32);
            limbs_from_bytes(l, u[i]);
        }
        /* decodeScalar25519 */
        kc[0] &= 248;
        kc[31] &= 127;
        kc[31] |= 64;
        for (int j = 0; j < 5; j++)
            io->u[j][i] = l[j];
        for (int w = 0; w < 4; w++)
            io->k[w][i] = mb8__x25519_load64_le(kc + 8 * w);
        mb8__wipe(kc, sizeof kc);
        mb8__wipe(l, sizeof l);
    }
}

/* ---- key generation: fixed base on the Edwards form ----------------------------------- */

/*
 * X25519(k, 9) = u([k] B) for the Ed25519 base point B (u = 9 is its image under the
 * birational map u = (1 + y) / (1 - y), a group isomorphism onto Curve25519; RFC 7748
 * §4.1). [k] B is computed as in ref10's ge_scalarmult_base: k = sum e_i 16^i with signed
 * digits e_i in [-8, 8], the 32 odd-position digits added from the table first, times 16
 * (4 doublings), then the 32 even-position digits: 64 mixed additions (7 M each) and 4
 * doublings instead of 255 ladder steps. Table entry [i][j - 1] = j 256^i B in affine
 * Niels form (y + x, y - x, 2 d x y), generated by x25519_ifma_table.py.
 *
 * Constant time: each selection reads all 8 entries of the row and keeps one per lane with
 * all-ones/zero mask vectors (|e_i| = 0 keeps the identity (1, 1, 0)); a negative digit
 * swaps y + x and y - x and negates 2 d x y, by mask. The twisted Edwards addition law
 * with a = -1 and non-square d is complete, so identity entries and doublings need no
 * special case.
 */
#include "x25519_ifma_table.h"

typedef struct {
    fe8 x, y, z, t; /* extended coordinates: x = X/Z, y = Y/Z, x y = T/Z */
} ge8;

typedef struct {
    fe8 ypx, ymx, xy2d;
} niels8;

/* r = the row entry |e| per lane (identity for 0), negated where neg is all-ones. */
static IFMA void select_niels(niels8 *r, const uint64_t row[8][3][5], v8 abs_e, v8 neg)
{
    v8 mk[8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++)
        mk[j] =
            _mm512_maskz_set1_epi64(_mm512_cmpeq_epi64_mask(abs_e, _mm512_set1_epi64(j + 1)), -1);
    const v8 is0 =
        _mm512_maskz_set1_epi64(_mm512_cmpeq_epi64_mask(abs_e, _mm512_setzero_si512()), 1);
    fe8 *dst[3] = {&r->ypx, &r->ymx, &r->xy2d};
#pragma GCC unroll 3
    for (int c = 0; c < 3; c++) {
#pragma GCC unroll 5
        for (int l = 0; l < 5; l++) {
            /* identity (1, 1, 0): limb 0 of y + x and y - x is 1 where |e| = 0 */
            v8 acc = (c < 2 && l == 0) ? is0 : _mm512_setzero_si512();
#pragma GCC unroll 8
            for (int j = 0; j < 8; j++) /* acc |= entry & mask */
                acc = _mm512_ternarylogic_epi64(acc, _mm512_set1_epi64((long long)row[j][c][l]),
                                                mk[j], 0xF8);
            dst[c]->l[l] = acc;
        }
    }
    /* negative digit: -(x, y) = (-x, y): swap y + x and y - x, negate 2 d x y */
    fe8 zero, nt;
#pragma GCC unroll 5
    for (int l = 0; l < 5; l++)
        zero.l[l] = _mm512_setzero_si512();
    fe8_cswap(&r->ypx, &r->ymx, neg);
    fe8_sub(&nt, &zero, &r->xy2d);
#pragma GCC unroll 5
    for (int l = 0; l < 5; l++) /* xy2d = neg ? nt : xy2d; truth table 0xD8 = C ? B : A */
        r->xy2d.l[l] = _mm512_ternarylogic_epi64(r->xy2d.l[l], nt.l[l], neg, 0xD8);
}

/* r = p + q (ref10 ge_madd, then to extended coordinates): 7 M. r may alias p. */
static IFMA void ge8_madd(ge8 *r, const ge8 *p, const niels8 *q)
{
    fe8 ypx, ymx, a, b, c, d, e, f, g, h;
    fe8_add(&ypx, &p->y, &p->x);
    fe8_sub(&ymx, &p->y, &p->x);
    fe8_mul(&b, &ypx, &q->ypx);
    fe8_mul(&a, &ymx, &q->ymx);
    fe8_mul(&c, &p->t, &q->xy2d);
    fe8_add(&d, &p->z, &p->z);
    fe8_sub(&e, &b, &a);
    fe8_add(&h, &b, &a);
    fe8_add(&g, &d, &c);
    fe8_sub(&f, &d, &c);
    fe8_mul(&r->x, &e, &f);
    fe8_mul(&r->y, &g, &h);
    fe8_mul(&r->z, &f, &g);
    fe8_mul(&r->t, &e, &h);
}

/* r = 2 p (ref10 ge_p2_dbl, then to extended coordinates): 4 S + 4 M. */
static IFMA_FN __attribute__((noinline)) void ge8_dbl(ge8 *r, const ge8 *p)
{
    fe8 xx, yy, zz2, s, ss, x3, y3, z3, t3;
    fe8_sqr(&xx, &p->x);
    fe8_sqr(&yy, &p->y);
    fe8_sqr(&zz2, &p->z);
    fe8_add(&zz2, &zz2, &zz2);
    fe8_add(&s, &p->x, &p->y);
    fe8_sqr(&ss, &s);
    fe8_add(&y3, &yy, &xx);
    fe8_sub(&z3, &yy, &xx);
    fe8_sub(&x3, &ss, &y3);
    fe8_sub(&t3, &zz2, &z3);
    fe8_mul(&r->x, &x3, &t3);
    fe8_mul(&r->y, &y3, &z3);
    fe8_mul(&r->z, &z3, &t3);
    fe8_mul(&r->t, &x3, &y3);
}

/* h += e_i 256^(i/2) B for the digit vectors of position i (abs and sign mask). */
static IFMA_FN __attribute__((noinline)) void ge8_madd_digit(ge8 *h, int i, v8 abs_e, v8 neg)
{
    niels8 q;
    select_niels(&q, mb8__x25519_base_table[i / 2], abs_e, neg);
    ge8_madd(h, h, &q);
    mb8__wipe(&q, sizeof q);
}

/* Signed radix-16 digits of the clamped scalar (ref10): e_i in [-8, 8), e_63 in [0, 8]
 * (k < 2^255). Branch-free: carries by arithmetic on small signed integers. Writes |e_i|
 * and an all-ones word where e_i < 0, transposed, for lane i. */
static void recode_lane(uint64_t absd[64][MB8_LANES], uint64_t negm[64][MB8_LANES], unsigned lane,
                        const uint8_t kc[32])
{
    int e[64];
    for (int i = 0; i < 32; i++) {
        e[2 * i] = kc[i] & 15;
        e[2 * i + 1] = (kc[i] >> 4) & 15;
    }
    int carry = 0;
    for (int i = 0; i < 63; i++) {
        e[i] += carry;
        carry = (e[i] + 8) >> 4; /* e[i] + 8 >= 0 */
        e[i] -= carry * 16;
    }
    e[63] += carry;
    for (int i = 0; i < 64; i++) {
        uint64_t sgn = (uint64_t)(-(int64_t)((uint32_t)e[i] >> 31)); /* all-ones if e < 0 */
        uint64_t v = (uint64_t)(int64_t)e[i];
        absd[i][lane] = (v ^ sgn) - sgn;
        negm[i][lane] = sgn;
    }
    mb8__wipe(e, sizeof e);
    mb8__wipe(&carry, sizeof carry);
}

/* The fixed-base kernel's digits, in the caller's scratch (MB8__X25519_WS_BYTES). */
struct x25519_base_ws {
    uint64_t absd[64][MB8_LANES] __attribute__((aligned(64)));
    uint64_t negm[64][MB8_LANES] __attribute__((aligned(64)));
};
_Static_assert(sizeof(struct x25519_base_ws) <= MB8__X25519_WS_BYTES, "MB8__X25519_WS_BYTES");

static IFMA_FN void x25519_base_ifma(uint8_t out[MB8_LANES][MB8_X25519_BYTES],
                                     const uint8_t k[MB8_LANES][MB8_X25519_BYTES],
                                     unsigned lane_mask, struct x25519_base_ws *ws)
{
    uint64_t(*absd)[MB8_LANES] = ws->absd;
    uint64_t(*negm)[MB8_LANES] = ws->negm;
    uint64_t res[5][MB8_LANES] __attribute__((aligned(64)));
    ge8 h;
    fe8 num, den, r;

    for (unsigned i = 0; i < MB8_LANES; i++) {
        uint8_t kc[32];
        memset(kc, 0, sizeof kc);
        if (lane_mask & (1u << i)) /* public: which lanes are used */
            memcpy(kc, k[i], 32);
        kc[0] &= 248; /* decodeScalar25519 */
        kc[31] &= 127;
        kc[31] |= 64;
        recode_lane(absd, negm, i, kc);
        mb8__wipe(kc, sizeof kc);
    }
    /* h = identity (0 : 1 : 1 : 0) */
#pragma GCC unroll 5
    for (int l = 0; l < 5; l++)
        h.x.l[l] = h.y.l[l] = h.z.l[l] = h.t.l[l] = _mm512_setzero_si512();
    h.y.l[0] = h.z.l[0] = _mm512_set1_epi64(1);
    for (int i = 1; i < 64; i += 2)
        ge8_madd_digit(&h, i, _mm512_load_si512((const void *)absd[i]),
                       _mm512_load_si512((const void *)negm[i]));
    for (int n = 0; n < 4; n++)
        ge8_dbl(&h, &h);
    for (int i = 0; i < 64; i += 2)
        ge8_madd_digit(&h, i, _mm512_load_si512((const void *)absd[i]),
                       _mm512_load_si512((const void *)negm[i]));

    /* u = (1 + y) / (1 - y) = (Z + Y) / (Z - Y); Z - Y != 0 as [k] B is not the identity */
    fe8_add(&num, &h.z, &h.y);
    fe8_sub(&den, &h.z, &h.y);
    fe8_invert(&den, &den);
    fe8_mul(&r, &num, &den);
    for (int j = 0; j < 5; j++)
        _mm512_store_si512((void *)res[j], r.l[j]);
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (lane_mask & (1u << i)) {
            uint64_t l[5] = {res[0][i], res[1][i], res[2][i], res[3][i], res[4][i]};
            limbs_to_bytes(out[i], l);
            mb8__wipe(l, sizeof l);
        }
    }
    mb8__wipe(ws, sizeof(*ws));
    mb8__wipe(res, sizeof res);
    mb8__wipe(&h, sizeof h);
    mb8__wipe(&num, sizeof num);
    mb8__wipe(&den, sizeof den);
    mb8__wipe(&r, sizeof r);
}

/* ---- entry points ------------------------------------------------------------------ */

static IFMA_FN void x25519_ifma(uint8_t out[MB8_LANES][MB8_X25519_BYTES],
                                const uint8_t k[MB8_LANES][MB8_X25519_BYTES],
                                const uint8_t u[MB8_LANES][MB8_X25519_BYTES], unsigned lane_mask)
{
    struct x25519_io8 io;
    uint64_t res[5][MB8_LANES] __attribute__((aligned(64)));
    fe8 x1, r;
    v8 kw[4];

    load_lanes(&io, k, u, lane_mask);
    for (int j = 0; j < 5; j++)
        x1.l[j] = _mm512_load_si512((const void *)io.u[j]);
    for (int w = 0; w < 4; w++)
        kw[w] = _mm512_load_si512((const void *)io.k[w]);
    ladder8(&r, &x1, kw);
    for (int j = 0; j < 5; j++)
        _mm512_store_si512((void *)res[j], r.l[j]);
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (lane_mask & (1u << i)) {
            uint64_t l[5] = {res[0][i], res[1][i], res[2][i], res[3][i], res[4][i]};
            limbs_to_bytes(out[i], l);
            mb8__wipe(l, sizeof l);
        }
    }
    mb8__wipe(&io, sizeof io);
    mb8__wipe(res, sizeof res);
    mb8__wipe(&x1, sizeof x1);
    mb8__wipe(&r, sizeof r);
    mb8__wipe(kw, sizeof kw);
}

void mb8__x25519_ladder52_ifma(uint8_t out[MB8_LANES][MB8_X25519_BYTES],
                               const uint8_t k[MB8_LANES][MB8_X25519_BYTES],
                               const uint8_t u[MB8_LANES][MB8_X25519_BYTES], unsigned lane_mask)
{
    x25519_ifma(out, k, u, lane_mask);
}

void mb8__x25519_base_ifma(uint8_t out[MB8_LANES][MB8_X25519_BYTES],
                           const uint8_t k[MB8_LANES][MB8_X25519_BYTES], unsigned lane_mask,
                           void *ws)
{
    x25519_base_ifma(out, k, lane_mask, ws);
}
