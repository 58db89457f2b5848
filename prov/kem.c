/*
 * tlsgate hybrid post-quantum key exchange for TLS 1.3: the groups X25519MLKEM768 (0x11EC)
 * and SecP256r1MLKEM768 (0x11EB) of draft-ietf-tls-ecdhe-mlkem, as a key manager and a
 * KEM of the same names. OpenSSL 3.0 has no ML-KEM; libssl 3.0 uses a provider's TLS group
 * with `tls-group-is-kem` 1 this way (ssl/s3_lib.c, ssl/statem/extensions_*.c):
 *
 *   client: keygen (key manager, selection key pair) -> get "encoded-pub-key" -> key share
 *   server: paramgen, set "encoded-pub-key" = the client's share (here the FIPS 203 §7.2
 *           check and the ECDH point's validation: a bad share fails the handshake),
 *           EVP_PKEY_encapsulate -> (server share, shared secret)
 *   client: EVP_PKEY_decapsulate(server share) -> shared secret
 *
 * Layouts (draft-ietf-tls-ecdhe-mlkem §4): X25519MLKEM768: client share ek (1184) ||
 * X25519 public (32), server share ct (1088) || X25519 public (32), secret ML-KEM K (32) ||
 * X25519 secret (32). SecP256r1MLKEM768: the P-256 uncompressed point (65) first, then ek
 * / ct; secret ECDH x-coordinate (32) || K (32).
 *
 * The ECDH half runs through this provider's own X25519 / EC key manager and key exchange
 * (keymgmt.c, keyexch.c), so it takes the same paths as a plain X25519 / P-256 share: an
 * idle-time pool entry or the keygen queue, then the x25519 / ecdh-p256 batch queue, or
 * the default provider's single operation; counted there. The ML-KEM half: encapsulation
 * goes through the mlkem768 queue (batch.c, compute.c: mb8_mlkem768_encaps of up to 8
 * lanes) or runs at once as one lane; key generation and decapsulation (the client's) run
 * mb8's portable kernel, one lane.
 */
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "glue.h"
#include "prov.h"

#define EKB MB8_MLKEM768_EK_BYTES
#define DKB MB8_MLKEM768_DK_BYTES
#define CTB MB8_MLKEM768_CT_BYTES
#define SSB MB8_MLKEM_SS_BYTES

/* One hybrid group: its ECDH half's sizes, and which half comes first. */
struct tg_hyb_alg {
    const char *name; /* the TLS group name, and the key manager's / KEM's */
    int p256;         /* SecP256r1MLKEM768: ECDH on P-256, first in every layout */
    size_t ecdh_pub;  /* 32 (X25519 u) or 65 (P-256 0x04 || X || Y) */
};

static const struct tg_hyb_alg hyb_x25519 = {"X25519MLKEM768", 0, 32};
static const struct tg_hyb_alg hyb_p256 = {"SecP256r1MLKEM768", 1, 65};

/* Byte offsets of the ML-KEM and ECDH parts in a share of `mlkem_len` ML-KEM bytes. */
static size_t mlkem_off(const struct tg_hyb_alg *a)
{
    return a->p256 ? a->ecdh_pub : 0;
}

static size_t ecdh_off(const struct tg_hyb_alg *a, size_t mlkem_len)
{
    return a->p256 ? 0 : mlkem_len;
}

/* A key: the client's pair (ML-KEM dk and an ECDH private key) or, on the server, the
 * client's share (ek and the ECDH public key). */
typedef struct tg_hyb {
    TG_PROV *prov;
    const struct tg_hyb_alg *alg;
    int has_pub, has_priv;
    uint8_t ek[EKB];
    uint8_t *dk; /* DKB bytes in the secure heap when has_priv */
    void *ecdh;  /* a TG_KEY of keymgmt.c (ours): the ECDH half */
} TG_HYB;

/* ---- the ECDH half, through our own key manager and key exchange ---- */

