/*
 * The portable reference kernels of P-256 and P-384 (common/ec_internal.h), one lane at a
 * time, for the curve of the including file (p256/p256_ref.c, p384/p384_ref.c), which
 * defines before including this file the curve's constants: P and N (struct mb8__ec_mod:
 * the field prime and the group order), B_MONT (b of y^2 = x^3 - 3x + b in Montgomery
 * form) and G_X, G_Y (the base point, big-endian bytes). Below, BITS = 8 NB is the size
 * of the curve (256, 384).
 *
 * Numbers: NL limbs of 52 bits (radix 2^52: P-256 5, P-384 8), the radix of the AVX-512
 * IFMA kernels, so both kernels hold the same Montgomery values (R = 2^(52 NL)) limb for
 * limb and a mismatch can be traced limb by limb. Products are unsigned __int128. One
 * generic Montgomery multiplication serves the field (mod p) and the scalars (mod n,
 * k0 = -m^-1 mod 2^52); every result is fully reduced (< m) by a masked subtraction, so
 * values are always canonical and equality is limb equality.
 *
 * Points: homogeneous projective (X : Y : Z), x = X/Z, y = Y/Z, with the complete
 * addition and doubling formulas for a = -3 of Renes, Costello and Batina, "Complete
 * addition formulas for prime order elliptic curves" (EUROCRYPT 2016), Algorithms 4 and
 * 6: valid for every pair of points including P = Q, P = -Q and the point at infinity
 * (0 : 1 : 0), so the scalar multiplication has no exceptional case to mask at all (both
 * curves have prime order). They cost 12M + 2 mul-by-b (addition) and 8M + 3S (doubling),
 * against 12M + 4S / 4M + 4S for Jacobian, i.e. ~20% more field work than Jacobian with
 * masked special cases; the IFMA kernels use Jacobian coordinates for ECDH, giving the
 * same bytes.
 *
 * Scalar multiplication: fixed 4-bit windows, unsigned digits, 2 NB windows of 4
 * doublings and one addition each; a per-lane table of 0P..15P (0P = infinity) read with
 * a constant-time scan of all 16 entries. Key generation and ECDSA's kG use the same
 * variable-base routine on G; the fixed-base comb (signed digits, affine multiples, no
 * doublings) is the IFMA kernels'.
 *
 * Inversions: Fermat, x^(m-2) with a fixed 4-bit window over the public exponent (BITS
 * squarings, 2 NB + 14 multiplications), the same for p and n.
 *
 * Constant time: no branch and no memory index depends on a scalar, nonce, digest or
 * point; range and curve checks are masks; window positions and loop counts are fixed.
 */
#include <stdarg.h>
#include <string.h>

#include "ct.h"

typedef unsigned __int128 u128;

#define NB MB8__EC_NB
#define NP MB8__EC_NP
#define NSETUP MB8__EC_NSETUP
#define NL MB8__EC_NL
#define M52 ((((uint64_t)1) << 52) - 1)


#define value_barrier mb8__value_barrier

void MB8__EC_FN(wipe)(void *p, size_t n)
{
    mb8__wipe(p, n);
}

/* ---- NL x 52-bit numbers ----------------------------------------------------------- */

/* Through NB / 8 64-bit words (w[0] least significant), as many loads and shifts as the
 * limbs need; every position is public. Unrolled (at most 6 words, 8 limbs), so that the
 * positions and their tests are constants, as in the hand-written versions before. */
void MB8__EC_FN(from_bytes)(uint64_t v[NL], const uint8_t b[NB])
{
    uint64_t w[NB / 8];
#pragma GCC unroll 8
    for (int i = 0; i < NB / 8; i++) {
        uint64_t x = 0;
        for (int j = 0; j < 8; j++)
            x = (x << 8) | b[NB - 8 * (i + 1) + j];
        w[i] = x;
    }
#pragma GCC unroll 8
    for (int j = 0; j < NL; j++) {
        int k = 52 * j / 64, sh = 52 * j % 64;
        uint64_t x = w[k] >> sh;
        if (sh > 12 && k + 1 < NB / 8) /* the limb continues in the next word */
            x |= w[k + 1] << (64 - sh);
        v[j] = x & M52;
    }
    MB8__EC_FN(wipe)(w, sizeof w);
}

