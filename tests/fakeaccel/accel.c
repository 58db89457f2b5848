/*
 * fakeaccel: the "accelerator" (TEST-ONLY): one background thread per provider instance
 * serving a FIFO of private-key operations, each answered `delay_us` after submission.
 *
 * Outside an ASYNC job (ASYNC_get_current_job() == NULL) an operation is computed in
 * the caller's thread after sleeping the delay. Inside a job:
 *
 *   job (application thread)                      accelerator thread
 *   ------------------------                      ------------------
 *   request on the job's own stack;
 *   callback mode with an application callback
 *     (ASYNC_WAIT_CTX_get_callback): remember it,
 *   otherwise: the wait ctx's eventfd (created once
 *     per ASYNC_WAIT_CTX, ASYNC_WAIT_CTX_set_wait_fd,
 *     closed by its cleanup);
 *   lock; enqueue; unlock
 *   loop:                                         wait until the head's due time
 *     lock; done (and paused once)? unlock, break pop; compute (default provider,
 *     set_status(ASYNC_STATUS_OK) (callback mode)   private libctx), no lock held
 *     ASYNC_pause_job()  --> ASYNC_PAUSE to app   lock
 *     (resumed) drain the eventfd                   callback(arg) or write(eventfd)
 *   drain; release the eventfd reference            done = 1
 *   return the result                             unlock   (request never touched again)
 *
 * The race that matters: the request lives in the job's stack frame, and the wait ctx
 * (with its eventfd and callback argument, e.g. the SSL) may be freed as soon as the job
 * has finished. So the thread must not touch the request, the callback argument or the
 * fd after the job may have seen done == 1. Hence the wake-up (callback or eventfd write)
 * happens BEFORE done is set and under the same lock that the job holds to read done:
 *  - job reads done == 0 under the lock: the thread has not notified yet (notify and
 *    done are one critical section), so a notification is still to come, and pausing
 *    cannot lose it;
 *  - job reads done == 1: the notification is complete and the thread only unlocks the
 *    provider-wide mutex (which outlives every request) after that.
 * Setting done first and notifying after the unlock would let a spuriously resumed job
 * return and its application free the wait ctx while the thread writes to the fd (a
 * closed and maybe reused fd number) or calls the callback with a freed argument.
 * Notifying after unlocking but before setting done would lose a wake-up instead (the
 * job resumed by that notification sees done == 0, pauses, and nothing wakes it again).
 * The eventfd is reference counted (the wait ctx holds one reference, each queued
 * request one), so even an application that frees a wait ctx of a job still paused
 * cannot make the thread write to a closed fd.
 *
 * Spurious resumes (the application resuming the job before the notification) are
 * answered by pausing again. ASYNC_pause_job() also returns at once without switching
 * when pausing is blocked (ASYNC_block_pause), which cannot be told apart through the
 * public API; so after a resume that found no result the job waits up to
 * FA_REPAUSE_GRACE_NS on a condition variable before pausing again: no busy loop in the
 * blocked case, and a spurious resume costs the application at most that much.
 *
 * The application callback runs on the accelerator thread with the provider's lock
 * held: it must only schedule the resumption (as SSL async callbacks are meant to), not
 * run ASYNC jobs itself. It can fire before the SSL call that started the operation has
 * returned SSL_ERROR_WANT_ASYNC.
 *
 * fork(): pthread_atfork handlers hold every instance's lock across fork(); in the
 * child the thread is gone, so it is marked not running and a request it had taken is put
 * back at the head of the queue; if requests are queued (jobs the forking thread had
 * paused live on in the child) a new thread is started at once, else lazily at the
 * child's first submission. Requests of the parent's other threads are answered too;
 * harmless, but an eventfd shared across fork() may see a spurious wake-up.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/async.h>
#include <openssl/crypto.h>
#include <openssl/err.h>

#include "fakeaccel.h"
#include "waitfd.h"

#define FA_REPAUSE_GRACE_NS 200000ULL

struct fa_req {
    struct fa_req *next;
    enum fa_op op;
    EVP_PKEY_CTX *pctx;
    unsigned char *out;
    size_t outlen; /* in: capacity of out; out: length of the result */
    const unsigned char *in;
    size_t inlen;
    uint64_t seq;
    int inject; /* fail_every: fail this one */
    uint64_t due_ns;
    ASYNC_callback_fn cb; /* callback mode: the application's callback */
    void *cbarg;
    struct tg_waitfd *wfd; /* fd mode */
    int result;
    unsigned long err; /* first error of a failed computation on the thread */
    char errdata[160];
    int done; /* under prov->lock */
    unsigned int pauses;
};

