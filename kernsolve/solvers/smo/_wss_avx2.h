/* SMO's two sweeps over the active set, four variables at a time with AVX2
 * (chosen at run time: one build runs on any x86-64).  Their scalar spellings
 * are _axpy2_up_chunk and _low_chunk in _smo.pxd; each function here does the
 * first multiple of four of a chunk and leaves the state for the scalar loop
 * to finish the rest, so the tail is the same code either way.
 *
 * Same bits as the scalar loop:
 *  - every element gets the same IEEE operations in the same order (float
 *    kernel values widened to double, multiplies and adds separately: the
 *    target is avx2 without fma, so nothing can be fused);
 *  - the scalar loop keeps the *last* index whose value ties the best
 *    (">=" for maxima, "<=" for minima).  Each lane keeps its own last best,
 *    and the lanes combine to the best value and, among the lanes holding it,
 *    the largest index: the last index in the range with the best value,
 *    which is the scalar loop's pick; its value is taken from that lane, so
 *    even the sign of a zero is the scalar loop's.  NaN never compares true,
 *    in a lane or in the scalar loop;
 *  - _low_chunk's rejection test (skip the division when it cannot win) is a
 *    shortcut that changes no pick, so the lanes simply divide.
 */
#ifndef KS_WSS_AVX2_H
#define KS_WSS_AVX2_H

#include <stddef.h>
#include <string.h>
#include <math.h>
#include "_simd.h"

#ifdef KS_X86

/* the statuses of four variables (LIBSVM's alpha_status: 0 lower bound,
   1 upper bound, 2 free) as 64-bit lanes */
__attribute__((target("avx2")))
static inline __m256d ks_wss_status4(const char *st)
{
    int word;
    memcpy(&word, st, sizeof word);
    return _mm256_castsi256_pd(_mm256_cvtepi8_epi64(_mm_cvtsi32_si128(word)));
}

__attribute__((target("avx2")))
static inline __m256d ks_wss_is(__m256d status, long long value)
{
    return _mm256_castsi256_pd(_mm256_cmpeq_epi64(_mm256_castpd_si256(status),
                                                  _mm256_set1_epi64x(value)));
}

/* The lanes' (value, index) pairs combined: the largest value (smallest with
   `smallest`), and among the lanes holding it the largest index. */
__attribute__((target("avx2")))
static inline void ks_wss_combine(__m256d v, __m256d ix, int smallest,
                                  double *value, ptrdiff_t *index)
{
    double vs[4], is[4];
    int k, best = 0;
    _mm256_storeu_pd(vs, v);
    _mm256_storeu_pd(is, ix);
    for (k = 1; k < 4; k++) {
        int better = smallest ? vs[k] < vs[best] : vs[k] > vs[best];
        if (better || (vs[k] == vs[best] && is[k] > is[best]))
            best = k;
    }
    *value = vs[best];
    *index = (ptrdiff_t)is[best];
}

/* G[t] += ys[t] * (Ki[t] * a + Kj[t] * b) for t in [lo, end), and the
   first WSS pass over those t (the maximal violators gp/ip of y = +1 and
   gn/in of y = -1, which start as -inf/-1); returns end, the first t left. */
