"""scipy's BLAS routines, borrowed once for every compiled module (_blas.pxd).

They are fetched from ``scipy.linalg.cython_blas``'s capsules at the first
load_blas(), not cimported: a cimport would import scipy.linalg (about
0.15 s) whenever a module that uses them loads, and only the BLAS path of the
dense kernel matrix and EigenPro's solver call them (prediction's dot
products are ks_dots, kernsolve-train's SMO never needs them).  scipy's own
Python wrappers (``solve_triangular``, ``blas.dsyrk``, ...) hold the GIL
through the call, so two tasks of a thread pool would run one after the
other; these do not.
"""
from cpython.pycapsule cimport PyCapsule_GetName, PyCapsule_GetPointer

ctypedef void (*dgemm_t)(char* transa, char* transb, int* m, int* n, int* k,
                         double* alpha, double* a, int* lda, double* b, int* ldb,
                         double* beta, double* c, int* ldc) noexcept nogil
ctypedef void (*dtrsm_t)(char* side, char* uplo, char* transa, char* diag, int* m, int* n,
                         double* alpha, double* a, int* lda, double* b,
                         int* ldb) noexcept nogil
ctypedef void (*dsyrk_t)(char* uplo, char* trans, int* n, int* k, double* alpha, double* a,
                         int* lda, double* beta, double* c, int* ldc) noexcept nogil

cdef dgemm_t _dgemm = NULL
cdef dtrsm_t _dtrsm = NULL
cdef dsyrk_t _dsyrk = NULL


cdef void* _routine(api, name) except NULL:
    capsule = api[name]
    return PyCapsule_GetPointer(capsule, PyCapsule_GetName(capsule))


cdef int load_blas() except -1:
    global _dgemm, _dtrsm, _dsyrk
    if _dgemm is NULL or _dtrsm is NULL or _dsyrk is NULL:
        from scipy.linalg import cython_blas
        api = cython_blas.__pyx_capi__
        _dgemm = <dgemm_t>_routine(api, "dgemm")
        _dtrsm = <dtrsm_t>_routine(api, "dtrsm")
        _dsyrk = <dsyrk_t>_routine(api, "dsyrk")
    return 0


def load():
    """Load scipy's BLAS (and fetch its routines) now: before a BLAS thread
    limit is set (kernsolve._threads.one_blas_thread), which reaches only the
    BLAS libraries loaded when it is made."""
    load_blas()


cdef void dgemm(char* transa, char* transb, int* m, int* n, int* k, double* alpha,
                double* a, int* lda, double* b, int* ldb, double* beta, double* c,
                int* ldc) noexcept nogil:
    _dgemm(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)


cdef void dtrsm(char* side, char* uplo, char* transa, char* diag, int* m, int* n,
                double* alpha, double* a, int* lda, double* b, int* ldb) noexcept nogil:
    _dtrsm(side, uplo, transa, diag, m, n, alpha, a, lda, b, ldb)


cdef void dsyrk(char* uplo, char* trans, int* n, int* k, double* alpha, double* a,
                int* lda, double* beta, double* c, int* ldc) noexcept nogil:
    _dsyrk(uplo, trans, n, k, alpha, a, lda, beta, c, ldc)