static uint64_t fa_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static struct timespec fa_timespec(uint64_t ns)
{
    struct timespec ts;

    ts.tv_sec = (time_t)(ns / 1000000000ULL);
    ts.tv_nsec = (long)(ns % 1000000000ULL);
    return ts;
}

static void fa_sleep_us(unsigned long us)
{
    struct timespec ts = fa_timespec((uint64_t)us * 1000ULL);

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        continue;
}

/* The wait fd: prov/waitfd.c (shared with the tlsgate provider). */

/* ---- computing ---- */

/* What op runs on its EVP_PKEY_CTX. */
static fa_pkey_out_fn *fa_op_fn(enum fa_op op)
{
    return op == FA_OP_SIGN ? EVP_PKEY_sign : EVP_PKEY_decrypt;
}

/* The real work, by the default provider of the private libctx. */
static void fa_compute(struct fa_req *r, int capture_errors)
{
    int ok;

    if (r->inject) {
        r->result = 0;
        return;
    }
    ok = fa_pctx_out(fa_op_fn(r->op), r->pctx, r->out, &r->outlen, r->outlen, r->in, r->inlen);
    r->result = ok;
    if (!ok && capture_errors) {
        /* The error queue is per thread: carry the first error back to the caller. */
        const char *data = NULL;
        int flags = 0;

        r->err = ERR_peek_error_data(&data, &flags);
        if (data != NULL && (flags & ERR_TXT_STRING) != 0)
            snprintf(r->errdata, sizeof(r->errdata), "%s", data);
        ERR_clear_error();
    }
}

/* ---- the thread ---- */

static void *fa_thread_main(void *arg)
{
    FA_PROV *p = arg;

    pthread_mutex_lock(&p->lock);
    for (;;) {
        struct fa_req *r = p->head;
        struct timespec until;

        if (p->abandon)
            break;
        if (r == NULL) {
            if (p->stopping)
                break;
            pthread_cond_wait(&p->work_cv, &p->lock);
            continue;
        }
        /* FIFO with one delay for all: the head is always the earliest due. */
        if (!p->stopping && fa_now_ns() < r->due_ns) {
            until = fa_timespec(r->due_ns);
            pthread_cond_timedwait(&p->work_cv, &p->lock, &until);
            continue;
        }
        p->head = r->next;
        if (p->head == NULL)
            p->tail = NULL;
        p->current = r;
        pthread_mutex_unlock(&p->lock);

        fa_compute(r, 1);

        pthread_mutex_lock(&p->lock);
        if (p->notify == FA_NOTIFY_POLL && r->cb != NULL) {
            /* computed; the job is woken by the application's next poll */
            r->next = NULL;
            if (p->ready_tail)
                p->ready_tail->next = r;
            else
                p->ready_head = r;
            p->ready_tail = r;
            p->current = NULL;
            continue;
        }
        /* Notify, then done, in one critical section: see the comment at the top. */
        if (r->cb != NULL)
            r->cb(r->cbarg);
        else if (r->wfd != NULL)
            tg_waitfd_signal(r->wfd);
        r->done = 1;
        p->current = NULL;
        pthread_cond_broadcast(&p->done_cv);
        /* From here on, r belongs to its job again and is never touched. */
    }
    pthread_mutex_unlock(&p->lock);
    OPENSSL_thread_stop();
    return NULL;
}

unsigned fa_accel_poll(FA_PROV *p)
{
    unsigned n = 0;

    if (p->notify != FA_NOTIFY_POLL || !p->accel_initialized)
        return 0;
    pthread_mutex_lock(&p->lock);
    while (p->ready_head != NULL) {
        struct fa_req *r = p->ready_head;

        p->ready_head = r->next;
        if (p->ready_head == NULL)
            p->ready_tail = NULL;
        /* as in the thread: notify, then done, in one critical section */
        r->cb(r->cbarg);
        r->done = 1;
        n++;
    }
    if (n)
        pthread_cond_broadcast(&p->done_cv);
    pthread_mutex_unlock(&p->lock);
    return n;
}

