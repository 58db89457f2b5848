/*
 * A client connection: a socket (gw/sock: TLS, async parking, timers, close) and the
 * protocol chosen when its handshake ends, by ALPN (RFC 7301): HTTP/1.1 (http/h1.c),
 * HTTP/2 (http/h2.c) or, on a stream server, a raw TCP relay (proxy/stream.c). Requests
 * are gw_req_t objects (http/req.h) whatever the protocol.
 */
#ifndef GW_HTTP_CONN_H
#define GW_HTTP_CONN_H

#include <stdint.h>
#include <sys/socket.h>

#include <openssl/ssl.h>

#include "cycle.h"
#include "http/parser.h"
#include "http/req.h"
#include "http/vars.h"
#include "net/loop.h"
#include "sock/sock.h"

/* HTTP/1.1 states (c->state) */
enum gw_conn_state {
    GW_CONN_READ_HEAD = 1, /* waiting for / reading a request head */
    GW_CONN_READ_BODY,     /* reading (discarding) a request body */
    GW_CONN_WRITE,         /* writing a response */
    GW_CONN_PROXY,         /* gw/proxy drives the request (body up, response down) */
    GW_CONN_STREAM,        /* a stream server's connection: bytes relayed (proxy/stream.c) */
};

struct gw_h2;

/** What a worker gives the connections it accepts (no worker global below the worker). */
typedef struct gw_conn_env {
    gw_loop_t *loop;
    int shutting_down;     /* graceful stop: answer with Connection: close, GOAWAY */
    struct gw_conn *conns; /* all open connections (doubly linked) */
    int n_conns, max_conns;
    void (*accepting)(int on); /* stop / resume accepting (worker_connections) */
    int index;                 /* the worker's index ($connection's high bits) */
    const gw_conf_t *conf;     /* the configuration (log_format definitions, http level) */
} gw_conn_env_t;

typedef struct gw_conn {
    gw_sock_t s; /* first: the socket layer's object */
    gw_conn_env_t *env;
    int state;
    gw_laddr_t *laddr;
    gw_vserver_t *vs; /* selected by SNI, or the address's default server */
    int sni_present;  /* the client sent a usable server_name */
    int sni_matched;  /* vs was chosen by a matching SNI name */
    struct gw_conn *next, *prev;
    int64_t header_deadline_ms; /* accept + client_header_timeout (first request) */
    struct gw_ipcount *ipc;     /* limit_conn_per_ip count (net/limits.h), or NULL */
    size_t in_max;              /* large_client_header_buffers: the head's buffer limit */
    int stat_state;             /* which gw_stats gauge counts this connection */

    /* HTTP/1.1 */
    int head_dirty; /* bytes arrived that may complete the head: parse again */
    int nl_seen;    /* the buffered head has a line end (else: request line) */
    gw_req_t *rq;   /* the current request (NULL while idle) */
    size_t head_len;
    size_t resp_start; /* out_len when this request's answer began (pipelining) */
    unsigned requests;
    uint64_t body_left; /* Content-Length body bytes still to discard */
    int body_chunked;
    gw_http_chunked_t chunked;

    struct gw_proxy *proxy;   /* GW_CONN_PROXY: the proxied request (proxy/proxy.c) */
    struct gw_stream *stream; /* GW_CONN_STREAM: the relay (proxy/stream.c) */
    gw_conn_vars_t v;         /* client addresses, PROXY protocol (http/vars.h) */
    struct gw_h2 *h2;         /* HTTP/2 (http/h2.c) */
} gw_conn_t;

/* gauges of stub_status a connection is counted in */
enum { GW_ST_NONE = 0, GW_ST_READING, GW_ST_WRITING, GW_ST_WAITING };

/**
 * Take over a freshly accepted non-blocking socket fd (owned from here on: closed with
 * the connection, also when setting it up fails) from listen address laddr. peer/plen:
 * the client's address as accept4() returned it (only its text form is kept).
 */
void gw_conn_accepted(gw_conn_env_t *env, gw_laddr_t *laddr, int fd, const struct sockaddr *peer,
                      socklen_t plen);

/** Graceful stop began (graceful: idle connections close soon, busy ones after their
 * response, HTTP/2 sends GOAWAY), or a fast stop (0: everything closes now). */
