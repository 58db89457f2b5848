/*
 * AES-128-GCM and AES-256-GCM record ciphers on intel-ipsec-mb's VAES / AVX-512 code
 * (issue #21). OpenSSL 3.0's own AES-GCM runs 128-bit AES-NI and PCLMULQDQ; on a core with
 * VAES and VPCLMULQDQ, intel-ipsec-mb's does 4 blocks per instruction.
 *
 * The library is optional twice over: at build time (without intel-ipsec-mb.h this file
 * offers no cipher) and at run time (libIPSec_MB.so.1 is opened with dlopen: when it is
 * missing, of another ABI version, or the CPU lacks AVX-512 / VAES / VPCLMULQDQ, the
 * provider offers no cipher and applications get OpenSSL's, as before). TLSGATE_GCM=off
 * in the environment does the same (tests, and an operator's way out).
 *
 * Behaviour follows the default provider's AES-GCM (same bytes, same successes and
 * failures, checked by tests/prov/cipher_gcm_test.c against it):
 * - the streaming interface: init with key and/or IV, AAD by update(out = NULL), data by
 *   update, final (encryption: the tag is then readable; decryption: the tag must have
 *   been set, and final fails on a mismatch), an IV used once (a second final or update
 *   without a new IV fails); an encryption without an IV gets a random one;
 * - the TLS 1.2 path (RFC 5288): the 13-byte TLS1 AAD control (its length corrected for
 *   the explicit nonce and, decrypting, the tag; the padding returned is the tag length),
 *   the fixed IV part (4 bytes, the 8-byte invocation field random when encrypting, then
 *   counted up per record), one in-place cipher call per record that writes or reads the
 *   explicit nonce and the tag, at most 2^64 - 1 records per key when encrypting.
 *
 * intel-ipsec-mb takes the AAD at the start of a message (its init call), so AAD given by
 * update is kept (inline up to TG_GCM_AAD_INLINE bytes, else on the heap) until the first
 * data or the final. The library's GCM functions are stateless beyond the two structures
 * passed in (expanded key, per-message context): one manager per process, set up once,
 * serves every thread.
 *
 * Timing: intel-ipsec-mb's GCM is constant-time in the key and data (AES rounds and
 * carry-less multiplications); the tag is compared with CRYPTO_memcmp.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "glue.h"
#include "prov.h"
#include "tcache.h"

#ifdef TLSGATE_HAVE_IPSEC_MB
#include <intel-ipsec-mb.h>

#define TG_GCM_AAD_INLINE 32
#define TG_GCM_IV_MAX 128 /* bytes; OpenSSL's limit (GCM_IV_MAX_SIZE) */
#define TG_GCM_TAG_LEN 16
#define TG_TLS_FIXED_IV 4
#define TG_TLS_EXPLICIT_IV 8
#define TG_TLS_AAD_LEN 13

enum { IV_NONE, IV_BUFFERED, IV_STARTED, IV_FINISHED };

typedef struct tg_gcm_ctx {
    struct gcm_context_data msg; /* intel-ipsec-mb's per-message state (88 bytes) */
    TG_PROV *prov;
    size_t keylen; /* 16 or 32 */
    unsigned char rawkey[32];
    uint64_t kid;  /* this key's id in the per-thread expanded-key cache; 0: none */
    unsigned slot; /* where it was last expanded (a hint, checked against kid) */
    int enc;
    int key_set;
    int iv_state; /* IV_* */
    int iv_gen;   /* TLS 1.2: the fixed part is set, the invocation field counts */
    size_t ivlen;
    size_t taglen;    /* 0: not set */
    long tls_aad_len; /* -1: not the TLS path */
    size_t tls_aad_pad;
    uint64_t tls_enc_records;
    unsigned char iv[TG_GCM_IV_MAX];
    unsigned char tag[TG_GCM_TAG_LEN]; /* computed (enc) or expected (dec) */
    unsigned char tls_aad[TG_TLS_AAD_LEN];
    unsigned char *aad; /* aad_inline or heap */
    size_t aad_len, aad_cap;
    unsigned char aad_inline[TG_GCM_AAD_INLINE];
} TG_GCM_CTX;

static IMB_MGR *mgr;
static int gcm_ok;
static pthread_once_t gcm_once = PTHREAD_ONCE_INIT;

