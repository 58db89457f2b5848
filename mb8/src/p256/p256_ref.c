/*
 * Portable reference P-256 (NIST P-256 = secp256r1, FIPS 186-4 §D.1.2.3, SEC 2 §2.4.2):
 * see p256_internal.h and mb8/p256.h.
 *
 * Numbers: 5 limbs of 52 bits (radix 2^52, 260 bits), the radix of the AVX-512 IFMA
 * kernel (p256_ifma.c), so both kernels hold the same
 * Montgomery values limb for limb and a mismatch can be traced limb by limb. Products are
 * unsigned __int128. One generic Montgomery multiplication (R = 2^260) serves the field
 * (mod p, where p = -1 mod 2^52 makes k0 = 1) and the scalars (mod n, k0 = -n^-1 mod
 * 2^52); every result is fully reduced (< m) by a masked subtraction, so values are always
 * canonical and equality is limb equality. 4 x 64-bit limbs (16 instead of 25 limb
 * products, plus mulx/adx carry chains) would likely be faster for a scalar-only build,
 * but would not mirror the IFMA kernel, which is the one meant to be fast.
 *
 * Points: homogeneous projective (X : Y : Z), x = X/Z, y = Y/Z, with the complete
 * addition and doubling formulas for a = -3 of Renes, Costello and Batina, "Complete
 * addition formulas for prime order elliptic curves" (EUROCRYPT 2016), Algorithms 4 and
 * 6: valid for every pair of points including P = Q, P = -Q and the point at infinity
 * (0 : 1 : 0), so the scalar multiplication has no exceptional case to mask at all. They
 * cost 12M + 2 mul-by-b (addition) and 8M + 3S (doubling), against 12M + 4S / 4M + 4S
 * for Jacobian, i.e. ~20% more field work than Jacobian with masked special cases; the
 * IFMA kernel uses Jacobian coordinates for ECDH (p256_ifma.c), giving the same bytes.
 *
 * Scalar multiplication: fixed 4-bit windows, unsigned digits, 64 windows of 4 doublings
 * and one addition each; a per-lane table of 0P..15P (0P = infinity) read with a
 * constant-time scan of all 16 entries. Key generation and ECDSA's kG use the same
 * variable-base routine on G; the fixed-base comb (Booth, 8 affine multiples per
 * window, no doublings) is for the IFMA kernel.
 *
 * Inversions: Fermat, x^(m-2) with a fixed 4-bit window over the public exponent (256
 * squarings, 64 + 14 multiplications), the same for p and n.
 *
 * Constant time: no branch and no memory index depends on a scalar, nonce, digest or
 * point; range and curve checks are masks; window positions and loop counts are fixed.
 */
#include <string.h>

#include "../common/ct.h"
#include "p256_internal.h"

typedef unsigned __int128 u128;

#define M52 ((((uint64_t)1) << 52) - 1)
#define NB MB8_P256_SCALAR_BYTES

/* A modulus for Montgomery arithmetic with R = 2^260. */
struct p256_mod {
    uint64_t m[5];         /* the modulus, 52-bit limbs, least significant first */
    uint64_t k0;           /* -m^-1 mod 2^52 */
    uint64_t rr[5];        /* R^2 mod m */
    uint64_t one[5];       /* R mod m: 1 in Montgomery form */
    uint8_t m_minus_2[NB]; /* Fermat exponent, big-endian */
};

/* p = 2^256 - 2^224 + 2^192 + 2^96 - 1 (FIPS 186-4 §D.1.2.3). */
static const struct p256_mod P = {
    {0xfffffffffffffULL, 0x00fffffffffffULL, 0x0000000000000ULL, 0x0001000000000ULL,
     0x0ffffffff0000ULL},
    1,
    {0x0000000000300ULL, 0xffffffff00000ULL, 0xffffefffffffbULL, 0xfdfffffffffffULL,
     0x0000004ffffffULL},
    {0x0000000000010ULL, 0xf000000000000ULL, 0xfffffffffffffULL, 0xffeffffffffffULL,
     0x00000000fffffULL},
    {0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
     0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff,
     0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfd},
};

