/*
 * fakeaccel key management (TEST-ONLY): "RSA", "RSA-PSS" and "EC" keys whose every
 * operation is delegated to the default provider of the provider's private library
 * context. A key of ours holds an EVP_PKEY of that library context.
 *
 * Export must be complete: when the application prefers fakeaccel, libssl generates
 * its ECDHE key shares with our EC key manager and derives the secret with the default
 * provider's ECDH, which gets our keys through export.
 */
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#include "fakeaccel.h"
#include "waitfd.h"

enum fa_ktype { FA_T_RSA, FA_T_RSA_PSS, FA_T_EC, FA_T_COUNT };

static const char *const fa_ktype_names[FA_T_COUNT] = {"RSA", "RSA-PSS", "EC"};

/*
 * import_types/export_types take no provider context in OpenSSL 3.0, so the default
 * provider's own functions are looked up once (they live in libcrypto and never move).
 */
static struct {
    OSSL_FUNC_keymgmt_import_types_fn *import_types;
    OSSL_FUNC_keymgmt_export_types_fn *export_types;
} fa_dflt_types[FA_T_COUNT];
static pthread_mutex_t fa_dflt_types_lock = PTHREAD_MUTEX_INITIALIZER;

int fa_keymgmt_bind_default(FA_PROV *prov)
{
    const OSSL_ALGORITHM *algs, *a;
    const OSSL_DISPATCH *d;
    int no_cache = 0, t, found = 0;

    algs = OSSL_PROVIDER_query_operation(prov->deflt, OSSL_OP_KEYMGMT, &no_cache);
    if (algs == NULL)
        return 0;
    pthread_mutex_lock(&fa_dflt_types_lock);
    for (t = 0; t < FA_T_COUNT; t++) {
        for (a = algs; a->algorithm_names != NULL; a++) {
            if (!tg_names_contain(a->algorithm_names, fa_ktype_names[t]))
                continue;
            for (d = a->implementation; d->function_id != 0; d++) {
                if (d->function_id == OSSL_FUNC_KEYMGMT_IMPORT_TYPES)
                    fa_dflt_types[t].import_types = OSSL_FUNC_keymgmt_import_types(d);
                else if (d->function_id == OSSL_FUNC_KEYMGMT_EXPORT_TYPES)
                    fa_dflt_types[t].export_types = OSSL_FUNC_keymgmt_export_types(d);
            }
            found++;
            break;
        }
    }
    pthread_mutex_unlock(&fa_dflt_types_lock);
    OSSL_PROVIDER_unquery_operation(prov->deflt, OSSL_OP_KEYMGMT, algs);
    return found == FA_T_COUNT;
}

static const OSSL_PARAM *fa_types(enum fa_ktype t, int import, int selection)
{
    const OSSL_PARAM *r = NULL;

    pthread_mutex_lock(&fa_dflt_types_lock);
    if (import && fa_dflt_types[t].import_types != NULL)
        r = fa_dflt_types[t].import_types(selection);
    else if (!import && fa_dflt_types[t].export_types != NULL)
        r = fa_dflt_types[t].export_types(selection);
    pthread_mutex_unlock(&fa_dflt_types_lock);
    return r;
}

static EVP_KEYMGMT *fa_dflt_keymgmt(const FA_PROV *prov, enum fa_ktype t)
{
    return t == FA_T_RSA ? prov->km_rsa : t == FA_T_RSA_PSS ? prov->km_rsa_pss : prov->km_ec;
}

/* ---- key objects ---- */

static FA_KEY *fa_key_new(FA_PROV *prov, enum fa_ktype t, EVP_PKEY *pkey)
{
    FA_KEY *k = OPENSSL_zalloc(sizeof(*k));

    if (k == NULL) {
        EVP_PKEY_free(pkey);
        return NULL;
    }
    k->prov = prov;
    k->type = fa_ktype_names[t];
    k->pkey = pkey;
    return k;
}

static enum fa_ktype fa_key_ktype(const FA_KEY *k)
{
    int t;

    for (t = 0; t < FA_T_COUNT; t++)
        if (strcmp(k->type, fa_ktype_names[t]) == 0)
            return (enum fa_ktype)t;
    return FA_T_RSA;
}

static void fa_key_free(void *keydata)
{
    FA_KEY *k = keydata;

    if (k == NULL)
        return;
    EVP_PKEY_free(k->pkey);
    OPENSSL_free(k);
}

static int fa_bn_present(const EVP_PKEY *pkey, const char *name)
{
    BIGNUM *bn = NULL;
    int r;

    ERR_set_mark();
    r = EVP_PKEY_get_bn_param(pkey, name, &bn);
    ERR_pop_to_mark();
    BN_clear_free(bn);
    return r;
}

