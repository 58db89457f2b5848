/*
 * Unit tests of the configuration reader (gw/conf): every directive, defaults and
 * inheritance, every class of error message with its exact text, the lexer's edge cases,
 * size/time parsing, -g globals, gw_conf_load_file() and gw_conf_write_docs().
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include "unit_test.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf/conf.h"

#define PREFIX "/pfx"
#define STATE "/run/tg"
#define MINIMAL "http { server { listen 8443; } }\n"

static gw_errlist_t errs;

static int teardown(void **state)
{
    (void)state;
    gw_errlist_clear(&errs);
    return 0;
}

static void dump_errors(void)
{
    for (size_t i = 0; i < errs.n; i++)
        print_message("  error[%zu]: %s\n", i, errs.v[i]);
}

/* Parse text that must be valid. */
static gw_conf_t *parse_g(const char *text, const char *globals)
{
    gw_errlist_clear(&errs);
    gw_conf_t *c = gw_conf_parse("t.conf", text, strlen(text), PREFIX, globals, STATE, &errs);
    if (!c || errs.n) {
        print_message("unexpected errors for:\n%s\n", text);
        dump_errors();
        fail();
    }
    return c;
}

static gw_conf_t *parse(const char *text)
{
    return parse_g(text, NULL);
}

/* Parse text (len bytes) that must fail with exactly the messages in want (NULL-ended). */
static void expect_errors_len(const char *text, size_t len, const char *globals,
                              const char *const *want)
{
    gw_errlist_clear(&errs);
    gw_conf_t *c = gw_conf_parse("t.conf", text, len, PREFIX, globals, STATE, &errs);
    size_t n = 0;
    while (want[n])
        n++;
    int ok = c == NULL && errs.n == n;
    for (size_t i = 0; ok && i < n; i++)
        ok = strcmp(errs.v[i], want[i]) == 0;
    if (!ok) {
        print_message("for input:\n%.*s\nwanted %zu error(s):\n", (int)len, text, n);
        for (size_t i = 0; i < n; i++)
            print_message("  want[%zu]: %s\n", i, want[i]);
        print_message("got %zu (conf %s):\n", errs.n, c ? "returned" : "NULL");
        dump_errors();
    }
    gw_conf_free(c);
    assert_true(ok);
}

#define EXPECT_ERRORS(text, ...)                                                                   \
    expect_errors_len((text), strlen(text), NULL, (const char *const[]){__VA_ARGS__, NULL})
#define EXPECT_ERRORS_G(text, globals, ...)                                                        \
    expect_errors_len((text), strlen(text), (globals), (const char *const[]){__VA_ARGS__, NULL})

/* The one error of "http { server { listen 8443; DIRECTIVE } }" (DIRECTIVE on line 2). */
static void expect_server_error(const char *directive, const char *want)
{
    char text[8192];
    snprintf(text, sizeof(text), "http { server { listen 8443;\n%s\n} }\n", directive);
    expect_errors_len(text, strlen(text), NULL, (const char *const[]){want, NULL});
}

/* The one error of "DIRECTIVE" at main level, line 1. */
static void expect_main_error(const char *directive, const char *want)
{
    expect_errors_len(directive, strlen(directive), NULL, (const char *const[]){want, NULL});
}

static gw_server_t *server0(gw_conf_t *c)
{
    assert_true(c->http_present);
    assert_true(c->http.n_servers >= 1);
    return &c->http.servers[0];
}

/* A server-level directive on top of a minimal config; returns the conf. */
static gw_conf_t *with_server(const char *directives)
{
    char text[8192];
    snprintf(text, sizeof(text), "http { server { listen 8443; %s } }\n", directives);
    return parse(text);
}

static int64_t server_size(const char *directive)
{
    gw_conf_t *c = with_server(directive);
    int64_t v = server0(c)->loc.client_max_body_size;
    gw_conf_free(c);
    return v;
}

static int64_t server_time(const char *directive)
{
    gw_conf_t *c = with_server(directive);
    int64_t v = server0(c)->srv.send_timeout_ms;
    gw_conf_free(c);
    return v;
}

/* ---- defaults ---- */

static void check_srv_defaults(const gw_srv_settings_t *s)
{
    assert_int_equal(s->keepalive_timeout_ms, 75000);
    assert_int_equal(s->keepalive_requests, 1000);
    assert_int_equal(s->client_header_timeout_ms, 60000);
    assert_int_equal(s->client_header_buffer_size, 1024);
    assert_int_equal(s->large_header_buffers_num, 4);
    assert_int_equal(s->large_header_buffers_size, 8192);
    assert_int_equal(s->send_timeout_ms, 60000);
    assert_null(s->access_log);
    assert_int_equal(s->ssl_protocols, GW_PROTO_TLSV1_2 | GW_PROTO_TLSV1_3);
    assert_string_equal(s->ssl_ciphers, "HIGH:!aNULL:!MD5");
    assert_int_equal(s->ssl_prefer_server_ciphers, 0);
    assert_int_equal(s->ssl_session_cache, GW_SESSION_CACHE_NONE);
    assert_int_equal(s->ssl_session_cache_size, 20480);
    assert_int_equal(s->ssl_session_tickets, 1);
    assert_int_equal(s->sendfile, 0);
    assert_int_equal(s->ssl_buffer_size, 16384);
    assert_int_equal(s->n_conf_cmds, 0);
    assert_int_equal(s->n_certs, 0);
}

static void check_loc_defaults(const gw_loc_settings_t *l)
{
    assert_string_equal(l->root, PREFIX "/html");
    assert_int_equal(l->index.n, 1);
    assert_string_equal(l->index.v[0], "index.html");
    assert_int_equal(l->client_max_body_size, 1024 * 1024);
}

static void test_defaults(void **state)
{
    gw_conf_t *c = parse(MINIMAL);
    assert_string_equal(c->prefix, PREFIX);
    assert_string_equal(c->conf_file, "t.conf");
    assert_int_equal(c->daemon, 0);
    assert_int_equal(c->worker_processes, 1);
    assert_int_equal(c->cpu_affinity_auto, 0);
    assert_null(c->cpu_affinity);
    assert_int_equal(c->n_cpu_affinity, 0);
    assert_int_equal(c->worker_rlimit_nofile, 0);
    assert_int_equal(c->worker_shutdown_timeout_ms, 10000);
    assert_string_equal(c->error_log, "stderr");
    assert_int_equal(c->error_log_level, GW_LOG_ERROR);
    assert_string_equal(c->pid, STATE "/tlsgate.pid");
    assert_int_equal(c->worker_connections, 1024);
    check_srv_defaults(&c->http.srv);
    check_loc_defaults(&c->http.loc);
    gw_server_t *s = server0(c);
    assert_int_equal(c->http.n_servers, 1);
    check_srv_defaults(&s->srv);
    check_loc_defaults(&s->loc);
    assert_int_equal(s->server_names.n, 1);
    assert_string_equal(s->server_names.v[0], "");
    assert_int_equal(s->n_locations, 0);
    assert_string_equal(s->file, "t.conf");
    assert_int_equal(s->line, 1);
    assert_int_equal(s->n_listens, 1);
    gw_listen_t *l = &s->listens[0];
    assert_string_equal(l->text, "0.0.0.0:8443");
    assert_int_equal(l->backlog, 511);
    assert_int_equal(l->ssl, 0);
    assert_int_equal(l->reuseport, 0);
    assert_int_equal(l->default_server, 0);
    const struct sockaddr_in *sin = (const struct sockaddr_in *)&l->addr;
    assert_int_equal(sin->sin_family, AF_INET);
    assert_int_equal(ntohs(sin->sin_port), 8443);
    assert_int_equal(sin->sin_addr.s_addr, htonl(INADDR_ANY));
    assert_int_equal(l->addrlen, sizeof(struct sockaddr_in));
    gw_conf_free(c);
}

static void test_no_http_block(void **state)
{
    gw_conf_t *c = parse("daemon on;\n");
    assert_int_equal(c->http_present, 0);
    assert_int_equal(c->daemon, 1);
    assert_int_equal(c->http.n_servers, 0);
    gw_conf_free(c);
    c = parse("");
    assert_int_equal(c->http_present, 0);
    assert_int_equal(c->worker_processes, 1);
    gw_conf_free(c);
}

static void test_prefix_and_state_dir(void **state)
{
    gw_errlist_clear(&errs);
    gw_conf_t *c = gw_conf_parse("x", MINIMAL, strlen(MINIMAL), "/a/b//", NULL, NULL, &errs);
    assert_non_null(c);
    assert_string_equal(c->prefix, "/a/b");
    assert_string_equal(server0(c)->loc.root, "/a/b/html");
    assert_string_equal(c->pid, "/a/b/tlsgate.pid"); /* no state dir: the prefix */
    gw_conf_free(c);
    c = gw_conf_parse("x", MINIMAL, strlen(MINIMAL), "/", NULL, "/st/", &errs);
    assert_non_null(c);
    assert_string_equal(c->prefix, "/");
    assert_string_equal(server0(c)->loc.root, "/html");
    assert_string_equal(c->pid, "/st/tlsgate.pid");
    gw_conf_free(c);
    /* text need not be NUL-terminated: only len bytes are read */
    c = gw_conf_parse("x", "daemon on;daemon", 10, "/", NULL, "/", &errs);
    assert_non_null(c);
    assert_int_equal(c->daemon, 1);
    gw_conf_free(c);
    assert_int_equal(errs.n, 0);
}

