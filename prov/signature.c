/*
 * tlsgate signatures: "RSA" (PKCS#1 v1.5, PSS, no padding) and "ECDSA".
 *
 * A signature context of ours wraps the default provider's context for the same key
 * (`inner`): parameters, verification, verify-recover, and every signature we do not
 * accelerate go to it unchanged. What we take over is the private-key step of signing
 * with an accelerated key (RSA 2048/3072/4096 two-prime with e = 65537, ECDSA on P-256):
 *
 * - RSA: the encoded message EM (EMSA-PKCS1-v1_5 or EMSA-PSS with the inner context's
 *   digest, MGF1 digest and salt length, or the raw input for no padding) is computed
 *   here, and EM^d mod n runs in an mb8 batch (blinded, CRT, fault-checked). PKCS#1 v1.5
 *   signatures are therefore byte-identical to the default provider's.
 * - ECDSA: the nonce k comes from the private library context's DRBG, (r, s) from an mb8
 *   batch, and the DER encoding from OpenSSL.
 *
 * For digest-and-sign (EVP_DigestSign*, what libssl uses) with an accelerated key we hash
 * in our own EVP_MD_CTX and sign the digest; the inner context is initialised for the same
 * digest, so its parameters (and its checks) stay authoritative.
 *
 * Outside an async job the private-key step is the default provider's (no regression for
 * synchronous callers); any encoding the default would reject, and any lane that fails,
 * is handed to the default provider, which then gives its own result or error.
 */
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rsa.h>

#include "glue.h"
#include "prov.h"

typedef struct tg_sig {
    TG_PROV *prov;
    const struct tg_impl *impl;
    enum tg_kt kt;
    void *inner;
    TG_KEY *key;
    EVP_MD_CTX *mdctx; /* our digest, when we digest-and-sign an accelerated key */
} TG_SIG;

