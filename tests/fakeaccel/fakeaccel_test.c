/*
 * Tests of the fakeaccel provider (tests/fakeaccel), TEST-ONLY code testing test-only code.
 *
 * The provider is loaded from the build directory into private library contexts next
 * to the default provider: A by environment (delay 2000 us, notify=callback), B by an
 * OpenSSL config text loaded with NCONF_load_bio + CONF_modules_load (delay 2000 us,
 * notify=fd), C with fail_every=3. RSA-2048 and EC P-256 keys are generated with the
 * default provider; every operation is fetched with "provider=fakeaccel" (strict) and
 * its result checked against the default provider: byte-identical PKCS#1 v1.5
 * signatures, PSS and ECDSA signatures that verify, decryptions equal to the plaintext.
 * 1, 8 and 64 concurrent ASYNC jobs are driven by a wake-up callback and by poll() on
 * the wait fds; they must pause, and N jobs must take far less than N x delay.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <openssl/async.h>
#include <openssl/conf.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>
#include <openssl/rsa.h>

#include "test_util.h" /* tests/prov: now, errors, counters */

#ifndef FAKEACCEL_MODULE_DIR
#error "FAKEACCEL_MODULE_DIR must name the directory of fakeaccel.so"
#endif

#define FA "provider=fakeaccel"
#define DF "provider=default"
#define DELAY_US 2000

static const unsigned char MSG[] = "fakeaccel test message: sign me, encrypt me";

/* One library context with fakeaccel and default, keys and reference data. */
struct inst {
    const char *label;
    OSSL_LIB_CTX *libctx;
    OSSL_PROVIDER *fa, *dflt;
    int fa_loaded; /* by OSSL_PROVIDER_load (else activated by the config) */
    EVP_PKEY *rsa, *ec;
    unsigned char ref_pkcs1[256], ref_raw[256]; /* default provider's PKCS#1 signatures */
    size_t ref_pkcs1_len, ref_raw_len;
    unsigned char ct_pkcs1[256], ct_oaep[256], ct_pms[256];
    size_t ct_pkcs1_len, ct_oaep_len, ct_pms_len;
    unsigned char pms[48];
};

static struct inst g_a = {.label = "A (env, callback)"};
static struct inst g_b = {.label = "B (config, fd)"};
static struct inst g_c = {.label = "C (fail_every=3)"};

enum op_kind {
    OP_RSA_PKCS1,   /* EVP_DigestSign SHA-256, PKCS#1 v1.5 */
    OP_RSA_PSS,     /* EVP_DigestSign SHA-256, PSS, salt = digest length */
    OP_ECDSA,       /* EVP_DigestSign SHA-256, ECDSA P-256 */
    OP_RSA_DEC,     /* EVP_PKEY_decrypt PKCS#1 v1.5 */
    OP_RSA_RAW,     /* EVP_PKEY_sign of a precomputed SHA-384 digest, PKCS#1 v1.5 */
    OP_RSA_OAEP,    /* EVP_PKEY_decrypt OAEP SHA-256 */
    OP_RSA_TLS_PMS, /* EVP_PKEY_decrypt with libssl's TLS premaster padding */
    OP_KINDS
};

static const char *const op_names[OP_KINDS] = {"rsa-pkcs1", "rsa-pss",  "ecdsa",      "rsa-dec",
                                               "rsa-raw",   "rsa-oaep", "rsa-tls-pms"};

/* ---- helpers ---- */

static int digest_sign(struct inst *in, EVP_PKEY *pkey, const char *propq, const char *md, int pad,
                       unsigned char *out, size_t *outlen)
{
    EVP_MD_CTX *m = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pctx = NULL;
    size_t len = *outlen;
    int ok;

    ok = m != NULL && EVP_DigestSignInit_ex(m, &pctx, md, in->libctx, propq, pkey, NULL) > 0;
    if (ok && pad != 0)
        ok = EVP_PKEY_CTX_set_rsa_padding(pctx, pad) > 0;
    if (ok && pad == RSA_PKCS1_PSS_PADDING)
        ok = EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) > 0;
    ok = ok && EVP_DigestSign(m, out, &len, MSG, sizeof(MSG)) > 0;
    EVP_MD_CTX_free(m);
    if (ok)
        *outlen = len;
    return ok;
}

static int digest_verify(struct inst *in, EVP_PKEY *pkey, int pad, const unsigned char *sig,
                         size_t siglen)
{
    EVP_MD_CTX *m = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pctx = NULL;
    int ok;

    ok = m != NULL && EVP_DigestVerifyInit_ex(m, &pctx, "SHA256", in->libctx, DF, pkey, NULL) > 0;
    if (ok && pad != 0)
        ok = EVP_PKEY_CTX_set_rsa_padding(pctx, pad) > 0;
    if (ok && pad == RSA_PKCS1_PSS_PADDING)
        ok = EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) > 0;
    ok = ok && EVP_DigestVerify(m, sig, siglen, MSG, sizeof(MSG)) == 1;
    EVP_MD_CTX_free(m);
    return ok;
}

static int raw_sign(struct inst *in, const char *propq, unsigned char *out, size_t *outlen)
{
    unsigned char dgst[48];
    unsigned int dlen = 0;
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_pkey(in->libctx, in->rsa, propq);
    EVP_MD *md = EVP_MD_fetch(in->libctx, "SHA384", DF);
    size_t len = *outlen;
    int ok;

    ok = c != NULL && md != NULL && EVP_Digest(MSG, sizeof(MSG), dgst, &dlen, md, NULL) &&
         EVP_PKEY_sign_init(c) > 0 && EVP_PKEY_CTX_set_rsa_padding(c, RSA_PKCS1_PADDING) > 0 &&
         EVP_PKEY_CTX_set_signature_md(c, md) > 0 && EVP_PKEY_sign(c, out, &len, dgst, dlen) > 0;
    EVP_MD_free(md);
    EVP_PKEY_CTX_free(c);
    if (ok)
        *outlen = len;
    return ok;
}

