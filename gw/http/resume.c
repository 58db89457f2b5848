#include "http/resume.h"

#include "core/log.h"
#include "http/conn.h"
#include "net/redis.h"
#include "tls/session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <hiredis/hiredis.h>

static gw_loop_t *loop_; /* the worker's loop (gw_resume_init); NULL outside a worker */

void gw_resume_init(gw_loop_t *loop)
{
    loop_ = loop;
}

#define KEY_PREFIX "tlsgate:sess:"

enum { PENDING = 1, DONE };

/* One lookup, in the SSL's ex_data. Freed when both the SSL has let go (ex_data free)
 * and hiredis has called back (in_redis == 0). */
typedef struct lookup {
    struct gw_conn *c; /* NULL once the SSL is freed */
    SSL *ssl;
    gw_redis_t *r;
    int state;
    int in_redis;
    gw_timer_t timer; /* the timeout, then the wake */
    unsigned char id[32];
    size_t id_len;
} lookup_t;

static int ex_index = -1;

#define LOOKUP_OF_TIMER(t) ((lookup_t *)((char *)(t)-offsetof(lookup_t, timer)))

static void lookup_detach(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl,
                          void *argp)
{
    lookup_t *lk = ptr;
    if (!lk)
        return;
    if (loop_)
        gw_timer_del(loop_, &lk->timer);
    lk->c = NULL;
    lk->ssl = NULL;
    if (!lk->in_redis)
        free(lk);
}

/* Runs from the loop's timers, after the pass's events: the connection may be freed here
 * without a later event of the same pass pointing at it. */
static void on_wake(gw_timer_t *t)
{
    lookup_t *lk = LOOKUP_OF_TIMER(t);
    if (lk->c)
        gw_conn_hello_resume(lk->c); /* may free the SSL, and lk with it */
}

static void on_timeout(gw_timer_t *t)
{
    lookup_t *lk = LOOKUP_OF_TIMER(t);
    if (lk->state != PENDING)
        return;
    lk->state = DONE;
    gw_redis_failed(lk->r, "session lookup timed out");
    on_wake(t);
}

static void on_get(void *reply, void *priv)
{
    lookup_t *lk = priv;
    lk->in_redis = 0;
    if (!lk->ssl) {
        free(lk);
        return;
    }
    if (lk->state != PENDING)
        return; /* timed out: the handshake went on */
    redisReply *rep = reply;
    if (rep && rep->type == REDIS_REPLY_STRING && rep->len > 0)
        gw_tls_session_prefetched(lk->ssl, lk->id, lk->id_len, (const unsigned char *)rep->str,
                                  (size_t)rep->len);
    else if (rep && rep->type == REDIS_REPLY_ERROR)
        gw_redis_failed(lk->r, rep->str);
    lk->state = DONE;
    /* wake after this pass's events (the reply came in the middle of them) */
    lk->timer.cb = on_wake;
    gw_timer_add(loop_, &lk->timer, 0);
}

