/*
 * The worker's event loop: one epoll instance (edge-triggered for connections,
 * level-triggered with EPOLLEXCLUSIVE for listeners) and a binary min-heap of timers.
 * Single-threaded: nothing here locks.
 */
#ifndef GW_NET_LOOP_H
#define GW_NET_LOOP_H

#include <stddef.h>
#include <stdint.h>

/**
 * Anything registered with epoll starts with this: the loop calls handler(self, events)
 * with the epoll event bits (EPOLLIN, EPOLLOUT, EPOLLERR, EPOLLHUP, EPOLLRDHUP).
 */
typedef struct gw_io {
    void (*handler)(struct gw_io *self, uint32_t events);
} gw_io_t;

/** A timer; zero-initialise, then use gw_timer_add/gw_timer_del. */
typedef struct gw_timer {
    int64_t when; /* monotonic ms */
    size_t idx;   /* position in the heap + 1; 0 when not armed */
    void (*cb)(struct gw_timer *t);
} gw_timer_t;

typedef struct gw_loop {
    int epfd;
    gw_timer_t **heap;
    size_t n, cap;
} gw_loop_t;

/** Create the epoll instance. Returns 0, or -1 with errno set. */
int gw_loop_init(gw_loop_t *loop);
/** Close the epoll instance and free the heap (armed timers are simply forgotten). */
void gw_loop_dispose(gw_loop_t *loop);

/**
 * epoll_ctl ADD and DEL wrappers. io must stay valid (not freed or reused) until fd is
 * deleted or closed: the loop dispatches events to it. Return 0 or -1 with errno.
 */
int gw_loop_add(gw_loop_t *loop, int fd, uint32_t events, gw_io_t *io);
int gw_loop_del(gw_loop_t *loop, int fd);

/** Arm t to fire ms milliseconds after the cached clock (re-arming moves it). */
void gw_timer_add(gw_loop_t *loop, gw_timer_t *t, int64_t ms);
/** Disarm t if armed. */
void gw_timer_del(gw_loop_t *loop, gw_timer_t *t);
/** Is t armed? */
static inline int gw_timer_armed(const gw_timer_t *t)
{
    return t->idx != 0;
}

/**
 * Wait for events up to max_wait_ms (-1: until the next timer or forever), dispatch
 * them, refresh the clock, then run the expired timers. Returns the number of events,
 * or -1 with errno (EINTR is returned as 0).
 */
int gw_loop_once(gw_loop_t *loop, int max_wait_ms);

#endif