/* n, the order of G (FIPS 186-4 §D.1.2.3). */
static const struct p256_mod N = {
    {0x9cac2fc632551ULL, 0xada7179e84f3bULL, 0xfffffffbce6faULL, 0x0000fffffffffULL,
     0x0ffffffff0000ULL},
    0x1c8aaee00bc4fULL,
    {0x5cc0dea6dc3baULL, 0x192a067d8a084ULL, 0xbec59615571bbULL, 0x1fc245b2392b6ULL,
     0x0e12d9559d956ULL},
    {0x353d039cdaaf0ULL, 0x258e8617b0c46ULL, 0x0000004319055ULL, 0xfff0000000000ULL,
     0x00000000fffffULL},
    {0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff,
     0xff, 0xff, 0xff, 0xff, 0xff, 0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17,
     0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x4f},
};

/* b of y^2 = x^3 - 3x + b, in Montgomery form (b * 2^260 mod p). */
static const struct {
    uint64_t v[5];
} B_MONT = {{0xdf6229c4bddfdULL, 0xca8843090d89cULL, 0x212ed6acf005cULL, 0x83415a220abf7ULL,
             0x0c30061dd4874ULL}};

/* The base point G (FIPS 186-4 §D.1.2.3), big-endian. */
static const uint8_t G_X[NB] = {0x6b, 0x17, 0xd1, 0xf2, 0xe1, 0x2c, 0x42, 0x47, 0xf8, 0xbc, 0xe6,
                                0xe5, 0x63, 0xa4, 0x40, 0xf2, 0x77, 0x03, 0x7d, 0x81, 0x2d, 0xeb,
                                0x33, 0xa0, 0xf4, 0xa1, 0x39, 0x45, 0xd8, 0x98, 0xc2, 0x96};
static const uint8_t G_Y[NB] = {0x4f, 0xe3, 0x42, 0xe2, 0xfe, 0x1a, 0x7f, 0x9b, 0x8e, 0xe7, 0xeb,
                                0x4a, 0x7c, 0x0f, 0x9e, 0x16, 0x2b, 0xce, 0x33, 0x57, 0x6b, 0x31,
                                0x5e, 0xce, 0xcb, 0xb6, 0x40, 0x68, 0x37, 0xbf, 0x51, 0xf5};

#define value_barrier mb8__value_barrier

void mb8__p256_wipe(void *p, size_t n)
{
    mb8__wipe(p, n);
}

/* ---- 5 x 52-bit numbers ------------------------------------------------------------ */

void mb8__p256_from_bytes(uint64_t v[5], const uint8_t b[NB])
{
    uint64_t w[4];
    for (int i = 0; i < 4; i++) {
        uint64_t x = 0;
        for (int j = 0; j < 8; j++)
            x = (x << 8) | b[NB - 8 * (i + 1) + j];
        w[i] = x;
    }
    v[0] = w[0] & M52;
    v[1] = ((w[0] >> 52) | (w[1] << 12)) & M52;
    v[2] = ((w[1] >> 40) | (w[2] << 24)) & M52;
    v[3] = ((w[2] >> 28) | (w[3] << 36)) & M52;
    v[4] = w[3] >> 16;
    mb8__p256_wipe(w, sizeof w);
}

void mb8__p256_to_bytes(uint8_t b[NB], const uint64_t v[5])
{
    uint64_t w[4];
    w[0] = v[0] | (v[1] << 52);
    w[1] = (v[1] >> 12) | (v[2] << 40);
    w[2] = (v[2] >> 24) | (v[3] << 28);
    w[3] = (v[3] >> 36) | (v[4] << 16);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 8; j++)
            b[NB - 8 * i - 1 - j] = (uint8_t)(w[i] >> (8 * j));
    mb8__p256_wipe(w, sizeof w);
}

