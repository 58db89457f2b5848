/*
 * fakeaccel: an OpenSSL 3 provider that behaves like a hardware crypto accelerator.
 *
 * TEST-ONLY. Never load it in production: it computes nothing itself and adds latency on
 * purpose. It exists so that the gateway's async-TLS code (SSL_MODE_ASYNC,
 * SSL_ERROR_WANT_ASYNC) can be tested on machines without Intel QAT.
 *
 * What it offers: signature "RSA" and "ECDSA", asymmetric cipher "RSA", and the key
 * managers "RSA", "RSA-PSS" and "EC". Every key is an EVP_PKEY of a private library
 * context that has only the default provider loaded (so nothing can recurse into us),
 * and every key-management call is delegated to it. The public-key operations and the
 * digest part of signing run synchronously, as in the default provider. Only the
 * private-key operation (the final sign, the decrypt) goes to the "accelerator": a
 * background thread with a queue that answers each request `delay_us` after it was
 * submitted. Inside an ASYNC job the caller's job is paused (ASYNC_pause_job) until the
 * answer is there and the application is woken the way QAT does it: the
 * ASYNC_WAIT_CTX callback, or an eventfd registered as the job's wait fd (accel.c).
 *
 * Configuration (provider section of an OpenSSL config; environment overrides):
 *   delay_us   FAKEACCEL_DELAY_US   latency of each private-key operation (1000)
 *   notify     FAKEACCEL_NOTIFY     "callback" (default), "fd", or "poll" (callback, but
 *                                   delivered only when the application reads "poll")
 *   fail_every FAKEACCEL_FAIL_EVERY N > 0: every Nth accelerated operation fails (0)
 *   pause      FAKEACCEL_PAUSE      1 (default): the job pauses; 0: it blocks until the
 *                                   answer and goes on without pausing, while the
 *                                   application is still notified (callback or fd), as by
 *                                   a provider whose answer came before the job paused
 *   -          FAKEACCEL_LOG        file to append one line per accelerated operation
 * Gettable provider parameters: name, version, buildinfo, status and the unsigned
 * counters ops, ops_async, fails, inflight.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#include "fakeaccel.h"

#define FA_ALG_PROPS "provider=fakeaccel"

void fa_raise(const FA_PROV *prov, const char *file, int line, const char *func, uint32_t reason,
              const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    tg_core_vraise(prov != NULL ? &prov->core : NULL, file, line, func, reason, fmt, ap);
    va_end(ap);
}

int fa_pctx_get_params(EVP_PKEY_CTX *pctx, OSSL_PARAM params[])
{
    return pctx != NULL && EVP_PKEY_CTX_get_params(pctx, params) > 0;
}

int fa_pctx_set_params(EVP_PKEY_CTX *pctx, const OSSL_PARAM params[])
{
    if (params == NULL || params[0].key == NULL)
        return 1;
    return pctx != NULL && EVP_PKEY_CTX_set_params(pctx, params) > 0;
}

int fa_pctx_out(fa_pkey_out_fn *f, EVP_PKEY_CTX *pctx, unsigned char *out, size_t *outlen,
                size_t outsize, const unsigned char *in, size_t inlen)
{
    size_t len = outsize;

    if (pctx == NULL || f(pctx, out, &len, in, inlen) <= 0)
        return 0;
    *outlen = len;
    return 1;
}

static const OSSL_ITEM fa_reason_strings[] = {
    {FA_R_INJECTED_FAILURE, "fakeaccel injected failure (fail_every)"},
    {FA_R_OPERATION_FAILED, "fakeaccel accelerated operation failed"},
    {FA_R_NO_KEY, "fakeaccel: no key"},
    {FA_R_BAD_ARGUMENT, "fakeaccel: bad argument"},
    {FA_R_DELEGATION_FAILED, "fakeaccel: default provider call failed"},
    {0, NULL},
};

static const OSSL_ALGORITHM fa_keymgmt[] = {
    {"RSA:rsaEncryption:1.2.840.113549.1.1.1", FA_ALG_PROPS, fa_rsa_keymgmt_functions,
     "fakeaccel RSA keys (delegated to the default provider)"},
    {"RSA-PSS:RSASSA-PSS:1.2.840.113549.1.1.10", FA_ALG_PROPS, fa_rsa_pss_keymgmt_functions,
     "fakeaccel RSA-PSS keys (delegated to the default provider)"},
    {"EC:id-ecPublicKey:1.2.840.10045.2.1", FA_ALG_PROPS, fa_ec_keymgmt_functions,
     "fakeaccel EC keys (delegated to the default provider)"},
    {NULL, NULL, NULL, NULL},
};

static const OSSL_ALGORITHM fa_signature[] = {
    {"RSA:rsaEncryption:1.2.840.113549.1.1.1", FA_ALG_PROPS, fa_rsa_signature_functions,
     "fakeaccel RSA signature (PKCS#1 v1.5, PSS) with an accelerated private-key step"},
    {"ECDSA", FA_ALG_PROPS, fa_ecdsa_signature_functions,
     "fakeaccel ECDSA with an accelerated private-key step"},
    {NULL, NULL, NULL, NULL},
};

static const OSSL_ALGORITHM fa_asym_cipher[] = {
    {"RSA:rsaEncryption:1.2.840.113549.1.1.1", FA_ALG_PROPS, fa_rsa_asym_cipher_functions,
     "fakeaccel RSA decryption (PKCS#1 v1.5, TLS premaster, OAEP), accelerated"},
    {NULL, NULL, NULL, NULL},
};

static const OSSL_ALGORITHM *fa_query_operation(void *provctx, int operation_id, int *no_cache)
{
    (void)provctx;
    *no_cache = 0;
    switch (operation_id) {
    case OSSL_OP_KEYMGMT:
        return fa_keymgmt;
    case OSSL_OP_SIGNATURE:
        return fa_signature;
    case OSSL_OP_ASYM_CIPHER:
        return fa_asym_cipher;
    default:
        return NULL;
    }
}

#define FA_PARAM_OPS "ops"
#define FA_PARAM_OPS_ASYNC "ops_async"
#define FA_PARAM_FAILS "fails"
#define FA_PARAM_INFLIGHT "inflight"
#define FA_PARAM_POLL "poll" /* reading it delivers completed operations (notify poll) */

