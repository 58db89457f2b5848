/*
 * Portable reference X25519 (RFC 7748 §5): see x25519_internal.h and mb8/x25519.h.
 *
 * Field elements mod p = 2^255 - 19 are 5 limbs of 51 bits (radix 2^51), value
 * sum v[i] * 2^(51 i); products are unsigned __int128 and 2^255 = 19 (mod p) folds the top
 * partial products back. Limbs are "loose": after any operation here every limb is below
 * 2^52, which keeps every 128-bit column sum far from overflow (5 * 2^52 * 19 * 2^52 <
 * 2^113). Only fe25519_tobytes produces the canonical value.
 *
 * Constant time: no branch and no memory index depends on the scalar or the point. The
 * ladder's conditional swap is an XOR with a mask built from the scalar bit; the bit
 * positions and loop counts are fixed (255 ladder steps, a fixed inversion chain).
 */
#include <string.h>

#include "../common/ct.h"
#include "x25519_internal.h"

typedef struct {
    uint64_t v[5];
} fe25519;

#define MASK51 ((((uint64_t)1) << 51) - 1)

#define value_barrier mb8__value_barrier

void mb8__x25519_wipe(void *p, size_t n)
{
    mb8__wipe(p, n);
}

/* RFC 7748 §5: "implementations of X25519 ... MUST mask the most significant bit in the
 * final byte"; values in [p, 2^255) are kept as they are (reduced by the arithmetic). */
static void mb8__fe25519_frombytes_ref(fe25519 *h, const uint8_t s[32])
{
    uint64_t w0 = mb8__x25519_load64_le(s), w1 = mb8__x25519_load64_le(s + 8),
             w2 = mb8__x25519_load64_le(s + 16), w3 = mb8__x25519_load64_le(s + 24);
    h->v[0] = w0 & MASK51;
    h->v[1] = ((w0 >> 51) | (w1 << 13)) & MASK51;
    h->v[2] = ((w1 >> 38) | (w2 << 26)) & MASK51;
    h->v[3] = ((w2 >> 25) | (w3 << 39)) & MASK51;
    h->v[4] = (w3 >> 12) & MASK51; /* drops bit 255 */
}

/* Carries limbs 0 .. 3 each into the next and masks all five to 51 bits; returns the carry
 * out of limb 4 (weight 2^255). */
static uint64_t fe25519_carry_out(fe25519 *h)
{
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        h->v[i + 1] += h->v[i] >> 51;
        h->v[i] &= MASK51;
    }
    uint64_t c = h->v[4] >> 51;
    h->v[4] &= MASK51;
    return c;
}

/* One carry pass: limbs 1..4 end below 2^51, limb 0 below 2^51 + 19 * 2^13 (inputs < 2^64).
 * Not inlined: the callers stay small enough to be inlined into the ladder (the code gcc
 * made of the unrolled form). */
static __attribute__((noinline)) void fe25519_carry(fe25519 *h)
{
    h->v[0] += 19 * fe25519_carry_out(h); /* 2^255 = 19 mod p */
}

/* The canonical 32 bytes of h (value < p). */
static void mb8__fe25519_tobytes_ref(uint8_t s[32], const fe25519 *in)
{
    fe25519 h = *in;
    fe25519_carry(&h);
    /* Now h < 2^255 + 2^18 < 2p, so h mod p = h - q p with q = floor((h + 19) / 2^255) in
     * {0, 1}; q is computed by propagating the carries of h + 19 (exact for any limbs). */
    uint64_t q = (h.v[0] + 19) >> 51;
    q = (h.v[1] + q) >> 51;
    q = (h.v[2] + q) >> 51;
    q = (h.v[3] + q) >> 51;
    q = (h.v[4] + q) >> 51;
    /* h - q p = h + 19 q - q 2^255: add 19 q, carry, and drop bit 255. */
    h.v[0] += 19 * q;
    (void)fe25519_carry_out(&h);
    mb8__x25519_store64_le(s, h.v[0] | (h.v[1] << 51));
    mb8__x25519_store64_le(s + 8, (h.v[1] >> 13) | (h.v[2] << 38));
    mb8__x25519_store64_le(s + 16, (h.v[2] >> 26) | (h.v[3] << 25));
    mb8__x25519_store64_le(s + 24, (h.v[3] >> 39) | (h.v[4] << 12));
    mb8__x25519_wipe(&h, sizeof h);
}

static void mb8__fe25519_add_ref(fe25519 *h, const fe25519 *f, const fe25519 *g)
{
    for (int i = 0; i < 5; i++)
        h->v[i] = f->v[i] + g->v[i];
    fe25519_carry(h);
}

/* h = f - g + 4p, so no limb underflows while every g limb is below 2^53. */
static void mb8__fe25519_sub_ref(fe25519 *h, const fe25519 *f, const fe25519 *g)
{
    h->v[0] = (f->v[0] + 0x1FFFFFFFFFFFB4) - g->v[0]; /* 4 (2^51 - 19) */
    for (int i = 1; i < 5; i++)
        h->v[i] = (f->v[i] + 0x1FFFFFFFFFFFFC) - g->v[i]; /* 4 (2^51 - 1) */
    fe25519_carry(h);
}

