"""The one owner of sparse matrices: "is X sparse?", "make a CSR matrix", and
scipy only where it is really used.

kernsolve's command-line tools read a LIBSVM file, train or predict, and write
a file without importing scipy: ``import scipy.sparse`` takes about 0.15 s
(SciPy 1.17's array-API layer imports numpy.testing, numpy.f2py, numpy.ma and
numpy.random), more than training a small data set takes (doc/cli.md,
"Start-up time").  Their rows stay in a :class:`Csr`, the part of scipy's
``csr_matrix`` that kernsolve's own code uses, and the public Python API
still gives scipy matrices (:func:`to_scipy` at its doors: ``read_problem``,
``load_model``; ``kernsolve.train`` keeps the kind of matrix it was given).

* :func:`issparse` -- X is a sparse matrix: a :class:`Csr`, or a scipy matrix
  or array.  Nothing can be a scipy matrix unless ``scipy.sparse`` was
  imported, so scipy is asked only then (and never imported here).
* :func:`make_csr` -- a CSR matrix from its arrays, a Csr or scipy's;
  :func:`as_csr` -- any matrix as a canonical Csr (what is written to files).
* :func:`to_scipy` -- a Csr as scipy's csr_matrix, sharing its arrays.
* :func:`dense_columns`, :func:`dense_transpose`, :func:`widened` -- the
  operations on Csr or scipy matrices that the command-line paths need.
* :func:`scipy_sparse` -- the scipy.sparse module, imported at first use.
"""
import sys

import numpy as np

__all__ = ["Csr", "issparse", "is_scipy_sparse", "make_csr", "as_csr", "to_scipy",
           "select_rows", "row_block", "dense_columns", "dense_transpose", "widened",
           "scipy_sparse"]


def scipy_sparse():
    """The scipy.sparse module, imported at its first use (about 0.15 s, which
    the command-line paths never pay)."""
    import scipy.sparse
    return scipy.sparse


def is_scipy_sparse(X):
    """X is a scipy sparse matrix or array (scipy is asked only if it was imported)."""
    sp = sys.modules.get("scipy.sparse")
    return sp is not None and sp.issparse(X)


def issparse(X):
    """X is a sparse matrix: a :class:`Csr` or a scipy sparse matrix or array."""
    return isinstance(X, Csr) or is_scipy_sparse(X)


