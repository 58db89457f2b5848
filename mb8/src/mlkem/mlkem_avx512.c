/*
 * ML-KEM-768 encapsulation for 8 lanes with AVX-512 (see mlkem_internal.h). What runs 8
 * lanes at once is the hashing, about half of an encapsulation's time in the portable
 * kernel: Keccak-f[1600] on 8 states, one zmm register per state word (lane i of the
 * register is lane i's word), so H(ek), G(m || H(ek)), the 7 PRF calls and the 9 SHAKE128
 * streams of the matrix take one 8-lane permutation where the portable kernel takes eight.
 * The polynomial arithmetic then runs per lane on the portable code
 * (mb8__mlkem768_encrypt_sampled), so the two kernels give the same bytes by construction
 * of everything after the hashing; tests/diff compares them.
 *
 * Every lane absorbs inputs of the same length in lock step; lanes outside lane_mask hash
 * a copy of a used lane's inputs and their outputs are dropped. The matrix's rejection
 * sampling squeezes extra SHAKE128 blocks for all 8 lanes while any lane needs one: its
 * timing depends on rho (public) only. Compiled for AVX-512F by target attribute; called
 * only when mb8_cpu_has_ifma() (whose CPUs all have AVX-512F/BW).
 */
#include <immintrin.h>
#include <stdalign.h>
#include <string.h>

#include "../common/ct.h"
#include "keccak.h"
#include "mlkem_internal.h"

#define AVX __attribute__((target("avx512f,avx512vl,avx512bw")))
#define K MB8__MLKEM_K

/* Round constants: keccak.c's (FIPS 202 §3.2.5). */
static const uint64_t rc8[24] = {
    0x0000000000000001ULL, 0x0000000000008082ULL, 0x800000000000808AULL, 0x8000000080008000ULL,
    0x000000000000808BULL, 0x0000000080000001ULL, 0x8000000080008081ULL, 0x8000000000008009ULL,
    0x000000000000008AULL, 0x0000000000000088ULL, 0x0000000080008009ULL, 0x000000008000000AULL,
    0x000000008000808BULL, 0x800000000000008BULL, 0x8000000000008089ULL, 0x8000000000008003ULL,
    0x8000000000008002ULL, 0x8000000000000080ULL, 0x000000000000800AULL, 0x800000008000000AULL,
    0x8000000080008081ULL, 0x8000000000008080ULL, 0x0000000080000001ULL, 0x8000000080008008ULL,
};

/* Keccak-p[1600, 24] on 8 states: keccak.c's unrolled round with zmm lanes; theta's
 * parities and chi by vpternlogq (0x96: a ^ b ^ c; 0xD2: a ^ (~b & c)). */
