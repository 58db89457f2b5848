/*
 * bench/mb8_rsa: mb8's RSA private-key kernel against OpenSSL's, in one process.
 *
 * For RSA-2048, 3072 and 4096 (the 8 fixed keys of tests/diff/rsa_keys/rsaBITS.pem): full
 * 8-lane batches of mb8_rsa_private_crt (blinded, fault-checked: what the provider runs)
 * against OpenSSL's raw private operation (EVP_PKEY_sign with RSA_NO_PADDING: blinding and
 * its own fault check included), interleaved rounds, best round of each, ops/s per core.
 * Which mb8 kernel runs is printed (MB8_FORCE_PORTABLE=1 selects the portable one).
 *
 * Usage: mb8_rsa_bench KEYS_DIR [SECONDS_PER_ROUND (0.5)] [ROUNDS (3)] [BITS (all sizes)]
 * Time is this thread's CPU time. Pin it to one CPU (taskset -c 0) on a shared machine;
 * compare the ratio, not ops/s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "ifma_peak.h"
#include "mb8/cpu.h"
#include "mb8/rsa.h"
#include "rsa_key_parts.h"

#define NK 8

static double now(void)
{
    struct timespec ts;

    /* CPU time of this thread: a preempted round is not charged the other process's time */
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * IFMA instructions of one operation of the IFMA kernel (mb8/src/rsa/rsa_ifma.c) for a
 * key of `bits` bits with e = 65537 and blinding, counted from its structure: per CRT half
 * of h limbs, a reduction of the input (2h^2 + h), 17 multiplications for the domain and the
 * table (window 4), then per window
 * 4 squarings and a multiplication, and one to leave the domain; a multiplication is
 * h(4h + 1) IFMA, a squaring 3h^2 + 2h; mod n (2h limbs): two multiplications each for
 * blinding and unblinding, and the fault check s^e (16 squarings, 3 multiplications). The
 * batch's total over 8 lanes.
 */
static double rsa_ifma_per_op(unsigned bits)
{
    double h = (bits / 2 + 51) / 52, n = 2 * h, win = bits / 2 / 4;
    double amm = h * (4 * h + 1), ams = 3 * h * h + 2 * h;
    double ammn = n * (4 * n + 1), amsn = 3 * n * n + 2 * n;
    double half = 2 * h * h + h + 17 * amm + (win - 1) * (4 * ams + amm) + amm;

    return (2 * half + 4 * ammn + 16 * amsn + 3 * ammn) / 8;
}

int main(int argc, char **argv)
{
    static const unsigned sizes[3] = {2048, 3072, 4096};
    double secs = argc > 2 ? atof(argv[2]) : 0.5;
    int rounds = argc > 3 ? atoi(argv[3]) : 3;

    if (argc < 2) {
        fprintf(stderr, "usage: %s KEYS_DIR [SECONDS_PER_ROUND] [ROUNDS]\n", argv[0]);
        return 2;
    }
    printf("# mb8 kernel: %s; %.2f s rounds, best of %d\n",
           mb8_cpu_has_ifma() ? "AVX-512 IFMA (8 lanes)" : "portable", secs, rounds);
    double peak = ifma_peak_per_s();
    if (peak > 0)
        printf("# IFMA peak of this core: %.3g vpmadd52 per second of CPU time (16 chains)\n",
               peak);
    printf("%-9s %12s %12s %7s %10s %11s\n", "size", "mb8 ops/s", "openssl/s", "ratio", "IFMA/op",
           "peak share");
    for (int s = 0; s < 3; s++) {
        unsigned bits = sizes[s];
        if (argc > 4 && (unsigned)atoi(argv[4]) != bits)
            continue;
        size_t len = bits / 8;
        char path[4096];
        EVP_PKEY *pk[NK] = {0};
        mb8_rsa_key_t *mk[NK];
        uint8_t *in[NK], *out[NK], *bl[NK], *ub[NK];
        struct rsa_key_parts kp;
        snprintf(path, sizeof(path), "%s/rsa%u.pem", argv[1], bits);
        FILE *f = fopen(path, "r");
        if (f == NULL) {
            perror(path);
            return 1;
        }
        for (int i = 0; i < NK; i++) {
            pk[i] = PEM_read_PrivateKey(f, NULL, NULL, NULL);
            if (!rsa_key_parts_get(pk[i], bits, &kp)) {
                fprintf(stderr, "%s: key %d unreadable\n", path, i);
                return 1;
            }
            mk[i] = malloc(mb8_rsa_key_size(bits));
            if (mb8_rsa_key_init(mk[i], bits, kp.n, kp.e, 4, kp.p, kp.q, kp.dp, kp.dq, kp.qi) !=
                0) {
                fprintf(stderr, "%s: key %d rejected by mb8\n", path, i);
                return 1;
            }
            in[i] = malloc(len);
            out[i] = malloc(len);
            bl[i] = malloc(len);
            ub[i] = malloc(len);
            memset(in[i], 0x11 * (i + 1), len);
            in[i][0] = 0x01; /* < n */
            /* blinding pair for r = 1 (the cost is the same for any pair) */
            memset(bl[i], 0, len);
            bl[i][len - 1] = 1;
            memcpy(ub[i], bl[i], len);
        }
        fclose(f);
        void *scratch = aligned_alloc(64, (mb8_rsa_scratch_size(bits) + 63) / 64 * 64);
        EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(pk[0], NULL);
        if (scratch == NULL || ctx == NULL || EVP_PKEY_sign_init(ctx) <= 0 ||
            EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_NO_PADDING) <= 0)
            return 1;
        double best_m = 0, best_o = 0;
        for (int r = 0; r < rounds; r++) {
            unsigned long ops = 0;
            double t0 = now(), t;
            do {
                mb8_status_t st = mb8_rsa_private_crt(
                    out, (const uint8_t *const *)in, (const mb8_rsa_key_t *const *)mk,
                    (const uint8_t *const *)bl, (const uint8_t *const *)ub, scratch);
                if (!mb8_status_all_ok(st)) {
                    fprintf(stderr, "mb8 batch failed: %08x\n", st);
                    return 1;
                }
                ops += NK;
            } while ((t = now() - t0) < secs);
            if (ops / t > best_m)
                best_m = ops / t;
            ops = 0;
            t0 = now();
            do {
                size_t olen = len;
                if (EVP_PKEY_sign(ctx, out[0], &olen, in[0], len) <= 0)
                    return 1;
                ops++;
            } while ((t = now() - t0) < secs);
            if (ops / t > best_o)
                best_o = ops / t;
        }
        double ifma = rsa_ifma_per_op(bits);
        printf("RSA-%-5u %12.0f %12.0f %7.2f %10.0f %11.2f\n", bits, best_m, best_o,
               best_m / best_o, ifma, peak > 0 ? best_m * ifma / peak : 0.0);
        EVP_PKEY_CTX_free(ctx);
        free(scratch);
        for (int i = 0; i < NK; i++) {
            mb8_rsa_key_dispose(mk[i]);
            free(mk[i]);
            free(in[i]);
            free(out[i]);
            free(bl[i]);
            free(ub[i]);
            EVP_PKEY_free(pk[i]);
        }
    }
    return 0;
}
