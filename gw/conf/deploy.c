/*
 * Issue #23's directives (conf/deploy.h): add_header, error_page, allow/deny,
 * set_real_ip_from, real_ip_header, real_ip_recursive, log_format,
 * underscores_in_headers, with nginx's syntax and inheritance. libc only.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "conf.h"
#include "deploy_set.h"
#include "lexer.h"

#define FIELD(base, d, type) ((type *)((char *)(base) + (d)->offset))

static const char tchar[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                            "!#$%&'*+-.^_`|~";

int gw_cidr_parse(const char *text, gw_cidr_t *out)
{
    memset(out, 0, sizeof(*out));
    if (strcmp(text, "all") == 0)
        return 0;
    char buf[64];
    size_t len = strlen(text);
    if (len >= sizeof(buf))
        return -1;
    memcpy(buf, text, len + 1);
    char *slash = strchr(buf, '/');
    int bits = -1;
    if (slash) {
        *slash = '\0';
        const char *b = slash + 1;
        if (!*b || strlen(b) > 3 || strspn(b, "0123456789") != strlen(b))
            return -1;
        bits = atoi(b);
    }
    if (inet_pton(AF_INET, buf, out->addr) == 1) {
        out->family = AF_INET;
        if (bits < 0)
            bits = 32;
        if (bits > 32)
            return -1;
    } else if (inet_pton(AF_INET6, buf, out->addr) == 1) {
        out->family = AF_INET6;
        if (bits < 0)
            bits = 128;
        if (bits > 128)
            return -1;
    } else {
        return -1;
    }
    out->bits = bits;
    int nbytes = out->family == AF_INET ? 4 : 16;
    for (int i = 0; i < nbytes; i++) {
        int keep = bits - 8 * i; /* bits of this byte inside the prefix */
        if (keep <= 0)
            out->addr[i] = 0;
        else if (keep < 8)
            out->addr[i] &= (unsigned char)(0xff00u >> keep);
    }
    return 0;
}

int gw_cidr_match(const gw_cidr_t *c, int family, const unsigned char *addr)
{
    if (c->family == 0)
        return 1;
    unsigned char v4mapped[16];
    if (c->family == AF_INET && family == AF_INET6) {
        /* ::ffff:a.b.c.d is the IPv4 client a.b.c.d (nginx matches it too) */
        static const unsigned char pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(addr, pfx, 12) != 0)
            return 0;
        memcpy(v4mapped, addr + 12, 4);
        addr = v4mapped;
        family = AF_INET;
    }
    if (c->family != family)
        return 0;
    int bits = c->bits;
    for (int i = 0; bits > 0; i++, bits -= 8) {
        unsigned char mask = bits >= 8 ? 0xff : (unsigned char)(0xff00u >> bits);
        if ((addr[i] & mask) != c->addr[i])
            return 0;
    }
    return 1;
}

static int header_name_ok(const char *s)
{
    return s[0] && strspn(s, tchar) == strlen(s);
}

static int value_ok(const char *v)
{
    for (; *v; v++)
        if (((unsigned char)*v < ' ' && *v != '\t') || *v == 0x7f)
            return 0;
    return 1;
}

GW_DEPLOY_SETTER(gw_conf_set_add_header)
{
    gw_loc_settings_t *l = base;
    if (!header_name_ok(n->args[1]))
        return gw_conf_bad_value(p, n, 1, "not a header field name");
    if (!value_ok(n->args[2]))
        return gw_conf_bad_value(p, n, 2, "control character in a header value");
    int always = 0;
    if (n->n_args == 4) {
        if (strcmp(n->args[3], "always") != 0)
            return gw_conf_bad_value(p, n, 3, "must be \"always\"");
        always = 1;
    }
    static const char *const own[] = {"content-length", "transfer-encoding", "connection", "date",
                                      "server"};
    for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
        if (strcasecmp(n->args[1], own[i]) == 0)
            return gw_conf_bad_value(p, n, 1, "this field is set by tlsgate itself");
    gw_add_header_t *h = gw_conf_xpush(&l->dep.add_headers, &l->dep.n_add_headers, sizeof(*h));
    h->name = gw_conf_xstrdup(n->args[1]);
    h->value = gw_conf_xstrdup(n->args[2]);
    h->always = always;
    l->dep.add_headers_set = 1;
    return 0;
}

static int parse_code(const char *s, int lo, int hi)
{
    if (!*s || strlen(s) > 3 || strspn(s, "0123456789") != strlen(s))
        return -1;
    int v = atoi(s);
    return v >= lo && v <= hi ? v : -1;
}

