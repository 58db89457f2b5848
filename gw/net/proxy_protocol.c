#include "net/proxy_protocol.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

static const unsigned char v2sig[12] = {0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d,
                                        0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a};

/* A decimal port: 1..5 digits, no sign, <= 65535. */
static int parse_port(const char *s, size_t n, int *out)
{
    if (n < 1 || n > 5)
        return -1;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v > 65535 || (n > 1 && s[0] == '0'))
        return -1;
    *out = v;
    return 0;
}

static int parse_ip(int family, const char *s, size_t n, unsigned char *out)
{
    char tmp[64];
    if (n == 0 || n >= sizeof(tmp))
        return -1;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    return inet_pton(family, tmp, out) == 1 ? 0 : -1;
}

/* Version 1: "PROXY" SP proto [SP src SP dst SP sport SP dport] CRLF (spec section 2.1). */
static int parse_v1(const unsigned char *buf, size_t len, gw_pp_t *out, const char **why)
{
    /* the CR is at most at index 105: 107 bytes with the LF */
    size_t max = len < GW_PP_V1_MAX - 1 ? len : GW_PP_V1_MAX - 1;
    const unsigned char *cr = memchr(buf, '\r', max);
    if (!cr) {
        if (len >= GW_PP_V1_MAX - 1) {
            *why = "PROXY protocol v1 line longer than 107 bytes";
            return -1;
        }
        return 0;
    }
    size_t ll = (size_t)(cr - buf);
    if (ll + 1 >= len)
        return 0; /* the LF is still to come */
    if (cr[1] != '\n') {
        *why = "PROXY protocol v1 line not ended by CRLF";
        return -1;
    }
    const char *l = (const char *)buf;
    const char *f[6];
    size_t fl[6];
    size_t nf = 0, i = 6; /* after "PROXY " */
    while (i <= ll && nf < 6) {
        size_t start = i;
        while (i < ll && l[i] != ' ')
            i++;
        f[nf] = l + start;
        fl[nf] = i - start;
        nf++;
        if (i == ll)
            break;
        i++; /* one space */
    }
    memset(out, 0, sizeof(*out));
    out->version = 1;
    if (nf >= 1 && fl[0] == 7 && memcmp(f[0], "UNKNOWN", 7) == 0)
        return (int)(ll + 2); /* the rest of the line is ignored (spec) */
    int family;
    if (nf >= 1 && fl[0] == 4 && memcmp(f[0], "TCP4", 4) == 0) {
        family = AF_INET;
    } else if (nf >= 1 && fl[0] == 4 && memcmp(f[0], "TCP6", 4) == 0) {
        family = AF_INET6;
    } else {
        *why = "PROXY protocol v1: the protocol is not TCP4, TCP6 or UNKNOWN";
        return -1;
    }
    if (nf != 5 || i != ll) {
        *why = "PROXY protocol v1: expected source and destination addresses and ports";
        return -1;
    }
    if (parse_ip(family, f[1], fl[1], out->src) || parse_ip(family, f[2], fl[2], out->dst)) {
        *why = "PROXY protocol v1: bad address";
        return -1;
    }
    if (parse_port(f[3], fl[3], &out->src_port) || parse_port(f[4], fl[4], &out->dst_port)) {
        *why = "PROXY protocol v1: bad port";
        return -1;
    }
    out->family = family;
    return (int)(ll + 2);
}

