/*
 * tlsgate asymmetric cipher "RSA": decryption with accelerated keys is batched.
 *
 * The context wraps the default provider's (`inner`): encryption, parameters and every
 * decryption we do not accelerate go there. For an accelerated key inside an async job,
 * c^d mod n runs in an mb8 batch (blinded, CRT, fault-checked, fixed-length output), and
 * the padding is removed here according to the inner context's parameters:
 *
 * - TLS premaster mode (RSA_PKCS1_WITH_TLS_PADDING with OSSL_ASYM_CIPHER_PARAM_TLS_CLIENT_VERSION,
 *   libssl's RSA key exchange): the constant-time check of RFC 5246 §7.4.7.1 in rsa_pad.c —
 *   a bad padding or version yields a random 48-byte premaster and success, with no
 *   other signal;
 * - PKCS#1 v1.5 and OAEP: OpenSSL's constant-time RSA_padding_check_PKCS1_type_2 and
 *   RSA_padding_check_PKCS1_OAEP_mgf1 (deprecated names in 3.0, still the library's
 *   own implementations; their errors are the default provider's errors);
 * - no padding: the raw result.
 */
#define OPENSSL_SUPPRESS_DEPRECATED /* RSA_padding_check_* (see above) */

#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rsa.h>

#include "glue.h"
#include "prov.h"

typedef struct tg_cipher {
    TG_PROV *prov;
    void *inner;
    TG_KEY *key;
} TG_CIPHER;

