/*
 * The P-384 kernels behind mb8/p384.h (internal to mb8). Each kernel handles the lanes
 * whose bit is set in lane_mask and returns the status word of those lanes (the other
 * lanes' nibbles are 0): MB8_STATUS_OK, MB8_STATUS_BAD_INPUT or MB8_STATUS_ZERO_RESULT,
 * built by mask arithmetic from the range and curve checks. Outputs of lanes whose status
 * is not OK are written with zero bytes. Lanes outside lane_mask are not read or written.
 * The arrays are the dispatcher's own scratch, so they never alias. Timing depends only
 * on lane_mask. Kernels wipe their own secret temporaries; the caller wipes its arrays.
 *
 * Byte strings are big-endian (SEC 1 §2.3.5-2.3.7): scalars, digests and coordinates are
 * 48 bytes, points 97 bytes (0x04 || X || Y, SEC 1 §2.3.3 uncompressed).
 */
#ifndef MB8_P384_INTERNAL_H
#define MB8_P384_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "mb8/p384.h"

/** Portable reference: out[i] = x(priv[i] * peer[i]) (SEC 1 §3.3.1). */
mb8_status_t mb8__p384_ecdh_ref(uint8_t out[MB8_LANES][MB8_P384_SCALAR_BYTES],
                                const uint8_t priv[MB8_LANES][MB8_P384_SCALAR_BYTES],
                                const uint8_t peer[MB8_LANES][MB8_P384_POINT_BYTES],
                                unsigned lane_mask);

/** Portable reference: out[i] = priv[i] * G, uncompressed. */
mb8_status_t mb8__p384_public_key_ref(uint8_t out[MB8_LANES][MB8_P384_POINT_BYTES],
                                      const uint8_t priv[MB8_LANES][MB8_P384_SCALAR_BYTES],
                                      unsigned lane_mask);

/** Portable reference: ECDSA (r[i], s[i]) of digest e[i] with key d[i] and nonce k[i]. */
mb8_status_t mb8__p384_ecdsa_sign_ref(uint8_t r[MB8_LANES][MB8_P384_SCALAR_BYTES],
                                      uint8_t s[MB8_LANES][MB8_P384_SCALAR_BYTES],
                                      const uint8_t e[MB8_LANES][MB8_P384_SCALAR_BYTES],
                                      const uint8_t d[MB8_LANES][MB8_P384_SCALAR_BYTES],
                                      const uint8_t k[MB8_LANES][MB8_P384_SCALAR_BYTES],
                                      unsigned lane_mask);

/* The AVX-512 IFMA kernels (p384_ifma.c): the same functions, 8 lanes at once, bit-identical
 * outputs and status words. Only to be called when mb8_cpu_has_ifma(). `ws` is the
 * caller's scratch (MB8__P384_WS_BYTES, 64-byte aligned): the kernels keep their tables
 * there (window table, recoded digits) and wipe them before returning. */
#define MB8__P384_WS_BYTES 49152
mb8_status_t mb8__p384_ecdh_ifma(uint8_t out[MB8_LANES][MB8_P384_SCALAR_BYTES],
                                 const uint8_t priv[MB8_LANES][MB8_P384_SCALAR_BYTES],
                                 const uint8_t peer[MB8_LANES][MB8_P384_POINT_BYTES],
                                 unsigned lane_mask, void *ws);
mb8_status_t mb8__p384_public_key_ifma(uint8_t out[MB8_LANES][MB8_P384_POINT_BYTES],
                                       const uint8_t priv[MB8_LANES][MB8_P384_SCALAR_BYTES],
                                       unsigned lane_mask, void *ws);
mb8_status_t mb8__p384_ecdsa_sign_ifma(uint8_t r[MB8_LANES][MB8_P384_SCALAR_BYTES],
                                       uint8_t s[MB8_LANES][MB8_P384_SCALAR_BYTES],
                                       const uint8_t e[MB8_LANES][MB8_P384_SCALAR_BYTES],
                                       const uint8_t d[MB8_LANES][MB8_P384_SCALAR_BYTES],
                                       const uint8_t k[MB8_LANES][MB8_P384_SCALAR_BYTES],
                                       unsigned lane_mask, void *ws);

/** Portable and IFMA: the nonce-only half of ECDSA signing (mb8_p384_ecdsa_sign_setup). */
mb8_status_t mb8__p384_ecdsa_setup_ref(uint8_t out[MB8_LANES][MB8_P384_SETUP_BYTES],
                                       const uint8_t k[MB8_LANES][MB8_P384_SCALAR_BYTES],
                                       unsigned lane_mask);
mb8_status_t mb8__p384_ecdsa_setup_ifma(uint8_t out[MB8_LANES][MB8_P384_SETUP_BYTES],
                                        const uint8_t k[MB8_LANES][MB8_P384_SCALAR_BYTES],
                                        unsigned lane_mask, void *ws);
/** Portable (a few multiplications mod n per lane): mb8_p384_ecdsa_sign_complete. */
mb8_status_t mb8__p384_ecdsa_complete_ref(uint8_t r[MB8_LANES][MB8_P384_SCALAR_BYTES],
                                          uint8_t s[MB8_LANES][MB8_P384_SCALAR_BYTES],
                                          const uint8_t e[MB8_LANES][MB8_P384_SCALAR_BYTES],
                                          const uint8_t d[MB8_LANES][MB8_P384_SCALAR_BYTES],
                                          const uint8_t setup[MB8_LANES][MB8_P384_SETUP_BYTES],
                                          unsigned lane_mask);

/**
 * One lane's conversions between 48 big-endian bytes and 8 limbs of 52 bits (least
 * significant first), shared by the kernels: from_bytes takes any 384-bit value; to_bytes
 * wants limbs < 2^52 and a value < 2^384. Constant time; temporaries wiped.
 */
void mb8__p384_from_bytes(uint64_t v[8], const uint8_t b[MB8_P384_SCALAR_BYTES]);
void mb8__p384_to_bytes(uint8_t b[MB8_P384_SCALAR_BYTES], const uint64_t v[8]);

/** Zeroes n bytes at p in a way the compiler may not elide (for secrets). */
void mb8__p384_wipe(void *p, size_t n);

#endif
