/*
 * tlsgate [-c FILE] [-t] [-s reload|quit|stop|reopen] [-p PREFIX] [-g 'directives'] [-v] [-V] [-h]
 * nginx's command line. Without -c and without a default configuration file, tlsgate
 * serves its embedded default: https://127.0.0.1:8443/ with self-signed RSA-2048 and
 * ECDSA P-256 certificates created in the state directory on first start.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buildinfo.h"
#include "conf/conf.h"
#include "core/log.h"
#include "core/privs.h"
#include "cycle.h"
#include "http/conn.h"
#include "sock/sock.h"
#include "http/resume.h"
#include "master.h"
#include "tls/session.h"
#include "tls/tls.h"
#include "version.h"

#define DEFAULT_PREFIX "/etc/tlsgate"
#define DEFAULT_CONF "tlsgate.conf" /* /etc/tlsgate/tlsgate.conf, where the package puts it */

static void usage(FILE *f)
{
    fprintf(f,
            "tlsgate %s: a TLS-terminating HTTPS server and gateway\n"
            "\n"
            "Usage: tlsgate [-c FILE] [-t] [-s SIGNAL] [-p PREFIX] [-g DIRECTIVES] [-v] [-V] [-h]\n"
            "\n"
            "  -c FILE        configuration file (default: PREFIX/" DEFAULT_CONF ";\n"
            "                 when there is none, the embedded default serving\n"
            "                 https://127.0.0.1:8443/ with self-signed certificates)\n"
            "  -t             test the configuration, its certificates and keys, then exit\n"
            "  -s SIGNAL      send SIGNAL to the running master: reload, quit, stop, reopen\n"
            "  -p PREFIX      directory that relative paths resolve against (default: the\n"
            "                 configuration file's directory with -c, else " DEFAULT_PREFIX ")\n"
            "  -g DIRECTIVES  extra main-context directives, e.g. -g 'worker_processes 2;'\n"
            "  -v             print the version and exit\n"
            "  -V             print the version, build options, OpenSSL versions, whether\n"
            "                 the CPU has the AVX-512 IFMA path, and the providers and\n"
            "                 engines the configuration loads (-c FILE), then exit\n"
            "  -h             print this help and exit\n"
            "\n"
            "State directory (pid file and the embedded default's certificates):\n"
            "  $TLSGATE_STATE_DIR, else $XDG_STATE_HOME/tlsgate, else ~/.local/state/tlsgate\n",
            TLSGATE_VERSION);
}

static int mkdir_p(const char *path, mode_t mode)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, mode) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(buf, mode) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

static char *state_dir(void)
{
    char buf[PATH_MAX];
    const char *e = getenv("TLSGATE_STATE_DIR");
    if (e && *e)
        snprintf(buf, sizeof(buf), "%s", e);
    else if ((e = getenv("XDG_STATE_HOME")) && *e == '/')
        snprintf(buf, sizeof(buf), "%s/tlsgate", e);
    else if ((e = getenv("HOME")) && *e == '/')
        snprintf(buf, sizeof(buf), "%s/.local/state/tlsgate", e);
    else
        snprintf(buf, sizeof(buf), "/tmp/tlsgate-%d", (int)getuid());
    char *abs = realpath(buf, NULL);
    if (abs)
        return abs;
    return strdup(buf);
}

static char *absolute(const char *p)
{
    if (p[0] == '/')
        return strdup(p);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof(cwd)))
        return strdup(p);
    size_t n = strlen(cwd) + strlen(p) + 2;
    char *r = malloc(n);
    if (r)
        snprintf(r, n, "%s/%s", cwd, p);
    return r;
}

/* The embedded default's pages, written once into STATE/html. */
static int write_file_once(const char *path, const char *data, size_t len)
{
    struct stat st;
    if (stat(path, &st) == 0 && (size_t)st.st_size == len)
        return 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    int ok = len == 0 || write(fd, data, len) == (ssize_t)len;
    close(fd);
    return ok ? 0 : -1;
}

static const char index_html[] =
    "<!DOCTYPE html>\n<html>\n<head><meta charset=\"utf-8\"><title>tlsgate</title></head>\n"
    "<body>\n<h1>tlsgate is serving</h1>\n"
    "<p>This is the embedded default configuration of tlsgate, a TLS-terminating HTTPS "
    "server and gateway.</p>\n<ul>\n"
    "<li><a href=\"/0kb.bin\">/0kb.bin</a>: an empty file (handshake benchmarks)</li>\n"
    "<li><a href=\"/1kb.bin\">/1kb.bin</a>: 1,024 bytes (request benchmarks)</li>\n"
    "<li><a href=\"/status\">/status</a>: connection, request and TLS handshake "
    "counters</li>\n</ul>\n"
    "<p>Write a configuration file and start <code>tlsgate -c FILE</code> to serve your "
    "own sites.</p>\n</body>\n</html>\n";