/* Starts the thread of this process if needed (lazily; again after fork). */
static int fa_thread_start_locked(FA_PROV *p)
{
    sigset_t all, old;
    int rc;

    if (p->thread_running)
        return 1;
    if (p->stopping)
        return 0;
    /* The thread takes no signals: they stay with the application's threads. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&p->thread, NULL, fa_thread_main, p);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return 0;
    p->thread_running = 1;
    return 1;
}

/* ---- fork ---- */

static pthread_mutex_t fa_instances_lock = PTHREAD_MUTEX_INITIALIZER;
static FA_PROV *fa_instances;
static pthread_once_t fa_atfork_once = PTHREAD_ONCE_INIT;

static int fa_sync_init(FA_PROV *p)
{
    pthread_condattr_t attr;
    int ok;

    if (pthread_condattr_init(&attr) != 0)
        return 0;
    ok = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 &&
         pthread_mutex_init(&p->lock, NULL) == 0;
    if (ok && pthread_cond_init(&p->work_cv, &attr) != 0) {
        pthread_mutex_destroy(&p->lock);
        ok = 0;
    }
    if (ok && pthread_cond_init(&p->done_cv, &attr) != 0) {
        pthread_cond_destroy(&p->work_cv);
        pthread_mutex_destroy(&p->lock);
        ok = 0;
    }
    pthread_condattr_destroy(&attr);
    return ok;
}

static void fa_atfork_prepare(void)
{
    FA_PROV *p;

    pthread_mutex_lock(&fa_instances_lock);
    for (p = fa_instances; p != NULL; p = p->next_instance)
        pthread_mutex_lock(&p->lock);
}

static void fa_atfork_parent(void)
{
    FA_PROV *p;

    for (p = fa_instances; p != NULL; p = p->next_instance)
        pthread_mutex_unlock(&p->lock);
    pthread_mutex_unlock(&fa_instances_lock);
}

static void fa_atfork_child(void)
{
    FA_PROV *p;

    for (p = fa_instances; p != NULL; p = p->next_instance) {
        /* Only this thread exists now, holding p->lock (fa_atfork_prepare): the condition
         * variables start afresh (no waiter is left), the lock is released below. */
        pthread_condattr_t attr;

        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&p->work_cv, &attr);
        pthread_cond_init(&p->done_cv, &attr);
        pthread_condattr_destroy(&attr);
        p->thread_running = 0;
        if (p->current != NULL) {
            p->current->next = p->head;
            p->head = p->current;
            if (p->tail == NULL)
                p->tail = p->current;
            p->current = NULL;
        }
        /*
         * Inherited requests (e.g. of jobs this very thread had paused before forking)
         * get a thread of the child's own: nothing else would resume those jobs.
         */
        if (p->head != NULL)
            fa_thread_start_locked(p);
        pthread_mutex_unlock(&p->lock);
    }
    pthread_mutex_unlock(&fa_instances_lock);
}

/* Process exit. A program that exits while jobs are paused (a gateway's fast stop) would
 * have the thread compute them during OPENSSL_cleanup, which frees the default provider's
 * state under it (a SIGSEGV in RAND_get_rand_method, seen with the slower exit of a
 * ThreadSanitizer build). The thread finishes the operation it is computing, if any, and
 * leaves the queue: nothing would resume those jobs. This runs before OPENSSL_cleanup
 * because OpenSSL registered its handler first (before any provider was loaded); at a
 * dlclose of the module it runs after every instance's teardown and finds none. */
static void fa_atexit(void)
{
    FA_PROV *p;

    pthread_mutex_lock(&fa_instances_lock);
    for (p = fa_instances; p != NULL; p = p->next_instance) {
        int running;

        pthread_mutex_lock(&p->lock);
        p->abandon = 1;
        p->stopping = 1; /* no thread starts again */
        pthread_cond_broadcast(&p->work_cv);
        running = p->thread_running && !pthread_equal(pthread_self(), p->thread);
        pthread_mutex_unlock(&p->lock);
        if (running)
            pthread_join(p->thread, NULL);
        pthread_mutex_lock(&p->lock);
        p->thread_running = 0;
        pthread_mutex_unlock(&p->lock);
    }
    pthread_mutex_unlock(&fa_instances_lock);
}

