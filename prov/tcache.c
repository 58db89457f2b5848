/* see tcache.h */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "tcache.h"

static void tcache_free(void *base)
{
    const struct tg_tcache *c = *(const struct tg_tcache **)base;

    OPENSSL_cleanse((unsigned char *)base + TG_TCACHE_HDR, c->size);
    free(base);
}

int tg_tcache_init(struct tg_tcache *c)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    int st;

    pthread_mutex_lock(&lock);
    st = atomic_load_explicit(&c->state, memory_order_relaxed);
    if (st == 0) {
        st = pthread_key_create(&c->key, tcache_free) == 0 ? 1 : -1;
        atomic_store_explicit(&c->state, st, memory_order_release);
    }
    pthread_mutex_unlock(&lock);
    return st == 1;
}

void *tg_tcache_new(struct tg_tcache *c)
{
    void *base = NULL;

    if (c->align > TG_TCACHE_HDR ||
        posix_memalign(&base, TG_TCACHE_HDR, TG_TCACHE_HDR + c->size) != 0)
        return NULL;
    memset(base, 0, TG_TCACHE_HDR + c->size);
    *(const struct tg_tcache **)base = c;
    if (pthread_setspecific(c->key, base) != 0) {
        free(base);
        return NULL;
    }
    return (unsigned char *)base + TG_TCACHE_HDR;
}

void tg_tcache_wipe(struct tg_tcache *c)
{
    void *block = tg_tcache_get(c, 0);

    if (block != NULL)
        OPENSSL_cleanse(block, c->size);
}
