/*
 * nginx-syntax tokenizer and tree builder; see lexer.h for the accepted syntax.
 *
 * The builder is iterative: an explicit stack of open blocks (at most GW_CONF_MAX_DEPTH)
 * plus a counter of blocks being skipped (too deep, or opened by a broken directive), so
 * no input can exhaust the C stack.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lexer.h"

enum tok {
    T_WORD,  /* lx->buf holds the token, lx->tok_len bytes */
    T_SEMI,  /* ; */
    T_OPEN,  /* { */
    T_CLOSE, /* } */
    T_BAD,   /* a token with an error (already reported) */
    T_EOF,
};

typedef struct lexer {
    const char *file;
    const char *s;
    size_t len;
    size_t pos;
    int line;
    int tok_line; /* line where the last token started */
    gw_errlist_t *errs;
    int nerr;
    int eof_reported;  /* the input ended inside a string: no further EOF complaints */
    int nul_reported;  /* a NUL byte was reported */
    const char *dname; /* directive being assembled, for messages; NULL if none */
    size_t tok_len;
    char buf[GW_CONF_MAX_TOKEN + 1];
} lexer_t;

/* A directive being assembled from tokens. */
typedef struct pending {
    char **args;
    size_t n;
    int line;
    int started; /* a token (good or bad) was seen */
    int bad;     /* a token had an error: the directive is dropped */
} pending_t;

