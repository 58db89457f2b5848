/*
 * The upper half of the P-256 and P-384 AVX-512 IFMA kernels (common/ec_internal.h), on
 * the field arithmetic of the including file (p256/p256_ifma.c, p384/p384_ifma.c; the
 * lower layer is common/ec_ifma_field.h): the point formulas (complete mixed addition,
 * Jacobian doubling and addition), ECDH's signed 5-bit windows on Jacobian coordinates,
 * the fixed-base comb of signed 7-bit digits, the conversions, input checks and outputs,
 * and the entry points. The including file defines before it, besides
 * common/ec_ifma_field.h: the constants P_ONE, P_RR, N_M, N_RR, B_MONT; fmul, fsqr
 * (mod p, inputs and outputs below 2p), fadd_m (a sum that is only multiplied); nmul,
 * ninv (mod n); and
 *   EC_FINV_POWS   the powers of a that finv's addition chain for a^(p-2) keeps
 *   FINV_TAIL      its steps (struct ec_chain_step) after FINV_HEAD below
 *   EC_ECDH_W      ECDH's 5-bit windows (ceil((8 NB + 1) / 5))
 *   EC_COMB_W      the comb's 7-bit windows (ceil((8 NB + 1) / 7))
 *   EC_COMB_E      entries of a comb window (64)
 *   EC_COMB_TABLE  the comb: [EC_COMB_W][2 NL][EC_COMB_E] affine Montgomery limbs
 * Each kernel's description: the head of the including file.
 */
#include <stdalign.h>
#include <string.h>

#include "booth.h"
#include "ct.h"

#define NSETUP MB8__EC_NSETUP

/* ---- inversion mod p ------------------------------------------------------------------ */

/* r = a^(2^n), n >= 1 squarings (n public) */
static IFMA_FN void fsqr_n(fe8 *r, const fe8 *a, int n)
{
    fsqr(r, a);
    for (int i = 1; i < n; i++)
        fsqr(r, r);
}

/* The start of both curves' chains for a^(p-2), from pow[0] = a: x_k = a^(2^k - 1) for
 * k = 2, 3, 6, 12, 15, 30, 32 into pow[1..7] (the runs of ones p - 2 is built from). */
static const struct ec_chain_step FINV_HEAD[7] = {
    {1, 0, 1, 0}, {2, 1, 1, 0},  {3, 2, 3, 2}, {4, 3, 6, 3},
    {5, 4, 3, 2}, {6, 5, 15, 5}, {7, 6, 2, 1},
};

/* r = a^(p-2) = a^-1 (0 for 0), Montgomery form: FINV_HEAD then the curve's FINV_TAIL,
 * whose last step writes pow[EC_FINV_POWS - 1]. Only the public steps choose the powers. */
static IFMA_FN void finv(fe8 *r, const fe8 *a)
{
    fe8 pow[EC_FINV_POWS], t;
    const struct ec_chain_step *chain[2] = {FINV_HEAD, FINV_TAIL};
    const int len[2] = {7, (int)(sizeof FINV_TAIL / sizeof FINV_TAIL[0])};
    pow[0] = *a;
    for (int c = 0; c < 2; c++) {
        for (int i = 0; i < len[c]; i++) {
            const struct ec_chain_step *s = &chain[c][i];
            fsqr_n(&t, &pow[s->src], s->sq);
            fmul(&pow[s->dst], &t, &pow[s->mul]);
        }
    }
    *r = pow[EC_FINV_POWS - 1];
    mb8__wipe(pow, sizeof pow);
    mb8__wipe(&t, sizeof t);
}

/* ---- points --------------------------------------------------------------------------- */

#define EC_RCB_FE fe8
#define EC_RCB_PT pt8
#define EC_RCB_FN static IFMA
#include "ec_rcb.h"

/* R = P1 + (x2, y2) with (x2, y2) affine (Z2 = 1), P1 anything including infinity, the
 * affine point never infinity: Renes-Costello-Batina 2016, Algorithm 5 (a = -3). */
