/*
 * Internal to mb8/src/rsa: radix-2^52 big numbers (uint64_t limbs, least significant
 * first, each limb < 2^52 when normalised) and the key layout shared by rsa.c and the
 * kernels. Every helper here runs in time that depends only on its limb counts.
 */
#ifndef MB8_RSA_BN52_H
#define MB8_RSA_BN52_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../common/ct.h"
#include "mb8/rsa.h"

#define BN52_BITS 52
#define BN52_MASK ((UINT64_C(1) << BN52_BITS) - 1)

#define MB8__RSA_MAGIC UINT64_C(0x6d62387273616b31) /* "mb8rsak1" */
#define MB8__RSA_WIN 5 /* the portable kernel's fixed window: 2^5 = 32 table entries */

/*
 * The key: a header, then the limb arrays at fixed offsets (in limbs, H = half limbs,
 * N = 2H): n[N] rrn[N] e[N] p[H] q[H] rrp[H] rrq[H] dp[H] dq[H] qinvr[H].
 * rr* = R^2 mod m with R = 2^(52*limbs of m); qinvr = qInv * R mod p (Montgomery form).
 */
struct mb8_rsa_key {
    uint64_t magic;
    uint32_t bits;   /* modulus bits: 2048, 3072 or 4096 */
    uint32_t h;      /* limbs of a CRT half */
    uint32_t e_bits; /* bit length of e (public) */
    uint32_t pad_;
    uint64_t k0n, k0p, k0q; /* -m^-1 mod 2^52 */
    uint64_t limb[];
};

#define MB8__RSA_KEY_LIMBS(h) (13u * (size_t)(h))

/* The key's limb arrays: mb8__rsa_<name>(k) points at limb off * h (the layout above). */
#define MB8__RSA_KEY_ARRAYS(X)                                                                     \
    X(n, 0) X(rrn, 2) X(e, 4) X(p, 6) X(q, 7) X(rrp, 8) X(rrq, 9) X(dp, 10) X(dq, 11) X(qinvr, 12)
#define MB8__RSA_KEY_ARRAY(name, off)                                                              \
    static inline uint64_t *mb8__rsa_##name(const mb8_rsa_key_t *k)                                \
    {                                                                                              \
        return (uint64_t *)k->limb + k->h * (off);                                                 \
    }
MB8__RSA_KEY_ARRAYS(MB8__RSA_KEY_ARRAY)

/** Half limbs for a supported modulus size, else 0. */
static inline unsigned mb8__rsa_half_limbs(unsigned bits)
{
    switch (bits) {
    case 2048:
        return 20;
    case 3072:
        return 30;
    case 4096:
        return 40;
    default:
        return 0;
    }
}

/*
 * A lane's workspace (in limbs, h = half limbs): m, c, s, t1, t2, sr, prod (2h each), then
 * mp, mq, dd, hh (h each): MB8__RSA_WS_LANE(h) limbs used by mb8__rsa_lane_pre/post; the
 * portable kernel's exponentiation workspace (38h) follows it.
 */
#define MB8__RSA_WS_M(h) ((size_t)0)
#define MB8__RSA_WS_C(h) ((size_t)2 * (h))
#define MB8__RSA_WS_S(h) ((size_t)4 * (h))
#define MB8__RSA_WS_T1(h) ((size_t)6 * (h))
#define MB8__RSA_WS_T2(h) ((size_t)8 * (h))
#define MB8__RSA_WS_SR(h) ((size_t)10 * (h))
#define MB8__RSA_WS_PROD(h) ((size_t)12 * (h))
#define MB8__RSA_WS_MP(h) ((size_t)14 * (h))
#define MB8__RSA_WS_MQ(h) ((size_t)15 * (h))
#define MB8__RSA_WS_LANE(h) ((size_t)18 * (h))
/** Limbs of scratch the portable kernel uses for one lane with half size h. */
#define MB8__RSA_LANE_SCRATCH(h) ((size_t)(h) * (2u * 12u + 32u + 12u))

/** All ones when x == 0, else 0. Constant time (the barrier keeps the compiler from
 * turning the mask back into a branch). */
static inline uint64_t bn52_is_zero_mask(uint64_t x)
{
    return mb8__value_barrier(((x | (0 - x)) >> 63) - 1);
}

/* Conversions: big-endian bytes <-> limbs; 8*len <= 52*nl. The value must fit. */
void mb8__bn52_from_be(uint64_t *r, size_t nl, const uint8_t *in, size_t len);
void mb8__bn52_to_be(uint8_t *out, size_t len, const uint64_t *a, size_t nl);

/* r = a - b over n limbs; returns the borrow (1 when a < b). r may alias a or b. */
uint64_t mb8__bn52_sub(uint64_t *r, const uint64_t *a, const uint64_t *b, size_t n);
/* a -= m when a >= m (by mask). Requires a < 2m for a result < m. */
void mb8__bn52_csub(uint64_t *a, const uint64_t *m, size_t n);
/* r = a * b (na + nb limbs, normalised). r must not alias a or b. */
void mb8__bn52_mul(uint64_t *r, const uint64_t *a, size_t na, const uint64_t *b, size_t nb);
/* -m0^-1 mod 2^52 for odd m0. */
uint64_t mb8__bn52_k0(uint64_t m0);
/* r = R^2 mod m, R = 2^(52n); m odd, top limb leaves 1 bit of headroom. */
void mb8__bn52_rr(uint64_t *r, const uint64_t *m, size_t n);

