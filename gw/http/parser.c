/*
 * HTTP/1.1 request parsing (RFC 9112) and the small pieces of RFC 9110 semantics the
 * gateway needs: framing headers, Range, path normalisation, reason phrases.
 *
 * Everything here works on the caller's bytes without allocating. The head parser is a
 * single forward pass driven by a character-class table; it is re-run from the start
 * when more bytes arrive, which keeps it stateless (a head is a few hundred bytes).
 * Indices rather than pointers are used for bounds so that huge limits cannot make
 * pointer arithmetic overflow.
 */
#include "http/parser.h"

#include <limits.h>
#include <stddef.h>
#include <string.h>

/* Character classes (bit flags of ctab[]). */
#define C_TCHAR 0x01  /* token: "!#$%&'*+-.^_`|~" DIGIT ALPHA (RFC 9110 §5.6.2) */
#define C_TARGET 0x02 /* request-target byte: VCHAR except '#' (see parse_request_line) */
#define C_VALUE 0x04  /* field-vchar / obs-text / SP / HTAB (RFC 9110 §5.5) */
#define C_HOST 0x08   /* reg-name: unreserved / sub-delims / '%' (RFC 3986 §3.2.2) */
#define C_HEX 0x10    /* HEXDIG */

/* Generated from the definitions above; rows of 16 bytes. */
static const unsigned char ctab[256] = {
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x04, 0x0f, 0x06, 0x05, 0x0f, 0x0f, 0x0f, 0x0f, 0x0e, 0x0e, 0x0f, 0x0f, 0x0e, 0x0f, 0x0f, 0x06,
    0x1f, 0x1f, 0x1f, 0x1f, 0x1f, 0x1f, 0x1f, 0x1f, 0x1f, 0x1f, 0x06, 0x0e, 0x06, 0x0e, 0x06, 0x06,
    0x06, 0x1f, 0x1f, 0x1f, 0x1f, 0x1f, 0x1f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f,
    0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x06, 0x06, 0x06, 0x07, 0x0f,
    0x07, 0x1f, 0x1f, 0x1f, 0x1f, 0x1f, 0x1f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f,
    0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x06, 0x07, 0x06, 0x0f, 0x00,
    0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04,
    0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04,
    0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04,
    0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04,
    0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04,
    0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04,
    0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04,
    0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04,
};

#define IS(c, cls) (ctab[(unsigned char)(c)] & (cls))

static const gw_http_limits_t default_limits = {
    .max_request_line = GW_HTTP_DEFAULT_MAX_REQUEST_LINE,
    .max_field_line = GW_HTTP_DEFAULT_MAX_FIELD_LINE,
    .max_header_block = GW_HTTP_DEFAULT_MAX_HEADER_BLOCK,
    .max_headers = GW_HTTP_DEFAULT_MAX_HEADERS,
};

static int is_ws(unsigned char c)
{
    return c == ' ' || c == '\t';
}

static int is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static unsigned char lower(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + ('a' - 'A')) : c;
}

static int hexval(unsigned char c)
{
    if (c <= '9')
        return c - '0';
    return lower(c) - 'a' + 10;
}

int gw_http_token_eq(const char *tok, size_t len, const char *s)
{
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\0' || lower((unsigned char)tok[i]) != (unsigned char)s[i])
            return 0;
    }
    return s[len] == '\0';
}

/*
 * Next element of a comma-separated list (RFC 9110 §5.6.1) of v[0..n) at or after *pos,
 * with OWS trimmed. Empty elements are skipped because "a recipient MUST parse and ignore
 * a reasonable number of empty list elements" (§5.6.1.2). Quoted commas are not
 * special: no list this file reads carries quoted strings we need to keep intact.
 */
static int list_next(const char *v, size_t n, size_t *pos, const char **elem, size_t *elen)
{
    size_t i = *pos;
    while (i < n) {
        while (i < n && (is_ws((unsigned char)v[i]) || v[i] == ','))
            i++;
        size_t s = i;
        while (i < n && v[i] != ',')
            i++;
        size_t e = i;
        while (e > s && is_ws((unsigned char)v[e - 1]))
            e--;
        if (e > s) {
            *elem = v + s;
            *elen = e - s;
            *pos = i;
            return 1;
        }
    }
    *pos = i;
    return 0;
}

/* ------------------------------------------------------------------------------------- */
/* Request head                                                                          */
/* ------------------------------------------------------------------------------------- */

