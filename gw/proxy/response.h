/*
 * Upstream response heads (RFC 9112 §2, §4, §5, §6), for the reverse proxy. libc only, so
 * that its fuzz target (tests/fuzz/http_response.c) and unit test compile it alone.
 */
#ifndef GW_PROXY_RESPONSE_H
#define GW_PROXY_RESPONSE_H

#include <stddef.h>

/**
 * Parse an upstream response head (RFC 9112 §4, §2): status line and fields, up to the
 * empty line, in buf[0..len). Returns the head length (> 0), 0 when incomplete, -1 when
 * malformed (bad status line, obs-fold, bare CR, a field without ':', conflicting
 * Content-Length, a Transfer-Encoding whose final coding is not chunked together with
 * Content-Length). On success: *status, *minor (HTTP/1.<minor>), *has_cl and *cl (the
 * Content-Length), *chunked (0: no Transfer-Encoding, 1: final coding chunked, 2: another
 * final coding: the body ends with the connection, RFC 9112 §6.3), *conn_close
 * (Connection: close, or HTTP/1.0 without keep-alive). Exposed for tests.
 */
int gw_proxy_parse_response(const char *buf, size_t len, int *status, int *minor, int *has_cl,
                            unsigned long long *cl, int *chunked, int *conn_close);

/**
 * The next line of buf[*pos..end): *l and *ll receive it without its CRLF or LF, *pos moves
 * past it. Returns 0, or -1 when no line end is left or the line holds a bare CR.
 */
int gw_proxy_next_line(const char *buf, size_t end, size_t *pos, const char **l, size_t *ll);

/**
 * Split a field line l[0..ll) into its name (the first *nl bytes of l, a token) and its
 * value (*v and *vl: leading and trailing SP/HTAB removed). Returns 0, or -1 when the name
 * is empty or not a token, there is no ':' right after it, or the value holds a control
 * character.
 */
int gw_proxy_split_field(const char *l, size_t ll, size_t *nl, const char **v, size_t *vl);

/**
 * Iterate the elements of a comma-separated list value v[0..vl) (RFC 9110 §5.6.1): empty
 * elements are skipped. *pos starts at 0. Returns 1 with *e and *el set (OWS removed), or 0
 * at the end.
 */
int gw_proxy_list_elem(const char *v, size_t vl, size_t *pos, const char **e, size_t *el);

#endif
