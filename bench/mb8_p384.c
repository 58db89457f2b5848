/*
 * bench/mb8_p384: mb8's P-384 kernels (mb8/p384.h) against OpenSSL's, in one process; ECDSA
 * signs a SHA-384 digest. What is timed and how: bench/mb8_ec.h.
 *
 * Usage: mb8_p384_bench [SECONDS_PER_ROUND (0.5)] [ROUNDS (3)] [LANES (1..8: all)]
 */
#include "mb8/p384.h"

#include "mb8_ec.h"

int main(int argc, char **argv)
{
    static const struct ec_bench_curve curve = {"P-384", MB8_P384_SCALAR_BYTES, mb8_p384_ecdh,
                                                mb8_p384_public_key, mb8_p384_ecdsa_sign};
    return ec_bench_main(&curve, argc, argv);
}