#define from_bytes mb8__p256_from_bytes
#define to_bytes mb8__p256_to_bytes

/* All-ones when a < m (limbs < 2^52 each), else 0: the borrow of a - m. */
static uint64_t lt_mask(const uint64_t a[5], const uint64_t m[5])
{
    uint64_t borrow = 0;
    for (int i = 0; i < 5; i++)
        borrow = (a[i] - m[i] - borrow) >> 63;
    return value_barrier(0 - borrow);
}

/* All-ones when a == 0, else 0. */
static uint64_t zero_mask(const uint64_t a[5])
{
    uint64_t acc = a[0] | a[1] | a[2] | a[3] | a[4];
    return value_barrier(0 - (((acc | (0 - acc)) >> 63) ^ 1));
}

/* All-ones when a == b, else 0. */
static uint64_t eq_mask(const uint64_t a[5], const uint64_t b[5])
{
    uint64_t d[5];
    for (int i = 0; i < 5; i++)
        d[i] = a[i] ^ b[i];
    return zero_mask(d);
}

/* r = a when mask is all-ones, r unchanged when 0. */
static void cmov(uint64_t r[5], const uint64_t a[5], uint64_t mask)
{
    for (int i = 0; i < 5; i++)
        r[i] = (r[i] & ~mask) | (a[i] & mask);
}

/* r = t mod m for t < 2m (limbs < 2^52, t[4] < 2^53): t - (m AND mask), mask all-ones
 * when t >= m. (One borrow chain and no selected temporaries: the vectoriser turned a
 * compute-both-and-select version into a store-forwarding stall.) r may alias t. */
static void reduce_once(uint64_t r[5], const uint64_t t[5], const uint64_t m[5])
{
    uint64_t ge = ~lt_mask(t, m), borrow = 0;
    for (int i = 0; i < 5; i++) {
        uint64_t x = t[i] - (m[i] & ge) - borrow;
        borrow = x >> 63;
        r[i] = x & M52;
    }
}

/* r = a * b * 2^-260 mod m, fully reduced, for any a, b < 2^256 (then a b / R < m and the
 * Montgomery sum stays below 2m). r may alias a or b. Product scanning (column by
 * column): column i of a b + q m is accumulated in one 128-bit sum (at most 10 products
 * of 104 bits), and the quotient digit q[i] is fixed as soon as column i < 5 is complete
 * (q[i] = column * k0 mod 2^52, so that the column's low 52 bits cancel). */
static void mont_mul(uint64_t r[5], const uint64_t a[5], const uint64_t b[5],
                     const struct p256_mod *M)
{
    const uint64_t *m = M->m;
    uint64_t q[5], t[5];
    u128 acc = 0;
    for (int i = 0; i < 5; i++) {
        for (int j = 0; j < i; j++)
            /* cppcheck-suppress uninitvar ; q[j] for j < i was set by an earlier column */
            acc += (u128)a[j] * b[i - j] + (u128)q[j] * m[i - j];
        acc += (u128)a[i] * b[0];
        q[i] = ((uint64_t)acc * M->k0) & M52; /* k0 = 1 for p: q[i] = the low limb */
        acc += (u128)q[i] * m[0];             /* low 52 bits now zero */
        acc >>= 52;
    }
    for (int i = 5; i < 10; i++) {
        for (int j = i - 4; j < 5; j++)
            acc += (u128)a[j] * b[i - j] + (u128)q[j] * m[i - j];
        t[i - 5] = (uint64_t)acc & M52;
        acc >>= 52;
    }
    /* the sum is below 2m < 2^257: nothing is left in acc */
    reduce_once(r, t, m);
    /* q and t are not wiped: like the X25519 field primitives, the leaf arithmetic leaves
     * its few words to be overwritten by the next call; the callers wipe their named
     * temporaries. */
}

