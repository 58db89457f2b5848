/*
 * The portable reference kernel of mb8_rsa_private_crt (see mb8/rsa.h) and the radix-2^52
 * helpers (see bn52.h). Lanes are processed one after another; within a lane every step
 * runs in time that depends only on the limb counts, the public exponent e and whether
 * the lane is blinded. Products use unsigned __int128.
 */
#include "bn52.h"

typedef unsigned __int128 u128;

void mb8__bn52_from_be(uint64_t *r, size_t nl, const uint8_t *in, size_t len)
{
    memset(r, 0, nl * sizeof(uint64_t));
    for (size_t k = 0; k < len; k++) {
        uint64_t b = in[len - 1 - k];
        size_t pos = 8 * k, li = pos / BN52_BITS;
        unsigned off = (unsigned)(pos % BN52_BITS);
        r[li] |= (b << off) & BN52_MASK;
        if (off > BN52_BITS - 8 && li + 1 < nl)
            r[li + 1] |= b >> (BN52_BITS - off);
    }
}

void mb8__bn52_to_be(uint8_t *out, size_t len, const uint64_t *a, size_t nl)
{
    for (size_t k = 0; k < len; k++) {
        size_t pos = 8 * k, li = pos / BN52_BITS;
        unsigned off = (unsigned)(pos % BN52_BITS);
        uint64_t v = a[li] >> off;
        if (off > BN52_BITS - 8 && li + 1 < nl)
            v |= a[li + 1] << (BN52_BITS - off);
        out[len - 1 - k] = (uint8_t)v;
    }
}

uint64_t mb8__bn52_sub(uint64_t *r, const uint64_t *a, const uint64_t *b, size_t n)
{
    uint64_t borrow = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t z = a[i] - b[i] - borrow;
        r[i] = z & BN52_MASK;
        borrow = z >> 63;
    }
    return borrow;
}

void mb8__bn52_csub(uint64_t *a, const uint64_t *m, size_t n)
{
    /* first pass: the borrow of a - m only; second: subtract m & mask, no temporary */
    uint64_t borrow = 0;
    for (size_t i = 0; i < n; i++)
        borrow = (a[i] - m[i] - borrow) >> 63;
    uint64_t mask = mb8__value_barrier(borrow - 1); /* all ones when a >= m */
    borrow = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t z = a[i] - (m[i] & mask) - borrow;
        a[i] = z & BN52_MASK;
        borrow = z >> 63;
    }
}

/* a += m & mask; returns nothing: used where the sum fits n limbs. */
static void cadd(uint64_t *a, const uint64_t *m, uint64_t mask, size_t n)
{
    uint64_t c = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t z = a[i] + (m[i] & mask) + c;
        a[i] = z & BN52_MASK;
        c = z >> BN52_BITS;
    }
}

void mb8__bn52_mul(uint64_t *r, const uint64_t *a, size_t na, const uint64_t *b, size_t nb)
{
    memset(r, 0, (na + nb) * sizeof(uint64_t));
    for (size_t i = 0; i < nb; i++) {
        u128 c = 0;
        for (size_t j = 0; j < na; j++) {
            u128 z = (u128)a[j] * b[i] + r[i + j] + c;
            r[i + j] = (uint64_t)z & BN52_MASK;
            c = z >> BN52_BITS;
        }
        r[i + na] = (uint64_t)c;
    }
}

uint64_t mb8__bn52_k0(uint64_t m0)
{
    uint64_t inv = m0; /* correct to 3 bits for odd m0; each Newton step doubles that */
    for (int i = 0; i < 5; i++)
        inv *= 2 - m0 * inv;
    return (0 - inv) & BN52_MASK;
}

