/*
 * A worker's connection to one Redis server: hiredis's async API driven by the worker's
 * own epoll loop (an adapter like hiredis's ae/libevent ones: addRead/delRead/addWrite/
 * delWrite/cleanup map to epoll_ctl on the loop). Never blocks the loop: connecting is
 * non-blocking and given up after 1 s, a failed or lost connection is retried after a
 * back-off (100 ms doubling to 2 s), and while it is down callers are told "not ready" at once, so the handshakes
 * that depend on it go on without it at full speed. Failures are counted (in the shared
 * statistics: redis_errors) and logged once per 10 s per server.
 */
#ifndef GW_NET_REDIS_H
#define GW_NET_REDIS_H

#include <stddef.h>
#include <stdint.h>

#include "net/loop.h"

typedef struct gw_redis gw_redis_t;

/**
 * The process's client for url (created on first call; the same one afterwards). loop is
 * the worker's loop the connection is attached to. No I/O happens here: the connection is
 * opened by the first gw_redis_ready(). Returns NULL only when url does not parse.
 * The client lives as long as the process.
 */
gw_redis_t *gw_redis_get(const char *url, gw_loop_t *loop);

/**
 * Is the connection usable now? Starts connecting when idle and the back-off has passed;
 * returns 1 when connected and not marked slow, else 0.
 */
int gw_redis_ready(gw_redis_t *r);

/**
 * Send a command (hiredis printf-style format: %s, %b with a size_t length, %d ...).
 * cb(reply, priv) runs from the loop when the reply arrives, or with reply NULL when the
 * connection is lost first (hiredis calls every pending callback then; this may happen
 * inside this call, when the immediate write fails). The command is written at once when
 * the socket takes it. Returns 0 when queued, -1 when not ready (cb is not called).
 */
int gw_redis_command(gw_redis_t *r, void (*cb)(void *reply, void *priv), void *priv,
                     const char *fmt, ...);

/**
 * Record a failure of r seen by a caller (a reply that came too late, an error reply):
 * counted in redis_errors, logged at most once per 10 s with what, and r is considered
 * slow (gw_redis_ready() answers 0) for the next second.
 */
void gw_redis_failed(gw_redis_t *r, const char *what);

#endif
