/*
 * An HTTP/2 stream (RFC 9113 §8): its request head built from the header list into the
 * same gw_http_request_t the HTTP/1.1 parser fills, routed like an HTTP/1.1 request
 * (:authority or Host picks the server block, 421 across SNI), answered through the
 * request API (http/req.h) as HEADERS and DATA frames.
 */
#include "http/h2.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/list.h"
#include "core/log.h"
#include "core/stats.h"
#include "proxy/proxy.h"

/* ---- the answer (gw_req_ops_t) ---- */

static const char *rh_put(h2_stream_t *st, const char *p, size_t n)
{
    /* rh is sized by h2_head before any value is put: never moves afterwards */
    char *d = st->rh + st->rh_len;
    memcpy(d, p, n);
    st->rh_len += n;
    return d;
}

static size_t count_lines(const char *lines)
{
    size_t n = 0;
    for (const char *p = lines; p && (p = strstr(p, "\r\n")); p += 2)
        n++;
    return n;
}

/* room for the answer's fields: ours (at most 6) and one per line of lines and of more
 * (add_header's, may be NULL), and for their text (extra bytes) */
static void fields_reset(h2_stream_t *st, const char *lines, const char *more, size_t extra)
{
    size_t n = 8 + count_lines(lines) + count_lines(more);
    free(st->nv);
    free(st->rh);
    st->nv = malloc(n * sizeof(*st->nv));
    st->rh_cap = 256 + extra + (lines ? strlen(lines) : 0) + (more ? strlen(more) : 0);
    st->rh = malloc(st->rh_cap);
    if (!st->nv || !st->rh)
        abort(); /* as at start-up: a worker cannot go on without it */
    st->nv_cap = n;
    st->n_nv = 0;
    st->rh_len = 0;
}

static void nv_add(h2_stream_t *st, const char *name, size_t nl, const char *value, size_t vl)
{
    if (st->n_nv == st->nv_cap)
        return; /* cannot happen: sized by fields_reset from the lines */
    nghttp2_nv *nv = &st->nv[st->n_nv++];
    nv->name = (uint8_t *)name;
    nv->namelen = nl;
    nv->value = (uint8_t *)value;
    nv->valuelen = vl;
    nv->flags = NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE;
}

#define NV_LIT(st, n, v, vl) nv_add((st), (n), sizeof(n) - 1, (v), (vl))

/* "Name: value\r\n" lines as fields: names lower-cased (RFC 9113 §8.2.1), connection
 * fields dropped (§8.2.2) */
static void add_lines(h2_stream_t *st, const char *extra)
{
    for (const char *p = extra; p && *p;) {
        const char *eol = strstr(p, "\r\n");
        if (!eol)
            break;
        const char *colon = memchr(p, ':', (size_t)(eol - p));
        if (colon && colon > p && !gw_http_hop_by_hop(p, (size_t)(colon - p))) {
            size_t nl = (size_t)(colon - p);
            char *name = st->rh + st->rh_len;
            for (size_t i = 0; i < nl; i++)
                name[i] = (char)(p[i] >= 'A' && p[i] <= 'Z' ? p[i] + 32 : p[i]);
            st->rh_len += nl;
            const char *v = colon + 1;
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            nv_add(st, name, nl, rh_put(st, v, (size_t)(eol - v)), (size_t)(eol - v));
        }
        p = eol + 2;
    }
}

static void h2_head(gw_req_t *r, int status, const char *content_type, uint64_t content_length,
                    const char *extra)
{
    h2_stream_t *st = r->owner;
    gw_vbuf_t ah = {0}; /* add_header (http/headers.c), as HTTP/1.1's head */
    gw_headers_add(r, status, &ah);
    fields_reset(st, extra, ah.s, content_type ? strlen(content_type) : 0);
    char num[24];
    size_t n =
        (size_t)(gw_put_u64(num, (uint64_t)(status >= 100 && status < 1000 ? status : 500)) - num);
    NV_LIT(st, ":status", rh_put(st, num, n), n);
    NV_LIT(st, "server", "tlsgate", 7);
    const char *date = gw_http_date();
    NV_LIT(st, "date", rh_put(st, date, strlen(date)), strlen(date));
    if (content_type) {
        size_t l = strlen(content_type);
        NV_LIT(st, "content-type", rh_put(st, content_type, l), l);
    }
    /* RFC 9110 §8.6: no Content-Length in 204; in 304 only the 200's, which we omit */
    if (status != 204 && status != 304) {
        n = (size_t)(gw_put_u64(num, content_length) - num);
        NV_LIT(st, "content-length", rh_put(st, num, n), n);
    }
    add_lines(st, extra);
    add_lines(st, ah.s);
    gw_vbuf_free(&ah);
}