static int prepare_embedded(const char *dir, gw_errlist_t *errs)
{
    char html[PATH_MAX], p[PATH_MAX + 32];
    snprintf(html, sizeof(html), "%s/html", dir);
    if (mkdir_p(html, 0755) != 0) {
        gw_errlist_add(errs, "%s: cannot create: %s", html, strerror(errno));
        return -1;
    }
    char kb[1024];
    for (size_t i = 0; i < sizeof(kb); i++)
        kb[i] = (char)('a' + i % 26);
    struct {
        const char *name;
        const char *data;
        size_t len;
    } files[] = {{"index.html", index_html, sizeof(index_html) - 1},
                 {"0kb.bin", "", 0},
                 {"1kb.bin", kb, sizeof(kb)}};
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof(p), "%s/%s", html, files[i].name);
        if (write_file_once(p, files[i].data, files[i].len) != 0) {
            gw_errlist_add(errs, "%s: cannot write: %s", p, strerror(errno));
            return -1;
        }
    }
    return gw_tls_make_default_certs(dir, errs);
}

gw_conf_t *gw_options_load(const gw_options_t *opt, gw_errlist_t *errs)
{
    if (opt->conf_file)
        return gw_conf_load_file(opt->conf_file, opt->prefix, opt->globals, opt->state_dir, errs);
    if (prepare_embedded(opt->state_dir, errs) != 0)
        return NULL;
    const char *d = opt->state_dir;
    char *text = NULL;
    int n = asprintf(&text,
                     "# tlsgate's embedded default configuration\n"
                     "worker_processes 1;\n"
                     "%s"
                     "error_log stderr notice;\n"
                     "pid \"%s/tlsgate.pid\";\n"
                     "events { worker_connections 1024; }\n"
                     "http {\n"
                     "    server {\n"
                     "        listen 127.0.0.1:8443 ssl default_server;\n"
                     "        server_name localhost;\n"
                     "        ssl_certificate \"%s/default-rsa.crt\";\n"
                     "        ssl_certificate_key \"%s/default-rsa.key\";\n"
                     "        ssl_certificate \"%s/default-ecdsa.crt\";\n"
                     "        ssl_certificate_key \"%s/default-ecdsa.key\";\n"
                     "        ssl_session_cache builtin:20480;\n"
                     "        root \"%s/html\";\n"
                     "        location = /status { stub_status; }\n"
                     "    }\n"
                     "}\n",
                     /* a try-out on localhost whose files live in the invoking
                      * user's state directory: started as root, it says "root" */
                     geteuid() == 0 ? "user root;\n" : "", d, d, d, d, d, d);
    if (n < 0)
        return NULL;
    gw_conf_t *c = gw_conf_parse("<embedded>", text, (size_t)n, opt->prefix, opt->globals, d, errs);
    free(text);
    return c;
}

