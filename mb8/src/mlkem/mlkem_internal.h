/*
 * The ML-KEM-768 kernels behind mb8/mlkem.h (internal to mb8). FIPS 203 names: q = 3329,
 * n = 256, k = 3, eta1 = eta2 = 2, du = 10, dv = 4. Polynomials hold coefficients in
 * [0, q) (uint16_t), in the NTT domain (FIPS 203 §4.3) where a name has a hat ("_hat").
 */
#ifndef MB8_MLKEM_INTERNAL_H
#define MB8_MLKEM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "mb8/mlkem.h"

#define MB8__MLKEM_Q 3329
#define MB8__MLKEM_N 256
#define MB8__MLKEM_K 3
#define MB8__MLKEM_POLY_BYTES 384 /* ByteEncode12 of one polynomial */

typedef struct {
    uint16_t c[MB8__MLKEM_N];
} mb8__mlkem_poly;

/* ---- portable kernel (mlkem_ref.c), one lane per call ---- */

/* FIPS 203 §7.2 modulus check of ek (MB8_MLKEM768_EK_BYTES): 1 when every 12-bit
 * coefficient of its first 1152 bytes is below q, else 0. No branch on the bytes. */
unsigned mb8__mlkem768_ek_ok(const uint8_t *ek);

/* ML-KEM.KeyGen_internal (Algorithm 16). */
void mb8__mlkem768_keygen_ref(uint8_t *ek, uint8_t *dk, const uint8_t d[32], const uint8_t z[32]);

/* The same from (rho, sigma) = G(d || 3): the part after the hash, where rho is public (it
 * ends ek) and only sigma and z are secret (the constant-time test poisons those). */
void mb8__mlkem768_keygen_rs_ref(uint8_t *ek, uint8_t *dk, const uint8_t rho[32],
                                 const uint8_t sigma[32], const uint8_t z[32]);

/* ML-KEM.Encaps_internal (Algorithm 17) of a key that passed mb8__mlkem768_ek_ok. */
void mb8__mlkem768_encaps_ref(uint8_t *ct, uint8_t ss[32], const uint8_t *ek, const uint8_t m[32]);

/* ML-KEM.Decaps_internal (Algorithm 18) with implicit rejection. Returns the §7.3 hash
 * check (1: H(ek) in dk matches; 0: ss not written). */
unsigned mb8__mlkem768_decaps_ref(uint8_t ss[32], const uint8_t *ct, const uint8_t *dk);

/* Pieces the vector kernel shares with the portable one. */
/* K-PKE.Encrypt's arithmetic after its sampling (mlkem_ref.c): at[i][j] = A_hat[j][i],
 * prf[n] = PRF_2(r, n) for n = 0..6; writes ct (1088 bytes). */
void mb8__mlkem768_encrypt_sampled(uint8_t *ct, const uint8_t *ek, const uint8_t m[32],
                                   const mb8__mlkem_poly at[MB8__MLKEM_K][MB8__MLKEM_K],
                                   const uint8_t prf[2 * MB8__MLKEM_K + 1][128]);
/* SampleNTT (Algorithm 7) of rho || j || i: the matrix entry A_hat[i][j]. Public data. */
void mb8__mlkem_sample_ntt(mb8__mlkem_poly *a, const uint8_t rho[32], uint8_t j, uint8_t i);
/* SampleNTT's loop body (Algorithm 7, steps 4-15) over len bytes of SHAKE128 output: fills
 * a->c[n..] with the accepted 12-bit values, returns the new count (256: done). */
unsigned mb8__mlkem_rej_uniform(mb8__mlkem_poly *a, unsigned n, const uint8_t *buf, size_t len);
/* SamplePolyCBD_2 (Algorithm 8) of 128 bytes. */
void mb8__mlkem_cbd2(mb8__mlkem_poly *r, const uint8_t b[128]);
/* ByteDecode12 with values reduced mod q (Algorithm 6, d = 12). */
void mb8__mlkem_decode12(mb8__mlkem_poly *r, const uint8_t b[MB8__MLKEM_POLY_BYTES]);
/* Compress_du / Compress_dv and ByteEncode of u (3 polynomials, 960 bytes) and v (128). */
void mb8__mlkem_encode_u(uint8_t out[960], const mb8__mlkem_poly u[MB8__MLKEM_K]);
void mb8__mlkem_encode_v(uint8_t out[128], const mb8__mlkem_poly *v);
/* Decompress_1(ByteDecode1(m)) (the message as a polynomial). */
void mb8__mlkem_from_msg(mb8__mlkem_poly *r, const uint8_t m[32]);

/* Bytes of the encapsulation scratch (mb8_mlkem768_scratch_size). */
#define MB8__MLKEM_WS_BYTES 65536

/* The AVX-512 encapsulation kernel (mlkem_avx512.c), 8 lanes at once; call only when
 * mb8_cpu_has_ifma(). Lanes outside lane_mask are not read or written; ek passed the
 * modulus check. ws: MB8__MLKEM_WS_BYTES, 64-byte aligned, wiped before return. */
#if defined(__x86_64__)
#define MB8__MLKEM_HAVE_AVX512 1
/* One lane's encapsulation (ek checked) on the vector unit, its 7 PRF and 8 of its 9
 * matrix streams in the 8 Keccak states at once: about 40% of an 8-lane call, so 1 or 2
 * used lanes take this path (mlkem.c). ws as mb8__mlkem768_encaps_avx512's. */
void mb8__mlkem768_encaps1_avx512(uint8_t *ct, uint8_t ss[32], const uint8_t *ek,
                                  const uint8_t m[32], void *ws);
/* mb8__mlkem768_ek_ok on the vector unit (mlkem_avx512.c; same answer). */
unsigned mb8__mlkem768_ek_ok_avx512(const uint8_t *ek);
#else
#define MB8__MLKEM_HAVE_AVX512 0
#endif
void mb8__mlkem768_encaps_avx512(uint8_t *const ct[MB8_LANES], uint8_t *const ss[MB8_LANES],
                                 const uint8_t *const ek[MB8_LANES],
                                 const uint8_t *const m[MB8_LANES], unsigned lane_mask, void *ws);

/* Compress_d(x) for x in [0, q), d in 1..11 (FIPS 203 (4.7)): round(2^d x / q) mod 2^d by a
 * multiplication (exact for every input: tests/diff checks all of them). */
static inline uint32_t mb8__mlkem_compress(uint32_t x, unsigned d)
{
    uint64_t n = ((uint64_t)x << d) + (MB8__MLKEM_Q - 1) / 2;
    return (uint32_t)((n * 10321340u) >> 35) & ((1u << d) - 1);
}

/* Decompress_d(y) = round(q y / 2^d) (FIPS 203 (4.8)). */
static inline uint32_t mb8__mlkem_decompress(uint32_t y, unsigned d)
{
    return (y * MB8__MLKEM_Q + (1u << (d - 1))) >> d;
}

#endif
