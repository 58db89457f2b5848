/* The master process: configuration, listening sockets, workers, signals. */
#ifndef GW_MASTER_H
#define GW_MASTER_H

#include "conf/conf.h"

/** What the command line decided; lives for the whole process. */
typedef struct gw_options {
    const char *conf_file; /* absolute path, or NULL for the embedded default */
    const char *prefix;    /* absolute */
    const char *globals;   /* -g directives, or NULL */
    const char *state_dir; /* absolute, exists */
} gw_options_t;

/**
 * Load the configuration named by opt: the file, or the embedded default (whose
 * certificates, pages and state directory are created on first use). Returns NULL after
 * adding messages to errs.
 */
gw_conf_t *gw_options_load(const gw_options_t *opt, gw_errlist_t *errs);

struct gw_cycle;

/**
 * Load the configuration, then the providers and engines it names (tls/accel.h), then
 * build the cycle (certificates, keys, access logs). Returns NULL after adding messages
 * to errs; nothing is bound. Used at start, on reload and by -t.
 */
struct gw_cycle *gw_build_cycle(const gw_options_t *opt, gw_errlist_t *errs);

/**
 * Run the master until it is stopped: build the cycle, bind, (daemonise,) write the pid
 * file, fork the workers, and serve signals (HUP reload, QUIT graceful stop, TERM/INT fast
 * stop, USR1 reopen logs, CHLD respawn). Returns the process exit status.
 */
int gw_master_run(const gw_options_t *opt);

#endif
