/*
 * The AVX-512 IFMA kernel of mb8_rsa_private_crt (see mb8/rsa.h): the two CRT
 * exponentiations of all 8 lanes at once (the 8-lane layout of Drucker and Gueron, "Fast
 * modular squaring with AVX512IFMA", ITNG 2019, and of Intel's crypto_mb).
 *
 * Layout: operand-major transposition. A number of n radix-2^52 limbs for the 8 lanes is
 * n zmm vectors; vector j holds limb j of every lane, so carries, shifts and the table
 * selection never cross lanes, and each lane may have its own modulus (key).
 *
 * Arithmetic: the word-serial almost-Montgomery multiplication of the portable kernel
 * (rsa_ref.c, amm()) with vpmadd52luq/vpmadd52huq doing the 52x52-bit products: per digit
 * b_i, every limb j gets lo(a_j b_i) + lo(m_j y) + hi(a_(j-1) b_i) + hi(m_(j-1) y) with no
 * carry chain (64-bit limbs hold the lazy sums), y = lo(acc_0 k0) computed in the vector
 * unit for all lanes; one carry propagation at the end. Outputs are < 2m for inputs < 2m
 * (R = 2^(52n) > 4m), so no subtraction inside the exponentiation; one constant-time
 * subtraction at the end. The same function as the portable kernel, bit for bit.
 *
 * Exponentiation: fixed window of MB8__RSA_WIN_IFMA bits (each lane's own window of its
 * own dP/dQ, at the same public position), the table of 2^w entries per lane scanned in
 * full for every selection with compare masks and blends: no gather, no secret index, no
 * secret branch.
 *
 * Before and after the exponentiations each lane runs the portable steps (blinding, Garner,
 * unblinding, the fault check: mb8__rsa_lane_pre/post), a small share of the work.
 *
 * Compiled for AVX-512F/VL/BW/IFMA by target attribute; only called when
 * mb8_cpu_has_ifma() (rsa.c).
 */
#include <immintrin.h>

#include "bn52.h"

#define MB8__RSA_WIN_IFMA 4
#define IFMA __attribute__((target("avx512f,avx512vl,avx512bw,avx512ifma"), always_inline)) inline
#define IFMA_FN __attribute__((target("avx512f,avx512vl,avx512bw,avx512ifma")))

typedef __m512i v8;

static IFMA v8 mask52(void)
{
    return _mm512_set1_epi64((long long)BN52_MASK);
}

/* An empty asm that makes the compiler forget where p points: loads through p stay inside
 * the loop that uses them instead of being hoisted out and spilled to the stack (gcc does
 * that with fully unrolled rows, one store and one load per IFMA operand). */
#define OPAQUE_PTR(p) __asm__("" : "+r"(p))

/*
 * r = a * b * 2^(-52n) mod m for 8 lanes (transposed; r < 2m for a, b < 2m, 4m < 2^(52n)):
 * word-serial almost-Montgomery multiplication, operand scanning with a window of n
 * accumulators that slides down two limbs per pass of two digits b_i, b_(i+1) (n is even).
 * The pass first finds the two reduction digits y_i, y_(i+1) from the window's two lowest
 * limbs, then gives every other limb one chain of eight IFMA (the four products of the
 * digits first, the four of y last, so the y have the shortest path to the next pass): n
 * independent chains per pass for two IFMA pipes, and each a_j and m_j serves four IFMA of
 * a pass, so half the loads of one digit per pass (Zen 4 issues one 512-bit load per IFMA
 * at best). r must not alias a, b or m; n is a compile-time constant at every call site
 * (n <= 80).
 */