static void (*dfn(const OSSL_DISPATCH *d, int id))(void)
{
    for (; d->function_id != 0; d++)
        if (d->function_id == id)
            return d->function;
    return NULL;
}

static const OSSL_DISPATCH *ecdh_km(const struct tg_hyb_alg *a)
{
    return a->p256 ? tg_ec_keymgmt_functions : tg_x25519_keymgmt_functions;
}

static void ecdh_free(const struct tg_hyb_alg *a, void *k)
{
    if (k != NULL)
        ((OSSL_FUNC_keymgmt_free_fn *)dfn(ecdh_km(a), OSSL_FUNC_KEYMGMT_FREE))(k);
}

/* A fresh ECDH key pair (pool, batch or single operation: keymgmt.c decides). */
static void *ecdh_gen(TG_PROV *prov, const struct tg_hyb_alg *a)
{
    const OSSL_DISPATCH *km = ecdh_km(a);
    OSSL_PARAM q[2] = {OSSL_PARAM_END, OSSL_PARAM_END};
    void *g, *k;

    if (a->p256)
        q[0] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, (char *)"P-256", 0);
    g = ((OSSL_FUNC_keymgmt_gen_init_fn *)dfn(km, OSSL_FUNC_KEYMGMT_GEN_INIT))(
        prov, OSSL_KEYMGMT_SELECT_KEYPAIR | OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS, q);
    if (g == NULL)
        return NULL;
    k = ((OSSL_FUNC_keymgmt_gen_fn *)dfn(km, OSSL_FUNC_KEYMGMT_GEN))(g, NULL, NULL);
    ((OSSL_FUNC_keymgmt_gen_cleanup_fn *)dfn(km, OSSL_FUNC_KEYMGMT_GEN_CLEANUP))(g);
    return k;
}

/* The peer's ECDH public key from its share bytes (a->ecdh_pub bytes). The default
 * provider's import validates a P-256 point (on the curve); the draft wants it
 * uncompressed (65 bytes starting 0x04), which the length and first byte check. */
static void *ecdh_import(TG_PROV *prov, const struct tg_hyb_alg *a, const uint8_t *pub)
{
    const OSSL_DISPATCH *km = ecdh_km(a);
    OSSL_PARAM q[3];
    size_t n = 0;
    void *k;

    if (a->p256 && pub[0] != 0x04)
        return NULL;
    if (a->p256)
        q[n++] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, (char *)"P-256", 0);
    q[n++] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, (void *)pub, a->ecdh_pub);
    q[n] = OSSL_PARAM_construct_end();
    k = ((OSSL_FUNC_keymgmt_new_fn *)dfn(km, OSSL_FUNC_KEYMGMT_NEW))(prov);
    if (k != NULL &&
        !((OSSL_FUNC_keymgmt_import_fn *)dfn(km, OSSL_FUNC_KEYMGMT_IMPORT))(
            k, OSSL_KEYMGMT_SELECT_PUBLIC_KEY | OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS, q)) {
        ecdh_free(a, k);
        k = NULL;
    }
    return k;
}

/* The encoded public key of an ECDH key into out (a->ecdh_pub bytes). 1 or 0. */
static int ecdh_pub(const struct tg_hyb_alg *a, void *k, uint8_t *out)
{
    OSSL_PARAM q[2];

    q[0] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, out, a->ecdh_pub);
    q[1] = OSSL_PARAM_construct_end();
    return ((OSSL_FUNC_keymgmt_get_params_fn *)dfn(ecdh_km(a), OSSL_FUNC_KEYMGMT_GET_PARAMS))(k,
                                                                                              q) &&
           q[0].return_size == a->ecdh_pub;
}

