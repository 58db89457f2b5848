/*
 * tlsgate provider: batching private-key operations across the ASYNC jobs of a thread.
 *
 * Every thread that queues gets a tg_thread: one queue of at most MB8_LANES requests per
 * operation (TG_OP_*: algorithm and key size). A request lives in its job's stack frame
 * (a paused job's stack stays put), so queues hold pointers only.
 *
 *   job (application thread)                     whoever computes the batch
 *   ------------------------                     --------------------------
 *   choose the wake-up: the wait ctx's callback,  the 8th job (at once, in its job), the
 *     else the wait ctx's eventfd (ours)          application's poll (same thread), the
 *   lock; append; full? take the batch           timer thread (a queue whose oldest request
 *   unlock                                        stopped growing for flush_us, or whose
 *                                                 oldest waited 4 x flush_us), or a resumed job
 *   loop: lock; done? unlock; break               lock; take the batch; unlock
 *         resumed without result? flush the       mb8 computes (no lock held)
 *           queue ourselves, or wait for the      lock; for each request: callback(arg) or
 *           thread computing it                     write(eventfd), then done = 1; unlock
 *         unlock; ASYNC_pause_job(); drain fd
 *
 * The wake-up and `done` are one critical section under the thread's lock, and the job
 * reads `done` under that lock (the protocol of tests/fakeaccel/accel.c): once a job can
 * see done == 1 its notification is complete, so nothing touches the request, the
 * callback argument (often the SSL) or the fd after the job may have returned. The
 * eventfd is reference counted (the wait ctx holds one reference, each queued request
 * one), so a wait ctx freed early cannot make a writer use a closed fd number.
 *
 * A job resumed before its result (spurious, or ASYNC_block_pause: the two cannot be told
 * apart) does not pause again: it computes its own queue at once, or, when another
 * thread has already taken its batch, waits for that thread on a condition variable.
 *
 * fork(): the child keeps only the forking thread's state, with empty queues (requests of
 * the parent's jobs are dropped: those jobs belong to the parent), and no timer thread
 * until it queues.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <openssl/async.h>
#include <openssl/crypto.h>

#include "mb8/cpu.h"
#include "prov.h"
#include "tlsgate/prov.h"
#include "waitfd.h"

_Atomic uint64_t tg_counters[TG_C_COUNT];
const char *const tg_counter_names[TG_C_COUNT] = {
    "requests",     "requests_async", "sync",         "fallbacks",    "batches",
    "batch_fill_1", "batch_fill_2",   "batch_fill_3", "batch_fill_4", "batch_fill_5",
    "batch_fill_6", "batch_fill_7",   "batch_fill_8", "flush_full",   "flush_poll",
    "flush_timer",  "flush_resume",   "queue_wait_us", "pool_hits",    "pool_misses",
};
_Atomic uint64_t tg_op_counters[TG_OP_COUNT + 1][TG_C_COUNT];

static const char *const tg_op_names[TG_OP_COUNT] = {
    "rsa2048", "rsa3072", "rsa4096", "ecdsa_p256", "ecdh_p256", "keygen_p256", "x25519",
    "keygen_x25519",
};
/* The public enum tlsgate_alg must follow enum tg_op (metrics are indexed by it). */
_Static_assert((int)TLSGATE_ALG_RSA2048 == (int)TG_OP_RSA2048 &&
                   (int)TLSGATE_ALG_ECDSA_P256 == (int)TG_OP_ECDSA_P256 &&
                   (int)TLSGATE_ALG_ECDH_P256 == (int)TG_OP_ECDH_P256 &&
                   (int)TLSGATE_ALG_KEYGEN_P256 == (int)TG_OP_KEYGEN_P256 &&
                   (int)TLSGATE_ALG_X25519 == (int)TG_OP_X25519 &&
                   (int)TLSGATE_ALG_KEYGEN_X25519 == (int)TG_OP_KEYGEN_X25519 &&
                   (int)TLSGATE_ALG_COUNT == (int)TG_OP_COUNT,
               "enum tlsgate_alg follows enum tg_op");

static struct {
    _Atomic uint64_t count, sum, bucket[TLSGATE_HIST_BUCKETS];
} tg_hists[TG_OP_COUNT][TG_H_COUNT];

void tg_hist_add(enum tg_op op, enum tg_hist h, uint64_t us)
{
    atomic_fetch_add_explicit(&tg_hists[op][h].count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&tg_hists[op][h].sum, us, memory_order_relaxed);
    atomic_fetch_add_explicit(&tg_hists[op][h].bucket[tlsgate_hist_bucket(us)], 1,
                              memory_order_relaxed);
}

static void hist_copy(tlsgate_hist_t *d, enum tg_op op, enum tg_hist h)
{
    d->count = atomic_load_explicit(&tg_hists[op][h].count, memory_order_relaxed);
    d->sum = atomic_load_explicit(&tg_hists[op][h].sum, memory_order_relaxed);
    for (unsigned b = 0; b < TLSGATE_HIST_BUCKETS; b++)
        d->bucket[b] = atomic_load_explicit(&tg_hists[op][h].bucket[b], memory_order_relaxed);
}

