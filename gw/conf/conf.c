/*
 * Configuration reader: error list, tree walk (dispatch through the directive table of
 * directives.c), merge step (defaults and http -> server -> location inheritance),
 * checks across directives, and gw_conf_parse/load_file/free.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "lexer.h"
#include "deploy_set.h"

#define CMDLINE_NAME "<command line>"
#define DEFAULT_NAME "<default>"
#define MAX_FILE_SIZE (16 * 1024 * 1024) /* bytes of a config file */

/* ---- allocation helpers ---- */

static void oom(void)
{
    fputs("tlsgate: out of memory while reading the configuration\n", stderr);
    abort();
}

void *gw_conf_xrealloc(void *p, size_t size)
{
    void *q = realloc(p, size ? size : 1);
    if (!q)
        oom();
    return q;
}

void *gw_conf_xcalloc(size_t n, size_t size)
{
    void *q = calloc(n ? n : 1, size ? size : 1);
    if (!q)
        oom();
    return q;
}

void *gw_conf_xmemdup(const void *src, size_t n, size_t size)
{
    void *q = gw_conf_xcalloc(n, size);
    if (n)
        memcpy(q, src, n * size);
    return q;
}

char *gw_conf_xstrdup(const char *s)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        oom();
    return d;
}

char *gw_conf_xvasprintf(const char *fmt, va_list ap)
{
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        oom();
    return s;
}

void *gw_conf_xpush(void *arrp, size_t *n, size_t elem)
{
    void *v;
    memcpy(&v, arrp, sizeof(v));
    if (*n >= SIZE_MAX / elem - 1)
        oom();
    v = gw_conf_xrealloc(v, (*n + 1) * elem);
    memcpy(arrp, &v, sizeof(v));
    char *e = (char *)v + *n * elem;
    memset(e, 0, elem);
    (*n)++;
    return e;
}

void gw_conf_strv_free(char ***v, size_t *n)
{
    for (size_t i = 0; i < *n; i++)
        free((*v)[i]);
    free(*v);
    *v = NULL;
    *n = 0;
}

/* ---- error list ---- */

void gw_errlist_add(gw_errlist_t *errs, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = gw_conf_xvasprintf(fmt, ap);
    va_end(ap);
    char **slot = gw_conf_xpush(&errs->v, &errs->n, sizeof(*errs->v));
    *slot = msg;
}

void gw_errlist_clear(gw_errlist_t *errs)
{
    if (!errs)
        return;
    gw_conf_strv_free(&errs->v, &errs->n);
}

/* ---- messages ---- */

char *gw_conf_quote(char *buf, size_t size, const char *s, size_t max)
{
    size_t o = 0, i;
    if (size < 8) {
        if (size)
            buf[0] = '\0';
        return buf;
    }
    for (i = 0; i < max && s[i]; i++) { /* s may end at max without a NUL */
        unsigned char c = (unsigned char)s[i];
        char tmp[8];
        size_t k;
        if (c < 0x20 || c == 0x7f)
            k = (size_t)snprintf(tmp, sizeof(tmp), "\\x%02x", c);
        else if (c == '"' || c == '\\')
            k = (size_t)snprintf(tmp, sizeof(tmp), "\\%c", c);
        else
            k = (size_t)snprintf(tmp, sizeof(tmp), "%c", c);
        if (o + k + 4 > size)
            break;
        memcpy(buf + o, tmp, k);
        o += k;
    }
    if (s[i]) {
        memcpy(buf + o, "...", 3); /* o + 4 <= size holds here */
        o += 3;
    }
    buf[o] = '\0';
    return buf;
}

static void verror_at(gw_conf_parser_t *p, const char *file, int line, const char *name,
                      const char *fmt, va_list ap) __attribute__((format(printf, 5, 0)));

