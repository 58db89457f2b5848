/*
 * tlsgate provider: the timer thread, for applications that never poll (HAProxy,
 * `openssl speed`). It computes the queues the policy's time rules say are due
 * (tg_policy_flush without a backlog figure), sleeps while nothing is queued, and leaves
 * alone threads whose application polled in the last TG_POLLED_RECENTLY_NS: their polls
 * flush them (a wake-up per first request cost a context switch pair on the worker's CPU,
 * ~1.3 per handshake at saturation, #11); it covers them again once their polls stop.
 */
#include <signal.h>
#include <time.h>

#include "batch_int.h"

static pthread_mutex_t timer_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t timer_cv;
static pthread_t timer_thread;
static int timer_running, timer_stop;
static atomic_int timer_started; /* timer_running, readable without timer_mu */
static void *timer_scratch;
/* Whether the timer sleeps with no deadline (then only a kick wakes it). A thread that
 * polled within TG_POLLED_RECENTLY_NS queues without waking a timer that sleeps with a
 * deadline: its own poll, at the end of the application's loop pass, computes the queue. */
static atomic_int timer_asleep;
/* The timer sleeps past TG_TIMER_LONG_NS, for the polls of a polling thread: a request
 * of a thread that does not poll then kicks it even when it is not the first queued, so
 * that its flush period is kept. */
static atomic_int timer_long;
#define TG_TIMER_LONG_NS (1000ULL * 1000ULL)
/* The timer's nap while only requests it does not manage (poll_mode app) are queued. */
#define TG_TIMER_IDLE_NS (200ULL * 1000ULL)
/* When the timer sleeps until a deadline, that deadline (ns); 0 while it runs a pass or
 * sleeps without one. A first request due after it needs no kick: the timer wakes in
 * time by itself, and its pass then finds the request (queued before this was read; the
 * policy never makes a first request due before queued + flush_us). Kicking the first
 * request of every batch cost a wake-up and two context switches per batch on the
 * application's CPU: with 8 async jobs (`openssl speed -async_jobs 8 ecdsap256`, every
 * batch full) ~20% of the signature rate (#19). */
static _Atomic uint64_t timer_deadline_ns;
/* While requests flow, the timer finds the queues empty between batches (the request
 * that fills a batch takes it). It then naps one flush period (the period of the latest
 * timer-managed request) with a deadline, rather than waiting for the next first
 * request's kick, for TG_TIMER_LINGER_NS after it last found requests queued (#19). */
#define TG_TIMER_LINGER_NS (10ULL * 1000ULL * 1000ULL)
static _Atomic uint64_t linger_flush_ns;
static uint64_t timer_busy_ns; /* (timer_mu) when the timer last found requests queued */
static int g_instances;

static uint64_t now_ns(void)
{
    return tg_now_ns();
}

int tg_timer_started(void)
{
    return atomic_load(&timer_started);
}

int tg_timer_asleep(void)
{
    return atomic_load(&timer_asleep);
}

int tg_timer_long(void)
{
    return atomic_load(&timer_long);
}

uint64_t tg_timer_deadline(void)
{
    return atomic_load(&timer_deadline_ns);
}

void tg_timer_note_flush(uint64_t flush_ns)
{
    if (atomic_load_explicit(&linger_flush_ns, memory_order_relaxed) != flush_ns)
        atomic_store(&linger_flush_ns, flush_ns);
}

/* One pass: computes every queue whose oldest request is due. Returns the next due time
 * (ns), or 0 when nothing is queued. */
