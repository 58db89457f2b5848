#include "net/loop.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "core/clock.h"

#define MAX_EVENTS 512

int gw_loop_init(gw_loop_t *loop)
{
    loop->epfd = epoll_create1(EPOLL_CLOEXEC);
    loop->heap = NULL;
    loop->n = loop->cap = 0;
    return loop->epfd < 0 ? -1 : 0;
}

void gw_loop_dispose(gw_loop_t *loop)
{
    if (loop->epfd >= 0)
        close(loop->epfd);
    loop->epfd = -1;
    for (size_t i = 0; i < loop->n; i++)
        loop->heap[i]->idx = 0;
    free(loop->heap);
    loop->heap = NULL;
    loop->n = loop->cap = 0;
}

static int ctl(gw_loop_t *loop, int op, int fd, uint32_t events, gw_io_t *io)
{
    struct epoll_event ev = {.events = events, .data.ptr = io};
    return epoll_ctl(loop->epfd, op, fd, &ev);
}

int gw_loop_add(gw_loop_t *loop, int fd, uint32_t events, gw_io_t *io)
{
    return ctl(loop, EPOLL_CTL_ADD, fd, events, io);
}

int gw_loop_del(gw_loop_t *loop, int fd)
{
    return ctl(loop, EPOLL_CTL_DEL, fd, 0, NULL);
}

/* heap helpers: idx is 1-based position */
static void heap_set(gw_loop_t *loop, size_t pos, gw_timer_t *t)
{
    loop->heap[pos] = t;
    t->idx = pos + 1;
}

static void sift_up(gw_loop_t *loop, size_t pos)
{
    gw_timer_t *t = loop->heap[pos];
    while (pos > 0) {
        size_t parent = (pos - 1) / 2;
        if (loop->heap[parent]->when <= t->when)
            break;
        heap_set(loop, pos, loop->heap[parent]);
        pos = parent;
    }
    heap_set(loop, pos, t);
}

static void sift_down(gw_loop_t *loop, size_t pos)
{
    gw_timer_t *t = loop->heap[pos];
    for (;;) {
        size_t l = 2 * pos + 1, r = l + 1, m = pos;
        int64_t mw = t->when;
        if (l < loop->n && loop->heap[l]->when < mw) {
            m = l;
            mw = loop->heap[l]->when;
        }
        if (r < loop->n && loop->heap[r]->when < mw)
            m = r;
        if (m == pos)
            break;
        heap_set(loop, pos, loop->heap[m]);
        pos = m;
    }
    heap_set(loop, pos, t);
}

void gw_timer_del(gw_loop_t *loop, gw_timer_t *t)
{
    if (!t->idx)
        return;
    size_t pos = t->idx - 1;
    t->idx = 0;
    loop->n--;
    if (pos == loop->n)
        return;
    heap_set(loop, pos, loop->heap[loop->n]);
    if (pos > 0 && loop->heap[(pos - 1) / 2]->when > loop->heap[pos]->when)
        sift_up(loop, pos);
    else
        sift_down(loop, pos);
}

void gw_timer_add(gw_loop_t *loop, gw_timer_t *t, int64_t ms)
{
    int64_t when = gw_now_ms() + ms;
    if (t->idx) {
        if (t->when == when)
            return;
        gw_timer_del(loop, t);
    }
    if (loop->n == loop->cap) {
        size_t cap = loop->cap ? loop->cap * 2 : 256;
        gw_timer_t **h = realloc(loop->heap, cap * sizeof(*h));
        if (!h)
            abort(); /* a timer we cannot arm would hang a connection forever */
        loop->heap = h;
        loop->cap = cap;
    }
    t->when = when;
    loop->heap[loop->n] = t;
    t->idx = ++loop->n;
    sift_up(loop, loop->n - 1);
}

int gw_loop_once(gw_loop_t *loop, int max_wait_ms)
{
    struct epoll_event evs[MAX_EVENTS];
    int timeout = max_wait_ms;
    if (loop->n) {
        int64_t d = loop->heap[0]->when - gw_now_ms();
        if (d < 0)
            d = 0;
        if (timeout < 0 || d < timeout)
            timeout = (int)(d > 0x7fffffff ? 0x7fffffff : d);
    }
    int n = epoll_wait(loop->epfd, evs, MAX_EVENTS, timeout);
    gw_clock_update();
    if (n < 0) {
        if (errno != EINTR)
            return -1;
        n = 0;
    }
    for (int i = 0; i < n; i++) {
        gw_io_t *io = evs[i].data.ptr;
        io->handler(io, evs[i].events);
    }
    int64_t now = gw_now_ms();
    while (loop->n && loop->heap[0]->when <= now) {
        gw_timer_t *t = loop->heap[0];
        gw_timer_del(loop, t);
        t->cb(t);
    }
    return n;
}
