/* Unit tests of the worker's timer heap (gw/net/loop.c) against a brute-force model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "unit_test.h"

#include "core/clock.h"
#include "net/loop.h"

#define N 200

static int fired[N];
static int64_t fired_at[N];
static gw_timer_t timers[N];
static int order_ok;
static int64_t last_when;

static void on_fire(gw_timer_t *t)
{
    int i = (int)(t - timers);
    fired[i]++;
    fired_at[i] = t->when;
    if (t->when < last_when)
        order_ok = 0;
    last_when = t->when;
}

static void test_timers_fire_in_order_and_once(void **state)
{
    gw_loop_t loop;
    gw_clock_update();
    assert_int_equal(gw_loop_init(&loop), 0);
    srand(12345);
    int64_t want[N];
    int armed[N] = {0};
    for (int i = 0; i < N; i++) {
        timers[i] = (gw_timer_t){.cb = on_fire};
        fired[i] = 0;
    }
    /* random adds, re-arms and deletes */
    for (int step = 0; step < 5000; step++) {
        int i = rand() % N;
        int op = rand() % 3;
        if (op < 2) {
            int64_t ms = rand() % 40;
            gw_timer_add(&loop, &timers[i], ms);
            want[i] = gw_now_ms() + ms;
            armed[i] = 1;
            assert_true(gw_timer_armed(&timers[i]));
        } else {
            gw_timer_del(&loop, &timers[i]);
            armed[i] = 0;
            assert_false(gw_timer_armed(&timers[i]));
        }
    }
    size_t expected = 0;
    for (int i = 0; i < N; i++)
        expected += armed[i];
    assert_int_equal(loop.n, expected);
    order_ok = 1;
    last_when = 0;
    /* run the loop until every timer fired (the timers are at most 40 ms out) */
    for (int pass = 0; pass < 100 && loop.n; pass++)
        gw_loop_once(&loop, 50);
    assert_int_equal(loop.n, 0);
    assert_true(order_ok);
    for (int i = 0; i < N; i++) {
        assert_int_equal(fired[i], armed[i]);
        if (armed[i])
            assert_true(fired_at[i] == want[i]);
    }
    gw_loop_dispose(&loop);
}

static void test_timer_delete_inside_heap_keeps_order(void **state)
{
    gw_loop_t loop;
    gw_clock_update();
    assert_int_equal(gw_loop_init(&loop), 0);
    for (int i = 0; i < 10; i++) {
        timers[i] = (gw_timer_t){.cb = on_fire};
        fired[i] = 0;
        gw_timer_add(&loop, &timers[i], 10 - i);
    }
    gw_timer_del(&loop, &timers[3]);
    gw_timer_del(&loop, &timers[9]); /* the earliest */
    gw_timer_del(&loop, &timers[9]); /* twice: no-op */
    order_ok = 1;
    last_when = 0;
    for (int pass = 0; pass < 50 && loop.n; pass++)
        gw_loop_once(&loop, 20);
    assert_true(order_ok);
    for (int i = 0; i < 10; i++)
        assert_int_equal(fired[i], (i == 3 || i == 9) ? 0 : 1);
    gw_loop_dispose(&loop);
}

static void test_http_date_format(void **state)
{
    char buf[32];
    gw_format_http_date(784111777, buf); /* RFC 9110 §5.6.7's example */
    assert_string_equal(buf, "Sun, 06 Nov 1994 08:49:37 GMT");
    assert_int_equal(gw_parse_http_date(buf, 29), 784111777);
    assert_int_equal(gw_parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT", 30), -1);
    assert_int_equal(gw_parse_http_date("Sun, 06 Foo 1994 08:49:37 GMT", 29), -1);
}

int main(void)
{
    return UNIT_RUN(cmocka_unit_test(test_timers_fire_in_order_and_once),
                    cmocka_unit_test(test_timer_delete_inside_heap_keeps_order),
                    cmocka_unit_test(test_http_date_format));
}
