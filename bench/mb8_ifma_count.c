/*
 * bench/mb8_ifma_count: 512-bit IFMA instructions per operation of mb8's elliptic-curve
 * kernels (X25519, P-256, P-384: ECDH, key generation, ECDSA signing), counted, and this
 * core's IFMA peak (bench/ifma_peak.h). Issue #19 asks for each kernel's share of the
 * peak: ops/s (bench/mb8_*_bench, 8 lanes) x IFMA per op / peak; bench/mb8.sh joins the
 * figures. (RSA's count is analytic, in bench/mb8_rsa.c.)
 *
 * Linked with mb8_count, mb8 compiled with bench/ifma_count.h force-included: every IFMA
 * intrinsic the kernel executes increments mb8_ifma_counted. One 8-lane call per
 * operation on valid inputs (random scalars, peer points made by the key generation);
 * the count is the call's total over 8. On a CPU without AVX-512 IFMA it says so and
 * exits 0 (the portable kernels use no IFMA).
 *
 * Output, one line per operation: "ifma CURVE OP IFMA_PER_OP", then "ifma_peak G_PER_S".
 */
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ifma_peak.h"
#include "mb8/cpu.h"
#include "mb8/p256.h"
#include "mb8/p384.h"
#include "mb8/x25519.h"

unsigned long long mb8_ifma_counted;

static alignas(MB8_SCRATCH_ALIGN) uint8_t g_scratch[1 << 17];

#define L MB8_LANES

static void fill(uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(seed * 131 + i * 29 + 7);
}

static void report(const char *curve, const char *op, unsigned long long before, mb8_status_t st)
{
    if (st != 0) {
        fprintf(stderr, "mb8_ifma_count: %s %s: status %08x\n", curve, op, (unsigned)st);
        exit(1);
    }
    printf("ifma %s %s %.0f\n", curve, op, (double)(mb8_ifma_counted - before) / L);
}

/* one curve of the P-256/P-384 shape; the scalars' top byte is kept small (below n) */
#define EC_CURVE(NAME, PFX, NBYTES, PBYTES)                                                        \
    static void count_##PFX(void)                                                                  \
    {                                                                                              \
        static uint8_t priv[L][NBYTES], k[L][NBYTES], dg[L][NBYTES], pub[L][PBYTES],               \
            sec[L][NBYTES], r[L][NBYTES], s[L][NBYTES];                                            \
        const uint8_t *pv[L], *kv[L], *dv[L], *pubv[L];                                            \
        uint8_t *pubo[L], *seco[L], *ro[L], *so[L];                                                \
        unsigned long long c;                                                                      \
        for (unsigned i = 0; i < L; i++) {                                                         \
            fill(priv[i], NBYTES, i + 1);                                                          \
            fill(k[i], NBYTES, i + 101);                                                           \
            fill(dg[i], NBYTES, i + 201);                                                          \
            priv[i][0] = k[i][0] = 0x11;                                                           \
            pv[i] = priv[i], kv[i] = k[i], dv[i] = dg[i], pubv[i] = pub[i];                        \
            pubo[i] = pub[i], seco[i] = sec[i], ro[i] = r[i], so[i] = s[i];                        \
        }                                                                                          \
        c = mb8_ifma_counted;                                                                      \
        report(NAME, "keygen", c, mb8_##PFX##_public_key(pubo, pv, g_scratch));                    \
        c = mb8_ifma_counted;                                                                      \
        report(NAME, "ECDH", c, mb8_##PFX##_ecdh(seco, pv, pubv, g_scratch));                      \
        c = mb8_ifma_counted;                                                                      \
        report(NAME, "ECDSA_sign", c, mb8_##PFX##_ecdsa_sign(ro, so, dv, pv, kv, g_scratch));      \
    }

EC_CURVE("p256", p256, MB8_P256_SCALAR_BYTES, MB8_P256_POINT_BYTES)
EC_CURVE("p384", p384, MB8_P384_SCALAR_BYTES, MB8_P384_POINT_BYTES)

static void count_x25519(void)
{
    static uint8_t priv[L][MB8_X25519_BYTES], pub[L][MB8_X25519_BYTES], sec[L][MB8_X25519_BYTES];
    const uint8_t *pv[L], *pubv[L];
    uint8_t *pubo[L], *seco[L];
    unsigned long long c;

    for (unsigned i = 0; i < L; i++) {
        fill(priv[i], MB8_X25519_BYTES, i + 1);
        pv[i] = priv[i], pubv[i] = pub[i], pubo[i] = pub[i], seco[i] = sec[i];
    }
    c = mb8_ifma_counted;
    report("x25519", "keygen", c, mb8_x25519_public_key(pubo, pv, g_scratch));
    c = mb8_ifma_counted;
    report("x25519", "derive", c, mb8_x25519(seco, pv, pubv, g_scratch));
}

int main(void)
{
    if (!mb8_cpu_has_ifma()) {
        printf("# no AVX-512 IFMA on this CPU: nothing to count\n");
        return 0;
    }
    if (mb8_p256_scratch_size() > sizeof g_scratch || mb8_p384_scratch_size() > sizeof g_scratch ||
        mb8_x25519_scratch_size() > sizeof g_scratch) {
        fprintf(stderr, "mb8_ifma_count: scratch too small\n");
        return 1;
    }
    count_x25519();
    count_p256();
    count_p384();
    printf("ifma_peak %.4g\n", ifma_peak_per_s());
    return 0;
}
