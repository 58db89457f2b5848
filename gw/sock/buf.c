/* The socket layer's buffers (sock/sock.h): recycled per worker, so that an idle
 * keep-alive connection holds none and a steady load allocates nothing. */
#include "sock/sock.h"

#include <stdlib.h>
#include <string.h>

#include "sock/internal.h"

/* ---- buffers: per-worker free lists (issue #21) ----
 * A worker keeps at most FREE_MAX of each size: enough for the connections busy within
 * one loop pass under load, so a steady keep-alive load allocates nothing, and a burst's
 * surplus goes back to malloc. One thread per worker: no locks. */
#define FREE_MAX 32

typedef union free_node {
    union free_node *next;
    char bytes[1];
} free_node_t;

static free_node_t *free_out, *free_file;
static unsigned n_free_out, n_free_file;

static void *take_block(free_node_t **list, unsigned *n, size_t size)
{
    free_node_t *b = *list;
    if (b) {
        *list = b->next;
        (*n)--;
        return b;
    }
    void *p = malloc(size);
    if (!p)
        abort(); /* as at start-up: a worker cannot go on without it */
    return p;
}

static void give_block(free_node_t **list, unsigned *n, void *p)
{
    if (!p)
        return;
    if (*n >= FREE_MAX) {
        free(p);
        return;
    }
    free_node_t *b = p;
    b->next = *list;
    *list = b;
    (*n)++;
}

static void give_out(char *out, size_t cap)
{
    if (cap == GW_SOCK_OUT_CAP)
        give_block(&free_out, &n_free_out, out);
    else if (cap == GW_SOCK_FILE_CAP)
        give_block(&free_file, &n_free_file, out);
    else
        free(out); /* grown for a large in-memory answer: not recycled */
}

void gw_sock_out_reserve(gw_sock_t *s, size_t more)
{
    if (!s->out) {
        s->out_cap = GW_SOCK_OUT_CAP;
        s->out = take_block(&free_out, &n_free_out, GW_SOCK_OUT_CAP);
    }
    if (s->out_len + more > s->out_cap) {
        size_t cap = s->out_cap;
        while (cap < s->out_len + more)
            cap *= 2;
        char *p = realloc(s->out, cap);
        if (!p)
            abort();
        s->out = p;
        s->out_cap = cap;
    }
}

void gw_sock_out_append(gw_sock_t *s, const char *p, size_t n)
{
    gw_sock_out_reserve(s, n);
    memcpy(s->out + s->out_len, p, n);
    s->out_len += n;
}

void gw_sock_out_file_buffer(gw_sock_t *s)
{
    if (s->out_cap >= GW_SOCK_FILE_CAP || s->out_len > GW_SOCK_FILE_CAP)
        return;
    char *b = take_block(&free_file, &n_free_file, GW_SOCK_FILE_CAP);
    if (s->out_len)
        memcpy(b, s->out, s->out_len);
    give_out(s->out, s->out_cap);
    s->out = b;
    s->out_cap = GW_SOCK_FILE_CAP;
}

void gw_sock_in_grow(gw_sock_t *s, size_t want, size_t max)
{
    if (want > max)
        want = max;
    if (want <= s->in_cap)
        return;
    char *p = realloc(s->in, want);
    if (!p)
        abort();
    s->in = p;
    s->in_cap = want;
}

void gw_sock_release_buffers_(gw_sock_t *s)
{
    give_out(s->out, s->out_cap);
    s->out = NULL;
    s->out_cap = s->out_len = s->out_off = 0;
    free(s->in);
    s->in = NULL;
    s->in_cap = s->in_len = 0;
}

/* nginx's ngx_http_set_keepalive frees its header buffer and calls SSL_free_buffers the
 * same way; with SSL_MODE_RELEASE_BUFFERS alone, the read buffer that SSL_read set up for
 * the read that found nothing stays. The next event allocates them again. */
void gw_sock_idle(gw_sock_t *s)
{
    gw_sock_release_buffers_(s);
    if (s->ssl && !s->async_paused)
        SSL_free_buffers(s->ssl); /* refuses (0) while a record is partly buffered: fine */
}
