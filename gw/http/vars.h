/*
 * Variables of a request (nginx's names), for log_format, add_header, proxy_set_header and
 * return (issue #23): $remote_addr $remote_port $request $request_method $request_uri
 * $status $body_bytes_sent $bytes_sent $request_time $msec $time_iso8601 $time_local
 * $connection $http_NAME $host $server_name $scheme $ssl_protocol $ssl_cipher $ssl_curve
 * $ssl_session_reused $ssl_server_name $ssl_client_s_dn $ssl_client_i_dn
 * $ssl_client_verify $ssl_client_fingerprint $upstream_addr $upstream_status
 * $upstream_response_time $proxy_protocol_addr, plus $uri $args $server_port
 * $server_protocol $http_NAME and $pid.
 *
 * Also what a connection keeps for them (gw_conn_vars_t, a member of gw_conn_t): the TCP
 * peer and the PROXY protocol header's client; and what a request keeps (gw_req_vars_t, a
 * member of gw_req_t): its settings, start, the real client address (set_real_ip_from /
 * real_ip_header: per request, so each HTTP/2 stream has its own), a copy of the request
 * head for variables read after the head left the input buffer, and the upstream's
 * address, status and timing.
 *
 * Every function takes the request (gw_req_t, http/req.h: an HTTP/1.1 request or an HTTP/2
 * stream's) and reads the TLS and the addresses of its transport connection (r->conn):
 * one code path for both protocols.
 */
#ifndef GW_HTTP_VARS_H
#define GW_HTTP_VARS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct gw_conn;
struct gw_loc_settings;
struct gw_req;

/** What a connection keeps for the variables and the client address (zeroed with the
 * connection; addresses in binary, written as text only when asked for: issue #21's
 * memory per idle connection). */
typedef struct gw_conn_vars {
    uint64_t serial;               /* $connection */
    unsigned char tcp_addr[16];    /* the TCP peer (network order; 4 bytes for IPv4) */
    unsigned char pp_addr[16];     /* the PROXY protocol header's client */
    uint16_t tcp_port, pp_port;    /* 0 when unknown */
    uint8_t tcp_family, pp_family; /* AF_INET / AF_INET6; pp: 0 = none */
} gw_conn_vars_t;

/** What a request keeps for the variables (gw_req_t.v, http/req.h: given back with the
 * request block). */
typedef struct gw_req_vars {
    const struct gw_loc_settings *loc; /* the settings serving the request (add_header,
                                          error_page, allow/deny), NULL: the server's */
    char *head;                        /* copy of the request head (malloc), or NULL */
    int64_t start_us;                  /* wall clock, microseconds: $request_time */
    int64_t upstream_start_us;         /* monotonic: first connect of this request */
    uint64_t head_bytes;               /* bytes of the response head, for $bytes_sent */
    int upstream_status;
    int in_error_page;       /* an error_page answer is being built */
    const char *proxy_host;  /* $proxy_host: the proxied request's upstream name */
    unsigned char addr[16];  /* the client after real_ip: allow/deny, $remote_addr */
    uint16_t port;           /* $remote_port: 0 when unknown (empty) */
    uint8_t family;          /* AF_INET / AF_INET6, 0: the connection's TCP peer */
    char addr_text[46];      /* addr as text (r->peer_text points here when set) */
    char upstream_addr[128]; /* "ADDR:PORT[, ADDR:PORT...]" */
} gw_req_vars_t;

/** Growable output of an expansion; s is NUL-terminated, len bytes. */
typedef struct gw_vbuf {
    char *s;
    size_t len, cap;
} gw_vbuf_t;

/** Append n bytes of s to b (grown as needed: abort() on out of memory, as the
 * connections' buffers); b->s stays NUL-terminated. */
void gw_vbuf_add(gw_vbuf_t *b, const char *s, size_t n);
/** Append the string s. */
void gw_vbuf_str(gw_vbuf_t *b, const char *s);
/** Free b's text; b is empty (and usable) again. */
void gw_vbuf_free(gw_vbuf_t *b);

/** The connection was accepted from peer (plen bytes): fills the TCP fields, the serial. */
void gw_vars_accepted(struct gw_conn *c, const struct sockaddr *peer, socklen_t plen);

/**
 * The head of r was parsed (HTTP/1.1's route_request, an HTTP/2 stream's END_HEADERS;
 * before any handler): records its start, drops header fields with '_' in their name
 * unless underscores_in_headers is on (nginx: they are neither read nor passed upstream),
 * applies set_real_ip_from/real_ip_header to r alone (r->peer_text and r's client address
 * start as the TCP peer's, so the requests of a keep-alive connection and the streams of
 * an HTTP/2 one are independent), and, for HTTP/1.1 only, copies the head when the server
 * will read variables after the head leaves the connection's input buffer (custom log
 * format, add_header). An HTTP/2 stream's header list lives as long as the stream.
 */
