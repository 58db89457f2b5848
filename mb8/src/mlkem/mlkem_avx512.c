/*
 * ML-KEM-768 encapsulation for 8 lanes with AVX-512 (see mlkem_internal.h). What runs 8
 * lanes at once is the hashing, about half of an encapsulation's time in the portable
 * kernel: Keccak-f[1600] on 8 states, one zmm register per state word (lane i of the
 * register is lane i's word), so H(ek), G(m || H(ek)), the 7 PRF calls and the 9 SHAKE128
 * streams of the matrix take one 8-lane permutation where the portable kernel takes eight.
 * The polynomial arithmetic then runs per lane, vectorised within the polynomial: 32
 * signed 16-bit coefficients a zmm, Montgomery multiplication (vpmullw / vpmulhw), the
 * NTT's stages inside a vector done on the butterflies' elements gathered by vpermt2w
 * (tables from gen_avx512_tables.py). Values are brought to [0, q) before they are
 * compressed, so both kernels give the same bytes; tests/diff compares them.
 *
 * Every lane absorbs inputs of the same length in lock step; lanes outside lane_mask hash
 * a copy of a used lane's inputs and their outputs are dropped. The matrix's rejection
 * sampling squeezes extra SHAKE128 blocks for all 8 lanes while any lane needs one: its
 * timing depends on rho (public) only. Compiled for AVX-512F/BW/VL (and VBMI2 for the
 * rejection sampler's vpcompressw) by target attribute; called only when
 * mb8_cpu_has_ifma() and the CPU has AVX512_VBMI2 (mlkem.c: Ice Lake and later, Zen 4).
 */
#include <immintrin.h>
#include <stdalign.h>
#include <string.h>

#include "../common/ct.h"
#include "keccak.h"
#include "mlkem_avx512_tables.h"
#include "mlkem_internal.h"

#define AVX __attribute__((target("avx512f,avx512vl,avx512bw")))
#define K MB8__MLKEM_K


/* Keccak-p[1600, 24] on 8 states: keccak.c's unrolled round with zmm lanes; theta's
 * parities and chi by vpternlogq (0x96: a ^ b ^ c; 0xD2: a ^ (~b & c)). */
static AVX void keccak_x8(__m512i a[25])
{
    __m512i c0, c1, c2, c3, c4, d0, d1, d2, d3, d4;
    __m512i b00, b01, b02, b03, b04, b05, b06, b07, b08, b09, b10, b11, b12, b13, b14, b15, b16,
        b17, b18, b19, b20, b21, b22, b23, b24;

    for (unsigned ir = 0; ir < 24; ir++) {
        c0 = _mm512_ternarylogic_epi64(_mm512_ternarylogic_epi64(a[0], a[5], a[10], 0x96), a[15],
                                       a[20], 0x96);
        c1 = _mm512_ternarylogic_epi64(_mm512_ternarylogic_epi64(a[1], a[6], a[11], 0x96), a[16],
                                       a[21], 0x96);
        c2 = _mm512_ternarylogic_epi64(_mm512_ternarylogic_epi64(a[2], a[7], a[12], 0x96), a[17],
                                       a[22], 0x96);
        c3 = _mm512_ternarylogic_epi64(_mm512_ternarylogic_epi64(a[3], a[8], a[13], 0x96), a[18],
                                       a[23], 0x96);
        c4 = _mm512_ternarylogic_epi64(_mm512_ternarylogic_epi64(a[4], a[9], a[14], 0x96), a[19],
                                       a[24], 0x96);
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
        a[0] = _mm512_xor_si512(a[0], _mm512_set1_epi64((long long)mb8__keccak_rc[ir]));
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

/* ---- polynomial arithmetic: 32 signed 16-bit coefficients a zmm ---- */

#define VQ _mm512_set1_epi16(MB8__MLKEM_Q)
#define LD(p) _mm512_load_si512((const void *)(p))
#define ST(p, v) _mm512_store_si512((void *)(p), (v))
#define PERM(a, idx, b) _mm512_permutex2var_epi16((a), LD(idx), (b))

/* The 32 little-endian 12-bit values of 48 bytes at p, in order (ByteDecode_12's, and
 * SampleNTT's candidates d1, d2 of each 3 bytes): each 128-bit lane gets 12 bytes
 * (vpermd), vpshufb puts the two bytes of each value in a 16-bit word, odd values shift
 * right by 4, all are masked to 12 bits. Reads exactly 48 bytes. */
static AVX inline __m512i extract12(const uint8_t *p)
{
    __m512i v = _mm512_maskz_loadu_epi8(0x0000FFFFFFFFFFFFULL, p);
    v = _mm512_permutexvar_epi32(_mm512_set_epi32(0, 11, 10, 9, 0, 8, 7, 6, 0, 5, 4, 3, 0, 2, 1, 0),
                                 v);
    const __m512i sh =
        _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 1, 2, 3, 4, 4, 5, 6, 7, 7, 8, 9, 10, 10, 11));
    v = _mm512_shuffle_epi8(v, sh);
    v = _mm512_mask_srli_epi16(v, 0xAAAAAAAAu, v, 4);
    return _mm512_and_si512(v, _mm512_set1_epi16(0x0FFF));
}