static IFMA_FN void pt_add_affine(pt8 *R, const pt8 *P1, const fe8 *X2, const fe8 *Y2)
{
    fe8 b;
    fe8_bcast(&b, B_MONT);
    const fe8 *X1 = &P1->x, *Y1 = &P1->y, *Z1 = &P1->z;
    struct rcb T;
    fmul(&T.t0, X1, X2);
    fmul(&T.t1, Y1, Y2);
    fadd_m(&T.t3, X2, Y2); /* only multiplied */
    fadd_m(&T.t4, X1, Y1);
    fmul(&T.t3, &T.t3, &T.t4);
    fadd(&T.t4, &T.t0, &T.t1);
    fsub(&T.t3, &T.t3, &T.t4);
    fmul(&T.t4, Y2, Z1);
    fadd(&T.t4, &T.t4, Y1);
    fmul(&T.Y3, X2, Z1);
    fadd(&T.Y3, &T.Y3, X1);
    rcb_add_end(R, &T, Z1, &b);
}

/* R = 2 P1 in Jacobian coordinates (x = X/Z^2, y = Y/Z^3), a = -3: dbl-2001-b (Bernstein-
 * Lange EFD), 4M + 4S with Z3 = 2 Y Z. Correct for every point of this prime-order curve
 * (no point has y = 0); the point at infinity must be given as (X : Y : 0) with Y != 0,
 * and stays so. R may alias P1. */
static IFMA_FN void jdbl(pt8 *R, const pt8 *P1)
{
    fe8 delta, gamma, beta, alpha, t, u;
    fsqr(&delta, &P1->z);
    fsqr(&gamma, &P1->y);
    fmul(&beta, &P1->x, &gamma);
    fsub(&t, &P1->x, &delta);
    fadd_m(&u, &P1->x, &delta);
    fmul(&alpha, &t, &u);
    fadd(&t, &alpha, &alpha);
    fadd_m(&alpha, &t, &alpha); /* 3 (x - z^2)(x + z^2), only multiplied */
    fmul(&t, &P1->y, &P1->z);
    fadd_m(&R->z, &t, &t); /* Z3 = 2 Y Z, only multiplied (here, in pt_dbl4 and the
                            * next jdbl) */
    fadd(&beta, &beta, &beta);
    fadd(&beta, &beta, &beta); /* 4 beta */
    fsqr(&t, &alpha);
    fsub(&t, &t, &beta);
    fsub(&R->x, &t, &beta); /* X3 = alpha^2 - 8 beta */
    fsub(&t, &beta, &R->x);
    fmul(&t, &alpha, &t);
    fsqr(&gamma, &gamma);
    fadd(&gamma, &gamma, &gamma);
    fadd(&gamma, &gamma, &gamma);
    fadd(&gamma, &gamma, &gamma); /* 8 gamma^2 */
    fsub(&R->y, &t, &gamma);      /* Y3 = alpha (4 beta - X3) - 8 gamma^2 */
}

/* R = P1 + P2 in Jacobian coordinates, add-1998-cmo-2 (Bernstein-Lange EFD): 12M + 4S.
 * Not complete: P1 and P2 must not be infinity and P1 != +-P2 (pt_mul shows that its
 * additions never meet these cases for a scalar in [1, n-1], and masks the infinities).
 * R may alias P1 or P2. */
static IFMA_FN void jadd(pt8 *R, const pt8 *P1, const pt8 *P2)
{
    fe8 z1z1, z2z2, u1, u2, s1, s2, h, r, hh, hhh, v, t, X3, Y3, Z3;
    fsqr(&z1z1, &P1->z);
    fsqr(&z2z2, &P2->z);
    fmul(&u1, &P1->x, &z2z2);
    fmul(&u2, &P2->x, &z1z1);
    fmul(&t, &z2z2, &P2->z);
    fmul(&s1, &P1->y, &t);
    fmul(&t, &z1z1, &P1->z);
    fmul(&s2, &P2->y, &t);
    fmul(&t, &P1->z, &P2->z);
    fsub(&h, &u2, &u1);
    fsub(&r, &s2, &s1);
    fmul(&Z3, &t, &h); /* Z1 Z2 H */
    fsqr(&hh, &h);
    fmul(&hhh, &hh, &h);
    fmul(&v, &u1, &hh);
    fsqr(&t, &r);
    fsub(&t, &t, &hhh);
    fsub(&t, &t, &v);
    fsub(&X3, &t, &v); /* r^2 - H^3 - 2 U1 H^2 */
    fsub(&t, &v, &X3);
    fmul(&t, &r, &t);
    fmul(&s1, &s1, &hhh);
    fsub(&Y3, &t, &s1); /* r (U1 H^2 - X3) - S1 H^3 */
    R->x = X3;
    R->y = Y3;
    R->z = Z3;
}