/* ECDH(priv, peer) into out (32 bytes): our key exchange (batched in a job). 1 or 0. */
static int ecdh_derive(TG_PROV *prov, const struct tg_hyb_alg *a, void *priv, void *peer,
                       uint8_t out[32])
{
    const OSSL_DISPATCH *kx = a->p256 ? tg_ecdh_keyexch_functions : tg_x25519_keyexch_functions;
    void *c = ((OSSL_FUNC_keyexch_newctx_fn *)dfn(kx, OSSL_FUNC_KEYEXCH_NEWCTX))(prov);
    size_t len = 0;
    int ok;

    if (c == NULL)
        return 0;
    ok = ((OSSL_FUNC_keyexch_init_fn *)dfn(kx, OSSL_FUNC_KEYEXCH_INIT))(c, priv, NULL) &&
         ((OSSL_FUNC_keyexch_set_peer_fn *)dfn(kx, OSSL_FUNC_KEYEXCH_SET_PEER))(c, peer) &&
         ((OSSL_FUNC_keyexch_derive_fn *)dfn(kx, OSSL_FUNC_KEYEXCH_DERIVE))(c, out, &len, 32) &&
         len == 32;
    ((OSSL_FUNC_keyexch_freectx_fn *)dfn(kx, OSSL_FUNC_KEYEXCH_FREECTX))(c);
    return ok;
}

/* ---- the ML-KEM half ---- */

/* ML-KEM-768 encapsulation to ek (already checked, §7.2) into ct and ss: queued in an async
 * job when the adaptive choice says so, else one lane at once. 1, or 0 (RNG failure). */
static int mlkem_encaps(TG_PROV *prov, uint8_t ct[CTB], uint8_t ss[SSB], const uint8_t ek[EKB])
{
    uint8_t m[32];
    struct tg_req r;
    int probe = 0, ok = 0;

    if (RAND_priv_bytes_ex(prov->libctx, m, sizeof(m), 0) <= 0)
        return 0;
    memset(&r, 0, sizeof(r));
    r.op = TG_OP_MLKEM768;
    r.in = ek;
    r.in2 = m;
    r.out = ct;
    r.out2 = ss;
    tg_count_op(r.op, TG_C_REQUESTS, 1);
    if (tg_batch_can_queue() && tg_batch_want(prov, r.op, &probe)) {
        tg_count_op(r.op, TG_C_REQUESTS_ASYNC, 1);
        r.probe = probe;
        ok = tg_batch_run(prov, &r) && r.status == MB8_STATUS_OK;
        if (!ok)
            tg_count_op(r.op, TG_C_FALLBACKS, 1);
    }
    if (!ok) {
        /* one lane now: there is no other implementation to fall back to */
        uint64_t t0 = tg_now_ns();

        tg_count_op(r.op, TG_C_SYNC, 1);
        ok = tg_batch_compute_now(&r) && r.status == MB8_STATUS_OK;
        if (ok)
            tg_batch_single_done(r.op, tg_now_ns() - t0);
    }
    OPENSSL_cleanse(m, sizeof(m));
    return ok;
}

/* ---- key manager ---- */

static void *hyb_new(TG_PROV *prov, const struct tg_hyb_alg *a)
{
    TG_HYB *k = OPENSSL_zalloc(sizeof(*k));

    if (k != NULL) {
        k->prov = prov;
        k->alg = a;
    }
    return k;
}

static void hyb_free(void *keydata)
{
    TG_HYB *k = keydata;

    if (k == NULL)
        return;
    ecdh_free(k->alg, k->ecdh);
    OPENSSL_secure_clear_free(k->dk, DKB);
    OPENSSL_free(k);
}

static int hyb_has(const void *keydata, int selection)
{
    const TG_HYB *k = keydata;

    if (k == NULL)
        return 0;
    if ((selection & OSSL_KEYMGMT_SELECT_PUBLIC_KEY) && !k->has_pub)
        return 0;
    if ((selection & OSSL_KEYMGMT_SELECT_PRIVATE_KEY) && !k->has_priv)
        return 0;
    return 1; /* no domain parameters: the group is the algorithm */
}

struct tg_hyb_gen {
    TG_PROV *prov;
    const struct tg_hyb_alg *alg;
    int selection;
};

