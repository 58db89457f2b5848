/*
 * The directive table (one row per directive: contexts, arity, setter, field, default,
 * documentation), the setters, and gw_conf_write_docs() which renders the table as
 * docs/config.md.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <limits.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "conf.h"
#include "lexer.h"
#include "deploy_set.h"

#define FIELD(base, d, type) ((type *)((char *)(base) + (d)->offset))

#define SESSION_CACHE_DEFAULT_SIZE 20480
#define SHARED_CACHE_MIN ((int64_t)32 << 10)
#define SHARED_CACHE_MAX ((int64_t)4 << 30)
#define LISTEN_BACKLOG_DEFAULT 511
#define MAX_SERVER_NAME 253

/* ---- value parsing ---- */

/* Unsigned decimal number, digits only. 0, or -1 (not a number) or -2 (overflow). */
static int parse_u64(const char *s, size_t len, int64_t *out)
{
    int64_t v = 0;
    if (len == 0)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        int dgt = s[i] - '0';
        if (v > (INT64_MAX - dgt) / 10)
            return -2;
        v = v * 10 + dgt;
    }
    *out = v;
    return 0;
}

/* "1024", "16k", "1m", "1g" (case-insensitive) in bytes; 0, -1 (syntax) or -2 (overflow). */
static int parse_size(const char *s, int64_t *out)
{
    size_t len = strlen(s);
    int64_t mult = 1;
    if (len > 0) {
        switch (s[len - 1]) {
        case 'k':
        case 'K':
            mult = 1024;
            len--;
            break;
        case 'm':
        case 'M':
            mult = 1024 * 1024;
            len--;
            break;
        case 'g':
        case 'G':
            mult = 1024 * 1024 * 1024;
            len--;
            break;
        default:
            break;
        }
    }
    int64_t v;
    int r = parse_u64(s, len, &v);
    if (r != 0)
        return r;
    if (v > INT64_MAX / mult)
        return -2;
    *out = v * mult;
    return 0;
}

/*
 * Time in milliseconds: a plain number is seconds; otherwise one or more NUMBER UNIT parts
 * with units in decreasing order, each at most once: d, h, m, s, ms ("1m30s", "1h", "500ms").
 * 0, -1 (syntax) or -2 (overflow).
 */
static int parse_time(const char *s, int64_t *out)
{
    static const struct {
        const char *unit;
        int64_t ms;
    } units[] = {{"d", 86400000}, {"h", 3600000}, {"ms", 1}, {"m", 60000}, {"s", 1000}};
    static const int rank[] = {0, 1, 4, 2, 3}; /* order of the units above: d h m s ms */
    size_t len = strlen(s);
    int64_t v = 0;
    if (len == 0)
        return -1;
    int r = parse_u64(s, len, &v);
    if (r != -1) { /* plain number: seconds */
        if (r == -2 || v > INT64_MAX / 1000)
            return -2;
        *out = v * 1000;
        return 0;
    }
    int64_t total = 0;
    int last = -1;
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && s[j] >= '0' && s[j] <= '9')
            j++;
        r = parse_u64(s + i, j - i, &v);
        if (r != 0)
            return r;
        size_t u;
        for (u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
            size_t ul = strlen(units[u].unit);
            if (strncmp(s + j, units[u].unit, ul) == 0 &&
                (j + ul == len || (s[j + ul] >= '0' && s[j + ul] <= '9')))
                break;
        }
        if (u == sizeof(units) / sizeof(units[0]))
            return -1;
        if (rank[u] <= last)
            return -1;
        last = rank[u];
        if (v > INT64_MAX / units[u].ms)
            return -2;
        v *= units[u].ms;
        if (total > INT64_MAX - v)
            return -2;
        total += v;
        i = j + strlen(units[u].unit);
    }
    *out = total;
    return 0;
}

static int range_error(gw_conf_parser_t *p, const gw_conf_node_t *n, size_t argi,
                       const gw_conf_directive_t *d)
{
    if (d->hi == INT64_MAX)
        return gw_conf_bad_value(p, n, argi, "must be at least %lld", (long long)d->lo);
    return gw_conf_bad_value(p, n, argi, "must be between %lld and %lld", (long long)d->lo,
                             (long long)d->hi);
}

/* A number in d's range from n->args[argi]. */
static int get_number(gw_conf_parser_t *p, const gw_conf_directive_t *d, const gw_conf_node_t *n,
                      size_t argi, int64_t *out)
{
    const char *a = n->args[argi];
    int64_t v;
    int r = parse_u64(a, strlen(a), &v);
    if (r == -1)
        return gw_conf_bad_value(p, n, argi, "not a number");
    if (r == -2 || v < d->lo || v > d->hi)
        return range_error(p, n, argi, d);
    *out = v;
    return 0;
}

static int get_size(gw_conf_parser_t *p, const gw_conf_directive_t *d, const gw_conf_node_t *n,
                    size_t argi, int64_t *out)
{
    int64_t v;
    int r = parse_size(n->args[argi], &v);
    if (r == -1)
        return gw_conf_bad_value(p, n, argi, "not a size (bytes, or with k, m or g suffix)");
    if (r == -2)
        return gw_conf_bad_value(p, n, argi, "size too large");
    if (v < d->lo || v > d->hi)
        return range_error(p, n, argi, d);
    *out = v;
    return 0;
}

/* ---- generic setters ---- */

static int set_flag(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                    const gw_conf_node_t *n, void *base)
{
    return gw_conf_get_flag(p, n, 1, FIELD(base, d, int));
}

static int set_int(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                   const gw_conf_node_t *n, void *base)
{
    int64_t v;
    if (get_number(p, d, n, 1, &v) != 0)
        return -1;
    *FIELD(base, d, int) = (int)v;
    return 0;
}

static int set_num64(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                     const gw_conf_node_t *n, void *base)
{
    return get_number(p, d, n, 1, FIELD(base, d, int64_t));
}

static int set_size(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                    const gw_conf_node_t *n, void *base)
{
    return get_size(p, d, n, 1, FIELD(base, d, int64_t));
}

static int set_time(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                    const gw_conf_node_t *n, void *base)
{
    int64_t v;
    int r = parse_time(n->args[1], &v);
    if (r == -1)
        return gw_conf_bad_value(p, n, 1, "not a time (e.g. 500ms, 75s, 1m30s, 1h, 1d)");
    if (r == -2 || v > d->hi)
        return gw_conf_bad_value(p, n, 1, "time too large (at most %lld days)",
                                 (long long)(d->hi / 86400000));
    if (v < d->lo)
        return gw_conf_bad_value(p, n, 1, "must be at least %lldms", (long long)d->lo);
    *FIELD(base, d, int64_t) = v;
    return 0;
}

static void replace_str(char **field, char *v)
{
    free(*field);
    *field = v;
}

static int set_str(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                   const gw_conf_node_t *n, void *base)
{
    if (!n->args[1][0])
        return gw_conf_bad_value(p, n, 1, "empty value");
    replace_str(FIELD(base, d, char *), gw_conf_xstrdup(n->args[1]));
    return 0;
}

static int set_path(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                    const gw_conf_node_t *n, void *base)
{
    if (!n->args[1][0])
        return gw_conf_bad_value(p, n, 1, "empty path");
    replace_str(FIELD(base, d, char *), gw_conf_abs_path(p, n->args[1]));
    return 0;
}

static void strlist_add(gw_strlist_t *l, const char *s)
{
    char **slot = gw_conf_xpush(&l->v, &l->n, sizeof(*l->v));
    *slot = gw_conf_xstrdup(s);
}

/* Appends every argument (non-empty) to a gw_strlist_t. */
static int set_strlist(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                       const gw_conf_node_t *n, void *base)
{
    for (size_t i = 1; i < n->n_args; i++)
        if (!n->args[i][0])
            return gw_conf_bad_value(p, n, i, "empty value");
    for (size_t i = 1; i < n->n_args; i++)
        strlist_add(FIELD(base, d, gw_strlist_t), n->args[i]);
    return 0;
}

/* ssl_stapling_file FILE: appended (absolute) to a gw_strlist_t; may be repeated. */
static int set_path_list(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                         const gw_conf_node_t *n, void *base)
{
    if (!n->args[1][0])
        return gw_conf_bad_value(p, n, 1, "empty path");
    gw_strlist_t *l = FIELD(base, d, gw_strlist_t);
    char **slot = gw_conf_xpush(&l->v, &l->n, sizeof(*l->v));
    *slot = gw_conf_abs_path(p, n->args[1]);
    return 0;
}

/* ---- main context ---- */

static int set_worker_processes(gw_conf_parser_t *p, gw_conf_scope_t *sc,
                                const gw_conf_directive_t *d, const gw_conf_node_t *n, void *base)
{
    gw_conf_t *c = base;
    if (strcmp(n->args[1], "auto") == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        c->worker_processes = cpus < 1 ? 1 : cpus > d->hi ? (int)d->hi : (int)cpus;
        return 0;
    }
    return set_int(p, sc, d, n, base);
}

/* A binary CPU mask ("0101"), rightmost digit = CPU 0. */
static int parse_mask(gw_conf_parser_t *p, const gw_conf_node_t *n, size_t argi, uint64_t *out)
{
    const char *a = n->args[argi];
    size_t len = strlen(a);
    uint64_t m = 0;
    if (len == 0 || strspn(a, "01") != len)
        return gw_conf_bad_value(p, n, argi, "a CPU mask is made of 0 and 1 digits");
    if (len > 64)
        return gw_conf_bad_value(p, n, argi, "a CPU mask has at most 64 digits");
    for (size_t i = 0; i < len; i++)
        m = (m << 1) | (uint64_t)(a[i] - '0');
    if (m == 0)
        return gw_conf_bad_value(p, n, argi, "the mask selects no CPU");
    *out = m;
    return 0;
}

static int set_cpu_affinity(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                            const gw_conf_node_t *n, void *base)
{
    gw_conf_t *c = base;
    size_t first = 1;
    if (strcmp(n->args[1], "auto") == 0) {
        if (n->n_args > 3) {
            gw_conf_error(p, n->line, n->args[0], "invalid number of arguments");
            return -1;
        }
        first = 2;
    }
    uint64_t *masks = gw_conf_xcalloc(n->n_args, sizeof(*masks));
    size_t nm = 0;
    for (size_t i = first; i < n->n_args; i++) {
        if (parse_mask(p, n, i, &masks[nm]) != 0) {
            free(masks);
            return -1;
        }
        nm++;
    }
    c->cpu_affinity_auto = first == 2;
    free(c->cpu_affinity);
    c->cpu_affinity = nm ? masks : NULL;
    c->n_cpu_affinity = nm;
    if (!nm)
        free(masks);
    return 0;
}

static int set_error_log(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                         const gw_conf_node_t *n, void *base)
{
    static const char *const levels[] = {"emerg", "alert",  "crit", "error",
                                         "warn",  "notice", "info", "debug"};
    gw_conf_t *c = base;
    const char *a = n->args[1];
    int level = GW_LOG_ERROR;
    if (!a[0])
        return gw_conf_bad_value(p, n, 1, "empty path");
    if (strncmp(a, "syslog:", 7) == 0 || strncmp(a, "memory:", 7) == 0)
        return gw_conf_bad_value(p, n, 1, "only a file or \"stderr\" is supported");
    if (n->n_args == 3) {
        for (level = 0; level < (int)(sizeof(levels) / sizeof(levels[0])); level++)
            if (strcmp(n->args[2], levels[level]) == 0)
                break;
        if (level == (int)(sizeof(levels) / sizeof(levels[0])))
            return gw_conf_bad_value(
                p, n, 2, "must be debug, info, notice, warn, error, crit, alert or emerg");
    }
    replace_str(&c->error_log,
                strcmp(a, "stderr") == 0 ? gw_conf_xstrdup(a) : gw_conf_abs_path(p, a));
    c->error_log_level = level;
    return 0;
}

