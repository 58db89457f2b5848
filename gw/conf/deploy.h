/*
 * Settings of issue #23 ("what a gateway deployment needs from nginx"): response headers
 * (add_header), error pages (error_page), access rules (allow/deny), the client address
 * behind a proxy (set_real_ip_from, real_ip_header), access log formats (log_format) and
 * underscores_in_headers. Embedded in gw_srv_settings_t / gw_loc_settings_t as `dep`;
 * parsed by conf/deploy.c, whose merge functions give nginx's inheritance: a list given at
 * a level replaces the enclosing level's as a whole.
 */
#ifndef GW_CONF_DEPLOY_H
#define GW_CONF_DEPLOY_H

#include <stddef.h>
#include <stdint.h>

/** `add_header NAME VALUE [always]`: VALUE may hold variables (http/vars.h). */
typedef struct gw_add_header {
    char *name;
    char *value;
    int always; /* also on statuses other than 200 201 204 206 301 302 303 304 307 308 */
} gw_add_header_t;

/** `error_page CODE... [=[CODE]] URI`: one entry per CODE. */
typedef struct gw_error_page {
    int code;     /* the status it replaces, 300..599 */
    int new_code; /* =CODE: the status the page is sent with; 0: code itself */
    char *uri;    /* a local URI (starts with '/') or a redirect URL (http:// https://) */
} gw_error_page_t;

/** An address range: family 0 means every address (`all`). */
typedef struct gw_cidr {
    int family;             /* AF_INET, AF_INET6, or 0 for all */
    unsigned char addr[16]; /* network order, host bits cleared */
    int bits;               /* prefix length */
} gw_cidr_t;

/** `allow CIDR|all` / `deny CIDR|all`, in order: the first match decides. */
typedef struct gw_access_rule {
    gw_cidr_t cidr;
    int deny;
} gw_access_rule_t;

enum gw_log_escape { GW_LOG_ESCAPE_DEFAULT = 0, GW_LOG_ESCAPE_JSON };

/** `log_format NAME [escape=default|json] STRING...` (http level; strings joined). */
typedef struct gw_log_format {
    char *name;
    char *format;
    int escape; /* enum gw_log_escape */
    int line;
} gw_log_format_t;

typedef struct gw_deploy_loc {
    gw_add_header_t *add_headers;
    size_t n_add_headers;
    int add_headers_set;
    gw_error_page_t *error_pages;
    size_t n_error_pages;
    int error_pages_set;
    gw_access_rule_t *access;
    size_t n_access;
    int access_set;
    /* HTTPS upstreams (proxy_pass https://; tls/upstream_ctx.c, proxy/upstream_tls.c) */
    int proxy_https;      /* this location's proxy_pass is https:// (not inherited) */
    int proxy_ssl_verify; /* default off */
    char *proxy_ssl_trusted_certificate;
    int proxy_ssl_verify_depth;   /* default 1 */
    int proxy_ssl_server_name;    /* default off (nginx) */
    char *proxy_ssl_name;         /* NULL: the proxy_pass host ($proxy_host) */
    int proxy_ssl_session_reuse;  /* default on */
    unsigned proxy_ssl_protocols; /* GW_PROTO_* bits, 0: TLSv1.2 TLSv1.3 */
    char *proxy_ssl_ciphers;      /* NULL: OpenSSL's DEFAULT */
    char *proxy_ssl_certificate;  /* client certificate toward the upstream */
    char *proxy_ssl_certificate_key;
    void *proxy_ssl_ctx;             /* SSL_CTX * of an https location, built with the cycle */
    int proxy_ssl_async;             /* set with it: 0 its handshakes run synchronously; the
                                        server's ssl_async on: 1 (callback) or 2 (fd) wakes */
    int proxy_request_buffering;     /* default on: the whole body before the upstream */
    int64_t client_body_buffer_size; /* bytes kept in memory, then a temporary file; 16k */
} gw_deploy_loc_t;

typedef struct gw_deploy_srv {
    gw_cidr_t *real_ip_from; /* set_real_ip_from: trusted proxies */
    size_t n_real_ip_from;
    char *real_ip_header;       /* lower-cased field name, or "proxy_protocol"; default
                                "x-real-ip" (nginx) */
    int real_ip_recursive;      /* real_ip_recursive on|off, default off */
    int underscores_in_headers; /* default 0: a request field with '_' is dropped */
    char *access_log_format;    /* the access_log's format name; NULL = combined */
    int access_log_format_line;
    const char *access_log_format_file; /* borrowed from conf->files */
    gw_log_format_t *log_formats;       /* http level only */
    size_t n_log_formats;
    /* mutual TLS (tls/verify.c) */
    int ssl_verify_client;         /* enum gw_verify_client, default off */
    char *ssl_client_certificate;  /* CA certificates: verify, and names sent to clients */
    char *ssl_trusted_certificate; /* CA certificates: verify only (not sent) */
    int ssl_verify_depth;          /* default 1 */
    char *ssl_crl;                 /* PEM CRLs, checked for the whole chain */
    int ssl_verify_line;           /* where ssl_verify_client was given, for messages */
    int stream_proxy_protocol;     /* stream server: `proxy_protocol on` toward the upstream */
} gw_deploy_srv_t;

/** ssl_verify_client */
enum gw_verify_client {
    GW_VERIFY_OFF = 0,
    GW_VERIFY_ON,             /* a valid certificate is required */
    GW_VERIFY_OPTIONAL,       /* asked for; if sent it must be valid */
    GW_VERIFY_OPTIONAL_NO_CA, /* asked for; its chain is not checked against the CAs */
};

/**
 * Parse "ADDR", "ADDR/BITS" (IPv4 or IPv6) or "all" into *out. Returns 0, or -1 when the
 * text is not an address or the prefix length is out of range. Host bits under the prefix
 * are cleared (nginx warns; we accept).
 */
int gw_cidr_parse(const char *text, gw_cidr_t *out);

/** Does the address (family, 4 or 16 bytes in network order) fall in c? */
int gw_cidr_match(const gw_cidr_t *c, int family, const unsigned char *addr);

#endif