static void h2_body(gw_req_t *r, const char *p, size_t n)
{
    h2_stream_t *st = r->owner;
    gw_vbuf_add(&st->body, p, n);
}

static const gw_req_ops_t h2_ops = {h2_head, h2_body};

/* nghttp2 asks for the next DATA frame's length; the bytes are put by gw_h2_send_data */
static ssize_t data_read(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t length,
                         uint32_t *flags, nghttp2_data_source *source, void *user)
{
    (void)ng;
    (void)id;
    (void)buf;
    (void)user;
    h2_stream_t *st = source->ptr;
    gw_req_t *r = st->rq;
    uint64_t left = r->file_fd >= 0 ? r->file_left : st->body.len - st->body_off;
    size_t n = left < length ? (size_t)left : length;
    if (n == 0 && !st->body_eof)
        return NGHTTP2_ERR_DEFERRED; /* the proxy has more to come: gw_h2_proxy_body */
    *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
    if (n == left && st->body_eof)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

int gw_h2_send_data(nghttp2_session *ng, nghttp2_frame *frame, const uint8_t *framehd,
                    size_t length, nghttp2_data_source *source, void *user)
{
    (void)ng;
    gw_h2_t *h = user;
    gw_sock_t *s = &h->c->s;
    h2_stream_t *st = source->ptr;
    gw_req_t *r = st->rq;
    if (s->out_len - s->out_off >= GW_H2_OUT_HIGH)
        return NGHTTP2_ERR_WOULDBLOCK;
    gw_sock_out_reserve(s, 9 + length);
    char *o = s->out + s->out_len;
    if (r->file_fd >= 0) {
        ssize_t n = length ? pread(r->file_fd, o + 9, length, (off_t)r->file_off) : 0;
        if (n != (ssize_t)length) {
            gw_log(GW_LOG_ERROR, n < 0 ? errno : 0, "pread() of a file for client %s %s",
                   s->peer_text, n < 0 ? "failed" : "hit an unexpected end (file truncated?)");
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* the stream is reset */
        }
        r->file_off += length;
        r->file_left -= length;
    } else {
        memcpy(o + 9, st->body.s + st->body_off, length);
        st->body_off += length;
        if (st->body_off == st->body.len && !st->body_eof)
            st->body_off = st->body.len = 0; /* a proxied body: the buffer is reused */
        if (st->proxy)
            gw_proxy_wake(st->proxy); /* room again: the upstream may be read */
    }
    memcpy(o, framehd, 9);
    s->out_len += 9 + length;
    r->bytes_sent += length;
    st->last_ms = gw_now_ms();
    (void)frame;
    return 0;
}

/* ---- streams ---- */

h2_stream_t *gw_h2_stream_new(gw_h2_t *h, int32_t id)
{
    h2_stream_t *st = calloc(1, sizeof(*st));
    if (!st)
        return NULL;
    st->id = id;
    st->h = h;
    st->rq = gw_req_take();
    st->rq->ops = &h2_ops;
    st->rq->owner = st;
    st->rq->conn = h->c; /* the transport: TLS and addresses for the variables */
    st->rq->proto = GW_REQ_HTTP2;
    st->rq->vs = h->c->vs;
    st->rq->peer_text = h->c->s.peer_text;
    st->rq->tls = h->c->s.ssl != NULL;
    memset(&st->rq->req, 0, sizeof(st->rq->req));
    st->last_ms = gw_now_ms();
    GW_LIST_PUSH(h->streams, st);
    h->n_streams++;
    return st;
}

void gw_h2_stream_free(h2_stream_t *st)
{
    gw_h2_t *h = st->h;
    GW_LIST_UNLINK(h->streams, st);
    h->n_streams--;
    if (st->proxy)
        gw_proxy_stream_free(st->proxy);
    if (st->dispatched) {
        /* every request that was handled is logged; one the client reset before an answer
         * was chosen gets nginx's status: 400 in its body, 499 waiting for the answer */
        if (!st->rq->status)
            st->rq->status = gw_req_abort_status(st->req_done);
        gw_req_access_log(st->rq);
    }
    gw_req_give(st->rq);
    gw_vbuf_free(&st->hb);
    free(st->rh);
    free(st->nv);
    gw_vbuf_free(&st->body);
    gw_vbuf_free(&st->rb);
    free(st);
}

static uint32_t hb_put(h2_stream_t *st, const uint8_t *p, size_t n)
{
    uint32_t o = (uint32_t)st->hb.len;
    gw_vbuf_add(&st->hb, (const char *)p, n);
    return o;
}

/* A field whose first line counts (Host, If-None-Match, If-Modified-Since, User-Agent,
 * Referer; later lines of the same name are ignored, as by the HTTP/1.1 parser):
 * *value, *len = h's value unless *value is set. */
static void keep_first(const char **value, size_t *len, const gw_http_header_t *h)
{
    if (!*value) {
        *value = h->value;
        *len = h->value_len;
    }
}

#define IS(name, nl, lit) ((nl) == sizeof(lit) - 1 && memcmp((name), (lit), (nl)) == 0)

int gw_h2_stream_header(h2_stream_t *st, const uint8_t *name, size_t nl, const uint8_t *value,
                        size_t vl)
{
    /* An HPACK bomb decodes to far more than its wire size: what is kept is bounded by
     * large_client_header_buffers (as an HTTP/1.1 head), the rest only counted. */
    st->list_size += nl + vl + 32;
    gw_http_request_t *q = &st->rq->req;
    if (st->too_large || st->list_size > st->h->c->in_max ||
        (name[0] != ':' && q->n_headers == GW_HTTP_MAX_HEADERS)) {
        st->too_large = 1;
        return 0;
    }
    if (name[0] == ':') { /* nghttp2 checked the pseudo-header set (RFC 9113 §8.3.1) */
        uint32_t o = hb_put(st, value, vl);
        if (IS(name, nl, ":method")) {
            st->method_o = o;
            st->method_l = (uint32_t)vl;
        } else if (IS(name, nl, ":path")) {
            st->path_o = o;
            st->path_l = (uint32_t)vl;
        } else if (IS(name, nl, ":authority")) {
            st->auth_o = o;
            st->auth_l = (uint32_t)vl;
        }
        return 0;
    }
    gw_http_header_t *f = &q->headers[q->n_headers++];
    /* offsets until the head is complete (hb may move): fixed up by resolve() */
    f->name = (const char *)(uintptr_t)hb_put(st, name, nl);
    f->name_len = nl;
    f->value = (const char *)(uintptr_t)hb_put(st, value, vl);
    f->value_len = vl;
    return 0;
}

static int parse_u64(const char *v, size_t n, uint64_t *out)
{
    uint64_t x = 0;
    if (n == 0 || n > 19)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9')
            return -1;
        x = x * 10 + (uint64_t)(v[i] - '0');
    }
    *out = x;
    return 0;
}

