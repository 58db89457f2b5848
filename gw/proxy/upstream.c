#include "proxy/upstream.h"
#include "proxy/upstream_tls.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/list.h"
#include "core/log.h"

static gw_upconn_t *graveyard; /* closed connections, freed after the pass */

void gw_proxy_process(void)
{
    while (graveyard) {
        gw_upconn_t *uc = graveyard;
        graveyard = uc->next;
        free(uc);
    }
}

/* ---- per-worker upstream state ---- */

static gw_upstream_t *ups[2];
static size_t n_ups[2];
static gw_loop_t *loop_;
static const gw_conf_t *conf_;
static const int *stopping_;

void gw_upstream_init(gw_loop_t *loop, const gw_conf_t *conf, const int *stopping)
{
    loop_ = loop;
    conf_ = conf;
    stopping_ = stopping;
}

gw_upstream_t *gw_upstream_get(int stream, int idx)
{
    const gw_conf_t *conf = conf_;
    size_t n = stream ? conf->stream.n_upstreams : conf->http.n_upstreams;
    const gw_upstream_conf_t *v = stream ? conf->stream.upstreams : conf->http.upstreams;
    if (!ups[stream]) {
        ups[stream] = calloc(n ? n : 1, sizeof(gw_upstream_t));
        if (!ups[stream])
            abort();
        n_ups[stream] = n;
    }
    gw_upstream_t *up = &ups[stream][idx];
    if (!up->conf) {
        up->conf = &v[idx];
        up->peers = calloc(v[idx].n_servers, sizeof(gw_peer_rt_t));
        if (!up->peers)
            abort();
    }
    return up;
}

static int peer_usable(const gw_upstream_t *up, int i, int64_t now)
{
    const gw_upstream_server_t *s = &up->conf->servers[i];
    const gw_peer_rt_t *p = &up->peers[i];
    if (up->conf->n_servers == 1)
        return 1; /* nginx: a lone server is never taken out */
    return !(s->max_fails && p->fails >= s->max_fails && now - p->failed_ms < s->fail_timeout_ms);
}

int gw_upstream_pick(gw_upstream_t *up, int exclude)
{
    int64_t now = gw_now_ms();
    size_t n = up->conf->n_servers;
    for (int pass = 0; pass < 2; pass++) {
        for (int allow_excluded = 0; allow_excluded < 2; allow_excluded++) {
            int best = -1, total = 0;
            for (size_t i = 0; i < n; i++) {
                const gw_upstream_server_t *s = &up->conf->servers[i];
                if (s->backup != pass || !peer_usable(up, (int)i, now))
                    continue;
                if ((int)i == exclude && !allow_excluded)
                    continue;
                up->peers[i].current_weight += s->weight;
                total += s->weight;
                if (best < 0 || up->peers[i].current_weight > up->peers[best].current_weight)
                    best = (int)i;
            }
            if (best >= 0) {
                up->peers[best].current_weight -= total;
                return best;
            }
            if (exclude < 0)
                break;
        }
    }
    return -1;
}

void gw_upstream_fail(gw_upstream_t *up, int peer)
{
    const gw_upstream_server_t *s = &up->conf->servers[peer];
    gw_peer_rt_t *p = &up->peers[peer];
    int64_t now = gw_now_ms();
    if (now - p->failed_ms >= s->fail_timeout_ms)
        p->fails = 0; /* failures older than fail_timeout do not add up */
    p->fails++;
    p->failed_ms = now;
    if (s->max_fails && p->fails == s->max_fails && up->conf->n_servers > 1)
        gw_log(GW_LOG_WARN, 0,
               "upstream server %s (upstream \"%s\") is down for %lld ms "
               "after %d failure(s)",
               s->text, up->conf->name, (long long)s->fail_timeout_ms, p->fails);
}

void gw_upstream_ok(gw_upstream_t *up, int peer)
{
    up->peers[peer].fails = 0;
}

/* ---- connections ---- */

static void uc_close(gw_upconn_t *uc)
{
    gw_timer_del(loop_, &uc->timer);
    /* proxy_pass https://; while a job is paused the socket layer keeps the SSL and the
     * socket (out of epoll) until the job ends */
    if (gw_upconn_tls_close(uc) == 0 && uc->fd >= 0)
        close(uc->fd); /* also leaves epoll */
    uc->fd = -1;
    uc->state = 0;
    uc->owner = NULL;
    uc->next = graveyard;
    graveyard = uc;
}

static void pool_unlink(gw_upconn_t *uc)
{
    gw_upstream_t *up = uc->up;
    GW_LIST_UNLINK(up->idle, uc);
    up->n_idle--;
}

