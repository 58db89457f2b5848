/*
 * tlsgate key management for "RSA", "EC" and "X25519".
 *
 * A key of ours (TG_KEY) wraps the default provider's key object (`inner`, created in the
 * private library context) and forwards every key-management call to the default
 * provider's own function on it (dflt.c): import, export, has, match, validate, params,
 * dup, load and generation behave exactly as in the default provider, so PEM keys and
 * keys generated or held by other providers work unchanged (EVP moves them by
 * export/import).
 *
 * What we add: the accelerated form of the key, computed on its first accelerated use
 * (tg_key_acc) and cached with it until the key changes: for RSA the mb8 key (limbs,
 * Montgomery constants) and a blinding pair; for EC P-256 and X25519 the raw scalar and
 * public key. And batched key generation for X25519 and P-256 inside async jobs (the TLS
 * ephemeral key share): the private scalar comes from the private library context's DRBG,
 * the public key from an mb8 batch, and the pair is imported into a default-provider key.
 */
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <gmp.h>

#include "glue.h"
#include "prov.h"

#define TG_BLIND_REFRESH 32

/* Instance for key-management calls that get no provctx (load). */
static TG_PROV *_Atomic tg_last_prov;

/* ---- key objects ---- */

static TG_KEY *key_wrap(TG_PROV *prov, enum tg_kt kt, void *inner)
{
    TG_KEY *k;

    if (inner == NULL)
        return NULL;
    /* the private half (priv) in the secure heap when the application set one up
     * (tlsgate: ssl_secure_heap): locked, left out of core dumps */
    k = OPENSSL_zalloc(sizeof(*k));
    if (k != NULL && (k->priv = OPENSSL_secure_zalloc(TG_PRIV_LEN)) == NULL) {
        OPENSSL_free(k);
        k = NULL;
    }
    if (k == NULL) {
        TG_DFLT(tg_dflt_keymgmt[kt], OSSL_FUNC_KEYMGMT_FREE, OSSL_FUNC_keymgmt_free_fn *)(inner);
        return NULL;
    }
    k->kt = kt;
    k->prov = prov;
    k->inner = inner;
    pthread_mutex_init(&k->acc_lock, NULL);
    pthread_mutex_init(&k->rsa.blind_lock, NULL);
    return k;
}

/* Drops the accelerated form (secrets wiped). The caller holds acc_lock or owns k. */
static void acc_clear(TG_KEY *k)
{
    struct tg_rsa_acc *r = &k->rsa;

    if (r->key != NULL) {
        mb8_rsa_key_dispose(r->key);
        OPENSSL_secure_free(r->key);
    }
    BN_free(r->n);
    BN_free(r->e);
    BN_MONT_CTX_free(r->mont);
    BN_clear_free(r->A);
    BN_clear_free(r->Ai);
    BN_clear_free(r->Am);
    BN_clear_free(r->Aim);
    BN_CTX_free(r->bnctx);
    r->key = NULL;
    r->n = r->e = r->A = r->Ai = r->Am = r->Aim = NULL;
    r->mont = NULL;
    r->bnctx = NULL;
    r->bits = 0;
    r->len = 0;
    r->blind_uses = 0;
    OPENSSL_cleanse(k->priv, TG_PRIV_LEN);
    memset(k->pub, 0, sizeof(k->pub));
    k->has_priv = k->has_pub = 0;
    atomic_store(&k->acc_state, 0);
}

static void key_free(void *keydata)
{
    TG_KEY *k = keydata;

    if (k == NULL)
        return;
    acc_clear(k);
    TG_DFLT(tg_dflt_keymgmt[k->kt], OSSL_FUNC_KEYMGMT_FREE, OSSL_FUNC_keymgmt_free_fn *)(k->inner);
    pthread_mutex_destroy(&k->rsa.blind_lock);
    pthread_mutex_destroy(&k->acc_lock);
    OPENSSL_secure_clear_free(k->priv, TG_PRIV_LEN);
    OPENSSL_clear_free(k, sizeof(*k));
}

/* The key changed (import, set_params): the cached form is recomputed on next use. */
static void acc_invalidate(TG_KEY *k)
{
    pthread_mutex_lock(&k->acc_lock);
    pthread_mutex_lock(&k->rsa.blind_lock);
    acc_clear(k);
    pthread_mutex_unlock(&k->rsa.blind_lock);
    pthread_mutex_unlock(&k->acc_lock);
}

/* ---- the accelerated form ---- */

/* What an export hands us: copies of the parameters we look at. */
struct exported {
    BIGNUM *bn[9];
    char group[32];
    uint8_t priv[32], pub[97];
    size_t priv_len, pub_len;
    int has_priv, has_pub, multiprime;
};

static const char *const rsa_bn_names[9] = {
    OSSL_PKEY_PARAM_RSA_N,         OSSL_PKEY_PARAM_RSA_E,
    OSSL_PKEY_PARAM_RSA_D,         OSSL_PKEY_PARAM_RSA_FACTOR1,
    OSSL_PKEY_PARAM_RSA_FACTOR2,   OSSL_PKEY_PARAM_RSA_EXPONENT1,
    OSSL_PKEY_PARAM_RSA_EXPONENT2, OSSL_PKEY_PARAM_RSA_COEFFICIENT1,
    OSSL_PKEY_PARAM_PRIV_KEY,
};
enum { X_N, X_E, X_D, X_P, X_Q, X_DP, X_DQ, X_QINV, X_ECPRIV };