static IFMA void amm8(v8 *restrict r, const v8 *a, const v8 *b, const v8 *restrict m, v8 k0,
                      size_t n)
{
    const v8 zero = _mm512_setzero_si512(), msk = mask52();
    v8 acc[80];

#pragma GCC unroll 80
    for (size_t j = 0; j < n; j++)
        acc[j] = zero;
    for (size_t i = 0; i < n; i += 2) {
        const v8 *ap = a, *mp = m;
        OPAQUE_PTR(ap);
        OPAQUE_PTR(mp);
        v8 b0 = b[i], b1 = b[i + 1];
        v8 t0 = _mm512_madd52lo_epu64(acc[0], ap[0], b0);
        v8 y0 = _mm512_and_si512(_mm512_madd52lo_epu64(zero, t0, k0), msk);
        v8 c0 = _mm512_srli_epi64(_mm512_madd52lo_epu64(t0, mp[0], y0), BN52_BITS);
        v8 t1 = _mm512_madd52lo_epu64(acc[1], ap[1], b0);
        t1 = _mm512_madd52hi_epu64(t1, ap[0], b0);
        t1 = _mm512_madd52lo_epu64(t1, ap[0], b1);
        t1 = _mm512_madd52lo_epu64(t1, mp[1], y0);
        t1 = _mm512_add_epi64(_mm512_madd52hi_epu64(t1, mp[0], y0), c0);
        v8 y1 = _mm512_and_si512(_mm512_madd52lo_epu64(zero, t1, k0), msk);
        v8 c1 = _mm512_srli_epi64(_mm512_madd52lo_epu64(t1, mp[0], y1), BN52_BITS);
#pragma GCC unroll 80
        for (size_t j = 2; j < n; j++) {
            v8 u = _mm512_madd52lo_epu64(acc[j], ap[j], b0);
            u = _mm512_madd52hi_epu64(u, ap[j - 1], b0);
            u = _mm512_madd52lo_epu64(u, ap[j - 1], b1);
            u = _mm512_madd52hi_epu64(u, ap[j - 2], b1);
            u = _mm512_madd52lo_epu64(u, mp[j], y0);
            u = _mm512_madd52hi_epu64(u, mp[j - 1], y0);
            u = _mm512_madd52lo_epu64(u, mp[j - 1], y1);
            acc[j - 2] = _mm512_madd52hi_epu64(u, mp[j - 2], y1);
        }
        acc[0] = _mm512_add_epi64(acc[0], c1);
        v8 u = _mm512_madd52hi_epu64(zero, ap[n - 1], b0);
        u = _mm512_madd52lo_epu64(u, ap[n - 1], b1);
        u = _mm512_madd52hi_epu64(u, ap[n - 2], b1);
        u = _mm512_madd52hi_epu64(u, mp[n - 1], y0);
        u = _mm512_madd52lo_epu64(u, mp[n - 1], y1);
        acc[n - 2] = _mm512_madd52hi_epu64(u, mp[n - 2], y1);
        u = _mm512_madd52hi_epu64(zero, ap[n - 1], b1);
        acc[n - 1] = _mm512_madd52hi_epu64(u, mp[n - 1], y1);
    }
    /* carry propagation, per lane */
    v8 c = zero;
#pragma GCC unroll 80
    for (size_t j = 0; j < n; j++) {
        v8 z = _mm512_add_epi64(acc[j], c);
        r[j] = _mm512_and_si512(z, msk);
        c = _mm512_srli_epi64(z, BN52_BITS);
    }
}

/*
 * The square of a (n limbs, 8 lanes) into t[0 .. 2n - 1], lazy limbs: product scanning,
 * column k sums lo(a_i a_j) for i + j = k and hi(a_i a_j) for i + j = k - 1 (i < j),
 * doubled (IFMA takes 52-bit operands, so the doubling is of the sums, not of a_i), plus
 * the square term of the column; four chains per column (lo and hi, even and odd i) so
 * that few columns in flight fill the pipes. n(n + 1) IFMA; each limb < 2(2n + 1) 2^52.
 */
static IFMA void sqr8(v8 *t, const v8 *a, size_t n)
{
    const v8 zero = _mm512_setzero_si512();

#pragma GCC unroll 160
    for (size_t k = 0; k < 2 * n; k++) {
        v8 l0 = zero, l1 = zero, h0 = zero, h1 = zero;
        const size_t lo0 = k + 1 > n ? k + 1 - n : 0, lo1 = (k + 1) / 2; /* 2i < k */
        const size_t hi0 = k > n ? k - n : 0, hi1 = k / 2;               /* 2i < k - 1 */
#pragma GCC unroll 80
        for (size_t i = lo0; i < lo1; i++) {
            if ((i - lo0) % 2 == 0)
                l0 = _mm512_madd52lo_epu64(l0, a[i], a[k - i]);
            else
                l1 = _mm512_madd52lo_epu64(l1, a[i], a[k - i]);
        }
#pragma GCC unroll 80
        for (size_t i = hi0; i < hi1; i++) {
            if ((i - hi0) % 2 == 0)
                h0 = _mm512_madd52hi_epu64(h0, a[i], a[k - 1 - i]);
            else
                h1 = _mm512_madd52hi_epu64(h1, a[i], a[k - 1 - i]);
        }
        v8 col = _mm512_add_epi64(_mm512_add_epi64(l0, l1), _mm512_add_epi64(h0, h1));
        col = _mm512_slli_epi64(col, 1);
        if (k % 2 == 0)
            col = _mm512_madd52lo_epu64(col, a[k / 2], a[k / 2]);
        else
            col = _mm512_madd52hi_epu64(col, a[k / 2], a[k / 2]);
        t[k] = col;
    }
}

/*
 * r = t * 2^(-52n) mod m, r < 2m, for t (2n limbs, 8 lanes, lazy limbs) below m 2^(52n):
 * Montgomery reduction (separated operand scanning)
 * with a sliding window of n accumulators, two rows per pass (n even). t is only read.
 */
