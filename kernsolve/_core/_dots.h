/* Dot products of dense rows for the kernel matrix where a value's bits must
 * not depend on the other rows computed with it (prediction in pieces, on a
 * Dask cluster): C[i * ldc + j] = sum_k A[i * d + k] * B[j * d + k].
 *
 * Why not BLAS: dgemm's result for one row of A can change with the row's
 * position in the call (OpenBLAS's AVX-512 kernels treat the edge of a block
 * differently), so predicting a row alone and among others gave different
 * last bits.  Here every value is one chain of fused multiply-adds in k
 * order, s = fma(a_k, b_k, s) from s = 0, whoever computes it: eight columns
 * at a time in AVX2 registers (4 rows x 8 columns per step) where the CPU has
 * AVX2 and FMA, one value at a time with the C library's fma() elsewhere (the
 * same bits: fma is exactly rounded; slow on a CPU without FMA hardware).
 */
#ifndef KS_DOTS_H
#define KS_DOTS_H

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include "_simd.h"

/* Columns per panel: B's rows j0..j0+7 interleaved by k (panel[k * 8 + jj]),
   so one aligned load gives eight columns' k-th entries. */
#define KS_DOTS_PANEL 8

static inline double ks_dot_fma(const double *a, const double *b, ptrdiff_t d)
{
    double s = 0.0;
    ptrdiff_t k;
    for (k = 0; k < d; k++)
        s = fma(a[k], b[k], s);
    return s;
}

static void ks_dots_scalar(const double *A, ptrdiff_t m, const double *B, ptrdiff_t n,
                          ptrdiff_t d, double *C, ptrdiff_t ldc)
{
    ptrdiff_t i, j;
    for (i = 0; i < m; i++)
        for (j = 0; j < n; j++)
            C[i * ldc + j] = ks_dot_fma(A + i * d, B + j * d, d);
}

#ifdef KS_X86
__attribute__((target("avx2,fma")))
static inline void ks_dots_store(double *c, __m256d lo, __m256d hi, ptrdiff_t nj)
{
    double lanes[KS_DOTS_PANEL];
    ptrdiff_t jj;
    _mm256_storeu_pd(lanes, lo);
    _mm256_storeu_pd(lanes + 4, hi);
    for (jj = 0; jj < nj; jj++)
        c[jj] = lanes[jj];
}

__attribute__((target("avx2,fma")))
static void ks_dots_avx2(const double *A, ptrdiff_t m, const double *B, ptrdiff_t n,
                         ptrdiff_t d, double *C, ptrdiff_t ldc, double *panel)
{
    ptrdiff_t j0, i0, k, jj, r, nj;
    for (j0 = 0; j0 < n; j0 += KS_DOTS_PANEL) {
        nj = n - j0 < KS_DOTS_PANEL ? n - j0 : KS_DOTS_PANEL;
        for (k = 0; k < d; k++)
            for (jj = 0; jj < KS_DOTS_PANEL; jj++)
                panel[k * KS_DOTS_PANEL + jj] = jj < nj ? B[(j0 + jj) * d + k] : 0.0;
        for (i0 = 0; i0 + 4 <= m; i0 += 4) {
            const double *a0 = A + i0 * d, *a1 = a0 + d, *a2 = a1 + d, *a3 = a2 + d;
            __m256d s00 = _mm256_setzero_pd(), s01 = _mm256_setzero_pd();
            __m256d s10 = _mm256_setzero_pd(), s11 = _mm256_setzero_pd();
            __m256d s20 = _mm256_setzero_pd(), s21 = _mm256_setzero_pd();
            __m256d s30 = _mm256_setzero_pd(), s31 = _mm256_setzero_pd();
            for (k = 0; k < d; k++) {
                __m256d b0 = _mm256_load_pd(panel + k * KS_DOTS_PANEL);
                __m256d b1 = _mm256_load_pd(panel + k * KS_DOTS_PANEL + 4);
                __m256d x;
                x = _mm256_broadcast_sd(a0 + k);
                s00 = _mm256_fmadd_pd(x, b0, s00);
                s01 = _mm256_fmadd_pd(x, b1, s01);
                x = _mm256_broadcast_sd(a1 + k);
                s10 = _mm256_fmadd_pd(x, b0, s10);
                s11 = _mm256_fmadd_pd(x, b1, s11);
                x = _mm256_broadcast_sd(a2 + k);
                s20 = _mm256_fmadd_pd(x, b0, s20);
                s21 = _mm256_fmadd_pd(x, b1, s21);
                x = _mm256_broadcast_sd(a3 + k);
                s30 = _mm256_fmadd_pd(x, b0, s30);
                s31 = _mm256_fmadd_pd(x, b1, s31);
            }
            ks_dots_store(C + (i0 + 0) * ldc + j0, s00, s01, nj);
            ks_dots_store(C + (i0 + 1) * ldc + j0, s10, s11, nj);
            ks_dots_store(C + (i0 + 2) * ldc + j0, s20, s21, nj);
            ks_dots_store(C + (i0 + 3) * ldc + j0, s30, s31, nj);
        }
        for (r = i0; r < m; r++) {          /* the last rows, one at a time */
            const double *a = A + r * d;
            __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
            for (k = 0; k < d; k++) {
                __m256d x = _mm256_broadcast_sd(a + k);
                s0 = _mm256_fmadd_pd(x, _mm256_load_pd(panel + k * KS_DOTS_PANEL), s0);
                s1 = _mm256_fmadd_pd(x, _mm256_load_pd(panel + k * KS_DOTS_PANEL + 4), s1);
            }
            ks_dots_store(C + r * ldc + j0, s0, s1, nj);
        }
    }
}
#endif

