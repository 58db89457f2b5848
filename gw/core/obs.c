/* see gw/core/obs.h */
#include "core/obs.h"

#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COLLECT_TRIES 1000 /* fold_seq retries; a fold takes microseconds */

typedef unsigned long long ull;

/* ---- buffer ---- */

void gw_obuf_printf(gw_obuf_t *b, const char *fmt, ...)
{
    if (b->failed)
        return;
    for (int pass = 0; pass < 2; pass++) {
        size_t room = b->cap - b->len;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->data ? b->data + b->len : NULL, b->data ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->failed = 1;
            return;
        }
        if ((size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        if (pass == 1)
            break;
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->len <= (size_t)n) {
            if (cap > ((size_t)-1) / 2)
                goto fail;
            cap *= 2;
        }
        char *p = realloc(b->data, cap);
        if (!p)
            goto fail;
        b->data = p;
        b->cap = cap;
    }
fail:
    if (b->data && b->len < b->cap)
        b->data[b->len] = '\0';
    b->failed = 1;
}

/* ---- names ---- */

/* names[i] for 0 <= i < n, else "other" */
static const char *name_in(const char *const *names, int n, int i)
{
    return i >= 0 && i < n ? names[i] : "other";
}

const char *gw_obs_proto_name(int proto)
{
    static const char *const names[GW_HS_PROTOS] = {"TLSv1.2", "TLSv1.3", "other"};
    return name_in(names, GW_HS_PROTOS, proto);
}

const char *gw_obs_group_name(int group)
{
    static const char *const names[GW_HS_GROUPS] = {"X25519MLKEM768", "SecP256r1MLKEM768",
                                                    "X25519",         "P-256",
                                                    "P-384",          "P-521",
                                                    "X448",           "ffdhe",
                                                    "other",          "none"};
    return name_in(names, GW_HS_GROUPS, group);
}

const char *gw_obs_key_name(int key)
{
    static const char *const names[GW_HS_KEYS] = {"rsa", "ecdsa", "other", "none"};
    return name_in(names, GW_HS_KEYS, key);
}

static const char *const builtin_alg_names[TLSGATE_ALG_COUNT] = {
    "rsa2048", "rsa3072",       "rsa4096",    "ecdsa_p256", "ecdh_p256",   "keygen_p256",
    "x25519",  "keygen_x25519", "ecdsa_p384", "ecdh_p384",  "keygen_p384", "mlkem768",
};

const char *gw_obs_alg_name(const tlsgate_metrics_t *m, size_t a, char *buf, size_t cap)
{
    if (!buf || cap == 0)
        return "";
    const char *n = m && a < TLSGATE_ALG_COUNT ? m->alg[a].name : "";
    size_t len = strnlen(n, sizeof(m->alg[0].name));
    int ok = len > 0 && len < sizeof(m->alg[0].name) && len < cap;
    for (size_t i = 0; ok && i < len; i++) {
        char ch = n[i];
        ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
             ch == '_';
    }
    if (ok) {
        memcpy(buf, n, len);
        buf[len] = '\0';
    } else if (a < TLSGATE_ALG_COUNT) {
        snprintf(buf, cap, "%s", builtin_alg_names[a]);
    } else {
        snprintf(buf, cap, "alg%zu", a);
    }
    return buf;
}

/* ---- snapshot ---- */

static uint64_t ld(const uint64_t *w)
{
    return __atomic_load_n(w, __ATOMIC_RELAXED);
}

static int64_t lds(const int64_t *w)
{
    return __atomic_load_n(w, __ATOMIC_RELAXED);
}

/* Fields of the same name: the process-wide counters (gw_stats_t, gw_obs_snapshot_t), the
 * async job counters (gw_retired_t, gw_worker_stats_t, gw_obs_worker_t, the snapshot) and
 * the live gauges summed over the workers (gw_obs_worker_t, the snapshot). */