static int hyb_gen_set_params(void *genctx, const OSSL_PARAM params[])
{
    struct tg_hyb_gen *g = genctx;
    const OSSL_PARAM *p = OSSL_PARAM_locate_const(params, OSSL_PKEY_PARAM_GROUP_NAME);
    const char *name = NULL;

    /* libssl names the group (EVP_PKEY_CTX_set_group_name): it must be this one */
    if (p != NULL && (!OSSL_PARAM_get_utf8_string_ptr(p, &name) ||
                      OPENSSL_strcasecmp(name, g->alg->name) != 0)) {
        TG_RAISE(g->prov, TG_R_BAD_ARGUMENT, "group %s: this key manager is %s",
                 name != NULL ? name : "?", g->alg->name);
        return 0;
    }
    return 1;
}

static const OSSL_PARAM *hyb_gen_settable(void *genctx, void *provctx)
{
    static const OSSL_PARAM t[] = {OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, NULL, 0),
                                   OSSL_PARAM_END};
    return t;
}

_Static_assert(offsetof(struct tg_hyb_gen, prov) == 0, "tg_ctx_new sets the first member");

static void *hyb_gen_init(TG_PROV *prov, const struct tg_hyb_alg *a, int selection,
                          const OSSL_PARAM params[])
{
    struct tg_hyb_gen *g = tg_ctx_new(prov, sizeof(*g));

    if (g == NULL)
        return NULL;
    g->alg = a;
    g->selection = selection;
    if (!hyb_gen_set_params(g, params)) {
        OPENSSL_free(g);
        return NULL;
    }
    return g;
}

static void hyb_gen_cleanup(void *genctx)
{
    OPENSSL_free(genctx);
}

/* Key pair: ML-KEM.KeyGen (FIPS 203 §7.1, d and z from the private DRBG) and an ECDH pair;
 * parameters only (libssl's paramgen on the server): an empty key for the peer's share. */
static void *hyb_gen(void *genctx, OSSL_CALLBACK *cb, void *cbarg)
{
    struct tg_hyb_gen *g = genctx;
    TG_HYB *k = hyb_new(g->prov, g->alg);
    uint8_t dz[64];

    if (k == NULL || !(g->selection & OSSL_KEYMGMT_SELECT_KEYPAIR))
        return k;
    if (!(g->prov->enable & TG_EN_MLKEM) || (k->dk = OPENSSL_secure_zalloc(DKB)) == NULL ||
        RAND_priv_bytes_ex(g->prov->libctx, dz, sizeof(dz), 0) <= 0)
        goto err;
    {
        const uint8_t *d[MB8_LANES] = {dz}, *z[MB8_LANES] = {dz + 32};
        uint8_t *ek[MB8_LANES] = {k->ek}, *dk[MB8_LANES] = {k->dk};

        if (mb8_status_lane(mb8_mlkem768_keygen(ek, dk, d, z), 0) != MB8_STATUS_OK)
            goto err;
    }
    OPENSSL_cleanse(dz, sizeof(dz));
    if ((k->ecdh = ecdh_gen(g->prov, g->alg)) == NULL)
        goto err;
    k->has_pub = k->has_priv = 1;
    return k;
err:
    OPENSSL_cleanse(dz, sizeof(dz));
    TG_RAISE(g->prov, TG_R_INTERNAL, "%s key generation failed", g->alg->name);
    hyb_free(k);
    return NULL;
}

