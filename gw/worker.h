/* A worker process: one thread, one event loop, the connections it accepted. */
#ifndef GW_WORKER_H
#define GW_WORKER_H

#include "cycle.h"
#include "http/conn.h"
#include "net/loop.h"

struct gw_conn;

typedef struct gw_wlistener {
    gw_io_t io; /* first: epoll dispatch */
    int fd;
    gw_laddr_t *laddr;
    int registered; /* in epoll now */
} gw_wlistener_t;

typedef struct gw_worker {
    gw_cycle_t *cycle;
    int index;
    gw_loop_t loop;
    gw_wlistener_t *listeners;
    size_t n_listeners;
    gw_conn_env_t env; /* the connections: loop, list, count, worker_connections,
                              * shutting_down (graceful stop: no accept, close after the
                              * current request) */
    int64_t shutdown_deadline_ms;
    gw_timer_t accept_timer; /* resume accepting after EMFILE/ENFILE */
} gw_worker_t;

/** The worker of this process (NULL in the master). */
extern gw_worker_t *gw_worker;

/**
 * Run a worker until it is told to stop. fds[k] is the listening socket for
 * cycle->laddrs[k]. Never returns: exits the process with 0 after a clean stop.
 */
void gw_worker_main(gw_cycle_t *cycle, int index, const int *fds) __attribute__((noreturn));

/** Stop or resume accepting on every listener (worker_connections reached, EMFILE). */
void gw_worker_accepting(int on);

/**
 * Copy the provider's "metrics" snapshot (when a loaded provider offers it) into this
 * worker's stats slot, counted from the worker's start. The loop calls it at most every
 * METRICS_PERIOD_MS after activity and once at exit; the status pages call it before
 * rendering. Does nothing without such a provider, or outside a worker.
 */
void gw_worker_metrics_refresh(void);

#endif
