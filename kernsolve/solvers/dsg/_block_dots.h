/* One block's part of DSG's predictions for n rows (_block_sums.pxd, add_group
 * and add_block): out[r, k] += sum_f z[r, f] coef[f, k], with z the rows'
 * features of the block (n x F), coef its coefficients (F x K) and out the
 * rows' outputs (n x K).  Every sum starts from 0, adds its F products in f
 * order, each a multiply then an add (never fused), and is then added to
 * out[r, k]: the same bits on every path (tests/test_dsg.py compares them).
 * The vector paths run several outputs in a register and several rows at
 * once (eight with AVX-512, four with AVX2), so that one load of coef serves
 * them all and their sums' adds overlap.
 */
#ifndef KS_BLOCK_DOTS_H
#define KS_BLOCK_DOTS_H

#include <stddef.h>
#include "_simd.h"

/* acc: K doubles of scratch. */
static void ks_block_dots_scalar(const double *z, ptrdiff_t n, ptrdiff_t F, ptrdiff_t K,
                               const double *coef, double *acc, double *out)
{
    ptrdiff_t r, f, k;
    for (r = 0; r < n; r++) {
        const double *zr = z + r * F;
        double *o = out + r * K;
        if (K == 1) {
            double s = 0.0;     /* in a register: acc could alias z or coef */
            for (f = 0; f < F; f++)
                s = s + zr[f] * coef[f];
            o[0] += s;
            continue;
        }
        for (k = 0; k < K; k++)
            acc[k] = 0.0;
        for (f = 0; f < F; f++) {
            double zf = zr[f];
            for (k = 0; k < K; k++)
                acc[k] = acc[k] + zf * coef[f * K + k];
        }
        for (k = 0; k < K; k++)
            o[k] += acc[k];
    }
}

#ifdef KS_X86
/* Outputs k0 .. k0+7 (the lanes of mask) of rows r .. r+ROWS-1. */
#define KS_DOTS_AVX512(ROWS)                                                        \
    {                                                                               \
        __m512d a[ROWS];                                                            \
        int i;                                                                      \
        for (i = 0; i < ROWS; i++)                                                  \
            a[i] = _mm512_setzero_pd();                                             \
        for (f = 0; f < F; f++) {                                                   \
            __m512d c = _mm512_maskz_loadu_pd(mask, coef + f * K + k0);             \
            for (i = 0; i < ROWS; i++) {                                            \
                __m512d p = _mm512_mul_pd(_mm512_set1_pd(z[(r + i) * F + f]), c);   \
                KS_UNFUSED(p);                                                      \
                a[i] = _mm512_add_pd(a[i], p);                                      \
            }                                                                       \
        }                                                                           \
        for (i = 0; i < ROWS; i++) {                                                \
            double *o = out + (r + i) * K + k0;                                     \
            _mm512_mask_storeu_pd(o, mask,                                          \
                _mm512_add_pd(_mm512_maskz_loadu_pd(mask, o), a[i]));              \
        }                                                                           \
    }

__attribute__((target("avx512f")))
static void ks_block_dots_avx512(const double *z, ptrdiff_t n, ptrdiff_t F, ptrdiff_t K,
                                 const double *coef, double *out)
{
    ptrdiff_t k0, r, f;
    for (k0 = 0; k0 < K; k0 += 8) {
        __mmask8 mask = (__mmask8)(K - k0 >= 8 ? 0xFF : (1u << (K - k0)) - 1u);
        for (r = 0; r + 8 <= n; r += 8)
            KS_DOTS_AVX512(8)
        for (; r < n; r++)
            KS_DOTS_AVX512(1)
    }
}
#undef KS_DOTS_AVX512

/* The same with four outputs a register (masks as integer lanes). */
#define KS_DOTS_AVX2(ROWS)                                                          \
    {                                                                               \
        __m256d a[ROWS];                                                            \
        int i;                                                                      \
        for (i = 0; i < ROWS; i++)                                                  \
            a[i] = _mm256_setzero_pd();                                             \
        for (f = 0; f < F; f++) {                                                   \
            __m256d c = _mm256_maskload_pd(coef + f * K + k0, mask);                \
            for (i = 0; i < ROWS; i++)                                              \
                a[i] = _mm256_add_pd(a[i], _mm256_mul_pd(                           \
                    _mm256_set1_pd(z[(r + i) * F + f]), c));                        \
        }                                                                           \
        for (i = 0; i < ROWS; i++) {                                                \
            double *o = out + (r + i) * K + k0;                                     \
            _mm256_maskstore_pd(o, mask,                                            \
                _mm256_add_pd(_mm256_maskload_pd(o, mask), a[i]));                  \
        }                                                                           \
    }

__attribute__((target("avx2")))
static void ks_block_dots_avx2(const double *z, ptrdiff_t n, ptrdiff_t F, ptrdiff_t K,
                               const double *coef, double *out)
{
    ptrdiff_t k0, r, f;
    for (k0 = 0; k0 < K; k0 += 4) {
        ptrdiff_t left = K - k0;
        __m256i mask = _mm256_set_epi64x(left > 3 ? -1 : 0, left > 2 ? -1 : 0,
                                         left > 1 ? -1 : 0, -1);
        for (r = 0; r + 4 <= n; r += 4)
            KS_DOTS_AVX2(4)
        for (; r < n; r++)
            KS_DOTS_AVX2(1)
    }
}
#undef KS_DOTS_AVX2
#endif

/* The path for this CPU: the vector ones for several outputs (one output's
   sums are one chain of adds, as fast in a scalar register). */
static inline void ks_block_dots(const double *z, ptrdiff_t n, ptrdiff_t F, ptrdiff_t K,
                                 const double *coef, double *acc, double *out)
{
#ifdef KS_X86
    if (K > 1 && ks_simd(KS_AVX512 | KS_AVX2)) {
        ks_block_dots_avx512(z, n, F, K, coef, out);
        return;
    }
    if (K > 1 && ks_simd(KS_AVX2)) {
        ks_block_dots_avx2(z, n, F, K, coef, out);
        return;
    }
#endif
    ks_block_dots_scalar(z, n, F, K, coef, acc, out);
}

#endif
