/*
 * bench/ifma_peak.h: this core's 512-bit IFMA throughput, measured in process, for the
 * kernel benches' "share of the IFMA peak" column.
 *
 * ifma_peak_per_s() runs 16 independent vpmadd52luq accumulation chains (enough to reach
 * the throughput limit on the cores this project runs on: ../shared/tools/ifma_chains.c
 * finds the plateau at 8-12 chains on Zen 5 and at 4-16 on Zen 4) for about 0.2 s of this
 * thread's CPU time and returns instructions per second of that time, best of 3; 0 when
 * the CPU has no AVX-512 IFMA. The share of the peak of a kernel is then its ops/s times
 * its IFMA instructions per operation over this figure: how much of the core's IFMA
 * capacity the kernel turns into work (1.0 = every cycle of an IFMA pipe busy).
 */
#ifndef BENCH_IFMA_PEAK_H
#define BENCH_IFMA_PEAK_H

#include <immintrin.h>
#include <time.h>

#include "mb8/cpu.h"

static double ifma_peak_cpu_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((target("avx512f,avx512ifma"), noinline)) static double ifma_peak_run(long iters)
{
    __m512i a[16], b = _mm512_set1_epi64(3), c = _mm512_set1_epi64(5);
    long long sum = 0;

    for (int i = 0; i < 16; i++)
        a[i] = _mm512_set1_epi64(i);
    double t0 = ifma_peak_cpu_s();
    for (long n = 0; n < iters; n++) {
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++)
            a[i] = _mm512_madd52lo_epu64(a[i], b, c);
    }
    double t = ifma_peak_cpu_s() - t0;
    for (int i = 0; i < 16; i++)
        sum += _mm512_reduce_add_epi64(a[i]);
    __asm__ volatile("" : : "r"(sum)); /* keep the chains */
    return t > 0 ? (double)iters * 16 / t : 0;
}

static double ifma_peak_per_s(void)
{
    double best = 0;

    if (!mb8_cpu_has_ifma())
        return 0;
    for (int r = 0; r < 3; r++) {
        double x = ifma_peak_run(40L * 1000 * 1000 / 16 * 8);
        if (x > best)
            best = x;
    }
    return best;
}

#endif
