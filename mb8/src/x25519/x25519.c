/* see mb8/x25519.h: the public entry points, lane bookkeeping and kernel dispatch. */
#include <string.h>

#include "mb8/cpu.h"
#include "x25519_internal.h"

typedef void (*x25519_kernel_fn)(uint8_t out[MB8_LANES][MB8_X25519_BYTES],
                                 const uint8_t k[MB8_LANES][MB8_X25519_BYTES],
                                 const uint8_t u[MB8_LANES][MB8_X25519_BYTES], unsigned lane_mask);

/* The kernel for this CPU: the IFMA ladder when mb8_cpu_has_ifma() (decided once per
 * process; MB8_FORCE_PORTABLE=1 forces the reference), else the portable reference. */
static x25519_kernel_fn x25519_kernel(void)
{
    if (mb8_cpu_has_ifma())
        return mb8__x25519_ladder52_ifma;
    return mb8__x25519_ladder51_ref;
}

size_t mb8_x25519_scratch_size(void)
{
    return MB8__X25519_WS_BYTES;
}

/* 1 when the 32 bytes at s are all zero, else 0: an OR over every byte, no early exit. */
static uint32_t is_zero32(const uint8_t s[MB8_X25519_BYTES])
{
    uint32_t acc = 0;
    for (int i = 0; i < MB8_X25519_BYTES; i++)
        acc |= s[i];
    return (acc - 1) >> 31; /* acc in 0..255: the top bit is set only when acc == 0 */
}

/* Shared body: point == NULL means u = 9 for every lane (key generation). */
static mb8_status_t x25519_lanes(uint8_t *const out[MB8_LANES],
                                 const uint8_t *const scalar[MB8_LANES],
                                 const uint8_t *const point[MB8_LANES], int check_zero,
                                 void *scratch)
{
    /* checked on every CPU, though only the IFMA fixed-base kernel uses it */
    const int sok = scratch != NULL && ((uintptr_t)scratch & (MB8_SCRATCH_ALIGN - 1)) == 0;
    uint8_t k[MB8_LANES][MB8_X25519_BYTES];
    uint8_t u[MB8_LANES][MB8_X25519_BYTES];
    uint8_t r[MB8_LANES][MB8_X25519_BYTES];
    mb8_status_t st = 0;
    unsigned lanes = 0;

    /* Lane use is public (which pointers are NULL): branching on it is fine. */
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (scalar[i] == NULL) {
            st = mb8_status_with(st, i, MB8_STATUS_UNUSED);
        } else if (out[i] == NULL || (point != NULL && point[i] == NULL) || !sok) {
            st = mb8_status_with(st, i, MB8_STATUS_BAD_INPUT);
        } else {
            lanes |= 1u << i;
            memcpy(k[i], scalar[i], MB8_X25519_BYTES);
            if (point != NULL) {
                memcpy(u[i], point[i], MB8_X25519_BYTES);
            } else {
                memset(u[i], 0, MB8_X25519_BYTES);
                u[i][0] = 9; /* the base point, RFC 7748 §4.1 */
            }
        }
    }
    if (lanes != 0) {
        /* key generation on IFMA: the fixed-base kernel (Edwards table), not the ladder */
        if (point == NULL && mb8_cpu_has_ifma())
            mb8__x25519_base_ifma(r, (const uint8_t(*)[MB8_X25519_BYTES])k, lanes, scratch);
        else
            x25519_kernel()(r, (const uint8_t(*)[MB8_X25519_BYTES])k,
                            (const uint8_t(*)[MB8_X25519_BYTES])u, lanes);
    }

    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (!(lanes & (1u << i)))
            continue;
        /* RFC 7748 §6.1: "check for the all-zero value and abort if so". The result
         * is 0 only for small-order points; the 1-bit answer becomes the status by mask
         * arithmetic, and a zero result's output is already the 32 zero bytes. */
        uint32_t zero = check_zero ? is_zero32(r[i]) : 0;
        st |= (mb8_status_t)((0u - zero) & MB8_STATUS_ZERO_RESULT) << (4u * i);
        memcpy(out[i], r[i], MB8_X25519_BYTES);
    }

    mb8__x25519_wipe(k, sizeof k);
    mb8__x25519_wipe(r, sizeof r);
    mb8__x25519_wipe(u, sizeof u);
    return st;
}

mb8_status_t mb8_x25519(uint8_t *const out[MB8_LANES], const uint8_t *const scalar[MB8_LANES],
                        const uint8_t *const point[MB8_LANES], void *scratch)
{
    return x25519_lanes(out, scalar, point, 1, scratch);
}

mb8_status_t mb8_x25519_public_key(uint8_t *const out[MB8_LANES],
                                   const uint8_t *const scalar[MB8_LANES], void *scratch)
{
    return x25519_lanes(out, scalar, NULL, 0, scratch);
}