static void gcm_probe(void)
{
    const char *env = getenv("TLSGATE_GCM");
    if (env != NULL && strcmp(env, "off") == 0)
        return;
    void *lib = dlopen("libIPSec_MB.so." TG_IMB_SOVERSION, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
        return;
    unsigned (*get_version)(void) = (unsigned (*)(void))dlsym(lib, "imb_get_version");
    IMB_MGR *(*alloc)(uint64_t) = (IMB_MGR * (*)(uint64_t)) dlsym(lib, "alloc_mb_mgr");
    void (*init512)(IMB_MGR *) = (void (*)(IMB_MGR *))dlsym(lib, "init_mb_mgr_avx512");
    void (*free_mgr)(IMB_MGR *) = (void (*)(IMB_MGR *))dlsym(lib, "free_mb_mgr");
    /* the manager's layout is that of the header we were built with: same major.minor */
    if (!get_version || !alloc || !init512 || !free_mgr ||
        (get_version() >> 8) != ((unsigned)IMB_VERSION_NUM >> 8)) {
        dlclose(lib);
        return;
    }
    IMB_MGR *m = alloc(0);
    if (m == NULL) {
        dlclose(lib);
        return;
    }
    const uint64_t need = IMB_FEATURE_AVX512_SKX | IMB_FEATURE_VAES | IMB_FEATURE_VPCLMULQDQ |
                          IMB_FEATURE_AESNI | IMB_FEATURE_PCLMULQDQ;
    if ((m->features & need) != need) {
        free_mgr(m);
        dlclose(lib);
        return;
    }
    init512(m);
    if (m->gcm128_pre == NULL || m->gcm256_pre == NULL || m->gcm128_init_var_iv == NULL ||
        m->gcm256_init_var_iv == NULL) {
        free_mgr(m);
        dlclose(lib);
        return;
    }
    mgr = m; /* kept for the life of the process, as the library itself */
    gcm_ok = 1;
}

int tg_gcm_available(void)
{
    pthread_once(&gcm_once, gcm_probe);
    return gcm_ok;
}

/* ---- expanded keys: a per-thread cache ----
 * intel-ipsec-mb's expanded key (round keys and 48 powers of the hash key for the VAES
 * code) takes 1,008 bytes; kept in every context, it made an idle TLS connection's two
 * record contexts 3 KB (OpenSSL's: 1.9 KB). A context keeps the raw key (32 bytes) and an
 * id; the expansion lives in a per-thread cache of KCACHE entries (round robin), redone
 * (about 0.2 us on Zen 4) when the context's entry was taken by another key. A keep-alive
 * gateway thread touches a few contexts per loop pass; a bulk transfer one. Entries hold
 * key material: an entry is wiped when its context is freed on the same thread, or when
 * overwritten, and the cache at thread exit and provider teardown (tg_gcm_cache_wipe). */
#define KCACHE 64

struct kslot {
    struct gcm_key_data kd; /* first: 64-byte aligned */
    uint64_t kid;
} __attribute__((aligned(64)));

struct kcache {
    struct kslot slot[KCACHE];
    unsigned next;
};

static _Atomic uint64_t next_kid = 1;
static struct tg_tcache kcache_tc = TG_TCACHE_INIT(sizeof(struct kcache), _Alignof(struct kcache));

static struct kcache *kcache_get(int create)
{
    return tg_tcache_get(&kcache_tc, create);
}

void tg_gcm_cache_wipe(void)
{
    tg_tcache_wipe(&kcache_tc);
}

/* The context's expanded key on this thread, or NULL (no memory for the cache). */
static const struct gcm_key_data *key_of(TG_GCM_CTX *c)
{
    struct kcache *k = kcache_get(1);
    if (k == NULL)
        return NULL;
    struct kslot *e = &k->slot[c->slot % KCACHE];
    if (e->kid == c->kid)
        return &e->kd;
    c->slot = k->next++ % KCACHE;
    e = &k->slot[c->slot];
    if (c->keylen == 16)
        IMB_AES128_GCM_PRE(mgr, c->rawkey, &e->kd);
    else
        IMB_AES256_GCM_PRE(mgr, c->rawkey, &e->kd);
    e->kid = c->kid;
    return &e->kd;
}

/* ---- the library's calls by key size ---- */

static void k_init(TG_GCM_CTX *c, const struct gcm_key_data *kd, const unsigned char *aad,
                   size_t aad_len)
{
    if (c->keylen == 16)
        IMB_AES128_GCM_INIT_VAR_IV(mgr, kd, &c->msg, c->iv, c->ivlen, aad, aad_len);
    else
        IMB_AES256_GCM_INIT_VAR_IV(mgr, kd, &c->msg, c->iv, c->ivlen, aad, aad_len);
}

static void k_update(TG_GCM_CTX *c, const struct gcm_key_data *kd, unsigned char *out,
                     const unsigned char *in, size_t len)
{
    if (c->enc) {
        if (c->keylen == 16)
            IMB_AES128_GCM_ENC_UPDATE(mgr, kd, &c->msg, out, in, len);
        else
            IMB_AES256_GCM_ENC_UPDATE(mgr, kd, &c->msg, out, in, len);
    } else {
        if (c->keylen == 16)
            IMB_AES128_GCM_DEC_UPDATE(mgr, kd, &c->msg, out, in, len);
        else
            IMB_AES256_GCM_DEC_UPDATE(mgr, kd, &c->msg, out, in, len);
    }
}

static void k_final(TG_GCM_CTX *c, const struct gcm_key_data *kd, unsigned char *tag)
{
    if (c->enc) {
        if (c->keylen == 16)
            IMB_AES128_GCM_ENC_FINALIZE(mgr, kd, &c->msg, tag, TG_GCM_TAG_LEN);
        else
            IMB_AES256_GCM_ENC_FINALIZE(mgr, kd, &c->msg, tag, TG_GCM_TAG_LEN);
    } else {
        if (c->keylen == 16)
            IMB_AES128_GCM_DEC_FINALIZE(mgr, kd, &c->msg, tag, TG_GCM_TAG_LEN);
        else
            IMB_AES256_GCM_DEC_FINALIZE(mgr, kd, &c->msg, tag, TG_GCM_TAG_LEN);
    }
}

/* One record in one call (12-byte IV): the TLS paths. */
static void k_oneshot(TG_GCM_CTX *c, const struct gcm_key_data *kd, unsigned char *out,
                      const unsigned char *in, size_t len, const unsigned char *aad, size_t aad_len,
                      unsigned char *tag)
{
    if (c->enc) {
        if (c->keylen == 16)
            IMB_AES128_GCM_ENC(mgr, kd, &c->msg, out, in, len, c->iv, aad, aad_len, tag,
                               TG_GCM_TAG_LEN);
        else
            IMB_AES256_GCM_ENC(mgr, kd, &c->msg, out, in, len, c->iv, aad, aad_len, tag,
                               TG_GCM_TAG_LEN);
    } else {
        if (c->keylen == 16)
            IMB_AES128_GCM_DEC(mgr, kd, &c->msg, out, in, len, c->iv, aad, aad_len, tag,
                               TG_GCM_TAG_LEN);
        else
            IMB_AES256_GCM_DEC(mgr, kd, &c->msg, out, in, len, c->iv, aad, aad_len, tag,
                               TG_GCM_TAG_LEN);
    }
}

/* ---- context ---- */

static TG_GCM_CTX *ctx_alloc(void)
{
    return OPENSSL_zalloc(sizeof(TG_GCM_CTX));
}

static void *gcm_newctx(void *provctx, size_t keylen)
{
    if (!tg_gcm_available())
        return NULL;
    TG_GCM_CTX *c = ctx_alloc();
    if (c == NULL)
        return NULL;
    c->prov = provctx;
    c->keylen = keylen;
    c->ivlen = TG_TLS_FIXED_IV + TG_TLS_EXPLICIT_IV;
    c->tls_aad_len = -1;
    c->aad = c->aad_inline;
    c->aad_cap = sizeof(c->aad_inline);
    return c;
}

static void *gcm128_newctx(void *provctx)
{
    return gcm_newctx(provctx, 16);
}

static void *gcm256_newctx(void *provctx)
{
    return gcm_newctx(provctx, 32);
}

static void aad_reset(TG_GCM_CTX *c)
{
    if (c->aad != c->aad_inline) {
        OPENSSL_clear_free(c->aad, c->aad_cap);
        c->aad = c->aad_inline;
        c->aad_cap = sizeof(c->aad_inline);
    }
    c->aad_len = 0;
}

static void gcm_freectx(void *vctx)
{
    TG_GCM_CTX *c = vctx;
    if (c == NULL)
        return;
    aad_reset(c);
    /* this thread's expansion of the key, if it is still there (others: overwritten in
     * turn, wiped at their thread's exit) */
    struct kcache *k = c->kid ? kcache_get(0) : NULL;
    if (k != NULL && k->slot[c->slot % KCACHE].kid == c->kid)
        OPENSSL_cleanse(&k->slot[c->slot % KCACHE], sizeof(k->slot[0]));
    OPENSSL_clear_free(c, sizeof(*c)); /* the raw key, the IV, the tag */
}

static void *gcm_dupctx(void *vctx)
{
    const TG_GCM_CTX *in = vctx;
    TG_GCM_CTX *c = ctx_alloc();
    if (c == NULL)
        return NULL;
    memcpy(c, in, sizeof(*c)); /* the same key id: both use one expansion */
    c->aad = c->aad_inline;
    c->aad_cap = sizeof(c->aad_inline);
    if (in->aad != in->aad_inline) {
        c->aad = OPENSSL_malloc(in->aad_cap);
        if (c->aad == NULL) {
            c->aad = c->aad_inline;
            gcm_freectx(c);
            return NULL;
        }
        c->aad_cap = in->aad_cap;
        memcpy(c->aad, in->aad, in->aad_len);
    }
    return c;
}

static int gcm_set_ctx_params(void *vctx, const OSSL_PARAM params[]);

static int gcm_init(void *vctx, const unsigned char *key, size_t keylen, const unsigned char *iv,
                    size_t ivlen, const OSSL_PARAM params[], int enc)
{
    TG_GCM_CTX *c = vctx;
    c->enc = enc;
    if (iv != NULL) {
        if (ivlen == 0 || ivlen > sizeof(c->iv)) {
            TG_RAISE(c->prov, TG_R_BAD_ARGUMENT, "invalid iv length");
            return 0;
        }
        c->ivlen = ivlen;
        memcpy(c->iv, iv, ivlen);
        c->iv_state = IV_BUFFERED;
    }
    if (key != NULL) {
        if (keylen != c->keylen) {
            TG_RAISE(c->prov, TG_R_BAD_ARGUMENT, "invalid key length");
            return 0;
        }
        memcpy(c->rawkey, key, keylen);
        c->kid = atomic_fetch_add_explicit(&next_kid, 1, memory_order_relaxed);
        c->key_set = 1;
        c->tls_enc_records = 0;
    }
    return gcm_set_ctx_params(c, params);
}

static int gcm_einit(void *vctx, const unsigned char *key, size_t keylen, const unsigned char *iv,
                     size_t ivlen, const OSSL_PARAM params[])
{
    return gcm_init(vctx, key, keylen, iv, ivlen, params, 1);
}

static int gcm_dinit(void *vctx, const unsigned char *key, size_t keylen, const unsigned char *iv,
                     size_t ivlen, const OSSL_PARAM params[])
{
    return gcm_init(vctx, key, keylen, iv, ivlen, params, 0);
}

/* An encryption without an IV gets a random one (SP 800-38D §8.2.2), as OpenSSL's. */
static int iv_generate(TG_GCM_CTX *c)
{
    if (!c->enc || c->ivlen < 12 || RAND_bytes_ex(c->prov->libctx, c->iv, (int)c->ivlen, 0) <= 0)
        return 0;
    c->iv_state = IV_BUFFERED;
    return 1;
}

/* The message starts with its first data or its final: the AAD is complete then. */
static int msg_start(TG_GCM_CTX *c)
{
    if (!c->key_set || c->iv_state == IV_FINISHED)
        return 0;
    if (c->iv_state == IV_NONE && !iv_generate(c))
        return 0;
    if (c->iv_state == IV_BUFFERED) {
        const struct gcm_key_data *kd = key_of(c);
        if (kd == NULL)
            return 0;
        k_init(c, kd, c->aad, c->aad_len);
        aad_reset(c);
        c->iv_state = IV_STARTED;
    }
    return 1;
}

static int aad_add(TG_GCM_CTX *c, const unsigned char *in, size_t len)
{
    /* the message starts with its first data (IV_STARTED): AAD after data is refused, as
     * by OpenSSL's GCM */
    if (!c->key_set || c->iv_state == IV_FINISHED || c->iv_state == IV_STARTED)
        return 0;
    if (c->iv_state == IV_NONE && !iv_generate(c))
        return 0;
    if (len > SIZE_MAX / 2 - c->aad_len)
        return 0;
    if (c->aad_len + len > c->aad_cap) {
        size_t cap = c->aad_cap * 2;
        while (cap < c->aad_len + len)
            cap *= 2;
        unsigned char *p = OPENSSL_malloc(cap);
        if (p == NULL)
            return 0;
        memcpy(p, c->aad, c->aad_len);
        if (c->aad != c->aad_inline)
            OPENSSL_clear_free(c->aad, c->aad_cap);
        c->aad = p;
        c->aad_cap = cap;
    }
    memcpy(c->aad + c->aad_len, in, len);
    c->aad_len += len;
    return 1;
}

/* TLS 1.2 record (RFC 5288 §3): explicit nonce || payload || tag, in place. Returns the
 * output length, or 0 on failure (an authentication failure wipes the output). */
static int tls_cipher(TG_GCM_CTX *c, unsigned char *out, size_t *outl, const unsigned char *in,
                      size_t len)
{
    int ok = 0;
    *outl = 0;
    if (!c->key_set || out != in || len < TG_TLS_EXPLICIT_IV + TG_GCM_TAG_LEN || !c->iv_gen ||
        c->ivlen != 12)
        goto done;
    if (c->enc) {
        if (++c->tls_enc_records == 0) /* 2^64 - 1 records per key (SP 800-38D) */
            goto done;
        memcpy(out, c->iv + c->ivlen - TG_TLS_EXPLICIT_IV, TG_TLS_EXPLICIT_IV);
    } else {
        memcpy(c->iv + c->ivlen - TG_TLS_EXPLICIT_IV, in, TG_TLS_EXPLICIT_IV);
    }
    unsigned char *p = out + TG_TLS_EXPLICIT_IV;
    size_t plen = len - TG_TLS_EXPLICIT_IV - TG_GCM_TAG_LEN;
    const struct gcm_key_data *kd = key_of(c);
    if (kd == NULL)
        goto done;
    if (c->enc) {
        k_oneshot(c, kd, p, p, plen, c->tls_aad, TG_TLS_AAD_LEN, p + plen);
        /* the invocation field counts up per record (RFC 5288 §3: never reused) */
        for (int i = (int)c->ivlen - 1; i >= (int)c->ivlen - TG_TLS_EXPLICIT_IV; i--)
            if (++c->iv[i] != 0)
                break;
        *outl = len;
        tg_count(TG_C_GCM_BYTES, plen);
        ok = 1;
    } else {
        unsigned char tag[TG_GCM_TAG_LEN];
        k_oneshot(c, kd, p, p, plen, c->tls_aad, TG_TLS_AAD_LEN, tag);
        if (CRYPTO_memcmp(tag, p + plen, TG_GCM_TAG_LEN) != 0) {
            OPENSSL_cleanse(p, plen);
            tg_count(TG_C_GCM_TAG_FAILURES, 1);
            goto done;
        }
        *outl = plen;
        tg_count(TG_C_GCM_BYTES, plen);
        ok = 1;
    }
    tg_count(TG_C_GCM_RECORDS, 1);
done:
    c->iv_state = IV_FINISHED;
    c->tls_aad_len = -1;
    return ok;
}

static int gcm_update(void *vctx, unsigned char *out, size_t *outl, size_t outsize,
                      const unsigned char *in, size_t inl)
{
    TG_GCM_CTX *c = vctx;
    if (inl == 0) {
        *outl = 0;
        return 1;
    }
    if (outsize < inl) {
        TG_RAISE(c->prov, TG_R_BUFFER_TOO_SMALL, "output buffer too small");
        return 0;
    }
    if (c->tls_aad_len >= 0) {
        if (!tls_cipher(c, out, outl, in, inl)) {
            TG_RAISE(c->prov, TG_R_BAD_INPUT, "cipher operation failed");
            return 0;
        }
        return 1;
    }
    if (out == NULL) {
        if (!aad_add(c, in, inl)) {
            TG_RAISE(c->prov, TG_R_BAD_INPUT, "cipher operation failed");
            return 0;
        }
        *outl = inl;
        return 1;
    }
    if (!msg_start(c)) {
        TG_RAISE(c->prov, TG_R_BAD_INPUT, "cipher operation failed");
        return 0;
    }
    const struct gcm_key_data *kd = key_of(c);
    if (kd == NULL) {
        TG_RAISE(c->prov, TG_R_INTERNAL, "out of memory");
        return 0;
    }
    k_update(c, kd, out, in, inl);
    tg_count(TG_C_GCM_BYTES, inl);
    *outl = inl;
    return 1;
}

static int gcm_final(void *vctx, unsigned char *out, size_t *outl, size_t outsize)
{
    TG_GCM_CTX *c = vctx;
    (void)out;
    (void)outsize;
    *outl = 0;
    if (c->tls_aad_len >= 0)
        return tls_cipher(c, out, outl, NULL, 0); /* no data: fails, as OpenSSL's */
    if (!c->enc && c->taglen == 0) {
        TG_RAISE(c->prov, TG_R_BAD_INPUT, "tag not set");
        return 0;
    }
    if (!msg_start(c))
        return 0;
    unsigned char tag[TG_GCM_TAG_LEN];
    const struct gcm_key_data *kd = key_of(c);
    if (kd == NULL)
        return 0;
    k_final(c, kd, tag);
    c->iv_state = IV_FINISHED; /* an IV is used once */
    tg_count(TG_C_GCM_RECORDS, 1);
    if (c->enc) {
        memcpy(c->tag, tag, sizeof(tag));
        c->taglen = TG_GCM_TAG_LEN;
        return 1;
    }
    int ok = CRYPTO_memcmp(tag, c->tag, c->taglen) == 0;
    OPENSSL_cleanse(tag, sizeof(tag));
    if (!ok)
        tg_count(TG_C_GCM_TAG_FAILURES, 1);
    return ok;
}

/* OSSL_FUNC_CIPHER_CIPHER: EVP_Cipher (libssl's TLS 1.2 records; a NULL input is the final) */
static int gcm_cipher(void *vctx, unsigned char *out, size_t *outl, size_t outsize,
                      const unsigned char *in, size_t inl)
{
    TG_GCM_CTX *c = vctx;
    if (outsize < inl) {
        TG_RAISE(c->prov, TG_R_BUFFER_TOO_SMALL, "output buffer too small");
        return 0;
    }
    if (c->tls_aad_len >= 0) {
        /* EVP_Cipher's answer is the input length, opening too (libssl strips the nonce
         * and the tag itself), as OpenSSL's */
        if (!tls_cipher(c, out, outl, in, inl))
            return 0;
        *outl = inl;
        return 1;
    }
    if (in == NULL)
        return gcm_final(c, out, outl, outsize);
    if (!gcm_update(c, out, outl, outsize, in, inl))
        return 0;
    *outl = inl;
    return 1;
}

/* ---- parameters ---- */

static int gcm_get_params_keylen(OSSL_PARAM params[], size_t keylen)
{
    const struct tg_param_val v[] = {
        {OSSL_CIPHER_PARAM_MODE, TG_PV_UINT, NULL, EVP_CIPH_GCM_MODE},
        {OSSL_CIPHER_PARAM_KEYLEN, TG_PV_SIZE_T, NULL, keylen},
        {OSSL_CIPHER_PARAM_IVLEN, TG_PV_SIZE_T, NULL, 12},
        {OSSL_CIPHER_PARAM_BLOCK_SIZE, TG_PV_SIZE_T, NULL, 1},
        {OSSL_CIPHER_PARAM_AEAD, TG_PV_INT, NULL, 1},
        {OSSL_CIPHER_PARAM_CUSTOM_IV, TG_PV_INT, NULL, 1},
        {OSSL_CIPHER_PARAM_CTS, TG_PV_INT, NULL, 0},
        {OSSL_CIPHER_PARAM_TLS1_MULTIBLOCK, TG_PV_INT, NULL, 0},
        {OSSL_CIPHER_PARAM_HAS_RAND_KEY, TG_PV_INT, NULL, 0},
    };

    return tg_params_answer(params, v, sizeof(v) / sizeof(v[0]));
}

static int gcm128_get_params(OSSL_PARAM params[])
{
    return gcm_get_params_keylen(params, 16);
}

static int gcm256_get_params(OSSL_PARAM params[])
{
    return gcm_get_params_keylen(params, 32);
}

TG_CONST_PARAMS(gcm_gettable_params, OSSL_PARAM_uint(OSSL_CIPHER_PARAM_MODE, NULL),
                OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_KEYLEN, NULL),
                OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_IVLEN, NULL),
                OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_BLOCK_SIZE, NULL),
                OSSL_PARAM_int(OSSL_CIPHER_PARAM_AEAD, NULL),
                OSSL_PARAM_int(OSSL_CIPHER_PARAM_CUSTOM_IV, NULL),
                OSSL_PARAM_int(OSSL_CIPHER_PARAM_CTS, NULL),
                OSSL_PARAM_int(OSSL_CIPHER_PARAM_TLS1_MULTIBLOCK, NULL),
                OSSL_PARAM_int(OSSL_CIPHER_PARAM_HAS_RAND_KEY, NULL), OSSL_PARAM_END)

