# Products of sparse rows with a dense Y^T (_axpy_rows.h), for the kernel
# matrix (_kernel_matrix.pyx) and prediction's decision sums (_decision_sums.pyx).
from libc.stdint cimport int32_t

cdef extern from "_axpy_rows.h" nogil:
    void ks_axpy_rows(double* o, const double* Yt, Py_ssize_t n_y, const double* a,
                      const int32_t* ix, Py_ssize_t m, Py_ssize_t j0,
                      Py_ssize_t j1) noexcept

cdef enum:
    # Columns of the output (rows of Y) per sweep: the slices of Y^T that one
    # sparse row touches then stay in the L2 cache for the rows of its group.
    AXPY_COLS = 2048