/* What the header fields told us, beyond what gw_http_request_t records. */
struct fields {
    int hosts;        /* Host field lines seen */
    const char *host; /* value of the Host field */
    size_t host_len;
    int te;         /* Transfer-Encoding seen */
    int te_chunked; /* "chunked" codings seen */
    int te_other;   /* a coding other than chunked seen */
    int conn_close;
    int conn_keep_alive;
    int ranges; /* Range field lines seen */
};

/*
 * At b[*i], which is CR or LF: step over the line terminator. Returns 1 when done, 0 when
 * the CRLF is cut by the end of the input, -400 for a bare CR.
 */
static int eol(const unsigned char *b, size_t n, size_t *i)
{
    if (b[*i] == '\n') {
        /* RFC 9112 §2.2: "a recipient MAY recognize a single LF as a line terminator". */
        (*i)++;
        return 1;
    }
    if (*i + 1 >= n)
        return 0;
    /* RFC 9112 §2.2: a bare CR "MUST consider that element to be invalid or replace each
     * bare CR with SP"; we reject, since a CR inside a line is never legitimate. */
    if (b[*i + 1] != '\n')
        return -400;
    *i += 2;
    return 1;
}

/*
 * A scan inside a line stopped at index i, at or past lim (the end of the input or the
 * line's length limit) while the line still had to go on. more: the status for "need more
 * bytes"; over: the status for a line over its limit.
 */
static int line_cut(const unsigned char *b, size_t i, size_t n, int more, int over)
{
    if (i >= n)
        return more;
    /* The limit falls on a line end that came too early: a syntax error, not a long line. */
    if (b[i] == '\r' || b[i] == '\n')
        return -400;
    return over;
}

int gw_http_method_id(const char *m, size_t n)
{
    /* RFC 9110 §9.1: "The method token is case-sensitive". */
    switch (n) {
    case 3:
        if (memcmp(m, "GET", 3) == 0)
            return GW_HTTP_GET;
        if (memcmp(m, "PUT", 3) == 0)
            return GW_HTTP_PUT;
        break;
    case 4:
        if (memcmp(m, "HEAD", 4) == 0)
            return GW_HTTP_HEAD;
        if (memcmp(m, "POST", 4) == 0)
            return GW_HTTP_POST;
        break;
    case 5:
        if (memcmp(m, "PATCH", 5) == 0)
            return GW_HTTP_PATCH;
        if (memcmp(m, "TRACE", 5) == 0)
            return GW_HTTP_TRACE;
        break;
    case 6:
        if (memcmp(m, "DELETE", 6) == 0)
            return GW_HTTP_DELETE;
        break;
    case 7:
        if (memcmp(m, "OPTIONS", 7) == 0)
            return GW_HTTP_OPTIONS;
        if (memcmp(m, "CONNECT", 7) == 0)
            return GW_HTTP_CONNECT;
        break;
    }
    return GW_HTTP_OTHER;
}

/* uri-host [ ":" port ] (RFC 3986 §3.2.2-3.2.3, RFC 9110 §7.2); userinfo is refused. */
static int host_valid(const char *s, size_t n)
{
    size_t i = 0;

    if (n == 0)
        return 0; /* RFC 9110 §4.2.1: an empty host in an http URI "MUST" be rejected */
    if (s[0] == '[') {
        /* IP-literal: IPv6address or IPvFuture; the exact form is left to whoever resolves
         * it, but only its character set is allowed. */
        i = 1;
        while (i < n && (IS(s[i], C_HOST) || s[i] == ':'))
            i++;
        if (i == 1 || i == n || s[i] != ']')
            return 0;
        i++;
    } else {
        while (i < n && IS(s[i], C_HOST))
            i++;
        if (i == 0)
            return 0;
    }
    if (i == n)
        return 1;
    if (s[i] != ':')
        return 0;
    for (i++; i < n; i++) {
        if (!is_digit((unsigned char)s[i]))
            return 0;
    }
    return 1;
}

/* Split an absolute-path [ "?" query ] at t into path and query. */
static void split_query(gw_http_request_t *req, const char *t, size_t n)
{
    const char *q = memchr(t, '?', n);

    req->path = t;
    req->path_len = q ? (size_t)(q - t) : n;
    if (q) {
        req->query = q + 1;
        req->query_len = n - req->path_len - 1;
    }
}

/*
 * Interpret the request-target (RFC 9112 §3.2). slash: a '/' inside the buffer, used as
 * the path of an absolute-form target without one, so that every pointer in req stays
 * inside the caller's buffer (callers may move the buffer and rebase them).
 */
