#include "worker.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/async.h>
#include <openssl/ssl.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/stats.h"
#include "http/conn.h"
#include "http/resume.h"
#include "net/post.h"
#include "proxy/upstream.h"
#include "sock/sock.h"
#include "tls/accel.h"
#include "tlsgate/prov.h"

/* Connections accepted per listener wake-up: one, as nginx without multi_accept, so that
 * new handshakes interleave with the events of connections already open. Measured with
 * bench/handshake.sh: 64 per wake-up doubled p50 latency, 4 still added ~2x at c50; 1 gives
 * nginx's latency at the same CPU per handshake. The listener stays readable (level-
 * triggered) while connections wait, so the next loop pass accepts again. */
#define ACCEPT_BATCH 1
#define POLL_WAIT_MS 1        /* longest wait while jobs are paused on a polled provider */
#define FLEET_WAIT_MS 1000    /* longest wait for the fleet's ticket keys before accepting */
#define ACCEPT_RETRY_MS 100   /* after EMFILE/ENFILE, as nginx's accept mutex delay */
#define METRICS_PERIOD_MS 100 /* provider metrics copied to the shared slot at most this often */

gw_worker_t *gw_worker;

typedef struct sigwatch {
    gw_io_t io;
    int fd;
} sigwatch_t;

static sigwatch_t sigwatch;
static int stop_fast;

/* provider metrics (gw_accel_metrics): read at most every METRICS_PERIOD_MS while the
 * worker is active, then once more after it went idle, so the slot ends up current */
static int metrics_hook;                            /* a loaded provider offers "metrics" */
static int metrics_dirty;                           /* events since the last read */
static int64_t metrics_due_ms;                      /* no read before this */
static tlsgate_metrics_t metrics_base, metrics_now; /* 5 KB each: not on the stack */
static int metrics_base_ok;

void gw_worker_metrics_refresh(void)
{
    if (!metrics_hook || !gw_worker)
        return;
    if (gw_accel_metrics(&metrics_now))
        gw_stats_store_provider(gw_wstats, &metrics_now, metrics_base_ok ? &metrics_base : NULL);
    else
        metrics_hook = gw_accel_has_metrics(); /* refused: gw_accel_metrics dropped it */
    metrics_dirty = 0;
    metrics_due_ms = gw_now_ms() + METRICS_PERIOD_MS;
}

static void begin_graceful_stop(void);

void gw_worker_accepting(int on)
{
    gw_worker_t *w = gw_worker;
    if (on && (w->env.shutting_down || w->env.n_conns >= w->env.max_conns ||
               gw_timer_armed(&w->accept_timer)))
        return;
    for (size_t i = 0; i < w->n_listeners; i++) {
        gw_wlistener_t *l = &w->listeners[i];
        if (on && !l->registered) {
            /* level-triggered + EPOLLEXCLUSIVE: one worker woken per new connection */
            if (gw_loop_add(&w->loop, l->fd, EPOLLIN | EPOLLEXCLUSIVE, &l->io) == 0)
                l->registered = 1;
            else
                gw_log(GW_LOG_ALERT, errno, "epoll_ctl(ADD) of a listener failed");
        } else if (!on && l->registered) {
            gw_loop_del(&w->loop, l->fd);
            l->registered = 0;
        }
    }
}

static void on_accept_timer(gw_timer_t *t)
{
    gw_worker_accepting(1);
}

static void on_listener(gw_io_t *io, uint32_t events)
{
    gw_wlistener_t *l = (gw_wlistener_t *)io;
    gw_worker_t *w = gw_worker;
    for (int i = 0; i < ACCEPT_BATCH && w->env.n_conns < w->env.max_conns && l->registered; i++) {
        struct sockaddr_storage peer;
        socklen_t plen = sizeof(peer);
        int fd = accept4(l->fd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
                return;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* back-pressure, never a busy loop: stop accepting for a moment */
                gw_log(GW_LOG_ALERT, errno, "accept4() failed, pausing accepts for %d ms",
                       ACCEPT_RETRY_MS);
                gw_worker_accepting(0);
                gw_timer_add(&w->loop, &w->accept_timer, ACCEPT_RETRY_MS);
                return;
            }
            gw_log(GW_LOG_ALERT, errno, "accept4() failed");
            return;
        }
        GW_STAT_ADD(accepted, 1);
        gw_conn_accepted(&w->env, l->laddr, fd, (struct sockaddr *)&peer, plen);
    }
}

