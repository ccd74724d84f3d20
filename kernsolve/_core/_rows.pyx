"""Rows (``_rows.pxd``) from Python: ``as_rows`` points a Rows at a canonical
dense or CSR matrix after checking its structure.

Every module that walks Rows (the kernel engine, the kernel matrix, random
features, DSG) builds them here, once per call, outside its loops.
"""
from libc.stdint cimport int32_t, int64_t

cimport numpy as cnp
import numpy as np

from kernsolve._sparse import issparse

cnp.import_array()


cdef object as_rows(object X, Rows* out):
    """Point ``out`` at a canonical dense or CSR matrix; return what to keep alive."""
    if issparse(X):
        if X.format != "csr":
            raise ValueError("X must be canonical (CSR); use kernsolve._kernels.as_canonical")
        data = np.ascontiguousarray(X.data, dtype=np.float64)
        indptr = np.ascontiguousarray(X.indptr, dtype=np.int64)
        if X.shape[1] > 2147483647:
            raise ValueError("X has more than 2**31 - 1 columns; use as_canonical")
        indices = np.ascontiguousarray(X.indices, dtype=np.int32)
        n_rows, n_features = X.shape
        if (indptr.shape[0] != n_rows + 1 or indptr[0] != 0
                or indptr[n_rows] > data.shape[0] or indices.shape[0] < indptr[n_rows]
                or (n_rows > 0 and np.any(indptr[1:] < indptr[:n_rows]))):
            raise ValueError("X is not a valid CSR matrix (row pointers)")
        used = indices[:indptr[n_rows]]
        # A column outside [0, n_features) would write past the work vector.
        if used.shape[0] and (used.min() < 0 or used.max() >= n_features):
            raise ValueError("X is not a valid CSR matrix (column index out of range)")
        out.is_sparse = True
        out.values = <const double*>cnp.PyArray_DATA(data)
        out.indices = <const int32_t*>cnp.PyArray_DATA(indices)
        out.indptr = <const int64_t*>cnp.PyArray_DATA(indptr)
        keep = (data, indices, indptr)
    else:
        arr = np.asarray(X)
        if arr.ndim != 2:
            raise ValueError(f"X must be 2-D, got {arr.ndim}-D")
        if arr.dtype != np.float64 or not arr.flags.c_contiguous:
            raise ValueError("X must be canonical (C-contiguous float64); "
                             "use kernsolve._kernels.as_canonical")
        n_rows, n_features = arr.shape
        out.is_sparse = False
        out.values = <const double*>cnp.PyArray_DATA(arr)
        out.indices = NULL
        out.indptr = NULL
        keep = (arr,)
    out.n_rows = n_rows
    out.n_features = n_features
    return keep
