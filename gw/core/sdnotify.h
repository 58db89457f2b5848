/*
 * systemd's readiness protocol (sd_notify(3)) without libsystemd: one datagram of
 * "VAR=VALUE\n" lines to the AF_UNIX socket named by $NOTIFY_SOCKET (a path, or an
 * abstract name when it starts with '@'). Used by the master for a Type=notify unit:
 * READY=1 once the workers are started, RELOADING=1 ... READY=1 around a reload,
 * STOPPING=1 when stopping.
 */
#ifndef GW_CORE_SDNOTIFY_H
#define GW_CORE_SDNOTIFY_H

/**
 * Send state (e.g. "READY=1\nMAINPID=123") to $NOTIFY_SOCKET. Returns 1 when sent, 0 when
 * NOTIFY_SOCKET is unset or empty (not started by systemd: nothing to do), -1 with errno
 * set when the variable is invalid (not an absolute path or '@' name, too long: EINVAL)
 * or the socket/sendto fails. Never blocks for long: the datagram socket is non-blocking.
 */
int gw_sd_notify(const char *state);

#endif