/* r = a + b mod m (a, b < m). */
static void mod_add(uint64_t r[5], const uint64_t a[5], const uint64_t b[5],
                    const struct p256_mod *M)
{
    uint64_t t[5], c = 0;
    for (int i = 0; i < 5; i++) {
        t[i] = a[i] + b[i] + c;
        c = t[i] >> 52;
        t[i] &= M52;
    }
    t[4] += c << 52; /* a + b < 2^257: fits limb 4 */
    reduce_once(r, t, M->m);
}

/* r = a - b mod m (a, b < m): a - b, plus m kept by the borrow mask. */
static void mod_sub(uint64_t r[5], const uint64_t a[5], const uint64_t b[5],
                    const struct p256_mod *M)
{
    uint64_t t[5], borrow = 0, c = 0;
    for (int i = 0; i < 5; i++) {
        t[i] = a[i] - b[i] - borrow;
        borrow = t[i] >> 63;
        t[i] &= M52;
    }
    uint64_t mask = value_barrier(0 - borrow);
    for (int i = 0; i < 5; i++) {
        t[i] = t[i] + (M->m[i] & mask) + c;
        c = t[i] >> 52;
        r[i] = t[i] & M52;
    }
}

/* r = a^e mod m in Montgomery form (a in Montgomery form), e a PUBLIC 256-bit big-endian
 * exponent: fixed 4-bit window, the table index is the public exponent nibble. */
static void mont_pow_public(uint64_t r[5], const uint64_t a[5], const uint8_t e[NB],
                            const struct p256_mod *M)
{
    uint64_t tab[16][5], acc[5];
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
    mb8__p256_wipe(tab, sizeof tab);
    mb8__p256_wipe(acc, sizeof acc);
}

/* Montgomery form of a 256-bit value x (reduced mod m on the way). */
static void to_mont(uint64_t r[5], const uint64_t x[5], const struct p256_mod *M)
{
    mont_mul(r, x, M->rr, M);
}

/* The canonical value of a Montgomery-form a. */
static void from_mont(uint64_t r[5], const uint64_t a[5], const struct p256_mod *M)
{
    static const uint64_t one[5] = {1, 0, 0, 0, 0};
    mont_mul(r, a, one, M);
}

/* ---- field and points --------------------------------------------------------------- */