static int set_events(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                      const gw_conf_node_t *n, void *base)
{
    gw_conf_scope_t in = {.ctx = GW_CTX_EVENTS, .seen = p->events_seen};
    gw_conf_walk(p, &in, n);
    return 0;
}

void gw_conf_check_certs(gw_conf_parser_t *p, const gw_srv_settings_t *srv)
{
    char q[300];
    for (size_t i = 0; i < srv->n_certs; i++) {
        const gw_cert_pair_t *cp = &srv->certs[i];
        if (!cp->cert)
            gw_conf_error(p, cp->key_line, "ssl_certificate_key",
                          "key \"%s\" has no matching ssl_certificate",
                          gw_conf_quote(q, sizeof(q), cp->key, 128));
        else if (!cp->key)
            gw_conf_error(p, cp->cert_line, "ssl_certificate",
                          "certificate \"%s\" has no matching ssl_certificate_key",
                          gw_conf_quote(q, sizeof(q), cp->cert, 128));
    }
}

/* Whether block n has a direct child directive called name. */
static int has_child(const gw_conf_node_t *n, const char *name)
{
    for (size_t i = 0; i < n->n_children; i++)
        if (strcmp(n->children[i].args[0], name) == 0)
            return 1;
    return 0;
}

static int set_http(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                    const gw_conf_node_t *n, void *base)
{
    gw_conf_t *c = p->conf;
    c->http_present = 1;
    p->http_file = p->file;
    p->http_line = n->line;
    gw_conf_scope_t in = {
        .ctx = GW_CTX_HTTP, .srv = &c->http.srv, .loc = &c->http.loc, .seen = p->http_seen};
    gw_conf_walk(p, &in, n);
    gw_conf_check_certs(p, &c->http.srv);
    p->http_saw_cert = has_child(n, "ssl_certificate") || has_child(n, "ssl_certificate_key");
    p->saw_server = has_child(n, "server");
    return 0;
}

/* ---- http and server ---- */

static int set_server(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                      const gw_conf_node_t *n, void *base)
{
    gw_http_conf_t *h = &p->conf->http;
    gw_server_t *s = gw_conf_xpush(&h->servers, &h->n_servers, sizeof(*s));
    gw_conf_srv_init(&s->srv);
    gw_conf_loc_init(&s->loc);
    s->file = p->file;
    s->line = n->line;
    unsigned char *saw = gw_conf_xpush(&p->srv_saw_cert, &p->n_srv_saw_cert, 1);

    unsigned char seen[GW_CONF_MAX_DIRECTIVES] = {0};
    gw_conf_scope_t in = {
        .ctx = GW_CTX_SERVER, .srv = &s->srv, .loc = &s->loc, .server = s, .seen = seen};
    gw_conf_walk(p, &in, n);
    gw_conf_check_certs(p, &s->srv);
    /* by name, so that a listen or certificate with an error does not also count as missing */
    *saw = has_child(n, "ssl_certificate") || has_child(n, "ssl_certificate_key");
    if (!has_child(n, "listen") && !p->syntax_errors)
        gw_conf_error(p, n->line, "server", "no listen directive defined");
    return 0;
}

static int set_access_log(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                          const gw_conf_node_t *n, void *base)
{
    gw_srv_settings_t *s = base;
    const char *a = n->args[1];
    if (strcmp(a, "off") == 0) {
        if (n->n_args > 2) {
            gw_conf_error(p, n->line, n->args[0], "invalid number of arguments");
            return -1;
        }
        replace_str(&s->access_log, NULL);
        s->access_log_set = 1;
        return 0;
    }
    if (!a[0])
        return gw_conf_bad_value(p, n, 1, "empty path");
    if (strncmp(a, "syslog:", 7) == 0)
        return gw_conf_bad_value(p, n, 1, "only a file is supported");
    if (n->n_args > 2) { /* a log_format name, checked once the http block is read */
        replace_str(&s->dep.access_log_format, gw_conf_xstrdup(n->args[2]));
        s->dep.access_log_format_line = n->line;
        s->dep.access_log_format_file = p->file;
    }
    replace_str(&s->access_log, gw_conf_abs_path(p, a));
    s->access_log_set = 1;
    return 0;
}

static int set_keepalive_timeout(gw_conf_parser_t *p, gw_conf_scope_t *sc,
                                 const gw_conf_directive_t *d, const gw_conf_node_t *n, void *base)
{
    if (n->n_args > 2)
        return gw_conf_bad_value(p, n, 2, "the header timeout argument is not supported");
    return set_time(p, sc, d, n, base);
}

static int set_large_buffers(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                             const gw_conf_node_t *n, void *base)
{
    gw_srv_settings_t *s = base;
    static const gw_conf_directive_t num = {.lo = 1, .hi = 1024};
    static const gw_conf_directive_t size = {.lo = 1, .hi = INT32_MAX};
    int64_t v = 0, sz = 0;
    if (get_number(p, &num, n, 1, &v) != 0 || get_size(p, &size, n, 2, &sz) != 0)
        return -1;
    s->large_header_buffers_num = (int)v;
    s->large_header_buffers_size = sz;
    return 0;
}

static int set_certificate(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                           const gw_conf_node_t *n, void *base)
{
    gw_srv_settings_t *s = base;
    int is_key = strcmp(d->name, "ssl_certificate_key") == 0;
    if (!n->args[1][0])
        return gw_conf_bad_value(p, n, 1, "empty path");
    /* the Nth certificate and the Nth key form pair N, whatever their order */
    size_t i;
    for (i = 0; i < s->n_certs; i++)
        if (!(is_key ? s->certs[i].key : s->certs[i].cert))
            break;
    gw_cert_pair_t *cp =
        i < s->n_certs ? &s->certs[i] : gw_conf_xpush(&s->certs, &s->n_certs, sizeof(*cp));
    if (is_key) {
        cp->key = gw_conf_abs_path(p, n->args[1]);
        cp->key_line = n->line;
    } else {
        cp->cert = gw_conf_abs_path(p, n->args[1]);
        cp->cert_line = n->line;
    }
    return 0;
}

static int set_protocols(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                         const gw_conf_node_t *n, void *base)
{
    static const struct {
        const char *name;
        unsigned bit;
    } protos[] = {{"TLSv1", GW_PROTO_TLSV1},
                  {"TLSv1.1", GW_PROTO_TLSV1_1},
                  {"TLSv1.2", GW_PROTO_TLSV1_2},
                  {"TLSv1.3", GW_PROTO_TLSV1_3}};
    unsigned bits = 0;
    for (size_t i = 1; i < n->n_args; i++) {
        size_t k;
        for (k = 0; k < sizeof(protos) / sizeof(protos[0]); k++)
            if (strcasecmp(n->args[i], protos[k].name) == 0)
                break;
        if (k < sizeof(protos) / sizeof(protos[0])) {
            bits |= protos[k].bit;
            continue;
        }
        if (strcasecmp(n->args[i], "SSLv2") == 0 || strcasecmp(n->args[i], "SSLv3") == 0)
            return gw_conf_bad_value(p, n, i, "SSL protocols are not supported");
        return gw_conf_bad_value(p, n, i, "must be TLSv1, TLSv1.1, TLSv1.2 or TLSv1.3");
    }
    *FIELD(base, d, unsigned) = bits;
    return 0;
}

static int set_conf_command(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                            const gw_conf_node_t *n, void *base)
{
    gw_srv_settings_t *s = base;
    if (!n->args[1][0])
        return gw_conf_bad_value(p, n, 1, "empty command name");
    gw_conf_cmd_t *cmd = gw_conf_xpush(&s->conf_cmds, &s->n_conf_cmds, sizeof(*cmd));
    cmd->name = gw_conf_xstrdup(n->args[1]);
    cmd->value = gw_conf_xstrdup(n->args[2]);
    return 0;
}

static int set_session_cache(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                             const gw_conf_node_t *n, void *base)
{
    gw_srv_settings_t *s = base;
    int mode = GW_SESSION_CACHE_UNSET, builtin = 0;
    int64_t size = SESSION_CACHE_DEFAULT_SIZE, bytes = 0;
    char *name = NULL;
    if (strncmp(n->args[1], "redis://", 8) == 0) {
        char host[256], why[300];
        int port, db;
        int64_t tmo = 100;
        if (gw_conf_parse_redis_url(n->args[1], host, sizeof(host), &port, &db, why, sizeof(why)) !=
            0)
            return gw_conf_bad_value(p, n, 1, "%s", why);
        if (n->n_args > 2) {
            const char *a = n->args[2];
            if (strncmp(a, "timeout=", 8) != 0 || parse_time(a + 8, &tmo) != 0 || tmo < 1 ||
                tmo > 60000)
                return gw_conf_bad_value(p, n, 2, "must be timeout=TIME (1ms..60s)");
        }
        free(s->ssl_session_cache_name);
        s->ssl_session_cache_name = NULL;
        free(s->ssl_session_cache_redis);
        s->ssl_session_cache_redis = gw_conf_xstrdup(n->args[1]);
        s->ssl_session_cache_redis_timeout_ms = tmo;
        s->ssl_session_cache = GW_SESSION_CACHE_REDIS;
        s->ssl_session_cache_size = 0;
        return 0;
    }
    for (size_t i = 1; i < n->n_args; i++) {
        const char *a = n->args[i];
        if (strcmp(a, "off") == 0 || strcmp(a, "none") == 0) {
            if (n->n_args > 2)
                return gw_conf_bad_value(p, n, i, "\"%s\" must be the only argument", a);
            mode = a[0] == 'o' ? GW_SESSION_CACHE_OFF : GW_SESSION_CACHE_NONE;
        } else if (strncmp(a, "shared:", 7) == 0) {
            if (name) {
                free(name);
                return gw_conf_bad_value(p, n, i, "shared is given twice");
            }
            const char *nm = a + 7, *colon = strchr(nm, ':');
            if (!colon || colon == nm)
                return gw_conf_bad_value(p, n, i, "must be shared:NAME:SIZE");
            for (const char *c = nm; c < colon; c++)
                if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-' && *c != '.')
                    return gw_conf_bad_value(p, n, i,
                                             "zone name may hold letters, digits, _ - . only");
            if (parse_size(colon + 1, &bytes) != 0 || bytes < SHARED_CACHE_MIN ||
                bytes > SHARED_CACHE_MAX)
                return gw_conf_bad_value(p, n, i,
                                         "shared cache size must be a size between 32k and 4g");
            name = gw_conf_xstrdup(nm);
            name[colon - nm] = '\0';
            mode = GW_SESSION_CACHE_SHARED;
        } else if (strcmp(a, "builtin") == 0 || strncmp(a, "builtin:", 8) == 0) {
            if (builtin) {
                free(name);
                return gw_conf_bad_value(p, n, i, "builtin is given twice");
            }
            builtin = 1;
            if (mode != GW_SESSION_CACHE_SHARED)
                mode = GW_SESSION_CACHE_BUILTIN;
            if (a[7] == ':') {
                int r = parse_u64(a + 8, strlen(a + 8), &size);
                if (r != 0 || size < 1 || size > INT_MAX) {
                    free(name);
                    return gw_conf_bad_value(p, n, i,
                                             "builtin size must be a number of sessions "
                                             "between 1 and %d",
                                             INT_MAX);
                }
            }
        } else {
            free(name);
            return gw_conf_bad_value(p, n, i,
                                     "must be off, none, builtin[:N], "
                                     "shared:NAME:SIZE or redis://HOST:PORT[/DB]");
        }
    }
    free(s->ssl_session_cache_name);
    s->ssl_session_cache_name = name;
    s->ssl_session_cache_bytes = bytes;
    free(s->ssl_session_cache_redis);
    s->ssl_session_cache_redis = NULL;
    s->ssl_session_cache = mode;
    /* with shared: 0 unless builtin was given too (both caches, as nginx allows) */
    s->ssl_session_cache_size = mode == GW_SESSION_CACHE_SHARED && !builtin ? 0 : (int)size;
    return 0;
}

