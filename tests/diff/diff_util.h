/*
 * Helpers shared by the differential tests of tests/diff (cmocka): the run's seed and
 * quick mode from the environment, hex known answers in, hex dumps out, a seeded
 * xorshift64* generator (a failing random run repeats from the seed it prints), and the
 * checks of bytes and lane status that name the lane and the seed.
 */
#ifndef TESTS_DIFF_DIFF_UTIL_H
#define TESTS_DIFF_DIFF_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "mb8/status.h"

static uint64_t g_seed;        /* the run's seed (nonzero) */
static int g_quick;            /* shortened loops (valgrind) */
static const char *g_seed_var; /* its environment variable: "P256_DIFF_SEED" */

/* g_seed from the environment variable <prefix>_DIFF_SEED (else the time), g_quick from
 * <prefix>_DIFF_QUICK=1; says both on stderr under the program's name. */
static void diff_init(const char *prog, const char *prefix)
{
    static char seed_var[64], quick_var[64];
    snprintf(seed_var, sizeof seed_var, "%s_DIFF_SEED", prefix);
    snprintf(quick_var, sizeof quick_var, "%s_DIFF_QUICK", prefix);
    g_seed_var = seed_var;
    const char *s = getenv(seed_var), *q = getenv(quick_var);
    g_seed = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL);
    if (g_seed == 0)
        g_seed = 1; /* xorshift needs a nonzero state */
    g_quick = q != NULL && atoi(q) != 0;
    fprintf(stderr, "%s: %s=%llu%s\n", prog, seed_var, (unsigned long long)g_seed,
            g_quick ? " (quick)" : "");
}

/* out = the n bytes written as 2n hex digits in hex (a test failure otherwise). */
static void unhex(uint8_t *out, size_t n, const char *hex)
{
    assert_int_equal(strlen(hex), 2 * n);
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
}

/* "  what: <hex of b>" on stderr. */
static void print_hex(const char *what, const uint8_t *b, size_t n)
{
    fprintf(stderr, "  %s: ", what);
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "%02x", b[i]);
    fprintf(stderr, "\n");
}

/* The generator's state: each test sets it from the run's seed (nonzero). */
static uint64_t rng_state;

static uint64_t rng_next(void)
{
    rng_state ^= rng_state >> 12; /* xorshift64* */
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

static void rng_bytes(uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(rng_next() >> 56);
}

/* Fails the test, naming the lane and the seed, when the n bytes got != want. */
static void expect_bytes(const char *what, unsigned lane, const uint8_t *got, const uint8_t *want,
                         size_t n)
{
    if (memcmp(got, want, n) == 0)
        return;
    fprintf(stderr, "%s: mismatch in lane %u (%s=%llu)\n", what, lane, g_seed_var,
            (unsigned long long)g_seed);
    print_hex("got ", got, n);
    print_hex("want", want, n);
    fail();
}

/* Fails the test, naming the lane and the seed, when lane's status in st is not want. */
static void expect_status(const char *what, mb8_status_t st, unsigned lane, unsigned want)
{
    if (mb8_status_lane(st, lane) == want)
        return;
    fprintf(stderr, "%s: lane %u status %u, want %u (status 0x%08x, %s=%llu)\n", what, lane,
            mb8_status_lane(st, lane), want, (unsigned)st, g_seed_var, (unsigned long long)g_seed);
    fail();
}

#endif
