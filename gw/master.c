#include "master.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/sdnotify.h"
#include "core/stats.h"
#include "cycle.h"
#include "http/conn.h"
#include "net/listen.h"
#include "tls/accel.h"
#include "tls/secheap.h"
#include "tls/tls.h"
#include "worker.h"

#define MAX_WORKERS 512
#define RESPAWN_MIN_MS 1000 /* a worker that dies faster than this is restarted after a pause */
#define FAST_STOP_GRACE_MS 5000

/* A listening socket set the master keeps across reloads, so that connections queued in
 * a socket's backlog are never lost when workers change (one fd per worker with
 * reuseport, else one shared fd). */
typedef struct msock {
    char key[96];
    int *fds;
    int n;
} msock_t;

typedef struct wproc {
    pid_t pid;
    int slot; /* gw_stats->workers[slot], or -1 */
    int index;
    unsigned generation;
    int64_t started_ms;
    int64_t respawn_at_ms; /* > 0: restart pending */
} wproc_t;

static volatile sig_atomic_t sig_hup, sig_quit, sig_term, sig_usr1, sig_chld, sig_alrm;

static msock_t *socks;
static size_t n_socks;
static wproc_t workers[MAX_WORKERS * 2];
static size_t n_workers;
static unsigned generation;
static gw_cycle_t *cycle;

static void on_signal(int s)
{
    switch (s) {
    case SIGHUP:
        sig_hup = 1;
        break;
    case SIGQUIT:
        sig_quit = 1;
        break;
    case SIGTERM:
    case SIGINT:
        sig_term = 1;
        break;
    case SIGUSR1:
        sig_usr1 = 1;
        break;
    case SIGCHLD:
        sig_chld = 1;
        break;
    case SIGALRM:
        sig_alrm = 1;
        break;
    }
}

static int nworkers(const gw_conf_t *c)
{
    int n = c->worker_processes;
    if (n <= 0)
        n = 1;
    return n > MAX_WORKERS ? MAX_WORKERS : n;
}

/* ---- listening sockets ---- */

static msock_t *find_sock(msock_t *set, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (set[i].fds && strcmp(set[i].key, key) == 0)
            return &set[i];
    return NULL;
}

static void close_sock(msock_t *s)
{
    for (int i = 0; i < s->n; i++)
        if (s->fds[i] >= 0)
            close(s->fds[i]);
    free(s->fds);
    s->fds = NULL;
    s->n = 0;
}

/*
 * Make the socket set for cycle c, reusing sockets of the current set with the same key.
 * On success the current set is replaced and its unused sockets closed; on failure
 * nothing changes and -1 is returned after logging (or printing, at start) why.
 */
static int bind_sockets(gw_cycle_t *c, int at_start)
{
    int nw = nworkers(c->conf);
    msock_t *nset = calloc(c->n_laddrs ? c->n_laddrs : 1, sizeof(*nset));
    if (!nset)
        abort();
    for (size_t k = 0; k < c->n_laddrs; k++) {
        gw_laddr_t *la = &c->laddrs[k];
        int want = la->listen->reuseport ? nw : 1;
        msock_t *ns = &nset[k];
        snprintf(ns->key, sizeof(ns->key), "%s", la->key);
        ns->fds = malloc((size_t)want * sizeof(int));
        if (!ns->fds)
            abort();
        ns->n = want;
        msock_t *old = find_sock(socks, n_socks, la->key);
        for (int i = 0; i < want; i++) {
            if (old && i < old->n && old->fds[i] >= 0) {
                ns->fds[i] = old->fds[i];
                old->fds[i] = -2; /* taken over; restored on failure */
                /* listen() again applies a changed backlog to the live socket */
                listen(ns->fds[i], la->listen->backlog > 0 ? la->listen->backlog : 511);
                continue;
            }
            ns->fds[i] = gw_listen_open(la->listen);
            if (ns->fds[i] < 0) {
                int e = errno;
                if (at_start)
                    fprintf(stderr, "tlsgate: [emerg] bind() to %s failed (%d: %s)\n",
                            la->listen->text, e, strerror(e));
                gw_log(GW_LOG_EMERG, e, "bind() to %s failed", la->listen->text);
                /* undo: give back what was taken, close what was opened */
                for (size_t j = 0; j <= k; j++) {
                    msock_t *o = find_sock(socks, n_socks, nset[j].key);
                    int upto = j == k ? i : nset[j].n;
                    for (int m = 0; m < upto; m++) {
                        if (o && m < o->n && o->fds[m] == -2)
                            o->fds[m] = nset[j].fds[m];
                        else
                            close(nset[j].fds[m]);
                    }
                    free(nset[j].fds);
                }
                free(nset);
                return -1;
            }
        }
    }
    for (size_t i = 0; i < n_socks; i++)
        close_sock(&socks[i]); /* only fds not taken over remain (>= 0) */
    free(socks);
    socks = nset;
    n_socks = c->n_laddrs;
    return 0;
}