static int set_ticket_key(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                          const gw_conf_node_t *n, void *base)
{
    gw_srv_settings_t *s = base;
    if (!n->args[1][0])
        return gw_conf_bad_value(p, n, 1, "empty path");
    if (s->ssl_session_ticket_keys.n == 0)
        s->ssl_session_ticket_key_line = n->line;
    int redis = strncmp(n->args[1], "redis://", 8) == 0;
    if (redis) {
        char host[256], why[300];
        int port, db;
        if (gw_conf_parse_redis_url(n->args[1], host, sizeof(host), &port, &db, why, sizeof(why)) !=
            0)
            return gw_conf_bad_value(p, n, 1, "%s", why);
    }
    char **slot =
        gw_conf_xpush(&s->ssl_session_ticket_keys.v, &s->ssl_session_ticket_keys.n, sizeof(char *));
    *slot = redis ? gw_conf_xstrdup(n->args[1]) : gw_conf_abs_path(p, n->args[1]);
    return 0;
}

/* ---- server ---- */

/* Port 1..65535, digits only; -1 when invalid. */
static int parse_port(const char *s)
{
    int64_t v;
    if (strlen(s) > 5 || parse_u64(s, strlen(s), &v) != 0 || v < 1 || v > 65535)
        return -1;
    return (int)v;
}

/* Fill l's address from "ADDR:PORT", "PORT", "*:PORT", "ADDR" or "[IPv6]:PORT". */
static int parse_listen_addr(gw_conf_parser_t *p, const gw_conf_node_t *n, gw_listen_t *l)
{
    const char *a = n->args[1];
    char host[64];
    const char *port_s = NULL;
    int v6 = 0;
    if (a[0] == '[') {
        const char *rb = strchr(a, ']');
        if (!rb || (size_t)(rb - a - 1) >= sizeof(host))
            return gw_conf_bad_value(p, n, 1, "invalid IPv6 address");
        memcpy(host, a + 1, (size_t)(rb - a - 1));
        host[rb - a - 1] = '\0';
        if (rb[1] == ':')
            port_s = rb + 2;
        else if (rb[1] != '\0')
            return gw_conf_bad_value(p, n, 1, "expected \":PORT\" after \"]\"");
        v6 = 1;
    } else {
        const char *colon = strchr(a, ':');
        if (colon && strchr(colon + 1, ':'))
            return gw_conf_bad_value(p, n, 1, "IPv6 addresses must be in brackets ([::1]:443)");
        if (colon) {
            if ((size_t)(colon - a) >= sizeof(host))
                return gw_conf_bad_value(p, n, 1, "invalid address");
            memcpy(host, a, (size_t)(colon - a));
            host[colon - a] = '\0';
            port_s = colon + 1;
        } else if (a[0] && strspn(a, "0123456789") == strlen(a)) {
            strcpy(host, "*");
            port_s = a;
        } else {
            if (strlen(a) >= sizeof(host))
                return gw_conf_bad_value(p, n, 1, "invalid address");
            strcpy(host, a);
        }
        if (strcmp(host, "*") == 0)
            strcpy(host, "0.0.0.0");
    }
    int port = 80;
    if (port_s && (port = parse_port(port_s)) < 0)
        return gw_conf_bad_value(p, n, 1, "the port must be a number between 1 and 65535");

    char text[INET6_ADDRSTRLEN + 16], norm[INET6_ADDRSTRLEN];
    memset(&l->addr, 0, sizeof(l->addr));
    if (v6) {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&l->addr;
        if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1)
            return gw_conf_bad_value(p, n, 1, "invalid IPv6 address");
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons((uint16_t)port);
        l->addrlen = sizeof(*sin6);
        inet_ntop(AF_INET6, &sin6->sin6_addr, norm, sizeof(norm));
        snprintf(text, sizeof(text), "[%s]:%d", norm, port);
    } else {
        struct sockaddr_in *sin = (struct sockaddr_in *)&l->addr;
        if (inet_pton(AF_INET, host, &sin->sin_addr) != 1) {
            if (!host[0])
                return gw_conf_bad_value(p, n, 1, "missing address before \":\"");
            if (strspn(host, "0123456789.") == strlen(host))
                return gw_conf_bad_value(p, n, 1, "invalid IPv4 address");
            return gw_conf_bad_value(p, n, 1,
                                     "host names are not supported, use a numeric address");
        }
        sin->sin_family = AF_INET;
        sin->sin_port = htons((uint16_t)port);
        l->addrlen = sizeof(*sin);
        inet_ntop(AF_INET, &sin->sin_addr, norm, sizeof(norm));
        snprintf(text, sizeof(text), "%s:%d", norm, port);
    }
    l->text = gw_conf_xstrdup(text);
    return 0;
}

static int set_listen(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                      const gw_conf_node_t *n, void *base)
{
    gw_server_t *s = base;
    gw_listen_t l = {.backlog = LISTEN_BACKLOG_DEFAULT, .line = n->line};
    if (parse_listen_addr(p, n, &l) != 0)
        return -1;
    for (size_t i = 2; i < n->n_args; i++) {
        const char *a = n->args[i];
        if (strcmp(a, "ssl") == 0) {
            l.ssl = 1;
        } else if (strcmp(a, "reuseport") == 0) {
            l.reuseport = 1;
        } else if (strcmp(a, "http2") == 0) {
            l.http2 = 1;
        } else if (strcmp(a, "default_server") == 0) {
            l.default_server = 1;
        } else if (strcmp(a, "proxy_protocol") == 0) {
            l.proxy_protocol = 1; /* issue #23: net/proxy_protocol.h */
        } else if (strncmp(a, "backlog=", 8) == 0) {
            int64_t v;
            if (parse_u64(a + 8, strlen(a + 8), &v) != 0 || v < 1 || v > 65535) {
                free(l.text);
                return gw_conf_bad_value(p, n, i, "backlog must be between 1 and 65535");
            }
            l.backlog = (int)v;
        } else {
            free(l.text);
            return gw_conf_bad_value(p, n, i, "unsupported listen parameter");
        }
    }
    for (size_t i = 0; i < s->n_listens; i++) {
        if (strcmp(s->listens[i].text, l.text) == 0) {
            gw_conf_error(p, n->line, n->args[0], "duplicate listen %s in this server (line %d)",
                          l.text, s->listens[i].line);
            free(l.text);
            return -1;
        }
    }
    if (l.default_server) {
        /* other servers: every one before this (this is the last) */
        const gw_http_conf_t *h = &p->conf->http;
        for (size_t i = 0; i < h->n_servers && &h->servers[i] != s; i++) {
            const gw_server_t *o = &h->servers[i];
            for (size_t j = 0; j < o->n_listens; j++) {
                if (o->listens[j].default_server && strcmp(o->listens[j].text, l.text) == 0) {
                    gw_conf_error(p, n->line, n->args[0],
                                  "duplicate default server for %s (first at %s:%d)", l.text,
                                  o->file, o->listens[j].line);
                    free(l.text);
                    return -1;
                }
            }
        }
    }
    gw_listen_t *slot = gw_conf_xpush(&s->listens, &s->n_listens, sizeof(*slot));
    *slot = l;
    return 0;
}

/* Server names: exact, "*.suffix", ".suffix" (= suffix and *.suffix), "" ; lower-cased. */
static int set_server_name(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                           const gw_conf_node_t *n, void *base)
{
    gw_server_t *s = base;
    for (size_t i = 1; i < n->n_args; i++) {
        const char *a = n->args[i];
        size_t len = strlen(a);
        if (a[0] == '~')
            return gw_conf_bad_value(p, n, i, "regular expression server names are not supported");
        if (len > MAX_SERVER_NAME)
            return gw_conf_bad_value(p, n, i, "longer than %d characters", MAX_SERVER_NAME);
        const char *rest = a;
        if (a[0] == '*' && a[1] == '.')
            rest = a + 2;
        else if (a[0] == '.')
            rest = a + 1;
        if (strchr(rest, '*'))
            return gw_conf_bad_value(p, n, i,
                                     "a wildcard is only allowed as the first label "
                                     "(\"*.example.com\")");
        if (strspn(rest, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") !=
            strlen(rest))
            return gw_conf_bad_value(p, n, i,
                                     "a server name may contain letters, digits, \".\", \"-\" "
                                     "and \"_\" only");
        if (rest != a && !rest[0])
            return gw_conf_bad_value(p, n, i, "a wildcard needs a domain after it");
    }
    for (size_t i = 1; i < n->n_args; i++) {
        char *name = gw_conf_xcalloc(1, strlen(n->args[i]) + 3);
        const char *a = n->args[i];
        if (a[0] == '.') {
            strcpy(name, a + 1);
        } else {
            strcpy(name, a);
        }
        for (char *c = name; *c; c++)
            *c = (char)tolower((unsigned char)*c);
        strlist_add(&s->server_names, name);
        if (a[0] == '.') {
            /* ".example.com" also matches "*.example.com" */
            memmove(name + 2, name, strlen(name) + 1);
            name[0] = '*';
            name[1] = '.';
            strlist_add(&s->server_names, name);
        }
        free(name);
    }
    return 0;
}

static int set_location(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                        const gw_conf_node_t *n, void *base)
{
    gw_server_t *s = sc->server;
    int match = GW_LOC_PREFIX;
    const char *path;
    size_t argi;
    if (n->n_args == 3) {
        const char *m = n->args[1];
        argi = 2;
        if (strcmp(m, "=") == 0)
            match = GW_LOC_EXACT;
        else if (strcmp(m, "^~") == 0)
            match = GW_LOC_PREFIX; /* no regex locations, so ^~ is a plain prefix */
        else if (strcmp(m, "~") == 0 || strcmp(m, "~*") == 0)
            return gw_conf_bad_value(p, n, 1, "regular expression locations are not supported");
        else
            return gw_conf_bad_value(p, n, 1, "the modifier must be \"=\" or \"^~\"");
        path = n->args[2];
    } else {
        argi = 1;
        path = n->args[1];
        if (path[0] == '=') {
            match = GW_LOC_EXACT;
            path++;
        } else if (path[0] == '@') {
            return gw_conf_bad_value(p, n, 1, "named locations are not supported");
        } else if (path[0] == '~') {
            return gw_conf_bad_value(p, n, 1, "regular expression locations are not supported");
        }
    }
    if (path[0] != '/')
        return gw_conf_bad_value(p, n, argi, "the path must start with \"/\"");
    for (size_t i = 0; i < s->n_locations; i++) {
        if (s->locations[i].match == match && strcmp(s->locations[i].path, path) == 0) {
            char q[300];
            gw_conf_error(p, n->line, n->args[0], "duplicate location \"%s%s\" (line %d)",
                          match == GW_LOC_EXACT ? "= " : "", gw_conf_quote(q, sizeof(q), path, 128),
                          s->locations[i].line);
            return -1;
        }
    }
    gw_location_t *l = gw_conf_xpush(&s->locations, &s->n_locations, sizeof(*l));
    gw_conf_loc_init(&l->loc);
    l->match = match;
    l->path = gw_conf_xstrdup(path);
    l->file = p->file;
    l->line = n->line;
    unsigned char seen[GW_CONF_MAX_DIRECTIVES] = {0};
    gw_conf_scope_t in = {
        .ctx = GW_CTX_LOCATION, .loc = &l->loc, .server = s, .location = l, .seen = seen};
    gw_conf_walk(p, &in, n);
    return 0;
}

/* ---- http, server, location ---- */

static int set_root(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                    const gw_conf_node_t *n, void *base)
{
    if (set_path(p, sc, d, n, base) != 0)
        return -1;
    char *r = *FIELD(base, d, char *);
    size_t len = strlen(r);
    while (len > 1 && r[len - 1] == '/')
        r[--len] = '\0';
    return 0;
}

/* ---- location ---- */

static int is_redirect(int code)
{
    return code == 301 || code == 302 || code == 303 || code == 307 || code == 308;
}

static int set_return(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                      const gw_conf_node_t *n, void *base)
{
    gw_location_t *l = base;
    const char *a = n->args[1];
    if (n->n_args == 2 && (strncmp(a, "http://", 7) == 0 || strncmp(a, "https://", 8) == 0)) {
        l->return_code = 302;
        replace_str(&l->return_text, gw_conf_xstrdup(a));
        return 0;
    }
    int64_t code;
    if (parse_u64(a, strlen(a), &code) != 0 || !((code >= 200 && code <= 599) || code == 444))
        return gw_conf_bad_value(p, n, 1,
                                 "must be a status code (200-599 or 444) or an http:// or "
                                 "https:// URL");
    if (is_redirect((int)code) && (n->n_args < 3 || !n->args[2][0]))
        return gw_conf_bad_value(p, n, 1, "a redirect needs a URL argument");
    if (code == 444 && n->n_args == 3)
        return gw_conf_bad_value(p, n, 2, "444 closes the connection and takes no text");
    l->return_code = (int)code;
    replace_str(&l->return_text, n->n_args == 3 ? gw_conf_xstrdup(n->args[2]) : NULL);
    return 0;
}

/* stub_status; | status; | metrics; : one status page per location */
static int set_status_page(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                           const gw_conf_node_t *n, void *base)
{
    gw_location_t *l = base;
    const char *other = l->stub_status   ? "stub_status"
                        : l->status_json ? "status"
                        : l->metrics     ? "metrics"
                                         : NULL;
    if (other && strcmp(other, d->name) != 0) {
        gw_conf_error(p, n->line, d->name,
                      "a location serves one status page, and \"%s\" "
                      "is already set here",
                      other);
        return -1;
    }
    *FIELD(base, d, int) = 1;
    return 0;
}

/* ssl_provider NAME; | ssl_provider NAME { path DIR; PARAM VALUE; ... } */
static int set_provider(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                        const gw_conf_node_t *n, void *base)
{
    gw_conf_t *c = base;
    const char *name = n->args[1];
    if (!name[0] || strchr(name, '/') || strchr(name, ' '))
        return gw_conf_bad_value(p, n, 1, "must be a provider name (e.g. tlsgate, qatprovider)");
    for (size_t i = 0; i < c->n_providers; i++)
        if (strcmp(c->providers[i].name, name) == 0)
            return gw_conf_bad_value(p, n, 1, "provider is already configured");
    if (strcmp(name, "default") == 0 && n->has_block)
        return gw_conf_bad_value(p, n, 1, "the default provider takes no parameters here");
    gw_provider_conf_t pv = {.name = gw_conf_xstrdup(name), .line = n->line};
    int bad = 0;
    for (size_t i = 0; i < n->n_children; i++) {
        const gw_conf_node_t *ch = &n->children[i];
        const char *key = ch->args[0];
        if (ch->has_block || ch->n_args != 2) {
            gw_conf_error(p, ch->line, key, "a provider parameter is \"NAME VALUE;\"");
            bad = 1;
            continue;
        }
        if (strcmp(key, "path") == 0) {
            free(pv.path);
            pv.path = gw_conf_abs_path(p, ch->args[1]);
            continue;
        }
        /* the generated OpenSSL config names sections after providers: keep keys plain */
        int ok = key[0] != '\0';
        for (const char *k = key; *k; k++)
            if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') ||
                  (*k >= '0' && *k <= '9') || *k == '_' || *k == '-' || *k == '.'))
                ok = 0;
        if (!ok || strcmp(key, "module") == 0 || strcmp(key, "activate") == 0 ||
            strchr(ch->args[1], '\n') || strchr(ch->args[1], '$')) {
            gw_conf_error(p, ch->line, key, "invalid provider parameter");
            bad = 1;
            continue;
        }
        gw_conf_cmd_t *kv = gw_conf_xpush(&pv.params, &pv.n_params, sizeof(*kv));
        kv->name = gw_conf_xstrdup(key);
        kv->value = gw_conf_xstrdup(ch->args[1]);
    }
    gw_provider_conf_t *slot = gw_conf_xpush(&c->providers, &c->n_providers, sizeof(*slot));
    *slot = pv;
    return bad ? -1 : 0;
}

