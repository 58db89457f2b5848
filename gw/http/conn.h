/*
 * A client connection: TLS handshake, HTTP/1.1 request heads, bodies read or discarded,
 * responses written, keep-alive and pipelining, and every timeout. One state machine per
 * connection, driven by edge-triggered epoll events: an operation is always attempted and
 * the connection waits only after the socket said EAGAIN (or OpenSSL WANT_READ/WRITE).
 */
#ifndef GW_HTTP_CONN_H
#define GW_HTTP_CONN_H

#include <stdint.h>
#include <sys/socket.h>

#include <openssl/ssl.h>

#include "cycle.h"
#include "http/parser.h"
#include "http/vars.h"
#include "net/loop.h"

enum gw_conn_state {
    GW_CONN_HANDSHAKE = 0,
    GW_CONN_READ_HEAD,   /* waiting for / reading a request head */
    GW_CONN_READ_BODY,   /* reading (discarding) a request body */
    GW_CONN_WRITE,       /* writing a response */
    GW_CONN_LINGER,      /* sent our last bytes; draining input until EOF before close */
    GW_CONN_PROXY,       /* gw/proxy drives the request (body up, response down) */
    GW_CONN_STREAM,      /* a stream server's connection: bytes relayed (gw/proxy/stream.c) */
};

struct gw_conn;

/**
 * What a connection keeps only while a request is in progress (from its head's first byte
 * to its response's end): the parsed head and the access log's copies of its fields. An
 * idle keep-alive connection holds none (gw_conn_t.rq is NULL), nor input or output
 * buffers: they go back to the worker's free lists (issue #21: memory per idle connection).
 */
typedef struct gw_conn_rq {
    gw_http_request_t req;
    char request_line[512];  /* escaped copies for the access log: the head itself is */
    char log_referer[256];   /* dropped from the buffer before a body is read */
    char log_ua[256];
    gw_req_vars_t v;         /* the request's variables (http/vars.h) */
} gw_conn_rq_t;

/** A wait fd of a paused async job, registered in epoll (ssl_async_notify fd). */
typedef struct gw_async_fd {
    gw_io_t io; /* first: epoll dispatch */
    int fd;
    struct gw_conn *c;
} gw_async_fd_t;

#define GW_CONN_MAX_ASYNC_FDS 4

typedef struct gw_conn {
    gw_io_t io; /* first: epoll dispatch */
    int fd;
    int state;
    SSL *ssl;
    gw_laddr_t *laddr;
    gw_vserver_t *vs;        /* selected by SNI, or the address's default server */
    int sni_present;         /* the client sent a usable server_name */
    int sni_matched;         /* vs was chosen by a matching SNI name */
    struct gw_conn *next, *prev;
    gw_timer_t timer;
    int64_t header_deadline_ms; /* accept + client_header_timeout (first request) */
    struct gw_ipcount *ipc;     /* limit_conn_per_ip count (net/limits.h), or NULL */
    char peer_text[64];

    /* input: request heads (and discarded body bytes) */
    char *in;
    size_t in_len, in_cap, in_max;
    int read_eof;
    int pending_eof;         /* the peer's FIN was reported (EPOLLRDHUP/HUP/ERR): a short
                              * read then does not drain the socket, the EOF is still to read
                              * (nginx's rev->pending_eof) */
    int rd_ready;            /* bytes may wait in the socket: set by an input event, cleared
                                when a read found none (EAGAIN / WANT_READ) */
    int head_dirty;          /* bytes arrived that may complete the head: parse again */
    int nl_seen;             /* the buffered head has a line end (else: request line) */

    /* the current request (NULL while idle: see gw_conn_rq_t) */
    gw_conn_rq_t *rq;
    size_t head_len;
    size_t resp_start;       /* out_len when this request's answer began (pipelining) */
    unsigned requests;
    int keep_alive;
    int status;
    int stat_state;          /* which gw_stats gauge counts this connection */
    uint64_t body_left;      /* Content-Length body bytes still to discard */
    int body_chunked;
    gw_http_chunked_t chunked;
    uint64_t bytes_sent;     /* body bytes sent, for the access log */

    /* output */
    char *out;
    size_t out_len, out_off, out_cap;
    int file_fd;
    uint64_t file_off, file_left;
    int is_head;
    int close_after;         /* close once the response is written */
    BIO *wbuf;               /* a file body over OpenSSL's records: BIO_f_buffer on the
                                socket, so the records of one read leave in one send */

    /* async TLS (ssl_async on): while a job is paused no other SSL call is made and the
     * SSL is never freed; a connection closed meanwhile is drained (freed after). */
    int64_t accept_us;       /* loop-pass time of the accept (handshake histogram) */
    int64_t pause_us;        /* when the current async job paused (pause histogram) */
    int async_paused;        /* a job is paused until its wake */
    int async_op;            /* the SSL call that paused (resumed as is when draining) */
    int async_retry;         /* WANT_ASYNC_JOB: waiting for a free job */
    int async_fd_mode;       /* wake through wait fds, not the callback */
    int draining;            /* closed while paused: free when the job finishes */
    struct gw_conn *retry_next;
    gw_async_fd_t afd[GW_CONN_MAX_ASYNC_FDS];
    int n_afd;

    struct gw_proxy *proxy;  /* GW_CONN_PROXY: the proxied request (gw/proxy/proxy.c) */
    struct gw_stream *stream; /* GW_CONN_STREAM: the relay (gw/proxy/stream.c) */
    gw_conn_vars_t v;        /* client addresses, PROXY protocol (http/vars.h) */
} gw_conn_t;

