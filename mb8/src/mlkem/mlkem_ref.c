/*
 * ML-KEM-768 portable kernel (see mlkem_internal.h), after FIPS 203 §4-§6.
 *
 * Arithmetic mod q = 3329 on coefficients kept in [0, q): sums and differences end with a
 * masked conditional subtraction, products with a Barrett reduction (floor(2^32 / q)) and
 * the same subtraction; no branch and no table index depends on a coefficient. The only
 * data-dependent control flow is the rejection sampling of the matrix from rho (public)
 * and the lengths of the inputs.
 */
#include <string.h>

#include "../common/ct.h"
#include "keccak.h"
#include "mlkem_internal.h"
#include "mlkem_zetas.h"

#define Q MB8__MLKEM_Q
#define N MB8__MLKEM_N
#define K MB8__MLKEM_K
typedef mb8__mlkem_poly poly;

/* ---- arithmetic mod q ---- */

/* x - q if x >= q, for x < 2q (and x < 2^31): a mask, no branch. */
static inline uint32_t csubq(uint32_t x)
{
    uint32_t d = x - Q;
    return d + (Q & (0u - (d >> 31)));
}

/* x mod q for any 32-bit x: floor(x * floor(2^32/q) / 2^32) underestimates x / q by less
 * than 2 (2^32 mod q = 1353 < q), so one conditional subtraction finishes. */
static inline uint32_t barrett(uint32_t x)
{
    uint32_t t = (uint32_t)(((uint64_t)x * 1290167u) >> 32);
    return csubq(x - t * Q);
}

static inline uint16_t addq(uint32_t a, uint32_t b)
{
    return (uint16_t)csubq(a + b);
}

static inline uint16_t subq(uint32_t a, uint32_t b)
{
    return (uint16_t)csubq(a + Q - b);
}

static inline uint16_t mulq(uint32_t a, uint32_t b)
{
    return (uint16_t)barrett(a * b);
}

/* ---- NTT (FIPS 203 §4.3) ---- */

/* Algorithm 9: NTT in place. */
static void ntt(poly *f)
{
    unsigned i = 1;
    for (unsigned len = 128; len >= 2; len /= 2) {
        for (unsigned start = 0; start < N; start += 2 * len) {
            uint32_t zeta = mlkem_zetas[i++];
            for (unsigned j = start; j < start + len; j++) {
                uint32_t t = mulq(zeta, f->c[j + len]);
                f->c[j + len] = subq(f->c[j], t);
                f->c[j] = addq(f->c[j], t);
            }
        }
    }
}

/* Algorithm 10: inverse NTT in place, including the factor 128^-1 = 3303 mod q. */
static void ntt_inv(poly *f)
{
    unsigned i = 127;
    for (unsigned len = 2; len <= 128; len *= 2) {
        for (unsigned start = 0; start < N; start += 2 * len) {
            uint32_t zeta = mlkem_zetas[i--];
            for (unsigned j = start; j < start + len; j++) {
                uint32_t t = f->c[j];
                f->c[j] = addq(t, f->c[j + len]);
                f->c[j + len] = mulq(zeta, subq(f->c[j + len], t));
            }
        }
    }
    for (unsigned j = 0; j < N; j++)
        f->c[j] = mulq(f->c[j], 3303);
}

/* r += f * g for coefficients j, j + 1: a product mod X^2 - gamma (Algorithm 12,
 * BaseCaseMultiply). */
static inline void base_mul_acc(poly *r, const poly *f, const poly *g, unsigned j, uint32_t gamma)
{
    uint32_t a0 = f->c[j], a1 = f->c[j + 1];
    uint32_t b0 = g->c[j], b1 = g->c[j + 1];
    uint32_t c0 = barrett(a0 * b0 + mulq(a1, b1) * gamma);
    uint32_t c1 = barrett(a0 * b1 + a1 * b0);
    r->c[j] = addq(r->c[j], c0);
    r->c[j + 1] = addq(r->c[j + 1], c1);
}

/* r += f * g in the NTT domain (Algorithm 11, MultiplyNTTs): pair i of coefficients takes
 * gamma_i = 17^(2 BitRev7(i) + 1) mod q, which is zetas[64 + i / 2] for even i and q minus
 * it for odd i (BitRev7(2k + 1) = BitRev7(2k) + 64, and 17^128 = -1 mod q). */
static void mul_acc(poly *r, const poly *f, const poly *g)
{
    for (unsigned k = 0; k < N / 4; k++) {
        uint32_t zeta = mlkem_zetas[64 + k];
        base_mul_acc(r, f, g, 4 * k, zeta);
        base_mul_acc(r, f, g, 4 * k + 2, Q - zeta);
    }
}

