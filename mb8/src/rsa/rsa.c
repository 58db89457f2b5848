/* see mb8/rsa.h: key import, sizes, argument checks and kernel dispatch */
#include "mb8/rsa.h"

#include "bn52.h"
#include "mb8/cpu.h"

size_t mb8_rsa_key_size(unsigned bits)
{
    unsigned h = mb8__rsa_half_limbs(bits);
    if (!h)
        return 0;
    return sizeof(struct mb8_rsa_key) + MB8__RSA_KEY_LIMBS(h) * sizeof(uint64_t);
}

size_t mb8_rsa_scratch_size(unsigned bits)
{
    unsigned h = mb8__rsa_half_limbs(bits);
    if (!h)
        return 0;
    /* room for 8 lanes (interleaved or IFMA kernels); the portable one uses one lane's */
    return MB8_LANES * MB8__RSA_LANE_SCRATCH(h) * sizeof(uint64_t);
}

unsigned mb8_rsa_key_bits(const mb8_rsa_key_t *key)
{
    if (!key || key->magic != MB8__RSA_MAGIC)
        return 0;
    return key->bits;
}

/* 1 when bit `b` of a (n limbs) is set; public values only. */
static int bit_set(const uint64_t *a, unsigned b)
{
    return (int)((a[b / BN52_BITS] >> (b % BN52_BITS)) & 1);
}

/* 1 when a (n limbs) has no bit at or above `b`; public values only. */
static int below_bit(const uint64_t *a, size_t n, unsigned b)
{
    for (unsigned i = b; i < n * BN52_BITS; i++)
        if (bit_set(a, i))
            return 0;
    return 1;
}

int mb8_rsa_key_init(mb8_rsa_key_t *key, unsigned bits, const uint8_t *n, const uint8_t *e,
                     size_t e_len, const uint8_t *p, const uint8_t *q, const uint8_t *dp,
                     const uint8_t *dq, const uint8_t *qinv)
{
    unsigned h = mb8__rsa_half_limbs(bits);
    if (!key || !h || !n || !e || !p || !q || !dp || !dq || !qinv || e_len < 1 || e_len > bits / 8)
        return -1;
    size_t nl = 2 * (size_t)h, hb = bits / 16;
    memset(key, 0, mb8_rsa_key_size(bits));
    key->bits = bits;
    key->h = h;
    uint64_t *kn = mb8__rsa_n(key), *ke = mb8__rsa_e(key), *kp = mb8__rsa_p(key);
    uint64_t *kq = mb8__rsa_q(key), *kdp = mb8__rsa_dp(key), *kdq = mb8__rsa_dq(key);
    uint64_t *kqi = mb8__rsa_qinvr(key), *rrn = mb8__rsa_rrn(key);

    mb8__bn52_from_be(kn, nl, n, bits / 8);
    mb8__bn52_from_be(ke, nl, e, e_len);
    mb8__bn52_from_be(kp, h, p, hb);
    mb8__bn52_from_be(kq, h, q, hb);
    mb8__bn52_from_be(kdp, h, dp, hb);
    mb8__bn52_from_be(kdq, h, dq, hb);
    mb8__bn52_from_be(kqi, h, qinv, hb);

    /* The checks branch on their result, which is public (the key is accepted or not). */
    int ok = bit_set(kn, bits - 1) && (kn[0] & 1) && bit_set(kp, bits / 2 - 1) &&
             bit_set(kq, bits / 2 - 1) && (kp[0] & 1) && (kq[0] & 1) && (ke[0] & 1) &&
             !below_bit(ke, nl, 1) /* e >= 3: odd, and a bit above bit 0 */;
    /* e < n, dp < p, dq < q, qinv < p: the borrow of x - m (into a scratch area) */
    uint64_t *tmp = rrn; /* 2h limbs, overwritten below */
    ok = ok && mb8__bn52_sub(tmp, ke, kn, nl) && mb8__bn52_sub(tmp, kdp, kp, h) &&
         mb8__bn52_sub(tmp, kdq, kq, h) && mb8__bn52_sub(tmp, kqi, kp, h);
    if (ok) { /* p q == n */
        uint64_t diff = 0;
        mb8__bn52_mul(tmp, kp, h, kq, h);
        for (size_t i = 0; i < nl; i++)
            diff |= tmp[i] ^ kn[i];
        ok = diff == 0;
    }
    if (!ok) {
        mb8__wipe(key, mb8_rsa_key_size(bits));
        return -1;
    }

    unsigned eb = (unsigned)nl * BN52_BITS;
    while (eb > 0 && !bit_set(ke, eb - 1))
        eb--;
    key->e_bits = eb;
    key->k0n = mb8__bn52_k0(kn[0]);
    key->k0p = mb8__bn52_k0(kp[0]);
    key->k0q = mb8__bn52_k0(kq[0]);
    mb8__bn52_rr(mb8__rsa_rrp(key), kp, h);
    mb8__bn52_rr(mb8__rsa_rrq(key), kq, h);
    /* qinv into Montgomery form, AMM(qinv, R^2) = qinv R (< 2p) then reduce, using the
     * R^2 mod n slot (not yet computed) as the temporary */
    mb8__amm52_ref(rrn, kqi, mb8__rsa_rrp(key), kp, key->k0p, h);
    mb8__bn52_csub(rrn, kp, h);
    memcpy(kqi, rrn, h * sizeof(uint64_t));
    mb8__bn52_rr(rrn, kn, nl);
    key->magic = MB8__RSA_MAGIC;
    return 0;
}