static IFMA void pt_infinity(pt8 *R)
{
    const v8 z = _mm512_setzero_si512();
    for (int j = 0; j < NL; j++)
        R->x.v[j] = R->z.v[j] = z;
    fe8_bcast(&R->y, P_ONE);
}

/* ECDH's signed 5-bit digits of every lane's scalar (common/booth.h). */
static void booth5(uint64_t mag[EC_ECDH_W][MB8_LANES], uint64_t neg[EC_ECDH_W][MB8_LANES],
                   const uint8_t k[MB8_LANES][NB], unsigned lane_mask)
{
    mb8__booth(mag, neg, EC_ECDH_W, 5, &k[0][0], NB, lane_mask);
}

/* Each lane's entry dig of tab (16 entries), by a scan of all 16 with mask vectors. */
static IFMA void tab_select(pt8 *sel, const pt8 tab[16], v8 d)
{
    v8 s[3 * NL];
    for (int j = 0; j < 3 * NL; j++)
        s[j] = _mm512_setzero_si512();
    for (int i = 0; i < 16; i++) {
        const v8 m = kvec(_mm512_cmpeq_epi64_mask(d, _mm512_set1_epi64(i)));
        const v8 *e = (const v8 *)&tab[i];
        EC_UNROLL(3 * NL)
        for (int j = 0; j < 3 * NL; j++)
            s[j] = _mm512_ternarylogic_epi64(s[j], e[j], m, 0xF8); /* s | (e & m) */
    }
    memcpy(sel, s, sizeof *sel);
}

/* R = k * P1 (each lane its own k and P1), Jacobian in and out: EC_ECDH_W windows of 5 bits with
 * signed (Booth) digits, most significant first; each lane's entry |d| P of its table
 * 1P..16P (Jacobian) chosen by a scan of all 16, negated by a mask for d < 0.
 *
 * The incomplete jadd is safe here: before the addition of window w the accumulator is
 * 32 m P, m = sum of the digits above w weighted = floor((k + 2^(5w+4)) / 2^(5w+5)) >= 0
 * (Booth partial sums), and |d| <= 16. If m = 0 the accumulator is infinity and the
 * result is the entry (a mask, inf); if d = 0 the result is the accumulator (a mask).
 * Otherwise 32 m >= 32 > |d|, and 32 m + d is the next partial sum, below n (at the last
 * window it is k itself), so 32 m P is neither d P nor -d P: no doubling case for a scalar
 * in [1, n-1] (P has prime order n); lanes with another scalar or an invalid point
 * compute garbage, in the same time, and are failed by the caller. The table's additions
 * (i-1)P + P, i >= 3, are no exception either. Infinity in the accumulator is
 * (X : Y : 0), which jdbl keeps at Z = 0. */
static IFMA_FN void pt_mul(pt8 *R, const pt8 *P1, const uint64_t mag[EC_ECDH_W][MB8_LANES],
                           const uint64_t neg[EC_ECDH_W][MB8_LANES], pt8 tab[16])
{
    pt8 acc, sel, t;
    fe8 ny, zf;
    const v8 zero = _mm512_setzero_si512(), one = _mm512_set1_epi64(1);
    for (int j = 0; j < NL; j++)
        zf.v[j] = zero;
    tab[0] = *P1;
    for (int i = 1; i < 16; i++) { /* tab[i] = (i + 1) P */
        if (i & 1)
            jdbl(&tab[i], &tab[i / 2]);
        else
            jadd(&tab[i], &tab[i - 1], P1);
    }
    v8 inf = _mm512_set1_epi64(-1); /* all digits so far 0 */
    for (int w = EC_ECDH_W - 1; w >= 0; w--) {
        if (w != EC_ECDH_W - 1)
            for (int i = 0; i < 5; i++) /* the window's bits */
                jdbl(&acc, &acc);
        const v8 d = _mm512_load_si512((const void *)mag[w]);
        const v8 sgn = _mm512_load_si512((const void *)neg[w]);
        const v8 dz = kvec(_mm512_cmpeq_epi64_mask(d, zero));
        tab_select(&sel, tab, _mm512_sub_epi64(d, one));
        fsub(&ny, &zf, &sel.y);
        for (int j = 0; j < NL; j++)
            sel.y.v[j] = vsel(sgn, ny.v[j], sel.y.v[j]);
        if (w == EC_ECDH_W - 1) {
            acc = sel; /* the top digit; Z = 0 (infinity) where it is 0 */
        } else {
            jadd(&t, &acc, &sel);
            v8 *a = (v8 *)&acc;
            const v8 *sv = (const v8 *)&sel, *tv = (const v8 *)&t;
            for (int j = 0; j < 3 * NL; j++)
                a[j] = vsel(dz, a[j], vsel(inf, sv[j], tv[j]));
        }
        inf = _mm512_and_si512(inf, dz);
    }
    *R = acc;
    mb8__wipe(tab, 16 * sizeof(pt8));
    mb8__wipe(&acc, sizeof acc);
    mb8__wipe(&sel, sizeof sel);
    mb8__wipe(&t, sizeof t);
    mb8__wipe(&ny, sizeof ny);
}

