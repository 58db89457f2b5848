/* The client side of a proxied request (proxy/proxy.c drives it): its start for an
 * HTTP/1.1 connection or an HTTP/2 stream, and its body taken from either, framed for the
 * upstream (Content-Length as given, else chunked). */
#include "proxy/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "http/h2.h"
#include "proxy/proxy.h"
#include "proxy/reqbuf.h"

int gw_proxy_pull_body_h2(gw_proxy_t *p)
{
    const char *d;
    size_t avail = gw_h2_proxy_req_body(p->st, &d);
    size_t room = p->uout_cap - p->uout_len - 32;
    if (!avail) {
        if (!gw_h2_proxy_req_done(p->st))
            return 0;
        if (p->body_chunked) {
            memcpy(p->uout + p->uout_len, "0\r\n\r\n", 5);
            p->uout_len += 5;
        } else if (p->body_left) {
            return -400; /* fewer bytes than Content-Length (nghttp2 checks it too) */
        }
        p->body_done = 1;
        return 1;
    }
    p->body_started = 1;
    size_t take = avail < room ? avail : room;
    if (!p->body_chunked && take > p->body_left)
        take = (size_t)p->body_left;
    int64_t max = gw_req_max_body(p->rq);
    p->body_total += take;
    if (max > 0 && p->body_total > (uint64_t)max)
        return -413;
    if (p->body_chunked) { /* no Content-Length: chunked upstream (RFC 9112 §7.1) */
        char sz[24];
        int k = snprintf(sz, sizeof(sz), "%zx\r\n", take);
        memcpy(p->uout + p->uout_len, sz, (size_t)k);
        memcpy(p->uout + p->uout_len + (size_t)k, d, take);
        memcpy(p->uout + p->uout_len + (size_t)k + take, "\r\n", 2);
        p->uout_len += (size_t)k + take + 2;
    } else {
        memcpy(p->uout + p->uout_len, d, take);
        p->uout_len += take;
        p->body_left -= take;
    }
    gw_h2_proxy_req_consume(p->st, take); /* the client's window opens again */
    if (!p->body_chunked && p->body_left == 0)
        p->body_done = 1;
    return 1;
}

/* What both protocols share: the request head for the upstream, the body's framing,
 * the buffers. NULL when the request is answered already (405 for CONNECT). */
static gw_proxy_t *setup(gw_conn_t *c, gw_req_t *rq, struct h2_stream *st, const gw_location_t *loc,
                         const char *norm, size_t norm_len)
{
    const gw_http_request_t *r = &rq->req;
    if (r->method == GW_HTTP_CONNECT) {
        gw_resp_error(rq, 405);
        return NULL;
    }
    gw_proxy_t *p = gw_proxy_alloc_();
    p->post.run = gw_proxy_on_posted_;
    p->c = c;
    p->rq = rq;
    p->st = st;
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
        /* proxy_request_buffering on (proxy/reqbuf.h): an HTTP/1.1 body framed by
         * Content-Length or chunked, an HTTP/2 stream's DATA (unframed; a length not
         * announced is UINT64_MAX) */
        int chunked = st ? 0 : p->body_chunked;
        uint64_t len = st && p->body_chunked ? UINT64_MAX : p->body_left;
        p->rb = gw_reqbuf_new(chunked, len, (size_t)ls(p)->dep.client_body_buffer_size,
                              p->expect_continue);
        p->expect_continue = 0; /* the buffer asks for the body itself */
    }
    rq->v.proxy_host = p->up->conf->name; /* $proxy_host */
    gw_proxy_build_head(p, norm, norm_len);
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
    return p;
}

void gw_proxy_start(gw_conn_t *c, const gw_location_t *loc, const char *norm, size_t norm_len)
{
    gw_proxy_t *p = setup(c, c->rq, NULL, loc, norm, norm_len);
    if (!p)
        return;
    /* the head is copied: give its room in c->s.in to the body (as READ_BODY does) */
    gw_sock_in_consume(&c->s, c->head_len);
    c->head_len = 0;
    if (c->s.in_cap < BODY_IN) {
        char *q = realloc(c->s.in, BODY_IN);
        if (!q)
            abort();
        c->s.in = q;
        c->s.in_cap = BODY_IN;
    }
    c->rq->close_after = 0; /* route_request's Expect rule is for handlers that skip bodies */
    c->proxy = p;
    c->state = GW_CONN_PROXY;
    gw_sock_timer_del(&c->s);
    if (p->rb)
        return; /* gw_proxy_drive reads the body first (proxy/body.c) */
    int rr = gw_proxy_start_attempt_(p);
    (void)rr; /* a failure queued an error page and left GW_CONN_WRITE */
}

void gw_proxy_start_h2(struct h2_stream *st, const gw_location_t *loc, const char *norm,
                       size_t norm_len)
{
    gw_proxy_t *p = setup(st->h->c, st->rq, st, loc, norm, norm_len);
    if (!p)
        return;
    p->st = st;
    p->expect_continue = 0; /* HTTP/2 clients send the body under flow control */
    st->proxy = p;
    /* a failure answers (gw_h2_stream_submit) and lets go of st; else the first drive runs
     * after the loop's events (a pooled upstream connection reports no event); a buffered
     * body (proxy_request_buffering on) is read by that drive before any upstream */
    if (p->rb || gw_proxy_start_attempt_(p) == 0)
        gw_post(&p->post);
}

void gw_proxy_wake(struct gw_proxy *p)
{
    gw_post(&p->post);
}

void gw_proxy_stream_free(struct gw_proxy *p)
{
    if (p->uc && p->rs != RS_DONE)
        gw_log(GW_LOG_INFO, 0,
               "client %s reset its HTTP/2 stream: the request to upstream %s "
               "is cancelled",
               p->rq->peer_text, p->up->conf->servers[p->peer].text);
    gw_proxy_free_(p);
}
