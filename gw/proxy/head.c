/* The heads of a proxied request (proxy/proxy.c): the request head sent upstream (RFC
 * 9110 §7.6: hop-by-hop fields dropped, X-Forwarded-For / X-Real-IP / proxy_set_header)
 * and the response head re-framed for the client (chunked or close-delimited bodies). */
#include "proxy/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"
#include "core/stats.h"
#include "http/h2.h"
#include "proxy/response.h"

/* ---- a growable string (abort on out of memory, as the connection buffers) ---- */

void gw_proxy_sb_add(sbuf_t *b, const char *s, size_t n)
{
    if (n > SIZE_MAX / 4) /* never: a length underflow upstream (and gcc 12 -O3 sees the path) */
        abort();
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *q = realloc(b->s, cap);
        if (!q)
            abort();
        b->s = q;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}

void gw_proxy_sb_str(sbuf_t *b, const char *s)
{
    gw_proxy_sb_add(b, s, strlen(s));
}

/* ---- request head ---- */

/* hop-by-hop (http/req.h's one table), and Content-Length: the proxy frames bodies anew */
static int hop_by_hop(const char *n, size_t nl)
{
    return gw_http_hop_by_hop(n, nl) || (nl == 14 && strncasecmp(n, "content-length", 14) == 0);
}

/* Is field name n one of the tokens of the Connection values (RFC 9110 §7.6.1)? */
static int named_in_connection(const gw_http_header_t *h, size_t nh, const char *n, size_t nl)
{
    for (size_t i = 0; i < nh; i++) {
        if (!gw_http_token_eq(h[i].name, h[i].name_len, "connection"))
            continue;
        size_t pos = 0, el;
        const char *e;
        while (gw_proxy_list_elem(h[i].value, h[i].value_len, &pos, &e, &el))
            if (el == nl && strncasecmp(e, n, nl) == 0)
                return 1;
    }
    return 0;
}

static const gw_conf_cmd_t default_headers[] = {
    {"Host", "$proxy_host"},
    {"X-Real-IP", "$remote_addr"},
    {"X-Forwarded-For", "$proxy_add_x_forwarded_for"},
    {"X-Forwarded-Proto", "$scheme"},
};

static void add_host(sbuf_t *b, const gw_proxy_t *p)
{
    const gw_http_request_t *r = &p->rq->req;
    if (r->host && r->host_len) {
        size_t n = r->host_len;
        const char *h = r->host;
        const char *colon = h[0] == '[' ? memchr(h, ']', n) : memchr(h, ':', n);
        if (colon && h[0] == '[')
            n = (size_t)(colon - h) + 1;
        else if (colon)
            n = (size_t)(colon - h);
        for (size_t i = 0; i < n; i++) {
            char ch = h[i];
            if (ch >= 'A' && ch <= 'Z')
                ch = (char)(ch + 32);
            gw_proxy_sb_add(b, &ch, 1);
        }
    } else if (p->rq->vs->conf->server_names.n) {
        gw_proxy_sb_str(b, p->rq->vs->conf->server_names.v[0]);
    }
}

