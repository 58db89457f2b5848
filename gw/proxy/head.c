/* The heads of a proxied request (proxy/proxy.c): the request head sent upstream (RFC
 * 9110 §7.6: hop-by-hop fields dropped, X-Forwarded-For / X-Real-IP / proxy_set_header)
 * and the response head re-framed for the client (chunked or close-delimited bodies). */
#include "proxy/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/stats.h"
#include "http/h2.h"
#include "proxy/response.h"

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

/* The field "NAME: VALUE" of a proxy_set_header entry, its value expanded (http/vars.h, both
 * protocols); none when the value expands to nothing (nginx removes the field). */
static void set_field(gw_vbuf_t *b, gw_req_t *rq, const gw_conf_cmd_t *f)
{
    size_t mark = b->len;
    gw_vbuf_str(b, f->name);
    gw_vbuf_str(b, ": ");
    size_t vstart = b->len;
    gw_vars_expand(rq, f->value, 1, b);
    if (b->len == vstart)
        b->len = mark;
    else
        gw_vbuf_str(b, "\r\n");
}

/* Percent-encode what may not appear raw in a path (RFC 3986 §3.3). */
static void add_escaped_path(gw_vbuf_t *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            strchr("-._~!$&'()*+,;=:@/", ch)) {
            gw_vbuf_add(b, (const char *)&ch, 1);
        } else {
            char e[3] = {'%', hex[ch >> 4], hex[ch & 15]};
            gw_vbuf_add(b, e, 3);
        }
    }
}

void gw_proxy_build_head(gw_proxy_t *p, const char *norm, size_t norm_len)
{
    const gw_http_request_t *r = &p->rq->req;
    const gw_location_t *loc = p->loc;
    gw_vbuf_t b = {0};
    gw_vbuf_add(&b, r->method_str, r->method_len);
    gw_vbuf_str(&b, " ");
    if (loc->proxy_uri) {
        /* nginx: the part of the normalised path that matched the location is replaced */
        size_t pl = strlen(loc->path);
        gw_vbuf_str(&b, loc->proxy_uri);
        if (loc->match != GW_LOC_EXACT && norm_len >= pl)
            add_escaped_path(&b, norm + pl, norm_len - pl);
    } else {
        gw_vbuf_add(&b, r->path, r->path_len);
    }
    if (r->query) {
        gw_vbuf_str(&b, "?");
        gw_vbuf_add(&b, r->query, r->query_len);
    }
    gw_vbuf_str(&b, " HTTP/1.1\r\n");

    const gw_conf_cmd_t *set = ls(p)->proxy_headers;
    size_t nset = ls(p)->n_proxy_headers;
    if (!ls(p)->proxy_headers_set && nset == 0) {
        set = default_headers;
        nset = sizeof(default_headers) / sizeof(default_headers[0]);
    } else {
        /* nginx: Host $proxy_host is sent whatever proxy_set_header lists, unless Host is
         * one of them (the client's Host never goes up unless set): a request without Host
         * is one an HTTP/1.1 server must refuse (RFC 9112 §3.2) */
        size_t k;
        for (k = 0; k < nset; k++)
            if (strcasecmp(set[k].name, "host") == 0)
                break;
        if (k == nset)
            set_field(&b, p->rq, &default_headers[0]);
    }
    for (size_t i = 0; i < nset; i++)
        set_field(&b, p->rq, &set[i]);
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
        gw_vbuf_add(&b, h->name, h->name_len);
        gw_vbuf_str(&b, ": ");
        gw_vbuf_add(&b, h->value, h->value_len);
        gw_vbuf_str(&b, "\r\n");
    }
    /* exactly one framing, ours (RFC 9112 §6) */
    char line[64];
    if (p->rb) {
        /* Content-Length, once the body is read (gw_proxy_buffer_body) */
    } else if (r->chunked) {
        gw_vbuf_str(&b, "Transfer-Encoding: chunked\r\n");
    } else if (r->has_content_length) {
        snprintf(line, sizeof(line), "Content-Length: %llu\r\n",
                 (unsigned long long)r->content_length);
        gw_vbuf_str(&b, line);
    }
    if (p->up->conf->keepalive == 0)
        gw_vbuf_str(&b, "Connection: close\r\n");
    gw_vbuf_str(&b, "\r\n");
    p->head = b.s;
    p->head_len = b.len;
}

/* A field line of a response head that gw_proxy_parse_response accepted */
typedef struct field {
    const char *l, *v; /* the line (its name first), its value */
    size_t ll, nl, vl; /* their lengths, the name's */
} field_t;

/* The next field of the head buf[*pos..hl): 0 at the empty line that ends it. */
static int next_field(const char *buf, size_t hl, size_t *pos, field_t *f)
{
    gw_proxy_next_line(buf, hl, pos, &f->l, &f->ll);
    if (f->ll == 0)
        return 0;
    gw_proxy_split_field(f->l, f->ll, &f->nl, &f->v, &f->vl);
    return 1;
}