TG_CONST_PARAMS(fa_gettable_params, OSSL_PARAM_utf8_ptr(OSSL_PROV_PARAM_NAME, NULL, 0),
                OSSL_PARAM_utf8_ptr(OSSL_PROV_PARAM_VERSION, NULL, 0),
                OSSL_PARAM_utf8_ptr(OSSL_PROV_PARAM_BUILDINFO, NULL, 0),
                OSSL_PARAM_int(OSSL_PROV_PARAM_STATUS, NULL), OSSL_PARAM_uint64(FA_PARAM_OPS, NULL),
                OSSL_PARAM_uint64(FA_PARAM_OPS_ASYNC, NULL),
                OSSL_PARAM_uint64(FA_PARAM_FAILS, NULL), OSSL_PARAM_uint64(FA_PARAM_INFLIGHT, NULL),
                OSSL_PARAM_int(FA_PARAM_POLL, NULL), OSSL_PARAM_END)

static int fa_set_counter(OSSL_PARAM params[], const char *name, _Atomic uint64_t *counter)
{
    OSSL_PARAM *p = OSSL_PARAM_locate(params, name);

    return p == NULL || OSSL_PARAM_set_uint64(p, atomic_load(counter));
}

static int fa_get_params(void *provctx, OSSL_PARAM params[])
{
    FA_PROV *prov = provctx;
    static const struct tg_param_val std[] = {
        TG_PROV_STD_PARAMS(FA_PROV_NAME, FA_PROV_VERSION, "test-only fake accelerator")};
    OSSL_PARAM *p;

    if (!tg_params_answer(params, std, sizeof(std) / sizeof(std[0])))
        return 0;
    p = OSSL_PARAM_locate(params, FA_PARAM_POLL);
    if (p != NULL && !OSSL_PARAM_set_int(p, (int)fa_accel_poll(prov)))
        return 0;
    return fa_set_counter(params, FA_PARAM_OPS, &prov->ops) &&
           fa_set_counter(params, FA_PARAM_OPS_ASYNC, &prov->ops_async) &&
           fa_set_counter(params, FA_PARAM_FAILS, &prov->fails) &&
           fa_set_counter(params, FA_PARAM_INFLIGHT, &prov->inflight);
}