/* RSA decryption (encryption: enc) of in with the instance's key, |pad| as libssl sets it:
 * OAEP with SHA-256, the TLS premaster padding with TLS 1.2's versions. */
static int rsa_crypt(struct inst *in, const char *propq, int enc, int pad, const unsigned char *src,
                     size_t srclen, unsigned char *out, size_t *outlen)
{
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_pkey(in->libctx, in->rsa, propq);
    size_t len = *outlen;
    int ok;

    ok = c != NULL && (enc ? EVP_PKEY_encrypt_init(c) : EVP_PKEY_decrypt_init(c)) > 0 &&
         EVP_PKEY_CTX_set_rsa_padding(c, pad) > 0;
    if (ok && pad == RSA_PKCS1_OAEP_PADDING)
        ok = EVP_PKEY_CTX_set_rsa_oaep_md_name(c, "SHA256", NULL) > 0;
    if (ok && pad == RSA_PKCS1_WITH_TLS_PADDING) {
        /* What libssl passes for TLS 1.2 RSA key exchange. */
        unsigned int client_version = 0x0303, negotiated = 0x0303;
        OSSL_PARAM params[3];

        params[0] =
            OSSL_PARAM_construct_uint(OSSL_ASYM_CIPHER_PARAM_TLS_CLIENT_VERSION, &client_version);
        params[1] =
            OSSL_PARAM_construct_uint(OSSL_ASYM_CIPHER_PARAM_TLS_NEGOTIATED_VERSION, &negotiated);
        params[2] = OSSL_PARAM_construct_end();
        ok = EVP_PKEY_CTX_set_params(c, params) > 0;
    }
    ok = ok && (enc ? EVP_PKEY_encrypt(c, out, &len, src, srclen)
                    : EVP_PKEY_decrypt(c, out, &len, src, srclen)) > 0;
    EVP_PKEY_CTX_free(c);
    if (ok)
        *outlen = len;
    return ok;
}

/* Runs one operation of |kind| with |propq|; 1 on success with the output. */
static int do_op(struct inst *in, enum op_kind kind, const char *propq, unsigned char *out,
                 size_t *outlen)
{
    switch (kind) {
    case OP_RSA_PKCS1:
        return digest_sign(in, in->rsa, propq, "SHA256", RSA_PKCS1_PADDING, out, outlen);
    case OP_RSA_PSS:
        return digest_sign(in, in->rsa, propq, "SHA256", RSA_PKCS1_PSS_PADDING, out, outlen);
    case OP_ECDSA:
        return digest_sign(in, in->ec, propq, "SHA256", 0, out, outlen);
    case OP_RSA_DEC:
        return rsa_crypt(in, propq, 0, RSA_PKCS1_PADDING, in->ct_pkcs1, in->ct_pkcs1_len, out,
                         outlen);
    case OP_RSA_RAW:
        return raw_sign(in, propq, out, outlen);
    case OP_RSA_OAEP:
        return rsa_crypt(in, propq, 0, RSA_PKCS1_OAEP_PADDING, in->ct_oaep, in->ct_oaep_len, out,
                         outlen);
    case OP_RSA_TLS_PMS:
        return rsa_crypt(in, propq, 0, RSA_PKCS1_WITH_TLS_PADDING, in->ct_pms, in->ct_pms_len, out,
                         outlen);
    default:
        return 0;
    }
}

/* Is |out| what the default provider says it must be? */
static int check_output(struct inst *in, enum op_kind kind, const unsigned char *out, size_t outlen)
{
    switch (kind) {
    case OP_RSA_PKCS1:
        return outlen == in->ref_pkcs1_len && memcmp(out, in->ref_pkcs1, outlen) == 0;
    case OP_RSA_RAW:
        return outlen == in->ref_raw_len && memcmp(out, in->ref_raw, outlen) == 0;
    case OP_RSA_PSS:
        return digest_verify(in, in->rsa, RSA_PKCS1_PSS_PADDING, out, outlen);
    case OP_ECDSA:
        return digest_verify(in, in->ec, 0, out, outlen);
    case OP_RSA_DEC:
    case OP_RSA_OAEP:
        return outlen == sizeof(MSG) && memcmp(out, MSG, outlen) == 0;
    case OP_RSA_TLS_PMS:
        return outlen == sizeof(in->pms) && memcmp(out, in->pms, outlen) == 0;
    default:
        return 0;
    }
}

static int find_fakeaccel(OSSL_PROVIDER *prov, void *arg)
{
    if (strcmp(OSSL_PROVIDER_get0_name(prov), "fakeaccel") == 0)
        *(OSSL_PROVIDER **)arg = prov;
    return 1;
}

static uint64_t counter(struct inst *in, const char *name)
{
    return tu_param_u64(in->fa, name);
}