static IFMA void redc8(v8 *restrict r, const v8 *t, const v8 *restrict m, v8 k0, size_t n)
{
    const v8 zero = _mm512_setzero_si512(), msk = mask52();

    /* Montgomery reduction with a sliding window of n accumulators, two rows per pass (n
     * is even): row i makes the lowest limb zero mod 2^52 and carries it up, then row i + 1
     * the next; limbs n + i and n + i + 1 of the square enter the window. Each m_j serves
     * four IFMA of a pass, so half the loads of one row per pass. */
    v8 acc[80];
#pragma GCC unroll 80
    for (size_t j = 0; j < n; j++)
        acc[j] = t[j];
    for (size_t i = 0; i < n; i += 2) {
        const v8 *mp = m;
        OPAQUE_PTR(mp);
        v8 y0 = _mm512_and_si512(_mm512_madd52lo_epu64(zero, acc[0], k0), msk);
        v8 c0 = _mm512_srli_epi64(_mm512_madd52lo_epu64(acc[0], mp[0], y0), BN52_BITS);
        v8 a1 = _mm512_madd52lo_epu64(acc[1], mp[1], y0);
        a1 = _mm512_add_epi64(_mm512_madd52hi_epu64(a1, mp[0], y0), c0);
        v8 y1 = _mm512_and_si512(_mm512_madd52lo_epu64(zero, a1, k0), msk);
        v8 c1 = _mm512_srli_epi64(_mm512_madd52lo_epu64(a1, mp[0], y1), BN52_BITS);
#pragma GCC unroll 80
        for (size_t j = 2; j < n; j++) {
            v8 u = _mm512_madd52lo_epu64(acc[j], mp[j], y0);
            u = _mm512_madd52hi_epu64(u, mp[j - 1], y0);
            u = _mm512_madd52lo_epu64(u, mp[j - 1], y1);
            acc[j - 2] = _mm512_madd52hi_epu64(u, mp[j - 2], y1);
        }
        acc[0] = _mm512_add_epi64(acc[0], c1);
        v8 u = _mm512_madd52hi_epu64(t[n + i], mp[n - 1], y0);
        u = _mm512_madd52lo_epu64(u, mp[n - 1], y1);
        acc[n - 2] = _mm512_madd52hi_epu64(u, mp[n - 2], y1);
        acc[n - 1] = _mm512_madd52hi_epu64(t[n + i + 1], mp[n - 1], y1);
    }
    v8 c = zero;
#pragma GCC unroll 80
    for (size_t j = 0; j < n; j++) {
        v8 z = _mm512_add_epi64(acc[j], c);
        r[j] = _mm512_and_si512(z, msk);
        c = _mm512_srli_epi64(z, BN52_BITS);
    }
}

/*
 * Almost-Montgomery squaring for 8 lanes: r = a^2 * 2^(-52n) mod m, r < 2m for a < 2m (the
 * same value as amm8(r, a, a, ...)), n even: the square (sqr8), then Montgomery reduction
 * (separated operand scanning) with a sliding window of n accumulators as amm8's. About
 * n^2 + n + n(2n + 1) IFMA instead of 4n^2 (Drucker-Gueron's dedicated squaring).
 * One level of Karatsuba on the square (3n^2/4 + 3n/2 IFMA) was measured on Zen 4: no faster
 * at n = 20 (its additions and the borrow chain of |a0 - a1| cost what the 90 IFMA saved)
 * and 2-9% slower at 30 and 40.
 */
static IFMA void ams8(v8 *restrict r, const v8 *a, const v8 *restrict m, v8 k0, size_t n)
{
    v8 t[160]; /* the square, 2n <= 160 limbs */

    sqr8(t, a, n);
    redc8(r, t, m, k0, n);
}

/*
 * The limb-count specialisations of an 8-lane operation op(ARGS..., n) (n public: the key
 * size): name##xN(PARAMS), a noinline copy of op with n = N (a constant, so its loops are
 * unrolled) for every N of SMALLER and for LAST, and name##n(PARAMS, n), which calls the one
 * for n, the one for LAST for any other n. PARAMS and ARGS are parenthesised lists.
 */
#define IFMA_SPECIALISED(SMALLER, LAST, name, op, PARAMS, ARGS)                                    \
    SMALLER(IFMA_SPECIALISATION, name, op, PARAMS, ARGS)                                           \
    IFMA_SPECIALISATION(LAST, name, op, PARAMS, ARGS)                                              \
    static IFMA void name##n(IFMA_LIST PARAMS, size_t n)                                           \
    {                                                                                              \
        switch (n) {                                                                               \
            SMALLER(IFMA_SPECIALISED_CASE, name, op, PARAMS, ARGS)                                 \
        default:                                                                                   \
            name##x##LAST ARGS;                                                                    \
            break;                                                                                 \
        }                                                                                          \
    }
