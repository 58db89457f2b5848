#include "proxy/proxy.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/stats.h"
#include "http/conn.h"
#include "http/parser.h"
#include "proxy/reqbuf.h"
#include "proxy/response.h"
#include "proxy/upstream.h"
#include "proxy/upstream_tls.h"
#include "worker.h"

#define UOUT_MIN (64 * 1024)   /* bytes queued for the upstream at most (plus the head) */
#define UIN_CAP (32 * 1024)    /* response bytes read at once; also the response head limit */
#define OUT_HIGH (64 * 1024)   /* client output pending above which the upstream is not read */
#define BODY_IN (64 * 1024)    /* client input buffer while a body streams */

enum { RS_HEAD = 0, RS_CL, RS_CHUNKED, RS_EOF, RS_DONE };

typedef struct gw_proxy {
    gw_posted_t post;
    gw_conn_t *c;
    const gw_location_t *loc;
    gw_upstream_t *up;
    gw_upconn_t *uc;
    int peer;              /* -1 before the first pick */
    int tries;             /* upstream connections tried */
    int idempotent;
    int is_head;
    int client_minor;
    int from_up;           /* driven because of an upstream event or timer */
    int probe_client;      /* look for a client abort (not before the client's next event) */
    int up_again;          /* the upstream said EAGAIN and no event came since: no read */
    /* request */
    char *head;            /* the request head we send (kept for a retry) */
    size_t head_len;
    uint64_t body_left;
    int body_chunked;
    gw_http_chunked_t chunked;
    int body_done;
    int body_started;      /* body bytes were taken from the client: no replay possible */
    int expect_continue, continue_sent;
    char *uout;
    size_t uout_len, uout_off, uout_cap;
    int head_queued, req_sent, sent_any, send_failed;
    /* response */
    char *uin;
    size_t uin_len;
    int rs;
    int got_byte;          /* any response byte on this attempt */
    int head_fwd;          /* the response head went to the client: no error page now */
    uint64_t resp_left;
    gw_http_chunked_t rchunked;
    int chunk_out;         /* re-frame the body as chunked for the client */
    int up_close;          /* the upstream connection cannot be reused */
    /* proxy_request_buffering on (proxy/reqbuf.h) */
    gw_reqbuf_t *rb;       /* the whole body, read before the upstream is contacted */
    uint64_t rb_off;       /* bytes of it sent on this attempt */
    int rb_sent;
} gw_proxy_t;

static const gw_loc_settings_t *ls(const gw_proxy_t *p)
{
    return &p->loc->loc;
}

/* ---- a growable string (abort on out of memory, as the connection buffers) ---- */

typedef struct sbuf {
    char *s;
    size_t n, cap;
} sbuf_t;

static void sb_add(sbuf_t *b, const char *s, size_t n)
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

static void sb_str(sbuf_t *b, const char *s)
{
    sb_add(b, s, strlen(s));
}

/* ---- request head ---- */

static int hop_by_hop(const char *n, size_t nl)
{
    static const char *const names[] = {"connection", "keep-alive", "proxy-connection", "te",
                                        "trailer", "transfer-encoding", "upgrade",
                                        "content-length"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strlen(names[i]) == nl && strncasecmp(n, names[i], nl) == 0)
            return 1;
    return 0;
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

static void add_host(sbuf_t *b, const gw_conn_t *c)
{
    const gw_http_request_t *r = &c->rq->req;
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
            sb_add(b, &ch, 1);
        }
    } else if (c->vs->conf->server_names.n) {
        sb_str(b, c->vs->conf->server_names.v[0]);
    }
}

