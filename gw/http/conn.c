/*
 * Client connections: the accept, the choice of protocol when the handshake ends (ALPN,
 * RFC 7301: "h2" -> HTTP/2, else HTTP/1.1; a stream server relays raw bytes), the
 * stub_status gauges, and a worker's graceful stop.
 */
#include "http/conn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/list.h"
#include "core/log.h"
#include "core/stats.h"
#include "net/limits.h"
#include "net/listen.h"
#include "net/proxy_protocol.h"
#include "proxy/stream.h"

#define SHUTDOWN_IDLE_MS 1000 /* graceful stop: an idle keep-alive client gets this long */

void gw_conn_set_stat(gw_conn_t *c, int st)
{
    if (c->stat_state == st)
        return;
    switch (c->stat_state) {
    case GW_ST_READING:
        GW_WSTAT_ADD(reading, -1);
        break;
    case GW_ST_WRITING:
        GW_WSTAT_ADD(writing, -1);
        break;
    case GW_ST_WAITING:
        GW_WSTAT_ADD(waiting, -1);
        break;
    }
    switch (st) {
    case GW_ST_READING:
        GW_WSTAT_ADD(reading, 1);
        break;
    case GW_ST_WRITING:
        GW_WSTAT_ADD(writing, 1);
        break;
    case GW_ST_WAITING:
        GW_WSTAT_ADD(waiting, 1);
        break;
    }
    c->stat_state = st;
}

/* The protocol of a connection whose handshake (or accept, on plain TCP) is done. */
static void choose_protocol(gw_conn_t *c)
{
    if (c->laddr->stream) {
        gw_stream_start(c); /* sets the stream protocol and its own timeouts */
        return;
    }
    if (c->s.ssl) {
        const unsigned char *p = NULL;
        unsigned len = 0;
        SSL_get0_alpn_selected(c->s.ssl, &p, &len);
        if (len == 2 && memcmp(p, "h2", 2) == 0) {
            gw_h2_start(c); /* RFC 9113 §3.2 */
            return;
        }
    }
    gw_h1_start(c);
}

static void on_handshake_done(gw_sock_t *s)
{
    gw_conn_t *c = (gw_conn_t *)s;
    if (c->s.timer.idx && c->s.timer.when < c->header_deadline_ms) {
        /* the ssl_handshake_timeout ran: the head's deadline is still the one counted
         * from the accept, whatever the handshake took */
        int64_t left = c->header_deadline_ms - gw_now_ms();
        gw_sock_timer(&c->s, left > 0 ? left : 0);
    }
    choose_protocol(c);
}

static void on_freed(gw_sock_t *s)
{
    gw_conn_t *c = (gw_conn_t *)s;
    gw_conn_env_t *env = c->env;
    gw_conn_set_stat(c, GW_ST_NONE);
    gw_limit_conn_release(c->ipc);
    c->ipc = NULL;
    GW_LIST_UNLINK(env->conns, c);
    free(c);
    GW_WSTAT_ADD(conns, -1);
    int was_full = env->n_conns >= env->max_conns;
    env->n_conns--;
    if (was_full && !env->shutting_down)
        env->accepting(1);
}

/* listen ... proxy_protocol: the header comes before anything else (http/access.c) */
static int on_preface(gw_sock_t *s)
{
    gw_conn_t *c = (gw_conn_t *)s;
    int r = gw_access_proxy_protocol(c);
    if (r > 0 && !c->s.ssl)
        choose_protocol(c); /* a stream relay names the client in its own PROXY header */
    return r;
}

static void on_preface_timeout(gw_sock_t *s)
{
    gw_log(GW_LOG_INFO, 0, "client %s timed out sending the PROXY protocol header", s->peer_text);
    gw_pp_discard(s->fd); /* what came of the header: a FIN, not a reset */
}

static const gw_sock_owner_t conn_owner = {on_handshake_done, on_freed, on_preface,
                                           on_preface_timeout};

