/*
 * HTTP/1.1 on a connection (RFC 9112): request heads parsed strictly from a buffer that
 * grows from client_header_buffer_size to large_client_header_buffers, bodies read and
 * discarded within client_max_body_size (or handed to the proxy), answers framed into the
 * socket's output buffer in request order (pipelining), keep-alive, and the timeouts of
 * each state. The socket layer (sock/sock.h) below does the I/O, async parking and close.
 */
#include "http/conn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/stats.h"
#include "proxy/proxy.h"
#include "proxy/stream.h"

static void h1_drive(gw_sock_t *s);

/* ---- framing of answers (gw_req_ops_t) ---- */

static char *put_str(char *o, const char *s, size_t n)
{
    memcpy(o, s, n);
    return o + n;
}

#define PUT_LIT(o, lit) put_str((o), (lit), sizeof(lit) - 1)

static void h1_head(gw_req_t *r, int status, const char *content_type, uint64_t content_length,
                    const char *extra)
{
    gw_conn_t *c = r->owner;
    char head[1024];
    /* close_after already forbids reuse; otherwise the request decided */
    int ka = r->keep_alive && !r->close_after && !gw_conn_stopping(c);
    r->keep_alive = ka;
    /* built by hand, not snprintf: this runs once per response (a keep-alive request's
     * head formatting was ~3% of its CPU) */
    const char *reason = gw_http_reason(status);
    const char *date = gw_http_date();
    size_t rl = strlen(reason), ctl = content_type ? strlen(content_type) : 0;
    if (ctl > 256)
        ctl = 256; /* types come from our table or the configuration: never this long */
    char *o = head;
    o = PUT_LIT(o, "HTTP/1.1 ");
    o = gw_put_u64(o, (uint64_t)(status >= 100 && status < 1000 ? status : 500));
    *o++ = ' ';
    o = put_str(o, reason, rl < 200 ? rl : 200);
    o = PUT_LIT(o, "\r\nServer: tlsgate\r\nDate: ");
    o = put_str(o, date, strlen(date));
    o = PUT_LIT(o, "\r\n");
    if (content_type) {
        o = PUT_LIT(o, "Content-Type: ");
        o = put_str(o, content_type, ctl);
        o = PUT_LIT(o, "\r\n");
    }
    /* RFC 9110 §8.6: no Content-Length in 204; in 304 only the 200's, which we omit */
    if (status != 204 && status != 304) {
        o = PUT_LIT(o, "Content-Length: ");
        o = gw_put_u64(o, content_length);
        o = PUT_LIT(o, "\r\n");
    }
    o = ka ? PUT_LIT(o, "Connection: keep-alive\r\n") : PUT_LIT(o, "Connection: close\r\n");
    gw_sock_out_append(&c->s, head, (size_t)(o - head));
    if (extra)
        gw_sock_out_append(&c->s, extra, strlen(extra));
    r->v.head_bytes = (uint64_t)(o - head) + (extra ? strlen(extra) : 0) + 2;
    gw_vbuf_t ah = {0}; /* add_header (http/headers.c): nothing allocated without any */
    gw_headers_add(r, status, &ah);
    if (ah.len)
        gw_sock_out_append(&c->s, ah.s, ah.len);
    gw_vbuf_free(&ah);
    gw_sock_out_append(&c->s, "\r\n", 2);
}

static void h1_body(gw_req_t *r, const char *p, size_t n)
{
    gw_conn_t *c = r->owner;
    gw_sock_out_append(&c->s, p, n);
}

static const gw_req_ops_t h1_ops = {h1_head, h1_body};

static gw_req_t *h1_req_take(gw_conn_t *c)
{
    gw_req_t *r = gw_req_take();
    r->ops = &h1_ops;
    r->owner = c;
    r->conn = c;
    r->proto = GW_REQ_HTTP11;
    r->vs = c->vs;
    r->peer_text = c->s.peer_text;
    r->tls = c->s.ssl != NULL;
    return r;
}

/* Give back what only a request in progress needs: the connection is idle (no buffered
 * input, nothing left to write) or being freed. */
static void release_request(gw_conn_t *c)
{
    gw_req_give(c->rq); /* with its variables' head copy (http/vars.h) */
    c->rq = NULL;
    c->head_len = 0;
}