typedef struct {
    uint64_t v[5];
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

/* R = P1 + P2: Renes-Costello-Batina 2016, Algorithm 4 (complete, a = -3). R may alias. */
static void pt_add(pt *R, const pt *P1, const pt *P2)
{
    fe bb;
    memcpy(bb.v, B_MONT.v, sizeof bb.v);
    const fe *b = &bb;
    fe X1 = P1->x, Y1 = P1->y, Z1 = P1->z, X2 = P2->x, Y2 = P2->y, Z2 = P2->z;
    fe t0, t1, t2, t3, t4, X3, Y3, Z3;
    fmul(&t0, &X1, &X2);
    fmul(&t1, &Y1, &Y2);
    fmul(&t2, &Z1, &Z2);
    fadd(&t3, &X1, &Y1);
    fadd(&t4, &X2, &Y2);
    fmul(&t3, &t3, &t4);
    fadd(&t4, &t0, &t1);
    fsub(&t3, &t3, &t4);
    fadd(&t4, &Y1, &Z1);
    fadd(&X3, &Y2, &Z2);
    fmul(&t4, &t4, &X3);
    fadd(&X3, &t1, &t2);
    fsub(&t4, &t4, &X3);
    fadd(&X3, &X1, &Z1);
    fadd(&Y3, &X2, &Z2);
    fmul(&X3, &X3, &Y3);
    fadd(&Y3, &t0, &t2);
    fsub(&Y3, &X3, &Y3);
    fmul(&Z3, b, &t2);
    fsub(&X3, &Y3, &Z3);
    fadd(&Z3, &X3, &X3);
    fadd(&X3, &X3, &Z3);
    fsub(&Z3, &t1, &X3);
    fadd(&X3, &t1, &X3);
    fmul(&Y3, b, &Y3);
    fadd(&t1, &t2, &t2);
    fadd(&t2, &t1, &t2);
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
    mb8__p256_wipe(&X1, sizeof X1);
    mb8__p256_wipe(&Y1, sizeof Y1);
    mb8__p256_wipe(&Z1, sizeof Z1);
    mb8__p256_wipe(&X2, sizeof X2);
    mb8__p256_wipe(&Y2, sizeof Y2);
    mb8__p256_wipe(&Z2, sizeof Z2);
    mb8__p256_wipe(&t0, sizeof t0);
    mb8__p256_wipe(&t1, sizeof t1);
    mb8__p256_wipe(&t2, sizeof t2);
    mb8__p256_wipe(&t3, sizeof t3);
    mb8__p256_wipe(&t4, sizeof t4);
    mb8__p256_wipe(&X3, sizeof X3);
    mb8__p256_wipe(&Y3, sizeof Y3);
    mb8__p256_wipe(&Z3, sizeof Z3);
}

/* R = 2 P1: Renes-Costello-Batina 2016, Algorithm 6 (complete, a = -3). R may alias. */
static void pt_dbl(pt *R, const pt *P1)
{
    fe bb;
    memcpy(bb.v, B_MONT.v, sizeof bb.v);
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
    fadd(&X3, &Y3, &Y3);
    fadd(&Y3, &X3, &Y3);
    fsub(&X3, &t1, &Y3);
    fadd(&Y3, &t1, &Y3);
    fmul(&Y3, &X3, &Y3);
    fmul(&X3, &X3, &t3);
    fadd(&t3, &t2, &t2);
    fadd(&t2, &t2, &t3);
    fmul(&Z3, b, &Z3);
    fsub(&Z3, &Z3, &t2);
    fsub(&Z3, &Z3, &t0);
    fadd(&t3, &Z3, &Z3);
    fadd(&Z3, &Z3, &t3);
    fadd(&t3, &t0, &t0);
    fadd(&t0, &t3, &t0);
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
    mb8__p256_wipe(&X, sizeof X);
    mb8__p256_wipe(&Y, sizeof Y);
    mb8__p256_wipe(&Z, sizeof Z);
    mb8__p256_wipe(&t0, sizeof t0);
    mb8__p256_wipe(&t1, sizeof t1);
    mb8__p256_wipe(&t2, sizeof t2);
    mb8__p256_wipe(&t3, sizeof t3);
    mb8__p256_wipe(&X3, sizeof X3);
    mb8__p256_wipe(&Y3, sizeof Y3);
    mb8__p256_wipe(&Z3, sizeof Z3);
}

/* R = k * P1 for a 256-bit big-endian k (any value; 0 gives infinity): 64 fixed 4-bit
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
        mb8__p256_wipe(&digit, sizeof digit);
    }
    *R = acc;
    mb8__p256_wipe(tab, sizeof tab);
    mb8__p256_wipe(&acc, sizeof acc);
    mb8__p256_wipe(&sel, sizeof sel);
}

/* Affine (x, y), canonical (not Montgomery), of R; returns all-ones when R is infinity
 * (then x = y = 0). */
static uint64_t pt_to_affine(uint64_t x[5], uint64_t y[5], const pt *R)
{
    fe zi, t;
    uint64_t inf = zero_mask(R->z.v);
    mont_pow_public(zi.v, R->z.v, P.m_minus_2, &P); /* 0 maps to 0 */
    fmul(&t, &R->x, &zi);
    from_mont(x, t.v, &P);
    fmul(&t, &R->y, &zi);
    from_mont(y, t.v, &P);
    mb8__p256_wipe(&zi, sizeof zi);
    mb8__p256_wipe(&t, sizeof t);
    return inf;
}

/* Loads an affine point (canonical coordinates) into Montgomery projective form. */
static void pt_from_affine(pt *R, const uint64_t x[5], const uint64_t y[5])
{
    /* cppcheck-suppress uninitvar ; R is the output; to_mont only writes R->x */
    to_mont(R->x.v, x, &P);
    to_mont(R->y.v, y, &P);
    memcpy(R->z.v, P.one, sizeof R->z.v);
}

static void pt_generator(pt *R)
{
    uint64_t x[5], y[5];
    from_bytes(x, G_X);
    from_bytes(y, G_Y);
    pt_from_affine(R, x, y);
}

/* Decodes a 256-bit scalar; returns all-ones when it is in [1, n-1]. */
static uint64_t scalar_load(uint64_t v[5], const uint8_t b[NB])
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

/* Masks bytes with 'keep' (all-ones keeps, 0 zeroes). */
static void mask_bytes(uint8_t *b, size_t n, uint64_t keep)
{
    uint8_t m = (uint8_t)keep;
    for (size_t i = 0; i < n; i++)
        b[i] &= m;
}

/* ---- ECDH --------------------------------------------------------------------------- */

/* All-ones when the 65 bytes are 0x04 || X || Y with X, Y < p and Y^2 = X^3 - 3X + b;
 * the loaded point goes to Q (garbage when invalid: the result is then discarded). */
static uint64_t peer_load(pt *Q, const uint8_t enc[MB8_P256_POINT_BYTES])
{
    uint64_t x[5], y[5];
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
    memcpy(b.v, B_MONT.v, sizeof b.v);
    fsub(&t, &rhs, &one); /* x^2 - 3 */
    fsub(&t, &t, &one);
    fsub(&t, &t, &one);
    fmul(&rhs, &t, &Q->x); /* x^3 - 3x */
    fadd(&rhs, &rhs, &b);
    ok &= eq_mask(lhs.v, rhs.v);
    /* (0, 0), the only encoding near "infinity" in 65 bytes, fails the equation (b != 0). */
    return ok;
}

mb8_status_t mb8__p256_ecdh_ref(uint8_t out[MB8_LANES][MB8_P256_SCALAR_BYTES],
                                const uint8_t priv[MB8_LANES][MB8_P256_SCALAR_BYTES],
                                const uint8_t peer[MB8_LANES][MB8_P256_POINT_BYTES],
                                unsigned lane_mask)
{
    mb8_status_t st = 0;
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (!(lane_mask & (1u << i))) /* public: which lanes are used */
            continue;
        pt Q, R;
        uint64_t d[5], x[5], y[5];
        uint64_t ok = scalar_load(d, priv[i]);
        ok &= peer_load(&Q, peer[i]);
        pt_mul(&R, &Q, priv[i]);
        uint64_t inf = pt_to_affine(x, y, &R);
        to_bytes(out[i], x);
        mask_bytes(out[i], NB, ok & ~inf);
        st |= lane_status(i, ~ok, inf);
        mb8__p256_wipe(&Q, sizeof Q);
        mb8__p256_wipe(&R, sizeof R);
        mb8__p256_wipe(d, sizeof d);
        mb8__p256_wipe(x, sizeof x);
        mb8__p256_wipe(y, sizeof y);
    }
    return st;
}

