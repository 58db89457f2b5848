/*
 * bench/mb8_ec.h: the bench of mb8's P-256 and P-384 kernels (mb8/p256.h, mb8/p384.h)
 * against OpenSSL's, in one process, shared by bench/mb8_p256.c and bench/mb8_p384.c,
 * which describe their curve (struct ec_bench_curve) and call ec_bench_main().
 *
 * ECDH (mb8_<curve>_ecdh vs EVP_PKEY_derive), public-key generation
 * (mb8_<curve>_public_key vs EVP_PKEY_keygen, which also draws the private key) and ECDSA
 * signing of a digest of the curve's size (mb8_<curve>_ecdsa_sign with a caller nonce vs
 * EVP_PKEY_sign, which draws its own nonce), with 1..8 lanes used per mb8 call (ops
 * counted = lanes x calls), interleaved rounds, the best round of each, ops/s per core.
 * Which mb8 kernel runs is printed (MB8_FORCE_PORTABLE=1 selects the portable one).
 *
 * Usage: mb8_<curve>_bench [SECONDS_PER_ROUND (0.5)] [ROUNDS (3)] [LANES (1..8: all)]
 * Time is this thread's CPU time (CLOCK_THREAD_CPUTIME_ID). Pin it to one CPU
 * (taskset -c 0) on a shared machine; compare the ratio, not ops/s.
 */
#ifndef BENCH_MB8_EC_H
#define BENCH_MB8_EC_H

#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "mb8/cpu.h"
#include "mb8/status.h"

/* The curve under test: OpenSSL's group name, the scalar size (points are 2 nb + 1 bytes,
 * ECDSA signs a SHA-(8 nb) digest) and mb8's entry points for it. */
struct ec_bench_curve {
    const char *group; /* "P-256" */
    size_t nb;
    mb8_status_t (*ecdh)(uint8_t *const out[MB8_LANES], const uint8_t *const priv[MB8_LANES],
                         const uint8_t *const peer[MB8_LANES], void *scratch);
    mb8_status_t (*public_key)(uint8_t *const out[MB8_LANES], const uint8_t *const priv[MB8_LANES],
                               void *scratch);
    mb8_status_t (*ecdsa_sign)(uint8_t *const sig_r[MB8_LANES], uint8_t *const sig_s[MB8_LANES],
                               const uint8_t *const digest[MB8_LANES],
                               const uint8_t *const priv[MB8_LANES],
                               const uint8_t *const nonce[MB8_LANES], void *scratch);
};

static const struct ec_bench_curve *g_curve;
static const char *g_prog; /* argv[0], for messages */
static size_t g_np;        /* point bytes */

/* mb8's scratch for the elliptic-curve calls (mb8/status.h; one call at a time) */
static alignas(MB8_SCRATCH_ALIGN) uint8_t g_scratch[65536];

#define L MB8_LANES
/* the largest sizes (P-384); a curve uses the first nb / np bytes */
#define NB_MAX 48
#define NP_MAX 97

static double now(void)
{
    struct timespec ts;

    /* CPU time of this thread: a preempted round is not charged the other process's time */
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
    fprintf(stderr, "%s: %s failed\n", g_prog, what);
    exit(1);
}

static EVP_PKEY *ossl_keygen(void)
{
    EVP_PKEY *pk = EVP_EC_gen(g_curve->group);
    if (pk == NULL)
        die("EVP_EC_gen");
    return pk;
}

static void get_priv(EVP_PKEY *pk, uint8_t *d)
{
    BIGNUM *bn = NULL;
    if (!EVP_PKEY_get_bn_param(pk, OSSL_PKEY_PARAM_PRIV_KEY, &bn) ||
        BN_bn2binpad(bn, d, (int)g_curve->nb) != (int)g_curve->nb)
        die("private key export");
    BN_clear_free(bn);
}

static void get_pub(EVP_PKEY *pk, uint8_t *q)
{
    size_t len = 0;
    if (!EVP_PKEY_get_octet_string_param(pk, OSSL_PKEY_PARAM_PUB_KEY, q, g_np, &len) || len != g_np)
        die("public key export");
}

/* state shared by the timed loops */
static uint8_t g_d[L][NB_MAX], g_k[L][NB_MAX], g_e[L][NB_MAX], g_q[L][NP_MAX], g_out[L][NP_MAX],
    g_out2[L][NB_MAX];
static EVP_PKEY_CTX *g_derive, *g_keygen, *g_sign;

enum op { OP_ECDH, OP_KEYGEN, OP_SIGN };

/* one mb8 call with the first 'lanes' lanes used; returns ops done */
static unsigned mb8_once(enum op op, unsigned lanes)
{
    uint8_t *out[L], *out2[L];
    const uint8_t *d[L], *q[L], *k[L], *e[L];
    for (unsigned i = 0; i < L; i++) {
        int used = i < lanes;
        out[i] = g_out[i];
        out2[i] = g_out2[i];
        d[i] = used ? g_d[i] : NULL;
        q[i] = g_q[i];
        k[i] = g_k[i];
        e[i] = g_e[i];
    }
    mb8_status_t st;
    switch (op) {
    case OP_ECDH:
        st = g_curve->ecdh(out, d, q, g_scratch);
        break;
    case OP_KEYGEN:
        st = g_curve->public_key(out, d, g_scratch);
        break;
    default:
        st = g_curve->ecdsa_sign(out, out2, e, d, k, g_scratch);
        break;
    }
    if (!mb8_status_all_ok(st))
        die("mb8 call");
    return lanes;
}

