/*
 * tlsgate provider: declarations shared by its source files (prov/README.md says what the
 * provider is; docs/architecture.md how it fits in the gateway).
 *
 * Layout:
 *   prov.c         provider entry point, configuration, parameters, errors, algorithm tables
 *   dflt.c         the default provider's implementations (private library context),
 *                  looked up once, called directly for delegation and fallback
 *   keymgmt.c      RSA / EC / X25519 key management: a wrapper around the default
 *                  provider's key object plus the cached mb8 form; batched X25519/P-256 keygen
 *   signature.c    RSA (PKCS#1 v1.5, PSS, none) and ECDSA signatures
 *   asym_cipher.c  RSA decryption (PKCS#1 v1.5, OAEP, TLS premaster, none)
 *   keyexch.c      ECDH P-256 and X25519
 *   kdf.c          TLS13-KDF and TLS1-PRF: the TLS 1.3 / 1.2 key schedules without EVP overhead
 *   rsa_pad.c      EMSA-PKCS1-v1_5 / EMSA-PSS encoding, TLS premaster check (constant time)
 *   batch.c        per-thread queues, a request's path: queue, async pause and wake-up,
 *                  completion; the application's poll; fork handling
 *   batch_int.h    what batch.c, compute.c and timer.c share (the thread state)
 *   policy.c       the batching policy: adaptive choice and flush rule (pure, unit-tested)
 *   compute.c      mb8 scratch and one batch's computation (on a stack of its own in a job)
 *   timer.c        the timer thread (applications that do not poll)
 *   metrics.c      counters and histograms, the metrics snapshot
 *   upcalls.c      the core's functions kept at init: errors, settings (shared with
 *                  tests/fakeaccel, as waitfd.c is)
 *   glue.h         dispatch-table entries, constant parameter lists, get_params answers
 *                  from a table: provider glue (shared with tests/fakeaccel)
 *   tcache.c       per-thread caches of secrets (cipher_gcm.c's keys, kdf.c's HMAC keys)
 */
#ifndef TG_PROV_H
#define TG_PROV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/async.h>
#include <openssl/bn.h>
#include <openssl/core.h>
#include <openssl/core_dispatch.h>

#include "mb8/mlkem.h"
#include "mb8/p256.h"
#include "mb8/p384.h"
#include "mb8/rsa.h"
#include "mb8/x25519.h"
#include "glue.h"
#include "upcalls.h"

#define TG_PROV_NAME "tlsgate"
#define TG_ALG_PROPS "provider=tlsgate"

/* Reason codes of the errors we raise (strings in prov.c). */
enum {
    TG_R_BAD_ARGUMENT = 1,
    TG_R_DELEGATION_FAILED = 2,
    TG_R_BUFFER_TOO_SMALL = 3,
    TG_R_BAD_INPUT = 4,
    TG_R_INTERNAL = 5,
    TG_R_BATCH_FAILED = 6,
    TG_R_NO_KEY = 7,
};

/* What can be accelerated (config "enable"). */
enum {
    TG_EN_RSA = 1u << 0,
    TG_EN_ECDSA = 1u << 1,
    TG_EN_ECDH = 1u << 2,
    TG_EN_X25519 = 1u << 3,
    TG_EN_KDF = 1u << 4,   /* TLS13-KDF and TLS1-PRF (kdf.c) */
    TG_EN_GCM = 1u << 5,   /* AES-128/256-GCM record ciphers (cipher_gcm.c) */
    TG_EN_MLKEM = 1u << 6, /* the hybrid ML-KEM TLS groups and their KEM (kem.c) */
    TG_EN_ALL = 0x7Fu,
};

/* Key types we manage, and the default provider's algorithms we delegate to. */
enum tg_kt { TG_KT_RSA, TG_KT_EC, TG_KT_X25519, TG_KT_COUNT };

/* A default-provider implementation: its functions indexed by OSSL_FUNC_* id. */
#define TG_MAX_FN 64
typedef void (*tg_fn)(void);
struct tg_impl {
    tg_fn fn[TG_MAX_FN];
};

