/*
 * bench/mb8_p384: mb8's P-384 kernels (mb8/p384.h) against OpenSSL's, in one process.
 *
 * ECDH (mb8_p384_ecdh vs EVP_PKEY_derive), public-key generation (mb8_p384_public_key vs
 * EVP_PKEY_keygen, which also draws the private key) and ECDSA signing of a SHA-384 digest
 * (mb8_p384_ecdsa_sign with a caller nonce vs EVP_PKEY_sign, which draws its own nonce),
 * with 1..8 lanes used per mb8 call (ops counted = lanes x calls), interleaved rounds, the
 * best round of each, ops/s per core. Which mb8 kernel runs is printed
 * (MB8_FORCE_PORTABLE=1 selects the portable one).
 *
 * Usage: mb8_p384_bench [SECONDS_PER_ROUND (0.5)] [ROUNDS (3)] [LANES (1..8: all)]
 * Time is this thread's CPU time (CLOCK_THREAD_CPUTIME_ID). Pin it to one CPU
 * (taskset -c 0) on a shared machine; compare the ratio, not ops/s.
 */
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
#include "mb8/p384.h"

/* mb8's scratch for the elliptic-curve calls (mb8/status.h; one call at a time) */
static alignas(MB8_SCRATCH_ALIGN) uint8_t g_scratch[65536];

#define L MB8_LANES
#define NB MB8_P384_SCALAR_BYTES
#define NP MB8_P384_POINT_BYTES

static double now(void)
{
    struct timespec ts;

    /* CPU time of this thread: a preempted round is not charged the other process's time */
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
    fprintf(stderr, "mb8_p384_bench: %s failed\n", what);
    exit(1);
}

static EVP_PKEY *ossl_keygen(void)
{
    EVP_PKEY *pk = EVP_EC_gen("P-384");
    if (pk == NULL)
        die("EVP_EC_gen");
    return pk;
}

static void get_priv(EVP_PKEY *pk, uint8_t d[NB])
{
    BIGNUM *bn = NULL;
    if (!EVP_PKEY_get_bn_param(pk, OSSL_PKEY_PARAM_PRIV_KEY, &bn) || BN_bn2binpad(bn, d, NB) != NB)
        die("private key export");
    BN_clear_free(bn);
}

static void get_pub(EVP_PKEY *pk, uint8_t q[NP])
{
    size_t len = 0;
    if (!EVP_PKEY_get_octet_string_param(pk, OSSL_PKEY_PARAM_PUB_KEY, q, NP, &len) || len != NP)
        die("public key export");
}

/* state shared by the timed loops */
static uint8_t g_d[L][NB], g_k[L][NB], g_e[L][NB], g_q[L][NP], g_out[L][NP], g_out2[L][NB];
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
        st = mb8_p384_ecdh(out, d, q, g_scratch);
        break;
    case OP_KEYGEN:
        st = mb8_p384_public_key(out, d, g_scratch);
        break;
    default:
        st = mb8_p384_ecdsa_sign(out, out2, e, d, k, g_scratch);
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
        size_t len = NB;
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
        if (EVP_PKEY_sign(g_sign, sig, &len, g_e[0], NB) != 1)
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

int main(int argc, char **argv)
{
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
        if (RAND_bytes(g_e[i], NB) != 1)
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
        EVP_PKEY_CTX_set_group_name(g_keygen, "P-384") != 1)
        die("keygen setup");
    g_sign = EVP_PKEY_CTX_new(mine, NULL);
    if (g_sign == NULL || EVP_PKEY_sign_init(g_sign) != 1 ||
        EVP_PKEY_CTX_set_signature_md(g_sign, EVP_sha384()) != 1)
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