static int inst_keys(struct inst *in)
{
    EVP_PKEY_CTX *c;
    size_t len;
    int ok;

    c = EVP_PKEY_CTX_new_from_name(in->libctx, "RSA", DF);
    ok = c != NULL && EVP_PKEY_keygen_init(c) > 0 &&
         EVP_PKEY_CTX_set_rsa_keygen_bits(c, 2048) > 0 && EVP_PKEY_generate(c, &in->rsa) > 0;
    EVP_PKEY_CTX_free(c);
    if (!ok)
        return 0;
    c = EVP_PKEY_CTX_new_from_name(in->libctx, "EC", DF);
    ok = c != NULL && EVP_PKEY_keygen_init(c) > 0 && EVP_PKEY_CTX_set_group_name(c, "P-256") > 0 &&
         EVP_PKEY_generate(c, &in->ec) > 0;
    EVP_PKEY_CTX_free(c);
    if (!ok)
        return 0;

    in->ref_pkcs1_len = sizeof(in->ref_pkcs1);
    in->ref_raw_len = sizeof(in->ref_raw);
    in->ct_pkcs1_len = sizeof(in->ct_pkcs1);
    in->ct_oaep_len = sizeof(in->ct_oaep);
    in->ct_pms_len = sizeof(in->ct_pms);
    memset(in->pms, 0x5a, sizeof(in->pms));
    in->pms[0] = 0x03;
    in->pms[1] = 0x03;
    len = in->ct_pms_len;
    ok = do_op(in, OP_RSA_PKCS1, DF, in->ref_pkcs1, &in->ref_pkcs1_len) &&
         do_op(in, OP_RSA_RAW, DF, in->ref_raw, &in->ref_raw_len) &&
         rsa_crypt(in, DF, 1, RSA_PKCS1_PADDING, MSG, sizeof(MSG), in->ct_pkcs1,
                   &in->ct_pkcs1_len) &&
         rsa_crypt(in, DF, 1, RSA_PKCS1_OAEP_PADDING, MSG, sizeof(MSG), in->ct_oaep,
                   &in->ct_oaep_len) &&
         rsa_crypt(in, DF, 1, RSA_PKCS1_PADDING, in->pms, sizeof(in->pms), in->ct_pms, &len);
    in->ct_pms_len = len;
    return ok;
}

/* Loads fakeaccel (configured through the environment) and default into a new libctx. */
static int inst_new_env(struct inst *in, const char *delay, const char *notify,
                        const char *fail_every)
{
    int ok;

    in->libctx = OSSL_LIB_CTX_new();
    if (in->libctx == NULL ||
        !OSSL_PROVIDER_set_default_search_path(in->libctx, FAKEACCEL_MODULE_DIR))
        return 0;
    setenv("FAKEACCEL_DELAY_US", delay, 1);
    if (notify != NULL)
        setenv("FAKEACCEL_NOTIFY", notify, 1);
    if (fail_every != NULL)
        setenv("FAKEACCEL_FAIL_EVERY", fail_every, 1);
    in->fa = OSSL_PROVIDER_load(in->libctx, "fakeaccel");
    unsetenv("FAKEACCEL_DELAY_US");
    unsetenv("FAKEACCEL_NOTIFY");
    unsetenv("FAKEACCEL_FAIL_EVERY");
    in->fa_loaded = 1;
    in->dflt = OSSL_PROVIDER_load(in->libctx, "default");
    ok = in->fa != NULL && in->dflt != NULL;
    if (!ok)
        tu_print_errors("loading fakeaccel");
    return ok && inst_keys(in);
}

/* Loads fakeaccel and default the way the gateway will: a config text. */
static int inst_new_config(struct inst *in, const char *delay, const char *notify)
{
    char text[1024];
    CONF *conf;
    BIO *bio;
    long eline = -1;
    int ok;

    snprintf(text, sizeof(text),
             "openssl_conf = openssl_init\n"
             "[openssl_init]\n"
             "providers = provider_sect\n"
             "[provider_sect]\n"
             "fakeaccel = fakeaccel_sect\n"
             "default = default_sect\n"
             "[fakeaccel_sect]\n"
             "module = %s/fakeaccel.so\n"
             "activate = 1\n"
             "delay_us = %s\n"
             "notify = %s\n"
             "fail_every = 0\n"
             "[default_sect]\n"
             "activate = 1\n",
             FAKEACCEL_MODULE_DIR, delay, notify);
    in->libctx = OSSL_LIB_CTX_new();
    conf = NCONF_new_ex(in->libctx, NULL);
    bio = BIO_new_mem_buf(text, -1);
    ok = in->libctx != NULL && conf != NULL && bio != NULL &&
         NCONF_load_bio(conf, bio, &eline) > 0 && CONF_modules_load(conf, NULL, 0) > 0;
    BIO_free(bio);
    NCONF_free(conf);
    if (!ok) {
        tu_print_errors("loading the config");
        return 0;
    }
    OSSL_PROVIDER_do_all(in->libctx, find_fakeaccel, &in->fa);
    return in->fa != NULL && inst_keys(in);
}

static void inst_free(struct inst *in)
{
    EVP_PKEY_free(in->rsa);
    EVP_PKEY_free(in->ec);
    if (in->fa_loaded)
        OSSL_PROVIDER_unload(in->fa);
    if (in->dflt != NULL)
        OSSL_PROVIDER_unload(in->dflt);
    OSSL_LIB_CTX_free(in->libctx); /* tears fakeaccel down: stops its thread */
    memset(in, 0, offsetof(struct inst, ref_pkcs1));
}

/* ---- driving ASYNC jobs ---- */

enum wake_mode {
    WAKE_CALLBACK,      /* the wait ctx has our callback; the driver waits for it */
    WAKE_FD,            /* the driver polls the wait fds */
    WAKE_FD_WITH_CB_SET /* poll the fds, but a callback is set (that must not be called) */
};

struct job {
    struct inst *in;
    enum op_kind kind;
    ASYNC_JOB *job;
    ASYNC_WAIT_CTX *wctx;
    int ret;
    int finished, pauses, bad_status, fds_added;
    int block_pause; /* run the operation under ASYNC_block_pause() */
    atomic_int woken, wakeups;
    unsigned char out[512];
    size_t outlen;
};

static int g_wake_efd = -1; /* written by the wake-up callback (from the accelerator thread) */

static int wake_cb(void *arg)
{
    struct job *j = arg;
    uint64_t one = 1;

    atomic_fetch_add(&j->wakeups, 1);
    atomic_store(&j->woken, 1);
    if (write(g_wake_efd, &one, sizeof(one)) < 0)
        return 0;
    return 1;
}

static int job_fn(void *arg)
{
    struct job *j = *(struct job **)arg;
    int ok;

    j->outlen = sizeof(j->out);
    if (j->block_pause)
        ASYNC_block_pause();
    ok = do_op(j->in, j->kind, FA, j->out, &j->outlen);
    if (j->block_pause)
        ASYNC_unblock_pause();
    return ok;
}