/* Expand the variables of a proxy_set_header value (unknown names stay literal). */
static void expand(sbuf_t *b, const char *v, const gw_proxy_t *p)
{
    const gw_conn_t *c = p->c;
    const gw_http_request_t *r = &c->rq->req;
    while (*v) {
        if (*v != '$') {
            const char *d = strchr(v, '$');
            size_t n = d ? (size_t)(d - v) : strlen(v);
            sb_add(b, v, n);
            v += n;
            continue;
        }
        const char *s = v + 1;
        size_t n = 0;
        while ((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') || s[n] == '_')
            n++;
#define VAR(name) (n == sizeof(name) - 1 && memcmp(s, name, n) == 0)
        if (VAR("host")) {
            add_host(b, c);
        } else if (VAR("http_host")) {
            if (r->host)
                sb_add(b, r->host, r->host_len);
        } else if (VAR("remote_addr")) {
            sb_str(b, c->peer_text);
        } else if (VAR("scheme")) {
            sb_str(b, c->ssl ? "https" : "http");
        } else if (VAR("proxy_host")) {
            sb_str(b, p->up->conf->name);
        } else if (VAR("request_uri")) {
            sb_add(b, r->target, r->target_len);
        } else if (VAR("proxy_add_x_forwarded_for")) {
            for (size_t i = 0; i < r->n_headers; i++) {
                if (gw_http_token_eq(r->headers[i].name, r->headers[i].name_len,
                                     "x-forwarded-for") && r->headers[i].value_len) {
                    sb_add(b, r->headers[i].value, r->headers[i].value_len);
                    sb_str(b, ", ");
                }
            }
            sb_str(b, c->peer_text);
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
                    sb_add(b, h->value, h->value_len);
                    break;
                }
            }
        } else {
            /* the other variables (http/vars.h); unknown names stay literal */
            gw_vbuf_t vb = {0};
            if (gw_vars_eval((gw_conn_t *)c, s, n, &vb)) {
                for (size_t i = 0; i < vb.len; i++) /* a value never ends the field line */
                    if ((unsigned char)vb.s[i] >= ' ' && vb.s[i] != 0x7f)
                        sb_add(b, vb.s + i, 1);
            } else {
                sb_add(b, v, n + 1);
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
            sb_add(b, (const char *)&ch, 1);
        } else {
            char e[3] = {'%', hex[ch >> 4], hex[ch & 15]};
            sb_add(b, e, 3);
        }
    }
}

static void build_head(gw_proxy_t *p, const char *norm, size_t norm_len)
{
    gw_conn_t *c = p->c;
    const gw_http_request_t *r = &c->rq->req;
    const gw_location_t *loc = p->loc;
    sbuf_t b = {0};
    sb_add(&b, r->method_str, r->method_len);
    sb_str(&b, " ");
    if (loc->proxy_uri) {
        /* nginx: the part of the normalised path that matched the location is replaced */
        size_t pl = strlen(loc->path);
        sb_str(&b, loc->proxy_uri);
        if (loc->match != GW_LOC_EXACT && norm_len >= pl)
            add_escaped_path(&b, norm + pl, norm_len - pl);
    } else {
        sb_add(&b, r->path, r->path_len);
    }
    if (r->query) {
        sb_str(&b, "?");
        sb_add(&b, r->query, r->query_len);
    }
    sb_str(&b, " HTTP/1.1\r\n");

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
        sb_str(&b, set[i].name);
        sb_str(&b, ": ");
        sb_add(&b, v.s, v.n);
        sb_str(&b, "\r\n");
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
        sb_add(&b, h->name, h->name_len);
        sb_str(&b, ": ");
        sb_add(&b, h->value, h->value_len);
        sb_str(&b, "\r\n");
    }
    /* exactly one framing, ours (RFC 9112 §6) */
    char line[64];
    if (p->rb) {
        /* Content-Length, once the body is read (buffer_body) */
    } else if (r->chunked) {
        sb_str(&b, "Transfer-Encoding: chunked\r\n");
    } else if (r->has_content_length) {
        snprintf(line, sizeof(line), "Content-Length: %llu\r\n",
                 (unsigned long long)r->content_length);
        sb_str(&b, line);
    }
    if (p->up->conf->keepalive == 0)
        sb_str(&b, "Connection: close\r\n");
    sb_str(&b, "\r\n");
    p->head = b.s;
    p->head_len = b.n;
}

/* ---- life cycle ---- */

static void on_posted(gw_posted_t *pp)
{
    gw_proxy_t *p = (gw_proxy_t *)((char *)pp - offsetof(gw_proxy_t, post));
    p->from_up = 1;
    gw_conn_resume(p->c);
}

/* Freed proxy states with their buffers, reused by the next requests: a request costs no
 * malloc/free of ~100 KiB (which glibc would trim and grow back with brk every time). */
#define CACHE_MAX 16
static gw_proxy_t *cache[CACHE_MAX];
static int n_cache;

static void proxy_free(gw_proxy_t *p)
{
    gw_unpost(&p->post);
    if (p->uc)
        gw_upconn_release(p->uc, 0);
    free(p->head);
    p->head = NULL;
    gw_reqbuf_free(p->rb);
    p->rb = NULL;
    p->c->proxy = NULL;
    if (n_cache < CACHE_MAX && p->uout_cap == UOUT_MIN + 64) {
        cache[n_cache++] = p;
        return;
    }
    free(p->uout);
    free(p->uin);
    free(p);
}

