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

#include "proxy/internal.h"
#include "http/h2.h"

/* ---- life cycle ---- */

static int drive(gw_proxy_t *p);

void gw_proxy_on_posted_(gw_posted_t *pp)
{
    gw_proxy_t *p = (gw_proxy_t *)((char *)pp - offsetof(gw_proxy_t, post));
    p->from_up = 1;
    if (!p->st) {
        gw_conn_resume(p->c);
        return;
    }
    /* HTTP/2: the stream's upstream request goes on by itself; the connection sends what
     * it produced (gw_h2_proxy_* post the connection) */
    h2_stream_t *st = p->st;
    if (drive(p) < 0)
        gw_h2_proxy_abort(st); /* frees p */
}

/* Freed proxy states with their buffers, reused by the next requests: a request costs no
 * malloc/free of ~100 KiB (which glibc would trim and grow back with brk every time). */
#define CACHE_MAX 16
static gw_proxy_t *cache[CACHE_MAX];
static int n_cache;

void gw_proxy_free_(gw_proxy_t *p)
{
    gw_unpost(&p->post);
    if (p->uc)
        gw_upconn_release(p->uc, 0);
    free(p->head);
    p->head = NULL;
    gw_reqbuf_free(p->rb);
    p->rb = NULL;
    if (!p->st)
        p->c->proxy = NULL; /* HTTP/2: the stream lets go of us (gw_h2_proxy_*) */
    if (n_cache < CACHE_MAX && p->uout_cap == UOUT_MIN + 64) {
        cache[n_cache++] = p;
        return;
    }
    free(p->uout);
    free(p->uin);
    free(p);
}

gw_proxy_t *gw_proxy_alloc_(void)
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
    c->proxy = NULL;
    if (p->uc && p->rs != RS_DONE)
        gw_log(GW_LOG_INFO, 0, "client %s went away: the request to upstream %s is cancelled",
               p->rq->peer_text, p->up->conf->servers[p->peer].text);
    if (!p->rq->status) /* no answer yet: the access log's status (nginx's) */
        p->rq->status = gw_req_abort_status(p->body_done);
    gw_proxy_free_(p);
}

/* The response is queued: hand the connection back to the WRITE state. */
static int proxy_end(gw_proxy_t *p)
{
    gw_conn_t *c = p->c;
    if (p->st) { /* HTTP/2: the stream sends the rest; an unread request body is reset */
        gw_h2_proxy_done(p->st);
        gw_proxy_free_(p);
        return 1;
    }
    if (!p->body_done) {
        /* the rest of the body is unread: the connection cannot carry another request */
        c->rq->close_after = 1;
        c->rq->keep_alive = 0;
    }
    c->body_left = 0;
    c->body_chunked = 0;
    c->state = GW_CONN_WRITE;
    gw_proxy_free_(p);
    return 1;
}

/* Answer with an error page instead of a response (none of it was forwarded yet). */
static int fail(gw_proxy_t *p, int status)
{
    gw_conn_t *c = p->c;
    if (p->uc) { /* let go of it first: the client is not the side that failed */
        gw_upconn_release(p->uc, 0);
        p->uc = NULL;
    }
    if (p->head_fwd) {
        /* Too late for an error page: what was queued goes out, then the connection is
         * cut (HTTP/2: the stream is reset), so the client sees a short answer, as with
         * nginx. The access log keeps the status and the body bytes as sent. */
        if (p->st)
            return -1;
        p->rq->close_after = 1;
        p->rq->keep_alive = 0;
        return proxy_end(p);
    }
    if (!p->body_done)
        p->rq->close_after = 1;
    gw_resp_error(p->rq, status);
    if (p->st)
        gw_h2_stream_submit(p->st, 1);
    (void)c;
    return proxy_end(p);
}

static int64_t connect_timeout(const gw_proxy_t *p)
{
    return ls(p)->proxy_connect_timeout_ms;
}