#define STAT_COUNTERS(X)                                                                           \
    X(accepted)                                                                                    \
    X(handled)                                                                                     \
    X(requests)                                                                                    \
    X(handshakes)                                                                                  \
    X(handshakes_failed)                                                                           \
    X(handshakes_resumed)                                                                          \
    X(tls12)                                                                                       \
    X(tls13)                                                                                       \
    X(reloads)                                                                                     \
    X(redis_errors)                                                                                \
    X(sess_hits)                                                                                   \
    X(sess_misses)                                                                                 \
    X(sess_stores)                                                                                 \
    X(worker_restarts)
#define ASYNC_COUNTERS(X) X(resumed) X(drained) X(want_async_job)
#define WORKER_GAUGES(X) X(reading) X(writing) X(waiting) X(paused)

static void read_once(const gw_stats_t *st, gw_obs_snapshot_t *out, gw_obs_worker_t *w,
                      uint32_t n_slots)
{
#define LOAD(f) out->f = ld(&st->f);
#define LOAD_RETIRED(f) out->f = ld(&st->retired.f);
#define ADD_CUR(f) out->f += cur.f;
    STAT_COUNTERS(LOAD)
    for (int i = 0; i < 6; i++)
        out->responses[i] = ld(&st->responses[i]);
    out->active = out->reading = out->writing = out->waiting = out->paused = 0;
    out->retired_workers = ld(&st->retired.workers);
    ASYNC_COUNTERS(LOAD_RETIRED)
    memset(&out->total, 0, sizeof(out->total));
    gw_obs_add(&out->total, &st->retired.obs);
    out->n_workers = 0;
    for (uint32_t i = 0; i < n_slots; i++) {
        const gw_worker_stats_t *ws = &st->workers[i];
        int32_t pid = __atomic_load_n(&ws->pid, __ATOMIC_RELAXED);
        if (pid <= 0)
            continue;
        /* one read of the slot serves both the totals and the per-worker row */
        gw_obs_worker_t cur = {
            .slot = (int)i,
            .pid = pid,
            .generation = __atomic_load_n(&ws->generation, __ATOMIC_RELAXED),
            .conns = lds(&ws->conns),
            .reading = lds(&ws->reading),
            .writing = lds(&ws->writing),
            .waiting = lds(&ws->waiting),
            .paused = lds(&ws->paused),
            .resumed = ld(&ws->resumed),
            .drained = ld(&ws->drained),
            .want_async_job = ld(&ws->want_async_job),
        };
        gw_obs_add(&cur.obs, &ws->obs);
        out->active += cur.conns;
        WORKER_GAUGES(ADD_CUR)
        ASYNC_COUNTERS(ADD_CUR)
        gw_obs_add(&out->total, &cur.obs);
        if (w)
            w[out->n_workers++] = cur;
    }
#undef LOAD
#undef LOAD_RETIRED
#undef ADD_CUR
}

int gw_obs_collect(const gw_stats_t *st, gw_obs_snapshot_t *out)
{
    memset(out, 0, sizeof(*out));
    if (!st)
        return -1;
    uint32_t n_slots = __atomic_load_n(&st->n_slots, __ATOMIC_ACQUIRE);
    if (n_slots > GW_STATS_MAX_WORKERS)
        n_slots = GW_STATS_MAX_WORKERS;
    int rc = 0;
    gw_obs_worker_t *w = NULL;
    if (n_slots) {
        w = calloc(n_slots, sizeof(*w));
        if (!w)
            rc = -1;
    }
    out->workers = w;
    for (int tries = 0;; tries++) {
        uint32_t s1 = __atomic_load_n(&st->fold_seq, __ATOMIC_ACQUIRE);
        if ((s1 & 1) && tries < COLLECT_TRIES) {
            sched_yield();
            continue;
        }
        read_once(st, out, w, n_slots);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        uint32_t s2 = __atomic_load_n(&st->fold_seq, __ATOMIC_RELAXED);
        if (s1 == s2 && !(s1 & 1)) {
            out->consistent = 1;
            break;
        }
        if (tries >= COLLECT_TRIES)
            break;
    }
    return rc;
}