static int export_cb(const OSSL_PARAM params[], void *arg)
{
    struct exported *x = arg;
    const OSSL_PARAM *p;
    size_t i;

    for (i = 0; i < 9; i++) {
        p = OSSL_PARAM_locate_const(params, rsa_bn_names[i]);
        if (p != NULL && p->data_type == OSSL_PARAM_UNSIGNED_INTEGER &&
            !OSSL_PARAM_get_BN(p, &x->bn[i]))
            return 0;
    }
    if (OSSL_PARAM_locate_const(params, OSSL_PKEY_PARAM_RSA_FACTOR3) != NULL)
        x->multiprime = 1;
    p = OSSL_PARAM_locate_const(params, OSSL_PKEY_PARAM_GROUP_NAME);
    if (p != NULL) {
        char *g = x->group;

        if (!OSSL_PARAM_get_utf8_string(p, &g, sizeof(x->group)))
            return 0;
    }
    /* X25519 keys export raw octet strings; EC keys a BIGNUM private key (above). */
    p = OSSL_PARAM_locate_const(params, OSSL_PKEY_PARAM_PRIV_KEY);
    if (p != NULL && p->data_type == OSSL_PARAM_OCTET_STRING) {
        void *d = x->priv;

        if (!OSSL_PARAM_get_octet_string(p, &d, sizeof(x->priv), &x->priv_len))
            return 0;
        x->has_priv = 1;
    }
    p = OSSL_PARAM_locate_const(params, OSSL_PKEY_PARAM_PUB_KEY);
    if (p != NULL) {
        void *d = x->pub;

        /* a compressed or hybrid point, or a longer one, is simply not acceleratable */
        if (OSSL_PARAM_get_octet_string(p, &d, sizeof(x->pub), &x->pub_len))
            x->has_pub = 1;
    }
    return 1;
}

static void exported_free(struct exported *x)
{
    size_t i;

    for (i = 0; i < 9; i++)
        BN_clear_free(x->bn[i]);
    OPENSSL_cleanse(x, sizeof(*x));
}

static int export_inner(const TG_KEY *k, int selection, struct exported *x)
{
    int ok;

    memset(x, 0, sizeof(*x));
    ERR_set_mark();
    ok = TG_DFLT(tg_dflt_keymgmt[k->kt], OSSL_FUNC_KEYMGMT_EXPORT,
                 OSSL_FUNC_keymgmt_export_fn *)(k->inner, selection, export_cb, x);
    ERR_pop_to_mark();
    return ok;
}

int tg_is_p256_name(const char *name)
{
    return OPENSSL_strcasecmp(name, "prime256v1") == 0 || OPENSSL_strcasecmp(name, "P-256") == 0 ||
           OPENSSL_strcasecmp(name, "secp256r1") == 0;
}

int tg_is_p384_name(const char *name)
{
    return OPENSSL_strcasecmp(name, "secp384r1") == 0 || OPENSSL_strcasecmp(name, "P-384") == 0;
}

static int acc_rsa(TG_KEY *k, struct exported *x)
{
    struct tg_rsa_acc *r = &k->rsa;
    uint8_t *buf = NULL;
    size_t half, len, i;
    int bits, ok = 0;

    for (i = X_N; i <= X_QINV; i++)
        if (x->bn[i] == NULL)
            return 0; /* public key only, or no CRT values */
    if (x->multiprime || !BN_is_word(x->bn[X_E], 65537))
        return 0;
    bits = BN_num_bits(x->bn[X_N]);
    if (mb8_rsa_key_size((unsigned)bits) == 0)
        return 0;
    len = (size_t)bits / 8;
    half = len / 2;
    buf = OPENSSL_secure_zalloc(len + 5 * half + 4);
    r->key = OPENSSL_secure_zalloc(mb8_rsa_key_size((unsigned)bits)); /* CRT secrets */
    if (buf == NULL || r->key == NULL)
        goto done;
    {
        uint8_t *n = buf, *p = n + len, *q = p + half, *dp = q + half, *dq = dp + half,
                *qinv = dq + half, *e = qinv + half;

        if (BN_bn2binpad(x->bn[X_N], n, (int)len) < 0 ||
            BN_bn2binpad(x->bn[X_P], p, (int)half) < 0 ||
            BN_bn2binpad(x->bn[X_Q], q, (int)half) < 0 ||
            BN_bn2binpad(x->bn[X_DP], dp, (int)half) < 0 ||
            BN_bn2binpad(x->bn[X_DQ], dq, (int)half) < 0 ||
            BN_bn2binpad(x->bn[X_QINV], qinv, (int)half) < 0 || BN_bn2binpad(x->bn[X_E], e, 4) < 0)
            goto done;
        if (mb8_rsa_key_init(r->key, (unsigned)bits, n, e, 4, p, q, dp, dq, qinv) != 0)
            goto done;
    }
    r->bits = (unsigned)bits;
    r->len = len;
    r->n = x->bn[X_N];
    r->e = x->bn[X_E];
    x->bn[X_N] = x->bn[X_E] = NULL;
    r->bnctx = BN_CTX_new_ex(k->prov->libctx);
    r->mont = BN_MONT_CTX_new();
    if (r->bnctx == NULL || r->mont == NULL || !BN_MONT_CTX_set(r->mont, r->n, r->bnctx))
        goto done;
    ok = 1;
done:
    OPENSSL_secure_clear_free(buf, len + 5 * half + 4);
    return ok;
}