class Csr:
    """A CSR matrix without scipy, in kernsolve's canonical form: float64
    ``data``, column ``indices`` sorted and unique within each row, row
    pointers ``indptr``, ``shape``.  Whoever makes one promises that form (the
    data-file reader, the model-file reader and ``as_canonical`` do).

    The part of scipy's ``csr_matrix`` interface that kernsolve's compiled
    core and its command-line paths use: ``data``, ``indices``, ``indptr``,
    ``shape``, ``ndim``, ``nnz``, ``dtype``, ``format``, ``has_sorted_indices``,
    ``has_canonical_format``, ``tocsr()``, ``copy()``, ``toarray()`` and row
    selection ``X[rows]``, ``X[a:b]``.  Anything else: :func:`to_scipy`.
    """
    format = "csr"
    ndim = 2
    has_sorted_indices = True
    has_canonical_format = True

    def __init__(self, data, indices, indptr, shape):
        self.data = data
        self.indices = indices
        self.indptr = indptr
        self.shape = (int(shape[0]), int(shape[1]))

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def nnz(self):
        return int(self.indptr[-1]) if len(self.indptr) else 0

    def __repr__(self):
        return f"<kernsolve Csr {self.shape[0]}x{self.shape[1]}, {self.nnz} stored values>"

    def tocsr(self, copy=False):
        return self.copy() if copy else self

    def copy(self):
        return Csr(self.data.copy(), self.indices.copy(), self.indptr.copy(), self.shape)

    def _row_of_entries(self):
        return np.repeat(np.arange(self.shape[0]), np.diff(self.indptr))

    def toarray(self):
        out = np.zeros(self.shape, dtype=self.dtype)
        nnz = self.nnz
        out[self._row_of_entries(), self.indices[:nnz]] = self.data[:nnz]
        return out

    def __getitem__(self, key):
        """Rows: a slice (the arrays are shared when its step is 1), an integer
        array, a boolean mask or an integer (one row, as scipy gives it)."""
        if isinstance(key, tuple):
            raise TypeError("a kernsolve Csr selects rows only (X[rows]); "
                            "kernsolve._sparse.to_scipy(X) does the rest")
        n = self.shape[0]
        if isinstance(key, slice) and key.step in (None, 1):
            a, b, _ = key.indices(n)
            b = max(a, b)
            lo, hi = int(self.indptr[a]), int(self.indptr[b])
            indptr = np.asarray(self.indptr[a:b + 1], dtype=np.int64) - lo
            return Csr(self.data[lo:hi], self.indices[lo:hi], indptr, (b - a, self.shape[1]))
        rows = _row_numbers(key, n)
        start = self.indptr[rows].astype(np.int64)
        counts = self.indptr[rows + 1].astype(np.int64) - start
        indptr = np.zeros(rows.size + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        take = np.repeat(start - indptr[:-1], counts) + np.arange(indptr[-1])
        return Csr(self.data[take], self.indices[take], indptr, (rows.size, self.shape[1]))


def _row_numbers(key, n):
    """The row numbers of a slice, an integer, an integer array or a boolean mask, in
    time of the rows taken (never an array of all ``n``; a mask is ``n`` long
    anyway), negative numbers counted from the end as numpy counts them."""
    if isinstance(key, slice):
        return np.arange(*key.indices(n), dtype=np.int64)
    key = np.asarray(key)
    if key.dtype == np.bool_:
        if key.shape != (n,):
            raise IndexError(f"boolean row mask of shape {key.shape} for {n} rows")
        return np.flatnonzero(key)
    if key.dtype.kind not in "iu":
        raise IndexError(f"rows must be selected by integers, a slice or a mask, "
                         f"not {key.dtype}")
    rows = np.atleast_1d(key).astype(np.int64, copy=True).ravel()
    if rows.size and (rows.min() < -n or rows.max() >= n):
        bad = rows[(rows < -n) | (rows >= n)][0]
        raise IndexError(f"row {bad} is out of range for {n} rows")
    rows[rows < 0] += n
    return rows


def make_csr(data, indices, indptr, shape, scipy=False):
    """A CSR matrix of these arrays (shared, not copied): scipy's csr_matrix
    when ``scipy`` (what the public API gives), else a :class:`Csr`."""
    if not scipy:
        return Csr(data, indices, indptr, shape)
    out = scipy_sparse().csr_matrix((data, indices, indptr), shape=shape, copy=False)
    out.has_sorted_indices = True
    return out


def select_rows(X, key):
    """Rows of a CSR matrix (a Csr or scipy's) by a slice, an index array or
    a mask, as a Csr, in time of the rows taken (a slice shares the arrays;
    :func:`to_scipy` where scipy's operations are needed).  scipy's own ``X[key]`` first converts the row
    pointers and the column indices to one integer type when they differ
    (kernsolve's canonical int64 and int32): a copy of both whole arrays for
    every selection, 25 minutes or more for one EigenPro pass over 1.2
    million rows of 390 values (benchmarks/CURRENT.md,
    more-rows-1200k-sparse)."""
    return Csr(X.data, X.indices, X.indptr, X.shape)[key]


def row_block(X, start, stop):
    """Rows ``start .. stop-1`` of any matrix, of its kind: a view of an array,
    :func:`select_rows` for a sparse one (a scipy matrix stays scipy's).  The
    loops that go through a big matrix a block at a time take their blocks
    here: with scipy's own slice each block would cost a copy of the whole
    index arrays of a canonical matrix (see :func:`select_rows`)."""
    if not issparse(X):
        return X[start:stop]
    R = select_rows(X, slice(start, stop))
    return R if isinstance(X, Csr) else to_scipy(R)


def to_scipy(X):
    """A :class:`Csr` as scipy's csr_matrix (sharing its arrays); anything else
    unchanged.  The public API's doors use it, and the code that needs scipy's
    operations (the whole-model solvers, the median trick)."""
    if not isinstance(X, Csr):
        return X
    return make_csr(X.data, X.indices, X.indptr, X.shape, scipy=True)


def as_csr(X):
    """Any 2-D matrix (Csr, scipy sparse, array) as a canonical float64
    :class:`Csr`: a stored zero of a sparse matrix stays, zeros of an array
    are left out, duplicate entries are summed."""
    if isinstance(X, Csr):
        if X.dtype == np.float64:
            return X
        return Csr(X.data.astype(np.float64), X.indices, X.indptr, X.shape)
    if is_scipy_sparse(X):
        X = scipy_sparse().csr_matrix(X, dtype=np.float64)
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        return Csr(X.data, X.indices, X.indptr, X.shape)
    arr = np.asarray(X, dtype=np.float64)
    rows, cols = np.nonzero(arr)
    indptr = np.zeros(arr.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=arr.shape[0]), out=indptr[1:])
    return Csr(arr[rows, cols], cols.astype(np.int32), indptr, arr.shape)


def dense_columns(X, columns):
    """Columns ``columns`` of X (Csr, scipy sparse or array) as a float64 array."""
    if isinstance(X, Csr):
        return X.toarray()[:, columns].astype(np.float64, copy=False)
    if is_scipy_sparse(X):
        return scipy_sparse().csr_matrix(X)[:, columns].toarray().astype(np.float64, copy=False)
    return np.asarray(X, dtype=np.float64)[:, columns]


def dense_transpose(X):
    """X^T as a C-order float64 array (X a Csr or a scipy sparse matrix)."""
    if isinstance(X, Csr):
        out = np.zeros((X.shape[1], X.shape[0]))
        nnz = X.nnz
        out[X.indices[:nnz], X._row_of_entries()] = X.data[:nnz]
        return out
    return np.ascontiguousarray(X.T.toarray(), dtype=np.float64)


def widened(X, width):
    """X as CSR with ``width`` >= X's columns (the new columns are zeros): a Csr
    stays one; scipy's csr_matrix for anything else."""
    if isinstance(X, Csr):
        return Csr(X.data, X.indices, X.indptr, (X.shape[0], width))
    M = scipy_sparse().csr_matrix(X)
    if M.shape[1] != width:
        M = M.copy()
        M.resize((M.shape[0], width))
    return M