static void verror_at(gw_conf_parser_t *p, const char *file, int line, const char *name,
                      const char *fmt, va_list ap)
{
    char q[300];
    char *reason = gw_conf_xvasprintf(fmt, ap);
    gw_errlist_add(p->errs, "%s:%d: %s: %s", file, line, gw_conf_quote(q, sizeof(q), name, 64),
                   reason);
    free(reason);
}

static void error_at(gw_conf_parser_t *p, const char *file, int line, const char *name,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void error_at(gw_conf_parser_t *p, const char *file, int line, const char *name,
                     const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verror_at(p, file, line, name, fmt, ap);
    va_end(ap);
}

void gw_conf_error(gw_conf_parser_t *p, int line, const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verror_at(p, p->file, line, name, fmt, ap);
    va_end(ap);
}

int gw_conf_bad_value(gw_conf_parser_t *p, const gw_conf_node_t *n, size_t argi, const char *fmt,
                      ...)
{
    char q[600];
    va_list ap;
    va_start(ap, fmt);
    char *reason = gw_conf_xvasprintf(fmt, ap);
    va_end(ap);
    gw_conf_error(p, n->line, n->args[0], "invalid value \"%s\": %s",
                  gw_conf_quote(q, sizeof(q), argi < n->n_args ? n->args[argi] : "", 128), reason);
    free(reason);
    return -1;
}

int gw_conf_get_flag(gw_conf_parser_t *p, const gw_conf_node_t *n, size_t argi, int *out)
{
    const char *a = n->args[argi];
    if (strcasecmp(a, "on") == 0)
        *out = 1;
    else if (strcasecmp(a, "off") == 0)
        *out = 0;
    else
        return gw_conf_bad_value(p, n, argi, "must be \"on\" or \"off\"");
    return 0;
}

/* ---- paths ---- */

/* "dir" + "/" + "name" without doubling the slash; heap string. */
static char *join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *s = gw_conf_xcalloc(1, a + b + 2);
    memcpy(s, dir, a);
    if (a == 0 || dir[a - 1] != '/')
        s[a++] = '/';
    memcpy(s + a, name, b + 1);
    return s;
}

char *gw_conf_abs_path(const gw_conf_parser_t *p, const char *path)
{
    if (path[0] == '/')
        return gw_conf_xstrdup(path);
    return join(p->conf->prefix, path);
}

/* ---- walking ---- */

static void *group_base(gw_conf_parser_t *p, gw_conf_scope_t *sc, int group)
{
    switch (group) {
    case GW_GRP_MAIN:
        return p->conf;
    case GW_GRP_SRV:
        return sc->srv;
    case GW_GRP_LOC:
        return sc->loc;
    case GW_GRP_SERVER:
        return sc->server;
    case GW_GRP_LOCATION:
        return sc->location;
    default:
        return NULL;
    }
}

void gw_conf_walk(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_node_t *block)
{
    const char *outer = p->file;
    for (size_t i = 0; i < block->n_children; i++) {
        const gw_conf_node_t *n = &block->children[i];
        const char *name = n->args[0];
        p->file = n->file ? n->file : outer; /* an included directive names its file */
        int idx = gw_conf_find_directive(name);
        if (idx < 0) {
            gw_conf_error(p, n->line, name, "unknown directive");
            continue;
        }
        const gw_conf_directive_t *d = &gw_conf_directives[idx];
        if (!(d->ctx & sc->ctx)) {
            gw_conf_error(p, n->line, name, "directive is not allowed here");
            continue;
        }
        if ((d->flags & GW_DIR_BLOCK) && !n->has_block) {
            gw_conf_error(p, n->line, name, "directive has no opening \"{\"");
            continue;
        }
        if (!(d->flags & (GW_DIR_BLOCK | GW_DIR_BLOCK_OPT)) && n->has_block) {
            gw_conf_error(p, n->line, name, "directive does not take a block");
            continue;
        }
        size_t nargs = n->n_args - 1;
        if (nargs < (size_t)d->min_args || (d->max_args >= 0 && nargs > (size_t)d->max_args)) {
            gw_conf_error(p, n->line, name, "invalid number of arguments");
            continue;
        }
        if (sc->seen[idx] && !(d->flags & GW_DIR_MULTI)) {
            gw_conf_error(p, n->line, name, "directive is duplicate");
            continue;
        }
        if (sc->seen[idx] < 255)
            sc->seen[idx]++;
        void *base = group_base(p, sc, d->group);
        if (d->group != GW_GRP_NONE && !base) {
            gw_conf_error(p, n->line, name, "internal error: no settings for this block");
            continue;
        }
        d->set(p, sc, d, n, base);
    }
    p->file = outer;
}

