/*
 * NIST P-384 (secp384r1; FIPS 186-4 §D.1.2.4 / FIPS 186-5, SEC 2 §2.5.1) for 8
 * independent lanes: ECDH (SEC 1 v2 §3.3.1, as RFC 8422 §5.10 / RFC 5903 use it), key
 * generation and ECDSA signing (FIPS 186-4 §6.4, SEC 1 v2 §4.1.3).
 *
 * The OpenSSL provider calls these entry points; which kernel runs behind them is chosen at
 * run time (mb8/cpu.h): the AVX-512 IFMA kernel (mb8/src/p384/p384_ifma.c: 8 lanes
 * transposed, 8 limbs of 52 bits, Montgomery arithmetic with R = 2^416, whose reduction
 * mod p costs 8 IFMA a limb instead of 17 since -p^-1 = 2^32 + 1 mod 2^52 and p = 2^384 -
 * 2^128 - 2^96 + 2^32 - 1 has four limbs of all ones; a fixed-base comb with signed 5-bit
 * digits for kG) or the portable reference (mb8/src/p384/p384_ref.c: the same limbs one lane at a
 * time, complete projective formulas, fixed 4-bit windows). Both give bit-identical results (tests/diff).
 *
 * Lane conventions are those of mb8/status.h. Encodings are big-endian octet strings (SEC 1
 * §2.3): scalars, digests, coordinates and signature halves are 48 bytes; points are the
 * 97-byte uncompressed form 0x04 || X || Y (SEC 1 §2.3.3, RFC 8422 §5.4.1). Every output
 * buffer may alias its lane's inputs (results are computed into internal buffers and copied
 * out at the end). Nothing is allocated; secret temporaries are wiped before return.
 *
 * Scratch: every entry point but mb8_p384_ecdsa_sign_complete takes `scratch`, at least
 * mb8_p384_scratch_size() bytes aligned to MB8_SCRATCH_ALIGN (64), where the IFMA kernels
 * keep their tables (the variable-base window table, the recoded scalar digits; ~40 KB)
 * so that a call needs about 16 KB of stack (gcc -fstack-usage, the deepest chain). It holds
 * secrets while a call runs and is wiped before return; one call at a time per scratch.
 * NULL or misaligned: every used lane is MB8_STATUS_BAD_INPUT (outputs not written), on
 * every CPU, though the portable kernels do not use it.
 *
 * Timing: the running time depends only on which lanes are used (the NULL pattern of the
 * pointer arrays), never on scalar, nonce, digest or point bytes; range and curve checks
 * are computed as masks and only their 1-bit results reach the status word.
 *
 * The lane arrays themselves (out, scalar, point, priv, peer, digest, nonce) must not be
 * NULL; their entries may be, as each function says.
 */
#ifndef MB8_P384_H
#define MB8_P384_H

#include <stddef.h>
#include <stdint.h>

#include "mb8/status.h"

/** Bytes in a P-384 scalar, digest, coordinate, shared secret, r or s. */
#define MB8_P384_SCALAR_BYTES 48
/** Bytes in an uncompressed P-384 point: 0x04 || X || Y. */
#define MB8_P384_POINT_BYTES 97

/** Bytes of scratch the P-384 entry points need (any kernel; a constant per build). */
size_t mb8_p384_scratch_size(void);

/**
 * ECDH: out[i] = the x-coordinate of priv[i] * peer[i] (SEC 1 §3.3.1, the "Z" shared
 * secret; RFC 8422 §5.10 and RFC 5903 §9 use exactly these 48 bytes).
 *
 * - priv[i]: 48 bytes, big-endian scalar d, which must be in [1, n-1]. NULL marks lane i
 *   unused (MB8_STATUS_UNUSED; nothing of the lane read or written).
 * - peer[i]: 97 bytes, 0x04 || X || Y. Fully validated (SEC 1 §3.2.2.1 for a prime-order
 *   curve): prefix 0x04, X < p, Y < p, Y^2 = X^3 - 3X + b. The point at infinity has no
 *   97-byte encoding, and (0, 0) is not on the curve.
 * - out[i]: 48 bytes, big-endian x-coordinate.
 *
 * Per-lane status: MB8_STATUS_OK; MB8_STATUS_BAD_INPUT when priv[i] is 0 or >= n, when
 * peer[i] is not a valid point, or when peer[i] or out[i] is NULL, or scratch is unusable
 * (a NULL out, or any out with unusable scratch, is not written; otherwise out[i] gets 48
 * zero bytes); MB8_STATUS_ZERO_RESULT when the product is
 * the point at infinity (impossible for valid inputs on this prime-order curve, kept as a
 * guard; out[i] gets zeros); MB8_STATUS_UNUSED. A bad lane does not affect the others.
 */
mb8_status_t mb8_p384_ecdh(uint8_t *const out[MB8_LANES], const uint8_t *const priv[MB8_LANES],
                           const uint8_t *const peer[MB8_LANES], void *scratch);

/**
 * Key generation: out[i] = priv[i] * G, uncompressed (SEC 1 §3.2.1 step 2; the caller
 * draws d in [1, n-1] from its DRBG).
 *
 * - priv[i]: 48 bytes, big-endian, in [1, n-1]; NULL marks lane i unused.
 * - out[i]: 97 bytes, 0x04 || X || Y.
 *
 * Per-lane status: MB8_STATUS_OK; MB8_STATUS_BAD_INPUT when priv[i] is 0 or >= n (out[i]
 * gets 97 zero bytes) or out[i] is NULL or scratch unusable (not written);
 * MB8_STATUS_UNUSED.
 *
 * The reference kernel runs the variable-base scalar multiplication on G; the IFMA kernel
 * uses a fixed-base comb (77 signed 5-bit digits, a precomputed table of the multiples
 * 1..16 of 32^w G, mb8/src/common/gen_comb_table.py).
 */
