/*
 * NIST P-256 (secp256r1; FIPS 186-4 §D.1.2.3 / FIPS 186-5, SEC 2 §2.4.2) for 8 independent
 * lanes: ECDH, key generation and ECDSA signing, declared below by MB8_EC_DECLARE(p256):
 * mb8_p256_scratch_size, mb8_p256_ecdh, mb8_p256_public_key, mb8_p256_ecdsa_sign,
 * mb8_p256_ecdsa_sign_setup and mb8_p256_ecdsa_sign_complete, documented in mb8/ec.h (with
 * NB = 32, NP = 65).
 *
 * Kernels: the AVX-512 IFMA one (mb8/src/p256/p256_ifma.c with mb8/src/common/ec_ifma_*.h;
 * 5 limbs of 52 bits, Montgomery arithmetic with p = -1 mod 2^52; its fixed-base comb has
 * 37 signed 7-bit digits) and the portable reference (mb8/src/p256/p256_ref.c with
 * mb8/src/common/ec_ref_impl.h). The IFMA kernels keep ~22 KB of tables in the scratch, so
 * that a call needs about 15 KB of stack (gcc -fstack-usage, the deepest chain).
 */
#ifndef MB8_P256_H
#define MB8_P256_H

#include "mb8/ec.h"

/** Bytes in a P-256 scalar, digest, coordinate, shared secret, r or s. */
#define MB8_P256_SCALAR_BYTES 32
/** Bytes in an uncompressed P-256 point: 0x04 || X || Y. */
#define MB8_P256_POINT_BYTES 65
/** Bytes of an ECDSA sign setup: r || (k b)^-1 || b, each 32 bytes big-endian mod n. */
#define MB8_P256_SETUP_BYTES 96

MB8_EC_DECLARE(p256);

#endif
