"""The dense kernel matrix K(X, Y): kernsolve.kernel_matrix, the kernel blocks
of prediction and of the whole-model solvers.

Rows of X are computed in groups that sweep Y in blocks sized for the L2
cache, one work vector per thread; a single row of X (one test point against
the support vectors) is computed in parallel over Y instead.  Dense operands
with a dot-product kernel may take the BLAS path: single-threaded dgemm on
fixed output tiles, then K.  Kernel values come from ``_kernel_values.pxd``
(the same ``_pair`` as the row cache) and the tiles do not depend on the
thread count, so results are bit-identical for any ``n_threads``.
Prediction's decision sums (``_decision_sums.pyx``) make the same products
without writing K.
"""
from cython.parallel cimport prange, parallel
from libc.stdint cimport int32_t
from libc.stdlib cimport calloc, free

cimport numpy as cnp
import numpy as np

from ._axpy_rows cimport AXPY_COLS, ks_axpy_rows
from ._blas cimport dgemm, load_blas
from ._rows cimport Rows, as_rows, row_ptr
from ._kernel cimport KernelParams, kernel_traits, NO_BASE, LINEAR, POLY, RBF, SIGMOID
from ._kernel_values cimport (
    SCATTER_MAX_FEATURES, PAR_MIN_WORK, VALUE_BLOCK, Query, _finish, _exponent, _row_norm,
    _make_query, _clear_query, _kernel_block, _chunk, _mean_cost, ks_exp_block)
from ._simd cimport KS_AVX2, KS_FMA, ks_simd, ks_simd_join, paths_mask

# Dot products of dense rows whose bits do not depend on the other rows of the call.
cdef extern from "_dots.h" nogil:
    double* ks_dots_panel(Py_ssize_t d)
    void ks_dots(const double* A, Py_ssize_t m, const double* B, Py_ssize_t n,
                 Py_ssize_t d, double* C, Py_ssize_t ldc, double* panel)

cnp.import_array()

# Every vector path of this module follows the tests' one switch (_simd.pxd).
ks_simd_join(paths_mask())


def row_norms(X, int kernel_type):
    """Squared norms (L1 norms for the Laplacian kernel) of the rows of canonical X."""
    cdef Rows R
    keep = as_rows(X, &R)
    out = np.empty(R.n_rows, dtype=np.float64)
    cdef double[::1] o = out
    cdef Py_ssize_t i
    with nogil:
        for i in range(R.n_rows):
            o[i] = _row_norm(&R, i, kernel_type)
    return out


# ------------------------------------------------------------ kernel matrix

cdef void _rows_block(const Rows* X, const Rows* Y, const KernelParams* kp,
                      const double* nx, const double* ny, double* out,
                      Py_ssize_t i0, Py_ssize_t i1, double* work, bint scatter,
                      Py_ssize_t jb) noexcept nogil:
    """Rows i0..i1 of the output, sweeping Y in blocks of jb rows that stay in
    the L2 cache while every x_i of the group passes over them."""
    cdef Py_ssize_t n_y = Y.n_rows, j0 = 0, j1, i, j
    cdef Query q
    while j0 < n_y:
        j1 = j0 + jb if j0 + jb < n_y else n_y
        for i in range(i0, i1):
            q = _make_query(X, i, nx[i], work, scatter)
            _kernel_block(kp, &q, Y, NULL, j0, j1, ny, out + i * n_y + j0)
            _clear_query(&q, work)
        j0 = j1


