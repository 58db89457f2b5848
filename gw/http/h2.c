/*
 * HTTP/2 connections (RFC 9113) on libnghttp2's server session: our SETTINGS
 * (http2_max_concurrent_streams, the header list size of large_client_header_buffers, no
 * push), frames read from and written to the socket layer (async TLS parking included:
 * nothing is given to the socket while a job is paused), timers (keepalive_timeout when
 * no stream is open, send_timeout per stream and for the socket), GOAWAY on a graceful
 * stop, and the flood defences:
 *  - rapid reset (CVE-2023-44487): streams reset by the client draw from a bucket of
 *    2 x max_concurrent_streams refilled at max_concurrent_streams per second;
 *  - SETTINGS, PING, PRIORITY, WINDOW_UPDATE of less than 1 KiB and empty DATA frames
 *    (CVE-2019-9512/9515/9518) draw from a bucket of 1000 refilled at 100 per second;
 *  - CONTINUATION floods (CVE-2024-27316 family): a header block of more than 8
 *    CONTINUATION frames or more wire bytes than large_client_header_buffers allows;
 *  - HPACK bombs: the decoded header list is bounded as an HTTP/1.1 head (http/h2_stream.c);
 * an exhausted bucket ends the connection with GOAWAY(ENHANCE_YOUR_CALM). A connection
 * reads at most H2_READS_PER_DRIVE buffers before it lets the other connections run.
 */
#include "http/h2.h"

#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/stats.h"
#include "proxy/proxy.h"

#define H2_IN_CAP 16384
#define H2_READS_PER_DRIVE 8
#define CTRL_BURST 1000
#define CTRL_RATE 100
#define MAX_CONTINUATIONS 8

static gw_h2_t *H(nghttp2_session *ng, void *user)
{
    (void)ng;
    return user;
}

static void refill(gw_h2_t *h)
{
    int64_t now = gw_now_ms(), dt = now - h->refill_ms;
    if (dt < 100)
        return;
    int64_t ms = gw_conn_srv(h->c)->http2_max_concurrent_streams;
    h->reset_tokens += ms * dt / 1000;
    if (h->reset_tokens > 2 * ms)
        h->reset_tokens = 2 * ms;
    h->ctrl_tokens += CTRL_RATE * dt / 1000;
    if (h->ctrl_tokens > CTRL_BURST)
        h->ctrl_tokens = CTRL_BURST;
    h->refill_ms = now;
}

/* a flood: GOAWAY(ENHANCE_YOUR_CALM), then the connection ends (RFC 9113 §10.5) */
static int calm_down(gw_h2_t *h, const char *what)
{
    if (!h->calm) {
        gw_log(GW_LOG_WARN, 0, "client %s: HTTP/2 %s, closing the connection", h->c->s.peer_text,
               what);
        h->calm = 1;
        nghttp2_session_terminate_session(h->ng, NGHTTP2_ENHANCE_YOUR_CALM);
    }
    return NGHTTP2_ERR_CALLBACK_FAILURE;
}

static int spend(gw_h2_t *h, int64_t *bucket, const char *what)
{
    refill(h);
    if (--*bucket < 0)
        return calm_down(h, what);
    return 0;
}

/* ---- nghttp2 callbacks ---- */

static ssize_t on_send(nghttp2_session *ng, const uint8_t *data, size_t len, int flags, void *u)
{
    (void)flags;
    gw_sock_t *s = &H(ng, u)->c->s;
    if (s->out_len - s->out_off >= GW_H2_OUT_HIGH)
        return NGHTTP2_ERR_WOULDBLOCK;
    gw_sock_out_append(s, (const char *)data, len);
    return (ssize_t)len;
}

static int on_begin_frame(nghttp2_session *ng, const nghttp2_frame_hd *hd, void *u)
{
    gw_h2_t *h = H(ng, u);
    if (hd->type == NGHTTP2_HEADERS) {
        h->cont_frames = 0;
        h->hblock_bytes = hd->length;
    } else if (hd->type == NGHTTP2_CONTINUATION) {
        h->hblock_bytes += hd->length;
        if (++h->cont_frames >= MAX_CONTINUATIONS || h->hblock_bytes > h->c->in_max + 16384)
            return calm_down(h, "CONTINUATION flood");
    }
    return 0;
}

static int on_begin_headers(nghttp2_session *ng, const nghttp2_frame *f, void *u)
{
    gw_h2_t *h = H(ng, u);
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    h2_stream_t *st = gw_h2_stream_new(h, f->hd.stream_id);
    if (!st)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    nghttp2_session_set_stream_user_data(ng, f->hd.stream_id, st);
    gw_conn_set_stat(h->c, GW_ST_WRITING);
    return 0;
}

