/*
 * HTTP/1.1 request parsing, strict per RFC 9112 (message syntax) and RFC 9110
 * (semantics). No allocation: the parsed request points into the caller's buffer.
 */
#ifndef GW_HTTP_PARSER_H
#define GW_HTTP_PARSER_H

#include <stddef.h>
#include <stdint.h>

#define GW_HTTP_MAX_HEADERS 100 /* absolute cap on header fields in one request */

/* Limits used by gw_http_parse_request() when it is given no limits. */
#define GW_HTTP_DEFAULT_MAX_REQUEST_LINE 8192
#define GW_HTTP_DEFAULT_MAX_FIELD_LINE 8192
#define GW_HTTP_DEFAULT_MAX_HEADER_BLOCK 32768
#define GW_HTTP_DEFAULT_MAX_HEADERS GW_HTTP_MAX_HEADERS

enum gw_http_method {
    GW_HTTP_OTHER = 0, /* a syntactically valid token we do not know */
    GW_HTTP_GET,
    GW_HTTP_HEAD,
    GW_HTTP_POST,
    GW_HTTP_PUT,
    GW_HTTP_DELETE,
    GW_HTTP_OPTIONS,
    GW_HTTP_PATCH,
    GW_HTTP_TRACE,
    GW_HTTP_CONNECT,
};

typedef struct gw_http_header {
    const char *name; /* points into the buffer; not NUL-terminated */
    size_t name_len;
    const char *value; /* leading/trailing OWS removed */
    size_t value_len;
} gw_http_header_t;

/** Limits applied while parsing; see gw_http_parse_request(). */
typedef struct gw_http_limits {
    size_t max_request_line; /* bytes, excluding CRLF; longer -> 414 */
    size_t max_field_line;   /* bytes of one header field line; longer -> 431 */
    size_t max_header_block; /* bytes of request line + all fields + CRLFs; larger -> 431 */
    size_t max_headers;      /* number of fields, <= GW_HTTP_MAX_HEADERS; more -> 431 */
} gw_http_limits_t;

typedef struct gw_http_request {
    int method; /* enum gw_http_method */
    const char *method_str;
    size_t method_len;
    const char *target; /* raw request-target as sent */
    size_t target_len;
    /* origin-form path part of target (before '?'), still percent-encoded. For an
     * absolute-form target it is the path after the authority, or a "/" elsewhere in the
     * buffer when the target has none; for the asterisk-form it is the "*". */
    const char *path;
    size_t path_len;
    const char *query; /* after '?', without it; NULL if none */
    size_t query_len;
    int version_minor; /* HTTP/1.<minor>: 0 or 1 */
    gw_http_header_t headers[GW_HTTP_MAX_HEADERS];
    size_t n_headers;
    /* Interpreted fields (pointers into headers[]; NULL/0 when absent): */
    const char *host; /* Host value (or authority of an absolute-form target) */
    size_t host_len;
    int keep_alive;      /* 1 if the connection may persist after this request */
    int expect_continue; /* "Expect: 100-continue" */
    int chunked;         /* Transfer-Encoding: chunked (the only coding we accept) */
    int has_content_length;
    uint64_t content_length;
    const char *range; /* Range header value, NULL if absent or repeated */
    size_t range_len;
    /* The first field line of each of these (NULL if absent): */
    const char *if_none_match;
    size_t if_none_match_len;
    const char *if_modified_since;
    size_t if_modified_since_len;
    const char *user_agent;
    size_t user_agent_len;
    const char *referer;
    size_t referer_len;
} gw_http_request_t;

/**
 * Parse one request head (request line + header fields + empty line) from buf.
 *
 * buf/len: bytes received so far on the connection, starting at the request line.
 * limits: NULL means the GW_HTTP_DEFAULT_* limits. Every pointer stored in req points
 * into buf[0..return value).
 * Leading empty lines (CRLF) before the request line are skipped, as RFC 9112 §2.2
 * allows. Bare LF line endings are accepted (RFC 9112 §2.2 MAY); a bare CR is an error.
 *
 * Returns:
 *   > 0  the head is complete; the value is its length in bytes (the body, if any,
 *        starts at buf + return value; so does a pipelined next request); req is filled.
 *   0    incomplete: call again with more bytes (the same prefix, longer len). A limit
 *        already exceeded by the partial input is reported at once (not 0).
 *   < 0  a negated HTTP status to answer with, after which the connection is closed:
 *        -400 syntax error (request line, field syntax, whitespace before ':',
 *             obs-fold, control characters, missing Host in HTTP/1.1, more than one
 *             Host, both Content-Length and Transfer-Encoding, conflicting,
 *             malformed or empty Content-Length, a malformed Transfer-Encoding or one
 *             with a coding other than a single final "chunked": every form that could
 *             let two parsers disagree on where the body ends, RFC 9112 §11.2),
 *        -414 request line longer than limits->max_request_line,
 *        -431 a field line, the number of fields, or the whole head over the limits,
 *        -505 an HTTP major version other than 1 (HTTP/1.x, x > 1, is handled as 1.1,
 *             RFC 9110 §2.5; version 0.9 is refused).
 */
