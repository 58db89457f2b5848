/*
 * prov/policy.c alone, fed with synthetic arrival times: the flush rule (backlog, cap,
 * quiet time) and the adaptive choice (mode switches, probes).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "policy.h"

#define US 1000ULL
#define MS (1000ULL * US)

/* Zen 4 rsa2048: an 8-lane batch 1.8 ms, one OpenSSL operation 0.42 ms (crossover ~4.9). */
static const struct tg_costs rsa = {1800 * US, 420 * US, 0};

/* A queue driven by a policy: arrivals at given times, a poll with a backlog after each. */
struct sim {
    struct tg_policy p;
    unsigned n;
    uint64_t oldest, newest;
    unsigned batches, lanes, by_age, by_idle;
};

static void sim_flush(struct sim *s, enum tg_flush f)
{
    s->batches++;
    s->lanes += s->n;
    s->by_age += f == TG_FLUSH_AGE;
    s->by_idle += f == TG_FLUSH_IDLE;
    s->n = 0;
}

static void sim_arrive(struct sim *s, uint64_t now, long backlog, uint64_t flush_ns)
{
    enum tg_flush f;

    tg_policy_arrival(&s->p, now);
    /* the poll of the pass that brought an earlier request may find the cap passed */
    if (s->n > 0 && (f = tg_policy_flush(&s->p, s->n, s->oldest, s->newest, backlog, flush_ns, now,
                                         NULL)) != TG_FLUSH_WAIT)
        sim_flush(s, f);
    if (s->n++ == 0)
        s->oldest = now;
    s->newest = now;
    if (s->n == TG_POLICY_LANES) {
        sim_flush(s, TG_FLUSH_WAIT); /* full: computed by the request that filled it */
        return;
    }
    f = tg_policy_flush(&s->p, s->n, s->oldest, s->newest, backlog, flush_ns, now, NULL);
    if (f != TG_FLUSH_WAIT)
        sim_flush(s, f);
}

static void sim_init(struct sim *s)
{
    *s = (struct sim){0};
    tg_policy_init(&s->p);
}

/* A deterministic exponential-ish gap around mean (an LCG; no libm). */
static uint64_t gap_draw(uint32_t *seed, uint64_t mean)
{
    *seed = *seed * 1664525u + 1013904223u;
    uint32_t u = *seed >> 8; /* 24 bits */
    /* -ln(1 - x) by a few series terms is overkill: a uniform gap in [0, 2 mean] keeps the
     * mean and the burstiness that matters (runs of short gaps) */
    return (uint64_t)u * 2 * mean / (1u << 24);
}

/* Saturation, the gateway's figure: every pass has other work; batches run full. */
static void saturated_batches_full(void **state)
{
    struct sim s;
    uint32_t seed = 1;
    uint64_t t = 1 * MS;

    (void)state;
    sim_init(&s);
    for (int i = 0; i < 80000; i++) {
        t += gap_draw(&seed, 300 * US); /* 3,333 requests/s: TLS 1.2 RSA kx at saturation */
        sim_arrive(&s, t, 5, 200 * US);
    }
    print_message("saturated: %u batches, mean fill %.3f, %u by age\n", s.batches,
                  (double)s.lanes / s.batches, s.by_age);
    assert_true((double)s.lanes / s.batches >= 7.9);
    assert_int_equal(s.by_idle, 0);
}

/* One connection at a time: the loop has nothing else, so nothing waits. */
static void idle_loop_flushes_at_once(void **state)
{
    struct tg_policy p;

    (void)state;
    tg_policy_init(&p);
    tg_policy_arrival(&p, 10 * MS);
    assert_int_equal(tg_policy_flush(&p, 1, 10 * MS, 10 * MS, 0, 200 * US, 10 * MS, NULL),
                     TG_FLUSH_IDLE);
    /* the pass that queued it had one event: left for the next (non-blocking) pass */
    assert_int_equal(tg_policy_flush(&p, 1, 10 * MS, 10 * MS, 1, 200 * US, 10 * MS, NULL),
                     TG_FLUSH_WAIT);
}

