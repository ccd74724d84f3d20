"""Kernel functions: data canonicalisation, parameter checks and kernel_matrix.

The hot loops live in ``kernsolve/_core/`` (the kernel matrix in ``_kernel_matrix.pyx``,
the row cache in ``_kernel.pyx``); this module turns user input into what they
expect (dense C-order float64 or CSR with sorted int32 indices and int64 row
pointers) and checks kernel parameters with one message style.
"""
import numbers

import numpy as np

from ._constants import KERNEL_CODES, KERNEL_NAMES, KERNEL_TABLE, POLY, PRECOMPUTED
from ._core import _decision_sums, _kernel, _kernel_matrix
from ._sparse import (as_csr, dense_transpose, is_scipy_sparse, issparse, make_csr,
                      row_block)
from ._threads import one_blas_thread, resolve_n_jobs

_INT32_MAX = 2**31 - 1
# The kernels kernel_code takes, for its message: the functions, then "precomputed".
_KNOWN_KERNELS = ", ".join(repr(k.estimator_name) for k in KERNEL_TABLE if k.code != PRECOMPUTED)


def kernel_code(kernel, allow_precomputed=True):
    """LIBSVM's integer code of a kernel given by name or code.

    Parameters
    ----------
    kernel : str or int
        ``"linear"``, ``"poly"``/``"polynomial"``, ``"rbf"``, ``"sigmoid"``,
        ``"precomputed"``, ``"laplacian"``, or the codes 0-5.
    allow_precomputed : bool
        Whether ``"precomputed"`` (4) is acceptable here.

    Returns
    -------
    int
    """
    if isinstance(kernel, str):
        code = KERNEL_CODES.get(kernel.strip().lower())
    elif isinstance(kernel, numbers.Integral) and not isinstance(kernel, bool):
        code = int(kernel) if 0 <= int(kernel) < len(KERNEL_NAMES) else None
    else:
        code = None
    if code is None:
        raise ValueError(f"unknown kernel {kernel!r}; expected one of {_KNOWN_KERNELS}, "
                         f"'precomputed' or LIBSVM's codes 0-{len(KERNEL_NAMES) - 1}")
    if code == PRECOMPUTED and not allow_precomputed:
        raise ValueError("kernel 'precomputed' has no kernel function; pass the "
                         "kernel values themselves")
    return int(code)


def check_kernel_params(gamma, degree, coef0, n_features, kernel_type=POLY):
    """Validate gamma, degree, coef0 (gamma None means 1/n_features, as LIBSVM).

    The degree must be an integer; it must be >= 0 for the polynomial kernel,
    the only one that uses it (LIBSVM's svm-train takes ``-t 2 -d -1``).

    Returns
    -------
    (gamma, degree, coef0) : (float, int, float)
    """
    # A kernel function's gamma: only None means 1/n_features; 0 is the
    # constant kernel (training options follow LIBSVM's rule instead, where 0
    # also means 1/n_features: kernsolve._validation.resolve_gamma).
    if gamma is None:
        gamma = 1.0 / max(int(n_features), 1)
    if isinstance(gamma, bool) or not isinstance(gamma, numbers.Real):
        raise ValueError(f"gamma must be a real number or None, got {gamma!r}")
    gamma = float(gamma)
    if not np.isfinite(gamma) or gamma < 0:
        raise ValueError(f"gamma must be a finite number >= 0, got {gamma!r}")
    if isinstance(degree, bool) or not isinstance(degree, numbers.Integral):
        if isinstance(degree, numbers.Real) and float(degree).is_integer():
            degree = int(degree)
        else:
            raise ValueError(f"degree must be an integer, got {degree!r}")
    degree = int(degree)
    if kernel_type == POLY and degree < 0:
        raise ValueError(f"degree must be >= 0, got {degree}")
    if abs(degree) > _INT32_MAX:
        raise ValueError(f"degree is too large: {degree}")
    if isinstance(coef0, bool) or not isinstance(coef0, numbers.Real):
        raise ValueError(f"coef0 must be a real number, got {coef0!r}")
    coef0 = float(coef0)
    if not np.isfinite(coef0):
        raise ValueError(f"coef0 must be finite, got {coef0!r}")
    return gamma, degree, coef0