static void close_all_sockets(void)
{
    for (size_t i = 0; i < n_socks; i++)
        close_sock(&socks[i]);
    free(socks);
    socks = NULL;
    n_socks = 0;
}

/* ---- workers ---- */

static int alloc_slot(void)
{
    return gw_stats_alloc_slot(gw_stats, generation);
}

/* A worker is gone (reaped, or its fork failed): its counters join the retired total, so
 * that totals never go backwards, and the slot is free again. */
static void free_slot(int slot)
{
    if (slot >= 0)
        gw_stats_retire_slot(gw_stats, slot);
}

static pid_t spawn(int index, int *slot_out)
{
    int slot = alloc_slot();
    *slot_out = slot;
    pid_t pid = fork();
    if (pid > 0 && slot >= 0)
        gw_stats->workers[slot].pid = pid;
    if (pid < 0)
        free_slot(slot);
    if (pid < 0) {
        gw_log(GW_LOG_ALERT, errno, "fork() failed");
        return -1;
    }
    if (pid > 0)
        return pid;
    /* child: its own counters, and only this worker's listening sockets */
    if (slot >= 0) {
        gw_wstats = &gw_stats->workers[slot];
        gw_wstats->pid = getpid();
    }
    int *fds = calloc(cycle->n_laddrs ? cycle->n_laddrs : 1, sizeof(int));
    if (!fds)
        _exit(2);
    for (size_t k = 0; k < n_socks; k++) {
        int pick = socks[k].n > 1 ? index % socks[k].n : 0;
        for (int i = 0; i < socks[k].n; i++) {
            if (i == pick)
                fds[k] = socks[k].fds[i];
            else
                close(socks[k].fds[i]);
        }
    }
    gw_worker_main(cycle, index, fds);
}

static void start_workers(void)
{
    int nw = nworkers(cycle->conf);
    for (int i = 0; i < nw; i++) {
        if (n_workers >= sizeof(workers) / sizeof(workers[0])) {
            gw_log(GW_LOG_ALERT, 0, "too many worker processes");
            return;
        }
        int slot;
        pid_t pid = spawn(i, &slot);
        workers[n_workers++] =
            (wproc_t){.pid = pid,
                      .slot = pid > 0 ? slot : -1,
                      .index = i,
                      .generation = generation,
                      .started_ms = gw_now_ms(),
                      .respawn_at_ms = pid < 0 ? gw_now_ms() + RESPAWN_MIN_MS : 0};
    }
}

static void signal_workers(int sig, int old_only)
{
    for (size_t i = 0; i < n_workers; i++)
        if (workers[i].pid > 0 && (!old_only || workers[i].generation != generation))
            kill(workers[i].pid, sig);
}

static size_t live_workers(void)
{
    size_t n = 0;
    for (size_t i = 0; i < n_workers; i++)
        if (workers[i].pid > 0)
            n++;
    return n;
}