/* Start an attempt on a (new or pooled) connection. 0, or a drive result. */
int gw_proxy_start_attempt_(gw_proxy_t *p)
{
    size_t n = p->up->conf->n_servers;
    for (;;) {
        int peer = gw_upstream_pick(p->up, p->peer);
        if (peer < 0) {
            gw_log(GW_LOG_ERROR, 0, "no live upstreams in \"%s\" for client %s", p->up->conf->name,
                   p->rq->peer_text);
            return fail(p, 502);
        }
        p->peer = peer;
        p->tries++;
        gw_vars_upstream_try(p->rq, p->up->conf->servers[peer].text); /* $upstream_addr */
        const gw_deploy_loc_t *tls = &ls(p)->dep;                     /* proxy_pass https:// */
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
    gw_upconn_t *uc = p->uc;
    int reused = uc->reused, connecting = uc->state == GW_UP_CONNECTING;
    const char *text = p->up->conf->servers[p->peer].text;
    /* a pooled connection the upstream closed meanwhile is no failure of the server */
    if (!reused || timeout || p->got_byte)
        gw_upstream_fail(p->up, p->peer);
    gw_log(reused && !timeout ? GW_LOG_INFO : GW_LOG_ERROR, timeout ? 0 : errno,
           "upstream %s %s (client %s, %s connection)", text, what, p->rq->peer_text,
           reused ? "keep-alive" : "new");
    gw_upconn_release(uc, 0);
    p->uc = NULL;
    if (!p->got_byte && !p->head_fwd) {
        size_t n = p->up->conf->n_servers;
        /* nothing sent yet (connect failed): safe for any method, on each server once;
         * sent without an answer: once more, and only when repeating it is harmless */
        int nothing_sent = connecting || !p->sent_any;
        int ok =
            nothing_sent ? p->tries < (int)n : p->idempotent && !p->body_started && p->tries < 2;
        if (ok && !(timeout && !connecting)) {
            int r = gw_proxy_start_attempt_(p);
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
    if (p->st) {
        gw_h2_proxy_body(p->st, d, n); /* counted as its DATA frames go out (h2_stream.c) */
        return;
    }
    if (p->chunk_out) {
        char sz[24];
        int k = snprintf(sz, sizeof(sz), "%zx\r\n", n);
        gw_resp_append(c, sz, (size_t)k);
        gw_resp_append(c, d, n);
        gw_resp_append(c, "\r\n", 2);
    } else {
        gw_resp_append(c, d, n);
    }
    p->rq->bytes_sent += n;
}

void gw_proxy_consume_uin(gw_proxy_t *p, size_t n)
{
    memmove(p->uin, p->uin + n, p->uin_len - n);
    p->uin_len -= n;
}

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
                    return -1;                       /* no upgrade was asked for */
                gw_proxy_consume_uin(p, (size_t)hl); /* 1xx: interim, ours was sent if needed */
                continue;
            }
            gw_proxy_forward_head(p, (size_t)hl, status, has_cl, cl, chunked, up_close);
            continue;
        }
        case RS_CL: {
            size_t take = p->uin_len < p->resp_left ? p->uin_len : (size_t)p->resp_left;
            emit(p, p->uin, take);
            gw_proxy_consume_uin(p, take);
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
                if (p->chunk_out && !p->st)
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

/* Answer bytes produced but not yet taken by the client's socket (or stream). */
static size_t client_pending(const gw_proxy_t *p)
{
    if (p->st)
        return gw_h2_proxy_pending(p->st);
    return p->c->s.out_len - p->c->s.out_off;
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
                   p->up->conf->servers[p->peer].text, what, p->rq->peer_text);
            gw_upstream_fail(p->up, p->peer);
            return fail(p, 504);
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
    if (uc->ssl && !uc->tls_done) {          /* proxy_pass https://: proxy/upstream_tls.c */
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
                int r = p->rb ? gw_proxy_pull_buffered(p) : gw_proxy_pull_body(p);
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
    while (p->rs != RS_DONE && !p->up_again && client_pending(p) < OUT_HIGH) {
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
            if (p->chunk_out && !p->st)
                gw_resp_append(c, "0\r\n\r\n", 5);
            p->rs = RS_DONE;
            p->up_close = 1;
            break;
        }
        *progress = 1;
        if (!p->got_byte) {
            int r = upstream_error(p, 0,
                                   n == 0 ? "closed the connection before answering"
                                          : "reset the connection before answering");
            return r == 2 ? 0 : r;
        }
        gw_log(GW_LOG_ERROR, n < 0 ? errno : 0,
               "upstream %s closed the connection in the middle of the response (client %s)",
               p->up->conf->servers[p->peer].text, p->rq->peer_text);
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
    if (p->st)
        return 0; /* HTTP/2: the connection sends the DATA; a reset frees us */
    /* client: queued output down, and a look for an abort while the upstream works */
    if (c->s.async_paused || c->s.async_retry)
        return 0; /* a paused TLS job: no other SSL call until its wake drives us */
    if (c->s.out_len > c->s.out_off && gw_conn_flush_progress(c, progress) < 0)
        return -1;
    if (c->s.async_paused || c->s.async_retry)
        return 0;
    if (!from_up && p->probe_client && p->body_done && !c->s.read_eof &&
        c->s.in_len < c->s.in_cap) {
        size_t got = 0;
        int r = gw_conn_recv(c, c->s.in + c->s.in_len, c->s.in_cap - c->s.in_len, &got);
        if (r == GW_CONN_IO_OK) {
            c->s.in_len += got; /* a pipelined request: it waits for its turn */
        } else if (r == GW_CONN_IO_EOF && c->s.ssl &&
                   (SSL_get_shutdown(c->s.ssl) & SSL_RECEIVED_SHUTDOWN)) {
            /* close_notify: the client ended its direction cleanly (a TLS 1.3 half-close,
             * RFC 8446 §6.1), not an abort: the response still goes out, then ours
             * (read_eof set: no more probes, no keep-alive) */
        } else if (r != GW_CONN_IO_AGAIN) {
            gw_log(GW_LOG_INFO, 0,
                   "client %s closed the connection while its request was "
                   "proxied",
                   p->rq->peer_text);
            return -1;
        }
    }
    return 0;
}

int gw_proxy_drive(gw_conn_t *c)
{
    return drive(c->proxy);
}

static int drive(gw_proxy_t *p)
{
    gw_conn_t *c = p->c;
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
        int r = gw_proxy_buffer_body(p);
        if (r == 1)
            r = gw_proxy_start_attempt_(p);
        else if (r < -1)
            r = fail(p, -r); /* 400: a bad chunk size line never reaches the upstream */
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
        if (!p->st && (c->s.async_paused || c->s.async_retry))
            return 0;
        if (!progress)
            break;
        from_up = 1; /* the client was looked at once in this drive */
        if (passes == GW_PROXY_MAX_PASSES) {
            gw_post(&p->post); /* yield: go on after the loop's next events */
            break;
        }
    }
    if (p->st)
        return 0; /* HTTP/2: the stream's send_timeout (http/h2.c) */
    /* waiting: the client's timer runs only while we wait for the client */
    int want_client = c->s.out_len > c->s.out_off || (!p->body_done && p->head_queued &&
                                                      p->uout_off == p->uout_len && !p->req_sent);
    if (!want_client)
        gw_sock_timer_del(&c->s);
    else if (!gw_timer_armed(&c->s.timer))
        gw_sock_timer(&c->s, c->vs->conf->srv.send_timeout_ms);
    return 0;
}