static void poly_add(poly *r, const poly *a)
{
    for (unsigned j = 0; j < N; j++)
        r->c[j] = addq(r->c[j], a->c[j]);
}

/* ---- sampling (FIPS 203 §4.2.2) ---- */

void mb8__mlkem_sample_ntt(poly *a, const uint8_t rho[32], uint8_t j, uint8_t i)
{
    mb8__keccak_t x;
    uint8_t seed[34], buf[3 * MB8__SHAKE128_RATE];
    unsigned n = 0;

    memcpy(seed, rho, 32);
    seed[32] = j;
    seed[33] = i;
    mb8__keccak_init(&x, MB8__SHAKE128_RATE);
    mb8__keccak_absorb(&x, seed, sizeof seed);
    mb8__keccak_finalize(&x, MB8__SHAKE_DS);
    /* 3 blocks give 336 candidates, enough for 256 acceptances (probability 0.81 each)
     * almost always; then one block at a time. rho is public: branching here is fine. */
    size_t have = sizeof buf;
    mb8__keccak_squeeze(&x, buf, have);
    while ((n = mb8__mlkem_rej_uniform(a, n, buf, have)) < N) {
        have = MB8__SHAKE128_RATE;
        mb8__keccak_squeeze(&x, buf, have);
    }
}

unsigned mb8__mlkem_rej_uniform(poly *a, unsigned n, const uint8_t *buf, size_t len)
{
    for (size_t p = 0; p + 3 <= len && n < N; p += 3) { /* public data: branches are fine */
        uint32_t d1 = buf[p] | ((uint32_t)(buf[p + 1] & 0x0F) << 8);
        uint32_t d2 = (buf[p + 1] >> 4) | ((uint32_t)buf[p + 2] << 4);
        if (d1 < Q)
            a->c[n++] = (uint16_t)d1;
        if (d2 < Q && n < N)
            a->c[n++] = (uint16_t)d2;
    }
    return n;
}

void mb8__mlkem_cbd2(poly *r, const uint8_t b[128])
{
    for (unsigned i = 0; i < 128; i += 4) {
        uint32_t v = b[i] | ((uint32_t)b[i + 1] << 8) | ((uint32_t)b[i + 2] << 16) |
                     ((uint32_t)b[i + 3] << 24);
        /* per 4 bits: (bit0 + bit1) - (bit2 + bit3), as (x - y + q) mod q; the pair sums
         * sit at bits 4j..4j+1 and 4j+2..4j+3 */
        uint32_t s = (v & 0x55555555u) + ((v >> 1) & 0x55555555u);
        for (unsigned j = 0; j < 8; j++) {
            uint32_t x = (s >> (4 * j)) & 3, y = (s >> (4 * j + 2)) & 3;
            r->c[2 * i + j] = (uint16_t)csubq(x + Q - y);
        }
    }
}

/* PRF_2(s, b) = SHAKE256(s || b, 128 bytes) then SamplePolyCBD_2 (FIPS 203 (4.3)): key
 * generation's; encryption takes the PRF bytes (mb8__mlkem768_encrypt_sampled). */
static void prf_cbd2(poly *r, const uint8_t s[32], uint8_t b)
{
    uint8_t buf[128];
    mb8__shake256(buf, sizeof buf, s, 32, &b, 1);
    mb8__mlkem_cbd2(r, buf);
    mb8__wipe(buf, sizeof buf);
}

/* ---- encodings (FIPS 203 §4.2.1) ---- */

static void encode12(uint8_t out[MB8__MLKEM_POLY_BYTES], const poly *a)
{
    for (unsigned i = 0; i < N / 2; i++) {
        uint32_t x = a->c[2 * i], y = a->c[2 * i + 1];
        out[3 * i] = (uint8_t)x;
        out[3 * i + 1] = (uint8_t)((x >> 8) | (y << 4));
        out[3 * i + 2] = (uint8_t)(y >> 4);
    }
}

void mb8__mlkem_decode12(poly *r, const uint8_t b[MB8__MLKEM_POLY_BYTES])
{
    for (unsigned i = 0; i < N / 2; i++) {
        uint32_t x = b[3 * i] | ((uint32_t)(b[3 * i + 1] & 0x0F) << 8);
        uint32_t y = (b[3 * i + 1] >> 4) | ((uint32_t)b[3 * i + 2] << 4);
        r->c[2 * i] = (uint16_t)csubq(x); /* < 4096 < 2q */
        r->c[2 * i + 1] = (uint16_t)csubq(y);
    }
}

