/* see keccak.h: Keccak-f[1600] (FIPS 202 §3) and the sponge construction (§4). */
#include "keccak.h"

#include <string.h>

#include "../common/ct.h"

/* see keccak.h */
const uint64_t mb8__keccak_rc[24] = {
    0x0000000000000001ULL, 0x0000000000008082ULL, 0x800000000000808AULL, 0x8000000080008000ULL,
    0x000000000000808BULL, 0x0000000080000001ULL, 0x8000000080008081ULL, 0x8000000000008009ULL,
    0x000000000000008AULL, 0x0000000000000088ULL, 0x0000000080008009ULL, 0x000000008000000AULL,
    0x000000008000808BULL, 0x800000000000008BULL, 0x8000000000008089ULL, 0x8000000000008003ULL,
    0x8000000000008002ULL, 0x8000000000000080ULL, 0x000000000000800AULL, 0x800000008000000AULL,
    0x8000000080008081ULL, 0x8000000000008080ULL, 0x0000000080000001ULL, 0x8000000080008008ULL,
};

/* The rotation offsets of the rho step (FIPS 202 §3.2.2, Table 2) are the constants of the
 * unrolled round below: lane x + 5y rotates by
 *   0, 1, 62, 28, 27, 36, 44, 6, 55, 20, 3, 10, 43, 25, 39, 41, 45, 15, 21, 8, 18, 2, 61, 56, 14. */

/* Unrolled (the steps of FIPS 202 §3.2 with every index a constant, so the 25 lanes live
 * in registers or fixed stack slots): six times the speed of the loop form with gcc -O2. */
void mb8__keccak_f1600(uint64_t s[25])
{
#define ROL(v, n) (((v) << (n)) | ((v) >> (64 - (n))))
    uint64_t a[25];
    uint64_t c0, c1, c2, c3, c4, d0, d1, d2, d3, d4;
    uint64_t b00, b01, b02, b03, b04, b05, b06, b07, b08, b09, b10, b11, b12, b13, b14, b15, b16,
        b17, b18, b19, b20, b21, b22, b23, b24;

    memcpy(a, s, sizeof a);
    for (unsigned ir = 0; ir < 24; ir++) {
        /* theta */
        c0 = a[0] ^ a[5] ^ a[10] ^ a[15] ^ a[20];
        c1 = a[1] ^ a[6] ^ a[11] ^ a[16] ^ a[21];
        c2 = a[2] ^ a[7] ^ a[12] ^ a[17] ^ a[22];
        c3 = a[3] ^ a[8] ^ a[13] ^ a[18] ^ a[23];
        c4 = a[4] ^ a[9] ^ a[14] ^ a[19] ^ a[24];
        d0 = c4 ^ ROL(c1, 1);
        d1 = c0 ^ ROL(c2, 1);
        d2 = c1 ^ ROL(c3, 1);
        d3 = c2 ^ ROL(c4, 1);
        d4 = c3 ^ ROL(c0, 1);
        /* rho and pi: lane (x, y) rotated by its offset moves to (y, 2x + 3y) */
        b00 = a[0] ^ d0;
        b10 = ROL(a[1] ^ d1, 1);
        b20 = ROL(a[2] ^ d2, 62);
        b05 = ROL(a[3] ^ d3, 28);
        b15 = ROL(a[4] ^ d4, 27);
        b16 = ROL(a[5] ^ d0, 36);
        b01 = ROL(a[6] ^ d1, 44);
        b11 = ROL(a[7] ^ d2, 6);
        b21 = ROL(a[8] ^ d3, 55);
        b06 = ROL(a[9] ^ d4, 20);
        b07 = ROL(a[10] ^ d0, 3);
        b17 = ROL(a[11] ^ d1, 10);
        b02 = ROL(a[12] ^ d2, 43);
        b12 = ROL(a[13] ^ d3, 25);
        b22 = ROL(a[14] ^ d4, 39);
        b23 = ROL(a[15] ^ d0, 41);
        b08 = ROL(a[16] ^ d1, 45);
        b18 = ROL(a[17] ^ d2, 15);
        b03 = ROL(a[18] ^ d3, 21);
        b13 = ROL(a[19] ^ d4, 8);
        b14 = ROL(a[20] ^ d0, 18);
        b24 = ROL(a[21] ^ d1, 2);
        b09 = ROL(a[22] ^ d2, 61);
        b19 = ROL(a[23] ^ d3, 56);
        b04 = ROL(a[24] ^ d4, 14);
        /* chi */
        a[0] = b00 ^ (~b01 & b02);
        a[1] = b01 ^ (~b02 & b03);
        a[2] = b02 ^ (~b03 & b04);
        a[3] = b03 ^ (~b04 & b00);
        a[4] = b04 ^ (~b00 & b01);
        a[5] = b05 ^ (~b06 & b07);
        a[6] = b06 ^ (~b07 & b08);
        a[7] = b07 ^ (~b08 & b09);
        a[8] = b08 ^ (~b09 & b05);
        a[9] = b09 ^ (~b05 & b06);
        a[10] = b10 ^ (~b11 & b12);
        a[11] = b11 ^ (~b12 & b13);
        a[12] = b12 ^ (~b13 & b14);
        a[13] = b13 ^ (~b14 & b10);
        a[14] = b14 ^ (~b10 & b11);
        a[15] = b15 ^ (~b16 & b17);
        a[16] = b16 ^ (~b17 & b18);
        a[17] = b17 ^ (~b18 & b19);
        a[18] = b18 ^ (~b19 & b15);
        a[19] = b19 ^ (~b15 & b16);
        a[20] = b20 ^ (~b21 & b22);
        a[21] = b21 ^ (~b22 & b23);
        a[22] = b22 ^ (~b23 & b24);
        a[23] = b23 ^ (~b24 & b20);
        a[24] = b24 ^ (~b20 & b21);
        /* iota */
        a[0] ^= mb8__keccak_rc[ir];
    }
    memcpy(s, a, sizeof a);
#undef ROL
}