/* Version 2: signature, ver_cmd, fam, len, addresses, TLVs (spec section 2.2). */
static int parse_v2(const unsigned char *buf, size_t len, gw_pp_t *out, const char **why)
{
    if (len < 16)
        return 0;
    if ((buf[12] >> 4) != 2) {
        *why = "PROXY protocol v2: version is not 2";
        return -1;
    }
    int cmd = buf[12] & 0x0f;
    if (cmd > 1) {
        *why = "PROXY protocol v2: unknown command";
        return -1;
    }
    size_t body = (size_t)buf[14] << 8 | buf[15];
    if (16 + body > GW_PP_V2_MAX) {
        *why = "PROXY protocol v2 header longer than 4096 bytes";
        return -1;
    }
    int fam = buf[13] >> 4, proto = buf[13] & 0x0f;
    if (fam > 3 || proto > 2) {
        *why = "PROXY protocol v2: unknown address family or protocol";
        return -1;
    }
    size_t need = fam == 1 ? 12 : fam == 2 ? 36 : fam == 3 ? 216 : 0;
    if (cmd == 1 && body < need) {
        *why = "PROXY protocol v2: address block shorter than its family needs";
        return -1;
    }
    if (len < 16 + body)
        return 0;
    memset(out, 0, sizeof(*out));
    out->version = 2;
    /* LOCAL (health checks of the balancer itself): the connection's own addresses */
    if (cmd == 0 || proto == 0 || fam == 0 || fam == 3)
        return (int)(16 + body);
    const unsigned char *a = buf + 16;
    if (fam == 1) {
        out->family = AF_INET;
        memcpy(out->src, a, 4);
        memcpy(out->dst, a + 4, 4);
        out->src_port = a[8] << 8 | a[9];
        out->dst_port = a[10] << 8 | a[11];
    } else {
        out->family = AF_INET6;
        memcpy(out->src, a, 16);
        memcpy(out->dst, a + 16, 16);
        out->src_port = a[32] << 8 | a[33];
        out->dst_port = a[34] << 8 | a[35];
    }
    return (int)(16 + body);
}

int gw_pp_parse(const unsigned char *buf, size_t len, gw_pp_t *out, const char **why)
{
    static const char v1[] = "PROXY ";
    *why = NULL;
    if (len == 0)
        return 0;
    if (buf[0] == 'P') {
        size_t n = len < 6 ? len : 6;
        if (memcmp(buf, v1, n) != 0) {
            *why = "not a PROXY protocol header";
            return -1;
        }
        return n < 6 ? 0 : parse_v1(buf, len, out, why);
    }
    size_t n = len < 12 ? len : 12;
    if (memcmp(buf, v2sig, n) != 0) {
        *why = "not a PROXY protocol header";
        return -1;
    }
    return n < 12 ? 0 : parse_v2(buf, len, out, why);
}

int gw_pp_read(int fd, gw_pp_t *out, const char **why)
{
    unsigned char buf[GW_PP_V2_MAX];
    ssize_t n;
    do
        n = recv(fd, buf, sizeof(buf), MSG_PEEK);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        *why = "connection failed before the PROXY protocol header";
        return -1;
    }
    if (n == 0) {
        *why = "connection closed before the PROXY protocol header";
        return -1;
    }
    int r = gw_pp_parse(buf, (size_t)n, out, why);
    if (r == 0 && (size_t)n == sizeof(buf)) {
        *why = "PROXY protocol header too long";
        return -1;
    }
    if (r <= 0)
        return r;
    size_t left = (size_t)r;
    while (left) { /* the peeked bytes are there: this read does not block */
        ssize_t k = recv(fd, buf, left, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            *why = "connection failed while reading the PROXY protocol header";
            return -1;
        }
        left -= (size_t)k;
    }
    return 1;
}

size_t gw_pp_write_v1(char *out, size_t cap, const struct sockaddr *src, const struct sockaddr *dst)
{
    char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];
    int n;
    if (src->sa_family == AF_INET && dst->sa_family == AF_INET) {
        const struct sockaddr_in *a = (const void *)src, *b = (const void *)dst;
        inet_ntop(AF_INET, &a->sin_addr, s, sizeof(s));
        inet_ntop(AF_INET, &b->sin_addr, d, sizeof(d));
        n = snprintf(out, cap, "PROXY TCP4 %s %s %u %u\r\n", s, d, ntohs(a->sin_port),
                     ntohs(b->sin_port));
    } else if (src->sa_family == AF_INET6 && dst->sa_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const void *)src, *b = (const void *)dst;
        inet_ntop(AF_INET6, &a->sin6_addr, s, sizeof(s));
        inet_ntop(AF_INET6, &b->sin6_addr, d, sizeof(d));
        n = snprintf(out, cap, "PROXY TCP6 %s %s %u %u\r\n", s, d, ntohs(a->sin6_port),
                     ntohs(b->sin6_port));
    } else {
        n = snprintf(out, cap, "PROXY UNKNOWN\r\n");
    }
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

void gw_pp_discard(int fd)
{
    char buf[4096];
    for (int i = 0; i < 16; i++) {
        ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n <= 0 && !(n < 0 && errno == EINTR))
            return;
    }
}