/* ---- main context ---- */

static void test_main_directives(void **state)
{
    gw_conf_t *c = parse("daemon on;\n"
                         "worker_processes 4;\n"
                         "worker_cpu_affinity 0001 0010 0100 1000;\n"
                         "worker_rlimit_nofile 65536;\n"
                         "worker_shutdown_timeout 1m30s;\n"
                         "error_log logs/error.log debug;\n"
                         "pid /var/run/x.pid;\n"
                         "events { worker_connections 4096; }\n");
    assert_int_equal(c->daemon, 1);
    assert_int_equal(c->worker_processes, 4);
    assert_int_equal(c->cpu_affinity_auto, 0);
    assert_int_equal(c->n_cpu_affinity, 4);
    assert_int_equal(c->cpu_affinity[0], 1);
    assert_int_equal(c->cpu_affinity[1], 2);
    assert_int_equal(c->cpu_affinity[2], 4);
    assert_int_equal(c->cpu_affinity[3], 8);
    assert_int_equal(c->worker_rlimit_nofile, 65536);
    assert_int_equal(c->worker_shutdown_timeout_ms, 90000);
    assert_string_equal(c->error_log, PREFIX "/logs/error.log");
    assert_int_equal(c->error_log_level, GW_LOG_DEBUG);
    assert_string_equal(c->pid, "/var/run/x.pid");
    assert_int_equal(c->worker_connections, 4096);
    gw_conf_free(c);

    c = parse("daemon off; error_log stderr warn; pid run/t.pid; events { }\n");
    assert_int_equal(c->daemon, 0);
    assert_string_equal(c->error_log, "stderr");
    assert_int_equal(c->error_log_level, GW_LOG_WARN);
    assert_string_equal(c->pid, PREFIX "/run/t.pid");
    assert_int_equal(c->worker_connections, 1024);
    gw_conf_free(c);

    c = parse("error_log /var/log/e.log;\n");
    assert_string_equal(c->error_log, "/var/log/e.log");
    assert_int_equal(c->error_log_level, GW_LOG_ERROR);
    gw_conf_free(c);

    static const char *const levels[] = {"emerg", "alert",  "crit", "error",
                                         "warn",  "notice", "info", "debug"};
    for (int i = 0; i < 8; i++) {
        char text[64];
        snprintf(text, sizeof(text), "error_log stderr %s;", levels[i]);
        c = parse(text);
        assert_int_equal(c->error_log_level, i);
        gw_conf_free(c);
    }
}

static void test_worker_processes_auto(void **state)
{
    gw_conf_t *c = parse("worker_processes auto;");
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    assert_int_equal(c->worker_processes, cpus < 1 ? 1 : cpus > 512 ? 512 : cpus);
    gw_conf_free(c);
}

static void test_cpu_affinity(void **state)
{
    gw_conf_t *c = parse("worker_cpu_affinity auto;");
    assert_int_equal(c->cpu_affinity_auto, 1);
    assert_int_equal(c->n_cpu_affinity, 0);
    gw_conf_free(c);
    c = parse("worker_cpu_affinity auto 1100;");
    assert_int_equal(c->cpu_affinity_auto, 1);
    assert_int_equal(c->n_cpu_affinity, 1);
    assert_int_equal(c->cpu_affinity[0], 12);
    gw_conf_free(c);
    c = parse("worker_cpu_affinity "
              "1000000000000000000000000000000000000000000000000000000000000001;");
    assert_int_equal(c->n_cpu_affinity, 1);
    assert_true(c->cpu_affinity[0] == 0x8000000000000001ull);
    gw_conf_free(c);

    expect_main_error("worker_cpu_affinity 0000;",
                      "t.conf:1: worker_cpu_affinity: invalid value \"0000\": the mask selects "
                      "no CPU");
    expect_main_error("worker_cpu_affinity 01 012;",
                      "t.conf:1: worker_cpu_affinity: invalid value \"012\": a CPU mask is made "
                      "of 0 and 1 digits");
    expect_main_error(
        "worker_cpu_affinity 10000000000000000000000000000000000000000000000000000000000000001;",
        "t.conf:1: worker_cpu_affinity: invalid value "
        "\"10000000000000000000000000000000000000000000000000000000000000001\": a CPU mask has "
        "at most 64 digits");
    expect_main_error("worker_cpu_affinity auto 01 10;",
                      "t.conf:1: worker_cpu_affinity: invalid number of arguments");
}

/* sendfile and ssl_buffer_size (issue #21): values, inheritance, bounds */
static void test_bulk_directives(void **state)
{
    gw_conf_t *c = with_server("sendfile on;\nssl_buffer_size 4k;\n");
    gw_server_t *s = server0(c);
    assert_int_equal(s->srv.sendfile, 1);
    assert_int_equal(s->srv.ssl_buffer_size, 4096);
    gw_conf_free(c);
    c = with_server("ssl_buffer_size 512;\n");
    assert_int_equal(server0(c)->srv.ssl_buffer_size, 512);
    gw_conf_free(c);
    expect_server_error("ssl_buffer_size 511;",
                        "t.conf:2: ssl_buffer_size: invalid value \"511\": must be between 512 "
                        "and 16384");
    expect_server_error("ssl_buffer_size 32k;",
                        "t.conf:2: ssl_buffer_size: invalid value \"32k\": must be between 512 "
                        "and 16384");
    expect_server_error("ssl_buffer_size big;",
                        "t.conf:2: ssl_buffer_size: invalid value \"big\": not a size (bytes, "
                        "or with k, m or g suffix)");
    expect_server_error("sendfile yes;",
                        "t.conf:2: sendfile: invalid value \"yes\": must be \"on\" or \"off\"");
    expect_server_error("sendfile;", "t.conf:2: sendfile: invalid number of arguments");
}

static void test_main_value_errors(void **state)
{
    expect_main_error("worker_processes 0;", "t.conf:1: worker_processes: invalid value \"0\": "
                                             "must be between 1 and 512");
    expect_main_error("worker_processes many;",
                      "t.conf:1: worker_processes: invalid value \"many\": not a number");
    expect_main_error("worker_rlimit_nofile -5;",
                      "t.conf:1: worker_rlimit_nofile: invalid value \"-5\": not a number");
    expect_main_error("error_log stderr loud;",
                      "t.conf:1: error_log: invalid value \"loud\": must be debug, info, notice, "
                      "warn, error, crit, alert or emerg");
    expect_main_error("error_log syslog:server=x;",
                      "t.conf:1: error_log: invalid value \"syslog:server=x\": only a file or "
                      "\"stderr\" is supported");
    expect_main_error("pid '';", "t.conf:1: pid: invalid value \"\": empty path");
    expect_main_error("events { worker_connections 0; }",
                      "t.conf:1: worker_connections: invalid value \"0\": must be between 1 and "
                      "1048576");
}

/* ---- http and server ---- */

static void test_server_directives(void **state)
{
    gw_conf_t *c = with_server("access_log logs/access.log combined;\n"
                               "keepalive_timeout 5s;\n"
                               "keepalive_requests 0;\n"
                               "client_header_timeout 10s;\n"
                               "client_header_buffer_size 2k;\n"
                               "large_client_header_buffers 8 16k;\n"
                               "client_max_body_size 0;\n"
                               "send_timeout 500ms;\n"
                               "ssl_certificate certs/a.pem;\n"
                               "ssl_certificate_key /keys/a.key;\n"
                               "ssl_protocols TLSv1.3;\n"
                               "ssl_ciphers ECDHE+AESGCM;\n"
                               "ssl_conf_command Options -SessionTicket;\n"
                               "ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256;\n"
                               "ssl_prefer_server_ciphers on;\n"
                               "ssl_session_cache builtin:1000;\n"
                               "ssl_session_tickets off;\n"
                               "root /srv/www/;\n"
                               "index a.html b.html;\n"
                               "index c.html;\n");
    gw_server_t *s = server0(c);
    assert_string_equal(s->srv.access_log, PREFIX "/logs/access.log");
    assert_int_equal(s->srv.access_log_set, 1);
    assert_int_equal(s->srv.keepalive_timeout_ms, 5000);
    assert_int_equal(s->srv.keepalive_requests, 0);
    assert_int_equal(s->srv.client_header_timeout_ms, 10000);
    assert_int_equal(s->srv.client_header_buffer_size, 2048);
    assert_int_equal(s->srv.large_header_buffers_num, 8);
    assert_int_equal(s->srv.large_header_buffers_size, 16384);
    assert_int_equal(s->loc.client_max_body_size, 0);
    assert_int_equal(s->srv.send_timeout_ms, 500);
    assert_int_equal(s->srv.n_certs, 1);
    assert_string_equal(s->srv.certs[0].cert, PREFIX "/certs/a.pem");
    assert_string_equal(s->srv.certs[0].key, "/keys/a.key");
    assert_int_equal(s->srv.ssl_protocols, GW_PROTO_TLSV1_3);
    assert_string_equal(s->srv.ssl_ciphers, "ECDHE+AESGCM");
    assert_int_equal(s->srv.n_conf_cmds, 2);
    assert_string_equal(s->srv.conf_cmds[0].name, "Options");
    assert_string_equal(s->srv.conf_cmds[0].value, "-SessionTicket");
    assert_string_equal(s->srv.conf_cmds[1].name, "Ciphersuites");
    assert_string_equal(s->srv.conf_cmds[1].value, "TLS_AES_128_GCM_SHA256");
    assert_int_equal(s->srv.ssl_prefer_server_ciphers, 1);
    assert_int_equal(s->srv.ssl_session_cache, GW_SESSION_CACHE_BUILTIN);
    assert_int_equal(s->srv.ssl_session_cache_size, 1000);
    assert_int_equal(s->srv.ssl_session_tickets, 0);
    assert_string_equal(s->loc.root, "/srv/www");
    assert_int_equal(s->loc.index.n, 3);
    assert_string_equal(s->loc.index.v[0], "a.html");
    assert_string_equal(s->loc.index.v[1], "b.html");
    assert_string_equal(s->loc.index.v[2], "c.html");
    /* http keeps its defaults */
    check_srv_defaults(&c->http.srv);
    gw_conf_free(c);

    c = with_server("access_log /var/log/a.log;");
    assert_string_equal(server0(c)->srv.access_log, "/var/log/a.log");
    gw_conf_free(c);
}