void MB8__EC_FN(to_bytes)(uint8_t b[NB], const uint64_t v[NL])
{
    uint64_t w[NB / 8];
#pragma GCC unroll 8
    for (int i = 0; i < NB / 8; i++) {
        int j = 64 * i / 52, sh = 64 * i % 52;
        uint64_t x = v[j] >> sh;
        if (j + 1 < NL) /* bits 52 - sh .. 63 from the next limb */
            x |= v[j + 1] << (52 - sh);
        if (j + 2 < NL) /* and from the one after (a shift by 104 - sh, 0 when >= 64) */
            x |= (v[j + 2] << (52 - sh)) << 52;
        w[i] = x;
    }
#pragma GCC unroll 8
    for (int i = 0; i < NB / 8; i++)
        for (int j = 0; j < 8; j++)
            b[NB - 8 * i - 1 - j] = (uint8_t)(w[i] >> (8 * j));
    MB8__EC_FN(wipe)(w, sizeof w);
}

#define from_bytes MB8__EC_FN(from_bytes)
#define to_bytes MB8__EC_FN(to_bytes)

/* All-ones when a < m (limbs < 2^52 each), else 0: the borrow of a - m. */
static uint64_t lt_mask(const uint64_t a[NL], const uint64_t m[NL])
{
    uint64_t borrow = 0;
    for (int i = 0; i < NL; i++)
        borrow = (a[i] - m[i] - borrow) >> 63;
    return value_barrier(0 - borrow);
}

/* All-ones when a == 0, else 0. */
static uint64_t zero_mask(const uint64_t a[NL])
{
    uint64_t acc = 0;
    for (int i = 0; i < NL; i++)
        acc |= a[i];
    return value_barrier(0 - (((acc | (0 - acc)) >> 63) ^ 1));
}

/* All-ones when a == b, else 0. */
static uint64_t eq_mask(const uint64_t a[NL], const uint64_t b[NL])
{
    uint64_t d[NL];
    for (int i = 0; i < NL; i++)
        d[i] = a[i] ^ b[i];
    return zero_mask(d);
}

/* r = a when mask is all-ones, r unchanged when 0. */
static void cmov(uint64_t r[NL], const uint64_t a[NL], uint64_t mask)
{
    for (int i = 0; i < NL; i++)
        r[i] = (r[i] & ~mask) | (a[i] & mask);
}

/* r = t mod m for t < 2m (limbs < 2^52, t[NL - 1] < 2^53): t - (m AND mask), mask all-ones
 * when t >= m. (One borrow chain and no selected temporaries: the vectoriser turned a
 * compute-both-and-select version into a store-forwarding stall.) r may alias t. */
static void reduce_once(uint64_t r[NL], const uint64_t t[NL], const uint64_t m[NL])
{
    uint64_t ge = ~lt_mask(t, m), borrow = 0;
    for (int i = 0; i < NL; i++) {
        uint64_t x = t[i] - (m[i] & ge) - borrow;
        borrow = x >> 63;
        r[i] = x & M52;
    }
}

/* r = a * b * R^-1 mod m (R = 2^(52 NL)), fully reduced, for any a, b < 2^BITS (then
 * a b / R < m and the Montgomery sum stays below 2m). r may alias a or b. Product scanning
 * (column by column): column i of a b + q m is accumulated in one 128-bit sum (at most
 * 2 NL products of 104 bits), and the quotient digit q[i] is fixed as soon as column
 * i < NL is complete
 * (q[i] = column * k0 mod 2^52, so that the column's low 52 bits cancel). */
