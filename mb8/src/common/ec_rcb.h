/*
 * The common end of the complete addition formulas of Renes, Costello and Batina, "Complete
 * addition formulas for prime order elliptic curves" (EUROCRYPT 2016), for a = -3:
 * Algorithm 4 (projective + projective: common/ec_ref_impl.h's pt_add) and Algorithm 5
 * (projective + affine, Z2 = 1: common/ec_ifma_impl.h's pt_add_affine) agree from the first
 * multiplication by b on, with Z1 Z2 in place of Z1. One definition for both kernels: the
 * including file defines before it EC_RCB_FE (its field element), EC_RCB_PT (its point
 * type, members x, y, z), EC_RCB_FN (the function's storage class and attributes) and
 * fmul, fadd, fsub, ftriple on EC_RCB_FE.
 */

/* The formulas' temporaries, named as in the paper. */
struct rcb {
    EC_RCB_FE t0, t1, t2, t3, t4, X3, Y3, Z3;
};

/* R = P1 + P2 from the first half of the formulas, in T: t0 = X1 X2, t1 = Y1 Y2,
 * t3 = X1 Y2 + X2 Y1, t4 = Y1 Z2 + Y2 Z1, Y3 = X1 Z2 + X2 Z1; z = Z1 Z2 (it may be T's t2,
 * or P1's Z), b the curve's b (all in Montgomery form). T's other members are overwritten
 * (the caller wipes T where it must). R is written last, so it may alias P1 or P2. */
EC_RCB_FN void rcb_add_end(EC_RCB_PT *R, struct rcb *T, const EC_RCB_FE *z, const EC_RCB_FE *b)
{
    fmul(&T->Z3, b, z);
    fsub(&T->X3, &T->Y3, &T->Z3);
    ftriple(&T->X3, &T->X3);
    fsub(&T->Z3, &T->t1, &T->X3);
    fadd(&T->X3, &T->t1, &T->X3);
    fmul(&T->Y3, b, &T->Y3);
    ftriple(&T->t2, z);
    fsub(&T->Y3, &T->Y3, &T->t2);
    fsub(&T->Y3, &T->Y3, &T->t0);
    ftriple(&T->Y3, &T->Y3);
    ftriple(&T->t0, &T->t0);
    fsub(&T->t0, &T->t0, &T->t2);
    fmul(&T->t1, &T->t4, &T->Y3);
    fmul(&T->t2, &T->t0, &T->Y3);
    fmul(&T->Y3, &T->X3, &T->Z3);
    fadd(&T->Y3, &T->Y3, &T->t2);
    fmul(&T->X3, &T->t3, &T->X3);
    fsub(&T->X3, &T->X3, &T->t1);
    fmul(&T->Z3, &T->t4, &T->Z3);
    fmul(&T->t1, &T->t3, &T->t0);
    fadd(&T->Z3, &T->Z3, &T->t1);
    R->x = T->X3;
    R->y = T->Y3;
    R->z = T->Z3;
}