static int set_engine(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                      const gw_conf_node_t *n, void *base)
{
    gw_conf_t *c = base;
    if (!n->args[1][0])
        return gw_conf_bad_value(p, n, 1, "empty engine id");
    size_t nl = c->ssl_engines.n;
    int *line = gw_conf_xpush(&c->ssl_engine_lines, &nl, sizeof(int));
    *line = n->line;
    strlist_add(&c->ssl_engines, n->args[1]);
    return 0;
}

static int set_async_notify(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                            const gw_conf_node_t *n, void *base)
{
    const char *a = n->args[1];
    if (strcmp(a, "callback") == 0)
        *FIELD(base, d, int) = GW_ASYNC_NOTIFY_CALLBACK;
    else if (strcmp(a, "fd") == 0)
        *FIELD(base, d, int) = GW_ASYNC_NOTIFY_FD;
    else
        return gw_conf_bad_value(p, n, 1, "must be \"callback\" or \"fd\"");
    return 0;
}

/* ---- reverse proxy and stream (gw/proxy) ---- */

/* Address "ADDR:PORT" or "[IPv6]:PORT" of an upstream server or a proxy_pass; the port is
 * required unless dflt_port > 0. 0, or -1 after reporting. */
static int parse_peer_addr(gw_conf_parser_t *p, const gw_conf_node_t *n, size_t argi, const char *a,
                           int dflt_port, struct sockaddr_storage *ss, socklen_t *len, char **text)
{
    char buf[128];
    const char *colon = a[0] == '[' ? strstr(a, "]:") : strrchr(a, ':');
    if (!colon) {
        if (dflt_port <= 0)
            return gw_conf_bad_value(p, n, argi, "a port is required (ADDR:PORT)");
        snprintf(buf, sizeof(buf), a[0] == '[' ? "%s:%d" : "%s:%d", a, dflt_port);
        a = buf;
    }
    if (strlen(a) > 100 || a[0] == ':' || a[0] == '*')
        return gw_conf_bad_value(p, n, argi, "invalid address (ADDR:PORT)");
    gw_conf_node_t fake = *n;
    char *args[2] = {n->args[0], (char *)a};
    fake.args = args;
    fake.n_args = 2;
    gw_listen_t l = {0};
    if (parse_listen_addr(p, &fake, &l) != 0)
        return -1;
    const struct sockaddr_in *sin = (const struct sockaddr_in *)&l.addr;
    if (l.addr.ss_family == AF_INET && sin->sin_addr.s_addr == htonl(INADDR_ANY)) {
        free(l.text);
        return gw_conf_bad_value(p, n, argi, "0.0.0.0 is not an address to connect to");
    }
    *ss = l.addr;
    *len = l.addrlen;
    *text = l.text;
    return 0;
}

static int find_upstream(const gw_upstream_conf_t *v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* An upstream server given at line, with nginx's defaults: weight=1 max_fails=1
 * fail_timeout=10s. */
static gw_upstream_server_t server_defaults(int line)
{
    return (gw_upstream_server_t){
        .weight = 1, .max_fails = 1, .fail_timeout_ms = 10000, .line = line};
}

/* proxy_pass to an address that names no upstream block (http and stream): a new implicit
 * upstream NAME in *v with the one server us, given at file:line. Returns it. */
static gw_upstream_conf_t *add_implicit_upstream(gw_upstream_conf_t **v, size_t *n,
                                                 const char *name, const gw_upstream_server_t *us,
                                                 const char *file, int line)
{
    gw_upstream_conf_t *u = gw_conf_xpush(v, n, sizeof(*u));
    u->name = gw_conf_xstrdup(name);
    u->implicit = 1;
    u->file = file;
    u->line = line;
    u->servers = gw_conf_xmemdup(us, 1, sizeof(*us));
    u->n_servers = 1;
    return u;
}

/* upstream NAME { server ADDR:PORT [weight=N] [max_fails=N] [fail_timeout=T] [backup];
 * keepalive N; keepalive_requests N; keepalive_timeout T; } into *v. */
static int parse_upstream(gw_conf_parser_t *p, const gw_conf_node_t *n, gw_upstream_conf_t **v,
                          size_t *nv)
{
    const char *name = n->args[1];
    if (!name[0] || strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                 "0123456789._-") != strlen(name))
        return gw_conf_bad_value(p, n, 1,
                                 "an upstream name is letters, digits, \".\", \"_\" "
                                 "and \"-\"");
    int dup = find_upstream(*v, *nv, name);
    if (dup >= 0) {
        gw_conf_error(p, n->line, n->args[0], "duplicate upstream \"%s\" (line %d)", name,
                      (*v)[dup].line);
        return -1;
    }
    gw_upstream_conf_t u = {.name = gw_conf_xstrdup(name),
                            .keepalive = 0,
                            .keepalive_requests = 1000,
                            .keepalive_timeout_ms = 60000,
                            .file = p->file,
                            .line = n->line};
    int bad = 0, saw_ka = 0;
    for (size_t i = 0; i < n->n_children; i++) {
        const gw_conf_node_t *ch = &n->children[i];
        const char *key = ch->args[0];
        if (ch->has_block) {
            gw_conf_error(p, ch->line, key, "directive does not take a block");
            bad = 1;
            continue;
        }
        if (strcmp(key, "server") == 0) {
            if (ch->n_args < 2) {
                gw_conf_error(p, ch->line, key, "invalid number of arguments");
                bad = 1;
                continue;
            }
            gw_upstream_server_t s = server_defaults(ch->line);
            if (parse_peer_addr(p, ch, 1, ch->args[1], 80, &s.addr, &s.addrlen, &s.text) != 0) {
                bad = 1;
                continue;
            }
            for (size_t k = 2; k < ch->n_args; k++) {
                const char *a = ch->args[k];
                int64_t val = 0;
                int err = 0;
                if (strncmp(a, "weight=", 7) == 0) {
                    err = parse_u64(a + 7, strlen(a + 7), &val) != 0 || val < 1 || val > 1000;
                    s.weight = (int)val;
                } else if (strncmp(a, "max_fails=", 10) == 0) {
                    err = parse_u64(a + 10, strlen(a + 10), &val) != 0 || val > 1000000;
                    s.max_fails = (int)val;
                } else if (strncmp(a, "fail_timeout=", 13) == 0) {
                    err = parse_time(a + 13, &val) != 0 || val > INT32_MAX;
                    s.fail_timeout_ms = val;
                } else if (strcmp(a, "backup") == 0) {
                    s.backup = 1;
                } else {
                    gw_conf_bad_value(p, ch, k,
                                      "unsupported server parameter (weight=, "
                                      "max_fails=, fail_timeout=, backup)");
                    err = -1;
                }
                if (err > 0)
                    gw_conf_bad_value(p, ch, k,
                                      "invalid value (weight 1-1000, max_fails "
                                      "0-1000000, fail_timeout a time)");
                if (err)
                    bad = 1;
            }
            gw_upstream_server_t *slot = gw_conf_xpush(&u.servers, &u.n_servers, sizeof(*slot));
            *slot = s;
        } else if (strcmp(key, "keepalive") == 0 || strcmp(key, "keepalive_requests") == 0 ||
                   strcmp(key, "keepalive_timeout") == 0) {
            int64_t val;
            if (ch->n_args != 2) {
                gw_conf_error(p, ch->line, key, "invalid number of arguments");
                bad = 1;
            } else if (key[9] == '_' && key[10] == 't') {
                if (parse_time(ch->args[1], &val) != 0 || val < 1 || val > INT32_MAX) {
                    gw_conf_bad_value(p, ch, 1, "not a time (e.g. 60s)");
                    bad = 1;
                } else {
                    u.keepalive_timeout_ms = val;
                }
            } else if (parse_u64(ch->args[1], strlen(ch->args[1]), &val) != 0 || val < 1 ||
                       val > 1000000) {
                gw_conf_bad_value(p, ch, 1, "must be between 1 and 1000000");
                bad = 1;
            } else if (key[9] == '_') {
                u.keepalive_requests = (int)val;
            } else {
                u.keepalive = (int)val;
                saw_ka++;
            }
        } else {
            gw_conf_error(p, ch->line, key,
                          "unknown directive in upstream (server, keepalive, "
                          "keepalive_requests, keepalive_timeout)");
            bad = 1;
        }
    }
    if (saw_ka > 1) {
        gw_conf_error(p, n->line, n->args[0], "keepalive is duplicate");
        bad = 1;
    }
    size_t primary = 0;
    for (size_t i = 0; i < u.n_servers; i++)
        primary += !u.servers[i].backup;
    if (!bad && primary == 0) {
        gw_conf_error(p, n->line, n->args[0], "no servers are inside upstream \"%s\"%s", name,
                      u.n_servers ? " (only backup ones)" : "");
        bad = 1;
    }
    gw_upstream_conf_t *slot = gw_conf_xpush(v, nv, sizeof(*slot));
    *slot = u;
    return bad ? -1 : 0;
}