/* Expand the variables of a proxy_set_header value (unknown names stay literal). */
static void expand(sbuf_t *b, const char *v, const gw_proxy_t *p)
{
    const gw_conn_t *c = p->c;
    const gw_http_request_t *r = &p->rq->req;
    while (*v) {
        if (*v != '$') {
            const char *d = strchr(v, '$');
            size_t n = d ? (size_t)(d - v) : strlen(v);
            gw_proxy_sb_add(b, v, n);
            v += n;
            continue;
        }
        const char *s = v + 1;
        size_t n = 0;
        while ((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') || s[n] == '_')
            n++;
#define VAR(name) (n == sizeof(name) - 1 && memcmp(s, name, n) == 0)
        if (VAR("host")) {
            add_host(b, p);
        } else if (VAR("http_host")) {
            if (r->host)
                gw_proxy_sb_add(b, r->host, r->host_len);
        } else if (VAR("remote_addr")) {
            gw_proxy_sb_str(b, c->s.peer_text);
        } else if (VAR("scheme")) {
            gw_proxy_sb_str(b, c->s.ssl ? "https" : "http");
        } else if (VAR("proxy_host")) {
            gw_proxy_sb_str(b, p->up->conf->name);
        } else if (VAR("request_uri")) {
            gw_proxy_sb_add(b, r->target, r->target_len);
        } else if (VAR("proxy_add_x_forwarded_for")) {
            for (size_t i = 0; i < r->n_headers; i++) {
                if (gw_http_token_eq(r->headers[i].name, r->headers[i].name_len,
                                     "x-forwarded-for") &&
                    r->headers[i].value_len) {
                    gw_proxy_sb_add(b, r->headers[i].value, r->headers[i].value_len);
                    gw_proxy_sb_str(b, ", ");
                }
            }
            gw_proxy_sb_str(b, c->s.peer_text);
        } else if (n > 5 && memcmp(s, "http_", 5) == 0) {
            /* $http_NAME: the first field NAME ('_' matches '-') */
            for (size_t i = 0; i < r->n_headers; i++) {
                const gw_http_header_t *h = &r->headers[i];
                if (h->name_len != n - 5)
                    continue;
                size_t k = 0;
                for (; k < h->name_len; k++) {
                    char a = h->name[k], e = s[5 + k];
                    if (a >= 'A' && a <= 'Z')
                        a = (char)(a + 32);
                    if (a == '-')
                        a = '_';
                    if (a != e)
                        break;
                }
                if (k == h->name_len) {
                    gw_proxy_sb_add(b, h->value, h->value_len);
                    break;
                }
            }
        } else {
            /* the other variables (http/vars.h); unknown names stay literal */
            gw_vbuf_t vb = {0};
            if (gw_vars_eval((gw_conn_t *)c, s, n, &vb)) {
                for (size_t i = 0; i < vb.len; i++) /* a value never ends the field line */
                    if ((unsigned char)vb.s[i] >= ' ' && vb.s[i] != 0x7f)
                        gw_proxy_sb_add(b, vb.s + i, 1);
            } else {
                gw_proxy_sb_add(b, v, n + 1);
            }
            gw_vbuf_free(&vb);
        }
#undef VAR
        v = s + n;
    }
}

/* Percent-encode what may not appear raw in a path (RFC 3986 §3.3). */
static void add_escaped_path(sbuf_t *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            strchr("-._~!$&'()*+,;=:@/", ch)) {
            gw_proxy_sb_add(b, (const char *)&ch, 1);
        } else {
            char e[3] = {'%', hex[ch >> 4], hex[ch & 15]};
            gw_proxy_sb_add(b, e, 3);
        }
    }
}

void gw_proxy_build_head(gw_proxy_t *p, const char *norm, size_t norm_len)
{
    const gw_http_request_t *r = &p->rq->req;
    const gw_location_t *loc = p->loc;
    sbuf_t b = {0};
    gw_proxy_sb_add(&b, r->method_str, r->method_len);
    gw_proxy_sb_str(&b, " ");
    if (loc->proxy_uri) {
        /* nginx: the part of the normalised path that matched the location is replaced */
        size_t pl = strlen(loc->path);
        gw_proxy_sb_str(&b, loc->proxy_uri);
        if (loc->match != GW_LOC_EXACT && norm_len >= pl)
            add_escaped_path(&b, norm + pl, norm_len - pl);
    } else {
        gw_proxy_sb_add(&b, r->path, r->path_len);
    }
    if (r->query) {
        gw_proxy_sb_str(&b, "?");
        gw_proxy_sb_add(&b, r->query, r->query_len);
    }
    gw_proxy_sb_str(&b, " HTTP/1.1\r\n");

    const gw_conf_cmd_t *set = ls(p)->proxy_headers;
    size_t nset = ls(p)->n_proxy_headers;
    if (!ls(p)->proxy_headers_set && nset == 0) {
        set = default_headers;
        nset = sizeof(default_headers) / sizeof(default_headers[0]);
    }
    sbuf_t v = {0};
    for (size_t i = 0; i < nset; i++) {
        v.n = 0;
        expand(&v, set[i].value, p);
        if (v.n == 0)
            continue; /* an empty value removes the field (nginx) */
        gw_proxy_sb_str(&b, set[i].name);
        gw_proxy_sb_str(&b, ": ");
        gw_proxy_sb_add(&b, v.s, v.n);
        gw_proxy_sb_str(&b, "\r\n");
    }
    free(v.s);
    for (size_t i = 0; i < r->n_headers; i++) {
        const gw_http_header_t *h = &r->headers[i];
        if (hop_by_hop(h->name, h->name_len) || gw_http_token_eq(h->name, h->name_len, "host") ||
            gw_http_token_eq(h->name, h->name_len, "expect") ||
            named_in_connection(r->headers, r->n_headers, h->name, h->name_len))
            continue;
        size_t k;
        for (k = 0; k < nset; k++)
            if (strlen(set[k].name) == h->name_len &&
                strncasecmp(set[k].name, h->name, h->name_len) == 0)
                break;
        if (k < nset)
            continue; /* replaced (or removed) by proxy_set_header */
        gw_proxy_sb_add(&b, h->name, h->name_len);
        gw_proxy_sb_str(&b, ": ");
        gw_proxy_sb_add(&b, h->value, h->value_len);
        gw_proxy_sb_str(&b, "\r\n");
    }
    /* exactly one framing, ours (RFC 9112 §6) */
    char line[64];
    if (p->rb) {
        /* Content-Length, once the body is read (gw_proxy_buffer_body) */
    } else if (r->chunked) {
        gw_proxy_sb_str(&b, "Transfer-Encoding: chunked\r\n");
    } else if (r->has_content_length) {
        snprintf(line, sizeof(line), "Content-Length: %llu\r\n",
                 (unsigned long long)r->content_length);
        gw_proxy_sb_str(&b, line);
    }
    if (p->up->conf->keepalive == 0)
        gw_proxy_sb_str(&b, "Connection: close\r\n");
    gw_proxy_sb_str(&b, "\r\n");
    p->head = b.s;
    p->head_len = b.n;
}

