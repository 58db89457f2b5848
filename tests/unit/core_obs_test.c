/*
 * Unit tests of the observability pages' code (gw/core/obs.c, gw/core/stats.c): the
 * growing buffer, slot allocation and the master's fold into the retired total, the
 * snapshot (live slots + retired, the fold seqlock), the provider snapshot's baseline,
 * and the JSON and Prometheus renderings of hand-made snapshots.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit_test.h"

#include "core/obs.h"
#include "core/stats.h"

static gw_stats_t *new_stats(void)
{
    gw_stats_t *st = calloc(1, sizeof(*st));
    assert_non_null(st);
    return st;
}

static void fill_metrics(tlsgate_metrics_t *m, uint64_t scale)
{
    memset(m, 0, sizeof(*m));
    m->version = TLSGATE_METRICS_VERSION;
    m->n_alg = TLSGATE_ALG_COUNT;
    static const char *const names[] = {"rsa2048",    "rsa3072",     "rsa4096",     "ecdsa_p256",
                                        "ecdh_p256",  "keygen_p256", "x25519",      "keygen_x25519",
                                        "ecdsa_p384", "ecdh_p384",   "keygen_p384", "mlkem768"};
    for (size_t a = 0; a < TLSGATE_ALG_COUNT; a++) {
        tlsgate_alg_metrics_t *x = &m->alg[a];
        snprintf(x->name, sizeof(x->name), "%s", names[a]);
        x->requests = 10 * scale;
        x->requests_async = 8 * scale;
        x->single = 2 * scale;
        x->batches = 3 * scale;
        x->fill[0] = 1 * scale; /* 1 x 1 request */
        x->fill[3] = 1 * scale; /* 1 x 4 */
        x->fill[7] = 1 * scale; /* 1 x 8: 13 requests in 3 batches */
        x->queue_wait_us.bucket[tlsgate_hist_bucket(100)] = 13 * scale;
        x->queue_wait_us.count = 13 * scale;
        x->queue_wait_us.sum = 1300 * scale;
        x->batch_us.bucket[tlsgate_hist_bucket(50)] = 3 * scale;
        x->batch_us.count = 3 * scale;
        x->batch_us.sum = 150 * scale;
    }
}

/* ---- buffer ---- */