static void mont_mul(uint64_t r[NL], const uint64_t a[NL], const uint64_t b[NL],
                     const struct mb8__ec_mod *M)
{
    const uint64_t *m = M->m;
    uint64_t q[NL], t[NL];
    u128 acc = 0;
    for (int i = 0; i < NL; i++) {
        for (int j = 0; j < i; j++)
            /* cppcheck-suppress uninitvar ; q[j] for j < i was set by an earlier column */
            acc += (u128)a[j] * b[i - j] + (u128)q[j] * m[i - j];
        acc += (u128)a[i] * b[0];
        q[i] = ((uint64_t)acc * M->k0) & M52; /* q[i] = column * k0 mod 2^52 */
        acc += (u128)q[i] * m[0];             /* low 52 bits now zero */
        acc >>= 52;
    }
    for (int i = NL; i < 2 * NL; i++) {
        for (int j = i - NL + 1; j < NL; j++)
            acc += (u128)a[j] * b[i - j] + (u128)q[j] * m[i - j];
        t[i - NL] = (uint64_t)acc & M52;
        acc >>= 52;
    }
    /* the sum is below 2m < 2^(BITS + 1): nothing is left in acc */
    reduce_once(r, t, m);
    /* q and t are not wiped: like the X25519 field primitives, the leaf arithmetic leaves
     * its few words to be overwritten by the next call; the callers wipe their named
     * temporaries. */
}

/* r = a + b mod m (a, b < m). */
static void mod_add(uint64_t r[NL], const uint64_t a[NL], const uint64_t b[NL],
                    const struct mb8__ec_mod *M)
{
    uint64_t t[NL], c = 0;
    for (int i = 0; i < NL; i++) {
        t[i] = a[i] + b[i] + c;
        c = t[i] >> 52;
        t[i] &= M52;
    }
    t[NL - 1] += c << 52; /* a + b < 2^(BITS + 1): fits the top limb */
    reduce_once(r, t, M->m);
}

/* r = a - b mod m (a, b < m): a - b, plus m kept by the borrow mask. */
static void mod_sub(uint64_t r[NL], const uint64_t a[NL], const uint64_t b[NL],
                    const struct mb8__ec_mod *M)
{
    uint64_t t[NL], borrow = 0, c = 0;
    for (int i = 0; i < NL; i++) {
        t[i] = a[i] - b[i] - borrow;
        borrow = t[i] >> 63;
        t[i] &= M52;
    }
    uint64_t mask = value_barrier(0 - borrow);
    for (int i = 0; i < NL; i++) {
        t[i] = t[i] + (M->m[i] & mask) + c;
        c = t[i] >> 52;
        r[i] = t[i] & M52;
    }
}

/* r = a^e mod m in Montgomery form (a in Montgomery form), e a PUBLIC BITS-bit big-endian
 * exponent: fixed 4-bit window, the table index is the public exponent nibble. */
static void mont_pow_public(uint64_t r[NL], const uint64_t a[NL], const uint8_t e[NB],
                            const struct mb8__ec_mod *M)
{
    uint64_t tab[16][NL], acc[NL];
    memcpy(tab[0], M->one, sizeof tab[0]);
    memcpy(tab[1], a, sizeof tab[1]);
    for (int i = 2; i < 16; i++)
        mont_mul(tab[i], tab[i - 1], a, M);
    memcpy(acc, M->one, sizeof acc);
    for (int w = 0; w < 2 * NB; w++) {
        for (int j = 0; j < 4; j++)
            mont_mul(acc, acc, acc, M);
        unsigned nib = (e[w >> 1] >> (w & 1 ? 0 : 4)) & 0xF; /* public */
        mont_mul(acc, acc, tab[nib], M);
    }
    memcpy(r, acc, sizeof acc);
    MB8__EC_FN(wipe)(tab, sizeof tab);
    MB8__EC_FN(wipe)(acc, sizeof acc);
}

/* Montgomery form of a BITS-bit value x (reduced mod m on the way). */
static void to_mont(uint64_t r[NL], const uint64_t x[NL], const struct mb8__ec_mod *M)
{
    mont_mul(r, x, M->rr, M);
}

/* The canonical value of a Montgomery-form a. */
static void from_mont(uint64_t r[NL], const uint64_t a[NL], const struct mb8__ec_mod *M)
{
    static const uint64_t one[NL] = {1};
    mont_mul(r, a, one, M);
}

