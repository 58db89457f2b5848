/*
 * tlsgate key exchange: "ECDH" and "X25519".
 *
 * The context wraps the default provider's (`inner`), which keeps the parameters (ECDH
 * cofactor mode, KDF settings) and derives whatever we do not accelerate. Inside an async
 * job, with accelerated keys (P-256 private key and an uncompressed P-256 peer point, or
 * X25519 keys) and no KDF, the shared secret comes from an mb8 batch:
 * - ECDH: the x-coordinate of d * Q, 32 bytes (SEC 1 §3.3.1; the peer point is validated
 *   by mb8);
 * - X25519: RFC 7748 §5, with the all-zero result rejected (§6.1) as OpenSSL does.
 */
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/params.h>

#include "glue.h"
#include "prov.h"

typedef struct tg_kex {
    TG_PROV *prov;
    const struct tg_impl *impl;
    enum tg_kt kt;
    void *inner;
    TG_KEY *key, *peer;
} TG_KEX;

#define KXF(x, id, type)                                                                           \
    TG_DFLT(*(x)->impl, OSSL_FUNC_KEYEXCH_##id, OSSL_FUNC_keyexch_##type##_fn *)

static void *kex_newctx(TG_PROV *prov, const struct tg_impl *impl, enum tg_kt kt)
{
    TG_KEX *x = OPENSSL_zalloc(sizeof(*x));

    if (x == NULL)
        return NULL;
    x->prov = prov;
    x->impl = impl;
    x->kt = kt;
    x->inner = KXF(x, NEWCTX, newctx)(prov->dflt_provctx);
    if (x->inner == NULL) {
        OPENSSL_free(x);
        return NULL;
    }
    return x;
}

static void *ecdh_newctx(void *provctx)
{
    return kex_newctx(provctx, &tg_dflt_kex_ecdh, TG_KT_EC);
}

static void *x25519_newctx(void *provctx)
{
    return kex_newctx(provctx, &tg_dflt_kex_x25519, TG_KT_X25519);
}

static void kex_freectx(void *ctx)
{
    TG_KEX *x = ctx;

    if (x == NULL)
        return;
    KXF(x, FREECTX, freectx)(x->inner);
    OPENSSL_free(x);
}

static void *kex_dupctx(void *ctx)
{
    TG_KEX *x = ctx, *d = OPENSSL_memdup(x, sizeof(*x));

    if (d == NULL)
        return NULL;
    d->inner = KXF(x, DUPCTX, dupctx)(x->inner);
    if (d->inner == NULL) {
        OPENSSL_free(d);
        return NULL;
    }
    return d;
}

static int kex_init(void *ctx, void *provkey, const OSSL_PARAM params[])
{
    TG_KEX *x = ctx;
    TG_KEY *k = provkey;

    if (k == NULL || k->kt != x->kt) {
        TG_RAISE(x->prov, TG_R_NO_KEY, "missing key or key of another type");
        return 0;
    }
    x->key = k;
    x->peer = NULL;
    return KXF(x, INIT, init)(x->inner, k->inner, params);
}

static int kex_set_peer(void *ctx, void *provkey)
{
    TG_KEX *x = ctx;
    TG_KEY *k = provkey;

    if (k == NULL || k->kt != x->kt) {
        TG_RAISE(x->prov, TG_R_NO_KEY, "missing peer key or key of another type");
        return 0;
    }
    /* remembered only once the default provider accepted it: EVP keeps no reference to
     * a rejected peer, which the application may free at once */
    if (!KXF(x, SET_PEER, set_peer)(x->inner, k->inner))
        return 0;
    x->peer = k;
    return 1;
}

/* 1 derived, 0 failed (error raised), -1 not ours: let the default provider derive. */
static int derive_acc(TG_KEX *x, unsigned char *secret, size_t *secretlen, size_t outlen, int probe)
{
    struct tg_req r;
    uint8_t out[48];
    const int p384 = x->kt == TG_KT_EC && x->key->p384;
    const size_t nb = p384 ? 48 : 32;

    if (outlen < nb || (x->kt == TG_KT_EC && x->peer->p384 != x->key->p384))
        return -1; /* a peer on another curve: the default provider reports it */
    memset(&r, 0, sizeof(r));
    r.op = p384 ? TG_OP_ECDH_P384 : x->kt == TG_KT_EC ? TG_OP_ECDH_P256 : TG_OP_X25519;
    r.probe = probe;
    r.priv = x->key->priv;
    r.in = x->peer->pub;
    r.out = out;
    if (!tg_batch_run(x->prov, &r))
        return -1;
    if (r.status != MB8_STATUS_OK) {
        OPENSSL_cleanse(out, sizeof(out));
        return -1; /* an invalid point or a zero secret: the default reports it */
    }
    memcpy(secret, out, nb);
    OPENSSL_cleanse(out, sizeof(out));
    *secretlen = nb;
    return 1;
}

/* ECDH without a KDF (X9.63 KDF derivation is the default provider's); X25519 always. */
static int no_kdf(TG_KEX *x)
{
    char kdf[32] = "";
    OSSL_PARAM q[2];
    int ok;

    if (x->kt != TG_KT_EC)
        return 1;
    q[0] = OSSL_PARAM_construct_utf8_string(OSSL_EXCHANGE_PARAM_KDF_TYPE, kdf, sizeof(kdf));
    q[1] = OSSL_PARAM_construct_end();
    ERR_set_mark();
    ok = KXF(x, GET_CTX_PARAMS, get_ctx_params)(x->inner, q);
    ERR_pop_to_mark();
    return ok && kdf[0] == '\0';
}

static int kex_derive(void *ctx, unsigned char *secret, size_t *secretlen, size_t outlen)
{
    TG_KEX *x = ctx;
    unsigned en = x->kt == TG_KT_EC ? TG_EN_ECDH : TG_EN_X25519;
    int r;

    if (secret == NULL || x->key == NULL || x->peer == NULL)
        return KXF(x, DERIVE, derive)(x->inner, secret, secretlen, outlen);
    int acc = tg_key_acc(x->key);
    enum tg_op op = !acc                ? TG_OP_COUNT
                    : x->kt != TG_KT_EC ? TG_OP_X25519
                    : x->key->p384      ? TG_OP_ECDH_P384
                                        : TG_OP_ECDH_P256;
    tg_count_op(op, TG_C_REQUESTS, 1);
    if (!(x->prov->enable & en) || !acc || !x->key->has_priv || !tg_key_acc(x->peer) ||
        !x->peer->has_pub || !no_kdf(x)) {
        tg_count_op(op, TG_C_FALLBACKS, 1);
    } else {
        int probe = 0;

        if (!tg_batch_can_queue() || !tg_batch_want(x->prov, op, &probe)) {
            uint64_t t0 = tg_now_ns();

            tg_count_op(op, TG_C_SYNC, 1);
            r = KXF(x, DERIVE, derive)(x->inner, secret, secretlen, outlen);
            if (r > 0)
                tg_batch_single_done(op, tg_now_ns() - t0);
            return r;
        }
        tg_count_op(op, TG_C_REQUESTS_ASYNC, 1);
        r = derive_acc(x, secret, secretlen, outlen, probe);
        if (r >= 0)
            return r;
        tg_count_op(op, TG_C_FALLBACKS, 1);
    }
    return KXF(x, DERIVE, derive)(x->inner, secret, secretlen, outlen);
}

static int kex_set_ctx_params(void *ctx, const OSSL_PARAM params[])
{
    TG_KEX *x = ctx;
    OSSL_FUNC_keyexch_set_ctx_params_fn *f = KXF(x, SET_CTX_PARAMS, set_ctx_params);

    return f != NULL ? f(x->inner, params) : 1;
}

static int kex_get_ctx_params(void *ctx, OSSL_PARAM params[])
{
    TG_KEX *x = ctx;
    OSSL_FUNC_keyexch_get_ctx_params_fn *f = KXF(x, GET_CTX_PARAMS, get_ctx_params);

    return f != NULL ? f(x->inner, params) : 1;
}

/* The default provider's list (tg_dflt_ctx_params_list) for ctx, of impl. */
static const OSSL_PARAM *kex_param_list(const struct tg_impl *impl, int id, void *ctx,
                                        void *provctx)
{
    TG_KEX *x = ctx;

    return tg_dflt_ctx_params_list(impl, id, x != NULL ? x->inner : NULL, provctx);
}

#define TG_KEX_TYPE(name, IMPL)                                                                    \
    static const OSSL_PARAM *name##_settable_ctx_params(void *ctx, void *provctx)                  \
    {                                                                                              \
        return kex_param_list(&(IMPL), OSSL_FUNC_KEYEXCH_SETTABLE_CTX_PARAMS, ctx, provctx);       \
    }                                                                                              \
    static const OSSL_PARAM *name##_gettable_ctx_params(void *ctx, void *provctx)                  \
    {                                                                                              \
        return kex_param_list(&(IMPL), OSSL_FUNC_KEYEXCH_GETTABLE_CTX_PARAMS, ctx, provctx);       \
    }                                                                                              \
    const OSSL_DISPATCH tg_##name##_keyexch_functions[] = {                                        \
        TG_FN(OSSL_FUNC_KEYEXCH_NEWCTX, name##_newctx),                                            \
        TG_FN(OSSL_FUNC_KEYEXCH_INIT, kex_init),                                                   \
        TG_FN(OSSL_FUNC_KEYEXCH_SET_PEER, kex_set_peer),                                           \
        TG_FN(OSSL_FUNC_KEYEXCH_DERIVE, kex_derive),                                               \
        TG_FNS_FREE_DUP(KEYEXCH, kex),                                                             \
        TG_FNS_GET_SET(KEYEXCH, CTX_PARAMS, kex_get_ctx_params, name##_gettable_ctx_params,        \
                       kex_set_ctx_params, name##_settable_ctx_params),                            \
        {0, NULL}}

TG_KEX_TYPE(ecdh, tg_dflt_kex_ecdh);
TG_KEX_TYPE(x25519, tg_dflt_kex_x25519);