static AVX void keccak_x8(__m512i a[25])
{
    __m512i c0, c1, c2, c3, c4, d0, d1, d2, d3, d4;
    __m512i b00, b01, b02, b03, b04, b05, b06, b07, b08, b09, b10, b11, b12, b13, b14, b15, b16, b17, b18, b19, b20, b21, b22, b23, b24;

    for (unsigned ir = 0; ir < 24; ir++) {
        c0 = _mm512_ternarylogic_epi64(_mm512_ternarylogic_epi64(a[0], a[5], a[10], 0x96), a[15], a[20], 0x96);
        c1 = _mm512_ternarylogic_epi64(_mm512_ternarylogic_epi64(a[1], a[6], a[11], 0x96), a[16], a[21], 0x96);
        c2 = _mm512_ternarylogic_epi64(_mm512_ternarylogic_epi64(a[2], a[7], a[12], 0x96), a[17], a[22], 0x96);
        c3 = _mm512_ternarylogic_epi64(_mm512_ternarylogic_epi64(a[3], a[8], a[13], 0x96), a[18], a[23], 0x96);
        c4 = _mm512_ternarylogic_epi64(_mm512_ternarylogic_epi64(a[4], a[9], a[14], 0x96), a[19], a[24], 0x96);
        d0 = _mm512_xor_si512(c4, _mm512_rol_epi64(c1, 1));
        d1 = _mm512_xor_si512(c0, _mm512_rol_epi64(c2, 1));
        d2 = _mm512_xor_si512(c1, _mm512_rol_epi64(c3, 1));
        d3 = _mm512_xor_si512(c2, _mm512_rol_epi64(c4, 1));
        d4 = _mm512_xor_si512(c3, _mm512_rol_epi64(c0, 1));
        b00 = _mm512_xor_si512(a[0], d0);
        b10 = _mm512_rol_epi64(_mm512_xor_si512(a[1], d1), 1);
        b20 = _mm512_rol_epi64(_mm512_xor_si512(a[2], d2), 62);
        b05 = _mm512_rol_epi64(_mm512_xor_si512(a[3], d3), 28);
        b15 = _mm512_rol_epi64(_mm512_xor_si512(a[4], d4), 27);
        b16 = _mm512_rol_epi64(_mm512_xor_si512(a[5], d0), 36);
        b01 = _mm512_rol_epi64(_mm512_xor_si512(a[6], d1), 44);
        b11 = _mm512_rol_epi64(_mm512_xor_si512(a[7], d2), 6);
        b21 = _mm512_rol_epi64(_mm512_xor_si512(a[8], d3), 55);
        b06 = _mm512_rol_epi64(_mm512_xor_si512(a[9], d4), 20);
        b07 = _mm512_rol_epi64(_mm512_xor_si512(a[10], d0), 3);
        b17 = _mm512_rol_epi64(_mm512_xor_si512(a[11], d1), 10);
        b02 = _mm512_rol_epi64(_mm512_xor_si512(a[12], d2), 43);
        b12 = _mm512_rol_epi64(_mm512_xor_si512(a[13], d3), 25);
        b22 = _mm512_rol_epi64(_mm512_xor_si512(a[14], d4), 39);
        b23 = _mm512_rol_epi64(_mm512_xor_si512(a[15], d0), 41);
        b08 = _mm512_rol_epi64(_mm512_xor_si512(a[16], d1), 45);
        b18 = _mm512_rol_epi64(_mm512_xor_si512(a[17], d2), 15);
        b03 = _mm512_rol_epi64(_mm512_xor_si512(a[18], d3), 21);
        b13 = _mm512_rol_epi64(_mm512_xor_si512(a[19], d4), 8);
        b14 = _mm512_rol_epi64(_mm512_xor_si512(a[20], d0), 18);
        b24 = _mm512_rol_epi64(_mm512_xor_si512(a[21], d1), 2);
        b09 = _mm512_rol_epi64(_mm512_xor_si512(a[22], d2), 61);
        b19 = _mm512_rol_epi64(_mm512_xor_si512(a[23], d3), 56);
        b04 = _mm512_rol_epi64(_mm512_xor_si512(a[24], d4), 14);
        a[0] = _mm512_ternarylogic_epi64(b00, b01, b02, 0xD2);
        a[1] = _mm512_ternarylogic_epi64(b01, b02, b03, 0xD2);
        a[2] = _mm512_ternarylogic_epi64(b02, b03, b04, 0xD2);
        a[3] = _mm512_ternarylogic_epi64(b03, b04, b00, 0xD2);
        a[4] = _mm512_ternarylogic_epi64(b04, b00, b01, 0xD2);
        a[5] = _mm512_ternarylogic_epi64(b05, b06, b07, 0xD2);
        a[6] = _mm512_ternarylogic_epi64(b06, b07, b08, 0xD2);
        a[7] = _mm512_ternarylogic_epi64(b07, b08, b09, 0xD2);
        a[8] = _mm512_ternarylogic_epi64(b08, b09, b05, 0xD2);
        a[9] = _mm512_ternarylogic_epi64(b09, b05, b06, 0xD2);
        a[10] = _mm512_ternarylogic_epi64(b10, b11, b12, 0xD2);
        a[11] = _mm512_ternarylogic_epi64(b11, b12, b13, 0xD2);
        a[12] = _mm512_ternarylogic_epi64(b12, b13, b14, 0xD2);
        a[13] = _mm512_ternarylogic_epi64(b13, b14, b10, 0xD2);
        a[14] = _mm512_ternarylogic_epi64(b14, b10, b11, 0xD2);
        a[15] = _mm512_ternarylogic_epi64(b15, b16, b17, 0xD2);
        a[16] = _mm512_ternarylogic_epi64(b16, b17, b18, 0xD2);
        a[17] = _mm512_ternarylogic_epi64(b17, b18, b19, 0xD2);
        a[18] = _mm512_ternarylogic_epi64(b18, b19, b15, 0xD2);
        a[19] = _mm512_ternarylogic_epi64(b19, b15, b16, 0xD2);
        a[20] = _mm512_ternarylogic_epi64(b20, b21, b22, 0xD2);
        a[21] = _mm512_ternarylogic_epi64(b21, b22, b23, 0xD2);
        a[22] = _mm512_ternarylogic_epi64(b22, b23, b24, 0xD2);
        a[23] = _mm512_ternarylogic_epi64(b23, b24, b20, 0xD2);
        a[24] = _mm512_ternarylogic_epi64(b24, b20, b21, 0xD2);
        a[0] = _mm512_xor_si512(a[0], _mm512_set1_epi64((long long)rc8[ir]));
    }
}

