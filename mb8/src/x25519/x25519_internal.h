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

/** Zeroes n bytes at p in a way the compiler may not elide (for secrets). */
void mb8__x25519_wipe(void *p, size_t n);

#endif