#define IFMA_LIST(...) __VA_ARGS__
#define IFMA_SPECIALISATION(N, name, op, PARAMS, ARGS)                                             \
    static IFMA_FN __attribute__((noinline)) void name##x##N PARAMS                                \
    {                                                                                              \
        op(IFMA_LIST ARGS, N);                                                                     \
    }
#define IFMA_SPECIALISED_CASE(N, name, op, PARAMS, ARGS)                                           \
    case N:                                                                                        \
        name##x##N ARGS;                                                                           \
        break;

/* The sizes below 40 and 80 limbs of bn52.h's lists, as X-macros. */
#define SIZES_BELOW_40(X, ...) X(20, __VA_ARGS__) X(30, __VA_ARGS__)
#define SIZES_BELOW_80(X, ...) MB8__RSA_HALF_SIZES(X, __VA_ARGS__) X(60, __VA_ARGS__)

IFMA_SPECIALISED(SIZES_BELOW_40, 40, redc8, redc8,
                 (v8 *restrict r, const v8 *t, const v8 *restrict m, v8 k0), (r, t, m, k0))
IFMA_SPECIALISED(SIZES_BELOW_80, 80, ams8, ams8,
                 (v8 *restrict r, const v8 *a, const v8 *restrict m, v8 k0), (r, a, m, k0))
IFMA_SPECIALISED(SIZES_BELOW_80, 80, amm8, amm8,
                 (v8 *restrict r, const v8 *a, const v8 *b, const v8 *restrict m, v8 k0),
                 (r, a, b, m, k0))

/* The selection masks of select8: mk[e] is all-ones in the lanes whose index is e. */
static IFMA void select8_masks(v8 mk[1u << MB8__RSA_WIN_IFMA], v8 idx)
{
    for (unsigned e = 0; e < (1u << MB8__RSA_WIN_IFMA); e++)
        mk[e] = _mm512_maskz_set1_epi64(
            _mm512_cmpeq_epi64_mask(idx, _mm512_set1_epi64((long long)e)), -1);
}

/*
 * Limbs j0 .. j1 - 1 of r = table[idx_lane] per lane: every entry is read, and selected by
 * the masks of select8_masks. Limb by limb, with the selection in a register (a masked
 * store followed by a load of the same address cannot be forwarded and stalls). Done in
 * parts between the squarings, so that its loads and logic overlap their IFMA.
 */
static IFMA void select8_part(v8 *r, const v8 *table, size_t n, const v8 *mk, size_t j0, size_t j1)
{
    for (size_t j = j0; j < j1; j++) {
        v8 acc = _mm512_setzero_si512();
#pragma GCC unroll 32
        for (unsigned e = 0; e < (1u << MB8__RSA_WIN_IFMA); e++) /* acc |= entry & mask */
            acc = _mm512_ternarylogic_epi64(acc, table[(size_t)e * n + j], mk[e], 0xF8);
        r[j] = acc;
    }
}

/* r = table[idx_lane] per lane, all n limbs. */
static IFMA void select8(v8 *r, const v8 *table, size_t n, v8 idx)
{
    v8 mk[1u << MB8__RSA_WIN_IFMA];

    select8_masks(mk, idx);
    select8_part(r, table, n, mk, 0, n);
}

/* Transposes lane arrays (n limbs each; lane i at src[i]) into n vectors. */
static IFMA void to_vec(v8 *dst, const uint64_t *const src[MB8_LANES], size_t n)
{
    for (size_t j = 0; j < n; j++)
        dst[j] = _mm512_set_epi64((long long)src[7][j], (long long)src[6][j], (long long)src[5][j],
                                  (long long)src[4][j], (long long)src[3][j], (long long)src[2][j],
                                  (long long)src[1][j], (long long)src[0][j]);
}

static IFMA void from_vec(uint64_t *const dst[MB8_LANES], const v8 *src, size_t n)
{
    uint64_t buf[MB8_LANES] __attribute__((aligned(64)));

    for (size_t j = 0; j < n; j++) {
        _mm512_store_si512((void *)buf, src[j]);
        for (unsigned i = 0; i < MB8_LANES; i++)
            dst[i][j] = buf[i];
    }
    mb8__wipe(buf, sizeof(buf));
}

/* The vector workspace of one exponentiation, in vectors (h = half limbs). */
#define EXP8_VECS(h) ((size_t)(h) * ((1u << MB8__RSA_WIN_IFMA) + 5))

/*
 * Per lane i: res[i] = c[i]^d[i] mod m[i], fully reduced (h limbs), where the lane's
 * modulus, R^2, k0 and exponent come from its key (`half` selects p/dP or q/dQ); c[i] is
 * 2h limbs (the blinded input, < n). All lanes run the same sequence: the window position
 * and the number of windows depend only on the key size.
 */