/* ---- key generation ----------------------------------------------------------------- */

mb8_status_t mb8__p256_public_key_ref(uint8_t out[MB8_LANES][MB8_P256_POINT_BYTES],
                                      const uint8_t priv[MB8_LANES][MB8_P256_SCALAR_BYTES],
                                      unsigned lane_mask)
{
    mb8_status_t st = 0;
    pt G;
    pt_generator(&G);
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (!(lane_mask & (1u << i)))
            continue;
        pt R;
        uint64_t d[5], x[5], y[5];
        uint64_t ok = scalar_load(d, priv[i]);
        pt_mul(&R, &G, priv[i]);
        uint64_t inf = pt_to_affine(x, y, &R); /* never for d in [1, n-1] */
        out[i][0] = 0x04;
        to_bytes(out[i] + 1, x);
        to_bytes(out[i] + 1 + NB, y);
        mask_bytes(out[i], MB8_P256_POINT_BYTES, ok & ~inf);
        st |= lane_status(i, ~ok | inf, 0);
        mb8__p256_wipe(&R, sizeof R);
        mb8__p256_wipe(d, sizeof d);
        mb8__p256_wipe(x, sizeof x);
        mb8__p256_wipe(y, sizeof y);
    }
    return st;
}

/* ---- ECDSA -------------------------------------------------------------------------- */

