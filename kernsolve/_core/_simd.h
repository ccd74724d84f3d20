/* The vector paths this CPU can take, for kernsolve's hand-written SIMD code:
 * asked once per module, and the paths the tests allow, one mask for the
 * whole process.
 *
 * Each vector operation ks_<op> is a dispatcher over its paths, named
 * ks_<op>_scalar (the reference, plain C), ks_<op>_avx2, ks_<op>_avx512,
 * ks_<op>_popcnt or ks_<op>_f16c, and every path gives the bits of the scalar
 * one (the tests compare them):
 *
 *   _exp.h            ks_exp_block           scalar, avx2
 *   _cos.h            ks_cos_features        scalar, avx2
 *   _dots.h           ks_dots, ks_dots_rows8 scalar, avx2 (+ FMA)
 *   _sqdist.h         ks_sqdist_rows         scalar, avx2 (two rows at once)
 *   _bits.h           ks_bits_fill, ks_bits_tile8   scalar, popcnt
 *   _feature_sums.h   ks_feature_sums (double and float)   scalar, avx2, avx512
 *   _block_dots.h     (DSG's prediction sums)
 *   solvers/eigenpro/_half.h           ks_float_to_half   f16c (else numpy's cast)
 *   solvers/eigenpro/_half_products.h  ks_half_products   scalar, avx2 (+ FMA, F16C)
 *   solvers/smo/_wss_avx2.h            the sweeps' bulk   avx2 (scalar: _smo.pxd)
 *
 * The tests' switch is kernsolve._core._simd.vector_paths: it sets the mask
 * that _core/_simd.pyx owns, and which every module that includes this
 * header points at when it loads (ks_simd_join), so one call reaches them all.
 */
#ifndef KS_SIMD_H
#define KS_SIMD_H

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <cpuid.h>
#define KS_X86 1
#endif

#ifdef KS_X86
/* One product kept apart from its sum, in paths compiled for AVX-512F or
   FMA: GCC would fuse a multiply with the add that follows (one rounding
   instead of two, so other bits than the baseline's). */
#define KS_UNFUSED(p) __asm__("" : "+v"(p))
#endif

/* What a path needs (combined with |). */
#define KS_AVX2 1
#define KS_FMA 2
#define KS_F16C 4       /* float16 <-> float32 conversions (with AVX's registers) */
#define KS_POPCNT 8     /* the POPCNT instruction (_bits.h) */
#define KS_AVX512 16    /* AVX-512F with the OS's support (_feature_sums.h) */

static int ks_simd_features = -1;       /* -1: not asked yet */
static int ks_simd_unjoined = -1;       /* the mask until ks_simd_join: all paths */
static int *ks_simd_allowed = &ks_simd_unjoined;

/* Whether the CPU has everything in ``need`` (the tests' mask aside).  Reads
   of the ints race benignly: every thread computes the same answer. */
static inline int ks_simd_cpu(int need)
{
    if (ks_simd_features < 0) {
        int f = 0;
#ifdef KS_X86
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx2"))
            f |= KS_AVX2;
        if (__builtin_cpu_supports("fma"))
            f |= KS_FMA;
        if (__builtin_cpu_supports("popcnt"))
            f |= KS_POPCNT;
        if (__builtin_cpu_supports("avx512f"))
            f |= KS_AVX512;
        {
            unsigned a, b, c, d;    /* CPUID 1, ECX bit 29; AVX's OS support via avx2 */
            if ((f & KS_AVX2) && __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C))
                f |= KS_F16C;
        }
#endif
        ks_simd_features = f;
    }
    return (ks_simd_features & need) == need;
}

/* Whether a path that needs ``need`` may be taken: the CPU has it and the
   tests allow it. */
static inline int ks_simd(int need)
{
    return ks_simd_cpu(need) && (*ks_simd_allowed & need) == need;
}

/* Point this module at the process's mask (_core/_simd.pyx's), once, when
   the module loads. */
static inline void ks_simd_join(int *mask)
{
    ks_simd_allowed = mask;
}

#endif