static int fa_has(const void *keydata, int selection)
{
    const FA_KEY *k = keydata;
    size_t len = 0;
    int ok = 1, is_ec;

    if (k == NULL)
        return 0;
    if ((selection & (OSSL_KEYMGMT_SELECT_KEYPAIR | OSSL_KEYMGMT_SELECT_ALL_PARAMETERS)) == 0)
        return 1;
    if (k->pkey == NULL)
        return 0;
    is_ec = strcmp(k->type, "EC") == 0;
    if ((selection & OSSL_KEYMGMT_SELECT_PUBLIC_KEY) != 0) {
        if (is_ec) {
            ERR_set_mark();
            ok = ok &&
                 EVP_PKEY_get_octet_string_param(k->pkey, OSSL_PKEY_PARAM_PUB_KEY, NULL, 0, &len) &&
                 len > 0;
            ERR_pop_to_mark();
        } else {
            ok = ok && fa_bn_present(k->pkey, OSSL_PKEY_PARAM_RSA_N);
        }
    }
    if ((selection & OSSL_KEYMGMT_SELECT_PRIVATE_KEY) != 0)
        ok = ok && fa_bn_present(k->pkey, is_ec ? OSSL_PKEY_PARAM_PRIV_KEY : OSSL_PKEY_PARAM_RSA_D);
    if (is_ec && (selection & OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS) != 0)
        ok = ok && EVP_PKEY_get_bits(k->pkey) > 0;
    return ok;
}

static int fa_match(const void *keydata1, const void *keydata2, int selection)
{
    const FA_KEY *a = keydata1, *b = keydata2;
    int ok = 1;

    if (a->pkey == NULL || b->pkey == NULL)
        return a->pkey == b->pkey;
    ERR_set_mark();
    if ((selection & OSSL_KEYMGMT_SELECT_KEYPAIR) != 0)
        ok = EVP_PKEY_eq(a->pkey, b->pkey) == 1;
    else if ((selection & OSSL_KEYMGMT_SELECT_ALL_PARAMETERS) != 0)
        ok = EVP_PKEY_parameters_eq(a->pkey, b->pkey) == 1;
    ERR_pop_to_mark();
    return ok;
}

static int fa_validate(const void *keydata, int selection, int checktype)
{
    const FA_KEY *k = keydata;
    int quick = checktype == OSSL_KEYMGMT_VALIDATE_QUICK_CHECK;
    EVP_PKEY_CTX *c;
    int ok = 1;

    if (k == NULL || k->pkey == NULL)
        return 0;
    c = EVP_PKEY_CTX_new_from_pkey(k->prov->libctx, k->pkey, NULL);
    if (c == NULL)
        return 0;
    if ((selection & OSSL_KEYMGMT_SELECT_KEYPAIR) == OSSL_KEYMGMT_SELECT_KEYPAIR)
        ok = EVP_PKEY_check(c) == 1;
    else if ((selection & OSSL_KEYMGMT_SELECT_PUBLIC_KEY) != 0)
        ok = (quick ? EVP_PKEY_public_check_quick(c) : EVP_PKEY_public_check(c)) == 1;
    else if ((selection & OSSL_KEYMGMT_SELECT_PRIVATE_KEY) != 0)
        ok = EVP_PKEY_private_check(c) == 1;
    if (ok && (selection & OSSL_KEYMGMT_SELECT_ALL_PARAMETERS) != 0)
        ok = (quick ? EVP_PKEY_param_check_quick(c) : EVP_PKEY_param_check(c)) == 1;
    EVP_PKEY_CTX_free(c);
    return ok;
}

/* A new EVP_PKEY of the private libctx from parameters, as the default provider does. */
static EVP_PKEY *fa_fromdata(FA_PROV *prov, const char *type, int selection,
                             const OSSL_PARAM params[])
{
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_name(prov->libctx, type, NULL);
    EVP_PKEY *pkey = NULL;

    if (c == NULL || EVP_PKEY_fromdata_init(c) <= 0 ||
        EVP_PKEY_fromdata(c, &pkey, selection, (OSSL_PARAM *)params) <= 0) {
        EVP_PKEY_free(pkey);
        pkey = NULL;
    }
    EVP_PKEY_CTX_free(c);
    return pkey;
}

static int fa_import(void *keydata, int selection, const OSSL_PARAM params[])
{
    FA_KEY *k = keydata;
    EVP_PKEY *pkey;

    if (k == NULL || params == NULL)
        return 0;
    pkey = fa_fromdata(k->prov, k->type, selection, params);
    if (pkey == NULL)
        return 0;
    EVP_PKEY_free(k->pkey);
    k->pkey = pkey;
    return 1;
}

