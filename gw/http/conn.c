#include "http/conn.h"

#include <errno.h>
#include <pthread.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/stats.h"
#include "http/resume.h"
#include "tls/sni_ack.h"
#include "net/limits.h"
#include "net/proxy_protocol.h"
#include "net/listen.h"
#include "proxy/proxy.h"
#include "proxy/stream.h"
#include "tls/secheap.h"
#include "tls/tls.h"
#include "worker.h"

#define OUT_CAP (16384 + 1024) /* a response head and a small body; grown as needed */
/* a file body: 4 full 16 KiB records per pread (nginx reads 32 KiB: output_buffers 2 32k)
 * and room for the head before the first */
#define FILE_CAP (4 * 16384 + 1024)
#define SENDFILE_MAX (1u << 20) /* bytes per sendfile call: other connections get a turn */
#define LINGER_MS 5000         /* nginx's lingering_timeout */
#define SHUTDOWN_IDLE_MS 1000  /* graceful stop: an idle keep-alive client gets this long */

enum io_result { IO_OK = 1, IO_AGAIN = 0, IO_EOF = -1, IO_ERROR = -2, IO_ASYNC = -3,
                 IO_ASYNC_JOB = -4 };

/* the SSL call a paused async job belongs to */
enum async_op { OP_HANDSHAKE = 1, OP_READ, OP_WRITE, OP_SHUTDOWN };

#define DRAIN_WARN_MS 10000 /* a paused job that has not finished by then is logged */
#define RETRY_MS 5          /* backstop for WANT_ASYNC_JOB when no job completes */

enum stat_state { ST_NONE = 0, ST_READING, ST_WRITING, ST_WAITING };

static void conn_drive(gw_conn_t *c);
static void conn_close(gw_conn_t *c);
static void conn_free(gw_conn_t *c);
static int park(gw_conn_t *c, int rr, int op);

#define CONN_OF_TIMER(t) ((gw_conn_t *)((char *)(t)-offsetof(gw_conn_t, timer)))

static const gw_srv_settings_t *srv(const gw_conn_t *c)
{
    return &c->vs->conf->srv;
}

static void set_stat(gw_conn_t *c, int st)
{
    if (c->stat_state == st)
        return;
    switch (c->stat_state) {
    case ST_READING:
        GW_WSTAT_ADD(reading, -1);
        break;
    case ST_WRITING:
        GW_WSTAT_ADD(writing, -1);
        break;
    case ST_WAITING:
        GW_WSTAT_ADD(waiting, -1);
        break;
    }
    switch (st) {
    case ST_READING:
        GW_WSTAT_ADD(reading, 1);
        break;
    case ST_WRITING:
        GW_WSTAT_ADD(writing, 1);
        break;
    case ST_WAITING:
        GW_WSTAT_ADD(waiting, 1);
        break;
    }
    c->stat_state = st;
}

/* ---- I/O over TLS or plain TCP ---- */

static int ssl_result(gw_conn_t *c, int ret, const char *op)
{
    int err = SSL_get_error(c->ssl, ret);
    switch (err) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        return IO_AGAIN;
    case SSL_ERROR_WANT_ASYNC:
        return IO_ASYNC;
    case SSL_ERROR_WANT_ASYNC_JOB:
        return IO_ASYNC_JOB;
    case SSL_ERROR_WANT_CLIENT_HELLO_CB:
        return IO_AGAIN; /* a session lookup (http/resume.c) wakes it: gw_conn_hello_resume */
    case SSL_ERROR_ZERO_RETURN:
        c->read_eof = 1;
        return IO_EOF;
    case SSL_ERROR_SYSCALL:
        if (errno == 0 || errno == ECONNRESET || errno == EPIPE) {
            c->read_eof = 1;
            ERR_clear_error();
            return IO_EOF;
        }
        gw_log(GW_LOG_INFO, errno, "%s() failed for client %s", op, c->peer_text);
        ERR_clear_error();
        return IO_ERROR;
    default:
        if (gw_log_enabled(GW_LOG_INFO))
            gw_log_ssl_errors(GW_LOG_INFO, c->peer_text);
        ERR_clear_error();
        return IO_ERROR;
    }
}

static int io_read(gw_conn_t *c, char *buf, size_t len, size_t *got)
{
    if (c->ssl) {
        ERR_clear_error();
        errno = 0;
        int r = SSL_read_ex(c->ssl, buf, len, got);
        if (r == 1)
            return IO_OK;
        r = ssl_result(c, r, "SSL_read");
        if (r == IO_AGAIN && SSL_want_read(c->ssl))
            c->rd_ready = 0; /* the socket said EAGAIN */
        return r;
    }
    ssize_t n = recv(c->fd, buf, len, 0);
    if (n > 0) {
        *got = (size_t)n;
        return IO_OK;
    }
    if (n == 0) {
        c->read_eof = 1;
        return IO_EOF;
    }
    if (errno == EAGAIN) {
        c->rd_ready = 0;
        return IO_AGAIN;
    }
    if (errno == EINTR)
        return IO_AGAIN;
    if (errno == ECONNRESET)
        return IO_EOF;
    gw_log(GW_LOG_INFO, errno, "recv() failed for client %s", c->peer_text);
    return IO_ERROR;
}

static int io_write(gw_conn_t *c, const char *buf, size_t len, size_t *put)
{
    if (c->ssl) {
        ERR_clear_error();
        errno = 0;
        int r = SSL_write_ex(c->ssl, buf, len, put);
        return r == 1 ? IO_OK : ssl_result(c, r, "SSL_write");
    }
    ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL);
    if (n >= 0) {
        *put = (size_t)n;
        return IO_OK;
    }
    if (errno == EAGAIN || errno == EINTR)
        return IO_AGAIN;
    if (errno != EPIPE && errno != ECONNRESET)
        gw_log(GW_LOG_INFO, errno, "send() failed for client %s", c->peer_text);
    return IO_ERROR;
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
        gw_conn_t *c = (gw_conn_t *)BIO_get_callback_arg(b);
        if (ret > 0 ? processed && *processed < len && !c->pending_eof : BIO_should_retry(b))
            c->rd_ready = 0;
    }
    return ret;
}

/* sendfile on: the file body goes out by the kernel, by kTLS (SSL_sendfile: OpenSSL
 * moved the record layer into the kernel after the handshake) or plain sendfile(2). */
static int use_kernel_send(gw_conn_t *c)
{
    if (srv(c)->sendfile != 1)
        return 0;
    if (!c->ssl)
        return 1;
    return BIO_get_ktls_send(SSL_get_wbio(c->ssl)) > 0;
}

static int io_sendfile(gw_conn_t *c)
{
    size_t n = c->file_left > SENDFILE_MAX ? SENDFILE_MAX : (size_t)c->file_left;
    ssize_t w;
    if (c->ssl) {
        ERR_clear_error();
        errno = 0;
        w = SSL_sendfile(c->ssl, c->file_fd, (off_t)c->file_off, n, 0);
        if (w < 0)
            return ssl_result(c, (int)w, "SSL_sendfile");
    } else {
        off_t off = (off_t)c->file_off;
        w = sendfile(c->fd, c->file_fd, &off, n);
        if (w < 0) {
            if (errno == EAGAIN || errno == EINTR)
                return IO_AGAIN;
            if (errno != EPIPE && errno != ECONNRESET)
                gw_log(GW_LOG_INFO, errno, "sendfile() failed for client %s", c->peer_text);
            return IO_ERROR;
        }
    }
    if (w == 0) {
        gw_log(GW_LOG_ERROR, 0, "sendfile() of a file for client %s hit an unexpected end "
               "(file truncated?)", c->peer_text);
        return IO_ERROR;
    }
    c->file_off += (uint64_t)w;
    c->file_left -= (uint64_t)w;
    c->bytes_sent += (uint64_t)w;
    return IO_OK;
}

/* A file body sent through OpenSSL's records: one send per record (OpenSSL 3.0 writes each
 * record to its BIO at once) costs the kernel a syscall and a socket-buffer entry per
 * 16 KiB. A buffering BIO between SSL and the socket for the time of the body lets the
 * records of one file read (4) leave in one send; it is removed (its memory freed) once the
 * body is flushed, so idle and small-answer connections never hold it. */
#define WBUF_SIZE (FILE_CAP + 4 * 64) /* 4 records and their headers, tags, content types */

static void wbuf_push(gw_conn_t *c)
{
    if (c->wbuf || !c->ssl)
        return;
    BIO *sock = SSL_get_wbio(c->ssl);
    BIO *b = BIO_new(BIO_f_buffer());
    if (!b || !sock || BIO_set_write_buffer_size(b, WBUF_SIZE) <= 0 || !BIO_up_ref(sock)) {
        BIO_free(b);
        ERR_clear_error();
        return; /* one send per record, as without */
    }
    BIO_push(b, sock);
    SSL_set0_wbio(c->ssl, b); /* drops SSL's reference to sock; b's chain holds ours */
    c->wbuf = b;
}

