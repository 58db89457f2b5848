/*
 * The entry points of mb8's NIST prime curves, P-256 (mb8/p256.h) and P-384 (mb8/p384.h),
 * for 8 independent lanes: ECDH (SEC 1 v2 §3.3.1, as RFC 8422 §5.10 / RFC 5903 use it), key
 * generation and ECDSA signing (FIPS 186-4 §6.4, SEC 1 v2 §4.1.3). A curve's header gives
 * its sizes and declares its functions with MB8_EC_DECLARE(curve): mb8_p256_ecdh,
 * mb8_p384_ecdh, ... Each is documented here once, for a curve with scalars of NB bytes
 * (MB8_<CURVE>_SCALAR_BYTES: P-256 32, P-384 48) and points of NP = 2 NB + 1 bytes
 * (MB8_<CURVE>_POINT_BYTES: 65, 97); n is the order of its base point G, p its prime.
 *
 * The OpenSSL provider calls these entry points; which kernel runs behind them is chosen at
 * run time (mb8/cpu.h): the AVX-512 IFMA kernel (8 lanes transposed, limbs of 52 bits,
 * Montgomery arithmetic, a fixed-base comb with signed digits for kG) or the portable
 * reference (the same limbs one lane at a time, complete projective formulas, fixed 4-bit
 * windows). Both give bit-identical results (tests/diff).
 *
 * Lane conventions are those of mb8/status.h. Encodings are big-endian octet strings (SEC 1
 * §2.3): scalars, digests, coordinates and signature halves are NB bytes; points are the
 * NP-byte uncompressed form 0x04 || X || Y (SEC 1 §2.3.3, RFC 8422 §5.4.1). Every output
 * buffer may alias its lane's inputs (results are computed into internal buffers and copied
 * out at the end). Nothing is allocated; secret temporaries are wiped before return.
 *
 * Scratch: every entry point but mb8_<curve>_ecdsa_sign_complete takes `scratch`, at least
 * mb8_<curve>_scratch_size() bytes aligned to MB8_SCRATCH_ALIGN (64), where the IFMA
 * kernels keep their tables (the variable-base window table, the recoded scalar digits),
 * so that a call needs less stack (the curve's header gives both). It holds secrets while a
 * call runs and is wiped before return; one call at a time per scratch. NULL or
 * misaligned: every used lane is MB8_STATUS_BAD_INPUT (outputs not written), on every CPU,
 * though the portable kernels do not use it.
 *
 * Timing: the running time depends only on which lanes are used (the NULL pattern of the
 * pointer arrays), never on scalar, nonce, digest or point bytes; range and curve checks
 * are computed as masks and only their 1-bit results reach the status word.
 *
 * The lane arrays themselves (out, priv, peer, digest, nonce, setup) must not be NULL;
 * their entries may be, as each function says.
 *
 * mb8_<curve>_scratch_size(): bytes of scratch the curve's entry points need (any kernel;
 * a constant per build).
 *
 * mb8_<curve>_ecdh(out, priv, peer, scratch): out[i] = the x-coordinate of priv[i] *
 * peer[i] (SEC 1 §3.3.1, the "Z" shared secret; RFC 8422 §5.10 and RFC 5903 §9 use exactly
 * these NB bytes).
 * - priv[i]: NB bytes, big-endian scalar d, which must be in [1, n-1]. NULL marks lane i
 *   unused (MB8_STATUS_UNUSED; nothing of the lane read or written).
 * - peer[i]: NP bytes, 0x04 || X || Y. Fully validated (SEC 1 §3.2.2.1 for a prime-order
 *   curve): prefix 0x04, X < p, Y < p, Y^2 = X^3 - 3X + b. The point at infinity has no
 *   NP-byte encoding, and (0, 0) is not on the curve.
 * - out[i]: NB bytes, big-endian x-coordinate.
 * Per-lane status: MB8_STATUS_OK; MB8_STATUS_BAD_INPUT when priv[i] is 0 or >= n, when
 * peer[i] is not a valid point, or when peer[i] or out[i] is NULL, or scratch is unusable
 * (a NULL out, or any out with unusable scratch, is not written; otherwise out[i] gets NB
 * zero bytes); MB8_STATUS_ZERO_RESULT when the product is the point at infinity
 * (impossible for valid inputs on these prime-order curves, kept as a guard; out[i] gets
 * zeros); MB8_STATUS_UNUSED. A bad lane does not affect the others.
 *
 * mb8_<curve>_public_key(out, priv, scratch): key generation, out[i] = priv[i] * G,
 * uncompressed (SEC 1 §3.2.1 step 2; the caller draws d in [1, n-1] from its DRBG).
 * - priv[i]: NB bytes, big-endian, in [1, n-1]; NULL marks lane i unused.
 * - out[i]: NP bytes, 0x04 || X || Y.
 * Per-lane status: MB8_STATUS_OK; MB8_STATUS_BAD_INPUT when priv[i] is 0 or >= n (out[i]
 * gets NP zero bytes) or out[i] is NULL or scratch unusable (not written);
 * MB8_STATUS_UNUSED. The reference kernel runs the variable-base scalar multiplication on
 * G; the IFMA kernel a fixed-base comb (signed 7-bit digits, a precomputed table of
 * multiples of G: mb8/src/common/gen_comb_table.py).
 *
 * mb8_<curve>_ecdsa_sign(sig_r, sig_s, digest, priv, nonce, scratch): ECDSA signature
 * generation with a caller-supplied nonce (FIPS 186-4 §6.4, SEC 1 §4.1.3 steps 1-6):
 * r = x(kG) mod n, s = k^-1 (e + r d) mod n.
 * - digest[i]: NB bytes, the leftmost 8 NB bits of the hash as a big-endian integer e
 *   (FIPS 186-4 §6.4: SHA-256 for P-256, SHA-384 for P-384 give exactly this; shorter or
 *   longer hashes are the caller's to truncate or left-pad). e >= n is allowed (reduced
 *   mod n).
 * - priv[i]: NB bytes, big-endian d in [1, n-1].
 * - nonce[i]: NB bytes, big-endian k in [1, n-1], secret, fresh for every signature (the
 *   provider draws it from OpenSSL's DRBG, or RFC 6979). Reusing k reveals d.
 * - sig_r[i], sig_s[i]: NB bytes each, big-endian, in [1, n-1] (the caller DER-encodes).
 * NULL priv[i] marks lane i unused; NULL digest, nonce or output with a non-NULL priv, or
 * unusable scratch, is MB8_STATUS_BAD_INPUT (outputs not written).
 * Per-lane status: MB8_STATUS_OK; MB8_STATUS_BAD_INPUT when d or k is 0 or >= n, or when r
 * or s comes out 0 (the caller retries with a new k; probability ~2^-(8 NB - 1)); the
 * outputs then get zeros. MB8_STATUS_UNUSED.
 * Side channels: d is never multiplied by the public r directly: s is computed as
 * (k b)^-1 (b e + (b r) d) with the blinding factor b = k (secret, fresh per signature; a
 * separate random b would need an extra input). Inversions are Fermat (fixed exponent).
 * The same two halves are offered apart as mb8_<curve>_ecdsa_sign_setup (nonce only: r,
 * (k b)^-1, b) and mb8_<curve>_ecdsa_sign_complete.
 *
 * mb8_<curve>_ecdsa_sign_setup(setup, nonce, scratch): the nonce-only half of ECDSA
 * signing (FIPS 186-4 §6.4 steps 1-4 and the inversion), for computing ahead of time
 * (issue #7: idle-time precomputation): setup[i] = r || (k b)^-1 || b with r = x(kG) mod n
 * and the blinding factor b = k, as mb8_<curve>_ecdsa_sign uses them.
 * - nonce[i]: NB bytes, big-endian k in [1, n-1], secret, fresh; NULL marks lane i unused.
 * - setup[i]: MB8_<CURVE>_SETUP_BYTES (3 NB), SECRET (it reveals k): use it for one
 *   signature only, then wipe it.
 * Per-lane status: MB8_STATUS_OK; MB8_STATUS_BAD_INPUT when k is 0 or >= n, r comes out 0,
 * or setup[i] is NULL or scratch unusable (then setup[i] is not written; otherwise zeros);
 * MB8_STATUS_UNUSED. Runs on the kernel mb8_cpu_has_ifma() selects (the fixed-base comb on
 * IFMA).
 *
 * mb8_<curve>_ecdsa_sign_complete(sig_r, sig_s, digest, priv, setup): the completion,
 * s = (k b)^-1 (b e + (b r) d) mod n from a setup, with sig_r = r. The pair (sig_r, sig_s)
 * is the signature mb8_<curve>_ecdsa_sign gives for the same nonce, byte for byte. digest,
 * priv, sig_r, sig_s as in mb8_<curve>_ecdsa_sign; setup[i] from
 * mb8_<curve>_ecdsa_sign_setup. NULL priv[i] marks lane i unused.
 * Per-lane status: MB8_STATUS_OK; MB8_STATUS_BAD_INPUT when d is 0 or >= n, a setup value
 * is 0 or >= n (e.g. a failed setup's zeros), s comes out 0, or a pointer of a used lane
 * is NULL; the outputs then get zeros (NULL ones are not written). MB8_STATUS_UNUSED.
 * A few multiplications mod n per lane (portable code on every CPU, a few hundred bytes of
 * stack: no scratch); constant time in d, e and the setup.
 */
