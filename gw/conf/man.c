#include "conf/man.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "conf.h"
#include "lexer.h"

/* Markdown of the directive table (backticks = literal, asterisks = argument, "\|" = "|")
 * to roff: literals bold, arguments italic; backslashes, leading dots and apostrophes,
 * and UTF-8 sequences escaped. */
static void roff_text(FILE *f, const char *s, int at_line_start)
{
    int code = 0, ital = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (at_line_start && (*p == '.' || *p == '\''))
            fputs("\\&", f);
        at_line_start = 0;
        if (*p == '\\' && p[1] == '|') {
            fputc('|', f);
            p++;
        } else if (*p == '`') {
            code = !code;
            fputs(code ? "\\fB" : (ital ? "\\fI" : "\\fR"), f);
        } else if (*p == '*' && !code) {
            ital = !ital;
            fputs(ital ? "\\fI" : (code ? "\\fB" : "\\fR"), f);
        } else if (*p == '\\') {
            fputs("\\e", f);
        } else if (*p == '-') {
            fputs("\\-", f);
        } else if (*p >= 0x80) {
            /* one UTF-8 sequence as \[uXXXX] */
            unsigned cp = 0;
            int extra = *p >= 0xf0 ? 3 : *p >= 0xe0 ? 2 : *p >= 0xc0 ? 1 : 0;
            cp = *p & (0x3f >> extra);
            int ok = extra > 0;
            for (int i = 0; i < extra && ok; i++) {
                if ((p[1] & 0xc0) != 0x80) {
                    ok = 0;
                    break;
                }
                cp = (cp << 6) | (*++p & 0x3f);
            }
            if (ok)
                fprintf(f, "\\[u%04X]", cp);
            else
                fputc('?', f);
        } else if (*p == '\n') {
            fputc('\n', f);
            at_line_start = 1;
        } else {
            fputc(*p, f);
        }
    }
    if (code || ital)
        fputs("\\fR", f);
}

/* A page's opening: the .TH line (title, section, version, manual), then the NAME section
 * (name: "NAME \\- WHAT", roff) and the SYNOPSIS heading, which the page goes on with. */
static void man_head(FILE *f, const char *title, int section, const char *version,
                     const char *manual, const char *name)
{
    fprintf(f,
            ".\\\" Generated from gw/conf/directives.c by gw_conf_write_man(); do not edit.\n"
            ".TH %s %d \"\" \"tlsgate %s\" \"%s\"\n"
            ".SH NAME\n%s\n.SH SYNOPSIS\n",
            title, section, version, manual, name);
}

static void ctx_list(FILE *f, unsigned ctx)
{
    static const char *const names[] = {"main", "events", "http", "server", "location"};
    int first = 1;
    for (int i = 0; i < 5; i++) {
        if (ctx & (1u << i)) {
            fprintf(f, "%s%s", first ? "" : ", ", names[i]);
            first = 0;
        }
    }
}

static void man_section(void *out, const gw_conf_section_t *sec)
{
    FILE *f = out;
    fputs(".SH ", f);
    for (const char *t = sec->title; *t; t++)
        fputc(toupper((unsigned char)*t), f);
    fputc('\n', f);
    roff_text(f, sec->intro, 1);
    fputc('\n', f);
}

static void man_row(void *out, const gw_conf_directive_t *d)
{
    FILE *f = out;
    fprintf(f, ".TP\n\\fB%s\\fR", d->name);
    if (d->args_doc[0]) {
        fputc(' ', f);
        roff_text(f, d->args_doc, 0);
    }
    fputc('\n', f);
    roff_text(f, d->doc, 1);
    if (gw_conf_repeatable(d))
        fputs(" May be repeated.", f);
    fputs("\n.br\nDefault: ", f);
    if (d->default_text) {
        fputs("\\fB", f);
        roff_text(f, d->default_text, 0);
        fputs("\\fR", f);
    } else {
        fputs("none", f);
    }
    fputs(". Context: ", f);
    ctx_list(f, d->ctx);
    fputs(".\n", f);
}

