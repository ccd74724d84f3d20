/* Squared distances ||q - y||^2 between dense rows, as direct differences
 * (exact where ||q||^2 + ||y||^2 - 2<q, y> cancels): the RBF kernel's base on
 * dense data (_kernel_values.pxd's _pair_base and _kernel_block).
 *
 * The value is defined by ks_sqdist, the reference: eight chains, chain c
 * summing (q_k - y_k)^2 for k = c mod 8 in k order, the tail past the last
 * multiple of 8 on chain 0, combined as ((s0 + s1) + (s2 + s3)) + ((s4 + s5)
 * + (s6 + s7)).  Multiplies and adds only, never fused.
 *
 * Why a vector path: with a sub-problem's rows copied together (KernelRows'
 * position-ordered copy) a dense value is no longer waiting on memory but
 * on the adds: each chain's add waits for the one before it (3-4 cycles),
 * and eight chains cannot become more without changing the bits.  So the
 * AVX2 path computes two rows at once against the same q (ks_sqdist_rows
 * says which two): four chain registers (chains 0-3 and 4-7 of each row)
 * keep the adders busy, and each row's chains see the same operations in
 * the same order as ks_sqdist's, hence the same bits (tests/test_dense_rows.py
 * compares the two paths, and with numpy).
 * Taken when the CPU has AVX2 (chosen at run time; one build runs on any
 * x86-64).
 */
#ifndef KS_SQDIST_H
#define KS_SQDIST_H

#include <stddef.h>
#include "_simd.h"

static inline double ks_sqdist(const double *a, const double *b, ptrdiff_t n)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    double s4 = 0.0, s5 = 0.0, s6 = 0.0, s7 = 0.0;
    double d0, d1, d2, d3, d4, d5, d6, d7;
    ptrdiff_t k = 0;
    for (; k + 8 <= n; k += 8) {
        d0 = a[k] - b[k];
        d1 = a[k + 1] - b[k + 1];
        d2 = a[k + 2] - b[k + 2];
        d3 = a[k + 3] - b[k + 3];
        d4 = a[k + 4] - b[k + 4];
        d5 = a[k + 5] - b[k + 5];
        d6 = a[k + 6] - b[k + 6];
        d7 = a[k + 7] - b[k + 7];
        s0 += d0 * d0;
        s1 += d1 * d1;
        s2 += d2 * d2;
        s3 += d3 * d3;
        s4 += d4 * d4;
        s5 += d5 * d5;
        s6 += d6 * d6;
        s7 += d7 * d7;
    }
    for (; k < n; k++) {
        d0 = a[k] - b[k];
        s0 += d0 * d0;
    }
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
}

#ifdef KS_X86
/* One row's result from its two chain registers (chains 0-3, 4-7) and the
   tail k0 .. n - 1 on chain 0, combined as ks_sqdist combines. */
__attribute__((target("avx2")))
static inline double ks_sqdist_close(__m256d lo, __m256d hi, const double *a,
                                     const double *b, ptrdiff_t k0, ptrdiff_t n)
{
    double s[8], d;
    ptrdiff_t k;
    _mm256_storeu_pd(s, lo);
    _mm256_storeu_pd(s + 4, hi);
    for (k = k0; k < n; k++) {
        d = a[k] - b[k];
        s[0] += d * d;
    }
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

/* ks_sqdist(a, b0, n) and ks_sqdist(a, b1, n), to the bit. */
__attribute__((target("avx2")))
static inline void ks_sqdist2_avx2(const double *a, const double *b0, const double *b1,
                                   ptrdiff_t n, double *out0, double *out1)
{
    __m256d l0 = _mm256_setzero_pd(), h0 = _mm256_setzero_pd();
    __m256d l1 = _mm256_setzero_pd(), h1 = _mm256_setzero_pd();
    __m256d al, ah, d;
    ptrdiff_t k = 0;
    for (; k + 8 <= n; k += 8) {
        al = _mm256_loadu_pd(a + k);
        ah = _mm256_loadu_pd(a + k + 4);
        d = _mm256_sub_pd(al, _mm256_loadu_pd(b0 + k));
        l0 = _mm256_add_pd(l0, _mm256_mul_pd(d, d));
        d = _mm256_sub_pd(ah, _mm256_loadu_pd(b0 + k + 4));
        h0 = _mm256_add_pd(h0, _mm256_mul_pd(d, d));
        d = _mm256_sub_pd(al, _mm256_loadu_pd(b1 + k));
        l1 = _mm256_add_pd(l1, _mm256_mul_pd(d, d));
        d = _mm256_sub_pd(ah, _mm256_loadu_pd(b1 + k + 4));
        h1 = _mm256_add_pd(h1, _mm256_mul_pd(d, d));
    }
    *out0 = ks_sqdist_close(l0, h0, a, b0, k, n);
    *out1 = ks_sqdist_close(l1, h1, a, b1, k, n);
}
#endif

/* out[k - start] = ks_sqdist(q, Y + j * d, d) for start <= k < end, with
   j = rows[k] (rows NULL: j = k): Y's rows are d doubles each.  The AVX2
   path pairs the block's first half with its second half (k with k + h):
   pairs of neighbouring rows, k with k + 1, read memory about twice as
   slowly as one row at a time (measured on 4000 rows of 784 values, one
   thread: 200-320 ns a value against 145 for ks_sqdist alone and 100-125
   for halves; reading two interleaved streams 6 KB apart seems to defeat
   the prefetchers). */
static inline void ks_sqdist_rows(const double *q, const double *Y, ptrdiff_t d,
                                  const ptrdiff_t *rows, ptrdiff_t start, ptrdiff_t end,
                                  double *out)
{
    ptrdiff_t k = start, j;
#ifdef KS_X86
    if (ks_simd(KS_AVX2)) {
        ptrdiff_t h = (end - start) / 2, j2;
        for (; k < start + h; k++) {
            j = rows != NULL ? rows[k] : k;
            j2 = rows != NULL ? rows[k + h] : k + h;
            ks_sqdist2_avx2(q, Y + j * d, Y + j2 * d, d, out + (k - start),
                            out + (k + h - start));
        }
        k = start + 2 * h;      /* the odd one out, if any */
    }
#endif
    for (; k < end; k++) {
        j = rows != NULL ? rows[k] : k;
        out[k - start] = ks_sqdist(q, Y + j * d, d);
    }
}

#endif