void gw_vars_request(struct gw_req *r);

/** The request's memory (the head copy) is given back; idempotent. rv must be zeroed when
 * its request block is taken (http/req.c gw_req_take): error answers read it before a
 * head is parsed; gw_req_give calls it. */
void gw_vars_release(gw_req_vars_t *rv);

/**
 * Append the value of variable name[0..nlen) (without '$') to out. Returns 1, or 0 when
 * the name is unknown (nothing appended). A value that does not exist is empty (nginx
 * logs "-" for it: see gw_logfmt_write).
 */
int gw_vars_eval(const struct gw_req *r, const char *name, size_t nlen, gw_vbuf_t *out);

/**
 * At t (pointing at a '$'): the variable reference "$name" or "${name}" (name: letters,
 * digits, '_'). Returns the bytes it takes (0 when t is no reference: a lone '$') and
 * sets *name and *nlen.
 */
size_t gw_vars_ref(const char *t, const char **name, size_t *nlen);

/**
 * Expand the "$name" and "${name}" variables of text into out; unknown names stay
 * literal, as a '$' not followed by a name does. With header != 0, control characters of
 * values are dropped (a value never ends a header line).
 */
void gw_vars_expand(const struct gw_req *r, const char *text, int header, gw_vbuf_t *out);

/** How gw_vars_expand_fn appends a variable's value v (n bytes) to out. */
typedef void (*gw_vars_put_fn)(gw_vbuf_t *out, const char *v, size_t n, void *arg);

/** gw_vars_expand with each value appended by put (arg passed through): the access log's
 * escaping (http/logfmt.c), a header line's filter. Literal text and unknown names are
 * appended as they are. */
void gw_vars_expand_fn(const struct gw_req *r, const char *text, gw_vbuf_t *out, gw_vars_put_fn put,
                       void *arg);

/** The proxy tries upstream server text ("ADDR:PORT") for request r: appended to
 * $upstream_addr (", " between tries), the first try starts $upstream_response_time. */
void gw_vars_upstream_try(struct gw_req *r, const char *text);

/* ---- access (http/access.c) ---- */

/** allow/deny of the request's settings l (its location's or its server's) against r's
 * client address (after real_ip): 1 when denied (answer 403), 0 when allowed. */
int gw_access_denied(const struct gw_req *r, const struct gw_loc_settings *l);

/** set_real_ip_from / real_ip_header for request r (called by gw_vars_request): r's
 * client address and r->peer_text. */
void gw_access_real_ip(struct gw_req *r);

/**
 * listen ... proxy_protocol: read the header (net/proxy_protocol.h) before anything else
 * of the connection (the socket layer's preface, before the TLS handshake). Returns 1 when
 * it has been read ($proxy_protocol_addr/_port set), 0 to wait for more bytes, -1 when the
 * header is malformed or the connection ended first (logged; the caller closes).
 */
int gw_access_proxy_protocol(struct gw_conn *c);

/* ---- response headers and error pages (http/headers.c) ---- */

/** Append the add_header fields of r's settings for a response with status (those marked
 * `always`, or all for 200 201 204 206 301 302 303 304 307 308) to out as "Name: value\r\n"
 * lines, variables expanded (a field whose value is empty is left out, as nginx does);
 * counted in r's $bytes_sent for HTTP/1.1. Called by both protocols' heads and the proxy. */
void gw_headers_add(struct gw_req *r, int status, gw_vbuf_t *out);

/**
 * error_page: when the request's settings have a page for status, answer with it (the
 * file under root with the original status or =CODE, or a redirect) and return 1; 0
 * when there is none (or the page cannot be read: the built-in page is sent by the
 * caller). Never recurses.
 */
int gw_error_page(struct gw_req *r, int status);

/**
 * ssl_verify_client: when r's server block asks for a client certificate and the one of
 * r's connection (for an HTTP/2 stream the connection it came on) is missing (`on`) or
 * invalid, answer r with nginx's 400 page ("No required SSL certificate was sent" / "The
 * SSL certificate error"), close after it, and return 1; else 0.
 */
int gw_headers_client_cert(struct gw_req *r);

/* ---- access log formats (http/logfmt.c) ---- */

/** Write r's access log line in its server's log_format (escape=default|json), to fd.
 * Returns 1 when written with a custom format, 0 when the server uses combined. */
int gw_logfmt_write(const struct gw_req *r, int fd);

#endif