void tg_metrics_snapshot(struct tlsgate_metrics *m)
{
    memset(m, 0, sizeof(*m));
    m->version = TLSGATE_METRICS_VERSION;
    m->n_alg = TLSGATE_ALG_COUNT;
    for (int op = 0; op < TG_OP_COUNT; op++) {
        tlsgate_alg_metrics_t *a = &m->alg[op];
#define C(c) atomic_load_explicit(&tg_op_counters[op][c], memory_order_relaxed)
        snprintf(a->name, sizeof(a->name), "%s", tg_op_names[op]);
        a->requests = C(TG_C_REQUESTS);
        a->requests_async = C(TG_C_REQUESTS_ASYNC);
        a->single = C(TG_C_SYNC);
        a->fallbacks = C(TG_C_FALLBACKS);
        a->pool_hits = C(TG_C_POOL_HITS);
        a->pool_misses = C(TG_C_POOL_MISSES);
        a->batches = C(TG_C_BATCHES);
        for (int k = 0; k < MB8_LANES; k++)
            a->fill[k] = C(TG_C_FILL1 + k);
#undef C
        hist_copy(&a->queue_wait_us, (enum tg_op)op, TG_H_QUEUE_WAIT);
        hist_copy(&a->batch_us, (enum tg_op)op, TG_H_BATCH);
    }
}

struct tg_thread {
    pthread_mutex_t lock;
    pthread_cond_t done_cv;
    struct tg_req *q[TG_OP_COUNT][MB8_LANES];
    unsigned qn[TG_OP_COUNT];
    uint64_t last_ns[TG_OP_COUNT]; /* when the newest request joined the queue */
    unsigned char grew[TG_OP_COUNT]; /* a request joined since the application's last poll */
    struct tg_adapt {
        int single;        /* 1: requests run as single operations (default provider) */
        double fill;       /* moving average of this thread's batch fill, in lanes */
        double partial;    /* moving average of the share of its batches that were partial */
        unsigned skipped;  /* single operations since the last probe */
        uint64_t probe_ns; /* when the last probe was queued */
        uint64_t probe_gap_ns; /* the least time between probes (0: TG_PROBE_NS) */
    } ad[TG_OP_COUNT];
    void *scratch; /* mb8 scratch (scratch_new) for batches computed on this thread */
    void *stack;   /* TG_COMPUTE_STACK bytes: batches computed inside an async job run here */
    _Atomic uint64_t polled_ns; /* the application's last poll from this thread */
    struct tg_thread *next;
};

static __thread struct tg_thread *tg_self;

/* Registry of thread states (the timer walks it) and the timer itself. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tg_thread *reg_head;
static pthread_mutex_t timer_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t timer_cv;
static pthread_t timer_thread;
static int timer_running, timer_stop;
static atomic_int timer_started; /* timer_running, readable without timer_mu */
static void *timer_scratch;
static atomic_uint pending; /* requests in all queues */
/* The latest poll of any thread (ns), and whether the timer sleeps with no deadline (then
 * only a kick wakes it). A thread that polled within TG_POLLED_RECENTLY_NS queues
 * without waking a timer that sleeps with a deadline: its own poll, at the end of the
 * application's loop pass, computes the queue, and a wake-up per first request cost a
 * context switch pair on the worker's CPU, ~1.3 per handshake at saturation (#11). */
static _Atomic uint64_t g_polled_ns;
static atomic_int timer_asleep;
/* The timer sleeps past TG_TIMER_LONG_NS, for the polls of a polling thread: a request
 * of a thread that does not poll then kicks it even when it is not the first queued, so
 * that its flush period is kept. */
static atomic_int timer_long;
#define TG_TIMER_LONG_NS (1000ULL * 1000ULL)
/* When the timer sleeps until a deadline (after a pass that found requests not yet due),
 * that deadline (ns); 0 while it runs a pass or sleeps without one. A first request due
 * after it needs no kick: the timer wakes in time by itself, and its pass then finds the
 * request (queued before this was read). Kicking the first request of every batch cost a
 * wake-up and two context switches per batch on the application's CPU: with 8 async
 * jobs (`openssl speed -async_jobs 8 ecdsap256`, every batch full) ~20% of the
 * signature rate (#19). */
static _Atomic uint64_t timer_deadline_ns;
/* While requests flow, the timer finds the queues empty between batches (the request
 * that fills a batch takes it). It then naps one flush period (the period of the latest
 * timer-managed request) with a deadline, rather than waiting for the next first
 * request's kick, for TG_TIMER_LINGER_NS after it last found requests queued: a first
 * request is then due after the nap's deadline and needs no kick. With every batch full
 * (`openssl speed -async_jobs 8 ecdhp256`) a kick and its wake-up came with every batch
 * or two (#19). */
#define TG_TIMER_LINGER_NS (10ULL * 1000ULL * 1000ULL)
static _Atomic uint64_t linger_flush_ns;
static uint64_t timer_busy_ns; /* (timer_mu) when the timer last found requests queued */
static unsigned fork_gen;   /* fork()s survived: queues before it were dropped */
/* The timer's nap while only requests it does not manage (poll_mode app) are queued. */
#define TG_TIMER_IDLE_NS (200ULL * 1000ULL)
static int g_instances;
static const OSSL_CORE_HANDLE *g_handle;
static OSSL_FUNC_core_thread_start_fn *g_thread_start;

/*
 * The stack a batch computed inside an ASYNC job runs on. OpenSSL 3.0 gives a job 32 KB of
 * stack, and the job is already deep in libssl when it reaches us; mb8's vector kernels
 * keep their tables in our scratch, but their 8-lane temporaries still take 14-16 KB of
 * stack (RSA's, P-256's and X25519's deepest chains, gcc -fstack-usage), so inside a job
 * the kernel runs on a per-thread stack of its own (ucontext switch, ~1 us per batch).
 */
