#include "cycle.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "core/privs.h"
#include "tls/upstream_ctx.h"
#include "tls/tls.h"

static int open_log(gw_cycle_t *c, const char *path, gw_errlist_t *errs)
{
    for (size_t i = 0; i < c->n_logs; i++)
        if (strcmp(c->logs[i].path, path) == 0)
            return c->logs[i].fd;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        gw_errlist_add(errs, "%s: access_log: cannot open: %s", path, strerror(errno));
        return -1;
    }
    gw_log_file_t *l = realloc(c->logs, (c->n_logs + 1) * sizeof(*l));
    if (!l)
        abort();
    c->logs = l;
    c->logs[c->n_logs].path = strdup(path);
    c->logs[c->n_logs].fd = fd;
    c->n_logs++;
    return fd;
}

static int same_addr(const gw_listen_t *a, const gw_listen_t *b)
{
    return a->addrlen == b->addrlen && memcmp(&a->addr, &b->addr, a->addrlen) == 0;
}

static int str_differ(const char *a, const char *b)
{
    return (a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0);
}

/* OpenSSL keeps sessions and ticket keys in the SSL_CTX a handshake starts with: the
 * address's default server's, chosen before SNI (SSL_set_SSL_CTX does not move the
 * session context). Another server's own ssl_session_cache / ssl_session_tickets are
 * never used there: say so at start and with -t (nginx applies the same rule, silently). */
static void session_settings_check(const gw_laddr_t *la, const gw_vserver_t *vs)
{
    const gw_server_t *d = la->default_server ? la->default_server->conf : NULL;
    const gw_server_t *s = vs->conf;
    if (!d || d == s)
        return;
    if (s->srv.ssl_session_cache != d->srv.ssl_session_cache ||
        str_differ(s->srv.ssl_session_cache_name, d->srv.ssl_session_cache_name) ||
        str_differ(s->srv.ssl_session_cache_redis, d->srv.ssl_session_cache_redis) ||
        s->srv.ssl_session_tickets != d->srv.ssl_session_tickets)
        gw_warn_add("%s:%d: ssl_session_cache/ssl_session_tickets of this server are not used "
                    "on %s: sessions there follow its default server's (%s:%d), which a "
                    "handshake starts with before SNI picks a server",
                    s->file ? s->file : "<config>", s->line, la->listen->text,
                    d->file ? d->file : "<config>", d->line);
}

/* error_page's local URI names a file under the root of the request's location
 * (http/headers.c), where nginx makes an internal redirect: a page that only a proxy_pass
 * (or return) location answers is never found, and the built-in page is sent. Say so at
 * start and with -t, once for each level that sets error_page (s/l: where). */
static void error_pages_check(const gw_server_t *s, const gw_location_t *l)
{
    const gw_loc_settings_t *ls = l ? &l->loc : &s->loc;
    if (!ls->dep.error_pages_set && l)
        return; /* the server's, checked there */
    for (size_t i = 0; i < ls->dep.n_error_pages; i++) {
        const char *uri = ls->dep.error_pages[i].uri;
        int seen = uri[0] != '/';
        for (size_t k = 0; k < i && !seen; k++)
            seen = strcmp(ls->dep.error_pages[k].uri, uri) == 0;
        if (seen)
            continue;
        char path[8192];
        struct stat st;
        int n = snprintf(path, sizeof(path), "%s%s", ls->root ? ls->root : "", uri);
        if (n < 0 || (size_t)n >= sizeof(path) || (stat(path, &st) == 0 && S_ISREG(st.st_mode)))
            continue;
        gw_warn_add("%s:%d: error_page \"%s\": no file \"%s\": an error_page URI names a file "
                    "under root (not an internal redirect as in nginx: a proxy_pass location "
                    "does not answer it); the built-in page is sent instead",
                    (l ? l->file : s->file) ? (l ? l->file : s->file) : "<config>",
                    l ? l->line : s->line, uri, path);
    }
}