void gw_obs_snapshot_free(gw_obs_snapshot_t *s)
{
    if (!s)
        return;
    free(s->workers);
    s->workers = NULL;
    s->n_workers = 0;
}

/* ---- shared helpers ---- */

static uint64_t hist_count(const tlsgate_hist_t *h)
{
    uint64_t c = 0;
    for (int i = 0; i < TLSGATE_HIST_BUCKETS; i++)
        c += h->bucket[i];
    return c;
}

/* µs as decimal seconds without trailing zeros: 0, 0.000001, 1.5, 1073.741823 */
static const char *secs(uint64_t us, char *buf, size_t cap)
{
    uint64_t s = us / 1000000, f = us % 1000000;
    if (!f) {
        snprintf(buf, cap, "%llu", (ull)s);
        return buf;
    }
    char frac[8];
    snprintf(frac, sizeof(frac), "%06llu", (ull)f);
    size_t n = 6;
    while (n > 1 && frac[n - 1] == '0')
        n--;
    frac[n] = '\0';
    snprintf(buf, cap, "%llu.%s", (ull)s, frac);
    return buf;
}

/* ---- JSON ---- */

static void json_hist(gw_obuf_t *b, const char *key, const tlsgate_hist_t *h)
{
    int last = -1;
    for (int i = 0; i < TLSGATE_HIST_BUCKETS; i++)
        if (h->bucket[i])
            last = i;
    gw_obuf_printf(b, "\"%s\":{\"count\":%llu,\"sum\":%llu,\"buckets\":[", key, (ull)hist_count(h),
                   (ull)h->sum);
    for (int i = 0; i <= last; i++) {
        if (i == TLSGATE_HIST_BUCKETS - 1)
            gw_obuf_printf(b, "%s[null,%llu]", i ? "," : "", (ull)h->bucket[i]);
        else
            gw_obuf_printf(b, "%s[%llu,%llu]", i ? "," : "", (ull)tlsgate_hist_upper((unsigned)i),
                           (ull)h->bucket[i]);
    }
    gw_obuf_printf(b, "]}");
}

static void json_by_type(gw_obuf_t *b, const gw_obs_t *o)
{
    gw_obuf_printf(b, "\"by_type\":[");
    int first = 1;
    for (int p = 0; p < GW_HS_PROTOS; p++)
        for (int k = 0; k < GW_HS_KEYS; k++)
            for (int r = 0; r < 2; r++) {
                gw_obuf_printf(b,
                               "%s{\"protocol\":\"%s\",\"key_type\":\"%s\",\"resumed\":%s,"
                               "\"count\":%llu}",
                               first ? "" : ",", gw_obs_proto_name(p), gw_obs_key_name(k),
                               r ? "true" : "false", (ull)o->hs[p][k][r]);
                first = 0;
            }
    gw_obuf_printf(b, "],\"by_group\":{");
    for (int g = 0; g < GW_HS_GROUPS; g++)
        gw_obuf_printf(b, "%s\"%s\":%llu", g ? "," : "", gw_obs_group_name(g), (ull)o->hs_group[g]);
    gw_obuf_printf(b, "}");
}