/* ---- init / free ---- */

/* The scalar settings that start unset and are inherited as they are (a server's from
 * http's, a location's from its server's): one list each for the init and the merge, so
 * a new field cannot be initialised and forgotten in the merge, or the other way round.
 * X(field, unset value). */
#define SRV_SCALARS(X)                                                                             \
    X(keepalive_timeout_ms, GW_UNSET_MS)                                                           \
    X(keepalive_requests, GW_UNSET_INT)                                                            \
    X(client_header_timeout_ms, GW_UNSET_MS)                                                       \
    X(client_header_buffer_size, GW_UNSET_SIZE)                                                    \
    X(send_timeout_ms, GW_UNSET_MS)                                                                \
    X(ssl_protocols, 0u)                                                                           \
    X(ssl_prefer_server_ciphers, GW_UNSET_INT)                                                     \
    X(ssl_session_tickets, GW_UNSET_INT)                                                           \
    X(ssl_session_timeout_ms, GW_UNSET_MS)                                                         \
    X(ssl_async, GW_UNSET_INT)                                                                     \
    X(ssl_async_notify, GW_UNSET_INT)                                                              \
    X(ssl_stapling, GW_UNSET_INT)                                                                  \
    X(ssl_handshake_timeout_ms, GW_UNSET_MS)                                                       \
    X(limit_conn_per_ip, GW_UNSET_INT)                                                             \
    X(ssl_reject_handshake, GW_UNSET_INT)                                                          \
    X(sendfile, GW_UNSET_INT)                                                                      \
    X(ssl_buffer_size, GW_UNSET_SIZE)                                                              \
    X(http2, GW_UNSET_INT)                                                                         \
    X(http2_max_concurrent_streams, GW_UNSET_INT)
#define LOC_SCALARS(X)                                                                             \
    X(proxy_connect_timeout_ms, GW_UNSET_MS)                                                       \
    X(proxy_read_timeout_ms, GW_UNSET_MS)                                                          \
    X(proxy_send_timeout_ms, GW_UNSET_MS)                                                          \
    X(client_max_body_size, GW_UNSET_SIZE)
#define UNSET(field, unset) s->field = (unset);
#define INHERIT(field, unset)                                                                      \
    if (s->field == (unset))                                                                       \
        s->field = h->field;

void gw_conf_srv_init(gw_srv_settings_t *s)
{
    memset(s, 0, sizeof(*s));
    SRV_SCALARS(UNSET)
    s->large_header_buffers_num = GW_UNSET_INT; /* these two are inherited together */
    s->large_header_buffers_size = GW_UNSET_SIZE;
    s->ssl_session_cache = GW_SESSION_CACHE_UNSET; /* with its size, name, bytes, URL */
    s->ssl_session_cache_size = GW_UNSET_INT;
    gw_conf_deploy_srv_init(&s->dep);
}

void gw_conf_loc_init(gw_loc_settings_t *s)
{
    memset(s, 0, sizeof(*s));
    LOC_SCALARS(UNSET)
    gw_conf_deploy_loc_init(&s->dep);
}

static void strlist_free(gw_strlist_t *l)
{
    gw_conf_strv_free(&l->v, &l->n);
}

static void strlist_copy(gw_strlist_t *dst, const gw_strlist_t *src)
{
    for (size_t i = 0; i < src->n; i++) {
        char **slot = gw_conf_xpush(&dst->v, &dst->n, sizeof(*dst->v));
        *slot = gw_conf_xstrdup(src->v[i]);
    }
}

