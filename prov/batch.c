/*
 * tlsgate provider: batching private-key operations across the ASYNC jobs of a thread:
 * the queues and a request's path through them. The policy (when to queue, when to
 * compute a partial queue) is policy.c's, a batch's computation compute.c's, the timer
 * thread timer.c's, the counters metrics.c's.
 *
 * Every thread that queues gets a tg_thread: one queue of at most MB8_LANES requests per
 * operation (TG_OP_*: algorithm and key size). A request lives in its job's stack frame
 * (a paused job's stack stays put), so queues hold pointers only.
 *
 *   job (application thread)                     whoever computes the batch
 *   ------------------------                     --------------------------
 *   choose the wake-up: the wait ctx's callback,  the 8th job (at once, in its job), the
 *     else the wait ctx's eventfd (ours)          application's poll (same thread: its loop
 *   lock; append; full? take the batch           has no other work, or the oldest waited
 *   unlock                                        the policy's cap), the timer thread
 *                                                 (arrivals stopped, or the cap), or a
 *                                                 resumed job
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
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <openssl/async.h>
#include <openssl/crypto.h>

#include "batch_int.h"
#include "tlsgate/prov.h"
#include "waitfd.h"

static __thread struct tg_thread *tg_self;

/* Registry of thread states (the timer walks it). */
pthread_mutex_t tg_reg_lock = PTHREAD_MUTEX_INITIALIZER;
struct tg_thread *tg_reg_head;
atomic_uint tg_pending; /* requests in all queues */
/* The latest poll of any thread (ns): the timer sleeps no longer than its polls cover. */
_Atomic uint64_t tg_polled_any_ns;
unsigned tg_fork_gen; /* fork()s survived: queues before it were dropped */
_Atomic uint64_t tg_last_batch_ns;
static const OSSL_CORE_HANDLE *g_handle;
static OSSL_FUNC_core_thread_start_fn *g_thread_start;

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t tg_now_ns(void)
{
    return now_ns();
}

/* ---- the costs the adaptive choice weighs (policy.c) ---- */

/*
 * Measured as the provider runs, so the crossover follows the machine, the kernel and the
 * flush (mb8's portable kernels are slower than OpenSSL per lane: then it never batches,
 * apart from probes). The defaults below (AMD Zen 4 with IFMA) only seed them. The two
 * computation times are lower envelopes, not averages (tg_policy_floor): wall-clock
 * samples on a shared machine are inflated by preemption, and an average of them drifted
 * with the machine's load: a few preempted single operations made batches look cheap,
 * the thread switched to batching, and then had no single operation left to correct the
 * estimate. Racy by design: a lost update only delays an estimate.
 */
static _Atomic uint64_t batch_ns[TG_OP_COUNT] = {1800000, 3800000, 9000000, 67000,  160000, 48000,
                                                 64000,   24000,   170000,  510000, 135000, 380000};
static _Atomic uint64_t single_ns[TG_OP_COUNT] = {420000, 2400000, 5500000, 29000,  67000,  15000,
                                                  48000,  50000,   960000,  800000, 800000, 48000};
/* idle time of a partial batch's requests between the last join and a timer flush (a
 * full batch is computed by the request that fills it: no wait) */
static _Atomic uint64_t flush_wait_ns[TG_OP_COUNT];

static void floor_update(_Atomic uint64_t *x, uint64_t sample)
{
    atomic_store_explicit(x, tg_policy_floor(atomic_load_explicit(x, memory_order_relaxed), sample),
                          memory_order_relaxed);
}

static void ewma_update(_Atomic uint64_t *x, uint64_t sample)
{
    atomic_store_explicit(x, tg_policy_ewma(atomic_load_explicit(x, memory_order_relaxed), sample),
                          memory_order_relaxed);
}

static void costs_get(enum tg_op op, struct tg_costs *c)
{
    c->batch_ns = atomic_load_explicit(&batch_ns[op], memory_order_relaxed);
    c->single_ns = atomic_load_explicit(&single_ns[op], memory_order_relaxed);
    c->flush_wait_ns = atomic_load_explicit(&flush_wait_ns[op], memory_order_relaxed);
}

void tg_batch_single_done(enum tg_op op, uint64_t ns)
{
    if (op < TG_OP_COUNT && ns > 0)
        floor_update(&single_ns[op], ns);
}

/* ---- completing a batch ---- */

