/* Known answers of the PROXY protocol parser (versions 1 and 2, HAProxy's
 * proxy-protocol.txt), its limits, and the v1 writer read back by the parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <arpa/inet.h>
#include "unit_test.h"
#include <netinet/in.h>
#include <sys/socket.h>

#include "net/proxy_protocol.h"

static const unsigned char sig[12] = "\r\n\r\n\0\r\nQUIT\n";

static int parse(const void *b, size_t n, gw_pp_t *pp, const char **why)
{
    return gw_pp_parse(b, n, pp, why);
}

static void test_v1(void **state)
{
    (void)state;
    gw_pp_t pp;
    const char *why;
    const char *h = "PROXY TCP4 192.0.2.1 198.51.100.2 5555 443\r\nGET /";
    assert_int_equal(parse(h, strlen(h), &pp, &why), 44);
    assert_int_equal(pp.version, 1);
    assert_int_equal(pp.family, AF_INET);
    assert_memory_equal(pp.src, "\xc0\x00\x02\x01", 4);
    assert_int_equal(pp.src_port, 5555);
    assert_int_equal(pp.dst_port, 443);
    h = "PROXY TCP6 2001:db8::1 ::1 1 65535\r\n";
    assert_int_equal(parse(h, strlen(h), &pp, &why), (int)strlen(h));
    assert_int_equal(pp.family, AF_INET6);
    assert_int_equal(pp.src[0], 0x20);
    h = "PROXY UNKNOWN whatever\r\n";
    assert_int_equal(parse(h, strlen(h), &pp, &why), (int)strlen(h));
    assert_int_equal(pp.family, 0);
    /* incomplete, never an error */
    h = "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\n";
    for (size_t k = 0; k < strlen(h); k++)
        assert_int_equal(parse(h, k, &pp, &why), 0);
    const char *bad[] = {"PROXY TCP4 1.2.3.4 5.6.7.8 1 65536\r\n",
                         "PROXY TCP4 1.2.3.4 5.6.7.8 01 2\r\n",
                         "PROXY TCP4 1.2.3.4 ::1 1 2\r\n",
                         "PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n",
                         "PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n",
                         "PROXY TCP4 1.2.3.4  5.6.7.8 1 2\r\n",
                         "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\rX",
                         "PROXY tcp4 1.2.3.4 5.6.7.8 1 2\r\n",
                         "PROXX ",
                         "GET / HTTP/1.1\r\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why = NULL;
        assert_int_equal(parse(bad[i], strlen(bad[i]), &pp, &why), -1);
        assert_non_null(why);
    }
    /* 107 bytes is the most a v1 line may have */
    char line[200] = "PROXY UNKNOWN ";
    memset(line + 14, 'x', 91);
    memcpy(line + 105, "\r\n", 2);
    assert_int_equal(parse(line, 107, &pp, &why), 107);
    memset(line + 14, 'x', 92);
    memcpy(line + 106, "\r\n", 2);
    assert_int_equal(parse(line, 108, &pp, &why), -1);
}

static size_t v2(unsigned char *out, int vc, int fam, const void *body, size_t n)
{
    memcpy(out, sig, 12);
    out[12] = (unsigned char)vc;
    out[13] = (unsigned char)fam;
    out[14] = (unsigned char)(n >> 8);
    out[15] = (unsigned char)n;
    memcpy(out + 16, body, n);
    return 16 + n;
}

static void test_v2(void **state)
{
    (void)state;
    unsigned char b[5000], body[4200] = {0};
    gw_pp_t pp;
    const char *why;
    memcpy(body, "\xcb\x00\x71\x07\x7f\x00\x00\x01\x11\x5c\x01\xbb", 12);
    size_t n = v2(b, 0x21, 0x11, body, 12);
    assert_int_equal(parse(b, n, &pp, &why), 28);
    assert_int_equal(pp.version, 2);
    assert_int_equal(pp.family, AF_INET);
    assert_memory_equal(pp.src, "\xcb\x00\x71\x07", 4);
    assert_int_equal(pp.src_port, 4444);
    assert_int_equal(pp.dst_port, 443);
    for (size_t k = 0; k < n; k++)
        assert_int_equal(parse(b, k, &pp, &why), 0);
    /* TLVs after the addresses are skipped */
    n = v2(b, 0x21, 0x11, body, 40);
    assert_int_equal(parse(b, n, &pp, &why), 56);
    /* LOCAL: the connection's own addresses */
    n = v2(b, 0x20, 0x00, body, 0);
    assert_int_equal(parse(b, n, &pp, &why), 16);
    assert_int_equal(pp.family, 0);
    n = v2(b, 0x21, 0x21, body, 36);
    assert_int_equal(parse(b, n, &pp, &why), 52);
    assert_int_equal(pp.family, AF_INET6);
    /* errors */
    n = v2(b, 0x11, 0x11, body, 12);
    assert_int_equal(parse(b, n, &pp, &why), -1);
    n = v2(b, 0x22, 0x11, body, 12);
    assert_int_equal(parse(b, n, &pp, &why), -1);
    n = v2(b, 0x21, 0x11, body, 11);
    assert_int_equal(parse(b, n, &pp, &why), -1);
    n = v2(b, 0x21, 0x41, body, 12);
    assert_int_equal(parse(b, n, &pp, &why), -1);
    n = v2(b, 0x21, 0x11, body, 4096 - 16);
    assert_int_equal(parse(b, n, &pp, &why), 4096);
    n = v2(b, 0x21, 0x11, body, 4096 - 15);
    assert_int_equal(parse(b, 16, &pp, &why), -1); /* refused on the length alone */
    b[3] = 'X';
    assert_int_equal(parse(b, 16, &pp, &why), -1);
}

static void test_write_v1(void **state)
{
    (void)state;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(40000)};
    struct sockaddr_in d = {.sin_family = AF_INET, .sin_port = htons(443)};
    inet_pton(AF_INET, "203.0.113.9", &a.sin_addr);
    inet_pton(AF_INET, "127.0.0.1", &d.sin_addr);
    char out[GW_PP_V1_MAX + 1];
    size_t n = gw_pp_write_v1(out, sizeof(out), (struct sockaddr *)&a, (struct sockaddr *)&d);
    assert_string_equal(out, "PROXY TCP4 203.0.113.9 127.0.0.1 40000 443\r\n");
    gw_pp_t pp;
    const char *why;
    assert_int_equal(parse(out, n, &pp, &why), (int)n);
    assert_int_equal(pp.src_port, 40000);
    struct sockaddr_in6 b6 = {.sin6_family = AF_INET6};
    n = gw_pp_write_v1(out, sizeof(out), (struct sockaddr *)&a, (struct sockaddr *)&b6);
    assert_string_equal(out, "PROXY UNKNOWN\r\n");
}

int main(void)
{
    return UNIT_RUN(cmocka_unit_test(test_v1), cmocka_unit_test(test_v2),
                    cmocka_unit_test(test_write_v1));
}
