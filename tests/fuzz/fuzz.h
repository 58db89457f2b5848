/*
 * What the fuzz targets (tests/fuzz/NAME.c) share. The same source is built two ways: with
 * clang's libFuzzer (tests/fuzz/run.sh) and, for CTest, with replay.c, which feeds it the
 * corpus in the project's own build (often a release build, with NDEBUG).
 */
#ifndef TLSGATE_TESTS_FUZZ_H
#define TLSGATE_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* CHECK(cond): an invariant of the code under test; prints it and aborts when it does not
 * hold. Unlike assert(), it is kept under NDEBUG, so the corpus replay checks it too. */
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* libFuzzer's entry point, defined by each target: data is size bytes (not NUL-terminated);
 * returns 0. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* fuzz_dup_exact: a heap copy of data's n bytes in a block of exactly n bytes (1 when n is
 * 0), so AddressSanitizer reports a read one past the input; aborts when malloc fails. The
 * caller frees it. */
static inline char *fuzz_dup_exact(const uint8_t *data, size_t n)
{
    char *p = malloc(n ? n : 1);
    CHECK(p);
    if (n)
        memcpy(p, data, n);
    return p;
}

#endif