static void test_inheritance(void **state)
{
    gw_conf_t *c = parse("http {\n"
                         "  keepalive_timeout 10s;\n"
                         "  access_log /log/http.log;\n"
                         "  ssl_protocols TLSv1.2;\n"
                         "  ssl_session_cache builtin;\n"
                         "  ssl_conf_command A 1;\n"
                         "  root /www;\n"
                         "  index home.html;\n"
                         "  client_max_body_size 2m;\n"
                         "  server {\n"
                         "    listen 1;\n"
                         "    keepalive_timeout 20s;\n"
                         "    access_log off;\n"
                         "    ssl_session_cache off;\n"
                         "    ssl_conf_command B 2;\n"
                         "    root /www2;\n"
                         "    location / { }\n"
                         "    location /x { root /x; index x.html; client_max_body_size 1g; }\n"
                         "  }\n"
                         "  server {\n"
                         "    listen 2;\n"
                         "    location /y { }\n"
                         "  }\n"
                         "  send_timeout 3s;\n"
                         "}\n");
    assert_int_equal(c->http.n_servers, 2);
    gw_server_t *a = &c->http.servers[0], *b = &c->http.servers[1];
    assert_int_equal(c->http.srv.keepalive_timeout_ms, 10000);
    assert_int_equal(a->srv.keepalive_timeout_ms, 20000);
    assert_int_equal(b->srv.keepalive_timeout_ms, 10000);
    /* set after the servers in http: still inherited */
    assert_int_equal(a->srv.send_timeout_ms, 3000);
    assert_int_equal(b->srv.send_timeout_ms, 3000);
    assert_null(a->srv.access_log);
    assert_string_equal(b->srv.access_log, "/log/http.log");
    assert_int_equal(a->srv.ssl_protocols, GW_PROTO_TLSV1_2);
    assert_int_equal(b->srv.ssl_protocols, GW_PROTO_TLSV1_2);
    assert_int_equal(a->srv.ssl_session_cache, GW_SESSION_CACHE_OFF);
    assert_int_equal(b->srv.ssl_session_cache, GW_SESSION_CACHE_BUILTIN);
    assert_int_equal(b->srv.ssl_session_cache_size, 20480);
    /* http's ssl_conf_command first, then the server's */
    assert_int_equal(a->srv.n_conf_cmds, 2);
    assert_string_equal(a->srv.conf_cmds[0].name, "A");
    assert_string_equal(a->srv.conf_cmds[1].name, "B");
    assert_string_equal(a->srv.conf_cmds[1].value, "2");
    assert_int_equal(b->srv.n_conf_cmds, 1);
    assert_string_equal(b->srv.conf_cmds[0].value, "1");
    assert_int_equal(c->http.srv.n_conf_cmds, 1);
    /* root/index: http -> server -> location */
    assert_string_equal(a->loc.root, "/www2");
    assert_string_equal(b->loc.root, "/www");
    assert_int_equal(a->n_locations, 2);
    assert_string_equal(a->locations[0].loc.root, "/www2");
    assert_string_equal(a->locations[0].loc.index.v[0], "home.html");
    assert_string_equal(a->locations[1].loc.root, "/x");
    assert_int_equal(a->locations[1].loc.index.n, 1);
    assert_string_equal(a->locations[1].loc.index.v[0], "x.html");
    assert_string_equal(b->locations[0].loc.root, "/www");
    assert_int_equal(b->locations[0].loc.index.n, 1);
    assert_string_equal(b->locations[0].loc.index.v[0], "home.html");
    /* client_max_body_size: http -> server -> location (nginx) */
    assert_int_equal(a->loc.client_max_body_size, 2 * 1048576);
    assert_int_equal(a->locations[0].loc.client_max_body_size, 2 * 1048576);
    assert_int_equal(a->locations[1].loc.client_max_body_size, 1073741824);
    assert_int_equal(b->locations[0].loc.client_max_body_size, 2 * 1048576);
    /* untouched settings: defaults everywhere */
    assert_int_equal(b->srv.keepalive_requests, 1000);
    assert_int_equal(a->srv.ssl_session_tickets, 1);
    gw_conf_free(c);
}

static void test_certificates(void **state)
{
    gw_conf_t *c = parse("http {\n"
                         "  ssl_certificate_key h.key;\n" /* key first: still pair 0 */
                         "  ssl_certificate h.pem;\n"
                         "  server { listen 443 ssl; }\n"
                         "  server { listen 444 ssl;\n"
                         "    ssl_certificate rsa.pem;\n"
                         "    ssl_certificate ec.pem;\n"
                         "    ssl_certificate_key rsa.key;\n"
                         "    ssl_certificate_key ec.key;\n"
                         "  }\n"
                         "}\n");
    assert_int_equal(c->http.srv.n_certs, 1);
    assert_string_equal(c->http.srv.certs[0].cert, PREFIX "/h.pem");
    assert_string_equal(c->http.srv.certs[0].key, PREFIX "/h.key");
    assert_int_equal(c->http.srv.certs[0].cert_line, 3);
    assert_int_equal(c->http.srv.certs[0].key_line, 2);
    gw_server_t *a = &c->http.servers[0], *b = &c->http.servers[1];
    assert_int_equal(a->srv.n_certs, 1); /* inherited */
    assert_string_equal(a->srv.certs[0].cert, PREFIX "/h.pem");
    assert_string_equal(a->srv.certs[0].key, PREFIX "/h.key");
    assert_int_equal(b->srv.n_certs, 2); /* own ones only */
    assert_string_equal(b->srv.certs[0].cert, PREFIX "/rsa.pem");
    assert_string_equal(b->srv.certs[0].key, PREFIX "/rsa.key");
    assert_string_equal(b->srv.certs[1].cert, PREFIX "/ec.pem");
    assert_string_equal(b->srv.certs[1].key, PREFIX "/ec.key");
    assert_int_equal(a->listens[0].ssl, 1);
    gw_conf_free(c);
}

static void test_certificate_errors(void **state)
{
    EXPECT_ERRORS("http {\n"
                  "  ssl_certificate a.pem;\n"
                  "  ssl_certificate b.pem;\n"
                  "  ssl_certificate_key a.key;\n"
                  "  server { listen 443 ssl;\n"
                  "    ssl_certificate_key x.key;\n"
                  "  }\n"
                  "}\n",
                  "t.conf:6: ssl_certificate_key: key \"/pfx/x.key\" has no matching "
                  "ssl_certificate",
                  "t.conf:3: ssl_certificate: certificate \"/pfx/b.pem\" has no matching "
                  "ssl_certificate_key");
    EXPECT_ERRORS("http { server {\n listen 443 ssl;\n listen 80;\n} }\n",
                  "t.conf:2: listen: no ssl_certificate defined for the listen 0.0.0.0:443 ssl");
    /* a broken ssl_certificate is reported once, not again as missing */
    EXPECT_ERRORS("http { server { listen 443 ssl; ssl_certificate ''; ssl_certificate_key k; } }",
                  "t.conf:1: ssl_certificate: invalid value \"\": empty path",
                  "t.conf:1: ssl_certificate_key: key \"/pfx/k\" has no matching "
                  "ssl_certificate");
}