static void reap(int stopping)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (size_t i = 0; i < n_workers; i++) {
            wproc_t *w = &workers[i];
            if (w->pid != pid)
                continue;
            w->pid = 0;
            free_slot(w->slot);
            w->slot = -1;
            int bad = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
            if (bad) {
                if (WIFSIGNALED(status))
                    gw_log(GW_LOG_ALERT, 0, "worker process %d exited on signal %d%s", pid,
                           WTERMSIG(status), WCOREDUMP(status) ? " (core dumped)" : "");
                else
                    gw_log(GW_LOG_ALERT, 0, "worker process %d exited with code %d", pid,
                           WEXITSTATUS(status));
            } else {
                gw_log(GW_LOG_NOTICE, 0, "worker process %d exited with code 0", pid);
            }
            if (!stopping && w->generation == generation) {
                /* a current worker must always be there: restart it, but not in a loop */
                GW_STAT_ADD(worker_restarts, 1);
                int64_t up = gw_now_ms() - w->started_ms;
                w->respawn_at_ms = gw_now_ms() + (up < RESPAWN_MIN_MS ? RESPAWN_MIN_MS : 0);
            }
        }
    }
    /* compact: drop finished old-generation slots */
    size_t j = 0;
    for (size_t i = 0; i < n_workers; i++)
        if (workers[i].pid > 0 || workers[i].respawn_at_ms > 0)
            workers[j++] = workers[i];
    n_workers = j;
}

static void respawn_due(void)
{
    int64_t now = gw_now_ms();
    int pending = 0;
    for (size_t i = 0; i < n_workers; i++) {
        wproc_t *w = &workers[i];
        if (w->pid > 0 || w->respawn_at_ms <= 0 || w->generation != generation)
            continue;
        if (w->respawn_at_ms > now) {
            pending = 1;
            continue;
        }
        int slot;
        pid_t pid = spawn(w->index, &slot);
        if (pid > 0) {
            w->slot = slot;
            gw_log(GW_LOG_NOTICE, 0, "started worker process %d (slot %d)", pid, w->index);
            w->pid = pid;
            w->started_ms = now;
            w->respawn_at_ms = 0;
        } else {
            w->respawn_at_ms = now + RESPAWN_MIN_MS;
            pending = 1;
        }
    }
    if (pending)
        alarm(1);
}

/* ---- pid file ---- */

static int write_pid(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    char buf[32];
    int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
    int ok = write(fd, buf, (size_t)n) == n;
    close(fd);
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

static void remove_pid(const char *path)
{
    char buf[32] = "";
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n > 0 && atoi(buf) == (int)getpid())
        unlink(path);
}

