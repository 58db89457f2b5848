#include "net/realip.h"

#include <arpa/inet.h>
#include <string.h>
#include <sys/socket.h>

/* An address alone: IPv4, IPv6, or IPv6 in brackets. */
static int parse_host(const char *e, size_t n, int *family, unsigned char addr[16])
{
    char buf[64];
    if (n >= 2 && e[0] == '[' && e[n - 1] == ']') {
        e++;
        n -= 2;
    }
    if (n == 0 || n >= sizeof(buf) || memchr(e, '\0', n))
        return 0;
    memcpy(buf, e, n);
    buf[n] = '\0';
    if (inet_pton(AF_INET, buf, addr) == 1) {
        *family = AF_INET;
        return 1;
    }
    if (inet_pton(AF_INET6, buf, addr) == 1) {
        *family = AF_INET6;
        return 1;
    }
    return 0;
}

/* One element: an address, or an address with a port as nginx takes it (ngx_parse_addr_port:
 * `192.0.2.1:5555`, `[2001:db8::1]:5555`; the port, 0-65535, in *port, else 0). */
static int parse_addr(const char *e, size_t n, int *family, unsigned char addr[16], int *port_out)
{
    *port_out = 0;
    if (parse_host(e, n, family, addr))
        return 1;
    const char *colon = n && e[0] == '[' ? memchr(e, ']', n) : memchr(e, ':', n);
    if (colon && e[0] == '[')
        colon = (size_t)(colon - e) + 1 < n && colon[1] == ':' ? colon + 1 : NULL;
    if (!colon)
        return 0;
    size_t digits = n - (size_t)(colon - e) - 1;
    unsigned long port = 0;
    for (size_t i = 1; i <= digits; i++) {
        if (colon[i] < '0' || colon[i] > '9' || port > 65535)
            return 0;
        port = port * 10 + (unsigned long)(colon[i] - '0');
    }
    if (digits == 0 || port > 65535 || !parse_host(e, (size_t)(colon - e), family, addr))
        return 0;
    *port_out = (int)port;
    return 1;
}

static int is_trusted(const gw_cidr_t *t, size_t n, int family, const unsigned char *addr)
{
    for (size_t i = 0; i < n; i++)
        if (gw_cidr_match(&t[i], family, addr))
            return 1;
    return 0;
}

int gw_realip_pick(const char *val, size_t len, const gw_cidr_t *trusted, size_t n, int recursive,
                   int *family, unsigned char addr[16], int *port)
{
    /* from the right: the last element was added by the trusted proxy that sent us the
     * request; with recursive, trusted proxies further left are skipped. As nginx's
     * ngx_http_get_forwarded_addr_internal: a comma or a space ends an element, and an
     * element that is not an address ends the walk with the last address found (a
     * trusted one), or nothing when it is the first examined. */
    size_t end = len;
    int found = 0;
    while (end > 0) {
        size_t start = end;
        while (start > 0 && val[start - 1] != ',' && val[start - 1] != ' ')
            start--;
        size_t s = start, e = end;
        while (s < e && val[s] == '\t')
            s++;
        while (e > s && val[e - 1] == '\t')
            e--;
        end = start ? start - 1 : 0;
        if (e == s)
            continue;
        int fam, pt;
        unsigned char a[16];
        if (!parse_addr(val + s, e - s, &fam, a, &pt))
            return found;
        *family = fam;
        if (port)
            *port = pt;
        memcpy(addr, a, fam == AF_INET ? 4 : 16);
        found = 1;
        if (!recursive || !is_trusted(trusted, n, fam, a))
            break;
    }
    return found;
}