static void on_signal(gw_io_t *io, uint32_t events)
{
    struct signalfd_siginfo si;
    while (read(sigwatch.fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        switch (si.ssi_signo) {
        case SIGQUIT:
            if (!gw_worker->env.shutting_down)
                gw_log(GW_LOG_NOTICE, 0, "gracefully shutting down");
            begin_graceful_stop();
            break;
        case SIGTERM:
        case SIGINT:
            stop_fast = 1;
            break;
        case SIGUSR1:
            if (gw_log_reopen() != 0)
                gw_log(GW_LOG_ALERT, errno, "cannot reopen the error log");
            gw_cycle_reopen_logs(gw_worker->cycle);
            break;
        default:
            break;
        }
    }
}

static void begin_graceful_stop(void)
{
    gw_worker_t *w = gw_worker;
    if (w->env.shutting_down)
        return;
    w->env.shutting_down = 1;
    w->shutdown_deadline_ms = gw_now_ms() + w->cycle->conf->worker_shutdown_timeout_ms;
    gw_worker_accepting(0);
    for (size_t i = 0; i < w->n_listeners; i++) {
        /* the master keeps its copy: connections queued there go to the new workers */
        close(w->listeners[i].fd);
        w->listeners[i].fd = -1;
    }
    gw_conn_shutdown_all(&w->env, 1);
    gw_upstream_close_idle();
}

static void set_affinity(const gw_conf_t *conf, int index)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (conf->cpu_affinity_auto) {
        cpu_set_t avail;
        if (sched_getaffinity(0, sizeof(avail), &avail) != 0)
            return;
        if (conf->n_cpu_affinity) { /* "auto MASK": only the CPUs of the mask (nginx) */
            for (int cpu = 0; cpu < 64; cpu++)
                if (!(conf->cpu_affinity[0] & (1ull << cpu)))
                    CPU_CLR(cpu, &avail);
        }
        int n = CPU_COUNT(&avail), k = index % (n ? n : 1), seen = 0;
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
            if (CPU_ISSET(cpu, &avail) && seen++ == k) {
                CPU_SET(cpu, &set);
                break;
            }
        }
    } else if (conf->n_cpu_affinity) {
        uint64_t mask = conf->cpu_affinity[(size_t)index % conf->n_cpu_affinity];
        for (int cpu = 0; cpu < 64; cpu++)
            if (mask & (1ull << cpu))
                CPU_SET(cpu, &set);
    } else {
        return;
    }
    if (sched_setaffinity(0, sizeof(set), &set) != 0)
        gw_log(GW_LOG_ALERT, errno, "sched_setaffinity() failed");
}