void mb8__keccak_init(mb8__keccak_t *k, unsigned rate)
{
    memset(k->s, 0, sizeof k->s);
    k->rate = rate;
    k->pos = 0;
}

static inline void xor_byte(uint64_t s[25], unsigned i, uint8_t v)
{
    s[i / 8] ^= (uint64_t)v << (8 * (i % 8));
}

static inline uint64_t load64le(const uint8_t *p)
{
    uint64_t w = 0;
    for (unsigned j = 0; j < 8; j++)
        w |= (uint64_t)p[j] << (8 * j);
    return w;
}

void mb8__keccak_absorb(mb8__keccak_t *k, const uint8_t *in, size_t len)
{
    /* whole blocks from a block boundary: the rate is a multiple of 8 */
    while (k->pos == 0 && len >= k->rate) {
        for (unsigned i = 0; i < k->rate / 8; i++)
            k->s[i] ^= load64le(in + 8 * i);
        mb8__keccak_f1600(k->s);
        in += k->rate;
        len -= k->rate;
    }
    while (len > 0) {
        /* whole aligned words when possible (the common case: absorbing from pos 0) */
        if (k->pos % 8 == 0 && len >= 8 && k->pos + 8 <= k->rate) {
            k->s[k->pos / 8] ^= load64le(in);
            k->pos += 8;
            in += 8;
            len -= 8;
        } else {
            xor_byte(k->s, k->pos++, *in++);
            len--;
        }
        if (k->pos == k->rate) {
            mb8__keccak_f1600(k->s);
            k->pos = 0;
        }
    }
}

void mb8__keccak_finalize(mb8__keccak_t *k, unsigned ds)
{
    xor_byte(k->s, k->pos, (uint8_t)ds);
    xor_byte(k->s, k->rate - 1, 0x80);
    mb8__keccak_f1600(k->s);
    k->pos = 0;
}

void mb8__keccak_squeeze(mb8__keccak_t *k, uint8_t *out, size_t len)
{
    while (len > 0) {
        if (k->pos == k->rate) {
            mb8__keccak_f1600(k->s);
            k->pos = 0;
        }
        size_t n = k->rate - k->pos;
        if (n > len)
            n = len;
        for (size_t j = 0; j < n; j++, k->pos++)
            out[j] = (uint8_t)(k->s[k->pos / 8] >> (8 * (k->pos % 8)));
        out += n;
        len -= n;
    }
}

static void oneshot(uint8_t *out, size_t outlen, unsigned rate, unsigned ds, const uint8_t *a,
                    size_t alen, const uint8_t *b, size_t blen)
{
    mb8__keccak_t k;
    mb8__keccak_init(&k, rate);
    mb8__keccak_absorb(&k, a, alen);
    if (blen > 0)
        mb8__keccak_absorb(&k, b, blen);
    mb8__keccak_finalize(&k, ds);
    mb8__keccak_squeeze(&k, out, outlen);
    mb8__wipe(&k, sizeof k); /* the inputs may be secret (G of m, J of z) */
}

void mb8__sha3_256(uint8_t out[32], const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    oneshot(out, 32, MB8__SHA3_256_RATE, MB8__SHA3_DS, a, alen, b, blen);
}

void mb8__sha3_512(uint8_t out[64], const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    oneshot(out, 64, MB8__SHA3_512_RATE, MB8__SHA3_DS, a, alen, b, blen);
}

void mb8__shake256(uint8_t *out, size_t outlen, const uint8_t *a, size_t alen, const uint8_t *b,
                   size_t blen)
{
    oneshot(out, outlen, MB8__SHAKE256_RATE, MB8__SHAKE_DS, a, alen, b, blen);
}
