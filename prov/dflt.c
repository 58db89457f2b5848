/*
 * The default provider's implementations that tlsgate delegates to and falls back on.
 *
 * The default provider is loaded into the provider's private library context (prov.c), so
 * nothing we call can recurse into us. Its algorithm implementations are looked up once
 * with OSSL_PROVIDER_query_operation and their functions kept by OSSL_FUNC_* id: a
 * delegated call is one indirect call on the default provider's own object (its key, its
 * signature context), with no EVP layer in between. Those functions live in libcrypto and
 * are the same for every instance, so the tables are process-wide; only the default
 * provider's provctx is per instance (TG_PROV.dflt_provctx).
 */
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/provider.h>

#include "prov.h"
#include "waitfd.h"

struct tg_impl tg_dflt_keymgmt[TG_KT_COUNT];
struct tg_impl tg_dflt_sig_rsa, tg_dflt_sig_ecdsa, tg_dflt_cipher_rsa, tg_dflt_kex_ecdh,
    tg_dflt_kex_x25519, tg_dflt_kdf_tls13, tg_dflt_kdf_tls1_prf;

static int bind_one(OSSL_PROVIDER *deflt, int operation, const char *name, struct tg_impl *impl)
{
    const OSSL_ALGORITHM *algs, *a;
    const OSSL_DISPATCH *d;
    int no_cache = 0, found = 0;

    algs = OSSL_PROVIDER_query_operation(deflt, operation, &no_cache);
    if (algs == NULL)
        return 0;
    for (a = algs; a->algorithm_names != NULL && !found; a++) {
        if (!tg_names_contain(a->algorithm_names, name))
            continue;
        /* "fips=yes" variants do not exist in the default provider: the first match. */
        for (d = a->implementation; d->function_id != 0; d++)
            if (d->function_id > 0 && d->function_id < TG_MAX_FN)
                impl->fn[d->function_id] = d->function;
        found = 1;
    }
    OSSL_PROVIDER_unquery_operation(deflt, operation, algs);
    return found;
}

int tg_dflt_bind(TG_PROV *prov)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static int bound;
    OSSL_PROVIDER *d = (OSSL_PROVIDER *)prov->deflt;
    int ok;

    pthread_mutex_lock(&lock);
    /* Once per process: the default provider's functions are the same in every library
     * context, and a second instance rewriting the tables while other threads call
     * through them was a data race (ThreadSanitizer, prov_test test_instances_independent
     * beside test_async_threads). */
    if (!bound)
        bound = bind_one(d, OSSL_OP_KEYMGMT, "RSA", &tg_dflt_keymgmt[TG_KT_RSA]) &&
                bind_one(d, OSSL_OP_KEYMGMT, "EC", &tg_dflt_keymgmt[TG_KT_EC]) &&
                bind_one(d, OSSL_OP_KEYMGMT, "X25519", &tg_dflt_keymgmt[TG_KT_X25519]) &&
                bind_one(d, OSSL_OP_SIGNATURE, "RSA", &tg_dflt_sig_rsa) &&
                bind_one(d, OSSL_OP_SIGNATURE, "ECDSA", &tg_dflt_sig_ecdsa) &&
                bind_one(d, OSSL_OP_ASYM_CIPHER, "RSA", &tg_dflt_cipher_rsa) &&
                bind_one(d, OSSL_OP_KEYEXCH, "ECDH", &tg_dflt_kex_ecdh) &&
                bind_one(d, OSSL_OP_KEYEXCH, "X25519", &tg_dflt_kex_x25519) &&
                bind_one(d, OSSL_OP_KDF, "TLS13-KDF", &tg_dflt_kdf_tls13) &&
                bind_one(d, OSSL_OP_KDF, "TLS1-PRF", &tg_dflt_kdf_tls1_prf);
    ok = bound;
    pthread_mutex_unlock(&lock);
    return ok;
}

const OSSL_PARAM *tg_dflt_ctx_params_list(const struct tg_impl *impl, int id, void *inner,
                                          TG_PROV *prov)
{
    OSSL_FUNC_signature_gettable_ctx_params_fn *f =
        TG_DFLT(*impl, id, OSSL_FUNC_signature_gettable_ctx_params_fn *);

    return f != NULL ? f(inner, prov->dflt_provctx) : NULL;
}
