/*
 * tlsgate provider: entry point, configuration, provider parameters, algorithm tables.
 * prov/README.md is the user's documentation; prov.h lists the source files.
 *
 * Loaded as a module (build/tlsgate.so, OSSL_provider_init) or registered as a built-in
 * provider by the gateway (tlsgate_provider_init with OSSL_PROVIDER_add_builtin).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#include "mb8/cpu.h"
#include "glue.h"
#include "policy.h"
#include "prov.h"
#include "tlsgate/prov.h"

#ifndef TLSGATE_PROV_VERSION
#define TLSGATE_PROV_VERSION "0.1.0"
#endif

void tg_raise(const TG_PROV *prov, const char *file, int line, const char *func, uint32_t reason,
              const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    tg_core_vraise(prov != NULL ? &prov->core : NULL, file, line, func, reason, fmt, ap);
    va_end(ap);
}

void *tg_ctx_new(void *provctx, size_t size)
{
    TG_PROV **prov = OPENSSL_zalloc(size);

    if (prov != NULL)
        *prov = provctx;
    return prov;
}

static const OSSL_ITEM tg_reason_strings[] = {
    {TG_R_BAD_ARGUMENT, "tlsgate: bad argument"},
    {TG_R_DELEGATION_FAILED, "tlsgate: default provider call failed"},
    {TG_R_BUFFER_TOO_SMALL, "tlsgate: output buffer too small"},
    {TG_R_BAD_INPUT, "tlsgate: bad input"},
    {TG_R_INTERNAL, "tlsgate: internal error"},
    {TG_R_BATCH_FAILED, "tlsgate: batch computation failed"},
    {TG_R_NO_KEY, "tlsgate: no key or wrong key type"},
    {0, NULL},
};

#define RSA_NAMES "RSA:rsaEncryption:1.2.840.113549.1.1.1"

static const OSSL_ALGORITHM tg_keymgmt[] = {
    {RSA_NAMES, TG_ALG_PROPS, tg_rsa_keymgmt_functions, "tlsgate RSA keys"},
    {"EC:id-ecPublicKey:1.2.840.10045.2.1", TG_ALG_PROPS, tg_ec_keymgmt_functions,
     "tlsgate EC keys"},
    {"X25519:1.3.101.110", TG_ALG_PROPS, tg_x25519_keymgmt_functions, "tlsgate X25519 keys"},
    {"X25519MLKEM768", TG_ALG_PROPS, tg_x25519mlkem768_keymgmt_functions,
     "tlsgate X25519 + ML-KEM-768 hybrid (draft-ietf-tls-ecdhe-mlkem)"},
    {"SecP256r1MLKEM768", TG_ALG_PROPS, tg_secp256r1mlkem768_keymgmt_functions,
     "tlsgate P-256 + ML-KEM-768 hybrid (draft-ietf-tls-ecdhe-mlkem)"},
    {NULL, NULL, NULL, NULL},
};

static const OSSL_ALGORITHM tg_kem[] = {
    {"X25519MLKEM768", TG_ALG_PROPS, tg_hybrid_kem_functions,
     "tlsgate X25519MLKEM768 (batched ML-KEM-768 encapsulation)"},
    {"SecP256r1MLKEM768", TG_ALG_PROPS, tg_hybrid_kem_functions,
     "tlsgate SecP256r1MLKEM768 (batched ML-KEM-768 encapsulation)"},
    {NULL, NULL, NULL, NULL},
};

static const OSSL_ALGORITHM tg_signature[] = {
    {RSA_NAMES, TG_ALG_PROPS, tg_rsa_signature_functions, "tlsgate batched RSA signatures"},
    {"ECDSA", TG_ALG_PROPS, tg_ecdsa_signature_functions, "tlsgate batched ECDSA P-256"},
    {NULL, NULL, NULL, NULL},
};

static const OSSL_ALGORITHM tg_asym_cipher[] = {
    {RSA_NAMES, TG_ALG_PROPS, tg_rsa_asym_cipher_functions, "tlsgate batched RSA decryption"},
    {NULL, NULL, NULL, NULL},
};

static const OSSL_ALGORITHM tg_keyexch[] = {
    {"ECDH", TG_ALG_PROPS, tg_ecdh_keyexch_functions, "tlsgate batched ECDH P-256"},
    {"X25519:1.3.101.110", TG_ALG_PROPS, tg_x25519_keyexch_functions, "tlsgate batched X25519"},
    {NULL, NULL, NULL, NULL},
};

static const OSSL_ALGORITHM tg_kdf[] = {
    {"TLS13-KDF", TG_ALG_PROPS, tg_tls13_kdf_functions, "tlsgate TLS 1.3 key schedule (HKDF)"},
    {"TLS1-PRF", TG_ALG_PROPS, tg_tls1_prf_functions, "tlsgate TLS 1.2 PRF"},
    {NULL, NULL, NULL, NULL},
};

static const OSSL_ALGORITHM tg_cipher[] = {
    {"AES-256-GCM:id-aes256-GCM:2.16.840.1.101.3.4.1.46", TG_ALG_PROPS, tg_aes256gcm_functions,
     "tlsgate AES-256-GCM (intel-ipsec-mb VAES)"},
    {"AES-128-GCM:id-aes128-GCM:2.16.840.1.101.3.4.1.6", TG_ALG_PROPS, tg_aes128gcm_functions,
     "tlsgate AES-128-GCM (intel-ipsec-mb VAES)"},
    {NULL, NULL, NULL, NULL},
};

static const OSSL_ALGORITHM *tg_query_operation(void *provctx, int operation_id, int *no_cache)
{
    const TG_PROV *prov = provctx;

    *no_cache = 0;
    switch (operation_id) {
    case OSSL_OP_KEYMGMT:
        return tg_keymgmt;
    case OSSL_OP_SIGNATURE:
        return tg_signature;
    case OSSL_OP_ASYM_CIPHER:
        return tg_asym_cipher;
    case OSSL_OP_KEYEXCH:
        return tg_keyexch;
    case OSSL_OP_KEM:
        return prov->enable & TG_EN_MLKEM ? tg_kem : NULL;
    case OSSL_OP_KDF:
        return prov->enable & TG_EN_KDF ? tg_kdf : NULL;
    case OSSL_OP_CIPHER:
        return prov->enable & TG_EN_GCM && tg_gcm_available() ? tg_cipher : NULL;
    default:
        return NULL;
    }
}

static const OSSL_ITEM *tg_get_reason_strings(void *provctx)
{
    return tg_reason_strings;
}

/* ---- parameters ---- */