/* The comb's signed 7-bit digits of every lane's scalar (common/booth.h). */
static void booth7(uint64_t mag[EC_COMB_W][MB8_LANES], uint64_t neg[EC_COMB_W][MB8_LANES],
                   const uint8_t k[MB8_LANES][NB], unsigned lane_mask)
{
    mb8__booth(mag, neg, EC_COMB_W, 7, &k[0][0], NB, lane_mask);
}

/* (x, y) = entry |d| of one comb window for every lane (the digit's magnitude mag in
 * 1..64; for 0 some entry, discarded by the caller). The window's limb j is 8 vectors of
 * 8 entries (<curve>_ifma_table.h); vpermt2q picks each lane's entry among 16 of them by
 * the low 4 bits of the lane's index, and two masked blends by bits 4 and 5 choose among
 * the 4 groups. The digit is only a register operand (permute index, blend mask): no
 * memory address depends on it, every entry is loaded for every selection, and the
 * permutes and blends have data-independent latency. */
static IFMA void comb_select(fe8 *x, fe8 *y, const uint64_t tab[2 * NL][EC_COMB_E], v8 mag)
{
    const v8 idx = _mm512_sub_epi64(mag, _mm512_set1_epi64(1));
    const __mmask8 b4 = _mm512_test_epi64_mask(idx, _mm512_set1_epi64(16));
    const __mmask8 b5 = _mm512_test_epi64_mask(idx, _mm512_set1_epi64(32));
    EC_UNROLL(2 * NL)
    for (int j = 0; j < 2 * NL; j++) {
        const v8 *t = (const v8 *)tab[j];
        v8 r0 = _mm512_permutex2var_epi64(_mm512_load_si512(t + 0), idx, _mm512_load_si512(t + 1));
        v8 r1 = _mm512_permutex2var_epi64(_mm512_load_si512(t + 2), idx, _mm512_load_si512(t + 3));
        v8 r2 = _mm512_permutex2var_epi64(_mm512_load_si512(t + 4), idx, _mm512_load_si512(t + 5));
        v8 r3 = _mm512_permutex2var_epi64(_mm512_load_si512(t + 6), idx, _mm512_load_si512(t + 7));
        v8 lo = _mm512_mask_blend_epi64(b4, r0, r1);
        v8 hi = _mm512_mask_blend_epi64(b4, r2, r3);
        v8 r = _mm512_mask_blend_epi64(b5, lo, hi);
        if (j < NL)
            x->v[j] = r;
        else
            y->v[j - NL] = r;
    }
}

/* R = k G by the comb: sum over w of d_w 2^(7w) G, one mixed addition per window but the
 * first (which is the selected point itself, or infinity). */