static unsigned ossl_once(enum op op)
{
    switch (op) {
    case OP_ECDH: {
        size_t len = g_curve->nb;
        if (EVP_PKEY_derive(g_derive, g_out2[0], &len) != 1)
            die("EVP_PKEY_derive");
        break;
    }
    case OP_KEYGEN: {
        EVP_PKEY *pk = NULL;
        if (EVP_PKEY_keygen(g_keygen, &pk) != 1)
            die("EVP_PKEY_keygen");
        EVP_PKEY_free(pk);
        break;
    }
    default: {
        size_t len = sizeof g_out[0] + sizeof g_out2[0];
        uint8_t sig[128];
        len = sizeof sig;
        if (EVP_PKEY_sign(g_sign, sig, &len, g_e[0], g_curve->nb) != 1)
            die("EVP_PKEY_sign");
        break;
    }
    }
    return 1;
}

/* ops/s of one timed round */
static double round_rate(enum op op, int use_mb8, unsigned lanes, double secs)
{
    unsigned long ops = 0;
    double t0 = now(), t;
    do {
        for (int j = 0; j < 8; j++)
            ops += use_mb8 ? mb8_once(op, lanes) : ossl_once(op);
        t = now();
    } while (t - t0 < secs);
    return (double)ops / (t - t0);
}

/* The bench of *curve, main()'s arguments as above. */
static int ec_bench_main(const struct ec_bench_curve *curve, int argc, char **argv)
{
    g_curve = curve;
    g_prog = argv[0];
    g_np = 2 * curve->nb + 1;
    char md_name[16];
    snprintf(md_name, sizeof md_name, "SHA%zu", 8 * curve->nb);
    const EVP_MD *md = EVP_get_digestbyname(md_name);
    if (md == NULL)
        die(md_name);
    double secs = argc > 1 ? atof(argv[1]) : 0.5;
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    unsigned only = argc > 3 ? (unsigned)atoi(argv[3]) : 0;
    static const char *const names[3] = {"ECDH", "keygen", "ECDSA sign"};

    /* keys, peers, digests and nonces from OpenSSL */
    EVP_PKEY *mine = NULL, *peer = NULL;
    for (unsigned i = 0; i < L; i++) {
        EVP_PKEY *a = ossl_keygen(), *b = ossl_keygen(), *c = ossl_keygen();
        get_priv(a, g_d[i]);
        get_pub(b, g_q[i]);
        get_priv(c, g_k[i]);
        if (RAND_bytes(g_e[i], (int)g_curve->nb) != 1)
            die("RAND_bytes");
        if (i == 0) {
            mine = a;
            peer = b;
        } else {
            EVP_PKEY_free(a);
            EVP_PKEY_free(b);
        }
        EVP_PKEY_free(c);
    }
    g_derive = EVP_PKEY_CTX_new(mine, NULL);
    if (g_derive == NULL || EVP_PKEY_derive_init(g_derive) != 1 ||
        EVP_PKEY_derive_set_peer(g_derive, peer) != 1)
        die("derive setup");
    g_keygen = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    if (g_keygen == NULL || EVP_PKEY_keygen_init(g_keygen) != 1 ||
        EVP_PKEY_CTX_set_group_name(g_keygen, g_curve->group) != 1)
        die("keygen setup");
    g_sign = EVP_PKEY_CTX_new(mine, NULL);
    if (g_sign == NULL || EVP_PKEY_sign_init(g_sign) != 1 ||
        EVP_PKEY_CTX_set_signature_md(g_sign, md) != 1)
        die("sign setup");

    printf("# mb8 kernel: %s; %.2f s rounds, best of %d; thread CPU time\n",
           mb8_cpu_has_ifma() ? "AVX-512 IFMA (8 lanes)" : "portable", secs, rounds);
    printf("%-11s %5s %12s %12s %7s\n", "op", "lanes", "mb8 ops/s", "openssl/s", "ratio");
    for (int op = 0; op < 3; op++) {
        double best_ossl = 0;
        for (unsigned lanes = 1; lanes <= L; lanes++) {
            if (only != 0 && lanes != only)
                continue;
            double best = 0;
            for (int r = 0; r < rounds; r++) {
                double a = round_rate((enum op)op, 1, lanes, secs);
                if (a > best)
                    best = a;
                if (lanes == L || (only != 0)) { /* OpenSSL once per op, interleaved */
                    double b = round_rate((enum op)op, 0, 0, secs);
                    if (b > best_ossl)
                        best_ossl = b;
                }
            }
            if (lanes == L || only != 0)
                printf("%-11s %5u %12.0f %12.0f %7.2f\n", names[op], lanes, best, best_ossl,
                       best / best_ossl);
            else
                printf("%-11s %5u %12.0f %12s %7s\n", names[op], lanes, best, "", "");
            fflush(stdout);
        }
    }
    EVP_PKEY_CTX_free(g_derive);
    EVP_PKEY_CTX_free(g_keygen);
    EVP_PKEY_CTX_free(g_sign);
    EVP_PKEY_free(mine);
    EVP_PKEY_free(peer);
    return 0;
}

#endif
