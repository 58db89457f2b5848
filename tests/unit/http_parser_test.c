/*
 * Unit tests for gw/http/parser.c: request heads (every status the parser returns, and
 * the positive cases), the chunked decoder, path normalisation, Range, reason phrases.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit_test.h"

#include "http/parser.h"

#define CHUNK_SPLIT_CHECK(cond) assert_true(cond)
#include "../fuzz/chunk_split.h"

static const gw_http_limits_t big = {
    .max_request_line = 8192,
    .max_field_line = 8192,
    .max_header_block = 65536,
    .max_headers = GW_HTTP_MAX_HEADERS,
};

static gw_http_request_t req;

static int parse_with(const char *s, const gw_http_limits_t *lim)
{
    return gw_http_parse_request(s, strlen(s), lim, &req);
}

static int parse(const char *s)
{
    return parse_with(s, &big);
}

/* The bytes [p, p+n) equal the string s. */
static int span_is(const char *p, size_t n, const char *s)
{
    return p && n == strlen(s) && memcmp(p, s, n) == 0;
}

/*
 * Every proper prefix of s parses to 0, or to the same status as the whole of s: more
 * bytes never change an answer already given, and a complete head is never reported
 * early.
 */
static void check_prefixes(const char *s, const gw_http_limits_t *lim)
{
    size_t n = strlen(s);
    gw_http_request_t *r = malloc(sizeof(*r));
    assert_non_null(r);
    int full = gw_http_parse_request(s, n, lim, r);
    for (size_t k = 0; k < n; k++) {
        int got = gw_http_parse_request(s, k, lim, r);
        if (got != 0 && got != full) {
            fprintf(stderr, "prefix %zu of \"%s\": %d, whole: %d\n", k, s, got, full);
            fail();
        }
        if (full > 0 && (size_t)full > k)
            assert_int_equal(got, 0);
    }
    free(r);
}

/* ------------------------------------------------------------------------------------- */
/* Positive cases                                                                        */
/* ------------------------------------------------------------------------------------- */

static void test_get(void **state)
{
    const char *s = "GET /index.html HTTP/1.1\r\n"
                    "Host: example.com\r\n"
                    "User-Agent: curl/8.0\r\n"
                    "Accept: */*\r\n"
                    "\r\n";
    assert_int_equal(parse(s), (int)strlen(s));
    assert_int_equal(req.method, GW_HTTP_GET);
    assert_true(span_is(req.method_str, req.method_len, "GET"));
    assert_true(span_is(req.target, req.target_len, "/index.html"));
    assert_true(span_is(req.path, req.path_len, "/index.html"));
    assert_null(req.query);
    assert_int_equal(req.version_minor, 1);
    assert_int_equal(req.n_headers, 3);
    assert_true(span_is(req.headers[0].name, req.headers[0].name_len, "Host"));
    assert_true(span_is(req.headers[2].value, req.headers[2].value_len, "*/*"));
    assert_true(span_is(req.host, req.host_len, "example.com"));
    assert_true(span_is(req.user_agent, req.user_agent_len, "curl/8.0"));
    assert_int_equal(req.keep_alive, 1);
    assert_int_equal(req.chunked, 0);
    assert_int_equal(req.has_content_length, 0);
    assert_int_equal(req.expect_continue, 0);
    assert_null(req.range);
    assert_null(req.referer);
    check_prefixes(s, &big);
}

static void test_higher_minor_version_is_1_1(void **state)
{
    /* RFC 9110 §2.5: HTTP/1.2 is processed as the highest 1.x we implement */
    const char *s = "GET / HTTP/1.2\r\nHost: a\r\n\r\n";
    assert_int_equal(parse(s), (int)strlen(s));
    assert_int_equal(req.version_minor, 1);
    assert_int_equal(req.keep_alive, 1);
    const char *nohost = "GET / HTTP/1.9\r\n\r\n";
    assert_int_equal(parse(nohost), -400); /* 1.1 rules: Host is required */
}

static void test_head_post(void **state)
{
    const char *h = "HEAD / HTTP/1.1\r\nHost: a\r\n\r\n";
    assert_int_equal(parse(h), (int)strlen(h));
    assert_int_equal(req.method, GW_HTTP_HEAD);

    const char *p = "POST /form HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello";
    int r = parse(p);
    assert_int_equal(r, (int)strlen(p) - 5);
    assert_int_equal(req.method, GW_HTTP_POST);
    assert_int_equal(req.has_content_length, 1);
    assert_int_equal(req.content_length, 5);
    assert_memory_equal(p + r, "hello", 5);
    check_prefixes(p, &big);
}

static void test_methods(void **state)
{
    static const struct {
        const char *m;
        int id;
    } cases[] = {
        {"GET", GW_HTTP_GET},     {"HEAD", GW_HTTP_HEAD},      {"POST", GW_HTTP_POST},
        {"PUT", GW_HTTP_PUT},     {"DELETE", GW_HTTP_DELETE},  {"OPTIONS", GW_HTTP_OPTIONS},
        {"PATCH", GW_HTTP_PATCH}, {"TRACE", GW_HTTP_TRACE},    {"CONNECT", GW_HTTP_CONNECT},
        {"get", GW_HTTP_OTHER},   {"PROPFIND", GW_HTTP_OTHER}, {"X-Y!#$%&'*+.^_`|~1", 0},
    };
    char buf[128];
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        snprintf(buf, sizeof(buf), "%s / HTTP/1.1\r\nHost: a\r\n\r\n", cases[k].m);
        assert_int_equal(parse(buf), (int)strlen(buf));
        assert_int_equal(req.method, cases[k].id);
        assert_true(span_is(req.method_str, req.method_len, cases[k].m));
    }
}

