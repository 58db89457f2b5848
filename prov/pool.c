/*
 * Idle-time precomputation (issue #7): pools of ECDSA P-256 and P-384 sign setups (r,
 * (kb)^-1, b; mb8_p256_ecdsa_sign_setup, mb8_p384_ecdsa_sign_setup, #19) and of P-256 and
 * X25519 ephemeral key pairs, filled in full
 * 8-lane batches when the application says it is idle (the "idle" parameter: the gateway
 * reads it when its loop is about to block), and taken by signatures and key generations.
 *
 * - None of these depend on a key: a sign setup is a function of the nonce only (FIPS
 *   186-4 §6.4 steps 1-4 and the inversion), an ephemeral pair of its random scalar. One
 *   pool per kind serves every key of the process.
 * - Each entry is used once: it is copied out and wiped under the pool's lock.
 * - Bounded (pool_size entries per kind, rounded up to a multiple of 8); a kind is filled
 *   only after the process asked for it once (a server that never signs with ECDSA keeps
 *   no ECDSA setups), and only in full 8-lane batches: a batch of fewer lanes costs the
 *   vector kernels as much as a full one, so a pool is topped up once 8 entries are gone.
 * - Wiped at teardown (last provider instance) and at exit; a forked child starts with
 *   empty pools (its parent's entries are wiped in the child), so no entry, hence no
 *   nonce, is ever used by two processes.
 * - Nonces and private scalars come from the provider's private DRBG, as for the batched
 *   operations (tg_p256_random_scalar, RAND_priv_bytes_ex).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/async.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "prov.h"

/* The entry layouts: setup: MB8_P256_SETUP_BYTES or MB8_P384_SETUP_BYTES; P-256 pair: d
 * (32) || 0x04 X Y (65); X25519 pair: clamped scalar (32) || u (32). gw/tls/secheap.c sizes
 * the secure heap with the same figure. */
#define TG_POOL_ENTRY 160
_Static_assert(MB8_P256_SETUP_BYTES <= TG_POOL_ENTRY && MB8_P384_SETUP_BYTES <= TG_POOL_ENTRY &&
                   32 + 65 <= TG_POOL_ENTRY,
               "entry size");

static const enum tg_op pool_op[TG_POOL_COUNT] = {TG_OP_ECDSA_P256, TG_OP_KEYGEN_P256,
                                                  TG_OP_KEYGEN_X25519, TG_OP_ECDSA_P384};

static struct tg_pool {
    uint8_t (*e)[TG_POOL_ENTRY]; /* cap entries, the first n full */
    unsigned n, cap;
    _Atomic int wanted; /* the process asked for this kind: fill it */
    int filled;         /* filled at least once: an empty pool is a miss from now on */
} pools[TG_POOL_COUNT];
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
/* Some pool holds memory (the application read "idle"): until then a take needs no lock,
 * so applications that never idle (openssl speed, HAProxy) pay one atomic load per
 * signature, not a process-wide mutex. */
static _Atomic int pools_kept;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

/* Wipes and frees every pool (pool_mu held, or no other thread). */
static void pools_clear_locked(void)
{
    for (int i = 0; i < TG_POOL_COUNT; i++) {
        struct tg_pool *p = &pools[i];

        if (p->e != NULL)
            OPENSSL_secure_clear_free(p->e, (size_t)p->cap * TG_POOL_ENTRY);
        p->e = NULL;
        p->n = p->cap = 0;
        p->filled = 0;
        atomic_store(&p->wanted, 0);
    }
    atomic_store(&pools_kept, 0);
}

static void pool_atfork_prepare(void)
{
    pthread_mutex_lock(&pool_mu);
}

static void pool_atfork_parent(void)
{
    pthread_mutex_unlock(&pool_mu);
}

/* The child: the parent's entries are wiped, never used here. */
static void pool_atfork_child(void)
{
    pools_clear_locked(); /* under pool_atfork_prepare's lock, this thread's: released */
    pthread_mutex_unlock(&pool_mu);
}

static void pool_atexit(void)
{
    pthread_mutex_lock(&pool_mu);
    pools_clear_locked();
    pthread_mutex_unlock(&pool_mu);
}

static void pool_register(void)
{
    pthread_atfork(pool_atfork_prepare, pool_atfork_parent, pool_atfork_child);
    atexit(pool_atexit); /* the module is never unloaded (-z nodelete) */
}

void tg_pool_init(void)
{
    pthread_once(&pool_once, pool_register);
}

void tg_pool_clear(void)
{
    pthread_mutex_lock(&pool_mu);
    pools_clear_locked();
    pthread_mutex_unlock(&pool_mu);
}

int tg_pool_take(const TG_PROV *prov, enum tg_pool_kind kind, uint8_t *out, size_t len)
{
    struct tg_pool *p = &pools[kind];
    int hit = 0, counted = 0;

    if (prov->pool_size == 0 || len > TG_POOL_ENTRY)
        return 0;
    if (!atomic_load_explicit(&p->wanted, memory_order_relaxed))
        atomic_store_explicit(&p->wanted, 1, memory_order_relaxed);
    if (!atomic_load_explicit(&pools_kept, memory_order_acquire))
        return 0; /* no pool yet: neither a hit nor a miss */
    pthread_mutex_lock(&pool_mu);
    if (p->n > 0) {
        p->n--;
        memcpy(out, p->e[p->n], len);
        OPENSSL_cleanse(p->e[p->n], TG_POOL_ENTRY);
        hit = 1;
    }
    counted = p->filled;
    pthread_mutex_unlock(&pool_mu);
    if (hit)
        tg_count_op(pool_op[kind], TG_C_POOL_HITS, 1);
    else if (counted)
        tg_count_op(pool_op[kind], TG_C_POOL_MISSES, 1);
    return hit;
}

