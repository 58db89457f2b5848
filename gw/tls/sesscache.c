#include "tls/sesscache.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define NIL UINT32_MAX
#define MAGIC 0x74677363u /* "tgsc" */

typedef struct slot {
    uint32_t hnext;      /* next slot in the hash chain, or NIL */
    uint32_t prev, next; /* LRU list (head = most recent), or the free list (next only) */
    uint16_t der_len;    /* 0 = free slot */
    uint8_t id_len;
    uint8_t pad;
    int64_t expire;
    uint8_t id[GW_SESSCACHE_MAX_ID];
    uint8_t der[GW_SESSCACHE_MAX_DER];
} slot_t;

_Static_assert(sizeof(slot_t) == GW_SESSCACHE_SLOT, "slot layout");

/* The shared part: in the mapping, seen by every process. */
typedef struct shm_hdr {
    uint32_t magic;
    pthread_mutex_t mu;
    uint32_t head, tail, free_head; /* LRU ends and free list */
    gw_sesscache_stats_t st;
} shm_hdr_t;

/* The process-local handle (heap): addresses and the master's registry fields. A child
 * inherits a copy through fork(); its reference counts never touch the master's. */
struct gw_sesscache {
    shm_hdr_t *h;
    uint32_t *buckets; /* in the mapping: nbuckets entries */
    slot_t *slots;     /* in the mapping: nslots entries */
    size_t bytes;
    uint32_t nslots, nbuckets;
    char name[64];
    const void *build;
    int refs;
    struct gw_sesscache *reg_next;
};

static uint32_t hash_id(const uint8_t *id, size_t n)
{
    uint32_t h = 2166136261u; /* FNV-1a; IDs are random, server-made */
    for (size_t i = 0; i < n; i++)
        h = (h ^ id[i]) * 16777619u;
    return h;
}

/* Empty every list: all slots free. Lock held. */
static void reset(gw_sesscache_t *z)
{
    for (uint32_t i = 0; i < z->nbuckets; i++)
        z->buckets[i] = NIL;
    for (uint32_t i = 0; i < z->nslots; i++) {
        z->slots[i].der_len = 0;
        z->slots[i].hnext = NIL;
        z->slots[i].prev = NIL;
        z->slots[i].next = i + 1 < z->nslots ? i + 1 : NIL;
    }
    z->h->free_head = z->nslots ? 0 : NIL;
    z->h->head = z->h->tail = NIL;
    z->h->st.used = 0;
}

static void lock(gw_sesscache_t *z)
{
    int r = pthread_mutex_lock(&z->h->mu);
    if (r == EOWNERDEAD) {
        /* a worker died inside: its update may be half done; start empty */
        reset(z);
        z->h->st.recoveries++;
        pthread_mutex_consistent(&z->h->mu);
    }
}

static void unlock(gw_sesscache_t *z)
{
    pthread_mutex_unlock(&z->h->mu);
}

gw_sesscache_t *gw_sesscache_create(size_t bytes)
{
    size_t hdr = (sizeof(shm_hdr_t) + 63) & ~(size_t)63;
    if (bytes < hdr + 64 + GW_SESSCACHE_SLOT || bytes > ((size_t)4 << 30)) {
        errno = EINVAL;
        return NULL;
    }
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    gw_sesscache_t *z = calloc(1, sizeof(*z));
    if (!z) {
        munmap(m, bytes);
        errno = ENOMEM;
        return NULL;
    }
    z->h = m;
    /* one bucket per slot, rounded to a power of two below: chains stay short */
    size_t room = bytes - hdr;
    size_t nslots = room / (GW_SESSCACHE_SLOT + sizeof(uint32_t));
    uint32_t nb = 1;
    while ((size_t)nb * 2 <= nslots)
        nb *= 2;
    size_t boff = hdr, soff = (hdr + (size_t)nb * sizeof(uint32_t) + 63) & ~(size_t)63;
    nslots = (bytes - soff) / GW_SESSCACHE_SLOT;
    z->buckets = (uint32_t *)((char *)m + boff);
    z->slots = (slot_t *)((char *)m + soff);
    z->nbuckets = nb;
    z->nslots = (uint32_t)nslots;
    z->bytes = bytes;
    pthread_mutexattr_t a;
    int r = pthread_mutexattr_init(&a);
    if (!r)
        r = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    if (!r)
        r = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    if (!r)
        r = pthread_mutex_init(&z->h->mu, &a);
    pthread_mutexattr_destroy(&a);
    if (r) {
        munmap(m, bytes);
        free(z);
        errno = r;
        return NULL;
    }
    z->h->magic = MAGIC;
    z->h->st.slots = nslots;
    reset(z);
    return z;
}