/**
 * Take over a freshly accepted non-blocking socket fd (owned from here on: closed with
 * the connection, also when setting it up fails) from listen address laddr. peer/plen:
 * the client's address as accept4() returned it (only its text form is kept).
 */
void gw_conn_accepted(gw_laddr_t *laddr, int fd, const struct sockaddr *peer, socklen_t plen);

/** Graceful stop began: idle connections close soon, busy ones after their response. */
void gw_conn_shutdown_all(int graceful);

/**
 * The async callback (SSL_CTX_set_async_callback): may run on an accelerator's thread, so
 * it only queues the connection (arg) for its worker and wakes the loop (eventfd).
 */
int gw_conn_async_callback(SSL *ssl, void *arg);

/** Create the worker's wake eventfd and register it; 0 or -1 with errno. */
int gw_conn_async_init(void);

/**
 * Resume the connections whose paused jobs completed (queued by the callback or seen on
 * their wait fds) and retry those that waited for a free job. Called by the worker after
 * every loop pass, never from inside the batch of events (a resumed connection may be
 * freed while a later event of the batch still names it).
 */
void gw_conn_async_process(void);

/** Number of this worker's connections with a paused job (for the poll hook). */
int gw_conn_async_paused(void);

/* 1 when completed async jobs wait to be resumed (gw_conn_async_process): the worker's
 * loop must not block before it resumes them, since a wake from the worker thread itself
 * does not signal the loop's eventfd. */
int gw_conn_async_woken(void);

/** ClientHello callback for every SSL_CTX (SNI selects the server block). */
int gw_conn_client_hello(SSL *ssl, int *alert, void *arg);

/** Drive c's handshake again after a ClientHello callback answered RETRY (a session
 * lookup finished, http/resume.c); nothing when c is no longer handshaking or is paused
 * in an async job. May free c. */
void gw_conn_hello_resume(gw_conn_t *c);

/* ---- for the reverse proxy (gw/proxy) ---- */

/** Results of gw_conn_recv(). */
enum { GW_CONN_IO_OK = 1, GW_CONN_IO_AGAIN = 0, GW_CONN_IO_EOF = -1, GW_CONN_IO_ERROR = -2 };

/**
 * Read up to len bytes from the client (TLS or plain) into buf; *got receives the count.
 * Returns GW_CONN_IO_OK, GW_CONN_IO_AGAIN (nothing now: also when an async TLS job paused
 * the read, c->async_paused/async_retry then say so and no other TLS call may be made on c
 * until the connection is driven again), GW_CONN_IO_EOF (peer closed or reset) or
 * GW_CONN_IO_ERROR (logged).
 */
int gw_conn_recv(gw_conn_t *c, char *buf, size_t len, size_t *got);

/**
 * Write c->out[out_off..out_len) to the client; the buffer is emptied (offsets reset) when
 * all of it is written. Returns 1 when all is written, 0 when the socket (or a paused async
 * job, see gw_conn_recv) blocks, -1 on an error (the client is gone). Re-arms the client's
 * send_timeout after each successful write.
 */
int gw_conn_flush(gw_conn_t *c);

/**
 * Send TLS close_notify once (RFC 8446 §6.1; a half-close: reading goes on). Returns 1
 * when sent (or nothing to send: plain TCP gets shutdown(SHUT_WR)), 0 when an async job
 * paused it (call again once driven), -1 on an error.
 */
int gw_conn_close_notify(gw_conn_t *c);

/** Append n bytes to c's output buffer (grown as needed; abort() on out of memory). */
void gw_resp_append(gw_conn_t *c, const char *s, size_t n);

/** Drive c's state machine now (after an upstream event was processed for it). Must not
 * be called while dispatching a batch of epoll events (it may free c). */
void gw_conn_resume(gw_conn_t *c);

/* ---- for the handlers (gw/http/handler.c) ---- */

/** Choose the response for c->req (static file, return, status page, error). */
void gw_http_handle(gw_conn_t *c);

/*
 * The gw_resp_* helpers append to c's output buffer (bytes; grown as needed, abort() on
 * out of memory, as at start-up: a worker cannot continue without it).
 */

/**
 * Start a response: status line and the common headers (Server, Date, Content-Length,
 * Connection) followed by extra (already CRLF-terminated header lines, may be NULL) and
 * the empty line. content_type NULL omits the header. Sets c->status.
 */
void gw_resp_head(gw_conn_t *c, int status, const char *content_type, uint64_t content_length,
                  const char *extra);

/** A complete response with an in-memory body of body_len bytes (copied; HEAD, 204 and
 * 304 send no body). */
void gw_resp_simple(gw_conn_t *c, int status, const char *content_type, const char *body,
                    size_t body_len, const char *extra);

/** A response whose body is nginx's small HTML page for status, with extra headers. */
void gw_resp_page(gw_conn_t *c, int status, const char *extra);

/** nginx-style HTML error page for status; statuses after which the connection cannot
 * continue (400, 408, 413, 414, 431, 5xx...) also set close_after. */
void gw_resp_error(gw_conn_t *c, int status);

#endif