/* Starts or resumes |j|; returns 0 on an ASYNC error. */
static int job_step(struct job *j, enum wake_mode mode)
{
    struct job *jp = j;
    int r = ASYNC_start_job(&j->job, j->wctx, &j->ret, job_fn, &jp, sizeof(jp));

    if (!tu_job_started(r, &j->pauses, &j->finished))
        return 0;
    if (r == ASYNC_PAUSE) {
        size_t nadd = 0, ndel = 0;

        if (mode == WAKE_CALLBACK && ASYNC_WAIT_CTX_get_status(j->wctx) != ASYNC_STATUS_OK)
            j->bad_status++;
        if (ASYNC_WAIT_CTX_get_changed_fds(j->wctx, NULL, &nadd, NULL, &ndel))
            j->fds_added += (int)nadd;
    }
    return 1;
}

static struct job *jobs_new(struct inst *in, int n, enum wake_mode mode, const enum op_kind *kinds,
                            int nkinds)
{
    struct job *jobs = calloc((size_t)n, sizeof(*jobs));
    int i;

    assert_non_null(jobs);
    for (i = 0; i < n; i++) {
        jobs[i].in = in;
        jobs[i].kind = kinds[i % nkinds];
        jobs[i].wctx = ASYNC_WAIT_CTX_new();
        assert_non_null(jobs[i].wctx);
        if (mode != WAKE_FD)
            assert_int_equal(ASYNC_WAIT_CTX_set_callback(jobs[i].wctx, wake_cb, &jobs[i]), 1);
    }
    return jobs;
}

static void jobs_free(struct job *jobs, int n)
{
    int i;

    for (i = 0; i < n; i++)
        ASYNC_WAIT_CTX_free(jobs[i].wctx);
    free(jobs);
}

/* Runs all jobs to completion; returns 0 if they stall (no wake-up for 10 s). */
static int jobs_run(struct job *jobs, int n, enum wake_mode mode, int spurious)
{
    struct pollfd *pfds = calloc((size_t)n + 1, sizeof(*pfds));
    int *idx = calloc((size_t)n + 1, sizeof(*idx));
    int i, remaining = n, ok = 1;

    assert_non_null(pfds);
    assert_non_null(idx);
    for (i = 0; i < n && ok; i++)
        ok = job_step(&jobs[i], mode);
    /* Spurious resumes: everyone once, before any notification can have come. */
    for (i = 0; i < n && ok && spurious; i++)
        if (!jobs[i].finished)
            ok = job_step(&jobs[i], mode);
    for (i = 0; i < n; i++)
        remaining -= jobs[i].finished;

    while (ok && remaining > 0) {
        int np = 0, r;

        if (mode == WAKE_CALLBACK) {
            uint64_t v;

            pfds[0].fd = g_wake_efd;
            pfds[0].events = POLLIN;
            r = poll(pfds, 1, 10000);
            if (r <= 0)
                break;
            if (read(g_wake_efd, &v, sizeof(v)) < 0)
                break;
            for (i = 0; i < n && ok; i++) {
                if (jobs[i].finished || !atomic_exchange(&jobs[i].woken, 0))
                    continue;
                ok = job_step(&jobs[i], mode);
                remaining -= jobs[i].finished;
            }
            continue;
        }
        for (i = 0; i < n; i++) {
            OSSL_ASYNC_FD fd;
            size_t nfds = 0;

            if (jobs[i].finished)
                continue;
            if (!ASYNC_WAIT_CTX_get_all_fds(jobs[i].wctx, NULL, &nfds) || nfds != 1 ||
                !ASYNC_WAIT_CTX_get_all_fds(jobs[i].wctx, &fd, &nfds)) {
                fprintf(stderr, "# job %d: %zu wait fds\n", i, nfds);
                ok = 0;
                break;
            }
            pfds[np].fd = fd;
            pfds[np].events = POLLIN;
            pfds[np].revents = 0;
            idx[np++] = i;
        }
        if (!ok)
            break;
        r = poll(pfds, (nfds_t)np, 10000);
        if (r <= 0)
            break;
        for (i = 0; i < np && ok; i++) {
            if ((pfds[i].revents & POLLIN) == 0)
                continue;
            ok = job_step(&jobs[idx[i]], mode);
            remaining -= jobs[idx[i]].finished;
        }
    }
    free(pfds);
    free(idx);
    if (remaining > 0)
        fprintf(stderr, "# %d jobs stalled\n", remaining);
    return ok && remaining == 0;
}

/* Every job succeeded, paused, has the right output; and was woken the right way. */
static void jobs_check(struct job *jobs, int n, enum wake_mode mode)
{
    int i;

    for (i = 0; i < n; i++) {
        struct job *j = &jobs[i];

        if (j->ret != 1 || !check_output(j->in, j->kind, j->out, j->outlen)) {
            tu_print_errors(op_names[j->kind]);
            fail_msg("job %d (%s): ret %d, wrong output", i, op_names[j->kind], j->ret);
        }
        assert_true(j->pauses >= 1);
        assert_int_equal(j->bad_status, 0);
        if (mode == WAKE_CALLBACK) {
            assert_int_equal(atomic_load(&j->wakeups), 1);
            assert_int_equal(j->fds_added, 0);
        } else {
            assert_int_equal(atomic_load(&j->wakeups), 0);
            assert_int_equal(j->fds_added, 1); /* one eventfd, announced on the first pause */
        }
    }
}

static const enum op_kind main_kinds[] = {OP_RSA_PKCS1, OP_RSA_PSS, OP_ECDSA, OP_RSA_DEC};
static const enum op_kind all_kinds[] = {OP_RSA_PKCS1, OP_RSA_PSS,  OP_ECDSA,      OP_RSA_DEC,
                                         OP_RSA_RAW,   OP_RSA_OAEP, OP_RSA_TLS_PMS};

