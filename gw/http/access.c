/*
 * allow / deny (nginx's ngx_http_access_module) and set_real_ip_from / real_ip_header /
 * real_ip_recursive (ngx_http_realip_module) for a request: see http/vars.h.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "http/conn.h"
#include "http/vars.h"
#include "core/log.h"
#include "net/proxy_protocol.h"
#include "net/realip.h"

int gw_access_denied(const gw_req_t *r, const gw_loc_settings_t *l)
{
    const gw_deploy_loc_t *d = &l->dep;
    if (!d->n_access)
        return 0;
    /* the client after real_ip (gw_vars_request), else the connection's TCP peer */
    const gw_conn_vars_t *cv = &r->conn->v;
    int fam = r->v.family ? r->v.family : cv->tcp_family;
    const unsigned char *addr = r->v.family ? r->v.addr : cv->tcp_addr;
    for (size_t i = 0; i < d->n_access; i++)
        if (gw_cidr_match(&d->access[i].cidr, fam, addr))
            return d->access[i].deny;
    return 0;
}

static int trusted(const gw_deploy_srv_t *d, int family, const unsigned char *addr)
{
    for (size_t i = 0; i < d->n_real_ip_from; i++)
        if (gw_cidr_match(&d->real_ip_from[i], family, addr))
            return 1;
    return 0;
}

/* r's client is family/addr/port from here on: allow/deny, $remote_addr, $remote_port */
static void set_client(gw_req_t *r, int family, const unsigned char *addr, int port)
{
    r->v.family = (uint8_t)family;
    memset(r->v.addr, 0, sizeof(r->v.addr));
    memcpy(r->v.addr, addr, family == AF_INET ? 4 : 16);
    r->v.port = (uint16_t)port;
    if (inet_ntop(family, addr, r->v.addr_text, sizeof(r->v.addr_text)))
        r->peer_text = r->v.addr_text;
}

void gw_access_real_ip(gw_req_t *r)
{
    const gw_conn_vars_t *v = &r->conn->v;
    /* every request (and HTTP/2 stream) starts from the TCP peer: the PROXY protocol's
     * address is the connection's own, and replaces it only by real_ip_header */
    r->v.family = v->tcp_family;
    memcpy(r->v.addr, v->tcp_addr, sizeof(r->v.addr));
    r->v.port = v->tcp_port;
    r->peer_text = r->conn->s.peer_text;
    const gw_deploy_srv_t *d = &r->vs->conf->srv.dep;
    if (!d->n_real_ip_from || !d->real_ip_header || !trusted(d, v->tcp_family, v->tcp_addr))
        return;
    if (strcmp(d->real_ip_header, "proxy_protocol") == 0) {
        if (v->pp_family)
            set_client(r, v->pp_family, v->pp_addr, v->pp_port);
        return;
    }
    /* X-Forwarded-For fields are one list (RFC 9110 §5.3, nginx 1.23+): a trusted proxy
     * that adds its own field after the client's must not leave the client's first field
     * to name the client (a client could pick its address). Other fields: the first. */
    const gw_http_request_t *q = &r->req;
    int xff = strcmp(d->real_ip_header, "x-forwarded-for") == 0;
    const gw_http_header_t *h = NULL;
    size_t n = 0;
    gw_vbuf_t joined = {0};
    for (size_t i = 0; i < q->n_headers; i++) {
        const gw_http_header_t *f = &q->headers[i];
        if (!gw_http_token_eq(f->name, f->name_len, d->real_ip_header))
            continue;
        if (n++ == 0) {
            h = f;
            if (!xff)
                break;
            continue;
        }
        if (n == 2)
            gw_vbuf_add(&joined, h->value, h->value_len);
        gw_vbuf_str(&joined, ",");
        gw_vbuf_add(&joined, f->value, f->value_len);
    }
    if (!h)
        return;
    const char *val = n > 1 ? joined.s : h->value;
    size_t len = n > 1 ? joined.len : h->value_len;
    int fam = 0, port = 0;
    unsigned char a[16];
    if (val && gw_realip_pick(val, len, d->real_ip_from, d->n_real_ip_from,
                              d->real_ip_recursive == 1, &fam, a, &port))
        set_client(r, fam, a, port); /* else garbage: the peer stays (nginx does the same) */
    gw_vbuf_free(&joined);
}

int gw_access_proxy_protocol(gw_conn_t *c)
{
    gw_pp_t pp;
    const char *why = NULL;
    int r = gw_pp_read(c->s.fd, &pp, &why);
    if (r == 0)
        return 0;
    if (r < 0) {
        /* a peer that closed first is not a broken header (a balancer's TCP check) */
        int closed = strncmp(why, "connection", 10) == 0;
        gw_log(closed ? GW_LOG_INFO : GW_LOG_ERROR, 0, "client %s: %s%s", c->s.peer_text,
               closed ? "" : "broken PROXY protocol header: ", why);
        gw_pp_discard(c->s.fd); /* so that the close is a FIN, not a reset */
        return -1;
    }
    if (pp.family) {
        c->v.pp_family = (uint8_t)pp.family;
        memcpy(c->v.pp_addr, pp.src, 16);
        c->v.pp_port = (uint16_t)pp.src_port;
    }
    return 1;
}
