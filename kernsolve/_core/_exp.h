/* exp() for the RBF and Laplacian kernels, in two spellings of one algorithm:
 * ks_exp (one value, baseline x86-64) and ks_exp_block (many values in place;
 * four at a time with AVX2 when the CPU has it, chosen at run time, so one
 * build runs on any x86-64).  Both do the same IEEE double operations in the
 * same order -- multiplies and adds only, never a fused multiply-add -- so a
 * value has the same bits whichever path, thread or loop shape computes it.
 *
 * Why not libm's exp: it is one value at a time, and in SMO's kernel rows on
 * sparse data it was a third of the time of a kernel value.  Accuracy: within
 * 2 ulp of the exact value (tests/test_exp.py checks against numpy's exp);
 * cast to float, as the kernel cache stores it, it almost always gives the
 * same float as libm's.
 *
 * Method: x = k ln2 + r with |r| <= ln2/2 (k rounded by the 1.5 * 2^52
 * shifter, ln2 split in two so k * LN2_HI is exact), exp(r) by its Taylor
 * polynomial of degree 13 (truncation < 1e-17 relative), times 2^k built in
 * the exponent bits.  Below KS_EXP_MIN the result is 0 (exp(-708) is 3e-308,
 * zero as a float and negligible beside any kernel sum); NaN stays NaN.
 * Arguments above 709 are outside the domain (kernels only pass x <= 0).
 */
#ifndef KS_EXP_H
#define KS_EXP_H

#include <stdint.h>
#include <string.h>
#include <stddef.h>
#include "_simd.h"

#define KS_EXP_MIN (-708.0)
#define KS_EXP_INVLN2 1.4426950408889634
#define KS_EXP_LN2_HI 6.93147180369123816490e-01  /* low 21 bits of the mantissa zero */
#define KS_EXP_LN2_LO 1.90821492927058770002e-10
#define KS_EXP_SHIFTER 6755399441055744.0          /* 1.5 * 2^52 */

/* 1/n! for n = 13 down to 2 (the Horner order) */
#define KS_EXP_C13 1.6059043836821613e-10
#define KS_EXP_C12 2.08767569878681e-09
#define KS_EXP_C11 2.505210838544172e-08
#define KS_EXP_C10 2.755731922398589e-07
#define KS_EXP_C9 2.7557319223985893e-06
#define KS_EXP_C8 2.48015873015873e-05
#define KS_EXP_C7 0.0001984126984126984
#define KS_EXP_C6 0.001388888888888889
#define KS_EXP_C5 0.008333333333333333
#define KS_EXP_C4 0.041666666666666664
#define KS_EXP_C3 0.16666666666666666
#define KS_EXP_C2 0.5

static inline double ks_exp(double x)
{
    double xc = x < KS_EXP_MIN ? KS_EXP_MIN : x;
    double t = xc * KS_EXP_INVLN2 + KS_EXP_SHIFTER;
    double kd = t - KS_EXP_SHIFTER;
    double r = (xc - kd * KS_EXP_LN2_HI) - kd * KS_EXP_LN2_LO;
    double p = KS_EXP_C13;
    uint64_t tb, sb;
    double scale;
    p = p * r + KS_EXP_C12;
    p = p * r + KS_EXP_C11;
    p = p * r + KS_EXP_C10;
    p = p * r + KS_EXP_C9;
    p = p * r + KS_EXP_C8;
    p = p * r + KS_EXP_C7;
    p = p * r + KS_EXP_C6;
    p = p * r + KS_EXP_C5;
    p = p * r + KS_EXP_C4;
    p = p * r + KS_EXP_C3;
    p = p * r + KS_EXP_C2;
    p = p * r + 1.0;
    p = p * r + 1.0;
    /* t's low bits hold k (two's complement): 2^k = (k + 1023) << 52 */
    memcpy(&tb, &t, sizeof tb);
    {
        double shifter = KS_EXP_SHIFTER;
        memcpy(&sb, &shifter, sizeof sb);
    }
    sb = ((tb - sb) + (uint64_t)1023) << 52;
    memcpy(&scale, &sb, sizeof scale);
    p = p * scale;
    if (x < KS_EXP_MIN)
        p = 0.0;
    if (x != x)
        p = x;
    return p;
}

