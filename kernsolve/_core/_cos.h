/* cos() for the random Fourier features (doc/dsg.md, "Definition, bit for
 * bit"), in two spellings of one algorithm: ks_cos (one value, baseline
 * x86-64) and ks_cos_features (a block of features in place; four at a time
 * with AVX2 when the CPU has it, chosen at run time).  Both do the same IEEE
 * double operations in the same order -- multiplies and adds only, never a
 * fused multiply-add -- so a feature has the same bits whichever path, thread
 * or x86-64 machine computes it (libm's cos may differ between C libraries).
 *
 * Why not libm's cos: one value at a time, about 16 ns here; it was 56% of a
 * DSG run on Adult (14 nonzeros a row: the cos costs more than the sum).
 *
 * Method (Cody and Waite): x = k pi/2 + r with |r| <= pi/4 (k rounded by the
 * 1.5 * 2^52 shifter; pi/2 split in three, the first two with 33 significant
 * bits, so k * P1 and k * P2 are exact for |k| < 2^20), then by k mod 4 the
 * Taylor polynomial of cos r (to r^18) or sin r (to r^17), truncation below
 * 1e-19, each evaluated in z = r^2 by Estrin's scheme (pairs a + b z, then
 * z^2 and z^4: a third of Horner's chain of dependent operations, which kept
 * the vector path waiting).  cos r = w + ((1 - w) - r^2/2 + r^4 q(r^2)) with
 * w = 1 - r^2/2 rounded, which recovers w's rounding error.  Accuracy:
 * within 2 ulp of the exact value (tests/test_features.py checks it against
 * the C library).
 * Arguments beyond 2^20 in magnitude (never with scaled data: a feature's
 * argument is omega . x + b, omega of order sqrt(2 gamma)), infinities and
 * NaN go to the C library's cos.
 */
#ifndef KS_COS_H
#define KS_COS_H

#include <math.h>
#include <stdint.h>
#include <string.h>
#include <stddef.h>
#include "_simd.h"

#define KS_COS_MAX 1048576.0                     /* 2^20 */
#define KS_COS_2_OVER_PI 0.6366197723675814
#define KS_COS_SHIFTER 6755399441055744.0        /* 1.5 * 2^52 */
#define KS_COS_P1 1.5707963267341256             /* pi/2 = P1 + P2 + P3 */
#define KS_COS_P2 6.077100506303966e-11
#define KS_COS_P3 2.0222662487959506e-21
#define KS_SQRT2 1.4142135623730951

/* (-1)^k / (2k+1)!, sin's terms r^3 .. r^17 */
#define KS_SIN3 (-0.16666666666666666)
#define KS_SIN5 0.008333333333333333
#define KS_SIN7 (-0.0001984126984126984)
#define KS_SIN9 2.7557319223985893e-06
#define KS_SIN11 (-2.505210838544172e-08)
#define KS_SIN13 1.6059043836821613e-10
#define KS_SIN15 (-7.647163731819816e-13)
#define KS_SIN17 2.8114572543455206e-15
/* (-1)^k / (2k)!, cos's terms r^4 .. r^18 */
#define KS_COS4 0.041666666666666664
#define KS_COS6 (-0.001388888888888889)
#define KS_COS8 2.48015873015873e-05
#define KS_COS10 (-2.755731922398589e-07)
#define KS_COS12 2.08767569878681e-09
#define KS_COS14 (-1.1470745597729725e-11)
#define KS_COS16 4.779477332387385e-14
#define KS_COS18 (-1.5619206968586225e-16)

static inline double ks_cos(double x)
{
    double t, kd, r, z, z2, z4, ps, pc, hz, w, s, c, v;
    uint64_t tb;
    if (!(fabs(x) <= KS_COS_MAX))
        return cos(x);
    t = x * KS_COS_2_OVER_PI + KS_COS_SHIFTER;
    kd = t - KS_COS_SHIFTER;
    r = ((x - kd * KS_COS_P1) - kd * KS_COS_P2) - kd * KS_COS_P3;
    z = r * r;
    z2 = z * z;
    z4 = z2 * z2;
    ps = ((KS_SIN5 + KS_SIN7 * z) + z2 * (KS_SIN9 + KS_SIN11 * z))
         + z4 * ((KS_SIN13 + KS_SIN15 * z) + z2 * KS_SIN17);
    s = r + (r * z) * (KS_SIN3 + z * ps);
    pc = ((KS_COS4 + KS_COS6 * z) + z2 * (KS_COS8 + KS_COS10 * z))
         + z4 * ((KS_COS12 + KS_COS14 * z) + z2 * (KS_COS16 + KS_COS18 * z));
    hz = 0.5 * z;
    w = 1.0 - hz;
    c = w + (((1.0 - w) - hz) + z2 * pc);
    /* t's low bits hold k (two's complement): the quadrant is k mod 4 */
    memcpy(&tb, &t, sizeof tb);
    switch (tb & 3) {
        case 0: v = c; break;
        case 1: v = -s; break;
        case 2: v = -c; break;
        default: v = s; break;
    }
    return v;
}

static void ks_cos_features_scalar(double *v, const double *phase, ptrdiff_t n)
{
    ptrdiff_t i;
    for (i = 0; i < n; i++)
        v[i] = KS_SQRT2 * ks_cos(v[i] + phase[i]);
}