/* The provider instance (provctx). */
typedef struct tg_prov {
    struct tg_core core; /* the handle and the core's functions (upcalls.h) */

    /* Private library context with only the default provider. */
    OSSL_LIB_CTX *libctx;
    struct ossl_provider_st *deflt; /* OSSL_PROVIDER */
    void *dflt_provctx;

    unsigned enable;        /* TG_EN_* */
    unsigned long flush_us; /* timer period; 0 = no timer */
    int poll_app;           /* poll_mode=app */
    int adaptive;           /* adaptive=on: single operations when batches stay small */
    unsigned pool_size;     /* idle-time pools: entries per kind; 0 = no pools */
    char enable_str[64];
    /* get_params' answers known at init (prov.c read_config): name, version, build,
     * status and the configuration; the poll path answers from it without building it */
    struct tg_param_val answers[9];
} TG_PROV;

/* The default provider's implementations (dflt.c); process-wide, filled at init. */
extern struct tg_impl tg_dflt_keymgmt[TG_KT_COUNT];
extern struct tg_impl tg_dflt_sig_rsa, tg_dflt_sig_ecdsa, tg_dflt_cipher_rsa, tg_dflt_kex_ecdh,
    tg_dflt_kex_x25519, tg_dflt_kdf_tls13, tg_dflt_kdf_tls1_prf;
/* Looks them up in prov->deflt. Returns 1, or 0 when one is missing. */
int tg_dflt_bind(TG_PROV *prov);
#define TG_DFLT(impl, id, type) ((type)(impl).fn[(id)])
/*
 * The gettable or settable context parameters of an operation that delegates to impl:
 * impl's function id (an OSSL_FUNC_<OP>_GETTABLE_CTX_PARAMS or _SETTABLE_CTX_PARAMS id of an
 * asymmetric cipher, key exchange or signature, all of one type) called with the default
 * provider's context inner (NULL when there is no context yet) and the default provider's
 * provctx of prov. NULL when impl has no such function.
 */
const OSSL_PARAM *tg_dflt_ctx_params_list(const struct tg_impl *impl, int id, void *inner,
                                          TG_PROV *prov);

/* ---- keys (keymgmt.c) ---- */

/* Accelerated form of a key, computed once on first use (TG_KEY.acc_state). */
struct tg_rsa_acc {
    mb8_rsa_key_t *key; /* mb8 form: limbs and Montgomery constants */
    unsigned bits;
    size_t len; /* modulus bytes */
    BIGNUM *n, *e;
    BN_MONT_CTX *mont;
    /* Blinding pair (A = r^e, Ai = r^-1 mod n), updated by squaring per use and
     * regenerated every TG_BLIND_REFRESH uses (as OpenSSL's BN_BLINDING). Am and Aim are
     * their Montgomery forms (x * R mod n): a use squares both forms by two Montgomery
     * multiplications (A (A R) / R = A^2, (A R)^2 / R = A^2 R), no long division and no
     * conversion. The redraw inverts a blinded random value with GMP (keymgmt.c). */
    pthread_mutex_t blind_lock;
    BIGNUM *A, *Ai, *Am, *Aim;
    unsigned blind_uses;
    BN_CTX *bnctx;
};

#define TG_PRIV_LEN 48

typedef struct tg_key {
    enum tg_kt kt;
    TG_PROV *prov;
    void *inner; /* the default provider's key object */

    /* Accelerated form: 0 = not computed, 1 = ready, -1 = not acceleratable. */
    _Atomic int acc_state;
    pthread_mutex_t acc_lock;
    struct tg_rsa_acc rsa;
    int has_priv, has_pub;
    int p384; /* EC: the key is on P-384 (priv 48 bytes, pub 97), else on P-256 */
    /* EC P-256 / P-384 big-endian d (32 / 48 bytes), or X25519 scalar (little-endian, 32
     * bytes): TG_PRIV_LEN bytes in the secure heap (when the application set one up); the
     * rest of the object is not secret and lives in the ordinary heap */
    uint8_t *priv;
    uint8_t pub[97]; /* EC: 0x04||X||Y (65 or 97 bytes); X25519: 32 bytes u */
} TG_KEY;