static IFMA_FN void pt_mul_g(pt8 *R, const uint8_t k[MB8_LANES][NB], unsigned lane_mask,
                             uint64_t mag[EC_COMB_W][MB8_LANES], uint64_t neg[EC_COMB_W][MB8_LANES])
{
    pt8 acc, t;
    fe8 x, y, ny, zf, one;
    booth7(mag, neg, k, lane_mask);
    const v8 zero = _mm512_setzero_si512();
    for (int j = 0; j < NL; j++)
        zf.v[j] = zero;
    fe8_bcast(&one, P_ONE);
    for (int w = 0; w < EC_COMB_W; w++) {
        const v8 d = _mm512_load_si512((const void *)mag[w]);
        const v8 sgn = _mm512_load_si512((const void *)neg[w]);
        const v8 z = kvec(_mm512_cmpeq_epi64_mask(d, zero));
        comb_select(&x, &y, EC_COMB_TABLE[w], d);
        /* y = -y for negative digits; for d = 0 the entry is discarded below */
        fsub(&ny, &zf, &y);
        for (int j = 0; j < NL; j++)
            y.v[j] = vsel(sgn, ny.v[j], y.v[j]);
        if (w == 0) { /* acc = (x : y : 1), or infinity (0 : 1 : 0) where d = 0 */
            for (int j = 0; j < NL; j++) {
                acc.x.v[j] = vsel(z, zero, x.v[j]);
                acc.y.v[j] = vsel(z, one.v[j], y.v[j]);
                acc.z.v[j] = vsel(z, zero, one.v[j]);
            }
            continue;
        }
        pt_add_affine(&t, &acc, &x, &y);
        v8 *a = (v8 *)&acc;
        const v8 *tv = (const v8 *)&t;
        for (int j = 0; j < 3 * NL; j++)
            a[j] = vsel(z, a[j], tv[j]);
    }
    *R = acc;
    mb8__wipe(mag, EC_COMB_W * sizeof(*mag));
    mb8__wipe(neg, EC_COMB_W * sizeof(*neg));
    mb8__wipe(&acc, sizeof acc);
    mb8__wipe(&t, sizeof t);
    mb8__wipe(&x, sizeof x);
    mb8__wipe(&y, sizeof y);
    mb8__wipe(&ny, sizeof ny);
}

/* r = 1 (not in Montgomery form: a Montgomery product by it leaves the Montgomery domain) */
static IFMA void fe8_one(fe8 *r)
{
    for (int j = 0; j < NL; j++)
        r->v[j] = j == 0 ? _mm512_set1_epi64(1) : _mm512_setzero_si512();
}

/* zi = Z^-1 (Montgomery form, 0 for 0); bit i of the result set when lane i's Z is 0 (the
 * point at infinity). t: the caller's temporary (it wipes it). */
static IFMA __mmask8 z_inv(fe8 *zi, fe8 *t, const fe8 *z)
{
    fcanon(t, z);
    __mmask8 inf = fe8_is_zero(t);
    finv(zi, z);
    return inf;
}

/* r = a b out of the Montgomery form, canonical; t: the caller's temporary */
static IFMA void fmul_out(fe8 *r, fe8 *t, const fe8 *a, const fe8 *b)
{
    fe8 one;
    fe8_one(&one);
    fmul(t, a, b);
    fmul(t, t, &one);
    fcanon(r, t);
}

/* Affine (x, y), canonical, of R; bit i set when lane i is infinity (then x = y = 0). */
static IFMA_FN __mmask8 pt_to_affine(fe8 *x, fe8 *y, const pt8 *R)
{
    fe8 zi, t;
    __mmask8 inf = z_inv(&zi, &t, &R->z);
    fmul_out(x, &t, &R->x, &zi);
    fmul_out(y, &t, &R->y, &zi);
    mb8__wipe(&zi, sizeof zi);
    mb8__wipe(&t, sizeof t);
    return inf;
}

/* Affine x, canonical, of a Jacobian R (x = X / Z^2); bit i set when lane i is infinity
 * (then x = 0). */
static IFMA_FN __mmask8 jac_to_affine_x(fe8 *x, const pt8 *R)
{
    fe8 zi, t;
    __mmask8 inf = z_inv(&zi, &t, &R->z);
    fsqr(&zi, &zi);
    fmul_out(x, &t, &R->x, &zi);
    mb8__wipe(&zi, sizeof zi);
    mb8__wipe(&t, sizeof t);
    return inf;
}

