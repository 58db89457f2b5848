#include "proxy/stream.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "core/log.h"
#include "http/conn.h"
#include "net/proxy_protocol.h"
#include "proxy/upstream.h"
#include "proxy/upstream_tls.h"

#define UP_BUF (64 * 1024)    /* client bytes waiting for the upstream */
#define DOWN_HIGH (64 * 1024) /* upstream bytes waiting for the client */

typedef struct gw_stream {
    gw_posted_t post;
    gw_conn_t *c;
    const gw_stream_server_t *conf;
    gw_upstream_t *up;
    gw_upconn_t *uc;
    int peer, tries;
    char *buf; /* client -> upstream */
    size_t len, off;
    int client_eof;  /* the client ended its direction */
    int up_shut;     /* ... and the upstream was told (SHUT_WR) */
    int up_eof;      /* the upstream ended its direction */
    int client_shut; /* ... and the client was told (close_notify / SHUT_WR) */
    size_t pp_len;   /* proxy_protocol on: header bytes at the start of buf, sent
                                 in the clear before TLS (proxy_ssl on) */
} gw_stream_t;

/* `proxy_protocol on`: the v1 header naming the client (the PROXY header's address when
 * the listener had one, else the TCP peer) and the address the client connected to. */
static size_t pp_header(gw_conn_t *c, char *out, size_t cap)
{
    struct sockaddr_storage src = {0}, dst = {0};
    socklen_t dl = sizeof(dst);
    if (getsockname(c->s.fd, (struct sockaddr *)&dst, &dl) != 0)
        dst.ss_family = AF_UNSPEC;
    const gw_conn_vars_t *v = &c->v;
    int fam = v->pp_family ? v->pp_family : v->tcp_family;
    const unsigned char *a = v->pp_family ? v->pp_addr : v->tcp_addr;
    int port = v->pp_family ? v->pp_port : v->tcp_port;
    if (fam == AF_INET && dst.ss_family == AF_INET6) {
        /* an IPv4 client on an IPv6 socket: named IPv4-mapped, in the same family */
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&src;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        s6->sin6_addr.s6_addr[10] = s6->sin6_addr.s6_addr[11] = 0xff;
        memcpy(&s6->sin6_addr.s6_addr[12], a, 4);
    } else if (fam == AF_INET6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&src;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        memcpy(&s6->sin6_addr, a, 16);
    } else if (fam == AF_INET) {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&src;
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        memcpy(&s4->sin_addr, a, 4);
    }
    return gw_pp_write_v1(out, cap, (struct sockaddr *)&src, (struct sockaddr *)&dst);
}

static void on_posted(gw_posted_t *pp)
{
    gw_stream_t *s = (gw_stream_t *)((char *)pp - offsetof(gw_stream_t, post));
    gw_conn_resume(s->c);
}

const char *gw_stream_timeout_text(const gw_conn_t *c)
{
    return "timed out (proxy_timeout: no data either way)";
}

static void idle_timer(gw_stream_t *s)
{
    gw_sock_timer(&s->c->s, s->conf->proxy_timeout_ms);
}

/* Connect to the next usable server. 0, or -1 when none is left. */
static int start_connect(gw_stream_t *s)
{
    size_t n = s->up->conf->n_servers;
    while (s->tries < (int)n) {
        int peer = gw_upstream_pick(s->up, s->peer);
        if (peer < 0)
            break;
        s->peer = peer;
        s->tries++;
        const gw_deploy_loc_t *tls = &s->conf->server.loc.dep; /* proxy_ssl on */
        gw_upconn_t *uc = gw_upconn_get_ctx(s->up, peer, &s->post, tls->proxy_ssl_ctx);
        if (uc && tls->proxy_ssl_ctx && !uc->ssl &&
            gw_upconn_tls_start(uc, tls, s->up->conf->servers[peer].text) != 0) {
            gw_upconn_release(uc, 0);
            uc = NULL;
        }
        if (!uc)
            continue;
        s->uc = uc;
        gw_upconn_timer(uc, uc->state == GW_UP_CONNECTING || uc->ssl
                                ? s->conf->proxy_connect_timeout_ms /* and the TLS handshake */
                                : 0);
        return 0;
    }
    gw_log(GW_LOG_ERROR, 0, "stream client %s: no upstream server of \"%s\" could be reached",
           s->c->s.peer_text, s->up->conf->name);
    return -1;
}

static void stream_drive(gw_sock_t *sk)
{
    if (gw_stream_drive((gw_conn_t *)sk) < 0)
        gw_sock_close(sk);
}

static void stream_timeout(gw_sock_t *sk)
{
    gw_conn_t *c = (gw_conn_t *)sk;
    gw_log(GW_LOG_INFO, 0, "stream connection of client %s %s", c->s.peer_text,
           gw_stream_timeout_text(c));
    gw_sock_close(sk);
}

static void stream_release(gw_sock_t *sk)
{
    gw_conn_t *c = (gw_conn_t *)sk;
    if (c->stream)
        gw_stream_conn_free(c);
}

/* raw stream: bytes relayed both ways (the socket layer below, a TCP upstream above) */
static const gw_sock_proto_t stream_proto = {"stream", stream_drive, stream_timeout,
                                             stream_release};

