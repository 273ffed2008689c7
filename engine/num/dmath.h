/* dmath.h — the engine's own transcendental functions.
 *
 * Every exp/log/sigmoid/tanh/cos used in training or initialisation comes from
 * here, built only from + - * /, sqrt and bit manipulation, so the bits do not
 * depend on the libm version, the compiler or the optimisation level (the
 * build pins -ffp-contract=off; no FMA is used). Frozen: changing any result
 * bit changes every golden file and needs a line in golden/CHANGES.
 * Also the check of the floating-point environment the contract needs.
 */
#ifndef LS_DMATH_H
#define LS_DMATH_H

#include "include/lockstep.h"

double dmath_exp(double x);      /* e^x; +inf on overflow, 0 on underflow, NaN in → NaN out */
double dmath_log(double x);      /* natural log; -inf at 0, NaN below 0 */
float dmath_expf(float x);       /* (float) of a double-precision evaluation */
float dmath_logf(float x);
float dmath_sigmoidf(float x);   /* 1 / (1 + e^-x), stable for large |x| */
float dmath_tanhf(float x);
/* y[i] = dmath_tanhf(x[i]), y[i] = dmath_exp(x[i]) for i < n, bit for bit
 * (y == x allowed): four lanes at a time with AVX2, unless LOCKSTEP_SIMD=off
 * or dmath_set_simd(0) (returns the previous setting) chose the scalar loop. */
int dmath_set_simd(int enabled);
void dmath_exp_n(double *y, const double *x, size_t n);
void dmath_tanhf_n(float *y, const float *x, size_t n);
double dmath_cos(double x);      /* for Box-Muller; accurate for |x| <= 8 (2π and a margin) */
double dmath_sin(double x);
/* cos(π·x) for x in [0, 1] (NaN elsewhere), for the cosine learning-rate
 * schedule: dmath_sin(π·(0.5 − x)) for x <= 0.5, −dmath_sin(π·(x − 0.5))
 * above, π the binary64 nearest it. So cospi(0) = 1, cospi(0.5) = 0 and
 * cospi(1) = −1 exactly, cospi(1 − x) = −cospi(x) where 1 − x is exact,
 * and within about an ulp of cos(πx) elsewhere (tests/test_dmath.c). */
double dmath_cospi(double x);

/* LS_OK when rounding is to nearest and denormals are neither flushed to zero
 * nor treated as zero (x86 MXCSR FTZ/DAZ, aarch64 FPCR.FZ), nor NaNs made default (FPCR.DN); otherwise
 * LS_EFPENV with a line saying which. */
ls_status dmath_check_fpenv(ls_err *err);

#endif
