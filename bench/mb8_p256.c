/*
 * bench/mb8_p256: mb8's P-256 kernels (mb8/p256.h) against OpenSSL's, in one process; ECDSA
 * signs a SHA-256 digest. What is timed and how: bench/mb8_ec.h.
 *
 * Usage: mb8_p256_bench [SECONDS_PER_ROUND (0.5)] [ROUNDS (3)] [LANES (1..8: all)]
 */
#include "mb8/p256.h"

#include "mb8_ec.h"

int main(int argc, char **argv)
{
    static const struct ec_bench_curve curve = {"P-256", MB8_P256_SCALAR_BYTES, mb8_p256_ecdh,
                                                mb8_p256_public_key, mb8_p256_ecdsa_sign};
    return ec_bench_main(&curve, argc, argv);
}