static int acc_compute(TG_KEY *k)
{
    struct exported x;
    int ok = 0;

    switch (k->kt) {
    case TG_KT_RSA:
        if (!(k->prov->enable & TG_EN_RSA) || !export_inner(k, OSSL_KEYMGMT_SELECT_KEYPAIR, &x))
            return 0;
        ok = acc_rsa(k, &x);
        break;
    case TG_KT_EC:
        if (!(k->prov->enable & (TG_EN_ECDSA | TG_EN_ECDH)) ||
            !export_inner(k, OSSL_KEYMGMT_SELECT_ALL, &x))
            return 0;
        if (!tg_is_p256_name(x.group) && !tg_is_p384_name(x.group))
            break;
        {
            /* P-256 or P-384: scalars of 32 or 48 bytes, points of 65 or 97 */
            int p384 = tg_is_p384_name(x.group), nb = p384 ? 48 : 32;

            k->p384 = p384;
            if (x.bn[X_ECPRIV] != NULL) {
                if (BN_bn2binpad(x.bn[X_ECPRIV], k->priv, nb) < 0)
                    break;
                k->has_priv = 1;
            }
            if (x.has_pub && x.pub_len == (size_t)(2 * nb + 1) && x.pub[0] == 0x04) {
                memcpy(k->pub, x.pub, x.pub_len);
                k->has_pub = 1;
            }
        }
        ok = k->has_priv || k->has_pub;
        break;
    case TG_KT_X25519:
        if (!(k->prov->enable & TG_EN_X25519) || !export_inner(k, OSSL_KEYMGMT_SELECT_KEYPAIR, &x))
            return 0;
        if (x.has_priv && x.priv_len == 32) {
            memcpy(k->priv, x.priv, 32);
            k->has_priv = 1;
        }
        if (x.has_pub && x.pub_len == 32) {
            memcpy(k->pub, x.pub, 32);
            k->has_pub = 1;
        }
        ok = k->has_priv || k->has_pub;
        break;
    default:
        return 0;
    }
    exported_free(&x);
    return ok;
}

int tg_key_acc(TG_KEY *k)
{
    int s = atomic_load_explicit(&k->acc_state, memory_order_acquire);

    if (s != 0)
        return s > 0;
    pthread_mutex_lock(&k->acc_lock);
    s = atomic_load_explicit(&k->acc_state, memory_order_relaxed);
    if (s == 0) {
        pthread_mutex_lock(&k->rsa.blind_lock);
        if (acc_compute(k)) {
            s = 1;
        } else {
            acc_clear(k);
            s = -1;
        }
        pthread_mutex_unlock(&k->rsa.blind_lock);
        atomic_store_explicit(&k->acc_state, s, memory_order_release);
    }
    pthread_mutex_unlock(&k->acc_lock);
    return s > 0;
}

/*
 * *rop = a^-1 mod n for an odd n, by GMP's variable-time mpz_invert (Lehmer's extended gcd,
 * about 13 us for 2048 bits on Zen 4 against 190-210 us for OpenSSL 3.0's BN_mod_inverse,
 * constant-time or not). a must be uniformly random and independent of every secret: the
 * caller blinds the value it wants inverted (BoringSSL's bn_mod_inverse_blinded does the
 * same). The limbs GMP allocated are wiped before they are freed; GMP's own temporaries
 * held only values derived from a. Returns 1, or 0 when gcd(a, n) != 1 or on an error.
 */
static int inverse_of_random(BIGNUM *rop, const BIGNUM *a, const BIGNUM *n, size_t len)
{
    uint8_t buf[512];
    mpz_t za, zn, zi;
    int ok = 0;

    if (len > sizeof buf)
        return 0;
    mpz_inits(za, zn, zi, NULL);
    if (BN_bn2binpad(a, buf, (int)len) < 0)
        goto done;
    mpz_import(za, len, 1, 1, 0, 0, buf);
    if (BN_bn2binpad(n, buf, (int)len) < 0)
        goto done;
    mpz_import(zn, len, 1, 1, 0, 0, buf);
    if (mpz_invert(zi, za, zn) == 0)
        goto done;
    memset(buf, 0, len);
    size_t words = 0;
    mpz_export(buf + len - (mpz_sizeinbase(zi, 256)), &words, 1, 1, 0, 0, zi);
    ok = BN_bin2bn(buf, (int)len, rop) != NULL;
done:
    OPENSSL_cleanse(buf, sizeof buf);
    mpz_t *all[3] = {&za, &zn, &zi};
    for (int i = 0; i < 3; i++) {
        __mpz_struct *z = *all[i];
        OPENSSL_cleanse(z->_mp_d, (size_t)z->_mp_alloc * sizeof(mp_limb_t));
        mpz_clear(z);
    }
    return ok;
}

