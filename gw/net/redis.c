#include "net/redis.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/stats.h"
#include "conf/conf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000
#define SLOW_MS 1000
#define LOG_EVERY_MS 10000
#define CONNECT_TIMEOUT_MS 1000 /* hiredis 0.14's async connect has none */

enum { IDLE, CONNECTING, READY };

struct gw_redis {
    gw_io_t io; /* first: epoll dispatch */
    char *url;
    char host[256];
    int port, db;
    gw_loop_t *loop;
    redisAsyncContext *ac;
    int state;
    int fd;             /* registered with epoll, or -1 */
    uint32_t events;    /* EPOLLIN / EPOLLOUT wanted by hiredis */
    int64_t retry_at;   /* monotonic ms: no connect before */
    int64_t connect_at; /* monotonic ms: when the current connect began */
    int64_t backoff_ms;
    int64_t slow_until;
    int64_t last_log;
    uint64_t unlogged; /* failures since the last log line */
    struct gw_redis *next;
};

static gw_redis_t *clients;

static void note_failure(gw_redis_t *r, const char *what)
{
    GW_STAT_ADD(redis_errors, 1);
    r->unlogged++;
    int64_t now = gw_clock_mono_us() / 1000;
    if (r->last_log == 0 || now - r->last_log >= LOG_EVERY_MS) {
        gw_log(GW_LOG_ERROR, 0,
               "redis %s:%d: %s (%llu failure(s) since the last report); "
               "handshakes go on without it",
               r->host, r->port, what, (unsigned long long)r->unlogged);
        r->last_log = now;
        r->unlogged = 0;
    }
}

void gw_redis_failed(gw_redis_t *r, const char *what)
{
    note_failure(r, what);
    r->slow_until = gw_clock_mono_us() / 1000 + SLOW_MS;
}

/* ---- the epoll adapter (hiredis ev hooks) ---- */

static void update_events(gw_redis_t *r, uint32_t ev)
{
    if (!r->ac || ev == r->events)
        return;
    int fd = r->ac->c.fd;
    struct epoll_event e = {.events = ev, .data.ptr = &r->io};
    if (r->fd < 0) {
        if (ev && epoll_ctl(r->loop->epfd, EPOLL_CTL_ADD, fd, &e) == 0)
            r->fd = fd;
    } else {
        /* with no events it stays registered (cheaper than DEL/ADD per request) */
        epoll_ctl(r->loop->epfd, EPOLL_CTL_MOD, fd, &e);
    }
    r->events = ev;
}

/* hiredis's addRead, delRead, addWrite, delWrite: one event bit of p (a gw_redis_t) on or off */
static void set_event(void *p, uint32_t bit, int on)
{
    gw_redis_t *r = p;
    update_events(r, on ? r->events | bit : r->events & ~bit);
}

#define EV_HOOK(name, bit, on)                                                                     \
    static void name(void *p)                                                                      \
    {                                                                                              \
        set_event(p, bit, on);                                                                     \
    }
EV_HOOK(ev_add_read, EPOLLIN, 1)
EV_HOOK(ev_del_read, EPOLLIN, 0)
EV_HOOK(ev_add_write, EPOLLOUT, 1)
EV_HOOK(ev_del_write, EPOLLOUT, 0)
#undef EV_HOOK

static void ev_cleanup(void *p)
{
    gw_redis_t *r = p;
    if (r->fd >= 0)
        epoll_ctl(r->loop->epfd, EPOLL_CTL_DEL, r->fd, NULL);
    r->fd = -1;
    r->events = 0;
}

static void on_io(gw_io_t *io, uint32_t events)
{
    gw_redis_t *r = (gw_redis_t *)io;
    if (!r->ac)
        return;
    /* hiredis may free the context inside (connection lost): re-check between calls */
    if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
        redisAsyncHandleRead(r->ac);
    if (r->ac && (events & EPOLLOUT))
        redisAsyncHandleWrite(r->ac);
}

static void schedule_retry(gw_redis_t *r)
{
    r->state = IDLE;
    r->ac = NULL;
    r->retry_at = gw_clock_mono_us() / 1000 + r->backoff_ms;
    r->backoff_ms = r->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : r->backoff_ms * 2;
}

