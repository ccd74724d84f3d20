/* The vector paths this CPU can take, for kernsolve's hand-written SIMD code
 * (_exp.h, _cos.h, _feature_sums.h, _dots.h, _bits.h, solvers/smo/_wss_avx2.h):
 * asked once (per module), and one switch for the tests to hold a module to
 * its baseline paths (or, ks_simd_allow, to some of its vector paths).  Each
 * path gives the same bits as its baseline, so the switch only tells the tests
 * which one they checked.
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
static int ks_simd_allowed = -1;        /* the paths the tests allow (all) */

/* Whether the CPU has everything in ``need`` (and the tests allow it).  Reads
   of the ints race benignly: every thread computes the same answer. */
static inline int ks_simd(int need)
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
    return (ks_simd_features & ks_simd_allowed & need) == need;
}

/* For the tests: only the paths in ``mask`` may be taken (-1: the CPU
   chooses; 0: the baseline). */
static inline void ks_simd_allow(int mask)
{
    ks_simd_allowed = mask;
}

/* For the tests: 1 holds every vector path off, 0 lets the CPU choose. */
static inline void ks_simd_baseline(int on)
{
    ks_simd_allow(on ? 0 : -1);
}

#endif