static void write_conf5(FILE *f, const char *version)
{
    man_head(f, "TLSGATE.CONF", 5, version, "File Formats Manual",
             "tlsgate.conf \\- tlsgate configuration file");
    fputs(".B /etc/tlsgate/tlsgate.conf\n"
          ".SH DESCRIPTION\n"
          "\\fBtlsgate\\fR(8) reads an nginx\\-style configuration file. Only the directives "
          "below are known; anything else is an error, and all errors of a file are reported "
          "at once as \\fIFILE\\fR:\\fILINE\\fR: \\fIDIRECTIVE\\fR: \\fIREASON\\fR. Directives "
          "given with \\fB\\-g\\fR on the command line are read after the file, in the main "
          "context.\n"
          ".SS Syntax\n"
          "A simple directive is a name and arguments separated by whitespace and ended by "
          "\\fB;\\fR; a block directive is followed by \\fB{ ... }\\fR holding further "
          "directives. \\fB#\\fR starts a comment that runs to the end of the line. An "
          "argument containing whitespace, \\fB;\\fR, \\fB{\\fR, \\fB}\\fR or \\fB#\\fR must "
          "be quoted with \\fB\"\\fR or \\fB\\(aq\\fR; \\fB\\e\"\\fR, \\fB\\e\\(aq\\fR and "
          "\\fB\\e\\e\\fR stand for the character itself, \\fB\\en\\fR, \\fB\\et\\fR and "
          "\\fB\\er\\fR for newline, tab and carriage return. Blocks nest at most 16 deep and "
          "a token is at most 4096 bytes.\n"
          ".PP\n"
          "\\fISIZE\\fR is a number of bytes, optionally followed by \\fBk\\fR, \\fBm\\fR or "
          "\\fBg\\fR (KiB, MiB, GiB). \\fITIME\\fR is a number of seconds, or numbers with "
          "units in decreasing order: \\fBd\\fR, \\fBh\\fR, \\fBm\\fR, \\fBs\\fR, \\fBms\\fR "
          "(\\fB500ms\\fR, \\fB1m30s\\fR). Relative paths are resolved against the prefix "
          "directory (\\fB\\-p\\fR; by default the configuration file's directory).\n"
          ".PP\n"
          "A directive allowed in several blocks applies to the block it is in and to the "
          "blocks inside it that do not set it themselves (http, then server, then "
          "location). \\fBssl_certificate\\fR pairs are inherited as a whole, only by servers "
          "that define none. A directive that may appear only once per block is an error "
          "when repeated.\n",
          f);
    gw_conf_each_section(f, man_section, man_row);
    fputs(".SH FILES\n"
          ".TP\n.I /etc/tlsgate/tlsgate.conf\n"
          "The configuration read by the packaged systemd unit.\n"
          ".SH SEE ALSO\n"
          "\\fBtlsgate\\fR(8), \\fBopenssl\\-ocsp\\fR(1ssl), \\fBnginx\\fR(8)\n",
          f);
}

