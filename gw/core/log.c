#include "core/log.h"

#include "core/fd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>

static int log_fd = 2;
static int log_level = GW_LOG_ERROR;
static char *log_path; /* NULL = stderr */

static const char *const level_names[] = {"emerg", "alert",  "crit", "error",
                                          "warn",  "notice", "info", "debug"};

int gw_log_open(const char *path, int level)
{
    int fd = 2;
    if (path && strcmp(path, "stderr") != 0) {
        fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
            return -1;
    }
    if (log_fd > 2)
        close(log_fd);
    free(log_path);
    log_path = (fd > 2) ? strdup(path) : NULL;
    log_fd = fd;
    log_level = level;
    return 0;
}

int gw_log_reopen(void)
{
    if (!log_path)
        return 0;
    int fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    /* dup2 keeps the descriptor number, so a daemon's redirected stderr follows too */
    if (dup2(fd, log_fd) < 0)
        return gw_fd_fail(fd);
    close(fd);
    return 0;
}

int gw_log_fd(void)
{
    return log_fd;
}

int gw_log_enabled(int level)
{
    return level <= log_level;
}

void gw_log(int level, int err, const char *fmt, ...)
{
    if (level > log_level)
        return;
    char buf[2048];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    int n =
        snprintf(buf, sizeof(buf), "%04d/%02d/%02d %02d:%02d:%02d [%s] %d#0: ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 level_names[level < 0   ? 0
                             : level > 7 ? 7
                                         : level],
                 (int)getpid());
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
    va_end(ap);
    n = (m < 0) ? n : (n + m >= (int)sizeof(buf) - 64 ? (int)sizeof(buf) - 64 : n + m);
    if (err)
        n += snprintf(buf + n, sizeof(buf) - (size_t)n, ": %s (%d)", strerror(err), err);
    buf[n++] = '\n';
    ssize_t w = write(log_fd, buf, (size_t)n);
    (void)w;
}

void gw_log_ssl_errors(int level, const char *what)
{
    unsigned long e;
    const char *file, *data;
    int line, flags;
    while ((e = ERR_get_error_all(&file, &line, NULL, &data, &flags)) != 0) {
        char msg[256];
        ERR_error_string_n(e, msg, sizeof(msg));
        gw_log(level, 0, "%s: %s%s%s", what, msg, (flags & ERR_TXT_STRING) ? ":" : "",
               (flags & ERR_TXT_STRING) ? data : "");
    }
}

void gw_ssl_reason(char *buf, size_t cap)
{
    unsigned long e;
    const char *data;
    int flags;
    size_t n = 0;
    buf[0] = '\0';
    while ((e = ERR_get_error_all(NULL, NULL, NULL, &data, &flags)) != 0) {
        char one[256];
        ERR_error_string_n(e, one, sizeof(one));
        int m = snprintf(buf + n, cap - n, "%s%s%s%s", n ? "; " : "", one,
                         (flags & ERR_TXT_STRING) && data[0] ? ": " : "",
                         (flags & ERR_TXT_STRING) ? data : "");
        if (m < 0 || (size_t)m >= cap - n)
            break;
        n += (size_t)m;
    }
    if (!n)
        snprintf(buf, cap, "unknown OpenSSL error");
    ERR_clear_error();
}