GW_DEPLOY_SETTER(gw_conf_set_error_page)
{
    gw_loc_settings_t *l = base;
    size_t last = n->n_args - 1;
    const char *uri = n->args[last];
    if (!(uri[0] == '/' || strncmp(uri, "http://", 7) == 0 || strncmp(uri, "https://", 8) == 0))
        return gw_conf_bad_value(p, n, last, "a local URI (/...) or an http(s):// URL");
    if (uri[0] == '/' && strchr(uri, '$'))
        return gw_conf_bad_value(p, n, last, "variables are not supported in error_page");
    if (!value_ok(uri))
        return gw_conf_bad_value(p, n, last, "control character");
    int new_code = 0;
    size_t end = last;
    if (n->args[last - 1][0] == '=') {
        end = last - 1;
        const char *c = n->args[last - 1] + 1;
        if (!*c)
            return gw_conf_bad_value(p, n, last - 1,
                                     "\"=\" without a code (the proxied "
                                     "response's code) is not supported");
        new_code = parse_code(c, 200, 599);
        if (new_code < 0)
            return gw_conf_bad_value(p, n, last - 1, "must be =CODE with CODE 200..599");
    }
    if (end < 2)
        return gw_conf_bad_value(p, n, last, "no status code given");
    for (size_t i = 1; i < end; i++) {
        int code = parse_code(n->args[i], 300, 599);
        if (code < 0)
            return gw_conf_bad_value(p, n, i, "must be between 300 and 599");
        if (uri[0] != '/' && new_code && !(new_code >= 301 && new_code <= 308))
            return gw_conf_bad_value(p, n, end, "a redirect needs =301, 302, 303, 307 or 308");
        gw_error_page_t *e = gw_conf_xpush(&l->dep.error_pages, &l->dep.n_error_pages, sizeof(*e));
        e->code = code;
        e->new_code = new_code;
        e->uri = gw_conf_xstrdup(uri);
    }
    l->dep.error_pages_set = 1;
    return 0;
}

/* n->args[1] as an address, ADDRESS/BITS or "all" (allow, deny, set_real_ip_from) into *c:
 * 0, or -1 after reporting it. */
static int get_cidr(gw_conf_parser_t *p, const gw_conf_node_t *n, gw_cidr_t *c)
{
    if (gw_cidr_parse(n->args[1], c) != 0)
        return gw_conf_bad_value(p, n, 1, "must be an address, ADDRESS/BITS or \"all\"");
    return 0;
}

GW_DEPLOY_SETTER(gw_conf_set_access_rule)
{
    gw_loc_settings_t *l = base;
    gw_access_rule_t r = {.deny = strcmp(d->name, "deny") == 0};
    if (get_cidr(p, n, &r.cidr) != 0)
        return -1;
    *(gw_access_rule_t *)gw_conf_xpush(&l->dep.access, &l->dep.n_access, sizeof(r)) = r;
    l->dep.access_set = 1;
    return 0;
}

GW_DEPLOY_SETTER(gw_conf_set_real_ip_from)
{
    gw_srv_settings_t *s = base;
    gw_cidr_t c;
    if (get_cidr(p, n, &c) != 0)
        return -1;
    *(gw_cidr_t *)gw_conf_xpush(&s->dep.real_ip_from, &s->dep.n_real_ip_from, sizeof(c)) = c;
    return 0;
}

GW_DEPLOY_SETTER(gw_conf_set_real_ip_header)
{
    gw_srv_settings_t *s = base;
    const char *a = n->args[1];
    if (!header_name_ok(a))
        return gw_conf_bad_value(p, n, 1, "not a header field name (or \"proxy_protocol\")");
    char *v = gw_conf_xstrdup(a);
    for (char *q = v; *q; q++)
        if (*q >= 'A' && *q <= 'Z')
            *q = (char)(*q + 32);
    free(s->dep.real_ip_header);
    s->dep.real_ip_header = v;
    return 0;
}

