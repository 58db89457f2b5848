/*
 * Signed (Booth) recoding of scalars for the P-256 and P-384 IFMA kernels
 * (common/ec_ifma_impl.h): 5-bit windows for ECDH, 7-bit for the fixed-base combs, as
 * ecp_nistz256's booth_recode_w5 / _w7.
 */
#ifndef MB8_COMMON_BOOTH_H
#define MB8_COMMON_BOOTH_H

#include <stddef.h>
#include <stdint.h>

#include "ct.h"
#include "mb8/status.h"

/*
 * For each of the 8 lanes, the signed digit of window w (w = 0..nwin-1) of width c bits
 * (c = 5 for ECDH's windows, 7 for the combs) of the scalar k + i * nb (nb big-endian
 * bytes, nb <= 64) comes from the c + 1 bits v = k bits c w + c - 1 .. c w - 1 (bit -1 = 0,
 * bits above 8 nb - 1 = 0): d = floor((v + 1) / 2) for v < 2^c, floor((v + 1) / 2) - 2^c
 * otherwise, so |d| <= 2^(c-1) and k = sum d_w 2^(c w) when c nwin is past the scalar's top
 * bit (the top digit is then never negative; P-256: 37 windows of 7 bits, 52 of 5; P-384:
 * 55 of 7, 77 of 5). Writes mag[w][i] = |d| and neg[w][i] = all-ones when v >= 2^c (d < 0,
 * or d = 0 for v = 2^(c+1) - 1), for w < nwin. Lanes outside lane_mask (public) recode
 * zero. The (c + 1)-bit group is read at a public position; the digit arithmetic is
 * branch-free.
 */
static inline void mb8__booth(uint64_t (*mag)[MB8_LANES], uint64_t (*neg)[MB8_LANES], int nwin,
                              int c, const uint8_t *k, size_t nb, unsigned lane_mask)
{
    const uint64_t all = (2u << c) - 1; /* the c + 1 bits of a group */
    for (unsigned i = 0; i < MB8_LANES; i++) {
        uint8_t le[64 + 2];
        for (size_t j = 0; j < nb; j++)
            le[j] = (lane_mask >> i) & 1 ? k[i * nb + nb - 1 - j] : 0; /* lane use is public */
        le[nb] = le[nb + 1] = 0;
        for (int w = 0; w < nwin; w++) {
            int bit = c * w - 1; /* lowest bit of the group */
            uint64_t v;
            if (bit < 0) { /* public position */
                v = ((uint64_t)le[0] << 1) & all;
            } else {
                uint64_t two = (uint64_t)le[bit >> 3] | ((uint64_t)le[(bit >> 3) + 1] << 8);
                v = (two >> (bit & 7)) & all;
            }
            /* s = all-ones when v >= 2^c */
            uint64_t s = mb8__value_barrier(0 - (v >> c));
            uint64_t d = (all - v) & s; /* all - v for negative digits */
            d = d | (v & ~s);           /* folded: 0..2^c - 1 */
            d = (d >> 1) + (d & 1);     /* ceil(d / 2) */
            mag[w][i] = d;
            neg[w][i] = s;
        }
        mb8__wipe(le, sizeof le);
    }
}

#endif