/* ---- requests ---- */

static void start_request_failure(gw_conn_t *c, int status)
{
    /* the head is not trustworthy: log what the request line looked like, then answer */
    const char *eol = memchr(c->s.in, '\n', c->s.in_len);
    size_t l = eol ? (size_t)(eol - c->s.in) : c->s.in_len;
    if (l && c->s.in[l - 1] == '\r')
        l--;
    gw_req_log_bad_line(c->rq, c->s.in, l);
    c->rq->keep_alive = 0;
    c->rq->close_after = 1;
    c->rq->is_head = 0;
    c->rq->log_pending = 1;
    GW_STAT_ADD(requests, 1);
    gw_log(GW_LOG_INFO, 0, "client %s sent an invalid request, answering %d", c->s.peer_text,
           status);
    gw_resp_error(c->rq, status);
    c->state = GW_CONN_WRITE;
    gw_conn_set_stat(c, GW_ST_WRITING);
    gw_sock_timer(&c->s, gw_conn_srv(c)->send_timeout_ms);
}


static void route_request(gw_conn_t *c)
{
    gw_http_request_t *r = &c->rq->req;
    GW_STAT_ADD(requests, 1);
    c->requests++;
    c->rq->vs = c->vs;
    c->rq->is_head = r->method == GW_HTTP_HEAD;
    c->rq->bytes_sent = 0;
    c->rq->status = 0;
    c->rq->log_pending = 1;       /* logged once: finish_request, or h1_release if it ends early */
    c->resp_start = c->s.out_len; /* answers of earlier pipelined requests stay before it */
    gw_vars_request(c->rq);       /* real client address, underscores, head copy: http/vars.h */
    if (gw_conn_logs(c))          /* the log's copies, only when a server here logs */
        gw_req_log_fields(c->rq);

    /* keepalive_timeout 0 disables keep-alive, as in nginx */
    c->rq->keep_alive = r->keep_alive &&
                        c->requests < (unsigned)gw_conn_srv(c)->keepalive_requests &&
                        gw_conn_srv(c)->keepalive_timeout_ms > 0;
    gw_conn_set_stat(c, GW_ST_WRITING);
    gw_sock_timer(&c->s, gw_conn_srv(c)->send_timeout_ms);

    /* Which server block: the Host header among this address's servers. When the client's
     * SNI selected a block, that block's certificates and TLS policy were used: a Host
     * naming another block gets 421 (RFC 9110 §15.5.20), so one block's TLS policy cannot
     * be used to reach another. (nginx only does this with ssl_verify_client; we always
     * do.) Without SNI, or with an SNI no block matches, Host alone decides, as in nginx. */
    if (r->host) {
        gw_vserver_t *vs;
        int st = gw_conn_select_host(c, r->host, r->host_len, &vs);
        if (st) {
            gw_resp_error(c->rq, st);
            return;
        }
        c->vs = vs;
        c->rq->vs = vs;
    }

    /* Request bodies: we serve no handler that reads one, so it is read and discarded
     * to keep the connection usable, within client_max_body_size (RFC 9112 §6.3; the
     * location's: checked in gw_http_handle). */
    if ((r->chunked || (r->has_content_length && r->content_length > 0)) && r->expect_continue) {
        /* RFC 9110 §10.1.1: a server that answers with a final status without reading the
         * body must close the connection afterwards. */
        c->rq->close_after = 1;
    }
    gw_http_handle(c->rq);
}

