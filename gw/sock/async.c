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
static gw_posted_t **wake_q; /* wakes of sockets and jobs that may resume (wake_lock) */
static size_t wake_n, wake_cap;
static int wake_hint;    /* wake_n != 0, read without the lock */
static size_t n_woken;   /* wakes run since the last retry pass */
static gw_loop_t *loop_; /* the worker's loop (gw_sock_async_init) */
static int wake_fd = -1;
static pthread_t wake_owner; /* the worker thread: its own wakes need no eventfd */
static gw_io_t wake_io;
static gw_timer_t retry_timer;
static int n_paused;

/* A job outside a socket (gw_sock_job_new). */
struct gw_sock_job {
    gw_posted_t wake; /* queued by the callback or a wait fd; run after the batch */
    SSL *ssl;
    gw_posted_t *owner; /* run when the call may be repeated; NULL while draining */
    int fd;             /* while draining: the connection's socket, closed at the end */
    int paused, retry, fd_mode, draining;
    int64_t pause_us;
    void *retry_next; /* the next waiter for a free job (job_waiters) */
    gw_async_fd_t afd[GW_SOCK_MAX_ASYNC_FDS];
    int n_afd;
};

/* WANT_ASYNC_JOB: sockets and jobs waiting for a free job, oldest first; each a FIFO
 * linked through the objects' own `void *retry_next` at offset link. */
typedef struct fifo {
    void *head, *tail;
    size_t link;
} fifo_t;

static fifo_t sock_waiters = {NULL, NULL, offsetof(gw_sock_t, retry_next)};
static fifo_t job_waiters = {NULL, NULL, offsetof(gw_sock_job_t, retry_next)};

static void **fifo_next(const fifo_t *q, void *o)
{
    return (void **)((char *)o + q->link);
}

static void fifo_push(fifo_t *q, void *o)
{
    *fifo_next(q, o) = NULL;
    if (q->tail)
        *fifo_next(q, q->tail) = o;
    else
        q->head = o;
    q->tail = o;
}

static void *fifo_pop(fifo_t *q)
{
    void *o = q->head;
    if (o) {
        q->head = *fifo_next(q, o);
        if (!q->head)
            q->tail = NULL;
        *fifo_next(q, o) = NULL;
    }
    return o;
}

static void fifo_remove(fifo_t *q, void *o)
{
    void *prev = NULL;
    for (void *it = q->head; it; prev = it, it = *fifo_next(q, it)) {
        if (it != o)
            continue;
        if (prev)
            *fifo_next(q, prev) = *fifo_next(q, o);
        else
            q->head = *fifo_next(q, o);
        if (q->tail == o)
            q->tail = prev;
        *fifo_next(q, o) = NULL;
        return;
    }
}

int gw_sock_async_paused(void)
{
    return n_paused;
}

