/*
 * secheap_probe: how much of OpenSSL's secure heap (CRYPTO_secure_malloc_init) a server-side
 * TLS handshake in flight holds, for one key exchange / certificate kind, with OpenSSL's
 * default provider or tlsgate's (tlsgate.so), synchronous or in async jobs (SSL_MODE_ASYNC).
 *
 * In one process, over memory BIO pairs: N clients (default provider, their own library
 * context so their allocations can be told apart... they share the one secure heap, so the
 * server's share is measured around the server's steps only) send a ClientHello; each
 * server SSL takes its first step; CRYPTO_secure_used() is read before and after every
 * server step. The figures are bytes of the secure heap (OpenSSL's buddy allocator: each
 * block a power of two >= 32 bytes) retained per connection:
 *   wait     after the server's first flight, waiting for the client's next flight;
 *   paused   (async only) while the server's job is paused in a private-key operation
 *            (the larger of the two steps' paused states);
 *   done     once the handshake completed (an established connection);
 *   freed    after SSL_free of all N (0 = nothing left behind).
 *
 * Usage: secheap_probe CERT KEY KIND N [tlsgate.so] [async]
 *   KIND: tls13 (X25519 key share) | tls12-ecdhe (ECDHE, the certificate signs) |
 *         tls12-rsa (RSA key exchange: AES128-GCM-SHA256, the RSA key decrypts)
 *   tlsgate.so: the provider module to prefer (?provider=tlsgate); absent: default
 *   async: SSL_MODE_ASYNC on the server (jobs pause in the provider until its timer
 *          thread computes the batch; the probe then resumes them)
 * Output: one line "kind=... provider=... async=0|1 n=N wait=B paused=B done=B freed=B
 * base=B" (B: bytes per connection, base: bytes in use before the first connection).
 * Exit status 0, or 1 with a message on stderr when anything fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/async.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/provider.h>
#include <openssl/ssl.h>

#include "core/lsan.h"

#define HEAP (64u << 20)

static void die(const char *what)
{
    fprintf(stderr, "secheap_probe: %s\n", what);
    ERR_print_errors_fp(stderr);
    exit(1);
}

/* Move whatever one side wrote to the other side. */
static void pump(BIO *from_net, BIO *to_net)
{
    char buf[16384];
    int n;
    while ((n = BIO_read(from_net, buf, sizeof(buf))) > 0)
        if (BIO_write(to_net, buf, n) != n)
            die("BIO_write");
}


typedef struct pair {
    SSL *cli, *srv;
    BIO *cli_net, *srv_net; /* the network ends of each side's BIO pair */
} pair_t;

/* One server step: SSL_do_handshake until it wants the client (WANT_READ), is paused in
 * a job (WANT_ASYNC: returns 2), or completed (1). */
