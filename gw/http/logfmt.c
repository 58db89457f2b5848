/*
 * log_format (nginx's ngx_http_log_module): a line of the access log from a format's
 * literal text and variables, each value escaped (escape=default: `"`, `\`, control and
 * non-ASCII bytes as \xHH; escape=json: JSON string escapes); an empty value logs "-" in
 * the default escaping, as nginx does, and "" in JSON.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http/conn.h"
#include "http/vars.h"

static const gw_log_format_t *find_format(const gw_conn_t *c, const char *name)
{
    if (!c || !c->env || !c->env->conf)
        return NULL;
    const gw_deploy_srv_t *h = &c->env->conf->http.srv.dep;
    for (size_t i = 0; i < h->n_log_formats; i++)
        if (strcmp(h->log_formats[i].name, name) == 0)
            return &h->log_formats[i];
    return NULL;
}

static void escape_into(gw_vbuf_t *out, const char *s, size_t n, int json)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        char tmp[8];
        if (json) {
            if (ch == '"' || ch == '\\') {
                tmp[0] = '\\';
                tmp[1] = (char)ch;
                gw_vbuf_add(out, tmp, 2);
            } else if (ch < 0x20) {
                const char *e = ch == '\n' ? "\\n" : ch == '\r' ? "\\r" : ch == '\t' ? "\\t" : NULL;
                if (e) {
                    gw_vbuf_add(out, e, 2);
                } else {
                    snprintf(tmp, sizeof(tmp), "\\u%04x", ch);
                    gw_vbuf_add(out, tmp, 6);
                }
            } else {
                gw_vbuf_add(out, (const char *)&s[i], 1);
            }
        } else if (ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '\\') {
            tmp[0] = '\\';
            tmp[1] = 'x';
            tmp[2] = hex[ch >> 4];
            tmp[3] = hex[ch & 15];
            gw_vbuf_add(out, tmp, 4);
        } else {
            gw_vbuf_add(out, (const char *)&s[i], 1);
        }
    }
}

/* a value of the line: "-" when empty in the default escaping, as nginx logs it */
static void put_escaped(gw_vbuf_t *out, const char *v, size_t n, void *arg)
{
    int json = *(const int *)arg;
    if (n == 0 && !json)
        gw_vbuf_add(out, "-", 1);
    else
        escape_into(out, v, n, json);
}

int gw_logfmt_write(const gw_req_t *r, int fd)
{
    const char *name = r->vs->conf->srv.dep.access_log_format;
    if (!name || strcmp(name, "combined") == 0)
        return 0;
    const gw_log_format_t *f = find_format(r->conn, name);
    if (!f)
        return 0; /* cannot happen: the configuration check refused the name */
    int json = f->escape == GW_LOG_ESCAPE_JSON;
    gw_vbuf_t line = {0};
    gw_vars_expand_fn(r, f->format, &line, put_escaped, &json);
    gw_vbuf_add(&line, "\n", 1);
    ssize_t w = write(fd, line.s, line.len);
    (void)w;
    gw_vbuf_free(&line);
    return 1;
}
