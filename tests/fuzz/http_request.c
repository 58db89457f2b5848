// fuzz-sources: gw/http/parser.c
/*
 * Fuzz target for the HTTP/1.1 request parser. The input is bytes received on a
 * connection: it is parsed as a request head under several limit sets and at several
 * prefix lengths; when a head parses, the rest goes through the chunked decoder (whole
 * and in random splits, which must agree), the path through gw_http_normalize_path() and
 * the Range value through gw_http_parse_range(). The raw input also goes to each of those
 * directly. Invariants are checked with CHECK(), which aborts also in NDEBUG builds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

#include "http/parser.h"

#define CHUNK_SPLIT_CHECK(cond) CHECK(cond)
#include "chunk_split.h"

static const gw_http_limits_t limit_sets[] = {
    {8192, 8192, 65536, GW_HTTP_MAX_HEADERS},
    {64, 48, 256, 4},
    {12, 6, 40, 1},
};

/* [p, p+n) lies inside [lo, hi). */
static int inside(const char *p, size_t n, const char *lo, const char *hi)
{
    return p >= lo && p <= hi && n <= (size_t)(hi - p);
}

static int is_ws(char c)
{
    return c == ' ' || c == '\t';
}

/* A copy of data[0..n) in a buffer of exactly n bytes, so ASan sees any read past n. */
static void check_request(const gw_http_request_t *r, const char *buf, size_t head,
                          const gw_http_limits_t *lim)
{
    const char *end = buf + head;

    CHECK(inside(r->method_str, r->method_len, buf, end) && r->method_len > 0);
    CHECK(inside(r->target, r->target_len, buf, end) && r->target_len > 0);
    CHECK(inside(r->path, r->path_len, buf, end) && r->path_len > 0);
    CHECK(r->path[0] == '/' || (r->path_len == 1 && r->path[0] == '*'));
    CHECK(!r->query || inside(r->query, r->query_len, buf, end));
    CHECK(r->version_minor == 0 || r->version_minor == 1);
    CHECK(r->n_headers <= GW_HTTP_MAX_HEADERS && r->n_headers <= lim->max_headers);
    for (size_t i = 0; i < r->n_headers; i++) {
        const gw_http_header_t *h = &r->headers[i];
        CHECK(inside(h->name, h->name_len, buf, end) && h->name_len > 0);
        CHECK(inside(h->value, h->value_len, buf, end));
        CHECK(h->name_len <= lim->max_field_line);
        CHECK(!memchr(h->name, ':', h->name_len));
        CHECK(!memchr(h->value, '\r', h->value_len) && !memchr(h->value, '\n', h->value_len));
        CHECK(h->value_len == 0 || (!is_ws(h->value[0]) && !is_ws(h->value[h->value_len - 1])));
        (void)gw_http_token_eq(h->name, h->name_len, "host");
    }
    CHECK(!r->host || inside(r->host, r->host_len, buf, end));
    CHECK(r->version_minor == 0 || r->host);
    CHECK(r->keep_alive == 0 || r->keep_alive == 1);
    CHECK(!r->chunked || (!r->has_content_length && r->version_minor == 1));
    CHECK(!r->has_content_length || r->content_length <= (uint64_t)INT64_MAX);
    CHECK(!r->expect_continue || r->version_minor == 1);
    CHECK(!r->range || inside(r->range, r->range_len, buf, end));
    CHECK(!r->if_none_match || inside(r->if_none_match, r->if_none_match_len, buf, end));
    CHECK(!r->if_modified_since ||
          inside(r->if_modified_since, r->if_modified_since_len, buf, end));
    CHECK(!r->user_agent || inside(r->user_agent, r->user_agent_len, buf, end));
    CHECK(!r->referer || inside(r->referer, r->referer_len, buf, end));
}