static void wbuf_pop(gw_conn_t *c)
{
    BIO *sock = BIO_next(c->wbuf);
    BIO_up_ref(sock);
    c->wbuf = NULL;
    SSL_set0_wbio(c->ssl, sock); /* frees the buffer BIO and its reference to sock */
}

/* Send what the buffer holds; IO_OK once empty (the buffer removed), IO_AGAIN, IO_ERROR. */
static int wbuf_flush(gw_conn_t *c)
{
    ERR_clear_error();
    errno = 0;
    if (BIO_flush(c->wbuf) > 0) {
        wbuf_pop(c);
        return IO_OK;
    }
    if (BIO_should_retry(c->wbuf))
        return IO_AGAIN;
    if (errno != EPIPE && errno != ECONNRESET && errno != 0)
        gw_log(GW_LOG_INFO, errno, "send() failed for client %s", c->peer_text);
    ERR_clear_error();
    return IO_ERROR;
}

/* ---- server selection ---- */

static int name_matches(const char *pattern, const char *host, size_t hlen)
{
    size_t plen = strlen(pattern);
    if (plen > 2 && pattern[0] == '*' && pattern[1] == '.') {
        /* "*.example.com" matches "www.example.com" and "a.b.example.com" (nginx) */
        size_t suf = plen - 1; /* ".example.com" */
        return hlen > suf && memcmp(host + hlen - suf, pattern + 1, suf) == 0;
    }
    return plen == hlen && memcmp(pattern, host, hlen) == 0;
}

/* Exact names first, then the longest wildcard; NULL when nothing matches. */
static gw_vserver_t *find_server(gw_laddr_t *la, const char *host, size_t hlen)
{
    gw_vserver_t *wild = NULL;
    size_t wild_len = 0;
    for (size_t i = 0; i < la->n_servers; i++) {
        gw_vserver_t *vs = la->servers[i];
        for (size_t j = 0; j < vs->conf->server_names.n; j++) {
            const char *p = vs->conf->server_names.v[j];
            if (p[0] == '*') {
                size_t pl = strlen(p);
                if (pl > wild_len && name_matches(p, host, hlen)) {
                    wild = vs;
                    wild_len = pl;
                }
            } else if (name_matches(p, host, hlen)) {
                return vs;
            }
        }
    }
    return wild;
}

/* Lower-case a host name into out, drop a trailing dot; -1 when it is not a valid
 * reg-name/IP literal (RFC 3986 §3.2.2), so that hostile bytes never reach the logs
 * or a file path. */
static long normalize_host(const char *h, size_t len, char *out, size_t cap, int strip_port)
{
    if (strip_port) {
        if (len && h[0] == '[') {
            const char *e = memchr(h, ']', len);
            if (!e)
                return -1;
            size_t l = (size_t)(e - h) + 1;
            if (l < len && (h[l] != ':' || l + 1 == len))
                return -1;
            for (size_t i = l + 1; i < len; i++)
                if (h[i] < '0' || h[i] > '9')
                    return -1;
            len = l;
        } else {
            const char *colon = memchr(h, ':', len);
            if (colon) {
                size_t l = (size_t)(colon - h);
                if (l + 1 == len)
                    return -1;
                for (size_t i = l + 1; i < len; i++)
                    if (h[i] < '0' || h[i] > '9')
                        return -1;
                len = l;
            }
        }
    }
    if (len && h[len - 1] == '.')
        len--;
    if (len == 0 || len >= cap)
        return -1;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)h[i];
        if (ch >= 'A' && ch <= 'Z')
            ch = (unsigned char)(ch + 32);
        else if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' ||
                   ch == '.' || ch == '_' || ch == '[' || ch == ']' || ch == ':'))
            return -1;
        if (ch == '.' && i > 0 && out[i - 1] == '.')
            return -1;
        out[i] = (char)ch;
    }
    out[len] = '\0';
    return (long)len;
}

static int sni_switch(SSL *ssl, int *alert);
/* The server block is chosen: `ssl_reject_handshake on` in it ends the handshake with
 * the unrecognized_name alert (RFC 6066 §3 "the server MAY abort the handshake": nginx's
 * ssl_reject_handshake), before any certificate could be shown. */
static int reject_or_go(gw_conn_t *c, int *alert)
{
    if (c->vs->conf->srv.ssl_reject_handshake == 1) {
        gw_log(GW_LOG_INFO, 0, "client %s: handshake rejected (ssl_reject_handshake) for %s",
               c->peer_text, c->sni_present ? "its server_name" : "a ClientHello without SNI");
        *alert = SSL_AD_UNRECOGNIZED_NAME;
        return SSL_CLIENT_HELLO_ERROR;
    }
    return SSL_CLIENT_HELLO_SUCCESS;
}

int gw_conn_client_hello(SSL *ssl, int *alert, void *arg)
{
    int r = sni_switch(ssl, alert);
    gw_conn_t *c = SSL_get_app_data(ssl);
    if (r != SSL_CLIENT_HELLO_SUCCESS || !c)
        return r;
    return gw_resume_client_hello(c, ssl); /* ssl_session_cache redis:// */
}

void gw_conn_hello_resume(gw_conn_t *c)
{
    if (c->state == GW_CONN_HANDSHAKE && !c->async_paused && !c->async_retry)
        conn_drive(c);
}

static int sni_switch(SSL *ssl, int *alert)
{
    gw_conn_t *c = SSL_get_app_data(ssl);
    if (!c)
        return SSL_CLIENT_HELLO_SUCCESS;
    const unsigned char *name;
    size_t len;
    int r = gw_tls_hello_sni(ssl, &name, &len);
    if (r < 0) {
        *alert = SSL_AD_DECODE_ERROR;
        return SSL_CLIENT_HELLO_ERROR;
    }
    if (r == 0)
        return reject_or_go(c, alert); /* no SNI: the default server */
    c->sni_present = 1;
    char host[256];
    long hl = normalize_host((const char *)name, len, host, sizeof(host), 0);
    if (hl < 0)
        return reject_or_go(c, alert); /* unusable name: the default server, as nginx */
    gw_vserver_t *vs = find_server(c->laddr, host, (size_t)hl);
    if (!vs)
        return reject_or_go(c, alert);
    c->sni_matched = 1;
    gw_tls_sni_used(ssl); /* tls/sni_ack.h: the reply acknowledges the name */
    if (vs != c->vs && vs->ssl_ctx) {
        if (!gw_tls_switch(ssl, vs->ssl_ctx, vs->conf)) {
            *alert = SSL_AD_INTERNAL_ERROR;
            return SSL_CLIENT_HELLO_ERROR;
        }
    }
    if (vs->ssl_ctx)
        c->vs = vs;
    return reject_or_go(c, alert);
}

/* ---- timers ---- */

static void on_timer(gw_timer_t *t)
{
    gw_conn_t *c = CONN_OF_TIMER(t);
    if (c->draining && c->async_paused) {
        gw_log(GW_LOG_ALERT, 0, "an async job of client %s has been paused for %d s: the "
               "connection is kept until the accelerator completes it", c->peer_text,
               DRAIN_WARN_MS / 1000);
        gw_timer_add(&gw_worker->loop, &c->timer, DRAIN_WARN_MS);
        return;
    }
    if (c->v.pp_pending) {
        gw_log(GW_LOG_INFO, 0, "client %s timed out sending the PROXY protocol header",
               c->peer_text);
        gw_pp_discard(c->fd); /* what came of the header: a FIN, not a reset */
        conn_close(c);
        return;
    }
    switch (c->state) {
    case GW_CONN_HANDSHAKE:
        gw_log(GW_LOG_INFO, 0, "client %s timed out in the TLS handshake", c->peer_text);
        GW_STAT_ADD(handshakes_failed, 1);
        conn_close(c);
        return;
    case GW_CONN_READ_HEAD:
        if (c->in_len == 0) { /* idle keep-alive: close quietly */
            conn_close(c);
            return;
        }
        gw_log(GW_LOG_INFO, 0, "client %s timed out sending the request head", c->peer_text);
        c->close_after = 1;
        c->keep_alive = 0;
        snprintf(c->rq->request_line, sizeof(c->rq->request_line), "-");
        snprintf(c->rq->log_referer, sizeof(c->rq->log_referer), "-");
        snprintf(c->rq->log_ua, sizeof(c->rq->log_ua), "-");
        gw_resp_error(c, 408);
        c->state = GW_CONN_WRITE;
        gw_timer_add(&gw_worker->loop, &c->timer, srv(c)->send_timeout_ms);
        conn_drive(c);
        return;
    case GW_CONN_READ_BODY:
        gw_log(GW_LOG_INFO, 0, "client %s timed out sending the request body", c->peer_text);
        conn_close(c);
        return;
    case GW_CONN_WRITE:
        gw_log(GW_LOG_INFO, 0, "client %s timed out reading the response", c->peer_text);
        conn_close(c);
        return;
    case GW_CONN_STREAM:
        gw_log(GW_LOG_INFO, 0, "stream connection of client %s %s", c->peer_text,
               gw_stream_timeout_text(c));
        conn_close(c);
        return;
    case GW_CONN_PROXY:
        gw_log(GW_LOG_INFO, 0, "client %s timed out %s", c->peer_text,
               c->out_len > c->out_off ? "reading the proxied response"
                                       : "sending the request body");
        conn_close(c);
        return;
    default:
        conn_close(c);
        return;
    }
}