#ifndef MB8_EC_H
#define MB8_EC_H

#include <stddef.h>
#include <stdint.h>

#include "mb8/status.h"

#define MB8_EC_NAME_(curve, name) mb8_##curve##_##name

/** Declares mb8_<curve>_scratch_size, _ecdh, _public_key, _ecdsa_sign, _ecdsa_sign_setup
 * and _ecdsa_sign_complete (documented above) for the curve named (p256, p384). */
#define MB8_EC_DECLARE(curve)                                                                      \
    size_t MB8_EC_NAME_(curve, scratch_size)(void);                                                \
    mb8_status_t MB8_EC_NAME_(curve, ecdh)(uint8_t *const out[MB8_LANES],                          \
                                           const uint8_t *const priv[MB8_LANES],                   \
                                           const uint8_t *const peer[MB8_LANES], void *scratch);   \
    mb8_status_t MB8_EC_NAME_(curve, public_key)(                                                  \
        uint8_t *const out[MB8_LANES], const uint8_t *const priv[MB8_LANES], void *scratch);       \
    mb8_status_t MB8_EC_NAME_(curve, ecdsa_sign)(                                                  \
        uint8_t *const sig_r[MB8_LANES], uint8_t *const sig_s[MB8_LANES],                          \
        const uint8_t *const digest[MB8_LANES], const uint8_t *const priv[MB8_LANES],              \
        const uint8_t *const nonce[MB8_LANES], void *scratch);                                     \
    mb8_status_t MB8_EC_NAME_(curve, ecdsa_sign_setup)(                                            \
        uint8_t *const setup[MB8_LANES], const uint8_t *const nonce[MB8_LANES], void *scratch);    \
    mb8_status_t MB8_EC_NAME_(curve, ecdsa_sign_complete)(                                         \
        uint8_t *const sig_r[MB8_LANES], uint8_t *const sig_s[MB8_LANES],                          \
        const uint8_t *const digest[MB8_LANES], const uint8_t *const priv[MB8_LANES],              \
        const uint8_t *const setup[MB8_LANES])

#endif