/*
 * The limb counts the kernels have specialised code for (n is public): the CRT halves of
 * 2048-, 3072- and 4096-bit keys, and with them the full moduli of the mod-n steps (40 is
 * both). X-macros: X(N, ...) for each count N, the other arguments passed on.
 */
#define MB8__RSA_HALF_SIZES(X, ...) X(20, __VA_ARGS__) X(30, __VA_ARGS__) X(40, __VA_ARGS__)
#define MB8__RSA_ALL_SIZES(X, ...)                                                                 \
    MB8__RSA_HALF_SIZES(X, __VA_ARGS__) X(60, __VA_ARGS__) X(80, __VA_ARGS__)

/*
 * Almost-Montgomery multiplication: r = a*b*2^(-52n) mod m, r < 2m given a, b < 2m and
 * 4m < 2^(52n). r must not alias a or b (a may equal b). Dispatches on n to rsa_ref.c's
 * specialisations (mb8__amm52x20_ref ..., MB8__RSA_ALL_SIZES).
 */
void mb8__amm52_ref(uint64_t *r, const uint64_t *a, const uint64_t *b, const uint64_t *m,
                    uint64_t k0, size_t n);

/*
 * Almost-Montgomery squaring: r = a^2 * 2^(-52n) mod m, r < 2m given a < 2m; t is 2n limbs of
 * workspace (left holding secrets: the caller wipes it). r must not alias a or t. Dispatches
 * on n as mb8__amm52_ref (MB8__RSA_HALF_SIZES).
 */
void mb8__ams52_ref(uint64_t *r, const uint64_t *a, const uint64_t *m, uint64_t k0, uint64_t *t,
                    size_t n);

/*
 * The per-lane steps around the two CRT exponentiations, shared by the kernels. ws is the
 * lane's workspace (MB8__RSA_WS_LANE(h) limbs, layout above).
 * mb8__rsa_lane_pre: reads in (bits/8 bytes) into m, sets c = m * blind mod n (or m when
 * blind is NULL); returns the all-ones mask when in < n, else 0 (constant time).
 * mb8__rsa_lane_post: from mp = c^dP mod p and mq = c^dQ mod q (fully reduced, in ws):
 * Garner, unblinding, the fault check s^e == m, and the output (zeros unless in_ok and
 * the check pass); returns the lane's status nibble.
 */
uint64_t mb8__rsa_lane_pre(uint64_t *ws, const uint8_t *in, const mb8_rsa_key_t *k,
                           const uint8_t *blind);
unsigned mb8__rsa_lane_post(uint8_t *out, const mb8_rsa_key_t *k, const uint8_t *unblind,
                            uint64_t in_ok, uint64_t *ws);
/* The parts of mb8__rsa_lane_post, for kernels that vectorise the steps between them:
 * mb8__rsa_garner sets s (2h limbs, < n) from mp and mq; mb8__rsa_finish compares se (the
 * fault check's s^e mod n, fully reduced) with m and writes the output and status. */
void mb8__rsa_garner(const mb8_rsa_key_t *k, uint64_t *ws);
unsigned mb8__rsa_finish(uint8_t *out, const mb8_rsa_key_t *k, uint64_t in_ok, const uint64_t *se,
                         uint64_t *ws);
/* The w-bit window of d (n limbs) at bit pos; pos public, the value secret. */
unsigned mb8__rsa_window(const uint64_t *d, size_t n, size_t pos, unsigned w);

/*
 * A kernel of mb8_rsa_private_crt: computes the lanes set in `lanes` (bit i = lane i; for
 * those in/out/key are valid and of one size). Returns the status bits of those lanes (OK,
 * BAD_INPUT, VERIFY_FAIL); other lanes' nibbles are 0.
 */
typedef mb8_status_t
mb8__rsa_kernel_fn(uint8_t *const out[MB8_LANES], const uint8_t *const in[MB8_LANES],
                   const mb8_rsa_key_t *const key[MB8_LANES], const uint8_t *const blind[MB8_LANES],
                   const uint8_t *const unblind[MB8_LANES], uint64_t *scratch, unsigned lanes);

/* The portable kernel: the lanes one after another. */
mb8__rsa_kernel_fn mb8__rsa_private_crt_ref;

/*
 * The AVX-512 IFMA kernel (rsa_ifma.c): all 8 lanes at once; only called when
 * mb8_cpu_has_ifma(). Scratch: the mb8_rsa_scratch_size() bytes (it uses
 * mb8__rsa_ifma_scratch_limbs(h) limbs of them).
 */
mb8__rsa_kernel_fn mb8__rsa_private_crt_ifma;
size_t mb8__rsa_ifma_scratch_limbs(size_t h);
#endif