void mb8__bn52_rr(uint64_t *r, const uint64_t *m, size_t n)
{
    /* 2^(2*52n) mod m by constant-time doubling: x < m, so 2x < 2m needs one csub */
    memset(r, 0, n * sizeof(uint64_t));
    r[0] = 1;
    for (size_t k = 0; k < 2 * BN52_BITS * n; k++) {
        for (size_t i = n - 1; i > 0; i--)
            r[i] = ((r[i] << 1) | (r[i - 1] >> (BN52_BITS - 1))) & BN52_MASK;
        r[0] = (r[0] << 1) & BN52_MASK;
        mb8__bn52_csub(r, m, n);
    }
}

/* Carry-propagates n lazy limbs (each < 2^63) into 52-bit limbs; the value must fit. */
static inline __attribute__((always_inline)) void normalise(uint64_t *r, uint64_t c, size_t n)
{
    for (size_t j = 0; j < n; j++) {
        uint64_t z = r[j] + c;
        r[j] = z & BN52_MASK;
        c = z >> BN52_BITS;
    }
}

/*
 * Word-serial almost-Montgomery multiplication with lazy carries, the IFMA data flow in
 * scalar form: for each digit b_i, every limb j gets the low 52 bits of a_j b_i and m_j y
 * and the high bits of a_(j-1) b_i and m_(j-1) y, with no carry chain across limbs (each
 * row adds < 2^55 to a limb, so 64-bit limbs hold n <= 80 rows). y only needs limb 0 mod
 * 2^52, which is exact. One carry propagation at the end. Value invariant: t < a + m <
 * 2^(52n), so the normalised result fits n limbs.
 */
static inline __attribute__((always_inline)) void amm(uint64_t *restrict r, const uint64_t *a,
                                                      const uint64_t *b, const uint64_t *restrict m,
                                                      uint64_t k0, size_t n)
{
    memset(r, 0, n * sizeof(uint64_t));
    for (size_t i = 0; i < n; i++) {
        uint64_t bi = b[i];
        u128 p = (u128)a[0] * bi;
        uint64_t acc0 = r[0] + ((uint64_t)p & BN52_MASK);
        uint64_t y = (acc0 * k0) & BN52_MASK;
        u128 q = (u128)m[0] * y;
        acc0 += (uint64_t)q & BN52_MASK; /* == 0 mod 2^52 */
        uint64_t hi = (acc0 >> BN52_BITS) + (uint64_t)(p >> BN52_BITS) + (uint64_t)(q >> BN52_BITS);
        for (size_t j = 1; j < n; j++) {
            p = (u128)a[j] * bi;
            q = (u128)m[j] * y;
            r[j - 1] = r[j] + ((uint64_t)p & BN52_MASK) + ((uint64_t)q & BN52_MASK) + hi;
            hi = (uint64_t)(p >> BN52_BITS) + (uint64_t)(q >> BN52_BITS);
        }
        r[n - 1] = hi;
    }
    normalise(r, 0, n);
}

/*
 * Montgomery reduction (separated operand scanning, lazy carries as in amm) of t (2n limbs,
 * t < m * 2^(52n), normalised; destroyed): r = t * 2^(-52n) mod m, r < t / 2^(52n) + m.
 * Row i first takes the carry out of limb i - 1, so limb i is exact when y is computed.
 */
static inline __attribute__((always_inline)) void redc_n(uint64_t *restrict r, uint64_t *restrict t,
                                                         const uint64_t *restrict m, uint64_t k0,
                                                         size_t n)
{
    uint64_t c = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t ti = t[i] + c;
        uint64_t y = (ti * k0) & BN52_MASK;
        u128 q = (u128)m[0] * y;
        ti += (uint64_t)q & BN52_MASK; /* == 0 mod 2^52 */
        c = ti >> BN52_BITS;
        uint64_t hi = (uint64_t)(q >> BN52_BITS);
        for (size_t j = 1; j < n; j++) {
            q = (u128)m[j] * y;
            t[i + j] += ((uint64_t)q & BN52_MASK) + hi;
            hi = (uint64_t)(q >> BN52_BITS);
        }
        t[i + n] += hi;
    }
    memcpy(r, t + n, n * sizeof(uint64_t));
    normalise(r, c, n);
}

