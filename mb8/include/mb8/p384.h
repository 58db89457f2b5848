/*
 * NIST P-384 (secp384r1; FIPS 186-4 §D.1.2.4 / FIPS 186-5, SEC 2 §2.5.1) for 8 independent
 * lanes: ECDH, key generation and ECDSA signing, declared below by MB8_EC_DECLARE(p384):
 * mb8_p384_scratch_size, mb8_p384_ecdh, mb8_p384_public_key, mb8_p384_ecdsa_sign,
 * mb8_p384_ecdsa_sign_setup and mb8_p384_ecdsa_sign_complete, documented in mb8/ec.h (with
 * NB = 48, NP = 97).
 *
 * Kernels: the AVX-512 IFMA one (mb8/src/p384/p384_ifma.c with mb8/src/common/ec_ifma_*.h;
 * 8 limbs of 52 bits, Montgomery arithmetic with R = 2^416, whose reduction mod p costs 8
 * IFMA a limb instead of 17 since -p^-1 = 2^32 + 1 mod 2^52 and p = 2^384 - 2^128 - 2^96 +
 * 2^32 - 1 has four limbs of all ones; its fixed-base comb has 55 signed 7-bit digits) and
 * the portable reference (mb8/src/p384/p384_ref.c with mb8/src/common/ec_ref_impl.h). The
 * IFMA kernels keep ~40 KB of tables in the scratch, so that a call needs about 16 KB of
 * stack (gcc -fstack-usage, the deepest chain).
 */
#ifndef MB8_P384_H
#define MB8_P384_H

#include "mb8/ec.h"

/** Bytes in a P-384 scalar, digest, coordinate, shared secret, r or s. */
#define MB8_P384_SCALAR_BYTES 48
/** Bytes in an uncompressed P-384 point: 0x04 || X || Y. */
#define MB8_P384_POINT_BYTES 97
/** Bytes of an ECDSA sign setup: r || (k b)^-1 || b, each 48 bytes big-endian mod n. */
#define MB8_P384_SETUP_BYTES 144

MB8_EC_DECLARE(p384);

#endif
