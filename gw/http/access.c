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

int gw_access_denied(gw_conn_t *c, const gw_loc_settings_t *l)
{
    const gw_deploy_loc_t *d = &l->dep;
    for (size_t i = 0; i < d->n_access; i++)
        if (gw_cidr_match(&d->access[i].cidr, c->v.family, c->v.addr))
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

static void set_client(gw_conn_t *c, int family, const unsigned char *addr, int port)
{
    c->v.family = (uint8_t)family;
    memset(c->v.addr, 0, sizeof(c->v.addr));
    memcpy(c->v.addr, addr, family == AF_INET ? 4 : 16);
    c->v.port = (uint16_t)port;
    inet_ntop(family, addr, c->s.peer_text, sizeof(c->s.peer_text));
    c->v.peer_replaced = 1;
}

void gw_access_real_ip(gw_conn_t *c)
{
    gw_conn_vars_t *v = &c->v;
    /* every request starts from the TCP peer (or the PROXY protocol's address, which is
     * the connection's own) */
    v->family = v->tcp_family;
    memcpy(v->addr, v->tcp_addr, 16);
    v->port = v->tcp_port;
    if (v->peer_replaced) { /* a previous request's real_ip address */
        inet_ntop(v->tcp_family, v->tcp_addr, c->s.peer_text, sizeof(c->s.peer_text));
        v->peer_replaced = 0;
    }
    const gw_deploy_srv_t *d = &c->vs->conf->srv.dep;
    if (!d->n_real_ip_from || !d->real_ip_header || !trusted(d, v->family, v->addr))
        return;
    if (strcmp(d->real_ip_header, "proxy_protocol") == 0) {
        if (v->pp_family)
            set_client(c, v->pp_family, v->pp_addr, v->pp_port);
        return;
    }
    const gw_http_request_t *r = &c->rq->req;
    const gw_http_header_t *h = NULL;
    for (size_t i = 0; i < r->n_headers && !h; i++)
        if (gw_http_token_eq(r->headers[i].name, r->headers[i].name_len, d->real_ip_header))
            h = &r->headers[i];
    if (!h)
        return;
    int fam = 0;
    unsigned char a[16];
    if (gw_realip_pick(h->value, h->value_len, d->real_ip_from, d->n_real_ip_from,
                       d->real_ip_recursive == 1, &fam, a))
        set_client(c, fam, a, 0); /* else garbage: the peer stays (nginx does the same) */
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