/* ---- field and points --------------------------------------------------------------- */

typedef struct {
    uint64_t v[NL];
} fe;

typedef struct {
    fe x, y, z; /* homogeneous projective, Montgomery form */
} pt;

static void fmul(fe *r, const fe *a, const fe *b)
{
    mont_mul(r->v, a->v, b->v, &P);
}
static void fadd(fe *r, const fe *a, const fe *b)
{
    mod_add(r->v, a->v, b->v, &P);
}
static void fsub(fe *r, const fe *a, const fe *b)
{
    mod_sub(r->v, a->v, b->v, &P);
}
/* r = 3a (two additions, as the formulas' "t = a + a; r = t + a"); r may alias a. */
static void ftriple(fe *r, const fe *a)
{
    fe t;
    fadd(&t, a, a);
    fadd(r, &t, a);
}

/* Wipes the field elements listed, up to a (fe *)NULL: a point formula's temporaries. */
static void wipe_fe(fe *a, ...)
{
    va_list ap;
    va_start(ap, a);
    for (fe *p = a; p != NULL; p = va_arg(ap, fe *))
        MB8__EC_FN(wipe)(p, sizeof *p);
    va_end(ap);
}

#define EC_RCB_FE fe
#define EC_RCB_PT pt
#define EC_RCB_FN static
#include "ec_rcb.h"

/* R = P1 + P2: Renes-Costello-Batina 2016, Algorithm 4 (complete, a = -3). R may alias. */
static void pt_add(pt *R, const pt *P1, const pt *P2)
{
    fe bb;
    memcpy(bb.v, B_MONT, sizeof bb.v);
    const fe *b = &bb;
    fe X1 = P1->x, Y1 = P1->y, Z1 = P1->z, X2 = P2->x, Y2 = P2->y, Z2 = P2->z;
    struct rcb T;
    fmul(&T.t0, &X1, &X2);
    fmul(&T.t1, &Y1, &Y2);
    fmul(&T.t2, &Z1, &Z2);
    fadd(&T.t3, &X1, &Y1);
    fadd(&T.t4, &X2, &Y2);
    fmul(&T.t3, &T.t3, &T.t4);
    fadd(&T.t4, &T.t0, &T.t1);
    fsub(&T.t3, &T.t3, &T.t4);
    fadd(&T.t4, &Y1, &Z1);
    fadd(&T.X3, &Y2, &Z2);
    fmul(&T.t4, &T.t4, &T.X3);
    fadd(&T.X3, &T.t1, &T.t2);
    fsub(&T.t4, &T.t4, &T.X3);
    fadd(&T.X3, &X1, &Z1);
    fadd(&T.Y3, &X2, &Z2);
    fmul(&T.X3, &T.X3, &T.Y3);
    fadd(&T.Y3, &T.t0, &T.t2);
    fsub(&T.Y3, &T.X3, &T.Y3);
    rcb_add_end(R, &T, &T.t2, b);
    wipe_fe(&X1, &Y1, &Z1, &X2, &Y2, &Z2, (fe *)NULL);
    MB8__EC_FN(wipe)(&T, sizeof T);
}