/* ---- per-request memory, recycled (issue #21) ----
 * An idle keep-alive connection keeps only its gw_conn_t and OpenSSL's SSL (whose record
 * buffers SSL_MODE_RELEASE_BUFFERS frees): the output buffer and the request block go back
 * to these per-worker free lists when a response ends with nothing else buffered, and the
 * input buffer is freed (its size is the server's client_header_buffer_size). A worker
 * keeps at most FREE_MAX of each: enough for the connections busy within one loop pass
 * under load, so a steady keep-alive load allocates nothing, and a burst's surplus is
 * returned to malloc. One thread per worker: no locks. */
#define FREE_MAX 32

typedef union free_node {
    union free_node *next;
    char bytes[1];
} free_node_t;

static free_node_t *free_out, *free_rq, *free_file;
static unsigned n_free_out, n_free_rq, n_free_file;

static void *take_block(free_node_t **list, unsigned *n, size_t size)
{
    free_node_t *b = *list;
    if (b) {
        *list = b->next;
        (*n)--;
        return b;
    }
    void *p = malloc(size);
    if (!p)
        abort(); /* as at start-up: a worker cannot go on without it */
    return p;
}

static void give_block(free_node_t **list, unsigned *n, void *p)
{
    if (!p)
        return;
    if (*n >= FREE_MAX) {
        free(p);
        return;
    }
    free_node_t *b = p;
    b->next = *list;
    *list = b;
    (*n)++;
}

static gw_conn_rq_t *rq_take(void)
{
    gw_conn_rq_t *rq = take_block(&free_rq, &n_free_rq, sizeof(gw_conn_rq_t));
    rq->request_line[0] = rq->log_referer[0] = rq->log_ua[0] = '\0';
    memset(&rq->v, 0, sizeof(rq->v)); /* http/vars.h: also before a head is parsed */
    return rq;
}

/* Give back what only a request in progress needs: called when the connection is idle
 * (no buffered input, nothing left to write) or freed. */
static void give_out(char *out, size_t cap)
{
    if (cap == OUT_CAP)
        give_block(&free_out, &n_free_out, out);
    else if (cap == FILE_CAP)
        give_block(&free_file, &n_free_file, out);
    else
        free(out); /* grown for a large in-memory answer: not recycled */
}

static void conn_release_request_memory(gw_conn_t *c)
{
    if (c->rq)
        gw_vars_release(&c->rq->v);
    give_out(c->out, c->out_cap);
    c->out = NULL;
    c->out_cap = c->out_len = c->out_off = 0;
    give_block(&free_rq, &n_free_rq, c->rq);
    c->rq = NULL;
    free(c->in);
    c->in = NULL;
    c->in_cap = c->in_len = 0;
    c->head_len = 0;
}

/* Nothing buffered, nothing to write, the socket is drained: give back the request's
 * memory and OpenSSL's record buffers (nginx's ngx_http_set_keepalive frees its header
 * buffer and calls SSL_free_buffers the same way; with SSL_MODE_RELEASE_BUFFERS alone, the
 * read buffer that SSL_read set up for the read that found nothing stays). The next
 * event allocates them again. */
static void conn_idle(gw_conn_t *c)
{
    conn_release_request_memory(c);
    if (c->ssl && !c->async_paused)
        SSL_free_buffers(c->ssl); /* refuses (0) while a record is partly buffered: fine */
}

/* ---- response helpers ---- */

static void out_reserve(gw_conn_t *c, size_t more)
{
    if (!c->out) {
        c->out_cap = OUT_CAP;
        c->out = take_block(&free_out, &n_free_out, OUT_CAP);
    }
    if (c->out_len + more > c->out_cap) {
        size_t cap = c->out_cap;
        while (cap < c->out_len + more)
            cap *= 2;
        char *p = realloc(c->out, cap);
        if (!p)
            abort();
        c->out = p;
        c->out_cap = cap;
    }
}

static void out_append(gw_conn_t *c, const char *s, size_t n)
{
    out_reserve(c, n);
    memcpy(c->out + c->out_len, s, n);
    c->out_len += n;
}

void gw_resp_append(gw_conn_t *c, const char *s, size_t n)
{
    out_append(c, s, n);
}

static char *put_str(char *o, const char *s, size_t n)
{
    memcpy(o, s, n);
    return o + n;
}

#define PUT_LIT(o, lit) put_str((o), (lit), sizeof(lit) - 1)

static char *put_u64(char *o, uint64_t v)
{
    char tmp[20];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *o++ = tmp[--n];
    return o;
}

void gw_resp_head(gw_conn_t *c, int status, const char *content_type, uint64_t content_length,
                  const char *extra)
{
    char head[1024];
    c->status = status;
    if (status >= 100 && status < 600)
        GW_STAT_ADD(responses[status / 100], 1);
    /* close_after already forbids reuse; otherwise the request decided */
    int ka = c->keep_alive && !c->close_after && !gw_worker->shutting_down;
    c->keep_alive = ka;
    /* built by hand, not snprintf: this runs once per response (a keep-alive request's
     * head formatting was ~3% of its CPU) */
    const char *reason = gw_http_reason(status);
    const char *date = gw_http_date();
    size_t rl = strlen(reason), ctl = content_type ? strlen(content_type) : 0;
    if (ctl > 256)
        ctl = 256; /* types come from our table or the configuration: never this long */
    char *o = head;
    o = PUT_LIT(o, "HTTP/1.1 ");
    o = put_u64(o, (uint64_t)(status >= 100 && status < 1000 ? status : 500));
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
        o = put_u64(o, content_length);
        o = PUT_LIT(o, "\r\n");
    }
    o = ka ? PUT_LIT(o, "Connection: keep-alive\r\n") : PUT_LIT(o, "Connection: close\r\n");
    out_append(c, head, (size_t)(o - head));
    if (extra)
        out_append(c, extra, strlen(extra));
    if (c->rq)
        c->rq->v.head_bytes = (uint64_t)(o - head) + (extra ? strlen(extra) : 0) + 2;
    gw_headers_emit(c, status); /* add_header: http/headers.c */
    out_append(c, "\r\n", 2);
}

void gw_resp_simple(gw_conn_t *c, int status, const char *content_type, const char *body,
                    size_t body_len, const char *extra)
{
    /* RFC 9110 §15.3.5, §15.4.5: 204 and 304 end after the header section */
    if (status == 204 || status == 304)
        body_len = 0;
    gw_resp_head(c, status, content_type, body_len, extra);
    if (!c->is_head && body_len) {
        out_append(c, body, body_len);
        c->bytes_sent = body_len;
    }
}

void gw_resp_page(gw_conn_t *c, int status, const char *extra)
{
    char body[512];
    const char *reason = gw_http_reason(status);
    int n = snprintf(body, sizeof(body),
                     "<html>\r\n<head><title>%d %s</title></head>\r\n<body>\r\n"
                     "<center><h1>%d %s</h1></center>\r\n<hr><center>tlsgate</center>\r\n"
                     "</body>\r\n</html>\r\n",
                     status, reason, status, reason);
    gw_resp_simple(c, status, "text/html", body, (size_t)n, extra);
}

void gw_resp_error(gw_conn_t *c, int status)
{
    if (status >= 400 && status != 404 && status != 403 && status != 405 && status != 416 &&
        status != 421)
        c->close_after = 1; /* framing or limits failed: the connection cannot go on */
    if (c->rq && gw_error_page(c, status)) /* error_page: http/headers.c */
        return;
    gw_resp_page(c, status, status == 405 ? "Allow: GET, HEAD\r\n" : NULL);
}

/* ---- access log (nginx "combined") ---- */

static size_t log_escape(char *out, size_t cap, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (size_t i = 0; i < n && o + 4 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '\\') {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[ch >> 4];
            out[o++] = hex[ch & 15];
        } else {
            out[o++] = (char)ch;
        }
    }
    return o;
}

static void copy_log_field(char *dst, size_t cap, const char *v, size_t len)
{
    if (!v || !len) {
        snprintf(dst, cap, "-");
        return;
    }
    size_t o = log_escape(dst, cap - 1, v, len);
    dst[o] = '\0';
}

static void access_log(gw_conn_t *c)
{
    if (c->vs->access_log_fd < 0 || !c->rq)
        return;
    if (gw_logfmt_write(c, c->vs->access_log_fd)) /* log_format: http/logfmt.c */
        return;
    char line[2048];
    int n = snprintf(line, sizeof(line), "%s - - [%s] \"%s\" %d %llu \"%s\" \"%s\"\n",
                     c->peer_text, gw_log_date(), c->rq->request_line, c->status,
                     (unsigned long long)c->bytes_sent, c->rq->log_referer, c->rq->log_ua);
    if (n > (int)sizeof(line))
        n = (int)sizeof(line);
    ssize_t w = write(c->vs->access_log_fd, line, (size_t)n);
    (void)w;
}