/* Word w (bytes 8w..8w+7, little-endian) of the 8 lanes' inputs p[i] + off. */
static AVX inline __m512i load_x8(const uint8_t *const p[MB8_LANES], size_t off)
{
    alignas(64) uint64_t w[MB8_LANES];
    for (unsigned i = 0; i < MB8_LANES; i++)
        memcpy(&w[i], p[i] + off, 8);
    return _mm512_load_si512(w);
}

/* A fresh sponge absorbs the 8 lanes' len-byte inputs and is padded (pad10*1 with the
 * domain bits ds) and permuted: ready to squeeze its first block. */
static AVX void absorb_x8(__m512i a[25], const uint8_t *const in[MB8_LANES], size_t len,
                          unsigned rate, unsigned ds)
{
    alignas(64) uint8_t last[MB8_LANES][MB8__SHAKE128_RATE];
    const uint8_t *lp[MB8_LANES];
    size_t off = 0;

    for (unsigned w = 0; w < 25; w++)
        a[w] = _mm512_setzero_si512();
    for (; len - off >= rate; off += rate) {
        for (unsigned w = 0; w < rate / 8; w++)
            a[w] = _mm512_xor_si512(a[w], load_x8(in, off + 8 * w));
        keccak_x8(a);
    }
    memset(last, 0, sizeof last);
    for (unsigned i = 0; i < MB8_LANES; i++) {
        memcpy(last[i], in[i] + off, len - off);
        last[i][len - off] ^= (uint8_t)ds;
        last[i][rate - 1] ^= 0x80;
        lp[i] = last[i];
    }
    for (unsigned w = 0; w < rate / 8; w++)
        a[w] = _mm512_xor_si512(a[w], load_x8(lp, 8 * w));
    keccak_x8(a);
    mb8__wipe(last, sizeof last); /* G's and the PRF's inputs are secret */
}

/* The current block's first n bytes (n <= rate, a multiple of 8) of each lane into
 * out[i] + off. */
static AVX void squeeze_x8(const __m512i a[25], uint8_t *const out[MB8_LANES], size_t off,
                           unsigned n)
{
    alignas(64) uint64_t t[25][MB8_LANES];
    for (unsigned w = 0; w < n / 8; w++)
        _mm512_store_si512(t[w], a[w]);
    for (unsigned i = 0; i < MB8_LANES; i++)
        for (unsigned w = 0; w < n / 8; w++)
            memcpy(out[i] + off + 8 * w, &t[w][i], 8);
    mb8__wipe(t, sizeof t);
}

/* The workspace (the caller's scratch, MB8__MLKEM_WS_BYTES). */
struct ws {
    mb8__mlkem_poly at[MB8_LANES][K][K];      /* A_hat transposed, per lane (public) */
    uint8_t prf[MB8_LANES][2 * K + 1][128];   /* PRF_2(r, 0..6) (secret) */
    uint8_t xof[MB8_LANES][3 * MB8__SHAKE128_RATE]; /* SHAKE128 output of one entry */
    uint8_t h[MB8_LANES][32], kr[MB8_LANES][64], in[MB8_LANES][64];
};
_Static_assert(sizeof(struct ws) <= MB8__MLKEM_WS_BYTES, "ML-KEM workspace");