static void json_provider(gw_obuf_t *b, const gw_obs_t *o)
{
    if (!o->prov_valid) {
        gw_obuf_printf(b, "\"provider\":null");
        return;
    }
    gw_obuf_printf(b, "\"provider\":{\"alg\":{");
    for (size_t a = 0; a < TLSGATE_ALG_COUNT; a++) {
        const tlsgate_alg_metrics_t *m = &o->prov.alg[a];
        char name[32];
        gw_obuf_printf(b,
                       "%s\"%s\":{\"requests\":%llu,\"requests_async\":%llu,\"single\":%llu,"
                       "\"fallbacks\":%llu,\"pool_hits\":%llu,\"pool_misses\":%llu,"
                       "\"batches\":%llu,\"fill\":[",
                       a ? "," : "", gw_obs_alg_name(&o->prov, a, name, sizeof(name)),
                       (ull)m->requests, (ull)m->requests_async, (ull)m->single, (ull)m->fallbacks,
                       (ull)m->pool_hits, (ull)m->pool_misses, (ull)m->batches);
        for (int k = 0; k < 8; k++)
            gw_obuf_printf(b, "%s%llu", k ? "," : "", (ull)m->fill[k]);
        gw_obuf_printf(b,
                       "],\"flush\":{\"full\":%llu,\"poll\":%llu,\"age\":%llu,\"timer\":%llu,"
                       "\"resume\":%llu},\"mode\":{\"to_single\":%llu,\"to_batch\":%llu},"
                       "\"probes\":{\"queued\":%llu,\"joined\":%llu},",
                       (ull)m->flush_full, (ull)m->flush_poll, (ull)m->flush_age,
                       (ull)m->flush_timer, (ull)m->flush_resume, (ull)m->mode_single,
                       (ull)m->mode_batch, (ull)m->probes, (ull)m->probes_joined);
        json_hist(b, "queue_wait_us", &m->queue_wait_us);
        gw_obuf_printf(b, ",");
        json_hist(b, "batch_us", &m->batch_us);
        gw_obuf_printf(b, "}");
    }
    gw_obuf_printf(b,
                   "},\"record_cipher\":{\"impl\":\"aes-gcm\",\"records\":%llu,\"bytes\":%llu,"
                   "\"tag_failures\":%llu}}",
                   (ull)o->prov.gcm_records, (ull)o->prov.gcm_bytes, (ull)o->prov.gcm_tag_failures);
}

static void json_obs(gw_obuf_t *b, const gw_obs_t *o)
{
    json_hist(b, "handshake_us", &o->hs_us);
    gw_obuf_printf(b, ",");
    json_hist(b, "async_pause_us", &o->async_pause_us);
    gw_obuf_printf(b, ",");
    json_provider(b, o);
}

int gw_obs_format_json(const gw_obs_snapshot_t *s, gw_obuf_t *b)
{
    if (!s || !b)
        return -1;
    gw_obuf_printf(b,
                   "{\"connections\":{\"active\":%lld,\"reading\":%lld,\"writing\":%lld,"
                   "\"waiting\":%lld,\"accepted\":%llu,\"handled\":%llu},\"requests\":%llu,"
                   "\"responses\":{\"1xx\":%llu,\"2xx\":%llu,\"3xx\":%llu,\"4xx\":%llu,"
                   "\"5xx\":%llu},",
                   (long long)s->active, (long long)s->reading, (long long)s->writing,
                   (long long)s->waiting, (ull)s->accepted, (ull)s->handled, (ull)s->requests,
                   (ull)s->responses[1], (ull)s->responses[2], (ull)s->responses[3],
                   (ull)s->responses[4], (ull)s->responses[5]);
    gw_obuf_printf(b,
                   "\"handshakes\":{\"total\":%llu,\"failed\":%llu,\"resumed\":%llu,"
                   "\"TLSv1.2\":%llu,\"TLSv1.3\":%llu,",
                   (ull)s->handshakes, (ull)s->handshakes_failed, (ull)s->handshakes_resumed,
                   (ull)s->tls12, (ull)s->tls13);
    json_by_type(b, &s->total);
    gw_obuf_printf(b, "},\"redis_errors\":%llu", (ull)s->redis_errors);
    gw_obuf_printf(b, ",\"session_cache\":{\"hits\":%llu,\"misses\":%llu,\"stores\":%llu}",
                   (ull)s->sess_hits, (ull)s->sess_misses, (ull)s->sess_stores);
    gw_obuf_printf(b,
                   ",\"reloads\":%llu,\"worker_restarts\":%llu,\"async\":{\"paused\":%lld,"
                   "\"resumed\":%llu,\"drained\":%llu,\"want_async_job\":%llu},"
                   "\"workers_live\":%zu,\"workers_retired\":%llu,\"consistent\":%s,"
                   "\"histogram_unit\":\"us\",",
                   (ull)s->reloads, (ull)s->worker_restarts, (long long)s->paused, (ull)s->resumed,
                   (ull)s->drained, (ull)s->want_async_job, s->n_workers, (ull)s->retired_workers,
                   s->consistent ? "true" : "false");
    json_obs(b, &s->total);
    gw_obuf_printf(b, ",\"workers\":[");
    for (size_t i = 0; i < s->n_workers; i++) {
        const gw_obs_worker_t *w = &s->workers[i];
        gw_obuf_printf(b,
                       "%s{\"slot\":%d,\"pid\":%d,\"generation\":%u,\"connections\":%lld,"
                       "\"reading\":%lld,\"writing\":%lld,\"waiting\":%lld,\"async\":{"
                       "\"paused\":%lld,\"resumed\":%llu,\"drained\":%llu,"
                       "\"want_async_job\":%llu},\"handshakes\":{",
                       i ? "," : "", w->slot, (int)w->pid, (unsigned)w->generation,
                       (long long)w->conns, (long long)w->reading, (long long)w->writing,
                       (long long)w->waiting, (long long)w->paused, (ull)w->resumed,
                       (ull)w->drained, (ull)w->want_async_job);
        json_by_type(b, &w->obs);
        gw_obuf_printf(b, "},");
        json_obs(b, &w->obs);
        gw_obuf_printf(b, "}");
    }
    gw_obuf_printf(b, "]}\n");
    return b->failed ? -1 : 0;
}