static int fa_export(void *keydata, int selection, OSSL_CALLBACK *cb, void *cbarg)
{
    FA_KEY *k = keydata;

    return k != NULL && k->pkey != NULL && EVP_PKEY_export(k->pkey, selection, cb, cbarg) > 0;
}

static int fa_get_params(void *keydata, OSSL_PARAM params[])
{
    FA_KEY *k = keydata;

    return k != NULL && k->pkey != NULL && EVP_PKEY_get_params(k->pkey, params) > 0;
}

static int fa_set_params(void *keydata, const OSSL_PARAM params[])
{
    FA_KEY *k = keydata;

    if (k == NULL || k->pkey == NULL)
        return 0;
    return EVP_PKEY_set_params(k->pkey, (OSSL_PARAM *)params) > 0;
}

static void *fa_dup(const void *keydata_from, int selection)
{
    const FA_KEY *from = keydata_from;
    EVP_PKEY *pkey = NULL;

    if (from == NULL)
        return NULL;
    if (from->pkey != NULL) {
        if ((selection & OSSL_KEYMGMT_SELECT_ALL) == OSSL_KEYMGMT_SELECT_ALL) {
            pkey = EVP_PKEY_dup(from->pkey);
        } else {
            OSSL_PARAM *params = NULL;

            if (EVP_PKEY_todata(from->pkey, selection, &params) > 0)
                pkey = fa_fromdata(from->prov, from->type, selection, params);
            OSSL_PARAM_free(params);
        }
        if (pkey == NULL)
            return NULL;
    }
    return fa_key_new(from->prov, fa_key_ktype(from), pkey);
}

/* ---- generation ---- */

typedef struct fa_gen {
    FA_PROV *prov;
    enum fa_ktype t;
    EVP_PKEY_CTX *ctx;
} FA_GEN;

static void fa_gen_cleanup(void *genctx)
{
    FA_GEN *g = genctx;

    if (g == NULL)
        return;
    EVP_PKEY_CTX_free(g->ctx);
    OPENSSL_free(g);
}

static void *fa_gen_init(FA_PROV *prov, enum fa_ktype t, int selection, const OSSL_PARAM params[])
{
    FA_GEN *g = OPENSSL_zalloc(sizeof(*g));
    int ok;

    if (g == NULL)
        return NULL;
    g->prov = prov;
    g->t = t;
    g->ctx = EVP_PKEY_CTX_new_from_name(prov->libctx, fa_ktype_names[t], NULL);
    if (g->ctx == NULL) {
        fa_gen_cleanup(g);
        return NULL;
    }
    if ((selection & OSSL_KEYMGMT_SELECT_KEYPAIR) != 0)
        ok = EVP_PKEY_keygen_init(g->ctx) > 0;
    else
        ok = EVP_PKEY_paramgen_init(g->ctx) > 0;
    if (ok && params != NULL)
        ok = EVP_PKEY_CTX_set_params(g->ctx, params) > 0;
    if (!ok) {
        fa_gen_cleanup(g);
        return NULL;
    }
    return g;
}

static int fa_gen_set_params(void *genctx, const OSSL_PARAM params[])
{
    FA_GEN *g = genctx;

    return params == NULL || EVP_PKEY_CTX_set_params(g->ctx, params) > 0;
}

/*
 * The template's domain parameters (e.g. the EC group) become generation parameters.
 * Not "group-check": the default provider's generator would copy it and, in 3.0.19,
 * never free it (its own set_template copies just the group anyway).
 */
static int fa_gen_set_template(void *genctx, void *templ)
{
    FA_GEN *g = genctx;
    const FA_KEY *t = templ;
    OSSL_PARAM *params = NULL, *src, *dst;
    int ok;

    if (t == NULL || t->pkey == NULL)
        return 0;
    ok = EVP_PKEY_todata(t->pkey, OSSL_KEYMGMT_SELECT_ALL_PARAMETERS, &params) > 0;
    if (ok) {
        for (src = dst = params; src->key != NULL; src++)
            if (strcmp(src->key, OSSL_PKEY_PARAM_EC_GROUP_CHECK_TYPE) != 0)
                *dst++ = *src;
        *dst = *src; /* the end marker */
        ok = EVP_PKEY_CTX_set_params(g->ctx, params) > 0;
    }
    OSSL_PARAM_free(params);
    return ok;
}

static void *fa_gen(void *genctx, OSSL_CALLBACK *cb, void *cbarg)
{
    FA_GEN *g = genctx;
    EVP_PKEY *pkey = NULL;

    (void)cb;
    (void)cbarg;
    if (g == NULL || EVP_PKEY_generate(g->ctx, &pkey) <= 0)
        return NULL;
    return fa_key_new(g->prov, g->t, pkey);
}