/* Turn the offsets into pointers and fill the interpreted fields, as the HTTP/1.1 parser
 * does (the first field line of each; Range NULL when repeated). */
static void resolve(h2_stream_t *st)
{
    gw_http_request_t *q = &st->rq->req;
    const char *b = st->hb.s;
    q->method_str = b + st->method_o;
    q->method_len = st->method_l;
    q->method = gw_http_method_id(q->method_str, q->method_len);
    q->target = b + st->path_o;
    q->target_len = st->path_l;
    q->path = q->target;
    q->path_len = q->target_len;
    const char *qm = q->target_len ? memchr(q->target, '?', q->target_len) : NULL;
    if (qm) {
        q->path_len = (size_t)(qm - q->target);
        q->query = qm + 1;
        q->query_len = q->target_len - q->path_len - 1;
    }
    q->version_minor = 1;
    q->keep_alive = 1;
    if (st->auth_l) {
        q->host = b + st->auth_o;
        q->host_len = st->auth_l;
    }
    int ranges = 0;
    for (size_t i = 0; i < q->n_headers; i++) {
        gw_http_header_t *f = &q->headers[i];
        f->name = b + (uintptr_t)f->name;
        f->value = b + (uintptr_t)f->value;
        const char *n = f->name;
        size_t nl = f->name_len;
        if (IS(n, nl, "host")) {
            keep_first(&q->host, &q->host_len, f);
        } else if (IS(n, nl, "content-length") && !q->has_content_length) {
            q->has_content_length = parse_u64(f->value, f->value_len, &q->content_length) == 0;
        } else if (IS(n, nl, "range")) {
            ranges++;
            q->range = ranges == 1 ? f->value : NULL;
            q->range_len = ranges == 1 ? f->value_len : 0;
        } else if (IS(n, nl, "if-none-match")) {
            keep_first(&q->if_none_match, &q->if_none_match_len, f);
        } else if (IS(n, nl, "if-modified-since")) {
            keep_first(&q->if_modified_since, &q->if_modified_since_len, f);
        } else if (IS(n, nl, "user-agent")) {
            keep_first(&q->user_agent, &q->user_agent_len, f);
        } else if (IS(n, nl, "referer")) {
            keep_first(&q->referer, &q->referer_len, f);
        }
    }
    /* a body of unknown length (no Content-Length, no END_STREAM on HEADERS): a proxied
     * request frames it as chunked upstream */
    q->chunked = !q->has_content_length && !st->req_done;
}