void gw_conn_shutdown_all(gw_conn_env_t *env, int graceful);

/** ClientHello callback for every SSL_CTX (SNI selects the server block: http/vhost.c). */
int gw_conn_client_hello(SSL *ssl, int *alert, void *arg);

/** Drive c's handshake again after a ClientHello callback answered RETRY (a session
 * lookup finished, http/resume.c). May free c. */
void gw_conn_hello_resume(gw_conn_t *c);

/** Count c in stub_status's reading / writing / waiting gauge (GW_ST_*). */
void gw_conn_set_stat(gw_conn_t *c, int st);

/** The server block's settings of c. */
static inline const gw_srv_settings_t *gw_conn_srv(const gw_conn_t *c)
{
    return &c->vs->conf->srv;
}

/* ---- server selection (http/vhost.c) ---- */

/**
 * The server block of laddr named by host (a Host header or :authority, port allowed),
 * as route_request chooses it: Host among the address's servers, 421 when SNI chose
 * another block. Returns 0 with *vs set, or an HTTP status (400, 421).
 */
int gw_conn_select_host(gw_conn_t *c, const char *host, size_t len, gw_vserver_t **vs);

/** Does any server of c's address write an access log (then requests copy the log's
 * fields)? Usually one server. */
int gw_conn_logs(const gw_conn_t *c);

/* ---- protocols ---- */

extern const gw_sock_proto_t gw_h1_proto;
extern const gw_sock_proto_t gw_h2_proto;

/** Start HTTP/1.1 on c (after the handshake, or at the accept on plain TCP). */
void gw_h1_start(gw_conn_t *c);

/** Start HTTP/2 on c (ALPN chose "h2"): our SETTINGS are queued. 0, or -1 when the
 * session cannot be made (c is then closed). */
int gw_h2_start(gw_conn_t *c);

/** Graceful stop: GOAWAY with the last stream processed; the open streams are answered,
 * then the connection ends. */
void gw_h2_shutdown(gw_conn_t *c);

/** c's client as text for log lines: its current request's (after real_ip), else the TCP
 * peer's. */
static inline const char *gw_conn_client(const gw_conn_t *c)
{
    return c->rq ? c->rq->peer_text : c->s.peer_text;
}

/** The worker of c's process is stopping (no keep-alive, GOAWAY). */
static inline int gw_conn_stopping(const gw_conn_t *c)
{
    return c->env->shutting_down;
}

/* ---- for the reverse proxy (gw/proxy) ---- */

/** Results of gw_conn_recv(). */
enum { GW_CONN_IO_OK = 1, GW_CONN_IO_AGAIN = 0, GW_CONN_IO_EOF = -1, GW_CONN_IO_ERROR = -2 };

/** Read from the client: gw_sock_read(). */
static inline int gw_conn_recv(gw_conn_t *c, char *buf, size_t len, size_t *got)
{
    return gw_sock_read(&c->s, buf, len, got);
}

/** Write c's output buffer: gw_sock_flush(). */
static inline int gw_conn_flush(gw_conn_t *c)
{
    return gw_sock_flush(&c->s);
}

/** gw_conn_flush(), setting *progress to 1 when bytes left the output buffer. */
static inline int gw_conn_flush_progress(gw_conn_t *c, int *progress)
{
    size_t before = c->s.out_len - c->s.out_off;
    int r = gw_sock_flush(&c->s);
    if (r >= 0 && c->s.out_len - c->s.out_off != before)
        *progress = 1;
    return r;
}

/** Send TLS close_notify once: gw_sock_close_notify(). */
static inline int gw_conn_close_notify(gw_conn_t *c)
{
    return gw_sock_close_notify(&c->s);
}

/** Append n bytes to c's output buffer (grown as needed; abort() on out of memory). */
static inline void gw_resp_append(gw_conn_t *c, const char *s, size_t n)
{
    gw_sock_out_append(&c->s, s, n);
}

/** Drive c's protocol now (after an upstream event was processed for it). Must not be
 * called while dispatching a batch of epoll events (it may free c). */
static inline void gw_conn_resume(gw_conn_t *c)
{
    gw_sock_resume(&c->s);
}

#endif
