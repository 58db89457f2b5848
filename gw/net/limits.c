/* Per-client connection counting for limit_conn_per_ip; see limits.h. */
#include "net/limits.h"

#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

struct gw_ipcount {
    struct gw_ipcount *next; /* bucket chain */
    uint32_t hash;
    int count;
    uint8_t len; /* 4 or 16 */
    uint8_t addr[16];
};

/* Buckets grow with the number of addresses (load <= 1), so a flood of distinct
 * addresses costs O(1) per connection; the table never shrinks below its size. */
static gw_ipcount_t **buckets;
static size_t n_buckets, n_entries;

/* FNV-1a, keyed per process so that a client cannot choose addresses that collide */
static uint32_t hash_key;

static uint32_t hash_addr(const uint8_t *a, size_t len)
{
    uint32_t h = 2166136261u ^ hash_key;
    for (size_t i = 0; i < len; i++) {
        h ^= a[i];
        h *= 16777619u;
    }
    return h ^ (h >> 15);
}

static int key_of(const struct sockaddr *peer, socklen_t plen, uint8_t out[16], uint8_t *len)
{
    if (peer->sa_family == AF_INET && plen >= (socklen_t)sizeof(struct sockaddr_in)) {
        memcpy(out, &((const struct sockaddr_in *)peer)->sin_addr, 4);
        *len = 4;
        return 1;
    }
    if (peer->sa_family == AF_INET6 && plen >= (socklen_t)sizeof(struct sockaddr_in6)) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)peer)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a)) {
            memcpy(out, a->s6_addr + 12, 4);
            *len = 4;
        } else {
            memcpy(out, a->s6_addr, 16);
            *len = 16;
        }
        return 1;
    }
    return 0;
}

static int grow(void)
{
    size_t nb = n_buckets ? n_buckets * 2 : 256;
    gw_ipcount_t **b = calloc(nb, sizeof(*b));
    if (!b)
        return -1;
    if (!n_buckets && getrandom(&hash_key, sizeof(hash_key), GRND_NONBLOCK) != sizeof(hash_key))
        hash_key = (uint32_t)(uintptr_t)b ^ 0x9e3779b9u; /* ASLR bits, at least */
    for (size_t i = 0; i < n_buckets; i++) {
        gw_ipcount_t *e = buckets[i];
        while (e) {
            gw_ipcount_t *next = e->next;
            e->next = b[e->hash & (nb - 1)];
            b[e->hash & (nb - 1)] = e;
            e = next;
        }
    }
    free(buckets);
    buckets = b;
    n_buckets = nb;
    return 0;
}

int gw_limit_conn_take(const struct sockaddr *peer, socklen_t plen, int limit, gw_ipcount_t **slot)
{
    *slot = NULL;
    uint8_t a[16], len;
    if (limit <= 0 || !key_of(peer, plen, a, &len))
        return 1;
    if (n_entries >= n_buckets && grow() != 0 && !buckets)
        return -1;
    uint32_t h = hash_addr(a, len);
    gw_ipcount_t **head = &buckets[h & (n_buckets - 1)];
    for (gw_ipcount_t *e = *head; e; e = e->next) {
        if (e->hash == h && e->len == len && memcmp(e->addr, a, len) == 0) {
            if (e->count >= limit)
                return 0;
            e->count++;
            *slot = e;
            return 1;
        }
    }
    gw_ipcount_t *e = calloc(1, sizeof(*e));
    if (!e)
        return -1;
    e->hash = h;
    e->len = len;
    memcpy(e->addr, a, len);
    e->count = 1;
    e->next = *head;
    *head = e;
    n_entries++;
    *slot = e;
    return 1;
}

void gw_limit_conn_release(gw_ipcount_t *e)
{
    if (!e || --e->count > 0)
        return;
    gw_ipcount_t **pp = &buckets[e->hash & (n_buckets - 1)];
    while (*pp != e)
        pp = &(*pp)->next;
    *pp = e->next;
    free(e);
    n_entries--;
}

size_t gw_limit_conn_addresses(void)
{
    return n_entries;
}