/* The per-signature values that depend only on the nonce (the future sign_setup):
 * r = x(kG) mod n, and, with the blinding factor b = k, kb_inv = (k b)^-1 and b, all in
 * Montgomery form mod n. Returns all-ones when k is in [1, n-1] and r != 0. */
static uint64_t ecdsa_setup(uint64_t r_m[5], uint64_t kb_inv_m[5], uint64_t b_m[5], const pt *G,
                            const uint8_t k_bytes[NB])
{
    pt R;
    uint64_t k[5], x[5], y[5], k_m[5];
    uint64_t ok = scalar_load(k, k_bytes);
    pt_mul(&R, G, k_bytes);
    uint64_t inf = pt_to_affine(x, y, &R);
    to_mont(r_m, x, &N); /* x < p < 2n: reduced mod n on the way (FIPS 186-4 §6.4 step 4) */
    ok &= ~inf & ~zero_mask(r_m);
    to_mont(k_m, k, &N);
    memcpy(b_m, k_m, sizeof k_m);
    mont_mul(kb_inv_m, k_m, b_m, &N);
    mont_pow_public(kb_inv_m, kb_inv_m, N.m_minus_2, &N);
    mb8__p256_wipe(&R, sizeof R);
    mb8__p256_wipe(k, sizeof k);
    mb8__p256_wipe(x, sizeof x);
    mb8__p256_wipe(y, sizeof y);
    mb8__p256_wipe(k_m, sizeof k_m);
    return ok;
}

/* s = (k b)^-1 (b e + (b r) d) mod n = k^-1 (e + r d) (the future sign_complete): d is
 * never multiplied by the public r alone. Returns all-ones when d is in [1, n-1] and
 * s != 0. s in canonical form. */
static uint64_t ecdsa_complete(uint64_t s[5], const uint64_t r_m[5], const uint64_t kb_inv_m[5],
                               const uint64_t b_m[5], const uint8_t e_bytes[NB],
                               const uint8_t d_bytes[NB])
{
    uint64_t d[5], e[5], d_m[5], e_m[5], br[5], t[5];
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
    mb8__p256_wipe(d, sizeof d);
    mb8__p256_wipe(e, sizeof e);
    mb8__p256_wipe(d_m, sizeof d_m);
    mb8__p256_wipe(e_m, sizeof e_m);
    mb8__p256_wipe(br, sizeof br);
    mb8__p256_wipe(t, sizeof t);
    return ok;
}

mb8_status_t mb8__p256_ecdsa_sign_ref(uint8_t r[MB8_LANES][MB8_P256_SCALAR_BYTES],
                                      uint8_t s[MB8_LANES][MB8_P256_SCALAR_BYTES],
                                      const uint8_t e[MB8_LANES][MB8_P256_SCALAR_BYTES],
                                      const uint8_t d[MB8_LANES][MB8_P256_SCALAR_BYTES],
                                      const uint8_t k[MB8_LANES][MB8_P256_SCALAR_BYTES],
                                      unsigned lane_mask)
{
    mb8_status_t st = 0;
    pt G;
    pt_generator(&G);
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (!(lane_mask & (1u << i)))
            continue;
        uint64_t r_m[5], kb_inv_m[5], b_m[5], rv[5], sv[5];
        uint64_t ok = ecdsa_setup(r_m, kb_inv_m, b_m, &G, k[i]);
        ok &= ecdsa_complete(sv, r_m, kb_inv_m, b_m, e[i], d[i]);
        from_mont(rv, r_m, &N);
        to_bytes(r[i], rv);
        to_bytes(s[i], sv);
        mask_bytes(r[i], NB, ok);
        mask_bytes(s[i], NB, ok);
        st |= lane_status(i, ~ok, 0);
        mb8__p256_wipe(r_m, sizeof r_m);
        mb8__p256_wipe(kb_inv_m, sizeof kb_inv_m);
        mb8__p256_wipe(b_m, sizeof b_m);
        mb8__p256_wipe(rv, sizeof rv);
        mb8__p256_wipe(sv, sizeof sv);
    }
    return st;
}