static int parse_target(gw_http_request_t *req, const char *slash, int *absolute)
{
    const char *t = req->target;
    size_t n = req->target_len;

    if (t[0] == '/') {
        split_query(req, t, n);
        return 0;
    }
    if (n == 1 && t[0] == '*') {
        /* RFC 9112 §3.2.4: asterisk-form "is only used for a server-wide OPTIONS
         * request". */
        if (req->method != GW_HTTP_OPTIONS)
            return -400;
        req->path = t;
        req->path_len = 1;
        return 0;
    }
    /* absolute-form (RFC 9112 §3.2.2), http and https only: we are not a proxy. The
     * scheme is case-insensitive (RFC 3986 §3.1). authority-form (CONNECT) is refused
     * here as well. */
    size_t s;
    if (n > 7 && gw_http_token_eq(t, 7, "http://"))
        s = 7;
    else if (n > 8 && gw_http_token_eq(t, 8, "https://"))
        s = 8;
    else
        return -400;
    size_t a = s;
    while (a < n && t[a] != '/' && t[a] != '?')
        a++;
    /* RFC 9110 §4.2.4: "A recipient SHOULD parse for userinfo and treat its presence as
     * an error"; host_valid() refuses '@'. */
    if (!host_valid(t + s, a - s))
        return -400;
    req->host = t + s;
    req->host_len = a - s;
    *absolute = 1;
    if (a < n && t[a] == '/') {
        split_query(req, t + a, n - a);
    } else {
        req->path = slash;
        req->path_len = 1;
        if (a < n) {
            req->query = t + a + 1;
            req->query_len = n - a - 1;
        }
    }
    return 0;
}

/*
 * Content-Length = 1*DIGIT (RFC 9110 §8.6), or a list of identical values, which §8.6
 * lets a recipient accept as "a duplicate was generated or combined by an upstream
 * message processor". Values above INT64_MAX are refused: they are no real body length
 * and would overflow an off_t downstream.
 */
static int parse_content_length(const char *v, size_t n, uint64_t *out)
{
    size_t i = 0;
    int have = 0;
    uint64_t val = 0;

    for (;;) {
        if (i == n || !is_digit((unsigned char)v[i]))
            return -1; /* empty value, empty element, sign, garbage */
        uint64_t x = 0;
        while (i < n && is_digit((unsigned char)v[i])) {
            unsigned d = (unsigned)(v[i] - '0');
            if (x > ((uint64_t)INT64_MAX - d) / 10)
                return -1;
            x = x * 10 + d;
            i++;
        }
        if (have && x != val)
            return -1;
        val = x;
        have = 1;
        while (i < n && is_ws((unsigned char)v[i]))
            i++;
        if (i == n)
            break;
        if (v[i] != ',')
            return -1;
        i++;
        while (i < n && is_ws((unsigned char)v[i]))
            i++;
    }
    *out = val;
    return 0;
}

/* Transfer-Encoding = #transfer-coding (RFC 9112 §6.1); field lines accumulate in f. */
static int parse_transfer_encoding(const char *v, size_t n, struct fields *f)
{
    size_t pos = 0, elen, k;
    const char *e;
    int any = 0;

    f->te = 1;
    while (list_next(v, n, &pos, &e, &elen)) {
        any = 1;
        /* transfer-coding = token *( OWS ";" OWS transfer-parameter ) */
        k = 0;
        while (k < elen && IS(e[k], C_TCHAR))
            k++;
        size_t tok = k;
        while (k < elen && is_ws((unsigned char)e[k]))
            k++;
        if (tok == 0 || (k < elen && e[k] != ';'))
            return -400;
        if (gw_http_token_eq(e, tok, "chunked")) {
            /* chunked defines no parameters, and RFC 9112 §6.1: "A sender MUST NOT apply
             * the chunked transfer coding more than once to a message body". */
            if (k < elen || f->te_chunked)
                return -400;
            f->te_chunked = 1;
        } else {
            /* Another coding, possibly before chunked (§6.1 requires chunked last). We
             * decode none of them. §6.1 suggests 501, but a gateway that cannot frame the
             * body cannot be sure where the next request starts: like a malformed
             * coding it is a possible smuggling vector, so 400 and close. */
            f->te_other = 1;
        }
    }
    return any ? 0 : -400; /* 1#transfer-coding: at least one element */
}