/*
 * rop = a^e mod n for a public e, in Montgomery form in and out (am = a R mod n): left to
 * right square-and-multiply over e's bits with BN_mod_mul_montgomery, whose time does not
 * depend on the values for operands of n's size; only e's (public) bits steer it.
 * BN_mod_exp_mont with a constant-time base took 78 us for e = 65537, this 12 us.
 */
static int mont_pow_public(BIGNUM *rop, const BIGNUM *am, const BIGNUM *e, BN_MONT_CTX *mont,
                           BN_CTX *ctx)
{
    int bits = BN_num_bits(e);

    if (bits == 0 || BN_copy(rop, am) == NULL)
        return 0;
    for (int i = bits - 2; i >= 0; i--) {
        if (!BN_mod_mul_montgomery(rop, rop, rop, mont, ctx))
            return 0;
        if (BN_is_bit_set(e, i) && !BN_mod_mul_montgomery(rop, rop, am, mont, ctx))
            return 0;
    }
    return 1;
}

/*
 * A fresh pair: r uniform in [1, n), A = r^e, Ai = r^-1 (what OpenSSL's
 * BN_BLINDING_create_param makes). The inversion is blinded: with b uniform in [1, n),
 * t = r b is uniform and independent of r, so the variable-time inversion of t
 * (inverse_of_random) reveals nothing of r, and r^-1 = t^-1 b. The pair is kept in
 * Montgomery form too (Am, Aim) for the per-use squarings.
 */
static int blinding_new(struct tg_rsa_acc *r)
{
    BIGNUM *rnd, *b, *rm, *t;
    int ok = 0, tries;

    BN_CTX_start(r->bnctx);
    rnd = BN_CTX_get(r->bnctx);
    b = BN_CTX_get(r->bnctx);
    rm = BN_CTX_get(r->bnctx);
    t = BN_CTX_get(r->bnctx);
    if (t == NULL)
        goto done;
    if ((r->A == NULL && (r->A = BN_new()) == NULL) ||
        (r->Ai == NULL && (r->Ai = BN_new()) == NULL) ||
        (r->Am == NULL && (r->Am = BN_new()) == NULL) ||
        (r->Aim == NULL && (r->Aim = BN_new()) == NULL))
        goto done;
    BN_set_flags(rnd, BN_FLG_CONSTTIME);
    BN_set_flags(b, BN_FLG_CONSTTIME);
    BN_set_flags(rm, BN_FLG_CONSTTIME);
    BN_set_flags(t, BN_FLG_CONSTTIME);
    BN_set_flags(r->A, BN_FLG_CONSTTIME);
    BN_set_flags(r->Ai, BN_FLG_CONSTTIME);
    BN_set_flags(r->Am, BN_FLG_CONSTTIME);
    BN_set_flags(r->Aim, BN_FLG_CONSTTIME);
    for (tries = 0; tries < 32; tries++) {
        if (!BN_priv_rand_range_ex(rnd, r->n, 0, r->bnctx) ||
            !BN_priv_rand_range_ex(b, r->n, 0, r->bnctx))
            goto done;
        if (BN_is_zero(rnd) || BN_is_zero(b))
            continue;
        /* t = r b mod n (from Montgomery form: (r R) b / R) */
        if (!BN_to_montgomery(rm, rnd, r->mont, r->bnctx) ||
            !BN_mod_mul_montgomery(t, rm, b, r->mont, r->bnctx))
            goto done;
        if (inverse_of_random(r->Ai, t, r->n, r->len))
            break;
        /* gcd(t, n) != 1: a factor of n was drawn; draw again */
    }
    /* Ai = t^-1 b = r^-1; A = r^e */
    if (tries == 32 || !BN_to_montgomery(r->Aim, r->Ai, r->mont, r->bnctx) ||
        !BN_mod_mul_montgomery(r->Ai, r->Aim, b, r->mont, r->bnctx) ||
        !BN_to_montgomery(r->Aim, r->Ai, r->mont, r->bnctx) ||
        !mont_pow_public(r->Am, rm, r->e, r->mont, r->bnctx) ||
        !BN_from_montgomery(r->A, r->Am, r->mont, r->bnctx))
        goto done;
    r->blind_uses = 0;
    ok = 1;
done:
    if (rnd != NULL)
        BN_clear(rnd);
    if (b != NULL)
        BN_clear(b);
    if (rm != NULL)
        BN_clear(rm);
    if (t != NULL)
        BN_clear(t);
    BN_CTX_end(r->bnctx);
    return ok;
}

