/*
 * The socket layer (gw/sock) alone, over a socketpair, driven by a loop pass like the
 * worker's (epoll, timers, async wakes posted, posted work, job retries), with a tiny echo
 * protocol on top: plain and TLS echo, a lingering close, the handshake timeout, and async
 * TLS on tests/fakeaccel: a handshake whose signature pauses its job, and a socket closed
 * while its job is paused (drained: freed only once the job finished).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <fcntl.h>
#include <signal.h>

#include <openssl/async.h>
#include <openssl/evp.h>
#include <openssl/provider.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "core/clock.h"
#include "core/stats.h"
#include "net/loop.h"
#include "net/post.h"
#include "sock/sock.h"

static gw_loop_t loop;

/* ---- the owner and an echo protocol ---- */

typedef struct tconn {
    gw_sock_t s; /* first */
    int freed_seen;
    int timeouts;
    int end_on_read; /* gw_sock_end(s, 1) after the first read: a lingering close */
} tconn_t;

static int n_freed, n_handshakes;

static void echo_drive(gw_sock_t *s)
{
    tconn_t *t = (tconn_t *)s;
    for (;;) {
        if (s->out_len > s->out_off) {
            int r = gw_sock_flush(s);
            if (r < 0) {
                gw_sock_close(s);
                return;
            }
            if (r == 0)
                return;
        }
        char buf[4096];
        size_t got = 0;
        int r = gw_sock_read(s, buf, sizeof(buf), &got);
        if (r == GW_SOCK_AGAIN)
            return;
        if (r != GW_SOCK_OK) {
            gw_sock_end(s, 0);
            return;
        }
        if (t->end_on_read) {
            gw_sock_end(s, 1);
            return;
        }
        gw_sock_out_append(s, buf, got);
    }
}

static void echo_timeout(gw_sock_t *s)
{
    ((tconn_t *)s)->timeouts++;
    gw_sock_close(s);
}

static const gw_sock_proto_t echo = {"echo", echo_drive, echo_timeout, NULL};

static void on_hs(gw_sock_t *s)
{
    n_handshakes++;
    s->proto = &echo;
}

static void on_freed(gw_sock_t *s)
{
    n_freed++;
    free(s);
}

static const gw_sock_owner_t owner = {on_hs, on_freed, NULL, NULL};

/* one pass of the worker's loop */
static void pass(int wait_ms)
{
    gw_loop_once(&loop, wait_ms);
    gw_sock_async_process();
    gw_post_run();
    gw_sock_async_retry();
}

static void run_until_freed(int want, int max_ms)
{
    int64_t end = gw_now_ms() + max_ms;
    while (n_freed < want && gw_now_ms() < end)
        pass(5);
}

static tconn_t *open_sock(int fd, SSL_CTX *ctx)
{
    tconn_t *t = calloc(1, sizeof(*t));
    assert_non_null(t);
    strcpy(t->s.peer_text, "test");
    t->s.send_timeout_ms = 5000;
    fcntl(fd, F_SETFL, O_NONBLOCK);
    assert_int_equal(gw_sock_open(&t->s, &loop, fd, ctx, 0, &owner, t), 0);
    if (!ctx)
        t->s.proto = &echo;
    return t;
}

/* ---- a blocking client in a thread ---- */

typedef struct client {
    int fd;
    SSL_CTX *ctx; /* NULL: plain */
    char reply[64];
    size_t reply_len;
    int ok;
} client_t;

static void *client_run(void *arg)
{
    client_t *cl = arg;
    SSL *ssl = NULL;
    if (cl->ctx) {
        ssl = SSL_new(cl->ctx);
        SSL_set_fd(ssl, cl->fd);
        if (SSL_connect(ssl) != 1)
            goto out;
        if (SSL_write(ssl, "ping", 4) != 4)
            goto out;
        while (cl->reply_len < 4) {
            int n = SSL_read(ssl, cl->reply + cl->reply_len, 4);
            if (n <= 0)
                goto out;
            cl->reply_len += (size_t)n;
        }
        SSL_shutdown(ssl);
    } else {
        if (write(cl->fd, "ping", 4) != 4)
            goto out;
        while (cl->reply_len < 4) {
            ssize_t n = read(cl->fd, cl->reply + cl->reply_len, 4);
            if (n <= 0)
                goto out;
            cl->reply_len += (size_t)n;
        }
    }
    cl->ok = 1;
out:
    shutdown(cl->fd, SHUT_WR);
    SSL_free(ssl);
    return NULL;
}

