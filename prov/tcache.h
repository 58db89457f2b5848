/*
 * Per-thread caches of secrets: one zeroed block of a fixed size per thread that asks,
 * wiped and freed at the thread's exit. cipher_gcm.c keeps its expanded AES-GCM keys in
 * one, kdf.c its HMAC key schedules; both need the same once-per-process thread key,
 * lazy allocation, and wipe at exit, written here once.
 */
#ifndef TG_TCACHE_H
#define TG_TCACHE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

/* One cache; define it static with TG_TCACHE_INIT. Process-wide, never destroyed. */
struct tg_tcache {
    size_t size;       /* bytes of a thread's block */
    size_t align;      /* its alignment: a power of two, at most TG_TCACHE_HDR */
    _Atomic int state; /* 0: no thread key yet, 1: key made, -1: pthread_key_create failed */
    pthread_key_t key;
};
#define TG_TCACHE_INIT(size, align)                                                                \
    {                                                                                              \
        (size), (align), 0, 0                                                                      \
    }

/* A thread's allocation: a header of this many bytes (its first member the cache: what the
 * thread key's destructor needs to know the size), then the block. */
#define TG_TCACHE_HDR 64

/* Out of line (tcache.c): the thread key's creation, and a new block for this thread. */
int tg_tcache_init(struct tg_tcache *c);
void *tg_tcache_new(struct tg_tcache *c);

/* Wipes the calling thread's block of c, if it has one (it stays, zeroed). */
void tg_tcache_wipe(struct tg_tcache *c);

/*
 * The calling thread's block of c: NULL when it has none and create is 0, or when it
 * cannot have one (no thread key, out of memory). A new block is zeroed. Inline: the
 * cipher's record path asks for its key cache once a record.
 */
static inline void *tg_tcache_get(struct tg_tcache *c, int create)
{
    unsigned char *base;

    if (atomic_load_explicit(&c->state, memory_order_acquire) != 1 && !tg_tcache_init(c))
        return NULL;
    base = pthread_getspecific(c->key); /* the allocation: TG_TCACHE_HDR bytes, the block */
    if (base != NULL)
        return base + TG_TCACHE_HDR;
    return create ? tg_tcache_new(c) : NULL;
}

#endif
