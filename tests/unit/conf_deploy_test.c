/*
 * Unit tests of issue #23's configuration (gw/conf/include.c, gw/conf/deploy.c): include
 * with globs and its messages, add_header, error_page, allow/deny, set_real_ip_from,
 * real_ip_header, log_format and access_log FORMAT, underscores_in_headers, with nginx's
 * inheritance; and gw_cidr_parse / gw_cidr_match.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <cmocka.h>

#include "conf/conf.h"
#include "net/realip.h"

static gw_errlist_t errs;
static char dir[] = "/tmp/tlsgate-deploy-conf-XXXXXX";

static void dump(void)
{
    for (size_t i = 0; i < errs.n; i++)
        print_message("  error[%zu]: %s\n", i, errs.v[i]);
}

static void put(const char *rel, const char *text)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static gw_conf_t *load(const char *rel)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    gw_errlist_clear(&errs);
    return gw_conf_load_file(p, dir, NULL, dir, &errs);
}

static gw_conf_t *parse_ok(const char *text)
{
    gw_errlist_clear(&errs);
    gw_conf_t *c = gw_conf_parse("t.conf", text, strlen(text), "/pfx", NULL, "/st", &errs);
    if (!c || errs.n) {
        print_message("unexpected errors for:\n%s\n", text);
        dump();
        fail();
    }
    return c;
}

/* text must fail with exactly one error, want */
static void parse_err(const char *text, const char *want)
{
    gw_errlist_clear(&errs);
    gw_conf_t *c = gw_conf_parse("t.conf", text, strlen(text), "/pfx", NULL, "/st", &errs);
    int ok = !c && errs.n == 1 && strcmp(errs.v[0], want) == 0;
    if (!ok) {
        print_message("for:\n%s\nwanted: %s\ngot %zu:\n", text, want, errs.n);
        dump();
    }
    gw_conf_free(c);
    assert_true(ok);
}