/* Forward the response head to the client; -1 when malformed. */
int gw_proxy_forward_head(gw_proxy_t *p, size_t hl, int status, int has_cl, unsigned long long cl,
                          int chunked, int up_close)
{
    gw_conn_t *c = p->c;
    int no_body = p->is_head || status == 204 || status == 304;
    if (no_body)
        p->rs = RS_DONE;
    else if (chunked == 1)
        p->rs = RS_CHUNKED;
    else if (chunked == 0 && has_cl)
        p->rs = cl ? RS_CL : RS_DONE;
    else
        p->rs = RS_EOF;
    p->up_close = up_close || p->rs == RS_EOF;
    p->resp_left = cl;
    if (p->rs == RS_CHUNKED)
        gw_http_chunked_init(&p->rchunked);
    int delimited = p->rs == RS_CHUNKED || p->rs == RS_EOF;
    int ka = 0;
    if (!p->st) {
        if (delimited && p->client_minor == 0)
            c->rq->close_after = 1; /* HTTP/1.0 knows no chunked: the close ends the body */
        if (!p->body_done)
            c->rq->close_after = 1;
        ka = c->rq->keep_alive && !c->rq->close_after && !gw_conn_stopping(c);
        c->rq->keep_alive = ka;
        p->chunk_out = delimited && p->client_minor == 1;
    }

    sbuf_t b = {0};
    size_t pos = 0, ll;
    const char *l;
    gw_proxy_next_line(p->uin, hl, &pos, &l, &ll);
    if (!p->st) {
        gw_proxy_sb_str(&b, "HTTP/1.1");
        gw_proxy_sb_add(&b, l + 8, ll - 8); /* " 200 OK" */
        gw_proxy_sb_str(&b, "\r\n");
    }
    size_t fields = pos;
    for (;;) {
        gw_proxy_next_line(p->uin, hl, &pos, &l, &ll);
        if (ll == 0)
            break;
        size_t nl, vl;
        const char *v;
        gw_proxy_split_field(l, ll, &nl, &v, &vl);
        if (hop_by_hop(l, nl))
            continue;
        /* fields named by the upstream's Connection are hop-by-hop too */
        int named = 0;
        size_t q = fields, ql;
        const char *m;
        for (;;) {
            gw_proxy_next_line(p->uin, hl, &q, &m, &ql);
            if (ql == 0)
                break;
            size_t mn, mvl;
            const char *mv;
            gw_proxy_split_field(m, ql, &mn, &mv, &mvl);
            if (mn == 10 && strncasecmp(m, "connection", 10) == 0) {
                size_t p2 = 0, el;
                const char *e;
                while (gw_proxy_list_elem(mv, mvl, &p2, &e, &el))
                    if (el == nl && strncasecmp(e, l, nl) == 0)
                        named = 1;
            }
        }
        if (named)
            continue;
        gw_proxy_sb_add(&b, l, ll);
        gw_proxy_sb_str(&b, "\r\n");
    }
    p->rq->status = status;
    GW_STAT_ADD(responses[status / 100], 1);
    p->head_fwd = 1;
    if (p->st) { /* HTTP/2: the fields as HEADERS, the body as DATA (RFC 9113 §8.1) */
        gw_proxy_sb_str(&b, "");
        int64_t len = has_cl && chunked == 0 ? (int64_t)cl : -1;
        gw_h2_proxy_head(p->st, status, len, b.s, p->rs == RS_DONE);
        free(b.s);
        gw_proxy_consume_uin(p, hl);
        return 0;
    }
    char line[64];
    if (p->chunk_out) {
        gw_proxy_sb_str(&b, "Transfer-Encoding: chunked\r\n");
    } else if (has_cl && chunked == 0 && status != 204 && (status != 304 || p->is_head)) {
        snprintf(line, sizeof(line), "Content-Length: %llu\r\n", cl);
        gw_proxy_sb_str(&b, line);
    }
    gw_resp_append(c, b.s, b.n);
    c->rq->v.head_bytes = b.n;
    c->rq->v.upstream_status = status;
    gw_headers_emit(c, status); /* add_header: http/headers.c */
    const char *last = ka ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
    gw_resp_append(c, last, strlen(last));
    c->rq->v.head_bytes += strlen(last);
    free(b.s);
    gw_proxy_consume_uin(p, hl);
    return 0;
}

/* Turn received upstream bytes into client output. 0, or -1 on garbage. */