unsigned mb8__mlkem768_ek_ok(const uint8_t *ek)
{
    uint32_t bad = 0;
    for (unsigned i = 0; i < K * N / 2; i++) {
        uint32_t x = ek[3 * i] | ((uint32_t)(ek[3 * i + 1] & 0x0F) << 8);
        uint32_t y = (ek[3 * i + 1] >> 4) | ((uint32_t)ek[3 * i + 2] << 4);
        bad |= ((Q - 1) - x) | ((Q - 1) - y); /* top bit set when x or y >= q */
    }
    return 1u ^ (bad >> 31);
}

void mb8__mlkem_encode_u(uint8_t out[960], const poly u[K])
{
    for (unsigned p = 0; p < K; p++) {
        for (unsigned i = 0; i < N / 4; i++) {
            uint32_t t[4];
            for (unsigned j = 0; j < 4; j++)
                t[j] = mb8__mlkem_compress(u[p].c[4 * i + j], 10);
            uint8_t *o = out + 320 * p + 5 * i;
            o[0] = (uint8_t)t[0];
            o[1] = (uint8_t)((t[0] >> 8) | (t[1] << 2));
            o[2] = (uint8_t)((t[1] >> 6) | (t[2] << 4));
            o[3] = (uint8_t)((t[2] >> 4) | (t[3] << 6));
            o[4] = (uint8_t)(t[3] >> 2);
        }
    }
}

static void decode_u(poly u[K], const uint8_t in[960])
{
    for (unsigned p = 0; p < K; p++) {
        for (unsigned i = 0; i < N / 4; i++) {
            const uint8_t *b = in + 320 * p + 5 * i;
            uint32_t t[4];
            t[0] = (b[0] | ((uint32_t)b[1] << 8)) & 0x3FF;
            t[1] = ((b[1] >> 2) | ((uint32_t)b[2] << 6)) & 0x3FF;
            t[2] = ((b[2] >> 4) | ((uint32_t)b[3] << 4)) & 0x3FF;
            t[3] = ((b[3] >> 6) | ((uint32_t)b[4] << 2)) & 0x3FF;
            for (unsigned j = 0; j < 4; j++)
                u[p].c[4 * i + j] = (uint16_t)mb8__mlkem_decompress(t[j], 10);
        }
    }
}

void mb8__mlkem_encode_v(uint8_t out[128], const poly *v)
{
    for (unsigned i = 0; i < N / 2; i++)
        out[i] = (uint8_t)(mb8__mlkem_compress(v->c[2 * i], 4) |
                           (mb8__mlkem_compress(v->c[2 * i + 1], 4) << 4));
}

static void decode_v(poly *v, const uint8_t in[128])
{
    for (unsigned i = 0; i < N / 2; i++) {
        v->c[2 * i] = (uint16_t)mb8__mlkem_decompress(in[i] & 0x0F, 4);
        v->c[2 * i + 1] = (uint16_t)mb8__mlkem_decompress(in[i] >> 4, 4);
    }
}

void mb8__mlkem_from_msg(poly *r, const uint8_t m[32])
{
    for (unsigned i = 0; i < N; i++) {
        uint32_t bit = (m[i / 8] >> (i % 8)) & 1;
        r->c[i] = (uint16_t)((0u - bit) & ((Q + 1) / 2)); /* Decompress_1: 0 or 1665 */
    }
}

static void to_msg(uint8_t m[32], const poly *w)
{
    memset(m, 0, 32);
    for (unsigned i = 0; i < N; i++)
        m[i / 8] |= (uint8_t)(mb8__mlkem_compress(w->c[i], 1) << (i % 8));
}

/* ---- K-PKE (FIPS 203 §5) ---- */

/* Algorithm 13 after its first line: K-PKE.KeyGen from (rho, sigma) = G(d || k), into ek
 * (1184) and dk_pke (1152). rho is public (it ends ek), sigma secret. */