static int lookup_hello(struct gw_conn *c, SSL *ssl)
{
    if (!loop_)
        return SSL_CLIENT_HELLO_SUCCESS;
    if (ex_index < 0) {
        ex_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, lookup_detach);
        if (ex_index < 0)
            return SSL_CLIENT_HELLO_SUCCESS;
    }
    lookup_t *lk = SSL_get_ex_data(ssl, ex_index);
    if (lk)
        return lk->state == PENDING ? SSL_CLIENT_HELLO_RETRY : SSL_CLIENT_HELLO_SUCCESS;
    unsigned char id[32];
    size_t id_len;
    const char *url;
    int64_t tmo;
    if (!gw_tls_session_remote_lookup(ssl, id, &id_len, &url, &tmo)) {
        /* nothing offered: open the connection now, so this handshake's new session
         * can be stored */
        gw_redis_t *r = url ? gw_redis_get(url, loop_) : NULL;
        if (r)
            gw_redis_ready(r);
        return SSL_CLIENT_HELLO_SUCCESS;
    }
    gw_redis_t *r = gw_redis_get(url, loop_);
    if (!r || !gw_redis_ready(r))
        return SSL_CLIENT_HELLO_SUCCESS; /* down or slow: a full handshake, now */
    lk = calloc(1, sizeof(*lk));
    if (!lk)
        return SSL_CLIENT_HELLO_SUCCESS;
    lk->c = c;
    lk->ssl = ssl;
    lk->r = r;
    memcpy(lk->id, id, id_len);
    lk->id_len = id_len;
    if (!SSL_set_ex_data(ssl, ex_index, lk)) {
        free(lk);
        return SSL_CLIENT_HELLO_SUCCESS;
    }
    /* pending before the call: a lost connection may call on_get from inside it */
    lk->in_redis = 1;
    lk->state = PENDING;
    lk->timer.cb = on_timeout;
    gw_timer_add(loop_, &lk->timer, tmo);
    if (gw_redis_command(r, on_get, lk, "GET " KEY_PREFIX "%b", id, id_len) != 0) {
        gw_timer_del(loop_, &lk->timer);
        lk->in_redis = 0;
        lk->state = DONE; /* freed with the SSL */
        return SSL_CLIENT_HELLO_SUCCESS;
    }
    /* still pending, or already answered (on_get armed the wake): wait either way */
    return SSL_CLIENT_HELLO_RETRY;
}

int gw_resume_client_hello(struct gw_conn *c, SSL *ssl)
{
    int r = lookup_hello(c, ssl);
    if (r == SSL_CLIENT_HELLO_SUCCESS)
        gw_tls_session_fleet_gate(ssl); /* after the lookup: it reads SSL_OP_NO_TICKET */
    return r;
}

void gw_resume_store(const char *url, const unsigned char *id, size_t id_len,
                     const unsigned char *der, size_t der_len, int64_t ttl_s)
{
    if (!loop_)
        return;
    gw_redis_t *r = gw_redis_get(url, loop_);
    if (!r || !gw_redis_ready(r))
        return;
    gw_redis_command(r, NULL, NULL, "SET " KEY_PREFIX "%b %b EX %lld", id, id_len, der, der_len,
                     (long long)ttl_s);
}

/* ---- fleet ticket keys (ssl_session_ticket_key redis://) ----
 *
 * Period p = ssl_session_timeout; epoch e = time / p. For e and e + 1 every worker of
 * the fleet proposes a random 80-byte key with SET tlsgate:tk:<p>:<e> KEY NX EX 3p (the
 * first writer wins) and then reads the key back with GET (everyone follows it). Key e
 * encrypts during epoch e; e - 1 (and e + 1, for clocks a little apart) decrypt. Refreshed
 * at least every p / 4 (at most every 5 s), and every 500 ms while a key is missing. */

#define TK_SLOTS 4

typedef struct tk_ring {
    char *url;
    int64_t period;
    gw_redis_t *r;
    gw_timer_t timer;
    struct {
        int64_t epoch; /* 0 = empty */
        gw_tls_ticket_key_t key;
    } slot[TK_SLOTS];
    struct tk_ring *next;
} tk_ring_t;

typedef struct tk_get {
    tk_ring_t *ring;
    int64_t epoch;
} tk_get_t;

static tk_ring_t *rings;

#define RING_OF_TIMER(t) ((tk_ring_t *)((char *)(t)-offsetof(tk_ring_t, timer)))

static const gw_tls_ticket_key_t *ring_key(tk_ring_t *g, int64_t epoch)
{
    for (int i = 0; i < TK_SLOTS; i++)
        if (g->slot[i].epoch == epoch)
            return &g->slot[i].key;
    return NULL;
}