static IFMA_FN void exp_half8(uint64_t *const res[MB8_LANES], const uint64_t *const c[MB8_LANES],
                              const mb8_rsa_key_t *const key[MB8_LANES], int half, size_t h,
                              unsigned bits, v8 *ws)
{
    v8 *m = ws, *rr = m + h, *x = rr + h, *y = x + h, *sel = y + h;
    v8 *tab = sel + h; /* 2^w entries of h vectors */
    const uint64_t *mp[MB8_LANES], *rrp[MB8_LANES], *dp[MB8_LANES];
    uint64_t k0s[MB8_LANES], idx[MB8_LANES] __attribute__((aligned(64)));
    v8 mk[1u << MB8__RSA_WIN_IFMA];

    for (unsigned i = 0; i < MB8_LANES; i++) {
        const mb8_rsa_key_t *k = key[i];

        mp[i] = half ? mb8__rsa_q(k) : mb8__rsa_p(k);
        rrp[i] = half ? mb8__rsa_rrq(k) : mb8__rsa_rrp(k);
        dp[i] = half ? mb8__rsa_dq(k) : mb8__rsa_dp(k);
        k0s[i] = half ? k->k0q : k->k0p;
    }
    /* c R^-1 mod m (< 2m), all lanes at once: a Montgomery reduction of the 2h-limb input
     * (c < n < m R), in the table's space before the table is built */
    v8 k0 = _mm512_loadu_si512((const void *)k0s);
    to_vec(m, mp, h);
    to_vec(rr, rrp, h);
    to_vec(tab, c, 2 * h);
    redc8n(x, tab, m, k0, h);
    /* into the Montgomery domain: two AMMs by R^2 give c R; tab[0] = R mod m, tab[1] = c R */
    amm8n(y, x, rr, m, k0, h);
    amm8n(tab + h, y, rr, m, k0, h);
    for (size_t j = 0; j < h; j++)
        sel[j] = _mm512_setzero_si512();
    sel[0] = _mm512_set1_epi64(1);
    amm8n(tab, rr, sel, m, k0, h);
    for (size_t e = 2; e < (1u << MB8__RSA_WIN_IFMA); e++)
        amm8n(tab + e * h, tab + (e - 1) * h, tab + h, m, k0, h);

    size_t nwin = (bits / 2 + MB8__RSA_WIN_IFMA - 1) / MB8__RSA_WIN_IFMA;
    size_t pos = (nwin - 1) * MB8__RSA_WIN_IFMA;
    for (unsigned i = 0; i < MB8_LANES; i++)
        idx[i] = mb8__rsa_window(dp[i], h, pos, MB8__RSA_WIN_IFMA);
    select8(x, tab, h, _mm512_load_si512((const void *)idx));
    while (pos > 0) {
        pos -= MB8__RSA_WIN_IFMA;
        /* the selection in a part before each squaring: its loads and logic run beside the
         * squarings' IFMA instead of stalling the multiplication that needs it */
        for (unsigned i = 0; i < MB8_LANES; i++)
            idx[i] = mb8__rsa_window(dp[i], h, pos, MB8__RSA_WIN_IFMA);
        select8_masks(mk, _mm512_load_si512((const void *)idx));
        for (size_t s = 0; s < MB8__RSA_WIN_IFMA; s++) {
            v8 *t;
            select8_part(sel, tab, h, mk, s * h / MB8__RSA_WIN_IFMA,
                         (s + 1) * h / MB8__RSA_WIN_IFMA);
            ams8n(y, x, m, k0, h);
            t = x, x = y, y = t;
        }
        amm8n(y, x, sel, m, k0, h);
        v8 *t = x;
        x = y, y = t;
    }
    /* out of the domain (AMM by 1: result <= m), then subtract m once where needed */
    for (size_t j = 0; j < h; j++)
        sel[j] = _mm512_setzero_si512();
    sel[0] = _mm512_set1_epi64(1);
    amm8n(y, x, sel, m, k0, h);
    from_vec(res, y, h);
    for (unsigned i = 0; i < MB8_LANES; i++)
        mb8__bn52_csub(res[i], mp[i], h);
    mb8__wipe(idx, sizeof(idx));
}

/* The vectors of the mod-n steps (nl = 2h limbs): n, R^2 mod n, and 4 temporaries. */
#define MODN_VECS(h) ((size_t)12 * (h))

