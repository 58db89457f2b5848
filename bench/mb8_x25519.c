/*
 * bench/mb8_x25519: mb8's X25519 (derive and key generation) against OpenSSL's, in one
 * process.
 *
 * mb8_x25519 (derive) and mb8_x25519_public_key (keygen) with 1..8 lanes used per call (the
 * others NULL), against OpenSSL's EVP X25519: EVP_PKEY_derive on a prepared context (what
 * `openssl speed ecdhx25519` times) and EVP_PKEY_keygen (random private key + public key).
 * Rounds alternate mb8 and OpenSSL; the best round of each counts. ops/s per core.
 * Which mb8 kernel runs is printed (MB8_FORCE_PORTABLE=1 selects the portable one).
 *
 * Usage: mb8_x25519_bench [SECONDS_PER_ROUND (0.5)] [ROUNDS (3)]
 * Time is this thread's CPU time (CLOCK_THREAD_CPUTIME_ID). Pin it to one CPU
 * (taskset -c 0) on a shared machine; compare the ratios, not ops/s.
 */
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "mb8/cpu.h"
#include "mb8/x25519.h"

/* mb8's scratch for the elliptic-curve calls (mb8/status.h; one call at a time) */
static alignas(MB8_SCRATCH_ALIGN) uint8_t g_scratch[65536];

#define N MB8_X25519_BYTES

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double secs = 0.5;
static int rounds = 3;

static uint8_t g_k[MB8_LANES][N], g_u[MB8_LANES][N], g_o[MB8_LANES][N];

/* ops/s of mb8 with `lanes` lanes used, one round; kg selects key generation */
static double mb8_round(unsigned lanes, int kg)
{
    const uint8_t *k[MB8_LANES], *u[MB8_LANES];
    uint8_t *o[MB8_LANES];
    unsigned long ops = 0;
    double t0, t;

    for (unsigned i = 0; i < MB8_LANES; i++) {
        k[i] = i < lanes ? g_k[i] : NULL;
        u[i] = g_u[i];
        o[i] = g_o[i];
    }
    t0 = now();
    do {
        mb8_status_t st =
            kg ? mb8_x25519_public_key(o, k, g_scratch) : mb8_x25519(o, k, u, g_scratch);
        if (!mb8_status_all_ok(st)) {
            fprintf(stderr, "mb8 batch failed: %08x\n", st);
            exit(1);
        }
        ops += lanes;
    } while ((t = now() - t0) < secs);
    return ops / t;
}

/* One OpenSSL operation on ctx: a key generation (kg) or a derivation; 1 on success. */
static int ossl_op(EVP_PKEY_CTX *ctx, int kg)
{
    size_t len = N;
    EVP_PKEY *pk = NULL;
    int ok = kg ? EVP_PKEY_keygen(ctx, &pk) == 1 : EVP_PKEY_derive(ctx, g_o[0], &len) == 1;

    EVP_PKEY_free(pk);
    return ok;
}

/* ops/s of OpenSSL, one round: key generation (kg) or derivation on ctx */
static double ossl_round(EVP_PKEY_CTX *ctx, int kg)
{
    unsigned long ops = 0;
    double t0 = now(), t;

    do {
        if (!ossl_op(ctx, kg)) {
            fprintf(stderr, "%s failed\n", kg ? "EVP_PKEY_keygen" : "EVP_PKEY_derive");
            exit(1);
        }
        ops++;
    } while ((t = now() - t0) < secs);
    return ops / t;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        secs = atof(argv[1]);
    if (argc > 2)
        rounds = atoi(argv[2]);
    if (secs <= 0 || rounds < 1) {
        fprintf(stderr, "usage: %s [SECONDS_PER_ROUND] [ROUNDS]\n", argv[0]);
        return 2;
    }

    /* fixed pseudo-random keys and peer points (valid public keys: X25519(k', 9)) */
    uint64_t s = 0x9E3779B97F4A7C15ULL;
    for (unsigned i = 0; i < MB8_LANES; i++)
        for (int b = 0; b < N; b++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            g_k[i][b] = (uint8_t)s;
            g_u[i][b] = (uint8_t)(s >> 32);
        }
    {
        const uint8_t *k[MB8_LANES];
        uint8_t *o[MB8_LANES];
        for (unsigned i = 0; i < MB8_LANES; i++) {
            k[i] = g_u[i];
            o[i] = g_u[i];
        }
        if (!mb8_status_all_ok(mb8_x25519_public_key(o, k, g_scratch)))
            return 1;
    }

    /* OpenSSL: derive context with our key 0 and peer point 0; keygen context */
    EVP_PKEY *priv = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, g_k[0], N);
    EVP_PKEY *peer = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, NULL, g_u[0], N);
    EVP_PKEY_CTX *dctx = priv ? EVP_PKEY_CTX_new(priv, NULL) : NULL;
    EVP_PKEY_CTX *kctx = EVP_PKEY_CTX_new_id(EVP_PKEY_X25519, NULL);
    if (peer == NULL || dctx == NULL || kctx == NULL || EVP_PKEY_derive_init(dctx) != 1 ||
        EVP_PKEY_derive_set_peer(dctx, peer) != 1 || EVP_PKEY_keygen_init(kctx) != 1) {
        fprintf(stderr, "OpenSSL setup failed\n");
        return 1;
    }
    /* cross-check once: lane 0 of mb8 == OpenSSL */
    {
        uint8_t w[N];
        size_t len = N;
        const uint8_t *k[MB8_LANES] = {g_k[0]}, *u[MB8_LANES] = {g_u[0]};
        uint8_t *o[MB8_LANES] = {g_o[0]};
        if (EVP_PKEY_derive(dctx, w, &len) != 1 || mb8_x25519(o, k, u, g_scratch) != 0x11111110u ||
            memcmp(w, g_o[0], N) != 0) {
            fprintf(stderr, "mb8 and OpenSSL disagree\n");
            return 1;
        }
    }

    printf("# mb8 kernel: %s; %.2f s rounds, best of %d, thread CPU time\n",
           mb8_cpu_has_ifma() ? "AVX-512 IFMA (8 lanes)" : "portable", secs, rounds);
    printf("%-8s %5s %12s %12s %7s\n", "op", "lanes", "mb8 ops/s", "openssl/s", "ratio");
    for (int kg = 0; kg < 2; kg++) {
        double best_o = 0;
        double best_m[MB8_LANES + 1] = {0};
        for (int r = 0; r < rounds; r++) {
            for (unsigned lanes = 1; lanes <= MB8_LANES; lanes++) {
                double v = mb8_round(lanes, kg);
                if (v > best_m[lanes])
                    best_m[lanes] = v;
            }
            double v = ossl_round(kg ? kctx : dctx, kg);
            if (v > best_o)
                best_o = v;
        }
        for (unsigned lanes = 1; lanes <= MB8_LANES; lanes++)
            printf("%-8s %5u %12.0f %12.0f %7.2f\n", kg ? "keygen" : "derive", lanes, best_m[lanes],
                   best_o, best_m[lanes] / best_o);
    }
    EVP_PKEY_CTX_free(dctx);
    EVP_PKEY_CTX_free(kctx);
    EVP_PKEY_free(priv);
    EVP_PKEY_free(peer);
    return 0;
}