/* SampleNTT's loop body (mb8__mlkem_rej_uniform) 32 candidates at a time: the values below
 * q are kept in order by vpcompressw (AVX512_VBMI2), at most 256 in all. Public data. */
static AVX __attribute__((target("avx512vbmi2"))) unsigned
rej_uniform_v(mb8__mlkem_poly *a, unsigned n, const uint8_t *buf, size_t len)
{
    size_t p = 0;
    for (; p + 48 <= len && n < MB8__MLKEM_N; p += 48) {
        __m512i v = extract12(buf + p);
        __mmask32 ok = _mm512_cmplt_epu16_mask(v, VQ);
        unsigned room = MB8__MLKEM_N - n;
        while ((unsigned)__builtin_popcount(ok) > room) /* the last values past 256 */
            ok &= ~(1u << (31 - __builtin_clz(ok)));
        /* vpcompressw to a register and a full store: the memory form is microcoded
         * and slow on Zen 4. Past the kept values the store leaves junk, which the next
         * store or the scalar tail overwrites; near the end it goes through tmp. */
        __m512i c = _mm512_maskz_compress_epi16(ok, v);
        unsigned k = (unsigned)__builtin_popcount(ok);
        if (n + 32 <= MB8__MLKEM_N) {
            _mm512_storeu_si512(a->c + n, c);
        } else {
            alignas(64) uint16_t tmp[32];
            _mm512_store_si512(tmp, c);
            /* cppcheck-suppress pointerOutOfBoundsCond ; n < MB8__MLKEM_N in the loop and k <= room */
            memcpy(a->c + n, tmp, k * sizeof(uint16_t));
        }
        n += k;
    }
    return p < len ? mb8__mlkem_rej_uniform(a, n, buf + p, len - p) : n;
}

/* see mlkem_internal.h: FIPS 203 §7.2's modulus check, 32 coefficients at a time. */
unsigned AVX mb8__mlkem768_ek_ok_avx512(const uint8_t *ek)
{
    __mmask32 bad = 0;
    for (unsigned k = 0; k < K * MB8__MLKEM_POLY_BYTES / 48; k++)
        bad |= _mm512_cmpge_epu16_mask(extract12(ek + 48 * k), VQ);
    return bad == 0;
}

/* Compress_d of 32 coefficients in [0, q) for d = 10 or 4, exactly (x M + A) >> S with
 * (M, A, S) = (161271, 262129, 19) or (315, 32775, 16): gen_avx512_tables.py's search
 * checked every x; 32-bit products, 16-bit results. */
static AVX inline __m512i compress_v(__m512i x, int m, int a, int s, int d)
{
    __m512i lo = _mm512_cvtepu16_epi32(_mm512_castsi512_si256(x));
    __m512i hi = _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(x, 1));
    const __m512i vm = _mm512_set1_epi32(m), va = _mm512_set1_epi32(a),
                  mask = _mm512_set1_epi32((1 << d) - 1);
    lo = _mm512_and_si512(_mm512_srai_epi32(_mm512_add_epi32(_mm512_mullo_epi32(lo, vm), va), s),
                          mask);
    hi = _mm512_and_si512(_mm512_srai_epi32(_mm512_add_epi32(_mm512_mullo_epi32(hi, vm), va), s),
                          mask);
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi32_epi16(lo)),
                              _mm512_cvtepi32_epi16(hi), 1);
}

