/*
 * gw/conf internals for conf/deploy.c: the setters of issue #23's directives (rows in
 * directives_deploy.inc, included in the table of directives.c) and the merge, check and
 * free steps conf.c calls. Not for code outside gw/conf.
 */
#ifndef GW_CONF_DEPLOY_SET_H
#define GW_CONF_DEPLOY_SET_H

#include "lexer.h"

#define GW_DEPLOY_SETTER(name)                                                                     \
    int name(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_directive_t *d,               \
             const gw_conf_node_t *n, void *base)

GW_DEPLOY_SETTER(gw_conf_set_add_header);
GW_DEPLOY_SETTER(gw_conf_set_error_page);
GW_DEPLOY_SETTER(gw_conf_set_access_rule);
GW_DEPLOY_SETTER(gw_conf_set_real_ip_from);
GW_DEPLOY_SETTER(gw_conf_set_real_ip_header);
GW_DEPLOY_SETTER(gw_conf_set_log_format);
GW_DEPLOY_SETTER(gw_conf_set_include);
GW_DEPLOY_SETTER(gw_conf_set_verify_client);

/** Settings initialised "not given" (called by gw_conf_srv_init / gw_conf_loc_init). */
void gw_conf_deploy_srv_init(gw_deploy_srv_t *s);
void gw_conf_deploy_loc_init(gw_deploy_loc_t *l);
/** nginx's inheritance of the lists and values: s from its enclosing level h. */
void gw_conf_deploy_merge_srv(gw_deploy_srv_t *s, const gw_deploy_srv_t *h);
void gw_conf_deploy_merge_loc(gw_deploy_loc_t *s, const gw_deploy_loc_t *h);
void gw_conf_deploy_srv_free(gw_deploy_srv_t *s);
void gw_conf_deploy_loc_free(gw_deploy_loc_t *l);
/**
 * A directive of a stream server that only stream servers have (issue #23):
 * `proxy_protocol on|off`, `proxy_ssl on|off` and the `proxy_ssl_*` settings of its
 * TLS toward the upstream (walked in scope in, the server's). Returns 1 when g was one (applied, or
 * an error reported), 0 when it is none of them.
 */
int gw_conf_stream_deploy(gw_conf_parser_t *p, gw_stream_server_t *ss, const gw_conf_node_t *g,
                          unsigned char *seen_pp, gw_conf_scope_t *in);

/** After the merge: every access_log format name is a log_format of the http block. */
void gw_conf_deploy_validate(gw_conf_parser_t *p);

#endif