static uint64_t timer_pass(void)
{
    uint64_t now = now_ns(), next = 0;
    struct tg_req *rs[MB8_LANES];
    struct tg_thread *t;
    unsigned n;
    int op;

    pthread_mutex_lock(&tg_reg_lock);
    for (t = tg_reg_head; t != NULL; t = t->next) {
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
            uint64_t due = 0, flush_ns;
            enum tg_flush f;

            pthread_mutex_lock(&t->lock);
            /* each request carries its provider instance's period; 0: poll_mode app */
            if (t->qn[op] == 0 || (flush_ns = t->q[op][0]->flush_ns) == 0) {
                pthread_mutex_unlock(&t->lock);
                continue;
            }
            /* the policy with the thread's run state as its backlog (tg_thread_busy): a
             * thread that sleeps has nothing more to bring, one that runs (or was
             * preempted: a quiet spell on a shared CPU is not an idle loop) still may, up to
             * the cap, and is looked at again every period; the time rules when the state
             * cannot be read. Read only for a partial queue whose time rules say it is due:
             * a timer that found the owner preempted and flushed a part batch made
             * `openssl speed -async_jobs 8` fall into single operations on a loaded machine
             * (5% of its RSA-2048 signatures, 7% of its time) */
            f = tg_policy_flush(&t->pol[op], t->qn[op], t->q[op][0]->queued_ns, t->last_ns[op],
                                TG_POLICY_BACKLOG_UNKNOWN, flush_ns, now, &due);
            if (f == TG_FLUSH_IDLE && t->qn[op] < MB8_LANES) {
                long busy = tg_thread_busy(t);

                if (busy > 0) {
                    f = tg_policy_flush(&t->pol[op], t->qn[op], t->q[op][0]->queued_ns,
                                        t->last_ns[op], busy, flush_ns, now, &due);
                    if (f == TG_FLUSH_WAIT && due > now + flush_ns)
                        due = now + flush_ns;
                }
            }
            if (f == TG_FLUSH_WAIT) {
                pthread_mutex_unlock(&t->lock);
                if (next == 0 || due < next)
                    next = due;
                continue;
            }
            n = tg_take_locked(t, (enum tg_op)op, rs);
            pthread_mutex_unlock(&t->lock);
            /* quiet <= 4 x flush_us <= the cap: the timer's flushes are "arrivals stopped" */
            tg_run_batch(t, (enum tg_op)op, rs, n, timer_scratch, TG_C_FLUSH_TIMER, NULL);
            now = now_ns();
        }
    }
    pthread_mutex_unlock(&tg_reg_lock);
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
        if (atomic_load(&tg_pending) == 0) {
            uint64_t until = atomic_load(&tg_polled_any_ns) + TG_POLLED_RECENTLY_NS;
            uint64_t now = now_ns(), nap = atomic_load(&linger_flush_ns);
            uint64_t batch = atomic_load_explicit(&tg_last_batch_ns, memory_order_relaxed);

            /* Not shorter than a batch: the queues are found empty when a batch has just
             * been taken, and the application computes it on its CPU meanwhile; a nap of
             * one flush period woke the timer 10-35 times per RSA batch (openssl speed
             * -async_jobs 8 rsa3072: 12,300 context switches a run instead of 2,900, 5-10%
             * of the rate). A first request due before the nap ends still kicks it. */
            if (batch > nap)
                nap = batch < TG_TIMER_LINGER_NS ? batch : TG_TIMER_LINGER_NS;

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
        if (next == 0 && atomic_load(&tg_pending) != 0)
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
void tg_timer_kick(void)
{
    pthread_mutex_lock(&timer_mu);
    if (!timer_running && !timer_stop) {
        sigset_t all, old;

        if (timer_scratch == NULL)
            timer_scratch = tg_scratch_new();
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

void tg_timer_init(void)
{
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
}

int tg_timer_teardown(void)
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
        tg_scratch_free(timer_scratch);
        timer_scratch = NULL;
        pthread_mutex_unlock(&timer_mu);
    }
    return last;
}

void tg_timer_fork_prepare(void)
{
    pthread_mutex_lock(&timer_mu);
}

void tg_timer_fork_parent(void)
{
    pthread_mutex_unlock(&timer_mu);
}

/* The child has no timer thread until it queues. */
void tg_timer_fork_child(void)
{
    pthread_condattr_t attr;

    /* tg_timer_fork_prepare's lock, held by this thread (the only one now): released, not
     * re-initialised (POSIX leaves initialising a locked mutex undefined; ThreadSanitizer
     * then saw the child's timer thread lock a mutex it still held) */
    pthread_mutex_unlock(&timer_mu);
    /* the timer's deadlines are CLOCK_MONOTONIC, as tg_timer_init's */
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
}