class Canonical:
    """X that :func:`as_canonical` (or an estimator's scikit-learn check) has
    made canonical and found finite, or rows of such an X: handed from one
    layer to the next (estimator -> ``kernsolve.train`` -> the driver's
    sub-problems; estimator -> DSG trainer) so that :func:`as_canonical`
    takes it without a second pass over the values.  Wrap nothing else."""

    __slots__ = ("X",)

    def __init__(self, X):
        self.X = X

    def __getitem__(self, rows):
        return Canonical(self.X[rows])


def _csr_base(X, name, checked=False):
    """CSR copy-if-needed with float64 data, summed duplicates, sorted indices;
    its values checked finite unless ``checked`` (and no duplicates summed)."""
    X = X.tocsr()
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got {X.ndim}-D")
    if not (np.issubdtype(X.dtype, np.floating) or np.issubdtype(X.dtype, np.integer)
            or X.dtype == np.bool_):
        raise ValueError(f"{name} must hold real numbers, got dtype {X.dtype}")
    # Rows without columns are LIBSVM's rows of labels and no features: all-zero
    # vectors, which it trains on (a data file where no row has a feature).
    if X.shape[0] == 0:
        raise ValueError(f"{name} is empty (shape {X.shape})")
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()   # also sorts the indices; a sum may overflow
        checked = False
    data = np.ascontiguousarray(X.data, dtype=np.float64)
    if not checked and not np.all(np.isfinite(data)):
        raise ValueError(f"{name} contains NaN or infinity")
    return X.shape, data, np.asarray(X.indices), np.asarray(X.indptr)


def _build_csr(shape, data, indices, indptr, scipy=False):
    """The canonical CSR: scipy's when ``scipy`` (the input was scipy's: the
    matrix may reach the user, as support vectors), else a Csr."""
    out = make_csr(data, indices.astype(np.int32, copy=False),
                   indptr.astype(np.int64, copy=False), shape, scipy)
    # scipy may narrow the row pointers; the core wants int64 (nnz may pass 2**31).
    out.indices = np.ascontiguousarray(indices, dtype=np.int32)
    out.indptr = np.ascontiguousarray(indptr, dtype=np.int64)
    out.has_sorted_indices = True
    return out


def _dense(X, name, checked=False):
    arr = np.asarray(X)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.floating)
                                   or np.issubdtype(arr.dtype, np.integer)
                                   or arr.dtype == np.bool_):
        raise ValueError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features), got "
                         f"{arr.ndim}-D with shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape})")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if not checked and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinity")
    return arr


def too_many_columns(name, n_columns):
    """The error for a matrix wider than the core's 32-bit feature numbers."""
    return ValueError(
        f"{name} has {n_columns} columns: kernsolve numbers features with 32-bit "
        f"integers, as LIBSVM does, so feature indices must be below 2**31")


def as_canonical(X, name="X", renumber=False):
    """Convert X to the form the compiled core reads.

    Parameters
    ----------
    X : array-like, scipy sparse matrix or Canonical, shape (n_samples, n_features)
        A :class:`Canonical` is taken without the pass over its values.
    name : str
        Used in error messages.
    renumber : bool, default=False
        Accept a sparse matrix 2**31 or more columns wide by renumbering its
        columns to the used ones. Only for a matrix whose kernel values are
        all that is computed (its own Gram rows): renumbered columns must
        never reach a model, a default gamma or a second matrix.

    Returns
    -------
    ndarray or CSR matrix
        A C-contiguous float64 ndarray, or a CSR matrix with float64 data,
        sorted int32 column indices and int64 row pointers: scipy's for a
        scipy matrix, a ``kernsolve._sparse.Csr`` for a Csr.

    Raises
    ------
    ValueError
        On non-finite values, a shape that is not 2-D, no rows, or
        2**31 or more columns (unless ``renumber``).
    """
    checked = isinstance(X, Canonical)
    if checked:
        X = X.X
    if issparse(X):
        shape, data, indices, indptr = _csr_base(X, name, checked)
        if shape[1] > _INT32_MAX:
            if not renumber:
                raise too_many_columns(name, shape[1])
            used, indices = np.unique(indices, return_inverse=True)
            shape = (shape[0], max(len(used), 1))
        return _build_csr(shape, data, indices, indptr, is_scipy_sparse(X))
    return _dense(X, name, checked)