GW_DEPLOY_SETTER(gw_conf_set_log_format)
{
    gw_srv_settings_t *s = base;
    const char *name = n->args[1];
    if (!name[0] || strspn(name, tchar) != strlen(name))
        return gw_conf_bad_value(p, n, 1, "not a format name");
    if (strcmp(name, "combined") == 0)
        return gw_conf_bad_value(p, n, 1, "\"combined\" is predefined");
    for (size_t i = 0; i < s->dep.n_log_formats; i++)
        if (strcmp(s->dep.log_formats[i].name, name) == 0)
            return gw_conf_bad_value(p, n, 1, "duplicate log_format name");
    size_t first = 2;
    int escape = GW_LOG_ESCAPE_DEFAULT;
    if (strncmp(n->args[2], "escape=", 7) == 0) {
        const char *e = n->args[2] + 7;
        if (strcmp(e, "json") == 0)
            escape = GW_LOG_ESCAPE_JSON;
        else if (strcmp(e, "default") != 0)
            return gw_conf_bad_value(p, n, 2, "must be escape=default or escape=json");
        first = 3;
    }
    if (first >= n->n_args) {
        gw_conf_error(p, n->line, n->args[0], "invalid number of arguments");
        return -1;
    }
    size_t len = 0;
    for (size_t i = first; i < n->n_args; i++)
        len += strlen(n->args[i]);
    char *f = gw_conf_xcalloc(1, len + 1);
    for (size_t i = first; i < n->n_args; i++) {
        if (!value_ok(n->args[i]))
            return free(f), gw_conf_bad_value(p, n, i, "control character in a format");
        strcat(f, n->args[i]);
    }
    gw_log_format_t *lf = gw_conf_xpush(&s->dep.log_formats, &s->dep.n_log_formats, sizeof(*lf));
    lf->name = gw_conf_xstrdup(name);
    lf->format = f;
    lf->escape = escape;
    lf->line = n->line;
    return 0;
}

GW_DEPLOY_SETTER(gw_conf_set_include)
{
    /* never reached: conf/include.c replaced every include before the walk */
    gw_conf_error(p, n->line, n->args[0], "internal error: include not expanded");
    return -1;
}

GW_DEPLOY_SETTER(gw_conf_set_verify_client)
{
    static const char *const names[] = {"off", "on", "optional", "optional_no_ca"};
    for (int i = 0; i < 4; i++)
        if (strcmp(n->args[1], names[i]) == 0) {
            *FIELD(base, d, int) = i;
            ((gw_srv_settings_t *)base)->dep.ssl_verify_line = n->line;
            return 0;
        }
    return gw_conf_bad_value(p, n, 1, "must be on, off, optional or optional_no_ca");
}

/* The int settings of a server (SRV_INTS) and of a location (LOC_INTS) with their
 * defaults: GW_UNSET_INT until given; a block that does not give one inherits the
 * enclosing block's, else the default. The paths (SRV_STRS, LOC_STRS) are inherited the
 * same way, NULL when none. One list each for init, merge and free. */
#define SRV_INTS(X) X(underscores_in_headers, 0) X(real_ip_recursive, 0) X(ssl_verify_depth, 1)
#define LOC_INTS(X)                                                                                \
    X(proxy_ssl_verify, 0)                                                                         \
    X(proxy_ssl_verify_depth, 1)                                                                   \
    X(proxy_ssl_server_name, 0)                                                                    \
    X(proxy_ssl_session_reuse, 1)                                                                  \
    X(proxy_request_buffering, 1)
#define SRV_STRS(X) X(ssl_client_certificate) X(ssl_trusted_certificate) X(ssl_crl)
#define LOC_STRS(X) X(proxy_ssl_trusted_certificate) X(proxy_ssl_name) X(proxy_ssl_ciphers)

#define UNSET_INT(f, dflt) s->f = GW_UNSET_INT;
#define INHERIT_INT(f, dflt)                                                                       \
    if (s->f == GW_UNSET_INT)                                                                      \
        s->f = h->f == GW_UNSET_INT ? (dflt) : h->f;
#define INHERIT_STR(f)                                                                             \
    if (!s->f)                                                                                     \
        s->f = gw_conf_xstrdup(h->f);
#define FREE_STR(f) free(s->f);

void gw_conf_deploy_srv_init(gw_deploy_srv_t *s)
{
    memset(s, 0, sizeof(*s));
    SRV_INTS(UNSET_INT)
    s->ssl_verify_client = GW_UNSET_INT;
}

void gw_conf_deploy_loc_init(gw_deploy_loc_t *s)
{
    memset(s, 0, sizeof(*s));
    LOC_INTS(UNSET_INT)
    s->client_body_buffer_size = GW_UNSET_SIZE;
}