static const OSSL_ITEM *fa_get_reason_strings(void *provctx)
{
    (void)provctx;
    return fa_reason_strings;
}

/*
 * libssl (3.0, add_provider_groups) uses a TLS group only if the key manager fetched for
 * its algorithm comes from the provider that announced the group. When the application
 * prefers us, "EC" is ours, so the default provider's EC groups would be dropped and
 * ECDHE over P-256/P-384/P-521 would vanish: we announce the default provider's EC
 * groups ourselves (the X25519/X448/FFDHE ones stay the default provider's).
 */
struct fa_caps_arg {
    OSSL_CALLBACK *cb;
    void *arg;
};

static int fa_forward_ec_group(const OSSL_PARAM params[], void *arg)
{
    struct fa_caps_arg *fwd = arg;
    const OSSL_PARAM *p = OSSL_PARAM_locate_const(params, OSSL_CAPABILITY_TLS_GROUP_ALG);
    const char *alg = NULL;

    if (p == NULL || !OSSL_PARAM_get_utf8_string_ptr(p, &alg) || strcmp(alg, "EC") != 0)
        return 1;
    return fwd->cb(params, fwd->arg);
}

static int fa_get_capabilities(void *provctx, const char *capability, OSSL_CALLBACK *cb, void *arg)
{
    FA_PROV *prov = provctx;
    struct fa_caps_arg fwd = {cb, arg};

    if (strcmp(capability, "TLS-GROUP") != 0)
        return 1;
    return OSSL_PROVIDER_get_capabilities(prov->deflt, capability, fa_forward_ec_group, &fwd);
}

static void fa_prov_free(FA_PROV *prov)
{
    if (prov == NULL)
        return;
    fa_accel_cleanup(prov);
    EVP_KEYMGMT_free(prov->km_rsa);
    EVP_KEYMGMT_free(prov->km_rsa_pss);
    EVP_KEYMGMT_free(prov->km_ec);
    EVP_SIGNATURE_free(prov->sig_rsa);
    EVP_SIGNATURE_free(prov->sig_ecdsa);
    EVP_ASYM_CIPHER_free(prov->ciph_rsa);
    if (prov->deflt != NULL)
        OSSL_PROVIDER_unload(prov->deflt);
    OSSL_LIB_CTX_free(prov->libctx);
    if (prov->log_fd >= 0)
        close(prov->log_fd);
    OPENSSL_free(prov);
}

static void fa_teardown(void *provctx)
{
    fa_prov_free(provctx);
}