/* ---- Prometheus text format 0.0.4 ---- */

static void prom_family(gw_obuf_t *b, const char *name, const char *type, const char *help)
{
    gw_obuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* labels: "" or `k="v",...` without braces */
static void prom_hist_us(gw_obuf_t *b, const char *name, const char *labels,
                         const tlsgate_hist_t *h)
{
    const char *sep = labels[0] ? "," : "";
    char le[40];
    uint64_t cum = 0;
    for (unsigned i = 0; i < TLSGATE_HIST_BUCKETS - 1; i++) {
        cum += h->bucket[i];
        gw_obuf_printf(b, "%s_bucket{%s%sle=\"%s\"} %llu\n", name, labels, sep,
                       secs(tlsgate_hist_upper(i), le, sizeof(le)), (ull)cum);
    }
    cum += h->bucket[TLSGATE_HIST_BUCKETS - 1];
    gw_obuf_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep, (ull)cum);
    if (labels[0]) {
        gw_obuf_printf(b, "%s_sum{%s} %s\n%s_count{%s} %llu\n", name, labels,
                       secs(h->sum, le, sizeof(le)), name, labels, (ull)cum);
    } else {
        gw_obuf_printf(b, "%s_sum %s\n%s_count %llu\n", name, secs(h->sum, le, sizeof(le)), name,
                       (ull)cum);
    }
}

static void prom_counter(gw_obuf_t *b, const char *name, const char *help, uint64_t v)
{
    prom_family(b, name, "counter", help);
    gw_obuf_printf(b, "%s %llu\n", name, (ull)v);
}

/* one sample per algorithm of the uint64_t at byte offset off of tlsgate_alg_metrics_t */
static void prom_alg_counter(gw_obuf_t *b, const gw_obs_t *o, const char *name, const char *help,
                             size_t off)
{
    prom_family(b, name, "counter", help);
    for (size_t a = 0; a < TLSGATE_ALG_COUNT; a++) {
        char an[32];
        uint64_t v;
        memcpy(&v, (const char *)&o->prov.alg[a] + off, sizeof(v));
        gw_obuf_printf(b, "%s{alg=\"%s\"} %llu\n", name,
                       gw_obs_alg_name(&o->prov, a, an, sizeof(an)), (ull)v);
    }
}

