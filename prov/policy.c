/*
 * tlsgate provider: the batching policy (see policy.h; prov/README.md explains the rule
 * and the measurements behind its constants).
 *
 * The adaptive choice. A partial batch costs as much as a full one, so batching pays only
 * when enough requests share a batch: at least crossover = (time of one 8-lane batch + the
 * share of the thread's batches that are partial x the time a partial batch's requests
 * sit idle waiting for a timer flush) / (time of one operation by the default provider)
 * of them, times TG_POLICY_MARGIN (context switches, wake-ups, the timer thread), and
 * never fewer than 1.5 (no kernel of one lane beats OpenSSL's). Per thread and operation,
 * the fill of the thread's recent batches decides: below the crossover the thread runs
 * its requests as single operations; every TG_POLICY_PROBE_EVERY requests (and at most
 * every probe gap) one is queued anyway as a probe: the application's other jobs join it
 * while it waits, and its fill shows the load. A request always joins a queue that is not
 * empty.
 *
 * The flush. A partial batch computed early costs a whole batch for a few lanes; one
 * computed late costs latency, and CPU only when the CPU idles meanwhile. So a queue
 * waits while the application's loop has other work to run (that CPU time is used
 * anyway) and is computed as soon as the loop has none; its oldest request waits at most
 * the cap, twice the time a batch takes to fill at the measured arrival rate, bounded.
 * Where the loop's backlog is unknown, a queue that no request joined for a few arrival
 * gaps (or flush_us) is computed: arrivals stopped, and waiting longer idles the CPU.
 */
#include <stddef.h>

#include "policy.h"

void tg_policy_init(struct tg_policy *p)
{
    p->single = 0;
    p->fill = TG_POLICY_LANES;
    p->partial = 0;
    p->skipped = 0;
    p->probe_ns = 0;
    p->probe_gap_ns = 0;
    p->last_ns = 0;
    p->gap_ns = 0;
}

uint64_t tg_policy_ewma(uint64_t x, uint64_t sample)
{
    return x - x / 8 + sample / 8;
}

uint64_t tg_policy_floor(uint64_t x, uint64_t sample)
{
    uint64_t up = x / 64 + 1;

    if (sample <= x)
        return sample;
    return x + (sample - x < up ? sample - x : up);
}

void tg_policy_arrival(struct tg_policy *p, uint64_t now)
{
    if (p->last_ns != 0 && now >= p->last_ns) {
        uint64_t g = now - p->last_ns;

        if (g > TG_POLICY_GAP_SAMPLE_MAX_NS)
            g = TG_POLICY_GAP_SAMPLE_MAX_NS;
        p->gap_ns = p->gap_ns == 0 ? g : tg_policy_ewma(p->gap_ns, g);
    }
    p->last_ns = now;
}

enum tg_want tg_policy_want(struct tg_policy *p, unsigned queued, uint64_t now)
{
    uint64_t gap = p->probe_gap_ns ? p->probe_gap_ns : TG_POLICY_PROBE_NS;

    if (queued > 0 || !p->single)
        return TG_WANT_QUEUE; /* join a waiting queue; or the thread batches */
    if (++p->skipped >= TG_POLICY_PROBE_EVERY && now - p->probe_ns >= gap) {
        p->skipped = 0;
        p->probe_ns = now;
        return TG_WANT_PROBE;
    }
    return TG_WANT_SINGLE;
}

double tg_policy_crossover(const struct tg_costs *c, double partial)
{
    double b = (double)c->batch_ns + partial * (double)c->flush_wait_ns;
    double s = (double)c->single_ns;
    double x = s > 0 ? b / s : (double)TG_POLICY_LANES;

    x *= TG_POLICY_MARGIN;
    return x < TG_POLICY_CROSSOVER_MIN ? TG_POLICY_CROSSOVER_MIN : x;
}

int tg_policy_after_batch(struct tg_policy *p, const struct tg_costs *c, unsigned n, int probe)
{
    int was = p->single;

    /* a probe measures the load now; other batches move the averages (by 1/8: one
     * straggler, a lone request between two full batches, must not flip the choice) */
    if (probe) {
        p->fill = (double)n;
        p->partial = n < TG_POLICY_LANES;
        if (n > 1 || p->probe_gap_ns == 0)
            p->probe_gap_ns = TG_POLICY_PROBE_NS;
        else if (p->probe_gap_ns < TG_POLICY_PROBE_MAX_NS)
            p->probe_gap_ns *= 2;
    } else {
        p->fill += ((double)n - p->fill) / 8;
        p->partial += ((n < TG_POLICY_LANES ? 1.0 : 0.0) - p->partial) / 8;
    }
    p->single = p->fill < tg_policy_crossover(c, p->partial);
    return p->single == was ? 0 : p->single ? -1 : 1;
}

uint64_t tg_policy_wait_cap(const struct tg_policy *p, uint64_t flush_ns)
{
    uint64_t lo = 4 * flush_ns > TG_POLICY_WAIT_MIN_NS ? 4 * flush_ns : TG_POLICY_WAIT_MIN_NS;
    uint64_t cap = (uint64_t)TG_POLICY_FILL_SLACK * TG_POLICY_LANES * p->gap_ns;

    if (lo > TG_POLICY_WAIT_MAX_NS)
        lo = TG_POLICY_WAIT_MAX_NS;
    return cap < lo ? lo : cap > TG_POLICY_WAIT_MAX_NS ? TG_POLICY_WAIT_MAX_NS : cap;
}

enum tg_flush tg_policy_flush(const struct tg_policy *p, unsigned n, uint64_t oldest_ns,
                              uint64_t newest_ns, long backlog, uint64_t flush_ns, uint64_t now,
                              uint64_t *due)
{
    uint64_t at = oldest_ns + tg_policy_wait_cap(p, flush_ns);

    if (n == 0)
        return TG_FLUSH_WAIT; /* nothing to compute; no deadline */
    if (n >= TG_POLICY_LANES || backlog == 0)
        return TG_FLUSH_IDLE;
    if (backlog == TG_POLICY_BACKLOG_UNKNOWN) {
        /* arrivals stopped: no request joined for a few gaps (or the timer period) */
        uint64_t quiet = (uint64_t)TG_POLICY_GAP_QUIET * p->gap_ns;

        /* the gap average remembers idle spells: never wait past 4 periods for it */
        if (quiet > 4 * flush_ns)
            quiet = 4 * flush_ns;
        if (quiet < flush_ns)
            quiet = flush_ns;
        if (newest_ns + quiet < at)
            at = newest_ns + quiet;
        if (now >= newest_ns + quiet)
            return TG_FLUSH_IDLE;
    }
    if (now >= oldest_ns + tg_policy_wait_cap(p, flush_ns))
        return TG_FLUSH_AGE;
    if (due != NULL)
        *due = at;
    return TG_FLUSH_WAIT;
}