void gw_conf_deploy_merge_srv(gw_deploy_srv_t *s, const gw_deploy_srv_t *h)
{
    if (s->n_real_ip_from == 0 && h->n_real_ip_from) {
        s->real_ip_from =
            gw_conf_xmemdup(h->real_ip_from, h->n_real_ip_from, sizeof(*s->real_ip_from));
        s->n_real_ip_from = h->n_real_ip_from;
    }
    if (!s->real_ip_header)
        s->real_ip_header = gw_conf_xstrdup(h->real_ip_header ? h->real_ip_header : "x-real-ip");
    SRV_INTS(INHERIT_INT)
    if (s->ssl_verify_client == GW_UNSET_INT) {
        s->ssl_verify_client =
            h->ssl_verify_client == GW_UNSET_INT ? GW_VERIFY_OFF : h->ssl_verify_client;
        s->ssl_verify_line = h->ssl_verify_line;
    }
    SRV_STRS(INHERIT_STR)
    if (!s->access_log_format && h->access_log_format) {
        s->access_log_format = gw_conf_xstrdup(h->access_log_format);
        s->access_log_format_line = h->access_log_format_line;
        s->access_log_format_file = h->access_log_format_file;
    }
}

void gw_conf_deploy_merge_loc(gw_deploy_loc_t *s, const gw_deploy_loc_t *h)
{
    if (!s->add_headers_set && h->n_add_headers) {
        s->add_headers = gw_conf_xmemdup(h->add_headers, h->n_add_headers, sizeof(*s->add_headers));
        for (size_t i = 0; i < h->n_add_headers; i++) {
            s->add_headers[i].name = gw_conf_xstrdup(h->add_headers[i].name);
            s->add_headers[i].value = gw_conf_xstrdup(h->add_headers[i].value);
        }
        s->n_add_headers = h->n_add_headers;
    }
    if (!s->error_pages_set && h->n_error_pages) {
        s->error_pages = gw_conf_xmemdup(h->error_pages, h->n_error_pages, sizeof(*s->error_pages));
        for (size_t i = 0; i < h->n_error_pages; i++)
            s->error_pages[i].uri = gw_conf_xstrdup(h->error_pages[i].uri);
        s->n_error_pages = h->n_error_pages;
    }
    LOC_INTS(INHERIT_INT)
    if (s->client_body_buffer_size == GW_UNSET_SIZE)
        s->client_body_buffer_size =
            h->client_body_buffer_size == GW_UNSET_SIZE ? 16384 : h->client_body_buffer_size;
    if (!s->proxy_ssl_protocols)
        s->proxy_ssl_protocols = h->proxy_ssl_protocols;
    LOC_STRS(INHERIT_STR)
    if (!s->proxy_ssl_certificate && !s->proxy_ssl_certificate_key) {
        s->proxy_ssl_certificate = gw_conf_xstrdup(h->proxy_ssl_certificate);
        s->proxy_ssl_certificate_key = gw_conf_xstrdup(h->proxy_ssl_certificate_key);
    }
    if (!s->access_set && h->n_access) {
        s->access = gw_conf_xmemdup(h->access, h->n_access, sizeof(*s->access));
        s->n_access = h->n_access;
    }
}

void gw_conf_deploy_srv_free(gw_deploy_srv_t *s)
{
    free(s->real_ip_from);
    free(s->real_ip_header);
    free(s->access_log_format);
    SRV_STRS(FREE_STR)
    for (size_t i = 0; i < s->n_log_formats; i++) {
        free(s->log_formats[i].name);
        free(s->log_formats[i].format);
    }
    free(s->log_formats);
    memset(s, 0, sizeof(*s));
}

void gw_conf_deploy_loc_free(gw_deploy_loc_t *s)
{
    for (size_t i = 0; i < s->n_add_headers; i++) {
        free(s->add_headers[i].name);
        free(s->add_headers[i].value);
    }
    free(s->add_headers);
    for (size_t i = 0; i < s->n_error_pages; i++)
        free(s->error_pages[i].uri);
    free(s->error_pages);
    free(s->access);
    LOC_STRS(FREE_STR)
    free(s->proxy_ssl_certificate);
    free(s->proxy_ssl_certificate_key);
    /* proxy_ssl_ctx belongs to the cycle (tls/upstream_ctx.c frees it) */
    memset(s, 0, sizeof(*s));
}

#undef UNSET_INT
#undef INHERIT_INT
#undef INHERIT_STR
#undef FREE_STR