/* Record the interpreted meaning of header h. Returns 0 or a negative status. */
static int interpret(gw_http_request_t *req, struct fields *f, const gw_http_header_t *h)
{
    const char *nm = h->name, *v = h->value;
    size_t nl = h->name_len, vl = h->value_len, pos = 0, elen;
    const char *e;

    switch (nl) {
    case 4:
        if (gw_http_token_eq(nm, nl, "host")) {
            /* RFC 9112 §3.2: "A server MUST respond with a 400 (Bad Request) status code
             * to any HTTP/1.1 request message that lacks a Host header field and to any
             * request message that contains more than one Host header field line or a
             * Host header field with an invalid field value." */
            if (f->hosts++ || !host_valid(v, vl))
                return -400;
            f->host = v;
            f->host_len = vl;
        }
        break;
    case 5:
        if (gw_http_token_eq(nm, nl, "range")) {
            /* Range is a singleton; two of them are no well-defined request: ignore both
             * and serve the whole representation, which is always allowed. */
            if (f->ranges++) {
                req->range = NULL;
                req->range_len = 0;
            } else {
                req->range = v;
                req->range_len = vl;
            }
        }
        break;
    case 6:
        if (gw_http_token_eq(nm, nl, "expect")) {
            /* RFC 9110 §10.1.1: "The expectation is case-insensitive." Other expectations
             * are ignored (a server MAY answer them with 417). */
            while (list_next(v, vl, &pos, &e, &elen)) {
                if (gw_http_token_eq(e, elen, "100-continue"))
                    req->expect_continue = 1;
            }
        }
        break;
    case 7:
        if (!req->referer && gw_http_token_eq(nm, nl, "referer")) {
            req->referer = v;
            req->referer_len = vl;
        }
        break;
    case 10:
        if (gw_http_token_eq(nm, nl, "connection")) {
            /* RFC 9110 §7.6.1: connection options are case-insensitive tokens. */
            while (list_next(v, vl, &pos, &e, &elen)) {
                if (gw_http_token_eq(e, elen, "close"))
                    f->conn_close = 1;
                else if (gw_http_token_eq(e, elen, "keep-alive"))
                    f->conn_keep_alive = 1;
            }
        } else if (!req->user_agent && gw_http_token_eq(nm, nl, "user-agent")) {
            req->user_agent = v;
            req->user_agent_len = vl;
        }
        break;
    case 13:
        if (!req->if_none_match && gw_http_token_eq(nm, nl, "if-none-match")) {
            req->if_none_match = v;
            req->if_none_match_len = vl;
        }
        break;
    case 14:
        if (gw_http_token_eq(nm, nl, "content-length")) {
            uint64_t cl;
            /* RFC 9112 §6.3: an invalid Content-Length in a request: "the server MUST
             * respond with a 400 (Bad Request) status code and then close the
             * connection". Repeated field lines must agree too. */
            if (parse_content_length(v, vl, &cl) != 0)
                return -400;
            if (req->has_content_length && cl != req->content_length)
                return -400;
            req->has_content_length = 1;
            req->content_length = cl;
        }
        break;
    case 17:
        if (gw_http_token_eq(nm, nl, "transfer-encoding"))
            return parse_transfer_encoding(v, vl, f);
        if (!req->if_modified_since && gw_http_token_eq(nm, nl, "if-modified-since")) {
            req->if_modified_since = v;
            req->if_modified_since_len = vl;
        }
        break;
    }
    return 0;
}