static void fa_atfork_register(void)
{
    pthread_atfork(fa_atfork_prepare, fa_atfork_parent, fa_atfork_child);
    atexit(fa_atexit);
}

int fa_accel_init(FA_PROV *p)
{
    if (!fa_sync_init(p))
        return 0;
    p->accel_initialized = 1;
    pthread_once(&fa_atfork_once, fa_atfork_register);
    pthread_mutex_lock(&fa_instances_lock);
    p->next_instance = fa_instances;
    fa_instances = p;
    pthread_mutex_unlock(&fa_instances_lock);
    return 1;
}

void fa_accel_cleanup(FA_PROV *p)
{
    FA_PROV **pp;
    int running;

    if (!p->accel_initialized)
        return;
    pthread_mutex_lock(&fa_instances_lock);
    for (pp = &fa_instances; *pp != NULL; pp = &(*pp)->next_instance) {
        if (*pp == p) {
            *pp = p->next_instance;
            break;
        }
    }
    pthread_mutex_unlock(&fa_instances_lock);

    pthread_mutex_lock(&p->lock);
    p->stopping = 1; /* the thread finishes what is queued, at once, then exits */
    pthread_cond_broadcast(&p->work_cv);
    running = p->thread_running;
    p->thread_running = 0;
    pthread_mutex_unlock(&p->lock);
    if (running) {
        if (pthread_equal(pthread_self(), p->thread))
            pthread_detach(p->thread);
        else
            pthread_join(p->thread, NULL);
    }
    pthread_cond_destroy(&p->done_cv);
    pthread_cond_destroy(&p->work_cv);
    pthread_mutex_destroy(&p->lock);
    p->accel_initialized = 0;
}

/* ---- submitting and waiting ---- */

/* Chooses how the job will be woken: the application's callback, else our eventfd. */
static int fa_prepare_wake(FA_PROV *p, struct fa_req *r, ASYNC_WAIT_CTX *wctx)
{
    ASYNC_callback_fn cb = NULL;
    void *cbarg = NULL;

    if ((p->notify == FA_NOTIFY_CALLBACK || p->notify == FA_NOTIFY_POLL) &&
        ASYNC_WAIT_CTX_get_callback(wctx, &cb, &cbarg) && cb != NULL) {
        r->cb = cb;
        r->cbarg = cbarg;
        return 1;
    }
    r->wfd = tg_waitfd_acquire(wctx);
    return r->wfd != NULL;
}

static int fa_submit(FA_PROV *p, struct fa_req *r)
{
    pthread_mutex_lock(&p->lock);
    if (!fa_thread_start_locked(p)) {
        pthread_mutex_unlock(&p->lock);
        return 0;
    }
    r->due_ns = fa_now_ns() + (uint64_t)p->delay_us * 1000ULL;
    r->next = NULL;
    if (p->tail != NULL)
        p->tail->next = r;
    else
        p->head = r;
    p->tail = r;
    pthread_cond_signal(&p->work_cv);
    pthread_mutex_unlock(&p->lock);
    return 1;
}