static int srv_step(pair_t *p)
{
    int r = SSL_do_handshake(p->srv);
    if (r == 1)
        return 1;
    int e = SSL_get_error(p->srv, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        return 0;
    if (e == SSL_ERROR_WANT_ASYNC)
        return 2;
    die("server handshake failed");
    return -1;
}

static void cli_step(pair_t *p)
{
    int r = SSL_do_handshake(p->cli);
    if (r != 1) {
        int e = SSL_get_error(p->cli, r);
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
            die("client handshake failed");
    }
}

/* Resume a paused server job until it is no longer paused (the provider's timer thread
 * or fakeaccel's thread computes the operation meanwhile). */
static int srv_resume(pair_t *p)
{
    for (int i = 0; i < 20000; i++) {
        int r = srv_step(p);
        if (r != 2)
            return r;
        usleep(100);
    }
    die("a job stayed paused for 2 s");
    return -1;
}

/* Drive a started handshake (r: the server's last step) to its end: exchange flights and
 * resume paused jobs, at most 8 rounds. Returns the server's last step (1: done). */
static int complete(pair_t *p, int r)
{
    for (int k = 0; k < 8 && r != 1; k++) {
        pump(p->srv_net, p->cli_net);
        cli_step(p);
        pump(p->cli_net, p->srv_net);
        r = srv_step(p);
        if (r == 2)
            r = srv_resume(p);
    }
    return r;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: secheap_probe CERT KEY tls13|tls12-ecdhe|tls12-rsa N "
                        "[tlsgate.so] [async]\n");
        return 2;
    }
    const char *cert = argv[1], *key = argv[2], *kind = argv[3];
    int n = atoi(argv[4]);
    const char *module = argc > 5 && strcmp(argv[5], "-") ? argv[5] : NULL;
    int async = argc > 6 && strcmp(argv[6], "async") == 0;
    if (n < 1 || n > 100000)
        die("N must be 1..100000");
    if (CRYPTO_secure_malloc_init(HEAP, 32) == 0)
        die("CRYPTO_secure_malloc_init failed");
    gw_lsan_register_secure_heap(); /* sanitizer builds (gw/core/lsan.c) */

    const char *propq = NULL;
    OSSL_PROVIDER *prov_tg = NULL, *prov_dflt = NULL;
    if (module) {
        char dir[4096];
        snprintf(dir, sizeof(dir), "%s", module);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = 0;
        else
            snprintf(dir, sizeof(dir), ".");
        if (!OSSL_PROVIDER_set_default_search_path(NULL, dir))
            die("OSSL_PROVIDER_set_default_search_path");
        prov_tg = OSSL_PROVIDER_load(NULL, "tlsgate");
        prov_dflt = OSSL_PROVIDER_load(NULL, "default");
        if (!prov_tg || !prov_dflt)
            die("cannot load the tlsgate provider");
        propq = "?provider=tlsgate";
    }
    SSL_CTX *sctx = SSL_CTX_new_ex(NULL, propq, TLS_server_method());
    SSL_CTX *cctx = SSL_CTX_new(TLS_client_method());
    if (!sctx || !cctx)
        die("SSL_CTX_new");
    if (SSL_CTX_use_certificate_chain_file(sctx, cert) != 1 ||
        SSL_CTX_use_PrivateKey_file(sctx, key, SSL_FILETYPE_PEM) != 1)
        die("cannot load the certificate or key");
    SSL_CTX_set_session_cache_mode(sctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_options(sctx, SSL_OP_NO_TICKET);
    SSL_CTX_set_num_tickets(sctx, 0);
    if (async)
        SSL_CTX_set_mode(sctx, SSL_MODE_ASYNC);
    if (strcmp(kind, "tls13") == 0) {
        SSL_CTX_set_min_proto_version(cctx, TLS1_3_VERSION);
        if (!SSL_CTX_set1_groups_list(cctx, "X25519"))
            die("groups");
    } else if (strcmp(kind, "tls12-ecdhe") == 0) {
        SSL_CTX_set_max_proto_version(cctx, TLS1_2_VERSION);
        if (!SSL_CTX_set_cipher_list(cctx, "ECDHE-ECDSA-AES128-GCM-SHA256:"
                                           "ECDHE-RSA-AES128-GCM-SHA256") ||
            !SSL_CTX_set1_groups_list(cctx, "X25519:P-256")) /* P-256: the ECDSA cert's */
            die("ciphers");
    } else if (strcmp(kind, "tls12-rsa") == 0) {
        SSL_CTX_set_max_proto_version(cctx, TLS1_2_VERSION);
        if (!SSL_CTX_set_cipher_list(cctx, "AES128-GCM-SHA256") ||
            !SSL_CTX_set_cipher_list(sctx, "AES128-GCM-SHA256"))
            die("ciphers");
    } else {
        die("unknown KIND");
    }

    pair_t *ps = calloc((size_t)n + 1, sizeof(*ps));
    if (!ps)
        die("calloc");
    /* pair 0 is a warm-up (the provider converts the key and fills its pools on first use:
     * once per key and worker, not per connection); it stays open */
    size_t base = 0, wait_sum = 0, paused_max1 = 0, paused_max2 = 0, done_sum = 0;
    size_t paused_sum1 = 0, paused_sum2 = 0;
    int paused1 = 0, paused2 = 0;
    for (int i = 0; i <= n; i++) {
        pair_t *p = &ps[i];
        BIO *cb, *sb;
        if (i == 1)
            base = CRYPTO_secure_used();
        p->cli = SSL_new(cctx);
        p->srv = SSL_new(sctx);
        if (!p->cli || !p->srv || !BIO_new_bio_pair(&cb, 0, &p->cli_net, 0) ||
            !BIO_new_bio_pair(&sb, 0, &p->srv_net, 0))
            die("SSL_new / BIO pairs");
        SSL_set_bio(p->cli, cb, cb);
        SSL_set_bio(p->srv, sb, sb);
        SSL_set_connect_state(p->cli);
        SSL_set_accept_state(p->srv);
        cli_step(p); /* ClientHello */
        pump(p->cli_net, p->srv_net);
        size_t u0 = CRYPTO_secure_used();
        int r = srv_step(p);
        size_t u1 = CRYPTO_secure_used();
        if (i == 0) { /* warm-up: complete it */
            if (r == 2)
                r = srv_resume(p);
            if (complete(p, r) != 1)
                die("warm-up handshake did not complete");
            continue;
        }
        if (r == 2) {
            paused1++;
            paused_sum1 += u1 - u0;
            if (u1 - u0 > paused_max1)
                paused_max1 = u1 - u0;
        } else {
            wait_sum += u1 - u0;
        }
    }
    /* resume the paused jobs (first step), measuring what waiting for the client holds */
    for (int i = 1; i <= n; i++) {
        pair_t *p = &ps[i];
        if (!SSL_waiting_for_async(p->srv))
            continue;
        size_t u0 = CRYPTO_secure_used();
        int r = srv_resume(p);
        size_t u1 = CRYPTO_secure_used();
        if (r == 1)
            die("handshake completed in its first server step");
        wait_sum += u1 - u0 + (paused1 ? paused_sum1 / (size_t)paused1 : 0);
    }
    /* the client's second flight; the server's second step */
    for (int i = 1; i <= n; i++) {
        pair_t *p = &ps[i];
        pump(p->srv_net, p->cli_net);
        cli_step(p);
        pump(p->cli_net, p->srv_net);
        size_t u0 = CRYPTO_secure_used();
        int r = srv_step(p);
        size_t u1 = CRYPTO_secure_used();
        if (r == 2) {
            paused2++;
            paused_sum2 += u1 - u0;
            if (u1 - u0 > paused_max2)
                paused_max2 = u1 - u0;
        }
    }
    for (int i = 1; i <= n; i++) {
        pair_t *p = &ps[i];
        int r = SSL_waiting_for_async(p->srv) ? srv_resume(p) : srv_step(p);
        if (complete(p, r) != 1)
            die("handshake did not complete");
        pump(p->srv_net, p->cli_net);
        cli_step(p);
    }
    done_sum = CRYPTO_secure_used() - base;
    /* free the clients first: what is left above the start is the servers' */
    size_t before_cli = CRYPTO_secure_used();
    for (int i = 1; i <= n; i++) {
        SSL_free(ps[i].cli);
        BIO_free(ps[i].cli_net);
    }
    size_t cli_share = before_cli - CRYPTO_secure_used();
    done_sum -= cli_share < done_sum ? cli_share : done_sum;
    for (int i = 1; i <= n; i++) {
        SSL_free(ps[i].srv);
        BIO_free(ps[i].srv_net);
    }
    size_t after = CRYPTO_secure_used();
    long freed = (long)after - (long)base;
    double avg_p1 = paused1 ? (double)paused_sum1 / paused1 : 0;
    double avg_p2 = paused2 ? (double)paused_sum2 / paused2 : 0;
    printf("kind=%s provider=%s async=%d n=%d wait=%.0f paused=%.0f paused_steps=%d/%d "
           "done=%.0f freed=%ld base=%zu\n",
           kind, module ? "tlsgate" : "default", async, n, (double)wait_sum / n,
           avg_p1 > avg_p2 ? avg_p1 : avg_p2, paused1, paused2, (double)done_sum / n, freed, base);
    SSL_free(ps[0].cli);
    SSL_free(ps[0].srv);
    BIO_free(ps[0].cli_net);
    BIO_free(ps[0].srv_net);
    free(ps);
    SSL_CTX_free(sctx);
    SSL_CTX_free(cctx);
    if (prov_tg)
        OSSL_PROVIDER_unload(prov_tg);
    if (prov_dflt)
        OSSL_PROVIDER_unload(prov_dflt);
    fflush(stdout); /* before LeakSanitizer's exit handler, in sanitizer builds */
    return 0;
}
