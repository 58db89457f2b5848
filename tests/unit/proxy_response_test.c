/* gw_proxy_parse_response(): upstream response heads, good and bad (RFC 9112 §4-§6). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "unit_test.h"

#include "proxy/response.h"

static int status, minor, has_cl, chunked, conn_close;
static unsigned long long cl;

static int parse(const char *s)
{
    return gw_proxy_parse_response(s, strlen(s), &status, &minor, &has_cl, &cl, &chunked,
                                   &conn_close);
}

static void test_good(void **state)
{
    const char *s = "HTTP/1.1 200 OK\r\nContent-Length: 12\r\nX: y\r\n\r\nbody";
    assert_int_equal(parse(s), (int)strlen(s) - 4);
    assert_int_equal(status, 200);
    assert_int_equal(minor, 1);
    assert_int_equal(has_cl, 1);
    assert_true(cl == 12);
    assert_int_equal(chunked, 0);
    assert_int_equal(conn_close, 0);

    s = "HTTP/1.0 404\nContent-Length: 5, 5\n\n";
    assert_int_equal(parse(s), (int)strlen(s));
    assert_int_equal(status, 404);
    assert_int_equal(conn_close, 1); /* HTTP/1.0 without keep-alive */

    s = "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n\r\n";
    assert_int_equal(parse(s), (int)strlen(s));
    assert_int_equal(conn_close, 0);

    s = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n";
    assert_int_equal(parse(s), (int)strlen(s));
    assert_int_equal(chunked, 1);
    assert_int_equal(conn_close, 1);

    s = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n";
    assert_int_equal(parse(s), (int)strlen(s));
    assert_int_equal(chunked, 2); /* not chunked last: read until close */

    s = "HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775807\r\n\r\n";
    assert_int_equal(parse(s), (int)strlen(s));
    assert_true(cl == 9223372036854775807ULL); /* 64-bit lengths */
}

static void test_incomplete(void **state)
{
    assert_int_equal(parse(""), 0);
    assert_int_equal(parse("HTTP/1."), 0);
    assert_int_equal(parse("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n"), 0);
}

static void test_bad(void **state)
{
    static const char *const bad[] = {
        "garbage\r\n\r\n",
        "HTTP/2.0 200 OK\r\n\r\n",
        "HTTP/1.1 20 OK\r\n\r\n",
        "HTTP/1.1 200OK\r\n\r\n",
        "HTTP/1.1 600 X\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX : a\r\n\r\n",
        "HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX: \x01\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (parse(bad[i]) != -1)
            fail_msg("accepted: %s", bad[i]);
    }
}

int main(void)
{
    return UNIT_RUN(cmocka_unit_test(test_good), cmocka_unit_test(test_incomplete),
                    cmocka_unit_test(test_bad));
}
