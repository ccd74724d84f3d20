/* A row's sums s_f = sum_j x_j omega[j, f] for a run of random features
 * (doc/dsg.md, "Feature value"): the scalar spelling, an AVX2 one (four
 * features a register) and an AVX-512F one (eight), chosen at run time.
 * Every feature's sum adds the products of the row's nonzero entries in
 * increasing column order, a multiply then an add (never fused), whatever
 * the path or the number of features summed together, so all give the same
 * bits (tests/test_features.py compares them).
 *
 * omega is d x count (omega[j * count + f]); the row is m stored values v
 * at columns ix (NULL: a dense row, column t for value t).  Zero values are
 * skipped: they add nothing, so a dense row and its CSR form agree.
 */
#ifndef KS_FEATURE_SUMS_H
#define KS_FEATURE_SUMS_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include "_simd.h"

/* The scalar path and the dispatcher of one precision, written once: T is
 * the type of omega and of every product and sum (double; float for
 * --precision single, with the row's values rounded to floats), S the
 * suffix of the names (ks_feature_sums##S, ks_feature_sums##S##_scalar, and
 * the vector paths _avx2 and _avx512 below).  In double the casts are
 * no-ops: the same multiply then add as the vector paths. */
#define KS_FEATURE_SUMS_SCALAR(T, S)                                              \
static void ks_feature_sums##S##_scalar(const T *omega, ptrdiff_t count,          \
                                        const double *v, const int32_t *ix,       \
                                        ptrdiff_t m, double *out)                 \
{                                                                                 \
    ptrdiff_t f, t;                                                               \
    for (f = 0; f < count; f++)                                                   \
        out[f] = 0.0;                                                             \
    for (t = 0; t < m; t++) {                                                     \
        T xj;                                                                     \
        const T *w;                                                               \
        if (v[t] == 0.0)                                                          \
            continue;                                                             \
        xj = (T)v[t];                                                             \
        w = omega + (ix != NULL ? (ptrdiff_t)ix[t] : t) * count;                  \
        for (f = 0; f < count; f++) {                                             \
            T s = (T)out[f];            /* exact: out holds a T's value */        \
            T p = xj * w[f];                                                      \
            s = s + p;                                                            \
            out[f] = (double)s;                                                   \
        }                                                                         \
    }                                                                             \
}

#ifdef KS_X86
#define KS_FEATURE_SUMS_VECTOR(T, S)                                              \
    if (ks_simd(KS_AVX512 | KS_AVX2)) {                                           \
        ks_feature_sums##S##_avx512(omega, count, v, ix, m, out);                 \
        return;                                                                   \
    }                                                                             \
    if (ks_simd(KS_AVX2)) {                                                       \
        ks_feature_sums##S##_avx2(omega, count, count, v, ix, m, out);            \
        return;                                                                   \
    }
#else
#define KS_FEATURE_SUMS_VECTOR(T, S)
#endif

#define KS_FEATURE_SUMS_DISPATCH(T, S)                                            \
static inline void ks_feature_sums##S(const T *omega, ptrdiff_t count,            \
                                      const double *v, const int32_t *ix,         \
                                      ptrdiff_t m, double *out)                   \
{                                                                                 \
    KS_FEATURE_SUMS_VECTOR(T, S)                                                  \
    ks_feature_sums##S##_scalar(omega, count, v, ix, m, out);                     \
}

KS_FEATURE_SUMS_SCALAR(double, )

#ifdef KS_X86
/* Eight registers (32 features) summed over the row at once: enough
   independent adds to hide their latency.  Row j of omega starts at
   omega + j * ld (ld >= count: a run of columns of a wider block). */
