/*
 * tlsgate configuration: the parsed, merged form of an nginx-like config file.
 *
 * The syntax is nginx's: `name arg...;` and `name arg... { ... }`, `#` comments,
 * single- or double-quoted strings with backslash escapes. Directives are described
 * by one declarative table (gw/conf/directives.c); docs/config.md is generated from
 * it by gw_conf_write_docs() (program `conf_docs`, target `conf_docs_md`) and the test
 * `conf_docs_in_sync` keeps the two in sync.
 *
 * Ownership: everything reachable from a gw_conf_t is owned by it and freed by
 * gw_conf_free(). Strings are NUL-terminated heap copies.
 */
#ifndef GW_CONF_CONF_H
#define GW_CONF_CONF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "conf/deploy.h"

/* Log levels, nginx's names and order. */
enum gw_log_level {
    GW_LOG_EMERG = 0,
    GW_LOG_ALERT,
    GW_LOG_CRIT,
    GW_LOG_ERROR,
    GW_LOG_WARN,
    GW_LOG_NOTICE,
    GW_LOG_INFO,
    GW_LOG_DEBUG,
};

/* ssl_protocols bits */
#define GW_PROTO_TLSV1 0x01u
#define GW_PROTO_TLSV1_1 0x02u
#define GW_PROTO_TLSV1_2 0x04u
#define GW_PROTO_TLSV1_3 0x08u

/* ssl_session_cache modes */
enum gw_session_cache {
    GW_SESSION_CACHE_UNSET = -1,
    GW_SESSION_CACHE_OFF = 0, /* clients are told sessions cannot be reused */
    GW_SESSION_CACHE_NONE,    /* no cache, no promise (nginx "none") */
    GW_SESSION_CACHE_BUILTIN, /* OpenSSL's per-process cache, size in entries */
    GW_SESSION_CACHE_SHARED,  /* shared memory between the workers (tls/sesscache.h);
                                  builtin may be given too (ssl_session_cache_size > 0) */
    GW_SESSION_CACHE_REDIS,   /* redis://HOST:PORT[/DB]: a fleet's cache (net/redis.h) */
};

#define GW_UNSET_INT (-1)
#define GW_UNSET_MS ((int64_t)-1)
#define GW_UNSET_SIZE ((int64_t)-1)

/** A list of heap strings. */
typedef struct gw_strlist {
    char **v;
    size_t n;
} gw_strlist_t;

/** `ssl_certificate` / `ssl_certificate_key`, paired in order of appearance. */
typedef struct gw_cert_pair {
    char *cert;    /* absolute path (relative paths are resolved against the prefix) */
    char *key;     /* absolute path; NULL until the matching ssl_certificate_key is seen */
    int cert_line; /* line of the ssl_certificate directive (0 if none), for messages */
    int key_line;  /* line of the ssl_certificate_key directive (0 if none) */
} gw_cert_pair_t;

/** ssl_async_notify: how a paused async job's completion reaches the worker */
enum gw_async_notify {
    GW_ASYNC_NOTIFY_CALLBACK = 0, /* SSL_CTX_set_async_callback (cheapest) */
    GW_ASYNC_NOTIFY_FD,           /* the job's wait fds, polled with epoll */
};

/** `ssl_provider NAME [{ path DIR; PARAM VALUE; ... }]` */
typedef struct gw_provider_conf {
    char *name;
    char *path;                 /* directory holding NAME.so; NULL = OpenSSL's module dir */
    struct gw_conf_cmd *params; /* PARAM VALUE pairs passed to the provider */
    size_t n_params;
    int line;
} gw_provider_conf_t;

/** `ssl_conf_command NAME VALUE` */
typedef struct gw_conf_cmd {
    char *name;
    char *value;
} gw_conf_cmd_t;

/**
 * Settings that may be given at http and server level (server inherits from http
 * in the merge step; GW_UNSET_* marks "not given").
 */
