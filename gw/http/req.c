/* The request object (http/req.h): free list, the answer API over the protocol's ops,
 * the access log, the hop-by-hop table. */
#include "http/req.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/stats.h"
#include "http/vars.h"

void (*gw_req_metrics_refresh)(void);

/* ---- request blocks, recycled per worker (issue #21) ----
 * A worker keeps at most FREE_MAX: a steady keep-alive load allocates nothing. */
#define FREE_MAX 32

typedef union free_rq {
    union free_rq *next;
    gw_req_t r;
} free_rq_t;

static free_rq_t *free_rq;
static unsigned n_free_rq;

gw_req_t *gw_req_take(void)
{
    gw_req_t *r;
    if (free_rq) {
        r = &free_rq->r;
        free_rq = free_rq->next;
        n_free_rq--;
    } else {
        r = malloc(sizeof(free_rq_t));
        if (!r)
            abort(); /* as at start-up: a worker cannot go on without it */
    }
    /* everything but the 3.4 KiB head, which the parser fills */
    r->ops = NULL;
    r->owner = NULL;
    r->conn = NULL;
    r->proto = 0;
    r->vs = NULL;
    r->peer_text = "";
    r->tls = 0;
    r->status = r->is_head = r->keep_alive = r->close_after = r->log_pending = 0;
    r->bytes_sent = 0;
    r->file_fd = -1;
    r->file_off = r->file_left = 0;
    r->request_line[0] = r->log_referer[0] = r->log_ua[0] = '\0';
    memset(&r->v, 0, sizeof(r->v)); /* http/vars.h: error answers read it before a head
                                       is parsed (a stale settings pointer crashed) */
    return r;
}

void gw_req_give(gw_req_t *r)
{
    if (!r)
        return;
    if (r->file_fd >= 0)
        close(r->file_fd);
    r->file_fd = -1;
    gw_vars_release(&r->v);
    if (n_free_rq >= FREE_MAX) {
        free(r);
        return;
    }
    free_rq_t *b = (free_rq_t *)r;
    b->next = free_rq;
    free_rq = b;
    n_free_rq++;
}

/* ---- the answer ---- */

void gw_resp_head(gw_req_t *r, int status, const char *content_type, uint64_t content_length,
                  const char *extra)
{
    r->status = status;
    if (status >= 100 && status < 600)
        GW_STAT_ADD(responses[status / 100], 1);
    r->ops->head(r, status, content_type, content_length, extra);
}

void gw_resp_simple(gw_req_t *r, int status, const char *content_type, const char *body,
                    size_t body_len, const char *extra)
{
    /* RFC 9110 §15.3.5, §15.4.5: 204 and 304 end after the header section */
    if (status == 204 || status == 304)
        body_len = 0;
    gw_resp_head(r, status, content_type, body_len, extra);
    if (!r->is_head && body_len) {
        r->ops->body(r, body, body_len);
        r->bytes_sent = body_len;
    }
}

void gw_resp_page(gw_req_t *r, int status, const char *extra)
{
    char body[512];
    const char *reason = gw_http_reason(status);
    int n = snprintf(body, sizeof(body),
                     "<html>\r\n<head><title>%d %s</title></head>\r\n<body>\r\n"
                     "<center><h1>%d %s</h1></center>\r\n<hr><center>tlsgate</center>\r\n"
                     "</body>\r\n</html>\r\n",
                     status, reason, status, reason);
    gw_resp_simple(r, status, "text/html", body, (size_t)n, extra);
}

void gw_resp_error(gw_req_t *r, int status)
{
    if (status >= 400 && status != 404 && status != 403 && status != 405 && status != 416 &&
        status != 421)
        r->close_after = 1;       /* framing or limits failed: the connection cannot go on */
    if (gw_error_page(r, status)) /* error_page: http/headers.c */
        return;
    gw_resp_page(r, status, status == 405 ? "Allow: GET, HEAD\r\n" : NULL);
}

