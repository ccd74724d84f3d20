# One row-access abstraction for dense and CSR data, so every kernel and
# solver is written once (lightning's get_row_ptr idea).  as_rows (_rows.pyx)
# builds a Rows from Python.
from libc.stdint cimport int32_t, int64_t

cdef struct Rows:
    Py_ssize_t n_rows
    Py_ssize_t n_features
    bint is_sparse
    const double* values      # dense: n_rows * n_features, C order; CSR: data
    const int32_t* indices    # CSR column indices (sorted within a row); NULL if dense
    const int64_t* indptr     # CSR row pointers (n_rows + 1); NULL if dense


cdef inline Py_ssize_t row_ptr(const Rows* X, Py_ssize_t i, const double** vals,
                               const int32_t** idx) noexcept nogil:
    """Point at row i; returns its length. idx is NULL for a dense row."""
    if X.is_sparse:
        vals[0] = X.values + X.indptr[i]
        idx[0] = X.indices + X.indptr[i]
        return <Py_ssize_t>(X.indptr[i + 1] - X.indptr[i])
    vals[0] = X.values + i * X.n_features
    idx[0] = NULL
    return X.n_features


# Point ``out`` at a canonical dense (C-order float64) or CSR matrix (from
# kernsolve._kernels.as_canonical) after checking its structure; returns the
# arrays to keep alive while ``out`` is used.  Shared by every module that
# walks Rows (kernel engine, kernel matrix, random features, DSG).
cdef object as_rows(object X, Rows* out)