__attribute__((target("avx2")))
static ptrdiff_t ks_axpy2_up_avx2(double *G, const double *ys, const char *st,
                                  const float *Ki, double a, const float *Kj, double b,
                                  ptrdiff_t lo, ptrdiff_t hi,
                                  double *gp, ptrdiff_t *ip, double *gn, ptrdiff_t *in)
{
    const __m256d va = _mm256_set1_pd(a), vb = _mm256_set1_pd(b);
    const __m256d zero = _mm256_setzero_pd();
    const __m256d sign = _mm256_set1_pd(-0.0);
    __m256d bp = _mm256_set1_pd(-INFINITY), bn = bp;
    __m256d xp = _mm256_set1_pd(-1.0), xn = xp;
    __m256d idx = _mm256_setr_pd((double)lo, (double)lo + 1, (double)lo + 2, (double)lo + 3);
    const __m256d four = _mm256_set1_pd(4.0);
    ptrdiff_t t, end = lo + ((hi - lo) & ~(ptrdiff_t)3);
    for (t = lo; t < end; t += 4) {
        __m256d ki = _mm256_cvtps_pd(_mm_loadu_ps(Ki + t));
        __m256d kj = _mm256_cvtps_pd(_mm_loadu_ps(Kj + t));
        __m256d y = _mm256_loadu_pd(ys + t);
        __m256d g = _mm256_add_pd(_mm256_loadu_pd(G + t),
                                  _mm256_mul_pd(y, _mm256_add_pd(_mm256_mul_pd(ki, va),
                                                                 _mm256_mul_pd(kj, vb))));
        __m256d s = ks_wss_status4(st + t);
        __m256d pos = _mm256_cmp_pd(y, zero, _CMP_GT_OQ);
        __m256d ng = _mm256_xor_pd(g, sign);
        /* y = +1, not at the upper bound, -g >= best so far */
        __m256d up = _mm256_andnot_pd(ks_wss_is(s, 1),
                                      _mm256_and_pd(pos, _mm256_cmp_pd(ng, bp, _CMP_GE_OQ)));
        /* y = -1, not at the lower bound, g >= best so far */
        __m256d un = _mm256_andnot_pd(_mm256_or_pd(pos, ks_wss_is(s, 0)),
                                      _mm256_cmp_pd(g, bn, _CMP_GE_OQ));
        _mm256_storeu_pd(G + t, g);
        bp = _mm256_blendv_pd(bp, ng, up);
        xp = _mm256_blendv_pd(xp, idx, up);
        bn = _mm256_blendv_pd(bn, g, un);
        xn = _mm256_blendv_pd(xn, idx, un);
        idx = _mm256_add_pd(idx, four);
    }
    ks_wss_combine(bp, xp, 0, gp, ip);
    ks_wss_combine(bn, xn, 0, gn, in);
    return end;
}

/* The second WSS pass (_low_chunk) over t in [lo, end): g2p, g2n, obj, j as
   the scalar loop leaves them (starting from -inf, -inf, +inf, -1); Kp/Kn
   may be NULL when gp/gn is -inf (then no y = +1/-1 candidate can have a
   positive gradient difference, and the row is never read).  Returns end. */