void AVX mb8__mlkem768_encaps_avx512(uint8_t *const ct[MB8_LANES], uint8_t *const ss[MB8_LANES],
                                     const uint8_t *const ek[MB8_LANES],
                                     const uint8_t *const m[MB8_LANES], unsigned lane_mask,
                                     void *scratch)
{
    struct ws *w = scratch;
    __m512i a[25];
    const uint8_t *ekp[MB8_LANES], *p[MB8_LANES];
    uint8_t *o[MB8_LANES];
    unsigned first = (unsigned)__builtin_ctz(lane_mask);

    /* unused lanes hash the first used lane's inputs */
    for (unsigned i = 0; i < MB8_LANES; i++) {
        unsigned l = (lane_mask >> i) & 1 ? i : first;
        ekp[i] = ek[l];
        memcpy(w->in[i], m[l], 32);
    }
    /* H(ek) (SHA3-256), then (K, r) = G(m || H(ek)) (SHA3-512), FIPS 203 Algorithm 17 */
    absorb_x8(a, ekp, MB8_MLKEM768_EK_BYTES, MB8__SHA3_256_RATE, MB8__SHA3_DS);
    for (unsigned i = 0; i < MB8_LANES; i++)
        o[i] = w->h[i];
    squeeze_x8(a, o, 0, 32);
    for (unsigned i = 0; i < MB8_LANES; i++) {
        memcpy(w->in[i] + 32, w->h[i], 32);
        p[i] = w->in[i];
        o[i] = w->kr[i];
    }
    absorb_x8(a, p, 64, MB8__SHA3_512_RATE, MB8__SHA3_DS);
    squeeze_x8(a, o, 0, 64);
    /* PRF_2(r, n) = SHAKE256(r || n, 128) for n = 0..6 (Algorithm 14) */
    for (unsigned n = 0; n < 2 * K + 1; n++) {
        for (unsigned i = 0; i < MB8_LANES; i++) {
            memcpy(w->in[i], w->kr[i] + 32, 32);
            w->in[i][32] = (uint8_t)n;
            p[i] = w->in[i];
            o[i] = w->prf[i][n];
        }
        absorb_x8(a, p, 33, MB8__SHAKE256_RATE, MB8__SHAKE_DS);
        squeeze_x8(a, o, 0, 128);
    }
    /* A_hat[j][i] = SampleNTT(rho || i || j) into at[i][j] (Algorithm 7, 13); 3 blocks for
     * every lane, then one more block for all while a lane still lacks coefficients */
    for (unsigned i = 0; i < K; i++)
        for (unsigned j = 0; j < K; j++) {
            unsigned n[MB8_LANES], short_lanes = 0;
            for (unsigned l = 0; l < MB8_LANES; l++) {
                memcpy(w->in[l], ekp[l] + K * MB8__MLKEM_POLY_BYTES, 32);
                w->in[l][32] = (uint8_t)i;
                w->in[l][33] = (uint8_t)j;
                p[l] = w->in[l];
                o[l] = w->xof[l];
            }
            absorb_x8(a, p, 34, MB8__SHAKE128_RATE, MB8__SHAKE_DS);
            for (unsigned b = 0; b < 3; b++) {
                if (b > 0)
                    keccak_x8(a);
                squeeze_x8(a, o, b * MB8__SHAKE128_RATE, MB8__SHAKE128_RATE);
            }
            for (unsigned l = 0; l < MB8_LANES; l++) {
                n[l] = mb8__mlkem_rej_uniform(&w->at[l][i][j], 0, w->xof[l], sizeof w->xof[l]);
                short_lanes |= (n[l] < MB8__MLKEM_N) << l;
            }
            while (short_lanes) { /* rho is public: so is this loop's count */
                keccak_x8(a);
                squeeze_x8(a, o, 0, MB8__SHAKE128_RATE);
                short_lanes = 0;
                for (unsigned l = 0; l < MB8_LANES; l++) {
                    n[l] = mb8__mlkem_rej_uniform(&w->at[l][i][j], n[l], w->xof[l],
                                                  MB8__SHAKE128_RATE);
                    short_lanes |= (n[l] < MB8__MLKEM_N) << l;
                }
            }
        }
    for (unsigned l = 0; l < MB8_LANES; l++) {
        if (!((lane_mask >> l) & 1))
            continue;
        mb8__mlkem768_encrypt_sampled(ct[l], ek[l], m[l],
                                      (const mb8__mlkem_poly(*)[K])w->at[l],
                                      (const uint8_t(*)[128])w->prf[l]);
        memcpy(ss[l], w->kr[l], 32);
    }
    mb8__wipe(w->prf, sizeof w->prf);
    mb8__wipe(w->kr, sizeof w->kr);
    mb8__wipe(w->in, sizeof w->in);
    for (unsigned i = 0; i < 25; i++) /* the last state held the matrix's seeds only, but
                                        earlier ones G and the PRF: clear the registers */
        a[i] = _mm512_setzero_si512();
    __asm__ __volatile__("" : : "m"(a) : "memory");
}
