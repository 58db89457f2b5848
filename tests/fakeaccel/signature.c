/*
 * fakeaccel signatures (TEST-ONLY): "RSA" (PKCS#1 v1.5, PSS, MD5-SHA1 for TLS 1.0/1.1)
 * and "ECDSA".
 *
 * Each context drives an inner EVP_PKEY_CTX of the private library context (default
 * provider) initialised for plain sign/verify, with the digest set on it. The digest
 * part of digest-sign/verify is computed here with an EVP_MD_CTX of the private
 * library context; verification and size queries are synchronous; only the final
 * private-key step (EVP_PKEY_sign on the digest) goes through the accelerator.
 */
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/params.h>

#include "fakeaccel.h"

enum fa_sig_op { FA_SIG_SIGN, FA_SIG_VERIFY, FA_SIG_VERIFY_RECOVER };

typedef struct fa_sig_ctx {
    FA_PROV *prov;
    int ecdsa;
    FA_KEY *key;        /* not owned: the application's EVP_PKEY keeps it alive */
    EVP_PKEY_CTX *pctx; /* inner, private libctx */
    EVP_MD_CTX *mdctx;  /* digest-sign/verify only */
    EVP_MD *md;
} FA_SIG_CTX;

static void *fa_sig_newctx(void *provctx, int ecdsa)
{
    FA_SIG_CTX *c = OPENSSL_zalloc(sizeof(*c));

    if (c == NULL)
        return NULL;
    c->prov = provctx;
    c->ecdsa = ecdsa;
    return c;
}

static void *fa_rsa_sig_newctx(void *provctx, const char *propq)
{
    (void)propq;
    return fa_sig_newctx(provctx, 0);
}

static void *fa_ecdsa_sig_newctx(void *provctx, const char *propq)
{
    (void)propq;
    return fa_sig_newctx(provctx, 1);
}

static void fa_sig_reset(FA_SIG_CTX *c)
{
    EVP_PKEY_CTX_free(c->pctx);
    EVP_MD_CTX_free(c->mdctx);
    EVP_MD_free(c->md);
    c->pctx = NULL;
    c->mdctx = NULL;
    c->md = NULL;
}

static void fa_sig_freectx(void *ctx)
{
    FA_SIG_CTX *c = ctx;

    if (c == NULL)
        return;
    fa_sig_reset(c);
    OPENSSL_free(c);
}

static void *fa_sig_dupctx(void *ctx)
{
    const FA_SIG_CTX *src = ctx;
    FA_SIG_CTX *c = OPENSSL_zalloc(sizeof(*c));

    if (c == NULL)
        return NULL;
    c->prov = src->prov;
    c->ecdsa = src->ecdsa;
    c->key = src->key;
    if (src->pctx != NULL && (c->pctx = EVP_PKEY_CTX_dup(src->pctx)) == NULL)
        goto err;
    if (src->md != NULL) {
        if (!EVP_MD_up_ref(src->md))
            goto err;
        c->md = src->md;
    }
    if (src->mdctx != NULL &&
        ((c->mdctx = EVP_MD_CTX_new()) == NULL || !EVP_MD_CTX_copy_ex(c->mdctx, src->mdctx)))
        goto err;
    return c;
err:
    fa_sig_freectx(c);
    return NULL;
}

static int fa_sig_init(FA_SIG_CTX *c, void *provkey, enum fa_sig_op op, int digest,
                       const char *mdname, const OSSL_PARAM params[])
{
    FA_KEY *k = provkey != NULL ? provkey : c->key;
    char dflt_md[64];
    int ok;

    fa_sig_reset(c);
    if (k == NULL || k->pkey == NULL) {
        FA_RAISE(c->prov, FA_R_NO_KEY, "signature init without a key");
        return 0;
    }
    c->key = k;
    c->pctx = EVP_PKEY_CTX_new_from_pkey(c->prov->libctx, k->pkey, NULL);
    if (c->pctx == NULL)
        return 0;
    if (op == FA_SIG_SIGN)
        ok = EVP_PKEY_sign_init_ex(c->pctx, NULL) > 0;
    else if (op == FA_SIG_VERIFY)
        ok = EVP_PKEY_verify_init_ex(c->pctx, NULL) > 0;
    else
        ok = EVP_PKEY_verify_recover_init_ex(c->pctx, NULL) > 0;
    if (!ok)
        goto err;

    if (digest) {
        OSSL_PARAM mdparams[2];

        if (mdname == NULL || *mdname == '\0') {
            if (EVP_PKEY_get_default_digest_name(k->pkey, dflt_md, sizeof(dflt_md)) <= 0)
                goto err;
            mdname = dflt_md;
        }
        c->md = EVP_MD_fetch(c->prov->libctx, mdname, NULL);
        c->mdctx = EVP_MD_CTX_new();
        if (c->md == NULL || c->mdctx == NULL || !EVP_DigestInit_ex2(c->mdctx, c->md, NULL))
            goto err;
        mdparams[0] = OSSL_PARAM_construct_utf8_string(OSSL_SIGNATURE_PARAM_DIGEST,
                                                       (char *)EVP_MD_get0_name(c->md), 0);
        mdparams[1] = OSSL_PARAM_construct_end();
        if (EVP_PKEY_CTX_set_params(c->pctx, mdparams) <= 0)
            goto err;
    }
    if (params != NULL && EVP_PKEY_CTX_set_params(c->pctx, params) <= 0)
        goto err;
    return 1;
err:
    fa_sig_reset(c);
    return 0;
}