static int hyb_get_params(void *keydata, OSSL_PARAM params[])
{
    TG_HYB *k = keydata;
    const struct tg_hyb_alg *a = k->alg;
    OSSL_PARAM *p;

    if ((p = OSSL_PARAM_locate(params, OSSL_PKEY_PARAM_BITS)) != NULL &&
        !OSSL_PARAM_set_int(p, 8 * (int)(EKB + a->ecdh_pub)))
        return 0;
    /* FIPS 203 Table 2: ML-KEM-768 is category 3 (192 bits), as OpenSSL 3.5 rates the group */
    if ((p = OSSL_PARAM_locate(params, OSSL_PKEY_PARAM_SECURITY_BITS)) != NULL &&
        !OSSL_PARAM_set_int(p, 192))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_PKEY_PARAM_MAX_SIZE)) != NULL &&
        !OSSL_PARAM_set_int(p, (int)(CTB + a->ecdh_pub)))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY)) != NULL) {
        uint8_t buf[EKB + 65];

        if (!k->has_pub)
            return 0;
        memcpy(buf + mlkem_off(a), k->ek, EKB);
        if (k->ecdh != NULL && !ecdh_pub(a, k->ecdh, buf + ecdh_off(a, EKB)))
            return 0;
        if (!OSSL_PARAM_set_octet_string(p, buf, EKB + a->ecdh_pub))
            return 0;
    }
    return 1;
}

static const OSSL_PARAM *hyb_gettable(void *provctx)
{
    static const OSSL_PARAM t[] = {
        OSSL_PARAM_int(OSSL_PKEY_PARAM_BITS, NULL),
        OSSL_PARAM_int(OSSL_PKEY_PARAM_SECURITY_BITS, NULL),
        OSSL_PARAM_int(OSSL_PKEY_PARAM_MAX_SIZE, NULL),
        OSSL_PARAM_octet_string(OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, NULL, 0), OSSL_PARAM_END};
    return t;
}

/* The peer's key share (the server's side): draft-ietf-tls-ecdhe-mlkem §4 wants the
 * share's length exact, the ML-KEM encapsulation key to pass FIPS 203 §7.2 and the ECDH
 * key to be valid; otherwise the handshake aborts (libssl: illegal_parameter). */
static int hyb_set_params(void *keydata, const OSSL_PARAM params[])
{
    TG_HYB *k = keydata;
    const struct tg_hyb_alg *a = k->alg;
    const OSSL_PARAM *p = OSSL_PARAM_locate_const(params, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY);
    const void *buf = NULL;
    size_t len = 0;
    void *peer;

    if (p == NULL)
        return 1;
    if (!OSSL_PARAM_get_octet_string_ptr(p, &buf, &len) || len != EKB + a->ecdh_pub) {
        TG_RAISE(k->prov, TG_R_BAD_INPUT, "%s key share of %zu bytes (expected %zu)", a->name, len,
                 EKB + a->ecdh_pub);
        return 0;
    }
    const uint8_t *b = buf;
    const uint8_t *ek = b + mlkem_off(a);
    if (!mb8_mlkem768_ek_check(ek)) {
        TG_RAISE(k->prov, TG_R_BAD_INPUT,
                 "%s: ML-KEM encapsulation key fails the modulus check (FIPS 203 7.2)", a->name);
        return 0;
    }
    if ((peer = ecdh_import(k->prov, a, b + ecdh_off(a, EKB))) == NULL) {
        TG_RAISE(k->prov, TG_R_BAD_INPUT, "%s: invalid ECDH public key in the key share", a->name);
        return 0;
    }
    ecdh_free(a, k->ecdh);
    k->ecdh = peer;
    memcpy(k->ek, ek, EKB);
    OPENSSL_secure_clear_free(k->dk, DKB);
    k->dk = NULL;
    k->has_priv = 0;
    k->has_pub = 1;
    return 1;
}

static const OSSL_PARAM *hyb_settable(void *provctx)
{
    static const OSSL_PARAM t[] = {
        OSSL_PARAM_octet_string(OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, NULL, 0), OSSL_PARAM_END};
    return t;
}

static const char *hyb_query_name(int operation_id)
{
    return NULL; /* the KEM has the key manager's name */
}

/* ---- KEM ---- */

typedef struct {
    TG_PROV *prov;
    TG_HYB *key;
} TG_KEMCTX;

_Static_assert(offsetof(TG_KEMCTX, prov) == 0, "tg_ctx_new sets the first member");

