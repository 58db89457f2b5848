/*
 * bench/dudect_ecc: dudect-style timing-leak tests of mb8's elliptic-curve kernels on the
 * kernel the CPU selects (AVX-512 IFMA here; valgrind's memcheck checks the portable
 * kernels in CTest but cannot run AVX-512). Method as bench/dudect_rsa.c (Reparaz,
 * Balasch, Verbauwhede, DATE 2017): two classes of secret input measured interleaved in
 * random order, Welch's t on cycle counts at several crops; |t| > 4.5 flags a leak.
 *
 * Tests (8 lanes per call; class 0 = one fixed secret in every lane, class 1 = fresh
 * random secrets per call; public inputs fixed):
 *   p256-ecdh     secret scalar d, peer point fixed (the variable-base ladder)
 *   p256-keygen   secret scalar d (the fixed-base comb)
 *   p256-ecdsa    secret nonce k (comb, inversion mod n), key and digest fixed
 *   x25519        secret scalar, peer u fixed (the Montgomery ladder)
 *   x25519-keygen secret scalar
 *   p384-ecdh, p384-keygen, p384-ecdsa   as the P-256 tests, with 48-byte secrets
 *
 * Usage: dudect_ecc [MEASUREMENTS per test (20000)]   (pin it: taskset -c 0)
 * Exit status 0 when every test's max |t| <= 4.5, 1 otherwise.
 */
#include <math.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

#include <openssl/rand.h>

#include "dudect.h"
#include "mb8/cpu.h"
#include "mb8/p256.h"
#include "mb8/p384.h"
#include "mb8/x25519.h"

/* mb8's scratch for the elliptic-curve calls (mb8/status.h; one call at a time) */
static alignas(MB8_SCRATCH_ALIGN) uint8_t g_scratch[65536];

#define L MB8_LANES

enum test {
    T_ECDH,
    T_KEYGEN,
    T_ECDSA,
    T_X25519,
    T_X25519_KEYGEN,
    T_P384_ECDH,
    T_P384_KEYGEN,
    T_P384_ECDSA,
    T_N
};
static const char *const names[T_N] = {"p256-ecdh",     "p256-keygen", "p256-ecdsa",  "x25519",
                                       "x25519-keygen", "p384-ecdh",   "p384-keygen", "p384-ecdsa"};
/* The P-256 and P-384 tests run the same calls on their curve's entry points. */
static const struct ec_ops {
    mb8_status_t (*ecdh)(uint8_t *const out[L], const uint8_t *const priv[L],
                         const uint8_t *const peer[L], void *scratch);
    mb8_status_t (*public_key)(uint8_t *const out[L], const uint8_t *const priv[L], void *scratch);
    mb8_status_t (*ecdsa_sign)(uint8_t *const sig_r[L], uint8_t *const sig_s[L],
                               const uint8_t *const digest[L], const uint8_t *const priv[L],
                               const uint8_t *const nonce[L], void *scratch);
} ec[2] = {{mb8_p256_ecdh, mb8_p256_public_key, mb8_p256_ecdsa_sign},
           {mb8_p384_ecdh, mb8_p384_public_key, mb8_p384_ecdsa_sign}};
#define SB 48 /* secret buffer bytes: P-384's; P-256 and X25519 use the first 32 */

/* The P-256 generator, uncompressed: a valid fixed peer point. */
static const uint8_t G[65] = {0x04, 0x6B, 0x17, 0xD1, 0xF2, 0xE1, 0x2C, 0x42, 0x47, 0xF8, 0xBC,
                              0xE6, 0xE5, 0x63, 0xA4, 0x40, 0xF2, 0x77, 0x03, 0x7D, 0x81, 0x2D,
                              0xEB, 0x33, 0xA0, 0xF4, 0xA1, 0x39, 0x45, 0xD8, 0x98, 0xC2, 0x96,
                              0x4F, 0xE3, 0x42, 0xE2, 0xFE, 0x1A, 0x7F, 0x9B, 0x8E, 0xE7, 0xEB,
                              0x4A, 0x7C, 0x0F, 0x9E, 0x16, 0x2B, 0xCE, 0x33, 0x57, 0x6B, 0x31,
                              0x5E, 0xCE, 0xCB, 0xB6, 0x40, 0x68, 0x37, 0xBF, 0x51, 0xF5};

