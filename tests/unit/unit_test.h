/*
 * What the unit tests (tests/unit/NAME_test.c) share: cmocka with the headers it needs
 * before it, and UNIT_RUN for a main() that runs one group of tests.
 */
#ifndef TLSGATE_TESTS_UNIT_TEST_H
#define TLSGATE_TESTS_UNIT_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

/*
 * UNIT_RUN(cmocka_unit_test(a), cmocka_unit_test(b), ...): runs the tests as one group
 * without group setup or teardown (cmocka_run_group_tests on an array of them) and
 * returns the number of tests that failed, 0 when all passed: `return UNIT_RUN(...);`.
 */
#define UNIT_RUN(...)                                                                              \
    _cmocka_run_group_tests(                                                                       \
        "tests", (const struct CMUnitTest[]){__VA_ARGS__},                                         \
        sizeof((const struct CMUnitTest[]){__VA_ARGS__}) / sizeof(struct CMUnitTest), NULL, NULL)

#endif