static void test_listen(void **state)
{
    gw_conf_t *c = with_server("listen 127.0.0.1:8080 default_server;\n"
                               "listen *:8081;\n"
                               "listen [::1]:8443 ssl reuseport backlog=100;\n"
                               "listen [::];\n"
                               "listen 10.1.2.3;\n"
                               "ssl_certificate a; ssl_certificate_key b;\n");
    gw_server_t *s = server0(c);
    assert_int_equal(s->n_listens, 6);
    assert_string_equal(s->listens[0].text, "0.0.0.0:8443");
    assert_string_equal(s->listens[1].text, "127.0.0.1:8080");
    assert_int_equal(s->listens[1].default_server, 1);
    assert_int_equal(s->listens[1].line, 1);
    assert_string_equal(s->listens[2].text, "0.0.0.0:8081");
    assert_int_equal(s->listens[2].line, 2);
    assert_string_equal(s->listens[3].text, "[::1]:8443");
    assert_int_equal(s->listens[3].ssl, 1);
    assert_int_equal(s->listens[3].reuseport, 1);
    assert_int_equal(s->listens[3].backlog, 100);
    const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&s->listens[3].addr;
    assert_int_equal(sin6->sin6_family, AF_INET6);
    assert_int_equal(ntohs(sin6->sin6_port), 8443);
    assert_true(IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr));
    assert_int_equal(s->listens[3].addrlen, sizeof(struct sockaddr_in6));
    assert_string_equal(s->listens[4].text, "[::]:80");
    assert_string_equal(s->listens[5].text, "10.1.2.3:80");
    const struct sockaddr_in *sin = (const struct sockaddr_in *)&s->listens[1].addr;
    assert_int_equal(ntohl(sin->sin_addr.s_addr), 0x7f000001);
    assert_int_equal(ntohs(sin->sin_port), 8080);
    gw_conf_free(c);

    /* the same address as default_server in two servers */
    EXPECT_ERRORS("http {\n"
                  "server { listen 80 default_server; }\n"
                  "server { listen 0.0.0.0:80 default_server; }\n"
                  "server { listen 81 default_server; listen 82; }\n"
                  "}\n",
                  "t.conf:3: listen: duplicate default server for 0.0.0.0:80 (first at t.conf:2)");
    EXPECT_ERRORS("http { server { listen 80;\n listen *:80; } }",
                  "t.conf:2: listen: duplicate listen 0.0.0.0:80 in this server (line 1)");

    expect_server_error("listen localhost:80;",
                        "t.conf:2: listen: invalid value \"localhost:80\": host names are not "
                        "supported, use a numeric address");
    expect_server_error("listen 1.2.3.256:80;",
                        "t.conf:2: listen: invalid value \"1.2.3.256:80\": invalid IPv4 address");
    expect_server_error("listen ::1:80;", "t.conf:2: listen: invalid value \"::1:80\": IPv6 "
                                          "addresses must be in brackets ([::1]:443)");
    expect_server_error("listen [::g]:80;",
                        "t.conf:2: listen: invalid value \"[::g]:80\": invalid IPv6 address");
    expect_server_error("listen [::1]x;", "t.conf:2: listen: invalid value \"[::1]x\": expected "
                                          "\":PORT\" after \"]\"");
    expect_server_error("listen 65536;", "t.conf:2: listen: invalid value \"65536\": the port "
                                         "must be a number between 1 and 65535");
    expect_server_error("listen 0;", "t.conf:2: listen: invalid value \"0\": the port must be a "
                                     "number between 1 and 65535");
    expect_server_error("listen 1.2.3.4:;", "t.conf:2: listen: invalid value \"1.2.3.4:\": the "
                                            "port must be a number between 1 and 65535");
    expect_server_error("listen :80;",
                        "t.conf:2: listen: invalid value \":80\": missing address before \":\"");
    expect_server_error("listen 81 spdy;",
                        "t.conf:2: listen: invalid value \"spdy\": unsupported listen parameter");
    expect_server_error("listen 81 backlog=0;", "t.conf:2: listen: invalid value \"backlog=0\": "
                                                "backlog must be between 1 and 65535");
    /* ADDR and at most 6 parameters (ssl http2 reuseport backlog= default_server
     * proxy_protocol) */
    expect_server_error("listen 81 ssl ssl ssl ssl ssl ssl ssl;",
                        "t.conf:2: listen: invalid number of arguments");
}

/* HTTP/2: `listen ... http2` and `http2 on` (issue #22) */
static void test_http2(void **state)
{
    (void)state;
    gw_conf_t *c = with_server("listen 81 http2; listen 82;\n");
    gw_server_t *s = server0(c);
    assert_int_equal(s->listens[0].http2, 0); /* with_server's listen 8443 */
    assert_int_equal(s->listens[1].http2, 1);
    assert_int_equal(s->listens[2].http2, 0);
    assert_int_equal(s->srv.http2, 1); /* the listen's http2 enables the server's */
    assert_int_equal(s->srv.http2_max_concurrent_streams, 128);
    gw_conf_free(c);
    c = with_server("listen 81; http2 on; http2_max_concurrent_streams 16;\n");
    s = server0(c);
    assert_int_equal(s->srv.http2, 1);
    assert_int_equal(s->srv.http2_max_concurrent_streams, 16);
    gw_conf_free(c);
    c = with_server("listen 81;\n");
    assert_int_equal(server0(c)->srv.http2, 0);
    gw_conf_free(c);
    /* with #23's proxy_protocol on the same listen */
    c = with_server("listen 83 http2 reuseport backlog=64 default_server proxy_protocol;\n");
    s = server0(c);
    assert_int_equal(s->listens[1].http2, 1);
    assert_int_equal(s->listens[1].proxy_protocol, 1);
    assert_int_equal(s->listens[1].backlog, 64);
    gw_conf_free(c);
    expect_server_error("http2 maybe;", "t.conf:2: http2: invalid value \"maybe\": must be "
                                        "\"on\" or \"off\"");
    expect_server_error("http2_max_concurrent_streams 0;",
                        "t.conf:2: http2_max_concurrent_streams: invalid value \"0\": must be "
                        "between 1 and 65536");
}

static void test_server_name(void **state)
{
    gw_conf_t *c = with_server("server_name Example.COM *.Foo.org;\n"
                               "server_name .bar.net \"\" _;\n");
    gw_server_t *s = server0(c);
    assert_int_equal(s->server_names.n, 6);
    assert_string_equal(s->server_names.v[0], "example.com");
    assert_string_equal(s->server_names.v[1], "*.foo.org");
    assert_string_equal(s->server_names.v[2], "bar.net");
    assert_string_equal(s->server_names.v[3], "*.bar.net");
    assert_string_equal(s->server_names.v[4], "");
    assert_string_equal(s->server_names.v[5], "_");
    gw_conf_free(c);

    expect_server_error("server_name ~^www\\d+;",
                        "t.conf:2: server_name: invalid value \"~^www\\\\d+\": regular "
                        "expression server names are not supported");
    expect_server_error("server_name www.example.*;",
                        "t.conf:2: server_name: invalid value \"www.example.*\": a wildcard is "
                        "only allowed as the first label (\"*.example.com\")");
    expect_server_error("server_name a/b;",
                        "t.conf:2: server_name: invalid value \"a/b\": a server name may contain "
                        "letters, digits, \".\", \"-\" and \"_\" only");
    expect_server_error("server_name *.;", "t.conf:2: server_name: invalid value \"*.\": a "
                                           "wildcard needs a domain after it");
}

/* ---- location ---- */

static void test_locations(void **state)
{
    gw_conf_t *c = with_server("location / { }\n"
                               "location = /exact { return 404; }\n"
                               "location =/e2 { return 200 \"hello\\n\"; }\n"
                               "location ^~ /static/ { root /s; index i.htm; }\n"
                               "location /old { return 301 https://example.com/new; }\n"
                               "location /ext { return https://example.org/; }\n"
                               "location /drop { return 444; }\n"
                               "location = /status { stub_status; }\n");
    gw_server_t *s = server0(c);
    assert_int_equal(s->n_locations, 8);
    gw_location_t *l = s->locations;
    assert_int_equal(l[0].match, GW_LOC_PREFIX);
    assert_string_equal(l[0].path, "/");
    assert_int_equal(l[0].return_code, 0);
    assert_null(l[0].return_text);
    assert_int_equal(l[0].stub_status, 0);
    assert_int_equal(l[0].line, 1);
    assert_string_equal(l[0].file, "t.conf");
    assert_int_equal(l[1].match, GW_LOC_EXACT);
    assert_string_equal(l[1].path, "/exact");
    assert_int_equal(l[1].return_code, 404);
    assert_null(l[1].return_text);
    assert_int_equal(l[2].match, GW_LOC_EXACT);
    assert_string_equal(l[2].path, "/e2");
    assert_int_equal(l[2].return_code, 200);
    assert_string_equal(l[2].return_text, "hello\n");
    assert_int_equal(l[3].match, GW_LOC_PREFIX);
    assert_string_equal(l[3].loc.root, "/s");
    assert_string_equal(l[3].loc.index.v[0], "i.htm");
    assert_int_equal(l[4].return_code, 301);
    assert_string_equal(l[4].return_text, "https://example.com/new");
    assert_int_equal(l[5].return_code, 302);
    assert_string_equal(l[5].return_text, "https://example.org/");
    assert_int_equal(l[6].return_code, 444);
    assert_int_equal(l[7].stub_status, 1);
    assert_int_equal(l[7].line, 8);
    gw_conf_free(c);

    expect_server_error("location ~ \\.php$ { }", "t.conf:2: location: invalid value \"~\": "
                                                  "regular expression locations are not supported");
    expect_server_error("location @named { }", "t.conf:2: location: invalid value \"@named\": "
                                               "named locations are not supported");
    expect_server_error("location foo { }", "t.conf:2: location: invalid value \"foo\": the path "
                                            "must start with \"/\"");
    expect_server_error("location != /a { }", "t.conf:2: location: invalid value \"!=\": the "
                                              "modifier must be \"=\" or \"^~\"");
    EXPECT_ERRORS("http { server { listen 1;\n location /a { }\n location /a { } } }",
                  "t.conf:3: location: duplicate location \"/a\" (line 2)");
    expect_server_error("location / { location /a { } }",
                        "t.conf:2: location: directive is not allowed here");
    expect_server_error("location / { listen 80; }",
                        "t.conf:2: listen: directive is not allowed here");
    expect_server_error("location / { keepalive_timeout 1s; }",
                        "t.conf:2: keepalive_timeout: directive is not allowed here");
    expect_server_error("location;", "t.conf:2: location: directive has no opening \"{\"");
    expect_server_error("location { }", "t.conf:2: location: invalid number of arguments");
}

