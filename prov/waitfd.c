/* see prov/waitfd.h */
#include "waitfd.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* Key of the wait fd in an ASYNC_WAIT_CTX: an address unique to this code. */
static const char tg_waitfd_key = 'T';

void tg_waitfd_release(struct tg_waitfd *w)
{
    if (w != NULL && atomic_fetch_sub(&w->refs, 1) == 1) {
        close(w->fd);
        free(w);
    }
}

static void waitfd_cleanup(ASYNC_WAIT_CTX *ctx, const void *key, OSSL_ASYNC_FD fd, void *custom)
{
    (void)ctx;
    (void)key;
    (void)fd;
    tg_waitfd_release(custom);
}

int tg_waitfd_present(ASYNC_WAIT_CTX *wctx)
{
    OSSL_ASYNC_FD fd;
    void *custom = NULL;

    return ASYNC_WAIT_CTX_get_fd(wctx, &tg_waitfd_key, &fd, &custom) && custom != NULL;
}

struct tg_waitfd *tg_waitfd_acquire(ASYNC_WAIT_CTX *wctx)
{
    OSSL_ASYNC_FD fd;
    void *custom = NULL;
    struct tg_waitfd *w;

    if (ASYNC_WAIT_CTX_get_fd(wctx, &tg_waitfd_key, &fd, &custom) && custom != NULL) {
        w = custom;
    } else {
        int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

        if (efd < 0)
            return NULL;
        w = malloc(sizeof(*w));
        if (w == NULL) {
            close(efd);
            return NULL;
        }
        w->fd = efd;
        atomic_init(&w->refs, 1);
        if (!ASYNC_WAIT_CTX_set_wait_fd(wctx, &tg_waitfd_key, efd, w, waitfd_cleanup)) {
            close(efd);
            free(w);
            return NULL;
        }
    }
    atomic_fetch_add(&w->refs, 1);
    return w;
}

void tg_waitfd_signal(struct tg_waitfd *w)
{
    uint64_t one = 1;
    ssize_t n;

    do {
        n = write(w->fd, &one, sizeof(one));
    } while (n < 0 && errno == EINTR);
}

int tg_waitfd_drain(struct tg_waitfd *w)
{
    uint64_t v;
    ssize_t n;

    do {
        n = read(w->fd, &v, sizeof(v));
    } while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof(v);
}

int tg_names_contain(const char *names, const char *name)
{
    size_t len = strlen(name);

    while (names != NULL && *names != '\0') {
        const char *end = strchr(names, ':');
        size_t n = end != NULL ? (size_t)(end - names) : strlen(names);

        if (n == len && strncmp(names, name, len) == 0)
            return 1;
        names = end != NULL ? end + 1 : NULL;
    }
    return 0;
}
