/* Shared by proxy/proxy.c (the request's life: connects, bodies, relay) and
 * proxy/head.c (the heads both ways). */
#ifndef GW_PROXY_INTERNAL_H
#define GW_PROXY_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "http/conn.h"
#include "http/parser.h"
#include "proxy/upstream.h"

#define UOUT_MIN (64 * 1024) /* bytes queued for the upstream at most (plus the head) */
#define UIN_CAP (32 * 1024)  /* response bytes read at once; also the response head limit */
#define OUT_HIGH (64 * 1024) /* client output pending above which the upstream is not read */
#define BODY_IN (64 * 1024)  /* client input buffer while a body streams */

enum { RS_HEAD = 0, RS_CL, RS_CHUNKED, RS_EOF, RS_DONE };

struct h2_stream;

typedef struct gw_proxy {
    gw_posted_t post;
    gw_conn_t *c;         /* the client's connection */
    gw_req_t *rq;         /* the request (HTTP/1.1: c->rq; HTTP/2: its stream's) */
    struct h2_stream *st; /* HTTP/2: the stream the answer goes to; NULL: HTTP/1.1 */
    const gw_location_t *loc;
    gw_upstream_t *up;
    gw_upconn_t *uc;
    int peer;  /* -1 before the first pick */
    int tries; /* upstream connections tried */
    int idempotent;
    int is_head;
    int client_minor;
    int from_up;      /* driven because of an upstream event or timer */
    int probe_client; /* look for a client abort (not before the client's next event) */
    int up_again;     /* the upstream said EAGAIN and no event came since: no read */
    /* request */
    char *head; /* the request head we send (kept for a retry) */
    size_t head_len;
    uint64_t body_left;
    uint64_t body_total; /* HTTP/2: body bytes forwarded (client_max_body_size) */
    int body_chunked;
    gw_http_chunked_t chunked;
    int body_done;
    int body_started; /* body bytes were taken from the client: no replay possible */
    int expect_continue, continue_sent;
    char *uout;
    size_t uout_len, uout_off, uout_cap;
    int head_queued, req_sent, sent_any, send_failed;
    /* response */
    char *uin;
    size_t uin_len;
    int rs;
    int got_byte; /* any response byte on this attempt */
    int head_fwd; /* the response head went to the client: no error page now */
    uint64_t resp_left;
    gw_http_chunked_t rchunked;
    int chunk_out; /* re-frame the body as chunked for the client */
    int up_close;  /* the upstream connection cannot be reused */
    /* proxy_request_buffering on (proxy/reqbuf.h) */
    struct gw_reqbuf *rb; /* the whole body, read before the upstream is contacted */
    uint64_t rb_off;      /* bytes of it sent on this attempt */
    int rb_sent;
} gw_proxy_t;


static inline const gw_loc_settings_t *ls(const gw_proxy_t *p)
{
    return &p->loc->loc;
}

/* the request head sent upstream, into p->head */
void gw_proxy_build_head(gw_proxy_t *p, const char *norm, size_t norm_len);
/* the response head (hl bytes of p->uin) re-framed for the client */
int gw_proxy_forward_head(gw_proxy_t *p, size_t hl, int status, int has_cl, unsigned long long cl,
                          int chunked, int up_close);
/* request bodies (proxy/body.c): client body bytes into uout, framed: 1 progress (or the
 * body ended), 0 wait for the client, -1 client gone, -400/-413 bad body */
int gw_proxy_pull_body(gw_proxy_t *p);
/* proxy_request_buffering on: read the whole body into p->rb, then give p->head its
 * Content-Length. 1 done (contact the upstream), 0 wait, -1 client gone, -status */
int gw_proxy_buffer_body(gw_proxy_t *p);
/* the buffered body into uout: 1, or -500 when its temporary file cannot be read */
int gw_proxy_pull_buffered(gw_proxy_t *p);
/* bytes of the upstream's answer used: drop them from p->uin */
void gw_proxy_consume_uin(gw_proxy_t *p, size_t n);

/* proxy.c's life cycle, used by client.c */
gw_proxy_t *gw_proxy_alloc_(void);
void gw_proxy_free_(gw_proxy_t *p);
void gw_proxy_on_posted_(gw_posted_t *pp);
/* start an attempt on a (new or pooled) upstream connection: 0, or a drive result */
int gw_proxy_start_attempt_(gw_proxy_t *p);
/* gw_proxy_pull_body for an HTTP/2 stream: its DATA into uout, framed (client.c) */
int gw_proxy_pull_body_h2(gw_proxy_t *p);

#endif
