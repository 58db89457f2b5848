/*
 * The X25519 kernels behind mb8/x25519.h (internal to mb8). Each kernel computes, for every
 * lane i whose bit is set in lane_mask, out[i] = X25519(k[i], u[i]) (RFC 7748 §5): k[i]
 * is the raw scalar (the kernel clamps it), u[i] the raw u-coordinate (the kernel masks
 * bit 255 and accepts non-canonical values), out[i] the canonical result, possibly zero.
 * Lanes outside lane_mask are not read or written. The arrays are the dispatcher's own
 * scratch, so they never alias. Timing depends only on lane_mask. Kernels wipe their own
 * secret temporaries; the caller wipes k and out.
 */
#ifndef MB8_X25519_INTERNAL_H
#define MB8_X25519_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "mb8/x25519.h"

/** Portable reference: 5 limbs of 51 bits, unsigned __int128 products, one lane at a time. */
void mb8__x25519_ladder51_ref(uint8_t out[MB8_LANES][MB8_X25519_BYTES],
                              const uint8_t k[MB8_LANES][MB8_X25519_BYTES],
                              const uint8_t u[MB8_LANES][MB8_X25519_BYTES], unsigned lane_mask);

/**
 * AVX-512 IFMA kernel (x25519_ifma.c): 5 limbs of 52 bits, the 8 lanes in one ladder.
 * Call only when mb8_cpu_has_ifma().
 */
void mb8__x25519_ladder52_ifma(uint8_t out[MB8_LANES][MB8_X25519_BYTES],
                               const uint8_t k[MB8_LANES][MB8_X25519_BYTES],
                               const uint8_t u[MB8_LANES][MB8_X25519_BYTES], unsigned lane_mask);

/** Bytes of the IFMA kernels' workspace (the caller's scratch, 64-byte aligned). */
#define MB8__X25519_WS_BYTES 8192

/**
 * The IFMA kernel for u = 9 in every lane (key generation): out[i] = X25519(k[i], 9) for
 * the lanes in lane_mask, as [k]B on the Edwards form with a fixed-base table. Its signed
 * digits live in ws (MB8__X25519_WS_BYTES, 64-byte aligned), wiped before return. Call
 * only when mb8_cpu_has_ifma().
 */
void mb8__x25519_base_ifma(uint8_t out[MB8_LANES][MB8_X25519_BYTES],
                           const uint8_t k[MB8_LANES][MB8_X25519_BYTES], unsigned lane_mask,
                           void *ws);

/** The little-endian 64-bit word at b (8 bytes, any alignment). */
static inline uint64_t mb8__x25519_load64_le(const uint8_t *b)
{
    uint64_t r = 0;
    for (int i = 7; i >= 0; i--)
        r = (r << 8) | b[i];
    return r;
}

/** Writes x to b[0 .. 7], little-endian. */
static inline void mb8__x25519_store64_le(uint8_t *b, uint64_t x)
{
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(x >> (8 * i));
}

/**
 * The body of r = z^(p - 2) = z^(2^255 - 21) (Fermat; 0 maps to 0) for both kernels: the
 * fixed chain of curve25519-donna / ref10, 254 squarings and 11 multiplications. FE is the
 * kernel's field element type; SQR(r, a): r = a^2, SQRN(r, a, n): r = a^(2^n), MUL(r, a, b):
 * r = a b (pointers; r may alias a or b); WIPE(p, n) zeroes the temporaries (secrets).
 * After z^11 and z^(2^5 - 1), every step is v[dst] = v[src]^(2^n) * v[mul] (the table, in
 * slots of v named after their exponents; the loop is unrolled, the table folded away).
 */
#define MB8__X25519_INVERT(FE, SQR, SQRN, MUL, WIPE, r, z)                                         \
    do {                                                                                           \
        enum { Z2, Z9, Z11, Z2_5_0, Z2_10_0, Z2_20_0, Z2_50_0, Z2_100_0, T, NV };                  \
        static const struct {                                                                      \
            unsigned char src, n, mul, dst;                                                        \
        } steps[] = {                                                                              \
            {Z2_5_0, 5, Z2_5_0, Z2_10_0},     /* 2^10 - 1 */                                       \
            {Z2_10_0, 10, Z2_10_0, Z2_20_0},  /* 2^20 - 1 */                                       \
            {Z2_20_0, 20, Z2_20_0, T},        /* 2^40 - 1 */                                       \
            {T, 10, Z2_10_0, Z2_50_0},        /* 2^50 - 1 */                                       \
            {Z2_50_0, 50, Z2_50_0, Z2_100_0}, /* 2^100 - 1 */                                      \
            {Z2_100_0, 100, Z2_100_0, T},     /* 2^200 - 1 */                                      \
            {T, 50, Z2_50_0, T},              /* 2^250 - 1 */                                      \
        };                                                                                         \
        FE v[NV];                                                                                  \
        SQR(&v[Z2], z);                 /* 2 */                                                    \
        SQRN(&v[T], &v[Z2], 2);         /* 8 */                                                    \
        MUL(&v[Z9], &v[T], z);          /* 9 */                                                    \
        MUL(&v[Z11], &v[Z9], &v[Z2]);   /* 11 */                                                   \
        SQR(&v[T], &v[Z11]);            /* 22 */                                                   \
        MUL(&v[Z2_5_0], &v[T], &v[Z9]); /* 2^5 - 1 */                                              \
        _Pragma("GCC unroll 8") for (unsigned i_ = 0; i_ < sizeof steps / sizeof steps[0]; i_++)   \
        {                                                                                          \
            SQRN(&v[T], &v[steps[i_].src], steps[i_].n);                                           \
            MUL(&v[steps[i_].dst], &v[T], &v[steps[i_].mul]);                                      \
        }                                                                                          \
        SQRN(&v[T], &v[T], 5);  /* 2^255 - 2^5 */                                                  \
        MUL(r, &v[T], &v[Z11]); /* 2^255 - 21 */                                                   \
        WIPE(v, sizeof v);                                                                         \
    } while (0)

/** Zeroes n bytes at p in a way the compiler may not elide (for secrets). */
void mb8__x25519_wipe(void *p, size_t n);

#endif