static void test_obuf_grows(void **state)
{
    gw_obuf_t b = {0};
    for (int i = 0; i < 5000; i++)
        gw_obuf_printf(&b, "%04d,", i % 10000);
    assert_false(b.failed);
    assert_int_equal(b.len, 5000 * 5);
    assert_memory_equal(b.data, "0000,0001,", 10);
    assert_memory_equal(b.data + b.len - 5, "4999,", 5);
    assert_int_equal(b.data[b.len], '\0');
    char big[70000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    gw_obuf_printf(&b, "%s", big);
    assert_false(b.failed);
    assert_int_equal(b.len, 5000 * 5 + sizeof(big) - 1);
    free(b.data);
    gw_obuf_t f = {.failed = 1};
    gw_obuf_printf(&f, "ignored");
    assert_int_equal(f.len, 0);
    assert_null(f.data);
}

/* ---- slots, fold, snapshot ---- */

static void test_slots_and_retire(void **state)
{
    gw_stats_t *st = new_stats();
    int a = gw_stats_alloc_slot(st, 0), b = gw_stats_alloc_slot(st, 0);
    assert_int_equal(a, 0);
    assert_int_equal(b, 1);
    assert_int_equal(st->n_slots, 2);
    assert_int_equal(st->workers[a].pid, -1); /* reserved: not live yet */
    st->workers[a].pid = 100;
    st->workers[b].pid = 200;

    gw_worker_stats_t *saved = gw_wstats;
    gw_wstats = &st->workers[a];
    gw_stats_handshake(GW_HS_TLS13, GW_HS_KEY_ECDSA, 0, 1500);
    gw_stats_handshake(GW_HS_TLS13, GW_HS_KEY_ECDSA, 0, 2500);
    gw_stats_handshake(GW_HS_TLS12, GW_HS_KEY_NONE, 1, 300);
    gw_stats_async_pause(40);
    gw_wstats = &st->workers[b];
    gw_stats_handshake(GW_HS_TLS12, GW_HS_KEY_RSA, 0, 0);
    gw_stats_handshake(99, -5, 7, 1); /* out of range: other, other, resumed */
    gw_stats_handshake_group(GW_HS_G_X25519MLKEM768);
    gw_stats_handshake_group(GW_HS_G_X25519MLKEM768);
    gw_stats_handshake_group(GW_HS_G_X25519);
    gw_stats_handshake_group(77); /* out of range: other */
    gw_wstats = saved;
    st->workers[a].resumed = 5;
    st->workers[a].conns = 3;

    gw_obs_snapshot_t s;
    assert_int_equal(gw_obs_collect(st, &s), 0);
    assert_true(s.consistent);
    assert_int_equal(s.n_workers, 2);
    assert_int_equal(s.active, 3);
    assert_int_equal(s.resumed, 5);
    assert_int_equal(s.total.hs[GW_HS_TLS13][GW_HS_KEY_ECDSA][0], 2);
    assert_int_equal(s.total.hs[GW_HS_TLS12][GW_HS_KEY_NONE][1], 1);
    assert_int_equal(s.total.hs[GW_HS_TLS12][GW_HS_KEY_RSA][0], 1);
    assert_int_equal(s.total.hs[GW_HS_PROTO_OTHER][GW_HS_KEY_OTHER][1], 1);
    assert_int_equal(s.total.hs_group[GW_HS_G_X25519MLKEM768], 2);
    assert_int_equal(s.total.hs_group[GW_HS_G_X25519], 1);
    assert_int_equal(s.total.hs_group[GW_HS_G_OTHER], 1);
    assert_string_equal(gw_obs_group_name(GW_HS_G_X25519MLKEM768), "X25519MLKEM768");
    assert_string_equal(gw_obs_group_name(GW_HS_G_NONE), "none");
    assert_string_equal(gw_obs_group_name(-1), "other");
    assert_int_equal(s.total.hs_us.count, 5);
    assert_int_equal(s.total.hs_us.sum, 1500 + 2500 + 300 + 0 + 1);
    assert_int_equal(s.total.hs_us.bucket[0], 1);
    assert_int_equal(s.total.hs_us.bucket[tlsgate_hist_bucket(1500)], 1);
    assert_int_equal(s.total.async_pause_us.count, 1);
    assert_int_equal(s.workers[0].pid, 100);
    assert_int_equal(s.workers[0].obs.hs_us.count, 3);
    gw_obs_snapshot_free(&s);

    /* worker a exits: its counters move to retired, the totals stay */
    gw_stats_retire_slot(st, a);
    assert_int_equal(st->workers[a].pid, 0);
    assert_int_equal(st->workers[a].obs.hs_group[GW_HS_G_X25519MLKEM768], 0);
    assert_int_equal(st->workers[a].obs.hs_us.count, 0);
    assert_int_equal(st->fold_seq, 2);
    assert_int_equal(gw_obs_collect(st, &s), 0);
    assert_int_equal(s.n_workers, 1);
    assert_int_equal(s.retired_workers, 1);
    assert_int_equal(s.active, 0); /* gauges are not retired */
    assert_int_equal(s.resumed, 5);
    assert_int_equal(s.total.hs_us.count, 5);
    assert_int_equal(s.total.hs[GW_HS_TLS13][GW_HS_KEY_ECDSA][0], 2);
    gw_obs_snapshot_free(&s);

    /* the slot is reused, the high-water mark stays; bad slots are ignored */
    assert_int_equal(gw_stats_alloc_slot(st, 1), a);
    assert_int_equal(st->workers[a].generation, 1);
    assert_int_equal(st->n_slots, 2);
    gw_stats_retire_slot(st, -1);
    gw_stats_retire_slot(st, GW_STATS_MAX_WORKERS);
    gw_stats_retire_slot(NULL, 0);
    /* a reserved slot whose fork failed is not a retired worker */
    gw_stats_retire_slot(st, a);
    assert_int_equal(st->retired.workers, 1);
    free(st);
}

static void test_collect_survives_a_stuck_fold(void **state)
{
    gw_stats_t *st = new_stats();
    int a = gw_stats_alloc_slot(st, 0);
    st->workers[a].pid = 10;
    st->fold_seq = 7; /* odd forever: a master that died while folding */
    gw_obs_snapshot_t s;
    assert_int_equal(gw_obs_collect(st, &s), 0);
    assert_false(s.consistent);
    assert_int_equal(s.n_workers, 1);
    gw_obs_snapshot_free(&s);
    gw_obs_snapshot_free(NULL);
    assert_int_equal(gw_obs_collect(NULL, &s), -1);
    free(st);
}

static void test_provider_baseline_and_fold(void **state)
{
    gw_stats_t *st = new_stats();
    int a = gw_stats_alloc_slot(st, 0);
    st->workers[a].pid = 10;
    static tlsgate_metrics_t base, now;
    fill_metrics(&base, 1);
    fill_metrics(&now, 3);
    now.alg[2].single = 0; /* below its base (a provider reset): taken as is */
    gw_stats_store_provider(&st->workers[a], &now, &base);
    const tlsgate_alg_metrics_t *x = &st->workers[a].obs.prov.alg[0];
    assert_int_equal(st->workers[a].obs.prov_valid, 1);
    assert_string_equal(x->name, "rsa2048");
    assert_int_equal(x->requests, 20);
    assert_int_equal(x->batches, 6);
    assert_int_equal(x->fill[7], 2);
    assert_int_equal(x->queue_wait_us.count, 26);
    assert_int_equal(st->workers[a].obs.prov.alg[2].single, 0);
    gw_stats_retire_slot(st, a);
    int b = gw_stats_alloc_slot(st, 1);
    st->workers[b].pid = 11;
    gw_stats_store_provider(&st->workers[b], &base, NULL);
    gw_obs_snapshot_t s;
    assert_int_equal(gw_obs_collect(st, &s), 0);
    assert_int_equal(s.total.prov_valid, 1);
    assert_int_equal(s.total.prov.alg[0].requests, 30);
    assert_int_equal(s.total.prov.alg[7].batch_us.sum, 450);
    assert_string_equal(s.total.prov.alg[7].name, "keygen_x25519");
    gw_obs_snapshot_free(&s);
    free(st);
}

/* ---- rendering ---- */

static gw_obs_snapshot_t *sample_snapshot(int with_provider)
{
    static gw_obs_snapshot_t s;
    static gw_obs_worker_t w[1];
    memset(&s, 0, sizeof(s));
    memset(w, 0, sizeof(w));
    s.accepted = 12;
    s.handled = 12;
    s.requests = 20;
    s.handshakes = 4;
    s.responses[2] = 19;
    s.responses[4] = 1;
    s.active = 2;
    s.reading = 1;
    s.writing = 1;
    s.consistent = 1;
    s.total.hs[GW_HS_TLS13][GW_HS_KEY_ECDSA][0] = 3;
    s.total.hs[GW_HS_TLS12][GW_HS_KEY_NONE][1] = 1;
    uint64_t vals[] = {0, 1, 900, 1100000};
    for (size_t i = 0; i < 4; i++) {
        s.total.hs_us.bucket[tlsgate_hist_bucket(vals[i])]++;
        s.total.hs_us.sum += vals[i];
    }
    s.total.hs_us.count = 4;
    s.total.async_pause_us.bucket[TLSGATE_HIST_BUCKETS - 1] = 1; /* >= 2^30 µs */
    s.total.async_pause_us.sum = (uint64_t)1 << 31;
    if (with_provider) {
        fill_metrics(&s.total.prov, 1);
        s.total.prov_valid = 1;
        memcpy(s.total.prov.alg[1].name, "bad name!\"{}", 13); /* not a label value */
        memset(s.total.prov.alg[2].name, 'z', sizeof(s.total.prov.alg[2].name)); /* no NUL */
    }
    w[0].slot = 3;
    w[0].pid = 4242;
    w[0].generation = 2;
    w[0].obs = s.total;
    s.workers = w;
    s.n_workers = 1;
    return &s;
}

/* one line of text, or NULL */
static int has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)) != NULL; p++)
        if ((p == text || p[-1] == '\n') && p[n] == '\n')
            return 1;
    return 0;
}