static void kpke_keygen_rs(uint8_t *ek, uint8_t *dk_pke, const uint8_t rho[32],
                           const uint8_t sigma[32])
{
    poly s[K], e[K], t, a;

    for (unsigned i = 0; i < K; i++)
        prf_cbd2(&s[i], sigma, (uint8_t)i);
    for (unsigned i = 0; i < K; i++)
        prf_cbd2(&e[i], sigma, (uint8_t)(K + i));
    for (unsigned i = 0; i < K; i++) {
        ntt(&s[i]);
        ntt(&e[i]);
    }
    for (unsigned i = 0; i < K; i++) {
        t = e[i];
        for (unsigned j = 0; j < K; j++) {
            mb8__mlkem_sample_ntt(&a, rho, (uint8_t)j, (uint8_t)i);
            mul_acc(&t, &a, &s[j]);
        }
        encode12(ek + MB8__MLKEM_POLY_BYTES * i, &t);
        encode12(dk_pke + MB8__MLKEM_POLY_BYTES * i, &s[i]);
    }
    memcpy(ek + K * MB8__MLKEM_POLY_BYTES, rho, 32);
    mb8__wipe(s, sizeof s);
    mb8__wipe(e, sizeof e);
    mb8__wipe(&t, sizeof t);
}

/* The arithmetic of Algorithm 14 (K-PKE.Encrypt) after its sampling, into ct (1088):
 * at[i][j] = A_hat[j][i] (the transpose, from rho), prf[n] the 128-byte PRF_2(r, n) outputs
 * for n = 0..6 (y, then e1, then e2). Shared by the portable kernel and the vector one
 * (which samples 8 lanes at once). */
void mb8__mlkem768_encrypt_sampled(uint8_t *ct, const uint8_t *ek, const uint8_t m[32],
                                   const mb8__mlkem_poly at[K][K],
                                   const uint8_t prf[2 * K + 1][128])
{
    struct { /* the secrets, wiped together at the end */
        poly y[K], u[K], v, t;
    } s;
    poly a;

    for (unsigned i = 0; i < K; i++) {
        mb8__mlkem_cbd2(&s.y[i], prf[i]);
        ntt(&s.y[i]);
    }
    /* u = NTT^-1(A^T y) + e1: u[i] = sum_j A[j][i] y[j] */
    for (unsigned i = 0; i < K; i++) {
        memset(&s.u[i], 0, sizeof s.u[i]);
        for (unsigned j = 0; j < K; j++)
            mul_acc(&s.u[i], &at[i][j], &s.y[j]);
        ntt_inv(&s.u[i]);
        mb8__mlkem_cbd2(&s.t, prf[K + i]); /* e1[i] */
        poly_add(&s.u[i], &s.t);
    }
    /* v = NTT^-1(t^T y) + e2 + mu */
    memset(&s.v, 0, sizeof s.v);
    for (unsigned j = 0; j < K; j++) {
        mb8__mlkem_decode12(&a, ek + MB8__MLKEM_POLY_BYTES * j);
        mul_acc(&s.v, &a, &s.y[j]);
    }
    ntt_inv(&s.v);
    mb8__mlkem_cbd2(&s.t, prf[2 * K]); /* e2 */
    poly_add(&s.v, &s.t);
    mb8__mlkem_from_msg(&s.t, m);
    poly_add(&s.v, &s.t);
    mb8__mlkem_encode_u(ct, s.u);
    mb8__mlkem_encode_v(ct + 960, &s.v);
    mb8__wipe(&s, sizeof s);
}

/* Algorithm 14: K-PKE.Encrypt(ek, m, r) into ct (1088). */
static void kpke_encrypt(uint8_t *ct, const uint8_t *ek, const uint8_t m[32], const uint8_t r[32])
{
    poly at[K][K];
    uint8_t prf[2 * K + 1][128];
    const uint8_t *rho = ek + K * MB8__MLKEM_POLY_BYTES;

    for (unsigned i = 0; i < K; i++)
        for (unsigned j = 0; j < K; j++)
            mb8__mlkem_sample_ntt(&at[i][j], rho, (uint8_t)i, (uint8_t)j); /* A[j][i] */
    for (uint8_t n = 0; n < 2 * K + 1; n++)
        mb8__shake256(prf[n], 128, r, 32, &n, 1);
    mb8__mlkem768_encrypt_sampled(ct, ek, m, (const poly(*)[K])at, (const uint8_t(*)[128])prf);
    mb8__wipe(prf, sizeof prf);
}

/* Algorithm 15: K-PKE.Decrypt(dk_pke, c) into m. */
static void kpke_decrypt(uint8_t m[32], const uint8_t *dk_pke, const uint8_t *ct)
{
    poly u[K], v, w, s;

    decode_u(u, ct);
    decode_v(&v, ct + 960);
    memset(&w, 0, sizeof w);
    for (unsigned i = 0; i < K; i++) {
        ntt(&u[i]);
        mb8__mlkem_decode12(&s, dk_pke + MB8__MLKEM_POLY_BYTES * i);
        mul_acc(&w, &s, &u[i]);
    }
    ntt_inv(&w);
    for (unsigned j = 0; j < N; j++)
        w.c[j] = subq(v.c[j], w.c[j]);
    to_msg(m, &w);
    mb8__wipe(&s, sizeof s);
    mb8__wipe(&w, sizeof w);
    mb8__wipe(u, sizeof u);
}

