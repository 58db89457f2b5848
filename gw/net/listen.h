/* Listening sockets: opened by the master, kept across reloads, inherited by workers. */
#ifndef GW_NET_LISTEN_H
#define GW_NET_LISTEN_H

#include "conf/conf.h"

/**
 * Open a non-blocking, close-on-exec TCP listening socket for l (SO_REUSEADDR, and
 * SO_REUSEPORT when l->reuseport; IPV6_V6ONLY for IPv6; TCP_DEFER_ACCEPT is not used so
 * that handshake timing stays visible). Returns the fd, or -1 with errno set.
 */
int gw_listen_open(const gw_listen_t *l);

/**
 * Write the IP address of sa (AF_INET or AF_INET6; the port is left out) as text, e.g.
 * "1.2.3.4" or "::1", into out (cap bytes, always NUL-terminated when cap >= 1, truncated
 * if short; INET6_ADDRSTRLEN suffices). Other families give "unix:".
 */
void gw_addr_text(const struct sockaddr *sa, char *out, size_t cap);

#endif