/* Free the n NAME VALUE pairs of v and v. */
/* dst[0..n) = copies of the n commands at src (names and values duplicated) */
static void cmds_copy(gw_conf_cmd_t *dst, const gw_conf_cmd_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dst[i].name = gw_conf_xstrdup(src[i].name);
        dst[i].value = gw_conf_xstrdup(src[i].value);
    }
}

static void cmds_free(gw_conf_cmd_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].name);
        free(v[i].value);
    }
    free(v);
}

static void srv_free(gw_srv_settings_t *s)
{
    free(s->access_log);
    free(s->ssl_ciphers);
    free(s->ssl_ecdh_curve);
    free(s->ssl_session_cache_name);
    free(s->ssl_session_cache_redis);
    strlist_free(&s->ssl_session_ticket_keys);
    free(s->ssl_password_file);
    cmds_free(s->conf_cmds, s->n_conf_cmds);
    for (size_t i = 0; i < s->n_certs; i++) {
        free(s->certs[i].cert);
        free(s->certs[i].key);
    }
    free(s->certs);
    strlist_free(&s->ssl_stapling_files);
    gw_conf_deploy_srv_free(&s->dep);
    memset(s, 0, sizeof(*s));
}

static void loc_free(gw_loc_settings_t *l)
{
    free(l->root);
    strlist_free(&l->index);
    cmds_free(l->proxy_headers, l->n_proxy_headers);
    strlist_free(&l->proxy_hide_headers);
    strlist_free(&l->proxy_pass_headers);
    gw_conf_deploy_loc_free(&l->dep);
}

static void upstreams_free(gw_upstream_conf_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < v[i].n_servers; j++)
            free(v[i].servers[j].text);
        free(v[i].servers);
        free(v[i].name);
    }
    free(v);
}

static void server_free(gw_server_t *s)
{
    for (size_t j = 0; j < s->n_listens; j++)
        free(s->listens[j].text);
    free(s->listens);
    strlist_free(&s->server_names);
    srv_free(&s->srv);
    loc_free(&s->loc);
    for (size_t j = 0; j < s->n_locations; j++) {
        gw_location_t *l = &s->locations[j];
        free(l->path);
        loc_free(&l->loc);
        free(l->return_text);
        free(l->proxy_pass);
        free(l->proxy_uri);
    }
    free(s->locations);
}

void gw_conf_free(gw_conf_t *conf)
{
    if (!conf)
        return;
    free(conf->prefix);
    free(conf->conf_file);
    free(conf->cpu_affinity);
    free(conf->error_log);
    free(conf->pid);
    for (size_t i = 0; i < conf->n_providers; i++) {
        gw_provider_conf_t *pv = &conf->providers[i];
        free(pv->name);
        free(pv->path);
        cmds_free(pv->params, pv->n_params);
    }
    free(conf->providers);
    free(conf->ssl_propquery);
    strlist_free(&conf->user);
    free(conf->working_directory);
    strlist_free(&conf->ssl_engines);
    free(conf->ssl_engine_lines);
    srv_free(&conf->http.srv);
    loc_free(&conf->http.loc);
    for (size_t i = 0; i < conf->http.n_servers; i++)
        server_free(&conf->http.servers[i]);
    upstreams_free(conf->http.upstreams, conf->http.n_upstreams);
    for (size_t i = 0; i < conf->stream.n_servers; i++)
        server_free(&conf->stream.servers[i].server);
    free(conf->stream.servers);
    upstreams_free(conf->stream.upstreams, conf->stream.n_upstreams);
    free(conf->http.servers);
    strlist_free(&conf->files);
    free(conf);
}

/* ---- merge ---- */