static void test_return_errors(void **state)
{
    expect_server_error("location / { return 301; }",
                        "t.conf:2: return: invalid value \"301\": a redirect needs a URL "
                        "argument");
    expect_server_error("location / { return 308 ''; }",
                        "t.conf:2: return: invalid value \"308\": a redirect needs a URL "
                        "argument");
    expect_server_error("location / { return 600; }",
                        "t.conf:2: return: invalid value \"600\": must be a status code (200-599 "
                        "or 444) or an http:// or https:// URL");
    expect_server_error("location / { return 199 x; }",
                        "t.conf:2: return: invalid value \"199\": must be a status code (200-599 "
                        "or 444) or an http:// or https:// URL");
    expect_server_error("location / { return /relative; }",
                        "t.conf:2: return: invalid value \"/relative\": must be a status code "
                        "(200-599 or 444) or an http:// or https:// URL");
    expect_server_error("location / { return 444 bye; }",
                        "t.conf:2: return: invalid value \"bye\": 444 closes the connection and "
                        "takes no text");
    expect_server_error("location / { return 200 a b; }",
                        "t.conf:2: return: invalid number of arguments");
    expect_server_error("location / { return 200; return 204; }",
                        "t.conf:2: return: directive is duplicate");
    expect_server_error("location / { stub_status on; }",
                        "t.conf:2: stub_status: invalid number of arguments");
    expect_server_error("return 200;", "t.conf:2: return: directive is not allowed here");
}

/* ---- individual setters ---- */

static void test_ssl_settings(void **state)
{
    gw_conf_t *c = with_server("ssl_protocols TLSv1 tlsv1.1 TLSv1.2 TLSv1.3 TLSv1.2;");
    assert_int_equal(server0(c)->srv.ssl_protocols, 0x0f);
    gw_conf_free(c);
    c = with_server("ssl_session_cache builtin;");
    assert_int_equal(server0(c)->srv.ssl_session_cache, GW_SESSION_CACHE_BUILTIN);
    assert_int_equal(server0(c)->srv.ssl_session_cache_size, 20480);
    gw_conf_free(c);
    c = with_server("ssl_session_cache none;");
    assert_int_equal(server0(c)->srv.ssl_session_cache, GW_SESSION_CACHE_NONE);
    gw_conf_free(c);
    c = with_server("ssl_session_cache off;");
    assert_int_equal(server0(c)->srv.ssl_session_cache, GW_SESSION_CACHE_OFF);
    gw_conf_free(c);

    expect_server_error("ssl_protocols SSLv3 TLSv1.2;",
                        "t.conf:2: ssl_protocols: invalid value \"SSLv3\": SSL protocols are not "
                        "supported");
    expect_server_error("ssl_protocols TLSv1.4;",
                        "t.conf:2: ssl_protocols: invalid value \"TLSv1.4\": must be TLSv1, "
                        "TLSv1.1, TLSv1.2 or TLSv1.3");
    /* issue #9: shared:NAME:SIZE, alone or with builtin; redis:// */
    c = with_server("ssl_session_cache shared:SSL:10m;");
    assert_int_equal(server0(c)->srv.ssl_session_cache, GW_SESSION_CACHE_SHARED);
    assert_string_equal(server0(c)->srv.ssl_session_cache_name, "SSL");
    assert_int_equal(server0(c)->srv.ssl_session_cache_bytes, 10 << 20);
    assert_int_equal(server0(c)->srv.ssl_session_cache_size, 0);
    gw_conf_free(c);
    c = with_server("ssl_session_cache builtin:1000 shared:SSL:32k;");
    assert_int_equal(server0(c)->srv.ssl_session_cache, GW_SESSION_CACHE_SHARED);
    assert_int_equal(server0(c)->srv.ssl_session_cache_size, 1000);
    assert_int_equal(server0(c)->srv.ssl_session_cache_bytes, 32 << 10);
    gw_conf_free(c);
    c = with_server("ssl_session_cache redis://10.0.0.1:6380/2 timeout=250ms; "
                    "ssl_session_timeout 1h; ssl_session_ticket_key redis://[::1]:6379;");
    assert_int_equal(server0(c)->srv.ssl_session_cache, GW_SESSION_CACHE_REDIS);
    assert_string_equal(server0(c)->srv.ssl_session_cache_redis, "redis://10.0.0.1:6380/2");
    assert_int_equal(server0(c)->srv.ssl_session_cache_redis_timeout_ms, 250);
    assert_int_equal(server0(c)->srv.ssl_session_timeout_ms, 3600000);
    assert_int_equal(server0(c)->srv.ssl_session_ticket_keys.n, 1);
    assert_string_equal(server0(c)->srv.ssl_session_ticket_keys.v[0], "redis://[::1]:6379");
    gw_conf_free(c);
    expect_server_error("ssl_session_cache shared:SSL:16k;",
                        "t.conf:2: ssl_session_cache: invalid value \"shared:SSL:16k\": shared "
                        "cache size must be a size between 32k and 4g");
    expect_server_error("ssl_session_cache shared:S:1m shared:T:1m;",
                        "t.conf:2: ssl_session_cache: invalid value \"shared:T:1m\": shared is "
                        "given twice");
    expect_server_error("ssl_session_cache redis://h:1/99;",
                        "t.conf:2: ssl_session_cache: invalid value \"redis://h:1/99\": "
                        "\"redis://h:1/99\": the database must be 0..15");
    expect_server_error("ssl_session_cache builtin:0;",
                        "t.conf:2: ssl_session_cache: invalid value \"builtin:0\": builtin size "
                        "must be a number of sessions between 1 and 2147483647");
    expect_server_error("ssl_session_cache builtin:x;",
                        "t.conf:2: ssl_session_cache: invalid value \"builtin:x\": builtin size "
                        "must be a number of sessions between 1 and 2147483647");
    expect_server_error("ssl_session_cache off builtin;",
                        "t.conf:2: ssl_session_cache: invalid value \"off\": \"off\" must be the "
                        "only argument");
    expect_server_error("ssl_session_cache builtin builtin:5;",
                        "t.conf:2: ssl_session_cache: invalid value \"builtin:5\": builtin is "
                        "given twice");
    expect_server_error("ssl_session_cache lots;",
                        "t.conf:2: ssl_session_cache: invalid value \"lots\": must be off, none, "
                        "builtin[:N], shared:NAME:SIZE or redis://HOST:PORT[/DB]");
    expect_server_error("ssl_session_tickets maybe;",
                        "t.conf:2: ssl_session_tickets: invalid value \"maybe\": must be \"on\" "
                        "or \"off\"");
    expect_server_error("ssl_ciphers \"\";",
                        "t.conf:2: ssl_ciphers: invalid value \"\": empty value");
    expect_server_error("ssl_conf_command '' x;",
                        "t.conf:2: ssl_conf_command: invalid value \"\": empty command name");
    expect_server_error("ssl_conf_command x;",
                        "t.conf:2: ssl_conf_command: invalid number of arguments");
}

