#include "sock/sock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/stats.h"
#include "sock/internal.h"
#include "tls/secheap.h"
#include "tls/tls.h"

#define SENDFILE_MAX (1u << 20) /* bytes per sendfile call: other connections get a turn */
#define LINGER_MS 5000          /* nginx's lingering_timeout */

#define SOCK_OF_TIMER(t) ((gw_sock_t *)((char *)(t)-offsetof(gw_sock_t, timer)))

/* ---- I/O over TLS or plain TCP ---- */

static int ssl_result(gw_sock_t *s, int ret, const char *op)
{
    int err = SSL_get_error(s->ssl, ret);
    switch (err) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        return IO_AGAIN;
    case SSL_ERROR_WANT_ASYNC:
        return IO_ASYNC;
    case SSL_ERROR_WANT_ASYNC_JOB:
        return IO_ASYNC_JOB;
    case SSL_ERROR_WANT_CLIENT_HELLO_CB:
        return IO_AGAIN; /* a session lookup (http/resume.c) wakes it: gw_sock_hello_resume */
    case SSL_ERROR_ZERO_RETURN:
        s->read_eof = 1;
        return IO_EOF;
    case SSL_ERROR_SYSCALL:
        if (errno == 0 || errno == ECONNRESET || errno == EPIPE) {
            s->read_eof = 1;
            ERR_clear_error();
            return IO_EOF;
        }
        gw_log(GW_LOG_INFO, errno, "%s() failed for client %s", op, s->peer_text);
        ERR_clear_error();
        return IO_ERROR;
    default:
        if (gw_log_enabled(GW_LOG_INFO))
            gw_log_ssl_errors(GW_LOG_INFO, s->peer_text);
        ERR_clear_error();
        return IO_ERROR;
    }
}

static int io_read(gw_sock_t *s, char *buf, size_t len, size_t *got)
{
    if (s->ssl) {
        ERR_clear_error();
        errno = 0;
        int r = SSL_read_ex(s->ssl, buf, len, got);
        if (r == 1)
            return IO_OK;
        r = ssl_result(s, r, "SSL_read");
        if (r == IO_AGAIN && SSL_want_read(s->ssl))
            s->rd_ready = 0; /* the socket said EAGAIN */
        return r;
    }
    ssize_t n = recv(s->fd, buf, len, 0);
    if (n > 0) {
        *got = (size_t)n;
        return IO_OK;
    }
    if (n == 0) {
        s->read_eof = 1;
        return IO_EOF;
    }
    if (errno == EAGAIN) {
        s->rd_ready = 0;
        return IO_AGAIN;
    }
    if (errno == EINTR)
        return IO_AGAIN;
    if (errno == ECONNRESET)
        return IO_EOF;
    gw_log(GW_LOG_INFO, errno, "recv() failed for client %s", s->peer_text);
    return IO_ERROR;
}

static int io_write(gw_sock_t *s, const char *buf, size_t len, size_t *put)
{
    if (s->ssl) {
        ERR_clear_error();
        errno = 0;
        int r = SSL_write_ex(s->ssl, buf, len, put);
        return r == 1 ? IO_OK : ssl_result(s, r, "SSL_write");
    }
    ssize_t n = send(s->fd, buf, len, MSG_NOSIGNAL);
    if (n >= 0) {
        *put = (size_t)n;
        return IO_OK;
    }
    if (errno == EAGAIN || errno == EINTR)
        return IO_AGAIN;
    if (errno != EPIPE && errno != ECONNRESET)
        gw_log(GW_LOG_INFO, errno, "send() failed for client %s", s->peer_text);
    return IO_ERROR;
}

/* an I/O result as the public one, parking on WANT_ASYNC / WANT_ASYNC_JOB */
static int public_result(gw_sock_t *s, int r, int op)
{
    if (r == IO_OK)
        return GW_SOCK_OK;
    if (r == IO_AGAIN || gw_sock_park_(s, r, op))
        return GW_SOCK_AGAIN;
    return r == IO_EOF ? GW_SOCK_EOF : GW_SOCK_ERROR;
}

int gw_sock_read(gw_sock_t *s, char *buf, size_t len, size_t *got)
{
    return public_result(s, io_read(s, buf, len, got), OP_READ);
}

int gw_sock_write(gw_sock_t *s, const char *buf, size_t len, size_t *put)
{
    return public_result(s, io_write(s, buf, len, put), OP_WRITE);
}

