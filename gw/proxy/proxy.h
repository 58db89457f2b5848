/*
 * The HTTP reverse proxy (`proxy_pass`), as nginx's ngx_http_proxy_module with
 * `proxy_http_version 1.1` and `proxy_request_buffering off` / `proxy_buffering off`:
 * the request head is rewritten (hop-by-hop fields dropped, proxy_set_header applied,
 * one framing of ours), the body is streamed up and the response streamed down through
 * bounded buffers, each side waiting for the other (back-pressure both ways), never
 * holding a whole body. See docs/proxy.md.
 */
#ifndef GW_PROXY_PROXY_H
#define GW_PROXY_PROXY_H

#include <stddef.h>

#include "conf/conf.h"

struct gw_conn;

/**
 * Take over the request c->req of client c (its head was parsed; c->in holds the head
 * followed by any body bytes already received) for location loc, whose proxy_pass is
 * set. norm/norm_len: the normalised request path the location matched (used when
 * proxy_pass has a URI). Sets c->state to GW_CONN_PROXY; on an error that needs no
 * upstream (none usable) an error response is queued instead and the state is left for
 * the caller (GW_CONN_WRITE).
 */
void gw_proxy_start(struct gw_conn *c, const gw_location_t *loc, const char *norm, size_t norm_len);

/**
 * Make progress on c's proxied request: connect, send the head and the body, read and
 * forward the response, in both directions until each blocks. Returns 0 to wait for an
 * event, 1 when the response has been queued completely (c->state is GW_CONN_WRITE and
 * the proxy state is gone), -1 when the client connection must be closed (client gone,
 * or the upstream failed after the response head was forwarded).
 */
int gw_proxy_drive(struct gw_conn *c);

/** Client c is being freed: cancel its upstream request (the upstream connection is
 * closed, never pooled) and free the proxy state. */
void gw_proxy_conn_free(struct gw_conn *c);

struct h2_stream;
struct gw_proxy;

/** Proxy the request of HTTP/2 stream st (http/h2.h) as gw_proxy_start does for an
 * HTTP/1.1 connection: the request body comes from the stream's DATA (the client's window
 * opens as the upstream takes it), the answer goes out as HEADERS and DATA under the
 * client's flow control (the upstream is not read while 64 KiB wait for the client). */
void gw_proxy_start_h2(struct h2_stream *st, const gw_location_t *loc, const char *norm,
                       size_t norm_len);

/** Drive p after the loop's events (HTTP/2: request body bytes or room arrived). */
void gw_proxy_wake(struct gw_proxy *p);

/** p's HTTP/2 stream is closing (reset by the client, the connection gone): cancel. */
void gw_proxy_stream_free(struct gw_proxy *p);

#endif