int tg_rsa_blinding(TG_KEY *k, uint8_t *blind, uint8_t *unblind)
{
    struct tg_rsa_acc *r = &k->rsa;
    int ok = 0;

    pthread_mutex_lock(&r->blind_lock);
    if (r->n == NULL)
        goto done;
    if (r->A == NULL || r->blind_uses >= TG_BLIND_REFRESH) {
        if (!blinding_new(r))
            goto done;
    } else if (!BN_mod_mul_montgomery(r->A, r->A, r->Am, r->mont, r->bnctx) ||   /* A (A R) / R */
               !BN_mod_mul_montgomery(r->Am, r->Am, r->Am, r->mont, r->bnctx) || /* (A R)^2 / R */
               !BN_mod_mul_montgomery(r->Ai, r->Ai, r->Aim, r->mont, r->bnctx) ||
               !BN_mod_mul_montgomery(r->Aim, r->Aim, r->Aim, r->mont, r->bnctx)) {
        goto done;
    }
    r->blind_uses++;
    ok = BN_bn2binpad(r->A, blind, (int)r->len) >= 0 &&
         BN_bn2binpad(r->Ai, unblind, (int)r->len) >= 0;
done:
    pthread_mutex_unlock(&r->blind_lock);
    return ok;
}

int tg_rsa_private(TG_PROV *prov, TG_KEY *k, const uint8_t *in, uint8_t *out, int probe)
{
    uint8_t blind[512], unblind[512];
    struct tg_req r;
    int ok;

    if (k->rsa.len > sizeof(blind) || !tg_rsa_blinding(k, blind, unblind))
        return 0;
    memset(&r, 0, sizeof(r));
    r.op = tg_rsa_op(k->rsa.bits);
    r.probe = probe;
    r.in = in;
    r.out = out;
    r.key = k->rsa.key;
    r.blind = blind;
    r.unblind = unblind;
    ok = tg_batch_run(prov, &r) && r.status == MB8_STATUS_OK;
    OPENSSL_cleanse(unblind, k->rsa.len);
    if (!ok) /* a lane that failed its fault check must not leave its result (Bellcore) */
        OPENSSL_cleanse(out, k->rsa.len);
    return ok;
}

/* ---- forwarding ---- */

#define KM(kt, id, type)                                                                           \
    TG_DFLT(tg_dflt_keymgmt[kt], OSSL_FUNC_KEYMGMT_##id, OSSL_FUNC_keymgmt_##type##_fn *)

static void *key_new(TG_PROV *prov, enum tg_kt kt)
{
    atomic_store(&tg_last_prov, prov);
    return key_wrap(prov, kt, KM(kt, NEW, new)(prov->dflt_provctx));
}

static int key_has(const void *keydata, int selection)
{
    const TG_KEY *k = keydata;

    return k != NULL && KM(k->kt, HAS, has)(k->inner, selection);
}

static int key_match(const void *a, const void *b, int selection)
{
    const TG_KEY *ka = a, *kb = b;

    return ka->kt == kb->kt && KM(ka->kt, MATCH, match)(ka->inner, kb->inner, selection);
}

static int key_validate(const void *keydata, int selection, int checktype)
{
    const TG_KEY *k = keydata;

    return KM(k->kt, VALIDATE, validate)(k->inner, selection, checktype);
}

static int key_get_params(void *keydata, OSSL_PARAM params[])
{
    TG_KEY *k = keydata;

    return KM(k->kt, GET_PARAMS, get_params)(k->inner, params);
}

static int key_set_params(void *keydata, const OSSL_PARAM params[])
{
    TG_KEY *k = keydata;
    OSSL_FUNC_keymgmt_set_params_fn *f = KM(k->kt, SET_PARAMS, set_params);

    if (f == NULL)
        return 1;
    acc_invalidate(k);
    return f(k->inner, params);
}

static int key_import(void *keydata, int selection, const OSSL_PARAM params[])
{
    TG_KEY *k = keydata;

    acc_invalidate(k);
    return KM(k->kt, IMPORT, import)(k->inner, selection, params);
}

static int key_export(void *keydata, int selection, OSSL_CALLBACK *cb, void *cbarg)
{
    TG_KEY *k = keydata;

    return KM(k->kt, EXPORT, export)(k->inner, selection, cb, cbarg);
}

static void *key_dup(const void *keydata, int selection)
{
    const TG_KEY *k = keydata;
    OSSL_FUNC_keymgmt_dup_fn *f = KM(k->kt, DUP, dup);

    return f == NULL ? NULL : key_wrap(k->prov, k->kt, f(k->inner, selection));
}

/* ---- generation ---- */

struct tg_gen {
    TG_PROV *prov;
    enum tg_kt kt;
    void *inner;
    int selection;
    int p256;    /* EC: the group is P-256 */
    int p384;    /* EC: the group is P-384 */
    int foreign; /* a parameter or template we do not reproduce: the default generates */
};

static void gen_scan(struct tg_gen *g, const OSSL_PARAM params[])
{
    const OSSL_PARAM *p;

    for (p = params; p != NULL && p->key != NULL; p++) {
        if (strcmp(p->key, OSSL_PKEY_PARAM_GROUP_NAME) == 0) {
            const char *name = NULL;

            if (OSSL_PARAM_get_utf8_string_ptr(p, &name)) {
                g->p256 = tg_is_p256_name(name);
                g->p384 = tg_is_p384_name(name);
            }
        } else if (strcmp(p->key, OSSL_PKEY_PARAM_EC_ENCODING) == 0) {
            const char *v = NULL;

            if (!OSSL_PARAM_get_utf8_string_ptr(p, &v) || OPENSSL_strcasecmp(v, "named_curve") != 0)
                g->foreign = 1;
        } else if (strcmp(p->key, OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT) == 0) {
            const char *v = NULL;

            if (!OSSL_PARAM_get_utf8_string_ptr(p, &v) ||
                OPENSSL_strcasecmp(v, "uncompressed") != 0)
                g->foreign = 1;
        } else if (strcmp(p->key, OSSL_PKEY_PARAM_PROPERTIES) != 0) {
            g->foreign = 1;
        }
    }
}

_Static_assert(offsetof(struct tg_gen, prov) == 0, "tg_ctx_new sets the first member");

static void *gen_init(TG_PROV *prov, enum tg_kt kt, int selection, const OSSL_PARAM params[])
{
    struct tg_gen *g = tg_ctx_new(prov, sizeof(*g));

    if (g == NULL)
        return NULL;
    g->kt = kt;
    g->selection = selection;
    g->inner = KM(kt, GEN_INIT, gen_init)(prov->dflt_provctx, selection, params);
    if (g->inner == NULL) {
        OPENSSL_free(g);
        return NULL;
    }
    gen_scan(g, params);
    return g;
}

static int gen_set_params(void *genctx, const OSSL_PARAM params[])
{
    struct tg_gen *g = genctx;
    OSSL_FUNC_keymgmt_gen_set_params_fn *f = KM(g->kt, GEN_SET_PARAMS, gen_set_params);

    if (f == NULL || !f(g->inner, params))
        return 0;
    gen_scan(g, params);
    return 1;
}

static int gen_set_template(void *genctx, void *templ)
{
    struct tg_gen *g = genctx;
    OSSL_FUNC_keymgmt_gen_set_template_fn *f = KM(g->kt, GEN_SET_TEMPLATE, gen_set_template);
    const TG_KEY *t = templ;

    char group[32] = "";
    OSSL_PARAM q[2];

    if (t == NULL || t->kt != g->kt)
        return 0;
    if (f == NULL) /* X25519: a template carries nothing to generate from (as EVP does) */
        return 1;
    /* The default provider takes only the group from an EC template: a named P-256
     * template generates like the group name; anything else is the default's to do. */
    q[0] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof(group));
    q[1] = OSSL_PARAM_construct_end();
    ERR_set_mark();
    if (g->kt == TG_KT_EC && KM(g->kt, GET_PARAMS, get_params)(t->inner, q) &&
        tg_is_p256_name(group))
        g->p256 = 1;
    else if (g->kt == TG_KT_EC && tg_is_p384_name(group))
        g->p384 = 1;
    else
        g->foreign = 1;
    ERR_pop_to_mark();
    return f(g->inner, t->inner);
}