/* The cap: twice the time a batch takes to fill at the measured rate, within bounds. */
static void cap_follows_rate(void **state)
{
    struct tg_policy p;

    (void)state;
    tg_policy_init(&p);
    assert_int_equal(tg_policy_wait_cap(&p, 0), TG_POLICY_WAIT_MIN_NS); /* no rate yet */
    assert_int_equal(tg_policy_wait_cap(&p, 500 * US), 2 * MS);         /* 4 x flush_us */
    for (uint64_t t = 1; t <= 50; t++)
        tg_policy_arrival(&p, t * 300 * US);
    assert_int_equal(p.gap_ns, 300 * US);
    assert_int_equal(tg_policy_wait_cap(&p, 200 * US), 2 * 8 * 300 * US);
    for (uint64_t t = 1; t <= 80; t++)
        tg_policy_arrival(&p, 15 * MS + t * 5 * MS);
    assert_int_equal(tg_policy_wait_cap(&p, 200 * US), TG_POLICY_WAIT_MAX_NS);
    /* busy loop, rare requests: computed when the oldest waited the cap, not before */
    uint64_t cap = tg_policy_wait_cap(&p, 200 * US), due = 0;
    assert_int_equal(
        tg_policy_flush(&p, 3, 1000 * MS, 1001 * MS, 7, 200 * US, 1000 * MS + cap - 1, &due),
        TG_FLUSH_WAIT);
    assert_int_equal(due, 1000 * MS + cap);
    assert_int_equal(
        tg_policy_flush(&p, 3, 1000 * MS, 1001 * MS, 7, 200 * US, 1000 * MS + cap, NULL),
        TG_FLUSH_AGE);
}

/* An idle second counts as TG_POLICY_GAP_SAMPLE_MAX_NS: the next burst's rate shows fast. */
static void gap_recovers_after_idle(void **state)
{
    struct tg_policy p;
    uint64_t t = 1 * MS;

    (void)state;
    tg_policy_init(&p);
    for (int i = 0; i < 20; i++)
        tg_policy_arrival(&p, t += 100 * US);
    tg_policy_arrival(&p, t += 1000 * MS);
    assert_true(p.gap_ns <= 100 * US + TG_POLICY_GAP_SAMPLE_MAX_NS / 8);
    for (int i = 0; i < 40; i++)
        tg_policy_arrival(&p, t += 100 * US);
    assert_true(p.gap_ns < 200 * US);
}

/* No backlog figure (timer thread): computed once arrivals stopped for a few gaps. */
static void unknown_backlog_quiet_rule(void **state)
{
    struct tg_policy p;
    uint64_t t = 0, due = 0;

    (void)state;
    tg_policy_init(&p);
    for (int i = 0; i < 40; i++)
        tg_policy_arrival(&p, t += 100 * US);
    /* 4 x 100 us gap = 400 us > flush_us 200 us */
    assert_int_equal(tg_policy_flush(&p, 5, t - 400 * US, t, TG_POLICY_BACKLOG_UNKNOWN, 200 * US,
                                     t + 399 * US, &due),
                     TG_FLUSH_WAIT);
    assert_int_equal(due, t + 400 * US);
    assert_int_equal(tg_policy_flush(&p, 5, t - 400 * US, t, TG_POLICY_BACKLOG_UNKNOWN, 200 * US,
                                     t + 400 * US, NULL),
                     TG_FLUSH_IDLE);
    /* an average that remembers idle spells waits 4 x flush_us at most */
    for (int i = 0; i < 40; i++)
        tg_policy_arrival(&p, t += 20 * MS);
    assert_int_equal(
        tg_policy_flush(&p, 3, t, t, TG_POLICY_BACKLOG_UNKNOWN, 200 * US, t + 799 * US, NULL),
        TG_FLUSH_WAIT);
    assert_int_equal(
        tg_policy_flush(&p, 3, t, t, TG_POLICY_BACKLOG_UNKNOWN, 200 * US, t + 800 * US, NULL),
        TG_FLUSH_IDLE);
    /* a fast rate: flush_us is the floor of the quiet time (openssl speed's 8 jobs) */
    tg_policy_init(&p);
    t = 0;
    for (int i = 0; i < 40; i++)
        tg_policy_arrival(&p, t += 5 * US);
    assert_int_equal(tg_policy_flush(&p, 7, t - 30 * US, t, TG_POLICY_BACKLOG_UNKNOWN, 200 * US,
                                     t + 199 * US, NULL),
                     TG_FLUSH_WAIT);
    assert_int_equal(tg_policy_flush(&p, 7, t - 30 * US, t, TG_POLICY_BACKLOG_UNKNOWN, 200 * US,
                                     t + 200 * US, NULL),
                     TG_FLUSH_IDLE);
}

