/*
 * add_header and error_page (nginx's ngx_http_headers_module and ngx_http_special_response
 * error_page handling): see http/vars.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "http/conn.h"
#include "http/vars.h"
#include "tls/verify.h"

#define ERROR_PAGE_MAX (1 << 20) /* bytes of an error_page file held in memory */

static const gw_loc_settings_t *settings(const gw_req_t *r)
{
    return r->v.loc ? r->v.loc : &r->vs->conf->loc;
}

/* nginx adds headers without `always` only to these statuses */
static int success_status(int status)
{
    switch (status) {
    case 200:
    case 201:
    case 204:
    case 206:
    case 301:
    case 302:
    case 303:
    case 304:
    case 307:
    case 308:
        return 1;
    default:
        return 0;
    }
}

void gw_headers_add(gw_req_t *r, int status, gw_vbuf_t *b)
{
    const gw_deploy_loc_t *d = &settings(r)->dep;
    if (!d->n_add_headers)
        return;
    int ok = success_status(status);
    size_t start = b->len;
    for (size_t i = 0; i < d->n_add_headers; i++) {
        const gw_add_header_t *h = &d->add_headers[i];
        if (!ok && !h->always)
            continue;
        size_t mark = b->len;
        gw_vbuf_add(b, h->name, strlen(h->name));
        gw_vbuf_add(b, ": ", 2);
        size_t vstart = b->len;
        gw_vars_expand(r, h->value, 1, b);
        if (b->len == vstart) { /* nginx: an empty value adds no field */
            b->len = mark;
            continue;
        }
        gw_vbuf_add(b, "\r\n", 2);
    }
    if (r->proto == GW_REQ_HTTP11) /* HTTP/2: the HEADERS frame is counted when sent */
        r->v.head_bytes += b->len - start;
}

static const char *page_type(const char *path)
{
    const char *dot = strrchr(path, '.');
    if (!dot)
        return "application/octet-stream";
    if (strcmp(dot, ".html") == 0 || strcmp(dot, ".htm") == 0)
        return "text/html";
    if (strcmp(dot, ".json") == 0)
        return "application/json";
    if (strcmp(dot, ".txt") == 0)
        return "text/plain";
    return "application/octet-stream";
}

int gw_error_page(gw_req_t *r, int status)
{
    if (r->v.in_error_page || !r->vs)
        return 0;
    const gw_loc_settings_t *l = settings(r);
    const gw_error_page_t *e = NULL;
    for (size_t i = 0; i < l->dep.n_error_pages && !e; i++)
        if (l->dep.error_pages[i].code == status)
            e = &l->dep.error_pages[i];
    if (!e)
        return 0;
    r->v.in_error_page = 1;
    int code = e->new_code ? e->new_code : status;
    if (e->uri[0] != '/') {
        /* a redirect: 302 unless =CODE said which */
        if (!e->new_code)
            code = 302;
        char extra[4096 + 16];
        snprintf(extra, sizeof(extra), "Location: %s\r\n", e->uri);
        gw_resp_page(r, code, extra);
        return 1;
    }
    /* a local page: the file under the root of the request's settings (nginx makes an
     * internal redirect; the error page is a static file in every deployment seen) */
    char path[4096 + 1024];
    const char *root = l->root ? l->root : r->vs->conf->loc.root;
    int n = snprintf(path, sizeof(path), "%s%s", root ? root : "", e->uri);
    if (n < 0 || (size_t)n >= sizeof(path) || strstr(e->uri, "/../"))
        return r->v.in_error_page = 0, 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > ERROR_PAGE_MAX) {
        gw_log(GW_LOG_ERROR, fd < 0 ? errno : 0, "error_page \"%s\" for %d: cannot serve \"%s\"",
               e->uri, status, path);
        if (fd >= 0)
            close(fd);
        r->v.in_error_page = 0;
        return 0;
    }
    size_t size = (size_t)st.st_size;
    char *body = malloc(size ? size : 1);
    size_t got = 0;
    while (body && got < size) {
        ssize_t k = pread(fd, body + got, size - got, (off_t)got);
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    close(fd);
    if (!body || got != size) {
        free(body);
        r->v.in_error_page = 0;
        return 0;
    }
    gw_resp_simple(r, code, page_type(path), body, size, NULL);
    free(body);
    return 1;
}

int gw_headers_client_cert(gw_req_t *r)
{
    const gw_conn_t *c = r->conn;
    const char *why = gw_tls_verify_result(c->s.ssl, r->vs->conf->srv.dep.ssl_verify_client);
    if (!why)
        return 0;
    if (SSL_get0_peer_certificate(c->s.ssl))
        gw_log(GW_LOG_INFO, 0, "client %s: SSL certificate verify error: (%ld:%s)", c->s.peer_text,
               SSL_get_verify_result(c->s.ssl),
               X509_verify_cert_error_string(SSL_get_verify_result(c->s.ssl)));
    else
        gw_log(GW_LOG_INFO, 0, "client %s sent no required SSL certificate", c->s.peer_text);
    /* nginx's page for its codes 495/496, sent as 400 */
    char body[512];
    int n = snprintf(body, sizeof(body),
                     "<html>\r\n<head><title>400 %s</title></head>\r\n<body>\r\n"
                     "<center><h1>400 Bad Request</h1></center>\r\n<center>%s</center>\r\n"
                     "<hr><center>tlsgate</center>\r\n</body>\r\n</html>\r\n",
                     why, why);
    r->close_after = 1;
    r->keep_alive = 0;
    gw_resp_simple(r, 400, "text/html", body, (size_t)n, NULL);
    return 1;
}