/* The P-384 generator, uncompressed: the fixed peer point of p384-ecdh. */
static const uint8_t G384[97] = {
    0x04, 0xaa, 0x87, 0xca, 0x22, 0xbe, 0x8b, 0x05, 0x37, 0x8e, 0xb1, 0xc7, 0x1e, 0xf3,
    0x20, 0xad, 0x74, 0x6e, 0x1d, 0x3b, 0x62, 0x8b, 0xa7, 0x9b, 0x98, 0x59, 0xf7, 0x41,
    0xe0, 0x82, 0x54, 0x2a, 0x38, 0x55, 0x02, 0xf2, 0x5d, 0xbf, 0x55, 0x29, 0x6c, 0x3a,
    0x54, 0x5e, 0x38, 0x72, 0x76, 0x0a, 0xb7, 0x36, 0x17, 0xde, 0x4a, 0x96, 0x26, 0x2c,
    0x6f, 0x5d, 0x9e, 0x98, 0xbf, 0x92, 0x92, 0xdc, 0x29, 0xf8, 0xf4, 0x1d, 0xbd, 0x28,
    0x9a, 0x14, 0x7c, 0xe9, 0xda, 0x31, 0x13, 0xb5, 0xf0, 0xb8, 0xc0, 0x0a, 0x60, 0xb1,
    0xce, 0x1d, 0x7e, 0x81, 0x9d, 0x7a, 0x43, 0x1d, 0x7c, 0x90, 0xea, 0x0e, 0x5f};

/* A random secret in the first len bytes of s (32 or 48), below the group order: top bit
 * clear, nonzero. */
static void rand_scalar(uint8_t s[SB], int len)
{
    memset(s, 0, SB);
    if (RAND_bytes(s, len) != 1)
        abort();
    s[0] &= 0x7F;
    s[len - 1] |= 1;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? (size_t)atol(argv[1]) : 20000;
    uint64_t *t = malloc(n * sizeof(*t)), *sorted = malloc(n * sizeof(*t));
    uint8_t *cls = malloc(n);
    /* every measurement's secrets, drawn before any timing (as dudect prepares its
     * inputs): both classes then do exactly the same work around the measured call */
    uint8_t(*all)[L][SB] = malloc(n * sizeof(*all));
    static uint8_t fixed[L][SB], secret[L][SB], digest[L][SB], priv[L][SB], out[L][97], out2[L][SB],
        peer[L][65], peer384[L][97], u[L][32], fixed384[L][SB], priv384[L][SB];
    int worst_fail = 0;

    if (!t || !sorted || !cls || !all)
        return 2;
    printf("# dudect, kernel %s, %zu measurements per test (fixed vs random secrets)\n",
           mb8_cpu_has_ifma() ? "AVX-512 IFMA" : "portable", n);
    for (int l = 0; l < L; l++) {
        rand_scalar(fixed[l], 32);
        memcpy(fixed[l], fixed[0], SB); /* one fixed secret in every lane */
        rand_scalar(fixed384[l], 48);
        memcpy(fixed384[l], fixed384[0], SB);
        rand_scalar(priv[l], 32);
        rand_scalar(priv384[l], 48);
        memset(digest[l], 0x3C, SB);
        memcpy(peer[l], G, 65);
        memcpy(peer384[l], G384, 97);
        memset(u[l], 0, 32);
        u[l][0] = 9;
    }
    for (int test = 0; test < T_N; test++) {
        int p384 = test >= T_P384_ECDH;
        if (RAND_bytes(cls, (int)n) != 1)
            return 2;
        for (size_t i = 0; i < n; i++) {
            cls[i] &= 1;
            for (int l = 0; l < L; l++) {
                if (cls[i])
                    rand_scalar(all[i][l], p384 ? 48 : 32);
                else
                    memcpy(all[i][l], p384 ? fixed384[l] : fixed[l], SB);
            }
        }
        for (size_t i = 0; i < n; i++) {
            const uint8_t *sp[L], *pp[L], *dp[L], *kp[L];
            uint8_t *op[L], *op2[L];
            for (int l = 0; l < L; l++) {
                memcpy(secret[l], all[i][l], SB);
                sp[l] = secret[l];
                op[l] = out[l];
                op2[l] = out2[l];
                dp[l] = digest[l];
                kp[l] = p384 ? priv384[l] : priv[l];
                pp[l] = test == T_X25519 ? u[l] : p384 ? peer384[l] : peer[l];
            }
            unsigned aux;
            _mm_lfence();
            uint64_t t0 = __rdtscp(&aux);
            const struct ec_ops *c = &ec[p384];
            switch (p384 ? test - T_P384_ECDH + T_ECDH : test) {
            case T_ECDH:
                (void)c->ecdh(op, sp, pp, g_scratch);
                break;
            case T_KEYGEN:
                (void)c->public_key(op, sp, g_scratch);
                break;
            case T_ECDSA: /* the nonce is the secret under test */
                (void)c->ecdsa_sign(op, op2, dp, kp, sp, g_scratch);
                break;
            case T_X25519:
                (void)mb8_x25519(op, sp, pp, g_scratch);
                break;
            default:
                (void)mb8_x25519_public_key(op, sp, g_scratch);
                break;
            }
            uint64_t t1 = __rdtscp(&aux);
            t[i] = t1 - t0;
        }
        dudect_sort(sorted, t, n);
        double maxt = dudect_max_t(t, sorted, cls, n, 0);
        printf("%-14s median %8llu cycles per call   max |t| = %5.2f  %s\n", names[test],
               (unsigned long long)sorted[n / 2], maxt,
               maxt > 4.5 ? "LEAK SUSPECTED" : "no leak detected");
        worst_fail |= maxt > 4.5;
    }
    return worst_fail;
}