void gw_worker_main(gw_cycle_t *cycle, int index, const int *fds)
{
    static gw_worker_t w;
    memset(&w, 0, sizeof(w));
    gw_worker = &w;
    w.cycle = cycle;
    w.index = index;
    w.env.max_conns = cycle->conf->worker_connections; /* >= 1: the directive's range */
    w.accept_timer.cb = on_accept_timer;
    w.env.loop = &w.loop;
    w.env.accepting = gw_worker_accepting;
    w.env.index = index;
    w.env.conf = cycle->conf;
    gw_req_metrics_refresh = gw_worker_metrics_refresh;

    /* signals arrive through a signalfd in the loop: no handler races */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGQUIT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGCHLD);
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (int s = 1; s < 32; s++)
        if (s != SIGKILL && s != SIGSTOP)
            sigaction(s, &dfl, NULL);
    signal(SIGPIPE, SIG_IGN);
    sigprocmask(SIG_SETMASK, &set, NULL);

    if (cycle->conf->worker_rlimit_nofile > 0) {
        struct rlimit rl = {(rlim_t)cycle->conf->worker_rlimit_nofile,
                            (rlim_t)cycle->conf->worker_rlimit_nofile};
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            gw_log(GW_LOG_ALERT, errno, "setrlimit(RLIMIT_NOFILE, %lld) failed",
                   (long long)cycle->conf->worker_rlimit_nofile);
    }
    set_affinity(cycle->conf, index);
    /* after setrlimit (raising needs root), before anything is served */
    gw_privs_worker_init(cycle->conf, &cycle->privs);
    gw_clock_update();

    if (gw_loop_init(&w.loop) != 0) {
        gw_log(GW_LOG_EMERG, errno, "epoll_create1() failed");
        exit(2);
    }
    sigwatch.io.handler = on_signal;
    sigwatch.fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sigwatch.fd < 0 || gw_loop_add(&w.loop, sigwatch.fd, EPOLLIN, &sigwatch.io) != 0) {
        gw_log(GW_LOG_EMERG, errno, "signalfd() failed");
        exit(2);
    }
    w.n_listeners = cycle->n_laddrs;
    w.listeners = calloc(w.n_listeners ? w.n_listeners : 1, sizeof(*w.listeners));
    if (!w.listeners)
        exit(2);
    for (size_t i = 0; i < w.n_listeners; i++) {
        w.listeners[i].io.handler = on_listener;
        w.listeners[i].fd = fds[i];
        w.listeners[i].laddr = &cycle->laddrs[i];
    }
    if (cycle->conf->ssl_async_jobs > 0 &&
        !ASYNC_init_thread((size_t)cycle->conf->ssl_async_jobs, 0))
        gw_log(GW_LOG_ALERT, 0, "ASYNC_init_thread(%d) failed", cycle->conf->ssl_async_jobs);
    gw_upstream_init(&w.loop, cycle->conf, &w.env.shutting_down);
    gw_resume_init(&w.loop);
    if (gw_sock_async_init(&w.loop) != 0) {
        gw_log(GW_LOG_EMERG, errno, "eventfd() for async wakes failed");
        exit(2);
    }
    gw_resume_worker_start(cycle); /* fleet ticket keys: fetched from the start */
    /* A gateway joining a fleet (ssl_session_ticket_key redis://) reads the fleet's keys
     * before it accepts, as nginx and HAProxy have their key files before the first
     * connection: tickets other gateways issued are decrypted from the first handshake on
     * (not taken for unknown and answered with a full handshake). Clients wait in the
     * listen queue meanwhile, a few milliseconds; Redis out of reach costs at most
     * FLEET_WAIT_MS, then the worker accepts and issues no ticket until the keys come. */
    int64_t fleet_until = gw_now_ms() + FLEET_WAIT_MS;
    while (!gw_resume_fleet_ready() && !stop_fast && !w.env.shutting_down) {
        int64_t left = fleet_until - gw_now_ms();
        if (left <= 0) {
            gw_log(GW_LOG_WARN, 0,
                   "fleet ticket keys not read from Redis within %d ms: accepting; "
                   "no ticket is issued until they are",
                   FLEET_WAIT_MS);
            break;
        }
        gw_loop_once(&w.loop, left < 20 ? (int)left : 20);
        gw_post_run();
    }
    int poll_hook = gw_accel_has_poll();
    /* idle-time precomputation: work the providers still have (1: unknown, ask) */
    const int idle_hook = gw_accel_has_idle();
    unsigned idle_left = idle_hook;
    int accel_queued = 0; /* requests a batching provider holds for a later pass */
    metrics_hook = gw_accel_has_metrics();
    if (metrics_hook) {
        /* what the process inherited from the master is not this worker's work */
        metrics_base_ok = gw_accel_metrics(&metrics_base);
        metrics_hook = metrics_base_ok || gw_accel_has_metrics();
        metrics_due_ms = gw_now_ms();
    }
    gw_worker_accepting(1);
    gw_log(GW_LOG_INFO, 0, "worker %d started", index);

    for (;;) {
        /* While jobs are paused on a provider that must be polled, never block for long:
         * its completions arrive only through the poll (a batching provider completes
         * partial batches in the poll itself; an accelerator with a completion queue needs
         * the poll repeated until its answers are in). 1 ms is a timer tick, not a spin.
         * While a batching provider holds requests for a queue that was still growing,
         * the wait does not block at all: nothing new ready means the queue stopped
         * growing, and the next poll computes it. */
        int wait_ms = w.env.shutting_down ? 100 : -1;
        if (poll_hook && gw_sock_async_paused() > 0)
            wait_ms = accel_queued > 0 ? 0 : POLL_WAIT_MS;
        if (metrics_dirty) { /* the provider's counters moved: copy them when due */
            int64_t left = metrics_due_ms - gw_now_ms();
            if (left < 0)
                left = 0;
            if (wait_ms < 0 || left < wait_ms)
                wait_ms = (int)left;
        }
        /* The providers have idle-time work (pools to fill): look at the ready events
         * without blocking; a pass that finds none does one batch of that work below. */
        if (idle_left > 0 && wait_ms != 0 && !w.env.shutting_down && gw_sock_async_paused() == 0)
            wait_ms = 0;
        if (gw_sock_async_woken()) /* woken by this thread: resume them without waiting */
            wait_ms = 0;
        if (gw_post_pending())
            wait_ms = 0; /* a relay yielded after a long run: it goes on after the events */
        int nev = gw_loop_once(&w.loop, wait_ms);
        if (nev > 0) {
            if (metrics_hook)
                metrics_dirty = 1;
            idle_left = idle_hook; /* handshakes may have taken precomputed entries */
        }
        /* After the ready events: let a polling provider complete what it queued (partial
         * batches never wait for a timer), then resume the jobs that completed. */
        accel_queued = 0;
        if (gw_sock_async_paused() > 0) {
            /* the loop's backlog: events this pass ran (more are likely: the next
             * epoll_wait does not block while requests wait) and jobs woken to resume; a
             * batching provider leaves partial batches to fill while it is not 0 */
            if (poll_hook)
                gw_accel_poll(&accel_queued,
                              (unsigned)(nev > 0 ? nev : 0) + (gw_sock_async_woken() ? 1u : 0u));
            gw_clock_update(); /* handshakes completed by the wakes: not the pass start */
        }
        gw_sock_async_process(); /* completed jobs: posted, resumed by gw_post_run */
        gw_post_run();           /* work posted by the batch: wakes, upstream events, relays */
        gw_sock_async_retry();   /* sockets that waited for a free async job */
        gw_proxy_process();      /* frees the upstream connections closed meanwhile */
        /* nothing was ready and no job waits: the loop would block, the CPU is ours */
        if (idle_left > 0 && nev == 0 && !w.env.shutting_down && gw_sock_async_paused() == 0) {
            idle_left = gw_accel_idle();
            if (metrics_hook)
                metrics_dirty = 1;
        }
        if (metrics_dirty && gw_now_ms() >= metrics_due_ms)
            gw_worker_metrics_refresh();
        if (stop_fast)
            break;
        if (w.env.shutting_down) {
            /* an upstream handshake's job drained after its client left is no connection
             * of ours, but its SSL must not be torn down by the exit while it is paused */
            if (w.env.n_conns == 0 && gw_sock_async_paused() == 0)
                break;
            if (gw_now_ms() >= w.shutdown_deadline_ms) {
                /* drained jobs (a client gone during its upstream handshake) count too:
                 * with no connection left they alone keep the worker until here */
                gw_log(GW_LOG_WARN, 0,
                       "worker_shutdown_timeout: closing %d connections, %d async jobs "
                       "still paused",
                       w.env.n_conns, gw_sock_async_paused());
                break;
            }
        }
    }
    gw_conn_shutdown_all(&w.env, 0);
    gw_worker_metrics_refresh(); /* the final counts, folded into the retired total */
    for (size_t i = 0; i < w.n_listeners; i++)
        if (w.listeners[i].fd >= 0)
            close(w.listeners[i].fd);
    free(w.listeners);
    close(sigwatch.fd);
    gw_loop_dispose(&w.loop);
    gw_log(GW_LOG_INFO, 0, "worker %d exiting", index);
    gw_cycle_free(cycle);
    exit(0);
}