static void lex_error(lexer_t *lx, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void lex_error(lexer_t *lx, int line, const char *fmt, ...)
{
    char q[160];
    const char *name = lx->dname ? gw_conf_quote(q, sizeof(q), lx->dname, 64) : "syntax";
    char reason[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);
    gw_errlist_add(lx->errs, "%s:%d: %s: %s", lx->file, line, name, reason);
    lx->nerr++;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Append c to the token; past the limit the token is marked too long (reported once). */
static void tok_add(lexer_t *lx, char c, int *too_long)
{
    if (lx->tok_len < GW_CONF_MAX_TOKEN) {
        lx->buf[lx->tok_len++] = c;
        return;
    }
    if (!*too_long) {
        *too_long = 1;
        lex_error(lx, lx->tok_line, "token too long (limit %d bytes)", GW_CONF_MAX_TOKEN);
    }
}

/*
 * Handle a backslash at lx->pos (the caller checked it). Returns 0, or -1 when the input
 * ends right after the backslash.
 */
static int tok_escape(lexer_t *lx, int *too_long, int *nul)
{
    if (lx->pos + 1 >= lx->len)
        return -1;
    char c = lx->s[lx->pos + 1];
    lx->pos += 2;
    switch (c) {
    case '"':
    case '\'':
    case '\\':
        tok_add(lx, c, too_long);
        return 0;
    case 'n':
        tok_add(lx, '\n', too_long);
        return 0;
    case 't':
        tok_add(lx, '\t', too_long);
        return 0;
    case 'r':
        tok_add(lx, '\r', too_long);
        return 0;
    case '\0':
        *nul = 1;
        return 0;
    case '\n':
        lx->line++;
        break;
    default:
        break;
    }
    tok_add(lx, '\\', too_long);
    tok_add(lx, c, too_long);
    return 0;
}

/* Only the first NUL byte is reported; every one makes its token bad. */
static void report_nul(lexer_t *lx, int line)
{
    if (lx->nul_reported)
        return;
    lx->nul_reported = 1;
    lex_error(lx, line, "NUL byte in input");
}

/* A quoted string starting at lx->pos (the quote). */
static enum tok scan_quoted(lexer_t *lx)
{
    char q = lx->s[lx->pos++];
    int too_long = 0, nul = 0, bad = 0;
    for (;;) {
        if (lx->pos >= lx->len) {
            lex_error(lx, lx->tok_line, "unterminated quoted string");
            lx->eof_reported = 1;
            return T_BAD;
        }
        char c = lx->s[lx->pos];
        if (c == '\\') {
            int line = lx->line;
            if (tok_escape(lx, &too_long, &nul) != 0) {
                lex_error(lx, lx->tok_line, "unterminated quoted string");
                lx->eof_reported = 1;
                lx->pos = lx->len;
                return T_BAD;
            }
            if (nul) {
                report_nul(lx, line);
                bad = 1;
            }
            nul = 0;
            continue;
        }
        lx->pos++;
        if (c == q)
            break;
        if (c == '\0') {
            report_nul(lx, lx->line);
            bad = 1;
            continue;
        }
        if (c == '\n')
            lx->line++;
        tok_add(lx, c, &too_long);
    }
    if (lx->pos < lx->len) {
        char c = lx->s[lx->pos];
        if (!is_space(c) && c != ';' && c != '{' && c != '}') {
            char shown[16];
            if (c > 0x20 && c < 0x7f)
                snprintf(shown, sizeof(shown), "\"%c\"", c);
            else
                snprintf(shown, sizeof(shown), "byte 0x%02x", (unsigned char)c);
            lex_error(lx, lx->line, "unexpected %s after quoted string", shown);
            /* skip the rest of the word */
            while (lx->pos < lx->len) {
                c = lx->s[lx->pos];
                if (is_space(c) || c == ';' || c == '{' || c == '}')
                    break;
                if (c == '\0')
                    report_nul(lx, lx->line);
                lx->pos++;
            }
            return T_BAD;
        }
    }
    return too_long || bad ? T_BAD : T_WORD;
}

static enum tok scan_word(lexer_t *lx)
{
    int too_long = 0, bad = 0;
    while (lx->pos < lx->len) {
        char c = lx->s[lx->pos];
        if (is_space(c) || c == ';' || c == '{' || c == '}')
            break;
        if (c == '\0') {
            report_nul(lx, lx->line);
            bad = 1;
            lx->pos++;
            continue;
        }
        if (c == '\\') {
            int nul = 0, line = lx->line;
            if (tok_escape(lx, &too_long, &nul) != 0) {
                lex_error(lx, lx->line, "unexpected end of file after \"\\\"");
                lx->eof_reported = 1;
                lx->pos++;
                return T_BAD;
            }
            if (nul) {
                report_nul(lx, line);
                bad = 1;
            }
            continue;
        }
        tok_add(lx, c, &too_long);
        lx->pos++;
    }
    return too_long || bad ? T_BAD : T_WORD;
}

static enum tok next_token(lexer_t *lx)
{
    lx->tok_len = 0;
    for (;;) {
        if (lx->pos >= lx->len)
            return T_EOF;
        char c = lx->s[lx->pos];
        if (c == '\n') {
            lx->line++;
            lx->pos++;
        } else if (is_space(c)) {
            lx->pos++;
        } else if (c == '#') {
            while (lx->pos < lx->len && lx->s[lx->pos] != '\n') {
                if (lx->s[lx->pos] == '\0')
                    report_nul(lx, lx->line);
                lx->pos++;
            }
        } else {
            break;
        }
    }
    lx->tok_line = lx->line;
    char c = lx->s[lx->pos];
    switch (c) {
    case ';':
        lx->pos++;
        return T_SEMI;
    case '{':
        lx->pos++;
        return T_OPEN;
    case '}':
        lx->pos++;
        return T_CLOSE;
    case '"':
    case '\'':
        return scan_quoted(lx);
    default:
        return scan_word(lx);
    }
}

static void pending_clear(pending_t *d)
{
    gw_conf_strv_free(&d->args, &d->n);
    memset(d, 0, sizeof(*d));
}

/* Move the pending directive into parent's children; returns the new node. */
static gw_conf_node_t *emit(gw_conf_node_t *parent, pending_t *d, int block)
{
    gw_conf_node_t *node = gw_conf_xpush(&parent->children, &parent->n_children, sizeof(*node));
    node->args = d->args;
    node->n_args = d->n;
    node->line = d->line;
    node->has_block = block;
    memset(d, 0, sizeof(*d));
    return node;
}

int gw_conf_lex(const char *file, const char *text, size_t len, gw_conf_node_t *root,
                gw_errlist_t *errs)
{
    lexer_t *lx = gw_conf_xcalloc(1, sizeof(*lx));
    lx->file = file;
    lx->s = text;
    lx->len = len;
    lx->line = 1;
    lx->errs = errs;

    gw_conf_node_t *stack[GW_CONF_MAX_DEPTH + 1];
    int depth = 0;
    size_t skip = 0; /* blocks being skipped inside stack[depth] */
    stack[0] = root;
    pending_t d = {0};

    for (;;) {
        lx->dname = d.n > 0 ? d.args[0] : NULL;
        enum tok t = next_token(lx);
        if (t == T_WORD || t == T_BAD) {
            int first = !d.started;
            if (first) {
                d.started = 1;
                d.line = lx->tok_line;
            }
            if (t == T_BAD) {
                d.bad = 1;
                continue;
            }
            /* In skipped blocks and broken directives only the name is kept, for messages. */
            if ((!d.bad && skip == 0) || first) {
                d.args = gw_conf_xrealloc(d.args, (d.n + 1) * sizeof(*d.args));
                char *w = gw_conf_xcalloc(1, lx->tok_len + 1);
                memcpy(w, lx->buf, lx->tok_len);
                d.args[d.n++] = w;
            }
            continue;
        }
        if (t == T_SEMI) {
            if (!d.started)
                lex_error(lx, lx->tok_line, "unexpected \";\"");
            else if (!d.bad && skip == 0)
                emit(stack[depth], &d, 0);
            pending_clear(&d);
            continue;
        }
        if (t == T_OPEN) {
            if (!d.started) {
                lex_error(lx, lx->tok_line, "unexpected \"{\"");
                skip++;
            } else if (d.bad || skip > 0) {
                skip++;
            } else if (depth == GW_CONF_MAX_DEPTH) {
                lex_error(lx, d.line, "blocks nested too deeply (limit %d)", GW_CONF_MAX_DEPTH);
                skip++;
            } else {
                gw_conf_node_t *node = emit(stack[depth], &d, 1);
                stack[++depth] = node;
            }
            pending_clear(&d);
            continue;
        }
        if (t == T_CLOSE) {
            if (d.n > 0 && !d.bad)
                lex_error(lx, lx->tok_line, "unexpected \"}\", expecting \";\"");
            pending_clear(&d);
            lx->dname = NULL;
            if (skip > 0) {
                skip--;
            } else if (depth == 0) {
                lex_error(lx, lx->tok_line, "unexpected \"}\"");
            } else {
                depth--;
            }
            continue;
        }
        /* T_EOF */
        if (!lx->eof_reported) {
            if (d.n > 0 && !d.bad)
                lex_error(lx, d.line, "unexpected end of file, expecting \";\" or \"{\"");
            pending_clear(&d);
            if (depth > 0) {
                lx->dname = stack[depth]->args[0];
                lex_error(lx, stack[depth]->line, "unexpected end of file, expecting \"}\"");
            } else if (skip > 0) {
                lx->dname = NULL;
                lex_error(lx, lx->line, "unexpected end of file, expecting \"}\"");
            }
        }
        break;
    }
    pending_clear(&d);
    int n = lx->nerr;
    free(lx);
    return n;
}

void gw_conf_node_free(gw_conf_node_t *node)
{
    if (!node)
        return;
    gw_conf_strv_free(&node->args, &node->n_args);
    for (size_t i = 0; i < node->n_children; i++)
        gw_conf_node_free(&node->children[i]);
    free(node->children);
    memset(node, 0, sizeof(*node));
}