/* lane status word from per-lane bit masks: bad -> BAD_INPUT, else zero -> ZERO_RESULT */
static mb8_status_t lanes_status(unsigned lane_mask, unsigned bad, unsigned zero)
{
    mb8_status_t st = 0;
    for (unsigned i = 0; i < MB8_LANES; i++) {
        uint64_t b = mb8__value_barrier(0 - (uint64_t)((bad >> i) & 1));
        uint64_t z = mb8__value_barrier(0 - (uint64_t)((zero >> i) & 1));
        uint64_t s = (b & MB8_STATUS_BAD_INPUT) | (~b & z & MB8_STATUS_ZERO_RESULT);
        s &= 0 - (uint64_t)((lane_mask >> i) & 1);
        st |= (mb8_status_t)s << (4u * i);
    }
    return st;
}

static void mask_bytes(uint8_t *b, size_t n, unsigned keep_bit)
{
    uint8_t m = (uint8_t)(0 - (keep_bit & 1));
    for (size_t i = 0; i < n; i++)
        b[i] &= m;
}

/* Scalars of the used lanes into s (others 0); bit i of the result set when lane i's
 * scalar is in [1, n-1]. */
static IFMA_FN __mmask8 scalar_load8(fe8 *s, const uint8_t k[MB8_LANES][NB], unsigned lane_mask)
{
    stage8 st;
    memset(&st, 0, sizeof st);
    for (unsigned i = 0; i < MB8_LANES; i++)
        if ((lane_mask >> i) & 1)
            stage_put(&st, i, k[i]);
    fe8_load(s, &st);
    mb8__wipe(&st, sizeof st);
    return fe8_lt(s, N_M) & (__mmask8)~fe8_is_zero(s);
}


/* Point inputs of the used lanes (0x04 || X || Y) as Montgomery projective points; bit i
 * of the result set when lane i is a valid encoding of a point on the curve (SEC 1
 * §3.2.2.1: prefix, X < p, Y < p, Y^2 = X^3 - 3X + b), as peer_load in common/ec_ref_impl.h. */
static IFMA_FN __mmask8 peer_load8(pt8 *Q, const uint8_t peer[MB8_LANES][NP], unsigned lane_mask)
{
    stage8 sx, sy;
    fe8 x, y, rr, lhs, rhs, t, one, b;
    unsigned pre_ok = 0;
    memset(&sx, 0, sizeof sx);
    memset(&sy, 0, sizeof sy);
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if (!((lane_mask >> i) & 1)) /* public */
            continue;
        uint64_t pre = (uint64_t)(peer[i][0] ^ 0x04);
        pre_ok |= (unsigned)((((pre | (0 - pre)) >> 63) ^ 1) << i);
        stage_put(&sx, i, peer[i] + 1);
        stage_put(&sy, i, peer[i] + 1 + NB);
    }
    fe8_load(&x, &sx);
    fe8_load(&y, &sy);
    __mmask8 ok = (__mmask8)pre_ok & fe8_lt(&x, P_M) & fe8_lt(&y, P_M);
    fe8_bcast(&rr, P_RR);
    fmul(&Q->x, &x, &rr);
    fmul(&Q->y, &y, &rr);
    fe8_bcast(&Q->z, P_ONE);
    fe8_bcast(&one, P_ONE);
    fe8_bcast(&b, B_MONT);
    fsqr(&lhs, &Q->y);
    fsqr(&rhs, &Q->x);
    fsub(&t, &rhs, &one);
    fsub(&t, &t, &one);
    fsub(&t, &t, &one);
    fmul(&rhs, &t, &Q->x);
    fadd(&rhs, &rhs, &b);
    fcanon(&lhs, &lhs);
    fcanon(&rhs, &rhs);
    ok &= fe8_eq(&lhs, &rhs);
    return ok;
}

/* Lane i's canonical a as NB big-endian bytes at base + i row for the lanes of lane_mask,
 * all zero unless bit i of keep is set. */
static IFMA_FN void fe8_put(uint8_t *base, size_t row, const fe8 *a, unsigned lane_mask,
                            unsigned keep)
{
    stage8 s;
    fe8_store(&s, a);
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if ((lane_mask >> i) & 1) {
            stage_get(base + i * row, &s, i);
            mask_bytes(base + i * row, NB, keep >> i);
        }
    }
    mb8__wipe(&s, sizeof s);
}

/* r = a R^-1 mod n: the canonical value of a Montgomery-form a */
static IFMA_FN void n_canon(fe8 *r, const fe8 *a)
{
    fe8 one;
    fe8_one(&one);
    nmul(r, a, &one);
}

