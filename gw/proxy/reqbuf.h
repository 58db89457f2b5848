/*
 * A buffered request body (proxy_request_buffering on, issue #23, as nginx): read whole
 * from the client before the upstream is contacted, decoded when chunked, in memory up to
 * client_body_buffer_size and then in an unnamed temporary file, up to
 * client_max_body_size; sent upstream with Content-Length, and replayable for a retry.
 */
#ifndef GW_PROXY_REQBUF_H
#define GW_PROXY_REQBUF_H

#include <stddef.h>
#include <stdint.h>

#include "http/parser.h"

struct gw_conn;

typedef struct gw_reqbuf {
    char *mem; /* the first bytes (mem_cap at most) */
    size_t mem_len, mem_cap;
    int fd;         /* the temporary file with the rest, or -1 */
    uint64_t total; /* body bytes held */
    int chunked;
    gw_http_chunked_t dec;
    uint64_t left; /* Content-Length bytes still to read */
    int expect_continue, continue_sent;
    int done;
} gw_reqbuf_t;

/**
 * A buffer for the body of c's current request (chunked, or content_length bytes), with
 * mem_cap bytes of memory. Aborts when out of memory (as the worker's other buffers).
 */
gw_reqbuf_t *gw_reqbuf_new(int chunked, uint64_t content_length, size_t mem_cap,
                           int expect_continue);

/** Read request body bytes of HTTP/1.1 client c into its empty input buffer (c->s.in).
 * Returns 1 when some arrived, 0 to wait, -1 when the client is gone (logged). */
int gw_reqbuf_recv(struct gw_conn *c);

/**
 * Read what the client has sent of the body (c->in first, then the connection) into b.
 * Returns 1 when the body is complete, 0 to wait for the client, -1 when the client is
 * gone (logged), -400 on a malformed chunked body (a bad chunk size line...), -413 over
 * max_body (0 = no limit), -500 when the temporary file cannot be written (logged).
 * Bytes after the body (a pipelined request) stay in c->in.
 */
int gw_reqbuf_fill(gw_reqbuf_t *b, struct gw_conn *c, uint64_t max_body);

/**
 * Append n body bytes that arrive unframed (an HTTP/2 stream's DATA: b made with chunked
 * 0 and the Content-Length, or UINT64_MAX when unknown). Returns 0, -413 when the body
 * would pass max_body (0 = no limit), -500 when the temporary file cannot be written
 * (logged with peer, the client's address).
 */
int gw_reqbuf_add(gw_reqbuf_t *b, const char *s, size_t n, uint64_t max_body, const char *peer);

/** Copy up to cap body bytes from offset off into out; returns how many (0 at the end or
 * on a read error of the temporary file, logged). */
size_t gw_reqbuf_read(gw_reqbuf_t *b, uint64_t off, char *out, size_t cap);

/** Free b and close its file. NULL accepted. */
void gw_reqbuf_free(gw_reqbuf_t *b);

#endif