static void test_access_log_and_misc(void **state)
{
    expect_server_error("access_log a.log main;",
                        "t.conf:2: access_log: unknown log format \"main\"");
    expect_server_error("access_log off combined;",
                        "t.conf:2: access_log: invalid number of arguments");
    expect_server_error("access_log syslog:server=1.2.3.4;",
                        "t.conf:2: access_log: invalid value \"syslog:server=1.2.3.4\": only a "
                        "file is supported");
    expect_server_error("keepalive_timeout 75s 60s;",
                        "t.conf:2: keepalive_timeout: invalid value \"60s\": the header timeout "
                        "argument is not supported");
    expect_server_error("large_client_header_buffers 0 8k;",
                        "t.conf:2: large_client_header_buffers: invalid value \"0\": must be "
                        "between 1 and 1024");
    expect_server_error("large_client_header_buffers 4 0;",
                        "t.conf:2: large_client_header_buffers: invalid value \"0\": must be "
                        "between 1 and 2147483647");
    expect_server_error("large_client_header_buffers 4;",
                        "t.conf:2: large_client_header_buffers: invalid number of arguments");
    expect_server_error("client_header_buffer_size 4g;",
                        "t.conf:2: client_header_buffer_size: invalid value \"4g\": must be "
                        "between 1 and 2147483647");
    expect_server_error("keepalive_requests 2147483648;",
                        "t.conf:2: keepalive_requests: invalid value \"2147483648\": must be "
                        "between 0 and 2147483647");
    expect_server_error("index '';", "t.conf:2: index: invalid value \"\": empty value");
    expect_server_error("root '';", "t.conf:2: root: invalid value \"\": empty path");
    gw_conf_t *c = with_server("root /;");
    assert_string_equal(server0(c)->loc.root, "/");
    gw_conf_free(c);
}

static void test_sizes(void **state)
{
    assert_int_equal(server_size("client_max_body_size 0;"), 0);
    assert_int_equal(server_size("client_max_body_size 1024;"), 1024);
    assert_int_equal(server_size("client_max_body_size 16k;"), 16384);
    assert_int_equal(server_size("client_max_body_size 16K;"), 16384);
    assert_int_equal(server_size("client_max_body_size 3m;"), 3 * 1048576);
    assert_int_equal(server_size("client_max_body_size 3M;"), 3 * 1048576);
    assert_int_equal(server_size("client_max_body_size 2g;"), 2 * 1073741824LL);
    assert_int_equal(server_size("client_max_body_size 2G;"), 2 * 1073741824LL);
    assert_true(server_size("client_max_body_size 9223372036854775807;") == INT64_MAX);
    assert_true(server_size("client_max_body_size 8589934591g;") == 8589934591LL * 1073741824LL);
    expect_server_error("client_max_body_size 9223372036854775808;",
                        "t.conf:2: client_max_body_size: invalid value \"9223372036854775808\": "
                        "size too large");
    expect_server_error("client_max_body_size 9007199254740992k;",
                        "t.conf:2: client_max_body_size: invalid value \"9007199254740992k\": "
                        "size too large");
    expect_server_error("client_max_body_size 8589934592g;",
                        "t.conf:2: client_max_body_size: invalid value \"8589934592g\": size "
                        "too large");
    expect_server_error("client_max_body_size 99999999999999999999999999m;",
                        "t.conf:2: client_max_body_size: invalid value "
                        "\"99999999999999999999999999m\": size too large");
    static const char *const bad[] = {"''",   "k",   "1kb",  "-1", "+1",
                                      "1.5m", "1 k", "0x10", "1t", "m1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char d[64], want[256], shown[32];
        snprintf(d, sizeof(d), "client_max_body_size \"%s\";",
                 strcmp(bad[i], "''") == 0 ? "" : bad[i]);
        snprintf(shown, sizeof(shown), "%s", strcmp(bad[i], "''") == 0 ? "" : bad[i]);
        snprintf(want, sizeof(want),
                 "t.conf:2: client_max_body_size: invalid value \"%s\": not a size (bytes, or "
                 "with k, m or g suffix)",
                 shown);
        expect_server_error(d, want);
    }
}

static void test_times(void **state)
{
    assert_int_equal(server_time("send_timeout 75s;"), 75000);
    assert_int_equal(server_time("send_timeout 500ms;"), 500);
    assert_int_equal(server_time("send_timeout 1m;"), 60000);
    assert_int_equal(server_time("send_timeout 1h;"), 3600000);
    assert_int_equal(server_time("send_timeout 1d;"), 86400000);
    assert_int_equal(server_time("send_timeout 90;"), 90000);
    assert_int_equal(server_time("send_timeout 1m30s;"), 90000);
    assert_int_equal(server_time("send_timeout 1d2h3m4s5ms;"),
                     86400000 + 2 * 3600000 + 3 * 60000 + 4000 + 5);
    assert_int_equal(server_time("send_timeout 2s500ms;"), 2500);
    /* the bound is INT32_MAX ms (~24.8 days), as nginx's 32-bit msec */
    assert_int_equal(server_time("send_timeout 2147483647ms;"), 2147483647);
    assert_int_equal(server_time("send_timeout 24d;"), 24 * 86400000LL);
    /* send_timeout and client_header_timeout must be positive; keepalive_timeout 0
     * disables keep-alive */
    expect_server_error("send_timeout 0;",
                        "t.conf:2: send_timeout: invalid value \"0\": must be at least 1ms");
    expect_server_error("client_header_timeout 0s;",
                        "t.conf:2: client_header_timeout: invalid value \"0s\": must be at "
                        "least 1ms");
    gw_conf_t *c = with_server("keepalive_timeout 0;");
    assert_int_equal(server0(c)->srv.keepalive_timeout_ms, 0);
    gw_conf_free(c);
    static const char *const bad[] = {"",    "s",   "1x", "1s1m", "1m1m", "1ms1s", "1.5s",
                                      "-1s", "1 s", "1S", "1m30", "30s1", "1w"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char d[64], want[256];
        snprintf(d, sizeof(d), "send_timeout \"%s\";", bad[i]);
        snprintf(want, sizeof(want),
                 "t.conf:2: send_timeout: invalid value \"%s\": not a time (e.g. 500ms, 75s, "
                 "1m30s, 1h, 1d)",
                 bad[i]);
        expect_server_error(d, want);
    }
    static const char *const big[] = {
        "2147483648ms",          "25d",           "9223372036854775ms", "9223372036854776",
        "9223372036854775808ms", "106751991168d", "106751991167d8h",    "99999999999999999999s"};
    for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
        char d[64], want[256];
        snprintf(d, sizeof(d), "send_timeout %s;", big[i]);
        snprintf(want, sizeof(want),
                 "t.conf:2: send_timeout: invalid value \"%s\": time too large (at most 24 "
                 "days)",
                 big[i]);
        expect_server_error(d, want);
    }
}

/* ---- error classes ---- */