int gw_http_parse_request(const char *buf, size_t len, const gw_http_limits_t *limits,
                          gw_http_request_t *req)
{
    const unsigned char *b = (const unsigned char *)buf;
    const gw_http_limits_t *L = limits ? limits : &default_limits;
    struct fields f = {0};
    size_t n, i = 0, line, lim, t;
    int more, r, absolute = 0;

    /* Everything but the header array, which is filled as far as n_headers says. */
    memset(req, 0, offsetof(gw_http_request_t, headers));
    memset(&req->n_headers, 0, sizeof(*req) - offsetof(gw_http_request_t, n_headers));

    /* Only the first max_header_block bytes may hold the head; if it is not complete
     * within them, needing more bytes means the head is too large (431). The return value
     * must fit an int, hence the INT_MAX cap. */
    n = len;
    if (n > L->max_header_block)
        n = L->max_header_block;
    if (n > INT_MAX)
        n = INT_MAX;
    more = n < len ? -431 : 0;
    size_t max_headers =
        L->max_headers < GW_HTTP_MAX_HEADERS ? L->max_headers : GW_HTTP_MAX_HEADERS;

    /* RFC 9112 §2.2: a server "SHOULD ignore at least one empty line (CRLF) received prior
     * to the request-line"; the block limit bounds how many. */
    while (i < n && (b[i] == '\r' || b[i] == '\n')) {
        if ((r = eol(b, n, &i)) <= 0)
            return r < 0 ? r : more;
    }
    if (i >= n)
        return more;

    /* request-line = method SP request-target SP HTTP-version (RFC 9112 §3). Each scan
     * stops at lim, the end of the input or of the allowed line length, whichever is
     * first; a stop there is sorted out by line_cut(). */
    line = i;
    lim = line + (L->max_request_line < n - line ? L->max_request_line : n - line);
    while (i < lim && IS(b[i], C_TCHAR))
        i++;
    if (i >= lim)
        return line_cut(b, i, n, more, -414);
    /* RFC 9112 §3: "A recipient [...] MUST NOT attempt to autocorrect": a single SP, no
     * other whitespace, separates the parts. */
    if (i == line || b[i] != ' ')
        return -400;
    req->method_str = buf + line;
    req->method_len = i - line;
    req->method = gw_http_method_id(req->method_str, req->method_len);
    t = ++i;
    /* RFC 3986 forbids a few more characters ("<>\^`{|} and DEL...) than C_TARGET does, but
     * clients do send some of them unencoded; they are inert here because paths are
     * percent-decoded and normalised before use. Controls, SP, non-ASCII and the fragment
     * delimiter '#' (never sent in a request-target) are refused. */
    while (i < lim && IS(b[i], C_TARGET))
        i++;
    if (i >= lim)
        return line_cut(b, i, n, more, -414);
    if (i == t || b[i] != ' ')
        return -400;
    req->target = buf + t;
    req->target_len = i - t;
    i++;
    /* HTTP-version = HTTP-name "/" DIGIT "." DIGIT, HTTP-name = %s"HTTP": case-sensitive
     * (RFC 9112 §2.3). */
    static const char version[] = "HTTP/0.0";
    size_t v = i;
    for (size_t k = 0; k < sizeof(version) - 1; k++, i++) {
        if (i >= lim)
            return line_cut(b, i, n, more, -414);
        if (version[k] == '0' ? !is_digit(b[i]) : b[i] != (unsigned char)version[k])
            return -400;
    }
    if (i >= n)
        return more;
    if (b[i] != '\r' && b[i] != '\n')
        return -400;
    if ((r = eol(b, n, &i)) <= 0)
        return r < 0 ? r : more;
    /* RFC 9110 §2.5: a recipient SHOULD process a higher minor version "as if it were the
     * highest minor version within that major version to which the recipient is
     * conformant": HTTP/1.2+ is handled as 1.1. Other major versions get 505. */
    if (b[v + 5] != '1')
        return -505;
    req->version_minor = b[v + 7] == '0' ? 0 : 1;
    if ((r = parse_target(req, buf + v + 4, &absolute)) < 0)
        return r;

    /* field-line = field-name ":" OWS field-value OWS (RFC 9112 §5) */
    for (;;) {
        if (i >= n)
            return more;
        if (b[i] == '\r' || b[i] == '\n') {
            if ((r = eol(b, n, &i)) <= 0)
                return r < 0 ? r : more;
            break;
        }
        /* RFC 9112 §5.2: a server receiving obs-fold "MUST either reject the message by
         * sending a 400 (Bad Request) [...] or replace each received obs-fold with one or
         * more SP octets"; §2.2: whitespace between the start-line and the first field
         * "MUST either reject the message as invalid or consume each whitespace-preceded
         * line without further processing". We reject both. */
        if (b[i] == ' ' || b[i] == '\t')
            return -400;
        if (req->n_headers >= max_headers)
            return -431;
        line = i;
        lim = line + (L->max_field_line < n - line ? L->max_field_line : n - line);
        while (i < lim && IS(b[i], C_TCHAR))
            i++;
        if (i >= lim)
            return line_cut(b, i, n, more, -431);
        /* RFC 9112 §5.1: "A server MUST reject, with a response status code of 400 (Bad
         * Request), any received request message that contains whitespace between a header
         * field name and colon." Any other non-token byte is as bad. */
        if (i == line || b[i] != ':')
            return -400;
        gw_http_header_t *h = &req->headers[req->n_headers];
        h->name = buf + line;
        h->name_len = i - line;
        i++;
        while (i < lim && is_ws(b[i]))
            i++;
        size_t vs = i;
        while (i < lim && IS(b[i], C_VALUE))
            i++;
        if (i >= n)
            return more;
        /* RFC 9110 §5.5: field values hold no CTL but HTAB; "a recipient of CR, LF, or NUL
         * within a field value MUST either reject the message or replace each of those
         * characters with SP". */
        if (b[i] != '\r' && b[i] != '\n')
            return i >= lim ? -431 : -400;
        size_t ve = i;
        while (ve > vs && is_ws(b[ve - 1]))
            ve--;
        h->value = buf + vs;
        h->value_len = ve - vs;
        req->n_headers++;
        if ((r = interpret(req, &f, h)) < 0)
            return r;
        if ((r = eol(b, n, &i)) <= 0)
            return r < 0 ? r : more;
    }

    /* RFC 9112 §3.2: Host is mandatory in HTTP/1.1 (quoted in interpret()). */
    if (req->version_minor == 1 && f.hosts == 0)
        return -400;
    /* RFC 9112 §3.2.2: with an absolute-form target the server "MUST ignore the received
     * Host header field (if any) and instead use the host information of the
     * request-target"; parse_target() has set it. */
    if (!absolute) {
        req->host = f.host;
        req->host_len = f.host_len;
    }
    if (f.te) {
        /* RFC 9112 §6.1: "A server or client that receives an HTTP/1.0 message containing
         * a Transfer-Encoding header field MUST treat the message as if the framing is
         * faulty". */
        if (req->version_minor == 0)
            return -400;
        /* RFC 9112 §6.1: a server "MAY reject a request that contains both Content-Length
         * and Transfer-Encoding"; such a request is a smuggling attempt, so we do. */
        if (req->has_content_length)
            return -400;
        if (f.te_other)
            return -400;
        req->chunked = 1;
    }
    /* RFC 9112 §9.3: HTTP/1.1 persists unless "close"; HTTP/1.0 only with keep-alive. */
    if (req->version_minor == 1)
        req->keep_alive = !f.conn_close;
    else
        req->keep_alive = f.conn_keep_alive && !f.conn_close;
    /* RFC 9110 §10.1.1: "A server that receives a 100-continue expectation in an HTTP/1.0
     * request MUST ignore that expectation." */
    if (req->version_minor == 0)
        req->expect_continue = 0;
    return (int)i;
}

