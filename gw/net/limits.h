/*
 * Per-client connection limits of a worker: `limit_conn_per_ip N;` counts the open
 * connections of each client address in this worker process (an exact hash table of
 * addresses, no false positives, entries freed when their count drops to zero).
 * Single-threaded (the worker's loop thread). libc only.
 */
#ifndef GW_NET_LIMITS_H
#define GW_NET_LIMITS_H

#include <stddef.h>
#include <sys/socket.h>

/** A counted client address (opaque). */
typedef struct gw_ipcount gw_ipcount_t;

/**
 * Count one more connection of the client at peer (AF_INET or AF_INET6; an IPv4-mapped
 * IPv6 address counts as its IPv4 address; other families are not limited), unless it
 * already has limit connections open in this worker.
 *
 * Returns 1 and sets *slot (to pass to gw_limit_conn_release; NULL when peer's family is
 * not counted) when the connection may stay; 0 when the client is at its limit (*slot
 * NULL, nothing counted); -1 when the table cannot grow (ENOMEM: the caller should let
 * the connection stay uncounted rather than refuse it). limit <= 0 means no limit: 1
 * with *slot NULL.
 */
int gw_limit_conn_take(const struct sockaddr *peer, socklen_t plen, int limit, gw_ipcount_t **slot);

/** Release a connection counted by gw_limit_conn_take (NULL accepted: nothing). */
void gw_limit_conn_release(gw_ipcount_t *slot);

/** Number of client addresses counted now (for tests and the status page). */
size_t gw_limit_conn_addresses(void);

#endif