typedef struct gw_srv_settings {
    int64_t keepalive_timeout_ms;      /* default 75s */
    int keepalive_requests;            /* default 1000 */
    int64_t client_header_timeout_ms;  /* default 60s; also bounds the TLS handshake */
    int64_t client_header_buffer_size; /* bytes, default 1k */
    int large_header_buffers_num;      /* default 4 */
    int64_t large_header_buffers_size; /* bytes, default 8k */
    int64_t send_timeout_ms;           /* default 60s */
    char *access_log;                  /* path, or NULL = off; default off */
    int ssl_async;                     /* 0/1, default 0: SSL_MODE_ASYNC (accelerators) */
    int ssl_async_notify;              /* enum gw_async_notify, default callback */
    int access_log_set;                /* 1 once access_log was given at this level */

    unsigned ssl_protocols;          /* GW_PROTO_* bits; 0 = unset; default TLSv1.2 TLSv1.3 */
    char *ssl_ciphers;               /* default "HIGH:!aNULL:!MD5" (TLS <= 1.2 list) */
    char *ssl_ecdh_curve;            /* group list, or "auto" (default): tls/tls.c */
    int ssl_prefer_server_ciphers;   /* 0/1, default 0 */
    int ssl_session_cache;           /* enum gw_session_cache, default NONE */
    int ssl_session_cache_size;      /* entries for builtin, default 20480 */
    int ssl_session_tickets;         /* 0/1, default 1 */
    char *ssl_session_cache_name;    /* shared:NAME:SIZE zone name, else NULL */
    int64_t ssl_session_cache_bytes; /* shared:NAME:SIZE zone size in bytes */
    int64_t ssl_session_timeout_ms;  /* default 5m (nginx) */
    char *ssl_session_cache_redis;   /* redis://HOST:PORT[/DB], else NULL */
    int64_t ssl_session_cache_redis_timeout_ms; /* timeout=MS, default 100 */
    gw_strlist_t ssl_session_ticket_keys;       /* ssl_session_ticket_key FILE..., absolute paths,
                                             first encrypts; server inherits http's if none */
    int ssl_session_ticket_key_line;            /* line of the first ssl_session_ticket_key */
    gw_conf_cmd_t *conf_cmds;                   /* ssl_conf_command, in order; http's come first */
    size_t n_conf_cmds;
    gw_cert_pair_t *certs; /* server inherits http's only if it has none */
    size_t n_certs;
    int ssl_stapling;                 /* 0/1, default 0 (tls/ocsp.h) */
    int ssl_stapling_files_inherited; /* 1: the files are http's, not this server's own */
    gw_strlist_t ssl_stapling_files;  /* absolute paths of DER OCSP responses; a server
                                          inherits http's only if it has none */
    int64_t ssl_handshake_timeout_ms; /* default 10s: absolute, from accept */
    int limit_conn_per_ip;            /* 0 = off (default); per worker, checked at accept */
    int ssl_reject_handshake;         /* 0/1, default 0: unrecognized_name alert */
    char *ssl_password_file;          /* passphrases for encrypted keys, one a line; NULL */
    int sendfile;                     /* 0/1, default 0: static files by kTLS + sendfile */
    int64_t ssl_buffer_size;          /* bytes of file data per TLS record, default 16k */
    gw_deploy_srv_t dep;              /* issue #23 settings: conf/deploy.h */
    int http2;                        /* 0/1, default 0: ALPN offers h2 (also `listen .. http2`) */
    int http2_max_concurrent_streams; /* default 128 (SETTINGS_MAX_CONCURRENT_STREAMS) */
} gw_srv_settings_t;

/**
 * Settings that may be given at http, server and location level
 * (location inherits from server, server from http).
 */
typedef struct gw_loc_settings {
    char *root;         /* absolute path, default "<prefix>/html" */
    gw_strlist_t index; /* default {"index.html"}; n == 0 means unset */
    /* reverse proxy (gw/proxy, docs/proxy.md) */
    int64_t proxy_connect_timeout_ms; /* default 60s */
    int64_t proxy_read_timeout_ms;    /* default 60s: between two reads from the upstream */
    int64_t proxy_send_timeout_ms;    /* default 60s: between two writes to the upstream */
    int64_t client_max_body_size;     /* bytes, default 1m; 0 = unlimited: checked once the
                                         request's location is chosen (http/handler.c) */
    gw_conf_cmd_t *proxy_headers;     /* proxy_set_header NAME VALUE, in order; inherited
                                         as a whole by a level that sets none (nginx) */
    size_t n_proxy_headers;
    int proxy_headers_set;           /* proxy_set_header given at this level */
    gw_strlist_t proxy_hide_headers; /* proxy_hide_header NAME: response fields hidden besides
                                        nginx's default list (proxy/head.c) */
    gw_strlist_t proxy_pass_headers; /* proxy_pass_header NAME: passed although in that list;
                                        both inherited together by a level with neither (nginx) */
    gw_deploy_loc_t dep;             /* issue #23 settings: conf/deploy.h */
} gw_loc_settings_t;

enum gw_loc_match {
    GW_LOC_PREFIX = 0, /* location /path { } */
    GW_LOC_EXACT,      /* location = /path { } */
};

