/*
 * gw/conf internals: the nginx-syntax tokenizer and parse tree (lexer.c), and the
 * walker state and directive table shared by conf.c and directives.c. Nothing here is
 * meant for code outside gw/conf; the public interface is conf.h.
 *
 * Syntax accepted by gw_conf_lex():
 *   - tokens are separated by space, tab, CR and LF;
 *   - `;` ends a simple directive, `{ ... }` follows a block directive;
 *   - `#` at the start of a token starts a comment that runs to the end of the line
 *     (inside a token it is an ordinary character);
 *   - a token starting with `"` or `'` is a quoted string ending at the same quote; it
 *     may contain whitespace, `;`, `{`, `}` and newlines, and must be followed by
 *     whitespace, `;`, `{`, `}` or the end of input;
 *   - in quoted and unquoted tokens a backslash escapes the next character: `\"`, `\'`
 *     and `\\` give the character, `\n`, `\t` and `\r` give LF, TAB and CR, any other
 *     pair is kept as is (so `\d` stays `\d`, as in nginx);
 *   - errors: a NUL byte, an unterminated string, a token longer than GW_CONF_MAX_TOKEN
 *     bytes, blocks nested deeper than GW_CONF_MAX_DEPTH, an unexpected `;`, `{` or `}`,
 *     and the end of input inside a directive or block.
 */
#ifndef GW_CONF_LEXER_H
#define GW_CONF_LEXER_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"

#define GW_CONF_MAX_DEPTH 16   /* nesting of blocks; main context is depth 0 */
#define GW_CONF_MAX_TOKEN 4096 /* bytes of one token after unescaping */

/** One directive: its words, line and (for block directives) its children. */
typedef struct gw_conf_node {
    char **args; /* args[0] is the directive name; n_args >= 1 (root: 0); heap strings */
    size_t n_args;
    int line;                      /* 1-based line of the directive's first token */
    const char *file;              /* the included file it came from (conf->files), or NULL:
                                    * the file of the enclosing block */
    int has_block;                 /* 1 when the directive was followed by { ... } */
    struct gw_conf_node *children; /* directives of the block (root: the whole text) */
    size_t n_children;
} gw_conf_node_t;

/**
 * Tokenize text (len bytes, need not be NUL-terminated) into the tree under root, which
 * must be zeroed by the caller; file names the text in messages. Directives containing
 * a syntax error are left out of the tree (with their block, if any); everything else
 * is kept so that the caller can still report further errors.
 *
 * Every error is appended to errs as "FILE:LINE: NAME: REASON", NAME being the
 * directive the error occurred in, or "syntax" when no directive had started.
 * Returns the number of errors appended (0 on success). Free the tree with
 * gw_conf_node_free(root), also after errors.
 */
int gw_conf_lex(const char *file, const char *text, size_t len, gw_conf_node_t *root,
                gw_errlist_t *errs);

/** Free everything a node owns (args and children, recursively); the node itself is zeroed,
 * not freed. NULL is accepted. */
void gw_conf_node_free(gw_conf_node_t *node);

/* ---- allocation helpers (conf.c): abort on out-of-memory, as gw_errlist_add does ---- */

/** realloc() that aborts on failure; a size of 0 allocates 1 byte. */
void *gw_conf_xrealloc(void *p, size_t size);
/** calloc() of n * size bytes that aborts on failure or overflow. */
void *gw_conf_xcalloc(size_t n, size_t size);
/** A copy of the n elements of size bytes at src (gw_conf_xcalloc, then memcpy). */
void *gw_conf_xmemdup(const void *src, size_t n, size_t size);
/** strdup() that aborts on failure; NULL gives NULL. */
char *gw_conf_xstrdup(const char *s);
/** vasprintf() that aborts on failure; the caller frees the string. */
char *gw_conf_xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
/** Grow *v (elements of elem bytes, *n used) by one zeroed element; returns it. */
void *gw_conf_xpush(void *v, size_t *n, size_t elem);
/** Free the *n strings of *v and the array; *v = NULL, *n = 0 after. */
void gw_conf_strv_free(char ***v, size_t *n);

/* ---- walker state shared by conf.c and directives.c ---- */