/*
 * Every string of want[0..n) stands in text t: as a whole line when lines is 1 (has_line),
 * anywhere when it is 0. Each missing one is printed, then the test fails.
 */
static void assert_all_in(const char *t, const char *const *want, size_t n, int lines)
{
    int missing = 0;
    for (size_t k = 0; k < n; k++) {
        if (lines ? has_line(t, want[k]) : strstr(t, want[k]) != NULL)
            continue;
        print_message("missing %s: %s\n", lines ? "line" : "text", want[k]);
        missing++;
    }
    assert_int_equal(missing, 0);
}

static void test_prometheus(void **state)
{
    gw_obuf_t b = {0};
    assert_int_equal(gw_obs_format_prometheus(sample_snapshot(1), &b), 0);
    static const char *const want[] = {
        "# TYPE tlsgate_handshakes_total counter",
        "tlsgate_handshakes_total{protocol=\"TLSv1.3\",key_type=\"ecdsa\",resumed=\"false\"} 3",
        "tlsgate_handshakes_total{protocol=\"TLSv1.2\",key_type=\"none\",resumed=\"true\"} 1",
        "# TYPE tlsgate_handshakes_by_group_total counter",
        "tlsgate_handshakes_by_group_total{group=\"X25519MLKEM768\"} 0",
        "tlsgate_connections{state=\"active\"} 2",
        "tlsgate_responses_total{code=\"4xx\"} 1",
        "tlsgate_connections_accepted_total 12",
        /* histogram: le in seconds, exact inclusive bounds, cumulative, +Inf == _count */
        "# TYPE tlsgate_handshake_seconds histogram",
        "tlsgate_handshake_seconds_bucket{le=\"0\"} 1",
        "tlsgate_handshake_seconds_bucket{le=\"0.000001\"} 2",
        "tlsgate_handshake_seconds_bucket{le=\"0.000511\"} 2",
        "tlsgate_handshake_seconds_bucket{le=\"0.001023\"} 3",
        "tlsgate_handshake_seconds_bucket{le=\"2.097151\"} 4",
        "tlsgate_handshake_seconds_bucket{le=\"1073.741823\"} 4",
        "tlsgate_handshake_seconds_bucket{le=\"+Inf\"} 4",
        "tlsgate_handshake_seconds_sum 1.100901",
        "tlsgate_handshake_seconds_count 4",
        "tlsgate_async_pause_seconds_bucket{le=\"1073.741823\"} 0",
        "tlsgate_async_pause_seconds_bucket{le=\"+Inf\"} 1",
        "tlsgate_async_pause_seconds_sum 2147.483648",
        /* provider: batch sizes 1..8, sum of sizes, count of batches */
        "tlsgate_batch_size_bucket{alg=\"rsa2048\",le=\"1\"} 1",
        "tlsgate_batch_size_bucket{alg=\"rsa2048\",le=\"3\"} 1",
        "tlsgate_batch_size_bucket{alg=\"rsa2048\",le=\"4\"} 2",
        "tlsgate_batch_size_bucket{alg=\"rsa2048\",le=\"8\"} 3",
        "tlsgate_batch_size_bucket{alg=\"rsa2048\",le=\"+Inf\"} 3",
        "tlsgate_batch_size_sum{alg=\"rsa2048\"} 13",
        "tlsgate_batch_size_count{alg=\"rsa2048\"} 3",
        "tlsgate_crypto_requests_total{alg=\"x25519\"} 10",
        "tlsgate_queue_wait_seconds_count{alg=\"ecdsa_p256\"} 13",
        "tlsgate_queue_wait_seconds_sum{alg=\"ecdsa_p256\"} 0.0013",
        "tlsgate_batch_compute_seconds_bucket{alg=\"x25519\",le=\"0.000063\"} 3",
        /* names that are not label-safe fall back to the built-in ones */
        "tlsgate_crypto_requests_total{alg=\"rsa3072\"} 10",
        "tlsgate_crypto_requests_total{alg=\"rsa4096\"} 10",
    };
    const char *t = b.data;
    assert_all_in(t, want, sizeof(want) / sizeof(want[0]), 1);
    assert_null(strstr(t, "bad name"));
    /* every family has HELP then TYPE, and every line ends with a newline */
    assert_int_equal(t[b.len - 1], '\n');
    for (const char *p = t; (p = strstr(p, "# TYPE ")) != NULL; p++)
        assert_true(p > t && strncmp(p - 1, "\n", 1) == 0);
    size_t helps = 0, types = 0;
    for (const char *p = t; (p = strstr(p, "# HELP ")) != NULL; p++)
        helps++;
    for (const char *p = t; (p = strstr(p, "# TYPE ")) != NULL; p++)
        types++;
    assert_int_equal(helps, types);
    free(b.data);

    /* without a provider snapshot: no provider families at all */
    gw_obuf_t c = {0};
    assert_int_equal(gw_obs_format_prometheus(sample_snapshot(0), &c), 0);
    assert_null(strstr(c.data, "tlsgate_batch_size"));
    assert_null(strstr(c.data, "tlsgate_crypto_"));
    assert_non_null(strstr(c.data, "tlsgate_handshake_seconds_count 4\n"));
    free(c.data);
    assert_int_equal(gw_obs_format_prometheus(NULL, &c), -1);
}