/* Reads delay_us, notify, fail_every and pause: config section first, then the environment. */
static int fa_read_config(FA_PROV *prov)
{
    struct tg_setting s[] = {
        {"delay_us", "FAKEACCEL_DELAY_US", NULL},
        {"notify", "FAKEACCEL_NOTIFY", NULL},
        {"fail_every", "FAKEACCEL_FAIL_EVERY", NULL},
        {"pause", "FAKEACCEL_PAUSE", NULL},
    };
    const char *delay, *notify, *fail_every, *pause, *env;

    if (!tg_core_settings(&prov->core, s, sizeof(s) / sizeof(s[0])))
        return 0;
    delay = s[0].value;
    notify = s[1].value;
    fail_every = s[2].value;
    pause = s[3].value;

    prov->delay_us = 1000;
    prov->notify = FA_NOTIFY_CALLBACK;
    prov->fail_every = 0;
    if (delay != NULL && !tg_parse_ulong(delay, 60UL * 1000 * 1000, &prov->delay_us)) {
        FA_RAISE(prov, FA_R_BAD_ARGUMENT, "delay_us=%s: expected 0..60000000", delay);
        return 0;
    }
    if (notify != NULL) {
        if (strcmp(notify, "callback") == 0) {
            prov->notify = FA_NOTIFY_CALLBACK;
        } else if (strcmp(notify, "fd") == 0) {
            prov->notify = FA_NOTIFY_FD;
        } else if (strcmp(notify, "poll") == 0) {
            prov->notify = FA_NOTIFY_POLL;
        } else {
            FA_RAISE(prov, FA_R_BAD_ARGUMENT, "notify=%s: expected callback, fd or poll", notify);
            return 0;
        }
    }
    if (fail_every != NULL && !tg_parse_ulong(fail_every, 1UL << 30, &prov->fail_every)) {
        FA_RAISE(prov, FA_R_BAD_ARGUMENT, "fail_every=%s: expected a count", fail_every);
        return 0;
    }
    prov->no_pause = 0;
    if (pause != NULL) {
        if (strcmp(pause, "0") == 0) {
            prov->no_pause = 1;
        } else if (strcmp(pause, "1") != 0) {
            FA_RAISE(prov, FA_R_BAD_ARGUMENT, "pause=%s: expected 0 or 1", pause);
            return 0;
        }
    }
    if ((env = getenv("FAKEACCEL_LOG")) != NULL && *env != '\0')
        prov->log_fd = open(env, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    return 1;
}

static const OSSL_DISPATCH fa_provider_functions[] = TG_PROVIDER_FUNCTIONS(fa);

__attribute__((visibility("default"))) int OSSL_provider_init(const OSSL_CORE_HANDLE *handle,
                                                              const OSSL_DISPATCH *in,
                                                              const OSSL_DISPATCH **out,
                                                              void **provctx)
{
    FA_PROV *prov;

    prov = OPENSSL_zalloc(sizeof(*prov));
    if (prov == NULL)
        return 0;
    prov->log_fd = -1;
    tg_core_init(&prov->core, handle, in);
    if (!fa_read_config(prov))
        goto err;

    /* The private library context: the default provider does the real work. */
    prov->libctx = OSSL_LIB_CTX_new();
    if (prov->libctx == NULL ||
        (prov->deflt = OSSL_PROVIDER_load(prov->libctx, "default")) == NULL) {
        FA_RAISE(prov, FA_R_DELEGATION_FAILED, "cannot load the default provider privately");
        goto err;
    }
    prov->km_rsa = EVP_KEYMGMT_fetch(prov->libctx, "RSA", NULL);
    prov->km_rsa_pss = EVP_KEYMGMT_fetch(prov->libctx, "RSA-PSS", NULL);
    prov->km_ec = EVP_KEYMGMT_fetch(prov->libctx, "EC", NULL);
    prov->sig_rsa = EVP_SIGNATURE_fetch(prov->libctx, "RSA", NULL);
    prov->sig_ecdsa = EVP_SIGNATURE_fetch(prov->libctx, "ECDSA", NULL);
    prov->ciph_rsa = EVP_ASYM_CIPHER_fetch(prov->libctx, "RSA", NULL);
    if (prov->km_rsa == NULL || prov->km_rsa_pss == NULL || prov->km_ec == NULL ||
        prov->sig_rsa == NULL || prov->sig_ecdsa == NULL || prov->ciph_rsa == NULL ||
        !fa_keymgmt_bind_default(prov)) {
        FA_RAISE(prov, FA_R_DELEGATION_FAILED, "default provider lacks RSA/EC algorithms");
        goto err;
    }
    if (!fa_accel_init(prov))
        goto err;

    *out = fa_provider_functions;
    *provctx = prov;
    return 1;

err:
    fa_prov_free(prov);
    return 0;
}
