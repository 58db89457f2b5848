/*
 * bench/mb8_mlkem: mb8's ML-KEM-768 (key generation, encapsulation with 1..8 lanes used,
 * decapsulation), and its Keccak against OpenSSL's EVP SHA-3 / SHAKE on ML-KEM's shapes
 * (SHAKE128 of 34 bytes squeezed to 504: one SampleNTT; SHA3-256 of an 1184-byte ek; the
 * SHAKE256 PRF of 33 bytes to 128), EVP with a fetched digest and a reused context.
 * Rounds alternate; the best round of each counts. ops/s per core of this thread's CPU
 * time. Which encapsulation kernel runs is printed (MB8_FORCE_PORTABLE=1: portable).
 *
 * Usage: mb8_mlkem_bench [SECONDS_PER_ROUND (0.5)] [ROUNDS (3)]
 * Pin it to one CPU (taskset -c 0) on a shared machine; compare ratios, not ops/s.
 */
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "mb8/cpu.h"
#include "mb8/mlkem.h"
#include "mlkem/keccak.h"

static alignas(MB8_SCRATCH_ALIGN) uint8_t g_scratch[65536];
static double secs = 0.5;
static int rounds = 3;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint8_t g_ek[8][MB8_MLKEM768_EK_BYTES], g_dk[8][MB8_MLKEM768_DK_BYTES];
static uint8_t g_ct[8][MB8_MLKEM768_CT_BYTES], g_ss[8][32], g_seed[8][96];
static uint8_t g_buf[2048], g_out[1024];

enum what { KG, ENC, DEC, K_SHAKE128, K_SHA3_EK, K_PRF, E_SHAKE128, E_SHA3_EK, E_PRF };

static EVP_MD *md_shake128, *md_shake256, *md_sha3_256;
static EVP_MD_CTX *g_mdctx;

static void evp(const EVP_MD *md, const uint8_t *in, size_t len, uint8_t *out, size_t olen)
{
    EVP_DigestInit_ex(g_mdctx, md, NULL);
    EVP_DigestUpdate(g_mdctx, in, len);
    if (olen == 32 && md == md_sha3_256)
        EVP_DigestFinal_ex(g_mdctx, out, NULL);
    else
        EVP_DigestFinalXOF(g_mdctx, out, olen);
}

/* operations per second (per lane-operation for the KEM) of one round */
static double run(enum what w, unsigned lanes)
{
    const uint8_t *a[8], *b[8], *c[8];
    uint8_t *o1[8], *o2[8];
    unsigned long ops = 0;
    for (unsigned i = 0; i < 8; i++) {
        int u = i < lanes;
        a[i] = u ? g_seed[i] : NULL;
        b[i] = g_seed[i] + 32;
        c[i] = u ? (w == DEC ? g_dk[i] : g_ek[i]) : NULL;
    }
    double t0 = now(), t;
    do {
        for (int r = 0; r < 16; r++) {
            switch (w) {
            case KG:
                for (unsigned i = 0; i < 8; i++) {
                    o1[i] = g_ek[i];
                    o2[i] = g_dk[i];
                }
                mb8_mlkem768_keygen(o1, o2, a, b);
                break;
            case ENC:
                for (unsigned i = 0; i < 8; i++) {
                    o1[i] = g_ct[i];
                    o2[i] = g_ss[i];
                    b[i] = g_seed[i] + 64;
                }
                mb8_mlkem768_encaps(o1, o2, c, b, g_scratch);
                break;
            case DEC: {
                const uint8_t *ct[8];
                for (unsigned i = 0; i < 8; i++) {
                    ct[i] = g_ct[i];
                    o2[i] = g_ss[i];
                }
                mb8_mlkem768_decaps(o2, ct, c);
                break;
            }
            case K_SHAKE128: {
                mb8__keccak_t k;
                mb8__keccak_init(&k, MB8__SHAKE128_RATE);
                mb8__keccak_absorb(&k, g_buf, 34);
                mb8__keccak_finalize(&k, MB8__SHAKE_DS);
                mb8__keccak_squeeze(&k, g_out, 504);
                break;
            }
            case K_SHA3_EK:
                mb8__sha3_256(g_out, g_buf, 1184, NULL, 0);
                break;
            case K_PRF:
                mb8__shake256(g_out, 128, g_buf, 33, NULL, 0);
                break;
            case E_SHAKE128:
                evp(md_shake128, g_buf, 34, g_out, 504);
                break;
            case E_SHA3_EK:
                evp(md_sha3_256, g_buf, 1184, g_out, 32);
                break;
            case E_PRF:
                evp(md_shake256, g_buf, 33, g_out, 128);
                break;
            }
            ops += (w == KG || w == ENC || w == DEC) ? lanes : 1;
        }
        t = now() - t0;
    } while (t < secs);
    return (double)ops / t;
}

static double best(enum what w, unsigned lanes)
{
    double b = 0;
    for (int r = 0; r < rounds; r++) {
        double v = run(w, lanes);
        if (v > b)
            b = v;
    }
    return b;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        secs = atof(argv[1]);
    if (argc > 2)
        rounds = atoi(argv[2]);
    md_shake128 = EVP_MD_fetch(NULL, "SHAKE128", NULL);
    md_shake256 = EVP_MD_fetch(NULL, "SHAKE256", NULL);
    md_sha3_256 = EVP_MD_fetch(NULL, "SHA3-256", NULL);
    g_mdctx = EVP_MD_CTX_new();
    for (unsigned i = 0; i < sizeof g_seed; i++)
        (&g_seed[0][0])[i] = (uint8_t)(i * 131 + 7);
    for (unsigned i = 0; i < sizeof g_buf; i++)
        g_buf[i] = (uint8_t)(i * 17);
    printf("mb8_mlkem_bench: encapsulation kernel %s\n",
           mb8_cpu_has_ifma() ? "AVX-512" : "portable");
    printf("keccak shape                 mb8 ops/s   OpenSSL EVP ops/s   mb8/EVP\n");
    const struct {
        const char *name;
        enum what m, e;
    } ks[] = {
        {"SHAKE128 34 -> 504 B", K_SHAKE128, E_SHAKE128},
        {"SHA3-256 of 1184 B", K_SHA3_EK, E_SHA3_EK},
        {"SHAKE256 33 -> 128 B", K_PRF, E_PRF},
    };
    for (unsigned i = 0; i < 3; i++) {
        double m = best(ks[i].m, 1), e = best(ks[i].e, 1);
        printf("%-26s %11.0f %19.0f %9.2f\n", ks[i].name, m, e, m / e);
    }
    run(KG, 8);
    printf("ML-KEM-768 keygen (portable)        %9.0f ops/s\n", best(KG, 8));
    run(ENC, 8);
    for (unsigned l = 1; l <= 8; l *= 2)
        printf("ML-KEM-768 encaps, %u lanes a call    %9.0f ops/s\n", l, best(ENC, l));
    printf("ML-KEM-768 decaps (portable)        %9.0f ops/s\n", best(DEC, 8));
    EVP_MD_CTX_free(g_mdctx);
    EVP_MD_free(md_shake128);
    EVP_MD_free(md_shake256);
    EVP_MD_free(md_sha3_256);
    return 0;
}