#define TG_COMPUTE_STACK (512 * 1024)

/* How long a thread that polled is left to its own polls by the timer. */
#define TG_POLLED_RECENTLY_NS (50ULL * 1000000ULL)

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ---- adaptive batching ---- */

/*
 * A partial batch costs as much as a full one, so batching pays only when enough requests
 * share a batch: at least crossover(op) = (time of one 8-lane batch + the share of the
 * thread's batches that are partial x the time a partial batch's requests sit idle after
 * the last one joined, waiting for the flush) / (time of one operation by the default
 * provider) of them, and never fewer than 1.5 (a lone request is
 * always cheaper as a single operation: no kernel of one lane beats OpenSSL's). The times
 * are measured as the provider runs, so the crossover follows the machine, the kernel and
 * the flush (a poll right after the application's pass waits ~0, the timer flush_us and
 * more; mb8's portable kernels are slower than OpenSSL per lane: then it never batches,
 * apart from probes). The defaults below (AMD Zen 4 with IFMA) only seed them.
 *
 * The two computation times are lower envelopes, not averages: a sample below the
 * estimate replaces it, one above raises it by 1/64 at most. Wall-clock samples on a
 * shared machine are inflated by preemption (never deflated), and an average of them
 * drifted with the machine's load: a few preempted single operations made batches look
 * cheap, the thread switched to batching, and then had no single operation left to
 * correct the estimate. The idle wait is a real cost and is averaged. A thread batches
 * only above crossover x TG_CROSSOVER_MARGIN: context switches, wake-ups and the timer
 * thread cost CPU that the times above do not see.
 *
 * Per thread and operation, the fill of the thread's recent batches decides: below the
 * crossover the thread runs its requests as single operations; every TG_PROBE_EVERY
 * requests (and at most every TG_PROBE_NS, doubling up to TG_PROBE_MAX_NS while probes
 * find no company) one request is queued anyway as a probe: the application's other jobs
 * join it while it waits, and its fill shows the load. A request always joins a queue
 * that is not empty.
 */
#define TG_PROBE_EVERY 32
#define TG_PROBE_NS (100ULL * 1000ULL * 1000ULL)
/* A probe that nobody joined (fill 1: the application runs one job at a time) costs a
 * batch of one and a flush wait for nothing: the gap to the next doubles, up to this. */
#define TG_PROBE_MAX_NS (16ULL * TG_PROBE_NS)

static _Atomic uint64_t batch_ns[TG_OP_COUNT] = {
    1800000, 3800000, 9000000, 67000, 160000, 48000, 64000, 24000};
static _Atomic uint64_t single_ns[TG_OP_COUNT] = {
    420000, 2400000, 5500000, 29000, 67000, 15000, 48000, 50000};
/* idle time of a partial batch's requests between the last join and the computation (a
 * full batch is computed by the request that fills it: no wait) */
static _Atomic uint64_t flush_wait_ns[TG_OP_COUNT];

/* x += (sample - x) / 8, racy by design (a lost update only delays the average). */
static void ewma_update(_Atomic uint64_t *x, uint64_t sample)
{
    uint64_t old = atomic_load_explicit(x, memory_order_relaxed);

    atomic_store_explicit(x, old - old / 8 + sample / 8, memory_order_relaxed);
}

/* The lower envelope (see above): x = sample when lower, else x += min(sample - x, x / 64).
 * Racy by design too. */
static void floor_update(_Atomic uint64_t *x, uint64_t sample)
{
    uint64_t old = atomic_load_explicit(x, memory_order_relaxed);
    uint64_t up = old / 64 + 1;

    atomic_store_explicit(x, sample <= old ? sample : old + (sample - old < up ? sample - old : up),
                          memory_order_relaxed);
}

/* Below 1.5, a batch of one would be chosen over a single operation. */
#define TG_CROSSOVER_MIN 1.5
/* Batching must beat single operations by this factor on the measured times. */
#define TG_CROSSOVER_MARGIN 1.15

/* The crossover of a thread whose batches are partial with probability `partial` (only
 * a partial batch waits for its flush). */
static double crossover(enum tg_op op, double partial)
{
    double b = (double)atomic_load_explicit(&batch_ns[op], memory_order_relaxed) +
               partial * (double)atomic_load_explicit(&flush_wait_ns[op], memory_order_relaxed);
    double s = (double)atomic_load_explicit(&single_ns[op], memory_order_relaxed);
    double c = s > 0 ? b / s : (double)MB8_LANES;

    c *= TG_CROSSOVER_MARGIN;
    return c < TG_CROSSOVER_MIN ? TG_CROSSOVER_MIN : c;
}

void tg_batch_single_done(enum tg_op op, uint64_t ns)
{
    if (op < TG_OP_COUNT && ns > 0)
        floor_update(&single_ns[op], ns);
}

uint64_t tg_now_ns(void)
{
    return now_ns();
}

/* After a batch of n lanes on t (t->lock held): the thread's fill and its mode. */
static void adapt_after_batch(struct tg_thread *t, enum tg_op op, unsigned n, int probe)
{
    struct tg_adapt *a = &t->ad[op];

    /* a probe measures the load now; other batches move the averages (by 1/8: one
     * straggler, a lone request between two full batches, must not flip the choice) */
    if (probe) {
        a->fill = (double)n;
        a->partial = n < MB8_LANES;
        if (n > 1 || a->probe_gap_ns == 0)
            a->probe_gap_ns = TG_PROBE_NS;
        else if (a->probe_gap_ns < TG_PROBE_MAX_NS)
            a->probe_gap_ns *= 2;
    } else {
        a->fill += ((double)n - a->fill) / 8;
        a->partial += ((n < MB8_LANES ? 1.0 : 0.0) - a->partial) / 8;
    }
    a->single = a->fill < crossover(op, a->partial);
}