int gw_sock_flush(gw_sock_t *s)
{
    while (s->out_off < s->out_len) {
        size_t put = 0;
        int r = gw_sock_write(s, s->out + s->out_off, s->out_len - s->out_off, &put);
        if (r == GW_SOCK_AGAIN)
            return 0;
        if (r != GW_SOCK_OK)
            return -1;
        s->out_off += put;
        /* send_timeout bounds the time between two successful writes (nginx) */
        gw_sock_timer(s, s->send_timeout_ms);
    }
    s->out_off = s->out_len = 0;
    return 1;
}

int gw_sock_readable(gw_sock_t *s)
{
    return s->rd_ready || (s->ssl && SSL_has_pending(s->ssl));
}

/* After each read of the socket BIO: a read that got fewer bytes than asked (OpenSSL asks
 * for all the room it has: read-ahead) or EAGAIN leaves the socket drained, so the next
 * read waits for an input event (edge-triggered epoll reports every arrival). */
static long rd_callback(BIO *b, int oper, const char *argp, size_t len, int argi, long argl,
                        int ret, size_t *processed)
{
    (void)argp;
    (void)argi;
    (void)argl;
    if (oper == (BIO_CB_READ | BIO_CB_RETURN)) {
        gw_sock_t *s = (gw_sock_t *)BIO_get_callback_arg(b);
        if (ret > 0 ? processed && *processed < len && !s->pending_eof : BIO_should_retry(b))
            s->rd_ready = 0;
    }
    return ret;
}

/* sendfile on: the file body goes out by the kernel, by kTLS (SSL_sendfile: OpenSSL
 * moved the record layer into the kernel after the handshake) or plain sendfile(2). */
int gw_sock_kernel_send(const gw_sock_t *s)
{
    if (!s->ssl)
        return 1;
    return BIO_get_ktls_send(SSL_get_wbio(s->ssl)) > 0;
}

int gw_sock_sendfile(gw_sock_t *s, int fd, uint64_t *off, uint64_t *left)
{
    size_t n = *left > SENDFILE_MAX ? SENDFILE_MAX : (size_t)*left;
    ssize_t w;
    if (s->ssl) {
        ERR_clear_error();
        errno = 0;
        w = SSL_sendfile(s->ssl, fd, (off_t)*off, n, 0);
        if (w < 0)
            return public_result(s, ssl_result(s, (int)w, "SSL_sendfile"), OP_WRITE);
    } else {
        off_t o = (off_t)*off;
        w = sendfile(s->fd, fd, &o, n);
        if (w < 0) {
            if (errno == EAGAIN || errno == EINTR)
                return GW_SOCK_AGAIN;
            if (errno != EPIPE && errno != ECONNRESET)
                gw_log(GW_LOG_INFO, errno, "sendfile() failed for client %s", s->peer_text);
            return GW_SOCK_ERROR;
        }
    }
    if (w == 0) {
        gw_log(GW_LOG_ERROR, 0,
               "sendfile() of a file for client %s hit an unexpected end "
               "(file truncated?)",
               s->peer_text);
        return GW_SOCK_ERROR;
    }
    *off += (uint64_t)w;
    *left -= (uint64_t)w;
    return GW_SOCK_OK;
}

/* A file body sent through OpenSSL's records: one send per record (OpenSSL 3.0 writes each
 * record to its BIO at once) costs the kernel a syscall and a socket-buffer entry per
 * 16 KiB. A buffering BIO between SSL and the socket for the time of the body lets the
 * records of one file read (4) leave in one send; it is removed (its memory freed) once the
 * body is flushed, so idle and small-answer connections never hold it. */
#define WBUF_SIZE (GW_SOCK_FILE_CAP + 4 * 64) /* 4 records, their headers, tags, types */

void gw_sock_wbuf_push(gw_sock_t *s)
{
    if (s->wbuf || !s->ssl || gw_sock_busy(s))
        return;
    BIO *sock = SSL_get_wbio(s->ssl);
    BIO *b = BIO_new(BIO_f_buffer());
    if (!b || !sock || BIO_set_write_buffer_size(b, WBUF_SIZE) <= 0 || !BIO_up_ref(sock)) {
        BIO_free(b);
        ERR_clear_error();
        return; /* one send per record, as without */
    }
    BIO_push(b, sock);
    SSL_set0_wbio(s->ssl, b); /* drops SSL's reference to sock; b's chain holds ours */
    s->wbuf = b;
}

static void wbuf_pop(gw_sock_t *s)
{
    BIO *sock = BIO_next(s->wbuf);
    BIO_up_ref(sock);
    s->wbuf = NULL;
    SSL_set0_wbio(s->ssl, sock); /* frees the buffer BIO and its reference to sock */
}

