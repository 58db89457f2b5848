/*
 * bench/dudect_rsa: a dudect-style timing-leak test of mb8_rsa_private_crt on the kernel the
 * CPU selects (the AVX-512 IFMA one here; valgrind's memcheck checks the portable one in
 * CTest, but cannot run AVX-512).
 *
 * Method (Reparaz, Balasch, Verbauwhede, "Dude, is my code constant time?", DATE 2017):
 * two classes of secret input, measured interleaved in random order, then Welch's t-test on
 * the cycle counts (after cropping at several percentiles to drop interrupts). |t| > 4.5
 * is taken as evidence of a leak; below, no leak was detected at this sample size.
 *   class 0: one fixed RSA-2048 key (the first of tests/diff/rsa_keys/rsa2048.pem) in all
 *            8 lanes;
 *   class 1: the same n, p, q, qInv, but fresh random secret exponents dP < p and dQ < q per
 *            measurement (so the fault check also fails in every lane: output withheld).
 * The input and the blinding pair are the same fixed values in both classes.
 *
 * Usage: dudect_rsa KEYS_DIR [MEASUREMENTS (4000)]     (pin it: taskset -c 0)
 * Exit status 0 when max |t| <= 4.5, 1 otherwise.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>

#include "mb8/cpu.h"
#include "mb8/rsa.h"

#define BITS 2048
#define LEN (BITS / 8)
#define HALF (LEN / 2)
#define NCROP 5

static int bn_param(const EVP_PKEY *pk, const char *name, uint8_t *out, size_t len)
{
    BIGNUM *bn = NULL;
    int ok = EVP_PKEY_get_bn_param(pk, name, &bn) && BN_bn2binpad(bn, out, (int)len) == (int)len;

    BN_clear_free(bn);
    return ok;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* Welch's t of the two classes, keeping only measurements below `limit` cycles. */
static double welch_t(const uint64_t *t, const uint8_t *cls, size_t n, uint64_t limit)
{
    double mean[2] = {0}, m2[2] = {0};
    double cnt[2] = {0};

    for (size_t i = 0; i < n; i++) { /* Welford's online mean and variance */
        if (t[i] > limit)
            continue;
        int c = cls[i];
        double x = (double)t[i], d = x - mean[c];
        cnt[c] += 1;
        mean[c] += d / cnt[c];
        m2[c] += d * (x - mean[c]);
    }
    if (cnt[0] < 2 || cnt[1] < 2)
        return 0;
    double v0 = m2[0] / (cnt[0] - 1), v1 = m2[1] / (cnt[1] - 1);
    return (mean[0] - mean[1]) / sqrt(v0 / cnt[0] + v1 / cnt[1]);
}

