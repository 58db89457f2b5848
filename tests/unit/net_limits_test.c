/* Unit tests for gw/net/limits.c (limit_conn_per_ip counting). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "unit_test.h"

#include "net/limits.h"

static struct sockaddr_in v4(const char *a)
{
    struct sockaddr_in s = {.sin_family = AF_INET, .sin_port = htons(1234)};
    inet_pton(AF_INET, a, &s.sin_addr);
    return s;
}

static struct sockaddr_in6 v6(const char *a)
{
    struct sockaddr_in6 s = {.sin6_family = AF_INET6, .sin6_port = htons(1)};
    inet_pton(AF_INET6, a, &s.sin6_addr);
    return s;
}

#define SA(x) ((const struct sockaddr *)&(x)), sizeof(x)

static void test_limit_and_release(void **state)
{
    (void)state;
    struct sockaddr_in a = v4("192.0.2.1"), b = v4("192.0.2.2");
    gw_ipcount_t *s[4] = {0}, *x = (gw_ipcount_t *)1;
    for (int i = 0; i < 3; i++)
        assert_int_equal(gw_limit_conn_take(SA(a), 3, &s[i]), 1);
    assert_non_null(s[0]);
    assert_int_equal(gw_limit_conn_take(SA(a), 3, &x), 0); /* the 4th: refused */
    assert_null(x);
    assert_int_equal(gw_limit_conn_take(SA(b), 3, &s[3]), 1); /* another address */
    assert_int_equal(gw_limit_conn_addresses(), 2);
    gw_limit_conn_release(s[1]);
    assert_int_equal(gw_limit_conn_take(SA(a), 3, &s[1]), 1); /* a slot came back */
    for (int i = 0; i < 4; i++)
        gw_limit_conn_release(s[i]);
    assert_int_equal(gw_limit_conn_addresses(), 0); /* entries are freed at zero */
    gw_limit_conn_release(NULL);
}

static void test_mapped_and_v6(void **state)
{
    (void)state;
    struct sockaddr_in a = v4("198.51.100.7");
    struct sockaddr_in6 m = v6("::ffff:198.51.100.7"), o = v6("2001:db8::7");
    gw_ipcount_t *s1, *s2, *s3, *x;
    assert_int_equal(gw_limit_conn_take(SA(a), 2, &s1), 1);
    assert_int_equal(gw_limit_conn_take(SA(m), 2, &s2), 1);
    assert_ptr_equal(s1, s2); /* an IPv4-mapped address counts as the IPv4 one */
    assert_int_equal(gw_limit_conn_take(SA(m), 2, &x), 0);
    assert_int_equal(gw_limit_conn_take(SA(o), 2, &s3), 1);
    assert_ptr_not_equal(s3, s1);
    gw_limit_conn_release(s1);
    gw_limit_conn_release(s2);
    gw_limit_conn_release(s3);
    assert_int_equal(gw_limit_conn_addresses(), 0);
}

static void test_off_and_other_families(void **state)
{
    (void)state;
    struct sockaddr_in a = v4("203.0.113.9");
    struct sockaddr u = {.sa_family = AF_UNIX};
    gw_ipcount_t *s = (gw_ipcount_t *)1;
    assert_int_equal(gw_limit_conn_take(SA(a), 0, &s), 1); /* 0: no limit, not counted */
    assert_null(s);
    assert_int_equal(gw_limit_conn_take(&u, sizeof(u), 1, &s), 1);
    assert_null(s);
    struct sockaddr_in6 shortv6 = v6("2001:db8::1");
    assert_int_equal(gw_limit_conn_take((const struct sockaddr *)&shortv6, 8, 1, &s), 1);
    assert_null(s); /* a truncated address is not read */
    assert_int_equal(gw_limit_conn_addresses(), 0);
}

static void test_many_addresses(void **state)
{
    (void)state;
    enum { N = 20000 };
    static gw_ipcount_t *s[N];
    for (int i = 0; i < N; i++) {
        struct sockaddr_in a = {.sin_family = AF_INET};
        a.sin_addr.s_addr = htonl(0x0a000000u + (uint32_t)i);
        assert_int_equal(gw_limit_conn_take(SA(a), 1, &s[i]), 1);
    }
    assert_int_equal(gw_limit_conn_addresses(), N);
    for (int i = 0; i < N; i += 997) { /* still exact after the table grew */
        struct sockaddr_in a = {.sin_family = AF_INET};
        a.sin_addr.s_addr = htonl(0x0a000000u + (uint32_t)i);
        gw_ipcount_t *x;
        assert_int_equal(gw_limit_conn_take(SA(a), 1, &x), 0);
    }
    for (int i = 0; i < N; i++)
        gw_limit_conn_release(s[i]);
    assert_int_equal(gw_limit_conn_addresses(), 0);
}

int main(void)
{
    return UNIT_RUN(cmocka_unit_test(test_limit_and_release), cmocka_unit_test(test_mapped_and_v6),
                    cmocka_unit_test(test_off_and_other_families),
                    cmocka_unit_test(test_many_addresses));
}
