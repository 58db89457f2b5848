#include "proxy/response.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>


static int tchar(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

int gw_proxy_next_line(const char *buf, size_t end, size_t *pos, const char **l, size_t *ll)
{
    const char *nl = memchr(buf + *pos, '\n', end - *pos);
    if (!nl)
        return -1;
    size_t e = (size_t)(nl - buf);
    *l = buf + *pos;
    *ll = e - *pos;
    if (*ll && (*l)[*ll - 1] == '\r')
        (*ll)--;
    if (memchr(*l, '\r', *ll))
        return -1;
    *pos = e + 1;
    return 0;
}

int gw_proxy_split_field(const char *l, size_t ll, size_t *nl, const char **v, size_t *vl)
{
    size_t k = 0;
    while (k < ll && tchar((unsigned char)l[k]))
        k++;
    if (k == 0 || k == ll || l[k] != ':')
        return -1;
    *nl = k;
    size_t b = k + 1, e = ll;
    while (b < e && (l[b] == ' ' || l[b] == '\t'))
        b++;
    while (e > b && (l[e - 1] == ' ' || l[e - 1] == '\t'))
        e--;
    for (size_t i = b; i < e; i++)
        if (((unsigned char)l[i] < ' ' && l[i] != '\t') || l[i] == 0x7f)
            return -1;
    *v = l + b;
    *vl = e - b;
    return 0;
}

int gw_proxy_list_elem(const char *v, size_t vl, size_t *pos, const char **e, size_t *el)
{
    while (*pos < vl) {
        size_t b = *pos;
        while (b < vl && (v[b] == ' ' || v[b] == '\t' || v[b] == ','))
            b++;
        size_t f = b;
        while (f < vl && v[f] != ',')
            f++;
        *pos = f;
        size_t t = f;
        while (t > b && (v[t - 1] == ' ' || v[t - 1] == '\t'))
            t--;
        if (t > b) {
            *e = v + b;
            *el = t - b;
            return 1;
        }
    }
    return 0;
}

int gw_proxy_parse_response(const char *buf, size_t len, int *status, int *minor, int *has_cl,
                            unsigned long long *cl, int *chunked, int *conn_close)
{
    /* the head ends at the first empty line */
    size_t end = 0;
    for (size_t i = 0; i < len; i++) {
        if (buf[i] != '\n')
            continue;
        if (i + 1 < len && buf[i + 1] == '\n') {
            end = i + 2;
            break;
        }
        if (i + 2 < len && buf[i + 1] == '\r' && buf[i + 2] == '\n') {
            end = i + 3;
            break;
        }
    }
    if (!end) {
        /* a status line that cannot be HTTP/1.x is garbage already */
        size_t n = len < 7 ? len : 7;
        return memcmp(buf, "HTTP/1.", n) == 0 ? 0 : -1;
    }
    size_t pos = 0, ll;
    const char *l;
    if (gw_proxy_next_line(buf, end, &pos, &l, &ll) != 0)
        return -1;
    /* status-line = HTTP-version SP status-code SP [ reason-phrase ] (RFC 9112 §4) */
    if (ll < 12 || memcmp(l, "HTTP/1.", 7) != 0 || l[7] < '0' || l[7] > '9' || l[8] != ' ' ||
        l[9] < '1' || l[9] > '5' || l[10] < '0' || l[10] > '9' || l[11] < '0' || l[11] > '9' ||
        (ll > 12 && l[12] != ' '))
        return -1;
    *minor = l[7] - '0';
    *status = (l[9] - '0') * 100 + (l[10] - '0') * 10 + (l[11] - '0');
    *has_cl = 0;
    *cl = 0;
    *chunked = 0;
    int te = 0, keep = 0, close_tok = 0;
    for (;;) {
        if (gw_proxy_next_line(buf, end, &pos, &l, &ll) != 0)
            return -1;
        if (ll == 0)
            break;
        if (l[0] == ' ' || l[0] == '\t')
            return -1; /* obs-fold (RFC 9112 §5.2): not accepted from upstreams either */
        size_t nl, vl;
        const char *v;
        if (gw_proxy_split_field(l, ll, &nl, &v, &vl) != 0)
            return -1;
        if (nl == 14 && strncasecmp(l, "content-length", 14) == 0) {
            size_t p2 = 0, el;
            const char *e;
            int any = 0;
            while (gw_proxy_list_elem(v, vl, &p2, &e, &el)) {
                unsigned long long x = 0;
                for (size_t i = 0; i < el; i++) {
                    if (e[i] < '0' || e[i] > '9' ||
                        x > (0x7fffffffffffffffULL - (unsigned)(e[i] - '0')) / 10)
                        return -1; /* lengths up to 2^63-1, as the request parser's */
                    x = x * 10 + (unsigned)(e[i] - '0');
                }
                if ((*has_cl && x != *cl))
                    return -1;
                *has_cl = 1;
                *cl = x;
                any = 1;
            }
            if (!any)
                return -1;
        } else if (nl == 17 && strncasecmp(l, "transfer-encoding", 17) == 0) {
            size_t p2 = 0, el;
            const char *e;
            while (gw_proxy_list_elem(v, vl, &p2, &e, &el)) {
                te = 1;
                *chunked = el == 7 && strncasecmp(e, "chunked", 7) == 0 ? 1 : 2;
            }
        } else if (nl == 10 && strncasecmp(l, "connection", 10) == 0) {
            size_t p2 = 0, el;
            const char *e;
            while (gw_proxy_list_elem(v, vl, &p2, &e, &el)) {
                if (el == 5 && strncasecmp(e, "close", 5) == 0)
                    close_tok = 1;
                else if (el == 10 && strncasecmp(e, "keep-alive", 10) == 0)
                    keep = 1;
            }
        }
    }
    /* RFC 9112 §6.3: both framings is a smuggling attempt or a broken upstream */
    if (te && *has_cl)
        return -1;
    *conn_close = close_tok || (*minor == 0 && !keep);
    return (int)end;
}
