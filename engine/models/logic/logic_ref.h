/* logic_ref.h — the pieces of the reference (scalar twin) kernels that the
 * SIMD paths reuse: a gate's softmax normalisation and coefficients, in
 * logic.h's order of operations. The vector coefficient kernels
 * (kernels/x86/) call them for the gates they leave to the scalar path, so
 * those gates get the twin's bits by construction. Private to
 * engine/models/logic/; static inline, one copy per file that includes it.
 */
#ifndef LS_LOGIC_REF_H
#define LS_LOGIC_REF_H

#include "engine/models/logic/logic.h"
#include "engine/num/dmath.h"

/* The coefficients from p (logic.h's sums, left to right). */
static inline void coef_from_p(const float *q, float *c)
{
    float c0 = q[8];
    for (int i = 9; i < LOGIC_OPS; i++)
        c0 = c0 + q[i];
    const float ca = (((q[2] + q[3]) + q[6]) + q[7]) - (((q[8] + q[9]) + q[12]) + q[13]);
    const float cb = (((q[4] + q[5]) + q[6]) + q[7]) - (((q[8] + q[9]) + q[10]) + q[11]);
    float cab = q[1] - q[2];
    cab = cab - q[4];
    cab = cab - 2.0f * q[6];
    cab = cab - q[7];
    cab = cab + q[8];
    cab = cab + 2.0f * q[9];
    cab = cab + q[11];
    cab = cab + q[13];
    cab = cab - q[14];
    c[0] = c0;
    c[1] = ca;
    c[2] = cb;
    c[3] = cab;
}

/* s = e_0 + e_1 + ... + e_15 in order, then p_i = e_i / s. */
static inline void p_from_e(const float *e, float *q)
{
    float s = e[0];
    for (int i = 1; i < LOGIC_OPS; i++)
        s = s + e[i];
    for (int i = 0; i < LOGIC_OPS; i++)
        q[i] = e[i] / s;
}

/* One gate, the scalar twin of the SIMD paths (logic.h's definition). */
static inline void gate_coeffs_scalar(const float *z, float *q, float *c)
{
    float m = z[0];
    for (int i = 1; i < LOGIC_OPS; i++)
        if (z[i] > m)
            m = z[i];
    float e[LOGIC_OPS];
    for (int i = 0; i < LOGIC_OPS; i++)
        e[i] = dmath_expf(z[i] - m);
    p_from_e(e, q);
    coef_from_p(q, c);
}

#endif