int gw_http_parse_request(const char *buf, size_t len, const gw_http_limits_t *limits,
                          gw_http_request_t *req);

/** Incremental decoder of a chunked request body (RFC 9112 §7.1). */
typedef struct gw_http_chunked {
    int state;           /* private */
    uint64_t chunk_left; /* private */
    uint64_t total;      /* data bytes decoded so far */
    size_t line_len;     /* private: bytes of the current size/trailer line */
} gw_http_chunked_t;

/** Prepare d to decode a new body. */
void gw_http_chunked_init(gw_http_chunked_t *d);

/**
 * Decode in place: consumes bytes from buf[0..*len), moves the decoded data bytes to
 * the front of buf and sets *len to their number. Chunk extensions and trailer
 * fields are parsed and discarded. Lines (size line, trailer field) longer than
 * 4096 bytes are errors.
 *
 * max_body: limit on the decoded size in bytes (0 = unlimited).
 * consumed: receives how many input bytes were consumed (less than the input when
 *           the body ended inside the buffer: the rest belongs to the next request).
 *
 * Returns 1 when the last chunk and trailers are complete, 0 when more input is
 * needed (then all input was consumed), -400 on malformed framing, -413 when the decoded
 * size passes max_body (detected on the chunk-size line, before the data arrives). On an
 * error *len still holds the data decoded before it, and later calls return the same
 * error. Chunk framing lines must end in CRLF (no bare LF, unlike the head), and the
 * trailer section is limited to 16 KiB.
 */
int gw_http_chunked_decode(gw_http_chunked_t *d, char *buf, size_t *len, size_t *consumed,
                           uint64_t max_body);

/**
 * Turn an origin-form path into a safe file-system-relative path: percent-decode
 * (RFC 3986 §2.1), merge "//" runs, resolve "." and ".." segments (RFC 3986 §5.2.4).
 * Segments are split after decoding, so "%2F" separates like "/" and "%2e%2e" is "..".
 * A trailing "/" (also one left by a final "." or "..") is kept.
 *
 * out/out_cap: destination buffer in bytes; the result is NUL-terminated and starts with '/'.
 * Returns the length of the result, or -1 when the path is invalid: not starting with
 * '/', a bad %XX escape, a decoded NUL byte, ".." above the root, or not fitting in
 * out_cap (the decoded path before dot-segment removal must fit; path_len + 1 always does).
 */
long gw_http_normalize_path(const char *path, size_t path_len, char *out, size_t out_cap);

/**
 * Parse a Range header value for a resource of `size` bytes. Only a single range
 * "bytes=A-B", "bytes=A-", "bytes=-N" is honoured.
 *
 * Returns 1 and sets [*first, *last] (inclusive) when satisfiable, 0 when the header
 * should be ignored (unknown unit, several ranges, syntax error, last < first, or a
 * suffix range of an empty resource: serve the whole resource with 200), -416 when the
 * single range is not satisfiable (first >= size, or "bytes=-0").
 */
int gw_http_parse_range(const char *value, size_t len, uint64_t size, uint64_t *first,
                        uint64_t *last);

/** The enum gw_http_method of method token m (n bytes, case-sensitive, RFC 9110 §9.1);
 * GW_HTTP_OTHER for a token we do not know. */
int gw_http_method_id(const char *m, size_t n);

/** Reason phrase for status code (e.g. 404 -> "Not Found"); "Unknown" for unknown codes. */
const char *gw_http_reason(int status);

/** Case-insensitive comparison of a token of length len with the NUL-terminated lowercase s. */
int gw_http_token_eq(const char *tok, size_t len, const char *s);

#endif