/* ---- the state machine ---- */

static void grow_in(gw_conn_t *c, size_t want)
{
    if (want > c->in_max)
        want = c->in_max;
    if (want <= c->in_cap)
        return;
    char *p = realloc(c->in, want);
    if (!p)
        abort();
    c->in = p;
    c->in_cap = want;
}

static void start_request_failure(gw_conn_t *c, int status)
{
    /* the head is not trustworthy: log what the request line looked like, then answer */
    const char *eol = memchr(c->in, '\n', c->in_len);
    size_t l = eol ? (size_t)(eol - c->in) : c->in_len;
    if (l && c->in[l - 1] == '\r')
        l--;
    size_t o = log_escape(c->rq->request_line, sizeof(c->rq->request_line) - 1, c->in, l > 200 ? 200 : l);
    c->rq->request_line[o] = '\0';
    c->keep_alive = 0;
    c->close_after = 1;
    c->is_head = 0;
    snprintf(c->rq->log_referer, sizeof(c->rq->log_referer), "-");
    snprintf(c->rq->log_ua, sizeof(c->rq->log_ua), "-");
    GW_STAT_ADD(requests, 1);
    gw_log(GW_LOG_INFO, 0, "client %s sent an invalid request, answering %d", c->peer_text,
           status);
    gw_resp_error(c, status);
    c->state = GW_CONN_WRITE;
    set_stat(c, ST_WRITING);
    gw_timer_add(&gw_worker->loop, &c->timer, srv(c)->send_timeout_ms);
}

/* Does any server of this address write an access log? (Usually one server.) */
static int laddr_logs(const gw_laddr_t *la)
{
    for (size_t i = 0; i < la->n_servers; i++)
        if (la->servers[i]->access_log_fd >= 0)
            return 1;
    return 0;
}

static void route_request(gw_conn_t *c)
{
    gw_http_request_t *r = &c->rq->req;
    GW_STAT_ADD(requests, 1);
    c->requests++;
    c->is_head = r->method == GW_HTTP_HEAD;
    c->bytes_sent = 0;
    c->status = 0;
    c->resp_start = c->out_len; /* answers of earlier pipelined requests stay before it */
    gw_vars_request(c); /* real client address, underscores, head copy: http/vars.h */
    if (laddr_logs(c->laddr)) { /* the log's copies, only when a server here logs */
        int n = snprintf(c->rq->request_line, sizeof(c->rq->request_line), "%.*s ",
                         (int)r->method_len, r->method_str);
        size_t o = (size_t)n;
        o += log_escape(c->rq->request_line + o, sizeof(c->rq->request_line) - o - 16, r->target,
                        r->target_len);
        snprintf(c->rq->request_line + o, sizeof(c->rq->request_line) - o, " HTTP/1.%d",
                 r->version_minor);
        copy_log_field(c->rq->log_referer, sizeof(c->rq->log_referer), r->referer, r->referer_len);
        copy_log_field(c->rq->log_ua, sizeof(c->rq->log_ua), r->user_agent, r->user_agent_len);
    }

    /* keepalive_timeout 0 disables keep-alive, as in nginx */
    c->keep_alive = r->keep_alive && c->requests < (unsigned)srv(c)->keepalive_requests &&
                    srv(c)->keepalive_timeout_ms > 0;
    set_stat(c, ST_WRITING);
    gw_timer_add(&gw_worker->loop, &c->timer, srv(c)->send_timeout_ms);

    /* Which server block: the Host header among this address's servers. When the client's
     * SNI selected a block, that block's certificates and TLS policy were used: a Host
     * naming another block gets 421 (RFC 9110 §15.5.20), so one block's TLS policy cannot
     * be used to reach another. (nginx only does this with ssl_verify_client; we always
     * do.) Without SNI, or with an SNI no block matches, Host alone decides, as in nginx. */
    if (r->host) {
        char host[256];
        long hl = normalize_host(r->host, r->host_len, host, sizeof(host), 1);
        if (hl < 0) {
            gw_resp_error(c, 400);
            return;
        }
        gw_vserver_t *vs = find_server(c->laddr, host, (size_t)hl);
        if (!vs)
            vs = c->sni_matched ? c->vs : c->laddr->default_server;
        if (c->sni_matched && vs != c->vs) {
            gw_resp_error(c, 421);
            return;
        }
        c->vs = vs;
    }

    /* Request bodies: we serve no handler that reads one, so it is read and discarded
     * to keep the connection usable, within client_max_body_size (RFC 9112 §6.3). */
    int64_t max = srv(c)->client_max_body_size;
    if (r->has_content_length && max > 0 && r->content_length > (uint64_t)max) {
        gw_resp_error(c, 413);
        return;
    }
    if ((r->chunked || (r->has_content_length && r->content_length > 0)) && r->expect_continue) {
        /* RFC 9110 §10.1.1: a server that answers with a final status without reading the
         * body must close the connection afterwards. */
        c->close_after = 1;
    }
    gw_http_handle(c);
}

/* After a response: either the next request on this connection or close. */
static void finish_request(gw_conn_t *c)
{
    access_log(c);
    if (c->file_fd >= 0) {
        close(c->file_fd);
        c->file_fd = -1;
    }
    if (c->out_off == c->out_len) /* else: deferred behind a pipelined request's answer */
        c->out_len = c->out_off = 0;
    int reuse = c->keep_alive && !c->close_after && !gw_worker->shutting_down && !c->read_eof;
    if (!reuse) {
        c->state = GW_CONN_LINGER;
        return;
    }
    /* keep the bytes of a pipelined next request */
    if (c->head_len < c->in_len)
        memmove(c->in, c->in + c->head_len, c->in_len - c->head_len);
    c->in_len -= c->head_len;
    c->head_len = 0;
    c->nl_seen = c->in_len && memchr(c->in, '\n', c->in_len) != NULL;
    c->head_dirty = c->in_len > 0;
    c->state = GW_CONN_READ_HEAD;
    if (c->in_len == 0) {
        set_stat(c, ST_WAITING);
        gw_timer_add(&gw_worker->loop, &c->timer, srv(c)->keepalive_timeout_ms);
    } else {
        set_stat(c, ST_READING);
        gw_timer_add(&gw_worker->loop, &c->timer, srv(c)->client_header_timeout_ms);
    }
}

static void start_close(gw_conn_t *c)
{
    /* send close_notify (RFC 8446 §6.1) once, without waiting for the peer's */
    if (c->ssl && SSL_is_init_finished(c->ssl) && !c->read_eof) {
        ERR_clear_error();
        int r = SSL_shutdown(c->ssl);
        if (r < 0 && SSL_get_error(c->ssl, r) == SSL_ERROR_WANT_ASYNC) {
            /* an accelerator paused the shutdown: close once it is done (tengine#1793) */
            ERR_clear_error();
            park(c, IO_ASYNC, OP_SHUTDOWN);
            c->draining = 1;
            return;
        }
        ERR_clear_error();
    }
    int unread = c->in_len > c->head_len || (c->ssl && SSL_has_pending(c->ssl)) ||
                 c->body_left || c->body_chunked || c->status >= 400;
    if (!unread || c->read_eof) {
        conn_close(c);
        return;
    }
    /* Lingering close (nginx): closing with unread input makes the kernel send RST,
     * which can destroy the response still in flight; drain until EOF first. */
    shutdown(c->fd, SHUT_WR);
    c->state = GW_CONN_LINGER;
    c->in_len = c->head_len = 0;
    gw_timer_add(&gw_worker->loop, &c->timer, LINGER_MS);
    conn_drive(c);
}

/* A failed handshake: OpenSSL has written its fatal alert (or the plain-HTTP 400 went
 * out). Closing now with client bytes unread (the rest of a flight, early data) makes the
 * kernel answer with RST, which can overtake the alert, so the client never learns why;
 * as nginx's lingering close: FIN after the alert, then drain until EOF or LINGER_MS. */
static void linger_after_alert(gw_conn_t *c)
{
    /* the alert is on the wire: the SSL (its keys in the secure heap, its buffers) is not
     * needed for draining, and must not stay for LINGER_MS under a handshake flood */
    c->wbuf = NULL; /* SSL_free frees the BIO chain */
    SSL_free(c->ssl);
    c->ssl = NULL;
    shutdown(c->fd, SHUT_WR);
    c->state = GW_CONN_LINGER;
    c->in_len = c->head_len = 0;
    gw_timer_add(&gw_worker->loop, &c->timer, LINGER_MS);
    conn_drive(c);
}

/* Discard request body bytes already buffered or arriving. Returns 1 when the body is
 * complete, 0 to wait, -status on a framing error. */