/* Pauses the current job until the thread has answered |r|. */
static void fa_wait(FA_PROV *p, struct fa_req *r, ASYNC_WAIT_CTX *wctx)
{
    int resumed = 0;

    if (p->no_pause) {
        /* pause=0: the notification still goes out (before done), the job never pauses:
         * the application is woken for a job that is already past its wait */
        pthread_mutex_lock(&p->lock);
        while (!r->done) {
            if (!p->thread_running)
                fa_thread_start_locked(p);
            pthread_cond_wait(&p->done_cv, &p->lock);
        }
        pthread_mutex_unlock(&p->lock);
        if (r->wfd != NULL) {
            tg_waitfd_drain(r->wfd);
            tg_waitfd_release(r->wfd);
            r->wfd = NULL;
        }
        return;
    }

    for (;;) {
        int done;

        pthread_mutex_lock(&p->lock);
        if (!r->done && !p->thread_running)
            fa_thread_start_locked(p); /* a forked child resuming a parent's job */
        if (!r->done && resumed) {
            /* Resumed without a result: spurious, or pausing is blocked. */
            struct timespec until = fa_timespec(fa_now_ns() + FA_REPAUSE_GRACE_NS);

            pthread_cond_timedwait(&p->done_cv, &p->lock, &until);
        }
        done = r->done;
        pthread_mutex_unlock(&p->lock);
        /*
         * Like a real accelerator the job always pauses once after submitting, even if
         * the answer is already there (then its notification is already sent, so the
         * application resumes the job at once): every accelerated operation inside a
         * job is seen by the application as SSL_ERROR_WANT_ASYNC.
         */
        if (done && resumed)
            break;
        if (r->cb != NULL)
            ASYNC_WAIT_CTX_set_status(wctx, ASYNC_STATUS_OK);
        r->pauses++;
        ASYNC_pause_job();
        resumed = 1;
        if (r->wfd != NULL)
            tg_waitfd_drain(r->wfd);
    }
    if (r->wfd != NULL) {
        tg_waitfd_drain(r->wfd);
        tg_waitfd_release(r->wfd);
        r->wfd = NULL;
    }
}

static void fa_log(const FA_PROV *p, const struct fa_req *r, int queued)
{
    char line[200];
    int n;

    if (p->log_fd < 0)
        return;
    n = snprintf(line, sizeof(line), "fakeaccel pid=%ld seq=%llu op=%s async=%d pauses=%u ok=%d\n",
                 (long)getpid(), (unsigned long long)r->seq,
                 r->op == FA_OP_SIGN ? "sign" : "decrypt", queued, r->pauses, r->result);
    if (n > 0 && (size_t)n < sizeof(line) && write(p->log_fd, line, (size_t)n) < 0)
        return;
}

int fa_accel_run(FA_PROV *p, enum fa_op op, EVP_PKEY_CTX *pctx, unsigned char *out, size_t *outlen,
                 size_t outsize, const unsigned char *in, size_t inlen)
{
    struct fa_req req;
    ASYNC_JOB *job;
    ASYNC_WAIT_CTX *wctx = NULL;
    int queued = 0;

    if (pctx == NULL)
        return 0;
    if (out == NULL) /* size query: synchronous */
        return fa_op_fn(op)(pctx, NULL, outlen, in, inlen) > 0;
    memset(&req, 0, sizeof(req));
    req.op = op;
    req.pctx = pctx;
    req.out = out;
    req.outlen = outsize;
    req.in = in;
    req.inlen = inlen;
    req.seq = atomic_fetch_add(&p->ops, 1) + 1;
    req.inject = p->fail_every != 0 && req.seq % p->fail_every == 0;
    atomic_fetch_add(&p->inflight, 1);

    job = ASYNC_get_current_job();
    if (job != NULL)
        wctx = ASYNC_get_wait_ctx(job);
    if (wctx != NULL && fa_prepare_wake(p, &req, wctx)) {
        if (fa_submit(p, &req)) {
            queued = 1;
            atomic_fetch_add(&p->ops_async, 1);
            fa_wait(p, &req, wctx);
        } else {
            tg_waitfd_release(req.wfd);
            req.wfd = NULL;
        }
    }
    if (!queued) {
        fa_sleep_us(p->delay_us);
        fa_compute(&req, 0);
    }

    if (req.result) {
        *outlen = req.outlen;
    } else {
        atomic_fetch_add(&p->fails, 1);
        if (req.inject) {
            FA_RAISE(p, FA_R_INJECTED_FAILURE, "operation #%llu (fail_every=%lu)",
                     (unsigned long long)req.seq, p->fail_every);
        } else {
            if (req.err != 0)
                fa_raise(p, OPENSSL_FILE, OPENSSL_LINE, OPENSSL_FUNC, (uint32_t)req.err, "%s",
                         req.errdata);
            FA_RAISE(p, FA_R_OPERATION_FAILED, "%s, operation #%llu",
                     op == FA_OP_SIGN ? "sign" : "decrypt", (unsigned long long)req.seq);
        }
    }
    fa_log(p, &req, queued);
    atomic_fetch_sub(&p->inflight, 1);
    return req.result;
}