typedef struct gw_location {
    int match;  /* enum gw_loc_match */
    char *path; /* the URI prefix or exact URI, starts with '/' */
    gw_loc_settings_t loc;
    int return_code;    /* 0 = no return; else 200..599 or 444 (close) */
    char *return_text;  /* body text, or URL for 301/302/303/307/308; may be NULL */
    int stub_status;    /* 1: serve the status page here */
    int status_json;    /* 1: serve the JSON status (`status;`) here */
    int metrics;        /* 1: serve Prometheus metrics (`metrics;`) here */
    char *proxy_pass;   /* proxy_pass URL as given, NULL = none */
    int proxy_upstream; /* index in http.upstreams (resolved after parsing) */
    char *proxy_uri;    /* the URI part of the URL ("/x/"), NULL = pass the request's */
    const char *file;   /* where the block starts, for messages */
    int line;
} gw_location_t;

/** `listen ADDR:PORT [ssl] [http2] [reuseport] [backlog=N] [default_server]` */
typedef struct gw_listen {
    struct sockaddr_storage addr;
    socklen_t addrlen;
    char *text; /* normalised "127.0.0.1:8443" / "[::1]:8443" */
    int ssl;
    int reuseport;
    int backlog; /* default 511 */
    int default_server;
    int proxy_protocol; /* a PROXY protocol header (v1 or v2) comes first (net/proxy_protocol.h) */
    int http2;          /* `http2`: the server block speaks HTTP/2 (as `http2 on;`) */
    int line;           /* line of the listen directive (file: the server's), for messages */
} gw_listen_t;

typedef struct gw_server {
    gw_listen_t *listens; /* at least one: a server without listen is an error */
    size_t n_listens;
    gw_strlist_t server_names; /* lower-cased "example.com", "*.example.com", or "" (requests
                                  without a host name); {""} when not given, never empty */
    gw_srv_settings_t srv;
    gw_loc_settings_t loc;
    gw_location_t *locations; /* in file order; matching picks exact first, then longest prefix */
    size_t n_locations;
    const char *file;
    int line;
} gw_server_t;

/** `server ADDR:PORT [weight=N] [max_fails=N] [fail_timeout=TIME] [backup]` (upstream) */
typedef struct gw_upstream_server {
    struct sockaddr_storage addr;
    socklen_t addrlen;
    char *text;              /* "127.0.0.1:8080" */
    int weight;              /* default 1 */
    int max_fails;           /* default 1; 0 = never marked down */
    int64_t fail_timeout_ms; /* default 10s */
    int backup;
    int line;
} gw_upstream_server_t;

/** `upstream NAME { server ...; keepalive N; ... }`, or the implicit one of a
 * `proxy_pass http://ADDR:PORT` (keepalive 0, as nginx). */
typedef struct gw_upstream_conf {
    char *name;
    gw_upstream_server_t *servers;
    size_t n_servers;
    int keepalive;                /* idle connections cached per worker; 0 = none */
    int keepalive_requests;       /* requests per upstream connection, default 1000 */
    int64_t keepalive_timeout_ms; /* idle connection lifetime, default 60s */
    int implicit;
    const char *file;
    int line;
} gw_upstream_conf_t;

/** `stream { server { listen ADDR:PORT ssl; proxy_pass ...; } }` (TCP termination) */
typedef struct gw_stream_server {
    gw_server_t server;               /* listens and ssl_* settings (no locations) */
    int upstream;                     /* index in stream.upstreams */
    int64_t proxy_timeout_ms;         /* default 10m: idle time between two transfers */
    int64_t proxy_connect_timeout_ms; /* default 60s */
} gw_stream_server_t;

typedef struct gw_stream_conf {
    gw_upstream_conf_t *upstreams;
    size_t n_upstreams;
    gw_stream_server_t *servers;
    size_t n_servers;
} gw_stream_conf_t;

typedef struct gw_http_conf {
    gw_srv_settings_t srv;
    gw_loc_settings_t loc;
    gw_server_t *servers;
    size_t n_servers;
    gw_upstream_conf_t *upstreams; /* upstream blocks, then implicit ones */
    size_t n_upstreams;
} gw_http_conf_t;