__attribute__((target("avx2")))
static void ks_feature_sums_avx2(const double *omega, ptrdiff_t ld, ptrdiff_t count,
                                 const double *v, const int32_t *ix, ptrdiff_t m,
                                 double *out)
{
    ptrdiff_t f0 = 0, t, f;
    for (; f0 + 32 <= count; f0 += 32) {
        __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
        __m256d a4 = a0, a5 = a0, a6 = a0, a7 = a0;
        for (t = 0; t < m; t++) {
            const double *w;
            __m256d x;
            if (v[t] == 0.0)
                continue;
            w = omega + (ix != NULL ? (ptrdiff_t)ix[t] : t) * ld + f0;
            x = _mm256_set1_pd(v[t]);
            a0 = _mm256_add_pd(a0, _mm256_mul_pd(x, _mm256_loadu_pd(w)));
            a1 = _mm256_add_pd(a1, _mm256_mul_pd(x, _mm256_loadu_pd(w + 4)));
            a2 = _mm256_add_pd(a2, _mm256_mul_pd(x, _mm256_loadu_pd(w + 8)));
            a3 = _mm256_add_pd(a3, _mm256_mul_pd(x, _mm256_loadu_pd(w + 12)));
            a4 = _mm256_add_pd(a4, _mm256_mul_pd(x, _mm256_loadu_pd(w + 16)));
            a5 = _mm256_add_pd(a5, _mm256_mul_pd(x, _mm256_loadu_pd(w + 20)));
            a6 = _mm256_add_pd(a6, _mm256_mul_pd(x, _mm256_loadu_pd(w + 24)));
            a7 = _mm256_add_pd(a7, _mm256_mul_pd(x, _mm256_loadu_pd(w + 28)));
        }
        _mm256_storeu_pd(out + f0, a0);
        _mm256_storeu_pd(out + f0 + 4, a1);
        _mm256_storeu_pd(out + f0 + 8, a2);
        _mm256_storeu_pd(out + f0 + 12, a3);
        _mm256_storeu_pd(out + f0 + 16, a4);
        _mm256_storeu_pd(out + f0 + 20, a5);
        _mm256_storeu_pd(out + f0 + 24, a6);
        _mm256_storeu_pd(out + f0 + 28, a7);
    }
    for (; f0 + 4 <= count; f0 += 4) {
        __m256d a0 = _mm256_setzero_pd();
        for (t = 0; t < m; t++) {
            if (v[t] == 0.0)
                continue;
            a0 = _mm256_add_pd(a0, _mm256_mul_pd(
                _mm256_set1_pd(v[t]),
                _mm256_loadu_pd(omega + (ix != NULL ? (ptrdiff_t)ix[t] : t) * ld + f0)));
        }
        _mm256_storeu_pd(out + f0, a0);
    }
    for (f = f0; f < count; f++) {
        double s = 0.0;
        for (t = 0; t < m; t++)
            if (v[t] != 0.0)
                s = s + v[t] * omega[(ix != NULL ? (ptrdiff_t)ix[t] : t) * ld + f];
        out[f] = s;
    }
}
#endif

#ifdef KS_X86
/* Sixteen registers of eight: a block of 128 features (DSG's softmax
   default) summed over the row in one pass, each row of omega read as one
   contiguous kilobyte. */
__attribute__((target("avx512f")))
static void ks_feature_sums_avx512(const double *omega, ptrdiff_t count, const double *v,
                                   const int32_t *ix, ptrdiff_t m, double *out)
{
    ptrdiff_t f0 = 0, t, q;
    for (; f0 + 128 <= count; f0 += 128) {
        __m512d a[16];
        for (q = 0; q < 16; q++)
            a[q] = _mm512_setzero_pd();
        for (t = 0; t < m; t++) {
            const double *w;
            __m512d x;
            if (v[t] == 0.0)
                continue;
            w = omega + (ix != NULL ? (ptrdiff_t)ix[t] : t) * count + f0;
            x = _mm512_set1_pd(v[t]);
            for (q = 0; q < 16; q++) {
                __m512d p = _mm512_mul_pd(x, _mm512_loadu_pd(w + 8 * q));
                KS_UNFUSED(p);
                a[q] = _mm512_add_pd(a[q], p);
            }
        }
        for (q = 0; q < 16; q++)
            _mm512_storeu_pd(out + f0 + 8 * q, a[q]);
    }
    /* the rest as the AVX2 path sums it (eight ymm registers were faster
       than four zmm ones for Adult's blocks of 32) */
    if (f0 < count)
        ks_feature_sums_avx2(omega + f0, count, count - f0, v, ix, m, out + f0);
}
#endif

KS_FEATURE_SUMS_DISPATCH(double, )

/* Single precision (DSG's --precision single, doc/dsg.md "Single precision"):
 * omega held as floats (each direction rounded once), each value of the row
 * rounded to a float, and every product and sum a float operation, never
 * fused, in the same increasing column order; the sums are then widened to
 * double (exactly) for the cosine.  Twice the values a register and half the
 * bytes of omega to read: about twice the multiply-adds a second.  Every
 * path gives the scalar path's bits. */
KS_FEATURE_SUMS_SCALAR(float, _f32)

#ifdef KS_X86
__attribute__((target("avx2")))
static inline void ks_widen8(__m256 a, double *out)
{
    _mm256_storeu_pd(out, _mm256_cvtps_pd(_mm256_castps256_ps128(a)));
    _mm256_storeu_pd(out + 4, _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1)));
}

/* Eight registers of eight floats (64 features), then four (32), then one,
   then one feature at a time; row j of omega at omega + j * ld. */