static void gen_cleanup(void *genctx)
{
    struct tg_gen *g = genctx;

    if (g == NULL)
        return;
    KM(g->kt, GEN_CLEANUP, gen_cleanup)(g->inner);
    OPENSSL_free(g);
}

/* Constant-time a < b for big-endian byte strings of equal length. */
static unsigned ct_lt_be(const uint8_t *a, const uint8_t *b, size_t len)
{
    unsigned borrow = 0;
    size_t i = len;

    while (i-- > 0)
        borrow = ((unsigned)a[i] - (unsigned)b[i] - borrow) >> 31;
    return borrow;
}

static const uint8_t p256_order[32] = {
    0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
    0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
};

/* A uniform scalar in [1, order-1] of len (32 or 48) bytes, big-endian, into out. */
static int random_scalar(TG_PROV *prov, uint8_t *out, const uint8_t *order, size_t len)
{
    static const uint8_t zero[48] = {0};
    int tries;

    /* Rejection sampling; the loop only ever reveals that a discarded draw was rejected. */
    for (tries = 0; tries < 64; tries++) {
        if (RAND_priv_bytes_ex(prov->libctx, out, len, 0) <= 0)
            return 0;
        if (ct_lt_be(out, order, len) & ct_lt_be(zero, out, len))
            return 1;
    }
    return 0;
}

int tg_p256_random_scalar(TG_PROV *prov, uint8_t out[32])
{
    return random_scalar(prov, out, p256_order, 32);
}

static const uint8_t p384_order[48] = {
    0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
    0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xC7, 0x63, 0x4D, 0x81, 0xF4, 0x37, 0x2D, 0xDF,
    0x58, 0x1A, 0x0D, 0xB2, 0x48, 0xB0, 0xA7, 0x7A, 0xEC, 0xEC, 0x19, 0x6A, 0xCC, 0xC5, 0x29, 0x73,
};

int tg_p384_random_scalar(TG_PROV *prov, uint8_t out[48])
{
    return random_scalar(prov, out, p384_order, 48);
}

/* Imports a generated pair into a new default-provider key and wraps it (EC: P-384 when
 * g->p384, else P-256). */