int gw_sock_wbuf_flush(gw_sock_t *s)
{
    if (!s->wbuf)
        return GW_SOCK_OK;
    ERR_clear_error();
    errno = 0;
    if (BIO_flush(s->wbuf) > 0) {
        wbuf_pop(s);
        return GW_SOCK_OK;
    }
    if (BIO_should_retry(s->wbuf))
        return GW_SOCK_AGAIN;
    if (errno != EPIPE && errno != ECONNRESET && errno != 0)
        gw_log(GW_LOG_INFO, errno, "send() failed for client %s", s->peer_text);
    ERR_clear_error();
    return GW_SOCK_ERROR;
}

/* ---- timers ---- */

void gw_sock_timer(gw_sock_t *s, int64_t ms)
{
    gw_timer_add(s->loop, &s->timer, ms);
}

void gw_sock_timer_del(gw_sock_t *s)
{
    gw_timer_del(s->loop, &s->timer);
}

static void on_timer(gw_timer_t *t)
{
    gw_sock_t *s = SOCK_OF_TIMER(t);
    if (s->draining && s->async_paused) {
        gw_log(GW_LOG_ALERT, 0,
               "an async job of client %s has been paused for %d s: the "
               "connection is kept until the accelerator completes it",
               s->peer_text, DRAIN_WARN_MS / 1000);
        gw_sock_timer(s, DRAIN_WARN_MS);
        return;
    }
    if (s->preface) {
        s->owner->preface_timeout(s);
        gw_sock_close(s);
        return;
    }
    if (s->handshaking) {
        gw_log(GW_LOG_INFO, 0, "client %s timed out in the TLS handshake", s->peer_text);
        GW_STAT_ADD(handshakes_failed, 1);
        gw_sock_close(s);
        return;
    }
    if (s->lingering || !s->proto || s->draining) {
        gw_sock_close(s);
        return;
    }
    s->proto->timeout(s);
}

/* ---- the handshake, lingering close, driving ---- */

static void linger_start(gw_sock_t *s);

/* 1: done (the owner chose the protocol), 0: wait, -1: s was closed (or lingers) */
static int handshake(gw_sock_t *s)
{
    ERR_clear_error();
    errno = 0;
    int r = SSL_do_handshake(s->ssl);
    if (r == 1) {
        GW_STAT_ADD(handshakes, 1);
        int resumed = SSL_session_reused(s->ssl);
        if (resumed)
            GW_STAT_ADD(handshakes_resumed, 1);
        if (SSL_version(s->ssl) == TLS1_3_VERSION)
            GW_STAT_ADD(tls13, 1);
        else
            GW_STAT_ADD(tls12, 1);
        int proto, key;
        gw_tls_handshake_kind(s->ssl, &proto, &key);
        int64_t us = gw_now_us() - s->accept_us; /* the loop pass's cached time */
        gw_stats_handshake(proto, key, resumed, us > 0 ? (uint64_t)us : 0);
        gw_stats_handshake_group(gw_tls_handshake_group(s->ssl));
        s->handshaking = 0;
        s->owner->handshake_done(s);
        return 1;
    }
    unsigned long first_err = ERR_peek_error();
    if (first_err && SSL_get_error(s->ssl, r) == SSL_ERROR_SSL)
        gw_secheap_failed(s->peer_text); /* a full secure heap gets a clear line */
    int rr = ssl_result(s, r, "SSL_do_handshake");
    if (rr == IO_AGAIN || gw_sock_park_(s, rr, OP_HANDSHAKE))
        return 0;
    GW_STAT_ADD(handshakes_failed, 1);
    if (ERR_GET_LIB(first_err) == ERR_LIB_SSL && ERR_GET_REASON(first_err) == SSL_R_HTTP_REQUEST) {
        /* nginx's courtesy: a plain HTTP request on a TLS port gets a plain 400 */
        static const char plain400[] =
            "HTTP/1.1 400 Bad Request\r\nServer: tlsgate\r\nContent-Type: text/plain"
            "\r\nContent-Length: 48\r\nConnection: close\r\n\r\n"
            "The plain HTTP request was sent to HTTPS port.\r\n";
        ssize_t w = send(s->fd, plain400, sizeof(plain400) - 1, MSG_NOSIGNAL);
        (void)w;
    }
    if (rr == IO_ERROR && !s->read_eof) {
        /* OpenSSL wrote its fatal alert (or the plain 400 went out): closing with client
         * bytes unread (the rest of a flight, early data) makes the kernel answer with
         * RST, which can overtake the alert; as nginx's lingering close: FIN after the
         * alert, then drain until EOF or LINGER_MS. The failed SSL is freed first (its
         * socket BIO leaves the fd open): its handshake keys would otherwise hold the
         * secure heap for the whole linger, so failed handshakes kept open by their
         * clients would starve the next ones (integ_secheap test_full_heap_paused). */
        gw_sock_async_forget_(s);
        SSL_free(s->ssl);
        s->ssl = NULL;
        s->handshaking = 0;
        linger_start(s);
        return -1;
    }
    gw_sock_close(s);
    return -1;
}