static void *kem_newctx(void *provctx)
{
    return tg_ctx_new(provctx, sizeof(TG_KEMCTX));
}

static void kem_freectx(void *ctx)
{
    OPENSSL_free(ctx);
}

static void *kem_dupctx(void *ctx)
{
    TG_KEMCTX *c = OPENSSL_malloc(sizeof(*c));

    if (c != NULL)
        memcpy(c, ctx, sizeof(*c));
    return c;
}

static int kem_init(void *ctx, void *key, int need_priv)
{
    TG_KEMCTX *c = ctx;
    TG_HYB *k = key;

    if (k == NULL || !k->has_pub || (need_priv && !k->has_priv)) {
        TG_RAISE(c->prov, TG_R_NO_KEY, "%s", need_priv ? "no private key" : "no public key");
        return 0;
    }
    c->key = k;
    return 1;
}

static int kem_encaps_init(void *ctx, void *key, const OSSL_PARAM params[])
{
    return kem_init(ctx, key, 0);
}

static int kem_decaps_init(void *ctx, void *key, const OSSL_PARAM params[])
{
    return kem_init(ctx, key, 1);
}

/* The end of an en- or decapsulation: unless ok, the error (reason, "<group> <what>
 * failed"); the ECDH key freed and the secrets ss wiped either way. Returns ok. */
static int kem_end(TG_KEMCTX *c, int ok, void *ecdh, uint8_t ss[2 * SSB], uint32_t reason,
                   const char *what)
{
    const struct tg_hyb_alg *a = c->key->alg;

    if (!ok)
        TG_RAISE(c->prov, reason, "%s %s failed", a->name, what);
    ecdh_free(a, ecdh);
    OPENSSL_cleanse(ss, 2 * SSB);
    return ok;
}

/* The server's side: (server share, shared secret) for the client's share. */
static int kem_encapsulate(void *ctx, unsigned char *out, size_t *outlen, unsigned char *secret,
                           size_t *secretlen)
{
    TG_KEMCTX *c = ctx;
    TG_HYB *k = c->key;
    const struct tg_hyb_alg *a = k->alg;
    const size_t ctlen = CTB + a->ecdh_pub;
    uint8_t ss[2 * SSB];
    void *eph = NULL;
    int ok = 0;

    if (out == NULL) {
        if (outlen != NULL)
            *outlen = ctlen;
        if (secretlen != NULL)
            *secretlen = 2 * SSB;
        return outlen != NULL || secretlen != NULL;
    }
    if (outlen == NULL || *outlen < ctlen || secret == NULL || secretlen == NULL ||
        *secretlen < 2 * SSB) {
        TG_RAISE(c->prov, TG_R_BUFFER_TOO_SMALL, "%s: need %zu + %d bytes", a->name, ctlen,
                 2 * SSB);
        return 0;
    }
    /* ECDH first when it comes first in the secret (P-256), else ML-KEM first: each half
     * writes straight into its place */
    uint8_t *ss_mlkem = ss + (a->p256 ? SSB : 0), *ss_ecdh = ss + (a->p256 ? 0 : SSB);
    if (!mlkem_encaps(c->prov, out + mlkem_off(a), ss_mlkem, k->ek))
        goto done;
    if ((eph = ecdh_gen(c->prov, a)) == NULL || !ecdh_pub(a, eph, out + ecdh_off(a, CTB)) ||
        !ecdh_derive(c->prov, a, eph, k->ecdh, ss_ecdh))
        goto done;
    memcpy(secret, ss, sizeof(ss));
    *outlen = ctlen;
    *secretlen = 2 * SSB;
    ok = 1;
done:
    return kem_end(c, ok, eph, ss, TG_R_INTERNAL, "encapsulation");
}

/* The client's side: the shared secret from the server's share. A server share of the
 * wrong length, or an invalid ECDH point, fails (the draft: abort the handshake); an
 * ML-KEM ciphertext never does (implicit rejection gives a secret the server does not
 * have, and the Finished check then fails). */