static void ring_put(tk_ring_t *g, int64_t epoch, const unsigned char k[80])
{
    int victim = 0;
    for (int i = 0; i < TK_SLOTS; i++) {
        if (g->slot[i].epoch == epoch) {
            victim = i;
            break;
        }
        if (g->slot[i].epoch < g->slot[victim].epoch)
            victim = i; /* the oldest (or an empty one) goes */
    }
    g->slot[victim].epoch = epoch;
    memcpy(g->slot[victim].key.name, k, 16);
    memcpy(g->slot[victim].key.hmac, k + 16, 32);
    memcpy(g->slot[victim].key.aes, k + 48, 32);
    g->slot[victim].key.size = 32;
}

static void on_key(void *reply, void *priv)
{
    tk_get_t *q = priv;
    redisReply *rep = reply;
    if (rep && rep->type == REDIS_REPLY_STRING && rep->len == 80)
        ring_put(q->ring, q->epoch, (const unsigned char *)rep->str);
    else if (rep)
        gw_redis_failed(q->ring->r, "ticket key: unexpected reply to GET");
    free(q);
}

static void ring_refresh(gw_timer_t *t)
{
    tk_ring_t *g = RING_OF_TIMER(t);
    int64_t e = (int64_t)time(NULL) / g->period;
    int missing = 0;
    if (gw_redis_ready(g->r)) {
        for (int64_t ep = e; ep <= e + 1; ep++) {
            if (ring_key(g, ep))
                continue;
            missing = 1;
            unsigned char k[80];
            char key[64];
            snprintf(key, sizeof(key), "tlsgate:tk:%lld:%lld", (long long)g->period, (long long)ep);
            if (RAND_bytes(k, sizeof(k)) == 1)
                gw_redis_command(g->r, NULL, NULL, "SET %s %b NX EX %lld", key, k, sizeof(k),
                                 (long long)(3 * g->period));
            OPENSSL_cleanse(k, sizeof(k));
            tk_get_t *q = malloc(sizeof(*q));
            if (q) {
                q->ring = g;
                q->epoch = ep;
                if (gw_redis_command(g->r, on_key, q, "GET %s", key) != 0)
                    free(q);
            }
        }
    } else {
        missing = !ring_key(g, e);
    }
    int64_t every = g->period * 1000 / 4;
    if (every > 5000)
        every = 5000;
    gw_timer_add(loop_, &g->timer, missing ? 500 : every < 100 ? 100 : every);
}

size_t gw_resume_ticket_keys(const char *url, int64_t period_s, gw_tls_ticket_key_t *keys,
                             size_t cap)
{
    if (!loop_ || period_s < 1 || cap < 3)
        return 0;
    tk_ring_t *g = rings;
    while (g && (strcmp(g->url, url) != 0 || g->period != period_s))
        g = g->next;
    if (!g) {
        g = calloc(1, sizeof(*g));
        gw_redis_t *r = gw_redis_get(url, loop_);
        if (!g || !r || !(g->url = strdup(url))) {
            free(g);
            return 0;
        }
        g->period = period_s;
        g->r = r;
        g->timer.cb = ring_refresh;
        g->next = rings;
        rings = g;
        gw_redis_ready(r); /* start connecting */
        gw_timer_add(loop_, &g->timer, 0);
        return 0;
    }
    int64_t e = (int64_t)time(NULL) / period_s;
    const gw_tls_ticket_key_t *cur = ring_key(g, e);
    if (!cur)
        return 0;
    size_t n = 0;
    keys[n++] = *cur;
    const gw_tls_ticket_key_t *k;
    if ((k = ring_key(g, e - 1)))
        keys[n++] = *k;
    if ((k = ring_key(g, e + 1)))
        keys[n++] = *k;
    return n;
}

int gw_resume_fleet_ready(void)
{
    int64_t now = (int64_t)time(NULL);
    for (tk_ring_t *g = rings; g; g = g->next)
        if (!ring_key(g, now / g->period))
            return 0;
    return 1;
}

void gw_resume_worker_start(const struct gw_cycle *cycle)
{
    for (size_t i = 0; i < cycle->n_vservers; i++)
        if (cycle->vservers[i].ssl_ctx)
            gw_tls_session_prime(cycle->vservers[i].ssl_ctx);
}