static TG_KEY *gen_import(struct tg_gen *g, const uint8_t *priv, const uint8_t *pub)
{
    OSSL_PARAM params[4];
    uint8_t native[48];
    const int nb = g->kt == TG_KT_EC && g->p384 ? 48 : 32;
    void *inner = KM(g->kt, NEW, new)(g->prov->dflt_provctx);
    TG_KEY *k;
    int ok, i;

    if (inner == NULL)
        return NULL;
    if (g->kt == TG_KT_EC) {
        /* OSSL_PARAM unsigned integers are in native byte order */
        for (i = 0; i < nb; i++)
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
            native[i] = priv[i];
#else
            native[i] = priv[nb - 1 - i];
#endif
        params[0] = OSSL_PARAM_construct_utf8_string(
            OSSL_PKEY_PARAM_GROUP_NAME, (char *)(nb == 48 ? "secp384r1" : "prime256v1"), 0);
        params[1] = OSSL_PARAM_construct_BN(OSSL_PKEY_PARAM_PRIV_KEY, native, (size_t)nb);
        params[2] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, (void *)pub,
                                                      (size_t)(2 * nb + 1));
    } else {
        memcpy(native, priv, 32);
        params[0] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PRIV_KEY, native, 32);
        params[1] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, (void *)pub, 32);
        params[2] = OSSL_PARAM_construct_end();
    }
    params[3] = OSSL_PARAM_construct_end();
    ok = KM(g->kt, IMPORT, import)(inner, OSSL_KEYMGMT_SELECT_ALL, params);
    OPENSSL_cleanse(native, sizeof(native));
    if (!ok) {
        KM(g->kt, FREE, free)(inner);
        return NULL;
    }
    k = key_wrap(g->prov, g->kt, inner);
    if (k == NULL)
        return NULL;
    memcpy(k->priv, priv, (size_t)nb);
    memcpy(k->pub, pub, g->kt == TG_KT_EC ? (size_t)(2 * nb + 1) : 32);
    k->p384 = nb == 48;
    k->has_priv = k->has_pub = 1;
    atomic_store(&k->acc_state, 1);
    return k;
}

/* Batched generation inside an async job; NULL when it could not run (caller falls back). */
static TG_KEY *gen_batched(struct tg_gen *g, int probe)
{
    struct tg_req r;
    uint8_t priv[48], pub[97];
    TG_KEY *k = NULL;

    memset(&r, 0, sizeof(r));
    if (g->kt == TG_KT_EC && g->p384) {
        if (!tg_p384_random_scalar(g->prov, priv))
            return NULL;
        r.op = TG_OP_KEYGEN_P384;
    } else if (g->kt == TG_KT_EC) {
        if (!tg_p256_random_scalar(g->prov, priv))
            return NULL;
        r.op = TG_OP_KEYGEN_P256;
    } else {
        if (RAND_priv_bytes_ex(g->prov->libctx, priv, 32, 0) <= 0)
            return NULL;
        priv[0] &= 248; /* RFC 7748 §5, stored clamped as the default provider does */
        priv[31] &= 127;
        priv[31] |= 64;
        r.op = TG_OP_KEYGEN_X25519;
    }
    r.priv = priv;
    r.out = pub;
    r.probe = probe;
    if (tg_batch_run(g->prov, &r) && r.status == MB8_STATUS_OK)
        k = gen_import(g, priv, pub);
    OPENSSL_cleanse(priv, sizeof(priv));
    return k;
}

static void *gen(void *genctx, OSSL_CALLBACK *cb, void *cbarg)
{
    struct tg_gen *g = genctx;
    int keypair = (g->selection & OSSL_KEYMGMT_SELECT_KEYPAIR) != 0;
    int eligible = keypair && !g->foreign &&
                   ((g->kt == TG_KT_EC && (g->p256 || g->p384) && (g->prov->enable & TG_EN_ECDH)) ||
                    (g->kt == TG_KT_X25519 && (g->prov->enable & TG_EN_X25519)));
    enum tg_op op =
        g->kt == TG_KT_EC ? (g->p384 ? TG_OP_KEYGEN_P384 : TG_OP_KEYGEN_P256) : TG_OP_KEYGEN_X25519;
    int probe = 0;
    TG_KEY *k;
    uint8_t pair[32 + 65];

    /* an ephemeral pair precomputed in idle time */
    if (eligible && !g->p384 &&
        tg_pool_take(g->prov, g->kt == TG_KT_EC ? TG_POOL_KEYGEN_P256 : TG_POOL_KEYGEN_X25519, pair,
                     g->kt == TG_KT_EC ? 32 + 65 : 32 + 32)) {
        tg_count_op(op, TG_C_REQUESTS, 1);
        k = gen_import(g, pair, pair + 32);
        OPENSSL_cleanse(pair, sizeof(pair));
        if (k != NULL)
            return k;
        tg_count_op(op, TG_C_FALLBACKS, 1);
    } else if (eligible && tg_batch_can_queue() && tg_batch_want(g->prov, op, &probe)) {
        tg_count_op(op, TG_C_REQUESTS, 1);
        tg_count_op(op, TG_C_REQUESTS_ASYNC, 1);
        k = gen_batched(g, probe);
        if (k != NULL)
            return k;
        tg_count_op(op, TG_C_FALLBACKS, 1);
    } else if (eligible) {
        uint64_t t0 = tg_now_ns();

        tg_count_op(op, TG_C_REQUESTS, 1);
        tg_count_op(op, TG_C_SYNC, 1);
        k = key_wrap(g->prov, g->kt, KM(g->kt, GEN, gen)(g->inner, cb, cbarg));
        if (k != NULL)
            tg_batch_single_done(op, tg_now_ns() - t0);
        return k;
    } else if (keypair && g->kt != TG_KT_RSA) {
        tg_count(TG_C_REQUESTS, 1);
        tg_count(TG_C_FALLBACKS, 1);
    }
    return key_wrap(g->prov, g->kt, KM(g->kt, GEN, gen)(g->inner, cb, cbarg));
}