/* ByteEncode_10(Compress_10(u)) of 3 polynomials in [0, q) into 960 bytes (the
 * ciphertext's c1): pairs joined by vpmaddwd (c0 + 1024 c1), pairs of pairs in 40 bits of
 * each 64-bit lane, whose 5 bytes vpermb (AVX512_VBMI) packs. */
static AVX __attribute__((target("avx512vbmi"))) void encode_u_v(uint8_t out[960],
                                                                 const mb8__mlkem_poly u[K])
{
    const __m512i idx =
        _mm512_set_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 60,
                        59, 58, 57, 56, 52, 51, 50, 49, 48, 44, 43, 42, 41, 40, 36, 35, 34, 33, 32,
                        28, 27, 26, 25, 24, 20, 19, 18, 17, 16, 12, 11, 10, 9, 8, 4, 3, 2, 1, 0);
    for (unsigned p = 0; p < K; p++)
        for (unsigned k = 0; k < 8; k++) {
            __m512i c = compress_v(LD(u[p].c + 32 * k), 161271, 262129, 19, 10);
            __m512i t = _mm512_madd_epi16(c, _mm512_set1_epi32(0x04000001));
            t = _mm512_or_si512(
                _mm512_and_si512(t, _mm512_set1_epi64(0xFFFFF)),
                _mm512_and_si512(_mm512_srli_epi64(t, 12), _mm512_set1_epi64(~0xFFFFFLL)));
            _mm512_mask_storeu_epi8(out + 320 * p + 40 * k, 0xFFFFFFFFFFULL,
                                    _mm512_permutexvar_epi8(idx, t));
        }
}

/* ByteEncode_4(Compress_4(v)) into 128 bytes (c2). */
static AVX void encode_v_v(uint8_t out[128], const mb8__mlkem_poly *v)
{
    for (unsigned k = 0; k < 8; k++) {
        __m512i c = compress_v(LD(v->c + 32 * k), 315, 32775, 16, 4);
        __m512i t = _mm512_madd_epi16(c, _mm512_set1_epi32(0x00100001)); /* c0 + 16 c1 */
        _mm_storeu_si128((__m128i *)(out + 16 * k), _mm512_cvtepi32_epi8(t));
    }
}

/* ByteDecode_12 mod q (mb8__mlkem_decode12) of 384 bytes. */
static AVX void decode12_v(mb8__mlkem_poly *r, const uint8_t *b)
{
    for (unsigned k = 0; k < 8; k++) {
        __m512i v = extract12(b + 48 * k), d = _mm512_sub_epi16(v, VQ);
        _mm512_storeu_si512(r->c + 32 * k,
                            _mm512_mask_mov_epi16(d, _mm512_cmplt_epu16_mask(v, VQ), v));
    }
}

/* SamplePolyCBD_2 (mb8__mlkem_cbd2) of 128 bytes, as signed values in [-2, 2] (what the
 * NTT and add_v take): for each byte the pair sums of bits (0, 1), (2, 3), (4, 5), (6, 7)
 * give coefficient 2i = s0 - s1 and 2i + 1 = s2 - s3, interleaved by vpermt2w. */
static AVX void cbd2_v(mb8__mlkem_poly *r, const uint8_t b[128])
{
    const __m512i m55 = _mm512_set1_epi16(0x55), m3 = _mm512_set1_epi16(3);
    for (unsigned k = 0; k < 4; k++) {
        __m512i v = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(b + 32 * k)));
        __m512i s = _mm512_add_epi16(_mm512_and_si512(v, m55),
                                     _mm512_and_si512(_mm512_srli_epi16(v, 1), m55));
        __m512i e = _mm512_sub_epi16(_mm512_and_si512(s, m3),
                                     _mm512_and_si512(_mm512_srli_epi16(s, 2), m3));
        __m512i o = _mm512_sub_epi16(_mm512_and_si512(_mm512_srli_epi16(s, 4), m3),
                                     _mm512_and_si512(_mm512_srli_epi16(s, 6), m3));
        _mm512_storeu_si512(r->c + 64 * k, _mm512_permutex2var_epi16(e, LD(merge1_a), o));
        _mm512_storeu_si512(r->c + 64 * k + 32, _mm512_permutex2var_epi16(e, LD(merge1_b), o));
    }
}