/* see batch_int.h */
void tg_run_batch(struct tg_thread *t, enum tg_op op, struct tg_req *const *rs, unsigned n,
                  void *scratch, enum tg_counter how, const struct tg_req *self)
{
    uint64_t c0 = now_ns(), wait_ns = 0, newest = 0;
    struct tg_costs costs;
    int probe = rs[0]->probe, adaptive = rs[0]->adaptive, sw; /* rs[] is gone after completion */
    unsigned i;

    tg_compute(t, op, rs, n, scratch);
    uint64_t c1 = now_ns();
    floor_update(&batch_ns[op], c1 - c0);
    atomic_store_explicit(&tg_last_batch_ns, c1 - c0, memory_order_relaxed);
    for (i = 0; i < n; i++)
        newest = rs[i]->queued_ns > newest ? rs[i]->queued_ns : newest;
    /* Only a timer flush leaves the CPU idle while a partial batch waits (the application
     * is blocked); one computed by the application's poll waited while its loop served
     * other connections: latency, not cost. */
    if (n < MB8_LANES)
        ewma_update(&flush_wait_ns[op], how == TG_C_FLUSH_TIMER && c0 > newest ? c0 - newest : 0);
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
    if (probe && n > 1)
        tg_count_op(op, TG_C_PROBES_JOINED, 1);
    costs_get(op, &costs);

    pthread_mutex_lock(&t->lock);
    sw = tg_policy_after_batch(&t->pol[op], &costs, n, probe);
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
    /* the policy's state moves in any case; a switch is one only where the instance acts on
     * it (with adaptive off every request is queued: no switch to count) */
    if (sw != 0 && adaptive)
        tg_count_op(op, sw > 0 ? TG_C_MODE_BATCH : TG_C_MODE_SINGLE, 1);
}

/* see batch_int.h */
unsigned tg_take_locked(struct tg_thread *t, enum tg_op op, struct tg_req **rs)
{
    unsigned n = t->qn[op];

    memcpy(rs, t->q[op], n * sizeof(*rs));
    t->qn[op] = 0;
    atomic_fetch_sub(&tg_pending, n);
    return n;
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
    tg_scratch_free(t->scratch);
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
        n = tg_take_locked(t, (enum tg_op)op, rs);
        pthread_mutex_unlock(&t->lock);
        if (n > 0) {
            tg_run_batch(t, (enum tg_op)op, rs, n, tg_thread_scratch(t), how, NULL);
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
    pthread_mutex_lock(&tg_reg_lock);
    for (pp = &tg_reg_head; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == t) {
            *pp = t->next;
            break;
        }
    }
    pthread_mutex_unlock(&tg_reg_lock);
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
        tg_policy_init(&t->pol[op]); /* a new thread batches until its batches say otherwise */
    t->tid = (int)syscall(SYS_gettid);
    if (g_thread_start != NULL && !g_thread_start(g_handle, thread_stop, NULL)) {
        thread_free(t);
        return NULL;
    }
    pthread_mutex_lock(&tg_reg_lock);
    t->next = tg_reg_head;
    tg_reg_head = t;
    pthread_mutex_unlock(&tg_reg_lock);
    tg_self = t;
    return t;
}

/* see batch_int.h */
long tg_thread_busy(const struct tg_thread *t)
{
    char path[64], buf[512];
    const char *p;
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "/proc/self/task/%d/stat", t->tid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return TG_POLICY_BACKLOG_UNKNOWN;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return TG_POLICY_BACKLOG_UNKNOWN;
    buf[n] = 0;
    /* "tid (comm) S ...": comm may hold spaces and parentheses; the state follows the
     * last ')' */
    p = strrchr(buf, ')');
    if (p == NULL || p[1] != ' ' || p[2] == 0)
        return TG_POLICY_BACKLOG_UNKNOWN;
    return p[2] == 'R' ? 1 : 0;
}

/* ---- fork ---- */

static void atfork_prepare(void)
{
    pthread_mutex_lock(&tg_reg_lock);
    tg_timer_fork_prepare();
}

static void atfork_parent(void)
{
    tg_timer_fork_parent();
    pthread_mutex_unlock(&tg_reg_lock);
}

/* The child keeps only the forking thread's state, with empty queues, and has no timer
 * thread until it queues. */
static void atfork_child(void)
{
    struct tg_thread *t = tg_self;

    /* atfork_prepare's locks are this thread's: released (see tg_timer_fork_child) */
    pthread_mutex_unlock(&tg_reg_lock);
    tg_timer_fork_child();
    atomic_store(&tg_polled_any_ns, 0);
    /* The other threads' states stay allocated (they may hold their locks); only ours
     * is kept, emptied. */
    tg_reg_head = NULL;
    atomic_store(&tg_pending, 0);
    tg_fork_gen++;
    if (t != NULL) {
        thread_sync_init(t);
        memset(t->qn, 0, sizeof(t->qn));
        memset(t->grew, 0, sizeof(t->grew));
        /* the parent's polls say nothing about the child: the timer serves it at once */
        atomic_store(&t->polled_ns, 0);
        t->tid = (int)syscall(SYS_gettid);
        t->next = NULL;
        tg_reg_head = t;
    }
}

