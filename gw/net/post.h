/*
 * Posted work: units run after the current batch of epoll events, never inside it.
 * Handling an event may free an object that a later event of the same batch still names
 * (a client connection, an upstream connection, a paused TLS job's connection), so the
 * handlers that may free post themselves and the worker runs the queue after the batch.
 * One queue per thread (a worker is one thread): nothing locks.
 */
#ifndef GW_NET_POST_H
#define GW_NET_POST_H

#include <stddef.h>

/** A unit of work; zero-initialise, set run, then gw_post(). */
typedef struct gw_posted {
    void (*run)(struct gw_posted *p);
    struct gw_posted *next, *prev;
    int queued;
} gw_posted_t;

/** Queue p (once: a queued p stays where it is) to run after the batch. */
void gw_post(gw_posted_t *p);

/** Remove p from the queue if queued (its owner is being freed). */
void gw_unpost(gw_posted_t *p);

/**
 * Run the items posted before this call, oldest first; those posted meanwhile (a relay
 * that yields, a retry) wait for the next pass, so no item can starve the loop. Returns
 * the number run. Called by the worker after each loop pass.
 */
size_t gw_post_run(void);

/** Are items posted? (Then the worker's next epoll wait must not block.) */
int gw_post_pending(void);

#endif