/* note_failure with hiredis's reason: "WHAT: ac->errstr" */
static void note_ac_failure(gw_redis_t *r, const redisAsyncContext *ac, const char *what)
{
    char why[300];
    snprintf(why, sizeof(why), "%s: %s", what, ac->errstr);
    note_failure(r, why);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    gw_redis_t *r = ac->data;
    if (status != REDIS_OK) {
        note_ac_failure(r, ac, "cannot connect");
        schedule_retry(r); /* hiredis frees ac after this callback */
        return;
    }
    r->state = READY;
    r->backoff_ms = BACKOFF_MIN_MS;
    gw_log(GW_LOG_INFO, 0, "redis %s:%d: connected", r->host, r->port);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    gw_redis_t *r = ac->data;
    if (status != REDIS_OK)
        note_ac_failure(r, ac, "connection lost");
    schedule_retry(r);
}

static void start_connect(gw_redis_t *r)
{
    redisAsyncContext *ac = redisAsyncConnect(r->host, r->port);
    if (!ac) {
        note_failure(r, "out of memory");
        schedule_retry(r);
        return;
    }
    if (ac->err) {
        char what[300];
        snprintf(what, sizeof(what), "cannot connect: %s", ac->errstr);
        redisAsyncFree(ac);
        note_failure(r, what);
        schedule_retry(r);
        return;
    }
    r->ac = ac;
    r->state = CONNECTING;
    r->connect_at = gw_clock_mono_us() / 1000;
    r->fd = -1;
    r->events = 0;
    r->io.handler = on_io;
    ac->data = r;
    ac->ev.data = r;
    ac->ev.addRead = ev_add_read;
    ac->ev.delRead = ev_del_read;
    ac->ev.addWrite = ev_add_write;
    ac->ev.delWrite = ev_del_write;
    ac->ev.cleanup = ev_cleanup;
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    /* the connect completes on the first writable event */
    ev_add_write(r);
    if (r->db)
        redisAsyncCommand(ac, NULL, NULL, "SELECT %d", r->db);
}

gw_redis_t *gw_redis_get(const char *url, gw_loop_t *loop)
{
    for (gw_redis_t *r = clients; r; r = r->next)
        if (strcmp(r->url, url) == 0 && r->loop == loop)
            return r;
    gw_redis_t *r = calloc(1, sizeof(*r));
    if (!r)
        abort();
    char why[256];
    if (gw_conf_parse_redis_url(url, r->host, sizeof(r->host), &r->port, &r->db, why,
                                sizeof(why)) != 0) {
        free(r);
        return NULL;
    }
    r->url = strdup(url);
    if (!r->url)
        abort();
    r->loop = loop;
    r->fd = -1;
    r->backoff_ms = BACKOFF_MIN_MS;
    r->next = clients;
    clients = r;
    return r;
}

int gw_redis_ready(gw_redis_t *r)
{
    int64_t now = gw_clock_mono_us() / 1000;
    if (r->state == CONNECTING && now - r->connect_at >= CONNECT_TIMEOUT_MS) {
        /* a host that drops SYNs: give up now rather than after the kernel's retries */
        redisAsyncContext *ac = r->ac;
        note_failure(r, "connect timed out");
        schedule_retry(r); /* r->ac = NULL first: no callback of ours runs for it */
        ac->onConnect = NULL;
        ac->onDisconnect = NULL;
        redisAsyncFree(ac);
    }
    if (r->state == IDLE && now >= r->retry_at)
        start_connect(r);
    return r->state == READY && now >= r->slow_until;
}

/* hiredis's callback shape -> ours */
typedef struct cmd {
    void (*cb)(void *reply, void *priv);
    void *priv;
} cmd_t;

static void on_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
    cmd_t *c = privdata;
    c->cb(reply, c->priv);
    free(c);
}

int gw_redis_command(gw_redis_t *r, void (*cb)(void *reply, void *priv), void *priv,
                     const char *fmt, ...)
{
    if (r->state != READY || !r->ac)
        return -1;
    cmd_t *c = NULL;
    if (cb) {
        c = malloc(sizeof(*c));
        if (!c)
            return -1;
        c->cb = cb;
        c->priv = priv;
    }
    va_list ap;
    va_start(ap, fmt);
    int rc = redisvAsyncCommand(r->ac, cb ? on_reply : NULL, c, fmt, ap);
    va_end(ap);
    if (rc != REDIS_OK) {
        free(c);
        return -1;
    }
    /* write now rather than on the next EPOLLOUT: a session stored here must reach Redis
     * before its client, already reconnecting to another gateway, is looked up there;
     * and a lookup saves a loop pass. A write error disconnects: the pending callbacks,
     * this one included, then run from here with a NULL reply. */
    redisAsyncHandleWrite(r->ac);
    return 0;
}