static void test_query(void **state)
{
    assert_true(parse("GET /a/b?x=1&y=2?z HTTP/1.1\r\nHost: a\r\n\r\n") > 0);
    assert_true(span_is(req.path, req.path_len, "/a/b"));
    assert_true(span_is(req.query, req.query_len, "x=1&y=2?z"));
    assert_true(span_is(req.target, req.target_len, "/a/b?x=1&y=2?z"));

    assert_true(parse("GET /? HTTP/1.1\r\nHost: a\r\n\r\n") > 0);
    assert_true(span_is(req.path, req.path_len, "/"));
    assert_non_null(req.query);
    assert_int_equal(req.query_len, 0);
}

static void test_absolute_form(void **state)
{
    const char *s = "GET http://example.org:8080/p/q?x=1 HTTP/1.1\r\nHost: other\r\n\r\n";
    assert_int_equal(parse(s), (int)strlen(s));
    assert_true(span_is(req.host, req.host_len, "example.org:8080"));
    assert_true(span_is(req.path, req.path_len, "/p/q"));
    assert_true(span_is(req.query, req.query_len, "x=1"));

    /* No path: "/" that lies inside the buffer. */
    s = "GET HTTPS://[::1]:443 HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_int_equal(parse(s), (int)strlen(s));
    assert_true(span_is(req.host, req.host_len, "[::1]:443"));
    assert_true(span_is(req.path, req.path_len, "/"));
    assert_true(req.path >= s && req.path < s + strlen(s));
    assert_null(req.query);

    s = "GET http://h?q HTTP/1.1\r\nHost: h\r\n\r\n";
    assert_int_equal(parse(s), (int)strlen(s));
    assert_true(span_is(req.host, req.host_len, "h"));
    assert_true(span_is(req.path, req.path_len, "/"));
    assert_true(span_is(req.query, req.query_len, "q"));

    /* HTTP/1.0 needs no Host; the authority provides it. */
    assert_true(parse("GET http://h/x HTTP/1.0\r\n\r\n") > 0);
    assert_true(span_is(req.host, req.host_len, "h"));
}

static void test_asterisk_form(void **state)
{
    assert_true(parse("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n") > 0);
    assert_int_equal(req.method, GW_HTTP_OPTIONS);
    assert_true(span_is(req.path, req.path_len, "*"));
    assert_int_equal(parse("GET * HTTP/1.1\r\nHost: a\r\n\r\n"), -400);
    assert_int_equal(parse("OPTIONS *x HTTP/1.1\r\nHost: a\r\n\r\n"), -400);
}

static void test_keep_alive(void **state)
{
    static const struct {
        const char *s;
        int keep;
    } cases[] = {
        {"GET / HTTP/1.1\r\nHost: a\r\n\r\n", 1},
        {"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", 0},
        {"GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, CLOSE\r\n\r\n", 0},
        {"GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\n\r\n", 1},
        {"GET / HTTP/1.1\r\nHost: a\r\nConnection: closed\r\n\r\n", 1},
        {"GET / HTTP/1.0\r\n\r\n", 0},
        {"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", 1},
        {"GET / HTTP/1.0\r\nConnection: ,te , keep-alive,\r\n\r\n", 1},
        {"GET / HTTP/1.0\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n", 0},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        assert_int_equal(parse(cases[k].s), (int)strlen(cases[k].s));
        assert_int_equal(req.keep_alive, cases[k].keep);
    }
}

static void test_expect(void **state)
{
    assert_true(parse("PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n") > 0);
    assert_int_equal(req.expect_continue, 1);
    assert_true(parse("PUT / HTTP/1.1\r\nHost: a\r\nexpect: 100-Continue\r\n\r\n") > 0);
    assert_int_equal(req.expect_continue, 1);
    assert_true(parse("PUT / HTTP/1.1\r\nHost: a\r\nExpect: something\r\n\r\n") > 0);
    assert_int_equal(req.expect_continue, 0);
    /* RFC 9110 §10.1.1: ignored in HTTP/1.0 */
    assert_true(parse("PUT / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n") > 0);
    assert_int_equal(req.expect_continue, 0);
}

static void test_interpreted_fields(void **state)
{
    const char *s = "GET / HTTP/1.1\r\n"
                    "Host: a\r\n"
                    "Range: bytes=0-99\r\n"
                    "If-None-Match: \"abc\", W/\"def\"\r\n"
                    "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
                    "Referer: https://a/b\r\n"
                    "USER-AGENT: ua\r\n"
                    "If-None-Match: \"second\"\r\n"
                    "\r\n";
    assert_int_equal(parse(s), (int)strlen(s));
    assert_true(span_is(req.range, req.range_len, "bytes=0-99"));
    assert_true(span_is(req.if_none_match, req.if_none_match_len, "\"abc\", W/\"def\""));
    assert_true(
        span_is(req.if_modified_since, req.if_modified_since_len, "Sun, 06 Nov 1994 08:49:37 GMT"));
    assert_true(span_is(req.referer, req.referer_len, "https://a/b"));
    assert_true(span_is(req.user_agent, req.user_agent_len, "ua"));

    /* A repeated Range is ignored altogether. */
    assert_true(parse("GET / HTTP/1.1\r\nHost: a\r\nRange: bytes=0-1\r\nRange: bytes=2-3\r\n\r\n") >
                0);
    assert_null(req.range);
}

static void test_ows_and_values(void **state)
{
    assert_true(parse("GET / HTTP/1.1\r\nHost:a\r\nX-A: \t a b \t \r\nX-B:\r\nX-C:   \r\n"
                      "X-D: caf\xc3\xa9\r\n\r\n") > 0);
    assert_int_equal(req.n_headers, 5);
    assert_true(span_is(req.headers[0].value, req.headers[0].value_len, "a"));
    assert_true(span_is(req.headers[1].value, req.headers[1].value_len, "a b"));
    assert_int_equal(req.headers[2].value_len, 0);
    assert_int_equal(req.headers[3].value_len, 0);
    assert_true(span_is(req.headers[4].value, req.headers[4].value_len, "caf\xc3\xa9"));
}

