/*
 * Request handlers: location matching, `return`, the status page, and static files
 * (GET/HEAD, directory index, conditional requests, single byte ranges).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/obs.h"
#include "core/stats.h"
#include "http/conn.h"
#include "proxy/proxy.h"

static const struct {
    const char *ext;
    const char *type;
} mime_types[] = {
    {"html", "text/html"},
    {"htm", "text/html"},
    {"css", "text/css"},
    {"txt", "text/plain"},
    {"js", "application/javascript"},
    {"mjs", "application/javascript"},
    {"json", "application/json"},
    {"xml", "text/xml"},
    {"svg", "image/svg+xml"},
    {"png", "image/png"},
    {"jpg", "image/jpeg"},
    {"jpeg", "image/jpeg"},
    {"gif", "image/gif"},
    {"webp", "image/webp"},
    {"avif", "image/avif"},
    {"ico", "image/x-icon"},
    {"woff", "font/woff"},
    {"woff2", "font/woff2"},
    {"pdf", "application/pdf"},
    {"wasm", "application/wasm"},
    {"zip", "application/zip"},
    {"gz", "application/gzip"},
    {"mp4", "video/mp4"},
    {"webm", "video/webm"},
    {"mp3", "audio/mpeg"},
};

/* nginx's default_type: unknown extensions are served as opaque bytes */
static const char *mime_type(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(path, '.');
    if (!dot || (slash && dot < slash))
        return "application/octet-stream";
    dot++;
    int first = dot[0] | 0x20; /* the extensions are lower case: most differ there */
    for (size_t i = 0; i < sizeof(mime_types) / sizeof(mime_types[0]); i++)
        if (first == mime_types[i].ext[0] && strcasecmp(dot, mime_types[i].ext) == 0)
            return mime_types[i].type;
    return "application/octet-stream";
}

/* nginx's choice: the exact location if one matches, else the longest prefix. */
static const gw_location_t *find_location(const gw_server_t *s, const char *path, size_t len)
{
    const gw_location_t *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < s->n_locations; i++) {
        const gw_location_t *l = &s->locations[i];
        size_t pl = strlen(l->path);
        if (l->match == GW_LOC_EXACT) {
            if (pl == len && memcmp(l->path, path, len) == 0)
                return l;
        } else if (pl <= len && pl >= best_len && memcmp(l->path, path, pl) == 0) {
            best = l;
            best_len = pl;
        }
    }
    return best;
}

static void handle_return(gw_req_t *c, const gw_location_t *l)
{
    int code = l->return_code;
    if (code == 444) { /* nginx: close the connection without a response */
        c->status = 444;
        c->close_after = 1;
        c->keep_alive = 0;
        return;
    }
    gw_vbuf_t text = {0}; /* the text or URL with its variables (http/vars.h) */
    if (l->return_text)
        gw_vars_expand(c, l->return_text, code >= 301 && code <= 308, &text);
    if (code == 301 || code == 302 || code == 303 || code == 307 || code == 308) {
        char extra[4096 + 16];
        snprintf(extra, sizeof(extra), "Location: %s\r\n", text.s ? text.s : "/");
        gw_resp_page(c, code, extra);
        gw_vbuf_free(&text);
        return;
    }
    if (l->return_text) {
        gw_resp_simple(c, code, "text/plain", text.s, text.len, NULL);
        gw_vbuf_free(&text);
        return;
    }
    if (code >= 400) {
        if (!gw_error_page(c, code))
            gw_resp_page(c, code, NULL); /* configured: the connection may go on */
        return;
    }
    gw_resp_simple(c, code, NULL, "", 0, NULL);
}