static int setup(void **state)
{
    (void)state;
    assert_non_null(mkdtemp(dir));
    char p[600];
    snprintf(p, sizeof(p), "%s/conf.d", dir);
    mkdir(p, 0755);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    gw_errlist_clear(&errs);
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_include_glob(void **state)
{
    (void)state;
    put("main.conf", "events { worker_connections 64; }\n"
                     "http {\n"
                     "  include conf.d/*.conf;\n"
                     "  include conf.d/none-*.conf;\n" /* a pattern may match nothing */
                     "}\n");
    put("conf.d/b.conf", "server { listen 127.0.0.1:8002; server_name b.test;\n"
                         "  include snippets.inc; }\n");
    put("conf.d/a.conf", "server { listen 127.0.0.1:8001; server_name a.test; }\n");
    put("snippets.inc", "add_header X-Frame-Options DENY always;\n");
    gw_conf_t *c = load("main.conf");
    if (!c)
        dump();
    assert_non_null(c);
    assert_int_equal(c->http.n_servers, 2);
    /* sorted: a.conf first */
    assert_string_equal(c->http.servers[0].server_names.v[0], "a.test");
    assert_string_equal(c->http.servers[1].server_names.v[0], "b.test");
    const gw_deploy_loc_t *d = &c->http.servers[1].loc.dep;
    assert_int_equal(d->n_add_headers, 1);
    assert_string_equal(d->add_headers[0].name, "X-Frame-Options");
    assert_int_equal(d->add_headers[0].always, 1);
    assert_int_equal(c->http.servers[0].loc.dep.n_add_headers, 0);
    gw_conf_free(c);
}

static void test_include_errors_name_file_and_line(void **state)
{
    (void)state;
    char want[1024];
    /* an error inside an included file names that file and its line */
    put("bad.inc", "\n\nbogus_directive 1;\n");
    put("m1.conf", "events { }\nhttp { server { listen 8001;\n include bad.inc; } }\n");
    gw_conf_t *c = load("m1.conf");
    assert_null(c);
    snprintf(want, sizeof(want), "%s/bad.inc:3: bogus_directive: unknown directive", dir);
    if (errs.n != 1 || strcmp(errs.v[0], want) != 0)
        dump();
    assert_int_equal(errs.n, 1);
    assert_string_equal(errs.v[0], want);
    /* a missing plain file: the including file and line */
    put("m2.conf", "events { }\nhttp {\n include missing.conf; server { listen 8001; } }\n");
    c = load("m2.conf");
    assert_null(c);
    snprintf(want, sizeof(want),
             "%s/m2.conf:3: include: cannot open \"%s/missing.conf\": No "
             "such file or directory",
             dir, dir);
    assert_int_equal(errs.n, 1);
    assert_string_equal(errs.v[0], want);
    /* a syntax error in an included file */
    put("syn.inc", "add_header X\n");
    put("m3.conf", "events { }\nhttp { server { listen 8001; include syn.inc; } }\n");
    c = load("m3.conf");
    assert_null(c);
    assert_true(errs.n >= 1);
    snprintf(want, sizeof(want), "%s/syn.inc:", dir);
    assert_memory_equal(errs.v[0], want, strlen(want));
    /* a file including itself */
    put("loop.conf", "include loop.conf;\n");
    c = load("loop.conf");
    assert_null(c);
    assert_non_null(strstr(errs.v[errs.n - 1], "nested includes"));
    /* a directory is not a configuration file */
    put("m4.conf", "include conf.d;\n");
    c = load("m4.conf");
    assert_null(c);
    assert_non_null(strstr(errs.v[0], "is not a regular file"));
    /* arguments */
    put("m5.conf", "include a b;\n");
    c = load("m5.conf");
    assert_null(c);
    assert_non_null(strstr(errs.v[0], "m5.conf:1: include: invalid number of arguments"));
    /* an error after an include still names the including file and its own line */
    put("ok.inc", "server { listen 8001; }\n");
    put("m6.conf", "events { }\nhttp { include ok.inc;\n bogus; }\n");
    c = load("m6.conf");
    assert_null(c);
    snprintf(want, sizeof(want), "%s/m6.conf:3: bogus: unknown directive", dir);
    assert_int_equal(errs.n, 1);
    assert_string_equal(errs.v[0], want);
}

static void test_add_header_and_inheritance(void **state)
{
    (void)state;
    gw_conf_t *c = parse_ok("http { add_header Strict-Transport-Security \"max-age=63072000\" "
                            "always; add_header X-A a;\n"
                            "server { listen 8001;\n"
                            "  location /own { add_header X-B $host; }\n"
                            "  location /inh { }\n} }\n");
    gw_server_t *s = &c->http.servers[0];
    assert_int_equal(s->loc.dep.n_add_headers, 2);
    assert_int_equal(s->loc.dep.add_headers[0].always, 1);
    assert_int_equal(s->loc.dep.add_headers[1].always, 0);
    /* a level with its own replaces the list (nginx) */
    assert_int_equal(s->locations[0].loc.dep.n_add_headers, 1);
    assert_string_equal(s->locations[0].loc.dep.add_headers[0].value, "$host");
    assert_int_equal(s->locations[1].loc.dep.n_add_headers, 2);
    gw_conf_free(c);
    parse_err("http { server { listen 8001;\nadd_header \"X Y\" v; } }",
              "t.conf:2: add_header: invalid value \"X Y\": not a header field name");
    parse_err("http { server { listen 8001;\nadd_header X v sometimes; } }",
              "t.conf:2: add_header: invalid value \"sometimes\": must be \"always\"");
    parse_err("http { server { listen 8001;\nadd_header Content-Length 5; } }",
              "t.conf:2: add_header: invalid value \"Content-Length\": this field is set by "
              "tlsgate itself");
    parse_err("http { server { listen 8001;\nadd_header X \"a\\nb\"; } }",
              "t.conf:2: add_header: invalid value \"a\\x0ab\": control character in a header "
              "value");
}

static void test_error_page(void **state)
{
    (void)state;
    gw_conf_t *c = parse_ok("http { server { listen 8001;\n"
                            "error_page 404 /404.html;\n"
                            "error_page 500 502 503 =503 /50x.html;\n"
                            "error_page 403 =302 https://example.com/denied; } }\n");
    const gw_deploy_loc_t *d = &c->http.servers[0].loc.dep;
    assert_int_equal(d->n_error_pages, 5);
    assert_int_equal(d->error_pages[0].code, 404);
    assert_int_equal(d->error_pages[0].new_code, 0);
    assert_int_equal(d->error_pages[2].code, 502);
    assert_int_equal(d->error_pages[2].new_code, 503);
    assert_string_equal(d->error_pages[4].uri, "https://example.com/denied");
    gw_conf_free(c);
    parse_err("http { server { listen 8001;\nerror_page 200 /x; } }",
              "t.conf:2: error_page: invalid value \"200\": must be between 300 and 599");
    parse_err("http { server { listen 8001;\nerror_page 404 x.html; } }",
              "t.conf:2: error_page: invalid value \"x.html\": a local URI (/...) or an "
              "http(s):// URL");
    parse_err("http { server { listen 8001;\nerror_page =404 /x; } }",
              "t.conf:2: error_page: invalid value \"/x\": no status code given");
    parse_err("http { server { listen 8001;\nerror_page 404 =abc /x; } }",
              "t.conf:2: error_page: invalid value \"=abc\": must be =CODE with CODE 200..599");
}

static void test_access_rules_and_real_ip(void **state)
{
    (void)state;
    gw_conf_t *c = parse_ok("http { set_real_ip_from 10.0.0.0/8; set_real_ip_from ::1;\n"
                            "real_ip_header X-Forwarded-For; real_ip_recursive on;\n"
                            "server { listen 8001; allow 127.0.0.1; allow 2001:db8::/32; "
                            "deny all;\n location /open { allow all; } } }\n");
    gw_server_t *s = &c->http.servers[0];
    assert_int_equal(s->srv.dep.n_real_ip_from, 2);
    assert_string_equal(s->srv.dep.real_ip_header, "x-forwarded-for");
    assert_int_equal(s->srv.dep.real_ip_recursive, 1);
    assert_int_equal(s->loc.dep.n_access, 3);
    assert_int_equal(s->loc.dep.access[2].deny, 1);
    assert_int_equal(s->loc.dep.access[2].cidr.family, 0);
    assert_int_equal(s->locations[0].loc.dep.n_access, 1);
    assert_int_equal(s->locations[0].loc.dep.access[0].deny, 0);
    assert_int_equal(s->srv.dep.underscores_in_headers, 0); /* nginx's default */
    gw_conf_free(c);
    c = parse_ok("http { server { listen 8001; } }");
    assert_string_equal(c->http.servers[0].srv.dep.real_ip_header, "x-real-ip");
    gw_conf_free(c);
    c = parse_ok("http { underscores_in_headers on; server { listen 8001; } }");
    assert_int_equal(c->http.servers[0].srv.dep.underscores_in_headers, 1);
    gw_conf_free(c);
    parse_err("http { server { listen 8001;\nallow 10.0.0.0/33; } }",
              "t.conf:2: allow: invalid value \"10.0.0.0/33\": must be an address, "
              "ADDRESS/BITS or \"all\"");
    parse_err("http { server { listen 8001;\ndeny example.com; } }",
              "t.conf:2: deny: invalid value \"example.com\": must be an address, "
              "ADDRESS/BITS or \"all\"");
    parse_err("http { server { listen 8001;\nset_real_ip_from 1.2.3.4/; } }",
              "t.conf:2: set_real_ip_from: invalid value \"1.2.3.4/\": must be an address, "
              "ADDRESS/BITS or \"all\"");
}

static void test_cidr(void **state)
{
    (void)state;
    gw_cidr_t c;
    unsigned char a4[4], a6[16];
    assert_int_equal(gw_cidr_parse("192.168.1.77/24", &c), 0);
    assert_int_equal(c.family, AF_INET);
    assert_int_equal(c.addr[3], 0); /* host bits cleared */
    inet_pton(AF_INET, "192.168.1.200", a4);
    assert_true(gw_cidr_match(&c, AF_INET, a4));
    inet_pton(AF_INET, "192.168.2.1", a4);
    assert_false(gw_cidr_match(&c, AF_INET, a4));
    /* an IPv4-mapped IPv6 client matches an IPv4 rule */
    inet_pton(AF_INET6, "::ffff:192.168.1.9", a6);
    assert_true(gw_cidr_match(&c, AF_INET6, a6));
    inet_pton(AF_INET6, "2001:db8::1", a6);
    assert_false(gw_cidr_match(&c, AF_INET6, a6));
    assert_int_equal(gw_cidr_parse("2001:db8::/31", &c), 0);
    assert_true(gw_cidr_match(&c, AF_INET6, a6));
    inet_pton(AF_INET6, "2001:dba::1", a6);
    assert_false(gw_cidr_match(&c, AF_INET6, a6));
    assert_int_equal(gw_cidr_parse("10.1.2.3/13", &c), 0); /* a prefix inside a byte */
    inet_pton(AF_INET, "10.7.255.255", a4);
    assert_true(gw_cidr_match(&c, AF_INET, a4));
    inet_pton(AF_INET, "10.8.0.0", a4);
    assert_false(gw_cidr_match(&c, AF_INET, a4));
    assert_int_equal(gw_cidr_parse("0.0.0.0/0", &c), 0);
    assert_true(gw_cidr_match(&c, AF_INET, a4));
    assert_int_equal(gw_cidr_parse("all", &c), 0);
    assert_true(gw_cidr_match(&c, AF_INET6, a6));
    const char *bad[] = {"",        "1.2.3",      "1.2.3.4/", "1.2.3.4/-1", "1.2.3.4/1000",
                         "::1/129", "1.2.3.4/8x", "x",        "1.2.3.4/33"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(gw_cidr_parse(bad[i], &c), -1);
}

static void test_realip_pick(void **state)
{
    (void)state;
    gw_cidr_t t[2];
    assert_int_equal(gw_cidr_parse("10.0.0.0/8", &t[0]), 0);
    assert_int_equal(gw_cidr_parse("::1", &t[1]), 0);
    int fam;
    unsigned char a[16], want[16];
    const char *v = "198.51.100.1, 203.0.113.9 ,10.0.0.2";
    /* not recursive: the last element, trusted or not */
    assert_int_equal(gw_realip_pick(v, strlen(v), t, 2, 0, &fam, a, NULL), 1);
    inet_pton(AF_INET, "10.0.0.2", want);
    assert_int_equal(fam, AF_INET);
    assert_memory_equal(a, want, 4);
    /* recursive: the last one not trusted */
    assert_int_equal(gw_realip_pick(v, strlen(v), t, 2, 1, &fam, a, NULL), 1);
    inet_pton(AF_INET, "203.0.113.9", want);
    assert_memory_equal(a, want, 4);
    /* all trusted: the first */
    v = "10.1.1.1, [::1], 10.0.0.2";
    assert_int_equal(gw_realip_pick(v, strlen(v), t, 2, 1, &fam, a, NULL), 1);
    inet_pton(AF_INET, "10.1.1.1", want);
    assert_memory_equal(a, want, 4);
    v = " , \t2001:db8::7 ,";
    assert_int_equal(gw_realip_pick(v, strlen(v), t, 2, 0, &fam, a, NULL), 1);
    assert_int_equal(fam, AF_INET6);
    /* with a port, as nginx takes them (ngx_parse_addr_port) */
    int port = -1;
    v = "192.0.2.1:5555, [2001:db8::7]:443";
    assert_int_equal(gw_realip_pick(v, strlen(v), t, 2, 0, &fam, a, &port), 1);
    inet_pton(AF_INET6, "2001:db8::7", want);
    assert_int_equal(fam, AF_INET6);
    assert_memory_equal(a, want, 16);
    assert_int_equal(port, 443); /* nginx's $remote_port */
    v = "192.0.2.1:5555";
    assert_int_equal(gw_realip_pick(v, strlen(v), t, 2, 0, &fam, a, &port), 1);
    inet_pton(AF_INET, "192.0.2.1", want);
    assert_int_equal(fam, AF_INET);
    assert_memory_equal(a, want, 4);
    assert_int_equal(port, 5555);
    v = "192.0.2.1:0, 10.0.0.1:80";
    assert_int_equal(gw_realip_pick(v, strlen(v), t, 2, 1, &fam, a, &port), 1);
    assert_memory_equal(a, want, 4);
    assert_int_equal(port, 0);
    v = "192.0.2.1:5555, 2001:db8::7";
    assert_int_equal(gw_realip_pick(v, strlen(v), t, 2, 0, &fam, a, &port), 1);
    assert_int_equal(port, 0); /* without one: 0 ($remote_port empty) */
    const char *badport[] = {"192.0.2.1:",     "192.0.2.1:65536",
                             "192.0.2.1:5x",   "[2001:db8::7]:",
                             "[2001:db8::7]x", "192.0.2.1:99999999999999999999",
                             "x:80",           ":80",
                             "[::1]:1:2"};
    for (size_t i = 0; i < sizeof(badport) / sizeof(badport[0]); i++)
        assert_int_equal(gw_realip_pick(badport[i], strlen(badport[i]), t, 2, 0, &fam, a, NULL), 0);
    /* recursive past a trusted element to garbage: the trusted element, as nginx's
     * ngx_http_get_forwarded_addr_internal (found ? NGX_DONE) */
    v = "unknown, 10.0.0.3, 10.0.0.2";
    assert_int_equal(gw_realip_pick(v, strlen(v), t, 2, 1, &fam, a, NULL), 1);
    inet_pton(AF_INET, "10.0.0.3", want);
    assert_int_equal(fam, AF_INET);
    assert_memory_equal(a, want, 4);
    v = "[::1]:99999, [::1]:80";
    assert_int_equal(gw_realip_pick(v, strlen(v), t, 2, 1, &fam, a, NULL), 1);
    inet_pton(AF_INET6, "::1", want);
    assert_int_equal(fam, AF_INET6);
    assert_memory_equal(a, want, 16);
    /* a space separates elements as a comma does (nginx splits on both) */
    v = "203.0.113.9 10.0.0.2";
    assert_int_equal(gw_realip_pick(v, strlen(v), t, 2, 1, &fam, a, NULL), 1);
    inet_pton(AF_INET, "203.0.113.9", want);
    assert_int_equal(fam, AF_INET);
    assert_memory_equal(a, want, 4);
    assert_int_equal(gw_realip_pick(v, strlen(v), t, 2, 0, &fam, a, NULL), 1);
    inet_pton(AF_INET, "10.0.0.2", want);
    assert_memory_equal(a, want, 4);
    /* garbage where it looks: nothing (the peer stays) */
    v = "1.2.3.4, unknown";
    assert_int_equal(gw_realip_pick(v, strlen(v), t, 2, 0, &fam, a, NULL), 0);
    assert_int_equal(gw_realip_pick("", 0, t, 2, 1, &fam, a, NULL), 0);
    assert_int_equal(gw_realip_pick(" , ", 3, t, 2, 1, &fam, a, NULL), 0);
}

static void test_log_format(void **state)
{
    (void)state;
    gw_conf_t *c =
        parse_ok("http { log_format tls '$remote_addr \"$request\" ' '$status $ssl_protocol';\n"
                 "log_format j escape=json '{\"ua\":\"$http_user_agent\"}';\n"
                 "access_log /tmp/a.log tls;\n"
                 "server { listen 8001; }\n"
                 "server { listen 8002; access_log /tmp/b.log j; }\n"
                 "server { listen 8003; access_log /tmp/c.log combined; } }\n");
    const gw_deploy_srv_t *h = &c->http.srv.dep;
    assert_int_equal(h->n_log_formats, 2);
    assert_string_equal(h->log_formats[0].format,
                        "$remote_addr \"$request\" $status $ssl_protocol");
    assert_int_equal(h->log_formats[1].escape, GW_LOG_ESCAPE_JSON);
    assert_string_equal(c->http.servers[0].srv.dep.access_log_format, "tls");
    assert_string_equal(c->http.servers[1].srv.dep.access_log_format, "j");
    assert_string_equal(c->http.servers[2].srv.dep.access_log_format, "combined");
    gw_conf_free(c);
    parse_err("http { log_format a x;\nlog_format a y; server { listen 8001; } }",
              "t.conf:2: log_format: invalid value \"a\": duplicate log_format name");
    parse_err("http { log_format a escape=xml x; server { listen 8001; } }",
              "t.conf:1: log_format: invalid value \"escape=xml\": must be escape=default or "
              "escape=json");
    parse_err("http { log_format a escape=json; server { listen 8001; } }",
              "t.conf:1: log_format: invalid number of arguments");
    parse_err("http { server { listen 8001;\nlog_format a x; } }",
              "t.conf:2: log_format: directive is not allowed here");
    parse_err("http { server { listen 8001;\naccess_log /x.log nope; } }",
              "t.conf:2: access_log: unknown log format \"nope\"");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_include_glob),
        cmocka_unit_test(test_include_errors_name_file_and_line),
        cmocka_unit_test(test_add_header_and_inheritance),
        cmocka_unit_test(test_error_page),
        cmocka_unit_test(test_access_rules_and_real_ip),
        cmocka_unit_test(test_cidr),
        cmocka_unit_test(test_log_format),
        cmocka_unit_test(test_realip_pick),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
