#include "proxy/reqbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "http/conn.h"

gw_reqbuf_t *gw_reqbuf_new(int chunked, uint64_t content_length, size_t mem_cap,
                           int expect_continue)
{
    gw_reqbuf_t *b = calloc(1, sizeof(*b));
    if (!b)
        abort();
    b->fd = -1;
    b->chunked = chunked;
    b->left = content_length;
    b->expect_continue = expect_continue;
    if (chunked)
        gw_http_chunked_init(&b->dec);
    /* a Content-Length body smaller than the memory part needs no more */
    b->mem_cap = !chunked && content_length < mem_cap ? (size_t)content_length : mem_cap;
    b->mem = malloc(b->mem_cap ? b->mem_cap : 1);
    if (!b->mem)
        abort();
    b->done = !chunked && content_length == 0;
    return b;
}

/* Append n decoded body bytes: memory first, then the temporary file. 0, or -1. */
static int store(gw_reqbuf_t *b, const char *peer, const char *s, size_t n)
{
    size_t m = b->mem_cap - b->mem_len < n ? b->mem_cap - b->mem_len : n;
    memcpy(b->mem + b->mem_len, s, m);
    b->mem_len += m;
    b->total += m;
    s += m;
    n -= m;
    if (!n)
        return 0;
    if (b->fd < 0) {
        const char *dir = getenv("TMPDIR");
        b->fd = open(dir && *dir ? dir : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (b->fd < 0) {
            gw_log(GW_LOG_CRIT, errno,
                   "cannot create a temporary file for the request body "
                   "of client %s",
                   peer);
            return -1;
        }
        gw_log(GW_LOG_INFO, 0, "the request body of client %s is buffered to a temporary file",
               peer);
    }
    while (n) {
        ssize_t w = pwrite(b->fd, s, n, (off_t)(b->total - b->mem_len));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            gw_log(GW_LOG_CRIT, errno,
                   "cannot write the request body of client %s to a "
                   "temporary file",
                   peer);
            return -1;
        }
        b->total += (uint64_t)w;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

int gw_reqbuf_recv(gw_conn_t *c)
{
    size_t got = 0;
    int r = gw_conn_recv(c, c->s.in, c->s.in_cap, &got);
    if (r == GW_CONN_IO_AGAIN)
        return 0;
    if (r != GW_CONN_IO_OK) {
        gw_log(GW_LOG_INFO, 0, "client %s closed the connection in a request body",
               gw_conn_client(c));
        return -1;
    }
    c->s.in_len = got;
    return 1;
}

int gw_reqbuf_fill(gw_reqbuf_t *b, gw_conn_t *c, uint64_t max_body)
{
    while (!b->done) {
        if (c->s.in_len == 0) {
            if (b->expect_continue && !b->continue_sent) {
                /* RFC 9110 §10.1.1: the client waits for this before sending the body */
                gw_resp_append(c, "HTTP/1.1 100 Continue\r\n\r\n", 25);
                b->continue_sent = 1;
                if (gw_conn_flush(c) < 0)
                    return -1;
            }
            if (gw_sock_busy(&c->s))
                return 0; /* a paused TLS job: no SSL call until its wake drives us */
            int r = gw_reqbuf_recv(c);
            if (r <= 0)
                return r;
        }
        if (b->chunked) {
            size_t len = c->s.in_len, used = 0;
            int r = gw_http_chunked_decode(&b->dec, c->s.in, &len, &used, max_body);
            if (r < 0)
                return r; /* -400: a bad chunk size line, refused before the upstream */
            if (len && store(b, gw_conn_client(c), c->s.in, len) != 0)
                return -500;
            gw_sock_in_consume(&c->s, used);
            if (r == 1)
                b->done = 1;
            continue;
        }
        size_t take = c->s.in_len < b->left ? c->s.in_len : (size_t)b->left;
        if (store(b, gw_conn_client(c), c->s.in, take) != 0)
            return -500;
        gw_sock_in_consume(&c->s, take);
        b->left -= take;
        if (b->left == 0)
            b->done = 1;
    }
    return 1;
}

int gw_reqbuf_add(gw_reqbuf_t *b, const char *s, size_t n, uint64_t max_body, const char *peer)
{
    if (max_body && b->total + n > max_body)
        return -413;
    return store(b, peer, s, n) == 0 ? 0 : -500;
}

size_t gw_reqbuf_read(gw_reqbuf_t *b, uint64_t off, char *out, size_t cap)
{
    size_t n = 0;
    if (off < b->mem_len) {
        n = b->mem_len - (size_t)off < cap ? b->mem_len - (size_t)off : cap;
        memcpy(out, b->mem + off, n);
        return n;
    }
    if (b->fd < 0 || off >= b->total)
        return 0;
    uint64_t left = b->total - off;
    size_t want = left < cap ? (size_t)left : cap;
    ssize_t r;
    do
        r = pread(b->fd, out, want, (off_t)(off - b->mem_len));
    while (r < 0 && errno == EINTR);
    if (r < 0) {
        gw_log(GW_LOG_CRIT, errno, "cannot read a buffered request body back");
        return 0;
    }
    return (size_t)r;
}

void gw_reqbuf_free(gw_reqbuf_t *b)
{
    if (!b)
        return;
    if (b->fd >= 0)
        close(b->fd);
    free(b->mem);
    free(b);
}