/* brackets balance outside strings, no trailing commas */
static void assert_json_shape(const char *t)
{
    char stack[64];
    int depth = 0, in_str = 0;
    char prev = 0;
    for (const char *p = t; *p; p++) {
        if (in_str) {
            if (*p == '\\')
                p++;
            else if (*p == '"')
                in_str = 0;
            continue;
        }
        if (*p == '"')
            in_str = 1;
        else if (*p == '{' || *p == '[')
            stack[depth++] = *p;
        else if (*p == '}' || *p == ']') {
            assert_true(depth > 0);
            assert_int_equal(stack[--depth], *p == '}' ? '{' : '[');
            assert_true(prev != ',');
        }
        assert_true(depth < 64);
        if (*p != ' ' && *p != '\n')
            prev = *p;
    }
    assert_int_equal(depth, 0);
    assert_false(in_str);
}

static void test_json(void **state)
{
    gw_obuf_t b = {0};
    assert_int_equal(gw_obs_format_json(sample_snapshot(1), &b), 0);
    static const char *const want[] = {
        "\"handshakes\":{\"total\":4,",
        "{\"protocol\":\"TLSv1.3\",\"key_type\":\"ecdsa\",\"resumed\":false,\"count\":3}",
        /* non-cumulative buckets with inclusive µs bounds, trailing empty ones left out */
        "\"handshake_us\":{\"count\":4,\"sum\":1100901,\"buckets\":[[0,1],[1,1],[3,0],",
        "[1023,1],",
        "[2097151,1]]}",
        /* the unbounded last bucket */
        "[1073741823,0],[null,1]]}",
        "\"rsa2048\":{\"requests\":10,\"requests_async\":8,\"single\":2,\"fallbacks\":0,"
        "\"pool_hits\":0,\"pool_misses\":0,\"batches\":3,\"fill\":[1,0,0,1,0,0,0,1],",
        "\"workers\":[{\"slot\":3,\"pid\":4242,\"generation\":2,",
    };
    const char *t = b.data;
    assert_json_shape(t);
    assert_all_in(t, want, sizeof(want) / sizeof(want[0]), 0);
    assert_null(strstr(t, "bad name"));
    free(b.data);

    gw_obuf_t c = {0};
    assert_int_equal(gw_obs_format_json(sample_snapshot(0), &c), 0);
    assert_json_shape(c.data);
    assert_non_null(strstr(c.data, "\"provider\":null"));
    assert_null(strstr(c.data, "rsa2048"));
    free(c.data);
    assert_int_equal(gw_obs_format_json(sample_snapshot(0), NULL), -1);
}