mb8_status_t mb8__p256_ecdsa_setup_ref(uint8_t out[MB8_LANES][MB8_P256_SETUP_BYTES],
                                       const uint8_t k[MB8_LANES][MB8_P256_SCALAR_BYTES],
                                       unsigned lane_mask)
{
    mb8_status_t st = 0;
    pt G;
    pt_generator(&G);
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (!(lane_mask & (1u << i)))
            continue;
        uint64_t r_m[5], kb_inv_m[5], b_m[5], v[5];
        uint64_t ok = ecdsa_setup(r_m, kb_inv_m, b_m, &G, k[i]);
        from_mont(v, r_m, &N);
        to_bytes(out[i], v);
        from_mont(v, kb_inv_m, &N);
        to_bytes(out[i] + NB, v);
        from_mont(v, b_m, &N);
        to_bytes(out[i] + 2 * NB, v);
        mask_bytes(out[i], MB8_P256_SETUP_BYTES, ok);
        st |= lane_status(i, ~ok, 0);
        mb8__p256_wipe(r_m, sizeof r_m);
        mb8__p256_wipe(kb_inv_m, sizeof kb_inv_m);
        mb8__p256_wipe(b_m, sizeof b_m);
        mb8__p256_wipe(v, sizeof v);
    }
    return st;
}

mb8_status_t mb8__p256_ecdsa_complete_ref(uint8_t r[MB8_LANES][MB8_P256_SCALAR_BYTES],
                                          uint8_t s[MB8_LANES][MB8_P256_SCALAR_BYTES],
                                          const uint8_t e[MB8_LANES][MB8_P256_SCALAR_BYTES],
                                          const uint8_t d[MB8_LANES][MB8_P256_SCALAR_BYTES],
                                          const uint8_t setup[MB8_LANES][MB8_P256_SETUP_BYTES],
                                          unsigned lane_mask)
{
    mb8_status_t st = 0;
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (!(lane_mask & (1u << i)))
            continue;
        uint64_t r_v[5], kbi[5], b[5], r_m[5], kb_inv_m[5], b_m[5], sv[5];
        /* each value must be in [1, n - 1], as a setup produces them */
        uint64_t ok = scalar_load(r_v, setup[i]);
        ok &= scalar_load(kbi, setup[i] + NB);
        ok &= scalar_load(b, setup[i] + 2 * NB);
        to_mont(r_m, r_v, &N);
        to_mont(kb_inv_m, kbi, &N);
        to_mont(b_m, b, &N);
        ok &= ecdsa_complete(sv, r_m, kb_inv_m, b_m, e[i], d[i]);
        to_bytes(r[i], r_v);
        to_bytes(s[i], sv);
        mask_bytes(r[i], NB, ok);
        mask_bytes(s[i], NB, ok);
        st |= lane_status(i, ~ok, 0);
        mb8__p256_wipe(r_v, sizeof r_v);
        mb8__p256_wipe(kbi, sizeof kbi);
        mb8__p256_wipe(b, sizeof b);
        mb8__p256_wipe(r_m, sizeof r_m);
        mb8__p256_wipe(kb_inv_m, sizeof kb_inv_m);
        mb8__p256_wipe(b_m, sizeof b_m);
        mb8__p256_wipe(sv, sizeof sv);
    }
    return st;
}