static void linger_drain(gw_sock_t *s)
{
    char buf[4096];
    for (;;) {
        ssize_t n = recv(s->fd, buf, sizeof(buf), 0);
        if (n > 0)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        gw_sock_close(s);
        return;
    }
}

/* Lingering close: FIN, then drain until EOF or LINGER_MS. May free s. */
static void linger_start(gw_sock_t *s)
{
    shutdown(s->fd, SHUT_WR);
    s->lingering = 1;
    s->in_len = 0;
    gw_sock_timer(s, LINGER_MS);
    linger_drain(s);
}

void gw_sock_drive_(gw_sock_t *s)
{
    if (s->preface) {
        int r = s->owner->preface(s);
        if (r == 0)
            return;
        if (r < 0) {
            gw_sock_close(s);
            return;
        }
        s->preface = 0;
    }
    if (s->handshaking && handshake(s) <= 0)
        return;
    if (s->lingering) {
        linger_drain(s);
        return;
    }
    s->proto->drive(s);
}

void gw_sock_resume(gw_sock_t *s)
{
    if (gw_sock_busy(s))
        return; /* the job's wake drives it */
    gw_sock_drive_(s);
}

void gw_sock_hello_resume(gw_sock_t *s)
{
    if (s->handshaking && !gw_sock_busy(s))
        gw_sock_drive_(s);
}

static void on_event(gw_io_t *io, uint32_t events)
{
    gw_sock_t *s = (gw_sock_t *)io;
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
        s->rd_ready = 1; /* also while paused: the drive after the wake reads it */
    if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
        s->pending_eof = 1; /* data and FIN in one edge: the short read leaves the EOF */
    /* "While a job is paused, no other SSL function is called on that connection": socket
     * events wait for the job's wake (edge-triggered: the drive after it reads them). */
    if (gw_sock_busy(s)) {
        /* A client that is gone is drained now rather than when its job ends: the job
         * still finishes before anything is freed (gw_sock_close defers while paused). */
        if ((events & (EPOLLHUP | EPOLLERR)) || ((events & EPOLLRDHUP) && s->handshaking))
            gw_sock_close(s);
        return;
    }
    gw_sock_drive_(s);
}

/* ---- ending ---- */

int gw_sock_close_notify(gw_sock_t *s)
{
    if (!s->ssl)
        return shutdown(s->fd, SHUT_WR) == 0 || errno == ENOTCONN ? 1 : -1;
    ERR_clear_error();
    int r = SSL_shutdown(s->ssl);
    if (r >= 0) {
        ERR_clear_error();
        return 1;
    }
    int e = SSL_get_error(s->ssl, r);
    ERR_clear_error();
    if (e == SSL_ERROR_WANT_ASYNC || e == SSL_ERROR_WANT_ASYNC_JOB) {
        gw_sock_park_(s, e == SSL_ERROR_WANT_ASYNC ? IO_ASYNC : IO_ASYNC_JOB, OP_SHUTDOWN);
        return 0;
    }
    if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ)
        return 0;
    return -1;
}

void gw_sock_end(gw_sock_t *s, int unread)
{
    /* send close_notify (RFC 8446 §6.1) once, without waiting for the peer's */
    if (s->ssl && SSL_is_init_finished(s->ssl) && !s->read_eof) {
        ERR_clear_error();
        int r = SSL_shutdown(s->ssl);
        if (r < 0 && SSL_get_error(s->ssl, r) == SSL_ERROR_WANT_ASYNC) {
            /* an accelerator paused the shutdown: close once it is done (tengine#1793) */
            ERR_clear_error();
            gw_sock_park_(s, IO_ASYNC, OP_SHUTDOWN);
            s->draining = 1;
            return;
        }
        ERR_clear_error();
    }
    if (s->ssl && SSL_has_pending(s->ssl))
        unread = 1;
    if (!unread || s->read_eof) {
        gw_sock_close(s);
        return;
    }
    /* Lingering close (nginx): closing with unread input makes the kernel send RST,
     * which can destroy the response still in flight; drain until EOF first. */
    linger_start(s);
}

