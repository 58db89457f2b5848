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

#include "dudect.h"
#include "rsa_key_parts.h"
#include "mb8/cpu.h"
#include "mb8/rsa.h"

#define BITS 2048
#define LEN (BITS / 8)
#define HALF (LEN / 2)

int main(int argc, char **argv)
{
    size_t n = argc > 2 ? (size_t)atol(argv[2]) : 4000;
    struct rsa_key_parts key;
    uint8_t rdp[HALF], rdq[HALF];
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
    if (!rsa_key_parts_get(pk, BITS, &key)) {
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
        mb8_rsa_key_init(k0, BITS, key.n, key.e, 4, key.p, key.q, key.dp, key.dq, key.qi) != 0)
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
            if (mb8_rsa_key_init(ki, BITS, key.n, key.e, 4, key.p, key.q, rdp, rdq, key.qi) != 0)
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
    dudect_sort(sorted, t, n);
    printf("# dudect RSA-2048, kernel %s, %zu measurements (fixed vs random dP/dQ)\n",
           mb8_cpu_has_ifma() ? "AVX-512 IFMA" : "portable", n);
    printf("# median %llu cycles per 8-lane batch\n", (unsigned long long)sorted[n / 2]);
    double maxt = dudect_max_t(t, sorted, cls, n, 1);
    printf("max |t| = %.2f: %s\n", maxt,
           maxt > 4.5 ? "LEAK SUSPECTED (> 4.5)" : "no leak detected (<= 4.5)");
    mb8_rsa_key_dispose(k0);
    for (size_t i = 0; i < n; i++)
        mb8_rsa_key_dispose((mb8_rsa_key_t *)(keys + i * ksz));
    EVP_PKEY_free(pk);
    return maxt > 4.5;
}
