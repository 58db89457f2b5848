/*
 * Error log: nginx's format "YYYY/MM/DD HH:MM:SS [level] PID#0: message[: strerror (errno)]".
 * One process-wide log, written with a single write(2) per message (atomic for the
 * O_APPEND files and pipes the master and workers share).
 */
#ifndef GW_CORE_LOG_H
#define GW_CORE_LOG_H

#include "conf/conf.h"

/**
 * Open the error log. path: a file (created 0644, O_APPEND) or "stderr". level: the most
 * verbose enum gw_log_level that is written. Returns 0, or -1 with errno set when the file
 * cannot be opened (the previous log stays in use).
 */
int gw_log_open(const char *path, int level);

/** Reopen the current log file (after rotation; SIGUSR1). Returns 0 or -1 with errno. */
int gw_log_reopen(void);

/** The file descriptor the log writes to (for redirecting stderr when daemonising). */
int gw_log_fd(void);

/**
 * Write one message at level if the configured level allows it. err: an errno value to
 * append as ": strerror (err)", or 0 for none.
 */
void gw_log(int level, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/** Log OpenSSL's error queue at level, one line per entry prefixed with what (e.g. the
 * client's address or the failed call), then clear it. */
void gw_log_ssl_errors(int level, const char *what);

/**
 * Take OpenSSL's error queue (this thread's) and write it into buf as one line, entries
 * separated by "; ", each with its data string; "unknown OpenSSL error" when the queue
 * is empty. The queue is left empty. buf: cap bytes, always NUL-terminated.
 */
void gw_ssl_reason(char *buf, size_t cap);

/** Is level enabled? (skip building expensive messages) */
int gw_log_enabled(int level);

#endif
