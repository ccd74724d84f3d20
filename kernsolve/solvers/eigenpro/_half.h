/* float32 -> float16 of whole arrays with F16C, 8 values an instruction, for
 * K(X, centres) stored in float16 (--precision half): numpy's cast takes
 * 4.4 ns a value here, more than the products it feeds.  It rounds to nearest
 * even, as numpy's cast does, so the bits are numpy's
 * (tests/test_eigenpro_subsampled.py compares them).  Without F16C the
 * function returns 0 and the caller casts with numpy.  The way back, float16
 * -> float32, is made inside the products (_half_products.h).
 */
#ifndef KS_HALF_H
#define KS_HALF_H

#include <stdint.h>
#include <stddef.h>
#include "_simd.h"

#ifdef KS_X86
__attribute__((target("avx,f16c")))
static void ks_float_to_half_f16c(const float* src, uint16_t* dst, ptrdiff_t n)
{
    ptrdiff_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i*)(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++)
        dst[i] = _cvtss_sh(src[i], _MM_FROUND_TO_NEAREST_INT);
}
#endif

/* 1 when converted, 0 when the CPU has no F16C (nothing written). */
static inline int ks_float_to_half(const float* src, uint16_t* dst, ptrdiff_t n)
{
#ifdef KS_X86
    if (ks_simd(KS_F16C)) {
        ks_float_to_half_f16c(src, dst, n);
        return 1;
    }
#endif
    return 0;
}

#endif