TG_CONST_CTX_PARAMS(gcm_gettable_ctx_params, OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_KEYLEN, NULL),
                    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_IVLEN, NULL),
                    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_AEAD_TAGLEN, NULL),
                    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_IV, NULL, 0),
                    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_UPDATED_IV, NULL, 0),
                    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, NULL, 0),
                    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_AEAD_TLS1_AAD_PAD, NULL),
                    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TLS1_GET_IV_GEN, NULL, 0),
                    OSSL_PARAM_END)

TG_CONST_CTX_PARAMS(gcm_settable_ctx_params, OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_AEAD_IVLEN, NULL),
                    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, NULL, 0),
                    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TLS1_AAD, NULL, 0),
                    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TLS1_IV_FIXED, NULL, 0),
                    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TLS1_SET_IV_INV, NULL, 0),
                    OSSL_PARAM_END)

/* The IV asked for before any update: an encryption generates it now (OpenSSL's rule). */
static int iv_for_get(TG_GCM_CTX *c)
{
    if (c->iv_state == IV_NONE) {
        if (c->tls_aad_len >= 0)
            return 0;
        return iv_generate(c);
    }
    return 1;
}

static int gcm_get_ctx_params(void *vctx, OSSL_PARAM params[])
{
    TG_GCM_CTX *c = vctx;
    OSSL_PARAM *p;

    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_IVLEN)) != NULL &&
        !OSSL_PARAM_set_size_t(p, c->ivlen))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_KEYLEN)) != NULL &&
        !OSSL_PARAM_set_size_t(p, c->keylen))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_AEAD_TAGLEN)) != NULL &&
        !OSSL_PARAM_set_size_t(p, c->taglen ? c->taglen : TG_GCM_TAG_LEN))
        return 0;
    const char *ivnames[] = {OSSL_CIPHER_PARAM_IV, OSSL_CIPHER_PARAM_UPDATED_IV};
    for (int i = 0; i < 2; i++) {
        if ((p = OSSL_PARAM_locate(params, ivnames[i])) != NULL) {
            if (!iv_for_get(c) || c->ivlen > p->data_size ||
                (!OSSL_PARAM_set_octet_string(p, c->iv, c->ivlen) &&
                 !OSSL_PARAM_set_octet_ptr(p, c->iv, c->ivlen))) {
                TG_RAISE(c->prov, TG_R_BAD_ARGUMENT, "invalid iv length");
                return 0;
            }
        }
    }
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_AEAD_TLS1_AAD_PAD)) != NULL &&
        !OSSL_PARAM_set_size_t(p, c->tls_aad_pad))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_AEAD_TAG)) != NULL) {
        size_t sz = p->data_size;
        if (!c->enc || c->taglen == 0 || sz == 0 || sz > TG_GCM_TAG_LEN ||
            !OSSL_PARAM_set_octet_string(p, c->tag, sz)) {
            TG_RAISE(c->prov, TG_R_BAD_ARGUMENT, "tag not set or invalid tag length");
            return 0;
        }
    }
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_AEAD_TLS1_GET_IV_GEN)) != NULL) {
        /* the invocation field's next value (last data_size bytes), then counted up */
        if (p->data == NULL || p->data_type != OSSL_PARAM_OCTET_STRING || !c->iv_gen || !c->key_set)
            return 0;
        size_t n = p->data_size == 0 || p->data_size > c->ivlen ? c->ivlen : p->data_size;
        memcpy(p->data, c->iv + c->ivlen - n, n);
        p->return_size = n;
        for (int i = (int)c->ivlen - 1; i >= (int)c->ivlen - TG_TLS_EXPLICIT_IV; i--)
            if (++c->iv[i] != 0)
                break;
        c->iv_state = IV_BUFFERED;
    }
    return 1;
}

