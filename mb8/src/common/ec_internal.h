/*
 * The kernels behind mb8/p256.h and mb8/p384.h (internal to mb8), declared once for both
 * curves. A curve's internal header (p256/p256_internal.h, p384/p384_internal.h) names the
 * curve and includes this file; the names come out as mb8__p256_ecdh_ref, mb8_p384_ecdh, ...
 *   MB8__EC            the curve in function names (p256)
 *   MB8__EC_UC         the curve in the public header's constants (P256: MB8_P256_POINT_BYTES)
 *   MB8__EC_WS_BYTES   the IFMA kernels' scratch
 * One curve per translation unit.
 *
 * Each kernel handles the lanes whose bit is set in lane_mask and returns the status word
 * of those lanes (the other lanes' nibbles are 0): MB8_STATUS_OK, MB8_STATUS_BAD_INPUT or
 * MB8_STATUS_ZERO_RESULT, built by mask arithmetic from the range and curve checks.
 * Outputs of lanes whose status is not OK are written with zero bytes. Lanes outside
 * lane_mask are not read or written. The arrays are the dispatcher's own scratch, so they
 * never alias. Timing depends only on lane_mask. Kernels wipe their own secret
 * temporaries; the caller wipes its arrays.
 *
 * Byte strings are big-endian (SEC 1 §2.3.5-2.3.7): scalars, digests and coordinates are
 * MB8__EC_NB bytes, points MB8__EC_NP bytes (0x04 || X || Y, SEC 1 §2.3.3 uncompressed).
 */
#ifdef MB8_COMMON_EC_INTERNAL_H
#error "one curve per translation unit: common/ec_internal.h is included twice"
#endif
#define MB8_COMMON_EC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "mb8/status.h"

#define MB8__EC_CAT3_(a, b, c) a##b##c
#define MB8__EC_CAT3(a, b, c) MB8__EC_CAT3_(a, b, c)
/** mb8__<curve>_name: the curve's internal functions. */
#define MB8__EC_FN(name) MB8__EC_CAT3(mb8__, MB8__EC, _##name)
/** mb8_<curve>_name: the curve's public entry points (mb8/p256.h, mb8/p384.h). */
#define MB8__EC_API(name) MB8__EC_CAT3(mb8_, MB8__EC, _##name)

#define MB8__EC_NB MB8__EC_CAT3(MB8_, MB8__EC_UC, _SCALAR_BYTES)
#define MB8__EC_NP MB8__EC_CAT3(MB8_, MB8__EC_UC, _POINT_BYTES)
#define MB8__EC_NSETUP MB8__EC_CAT3(MB8_, MB8__EC_UC, _SETUP_BYTES)
/** Limbs of 52 bits in a number mod p or n (P-256: 5, P-384: 8). */
#define MB8__EC_NL ((8 * MB8__EC_NB + 51) / 52)

/** Portable reference: out[i] = x(priv[i] * peer[i]) (SEC 1 §3.3.1). */
mb8_status_t MB8__EC_FN(ecdh_ref)(uint8_t out[MB8_LANES][MB8__EC_NB],
                                  const uint8_t priv[MB8_LANES][MB8__EC_NB],
                                  const uint8_t peer[MB8_LANES][MB8__EC_NP], unsigned lane_mask);

/** Portable reference: out[i] = priv[i] * G, uncompressed. */
mb8_status_t MB8__EC_FN(public_key_ref)(uint8_t out[MB8_LANES][MB8__EC_NP],
                                        const uint8_t priv[MB8_LANES][MB8__EC_NB],
                                        unsigned lane_mask);

/** Portable reference: ECDSA (r[i], s[i]) of digest e[i] with key d[i] and nonce k[i]. */
mb8_status_t MB8__EC_FN(ecdsa_sign_ref)(uint8_t r[MB8_LANES][MB8__EC_NB],
                                        uint8_t s[MB8_LANES][MB8__EC_NB],
                                        const uint8_t e[MB8_LANES][MB8__EC_NB],
                                        const uint8_t d[MB8_LANES][MB8__EC_NB],
                                        const uint8_t k[MB8_LANES][MB8__EC_NB], unsigned lane_mask);