static gw_proxy_t *proxy_alloc(void)
{
    if (n_cache) {
        gw_proxy_t *p = cache[--n_cache];
        char *uout = p->uout, *uin = p->uin;
        memset(p, 0, sizeof(*p));
        p->uout = uout;
        p->uin = uin;
        p->uout_cap = UOUT_MIN + 64;
        return p;
    }
    gw_proxy_t *p = calloc(1, sizeof(*p));
    if (!p)
        abort();
    return p;
}

void gw_proxy_conn_free(gw_conn_t *c)
{
    gw_proxy_t *p = c->proxy;
    if (p->uc && p->rs != RS_DONE)
        gw_log(GW_LOG_INFO, 0, "client %s went away: the request to upstream %s is cancelled",
               c->peer_text, p->up->conf->servers[p->peer].text);
    proxy_free(p);
}

/* The response is queued: hand the connection back to the WRITE state. */
static int proxy_end(gw_proxy_t *p)
{
    gw_conn_t *c = p->c;
    if (!p->body_done) {
        /* the rest of the body is unread: the connection cannot carry another request */
        c->close_after = 1;
        c->keep_alive = 0;
    }
    c->body_left = 0;
    c->body_chunked = 0;
    c->state = GW_CONN_WRITE;
    proxy_free(p);
    return 1;
}

/* Answer with an error page instead of a response (none of it was forwarded yet). */
static int fail(gw_proxy_t *p, int status)
{
    gw_conn_t *c = p->c;
    if (p->head_fwd)
        return -1; /* too late for an error page: cut the connection (nginx) */
    if (p->uc) {
        gw_upconn_release(p->uc, 0);
        p->uc = NULL;
    }
    if (!p->body_done)
        c->close_after = 1;
    gw_resp_error(c, status);
    return proxy_end(p);
}

static int64_t connect_timeout(const gw_proxy_t *p)
{
    return ls(p)->proxy_connect_timeout_ms;
}

/* Start an attempt on a (new or pooled) connection. 0, or a drive result. */
static int start_attempt(gw_proxy_t *p)
{
    size_t n = p->up->conf->n_servers;
    for (;;) {
        int peer = gw_upstream_pick(p->up, p->peer);
        if (peer < 0) {
            gw_log(GW_LOG_ERROR, 0, "no live upstreams in \"%s\" for client %s",
                   p->up->conf->name, p->c->peer_text);
            return fail(p, 502);
        }
        p->peer = peer;
        p->tries++;
        gw_vars_upstream_try(p->c, p->up->conf->servers[peer].text); /* $upstream_addr */
        const gw_deploy_loc_t *tls = &ls(p)->dep; /* proxy_pass https:// */
        gw_upconn_t *uc = gw_upconn_get_ctx(p->up, peer, &p->post, tls->proxy_ssl_ctx);
        if (uc && tls->proxy_ssl_ctx && !uc->ssl &&
            gw_upconn_tls_start(uc, tls, p->up->conf->name) != 0) {
            gw_upconn_release(uc, 0);
            uc = NULL;
        }
        if (!uc) {
            if (p->tries < (int)n)
                continue; /* nothing was sent: any method may go to the next server */
            return fail(p, 502);
        }
        p->uc = uc;
        uc->requests++;
        p->head_queued = p->req_sent = p->sent_any = p->send_failed = 0;
        p->rb_off = 0; /* a buffered body is sent again from its start */
        p->rb_sent = p->rb && p->rb->total == 0;
        p->uout_len = p->uout_off = 0;
        p->got_byte = 0;
        p->uin_len = 0;
        p->rs = RS_HEAD;
        p->up_again = 1; /* nothing to read before the request: an event will say */
        gw_upconn_timer(uc, uc->state == GW_UP_CONNECTING ? connect_timeout(p)
                                                          : ls(p)->proxy_send_timeout_ms);
        return 0;
    }
}

/* The attempt failed before the response began. 2: retrying (continue driving), else a
 * drive result. */