/* ------------------------------------------------------------------------------------- */
/* Chunked transfer coding (RFC 9112 §7.1)                                               */
/* ------------------------------------------------------------------------------------- */

#define CHUNK_LINE_MAX 4096          /* size line or trailer field line, without CRLF */
#define CHUNK_TRAILER_MAX (16 << 10) /* whole trailer section: it is read and discarded */

enum {
    CH_SIZE_FIRST, /* expecting the first HEXDIG of chunk-size */
    CH_SIZE,       /* in chunk-size */
    CH_SIZE_BWS,   /* BWS after chunk-size: only more BWS or ';' may follow */
    CH_EXT,        /* in chunk-ext, up to CR */
    CH_SIZE_LF,    /* CR of the size line seen */
    CH_DATA,       /* in chunk-data, chunk_left bytes to go */
    CH_DATA_CR,    /* CRLF after chunk-data */
    CH_DATA_LF,
    CH_TRAILER,      /* at the start of a trailer field line or the final CRLF */
    CH_TRAILER_NAME, /* in a trailer field name */
    CH_TRAILER_VALUE,
    CH_TRAILER_LF, /* CR of a trailer line seen */
    CH_END_LF,     /* CR of the final empty line seen */
    CH_DONE,
};

void gw_http_chunked_init(gw_http_chunked_t *d)
{
    memset(d, 0, sizeof(*d));
    d->state = CH_SIZE_FIRST;
}

