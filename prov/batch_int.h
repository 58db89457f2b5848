/*
 * tlsgate provider: what the batching files share (batch.c: queues and a request's path;
 * compute.c: one batch on mb8; timer.c: the timer thread). Not for the rest of prov/,
 * which uses prov.h's tg_batch_* API.
 */
#ifndef TG_BATCH_INT_H
#define TG_BATCH_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "policy.h"
#include "prov.h"

_Static_assert(TG_POLICY_LANES == MB8_LANES, "the policy's lanes are mb8's");

/* A thread that queues: one queue of at most MB8_LANES requests per operation. */
struct tg_thread {
    pthread_mutex_t lock;
    pthread_cond_t done_cv;
    struct tg_req *q[TG_OP_COUNT][MB8_LANES];
    unsigned qn[TG_OP_COUNT];
    uint64_t last_ns[TG_OP_COUNT];     /* when the newest request joined the queue */
    unsigned char grew[TG_OP_COUNT];   /* a request joined since the application's last poll */
    struct tg_policy pol[TG_OP_COUNT]; /* the adaptive choice and arrival rate (policy.h) */
    void *scratch; /* mb8 scratch (tg_scratch_new) for batches computed on this thread */
    void *stack;   /* TG_COMPUTE_STACK bytes: batches computed inside an async job run here */
    _Atomic uint64_t polled_ns; /* the application's last poll from this thread */
    int tid;                    /* its kernel thread id (gettid), for tg_thread_busy */
    struct tg_thread *next;
};

/*
 * batch.c: the backlog figure of a thread that does not poll, for the timer's flush
 * decision: 1 when the thread is running or runnable (its loop still has work: jobs that
 * will join the queue, or it was preempted, and then its quiet spell is not an idle one),
 * 0 when it sleeps or waits (its application blocked: nothing more will come before the
 * queue is computed), TG_POLICY_BACKLOG_UNKNOWN when its state cannot be read. Read from
 * /proc/self/task/TID/stat (Linux, proc(5)), about 10 us: only when a partial queue is due.
 */
long tg_thread_busy(const struct tg_thread *t);

/* How long a thread that polled is left to its own polls by the timer. */
#define TG_POLLED_RECENTLY_NS (50ULL * 1000000ULL)

/* batch.c: the registry of thread states (the timer walks it), requests in all queues, the
 * latest poll of any thread, fork()s survived. */
extern pthread_mutex_t tg_reg_lock;
extern struct tg_thread *tg_reg_head;
extern atomic_uint tg_pending;
extern _Atomic uint64_t tg_polled_any_ns;
extern unsigned tg_fork_gen;
/* batch.c: how long the latest batch took to compute (ns), any operation: the timer's nap
 * between batches is at least that long (timer.c) */
extern _Atomic uint64_t tg_last_batch_ns;

/* batch.c: takes t's queue for op (t->lock held); returns its length. */
unsigned tg_take_locked(struct tg_thread *t, enum tg_op op, struct tg_req **rs);
/* batch.c: computes a batch taken from t's queue (t->lock not held) and completes it:
 * wakes every job but self's and marks all done. how: the TG_C_FLUSH_* counter. */
void tg_run_batch(struct tg_thread *t, enum tg_op op, struct tg_req *const *rs, unsigned n,
                  void *scratch, enum tg_counter how, const struct tg_req *self);

/* compute.c: an MB8_SCRATCH_ALIGN-aligned, zeroed scratch for any batch, or NULL. */
void *tg_scratch_new(void);
/* compute.c: wipes and frees a tg_scratch_new() block (NULL is fine). */
void tg_scratch_free(void *p);
/* compute.c: t's scratch, allocated on first use (NULL without memory). */
void *tg_thread_scratch(struct tg_thread *t);
/* compute.c: one batch of n requests of op on mb8, on t's own stack inside an ASYNC job;
 * sets each request's status (MB8_STATUS_BAD_INPUT for all when no stack can be had). */
void tg_compute(struct tg_thread *t, enum tg_op op, struct tg_req *const *rs, unsigned n,
                void *scratch);

/* timer.c: wakes the timer thread (starting it if needed). */
void tg_timer_kick(void);
/* timer.c: 1 once the timer thread runs; 1 while it sleeps with no deadline; 1 while it
 * sleeps past TG_TIMER_LONG_NS (see tg_batch_run). */
int tg_timer_started(void);
int tg_timer_asleep(void);
int tg_timer_long(void);
/* timer.c: the deadline the timer sleeps until (0: running a pass, or no deadline); the
 * flush period of the latest timer-managed request (the timer's nap between batches). */
uint64_t tg_timer_deadline(void);
void tg_timer_note_flush(uint64_t flush_ns);
/* timer.c: process-wide set-up (one call per instance), the last instance's stop (joins the
 * thread), fork's prepare/parent/child hooks. */
void tg_timer_init(void);
int tg_timer_teardown(void);
void tg_timer_fork_prepare(void);
void tg_timer_fork_parent(void);
void tg_timer_fork_child(void);

#endif
