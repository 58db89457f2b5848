/*
 * Request bodies on their way up (proxy/proxy.c drives the attempt): streamed from the
 * client and framed as they arrive, or with proxy_request_buffering on (nginx's default)
 * read whole first (proxy/reqbuf.h: memory up to client_body_buffer_size, then a temporary
 * file), sent with a Content-Length, and sent again from its start on a retry.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "http/conn.h"
#include "http/h2.h"
#include "proxy/internal.h"
#include "proxy/reqbuf.h"

/* Move client body bytes into uout, framed. 1: progress (or the body ended), 0: wait for
 * the client, -1: client gone, -400/-413: bad body. */
int gw_proxy_pull_body(gw_proxy_t *p)
{
    gw_conn_t *c = p->c;
    if (p->st)
        return gw_proxy_pull_body_h2(p);
    if (c->s.in_len == 0) {
        if (p->expect_continue && !p->continue_sent) {
            /* RFC 9110 §10.1.1: ask for the body only now that an upstream waits for it */
            gw_resp_append(c, "HTTP/1.1 100 Continue\r\n\r\n", 25);
            p->continue_sent = 1;
            return 0;
        }
        int r = gw_reqbuf_recv(c); /* proxy/reqbuf.h */
        if (r <= 0)
            return r;
        gw_sock_timer(&c->s, c->vs->conf->srv.send_timeout_ms);
    }
    p->body_started = 1;
    /* c->s.in may be larger than uout (large_client_header_buffers): take what fits, with
     * room for a chunk's framing; the rest waits in c->s.in */
    size_t room = p->uout_cap - p->uout_len - 32;
    if (p->body_chunked) {
        int64_t max = gw_req_max_body(p->rq);
        size_t len = c->s.in_len < room ? c->s.in_len : room, used = 0;
        int r =
            gw_http_chunked_decode(&p->chunked, c->s.in, &len, &used, max > 0 ? (uint64_t)max : 0);
        if (r < 0)
            return r;
        if (len) {
            char sz[24];
            int k = snprintf(sz, sizeof(sz), "%zx\r\n", len);
            memcpy(p->uout + p->uout_len, sz, (size_t)k);
            memcpy(p->uout + p->uout_len + (size_t)k, c->s.in, len);
            memcpy(p->uout + p->uout_len + (size_t)k + len, "\r\n", 2);
            p->uout_len += (size_t)k + len + 2;
        }
        gw_sock_in_consume(&c->s, used);
        if (r == 1) {
            memcpy(p->uout + p->uout_len, "0\r\n\r\n", 5);
            p->uout_len += 5;
            p->body_done = 1;
        }
        return 1;
    }
    size_t take = c->s.in_len < p->body_left ? c->s.in_len : (size_t)p->body_left;
    if (take > room)
        take = room;
    memcpy(p->uout + p->uout_len, c->s.in, take);
    p->uout_len += take;
    gw_sock_in_consume(&c->s, take);
    p->body_left -= take;
    if (p->body_left == 0)
        p->body_done = 1;
    return 1;
}

/* An HTTP/2 stream's DATA into p->rb: the client's window opens as the bytes are stored.
 * 1 when the stream's body ended, 0 to wait, -413, -500. */
static int buffer_h2(gw_proxy_t *p, uint64_t max)
{
    for (;;) {
        const char *d;
        size_t n = gw_h2_proxy_req_body(p->st, &d);
        if (!n)
            return gw_h2_proxy_req_done(p->st);
        int r = gw_reqbuf_add(p->rb, d, n, max, p->rq->peer_text);
        if (r < 0)
            return r;
        gw_h2_proxy_req_consume(p->st, n);
    }
}

int gw_proxy_buffer_body(gw_proxy_t *p)
{
    gw_conn_t *c = p->c;
    int64_t max = gw_req_max_body(p->rq);
    uint64_t lim = max > 0 ? (uint64_t)max : 0;
    if (p->st) { /* HTTP/2: the stream's send_timeout bounds the wait (http/h2.c) */
        int r = buffer_h2(p, lim);
        if (r <= 0)
            return r;
    } else {
        int r = gw_reqbuf_fill(p->rb, c, lim);
        if (r == 0) {
            if (!gw_timer_armed(&c->s.timer))
                gw_sock_timer(&c->s, c->vs->conf->srv.send_timeout_ms);
            return 0;
        }
        if (r < 0)
            return r;
        gw_sock_timer_del(&c->s);
    }
    p->body_done = 1;
    char line[48];
    int n =
        snprintf(line, sizeof(line), "Content-Length: %llu\r\n", (unsigned long long)p->rb->total);
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
    return 1;
}

int gw_proxy_pull_buffered(gw_proxy_t *p)
{
    size_t n = gw_reqbuf_read(p->rb, p->rb_off, p->uout + p->uout_len, p->uout_cap - p->uout_len);
    if (n == 0 && p->rb_off < p->rb->total)
        return -500;
    p->uout_len += n;
    p->rb_off += n;
    p->rb_sent = p->rb_off == p->rb->total;
    return 1;
}
