/*
 * HTTP/2 (RFC 9113) on libnghttp2: shared by http/h2.c (the connection: session, I/O,
 * timers, flood defences) and http/h2_stream.c (a stream's request and its answer).
 */
#ifndef GW_HTTP_H2_H
#define GW_HTTP_H2_H

#include <stdint.h>

#include <nghttp2/nghttp2.h>

#include "http/conn.h"

typedef struct h2_stream {
    int32_t id;
    struct gw_h2 *h;
    struct h2_stream *next, *prev;
    gw_req_t *rq;
    /* the request's header list: names and values copied into hb; until the head is
     * complete rq->req.headers[] hold offsets into hb (hb may move when it grows) */
    gw_vbuf_t hb;
    size_t list_size; /* RFC 9113 §6.5.2 size: name + value + 32 per field */
    uint32_t method_o, method_l, path_o, path_l, auth_o, auth_l;
    int too_large;       /* the header list passed large_client_header_buffers: 431 */
    int dispatched;      /* handled: the answer is chosen */
    int answered;        /* submitted to nghttp2 */
    uint64_t body_bytes; /* request body bytes received (discarded) */
    /* the answer */
    nghttp2_nv *nv; /* the answer's fields (nv_cap of them) */
    size_t n_nv, nv_cap;
    char *rh; /* storage of the answer's header values */
    size_t rh_len, rh_cap;
    gw_vbuf_t body; /* an in-memory body (body.len bytes), sent from body_off */
    size_t body_off;
    int64_t last_ms;        /* last progress either way (send_timeout per stream) */
    int body_eof;           /* the answer's body is complete (else more may come) */
    int req_done;           /* the request ended (END_STREAM received) */
    int held;               /* answered, but sent only once the request body has ended */
    struct gw_proxy *proxy; /* proxy_pass: the upstream request in progress */
    gw_vbuf_t rb;           /* request body bytes the proxy has not taken yet (from rb_off) */
    size_t rb_off;
} h2_stream_t;

typedef struct gw_h2 {
    nghttp2_session *ng;
    gw_conn_t *c;
    gw_posted_t post; /* drive again after the loop's other events */
    h2_stream_t *streams;
    int n_streams;
    int goaway;        /* GOAWAY sent: graceful stop, or keepalive_requests reached */
    unsigned requests; /* streams routed (keepalive_requests) */
    int calm;          /* a flood: GOAWAY(ENHANCE_YOUR_CALM) queued, then close */
    /* flood defences: token buckets refilled per second of the loop's clock */
    int64_t refill_ms;
    int64_t reset_tokens;  /* streams the client resets (CVE-2023-44487) */
    int64_t ctrl_tokens;   /* SETTINGS, PING, PRIORITY, tiny WINDOW_UPDATE, empty DATA */
    unsigned cont_frames;  /* CONTINUATION frames of the header block being received */
    uint64_t hblock_bytes; /* its bytes on the wire */
} gw_h2_t;

/** Create the stream for request HEADERS frame stream_id; NULL when out of memory. */
h2_stream_t *gw_h2_stream_new(gw_h2_t *h, int32_t stream_id);
/** Free st (its request, answer and header storage). */
void gw_h2_stream_free(h2_stream_t *st);
/** One header field of st's request; 0, or an nghttp2 error code for the callback. */
int gw_h2_stream_header(h2_stream_t *st, const uint8_t *name, size_t nl, const uint8_t *value,
                        size_t vl);
/** The request head is complete: route it, answer it (or start its proxy), submit the
 * answer to nghttp2; status != 0 answers with that error instead. */
void gw_h2_stream_dispatch(h2_stream_t *st, int status);
/** st's request has ended (END_STREAM): a held answer goes out, a proxy is woken. */
void gw_h2_stream_end(h2_stream_t *st);
/** Request body bytes of st: kept for its proxy (the client's window opens as the
 * upstream takes them), else discarded (the window opens at once). */
void gw_h2_stream_body(h2_stream_t *st, const uint8_t *data, size_t len);
/** nghttp2's send_data_callback: a DATA frame of st's answer into the output buffer. */
int gw_h2_send_data(nghttp2_session *ng, nghttp2_frame *frame, const uint8_t *framehd,
                    size_t length, nghttp2_data_source *source, void *user);

/** Submit st's answer (its head and in-memory body or file, as gw_resp_* left them). */
void gw_h2_stream_submit(h2_stream_t *st, int eof);
/** Send GOAWAY(NO_ERROR) with the last stream processed, once: the open streams are
 * answered, new ones refused, then the connection ends (a graceful stop,
 * keepalive_requests). */
void gw_h2_goaway(gw_h2_t *h);
/** Let st's connection send what it has after the loop's events. */
void gw_h2_kick(gw_h2_t *h);

/* ---- the reverse proxy's side of a stream (proxy/proxy.c) ---- */

/** The upstream's answer head: status, its fields as "Name: value\r\n" lines (hop-by-hop
 * fields are dropped here), Content-Length (-1: unknown), no_body (HEAD, 204, 304). */
void gw_h2_proxy_head(h2_stream_t *st, int status, int64_t content_length, const char *lines,
                      int no_body);
/** Body bytes of the answer (copied; sent as the client's window allows). */
void gw_h2_proxy_body(h2_stream_t *st, const char *p, size_t n);
/** The answer is complete: the proxy lets go of st. */
void gw_h2_proxy_done(h2_stream_t *st);
/** The proxy failed after the head went out: reset the stream, free the proxy. */
void gw_h2_proxy_abort(h2_stream_t *st);
/** Answer bytes not yet sent. */
size_t gw_h2_proxy_pending(const h2_stream_t *st);
/** Request body bytes received and not yet taken: their count, *p where they start. */
size_t gw_h2_proxy_req_body(h2_stream_t *st, const char **p);
/** n of those bytes were taken: the client's window opens by n (WINDOW_UPDATE). */
void gw_h2_proxy_req_consume(h2_stream_t *st, size_t n);
/** Has the request body ended (END_STREAM)? */
int gw_h2_proxy_req_done(const h2_stream_t *st);

#define GW_H2_OUT_HIGH (64 * 1024) /* output buffered before nghttp2 is asked to wait */

#endif
