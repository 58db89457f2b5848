/*
 * The client address a trusted proxy's header field names (nginx's realip module with
 * real_ip_header X-Forwarded-For / X-Real-IP): libc only, fuzzed (tests/fuzz/realip.c),
 * since whoever sits behind a trusted proxy writes the field.
 */
#ifndef GW_NET_REALIP_H
#define GW_NET_REALIP_H

#include <stddef.h>

#include "conf/deploy.h"

/**
 * From the list val[0..len) (addresses: IPv4, IPv6, or [IPv6], each with an optional
 * :PORT; separated by commas or spaces, tabs around them ignored; empty elements
 * skipped), the client: the last element, or with recursive != 0 the last one not in
 * trusted[0..n) (the first element when every one is trusted; when the walk meets an
 * element that is not an address, the trusted one right of it, as nginx's
 * ngx_http_get_forwarded_addr_internal). Returns 1 and fills *family, addr (4 or 16
 * bytes) and, unless port is NULL, *port (the element's port, 0 without one: nginx's
 * $remote_port), or 0 when the list is empty or its last element is not an address (nginx
 * then keeps the peer).
 */
int gw_realip_pick(const char *val, size_t len, const gw_cidr_t *trusted, size_t n, int recursive,
                   int *family, unsigned char addr[16], int *port);

#endif