/* TLS1_AAD (RFC 5246 §6.2.3.3 additional_data: seq_num || type || version || length):
 * the length is the record's, which holds the explicit nonce and (decrypting) the tag. */
static size_t tls_init(TG_GCM_CTX *c, const unsigned char *aad, size_t len)
{
    if (len != TG_TLS_AAD_LEN)
        return 0;
    memcpy(c->tls_aad, aad, len);
    c->tls_aad_len = (long)len;
    size_t rl = (size_t)aad[len - 2] << 8 | aad[len - 1];
    if (rl < TG_TLS_EXPLICIT_IV)
        return 0;
    rl -= TG_TLS_EXPLICIT_IV;
    if (!c->enc) {
        if (rl < TG_GCM_TAG_LEN)
            return 0;
        rl -= TG_GCM_TAG_LEN;
    }
    c->tls_aad[len - 2] = (unsigned char)(rl >> 8);
    c->tls_aad[len - 1] = (unsigned char)rl;
    return TG_GCM_TAG_LEN;
}

/* TLS1_IV_FIXED: the salt (RFC 5288 §3: 4 bytes); an encrypter's invocation field starts
 * random. A length of (size_t)-1 restores the whole IV. */
static int tls_iv_fixed(TG_GCM_CTX *c, const unsigned char *iv, size_t len)
{
    if (len == (size_t)-1) {
        memcpy(c->iv, iv, c->ivlen);
        c->iv_gen = 1;
        c->iv_state = IV_BUFFERED;
        return 1;
    }
    if (len < TG_TLS_FIXED_IV || len > c->ivlen || c->ivlen - len < TG_TLS_EXPLICIT_IV)
        return 0;
    memcpy(c->iv, iv, len);
    if (c->enc && RAND_bytes_ex(c->prov->libctx, c->iv + len, (int)(c->ivlen - len), 0) <= 0)
        return 0;
    c->iv_gen = 1;
    c->iv_state = IV_BUFFERED;
    return 1;
}

