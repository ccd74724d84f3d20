/* Kernel rows on binary data (every stored value 0 or 1: a9a, w8a, mushrooms,
 * any one-hot encoding), rows held as bit sets of `words` 64-bit words.
 *
 * For 0/1 vectors the kernels' inputs are integers: <x, y> = |x AND y| and
 * ||x - y||^2 = ||x - y||_1 = |x XOR y|, so a kernel value is a table lookup
 * at a popcount: table[b] is the value the general path gives for the base b
 * (_kernel_values.pxd's _finish), and the general path computes b exactly
 * (sums of products of 0s and 1s), so both give the same bits.  A value costs
 * `words` popcounts instead of a gather per nonzero and an exp.
 *
 * The POPCNT instruction is taken when the CPU has it (chosen at run time, so
 * one build runs on any x86-64); the counts are integers, equal either way.
 */
#ifndef KS_BITS_H
#define KS_BITS_H

#include <stdint.h>
#include <stddef.h>
#include "_simd.h"

#define KS_BITS_FILL_BODY(COUNT)                                              \
    ptrdiff_t k, w;                                                           \
    const uint64_t *r = rows + start * words;                                 \
    if (words == 1) {                                                         \
        const uint64_t a = q[0];                                              \
        for (k = start; k < end; k++, r += 1)                                 \
            out[k] = table[COUNT(hamming ? (a ^ r[0]) : (a & r[0]))];        \
    } else if (words == 2) {                                                  \
        const uint64_t a = q[0], b = q[1];                                    \
        for (k = start; k < end; k++, r += 2)                                 \
            out[k] = table[hamming                                            \
                ? COUNT(a ^ r[0]) + COUNT(b ^ r[1])                           \
                : COUNT(a & r[0]) + COUNT(b & r[1])];                         \
    } else {                                                                  \
        for (k = start; k < end; k++, r += words) {                           \
            int c = 0;                                                        \
            if (hamming)                                                      \
                for (w = 0; w < words; w++)                                   \
                    c += COUNT(q[w] ^ r[w]);                                  \
            else                                                              \
                for (w = 0; w < words; w++)                                   \
                    c += COUNT(q[w] & r[w]);                                  \
            out[k] = table[c];                                                \
        }                                                                     \
    }

#define KS_POPCOUNT(x) __builtin_popcountll(x)

static void ks_bits_fill_scalar(const uint64_t *q, const uint64_t *rows,
                                  ptrdiff_t words, ptrdiff_t start, ptrdiff_t end,
                                  int hamming, const float *table, float *out)
{
    KS_BITS_FILL_BODY(KS_POPCOUNT)
}

#ifdef KS_X86
__attribute__((target("popcnt")))
static void ks_bits_fill_popcnt(const uint64_t *q, const uint64_t *rows,
                                ptrdiff_t words, ptrdiff_t start, ptrdiff_t end,
                                int hamming, const float *table, float *out)
{
    KS_BITS_FILL_BODY(KS_POPCOUNT)
}
#endif

/* out[k] = table[count(q op rows[k])] for start <= k < end, op XOR when
   `hamming` (rbf, laplacian) else AND (linear, polynomial, sigmoid); rows are
   `words` words each, row k at rows + k * words. */
static inline void ks_bits_fill(const uint64_t *q, const uint64_t *rows,
                                ptrdiff_t words, ptrdiff_t start, ptrdiff_t end,
                                int hamming, const float *table, float *out)
{
#ifdef KS_X86
    if (ks_simd(KS_POPCNT)) {
        ks_bits_fill_popcnt(q, rows, words, start, end, hamming, table, out);
        return;
    }
#endif
    ks_bits_fill_scalar(q, rows, words, start, end, hamming, table, out);
}

/* Prediction's tile (_decision_sums.pyx, decision_sums): for eight rows x (x8[t *
   words ...]) and ns support vectors y (y[s * words ...]), tile[s * 8 + t] =
   table[|x_t XOR y_s|], the RBF value at the squared distance of 0/1 rows. */
#define KS_BITS_TILE_BODY(COUNT)                                              \
    ptrdiff_t s, t, w;                                                        \
    for (s = 0; s < ns; s++) {                                                \
        const uint64_t *ys = y + s * words;                                   \
        for (t = 0; t < 8; t++) {                                             \
            const uint64_t *xt = x8 + t * words;                              \
            int c = 0;                                                        \
            for (w = 0; w < words; w++)                                       \
                c += COUNT(xt[w] ^ ys[w]);                                    \
            tile[s * 8 + t] = table[c];                                       \
        }                                                                     \
    }

static void ks_bits_tile8_scalar(const uint64_t *x8, const uint64_t *y, ptrdiff_t words,
                                   ptrdiff_t ns, const double *table, double *tile)
{
    KS_BITS_TILE_BODY(KS_POPCOUNT)
}

#ifdef KS_X86
__attribute__((target("popcnt")))
static void ks_bits_tile8_popcnt(const uint64_t *x8, const uint64_t *y, ptrdiff_t words,
                                 ptrdiff_t ns, const double *table, double *tile)
{
    KS_BITS_TILE_BODY(KS_POPCOUNT)
}
#endif

static inline void ks_bits_tile8(const uint64_t *x8, const uint64_t *y, ptrdiff_t words,
                                 ptrdiff_t ns, const double *table, double *tile)
{
#ifdef KS_X86
    if (ks_simd(KS_POPCNT)) {
        ks_bits_tile8_popcnt(x8, y, words, ns, table, tile);
        return;
    }
#endif
    ks_bits_tile8_scalar(x8, y, words, ns, table, tile);
}

#endif