/* After a response: either the next request on this connection or close. */
static int finish_request(gw_conn_t *c)
{
    gw_req_access_log(c->rq);
    if (c->rq->file_fd >= 0) {
        close(c->rq->file_fd);
        c->rq->file_fd = -1;
    }
    if (c->s.out_off == c->s.out_len) /* else: deferred behind a pipelined request's answer */
        c->s.out_len = c->s.out_off = 0;
    int reuse = c->rq->keep_alive && !c->rq->close_after && !gw_conn_stopping(c) && !c->s.read_eof;
    if (!reuse)
        return 0;
    /* the next request is the TCP peer's until its own head says otherwise (real_ip), and
     * has no settings yet: an answer before its head is parsed must not use this one's */
    c->rq->peer_text = c->s.peer_text;
    c->rq->v.family = 0;
    c->rq->v.loc = NULL;
    /* keep the bytes of a pipelined next request */
    gw_sock_in_consume(&c->s, c->head_len);
    c->head_len = 0;
    c->nl_seen = c->s.in_len && memchr(c->s.in, '\n', c->s.in_len) != NULL;
    c->head_dirty = c->s.in_len > 0;
    c->state = GW_CONN_READ_HEAD;
    if (c->s.in_len == 0) {
        gw_conn_set_stat(c, GW_ST_WAITING);
        gw_sock_timer(&c->s, gw_conn_srv(c)->keepalive_timeout_ms);
    } else {
        gw_conn_set_stat(c, GW_ST_READING);
        gw_sock_timer(&c->s, gw_conn_srv(c)->client_header_timeout_ms);
    }
    return 1;
}


/* Discard request body bytes already buffered or arriving. Returns 1 when the body is
 * complete, 0 to wait, -status on a framing error. */
static int consume_body(gw_conn_t *c)
{
    for (;;) {
        size_t avail = c->s.in_len - c->head_len;
        if (avail) {
            if (c->body_chunked) {
                size_t len = avail, used = 0;
                int r = gw_http_chunked_decode(&c->chunked, c->s.in + c->head_len, &len, &used,
                                               (uint64_t)gw_req_max_body(c->rq));
                /* drop decoded data and the consumed framing, keep what follows */
                memmove(c->s.in + c->head_len, c->s.in + c->head_len + used, avail - used);
                c->s.in_len -= used;
                if (r < 0)
                    return r;
                if (r == 1) {
                    c->body_chunked = 0;
                    return 1;
                }
            } else {
                size_t take = avail < c->body_left ? avail : (size_t)c->body_left;
                memmove(c->s.in + c->head_len, c->s.in + c->head_len + take, avail - take);
                c->s.in_len -= take;
                c->body_left -= take;
                if (c->body_left == 0)
                    return 1;
            }
        }
        if (c->s.in_len == c->s.in_cap)
            gw_sock_in_grow(&c->s, c->s.in_cap * 2, c->in_max);
        if (c->s.in_len == c->s.in_cap)
            return -413; /* cannot happen: everything buffered was consumed above */
        size_t got = 0;
        int r = gw_sock_read(&c->s, c->s.in + c->s.in_len, c->s.in_cap - c->s.in_len, &got);
        if (r == GW_SOCK_AGAIN)
            return 0;
        if (r != GW_SOCK_OK)
            return -1;
        c->s.in_len += got;
    }
}

static void head_limits(const gw_conn_t *c, gw_http_limits_t *lim)
{
    const gw_srv_settings_t *s = gw_conn_srv(c);
    lim->max_request_line = (size_t)s->large_header_buffers_size;
    lim->max_field_line = (size_t)s->large_header_buffers_size;
    lim->max_header_block = c->in_max;
    lim->max_headers = GW_HTTP_MAX_HEADERS;
}

/* Is the next pipelined request's head complete in the buffer already? Then its answer
 * can join this one in a single write (one TLS record, one syscall) instead of two.
 * Only for small in-memory answers; never when the next head is partial (the client
 * may wait for our answer before sending the rest). */
static int pipelined_next_ready(const gw_conn_t *c)
{
    if (!c->rq->keep_alive || c->rq->close_after || c->rq->file_left || c->s.out_off ||
        c->s.read_eof || gw_conn_stopping(c) || c->s.in_len <= c->head_len || c->s.out_len > 8192 ||
        c->requests >= (unsigned)gw_conn_srv(c)->keepalive_requests)
        return 0;
    gw_http_limits_t lim;
    head_limits(c, &lim);
    static gw_http_request_t probe; /* one thread per worker: no stack for 3 KiB */
    return gw_http_parse_request(c->s.in + c->head_len, c->s.in_len - c->head_len, &lim, &probe) >
           0;
}

/* Read the next file bytes into the output buffer, which holds out_len bytes from a record
 * boundary (its start): as many as fit, cut so that the buffer ends on a record boundary
 * (ssl_buffer_size), so that every SSL_write makes full records. With the former 16 KiB +
 * 1 KiB buffer each read made one 16 KiB record and one of 1 KiB: twice the records,
 * sends and per-record work of nginx's 16 KiB records (issue #21). */