static void test_line_endings(void **state)
{
    /* Bare LF accepted, mixed with CRLF. */
    const char *s = "GET / HTTP/1.1\nHost: a\r\nX: y\n\n";
    assert_int_equal(parse(s), (int)strlen(s));
    assert_int_equal(req.n_headers, 2);
    check_prefixes(s, &big);
    /* Leading empty lines are skipped and counted in the head. */
    s = "\r\n\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n";
    assert_int_equal(parse(s), (int)strlen(s));
    assert_true(span_is(req.method_str, req.method_len, "GET"));
    check_prefixes(s, &big);
    assert_int_equal(parse("\r\n"), 0);
    assert_int_equal(parse("\r"), 0);
    assert_int_equal(parse("\rGET / HTTP/1.1\r\nHost: a\r\n\r\n"), -400);
}

static void test_pipelined(void **state)
{
    const char *s = "GET /one HTTP/1.1\r\nHost: a\r\n\r\n"
                    "GET /two HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n";
    int r1 = parse(s);
    assert_int_equal(r1, (int)strlen("GET /one HTTP/1.1\r\nHost: a\r\n\r\n"));
    assert_true(span_is(req.path, req.path_len, "/one"));
    assert_int_equal(req.keep_alive, 1);
    int r2 = parse(s + r1);
    assert_int_equal(r1 + r2, (int)strlen(s));
    assert_true(span_is(req.path, req.path_len, "/two"));
    assert_true(span_is(req.host, req.host_len, "b"));
    assert_int_equal(req.keep_alive, 0);
    assert_true(req.path > s + r1);
}

static void test_incremental(void **state)
{
    static const char *const cases[] = {
        "GET / HTTP/1.1\r\nHost: a\r\n\r\n",
        "POST /up?x HTTP/1.1\r\nHost: a:1\r\nTransfer-Encoding: chunked\r\n\r\n",
        "GET http://h/ HTTP/1.0\nConnection: keep-alive\n\n",
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const char *s = cases[k];
        size_t n = strlen(s);
        char *copy = malloc(n);
        assert_non_null(copy);
        /* Byte by byte into a buffer holding exactly what arrived so far. */
        for (size_t got = 1; got <= n; got++) {
            memcpy(copy, s, got);
            int r = gw_http_parse_request(copy, got, &big, &req);
            assert_int_equal(r, got < n ? 0 : (int)n);
        }
        free(copy);
    }
}

/* ------------------------------------------------------------------------------------- */
/* Error statuses                                                                        */
/* ------------------------------------------------------------------------------------- */

struct bad_case {
    const char *s;
    int status;
    const char *why;
};

