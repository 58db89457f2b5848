#include "http/vars.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "core/clock.h"
#include "http/conn.h"
#include "net/listen.h"

void gw_vbuf_add(gw_vbuf_t *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *q = realloc(b->s, cap);
        if (!q)
            abort(); /* as gw_resp_append: a worker cannot go on without memory */
        b->s = q;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void add_str(gw_vbuf_t *b, const char *s)
{
    gw_vbuf_add(b, s, strlen(s));
}

static void add_fmt(gw_vbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_fmt(gw_vbuf_t *b, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n > 0)
        gw_vbuf_add(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

void gw_vbuf_free(gw_vbuf_t *b)
{
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

static uint64_t next_serial;

void gw_vars_accepted(gw_conn_t *c, const struct sockaddr *peer, socklen_t plen)
{
    gw_conn_vars_t *v = &c->v;
    /* $connection: unique in the server, as nginx's (worker index in the high bits) */
    v->serial = ((uint64_t)(c->env ? c->env->index : 0) << 48) | ++next_serial;
    if (peer->sa_family == AF_INET && plen >= (socklen_t)sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *s = (const struct sockaddr_in *)peer;
        v->tcp_family = AF_INET;
        memcpy(v->tcp_addr, &s->sin_addr, 4);
        v->tcp_port = ntohs(s->sin_port);
    } else if (peer->sa_family == AF_INET6 && plen >= (socklen_t)sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)peer;
        v->tcp_family = AF_INET6;
        memcpy(v->tcp_addr, &s->sin6_addr, 16);
        v->tcp_port = ntohs(s->sin6_port);
    }
    v->family = v->tcp_family;
    memcpy(v->addr, v->tcp_addr, 16);
    v->port = v->tcp_port;
}

void gw_vars_release(gw_req_vars_t *rv)
{
    free(rv->head);
    rv->head = NULL;
}

/* Does the server read variables after the head has left the input buffer? */
static int needs_head_copy(const gw_conn_t *c)
{
    const gw_server_t *s = c->vs->conf;
    const char *f = s->srv.dep.access_log_format;
    if (s->srv.access_log && f && strcmp(f, "combined") != 0)
        return 1;
    if (s->loc.dep.n_add_headers)
        return 1;
    for (size_t i = 0; i < s->n_locations; i++)
        if (s->locations[i].loc.dep.n_add_headers)
            return 1;
    return 0;
}

/* Move every pointer of the parsed request that points into the input buffer to the
 * same bytes of the copy. */
#define REBASE(ptr)                                                                                \
    do {                                                                                           \
        if ((ptr) && (const char *)(ptr) >= base && (const char *)(ptr) < base + len)              \
            (ptr) = copy + ((const char *)(ptr)-base);                                             \
    } while (0)

static void copy_head(gw_conn_t *c)
{
    gw_http_request_t *r = &c->rq->req;
    const char *base = c->s.in;
    size_t len = c->head_len;
    char *copy = malloc(len ? len : 1);
    if (!copy)
        return; /* variables of the head read after it left the buffer are then empty */
    memcpy(copy, base, len);
    REBASE(r->method_str);
    REBASE(r->target);
    REBASE(r->path);
    REBASE(r->query);
    REBASE(r->host);
    REBASE(r->range);
    REBASE(r->if_none_match);
    REBASE(r->if_modified_since);
    REBASE(r->user_agent);
    REBASE(r->referer);
    for (size_t i = 0; i < r->n_headers; i++) {
        REBASE(r->headers[i].name);
        REBASE(r->headers[i].value);
    }
    c->rq->v.head = copy;
}

void gw_vars_request(gw_conn_t *c)
{
    gw_req_vars_t *v = &c->rq->v;
    gw_vars_release(v); /* a pipelined request's predecessor's copy */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    v->start_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
    v->loc = NULL;
    v->head_bytes = 0;
    v->upstream_addr[0] = '\0';
    v->upstream_status = 0;
    v->upstream_start_us = 0;
    v->in_error_page = 0;
    gw_http_request_t *r = &c->rq->req;
    if (!c->vs->conf->srv.dep.underscores_in_headers) {
        /* nginx ignores such fields (underscores_in_headers off): a backend that maps
         * '_' to '-' would otherwise read "Content_Length" as a length */
        size_t o = 0;
        for (size_t i = 0; i < r->n_headers; i++)
            if (!memchr(r->headers[i].name, '_', r->headers[i].name_len))
                r->headers[o++] = r->headers[i];
        r->n_headers = o;
    }
    gw_access_real_ip(c);
    if (needs_head_copy(c))
        copy_head(c);
}

/* ---- evaluation ---- */

static const gw_http_header_t *header_var(const gw_http_request_t *r, const char *s, size_t n)
{
    /* $http_NAME: the first field NAME, '_' matching '-', case-insensitive */
    for (size_t i = 0; i < r->n_headers; i++) {
        const gw_http_header_t *h = &r->headers[i];
        if (h->name_len != n)
            continue;
        size_t k = 0;
        for (; k < n; k++) {
            char a = h->name[k], e = s[k];
            if (a >= 'A' && a <= 'Z')
                a = (char)(a + 32);
            if (a == '-')
                a = '_';
            if (a != e)
                break;
        }
        if (k == n)
            return h;
    }
    return NULL;
}

static void add_host(gw_vbuf_t *b, const gw_conn_t *c)
{
    const gw_http_request_t *r = c->rq ? &c->rq->req : NULL;
    if (r && r->host && r->host_len) {
        size_t n = r->host_len;
        const char *h = r->host;
        const char *colon = h[0] == '[' ? memchr(h, ']', n) : memchr(h, ':', n);
        if (colon && h[0] == '[')
            n = (size_t)(colon - h) + 1;
        else if (colon)
            n = (size_t)(colon - h);
        for (size_t i = 0; i < n; i++) {
            char ch = h[i];
            if (ch >= 'A' && ch <= 'Z')
                ch = (char)(ch + 32);
            gw_vbuf_add(b, &ch, 1);
        }
    } else if (c->vs->conf->server_names.n) {
        add_str(b, c->vs->conf->server_names.v[0]);
    }
}

static void add_name(gw_vbuf_t *b, X509_NAME *n)
{
    BIO *bio = BIO_new(BIO_s_mem());
    if (!bio)
        return;
    /* nginx's $ssl_client_s_dn: RFC 2253 order and escaping */
    if (X509_NAME_print_ex(bio, n, 0, XN_FLAG_RFC2253) >= 0) {
        char *p;
        long len = BIO_get_mem_data(bio, &p);
        if (len > 0)
            gw_vbuf_add(b, p, (size_t)len);
    }
    BIO_free(bio);
}

static void add_ssl_client(gw_vbuf_t *b, gw_conn_t *c, const char *what)
{
    if (!c->s.ssl)
        return;
    X509 *x = SSL_get0_peer_certificate(c->s.ssl);
    if (strcmp(what, "verify") == 0) {
        if (!x) {
            add_str(b, "NONE");
            return;
        }
        long r = SSL_get_verify_result(c->s.ssl);
        if (r == X509_V_OK) {
            add_str(b, "SUCCESS");
        } else {
            add_str(b, "FAILED:");
            add_str(b, X509_verify_cert_error_string(r));
        }
        return;
    }
    if (!x)
        return;
    if (strcmp(what, "s_dn") == 0) {
        add_name(b, X509_get_subject_name(x));
    } else if (strcmp(what, "i_dn") == 0) {
        add_name(b, X509_get_issuer_name(x));
    } else if (strcmp(what, "fingerprint") == 0) {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int n = 0;
        if (X509_digest(x, EVP_sha1(), md, &n) == 1)
            for (unsigned i = 0; i < n; i++)
                add_fmt(b, "%02x", md[i]);
    } else if (strcmp(what, "serial") == 0) {
        const ASN1_INTEGER *sn = X509_get0_serialNumber(x);
        BIGNUM *bn = ASN1_INTEGER_to_BN(sn, NULL);
        char *hex = bn ? BN_bn2hex(bn) : NULL;
        if (hex)
            add_str(b, hex);
        OPENSSL_free(hex);
        BN_free(bn);
    }
}

/* $ssl_curve: the negotiated group by OpenSSL's short name (nginx: OBJ_nid2sn); a
 * provider's group (no NID: TLSEXT_nid_unknown | its TLS id, e.g. X25519MLKEM768 of the
 * tlsgate provider) by the name SSL_group_to_name gives, else its code point in hex */
static void add_curve(gw_vbuf_t *b, SSL *ssl)
{
    int nid = SSL_get_negotiated_group(ssl);
    if (nid == 0 || nid == NID_undef)
        return;
    if (nid & TLSEXT_nid_unknown) {
        const char *name = SSL_group_to_name(ssl, nid);
        if (name)
            add_str(b, name);
        else
            add_fmt(b, "0x%04x", nid & 0xffff);
        return;
    }
    const char *sn = OBJ_nid2sn(nid);
    if (sn)
        add_str(b, sn);
}

static void add_seconds(gw_vbuf_t *b, int64_t us)
{
    if (us < 0)
        us = 0;
    add_fmt(b, "%lld.%03lld", (long long)(us / 1000000), (long long)(us / 1000 % 1000));
}

int gw_vars_eval(gw_conn_t *c, const char *s, size_t n, gw_vbuf_t *b)
{
    const gw_http_request_t *r = c->rq ? &c->rq->req : NULL;
    const gw_conn_vars_t *v = &c->v;
    static const gw_req_vars_t none;
    const gw_req_vars_t *rv = c->rq ? &c->rq->v : &none;
#define VAR(name) (n == sizeof(name) - 1 && memcmp(s, name, n) == 0)
    if (VAR("remote_addr")) {
        add_str(b, c->s.peer_text);
    } else if (VAR("remote_port")) {
        if (v->port)
            add_fmt(b, "%d", v->port);
    } else if (VAR("request")) {
        if (r && r->method_str)
            add_fmt(b, "%.*s %.*s HTTP/1.%d", (int)r->method_len, r->method_str, (int)r->target_len,
                    r->target, r->version_minor);
    } else if (VAR("request_method")) {
        if (r && r->method_str)
            gw_vbuf_add(b, r->method_str, r->method_len);
    } else if (VAR("request_uri")) {
        if (r && r->target)
            gw_vbuf_add(b, r->target, r->target_len);
    } else if (VAR("uri")) {
        if (r && r->path)
            gw_vbuf_add(b, r->path, r->path_len);
    } else if (VAR("args") || VAR("query_string")) {
        if (r && r->query)
            gw_vbuf_add(b, r->query, r->query_len);
    } else if (VAR("server_protocol")) {
        if (r)
            add_fmt(b, "HTTP/1.%d", r->version_minor);
    } else if (VAR("status")) {
        add_fmt(b, "%03d", c->rq ? c->rq->status : 0);
    } else if (VAR("body_bytes_sent")) {
        add_fmt(b, "%llu", (unsigned long long)(c->rq ? c->rq->bytes_sent : 0));
    } else if (VAR("bytes_sent")) {
        add_fmt(b, "%llu", (unsigned long long)((c->rq ? c->rq->bytes_sent : 0) + rv->head_bytes));
    } else if (VAR("request_time") || VAR("msec") || VAR("time_iso8601") || VAR("time_local")) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t now = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
        if (VAR("request_time")) {
            add_seconds(b, rv->start_us ? now - rv->start_us : 0);
        } else if (VAR("msec")) {
            add_seconds(b, now);
        } else {
            struct tm tm;
            time_t t = ts.tv_sec;
            localtime_r(&t, &tm);
            char out[64], z[8];
            strftime(z, sizeof(z), "%z", &tm); /* +0100 */
            if (VAR("time_iso8601")) {
                strftime(out, sizeof(out), "%Y-%m-%dT%H:%M:%S", &tm);
                add_fmt(b, "%s%.3s:%.2s", out, z, z + 3);
            } else {
                strftime(out, sizeof(out), "%d/%b/%Y:%H:%M:%S", &tm);
                add_fmt(b, "%s %s", out, z);
            }
        }
    } else if (VAR("connection")) {
        add_fmt(b, "%llu", (unsigned long long)v->serial);
    } else if (VAR("pid")) {
        add_fmt(b, "%d", (int)getpid());
    } else if (VAR("host")) {
        add_host(b, c);
    } else if (VAR("http_host")) {
        if (r && r->host)
            gw_vbuf_add(b, r->host, r->host_len);
    } else if (VAR("server_name")) {
        if (c->vs->conf->server_names.n)
            add_str(b, c->vs->conf->server_names.v[0]);
    } else if (VAR("server_port")) {
        const char *t = c->laddr && c->laddr->listen ? strrchr(c->laddr->listen->text, ':') : NULL;
        if (t)
            add_str(b, t + 1);
    } else if (VAR("scheme")) {
        add_str(b, c->s.ssl ? "https" : "http");
    } else if (VAR("https")) {
        add_str(b, c->s.ssl ? "on" : "");
    } else if (VAR("ssl_protocol")) {
        if (c->s.ssl)
            add_str(b, SSL_get_version(c->s.ssl));
    } else if (VAR("ssl_cipher")) {
        if (c->s.ssl && SSL_get_current_cipher(c->s.ssl))
            add_str(b, SSL_get_cipher_name(c->s.ssl));
    } else if (VAR("ssl_curve")) {
        if (c->s.ssl)
            add_curve(b, c->s.ssl);
    } else if (VAR("ssl_session_reused")) {
        if (c->s.ssl)
            add_str(b, SSL_session_reused(c->s.ssl) ? "r" : ".");
    } else if (VAR("ssl_server_name")) {
        const char *sn = c->s.ssl ? SSL_get_servername(c->s.ssl, TLSEXT_NAMETYPE_host_name) : NULL;
        if (sn)
            add_str(b, sn);
    } else if (VAR("ssl_client_s_dn")) {
        add_ssl_client(b, c, "s_dn");
    } else if (VAR("ssl_client_i_dn")) {
        add_ssl_client(b, c, "i_dn");
    } else if (VAR("ssl_client_verify")) {
        add_ssl_client(b, c, "verify");
    } else if (VAR("ssl_client_fingerprint")) {
        add_ssl_client(b, c, "fingerprint");
    } else if (VAR("ssl_client_serial")) {
        add_ssl_client(b, c, "serial");
    } else if (VAR("upstream_addr")) {
        add_str(b, rv->upstream_addr);
    } else if (VAR("upstream_status")) {
        if (rv->upstream_status)
            add_fmt(b, "%d", rv->upstream_status);
    } else if (VAR("upstream_response_time")) {
        if (rv->upstream_start_us)
            add_seconds(b, gw_clock_mono_us() - rv->upstream_start_us);
    } else if (VAR("proxy_protocol_addr")) {
        if (v->pp_family) {
            char t[INET6_ADDRSTRLEN];
            if (inet_ntop(v->pp_family, v->pp_addr, t, sizeof(t)))
                add_str(b, t);
        }
    } else if (VAR("proxy_protocol_port")) {
        if (v->pp_port)
            add_fmt(b, "%d", v->pp_port);
    } else if (n > 5 && memcmp(s, "http_", 5) == 0) {
        const gw_http_header_t *h = r ? header_var(r, s + 5, n - 5) : NULL;
        if (h)
            gw_vbuf_add(b, h->value, h->value_len);
    } else {
        return 0;
    }
#undef VAR
    return 1;
}

size_t gw_vars_ref(const char *t, const char **name, size_t *nlen)
{
    const char *s = t + 1;
    int braced = *s == '{';
    if (braced)
        s++;
    size_t n = 0;
    while ((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') ||
           (s[n] >= '0' && s[n] <= '9') || s[n] == '_')
        n++;
    if (n == 0 || (braced && s[n] != '}'))
        return 0;
    *name = s;
    *nlen = n;
    return (size_t)(s + n + braced - t);
}

void gw_vars_expand(gw_conn_t *c, const char *t, int header, gw_vbuf_t *out)
{
    while (*t) {
        if (*t != '$') {
            const char *d = strchr(t, '$');
            size_t n = d ? (size_t)(d - t) : strlen(t);
            gw_vbuf_add(out, t, n);
            t += n;
            continue;
        }
        const char *s;
        size_t n, ref = gw_vars_ref(t, &s, &n);
        if (!ref) {
            gw_vbuf_add(out, "$", 1);
            t++;
            continue;
        }
        size_t before = out->len;
        if (!gw_vars_eval(c, s, n, out)) {
            gw_vbuf_add(out, t, ref);
        } else if (header) {
            size_t o = before;
            for (size_t i = before; i < out->len; i++)
                if ((unsigned char)out->s[i] >= ' ' && out->s[i] != 0x7f)
                    out->s[o++] = out->s[i];
            out->len = o;
            out->s[o] = '\0';
        }
        t += ref;
    }
}

void gw_vars_upstream_try(gw_conn_t *c, const char *text)
{
    gw_req_vars_t *v = &c->rq->v;
    size_t n = strlen(v->upstream_addr);
    snprintf(v->upstream_addr + n, sizeof(v->upstream_addr) - n, "%s%s", n ? ", " : "", text);
    if (!v->upstream_start_us)
        v->upstream_start_us = gw_clock_mono_us();
}
