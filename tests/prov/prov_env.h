/*
 * What the provider's EVP-level tests share (tests/prov/cipher_gcm_test.c, kdf_test.c,
 * mlkem_test.c): tlsgate.so, loaded from the build directory (TLSGATE_PROV_DIR, set by
 * tests/prov/prov.cmake), side by side with OpenSSL's default provider in a library
 * context of their own, and optionally a second context with the default provider alone
 * (the reference implementation, or the plain TLS peer of a handshake).
 */
#ifndef TESTS_PROV_ENV_H
#define TESTS_PROV_ENV_H

#include <stdio.h>

#include <openssl/err.h>
#include <openssl/provider.h>

#ifndef TLSGATE_PROV_DIR
#error "TLSGATE_PROV_DIR must name the directory of tlsgate.so"
#endif

struct prov_env {
    OSSL_LIB_CTX *lib;   /* tlsgate + default */
    OSSL_LIB_CTX *plain; /* default only (NULL unless asked for) */
    OSSL_PROVIDER *tg, *df, *plain_df;
};

/*
 * Loads tlsgate then the default provider into a new e->lib and, if `plain`, the default
 * provider into a new e->plain. Returns 1, or 0 with OpenSSL's errors printed (what was
 * made is in e for prov_env_free).
 */
static inline int prov_env_load(struct prov_env *e, int plain)
{
    e->lib = OSSL_LIB_CTX_new();
    if (e->lib == NULL || !OSSL_PROVIDER_set_default_search_path(e->lib, TLSGATE_PROV_DIR) ||
        (e->tg = OSSL_PROVIDER_load(e->lib, "tlsgate")) == NULL ||
        (e->df = OSSL_PROVIDER_load(e->lib, "default")) == NULL ||
        (plain && ((e->plain = OSSL_LIB_CTX_new()) == NULL ||
                   (e->plain_df = OSSL_PROVIDER_load(e->plain, "default")) == NULL))) {
        fprintf(stderr, "# loading tlsgate.so from %s and the default provider:\n",
                TLSGATE_PROV_DIR);
        ERR_print_errors_fp(stderr);
        return 0;
    }
    return 1;
}

/* Unloads what prov_env_load loaded and frees the contexts; e is zeroed. */
static inline void prov_env_free(struct prov_env *e)
{
    OSSL_PROVIDER_unload(e->tg);
    OSSL_PROVIDER_unload(e->df);
    OSSL_PROVIDER_unload(e->plain_df);
    OSSL_LIB_CTX_free(e->lib);
    OSSL_LIB_CTX_free(e->plain);
    *e = (struct prov_env){0};
}

#endif