static int send_signal(const gw_options_t *opt, const char *name)
{
    static const struct {
        const char *name;
        int sig;
    } map[] = {{"reload", SIGHUP}, {"quit", SIGQUIT}, {"stop", SIGTERM}, {"reopen", SIGUSR1}};
    int sig = 0;
    for (size_t i = 0; i < 4; i++)
        if (strcmp(name, map[i].name) == 0)
            sig = map[i].sig;
    if (!sig) {
        fprintf(stderr, "tlsgate: invalid option: \"-s %s\" (reload, quit, stop, reopen)\n", name);
        return 1;
    }
    gw_errlist_t errs = {0};
    gw_conf_t *conf;
    if (opt->conf_file)
        conf = gw_conf_load_file(opt->conf_file, opt->prefix, opt->globals, opt->state_dir, &errs);
    else
        conf = gw_options_load(opt, &errs);
    if (!conf) {
        for (size_t i = 0; i < errs.n; i++)
            fprintf(stderr, "tlsgate: [emerg] %s\n", errs.v[i]);
        gw_errlist_clear(&errs);
        return 1;
    }
    char buf[32] = "";
    int fd = open(conf->pid, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
    int e = errno;
    if (fd >= 0)
        close(fd);
    long pid = n > 0 ? strtol(buf, NULL, 10) : 0;
    if (pid <= 0) {
        fprintf(stderr, "tlsgate: [error] cannot read a pid from \"%s\": %s\n", conf->pid,
                n < 0 ? strerror(e) : "invalid content");
        gw_conf_free(conf);
        return 1;
    }
    if (kill((pid_t)pid, sig) != 0) {
        fprintf(stderr, "tlsgate: [error] kill(%ld, %s) failed: %s\n", pid, name, strerror(errno));
        gw_conf_free(conf);
        return 1;
    }
    gw_conf_free(conf);
    return 0;
}

static int print_version(const gw_options_t *opt)
{
    gw_conf_t *conf = NULL;
    gw_errlist_t errs = {0};
    if (opt->conf_file)
        conf = gw_conf_load_file(opt->conf_file, opt->prefix, opt->globals, opt->state_dir, &errs);
    gw_version_print(stdout, conf, opt->conf_file);
    int rc = 0;
    if (opt->conf_file && !conf) {
        for (size_t i = 0; i < errs.n; i++)
            fprintf(stderr, "tlsgate: [emerg] %s\n", errs.v[i]);
        rc = 1;
    }
    gw_errlist_clear(&errs);
    gw_conf_free(conf);
    return fflush(stdout) == 0 && !ferror(stdout) ? rc : 1;
}

static int test_config(const gw_options_t *opt)
{
    if (gw_tls_init() != 0)
        return 1;
    gw_log_open("stderr", GW_LOG_WARN); /* configuration warnings are part of the test */
    gw_errlist_t errs = {0};
    const char *name = opt->conf_file ? opt->conf_file : "<embedded>";
    gw_cycle_t *c = gw_build_cycle(opt, &errs);
    int ok = c && errs.n == 0;
    gw_warn_flush(1, 0);
    for (size_t i = 0; i < errs.n; i++)
        fprintf(stderr, "tlsgate: [emerg] %s\n", errs.v[i]);
    gw_errlist_clear(&errs);
    gw_cycle_free(c);
    if (ok) {
        fprintf(stderr, "tlsgate: the configuration file %s syntax is ok\n", name);
        fprintf(stderr, "tlsgate: configuration file %s test is successful\n", name);
        return 0;
    }
    fprintf(stderr, "tlsgate: configuration file %s test failed\n", name);
    return 1;
}

int main(int argc, char **argv)
{
    const char *conf_arg = NULL, *prefix_arg = NULL, *globals = NULL, *sig = NULL;
    int test = 0, version = 0;
    /* first OpenSSL call: freed OpenSSL memory is zeroed while keys are read */
    if (gw_privs_mem_init() != 0)
        fprintf(stderr, "tlsgate: [warn] CRYPTO_set_mem_functions failed: freed OpenSSL "
                        "memory is not cleared\n");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **want = NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "-?") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "-v") == 0 || strcmp(a, "--version") == 0) {
            printf("tlsgate version %s (%s)\n", TLSGATE_VERSION, OpenSSL_version(OPENSSL_VERSION));
            return 0;
        } else if (strcmp(a, "-V") == 0) {
            version = 1; /* after the other options: -c FILE -V lists what FILE loads */
            continue;
        } else if (strcmp(a, "-t") == 0) {
            test = 1;
            continue;
        } else if (strcmp(a, "-c") == 0) {
            want = &conf_arg;
        } else if (strcmp(a, "-p") == 0) {
            want = &prefix_arg;
        } else if (strcmp(a, "-g") == 0) {
            want = &globals;
        } else if (strcmp(a, "-s") == 0) {
            want = &sig;
        } else {
            fprintf(stderr, "tlsgate: invalid option: \"%s\"\n", a);
            usage(stderr);
            return 1;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "tlsgate: option \"%s\" requires an argument\n", a);
            return 1;
        }
        *want = argv[++i];
    }

    gw_tls_set_async_callback(gw_sock_async_callback);
    gw_tls_session_set_remote_store(gw_resume_store);
    gw_tls_session_set_remote_keys(gw_resume_ticket_keys);
    gw_options_t opt = {0};
    char *sd = state_dir();
    if (mkdir_p(sd, 0700) != 0) {
        fprintf(stderr, "tlsgate: [emerg] cannot create the state directory \"%s\": %s\n", sd,
                strerror(errno));
        return 1;
    }
    opt.state_dir = sd;
    char *prefix = prefix_arg ? absolute(prefix_arg) : NULL;
    char *conf_file = NULL;
    if (conf_arg) {
        conf_file = absolute(conf_arg);
    } else {
        char buf[PATH_MAX];
        snprintf(buf, sizeof(buf), "%s/" DEFAULT_CONF, prefix ? prefix : DEFAULT_PREFIX);
        if (access(buf, F_OK) == 0)
            conf_file = strdup(buf);
    }
    if (!prefix) {
        if (conf_arg) {
            prefix = strdup(conf_file);
            char *slash = strrchr(prefix, '/');
            if (slash == prefix)
                slash[1] = '\0';
            else if (slash)
                *slash = '\0';
        } else {
            prefix = strdup(DEFAULT_PREFIX);
        }
    }
    size_t pl = strlen(prefix);
    while (pl > 1 && prefix[pl - 1] == '/')
        prefix[--pl] = '\0';
    opt.prefix = prefix;
    opt.conf_file = conf_file;
    opt.globals = globals;

    int rc;
    if (version)
        rc = print_version(&opt);
    else if (test)
        rc = test_config(&opt);
    else if (sig)
        rc = send_signal(&opt, sig);
    else
        rc = gw_master_run(&opt);
    free(conf_file);
    free(prefix);
    free(sd);
    return rc;
}