static int set_upstream(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                        const gw_conf_node_t *n, void *base)
{
    return parse_upstream(p, n, &p->conf->http.upstreams, &p->conf->http.n_upstreams);
}

/* proxy_pass http://ADDR:PORT[/URI] | http://NAME[/URI]: the target is resolved against
 * the upstream blocks after parsing (they may come later), see gw_conf_resolve_proxy(). */
static int set_proxy_pass(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                          const gw_conf_node_t *n, void *base)
{
    gw_location_t *l = base;
    const char *a = n->args[1];
    size_t skip = strncmp(a, "https://", 8) == 0 ? 8 : 7; /* https: issue #23 */
    if ((skip == 7 && strncmp(a, "http://", 7) != 0) || !a[skip] || a[skip] == '/')
        return gw_conf_bad_value(p, n, 1,
                                 "must be http(s)://ADDR:PORT[/URI] or "
                                 "http(s)://NAME[/URI]");
    if (strchr(a, '$'))
        return gw_conf_bad_value(p, n, 1, "variables are not supported in proxy_pass");
    l->loc.dep.proxy_https = skip == 8;
    const char *slash = strchr(a + skip, '/');
    for (const char *q = slash ? slash : ""; *q; q++)
        if ((unsigned char)*q <= ' ' || *q == 0x7f)
            return gw_conf_bad_value(p, n, 1, "the URI has a control character or space");
    replace_str(&l->proxy_pass, gw_conf_xstrdup(a));
    replace_str(&l->proxy_uri, slash ? gw_conf_xstrdup(slash) : NULL);
    l->proxy_upstream = -1;
    return 0;
}

/* Find (or create, for ADDR:PORT) the upstream of every proxy_pass. */
void gw_conf_resolve_proxy(gw_conf_parser_t *p);
void gw_conf_resolve_proxy(gw_conf_parser_t *p)
{
    gw_http_conf_t *h = &p->conf->http;
    for (size_t i = 0; i < h->n_servers; i++) {
        gw_server_t *s = &h->servers[i];
        for (size_t j = 0; j < s->n_locations; j++) {
            gw_location_t *l = &s->locations[j];
            if (!l->proxy_pass)
                continue;
            int https = l->loc.dep.proxy_https;
            const char *host = l->proxy_pass + (https ? 8 : 7);
            const char *slash = strchr(host, '/');
            size_t hl = slash ? (size_t)(slash - host) : strlen(host);
            char name[256];
            if (hl >= sizeof(name)) {
                gw_conf_error(p, l->line, "proxy_pass", "host name too long");
                continue;
            }
            memcpy(name, host, hl);
            name[hl] = '\0';
            int idx = find_upstream(h->upstreams, h->n_upstreams, name);
            if (idx < 0) {
                gw_upstream_server_t us = server_defaults(l->line);
                char *args[2] = {"proxy_pass", name};
                gw_conf_node_t fake = {.args = args, .n_args = 2, .line = l->line};
                const char *saved = p->file;
                p->file = l->file;
                int r = parse_peer_addr(p, &fake, 1, name, https ? 443 : 80, &us.addr, &us.addrlen,
                                        &us.text);
                p->file = saved;
                if (r != 0)
                    continue;
                gw_upstream_conf_t *u = add_implicit_upstream(&h->upstreams, &h->n_upstreams, name,
                                                              &us, l->file, l->line);
                u->keepalive_requests = 1000;
                u->keepalive_timeout_ms = 60000;
                idx = (int)h->n_upstreams - 1;
            }
            l->proxy_upstream = idx;
        }
    }
}

/* proxy_hide_header NAME / proxy_pass_header NAME: appended to a gw_strlist_t */
static int set_field_name(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                          const gw_conf_node_t *n, void *base)
{
    const char *name = n->args[1];
    if (!name[0] || strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                 "0123456789!#$%&'*+-.^_`|~") != strlen(name))
        return gw_conf_bad_value(p, n, 1, "not a header field name");
    strlist_add(FIELD(base, d, gw_strlist_t), name);
    return 0;
}

/* proxy_set_header NAME VALUE: an empty VALUE removes the field */
static int set_proxy_header(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                            const gw_conf_node_t *n, void *base)
{
    gw_loc_settings_t *l = base;
    const char *name = n->args[1];
    if (!name[0] || strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                 "0123456789!#$%&'*+-.^_`|~") != strlen(name))
        return gw_conf_bad_value(p, n, 1, "not a header field name");
    for (const char *v = n->args[2]; *v; v++)
        if (((unsigned char)*v < ' ' && *v != '\t') || *v == 0x7f)
            return gw_conf_bad_value(p, n, 2, "control character in a header value");
    static const char *const hop[] = {"connection", "keep-alive",      "transfer-encoding",
                                      "te",         "upgrade",         "content-length",
                                      "trailer",    "proxy-connection"};
    for (size_t i = 0; i < sizeof(hop) / sizeof(hop[0]); i++) {
        if (strcasecmp(name, hop[i]) != 0)
            continue;
        /* nginx configs say `proxy_set_header Connection "";` for keep-alive: what it
         * asks (no such field upstream) is what we do anyway */
        if (!n->args[2][0])
            return 0;
        return gw_conf_bad_value(p, n, 1,
                                 "framing and hop-by-hop fields are set by the "
                                 "proxy itself");
    }
    gw_conf_cmd_t *kv = gw_conf_xpush(&l->proxy_headers, &l->n_proxy_headers, sizeof(*kv));
    kv->name = gw_conf_xstrdup(name);
    kv->value = gw_conf_xstrdup(n->args[2]);
    l->proxy_headers_set = 1;
    return 0;
}

/* stream { upstream NAME { ... } server { listen ADDR:PORT [ssl]; proxy_pass ADDR:PORT|NAME;
 * proxy_timeout T; proxy_connect_timeout T; ssl_...; } } */
static int set_stream(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,
                      const gw_conf_node_t *n, void *base)
{
    gw_stream_conf_t *st = &p->conf->stream;
    static const char *const allowed[] = {"listen",
                                          "ssl_certificate",
                                          "ssl_certificate_key",
                                          "ssl_protocols",
                                          "ssl_ciphers",
                                          "ssl_ecdh_curve",
                                          "ssl_conf_command",
                                          "ssl_prefer_server_ciphers",
                                          "ssl_session_cache",
                                          "ssl_session_tickets",
                                          "ssl_async",
                                          "ssl_async_notify"};
    /* upstreams first: a server may name one defined after it */
    for (size_t i = 0; i < n->n_children; i++) {
        const gw_conf_node_t *ch = &n->children[i];
        if (strcmp(ch->args[0], "upstream") == 0) {
            if (!ch->has_block || ch->n_args != 2)
                gw_conf_error(p, ch->line, "upstream", "expected \"upstream NAME { ... }\"");
            else
                parse_upstream(p, ch, &st->upstreams, &st->n_upstreams);
        } else if (strcmp(ch->args[0], "server") != 0) {
            gw_conf_error(p, ch->line, ch->args[0],
                          "directive is not allowed in stream "
                          "(upstream, server)");
        }
    }
    for (size_t i = 0; i < n->n_children; i++) {
        const gw_conf_node_t *ch = &n->children[i];
        if (strcmp(ch->args[0], "server") != 0)
            continue;
        if (!ch->has_block || ch->n_args != 1) {
            gw_conf_error(p, ch->line, "server", "expected \"server { ... }\"");
            continue;
        }
        gw_stream_server_t *ss = gw_conf_xpush(&st->servers, &st->n_servers, sizeof(*ss));
        memset(ss, 0, sizeof(*ss));
        gw_server_t *s = &ss->server;
        gw_conf_srv_init(&s->srv);
        gw_conf_loc_init(&s->loc);
        s->file = p->file;
        s->line = ch->line;
        ss->upstream = -1;
        ss->proxy_timeout_ms = 600000;
        ss->proxy_connect_timeout_ms = 60000;
        unsigned char seen[GW_CONF_MAX_DIRECTIVES] = {0};
        gw_conf_scope_t in = {
            .ctx = GW_CTX_SERVER, .srv = &s->srv, .loc = &s->loc, .server = s, .seen = seen};
        int saw_pass = 0, saw_to = 0, saw_cto = 0;
        unsigned char saw_dep = 0;
        for (size_t k = 0; k < ch->n_children; k++) {
            const gw_conf_node_t *g = &ch->children[k];
            const char *key = g->args[0];
            if (gw_conf_stream_deploy(p, ss, g, &saw_dep, &in)) /* issue #23: conf/deploy.c */
                continue;
            int64_t *tp = NULL;
            if (strcmp(key, "proxy_pass") == 0) {
                if (g->has_block || g->n_args != 2 || saw_pass++) {
                    gw_conf_error(p, g->line, key,
                                  saw_pass > 1 ? "directive is duplicate"
                                               : "invalid number of arguments");
                    continue;
                }
                int idx = find_upstream(st->upstreams, st->n_upstreams, g->args[1]);
                if (idx < 0) {
                    gw_upstream_server_t us = server_defaults(g->line);
                    if (!strchr(g->args[1], ':')) {
                        gw_conf_bad_value(p, g, 1, "no upstream of this name (or ADDR:PORT)");
                        continue;
                    }
                    if (parse_peer_addr(p, g, 1, g->args[1], 0, &us.addr, &us.addrlen, &us.text) !=
                        0)
                        continue;
                    add_implicit_upstream(&st->upstreams, &st->n_upstreams, g->args[1], &us,
                                          p->file, g->line);
                    idx = (int)st->n_upstreams - 1;
                }
                ss->upstream = idx;
                continue;
            }
            if (strcmp(key, "proxy_timeout") == 0)
                tp = saw_to++ ? NULL : &ss->proxy_timeout_ms;
            else if (strcmp(key, "proxy_connect_timeout") == 0)
                tp = saw_cto++ ? NULL : &ss->proxy_connect_timeout_ms;
            if (tp || saw_to > 1 || saw_cto > 1) {
                int64_t val;
                if (!tp || g->has_block || g->n_args != 2)
                    gw_conf_error(p, g->line, key,
                                  !tp ? "directive is duplicate" : "invalid number of arguments");
                else if (parse_time(g->args[1], &val) != 0 || val < 1 || val > INT32_MAX)
                    gw_conf_bad_value(p, g, 1, "not a time (e.g. 500ms, 75s, 10m)");
                else
                    *tp = val;
                continue;
            }
            size_t a;
            for (a = 0; a < sizeof(allowed) / sizeof(allowed[0]); a++)
                if (strcmp(key, allowed[a]) == 0)
                    break;
            if (a == sizeof(allowed) / sizeof(allowed[0])) {
                gw_conf_error(p, g->line, key, "directive is not allowed in a stream server");
                continue;
            }
            gw_conf_node_t one = {.n_children = 1, .children = (gw_conf_node_t *)g};
            gw_conf_walk(p, &in, &one);
        }
        gw_conf_check_certs(p, &s->srv);
        if (!has_child(ch, "listen") && !p->syntax_errors)
            gw_conf_error(p, ch->line, "server", "no listen directive defined");
        if (!saw_pass && !p->syntax_errors)
            gw_conf_error(p, ch->line, "server", "no proxy_pass defined");
        for (size_t k = 0; k < s->n_listens; k++)
            if (s->listens[k].ssl && s->srv.n_certs == 0 && !has_child(ch, "ssl_certificate"))
                gw_conf_error(p, s->listens[k].line, "listen",
                              "no ssl_certificate defined for the listen %s ssl",
                              s->listens[k].text);
    }
    return 0;
}

