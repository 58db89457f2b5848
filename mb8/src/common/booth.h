/*
 * Signed 7-bit (Booth) recoding of scalars for the fixed-base combs of the P-256 and P-384
 * IFMA kernels (p256_ifma.c, p384_ifma.c), as ecp_nistz256's booth_recode_w7.
 */
#ifndef MB8_COMMON_BOOTH_H
#define MB8_COMMON_BOOTH_H

#include <stddef.h>
#include <stdint.h>

#include "ct.h"
#include "mb8/status.h"

/*
 * For each of the 8 lanes, the signed digit of window w (w = 0..nwin-1) of the scalar
 * k + i * nb (nb big-endian bytes, nb <= 64) comes from the 8 bits v = k bits 7w + 6 .. 7w - 1
 * (bit -1 = 0, bits above 8 nb - 1 = 0): d = floor((v + 1) / 2) for v < 128,
 * floor((v + 1) / 2) - 128 otherwise, so |d| <= 64 and k = sum d_w 2^(7w) when 7 nwin is
 * past the scalar's top bit (P-256: 37 windows, 259 bits; P-384: 55, 385: the top digit is
 * never negative). Writes mag[w][i] = |d| and neg[w][i] = all-ones when v >= 128 (d < 0,
 * or d = 0 for v = 255), for w < nwin. Lanes outside lane_mask (public) recode zero.
 * The 8-bit group is read at a public position; the digit arithmetic is branch-free.
 */
static inline void mb8__booth7(uint64_t (*mag)[MB8_LANES], uint64_t (*neg)[MB8_LANES], int nwin,
                               const uint8_t *k, size_t nb, unsigned lane_mask)
{
    for (unsigned i = 0; i < MB8_LANES; i++) {
        uint8_t le[64 + 2];
        for (size_t j = 0; j < nb; j++)
            le[j] = (lane_mask >> i) & 1 ? k[i * nb + nb - 1 - j] : 0; /* lane use is public */
        le[nb] = le[nb + 1] = 0;
        for (int w = 0; w < nwin; w++) {
            int bit = 7 * w - 1; /* lowest bit of the 8-bit group */
            uint64_t v;
            if (bit < 0) { /* public position */
                v = ((uint64_t)le[0] << 1) & 0xFF;
            } else {
                uint64_t two = (uint64_t)le[bit >> 3] | ((uint64_t)le[(bit >> 3) + 1] << 8);
                v = (two >> (bit & 7)) & 0xFF;
            }
            /* s = all-ones when v >= 128 */
            uint64_t s = mb8__value_barrier(0 - (v >> 7));
            uint64_t d = (255 - v) & s; /* 255 - v for negative digits */
            d = d | (v & ~s);           /* 0..255 folded: 0..127 */
            d = (d >> 1) + (d & 1);     /* ceil(d / 2) */
            mag[w][i] = d;
            neg[w][i] = s;
        }
        mb8__wipe(le, sizeof le);
    }
}

#endif