#ifdef KS_X86
/* a + b z, four lanes */
#define KS_LIN(a, b, z) _mm256_add_pd(_mm256_set1_pd(a), _mm256_mul_pd(_mm256_set1_pd(b), (z)))

__attribute__((target("avx2")))
static void ks_cos_features_avx2(double *v, const double *phase, ptrdiff_t n)
{
    const __m256d two_over_pi = _mm256_set1_pd(KS_COS_2_OVER_PI);
    const __m256d shifter = _mm256_set1_pd(KS_COS_SHIFTER);
    const __m256d p1 = _mm256_set1_pd(KS_COS_P1);
    const __m256d p2 = _mm256_set1_pd(KS_COS_P2);
    const __m256d p3 = _mm256_set1_pd(KS_COS_P3);
    const __m256d half = _mm256_set1_pd(0.5);
    const __m256d one = _mm256_set1_pd(1.0);
    const __m256d sqrt2 = _mm256_set1_pd(KS_SQRT2);
    const __m256d max = _mm256_set1_pd(KS_COS_MAX);
    const __m256d sign = _mm256_set1_pd(-0.0);
    const __m256i three = _mm256_set1_epi64x(3);
    const __m256i one_i = _mm256_set1_epi64x(1);
    ptrdiff_t i = 0, q;
    for (; i + 4 <= n; i += 4) {
        __m256d x = _mm256_add_pd(_mm256_loadu_pd(v + i), _mm256_loadu_pd(phase + i));
        __m256d ok = _mm256_cmp_pd(_mm256_andnot_pd(sign, x), max, _CMP_LE_OQ);
        __m256d t, kd, r, z, z2, z4, ps, pc, hz, w, s, c, res;
        __m256i quad, swap, neg;
        if (_mm256_movemask_pd(ok) != 15) {
            for (q = i; q < i + 4; q++)
                v[q] = KS_SQRT2 * ks_cos(v[q] + phase[q]);
            continue;
        }
        t = _mm256_add_pd(_mm256_mul_pd(x, two_over_pi), shifter);
        kd = _mm256_sub_pd(t, shifter);
        r = _mm256_sub_pd(_mm256_sub_pd(_mm256_sub_pd(x, _mm256_mul_pd(kd, p1)),
                                        _mm256_mul_pd(kd, p2)),
                          _mm256_mul_pd(kd, p3));
        z = _mm256_mul_pd(r, r);
        z2 = _mm256_mul_pd(z, z);
        z4 = _mm256_mul_pd(z2, z2);
        ps = _mm256_add_pd(
            _mm256_add_pd(KS_LIN(KS_SIN5, KS_SIN7, z),
                          _mm256_mul_pd(z2, KS_LIN(KS_SIN9, KS_SIN11, z))),
            _mm256_mul_pd(z4, _mm256_add_pd(KS_LIN(KS_SIN13, KS_SIN15, z),
                                            _mm256_mul_pd(z2, _mm256_set1_pd(KS_SIN17)))));
        s = _mm256_add_pd(r, _mm256_mul_pd(_mm256_mul_pd(r, z),
                                           _mm256_add_pd(_mm256_set1_pd(KS_SIN3),
                                                         _mm256_mul_pd(z, ps))));
        pc = _mm256_add_pd(
            _mm256_add_pd(KS_LIN(KS_COS4, KS_COS6, z),
                          _mm256_mul_pd(z2, KS_LIN(KS_COS8, KS_COS10, z))),
            _mm256_mul_pd(z4, _mm256_add_pd(KS_LIN(KS_COS12, KS_COS14, z),
                                            _mm256_mul_pd(z2, KS_LIN(KS_COS16, KS_COS18, z)))));
        hz = _mm256_mul_pd(half, z);
        w = _mm256_sub_pd(one, hz);
        c = _mm256_add_pd(w, _mm256_add_pd(_mm256_sub_pd(_mm256_sub_pd(one, w), hz),
                                           _mm256_mul_pd(z2, pc)));
        /* quadrant k mod 4: odd ones take sin, 1 and 2 change the sign */
        quad = _mm256_and_si256(_mm256_castpd_si256(t), three);
        swap = _mm256_cmpeq_epi64(_mm256_and_si256(quad, one_i), one_i);
        neg = _mm256_cmpeq_epi64(
            _mm256_and_si256(_mm256_xor_si256(quad, _mm256_srli_epi64(quad, 1)), one_i), one_i);
        res = _mm256_blendv_pd(c, s, _mm256_castsi256_pd(swap));
        res = _mm256_xor_pd(res, _mm256_and_pd(_mm256_castsi256_pd(neg), sign));
        _mm256_storeu_pd(v + i, _mm256_mul_pd(sqrt2, res));
    }
    for (; i < n; i++)
        v[i] = KS_SQRT2 * ks_cos(v[i] + phase[i]);
}
#endif

/* v[i] = sqrt(2) * ks_cos(v[i] + phase[i]) for i < n: a block's feature
   values from their sums (doc/dsg.md), four at a time where the CPU can. */
static inline void ks_cos_features(double *v, const double *phase, ptrdiff_t n)
{
#ifdef KS_X86
    if (ks_simd(KS_AVX2)) {
        ks_cos_features_avx2(v, phase, n);
        return;
    }
#endif
    ks_cos_features_scalar(v, phase, n);
}

#endif
