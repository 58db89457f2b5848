/*
 * Privileges of the processes and protection of secrets in memory.
 *
 * - `user USER [GROUP]`: the master (root) binds and reads keys; each worker drops to
 *   USER/GROUP right after fork (setgroups via initgroups, setgid, setuid; checked: root
 *   cannot be regained). Root without `user` is refused (gw_privs_check), so workers never
 *   keep root by accident; `user root;` says it is meant.
 * - `working_directory`: the workers' cwd; with it, workers are dumpable (also after
 *   setuid, which clears "dumpable"), as nginx does; without it they are made
 *   non-dumpable (PR_SET_DUMPABLE 0): no core dump at all.
 * - `ssl_secure_heap`: OpenSSL's secure heap (CRYPTO_secure_malloc_init: an mmap'd arena
 *   that OpenSSL marks MADV_DONTDUMP and mlocks when allowed), set up before any key is
 *   read, so private keys, ticket keys and the provider's key copies are not in core dumps.
 *
 * What is and is not covered: docs/security.md.
 */
#ifndef GW_CORE_PRIVS_H
#define GW_CORE_PRIVS_H

#include <stddef.h>
#include <sys/types.h>

#include "conf/conf.h"

/** Credentials the workers switch to. */
typedef struct gw_privs {
    int drop; /* 1: the workers call setgid/initgroups/setuid */
    uid_t uid;
    gid_t gid;
    char *user; /* heap copy of the user name (initgroups) */
} gw_privs_t;

/**
 * Check `user`/`working_directory` of conf for this process (start, -t and reload):
 * resolves USER (getpwnam) and GROUP (getgrnam, default USER's primary group) into *out
 * (out->drop is 1 only when the effective uid is 0 and USER is not root; free out->user
 * with gw_privs_dispose); refuses to run as root without `user`; warns (error log) when
 * `user` is given to a master that is not root, and when `user root` keeps root workers.
 * Returns 0, or -1 after adding "FILE: user: reason" messages to errs.
 */
int gw_privs_check(const gw_conf_t *conf, gw_privs_t *out, gw_errlist_t *errs);

/** Free what gw_privs_check allocated; p is zeroed. */
void gw_privs_dispose(gw_privs_t *p);

/**
 * In a new worker, before it serves: switch to p's credentials (initgroups, setgid,
 * setuid; then check that setuid(0) fails), change to conf->working_directory and make
 * the process dumpable exactly when it has one; stop clearing freed OpenSSL memory
 * (gw_privs_mem_clearing). A failed switch logs at emerg and exits the
 * process with status 2: a worker never runs with other credentials than configured.
 */
void gw_privs_worker_init(const gw_conf_t *conf, const gw_privs_t *p);

/**
 * Give a log file the workers reopen on SIGUSR1 (the error log, the access logs) to the
 * workers' user, as nginx does, so that they can reopen it after a rotation. Does nothing
 * unless p->drop, or for "stderr" / a file that user owns already. Failures are logged.
 */
void gw_privs_chown_file(const gw_privs_t *p, const char *path);

/**
 * Set up OpenSSL's secure heap of size bytes (rounded up to a power of two, minimum
 * allocation 32 bytes) once per process, before any key is loaded; size 0 does nothing.
 * Returns 0 (also when it is only not locked in memory: logged at info), -1 when OpenSSL
 * refuses (logged; keys then use the ordinary heap). A later call with another size only
 * logs that the first size stays (the arena cannot be resized while keys live in it).
 */
int gw_privs_secure_heap(int64_t size);

/**
 * Route OpenSSL's ordinary allocations (CRYPTO_malloc/realloc/free) through functions
 * that, while clearing is on, zero every block before it is freed or moved
 * (malloc_usable_size bytes): OpenSSL parses a key file through ASN.1 structures in the
 * ordinary heap and frees some of them without cleansing (e.g. the EC private key's
 * OCTET STRING), which would leave key bytes in freed heap memory that a core dump (or a
 * forked worker) carries. Must be the first OpenSSL call of the process (returns -1 when
 * OpenSSL already allocated). Clearing starts on.
 */
int gw_privs_mem_init(void);

/** Turn clearing of freed OpenSSL blocks on or off (workers turn it off: they parse no
 * key files, and their own secrets are cleansed by OpenSSL or in the secure heap). */
void gw_privs_mem_clearing(int on);

/**
 * Warnings found while a configuration is loaded (a key file readable by others, `user`
 * ignored...), kept until gw_warn_flush: at start the error log is not open yet and `-t`
 * prints to stderr. gw_warn_add formats one message (printf; aborts on out of memory,
 * start-up only).
 */
void gw_warn_add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** Write the pending warnings to stderr as "tlsgate: [warn] MSG" (to_stderr) and/or to
 * the error log at warn (to_log), then forget them. Returns how many there were. */
size_t gw_warn_flush(int to_stderr, int to_log);

#endif
