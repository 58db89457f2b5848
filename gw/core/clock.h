/*
 * Cached time, refreshed once per event-loop pass (nginx's ngx_time_update): a
 * monotonic millisecond clock for timers and preformatted wall-clock strings.
 */
#ifndef GW_CORE_CLOCK_H
#define GW_CORE_CLOCK_H

#include <stdint.h>
#include <time.h>

/** Refresh the cache from the system clocks. */
void gw_clock_update(void);

/** Monotonic milliseconds as of the last update. */
int64_t gw_now_ms(void);

/** Monotonic microseconds (CLOCK_MONOTONIC) as of the last update: the time of the event
 * loop pass, for latency histograms without a clock read per event. */
int64_t gw_now_us(void);

/** Monotonic microseconds read now (CLOCK_MONOTONIC through the vDSO, no syscall); does
 * not touch the cache. */
int64_t gw_clock_mono_us(void);

/** IMF-fixdate for HTTP (RFC 9110 §5.6.7), e.g. "Sun, 29 Nov 2026 20:09:06 GMT"; 29 chars. */
const char *gw_http_date(void);

/** Access-log time, e.g. "29/Nov/2026:20:09:06 +0000". */
const char *gw_log_date(void);

/** Format t as IMF-fixdate into out (at least 30 bytes). */
void gw_format_http_date(time_t t, char *out);

/** Parse an IMF-fixdate; returns -1 when it is not one. */
time_t gw_parse_http_date(const char *s, size_t len);

#endif