/* a * b * 2^-16 mod q, in (-q, q) for |a b| < q 2^15 (Montgomery, R = 2^16). */
static AVX inline __m512i fqmul(__m512i a, __m512i b)
{
    __m512i t = _mm512_mullo_epi16(_mm512_mullo_epi16(a, b), _mm512_set1_epi16(QINV16));
    return _mm512_sub_epi16(_mm512_mulhi_epi16(a, b), _mm512_mulhi_epi16(t, VQ));
}

/* a * c mod q for a constant c given as (c_m, c_q) (gen_avx512_tables.py), in (-q, q). */
static AVX inline __m512i fqmulc(__m512i a, __m512i cm, __m512i cq)
{
    return _mm512_sub_epi16(_mm512_mulhi_epi16(a, cm),
                            _mm512_mulhi_epi16(_mm512_mullo_epi16(a, cq), VQ));
}

/* a mod q in [0, q] (Barrett with floor(2^26 / q) = 20159, a floor quotient). */
static AVX inline __m512i barrett(__m512i a)
{
    __m512i t = _mm512_srai_epi16(_mm512_mulhi_epi16(a, _mm512_set1_epi16(20159)), 10);
    return _mm512_sub_epi16(a, _mm512_mullo_epi16(t, VQ));
}

/* x in (-q, 2q) to [0, q): add q when negative, subtract it when >= q (masks, no branch). */
static AVX inline __m512i canon(__m512i x)
{
    x = _mm512_add_epi16(x, _mm512_and_si512(_mm512_srai_epi16(x, 15), VQ));
    __m512i d = _mm512_sub_epi16(x, VQ);
    return _mm512_add_epi16(d, _mm512_and_si512(_mm512_srai_epi16(d, 15), VQ));
}

/* One stage of butterflies inside vector pairs (len L in 16, 8, 4, 2): X / Y gather the
 * butterflies' first and second elements of vectors 2k and 2k + 1. */
