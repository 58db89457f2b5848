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
 * peer, the real client address (set_real_ip_from / real_ip_header) and the PROXY protocol
 * header's; and what a request keeps (gw_req_vars_t, a member of gw_req_t): its settings,
 * start, a copy of the request head for variables read after the head left the input
 * buffer, and the upstream's address, status and timing.
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
    uint64_t serial;                       /* $connection */
    unsigned char tcp_addr[16];            /* the TCP peer (network order; 4 bytes for IPv4) */
    unsigned char addr[16];                /* the client after real_ip: allow/deny, $remote_addr */
    unsigned char pp_addr[16];             /* the PROXY protocol header's client */
    uint16_t tcp_port, port, pp_port;      /* port: 0 when unknown ($remote_port empty) */
    uint8_t tcp_family, family, pp_family; /* AF_INET / AF_INET6; pp: 0 = none */
    uint8_t peer_replaced;                 /* peer_text holds the real_ip address, not the peer's */
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
    char upstream_addr[128]; /* "ADDR:PORT[, ADDR:PORT...]" */
} gw_req_vars_t;

/** Growable output of an expansion; s is NUL-terminated, len bytes. */
typedef struct gw_vbuf {
    char *s;
    size_t len, cap;
} gw_vbuf_t;

void gw_vbuf_add(gw_vbuf_t *b, const char *s, size_t n);
void gw_vbuf_free(gw_vbuf_t *b);

/** The connection was accepted from peer (plen bytes): fills the TCP fields, the serial. */
void gw_vars_accepted(struct gw_conn *c, const struct sockaddr *peer, socklen_t plen);

/**
 * A request head was parsed (route_request, before any handler): records its start,
 * drops header fields with '_' in their name unless underscores_in_headers is on (nginx:
 * they are neither read nor passed upstream), applies set_real_ip_from/real_ip_header
 * (c->peer_text and the client address are the TCP peer's again first, so a keep-alive
 * connection's requests are independent), and copies the head when the server will
 * read variables after the head leaves the input buffer (custom log format, add_header).
 */
void gw_vars_request(struct gw_conn *c);

/** The request's memory (the head copy) is given back; idempotent. rv must be zeroed when
 * its request block is taken (http/req.c gw_req_take): error answers read it before a
 * head is parsed; gw_req_give calls it. */
void gw_vars_release(gw_req_vars_t *rv);

/**
 * Append the value of variable name[0..nlen) (without '$') to out. Returns 1, or 0 when
 * the name is unknown (nothing appended). A value that does not exist is empty (nginx
 * logs "-" for it: see gw_logfmt_write).
 */
int gw_vars_eval(struct gw_conn *c, const char *name, size_t nlen, gw_vbuf_t *out);

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
void gw_vars_expand(struct gw_conn *c, const char *text, int header, gw_vbuf_t *out);

/** The proxy tries upstream server text ("ADDR:PORT") for this request: appended to
 * $upstream_addr (", " between tries), the first try starts $upstream_response_time. */
void gw_vars_upstream_try(struct gw_conn *c, const char *text);

/* ---- access (http/access.c) ---- */

/** allow/deny of the request's settings l (its location's or its server's) against c's
 * client address: 1 when denied (answer 403), 0 when allowed. */
int gw_access_denied(struct gw_conn *c, const struct gw_loc_settings *l);

/** set_real_ip_from / real_ip_header for the current request (called by gw_vars_request). */
void gw_access_real_ip(struct gw_conn *c);

/**
 * listen ... proxy_protocol: read the header (net/proxy_protocol.h) before anything else
 * of the connection (the socket layer's preface, before the TLS handshake). Returns 1 when
 * it has been read ($proxy_protocol_addr/_port set), 0 to wait for more bytes, -1 when the
 * header is malformed or the connection ended first (logged; the caller closes).
 */
int gw_access_proxy_protocol(struct gw_conn *c);

/* ---- response headers and error pages (http/headers.c) ---- */

/** Append the add_header fields of the request's settings for a response with status
 * (those marked `always`, or all for 200 201 204 206 301 302 303 304 307 308) to c's
 * output: called by gw_resp_head and the proxy, before the last line of the head. */
void gw_headers_emit(struct gw_conn *c, int status);

/**
 * error_page: when the request's settings have a page for status, answer with it (the
 * file under root with the original status or =CODE, or a redirect) and return 1; 0
 * when there is none (or the page cannot be read: the built-in page is sent by the
 * caller). Never recurses.
 */
int gw_error_page(struct gw_conn *c, int status);

/**
 * ssl_verify_client: when r's server block asks for a client certificate and the one of
 * c (r's connection, or the connection its HTTP/2 stream came on) is missing (`on`) or
 * invalid, answer r with nginx's 400 page ("No required SSL certificate was sent" / "The
 * SSL certificate error"), close after it, and return 1; else 0.
 */
int gw_headers_client_cert(struct gw_conn *c, struct gw_req *r);

/* ---- access log formats (http/logfmt.c) ---- */

/** Write c's access log line in the server's log_format (escape=default|json), to fd.
 * Returns 1 when written with a custom format, 0 when the server uses combined. */
int gw_logfmt_write(struct gw_conn *c, int fd);

#endif