gw_cycle_t *gw_build_cycle(const gw_options_t *opt, gw_errlist_t *errs)
{
    gw_conf_t *conf = gw_options_load(opt, errs);
    if (!conf)
        return NULL;
    /* before any key is read: keys and ticket keys go to memory left out of core dumps */
    gw_secheap_init(conf);
    gw_privs_t privs;
    if (gw_privs_check(conf, &privs, errs) != 0) {
        gw_conf_free(conf);
        return NULL;
    }
    if (gw_accel_load(conf, errs) != 0) {
        gw_privs_dispose(&privs);
        gw_conf_free(conf);
        return NULL;
    }
    /* what start-up will need, checked now so that -t and a reload catch it */
    if (strcmp(conf->error_log, "stderr") != 0) {
        int fd = open(conf->error_log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
            gw_errlist_add(errs, "%s: error_log: cannot open \"%s\": %s", conf->conf_file,
                           conf->error_log, strerror(errno));
        else
            close(fd);
    }
    char piddir[4096];
    snprintf(piddir, sizeof(piddir), "%s", conf->pid);
    char *slash = strrchr(piddir, '/');
    if (slash)
        *(slash == piddir ? slash + 1 : slash) = '\0';
    if (access(slash ? piddir : ".", W_OK) != 0)
        gw_errlist_add(errs, "%s: pid: cannot write \"%s\": %s", conf->conf_file, conf->pid,
                       strerror(errno));
    gw_cycle_t *c = gw_cycle_new(conf, gw_conn_client_hello, errs);
    if (c) {
        gw_secheap_check(conf); /* the keys are in the secure heap now */
        c->privs = privs;
    } else {
        gw_privs_dispose(&privs);
    }
    if (c && c->n_laddrs == 0) {
        gw_errlist_add(errs, "%s: no \"listen\" in any server: nothing to serve",
                       c->conf->conf_file);
        gw_cycle_free(c);
        return NULL;
    }
    return c;
}

/* ---- logs the workers reopen belong to their user (`user`) ---- */

static void chown_logs(const gw_cycle_t *c)
{
    gw_privs_chown_file(&c->privs, c->conf->error_log);
    for (size_t i = 0; i < c->n_logs; i++)
        gw_privs_chown_file(&c->privs, c->logs[i].path);
}

/* ---- reload ---- */

static void reload(const gw_options_t *opt)
{
    gw_log(GW_LOG_NOTICE, 0, "reconfiguring");
    gw_errlist_t errs = {0};
    gw_cycle_t *nc = gw_build_cycle(opt, &errs);
    if (!nc || errs.n) {
        gw_warn_flush(0, 1);
        for (size_t i = 0; i < errs.n; i++)
            gw_log(GW_LOG_EMERG, 0, "%s", errs.v[i]);
        gw_log(GW_LOG_ERROR, 0, "reload failed: the old configuration keeps running");
        gw_errlist_clear(&errs);
        gw_cycle_free(nc);
        return;
    }
    if (bind_sockets(nc, 0) != 0) {
        gw_log(GW_LOG_ERROR, 0, "reload failed: the old configuration keeps running");
        gw_cycle_free(nc);
        return;
    }
    if (strcmp(nc->conf->error_log, cycle->conf->error_log) != 0 ||
        nc->conf->error_log_level != cycle->conf->error_log_level) {
        if (gw_log_open(nc->conf->error_log, nc->conf->error_log_level) != 0)
            gw_log(GW_LOG_ALERT, errno, "cannot open the new error log \"%s\"",
                   nc->conf->error_log);
    }
    gw_warn_flush(0, 1);
    chown_logs(nc);
    gw_cycle_t *old = cycle;
    cycle = nc;
    generation++;
    start_workers();
    signal_workers(SIGQUIT, 1);
    gw_cycle_free(old);
    GW_STAT_ADD(reloads, 1);
    gw_log(GW_LOG_NOTICE, 0, "configuration reloaded, generation %u", generation);
}

/* systemd Type=notify (core/sdnotify.h); a no-op when not started by systemd */
static void notify(const char *state)
{
    if (gw_sd_notify(state) < 0)
        gw_log(GW_LOG_WARN, errno, "sd_notify \"%s\" to \"%s\" failed", state,
               getenv("NOTIFY_SOCKET"));
}

static void daemonize(void)
{
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "tlsgate: fork() failed: %s\n", strerror(errno));
        exit(1);
    }
    if (pid > 0)
        _exit(0);
    setsid();
    int fd = open("/dev/null", O_RDWR);
    if (fd >= 0) {
        dup2(fd, 0);
        dup2(fd, 1);
        if (gw_log_fd() > 2)
            dup2(gw_log_fd(), 2);
        else
            dup2(fd, 2);
        if (fd > 2)
            close(fd);
    }
}