static int consume_body(gw_conn_t *c)
{
    for (;;) {
        size_t avail = c->in_len - c->head_len;
        if (avail) {
            if (c->body_chunked) {
                size_t len = avail, used = 0;
                int r = gw_http_chunked_decode(&c->chunked, c->in + c->head_len, &len, &used,
                                               (uint64_t)(srv(c)->client_max_body_size > 0
                                                              ? srv(c)->client_max_body_size
                                                              : 0));
                /* drop decoded data and the consumed framing, keep what follows */
                memmove(c->in + c->head_len, c->in + c->head_len + used, avail - used);
                c->in_len -= used;
                if (r < 0)
                    return r;
                if (r == 1) {
                    c->body_chunked = 0;
                    return 1;
                }
            } else {
                size_t take = avail < c->body_left ? avail : (size_t)c->body_left;
                memmove(c->in + c->head_len, c->in + c->head_len + take, avail - take);
                c->in_len -= take;
                c->body_left -= take;
                if (c->body_left == 0)
                    return 1;
            }
        }
        if (c->in_len == c->in_cap)
            grow_in(c, c->in_cap * 2);
        if (c->in_len == c->in_cap)
            return -413; /* cannot happen: everything buffered was consumed above */
        size_t got = 0;
        int r = io_read(c, c->in + c->in_len, c->in_cap - c->in_len, &got);
        if (r == IO_AGAIN || park(c, r, OP_READ))
            return 0;
        if (r != IO_OK)
            return -1;
        c->in_len += got;
    }
}

static void head_limits(const gw_conn_t *c, gw_http_limits_t *lim)
{
    const gw_srv_settings_t *s = srv(c);
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
    if (!c->keep_alive || c->close_after || c->file_left || c->out_off || c->read_eof ||
        gw_worker->shutting_down || c->in_len <= c->head_len || c->out_len > 8192 ||
        c->requests >= (unsigned)srv(c)->keepalive_requests)
        return 0;
    gw_http_limits_t lim;
    head_limits(c, &lim);
    static gw_http_request_t probe; /* one thread per worker: no stack for 3 KiB */
    return gw_http_parse_request(c->in + c->head_len, c->in_len - c->head_len, &lim, &probe) > 0;
}

/* Read the next file bytes into the output buffer, which holds out_len bytes from a record
 * boundary (its start): as many as fit, cut so that the buffer ends on a record boundary
 * (ssl_buffer_size), so that every SSL_write makes full records. With the former 16 KiB +
 * 1 KiB buffer each read made one 16 KiB record and one of 1 KiB: twice the records,
 * sends and per-record work of nginx's 16 KiB records (issue #21). */
static int fill_from_file(gw_conn_t *c)
{
    if (c->out_cap < FILE_CAP && c->out_len <= FILE_CAP) {
        /* a file body: the larger buffer (several records per read) */
        char *b = take_block(&free_file, &n_free_file, FILE_CAP);
        memcpy(b, c->out, c->out_len);
        give_out(c->out, c->out_cap);
        c->out = b;
        c->out_cap = FILE_CAP;
    }
    if (c->ssl && c->file_left > (uint64_t)FILE_CAP && !c->async_paused)
        wbuf_push(c); /* a large body: several records per send */
    size_t room = c->out_cap - c->out_len;
    size_t want = c->file_left < room ? (size_t)c->file_left : room;
    size_t rec = c->ssl ? (size_t)srv(c)->ssl_buffer_size : 0;
    if (rec && want < c->file_left && c->out_len + want > rec) {
        size_t end = c->out_len + want;
        end -= end % rec;
        if (end > c->out_len)
            want = end - c->out_len;
    }
    ssize_t n = pread(c->file_fd, c->out + c->out_len, want, (off_t)c->file_off);
    if (n <= 0) {
        gw_log(GW_LOG_ERROR, n < 0 ? errno : 0, "pread() of a file for client %s %s",
               c->peer_text, n == 0 ? "hit an unexpected end (file truncated?)" : "failed");
        return -1;
    }
    c->out_len += (size_t)n;
    c->file_off += (uint64_t)n;
    c->file_left -= (uint64_t)n;
    c->bytes_sent += (uint64_t)n;
    return 0;
}

static void conn_drive(gw_conn_t *c)
{
    if (c->v.pp_pending) { /* listen ... proxy_protocol: http/access.c */
        int r = gw_access_proxy_protocol(c);
        if (r == 0)
            return;
        if (r < 0) {
            conn_close(c);
            return;
        }
    }
    for (;;) {
        switch (c->state) {
        case GW_CONN_HANDSHAKE: {
            ERR_clear_error();
            errno = 0;
            int r = SSL_do_handshake(c->ssl);
            if (r == 1) {
                GW_STAT_ADD(handshakes, 1);
                int resumed = SSL_session_reused(c->ssl);
                if (resumed)
                    GW_STAT_ADD(handshakes_resumed, 1);
                if (SSL_version(c->ssl) == TLS1_3_VERSION)
                    GW_STAT_ADD(tls13, 1);
                else
                    GW_STAT_ADD(tls12, 1);
                int proto, key;
                gw_tls_handshake_kind(c->ssl, &proto, &key);
                int64_t us = gw_now_us() - c->accept_us; /* the loop pass's cached time */
                gw_stats_handshake(proto, key, resumed, us > 0 ? (uint64_t)us : 0);
                c->state = GW_CONN_READ_HEAD;
                if (c->timer.idx && c->timer.when < c->header_deadline_ms) {
                    /* the ssl_handshake_timeout ran: the head's deadline is still the
                     * one counted from the accept, whatever the handshake took */
                    int64_t left = c->header_deadline_ms - gw_now_ms();
                    gw_timer_add(&gw_worker->loop, &c->timer, left > 0 ? left : 0);
                }
                if (c->laddr->stream)
                    gw_stream_start(c); /* sets GW_CONN_STREAM and its own timeouts */
                continue;
            }
            unsigned long first_err = ERR_peek_error();
            if (first_err && SSL_get_error(c->ssl, r) == SSL_ERROR_SSL)
                gw_secheap_failed(c->peer_text); /* a full secure heap gets a clear line */
            int rr = ssl_result(c, r, "SSL_do_handshake");
            if (rr == IO_AGAIN || park(c, rr, OP_HANDSHAKE))
                return;
            GW_STAT_ADD(handshakes_failed, 1);
            if (ERR_GET_LIB(first_err) == ERR_LIB_SSL &&
                ERR_GET_REASON(first_err) == SSL_R_HTTP_REQUEST) {
                /* nginx's courtesy: a plain HTTP request on a TLS port gets a plain 400 */
                static const char plain400[] =
                    "HTTP/1.1 400 Bad Request\r\nServer: tlsgate\r\nContent-Type: text/plain"
                    "\r\nContent-Length: 48\r\nConnection: close\r\n\r\n"
                    "The plain HTTP request was sent to HTTPS port.\r\n";
                ssize_t w = send(c->fd, plain400, sizeof(plain400) - 1, MSG_NOSIGNAL);
                (void)w;
            }
            if (rr == IO_ERROR && !c->read_eof) {
                linger_after_alert(c);
                return;
            }
            conn_close(c);
            return;
        }
        case GW_CONN_READ_HEAD: {
            /* The parser restarts at the head's first byte, so it runs only when a line
             * may have ended (or a limit may be passed): a head trickled one byte per TLS
             * record costs O(lines x length), not O(length^2). */
            if (c->in_len && c->head_dirty) {
                c->head_dirty = 0;
                gw_http_limits_t lim;
                head_limits(c, &lim);
                int r = gw_http_parse_request(c->in, c->in_len, &lim, &c->rq->req);
                if (r > 0) {
                    c->head_len = (size_t)r;
                    c->body_left = c->rq->req.has_content_length ? c->rq->req.content_length : 0;
                    c->body_chunked = c->rq->req.chunked;
                    if (c->body_chunked)
                        gw_http_chunked_init(&c->chunked);
                    route_request(c);
                    if (c->state != GW_CONN_PROXY) /* else the proxy reads the body */
                        c->state = (c->body_left || c->body_chunked) && !c->close_after
                                       ? GW_CONN_READ_BODY
                                       : GW_CONN_WRITE;
                    continue;
                }
                if (r < 0) {
                    start_request_failure(c, -r);
                    continue;
                }
            }
            if (c->in && c->in_len == c->in_cap) {
                if (c->in_cap >= c->in_max) {
                    start_request_failure(c, 431);
                    continue;
                }
                grow_in(c, c->in_cap * 2);
            }
            if (!c->in) {
                c->in_cap = (size_t)srv(c)->client_header_buffer_size;
                c->in = malloc(c->in_cap);
                if (!c->in)
                    abort();
            }
            if (!c->rq)
                c->rq = rq_take();
            size_t got = 0;
            int r;
            if (!c->rd_ready && !(c->ssl && SSL_has_pending(c->ssl)))
                r = IO_AGAIN; /* no input event since the last EAGAIN (an EPOLLOUT edge after
                               * our answer, say): no read that would find nothing (nginx's
                               * rev->ready) */
            else
                r = io_read(c, c->in + c->in_len, c->in_cap - c->in_len, &got);
            if (r == IO_AGAIN && c->in_len == 0 && c->out_len == 0) {
                conn_idle(c);
                return;
            }
            if (r == IO_AGAIN || park(c, r, OP_READ))
                return;
            if (r != IO_OK) {
                if (c->in_len)
                    gw_log(GW_LOG_INFO, 0, "client %s closed the connection in a request head",
                           c->peer_text);
                conn_close(c);
                return;
            }
            if (c->in_len == 0) { /* first byte of a new request: the header timeout runs */
                set_stat(c, ST_READING);
                if (c->requests)
                    gw_timer_add(&gw_worker->loop, &c->timer, srv(c)->client_header_timeout_ms);
            }
            if (memchr(c->in + c->in_len, '\n', got))
                c->nl_seen = c->head_dirty = 1;
            c->in_len += got;
            if (c->in_len == c->in_cap ||
                (!c->nl_seen && c->in_len > (size_t)srv(c)->large_header_buffers_size))
                c->head_dirty = 1; /* a limit may be passed: let the parser say which */
            continue;
        }
        case GW_CONN_READ_BODY: {
            if (c->head_len) {
                /* the head has been handled and logged fields copied: give its room to
                 * the body, so a head that filled the buffer cannot starve the body */
                memmove(c->in, c->in + c->head_len, c->in_len - c->head_len);
                c->in_len -= c->head_len;
                c->head_len = 0;
            }
            int r = consume_body(c);
            if (r == 0)
                return;
            if (r == -1) {
                conn_close(c);
                return;
            }
            if (r < 0) {
                /* the response chosen already is replaced by the framing error */
                if (c->file_fd >= 0) {
                    close(c->file_fd);
                    c->file_fd = -1;
                }
                c->file_left = 0;
                c->out_len = c->resp_start; /* keep the answers before this request's */
                c->bytes_sent = 0;
                c->keep_alive = 0;
                gw_resp_error(c, -r);
            }
            /* body fully consumed: the bytes after it belong to the next request */
            c->body_left = 0;
            c->state = GW_CONN_WRITE;
            continue;
        }
        case GW_CONN_WRITE: {
            if (pipelined_next_ready(c)) {
                finish_request(c); /* keeps this answer in the buffer, parses the next */
                continue;
            }
            int kernel = c->file_left && use_kernel_send(c);
            if (kernel) {
                /* the head first, from the buffer; then the body by the kernel below */
            } else if (c->out_off == c->out_len && c->file_left) {
                c->out_off = c->out_len = 0;
                if (fill_from_file(c) != 0) {
                    conn_close(c);
                    return;
                }
            } else if (c->out_off == 0 && c->file_left && c->out_len < FILE_CAP) {
                /* head and the first file bytes in one write (one TLS record) */
                if (fill_from_file(c) != 0) {
                    conn_close(c);
                    return;
                }
            }
            while (c->out_off < c->out_len) {
                size_t put = 0;
                int r = io_write(c, c->out + c->out_off, c->out_len - c->out_off, &put);
                if (r == IO_AGAIN || park(c, r, OP_WRITE))
                    return;
                if (r != IO_OK) {
                    conn_close(c);
                    return;
                }
                c->out_off += put;
                /* send_timeout bounds the time between two successful writes (nginx) */
                gw_timer_add(&gw_worker->loop, &c->timer, srv(c)->send_timeout_ms);
            }
            if (c->file_left && kernel) {
                int r = io_sendfile(c);
                if (r == IO_AGAIN || park(c, r, OP_WRITE))
                    return;
                if (r != IO_OK) {
                    conn_close(c);
                    return;
                }
                gw_timer_add(&gw_worker->loop, &c->timer, srv(c)->send_timeout_ms);
            }
            if (c->file_left)
                continue;
            if (c->wbuf) {
                int r = wbuf_flush(c);
                if (r == IO_AGAIN)
                    return;
                if (r != IO_OK) {
                    conn_close(c);
                    return;
                }
            }
            finish_request(c);
            if (c->state == GW_CONN_LINGER) {
                c->state = GW_CONN_WRITE; /* start_close decides how to end */
                start_close(c);
                return;
            }
            continue;
        }
        case GW_CONN_PROXY: {
            int r = gw_proxy_drive(c); /* 1: answered, the state is GW_CONN_WRITE now */
            if (r == 0)
                return;
            if (r < 0) {
                conn_close(c);
                return;
            }
            continue;
        }
        case GW_CONN_STREAM:
            if (gw_stream_drive(c) < 0)
                conn_close(c);
            return;
        case GW_CONN_LINGER: {
            char buf[4096];
            for (;;) {
                ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
                if (n > 0)
                    continue;
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                    return;
                conn_close(c);
                return;
            }
        }
        }
    }
}

