/*
 * fakeaccel asymmetric cipher "RSA" (TEST-ONLY): PKCS#1 v1.5 (including libssl's TLS
 * premaster mode, OSSL_ASYM_CIPHER_PARAM_TLS_CLIENT_VERSION / _TLS_NEGOTIATED_VERSION),
 * OAEP and no padding, by an inner EVP_PKEY_CTX of the private library context to which
 * every parameter is passed through. Encryption is synchronous; decryption goes through
 * the accelerator.
 */
#include <openssl/core_names.h>
#include <openssl/params.h>

#include "fakeaccel.h"

typedef struct fa_ciph_ctx {
    FA_PROV *prov;
    EVP_PKEY_CTX *pctx; /* inner, private libctx */
} FA_CIPH_CTX;

static void *fa_ciph_newctx(void *provctx)
{
    FA_CIPH_CTX *c = OPENSSL_zalloc(sizeof(*c));

    if (c != NULL)
        c->prov = provctx;
    return c;
}

static void fa_ciph_freectx(void *ctx)
{
    FA_CIPH_CTX *c = ctx;

    if (c == NULL)
        return;
    EVP_PKEY_CTX_free(c->pctx);
    OPENSSL_free(c);
}

static void *fa_ciph_dupctx(void *ctx)
{
    const FA_CIPH_CTX *src = ctx;
    FA_CIPH_CTX *c = fa_ciph_newctx(src->prov);

    if (c == NULL)
        return NULL;
    if (src->pctx != NULL && (c->pctx = EVP_PKEY_CTX_dup(src->pctx)) == NULL) {
        fa_ciph_freectx(c);
        return NULL;
    }
    return c;
}

static int fa_ciph_init(FA_CIPH_CTX *c, void *provkey, int decrypt, const OSSL_PARAM params[])
{
    FA_KEY *k = provkey;
    int ok;

    EVP_PKEY_CTX_free(c->pctx);
    c->pctx = NULL;
    if (k == NULL || k->pkey == NULL) {
        FA_RAISE(c->prov, FA_R_NO_KEY, "cipher init without a key");
        return 0;
    }
    c->pctx = EVP_PKEY_CTX_new_from_pkey(c->prov->libctx, k->pkey, NULL);
    if (c->pctx == NULL)
        return 0;
    ok = decrypt ? EVP_PKEY_decrypt_init_ex(c->pctx, params) > 0
                 : EVP_PKEY_encrypt_init_ex(c->pctx, params) > 0;
    if (!ok) {
        EVP_PKEY_CTX_free(c->pctx);
        c->pctx = NULL;
    }
    return ok;
}

static int fa_ciph_encrypt_init(void *ctx, void *provkey, const OSSL_PARAM params[])
{
    return fa_ciph_init(ctx, provkey, 0, params);
}

static int fa_ciph_decrypt_init(void *ctx, void *provkey, const OSSL_PARAM params[])
{
    return fa_ciph_init(ctx, provkey, 1, params);
}

static int fa_ciph_encrypt(void *ctx, unsigned char *out, size_t *outlen, size_t outsize,
                           const unsigned char *in, size_t inlen)
{
    FA_CIPH_CTX *c = ctx;

    return fa_pctx_out(EVP_PKEY_encrypt, c->pctx, out, outlen, outsize, in, inlen);
}

static int fa_ciph_decrypt(void *ctx, unsigned char *out, size_t *outlen, size_t outsize,
                           const unsigned char *in, size_t inlen)
{
    FA_CIPH_CTX *c = ctx;

    return fa_accel_run(c->prov, FA_OP_DECRYPT, c->pctx, out, outlen, outsize, in, inlen);
}

static int fa_ciph_get_ctx_params(void *ctx, OSSL_PARAM params[])
{
    return fa_pctx_get_params(((FA_CIPH_CTX *)ctx)->pctx, params);
}

static int fa_ciph_set_ctx_params(void *ctx, const OSSL_PARAM params[])
{
    return fa_pctx_set_params(((FA_CIPH_CTX *)ctx)->pctx, params);
}

/* What the inner context takes (settable: sets), or before init the default provider's. */
static const OSSL_PARAM *ciph_params(void *ctx, void *provctx, int settable)
{
    FA_CIPH_CTX *c = ctx;
    EVP_ASYM_CIPHER *dflt = ((FA_PROV *)provctx)->ciph_rsa;

    if (c != NULL && c->pctx != NULL)
        return settable ? EVP_PKEY_CTX_settable_params(c->pctx)
                        : EVP_PKEY_CTX_gettable_params(c->pctx);
    return settable ? EVP_ASYM_CIPHER_settable_ctx_params(dflt)
                    : EVP_ASYM_CIPHER_gettable_ctx_params(dflt);
}

static const OSSL_PARAM *fa_ciph_gettable_ctx_params(void *ctx, void *provctx)
{
    return ciph_params(ctx, provctx, 0);
}

static const OSSL_PARAM *fa_ciph_settable_ctx_params(void *ctx, void *provctx)
{
    return ciph_params(ctx, provctx, 1);
}

const OSSL_DISPATCH fa_rsa_asym_cipher_functions[] = TG_ASYM_CIPHER_FUNCTIONS(fa_ciph);
