#include "http/resume.h"

#include "core/log.h"
#include "http/conn.h"
#include "net/redis.h"
#include "tls/session.h"
#include "worker.h"

#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

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
    if (gw_worker)
        gw_timer_del(&gw_worker->loop, &lk->timer);
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
    gw_timer_add(&gw_worker->loop, &lk->timer, 0);
}

int gw_resume_client_hello(struct gw_conn *c, SSL *ssl)
{
    if (!gw_worker)
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
    if (!gw_tls_session_remote_lookup(ssl, id, &id_len, &url, &tmo))
        return SSL_CLIENT_HELLO_SUCCESS;
    gw_redis_t *r = gw_redis_get(url, &gw_worker->loop);
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
    if (gw_redis_command(r, on_get, lk, "GET " KEY_PREFIX "%b", id, id_len) != 0) {
        lk->state = DONE; /* freed with the SSL */
        return SSL_CLIENT_HELLO_SUCCESS;
    }
    lk->in_redis = 1;
    lk->state = PENDING;
    lk->timer.cb = on_timeout;
    gw_timer_add(&gw_worker->loop, &lk->timer, tmo);
    return SSL_CLIENT_HELLO_RETRY;
}

void gw_resume_store(const char *url, const unsigned char *id, size_t id_len,
                     const unsigned char *der, size_t der_len, int64_t ttl_s)
{
    if (!gw_worker)
        return;
    gw_redis_t *r = gw_redis_get(url, &gw_worker->loop);
    if (!r || !gw_redis_ready(r))
        return;
    gw_redis_command(r, NULL, NULL, "SET " KEY_PREFIX "%b %b EX %lld", id, id_len, der, der_len,
                     (long long)ttl_s);
}