typedef struct gw_conf {
    char *prefix;           /* absolute, no trailing slash (but "/" stays "/") */
    char *conf_file;        /* absolute path (gw_conf_load_file), else the name given to
                                    gw_conf_parse ("<embedded>" if NULL) */
    int daemon;             /* default 0 */
    int worker_processes;   /* 1..1024, default 1; "auto" = number of online CPUs */
    int cpu_affinity_auto;  /* worker_cpu_affinity auto */
    uint64_t *cpu_affinity; /* worker_cpu_affinity MASK..., one mask per worker (bit 0 =
                                    CPU 0); with auto: the optional mask of usable CPUs */
    size_t n_cpu_affinity;
    int64_t worker_rlimit_nofile;       /* 0 = leave alone */
    int64_t worker_shutdown_timeout_ms; /* graceful stop bound, default 10s */
    char *error_log;                    /* path or "stderr"; default "stderr" */
    int error_log_level;                /* enum gw_log_level, default GW_LOG_ERROR */
    char *pid;                          /* path; default "<state dir>/tlsgate.pid" */
    int worker_connections;             /* events { worker_connections N; } default 1024 */
    gw_provider_conf_t *providers;      /* ssl_provider, in order; "default" is always loaded */
    size_t n_providers;
    char *ssl_propquery;      /* EVP default properties, e.g. "?provider=tlsgate"; NULL */
    gw_strlist_t ssl_engines; /* ssl_engine IDs (legacy ENGINE API), in order */
    int *ssl_engine_lines;    /* line of each ssl_engine, for messages */
    int ssl_async_jobs;       /* async job pool size per worker; 0 = OpenSSL's default */
    int http_present;         /* 1 when an http block was given */
    gw_strlist_t user;        /* `user USER [GROUP]`: n = 0 (not given), 1 or 2 */
    char *working_directory;  /* absolute; NULL = leave the workers' cwd alone */
    int64_t ssl_secure_heap;  /* bytes of OpenSSL's secure heap (keys); 0 = off; 8m */
    gw_http_conf_t http;
    gw_stream_conf_t stream; /* stream block (n_servers == 0 when absent) */
    /* string storage owned by the config (file names referenced by file fields) */
    gw_strlist_t files;
} gw_conf_t;

/**
 * Accumulated error messages, each "FILE:LINE: DIRECTIVE: REASON" (DIRECTIVE is "syntax"
 * for a syntax error outside any directive; FILE is "<command line>" for -g globals), or
 * "PATH: cannot open: ..." / "PATH: cannot read: ..." from gw_conf_load_file().
 */
typedef struct gw_errlist {
    char **v;
    size_t n;
} gw_errlist_t;

/** Append a printf-formatted message to errs. Aborts on allocation failure (start-up only). */
void gw_errlist_add(gw_errlist_t *errs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** Free all messages; errs is left empty and reusable. */
void gw_errlist_clear(gw_errlist_t *errs);

/**
 * Parse configuration text into a new, merged gw_conf_t.
 *
 * name:    file name used in messages (e.g. the path, or "<embedded>").
 * text:    the configuration, len bytes, need not be NUL-terminated; NUL bytes are errors.
 * prefix:  absolute directory that relative paths resolve against (nginx -p); NULL = "/".
 * globals: extra main-context directives (nginx -g), parsed after the text as
 *          "<command line>"; may be NULL.
 * state_dir: directory used for the default pid file; absolute; NULL = prefix.
 * errs:    receives every error found (appended, in file order per pass: syntax errors
 *          first, then the others); parsing continues after an error so that all are
 *          reported (not only the first). May be NULL: messages are then dropped.
 *
 * Returns the config, or NULL when errs received at least one message. Checks done
 * here: syntax, unknown directive, directive not allowed in this block, arity, value
 * syntax and range, duplicates where a directive may appear once, an http block
 * with no server, a server with no listen, ssl listen without certificate, a
 * certificate without key. Files (certificates) are NOT opened here.
 */
gw_conf_t *gw_conf_parse(const char *name, const char *text, size_t len, const char *prefix,
                         const char *globals, const char *state_dir, gw_errlist_t *errs);

/**
 * Read the file at path and parse it as gw_conf_parse() does. A file that cannot be
 * read is reported as "PATH: cannot open: strerror" in errs; returns NULL then.
 */
gw_conf_t *gw_conf_load_file(const char *path, const char *prefix, const char *globals,
                             const char *state_dir, gw_errlist_t *errs);

/** Free a config and everything it owns; NULL is accepted. */
void gw_conf_free(gw_conf_t *conf);

/**
 * Parse "redis://HOST:PORT[/DB]" (HOST a name, an IPv4 address or [IPv6]; PORT 1..65535;
 * DB 0..15, default 0). Returns 0 and fills host (cap bytes, NUL-terminated), *port and
 * *db; or -1 after writing the reason to why (why_cap bytes).
 */
int gw_conf_parse_redis_url(const char *url, char *host, size_t cap, int *port, int *db, char *why,
                            size_t why_cap);

/** Write docs/config.md (Markdown) generated from the directive table to fp. Returns 0, or -1 on I/O error. */
int gw_conf_write_docs(void *fp /* FILE * */);

#endif