/* N concurrent jobs of the main kinds; checks results and counters. */
static void run_concurrent(struct inst *in, int n, enum wake_mode mode, int spurious)
{
    uint64_t ops0 = counter(in, "ops"), async0 = counter(in, "ops_async");
    struct job *jobs = jobs_new(in, n, mode, main_kinds, 4);

    assert_true(jobs_run(jobs, n, mode, spurious));
    jobs_check(jobs, n, mode);
    jobs_free(jobs, n);
    assert_int_equal(counter(in, "ops") - ops0, (uint64_t)n);
    assert_int_equal(counter(in, "ops_async") - async0, (uint64_t)n);
    assert_int_equal(counter(in, "inflight"), 0);
    assert_int_equal(counter(in, "fails"), 0);
}

/* One run_concurrent() of a test's table. */
struct run {
    struct inst *in;
    int n;
    enum wake_mode mode;
    int spurious;
};

static void run_each(const struct run *r, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        run_concurrent(r[i].in, r[i].n, r[i].mode, r[i].spurious);
}
#define RUN_EACH(runs) run_each((runs), sizeof(runs) / sizeof((runs)[0]))

/* ---- tests ---- */

static int group_setup(void **state)
{
    (void)state;
    g_wake_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (g_wake_efd < 0 || !ASYNC_is_capable())
        return -1;
    if (!inst_new_env(&g_a, "2000", NULL, NULL) || !inst_new_config(&g_b, "2000", "fd") ||
        !inst_new_env(&g_c, "500", "callback", "3")) {
        tu_print_errors("setup");
        return -1;
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    inst_free(&g_a);
    inst_free(&g_b);
    inst_free(&g_c);
    close(g_wake_efd);
    ASYNC_cleanup_thread();
    return 0;
}

static void test_provider_params(void **state)
{
    const char *name = NULL, *version = NULL;
    int status = 0;
    OSSL_PARAM params[4];

    (void)state;
    params[0] = OSSL_PARAM_construct_utf8_ptr(OSSL_PROV_PARAM_NAME, (char **)&name, 0);
    params[1] = OSSL_PARAM_construct_utf8_ptr(OSSL_PROV_PARAM_VERSION, (char **)&version, 0);
    params[2] = OSSL_PARAM_construct_int(OSSL_PROV_PARAM_STATUS, &status);
    params[3] = OSSL_PARAM_construct_end();
    assert_true(OSSL_PROVIDER_get_params(g_a.fa, params));
    assert_string_equal(name, "fakeaccel");
    assert_non_null(version);
    assert_int_equal(status, 1);
    assert_true(OSSL_PROVIDER_available(g_b.libctx, "fakeaccel"));
    assert_int_equal(counter(&g_b, "inflight"), 0);
    {
        /* Unsigned counters can be read into a 32-bit unsigned too. */
        unsigned int ops32 = 12345;
        OSSL_PARAM p32[2] = {OSSL_PARAM_construct_uint("ops", &ops32), OSSL_PARAM_END};

        assert_true(OSSL_PROVIDER_get_params(g_a.fa, p32));
        assert_int_equal(ops32, counter(&g_a, "ops"));
    }
}

/* Outside a job: synchronous, every kind, each takes at least the delay. */
static void test_sync_ops(void **state)
{
    struct inst *insts[] = {&g_a, &g_b};
    size_t i;
    int k;

    (void)state;
    for (i = 0; i < 2; i++) {
        struct inst *in = insts[i];
        uint64_t ops0 = counter(in, "ops"), async0 = counter(in, "ops_async");

        for (k = 0; k < OP_KINDS; k++) {
            unsigned char out[512];
            size_t outlen = sizeof(out);
            uint64_t t0 = tu_now_us();

            if (!do_op(in, (enum op_kind)k, FA, out, &outlen) ||
                !check_output(in, (enum op_kind)k, out, outlen)) {
                tu_print_errors(op_names[k]);
                fail_msg("%s: sync %s", in->label, op_names[k]);
            }
            assert_true(tu_now_us() - t0 >= DELAY_US);
        }
        assert_int_equal(counter(in, "ops") - ops0, OP_KINDS);
        assert_int_equal(counter(in, "ops_async"), async0);
        assert_int_equal(counter(in, "inflight"), 0);
    }
}

static void test_async_callback(void **state)
{
    static const struct run runs[] = {
        {&g_a, 1, WAKE_CALLBACK, 0}, {&g_a, 8, WAKE_CALLBACK, 0}, {&g_a, 64, WAKE_CALLBACK, 0}};

    (void)state;
    RUN_EACH(runs);
}

/* notify=fd: poll() on the wait fds; an application callback, if set, is not used. */
static void test_async_fd_poll(void **state)
{
    static const struct run runs[] = {{&g_b, 1, WAKE_FD, 0},
                                      {&g_b, 8, WAKE_FD, 0},
                                      {&g_b, 64, WAKE_FD, 0},
                                      {&g_b, 8, WAKE_FD_WITH_CB_SET, 0}};

    (void)state;
    RUN_EACH(runs);
}

/* notify=callback but no application callback: the wait fd is used. */
static void test_async_callback_mode_without_callback(void **state)
{
    (void)state;
    run_concurrent(&g_a, 8, WAKE_FD, 0);
}

/* The application resumes jobs before their result is there: they pause again. */
static void test_async_spurious_resume(void **state)
{
    static const struct run runs[] = {{&g_b, 8, WAKE_FD, 1}, {&g_a, 8, WAKE_CALLBACK, 1}};

    (void)state;
    RUN_EACH(runs);
}

/* Every kind (also precomputed digest, OAEP, TLS premaster) inside jobs, both modes. */
static void test_async_all_kinds(void **state)
{
    static const struct run runs[] = {{&g_a, 2 * OP_KINDS, WAKE_CALLBACK, 0},
                                      {&g_b, 2 * OP_KINDS, WAKE_FD, 0}};
    struct job *jobs;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
        jobs = jobs_new(runs[i].in, runs[i].n, runs[i].mode, all_kinds, OP_KINDS);
        assert_true(jobs_run(jobs, runs[i].n, runs[i].mode, 0));
        jobs_check(jobs, runs[i].n, runs[i].mode);
        jobs_free(jobs, runs[i].n);
    }
}