cdef int _fill_matrix(const Rows* X, const Rows* Y, const KernelParams* kp,
                      const double* nx, const double* ny, double* out,
                      int n_threads) noexcept nogil:
    """out[i, j] = K(x_i, y_j); returns 0, or -1 when a work vector cannot be had."""
    cdef Py_ssize_t n_x = X.n_rows, n_y = Y.n_rows, nf = X.n_features, i, j, g, i1
    cdef bint scatter = X.is_sparse and (nf <= SCATTER_MAX_FEATURES or not Y.is_sparse)
    cdef double* work = NULL
    cdef int status = 0
    cdef int* status_ptr = &status
    cdef Query q
    cdef int nt = n_threads
    cdef Py_ssize_t chunk
    cdef double cost = _mean_cost(Y)
    # about 512 KB of Y per block, and groups of 8 rows of X per task
    cdef Py_ssize_t jb = <Py_ssize_t>(65536.0 / cost) + 1
    cdef Py_ssize_t group = 8
    cdef Py_ssize_t n_groups = (n_x + group - 1) // group
    if <double>n_x * <double>n_y * cost < PAR_MIN_WORK:
        nt = 1
    chunk = _chunk(n_y, cost, nt)

    if nt == 1 or n_groups >= 2 * nt:
        # Many rows: each thread owns whole groups of output rows and its own
        # work vector.
        with parallel(num_threads=nt):
            work = NULL
            if scatter:
                work = <double*>calloc(nf if nf > 0 else 1, sizeof(double))
                if work == NULL:
                    status_ptr[0] = -1
            for g in prange(n_groups, schedule="dynamic", chunksize=1):
                if scatter and work == NULL:
                    continue
                i1 = (g + 1) * group if (g + 1) * group < n_x else n_x
                _rows_block(X, Y, kp, nx, ny, out, g * group, i1, work, scatter, jb)
            free(work)
        return status

    # Few rows (e.g. one test point against the support vectors): parallel
    # over the columns of each row, one shared work vector.
    if scatter:
        work = <double*>calloc(nf if nf > 0 else 1, sizeof(double))
        if work == NULL:
            return -1
    cdef Py_ssize_t blocks = (n_y + VALUE_BLOCK - 1) // VALUE_BLOCK, b, lo
    chunk = (chunk + VALUE_BLOCK - 1) // VALUE_BLOCK
    for i in range(n_x):
        q = _make_query(X, i, nx[i], work, scatter)
        for b in prange(blocks, schedule="dynamic", chunksize=chunk, num_threads=nt):
            lo = b * VALUE_BLOCK
            _kernel_block(kp, &q, Y, NULL, lo, lo + VALUE_BLOCK if lo + VALUE_BLOCK < n_y else n_y,
                          ny, out + i * n_y + lo)
        _clear_query(&q, work)
    free(work)
    return 0


# Output tiles of the BLAS path. They are fixed, whatever the thread count, so
# every entry comes from the same dgemm call shape: identical bits for any
# n_threads (OpenBLAS's own threading does not promise that).  With
# ``own_dots`` (prediction) the dot products come from ks_dots instead
# (_dots.h): dgemm's value for a row of X can change with the row's place in
# the call, ks_dots' never does, so predicting rows in pieces gives the bits
# of predicting them together.
cdef Py_ssize_t TILE_X = 128
cdef Py_ssize_t TILE_Y = 1024
#: Rows of X per BLAS tile: callers that cut X into blocks use multiples of it.
ROW_TILE = TILE_X