int main(int argc, char **argv)
{
    size_t n = argc > 2 ? (size_t)atol(argv[2]) : 4000;
    uint8_t nb[LEN], e[4], p[HALF], q[HALF], dp[HALF], dq[HALF], qi[HALF], rdp[HALF], rdq[HALF];
    uint8_t in[LEN], out[8][LEN], bl[LEN], ub[LEN];
    char path[4096];

    if (argc < 2) {
        fprintf(stderr, "usage: %s KEYS_DIR [MEASUREMENTS]\n", argv[0]);
        return 2;
    }
    snprintf(path, sizeof(path), "%s/rsa2048.pem", argv[1]);
    FILE *f = fopen(path, "r");
    EVP_PKEY *pk = f ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : NULL;
    if (f)
        fclose(f);
    if (pk == NULL || !bn_param(pk, OSSL_PKEY_PARAM_RSA_N, nb, LEN) ||
        !bn_param(pk, OSSL_PKEY_PARAM_RSA_E, e, 4) ||
        !bn_param(pk, OSSL_PKEY_PARAM_RSA_FACTOR1, p, HALF) ||
        !bn_param(pk, OSSL_PKEY_PARAM_RSA_FACTOR2, q, HALF) ||
        !bn_param(pk, OSSL_PKEY_PARAM_RSA_EXPONENT1, dp, HALF) ||
        !bn_param(pk, OSSL_PKEY_PARAM_RSA_EXPONENT2, dq, HALF) ||
        !bn_param(pk, OSSL_PKEY_PARAM_RSA_COEFFICIENT1, qi, HALF)) {
        fprintf(stderr, "%s: cannot read the first key\n", path);
        return 2;
    }
    /* every measurement's key is prepared before any timing (as dudect prepares its
     * inputs), class 0's as copies of the fixed key: both classes then do the same work
     * around the measured call */
    size_t ksz = mb8_rsa_key_size(BITS);
    mb8_rsa_key_t *k0 = malloc(ksz);
    unsigned char *keys = malloc(n * ksz);
    void *scratch = aligned_alloc(64, (mb8_rsa_scratch_size(BITS) + 63) / 64 * 64);
    uint64_t *t = malloc(n * sizeof(*t)), *sorted = malloc(n * sizeof(*t));
    uint8_t *cls = malloc(n);
    if (!k0 || !keys || !scratch || !t || !sorted || !cls ||
        mb8_rsa_key_init(k0, BITS, nb, e, 4, p, q, dp, dq, qi) != 0)
        /* cppcheck-suppress memleak ; main returns, the process exits (a command-line tool) */
        return 2;
    memset(in, 0x5A, LEN);
    in[0] = 0x01;
    memset(bl, 0, LEN);
    bl[LEN - 1] = 1;
    memcpy(ub, bl, LEN);
    if (RAND_bytes(cls, (int)n) != 1)
        /* cppcheck-suppress memleak ; main returns, the process exits */
        return 2;
    const uint8_t *inp[8], *blp[8], *ubp[8];
    uint8_t *outp[8];
    for (int i = 0; i < 8; i++) {
        inp[i] = in;
        blp[i] = bl;
        ubp[i] = ub;
        outp[i] = out[i];
    }
    for (size_t i = 0; i < n; i++) {
        mb8_rsa_key_t *ki = (mb8_rsa_key_t *)(keys + i * ksz);
        cls[i] &= 1;
        if (cls[i]) { /* fresh random secret exponents below p and q */
            if (RAND_bytes(rdp, HALF) != 1 || RAND_bytes(rdq, HALF) != 1)
                return 2;
            rdp[0] &= 0x7F;
            rdq[0] &= 0x7F;
            if (mb8_rsa_key_init(ki, BITS, nb, e, 4, p, q, rdp, rdq, qi) != 0)
                return 2;
        } else {
            memcpy(ki, k0, ksz);
        }
    }
    for (size_t i = 0; i < n; i++) {
        const mb8_rsa_key_t *kp[8];
        for (int l = 0; l < 8; l++)
            kp[l] = (const mb8_rsa_key_t *)(keys + i * ksz);
        unsigned aux;
        _mm_lfence();
        uint64_t t0 = __rdtscp(&aux);
        (void)mb8_rsa_private_crt(outp, inp, kp, blp, ubp, scratch);
        uint64_t t1 = __rdtscp(&aux);
        t[i] = t1 - t0;
    }
    memcpy(sorted, t, n * sizeof(*t));
    qsort(sorted, n, sizeof(*t), cmp_u64);
    static const double pct[NCROP] = {1.0, 0.99, 0.95, 0.90, 0.75};
    double maxt = 0;
    printf("# dudect RSA-2048, kernel %s, %zu measurements (fixed vs random dP/dQ)\n",
           mb8_cpu_has_ifma() ? "AVX-512 IFMA" : "portable", n);
    printf("# median %llu cycles per 8-lane batch\n", (unsigned long long)sorted[n / 2]);
    for (int c = 0; c < NCROP; c++) {
        uint64_t lim = sorted[(size_t)((double)(n - 1) * pct[c])];
        double tv = welch_t(t, cls, n, lim);
        printf("crop at %3.0f%% (<= %llu cycles): t = %+.2f\n", pct[c] * 100,
               (unsigned long long)lim, tv);
        if (fabs(tv) > maxt)
            maxt = fabs(tv);
    }
    printf("max |t| = %.2f: %s\n", maxt,
           maxt > 4.5 ? "LEAK SUSPECTED (> 4.5)" : "no leak detected (<= 4.5)");
    mb8_rsa_key_dispose(k0);
    for (size_t i = 0; i < n; i++)
        mb8_rsa_key_dispose((mb8_rsa_key_t *)(keys + i * ksz));
    EVP_PKEY_free(pk);
    return maxt > 4.5;
}