/* The AVX-512 IFMA kernels (p256_ifma.c, p384_ifma.c): the same functions, 8 lanes at once,
 * bit-identical outputs and status words. Only to be called when mb8_cpu_has_ifma(). `ws`
 * is the caller's scratch (MB8__EC_WS_BYTES, 64-byte aligned): the kernels keep their
 * tables there (window table, recoded digits) and wipe them before returning. */
mb8_status_t MB8__EC_FN(ecdh_ifma)(uint8_t out[MB8_LANES][MB8__EC_NB],
                                   const uint8_t priv[MB8_LANES][MB8__EC_NB],
                                   const uint8_t peer[MB8_LANES][MB8__EC_NP], unsigned lane_mask,
                                   void *ws);
mb8_status_t MB8__EC_FN(public_key_ifma)(uint8_t out[MB8_LANES][MB8__EC_NP],
                                         const uint8_t priv[MB8_LANES][MB8__EC_NB],
                                         unsigned lane_mask, void *ws);
mb8_status_t MB8__EC_FN(ecdsa_sign_ifma)(uint8_t r[MB8_LANES][MB8__EC_NB],
                                         uint8_t s[MB8_LANES][MB8__EC_NB],
                                         const uint8_t e[MB8_LANES][MB8__EC_NB],
                                         const uint8_t d[MB8_LANES][MB8__EC_NB],
                                         const uint8_t k[MB8_LANES][MB8__EC_NB], unsigned lane_mask,
                                         void *ws);

/** Portable and IFMA: the nonce-only half of ECDSA signing (mb8_<curve>_ecdsa_sign_setup). */
mb8_status_t MB8__EC_FN(ecdsa_setup_ref)(uint8_t out[MB8_LANES][MB8__EC_NSETUP],
                                         const uint8_t k[MB8_LANES][MB8__EC_NB],
                                         unsigned lane_mask);
mb8_status_t MB8__EC_FN(ecdsa_setup_ifma)(uint8_t out[MB8_LANES][MB8__EC_NSETUP],
                                          const uint8_t k[MB8_LANES][MB8__EC_NB],
                                          unsigned lane_mask, void *ws);
/** Portable (a few multiplications mod n per lane): mb8_<curve>_ecdsa_sign_complete. */
mb8_status_t MB8__EC_FN(ecdsa_complete_ref)(uint8_t r[MB8_LANES][MB8__EC_NB],
                                            uint8_t s[MB8_LANES][MB8__EC_NB],
                                            const uint8_t e[MB8_LANES][MB8__EC_NB],
                                            const uint8_t d[MB8_LANES][MB8__EC_NB],
                                            const uint8_t setup[MB8_LANES][MB8__EC_NSETUP],
                                            unsigned lane_mask);

/**
 * One lane's conversions between MB8__EC_NB big-endian bytes and MB8__EC_NL limbs of 52
 * bits (least significant first), shared by the kernels: from_bytes takes any value of
 * 8 MB8__EC_NB bits; to_bytes wants limbs < 2^52 and a value < 2^(8 MB8__EC_NB). Constant
 * time (byte and limb positions are public).
 */
void MB8__EC_FN(from_bytes)(uint64_t v[MB8__EC_NL], const uint8_t b[MB8__EC_NB]);
void MB8__EC_FN(to_bytes)(uint8_t b[MB8__EC_NB], const uint64_t v[MB8__EC_NL]);

/** A modulus for the reference kernels' Montgomery arithmetic with R = 2^(52 MB8__EC_NL)
 * (common/ec_ref_impl.h): the curve's p and n, defined in <curve>_ref.c. */
struct mb8__ec_mod {
    uint64_t m[MB8__EC_NL];        /* the modulus, 52-bit limbs, least significant first */
    uint64_t k0;                   /* -m^-1 mod 2^52 */
    uint64_t rr[MB8__EC_NL];       /* R^2 mod m */
    uint64_t one[MB8__EC_NL];      /* R mod m: 1 in Montgomery form */
    uint8_t m_minus_2[MB8__EC_NB]; /* Fermat exponent, big-endian */
};

/** Zeroes n bytes at p in a way the compiler may not elide (for secrets). */
void MB8__EC_FN(wipe)(void *p, size_t n);