static void write_tlsgate8(FILE *f, const char *version)
{
    man_head(f, "TLSGATE", 8, version, "System Manager's Manual",
             "tlsgate \\- TLS\\-terminating HTTPS server and gateway");
    fputs(".B tlsgate\n"
          "[\\fB\\-c\\fR \\fIFILE\\fR] [\\fB\\-p\\fR \\fIPREFIX\\fR] [\\fB\\-g\\fR "
          "\\fIDIRECTIVES\\fR] [\\fB\\-t\\fR | \\fB\\-s\\fR \\fISIGNAL\\fR | \\fB\\-V\\fR]\n"
          ".br\n"
          ".B tlsgate\n"
          "\\fB\\-v\\fR | \\fB\\-h\\fR\n"
          ".SH DESCRIPTION\n"
          "\\fBtlsgate\\fR terminates TLS 1.2 and 1.3 (OpenSSL 3) and serves HTTP/1.1 with an "
          "nginx\\-style configuration (\\fBtlsgate.conf\\fR(5)) and nginx's command line. A "
          "master process reads the configuration, loads certificates, keys, providers and "
          "engines, binds the listening sockets and runs \\fBworker_processes\\fR workers "
          "that serve the connections. The OpenSSL provider \\fBtlsgate\\fR built into the "
          "binary (also installed as \\fItlsgate.so\\fR in OpenSSL's module directory) "
          "batches RSA, ECDSA P\\-256 and X25519 operations of concurrent handshakes on CPUs "
          "with AVX\\-512 IFMA.\n"
          ".PP\n"
          "Without \\fB\\-c\\fR and without \\fIPREFIX\\fR/tlsgate.conf, tlsgate serves "
          "an embedded default on https://127.0.0.1:8443/ with self\\-signed certificates "
          "created in the state directory.\n"
          ".SH OPTIONS\n"
          ".TP\n\\fB\\-c\\fR \\fIFILE\\fR\nThe configuration file.\n"
          ".TP\n\\fB\\-p\\fR \\fIPREFIX\\fR\nThe directory relative paths resolve against "
          "(default: the directory of \\fB\\-c\\fR \\fIFILE\\fR, else /etc/tlsgate).\n"
          ".TP\n\\fB\\-g\\fR \\fIDIRECTIVES\\fR\nExtra main\\-context directives, read after "
          "the file, e.g. \\fB\\-g \\(aqworker_processes 2;\\(aq\\fR.\n"
          ".TP\n\\fB\\-t\\fR\nTest the configuration: syntax, certificates, keys, OCSP "
          "responses, providers and engines; print warnings and errors; exit 0 when it is "
          "usable, 1 otherwise. Nothing is bound.\n"
          ".TP\n\\fB\\-s\\fR \\fISIGNAL\\fR\nSend \\fBreload\\fR (SIGHUP), \\fBquit\\fR "
          "(SIGQUIT), \\fBstop\\fR (SIGTERM) or \\fBreopen\\fR (SIGUSR1) to the master whose "
          "pid the configuration's \\fBpid\\fR file holds.\n"
          ".TP\n\\fB\\-V\\fR\nPrint the version, the build options (OpenSSL headers, "
          "compiler, build type, sanitizers, \\-Werror), the OpenSSL library in use and its "
          "module directory, whether this CPU runs the AVX\\-512 IFMA path, and the "
          "providers, engines and property query the configuration loads; then exit.\n"
          ".TP\n\\fB\\-v\\fR\nPrint the version and exit.\n"
          ".TP\n\\fB\\-h\\fR\nPrint the usage and exit.\n"
          ".SH SIGNALS\n"
          "The master process handles:\n"
          ".TP\n\\fBSIGHUP\\fR\nReload: read the configuration again (certificates, keys and "
          "OCSP responses included), start new workers with it and stop the old ones "
          "gracefully. A configuration with errors is logged and the old one keeps serving.\n"
          ".TP\n\\fBSIGQUIT\\fR\nGraceful stop: close the listening sockets, let open "
          "requests finish (at most \\fBworker_shutdown_timeout\\fR).\n"
          ".TP\n\\fBSIGTERM\\fR, \\fBSIGINT\\fR\nFast stop.\n"
          ".TP\n\\fBSIGUSR1\\fR\nReopen the error log and the access logs (after log "
          "rotation); the workers reopen theirs too.\n"
          ".SH ENVIRONMENT\n"
          ".TP\n\\fBTLSGATE_STATE_DIR\\fR\nThe state directory: default pid file and the "
          "embedded default's certificates (else \\fB$XDG_STATE_HOME\\fR/tlsgate, else "
          "~/.local/state/tlsgate). The systemd unit sets /run/tlsgate.\n"
          ".TP\n\\fBNOTIFY_SOCKET\\fR\nSet by systemd for a Type=notify unit: the master "
          "reports READY=1, RELOADING=1 and STOPPING=1 there.\n"
          ".TP\n\\fBMB8_FORCE_PORTABLE\\fR\n1: never use the AVX\\-512 IFMA kernels.\n"
          ".SH FILES\n"
          ".TP\n.I /etc/tlsgate/tlsgate.conf\nThe configuration of the packaged service.\n"
          ".TP\n.I /run/tlsgate/tlsgate.pid\nThe master's pid under systemd.\n"
          ".SH EXIT STATUS\n"
          "0 on success (including a graceful or fast stop), 1 on a configuration or "
          "start\\-up error.\n"
          ".SH SEE ALSO\n"
          "\\fBtlsgate.conf\\fR(5), \\fBsystemctl\\fR(1), \\fBlogrotate\\fR(8), "
          "\\fBopenssl\\fR(1ssl), \\fBnginx\\fR(8)\n",
          f);
}

int gw_conf_write_man(void *fp, int section, const char *version)
{
    FILE *f = fp;
    if (section == 5)
        write_conf5(f, version);
    else if (section == 8)
        write_tlsgate8(f, version);
    else
        return -1;
    fflush(f);
    return ferror(f) ? -1 : 0;
}