/* Apply every table default the http block / main context did not override. */
static void apply_defaults(gw_conf_parser_t *p)
{
    gw_conf_t *c = p->conf;
    const char *saved = p->file;
    p->file = DEFAULT_NAME;
    for (size_t i = 0; i < gw_conf_n_directives; i++) {
        const gw_conf_directive_t *d = &gw_conf_directives[i];
        if (!d->default_text || (d->flags & GW_DIR_DEFAULT_DOC))
            continue;
        gw_conf_scope_t sc = {0};
        void *base;
        const unsigned char *seen;
        switch (d->group) {
        case GW_GRP_MAIN:
            base = c;
            sc.ctx = (d->ctx & GW_CTX_MAIN) ? GW_CTX_MAIN : GW_CTX_EVENTS;
            seen = (d->ctx & GW_CTX_MAIN) ? p->main_seen : p->events_seen;
            break;
        case GW_GRP_SRV:
            base = &c->http.srv;
            sc.ctx = GW_CTX_HTTP;
            seen = p->http_seen;
            break;
        case GW_GRP_LOC:
            base = &c->http.loc;
            sc.ctx = GW_CTX_HTTP;
            seen = p->http_seen;
            break;
        default:
            continue;
        }
        if (seen[i])
            continue;
        sc.srv = &c->http.srv;
        sc.loc = &c->http.loc;
        /* split the default text into words */
        gw_conf_node_t n = {0};
        char *copy = gw_conf_xstrdup(d->default_text);
        char *save = NULL;
        char **slot = gw_conf_xpush(&n.args, &n.n_args, sizeof(*n.args));
        *slot = (char *)d->name;
        for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
            slot = gw_conf_xpush(&n.args, &n.n_args, sizeof(*n.args));
            *slot = w;
        }
        n.line = 1;
        d->set(p, &sc, d, &n, base);
        free(n.args);
        free(copy);
    }
    p->file = saved;
}

static void merge_srv(gw_srv_settings_t *s, const gw_srv_settings_t *h)
{
    SRV_SCALARS(INHERIT)
    if (s->large_header_buffers_num == GW_UNSET_INT) {
        s->large_header_buffers_num = h->large_header_buffers_num;
        s->large_header_buffers_size = h->large_header_buffers_size;
    }
    if (!s->access_log_set)
        s->access_log = gw_conf_xstrdup(h->access_log);
    if (!s->ssl_ciphers)
        s->ssl_ciphers = gw_conf_xstrdup(h->ssl_ciphers);
    if (!s->ssl_ecdh_curve)
        s->ssl_ecdh_curve = gw_conf_xstrdup(h->ssl_ecdh_curve);
    if (s->ssl_session_cache == GW_SESSION_CACHE_UNSET) {
        s->ssl_session_cache = h->ssl_session_cache;
        s->ssl_session_cache_size = h->ssl_session_cache_size;
        s->ssl_session_cache_name = gw_conf_xstrdup(h->ssl_session_cache_name);
        s->ssl_session_cache_bytes = h->ssl_session_cache_bytes;
        s->ssl_session_cache_redis = gw_conf_xstrdup(h->ssl_session_cache_redis);
        s->ssl_session_cache_redis_timeout_ms = h->ssl_session_cache_redis_timeout_ms;
    }
    if (s->ssl_session_ticket_keys.n == 0) {
        strlist_copy(&s->ssl_session_ticket_keys, &h->ssl_session_ticket_keys);
        s->ssl_session_ticket_key_line = h->ssl_session_ticket_key_line;
    }
    if (s->ssl_stapling_files.n == 0) {
        strlist_copy(&s->ssl_stapling_files, &h->ssl_stapling_files);
        s->ssl_stapling_files_inherited = h->ssl_stapling_files.n > 0;
    }
    if (!s->ssl_password_file)
        s->ssl_password_file = gw_conf_xstrdup(h->ssl_password_file);
    if (h->n_conf_cmds > 0) {
        /* http's commands first, then the server's own */
        size_t n = h->n_conf_cmds + s->n_conf_cmds;
        gw_conf_cmd_t *v = gw_conf_xcalloc(n, sizeof(*v));
        cmds_copy(v, h->conf_cmds, h->n_conf_cmds);
        if (s->n_conf_cmds)
            memcpy(v + h->n_conf_cmds, s->conf_cmds, s->n_conf_cmds * sizeof(*v));
        free(s->conf_cmds);
        s->conf_cmds = v;
        s->n_conf_cmds = n;
    }
    if (s->n_certs == 0 && h->n_certs > 0) {
        s->certs = gw_conf_xmemdup(h->certs, h->n_certs, sizeof(*s->certs));
        for (size_t i = 0; i < h->n_certs; i++) {
            s->certs[i].cert = gw_conf_xstrdup(h->certs[i].cert);
            s->certs[i].key = gw_conf_xstrdup(h->certs[i].key);
        }
        s->n_certs = h->n_certs;
    }
    gw_conf_deploy_merge_srv(&s->dep, &h->dep);
}