void gw_sesscache_destroy(gw_sesscache_t *z)
{
    if (!z)
        return;
    munmap(z->h, z->bytes); /* the mutex lives on in other processes' mappings */
    free(z);
}

/* ---- registry of named zones (master) ---- */

static gw_sesscache_t *registry;

gw_sesscache_t *gw_sesscache_acquire(const char *name, size_t bytes, const void *build, char *why,
                                     size_t cap)
{
    if (strlen(name) >= sizeof(registry->name)) {
        snprintf(why, cap, "zone name \"%s\" is too long", name);
        return NULL;
    }
    gw_sesscache_t *same_name = NULL;
    for (gw_sesscache_t *z = registry; z; z = z->reg_next) {
        if (strcmp(z->name, name) != 0)
            continue;
        if (z->bytes == bytes) {
            z->refs++;
            z->build = build;
            return z;
        }
        if (z->build == build)
            same_name = z;
    }
    if (same_name) {
        snprintf(why, cap, "zone \"%s\" is declared with sizes %zu and %zu", name, same_name->bytes,
                 bytes);
        return NULL;
    }
    gw_sesscache_t *z = gw_sesscache_create(bytes);
    if (!z) {
        snprintf(why, cap, "cannot create the shared zone \"%s\" of %zu bytes: %s", name, bytes,
                 strerror(errno));
        return NULL;
    }
    snprintf(z->name, sizeof(z->name), "%s", name);
    z->build = build;
    z->refs = 1;
    z->reg_next = registry;
    registry = z;
    return z;
}

void gw_sesscache_release(gw_sesscache_t *z)
{
    if (!z || --z->refs > 0)
        return;
    for (gw_sesscache_t **pp = &registry; *pp; pp = &(*pp)->reg_next) {
        if (*pp == z) {
            *pp = z->reg_next;
            break;
        }
    }
    gw_sesscache_destroy(z);
}

/* ---- lists (lock held) ---- */

static void lru_unlink(gw_sesscache_t *z, uint32_t i)
{
    slot_t *s = &z->slots[i];
    if (s->prev != NIL)
        z->slots[s->prev].next = s->next;
    else
        z->h->head = s->next;
    if (s->next != NIL)
        z->slots[s->next].prev = s->prev;
    else
        z->h->tail = s->prev;
    s->prev = s->next = NIL;
}

static void lru_push_front(gw_sesscache_t *z, uint32_t i)
{
    slot_t *s = &z->slots[i];
    s->prev = NIL;
    s->next = z->h->head;
    if (z->h->head != NIL)
        z->slots[z->h->head].prev = i;
    z->h->head = i;
    if (z->h->tail == NIL)
        z->h->tail = i;
}

/* Find id; *pp receives the link that points at it (for unlinking). */
static uint32_t find(gw_sesscache_t *z, const uint8_t *id, size_t n, uint32_t **pp)
{
    uint32_t *link = &z->buckets[hash_id(id, n) & (z->nbuckets - 1)];
    while (*link != NIL) {
        slot_t *s = &z->slots[*link];
        if (s->id_len == n && memcmp(s->id, id, n) == 0) {
            if (pp)
                *pp = link;
            return *link;
        }
        link = &s->hnext;
    }
    return NIL;
}