/* ---- computing ---- */

/* mb8's scratch for any batch: RSA of the largest size, P-256, X25519; a multiple of
 * MB8_SCRATCH_ALIGN. */
static size_t scratch_bytes(void)
{
    size_t n = mb8_rsa_scratch_size(4096); /* the largest supported size fits every batch */

    if (n < mb8_p256_scratch_size())
        n = mb8_p256_scratch_size();
    if (n < mb8_x25519_scratch_size())
        n = mb8_x25519_scratch_size();
    return (n + MB8_SCRATCH_ALIGN - 1) & ~(size_t)(MB8_SCRATCH_ALIGN - 1);
}

/* A zeroed, MB8_SCRATCH_ALIGN-aligned scratch of scratch_bytes(), or NULL. */
static void *scratch_new(void)
{
    void *p = aligned_alloc(MB8_SCRATCH_ALIGN, scratch_bytes());

    if (p != NULL)
        memset(p, 0, scratch_bytes());
    return p;
}

/* Wipes and frees a scratch_new() block (NULL is fine). mb8 wipes its secrets itself;
 * this wipes whatever a failed call may have left. */
static void scratch_free(void *p)
{
    if (p != NULL) {
        OPENSSL_cleanse(p, scratch_bytes());
        free(p);
    }
}

/* Runs one batch of n requests of one operation on mb8; sets each request's status. */
static void compute(enum tg_op op, struct tg_req *const *rs, unsigned n, void *scratch)
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
    case TG_OP_X25519:
        st = mb8_x25519(out, priv, in, scratch);
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
    compute(bs.op, bs.rs, bs.n, bs.scratch);
    /* returning resumes bs.caller (uc_link) */
}

/*
 * compute(), on the thread's own large stack when called inside an ASYNC job (see
 * TG_COMPUTE_STACK); directly otherwise. When no stack can be had, every lane is
 * MB8_STATUS_BAD_INPUT (the callers fall back to the default provider).
 */