#define TG_FIXED_PARAMS 14
static OSSL_PARAM tg_gettable[TG_FIXED_PARAMS + TG_C_COUNT + 1];

static void tg_gettable_build(void)
{
    size_t n = 0, i;

    tg_gettable[n++] = OSSL_PARAM_construct_utf8_ptr(OSSL_PROV_PARAM_NAME, NULL, 0);
    tg_gettable[n++] = OSSL_PARAM_construct_utf8_ptr(OSSL_PROV_PARAM_VERSION, NULL, 0);
    tg_gettable[n++] = OSSL_PARAM_construct_utf8_ptr(OSSL_PROV_PARAM_BUILDINFO, NULL, 0);
    tg_gettable[n++] = OSSL_PARAM_construct_int(OSSL_PROV_PARAM_STATUS, NULL);
    tg_gettable[n++] = OSSL_PARAM_construct_utf8_ptr("poll_mode", NULL, 0);
    tg_gettable[n++] = OSSL_PARAM_construct_utf8_ptr("enable", NULL, 0);
    tg_gettable[n++] = OSSL_PARAM_construct_utf8_ptr("adaptive", NULL, 0);
    tg_gettable[n++] = OSSL_PARAM_construct_ulong("flush_us", NULL);
    tg_gettable[n++] = OSSL_PARAM_construct_uint("poll", NULL);
    tg_gettable[n++] = OSSL_PARAM_construct_uint("queued", NULL);
    tg_gettable[n++] = OSSL_PARAM_construct_uint("poll_backlog", NULL);
    tg_gettable[n++] = OSSL_PARAM_construct_octet_string("metrics", NULL, 0);
    tg_gettable[n++] = OSSL_PARAM_construct_uint("pool_size", NULL);
    tg_gettable[n++] = OSSL_PARAM_construct_uint("idle", NULL);
    for (i = 0; i < TG_C_COUNT; i++)
        tg_gettable[n++] = OSSL_PARAM_construct_uint64(tg_counter_names[i], NULL);
    tg_gettable[n] = OSSL_PARAM_construct_end();
}

static const OSSL_PARAM *tg_gettable_params(void *provctx)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;

    pthread_once(&once, tg_gettable_build);
    return tg_gettable;
}