static int on_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name, size_t nl,
                     const uint8_t *value, size_t vl, uint8_t flags, void *u)
{
    (void)flags;
    (void)u;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0; /* trailers: ignored */
    h2_stream_t *st = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
    return st ? gw_h2_stream_header(st, name, nl, value, vl) : 0;
}

static int on_frame_recv(nghttp2_session *ng, const nghttp2_frame *f, void *u)
{
    gw_h2_t *h = H(ng, u);
    h2_stream_t *st =
        f->hd.stream_id ? nghttp2_session_get_stream_user_data(ng, f->hd.stream_id) : NULL;
    switch (f->hd.type) {
    case NGHTTP2_HEADERS:
        if (!st)
            break;
        if (f->hd.flags & NGHTTP2_FLAG_END_STREAM)
            st->req_done = 1;
        if (f->headers.cat == NGHTTP2_HCAT_REQUEST)
            gw_h2_stream_dispatch(st, 0); /* a body may follow: the proxy streams it */
        else if (st->req_done)
            gw_h2_stream_end(st); /* trailers ended the body (they are not forwarded) */
        break;
    case NGHTTP2_DATA:
        if (f->hd.length == 0 && !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
            return spend(h, &h->ctrl_tokens, "empty DATA frame flood");
        if (st && (f->hd.flags & NGHTTP2_FLAG_END_STREAM))
            gw_h2_stream_end(st);
        break;
    case NGHTTP2_RST_STREAM:
        return spend(h, &h->reset_tokens, "rapid reset flood (CVE-2023-44487)");
    case NGHTTP2_SETTINGS:
        if (!(f->hd.flags & NGHTTP2_FLAG_ACK))
            return spend(h, &h->ctrl_tokens, "SETTINGS flood");
        break;
    case NGHTTP2_PING:
        if (!(f->hd.flags & NGHTTP2_FLAG_ACK))
            return spend(h, &h->ctrl_tokens, "PING flood");
        break;
    case NGHTTP2_PRIORITY:
        return spend(h, &h->ctrl_tokens, "PRIORITY flood");
    case NGHTTP2_WINDOW_UPDATE:
        if (f->window_update.window_size_increment < 1024)
            return spend(h, &h->ctrl_tokens, "WINDOW_UPDATE flood");
        if (st)
            st->last_ms = gw_now_ms();
        break;
    }
    return 0;
}

static int on_data_chunk(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data,
                         size_t len, void *u)
{
    (void)flags;
    (void)u;
    h2_stream_t *st = nghttp2_session_get_stream_user_data(ng, id);
    if (st)
        gw_h2_stream_body(st, data, len);
    else
        nghttp2_session_consume_connection(ng, len); /* a stream we let go of */
    return 0;
}

static int on_frame_send(nghttp2_session *ng, const nghttp2_frame *f, void *u)
{
    (void)u;
    if (!f->hd.stream_id)
        return 0;
    if (f->hd.type == NGHTTP2_HEADERS) { /* $bytes_sent: the answer's head as sent (HPACK) */
        h2_stream_t *st = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
        if (st)
            st->rq->v.head_bytes += 9 + f->hd.length;
    }
    if (!(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    /* RFC 9113 §8.1: an answer complete before its request: the client may stop sending */
    if (!nghttp2_session_get_stream_remote_close(ng, f->hd.stream_id))
        nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, f->hd.stream_id, NGHTTP2_NO_ERROR);
    return 0;
}

static int on_stream_close(nghttp2_session *ng, int32_t id, uint32_t error_code, void *u)
{
    (void)error_code;
    gw_h2_t *h = H(ng, u);
    h2_stream_t *st = nghttp2_session_get_stream_user_data(ng, id);
    if (st) {
        nghttp2_session_set_stream_user_data(ng, id, NULL);
        gw_h2_stream_free(st);
    }
    if (h->n_streams == 0)
        gw_conn_set_stat(h->c, GW_ST_WAITING);
    return 0;
}

/* ---- driving ---- */

static void on_posted(gw_posted_t *p)
{
    gw_h2_t *h = (gw_h2_t *)((char *)p - offsetof(gw_h2_t, post));
    gw_sock_resume(&h->c->s);
}

/* Is st waiting for the client (its answer or its request body), so that send_timeout
 * bounds it? A proxied stream waiting for its upstream has the proxy's timeouts. */
static int waits_for_client(const h2_stream_t *st)
{
    return !st->proxy || !st->req_done || gw_h2_proxy_pending(st);
}

/* The timer: keepalive_timeout while no stream is open, else the earliest stream's
 * send_timeout from its last progress (the socket's own is re-armed by each write). */
static void arm_timer(gw_h2_t *h)
{
    const gw_srv_settings_t *srv = gw_conn_srv(h->c);
    gw_sock_t *s = &h->c->s;
    if (s->out_len > s->out_off)
        return; /* gw_sock_flush armed send_timeout for the socket */
    if (!h->streams) {
        gw_sock_timer(s, srv->keepalive_timeout_ms > 0 ? srv->keepalive_timeout_ms : 1);
        return;
    }
    int64_t first = INT64_MAX;
    for (h2_stream_t *st = h->streams; st; st = st->next)
        if (st->last_ms < first && waits_for_client(st))
            first = st->last_ms;
    if (first == INT64_MAX) { /* only proxied streams waiting for their upstreams */
        gw_sock_timer_del(s);
        return;
    }
    int64_t left = first + srv->send_timeout_ms - gw_now_ms();
    gw_sock_timer(s, left > 0 ? left : 0);
}

/* Write what nghttp2 has: 1 all written, 0 blocked (or paused), -1 error. */
static int h2_write(gw_h2_t *h)
{
    gw_sock_t *s = &h->c->s;
    for (;;) {
        if (s->out_len > s->out_off) {
            int r = gw_sock_flush(s);
            if (r <= 0)
                return r;
        }
        if (gw_sock_busy(s) || !nghttp2_session_want_write(h->ng))
            return 1;
        if (nghttp2_session_send(h->ng) != 0)
            return -1;
        if (s->out_len == s->out_off)
            return 1;
    }
}

static void h2_drive(gw_sock_t *s)
{
    gw_conn_t *c = (gw_conn_t *)s;
    gw_h2_t *h = c->h2;
    for (int reads = 0;; reads++) {
        int w = h2_write(h);
        if (w < 0) {
            gw_sock_close(s);
            return;
        }
        if (w == 0 || gw_sock_busy(s))
            return; /* EPOLLOUT or the job's wake drives us again */
        if (!nghttp2_session_want_read(h->ng) && !nghttp2_session_want_write(h->ng)) {
            gw_sock_end(s, h->calm); /* GOAWAY sent and no stream left */
            return;
        }
        if (h->calm) /* what followed the flood is not read */
            return;
        if (reads == H2_READS_PER_DRIVE) {
            gw_post(&h->post); /* the other connections get their turn */
            return;
        }
        if (!s->in)
            gw_sock_in_grow(s, H2_IN_CAP, H2_IN_CAP);
        size_t got = 0;
        int r = gw_sock_readable(s) ? gw_sock_read(s, s->in, s->in_cap, &got) : GW_SOCK_AGAIN;
        if (r == GW_SOCK_AGAIN) {
            if (!gw_sock_busy(s)) {
                if (!h->streams && s->out_len == 0)
                    gw_sock_idle(s); /* idle: the buffers go back (issue #21) */
                arm_timer(h);
            }
            return;
        }
        if (r != GW_SOCK_OK) {
            gw_sock_close(s);
            return;
        }
        ssize_t n = nghttp2_session_mem_recv(h->ng, (const uint8_t *)s->in, got);
        if (n < 0) {
            if (!h->calm)
                gw_log(GW_LOG_INFO, 0, "client %s: HTTP/2 error: %s", s->peer_text,
                       nghttp2_strerror((int)n));
            if (n != NGHTTP2_ERR_CALLBACK_FAILURE || !h->calm) {
                gw_sock_close(s);
                return;
            }
        }
    }
}

static void h2_timeout(gw_sock_t *s)
{
    gw_conn_t *c = (gw_conn_t *)s;
    gw_h2_t *h = c->h2;
    if (s->out_len > s->out_off || h->calm) {
        gw_log(GW_LOG_INFO, 0, "client %s timed out reading HTTP/2 frames", s->peer_text);
        gw_sock_close(s);
        return;
    }
    if (!h->streams) { /* idle: keepalive_timeout */
        nghttp2_session_terminate_session(h->ng, NGHTTP2_NO_ERROR);
        h->goaway = 1;
        h2_drive(s);
        return;
    }
    /* a stream that made no progress for send_timeout: a client that never reads its
     * answer (flow control closed) or never ends its request; the others go on */
    int64_t limit = gw_now_ms() - gw_conn_srv(c)->send_timeout_ms;
    for (h2_stream_t *st = h->streams; st; st = st->next) {
        if (st->last_ms <= limit && waits_for_client(st)) {
            gw_log(GW_LOG_INFO, 0, "client %s timed out on HTTP/2 stream %d", s->peer_text, st->id);
            st->last_ms = INT64_MAX / 2; /* reset once */
            nghttp2_submit_rst_stream(h->ng, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_CANCEL);
        }
    }
    h2_drive(s);
}

static void h2_release(gw_sock_t *s)
{
    gw_conn_t *c = (gw_conn_t *)s;
    gw_h2_t *h = c->h2;
    if (!h)
        return;
    gw_unpost(&h->post);
    while (h->streams)
        gw_h2_stream_free(h->streams);
    nghttp2_session_del(h->ng);
    free(h);
    c->h2 = NULL;
}

void gw_h2_kick(gw_h2_t *h)
{
    gw_post(&h->post);
}

const gw_sock_proto_t gw_h2_proto = {"h2", h2_drive, h2_timeout, h2_release};

static nghttp2_session_callbacks *callbacks(void)
{
    static nghttp2_session_callbacks *cbs;
    if (cbs || nghttp2_session_callbacks_new(&cbs) != 0)
        return cbs;
    nghttp2_session_callbacks_set_send_callback(cbs, on_send);
    nghttp2_session_callbacks_set_send_data_callback(cbs, gw_h2_send_data);
    nghttp2_session_callbacks_set_on_begin_frame_callback(cbs, on_begin_frame);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
    nghttp2_session_callbacks_set_on_frame_send_callback(cbs, on_frame_send);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
    return cbs;
}

int gw_h2_start(gw_conn_t *c)
{
    const gw_srv_settings_t *srv = gw_conn_srv(c);
    gw_h2_t *h = calloc(1, sizeof(*h));
    nghttp2_option *opt = NULL;
    nghttp2_session_callbacks *cbs = callbacks();
    c->s.proto = &gw_h2_proto;
    c->h2 = h;
    if (!h || !cbs || nghttp2_option_new(&opt) != 0) {
        gw_log(GW_LOG_ALERT, 0, "cannot allocate an HTTP/2 session");
        gw_sock_close(&c->s);
        return -1;
    }
    h->c = c;
    h->post.run = on_posted;
    h->refill_ms = gw_now_ms();
    h->reset_tokens = 2 * (int64_t)srv->http2_max_concurrent_streams;
    h->ctrl_tokens = CTRL_BURST;
    /* nghttp2's own limits too: its CONTINUATION cap, reset rate, SETTINGS entries, and
     * queued ACKs for a client that does not read (PING / SETTINGS floods) */
    nghttp2_option_set_max_continuations(opt, MAX_CONTINUATIONS);
    nghttp2_option_set_stream_reset_rate_limit(opt, 2 * (uint64_t)srv->http2_max_concurrent_streams,
                                               (uint64_t)srv->http2_max_concurrent_streams);
    nghttp2_option_set_max_settings(opt, 32);
    nghttp2_option_set_max_outbound_ack(opt, 1000);
    nghttp2_option_set_max_deflate_dynamic_table_size(opt, 4096);
    /* request bodies under our flow control: a proxied body opens the client's window
     * only as the upstream takes it (gw_h2_proxy_req_consume), others at once */
    nghttp2_option_set_no_auto_window_update(opt, 1);
    int rv = nghttp2_session_server_new2(&h->ng, cbs, h, opt);
    nghttp2_option_del(opt);
    if (rv != 0) {
        gw_log(GW_LOG_ALERT, 0, "nghttp2_session_server_new2: %s", nghttp2_strerror(rv));
        gw_sock_close(&c->s);
        return -1;
    }
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, (uint32_t)srv->http2_max_concurrent_streams},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, (uint32_t)c->in_max},
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
    };
    nghttp2_submit_settings(h->ng, NGHTTP2_FLAG_NONE, iv, sizeof(iv) / sizeof(iv[0]));
    gw_conn_set_stat(c, GW_ST_WAITING);
    if (c->s.in_len) { /* plain TCP, prior knowledge: what HTTP/1.1 read (the preface...) */
        ssize_t n = nghttp2_session_mem_recv(h->ng, (const uint8_t *)c->s.in, c->s.in_len);
        c->s.in_len = 0;
        if (n < 0) {
            gw_log(GW_LOG_INFO, 0, "client %s: HTTP/2 error: %s", c->s.peer_text,
                   nghttp2_strerror((int)n));
            gw_sock_close(&c->s);
            return -1;
        }
    }
    return 0;
}

void gw_h2_goaway(gw_h2_t *h)
{
    if (h->goaway)
        return;
    h->goaway = 1;
    /* RFC 9113 §6.8: the streams up to the last one we processed are answered */
    nghttp2_submit_goaway(h->ng, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(h->ng),
                          NGHTTP2_NO_ERROR, NULL, 0);
    gw_post(&h->post);
}

void gw_h2_shutdown(gw_conn_t *c)
{
    if (c->h2)
        gw_h2_goaway(c->h2);
}