cdef int _fill_matrix_gemm(const Rows* X, const Rows* Y, const KernelParams* kp,
                           const double* nx, const double* ny, double* out,
                           int n_threads, bint own_dots) noexcept nogil:
    """Dense X and Y, dot-product kernels: tiles of single-threaded dgemm (or
    ks_dots), then K."""
    cdef Py_ssize_t n_x = X.n_rows, n_y = Y.n_rows, d = X.n_features
    cdef Py_ssize_t tiles_x = (n_x + TILE_X - 1) // TILE_X
    cdef Py_ssize_t tiles_y = (n_y + TILE_Y - 1) // TILE_Y
    cdef Py_ssize_t t, i, j, i0, j0, tx, ty
    cdef int m_, n_, k_, lda, ldb, ldc
    cdef double one = 1.0, zero = 0.0
    cdef char trans_t = b'T', trans_n = b'N'
    cdef double* c
    cdef double* panel
    cdef int nt = n_threads
    cdef int failed = 0
    if tiles_x * tiles_y < 2:
        nt = 1
    for t in prange(tiles_x * tiles_y, schedule="dynamic", chunksize=1, num_threads=nt):
        i0 = (t // tiles_y) * TILE_X
        j0 = (t % tiles_y) * TILE_Y
        tx = TILE_X if i0 + TILE_X <= n_x else n_x - i0
        ty = TILE_Y if j0 + TILE_Y <= n_y else n_y - j0
        c = out + i0 * n_y + j0
        ldc = <int>n_y
        if own_dots:
            panel = ks_dots_panel(d)
            if panel == NULL:
                failed += 1
                continue
            ks_dots(X.values + i0 * d, tx, Y.values + j0 * d, ty, d, c, ldc, panel)
            free(panel)
        else:
            # Column-major view: C^T[j, i] = sum_k Y[j, k] X[i, k], so C^T = Y^T' X^T.
            m_ = <int>ty
            n_ = <int>tx
            k_ = <int>d
            lda = <int>d
            ldb = <int>d
            dgemm(&trans_t, &trans_n, &m_, &n_, &k_, &one,
                  <double*>(Y.values + j0 * d), &lda, <double*>(X.values + i0 * d), &ldb,
                  &zero, c, &ldc)
        for i in range(tx):
            if kp.kind == RBF:
                for j in range(ty):
                    c[i * ldc + j] = _exponent(kp, nx[i0 + i] + ny[j0 + j] - 2.0 * c[i * ldc + j])
                ks_exp_block(c + i * ldc, ty)
            else:
                for j in range(ty):
                    c[i * ldc + j] = _finish(kp, c[i * ldc + j])
    return failed


def _dots(A, B):
    """A @ B.T through ks_dots on the path the tests allow
    (_simd.vector_paths; the scalar one computes a value at a time with
    fma()): returns (the products, 1 if the AVX2 + FMA path ran else 0).
    For the tests (tests/test_dots.py)."""
    cdef const double[:, ::1] a = np.ascontiguousarray(A, dtype=np.float64)
    cdef const double[:, ::1] b = np.ascontiguousarray(B, dtype=np.float64)
    if a.shape[1] != b.shape[1]:
        raise ValueError("A and B have different widths")
    out = np.zeros((a.shape[0], b.shape[0]))
    cdef double[:, ::1] o = out
    cdef Py_ssize_t d = a.shape[1]
    cdef double* panel
    cdef int used
    if out.size == 0:
        return out, ks_simd(KS_AVX2 | KS_FMA)
    panel = ks_dots_panel(d)
    if panel == NULL:
        raise MemoryError("_dots: no memory for the panel")
    with nogil:
        used = ks_simd(KS_AVX2 | KS_FMA)
        ks_dots(&a[0, 0] if d > 0 else NULL, a.shape[0], &b[0, 0] if d > 0 else NULL,
                b.shape[0], d, &o[0, 0], o.shape[1], panel)
    free(panel)
    return out, used


def _kernel_matrix(X, Y, int kernel_type, int degree, double gamma, double coef0,
                   int n_threads, bint use_blas=False, bint row_independent=False):
    """Dense K(X, Y) for canonical X, Y (validated by kernsolve._kernels); with
    ``row_independent`` (dense operands, use_blas) each row's values do not
    depend on the other rows of X: ks_dots instead of dgemm."""
    cdef Rows RX, RY
    cdef KernelParams kp
    if kernel_traits(kernel_type).base == NO_BASE:
        raise ValueError(f"kernel_matrix does not compute kernel type {kernel_type}")
    keep_x = as_rows(X, &RX)
    keep_y = as_rows(Y, &RY)
    if RX.n_features != RY.n_features:
        raise ValueError(f"X has {RX.n_features} features but Y has {RY.n_features}")
    kp.kind = kernel_type
    kp.degree = degree
    kp.gamma = gamma
    kp.coef0 = coef0
    nx = row_norms(X, kernel_type)
    ny = nx if Y is X else row_norms(Y, kernel_type)
    cdef bint blas = (use_blas and not RX.is_sparse and not RY.is_sparse
            and kernel_traits(kernel_type).blas and RX.n_features < 2**31 - 1
            and RY.n_rows < 2**31 - 1)
    # zeros, not empty: dgemm with beta = 0 then never meets uninitialised NaNs
    out = (np.zeros if blas else np.empty)((RX.n_rows, RY.n_rows), dtype=np.float64)
    if out.size == 0:
        return out
    cdef double* o = <double*>cnp.PyArray_DATA(out)
    cdef const double* pnx = <const double*>cnp.PyArray_DATA(nx)
    cdef const double* pny = <const double*>cnp.PyArray_DATA(ny)
    cdef int status
    if blas and not row_independent:
        load_blas()
    with nogil:
        if blas:
            status = _fill_matrix_gemm(&RX, &RY, &kp, pnx, pny, o, max(1, n_threads),
                                       row_independent)
        else:
            status = _fill_matrix(&RX, &RY, &kp, pnx, pny, o, max(1, n_threads))
    if status != 0:
        raise MemoryError("kernel_matrix: cannot allocate a work vector")
    return out


# ------------------------------------------------ sparse rows, dense Y^T

cdef void _axpy_rows(const Rows* X, const double* Yt, Py_ssize_t n_y,
                     const KernelParams* kp, const double* nx, const double* ny,
                     double* out, Py_ssize_t i0, Py_ssize_t i1) noexcept nogil:
    """Rows i0..i1 of K: each x_i's inner products with every y_j as a sum of
    rows of Y^T, ``<x_i, y_j> = sum_t x_i[k_t] * Yt[k_t, j]`` over x_i's
    entries in index order (one multiply, then one add), then K."""
    cdef Py_ssize_t j0 = 0, j1, i, j, m
    cdef const double* v
    cdef const int32_t* ix
    cdef double* o
    while j0 < n_y:
        j1 = j0 + AXPY_COLS if j0 + AXPY_COLS < n_y else n_y
        for i in range(i0, i1):
            o = out + i * n_y
            for j in range(j0, j1):
                o[j] = 0.0
            m = row_ptr(X, i, &v, &ix)
            ks_axpy_rows(o, Yt, n_y, v, ix, m, j0, j1)
            if kp.kind == RBF:
                for j in range(j0, j1):
                    o[j] = _exponent(kp, nx[i] + ny[j] - 2.0 * o[j])
                ks_exp_block(o + j0, j1 - j0)
            else:
                for j in range(j0, j1):
                    o[j] = _finish(kp, o[j])
        j0 = j1


def _kernel_matrix_transposed(X, const double[:, ::1] Yt, const double[::1] ny,
                              int kernel_type, int degree, double gamma, double coef0,
                              int n_threads):
    """K(X, Y) for canonical CSR X and a sparse Y given as Y^T, dense
    (n_features x n_y), with Y's squared row norms ``ny``.

    For sparse rows against support vectors that stay sparse (a9a's binary
    features): each entry of x_i adds a scaled row of Y^T to x_i's row of
    products, a loop over contiguous memory, instead of one gather per entry
    of every y_j.  Each value depends on x_i and y_j only (rows in groups of
    8, any thread): the bits do not depend on the thread count or the rows
    computed with it."""
    cdef Rows RX
    cdef KernelParams kp
    cdef Py_ssize_t n_x, n_y = Yt.shape[1], n_groups, g, i1
    cdef int nt = max(1, n_threads)
    if kernel_type not in (LINEAR, POLY, RBF, SIGMOID):
        raise ValueError(f"no transposed kernel matrix for kernel type {kernel_type}")
    keep_x = as_rows(X, &RX)
    if not RX.is_sparse or RX.n_features != Yt.shape[0] or ny.shape[0] != n_y:
        raise ValueError("_kernel_matrix_transposed: X must be CSR as wide as Y")
    kp.kind = kernel_type
    kp.degree = degree
    kp.gamma = gamma
    kp.coef0 = coef0
    nx = row_norms(X, kernel_type)
    n_x = RX.n_rows
    out = np.empty((n_x, n_y), dtype=np.float64)
    if out.size == 0:
        return out
    cdef double* o = <double*>cnp.PyArray_DATA(out)
    cdef const double* pnx = <const double*>cnp.PyArray_DATA(nx)
    cdef const double* pyt = &Yt[0, 0]
    cdef const double* pny = &ny[0]
    n_groups = (n_x + 7) // 8
    if n_groups < 2:
        nt = 1
    with nogil, parallel(num_threads=nt):
        for g in prange(n_groups, schedule="dynamic", chunksize=1):
            i1 = (g + 1) * 8 if (g + 1) * 8 < n_x else n_x
            _axpy_rows(&RX, pyt, n_y, &kp, pnx, pny, o, g * 8, i1)
    return out