/* Eight rows of A against the n rows of B, stored B-row-major: Ct[j * 8 + t] =
   <A_t, B_j> for the rows A_t given as a panel P[k * 8 + t] (the eight rows
   interleaved by k; kernsolve's fused decision sums, which add the products of
   one support vector for eight test rows at once).  Every value is the chain
   of ks_dots, s = fma(a_k, b_k, s) in k order from s = 0: the same bits. */
static void ks_dots_rows8_scalar(const double *P, const double *B, ptrdiff_t n, ptrdiff_t d,
                                double *Ct)
{
    ptrdiff_t j, t, k;
    for (j = 0; j < n; j++)
        for (t = 0; t < 8; t++) {
            double s = 0.0;
            for (k = 0; k < d; k++)
                s = fma(P[k * 8 + t], B[j * d + k], s);
            Ct[j * 8 + t] = s;
        }
}

#ifdef KS_X86
__attribute__((target("avx2,fma")))
static void ks_dots_rows8_avx2(const double *P, const double *B, ptrdiff_t n, ptrdiff_t d,
                               double *Ct)
{
    ptrdiff_t j = 0, k;
    for (; j + 4 <= n; j += 4) {        /* four rows of B: eight chains in flight */
        const double *b0 = B + j * d, *b1 = b0 + d, *b2 = b1 + d, *b3 = b2 + d;
        __m256d s00 = _mm256_setzero_pd(), s01 = _mm256_setzero_pd();
        __m256d s10 = _mm256_setzero_pd(), s11 = _mm256_setzero_pd();
        __m256d s20 = _mm256_setzero_pd(), s21 = _mm256_setzero_pd();
        __m256d s30 = _mm256_setzero_pd(), s31 = _mm256_setzero_pd();
        for (k = 0; k < d; k++) {
            __m256d p0 = _mm256_loadu_pd(P + k * 8), p1 = _mm256_loadu_pd(P + k * 8 + 4);
            __m256d y;
            y = _mm256_broadcast_sd(b0 + k);
            s00 = _mm256_fmadd_pd(p0, y, s00);
            s01 = _mm256_fmadd_pd(p1, y, s01);
            y = _mm256_broadcast_sd(b1 + k);
            s10 = _mm256_fmadd_pd(p0, y, s10);
            s11 = _mm256_fmadd_pd(p1, y, s11);
            y = _mm256_broadcast_sd(b2 + k);
            s20 = _mm256_fmadd_pd(p0, y, s20);
            s21 = _mm256_fmadd_pd(p1, y, s21);
            y = _mm256_broadcast_sd(b3 + k);
            s30 = _mm256_fmadd_pd(p0, y, s30);
            s31 = _mm256_fmadd_pd(p1, y, s31);
        }
        _mm256_storeu_pd(Ct + j * 8, s00);
        _mm256_storeu_pd(Ct + j * 8 + 4, s01);
        _mm256_storeu_pd(Ct + j * 8 + 8, s10);
        _mm256_storeu_pd(Ct + j * 8 + 12, s11);
        _mm256_storeu_pd(Ct + j * 8 + 16, s20);
        _mm256_storeu_pd(Ct + j * 8 + 20, s21);
        _mm256_storeu_pd(Ct + j * 8 + 24, s30);
        _mm256_storeu_pd(Ct + j * 8 + 28, s31);
    }
    for (; j < n; j++) {                /* the last rows of B, one at a time */
        const double *b = B + j * d;
        __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
        for (k = 0; k < d; k++) {
            __m256d y = _mm256_broadcast_sd(b + k);
            s0 = _mm256_fmadd_pd(_mm256_loadu_pd(P + k * 8), y, s0);
            s1 = _mm256_fmadd_pd(_mm256_loadu_pd(P + k * 8 + 4), y, s1);
        }
        _mm256_storeu_pd(Ct + j * 8, s0);
        _mm256_storeu_pd(Ct + j * 8 + 4, s1);
    }
}
#endif

/* The products of eight panelled rows against B (see ks_dots_rows8_scalar). */
static inline void ks_dots_rows8(const double *P, const double *B, ptrdiff_t n, ptrdiff_t d,
                                 double *Ct)
{
#ifdef KS_X86
    if (ks_simd(KS_AVX2 | KS_FMA)) {
        ks_dots_rows8_avx2(P, B, n, d, Ct);
        return;
    }
#endif
    ks_dots_rows8_scalar(P, B, n, d, Ct);
}

/* Scratch for ks_dots: KS_DOTS_PANEL * d doubles aligned to 32 bytes (free()
   it); NULL when out of memory. */
static inline double *ks_dots_panel(ptrdiff_t d)
{
    void *p = NULL;
    if (posix_memalign(&p, 32, (size_t)KS_DOTS_PANEL * (size_t)(d > 0 ? d : 1) * sizeof(double)))
        return NULL;
    return (double *)p;
}

/* The products, with panel from ks_dots_panel(d). */
static inline void ks_dots(const double *A, ptrdiff_t m, const double *B, ptrdiff_t n,
                           ptrdiff_t d, double *C, ptrdiff_t ldc, double *panel)
{
#ifdef KS_X86
    if (ks_simd(KS_AVX2 | KS_FMA)) {
        ks_dots_avx2(A, m, B, n, d, C, ldc, panel);
        return;
    }
#endif
    ks_dots_scalar(A, m, B, n, d, C, ldc);
}

#endif