static int tg_get_params(void *provctx, OSSL_PARAM params[])
{
    TG_PROV *prov = provctx;
    OSSL_PARAM *p;
    size_t i;

    if (!tg_params_answer(params, prov->answers, sizeof(prov->answers) / sizeof(prov->answers[0])))
        return 0;
    /* the poll: flushes this thread's partial batches (the application's loop hook) */
    if ((p = OSSL_PARAM_locate(params, "poll")) != NULL) {
        /* "poll_backlog", when the caller passes it with "poll", is an input: the work
         * its loop still has in this pass (0: about to idle). Read, never written. */
        const OSSL_PARAM *b = OSSL_PARAM_locate_const(params, "poll_backlog");
        long backlog = TG_POLICY_BACKLOG_UNKNOWN;
        unsigned v;

        if (b != NULL && OSSL_PARAM_get_uint(b, &v))
            backlog = v > 1000000 ? 1000000 : (long)v;
        if (!OSSL_PARAM_set_uint(p, tg_batch_poll(backlog)))
            return 0;
    }
    /* after the poll when both are asked: what is still waiting in this thread's queues */
    if ((p = OSSL_PARAM_locate(params, "queued")) != NULL &&
        !OSSL_PARAM_set_uint(p, tg_batch_queued()))
        return 0;
    /* the application is idle: one batch for the pools; what they still lack */
    if ((p = OSSL_PARAM_locate(params, "idle")) != NULL &&
        !OSSL_PARAM_set_uint(p, tg_pool_idle(prov, tg_batch_scratch())))
        return 0;
    /* the metrics snapshot (tlsgate/prov.h): only into a buffer of exactly its size */
    if ((p = OSSL_PARAM_locate(params, "metrics")) != NULL) {
        p->return_size = sizeof(tlsgate_metrics_t);
        if (p->data != NULL) {
            if (p->data_type != OSSL_PARAM_OCTET_STRING ||
                p->data_size != sizeof(tlsgate_metrics_t))
                return 0;
            tg_metrics_snapshot(p->data);
        }
    }
    for (i = 0; i < TG_C_COUNT; i++)
        if ((p = OSSL_PARAM_locate(params, tg_counter_names[i])) != NULL &&
            !OSSL_PARAM_set_uint64(p, atomic_load(&tg_counters[i])))
            return 0;
    return 1;
}

/*
 * TLS-GROUP capabilities. libssl 3.0 uses a group only when the key manager of its
 * algorithm comes from the provider that announced the group. When the application
 * prefers us, "EC" and "X25519" are ours, so the default provider's EC and X25519 groups
 * would be dropped and ECDHE would vanish: we announce those groups ourselves, exactly as
 * the default provider describes them (X448 and FFDHE stay the default provider's).
 */
struct tg_caps_arg {
    OSSL_CALLBACK *cb;
    void *arg;
};

static int tg_forward_group(const OSSL_PARAM params[], void *arg)
{
    struct tg_caps_arg *fwd = arg;
    const OSSL_PARAM *p = OSSL_PARAM_locate_const(params, OSSL_CAPABILITY_TLS_GROUP_ALG);
    const char *alg = NULL;

    if (p == NULL || !OSSL_PARAM_get_utf8_string_ptr(p, &alg) ||
        (strcmp(alg, "EC") != 0 && strcmp(alg, "X25519") != 0))
        return 1;
    return fwd->cb(params, fwd->arg);
}

static int tg_get_capabilities(void *provctx, const char *capability, OSSL_CALLBACK *cb, void *arg)
{
    TG_PROV *prov = provctx;
    struct tg_caps_arg fwd = {cb, arg};

    if (strcmp(capability, "TLS-GROUP") != 0)
        return 1;
    return OSSL_PROVIDER_get_capabilities((OSSL_PROVIDER *)prov->deflt, capability,
                                          tg_forward_group, &fwd) &&
           tg_hybrid_groups(prov, cb, arg);
}

/* TLSGATE_STATS_FILE: one line with every counter, appended at process exit (atexit:
 * some applications never unload their providers, e.g. when they leak a key). */
static void tg_write_stats(void)
{
    const char *path = getenv("TLSGATE_STATS_FILE");
    char line[1024];
    size_t used;
    int n;
    size_t i;
    FILE *f;

    if (path == NULL || *path == '\0')
        return;
    n = snprintf(line, sizeof(line), "tlsgate pid=%ld", (long)getpid());
    used = n > 0 ? (size_t)n : 0;
    for (i = 0; i < TG_C_COUNT && used < sizeof(line); i++) {
        n = snprintf(line + used, sizeof(line) - used, " %s=%llu", tg_counter_names[i],
                     (unsigned long long)atomic_load(&tg_counters[i]));
        if (n > 0)
            used += (size_t)n;
    }
    f = fopen(path, "ae");
    if (f == NULL)
        return;
    fprintf(f, "%s\n", line);
    fclose(f);
}

