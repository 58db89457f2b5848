/*
 * tlsgate provider: one batch on mb8's kernels (the compute path), and the scratch and
 * stack it runs with. No queue, no lock: batch.c hands it requests taken from a queue.
 */
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <openssl/async.h>
#include <openssl/crypto.h>

#include "batch_int.h"
#include "mb8/cpu.h"

/*
 * The stack a batch computed inside an ASYNC job runs on. OpenSSL 3.0 gives a job 32 KB of
 * stack, and the job is already deep in libssl when it reaches us; mb8's vector kernels
 * keep their tables in our scratch, but their 8-lane temporaries still take 14-16 KB of
 * stack (RSA's, P-256's and X25519's deepest chains, gcc -fstack-usage), so inside a job
 * the kernel runs on a per-thread stack of its own (ucontext switch, ~1 us per batch).
 */
#define TG_COMPUTE_STACK (512 * 1024)

/* mb8's scratch for any batch: RSA of the largest size, P-256, P-384, X25519; a multiple of
 * MB8_SCRATCH_ALIGN. */
static size_t scratch_bytes(void)
{
    size_t n = mb8_rsa_scratch_size(4096); /* the largest supported size fits every batch */

    if (n < mb8_p256_scratch_size())
        n = mb8_p256_scratch_size();
    if (n < mb8_p384_scratch_size())
        n = mb8_p384_scratch_size();
    if (n < mb8_x25519_scratch_size())
        n = mb8_x25519_scratch_size();
    if (n < mb8_mlkem768_scratch_size())
        n = mb8_mlkem768_scratch_size();
    return (n + MB8_SCRATCH_ALIGN - 1) & ~(size_t)(MB8_SCRATCH_ALIGN - 1);
}

/* see batch_int.h */
void *tg_scratch_new(void)
{
    void *p = aligned_alloc(MB8_SCRATCH_ALIGN, scratch_bytes());

    if (p != NULL)
        memset(p, 0, scratch_bytes());
    return p;
}

/* see batch_int.h; mb8 wipes its secrets itself, this wipes whatever a failed call may
 * have left */
void tg_scratch_free(void *p)
{
    if (p != NULL) {
        OPENSSL_cleanse(p, scratch_bytes());
        free(p);
    }
}

/* Runs one batch of n requests of one operation on mb8; sets each request's status. */
static void compute_lanes(enum tg_op op, struct tg_req *const *rs, unsigned n, void *scratch)
{
    const uint8_t *in[MB8_LANES] = {0}, *in2[MB8_LANES] = {0}, *priv[MB8_LANES] = {0};
    const uint8_t *bl[MB8_LANES] = {0}, *ub[MB8_LANES] = {0};
    const mb8_rsa_key_t *keys[MB8_LANES] = {0};
    uint8_t *out[MB8_LANES] = {0}, *out2[MB8_LANES] = {0};
    mb8_status_t st;
    unsigned i;

    for (i = 0; i < n; i++) {
        in[i] = rs[i]->in;
        in2[i] = rs[i]->in2;
        priv[i] = rs[i]->priv;
        bl[i] = rs[i]->blind;
        ub[i] = rs[i]->unblind;
        keys[i] = rs[i]->key;
        out[i] = rs[i]->out;
        out2[i] = rs[i]->out2;
    }
    switch (op) {
    case TG_OP_RSA2048:
    case TG_OP_RSA3072:
    case TG_OP_RSA4096:
        /* a NULL scratch (no memory) fails every lane: the callers fall back */
        st = mb8_rsa_private_crt(out, in, keys, bl, ub, scratch);
        break;
    case TG_OP_ECDSA_P256:
        st = mb8_p256_ecdsa_sign(out, out2, in, priv, in2, scratch);
        break;
    case TG_OP_ECDH_P256:
        st = mb8_p256_ecdh(out, priv, in, scratch);
        break;
    case TG_OP_KEYGEN_P256:
        st = mb8_p256_public_key(out, priv, scratch);
        break;
    case TG_OP_ECDSA_P384:
        st = mb8_p384_ecdsa_sign(out, out2, in, priv, in2, scratch);
        break;
    case TG_OP_ECDH_P384:
        st = mb8_p384_ecdh(out, priv, in, scratch);
        break;
    case TG_OP_KEYGEN_P384:
        st = mb8_p384_public_key(out, priv, scratch);
        break;
    case TG_OP_X25519:
        st = mb8_x25519(out, priv, in, scratch);
        break;
    case TG_OP_MLKEM768:
        st = mb8_mlkem768_encaps(out, out2, in, in2, scratch);
        break;
    case TG_OP_KEYGEN_X25519:
    default:
        st = mb8_x25519_public_key(out, priv, scratch);
        break;
    }
    for (i = 0; i < n; i++)
        rs[i]->status = mb8_status_lane(st, i);
}

static __thread struct {
    ucontext_t caller, callee;
    enum tg_op op;
    struct tg_req *const *rs;
    unsigned n;
    void *scratch;
} bs;

static void bs_trampoline(void)
{
    compute_lanes(bs.op, bs.rs, bs.n, bs.scratch);
    /* returning resumes bs.caller (uc_link) */
}

/*
 * compute_lanes(), on the thread's own large stack when called inside an ASYNC job (see
 * TG_COMPUTE_STACK); directly otherwise. When no stack can be had, every lane is
 * MB8_STATUS_BAD_INPUT (the callers fall back to the default provider).
 */
void tg_compute(struct tg_thread *t, enum tg_op op, struct tg_req *const *rs, unsigned n,
                void *scratch)
{
    unsigned i;

    /* only the vector kernels need it (the portable ones use a few KB of stack; valgrind,
     * which runs those, would take the switch for a stack overflow) */
    if (ASYNC_get_current_job() == NULL || !mb8_cpu_has_ifma()) {
        compute_lanes(op, rs, n, scratch);
        return;
    }
    if (t == NULL || (t->stack == NULL && (t->stack = OPENSSL_malloc(TG_COMPUTE_STACK)) == NULL) ||
        getcontext(&bs.callee) != 0) {
        for (i = 0; i < n; i++)
            rs[i]->status = MB8_STATUS_BAD_INPUT;
        return;
    }
    bs.op = op;
    bs.rs = rs;
    bs.n = n;
    bs.scratch = scratch;
    bs.callee.uc_stack.ss_sp = t->stack;
    bs.callee.uc_stack.ss_size = TG_COMPUTE_STACK;
    bs.callee.uc_link = &bs.caller;
    makecontext(&bs.callee, bs_trampoline, 0);
    if (swapcontext(&bs.caller, &bs.callee) != 0)
        for (i = 0; i < n; i++)
            rs[i]->status = MB8_STATUS_BAD_INPUT;
}

void *tg_thread_scratch(struct tg_thread *t)
{
    if (t->scratch == NULL)
        t->scratch = tg_scratch_new();
    return t->scratch;
}