def as_operand(X, kernel="rbf", name="X"):
    """``as_canonical(X)``, made dense when kernel_matrix would densify it anyway.

    For an operand used in many kernel_matrix calls (the support vectors at
    prediction): converting once saves a conversion per block.
    """
    Xc = as_canonical(X, name=name)
    if (issparse(Xc) and KERNEL_TABLE[kernel_code(kernel, allow_precomputed=False)].blas
            and worth_densifying(Xc, None)):
        return Xc.toarray()
    return Xc


def _canonical_pair(X, Y):
    """Canonical X and Y with matching widths, renumbering huge widths jointly."""
    if not (issparse(X) or issparse(Y)):
        Xc = _dense(X, "X")
        Yc = Xc if Y is None else _dense(Y, "Y")
        if Xc.shape[1] != Yc.shape[1]:
            raise ValueError(f"X has {Xc.shape[1]} features but Y has {Yc.shape[1]}")
        return Xc, Yc, Xc.shape[1]
    parts = []
    for M, name in ((X, "X"), (Y, "Y")):
        if M is None:
            parts.append(None)
        elif issparse(M):
            parts.append(("csr",) + _csr_base(M, name))
        else:
            parts.append(("dense", _dense(M, name)))
    widths = [p[1].shape[1] if p[0] == "dense" else p[1][1]
              for p in parts if p is not None]
    if len(widths) == 2 and widths[0] != widths[1]:
        raise ValueError(f"X has {widths[0]} features but Y has {widths[1]}")
    n_features = widths[0]
    if n_features > _INT32_MAX:
        sparse_parts = [p for p in parts if p is not None and p[0] == "csr"]
        if len(sparse_parts) != sum(p is not None for p in parts):
            raise too_many_columns("a dense X or Y", n_features)
        used = np.unique(np.concatenate([p[3] for p in sparse_parts]))
        width = max(len(used), 1)
        parts = [None if p is None else
                 ("csr", (p[1][0], width), p[2], np.searchsorted(used, p[3]), p[4])
                 for p in parts]
    out = []
    for p in parts:
        if p is None:
            out.append(None)
        elif p[0] == "dense":
            out.append(p[1])
        else:
            out.append(_build_csr(*p[1:]))     # a Csr: it stays inside kernel_matrix
    Xc, Yc = out
    return Xc, (Xc if Yc is None else Yc), n_features