/* R = 2 P1: Renes-Costello-Batina 2016, Algorithm 6 (complete, a = -3). R may alias. */
static void pt_dbl(pt *R, const pt *P1)
{
    fe bb;
    memcpy(bb.v, B_MONT, sizeof bb.v);
    const fe *b = &bb;
    fe X = P1->x, Y = P1->y, Z = P1->z;
    fe t0, t1, t2, t3, X3, Y3, Z3;
    fmul(&t0, &X, &X);
    fmul(&t1, &Y, &Y);
    fmul(&t2, &Z, &Z);
    fmul(&t3, &X, &Y);
    fadd(&t3, &t3, &t3);
    fmul(&Z3, &X, &Z);
    fadd(&Z3, &Z3, &Z3);
    fmul(&Y3, b, &t2);
    fsub(&Y3, &Y3, &Z3);
    ftriple(&Y3, &Y3);
    fsub(&X3, &t1, &Y3);
    fadd(&Y3, &t1, &Y3);
    fmul(&Y3, &X3, &Y3);
    fmul(&X3, &X3, &t3);
    ftriple(&t2, &t2);
    fmul(&Z3, b, &Z3);
    fsub(&Z3, &Z3, &t2);
    fsub(&Z3, &Z3, &t0);
    ftriple(&Z3, &Z3);
    ftriple(&t0, &t0);
    fsub(&t0, &t0, &t2);
    fmul(&t0, &t0, &Z3);
    fadd(&Y3, &Y3, &t0);
    fmul(&t0, &Y, &Z);
    fadd(&t0, &t0, &t0);
    fmul(&Z3, &t0, &Z3);
    fsub(&X3, &X3, &Z3);
    fmul(&Z3, &t0, &t1);
    fadd(&Z3, &Z3, &Z3);
    fadd(&Z3, &Z3, &Z3);
    R->x = X3;
    R->y = Y3;
    R->z = Z3;
    wipe_fe(&X, &Y, &Z, &t0, &t1, &t2, &t3, &X3, &Y3, &Z3, (fe *)NULL);
}

/* R = k * P1 for a BITS-bit big-endian k (any value; 0 gives infinity): 2 NB fixed 4-bit
 * windows, most significant first; the table entry is chosen by a scan of all 16. */
static void pt_mul(pt *R, const pt *P1, const uint8_t k[NB])
{
    pt tab[16], acc, sel;
    memset(&tab[0], 0, sizeof tab[0]);
    memcpy(tab[0].y.v, P.one, sizeof tab[0].y.v); /* infinity (0 : 1 : 0) */
    tab[1] = *P1;
    for (int i = 2; i < 16; i++) {
        if (i & 1)
            pt_add(&tab[i], &tab[i - 1], P1);
        else
            pt_dbl(&tab[i], &tab[i / 2]);
    }
    acc = tab[0];
    for (int w = 0; w < 2 * NB; w++) {
        for (int j = 0; j < 4; j++)
            pt_dbl(&acc, &acc);
        /* the position w is public; the digit is secret and only feeds the masks */
        uint64_t digit = (uint64_t)(k[w >> 1] >> (w & 1 ? 0 : 4)) & 0xF;
        memset(&sel, 0, sizeof sel);
        for (uint64_t i = 0; i < 16; i++) {
            uint64_t m = value_barrier(0 - (((digit ^ i) - 1) >> 63));
            cmov(sel.x.v, tab[i].x.v, m);
            cmov(sel.y.v, tab[i].y.v, m);
            cmov(sel.z.v, tab[i].z.v, m);
        }
        pt_add(&acc, &acc, &sel);
        MB8__EC_FN(wipe)(&digit, sizeof digit);
    }
    *R = acc;
    MB8__EC_FN(wipe)(tab, sizeof tab);
    MB8__EC_FN(wipe)(&acc, sizeof acc);
    MB8__EC_FN(wipe)(&sel, sizeof sel);
}

/* Affine (x, y), canonical (not Montgomery), of R; returns all-ones when R is infinity
 * (then x = y = 0). */
static uint64_t pt_to_affine(uint64_t x[NL], uint64_t y[NL], const pt *R)
{
    fe zi, t;
    uint64_t inf = zero_mask(R->z.v);
    mont_pow_public(zi.v, R->z.v, P.m_minus_2, &P); /* 0 maps to 0 */
    fmul(&t, &R->x, &zi);
    from_mont(x, t.v, &P);
    fmul(&t, &R->y, &zi);
    from_mont(y, t.v, &P);
    MB8__EC_FN(wipe)(&zi, sizeof zi);
    MB8__EC_FN(wipe)(&t, sizeof t);
    return inf;
}

/* Loads an affine point (canonical coordinates) into Montgomery projective form. */
static void pt_from_affine(pt *R, const uint64_t x[NL], const uint64_t y[NL])
{
    /* cppcheck-suppress uninitvar ; R is the output; to_mont only writes R->x */
    to_mont(R->x.v, x, &P);
    to_mont(R->y.v, y, &P);
    memcpy(R->z.v, P.one, sizeof R->z.v);
}

