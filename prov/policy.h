/*
 * tlsgate provider: the batching policy (prov/README.md, "When an operation is batched").
 *
 * Two decisions, per thread and operation (queue):
 *   - the adaptive choice: is a new request queued, run at once as a single operation by
 *     the default provider, or queued as a probe of the load (tg_policy_want,
 *     tg_policy_after_batch);
 *   - the flush: is a partial queue computed now, or left to fill (tg_policy_flush).
 *
 * Pure: no locks, no clock, no OpenSSL, no allocation. Every time is a CLOCK_MONOTONIC
 * value in ns passed by the caller, which also holds whatever lock guards the state
 * (batch.c: the thread's lock). So the unit test (tests/prov/policy_test.c) drives it
 * with synthetic arrival times.
 */
#ifndef TG_POLICY_H
#define TG_POLICY_H

#include <stdint.h>

#define TG_POLICY_LANES 8

/** The measured costs of one operation (batch.c keeps them process-wide). */
struct tg_costs {
    uint64_t batch_ns;      /* one 8-lane batch (lower envelope) */
    uint64_t single_ns;     /* one default-provider operation (lower envelope) */
    uint64_t flush_wait_ns; /* a partial batch's idle wait before a timer flush (average) */
};

/** The policy state of one thread and operation. Zero it, then tg_policy_init. */
struct tg_policy {
    int single;            /* 1: requests run as single operations (default provider) */
    double fill;           /* moving average of this thread's batch fill, in lanes */
    double partial;        /* moving average of the share of its batches that were partial */
    unsigned skipped;      /* single operations since the last probe */
    uint64_t probe_ns;     /* when the last probe was queued */
    uint64_t probe_gap_ns; /* the least time between probes (0: TG_POLICY_PROBE_NS) */
    uint64_t last_ns;      /* the latest arrival (0: none yet) */
    uint64_t gap_ns;       /* moving average of the gap between arrivals (0: unknown) */
};

/* Every TG_POLICY_PROBE_EVERY single operations, at most every probe_gap_ns (from
 * TG_POLICY_PROBE_NS, doubling while probes find no company, up to
 * TG_POLICY_PROBE_MAX_NS), one request is queued as a probe. */
#define TG_POLICY_PROBE_EVERY 32
#define TG_POLICY_PROBE_NS (100ULL * 1000ULL * 1000ULL)
#define TG_POLICY_PROBE_MAX_NS (16ULL * TG_POLICY_PROBE_NS)
/* Batching must beat single operations by this factor; and never below 1.5 lanes. */
#define TG_POLICY_MARGIN 1.15
#define TG_POLICY_CROSSOVER_MIN 1.5

/*
 * The flush. A partial queue waits while the application's loop has other work (its
 * backlog) and computes as soon as the loop would otherwise idle; time bounds the wait:
 *   cap = clamp(TG_POLICY_FILL_SLACK x 8 x gap, max(TG_POLICY_WAIT_MIN_NS, 4 x flush_ns),
 *               TG_POLICY_WAIT_MAX_NS)
 * where gap is the measured time between arrivals: twice the time a batch takes to fill
 * at the current rate. Without a backlog figure (timer thread, third-party applications),
 * a queue is also computed once no request joined it for
 *   quiet = clamp(TG_POLICY_GAP_QUIET x gap, flush_ns, 4 x flush_ns)
 * (arrivals stopped: the application is blocked and the CPU would idle). prov/README.md
 * gives the measurements behind the constants.
 */
#define TG_POLICY_FILL_SLACK 2
#define TG_POLICY_WAIT_MIN_NS (1000ULL * 1000ULL)
#define TG_POLICY_WAIT_MAX_NS (10ULL * 1000ULL * 1000ULL)
#define TG_POLICY_GAP_QUIET 4
/* an idle spell counts as at most this much in the gap average (one quiet second must not
 * hide the next burst's rate for long) */
#define TG_POLICY_GAP_SAMPLE_MAX_NS (20ULL * 1000ULL * 1000ULL)

/** Backlog value: the application said nothing (apply the time rules only). */
#define TG_POLICY_BACKLOG_UNKNOWN (-1L)

/** A new thread batches until its batches say otherwise. */
void tg_policy_init(struct tg_policy *p);

/** A request of this operation arrived on the thread at now (queued or not). */
void tg_policy_arrival(struct tg_policy *p, uint64_t now);

enum tg_want { TG_WANT_SINGLE, TG_WANT_QUEUE, TG_WANT_PROBE };
/**
 * The adaptive choice for a request that could be queued, with `queued` requests already
 * in its queue: queue it (always when the queue is not empty, or the thread batches), run
 * it as a single operation, or queue it as a probe (updates the probe bookkeeping).
 */
enum tg_want tg_policy_want(struct tg_policy *p, unsigned queued, uint64_t now);

/** The least average fill at which batching pays, for a share `partial` of partial batches. */
double tg_policy_crossover(const struct tg_costs *c, double partial);

/**
 * After a batch of n lanes (probe: its first request was a probe): updates the averages
 * and the mode. Returns +1 when the thread switched to batching, -1 when it switched to
 * single operations, 0 when the mode did not change.
 */
int tg_policy_after_batch(struct tg_policy *p, const struct tg_costs *c, unsigned n, int probe);

/** The longest a queue's oldest request waits (see above), in ns. */
uint64_t tg_policy_wait_cap(const struct tg_policy *p, uint64_t flush_ns);

enum tg_flush {
    TG_FLUSH_WAIT, /* leave it to fill */
    TG_FLUSH_IDLE, /* the loop has no backlog (or arrivals stopped): compute now */
    TG_FLUSH_AGE,  /* the oldest request waited the cap */
};
/**
 * The flush decision for a queue of n (1..7) requests, the oldest queued at oldest_ns,
 * the newest at newest_ns. backlog: the application's loop's pending work (events of its
 * current pass; 0: it would idle), or TG_POLICY_BACKLOG_UNKNOWN. flush_ns: the
 * instance's timer period (0: none). On TG_FLUSH_WAIT, *due (may be NULL) gets the time
 * at which the time rules would flush it.
 */
enum tg_flush tg_policy_flush(const struct tg_policy *p, unsigned n, uint64_t oldest_ns,
                              uint64_t newest_ns, long backlog, uint64_t flush_ns, uint64_t now,
                              uint64_t *due);

/* The estimators of struct tg_costs. Lower envelope: x = sample when lower, else x rises
 * by at most x / 64 + 1 (preemption only inflates wall-clock samples). */
uint64_t tg_policy_floor(uint64_t x, uint64_t sample);
/* x + (sample - x) / 8 */
uint64_t tg_policy_ewma(uint64_t x, uint64_t sample);

#endif