/* The adaptive choice: lone batches switch a thread to single operations, a probe that
 * finds company switches it back, lone probes space out. */
static void adaptive_switches_and_probes(void **state)
{
    struct tg_policy p;
    uint64_t t = 1000 * MS;
    int sw = 0, i;

    (void)state;
    tg_policy_init(&p);
    assert_int_equal(tg_policy_want(&p, 0, t), TG_WANT_QUEUE); /* a new thread batches */
    for (i = 0; i < 40 && sw == 0; i++)
        sw = tg_policy_after_batch(&p, &rsa, 1, 0);
    assert_int_equal(sw, -1);
    assert_true(i >= 4); /* the average moves by 1/8: a few stragglers do not flip it */
    assert_true(p.single);
    /* single operations; a request joins a waiting queue all the same */
    assert_int_equal(tg_policy_want(&p, 0, t), TG_WANT_SINGLE);
    assert_int_equal(tg_policy_want(&p, 2, t), TG_WANT_QUEUE);
    /* a probe every 32 requests, at most every 100 ms */
    int probes = 0;
    for (i = 0; i < 64; i++)
        probes += tg_policy_want(&p, 0, t += 1 * MS) == TG_WANT_PROBE;
    assert_int_equal(probes, 1);
    /* lone probes double the gap (from TG_POLICY_PROBE_NS) */
    assert_int_equal(tg_policy_after_batch(&p, &rsa, 1, 1), 0);
    assert_int_equal(p.probe_gap_ns, TG_POLICY_PROBE_NS);
    assert_int_equal(tg_policy_after_batch(&p, &rsa, 1, 1), 0);
    assert_int_equal(p.probe_gap_ns, 2 * TG_POLICY_PROBE_NS);
    for (i = 0; i < 10; i++)
        tg_policy_after_batch(&p, &rsa, 1, 1);
    assert_int_equal(p.probe_gap_ns, TG_POLICY_PROBE_MAX_NS);
    /* a probe that filled its batch: back to batching at once, probe gap reset */
    assert_int_equal(tg_policy_after_batch(&p, &rsa, 8, 1), 1);
    assert_false(p.single);
    assert_int_equal(p.probe_gap_ns, TG_POLICY_PROBE_NS);
    assert_int_equal(tg_policy_want(&p, 0, t), TG_WANT_QUEUE);
}

static void crossover_bounds(void **state)
{
    const struct tg_costs cheap = {100, 1000, 0}, none = {100, 0, 0}, waits = {1800, 420, 840};

    (void)state;
    assert_true(tg_policy_crossover(&cheap, 0) == TG_POLICY_CROSSOVER_MIN);
    assert_true(tg_policy_crossover(&none, 0) == TG_POLICY_LANES * TG_POLICY_MARGIN);
    double c0 = tg_policy_crossover(&waits, 0), c1 = tg_policy_crossover(&waits, 1);
    assert_true(c0 > 4.9 && c0 < 5.0); /* 1.15 x 1800 / 420 */
    assert_true(c1 > c0);
}

static void estimators(void **state)
{
    (void)state;
    assert_int_equal(tg_policy_floor(1000, 500), 500);
    assert_int_equal(tg_policy_floor(6400, 100000), 6501); /* rises by x/64 + 1 at most */
    assert_int_equal(tg_policy_floor(6400, 6410), 6410);
    assert_int_equal(tg_policy_ewma(800, 1600), 900);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(saturated_batches_full),
        cmocka_unit_test(idle_loop_flushes_at_once),
        cmocka_unit_test(cap_follows_rate),
        cmocka_unit_test(gap_recovers_after_idle),
        cmocka_unit_test(unknown_backlog_quiet_rule),
        cmocka_unit_test(adaptive_switches_and_probes),
        cmocka_unit_test(crossover_bounds),
        cmocka_unit_test(estimators),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