static void pt_generator(pt *R)
{
    uint64_t x[NL], y[NL];
    from_bytes(x, G_X);
    from_bytes(y, G_Y);
    pt_from_affine(R, x, y);
}

/* Decodes a BITS-bit scalar; returns all-ones when it is in [1, n-1]. */
static uint64_t scalar_load(uint64_t v[NL], const uint8_t b[NB])
{
    from_bytes(v, b);
    return lt_mask(v, N.m) & ~zero_mask(v);
}

/* The status nibble for lane i from masks: bad -> BAD_INPUT, else zero -> ZERO_RESULT. */
static mb8_status_t lane_status(unsigned i, uint64_t bad, uint64_t zero)
{
    uint64_t s = (bad & MB8_STATUS_BAD_INPUT) | (~bad & zero & MB8_STATUS_ZERO_RESULT);
    return (mb8_status_t)s << (4u * i);
}

/* b = the NB big-endian bytes of v (canonical limbs), all zero unless keep is all-ones. */
static void put_masked(uint8_t b[NB], const uint64_t v[NL], uint64_t keep)
{
    to_bytes(b, v);
    uint8_t m = (uint8_t)keep;
    for (size_t i = 0; i < NB; i++)
        b[i] &= m;
}

/* ---- ECDH --------------------------------------------------------------------------- */

/* All-ones when the 65 bytes are 0x04 || X || Y with X, Y < p and Y^2 = X^3 - 3X + b;
 * the loaded point goes to Q (garbage when invalid: the result is then discarded). */
static uint64_t peer_load(pt *Q, const uint8_t enc[NP])
{
    uint64_t x[NL], y[NL];
    fe lhs, rhs, t;
    uint64_t pre = (uint64_t)(enc[0] ^ 0x04);
    uint64_t ok = value_barrier(0 - (((pre | (0 - pre)) >> 63) ^ 1));
    from_bytes(x, enc + 1);
    from_bytes(y, enc + 1 + NB);
    ok &= lt_mask(x, P.m) & lt_mask(y, P.m);
    pt_from_affine(Q, x, y);
    fmul(&lhs, &Q->y, &Q->y); /* y^2 */
    fmul(&rhs, &Q->x, &Q->x); /* x^2 */
    fe one, b;
    memcpy(one.v, P.one, sizeof one.v);
    memcpy(b.v, B_MONT, sizeof b.v);
    fsub(&t, &rhs, &one); /* x^2 - 3 */
    fsub(&t, &t, &one);
    fsub(&t, &t, &one);
    fmul(&rhs, &t, &Q->x); /* x^3 - 3x */
    fadd(&rhs, &rhs, &b);
    ok &= eq_mask(lhs.v, rhs.v);
    /* (0, 0), the only encoding near "infinity" in NP bytes, fails the equation (b != 0). */
    return ok;
}

mb8_status_t MB8__EC_FN(ecdh_ref)(uint8_t out[MB8_LANES][NB], const uint8_t priv[MB8_LANES][NB],
                                  const uint8_t peer[MB8_LANES][NP], unsigned lane_mask)
{
    mb8_status_t st = 0;
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (!(lane_mask & (1u << i))) /* public: which lanes are used */
            continue;
        struct {
            pt Q, R;
            uint64_t d[NL], x[NL], y[NL];
        } t; /* the lane's secrets, wiped at once */
        uint64_t ok = scalar_load(t.d, priv[i]);
        ok &= peer_load(&t.Q, peer[i]);
        pt_mul(&t.R, &t.Q, priv[i]);
        uint64_t inf = pt_to_affine(t.x, t.y, &t.R);
        put_masked(out[i], t.x, ok & ~inf);
        st |= lane_status(i, ~ok, inf);
        MB8__EC_FN(wipe)(&t, sizeof t);
    }
    return st;
}

/* ---- key generation ----------------------------------------------------------------- */