/*
 * Computes (once) and returns the accelerated state of k: 1 when mb8 can run it (RSA
 * 2048/3072/4096 two-prime with CRT values; EC on P-256; X25519), else 0. Thread-safe.
 */
int tg_key_acc(TG_KEY *k);

/*
 * Draws the next RSA blinding pair of k (accelerated RSA only) into blind and unblind
 * (k->rsa.len bytes each, big-endian). Returns 1, or 0 on a bignum failure.
 */
int tg_rsa_blinding(TG_KEY *k, uint8_t *blind, uint8_t *unblind);

/*
 * The RSA private-key operation of k (accelerated RSA only) on in (k->rsa.len bytes,
 * big-endian) into out (as long), blinded (tg_rsa_blinding) and through the batch queues
 * (tg_batch_run, with probe as tg_batch_want set it). Returns 1, or 0 when the modulus is
 * over 4096 bits, blinding fails, in >= n, or the lane fails its fault check; out is wiped
 * on every 0 after the operation ran. The unblinding factor is wiped before return.
 */
int tg_rsa_private(TG_PROV *prov, TG_KEY *k, const uint8_t *in, uint8_t *out, int probe);

/* "prime256v1", "P-256" or "secp256r1" (any case). */
int tg_is_p256_name(const char *name);
/* A uniform P-256 scalar in [1, n-1] from the private DRBG (constant-time range check).
 * Returns 1, or 0 when the DRBG fails. */
int tg_p256_random_scalar(TG_PROV *prov, uint8_t out[32]);
/* "secp384r1" or "P-384" (any case). */
int tg_is_p384_name(const char *name);
/* A uniform P-384 scalar in [1, n-1], as tg_p256_random_scalar. */
int tg_p384_random_scalar(TG_PROV *prov, uint8_t out[48]);

/* ---- batching (batch.c) ---- */

enum tg_op {
    TG_OP_RSA2048,
    TG_OP_RSA3072,
    TG_OP_RSA4096,
    TG_OP_ECDSA_P256,
    TG_OP_ECDH_P256,
    TG_OP_KEYGEN_P256,
    TG_OP_X25519,
    TG_OP_KEYGEN_X25519,
    TG_OP_ECDSA_P384,
    TG_OP_ECDH_P384,
    TG_OP_KEYGEN_P384,
    TG_OP_MLKEM768, /* ML-KEM-768 encapsulation: in = ek, in2 = m; out = ct, out2 = K */
    TG_OP_COUNT
};

/* One private-key operation. Lives in the caller's (job's) stack frame. */
struct tg_req {
    enum tg_op op;
    /* inputs: RSA: in = k bytes, key = mb8 key, blind/unblind; ECDSA: in = digest (32 or
     * 48 for P-384), in2 = nonce (32 / 48), priv; ECDH: in = peer point (65 / 97), priv;
     * X25519: in = peer u, priv; keygen: priv */
    const uint8_t *in, *in2, *priv;
    const mb8_rsa_key_t *key;
    const uint8_t *blind, *unblind;
    /* outputs: RSA: out (k bytes); ECDSA: out = r, out2 = s; ECDH/X25519: out (32, P-384
     * 48); keygen: out = public key (65, 97 or 32) */
    uint8_t *out, *out2;
    unsigned status; /* mb8 lane status (MB8_STATUS_*) */
    int probe;       /* queued as a probe of the load (tg_batch_want) */

    /* batch.c's bookkeeping */
    uint64_t queued_ns;
    uint64_t flush_ns; /* the instance's timer period, 0 when the timer leaves it alone */
    int adaptive;      /* its instance chooses single operations (adaptive on) */
    unsigned fork_gen; /* batch.c's fork generation when queued */
    ASYNC_callback_fn cb;
    void *cbarg;
    struct tg_waitfd *wfd;
    int new_fd; /* wfd was added to the wait ctx for this request: the job must pause once */
    int done;
};

/* The queue of an RSA key size (2048, 3072, 4096). */
static inline enum tg_op tg_rsa_op(unsigned bits)
{
    return bits == 2048 ? TG_OP_RSA2048 : bits == 3072 ? TG_OP_RSA3072 : TG_OP_RSA4096;
}