/* The kernels' tables, in the caller's scratch (MB8__EC_WS_BYTES, 64-byte aligned). */
struct ec_ws {
    pt8 tab[16];                                    /* pt_mul: 0P..15P */
    alignas(64) uint64_t mag[EC_ECDH_W][MB8_LANES]; /* pt_mul, pt_mul_g: Booth digits, magnitudes */
    alignas(64) uint64_t neg[EC_ECDH_W][MB8_LANES]; /* ... and signs */
};
_Static_assert(sizeof(struct ec_ws) <= MB8__EC_WS_BYTES, "MB8__EC_WS_BYTES too small");

IFMA_FN mb8_status_t MB8__EC_FN(ecdh_ifma)(uint8_t out[MB8_LANES][NB],
                                           const uint8_t priv[MB8_LANES][NB],
                                           const uint8_t peer[MB8_LANES][NP], unsigned lane_mask,
                                           void *ws)
{
    struct ec_ws *w = ws;
    struct {
        pt8 Q, R;
        fe8 d, x;
    } t; /* the secrets, wiped at once */
    __mmask8 ok = scalar_load8(&t.d, priv, lane_mask);
    ok &= peer_load8(&t.Q, peer, lane_mask);
    booth5(w->mag, w->neg, priv, lane_mask);
    pt_mul(&t.R, &t.Q, (const uint64_t(*)[MB8_LANES])w->mag, (const uint64_t(*)[MB8_LANES])w->neg,
           w->tab);
    __mmask8 inf = jac_to_affine_x(&t.x, &t.R);
    fe8_put(&out[0][0], NB, &t.x, lane_mask, (unsigned)(ok & (__mmask8)~inf));
    mb8_status_t st = lanes_status(lane_mask, (unsigned)(__mmask8)~ok, inf);
    mb8__wipe(w->mag, sizeof w->mag);
    mb8__wipe(w->neg, sizeof w->neg);
    mb8__wipe(&t, sizeof t);
    return st;
}

/* ---- key generation --------------------------------------------------------------------- */

IFMA_FN mb8_status_t MB8__EC_FN(public_key_ifma)(uint8_t out[MB8_LANES][NP],
                                                 const uint8_t priv[MB8_LANES][NB],
                                                 unsigned lane_mask, void *ws)
{
    struct ec_ws *w = ws;
    struct {
        pt8 R;
        fe8 d, x, y;
    } t;
    __mmask8 ok = scalar_load8(&t.d, priv, lane_mask);
    pt_mul_g(&t.R, priv, lane_mask, w->mag, w->neg);
    __mmask8 inf = pt_to_affine(&t.x, &t.y, &t.R); /* never for d in [1, n-1] */
    unsigned keep = (unsigned)(ok & (__mmask8)~inf);
    fe8_put((uint8_t *)out + 1, NP, &t.x, lane_mask, keep);
    fe8_put((uint8_t *)out + 1 + NB, NP, &t.y, lane_mask, keep);
    for (unsigned i = 0; i < MB8_LANES; i++) {
        if ((lane_mask >> i) & 1) {
            out[i][0] = 0x04;
            mask_bytes(out[i], 1, keep >> i);
        }
    }
    mb8__wipe(&t, sizeof t);
    return lanes_status(lane_mask, (unsigned)(__mmask8)~keep, 0);
}

/* ---- ECDSA ------------------------------------------------------------------------------ */

/* The nonce-only values, Montgomery form mod n. */
struct setup8 {
    fe8 r_m, kb_inv_m, b_m;
};

/* The nonce-only part as ecdsa_setup in common/ec_ref_impl.h: r = x(kG) mod
 * n, with the blinding factor b = k, kb_inv = (k b)^-1 and b, Montgomery form mod n. Bit i
 * of the result set when lane i's k is in [1, n-1] and r != 0. */