static void tg_register_stats(void)
{
    const char *path = getenv("TLSGATE_STATS_FILE");

    if (path != NULL && *path != '\0')
        atexit(tg_write_stats);
}

static void tg_prov_free(TG_PROV *prov)
{
    if (prov == NULL)
        return;
    if (prov->deflt != NULL)
        OSSL_PROVIDER_unload((OSSL_PROVIDER *)prov->deflt);
    OSSL_LIB_CTX_free(prov->libctx);
    OPENSSL_free(prov);
}

static void tg_teardown(void *provctx)
{
    if (tg_batch_teardown())
        tg_pool_clear(); /* no instance left to use the precomputed entries */
    tg_kdf_cache_wipe(); /* this thread's (others' at their exit) */
    tg_gcm_cache_wipe();
    tg_prov_free(provctx);
}

/* ---- configuration ---- */

static int parse_enable(const char *s, unsigned *out)
{
    unsigned v = 0;
    char buf[64], *tok, *save = NULL;

    if (strlen(s) >= sizeof(buf))
        return 0;
    strcpy(buf, s);
    for (tok = strtok_r(buf, ", ", &save); tok != NULL; tok = strtok_r(NULL, ", ", &save)) {
        if (strcmp(tok, "all") == 0)
            v |= TG_EN_ALL;
        else if (strcmp(tok, "none") == 0)
            v |= 0;
        else if (strcmp(tok, "rsa") == 0)
            v |= TG_EN_RSA;
        else if (strcmp(tok, "ecdsa") == 0)
            v |= TG_EN_ECDSA;
        else if (strcmp(tok, "ecdh") == 0)
            v |= TG_EN_ECDH;
        else if (strcmp(tok, "x25519") == 0)
            v |= TG_EN_X25519;
        else if (strcmp(tok, "kdf") == 0)
            v |= TG_EN_KDF;
        else if (strcmp(tok, "gcm") == 0)
            v |= TG_EN_GCM;
        else if (strcmp(tok, "mlkem") == 0)
            v |= TG_EN_MLKEM;
        else
            return 0;
    }
    *out = v;
    return 1;
}