static void fe25519_reduce128(fe25519 *h, unsigned __int128 r0, unsigned __int128 r1,
                              unsigned __int128 r2, unsigned __int128 r3, unsigned __int128 r4)
{
    uint64_t c;
    r1 += (uint64_t)(r0 >> 51);
    h->v[0] = (uint64_t)r0 & MASK51;
    r2 += (uint64_t)(r1 >> 51);
    h->v[1] = (uint64_t)r1 & MASK51;
    r3 += (uint64_t)(r2 >> 51);
    h->v[2] = (uint64_t)r2 & MASK51;
    r4 += (uint64_t)(r3 >> 51);
    h->v[3] = (uint64_t)r3 & MASK51;
    c = (uint64_t)(r4 >> 51);
    h->v[4] = (uint64_t)r4 & MASK51;
    /* c < 2^64 / 19 here (r4 < 2^116), so 19 c fits after the top carry folds down. */
    unsigned __int128 t = (unsigned __int128)c * 19 + h->v[0];
    h->v[0] = (uint64_t)t & MASK51;
    h->v[1] += (uint64_t)(t >> 51);
}

static void mb8__fe25519_mul_ref(fe25519 *h, const fe25519 *f, const fe25519 *g)
{
    const uint64_t f0 = f->v[0], f1 = f->v[1], f2 = f->v[2], f3 = f->v[3], f4 = f->v[4];
    const uint64_t g0 = g->v[0], g1 = g->v[1], g2 = g->v[2], g3 = g->v[3], g4 = g->v[4];
    const uint64_t g1_19 = 19 * g1, g2_19 = 19 * g2, g3_19 = 19 * g3, g4_19 = 19 * g4;
    typedef unsigned __int128 u128;
    u128 r0 =
        (u128)f0 * g0 + (u128)f1 * g4_19 + (u128)f2 * g3_19 + (u128)f3 * g2_19 + (u128)f4 * g1_19;
    u128 r1 =
        (u128)f0 * g1 + (u128)f1 * g0 + (u128)f2 * g4_19 + (u128)f3 * g3_19 + (u128)f4 * g2_19;
    u128 r2 = (u128)f0 * g2 + (u128)f1 * g1 + (u128)f2 * g0 + (u128)f3 * g4_19 + (u128)f4 * g3_19;
    u128 r3 = (u128)f0 * g3 + (u128)f1 * g2 + (u128)f2 * g1 + (u128)f3 * g0 + (u128)f4 * g4_19;
    u128 r4 = (u128)f0 * g4 + (u128)f1 * g3 + (u128)f2 * g2 + (u128)f3 * g1 + (u128)f4 * g0;
    fe25519_reduce128(h, r0, r1, r2, r3, r4);
}

static void mb8__fe25519_sqr_ref(fe25519 *h, const fe25519 *f)
{
    const uint64_t f0 = f->v[0], f1 = f->v[1], f2 = f->v[2], f3 = f->v[3], f4 = f->v[4];
    const uint64_t f0_2 = 2 * f0, f1_2 = 2 * f1, f3_19 = 19 * f3, f4_19 = 19 * f4;
    typedef unsigned __int128 u128;
    u128 r0 = (u128)f0 * f0 + (u128)f1_2 * f4_19 + (u128)(2 * f2) * f3_19;
    u128 r1 = (u128)f0_2 * f1 + (u128)(2 * f2) * f4_19 + (u128)f3 * f3_19;
    u128 r2 = (u128)f0_2 * f2 + (u128)f1 * f1 + (u128)(2 * f3) * f4_19;
    u128 r3 = (u128)f0_2 * f3 + (u128)f1_2 * f2 + (u128)f4 * f4_19;
    u128 r4 = (u128)f0_2 * f4 + (u128)f1_2 * f3 + (u128)f2 * f2;
    fe25519_reduce128(h, r0, r1, r2, r3, r4);
}

/* h = f^(2^n) for n >= 1. */
static void mb8__fe25519_sqrn_ref(fe25519 *h, const fe25519 *f, int n)
{
    mb8__fe25519_sqr_ref(h, f);
    for (int i = 1; i < n; i++)
        mb8__fe25519_sqr_ref(h, h);
}

/* h = f * 121665, a24 = (486662 - 2) / 4 of RFC 7748 §5. */
static void mb8__fe25519_mul_a24_ref(fe25519 *h, const fe25519 *f)
{
    typedef unsigned __int128 u128;
    fe25519_reduce128(h, (u128)f->v[0] * 121665, (u128)f->v[1] * 121665, (u128)f->v[2] * 121665,
                      (u128)f->v[3] * 121665, (u128)f->v[4] * 121665);
}

/* h = z^(p - 2) = z^(2^255 - 21) (Fermat; 0 maps to 0). A fixed chain of 254 squarings
 * and 11 multiplications (the one of curve25519-donna / ref10). */
