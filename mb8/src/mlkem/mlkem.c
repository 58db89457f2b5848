/* see mb8/mlkem.h: the public entry points, lane bookkeeping and kernel dispatch. */
#include <string.h>

#include "../common/ct.h"
#include "mb8/cpu.h"
#include "mlkem_internal.h"

#if MB8__MLKEM_HAVE_AVX512
#include <cpuid.h>
/* The vector kernel's extra needs beyond mb8_cpu_has_ifma(): AVX512_VBMI and AVX512_VBMI2
 * (CPUID.7.0:ECX bits 1 and 6), which every IFMA CPU since Ice Lake has (Cannon Lake lacks
 * VBMI2). Cached. */
static int has_vbmi2(void)
{
    static int cached = -1;
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        unsigned a, b, c, d;
        v = __get_cpuid_max(0, NULL) >= 7;
        if (v) {
            __cpuid_count(7, 0, a, b, c, d);
            v = (c & 0x42u) == 0x42u;
        }
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v;
}
#endif

size_t mb8_mlkem768_scratch_size(void)
{
    return MB8__MLKEM_WS_BYTES;
}

static int scratch_ok(const void *scratch)
{
    return scratch != NULL && ((uintptr_t)scratch & (MB8_SCRATCH_ALIGN - 1)) == 0;
}

mb8_status_t mb8_mlkem768_keygen(uint8_t *const ek[MB8_LANES], uint8_t *const dk[MB8_LANES],
                                 const uint8_t *const d[MB8_LANES],
                                 const uint8_t *const z[MB8_LANES])
{
    mb8_status_t st = 0;

    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (d[i] == NULL)
            st = mb8_status_with(st, i, MB8_STATUS_UNUSED);
        else if (z[i] == NULL || ek[i] == NULL || dk[i] == NULL)
            st = mb8_status_with(st, i, MB8_STATUS_BAD_INPUT);
        else
            mb8__mlkem768_keygen_ref(ek[i], dk[i], d[i], z[i]);
    }
    return st;
}

/* The §7.2 check on the vector unit where the vector kernel runs. */
static unsigned ek_ok(const uint8_t *ek)
{
#if MB8__MLKEM_HAVE_AVX512
    if (mb8_cpu_has_ifma() && has_vbmi2())
        return mb8__mlkem768_ek_ok_avx512(ek);
#endif
    return mb8__mlkem768_ek_ok(ek);
}

int mb8_mlkem768_ek_check(const uint8_t *ek)
{
    return (int)ek_ok(ek);
}

mb8_status_t mb8_mlkem768_encaps(uint8_t *const ct[MB8_LANES], uint8_t *const ss[MB8_LANES],
                                 const uint8_t *const ek[MB8_LANES],
                                 const uint8_t *const m[MB8_LANES], void *scratch)
{
    const int sok = scratch_ok(scratch);
    mb8_status_t st = 0;
    unsigned lanes = 0;

    /* Lane use and the §7.2 modulus check are on public data: branching is fine. */
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (ek[i] == NULL)
            st = mb8_status_with(st, i, MB8_STATUS_UNUSED);
        else if (m[i] == NULL || ct[i] == NULL || ss[i] == NULL || !sok || !ek_ok(ek[i]))
            st = mb8_status_with(st, i, MB8_STATUS_BAD_INPUT);
        else
            lanes |= 1u << i;
    }
    if (lanes == 0)
        return st;
#if MB8__MLKEM_HAVE_AVX512
    if (mb8_cpu_has_ifma() && has_vbmi2() && __builtin_popcount(lanes) <= 2) {
        /* few lanes: each one's independent XOF streams fill the 8 Keccak states instead */
        for (unsigned i = 0; i < MB8_LANES; i++)
            if (lanes & (1u << i))
                mb8__mlkem768_encaps1_avx512(ct[i], ss[i], ek[i], m[i], scratch);
        return st;
    }
    if (mb8_cpu_has_ifma() && has_vbmi2()) {
        mb8__mlkem768_encaps_avx512(ct, ss, ek, m, lanes, scratch);
        return st;
    }
#endif
    for (unsigned i = 0; i < MB8_LANES; i++)
        if (lanes & (1u << i))
            mb8__mlkem768_encaps_ref(ct[i], ss[i], ek[i], m[i]);
    return st;
}

mb8_status_t mb8_mlkem768_decaps(uint8_t *const ss[MB8_LANES], const uint8_t *const ct[MB8_LANES],
                                 const uint8_t *const dk[MB8_LANES])
{
    mb8_status_t st = 0;

    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (dk[i] == NULL)
            st = mb8_status_with(st, i, MB8_STATUS_UNUSED);
        else if (ct[i] == NULL || ss[i] == NULL)
            st = mb8_status_with(st, i, MB8_STATUS_BAD_INPUT);
        else if (!mb8__mlkem768_decaps_ref(ss[i], ct[i], dk[i]))
            st = mb8_status_with(st, i, MB8_STATUS_BAD_KEY);
    }
    return st;
}