static int upstream_error(gw_proxy_t *p, int timeout, const char *what)
{
    gw_conn_t *c = p->c;
    gw_upconn_t *uc = p->uc;
    int reused = uc->reused, connecting = uc->state == GW_UP_CONNECTING;
    const char *text = p->up->conf->servers[p->peer].text;
    /* a pooled connection the upstream closed meanwhile is no failure of the server */
    if (!reused || timeout || p->got_byte)
        gw_upstream_fail(p->up, p->peer);
    gw_log(reused && !timeout ? GW_LOG_INFO : GW_LOG_ERROR, timeout ? 0 : errno,
           "upstream %s %s (client %s, %s connection)", text, what, c->peer_text,
           reused ? "keep-alive" : "new");
    gw_upconn_release(uc, 0);
    p->uc = NULL;
    if (!p->got_byte && !p->head_fwd) {
        size_t n = p->up->conf->n_servers;
        /* nothing sent yet (connect failed): safe for any method, on each server once;
         * sent without an answer: once more, and only when repeating it is harmless */
        int nothing_sent = connecting || !p->sent_any;
        int ok = nothing_sent ? p->tries < (int)n
                              : p->idempotent && !p->body_started && p->tries < 2;
        if (ok && !(timeout && !connecting)) {
            int r = start_attempt(p);
            return r ? r : 2;
        }
    }
    return fail(p, timeout ? 504 : 502);
}

/* Emit response body bytes to the client (re-framed as a chunk when chunk_out). */
static void emit(gw_proxy_t *p, const char *d, size_t n)
{
    gw_conn_t *c = p->c;
    if (!n)
        return;
    if (p->chunk_out) {
        char sz[24];
        int k = snprintf(sz, sizeof(sz), "%zx\r\n", n);
        gw_resp_append(c, sz, (size_t)k);
        gw_resp_append(c, d, n);
        gw_resp_append(c, "\r\n", 2);
    } else {
        gw_resp_append(c, d, n);
    }
    c->bytes_sent += n;
}

static void consume_uin(gw_proxy_t *p, size_t n)
{
    memmove(p->uin, p->uin + n, p->uin_len - n);
    p->uin_len -= n;
}

/* Forward the response head to the client; -1 when malformed. */
static int forward_head(gw_proxy_t *p, size_t hl, int status, int has_cl,
                        unsigned long long cl, int chunked, int up_close)
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
    if (delimited && p->client_minor == 0)
        c->close_after = 1; /* HTTP/1.0 knows no chunked: the close ends the body */
    if (!p->body_done)
        c->close_after = 1;
    int ka = c->keep_alive && !c->close_after && !gw_worker->shutting_down;
    c->keep_alive = ka;
    p->chunk_out = delimited && p->client_minor == 1;

    sbuf_t b = {0};
    size_t pos = 0, ll;
    const char *l;
    gw_proxy_next_line(p->uin, hl, &pos, &l, &ll);
    sb_str(&b, "HTTP/1.1");
    sb_add(&b, l + 8, ll - 8); /* " 200 OK" */
    sb_str(&b, "\r\n");
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
        sb_add(&b, l, ll);
        sb_str(&b, "\r\n");
    }
    char line[64];
    if (p->chunk_out) {
        sb_str(&b, "Transfer-Encoding: chunked\r\n");
    } else if (has_cl && chunked == 0 && status != 204 && (status != 304 || p->is_head)) {
        snprintf(line, sizeof(line), "Content-Length: %llu\r\n", cl);
        sb_str(&b, line);
    }
    gw_resp_append(c, b.s, b.n);
    c->rq->v.head_bytes = b.n;
    c->rq->v.upstream_status = status;
    gw_headers_emit(c, status); /* add_header: http/headers.c */
    const char *last = ka ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
    gw_resp_append(c, last, strlen(last));
    c->rq->v.head_bytes += strlen(last);
    free(b.s);
    c->status = status;
    GW_STAT_ADD(responses[status / 100], 1);
    p->head_fwd = 1;
    consume_uin(p, hl);
    return 0;
}