static void choose(h2_stream_t *st, int status)
{
    gw_conn_t *c = st->h->c;
    gw_req_t *r = st->rq;
    gw_http_request_t *q = &r->req;
    r->is_head = q->method == GW_HTTP_HEAD;
    gw_vars_request(r); /* real client address, underscores: as HTTP/1.1's route_request */
    if (gw_conn_logs(c))
        gw_req_log_fields(r);
    if (st->too_large) {
        gw_log(GW_LOG_INFO, 0, "client %s sent too large a header list on stream %d", r->peer_text,
               st->id);
        gw_resp_error(r, 431);
        return;
    }
    if (q->host) {
        gw_vserver_t *vs;
        int e = gw_conn_select_host(c, q->host, q->host_len, &vs);
        if (e) {
            gw_resp_error(r, e);
            return;
        }
        r->vs = vs;
    }
    if (status == 413) { /* client_max_body_size: gw_http_handle, in the location */
        gw_resp_error(r, 413);
        return;
    }
    gw_http_handle(r);
}

void gw_h2_stream_submit(h2_stream_t *st, int eof)
{
    gw_req_t *r = st->rq;
    nghttp2_session *ng = st->h->ng;
    st->answered = 1;
    st->body_eof = eof;
    if (r->status == 444 || r->status == 0) { /* `return 444`: no answer, the stream ends */
        r->status = 444;
        nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_CANCEL);
        return;
    }
    int data = !r->is_head && (st->body.len || (r->file_fd >= 0 && r->file_left) || !eof);
    if (!data && r->file_fd >= 0) {
        close(r->file_fd);
        r->file_fd = -1;
    }
    nghttp2_data_provider dp = {.source.ptr = st, .read_callback = data_read};
    if (nghttp2_submit_response(ng, st->id, st->nv, st->n_nv, data ? &dp : NULL) != 0)
        nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_INTERNAL_ERROR);
    gw_h2_kick(st->h);
}

void gw_h2_stream_dispatch(h2_stream_t *st, int status)
{
    if (st->dispatched)
        return;
    st->dispatched = 1;
    resolve(st);
    GW_STAT_ADD(requests, 1);
    /* keepalive_requests bounds an HTTP/2 connection too (nginx since 1.19.7) */
    if (++st->h->requests >= (unsigned)gw_conn_srv(st->h->c)->keepalive_requests)
        gw_h2_goaway(st->h);
    choose(st, status);
    if (st->answered || st->proxy)
        return; /* the proxy answers when the upstream does */
    if (!st->req_done && !status) {
        /* a body is on its way: the answer waits for its end (clients take a reset of an
         * upload they have not finished for an error, even with NO_ERROR) */
        st->held = 1;
        return;
    }
    gw_h2_stream_submit(st, 1);
}