/* ---- TLS contexts ---- */

static SSL_CTX *server_ctx(int async)
{
    EVP_PKEY *key = EVP_EC_gen("P-256");
    assert_non_null(key);
    X509 *x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), 0);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                               (const unsigned char *)"test", -1, -1, 0);
    X509_set_issuer_name(x, X509_get_subject_name(x));
    X509_set_pubkey(x, key);
    assert_true(X509_sign(x, key, EVP_sha256()) > 0);
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    assert_non_null(ctx);
    assert_int_equal(SSL_CTX_use_certificate(ctx, x), 1);
    assert_int_equal(SSL_CTX_use_PrivateKey(ctx, key), 1);
    if (async) {
        SSL_CTX_set_mode(ctx, SSL_MODE_ASYNC);
        SSL_CTX_set_async_callback(ctx, gw_sock_async_callback);
    }
    X509_free(x);
    EVP_PKEY_free(key);
    return ctx;
}

static SSL_CTX *client_ctx(void)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    assert_non_null(ctx);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    return ctx;
}

static void pair(int sv[2])
{
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
}

/* ---- tests ---- */

static void echo_case(SSL_CTX *sctx, SSL_CTX *cctx)
{
    int sv[2];
    pair(sv);
    int before = n_freed;
    open_sock(sv[0], sctx);
    client_t cl = {.fd = sv[1], .ctx = cctx};
    pthread_t th;
    pthread_create(&th, NULL, client_run, &cl);
    run_until_freed(before + 1, 5000);
    pthread_join(th, NULL);
    close(sv[1]);
    assert_int_equal(n_freed, before + 1);
    assert_true(cl.ok);
    assert_memory_equal(cl.reply, "ping", 4);
}

/* gw_sock_in_consume: what follows the first n bytes moves to the start; 0 keeps all, the
 * whole length empties the buffer */
static void test_in_consume(void **st)
{
    (void)st;
    char buf[8] = "abcdef";
    gw_sock_t s = {.in = buf, .in_len = 6, .in_cap = sizeof(buf)};
    gw_sock_in_consume(&s, 0);
    assert_int_equal(s.in_len, 6);
    assert_memory_equal(buf, "abcdef", 6);
    gw_sock_in_consume(&s, 2);
    assert_int_equal(s.in_len, 4);
    assert_memory_equal(buf, "cdef", 4);
    gw_sock_in_consume(&s, 4);
    assert_int_equal(s.in_len, 0);
}

static void test_plain_echo(void **st)
{
    (void)st;
    echo_case(NULL, NULL);
}

static void test_tls_echo(void **st)
{
    (void)st;
    SSL_CTX *s = server_ctx(0), *c = client_ctx();
    int hs = n_handshakes;
    echo_case(s, c);
    assert_int_equal(n_handshakes, hs + 1);
    SSL_CTX_free(s);
    SSL_CTX_free(c);
}

/* gw_sock_end with unread input: shutdown(WR), drain until the peer's EOF, then free */
static void test_linger(void **st)
{
    (void)st;
    int sv[2];
    pair(sv);
    int before = n_freed;
    tconn_t *t = open_sock(sv[0], NULL);
    t->end_on_read = 1;
    assert_int_equal(write(sv[1], "abc", 3), 3);
    pass(5);
    pass(5);
    assert_int_equal(n_freed, before); /* lingering: not freed while the peer sends */
    char b[8];
    assert_int_equal(read(sv[1], b, sizeof(b)), 0); /* our FIN arrived */
    assert_int_equal(write(sv[1], "more", 4), 4);
    pass(5);
    assert_int_equal(n_freed, before);
    close(sv[1]); /* the peer's EOF ends the linger */
    run_until_freed(before + 1, 2000);
    assert_int_equal(n_freed, before + 1);
}

/* a socket (TLS with ctx, plain without) whose client never speaks, its timer set to
 * timer_ms: the timer closes it and it is freed within 2 s */