static int fill_from_file(gw_conn_t *c)
{
    gw_sock_out_file_buffer(&c->s); /* a file body: several records per read */
    if (c->rq->file_left > (uint64_t)GW_SOCK_FILE_CAP)
        gw_sock_wbuf_push(&c->s); /* a large body: several records per send */
    size_t room = c->s.out_cap - c->s.out_len;
    size_t want = c->rq->file_left < room ? (size_t)c->rq->file_left : room;
    size_t rec = c->s.ssl ? (size_t)gw_conn_srv(c)->ssl_buffer_size : 0;
    if (rec && want < c->rq->file_left && c->s.out_len + want > rec) {
        size_t end = c->s.out_len + want;
        end -= end % rec;
        if (end > c->s.out_len)
            want = end - c->s.out_len;
    }
    ssize_t n = pread(c->rq->file_fd, c->s.out + c->s.out_len, want, (off_t)c->rq->file_off);
    if (n <= 0) {
        gw_log(GW_LOG_ERROR, n < 0 ? errno : 0, "pread() of a file for client %s %s",
               gw_conn_client(c), n == 0 ? "hit an unexpected end (file truncated?)" : "failed");
        return -1;
    }
    c->s.out_len += (size_t)n;
    c->rq->file_off += (uint64_t)n;
    c->rq->file_left -= (uint64_t)n;
    c->rq->bytes_sent += (uint64_t)n;
    return 0;
}


/* the answer is written: keep-alive, or the end (close_notify, close or linger) */
static int write_done(gw_conn_t *c)
{
    if (finish_request(c))
        return 1;
    int unread =
        c->s.in_len > c->head_len || c->body_left || c->body_chunked || c->rq->status >= 400;
    gw_sock_end(&c->s, unread);
    return 0;
}

/* 1: go on with the next state, 0: wait (or c is gone) */
static int do_write(gw_conn_t *c)
{
    gw_req_t *q = c->rq;
    if (pipelined_next_ready(c))
        return finish_request(c); /* keeps this answer in the buffer, parses the next */
    int kernel = q->file_left && gw_conn_srv(c)->sendfile == 1 && gw_sock_kernel_send(&c->s);
    if (kernel) {
        /* the head first, from the buffer; then the body by the kernel below */
    } else if (c->s.out_off == c->s.out_len && q->file_left) {
        c->s.out_off = c->s.out_len = 0;
        if (fill_from_file(c) != 0) {
            gw_sock_close(&c->s);
            return 0;
        }
    } else if (c->s.out_off == 0 && q->file_left && c->s.out_len < GW_SOCK_FILE_CAP) {
        /* head and the first file bytes in one write (one TLS record) */
        if (fill_from_file(c) != 0) {
            gw_sock_close(&c->s);
            return 0;
        }
    }
    if (c->s.out_off < c->s.out_len) {
        size_t keep = c->s.out_len;
        int r = gw_sock_flush(&c->s);
        if (r == 0)
            return 0;
        if (r < 0) {
            gw_sock_close(&c->s);
            return 0;
        }
        (void)keep;
    }
    if (q->file_left && kernel) {
        uint64_t before = q->file_left;
        int r = gw_sock_sendfile(&c->s, q->file_fd, &q->file_off, &q->file_left);
        if (r == GW_SOCK_AGAIN)
            return 0;
        if (r != GW_SOCK_OK) {
            gw_sock_close(&c->s);
            return 0;
        }
        q->bytes_sent += before - q->file_left;
        gw_sock_timer(&c->s, gw_conn_srv(c)->send_timeout_ms);
    }
    if (q->file_left)
        return 1;
    int r = gw_sock_wbuf_flush(&c->s);
    if (r == GW_SOCK_AGAIN)
        return 0;
    if (r != GW_SOCK_OK) {
        gw_sock_close(&c->s);
        return 0;
    }
    return write_done(c);
}

/* RFC 9113 §3.3: on plain TCP with http2, a client with prior knowledge opens with the
 * preface. 1: it did (HTTP/2 now runs the connection), 2: it did but HTTP/2 could not
 * start (c is closed), 0: not a preface, -1: wait for more bytes. */
