/* mb8's CPU selection agrees with /proc/cpuinfo, and MB8_FORCE_PORTABLE overrides it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit_test.h"

#include "mb8/cpu.h"
#include "mb8/status.h"

static int cpuinfo_has_all(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return -1;
    char line[8192];
    int found = -1;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        found = strstr(line, " avx512f ") && strstr(line, " avx512ifma ") &&
                strstr(line, " avx512vl") && strstr(line, " avx512bw ");
        break;
    }
    fclose(f);
    return found;
}

static void test_ifma_detection_matches_cpuinfo(void **state)
{
    unsetenv("MB8_FORCE_PORTABLE");
    int want = cpuinfo_has_all();
    if (want < 0)
        skip();
    assert_int_equal(mb8_cpu_has_ifma(), want);
}

static void test_status_word(void **state)
{
    mb8_status_t s = 0;
    for (unsigned i = 0; i < MB8_LANES; i++)
        s = mb8_status_with(s, i, MB8_STATUS_UNUSED);
    assert_true(mb8_status_all_ok(s));
    s = mb8_status_with(s, 3, MB8_STATUS_OK);
    s = mb8_status_with(s, 7, MB8_STATUS_VERIFY_FAIL);
    assert_int_equal(mb8_status_lane(s, 3), MB8_STATUS_OK);
    assert_int_equal(mb8_status_lane(s, 7), MB8_STATUS_VERIFY_FAIL);
    assert_int_equal(mb8_status_lane(s, 0), MB8_STATUS_UNUSED);
    assert_false(mb8_status_all_ok(s));
}

int main(void)
{
    return UNIT_RUN(cmocka_unit_test(test_ifma_detection_matches_cpuinfo),
                    cmocka_unit_test(test_status_word));
}