def kernel_matrix(X, Y=None, kernel="rbf", gamma=None, degree=3, coef0=0.0,
                  n_jobs=None, *, row_independent=False):
    """The kernel matrix K[i, j] = k(X[i], Y[j]) in double precision.

    Parameters
    ----------
    X : array-like or sparse matrix, shape (n_X, n_features)
    Y : array-like or sparse matrix, shape (n_Y, n_features), optional
        Defaults to X. Dense and sparse may be mixed.
    kernel : str or int
        ``"linear"`` <x,y>; ``"poly"`` (gamma <x,y> + coef0)^degree;
        ``"rbf"`` exp(-gamma ||x-y||^2); ``"sigmoid"`` tanh(gamma <x,y> + coef0);
        ``"laplacian"`` exp(-gamma ||x-y||_1); or LIBSVM's codes 0, 1, 2, 3, 5.
    gamma : float or None
        None means 1 / n_features (LIBSVM's default).
    degree : int
        Degree of the polynomial kernel (>= 0).
    coef0 : float
        Offset of the polynomial and sigmoid kernels.
    n_jobs : int or None
        Threads (scikit-learn's rule, see ``kernsolve.resolve_n_jobs``).
    row_independent : bool, default False
        Make each row of K depend on its row of X and on Y only, not on the
        other rows of X or its position among them (prediction in pieces then
        gives the bits of prediction as a whole): dense dot products come
        from kernsolve's own fused multiply-add chains (``_core/_dots.h``)
        instead of dgemm, whose value for a row can change with its place in
        the call, and whether sparse data is densified is decided by Y and the
        width alone (sparse X is made dense a bounded chunk of rows at a time).

    Returns
    -------
    ndarray of float64, shape (n_X, n_Y)

    Raises
    ------
    ValueError
        Unknown kernel, bad parameters, NaN/inf, empty or mismatched inputs.
    """
    code = kernel_code(kernel, allow_precomputed=False)
    n_threads = resolve_n_jobs(n_jobs)
    Xc, Yc, n_features = _canonical_pair(X, Y)
    gamma, degree, coef0 = check_kernel_params(gamma, degree, coef0, n_features, code)
    # Dense inner products go through BLAS dgemm on fixed tiles, each call
    # single-threaded (our threads run the tiles), so the bits do not depend
    # on n_jobs; kernels without dot products (KERNEL_TABLE's blas: the
    # Laplacian) and truly sparse data use the core's loops. Fairly dense CSR
    # (e.g. images) is faster densified for dgemm.
    if row_independent:
        return _rows_apart(Xc, Yc, code, degree, gamma, coef0, n_threads)
    blas = KERNEL_TABLE[code].blas
    if blas and (issparse(Xc) or issparse(Yc)) and worth_densifying(Xc, Yc):
        Xc = Xc.toarray() if issparse(Xc) else Xc
        Yc = Yc.toarray() if issparse(Yc) else Yc
    if blas and not issparse(Xc) and not issparse(Yc):
        with one_blas_thread():
            return _kernel_matrix._kernel_matrix(Xc, Yc, code, degree, gamma, coef0,
                                                 n_threads, True)
    return _kernel_matrix._kernel_matrix(Xc, Yc, code, degree, gamma, coef0, n_threads)


# Largest Y^T made dense for the sparse-rows path of rows_against_operand.
_TRANSPOSED_MAX_BYTES = 256 << 20


def transposed_operand(Yc, kernel):
    """``(Y^T dense, squared row norms of Y)`` for :func:`rows_against_operand`
    when Yc (from ``as_operand``) stayed sparse and a dot-product kernel or the
    RBF kernel uses it, within _TRANSPOSED_MAX_BYTES; else None."""
    code = kernel_code(kernel, allow_precomputed=False)
    if (not issparse(Yc) or not KERNEL_TABLE[code].blas
            or 8 * Yc.shape[0] * Yc.shape[1] > _TRANSPOSED_MAX_BYTES):
        return None
    return dense_transpose(Yc), _kernel_matrix.row_norms(Yc, code)


def rows_against_operand(X, Yc, kernel, gamma, degree, coef0, n_jobs, transposed=None):
    """``kernel_matrix(X, Yc, ..., row_independent=True)`` for the rows X of
    one block against an operand made once (``as_operand``; its values are
    checked then) with parameters already checked (``check_kernel_params``):
    only X is checked, so a prediction in many blocks checks the support
    vectors once instead of once per block.

    ``transposed`` (from :func:`transposed_operand`, made once too): X's rows
    are taken sparse (a dense X is made CSR, which gives the same values) and
    each of their entries adds a row of Y^T, a contiguous loop, instead of a
    gather per entry of every row of Y.  Each value depends on its rows of X
    and Y only, whatever the block or the thread count.
    """
    Xc = as_canonical(X, name="X")
    if Xc.shape[1] != Yc.shape[1]:
        raise ValueError(f"X has {Xc.shape[1]} features but Y has {Yc.shape[1]}")
    code = kernel_code(kernel, allow_precomputed=False)
    n_threads = resolve_n_jobs(n_jobs)
    if transposed is not None:
        if not issparse(Xc):
            Xc = as_canonical(as_csr(Xc), name="X")
        Yt, ny = transposed
        return _kernel_matrix._kernel_matrix_transposed(Xc, Yt, ny, code, degree, gamma,
                                                        coef0, n_threads)
    return _rows_apart(Xc, Yc, code, degree, gamma, coef0, n_threads)


