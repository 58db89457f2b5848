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
    if (n > SIZE_MAX / 4) /* never: a length underflow (and gcc 12 -O3 sees the path) */
        abort();
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

void gw_vbuf_str(gw_vbuf_t *b, const char *s)
{
    gw_vbuf_add(b, s, strlen(s));
}

#define add_str gw_vbuf_str

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
}

void gw_vars_release(gw_req_vars_t *rv)
{
    free(rv->head);
    rv->head = NULL;
}

/* Does the server read variables after the head has left the input buffer? */
static int needs_head_copy(const gw_req_t *r)
{
    const gw_server_t *s = r->vs->conf;
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

static void copy_head(gw_req_t *rq)
{
    gw_http_request_t *r = &rq->req;
    const char *base = rq->conn->s.in;
    size_t len = rq->conn->head_len;
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
    rq->v.head = copy;
}

void gw_vars_request(gw_req_t *rq)
{
    gw_req_vars_t *v = &rq->v;
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
    v->proxy_host = NULL;
    gw_http_request_t *r = &rq->req;
    if (!rq->vs->conf->srv.dep.underscores_in_headers) {
        /* nginx ignores such fields (underscores_in_headers off): a backend that maps
         * '_' to '-' would otherwise read "Content_Length" as a length */
        size_t o = 0;
        for (size_t i = 0; i < r->n_headers; i++)
            if (!memchr(r->headers[i].name, '_', r->headers[i].name_len))
                r->headers[o++] = r->headers[i];
        r->n_headers = o;
    }
    gw_access_real_ip(rq);
    /* HTTP/2: the stream's header list lives as long as the stream */
    if (rq->proto == GW_REQ_HTTP11 && needs_head_copy(rq))
        copy_head(rq);
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

static void add_host(gw_vbuf_t *b, const gw_req_t *rq)
{
    const gw_http_request_t *r = &rq->req;
    if (r->host && r->host_len) {
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
    } else if (rq->vs->conf->server_names.n) {
        add_str(b, rq->vs->conf->server_names.v[0]);
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

static void add_ssl_client(gw_vbuf_t *b, SSL *ssl, const char *what)
{
    if (!ssl)
        return;
    X509 *x = SSL_get0_peer_certificate(ssl);
    if (strcmp(what, "verify") == 0) {
        if (!x) {
            add_str(b, "NONE");
            return;
        }
        long r = SSL_get_verify_result(ssl);
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

/* $server_protocol: "HTTP/2.0" for a stream (nginx), else the request line's version */
static void add_protocol(gw_vbuf_t *b, const gw_req_t *rq)
{
    if (rq->proto == GW_REQ_HTTP2)
        add_str(b, "HTTP/2.0");
    else
        add_fmt(b, "HTTP/1.%d", rq->req.version_minor);
}

/* $proxy_add_x_forwarded_for: the request's X-Forwarded-For fields, then $remote_addr */
static void add_forwarded_for(gw_vbuf_t *b, const gw_req_t *rq)
{
    const gw_http_request_t *r = &rq->req;
    for (size_t i = 0; i < r->n_headers; i++)
        if (gw_http_token_eq(r->headers[i].name, r->headers[i].name_len, "x-forwarded-for") &&
            r->headers[i].value_len) {
            gw_vbuf_add(b, r->headers[i].value, r->headers[i].value_len);
            gw_vbuf_add(b, ", ", 2);
        }
    add_str(b, rq->peer_text);
}

int gw_vars_eval(const gw_req_t *rq, const char *s, size_t n, gw_vbuf_t *b)
{
    const gw_http_request_t *r = &rq->req;
    const gw_conn_t *c = rq->conn; /* the transport: TLS, addresses, $connection */
    static const gw_conn_vars_t none;
    const gw_conn_vars_t *v = c ? &c->v : &none;
    const gw_req_vars_t *rv = &rq->v;
    SSL *ssl = c ? c->s.ssl : NULL;
#define VAR(name) (n == sizeof(name) - 1 && memcmp(s, name, n) == 0)
    if (VAR("remote_addr")) {
        add_str(b, rq->peer_text);
    } else if (VAR("remote_port")) {
        uint16_t port = rv->family ? rv->port : v->tcp_port;
        if (port)
            add_fmt(b, "%d", port);
    } else if (VAR("request")) {
        if (r->method_str) {
            add_fmt(b, "%.*s %.*s ", (int)r->method_len, r->method_str, (int)r->target_len,
                    r->target);
            add_protocol(b, rq);
        }
    } else if (VAR("request_method")) {
        if (r->method_str)
            gw_vbuf_add(b, r->method_str, r->method_len);
    } else if (VAR("request_uri")) {
        if (r->target)
            gw_vbuf_add(b, r->target, r->target_len);
    } else if (VAR("uri")) {
        if (r->path)
            gw_vbuf_add(b, r->path, r->path_len);
    } else if (VAR("args") || VAR("query_string")) {
        if (r->query)
            gw_vbuf_add(b, r->query, r->query_len);
    } else if (VAR("server_protocol")) {
        if (r->method_str)
            add_protocol(b, rq);
    } else if (VAR("status")) {
        add_fmt(b, "%03d", rq->status);
    } else if (VAR("body_bytes_sent")) {
        add_fmt(b, "%llu", (unsigned long long)rq->bytes_sent);
    } else if (VAR("bytes_sent")) {
        add_fmt(b, "%llu", (unsigned long long)(rq->bytes_sent + rv->head_bytes));
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
        add_host(b, rq);
    } else if (VAR("http_host")) {
        if (r->host)
            gw_vbuf_add(b, r->host, r->host_len);
    } else if (VAR("server_name")) {
        if (rq->vs->conf->server_names.n)
            add_str(b, rq->vs->conf->server_names.v[0]);
    } else if (VAR("server_port")) {
        const char *t =
            c && c->laddr && c->laddr->listen ? strrchr(c->laddr->listen->text, ':') : NULL;
        if (t)
            add_str(b, t + 1);
    } else if (VAR("scheme")) {
        add_str(b, rq->tls ? "https" : "http");
    } else if (VAR("https")) {
        add_str(b, rq->tls ? "on" : "");
    } else if (VAR("ssl_protocol")) {
        if (ssl)
            add_str(b, SSL_get_version(ssl));
    } else if (VAR("ssl_cipher")) {
        if (ssl && SSL_get_current_cipher(ssl))
            add_str(b, SSL_get_cipher_name(ssl));
    } else if (VAR("ssl_curve")) {
        if (ssl)
            add_curve(b, ssl);
    } else if (VAR("ssl_session_reused")) {
        if (ssl)
            add_str(b, SSL_session_reused(ssl) ? "r" : ".");
    } else if (VAR("ssl_server_name")) {
        const char *sn = ssl ? SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name) : NULL;
        if (sn)
            add_str(b, sn);
    } else if (VAR("ssl_client_s_dn")) {
        add_ssl_client(b, ssl, "s_dn");
    } else if (VAR("ssl_client_i_dn")) {
        add_ssl_client(b, ssl, "i_dn");
    } else if (VAR("ssl_client_verify")) {
        add_ssl_client(b, ssl, "verify");
    } else if (VAR("ssl_client_fingerprint")) {
        add_ssl_client(b, ssl, "fingerprint");
    } else if (VAR("ssl_client_serial")) {
        add_ssl_client(b, ssl, "serial");
    } else if (VAR("proxy_host")) {
        if (rv->proxy_host)
            add_str(b, rv->proxy_host);
    } else if (VAR("proxy_add_x_forwarded_for")) {
        add_forwarded_for(b, rq);
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
        const gw_http_header_t *h = header_var(r, s + 5, n - 5);
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

void gw_vars_expand_fn(const gw_req_t *r, const char *t, gw_vbuf_t *out, gw_vars_put_fn put,
                       void *arg)
{
    gw_vbuf_t val = {0};
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
        val.len = 0;
        if (gw_vars_eval(r, s, n, &val))
            put(out, val.s ? val.s : "", val.len, arg);
        else
            gw_vbuf_add(out, t, ref); /* unknown: literal */
        t += ref;
    }
    gw_vbuf_free(&val);
}

/* a value in a header line: control characters dropped (it never ends the line) */
static void put_header(gw_vbuf_t *out, const char *v, size_t n, void *arg)
{
    (void)arg;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)v[i] >= ' ' && v[i] != 0x7f)
            gw_vbuf_add(out, v + i, 1);
}

static void put_raw(gw_vbuf_t *out, const char *v, size_t n, void *arg)
{
    (void)arg;
    gw_vbuf_add(out, v, n);
}

void gw_vars_expand(const gw_req_t *r, const char *t, int header, gw_vbuf_t *out)
{
    gw_vars_expand_fn(r, t, out, header ? put_header : put_raw, NULL);
}

void gw_vars_upstream_try(gw_req_t *r, const char *text)
{
    gw_req_vars_t *v = &r->v;
    size_t n = strlen(v->upstream_addr);
    snprintf(v->upstream_addr + n, sizeof(v->upstream_addr) - n, "%s%s", n ? ", " : "", text);
    if (!v->upstream_start_us)
        v->upstream_start_us = gw_clock_mono_us();
}
