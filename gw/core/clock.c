#include "core/clock.h"

#include <stdio.h>
#include <string.h>

static int64_t now_ms;
static int64_t now_us;
static time_t now_sec = -1;
static char http_date[32];
static char log_date[40];

static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

void gw_format_http_date(time_t t, char *out)
{
    /* one entry per thread: a keep-alive load asks for the same few mtimes (Last-Modified)
     * and the current second over and over; gmtime_r + strftime cost ~0.3 us a call */
    static _Thread_local time_t last_t = (time_t)-1;
    static _Thread_local char last[32];
    if (t == last_t) {
        memcpy(out, last, 30);
        return;
    }
    struct tm tm;
    gmtime_r(&t, &tm);
    /* the process never calls setlocale(): strftime's names are the C locale's English */
    if (strftime(out, 30, "%a, %d %b %Y %H:%M:%S GMT", &tm) == 0) {
        out[0] = '\0';
        return;
    }
    memcpy(last, out, 30);
    last_t = t;
}

void gw_clock_update(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    now_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
    time_t sec = time(NULL);
    if (sec == now_sec)
        return;
    now_sec = sec;
    gw_format_http_date(sec, http_date);
    struct tm tm;
    localtime_r(&sec, &tm);
    if (strftime(log_date, sizeof(log_date), "%d/%b/%Y:%H:%M:%S %z", &tm) == 0)
        log_date[0] = '\0';
}

int64_t gw_now_ms(void)
{
    return now_ms;
}

int64_t gw_now_us(void)
{
    return now_us;
}

int64_t gw_clock_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

const char *gw_http_date(void)
{
    return http_date;
}

const char *gw_log_date(void)
{
    return log_date;
}

time_t gw_parse_http_date(const char *s, size_t len)
{
    /* "Sun, 06 Nov 1994 08:49:37 GMT": the only format we generate; others -> -1 */
    char buf[32];
    if (len != 29)
        return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    char mon[4], wd[4];
    int day, year, h, m, sec;
    if (sscanf(buf, "%3s, %2d %3s %4d %2d:%2d:%2d GMT", wd, &day, mon, &year, &h, &m, &sec) != 7)
        return -1;
    int mi = -1;
    for (int i = 0; i < 12; i++)
        if (strcmp(mon, months[i]) == 0)
            mi = i;
    if (mi < 0 || day < 1 || day > 31 || h > 23 || m > 59 || sec > 60 || year < 1970)
        return -1;
    tm.tm_mday = day;
    tm.tm_mon = mi;
    tm.tm_year = year - 1900;
    tm.tm_hour = h;
    tm.tm_min = m;
    tm.tm_sec = sec;
    return timegm(&tm);
}