static void timer_case(SSL_CTX *ctx, int timer_ms)
{
    int sv[2];
    pair(sv);
    int before = n_freed;
    tconn_t *t = open_sock(sv[0], ctx);
    gw_sock_timer(&t->s, timer_ms);
    run_until_freed(before + 1, 2000);
    assert_int_equal(n_freed, before + 1);
    close(sv[1]);
}

/* a TLS socket whose client never speaks: the timer closes it as a failed handshake */
static void test_handshake_timeout(void **st)
{
    (void)st;
    SSL_CTX *s = server_ctx(0);
    uint64_t failed = gw_stats->handshakes_failed;
    timer_case(s, 20);
    assert_int_equal(gw_stats->handshakes_failed, failed + 1);
    SSL_CTX_free(s);
}

/* the protocol's timeout runs once the handshake is done */
static void test_proto_timeout(void **st)
{
    (void)st;
    timer_case(NULL, 10);
}

static int have_fakeaccel;

/* async TLS: the server's ECDSA signature goes to fakeaccel, which pauses the job; the
 * wake resumes it through the posted queue and the echo completes */
static void test_async_handshake(void **st)
{
    (void)st;
    if (!have_fakeaccel)
        skip();
    SSL_CTX *s = server_ctx(1), *c = client_ctx();
    uint64_t resumed = gw_wstats->resumed;
    echo_case(s, c);
    assert_true(gw_wstats->resumed > resumed);
    assert_int_equal(gw_sock_async_paused(), 0);
    SSL_CTX_free(s);
    SSL_CTX_free(c);
}

/* closed while its job is paused: drained, never freed before the job ends */
static void test_async_drain(void **st)
{
    (void)st;
    if (!have_fakeaccel)
        skip();
    SSL_CTX *s = server_ctx(1), *c = client_ctx();
    int sv[2];
    pair(sv);
    int before = n_freed;
    uint64_t drained = gw_wstats->drained;
    tconn_t *t = open_sock(sv[0], s);
    client_t cl = {.fd = sv[1], .ctx = c};
    pthread_t th;
    pthread_create(&th, NULL, client_run, &cl);
    int64_t end = gw_now_ms() + 5000;
    while (!t->s.async_paused && n_freed == before && gw_now_ms() < end)
        pass(1);
    assert_true(t->s.async_paused);
    gw_sock_close(&t->s);              /* as a timeout would */
    assert_int_equal(n_freed, before); /* the paused job's SSL is kept */
    assert_true(t->s.draining);
    run_until_freed(before + 1, 5000);
    assert_int_equal(n_freed, before + 1);
    assert_int_equal(gw_wstats->drained, drained + 1);
    assert_int_equal(gw_sock_async_paused(), 0);
    shutdown(sv[1], SHUT_RDWR);
    pthread_join(th, NULL);
    close(sv[1]);
    SSL_CTX_free(s);
    SSL_CTX_free(c);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    gw_clock_update();
    if (gw_loop_init(&loop) != 0 || gw_sock_async_init(&loop) != 0)
        return 1;
    /* fakeaccel preferred for everything it offers (its README), when it is built */
    OSSL_PROVIDER_set_default_search_path(NULL, FAKEACCEL_MODULE_DIR);
    OSSL_PROVIDER *fake = OSSL_PROVIDER_load(NULL, "fakeaccel");
    OSSL_PROVIDER *dflt = fake ? OSSL_PROVIDER_load(NULL, "default") : NULL;
    if (fake && dflt) {
        have_fakeaccel = EVP_set_default_properties(NULL, "?provider=fakeaccel") == 1;
        ASYNC_init_thread(16, 0);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_echo),    cmocka_unit_test(test_tls_echo),
        cmocka_unit_test(test_linger),        cmocka_unit_test(test_handshake_timeout),
        cmocka_unit_test(test_proto_timeout), cmocka_unit_test(test_async_handshake),
        cmocka_unit_test(test_async_drain),   cmocka_unit_test(test_in_consume),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    /* unloaded, so that LeakSanitizer does not report the loads (ASan CI build) */
    if (have_fakeaccel)
        ASYNC_cleanup_thread();
    if (dflt)
        OSSL_PROVIDER_unload(dflt);
    if (fake)
        OSSL_PROVIDER_unload(fake);
    return rc;
}