static int kem_decapsulate(void *ctx, unsigned char *out, size_t *outlen, const unsigned char *in,
                           size_t inlen)
{
    TG_KEMCTX *c = ctx;
    TG_HYB *k = c->key;
    const struct tg_hyb_alg *a = k->alg;
    uint8_t ss[2 * SSB];
    void *peer = NULL;
    int ok = 0;

    if (out == NULL) {
        if (outlen == NULL)
            return 0;
        *outlen = 2 * SSB;
        return 1;
    }
    if (outlen == NULL || *outlen < 2 * SSB) {
        TG_RAISE(c->prov, TG_R_BUFFER_TOO_SMALL, "%s: need %d bytes", a->name, 2 * SSB);
        return 0;
    }
    if (in == NULL || inlen != CTB + a->ecdh_pub) {
        TG_RAISE(c->prov, TG_R_BAD_INPUT, "%s server share of %zu bytes (expected %zu)", a->name,
                 inlen, CTB + a->ecdh_pub);
        return 0;
    }
    uint8_t *ss_mlkem = ss + (a->p256 ? SSB : 0), *ss_ecdh = ss + (a->p256 ? 0 : SSB);
    const uint8_t *ct[MB8_LANES] = {in + mlkem_off(a)}, *dk[MB8_LANES] = {k->dk};
    uint8_t *sso[MB8_LANES] = {ss_mlkem};
    if (mb8_status_lane(mb8_mlkem768_decaps(sso, ct, dk), 0) != MB8_STATUS_OK)
        goto done;
    if ((peer = ecdh_import(c->prov, a, in + ecdh_off(a, CTB))) == NULL ||
        !ecdh_derive(c->prov, a, k->ecdh, peer, ss_ecdh))
        goto done;
    memcpy(out, ss, sizeof(ss));
    *outlen = 2 * SSB;
    ok = 1;
done:
    return kem_end(c, ok, peer, ss, TG_R_BAD_INPUT, "decapsulation");
}

static int kem_set_ctx_params(void *ctx, const OSSL_PARAM params[])
{
    return 1;
}

TG_CONST_CTX_PARAMS(kem_settable_ctx_params, OSSL_PARAM_END)

static int kem_get_ctx_params(void *ctx, OSSL_PARAM params[])
{
    return 1;
}

TG_CONST_CTX_PARAMS(kem_gettable_ctx_params, OSSL_PARAM_END)

const OSSL_DISPATCH tg_hybrid_kem_functions[] = {
    {OSSL_FUNC_KEM_NEWCTX, (void (*)(void))kem_newctx},
    {OSSL_FUNC_KEM_ENCAPSULATE_INIT, (void (*)(void))kem_encaps_init},
    {OSSL_FUNC_KEM_ENCAPSULATE, (void (*)(void))kem_encapsulate},
    {OSSL_FUNC_KEM_DECAPSULATE_INIT, (void (*)(void))kem_decaps_init},
    {OSSL_FUNC_KEM_DECAPSULATE, (void (*)(void))kem_decapsulate},
    {OSSL_FUNC_KEM_FREECTX, (void (*)(void))kem_freectx},
    {OSSL_FUNC_KEM_DUPCTX, (void (*)(void))kem_dupctx},
    {OSSL_FUNC_KEM_SET_CTX_PARAMS, (void (*)(void))kem_set_ctx_params},
    {OSSL_FUNC_KEM_SETTABLE_CTX_PARAMS, (void (*)(void))kem_settable_ctx_params},
    {OSSL_FUNC_KEM_GET_CTX_PARAMS, (void (*)(void))kem_get_ctx_params},
    {OSSL_FUNC_KEM_GETTABLE_CTX_PARAMS, (void (*)(void))kem_gettable_ctx_params},
    {0, NULL}};