static void merge_loc(gw_loc_settings_t *s, const gw_loc_settings_t *h)
{
    if (!s->root)
        s->root = gw_conf_xstrdup(h->root);
    if (s->index.n == 0)
        strlist_copy(&s->index, &h->index);
    LOC_SCALARS(INHERIT)
    if (!s->proxy_headers_set && h->n_proxy_headers) {
        s->proxy_headers = gw_conf_xcalloc(h->n_proxy_headers, sizeof(*s->proxy_headers));
        cmds_copy(s->proxy_headers, h->proxy_headers, h->n_proxy_headers);
        s->n_proxy_headers = h->n_proxy_headers;
    }
    if (s->proxy_hide_headers.n == 0 && s->proxy_pass_headers.n == 0) {
        strlist_copy(&s->proxy_hide_headers, &h->proxy_hide_headers);
        strlist_copy(&s->proxy_pass_headers, &h->proxy_pass_headers);
    }
    gw_conf_deploy_merge_loc(&s->dep, &h->dep);
}

#undef INHERIT
#undef UNSET

static void merge(gw_conf_parser_t *p, const char *state_dir)
{
    gw_conf_t *c = p->conf;
    apply_defaults(p);
    if (!c->pid)
        c->pid = join(state_dir, "tlsgate.pid");
    if (c->worker_rlimit_nofile < 0)
        c->worker_rlimit_nofile = 0;
    for (size_t i = 0; i < c->http.n_servers; i++) {
        gw_server_t *s = &c->http.servers[i];
        merge_srv(&s->srv, &c->http.srv);
        merge_loc(&s->loc, &c->http.loc);
        if (s->server_names.n == 0) {
            char **slot = gw_conf_xpush(&s->server_names.v, &s->server_names.n, sizeof(char *));
            *slot = gw_conf_xstrdup("");
        }
        for (size_t j = 0; j < s->n_locations; j++)
            merge_loc(&s->locations[j].loc, &s->loc);
        for (size_t j = 0; j < s->n_listens; j++)
            if (s->listens[j].http2)
                s->srv.http2 = 1; /* nginx's `listen ... http2` */
    }
    /* stream servers: the table's ssl_ defaults (as merged into http), not http's
     * certificates or ssl_conf_commands */
    gw_srv_settings_t dflt = c->http.srv;
    dflt.n_certs = 0;
    dflt.n_conf_cmds = 0;
    for (size_t i = 0; i < c->stream.n_servers; i++) {
        gw_server_t *s = &c->stream.servers[i].server;
        merge_srv(&s->srv, &dflt);
        merge_loc(&s->loc, &c->http.loc);
        if (s->server_names.n == 0) {
            char **slot = gw_conf_xpush(&s->server_names.v, &s->server_names.n, sizeof(char *));
            *slot = gw_conf_xstrdup("");
        }
    }
}

/* Checks that need the whole, merged configuration. */
void gw_conf_resolve_proxy(gw_conf_parser_t *p); /* directives.c */

