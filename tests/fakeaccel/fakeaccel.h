/*
 * fakeaccel: internal declarations shared by the provider's source files.
 *
 * TEST-ONLY. See fakeaccel.c for what the provider is and README.md for how to use it.
 */
#ifndef FAKEACCEL_H
#define FAKEACCEL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/core.h>
#include <openssl/core_dispatch.h>
#include <openssl/evp.h>

#include "glue.h"    /* dispatch tables, parameter answers (prov/glue.h) */
#include "upcalls.h" /* struct tg_core (prov/upcalls.h) */

#define FA_PROV_NAME "fakeaccel"
#define FA_PROV_VERSION "0.1.0"

/* Reason codes of errors raised through the core (see fa_reason_strings in fakeaccel.c). */
#define FA_R_INJECTED_FAILURE 1
#define FA_R_OPERATION_FAILED 2
#define FA_R_NO_KEY 3
#define FA_R_BAD_ARGUMENT 4
#define FA_R_DELEGATION_FAILED 5

enum fa_notify {
    FA_NOTIFY_CALLBACK = 0, /* the application's ASYNC_WAIT_CTX callback, else a wait fd */
    FA_NOTIFY_FD = 1,       /* always a wait fd (eventfd) */
    FA_NOTIFY_POLL = 2      /* as callback, but a completed operation wakes its job only
                             * when the application reads the provider parameter "poll"
                             * (as accelerators that need polling do): tests the
                             * application's poll hook */
};

/* Kinds of accelerated (private-key) operations. */
enum fa_op {
    FA_OP_SIGN = 1,   /* EVP_PKEY_sign() on the inner context */
    FA_OP_DECRYPT = 2 /* EVP_PKEY_decrypt() on the inner context */
};

struct fa_req;

/* One provider instance (the provctx). */
typedef struct fa_prov {
    struct tg_core core; /* the handle and the core's functions (prov/upcalls.h) */

    /* Private library context with only the default provider: every real computation. */
    OSSL_LIB_CTX *libctx;
    OSSL_PROVIDER *deflt;
    EVP_KEYMGMT *km_rsa, *km_rsa_pss, *km_ec;
    EVP_SIGNATURE *sig_rsa, *sig_ecdsa;
    EVP_ASYM_CIPHER *ciph_rsa;

    /* Configuration, fixed at init. */
    unsigned long delay_us;
    enum fa_notify notify;
    unsigned long fail_every;
    int no_pause; /* pause=0: the job waits for the answer without pausing (still notified) */
    int log_fd;   /* FAKEACCEL_LOG: one line per accelerated operation, or -1 */

    /* Counters (provider parameters). */
    _Atomic uint64_t ops, ops_async, fails, inflight;

    /* The accelerator: a FIFO of requests served by one thread (see accel.c). */
    pthread_mutex_t lock;
    pthread_cond_t work_cv; /* the thread waits here for work and due times */
    pthread_cond_t done_cv; /* a job whose pause did not switch waits here */
    struct fa_req *head, *tail;
    struct fa_req *current;                 /* taken by the thread, not yet done */
    struct fa_req *ready_head, *ready_tail; /* FA_NOTIFY_POLL: computed, wake pending */
    pthread_t thread;
    int accel_initialized; /* lock and condition variables exist */
    int thread_running;
    int stopping;
    int abandon;                   /* process exit: the thread leaves what is queued (fa_atexit) */
    struct fa_prov *next_instance; /* list of live instances, for the fork handlers */
} FA_PROV;

/* A key of ours: an EVP_PKEY of the private library context. */
typedef struct fa_key {
    FA_PROV *prov;
    const char *type; /* "RSA", "RSA-PSS" or "EC" */
    EVP_PKEY *pkey;   /* NULL until imported or generated */
} FA_KEY;

/* fakeaccel.c: errors through the core. */
void fa_raise(const FA_PROV *prov, const char *file, int line, const char *func, uint32_t reason,
              const char *fmt, ...) __attribute__((format(printf, 6, 7)));
#define FA_RAISE(prov, reason, ...)                                                                \
    fa_raise((prov), OPENSSL_FILE, OPENSSL_LINE, OPENSSL_FUNC, (reason), __VA_ARGS__)

/* accel.c */
/* An operation context's parameters, forwarded to its inner context pctx (fakeaccel.c):
 * refused when pctx is NULL (before init); an empty set is accepted as it is. */
int fa_pctx_get_params(EVP_PKEY_CTX *pctx, OSSL_PARAM params[]);
int fa_pctx_set_params(EVP_PKEY_CTX *pctx, const OSSL_PARAM params[]);
/* EVP_PKEY_sign, _decrypt, _encrypt, _verify_recover: one input, one output. */
typedef int fa_pkey_out_fn(EVP_PKEY_CTX *pctx, unsigned char *out, size_t *outlen,
                           const unsigned char *in, size_t inlen);
/* f on pctx (NULL: fails) with in, into out of outsize bytes; their number into *outlen
 * (untouched on failure). 1, or 0 (f's error on the queue). */
int fa_pctx_out(fa_pkey_out_fn *f, EVP_PKEY_CTX *pctx, unsigned char *out, size_t *outlen,
                size_t outsize, const unsigned char *in, size_t inlen);

int fa_accel_init(FA_PROV *prov);
void fa_accel_cleanup(FA_PROV *prov);
/*
 * Runs one private-key operation on |pctx| (a context of the private library context):
 * synchronously outside an ASYNC job, through the accelerator thread (pausing the job)
 * inside one; a size query (out NULL) at once. Returns 1 with *outlen set, or 0 with an
 * error raised (none when pctx is NULL: no init).
 */
int fa_accel_run(FA_PROV *prov, enum fa_op op, EVP_PKEY_CTX *pctx, unsigned char *out,
                 size_t *outlen, size_t outsize, const unsigned char *in, size_t inlen);

/*
 * FA_NOTIFY_POLL: wake the jobs of every operation computed so far (callback or wait fd,
 * then done, under the lock as the thread does in the other modes). Returns how many.
 * In the other modes there is nothing to do and it returns 0.
 */
unsigned fa_accel_poll(FA_PROV *prov);

/* Dispatch tables. */
extern const OSSL_DISPATCH fa_rsa_keymgmt_functions[];
extern const OSSL_DISPATCH fa_rsa_pss_keymgmt_functions[];
extern const OSSL_DISPATCH fa_ec_keymgmt_functions[];
extern const OSSL_DISPATCH fa_rsa_signature_functions[];
extern const OSSL_DISPATCH fa_ecdsa_signature_functions[];
extern const OSSL_DISPATCH fa_rsa_asym_cipher_functions[];

/* keymgmt.c: look up the default provider's import/export type tables (at init). */
int fa_keymgmt_bind_default(FA_PROV *prov);

#endif
