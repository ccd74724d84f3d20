# One row-access abstraction for dense and CSR data, so every kernel and
# solver is written once (lightning's get_row_ptr idea).  as_rows (_rows.pyx)
# builds a Rows from Python.
from libc.stdint cimport int32_t, int64_t, uint64_t

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


cdef inline void row_bits(const Rows* X, Py_ssize_t i, uint64_t* out,
                          Py_ssize_t words) noexcept nogil:
    """Row i of 0/1 data as a bit set of ``words`` words (bit c: column c is 1),
    for the popcount kernels of _bits.h (KernelRows, decision_sums)."""
    cdef const double* v
    cdef const int32_t* ix
    cdef Py_ssize_t t, c, m = row_ptr(X, i, &v, &ix)
    for t in range(words):
        out[t] = 0
    for t in range(m):
        if v[t] != 0.0:
            c = ix[t] if ix != NULL else t
            out[c >> 6] |= (<uint64_t>1) << (c & 63)


# Point ``out`` at a canonical dense (C-order float64) or CSR matrix (from
# kernsolve._kernels.as_canonical) after checking its structure; returns the
# arrays to keep alive while ``out`` is used.  Shared by every module that
# walks Rows (kernel engine, kernel matrix, random features, DSG).
cdef object as_rows(object X, Rows* out)
