/* Both products of a conjugate-gradient pass over one block of K(X, centres)
 * kept in float16 (--precision half), in one read of each row:
 *
 *     t[r, k]    = sum_j K[r, j] u[k, j]  (+ v[r, k])     t = K u + v
 *     out[k, j] += sum_r K[r, j] t[r, k]                  out += (K^T t)^T
 *
 * The rows go through in groups of HP_ROWS: the group's t, then its share of
 * out, so the group is still in cache for the second product.  Casting the
 * block to float32 and calling sgemm took 2 CPU-s a pass at p = 15000, c = 10,
 * five times the arithmetic: BLAS is slow at 10 columns, and the cast writes
 * and reads the float32 copy.
 *
 * The sums are defined lane by lane, so the vector path (AVX2, FMA, F16C) and
 * the scalar path give the same bits: t's dot product keeps 8 partial
 * sums (lane l takes the j = l mod 8 below the last multiple of 8, each a
 * fused multiply-add), adds them as ((0+1)+(2+3))+((4+5)+(6+7)), then the
 * tail's terms in order (fused), then v; out's elements add the rows' terms in
 * row order, each fused.  float16 -> float32 is exact.
 */
#ifndef KS_HALF_PRODUCTS_H
#define KS_HALF_PRODUCTS_H

#include <math.h>
#include <stdint.h>
#include <stddef.h>
#include "_simd.h"

#define HP_ROWS 8       /* rows a group: 8 x p halves (240 KB at p = 15000) stay in L2 */
#define HP_OUTPUTS 5    /* t's outputs a sweep over a pair of rows: 10 accumulators */

/* float16 bits -> float32 (exact), without F16C. */
static inline float ks_half_value(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ffu;
    union { uint32_t u; float f; } v;
    if (e == 0x1f)
        v.u = sign | 0x7f800000u | (m << 13);
    else if (e != 0)
        v.u = sign | ((e + 112u) << 23) | (m << 13);
    else {
        v.f = (float)m * 5.9604644775390625e-08f;     /* m 2^-24: exact */
        v.u |= sign;
    }
    return v.f;
}

static inline float ks_hp_lanes(const float* s)
{
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

static void ks_half_products_scalar(const uint16_t* K, ptrdiff_t rows, ptrdiff_t p, const float* u,
                           ptrdiff_t c, const float* v, float* out, float* t)
{
    ptrdiff_t p8 = p - p % 8;
    for (ptrdiff_t g = 0; g < rows; g += HP_ROWS) {
        ptrdiff_t g1 = g + HP_ROWS < rows ? g + HP_ROWS : rows;
        for (ptrdiff_t r = g; r < g1; r++) {
            const uint16_t* Kr = K + r * p;
            for (ptrdiff_t k = 0; k < c; k++) {
                if (u == NULL) {                 /* t = v, copied (-0.0 stays) */
                    t[r * c + k] = v[r * c + k];
                    continue;
                }
                const float* uk = u + k * p;
                float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
                for (ptrdiff_t j = 0; j < p8; j++)
                    lane[j % 8] = fmaf(ks_half_value(Kr[j]), uk[j], lane[j % 8]);
                float s = ks_hp_lanes(lane);
                for (ptrdiff_t j = p8; j < p; j++)
                    s = fmaf(ks_half_value(Kr[j]), uk[j], s);
                t[r * c + k] = v != NULL ? s + v[r * c + k] : s;
            }
        }
        for (ptrdiff_t r = g; r < g1; r++) {
            const uint16_t* Kr = K + r * p;
            for (ptrdiff_t k = 0; k < c; k++) {
                float tk = t[r * c + k];
                float* ok = out + k * p;
                for (ptrdiff_t j = 0; j < p; j++)
                    ok[j] = fmaf(ks_half_value(Kr[j]), tk, ok[j]);
            }
        }
    }
}

#ifdef KS_X86
#define KS_HP_LOAD(ptr) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(ptr)))

/* t for rows r0 (and r0 + 1 when two), outputs k0 .. k0 + nk - 1 (nk <= HP_OUTPUTS). */
__attribute__((target("avx2,fma,f16c")))
static void ks_hp_dots(const uint16_t* K, ptrdiff_t r0, int two, ptrdiff_t p, const float* u,
                       ptrdiff_t c, ptrdiff_t k0, int nk, const float* v, float* t)
{
    __m256 a[2][HP_OUTPUTS];
    ptrdiff_t p8 = p - p % 8;
    const uint16_t* K0 = K + r0 * p;
    const uint16_t* K1 = two ? K0 + p : K0;
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < HP_OUTPUTS; k++)
            a[i][k] = _mm256_setzero_ps();
    for (ptrdiff_t j = 0; j < p8; j += 8) {
        __m256 x0 = KS_HP_LOAD(K0 + j), x1 = KS_HP_LOAD(K1 + j);
        for (int k = 0; k < nk; k++) {       /* nk is small: the compiler unrolls */
            __m256 w = _mm256_loadu_ps(u + (k0 + k) * p + j);
            a[0][k] = _mm256_fmadd_ps(x0, w, a[0][k]);
            a[1][k] = _mm256_fmadd_ps(x1, w, a[1][k]);
        }
    }
    for (int i = 0; i < 1 + two; i++) {
        const uint16_t* Kr = i ? K1 : K0;
        ptrdiff_t r = r0 + i;
        for (int k = 0; k < nk; k++) {
            float lane[8];
            _mm256_storeu_ps(lane, a[i][k]);
            float s = ks_hp_lanes(lane);
            const float* uk = u + (k0 + k) * p;
            for (ptrdiff_t j = p8; j < p; j++)
                s = fmaf(_cvtsh_ss(Kr[j]), uk[j], s);
            t[r * c + k0 + k] = v != NULL ? s + v[r * c + k0 + k] : s;
        }
    }
}