int gw_conn_recv(gw_conn_t *c, char *buf, size_t len, size_t *got)
{
    int r = io_read(c, buf, len, got);
    if (r == IO_OK)
        return GW_CONN_IO_OK;
    if (r == IO_AGAIN || park(c, r, OP_READ))
        return GW_CONN_IO_AGAIN;
    return r == IO_EOF ? GW_CONN_IO_EOF : GW_CONN_IO_ERROR;
}

int gw_conn_flush(gw_conn_t *c)
{
    while (c->out_off < c->out_len) {
        size_t put = 0;
        int r = io_write(c, c->out + c->out_off, c->out_len - c->out_off, &put);
        if (r == IO_AGAIN || park(c, r, OP_WRITE))
            return 0;
        if (r != IO_OK)
            return -1;
        c->out_off += put;
        gw_timer_add(&gw_worker->loop, &c->timer, srv(c)->send_timeout_ms);
    }
    c->out_off = c->out_len = 0;
    return 1;
}

int gw_conn_close_notify(gw_conn_t *c)
{
    if (!c->ssl)
        return shutdown(c->fd, SHUT_WR) == 0 || errno == ENOTCONN ? 1 : -1;
    ERR_clear_error();
    int r = SSL_shutdown(c->ssl);
    if (r >= 0) {
        ERR_clear_error();
        return 1;
    }
    int e = SSL_get_error(c->ssl, r);
    ERR_clear_error();
    if (e == SSL_ERROR_WANT_ASYNC || e == SSL_ERROR_WANT_ASYNC_JOB) {
        park(c, e == SSL_ERROR_WANT_ASYNC ? IO_ASYNC : IO_ASYNC_JOB, OP_SHUTDOWN);
        return 0;
    }
    if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ)
        return 0;
    return -1;
}

void gw_conn_resume(gw_conn_t *c)
{
    if (c->async_paused || c->async_retry)
        return; /* the job's wake drives it */
    conn_drive(c);
}

static void on_event(gw_io_t *io, uint32_t events)
{
    gw_conn_t *c = (gw_conn_t *)io;
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
        c->rd_ready = 1; /* also while paused: the drive after the wake reads it */
    if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
        c->pending_eof = 1; /* data and FIN in one edge: the short read leaves the EOF */
    /* "While a job is paused, no other SSL function is called on that connection": socket
     * events wait for the job's wake (edge-triggered: the drive after it reads them). */
    if (c->async_paused || c->async_retry) {
        /* A client that is gone is drained now rather than when its job ends: the job
         * still finishes before anything is freed (conn_close defers while paused). */
        if ((events & (EPOLLHUP | EPOLLERR)) ||
            ((events & EPOLLRDHUP) && c->state == GW_CONN_HANDSHAKE))
            conn_close(c);
        return;
    }
    conn_drive(c);
}

/* RFC 5246 §7.2.1 (TLS 1.2: "the other party MUST respond with a close_notify alert of its
 * own") and RFC 8446 §6.1 (TLS 1.3: each party sends close_notify before closing its write
 * side): a client's close_notify (SSL_RECEIVED_SHUTDOWN, set by OpenSSL when SSL_read met
 * it) is answered by ours before the FIN. One non-blocking SSL_shutdown, never a loop: a
 * full socket buffer (WANT_WRITE) or a pool without a free async job (WANT_ASYNC_JOB)
 * drops the alert, the connection closes as before. Returns 1 when an accelerator paused
 * the shutdown (the connection drains and is freed when the job ends), else 0. */
static int answer_close_notify(gw_conn_t *c)
{
    if (!c->ssl || c->draining || c->async_retry || !SSL_is_init_finished(c->ssl) ||
        (SSL_get_shutdown(c->ssl) & (SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN)) !=
            SSL_RECEIVED_SHUTDOWN)
        return 0;
    ERR_clear_error();
    errno = 0;
    int r = SSL_shutdown(c->ssl);
    int e = r < 0 ? SSL_get_error(c->ssl, r) : SSL_ERROR_NONE;
    ERR_clear_error();
    if (e == SSL_ERROR_WANT_ASYNC) {
        park(c, IO_ASYNC, OP_SHUTDOWN);
        c->draining = 1;
        gw_timer_add(&gw_worker->loop, &c->timer, DRAIN_WARN_MS);
        return 1;
    }
    return 0;
}