static IFMA_FN __mmask8 ecdsa_setup8(struct setup8 *S, const uint8_t k_bytes[MB8_LANES][NB],
                                     unsigned lane_mask, struct ec_ws *w)
{
    struct {
        pt8 R;
        fe8 k, x, y;
    } t;
    fe8 rr;
    __mmask8 ok = scalar_load8(&t.k, k_bytes, lane_mask);
    pt_mul_g(&t.R, k_bytes, lane_mask, w->mag, w->neg);
    __mmask8 inf = pt_to_affine(&t.x, &t.y, &t.R);
    fe8_bcast(&rr, N_RR);
    nmul(&S->r_m, &t.x, &rr); /* x < p < 2n: reduced mod n on the way */
    ok &= (__mmask8)~inf & (__mmask8)~fe8_is_zero(&S->r_m);
    nmul(&S->b_m, &t.k, &rr);
    nmul(&S->kb_inv_m, &S->b_m, &S->b_m);
    ninv(&S->kb_inv_m, &S->kb_inv_m);
    mb8__wipe(&t, sizeof t);
    return ok;
}

/* s = (k b)^-1 (b e + (b r) d) mod n, canonical; bit i of the
 * result set when lane i's d is in [1, n-1] and s != 0. */
static IFMA_FN __mmask8 ecdsa_complete8(fe8 *s, const struct setup8 *S,
                                        const uint8_t e_bytes[MB8_LANES][NB],
                                        const uint8_t d_bytes[MB8_LANES][NB], unsigned lane_mask)
{
    struct {
        stage8 st;
        fe8 d, e, br, t;
    } v;
    fe8 rr;
    __mmask8 ok = scalar_load8(&v.d, d_bytes, lane_mask);
    memset(&v.st, 0, sizeof v.st);
    for (unsigned i = 0; i < MB8_LANES; i++)
        if ((lane_mask >> i) & 1)
            stage_put(&v.st, i, e_bytes[i]);
    fe8_load(&v.e, &v.st);
    fe8_bcast(&rr, N_RR);
    nmul(&v.d, &v.d, &rr);
    nmul(&v.e, &v.e, &rr); /* e may be >= n: reduced here */
    nmul(&v.br, &S->b_m, &S->r_m);
    nmul(&v.t, &v.br, &v.d);   /* b r d */
    nmul(&v.e, &v.e, &S->b_m); /* b e */
    madd(&v.t, &v.t, &v.e, N_M);
    nmul(&v.t, &v.t, &S->kb_inv_m);
    n_canon(s, &v.t);
    ok &= (__mmask8)~fe8_is_zero(s);
    mb8__wipe(&v, sizeof v);
    return ok;
}

IFMA_FN mb8_status_t MB8__EC_FN(ecdsa_sign_ifma)(uint8_t r[MB8_LANES][NB], uint8_t s[MB8_LANES][NB],
                                                 const uint8_t e[MB8_LANES][NB],
                                                 const uint8_t d[MB8_LANES][NB],
                                                 const uint8_t k[MB8_LANES][NB], unsigned lane_mask,
                                                 void *ws)
{
    struct {
        struct setup8 m;
        fe8 rv, sv;
    } t;
    __mmask8 ok = ecdsa_setup8(&t.m, k, lane_mask, ws);
    ok &= ecdsa_complete8(&t.sv, &t.m, e, d, lane_mask);
    n_canon(&t.rv, &t.m.r_m);
    fe8_put(&r[0][0], NB, &t.rv, lane_mask, ok);
    fe8_put(&s[0][0], NB, &t.sv, lane_mask, ok);
    mb8__wipe(&t, sizeof t);
    return lanes_status(lane_mask, (unsigned)(__mmask8)~ok, 0);
}

IFMA_FN mb8_status_t MB8__EC_FN(ecdsa_setup_ifma)(uint8_t out[MB8_LANES][NSETUP],
                                                  const uint8_t k[MB8_LANES][NB],
                                                  unsigned lane_mask, void *ws)
{
    struct {
        struct setup8 m;
        fe8 v;
    } t;
    __mmask8 ok = ecdsa_setup8(&t.m, k, lane_mask, ws);
    const fe8 *parts[3] = {&t.m.r_m, &t.m.kb_inv_m, &t.m.b_m};
    for (int part = 0; part < 3; part++) { /* out of the Montgomery domain, canonical */
        n_canon(&t.v, parts[part]);
        fe8_put((uint8_t *)out + part * NB, NSETUP, &t.v, lane_mask, ok);
    }
    mb8__wipe(&t, sizeof t);
    return lanes_status(lane_mask, (unsigned)(__mmask8)~ok, 0);
}
