#include "tls/upstream_ctx.h"

#include <stdio.h>

#include <openssl/err.h>

#include "core/log.h"
#include "tls/keys.h"
#include "tls/tls.h"

static int (*session_cb)(SSL *ssl, SSL_SESSION *sess);

void gw_tls_upstream_set_session_cb(int (*fn)(SSL *ssl, SSL_SESSION *sess))
{
    session_cb = fn;
}

static int new_session(SSL *ssl, SSL_SESSION *sess)
{
    return session_cb ? session_cb(ssl, sess) : 0;
}

typedef struct where {
    const char *file;
    int line;
} where_t;

static SSL_CTX *build(const gw_deploy_loc_t *d, const where_t *l, const gw_server_t *s,
                      gw_errlist_t *errs)
{
    const char *file = l->file ? l->file : s->file ? s->file : "<config>";
    char why[1024];
    SSL_CTX *ctx = gw_tls_ctx_alloc(TLS_client_method(), file, l->line, "proxy_pass", errs);
    if (!ctx)
        return NULL;
    unsigned bits =
        d->proxy_ssl_protocols ? d->proxy_ssl_protocols : GW_PROTO_TLSV1_2 | GW_PROTO_TLSV1_3;
    static const struct {
        unsigned bit;
        int ver;
    } map[] = {{GW_PROTO_TLSV1, TLS1_VERSION},
               {GW_PROTO_TLSV1_1, TLS1_1_VERSION},
               {GW_PROTO_TLSV1_2, TLS1_2_VERSION},
               {GW_PROTO_TLSV1_3, TLS1_3_VERSION}};
    int min = 0, max = 0;
    for (size_t i = 0; i < 4; i++)
        if (bits & map[i].bit) {
            if (!min)
                min = map[i].ver;
            max = map[i].ver;
        }
    SSL_CTX_set_min_proto_version(ctx, min);
    SSL_CTX_set_max_proto_version(ctx, max);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    if (d->proxy_ssl_ciphers && !SSL_CTX_set_cipher_list(ctx, d->proxy_ssl_ciphers)) {
        gw_ssl_reason(why, sizeof(why));
        gw_errlist_add(errs, "%s:%d: proxy_ssl_ciphers: invalid cipher list \"%s\": %s", file,
                       l->line, d->proxy_ssl_ciphers, why);
        goto fail;
    }
    if (d->proxy_ssl_verify == 1) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        SSL_CTX_set_verify_depth(ctx,
                                 d->proxy_ssl_verify_depth >= 0 ? d->proxy_ssl_verify_depth : 1);
        if (SSL_CTX_load_verify_locations(ctx, d->proxy_ssl_trusted_certificate, NULL) != 1) {
            gw_ssl_reason(why, sizeof(why));
            gw_errlist_add(errs, "%s:%d: proxy_ssl_trusted_certificate: cannot load \"%s\": %s",
                           file, l->line, d->proxy_ssl_trusted_certificate, why);
            goto fail;
        }
    }
    if (d->proxy_ssl_certificate) {
        if (SSL_CTX_use_certificate_chain_file(ctx, d->proxy_ssl_certificate) != 1) {
            gw_ssl_reason(why, sizeof(why));
            gw_errlist_add(errs, "%s:%d: proxy_ssl_certificate: cannot load \"%s\": %s", file,
                           l->line, d->proxy_ssl_certificate, why);
            goto fail;
        }
        char where[1024];
        snprintf(where, sizeof(where), "%s:%d", file, l->line);
        if (!gw_tls_use_key_file(ctx, d->proxy_ssl_certificate_key, s->srv.ssl_password_file, where,
                                 why, sizeof(why)) ||
            SSL_CTX_check_private_key(ctx) != 1) {
            if (ERR_peek_error())
                gw_ssl_reason(why, sizeof(why));
            gw_errlist_add(errs, "%s:%d: proxy_ssl_certificate_key: cannot use \"%s\": %s", file,
                           l->line, d->proxy_ssl_certificate_key, why);
            goto fail;
        }
    }
    if (d->proxy_ssl_session_reuse != 0) {
        /* sessions are kept by proxy/upstream_tls.c, per upstream server */
        SSL_CTX_set_session_cache_mode(ctx,
                                       SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
        SSL_CTX_sess_set_new_cb(ctx, new_session);
    } else {
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
        SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    }
    ERR_clear_error();
    return ctx;
fail:
    SSL_CTX_free(ctx);
    ERR_clear_error();
    return NULL;
}

/* ssl_async of the server that proxies (the location's server block, or the stream
 * server): its upstream handshakes run in async jobs, woken as its notify says */
static int async_mode(const gw_server_t *s)
{
    if (s->srv.ssl_async != 1)
        return 0;
    return s->srv.ssl_async_notify == GW_ASYNC_NOTIFY_FD ? 2 : 1;
}

/* d's context and async mode (d: a location's or a stream server's settings in server s,
 * its directive at w). 0, or -1 with the reason in errs. */
static int setup(gw_deploy_loc_t *d, const where_t *w, const gw_server_t *s, gw_errlist_t *errs)
{
    d->proxy_ssl_ctx = build(d, w, s, errs);
    d->proxy_ssl_async = async_mode(s);
    return d->proxy_ssl_ctx ? 0 : -1;
}

static void drop(gw_deploy_loc_t *d)
{
    SSL_CTX_free(d->proxy_ssl_ctx);
    d->proxy_ssl_ctx = NULL;
}

int gw_tls_upstream_ctxs_build(gw_conf_t *conf, gw_errlist_t *errs)
{
    int rc = 0;
    for (size_t i = 0; i < conf->http.n_servers; i++) {
        gw_server_t *s = &conf->http.servers[i];
        for (size_t j = 0; j < s->n_locations; j++) {
            gw_location_t *l = &s->locations[j];
            where_t w = {l->file, l->line};
            if (l->proxy_pass && l->loc.dep.proxy_https && setup(&l->loc.dep, &w, s, errs) != 0)
                rc = -1;
        }
    }
    for (size_t i = 0; i < conf->stream.n_servers; i++) { /* stream: proxy_ssl on */
        gw_server_t *s = &conf->stream.servers[i].server;
        where_t w = {s->file, s->line};
        if (s->loc.dep.proxy_https && setup(&s->loc.dep, &w, s, errs) != 0)
            rc = -1;
    }
    return rc;
}

void gw_tls_upstream_ctxs_free(gw_conf_t *conf)
{
    if (!conf)
        return;
    for (size_t i = 0; i < conf->http.n_servers; i++)
        for (size_t j = 0; j < conf->http.servers[i].n_locations; j++)
            drop(&conf->http.servers[i].locations[j].loc.dep);
    for (size_t i = 0; i < conf->stream.n_servers; i++)
        drop(&conf->stream.servers[i].server.loc.dep);
}