/* 1 when the calling thread runs an ASYNC job with a wait ctx (a request can be queued). */
int tg_batch_can_queue(void);

/*
 * The adaptive choice, for a request that can be queued (tg_batch_can_queue): 1 to queue
 * it (with *probe set when it is queued only to measure the load: pass it on in
 * tg_req.probe), 0 to compute it now as a single operation with the default provider
 * (then report its time with tg_batch_single_done). Always 1 with adaptive off.
 */
int tg_batch_want(TG_PROV *prov, enum tg_op op, int *probe);
/* The duration of a single operation (ns) run by the default provider for op. */
void tg_batch_single_done(enum tg_op op, uint64_t ns);
/* CLOCK_MONOTONIC in ns. */
uint64_t tg_now_ns(void);

/*
 * Runs r: inside an ASYNC job with a wait ctx it is queued on this thread's queue for
 * r->op and the job pauses until its batch is computed; otherwise it is computed at once
 * as a batch of one. On return r->status holds the lane status. Returns 1, or 0 when the
 * request could not be run at all (no memory, no eventfd): r->status is then
 * MB8_STATUS_UNUSED and the caller falls back.
 */
int tg_batch_run(TG_PROV *prov, struct tg_req *r);

/*
 * The application's poll: computes the calling thread's partial queues that the policy
 * says to (policy.h, tg_policy_flush). backlog: the work the application's loop still has
 * in this pass (the gateway passes its ready events; 0: it is about to idle), or
 * TG_POLICY_BACKLOG_UNKNOWN (-1): then a queue that grew since the previous poll counts as
 * backlog (the loop is still bringing jobs to it). Returns the requests completed.
 */
unsigned tg_batch_poll(long backlog);
/* Requests waiting in the calling thread's queues. */
unsigned tg_batch_queued(void);

/* Process-wide setup (atfork); one call per instance (the timer's settings travel with
 * each request, so instances with different settings coexist). */
int tg_batch_init(const TG_PROV *prov);
/* The last instance stops the timer thread; returns 1 for the last instance. */
int tg_batch_teardown(void);
/* The core's thread-start hook, to free per-thread state at OPENSSL_thread_stop. */
void tg_batch_set_core(const OSSL_CORE_HANDLE *handle, OSSL_FUNC_core_thread_start_fn *fn);

/* Counters. */
enum tg_counter {
    TG_C_REQUESTS,
    TG_C_REQUESTS_ASYNC,
    TG_C_SYNC,
    TG_C_FALLBACKS,
    TG_C_BATCHES,
    TG_C_FILL1, /* ... TG_C_FILL1 + 7 */
    TG_C_FILL8 = TG_C_FILL1 + 7,
    TG_C_FLUSH_FULL,
    TG_C_FLUSH_POLL,
    TG_C_FLUSH_TIMER,
    TG_C_FLUSH_RESUME,
    TG_C_QUEUE_WAIT_US,
    TG_C_POOL_HITS,        /* requests served from an idle-time pool */
    TG_C_POOL_MISSES,      /* a pool was kept for the key but was empty */
    TG_C_FLUSH_AGE,        /* partial batches computed because their oldest waited the cap */
    TG_C_MODE_SINGLE,      /* adaptive switches of a thread to single operations */
    TG_C_MODE_BATCH,       /* adaptive switches of a thread back to batching */
    TG_C_PROBES,           /* requests queued as probes of the load */
    TG_C_PROBES_JOINED,    /* probes whose batch had company (fill > 1) */
    TG_C_GCM_RECORDS,      /* AES-GCM messages (records) completed by cipher_gcm.c */
    TG_C_GCM_BYTES,        /* AES-GCM payload bytes encrypted or decrypted */
    TG_C_GCM_TAG_FAILURES, /* AES-GCM decryptions whose tag did not match */
    TG_C_COUNT
};
extern _Atomic uint64_t tg_counters[TG_C_COUNT];
extern const char *const tg_counter_names[TG_C_COUNT];
/* The same counters per operation ([TG_OP_COUNT] = requests of no operation of ours, e.g.
 * an RSA-1024 key: counted only in the totals). */