/* A job that cannot pause (ASYNC_block_pause), or has no wait ctx: synchronous. */
static void test_async_unpausable(void **state)
{
    struct job *jobs;
    int ret = 0, r;
    struct job nowctx;
    struct job *jp = &nowctx;
    ASYNC_JOB *job = NULL;
    uint64_t async0 = counter(&g_a, "ops_async");

    (void)state;
    jobs = jobs_new(&g_a, 2, WAKE_CALLBACK, main_kinds, 4);
    jobs[0].block_pause = jobs[1].block_pause = 1;
    assert_true(job_step(&jobs[0], WAKE_CALLBACK));
    assert_true(job_step(&jobs[1], WAKE_CALLBACK));
    assert_true(jobs[0].finished && jobs[1].finished);
    assert_int_equal(jobs[0].pauses + jobs[1].pauses, 0);
    assert_int_equal(jobs[0].ret, 1);
    assert_int_equal(jobs[1].ret, 1);
    assert_true(check_output(&g_a, jobs[0].kind, jobs[0].out, jobs[0].outlen));
    assert_true(check_output(&g_a, jobs[1].kind, jobs[1].out, jobs[1].outlen));
    jobs_free(jobs, 2);
    /* the blocked jobs were queued (and waited for without pausing) */
    assert_int_equal(counter(&g_a, "ops_async") - async0, 2);

    memset(&nowctx, 0, sizeof(nowctx));
    nowctx.in = &g_a;
    nowctx.kind = OP_RSA_PKCS1;
    r = ASYNC_start_job(&job, NULL, &ret, job_fn, &jp, sizeof(jp));
    assert_int_equal(r, ASYNC_FINISH);
    assert_int_equal(ret, 1);
    assert_true(check_output(&g_a, nowctx.kind, nowctx.out, nowctx.outlen));
    assert_int_equal(counter(&g_a, "ops_async") - async0, 2);
}

/* N jobs overlap their delays: far less than N x delay. */
static void test_async_overlap(void **state)
{
    static const enum op_kind ecdsa[] = {OP_ECDSA};
    static const int ns[] = {8, 64};
    unsigned char out[512];
    uint64_t t0, compute_us;
    size_t i;
    int k;

    (void)state;
    /* What the accelerator thread will spend computing, one after the other. */
    compute_us = UINT64_MAX;
    for (k = 0; k < 16; k++) {
        size_t outlen = sizeof(out);

        t0 = tu_now_us();
        assert_true(do_op(&g_a, OP_ECDSA, DF, out, &outlen));
        if (tu_now_us() - t0 < compute_us)
            compute_us = tu_now_us() - t0;
    }

    for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
        int n = ns[i], attempt;
        uint64_t elapsed = UINT64_MAX, serial = (uint64_t)n * DELAY_US;

        /* Overlap is a property of the protocol, timing only shows it: on a loaded machine
         * a run can be preempted, so the best of up to 3 runs counts. */
        for (attempt = 0; attempt < 3 && elapsed >= serial / 2; attempt++) {
            struct job *jobs = jobs_new(&g_a, n, WAKE_CALLBACK, ecdsa, 1);
            uint64_t e;

            t0 = tu_now_us();
            assert_true(jobs_run(jobs, n, WAKE_CALLBACK, 0));
            e = tu_now_us() - t0;
            jobs_check(jobs, n, WAKE_CALLBACK);
            jobs_free(jobs, n);
            if (e < elapsed)
                elapsed = e;
        }
        printf(
            "# %d ECDSA jobs at %d us: %llu us (serial would be %llu us; %llu us compute each)\n",
            n, DELAY_US, (unsigned long long)elapsed, (unsigned long long)serial,
            (unsigned long long)compute_us);
        if (DELAY_US + 3 * n * compute_us + 2000 < serial / 2)
            assert_true(elapsed < serial / 2);
        else
            printf("# (too slow a machine, e.g. valgrind, to compare)\n");
    }
}

/* fail_every=3: the 3rd, 6th, 9th, 12th accelerated operations fail, with our error. */
static void test_fail_every(void **state)
{
    struct job *jobs;
    unsigned long e;
    const char *data = NULL;
    int flags = 0, i, injected = 0;
    unsigned char out[512];

    (void)state;
    assert_int_equal(counter(&g_c, "ops"), 0);
    ERR_clear_error();
    jobs = jobs_new(&g_c, 9, WAKE_CALLBACK, main_kinds, 4);
    assert_true(jobs_run(jobs, 9, WAKE_CALLBACK, 0));
    for (i = 0; i < 9; i++) {
        int should_fail = (i + 1) % 3 == 0;

        assert_true(jobs[i].pauses >= 1);
        if (should_fail) {
            assert_int_equal(jobs[i].ret, 0);
        } else {
            assert_int_equal(jobs[i].ret, 1);
            assert_true(check_output(&g_c, jobs[i].kind, jobs[i].out, jobs[i].outlen));
        }
    }
    jobs_free(jobs, 9);
    /* 10, 11 succeed, 12 fails: synchronously too */
    for (i = 10; i <= 12; i++) {
        size_t outlen = sizeof(out);
        int ok = do_op(&g_c, OP_ECDSA, FA, out, &outlen);

        assert_int_equal(ok, i != 12);
    }
    while ((e = ERR_get_error_all(NULL, NULL, NULL, &data, &flags)) != 0) {
        const char *reason = ERR_reason_error_string(e);

        if (reason != NULL && strstr(reason, "injected failure") != NULL) {
            injected++;
            assert_non_null(strstr(data, "fail_every=3"));
        }
    }
    assert_int_equal(injected, 4);
    assert_int_equal(counter(&g_c, "ops"), 12);
    assert_int_equal(counter(&g_c, "ops_async"), 9);
    assert_int_equal(counter(&g_c, "fails"), 4);
    assert_int_equal(counter(&g_c, "inflight"), 0);
}