/* ---- the table ---- */

#define M GW_CTX_MAIN
#define E GW_CTX_EVENTS
#define H GW_CTX_HTTP
#define S GW_CTX_SERVER
#define L GW_CTX_LOCATION
#define HS (GW_CTX_HTTP | GW_CTX_SERVER)
#define HSL (GW_CTX_HTTP | GW_CTX_SERVER | GW_CTX_LOCATION)

/* Rows: name, contexts, flags, min/max arguments, group + field, setter, numeric range,
 * argument synopsis, default (applied by the merge step), description. */
#define MAIN(f) GW_GRP_MAIN, offsetof(gw_conf_t, f)
#define SRV(f) GW_GRP_SRV, offsetof(gw_srv_settings_t, f)
#define LOC(f) GW_GRP_LOC, offsetof(gw_loc_settings_t, f)
#define SERVER(f) GW_GRP_SERVER, offsetof(gw_server_t, f)
#define LOCATION(f) GW_GRP_LOCATION, offsetof(gw_location_t, f)
#define NOFIELD GW_GRP_NONE, 0
#define ANY 0, INT64_MAX
/* times, in ms: timers hold them in 64 bits, but like nginx's 32-bit msec the bound is
 * ~24.8 days, so a deadline can never overflow the monotonic clock */
#define TIME0 0, INT32_MAX
#define TIME1 1, INT32_MAX

