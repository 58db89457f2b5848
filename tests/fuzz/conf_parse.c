/*
 * Fuzz target: gw_conf_parse() on arbitrary bytes.
 *
 * Input: configuration text; if it contains a line "--globals--", what follows that line
 * is passed as the -g globals (up to its first NUL). Checks, besides memory safety: a
 * result is returned exactly when no error was reported, every message names a file we
 * gave it, and a returned config is merged (every server has a listen, a name, a root and
 * an index; every ssl listen has a certificate or ssl_reject_handshake on; every certificate has a key).
 */
// fuzz-sources: gw/conf/lexer.c gw/conf/conf.c gw/conf/directives.c gw/conf/include.c
// gw/conf/deploy.c
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

#include "conf/conf.h"

#define SEP "\n--globals--\n"

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "conf_parse: invariant failed: %s\n", what);
        abort();
    }
}

static void check_loc(const gw_loc_settings_t *l)
{
    check(l->root && l->root[0] == '/', "root is absolute");
    check(l->index.n > 0, "index set");
}

static void check_conf(const gw_conf_t *c)
{
    check(c->worker_processes >= 1, "worker_processes");
    check(c->worker_connections >= 1, "worker_connections");
    check(c->error_log && c->pid, "error_log and pid");
    check(c->worker_shutdown_timeout_ms >= 0, "worker_shutdown_timeout");
    for (size_t i = 0; i < c->http.n_servers; i++) {
        const gw_server_t *s = &c->http.servers[i];
        check(s->n_listens > 0, "server has a listen");
        check(s->server_names.n > 0, "server has a name");
        check_loc(&s->loc);
        check(s->srv.keepalive_timeout_ms >= 0 && s->srv.send_timeout_ms >= 0, "times merged");
        check(s->srv.ssl_protocols != 0 && s->srv.ssl_ciphers, "ssl merged");
        check(s->srv.ssl_session_cache != GW_SESSION_CACHE_UNSET, "session cache merged");
        for (size_t j = 0; j < s->n_listens; j++) {
            check(s->listens[j].text != NULL, "listen text");
            check(!s->listens[j].ssl || s->srv.n_certs > 0 || s->srv.ssl_reject_handshake == 1,
                  "ssl listen has a certificate (or rejects handshakes)");
        }
        for (size_t j = 0; j < s->srv.n_certs; j++)
            check(s->srv.certs[j].cert && s->srv.certs[j].key, "certificate pairs complete");
        for (size_t j = 0; j < s->n_locations; j++) {
            check(s->locations[j].path && s->locations[j].path[0] == '/', "location path");
            check_loc(&s->locations[j].loc);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    size_t len = size;
    char *globals = NULL;
    const char *sep = memmem(data, size, SEP, strlen(SEP));
    if (sep) {
        len = (size_t)(sep - text);
        size_t glen = size - len - strlen(SEP);
        globals = malloc(glen + 1);
        if (!globals)
            return 0;
        memcpy(globals, sep + strlen(SEP), glen);
        globals[glen] = '\0';
    }
    gw_errlist_t errs = {0};
    gw_conf_t *c = gw_conf_parse("fuzz.conf", text, len, "/prefix", globals, "/state", &errs);
    check((c != NULL) == (errs.n == 0), "result iff no errors");
    for (size_t i = 0; i < errs.n; i++)
        check(strncmp(errs.v[i], "fuzz.conf:", 10) == 0 ||
                  strncmp(errs.v[i], "<command line>:", 15) == 0,
              "messages name the input");
    if (c)
        check_conf(c);
    gw_conf_free(c);
    gw_errlist_clear(&errs);
    free(globals);
    return 0;
}