/* ECDH of key (fetched with propq) with peer, in instance A: the secret into out. */
static void derive_ok(EVP_PKEY *key, const char *propq, EVP_PKEY *peer, unsigned char *out,
                      size_t *outlen)
{
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_pkey(g_a.libctx, key, propq);

    assert_non_null(c);
    assert_true(EVP_PKEY_derive_init(c) > 0);
    assert_true(EVP_PKEY_derive_set_peer(c, peer) > 0);
    assert_true(EVP_PKEY_derive(c, out, outlen) > 0);
    EVP_PKEY_CTX_free(c);
}

/* Key management through fakeaccel: generation, parameters, export, ECDH by default. */
static void test_keymgmt(void **state)
{
    EVP_PKEY_CTX *c;
    EVP_PKEY *ours = NULL, *peer = NULL, *params = NULL, *pubonly = NULL, *dup;
    unsigned char s1[64], s2[64], s3[64], pub[133], out[512], *encpub = NULL;
    size_t l1 = sizeof(s1), l2 = sizeof(s2), l3 = sizeof(s3), publen = 0, outlen;
    char group[32], md[32];
    int bits = 0, secbits = 0, maxsize = 0;
    OSSL_PARAM *exported = NULL;

    (void)state;
    /* an EC key generated by fakeaccel (delegated) */
    c = EVP_PKEY_CTX_new_from_name(g_a.libctx, "EC", FA);
    assert_non_null(c);
    assert_true(EVP_PKEY_keygen_init(c) > 0);
    assert_true(EVP_PKEY_CTX_set_group_name(c, "P-256") > 0);
    assert_true(EVP_PKEY_generate(c, &ours) > 0);
    EVP_PKEY_CTX_free(c);
    assert_string_equal(OSSL_PROVIDER_get0_name(EVP_PKEY_get0_provider(ours)), "fakeaccel");
    assert_true(EVP_PKEY_get_int_param(ours, OSSL_PKEY_PARAM_BITS, &bits));
    assert_true(EVP_PKEY_get_int_param(ours, OSSL_PKEY_PARAM_SECURITY_BITS, &secbits));
    assert_true(EVP_PKEY_get_int_param(ours, OSSL_PKEY_PARAM_MAX_SIZE, &maxsize));
    assert_int_equal(bits, 256);
    assert_int_equal(secbits, 128);
    assert_int_equal(maxsize, EVP_PKEY_get_size(g_a.ec));
    assert_true(EVP_PKEY_get_utf8_string_param(ours, OSSL_PKEY_PARAM_GROUP_NAME, group,
                                               sizeof(group), NULL));
    assert_string_equal(group, "prime256v1");
    assert_true(EVP_PKEY_get_default_digest_name(ours, md, sizeof(md)) > 0);
    assert_string_equal(md, "SHA256");
    publen = EVP_PKEY_get1_encoded_public_key(ours, &encpub);
    assert_int_equal(publen, 65);
    OPENSSL_free(encpub);
    assert_true(EVP_PKEY_todata(ours, EVP_PKEY_KEYPAIR, &exported) > 0);
    assert_non_null(OSSL_PARAM_locate(exported, OSSL_PKEY_PARAM_PRIV_KEY));
    assert_non_null(OSSL_PARAM_locate(exported, OSSL_PKEY_PARAM_PUB_KEY));
    OSSL_PARAM_free(exported);

    /* checks, dup, equality */
    c = EVP_PKEY_CTX_new_from_pkey(g_a.libctx, ours, FA);
    assert_int_equal(EVP_PKEY_check(c), 1);
    assert_int_equal(EVP_PKEY_public_check(c), 1);
    assert_int_equal(EVP_PKEY_param_check(c), 1);
    EVP_PKEY_CTX_free(c);
    dup = EVP_PKEY_dup(ours);
    assert_non_null(dup);
    assert_int_equal(EVP_PKEY_eq(ours, dup), 1);
    assert_int_equal(EVP_PKEY_eq(ours, g_a.ec), 0);
    EVP_PKEY_free(dup);

    /* ECDH (the default provider's, through export) both ways */
    derive_ok(ours, NULL, g_a.ec, s1, &l1);
    derive_ok(g_a.ec, DF, ours, s2, &l2);
    assert_int_equal(l1, l2);
    assert_memory_equal(s1, s2, l1);

    /* libssl's server side: parameters by fakeaccel, the peer's point set on them */
    c = EVP_PKEY_CTX_new_from_name(g_a.libctx, "EC", FA);
    assert_true(EVP_PKEY_paramgen_init(c) > 0);
    assert_true(EVP_PKEY_CTX_set_group_name(c, "P-256") > 0);
    assert_true(EVP_PKEY_paramgen(c, &params) > 0);
    EVP_PKEY_CTX_free(c);
    publen = EVP_PKEY_get_octet_string_param(g_a.ec, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, pub,
                                             sizeof(pub), &publen)
                 ? publen
                 : 0;
    assert_int_equal(publen, 65);
    assert_true(EVP_PKEY_set1_encoded_public_key(params, pub, publen) > 0);
    pubonly = params;
    derive_ok(ours, NULL, pubonly, s3, &l3);
    assert_int_equal(l3, l1);
    assert_memory_equal(s3, s1, l1);

    /* libssl's client side: a key generated from a template of fakeaccel */
    c = EVP_PKEY_CTX_new_from_pkey(g_a.libctx, ours, FA);
    assert_true(EVP_PKEY_keygen_init(c) > 0);
    assert_true(EVP_PKEY_generate(c, &peer) > 0);
    EVP_PKEY_CTX_free(c);
    assert_int_equal(EVP_PKEY_get_bits(peer), 256);
    assert_int_equal(EVP_PKEY_parameters_eq(peer, ours), 1);

    /* an RSA key generated by fakeaccel signs (through fakeaccel) and verifies */
    EVP_PKEY_free(peer);
    peer = NULL;
    c = EVP_PKEY_CTX_new_from_name(g_a.libctx, "RSA", FA);
    assert_true(EVP_PKEY_keygen_init(c) > 0);
    assert_true(EVP_PKEY_CTX_set_rsa_keygen_bits(c, 2048) > 0);
    assert_true(EVP_PKEY_generate(c, &peer) > 0);
    EVP_PKEY_CTX_free(c);
    assert_int_equal(EVP_PKEY_get_bits(peer), 2048);
    outlen = sizeof(out);
    assert_true(digest_sign(&g_a, peer, FA, "SHA256", RSA_PKCS1_PSS_PADDING, out, &outlen));
    assert_true(digest_verify(&g_a, peer, RSA_PKCS1_PSS_PADDING, out, outlen));
    /* and TLS 1.0/1.1's MD5-SHA1 */
    outlen = sizeof(out);
    assert_true(digest_sign(&g_a, peer, FA, "MD5-SHA1", RSA_PKCS1_PADDING, out, &outlen));

    EVP_PKEY_free(peer);
    EVP_PKEY_free(params);
    EVP_PKEY_free(ours);
}