/** Contexts (blocks) a directive may appear in. */
enum gw_conf_ctx {
    GW_CTX_MAIN = 0x01,
    GW_CTX_EVENTS = 0x02,
    GW_CTX_HTTP = 0x04,
    GW_CTX_SERVER = 0x08,
    GW_CTX_LOCATION = 0x10,
};

/** Which struct a directive's offset points into; the walker passes its address. */
enum gw_conf_group {
    GW_GRP_NONE = 0, /* block directives: the setter gets NULL */
    GW_GRP_MAIN,     /* gw_conf_t (main and events) */
    GW_GRP_SRV,      /* gw_srv_settings_t of the http block or of a server */
    GW_GRP_LOC,      /* gw_loc_settings_t of the http block, a server or a location */
    GW_GRP_SERVER,   /* gw_server_t */
    GW_GRP_LOCATION, /* gw_location_t */
};

/* gw_conf_directive_t.flags */
#define GW_DIR_BLOCK 0x01u       /* takes a { } block and no ; */
#define GW_DIR_MULTI 0x02u       /* may be repeated in one block */
#define GW_DIR_DEFAULT_DOC 0x04u /* default text is documentation only (merge fills it) */
#define GW_DIR_BLOCK_OPT 0x08u   /* may take a { } block or end with ; */

#define GW_CONF_MAX_DIRECTIVES 160 /* size of the per-block "seen" arrays */

/** Parse state for one gw_conf_parse() call. */
typedef struct gw_conf_parser {
    gw_conf_t *conf;
    gw_errlist_t *errs;
    const char *file;  /* name of the text being walked, owned by conf->files */
    int syntax_errors; /* lexer errors: cross-directive checks are skipped */
    unsigned char main_seen[GW_CONF_MAX_DIRECTIVES];   /* directive counts, main block */
    unsigned char events_seen[GW_CONF_MAX_DIRECTIVES]; /* ... events block */
    unsigned char http_seen[GW_CONF_MAX_DIRECTIVES];   /* ... http block */
    const char *http_file;                             /* where the http block is, for messages */
    int http_line;
    int saw_server;              /* http has a server directive (valid or not) */
    int http_saw_cert;           /* http has ssl_certificate[_key] (valid or not) */
    unsigned char *srv_saw_cert; /* per server: ssl_certificate[_key] given (valid or not) */
    size_t n_srv_saw_cert;
} gw_conf_parser_t;

/** The block being walked: its context and the structs its directives fill. */
typedef struct gw_conf_scope {
    unsigned ctx;            /* one GW_CTX_* */
    gw_srv_settings_t *srv;  /* http and server blocks */
    gw_loc_settings_t *loc;  /* http, server and location blocks */
    gw_server_t *server;     /* server and location blocks */
    gw_location_t *location; /* location blocks */
    unsigned char *seen;     /* GW_CONF_MAX_DIRECTIVES counts of directives in this block */
} gw_conf_scope_t;

struct gw_conf_directive;

/**
 * A setter: apply node n (args[1..] are the arguments, already checked against the
 * directive's arity) to base, the struct of the directive's group. Reports errors with
 * gw_conf_error()/gw_conf_bad_value() and returns -1 then, else 0.
 */
typedef int (*gw_conf_set_fn)(gw_conf_parser_t *p, gw_conf_scope_t *sc,
                              const struct gw_conf_directive *d, const gw_conf_node_t *n,
                              void *base);

/** One row of the declarative directive table (directives.c). */
typedef struct gw_conf_directive {
    const char *name;
    unsigned ctx;   /* GW_CTX_* bits where the directive is allowed */
    unsigned flags; /* GW_DIR_* */
    int min_args;   /* arguments, not counting the name */
    int max_args;   /* -1 = no limit */
    int group;      /* enum gw_conf_group */
    size_t offset;  /* offsetof() the field in the group's struct */
    gw_conf_set_fn set;
    int64_t lo, hi;           /* range for numeric setters */
    const char *args_doc;     /* argument synopsis, Markdown */
    const char *default_text; /* applied through set() by the merge step; NULL = none */
    const char *doc;          /* one-line description */
} gw_conf_directive_t;

/** The directive table and its length. */
extern const gw_conf_directive_t gw_conf_directives[];
extern const size_t gw_conf_n_directives;