/* Turn received upstream bytes into client output. 0, or -1 on garbage. */
static int process_response(gw_proxy_t *p)
{
    for (;;) {
        switch (p->rs) {
        case RS_HEAD: {
            int status, minor, has_cl, chunked, up_close;
            unsigned long long cl;
            if (!p->uin_len)
                return 0;
            int hl = gw_proxy_parse_response(p->uin, p->uin_len, &status, &minor, &has_cl, &cl,
                                             &chunked, &up_close);
            if (hl == 0 && p->uin_len == UIN_CAP) {
                gw_log(GW_LOG_ERROR, 0, "upstream %s sent a response head over %d bytes",
                       p->up->conf->servers[p->peer].text, UIN_CAP);
                return -1;
            }
            if (hl == 0)
                return 0;
            if (hl < 0) {
                gw_log(GW_LOG_ERROR, 0, "upstream %s sent an invalid response head",
                       p->up->conf->servers[p->peer].text);
                return -1;
            }
            if (status < 200) {
                if (status == 101)
                    return -1; /* no upgrade was asked for */
                consume_uin(p, (size_t)hl); /* 1xx: interim, ours was sent if needed */
                continue;
            }
            forward_head(p, (size_t)hl, status, has_cl, cl, chunked, up_close);
            continue;
        }
        case RS_CL: {
            size_t take = p->uin_len < p->resp_left ? p->uin_len : (size_t)p->resp_left;
            emit(p, p->uin, take);
            consume_uin(p, take);
            p->resp_left -= take;
            if (p->resp_left == 0)
                p->rs = RS_DONE;
            return 0;
        }
        case RS_CHUNKED: {
            if (!p->uin_len)
                return 0;
            size_t len = p->uin_len, used = 0;
            int r = gw_http_chunked_decode(&p->rchunked, p->uin, &len, &used, 0);
            emit(p, p->uin, len);
            if (r < 0) {
                gw_log(GW_LOG_ERROR, 0, "upstream %s sent invalid chunked framing",
                       p->up->conf->servers[p->peer].text);
                return -1;
            }
            memmove(p->uin, p->uin + used, p->uin_len - used);
            p->uin_len -= used;
            if (r == 1) {
                if (p->chunk_out)
                    gw_resp_append(p->c, "0\r\n\r\n", 5);
                p->rs = RS_DONE;
            }
            return 0;
        }
        case RS_EOF:
            emit(p, p->uin, p->uin_len);
            p->uin_len = 0;
            return 0;
        default:
            if (p->uin_len) /* bytes after the response: the connection is unusable */
                p->up_close = 1;
            p->uin_len = 0;
            return 0;
        }
    }
}

/* Move client body bytes into uout, framed. 1: progress (or the body ended), 0: wait for
 * the client, -1: client gone, -400/-413: bad body. */
static int pull_body(gw_proxy_t *p)
{
    gw_conn_t *c = p->c;
    if (c->in_len == 0) {
        if (p->expect_continue && !p->continue_sent) {
            /* RFC 9110 §10.1.1: ask for the body only now that an upstream waits for it */
            gw_resp_append(c, "HTTP/1.1 100 Continue\r\n\r\n", 25);
            p->continue_sent = 1;
            return 0;
        }
        size_t got = 0;
        int r = gw_conn_recv(c, c->in, c->in_cap, &got);
        if (r == GW_CONN_IO_AGAIN)
            return 0;
        if (r != GW_CONN_IO_OK) {
            gw_log(GW_LOG_INFO, 0, "client %s closed the connection in a request body",
                   c->peer_text);
            return -1;
        }
        c->in_len = got;
        gw_timer_add(&gw_worker->loop, &c->timer, c->vs->conf->srv.send_timeout_ms);
    }
    p->body_started = 1;
    /* c->in may be larger than uout (large_client_header_buffers): take what fits, with
     * room for a chunk's framing; the rest waits in c->in */
    size_t room = p->uout_cap - p->uout_len - 32;
    if (p->body_chunked) {
        int64_t max = c->vs->conf->srv.client_max_body_size;
        size_t len = c->in_len < room ? c->in_len : room, used = 0;
        int r = gw_http_chunked_decode(&p->chunked, c->in, &len, &used,
                                       max > 0 ? (uint64_t)max : 0);
        if (r < 0)
            return r;
        if (len) {
            char sz[24];
            int k = snprintf(sz, sizeof(sz), "%zx\r\n", len);
            memcpy(p->uout + p->uout_len, sz, (size_t)k);
            memcpy(p->uout + p->uout_len + (size_t)k, c->in, len);
            memcpy(p->uout + p->uout_len + (size_t)k + len, "\r\n", 2);
            p->uout_len += (size_t)k + len + 2;
        }
        memmove(c->in, c->in + used, c->in_len - used);
        c->in_len -= used;
        if (r == 1) {
            memcpy(p->uout + p->uout_len, "0\r\n\r\n", 5);
            p->uout_len += 5;
            p->body_done = 1;
        }
        return 1;
    }
    size_t take = c->in_len < p->body_left ? c->in_len : (size_t)p->body_left;
    if (take > room)
        take = room;
    memcpy(p->uout + p->uout_len, c->in, take);
    p->uout_len += take;
    memmove(c->in, c->in + take, c->in_len - take);
    c->in_len -= take;
    p->body_left -= take;
    if (p->body_left == 0)
        p->body_done = 1;
    return 1;
}

