/* Sparse rows against a dense Y^T: each entry of a row x adds a scaled row
 * of Y^T to x's row of products, a loop over contiguous memory.  The kernel
 * matrix (_kernel_matrix.pyx, _axpy_rows) and prediction's decision sums
 * (_decision_sums.pyx) make their products with it, so both give the same bits.
 */
#ifndef KS_AXPY_ROWS_H
#define KS_AXPY_ROWS_H

#include <stddef.h>
#include <stdint.h>
/* o[j] += a[t] * Y^T[ix[t], j] for t = 0 .. m-1 in order, j in [j0, j1):
   four entries per pass over o, added one after the other
   (((o + a0 y0) + a1 y1) + a2 y2) + a3 y3, the order of four passes, so
   o is loaded and stored once per four entries.  A multiply then an add,
   never fused: the AVX2 clone (chosen at load time where the CPU has it)
   is built without FMA and gives the bits of the baseline one. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
__attribute__((target_clones("avx2", "default")))
#endif
static void ks_axpy_rows(double *o, const double *Yt, ptrdiff_t n_y,
                         const double *a, const int32_t *ix, ptrdiff_t m,
                         ptrdiff_t j0, ptrdiff_t j1) {
    ptrdiff_t t = 0, j;
    for (; t + 4 <= m; t += 4) {
        const double a0 = a[t], a1 = a[t + 1], a2 = a[t + 2], a3 = a[t + 3];
        const double *y0 = Yt + (ptrdiff_t)ix[t] * n_y;
        const double *y1 = Yt + (ptrdiff_t)ix[t + 1] * n_y;
        const double *y2 = Yt + (ptrdiff_t)ix[t + 2] * n_y;
        const double *y3 = Yt + (ptrdiff_t)ix[t + 3] * n_y;
        for (j = j0; j < j1; j++) {
            double s = o[j] + a0 * y0[j];
            s = s + a1 * y1[j];
            s = s + a2 * y2[j];
            o[j] = s + a3 * y3[j];
        }
    }
    for (; t < m; t++) {
        const double at = a[t];
        const double *y = Yt + (ptrdiff_t)ix[t] * n_y;
        for (j = j0; j < j1; j++)
            o[j] = o[j] + at * y[j];
    }
}

#endif
