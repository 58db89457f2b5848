/*
 * A request, whatever the protocol that carried it (HTTP/1.1 or an HTTP/2 stream): its
 * parsed head, the server block chosen for it, and one API for its answer: a head, then
 * an in-memory body or a file. The static handler, `return`, the status pages and error
 * pages write through it; HTTP/1.1 (http/h1.c) frames the answer into the connection's
 * output buffer, HTTP/2 (http/h2.c) into HEADERS and DATA frames of its stream.
 */
#ifndef GW_HTTP_REQ_H
#define GW_HTTP_REQ_H

#include <stddef.h>
#include <stdint.h>

#include "cycle.h"
#include "http/parser.h"
#include "http/vars.h"

enum { GW_REQ_HTTP11 = 1, GW_REQ_HTTP2 };

struct gw_req;

/** How a protocol frames an answer. */
typedef struct gw_req_ops {
    /** The response head: status, Content-Type (NULL: none), Content-Length (ignored for
     * 204 and 304), extra header lines ("Name: value\r\n"..., may be NULL). */
    void (*head)(struct gw_req *r, int status, const char *content_type, uint64_t content_length,
                 const char *extra);
    /** In-memory body bytes after the head (copied). */
    void (*body)(struct gw_req *r, const char *p, size_t n);
} gw_req_ops_t;

typedef struct gw_req {
    const gw_req_ops_t *ops;
    void *owner;           /* the connection (HTTP/1.1) or the stream (HTTP/2) */
    struct gw_conn *conn;  /* the transport: the client connection (HTTP/2: the one the
                              stream came on), its TLS and addresses for http/vars.h */
    int proto;             /* GW_REQ_HTTP11, GW_REQ_HTTP2 */
    gw_http_request_t req; /* the parsed head (HTTP/2: built from the header list) */
    gw_vserver_t *vs;      /* the server block answering */
    const char *peer_text; /* the client: the connection's peer, or real_ip's address */
    int tls;               /* came over TLS ($scheme https) */

    int status;
    int is_head;         /* HEAD: no body */
    int keep_alive;      /* HTTP/1.1: the connection may carry another request */
    int close_after;     /* HTTP/1.1: close once the answer is written */
    int log_pending;     /* HTTP/1.1: a head was parsed (or refused) and its access log
                            line is not written yet (gw_req_access_log clears it) */
    uint64_t bytes_sent; /* body bytes, for the access log */
    int file_fd;         /* a file body (owned: closed when the answer ends), or -1 */
    uint64_t file_off, file_left;

    char request_line[512]; /* escaped copies for the access log: the head itself may */
    char log_referer[256];  /* be dropped from the buffer before a body is read */
    char log_ua[256];
    gw_req_vars_t v; /* the request's variables: settings, head copy, times, upstream
                                address and status (http/vars.h); zeroed when taken */
} gw_req_t;

/** The client_max_body_size of request r, in bytes (0: no limit): its location's once
 * gw_http_handle has chosen it, else its server's (nginx checks it in the location). */
static inline int64_t gw_req_max_body(const gw_req_t *r)
{
    return (r->v.loc ? r->v.loc : &r->vs->conf->loc)->client_max_body_size;
}

/** Take a request block from the worker's free list (fields reset, v zeroed, file_fd -1);
 * abort() on out of memory, as at start-up. */
gw_req_t *gw_req_take(void);

/** Give r back (its file, if any, is closed, its head copy freed: gw_vars_release); NULL
 * is ignored. */
void gw_req_give(gw_req_t *r);

/** Fill r's access-log copies (request line, Referer, User-Agent) from r->req. */
void gw_req_log_fields(gw_req_t *r);

/** Fill r's access-log copies from a head that failed to parse: its first line p (l
 * bytes, escaped, at most 200), "-" for the other fields. */
void gw_req_log_bad_line(gw_req_t *r, const char *p, size_t l);

/** Write the access log line of r (nginx "combined", or its log_format) when its server
 * logs, and clear r->log_pending. */
void gw_req_access_log(gw_req_t *r);

/** The status an access log line gives a request that ended without an answer, as nginx:
 * 400 when the client went away while its body was read (body_read 0), 499 when it went
 * away waiting for the answer (body_read 1). */
int gw_req_abort_status(int body_read);

/** HTTP/1.1: r's connection ends before r's answer did (the client went away, a write or
 * the upstream failed): when r->log_pending, its line is written with the status chosen
 * and the body bytes sent so far, as nginx; no status chosen: 499 (a proxied request got
 * its 400 or 499 from gw_proxy_conn_free). r may be NULL (no request). */
void gw_req_log_unfinished(gw_req_t *r);

/** Choose the answer for r (static file, return, status page, error, proxy). */
void gw_http_handle(gw_req_t *r);

/**
 * Start an answer: the protocol's head with the common fields (Server, Date,
 * Content-Length, and for HTTP/1.1 Connection) and extra (CRLF-terminated header lines,
 * may be NULL). content_type NULL omits the header. Sets r->status; counts the response.
 */
void gw_resp_head(gw_req_t *r, int status, const char *content_type, uint64_t content_length,
                  const char *extra);

/** A complete answer with an in-memory body of body_len bytes (copied; HEAD, 204 and 304
 * send no body). */
void gw_resp_simple(gw_req_t *r, int status, const char *content_type, const char *body,
                    size_t body_len, const char *extra);

/** An answer whose body is nginx's small HTML page for status, with extra headers. */
void gw_resp_page(gw_req_t *r, int status, const char *extra);

/** nginx-style HTML error page for status; statuses after which an HTTP/1.1 connection
 * cannot continue (400, 408, 413, 414, 431, 5xx...) also set close_after. */
void gw_resp_error(gw_req_t *r, int status);

/** Answer with a file body: fd (owned from here on) from off, len bytes, after a head
 * written with gw_resp_head. */
void gw_resp_file(gw_req_t *r, int fd, uint64_t off, uint64_t len);

/**
 * The hop-by-hop header fields (RFC 9110 §7.6.1; RFC 9113 §8.2.2 forbids them in HTTP/2):
 * Connection, Keep-Alive, Proxy-Connection, TE, Trailer, Transfer-Encoding, Upgrade.
 * Returns 1 when name (len bytes, any case) is one of them. The one table both the proxy
 * and HTTP/2 consult.
 */
int gw_http_hop_by_hop(const char *name, size_t len);

/** Set by the worker: copy the provider's counters into this worker's slot before a
 * status page is rendered (gw_worker_metrics_refresh); NULL outside a worker. */
extern void (*gw_req_metrics_refresh)(void);

/** Helpers for heads built by hand (once per response: no snprintf). */
char *gw_put_u64(char *o, uint64_t v);

#endif