int gw_http_chunked_decode(gw_http_chunked_t *d, char *buf, size_t *len, size_t *consumed,
                           uint64_t max_body)
{
    size_t n = *len, i = 0, out = 0;
    int ret = 0;

    if (d->state < 0) { /* an error is final */
        *len = 0;
        *consumed = 0;
        return d->state;
    }
    while (i < n && d->state != CH_DONE) {
        unsigned char c = (unsigned char)buf[i];

        switch (d->state) {
        case CH_DATA: {
            size_t take = n - i;
            if (take > d->chunk_left)
                take = (size_t)d->chunk_left;
            if (out != i)
                memmove(buf + out, buf + i, take);
            out += take;
            i += take;
            d->chunk_left -= take;
            d->total += take;
            if (d->chunk_left == 0)
                d->state = CH_DATA_CR;
            continue;
        }
        case CH_SIZE_FIRST:
        case CH_SIZE:
            if (IS(c, C_HEX)) {
                /* chunk-size = 1*HEXDIG; "The recipient MUST anticipate potentially large
                 * hexadecimal numerals and prevent parsing errors due to integer conversion
                 * overflows" (RFC 9112 §7.1). */
                if (d->chunk_left > (UINT64_MAX >> 4))
                    goto bad;
                d->chunk_left = (d->chunk_left << 4) | (uint64_t)hexval(c);
                d->state = CH_SIZE;
                break;
            }
            if (d->state == CH_SIZE_FIRST)
                goto bad;
            /* The size is complete: what follows is chunk-ext or the end of the line. */
            __attribute__((fallthrough));
        case CH_SIZE_BWS:
            if (is_ws(c)) {
                d->state = CH_SIZE_BWS;
            } else if (c == ';') {
                d->state = CH_EXT;
            } else if (c == '\r' && d->state == CH_SIZE) {
                d->state = CH_SIZE_LF;
            } else {
                goto bad; /* BWS is only allowed before a ';' */
            }
            break;
        case CH_EXT:
            /* chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] ):
             * ignored ("A recipient MUST ignore unrecognized chunk extensions"), but no
             * control characters may hide in it. */
            if (c == '\r')
                d->state = CH_SIZE_LF;
            else if (!IS(c, C_VALUE))
                goto bad;
            break;
        case CH_SIZE_LF:
            /* Chunk framing requires CRLF: a bare LF here is how request smuggling
             * between lenient and strict parsers starts. */
            if (c != '\n')
                goto bad;
            d->line_len = 0;
            if (d->chunk_left == 0) {
                d->state = CH_TRAILER; /* last-chunk */
                i++;
                continue;
            }
            if (d->chunk_left > UINT64_MAX - d->total ||
                (max_body && d->chunk_left > max_body - d->total)) {
                ret = -413;
                goto fail;
            }
            d->state = CH_DATA;
            i++;
            continue;
        case CH_DATA_CR:
            if (c != '\r')
                goto bad;
            d->state = CH_DATA_LF;
            break;
        case CH_DATA_LF:
            if (c != '\n')
                goto bad;
            d->state = CH_SIZE_FIRST;
            d->line_len = 0;
            i++;
            continue;
        case CH_TRAILER:
            /* trailer-section = *( field-line CRLF ), then CRLF; fields are discarded. */
            if (c == '\r') {
                d->state = CH_END_LF;
                break;
            }
            if (!IS(c, C_TCHAR))
                goto bad; /* obs-fold, empty name or garbage */
            d->state = CH_TRAILER_NAME;
            break;
        case CH_TRAILER_NAME:
            if (c == ':')
                d->state = CH_TRAILER_VALUE;
            else if (!IS(c, C_TCHAR))
                goto bad;
            break;
        case CH_TRAILER_VALUE:
            if (c == '\r')
                d->state = CH_TRAILER_LF;
            else if (!IS(c, C_VALUE))
                goto bad;
            break;
        case CH_TRAILER_LF:
            if (c != '\n' || ++d->chunk_left > CHUNK_TRAILER_MAX)
                goto bad;
            d->state = CH_TRAILER;
            d->line_len = 0;
            i++;
            continue;
        case CH_END_LF:
            if (c != '\n')
                goto bad;
            d->state = CH_DONE;
            ret = 1;
            i++;
            continue;
        default:
            goto bad;
        }
        /* A byte of a size or trailer line (CR included) was taken. */
        i++;
        if (++d->line_len > CHUNK_LINE_MAX + 1)
            goto bad;
        if (d->state >= CH_TRAILER) {
            /* chunk_left is free once in the trailers: it counts the section's bytes. */
            if (++d->chunk_left > CHUNK_TRAILER_MAX)
                goto bad;
        }
    }
    if (d->state == CH_DONE)
        ret = 1;
    *len = out;
    *consumed = i;
    return ret;
bad:
    ret = -400;
fail:
    d->state = ret;
    *len = out;
    *consumed = i;
    return ret;
}

/* ------------------------------------------------------------------------------------- */
/* Paths, ranges, reason phrases                                                         */
/* ------------------------------------------------------------------------------------- */

long gw_http_normalize_path(const char *path, size_t path_len, char *out, size_t out_cap)
{
    size_t i = 1, o, seg;

    if (!path || path_len == 0 || path[0] != '/' || !out || out_cap < 2)
        return -1;
    /* Invariant: out[0..seg) ends with '/', out[seg..o) is the segment being read. */
    out[0] = '/';
    o = seg = 1;
    for (;;) {
        int end = i == path_len;
        unsigned char c = 0;

        if (!end) {
            c = (unsigned char)path[i++];
            if (c == '%') {
                /* RFC 3986 §2.1: pct-encoded = "%" HEXDIG HEXDIG */
                if (path_len - i < 2 || !IS(path[i], C_HEX) || !IS(path[i + 1], C_HEX))
                    return -1;
                c = (unsigned char)(hexval((unsigned char)path[i]) << 4 |
                                    hexval((unsigned char)path[i + 1]));
                i += 2;
            }
            /* A NUL would cut the path short in any file-system call. */
            if (c == '\0')
                return -1;
        }
        if (end || c == '/') {
            /* Segment complete. A decoded "%2F" separates segments like '/': everything
             * is decided on decoded bytes, so no encoding can smuggle a ".." through. */
            size_t sl = o - seg;
            if (sl == 1 && out[seg] == '.') {
                o = seg; /* "." disappears (RFC 3986 §5.2.4 B) */
            } else if (sl == 2 && out[seg] == '.' && out[seg + 1] == '.') {
                /* ".." removes the previous segment (§5.2.4 C); at the root there is
                 * none, and that is an attempt to escape the document root. */
                if (seg == 1)
                    return -1;
                size_t p = seg - 1;
                while (out[p - 1] != '/')
                    p--;
                o = seg = p;
            } else if (sl > 0 && !end) {
                if (o + 1 >= out_cap)
                    return -1;
                out[o++] = '/';
                seg = o;
            }
            /* sl == 0: "//" collapses into one '/' */
            if (end)
                break;
            continue;
        }
        if (o + 1 >= out_cap)
            return -1;
        out[o++] = (char)c;
    }
    out[o] = '\0';
    return (long)o;
}

