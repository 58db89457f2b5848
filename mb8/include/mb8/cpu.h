/* Run-time CPU feature selection for mb8's kernels. */
#ifndef MB8_CPU_H
#define MB8_CPU_H

/**
 * 1 when this CPU and OS can run mb8's AVX-512 IFMA kernels: CPUID reports AVX512F,
 * AVX512IFMA, AVX512VL and AVX512BW, and XCR0 (XGETBV) shows the OS saving the opmask, ZMM
 * upper-half and ZMM16-31 states as well as SSE/AVX state. Decided once per process (the
 * result is cached); the environment variable MB8_FORCE_PORTABLE=1 forces 0 (for tests and
 * for valgrind, which cannot run AVX-512). Returns 0 or 1; never fails.
 */
int mb8_cpu_has_ifma(void);

#endif