void gw_h2_stream_end(h2_stream_t *st)
{
    st->req_done = 1;
    st->last_ms = gw_now_ms();
    if (st->held) {
        st->held = 0;
        gw_h2_stream_submit(st, 1);
    } else if (st->proxy) {
        gw_proxy_wake(st->proxy);
    }
}

/* A discarded body passed client_max_body_size while its answer was held: 413 instead
 * (the rest of the body is then refused with RST_STREAM(NO_ERROR) after the answer). */
static void body_too_large(h2_stream_t *st)
{
    gw_req_t *r = st->rq;
    st->held = 0;
    if (r->file_fd >= 0)
        close(r->file_fd);
    r->file_fd = -1;
    r->file_left = 0;
    st->body.len = st->body_off = 0;
    r->bytes_sent = 0;
    gw_resp_error(r, 413);
    gw_h2_stream_submit(st, 1);
}

void gw_h2_stream_body(h2_stream_t *st, const uint8_t *data, size_t len)
{
    st->body_bytes += len;
    st->last_ms = gw_now_ms();
    if (!st->proxy) { /* discarded: the window stays open */
        nghttp2_session_consume(st->h->ng, st->id, len);
        int64_t max = gw_req_max_body(st->rq);
        if (st->held && max > 0 && st->body_bytes > (uint64_t)max)
            body_too_large(st);
        return;
    }
    if (st->rb_off == st->rb.len)
        st->rb_off = st->rb.len = 0;
    gw_vbuf_add(&st->rb, (const char *)data, len); /* at most the window we gave: 64 KiB */
    gw_proxy_wake(st->proxy);
}

/* ---- the reverse proxy's side ---- */

void gw_h2_proxy_head(h2_stream_t *st, int status, int64_t content_length, const char *lines,
                      int no_body)
{
    gw_req_t *r = st->rq;
    st->last_ms = gw_now_ms(); /* from here the client's reading is what is timed */
    fields_reset(st, lines, NULL, 0);
    char num[24];
    size_t n = (size_t)(gw_put_u64(num, (uint64_t)status) - num);
    NV_LIT(st, ":status", rh_put(st, num, n), n);
    if (content_length >= 0 && status != 204 && status != 304) {
        n = (size_t)(gw_put_u64(num, (uint64_t)content_length) - num);
        NV_LIT(st, "content-length", rh_put(st, num, n), n);
    }
    add_lines(st, lines);
    r->status = status;
    gw_h2_stream_submit(st, no_body);
}

void gw_h2_proxy_body(h2_stream_t *st, const char *p, size_t n)
{
    if (st->body_off == st->body.len)
        st->last_ms = gw_now_ms(); /* nothing was waiting for the client: a fresh start */
    h2_body(st->rq, p, n);
    nghttp2_session_resume_data(st->h->ng, st->id);
    gw_h2_kick(st->h);
}

void gw_h2_proxy_done(h2_stream_t *st)
{
    st->proxy = NULL;
    st->body_eof = 1;
    nghttp2_session_resume_data(st->h->ng, st->id);
    gw_h2_kick(st->h);
}

void gw_h2_proxy_abort(h2_stream_t *st)
{
    struct gw_proxy *p = st->proxy;
    st->proxy = NULL;
    if (p)
        gw_proxy_stream_free(p);
    nghttp2_submit_rst_stream(st->h->ng, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_INTERNAL_ERROR);
    gw_h2_kick(st->h);
}

size_t gw_h2_proxy_pending(const h2_stream_t *st)
{
    return st->body.len - st->body_off;
}

size_t gw_h2_proxy_req_body(h2_stream_t *st, const char **p)
{
    *p = st->rb.s + st->rb_off;
    return st->rb.len - st->rb_off;
}

void gw_h2_proxy_req_consume(h2_stream_t *st, size_t n)
{
    st->rb_off += n;
    nghttp2_session_consume(st->h->ng, st->id, n);
    gw_h2_kick(st->h);
}

int gw_h2_proxy_req_done(const h2_stream_t *st)
{
    return st->req_done;
}
