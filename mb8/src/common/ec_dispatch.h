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

/* 1 when scratch is usable (non-NULL, MB8_SCRATCH_ALIGN-aligned). Checked whatever the
 * kernel, so that a caller's mistake shows on every CPU. */
static int scratch_ok(const void *scratch)
{
    return scratch != NULL && ((uintptr_t)scratch & (MB8_SCRATCH_ALIGN - 1)) == 0;
}

mb8_status_t MB8__EC_API(ecdh)(uint8_t *const out[MB8_LANES], const uint8_t *const priv[MB8_LANES],
                               const uint8_t *const peer[MB8_LANES], void *scratch)
{
    const int sok = scratch_ok(scratch);
    uint8_t d[MB8_LANES][NB], q[MB8_LANES][NP], r[MB8_LANES][NB];
    mb8_status_t st = 0;
    unsigned lanes = 0;
    /* Lane use is public (which pointers are NULL): branching on it is fine. */
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (priv[i] == NULL) {
            st = mb8_status_with(st, i, MB8_STATUS_UNUSED);
        } else if (out[i] == NULL || peer[i] == NULL || !sok) {
            st = mb8_status_with(st, i, MB8_STATUS_BAD_INPUT);
        } else {
            lanes |= 1u << i;
            memcpy(d[i], priv[i], NB);
            memcpy(q[i], peer[i], NP);
        }
    }
    if (lanes != 0 && mb8_cpu_has_ifma())
        st |= MB8__EC_FN(ecdh_ifma)(r, (const uint8_t(*)[NB])d, (const uint8_t(*)[NP])q, lanes,
                                    scratch);
    else if (lanes != 0)
        st |= MB8__EC_FN(ecdh_ref)(r, (const uint8_t(*)[NB])d, (const uint8_t(*)[NP])q, lanes);
    for (unsigned i = 0; i < MB8_LANES; i++)
        if (lanes & (1u << i))
            memcpy(out[i], r[i], NB);
    MB8__EC_FN(wipe)(d, sizeof d);
    MB8__EC_FN(wipe)(q, sizeof q);
    MB8__EC_FN(wipe)(r, sizeof r);
    return st;
}

mb8_status_t MB8__EC_API(public_key)(uint8_t *const out[MB8_LANES],
                                     const uint8_t *const priv[MB8_LANES], void *scratch)
{
    const int sok = scratch_ok(scratch);
    uint8_t d[MB8_LANES][NB], r[MB8_LANES][NP];
    mb8_status_t st = 0;
    unsigned lanes = 0;
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (priv[i] == NULL) {
            st = mb8_status_with(st, i, MB8_STATUS_UNUSED);
        } else if (out[i] == NULL || !sok) {
            st = mb8_status_with(st, i, MB8_STATUS_BAD_INPUT);
        } else {
            lanes |= 1u << i;
            memcpy(d[i], priv[i], NB);
        }
    }
    if (lanes != 0 && mb8_cpu_has_ifma())
        st |= MB8__EC_FN(public_key_ifma)(r, (const uint8_t(*)[NB])d, lanes, scratch);
    else if (lanes != 0)
        st |= MB8__EC_FN(public_key_ref)(r, (const uint8_t(*)[NB])d, lanes);
    for (unsigned i = 0; i < MB8_LANES; i++)
        if (lanes & (1u << i))
            memcpy(out[i], r[i], NP);
    MB8__EC_FN(wipe)(d, sizeof d);
    MB8__EC_FN(wipe)(r, sizeof r);
    return st;
}