void gw_stream_start(gw_conn_t *c)
{
    gw_stream_t *s = calloc(1, sizeof(*s));
    if (!s)
        abort();
    s->post.run = on_posted;
    s->c = c;
    s->conf = c->laddr->stream;
    s->up = gw_upstream_get(1, s->conf->upstream);
    s->peer = -1;
    s->buf = malloc(UP_BUF);
    if (!s->buf)
        abort();
    if (s->conf->server.srv.dep.stream_proxy_protocol)
        s->len = s->pp_len = pp_header(c, s->buf, UP_BUF); /* before the client's bytes */
    c->stream = s;
    c->state = GW_CONN_STREAM;
    c->s.proto = &stream_proto;
    idle_timer(s);
    if (start_connect(s) != 0)
        s->tries = -1; /* the first drive closes */
}

void gw_stream_conn_free(gw_conn_t *c)
{
    gw_stream_t *s = c->stream;
    gw_unpost(&s->post);
    if (s->uc)
        gw_upconn_release(s->uc, 0);
    free(s->buf);
    free(s);
    c->stream = NULL;
}

/* The connect failed or timed out: the next server, or give up. */
static int connect_failed(gw_stream_t *s, const char *what)
{
    gw_log(GW_LOG_ERROR, what[0] == 't' ? 0 : errno, "stream upstream %s %s (client %s)",
           s->up->conf->servers[s->peer].text, what, s->c->s.peer_text);
    gw_upstream_fail(s->up, s->peer);
    gw_upconn_release(s->uc, 0);
    s->uc = NULL;
    return start_connect(s);
}

int gw_stream_drive(gw_conn_t *c)
{
    gw_stream_t *s = c->stream;
    if (s->tries < 0)
        return -1;
    for (int passes = 0;; passes++) {
        if (passes == GW_PROXY_MAX_PASSES) {
            gw_post(&s->post); /* yield: go on after the loop's next events */
            return 0;
        }
        int progress = 0;
        gw_upconn_t *uc = s->uc;
        if (uc->timed_out) {
            uc->timed_out = 0;
            if (connect_failed(s, "timed out connecting") != 0)
                return -1;
            continue;
        }
        if (uc->state == GW_UP_CONNECTING) {
            int r = gw_upconn_connected(uc);
            if (r < 0) {
                if (connect_failed(s, "refused or failed the connection") != 0)
                    return -1;
                continue;
            }
            if (r == 0)
                return 0;
            if (!uc->ssl)
                gw_upconn_timer(uc, 0);
            gw_upstream_ok(s->up, s->peer);
        }
        if (uc->ssl && !uc->tls_done) {               /* proxy_ssl on: proxy/upstream_tls.c */
            while (s->pp_len && s->off < s->pp_len) { /* the PROXY header, in the clear */
                ssize_t n = send(uc->fd, s->buf + s->off, s->pp_len - s->off, MSG_NOSIGNAL);
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                    return 0;
                if (n <= 0)
                    return -1;
                s->off += (size_t)n;
            }
            int r = gw_upconn_tls_handshake(uc); /* within proxy_connect_timeout */
            if (r < 0) {
                gw_upstream_fail(s->up, s->peer);
                return -1;
            }
            if (r == 0)
                return 0;
            gw_upconn_timer(uc, 0);
            progress = 1;
        }
        /* client -> upstream */
        while (!s->up_shut) {
            if (s->off == s->len) {
                s->off = s->len = 0;
                if (s->client_eof) {
                    gw_upconn_shutdown_write(uc); /* pass the half-close on */
                    s->up_shut = 1;
                    break;
                }
                size_t got = 0;
                int r = gw_conn_recv(c, s->buf, UP_BUF, &got);
                if (r == GW_CONN_IO_AGAIN) {
                    if (c->s.async_paused || c->s.async_retry)
                        return 0;
                    break;
                }
                if (r != GW_CONN_IO_OK) {
                    s->client_eof = 1;
                    progress = 1;
                    continue;
                }
                s->len = got;
                progress = 1;
            }
            ssize_t n = gw_upconn_send(uc, s->buf + s->off, s->len - s->off);
            if (n > 0) {
                s->off += (size_t)n;
                progress = 1;
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EINTR))
                break;
            return -1; /* the upstream reset: nothing more can be relayed */
        }
        /* upstream -> client */
        while (!s->up_eof && c->s.out_len - c->s.out_off < DOWN_HIGH) {
            char tmp[16384];
            ssize_t n = gw_upconn_recv(uc, tmp, sizeof(tmp));
            if (n > 0) {
                gw_resp_append(c, tmp, (size_t)n);
                progress = 1;
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EINTR))
                break;
            if (n < 0 && errno != ECONNRESET)
                return -1;
            s->up_eof = 1;
            progress = 1;
        }
        if (c->s.out_len > c->s.out_off) {
            if (gw_conn_flush_progress(c, &progress) < 0)
                return -1;
            if (c->s.async_paused || c->s.async_retry)
                return 0;
        }
        if (s->up_eof && !s->client_shut && c->s.out_len == c->s.out_off) {
            int r = gw_conn_close_notify(c);
            if (r < 0)
                return -1;
            if (r == 0)
                return 0;
            s->client_shut = 1;
            progress = 1;
        }
        if (s->client_shut && s->up_shut)
            return -1; /* both directions ended */
        if (progress)
            idle_timer(s);
        else
            return 0;
    }
}
