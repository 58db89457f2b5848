/* Sizing and watching OpenSSL's secure heap; see secheap.h. */
#include "tls/secheap.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/privs.h"

#define MAX_HEAP ((int64_t)1 << 30) /* the directive's maximum */
#define POOL_ENTRY 160              /* prov/pool.c TG_POOL_ENTRY */
#define POOL_KINDS 5    /* ECDSA P-256 and P-384 nonces, P-256 and X25519 key pairs, spare */
#define POOL_DEFAULT 64 /* prov: pool_size default */

static int64_t arena; /* bytes of the arena set up (a power of two), 0: none */

static int64_t pow2(int64_t v)
{
    int64_t p = 4096;
    while (p < v && p < MAX_HEAP)
        p <<= 1;
    return p;
}

size_t gw_secheap_per_conn(const gw_conf_t *conf)
{
    size_t per = GW_SECHEAP_CONN_DEFAULT;
    for (size_t i = 0; i < conf->n_providers; i++) {
        const char *n = conf->providers[i].name;
        if (strcmp(n, "tlsgate") == 0 && per < GW_SECHEAP_CONN_TLSGATE)
            per = GW_SECHEAP_CONN_TLSGATE;
        else if (strcmp(n, "default") != 0 && strcmp(n, "tlsgate") != 0)
            per = GW_SECHEAP_CONN_PROVIDER;
    }
    return per;
}

/* The tlsgate provider's idle-time pools: POOL_KINDS blocks of pool_size entries. */
static int64_t pools(const gw_conf_t *conf)
{
    for (size_t i = 0; i < conf->n_providers; i++) {
        const gw_provider_conf_t *p = &conf->providers[i];
        if (strcmp(p->name, "tlsgate") != 0)
            continue;
        long n = POOL_DEFAULT;
        for (size_t j = 0; j < p->n_params; j++)
            if (strcmp(p->params[j].name, "pool_size") == 0)
                n = strtol(p->params[j].value, NULL, 10);
        if (n <= 0)
            return 0;
        n = (n + 7) / 8 * 8;
        return POOL_KINDS * pow2((int64_t)n * POOL_ENTRY);
    }
    return 0;
}

int64_t gw_secheap_need(const gw_conf_t *conf, int64_t keys_bytes)
{
    return (int64_t)conf->worker_connections * (int64_t)gw_secheap_per_conn(conf) + pools(conf) +
           keys_bytes;
}

int64_t gw_secheap_size(const gw_conf_t *conf)
{
    if (conf->ssl_secure_heap != GW_UNSET_SIZE)
        return conf->ssl_secure_heap;
    int64_t need = gw_secheap_need(conf, GW_SECHEAP_KEYS_RESERVE);
    if (need < GW_SECHEAP_MIN_DEFAULT)
        return GW_SECHEAP_MIN_DEFAULT;
    return need > MAX_HEAP ? MAX_HEAP : need;
}

void gw_secheap_init(const gw_conf_t *conf)
{
    int64_t size = gw_secheap_size(conf);
    if (gw_privs_secure_heap(size) == 0 && !arena && size > 0 && CRYPTO_secure_malloc_initialized())
        arena = pow2(size);
}

void gw_secheap_check(const gw_conf_t *conf)
{
    if (!arena || !CRYPTO_secure_malloc_initialized())
        return;
    int64_t used = (int64_t)CRYPTO_secure_used();
    int64_t need = gw_secheap_need(conf, used);
    if (need <= arena)
        return;
    int64_t per = (int64_t)gw_secheap_per_conn(conf);
    int64_t room = arena - used - pools(conf);
    int64_t fits = room > 0 ? room / per : 0;
    gw_warn_add("%s: ssl_secure_heap: the secure heap (%lld bytes%s) is smaller than %d "
                "worker_connections need (%lld bytes: %lld in use by keys, %lld for the "
                "provider's pools once full, %lld per connection%s): handshakes will fail "
                "after about %lld connections with full pools; set "
                "ssl_secure_heap %lldm or more (docs/security.md)",
                conf->conf_file, (long long)arena,
                conf->ssl_secure_heap == GW_UNSET_SIZE ? ", the default" : "",
                conf->worker_connections, (long long)need, (long long)used, (long long)pools(conf),
                (long long)per, per > GW_SECHEAP_CONN_DEFAULT ? " with a provider" : "",
                (long long)fits, (long long)((pow2(need) + (1 << 20) - 1) >> 20));
}

static int malloc_failure(unsigned long e)
{
    return e && ERR_GET_REASON(e) == ERR_R_MALLOC_FAILURE;
}

int gw_secheap_failed(const char *peer)
{
    static int64_t last_ms;
    static unsigned long missed;
    if (!arena || !CRYPTO_secure_malloc_initialized())
        return 0;
    int64_t used = (int64_t)CRYPTO_secure_used();
    if (!malloc_failure(ERR_peek_error()) && !malloc_failure(ERR_peek_last_error()) &&
        arena - used >= GW_SECHEAP_CONN_PROVIDER)
        return 0;
    int64_t now = gw_now_ms();
    if (last_ms && now - last_ms < 1000) {
        missed++;
        return 1;
    }
    gw_log(GW_LOG_ALERT, 0,
           "the secure heap is full (%lld of %lld bytes in use): the TLS "
           "handshake of client %s failed (%lu more since the last report); raise "
           "ssl_secure_heap or lower worker_connections (docs/security.md)",
           (long long)used, (long long)arena, peer, missed);
    last_ms = now;
    missed = 0;
    return 1;
}