static void atfork_register(void)
{
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* ---- the API ---- */

void *tg_batch_scratch(void)
{
    struct tg_thread *t = self_get();

    return t != NULL ? tg_thread_scratch(t) : NULL;
}

int tg_batch_compute_now(struct tg_req *r)
{
    struct tg_thread *t = self_get();
    struct tg_req *one = r;
    void *scratch = t != NULL ? tg_thread_scratch(t) : tg_scratch_new();

    r->status = MB8_STATUS_UNUSED;
    if (scratch == NULL)
        return 0;
    tg_compute(t, r->op, &one, 1, scratch); /* on the thread's own stack inside a job */
    if (t == NULL)
        tg_scratch_free(scratch);
    return 1;
}


int tg_batch_want(TG_PROV *prov, enum tg_op op, int *probe)
{
    struct tg_thread *t;
    enum tg_want w;
    uint64_t now;

    *probe = 0;
    if ((t = self_get()) == NULL)
        return 1;
    now = now_ns();
    pthread_mutex_lock(&t->lock);
    /* every request counts in the arrival rate, queued or not (the flush's time rules) */
    tg_policy_arrival(&t->pol[op], now);
    w = prov->adaptive ? tg_policy_want(&t->pol[op], t->qn[op], now) : TG_WANT_QUEUE;
    pthread_mutex_unlock(&t->lock);
    if (w == TG_WANT_PROBE) {
        *probe = 1;
        tg_count_op(op, TG_C_PROBES, 1);
    }
    return w != TG_WANT_SINGLE;
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
                n = tg_take_locked(t, r->op, rs);
                pthread_mutex_unlock(&t->lock);
                tg_run_batch(t, r->op, rs, n, tg_thread_scratch(t), TG_C_FLUSH_RESUME, r);
                break;
            }
            if (r->fork_gen != tg_fork_gen) {
                /* queued in the parent before fork(): the child's queues start empty, so
                 * nothing else will compute it; a batch of one, now */
                struct tg_req *one = r;

                pthread_mutex_unlock(&t->lock);
                tg_compute(t, r->op, &one, 1, tg_thread_scratch(t));
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
    r->adaptive = prov->adaptive;
    r->fork_gen = tg_fork_gen;
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
        void *scratch = t != NULL ? tg_thread_scratch(t) : tg_scratch_new();

        if (scratch == NULL)
            return 0;
        uint64_t c0 = now_ns();
        tg_compute(t, r->op, &one, 1, scratch);
        tg_hist_add(r->op, TG_H_BATCH, (now_ns() - c0) / 1000);
        if (t == NULL)
            tg_scratch_free(scratch);
        tg_count_op(r->op, TG_C_BATCHES, 1);
        tg_count_op(r->op, TG_C_FILL1, 1);
        return 1;
    }
    t->q[r->op][t->qn[r->op]++] = r;
    t->last_ns[r->op] = r->queued_ns;
    t->grew[r->op] = 1;
    first = atomic_fetch_add(&tg_pending, 1) == 0;
    if (t->qn[r->op] == MB8_LANES) {
        n = tg_take_locked(t, r->op, rs);
        pthread_mutex_unlock(&t->lock);
        tg_run_batch(t, r->op, rs, n, tg_thread_scratch(t), TG_C_FLUSH_FULL, r);
        if (r->wfd != NULL) {
            tg_waitfd_release(r->wfd);
            r->wfd = NULL;
        }
        return 1;
    }
    pthread_mutex_unlock(&t->lock);
    if (r->flush_ns != 0) {
        /* a thread that polls computes its own queue at the end of its loop pass */
        int polls = atomic_load(&t->polled_ns) + TG_POLLED_RECENTLY_NS > r->queued_ns;
        uint64_t deadline = tg_timer_deadline();
        int in_time = deadline != 0 && deadline <= r->queued_ns + r->flush_ns;

        tg_timer_note_flush(r->flush_ns);
        if (!tg_timer_started() || (first && (polls ? tg_timer_asleep() : !in_time)) ||
            (!polls && tg_timer_long()))
            tg_timer_kick();
    }
    wait_done(t, r, wctx);
    return 1;
}

unsigned tg_batch_poll(long backlog)
{
    struct tg_thread *t = tg_self;
    struct tg_req *rs[MB8_LANES];
    unsigned total = 0, n;
    int op;

    if (t == NULL)
        return 0;
    uint64_t now = now_ns();

    atomic_store(&t->polled_ns, now);
    atomic_store(&tg_polled_any_ns, now);
    for (op = 0; op < TG_OP_COUNT; op++) {
        enum tg_flush f = TG_FLUSH_WAIT;

        pthread_mutex_lock(&t->lock);
        if (t->qn[op] > 0) {
            /* without the application's figure, a queue that grew since the last poll
             * counts as backlog: the application's loop is still bringing jobs to it */
            long b = backlog != TG_POLICY_BACKLOG_UNKNOWN ? backlog : t->grew[op] ? 1 : 0;

            f = tg_policy_flush(&t->pol[op], t->qn[op], t->q[op][0]->queued_ns, t->last_ns[op], b,
                                t->q[op][0]->flush_ns, now, NULL);
        }
        n = f != TG_FLUSH_WAIT ? tg_take_locked(t, (enum tg_op)op, rs) : 0;
        t->grew[op] = 0;
        pthread_mutex_unlock(&t->lock);
        if (n > 0) {
            tg_run_batch(t, (enum tg_op)op, rs, n, tg_thread_scratch(t),
                         f == TG_FLUSH_AGE ? TG_C_FLUSH_AGE : TG_C_FLUSH_POLL, NULL);
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

    (void)prov;
    tg_timer_init();
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
    return tg_timer_teardown();
}