static int fa_sig_sign_init(void *ctx, void *provkey, const OSSL_PARAM params[])
{
    return fa_sig_init(ctx, provkey, FA_SIG_SIGN, 0, NULL, params);
}

static int fa_sig_verify_init(void *ctx, void *provkey, const OSSL_PARAM params[])
{
    return fa_sig_init(ctx, provkey, FA_SIG_VERIFY, 0, NULL, params);
}

static int fa_sig_verify_recover_init(void *ctx, void *provkey, const OSSL_PARAM params[])
{
    return fa_sig_init(ctx, provkey, FA_SIG_VERIFY_RECOVER, 0, NULL, params);
}

static int fa_sig_digest_sign_init(void *ctx, const char *mdname, void *provkey,
                                   const OSSL_PARAM params[])
{
    return fa_sig_init(ctx, provkey, FA_SIG_SIGN, 1, mdname, params);
}

static int fa_sig_digest_verify_init(void *ctx, const char *mdname, void *provkey,
                                     const OSSL_PARAM params[])
{
    return fa_sig_init(ctx, provkey, FA_SIG_VERIFY, 1, mdname, params);
}

/* Signs a digest (or, for RSA without a digest, raw input): the accelerated step. */
static int fa_sig_sign(void *ctx, unsigned char *sig, size_t *siglen, size_t sigsize,
                       const unsigned char *tbs, size_t tbslen)
{
    FA_SIG_CTX *c = ctx;

    return fa_accel_run(c->prov, FA_OP_SIGN, c->pctx, sig, siglen, sigsize, tbs, tbslen);
}

static int fa_sig_verify(void *ctx, const unsigned char *sig, size_t siglen,
                         const unsigned char *tbs, size_t tbslen)
{
    FA_SIG_CTX *c = ctx;

    return c->pctx != NULL && EVP_PKEY_verify(c->pctx, sig, siglen, tbs, tbslen) > 0;
}

static int fa_sig_verify_recover(void *ctx, unsigned char *rout, size_t *routlen, size_t routsize,
                                 const unsigned char *sig, size_t siglen)
{
    FA_SIG_CTX *c = ctx;

    return fa_pctx_out(EVP_PKEY_verify_recover, c->pctx, rout, routlen, routsize, sig, siglen);
}

static int fa_sig_digest_update(void *ctx, const unsigned char *data, size_t datalen)
{
    FA_SIG_CTX *c = ctx;

    return c->mdctx != NULL && EVP_DigestUpdate(c->mdctx, data, datalen);
}

