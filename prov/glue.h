/*
 * OpenSSL 3 provider glue: dispatch-table entries and the answering of get_params from a
 * table. Generic, the same for any provider: no tlsgate logic (no crypto, no batching, no
 * state). Shared by the tlsgate provider (prov/) and the test-only fake accelerator
 * (tests/fakeaccel), as upcalls.h and waitfd.h are: fakeaccel stays an independent
 * implementation of accelerator behaviour, but declares its dispatch tables and answers
 * its parameters the way any provider does, so the two write that scaffolding once.
 *
 * The dispatch macros expand to initialisers of OSSL_DISPATCH (openssl/core.h; function ids
 * of openssl/core_dispatch.h): TG_FN one entry, TG_FNS_* a group of entries every
 * operation of a kind has, TG_*_FUNCTIONS the whole table (with its {0, NULL} end) of an
 * operation whose functions are all named <pfx>_<the OpenSSL function name>.
 */
#ifndef TG_GLUE_H
#define TG_GLUE_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/params.h>

/* One dispatch entry: function id and function (of any type). */
#define TG_FN(id, fn)                                                                              \
    {                                                                                              \
        (id), (void (*)(void))(fn)                                                                 \
    }

/* An operation context's OSSL_FUNC_<OP>_FREECTX and _DUPCTX: pfx_freectx, pfx_dupctx. */
#define TG_FNS_FREE_DUP(OP, pfx)                                                                   \
    TG_FN(OSSL_FUNC_##OP##_FREECTX, pfx##_freectx), TG_FN(OSSL_FUNC_##OP##_DUPCTX, pfx##_dupctx)

/* A get/set quartet: OSSL_FUNC_<OP>_{GET,GETTABLE,SET,SETTABLE}_<WHAT>, where WHAT is
 * CTX_PARAMS (an operation context's parameters), CTX_MD_PARAMS (a signature context's
 * digest's) or PARAMS (an object's: a key manager's keys). */
#define TG_FNS_GET_SET(OP, WHAT, get, gettable, set, settable)                                     \
    TG_FN(OSSL_FUNC_##OP##_GET_##WHAT, get), TG_FN(OSSL_FUNC_##OP##_GETTABLE_##WHAT, gettable),    \
        TG_FN(OSSL_FUNC_##OP##_SET_##WHAT, set), TG_FN(OSSL_FUNC_##OP##_SETTABLE_##WHAT, settable)

/* A signature's one-shot sign and verify: OSSL_FUNC_SIGNATURE_{SIGN,VERIFY}[_INIT], named
 * pfx_sign_init, pfx_sign, pfx_verify_init, pfx_verify. */
#define TG_FNS_SIGN_VERIFY(pfx)                                                                    \
    TG_FN(OSSL_FUNC_SIGNATURE_SIGN_INIT, pfx##_sign_init),                                         \
        TG_FN(OSSL_FUNC_SIGNATURE_SIGN, pfx##_sign),                                               \
        TG_FN(OSSL_FUNC_SIGNATURE_VERIFY_INIT, pfx##_verify_init),                                 \
        TG_FN(OSSL_FUNC_SIGNATURE_VERIFY, pfx##_verify)

/* A signature's digest-and-sign and digest-and-verify functions:
 * OSSL_FUNC_SIGNATURE_DIGEST_{SIGN,VERIFY}_{INIT,UPDATE,FINAL}. */
#define TG_FNS_DIGEST_SIGN_VERIFY(sign_init, sign_update, sign_final, verify_init, verify_update,  \
                                  verify_final)                                                    \
    TG_FN(OSSL_FUNC_SIGNATURE_DIGEST_SIGN_INIT, sign_init),                                        \
        TG_FN(OSSL_FUNC_SIGNATURE_DIGEST_SIGN_UPDATE, sign_update),                                \
        TG_FN(OSSL_FUNC_SIGNATURE_DIGEST_SIGN_FINAL, sign_final),                                  \
        TG_FN(OSSL_FUNC_SIGNATURE_DIGEST_VERIFY_INIT, verify_init),                                \
        TG_FN(OSSL_FUNC_SIGNATURE_DIGEST_VERIFY_UPDATE, verify_update),                            \
        TG_FN(OSSL_FUNC_SIGNATURE_DIGEST_VERIFY_FINAL, verify_final)

/* A key manager's key generation: OSSL_FUNC_KEYMGMT_GEN_{INIT,SET_PARAMS,SETTABLE_PARAMS},
 * _GEN and _GEN_CLEANUP. */
#define TG_FNS_KEYMGMT_GEN(init, set_params, settable_params, gen, cleanup)                        \
    TG_FN(OSSL_FUNC_KEYMGMT_GEN_INIT, init), TG_FN(OSSL_FUNC_KEYMGMT_GEN_SET_PARAMS, set_params),  \
        TG_FN(OSSL_FUNC_KEYMGMT_GEN_SETTABLE_PARAMS, settable_params),                             \
        TG_FN(OSSL_FUNC_KEYMGMT_GEN, gen), TG_FN(OSSL_FUNC_KEYMGMT_GEN_CLEANUP, cleanup)

/* A key manager's import and export: OSSL_FUNC_KEYMGMT_{IMPORT,EXPORT}[_TYPES]. */
#define TG_FNS_KEYMGMT_IMPORT_EXPORT(import, import_types, export, export_types)                   \
    TG_FN(OSSL_FUNC_KEYMGMT_IMPORT, import), TG_FN(OSSL_FUNC_KEYMGMT_IMPORT_TYPES, import_types),  \
        TG_FN(OSSL_FUNC_KEYMGMT_EXPORT, export),                                                   \
        TG_FN(OSSL_FUNC_KEYMGMT_EXPORT_TYPES, export_types)

/* The provider's own table (the `out` of OSSL_provider_init): teardown, its parameters,
 * the algorithm query, reason strings and capabilities, named pfx_teardown and so on. */
#define TG_PROVIDER_FUNCTIONS(pfx)                                                                 \
    {                                                                                              \
        TG_FN(OSSL_FUNC_PROVIDER_TEARDOWN, pfx##_teardown),                                        \
            TG_FN(OSSL_FUNC_PROVIDER_GETTABLE_PARAMS, pfx##_gettable_params),                      \
            TG_FN(OSSL_FUNC_PROVIDER_GET_PARAMS, pfx##_get_params),                                \
            TG_FN(OSSL_FUNC_PROVIDER_QUERY_OPERATION, pfx##_query_operation),                      \
            TG_FN(OSSL_FUNC_PROVIDER_GET_REASON_STRINGS, pfx##_get_reason_strings),                \
            TG_FN(OSSL_FUNC_PROVIDER_GET_CAPABILITIES, pfx##_get_capabilities), {0, NULL},         \
    }

/* An asymmetric cipher with every function: pfx_newctx, pfx_encrypt_init, ... */
#define TG_ASYM_CIPHER_FUNCTIONS(pfx)                                                              \
    {                                                                                              \
        TG_FN(OSSL_FUNC_ASYM_CIPHER_NEWCTX, pfx##_newctx), TG_FNS_FREE_DUP(ASYM_CIPHER, pfx),      \
            TG_FN(OSSL_FUNC_ASYM_CIPHER_ENCRYPT_INIT, pfx##_encrypt_init),                         \
            TG_FN(OSSL_FUNC_ASYM_CIPHER_ENCRYPT, pfx##_encrypt),                                   \
            TG_FN(OSSL_FUNC_ASYM_CIPHER_DECRYPT_INIT, pfx##_decrypt_init),                         \
            TG_FN(OSSL_FUNC_ASYM_CIPHER_DECRYPT, pfx##_decrypt),                                   \
            TG_FNS_GET_SET(ASYM_CIPHER, CTX_PARAMS, pfx##_get_ctx_params,                          \
                           pfx##_gettable_ctx_params, pfx##_set_ctx_params,                        \
                           pfx##_settable_ctx_params),                                             \
            {0, NULL},                                                                             \
    }

/* A KDF with every function: pfx_newctx, pfx_reset, pfx_derive, ...; its gettable list
 * `gettable` (KDFs that answer the same parameters share one). */
#define TG_KDF_FUNCTIONS(pfx, gettable)                                                            \
    {                                                                                              \
        TG_FN(OSSL_FUNC_KDF_NEWCTX, pfx##_newctx), TG_FNS_FREE_DUP(KDF, pfx),                      \
            TG_FN(OSSL_FUNC_KDF_RESET, pfx##_reset), TG_FN(OSSL_FUNC_KDF_DERIVE, pfx##_derive),    \
            TG_FNS_GET_SET(KDF, CTX_PARAMS, pfx##_get_ctx_params, gettable, pfx##_set_ctx_params,  \
                           pfx##_settable_ctx_params),                                             \
            {0, NULL},                                                                             \
    }

/* Defines fn, the gettable function (provctx) of a provider or an algorithm that answers
 * one constant list: the OSSL_PARAM descriptors given, the last OSSL_PARAM_END. */
#define TG_CONST_PARAMS(fn, ...)                                                                   \
    static const OSSL_PARAM *fn(void *provctx)                                                     \
    {                                                                                              \
        static const OSSL_PARAM list[] = {__VA_ARGS__};                                            \
                                                                                                   \
        (void)provctx;                                                                             \
        return list;                                                                               \
    }

/* The same for an operation context's gettable or settable function (ctx, provctx). */
#define TG_CONST_CTX_PARAMS(fn, ...)                                                               \
    static const OSSL_PARAM *fn(void *ctx, void *provctx)                                          \
    {                                                                                              \
        static const OSSL_PARAM list[] = {__VA_ARGS__};                                            \
                                                                                                   \
        (void)ctx;                                                                                 \
        (void)provctx;                                                                             \
        return list;                                                                               \
    }

/* A get_params answer known in advance: the parameter key and its value, of type type. */
enum tg_pv_type { TG_PV_UTF8_PTR, TG_PV_INT, TG_PV_UINT, TG_PV_SIZE_T, TG_PV_ULONG };
struct tg_param_val {
    const char *key;
    enum tg_pv_type type;
    const char *str;   /* TG_PV_UTF8_PTR: the string (not copied: it must outlive params) */
    unsigned long num; /* the others: the number (converted to type) */
};

/*
 * Answers a get_params call from the n values v: sets each of params (an OSSL_PARAM array
 * ending with its key == NULL) whose key is a v's key with OSSL_PARAM_set_<type>, leaves
 * the others alone. Returns 1, or 0 when a setter fails (a parameter of an incompatible
 * type or too small; OpenSSL's error raised, the parameters after it unset), as a
 * hand-written OSSL_PARAM_locate/OSSL_PARAM_set_* sequence does.
 */
static inline int tg_params_answer(OSSL_PARAM params[], const struct tg_param_val *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        OSSL_PARAM *p = OSSL_PARAM_locate(params, v[i].key);
        int ok = 1;

        if (p == NULL)
            continue;
        switch (v[i].type) {
        case TG_PV_UTF8_PTR:
            ok = OSSL_PARAM_set_utf8_ptr(p, v[i].str);
            break;
        case TG_PV_INT:
            ok = OSSL_PARAM_set_int(p, (int)v[i].num);
            break;
        case TG_PV_UINT:
            ok = OSSL_PARAM_set_uint(p, (unsigned)v[i].num);
            break;
        case TG_PV_SIZE_T:
            ok = OSSL_PARAM_set_size_t(p, (size_t)v[i].num);
            break;
        case TG_PV_ULONG:
            ok = OSSL_PARAM_set_ulong(p, v[i].num);
            break;
        }
        if (!ok)
            return 0;
    }
    return 1;
}

/* The standard provider parameters (OSSL_PROV_PARAM_NAME, _VERSION, _BUILDINFO, and
 * _STATUS, always 1: the provider is running), for tg_params_answer. */
#define TG_PROV_STD_PARAMS(name, version, buildinfo)                                               \
    {OSSL_PROV_PARAM_NAME, TG_PV_UTF8_PTR, (name), 0},                                             \
        {OSSL_PROV_PARAM_VERSION, TG_PV_UTF8_PTR, (version), 0},                                   \
        {OSSL_PROV_PARAM_BUILDINFO, TG_PV_UTF8_PTR, (buildinfo), 0},                               \
    {                                                                                              \
        OSSL_PROV_PARAM_STATUS, TG_PV_INT, NULL, 1                                                 \
    }

#endif