void gw_conn_accepted(gw_conn_env_t *env, gw_laddr_t *laddr, int fd, const struct sockaddr *peer,
                      socklen_t plen)
{
    gw_ipcount_t *ipc = NULL;
    int lim = laddr->default_server->conf->srv.limit_conn_per_ip;
    if (gw_limit_conn_take(peer, plen, lim, &ipc) == 0) {
        char text[64];
        gw_addr_text(peer, text, sizeof(text));
        gw_log(GW_LOG_WARN, 0, "limiting connections of client %s to %d (limit_conn_per_ip)", text,
               lim);
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
    c->env = env;
    c->ipc = ipc;
    c->laddr = laddr;
    c->vs = laddr->default_server;
    gw_addr_text(peer, c->s.peer_text, sizeof(c->s.peer_text));
    gw_vars_accepted(c, peer, plen); /* http/vars.h */
    c->s.preface = laddr->listen && laddr->listen->proxy_protocol;
    const gw_srv_settings_t *s = gw_conn_srv(c);
    c->s.send_timeout_ms = s->send_timeout_ms;
    c->in_max = (size_t)s->large_header_buffers_num * (size_t)s->large_header_buffers_size;
    if (c->in_max < (size_t)s->client_header_buffer_size)
        c->in_max = (size_t)s->client_header_buffer_size;

    /* TCP_NODELAY comes from the listener (gw_listen_open) */
    GW_LIST_PUSH(env->conns, c);
    env->n_conns++;
    GW_WSTAT_ADD(conns, 1);
    GW_STAT_ADD(handled, 1);
    gw_conn_set_stat(c, GW_ST_READING);

    int afd = c->vs->conf->srv.ssl_async_notify == GW_ASYNC_NOTIFY_FD;
    int r =
        gw_sock_open(&c->s, env->loop, fd, laddr->ssl ? c->vs->ssl_ctx : NULL, afd, &conn_owner, c);
    if (r != 0) {
        gw_sock_close(&c->s);
        return;
    }
    if (!laddr->ssl && !c->s.preface) /* else after the PROXY header (on_preface) */
        choose_protocol(c);
    /* Absolute deadlines from the accept, whatever the client trickles: the handshake
     * (ssl_handshake_timeout) and the handshake plus the first head (client_header_timeout,
     * as nginx); reads never re-arm them. */
    c->header_deadline_ms = gw_now_ms() + s->client_header_timeout_ms;
    int64_t first = s->client_header_timeout_ms;
    if (laddr->ssl && s->ssl_handshake_timeout_ms < first)
        first = s->ssl_handshake_timeout_ms;
    if (!c->stream) /* a stream server arms its own */
        gw_sock_timer(&c->s, first);
    if (env->n_conns >= env->max_conns)
        env->accepting(0);
    /* Not driven here: epoll reports the ClientHello (edge-triggered registration of a
     * socket that already has data reports it at the next wait), so accepting never
     * runs ahead of the connections that are already waiting for us. */
}

void gw_conn_shutdown_all(gw_conn_env_t *env, int graceful)
{
    gw_conn_t *c = env->conns;
    while (c) {
        gw_conn_t *next = c->next;
        if (!graceful) {
            gw_sock_close(&c->s);
        } else if (c->h2) {
            gw_h2_shutdown(c); /* GOAWAY; the open streams are answered */
        } else if (c->s.proto == &gw_h1_proto && c->state == GW_CONN_READ_HEAD &&
                   c->s.in_len == 0) {
            /* Idle keep-alive: a request may be on its way. Give the client a moment, so
             * that the request is answered (with "Connection: close") instead of cut. */
            int64_t left = c->s.timer.idx ? c->s.timer.when - gw_now_ms() : SHUTDOWN_IDLE_MS;
            if (left > SHUTDOWN_IDLE_MS)
                gw_sock_timer(&c->s, SHUTDOWN_IDLE_MS);
        }
        c = next;
    }
}