/* 1*DIGIT at s[*i..n), saturating at UINT64_MAX (a larger number is as good as infinite). */
static int range_num(const char *s, size_t n, size_t *i, uint64_t *val)
{
    size_t k = *i;
    uint64_t x = 0;

    while (k < n && is_digit((unsigned char)s[k])) {
        unsigned d = (unsigned)(s[k] - '0');
        x = x > (UINT64_MAX - d) / 10 ? UINT64_MAX : x * 10 + d;
        k++;
    }
    if (k == *i)
        return 0;
    *i = k;
    *val = x;
    return 1;
}

int gw_http_parse_range(const char *value, size_t len, uint64_t size, uint64_t *first,
                        uint64_t *last)
{
    size_t i = 0, pos = 0, elen, k = 0, count = 0;
    const char *e, *spec = NULL;
    size_t spec_len = 0;
    uint64_t a, z;

    if (!value)
        return 0;
    /* ranges-specifier = range-unit "=" range-set; "Range unit names are
     * case-insensitive" (RFC 9110 §14.1). Unknown units are ignored (§14.2). */
    while (i < len && IS(value[i], C_TCHAR))
        i++;
    if (i == len || value[i] != '=' || !gw_http_token_eq(value, i, "bytes"))
        return 0;
    i++;
    while (list_next(value + i, len - i, &pos, &e, &elen)) {
        if (++count > 1)
            return 0; /* several ranges: we only serve one, so serve all (200) */
        spec = e;
        spec_len = elen;
    }
    if (!spec)
        return 0;
    if (spec[0] == '-') {
        /* suffix-range = "-" suffix-length */
        k = 1;
        if (!range_num(spec, spec_len, &k, &z) || k != spec_len)
            return 0;
        /* §14.1.1: satisfiable only with "a non-zero suffix-length" */
        if (z == 0)
            return -416;
        /* An empty representation has no byte to send; a 200 with it is the answer. */
        if (size == 0)
            return 0;
        *first = z >= size ? 0 : size - z;
        *last = size - 1;
        return 1;
    }
    /* int-range = first-pos "-" [ last-pos ] */
    if (!range_num(spec, spec_len, &k, &a) || k == spec_len || spec[k] != '-')
        return 0;
    k++;
    z = UINT64_MAX;
    if (k < spec_len && (!range_num(spec, spec_len, &k, &z) || k != spec_len))
        return 0;
    /* §14.1.1: "A range-spec is invalid if the last-pos value is present and less than
     * the first-pos" -> ignore the header. */
    if (z < a)
        return 0;
    /* §14.1.1: satisfiable when "first-pos [...] is less than the current length". */
    if (a >= size)
        return -416;
    *first = a;
    *last = z >= size ? size - 1 : z;
    return 1;
}

const char *gw_http_reason(int status)
{
    /* RFC 9110 §15, plus 429 and 431 from RFC 6585. 306 and 418 are "(Unused)". */
    // clang-format off
    switch (status) {
    case 100: return "Continue";
    case 101: return "Switching Protocols";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 203: return "Non-Authoritative Information";
    case 204: return "No Content";
    case 205: return "Reset Content";
    case 206: return "Partial Content";
    case 300: return "Multiple Choices";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 305: return "Use Proxy";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 402: return "Payment Required";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 407: return "Proxy Authentication Required";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 416: return "Range Not Satisfiable";
    case 417: return "Expectation Failed";
    case 421: return "Misdirected Request";
    case 422: return "Unprocessable Content";
    case 426: return "Upgrade Required";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    }
    // clang-format on
    return "Unknown";
}