static void test_error_classes(void **state)
{
    expect_main_error("foo bar;", "t.conf:1: foo: unknown directive");
    expect_main_error("listen 80;", "t.conf:1: listen: directive is not allowed here");
    expect_main_error("worker_connections 8;",
                      "t.conf:1: worker_connections: directive is not allowed here");
    expect_main_error("events { daemon on; }", "t.conf:1: daemon: directive is not allowed here");
    expect_main_error("daemon;", "t.conf:1: daemon: invalid number of arguments");
    expect_main_error("daemon on off;", "t.conf:1: daemon: invalid number of arguments");
    expect_main_error("http x { }", "t.conf:1: http: invalid number of arguments");
    expect_main_error("daemon yes;",
                      "t.conf:1: daemon: invalid value \"yes\": must be \"on\" or \"off\"");
    EXPECT_ERRORS("daemon on;\ndaemon off;\n", "t.conf:2: daemon: directive is duplicate");
    EXPECT_ERRORS("events { }\nevents { }\n", "t.conf:2: events: directive is duplicate");
    EXPECT_ERRORS(MINIMAL "http { }\n", "t.conf:2: http: directive is duplicate");
    expect_main_error("http;", "t.conf:1: http: directive has no opening \"{\"");
    expect_main_error("daemon on { }", "t.conf:1: daemon: directive does not take a block");
    EXPECT_ERRORS("http {\n}\n", "t.conf:1: http: no server block defined");
    EXPECT_ERRORS("http {\n server {\n }\n}\n", "t.conf:2: server: no listen directive defined");
    expect_main_error("http { server { listen 1; } server { listen 2; server_name \"a\tb\"; } }",
                      "t.conf:1: server_name: invalid value \"a\\x09b\": a server name may "
                      "contain letters, digits, \".\", \"-\" and \"_\" only");
    /* a broken server block is reported once, not also as "no server" */
    expect_main_error("http { server x { listen 1; } }",
                      "t.conf:1: server: invalid number of arguments");
    /* a broken listen is reported once, not also as "no listen" */
    expect_main_error("http { server { listen x; } }",
                      "t.conf:1: listen: invalid value \"x\": host names are not supported, use "
                      "a numeric address");
    /* long names and values are cut in messages, control characters escaped */
    char text[400];
    memset(text, 'a', 300);
    strcpy(text + 300, ";");
    expect_main_error(text,
                      "t.conf:1: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                      "...: unknown directive");
}

static void test_many_errors(void **state)
{
    EXPECT_ERRORS("daemon maybe;\n"
                  "bogus;\n"
                  "worker_processes 2;\n"
                  "worker_processes 3;\n"
                  "http {\n"
                  "  listen 80;\n"
                  "  server {\n"
                  "    listen 443 ssl;\n"
                  "    client_max_body_size 1q;\n"
                  "  }\n"
                  "  server { }\n"
                  "}\n"
                  "events { worker_connections x; }\n",
                  "t.conf:1: daemon: invalid value \"maybe\": must be \"on\" or \"off\"",
                  "t.conf:2: bogus: unknown directive",
                  "t.conf:4: worker_processes: directive is duplicate",
                  "t.conf:6: listen: directive is not allowed here",
                  "t.conf:9: client_max_body_size: invalid value \"1q\": not a size (bytes, or "
                  "with k, m or g suffix)",
                  "t.conf:11: server: no listen directive defined",
                  "t.conf:13: worker_connections: invalid value \"x\": not a number",
                  "t.conf:8: listen: no ssl_certificate defined for the listen 0.0.0.0:443 ssl");
}

/* ---- lexer ---- */

static void test_lexer_quotes_and_escapes(void **state)
{
    gw_conf_t *c = with_server("ssl_conf_command \"Na me\" 'v a\\'l\\n\\t\\\\ \\d';\n"
                               "ssl_conf_command 'x\"y' \"a;b{c}d#e\";\n"
                               "ssl_conf_command un\\\"quoted a\\;b;\n"
                               "ssl_conf_command \"multi\nline\" '';\n"
                               "ssl_conf_command a\"b c'd;\n"
                               "ssl_conf_command \"\\r\" \"\\x\";\n"
                               "ssl_conf_command x#y z;");
    gw_server_t *s = server0(c);
    assert_int_equal(s->srv.n_conf_cmds, 7);
    assert_string_equal(s->srv.conf_cmds[0].name, "Na me");
    assert_string_equal(s->srv.conf_cmds[0].value, "v a'l\n\t\\ \\d");
    assert_string_equal(s->srv.conf_cmds[1].name, "x\"y");
    assert_string_equal(s->srv.conf_cmds[1].value, "a;b{c}d#e");
    assert_string_equal(s->srv.conf_cmds[2].name, "un\"quoted");
    assert_string_equal(s->srv.conf_cmds[2].value, "a\\;b");
    assert_string_equal(s->srv.conf_cmds[3].name, "multi\nline");
    assert_string_equal(s->srv.conf_cmds[3].value, "");
    assert_string_equal(s->srv.conf_cmds[4].name, "a\"b");
    assert_string_equal(s->srv.conf_cmds[4].value, "c'd");
    assert_string_equal(s->srv.conf_cmds[5].name, "\r");
    assert_string_equal(s->srv.conf_cmds[5].value, "\\x");
    assert_string_equal(s->srv.conf_cmds[6].name, "x#y");
    gw_conf_free(c);

    /* directive names may be quoted; a quoted string may be followed directly by ; { } */
    c = parse("\"daemon\" 'on';http{server{listen \"80\";}}");
    assert_int_equal(c->daemon, 1);
    gw_conf_free(c);
}

static void test_lexer_comments_and_lines(void **state)
{
    gw_conf_t *c = parse("# leading comment ; { }\n"
                         "daemon on; # trailing comment with \"quote\n"
                         "\r\n"
                         "http {\r\n"
                         "  # server { }\n"
                         "  server {\n"
                         "    listen 80;#no space\n"
                         "    location /a {\n"
                         "      return 200 \"two\n"
                         "lines\";\n"
                         "    }\n"
                         "    location /b { }\n"
                         "  }\n"
                         "}\n"
                         "#");
    assert_int_equal(c->daemon, 1);
    gw_server_t *s = server0(c);
    assert_int_equal(s->line, 6);
    assert_int_equal(s->listens[0].line, 7);
    assert_int_equal(s->locations[0].line, 8);
    assert_int_equal(s->locations[1].line, 12);
    gw_conf_free(c);
    /* a directive spanning lines reports its first line */
    EXPECT_ERRORS("\n\ndaemon\n\n\"x\n\";", "t.conf:3: daemon: invalid value \"x\\x0a\": must be "
                                            "\"on\" or \"off\"");
}

static void test_lexer_errors(void **state)
{
    EXPECT_ERRORS("daemon \"on;\n\n", "t.conf:1: daemon: unterminated quoted string");
    EXPECT_ERRORS("http { server {\n  return 'abc\n", "t.conf:2: return: unterminated quoted "
                                                      "string");
    EXPECT_ERRORS("'abc", "t.conf:1: syntax: unterminated quoted string");
    EXPECT_ERRORS("daemon \"on\\", "t.conf:1: daemon: unterminated quoted string");
    EXPECT_ERRORS("daemon on\\", "t.conf:1: daemon: unexpected end of file after \"\\\"");
    EXPECT_ERRORS("http {\n  server {\n    listen 80;\n",
                  "t.conf:2: server: unexpected end of file, expecting \"}\"");
    EXPECT_ERRORS("daemon on;\n}\n", "t.conf:2: syntax: unexpected \"}\"");
    EXPECT_ERRORS("daemon on", "t.conf:1: daemon: unexpected end of file, expecting \";\" or "
                               "\"{\"");
    EXPECT_ERRORS("daemon\non\n", "t.conf:1: daemon: unexpected end of file, expecting \";\" or "
                                  "\"{\"");
    EXPECT_ERRORS(";", "t.conf:1: syntax: unexpected \";\"");
    EXPECT_ERRORS("{ daemon on; }", "t.conf:1: syntax: unexpected \"{\"");
    EXPECT_ERRORS("http { server { listen 80 } }",
                  "t.conf:1: listen: unexpected \"}\", expecting \";\"");
    EXPECT_ERRORS("daemon \"on\"x;", "t.conf:1: daemon: unexpected \"x\" after quoted string");
    EXPECT_ERRORS("daemon 'on'\"off\";", "t.conf:1: daemon: unexpected \"\"\" after quoted string");
    /* NUL bytes: in a token, in a string, in a comment; only the first is reported */
    static const char nul1[] = "daemon o\0n;";
    expect_errors_len(nul1, sizeof(nul1) - 1, NULL,
                      (const char *const[]){"t.conf:1: daemon: NUL byte in input", NULL});
    static const char nul2[] = "daemon on;\npid \"a\0b\";\n\0";
    expect_errors_len(nul2, sizeof(nul2) - 1, NULL,
                      (const char *const[]){"t.conf:2: pid: NUL byte in input", NULL});
    static const char nul3[] = "# comment \0\ndaemon on;";
    expect_errors_len(nul3, sizeof(nul3) - 1, NULL,
                      (const char *const[]){"t.conf:1: syntax: NUL byte in input", NULL});
    static const char nul4[] = "\0";
    expect_errors_len(nul4, 1, NULL,
                      (const char *const[]){"t.conf:1: syntax: NUL byte in input", NULL});
    /* a syntax error drops its directive (and block) only; the rest is still checked */
    EXPECT_ERRORS("daemon \"on\"x { worker_processes 0; }\nbogus;\n",
                  "t.conf:1: daemon: unexpected \"x\" after quoted string",
                  "t.conf:2: bogus: unknown directive");
}

static void test_lexer_limits(void **state)
{
    /* 16 nested blocks are fine for the lexer (the walker rejects the names) */
    char text[8192];
    size_t o = 0;
    for (int i = 0; i < 16; i++)
        o += (size_t)snprintf(text + o, sizeof(text) - o, "b%d {\n", i);
    for (int i = 0; i < 16; i++)
        text[o++] = '}';
    text[o] = '\0';
    EXPECT_ERRORS(text, "t.conf:1: b0: unknown directive");
    /* 17 are not */
    o = 0;
    for (int i = 0; i < 17; i++)
        o += (size_t)snprintf(text + o, sizeof(text) - o, "b%d {\n", i);
    for (int i = 0; i < 17; i++)
        text[o++] = '}';
    text[o] = '\0';
    EXPECT_ERRORS(text, "t.conf:17: b16: blocks nested too deeply (limit 16)",
                  "t.conf:1: b0: unknown directive");
    /* deeper still, unclosed: one error for the depth, one for the end of file */
    o = 0;
    for (int i = 0; i < 40; i++)
        o += (size_t)snprintf(text + o, sizeof(text) - o, "x {");
    text[o] = '\0';
    EXPECT_ERRORS(text, "t.conf:1: x: blocks nested too deeply (limit 16)",
                  "t.conf:1: x: unexpected end of file, expecting \"}\"",
                  "t.conf:1: x: unknown directive");

    /* tokens: 4096 bytes are fine, 4097 are not (quoted or not) */
    static char big[10000];
    const char *pre = "http { server { listen 1; ssl_ciphers ";
    size_t pl = strlen(pre);
    memset(big, 0, sizeof(big));
    strcpy(big, pre);
    memset(big + pl, 'C', 4096);
    strcpy(big + pl + 4096, "; } }");
    gw_conf_t *c = parse(big);
    assert_int_equal(strlen(server0(c)->srv.ssl_ciphers), 4096);
    gw_conf_free(c);
    memset(big + pl, 'C', 4097);
    strcpy(big + pl + 4097, "; } }");
    EXPECT_ERRORS(big, "t.conf:1: ssl_ciphers: token too long (limit 4096 bytes)");
    big[pl] = '"';
    strcpy(big + pl + 4097, "C\"; } }"); /* 4097 C after the quote */
    EXPECT_ERRORS(big, "t.conf:1: ssl_ciphers: token too long (limit 4096 bytes)");
    big[pl] = '"';
    strcpy(big + pl + 4097, "\"; } }"); /* 4096 C quoted */
    c = parse(big);
    gw_conf_free(c);
}

/* ---- -g globals ---- */

static void test_globals(void **state)
{
    gw_conf_t *c = parse_g(MINIMAL, "daemon on; worker_processes 3;");
    assert_int_equal(c->daemon, 1);
    assert_int_equal(c->worker_processes, 3);
    assert_int_equal(c->files.n, 2);
    assert_string_equal(c->files.v[1], "<command line>");
    gw_conf_free(c);
    c = parse_g("", "events { worker_connections 7; }");
    assert_int_equal(c->worker_connections, 7);
    gw_conf_free(c);
    EXPECT_ERRORS_G("daemon off;\n", "daemon on;",
                    "<command line>:1: daemon: directive is duplicate");
    EXPECT_ERRORS_G("", "foo;", "<command line>:1: foo: unknown directive");
    EXPECT_ERRORS_G("", "listen 80;", "<command line>:1: listen: directive is not allowed here");
    EXPECT_ERRORS_G("", "daemon on",
                    "<command line>:1: daemon: unexpected end of file, expecting \";\" or \"{\"");
    EXPECT_ERRORS_G("bad;", "worse;", "t.conf:1: bad: unknown directive",
                    "<command line>:1: worse: unknown directive");
}

/* ---- files, docs, error list ---- */

static void test_load_file(void **state)
{
    char path[] = "/tmp/conf_test_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "daemon on;\nhttp { server { listen 80; } }\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    gw_errlist_clear(&errs);
    gw_conf_t *c = gw_conf_load_file(path, "/p", NULL, "/s", &errs);
    assert_non_null(c);
    assert_string_equal(c->conf_file, path);
    assert_int_equal(c->daemon, 1);
    gw_conf_free(c);

    fd = open(path, O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    text = "daemon on;\nnope;\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    c = gw_conf_load_file(path, "/p", NULL, "/s", &errs);
    assert_null(c);
    assert_int_equal(errs.n, 1);
    char want[4096 + 64];
    snprintf(want, sizeof(want), "%s:2: nope: unknown directive", path);
    assert_string_equal(errs.v[0], want);
    unlink(path);

    gw_errlist_clear(&errs);
    c = gw_conf_load_file(path, "/p", NULL, "/s", &errs);
    assert_null(c);
    assert_int_equal(errs.n, 1);
    snprintf(want, sizeof(want), "%s: cannot open: No such file or directory", path);
    assert_string_equal(errs.v[0], want);
    gw_errlist_clear(&errs);
    c = gw_conf_load_file("/", "/p", NULL, "/s", &errs);
    assert_null(c);
    assert_int_equal(errs.n, 1);
    assert_string_equal(errs.v[0], "/: cannot read: Is a directory");

    /* relative names become absolute */
    char cwd[4096];
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    char rel[] = "conf_test_rel_XXXXXX";
    fd = mkstemp(rel);
    assert_true(fd >= 0);
    close(fd);
    gw_errlist_clear(&errs);
    c = gw_conf_load_file(rel, "/p", NULL, "/s", &errs);
    unlink(rel);
    assert_non_null(c);
    snprintf(want, sizeof(want), "%s/%s", cwd, rel);
    assert_string_equal(c->conf_file, want);
    gw_conf_free(c);
}

static void test_write_docs(void **state)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(gw_conf_write_docs(f), 0);
    fclose(f);
    assert_non_null(strstr(buf, "# tlsgate configuration\n"));
    assert_non_null(strstr(buf, "| directive | arguments | default | contexts | description |"));
    static const char *const names[] = {"daemon",
                                        "worker_processes",
                                        "worker_cpu_affinity",
                                        "worker_rlimit_nofile",
                                        "worker_shutdown_timeout",
                                        "error_log",
                                        "pid",
                                        "events",
                                        "worker_connections",
                                        "http",
                                        "server",
                                        "listen",
                                        "server_name",
                                        "location",
                                        "access_log",
                                        "keepalive_timeout",
                                        "keepalive_requests",
                                        "client_header_timeout",
                                        "client_header_buffer_size",
                                        "large_client_header_buffers",
                                        "client_max_body_size",
                                        "send_timeout",
                                        "ssl_certificate",
                                        "ssl_certificate_key",
                                        "ssl_protocols",
                                        "ssl_ciphers",
                                        "ssl_conf_command",
                                        "ssl_prefer_server_ciphers",
                                        "ssl_session_cache",
                                        "ssl_session_tickets",
                                        "root",
                                        "index",
                                        "return",
                                        "stub_status"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char row[64];
        snprintf(row, sizeof(row), "| `%s` |", names[i]);
        assert_non_null(strstr(buf, row));
    }
    assert_non_null(strstr(buf, "| `keepalive_timeout` | *TIME* | `75s` | http, server |"));
    free(buf);
    /* the error path: a stream that cannot be written */
    f = fopen("/dev/full", "w");
    if (f) {
        setvbuf(f, NULL, _IONBF, 0);
        assert_int_equal(gw_conf_write_docs(f), -1);
        fclose(f);
    }
}

static void test_errlist(void **state)
{
    gw_errlist_t e = {0};
    gw_errlist_add(&e, "%s:%d: %s", "a", 1, "b");
    gw_errlist_add(&e, "plain");
    assert_int_equal(e.n, 2);
    assert_string_equal(e.v[0], "a:1: b");
    assert_string_equal(e.v[1], "plain");
    gw_errlist_clear(&e);
    assert_int_equal(e.n, 0);
    assert_null(e.v);
    gw_errlist_clear(&e);
    gw_errlist_add(&e, "again");
    assert_int_equal(e.n, 1);
    gw_errlist_clear(&e);
    gw_conf_free(NULL);
    /* errs may be NULL: the result still tells success from failure */
    gw_conf_t *c = gw_conf_parse("x", "bad;", 4, "/", NULL, "/", NULL);
    assert_null(c);
    c = gw_conf_parse("x", "daemon on;", 10, "/", NULL, "/", NULL);
    assert_non_null(c);
    gw_conf_free(c);
    c = gw_conf_parse(NULL, NULL, 0, NULL, NULL, NULL, NULL);
    assert_non_null(c);
    assert_string_equal(c->conf_file, "<embedded>");
    gw_conf_free(c);
}

int main(void)
{
    return UNIT_RUN(cmocka_unit_test_teardown(test_defaults, teardown),
                    cmocka_unit_test_teardown(test_no_http_block, teardown),
                    cmocka_unit_test_teardown(test_prefix_and_state_dir, teardown),
                    cmocka_unit_test_teardown(test_main_directives, teardown),
                    cmocka_unit_test_teardown(test_worker_processes_auto, teardown),
                    cmocka_unit_test_teardown(test_cpu_affinity, teardown),
                    cmocka_unit_test_teardown(test_main_value_errors, teardown),
                    cmocka_unit_test_teardown(test_bulk_directives, teardown),
                    cmocka_unit_test_teardown(test_server_directives, teardown),
                    cmocka_unit_test_teardown(test_inheritance, teardown),
                    cmocka_unit_test_teardown(test_certificates, teardown),
                    cmocka_unit_test_teardown(test_certificate_errors, teardown),
                    cmocka_unit_test_teardown(test_listen, teardown),
                    cmocka_unit_test_teardown(test_http2, teardown),
                    cmocka_unit_test_teardown(test_server_name, teardown),
                    cmocka_unit_test_teardown(test_locations, teardown),
                    cmocka_unit_test_teardown(test_return_errors, teardown),
                    cmocka_unit_test_teardown(test_ssl_settings, teardown),
                    cmocka_unit_test_teardown(test_access_log_and_misc, teardown),
                    cmocka_unit_test_teardown(test_sizes, teardown),
                    cmocka_unit_test_teardown(test_times, teardown),
                    cmocka_unit_test_teardown(test_error_classes, teardown),
                    cmocka_unit_test_teardown(test_many_errors, teardown),
                    cmocka_unit_test_teardown(test_lexer_quotes_and_escapes, teardown),
                    cmocka_unit_test_teardown(test_lexer_comments_and_lines, teardown),
                    cmocka_unit_test_teardown(test_lexer_errors, teardown),
                    cmocka_unit_test_teardown(test_lexer_limits, teardown),
                    cmocka_unit_test_teardown(test_globals, teardown),
                    cmocka_unit_test_teardown(test_load_file, teardown),
                    cmocka_unit_test_teardown(test_write_docs, teardown),
                    cmocka_unit_test_teardown(test_errlist, teardown));
}