static void check_normalize(const char *path, size_t n)
{
    char *small = malloc(n + 1), *large = malloc(n + 64);
    CHECK(small && large);
    long a = gw_http_normalize_path(path, n, small, n + 1);
    long b = gw_http_normalize_path(path, n, large, n + 64);
    /* path_len + 1 bytes always suffice. */
    CHECK(a == b);
    CHECK(a == -1 || (a > 0 && (size_t)a <= n));
    if (a > 0) {
        CHECK(memcmp(small, large, (size_t)a + 1) == 0);
        CHECK(small[0] == '/' && strlen(small) == (size_t)a);
        CHECK(!strstr(small, "//") && !strstr(small, "/./") && !strstr(small, "/../"));
        CHECK(!(a >= 2 && strcmp(small + a - 2, "/.") == 0));
        CHECK(!(a >= 3 && strcmp(small + a - 3, "/..") == 0));
        /* Normalising again changes nothing when nothing is left to decode. */
        if (!memchr(small, '%', (size_t)a)) {
            long c = gw_http_normalize_path(small, (size_t)a, large, n + 64);
            CHECK(c == a && memcmp(small, large, (size_t)a + 1) == 0);
        }
    }
    free(small);
    free(large);
}

static void check_range(const char *v, size_t n)
{
    static const uint64_t sizes[] = {0, 1, 100, UINT64_MAX};
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        uint64_t first = 0, last = 0;
        int r = gw_http_parse_range(v, n, sizes[k], &first, &last);
        CHECK(r == 1 || r == 0 || r == -416);
        if (r == 1)
            CHECK(first <= last && last < sizes[k]);
    }
}

static void check_chunked(const char *in, size_t n, uint32_t seed)
{
    static const uint64_t max_bodies[] = {0, 16};
    char *a = malloc(n + 1), *b = malloc(n + 1);
    CHECK(a && b);
    for (size_t m = 0; m < sizeof(max_bodies) / sizeof(max_bodies[0]); m++) {
        struct chunk_out ra = chunk_split_run(in, n, 0, 16, max_bodies[m], a);
        uint32_t seeds[] = {1, seed | 2, seed * 7 + 3};
        for (size_t s = 0; s < sizeof(seeds) / sizeof(seeds[0]); s++) {
            if (seeds[s] == 1 && n > 2048)
                continue; /* byte by byte is slow on big inputs; the others cover it */
            struct chunk_out rb = chunk_split_run(in, n, seeds[s], 16, max_bodies[m], b);
            CHECK(ra.status == rb.status);
            CHECK(ra.len == rb.len && memcmp(a, b, ra.len) == 0);
            CHECK(ra.status != 1 || ra.consumed == rb.consumed);
        }
    }
    free(a);
    free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static gw_http_request_t req;
    char *buf = fuzz_dup_exact(data, size);
    uint32_t seed = size ? data[0] * 31u + data[size - 1] : 5;

    for (size_t l = 0; l < sizeof(limit_sets) / sizeof(limit_sets[0]); l++) {
        const gw_http_limits_t *lim = &limit_sets[l];
        int r = gw_http_parse_request(buf, size, lim, &req);
        CHECK(r >= 0 || r == -400 || r == -414 || r == -431 || r == -501 || r == -505);
        CHECK(r <= 0 || (size_t)r <= size);
        CHECK(r <= 0 || (size_t)r <= lim->max_header_block);
        CHECK(r >= 0 || strcmp(gw_http_reason(-r), "Unknown") != 0);
        if (r > 0)
            check_request(&req, buf, (size_t)r, lim);

        /* Prefixes: more bytes never change an answer already given. */
        size_t cuts[] = {size / 2, size ? size - 1 : 0, r > 0 ? (size_t)r - 1 : 0,
                         r > 0 ? (size_t)r : 0, seed % (size + 1)};
        for (size_t c = 0; c < sizeof(cuts) / sizeof(cuts[0]); c++) {
            if (cuts[c] >= size)
                continue;
            char *pre = fuzz_dup_exact(data, cuts[c]);
            int rp = gw_http_parse_request(pre, cuts[c], lim, &req);
            CHECK(rp == 0 || rp == r);
            if (r > 0 && cuts[c] < (size_t)r)
                CHECK(rp == 0);
            free(pre);
        }

        if (r > 0 && l == 0) {
            gw_http_parse_request(buf, size, lim, &req); /* the prefixes overwrote req */
            if (req.path[0] == '/')
                check_normalize(req.path, req.path_len);
            if (req.range)
                check_range(req.range, req.range_len);
            check_chunked(buf + r, size - (size_t)r, seed);
        }
    }

    /* The raw input as each of the other parsers' input. */
    check_normalize(buf, size);
    check_range(buf, size);
    check_chunked(buf, size, seed);
    free(buf);
    return 0;
}
