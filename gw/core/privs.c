/* Worker credentials, working directory, secure heap; see privs.h. */
#include "core/privs.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <grp.h>
#include <malloc.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>


#include "core/log.h"
#include "core/lsan.h"

int gw_privs_check(const gw_conf_t *conf, gw_privs_t *out, gw_errlist_t *errs)
{
    memset(out, 0, sizeof(*out));
    const char *file = conf->conf_file ? conf->conf_file : "<config>";
    size_t nerr = errs->n;
    int root = geteuid() == 0;
    if (conf->user.n == 0) {
        if (root)
            gw_errlist_add(errs,
                           "%s: user: running as root without the \"user\" directive: the "
                           "workers would keep root privileges; add \"user nobody nogroup;\" "
                           "(or \"user root;\" to run them as root deliberately)",
                           file);
    } else {
        const char *u = conf->user.v[0];
        errno = 0;
        struct passwd *pw = getpwnam(u);
        if (!pw) {
            gw_errlist_add(errs, "%s: user: unknown user \"%s\"%s%s", file, u, errno ? ": " : "",
                           errno ? strerror(errno) : "");
        } else {
            out->uid = pw->pw_uid;
            out->gid = pw->pw_gid;
        }
        if (conf->user.n > 1) {
            errno = 0;
            struct group *gr = getgrnam(conf->user.v[1]);
            if (!gr)
                gw_errlist_add(errs, "%s: user: unknown group \"%s\"%s%s", file, conf->user.v[1],
                               errno ? ": " : "", errno ? strerror(errno) : "");
            else
                out->gid = gr->gr_gid;
        }
        if (errs->n == nerr) {
            if (!root)
                gw_warn_add("%s: user: the \"user\" directive makes sense only if the master "
                            "runs as root: ignored",
                            file);
            else if (out->uid == 0)
                gw_log(GW_LOG_NOTICE, 0, "the workers run as root (\"user %s\")", u);
            out->drop = root && out->uid != 0;
            out->user = strdup(u);
            if (!out->user)
                abort(); /* start-up only */
        }
    }
    if (conf->working_directory) {
        struct stat st;
        if (stat(conf->working_directory, &st) != 0)
            gw_errlist_add(errs, "%s: working_directory: \"%s\": %s", file, conf->working_directory,
                           strerror(errno));
        else if (!S_ISDIR(st.st_mode))
            gw_errlist_add(errs, "%s: working_directory: \"%s\" is not a directory", file,
                           conf->working_directory);
    }
    if (errs->n > nerr) {
        gw_privs_dispose(out);
        return -1;
    }
    return 0;
}

void gw_privs_dispose(gw_privs_t *p)
{
    free(p->user);
    memset(p, 0, sizeof(*p));
}

void gw_privs_worker_init(const gw_conf_t *conf, const gw_privs_t *p)
{
    gw_privs_mem_clearing(0); /* no key files are parsed here (see privs.h) */
    if (p->drop) {
        /* order matters: groups and gid while still root, the uid last */
        if (initgroups(p->user, p->gid) != 0) {
            gw_log(GW_LOG_EMERG, errno, "initgroups(\"%s\", %u) failed", p->user, (unsigned)p->gid);
            exit(2);
        }
        if (setgid(p->gid) != 0) {
            gw_log(GW_LOG_EMERG, errno, "setgid(%u) failed", (unsigned)p->gid);
            exit(2);
        }
        if (setuid(p->uid) != 0) {
            gw_log(GW_LOG_EMERG, errno, "setuid(%u) failed", (unsigned)p->uid);
            exit(2);
        }
        /* setuid as root sets the real, effective and saved ids: root must be gone */
        if (setuid(0) == 0 || geteuid() == 0 || getegid() != p->gid) {
            gw_log(GW_LOG_EMERG, 0, "the worker could regain root after setuid(%u)",
                   (unsigned)p->uid);
            exit(2);
        }
    }
    /* Core dumps: with a working directory the operator asked for them (nginx makes a
     * worker that changed credentials dumpable again then); key memory is left out by
     * the secure heap (MADV_DONTDUMP), except what OpenSSL keeps in its ordinary heap
     * (docs/security.md). Without one, a worker never dumps core (nor can it be traced
     * by its own uid): not even OpenSSL's caches can leak through a dump. */
    int dumpable = 0;
    if (conf->working_directory) {
        if (chdir(conf->working_directory) != 0)
            gw_log(GW_LOG_ALERT, errno, "chdir(\"%s\") failed", conf->working_directory);
        else
            dumpable = 1;
    }
    if (prctl(PR_SET_DUMPABLE, dumpable, 0, 0, 0) != 0)
        gw_log(GW_LOG_ALERT, errno, "prctl(PR_SET_DUMPABLE, %d) failed", dumpable);
}