#define TG_HYB_KEYMGMT(name, ALG)                                                                  \
    static void *name##_new(void *provctx)                                                         \
    {                                                                                              \
        return hyb_new(provctx, &ALG);                                                             \
    }                                                                                              \
    static void *name##_gen_init(void *provctx, int selection, const OSSL_PARAM params[])          \
    {                                                                                              \
        return hyb_gen_init(provctx, &ALG, selection, params);                                     \
    }                                                                                              \
    const OSSL_DISPATCH tg_##name##_keymgmt_functions[] = {                                        \
        TG_FN(OSSL_FUNC_KEYMGMT_NEW, name##_new),                                                  \
        TG_FN(OSSL_FUNC_KEYMGMT_FREE, hyb_free),                                                   \
        TG_FN(OSSL_FUNC_KEYMGMT_HAS, hyb_has),                                                     \
        TG_FNS_KEYMGMT_GEN(name##_gen_init, hyb_gen_set_params, hyb_gen_settable, hyb_gen,         \
                           hyb_gen_cleanup),                                                       \
        TG_FNS_GET_SET(KEYMGMT, PARAMS, hyb_get_params, hyb_gettable, hyb_set_params,              \
                       hyb_settable),                                                              \
        TG_FN(OSSL_FUNC_KEYMGMT_QUERY_OPERATION_NAME, hyb_query_name),                             \
        {0, NULL}}

TG_HYB_KEYMGMT(x25519mlkem768, hyb_x25519);
TG_HYB_KEYMGMT(secp256r1mlkem768, hyb_p256);

/* ---- TLS-GROUP capabilities (prov.c announces them after the default provider's) ---- */

struct tg_group {
    const char *name;
    unsigned id;
};

static const struct tg_group tg_groups[] = {
    {"X25519MLKEM768", 0x11EC},
    {"SecP256r1MLKEM768", 0x11EB},
};

int tg_hybrid_groups(const TG_PROV *prov, OSSL_CALLBACK *cb, void *arg)
{
    if (!(prov->enable & TG_EN_MLKEM))
        return 1;
    for (size_t i = 0; i < sizeof(tg_groups) / sizeof(tg_groups[0]); i++) {
        unsigned id = tg_groups[i].id, secbits = 192, kem = 1;
        int min_tls = 0x0304 /* TLS 1.3 only */, max_tls = 0, min_dtls = -1, max_dtls = -1;
        OSSL_PARAM p[] = {
            OSSL_PARAM_utf8_string(OSSL_CAPABILITY_TLS_GROUP_NAME, (char *)tg_groups[i].name, 0),
            OSSL_PARAM_utf8_string(OSSL_CAPABILITY_TLS_GROUP_NAME_INTERNAL,
                                   (char *)tg_groups[i].name, 0),
            OSSL_PARAM_utf8_string(OSSL_CAPABILITY_TLS_GROUP_ALG, (char *)tg_groups[i].name, 0),
            OSSL_PARAM_uint(OSSL_CAPABILITY_TLS_GROUP_ID, &id),
            OSSL_PARAM_uint(OSSL_CAPABILITY_TLS_GROUP_SECURITY_BITS, &secbits),
            OSSL_PARAM_int(OSSL_CAPABILITY_TLS_GROUP_MIN_TLS, &min_tls),
            OSSL_PARAM_int(OSSL_CAPABILITY_TLS_GROUP_MAX_TLS, &max_tls),
            OSSL_PARAM_int(OSSL_CAPABILITY_TLS_GROUP_MIN_DTLS, &min_dtls),
            OSSL_PARAM_int(OSSL_CAPABILITY_TLS_GROUP_MAX_DTLS, &max_dtls),
            OSSL_PARAM_uint(OSSL_CAPABILITY_TLS_GROUP_IS_KEM, &kem),
            OSSL_PARAM_END};
        for (OSSL_PARAM *q = p; q->key != NULL; q++)
            if (q->data_type == OSSL_PARAM_UTF8_STRING)
                q->data_size = strlen(q->data);
        if (!cb(p, arg))
            return 0;
    }
    return 1;
}