static int gcm_set_ctx_params(void *vctx, const OSSL_PARAM params[])
{
    TG_GCM_CTX *c = vctx;
    const OSSL_PARAM *p;

    if (params == NULL)
        return 1;
    if ((p = OSSL_PARAM_locate_const(params, OSSL_CIPHER_PARAM_AEAD_TAG)) != NULL) {
        void *vp = c->tag;
        size_t sz = 0;
        if (!OSSL_PARAM_get_octet_string(p, &vp, TG_GCM_TAG_LEN, &sz)) {
            TG_RAISE(c->prov, TG_R_BAD_ARGUMENT, "invalid tag");
            return 0;
        }
        if (c->enc || sz == 0) {
            TG_RAISE(c->prov, TG_R_BAD_ARGUMENT, c->enc ? "tag not needed" : "invalid tag");
            return 0;
        }
        c->taglen = sz;
    }
    if ((p = OSSL_PARAM_locate_const(params, OSSL_CIPHER_PARAM_AEAD_IVLEN)) != NULL) {
        size_t sz;
        if (!OSSL_PARAM_get_size_t(p, &sz) || sz == 0 || sz > sizeof(c->iv)) {
            TG_RAISE(c->prov, TG_R_BAD_ARGUMENT, "invalid iv length");
            return 0;
        }
        if (sz != c->ivlen) {
            if (c->iv_state != IV_NONE)
                c->iv_state = IV_FINISHED; /* an IV set for another length is void */
            c->ivlen = sz;
        }
    }
    if ((p = OSSL_PARAM_locate_const(params, OSSL_CIPHER_PARAM_AEAD_TLS1_AAD)) != NULL) {
        size_t pad;
        if (p->data_type != OSSL_PARAM_OCTET_STRING ||
            (pad = tls_init(c, p->data, p->data_size)) == 0) {
            TG_RAISE(c->prov, TG_R_BAD_ARGUMENT, "invalid additional authenticated data");
            return 0;
        }
        c->tls_aad_pad = pad;
    }
    if ((p = OSSL_PARAM_locate_const(params, OSSL_CIPHER_PARAM_AEAD_TLS1_IV_FIXED)) != NULL) {
        if (p->data_type != OSSL_PARAM_OCTET_STRING || !tls_iv_fixed(c, p->data, p->data_size)) {
            TG_RAISE(c->prov, TG_R_BAD_ARGUMENT, "invalid fixed iv");
            return 0;
        }
    }
    if ((p = OSSL_PARAM_locate_const(params, OSSL_CIPHER_PARAM_AEAD_TLS1_SET_IV_INV)) != NULL) {
        if (p->data == NULL || p->data_type != OSSL_PARAM_OCTET_STRING || !c->iv_gen ||
            !c->key_set || c->enc || p->data_size > c->ivlen)
            return 0;
        memcpy(c->iv + c->ivlen - p->data_size, p->data, p->data_size);
        c->iv_state = IV_BUFFERED;
    }
    return 1;
}