static void ks_exp_block_scalar(double *v, ptrdiff_t n)
{
    ptrdiff_t i;
    for (i = 0; i < n; i++)
        v[i] = ks_exp(v[i]);
}

#ifdef KS_X86
__attribute__((target("avx2")))
static void ks_exp_block_avx2(double *v, ptrdiff_t n)
{
    const __m256d lo = _mm256_set1_pd(KS_EXP_MIN);
    const __m256d invln2 = _mm256_set1_pd(KS_EXP_INVLN2);
    const __m256d shifter = _mm256_set1_pd(KS_EXP_SHIFTER);
    const __m256d ln2_hi = _mm256_set1_pd(KS_EXP_LN2_HI);
    const __m256d ln2_lo = _mm256_set1_pd(KS_EXP_LN2_LO);
    const __m256d one = _mm256_set1_pd(1.0);
    const __m256d zero = _mm256_setzero_pd();
    const __m256i bias = _mm256_set1_epi64x(1023);
    const __m256i shifter_bits = _mm256_castpd_si256(shifter);
    ptrdiff_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256d x = _mm256_loadu_pd(v + i);
        __m256d below = _mm256_cmp_pd(x, lo, _CMP_LT_OQ);
        __m256d xc = _mm256_blendv_pd(x, lo, below);
        __m256d t = _mm256_add_pd(_mm256_mul_pd(xc, invln2), shifter);
        __m256d kd = _mm256_sub_pd(t, shifter);
        __m256d r = _mm256_sub_pd(_mm256_sub_pd(xc, _mm256_mul_pd(kd, ln2_hi)),
                                  _mm256_mul_pd(kd, ln2_lo));
        __m256d p = _mm256_set1_pd(KS_EXP_C13);
        __m256i e;
        p = _mm256_add_pd(_mm256_mul_pd(p, r), _mm256_set1_pd(KS_EXP_C12));
        p = _mm256_add_pd(_mm256_mul_pd(p, r), _mm256_set1_pd(KS_EXP_C11));
        p = _mm256_add_pd(_mm256_mul_pd(p, r), _mm256_set1_pd(KS_EXP_C10));
        p = _mm256_add_pd(_mm256_mul_pd(p, r), _mm256_set1_pd(KS_EXP_C9));
        p = _mm256_add_pd(_mm256_mul_pd(p, r), _mm256_set1_pd(KS_EXP_C8));
        p = _mm256_add_pd(_mm256_mul_pd(p, r), _mm256_set1_pd(KS_EXP_C7));
        p = _mm256_add_pd(_mm256_mul_pd(p, r), _mm256_set1_pd(KS_EXP_C6));
        p = _mm256_add_pd(_mm256_mul_pd(p, r), _mm256_set1_pd(KS_EXP_C5));
        p = _mm256_add_pd(_mm256_mul_pd(p, r), _mm256_set1_pd(KS_EXP_C4));
        p = _mm256_add_pd(_mm256_mul_pd(p, r), _mm256_set1_pd(KS_EXP_C3));
        p = _mm256_add_pd(_mm256_mul_pd(p, r), _mm256_set1_pd(KS_EXP_C2));
        p = _mm256_add_pd(_mm256_mul_pd(p, r), one);
        p = _mm256_add_pd(_mm256_mul_pd(p, r), one);
        e = _mm256_slli_epi64(_mm256_add_epi64(
                _mm256_sub_epi64(_mm256_castpd_si256(t), shifter_bits), bias), 52);
        p = _mm256_mul_pd(p, _mm256_castsi256_pd(e));
        p = _mm256_blendv_pd(p, zero, below);
        p = _mm256_blendv_pd(p, x, _mm256_cmp_pd(x, x, _CMP_UNORD_Q));
        _mm256_storeu_pd(v + i, p);
    }
    for (; i < n; i++)
        v[i] = ks_exp(v[i]);
}
#endif

/* v[i] = ks_exp(v[i]) for i < n, four lanes at a time where the CPU can. */
static inline void ks_exp_block(double *v, ptrdiff_t n)
{
#ifdef KS_X86
    if (ks_simd(KS_AVX2)) {
        ks_exp_block_avx2(v, n);
        return;
    }
#endif
    ks_exp_block_scalar(v, n);
}

#endif