/* Per lane: r[i] = a[i] * b[i] mod n (fully reduced) for a, b < 2n: AMM, AMM by R^2, csub. */
static IFMA_FN void mulmod_n8(uint64_t *const r[MB8_LANES], const uint64_t *const a[MB8_LANES],
                              const uint64_t *const b[MB8_LANES],
                              const mb8_rsa_key_t *const k[MB8_LANES], const v8 *n, const v8 *rrn,
                              v8 k0, size_t nl, v8 *t)
{
    v8 *va = t, *vb = va + nl, *vt = vb + nl;

    to_vec(va, a, nl);
    to_vec(vb, b, nl);
    amm8n(vt, va, vb, n, k0, nl);
    amm8n(va, vt, rrn, n, k0, nl);
    from_vec(r, va, nl);
    for (unsigned i = 0; i < MB8_LANES; i++)
        mb8__bn52_csub(r[i], mb8__rsa_n(k[i]), nl);
}

/*
 * Per lane: se[i] = s[i]^e mod n (fully reduced), e being the same public exponent in every
 * lane (the fault check of mb8__rsa_lane_post, 8 lanes at once).
 */
static IFMA_FN void fault_check8(uint64_t *const se[MB8_LANES], const uint64_t *const s[MB8_LANES],
                                 const mb8_rsa_key_t *const k[MB8_LANES], const v8 *n,
                                 const v8 *rrn, v8 k0, size_t nl, v8 *t)
{
    v8 *sr = t, *x = sr + nl, *y = x + nl, *one = y + nl;
    const mb8_rsa_key_t *k0key = k[0];
    const uint64_t *e = mb8__rsa_e(k0key);

    to_vec(x, s, nl);
    amm8n(sr, x, rrn, n, k0, nl); /* s R */
    memcpy(x, sr, nl * sizeof(v8));
    for (int b = (int)k0key->e_bits - 2; b >= 0; b--) {
        v8 *tt;
        ams8n(y, x, n, k0, nl);
        tt = x, x = y, y = tt;
        if ((e[b / BN52_BITS] >> (b % BN52_BITS)) & 1) {
            amm8n(y, x, sr, n, k0, nl);
            tt = x, x = y, y = tt;
        }
    }
    for (size_t j = 0; j < nl; j++)
        one[j] = _mm512_setzero_si512();
    one[0] = _mm512_set1_epi64(1);
    amm8n(y, x, one, n, k0, nl);
    from_vec(se, y, nl);
    for (unsigned i = 0; i < MB8_LANES; i++)
        mb8__bn52_csub(se[i], mb8__rsa_n(k[i]), nl);
}

/* r = a mod m for a < 2m (n normalized 52-bit limbs per lane): a - m where that does not
 * borrow, by masks. r may alias a. */
static IFMA void csub8(v8 *r, const v8 *a, const v8 *m, size_t n)
{
    const v8 msk = mask52();
    v8 d[40], c = _mm512_setzero_si512();

    for (size_t j = 0; j < n; j++) {
        v8 x = _mm512_add_epi64(_mm512_sub_epi64(a[j], m[j]), c);
        c = _mm512_srai_epi64(x, BN52_BITS); /* 0 or -1 */
        d[j] = _mm512_and_si512(x, msk);
    }
    /* c = -1: a < m, keep a */
    for (size_t j = 0; j < n; j++)
        r[j] = _mm512_ternarylogic_epi64(c, a[j], d[j], 0xCA);
    mb8__wipe(d, sizeof(d));
}

/* r = a - b mod m for a, b < m (normalized limbs): the difference, plus m where it
 * borrowed (by a mask). r may alias a or b. */
static IFMA void subm8(v8 *r, const v8 *a, const v8 *b, const v8 *m, size_t n)
{
    const v8 msk = mask52();
    v8 c = _mm512_setzero_si512();

    for (size_t j = 0; j < n; j++) {
        v8 x = _mm512_add_epi64(_mm512_sub_epi64(a[j], b[j]), c);
        c = _mm512_srai_epi64(x, BN52_BITS);
        r[j] = _mm512_and_si512(x, msk);
    }
    const v8 neg = c; /* all-ones where a < b */
    c = _mm512_setzero_si512();
    for (size_t j = 0; j < n; j++) {
        v8 x = _mm512_add_epi64(_mm512_add_epi64(r[j], _mm512_and_si512(m[j], neg)), c);
        c = _mm512_srli_epi64(x, BN52_BITS);
        r[j] = _mm512_and_si512(x, msk);
    }
}

/* The vectors garner8 uses (h = half limbs). */
#define GARNER_VECS(h) ((size_t)11 * (h))

/*
 * Garner's recombination for 8 lanes, the vector form of mb8__rsa_garner (rsa_ref.c), bit
 * for bit: s[i] = m_q + q ((m_p - m_q) qInv mod p), 2h limbs, from the halves mp[i] < p
 * and mq[i] < q (h limbs each). The difference mod p (m_q < q < 2p: one masked
 * subtraction first), an AMM by qInv R mod p, one masked subtraction, then the plain
 * product by q (IFMA lo/hi into 2h column sums below 2^59) plus m_q and one carry pass.
 * t: GARNER_VECS(h) vectors.
 */
