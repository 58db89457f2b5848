/*
 * valgrind memcheck client requests for the constant-time checks of tests/diff (see
 * docs/constant-time.md): with valgrind's header present, secrets can be marked undefined
 * so that any branch or address derived from them is a memcheck error; without it (or
 * natively, outside valgrind) the requests do nothing.
 */
#ifndef TESTS_DIFF_MEMCHECK_H
#define TESTS_DIFF_MEMCHECK_H

#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define HAVE_MEMCHECK 1
#endif
#endif
#ifndef HAVE_MEMCHECK
#define VALGRIND_MAKE_MEM_UNDEFINED(p, n) ((void)(p), (void)(n))
#define VALGRIND_MAKE_MEM_DEFINED(p, n) ((void)(p), (void)(n))
#endif

#endif