#define SIGF(s, id, type)                                                                          \
    TG_DFLT(*(s)->impl, OSSL_FUNC_SIGNATURE_##id, OSSL_FUNC_signature_##type##_fn *)

static void *sig_newctx(TG_PROV *prov, const struct tg_impl *impl, enum tg_kt kt, const char *propq)
{
    TG_SIG *s = OPENSSL_zalloc(sizeof(*s));

    if (s == NULL)
        return NULL;
    s->prov = prov;
    s->impl = impl;
    s->kt = kt;
    s->inner = SIGF(s, NEWCTX, newctx)(prov->dflt_provctx, propq);
    if (s->inner == NULL) {
        OPENSSL_free(s);
        return NULL;
    }
    return s;
}

static void *rsa_newctx(void *provctx, const char *propq)
{
    return sig_newctx(provctx, &tg_dflt_sig_rsa, TG_KT_RSA, propq);
}

static void *ecdsa_newctx(void *provctx, const char *propq)
{
    return sig_newctx(provctx, &tg_dflt_sig_ecdsa, TG_KT_EC, propq);
}

static void sig_freectx(void *ctx)
{
    TG_SIG *s = ctx;

    if (s == NULL)
        return;
    SIGF(s, FREECTX, freectx)(s->inner);
    EVP_MD_CTX_free(s->mdctx);
    OPENSSL_free(s);
}

static void *sig_dupctx(void *ctx)
{
    TG_SIG *s = ctx, *d = OPENSSL_memdup(s, sizeof(*s));

    if (d == NULL)
        return NULL;
    d->mdctx = NULL;
    d->inner = SIGF(s, DUPCTX, dupctx)(s->inner);
    if (d->inner == NULL || (s->mdctx != NULL && ((d->mdctx = EVP_MD_CTX_new()) == NULL ||
                                                  !EVP_MD_CTX_copy_ex(d->mdctx, s->mdctx)))) {
        if (d->inner != NULL)
            SIGF(s, FREECTX, freectx)(d->inner);
        EVP_MD_CTX_free(d->mdctx);
        OPENSSL_free(d);
        return NULL;
    }
    return d;
}

/* The key object of ours, or NULL (then the call fails in the default provider). */
static TG_KEY *sig_key(TG_SIG *s, void *provkey)
{
    TG_KEY *k = provkey;

    return k != NULL && k->kt == s->kt ? k : NULL;
}

static void *inner_key(void *provkey)
{
    return provkey != NULL ? ((TG_KEY *)provkey)->inner : NULL;
}

/* provkey (NULL: none) becomes s's key: 1, or 0 (error raised) for a key of another type. */
static int sig_take_key(TG_SIG *s, void *provkey)
{
    if (provkey != NULL && sig_key(s, provkey) == NULL) {
        TG_RAISE(s->prov, TG_R_NO_KEY, "key of another type");
        return 0;
    }
    s->key = provkey;
    return 1;
}

static int sig_sign_init(void *ctx, void *provkey, const OSSL_PARAM params[])
{
    TG_SIG *s = ctx;

    if (!sig_take_key(s, provkey))
        return 0;
    EVP_MD_CTX_free(s->mdctx);
    s->mdctx = NULL;
    return SIGF(s, SIGN_INIT, sign_init)(s->inner, inner_key(provkey), params);
}

static int sig_verify_init(void *ctx, void *provkey, const OSSL_PARAM params[])
{
    TG_SIG *s = ctx;

    return sig_take_key(s, provkey) &&
           SIGF(s, VERIFY_INIT, verify_init)(s->inner, inner_key(provkey), params);
}

static int sig_verify(void *ctx, const unsigned char *sig, size_t siglen, const unsigned char *tbs,
                      size_t tbslen)
{
    TG_SIG *s = ctx;

    return SIGF(s, VERIFY, verify)(s->inner, sig, siglen, tbs, tbslen);
}

static int sig_verify_recover_init(void *ctx, void *provkey, const OSSL_PARAM params[])
{
    TG_SIG *s = ctx;
    OSSL_FUNC_signature_verify_recover_init_fn *f =
        SIGF(s, VERIFY_RECOVER_INIT, verify_recover_init);

    if (f == NULL || (provkey != NULL && sig_key(s, provkey) == NULL))
        return 0;
    s->key = provkey;
    return f(s->inner, inner_key(provkey), params);
}

static int sig_verify_recover(void *ctx, unsigned char *rout, size_t *routlen, size_t routsize,
                              const unsigned char *sig, size_t siglen)
{
    TG_SIG *s = ctx;
    OSSL_FUNC_signature_verify_recover_fn *f = SIGF(s, VERIFY_RECOVER, verify_recover);

    return f != NULL && f(s->inner, rout, routlen, routsize, sig, siglen);
}

/* ---- the accelerated private-key step ---- */

/* 1 signed, 0 failed (error raised), -1 not ours: let the default provider sign. */
static int rsa_sign_acc(TG_SIG *s, unsigned char *sig, size_t *siglen, size_t sigsize,
                        const unsigned char *tbs, size_t tbslen, int probe)
{
    TG_KEY *k = s->key;
    size_t len = k->rsa.len;
    char mdname[64] = "", mgf1name[64] = "";
    int pad = 0, saltlen = -1, ok;
    uint8_t em[512];
    OSSL_PARAM q[5];

    if (sigsize < len || len > sizeof(em))
        return -1;
    q[0] = OSSL_PARAM_construct_int(OSSL_SIGNATURE_PARAM_PAD_MODE, &pad);
    q[1] = OSSL_PARAM_construct_utf8_string(OSSL_SIGNATURE_PARAM_DIGEST, mdname, sizeof(mdname));
    q[2] = OSSL_PARAM_construct_utf8_string(OSSL_SIGNATURE_PARAM_MGF1_DIGEST, mgf1name,
                                            sizeof(mgf1name));
    q[3] = OSSL_PARAM_construct_int(OSSL_SIGNATURE_PARAM_PSS_SALTLEN, &saltlen);
    q[4] = OSSL_PARAM_construct_end();
    ERR_set_mark();
    ok = SIGF(s, GET_CTX_PARAMS, get_ctx_params)(s->inner, q);
    ERR_pop_to_mark();
    if (!ok)
        return -1;
    switch (pad) {
    case RSA_PKCS1_PADDING:
        ok = tg_pad_pkcs1_sign(s->prov, em, len, mdname, tbs, tbslen);
        break;
    case RSA_PKCS1_PSS_PADDING:
        ok = tg_pad_pss(s->prov, em, len, k->rsa.bits, mdname, mgf1name, saltlen, tbs, tbslen);
        break;
    case RSA_NO_PADDING:
        ok = tbslen == len;
        if (ok)
            memcpy(em, tbs, len);
        break;
    default:
        ok = 0;
        break;
    }
    if (!ok)
        return -1; /* the default provider reports the precise error */
    ok = tg_rsa_private(s->prov, k, em, sig, probe);
    OPENSSL_cleanse(em, len);
    if (!ok)
        return -1; /* blinding failed, input >= n, or a lane that failed its fault check */
    *siglen = len;
    return 1;
}

/*
 * ECDSA P-256 or P-384 (k->p384) on mb8: a queued batch, or, with setup (an idle-time pool
 * entry of the key's curve, mb8_p256/p384_ecdsa_sign_setup), only the completion, at once.
 * Returns 1, or -1 when the default provider must sign instead.
 */
static int ecdsa_sign_acc(TG_SIG *s, unsigned char *sig, size_t *siglen, size_t sigsize,
                          const unsigned char *tbs, size_t tbslen, int probe, const uint8_t *setup)
{
    TG_KEY *k = s->key;
    size_t mdsize = 0;
    const int p384 = k->p384;
    const size_t nb = p384 ? 48 : 32;
    uint8_t e[48], nonce[48], rb[48], sb[48];
    struct tg_req r;
    OSSL_PARAM q[2];
    ECDSA_SIG *es = NULL;
    BIGNUM *br = NULL, *bs = NULL;
    unsigned char *p;
    int ok = 0, tries, derlen;

    if (sigsize < (p384 ? 104u : 72u)) /* ECDSA_size(): the default provider wants that much */
        return -1;
    q[0] = OSSL_PARAM_construct_size_t(OSSL_SIGNATURE_PARAM_DIGEST_SIZE, &mdsize);
    q[1] = OSSL_PARAM_construct_end();
    ERR_set_mark();
    if (!SIGF(s, GET_CTX_PARAMS, get_ctx_params)(s->inner, q))
        mdsize = 0;
    ERR_pop_to_mark();
    if ((mdsize != 0 && tbslen != mdsize) || tbslen == 0)
        return -1;
    /* e = the leftmost 256 (P-384: 384) bits of the digest (FIPS 186-4 §6.4) */
    memset(e, 0, sizeof(e));
    if (tbslen >= nb)
        memcpy(e, tbs, nb);
    else
        memcpy(e + nb - tbslen, tbs, tbslen);
    if (setup != NULL) {
        uint8_t *ro[MB8_LANES] = {rb}, *so[MB8_LANES] = {sb};
        const uint8_t *ep[MB8_LANES] = {e}, *dp[MB8_LANES] = {k->priv}, *sp[MB8_LANES] = {setup};

        /* BAD_INPUT only when s came out 0 (p ~ 2^-256): then a fresh nonce below */
        ok = mb8_status_lane(p384 ? mb8_p384_ecdsa_sign_complete(ro, so, ep, dp, sp)
                                  : mb8_p256_ecdsa_sign_complete(ro, so, ep, dp, sp),
                             0) == MB8_STATUS_OK;
    }
    for (tries = 0; tries < 4 && !ok; tries++) {
        if (!(p384 ? tg_p384_random_scalar(s->prov, nonce) : tg_p256_random_scalar(s->prov, nonce)))
            break;
        memset(&r, 0, sizeof(r));
        r.op = p384 ? TG_OP_ECDSA_P384 : TG_OP_ECDSA_P256;
        r.probe = probe;
        r.in = e;
        r.in2 = nonce;
        r.priv = k->priv;
        r.out = rb;
        r.out2 = sb;
        if (!tg_batch_run(s->prov, &r))
            break;
        ok = r.status == MB8_STATUS_OK; /* BAD_INPUT here: r or s was 0, draw a new k */
    }
    OPENSSL_cleanse(nonce, sizeof(nonce));
    if (!ok)
        return -1;
    ok = 0;
    if ((es = ECDSA_SIG_new()) == NULL || (br = BN_bin2bn(rb, (int)nb, NULL)) == NULL ||
        (bs = BN_bin2bn(sb, (int)nb, NULL)) == NULL || !ECDSA_SIG_set0(es, br, bs)) {
        BN_free(br);
        BN_free(bs);
        goto done;
    }
    derlen = i2d_ECDSA_SIG(es, NULL);
    if (derlen <= 0 || (size_t)derlen > sigsize)
        goto done;
    p = sig;
    if (i2d_ECDSA_SIG(es, &p) != derlen)
        goto done;
    *siglen = (size_t)derlen;
    ok = 1;
done:
    ECDSA_SIG_free(es);
    if (!ok)
        TG_RAISE(s->prov, TG_R_INTERNAL, "ECDSA signature encoding failed");
    return ok;
}

/* Can the private-key step of s be ours? Computes the key's accelerated form once. */
static int sig_accelerated(TG_SIG *s)
{
    TG_KEY *k = s->key;

    if (k == NULL || !tg_key_acc(k))
        return 0;
    if (s->kt == TG_KT_RSA)
        return (s->prov->enable & TG_EN_RSA) && k->rsa.key != NULL;
    return (s->prov->enable & TG_EN_ECDSA) && k->has_priv;
}

/* The queue (and metrics) of s's key: TG_OP_COUNT when no mb8 kernel takes it. */
static enum tg_op sig_op(TG_SIG *s)
{
    TG_KEY *k = s->key;

    if (k == NULL || !tg_key_acc(k))
        return TG_OP_COUNT;
    if (s->kt == TG_KT_RSA)
        return k->rsa.key != NULL ? tg_rsa_op(k->rsa.bits) : TG_OP_COUNT;
    return !k->has_priv ? TG_OP_COUNT : k->p384 ? TG_OP_ECDSA_P384 : TG_OP_ECDSA_P256;
}

/* ... and with the context's padding (RSA: PKCS#1 v1.5, PSS or none; X9.31 is not ours)? */
static int sig_eligible(TG_SIG *s)
{
    int pad = 0, ok;
    OSSL_PARAM q[2];

    if (!sig_accelerated(s))
        return 0;
    if (s->kt != TG_KT_RSA)
        return 1;
    q[0] = OSSL_PARAM_construct_int(OSSL_SIGNATURE_PARAM_PAD_MODE, &pad);
    q[1] = OSSL_PARAM_construct_end();
    ERR_set_mark();
    ok = SIGF(s, GET_CTX_PARAMS, get_ctx_params)(s->inner, q);
    ERR_pop_to_mark();
    return ok &&
           (pad == RSA_PKCS1_PADDING || pad == RSA_PKCS1_PSS_PADDING || pad == RSA_NO_PADDING);
}

static int sig_sign(void *ctx, unsigned char *sig, size_t *siglen, size_t sigsize,
                    const unsigned char *tbs, size_t tbslen)
{
    TG_SIG *s = ctx;
    int r;

    if (sig == NULL || s->key == NULL) /* a size query, or no key: the default answers */
        return SIGF(s, SIGN, sign)(s->inner, sig, siglen, sigsize, tbs, tbslen);
    enum tg_op op = sig_op(s);
    tg_count_op(op, TG_C_REQUESTS, 1);
    if (!sig_eligible(s)) {
        tg_count_op(op, TG_C_FALLBACKS, 1);
    } else {
        int probe = 0;
        uint8_t setup[MB8_P384_SETUP_BYTES];
        _Static_assert(MB8_P256_SETUP_BYTES <= MB8_P384_SETUP_BYTES, "setup buffer");

        /* a sign setup precomputed in idle time: only the completion is left, no batch */
        if ((op == TG_OP_ECDSA_P256 &&
             tg_pool_take(s->prov, TG_POOL_ECDSA_SETUP, setup, MB8_P256_SETUP_BYTES)) ||
            (op == TG_OP_ECDSA_P384 &&
             tg_pool_take(s->prov, TG_POOL_ECDSA_SETUP_P384, setup, MB8_P384_SETUP_BYTES))) {
            r = ecdsa_sign_acc(s, sig, siglen, sigsize, tbs, tbslen, 0, setup);
            OPENSSL_cleanse(setup, sizeof(setup));
            if (r >= 0)
                return r;
            tg_count_op(op, TG_C_FALLBACKS, 1);
            return SIGF(s, SIGN, sign)(s->inner, sig, siglen, sigsize, tbs, tbslen);
        }
        if (!tg_batch_can_queue() || !tg_batch_want(s->prov, op, &probe)) {
            uint64_t t0 = tg_now_ns();

            tg_count_op(op, TG_C_SYNC, 1);
            r = SIGF(s, SIGN, sign)(s->inner, sig, siglen, sigsize, tbs, tbslen);
            if (r > 0)
                tg_batch_single_done(op, tg_now_ns() - t0);
            return r;
        }
        tg_count_op(op, TG_C_REQUESTS_ASYNC, 1);
        r = s->kt == TG_KT_RSA ? rsa_sign_acc(s, sig, siglen, sigsize, tbs, tbslen, probe)
                               : ecdsa_sign_acc(s, sig, siglen, sigsize, tbs, tbslen, probe, NULL);
        if (r >= 0)
            return r;
        tg_count_op(op, TG_C_FALLBACKS, 1);
    }
    return SIGF(s, SIGN, sign)(s->inner, sig, siglen, sigsize, tbs, tbslen);
}

/* ---- digest and sign ---- */

static int sig_digest_sign_init(void *ctx, const char *mdname, void *provkey,
                                const OSSL_PARAM params[])
{
    TG_SIG *s = ctx;
    char name[64] = "";
    OSSL_PARAM q[2];
    EVP_MD *md = NULL;
    int ok;

    if (provkey != NULL && sig_key(s, provkey) == NULL) {
        TG_RAISE(s->prov, TG_R_NO_KEY, "key of another type");
        return 0;
    }
    if (provkey != NULL)
        s->key = provkey;
    EVP_MD_CTX_free(s->mdctx);
    s->mdctx = NULL;
    if (!SIGF(s, DIGEST_SIGN_INIT, digest_sign_init)(s->inner, mdname, inner_key(provkey), params))
        return 0;
    if (!sig_accelerated(s))
        return 1; /* the default provider digests and signs */
    /* the digest the inner context settled on (mdname may have been NULL: its default) */
    q[0] = OSSL_PARAM_construct_utf8_string(OSSL_SIGNATURE_PARAM_DIGEST, name, sizeof(name));
    q[1] = OSSL_PARAM_construct_end();
    ERR_set_mark();
    ok = SIGF(s, GET_CTX_PARAMS, get_ctx_params)(s->inner, q) && name[0] != '\0' &&
         (md = EVP_MD_fetch(s->prov->libctx, name, NULL)) != NULL &&
         (s->mdctx = EVP_MD_CTX_new()) != NULL && EVP_DigestInit_ex2(s->mdctx, md, NULL);
    ERR_pop_to_mark();
    EVP_MD_free(md);
    if (!ok) { /* not a digest we can run: everything stays with the default provider */
        EVP_MD_CTX_free(s->mdctx);
        s->mdctx = NULL;
    }
    return 1;
}

static int sig_digest_sign_update(void *ctx, const unsigned char *data, size_t datalen)
{
    TG_SIG *s = ctx;

    if (s->mdctx != NULL)
        return EVP_DigestUpdate(s->mdctx, data, datalen);
    return SIGF(s, DIGEST_SIGN_UPDATE, digest_sign_update)(s->inner, data, datalen);
}

static int sig_digest_sign_final(void *ctx, unsigned char *sig, size_t *siglen, size_t sigsize)
{
    TG_SIG *s = ctx;
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;
    int ok;

    if (s->mdctx == NULL) {
        if (sig != NULL && s->key != NULL) { /* a key or digest we do not accelerate */
            tg_count_op(sig_op(s), TG_C_REQUESTS, 1);
            tg_count_op(sig_op(s), TG_C_FALLBACKS, 1);
        }
        return SIGF(s, DIGEST_SIGN_FINAL, digest_sign_final)(s->inner, sig, siglen, sigsize);
    }
    if (sig == NULL) /* size query: the digest state must stay untouched */
        return SIGF(s, SIGN, sign)(s->inner, NULL, siglen, 0, NULL, 0);
    if (!EVP_DigestFinal_ex(s->mdctx, digest, &dlen))
        return 0;
    ok = sig_sign(s, sig, siglen, sigsize, digest, dlen);
    OPENSSL_cleanse(digest, sizeof(digest));
    return ok;
}

static int sig_digest_verify_init(void *ctx, const char *mdname, void *provkey,
                                  const OSSL_PARAM params[])
{
    TG_SIG *s = ctx;

    if (provkey != NULL && sig_key(s, provkey) == NULL)
        return 0;
    if (provkey != NULL)
        s->key = provkey;
    EVP_MD_CTX_free(s->mdctx);
    s->mdctx = NULL;
    return SIGF(s, DIGEST_VERIFY_INIT, digest_verify_init)(s->inner, mdname, inner_key(provkey),
                                                           params);
}

static int sig_digest_verify_update(void *ctx, const unsigned char *data, size_t datalen)
{
    TG_SIG *s = ctx;

    return SIGF(s, DIGEST_VERIFY_UPDATE, digest_verify_update)(s->inner, data, datalen);
}

static int sig_digest_verify_final(void *ctx, const unsigned char *sig, size_t siglen)
{
    TG_SIG *s = ctx;

    return SIGF(s, DIGEST_VERIFY_FINAL, digest_verify_final)(s->inner, sig, siglen);
}

/* ---- parameters: the inner context's ---- */

static int sig_get_ctx_params(void *ctx, OSSL_PARAM params[])
{
    TG_SIG *s = ctx;

    return SIGF(s, GET_CTX_PARAMS, get_ctx_params)(s->inner, params);
}

static int sig_set_ctx_params(void *ctx, const OSSL_PARAM params[])
{
    TG_SIG *s = ctx;

    return SIGF(s, SET_CTX_PARAMS, set_ctx_params)(s->inner, params);
}

static int sig_get_ctx_md_params(void *ctx, OSSL_PARAM params[])
{
    TG_SIG *s = ctx;
    OSSL_FUNC_signature_get_ctx_md_params_fn *f = SIGF(s, GET_CTX_MD_PARAMS, get_ctx_md_params);

    if (s->mdctx != NULL)
        return EVP_MD_CTX_get_params(s->mdctx, params);
    return f != NULL && f(s->inner, params);
}

static int sig_set_ctx_md_params(void *ctx, const OSSL_PARAM params[])
{
    TG_SIG *s = ctx;
    OSSL_FUNC_signature_set_ctx_md_params_fn *f = SIGF(s, SET_CTX_MD_PARAMS, set_ctx_md_params);

    if (s->mdctx != NULL)
        return EVP_MD_CTX_set_params(s->mdctx, params);
    return f != NULL && f(s->inner, params);
}

static const OSSL_PARAM *sig_gettable_ctx_md_params(void *ctx)
{
    TG_SIG *s = ctx;
    OSSL_FUNC_signature_gettable_ctx_md_params_fn *f =
        SIGF(s, GETTABLE_CTX_MD_PARAMS, gettable_ctx_md_params);

    return f != NULL ? f(s->inner) : NULL;
}

static const OSSL_PARAM *sig_settable_ctx_md_params(void *ctx)
{
    TG_SIG *s = ctx;
    OSSL_FUNC_signature_settable_ctx_md_params_fn *f =
        SIGF(s, SETTABLE_CTX_MD_PARAMS, settable_ctx_md_params);

    return f != NULL ? f(s->inner) : NULL;
}

#define TG_SIG_TYPE(name, IMPL)                                                                    \
    static const OSSL_PARAM *name##_gettable_ctx_params(void *ctx, void *provctx)                  \
    {                                                                                              \
        return tg_dflt_ctx_params_list(&(IMPL), OSSL_FUNC_SIGNATURE_GETTABLE_CTX_PARAMS,           \
                                       ctx != NULL ? ((TG_SIG *)ctx)->inner : NULL, provctx);      \
    }                                                                                              \
    static const OSSL_PARAM *name##_settable_ctx_params(void *ctx, void *provctx)                  \
    {                                                                                              \
        return tg_dflt_ctx_params_list(&(IMPL), OSSL_FUNC_SIGNATURE_SETTABLE_CTX_PARAMS,           \
                                       ctx != NULL ? ((TG_SIG *)ctx)->inner : NULL, provctx);      \
    }                                                                                              \
    const OSSL_DISPATCH tg_##name##_signature_functions[] = {                                      \
        TG_FN(OSSL_FUNC_SIGNATURE_NEWCTX, name##_newctx),                                          \
        TG_FNS_FREE_DUP(SIGNATURE, sig),                                                           \
        TG_FNS_SIGN_VERIFY(sig),                                                                   \
        TG_FN(OSSL_FUNC_SIGNATURE_VERIFY_RECOVER_INIT, sig_verify_recover_init),                   \
        TG_FN(OSSL_FUNC_SIGNATURE_VERIFY_RECOVER, sig_verify_recover),                             \
        TG_FNS_DIGEST_SIGN_VERIFY(sig_digest_sign_init, sig_digest_sign_update,                    \
                                  sig_digest_sign_final, sig_digest_verify_init,                   \
                                  sig_digest_verify_update, sig_digest_verify_final),              \
        TG_FNS_GET_SET(SIGNATURE, CTX_PARAMS, sig_get_ctx_params, name##_gettable_ctx_params,      \
                       sig_set_ctx_params, name##_settable_ctx_params),                            \
        TG_FNS_GET_SET(SIGNATURE, CTX_MD_PARAMS, sig_get_ctx_md_params,                            \
                       sig_gettable_ctx_md_params, sig_set_ctx_md_params,                          \
                       sig_settable_ctx_md_params),                                                \
        {0, NULL}}

TG_SIG_TYPE(rsa, tg_dflt_sig_rsa);
TG_SIG_TYPE(ecdsa, tg_dflt_sig_ecdsa);