/*
 * Almost-Montgomery squaring: the full square (each cross product once, doubled), then
 * redc_n. About 1.5 n^2 instead of 2 n^2 multiplications
 * (the dedicated squaring of Drucker and Gueron, "Fast modular squaring with
 * AVX512IFMA", ITNG 2019). t: 2n limbs.
 */
static inline __attribute__((always_inline)) void ams(uint64_t *restrict r, const uint64_t *a,
                                                      const uint64_t *restrict m, uint64_t k0,
                                                      uint64_t *restrict t, size_t n)
{
    /* operand scanning with lazy carries: row i adds 2 a_i a_j (j > i) and a_i^2; every
     * limb gets < 2n terms below 2^53, which 64 bits hold for n <= 80 */
    memset(t, 0, 2 * n * sizeof(uint64_t));
    for (size_t i = 0; i < n; i++) {
        uint64_t ai = a[i], ai2 = a[i] << 1, hi = 0;
        for (size_t j = i + 1; j < n; j++) {
            u128 p = (u128)ai2 * a[j];
            t[i + j] += ((uint64_t)p & BN52_MASK) + hi;
            hi = (uint64_t)(p >> BN52_BITS);
        }
        t[i + n] += hi;
        u128 p = (u128)ai * ai;
        t[2 * i] += (uint64_t)p & BN52_MASK;
        t[2 * i + 1] += (uint64_t)(p >> BN52_BITS);
    }
    normalise(t, 0, 2 * n);
    redc_n(r, t, m, k0, n);
}

/*
 * The limb-count specialisations of an operation op(ARGS..., n) of this file (n public: the
 * modulus size): mb8__<name>x<N>_ref(PARAMS), op with n = N (a constant, so its loops are
 * unrolled) for every N of SIZES (MB8__RSA_HALF_SIZES or MB8__RSA_ALL_SIZES, bn52.h), and
 * mb8__<name>_ref(PARAMS, n), which calls the one for n, or op itself for any other n.
 * PARAMS and ARGS are parenthesised lists.
 */
#define REF_SPECIALISED(SIZES, name, op, PARAMS, ARGS)                                             \
    SIZES(REF_SPECIALISATION, name, op, PARAMS, ARGS)                                              \
    void mb8__##name##_ref(REF_LIST PARAMS, size_t n)                                              \
    {                                                                                              \
        switch (n) {                                                                               \
            SIZES(REF_SPECIALISED_CASE, name, op, PARAMS, ARGS)                                    \
        default:                                                                                   \
            op(REF_LIST ARGS, n);                                                                  \
            break;                                                                                 \
        }                                                                                          \
    }
#define REF_LIST(...) __VA_ARGS__
#define REF_SPECIALISATION(N, name, op, PARAMS, ARGS)                                              \
    void mb8__##name##x##N##_ref PARAMS;                                                           \
    void mb8__##name##x##N##_ref PARAMS                                                            \
    {                                                                                              \
        op(REF_LIST ARGS, N);                                                                      \
    }
#define REF_SPECIALISED_CASE(N, name, op, PARAMS, ARGS)                                            \
    case N:                                                                                        \
        mb8__##name##x##N##_ref ARGS;                                                              \
        break;

REF_SPECIALISED(MB8__RSA_HALF_SIZES, ams52, ams,
                (uint64_t * r, const uint64_t *a, const uint64_t *m, uint64_t k0, uint64_t *t),
                (r, a, m, k0, t))
REF_SPECIALISED(MB8__RSA_ALL_SIZES, amm52, amm,
                (uint64_t * r, const uint64_t *a, const uint64_t *b, const uint64_t *m,
                 uint64_t k0),
                (r, a, b, m, k0))

/* Montgomery reduction of t (2n limbs, t < m 2^(52n); destroyed): r = t 2^(-52n) mod m,
 * r < 2m; one out-of-line instance of redc_n for the once-per-half reduction of the input
 * (the IFMA kernel reduces its input with its own 8-lane redc8). */
