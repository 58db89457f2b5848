#include "sock/sock.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <openssl/err.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/stats.h"
#include "sock/internal.h"

#define RETRY_MS 5 /* backstop for WANT_ASYNC_JOB when no job completes */

/* ---- async TLS: wake queue, wait fds, job retries ---- */

static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER;
static gw_sock_t **wake_q; /* connections whose job may resume (under wake_lock) */
static size_t wake_n, wake_cap;
static int wake_hint;    /* wake_n != 0, read without the lock */
static size_t n_woken;   /* wakes run since the last retry pass */
static gw_loop_t *loop_; /* the worker's loop (gw_sock_async_init) */
static int wake_fd = -1;
static pthread_t wake_owner; /* the worker thread: its own wakes need no eventfd */
static gw_io_t wake_io;
static gw_sock_t *retry_head; /* WANT_ASYNC_JOB: waiting for a free job, FIFO */
static gw_sock_t *retry_tail;
static gw_timer_t retry_timer;
static int n_paused;

int gw_sock_async_paused(void)
{
    return n_paused;
}

int gw_sock_async_callback(SSL *ssl, void *arg)
{
    gw_sock_t *s = arg;
    pthread_mutex_lock(&wake_lock);
    if (wake_n == wake_cap) {
        size_t cap = wake_cap ? wake_cap * 2 : 64;
        gw_sock_t **q = realloc(wake_q, cap * sizeof(*q));
        if (!q) {
            pthread_mutex_unlock(&wake_lock);
            return 0; /* the provider falls back to its wait fd, if any */
        }
        wake_q = q;
        wake_cap = cap;
    }
    wake_q[wake_n++] = s;
    int first = wake_n == 1;
    __atomic_store_n(&wake_hint, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&wake_lock);
    /* From another thread (a provider's timer, an accelerator's poller) the loop may be
     * blocked in epoll_wait: wake it. From the worker thread itself (a batch completed
     * inside a job or a poll), the loop is running and looks at wake_hint before it
     * waits again (gw_sock_async_woken): no eventfd write and read, no epoll event. */
    if (first && wake_fd >= 0 && !pthread_equal(pthread_self(), wake_owner)) {
        uint64_t one = 1;
        ssize_t w = write(wake_fd, &one, sizeof(one));
        (void)w;
    }
    return 1;
}

static void async_wake(gw_sock_t *s);

static void wake_run(gw_posted_t *p)
{
    n_woken++;
    async_wake((gw_sock_t *)((char *)p - offsetof(gw_sock_t, wake)));
}

/* the job may resume: run it after the batch of events (net/post.h) */
static void enqueue_local(gw_sock_t *s)
{
    s->wake.run = wake_run;
    gw_post(&s->wake);
}

/* A freed connection must not stay in any queue (a provider that wakes twice). */
void gw_sock_async_forget_(gw_sock_t *s)
{
    pthread_mutex_lock(&wake_lock);
    for (size_t i = 0; i < wake_n; i++)
        if (wake_q[i] == s)
            wake_q[i] = NULL;
    pthread_mutex_unlock(&wake_lock);
    gw_unpost(&s->wake);
    if (s->async_retry) {
        gw_sock_t *prev = NULL;
        for (gw_sock_t *it = retry_head; it; prev = it, it = it->retry_next) {
            if (it == s) {
                if (prev)
                    prev->retry_next = s->retry_next;
                else
                    retry_head = s->retry_next;
                if (retry_tail == s)
                    retry_tail = prev;
                break;
            }
        }
        s->async_retry = 0;
    }
    for (int i = 0; i < s->n_afd; i++)
        gw_loop_del(loop_, s->afd[i].fd); /* the wait ctx closes it */
    s->n_afd = 0;
}

static void on_async_fd(gw_io_t *io, uint32_t events)
{
    gw_async_fd_t *a = (gw_async_fd_t *)io;
    if (a->s->async_paused)
        enqueue_local(a->s);
}

/* ssl_async_notify fd: follow the job's wait fds in epoll. */
static void update_async_fds(gw_sock_t *s)
{
    size_t nadd = 0, ndel = 0;
    if (!SSL_get_changed_async_fds(s->ssl, NULL, &nadd, NULL, &ndel))
        return;
    OSSL_ASYNC_FD add[GW_SOCK_MAX_ASYNC_FDS], del[GW_SOCK_MAX_ASYNC_FDS];
    if (nadd > GW_SOCK_MAX_ASYNC_FDS || ndel > GW_SOCK_MAX_ASYNC_FDS) {
        gw_log(GW_LOG_ALERT, 0, "async job uses more than %d wait fds", GW_SOCK_MAX_ASYNC_FDS);
        return;
    }
    if (!SSL_get_changed_async_fds(s->ssl, add, &nadd, del, &ndel))
        return;
    for (size_t i = 0; i < ndel; i++) {
        for (int k = 0; k < s->n_afd; k++) {
            if (s->afd[k].fd == del[i]) {
                gw_loop_del(loop_, del[i]);
                s->afd[k] = s->afd[--s->n_afd];
                break;
            }
        }
    }
    for (size_t i = 0; i < nadd; i++) {
        if (s->n_afd == GW_SOCK_MAX_ASYNC_FDS)
            break;
        gw_async_fd_t *a = &s->afd[s->n_afd];
        a->io.handler = on_async_fd;
        a->fd = add[i];
        a->s = s;
        if (gw_loop_add(loop_, add[i], EPOLLIN | EPOLLET, &a->io) == 0)
            s->n_afd++;
        else
            gw_log(GW_LOG_ALERT, errno, "epoll_ctl(ADD) of an async wait fd failed");
    }
}