static void test_names(void **state)
{
    char buf[32];
    assert_string_equal(gw_obs_proto_name(GW_HS_TLS12), "TLSv1.2");
    assert_string_equal(gw_obs_proto_name(-1), "other");
    assert_string_equal(gw_obs_key_name(GW_HS_KEY_NONE), "none");
    assert_string_equal(gw_obs_key_name(42), "other");
    assert_string_equal(gw_obs_alg_name(NULL, 0, buf, sizeof(buf)), "rsa2048");
    assert_string_equal(gw_obs_alg_name(NULL, 6, buf, sizeof(buf)), "x25519");
    assert_string_equal(gw_obs_alg_name(NULL, 99, buf, sizeof(buf)), "alg99");
    assert_string_equal(gw_obs_alg_name(NULL, 0, NULL, 0), "");
    static tlsgate_metrics_t m;
    snprintf(m.alg[3].name, sizeof(m.alg[3].name), "My_Alg9");
    assert_string_equal(gw_obs_alg_name(&m, 3, buf, sizeof(buf)), "My_Alg9");
    assert_string_equal(gw_obs_alg_name(&m, 4, buf, sizeof(buf)), "ecdh_p256"); /* empty */
    char tiny[4];
    assert_string_equal(gw_obs_alg_name(&m, 3, tiny, sizeof(tiny)), "ecd"); /* cut, builtin */
}

int main(void)
{
    return UNIT_RUN(cmocka_unit_test(test_obuf_grows), cmocka_unit_test(test_slots_and_retire),
                    cmocka_unit_test(test_collect_survives_a_stuck_fold),
                    cmocka_unit_test(test_provider_baseline_and_fold),
                    cmocka_unit_test(test_prometheus), cmocka_unit_test(test_json),
                    cmocka_unit_test(test_names));
}