mb8_status_t MB8__EC_API(ecdsa_sign)(uint8_t *const sig_r[MB8_LANES],
                                     uint8_t *const sig_s[MB8_LANES],
                                     const uint8_t *const digest[MB8_LANES],
                                     const uint8_t *const priv[MB8_LANES],
                                     const uint8_t *const nonce[MB8_LANES], void *scratch)
{
    const int sok = scratch_ok(scratch);
    uint8_t e[MB8_LANES][NB], d[MB8_LANES][NB], k[MB8_LANES][NB];
    uint8_t r[MB8_LANES][NB], s[MB8_LANES][NB];
    mb8_status_t st = 0;
    unsigned lanes = 0;
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (priv[i] == NULL) {
            st = mb8_status_with(st, i, MB8_STATUS_UNUSED);
        } else if (sig_r[i] == NULL || sig_s[i] == NULL || digest[i] == NULL || nonce[i] == NULL ||
                   !sok) {
            st = mb8_status_with(st, i, MB8_STATUS_BAD_INPUT);
        } else {
            lanes |= 1u << i;
            memcpy(e[i], digest[i], NB);
            memcpy(d[i], priv[i], NB);
            memcpy(k[i], nonce[i], NB);
        }
    }
    if (lanes != 0 && mb8_cpu_has_ifma())
        st |= MB8__EC_FN(ecdsa_sign_ifma)(r, s, (const uint8_t(*)[NB])e, (const uint8_t(*)[NB])d,
                                          (const uint8_t(*)[NB])k, lanes, scratch);
    else if (lanes != 0)
        st |= MB8__EC_FN(ecdsa_sign_ref)(r, s, (const uint8_t(*)[NB])e, (const uint8_t(*)[NB])d,
                                         (const uint8_t(*)[NB])k, lanes);
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (lanes & (1u << i)) {
            memcpy(sig_r[i], r[i], NB);
            memcpy(sig_s[i], s[i], NB);
        }
    }
    MB8__EC_FN(wipe)(e, sizeof e);
    MB8__EC_FN(wipe)(d, sizeof d);
    MB8__EC_FN(wipe)(k, sizeof k);
    MB8__EC_FN(wipe)(r, sizeof r);
    MB8__EC_FN(wipe)(s, sizeof s);
    return st;
}

mb8_status_t MB8__EC_API(ecdsa_sign_setup)(uint8_t *const setup[MB8_LANES],
                                           const uint8_t *const nonce[MB8_LANES], void *scratch)
{
    const int sok = scratch_ok(scratch);
    uint8_t k[MB8_LANES][NB], out[MB8_LANES][NSETUP];
    mb8_status_t st = 0;
    unsigned lanes = 0;
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (nonce[i] == NULL) {
            st = mb8_status_with(st, i, MB8_STATUS_UNUSED);
        } else if (setup[i] == NULL || !sok) {
            st = mb8_status_with(st, i, MB8_STATUS_BAD_INPUT);
        } else {
            lanes |= 1u << i;
            memcpy(k[i], nonce[i], NB);
        }
    }
    if (lanes != 0 && mb8_cpu_has_ifma())
        st |= MB8__EC_FN(ecdsa_setup_ifma)(out, (const uint8_t(*)[NB])k, lanes, scratch);
    else if (lanes != 0)
        st |= MB8__EC_FN(ecdsa_setup_ref)(out, (const uint8_t(*)[NB])k, lanes);
    for (unsigned i = 0; i < MB8_LANES; i++)
        if (lanes & (1u << i))
            memcpy(setup[i], out[i], NSETUP);
    MB8__EC_FN(wipe)(k, sizeof k);
    MB8__EC_FN(wipe)(out, sizeof out);
    return st;
}

mb8_status_t MB8__EC_API(ecdsa_sign_complete)(uint8_t *const sig_r[MB8_LANES],
                                              uint8_t *const sig_s[MB8_LANES],
                                              const uint8_t *const digest[MB8_LANES],
                                              const uint8_t *const priv[MB8_LANES],
                                              const uint8_t *const setup[MB8_LANES])
{
    uint8_t e[MB8_LANES][NB], d[MB8_LANES][NB], su[MB8_LANES][NSETUP];
    uint8_t r[MB8_LANES][NB], s[MB8_LANES][NB];
    mb8_status_t st = 0;
    unsigned lanes = 0;
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (priv[i] == NULL) {
            st = mb8_status_with(st, i, MB8_STATUS_UNUSED);
        } else if (sig_r[i] == NULL || sig_s[i] == NULL || digest[i] == NULL || setup[i] == NULL) {
            st = mb8_status_with(st, i, MB8_STATUS_BAD_INPUT);
        } else {
            lanes |= 1u << i;
            memcpy(e[i], digest[i], NB);
            memcpy(d[i], priv[i], NB);
            memcpy(su[i], setup[i], NSETUP);
        }
    }
    if (lanes != 0)
        st |= MB8__EC_FN(ecdsa_complete_ref)(r, s, (const uint8_t(*)[NB])e, (const uint8_t(*)[NB])d,
                                             (const uint8_t(*)[NSETUP])su, lanes);
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (lanes & (1u << i)) {
            memcpy(sig_r[i], r[i], NB);
            memcpy(sig_s[i], s[i], NB);
        }
    }
    MB8__EC_FN(wipe)(e, sizeof e);
    MB8__EC_FN(wipe)(d, sizeof d);
    MB8__EC_FN(wipe)(su, sizeof su);
    MB8__EC_FN(wipe)(r, sizeof r);
    MB8__EC_FN(wipe)(s, sizeof s);
    return st;
}