/** A context as the references (docs/config.md, tlsgate.conf(5)) present it: its GW_CTX_*
 * bit, its heading and an introduction in Markdown (man.c renders it in roff). */
typedef struct gw_conf_section {
    unsigned ctx;
    const char *title;
    const char *intro;
} gw_conf_section_t;

/** The contexts in the order the references list them, and their number. */
extern const gw_conf_section_t gw_conf_sections[];
extern const size_t gw_conf_n_sections;

/** For each of gw_conf_sections in order: section(out, sec), then row(out, d) for every
 * directive allowed in it, in table order (the walk both references make). */
void gw_conf_each_section(void *out, void (*section)(void *out, const gw_conf_section_t *sec),
                          void (*row)(void *out, const gw_conf_directive_t *d));

/** Whether the references say "May be repeated." of d (a repeatable simple directive). */
int gw_conf_repeatable(const gw_conf_directive_t *d);

/** Index of the directive called name in gw_conf_directives, or -1. */
int gw_conf_find_directive(const char *name);

/**
 * Replace every `include PATTERN;` in the tree under root (any depth) by the directives
 * of the files PATTERN names: a path resolved against the prefix like other relative
 * paths, with glob(3) wildcards (files taken in sorted order; a pattern with wildcards
 * may match nothing, a plain path must exist), regular files only, at most
 * GW_CONF_MAX_INCLUDE_DEPTH nested includes (which catches a file including itself).
 * Nodes taken from a file carry its name (node->file) for the messages of later steps.
 * Errors go to p->errs as "FILE:LINE: include: REASON" naming the including file and
 * line; syntax errors inside an included file name that file and its line. Returns the
 * number of errors appended; p->syntax_errors is set when an included file had some.
 * (conf/include.c)
 */
#define GW_CONF_MAX_INCLUDE_DEPTH 16
int gw_conf_expand_includes(gw_conf_parser_t *p, gw_conf_node_t *root, const char *file);

/** Read a whole configuration file (at most 16 MiB) into a heap buffer (*buf, *len,
 * NUL-terminated). Returns 0, or -1 after adding "PATH: cannot open|read: REASON" to
 * errs. (conf.c) */
int gw_conf_read_file(const char *path, char **buf, size_t *len, gw_errlist_t *errs);

/** Remember a file name for the lifetime of conf (messages point into it). (conf.c) */
const char *gw_conf_add_file(gw_conf_t *c, const char *name);

/** Walk the children of block in scope sc: look each one up, check it and call its setter. */
void gw_conf_walk(gw_conf_parser_t *p, gw_conf_scope_t *sc, const gw_conf_node_t *block);

/** Append "FILE:LINE: NAME: REASON" (FILE = p->file) to p->errs. */
void gw_conf_error(gw_conf_parser_t *p, int line, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/** Append "FILE:LINE: NAME: invalid value \"ARG\": REASON" for n->args[argi]; returns -1. */
int gw_conf_bad_value(gw_conf_parser_t *p, const gw_conf_node_t *n, size_t argi, const char *fmt,
                      ...) __attribute__((format(printf, 4, 5)));

/** Read n->args[argi] as a flag, "on" or "off" in any case (as nginx does): stores 1 or 0 in
 * *out and returns 0, or reports it with gw_conf_bad_value() and returns -1 (*out kept). */
int gw_conf_get_flag(gw_conf_parser_t *p, const gw_conf_node_t *n, size_t argi, int *out);

/** Write s to buf (size bytes, NUL-terminated) with control characters, `"` and `\` escaped
 * and at most max input bytes shown ("..." appended when cut). Returns buf. */
char *gw_conf_quote(char *buf, size_t size, const char *s, size_t max);

/** Resolve path against conf->prefix unless absolute; returns a heap string. */
char *gw_conf_abs_path(const gw_conf_parser_t *p, const char *path);

/** Check the certificate/key pairing of one block's settings (end of http/server block). */
void gw_conf_check_certs(gw_conf_parser_t *p, const gw_srv_settings_t *srv);

/** Reset settings to "not given" (GW_UNSET_* / NULL / 0). */
void gw_conf_srv_init(gw_srv_settings_t *s);
void gw_conf_loc_init(gw_loc_settings_t *l);

#endif
