/*
 * bench/dudect_mlkem: dudect-style timing-leak test of mb8's ML-KEM-768 encapsulation on
 * the kernel the CPU selects (the AVX-512 one here; valgrind's memcheck checks the portable
 * kernel in CTest, ct_mlkem, but cannot run AVX-512). Method as bench/dudect_ecc.c
 * (Reparaz, Balasch, Verbauwhede, DATE 2017): two classes of secret input measured
 * interleaved in random order, Welch's t on cycle counts at several crops; |t| > 4.5 flags
 * a leak.
 *
 * 8 lanes per call and 1 lane per call (mlkem.c runs 1 or 2 lanes on the one-lane vector
 * path), the encapsulation keys fixed (8 different keys: rho and t are public,
 * and the matrix's rejection sampling depends on rho by design); the secret is the message
 * m: class 0 one fixed m in every lane, class 1 fresh random m per lane and call (every
 * measurement's m drawn before any timing).
 *
 * Usage: dudect_mlkem [MEASUREMENTS (20000)]   (pin it: taskset -c 0)
 * Exit status 0 when max |t| <= 4.5, 1 otherwise.
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
#include "mb8/mlkem.h"

static alignas(MB8_SCRATCH_ALIGN) uint8_t g_scratch[65536];

#define L MB8_LANES

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? (size_t)atol(argv[1]) : 20000;
    uint64_t *t = malloc(n * sizeof(*t)), *sorted = malloc(n * sizeof(*t));
    uint8_t *cls = malloc(n);
    uint8_t(*all)[L][32] = malloc(n * sizeof(*all));
    static uint8_t ek[L][MB8_MLKEM768_EK_BYTES], dk[L][MB8_MLKEM768_DK_BYTES], seed[L][64],
        fixed[32], msg[L][32], ct[L][MB8_MLKEM768_CT_BYTES], ss[L][32];
    const uint8_t *d[L], *z[L], *ekp[L], *mp[L];
    uint8_t *o1[L], *o2[L];

    if (!t || !sorted || !cls || !all || RAND_bytes(&seed[0][0], sizeof seed) != 1 ||
        RAND_bytes(fixed, 32) != 1 || RAND_bytes(cls, (int)n) != 1)
        return 2;
    for (int l = 0; l < L; l++) {
        d[l] = seed[l];
        z[l] = seed[l] + 32;
        o1[l] = ek[l];
        o2[l] = dk[l];
    }
    if (mb8_mlkem768_keygen(o1, o2, d, z) != 0)
        return 2;
    for (size_t i = 0; i < n; i++) {
        cls[i] &= 1;
        for (int l = 0; l < L; l++) {
            if (cls[i]) {
                if (RAND_bytes(all[i][l], 32) != 1)
                    return 2;
            } else {
                memcpy(all[i][l], fixed, 32);
            }
        }
    }
    printf("# dudect, ML-KEM-768 encapsulation kernel %s, %zu measurements (fixed vs random m)\n",
           mb8_cpu_has_ifma() ? "AVX-512" : "portable", n);
    double worst = 0;
    /* 8 lanes a call (the 8-lane path) and 1 lane (the one-lane vector path) */
    for (int used = 8; used >= 1; used -= 7) {
        for (int l = 0; l < L; l++) {
            ekp[l] = l < used ? ek[l] : NULL;
            mp[l] = msg[l];
            o1[l] = ct[l];
            o2[l] = ss[l];
        }
        for (size_t i = 0; i < n; i++) {
            memcpy(msg, all[i], sizeof msg);
            unsigned aux;
            _mm_lfence();
            uint64_t t0 = __rdtscp(&aux);
            (void)mb8_mlkem768_encaps(o1, o2, ekp, mp, g_scratch);
            t[i] = __rdtscp(&aux) - t0;
        }
        dudect_sort(sorted, t, n);
        double maxt = dudect_max_t(t, sorted, cls, n, 0);
        printf("mlkem768-encaps %d lane%s median %8llu cycles per call   max |t| = %5.2f  %s\n",
               used, used > 1 ? "s" : " ", (unsigned long long)sorted[n / 2], maxt,
               maxt > 4.5 ? "LEAK SUSPECTED" : "no leak detected");
        if (maxt > worst)
            worst = maxt;
    }
    free(t);
    free(sorted);
    free(cls);
    free(all);
    return worst > 4.5;
}