__attribute__((target("avx2")))
static void ks_feature_sums_f32_avx2(const float *omega, ptrdiff_t ld, ptrdiff_t count,
                                     const double *v, const int32_t *ix, ptrdiff_t m,
                                     double *out)
{
    ptrdiff_t f0 = 0, t, q;
    for (; f0 + 64 <= count; f0 += 64) {
        __m256 a[8];
        for (q = 0; q < 8; q++)
            a[q] = _mm256_setzero_ps();
        for (t = 0; t < m; t++) {
            const float *w;
            __m256 x;
            if (v[t] == 0.0)
                continue;
            w = omega + (ix != NULL ? (ptrdiff_t)ix[t] : t) * ld + f0;
            x = _mm256_set1_ps((float)v[t]);
            for (q = 0; q < 8; q++)
                a[q] = _mm256_add_ps(a[q], _mm256_mul_ps(x, _mm256_loadu_ps(w + 8 * q)));
        }
        for (q = 0; q < 8; q++)
            ks_widen8(a[q], out + f0 + 8 * q);
    }
    for (; f0 + 32 <= count; f0 += 32) {     /* Adult's blocks of 32 */
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (t = 0; t < m; t++) {
            const float *w;
            __m256 x;
            if (v[t] == 0.0)
                continue;
            w = omega + (ix != NULL ? (ptrdiff_t)ix[t] : t) * ld + f0;
            x = _mm256_set1_ps((float)v[t]);
            a0 = _mm256_add_ps(a0, _mm256_mul_ps(x, _mm256_loadu_ps(w)));
            a1 = _mm256_add_ps(a1, _mm256_mul_ps(x, _mm256_loadu_ps(w + 8)));
            a2 = _mm256_add_ps(a2, _mm256_mul_ps(x, _mm256_loadu_ps(w + 16)));
            a3 = _mm256_add_ps(a3, _mm256_mul_ps(x, _mm256_loadu_ps(w + 24)));
        }
        ks_widen8(a0, out + f0);
        ks_widen8(a1, out + f0 + 8);
        ks_widen8(a2, out + f0 + 16);
        ks_widen8(a3, out + f0 + 24);
    }
    for (; f0 + 8 <= count; f0 += 8) {
        __m256 a0 = _mm256_setzero_ps();
        for (t = 0; t < m; t++) {
            if (v[t] == 0.0)
                continue;
            a0 = _mm256_add_ps(a0, _mm256_mul_ps(
                _mm256_set1_ps((float)v[t]),
                _mm256_loadu_ps(omega + (ix != NULL ? (ptrdiff_t)ix[t] : t) * ld + f0)));
        }
        ks_widen8(a0, out + f0);
    }
    for (; f0 < count; f0++) {
        float s = 0.0f;
        for (t = 0; t < m; t++)
            if (v[t] != 0.0) {
                float p = (float)v[t] * omega[(ix != NULL ? (ptrdiff_t)ix[t] : t) * ld + f0];
                s = s + p;
            }
        out[f0] = (double)s;
    }
}

/* Eight registers of sixteen floats: a block of 128 features a pass (the
   rest as the AVX2 path sums it). */
__attribute__((target("avx512f")))
static void ks_feature_sums_f32_avx512(const float *omega, ptrdiff_t count, const double *v,
                                       const int32_t *ix, ptrdiff_t m, double *out)
{
    ptrdiff_t f0 = 0, t, q;
    for (; f0 + 128 <= count; f0 += 128) {
        __m512 a[8];
        for (q = 0; q < 8; q++)
            a[q] = _mm512_setzero_ps();
        for (t = 0; t < m; t++) {
            const float *w;
            __m512 x;
            if (v[t] == 0.0)
                continue;
            w = omega + (ix != NULL ? (ptrdiff_t)ix[t] : t) * count + f0;
            x = _mm512_set1_ps((float)v[t]);
            for (q = 0; q < 8; q++) {
                __m512 p = _mm512_mul_ps(x, _mm512_loadu_ps(w + 16 * q));
                KS_UNFUSED(p);
                a[q] = _mm512_add_ps(a[q], p);
            }
        }
        for (q = 0; q < 8; q++) {
            __m256 lo = _mm512_castps512_ps256(a[q]);
            __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a[q]), 1));
            _mm512_storeu_pd(out + f0 + 16 * q, _mm512_cvtps_pd(lo));
            _mm512_storeu_pd(out + f0 + 16 * q + 8, _mm512_cvtps_pd(hi));
        }
    }
    if (f0 < count)
        ks_feature_sums_f32_avx2(omega + f0, count, count - f0, v, ix, m, out + f0);
}
#endif

KS_FEATURE_SUMS_DISPATCH(float, _f32)

/* omega[0 .. n) rounded to floats, written over the start of the same
   memory (a float's slot i never lies beyond double i, and each group is
   read in full before it is written). */
static void ks_round_to_floats(double *omega, ptrdiff_t n)
{
    float group[64];
    ptrdiff_t i0, i;
    for (i0 = 0; i0 < n; i0 += 64) {
        ptrdiff_t k = n - i0 < 64 ? n - i0 : 64;
        for (i = 0; i < k; i++)
            group[i] = (float)omega[i0 + i];
        memcpy((char *)omega + i0 * sizeof(float), group, k * sizeof(float));
    }
}

#endif