const gw_conf_directive_t gw_conf_directives[] = {
    /* main */
    {"daemon", M, 0, 1, 1, MAIN(daemon), set_flag, ANY, "`on` \\| `off`", "off",
     "Detach from the terminal and run in the background."},
    {"worker_processes", M, 0, 1, 1, MAIN(worker_processes), set_worker_processes, 1, 512,
     "*N* \\| `auto`", "1", "Number of worker processes; `auto` is the number of online CPUs."},
    {"worker_cpu_affinity", M, 0, 1, 1024, MAIN(cpu_affinity), set_cpu_affinity, ANY,
     "`auto` [*MASK*] \\| *MASK*...", NULL,
     "Bind workers to CPUs: one binary mask per worker (rightmost digit is CPU 0), or `auto` "
     "(one CPU per worker, optionally limited to the CPUs of *MASK*)."},
    {"worker_rlimit_nofile", M, 0, 1, 1, MAIN(worker_rlimit_nofile), set_num64, 1, INT32_MAX, "*N*",
     NULL, "Open-file limit (RLIMIT_NOFILE) of the workers; left alone when not given."},
    {"worker_shutdown_timeout", M, 0, 1, 1, MAIN(worker_shutdown_timeout_ms), set_time, TIME0,
     "*TIME*", "10s", "How long a graceful stop waits for open connections before closing them."},
    {"error_log", M, 0, 1, 2, MAIN(error_log), set_error_log, ANY, "*FILE* \\| `stderr` [*LEVEL*]",
     "stderr error",
     "Where errors are logged and the least severe level logged: `debug`, `info`, `notice`, "
     "`warn`, `error`, `crit`, `alert` or `emerg`."},
    {"pid", M, GW_DIR_DEFAULT_DOC, 1, 1, MAIN(pid), set_path, ANY, "*FILE*",
     "<state_dir>/tlsgate.pid", "File the master process writes its PID to."},
    {"ssl_provider", M, GW_DIR_MULTI | GW_DIR_BLOCK_OPT, 1, 1, MAIN(providers), set_provider, ANY,
     "*NAME* [`{ path` *DIR*`;` *PARAM* *VALUE*`; ... }`]", NULL,
     "Load the OpenSSL 3 provider *NAME* (from *DIR*/*NAME*.so when `path` is given, else "
     "OpenSSL's module directory) with its parameters, as an `openssl.cnf` provider section "
     "would. The default provider stays loaded. `tlsgate` is built in (prov/README.md: "
     "`flush_us`, `poll_mode`, `enable`, `adaptive`, `pool_size`; another name is an "
     "error): `ssl_provider tlsgate; ssl_propquery "
     "?provider=tlsgate; ssl_async on;` batches the handshakes' private-key operations."},
    {"ssl_propquery", M, 0, 1, 1, MAIN(ssl_propquery), set_str, ANY, "*QUERY*", NULL,
     "Default property query for algorithm fetches, e.g. `?provider=tlsgate` (prefer, fall "
     "back) or `provider=tlsgate` (require)."},
    {"ssl_engine", M, GW_DIR_MULTI, 1, 1, MAIN(ssl_engines), set_engine, ANY, "*ID*", NULL,
     "Load the legacy OpenSSL ENGINE *ID* and make it the default for all its methods."},
    {"ssl_async_jobs", M, 0, 1, 1, MAIN(ssl_async_jobs), set_int, 1, 1048576, "*N*", NULL,
     "Size of each worker's async job pool; when all are in use a handshake waits for one "
     "(default: OpenSSL's, unbounded)."},
    {"user", M, 0, 1, 2, MAIN(user), set_strlist, ANY, "*USER* [*GROUP*]", NULL,
     "Credentials of the worker processes when the master runs as root (it binds and reads "
     "keys first): `setgroups` (*USER*'s groups), `setgid`, `setuid`. *GROUP* defaults to "
     "*USER*'s primary group. Started as root without `user`, tlsgate refuses to run (unlike "
     "nginx, which falls back to `nobody`); `user root;` keeps root workers deliberately. Ignored "
     "with a warning when the master is not root."},
    {"working_directory", M, 0, 1, 1, MAIN(working_directory), set_path, ANY, "*DIR*", NULL,
     "Current directory of the worker processes (where a core dump is written). With it the "
     "workers may dump core (`PR_SET_DUMPABLE` 1, also after `user` switched them, as nginx); "
     "without it they are made non-dumpable. Key memory is left out of dumps (`ssl_secure_heap`, "
     "docs/security.md)."},
    {"ssl_secure_heap", M, GW_DIR_DEFAULT_DOC, 1, 1, MAIN(ssl_secure_heap), set_size, 0, 1073741824,
     "*SIZE*", "8m",
     "Size of OpenSSL's secure heap (`CRYPTO_secure_malloc_init`, rounded up to a power of two; "
     "`0` = off): private keys, session ticket keys and the provider's keys and pools live there, "
     "in memory excluded from core dumps (`MADV_DONTDUMP`) and locked when allowed. OpenSSL also "
     "puts each connection's ephemeral key there (32 bytes; 96 with `ssl_provider tlsgate`, "
     "kept for a TLS 1.3 connection's life); full, it fails handshakes (logged at alert). Unset, "
     "it is 8m or, when `worker_connections` needs more, worker_connections x 64 bytes (x 256 "
     "with `tlsgate`, x 2048 with another provider than `default`) + the provider's pools + 1m, "
     "capped at 1g; a smaller "
     "explicit size is warned about at start, reload and `-t`. See docs/security.md."},
    {"events", M, GW_DIR_BLOCK, 0, 0, NOFIELD, set_events, ANY, "`{ ... }`", NULL,
     "Connection processing settings."},
    {"stream", M, GW_DIR_BLOCK, 0, 0, NOFIELD, set_stream, ANY, "`{ ... }`", NULL,
     "TLS termination for raw TCP (nginx's stream module): `upstream NAME { ... }` blocks as "
     "in http, and `server { listen ADDR:PORT [ssl] [proxy_protocol]; proxy_pass "
     "ADDR:PORT|NAME; proxy_timeout TIME; proxy_connect_timeout TIME; proxy_protocol on|off; "
     "ssl_...; }` (timeouts 10m and 60s; the ssl_ directives of an http server apply, except "
     "OCSP stapling). `proxy_protocol on` sends a PROXY protocol v1 header to the upstream "
     "naming the client (the address a PROXY header of the client's connection gave, else "
     "the TCP peer) and the address it connected to (before TLS). `proxy_ssl on` speaks TLS "
     "to the upstream, with the `proxy_ssl_*` settings of http (given in the stream server). "
     "See docs/proxy.md."},
    {"http", M, GW_DIR_BLOCK, 0, 0, NOFIELD, set_http, ANY, "`{ ... }`", NULL,
     "HTTPS server settings and the `server` blocks; without it tlsgate does not start."},
    /* events */
    {"worker_connections", E, 0, 1, 1, MAIN(worker_connections), set_int, 1, 1048576, "*N*", "1024",
     "Maximum number of simultaneous connections of one worker."},
    /* http */
    {"server", H, GW_DIR_BLOCK | GW_DIR_MULTI, 0, 0, NOFIELD, set_server, ANY, "`{ ... }`", NULL,
     "A virtual server: its addresses, names, settings and locations. Needs a `listen`."},
    /* server */
    {"listen", S, GW_DIR_MULTI, 1, 7, SERVER(listens), set_listen, ANY,
     "*ADDR*:*PORT* \\| *PORT* \\| [*IPv6*]:*PORT* [`ssl`] [`http2`] [`reuseport`] [`backlog=`*N*] "
     "[`default_server`] [`proxy_protocol`]",
     NULL,
     "Address to accept connections on; numeric addresses only, `*:`*PORT* and a bare *PORT* "
     "mean 0.0.0.0; `backlog` defaults to 511; `ssl` needs an `ssl_certificate`; `http2`: the "
     "server speaks HTTP/2 as with `http2 on` (ALPN `h2` on TLS; on plain TCP, clients that "
     "open with the HTTP/2 preface, prior knowledge, RFC 9113 §3.3). With "
     "`proxy_protocol` (http and stream) every connection starts with a PROXY protocol v1 or "
     "v2 header (read before the TLS handshake, within its timeout: `ssl_handshake_timeout`, "
     "or `client_header_timeout` without TLS); a malformed one closes the connection with an "
     "error log line. `$proxy_protocol_addr` holds its client address; `real_ip_header "
     "proxy_protocol` with `set_real_ip_from` makes it `$remote_addr`."},
    {"server_name", S, GW_DIR_MULTI | GW_DIR_DEFAULT_DOC, 1, -1, SERVER(server_names),
     set_server_name, ANY, "*NAME*...", "\"\"",
     "Host names of the server: exact names, `*.example.com`, `.example.com` (both), or `\"\"` "
     "(requests without a host name); compared case-insensitively."},
    {"location", S, GW_DIR_BLOCK | GW_DIR_MULTI, 1, 2, NOFIELD, set_location, ANY,
     "[`=`] */PATH* `{ ... }`", NULL,
     "Settings for requests whose path starts with */PATH* (or, with `=`, equals it); the "
     "exact match wins, then the longest prefix."},
    /* http and server */
    {"access_log", HS, 0, 1, 2, SRV(access_log), set_access_log, ANY, "`off` \\| *FILE* [*FORMAT*]",
     "off", "Log requests to *FILE* in the `combined` format or a `log_format` of the http block."},
    {"keepalive_timeout", HS, 0, 1, 2, SRV(keepalive_timeout_ms), set_keepalive_timeout, TIME0,
     "*TIME*", "75s",
     "How long an idle keep-alive connection stays open; `0` disables "
     "keep-alive (responses say `Connection: close`)."},
    {"keepalive_requests", HS, 0, 1, 1, SRV(keepalive_requests), set_int, 0, INT_MAX, "*N*", "1000",
     "Maximum number of requests served on one connection (an HTTP/2 connection then sends "
     "GOAWAY and ends once its open streams are answered, as nginx)."},
    {"client_header_timeout", HS, 0, 1, 1, SRV(client_header_timeout_ms), set_time, TIME1, "*TIME*",
     "60s", "Time allowed for the TLS handshake and for receiving a complete request header."},
    {"client_header_buffer_size", HS, 0, 1, 1, SRV(client_header_buffer_size), set_size, 1,
     INT32_MAX, "*SIZE*", "1k", "Buffer size for reading a request header."},
    {"large_client_header_buffers", HS, 0, 2, 2, SRV(large_header_buffers_num), set_large_buffers,
     ANY, "*NUM* *SIZE*", "4 8k",
     "Number and size of the buffers for large request headers: a request line or a header "
     "field must fit in one *SIZE* buffer."},
    {"client_max_body_size", HSL, 0, 1, 1, LOC(client_max_body_size), set_size, ANY, "*SIZE*", "1m",
     "Largest request body accepted (else 413); `0` means no limit. A location's applies to "
     "the requests it answers, checked once the location is chosen (nginx)."},
    {"ssl_handshake_timeout", HS, 0, 1, 1, SRV(ssl_handshake_timeout_ms), set_time, TIME1, "*TIME*",
     "10s",
     "Absolute deadline for the TLS handshake, counted from the accept whatever the client "
     "trickles; the connection is closed when it passes. `client_header_timeout`, also counted "
     "from the accept, still bounds the handshake plus the first request head. Taken from the "
     "listen address's default server (the timer starts before SNI is known)."},
    {"limit_conn_per_ip", HS, 0, 1, 1, SRV(limit_conn_per_ip), set_int, 0, 1048576, "*N*", "0",
     "Most connections one client address may hold open in each worker process; `0` means no "
     "limit. Checked at the accept with the listen address's default server's value (before "
     "SNI): a connection over the limit is closed at once, without a TLS alert, and logged at "
     "`warn`. IPv4-mapped IPv6 addresses count as their IPv4 address."},
    {"ssl_reject_handshake", HS, 0, 1, 1, SRV(ssl_reject_handshake), set_flag, ANY,
     "`on` \\| `off`", "off",
     "Reject TLS handshakes that select this server (no SNI or an unknown name reaching the "
     "default server, or a name of this server) with the `unrecognized_name` alert, as nginx; "
     "such a server needs no certificate."},
    {"ssl_password_file", HS, 0, 1, 1, SRV(ssl_password_file), set_path, ANY, "*FILE*", NULL,
     "Passphrases for encrypted PEM keys, one a line, tried in order for each key (nginx). "
     "Without it an encrypted key is an error (never a terminal prompt)."},
    {"http2", HS, 0, 1, 1, SRV(http2), set_flag, ANY, "`on` \\| `off`", "off",
     "Offer HTTP/2 (ALPN `h2`, preferred to `http/1.1`) on this server's TLS connections, as "
     "nginx's `http2 on;`; `listen ... ssl http2` does the same for the server block that "
     "says it. The protocol is chosen by the server block SNI selects."},
    {"http2_max_concurrent_streams", HS, 0, 1, 1, SRV(http2_max_concurrent_streams), set_int, 1,
     65536, "*N*", "128",
     "Most concurrent streams of one HTTP/2 connection (SETTINGS_MAX_CONCURRENT_STREAMS); "
     "streams over it are refused (`REFUSED_STREAM`)."},
    {"sendfile", HS, 0, 1, 1, SRV(sendfile), set_flag, ANY, "`on` \\| `off`", "off",
     "Send static files with the kernel's help: on TLS, OpenSSL is asked for kernel TLS "
     "(`SSL_OP_ENABLE_KTLS`, as nginx's `ssl_conf_command Options KTLS`) and, where the "
     "kernel took the connection's transmit keys, file bodies go out by `SSL_sendfile` "
     "(no `pread`, no copy to user space); plain TCP uses `sendfile(2)`. Where the kernel has "
     "no `tls` module or does not take the cipher, file bodies go out through OpenSSL's "
     "records as with `off`."},
    {"ssl_buffer_size", HS, 0, 1, 1, SRV(ssl_buffer_size), set_size, 512, 16384, "*SIZE*", "16k",
     "Largest TLS record sent (512 to 16k bytes; OpenSSL's max_send_fragment, so handshake "
     "records too): smaller records let a client use the first bytes sooner, 16k costs the "
     "least CPU per byte (nginx's directive of the same name)."},
    {"send_timeout", HS, 0, 1, 1, SRV(send_timeout_ms), set_time, TIME1, "*TIME*", "60s",
     "Close the connection when the client accepts no data for this long."},
    {"ssl_certificate", HS, GW_DIR_MULTI, 1, 1, SRV(certs), set_certificate, ANY, "*FILE*", NULL,
     "PEM certificate (chain) file; repeat for several certificates (e.g. RSA and ECDSA). The "
     "*N*th `ssl_certificate_key` is its key. A server without one inherits http's."},
    {"ssl_certificate_key", HS, GW_DIR_MULTI, 1, 1, SRV(certs), set_certificate, ANY, "*FILE*",
     NULL, "PEM private key of the *N*th `ssl_certificate`."},
    {"ssl_protocols", HS, 0, 1, -1, SRV(ssl_protocols), set_protocols, ANY,
     "[`TLSv1`] [`TLSv1.1`] [`TLSv1.2`] [`TLSv1.3`]", "TLSv1.2 TLSv1.3", "TLS versions accepted."},
    {"ssl_ciphers", HS, 0, 1, 1, SRV(ssl_ciphers), set_str, ANY, "*CIPHERS*", "HIGH:!aNULL:!MD5",
     "OpenSSL cipher list for TLS 1.2 and older."},
    {"ssl_ecdh_curve", HS, 0, 1, 1, SRV(ssl_ecdh_curve), set_str, ANY,
     "`auto` \\| *GROUP*[`:`*GROUP*...]", "auto",
     "Key exchange groups, in the server's order of preference (OpenSSL group names, e.g. "
     "`X25519MLKEM768:X25519:prime256v1`; nginx's directive of the same name). `auto`: "
     "OpenSSL's default list (X25519, P-256, X448, P-521, P-384, FFDHE), after "
     "`X25519MLKEM768` and `SecP256r1MLKEM768` when a provider offers them (`ssl_provider "
     "tlsgate`): post-quantum hybrid key exchange for clients that have it (Chromium, "
     "Firefox), X25519 for the others."},
    {"ssl_conf_command", HS, GW_DIR_MULTI, 2, 2, SRV(conf_cmds), set_conf_command, ANY,
     "*NAME* *VALUE*", NULL,
     "OpenSSL configuration command (SSL_CONF_cmd), applied in order; http's come before the "
     "server's."},
    {"ssl_prefer_server_ciphers", HS, 0, 1, 1, SRV(ssl_prefer_server_ciphers), set_flag, ANY,
     "`on` \\| `off`", "off", "Prefer the server's cipher order over the client's."},
    {"ssl_session_cache", HS, 0, 1, 2, SRV(ssl_session_cache), set_session_cache, ANY,
     "`off` \\| `none` \\| [`builtin`[`:`*N*]] [`shared:`*NAME*`:`*SIZE*] \\| "
     "`redis://`*HOST*`:`*PORT*[`/`*DB*] [`timeout=`*TIME*]",
     "none",
     "TLS session cache: `off` tells clients sessions cannot be reused, `none` keeps no cache "
     "(without that promise), `builtin` is OpenSSL's per-process cache of *N* sessions "
     "(default 20480), `shared` a cache in shared memory used by all workers (zone *NAME*, "
     "*SIZE* 32k..4g, about 3,500 sessions per megabyte, least recently used evicted first; "
     "kept across reloads while *NAME* and *SIZE* stay the same). It serves TLS 1.2 session "
     "IDs and, with `ssl_session_tickets off`, TLS 1.3 stateful resumption. `redis://` keeps "
     "the same sessions in Redis for a fleet of gateways (database *DB*, default 0): the "
     "handshake waits for the lookup without blocking the worker, at most `timeout` "
     "(default 100ms), then goes on as a full handshake; while Redis is down or slow, "
     "handshakes go on without it (counted in `redis_errors`). The cache mode is taken from "
     "the default server of each listen address."},
    {"ssl_session_timeout", HS, 0, 1, 1, SRV(ssl_session_timeout_ms), set_time, TIME1, "*TIME*",
     "5m",
     "Lifetime of a session (cache entry or ticket); also the rotation period of the "
     "automatic ticket keys."},
    {"ssl_session_tickets", HS, 0, 1, 1, SRV(ssl_session_tickets), set_flag, ANY, "`on` \\| `off`",
     "on", "Allow session resumption with TLS session tickets."},
    {"ssl_stapling", HS, 0, 1, 1, SRV(ssl_stapling), set_flag, ANY, "`on` \\| `off`", "off",
     "Staple OCSP responses (RFC 6066 status_request) to clients that ask; the responses "
     "come from `ssl_stapling_file` (OCSP responders are not queried)."},
    {"ssl_stapling_file", HS, GW_DIR_MULTI, 1, 1, SRV(ssl_stapling_files), set_path_list, ANY,
     "*FILE*", NULL,
     "DER OCSP response (e.g. `openssl ocsp -respout FILE`) stapled with `ssl_stapling on`, "
     "read at start and on every reload; repeat for several certificates (each response "
     "goes with the certificate it is for, an error if it is for none). Not stapled while "
     "expired (nextUpdate passed); unsuccessful, revoked or badly signed responses are warned "
     "about. A "
     "server without one inherits http's, and staples from them only the responses for its "
     "own certificates. Without `ssl_stapling on` a server's own files are ignored, with a "
     "warning."},
    {"ssl_session_ticket_key", HS, GW_DIR_MULTI, 1, 1, SRV(ssl_session_ticket_keys), set_ticket_key,
     ANY, "*FILE* \\| `redis://`*HOST*`:`*PORT*[`/`*DB*]", NULL,
     "Key file for session tickets: 48 bytes (16 name, 16 HMAC-SHA256 secret, 16 AES-128 key) "
     "or 80 bytes (16 name, 32 HMAC, 32 AES-256 key), nginx's format. The first key encrypts, "
     "the others only decrypt (rotation by file order). Without one, keys derived from a "
     "secret of the master process rotate every `ssl_session_timeout`, the same in all "
     "workers; the previous key still decrypts for one period. `redis://` shares keys across "
     "a fleet: for each period one gateway writes a random key (SET NX with expiry), the "
     "others read it; the previous key still decrypts. A worker reads the fleet's keys "
     "before it accepts connections (at a start and a reload; clients wait in the listen "
     "queue, a few milliseconds), so a fresh gateway resumes the fleet's tickets from its "
     "first connection on; when Redis does not answer within 1 s it accepts anyway (logged) "
     "and, until the keys are known, issues no ticket (TLS 1.2 gets a session ID instead), "
     "so no client holds a ticket the fleet cannot read. A server without one inherits "
     "http's."},
    /* http, server and location */
    {"ssl_async", HS, 0, 1, 1, SRV(ssl_async), set_flag, ANY, "`on` \\| `off`", "off",
     "Run TLS operations in OpenSSL async jobs (`SSL_MODE_ASYNC`), so that a provider or "
     "engine that pauses a job (an accelerator) never blocks the worker. Taken from the "
     "default server of each listen address (it is fixed before SNI is known). The "
     "handshakes of the server's upstream connections (`proxy_pass https://`, `proxy_ssl "
     "on`) run in async jobs too (key share, key exchange, a `proxy_ssl_certificate`'s "
     "signature); their reads and writes do not."},
    {"ssl_async_notify", HS, 0, 1, 1, SRV(ssl_async_notify), set_async_notify, ANY,
     "`callback` \\| `fd`", "callback",
     "How a paused job's completion reaches the worker: the async callback, or the job's "
     "wait fds in epoll (for providers that only offer fds)."},
    {"root", HSL, 0, 1, 1, LOC(root), set_root, ANY, "*PATH*", "html",
     "Directory files are served from (the request path is appended to it)."},
    {"index", HSL, GW_DIR_MULTI, 1, -1, LOC(index), set_strlist, ANY, "*FILE*...", "index.html",
     "Files tried, in order, for a request ending with `/`."},
    {"upstream", H, GW_DIR_BLOCK | GW_DIR_MULTI, 1, 1, NOFIELD, set_upstream, ANY,
     "*NAME* `{ ... }`", NULL,
     "A group of backends for `proxy_pass http://NAME`: `server ADDR:PORT [weight=N] "
     "[max_fails=N] [fail_timeout=TIME] [backup];` (defaults 1, 1, 10s; smooth weighted round "
     "robin; a server with max_fails failures within fail_timeout is skipped for fail_timeout; "
     "backup servers only when every primary one is down), `keepalive N;` (idle connections "
     "kept per worker, default none), `keepalive_requests N;` (1000), `keepalive_timeout TIME;` "
     "(60s)."},
    {"proxy_connect_timeout", HSL, 0, 1, 1, LOC(proxy_connect_timeout_ms), set_time, TIME1,
     "*TIME*", "60s", "Time to establish a connection with an upstream server (then 504)."},
    {"proxy_read_timeout", HSL, 0, 1, 1, LOC(proxy_read_timeout_ms), set_time, TIME1, "*TIME*",
     "60s",
     "Longest wait between two reads from the upstream server (then 504, or the "
     "connection is cut when the response has begun)."},
    {"proxy_send_timeout", HSL, 0, 1, 1, LOC(proxy_send_timeout_ms), set_time, TIME1, "*TIME*",
     "60s", "Longest wait between two writes to the upstream server."},
    {"proxy_hide_header", HSL, GW_DIR_MULTI, 1, 1, LOC(proxy_hide_headers), set_field_name, ANY,
     "*FIELD*", NULL,
     "Do not pass the upstream response's header field *FIELD* to the client. Hidden by "
     "default, as in nginx: `Date`, `Server`, `X-Pad`, `X-Accel-Expires`, `X-Accel-Redirect`, "
     "`X-Accel-Limit-Rate`, `X-Accel-Buffering`, `X-Accel-Charset` (the gateway sends its own "
     "`Server` and `Date`). `proxy_hide_header` and `proxy_pass_header` are inherited together "
     "by a level that has neither."},
    {"proxy_pass_header", HSL, GW_DIR_MULTI, 1, 1, LOC(proxy_pass_headers), set_field_name, ANY,
     "*FIELD*", NULL,
     "Pass the upstream response's header field *FIELD*, one of those hidden by default (e.g. "
     "`proxy_pass_header Server;`: the upstream's `Server` then replaces the gateway's own, "
     "which is sent only when the upstream sends none)."},
    {"proxy_set_header", HSL, GW_DIR_MULTI, 2, 2, LOC(proxy_headers), set_proxy_header, ANY,
     "*NAME* *VALUE*", NULL,
     "Set a request header field sent upstream; an empty *VALUE* removes it (`Connection \"\"` "
     "is accepted as in nginx configs: hop-by-hop fields are never passed). *VALUE* may use "
     "any variable (`log_format`'s list), `$proxy_host` and `$proxy_add_x_forwarded_for`. "
     "Without any at a level, the enclosing level's apply; without any at all: `Host "
     "$proxy_host`, `X-Real-IP $remote_addr`, `X-Forwarded-For $proxy_add_x_forwarded_for`, "
     "`X-Forwarded-Proto $scheme`. `Host $proxy_host` is sent in any case unless `Host` is "
     "one of the fields set, as in nginx."},
    /* location */
    {"proxy_pass", L, 0, 1, 1, LOCATION(proxy_pass), set_proxy_pass, ANY,
     "`http(s)://`*ADDR*:*PORT*[*URI*] \\| `http(s)://`*NAME*[*URI*]", NULL,
     "Pass requests to an upstream server over HTTP/1.1 (see docs/proxy.md), in TLS with "
     "`https://` (`proxy_ssl_*`; port 443 by default). With a *URI*, the part of the request "
     "path matching the location is replaced by it (nginx)."},
    {"return", L, 0, 1, 2, LOCATION(return_code), set_return, ANY,
     "*CODE* [*TEXT* \\| *URL*] \\| *URL*", NULL,
     "Answer with *CODE* (200-599) and *TEXT* as body, redirect to *URL* (301, 302, 303, 307, "
     "308; a lone `http://` or `https://` *URL* means 302), or close the connection (444)."},
    {"stub_status", L, 0, 0, 0, LOCATION(stub_status), set_status_page, ANY, "", NULL,
     "Serve the status page (like nginx's stub_status) at this location."},
    {"status", L, 0, 0, 0, LOCATION(status_json), set_status_page, ANY, "", NULL,
     "Serve the JSON status at this location (`application/json`): the `stub_status` "
     "counters, handshakes by protocol, key type and resumption, histograms (µs) of accept "
     "to handshake done and of async job pauses, the `tlsgate` provider's per-algorithm "
     "metrics (batches, fill, queue wait, batch time), totals and per worker."},
    {"metrics", L, 0, 0, 0, LOCATION(metrics), set_status_page, ANY, "", NULL,
     "Serve the same figures in the Prometheus text format (`text/plain; version=0.0.4`), "
     "names prefixed `tlsgate_`: `tlsgate_handshakes_total`, `tlsgate_handshake_seconds`, "
     "`tlsgate_batch_size`, ... Counters survive reloads and worker exits."},
#include "directives_deploy.inc" /* issue #23: conf/deploy.c */
};

