/*
 * TCP stream proxy (`stream { server { listen ... ssl; proxy_pass ...; } }`), as nginx's
 * ngx_stream_proxy_module: after the TLS handshake (done by the client connection's state
 * machine in gw/http/conn.c, with ssl_async) bytes are relayed both ways through bounded
 * buffers. A half-close is passed on (client EOF or close_notify -> shutdown(SHUT_WR) on
 * the upstream; upstream EOF -> close_notify, or SHUT_WR for plain TCP) and the
 * connection closes when both directions have ended. proxy_connect_timeout bounds the
 * connect (then the next server is tried), proxy_timeout the idle time between two
 * transfers in either direction.
 */
#ifndef GW_PROXY_STREAM_H
#define GW_PROXY_STREAM_H

struct gw_conn;

/** Client c of a stream server finished its handshake (or was accepted, plain TCP):
 * set up the relay; c->state becomes GW_CONN_STREAM. */
void gw_stream_start(struct gw_conn *c);

/** Relay what can be relayed. 0: wait for events; -1: close c (both directions ended,
 * an error, or no upstream could be reached). */
int gw_stream_drive(struct gw_conn *c);

/** c is being freed: close its upstream connection and free the relay. */
void gw_stream_conn_free(struct gw_conn *c);

/** What the client's timer expiring means now, for the log ("timed out connecting ..."). */
const char *gw_stream_timeout_text(const struct gw_conn *c);

#endif