void gw_proxy_start(gw_conn_t *c, const gw_location_t *loc, const char *norm, size_t norm_len)
{
    const gw_http_request_t *r = &c->rq->req;
    if (r->method == GW_HTTP_CONNECT) {
        gw_resp_error(c, 405);
        return;
    }
    gw_proxy_t *p = proxy_alloc();
    p->post.run = on_posted;
    p->c = c;
    p->loc = loc;
    p->up = gw_upstream_get(0, loc->proxy_upstream);
    p->peer = -1;
    p->idempotent = r->method == GW_HTTP_GET || r->method == GW_HTTP_HEAD ||
                    r->method == GW_HTTP_PUT || r->method == GW_HTTP_DELETE ||
                    r->method == GW_HTTP_OPTIONS || r->method == GW_HTTP_TRACE;
    p->is_head = r->method == GW_HTTP_HEAD;
    p->client_minor = r->version_minor;
    p->body_chunked = r->chunked;
    p->body_left = r->has_content_length ? r->content_length : 0;
    p->body_done = !p->body_chunked && p->body_left == 0;
    p->expect_continue = r->expect_continue && !p->body_done;
    if (p->body_chunked)
        gw_http_chunked_init(&p->chunked);
    if (!p->body_done && ls(p)->dep.proxy_request_buffering != 0) {
        p->rb = gw_reqbuf_new(p->body_chunked, p->body_left,
                              (size_t)ls(p)->dep.client_body_buffer_size, p->expect_continue);
        p->expect_continue = 0; /* the buffer asks for the body itself */
    }
    build_head(p, norm, norm_len);
    size_t cap = (p->head_len > UOUT_MIN ? p->head_len : UOUT_MIN) + 64;
    if (cap != p->uout_cap) {
        free(p->uout);
        p->uout = malloc(cap);
        p->uout_cap = cap;
    }
    if (!p->uin)
        p->uin = malloc(UIN_CAP);
    if (!p->uout || !p->uin)
        abort();
    /* the head is copied: give its room in c->in to the body (as READ_BODY does) */
    memmove(c->in, c->in + c->head_len, c->in_len - c->head_len);
    c->in_len -= c->head_len;
    c->head_len = 0;
    if (c->in_cap < BODY_IN) {
        char *q = realloc(c->in, BODY_IN);
        if (!q)
            abort();
        c->in = q;
        c->in_cap = BODY_IN;
    }
    c->close_after = 0; /* route_request's Expect rule is for handlers that skip bodies */
    c->proxy = p;
    c->state = GW_CONN_PROXY;
    gw_timer_del(&gw_worker->loop, &c->timer);
    if (p->rb)
        return; /* gw_proxy_drive reads the body first (buffer_body) */
    int rr = start_attempt(p);
    (void)rr; /* a failure queued an error page and left GW_CONN_WRITE */
}

/* proxy_request_buffering on: read the whole body, then give the head its Content-Length
 * and contact the upstream. A drive result, 0 while the client is still sending. */
static int buffer_body(gw_proxy_t *p)
{
    gw_conn_t *c = p->c;
    int64_t max = c->vs->conf->srv.client_max_body_size;
    int r = gw_reqbuf_fill(p->rb, c, max > 0 ? (uint64_t)max : 0);
    if (r == 0) {
        if (!gw_timer_armed(&c->timer))
            gw_timer_add(&gw_worker->loop, &c->timer, c->vs->conf->srv.send_timeout_ms);
        return 0;
    }
    if (r == -1)
        return -1;
    if (r < 0)
        return fail(p, -r); /* 400: a bad chunk size line never reaches the upstream */
    p->body_done = 1;
    gw_timer_del(&gw_worker->loop, &c->timer);
    char line[48];
    int n = snprintf(line, sizeof(line), "Content-Length: %llu\r\n",
                     (unsigned long long)p->rb->total);
    char *h = realloc(p->head, p->head_len + (size_t)n);
    if (!h)
        abort();
    /* before the empty line that ends the head */
    memmove(h + p->head_len - 2 + n, h + p->head_len - 2, 2);
    memcpy(h + p->head_len - 2, line, (size_t)n);
    p->head = h;
    p->head_len += (size_t)n;
    size_t cap = (p->head_len > UOUT_MIN ? p->head_len : UOUT_MIN) + 64;
    if (cap > p->uout_cap) {
        char *q = realloc(p->uout, cap);
        if (!q)
            abort();
        p->uout = q;
        p->uout_cap = cap;
    }
    return start_attempt(p);
}

