/*
 * bench/rsa_key_parts.h: the parts of an OpenSSL RSA private key as mb8_rsa_key_init
 * (mb8/rsa.h) takes them, for the RSA benches (mb8_rsa.c, dudect_rsa.c).
 */
#ifndef BENCH_RSA_KEY_PARTS_H
#define BENCH_RSA_KEY_PARTS_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>

/* n, e, p, q, dP, dQ, qInv, big-endian and zero-padded, for keys of up to 4096 bits. */
struct rsa_key_parts {
    uint8_t n[512], e[4], p[256], q[256], dp[256], dq[256], qi[256];
};

/*
 * Reads pk's parameters into kp: n in bits / 8 bytes, e in 4, the CRT parts in bits / 16
 * (bits: pk's size, 2048 to 4096, a multiple of 16). 1 on success; 0 when pk is NULL or a
 * parameter is missing or longer than its field.
 */
static int rsa_key_parts_get(const EVP_PKEY *pk, unsigned bits, struct rsa_key_parts *kp)
{
    const size_t len = bits / 8, half = len / 2;
    const struct {
        const char *name;
        uint8_t *out;
        size_t len;
    } fields[] = {
        {OSSL_PKEY_PARAM_RSA_N, kp->n, len},
        {OSSL_PKEY_PARAM_RSA_E, kp->e, sizeof kp->e},
        {OSSL_PKEY_PARAM_RSA_FACTOR1, kp->p, half},
        {OSSL_PKEY_PARAM_RSA_FACTOR2, kp->q, half},
        {OSSL_PKEY_PARAM_RSA_EXPONENT1, kp->dp, half},
        {OSSL_PKEY_PARAM_RSA_EXPONENT2, kp->dq, half},
        {OSSL_PKEY_PARAM_RSA_COEFFICIENT1, kp->qi, half},
    };

    if (pk == NULL || len > sizeof kp->n)
        return 0;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        BIGNUM *bn = NULL;
        int ok = EVP_PKEY_get_bn_param(pk, fields[i].name, &bn) &&
                 BN_bn2binpad(bn, fields[i].out, (int)fields[i].len) == (int)fields[i].len;

        BN_clear_free(bn);
        if (!ok)
            return 0;
    }
    return 1;
}

#endif