static void uc_event(gw_io_t *io, uint32_t events)
{
    gw_upconn_t *uc = (gw_upconn_t *)io;
    if (!uc->state)
        return; /* closed earlier in this batch */
    if (uc->state == GW_UP_IDLE) {
        /* an idle connection has nothing to say: EOF, reset or stray bytes all end it
         * (EPOLLOUT alone is the send buffer draining, and edge-triggered EPOLLIN may
         * report bytes already read: look before closing) */
        if (!(events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
            return;
        char b;
        ssize_t n = recv(uc->fd, &b, 1, MSG_PEEK);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        pool_unlink(uc);
        uc_close(uc);
        return;
    }
    uc->events |= events;
    if (uc->owner)
        gw_post(uc->owner);
}

static void uc_timer(gw_timer_t *t)
{
    gw_upconn_t *uc = (gw_upconn_t *)((char *)t - offsetof(gw_upconn_t, timer));
    if (uc->state == GW_UP_IDLE) {
        pool_unlink(uc); /* keepalive_timeout */
        uc_close(uc);
        return;
    }
    uc->timed_out = 1;
    if (uc->owner)
        gw_post(uc->owner);
}

gw_upconn_t *gw_upconn_get(gw_upstream_t *up, int peer, gw_posted_t *owner)
{
    return gw_upconn_get_ctx(up, peer, owner, NULL);
}

gw_upconn_t *gw_upconn_get_ctx(gw_upstream_t *up, int peer, gw_posted_t *owner, const void *tls_ctx)
{
    for (gw_upconn_t *uc = up->idle; uc; uc = uc->next) {
        if (uc->peer != peer ||
            (uc->ssl ? (const void *)SSL_get_SSL_CTX(uc->ssl) : NULL) != tls_ctx)
            continue;
        pool_unlink(uc);
        gw_timer_del(loop_, &uc->timer);
        uc->state = GW_UP_READY;
        uc->reused = 1;
        uc->owner = owner;
        uc->events = 0;
        uc->timed_out = 0;
        return uc;
    }
    const gw_upstream_server_t *s = &up->conf->servers[peer];
    int fd = socket(s->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        gw_log(GW_LOG_ERROR, errno, "socket() for upstream %s failed", s->text);
        return NULL;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    int state = GW_UP_READY;
    if (connect(fd, (const struct sockaddr *)&s->addr, s->addrlen) != 0) {
        if (errno != EINPROGRESS) {
            int e = errno;
            gw_log(GW_LOG_ERROR, e, "connect() to upstream %s failed", s->text);
            close(fd);
            gw_upstream_fail(up, peer);
            errno = e;
            return NULL;
        }
        state = GW_UP_CONNECTING;
    }
    gw_upconn_t *uc = calloc(1, sizeof(*uc));
    if (!uc)
        abort();
    uc->io.handler = uc_event;
    uc->fd = fd;
    uc->state = state;
    uc->up = up;
    uc->peer = peer;
    uc->owner = owner;
    uc->timer.cb = uc_timer;
    if (gw_loop_add(loop_, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, &uc->io) != 0) {
        int e = errno;
        gw_log(GW_LOG_ALERT, e, "epoll_ctl(ADD) of an upstream connection failed");
        close(fd);
        free(uc);
        errno = e;
        return NULL;
    }
    up->connects++;
    return uc;
}

int gw_upconn_connected(gw_upconn_t *uc)
{
    if (uc->state != GW_UP_CONNECTING)
        return 1;
    if (!(uc->events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
        return 0;
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(uc->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    if (err) {
        errno = err;
        return -1;
    }
    uc->state = GW_UP_READY;
    return 1;
}

void gw_upconn_timer(gw_upconn_t *uc, int64_t ms)
{
    if (ms > 0)
        gw_timer_add(loop_, &uc->timer, ms);
    else
        gw_timer_del(loop_, &uc->timer);
}

void gw_upconn_release(gw_upconn_t *uc, int reuse)
{
    gw_upstream_t *up = uc->up;
    const gw_upstream_conf_t *cf = up->conf;
    if (!reuse || cf->keepalive == 0 || uc->requests >= (unsigned)cf->keepalive_requests ||
        *stopping_ || uc->state != GW_UP_READY) {
        uc_close(uc);
        return;
    }
    if (up->n_idle >= cf->keepalive) {
        gw_upconn_t *old = up->idle;
        while (old->next)
            old = old->next;
        pool_unlink(old);
        uc_close(old);
    }
    uc->state = GW_UP_IDLE;
    uc->owner = NULL;
    uc->events = 0;
    uc->timed_out = 0;
    GW_LIST_PUSH(up->idle, uc);
    up->n_idle++;
    gw_timer_add(loop_, &uc->timer, cf->keepalive_timeout_ms);
}

void gw_upstream_close_idle(void)
{
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < n_ups[k]; i++) {
            gw_upstream_t *up = &ups[k][i];
            while (up->idle) {
                gw_upconn_t *uc = up->idle;
                pool_unlink(uc);
                uc_close(uc);
            }
        }
    }
}