#define GCM_FUNCTIONS(bits)                                                                        \
    const OSSL_DISPATCH tg_aes##bits##gcm_functions[] = {                                          \
        TG_FN(OSSL_FUNC_CIPHER_NEWCTX, gcm##bits##_newctx),                                        \
        TG_FNS_FREE_DUP(CIPHER, gcm),                                                              \
        TG_FN(OSSL_FUNC_CIPHER_ENCRYPT_INIT, gcm_einit),                                           \
        TG_FN(OSSL_FUNC_CIPHER_DECRYPT_INIT, gcm_dinit),                                           \
        TG_FN(OSSL_FUNC_CIPHER_UPDATE, gcm_update),                                                \
        TG_FN(OSSL_FUNC_CIPHER_FINAL, gcm_final),                                                  \
        TG_FN(OSSL_FUNC_CIPHER_CIPHER, gcm_cipher),                                                \
        TG_FN(OSSL_FUNC_CIPHER_GET_PARAMS, gcm##bits##_get_params),                                \
        TG_FN(OSSL_FUNC_CIPHER_GETTABLE_PARAMS, gcm_gettable_params),                              \
        TG_FNS_GET_SET(CIPHER, CTX_PARAMS, gcm_get_ctx_params, gcm_gettable_ctx_params,            \
                       gcm_set_ctx_params, gcm_settable_ctx_params),                               \
        {0, NULL}}

GCM_FUNCTIONS(128);
GCM_FUNCTIONS(256);

#else /* !TLSGATE_HAVE_IPSEC_MB: built without intel-ipsec-mb, no cipher is offered */

int tg_gcm_available(void)
{
    return 0;
}

void tg_gcm_cache_wipe(void)
{
}

const OSSL_DISPATCH tg_aes128gcm_functions[] = {{0, NULL}};
const OSSL_DISPATCH tg_aes256gcm_functions[] = {{0, NULL}};

#endif
