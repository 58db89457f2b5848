/*
 * Constant-time helpers shared by mb8's kernels (internal; docs/constant-time.md).
 */
#ifndef MB8_COMMON_CT_H
#define MB8_COMMON_CT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Hides a value from the optimiser, so that mask arithmetic on it is not turned back into
 * a branch or a conditional move chosen by the compiler. */
static inline uint64_t mb8__value_barrier(uint64_t x)
{
    __asm__("" : "+r"(x));
    return x;
}

/* Non-elidable zeroisation of len bytes at p: the asm is assumed to read *p, so the
 * memset cannot be dropped as a dead store. */
static inline void mb8__wipe(void *p, size_t len)
{
    memset(p, 0, len);
    __asm__ __volatile__("" : : "r"(p) : "memory");
}

#endif