mb8_status_t MB8__EC_FN(public_key_ref)(uint8_t out[MB8_LANES][NP],
                                        const uint8_t priv[MB8_LANES][NB], unsigned lane_mask)
{
    mb8_status_t st = 0;
    pt G;
    pt_generator(&G);
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (!(lane_mask & (1u << i)))
            continue;
        struct {
            pt R;
            uint64_t d[NL], x[NL], y[NL];
        } t;
        uint64_t ok = scalar_load(t.d, priv[i]);
        pt_mul(&t.R, &G, priv[i]);
        uint64_t inf = pt_to_affine(t.x, t.y, &t.R); /* never for d in [1, n-1] */
        uint64_t keep = ok & ~inf;
        out[i][0] = (uint8_t)(0x04 & keep);
        put_masked(out[i] + 1, t.x, keep);
        put_masked(out[i] + 1 + NB, t.y, keep);
        st |= lane_status(i, ~keep, 0);
        MB8__EC_FN(wipe)(&t, sizeof t);
    }
    return st;
}

/* ---- ECDSA -------------------------------------------------------------------------- */

/* A lane's nonce-only values, Montgomery form mod n. */
struct setup_m {
    uint64_t r_m[NL], kb_inv_m[NL], b_m[NL];
};

/* The per-signature values that depend only on the nonce (the future sign_setup):
 * r = x(kG) mod n, and, with the blinding factor b = k, kb_inv = (k b)^-1 and b, all in
 * Montgomery form mod n. Returns all-ones when k is in [1, n-1] and r != 0. */
static uint64_t ecdsa_setup(struct setup_m *S, const pt *G, const uint8_t k_bytes[NB])
{
    uint64_t *r_m = S->r_m, *kb_inv_m = S->kb_inv_m, *b_m = S->b_m;
    pt R;
    uint64_t k[NL], x[NL], y[NL], k_m[NL];
    uint64_t ok = scalar_load(k, k_bytes);
    pt_mul(&R, G, k_bytes);
    uint64_t inf = pt_to_affine(x, y, &R);
    to_mont(r_m, x, &N); /* x < p < 2n: reduced mod n on the way (FIPS 186-4 §6.4 step 4) */
    ok &= ~inf & ~zero_mask(r_m);
    to_mont(k_m, k, &N);
    memcpy(b_m, k_m, sizeof k_m);
    mont_mul(kb_inv_m, k_m, b_m, &N);
    mont_pow_public(kb_inv_m, kb_inv_m, N.m_minus_2, &N);
    MB8__EC_FN(wipe)(&R, sizeof R);
    MB8__EC_FN(wipe)(k, sizeof k);
    MB8__EC_FN(wipe)(x, sizeof x);
    MB8__EC_FN(wipe)(y, sizeof y);
    MB8__EC_FN(wipe)(k_m, sizeof k_m);
    return ok;
}

/* s = (k b)^-1 (b e + (b r) d) mod n = k^-1 (e + r d) (the future sign_complete): d is
 * never multiplied by the public r alone. Returns all-ones when d is in [1, n-1] and
 * s != 0. s in canonical form. */
static uint64_t ecdsa_complete(uint64_t s[NL], const struct setup_m *S, const uint8_t e_bytes[NB],
                               const uint8_t d_bytes[NB])
{
    const uint64_t *r_m = S->r_m, *kb_inv_m = S->kb_inv_m, *b_m = S->b_m;
    uint64_t d[NL], e[NL], d_m[NL], e_m[NL], br[NL], t[NL];
    uint64_t ok = scalar_load(d, d_bytes);
    from_bytes(e, e_bytes);
    to_mont(d_m, d, &N);
    to_mont(e_m, e, &N); /* e may be >= n: reduced here */
    mont_mul(br, b_m, r_m, &N);
    mont_mul(t, br, d_m, &N);    /* b r d */
    mont_mul(e_m, e_m, b_m, &N); /* b e */
    mod_add(t, t, e_m, &N);
    mont_mul(t, t, kb_inv_m, &N);
    from_mont(s, t, &N);
    ok &= ~zero_mask(s);
    MB8__EC_FN(wipe)(d, sizeof d);
    MB8__EC_FN(wipe)(e, sizeof e);
    MB8__EC_FN(wipe)(d_m, sizeof d_m);
    MB8__EC_FN(wipe)(e_m, sizeof e_m);
    MB8__EC_FN(wipe)(br, sizeof br);
    MB8__EC_FN(wipe)(t, sizeof t);
    return ok;
}