static const OSSL_PARAM *gen_settable(enum tg_kt kt, void *genctx, void *provctx)
{
    struct tg_gen *g = genctx;
    TG_PROV *prov = provctx;
    OSSL_FUNC_keymgmt_gen_settable_params_fn *f = KM(kt, GEN_SETTABLE_PARAMS, gen_settable_params);

    return f == NULL ? NULL : f(g != NULL ? g->inner : NULL, prov->dflt_provctx);
}

static void *key_load(enum tg_kt kt, const void *reference, size_t reference_sz)
{
    TG_PROV *prov = atomic_load(&tg_last_prov);
    OSSL_FUNC_keymgmt_load_fn *f = KM(kt, LOAD, load);

    if (prov == NULL || f == NULL)
        return NULL;
    return key_wrap(prov, kt, f(reference, reference_sz));
}

/* ---- per-type entry points (those that get no key object) ---- */

#define TG_KEYMGMT_TYPE(name, KT)                                                                  \
    static void *name##_new(void *provctx)                                                         \
    {                                                                                              \
        return key_new(provctx, KT);                                                               \
    }                                                                                              \
    static void *name##_gen_init(void *provctx, int selection, const OSSL_PARAM params[])          \
    {                                                                                              \
        return gen_init(provctx, KT, selection, params);                                           \
    }                                                                                              \
    static const OSSL_PARAM *name##_gen_settable(void *genctx, void *provctx)                      \
    {                                                                                              \
        return gen_settable(KT, genctx, provctx);                                                  \
    }                                                                                              \
    static void *name##_load(const void *reference, size_t reference_sz)                           \
    {                                                                                              \
        return key_load(KT, reference, reference_sz);                                              \
    }                                                                                              \
    static const OSSL_PARAM *name##_gettable(void *provctx)                                        \
    {                                                                                              \
        return KM(KT, GETTABLE_PARAMS, gettable_params)(((TG_PROV *)provctx)->dflt_provctx);       \
    }                                                                                              \
    static const OSSL_PARAM *name##_settable(void *provctx)                                        \
    {                                                                                              \
        OSSL_FUNC_keymgmt_settable_params_fn *f = KM(KT, SETTABLE_PARAMS, settable_params);        \
        return f == NULL ? NULL : f(((TG_PROV *)provctx)->dflt_provctx);                           \
    }                                                                                              \
    static const OSSL_PARAM *name##_import_types(int selection)                                    \
    {                                                                                              \
        return KM(KT, IMPORT_TYPES, import_types)(selection);                                      \
    }                                                                                              \
    static const OSSL_PARAM *name##_export_types(int selection)                                    \
    {                                                                                              \
        return KM(KT, EXPORT_TYPES, export_types)(selection);                                      \
    }                                                                                              \
    static const char *name##_query_operation_name(int operation_id)                               \
    {                                                                                              \
        OSSL_FUNC_keymgmt_query_operation_name_fn *f =                                             \
            KM(KT, QUERY_OPERATION_NAME, query_operation_name);                                    \
        return f == NULL ? NULL : f(operation_id);                                                 \
    }                                                                                              \
    const OSSL_DISPATCH tg_##name##_keymgmt_functions[] = {                                        \
        TG_FN(OSSL_FUNC_KEYMGMT_NEW, name##_new),                                                  \
        TG_FN(OSSL_FUNC_KEYMGMT_FREE, key_free),                                                   \
        TG_FN(OSSL_FUNC_KEYMGMT_DUP, key_dup),                                                     \
        TG_FN(OSSL_FUNC_KEYMGMT_LOAD, name##_load),                                                \
        TG_FNS_KEYMGMT_GEN(name##_gen_init, gen_set_params, name##_gen_settable, gen,              \
                           gen_cleanup),                                                           \
        TG_FN(OSSL_FUNC_KEYMGMT_GEN_SET_TEMPLATE, gen_set_template),                               \
        TG_FNS_GET_SET(KEYMGMT, PARAMS, key_get_params, name##_gettable, key_set_params,           \
                       name##_settable),                                                           \
        TG_FN(OSSL_FUNC_KEYMGMT_QUERY_OPERATION_NAME, name##_query_operation_name),                \
        TG_FN(OSSL_FUNC_KEYMGMT_HAS, key_has),                                                     \
        TG_FN(OSSL_FUNC_KEYMGMT_MATCH, key_match),                                                 \
        TG_FN(OSSL_FUNC_KEYMGMT_VALIDATE, key_validate),                                           \
        TG_FNS_KEYMGMT_IMPORT_EXPORT(key_import, name##_import_types, key_export,                  \
                                     name##_export_types),                                         \
        {0, NULL}}

TG_KEYMGMT_TYPE(rsa, TG_KT_RSA);
TG_KEYMGMT_TYPE(ec, TG_KT_EC);
TG_KEYMGMT_TYPE(x25519, TG_KT_X25519);
