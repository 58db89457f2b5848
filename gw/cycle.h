/*
 * A cycle: one loaded configuration made ready to serve (nginx's ngx_cycle_t). The master
 * builds it — parsing, loading every certificate and key into SSL_CTXs, opening access
 * logs — before it binds or forks, so `tlsgate -t` and a failed reload find every error
 * without touching the running workers. Workers inherit it through fork().
 */
#ifndef GW_CYCLE_H
#define GW_CYCLE_H

#include <openssl/ssl.h>

#include "conf/conf.h"
#include "core/privs.h"

typedef struct gw_vserver {
    gw_server_t *conf;
    SSL_CTX *ssl_ctx;  /* NULL when the block has no certificate */
    int access_log_fd; /* -1 = off */
    size_t index;
    gw_stream_server_t *stream; /* a stream { server } block (TCP proxy), else NULL */
} gw_vserver_t;

/** One distinct listen address and the server blocks that listen on it. */
typedef struct gw_laddr {
    gw_listen_t *listen; /* options of the first listen naming the address */
    int ssl;             /* any listen of this address said "ssl" */
    gw_vserver_t **servers;
    size_t n_servers;
    gw_vserver_t *default_server; /* default_server, else the first */
    char key[96];                 /* "ADDR:PORT" + "/rp" when reuseport: socket identity */
    gw_stream_server_t *stream;   /* a stream server's address (its only server) */
} gw_laddr_t;

typedef struct gw_log_file {
    char *path;
    int fd;
} gw_log_file_t;

typedef struct gw_cycle {
    gw_conf_t *conf;
    gw_vserver_t *vservers;
    size_t n_vservers;
    gw_laddr_t *laddrs;
    size_t n_laddrs;
    gw_log_file_t *logs;
    size_t n_logs;
    gw_privs_t privs; /* the workers' credentials (`user`), set by gw_build_cycle */
} gw_cycle_t;

/**
 * Build a cycle from conf, which it takes over (freed with the cycle, also on failure).
 * client_hello_cb becomes every SSL_CTX's ClientHello callback (SNI switching).
 * Returns NULL after adding messages to errs.
 */
gw_cycle_t *gw_cycle_new(gw_conf_t *conf, SSL_client_hello_cb_fn client_hello_cb,
                         gw_errlist_t *errs);

/** Free a cycle: SSL_CTXs, access log fds, the config. NULL accepted. */
void gw_cycle_free(gw_cycle_t *cycle);

/** Reopen every access log of the cycle (SIGUSR1). Logs failures. */
void gw_cycle_reopen_logs(gw_cycle_t *cycle);

#endif