/* TLSGATE_PROVIDER_PARAMS: the config section, then the environment. */
static int read_config(TG_PROV *prov)
{
#define TG_SETTING(name, env) {#name, "TLSGATE_" #env, NULL},
    struct tg_setting s[] = {TLSGATE_PROVIDER_PARAMS(TG_SETTING)}; /* in the list's order */
#undef TG_SETTING
    const char *flush, *mode, *enable, *adaptive, *pool;
    unsigned long pool_size = 64;

    if (!tg_core_settings(&prov->core, s, sizeof(s) / sizeof(s[0])))
        return 0;
    flush = s[0].value;
    mode = s[1].value;
    enable = s[2].value;
    adaptive = s[3].value;
    pool = s[4].value;
    if (pool != NULL && !tg_parse_ulong(pool, 4096, &pool_size)) {
        TG_RAISE(prov, TG_R_BAD_ARGUMENT, "pool_size=%s: expected 0..4096 (entries per pool)",
                 pool);
        return 0;
    }
    prov->pool_size = (unsigned)pool_size;
    prov->flush_us = 200;
    prov->poll_app = 0;
    prov->enable = TG_EN_ALL;
    prov->adaptive = 1;
    if (adaptive != NULL) {
        if (strcmp(adaptive, "on") == 0 || strcmp(adaptive, "1") == 0) {
            prov->adaptive = 1;
        } else if (strcmp(adaptive, "off") == 0 || strcmp(adaptive, "0") == 0) {
            prov->adaptive = 0;
        } else {
            TG_RAISE(prov, TG_R_BAD_ARGUMENT, "adaptive=%s: expected on or off", adaptive);
            return 0;
        }
    }
    if (flush != NULL && !tg_parse_ulong(flush, 1000000, &prov->flush_us)) {
        TG_RAISE(prov, TG_R_BAD_ARGUMENT, "flush_us=%s: expected 0..1000000 (microseconds)", flush);
        return 0;
    }
    if (mode != NULL) {
        if (strcmp(mode, "timer") == 0) {
            prov->poll_app = 0;
        } else if (strcmp(mode, "app") == 0) {
            prov->poll_app = 1;
        } else {
            TG_RAISE(prov, TG_R_BAD_ARGUMENT, "poll_mode=%s: expected timer or app", mode);
            return 0;
        }
    }
    if (enable != NULL && !parse_enable(enable, &prov->enable)) {
        TG_RAISE(
            prov, TG_R_BAD_ARGUMENT,
            "enable=%s: expected a comma-separated list of rsa, ecdsa, ecdh, x25519, kdf, gcm, "
            "mlkem, all, none",
            enable);
        return 0;
    }
    snprintf(prov->enable_str, sizeof(prov->enable_str), "%s%s%s%s%s%s%s",
             prov->enable & TG_EN_RSA ? "rsa," : "", prov->enable & TG_EN_ECDSA ? "ecdsa," : "",
             prov->enable & TG_EN_ECDH ? "ecdh," : "", prov->enable & TG_EN_X25519 ? "x25519," : "",
             prov->enable & TG_EN_KDF ? "kdf," : "", prov->enable & TG_EN_GCM ? "gcm," : "",
             prov->enable & TG_EN_MLKEM ? "mlkem," : "");
    if (prov->enable_str[0] != '\0')
        prov->enable_str[strlen(prov->enable_str) - 1] = '\0';
    else
        snprintf(prov->enable_str, sizeof(prov->enable_str), "none");
    {
        /* the answers of tg_get_params that cannot change after this */
        const struct tg_param_val answers[] = {
            TG_PROV_STD_PARAMS(TG_PROV_NAME, TLSGATE_PROV_VERSION,
                               mb8_cpu_has_ifma() ? "mb8 AVX-512 IFMA capable CPU"
                                                  : "mb8 portable kernels"),
            {"poll_mode", TG_PV_UTF8_PTR, prov->poll_app ? "app" : "timer", 0},
            {"adaptive", TG_PV_UTF8_PTR, prov->adaptive ? "on" : "off", 0},
            {"enable", TG_PV_UTF8_PTR, prov->enable_str, 0},
            {"flush_us", TG_PV_ULONG, NULL, prov->flush_us},
            {"pool_size", TG_PV_UINT, NULL, prov->pool_size},
        };
        _Static_assert(sizeof(answers) == sizeof(prov->answers), "TG_PROV.answers: its size");

        memcpy(prov->answers, answers, sizeof(answers));
    }
    return 1;
}

static const OSSL_DISPATCH tg_provider_functions[] = TG_PROVIDER_FUNCTIONS(tg);

int tlsgate_provider_init(const OSSL_CORE_HANDLE *handle, const OSSL_DISPATCH *in,
                          const OSSL_DISPATCH **out, void **provctx)
{
    TG_PROV *prov;

    prov = OPENSSL_zalloc(sizeof(*prov));
    if (prov == NULL)
        return 0;
    tg_core_init(&prov->core, handle, in);
    if (!read_config(prov))
        goto err;
    /* The private library context: the default provider does everything we delegate. */
    prov->libctx = OSSL_LIB_CTX_new();
    if (prov->libctx == NULL ||
        (prov->deflt = (struct ossl_provider_st *)OSSL_PROVIDER_load(prov->libctx, "default")) ==
            NULL ||
        (prov->dflt_provctx = OSSL_PROVIDER_get0_provider_ctx((OSSL_PROVIDER *)prov->deflt)) ==
            NULL) {
        TG_RAISE(prov, TG_R_DELEGATION_FAILED, "cannot load the default provider privately");
        goto err;
    }
    if (!tg_dflt_bind(prov)) {
        TG_RAISE(prov, TG_R_DELEGATION_FAILED,
                 "the default provider lacks RSA/EC/X25519 algorithms");
        goto err;
    }
    {
        static pthread_once_t once = PTHREAD_ONCE_INIT;

        pthread_once(&once, tg_register_stats);
    }
    tg_batch_set_core(handle, prov->core.thread_start);
    if (!tg_batch_init(prov))
        goto err;
    tg_pool_init();
    *out = tg_provider_functions;
    *provctx = prov;
    return 1;
err:
    tg_prov_free(prov);
    return 0;
}

#ifdef TLSGATE_PROV_MODULE
__attribute__((visibility("default"))) int OSSL_provider_init(const OSSL_CORE_HANDLE *handle,
                                                              const OSSL_DISPATCH *in,
                                                              const OSSL_DISPATCH **out,
                                                              void **provctx)
{
    return tlsgate_provider_init(handle, in, out, provctx);
}
#endif