__attribute__((target("avx2")))
static ptrdiff_t ks_low_avx2(const double *G, const double *ys, const char *st,
                             const double *QD,
                             double gp, const float *Kp, double qdp,
                             double gn, const float *Kn, double qdn,
                             ptrdiff_t lo, ptrdiff_t hi, double tau,
                             double *g2p, double *g2n, double *obj, ptrdiff_t *j)
{
    const __m256d zero = _mm256_setzero_pd();
    const __m256d sign = _mm256_set1_pd(-0.0);
    const __m256d two = _mm256_set1_pd(2.0), vtau = _mm256_set1_pd(tau);
    const __m256d vgp = _mm256_set1_pd(gp), vgn = _mm256_set1_pd(gn);
    const __m256d vqdp = _mm256_set1_pd(qdp), vqdn = _mm256_set1_pd(qdn);
    const __m256d ones = _mm256_castsi256_pd(_mm256_set1_epi64x(-1));
    __m256d mp = _mm256_set1_pd(-INFINITY), mn = mp;           /* g2p, g2n */
    __m256d xmp = _mm256_set1_pd(-1.0), xmn = xmp, xo = xmp;    /* their indices, j */
    __m256d bo = _mm256_set1_pd(INFINITY);                     /* obj */
    __m256d idx = _mm256_setr_pd((double)lo, (double)lo + 1, (double)lo + 2, (double)lo + 3);
    const __m256d four = _mm256_set1_pd(4.0);
    ptrdiff_t t, end = lo + ((hi - lo) & ~(ptrdiff_t)3);
    ptrdiff_t ignored;
    for (t = lo; t < end; t += 4) {
        __m256d g = _mm256_loadu_pd(G + t);
        __m256d y = _mm256_loadu_pd(ys + t);
        __m256d s = ks_wss_status4(st + t);
        __m256d pos = _mm256_cmp_pd(y, zero, _CMP_GT_OQ);
        __m256d ng = _mm256_xor_pd(g, sign);
        /* y = +1 not at the lower bound; y = -1 not at the upper bound */
        __m256d ep = _mm256_andnot_pd(ks_wss_is(s, 0), pos);
        __m256d en = _mm256_andnot_pd(_mm256_or_pd(pos, ks_wss_is(s, 1)), ones);
        __m256d kp = Kp ? _mm256_cvtps_pd(_mm_loadu_ps(Kp + t)) : zero;
        __m256d kn = Kn ? _mm256_cvtps_pd(_mm_loadu_ps(Kn + t)) : zero;
        __m256d gd, quad, gd2, od, take, mp_take, mn_take;
        /* the maxima of G (y = +1) and -G (y = -1) */
        mp_take = _mm256_and_pd(ep, _mm256_cmp_pd(g, mp, _CMP_GE_OQ));
        mp = _mm256_blendv_pd(mp, g, mp_take);
        xmp = _mm256_blendv_pd(xmp, idx, mp_take);
        mn_take = _mm256_and_pd(en, _mm256_cmp_pd(ng, mn, _CMP_GE_OQ));
        mn = _mm256_blendv_pd(mn, ng, mn_take);
        xmn = _mm256_blendv_pd(xmn, idx, mn_take);
        /* gd = gp + G (y = +1) or gn - G (y = -1); quad = qd + QD - 2 K */
        gd = _mm256_blendv_pd(_mm256_sub_pd(vgn, g), _mm256_add_pd(vgp, g), pos);
        quad = _mm256_sub_pd(_mm256_add_pd(_mm256_blendv_pd(vqdn, vqdp, pos),
                                           _mm256_loadu_pd(QD + t)),
                             _mm256_mul_pd(two, _mm256_blendv_pd(kn, kp, pos)));
        gd2 = _mm256_mul_pd(gd, gd);
        od = _mm256_xor_pd(_mm256_div_pd(gd2, _mm256_blendv_pd(
                               vtau, quad, _mm256_cmp_pd(quad, zero, _CMP_GT_OQ))), sign);
        take = _mm256_and_pd(_mm256_or_pd(ep, en),
                             _mm256_and_pd(_mm256_cmp_pd(gd, zero, _CMP_GT_OQ),
                                           _mm256_cmp_pd(od, bo, _CMP_LE_OQ)));
        bo = _mm256_blendv_pd(bo, od, take);
        xo = _mm256_blendv_pd(xo, idx, take);
        idx = _mm256_add_pd(idx, four);
    }
    ks_wss_combine(mp, xmp, 0, g2p, &ignored);
    ks_wss_combine(mn, xmn, 0, g2n, &ignored);
    ks_wss_combine(bo, xo, 1, obj, j);
    return end;
}

#endif  /* KS_X86 */

/* The dispatchers: the AVX2 bulk where the CPU has it, else nothing (the
   scalar loop then does the whole range from lo). */
static inline ptrdiff_t ks_axpy2_up_vec(double *G, const double *ys, const char *st,
                                        const float *Ki, double a, const float *Kj,
                                        double b, ptrdiff_t lo, ptrdiff_t hi,
                                        double *gp, ptrdiff_t *ip, double *gn, ptrdiff_t *in)
{
#ifdef KS_X86
    if (hi - lo >= 4 && ks_simd(KS_AVX2))
        return ks_axpy2_up_avx2(G, ys, st, Ki, a, Kj, b, lo, hi, gp, ip, gn, in);
#endif
    return lo;
}

static inline ptrdiff_t ks_low_vec(const double *G, const double *ys, const char *st,
                                   const double *QD, double gp, const float *Kp, double qdp,
                                   double gn, const float *Kn, double qdn,
                                   ptrdiff_t lo, ptrdiff_t hi, double tau,
                                   double *g2p, double *g2n, double *obj, ptrdiff_t *j)
{
#ifdef KS_X86
    if (hi - lo >= 4 && ks_simd(KS_AVX2))
        return ks_low_avx2(G, ys, st, QD, gp, Kp, qdp, gn, Kn, qdn, lo, hi, tau,
                           g2p, g2n, obj, j);
#endif
    return lo;
}
#endif
