/*
 * The public entry points of mb8/p256.h and mb8/p384.h, for the curve that the including
 * file's internal header names (common/ec_internal.h): lane bookkeeping and kernel
 * dispatch. The kernels for this CPU: the IFMA kernels (<curve>_ifma.c) when
 * mb8_cpu_has_ifma() (decided once per process and cached; MB8_FORCE_PORTABLE=1 forces the
 * reference), else the portable reference (<curve>_ref.c), which needs no scratch.
 * Included by p256/p256.c and p384/p384.c only.
 */
#include <string.h>

#include "mb8/cpu.h"

#define NB MB8__EC_NB
#define NP MB8__EC_NP
#define NSETUP MB8__EC_NSETUP
size_t MB8__EC_API(scratch_size)(void)
{
    return MB8__EC_WS_BYTES;
}

/* All lanes (0xFF) when scratch is unusable (NULL or not MB8_SCRATCH_ALIGN-aligned), else 0.
 * Checked whatever the kernel, so that a caller's mistake shows on every CPU. */
static unsigned scratch_bad(const void *scratch)
{
    return scratch != NULL && ((uintptr_t)scratch & (MB8_SCRATCH_ALIGN - 1)) == 0 ? 0 : 0xFFu;
}

/* Bit i set when p[i] is NULL (for the inputs, and below the outputs). */
static unsigned nulls_in(const uint8_t *const p[MB8_LANES])
{
    unsigned m = 0;
    for (unsigned i = 0; i < MB8_LANES; i++)
        m |= (p[i] == NULL) << i;
    return m;
}

static unsigned nulls_out(uint8_t *const p[MB8_LANES])
{
    unsigned m = 0;
    for (unsigned i = 0; i < MB8_LANES; i++)
        m |= (p[i] == NULL) << i;
    return m;
}

/* The lanes an entry point computes: lane i is MB8_STATUS_UNUSED when key[i] is NULL, else
 * MB8_STATUS_BAD_INPUT when bit i of bad is set (another NULL pointer, unusable scratch),
 * else used (its bit in the result). Lane use is public: branching on it is fine. */
static unsigned lanes_used(mb8_status_t *st, const uint8_t *const key[MB8_LANES], unsigned bad)
{
    unsigned lanes = 0;
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (key[i] == NULL)
            *st = mb8_status_with(*st, i, MB8_STATUS_UNUSED);
        else if ((bad >> i) & 1)
            *st = mb8_status_with(*st, i, MB8_STATUS_BAD_INPUT);
        else
            lanes |= 1u << i;
    }
    return lanes;
}

/* The n-byte inputs of the used lanes into the dispatcher's array dst[MB8_LANES][n], and
 * its outputs back out. */
static void gather(uint8_t *dst, size_t n, const uint8_t *const src[MB8_LANES], unsigned lanes)
{
    for (unsigned i = 0; i < MB8_LANES; i++)
        if ((lanes >> i) & 1)
            memcpy(dst + i * n, src[i], n);
}

static void scatter(uint8_t *const dst[MB8_LANES], const uint8_t *src, size_t n, unsigned lanes)
{
    for (unsigned i = 0; i < MB8_LANES; i++)
        if ((lanes >> i) & 1)
            memcpy(dst[i], src + i * n, n);
}

mb8_status_t MB8__EC_API(ecdh)(uint8_t *const out[MB8_LANES], const uint8_t *const priv[MB8_LANES],
                               const uint8_t *const peer[MB8_LANES], void *scratch)
{
    struct {
        uint8_t d[MB8_LANES][NB], q[MB8_LANES][NP], r[MB8_LANES][NB];
    } t;
    mb8_status_t st = 0;
    unsigned lanes = lanes_used(&st, priv, nulls_out(out) | nulls_in(peer) | scratch_bad(scratch));
    gather(&t.d[0][0], NB, priv, lanes);
    gather(&t.q[0][0], NP, peer, lanes);
    if (lanes != 0 && mb8_cpu_has_ifma())
        st |= MB8__EC_FN(ecdh_ifma)(t.r, (const uint8_t(*)[NB])t.d, (const uint8_t(*)[NP])t.q,
                                    lanes, scratch);
    else if (lanes != 0)
        st |=
            MB8__EC_FN(ecdh_ref)(t.r, (const uint8_t(*)[NB])t.d, (const uint8_t(*)[NP])t.q, lanes);
    scatter(out, &t.r[0][0], NB, lanes);
    MB8__EC_FN(wipe)(&t, sizeof t);
    return st;
}

