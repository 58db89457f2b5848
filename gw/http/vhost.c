/* Server selection: SNI in the ClientHello (RFC 6066 §3), then Host or :authority. */
#include "http/conn.h"

#include <string.h>

#include "core/log.h"
#include "http/resume.h"
#include "tls/sni_ack.h"
#include "tls/tls.h"

/* ---- server selection ---- */

static int name_matches(const char *pattern, const char *host, size_t hlen)
{
    size_t plen = strlen(pattern);
    if (plen > 2 && pattern[0] == '*' && pattern[1] == '.') {
        /* "*.example.com" matches "www.example.com" and "a.b.example.com" (nginx) */
        size_t suf = plen - 1; /* ".example.com" */
        return hlen > suf && memcmp(host + hlen - suf, pattern + 1, suf) == 0;
    }
    return plen == hlen && memcmp(pattern, host, hlen) == 0;
}

/* Exact names first, then the longest wildcard; NULL when nothing matches. */
static gw_vserver_t *find_server(gw_laddr_t *la, const char *host, size_t hlen)
{
    gw_vserver_t *wild = NULL;
    size_t wild_len = 0;
    for (size_t i = 0; i < la->n_servers; i++) {
        gw_vserver_t *vs = la->servers[i];
        for (size_t j = 0; j < vs->conf->server_names.n; j++) {
            const char *p = vs->conf->server_names.v[j];
            if (p[0] == '*') {
                size_t pl = strlen(p);
                if (pl > wild_len && name_matches(p, host, hlen)) {
                    wild = vs;
                    wild_len = pl;
                }
            } else if (name_matches(p, host, hlen)) {
                return vs;
            }
        }
    }
    return wild;
}

/* Lower-case a host name into out, drop a trailing dot; -1 when it is not a valid
 * reg-name/IP literal (RFC 3986 §3.2.2), so that hostile bytes never reach the logs
 * or a file path. */
static long normalize_host(const char *h, size_t len, char *out, size_t cap, int strip_port)
{
    if (strip_port) {
        if (len && h[0] == '[') {
            const char *e = memchr(h, ']', len);
            if (!e)
                return -1;
            size_t l = (size_t)(e - h) + 1;
            if (l < len && (h[l] != ':' || l + 1 == len))
                return -1;
            for (size_t i = l + 1; i < len; i++)
                if (h[i] < '0' || h[i] > '9')
                    return -1;
            len = l;
        } else {
            const char *colon = memchr(h, ':', len);
            if (colon) {
                size_t l = (size_t)(colon - h);
                if (l + 1 == len)
                    return -1;
                for (size_t i = l + 1; i < len; i++)
                    if (h[i] < '0' || h[i] > '9')
                        return -1;
                len = l;
            }
        }
    }
    if (len && h[len - 1] == '.')
        len--;
    if (len == 0 || len >= cap)
        return -1;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)h[i];
        if (ch >= 'A' && ch <= 'Z')
            ch = (unsigned char)(ch + 32);
        else if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' ||
                   ch == '_' || ch == '[' || ch == ']' || ch == ':'))
            return -1;
        if (ch == '.' && i > 0 && out[i - 1] == '.')
            return -1;
        out[i] = (char)ch;
    }
    out[len] = '\0';
    return (long)len;
}

static int sni_switch(SSL *ssl, int *alert);
/* The server block is chosen: `ssl_reject_handshake on` in it ends the handshake with
 * the unrecognized_name alert (RFC 6066 §3 "the server MAY abort the handshake": nginx's
 * ssl_reject_handshake), before any certificate could be shown. */
static int reject_or_go(gw_conn_t *c, int *alert)
{
    if (c->vs->conf->srv.ssl_reject_handshake == 1) {
        gw_log(GW_LOG_INFO, 0, "client %s: handshake rejected (ssl_reject_handshake) for %s",
               c->s.peer_text, c->sni_present ? "its server_name" : "a ClientHello without SNI");
        *alert = SSL_AD_UNRECOGNIZED_NAME;
        return SSL_CLIENT_HELLO_ERROR;
    }
    return SSL_CLIENT_HELLO_SUCCESS;
}

int gw_conn_client_hello(SSL *ssl, int *alert, void *arg)
{
    int r = sni_switch(ssl, alert);
    gw_conn_t *c = SSL_get_app_data(ssl);
    if (r != SSL_CLIENT_HELLO_SUCCESS || !c)
        return r;
    return gw_resume_client_hello(c, ssl); /* ssl_session_cache redis:// */
}

void gw_conn_hello_resume(gw_conn_t *c)
{
    gw_sock_hello_resume(&c->s);
}

static int sni_switch(SSL *ssl, int *alert)
{
    gw_conn_t *c = SSL_get_app_data(ssl);
    if (!c)
        return SSL_CLIENT_HELLO_SUCCESS;
    const unsigned char *name;
    size_t len;
    int r = gw_tls_hello_sni(ssl, &name, &len);
    if (r < 0) {
        *alert = SSL_AD_DECODE_ERROR;
        return SSL_CLIENT_HELLO_ERROR;
    }
    if (r == 0)
        return reject_or_go(c, alert); /* no SNI: the default server */
    c->sni_present = 1;
    char host[256];
    long hl = normalize_host((const char *)name, len, host, sizeof(host), 0);
    if (hl < 0)
        return reject_or_go(c, alert); /* unusable name: the default server, as nginx */
    gw_vserver_t *vs = find_server(c->laddr, host, (size_t)hl);
    if (!vs)
        return reject_or_go(c, alert);
    c->sni_matched = 1;
    gw_tls_sni_used(ssl); /* tls/sni_ack.h: the reply acknowledges the name */
    if (vs != c->vs && vs->ssl_ctx) {
        if (!gw_tls_switch(ssl, vs->ssl_ctx, vs->conf)) {
            *alert = SSL_AD_INTERNAL_ERROR;
            return SSL_CLIENT_HELLO_ERROR;
        }
    }
    if (vs->ssl_ctx)
        c->vs = vs;
    return reject_or_go(c, alert);
}

int gw_conn_select_host(gw_conn_t *c, const char *h, size_t len, gw_vserver_t **out)
{
    /* Which server block: the Host header among this address's servers. When the client's
     * SNI selected a block, that block's certificates and TLS policy were used: a Host
     * naming another block gets 421 (RFC 9110 §15.5.20), so one block's TLS policy cannot
     * be used to reach another. (nginx only does this with ssl_verify_client; we always
     * do.) Without SNI, or with an SNI no block matches, Host alone decides, as in nginx. */
    char host[256];
    long hl = normalize_host(h, len, host, sizeof(host), 1);
    if (hl < 0)
        return 400;
    gw_vserver_t *vs = find_server(c->laddr, host, (size_t)hl);
    if (!vs)
        vs = c->sni_matched ? c->vs : c->laddr->default_server;
    if (c->sni_matched && vs != c->vs)
        return 421;
    *out = vs;
    return 0;
}

int gw_conn_logs(const gw_conn_t *c)
{
    const gw_laddr_t *la = c->laddr;
    for (size_t i = 0; i < la->n_servers; i++)
        if (la->servers[i]->access_log_fd >= 0)
            return 1;
    return 0;
}