static IFMA_FN void garner8(uint64_t *const s[MB8_LANES], const uint64_t *const mp[MB8_LANES],
                            const uint64_t *const mq[MB8_LANES],
                            const mb8_rsa_key_t *const k[MB8_LANES], size_t h, v8 *t)
{
    v8 *vp = t, *vq = vp + h, *vqi = vq + h, *vmp = vqi + h, *vmq = vmp + h, *d = vmq + h;
    v8 *hh = d + h, *prod = hh + h; /* prod: 2h */
    const uint64_t *pp[MB8_LANES], *qp[MB8_LANES], *qip[MB8_LANES];
    uint64_t k0s[MB8_LANES];
    const v8 msk = mask52();

    for (unsigned i = 0; i < MB8_LANES; i++) {
        pp[i] = mb8__rsa_p(k[i]);
        qp[i] = mb8__rsa_q(k[i]);
        qip[i] = mb8__rsa_qinvr(k[i]);
        k0s[i] = k[i]->k0p;
    }
    const v8 k0 = _mm512_loadu_si512((const void *)k0s);
    to_vec(vp, pp, h);
    to_vec(vq, qp, h);
    to_vec(vqi, qip, h);
    to_vec(vmp, mp, h);
    to_vec(vmq, mq, h);
    csub8(d, vmq, vp, h);         /* m_q mod p */
    subm8(d, vmp, d, vp, h);      /* m_p - m_q mod p */
    amm8n(hh, d, vqi, vp, k0, h); /* (m_p - m_q) qInv mod p, < 2p */
    csub8(hh, hh, vp, h);
    for (size_t j = 0; j < 2 * h; j++)
        prod[j] = j < h ? vmq[j] : _mm512_setzero_si512();
    for (size_t i = 0; i < h; i++)
        for (size_t j = 0; j < h; j++) {
            prod[i + j] = _mm512_madd52lo_epu64(prod[i + j], hh[i], vq[j]);
            prod[i + j + 1] = _mm512_madd52hi_epu64(prod[i + j + 1], hh[i], vq[j]);
        }
    v8 c = _mm512_setzero_si512();
    for (size_t j = 0; j < 2 * h; j++) {
        v8 z = _mm512_add_epi64(prod[j], c);
        prod[j] = _mm512_and_si512(z, msk);
        c = _mm512_srli_epi64(z, BN52_BITS);
    }
    from_vec(s, prod, 2 * h);
}

/* Do the 8 lanes share the public exponent (so the fault check can run as one batch)? */
static int same_e(const mb8_rsa_key_t *const k[MB8_LANES])
{
    size_t nl = 2 * (size_t)k[0]->h;

    for (unsigned i = 1; i < MB8_LANES; i++)
        if (k[i]->e_bits != k[0]->e_bits ||
            memcmp(mb8__rsa_e(k[i]), mb8__rsa_e(k[0]), nl * sizeof(uint64_t)) != 0)
            return 0;
    return 1;
}

size_t mb8__rsa_ifma_scratch_limbs(size_t h)
{
    /* per lane: the lane workspace; then the vectors (plus 64-byte alignment slack) */
    /* Garner runs after the mod-n steps' n and R^2 mod n (4h vectors, in MODN_VECS) */
    size_t modn = MODN_VECS(h) > 4 * h + GARNER_VECS(h) ? MODN_VECS(h) : 4 * h + GARNER_VECS(h);
    return MB8_LANES * MB8__RSA_WS_LANE(h) + 8 * (EXP8_VECS(h) > modn ? EXP8_VECS(h) : modn) + 8;
}