static void validate(gw_conf_parser_t *p)
{
    gw_conf_t *c = p->conf;
    if (p->syntax_errors || !c->http_present)
        return;
    gw_conf_resolve_proxy(p);
    gw_conf_deploy_validate(p);
    if (c->http.n_servers == 0 && !p->saw_server)
        error_at(p, p->http_file, p->http_line, "http", "no server block defined");
    int http_cert = p->http_saw_cert;
    for (size_t i = 0; i < c->http.n_servers; i++) {
        const gw_server_t *s = &c->http.servers[i];
        int saw = http_cert || (i < p->n_srv_saw_cert && p->srv_saw_cert[i]);
        if (s->srv.n_certs > 0 || saw || s->srv.ssl_reject_handshake == 1)
            continue; /* a server that rejects every handshake needs no certificate */
        for (size_t j = 0; j < s->n_listens; j++) {
            const gw_listen_t *l = &s->listens[j];
            if (l->ssl)
                error_at(p, s->file, l->line, "listen",
                         "no ssl_certificate defined for the listen %s ssl", l->text);
        }
    }
}

/* ---- entry points ---- */

const char *gw_conf_add_file(gw_conf_t *c, const char *name)
{
    char **slot = gw_conf_xpush(&c->files.v, &c->files.n, sizeof(char *));
    *slot = gw_conf_xstrdup(name);
    return *slot;
}

static void init_main(gw_conf_t *c)
{
    c->daemon = GW_UNSET_INT;
    c->worker_processes = GW_UNSET_INT;
    c->worker_rlimit_nofile = GW_UNSET_SIZE;
    c->worker_shutdown_timeout_ms = GW_UNSET_MS;
    c->error_log_level = GW_UNSET_INT;
    c->worker_connections = GW_UNSET_INT;
    c->ssl_secure_heap = GW_UNSET_SIZE;
    gw_conf_srv_init(&c->http.srv);
    gw_conf_loc_init(&c->http.loc);
}

/* prefix without trailing slashes ("/" stays "/"); NULL or "" means "/". */
static char *norm_prefix(const char *prefix)
{
    if (!prefix || !*prefix)
        return gw_conf_xstrdup("/");
    char *s = gw_conf_xstrdup(prefix);
    size_t n = strlen(s);
    while (n > 1 && s[n - 1] == '/')
        s[--n] = '\0';
    return s;
}

gw_conf_t *gw_conf_parse(const char *name, const char *text, size_t len, const char *prefix,
                         const char *globals, const char *state_dir, gw_errlist_t *errs)
{
    gw_errlist_t local = {0};
    if (!errs)
        errs = &local;
    size_t start = errs->n;
    if (!name)
        name = "<embedded>";
    if (!text)
        len = 0;

    gw_conf_t *c = gw_conf_xcalloc(1, sizeof(*c));
    init_main(c);
    c->prefix = norm_prefix(prefix);
    c->conf_file = gw_conf_xstrdup(name);
    const char *fname = gw_conf_add_file(c, name);
    const char *gname = globals ? gw_conf_add_file(c, CMDLINE_NAME) : NULL;

    gw_conf_parser_t *p = gw_conf_xcalloc(1, sizeof(*p));
    p->conf = c;
    p->errs = errs;

    gw_conf_node_t root = {0}, groot = {0};
    if (gw_conf_lex(fname, text ? text : "", len, &root, errs) > 0)
        p->syntax_errors = 1;
    if (globals && gw_conf_lex(gname, globals, strlen(globals), &groot, errs) > 0)
        p->syntax_errors = 1;
    gw_conf_expand_includes(p, &root, fname);
    if (globals)
        gw_conf_expand_includes(p, &groot, gname);

    gw_conf_scope_t sc = {.ctx = GW_CTX_MAIN, .seen = p->main_seen};
    p->file = fname;
    gw_conf_walk(p, &sc, &root);
    if (globals) {
        p->file = gname;
        gw_conf_walk(p, &sc, &groot);
    }
    gw_conf_node_free(&root);
    gw_conf_node_free(&groot);

    merge(p, state_dir && *state_dir ? state_dir : c->prefix);
    validate(p);

    if (errs->n > start) {
        gw_conf_free(c);
        c = NULL;
    }
    free(p->srv_saw_cert);
    free(p);
    gw_errlist_clear(&local);
    return c;
}