static __attribute__((noinline)) void redc(uint64_t *r, uint64_t *t, const uint64_t *m, uint64_t k0,
                                           size_t n)
{
    redc_n(r, t, m, k0, n);
}

unsigned mb8__rsa_window(const uint64_t *e, size_t n, size_t pos, unsigned w)
{
    size_t li = pos / BN52_BITS;
    unsigned off = (unsigned)(pos % BN52_BITS);
    uint64_t v = e[li] >> off;
    if (off > BN52_BITS - w && li + 1 < n)
        v |= e[li + 1] << (BN52_BITS - off);
    return (unsigned)v & ((1u << w) - 1);
}

static unsigned window(const uint64_t *e, size_t n, size_t pos)
{
    return mb8__rsa_window(e, n, pos, MB8__RSA_WIN);
}

/* r = table[idx] (n limbs each), reading every entry and selecting by mask. */
static void ct_select(uint64_t *r, const uint64_t *table, size_t n, unsigned idx)
{
    memset(r, 0, n * sizeof(uint64_t));
    for (unsigned j = 0; j < (1u << MB8__RSA_WIN); j++) {
        uint64_t mask = bn52_is_zero_mask((uint64_t)(j ^ idx));
        const uint64_t *t = table + (size_t)j * n;
        for (size_t i = 0; i < n; i++)
            r[i] |= t[i] & mask;
    }
}

/*
 * res = c^d mod m (h limbs, fully reduced) for c < 2^(52*2h) with c < m * 2^(52h).
 * d has h limbs and at most ebits bits (public). ws: 2h + 36h limbs.
 */
static void exp_half(uint64_t *res, const uint64_t *c, const uint64_t *m, const uint64_t *rr,
                     uint64_t k0, const uint64_t *d, unsigned ebits, size_t h, uint64_t *ws)
{
    uint64_t *tmp = ws;          /* 2h */
    uint64_t *tab = tmp + 2 * h; /* 32h */
    uint64_t *x = tab + 32 * h;  /* h */
    uint64_t *y = x + h;         /* h */
    uint64_t *sel = y + h;       /* h */
    uint64_t *one = sel + h;     /* h */

    memset(one, 0, h * sizeof(uint64_t));
    one[0] = 1;
    /* into the Montgomery domain: redc gives c R^-1, two AMMs by R^2 give c R */
    memcpy(tmp, c, 2 * h * sizeof(uint64_t));
    redc(x, tmp, m, k0, h);
    mb8__amm52_ref(y, x, rr, m, k0, h);
    mb8__amm52_ref(tab + h, y, rr, m, k0, h);
    mb8__amm52_ref(tab, rr, one, m, k0, h); /* R mod m: Montgomery 1 */
    for (size_t j = 2; j < (1u << MB8__RSA_WIN); j++)
        mb8__amm52_ref(tab + j * h, tab + (j - 1) * h, tab + h, m, k0, h);

    size_t nwin = (ebits + MB8__RSA_WIN - 1) / MB8__RSA_WIN;
    size_t pos = (nwin - 1) * MB8__RSA_WIN;
    ct_select(x, tab, h, window(d, h, pos));
    while (pos > 0) {
        pos -= MB8__RSA_WIN;
        for (int s = 0; s < MB8__RSA_WIN; s++) {
            uint64_t *t;
            mb8__ams52_ref(y, x, m, k0, tmp, h);
            t = x, x = y, y = t;
        }
        ct_select(sel, tab, h, window(d, h, pos));
        mb8__amm52_ref(y, x, sel, m, k0, h);
        uint64_t *t = x;
        x = y, y = t;
    }
    mb8__amm52_ref(res, x, one, m, k0, h); /* out of the domain: res <= m */
    mb8__bn52_csub(res, m, h);
}