int gw_sock_async_callback(SSL *ssl, void *arg)
{
    gw_posted_t *s = arg; /* the socket's or the job's wake, its run function set */
    pthread_mutex_lock(&wake_lock);
    if (wake_n == wake_cap) {
        size_t cap = wake_cap ? wake_cap * 2 : 64;
        gw_posted_t **q = realloc(wake_q, cap * sizeof(*q));
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

void gw_sock_async_open_(gw_sock_t *s, int fd_mode)
{
    /* set now: a provider may complete a request (and call the callback) before its job
     * paused, so a socket that never parked can be queued */
    s->wake.run = wake_run;
    s->async_fd_mode = fd_mode;
    if (!fd_mode)
        SSL_set_async_callback_arg(s->ssl, &s->wake);
}

/* Take a freed socket's or job's wake out of the callback's queue and the posted work (a
 * provider that wakes twice, or completes before the job paused). */
static void forget_wake(gw_posted_t *w)
{
    pthread_mutex_lock(&wake_lock);
    for (size_t i = 0; i < wake_n; i++)
        if (wake_q[i] == w)
            wake_q[i] = NULL;
    pthread_mutex_unlock(&wake_lock);
    gw_unpost(w);
}

/* A freed connection must not stay in any queue. */
void gw_sock_async_forget_(gw_sock_t *s)
{
    forget_wake(&s->wake);
    if (s->async_retry) {
        fifo_remove(&sock_waiters, s);
        s->async_retry = 0;
    }
    for (int i = 0; i < s->n_afd; i++)
        gw_loop_del(loop_, s->afd[i].fd); /* the wait ctx closes it */
    s->n_afd = 0;
}

static void on_async_fd(gw_io_t *io, uint32_t events)
{
    gw_async_fd_t *a = (gw_async_fd_t *)io;
    if (a->j) {
        if (a->j->paused)
            gw_post(&a->j->wake);
    } else if (a->s->async_paused) {
        enqueue_local(a->s);
    }
}

/* ssl_async_notify fd: follow the wait fds of ssl's job in epoll (afd[*n] of socket s or
 * job j). */
static void update_async_fds(SSL *ssl, gw_async_fd_t *afd, int *n, gw_sock_t *s, gw_sock_job_t *j)
{
    size_t nadd = 0, ndel = 0;
    if (!SSL_get_changed_async_fds(ssl, NULL, &nadd, NULL, &ndel))
        return;
    OSSL_ASYNC_FD add[GW_SOCK_MAX_ASYNC_FDS], del[GW_SOCK_MAX_ASYNC_FDS];
    if (nadd > GW_SOCK_MAX_ASYNC_FDS || ndel > GW_SOCK_MAX_ASYNC_FDS) {
        gw_log(GW_LOG_ALERT, 0, "async job uses more than %d wait fds", GW_SOCK_MAX_ASYNC_FDS);
        return;
    }
    if (!SSL_get_changed_async_fds(ssl, add, &nadd, del, &ndel))
        return;
    for (size_t i = 0; i < ndel; i++) {
        for (int k = 0; k < *n; k++) {
            if (afd[k].fd == del[i]) {
                gw_loop_del(loop_, del[i]);
                afd[k] = afd[--*n];
                break;
            }
        }
    }
    for (size_t i = 0; i < nadd; i++) {
        if (*n == GW_SOCK_MAX_ASYNC_FDS)
            break;
        gw_async_fd_t *a = &afd[*n];
        a->io.handler = on_async_fd;
        a->fd = add[i];
        a->s = s;
        a->j = j;
        if (gw_loop_add(loop_, add[i], EPOLLIN | EPOLLET, &a->io) == 0)
            (*n)++;
        else
            gw_log(GW_LOG_ALERT, errno, "epoll_ctl(ADD) of an async wait fd failed");
    }
}

/* A job paused (of socket s or job j): counted (the pause histogram, the status page, the
 * poll hook's paused count), its wait fds followed in fd mode. */
static void pause_begin(int64_t *pause_us, SSL *ssl, int fd_mode, gw_async_fd_t *afd, int *n_afd,
                        gw_sock_t *s, gw_sock_job_t *j)
{
    /* a clock read per pause (vDSO, no syscall): the pass's cached time would count the
     * events handled before this one in the same pass as paused time */
    *pause_us = gw_clock_mono_us();
    n_paused++;
    GW_WSTAT_ADD(paused, 1);
    if (fd_mode)
        update_async_fds(ssl, afd, n_afd, s, j);
}

static void on_retry_timer(gw_timer_t *t);

/* WANT_ASYNC_JOB: every job of the pool is in use: o waits on q (once) until one
 * finishes, with the backstop timer; never a spin. Returns 1 (parked). */
static int wait_for_job(int *retry, fifo_t *q, void *o)
{
    GW_WSTAT_ADD(want_async_job, 1);
    if (!*retry) {
        *retry = 1;
        fifo_push(q, o);
    }
    if (!gw_timer_armed(&retry_timer)) {
        retry_timer.cb = on_retry_timer;
        gw_timer_add(loop_, &retry_timer, RETRY_MS);
    }
    return 1;
}

static void pause_end(int64_t pause_us)
{
    n_paused--;
    int64_t paused_us = gw_clock_mono_us() - pause_us;
    gw_stats_async_pause(paused_us > 0 ? (uint64_t)paused_us : 0);
    GW_WSTAT_ADD(paused, -1);
    GW_WSTAT_ADD(resumed, 1);
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
        pause_begin(&s->pause_us, s->ssl, s->async_fd_mode, s->afd, &s->n_afd, s, NULL);
        s->async_paused = 1;
        s->async_op = op;
        return 1;
    }
    return rr == IO_ASYNC_JOB ? wait_for_job(&s->async_retry, &sock_waiters, s) : 0;
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
    pause_end(s->pause_us);
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
            gw_post(wake_q[i]); /* run by gw_post_run(), with the wait fds' wakes */
    wake_n = 0;
    __atomic_store_n(&wake_hint, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&wake_lock);
}

static void job_retry(void *o);

static void sock_retry(void *o)
{
    gw_sock_t *s = o;
    s->async_retry = 0;
    gw_sock_drive_(s);
}

/* Retry up to budget waiters of q, oldest first, not those re-queued meanwhile (a waiter
 * that still finds no job goes back to the tail). Returns the budget left. */
static size_t retry_waiters(fifo_t *q, size_t budget, void (*retry)(void *o))
{
    void *stop = q->tail;
    while (q->head && budget) {
        budget--;
        void *o = fifo_pop(q);
        retry(o);
        if (o == stop)
            break;
    }
    return budget;
}

void gw_sock_async_retry(void)
{
    size_t woke = n_woken;
    n_woken = 0;
    if ((sock_waiters.head || job_waiters.head) && (woke || !gw_timer_armed(&retry_timer))) {
        /* Each completed wake may have freed one job: retry that many waiters, oldest
         * first (all of them when the backstop timer fired). A waiter that still finds no
         * job goes back to the tail. Retrying everyone on every wake cost ~40 failed
         * attempts per handshake with a small pool. */
        size_t budget = woke ? woke : (size_t)-1;
        gw_timer_del(loop_, &retry_timer);
        /* jobs outside a socket (upstream handshakes) first: they are few */
        budget = retry_waiters(&job_waiters, budget, job_retry);
        retry_waiters(&sock_waiters, budget, sock_retry);
        if ((sock_waiters.head || job_waiters.head) && !gw_timer_armed(&retry_timer)) {
            retry_timer.cb = on_retry_timer;
            gw_timer_add(loop_, &retry_timer, RETRY_MS);
        }
    }
}

/* ---- async jobs outside a socket ---- */

/* Out of every queue and epoll (before its SSL is freed: the wait ctx closes the fds),
 * then freed. */
static void job_free(gw_sock_job_t *j)
{
    forget_wake(&j->wake);
    for (int i = 0; i < j->n_afd; i++)
        gw_loop_del(loop_, j->afd[i].fd);
    j->n_afd = 0;
    free(j);
}

/* The job may resume (callback or wait fd): run the owner, or finish a drain. */
static void job_wake_run(gw_posted_t *p)
{
    gw_sock_job_t *j = (gw_sock_job_t *)p;
    if (!j->paused)
        return; /* a spurious or duplicate wake */
    n_woken++;
    j->paused = 0;
    pause_end(j->pause_us);
    if (j->draining) {
        /* the call that paused (the handshake) repeated until its job ends; the bytes
         * it writes go to the connection's own socket, still open */
        ERR_clear_error();
        int r = SSL_do_handshake(j->ssl);
        int e = SSL_get_error(j->ssl, r);
        ERR_clear_error();
        if (e == SSL_ERROR_WANT_ASYNC) {
            gw_sock_job_park(j, e);
            return;
        }
        SSL *ssl = j->ssl;
        int fd = j->fd;
        job_free(j);
        SSL_free(ssl);
        close(fd);
        return;
    }
    j->owner->run(j->owner); /* may release j */
}

static void job_retry(void *o)
{
    gw_sock_job_t *j = o;
    j->retry = 0;
    j->owner->run(j->owner); /* may release j */
}

gw_sock_job_t *gw_sock_job_new(SSL *ssl, gw_posted_t *owner, int fd_mode)
{
    gw_sock_job_t *j = calloc(1, sizeof(*j));
    if (!j)
        return NULL;
    j->wake.run = job_wake_run;
    j->ssl = ssl;
    j->owner = owner;
    j->fd = -1;
    j->fd_mode = fd_mode;
    if (!fd_mode) {
        SSL_set_async_callback(ssl, gw_sock_async_callback);
        SSL_set_async_callback_arg(ssl, &j->wake);
    }
    return j;
}

int gw_sock_job_park(gw_sock_job_t *j, int err)
{
    if (err == SSL_ERROR_WANT_ASYNC) {
        pause_begin(&j->pause_us, j->ssl, j->fd_mode, j->afd, &j->n_afd, NULL, j);
        j->paused = 1;
        return 1;
    }
    return err == SSL_ERROR_WANT_ASYNC_JOB ? wait_for_job(&j->retry, &job_waiters, j) : 0;
}

int gw_sock_job_busy(const gw_sock_job_t *j)
{
    return j->paused || j->retry;
}

int gw_sock_job_release(gw_sock_job_t *j, int fd)
{
    if (j->retry) { /* no job holds the SSL: out of the retry list, freed at once */
        fifo_remove(&job_waiters, j);
        j->retry = 0;
    }
    if (!j->paused) {
        job_free(j);
        return 1;
    }
    /* Never free an SSL whose job is paused (haproxy#3453): drain it. */
    j->draining = 1;
    j->owner = NULL;
    j->fd = fd;
    if (fd >= 0)
        gw_loop_del(loop_, fd); /* the owner's registration names memory it frees */
    GW_WSTAT_ADD(drained, 1);
    return 0;
}
