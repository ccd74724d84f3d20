# scipy's BLAS (scipy.linalg.cython_blas) for the compiled modules, without
# the GIL: the kernel matrix's dgemm tiles (_kernel_matrix.pyx) and EigenPro's
# triangular solves and Gram updates (solvers/eigenpro/_block_ops.pyx).  The
# routines are fetched at load_blas(), not cimported (see _blas.pyx); call it
# (with the GIL) before the first call of any of them.

cdef int load_blas() except -1

cdef void dgemm(char* transa, char* transb, int* m, int* n, int* k, double* alpha,
                double* a, int* lda, double* b, int* ldb, double* beta, double* c,
                int* ldc) noexcept nogil
cdef void dtrsm(char* side, char* uplo, char* transa, char* diag, int* m, int* n,
                double* alpha, double* a, int* lda, double* b, int* ldb) noexcept nogil
cdef void dsyrk(char* uplo, char* trans, int* n, int* k, double* alpha, double* a,
                int* lda, double* beta, double* c, int* ldc) noexcept nogil
