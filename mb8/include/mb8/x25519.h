/*
 * X25519 (RFC 7748) for 8 independent lanes.
 *
 * The OpenSSL provider calls these two entry points; which kernel runs behind them is
 * chosen at run time (mb8/cpu.h): the AVX-512 IFMA kernel (mb8/src/x25519/x25519_ifma.c:
 * 5 limbs of 52 bits, 8 lanes per zmm; its design is in that file's header) or the portable
 * reference (mb8/src/x25519/x25519_ref.c); both give bit-identical results (tests/diff).
 *
 * Scratch: both entry points take `scratch`, at least mb8_x25519_scratch_size() bytes
 * aligned to MB8_SCRATCH_ALIGN (64). The IFMA fixed-base kernel keeps its recoded scalar
 * digits there (8 KB); a call needs about 15 KB of stack, the ladder's temporaries (gcc
 * -fstack-usage). Wiped before return; one call at a time per scratch. NULL or
 * misaligned: every used lane is MB8_STATUS_BAD_INPUT (outputs not written), on every CPU.
 *
 * Lane conventions are those of mb8/status.h. All byte strings are 32 bytes, little-endian,
 * as in RFC 7748 §5. Every output buffer may alias its lane's inputs (results are computed
 * into internal buffers and copied out at the end). Nothing is allocated; secret
 * temporaries are wiped before return.
 *
 * The lane arrays themselves (out, scalar, point, priv, peer, digest, nonce) must not be
 * NULL; their entries may be, as each function says.
 */
#ifndef MB8_X25519_H
#define MB8_X25519_H

#include <stddef.h>
#include <stdint.h>

#include "mb8/status.h"

/** Bytes in an X25519 scalar, u-coordinate, public key and shared secret (RFC 7748 §5). */
#define MB8_X25519_BYTES 32

/** Bytes of scratch the X25519 entry points need (any kernel; a constant per build). */
size_t mb8_x25519_scratch_size(void);

/**
 * X25519(scalar, u) for each of the 8 lanes: the Montgomery ladder of RFC 7748 §5 on
 * Curve25519, i.e. the Diffie-Hellman shared secret of RFC 7748 §6.1 when scalar is our
 * private key and point the peer's public key.
 *
 * - scalar[i]: 32 bytes, little-endian. Decoded as RFC 7748 §5 decodeScalar25519 (clamped
 *   inside: bits 0-2 and 255 cleared, bit 254 set); the caller's bytes are not modified.
 *   NULL marks lane i unused: nothing of the lane is read or written and its status is
 *   MB8_STATUS_UNUSED.
 * - point[i]: 32 bytes, little-endian u-coordinate. As RFC 7748 §5 requires, the top bit
 *   (bit 255) is masked, and non-canonical values (u in [p, 2^255), p = 2^255 - 19) are
 *   accepted and reduced mod p. No point validation is done (none is needed: twist points
 *   and small-order points are valid inputs for X25519).
 * - out[i]: 32 bytes, the u-coordinate of the result in canonical form (< p).
 *
 * Per-lane status (mb8/status.h):
 * - MB8_STATUS_OK: out[i] holds X25519(scalar[i], point[i]).
 * - MB8_STATUS_ZERO_RESULT: the result is all-zero (point[i] is of small order, e.g. u = 0,
 *   1, p - 1 or an order-8 point, canonical or not). out[i] is written with 32 zero bytes.
 *   RFC 7748 §6.1 lets a party check for this; OpenSSL's derive fails on it, and so must
 *   the caller (the TLS key exchange must abort).
 * - MB8_STATUS_UNUSED: scalar[i] == NULL.
 * - MB8_STATUS_BAD_INPUT: scalar[i] != NULL but point[i] or out[i] is NULL, or scratch is
 *   unusable (a caller bug; out[i] is not written).
 *
 * Timing: the running time depends only on which lanes are used (the NULL pattern of
 * scalar, point and out), never on the scalar or point bytes. The all-zero check is a
 * constant-time OR over the output bytes; only its 1-bit result (which the status reports
 * anyway) turns into the status word, without branching.
 */
mb8_status_t mb8_x25519(uint8_t *const out[MB8_LANES], const uint8_t *const scalar[MB8_LANES],
                        const uint8_t *const point[MB8_LANES], void *scratch);

/**
 * X25519(scalar, 9) for each of the 8 lanes: the public key for a private key (key
 * generation, RFC 7748 §6.1; u = 9 is the base point of RFC 7748 §4.1).
 *
 * - scalar[i]: 32 bytes, little-endian, clamped inside as RFC 7748 §5 decodeScalar25519
 *   (the caller's bytes are not modified). NULL marks lane i unused (MB8_STATUS_UNUSED,
 *   nothing read or written).
 * - out[i]: 32 bytes, the canonical u-coordinate of the public key.
 *
 * Per-lane status: MB8_STATUS_OK, MB8_STATUS_UNUSED, or MB8_STATUS_BAD_INPUT when
 * scalar[i] != NULL but out[i] == NULL or scratch is unusable. The result is never zero (9 generates the
 * prime-order subgroup and the clamped scalar is not a multiple of its order).
 *
 * The reference kernel runs the same Montgomery ladder as mb8_x25519 with u = 9; the IFMA
 * kernel computes [k]B on the Edwards form with a fixed-base table of signed radix-16
 * digits, then u = (Z + Y) / (Z - Y). Timing: depends only on which lanes are
 * used, never on the scalar bytes.
 */
mb8_status_t mb8_x25519_public_key(uint8_t *const out[MB8_LANES],
                                   const uint8_t *const scalar[MB8_LANES], void *scratch);

#endif