int gw_conf_read_file(const char *path, char **out, size_t *out_len, gw_errlist_t *errs)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        gw_errlist_add(errs, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    size_t cap = 65536, len = 0;
    char *buf = gw_conf_xcalloc(1, cap + 1);
    for (;;) {
        if (len == cap) {
            char extra;
            if (cap >= MAX_FILE_SIZE && fread(&extra, 1, 1, f) == 1) {
                gw_errlist_add(errs, "%s: cannot read: file larger than %d bytes", path,
                               MAX_FILE_SIZE);
                free(buf);
                fclose(f);
                return -1;
            }
            if (cap >= MAX_FILE_SIZE)
                break;
            cap *= 2;
            buf = gw_conf_xrealloc(buf, cap + 1);
        }
        size_t r = fread(buf + len, 1, cap - len, f);
        len += r;
        if (r == 0) {
            if (ferror(f)) {
                gw_errlist_add(errs, "%s: cannot read: %s", path, strerror(errno));
                free(buf);
                fclose(f);
                return -1;
            }
            break;
        }
    }
    fclose(f);
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    return 0;
}

gw_conf_t *gw_conf_load_file(const char *path, const char *prefix, const char *globals,
                             const char *state_dir, gw_errlist_t *errs)
{
    gw_errlist_t local = {0};
    if (!errs)
        errs = &local;
    char *buf;
    size_t len;
    if (gw_conf_read_file(path, &buf, &len, errs) != 0) {
        gw_errlist_clear(&local);
        return NULL;
    }

    char *abs = NULL;
    if (path[0] == '/') {
        abs = gw_conf_xstrdup(path);
    } else {
        char *cwd = getcwd(NULL, 0);
        abs = join(cwd ? cwd : "/", path);
        free(cwd);
    }
    gw_conf_t *c = gw_conf_parse(abs, buf, len, prefix, globals, state_dir, errs);
    free(abs);
    free(buf);
    gw_errlist_clear(&local);
    return c;
}

/* ---- redis:// URLs (ssl_session_cache, ssl_session_ticket_key) ---- */

int gw_conf_parse_redis_url(const char *url, char *host, size_t cap, int *port, int *db, char *why,
                            size_t why_cap)
{
    const char *p = url;
    if (strncmp(p, "redis://", 8) != 0) {
        snprintf(why, why_cap, "\"%s\" is not redis://HOST:PORT[/DB]", url);
        return -1;
    }
    p += 8;
    const char *hend;
    if (*p == '[') {
        hend = strchr(p, ']');
        if (!hend || hend[1] != ':') {
            snprintf(why, why_cap, "\"%s\": bad [IPv6]:PORT", url);
            return -1;
        }
        p++;
    } else {
        hend = strchr(p, ':');
    }
    if (!hend || hend == p || (size_t)(hend - p) >= cap) {
        snprintf(why, why_cap, "\"%s\" is not redis://HOST:PORT[/DB]", url);
        return -1;
    }
    memcpy(host, p, (size_t)(hend - p));
    host[hend - p] = '\0';
    const char *q = hend + (*hend == ']' ? 2 : 1);
    char *end;
    errno = 0;
    long v = strtol(q, &end, 10);
    if (end == q || errno || v < 1 || v > 65535 || (*end && *end != '/')) {
        snprintf(why, why_cap, "\"%s\": the port must be 1..65535", url);
        return -1;
    }
    *port = (int)v;
    *db = 0;
    if (*end == '/') {
        q = end + 1;
        v = strtol(q, &end, 10);
        if (end == q || *end || v < 0 || v > 15) {
            snprintf(why, why_cap, "\"%s\": the database must be 0..15", url);
            return -1;
        }
        *db = (int)v;
    }
    return 0;
}