static void handle_status(gw_req_t *c)
{
    if (c->req.method != GW_HTTP_GET && c->req.method != GW_HTTP_HEAD) {
        gw_resp_error(c, 405);
        return;
    }
    /* Gauges are summed over the live workers' slots, so that a worker that died (and
     * whose slot the master cleared) is not counted forever. */
    long long active = 0, reading = 0, writing = 0, waiting = 0;
    /* only the slots ever used: each slot is several KB, and reading a slot's page of the
     * shared mapping for the first time would allocate it */
    int n_slots = (int)__atomic_load_n(&gw_stats->n_slots, __ATOMIC_ACQUIRE);
    if (n_slots > GW_STATS_MAX_WORKERS)
        n_slots = GW_STATS_MAX_WORKERS;
    for (int i = 0; i < n_slots; i++) {
        const gw_worker_stats_t *ws = &gw_stats->workers[i];
        if (__atomic_load_n(&ws->pid, __ATOMIC_RELAXED) <= 0)
            continue;
        active += __atomic_load_n(&ws->conns, __ATOMIC_RELAXED);
        reading += __atomic_load_n(&ws->reading, __ATOMIC_RELAXED);
        writing += __atomic_load_n(&ws->writing, __ATOMIC_RELAXED);
        waiting += __atomic_load_n(&ws->waiting, __ATOMIC_RELAXED);
    }
    static char body[1024 + GW_STATS_MAX_WORKERS * 160];
    int n = snprintf(
        body, 1024,
        "Active connections: %lld \n"
        "server accepts handled requests\n"
        " %llu %llu %llu \n"
        "Reading: %lld Writing: %lld Waiting: %lld \n"
        "TLS handshakes: %llu failed: %llu resumed: %llu TLSv1.2: %llu TLSv1.3: %llu\n"
        "Responses: 1xx: %llu 2xx: %llu 3xx: %llu 4xx: %llu 5xx: %llu\n"
        "Reloads: %llu Worker restarts: %llu\n",
        active, (unsigned long long)GW_STAT_GET(accepted), (unsigned long long)GW_STAT_GET(handled),
        (unsigned long long)GW_STAT_GET(requests), reading, writing, waiting,
        (unsigned long long)GW_STAT_GET(handshakes),
        (unsigned long long)GW_STAT_GET(handshakes_failed),
        (unsigned long long)GW_STAT_GET(handshakes_resumed), (unsigned long long)GW_STAT_GET(tls12),
        (unsigned long long)GW_STAT_GET(tls13), (unsigned long long)GW_STAT_GET(responses[1]),
        (unsigned long long)GW_STAT_GET(responses[2]),
        (unsigned long long)GW_STAT_GET(responses[3]),
        (unsigned long long)GW_STAT_GET(responses[4]),
        (unsigned long long)GW_STAT_GET(responses[5]), (unsigned long long)GW_STAT_GET(reloads),
        (unsigned long long)GW_STAT_GET(worker_restarts));
    /* per worker process: async TLS jobs (ssl_async) */
    for (int i = 0; i < n_slots && n >= 0 && (size_t)n < sizeof(body) - 160; i++) {
        const gw_worker_stats_t *ws = &gw_stats->workers[i];
        int pid = __atomic_load_n(&ws->pid, __ATOMIC_RELAXED);
        if (pid <= 0)
            continue;
        n += snprintf(body + n, sizeof(body) - (size_t)n,
                      "Worker %d generation %u: connections: %lld async paused: %lld "
                      "resumed: %llu drained: %llu want_async_job: %llu\n",
                      pid, ws->generation, (long long)__atomic_load_n(&ws->conns, __ATOMIC_RELAXED),
                      (long long)__atomic_load_n(&ws->paused, __ATOMIC_RELAXED),
                      (unsigned long long)__atomic_load_n(&ws->resumed, __ATOMIC_RELAXED),
                      (unsigned long long)__atomic_load_n(&ws->drained, __ATOMIC_RELAXED),
                      (unsigned long long)__atomic_load_n(&ws->want_async_job, __ATOMIC_RELAXED));
    }
    gw_resp_simple(c, 200, "text/plain", body, (size_t)n, "Cache-Control: no-cache\r\n");
}

/* `status;` (JSON) and `metrics;` (Prometheus): a snapshot of every worker's counters,
 * rendered into a heap buffer (tens of KB with the provider's histograms) that the
 * response copies. */
static void handle_obs(gw_req_t *c, int prometheus)
{
    if (c->req.method != GW_HTTP_GET && c->req.method != GW_HTTP_HEAD) {
        gw_resp_error(c, 405);
        return;
    }
    if (gw_req_metrics_refresh)
        gw_req_metrics_refresh();  /* this worker's provider counters as of now */
    static gw_obs_snapshot_t snap; /* 6 KB: one thread per worker, not on the stack */
    gw_obuf_t b = {0};
    int rc = gw_obs_collect(gw_stats, &snap);
    if (rc == 0)
        rc = prometheus ? gw_obs_format_prometheus(&snap, &b) : gw_obs_format_json(&snap, &b);
    gw_obs_snapshot_free(&snap);
    if (rc != 0) {
        gw_log(GW_LOG_ALERT, ENOMEM, "cannot render the %s page",
               prometheus ? "metrics" : "status");
        free(b.data);
        gw_resp_error(c, 500);
        return;
    }
    gw_resp_simple(c, 200,
                   prometheus ? "text/plain; version=0.0.4; charset=utf-8" : "application/json",
                   b.data, b.len, "Cache-Control: no-cache\r\n");
    free(b.data);
}

static int open_error_status(int err)
{
    switch (err) {
    case ENOENT:
    case ENOTDIR:
    case ENAMETOOLONG:
    case ELOOP:
        return 404;
    case EACCES:
    case EPERM:
        return 403;
    default:
        return 500;
    }
}