#define INNER_STAGE(L, BODY)                                                                       \
    for (unsigned k = 0; k < 4; k++) {                                                             \
        __m512i x = PERM(v[2 * k], split##L##_x, v[2 * k + 1]);                                    \
        __m512i y = PERM(v[2 * k], split##L##_y, v[2 * k + 1]);                                    \
        BODY;                                                                                      \
        v[2 * k] = PERM(x, merge##L##_a, y);                                                       \
        v[2 * k + 1] = PERM(x, merge##L##_b, y);                                                   \
    }

#define FWD_BODY(L)                                                                                \
    __m512i t = fqmulc(y, LD(fwd##L##_zm + 32 * k), LD(fwd##L##_zq + 32 * k));                     \
    y = _mm512_sub_epi16(x, t);                                                                    \
    x = _mm512_add_epi16(x, t)

#define INV_BODY(L)                                                                                \
    __m512i t = x;                                                                                 \
    x = barrett(_mm512_add_epi16(t, y));                                                           \
    y = fqmulc(_mm512_sub_epi16(y, t), LD(inv##L##_zm + 32 * k), LD(inv##L##_zq + 32 * k))

/* Algorithm 9 in place; input in [0, q), output in (-8q, 8q) (no reduction: each stage adds
 * less than q). */
static AVX void ntt_v(uint16_t *p)
{
    __m512i v[8];
    for (unsigned i = 0; i < 8; i++)
        v[i] = LD(p + 32 * i);
    /* len 128, 64, 32: whole vectors, one zeta each (zetas 1; 2, 3; 4..7) */
    static const unsigned char pairs[3][4][3] = {{{0, 4, 1}, {1, 5, 1}, {2, 6, 1}, {3, 7, 1}},
                                                 {{0, 2, 2}, {1, 3, 2}, {4, 6, 3}, {5, 7, 3}},
                                                 {{0, 1, 4}, {2, 3, 5}, {4, 5, 6}, {6, 7, 7}}};
    for (unsigned s = 0; s < 3; s++)
        for (unsigned k = 0; k < 4; k++) {
            unsigned a = pairs[s][k][0], b = pairs[s][k][1], z = pairs[s][k][2];
            __m512i t = fqmulc(v[b], _mm512_set1_epi16(ntt_zm[z]), _mm512_set1_epi16(ntt_zq[z]));
            v[b] = _mm512_sub_epi16(v[a], t);
            v[a] = _mm512_add_epi16(v[a], t);
        }
    INNER_STAGE(16, FWD_BODY(16))
    INNER_STAGE(8, FWD_BODY(8))
    INNER_STAGE(4, FWD_BODY(4))
    INNER_STAGE(2, FWD_BODY(2))
    for (unsigned i = 0; i < 8; i++)
        ST(p + 32 * i, v[i]);
}

/* Algorithm 10 in place, times 2^16 (cancelling the base multiplication's 2^-16); input in
 * (-2^15, 2^15), output in [0, q). Sums are reduced at every stage. */
static AVX void invntt_v(uint16_t *p)
{
    __m512i v[8];
    for (unsigned i = 0; i < 8; i++)
        v[i] = barrett(LD(p + 32 * i));
    INNER_STAGE(2, INV_BODY(2))
    INNER_STAGE(4, INV_BODY(4))
    INNER_STAGE(8, INV_BODY(8))
    INNER_STAGE(16, INV_BODY(16))
    static const unsigned char pairs[3][4][3] = {{{0, 1, 7}, {2, 3, 6}, {4, 5, 5}, {6, 7, 4}},
                                                 {{0, 2, 3}, {1, 3, 3}, {4, 6, 2}, {5, 7, 2}},
                                                 {{0, 4, 1}, {1, 5, 1}, {2, 6, 1}, {3, 7, 1}}};
    for (unsigned s = 0; s < 3; s++)
        for (unsigned k = 0; k < 4; k++) {
            unsigned a = pairs[s][k][0], b = pairs[s][k][1], z = pairs[s][k][2];
            __m512i t = v[a];
            v[a] = barrett(_mm512_add_epi16(t, v[b]));
            v[b] = fqmulc(_mm512_sub_epi16(v[b], t), _mm512_set1_epi16(ntt_zm[z]),
                          _mm512_set1_epi16(ntt_zq[z]));
        }
    for (unsigned i = 0; i < 8; i++)
        ST(p + 32 * i, canon(fqmulc(v[i], _mm512_set1_epi16(INV_F_M), _mm512_set1_epi16(INV_F_Q))));
}

/* r = sum over j < 3 of a[j] * b[j] in the NTT domain (Algorithms 11, 12), times 2^-16, in
 * (-6q, 6q): a[j] in [0, q), b[j] from ntt_v. Even / odd coefficients split by vpermt2w. */
static AVX void basemul3_v(uint16_t *r, const mb8__mlkem_poly *a, const mb8__mlkem_poly *b,
                           size_t astride)
{
    for (unsigned k = 0; k < 4; k++) {
        __m512i ce = _mm512_setzero_si512(), co = _mm512_setzero_si512();
        __m512i gm = LD(gam_m + 32 * k), gq = LD(gam_q + 32 * k);
        for (unsigned j = 0; j < K; j++) {
            const uint16_t *pa = a[j * astride].c + 64 * k, *pb = b[j].c + 64 * k;
            __m512i a0 = LD(pa), a1 = LD(pa + 32), b0 = LD(pb), b1 = LD(pb + 32);
            __m512i ae = PERM(a0, split1_x, a1), ao = PERM(a0, split1_y, a1);
            __m512i be = PERM(b0, split1_x, b1), bo = PERM(b0, split1_y, b1);
            ce = _mm512_add_epi16(ce,
                                  _mm512_add_epi16(fqmul(ae, be), fqmulc(fqmul(ao, bo), gm, gq)));
            co = _mm512_add_epi16(co, _mm512_add_epi16(fqmul(ae, bo), fqmul(ao, be)));
        }
        ST(r + 64 * k, PERM(ce, merge1_a, co));
        ST(r + 64 * k + 32, PERM(ce, merge1_b, co));
    }
}

/* r = canon(r + a) for r, a in [0, q). */
static AVX void add_v(uint16_t *r, const uint16_t *a)
{
    for (unsigned i = 0; i < 8; i++)
        ST(r + 32 * i, canon(_mm512_add_epi16(LD(r + 32 * i), LD(a + 32 * i))));
}

/* r = canon(r + Decompress_1(m)): 1665 where m's bit is set (the bits are a mask). */
static AVX void add_msg_v(mb8__mlkem_poly *r, const uint8_t m[32])
{
    for (unsigned k = 0; k < 8; k++) {
        uint32_t bits;
        memcpy(&bits, m + 4 * k, 4);
        __m512i t =
            _mm512_maskz_mov_epi16((__mmask32)bits, _mm512_set1_epi16((MB8__MLKEM_Q + 1) / 2));
        ST(r->c + 32 * k, canon(_mm512_add_epi16(LD(r->c + 32 * k), t)));
    }
}

/* mb8__mlkem768_encrypt_sampled with the vector arithmetic above (same bytes: every value
 * is brought to [0, q) before it is compressed). */
static AVX void encrypt_sampled_v(uint8_t *ct, const uint8_t *ek, const uint8_t m[32],
                                  const mb8__mlkem_poly at[K][K], const uint8_t prf[2 * K + 1][128])
{
    alignas(64) mb8__mlkem_poly y[K], u[K], v, t, th[K];

    for (unsigned i = 0; i < K; i++) {
        cbd2_v(&y[i], prf[i]);
        ntt_v(y[i].c);
    }
    for (unsigned i = 0; i < K; i++) {
        basemul3_v(u[i].c, &at[i][0], y, 1); /* sum_j A[j][i] y[j] */
        invntt_v(u[i].c);
        cbd2_v(&t, prf[K + i]);
        add_v(u[i].c, t.c);
    }
    for (unsigned j = 0; j < K; j++)
        decode12_v(&th[j], ek + MB8__MLKEM_POLY_BYTES * j);
    basemul3_v(v.c, th, y, 1);
    invntt_v(v.c);
    cbd2_v(&t, prf[2 * K]);
    add_v(v.c, t.c);
    add_msg_v(&v, m);
    encode_u_v(ct, u);
    encode_v_v(ct + 960, &v);
    mb8__wipe(y, sizeof y);
    mb8__wipe(u, sizeof u);
    mb8__wipe(&v, sizeof v);
    mb8__wipe(&t, sizeof t);
}

/* The workspace (the caller's scratch, MB8__MLKEM_WS_BYTES). */
struct ws {
    mb8__mlkem_poly at[MB8_LANES][K][K];            /* A_hat transposed, per lane (public) */
    uint8_t prf[MB8_LANES][2 * K + 1][128];         /* PRF_2(r, 0..6) (secret) */
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
                n[l] = MB8__MLKEM_N; /* lanes outside lane_mask: no parsing */
                if ((lane_mask >> l) & 1)
                    n[l] = rej_uniform_v(&w->at[l][i][j], 0, w->xof[l], sizeof w->xof[l]);
                short_lanes |= (n[l] < MB8__MLKEM_N) << l;
            }
            while (short_lanes) { /* rho is public: so is this loop's count */
                keccak_x8(a);
                squeeze_x8(a, o, 0, MB8__SHAKE128_RATE);
                short_lanes = 0;
                for (unsigned l = 0; l < MB8_LANES; l++) {
                    if (n[l] < MB8__MLKEM_N)
                        n[l] = rej_uniform_v(&w->at[l][i][j], n[l], w->xof[l], MB8__SHAKE128_RATE);
                    short_lanes |= (n[l] < MB8__MLKEM_N) << l;
                }
            }
        }
    for (unsigned l = 0; l < MB8_LANES; l++) {
        if (!((lane_mask >> l) & 1))
            continue;
        encrypt_sampled_v(ct[l], ek[l], m[l], (const mb8__mlkem_poly(*)[K])w->at[l],
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

/* see mlkem_internal.h: one encapsulation whose independent XOF streams share the 8-state
 * Keccak: the 7 PRF outputs in one pass, the first 8 matrix entries in one pass (the 9th
 * by the scalar sponge); H(ek) and G, which depend on each other, by the scalar sponge. */
void AVX mb8__mlkem768_encaps1_avx512(uint8_t *ct, uint8_t ss[32], const uint8_t *ek,
                                      const uint8_t m[32], void *scratch)
{
    struct ws *w = scratch;
    __m512i a[25];
    const uint8_t *p[MB8_LANES];
    uint8_t *o[MB8_LANES];
    const uint8_t *rho = ek + K * MB8__MLKEM_POLY_BYTES;
    mb8__mlkem_poly(*at)[K] = w->at[0]; /* at[i][j] = A_hat[j][i], entry e = 3 i + j */
    uint8_t(*prf)[128] = w->prf[0];     /* the 7 PRF outputs, then one spare */

    mb8__sha3_256(w->h[0], ek, MB8_MLKEM768_EK_BYTES, NULL, 0);
    mb8__sha3_512(w->kr[0], m, 32, w->h[0], 32); /* (K, r) = G(m || H(ek)) */
    for (unsigned n = 0; n < MB8_LANES; n++) {   /* state 7 computes PRF(r, 7), unused */
        memcpy(w->in[n], w->kr[0] + 32, 32);
        w->in[n][32] = (uint8_t)n;
        p[n] = w->in[n];
        o[n] = prf[n];
    }
    absorb_x8(a, p, 33, MB8__SHAKE256_RATE, MB8__SHAKE_DS);
    squeeze_x8(a, o, 0, 128);
    /* entries e = 3 i + j < 8 of the matrix: seed rho || i || j in state e */
    unsigned n[MB8_LANES], short_lanes = 0;
    for (unsigned e = 0; e < MB8_LANES; e++) {
        memcpy(w->in[e], rho, 32);
        w->in[e][32] = (uint8_t)(e / K);
        w->in[e][33] = (uint8_t)(e % K);
        p[e] = w->in[e];
        o[e] = w->xof[e];
    }
    absorb_x8(a, p, 34, MB8__SHAKE128_RATE, MB8__SHAKE_DS);
    for (unsigned b = 0; b < 3; b++) {
        if (b > 0)
            keccak_x8(a);
        squeeze_x8(a, o, b * MB8__SHAKE128_RATE, MB8__SHAKE128_RATE);
    }
    for (unsigned e = 0; e < MB8_LANES; e++) {
        n[e] = rej_uniform_v(&at[e / K][e % K], 0, w->xof[e], sizeof w->xof[e]);
        short_lanes |= (n[e] < MB8__MLKEM_N) << e;
    }
    while (short_lanes) { /* rho is public: so is this loop's count */
        keccak_x8(a);
        squeeze_x8(a, o, 0, MB8__SHAKE128_RATE);
        short_lanes = 0;
        for (unsigned e = 0; e < MB8_LANES; e++) {
            if (n[e] < MB8__MLKEM_N)
                n[e] = rej_uniform_v(&at[e / K][e % K], n[e], w->xof[e], MB8__SHAKE128_RATE);
            short_lanes |= (n[e] < MB8__MLKEM_N) << e;
        }
    }
    mb8__mlkem_sample_ntt(&at[K - 1][K - 1], rho, K - 1, K - 1); /* the 9th entry, i = j = 2 */
    encrypt_sampled_v(ct, ek, m, (const mb8__mlkem_poly(*)[K])at, (const uint8_t(*)[128])prf);
    memcpy(ss, w->kr[0], 32);
    mb8__wipe(w->prf, sizeof w->prf);
    mb8__wipe(w->kr, sizeof w->kr);
    mb8__wipe(w->in, sizeof w->in);
    for (unsigned i = 0; i < 25; i++)
        a[i] = _mm512_setzero_si512();
    __asm__ __volatile__("" : : "m"(a) : "memory");
}
