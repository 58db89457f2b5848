#include "net/realip.h"

#include <arpa/inet.h>
#include <string.h>
#include <sys/socket.h>

static int parse_addr(const char *e, size_t n, int *family, unsigned char addr[16])
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

static int is_trusted(const gw_cidr_t *t, size_t n, int family, const unsigned char *addr)
{
    for (size_t i = 0; i < n; i++)
        if (gw_cidr_match(&t[i], family, addr))
            return 1;
    return 0;
}

int gw_realip_pick(const char *val, size_t len, const gw_cidr_t *trusted, size_t n, int recursive,
                   int *family, unsigned char addr[16])
{
    /* from the right: the last element was added by the trusted proxy that sent us the
     * request; with recursive, trusted proxies further left are skipped */
    size_t end = len;
    int found = 0;
    while (end > 0) {
        size_t start = end;
        while (start > 0 && val[start - 1] != ',')
            start--;
        size_t s = start, e = end;
        while (s < e && (val[s] == ' ' || val[s] == '\t'))
            s++;
        while (e > s && (val[e - 1] == ' ' || val[e - 1] == '\t'))
            e--;
        end = start ? start - 1 : 0;
        if (e == s)
            continue;
        if (!parse_addr(val + s, e - s, family, addr))
            return 0;
        found = 1;
        if (!recursive || !is_trusted(trusted, n, *family, addr))
            break;
    }
    return found;
}