/* Does an If-None-Match list contain etag (or "*")? RFC 9110 §13.1.2, weak comparison. */
static int etag_listed(const char *list, size_t len, const char *etag)
{
    size_t el = strlen(etag);
    size_t i = 0;
    while (i < len) {
        while (i < len && (list[i] == ' ' || list[i] == '\t' || list[i] == ','))
            i++;
        if (i < len && list[i] == '*')
            return 1;
        size_t start = i;
        if (i + 1 < len && list[i] == 'W' && list[i + 1] == '/')
            start = i += 2;
        while (i < len && list[i] != ',')
            i++;
        size_t end = i;
        while (end > start && (list[end - 1] == ' ' || list[end - 1] == '\t'))
            end--;
        if (end - start == el && memcmp(list + start, etag, el) == 0)
            return 1;
    }
    return 0;
}

static const gw_http_header_t *find_header(const gw_http_request_t *r, const char *lname)
{
    for (size_t i = 0; i < r->n_headers; i++)
        if (gw_http_token_eq(r->headers[i].name, r->headers[i].name_len, lname))
            return &r->headers[i];
    return NULL;
}

static char *put_hex(char *o, uint64_t v)
{
    char tmp[16];
    int n = 0;
    do {
        tmp[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    while (n)
        *o++ = tmp[--n];
    return o;
}

/* "\"MTIME-SIZE\"" in lower-case hex, as nginx (and our former snprintf) */
static void make_etag(char *out, uint64_t mtime, uint64_t size)
{
    char *o = out;
    *o++ = '"';
    o = put_hex(o, mtime);
    *o++ = '-';
    o = put_hex(o, size);
    *o++ = '"';
    *o = '\0';
}

static void serve_file(gw_req_t *c, int fd, const struct stat *st, const char *path)
{
    char etag[64], lm[32];
    make_etag(etag, (uint64_t)st->st_mtime, (uint64_t)st->st_size);
    gw_format_http_date(st->st_mtime, lm);
    const gw_http_request_t *r = &c->req;
    uint64_t size = (uint64_t)st->st_size;
    char extra[512];

    /* RFC 9110 §13.2.2: If-None-Match first; If-Modified-Since only without it */
    int not_modified = 0;
    if (r->if_none_match)
        not_modified = etag_listed(r->if_none_match, r->if_none_match_len, etag);
    else if (r->if_modified_since) {
        time_t ims = gw_parse_http_date(r->if_modified_since, r->if_modified_since_len);
        not_modified = ims != -1 && st->st_mtime <= ims;
    }
    if (not_modified) {
        close(fd);
        snprintf(extra, sizeof(extra), "Last-Modified: %s\r\nETag: %s\r\n", lm, etag);
        /* 304 carries no body and no Content-Length of the representation: send 0 */
        gw_resp_head(c, 304, NULL, 0, extra);
        return;
    }

    uint64_t first = 0, last = size ? size - 1 : 0;
    int ranged = 0;
    if (r->range) {
        const gw_http_header_t *ifr = find_header(r, "if-range");
        int honour =
            !ifr ||
            (ifr->value_len == strlen(etag) && memcmp(ifr->value, etag, ifr->value_len) == 0) ||
            (ifr->value_len == strlen(lm) && memcmp(ifr->value, lm, ifr->value_len) == 0);
        if (honour) {
            int rr = gw_http_parse_range(r->range, r->range_len, size, &first, &last);
            if (rr < 0) {
                close(fd);
                snprintf(extra, sizeof(extra), "Content-Range: bytes */%llu\r\n",
                         (unsigned long long)size);
                gw_resp_page(c, 416, extra);
                return;
            }
            ranged = rr == 1;
        }
    }
    uint64_t len = size ? last - first + 1 : 0;
    int n = snprintf(extra, sizeof(extra),
                     "Last-Modified: %s\r\nETag: %s\r\nAccept-Ranges: bytes\r\n", lm, etag);
    if (ranged)
        snprintf(extra + n, sizeof(extra) - (size_t)n, "Content-Range: bytes %llu-%llu/%llu\r\n",
                 (unsigned long long)first, (unsigned long long)last, (unsigned long long)size);
    gw_resp_head(c, ranged ? 206 : 200, mime_type(path), len, extra);
    if (c->is_head || len == 0) {
        close(fd);
        return;
    }
    gw_resp_file(c, fd, first, len);
}

static void redirect_dir(gw_req_t *c, const char *norm)
{
    /* nginx answers a directory without its trailing slash with 301 to "path/" */
    char extra[4096 + 64];
    const gw_http_request_t *r = &c->req;
    int n = snprintf(extra, sizeof(extra), "Location: %s/%s%.*s\r\n", norm, r->query ? "?" : "",
                     r->query ? (int)r->query_len : 0, r->query ? r->query : "");
    if (n < 0 || (size_t)n >= sizeof(extra)) {
        gw_resp_error(c, 414); /* the redirect would not fit a header line we send */
        return;
    }
    gw_resp_page(c, 301, extra);
}

/* norm: the request path percent-decoded and normalised (gw_http_normalize_path), nl
 * its length. */
static void handle_static(gw_req_t *c, const gw_loc_settings_t *loc, const char *norm, long nl)
{
    const gw_http_request_t *r = &c->req;
    if (r->method != GW_HTTP_GET && r->method != GW_HTTP_HEAD) {
        gw_resp_error(c, 405);
        return;
    }
    char path[PATH_MAX];
    const char *root = loc->root; /* the merge step set the default */
    int pl = snprintf(path, sizeof(path), "%s%s", root, norm);
    if (pl < 0 || (size_t)pl >= sizeof(path)) {
        gw_resp_error(c, 414);
        return;
    }
    if (norm[nl - 1] == '/') {
        for (size_t i = 0; i < loc->index.n; i++) {
            char ipath[PATH_MAX];
            int il = snprintf(ipath, sizeof(ipath), "%s%s", path, loc->index.v[i]);
            if (il < 0 || (size_t)il >= sizeof(ipath))
                continue;
            int fd = open(ipath, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
            if (fd < 0) {
                if (errno == ENOENT)
                    continue;
                gw_resp_error(c, open_error_status(errno));
                return;
            }
            struct stat st;
            if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
                close(fd);
                continue;
            }
            serve_file(c, fd, &st, ipath);
            return;
        }
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            gw_log(GW_LOG_ERROR, 0, "directory index of \"%s\" is forbidden, client: %s", path,
                   c->peer_text);
            gw_resp_error(c, 403);
        } else {
            gw_resp_error(c, 404);
        }
        return;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        int st = open_error_status(errno);
        if (st != 404)
            gw_log(GW_LOG_ERROR, errno, "open() \"%s\" failed, client: %s", path, c->peer_text);
        gw_resp_error(c, st);
        return;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        gw_log(GW_LOG_ERROR, errno, "fstat() \"%s\" failed", path);
        close(fd);
        gw_resp_error(c, 500);
        return;
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        redirect_dir(c, norm);
        return;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        gw_resp_error(c, 404);
        return;
    }
    serve_file(c, fd, &st, path);
}

void gw_http_handle(gw_req_t *c)
{
    const gw_server_t *s = c->vs->conf;
    const gw_http_request_t *r = &c->req;
    /* the same for both protocols: c->conn is the transport (an HTTP/2 stream's
     * connection), the client address is the request's own (real_ip, http/vars.h) */
    if (gw_headers_client_cert(c)) /* ssl_verify_client: nginx's 400 page */
        return;
    if (r->method == GW_HTTP_OPTIONS && r->target_len == 1 && r->target[0] == '*') {
        gw_resp_simple(c, 200, NULL, "", 0, "Allow: GET, HEAD, OPTIONS\r\n");
        return;
    }
    /* Locations match the decoded, normalised path, as nginx's do: matching the raw
     * path would let "/%70rivate", "//private" or "/a/../private" bypass
     * "location /private". The same path then names the file. */
    char norm[4096];
    if (r->path_len >= sizeof(norm)) {
        gw_resp_error(c, 414); /* longer than any file name we could open */
        return;
    }
    long nl = gw_http_normalize_path(r->path, r->path_len, norm, sizeof(norm));
    if (nl < 0) {
        gw_resp_error(c, 400);
        return;
    }
    const gw_location_t *l = find_location(s, norm, (size_t)nl);
    c->v.loc = l ? &l->loc : &s->loc; /* add_header, error_page, allow/deny */
    /* client_max_body_size: the location's, before any of the body is read (nginx) */
    int64_t max = gw_req_max_body(c);
    if (r->has_content_length && max > 0 && r->content_length > (uint64_t)max) {
        gw_resp_error(c, 413);
        return;
    }
    if (gw_access_denied(c, c->v.loc)) { /* http/access.c */
        gw_resp_error(c, 403);
        return;
    }
    if (l && l->proxy_pass) {
        if (c->proto == GW_REQ_HTTP2)
            gw_proxy_start_h2(c->owner, l, norm, (size_t)nl);
        else
            gw_proxy_start(c->owner, l, norm, (size_t)nl);
        return;
    }
    if (l && l->return_code) {
        handle_return(c, l);
        return;
    }
    if (l && l->stub_status) {
        handle_status(c);
        return;
    }
    if (l && (l->status_json || l->metrics)) {
        handle_obs(c, l->metrics);
        return;
    }
    handle_static(c, l ? &l->loc : &s->loc, norm, nl);
}