mb8_status_t MB8__EC_API(public_key)(uint8_t *const out[MB8_LANES],
                                     const uint8_t *const priv[MB8_LANES], void *scratch)
{
    struct {
        uint8_t d[MB8_LANES][NB], r[MB8_LANES][NP];
    } t;
    mb8_status_t st = 0;
    unsigned lanes = lanes_used(&st, priv, nulls_out(out) | scratch_bad(scratch));
    gather(&t.d[0][0], NB, priv, lanes);
    if (lanes != 0 && mb8_cpu_has_ifma())
        st |= MB8__EC_FN(public_key_ifma)(t.r, (const uint8_t(*)[NB])t.d, lanes, scratch);
    else if (lanes != 0)
        st |= MB8__EC_FN(public_key_ref)(t.r, (const uint8_t(*)[NB])t.d, lanes);
    scatter(out, &t.r[0][0], NP, lanes);
    MB8__EC_FN(wipe)(&t, sizeof t);
    return st;
}

mb8_status_t MB8__EC_API(ecdsa_sign)(uint8_t *const sig_r[MB8_LANES],
                                     uint8_t *const sig_s[MB8_LANES],
                                     const uint8_t *const digest[MB8_LANES],
                                     const uint8_t *const priv[MB8_LANES],
                                     const uint8_t *const nonce[MB8_LANES], void *scratch)
{
    struct {
        uint8_t e[MB8_LANES][NB], d[MB8_LANES][NB], k[MB8_LANES][NB];
        uint8_t r[MB8_LANES][NB], s[MB8_LANES][NB];
    } t;
    mb8_status_t st = 0;
    unsigned lanes = lanes_used(&st, priv,
                                nulls_out(sig_r) | nulls_out(sig_s) | nulls_in(digest) |
                                    nulls_in(nonce) | scratch_bad(scratch));
    gather(&t.e[0][0], NB, digest, lanes);
    gather(&t.d[0][0], NB, priv, lanes);
    gather(&t.k[0][0], NB, nonce, lanes);
    if (lanes != 0 && mb8_cpu_has_ifma())
        st |= MB8__EC_FN(ecdsa_sign_ifma)(t.r, t.s, (const uint8_t(*)[NB])t.e,
                                          (const uint8_t(*)[NB])t.d, (const uint8_t(*)[NB])t.k,
                                          lanes, scratch);
    else if (lanes != 0)
        st |=
            MB8__EC_FN(ecdsa_sign_ref)(t.r, t.s, (const uint8_t(*)[NB])t.e,
                                       (const uint8_t(*)[NB])t.d, (const uint8_t(*)[NB])t.k, lanes);
    scatter(sig_r, &t.r[0][0], NB, lanes);
    scatter(sig_s, &t.s[0][0], NB, lanes);
    MB8__EC_FN(wipe)(&t, sizeof t);
    return st;
}

mb8_status_t MB8__EC_API(ecdsa_sign_setup)(uint8_t *const setup[MB8_LANES],
                                           const uint8_t *const nonce[MB8_LANES], void *scratch)
{
    struct {
        uint8_t k[MB8_LANES][NB], out[MB8_LANES][NSETUP];
    } t;
    mb8_status_t st = 0;
    unsigned lanes = lanes_used(&st, nonce, nulls_out(setup) | scratch_bad(scratch));
    gather(&t.k[0][0], NB, nonce, lanes);
    if (lanes != 0 && mb8_cpu_has_ifma())
        st |= MB8__EC_FN(ecdsa_setup_ifma)(t.out, (const uint8_t(*)[NB])t.k, lanes, scratch);
    else if (lanes != 0)
        st |= MB8__EC_FN(ecdsa_setup_ref)(t.out, (const uint8_t(*)[NB])t.k, lanes);
    scatter(setup, &t.out[0][0], NSETUP, lanes);
    MB8__EC_FN(wipe)(&t, sizeof t);
    return st;
}

mb8_status_t MB8__EC_API(ecdsa_sign_complete)(uint8_t *const sig_r[MB8_LANES],
                                              uint8_t *const sig_s[MB8_LANES],
                                              const uint8_t *const digest[MB8_LANES],
                                              const uint8_t *const priv[MB8_LANES],
                                              const uint8_t *const setup[MB8_LANES])
{
    struct {
        uint8_t e[MB8_LANES][NB], d[MB8_LANES][NB], su[MB8_LANES][NSETUP];
        uint8_t r[MB8_LANES][NB], s[MB8_LANES][NB];
    } t;
    mb8_status_t st = 0;
    unsigned lanes = lanes_used(
        &st, priv, nulls_out(sig_r) | nulls_out(sig_s) | nulls_in(digest) | nulls_in(setup));
    gather(&t.e[0][0], NB, digest, lanes);
    gather(&t.d[0][0], NB, priv, lanes);
    gather(&t.su[0][0], NSETUP, setup, lanes);
    if (lanes != 0)
        st |= MB8__EC_FN(ecdsa_complete_ref)(t.r, t.s, (const uint8_t(*)[NB])t.e,
                                             (const uint8_t(*)[NB])t.d,
                                             (const uint8_t(*)[NSETUP])t.su, lanes);
    scatter(sig_r, &t.r[0][0], NB, lanes);
    scatter(sig_s, &t.s[0][0], NB, lanes);
    MB8__EC_FN(wipe)(&t, sizeof t);
    return st;
}