/* r = a * b mod n (fully reduced) for a, b < 2n: AMM, then AMM by R^2, then csub. */
static void mulmod_n(uint64_t *r, const uint64_t *a, const uint64_t *b, const mb8_rsa_key_t *k,
                     uint64_t *tmp)
{
    size_t nl = 2 * (size_t)k->h;
    mb8__amm52_ref(tmp, a, b, mb8__rsa_n(k), k->k0n, nl);
    mb8__amm52_ref(r, tmp, mb8__rsa_rrn(k), mb8__rsa_n(k), k->k0n, nl);
    mb8__bn52_csub(r, mb8__rsa_n(k), nl);
}

uint64_t mb8__rsa_lane_pre(uint64_t *ws, const uint8_t *in, const mb8_rsa_key_t *k,
                           const uint8_t *blind)
{
    const size_t h = k->h, nl = 2 * h, len = k->bits / 8;
    const uint64_t *n = mb8__rsa_n(k);
    uint64_t *m = ws + MB8__RSA_WS_M(h), *c = ws + MB8__RSA_WS_C(h);
    uint64_t *t1 = ws + MB8__RSA_WS_T1(h), *t2 = ws + MB8__RSA_WS_T2(h);

    mb8__bn52_from_be(m, nl, in, len);
    /* in < n, constant time: the borrow of m - n */
    uint64_t in_ok = mb8__value_barrier(0 - mb8__bn52_sub(t1, m, n, nl));

    if (blind) /* public: whether the caller blinds */
        mb8__bn52_from_be(t2, nl, blind, len), mulmod_n(c, m, t2, k, t1);
    else
        memcpy(c, m, nl * sizeof(uint64_t));
    return in_ok;
}

void mb8__rsa_garner(const mb8_rsa_key_t *k, uint64_t *ws)
{
    const size_t h = k->h, nl = 2 * h;
    uint64_t *s = ws + MB8__RSA_WS_S(h), *prod = ws + MB8__RSA_WS_PROD(h);
    uint64_t *mp = ws + MB8__RSA_WS_MP(h), *mq = ws + MB8__RSA_WS_MQ(h);
    uint64_t *dd = mq + h, *hh = dd + h;

    /* h = qInv (m_p - m_q) mod p; m_q < q < 2p, so one csub reduces it mod p */
    memcpy(dd, mq, h * sizeof(uint64_t));
    mb8__bn52_csub(dd, mb8__rsa_p(k), h);
    uint64_t borrow = mb8__bn52_sub(dd, mp, dd, h);
    cadd(dd, mb8__rsa_p(k), mb8__value_barrier(0 - borrow), h);
    mb8__amm52_ref(hh, dd, mb8__rsa_qinvr(k), mb8__rsa_p(k), k->k0p, h);
    mb8__bn52_csub(hh, mb8__rsa_p(k), h);
    /* s = m_q + h q < q + (p - 1) q = n */
    mb8__bn52_mul(prod, hh, h, mb8__rsa_q(k), h);
    memset(s, 0, nl * sizeof(uint64_t));
    memcpy(s, mq, h * sizeof(uint64_t));
    cadd(s, prod, ~(uint64_t)0, nl);
}

unsigned mb8__rsa_finish(uint8_t *out, const mb8_rsa_key_t *k, uint64_t in_ok, const uint64_t *se,
                         uint64_t *ws)
{
    const size_t h = k->h, nl = 2 * h, len = k->bits / 8;
    const uint64_t *m = ws + MB8__RSA_WS_M(h);
    uint64_t *s = ws + MB8__RSA_WS_S(h);
    uint64_t diff = 0;

    for (size_t i = 0; i < nl; i++)
        diff |= se[i] ^ m[i];
    uint64_t eq = bn52_is_zero_mask(diff);
    /* release s only when both checks pass; otherwise zeros */
    uint64_t ok = in_ok & eq;
    for (size_t i = 0; i < nl; i++)
        s[i] &= ok;
    mb8__bn52_to_be(out, len, s, nl);
    return (unsigned)((~in_ok & MB8_STATUS_BAD_INPUT) | (in_ok & ~eq & MB8_STATUS_VERIFY_FAIL));
}

