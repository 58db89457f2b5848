/*
 * TLS on upstream connections (proxy_pass https://, issue #23): the client side of the
 * handshake, non-blocking on the worker's loop after the TCP connect, the name sent (SNI)
 * and checked, one cached session per upstream server and location context (per worker,
 * proxy_ssl_session_reuse), and the reads and writes of an upstream connection whether it
 * is TLS or plain TCP.
 */
#ifndef GW_PROXY_UPSTREAM_TLS_H
#define GW_PROXY_UPSTREAM_TLS_H

#include <sys/types.h>

#include <openssl/ssl.h>

#include "proxy/upstream.h"

/**
 * Start TLS on a new connection uc (before or while its TCP connect completes) with
 * location settings d (d->proxy_ssl_ctx is the context) toward host (the proxy_pass host,
 * a port after ':' is ignored): SNI when proxy_ssl_server_name is on and the name is not
 * an IP address, the name checked with proxy_ssl_verify, the cached session offered.
 * Returns 0, or -1 (out of memory: logged).
 */
int gw_upconn_tls_start(gw_upconn_t *uc, const gw_deploy_loc_t *d, const char *host);

/**
 * Drive the handshake of uc (after gw_upconn_connected said 1). Returns 1 done, 0 to wait
 * for an event or, with ssl_async on, for the paused job's wake (which runs uc's owner),
 * -1 failed (logged with the reason: the certificate's verify error, an alert, the peer
 * closing).
 */
int gw_upconn_tls_handshake(gw_upconn_t *uc);

/** send(2) on uc, through TLS when it has it: > 0 bytes written, -1 with errno (EAGAIN:
 * wait for an event; EPIPE: the upstream is gone). */
ssize_t gw_upconn_send(gw_upconn_t *uc, const void *buf, size_t len);

/** recv(2) on uc, through TLS when it has it: > 0 bytes, 0 at the end (FIN or
 * close_notify), -1 with errno (EAGAIN: wait; ECONNRESET: reset or a TLS error). */
ssize_t gw_upconn_recv(gw_upconn_t *uc, void *buf, size_t len);

/** End the direction toward the upstream: close_notify through TLS (one non-blocking
 * attempt), else shutdown(SHUT_WR). */
void gw_upconn_shutdown_write(gw_upconn_t *uc);

/** uc is being closed: send close_notify once if the handshake was done (never waits),
 * free the SSL. Called by the pool (upstream.c). Returns 0, or 1 when the handshake's
 * async job is paused: the socket layer took the SSL and uc->fd (out of epoll) and frees
 * them when the job ends (uc->ssl and uc->fd are then reset; do not close the fd). */
int gw_upconn_tls_close(gw_upconn_t *uc);

/** Install the session callback (worker start). */
void gw_upconn_tls_init(void);

#endif