gw_cycle_t *gw_cycle_new(gw_conf_t *conf, SSL_client_hello_cb_fn client_hello_cb,
                         gw_errlist_t *errs)
{
    gw_cycle_t *c = calloc(1, sizeof(*c));
    if (!c)
        abort();
    c->conf = conf;
    size_t nerr = errs->n;
    gw_http_conf_t *h = &conf->http;
    gw_stream_conf_t *st = &conf->stream;
    c->n_vservers = h->n_servers + st->n_servers;
    c->vservers = calloc(c->n_vservers ? c->n_vservers : 1, sizeof(gw_vserver_t));
    size_t total_listens = 0;
    for (size_t i = 0; i < h->n_servers; i++)
        total_listens += h->servers[i].n_listens;
    for (size_t i = 0; i < st->n_servers; i++)
        total_listens += st->servers[i].server.n_listens;
    c->laddrs = calloc(total_listens ? total_listens : 1, sizeof(gw_laddr_t));
    if (!c->vservers || !c->laddrs)
        abort();

    for (size_t i = 0; i < h->n_servers; i++) {
        gw_server_t *s = &h->servers[i];
        gw_vserver_t *vs = &c->vservers[i];
        vs->conf = s;
        vs->index = i;
        error_pages_check(s, NULL);
        for (size_t j = 0; j < s->n_locations; j++)
            error_pages_check(s, &s->locations[j]);
        vs->access_log_fd = s->srv.access_log ? open_log(c, s->srv.access_log, errs) : -1;
        /* a certificate-less ssl_reject_handshake server still needs a context: as an
         * address's default server it starts every handshake (SNI may switch away) */
        if (s->srv.n_certs || s->srv.ssl_reject_handshake == 1)
            vs->ssl_ctx = gw_tls_ctx_new(s, client_hello_cb, errs);
        for (size_t j = 0; j < s->n_listens; j++) {
            gw_listen_t *l = &s->listens[j];
            gw_laddr_t *la = NULL;
            for (size_t k = 0; k < c->n_laddrs; k++)
                if (same_addr(c->laddrs[k].listen, l))
                    la = &c->laddrs[k];
            if (!la) {
                la = &c->laddrs[c->n_laddrs++];
                la->listen = l;
                snprintf(la->key, sizeof(la->key), "%s%s", l->text, l->reuseport ? "/rp" : "");
            } else if (l->reuseport && !la->listen->reuseport) {
                /* options of an address may be given on any one of its listens (nginx) */
                la->listen = l;
                snprintf(la->key, sizeof(la->key), "%s/rp", l->text);
            }
            if (l->ssl)
                la->ssl = 1;
            gw_vserver_t **sv = realloc(la->servers, (la->n_servers + 1) * sizeof(*sv));
            if (!sv)
                abort();
            la->servers = sv;
            la->servers[la->n_servers++] = vs;
            /* the first server of an address is its default unless one says default_server */
            if (l->default_server || !la->default_server)
                la->default_server = vs;
        }
    }
    /* stream servers (TCP proxy): an address of their own each */
    for (size_t i = 0; i < st->n_servers; i++) {
        gw_server_t *s = &st->servers[i].server;
        gw_vserver_t *vs = &c->vservers[h->n_servers + i];
        vs->conf = s;
        vs->index = h->n_servers + i;
        vs->access_log_fd = -1;
        vs->stream = &st->servers[i];
        if (s->srv.n_certs)
            vs->ssl_ctx = gw_tls_ctx_new(s, client_hello_cb, errs);
        for (size_t j = 0; j < s->n_listens; j++) {
            gw_listen_t *l = &s->listens[j];
            int dup = 0;
            for (size_t k = 0; k < c->n_laddrs; k++)
                if (same_addr(c->laddrs[k].listen, l))
                    dup = 1;
            if (dup) {
                gw_errlist_add(errs, "%s:%d: listen: %s is already used by another server", s->file,
                               l->line, l->text);
                continue;
            }
            gw_laddr_t *la = &c->laddrs[c->n_laddrs++];
            la->listen = l;
            snprintf(la->key, sizeof(la->key), "%s%s", l->text, l->reuseport ? "/rp" : "");
            la->ssl = l->ssl;
            la->stream = vs->stream;
            la->servers = malloc(sizeof(*la->servers));
            if (!la->servers)
                abort();
            la->servers[0] = vs;
            la->n_servers = 1;
            la->default_server = vs;
        }
    }
    for (size_t k = 0; k < c->n_laddrs; k++) {
        gw_laddr_t *la = &c->laddrs[k];
        if (!la->ssl)
            continue;
        for (size_t j = 0; j < la->n_servers; j++) {
            session_settings_check(la, la->servers[j]);
            if (!la->servers[j]->ssl_ctx && la->servers[j]->conf->srv.n_certs == 0 &&
                la->servers[j]->conf->srv.ssl_reject_handshake != 1) {
                gw_errlist_add(errs,
                               "%s:%d: listen: no \"ssl_certificate\" is defined for "
                               "the ssl listen %s",
                               la->servers[j]->conf->file, la->servers[j]->conf->line,
                               la->listen->text);
            }
        }
    }
    gw_tls_upstream_ctxs_build(conf, errs); /* proxy_pass https://: tls/upstream_ctx.h */
    if (errs->n > nerr) {
        gw_cycle_free(c);
        return NULL;
    }
    return c;
}

void gw_cycle_free(gw_cycle_t *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_vservers; i++)
        SSL_CTX_free(c->vservers[i].ssl_ctx);
    for (size_t k = 0; k < c->n_laddrs; k++)
        free(c->laddrs[k].servers);
    for (size_t i = 0; i < c->n_logs; i++) {
        close(c->logs[i].fd);
        free(c->logs[i].path);
    }
    free(c->logs);
    gw_privs_dispose(&c->privs);
    free(c->laddrs);
    free(c->vservers);
    gw_tls_upstream_ctxs_free(c->conf);
    gw_conf_free(c->conf);
    free(c);
}

void gw_cycle_reopen_logs(gw_cycle_t *c)
{
    for (size_t i = 0; i < c->n_logs; i++) {
        int fd = open(c->logs[i].path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) {
            gw_log(GW_LOG_ALERT, errno, "cannot reopen access log \"%s\"", c->logs[i].path);
            continue;
        }
        dup2(fd, c->logs[i].fd); /* the number stays: vservers keep pointing at it */
        close(fd);
    }
}