static const struct bad_case bad_cases[] = {
    /* request line */
    {"GET  / HTTP/1.1\r\nHost: a\r\n\r\n", -400, "two SP after method"},
    {"GET /  HTTP/1.1\r\nHost: a\r\n\r\n", -400, "two SP after target"},
    {"GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n", -400, "HTAB separator"},
    {" GET / HTTP/1.1\r\nHost: a\r\n\r\n", -400, "leading SP"},
    {"GET\r\nHost: a\r\n\r\n", -400, "method only"},
    {"GET /\r\n\r\n", -400, "HTTP/0.9 request"},
    {"G(T / HTTP/1.1\r\nHost: a\r\n\r\n", -400, "non-token method"},
    {"GET /a#f HTTP/1.1\r\nHost: a\r\n\r\n", -400, "fragment in target"},
    {"GET /a\x01 HTTP/1.1\r\nHost: a\r\n\r\n", -400, "CTL in target"},
    {"GET /a\x7f HTTP/1.1\r\nHost: a\r\n\r\n", -400, "DEL in target"},
    {"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n", -400, "non-ASCII in target"},
    {"GET a/b HTTP/1.1\r\nHost: a\r\n\r\n", -400, "relative target"},
    {"GET ftp://h/ HTTP/1.1\r\nHost: a\r\n\r\n", -400, "non-http scheme"},
    {"GET http:///p HTTP/1.1\r\nHost: a\r\n\r\n", -400, "empty authority"},
    {"GET http://u@h/ HTTP/1.1\r\nHost: a\r\n\r\n", -400, "userinfo"},
    {"CONNECT h:443 HTTP/1.1\r\nHost: h\r\n\r\n", -400, "authority-form"},
    {"GET / HTTP/1.1 \r\nHost: a\r\n\r\n", -400, "SP after version"},
    {"GET / http/1.1\r\nHost: a\r\n\r\n", -400, "lowercase HTTP-name"},
    {"GET / HTTP/1.x\r\nHost: a\r\n\r\n", -400, "non-digit minor"},
    {"GET / HTTP/11\r\nHost: a\r\n\r\n", -400, "no dot"},
    {"GET / HTTP/1.10\r\nHost: a\r\n\r\n", -400, "two-digit minor"},
    {"GET / HTTP/1.1\r\r\nHost: a\r\n\r\n", -400, "bare CR at end of request line"},
    {"GET / HTTP/1.1\rHost: a\r\n\r\n", -400, "bare CR as line end"},
    /* field lines */
    {"GET / HTTP/1.1\r\nHost : a\r\n\r\n", -400, "SP before colon"},
    {"GET / HTTP/1.1\r\nHost\t: a\r\n\r\n", -400, "HTAB before colon"},
    {"GET / HTTP/1.1\r\nHost: a\r\n: x\r\n\r\n", -400, "empty field name"},
    {"GET / HTTP/1.1\r\nHost: a\r\nX(y): z\r\n\r\n", -400, "non-token name"},
    {"GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n", -400, "field without colon"},
    {"GET / HTTP/1.1\r\nHost: a\r\nX: a\x01z\r\n\r\n", -400, "CTL in value"},
    {"GET / HTTP/1.1\r\nHost: a\r\nX: a\x7fz\r\n\r\n", -400, "DEL in value"},
    {"GET / HTTP/1.1\r\nHost: a\r\nX: a\rz\r\n\r\n", -400, "bare CR in value"},
    {"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n z\r\n\r\n", -400, "obs-fold (SP)"},
    {"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n\tz\r\n\r\n", -400, "obs-fold (HTAB)"},
    {"GET / HTTP/1.1\r\n Host: a\r\n\r\n", -400, "whitespace before first field"},
    {"GET / HTTP/1.1\r\nHost: a\r\n\r\r\n", -400, "bare CR on the empty line"},
    /* Host */
    {"GET / HTTP/1.1\r\n\r\n", -400, "no Host in HTTP/1.1"},
    {"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", -400, "two Host"},
    {"GET / HTTP/1.0\r\nHost: a\r\nhost: b\r\n\r\n", -400, "two Host in HTTP/1.0"},
    {"GET / HTTP/1.1\r\nHost:\r\n\r\n", -400, "empty Host"},
    {"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", -400, "SP in Host"},
    {"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", -400, "slash in Host"},
    {"GET / HTTP/1.1\r\nHost: u@a\r\n\r\n", -400, "userinfo in Host"},
    {"GET / HTTP/1.1\r\nHost: a:8x\r\n\r\n", -400, "bad port"},
    {"GET / HTTP/1.1\r\nHost: [::1\r\n\r\n", -400, "unclosed IP-literal"},
    /* Content-Length */
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n", -400, "empty CL"},
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n", -400, "CL sign"},
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -5\r\n\r\n", -400, "CL negative"},
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x5\r\n\r\n", -400, "CL hex"},
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5 5\r\n\r\n", -400, "CL two numbers"},
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 6\r\n\r\n", -400, "CL list differs"},
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5,\r\n\r\n", -400, "CL empty element"},
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", -400,
     "CL conflicting lines"},
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 9223372036854775808\r\n\r\n", -400, "CL 2^63"},
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999\r\n\r\n", -400,
     "CL overflow"},
    /* Transfer-Encoding framing */
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", -400,
     "CL and TE"},
    {"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", -400, "TE in HTTP/1.0"},
    {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n\r\n", -400, "empty TE"},
    {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: ,\r\n\r\n", -400, "TE without coding"},
    {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chu@nked\r\n\r\n", -400, "TE garbage"},
    {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked;x=1\r\n\r\n", -400,
     "chunked with parameter"},
    {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", -400,
     "chunked twice"},
    {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"
     "\r\n",
     -400, "chunked twice on two lines"},
    /* unknown codings: 400 and close (smuggling, not 501) */
    {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", -400, "gzip"},
    {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n",
     -400, "gzip on its own line"},
    {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", -400,
     "chunked not last"},
    {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: x-custom;q=1\r\n\r\n", -400, "unknown"},
    {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n", -400, "identity"},
    /* more smuggling forms (issue #8): each must be 400 */
    {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", -400,
     "TE then CL"},
    {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n", -400,
     "TE and CL 0"},
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n", -400, "empty CL"},
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \r\n\r\n", -400, "blank CL"},
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length:\r\n\r\n", -400,
     "CL and empty CL"},
    {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n", -400, "TE xchunked"},
    {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \"chunked\"\r\n\r\n", -400, "TE quoted"},
    {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n", -400,
     "TE space before colon"},
    {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n , identity\r\n\r\n", -400,
     "TE obs-folded"},
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n 6\r\n\r\n", -400, "CL obs-folded"},
    {"POST / HTTP/1.1\r\nHost: a\r\nX: y\r\n\tTransfer-Encoding: chunked\r\n\r\n", -400,
     "TE hidden in a fold"},
    /* 505 */
    {"GET / HTTP/2.0\r\nHost: a\r\n\r\n", -505, "HTTP/2.0"},
    {"GET / HTTP/0.9\r\n\r\n", -505, "HTTP/0.9"},
    {"GET / HTTP/3.1\r\n\r\n", -505, "HTTP/3.1"},
};

static void test_bad_requests(void **state)
{
    for (size_t k = 0; k < sizeof(bad_cases) / sizeof(bad_cases[0]); k++) {
        int r = parse(bad_cases[k].s);
        if (r != bad_cases[k].status) {
            fprintf(stderr, "%s: got %d, want %d\n", bad_cases[k].why, r, bad_cases[k].status);
            fail();
        }
        check_prefixes(bad_cases[k].s, &big);
    }
}

static void test_content_length_ok(void **state)
{
    static const struct {
        const char *s;
        uint64_t cl;
    } cases[] = {
        {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", 0},
        {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 42, 42 ,42\r\n\r\n", 42},
        {"POST / HTTP/1.1\r\nHost: a\r\ncontent-length: 7\r\nContent-Length: 7\r\n\r\n", 7},
        {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 9223372036854775807\r\n\r\n",
         9223372036854775807ull},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        assert_int_equal(parse(cases[k].s), (int)strlen(cases[k].s));
        assert_int_equal(req.has_content_length, 1);
        assert_true(req.content_length == cases[k].cl);
    }
}

static void test_transfer_encoding_ok(void **state)
{
    static const char *const cases[] = {
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: CHUNKED\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: , chunked ,\r\n\r\n",
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        assert_int_equal(parse(cases[k]), (int)strlen(cases[k]));
        assert_int_equal(req.chunked, 1);
        assert_int_equal(req.has_content_length, 0);
    }
}

static void test_host_forms(void **state)
{
    static const char *const ok[] = {
        "a",    "a.b-c_d~e", "a:8080", "a:", "[::1]", "[::1]:1", "xn--bcher-kva.example",
        "%41b", "127.0.0.1"};
    char buf[128];
    for (size_t k = 0; k < sizeof(ok) / sizeof(ok[0]); k++) {
        snprintf(buf, sizeof(buf), "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", ok[k]);
        assert_int_equal(parse(buf), (int)strlen(buf));
        assert_true(span_is(req.host, req.host_len, ok[k]));
    }
}

/*
 * One limit of *lim at its edge for the complete head s: with *limit = at (a field of *lim)
 * s parses whole, with at - 1 it fails with status, and its prefixes agree both times
 * (check_prefixes). Leaves *limit = at - 1.
 */
static void check_limit_edge(const char *s, gw_http_limits_t *lim, size_t *limit, size_t at,
                             int status)
{
    *limit = at;
    assert_int_equal(parse_with(s, lim), (int)strlen(s));
    check_prefixes(s, lim);
    *limit = at - 1;
    assert_int_equal(parse_with(s, lim), status);
    check_prefixes(s, lim);
}

/* 414: the request line, on complete and on partial input. */
static void test_414(void **state)
{
    gw_http_limits_t lim = big;
    const char *s = "GET /0123456789 HTTP/1.1\r\nHost: a\r\n\r\n";

    check_limit_edge(s, &lim, &lim.max_request_line, strlen("GET /0123456789 HTTP/1.1"), -414);
    lim.max_request_line = 8;
    assert_int_equal(parse_with(s, &lim), -414);
    assert_int_equal(parse_with("GET /01234", &lim), -414); /* partial, endless target */
    assert_int_equal(parse_with("GET /012", &lim), 0);
    lim.max_request_line = 2;
    assert_int_equal(parse_with("GET", &lim), -414); /* in the method */
    lim.max_request_line = 0;
    assert_int_equal(parse_with("G", &lim), -414);
    /* A line shorter than its limit with a premature end stays a syntax error. */
    lim.max_request_line = 5;
    assert_int_equal(parse_with("GET /\r\n\r\n", &lim), -400);
}

/* 431 (1/3): one field line too long. */
static void test_431_field_line(void **state)
{
    gw_http_limits_t lim = big;
    const char *s = "GET / HTTP/1.1\r\nHost: a\r\nX-Long: 0123456789\r\n\r\n";

    check_limit_edge(s, &lim, &lim.max_field_line, strlen("X-Long: 0123456789"), -431);
    lim.max_field_line = 10;
    assert_int_equal(parse_with("GET / HTTP/1.1\r\nHost: a\r\nX-Long: 012", &lim), -431);
    assert_int_equal(parse_with("GET / HTTP/1.1\r\nHost: a\r\nX-Long: 01", &lim), 0);
    assert_int_equal(parse_with("GET / HTTP/1.1\r\nHost: a\r\nX-Very-Long-Name", &lim), -431);
    /* trailing OWS counts: it is part of the line */
    assert_int_equal(parse_with("GET / HTTP/1.1\r\nHost: a\r\nX: 1         ", &lim), -431);
}

/* 431 (2/3): too many fields. */
static void test_431_count(void **state)
{
    gw_http_limits_t lim = big;
    const char *s = "GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\n\r\n";

    check_limit_edge(s, &lim, &lim.max_headers, 3, -431);
    /* As soon as the extra field starts. */
    assert_int_equal(parse_with("GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB", &lim), -431);
    assert_int_equal(parse_with("GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\n", &lim), 0);

    /* max_headers above the array size is capped at GW_HTTP_MAX_HEADERS. */
    char *buf = malloc(64 + 8 * (GW_HTTP_MAX_HEADERS + 1));
    assert_non_null(buf);
    strcpy(buf, "GET / HTTP/1.1\r\nHost: a\r\n");
    for (int k = 1; k < GW_HTTP_MAX_HEADERS; k++)
        strcat(buf, "X: y\r\n");
    strcat(buf, "\r\n");
    lim.max_headers = 1000;
    assert_int_equal(parse_with(buf, &lim), (int)strlen(buf));
    assert_int_equal(req.n_headers, GW_HTTP_MAX_HEADERS);
    strcpy(buf + strlen(buf) - 2, "X: y\r\n\r\n");
    assert_int_equal(parse_with(buf, &lim), -431);
    free(buf);
}

/* 431 (3/3): the whole head too large. */
static void test_431_block(void **state)
{
    gw_http_limits_t lim = big;
    const char *s = "GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\n\r\n";

    check_limit_edge(s, &lim, &lim.max_header_block, strlen(s), -431);
    /* Partial input already beyond the limit. */
    lim.max_header_block = 20;
    assert_int_equal(parse_with("GET / HTTP/1.1\r\nHost: a\r\nA:", &lim), -431);
    assert_int_equal(parse_with("GET / HTTP/1.1\r\nHos", &lim), 0);
    /* Endless leading empty lines are bounded too. */
    assert_int_equal(parse_with("\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n", &lim), -431);
    /* Bytes after a complete head do not count. */
    lim.max_header_block = strlen(s);
    char buf[256];
    snprintf(buf, sizeof(buf), "%sGET / HTTP/1.1\r\n", s);
    assert_int_equal(parse_with(buf, &lim), (int)strlen(s));
}

static void test_null_limits(void **state)
{
    const char *s = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    assert_int_equal(gw_http_parse_request(s, strlen(s), NULL, &req), (int)strlen(s));
    assert_int_equal(gw_http_parse_request(s, 0, NULL, &req), 0);
}

/* ------------------------------------------------------------------------------------- */
/* Chunked decoder                                                                       */
/* ------------------------------------------------------------------------------------- */

/* Decode s all at once, byte by byte and in random splits: the results must agree. */
static void chunk_check(const char *s, size_t n, uint64_t max_body, int status, const char *out,
                        size_t consumed)
{
    char *a = malloc(n + 1), *b = malloc(n + 1);
    assert_non_null(a);
    assert_non_null(b);
    struct chunk_out ra = chunk_split_run(s, n, 0, 7, max_body, a);
    if (ra.status != status) {
        fprintf(stderr, "chunked \"%.*s\": got %d, want %d\n", n > 60 ? 60 : (int)n, s, ra.status,
                status);
        fail();
    }
    if (out) {
        assert_int_equal(ra.len, strlen(out));
        assert_memory_equal(a, out, ra.len);
    }
    if (status == 1)
        assert_int_equal(ra.consumed, consumed);
    for (uint32_t step = 1; step < 40; step++) {
        /* 1: byte by byte; then random pieces of 1..7 bytes, seeds spread over 32 bits */
        struct chunk_out rb =
            chunk_split_run(s, n, step == 1 ? 1 : step * 2654435761u + 1, 7, max_body, b);
        assert_int_equal(rb.status, ra.status);
        assert_int_equal(rb.len, ra.len);
        assert_memory_equal(b, a, ra.len);
        /* A split after the body's end consumes no less than the whole-buffer run. */
        if (status == 1)
            assert_int_equal(rb.consumed, ra.consumed);
    }
    free(a);
    free(b);
}

#define CHUNK_OK(s, out) chunk_check(s, strlen(s), 0, 1, out, strlen(s))
#define CHUNK_BAD(s) chunk_check(s, strlen(s), 0, -400, NULL, 0)

static void test_chunked_valid(void **state)
{
    CHUNK_OK("0\r\n\r\n", "");
    CHUNK_OK("5\r\nhello\r\n0\r\n\r\n", "hello");
    CHUNK_OK("5\r\nhello\r\n1\r\n \r\n6\r\nworld!\r\n0\r\n\r\n", "hello world!");
    CHUNK_OK("a\r\n0123456789\r\nA\r\nabcdefghij\r\n000\r\n\r\n", "0123456789abcdefghij");
    CHUNK_OK("00000006\r\nhe\r\nlo\r\n0\r\n\r\n", "he\r\nlo");
}

static void test_chunked_extensions(void **state)
{
    CHUNK_OK("5;name=value\r\nhello\r\n0;last\r\n\r\n", "hello");
    CHUNK_OK("5 ;a=\"q;\\\" s\"; b\t=\tc\r\nhello\r\n0\r\n\r\n", "hello");
    CHUNK_OK("5\t;x\r\nhello\r\n0\r\n\r\n", "hello");
}

static void test_chunked_trailers(void **state)
{
    CHUNK_OK("5\r\nhello\r\n0\r\nX-Checksum: abc\r\nOther:\r\n\r\n", "hello");
    CHUNK_OK("0\r\nT: caf\xc3\xa9 \t x\r\n\r\n", "");
}

static void test_chunked_rest(void **state)
{
    /* The next pipelined request stays in the buffer. */
    const char *s = "3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1\r\n";
    chunk_check(s, strlen(s), 0, 1, "abc", strlen("3\r\nabc\r\n0\r\n\r\n"));

    /* After the end, further calls consume nothing. */
    gw_http_chunked_t d;
    char buf[64];
    size_t len, consumed;
    gw_http_chunked_init(&d);
    strcpy(buf, "0\r\n\r\n");
    len = 5;
    assert_int_equal(gw_http_chunked_decode(&d, buf, &len, &consumed, 0), 1);
    strcpy(buf, "XYZ");
    len = 3;
    assert_int_equal(gw_http_chunked_decode(&d, buf, &len, &consumed, 0), 1);
    assert_int_equal(len, 0);
    assert_int_equal(consumed, 0);
}

static void test_chunked_malformed(void **state)
{
    CHUNK_BAD("\r\n");                          /* empty size */
    CHUNK_BAD("g\r\n");                         /* not hex */
    CHUNK_BAD("-5\r\nhello\r\n0\r\n\r\n");      /* sign */
    CHUNK_BAD("0x5\r\nhello\r\n0\r\n\r\n");     /* 0x prefix */
    CHUNK_BAD(" 5\r\nhello\r\n0\r\n\r\n");      /* leading whitespace */
    CHUNK_BAD("5 \r\nhello\r\n0\r\n\r\n");      /* BWS without extension */
    CHUNK_BAD("5\nhello\r\n0\r\n\r\n");         /* bare LF after size */
    CHUNK_BAD("5\rhello\r\n0\r\n\r\n");         /* bare CR after size */
    CHUNK_BAD("5;a\x01\r\nhello\r\n0\r\n\r\n"); /* CTL in extension */
    CHUNK_BAD("5;a\nb\r\nhello\r\n0\r\n\r\n");  /* LF in extension */
    CHUNK_BAD("5\r\nhelloX\r\n0\r\n\r\n");      /* data longer than size */
    CHUNK_BAD("5\r\nhello\n0\r\n\r\n");         /* bare LF after data */
    CHUNK_BAD("5\r\nhello\rX0\r\n\r\n");        /* CR without LF after data */
    CHUNK_BAD("10000000000000000\r\n");         /* 2^64: overflow */
    CHUNK_BAD("0\r\n\n");                       /* bare LF as final line */
    CHUNK_BAD("0\r\n\rX");                      /* bare CR as final line */
    CHUNK_BAD("0\r\n X: y\r\n\r\n");            /* trailer obs-fold */
    CHUNK_BAD("0\r\nNoColon\r\n\r\n");          /* trailer without colon */
    CHUNK_BAD("0\r\n: v\r\n\r\n");              /* trailer empty name */
    CHUNK_BAD("0\r\nX : v\r\n\r\n");            /* trailer SP before colon */
    CHUNK_BAD("0\r\nX: a\x01\r\n\r\n");         /* trailer CTL */
    CHUNK_BAD("0\r\nX: a\n\r\n");               /* trailer bare LF */
    CHUNK_BAD("0\r\nX: a\rb\r\n\r\n");          /* trailer bare CR */

    /* Line length caps: 4096 bytes is fine, 4097 is not. */
    static char s[32000];
    memset(s, '0', 4095);
    strcpy(s + 4095, "1\r\nx\r\n0\r\n\r\n");
    CHUNK_OK(s, "x");
    memset(s, '0', 4096);
    strcpy(s + 4096, "1\r\nx\r\n0\r\n\r\n");
    CHUNK_BAD(s);
    strcpy(s, "1;");
    memset(s + 2, 'e', 5000);
    strcpy(s + 5002, "\r\nx\r\n0\r\n\r\n");
    CHUNK_BAD(s);
    strcpy(s, "0\r\nX: ");
    memset(s + 6, 'v', 4093);
    strcpy(s + 4099, "\r\n\r\n");
    CHUNK_OK(s, "");
    strcpy(s, "0\r\nX: ");
    memset(s + 6, 'v', 4094);
    strcpy(s + 4100, "\r\n\r\n");
    CHUNK_BAD(s);
    /* The trailer section as a whole is capped (16 KiB). */
    char *p = s + sprintf(s, "0\r\n");
    for (int k = 0; k < 2000; k++)
        p += sprintf(p, "X: y\r\n");
    strcpy(p, "\r\n");
    CHUNK_OK(s, "");
    p = s + sprintf(s, "0\r\n");
    for (int k = 0; k < 4000; k++)
        p += sprintf(p, "X: y\r\n");
    strcpy(p, "\r\n");
    CHUNK_BAD(s);

    /* Errors are final. */
    gw_http_chunked_t d;
    char buf[32];
    size_t len, consumed;
    gw_http_chunked_init(&d);
    strcpy(buf, "3\r\nabcX");
    len = strlen(buf);
    assert_int_equal(gw_http_chunked_decode(&d, buf, &len, &consumed, 0), -400);
    assert_int_equal(len, 3);
    assert_memory_equal(buf, "abc", 3);
    assert_int_equal(consumed, 6);
    strcpy(buf, "\r\n0\r\n\r\n");
    len = strlen(buf);
    assert_int_equal(gw_http_chunked_decode(&d, buf, &len, &consumed, 0), -400);
    assert_int_equal(len, 0);
}

static void test_chunked_413(void **state)
{
    const char *s = "5\r\nhello\r\n6\r\nworld!\r\n0\r\n\r\n";
    chunk_check(s, strlen(s), 11, 1, "helloworld!", strlen(s));
    chunk_check(s, strlen(s), 10, -413, "hello", 0);
    chunk_check(s, strlen(s), 4, -413, "", 0);
    /* A huge announced size is refused before any data. */
    const char *h = "FFFFFFFFFFFFFFFF\r\nabc";
    chunk_check(h, strlen(h), 1 << 20, -413, "", 0);
    /* Unlimited: the largest size is taken (and awaits its data). */
    h = "FFFFFFFFFFFFFFFF\r\n";
    chunk_check(h, strlen(h), 0, 0, "", 0);
}

/* ------------------------------------------------------------------------------------- */
/* normalize_path, parse_range, reason, token_eq                                         */
/* ------------------------------------------------------------------------------------- */

static void check_norm(const char *in, const char *want)
{
    char out[256];
    long r = gw_http_normalize_path(in, strlen(in), out, sizeof(out));
    if (!want) {
        if (r != -1) {
            fprintf(stderr, "normalize \"%s\": got \"%s\", want -1\n", in, out);
            fail();
        }
        return;
    }
    if (r < 0 || strcmp(out, want) != 0) {
        fprintf(stderr, "normalize \"%s\": got %ld \"%s\", want \"%s\"\n", in, r, r < 0 ? "" : out,
                want);
        fail();
    }
    assert_int_equal(r, (long)strlen(want));
}

static void test_normalize_path(void **state)
{
    check_norm("/", "/");
    check_norm("/a/b.html", "/a/b.html");
    check_norm("/a/./b", "/a/b");
    check_norm("/./", "/");
    check_norm("/a/.", "/a/");
    check_norm("/a/../b", "/b");
    check_norm("/a/b/..", "/a/");
    check_norm("/a/b/../../c/", "/c/");
    check_norm("//a///b//", "/a/b/");
    check_norm("/...", "/...");
    check_norm("/.a/..b/a.", "/.a/..b/a.");
    check_norm("/%41%62c", "/Abc");
    check_norm("/a%20b", "/a b");
    check_norm("/a/%2e%2E/b", "/b"); /* encoded dot segments */
    check_norm("/a/.%2e/b", "/b");
    check_norm("/a/%2e/b", "/a/b");
    check_norm("/a%2Fb", "/a/b"); /* encoded slash separates */
    check_norm("/a%2f%2fb", "/a/b");
    check_norm("/a/b%2F..%2Fc", "/a/c");
    check_norm("/%2e%2e", NULL); /* above root */
    check_norm("/..", NULL);
    check_norm("/../a", NULL);
    check_norm("/a/../..", NULL);
    check_norm("/a/../../b", NULL);
    check_norm("/a%2F..%2F..%2Fetc/passwd", NULL);
    check_norm("/a%00", NULL); /* decoded NUL */
    check_norm("/a%", NULL);   /* bad escapes */
    check_norm("/a%2", NULL);
    check_norm("/a%zz", NULL);
    check_norm("/a%g0", NULL);
    check_norm("a/b", NULL); /* not absolute */
    check_norm("", NULL);

    /* Capacity: the result and its NUL must fit. */
    char out[8];
    assert_int_equal(gw_http_normalize_path("/abcdef", 7, out, 8), 7);
    assert_string_equal(out, "/abcdef");
    assert_int_equal(gw_http_normalize_path("/abcdefg", 8, out, 8), -1);
    assert_int_equal(gw_http_normalize_path("/ab/", 4, out, 4), -1);
    assert_int_equal(gw_http_normalize_path("/", 1, out, 1), -1);
    assert_int_equal(gw_http_normalize_path("/", 1, out, 2), 1);
    /* A raw NUL inside the given length is refused too. */
    assert_int_equal(gw_http_normalize_path("/a\0b", 4, out, 8), -1);
}

static void check_range(const char *v, uint64_t size, int want, uint64_t first, uint64_t last)
{
    uint64_t f = 777, l = 777;
    int r = gw_http_parse_range(v, strlen(v), size, &f, &l);
    if (r != want || (want == 1 && (f != first || l != last))) {
        fprintf(stderr, "range \"%s\" size %llu: got %d [%llu,%llu]\n", v, (unsigned long long)size,
                r, (unsigned long long)f, (unsigned long long)l);
        fail();
    }
}

static void test_parse_range(void **state)
{
    /* satisfiable */
    check_range("bytes=0-9", 100, 1, 0, 9);
    check_range("bytes=0-0", 100, 1, 0, 0);
    check_range("bytes=90-", 100, 1, 90, 99);
    check_range("bytes=99-99", 100, 1, 99, 99);
    check_range("bytes=10-1000", 100, 1, 10, 99);
    check_range("bytes=0-99999999999999999999999", 100, 1, 0, 99);
    check_range("bytes=-10", 100, 1, 90, 99);
    check_range("bytes=-100", 100, 1, 0, 99);
    check_range("bytes=-200", 100, 1, 0, 99);
    check_range("Bytes=1-2", 100, 1, 1, 2);
    check_range("bytes=1-2,", 100, 1, 1, 2); /* empty list elements are ignored */
    check_range("bytes= 1-2 ", 100, 1, 1, 2);
    /* not satisfiable */
    check_range("bytes=100-", 100, -416, 0, 0);
    check_range("bytes=100-200", 100, -416, 0, 0);
    check_range("bytes=99999999999999999999999-", 100, -416, 0, 0);
    check_range("bytes=-0", 100, -416, 0, 0);
    check_range("bytes=0-", 0, -416, 0, 0);
    /* ignored */
    check_range("bytes=-5", 0, 0, 0, 0);
    check_range("items=0-1", 100, 0, 0, 0);
    check_range("bytes=0-1,5-6", 100, 0, 0, 0);
    check_range("bytes=5-1", 100, 0, 0, 0);
    check_range("bytes=", 100, 0, 0, 0);
    check_range("bytes", 100, 0, 0, 0);
    check_range("bytes 0-1", 100, 0, 0, 0);
    check_range("=0-1", 100, 0, 0, 0);
    check_range("bytes=-", 100, 0, 0, 0);
    check_range("bytes=1", 100, 0, 0, 0);
    check_range("bytes=a-b", 100, 0, 0, 0);
    check_range("bytes=1-b", 100, 0, 0, 0);
    check_range("bytes=--1", 100, 0, 0, 0);
    check_range("bytes=1-2-3", 100, 0, 0, 0);
    check_range("bytes=1 -2", 100, 0, 0, 0);
    check_range("bytes=-1-", 100, 0, 0, 0);
    check_range("", 100, 0, 0, 0);
    uint64_t f, l;
    assert_int_equal(gw_http_parse_range(NULL, 0, 100, &f, &l), 0);
}

static void test_reason(void **state)
{
    static const int codes[] = {100, 101, 200, 201, 202, 203, 204, 205, 206, 300, 301, 302,
                                303, 304, 305, 307, 308, 400, 401, 402, 403, 404, 405, 406,
                                407, 408, 409, 410, 411, 412, 413, 414, 415, 416, 417, 421,
                                422, 426, 429, 431, 500, 501, 502, 503, 504, 505};
    for (size_t k = 0; k < sizeof(codes) / sizeof(codes[0]); k++)
        assert_string_not_equal(gw_http_reason(codes[k]), "Unknown");
    assert_string_equal(gw_http_reason(200), "OK");
    assert_string_equal(gw_http_reason(404), "Not Found");
    assert_string_equal(gw_http_reason(413), "Content Too Large");
    assert_string_equal(gw_http_reason(416), "Range Not Satisfiable");
    assert_string_equal(gw_http_reason(421), "Misdirected Request");
    assert_string_equal(gw_http_reason(429), "Too Many Requests");
    assert_string_equal(gw_http_reason(431), "Request Header Fields Too Large");
    assert_string_equal(gw_http_reason(505), "HTTP Version Not Supported");
    assert_string_equal(gw_http_reason(306), "Unknown");
    assert_string_equal(gw_http_reason(999), "Unknown");
    assert_string_equal(gw_http_reason(-1), "Unknown");
}

static void test_token_eq(void **state)
{
    assert_true(gw_http_token_eq("Chunked", 7, "chunked"));
    assert_true(gw_http_token_eq("KEEP-ALIVE", 10, "keep-alive"));
    assert_true(gw_http_token_eq("", 0, ""));
    assert_false(gw_http_token_eq("chunk", 5, "chunked"));
    assert_false(gw_http_token_eq("chunkedx", 8, "chunked"));
    assert_false(gw_http_token_eq("chunked", 6, "chunked"));
    assert_false(gw_http_token_eq("c\0unked", 7, "chunked"));
}

int main(void)
{
    return UNIT_RUN(cmocka_unit_test(test_get), cmocka_unit_test(test_higher_minor_version_is_1_1),
                    cmocka_unit_test(test_head_post), cmocka_unit_test(test_methods),
                    cmocka_unit_test(test_query), cmocka_unit_test(test_absolute_form),
                    cmocka_unit_test(test_asterisk_form), cmocka_unit_test(test_keep_alive),
                    cmocka_unit_test(test_expect), cmocka_unit_test(test_interpreted_fields),
                    cmocka_unit_test(test_ows_and_values), cmocka_unit_test(test_line_endings),
                    cmocka_unit_test(test_pipelined), cmocka_unit_test(test_incremental),
                    cmocka_unit_test(test_bad_requests), cmocka_unit_test(test_content_length_ok),
                    cmocka_unit_test(test_transfer_encoding_ok), cmocka_unit_test(test_host_forms),
                    cmocka_unit_test(test_414), cmocka_unit_test(test_431_field_line),
                    cmocka_unit_test(test_431_count), cmocka_unit_test(test_431_block),
                    cmocka_unit_test(test_null_limits), cmocka_unit_test(test_chunked_valid),
                    cmocka_unit_test(test_chunked_extensions),
                    cmocka_unit_test(test_chunked_trailers), cmocka_unit_test(test_chunked_rest),
                    cmocka_unit_test(test_chunked_malformed), cmocka_unit_test(test_chunked_413),
                    cmocka_unit_test(test_normalize_path), cmocka_unit_test(test_parse_range),
                    cmocka_unit_test(test_reason), cmocka_unit_test(test_token_eq));
}