void gw_privs_chown_file(const gw_privs_t *p, const char *path)
{
    struct stat st;
    if (!p->drop || !path || strcmp(path, "stderr") == 0 || stat(path, &st) != 0 ||
        st.st_uid == p->uid)
        return;
    if (chown(path, p->uid, (gid_t)-1) != 0)
        gw_log(GW_LOG_ALERT, errno, "chown(\"%s\", %u) failed", path, (unsigned)p->uid);
}


int gw_privs_secure_heap(int64_t size)
{
    static int64_t done;
    if (size <= 0)
        return 0;
    if (done) {
        if (size != done)
            gw_log(GW_LOG_NOTICE, 0,
                   "ssl_secure_heap: the secure heap keeps its first size "
                   "(%lld bytes) until restart",
                   (long long)done);
        return 0;
    }
    size_t sz = 4096;
    while ((int64_t)sz < size)
        sz <<= 1;
    int r = CRYPTO_secure_malloc_init(sz, 32);
    if (r == 0) {
        gw_log(GW_LOG_ALERT, 0,
               "CRYPTO_secure_malloc_init(%zu) failed: keys use the "
               "ordinary heap (and may appear in core dumps)",
               sz);
        return -1;
    }
    done = size;
    gw_lsan_register_secure_heap(); /* sanitizer builds: core/lsan.h */
    if (r == 2)
        gw_log(GW_LOG_INFO, 0,
               "the secure heap (%zu bytes) could not be fully protected "
               "(mlock needs RLIMIT_MEMLOCK or CAP_IPC_LOCK; or mprotect/madvise failed)",
               sz);
    return 0;
}

static gw_errlist_t warns;

void gw_warn_add(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    gw_errlist_add(&warns, "%s", buf);
}

size_t gw_warn_flush(int to_stderr, int to_log)
{
    size_t n = warns.n;
    for (size_t i = 0; i < n; i++) {
        if (to_stderr)
            fprintf(stderr, "tlsgate: [warn] %s\n", warns.v[i]);
        if (to_log)
            gw_log(GW_LOG_WARN, 0, "%s", warns.v[i]);
    }
    gw_errlist_clear(&warns);
    return n;
}

static int clear_on_free = 1;

static void *mem_malloc(size_t n, const char *file, int line)
{
    (void)file;
    (void)line;
    return malloc(n);
}

static void mem_free(void *p, const char *file, int line)
{
    (void)file;
    (void)line;
    if (p && clear_on_free)
        explicit_bzero(p, malloc_usable_size(p));
    free(p);
}

static void *mem_realloc(void *p, size_t n, const char *file, int line)
{
    if (!p || !clear_on_free)
        return realloc(p, n);
    if (n == 0) {
        mem_free(p, file, line);
        return NULL;
    }
    /* never let realloc move the old bytes away uncleared */
    size_t old = malloc_usable_size(p);
    if (n <= old)
        return p;
    void *q = malloc(n);
    if (!q)
        return NULL;
    memcpy(q, p, old);
    mem_free(p, file, line);
    return q;
}

int gw_privs_mem_init(void)
{
    return CRYPTO_set_mem_functions(mem_malloc, mem_realloc, mem_free) ? 0 : -1;
}

void gw_privs_mem_clearing(int on)
{
    clear_on_free = on;
}