/* Lane i's signature: r and s (canonical) to its outputs, zeros unless ok; its status. */
static mb8_status_t sig_out(uint8_t r[NB], uint8_t s[NB], const uint64_t rv[NL],
                            const uint64_t sv[NL], uint64_t ok, unsigned i)
{
    put_masked(r, rv, ok);
    put_masked(s, sv, ok);
    return lane_status(i, ~ok, 0);
}

mb8_status_t MB8__EC_FN(ecdsa_sign_ref)(uint8_t r[MB8_LANES][NB], uint8_t s[MB8_LANES][NB],
                                        const uint8_t e[MB8_LANES][NB],
                                        const uint8_t d[MB8_LANES][NB],
                                        const uint8_t k[MB8_LANES][NB], unsigned lane_mask)
{
    mb8_status_t st = 0;
    pt G;
    pt_generator(&G);
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (!(lane_mask & (1u << i)))
            continue;
        struct {
            struct setup_m m;
            uint64_t rv[NL], sv[NL];
        } t;
        uint64_t ok = ecdsa_setup(&t.m, &G, k[i]);
        ok &= ecdsa_complete(t.sv, &t.m, e[i], d[i]);
        from_mont(t.rv, t.m.r_m, &N);
        st |= sig_out(r[i], s[i], t.rv, t.sv, ok, i);
        MB8__EC_FN(wipe)(&t, sizeof t);
    }
    return st;
}

mb8_status_t MB8__EC_FN(ecdsa_setup_ref)(uint8_t out[MB8_LANES][NSETUP],
                                         const uint8_t k[MB8_LANES][NB], unsigned lane_mask)
{
    mb8_status_t st = 0;
    pt G;
    pt_generator(&G);
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (!(lane_mask & (1u << i)))
            continue;
        struct {
            struct setup_m m;
            uint64_t v[NL];
        } t;
        uint64_t ok = ecdsa_setup(&t.m, &G, k[i]);
        const uint64_t *parts[3] = {t.m.r_m, t.m.kb_inv_m, t.m.b_m};
        for (int j = 0; j < 3; j++) { /* out of the Montgomery domain, canonical */
            from_mont(t.v, parts[j], &N);
            put_masked(out[i] + j * NB, t.v, ok);
        }
        st |= lane_status(i, ~ok, 0);
        MB8__EC_FN(wipe)(&t, sizeof t);
    }
    return st;
}

mb8_status_t MB8__EC_FN(ecdsa_complete_ref)(uint8_t r[MB8_LANES][NB], uint8_t s[MB8_LANES][NB],
                                            const uint8_t e[MB8_LANES][NB],
                                            const uint8_t d[MB8_LANES][NB],
                                            const uint8_t setup[MB8_LANES][NSETUP],
                                            unsigned lane_mask)
{
    mb8_status_t st = 0;
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (!(lane_mask & (1u << i)))
            continue;
        struct {
            uint64_t v[3][NL]; /* r, kb_inv, b as in the setup */
            struct setup_m m;
            uint64_t sv[NL];
        } t;
        uint64_t ok = ~(uint64_t)0;
        /* cppcheck-suppress uninitvar ; the addresses of the outputs of to_mont below */
        uint64_t *parts[3] = {t.m.r_m, t.m.kb_inv_m, t.m.b_m};
        for (int j = 0; j < 3; j++) {
            /* each value must be in [1, n - 1], as a setup produces them */
            ok &= scalar_load(t.v[j], setup[i] + j * NB);
            to_mont(parts[j], t.v[j], &N);
        }
        ok &= ecdsa_complete(t.sv, &t.m, e[i], d[i]);
        st |= sig_out(r[i], s[i], t.v[0], t.sv, ok, i);
        MB8__EC_FN(wipe)(&t, sizeof t);
    }
    return st;
}