/* ---- per key type ---- */

#define FA_KEYMGMT_TYPE(prefix, T)                                                                 \
    static void *prefix##_new(void *provctx)                                                       \
    {                                                                                              \
        return fa_key_new(provctx, T, NULL);                                                       \
    }                                                                                              \
    static void *prefix##_gen_init(void *provctx, int selection, const OSSL_PARAM params[])        \
    {                                                                                              \
        return fa_gen_init(provctx, T, selection, params);                                         \
    }                                                                                              \
    static const OSSL_PARAM *prefix##_gen_settable_params(void *genctx, void *provctx)             \
    {                                                                                              \
        (void)genctx;                                                                              \
        return EVP_KEYMGMT_gen_settable_params(fa_dflt_keymgmt(provctx, T));                       \
    }                                                                                              \
    static const OSSL_PARAM *prefix##_gettable_params(void *provctx)                               \
    {                                                                                              \
        return EVP_KEYMGMT_gettable_params(fa_dflt_keymgmt(provctx, T));                           \
    }                                                                                              \
    static const OSSL_PARAM *prefix##_settable_params(void *provctx)                               \
    {                                                                                              \
        return EVP_KEYMGMT_settable_params(fa_dflt_keymgmt(provctx, T));                           \
    }                                                                                              \
    static const OSSL_PARAM *prefix##_import_types(int selection)                                  \
    {                                                                                              \
        return fa_types(T, 1, selection);                                                          \
    }                                                                                              \
    static const OSSL_PARAM *prefix##_export_types(int selection)                                  \
    {                                                                                              \
        return fa_types(T, 0, selection);                                                          \
    }

FA_KEYMGMT_TYPE(fa_rsa, FA_T_RSA)
FA_KEYMGMT_TYPE(fa_rsa_pss, FA_T_RSA_PSS)
FA_KEYMGMT_TYPE(fa_ec, FA_T_EC)

static const char *fa_rsa_query_operation_name(int operation_id)
{
    switch (operation_id) {
    case OSSL_OP_SIGNATURE:
    case OSSL_OP_ASYM_CIPHER:
        return "RSA";
    default:
        return NULL;
    }
}

static const char *fa_ec_query_operation_name(int operation_id)
{
    switch (operation_id) {
    case OSSL_OP_KEYEXCH:
        return "ECDH"; /* not ours: the default provider's, through export */
    case OSSL_OP_SIGNATURE:
        return "ECDSA";
    default:
        return NULL;
    }
}

/* All but the terminator: each table below ends with {0, NULL}. */
#define FA_KEYMGMT_DISPATCH(prefix, query_name)                                                    \
    TG_FN(OSSL_FUNC_KEYMGMT_NEW, prefix##_new), TG_FN(OSSL_FUNC_KEYMGMT_FREE, fa_key_free),        \
        TG_FN(OSSL_FUNC_KEYMGMT_DUP, fa_dup), TG_FN(OSSL_FUNC_KEYMGMT_HAS, fa_has),                \
        TG_FN(OSSL_FUNC_KEYMGMT_MATCH, fa_match), TG_FN(OSSL_FUNC_KEYMGMT_VALIDATE, fa_validate),  \
        TG_FNS_KEYMGMT_IMPORT_EXPORT(fa_import, prefix##_import_types, fa_export,                  \
                                     prefix##_export_types),                                       \
        TG_FNS_GET_SET(KEYMGMT, PARAMS, fa_get_params, prefix##_gettable_params, fa_set_params,    \
                       prefix##_settable_params),                                                  \
        TG_FNS_KEYMGMT_GEN(prefix##_gen_init, fa_gen_set_params, prefix##_gen_settable_params,     \
                           fa_gen, fa_gen_cleanup),                                                \
        TG_FN(OSSL_FUNC_KEYMGMT_GEN_SET_TEMPLATE, fa_gen_set_template),                            \
        TG_FN(OSSL_FUNC_KEYMGMT_QUERY_OPERATION_NAME, query_name)

const OSSL_DISPATCH fa_rsa_keymgmt_functions[] = {
    FA_KEYMGMT_DISPATCH(fa_rsa, fa_rsa_query_operation_name),
    {0, NULL},
};
const OSSL_DISPATCH fa_rsa_pss_keymgmt_functions[] = {
    FA_KEYMGMT_DISPATCH(fa_rsa_pss, fa_rsa_query_operation_name),
    {0, NULL},
};
const OSSL_DISPATCH fa_ec_keymgmt_functions[] = {
    FA_KEYMGMT_DISPATCH(fa_ec, fa_ec_query_operation_name),
    {0, NULL},
};
