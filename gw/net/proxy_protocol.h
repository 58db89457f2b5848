/*
 * The PROXY protocol (HAProxy's proxy-protocol.txt, versions 1 and 2): the header a load
 * balancer sends before a connection's own bytes to name the original client. Parser
 * (libc only, fuzzed: tests/fuzz/proxy_protocol.c), header writer (version 1, as nginx's
 * `proxy_protocol on` sends), and a reader that takes exactly the header's bytes off a
 * non-blocking socket, so the TLS handshake or the relay reads what follows.
 */
#ifndef GW_NET_PROXY_PROTOCOL_H
#define GW_NET_PROXY_PROTOCOL_H

#include <stddef.h>
#include <sys/socket.h>

#define GW_PP_V1_MAX 107  /* bytes of a version 1 line with its CRLF (the spec's bound) */
#define GW_PP_V2_MAX 4096 /* bytes of a version 2 header with its TLVs that we accept */

/** A parsed header. */
typedef struct gw_pp {
    int version;                    /* 1 or 2 */
    int family;                     /* AF_INET or AF_INET6 with addresses; 0 for v1 UNKNOWN, v2
                                       LOCAL, UNSPEC or AF_UNIX: the connection's own addresses stay */
    unsigned char src[16], dst[16]; /* network order (4 bytes used for AF_INET) */
    int src_port, dst_port;
} gw_pp_t;

/**
 * Parse a PROXY protocol header at the start of buf[0..len). Returns its length in bytes
 * (> 0) and fills *out; 0 when the bytes so far are a valid beginning and more are
 * needed; -1 when they cannot be one (*why gets a static reason: not a PROXY header, bad
 * version or command, bad address or port, line or header too long, address block
 * shorter than its family needs). Only the first GW_PP_V1_MAX / GW_PP_V2_MAX bytes are
 * ever looked at.
 */
int gw_pp_parse(const unsigned char *buf, size_t len, gw_pp_t *out, const char **why);

/**
 * Read the header from fd (non-blocking) without reading past it: peeks, parses, then
 * consumes exactly the header. Returns 1 (done, *out filled), 0 (incomplete: wait for
 * more input), -1 (malformed: *why set; or the peer closed or failed first: *why says so,
 * errno kept).
 */
int gw_pp_read(int fd, gw_pp_t *out, const char **why);

/** Read and drop what fd holds now (non-blocking; at most 64 KiB), so that closing it
 * sends FIN rather than RST. */
void gw_pp_discard(int fd);

/**
 * Write a version 1 header naming src (the client) and dst (the address it connected
 * to) into out (cap bytes, at least GW_PP_V1_MAX + 1). Addresses of different families,
 * or not IPv4/IPv6, give "PROXY UNKNOWN\r\n". Returns the length (no NUL counted).
 */
size_t gw_pp_write_v1(char *out, size_t cap, const struct sockaddr *src,
                      const struct sockaddr *dst);

#endif
