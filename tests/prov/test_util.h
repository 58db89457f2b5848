/*
 * Small helpers of the provider tests, shared by the tlsgate provider's (tests/prov) and
 * the fake accelerator's (tests/fakeaccel/fakeaccel_test.c): test scaffolding only.
 */
#ifndef TESTS_PROV_TEST_UTIL_H
#define TESTS_PROV_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <openssl/async.h>
#include <openssl/err.h>
#include <openssl/params.h>
#include <openssl/provider.h>

/* CLOCK_MONOTONIC in microseconds. */
static inline uint64_t tu_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000ULL;
}

/* Prints "# <what>; OpenSSL errors:" and empties OpenSSL's error queue onto stderr. */
static inline void tu_print_errors(const char *what)
{
    fprintf(stderr, "# %s; OpenSSL errors:\n", what);
    ERR_print_errors_fp(stderr);
}

/* The provider's gettable uint64 parameter `name` (a counter), UINT64_MAX if refused. */
static inline uint64_t tu_param_u64(OSSL_PROVIDER *prov, const char *name)
{
    uint64_t v = UINT64_MAX;
    OSSL_PARAM p[2];

    p[0] = OSSL_PARAM_construct_uint64(name, &v);
    p[1] = OSSL_PARAM_construct_end();
    if (!OSSL_PROVIDER_get_params(prov, p))
        return UINT64_MAX;
    return v;
}

/*
 * Counts ASYNC_start_job's answer r for a test's job: a pause in *pauses, the end in
 * *finished. Returns 1, or 0 (printed) when r is an error (ASYNC_ERR, ASYNC_NO_JOBS).
 */
static inline int tu_job_started(int r, int *pauses, int *finished)
{
    if (r == ASYNC_PAUSE) {
        (*pauses)++;
        return 1;
    }
    if (r == ASYNC_FINISH) {
        *finished = 1;
        return 1;
    }
    fprintf(stderr, "# ASYNC_start_job: %d\n", r);
    return 0;
}

#endif
