// fuzz-link: gw
/*
 * Fuzz target: the TLS ClientHello path of the gateway, in memory. The input's bytes are
 * what a client sends on a fresh connection (TLS records: normally a ClientHello); they are
 * written into a memory BIO under an SSL object made from the SSL_CTX of a real cycle
 * (gw_cycle_new over a configuration with three server blocks), with the gateway's own
 * ClientHello callback (gw_conn_client_hello: SNI parsing, server selection, SSL_CTX
 * switching, ssl_reject_handshake), and the handshake is driven until it wants more input.
 *
 * Input: byte 0 selects the listen address (even: its default server has
 * `ssl_reject_handshake on` and no certificate; odd: a default server with RSA and ECDSA
 * certificates); the rest is the client's byte stream.
 *
 * Checks, besides memory safety: the connection's server block and the SSL's SSL_CTX agree
 * after the callback; a server with ssl_reject_handshake never sends a handshake record (its
 * answer is at most an alert); the handshake never completes (the client never finishes).
 * Certificates: the embedded default's (gw_tls_make_default_certs) in a temporary directory
 * made once per process.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "fuzz.h"

#include "core/log.h"
#include "cycle.h"
#include "http/conn.h"
#include "tls/tls.h"

static gw_cycle_t *cycle;
static char dir[64];

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "tls_hello: invariant failed: %s\n", what);
        abort();
    }
}

static void cleanup(void)
{
    static const char *const names[] = {"default-rsa.crt", "default-rsa.key", "default-ecdsa.crt",
                                        "default-ecdsa.key"};
    char p[128];
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
    gw_cycle_free(cycle);
    cycle = NULL;
}

static void init(void)
{
    gw_log_open("stderr", GW_LOG_EMERG); /* the callback's info lines are noise here */
    check(gw_tls_init() == 0, "gw_tls_init");
    snprintf(dir, sizeof(dir), "/tmp/tlsgate-fuzz-XXXXXX");
    check(mkdtemp(dir) != NULL, "mkdtemp");
    gw_errlist_t errs = {0};
    check(gw_tls_make_default_certs(dir, &errs) == 0, "default certificates");
    char text[4096];
    char rsa_line[512], ec_line[512];
    snprintf(rsa_line, sizeof(rsa_line),
             "ssl_certificate %1$s/default-rsa.crt; ssl_certificate_key %1$s/default-rsa.key;",
             dir);
    snprintf(ec_line, sizeof(ec_line),
             "ssl_certificate %1$s/default-ecdsa.crt; ssl_certificate_key %1$s/default-ecdsa.key;",
             dir);
    snprintf(text, sizeof(text),
             "http {\n"
             " server { listen 127.0.0.1:1 ssl default_server; server_name d.test;"
             "  ssl_reject_handshake on; }\n"
             " server { listen 127.0.0.1:1 ssl; listen 127.0.0.1:2 ssl; server_name a.test"
             "  *.w.test; %s %s }\n"
             " server { listen 127.0.0.1:1 ssl; listen 127.0.0.1:2 ssl default_server;"
             "  server_name b.test; ssl_protocols TLSv1.2; %s }\n"
             " server { listen 127.0.0.1:2 ssl; server_name r.test; ssl_reject_handshake on; }\n"
             "}\n",
             rsa_line, ec_line, rsa_line);
    gw_conf_t *conf = gw_conf_parse("fuzz.conf", text, strlen(text), "/", NULL, dir, &errs);
    if (conf)
        cycle = gw_cycle_new(conf, gw_conn_client_hello, &errs);
    for (size_t i = 0; i < errs.n; i++)
        fprintf(stderr, "tls_hello: %s\n", errs.v[i]);
    check(cycle && cycle->n_laddrs == 2, "cycle");
    gw_errlist_clear(&errs);
    atexit(cleanup);
}

/* Does out (the server's bytes) hold a handshake record? */
static int has_handshake_record(BIO *out)
{
    const unsigned char *p;
    long n = BIO_get_mem_data(out, (char **)&p);
    while (n >= 5) {
        if (p[0] == SSL3_RT_HANDSHAKE)
            return 1;
        long len = 5 + ((long)p[3] << 8 | p[4]);
        p += len;
        n -= len;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!cycle)
        init();
    if (size < 1)
        return 0;
    gw_laddr_t *la = &cycle->laddrs[data[0] & 1];
    gw_conn_t *c = calloc(1, sizeof(*c));
    check(c != NULL, "calloc");
    c->s.fd = -1;
    c->laddr = la;
    c->vs = la->default_server;
    snprintf(c->s.peer_text, sizeof(c->s.peer_text), "fuzz");
    ERR_clear_error();
    SSL *ssl = SSL_new(c->vs->ssl_ctx);
    BIO *in = BIO_new(BIO_s_mem()), *out = BIO_new(BIO_s_mem());
    check(ssl && in && out, "SSL_new/BIO_new");
    SSL_set_bio(ssl, in, out);
    SSL_set_app_data(ssl, c);
    SSL_set_accept_state(ssl);
    BIO_write(in, data + 1, (int)(size - 1));
    int r = 0;
    for (int i = 0; i < 4; i++) { /* WANT_READ once the input is used up */
        r = SSL_do_handshake(ssl);
        if (r == 1 || SSL_get_error(ssl, r) != SSL_ERROR_WANT_READ)
            break;
    }
    /* a ClientHello alone can never complete a full handshake, and resumption with
     * early data is not configured */
    check(r != 1, "handshake completed without a client Finished");
    check(SSL_get_SSL_CTX(ssl) == c->vs->ssl_ctx, "server block and SSL_CTX agree");
    if (c->vs->conf->srv.ssl_reject_handshake == 1)
        check(!has_handshake_record(out), "a rejecting server sent a handshake record");
    if (c->sni_matched)
        check(c->sni_present, "matched without SNI");
    ERR_clear_error();
    SSL_free(ssl);
    free(c);
    return 0;
}