void gw_resp_file(gw_req_t *r, int fd, uint64_t off, uint64_t len)
{
    if (r->file_fd >= 0)
        close(r->file_fd);
    r->file_fd = fd;
    r->file_off = off;
    r->file_left = len;
}

/* ---- hop-by-hop fields ---- */

int gw_http_hop_by_hop(const char *name, size_t len)
{
    static const struct {
        const char *n;
        size_t l;
    } names[] = {{"connection", 10}, {"keep-alive", 10}, {"proxy-connection", 16},
                 {"te", 2},          {"trailer", 7},     {"transfer-encoding", 17},
                 {"upgrade", 7}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i].l == len && strncasecmp(name, names[i].n, len) == 0)
            return 1;
    return 0;
}

char *gw_put_u64(char *o, uint64_t v)
{
    char tmp[20];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *o++ = tmp[--n];
    return o;
}

/* ---- access log (nginx "combined") ---- */

static size_t log_escape(char *out, size_t cap, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (size_t i = 0; i < n && o + 4 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '\\') {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[ch >> 4];
            out[o++] = hex[ch & 15];
        } else {
            out[o++] = (char)ch;
        }
    }
    return o;
}

static void copy_log_field(char *dst, size_t cap, const char *v, size_t len)
{
    if (!v || !len) {
        snprintf(dst, cap, "-");
        return;
    }
    size_t o = log_escape(dst, cap - 1, v, len);
    dst[o] = '\0';
}

void gw_req_log_fields(gw_req_t *r)
{
    const gw_http_request_t *q = &r->req;
    int n = snprintf(r->request_line, sizeof(r->request_line), "%.*s ", (int)q->method_len,
                     q->method_str);
    size_t o = (size_t)n;
    o +=
        log_escape(r->request_line + o, sizeof(r->request_line) - o - 16, q->target, q->target_len);
    if (r->proto == GW_REQ_HTTP2)
        snprintf(r->request_line + o, sizeof(r->request_line) - o, " HTTP/2.0");
    else
        snprintf(r->request_line + o, sizeof(r->request_line) - o, " HTTP/1.%d", q->version_minor);
    copy_log_field(r->log_referer, sizeof(r->log_referer), q->referer, q->referer_len);
    copy_log_field(r->log_ua, sizeof(r->log_ua), q->user_agent, q->user_agent_len);
}

/* the request line of a head that failed to parse, escaped (its first 200 bytes) */
void gw_req_log_bad_line(gw_req_t *r, const char *p, size_t l)
{
    size_t o = log_escape(r->request_line, sizeof(r->request_line) - 1, p, l > 200 ? 200 : l);
    r->request_line[o] = '\0';
    snprintf(r->log_referer, sizeof(r->log_referer), "-");
    snprintf(r->log_ua, sizeof(r->log_ua), "-");
}

int gw_req_abort_status(int body_read)
{
    return body_read ? 499 : 400;
}

void gw_req_log_unfinished(gw_req_t *r)
{
    if (!r || !r->log_pending)
        return;
    if (!r->status)
        r->status = gw_req_abort_status(1);
    gw_req_access_log(r);
}

void gw_req_access_log(gw_req_t *r)
{
    r->log_pending = 0;
    if (!r->vs || r->vs->access_log_fd < 0)
        return;
    if (gw_logfmt_write(r, r->vs->access_log_fd)) /* log_format: http/logfmt.c */
        return;
    char line[2048];
    int n = snprintf(line, sizeof(line), "%s - - [%s] \"%s\" %d %llu \"%s\" \"%s\"\n", r->peer_text,
                     gw_log_date(), r->request_line, r->status, (unsigned long long)r->bytes_sent,
                     r->log_referer, r->log_ua);
    if (n > (int)sizeof(line))
        n = (int)sizeof(line);
    ssize_t w = write(r->vs->access_log_fd, line, (size_t)n);
    (void)w;
}