/* One batch of `lanes` (1..8) entries of kind into buf (8 x TG_POOL_ENTRY); returns how
 * many are good (moved to the front of buf). */
static unsigned compute_batch(TG_PROV *prov, enum tg_pool_kind kind, unsigned lanes,
                              uint8_t buf[MB8_LANES][TG_POOL_ENTRY], void *scratch)
{
    uint8_t sec[MB8_LANES][48];
    uint8_t *out[MB8_LANES] = {0};
    const uint8_t *in[MB8_LANES] = {0};
    unsigned good = 0, i;
    mb8_status_t st;
    const int setup = kind == TG_POOL_ECDSA_SETUP || kind == TG_POOL_ECDSA_SETUP_P384;

    for (i = 0; i < lanes; i++) {
        if (kind == TG_POOL_KEYGEN_X25519) {
            if (RAND_priv_bytes_ex(prov->libctx, sec[i], 32, 0) <= 0)
                break;
            sec[i][0] &= 248; /* RFC 7748 §5, stored clamped as the default provider does */
            sec[i][31] &= 127;
            sec[i][31] |= 64;
        } else if (kind == TG_POOL_ECDSA_SETUP_P384 ? !tg_p384_random_scalar(prov, sec[i])
                                                    : !tg_p256_random_scalar(prov, sec[i])) {
            break;
        }
        in[i] = sec[i];
        out[i] = setup ? buf[i] : buf[i] + 32;
    }
    if (i < lanes) { /* the DRBG failed: nothing this time */
        OPENSSL_cleanse(sec, sizeof(sec));
        return 0;
    }
    st = kind == TG_POOL_ECDSA_SETUP        ? mb8_p256_ecdsa_sign_setup(out, in, scratch)
         : kind == TG_POOL_ECDSA_SETUP_P384 ? mb8_p384_ecdsa_sign_setup(out, in, scratch)
         : kind == TG_POOL_KEYGEN_P256      ? mb8_p256_public_key(out, in, scratch)
                                            : mb8_x25519_public_key(out, in, scratch);
    for (i = 0; i < lanes; i++) {
        if (mb8_status_lane(st, i) != MB8_STATUS_OK) {
            OPENSSL_cleanse(buf[i], TG_POOL_ENTRY); /* r = 0 (p ~ 2^-256): drop the lane */
            continue;
        }
        if (!setup)
            memcpy(buf[i], sec[i], 32);
        if (good != i)
            memcpy(buf[good], buf[i], TG_POOL_ENTRY);
        good++;
    }
    OPENSSL_cleanse(sec, sizeof(sec));
    return good;
}

unsigned tg_pool_idle(TG_PROV *prov, void *scratch)
{
    uint8_t buf[MB8_LANES][TG_POOL_ENTRY];
    int kind = -1;
    unsigned best = 0, left = 0, good, i;
    unsigned cap = (prov->pool_size + MB8_LANES - 1) / MB8_LANES * MB8_LANES;

    if (prov->pool_size == 0 || ASYNC_get_current_job() != NULL || scratch == NULL)
        return 0;
    /* the wanted pool that lacks the most entries */
    pthread_mutex_lock(&pool_mu);
    for (i = 0; i < TG_POOL_COUNT; i++) {
        struct tg_pool *p = &pools[i];

        if (!atomic_load(&p->wanted))
            continue;
        if (p->e == NULL) {
            /* secret scalars: the secure heap when there is one (out of core dumps) */
            p->e = OPENSSL_secure_zalloc((size_t)cap * TG_POOL_ENTRY);
            if (p->e == NULL)
                continue;
            p->cap = cap;
            atomic_store_explicit(&pools_kept, 1, memory_order_release);
        }
        if (p->cap - p->n >= MB8_LANES && p->cap - p->n > best) {
            best = p->cap - p->n;
            kind = (int)i;
        }
    }
    pthread_mutex_unlock(&pool_mu);
    if (kind < 0)
        return 0;

    good = compute_batch(prov, (enum tg_pool_kind)kind, MB8_LANES, buf, scratch);
    pthread_mutex_lock(&pool_mu);
    struct tg_pool *p = &pools[kind];
    /* a fork or a teardown while we computed leaves p->e NULL: the batch is dropped */
    for (i = 0; i < good && p->e != NULL && p->n < p->cap; i++)
        memcpy(p->e[p->n++], buf[i], TG_POOL_ENTRY);
    if (p->e != NULL)
        p->filled = 1;
    for (int j = 0; j < TG_POOL_COUNT; j++)
        if (atomic_load(&pools[j].wanted) && pools[j].e != NULL &&
            pools[j].cap - pools[j].n >= MB8_LANES)
            left += pools[j].cap - pools[j].n;
    pthread_mutex_unlock(&pool_mu);
    OPENSSL_cleanse(buf, sizeof(buf));
    return good == 0 ? 0 : left; /* no progress (DRBG failure): do not spin */
}

unsigned tg_pool_level(enum tg_pool_kind kind)
{
    unsigned n;

    pthread_mutex_lock(&pool_mu);
    n = pools[kind].n;
    pthread_mutex_unlock(&pool_mu);
    return n;
}