extern _Atomic uint64_t tg_op_counters[TG_OP_COUNT + 1][TG_C_COUNT];
static inline void tg_count(enum tg_counter c, uint64_t n)
{
    atomic_fetch_add_explicit(&tg_counters[c], n, memory_order_relaxed);
}
/* Counts n in the totals and in op's counters (op may be TG_OP_COUNT: totals only). */
static inline void tg_count_op(enum tg_op op, enum tg_counter c, uint64_t n)
{
    atomic_fetch_add_explicit(&tg_counters[c], n, memory_order_relaxed);
    atomic_fetch_add_explicit(&tg_op_counters[op][c], n, memory_order_relaxed);
}

/* Histograms per operation (tlsgate_metrics_t): per request, queued -> computed (µs);
 * per batch, kernel time (µs). */
enum tg_hist { TG_H_QUEUE_WAIT, TG_H_BATCH, TG_H_COUNT };
void tg_hist_add(enum tg_op op, enum tg_hist h, uint64_t us);
/* Fills m (TLSGATE_METRICS_VERSION layout) from the counters and histograms. */
struct tlsgate_metrics;
void tg_metrics_snapshot(struct tlsgate_metrics *m);

/* This thread's mb8 scratch (any batch), or NULL without memory. */
void *tg_batch_scratch(void);
/* Computes r alone now, as a single operation for an operation that has no default-provider
 * implementation to run instead (ML-KEM): mb8 with one lane, inside an ASYNC job on the
 * thread's own stack (as batches). Not counted as a batch. Returns 1 (r->status holds the
 * lane status), or 0 without memory for the scratch. */
int tg_batch_compute_now(struct tg_req *r);

/* ---- record ciphers (cipher_gcm.c) ---- */

/* 1 when intel-ipsec-mb's VAES AES-GCM can run here (library found, same ABI, CPU with
 * AVX-512, VAES and VPCLMULQDQ; TLSGATE_GCM=off says no); decided once per process. */
int tg_gcm_available(void);
/* Wipes this thread's cache of expanded AES-GCM keys (others' go at their thread's exit). */
void tg_gcm_cache_wipe(void);
extern const OSSL_DISPATCH tg_aes128gcm_functions[], tg_aes256gcm_functions[];

/* ---- idle-time pools (pool.c) ---- */

enum tg_pool_kind {
    TG_POOL_ECDSA_SETUP,
    TG_POOL_KEYGEN_P256,
    TG_POOL_KEYGEN_X25519,
    TG_POOL_ECDSA_SETUP_P384,
    TG_POOL_COUNT
};

/* Process-wide setup (atfork, atexit); idempotent. */
void tg_pool_init(void);
/* Wipes and frees every pool (the last instance's teardown). */
void tg_pool_clear(void);
/*
 * Takes one entry of kind into out (len bytes: MB8_P256_SETUP_BYTES for a sign setup; 32 +
 * 65 for a P-256 pair d || point; 32 + 32 for an X25519 pair) and wipes it from the pool.
 * Returns 1 (a pool hit), or 0: no entry (a miss, counted once the pool was ever
 * filled), or pools off (prov->pool_size 0). Marks kind as wanted, for tg_pool_idle.
 */
int tg_pool_take(const TG_PROV *prov, enum tg_pool_kind kind, uint8_t *out, size_t len);
/*
 * The application is idle: computes one full 8-lane batch for the wanted pool that lacks
 * the most entries (at least 8), with scratch (mb8 scratch of any batch). Not inside an
 * ASYNC job. Returns the entries still missing over the wanted pools that lack 8 or more
 * (0: nothing left to do, or no progress).
 */
unsigned tg_pool_idle(TG_PROV *prov, void *scratch);
/* Entries in kind's pool now. */
unsigned tg_pool_level(enum tg_pool_kind kind);

/* ---- padding (rsa_pad.c) ---- */

/*
 * EMSA-PKCS1-v1_5 (RFC 8017 §9.2) into em (emlen bytes): 0x00 0x01 FF.. 0x00 || T, where T
 * is the DER DigestInfo of mdname and tbs when mdname is a digest other than MD5-SHA1,
 * else tbs itself (raw PKCS#1 signing and TLS 1.0/1.1's MD5-SHA1). Returns 1, or 0 when T
 * does not fit (emlen < |T| + 11) or tbs does not have the digest's length.
 */