mb8_status_t mb8_p384_public_key(uint8_t *const out[MB8_LANES],
                                 const uint8_t *const priv[MB8_LANES], void *scratch);

/**
 * ECDSA signature generation with a caller-supplied nonce (FIPS 186-4 §6.4, SEC 1 §4.1.3
 * steps 1-6): r = x(kG) mod n, s = k^-1 (e + r d) mod n.
 *
 * - digest[i]: 48 bytes, the leftmost 384 bits of the hash as a big-endian integer e
 *   (FIPS 186-4 §6.4: SHA-384 gives exactly this; shorter or longer hashes are the
 *   caller's to truncate or left-pad). e >= n is allowed (reduced mod n).
 * - priv[i]: 48 bytes, big-endian d in [1, n-1].
 * - nonce[i]: 48 bytes, big-endian k in [1, n-1], secret, fresh for every signature (the
 *   provider draws it from OpenSSL's DRBG, or RFC 6979). Reusing k reveals d.
 * - sig_r[i], sig_s[i]: 48 bytes each, big-endian, in [1, n-1] (the caller DER-encodes).
 * NULL priv[i] marks lane i unused; NULL digest, nonce or output with a non-NULL priv, or
 * unusable scratch, is MB8_STATUS_BAD_INPUT (outputs not written).
 *
 * Per-lane status: MB8_STATUS_OK; MB8_STATUS_BAD_INPUT when d or k is 0 or >= n, or when r
 * or s comes out 0 (the caller retries with a new k; probability ~2^-383); the outputs then
 * get zeros. MB8_STATUS_UNUSED.
 *
 * Side channels: d is never multiplied by the public r directly: s is computed as
 * (k b)^-1 (b e + (b r) d) with the blinding factor b = k (secret, fresh per signature; a
 * separate random b would need an extra input). Inversions are Fermat (fixed exponent).
 * The same two halves are offered apart as mb8_p384_ecdsa_sign_setup (nonce only: r,
 * (k b)^-1, b) and mb8_p384_ecdsa_sign_complete.
 */
mb8_status_t mb8_p384_ecdsa_sign(uint8_t *const sig_r[MB8_LANES], uint8_t *const sig_s[MB8_LANES],
                                 const uint8_t *const digest[MB8_LANES],
                                 const uint8_t *const priv[MB8_LANES],
                                 const uint8_t *const nonce[MB8_LANES], void *scratch);

/** Bytes of an ECDSA sign setup: r || (k b)^-1 || b, each 48 bytes big-endian mod n. */
#define MB8_P384_SETUP_BYTES 144

/**
 * The nonce-only half of ECDSA signing (FIPS 186-4 §6.4 steps 1-4 and the inversion), for
 * computing ahead of time (issue #7: idle-time precomputation): setup[i] = r || (k b)^-1 ||
 * b with r = x(kG) mod n and the blinding factor b = k, as mb8_p384_ecdsa_sign uses them.
 *
 * - nonce[i]: 48 bytes, big-endian k in [1, n-1], secret, fresh; NULL marks lane i unused.
 * - setup[i]: MB8_P384_SETUP_BYTES, SECRET (it reveals k): use it for one signature only,
 *   then wipe it.
 *
 * Per-lane status: MB8_STATUS_OK; MB8_STATUS_BAD_INPUT when k is 0 or >= n, r comes out 0,
 * or setup[i] is NULL or scratch unusable (then setup[i] is not written; otherwise zeros);
 * MB8_STATUS_UNUSED.
 * Runs on the kernel mb8_cpu_has_ifma() selects (the fixed-base comb on IFMA).
 */
mb8_status_t mb8_p384_ecdsa_sign_setup(uint8_t *const setup[MB8_LANES],
                                       const uint8_t *const nonce[MB8_LANES], void *scratch);

/**
 * The completion: s = (k b)^-1 (b e + (b r) d) mod n from a setup, with sig_r = r. The
 * pair (sig_r, sig_s) is the signature mb8_p384_ecdsa_sign gives for the same nonce,
 * byte for byte. digest, priv, sig_r, sig_s as in mb8_p384_ecdsa_sign; setup[i] from
 * mb8_p384_ecdsa_sign_setup. NULL priv[i] marks lane i unused.
 *
 * Per-lane status: MB8_STATUS_OK; MB8_STATUS_BAD_INPUT when d is 0 or >= n, a setup value
 * is 0 or >= n (e.g. a failed setup's zeros), s comes out 0, or a pointer of a used lane
 * is NULL; the outputs then get zeros (NULL ones are not written). MB8_STATUS_UNUSED.
 * A few multiplications mod n per lane (portable code on every CPU, a few hundred bytes of
 * stack: no scratch); constant time in d, e and the setup.
 */
mb8_status_t mb8_p384_ecdsa_sign_complete(uint8_t *const sig_r[MB8_LANES],
                                          uint8_t *const sig_s[MB8_LANES],
                                          const uint8_t *const digest[MB8_LANES],
                                          const uint8_t *const priv[MB8_LANES],
                                          const uint8_t *const setup[MB8_LANES]);

#endif
