/* see mb8/cpu.h */
#include "mb8/cpu.h"

#include <stdint.h>
#include <stdlib.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static uint64_t xgetbv0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static int detect(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    if (!(c & (1u << 27))) /* OSXSAVE: XGETBV is usable */
        return 0;
    /* XCR0: SSE (1), AVX (2), opmask (5), ZMM_Hi256 (6), Hi16_ZMM (7) */
    if ((xgetbv0() & 0xE6u) != 0xE6u)
        return 0;
    if (__get_cpuid_max(0, NULL) < 7)
        return 0;
    __cpuid_count(7, 0, a, b, c, d);
    const unsigned need = (1u << 16) /* AVX512F */ | (1u << 21) /* AVX512IFMA */ |
                          (1u << 30) /* AVX512BW */ | (1u << 31) /* AVX512VL */;
    return (b & need) == need;
}
#else
static int detect(void)
{
    return 0;
}
#endif

int mb8_cpu_has_ifma(void)
{
    static int cached = -1;
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        const char *f = getenv("MB8_FORCE_PORTABLE");
        v = (f && f[0] == '1') ? 0 : detect();
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v;
}