__attribute__((target("avx2,fma,f16c")))
static void ks_half_products_avx2(const uint16_t* K, ptrdiff_t rows, ptrdiff_t p, const float* u,
                       ptrdiff_t c, const float* v, float* out, float* t)
{
    ptrdiff_t p8 = p - p % 8;
    for (ptrdiff_t g = 0; g < rows; g += HP_ROWS) {
        ptrdiff_t g1 = g + HP_ROWS < rows ? g + HP_ROWS : rows;
        for (ptrdiff_t r = g; r < g1; r += 2) {
            int two = r + 1 < g1;
            if (u == NULL) {
                for (ptrdiff_t i = r; i < r + 1 + two; i++)
                    for (ptrdiff_t k = 0; k < c; k++)
                        t[i * c + k] = v[i * c + k];
                continue;
            }
            for (ptrdiff_t k0 = 0; k0 < c; k0 += HP_OUTPUTS)
                ks_hp_dots(K, r, two, p, u, c, k0,
                           (int)(c - k0 < HP_OUTPUTS ? c - k0 : HP_OUTPUTS), v, t);
        }
        /* out: four rows a sweep (each element takes them in row order) */
        ptrdiff_t r = g;
        for (; r + 4 <= g1; r += 4) {
            const uint16_t* Kr = K + r * p;
            for (ptrdiff_t j = 0; j < p8; j += 8) {
                __m256 x0 = KS_HP_LOAD(Kr + j), x1 = KS_HP_LOAD(Kr + p + j);
                __m256 x2 = KS_HP_LOAD(Kr + 2 * p + j), x3 = KS_HP_LOAD(Kr + 3 * p + j);
                for (ptrdiff_t k = 0; k < c; k++) {
                    float* o = out + k * p + j;
                    __m256 s = _mm256_loadu_ps(o);
                    s = _mm256_fmadd_ps(x0, _mm256_broadcast_ss(t + r * c + k), s);
                    s = _mm256_fmadd_ps(x1, _mm256_broadcast_ss(t + (r + 1) * c + k), s);
                    s = _mm256_fmadd_ps(x2, _mm256_broadcast_ss(t + (r + 2) * c + k), s);
                    s = _mm256_fmadd_ps(x3, _mm256_broadcast_ss(t + (r + 3) * c + k), s);
                    _mm256_storeu_ps(o, s);
                }
            }
            for (ptrdiff_t j = p8; j < p; j++)
                for (ptrdiff_t k = 0; k < c; k++) {
                    float s = out[k * p + j];
                    for (ptrdiff_t i = r; i < r + 4; i++)
                        s = fmaf(_cvtsh_ss(K[i * p + j]), t[i * c + k], s);
                    out[k * p + j] = s;
                }
        }
        for (; r < g1; r++) {
            const uint16_t* Kr = K + r * p;
            for (ptrdiff_t j = 0; j < p8; j += 8) {
                __m256 x0 = KS_HP_LOAD(Kr + j);
                for (ptrdiff_t k = 0; k < c; k++) {
                    float* o = out + k * p + j;
                    _mm256_storeu_ps(o, _mm256_fmadd_ps(
                        x0, _mm256_broadcast_ss(t + r * c + k), _mm256_loadu_ps(o)));
                }
            }
            for (ptrdiff_t j = p8; j < p; j++)
                for (ptrdiff_t k = 0; k < c; k++)
                    out[k * p + j] = fmaf(_cvtsh_ss(Kr[j]), t[r * c + k], out[k * p + j]);
        }
    }
}
#undef KS_HP_LOAD
#endif

/* K: rows x p float16 bits; u: c x p (NULL: t = v); v: rows x c, or NULL (u given);
   out: c x p, added to; t: rows x c, written. */
static void ks_half_products(const uint16_t* K, ptrdiff_t rows, ptrdiff_t p, const float* u,
                             ptrdiff_t c, const float* v, float* out, float* t)
{
#ifdef KS_X86
    if (ks_simd(KS_AVX2 | KS_FMA | KS_F16C)) {
        ks_half_products_avx2(K, rows, p, u, c, v, out, t);
        return;
    }
#endif
    ks_half_products_scalar(K, rows, p, u, c, v, out, t);
}

#endif
