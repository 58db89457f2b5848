/*
 * Unit test of gw/net/listen.c: gw_listen_open (the listening socket's flags and options,
 * an ephemeral port, the backlog default, a port already taken with and without
 * SO_REUSEPORT, an unsupported family) and gw_addr_text (IPv4, IPv6, other families, and
 * truncation into a short buffer, which must still be NUL-terminated).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "unit_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "net/listen.h"

static gw_listen_t v4(uint16_t port, int reuseport)
{
    gw_listen_t l;
    memset(&l, 0, sizeof(l));
    struct sockaddr_in *sin = (struct sockaddr_in *)&l.addr;
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
    sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    l.addrlen = sizeof(*sin);
    l.reuseport = reuseport;
    return l;
}

static uint16_t port_of(int fd)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&ss, &sl), 0);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

static int opt(int fd, int level, int name)
{
    int v = -1;
    socklen_t sl = sizeof(v);
    assert_int_equal(getsockopt(fd, level, name, &v, &sl), 0);
    return v;
}

static void test_open_ipv4(void **state)
{
    (void)state;
    gw_listen_t l = v4(0, 0);
    int fd = gw_listen_open(&l);
    assert_true(fd >= 0);
    assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
    assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    assert_int_not_equal(opt(fd, SOL_SOCKET, SO_REUSEADDR), 0);
    assert_int_equal(opt(fd, SOL_SOCKET, SO_REUSEPORT), 0);
    assert_int_not_equal(opt(fd, IPPROTO_TCP, TCP_NODELAY), 0); /* inherited by accepts */
    assert_int_not_equal(opt(fd, SOL_SOCKET, SO_ACCEPTCONN), 0);
    assert_int_not_equal(port_of(fd), 0);

    /* it accepts: a client connects, the connection inherits TCP_NODELAY */
    int c = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(c >= 0);
    struct sockaddr_in to = *(struct sockaddr_in *)&l.addr;
    to.sin_port = htons(port_of(fd));
    assert_int_equal(connect(c, (struct sockaddr *)&to, sizeof(to)), 0);
    int a = -1;
    for (int i = 0; i < 1000 && a < 0; i++) {
        a = accept(fd, NULL, NULL);
        if (a < 0) {
            assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
            usleep(1000);
        }
    }
    assert_true(a >= 0);
    assert_int_not_equal(opt(a, IPPROTO_TCP, TCP_NODELAY), 0);
    close(a);
    close(c);
    close(fd);
}

static void test_port_taken(void **state)
{
    (void)state;
    gw_listen_t l = v4(0, 0);
    int fd = gw_listen_open(&l);
    assert_true(fd >= 0);
    gw_listen_t again = v4(port_of(fd), 0);
    errno = 0;
    assert_int_equal(gw_listen_open(&again), -1);
    assert_int_equal(errno, EADDRINUSE);
    close(fd);

    /* reuseport on both: the second socket binds the same port (one per worker) */
    gw_listen_t r1 = v4(0, 1);
    int f1 = gw_listen_open(&r1);
    assert_true(f1 >= 0);
    assert_int_not_equal(opt(f1, SOL_SOCKET, SO_REUSEPORT), 0);
    gw_listen_t r2 = v4(port_of(f1), 1);
    int f2 = gw_listen_open(&r2);
    assert_true(f2 >= 0);
    assert_int_equal(port_of(f2), port_of(f1));
    close(f2);
    close(f1);
}

static void test_open_ipv6_only(void **state)
{
    (void)state;
    gw_listen_t l;
    memset(&l, 0, sizeof(l));
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&l.addr;
    s6->sin6_family = AF_INET6;
    s6->sin6_addr = in6addr_loopback;
    l.addrlen = sizeof(*s6);
    int fd = gw_listen_open(&l);
    if (fd < 0 && (errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL))
        skip(); /* a host without IPv6 */
    assert_true(fd >= 0);
    assert_int_not_equal(opt(fd, IPPROTO_IPV6, IPV6_V6ONLY), 0);
    close(fd);
}

static void test_open_fails_cleanly(void **state)
{
    (void)state;
    /* an address this host does not have: -1 with errno, and no descriptor left open */
    gw_listen_t l = v4(0, 0);
    ((struct sockaddr_in *)&l.addr)->sin_addr.s_addr = inet_addr("192.0.2.1"); /* TEST-NET-1 */
    int probe = dup(0);
    assert_true(probe >= 0);
    close(probe);
    errno = 0;
    assert_int_equal(gw_listen_open(&l), -1);
    assert_int_equal(errno, EADDRNOTAVAIL);
    int next = dup(0); /* the lowest free descriptor: the same as before the call */
    assert_int_equal(next, probe);
    close(next);

    gw_listen_t bad;
    memset(&bad, 0, sizeof(bad));
    bad.addr.ss_family = 12345; /* no such family */
    bad.addrlen = sizeof(bad.addr);
    assert_int_equal(gw_listen_open(&bad), -1);
    assert_int_equal(errno, EAFNOSUPPORT);
}

static void test_addr_text(void **state)
{
    (void)state;
    char out[INET6_ADDRSTRLEN];
    gw_listen_t l = v4(8443, 0);
    gw_addr_text((struct sockaddr *)&l.addr, out, sizeof(out));
    assert_string_equal(out, "127.0.0.1"); /* no port */

    struct sockaddr_in6 s6;
    memset(&s6, 0, sizeof(s6));
    s6.sin6_family = AF_INET6;
    assert_int_equal(inet_pton(AF_INET6, "2001:db8::1", &s6.sin6_addr), 1);
    gw_addr_text((struct sockaddr *)&s6, out, sizeof(out));
    assert_string_equal(out, "2001:db8::1");

    struct sockaddr_un su;
    memset(&su, 0, sizeof(su));
    su.sun_family = AF_UNIX;
    gw_addr_text((struct sockaddr *)&su, out, sizeof(out));
    assert_string_equal(out, "unix:");
}

static void test_addr_text_truncates(void **state)
{
    (void)state;
    /* "truncated if short", and always NUL-terminated when cap >= 1 */
    char out[8];
    struct sockaddr_in6 s6;
    memset(&s6, 0, sizeof(s6));
    s6.sin6_family = AF_INET6;
    assert_int_equal(inet_pton(AF_INET6, "2001:db8::1234", &s6.sin6_addr), 1);
    memset(out, 'x', sizeof(out));
    gw_addr_text((struct sockaddr *)&s6, out, sizeof(out));
    assert_string_equal(out, "2001:db");

    gw_listen_t l = v4(0, 0);
    memset(out, 'x', sizeof(out));
    gw_addr_text((struct sockaddr *)&l.addr, out, 4);
    assert_string_equal(out, "127");
    memset(out, 'x', sizeof(out));
    gw_addr_text((struct sockaddr *)&l.addr, out, 1);
    assert_int_equal(out[0], '\0');
    assert_int_equal(out[1], 'x'); /* nothing beyond cap */
}

int main(void)
{
    return UNIT_RUN(cmocka_unit_test(test_open_ipv4), cmocka_unit_test(test_port_taken),
                    cmocka_unit_test(test_open_ipv6_only),
                    cmocka_unit_test(test_open_fails_cleanly), cmocka_unit_test(test_addr_text),
                    cmocka_unit_test(test_addr_text_truncates));
}