static void conn_close(gw_conn_t *c)
{
    if (!c->async_paused && answer_close_notify(c))
        return;
    if (c->async_paused) {
        /* Never free an SSL whose job is paused (haproxy#3453): drain it. The job's wake
         * resumes it until it finishes, then the connection is freed. */
        if (!c->draining) {
            c->draining = 1;
            GW_WSTAT_ADD(drained, 1);
        }
        gw_timer_add(&gw_worker->loop, &c->timer, DRAIN_WARN_MS);
        return;
    }
    conn_free(c);
}

static void async_forget(gw_conn_t *c);

static void conn_free(gw_conn_t *c)
{
    gw_worker_t *w = gw_worker;
    gw_timer_del(&w->loop, &c->timer);
    if (c->proxy)
        gw_proxy_conn_free(c);
    if (c->stream)
        gw_stream_conn_free(c);
    /* Always: a provider thread (the timer) can complete a request and call the wake
     * callback after the job queued it but before the job paused; the job then goes on
     * without pausing, so a connection that never parked can still be in wake_q. */
    async_forget(c);
    set_stat(c, ST_NONE);
    if (c->file_fd >= 0)
        close(c->file_fd);
    if (c->ssl) {
        /* A session stays resumable however its connection ends (nginx's
         * ngx_ssl_shutdown marks both directions shut as well): SSL_free otherwise takes
         * a connection that sent no close_notify for a failed one and removes its session
         * from the cache (ssl_clear_bad_session), so keep-alive clients, which close
         * without close_notify or are closed at keepalive_timeout, never resumed. A fatal
         * alert already made its session non-resumable inside OpenSSL. */
        if (SSL_is_init_finished(c->ssl))
            SSL_set_shutdown(c->ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
        c->wbuf = NULL; /* SSL_free frees the BIO chain */
        SSL_free(c->ssl);
    }
    c->ssl = NULL;
    close(c->fd);
    gw_limit_conn_release(c->ipc);
    c->ipc = NULL;
    if (c->prev)
        c->prev->next = c->next;
    else
        w->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    conn_release_request_memory(c);
    free(c);
    GW_WSTAT_ADD(conns, -1);
    int was_full = w->n_conns >= w->max_conns;
    w->n_conns--;
    if (was_full && !w->shutting_down)
        gw_worker_accepting(1);
}

void gw_conn_accepted(gw_laddr_t *laddr, int fd, const struct sockaddr *peer, socklen_t plen)
{
    gw_worker_t *w = gw_worker;
    gw_ipcount_t *ipc = NULL;
    int lim = laddr->default_server->conf->srv.limit_conn_per_ip;
    if (gw_limit_conn_take(peer, plen, lim, &ipc) == 0) {
        char text[64];
        gw_addr_text(peer, text, sizeof(text));
        gw_log(GW_LOG_WARN, 0, "limiting connections of client %s to %d (limit_conn_per_ip)",
               text, lim);
        close(fd); /* not "handled" (nginx: handled < accepted when a limit refuses) */
        return;
    }
    gw_conn_t *c = calloc(1, sizeof(*c));
    if (!c) {
        gw_log(GW_LOG_ALERT, ENOMEM, "cannot allocate a connection");
        gw_limit_conn_release(ipc);
        close(fd);
        return;
    }
    c->ipc = ipc;
    c->io.handler = on_event;
    c->fd = fd;
    c->file_fd = -1;
    c->laddr = laddr;
    c->rd_ready = 1;
    c->vs = laddr->default_server;
    c->timer.cb = on_timer;
    c->accept_us = gw_now_us();
    gw_addr_text(peer, c->peer_text, sizeof(c->peer_text));
    gw_vars_accepted(c, peer, plen); /* http/vars.h */
    c->v.pp_pending = laddr->listen && laddr->listen->proxy_protocol;
    const gw_srv_settings_t *s = srv(c);
    c->in_max = (size_t)s->large_header_buffers_num * (size_t)s->large_header_buffers_size;
    if (c->in_max < (size_t)s->client_header_buffer_size)
        c->in_max = (size_t)s->client_header_buffer_size;

    /* TCP_NODELAY comes from the listener (gw_listen_open) */
    c->next = w->conns;
    if (w->conns)
        w->conns->prev = c;
    w->conns = c;
    w->n_conns++;
    GW_WSTAT_ADD(conns, 1);
    GW_STAT_ADD(handled, 1);
    set_stat(c, ST_READING);

    if (laddr->ssl) {
        c->ssl = SSL_new(c->vs->ssl_ctx);
        if (!c->ssl || !SSL_set_fd(c->ssl, fd)) {
            gw_log_ssl_errors(GW_LOG_ALERT, "SSL_new");
            conn_close(c);
            return;
        }
        SSL_set_app_data(c->ssl, c);
        BIO *rb = SSL_get_rbio(c->ssl);
        BIO_set_callback_arg(rb, (char *)c);
        BIO_set_callback_ex(rb, rd_callback);
        SSL_set_accept_state(c->ssl);
        if (SSL_get_mode(c->ssl) & SSL_MODE_ASYNC) {
            c->async_fd_mode = c->vs->conf->srv.ssl_async_notify == GW_ASYNC_NOTIFY_FD;
            if (!c->async_fd_mode)
                SSL_set_async_callback_arg(c->ssl, c);
        }
        c->state = GW_CONN_HANDSHAKE;
    } else {
        c->state = GW_CONN_READ_HEAD;
        if (laddr->stream && !c->v.pp_pending) /* else after the PROXY header */
            gw_stream_start(c);
    }
    if (gw_loop_add(&w->loop, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, &c->io) != 0) {
        gw_log(GW_LOG_ALERT, errno, "epoll_ctl(ADD) failed");
        conn_close(c);
        return;
    }
    /* Absolute deadlines from the accept, whatever the client trickles: the handshake
     * (ssl_handshake_timeout) and the handshake plus the first head (client_header_timeout,
     * as nginx); reads never re-arm them. */
    c->header_deadline_ms = gw_now_ms() + s->client_header_timeout_ms;
    int64_t first = s->client_header_timeout_ms;
    if (laddr->ssl && s->ssl_handshake_timeout_ms < first)
        first = s->ssl_handshake_timeout_ms;
    gw_timer_add(&w->loop, &c->timer, first);
    if (w->n_conns >= w->max_conns)
        gw_worker_accepting(0);
    /* Not driven here: epoll reports the ClientHello (edge-triggered registration of a
     * socket that already has data reports it at the next wait), so accepting never
     * runs ahead of the connections that are already waiting for us. */
}

void gw_conn_shutdown_all(int graceful)
{
    gw_worker_t *w = gw_worker;
    gw_conn_t *c = w->conns;
    while (c) {
        gw_conn_t *next = c->next;
        if (!graceful) {
            conn_close(c);
        } else if (c->state == GW_CONN_READ_HEAD && c->in_len == 0) {
            /* Idle keep-alive: a request may be on its way. Give the client a moment, so
             * that the request is answered (with "Connection: close") instead of cut. */
            int64_t left = c->timer.idx ? c->timer.when - gw_now_ms() : SHUTDOWN_IDLE_MS;
            if (left > SHUTDOWN_IDLE_MS)
                gw_timer_add(&w->loop, &c->timer, SHUTDOWN_IDLE_MS);
        }
        c = next;
    }
}

/* ---- async TLS: wake queue, wait fds, job retries ---- */

static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER;
static gw_conn_t **wake_q;          /* connections whose job may resume (under wake_lock) */
static size_t wake_n, wake_cap;
static int wake_hint;               /* wake_n != 0, read without the lock */
static gw_conn_t **work_q;          /* being processed (worker thread only) */
static size_t work_n, work_cap, work_i;
static int wake_fd = -1;
static pthread_t wake_owner;        /* the worker thread: its own wakes need no eventfd */
static gw_io_t wake_io;
static gw_conn_t *retry_head;       /* WANT_ASYNC_JOB: waiting for a free job, FIFO */
static gw_conn_t *retry_tail;
static gw_timer_t retry_timer;
static int n_paused;

int gw_conn_async_paused(void)
{
    return n_paused;
}

int gw_conn_async_callback(SSL *ssl, void *arg)
{
    gw_conn_t *c = arg;
    pthread_mutex_lock(&wake_lock);
    if (wake_n == wake_cap) {
        size_t cap = wake_cap ? wake_cap * 2 : 64;
        gw_conn_t **q = realloc(wake_q, cap * sizeof(*q));
        if (!q) {
            pthread_mutex_unlock(&wake_lock);
            return 0; /* the provider falls back to its wait fd, if any */
        }
        wake_q = q;
        wake_cap = cap;
    }
    wake_q[wake_n++] = c;
    int first = wake_n == 1;
    __atomic_store_n(&wake_hint, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&wake_lock);
    /* From another thread (a provider's timer, an accelerator's poller) the loop may be
     * blocked in epoll_wait: wake it. From the worker thread itself (a batch completed
     * inside a job or a poll), the loop is running and looks at wake_hint before it
     * waits again (gw_conn_async_woken): no eventfd write and read, no epoll event. */
    if (first && wake_fd >= 0 && !pthread_equal(pthread_self(), wake_owner)) {
        uint64_t one = 1;
        ssize_t w = write(wake_fd, &one, sizeof(one));
        (void)w;
    }
    return 1;
}

static void enqueue_local(gw_conn_t *c)
{
    if (work_n == work_cap) {
        size_t cap = work_cap ? work_cap * 2 : 64;
        gw_conn_t **q = realloc(work_q, cap * sizeof(*q));
        if (!q)
            abort();
        work_q = q;
        work_cap = cap;
    }
    work_q[work_n++] = c;
}

/* A freed connection must not stay in any queue (a provider that wakes twice). */
static void async_forget(gw_conn_t *c)
{
    pthread_mutex_lock(&wake_lock);
    for (size_t i = 0; i < wake_n; i++)
        if (wake_q[i] == c)
            wake_q[i] = NULL;
    pthread_mutex_unlock(&wake_lock);
    for (size_t i = work_i; i < work_n; i++)
        if (work_q[i] == c)
            work_q[i] = NULL;
    if (c->async_retry) {
        gw_conn_t *prev = NULL;
        for (gw_conn_t *it = retry_head; it; prev = it, it = it->retry_next) {
            if (it == c) {
                if (prev)
                    prev->retry_next = c->retry_next;
                else
                    retry_head = c->retry_next;
                if (retry_tail == c)
                    retry_tail = prev;
                break;
            }
        }
        c->async_retry = 0;
    }
    for (int i = 0; i < c->n_afd; i++)
        gw_loop_del(&gw_worker->loop, c->afd[i].fd); /* the wait ctx closes it */
    c->n_afd = 0;
}

static void on_async_fd(gw_io_t *io, uint32_t events)
{
    gw_async_fd_t *a = (gw_async_fd_t *)io;
    if (a->c->async_paused)
        enqueue_local(a->c);
}

/* ssl_async_notify fd: follow the job's wait fds in epoll. */
static void update_async_fds(gw_conn_t *c)
{
    size_t nadd = 0, ndel = 0;
    if (!SSL_get_changed_async_fds(c->ssl, NULL, &nadd, NULL, &ndel))
        return;
    OSSL_ASYNC_FD add[GW_CONN_MAX_ASYNC_FDS], del[GW_CONN_MAX_ASYNC_FDS];
    if (nadd > GW_CONN_MAX_ASYNC_FDS || ndel > GW_CONN_MAX_ASYNC_FDS) {
        gw_log(GW_LOG_ALERT, 0, "async job uses more than %d wait fds", GW_CONN_MAX_ASYNC_FDS);
        return;
    }
    if (!SSL_get_changed_async_fds(c->ssl, add, &nadd, del, &ndel))
        return;
    for (size_t i = 0; i < ndel; i++) {
        for (int k = 0; k < c->n_afd; k++) {
            if (c->afd[k].fd == del[i]) {
                gw_loop_del(&gw_worker->loop, del[i]);
                c->afd[k] = c->afd[--c->n_afd];
                break;
            }
        }
    }
    for (size_t i = 0; i < nadd; i++) {
        if (c->n_afd == GW_CONN_MAX_ASYNC_FDS)
            break;
        gw_async_fd_t *a = &c->afd[c->n_afd];
        a->io.handler = on_async_fd;
        a->fd = add[i];
        a->c = c;
        if (gw_loop_add(&gw_worker->loop, add[i], EPOLLIN | EPOLLET, &a->io) == 0)
            c->n_afd++;
        else
            gw_log(GW_LOG_ALERT, errno, "epoll_ctl(ADD) of an async wait fd failed");
    }
}

static void on_retry_timer(gw_timer_t *t)
{
    /* nothing here: the worker calls gw_conn_async_process() after the timers, and an
     * expired retry timer makes it retry the waiters */
}

/* An SSL call answered WANT_ASYNC or WANT_ASYNC_JOB: park the connection. Returns 1 when
 * parked (the caller returns and waits), 0 for any other result. */
static int park(gw_conn_t *c, int rr, int op)
{
    if (rr == IO_ASYNC) {
        /* a clock read per pause (vDSO, no syscall): the pass's cached time would count
         * the events handled before this one in the same pass as paused time */
        c->pause_us = gw_clock_mono_us();
        c->async_paused = 1;
        c->async_op = op;
        n_paused++;
        GW_WSTAT_ADD(paused, 1);
        if (c->async_fd_mode)
            update_async_fds(c);
        return 1;
    }
    if (rr == IO_ASYNC_JOB) {
        /* every job of the pool is in use: retry when one finishes, never spin */
        GW_WSTAT_ADD(want_async_job, 1);
        if (!c->async_retry) {
            c->async_retry = 1;
            c->retry_next = NULL;
            if (retry_tail)
                retry_tail->retry_next = c;
            else
                retry_head = c;
            retry_tail = c;
        }
        if (!gw_timer_armed(&retry_timer)) {
            retry_timer.cb = on_retry_timer;
            gw_timer_add(&gw_worker->loop, &retry_timer, RETRY_MS);
        }
        return 1;
    }
    return 0;
}

/* Resume a draining connection's paused call once (the job keeps the arguments of the
 * call that started it: those given here are ignored by OpenSSL). */
static int resume_op(gw_conn_t *c)
{
    char byte;
    size_t n;
    int r;
    ERR_clear_error();
    switch (c->async_op) {
    case OP_HANDSHAKE:
        r = SSL_do_handshake(c->ssl);
        break;
    case OP_READ:
        r = SSL_read_ex(c->ssl, &byte, 1, &n);
        break;
    case OP_WRITE:
        r = SSL_write_ex(c->ssl, c->out ? c->out : &byte, 1, &n);
        break;
    default:
        r = SSL_shutdown(c->ssl);
        break;
    }
    int e = SSL_get_error(c->ssl, r);
    ERR_clear_error();
    return e == SSL_ERROR_WANT_ASYNC ? IO_ASYNC : IO_OK;
}

static void async_wake(gw_conn_t *c)
{
    if (!c->async_paused)
        return; /* a spurious or duplicate wake */
    c->async_paused = 0;
    n_paused--;
    int64_t paused_us = gw_clock_mono_us() - c->pause_us;
    gw_stats_async_pause(paused_us > 0 ? (uint64_t)paused_us : 0);
    GW_WSTAT_ADD(paused, -1);
    GW_WSTAT_ADD(resumed, 1);
    if (c->draining) {
        if (resume_op(c) == IO_ASYNC) {
            park(c, IO_ASYNC, c->async_op);
            return;
        }
        conn_free(c);
        return;
    }
    conn_drive(c);
}

/* Only drains the eventfd: the wakes are processed by the worker after the whole batch
 * of events (gw_conn_async_process), because resuming a connection may free it while a
 * later event of the same epoll_wait batch still points at it. */
static void on_wake_fd(gw_io_t *io, uint32_t events)
{
    uint64_t v;
    ssize_t r = read(wake_fd, &v, sizeof(v));
    (void)r;
}

int gw_conn_async_init(void)
{
    wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd < 0)
        return -1;
    wake_owner = pthread_self();
    wake_io.handler = on_wake_fd;
    return gw_loop_add(&gw_worker->loop, wake_fd, EPOLLIN | EPOLLET, &wake_io);
}