# Dense bytes of sparse X rows made dense at once by _rows_apart.
_DENSE_CHUNK_BYTES = 64 << 20


def _dense_operand(Xc, Yc, code):
    """Y, dense, when :func:`_rows_apart` takes ks_dots' path for these
    operands; None when it takes the core's loops (decided by Y and the
    width alone)."""
    blas = KERNEL_TABLE[code].blas
    if blas and issparse(Yc) and worth_densifying(Yc, None):
        Yc = Yc.toarray()
    if not blas or issparse(Yc) or (
            issparse(Xc) and ROW_TILE * Xc.shape[1] * 8 > _DENSE_CHUNK_BYTES):
        return None
    return Yc


def sums_against_operand(X, Yc, kernel, gamma, degree, coef0, n_jobs, transposed,
                         columns, coefs, out):
    """``_decision_sums.expansion_sums(rows_against_operand(X, Yc, ...),
    columns, coefs, out)`` with the same bits, without the kernel block:
    ``_decision_sums.decision_sums`` (kernel tiles that stay in the cache).
    Returns False, having done nothing, where rows_against_operand takes the
    core's per-value loops (a kernel without dot products, support vectors
    that stay sparse without ``transposed``)."""
    Xc = as_canonical(X, name="X")
    if Xc.shape[1] != Yc.shape[1]:
        raise ValueError(f"X has {Xc.shape[1]} features but Y has {Yc.shape[1]}")
    code = kernel_code(kernel, allow_precomputed=False)
    n_threads = resolve_n_jobs(n_jobs)
    if transposed is None:
        Yc = _dense_operand(Xc, Yc, code)
        if Yc is None:
            return False
    elif not issparse(Xc):
        Xc = as_canonical(as_csr(Xc), name="X")
    integral = transposed is not None and _integral(Xc.data) and _integral(transposed[0])
    _decision_sums.decision_sums(Xc, Yc if transposed is None else None, code, degree,
                                 gamma, coef0, columns, coefs, out, n_threads, transposed,
                                 integral,
                                 integral and _zero_one(Xc.data) and _zero_one(transposed[0]))
    return True


def _integral(values):
    """Whether every value is an integer (binary features: RBF values by table)."""
    return bool(np.all(values == np.rint(values)))


def _zero_one(values):
    """Whether every value is 0 or 1 (rows as bit sets in decision_sums)."""
    return bool(np.all((values == 0.0) | (values == 1.0)))


