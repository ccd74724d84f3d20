"""The one switch of the hand-written vector paths, for the tests.

Every vector operation of the compiled modules has a scalar path and vector
paths of the same bits (_simd.h lists them); the CPU chooses among them.  A
test that compares a vector path with the scalar one holds every module to
one path with vector_paths, runs, and lets the CPU choose again.
"""
cdef int _mask = -1         # the paths the tests allow: -1 all, 0 the scalar ones


cdef int* paths_mask() noexcept nogil:
    return &_mask


# This module's own copy of _simd.h follows the mask too, as every module's.
ks_simd_join(paths_mask())

# What each path allows, and what the CPU needs for it to be that path.
PATHS = {"scalar": 0, "avx2": ~KS_AVX512, "avx512": -1}
_NEEDS = {"scalar": 0, "avx2": KS_AVX2 | KS_FMA, "avx512": KS_AVX2 | KS_FMA | KS_AVX512}


def vector_paths(name=None):
    """Hold every module's hand-written vector code to one path of PATHS:
    "scalar", "avx2" (AVX2 with FMA, F16C and POPCNT, no AVX-512) or
    "avx512" (everything); None lets the CPU choose.  Returns whether the CPU
    has that path (a test compares the paths it has)."""
    global _mask
    if name is None:
        _mask = -1
        return True
    _mask = PATHS[name]
    return bool(ks_simd_cpu(_NEEDS[name]))
