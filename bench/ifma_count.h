/*
 * bench/ifma_count.h: force-included (gcc -include) into every source of mb8_count, a
 * copy of mb8 built only for bench/mb8_ifma_count.c. Each vpmadd52luq/vpmadd52huq
 * intrinsic the kernels execute also adds one to mb8_ifma_counted, so a call's count is
 * the number of 512-bit IFMA instructions it ran (the kernels are constant time: the
 * count does not depend on the inputs). The macro names the intrinsic it wraps; a
 * function-like macro is not expanded again inside its own expansion, so the real
 * intrinsic is called.
 */
#ifndef BENCH_IFMA_COUNT_H
#define BENCH_IFMA_COUNT_H

#include <immintrin.h>

extern unsigned long long mb8_ifma_counted;

#define _mm512_madd52lo_epu64(a, b, c) (mb8_ifma_counted++, _mm512_madd52lo_epu64((a), (b), (c)))
#define _mm512_madd52hi_epu64(a, b, c) (mb8_ifma_counted++, _mm512_madd52hi_epu64((a), (b), (c)))

#endif