int tg_pad_pkcs1_sign(TG_PROV *prov, uint8_t *em, size_t emlen, const char *mdname,
                      const uint8_t *tbs, size_t tbslen);

/*
 * EMSA-PSS-ENCODE (RFC 8017 §9.1.1) of the digest tbs into em (emlen bytes = modulus
 * bytes; emBits = modbits - 1; a leading zero byte when modbits - 1 is a multiple of 8).
 * saltlen: >= 0, or -1 (the digest's length), -2 / -3 (the maximum). Returns 1, or 0 on a
 * length error, an unknown digest or an RNG failure.
 */
int tg_pad_pss(TG_PROV *prov, uint8_t *em, size_t emlen, unsigned modbits, const char *mdname,
               const char *mgf1name, int saltlen, const uint8_t *tbs, size_t tbslen);

/*
 * The TLS premaster check of RFC 5246 §7.4.7.1 in constant time: em (emlen bytes, the
 * raw RSA result) is PKCS#1 v1.5 type 2 with a 48-byte message whose first two bytes are
 * client_version (or alt_version when non-zero). out (48 bytes) gets the message when
 * all holds, else 48 random bytes drawn before the check; nothing branches on em.
 * Returns 1, or 0 when emlen < 59 or the RNG fails (public conditions).
 */
int tg_pad_tls_premaster(TG_PROV *prov, uint8_t out[48], const uint8_t *em, size_t emlen,
                         unsigned client_version, unsigned alt_version);

/*
 * A new zeroed operation context of `size` bytes for provider instance provctx, its first
 * member (a TG_PROV *) set to it: the contexts (and key generation contexts) that start
 * with their TG_PROV * (kdf.c, kem.c, keymgmt.c). NULL when out of memory.
 */
void *tg_ctx_new(void *provctx, size_t size);

/* ---- errors (prov.c) ---- */
void tg_raise(const TG_PROV *prov, const char *file, int line, const char *func, uint32_t reason,
              const char *fmt, ...) __attribute__((format(printf, 6, 7)));
#define TG_RAISE(prov, reason, ...)                                                                \
    tg_raise((prov), OPENSSL_FILE, OPENSSL_LINE, OPENSSL_FUNC, (reason), __VA_ARGS__)

/* Dispatch tables. */
extern const OSSL_DISPATCH tg_rsa_keymgmt_functions[];
extern const OSSL_DISPATCH tg_ec_keymgmt_functions[];
extern const OSSL_DISPATCH tg_x25519_keymgmt_functions[];
extern const OSSL_DISPATCH tg_rsa_signature_functions[];
extern const OSSL_DISPATCH tg_ecdsa_signature_functions[];
extern const OSSL_DISPATCH tg_rsa_asym_cipher_functions[];
extern const OSSL_DISPATCH tg_ecdh_keyexch_functions[];
extern const OSSL_DISPATCH tg_x25519_keyexch_functions[];
extern const OSSL_DISPATCH tg_tls13_kdf_functions[];
/* kem.c: the hybrid groups X25519MLKEM768 and SecP256r1MLKEM768 (key managers, one KEM) */
extern const OSSL_DISPATCH tg_x25519mlkem768_keymgmt_functions[];
extern const OSSL_DISPATCH tg_secp256r1mlkem768_keymgmt_functions[];
extern const OSSL_DISPATCH tg_hybrid_kem_functions[];
/* Announces the hybrid TLS groups through cb (TLS-GROUP capability) unless "mlkem" is not
 * enabled. Returns cb's 0 on failure, else 1. */
int tg_hybrid_groups(const TG_PROV *prov, OSSL_CALLBACK *cb, void *arg);
extern const OSSL_DISPATCH tg_tls1_prf_functions[];

/* Wipes the calling thread's cache of HMAC key schedules (kdf.c); other threads' caches
 * are wiped at their exit. */
void tg_kdf_cache_wipe(void);

#endif