int gw_conn_async_woken(void)
{
    return __atomic_load_n(&wake_hint, __ATOMIC_ACQUIRE);
}

void gw_conn_async_process(void)
{
    size_t woke = 0;
    if (__atomic_load_n(&wake_hint, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&wake_lock);
        for (size_t i = 0; i < wake_n; i++)
            if (wake_q[i])
                enqueue_local(wake_q[i]);
        wake_n = 0;
        __atomic_store_n(&wake_hint, 0, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&wake_lock);
    }
    /* work_q also holds wakes seen on wait fds */
    for (work_i = 0; work_i < work_n; work_i++) {
        gw_conn_t *c = work_q[work_i];
        if (c) {
            work_q[work_i] = NULL;
            async_wake(c);
            woke++;
        }
    }
    work_n = work_i = 0;
    if (retry_head && (woke || !gw_timer_armed(&retry_timer))) {
        /* Each completed wake may have freed one job: retry that many waiters, oldest
         * first (all of them when the backstop timer fired). A waiter that still finds no
         * job goes back to the tail. Retrying everyone on every wake cost ~40 failed
         * attempts per handshake with a small pool. */
        size_t budget = woke ? woke : (size_t)-1;
        gw_conn_t *stop = retry_tail; /* do not loop over waiters re-queued just now */
        gw_timer_del(&gw_worker->loop, &retry_timer);
        while (retry_head && budget--) {
            gw_conn_t *c = retry_head;
            retry_head = c->retry_next;
            if (!retry_head)
                retry_tail = NULL;
            c->retry_next = NULL;
            c->async_retry = 0;
            conn_drive(c);
            if (c == stop)
                break;
        }
        if (retry_head && !gw_timer_armed(&retry_timer)) {
            retry_timer.cb = on_retry_timer;
            gw_timer_add(&gw_worker->loop, &retry_timer, RETRY_MS);
        }
    }
}