IFMA_FN mb8_status_t mb8__rsa_private_crt_ifma(uint8_t *const out[MB8_LANES],
                                               const uint8_t *const in[MB8_LANES],
                                               const mb8_rsa_key_t *const key[MB8_LANES],
                                               const uint8_t *const blind[MB8_LANES],
                                               const uint8_t *const unblind[MB8_LANES],
                                               uint64_t *scratch, unsigned lanes)
{
    const mb8_rsa_key_t *k[MB8_LANES];
    uint64_t in_ok[MB8_LANES];
    const uint64_t *c[MB8_LANES];
    uint64_t *mpv[MB8_LANES], *mqv[MB8_LANES], *ws[MB8_LANES];
    unsigned first = 0, bits;
    size_t h, used;
    mb8_status_t st = 0;

    while (!(lanes >> first & 1))
        first++;
    h = key[first]->h;
    bits = key[first]->bits;
    v8 *vws =
        (v8 *)(((uintptr_t)(scratch + MB8_LANES * MB8__RSA_WS_LANE(h)) + 63) & ~(uintptr_t)63);
    used = mb8__rsa_ifma_scratch_limbs(h);

    /* unused lanes compute a copy of the first used lane (public: the lane pattern) */
    const uint8_t *bl[MB8_LANES], *ub[MB8_LANES];
    int all_blind = 1, no_blind = 1;
    for (unsigned i = 0; i < MB8_LANES; i++) {
        unsigned src = (lanes >> i & 1) ? i : first;

        k[i] = key[src];
        ws[i] = scratch + (size_t)i * MB8__RSA_WS_LANE(h);
        bl[i] = blind ? blind[src] : NULL;
        ub[i] = unblind ? unblind[src] : NULL;
        all_blind &= bl[i] != NULL && ub[i] != NULL;
        no_blind &= bl[i] == NULL && ub[i] == NULL;
        c[i] = ws[i] + MB8__RSA_WS_C(h);
        mpv[i] = ws[i] + MB8__RSA_WS_MP(h);
        mqv[i] = ws[i] + MB8__RSA_WS_MQ(h);
    }
    /* the mod-n steps run as batches when every lane does the same (public) thing */
    int vec_modn = (all_blind || no_blind) && same_e(k);
    size_t nl = 2 * h, len = bits / 8;
    const uint64_t *m[MB8_LANES], *t2c[MB8_LANES], *sc[MB8_LANES];
    uint64_t *t2[MB8_LANES], *s[MB8_LANES], *se[MB8_LANES], *cw[MB8_LANES];
    v8 *vn = vws, *vrrn = vn + nl, *vt = vrrn + nl;
    v8 k0n = _mm512_setzero_si512();
    for (unsigned i = 0; i < MB8_LANES; i++) {
        m[i] = ws[i] + MB8__RSA_WS_M(h);
        t2[i] = ws[i] + MB8__RSA_WS_T2(h);
        t2c[i] = t2[i];
        s[i] = ws[i] + MB8__RSA_WS_S(h);
        sc[i] = s[i];
        se[i] = ws[i] + MB8__RSA_WS_T1(h);
        cw[i] = ws[i] + MB8__RSA_WS_C(h);
    }
    if (vec_modn) {
        const uint64_t *np[MB8_LANES], *rrp[MB8_LANES];
        uint64_t k0s[MB8_LANES];
        for (unsigned i = 0; i < MB8_LANES; i++) {
            np[i] = mb8__rsa_n(k[i]);
            rrp[i] = mb8__rsa_rrn(k[i]);
            k0s[i] = k[i]->k0n;
            uint64_t *mi = ws[i] + MB8__RSA_WS_M(h);
            mb8__bn52_from_be(mi, nl, in[(lanes >> i & 1) ? i : first], len);
            in_ok[i] =
                mb8__value_barrier(0 - mb8__bn52_sub(ws[i] + MB8__RSA_WS_T1(h), mi, np[i], nl));
            if (all_blind)
                mb8__bn52_from_be(t2[i], nl, bl[i], len);
            else
                memcpy(cw[i], mi, nl * sizeof(uint64_t));
        }
        to_vec(vn, np, nl);
        to_vec(vrrn, rrp, nl);
        k0n = _mm512_loadu_si512((const void *)k0s);
        if (all_blind)
            mulmod_n8(cw, m, t2c, k, vn, vrrn, k0n, nl, vt);
    } else {
        for (unsigned i = 0; i < MB8_LANES; i++)
            in_ok[i] = mb8__rsa_lane_pre(ws[i], in[(lanes >> i & 1) ? i : first], k[i], bl[i]);
    }
    exp_half8(mpv, c, k, 0, h, bits, vws + (vec_modn ? 2 * nl : 0));
    exp_half8(mqv, c, k, 1, h, bits, vws + (vec_modn ? 2 * nl : 0));
    if (vec_modn) {
        garner8(s, (const uint64_t *const *)mpv, (const uint64_t *const *)mqv, k, h, vt);
        if (all_blind)
            for (unsigned i = 0; i < MB8_LANES; i++)
                mb8__bn52_from_be(t2[i], nl, ub[i], len);
        if (all_blind)
            mulmod_n8(s, sc, t2c, k, vn, vrrn, k0n, nl, vt);
        fault_check8(se, sc, k, vn, vrrn, k0n, nl, vt);
        for (unsigned i = 0; i < MB8_LANES; i++) {
            if (!(lanes >> i & 1))
                continue;
            st = mb8_status_with(st, i, mb8__rsa_finish(out[i], k[i], in_ok[i], se[i], ws[i]));
        }
    } else {
        for (unsigned i = 0; i < MB8_LANES; i++) {
            if (!(lanes >> i & 1))
                continue;
            unsigned v = mb8__rsa_lane_post(out[i], k[i], ub[i], in_ok[i], ws[i]);
            st = mb8_status_with(st, i, v);
        }
    }
    mb8__wipe(scratch, used * sizeof(uint64_t));
    return st;
}