int gw_master_run(const gw_options_t *opt)
{
    gw_clock_update();
    if (gw_tls_init() != 0) {
        fprintf(stderr, "tlsgate: OpenSSL initialisation failed\n");
        return 1;
    }
    gw_errlist_t errs = {0};
    gw_log_open("stderr", GW_LOG_WARN); /* until the configured log: start-up warnings */
    cycle = gw_build_cycle(opt, &errs);
    if (!cycle || errs.n) {
        gw_warn_flush(1, 0);
        for (size_t i = 0; i < errs.n; i++)
            fprintf(stderr, "tlsgate: [emerg] %s\n", errs.v[i]);
        gw_errlist_clear(&errs);
        gw_cycle_free(cycle);
        return 1;
    }
    if (gw_log_open(cycle->conf->error_log, cycle->conf->error_log_level) != 0) {
        fprintf(stderr, "tlsgate: [emerg] cannot open error log \"%s\": %s\n",
                cycle->conf->error_log, strerror(errno));
        return 1;
    }
    /* warnings (key file modes, `user`): on the terminal and in the log, as nginx */
    gw_warn_flush(strcmp(cycle->conf->error_log, "stderr") != 0, 1);
    chown_logs(cycle);
    if (bind_sockets(cycle, 1) != 0)
        return 1;
    if (cycle->conf->daemon)
        daemonize();
    if (write_pid(cycle->conf->pid) != 0) {
        /* without it, -s cannot reach this master: refuse to start, as nginx does */
        int e = errno;
        fprintf(stderr, "tlsgate: [emerg] cannot write the pid file \"%s\": %s\n", cycle->conf->pid,
                strerror(e));
        gw_log(GW_LOG_EMERG, e, "cannot write the pid file \"%s\"", cycle->conf->pid);
        return 1;
    }
    if (gw_stats_init_shared() != 0) {
        gw_log(GW_LOG_EMERG, errno, "mmap() of the shared statistics failed");
        return 1;
    }
    char *pid_path = strdup(cycle->conf->pid);

    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGHUP, SIGQUIT, SIGTERM, SIGINT, SIGUSR1, SIGCHLD, SIGALRM};
    sigset_t block, empty;
    sigemptyset(&block);
    sigemptyset(&empty);
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        sigaction(sigs[i], &sa, NULL);
        sigaddset(&block, sigs[i]);
    }
    signal(SIGPIPE, SIG_IGN);
    sigprocmask(SIG_BLOCK, &block, NULL);

    for (size_t k = 0; k < cycle->n_laddrs; k++)
        gw_log(GW_LOG_NOTICE, 0, "listening on %s%s", cycle->laddrs[k].listen->text,
               cycle->laddrs[k].ssl ? " ssl" : "");
    gw_log(GW_LOG_NOTICE, 0, "tlsgate started, %d worker process(es)", nworkers(cycle->conf));
    start_workers();
    char ready[64];
    snprintf(ready, sizeof(ready), "READY=1\nMAINPID=%d", (int)getpid());
    notify(ready);

    int stopping = 0; /* 1 graceful, 2 fast */
    int64_t kill_at = 0;
    for (;;) {
        if (!(sig_hup || sig_quit || sig_term || sig_usr1 || sig_chld || sig_alrm))
            sigsuspend(&empty);
        gw_clock_update();
        if (sig_chld) {
            sig_chld = 0;
            reap(stopping);
        }
        if (sig_term) {
            sig_term = 0;
            if (stopping != 2) {
                gw_log(GW_LOG_NOTICE, 0, "stopping");
                notify("STOPPING=1");
                stopping = 2;
                signal_workers(SIGTERM, 0);
                close_all_sockets();
                kill_at = gw_now_ms() + FAST_STOP_GRACE_MS;
                alarm(1);
            }
        }
        if (sig_quit) {
            sig_quit = 0;
            if (!stopping) {
                gw_log(GW_LOG_NOTICE, 0, "gracefully stopping");
                notify("STOPPING=1");
                stopping = 1;
                signal_workers(SIGQUIT, 0);
                /* new connections are refused at once (clients and load balancers fail
                 * over), instead of queueing on sockets nobody accepts from any more */
                close_all_sockets();
            }
        }
        if (sig_hup) {
            sig_hup = 0;
            if (!stopping) {
                notify("RELOADING=1");
                reload(opt);
                notify("READY=1");
            }
        }
        if (sig_usr1) {
            sig_usr1 = 0;
            gw_log(GW_LOG_NOTICE, 0, "reopening logs");
            if (gw_log_reopen() != 0)
                gw_log(GW_LOG_ALERT, errno, "cannot reopen the error log");
            gw_cycle_reopen_logs(cycle);
            chown_logs(cycle);
            signal_workers(SIGUSR1, 0);
        }
        if (sig_alrm) {
            sig_alrm = 0;
            if (stopping == 2 && gw_now_ms() >= kill_at && live_workers()) {
                gw_log(GW_LOG_ALERT, 0, "workers did not stop in time, killing them");
                signal_workers(SIGKILL, 0);
            } else if (stopping == 2) {
                alarm(1);
            }
        }
        if (stopping) {
            reap(stopping);
            if (live_workers() == 0)
                break;
        } else {
            respawn_due();
        }
    }
    gw_log(GW_LOG_NOTICE, 0, "exit");
    remove_pid(pid_path);
    free(pid_path);
    close_all_sockets();
    gw_cycle_free(cycle);
    return 0;
}
