/*
 * `include PATTERN;` (nginx's ngx_conf_include): the directives of the files PATTERN
 * names take the include's place in the tree before the walk, so every directive may be
 * included in any block, and messages name the included file and its line.
 */
#include <errno.h>
#include <glob.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "conf.h"
#include "lexer.h"

static int has_wildcard(const char *s)
{
    return strpbrk(s, "*?[") != NULL;
}

/* Give every node of the tree that has no file yet the file f. */
static void set_file(gw_conf_node_t *n, const char *f)
{
    for (size_t i = 0; i < n->n_children; i++) {
        gw_conf_node_t *k = &n->children[i];
        if (!k->file)
            k->file = f;
        set_file(k, f);
    }
}

static int expand(gw_conf_parser_t *p, gw_conf_node_t *block, const char *file, int depth);

/* Read, lex and expand one included file into *out (zeroed by the caller). */
static int load_one(gw_conf_parser_t *p, const char *path, const char *from, int line, int depth,
                    gw_conf_node_t *out)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        gw_errlist_add(p->errs, "%s:%d: include: cannot open \"%s\": %s", from, line, path,
                       strerror(errno));
        return 1;
    }
    if (!S_ISREG(st.st_mode)) {
        gw_errlist_add(p->errs, "%s:%d: include: \"%s\" is not a regular file", from, line, path);
        return 1;
    }
    char *buf;
    size_t len;
    gw_errlist_t e = {0};
    if (gw_conf_read_file(path, &buf, &len, &e) != 0) {
        gw_errlist_add(p->errs, "%s:%d: include: %s", from, line, e.n ? e.v[0] : path);
        gw_errlist_clear(&e);
        return 1;
    }
    const char *name = gw_conf_add_file(p->conf, path);
    int errs = gw_conf_lex(name, buf, len, out, p->errs);
    free(buf);
    if (errs)
        p->syntax_errors = 1;
    set_file(out, name);
    return errs + expand(p, out, name, depth + 1);
}

/* Expand the includes among block's children (and, recursively, their blocks); file is
 * the file block's nodes without a file of their own came from. */
static int expand(gw_conf_parser_t *p, gw_conf_node_t *block, const char *file, int depth)
{
    int errs = 0;
    for (size_t i = 0; i < block->n_children; i++) {
        gw_conf_node_t *n = &block->children[i];
        const char *nf = n->file ? n->file : file;
        if (strcmp(n->args[0], "include") != 0) {
            if (n->has_block)
                errs += expand(p, n, nf, depth);
            continue;
        }
        /* an include is replaced by what it names, whatever happens: the walker never
         * sees it */
        gw_conf_node_t inc = *n;
        memmove(n, n + 1, (block->n_children - i - 1) * sizeof(*n));
        block->n_children--;
        if (inc.has_block || inc.n_args != 2) {
            gw_errlist_add(p->errs, "%s:%d: include: %s", nf, inc.line,
                           inc.has_block ? "directive does not take a block"
                                         : "invalid number of arguments");
            gw_conf_node_free(&inc);
            i--;
            errs++;
            continue;
        }
        if (depth >= GW_CONF_MAX_INCLUDE_DEPTH) {
            gw_errlist_add(p->errs,
                           "%s:%d: include: more than %d nested includes (does a "
                           "file include itself?)",
                           nf, inc.line, GW_CONF_MAX_INCLUDE_DEPTH);
            gw_conf_node_free(&inc);
            i--;
            errs++;
            continue;
        }
        char *pattern = gw_conf_abs_path(p, inc.args[1]);
        gw_conf_node_t got = {0};
        if (has_wildcard(pattern)) {
            glob_t g;
            int r = glob(pattern, GLOB_ERR, NULL, &g);
            if (r == 0) {
                for (size_t k = 0; k < g.gl_pathc; k++) {
                    gw_conf_node_t one = {0};
                    errs += load_one(p, g.gl_pathv[k], nf, inc.line, depth, &one);
                    for (size_t m = 0; m < one.n_children; m++) {
                        gw_conf_node_t *dst =
                            gw_conf_xpush(&got.children, &got.n_children, sizeof(*dst));
                        *dst = one.children[m];
                    }
                    free(one.children);
                }
                globfree(&g);
            } else if (r != GLOB_NOMATCH) {
                gw_errlist_add(p->errs, "%s:%d: include: cannot read \"%s\"", nf, inc.line,
                               pattern);
                errs++;
            }
        } else {
            errs += load_one(p, pattern, nf, inc.line, depth, &got);
        }
        free(pattern);
        gw_conf_node_free(&inc);
        /* splice got's children in at i */
        if (got.n_children) {
            size_t tail = block->n_children - i;
            block->children = gw_conf_xrealloc(block->children,
                                               (block->n_children + got.n_children) * sizeof(*n));
            memmove(block->children + i + got.n_children, block->children + i, tail * sizeof(*n));
            memcpy(block->children + i, got.children, got.n_children * sizeof(*n));
            block->n_children += got.n_children;
            i += got.n_children;
        }
        free(got.children);
        i--; /* the loop's i++ looks at what followed the include */
    }
    return errs;
}

int gw_conf_expand_includes(gw_conf_parser_t *p, gw_conf_node_t *root, const char *file)
{
    return expand(p, root, file, 0);
}