static void on_retry_timer(gw_timer_t *t)
{
    /* nothing here: the worker calls gw_sock_async_retry() after the timers, and an
     * expired retry timer makes it retry the waiters */
}

/* An SSL call answered WANT_ASYNC or WANT_ASYNC_JOB: park the connection. Returns 1 when
 * parked (the caller returns and waits), 0 for any other result. */
int gw_sock_park_(gw_sock_t *s, int rr, int op)
{
    if (rr == IO_ASYNC) {
        /* a clock read per pause (vDSO, no syscall): the pass's cached time would count
         * the events handled before this one in the same pass as paused time */
        s->pause_us = gw_clock_mono_us();
        s->async_paused = 1;
        s->async_op = op;
        n_paused++;
        GW_WSTAT_ADD(paused, 1);
        if (s->async_fd_mode)
            update_async_fds(s);
        return 1;
    }
    if (rr == IO_ASYNC_JOB) {
        /* every job of the pool is in use: retry when one finishes, never spin */
        GW_WSTAT_ADD(want_async_job, 1);
        if (!s->async_retry) {
            s->async_retry = 1;
            s->retry_next = NULL;
            if (retry_tail)
                retry_tail->retry_next = s;
            else
                retry_head = s;
            retry_tail = s;
        }
        if (!gw_timer_armed(&retry_timer)) {
            retry_timer.cb = on_retry_timer;
            gw_timer_add(loop_, &retry_timer, RETRY_MS);
        }
        return 1;
    }
    return 0;
}

/* Resume a draining connection's paused call once (the job keeps the arguments of the
 * call that started it: those given here are ignored by OpenSSL). */
static int resume_op(gw_sock_t *s)
{
    char byte;
    size_t n;
    int r;
    ERR_clear_error();
    switch (s->async_op) {
    case OP_HANDSHAKE:
        r = SSL_do_handshake(s->ssl);
        break;
    case OP_READ:
        r = SSL_read_ex(s->ssl, &byte, 1, &n);
        break;
    case OP_WRITE:
        r = SSL_write_ex(s->ssl, s->out ? s->out : &byte, 1, &n);
        break;
    default:
        r = SSL_shutdown(s->ssl);
        break;
    }
    int e = SSL_get_error(s->ssl, r);
    ERR_clear_error();
    return e == SSL_ERROR_WANT_ASYNC ? IO_ASYNC : IO_OK;
}

static void async_wake(gw_sock_t *s)
{
    if (!s->async_paused)
        return; /* a spurious or duplicate wake */
    s->async_paused = 0;
    n_paused--;
    int64_t paused_us = gw_clock_mono_us() - s->pause_us;
    gw_stats_async_pause(paused_us > 0 ? (uint64_t)paused_us : 0);
    GW_WSTAT_ADD(paused, -1);
    GW_WSTAT_ADD(resumed, 1);
    if (s->draining) {
        if (resume_op(s) == IO_ASYNC) {
            gw_sock_park_(s, IO_ASYNC, s->async_op);
            return;
        }
        gw_sock_free_(s);
        return;
    }
    gw_sock_drive_(s);
}

/* Only drains the eventfd: the wakes are processed by the worker after the whole batch
 * of events (gw_sock_async_process), because resuming a connection may free it while a
 * later event of the same epoll_wait batch still points at it. */
static void on_wake_fd(gw_io_t *io, uint32_t events)
{
    uint64_t v;
    ssize_t r = read(wake_fd, &v, sizeof(v));
    (void)r;
}

int gw_sock_async_init(gw_loop_t *loop)
{
    loop_ = loop;
    wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd < 0)
        return -1;
    wake_owner = pthread_self();
    wake_io.handler = on_wake_fd;
    return gw_loop_add(loop_, wake_fd, EPOLLIN | EPOLLET, &wake_io);
}

int gw_sock_async_woken(void)
{
    return __atomic_load_n(&wake_hint, __ATOMIC_ACQUIRE);
}

void gw_sock_async_process(void)
{
    if (!__atomic_load_n(&wake_hint, __ATOMIC_ACQUIRE))
        return;
    pthread_mutex_lock(&wake_lock);
    for (size_t i = 0; i < wake_n; i++)
        if (wake_q[i])
            enqueue_local(wake_q[i]); /* run by gw_post_run(), with the wait fds' wakes */
    wake_n = 0;
    __atomic_store_n(&wake_hint, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&wake_lock);
}

void gw_sock_async_retry(void)
{
    size_t woke = n_woken;
    n_woken = 0;
    if (retry_head && (woke || !gw_timer_armed(&retry_timer))) {
        /* Each completed wake may have freed one job: retry that many waiters, oldest
         * first (all of them when the backstop timer fired). A waiter that still finds no
         * job goes back to the tail. Retrying everyone on every wake cost ~40 failed
         * attempts per handshake with a small pool. */
        size_t budget = woke ? woke : (size_t)-1;
        gw_sock_t *stop = retry_tail; /* do not loop over waiters re-queued just now */
        gw_timer_del(loop_, &retry_timer);
        while (retry_head && budget--) {
            gw_sock_t *s = retry_head;
            retry_head = s->retry_next;
            if (!retry_head)
                retry_tail = NULL;
            s->retry_next = NULL;
            s->async_retry = 0;
            gw_sock_drive_(s);
            if (s == stop)
                break;
        }
        if (retry_head && !gw_timer_armed(&retry_timer)) {
            retry_timer.cb = on_retry_timer;
            gw_timer_add(loop_, &retry_timer, RETRY_MS);
        }
    }
}