const size_t gw_conf_n_directives = sizeof(gw_conf_directives) / sizeof(gw_conf_directives[0]);

_Static_assert(sizeof(gw_conf_directives) / sizeof(gw_conf_directives[0]) <= GW_CONF_MAX_DIRECTIVES,
               "raise GW_CONF_MAX_DIRECTIVES");

int gw_conf_find_directive(const char *name)
{
    for (size_t i = 0; i < gw_conf_n_directives; i++)
        if (strcmp(gw_conf_directives[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* ---- documentation ---- */

static const char *ctx_names(unsigned ctx, char *buf, size_t size)
{
    static const char *const names[] = {"main", "events", "http", "server", "location"};
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < 5; i++) {
        if (ctx & (1u << i)) {
            int r = snprintf(buf + o, size - o, "%s%s", o ? ", " : "", names[i]);
            if (r < 0 || (size_t)r >= size - o)
                break;
            o += (size_t)r;
        }
    }
    return buf;
}

const gw_conf_section_t gw_conf_sections[] = {
    {GW_CTX_MAIN, "Main context", "Directives at the top level of the file."},
    {GW_CTX_EVENTS, "events", "Inside `events { ... }`."},
    {GW_CTX_HTTP, "http",
     "Inside `http { ... }`. Settings given here are the defaults of every server."},
    {GW_CTX_SERVER, "server", "Inside `server { ... }` (in `http`)."},
    {GW_CTX_LOCATION, "location", "Inside `location` */PATH* `{ ... }` (in `server`)."},
};
const size_t gw_conf_n_sections = sizeof(gw_conf_sections) / sizeof(gw_conf_sections[0]);

void gw_conf_each_section(void *out, void (*section)(void *out, const gw_conf_section_t *sec),
                          void (*row)(void *out, const gw_conf_directive_t *d))
{
    for (size_t s = 0; s < gw_conf_n_sections; s++) {
        section(out, &gw_conf_sections[s]);
        for (size_t i = 0; i < gw_conf_n_directives; i++)
            if (gw_conf_directives[i].ctx & gw_conf_sections[s].ctx)
                row(out, &gw_conf_directives[i]);
    }
}

int gw_conf_repeatable(const gw_conf_directive_t *d)
{
    return (d->flags & GW_DIR_MULTI) && !(d->flags & GW_DIR_BLOCK);
}

static void md_section(void *out, const gw_conf_section_t *sec)
{
    fprintf(out, "\n## %s\n\n%s\n\n", sec->title, sec->intro);
    fputs("| directive | arguments | default | contexts | description |\n"
          "|---|---|---|---|---|\n",
          out);
}

static void md_row(void *out, const gw_conf_directive_t *d)
{
    FILE *f = out;
    char ctx[64];
    fprintf(f, "| `%s` | %s | ", d->name, d->args_doc[0] ? d->args_doc : "(none)");
    if (d->default_text)
        fprintf(f, "`%s`", d->default_text);
    else
        fputs("-", f);
    fprintf(f, " | %s | %s%s |\n", ctx_names(d->ctx, ctx, sizeof(ctx)), d->doc,
            gw_conf_repeatable(d) ? " May be repeated." : "");
}

int gw_conf_write_docs(void *fp)
{
    FILE *f = fp;
    fputs("# tlsgate configuration\n"
          "\n"
          "<!-- Generated from the directive table in gw/conf/directives.c by "
          "gw_conf_write_docs();\n"
          "     do not edit: rebuild with `cmake --build BUILD --target conf_docs_md`. -->\n"
          "\n"
          "tlsgate reads an nginx-style configuration file. Only the directives below are "
          "known; anything else is an error, and all errors of a file are reported at once as "
          "`FILE:LINE: DIRECTIVE: REASON`. Directives given with `-g` on the command line are "
          "read after the file, in the main context, as the file `<command line>`.\n"
          "\n"
          "## Syntax\n"
          "\n"
          "A simple directive is a name and arguments separated by whitespace and ended by "
          "`;` (`worker_processes 4;`); a block directive is followed by `{ ... }` holding "
          "further directives (`http { server { ... } }`). `#` starts a comment that runs to "
          "the end of the line. An argument containing whitespace, `;`, `{`, `}` or `#` must "
          "be quoted with `\"` or `'`; inside and outside quotes `\\\"`, `\\'` and `\\\\` stand "
          "for the character itself and `\\n`, `\\t`, `\\r` for newline, tab and carriage "
          "return. Blocks nest at most 16 deep and a token is at most 4096 bytes.\n"
          "\n"
          "*SIZE* is a number of bytes, optionally followed by `k`, `m` or `g` (KiB, MiB, GiB; "
          "either case): `512`, `16k`, `1m`. *TIME* is a number of seconds, or numbers "
          "with units in decreasing order: `ms`, `s`, `m` (minutes), `h`, `d` - for example "
          "`500ms`, `75s`, `1m30s`, `1h`, `1d`. Relative paths (*FILE*, *PATH*) are resolved "
          "against the prefix directory (`-p`).\n"
          "\n"
          "Inheritance: a directive allowed in several blocks applies to the block it is in and "
          "to the blocks inside it that do not set it themselves (http, then server, then "
          "location). `ssl_certificate` pairs are inherited as a whole, only by servers that "
          "define none; `ssl_conf_command`s of http come before a server's own. A directive "
          "that may appear only once per block is an error when repeated.\n",
          f);
    gw_conf_each_section(f, md_section, md_row);
    fflush(f);
    return ferror(f) ? -1 : 0;
}