unsigned mb8__rsa_lane_post(uint8_t *out, const mb8_rsa_key_t *k, const uint8_t *unblind,
                            uint64_t in_ok, uint64_t *ws)
{
    const size_t h = k->h, nl = 2 * h, len = k->bits / 8;
    const uint64_t *n = mb8__rsa_n(k);
    uint64_t *s = ws + MB8__RSA_WS_S(h);
    uint64_t *t1 = ws + MB8__RSA_WS_T1(h), *t2 = ws + MB8__RSA_WS_T2(h);
    uint64_t *sr = ws + MB8__RSA_WS_SR(h), *prod = ws + MB8__RSA_WS_PROD(h);

    mb8__rsa_garner(k, ws);
    if (unblind)
        mb8__bn52_from_be(t2, nl, unblind, len), mulmod_n(s, s, t2, k, t1);

    /* fault check: s^e mod n == m (e public: its bits may steer branches) */
    const uint64_t *e = mb8__rsa_e(k);
    uint64_t *x = t1, *y = t2;
    mb8__amm52_ref(sr, s, mb8__rsa_rrn(k), n, k->k0n, nl); /* s R */
    memcpy(x, sr, nl * sizeof(uint64_t));
    for (int b = (int)k->e_bits - 2; b >= 0; b--) {
        uint64_t *t;
        mb8__amm52_ref(y, x, x, n, k->k0n, nl);
        t = x, x = y, y = t;
        if ((e[b / BN52_BITS] >> (b % BN52_BITS)) & 1) {
            mb8__amm52_ref(y, x, sr, n, k->k0n, nl);
            t = x, x = y, y = t;
        }
    }
    memset(prod, 0, nl * sizeof(uint64_t));
    prod[0] = 1;
    mb8__amm52_ref(y, x, prod, n, k->k0n, nl);
    mb8__bn52_csub(y, n, nl);
    return mb8__rsa_finish(out, k, in_ok, y, ws);
}

/* One lane; returns its status nibble. */
static unsigned lane_private_crt(uint8_t *out, const uint8_t *in, const mb8_rsa_key_t *k,
                                 const uint8_t *blind, const uint8_t *unblind, uint64_t *ws)
{
    const size_t h = k->h;
    const uint64_t *c = ws + MB8__RSA_WS_C(h);
    uint64_t *hws = ws + MB8__RSA_WS_LANE(h); /* exp_half workspace: 38h */
    uint64_t in_ok = mb8__rsa_lane_pre(ws, in, k, blind);

    /* CRT halves; c < 2^bits <= p * 2^(52h) as p has bits/2 bits */
    exp_half(ws + MB8__RSA_WS_MP(h), c, mb8__rsa_p(k), mb8__rsa_rrp(k), k->k0p, mb8__rsa_dp(k),
             k->bits / 2, h, hws);
    exp_half(ws + MB8__RSA_WS_MQ(h), c, mb8__rsa_q(k), mb8__rsa_rrq(k), k->k0q, mb8__rsa_dq(k),
             k->bits / 2, h, hws);
    return mb8__rsa_lane_post(out, k, unblind, in_ok, ws);
}

mb8_status_t mb8__rsa_private_crt_ref(uint8_t *const out[MB8_LANES],
                                      const uint8_t *const in[MB8_LANES],
                                      const mb8_rsa_key_t *const key[MB8_LANES],
                                      const uint8_t *const blind[MB8_LANES],
                                      const uint8_t *const unblind[MB8_LANES], uint64_t *scratch,
                                      unsigned lanes)
{
    mb8_status_t st = 0;
    size_t used = 0;
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (!(lanes >> i & 1))
            continue;
        unsigned v = lane_private_crt(out[i], in[i], key[i], blind ? blind[i] : NULL,
                                      unblind ? unblind[i] : NULL, scratch);
        st = mb8_status_with(st, i, v);
        used = MB8__RSA_LANE_SCRATCH(key[i]->h);
    }
    if (used)
        mb8__wipe(scratch, used * sizeof(uint64_t));
    return st;
}