/* fork(): the child has no accelerator thread and must not deadlock. */
static void test_fork(void **state)
{
    struct job *jobs;
    pid_t pid;
    int status = -1, waited;

    (void)state;
#if defined(__SANITIZE_THREAD__)
    /* ThreadSanitizer cannot follow a threaded parent's child that starts threads ("dup
     * thread with used id"); prov_regress_fork covers fork() in the TSan build. */
    skip();
#endif
    /* A job of the parent is paused, its request in the queue, when we fork. */
    jobs = jobs_new(&g_a, 1, WAKE_CALLBACK, main_kinds, 1);
    assert_true(job_step(&jobs[0], WAKE_CALLBACK));
    assert_int_equal(jobs[0].pauses, 1);
    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* Child: finish the inherited job, then new jobs and a synchronous op. */
        struct job *more;
        unsigned char out[512];
        size_t outlen = sizeof(out);
        int ok;

        uint64_t deadline = tu_now_us() + 10000000;

        alarm(20);
        /*
         * The child's new accelerator thread may already have called the callback, and
         * written to the eventfd inherited from (so shared with) the parent: the woken
         * flag, in the child's memory, is what counts.
         */
        g_wake_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        ok = 1;
        while (ok && !jobs[0].finished && tu_now_us() < deadline) {
            struct pollfd p = {g_wake_efd, POLLIN, 0};
            uint64_t v;

            if (atomic_exchange(&jobs[0].woken, 0)) {
                ok = job_step(&jobs[0], WAKE_CALLBACK);
                continue;
            }
            if (poll(&p, 1, 50) == 1 && read(g_wake_efd, &v, sizeof(v)) < 0)
                ok = 0;
        }
        ok = ok && jobs[0].finished;
        if (!ok)
            fprintf(stderr, "# child: inherited job stalled\n");
        ok =
            ok && jobs[0].ret == 1 && check_output(&g_a, jobs[0].kind, jobs[0].out, jobs[0].outlen);
        if (!ok)
            fprintf(stderr, "# child: inherited job failed (ret %d)\n", jobs[0].ret);
        more = jobs_new(&g_a, 8, WAKE_CALLBACK, main_kinds, 4);
        ok = ok && jobs_run(more, 8, WAKE_CALLBACK, 0);
        for (int i = 0; ok && i < 8; i++)
            ok = more[i].ret == 1 && more[i].pauses >= 1 &&
                 check_output(&g_a, more[i].kind, more[i].out, more[i].outlen);
        if (!ok)
            fprintf(stderr, "# child: new jobs failed\n");
        ok = ok && do_op(&g_a, OP_RSA_PKCS1, FA, out, &outlen) &&
             check_output(&g_a, OP_RSA_PKCS1, out, outlen);
        if (!ok)
            _exit(3);
        /* Tear everything down, as the parent does: no deadlock, no crash. */
        jobs_free(more, 8);
        jobs_free(jobs, 1);
        group_teardown(NULL);
        /*
         * Success is reported by exec'ing true: under valgrind, an exit would run the
         * leak check on the OpenSSL thread state (DRBGs, error queue) of the parent's
         * accelerator thread, inherited as memory but freeable only by that thread, which
         * does not exist here. The parent's own run is leak-checked in full.
         */
        execl("/bin/true", "true", (char *)NULL);
        _exit(0);
    }
    /* Parent: finish its own copy of the job. */
    while (!jobs[0].finished) {
        struct pollfd p = {g_wake_efd, POLLIN, 0};
        uint64_t v;

        assert_int_equal(poll(&p, 1, 10000), 1);
        assert_true(read(g_wake_efd, &v, sizeof(v)) > 0);
        if (atomic_exchange(&jobs[0].woken, 0))
            assert_true(job_step(&jobs[0], WAKE_CALLBACK));
    }
    jobs_check(jobs, 1, WAKE_CALLBACK);
    jobs_free(jobs, 1);
    for (waited = 0; waited < 300; waited++) {
        if (waitpid(pid, &status, WNOHANG) == pid)
            break;
        usleep(100000);
    }
    if (waited == 300) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        fail_msg("the forked child deadlocked");
    }
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_provider_params),
        cmocka_unit_test(test_sync_ops),
        cmocka_unit_test(test_async_callback),
        cmocka_unit_test(test_async_fd_poll),
        cmocka_unit_test(test_async_callback_mode_without_callback),
        cmocka_unit_test(test_async_spurious_resume),
        cmocka_unit_test(test_async_all_kinds),
        cmocka_unit_test(test_async_unpausable),
        cmocka_unit_test(test_async_overlap),
        cmocka_unit_test(test_fail_every),
        cmocka_unit_test(test_keymgmt),
        cmocka_unit_test(test_fork),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
