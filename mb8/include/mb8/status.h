/*
 * mb8: multi-buffer crypto, 8 independent operations ("lanes") per call.
 *
 * Conventions of every mb8 entry point (docs/architecture.md, CONVENTIONS.md):
 * - MB8_LANES lanes; arrays of per-lane pointers carry the lane count in their type
 *   (`const uint8_t *const in[MB8_LANES]`). A lane whose input pointer is NULL is unused:
 *   it is not read, its output is not written, and its status is MB8_STATUS_UNUSED.
 * - Outputs first, then inputs, then keys, then caller-provided scratch. mb8 never
 *   allocates, never calls an RNG, never does I/O, and uses no OpenSSL type.
 * - The result is an mb8_status_t: 4 bits per lane (lane i in bits 4i..4i+3). A lane's
 *   failure fails only that lane. Status words are built from masks at the API boundary;
 *   kernels do not branch on secret data.
 * - Large tables live in caller-provided scratch (size from the function family's
 *   *_scratch_size()), never on the stack; secrets in scratch are wiped before return.
 *   A NULL or misaligned scratch makes every used lane MB8_STATUS_BAD_INPUT, on every CPU.
 *   One scratch serves one call at a time (give each thread its own).
 */
#ifndef MB8_STATUS_H
#define MB8_STATUS_H

#include <stdint.h>

#define MB8_LANES 8

/**
 * Alignment in bytes of the caller-provided scratch of the elliptic-curve entry points
 * (mb8_x25519_scratch_size, mb8_p256_scratch_size): one zmm register. Allocate it with
 * aligned_alloc(MB8_SCRATCH_ALIGN, size) or OPENSSL_aligned_alloc, or declare it
 * `alignas(MB8_SCRATCH_ALIGN)`.
 */
#define MB8_SCRATCH_ALIGN 64

/** Per-lane status codes (4 bits each). */
enum mb8_lane_status {
    MB8_STATUS_OK = 0x0,          /* the lane's output is valid */
    MB8_STATUS_UNUSED = 0x1,      /* no input given: the lane was not computed */
    MB8_STATUS_BAD_INPUT = 0x2,   /* input out of range (e.g. >= modulus, point not on curve) */
    MB8_STATUS_VERIFY_FAIL = 0x3, /* the fault check rejected the result: output withheld */
    MB8_STATUS_BAD_KEY = 0x4,     /* key of another size than the other lanes, or invalid */
    MB8_STATUS_ZERO_RESULT = 0x5, /* e.g. X25519 all-zero shared secret (RFC 7748 §6.1) */
};

/** 4 bits per lane: lane i's status is (s >> 4i) & 0xF. */
typedef uint32_t mb8_status_t;

/** The status of lane; lane must be below MB8_LANES (larger shifts are undefined). */
static inline unsigned mb8_status_lane(mb8_status_t s, unsigned lane)
{
    return (unsigned)(s >> (4u * lane)) & 0xFu;
}

/** s with lane's status replaced by v (4 bits); lane must be below MB8_LANES. */
static inline mb8_status_t mb8_status_with(mb8_status_t s, unsigned lane, unsigned v)
{
    return (s & ~((mb8_status_t)0xFu << (4u * lane))) | ((mb8_status_t)(v & 0xFu) << (4u * lane));
}

/** 1 when every lane that was used is MB8_STATUS_OK. */
static inline int mb8_status_all_ok(mb8_status_t s)
{
    for (unsigned i = 0; i < MB8_LANES; i++) {
        unsigned v = mb8_status_lane(s, i);
        if (v != MB8_STATUS_OK && v != MB8_STATUS_UNUSED)
            return 0;
    }
    return 1;
}

#endif