#define CIF(id, type)                                                                              \
    TG_DFLT(tg_dflt_cipher_rsa, OSSL_FUNC_ASYM_CIPHER_##id, OSSL_FUNC_asym_cipher_##type##_fn *)

static void *ci_newctx(void *provctx)
{
    TG_PROV *prov = provctx;
    TG_CIPHER *c = OPENSSL_zalloc(sizeof(*c));

    if (c == NULL)
        return NULL;
    c->prov = prov;
    c->inner = CIF(NEWCTX, newctx)(prov->dflt_provctx);
    if (c->inner == NULL) {
        OPENSSL_free(c);
        return NULL;
    }
    return c;
}

static void ci_freectx(void *ctx)
{
    TG_CIPHER *c = ctx;

    if (c == NULL)
        return;
    CIF(FREECTX, freectx)(c->inner);
    OPENSSL_free(c);
}

static void *ci_dupctx(void *ctx)
{
    TG_CIPHER *c = ctx, *d = OPENSSL_memdup(c, sizeof(*c));

    if (d == NULL)
        return NULL;
    d->inner = CIF(DUPCTX, dupctx)(c->inner);
    if (d->inner == NULL) {
        OPENSSL_free(d);
        return NULL;
    }
    return d;
}

static int ci_init(TG_CIPHER *c, void *provkey, int decrypt, const OSSL_PARAM params[])
{
    TG_KEY *k = provkey;

    if (k != NULL && k->kt != TG_KT_RSA) {
        TG_RAISE(c->prov, TG_R_NO_KEY, "not an RSA key");
        return 0;
    }
    c->key = k;
    if (decrypt)
        return CIF(DECRYPT_INIT, decrypt_init)(c->inner, k != NULL ? k->inner : NULL, params);
    return CIF(ENCRYPT_INIT, encrypt_init)(c->inner, k != NULL ? k->inner : NULL, params);
}

static int ci_encrypt_init(void *ctx, void *provkey, const OSSL_PARAM params[])
{
    return ci_init(ctx, provkey, 0, params);
}

static int ci_decrypt_init(void *ctx, void *provkey, const OSSL_PARAM params[])
{
    return ci_init(ctx, provkey, 1, params);
}

static int ci_encrypt(void *ctx, unsigned char *out, size_t *outlen, size_t outsize,
                      const unsigned char *in, size_t inlen)
{
    TG_CIPHER *c = ctx;

    return CIF(ENCRYPT, encrypt)(c->inner, out, outlen, outsize, in, inlen);
}

/* 1 decrypted, 0 failed (error raised), -1 not ours: let the default provider decrypt. */
static int decrypt_acc(TG_CIPHER *c, unsigned char *out, size_t *outlen, size_t outsize,
                       const unsigned char *in, size_t inlen, int probe)
{
    TG_KEY *k = c->key;
    size_t len = k->rsa.len;
    int pad = 0, ok, n;
    unsigned client_version = 0, alt_version = 0;
    char oaep_md[64] = "", mgf1_md[64] = "";
    void *label = NULL;
    size_t labellen = 0;
    uint8_t ct[512], em[512];
    OSSL_PARAM q[7];

    if (inlen > len || inlen == 0 || len > sizeof(em))
        return -1;
    q[0] = OSSL_PARAM_construct_int(OSSL_ASYM_CIPHER_PARAM_PAD_MODE, &pad);
    q[1] = OSSL_PARAM_construct_uint(OSSL_ASYM_CIPHER_PARAM_TLS_CLIENT_VERSION, &client_version);
    q[2] = OSSL_PARAM_construct_uint(OSSL_ASYM_CIPHER_PARAM_TLS_NEGOTIATED_VERSION, &alt_version);
    q[3] = OSSL_PARAM_construct_utf8_string(OSSL_ASYM_CIPHER_PARAM_OAEP_DIGEST, oaep_md,
                                            sizeof(oaep_md));
    q[4] = OSSL_PARAM_construct_utf8_string(OSSL_ASYM_CIPHER_PARAM_MGF1_DIGEST, mgf1_md,
                                            sizeof(mgf1_md));
    q[5] = OSSL_PARAM_construct_octet_ptr(OSSL_ASYM_CIPHER_PARAM_OAEP_LABEL, &label, 0);
    q[6] = OSSL_PARAM_construct_end();
    ERR_set_mark();
    ok = CIF(GET_CTX_PARAMS, get_ctx_params)(c->inner, q);
    ERR_pop_to_mark();
    if (!ok)
        return -1;
    labellen = q[5].return_size;
    /* what the default provider requires of the output buffer, checked the same way */
    if (pad == RSA_PKCS1_WITH_TLS_PADDING) {
        if (client_version == 0 || outsize < 48)
            return -1;
    } else if (pad == RSA_PKCS1_PADDING || pad == RSA_NO_PADDING || pad == RSA_PKCS1_OAEP_PADDING) {
        if (outsize < len)
            return -1;
    } else {
        return -1; /* X9.31 and anything new: the default provider's business */
    }
    /* I2OSP of the ciphertext at the modulus length (RFC 8017 §7.2.2 step 2) */
    memset(ct, 0, len - inlen);
    memcpy(ct + len - inlen, in, inlen);
    if (!tg_rsa_private(c->prov, k, ct, em, probe))
        return -1; /* c >= n, or a lane that failed its fault check (em wiped) */
    ok = 0;
    switch (pad) {
    case RSA_PKCS1_WITH_TLS_PADDING:
        if (tg_pad_tls_premaster(c->prov, out, em, len, client_version, alt_version)) {
            *outlen = 48;
            ok = 1;
        }
        break;
    case RSA_NO_PADDING:
        memcpy(out, em, len);
        *outlen = len;
        ok = 1;
        break;
    case RSA_PKCS1_PADDING:
        n = RSA_padding_check_PKCS1_type_2(out, (int)len, em, (int)len, (int)len);
        if (n >= 0) {
            *outlen = (size_t)n;
            ok = 1;
        }
        break;
    default: { /* OAEP */
        EVP_MD *md = EVP_MD_fetch(c->prov->libctx, oaep_md[0] ? oaep_md : "SHA1", NULL);
        EVP_MD *mgf1 = EVP_MD_fetch(c->prov->libctx,
                                    mgf1_md[0] ? mgf1_md : (oaep_md[0] ? oaep_md : "SHA1"), NULL);

        if (md != NULL && mgf1 != NULL) {
            n = RSA_padding_check_PKCS1_OAEP_mgf1(out, (int)len, em, (int)len, (int)len, label,
                                                  (int)labellen, md, mgf1);
            if (n >= 0) {
                *outlen = (size_t)n;
                ok = 1;
            }
        }
        EVP_MD_free(md);
        EVP_MD_free(mgf1);
        break;
    }
    }
    OPENSSL_cleanse(em, len);
    return ok;
}

/* PKCS#1 v1.5, the TLS premaster mode, OAEP or none: the paddings decrypt_acc removes. */
static int pad_supported(TG_CIPHER *c)
{
    int pad = 0, ok;
    OSSL_PARAM q[2];

    q[0] = OSSL_PARAM_construct_int(OSSL_ASYM_CIPHER_PARAM_PAD_MODE, &pad);
    q[1] = OSSL_PARAM_construct_end();
    ERR_set_mark();
    ok = CIF(GET_CTX_PARAMS, get_ctx_params)(c->inner, q);
    ERR_pop_to_mark();
    return ok && (pad == RSA_PKCS1_PADDING || pad == RSA_PKCS1_WITH_TLS_PADDING ||
                  pad == RSA_PKCS1_OAEP_PADDING || pad == RSA_NO_PADDING);
}

static int ci_decrypt(void *ctx, unsigned char *out, size_t *outlen, size_t outsize,
                      const unsigned char *in, size_t inlen)
{
    TG_CIPHER *c = ctx;
    TG_KEY *k = c->key;
    int r;

    if (out == NULL || k == NULL) /* a size query, or no key */
        return CIF(DECRYPT, decrypt)(c->inner, out, outlen, outsize, in, inlen);
    int acc = tg_key_acc(k) && k->rsa.key != NULL;
    enum tg_op op = acc ? tg_rsa_op(k->rsa.bits) : TG_OP_COUNT;
    tg_count_op(op, TG_C_REQUESTS, 1);
    if (!(c->prov->enable & TG_EN_RSA) || !acc || !pad_supported(c)) {
        tg_count_op(op, TG_C_FALLBACKS, 1);
    } else {
        int probe = 0;

        if (!tg_batch_can_queue() || !tg_batch_want(c->prov, op, &probe)) {
            uint64_t t0 = tg_now_ns();

            tg_count_op(op, TG_C_SYNC, 1);
            r = CIF(DECRYPT, decrypt)(c->inner, out, outlen, outsize, in, inlen);
            if (r > 0)
                tg_batch_single_done(op, tg_now_ns() - t0);
            return r;
        }
        tg_count_op(op, TG_C_REQUESTS_ASYNC, 1);
        r = decrypt_acc(c, out, outlen, outsize, in, inlen, probe);
        if (r >= 0)
            return r;
        tg_count_op(op, TG_C_FALLBACKS, 1);
    }
    return CIF(DECRYPT, decrypt)(c->inner, out, outlen, outsize, in, inlen);
}

static int ci_get_ctx_params(void *ctx, OSSL_PARAM params[])
{
    TG_CIPHER *c = ctx;

    return CIF(GET_CTX_PARAMS, get_ctx_params)(c->inner, params);
}

static int ci_set_ctx_params(void *ctx, const OSSL_PARAM params[])
{
    TG_CIPHER *c = ctx;

    return CIF(SET_CTX_PARAMS, set_ctx_params)(c->inner, params);
}

static const OSSL_PARAM *ci_gettable_ctx_params(void *ctx, void *provctx)
{
    TG_CIPHER *c = ctx;

    return tg_dflt_ctx_params_list(&tg_dflt_cipher_rsa, OSSL_FUNC_ASYM_CIPHER_GETTABLE_CTX_PARAMS,
                                   c != NULL ? c->inner : NULL, provctx);
}

static const OSSL_PARAM *ci_settable_ctx_params(void *ctx, void *provctx)
{
    TG_CIPHER *c = ctx;

    return tg_dflt_ctx_params_list(&tg_dflt_cipher_rsa, OSSL_FUNC_ASYM_CIPHER_SETTABLE_CTX_PARAMS,
                                   c != NULL ? c->inner : NULL, provctx);
}

const OSSL_DISPATCH tg_rsa_asym_cipher_functions[] = TG_ASYM_CIPHER_FUNCTIONS(ci);