/* The buffered body into uout. 1, or -500 when the temporary file cannot be read. */
static int pull_buffered(gw_proxy_t *p)
{
    size_t n = gw_reqbuf_read(p->rb, p->rb_off, p->uout + p->uout_len, p->uout_cap - p->uout_len);
    if (n == 0 && p->rb_off < p->rb->total)
        return -500;
    p->uout_len += n;
    p->rb_off += n;
    p->rb_sent = p->rb_off == p->rb->total;
    return 1;
}

/* One pass over both directions. Returns a drive result; *progress tells whether any
 * bytes moved. */
static int pass(gw_proxy_t *p, int *progress, int from_up)
{
    gw_conn_t *c = p->c;
    gw_upconn_t *uc = p->uc;
    if (uc->timed_out) {
        uc->timed_out = 0;
        const char *what = uc->state == GW_UP_CONNECTING ? "timed out connecting"
                           : uc->ssl && !uc->tls_done    ? "timed out in the TLS handshake"
                           : p->req_sent                 ? "timed out sending the response"
                                                         : "timed out reading the request";
        if (p->head_fwd) {
            gw_log(GW_LOG_ERROR, 0, "upstream %s %s (client %s)",
                   p->up->conf->servers[p->peer].text, what, c->peer_text);
            gw_upstream_fail(p->up, p->peer);
            return -1;
        }
        int r = upstream_error(p, 1, what);
        *progress = 1;
        return r == 2 ? 0 : r;
    }
    if (uc->state == GW_UP_CONNECTING) {
        int r = gw_upconn_connected(uc);
        if (r < 0) {
            r = upstream_error(p, 0, "refused or failed the connection");
            *progress = 1;
            return r == 2 ? 0 : r;
        }
        if (r == 0)
            goto client; /* still connecting */
        if (!uc->ssl)
            gw_upconn_timer(uc, ls(p)->proxy_send_timeout_ms);
    }
    if (uc->ssl && !uc->tls_done) { /* proxy_pass https://: proxy/upstream_tls.c */
        int r = gw_upconn_tls_handshake(uc); /* within proxy_connect_timeout */
        if (r < 0) {
            r = upstream_error(p, 0, "failed the TLS handshake");
            *progress = 1;
            return r == 2 ? 0 : r;
        }
        if (r == 0)
            goto client;
        *progress = 1;
        gw_upconn_timer(uc, ls(p)->proxy_send_timeout_ms);
    }

    /* request: head, then the body, up */
    while (!p->req_sent) {
        if (p->uout_off == p->uout_len) {
            p->uout_off = p->uout_len = 0;
            if (!p->head_queued) {
                memcpy(p->uout, p->head, p->head_len);
                p->uout_len = p->head_len;
                p->head_queued = 1;
            } else if (p->rb ? !p->rb_sent : !p->body_done) {
                int r = p->rb ? pull_buffered(p) : pull_body(p);
                if (r == 0)
                    break;
                if (r == -1)
                    return -1;
                if (r < 0)
                    return fail(p, -r);
                *progress = 1;
                continue;
            } else {
                p->req_sent = 1;
                gw_upconn_timer(uc, ls(p)->proxy_read_timeout_ms);
                break;
            }
        }
        ssize_t n = gw_upconn_send(uc, p->uout + p->uout_off, p->uout_len - p->uout_off);
        if (n > 0) {
            p->uout_off += (size_t)n;
            p->sent_any = 1;
            *progress = 1;
            gw_upconn_timer(uc, ls(p)->proxy_send_timeout_ms);
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            break;
        /* the upstream stopped reading: what it answered (if anything) is read below */
        p->send_failed = 1;
        p->req_sent = 1;
        p->up_close = 1;
        gw_upconn_timer(uc, ls(p)->proxy_read_timeout_ms);
        break;
    }

    /* response: down, while the client keeps up. Edge-triggered epoll reports every
     * arrival, so after an EAGAIN the socket is read again only after an event; a read
     * stopped by a full client buffer goes on when the client drained it. */
    while (p->rs != RS_DONE && !p->up_again && c->out_len - c->out_off < OUT_HIGH) {
        ssize_t n = gw_upconn_recv(uc, p->uin + p->uin_len, UIN_CAP - p->uin_len);
        if (n > 0) {
            p->got_byte = 1;
            p->uin_len += (size_t)n;
            *progress = 1;
            if (p->req_sent)
                gw_upconn_timer(uc, ls(p)->proxy_read_timeout_ms);
            if (process_response(p) < 0) {
                gw_upstream_fail(p->up, p->peer);
                return fail(p, 502);
            }
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            p->up_again = errno == EAGAIN;
            break;
        }
        if (n == 0 && p->rs == RS_EOF) {
            if (p->chunk_out)
                gw_resp_append(c, "0\r\n\r\n", 5);
            p->rs = RS_DONE;
            p->up_close = 1;
            break;
        }
        *progress = 1;
        if (!p->got_byte) {
            int r = upstream_error(p, 0, n == 0 ? "closed the connection before answering"
                                                : "reset the connection before answering");
            return r == 2 ? 0 : r;
        }
        gw_log(GW_LOG_ERROR, n < 0 ? errno : 0,
               "upstream %s closed the connection in the middle of the response (client %s)",
               p->up->conf->servers[p->peer].text, c->peer_text);
        gw_upstream_fail(p->up, p->peer);
        return fail(p, 502);
    }

    if (p->rs == RS_DONE) {
        int reuse = !p->up_close && p->req_sent && p->body_done && !p->send_failed;
        gw_upstream_ok(p->up, p->peer);
        gw_upconn_release(uc, reuse);
        p->uc = NULL;
        return proxy_end(p);
    }

client:
    /* client: queued output down, and a look for an abort while the upstream works */
    if (c->async_paused || c->async_retry)
        return 0; /* a paused TLS job: no other SSL call until its wake drives us */
    if (c->out_len > c->out_off) {
        size_t before = c->out_len - c->out_off;
        int r = gw_conn_flush(c);
        if (r < 0)
            return -1;
        if (c->out_len - c->out_off != before)
            *progress = 1;
    }
    if (c->async_paused || c->async_retry)
        return 0;
    if (!from_up && p->probe_client && p->body_done && !c->read_eof && c->in_len < c->in_cap) {
        size_t got = 0;
        int r = gw_conn_recv(c, c->in + c->in_len, c->in_cap - c->in_len, &got);
        if (r == GW_CONN_IO_OK) {
            c->in_len += got; /* a pipelined request: it waits for its turn */
        } else if (r == GW_CONN_IO_EOF && c->ssl &&
                   (SSL_get_shutdown(c->ssl) & SSL_RECEIVED_SHUTDOWN)) {
            /* close_notify: the client ended its direction cleanly (a TLS 1.3 half-close,
             * RFC 8446 §6.1), not an abort: the response still goes out, then ours
             * (read_eof set: no more probes, no keep-alive) */
        } else if (r != GW_CONN_IO_AGAIN) {
            gw_log(GW_LOG_INFO, 0, "client %s closed the connection while its request was "
                   "proxied", c->peer_text);
            return -1;
        }
    }
    return 0;
}

int gw_proxy_drive(gw_conn_t *c)
{
    gw_proxy_t *p = c->proxy;
    int from_up = p->from_up;
    p->from_up = 0;
    if (from_up || (p->uc && p->uc->events)) {
        p->up_again = 0; /* an upstream event: its socket may be read again */
        if (p->uc && p->uc->state != GW_UP_CONNECTING)
            p->uc->events = 0;
    }
    /* The first drive comes straight from the head just parsed: a client event (more
     * bytes, EOF) is edge-triggered and will drive us again, so no read is needed to see
     * an abort until then. */
    if (p->rb && !p->uc && !p->body_done) { /* proxy_request_buffering on */
        int r = buffer_body(p);
        if (r != 0 || !p->uc)
            return r;
    }
    int first = !p->probe_client;
    p->probe_client = 1;
    if (first)
        from_up = 1;
    for (int passes = 0;; passes++) {
        int progress = 0;
        int r = pass(p, &progress, from_up);
        if (r != 0)
            return r;
        if (c->async_paused || c->async_retry)
            return 0;
        if (!progress)
            break;
        from_up = 1; /* the client was looked at once in this drive */
        if (passes == GW_PROXY_MAX_PASSES) {
            gw_post(&p->post); /* yield: go on after the loop's next events */
            break;
        }
    }
    /* waiting: the client's timer runs only while we wait for the client */
    int want_client = c->out_len > c->out_off || (!p->body_done && p->head_queued &&
                                                 p->uout_off == p->uout_len && !p->req_sent);
    if (!want_client)
        gw_timer_del(&gw_worker->loop, &c->timer);
    else if (!gw_timer_armed(&c->timer))
        gw_timer_add(&gw_worker->loop, &c->timer, c->vs->conf->srv.send_timeout_ms);
    return 0;
}