void mb8_rsa_key_dispose(mb8_rsa_key_t *key)
{
    if (!key)
        return;
    size_t len =
        key->magic == MB8__RSA_MAGIC ? mb8_rsa_key_size(key->bits) : sizeof(struct mb8_rsa_key);
    mb8__wipe(key, len);
}

mb8_status_t mb8_rsa_private_crt(uint8_t *const out[MB8_LANES], const uint8_t *const in[MB8_LANES],
                                 const mb8_rsa_key_t *const key[MB8_LANES],
                                 const uint8_t *const blind[MB8_LANES],
                                 const uint8_t *const unblind[MB8_LANES], void *scratch)
{
    mb8_status_t st = 0;
    unsigned bits = 0, lanes = 0;
    int scratch_ok = scratch && ((uintptr_t)scratch % sizeof(uint64_t)) == 0;

    /* Everything decided here is public: which lanes are used, key sizes, pointers. */
    for (unsigned i = 0; i < MB8_LANES; i++) {
        unsigned v;
        unsigned kb = key ? mb8_rsa_key_bits(key[i]) : 0;
        const uint8_t *bl = blind ? blind[i] : NULL, *ub = unblind ? unblind[i] : NULL;
        if (!in || !in[i])
            v = MB8_STATUS_UNUSED;
        else if (!kb || (bits && kb != bits))
            v = MB8_STATUS_BAD_KEY;
        else if (!out || !out[i] || !scratch_ok || (!bl != !ub))
            v = MB8_STATUS_BAD_INPUT;
        else
            v = MB8_STATUS_OK, lanes |= 1u << i;
        if (kb && !bits && in && in[i])
            bits = kb; /* the batch size: the first used lane with an initialised key */
        st = mb8_status_with(st, i, v);
    }
    if (!lanes)
        return st;
    /* Dispatch, decided once per process by mb8_cpu_has_ifma() (CPUID + XCR0, or
     * MB8_FORCE_PORTABLE=1): the 8-lane IFMA kernel, else the portable one. */
    if (mb8_cpu_has_ifma())
        return st |
               mb8__rsa_private_crt_ifma(out, in, key, blind, unblind, (uint64_t *)scratch, lanes);
    return st | mb8__rsa_private_crt_ref(out, in, key, blind, unblind, (uint64_t *)scratch, lanes);
}
