# The vector paths of kernsolve's hand-written SIMD code (_simd.h), and the
# one mask of the paths the tests allow (_simd.pyx owns it).  Every module
# whose C includes _simd.h points at that mask when it loads, with the line
#     ks_simd_join(paths_mask())
# at its top (tests/test_architecture.py checks it), so one switch
# (vector_paths) reaches every module.
cdef extern from "_simd.h" nogil:
    int KS_AVX2
    int KS_FMA
    int KS_AVX512
    int ks_simd(int need)
    int ks_simd_cpu(int need)
    void ks_simd_join(int* mask)

cdef int* paths_mask() noexcept nogil