/* one histogram per algorithm: the tlsgate_hist_t at byte offset off of tlsgate_alg_metrics_t */
static void prom_alg_hist(gw_obuf_t *b, const gw_obs_t *o, const char *name, const char *help,
                          size_t off)
{
    prom_family(b, name, "histogram", help);
    for (size_t a = 0; a < TLSGATE_ALG_COUNT; a++) {
        char an[32], labels[64];
        snprintf(labels, sizeof(labels), "alg=\"%s\"",
                 gw_obs_alg_name(&o->prov, a, an, sizeof(an)));
        prom_hist_us(b, name, labels,
                     (const tlsgate_hist_t *)(const void *)((const char *)&o->prov.alg[a] + off));
    }
}

int gw_obs_format_prometheus(const gw_obs_snapshot_t *s, gw_obuf_t *b)
{
    if (!s || !b)
        return -1;
    const gw_obs_t *o = &s->total;
    prom_family(b, "tlsgate_connections", "gauge", "Open client connections by state.");
    gw_obuf_printf(b,
                   "tlsgate_connections{state=\"active\"} %lld\n"
                   "tlsgate_connections{state=\"reading\"} %lld\n"
                   "tlsgate_connections{state=\"writing\"} %lld\n"
                   "tlsgate_connections{state=\"waiting\"} %lld\n",
                   (long long)s->active, (long long)s->reading, (long long)s->writing,
                   (long long)s->waiting);
    prom_counter(b, "tlsgate_connections_accepted_total", "Connections accepted.", s->accepted);
    prom_counter(b, "tlsgate_connections_handled_total", "Connections handled.", s->handled);
    prom_counter(b, "tlsgate_requests_total", "HTTP requests.", s->requests);
    prom_family(b, "tlsgate_responses_total", "counter", "HTTP responses by status class.");
    for (int i = 1; i <= 5; i++)
        gw_obuf_printf(b, "tlsgate_responses_total{code=\"%dxx\"} %llu\n", i, (ull)s->responses[i]);
    prom_family(b, "tlsgate_handshakes_total", "counter",
                "Completed TLS handshakes by protocol, key type of the certificate used "
                "(none: resumed) and resumption.");
    for (int p = 0; p < GW_HS_PROTOS; p++)
        for (int k = 0; k < GW_HS_KEYS; k++)
            for (int r = 0; r < 2; r++)
                gw_obuf_printf(b,
                               "tlsgate_handshakes_total{protocol=\"%s\",key_type=\"%s\","
                               "resumed=\"%s\"} %llu\n",
                               gw_obs_proto_name(p), gw_obs_key_name(k), r ? "true" : "false",
                               (ull)o->hs[p][k][r]);
    prom_family(b, "tlsgate_handshakes_by_group_total", "counter",
                "Completed TLS handshakes by key exchange group (X25519MLKEM768 and "
                "SecP256r1MLKEM768: hybrid post-quantum; none: no (EC)DHE).");
    for (int g = 0; g < GW_HS_GROUPS; g++)
        gw_obuf_printf(b, "tlsgate_handshakes_by_group_total{group=\"%s\"} %llu\n",
                       gw_obs_group_name(g), (ull)o->hs_group[g]);
    prom_counter(b, "tlsgate_handshakes_failed_total",
                 "TLS handshakes that failed or were "
                 "abandoned.",
                 s->handshakes_failed);
    prom_counter(b, "tlsgate_reloads_total", "Successful configuration reloads.", s->reloads);
    prom_counter(b, "tlsgate_redis_errors_total",
                 "Redis failures (connects failed, "
                 "connections lost, replies past the timeout): the handshakes went on "
                 "without Redis.",
                 s->redis_errors);
    prom_counter(b, "tlsgate_session_cache_hits_total",
                 "Session lookups in the shared or "
                 "Redis session cache that found the session.",
                 s->sess_hits);
    prom_counter(b, "tlsgate_session_cache_misses_total",
                 "Session lookups in the shared or "
                 "Redis session cache that found none (or timed out).",
                 s->sess_misses);
    prom_counter(b, "tlsgate_session_cache_stores_total",
                 "Sessions written to the shared or "
                 "Redis session cache.",
                 s->sess_stores);
    prom_counter(b, "tlsgate_worker_restarts_total",
                 "Workers respawned after an unexpected "
                 "exit.",
                 s->worker_restarts);
    prom_family(b, "tlsgate_workers", "gauge", "Live worker processes.");
    gw_obuf_printf(b, "tlsgate_workers %zu\n", s->n_workers);
    prom_counter(b, "tlsgate_workers_retired_total",
                 "Worker processes that exited (their "
                 "counters are kept).",
                 s->retired_workers);
    prom_family(b, "tlsgate_async_jobs_paused", "gauge", "Async TLS jobs paused now.");
    gw_obuf_printf(b, "tlsgate_async_jobs_paused %lld\n", (long long)s->paused);
    prom_counter(b, "tlsgate_async_resumed_total", "Paused async jobs resumed.", s->resumed);
    prom_counter(b, "tlsgate_async_drained_total",
                 "Connections closed while their async job "
                 "was paused.",
                 s->drained);
    prom_counter(b, "tlsgate_async_want_job_total",
                 "SSL_ERROR_WANT_ASYNC_JOB: the async job "
                 "pool was exhausted.",
                 s->want_async_job);
    prom_family(b, "tlsgate_handshake_seconds", "histogram",
                "Time from TCP accept to TLS handshake completion.");
    prom_hist_us(b, "tlsgate_handshake_seconds", "", &o->hs_us);
    prom_family(b, "tlsgate_async_pause_seconds", "histogram",
                "Time an async TLS job stayed paused (WANT_ASYNC to resume).");
    prom_hist_us(b, "tlsgate_async_pause_seconds", "", &o->async_pause_us);
    if (!o->prov_valid)
        return b->failed ? -1 : 0;

    static const struct {
        const char *name, *help;
        size_t off;
    } per_alg[] = {
        {"tlsgate_crypto_requests_total", "Private-key operations seen by the provider.",
         offsetof(tlsgate_alg_metrics_t, requests)},
        {"tlsgate_crypto_requests_async_total",
         "Private-key operations inside an async job (could be batched).",
         offsetof(tlsgate_alg_metrics_t, requests_async)},
        {"tlsgate_crypto_single_total",
         "Private-key operations run at once as one default-provider operation.",
         offsetof(tlsgate_alg_metrics_t, single)},
        {"tlsgate_crypto_fallbacks_total",
         "Operations the provider took but handed to the default provider (a key it cannot batch, an input the kernel refused).",
         offsetof(tlsgate_alg_metrics_t, fallbacks)},
        {"tlsgate_pool_hits_total", "Operations served from an idle-time precomputed pool.",
         offsetof(tlsgate_alg_metrics_t, pool_hits)},
        {"tlsgate_pool_misses_total", "Operations that found their precomputed pool empty.",
         offsetof(tlsgate_alg_metrics_t, pool_misses)},
        {"tlsgate_batches_total", "Batch kernel calls.", offsetof(tlsgate_alg_metrics_t, batches)},
    };
    for (size_t k = 0; k < sizeof(per_alg) / sizeof(per_alg[0]); k++)
        prom_alg_counter(b, o, per_alg[k].name, per_alg[k].help, per_alg[k].off);
    char an[32];
    prom_family(b, "tlsgate_batch_flush_total", "counter",
                "Batch kernel calls by what triggered them: full, poll (the loop had no other "
                "work), age (the oldest request waited the cap), timer (arrivals stopped), "
                "resume (a job resumed early).");
    for (size_t a = 0; a < TLSGATE_ALG_COUNT; a++) {
        const tlsgate_alg_metrics_t *m = &o->prov.alg[a];
        const uint64_t v[5] = {m->flush_full, m->flush_poll, m->flush_age, m->flush_timer,
                               m->flush_resume};
        static const char *const why[5] = {"full", "poll", "age", "timer", "resume"};
        gw_obs_alg_name(&o->prov, a, an, sizeof(an));
        for (int k = 0; k < 5; k++)
            gw_obuf_printf(b, "tlsgate_batch_flush_total{alg=\"%s\",reason=\"%s\"} %llu\n", an,
                           why[k], (ull)v[k]);
    }
    prom_family(b, "tlsgate_adaptive_switches_total", "counter",
                "Adaptive mode switches of a thread: to single operations, back to batching.");
    for (size_t a = 0; a < TLSGATE_ALG_COUNT; a++) {
        const tlsgate_alg_metrics_t *m = &o->prov.alg[a];
        gw_obs_alg_name(&o->prov, a, an, sizeof(an));
        gw_obuf_printf(b,
                       "tlsgate_adaptive_switches_total{alg=\"%s\",to=\"single\"} %llu\n"
                       "tlsgate_adaptive_switches_total{alg=\"%s\",to=\"batch\"} %llu\n",
                       an, (ull)m->mode_single, an, (ull)m->mode_batch);
    }
    prom_alg_counter(b, o, "tlsgate_adaptive_probes_total",
                     "Requests queued as probes of the load while a thread ran single operations.",
                     offsetof(tlsgate_alg_metrics_t, probes));
    prom_alg_counter(b, o, "tlsgate_adaptive_probes_joined_total",
                     "Probes whose batch had company (more than one lane).",
                     offsetof(tlsgate_alg_metrics_t, probes_joined));
    prom_family(b, "tlsgate_record_cipher_records_total", "counter",
                "TLS records sealed or opened by the provider's AES-GCM (intel-ipsec-mb).");
    gw_obuf_printf(b, "tlsgate_record_cipher_records_total %llu\n", (ull)o->prov.gcm_records);
    prom_family(b, "tlsgate_record_cipher_bytes_total", "counter",
                "Payload bytes of those records.");
    gw_obuf_printf(b, "tlsgate_record_cipher_bytes_total %llu\n", (ull)o->prov.gcm_bytes);
    prom_family(b, "tlsgate_record_cipher_tag_failures_total", "counter",
                "Records the provider's AES-GCM refused: the tag did not match.");
    gw_obuf_printf(b, "tlsgate_record_cipher_tag_failures_total %llu\n",
                   (ull)o->prov.gcm_tag_failures);
    prom_family(b, "tlsgate_batch_size", "histogram", "Requests per batch kernel call (1..8).");
    for (size_t a = 0; a < TLSGATE_ALG_COUNT; a++) {
        const tlsgate_alg_metrics_t *m = &o->prov.alg[a];
        gw_obs_alg_name(&o->prov, a, an, sizeof(an));
        uint64_t cum = 0, sum = 0;
        for (int k = 0; k < 8; k++) {
            cum += m->fill[k];
            sum += (uint64_t)(k + 1) * m->fill[k];
            gw_obuf_printf(b, "tlsgate_batch_size_bucket{alg=\"%s\",le=\"%d\"} %llu\n", an, k + 1,
                           (ull)cum);
        }
        gw_obuf_printf(b,
                       "tlsgate_batch_size_bucket{alg=\"%s\",le=\"+Inf\"} %llu\n"
                       "tlsgate_batch_size_sum{alg=\"%s\"} %llu\n"
                       "tlsgate_batch_size_count{alg=\"%s\"} %llu\n",
                       an, (ull)cum, an, (ull)sum, an, (ull)cum);
    }
    prom_alg_hist(b, o, "tlsgate_queue_wait_seconds",
                  "Per request: queued in the provider until its batch was computed.",
                  offsetof(tlsgate_alg_metrics_t, queue_wait_us));
    prom_alg_hist(b, o, "tlsgate_batch_compute_seconds", "Per batch: time in the batch kernel.",
                  offsetof(tlsgate_alg_metrics_t, batch_us));
    return b->failed ? -1 : 0;
}