static int h2_preface(gw_conn_t *c)
{
    static const char pri[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    size_t n = c->s.in_len < sizeof(pri) - 1 ? c->s.in_len : sizeof(pri) - 1;
    if (c->s.ssl || c->requests || gw_conn_srv(c)->http2 != 1 || memcmp(c->s.in, pri, n) != 0)
        return 0;
    if (n < sizeof(pri) - 1)
        return -1;
    release_request(c);
    return gw_h2_start(c) == 0 ? 1 : 2; /* it takes the buffered bytes; 2: c is closed */
}

/* 1: go on, 0: wait (or c is gone), 2: HTTP/2 runs the connection now */
static int do_read_head(gw_conn_t *c)
{
    /* The parser restarts at the head's first byte, so it runs only when a line may have
     * ended (or a limit may be passed): a head trickled one byte per TLS record costs
     * O(lines x length), not O(length^2). */
    if (c->s.in_len && c->head_dirty) {
        int pf = h2_preface(c);
        if (pf > 0)
            return pf == 1 ? 2 : 0; /* 2: h1_drive hands the connection to HTTP/2 */
        c->head_dirty = pf < 0;
        if (pf < 0)
            goto read;
        c->head_dirty = 0;
        gw_http_limits_t lim;
        head_limits(c, &lim);
        int r = gw_http_parse_request(c->s.in, c->s.in_len, &lim, &c->rq->req);
        if (r > 0) {
            c->head_len = (size_t)r;
            c->body_left = c->rq->req.has_content_length ? c->rq->req.content_length : 0;
            c->body_chunked = c->rq->req.chunked;
            if (c->body_chunked)
                gw_http_chunked_init(&c->chunked);
            route_request(c);
            if (c->state != GW_CONN_PROXY) /* else the proxy reads the body */
                c->state = (c->body_left || c->body_chunked) && !c->rq->close_after
                               ? GW_CONN_READ_BODY
                               : GW_CONN_WRITE;
            return 1;
        }
        if (r < 0) {
            start_request_failure(c, -r);
            return 1;
        }
    }
read:
    if (c->s.in && c->s.in_len == c->s.in_cap) {
        if (c->s.in_cap >= c->in_max) {
            start_request_failure(c, 431);
            return 1;
        }
        gw_sock_in_grow(&c->s, c->s.in_cap * 2, c->in_max);
    }
    if (!c->s.in)
        gw_sock_in_grow(&c->s, (size_t)gw_conn_srv(c)->client_header_buffer_size,
                        (size_t)gw_conn_srv(c)->client_header_buffer_size);
    if (!c->rq)
        c->rq = h1_req_take(c);
    size_t got = 0;
    int r;
    if (!gw_sock_readable(&c->s))
        r = GW_SOCK_AGAIN; /* no input event since the last EAGAIN (an EPOLLOUT edge after
                            * our answer, say): no read that would find nothing (nginx's
                            * rev->ready) */
    else
        r = gw_sock_read(&c->s, c->s.in + c->s.in_len, c->s.in_cap - c->s.in_len, &got);
    if (r == GW_SOCK_AGAIN && c->s.in_len == 0 && c->s.out_len == 0 && !gw_sock_busy(&c->s)) {
        /* idle: give back the request's memory and the buffers (issue #21) */
        release_request(c);
        gw_sock_idle(&c->s);
        return 0;
    }
    if (r == GW_SOCK_AGAIN)
        return 0;
    if (r != GW_SOCK_OK) {
        if (c->s.in_len)
            gw_log(GW_LOG_INFO, 0, "client %s closed the connection in a request head",
                   c->s.peer_text);
        gw_sock_close(&c->s);
        return 0;
    }
    if (c->s.in_len == 0) { /* first byte of a new request: the header timeout runs */
        gw_conn_set_stat(c, GW_ST_READING);
        if (c->requests)
            gw_sock_timer(&c->s, gw_conn_srv(c)->client_header_timeout_ms);
    }
    if (memchr(c->s.in + c->s.in_len, '\n', got))
        c->nl_seen = c->head_dirty = 1;
    c->s.in_len += got;
    if (c->s.in_len == c->s.in_cap ||
        (!c->nl_seen && c->s.in_len > (size_t)gw_conn_srv(c)->large_header_buffers_size))
        c->head_dirty = 1; /* a limit may be passed: let the parser say which */
    return 1;
}

/* 1: go on, 0: wait (or c is gone) */
static int do_read_body(gw_conn_t *c)
{
    if (c->head_len) {
        /* the head has been handled and logged fields copied: give its room to the body,
         * so a head that filled the buffer cannot starve the body */
        gw_sock_in_consume(&c->s, c->head_len);
        c->head_len = 0;
    }
    int r = consume_body(c);
    if (r == 0)
        return 0;
    if (r == -1) {
        gw_sock_close(&c->s);
        return 0;
    }
    if (r < 0) {
        /* the response chosen already is replaced by the framing error */
        if (c->rq->file_fd >= 0) {
            close(c->rq->file_fd);
            c->rq->file_fd = -1;
        }
        c->rq->file_left = 0;
        c->s.out_len = c->resp_start; /* keep the answers before this request's */
        c->rq->bytes_sent = 0;
        c->rq->keep_alive = 0;
        gw_resp_error(c->rq, -r);
    }
    /* body fully consumed: the bytes after it belong to the next request */
    c->body_left = 0;
    c->state = GW_CONN_WRITE;
    return 1;
}

static void h1_drive(gw_sock_t *s)
{
    gw_conn_t *c = (gw_conn_t *)s;
    for (;;) {
        int go;
        switch (c->state) {
        case GW_CONN_READ_HEAD:
            go = do_read_head(c);
            break;
        case GW_CONN_READ_BODY:
            go = do_read_body(c);
            break;
        case GW_CONN_WRITE:
            go = do_write(c);
            break;
        case GW_CONN_PROXY: {
            int r = gw_proxy_drive(c); /* 1: answered, the state is GW_CONN_WRITE now */
            if (r < 0)
                gw_sock_close(&c->s);
            go = r > 0;
            break;
        }
        default:
            gw_sock_close(&c->s);
            return;
        }
        if (go == 2) {
            c->s.proto->drive(&c->s); /* prior knowledge: HTTP/2 from here on */
            return;
        }
        if (!go)
            return;
    }
}

static void h1_timeout(gw_sock_t *s)
{
    gw_conn_t *c = (gw_conn_t *)s;
    switch (c->state) {
    case GW_CONN_READ_HEAD:
        if (c->s.in_len == 0) { /* idle keep-alive: close quietly */
            gw_sock_close(&c->s);
            return;
        }
        gw_log(GW_LOG_INFO, 0, "client %s timed out sending the request head", c->s.peer_text);
        c->rq->close_after = 1;
        c->rq->keep_alive = 0;
        gw_req_log_bad_line(c->rq, "-", 1);
        c->rq->log_pending = 1;
        gw_resp_error(c->rq, 408);
        c->state = GW_CONN_WRITE;
        gw_sock_timer(&c->s, gw_conn_srv(c)->send_timeout_ms);
        h1_drive(&c->s);
        return;
    case GW_CONN_READ_BODY:
        gw_log(GW_LOG_INFO, 0, "client %s timed out sending the request body", gw_conn_client(c));
        break;
    case GW_CONN_WRITE:
        gw_log(GW_LOG_INFO, 0, "client %s timed out reading the response", gw_conn_client(c));
        break;
    case GW_CONN_PROXY:
        gw_log(GW_LOG_INFO, 0, "client %s timed out %s", gw_conn_client(c),
               c->s.out_len > c->s.out_off ? "reading the proxied response"
                                           : "sending the request body");
        break;
    }
    gw_sock_close(&c->s);
}

static void h1_release(gw_sock_t *s)
{
    gw_conn_t *c = (gw_conn_t *)s;
    if (c->proxy)
        gw_proxy_conn_free(c); /* an unanswered request gets its status (400, 499) */
    gw_req_log_unfinished(c->rq);
    release_request(c);
}

const gw_sock_proto_t gw_h1_proto = {"http/1.1", h1_drive, h1_timeout, h1_release};

void gw_h1_start(gw_conn_t *c)
{
    c->s.proto = &gw_h1_proto;
    c->state = GW_CONN_READ_HEAD;
}