/* Is the response field n (nl bytes) one of the names v[0..nv)? */
static int listed(const char *const *v, size_t nv, const char *n, size_t nl)
{
    for (size_t i = 0; i < nv; i++)
        if (strlen(v[i]) == nl && strncasecmp(v[i], n, nl) == 0)
            return 1;
    return 0;
}

/* Is the upstream's response field n hidden from the client? nginx's default list
 * (ngx_http_proxy_module's hide headers), then proxy_hide_header, less proxy_pass_header.
 * The default names begin with D, S or X: most fields are told apart by that letter. */
static int hidden(const gw_loc_settings_t *l, const char *n, size_t nl)
{
    static const char *const dflt[] = {"Date",
                                       "Server",
                                       "X-Pad",
                                       "X-Accel-Expires",
                                       "X-Accel-Redirect",
                                       "X-Accel-Limit-Rate",
                                       "X-Accel-Buffering",
                                       "X-Accel-Charset"};
    if (l->proxy_hide_headers.n &&
        listed((const char *const *)l->proxy_hide_headers.v, l->proxy_hide_headers.n, n, nl))
        return 1;
    int c = nl ? n[0] | 0x20 : 0;
    if (c != 'd' && c != 's' && c != 'x')
        return 0;
    return listed(dflt, sizeof(dflt) / sizeof(dflt[0]), n, nl) &&
           !listed((const char *const *)l->proxy_pass_headers.v, l->proxy_pass_headers.n, n, nl);
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
            p->rq->close_after = 1; /* HTTP/1.0 knows no chunked: the close ends the body */
        if (!p->body_done)
            p->rq->close_after = 1;
        ka = p->rq->keep_alive && !p->rq->close_after && !gw_conn_stopping(c);
        p->rq->keep_alive = ka;
        p->chunk_out = delimited && p->client_minor == 1;
    }

    gw_vbuf_t b = {0};
    size_t pos = 0, ll;
    const char *l;
    gw_proxy_next_line(p->uin, hl, &pos, &l, &ll);
    if (!p->st) {
        gw_vbuf_str(&b, "HTTP/1.1");
        gw_vbuf_add(&b, l + 8, ll - 8); /* " 200 OK" */
        gw_vbuf_str(&b, "\r\n");
    }
    size_t fields = pos;
    field_t f, m;
    int own_server = 1, own_date = 1; /* the gateway's, unless the upstream's are passed */
    while (next_field(p->uin, hl, &pos, &f)) {
        if (hop_by_hop(f.l, f.nl) || hidden(ls(p), f.l, f.nl))
            continue;
        /* fields named by the upstream's Connection are hop-by-hop too */
        int named = 0;
        for (size_t q = fields; !named && next_field(p->uin, hl, &q, &m);) {
            if (m.nl != 10 || strncasecmp(m.l, "connection", 10) != 0)
                continue;
            size_t p2 = 0, el;
            const char *e;
            while (gw_proxy_list_elem(m.v, m.vl, &p2, &e, &el))
                if (el == f.nl && strncasecmp(e, f.l, f.nl) == 0)
                    named = 1;
        }
        if (named)
            continue;
        if (f.nl == 6 && strncasecmp(f.l, "server", 6) == 0)
            own_server = 0;
        if (f.nl == 4 && strncasecmp(f.l, "date", 4) == 0)
            own_date = 0;
        gw_vbuf_add(&b, f.l, f.ll);
        gw_vbuf_str(&b, "\r\n");
    }
    if (own_server)
        gw_vbuf_str(&b, "Server: tlsgate\r\n");
    if (own_date) {
        gw_vbuf_str(&b, "Date: ");
        gw_vbuf_str(&b, gw_http_date());
        gw_vbuf_str(&b, "\r\n");
    }
    p->rq->status = status;
    p->rq->v.upstream_status = status;
    GW_STAT_ADD(responses[status / 100], 1);
    p->head_fwd = 1;
    if (p->st) { /* HTTP/2: the fields as HEADERS, the body as DATA (RFC 9113 §8.1) */
        gw_headers_add(p->rq, status, &b); /* add_header: http/headers.c */
        gw_vbuf_str(&b, "");
        int64_t len = has_cl && chunked == 0 ? (int64_t)cl : -1;
        gw_h2_proxy_head(p->st, status, len, b.s, p->rs == RS_DONE);
        free(b.s);
        gw_proxy_consume_uin(p, hl);
        return 0;
    }
    char line[64];
    if (p->chunk_out) {
        gw_vbuf_str(&b, "Transfer-Encoding: chunked\r\n");
    } else if (has_cl && chunked == 0 && status != 204 && (status != 304 || p->is_head)) {
        snprintf(line, sizeof(line), "Content-Length: %llu\r\n", cl);
        gw_vbuf_str(&b, line);
    }
    gw_headers_add(p->rq, status, &b); /* add_header: http/headers.c */
    gw_vbuf_str(&b, ka ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n");
    gw_resp_append(c, b.s, b.len);
    p->rq->v.head_bytes = b.len;
    free(b.s);
    gw_proxy_consume_uin(p, hl);
    return 0;
}

/* Turn received upstream bytes into client output. 0, or -1 on garbage. */