static int fa_sig_digest_sign_final(void *ctx, unsigned char *sig, size_t *siglen, size_t sigsize)
{
    FA_SIG_CTX *c = ctx;
    unsigned char dgst[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;

    if (c->mdctx == NULL)
        return 0;
    if (sig == NULL) {
        int size = EVP_PKEY_get_size(c->key->pkey);

        if (size <= 0)
            return 0;
        *siglen = (size_t)size;
        return 1;
    }
    if (!EVP_DigestFinal_ex(c->mdctx, dgst, &dlen))
        return 0;
    return fa_accel_run(c->prov, FA_OP_SIGN, c->pctx, sig, siglen, sigsize, dgst, dlen);
}

static int fa_sig_digest_verify_final(void *ctx, const unsigned char *sig, size_t siglen)
{
    FA_SIG_CTX *c = ctx;
    unsigned char dgst[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;

    if (c->mdctx == NULL || !EVP_DigestFinal_ex(c->mdctx, dgst, &dlen))
        return 0;
    return EVP_PKEY_verify(c->pctx, sig, siglen, dgst, dlen) > 0;
}

static int fa_sig_get_ctx_params(void *ctx, OSSL_PARAM params[])
{
    return fa_pctx_get_params(((FA_SIG_CTX *)ctx)->pctx, params);
}

static int fa_sig_set_ctx_params(void *ctx, const OSSL_PARAM params[])
{
    FA_SIG_CTX *c = ctx;

    /* As in the default provider: the digest of a digest-sign cannot change midway. */
    if (c->pctx != NULL && c->mdctx != NULL && params != NULL &&
        OSSL_PARAM_locate_const(params, OSSL_SIGNATURE_PARAM_DIGEST) != NULL) {
        FA_RAISE(c->prov, FA_R_BAD_ARGUMENT, "digest is fixed by digest-sign init");
        return 0;
    }
    return fa_pctx_set_params(c->pctx, params);
}

static const OSSL_PARAM *fa_sig_gettable(const FA_SIG_CTX *c, FA_PROV *prov, int ecdsa)
{
    if (c != NULL && c->pctx != NULL)
        return EVP_PKEY_CTX_gettable_params(c->pctx);
    return EVP_SIGNATURE_gettable_ctx_params(ecdsa ? prov->sig_ecdsa : prov->sig_rsa);
}

static const OSSL_PARAM *fa_sig_settable(const FA_SIG_CTX *c, FA_PROV *prov, int ecdsa)
{
    if (c != NULL && c->pctx != NULL)
        return EVP_PKEY_CTX_settable_params(c->pctx);
    return EVP_SIGNATURE_settable_ctx_params(ecdsa ? prov->sig_ecdsa : prov->sig_rsa);
}

static const OSSL_PARAM *fa_rsa_sig_gettable_ctx_params(void *ctx, void *provctx)
{
    return fa_sig_gettable(ctx, provctx, 0);
}

static const OSSL_PARAM *fa_rsa_sig_settable_ctx_params(void *ctx, void *provctx)
{
    return fa_sig_settable(ctx, provctx, 0);
}

static const OSSL_PARAM *fa_ecdsa_sig_gettable_ctx_params(void *ctx, void *provctx)
{
    return fa_sig_gettable(ctx, provctx, 1);
}

static const OSSL_PARAM *fa_ecdsa_sig_settable_ctx_params(void *ctx, void *provctx)
{
    return fa_sig_settable(ctx, provctx, 1);
}

#define FA_SIG_COMMON                                                                              \
    TG_FNS_FREE_DUP(SIGNATURE, fa_sig), TG_FNS_SIGN_VERIFY(fa_sig),                                \
        TG_FNS_DIGEST_SIGN_VERIFY(fa_sig_digest_sign_init, fa_sig_digest_update,                   \
                                  fa_sig_digest_sign_final, fa_sig_digest_verify_init,             \
                                  fa_sig_digest_update, fa_sig_digest_verify_final)

const OSSL_DISPATCH fa_rsa_signature_functions[] = {
    TG_FN(OSSL_FUNC_SIGNATURE_NEWCTX, fa_rsa_sig_newctx),
    FA_SIG_COMMON,
    TG_FN(OSSL_FUNC_SIGNATURE_VERIFY_RECOVER_INIT, fa_sig_verify_recover_init),
    TG_FN(OSSL_FUNC_SIGNATURE_VERIFY_RECOVER, fa_sig_verify_recover),
    TG_FNS_GET_SET(SIGNATURE, CTX_PARAMS, fa_sig_get_ctx_params, fa_rsa_sig_gettable_ctx_params,
                   fa_sig_set_ctx_params, fa_rsa_sig_settable_ctx_params),
    {0, NULL},
};

const OSSL_DISPATCH fa_ecdsa_signature_functions[] = {
    TG_FN(OSSL_FUNC_SIGNATURE_NEWCTX, fa_ecdsa_sig_newctx),
    FA_SIG_COMMON,
    TG_FNS_GET_SET(SIGNATURE, CTX_PARAMS, fa_sig_get_ctx_params, fa_ecdsa_sig_gettable_ctx_params,
                   fa_sig_set_ctx_params, fa_ecdsa_sig_settable_ctx_params),
    {0, NULL},
};