static void mb8__fe25519_invert_ref(fe25519 *h, const fe25519 *z)
{
    MB8__X25519_INVERT(fe25519, mb8__fe25519_sqr_ref, mb8__fe25519_sqrn_ref, mb8__fe25519_mul_ref,
                       mb8__x25519_wipe, h, z);
}

/* Swaps f and g when swap == 1, leaves them when swap == 0, without a branch (RFC 7748 §5
 * cswap: "mask = 0 - swap; dummy = mask AND (x_2 XOR x_3); ..."). */
static void mb8__fe25519_cswap_ref(fe25519 *f, fe25519 *g, uint64_t swap)
{
    const uint64_t mask = value_barrier(0 - swap);
    for (int i = 0; i < 5; i++) {
        uint64_t d = mask & (f->v[i] ^ g->v[i]);
        f->v[i] ^= d;
        g->v[i] ^= d;
    }
}

/* out = X25519(k, u) for one lane: RFC 7748 §5, step for step. */
static void x25519_one(uint8_t out[32], const uint8_t k_raw[32], const uint8_t u[32])
{
    struct { /* the secrets, wiped together at the end */
        uint8_t k[32];
        fe25519 x1, x2, z2, x3, z3, a, aa, b, bb, e, c, d, da, cb;
        uint64_t swap;
    } s;

    s.swap = 0;
    /* decodeScalar25519 */
    memcpy(s.k, k_raw, 32);
    s.k[0] &= 248;
    s.k[31] &= 127;
    s.k[31] |= 64;

    mb8__fe25519_frombytes_ref(&s.x1, u);
    memset(&s.x2, 0, sizeof s.x2);
    s.x2.v[0] = 1;
    memset(&s.z2, 0, sizeof s.z2);
    s.x3 = s.x1;
    s.z3 = s.x2;

    for (int t = 254; t >= 0; t--) {
        /* t is public: the byte index and shift depend only on the loop counter. */
        uint64_t k_t = (uint64_t)(s.k[t >> 3] >> (t & 7)) & 1;
        s.swap ^= k_t;
        mb8__fe25519_cswap_ref(&s.x2, &s.x3, s.swap);
        mb8__fe25519_cswap_ref(&s.z2, &s.z3, s.swap);
        s.swap = k_t;

        mb8__fe25519_add_ref(&s.a, &s.x2, &s.z2);  /* A = x_2 + z_2 */
        mb8__fe25519_sqr_ref(&s.aa, &s.a);         /* AA = A^2 */
        mb8__fe25519_sub_ref(&s.b, &s.x2, &s.z2);  /* B = x_2 - z_2 */
        mb8__fe25519_sqr_ref(&s.bb, &s.b);         /* BB = B^2 */
        mb8__fe25519_sub_ref(&s.e, &s.aa, &s.bb);  /* E = AA - BB */
        mb8__fe25519_add_ref(&s.c, &s.x3, &s.z3);  /* C = x_3 + z_3 */
        mb8__fe25519_sub_ref(&s.d, &s.x3, &s.z3);  /* D = x_3 - z_3 */
        mb8__fe25519_mul_ref(&s.da, &s.d, &s.a);   /* DA = D * A */
        mb8__fe25519_mul_ref(&s.cb, &s.c, &s.b);   /* CB = C * B */
        mb8__fe25519_add_ref(&s.x3, &s.da, &s.cb); /* x_3 = (DA + CB)^2 */
        mb8__fe25519_sqr_ref(&s.x3, &s.x3);
        mb8__fe25519_sub_ref(&s.z3, &s.da, &s.cb); /* z_3 = x_1 * (DA - CB)^2 */
        mb8__fe25519_sqr_ref(&s.z3, &s.z3);
        mb8__fe25519_mul_ref(&s.z3, &s.z3, &s.x1);
        mb8__fe25519_mul_ref(&s.x2, &s.aa, &s.bb); /* x_2 = AA * BB */
        mb8__fe25519_mul_a24_ref(&s.z2, &s.e);     /* z_2 = E * (AA + a24 * E) */
        mb8__fe25519_add_ref(&s.z2, &s.z2, &s.aa);
        mb8__fe25519_mul_ref(&s.z2, &s.z2, &s.e);
    }
    mb8__fe25519_cswap_ref(&s.x2, &s.x3, s.swap);
    mb8__fe25519_cswap_ref(&s.z2, &s.z3, s.swap);

    /* Return x_2 * (z_2^(p - 2)); z_2 = 0 (small-order input) gives 0. */
    mb8__fe25519_invert_ref(&s.z2, &s.z2);
    mb8__fe25519_mul_ref(&s.x2, &s.x2, &s.z2);
    mb8__fe25519_tobytes_ref(out, &s.x2);

    mb8__x25519_wipe(&s, sizeof s);
}

void mb8__x25519_ladder51_ref(uint8_t out[MB8_LANES][MB8_X25519_BYTES],
                              const uint8_t k[MB8_LANES][MB8_X25519_BYTES],
                              const uint8_t u[MB8_LANES][MB8_X25519_BYTES], unsigned lane_mask)
{
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (lane_mask & (1u << i)) /* public: which lanes are used */
            x25519_one(out[i], k[i], u[i]);
    }
}