/* RFC 5246 §7.2.1 (TLS 1.2: "the other party MUST respond with a close_notify alert of its
 * own") and RFC 8446 §6.1 (TLS 1.3: each party sends close_notify before closing its write
 * side): a client's close_notify (SSL_RECEIVED_SHUTDOWN, set by OpenSSL when SSL_read met
 * it) is answered by ours before the FIN. One non-blocking SSL_shutdown, never a loop: a
 * full socket buffer (WANT_WRITE) or a pool without a free async job (WANT_ASYNC_JOB)
 * drops the alert, the connection closes as before. Returns 1 when an accelerator paused
 * the shutdown (the connection drains and is freed when the job ends), else 0. */
static int answer_close_notify(gw_sock_t *s)
{
    if (!s->ssl || s->draining || s->async_retry || !SSL_is_init_finished(s->ssl) ||
        (SSL_get_shutdown(s->ssl) & (SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN)) !=
            SSL_RECEIVED_SHUTDOWN)
        return 0;
    ERR_clear_error();
    errno = 0;
    int r = SSL_shutdown(s->ssl);
    int e = r < 0 ? SSL_get_error(s->ssl, r) : SSL_ERROR_NONE;
    ERR_clear_error();
    if (e == SSL_ERROR_WANT_ASYNC) {
        gw_sock_park_(s, IO_ASYNC, OP_SHUTDOWN);
        s->draining = 1;
        gw_sock_timer(s, DRAIN_WARN_MS);
        return 1;
    }
    return 0;
}

void gw_sock_close(gw_sock_t *s)
{
    if (!s->async_paused && answer_close_notify(s))
        return;
    if (s->async_paused) {
        /* Never free an SSL whose job is paused (haproxy#3453): drain it. The job's wake
         * resumes it until it finishes, then the connection is freed. */
        if (!s->draining) {
            s->draining = 1;
            GW_WSTAT_ADD(drained, 1);
        }
        gw_sock_timer(s, DRAIN_WARN_MS);
        return;
    }
    gw_sock_free_(s);
}

void gw_sock_free_(gw_sock_t *s)
{
    gw_sock_timer_del(s);
    if (s->proto && s->proto->release)
        s->proto->release(s);
    /* Always: a provider thread (the timer) can complete a request and call the wake
     * callback after the job queued it but before the job paused; the job then goes on
     * without pausing, so a socket that never parked can still be queued. */
    gw_sock_async_forget_(s);
    if (s->ssl) {
        /* A session stays resumable however its connection ends (nginx's
         * ngx_ssl_shutdown marks both directions shut as well): SSL_free otherwise takes
         * a connection that sent no close_notify for a failed one and removes its session
         * from the cache (ssl_clear_bad_session), so keep-alive clients, which close
         * without close_notify or are closed at keepalive_timeout, never resumed. A fatal
         * alert already made its session non-resumable inside OpenSSL. */
        if (SSL_is_init_finished(s->ssl))
            SSL_set_shutdown(s->ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
        s->wbuf = NULL; /* SSL_free frees the BIO chain */
        SSL_free(s->ssl);
    }
    s->ssl = NULL;
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    gw_sock_release_buffers_(s);
    s->owner->freed(s);
}

/* ---- opening ---- */

int gw_sock_open(gw_sock_t *s, gw_loop_t *loop, int fd, SSL_CTX *ctx, int async_fd_mode,
                 const gw_sock_owner_t *owner, void *app)
{
    s->io.handler = on_event;
    s->fd = fd;
    s->loop = loop;
    s->owner = owner;
    s->rd_ready = 1;
    s->timer.cb = on_timer;
    s->accept_us = gw_now_us();
    if (ctx) {
        s->ssl = SSL_new(ctx);
        if (!s->ssl || !SSL_set_fd(s->ssl, fd)) {
            gw_log_ssl_errors(GW_LOG_ALERT, "SSL_new");
            return -1;
        }
        SSL_set_app_data(s->ssl, app);
        BIO *rb = SSL_get_rbio(s->ssl);
        BIO_set_callback_arg(rb, (char *)s);
        BIO_set_callback_ex(rb, rd_callback);
        SSL_set_accept_state(s->ssl);
        if (SSL_get_mode(s->ssl) & SSL_MODE_ASYNC)
            gw_sock_async_open_(s, async_fd_mode);
        s->handshaking = 1;
    }
    if (gw_loop_add(loop, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, &s->io) != 0) {
        gw_log(GW_LOG_ALERT, errno, "epoll_ctl(ADD) failed");
        return -1;
    }
    return 0;
}