def _rows_apart(Xc, Yc, code, degree, gamma, coef0, n_threads):
    """``kernel_matrix(..., row_independent=True)`` on canonical X, Y.

    Which path computes the values is decided by Y and the width alone, never
    by X's rows: the core's loops (per value, the same for any rows) when Y
    stays sparse or for a kernel without dot products; else ks_dots on tiles, with
    sparse X made dense in chunks of whole tiles (so the memory is bounded by
    the width, not by the number of rows), or the core's loops when even one
    tile of X rows would be too large dense."""
    Yd = _dense_operand(Xc, Yc, code)
    if Yd is None:
        return _kernel_matrix._kernel_matrix(Xc, Yc, code, degree, gamma, coef0, n_threads)
    Yc = Yd
    width = Xc.shape[1]
    if not issparse(Xc):
        return _kernel_matrix._kernel_matrix(Xc, Yc, code, degree, gamma, coef0,
                                             n_threads, True, True)
    # dense chunks of whole tiles: the memory is bounded (the bits do not
    # depend on the chunks)
    def dense_rows(part):
        return _kernel_matrix._kernel_matrix(part.toarray(), Yc, code, degree, gamma,
                                             coef0, n_threads, True, True)

    step = max(1, _DENSE_CHUNK_BYTES // (8 * max(width, 1) * ROW_TILE)) * ROW_TILE
    if Xc.shape[0] <= step:     # one chunk (a prediction block): no second K block
        return dense_rows(Xc)
    out = np.empty((Xc.shape[0], Yc.shape[0]))
    for start in range(0, Xc.shape[0], step):
        out[start:start + step] = dense_rows(row_block(Xc, start, start + step))
    return out


# A gathered sparse product costs about 1 ns per stored value, dgemm about
# 0.1 ns per dense entry: densify above this density, within this memory.
_DENSIFY_MIN_DENSITY = 0.15
_DENSIFY_MAX_BYTES = 1 << 30


def worth_densifying(X, Y):
    return sparse_worth_densifying(*[(M.nnz, M.shape) for M in (X, Y) if issparse(M)])


def dense_enough(nnz, shape):
    """Whether a sparse matrix of this nnz and shape costs less made dense a
    piece at a time (dgemm) than through the gathered sparse products."""
    rows, cols = shape
    return nnz >= _DENSIFY_MIN_DENSITY * rows * cols


def sparse_worth_densifying(*matrices):
    """:func:`worth_densifying` from the (nnz, shape) of the sparse operands
    (a matrix held in parts: the whole's counts)."""
    size = 0
    for nnz, (rows, cols) in matrices:
        if not dense_enough(nnz, (rows, cols)):
            return False
        size += 8 * rows * cols
    return size <= _DENSIFY_MAX_BYTES


def kernel_rows(X, kernel="rbf", gamma=None, degree=3, coef0=0.0, cache_mb=100.0,
                n_jobs=None):
    """A ``KernelRows`` engine over X (validated), for solvers and tests.

    ``kernel="precomputed"`` expects X to be the square training kernel matrix.
    """
    code = kernel_code(kernel)
    Xc = as_canonical(X, renumber=True)     # only X's own Gram rows are computed
    if code == PRECOMPUTED:
        if issparse(Xc):
            Xc = np.ascontiguousarray(Xc.toarray())
        if Xc.shape[0] != Xc.shape[1]:
            raise ValueError(f"a precomputed kernel must be square, got shape {Xc.shape}")
    width = X.shape[1] if issparse(X) else Xc.shape[1]
    gamma, degree, coef0 = check_kernel_params(gamma, degree, coef0, width, code)
    if isinstance(cache_mb, bool) or not isinstance(cache_mb, numbers.Real) \
            or not np.isfinite(cache_mb) or cache_mb < 0:
        raise ValueError(f"cache size must be a finite number of MB >= 0, got {cache_mb!r}")
    return _kernel.KernelRows(Xc, code, degree, gamma, coef0, float(cache_mb),
                              resolve_n_jobs(n_jobs))


#: Rows per BLAS tile of the kernel engine (``_core/_kernel_matrix.pyx``): blocks of
#: rows cut in multiples of it waste no padded rows.
ROW_TILE = _kernel_matrix.ROW_TILE


def block_rows(budget_rows):
    """A block of at most ``budget_rows`` rows (at least 1), rounded down to whole
    BLAS tiles when it holds one."""
    budget_rows = max(1, int(budget_rows))
    return budget_rows if budget_rows < ROW_TILE else budget_rows // ROW_TILE * ROW_TILE


def tiled_product(A, B):
    """``A @ B`` for dense A, B, by BLAS on tiles of ``ROW_TILE`` rows of A (a last,
    partial tile padded with zero rows), one BLAS thread: every tile is one call
    of the same shape, so a row of the product depends on that row of A only,
    not on the other rows or its position among them (as the kernel engine's
    tiles), and prediction in pieces gives the bits of prediction as a whole."""
    A = np.ascontiguousarray(A, dtype=np.float64)
    B = np.ascontiguousarray(B, dtype=np.float64)
    n = A.shape[0]
    out = np.empty((n, B.shape[1]))
    full = n - n % ROW_TILE
    with one_blas_thread():
        for start in range(0, full, ROW_TILE):
            np.matmul(A[start:start + ROW_TILE], B, out=out[start:start + ROW_TILE])
        if full < n:
            pad = np.zeros((ROW_TILE, A.shape[1]))
            pad[:n - full] = A[full:]
            out[full:] = (pad @ B)[:n - full]
    return out