static void compute_safe(struct tg_thread *t, enum tg_op op, struct tg_req *const *rs, unsigned n,
                         void *scratch)
{
    unsigned i;

    /* only the vector kernels need it (the portable ones use a few KB of stack; valgrind,
     * which runs those, would take the switch for a stack overflow) */
    if (ASYNC_get_current_job() == NULL || !mb8_cpu_has_ifma()) {
        compute(op, rs, n, scratch);
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

/*
 * Computes a batch taken from t's queue (t's lock not held) and completes it: wakes
 * every job but `self` (the running job, whose request needs no wake-up) and marks all
 * done. `how` is the TG_C_FLUSH_* counter.
 */
static void run_batch(struct tg_thread *t, enum tg_op op, struct tg_req *const *rs, unsigned n,
                      void *scratch, enum tg_counter how, const struct tg_req *self)
{
    uint64_t c0 = now_ns(), wait_ns = 0, newest = 0;
    unsigned i;

    compute_safe(t, op, rs, n, scratch);
    uint64_t c1 = now_ns();
    floor_update(&batch_ns[op], c1 - c0);
    for (i = 0; i < n; i++)
        newest = rs[i]->queued_ns > newest ? rs[i]->queued_ns : newest;
    /* Only a timer flush leaves the CPU idle while a partial batch waits (the application
     * is blocked); one computed by the application's poll waited while its loop served
     * other connections: latency, not cost. */
    if (n < MB8_LANES)
        ewma_update(&flush_wait_ns[op],
                    how == TG_C_FLUSH_TIMER && c0 > newest ? c0 - newest : 0);
    /* a request waited from its queueing until its batch was computed */
    for (i = 0; i < n; i++) {
        uint64_t w = c1 > rs[i]->queued_ns ? c1 - rs[i]->queued_ns : 0;
        wait_ns += w;
        tg_hist_add(op, TG_H_QUEUE_WAIT, w / 1000);
    }
    tg_hist_add(op, TG_H_BATCH, (c1 - c0) / 1000);
    tg_count_op(op, TG_C_BATCHES, 1);
    tg_count_op(op, (enum tg_counter)(TG_C_FILL1 + n - 1), 1);
    tg_count_op(op, how, 1);
    tg_count_op(op, TG_C_QUEUE_WAIT_US, wait_ns / 1000);

    pthread_mutex_lock(&t->lock);
    adapt_after_batch(t, op, n, rs[0]->probe);
    for (i = 0; i < n; i++) {
        struct tg_req *r = rs[i];

        if (r != self) {
            if (r->cb != NULL)
                r->cb(r->cbarg);
            else if (r->wfd != NULL)
                tg_waitfd_signal(r->wfd);
        }
        r->done = 1;
        /* from here on r belongs to its job again and is never touched */
    }
    pthread_cond_broadcast(&t->done_cv);
    pthread_mutex_unlock(&t->lock);
}

/* Takes t's queue for op (t->lock held). Returns its length. */
static unsigned take_locked(struct tg_thread *t, enum tg_op op, struct tg_req **rs)
{
    unsigned n = t->qn[op];

    memcpy(rs, t->q[op], n * sizeof(*rs));
    t->qn[op] = 0;
    atomic_fetch_sub(&pending, n);
    return n;
}

static void *thread_scratch(struct tg_thread *t)
{
    if (t->scratch == NULL)
        t->scratch = scratch_new();
    return t->scratch;
}

/* ---- thread states ---- */

static int thread_sync_init(struct tg_thread *t)
{
    if (pthread_mutex_init(&t->lock, NULL) != 0)
        return 0;
    if (pthread_cond_init(&t->done_cv, NULL) != 0) {
        pthread_mutex_destroy(&t->lock);
        return 0;
    }
    return 1;
}

static void thread_free(struct tg_thread *t)
{
    pthread_cond_destroy(&t->done_cv);
    pthread_mutex_destroy(&t->lock);
    scratch_free(t->scratch);
    OPENSSL_free(t->stack); /* kernels wipe their secrets before returning */
    OPENSSL_free(t);
}

/* Flushes every queue of t from t's own thread; returns the requests completed. */
static unsigned thread_flush(struct tg_thread *t, enum tg_counter how)
{
    struct tg_req *rs[MB8_LANES];
    unsigned total = 0, n;
    int op;

    for (op = 0; op < TG_OP_COUNT; op++) {
        pthread_mutex_lock(&t->lock);
        n = take_locked(t, (enum tg_op)op, rs);
        pthread_mutex_unlock(&t->lock);
        if (n > 0) {
            run_batch(t, (enum tg_op)op, rs, n, thread_scratch(t), how, NULL);
            total += n;
        }
    }
    return total;
}

/* OpenSSL's thread-stop hook (OPENSSL_thread_stop, OPENSSL_cleanup) for this thread. */
static void thread_stop(void *arg)
{
    struct tg_thread *t = tg_self, **pp;

    if (t == NULL)
        return;
    thread_flush(t, TG_C_FLUSH_POLL); /* nothing should be queued; never strand a job */
    pthread_mutex_lock(&reg_lock);
    for (pp = &reg_head; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == t) {
            *pp = t->next;
            break;
        }
    }
    pthread_mutex_unlock(&reg_lock);
    tg_self = NULL;
    thread_free(t);
}

static struct tg_thread *self_get(void)
{
    struct tg_thread *t = tg_self;

    if (t != NULL)
        return t;
    t = OPENSSL_zalloc(sizeof(*t));
    if (t == NULL)
        return NULL;
    if (!thread_sync_init(t)) {
        OPENSSL_free(t);
        return NULL;
    }
    for (int op = 0; op < TG_OP_COUNT; op++)
        t->ad[op].fill = MB8_LANES; /* a new thread batches until its batches say otherwise */
    if (g_thread_start != NULL && !g_thread_start(g_handle, thread_stop, NULL)) {
        thread_free(t);
        return NULL;
    }
    pthread_mutex_lock(&reg_lock);
    t->next = reg_head;
    reg_head = t;
    pthread_mutex_unlock(&reg_lock);
    tg_self = t;
    return t;
}

/* ---- the timer thread ---- */

/* One pass: computes every queue whose oldest request is due. Returns the next due time
 * (ns), or 0 when nothing is queued. */
static uint64_t timer_pass(void)
{
    uint64_t now = now_ns(), next = 0;
    struct tg_req *rs[MB8_LANES];
    struct tg_thread *t;
    unsigned n;
    int op;

    pthread_mutex_lock(&reg_lock);
    for (t = reg_head; t != NULL; t = t->next) {
        /* a thread whose application polls is left to its poll (the gateway polls after
         * every loop pass with paused jobs); the timer covers it again once it stops */
        uint64_t polled = atomic_load(&t->polled_ns);

        if (polled + TG_POLLED_RECENTLY_NS > now) {
            /* its requests become the timer's when the polls stop */
            unsigned queued = 0;

            pthread_mutex_lock(&t->lock);
            for (op = 0; op < TG_OP_COUNT; op++)
                queued += t->qn[op];
            pthread_mutex_unlock(&t->lock);
            if (queued != 0 && (next == 0 || polled + TG_POLLED_RECENTLY_NS < next))
                next = polled + TG_POLLED_RECENTLY_NS;
            continue;
        }
        for (op = 0; op < TG_OP_COUNT; op++) {
            uint64_t due, flush_ns;

            pthread_mutex_lock(&t->lock);
            /* each request carries its provider instance's period; 0: poll_mode app */
            if (t->qn[op] == 0 || (flush_ns = t->q[op][0]->flush_ns) == 0) {
                pthread_mutex_unlock(&t->lock);
                continue;
            }
            /* due when the queue stopped growing for flush_us (jobs still arriving will
             * fill it), or when its oldest request waited 4 periods (a bound) */
            due = t->last_ns[op] + flush_ns;
            if (due > t->q[op][0]->queued_ns + 4 * flush_ns)
                due = t->q[op][0]->queued_ns + 4 * flush_ns;
            if (due > now) {
                pthread_mutex_unlock(&t->lock);
                if (next == 0 || due < next)
                    next = due;
                continue;
            }
            n = take_locked(t, (enum tg_op)op, rs);
            pthread_mutex_unlock(&t->lock);
            run_batch(t, (enum tg_op)op, rs, n, timer_scratch, TG_C_FLUSH_TIMER, NULL);
            now = now_ns();
        }
    }
    pthread_mutex_unlock(&reg_lock);
    return next;
}

static void *timer_main(void *arg)
{
    pthread_mutex_lock(&timer_mu);
    while (!timer_stop) {
        uint64_t next;

        /* asleep is set before pending and the polls are read (all sequentially
         * consistent): a thread that queues without a kick saw it clear, so this thread
         * sees its request or its poll below */
        atomic_store(&timer_asleep, 1);
        if (atomic_load(&pending) == 0) {
            uint64_t until = atomic_load(&g_polled_ns) + TG_POLLED_RECENTLY_NS;

            uint64_t now = now_ns(), nap = atomic_load(&linger_flush_ns);

            if (until > now) {
                /* a polling application: requests may be queued without a kick */
                struct timespec ts;

                atomic_store(&timer_asleep, 0);
                ts.tv_sec = (time_t)(until / 1000000000ULL);
                ts.tv_nsec = (long)(until % 1000000000ULL);
                pthread_cond_timedwait(&timer_cv, &timer_mu, &ts);
            } else if (nap != 0 && now - timer_busy_ns < TG_TIMER_LINGER_NS) {
                struct timespec ts;
                uint64_t until_nap = now + nap;

                atomic_store(&timer_asleep, 0);
                ts.tv_sec = (time_t)(until_nap / 1000000000ULL);
                ts.tv_nsec = (long)(until_nap % 1000000000ULL);
                atomic_store(&timer_deadline_ns, until_nap);
                pthread_cond_timedwait(&timer_cv, &timer_mu, &ts);
                atomic_store(&timer_deadline_ns, 0);
            } else {
                pthread_cond_wait(&timer_cv, &timer_mu);
            }
            continue;
        }
        atomic_store(&timer_asleep, 0);
        timer_busy_ns = now_ns();
        pthread_mutex_unlock(&timer_mu);
        next = timer_pass();
        if (next == 0 && atomic_load(&pending) != 0)
            next = now_ns() + TG_TIMER_IDLE_NS; /* queued during the pass, or not ours */
        pthread_mutex_lock(&timer_mu);
        if (next != 0 && !timer_stop) {
            /* a kick ends the sleep early (timer_long: see tg_batch_run) */
            struct timespec ts;

            ts.tv_sec = (time_t)(next / 1000000000ULL);
            ts.tv_nsec = (long)(next % 1000000000ULL);
            atomic_store(&timer_long, next > now_ns() + TG_TIMER_LONG_NS);
            atomic_store(&timer_deadline_ns, next);
            pthread_cond_timedwait(&timer_cv, &timer_mu, &ts);
            atomic_store(&timer_deadline_ns, 0);
            atomic_store(&timer_long, 0);
        }
    }
    pthread_mutex_unlock(&timer_mu);
    return NULL;
}

/* A timer-managed request was queued first (0 -> 1), or before the timer ever ran: wake
 * the timer, starting it if needed. */
static void timer_kick(void)
{
    pthread_mutex_lock(&timer_mu);
    if (!timer_running && !timer_stop) {
        sigset_t all, old;

        if (timer_scratch == NULL)
            timer_scratch = scratch_new();
        /* the thread takes no signals: they stay with the application's threads */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        if (pthread_create(&timer_thread, NULL, timer_main, NULL) == 0) {
            timer_running = 1;
            atomic_store(&timer_started, 1);
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    pthread_cond_signal(&timer_cv);
    pthread_mutex_unlock(&timer_mu);
}

/* ---- fork ---- */

static void atfork_prepare(void)
{
    pthread_mutex_lock(&reg_lock);
    pthread_mutex_lock(&timer_mu);
}

static void atfork_parent(void)
{
    pthread_mutex_unlock(&timer_mu);
    pthread_mutex_unlock(&reg_lock);
}

static void atfork_child(void);

static void atfork_register(void)
{
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

static void atfork_child(void)
{
    struct tg_thread *t = tg_self;
    pthread_condattr_t attr;

    pthread_mutex_init(&reg_lock, NULL);
    pthread_mutex_init(&timer_mu, NULL);
    /* the timer's deadlines are CLOCK_MONOTONIC, as tg_batch_init's */
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&timer_cv, &attr);
    pthread_condattr_destroy(&attr);
    timer_running = 0;
    atomic_store(&timer_started, 0);
    atomic_store(&timer_asleep, 0);
    atomic_store(&timer_long, 0);
    atomic_store(&timer_deadline_ns, 0);
    timer_busy_ns = 0;
    atomic_store(&g_polled_ns, 0);
    /* The other threads' states stay allocated (they may hold their locks); only ours
     * is kept, emptied. */
    reg_head = NULL;
    atomic_store(&pending, 0);
    fork_gen++;
    if (t != NULL) {
        thread_sync_init(t);
        memset(t->qn, 0, sizeof(t->qn));
        memset(t->grew, 0, sizeof(t->grew));
        /* the parent's polls say nothing about the child: the timer serves it at once */
        atomic_store(&t->polled_ns, 0);
        t->next = NULL;
        reg_head = t;
    }
}

/* ---- the API ---- */

void *tg_batch_scratch(void)
{
    struct tg_thread *t = self_get();

    return t != NULL ? thread_scratch(t) : NULL;
}


int tg_batch_want(TG_PROV *prov, enum tg_op op, int *probe)
{
    struct tg_thread *t;
    struct tg_adapt *a;
    int queue;

    *probe = 0;
    if (!prov->adaptive || (t = self_get()) == NULL)
        return 1;
    a = &t->ad[op];
    pthread_mutex_lock(&t->lock);
    if (t->qn[op] > 0 || !a->single) {
        queue = 1; /* join a waiting queue; or the thread batches */
    } else if (++a->skipped >= TG_PROBE_EVERY &&
               now_ns() - a->probe_ns >= (a->probe_gap_ns ? a->probe_gap_ns : TG_PROBE_NS)) {
        a->skipped = 0;
        a->probe_ns = now_ns();
        *probe = queue = 1;
    } else {
        queue = 0;
    }
    pthread_mutex_unlock(&t->lock);
    return queue;
}

int tg_batch_can_queue(void)
{
    ASYNC_JOB *job = ASYNC_get_current_job();

    return job != NULL && ASYNC_get_wait_ctx(job) != NULL;
}

static int prepare_wake(struct tg_req *r, ASYNC_WAIT_CTX *wctx)
{
    ASYNC_callback_fn cb = NULL;
    void *cbarg = NULL;

    if (ASYNC_WAIT_CTX_get_callback(wctx, &cb, &cbarg) && cb != NULL) {
        r->cb = cb;
        r->cbarg = cbarg;
        return 1;
    }
    r->new_fd = !tg_waitfd_present(wctx);
    r->wfd = tg_waitfd_acquire(wctx);
    return r->wfd != NULL;
}

/* Is r still in t's queue (t->lock held)? */
static int queued_locked(const struct tg_thread *t, const struct tg_req *r)
{
    unsigned i;

    for (i = 0; i < t->qn[r->op]; i++)
        if (t->q[r->op][i] == r)
            return 1;
    return 0;
}

/* Pauses the current job until r is done (see the protocol at the top). */
static void wait_done(struct tg_thread *t, struct tg_req *r, ASYNC_WAIT_CTX *wctx)
{
    int resumed = 0, consumed = 0;

    for (;;) {
        struct tg_req *rs[MB8_LANES];
        unsigned n;

        pthread_mutex_lock(&t->lock);
        if (!r->done && resumed) {
            if (queued_locked(t, r)) {
                /* resumed early (spurious, or pausing is blocked): compute it now */
                n = take_locked(t, r->op, rs);
                pthread_mutex_unlock(&t->lock);
                run_batch(t, r->op, rs, n, thread_scratch(t), TG_C_FLUSH_RESUME, r);
                break;
            }
            if (r->fork_gen != fork_gen) {
                /* queued in the parent before fork(): the child's queues start empty, so
                 * nothing else will compute it; a batch of one, now */
                struct tg_req *one = r;

                pthread_mutex_unlock(&t->lock);
                compute_safe(t, r->op, &one, 1, thread_scratch(t));
                pthread_mutex_lock(&t->lock);
                r->done = 1;
            }
            while (!r->done) /* another thread (the timer) is computing it */
                pthread_cond_wait(&t->done_cv, &t->lock);
        }
        /* A job whose request added our fd to its wait ctx pauses at least once, even
         * when its batch was already computed (the timer, on another CPU, can be that
         * fast): the application learns of an async fd only from a pause
         * (SSL_ERROR_WANT_ASYNC, then SSL_get_changed_async_fds), and HAProxy crashes
         * deleting at close an fd it never inserted. The fd is already signalled, so the
         * pause costs one pass of the application's loop. */
        if (r->done && !(r->new_fd && !resumed)) {
            pthread_mutex_unlock(&t->lock);
            break;
        }
        pthread_mutex_unlock(&t->lock);
        if (r->cb != NULL)
            ASYNC_WAIT_CTX_set_status(wctx, ASYNC_STATUS_OK);
        ASYNC_pause_job();
        resumed = 1;
        if (r->wfd != NULL)
            consumed = tg_waitfd_drain(r->wfd);
    }
    if (r->wfd != NULL) {
        /* The fd held 0 when r was queued (every request leaves it drained) and r's batch
         * writes to it once, before done = 1. So when the drain after the last resume
         * read something, that was r's signal and the fd is empty again: the second
         * read(2) (EAGAIN), one syscall per request, is needed only when that drain came
         * first (a spurious or early resume) or the job never paused (#19). */
        if (!consumed)
            tg_waitfd_drain(r->wfd);
        tg_waitfd_release(r->wfd);
        r->wfd = NULL;
    }
}

int tg_batch_run(TG_PROV *prov, struct tg_req *r)
{
    ASYNC_JOB *job = ASYNC_get_current_job();
    ASYNC_WAIT_CTX *wctx = job != NULL ? ASYNC_get_wait_ctx(job) : NULL;
    struct tg_thread *t;
    struct tg_req *rs[MB8_LANES];
    unsigned n;
    int first;

    r->done = 0;
    r->cb = NULL;
    r->wfd = NULL;
    r->new_fd = 0;
    r->status = MB8_STATUS_UNUSED;
    r->queued_ns = now_ns();
    r->flush_ns = prov->poll_app ? 0 : (uint64_t)prov->flush_us * 1000ULL;
    r->fork_gen = fork_gen;
    t = job != NULL ? self_get() : NULL;
    /*
     * The wake-up (our eventfd in the job's wait ctx, or the application's callback) is
     * prepared only for a request that will wait: not for the one that fills its queue
     * and is computed at once. An fd added to the wait ctx is shown to the application
     * (SSL_get_all_async_fds) even when the job never paused, and HAProxy, which inserts
     * async fds in its poller only on SSL_ERROR_WANT_ASYNC, aborts deleting one it never
     * inserted (its BUG_ON in fd.c, found by bench/replay.sh). Only this thread adds to
     * its queue (the timer only empties it), so "fills" cannot become false behind us
     * except by the timer emptying it: then we loop and prepare the wake after all.
     */
    int ready = 0;
    while (t != NULL && wctx != NULL) {
        pthread_mutex_lock(&t->lock);
        if (t->qn[r->op] == MB8_LANES - 1 || r->cb != NULL || r->wfd != NULL) {
            ready = 1;
            break; /* t->lock held */
        }
        pthread_mutex_unlock(&t->lock);
        if (!prepare_wake(r, wctx))
            break;
    }
    if (!ready) {
        /* no job to pause: a batch of one, at once */
        struct tg_req *one = r;
        void *scratch = t != NULL ? thread_scratch(t) : scratch_new();

        if (scratch == NULL)
            return 0;
        uint64_t c0 = now_ns();
        compute_safe(t, r->op, &one, 1, scratch);
        tg_hist_add(r->op, TG_H_BATCH, (now_ns() - c0) / 1000);
        if (t == NULL)
            scratch_free(scratch);
        tg_count_op(r->op, TG_C_BATCHES, 1);
        tg_count_op(r->op, TG_C_FILL1, 1);
        return 1;
    }
    t->q[r->op][t->qn[r->op]++] = r;
    t->last_ns[r->op] = r->queued_ns;
    t->grew[r->op] = 1;
    first = atomic_fetch_add(&pending, 1) == 0;
    if (t->qn[r->op] == MB8_LANES) {
        n = take_locked(t, r->op, rs);
        pthread_mutex_unlock(&t->lock);
        run_batch(t, r->op, rs, n, thread_scratch(t), TG_C_FLUSH_FULL, r);
        if (r->wfd != NULL) {
            tg_waitfd_release(r->wfd);
            r->wfd = NULL;
        }
        return 1;
    }
    pthread_mutex_unlock(&t->lock);
    if (r->flush_ns != 0) {
        /* a thread that polls computes its own queue at the end of its loop pass */
        if (atomic_load_explicit(&linger_flush_ns, memory_order_relaxed) != r->flush_ns)
            atomic_store(&linger_flush_ns, r->flush_ns);
        int polls = atomic_load(&t->polled_ns) + TG_POLLED_RECENTLY_NS > r->queued_ns;
        uint64_t deadline = atomic_load(&timer_deadline_ns);
        int in_time = deadline != 0 && deadline <= r->queued_ns + r->flush_ns;

        if (!atomic_load(&timer_started) ||
            (first && (polls ? atomic_load(&timer_asleep) : !in_time)) ||
            (!polls && atomic_load(&timer_long)))
            timer_kick();
    }
    wait_done(t, r, wctx);
    return 1;
}

unsigned tg_batch_poll(void)
{
    struct tg_thread *t = tg_self;
    struct tg_req *rs[MB8_LANES];
    unsigned total = 0, n;
    int op;

    if (t == NULL)
        return 0;
    uint64_t now = now_ns();

    atomic_store(&t->polled_ns, now);
    atomic_store(&g_polled_ns, now);
    for (op = 0; op < TG_OP_COUNT; op++) {
        pthread_mutex_lock(&t->lock);
        /* a queue that grew since the last poll is left to grow: the application's loop
         * is still bringing jobs to it; one that did not is computed now */
        n = t->grew[op] ? 0 : take_locked(t, (enum tg_op)op, rs);
        t->grew[op] = 0;
        pthread_mutex_unlock(&t->lock);
        if (n > 0) {
            run_batch(t, (enum tg_op)op, rs, n, thread_scratch(t), TG_C_FLUSH_POLL, NULL);
            total += n;
        }
    }
    return total;
}

unsigned tg_batch_queued(void)
{
    struct tg_thread *t = tg_self;
    unsigned n = 0;
    int op;

    if (t == NULL)
        return 0;
    pthread_mutex_lock(&t->lock);
    for (op = 0; op < TG_OP_COUNT; op++)
        n += t->qn[op];
    pthread_mutex_unlock(&t->lock);
    return n;
}

int tg_batch_init(const TG_PROV *prov)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_condattr_t attr;

    pthread_mutex_lock(&timer_mu);
    if (g_instances++ == 0) {
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&timer_cv, &attr);
        pthread_condattr_destroy(&attr);
        timer_stop = 0;
    }
    pthread_mutex_unlock(&timer_mu);
    pthread_once(&once, atfork_register);
    return 1;
}

void tg_batch_set_core(const OSSL_CORE_HANDLE *handle, OSSL_FUNC_core_thread_start_fn *fn)
{
    g_handle = handle;
    g_thread_start = fn;
}

int tg_batch_teardown(void)
{
    int join = 0, last;

    pthread_mutex_lock(&timer_mu);
    last = --g_instances == 0;
    if (last && timer_running) {
        timer_stop = 1;
        pthread_cond_signal(&timer_cv);
        join = 1;
    }
    pthread_mutex_unlock(&timer_mu);
    if (join) {
        pthread_join(timer_thread, NULL);
        pthread_mutex_lock(&timer_mu);
        timer_running = 0;
        atomic_store(&timer_started, 0);
        timer_stop = 0;
        scratch_free(timer_scratch);
        timer_scratch = NULL;
        pthread_mutex_unlock(&timer_mu);
    }
    return last;
}