/* ---- ML-KEM (FIPS 203 §6) ---- */

#define EK_OFF (K * MB8__MLKEM_POLY_BYTES)     /* 1152: ek inside dk */
#define H_OFF (EK_OFF + MB8_MLKEM768_EK_BYTES) /* 2336: H(ek) */
#define Z_OFF (H_OFF + 32)                     /* 2368: z */

void mb8__mlkem768_keygen_rs_ref(uint8_t *ek, uint8_t *dk, const uint8_t rho[32],
                                 const uint8_t sigma[32], const uint8_t z[32])
{
    kpke_keygen_rs(ek, dk, rho, sigma);
    memcpy(dk + EK_OFF, ek, MB8_MLKEM768_EK_BYTES);
    mb8__sha3_256(dk + H_OFF, ek, MB8_MLKEM768_EK_BYTES, NULL, 0);
    memcpy(dk + Z_OFF, z, 32);
}

void mb8__mlkem768_keygen_ref(uint8_t *ek, uint8_t *dk, const uint8_t d[32], const uint8_t z[32])
{
    uint8_t rs[64], dk_in[33];

    memcpy(dk_in, d, 32);
    dk_in[32] = K; /* FIPS 203 Algorithm 13: (rho, sigma) = G(d || k) */
    mb8__sha3_512(rs, dk_in, 33, NULL, 0);
    mb8__mlkem768_keygen_rs_ref(ek, dk, rs, rs + 32, z);
    mb8__wipe(rs, sizeof rs);
    mb8__wipe(dk_in, sizeof dk_in);
}

void mb8__mlkem768_encaps_ref(uint8_t *ct, uint8_t ss[32], const uint8_t *ek, const uint8_t m[32])
{
    uint8_t h[32], kr[64];

    mb8__sha3_256(h, ek, MB8_MLKEM768_EK_BYTES, NULL, 0);
    mb8__sha3_512(kr, m, 32, h, 32); /* (K, r) = G(m || H(ek)) */
    kpke_encrypt(ct, ek, m, kr + 32);
    memcpy(ss, kr, 32);
    mb8__wipe(kr, sizeof kr);
}

unsigned mb8__mlkem768_decaps_ref(uint8_t ss[32], const uint8_t *ct, const uint8_t *dk)
{
    uint8_t h[32], m[32], kr[64], kbar[32], ct2[MB8_MLKEM768_CT_BYTES];
    uint32_t diff = 0, hd = 0;

    /* §7.3 hash check (public: dk's hash and ek are not secret) */
    mb8__sha3_256(h, dk + EK_OFF, MB8_MLKEM768_EK_BYTES, NULL, 0);
    for (unsigned i = 0; i < 32; i++)
        hd |= (uint32_t)(h[i] ^ dk[H_OFF + i]);
    if (hd != 0)
        return 0;

    kpke_decrypt(m, dk, ct);
    mb8__sha3_512(kr, m, 32, dk + H_OFF, 32);                           /* (K', r') = G(m' || h) */
    mb8__shake256(kbar, 32, dk + Z_OFF, 32, ct, MB8_MLKEM768_CT_BYTES); /* K_bar = J(z || c) */
    kpke_encrypt(ct2, dk + EK_OFF, m, kr + 32);
    for (unsigned i = 0; i < MB8_MLKEM768_CT_BYTES; i++)
        diff |= (uint32_t)(ct[i] ^ ct2[i]);
    /* keep K' when c == c', else K_bar: a mask from the OR of the differences */
    uint32_t dd = (uint32_t)mb8__value_barrier(diff);
    uint8_t keep = (uint8_t)(0u - ((dd - 1) >> 31)); /* diff < 256: 0xFF only when 0 */
    for (unsigned i = 0; i < 32; i++)
        ss[i] = (uint8_t)((kr[i] & keep) | (kbar[i] & (uint8_t)~keep));
    mb8__wipe(m, sizeof m);
    mb8__wipe(kr, sizeof kr);
    mb8__wipe(kbar, sizeof kbar);
    mb8__wipe(ct2, sizeof ct2);
    return 1;
}
