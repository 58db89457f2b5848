/*
 * Upstream servers, per worker: peer choice (smooth weighted round robin, as nginx's
 * ngx_http_upstream_round_robin), passive health (max_fails within fail_timeout), backup
 * servers, non-blocking connects on the worker's loop, and the keep-alive pool of idle
 * connections (nginx's `keepalive N`). Used by the HTTP proxy (proxy.c) and the stream
 * proxy (stream.c). Single-threaded like the rest of the worker: nothing locks.
 *
 * Events on an upstream connection are not handled while the loop dispatches a batch:
 * the owner is "posted" and run after the batch (gw_proxy_process()), because handling
 * them may free the client connection or the upstream connection while a later event of
 * the same batch still names it. Freed upstream connections are likewise kept until then.
 */
#ifndef GW_PROXY_UPSTREAM_H
#define GW_PROXY_UPSTREAM_H

#include <stdint.h>

#include "conf/conf.h"
#include "net/loop.h"
#include "net/post.h"

/** The worker's loop, its configuration and its stop flag (no keep-alive pool while it is
 * non-zero): set once by the worker before any connection. */
void gw_upstream_init(gw_loop_t *loop, const gw_conf_t *conf, const int *stopping);

/** Free the upstream connections closed during the pass (after gw_post_run()). */
void gw_proxy_process(void);

/** Passes over both directions one drive makes before it yields (posts itself): a relay
 * between two fast peers would otherwise keep the worker from its other connections. */
#define GW_PROXY_MAX_PASSES 32

typedef struct gw_peer_rt {
    int current_weight; /* smooth WRR state */
    int fails;          /* failures counted since failed_ms */
    int64_t failed_ms;  /* time of the last failure */
} gw_peer_rt_t;

struct gw_upconn;

/** A worker's state of one configured upstream. */
typedef struct gw_upstream {
    const gw_upstream_conf_t *conf;
    gw_peer_rt_t *peers;    /* conf->n_servers entries */
    struct gw_upconn *idle; /* keep-alive pool, most recently used first */
    int n_idle;
    uint64_t connects; /* connections opened (for tests and logs) */
} gw_upstream_t;

enum gw_upconn_state { GW_UP_CONNECTING = 1, GW_UP_READY, GW_UP_IDLE };

/** A connection to an upstream server. */
typedef struct gw_upconn {
    gw_io_t io; /* first: epoll dispatch */
    int fd;
    int state; /* enum gw_upconn_state */
    gw_upstream_t *up;
    int peer;          /* index in up->conf->servers */
    unsigned requests; /* requests sent on it (keepalive_requests) */
    int reused;        /* taken from the pool */
    uint32_t events;   /* epoll events seen since the owner last looked */
    int timed_out;     /* the timer fired since the owner last looked */
    gw_timer_t timer;
    gw_posted_t *owner;            /* posted on events and timeouts; NULL when idle */
    struct ssl_st *ssl;            /* TLS (proxy_pass https://, proxy/upstream_tls.h), else NULL */
    int tls_done;                  /* its handshake is complete */
    struct gw_sock_job *job;       /* its handshake's async job state (ssl_async on) */
    struct gw_upconn *next, *prev; /* pool list, or the free-after-pass list */
} gw_upconn_t;

/**
 * The worker's state for upstream idx of the http block (stream = 0) or of the stream
 * block (stream = 1), created on first use from the worker's cycle. Never NULL for a
 * valid index (aborts on out of memory, like the other worker allocations).
 */
gw_upstream_t *gw_upstream_get(int stream, int idx);

/**
 * Choose a peer: smooth weighted round robin over the primary servers that are not down
 * (a server is down after max_fails failures, for fail_timeout since the last one), then
 * over the backup servers when no primary one is usable. exclude (-1 = none) is skipped
 * when another server is usable. Returns the index, or -1 when every server is down.
 */
int gw_upstream_pick(gw_upstream_t *up, int exclude);

/** Count a failure (connect error or timeout, reset, garbage) of peer. */
void gw_upstream_fail(gw_upstream_t *up, int peer);
/** A successful exchange with peer: its failures are forgotten. */
void gw_upstream_ok(gw_upstream_t *up, int peer);

/**
 * A connection to peer for owner: an idle one of the pool when there is one (reused = 1),
 * else a new non-blocking connect() (state GW_UP_CONNECTING until gw_upconn_connected()
 * says so). Returns NULL with errno set when socket() or connect() failed at once (the
 * failure is counted).
 */
gw_upconn_t *gw_upconn_get(gw_upstream_t *up, int peer, gw_posted_t *owner);

/** As gw_upconn_get, for a location whose upstream connections use TLS context tls_ctx
 * (an SSL_CTX *, NULL: plain TCP): an idle connection is reused only when it was made
 * with the same context. The caller starts TLS on a new one (gw_upconn_tls_start). */
gw_upconn_t *gw_upconn_get_ctx(gw_upstream_t *up, int peer, gw_posted_t *owner,
                               const void *tls_ctx);

/**
 * For a GW_UP_CONNECTING connection after an event: 1 connected (state READY), 0 still
 * connecting, -1 failed (errno set from SO_ERROR).
 */
int gw_upconn_connected(gw_upconn_t *uc);

/** Arm (ms > 0) or disarm (ms = 0) the connection's timer; when it fires, timed_out is set
 * and the owner posted. */
void gw_upconn_timer(gw_upconn_t *uc, int64_t ms);

/**
 * Done with uc: reuse != 0 returns it to its upstream's pool when the upstream has
 * `keepalive`, keepalive_requests is not reached and the pool has room (the oldest idle
 * connection is closed to make room); otherwise, or with reuse = 0, it is closed. uc must
 * not be used afterwards.
 */
void gw_upconn_release(gw_upconn_t *uc, int reuse);

/** Close every idle pooled connection (worker shutdown). */
void gw_upstream_close_idle(void);

#endif