static void check_format(gw_conf_parser_t *p, const gw_srv_settings_t *s,
                         const gw_deploy_srv_t *http)
{
    const char *file = s->dep.access_log_format_file ? s->dep.access_log_format_file : p->file;
    const char *f = s->dep.access_log_format;
    if (!f || strcmp(f, "combined") == 0)
        return;
    for (size_t i = 0; i < http->n_log_formats; i++)
        if (strcmp(http->log_formats[i].name, f) == 0)
            return;
    gw_errlist_add(p->errs, "%s:%d: access_log: unknown log format \"%s\"", file,
                   s->dep.access_log_format_line, f);
}

void gw_conf_deploy_validate(gw_conf_parser_t *p)
{
    const gw_conf_t *c = p->conf;
    const gw_deploy_srv_t *http = &c->http.srv.dep;
    for (size_t i = 0; i < c->http.n_servers; i++) {
        const gw_server_t *s = &c->http.servers[i];
        check_format(p, &s->srv, http);
        for (size_t j = 0; j < s->n_locations; j++) {
            const gw_location_t *l = &s->locations[j];
            const gw_deploy_loc_t *dl = &l->loc.dep;
            if (!dl->proxy_https)
                continue;
            /* nginx: "no proxy_ssl_trusted_certificate for proxy_ssl_verify" */
            if (dl->proxy_ssl_verify == 1 && !dl->proxy_ssl_trusted_certificate)
                gw_errlist_add(p->errs,
                               "%s:%d: proxy_ssl_verify: no "
                               "proxy_ssl_trusted_certificate for proxy_ssl_verify",
                               l->file ? l->file : p->file, l->line);
            if (!dl->proxy_ssl_certificate != !dl->proxy_ssl_certificate_key)
                gw_errlist_add(p->errs,
                               "%s:%d: proxy_ssl_certificate: a certificate needs its "
                               "key (proxy_ssl_certificate_key) and a key its certificate",
                               l->file ? l->file : p->file, l->line);
        }
        int v = s->srv.dep.ssl_verify_client;
        /* nginx: "no ssl_client_certificate for ssl_verify_client" */
        if ((v == GW_VERIFY_ON || v == GW_VERIFY_OPTIONAL) && !s->srv.dep.ssl_client_certificate &&
            !s->srv.dep.ssl_trusted_certificate)
            gw_errlist_add(p->errs,
                           "%s:%d: ssl_verify_client: no ssl_client_certificate or "
                           "ssl_trusted_certificate for ssl_verify_client",
                           s->file ? s->file : p->file,
                           s->srv.dep.ssl_verify_line ? s->srv.dep.ssl_verify_line : s->line);
    }
    if (c->http.n_servers == 0)
        check_format(p, &c->http.srv, http);
    for (size_t i = 0; i < c->stream.n_servers; i++) {
        const gw_server_t *s = &c->stream.servers[i].server;
        const gw_deploy_loc_t *dl = &s->loc.dep;
        if (dl->proxy_https && dl->proxy_ssl_verify == 1 && !dl->proxy_ssl_trusted_certificate)
            gw_errlist_add(p->errs,
                           "%s:%d: proxy_ssl_verify: no proxy_ssl_trusted_certificate "
                           "for proxy_ssl_verify",
                           s->file ? s->file : p->file, s->line);
    }
}

int gw_conf_stream_deploy(gw_conf_parser_t *p, gw_stream_server_t *ss, const gw_conf_node_t *g,
                          unsigned char *seen_pp, gw_conf_scope_t *in)
{
    const char *key = g->args[0];
    if (strncmp(key, "proxy_ssl_", 10) == 0) {
        gw_conf_node_t one = {.n_children = 1, .children = (gw_conf_node_t *)g};
        gw_conf_walk(p, in, &one);
        return 1;
    }
    if (strcmp(key, "proxy_ssl") == 0) {
        if (g->has_block || g->n_args != 2)
            gw_conf_error(p, g->line, key, "invalid number of arguments");
        else
            gw_conf_get_flag(p, g, 1, &ss->server.loc.dep.proxy_https);
        return 1;
    }
    if (strcmp(key, "proxy_protocol") != 0)
        return 0;
    if (g->has_block || g->n_args != 2) {
        gw_conf_error(p, g->line, key, "invalid number of arguments");
        return 1;
    }
    if ((*seen_pp)++) {
        gw_conf_error(p, g->line, key, "directive is duplicate");
        return 1;
    }
    gw_conf_get_flag(p, g, 1, &ss->server.srv.dep.stream_proxy_protocol);
    return 1;
}