/* Unlink slot i (found through link) from hash and LRU, and free it. */
static void drop(gw_sesscache_t *z, uint32_t i, uint32_t *link)
{
    slot_t *s = &z->slots[i];
    *link = s->hnext;
    lru_unlink(z, i);
    s->der_len = 0;
    s->hnext = NIL;
    s->next = z->h->free_head;
    z->h->free_head = i;
    z->h->st.used--;
}

static void drop_by_index(gw_sesscache_t *z, uint32_t i)
{
    slot_t *s = &z->slots[i];
    uint32_t *link = NULL; /* set by find() when it returns i (gcc 12 -O3 cannot tell) */
    if (find(z, s->id, s->id_len, &link) == i)
        drop(z, i, link);
}

int gw_sesscache_store(gw_sesscache_t *z, const uint8_t *id, size_t id_len, const uint8_t *der,
                       size_t der_len, int64_t expire, int64_t now)
{
    if (id_len == 0 || id_len > GW_SESSCACHE_MAX_ID || der_len == 0 || expire <= now)
        return -1;
    lock(z);
    if (der_len > GW_SESSCACHE_MAX_DER) {
        z->h->st.oversized++;
        unlock(z);
        return -1;
    }
    uint32_t *link;
    uint32_t i = find(z, id, id_len, &link);
    if (i != NIL)
        drop(z, i, link);
    if (z->h->free_head == NIL) {
        /* full: the least recently used goes; counted unless it had expired anyway */
        uint32_t victim = z->h->tail;
        if (z->slots[victim].expire > now)
            z->h->st.evictions++;
        drop_by_index(z, victim);
    }
    i = z->h->free_head;
    slot_t *s = &z->slots[i];
    z->h->free_head = s->next;
    s->id_len = (uint8_t)id_len;
    memcpy(s->id, id, id_len);
    s->der_len = (uint16_t)der_len;
    memcpy(s->der, der, der_len);
    s->expire = expire;
    uint32_t *b = &z->buckets[hash_id(id, id_len) & (z->nbuckets - 1)];
    s->hnext = *b;
    *b = i;
    lru_push_front(z, i);
    z->h->st.used++;
    z->h->st.stores++;
    unlock(z);
    return 0;
}

int gw_sesscache_fetch(gw_sesscache_t *z, const uint8_t *id, size_t id_len, int64_t now,
                       uint8_t *out, size_t cap)
{
    if (id_len == 0 || id_len > GW_SESSCACHE_MAX_ID)
        return 0;
    lock(z);
    uint32_t *link;
    uint32_t i = find(z, id, id_len, &link);
    int r = 0;
    if (i == NIL) {
        z->h->st.misses++;
    } else if (z->slots[i].expire <= now) {
        drop(z, i, link);
        z->h->st.misses++;
    } else if (z->slots[i].der_len > cap) {
        r = -1;
    } else {
        slot_t *s = &z->slots[i];
        memcpy(out, s->der, s->der_len);
        r = s->der_len;
        lru_unlink(z, i);
        lru_push_front(z, i);
        z->h->st.hits++;
    }
    unlock(z);
    return r;
}

void gw_sesscache_remove(gw_sesscache_t *z, const uint8_t *id, size_t id_len)
{
    if (id_len == 0 || id_len > GW_SESSCACHE_MAX_ID)
        return;
    lock(z);
    uint32_t *link;
    uint32_t i = find(z, id, id_len, &link);
    if (i != NIL)
        drop(z, i, link);
    unlock(z);
}

void gw_sesscache_get_stats(gw_sesscache_t *z, gw_sesscache_stats_t *st)
{
    lock(z);
    *st = z->h->st;
    unlock(z);
}
