"""The dense kernel matrix K(X, Y): kernsolve.kernel_matrix and prediction.

Rows of X are computed in groups that sweep Y in blocks sized for the L2
cache, one work vector per thread; a single row of X (one test point against
the support vectors) is computed in parallel over Y instead.  Dense operands
with a dot-product kernel may take the BLAS path: single-threaded dgemm on
fixed output tiles, then K.  Kernel values come from ``_kernel_values.pxd``
(the same ``_pair`` as the row cache) and the tiles do not depend on the
thread count, so results are bit-identical for any ``n_threads``.
"""
from cython.parallel cimport prange, parallel
from libc.stdint cimport int32_t, uint16_t, uint64_t
from libc.stdlib cimport calloc, free

cimport numpy as cnp
import numpy as np

from cpython.pycapsule cimport PyCapsule_GetName, PyCapsule_GetPointer

from ._rows cimport Rows, as_rows, row_ptr, row_bits
from ._kernel cimport KernelParams, kernel_traits, NO_BASE, LINEAR, POLY, RBF, SIGMOID
from ._kernel_values cimport (
    SCATTER_MAX_FEATURES, PAR_MIN_WORK, VALUE_BLOCK, Query, _finish, _exponent, _row_norm,
    _make_query, _clear_query, _kernel_block, _chunk, _mean_cost, ks_exp_block, ks_simd,
    ks_simd_baseline, KS_AVX2, KS_FMA)

# Dot products of dense rows whose bits do not depend on the other rows of the call.
cdef extern from "_dots.h" nogil:
    double* ks_dots_panel(Py_ssize_t d)
    void ks_dots(const double* A, Py_ssize_t m, const double* B, Py_ssize_t n,
                 Py_ssize_t d, double* C, Py_ssize_t ldc, double* panel)

cnp.import_array()

# scipy's BLAS dgemm (scipy.linalg.cython_blas), fetched at its first use: a
# cimport would import scipy.linalg (about 0.15 s) whenever this module loads,
# and only the BLAS path of the dense kernel matrix calls it (prediction's dot
# products are ks_dots, the sparse paths the core's loops).
ctypedef void (*dgemm_t)(char* transa, char* transb, int* m, int* n, int* k,
                         double* alpha, double* a, int* lda, double* b, int* ldb,
                         double* beta, double* c, int* ldc) noexcept nogil
cdef dgemm_t dgemm = NULL


cdef int _load_dgemm() except -1:
    global dgemm
    if dgemm is NULL:
        from scipy.linalg import cython_blas
        capsule = cython_blas.__pyx_capi__["dgemm"]
        dgemm = <dgemm_t>PyCapsule_GetPointer(capsule, PyCapsule_GetName(capsule))
    return 0


def load_blas():
    """Load scipy's BLAS (and fetch its dgemm) now: before a BLAS thread limit
    is set (kernsolve._threads.one_blas_thread), which reaches only the BLAS
    libraries loaded when it is made."""
    _load_dgemm()


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


def _dots(A, B, int path=-1):
    """A @ B.T through ks_dots on ``path`` (0 one value at a time with fma(),
    1 AVX2 + FMA where the CPU has it, -1 the CPU's choice): returns (the
    products, the path used).  For the tests (tests/test_dots.py)."""
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
        return out, ks_simd(KS_AVX2 | KS_FMA) if path != 0 else 0
    panel = ks_dots_panel(d)
    if panel == NULL:
        raise MemoryError("_dots: no memory for the panel")
    with nogil:
        ks_simd_baseline(path == 0)
        used = ks_simd(KS_AVX2 | KS_FMA)
        ks_dots(&a[0, 0] if d > 0 else NULL, a.shape[0], &b[0, 0] if d > 0 else NULL,
                b.shape[0], d, &o[0, 0], o.shape[1], panel)
        ks_simd_baseline(0)
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
        _load_dgemm()
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

# Columns of the output (rows of Y) per sweep: the slices of Y^T that one
# sparse row touches then stay in the L2 cache for the rows of its group.
cdef Py_ssize_t AXPY_COLS = 2048

cdef extern from *:
    """
    #include <stddef.h>
    #include <stdint.h>
    /* o[j] += a[t] * Y^T[ix[t], j] for t = 0 .. m-1 in order, j in [j0, j1):
       four entries per pass over o, added one after the other
       (((o + a0 y0) + a1 y1) + a2 y2) + a3 y3, the order of four passes, so
       o is loaded and stored once per four entries.  A multiply then an add,
       never fused: the AVX2 clone (chosen at load time where the CPU has it)
       is built without FMA and gives the bits of the baseline one. */
    #if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
    __attribute__((target_clones("avx2", "default")))
    #endif
    static void ks_axpy_rows(double *o, const double *Yt, ptrdiff_t n_y,
                             const double *a, const int32_t *ix, ptrdiff_t m,
                             ptrdiff_t j0, ptrdiff_t j1) {
        ptrdiff_t t = 0, j;
        for (; t + 4 <= m; t += 4) {
            const double a0 = a[t], a1 = a[t + 1], a2 = a[t + 2], a3 = a[t + 3];
            const double *y0 = Yt + (ptrdiff_t)ix[t] * n_y;
            const double *y1 = Yt + (ptrdiff_t)ix[t + 1] * n_y;
            const double *y2 = Yt + (ptrdiff_t)ix[t + 2] * n_y;
            const double *y3 = Yt + (ptrdiff_t)ix[t + 3] * n_y;
            for (j = j0; j < j1; j++) {
                double s = o[j] + a0 * y0[j];
                s = s + a1 * y1[j];
                s = s + a2 * y2[j];
                o[j] = s + a3 * y3[j];
            }
        }
        for (; t < m; t++) {
            const double at = a[t];
            const double *y = Yt + (ptrdiff_t)ix[t] * n_y;
            for (j = j0; j < j1; j++)
                o[j] = o[j] + at * y[j];
        }
    }
    """
    void ks_axpy_rows(double* o, const double* Yt, Py_ssize_t n_y, const double* a,
                      const int32_t* ix, Py_ssize_t m, Py_ssize_t j0,
                      Py_ssize_t j1) noexcept nogil


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


# Rows of K whose sums one task accumulates side by side (see expansion_sums).
cdef enum:
    SUM_ROWS = 8


cdef void _sum_rows(const double* K, Py_ssize_t l, Py_ssize_t r0, Py_ssize_t g,
                    const cnp.intp_t* columns, const double* coefs, Py_ssize_t m,
                    double* out, Py_ssize_t n_values, double* acc) noexcept nogil:
    """expansion_sums for rows r0 .. r0 + g - 1 (g <= SUM_ROWS).

    The sums of the g rows are kept side by side (acc[v * SUM_ROWS + t]: value
    v of row r0 + t), so one support vector's product is added to g
    independent sums at once instead of each sum waiting for its previous
    add; every sum still receives the same products in the same order."""
    cdef Py_ssize_t s, q, t, v
    cdef double kv[SUM_ROWS]
    cdef double c
    cdef double* a
    for v in range(n_values):
        for t in range(SUM_ROWS):
            acc[v * SUM_ROWS + t] = out[(r0 + t) * n_values + v] if t < g else 0.0
    for s in range(l):
        for t in range(SUM_ROWS):
            kv[t] = K[(r0 + t) * l + s] if t < g else 0.0
        for q in range(m):
            c = coefs[s * m + q]
            a = acc + columns[s * m + q] * SUM_ROWS
            for t in range(SUM_ROWS):
                a[t] = a[t] + c * kv[t]
    for v in range(n_values):
        for t in range(g):
            out[(r0 + t) * n_values + v] = acc[v * SUM_ROWS + t]


def expansion_sums(const double[:, ::1] K, const cnp.intp_t[:, ::1] columns,
                   const double[:, ::1] coefs, double[:, ::1] out, int n_threads):
    """``out[r, columns[s, q]] += coefs[s, q] * K[r, s]`` for s = 0, 1, ... in order.

    LIBSVM's ``svm_predict_values``: each decision value is a running sum, in
    support-vector order, of products rounded one by one (a multiply, then an
    add: the baseline x86-64 target has no fused multiply-add to contract them
    into).  Groups of rows run in parallel and each row's sums are one
    thread's, computed in the same order whatever the group, so the bits
    depend neither on the thread count nor on BLAS.  The caller checks that
    every column index is within ``out``.
    """
    cdef Py_ssize_t n = K.shape[0], l = K.shape[1], m = columns.shape[1]
    cdef Py_ssize_t n_values = out.shape[1], n_groups, gi, r0
    cdef double* acc
    cdef int failed = 0
    if columns.shape[0] != l or coefs.shape[0] != l or coefs.shape[1] != m \
            or out.shape[0] != n:
        raise ValueError("expansion_sums: the shapes of K, columns, coefs and out disagree")
    if n == 0 or l == 0 or m == 0:
        return
    n_groups = (n + SUM_ROWS - 1) // SUM_ROWS
    with nogil, parallel(num_threads=n_threads if n_threads > 1 and n_groups > 1 else 1):
        acc = <double*>calloc(n_values * SUM_ROWS, sizeof(double))
        for gi in prange(n_groups, schedule="static"):
            if acc == NULL:
                failed += 1
                continue
            r0 = gi * SUM_ROWS
            _sum_rows(&K[0, 0], l, r0, min(SUM_ROWS, n - r0), &columns[0, 0],
                      &coefs[0, 0], m, &out[0, 0], n_values, acc)
        free(acc)
    if failed:
        raise MemoryError("expansion_sums: cannot allocate the sums of a group of rows")


# ------------------------------------ decision sums without the kernel block
#
# expansion_sums over K(X, SV) without K: each task computes a tile of kernel
# values for eight test rows and a run of support vectors into a buffer that
# stays in the cache, finishes them (exp) and adds them to its rows' sums at
# once, instead of writing a block of K to memory and reading it back.  Each
# kernel value is made by the operations of the block path (ks_dots' fma
# chain or ks_axpy_rows, then the same _exponent and ks_exp), and each sum
# receives the same products in the same support-vector order: the decision
# values have the bits of kernel blocks + expansion_sums, for any thread count.

from libc.stdlib cimport malloc
from ._kernel_values cimport _dot_dense, ks_exp

cdef extern from "_dots.h" nogil:
    void ks_dots_rows8(const double* P, const double* B, Py_ssize_t n, Py_ssize_t d,
                       double* Ct)

cdef extern from *:
    """
    /* acc[columns[s, q] * 8 + t] += coefs[s, q] * Kt[s * 8 + t] for s = 0 .. ns-1,
       q = 0 .. m-1 in order, t = 0 .. 7: one support vector's products added to
       the sums of eight rows side by side (Kt is support-vector-major).  A
       multiply then an add, never fused: the AVX2 clone is built without FMA
       and gives the bits of the baseline one and of expansion_sums. With a
       single decision value the eight sums stay in registers. */
    #if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
    __attribute__((target_clones("avx2", "default")))
    #endif
    static void ks_sums8(double *restrict acc, const double *restrict Kt, ptrdiff_t ns,
                         const ptrdiff_t *restrict columns, const double *restrict coefs,
                         ptrdiff_t m, ptrdiff_t n_values) {
        ptrdiff_t s, q, t;
        if (n_values == 1) {
            double a[8];
            for (t = 0; t < 8; t++)
                a[t] = acc[t];
            for (s = 0; s < ns; s++)
                for (q = 0; q < m; q++) {
                    const double c = coefs[s * m + q];
                    for (t = 0; t < 8; t++)
                        a[t] = a[t] + c * Kt[s * 8 + t];
                }
            for (t = 0; t < 8; t++)
                acc[t] = a[t];
            return;
        }
        for (s = 0; s < ns; s++)
            for (q = 0; q < m; q++) {
                const double c = coefs[s * m + q];
                double *restrict a = acc + columns[s * m + q] * 8;
                for (t = 0; t < 8; t++)
                    a[t] = a[t] + c * Kt[s * 8 + t];
            }
    }

    /* v[s * 8 + t] = -gamma * max((nx[t] + ny[s]) - 2 v[s * 8 + t], 0): _exponent's
       operations on the inner products of a support-vector-major tile (the
       RBF kernel's exponents), without a fused multiply-add in either clone. */
    #if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
    __attribute__((target_clones("avx2", "default")))
    #endif
    static void ks_rbf_exponents8(double *restrict v, ptrdiff_t ns, const double *restrict nx,
                                  const double *restrict ny, double gamma) {
        const double neg_gamma = -gamma;
        ptrdiff_t s, t;
        for (s = 0; s < ns; s++)
            for (t = 0; t < 8; t++) {
                double base = (nx[t] + ny[s]) - 2.0 * v[s * 8 + t];
                if (base < 0.0)
                    base = 0.0;
                v[s * 8 + t] = neg_gamma * base;
            }
    }

    /* For a tile of integer-valued rows (binary features): v[s * 8 + t] =
       (nx[t] + ny[s]) - 2 v[s * 8 + t], the RBF kernel's base, which is then an
       exact integer; returns whether every base is an integer in [0, n_table),
       an index of the table of ks_exp(-gamma * b). */
    #if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
    __attribute__((target_clones("avx2", "default")))
    #endif
    static int ks_rbf_bases8(double *restrict v, ptrdiff_t ns, const double *restrict nx,
                             const double *restrict ny, ptrdiff_t n_table) {
        ptrdiff_t s, t;
        const double top = (double)n_table;
        long bad = 0;
        for (s = 0; s < ns; s++)
            for (t = 0; t < 8; t++) {
                double base = (nx[t] + ny[s]) - 2.0 * v[s * 8 + t];
                /* out of range or NaN: index 0.5, never equal to its floor */
                double index = (base >= 0.0 && base < top) ? base : 0.5;
                v[s * 8 + t] = base;
                bad |= __builtin_floor(index) != index;
            }
        return !bad;
    }

    /* v[i] = table[v[i]] for the indices of ks_rbf_bases8. */
    #if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
    __attribute__((target_clones("avx2", "default")))
    #endif
    static void ks_table_values(double *restrict v, ptrdiff_t n, const double *restrict table) {
        ptrdiff_t i;
        for (i = 0; i < n; i++)
            v[i] = table[(int)v[i]];
    }
    """
    int ks_rbf_bases8(double* v, Py_ssize_t ns, const double* nx, const double* ny,
                      Py_ssize_t n_table) noexcept nogil
    void ks_table_values(double* v, Py_ssize_t n, const double* table) noexcept nogil
    void ks_sums8(double* acc, const double* Kt, Py_ssize_t ns, const Py_ssize_t* columns,
                  const double* coefs, Py_ssize_t m, Py_ssize_t n_values) noexcept nogil
    void ks_rbf_exponents8(double* v, Py_ssize_t ns, const double* nx, const double* ny,
                           double gamma) noexcept nogil


cdef enum:
    # Rows per task of the dense path (at most; fewer for wide rows): the
    # support vectors of one tile are read from the cache by all of them.
    DEC_GROUP = 128
    # Support vectors per tile of the dense path (at most): 8 x 512 values.
    DEC_TILE = 512

# Bytes of support vectors per tile and of panelled rows per task (dense path).
cdef Py_ssize_t DEC_SV_BYTES = 256 * 1024
cdef Py_ssize_t DEC_PANEL_BYTES = 1024 * 1024
# 0/1 rows as bit sets (_bits.h): the RBF values of a tile by popcounts.
cdef extern from "_bits.h" nogil:
    void ks_bits_tile8(const uint64_t* x8, const uint64_t* y, Py_ssize_t words,
                       Py_ssize_t ns, const double* table, double* tile)


# Largest table of RBF values for integer squared distances (8 bytes each).
cdef Py_ssize_t RBF_TABLE_MAX = 1 << 16


cdef void _finish_tile(const KernelParams* kp, double* tile, Py_ssize_t ns,
                       const double* nx, const double* ny) noexcept nogil:
    """Inner products (support-vector-major, 8 rows) -> kernel values, by the
    expressions of _fill_matrix_gemm and _axpy_rows."""
    cdef Py_ssize_t s
    if kp.kind == RBF:
        ks_rbf_exponents8(tile, ns, nx, ny, kp.gamma)
        ks_exp_block(tile, ns * 8)
    else:
        for s in range(ns * 8):
            tile[s] = _finish(kp, tile[s])


cdef void _load_sums(double* acc, const double* out, Py_ssize_t r0, Py_ssize_t r1,
                     Py_ssize_t n_values) noexcept nogil:
    """acc[v * 8 + t] = out[r0 + t, v] (0 past r1)."""
    cdef Py_ssize_t v, t
    for v in range(n_values):
        for t in range(8):
            acc[v * 8 + t] = out[(r0 + t) * n_values + v] if r0 + t < r1 else 0.0


cdef void _store_sums(const double* acc, double* out, Py_ssize_t r0, Py_ssize_t r1,
                      Py_ssize_t n_values) noexcept nogil:
    cdef Py_ssize_t v, t
    for t in range(min(8, r1 - r0)):
        for v in range(n_values):
            out[(r0 + t) * n_values + v] = acc[v * 8 + t]


cdef void _dense_group(const Rows* X, Py_ssize_t r0, Py_ssize_t r1, const double* Y,
                       Py_ssize_t n_y, Py_ssize_t d, Py_ssize_t jt, const KernelParams* kp,
                       const double* ny, const cnp.intp_t* columns, const double* coefs,
                       Py_ssize_t m, double* out, Py_ssize_t n_values, double* panel,
                       double* row, double* nx, double* tile, double* acc) noexcept nogil:
    """Decision sums of rows r0..r1 against dense support vectors Y: the rows
    panelled eight by eight (dense; their norms as row_norms gives them for a
    dense row), then tiles of jt support vectors, each read by every panel."""
    cdef Py_ssize_t n_sub = (r1 - r0 + 7) // 8, sub, t, k, u, i, mm, j0, jw
    cdef const double* v
    cdef const double* src
    cdef const int32_t* ix
    cdef double* P
    for sub in range(n_sub):
        P = panel + sub * 8 * d
        for t in range(8):
            i = r0 + sub * 8 + t
            if i >= r1:
                nx[sub * 8 + t] = 0.0
                for k in range(d):
                    P[k * 8 + t] = 0.0
                continue
            mm = row_ptr(X, i, &v, &ix)
            src = v
            if ix != NULL:
                for u in range(mm):
                    row[ix[u]] = v[u]
                src = row
            nx[sub * 8 + t] = _dot_dense(src, src, d)
            for k in range(d):
                P[k * 8 + t] = src[k]
            if ix != NULL:
                for u in range(mm):
                    row[ix[u]] = 0.0
        _load_sums(acc + sub * 8 * n_values, out, r0 + sub * 8, r1, n_values)
    j0 = 0
    while j0 < n_y:
        jw = jt if j0 + jt <= n_y else n_y - j0
        for sub in range(n_sub):
            ks_dots_rows8(panel + sub * 8 * d, Y + j0 * d, jw, d, tile)
            _finish_tile(kp, tile, jw, nx + sub * 8, ny + j0)
            ks_sums8(acc + sub * 8 * n_values, tile, jw, <const Py_ssize_t*>columns + j0 * m,
                     coefs + j0 * m, m, n_values)
        j0 += jw
    for sub in range(n_sub):
        _store_sums(acc + sub * 8 * n_values, out, r0 + sub * 8, r1, n_values)


cdef void _transposed_group(const Rows* X, Py_ssize_t r0, Py_ssize_t r1, const double* Yt,
                            Py_ssize_t n_y, const KernelParams* kp, const double* nx,
                            const double* ny, const cnp.intp_t* columns,
                            const double* coefs, Py_ssize_t m, double* out,
                            Py_ssize_t n_values, double* rows, double* tile,
                            double* acc, const double* table,
                            Py_ssize_t n_table, const uint64_t* ybits,
                            Py_ssize_t words) noexcept nogil:
    """Decision sums of rows r0..r0+8 against sparse support vectors given as
    Y^T: _axpy_rows' products, AXPY_COLS support vectors at a time, turned
    support-vector-major for the sums.  With ``ybits`` (0/1 rows and support
    vectors as bit sets, RBF): the tile's values are table[|x XOR y|], the
    squared distance the products give exactly, so the same bits."""
    cdef Py_ssize_t j0 = 0, jw, t, s, mm
    cdef double nx8[8]
    cdef uint64_t xbits[8 * 16]
    cdef const double* v
    cdef const int32_t* ix
    cdef double* o
    for t in range(8):
        nx8[t] = nx[r0 + t] if r0 + t < r1 else 0.0
        if ybits != NULL:
            if r0 + t < r1:
                row_bits(X, r0 + t, xbits + t * words, words)
            else:
                for s in range(words):
                    xbits[t * words + s] = 0
    _load_sums(acc, out, r0, r1, n_values)
    while j0 < n_y:
        jw = AXPY_COLS if j0 + AXPY_COLS <= n_y else n_y - j0
        if ybits != NULL:
            ks_bits_tile8(xbits, ybits + j0 * words, words, jw, table, tile)
            ks_sums8(acc, tile, jw, <const Py_ssize_t*>columns + j0 * m, coefs + j0 * m, m,
                     n_values)
            j0 += jw
            continue
        for t in range(8):
            o = rows + t * AXPY_COLS
            for s in range(jw):
                o[s] = 0.0
            if r0 + t < r1:
                mm = row_ptr(X, r0 + t, &v, &ix)
                ks_axpy_rows(o, Yt + j0, n_y, v, ix, mm, 0, jw)
        for s in range(jw):
            for t in range(8):
                tile[s * 8 + t] = rows[t * AXPY_COLS + s]
        if table == NULL:
            _finish_tile(kp, tile, jw, nx8, ny + j0)
        elif ks_rbf_bases8(tile, jw, nx8, ny + j0, n_table):
            ks_table_values(tile, jw * 8, table)
        else:       # (not expected for integer rows) the bases as _finish_tile's
            for s in range(jw * 8):
                tile[s] = _exponent(kp, tile[s])
            ks_exp_block(tile, jw * 8)
        ks_sums8(acc, tile, jw, <const Py_ssize_t*>columns + j0 * m, coefs + j0 * m, m,
                 n_values)
        j0 += jw
    _store_sums(acc, out, r0, r1, n_values)


def _baseline_paths(bint on):
    """For the tests: hold this module's hand-written vector paths (ks_dots,
    ks_dots_rows8, ks_exp_block) to their baseline spellings (on) or let the
    CPU choose (off)."""
    ks_simd_baseline(on)


def decision_sums(X, Y, int kernel_type, int degree, double gamma, double coef0,
                  const cnp.intp_t[:, ::1] columns, const double[:, ::1] coefs,
                  double[:, ::1] out, int n_threads, transposed=None, bint integral=False,
                  bint binary=False):
    """``expansion_sums(K(X, Y), columns, coefs, out)`` without K, same bits.

    Y dense (C-order; X dense or CSR, made dense eight rows at a time): the
    inner products of ``_kernel_matrix(..., use_blas=True,
    row_independent=True)`` (ks_dots' chains).  ``transposed`` = (Y^T dense,
    Y's squared row norms), X CSR: those of ``_kernel_matrix_transposed``;
    with ``integral`` (every value of X and Y an integer: binary features) the
    RBF values come from a table of ``ks_exp(-gamma * b)`` for the integer
    squared distances b (the same bits), and with ``binary`` too (every value
    0 or 1) the distances are popcounts of bit sets (_bits.h).
    The caller checks every column index against ``out``.
    """
    cdef Rows RX, RY
    cdef KernelParams kp
    cdef Py_ssize_t n, n_y, d, m = columns.shape[1], n_values = out.shape[1]
    cdef Py_ssize_t group, jt, n_groups, g, r0
    cdef const double[:, ::1] Yt
    cdef const double[::1] nyv
    cdef const double* py
    cdef double* panel
    cdef double* row
    cdef double* nxg
    cdef double* tile
    cdef double* acc
    cdef int failed = 0, nt
    if kernel_type not in (LINEAR, POLY, RBF, SIGMOID):
        raise ValueError(f"decision_sums: no fused path for kernel type {kernel_type}")
    keep_x = as_rows(X, &RX)
    n = RX.n_rows
    kp.kind = kernel_type
    kp.degree = degree
    kp.gamma = gamma
    kp.coef0 = coef0
    if transposed is not None:
        Yt, nyv = transposed
        n_y, d = Yt.shape[1], Yt.shape[0]
        if not RX.is_sparse or RX.n_features != d or nyv.shape[0] != n_y:
            raise ValueError("decision_sums: X must be CSR as wide as Y")
        nx = row_norms(X, kernel_type)
    else:
        keep_y = as_rows(Y, &RY)
        if RY.is_sparse or RY.n_features != RX.n_features:
            raise ValueError("decision_sums: Y must be dense and as wide as X")
        n_y, d = RY.n_rows, RY.n_features
        ny = row_norms(Y, kernel_type)
        nyv = ny
        nx = None
    if columns.shape[0] != n_y or coefs.shape[0] != n_y or coefs.shape[1] != m \
            or out.shape[0] != n:
        raise ValueError("decision_sums: the shapes of X, Y, columns, coefs and out disagree")
    if n == 0 or n_y == 0 or m == 0:
        return
    cdef const double* pny = &nyv[0]
    cdef double* po = &out[0, 0]
    cdef const cnp.intp_t* pc = &columns[0, 0]
    cdef const double* pk = &coefs[0, 0]
    cdef const double* pnx
    cdef const double* ptable = NULL
    cdef Py_ssize_t n_table = 0, b, words = (d + 63) // 64, k, j
    cdef const uint64_t* pybits = NULL
    cdef uint64_t[::1] ybits
    if transposed is not None:
        pnx = <const double*>cnp.PyArray_DATA(nx)
        py = &Yt[0, 0]
        if integral and kernel_type == RBF:
            # integer rows: every base is an integer of at most
            # (|x| + |y|)^2 <= 2 (|x|^2 + |y|^2)
            bound = 2.0 * (float(nx.max()) + float(np.max(nyv))) + 1.0
            if bound <= RBF_TABLE_MAX:
                n_table = int(bound)
                table = np.empty(n_table)
                for b in range(n_table):
                    table[b] = ks_exp(-gamma * <double>b)
                ptable = <const double*>cnp.PyArray_DATA(table)
                # 0/1 rows and support vectors, at most 16 words: bit sets
                # (|x XOR y| <= |x| + |y| < n_table: always in the table)
                if binary and 0 < words <= 16:
                    ybits = np.zeros(n_y * words, dtype=np.uint64)
                    for k in range(d):
                        for j in range(n_y):
                            if Yt[k, j] != 0.0:
                                ybits[j * words + (k >> 6)] |= (<uint64_t>1) << (k & 63)
                    pybits = &ybits[0]
        n_groups = (n + 7) // 8
        nt = n_threads if n_threads > 1 and n_groups > 1 else 1
        with nogil, parallel(num_threads=nt):
            tile = <double*>malloc(8 * AXPY_COLS * sizeof(double))
            panel = <double*>malloc(8 * AXPY_COLS * sizeof(double))
            acc = <double*>malloc(8 * n_values * sizeof(double))
            for g in prange(n_groups, schedule="dynamic", chunksize=1):
                if tile == NULL or panel == NULL or acc == NULL:
                    failed += 1
                    continue
                r0 = g * 8
                _transposed_group(&RX, r0, min(r0 + 8, n), py, n_y, &kp, pnx, pny, pc, pk,
                                  m, po, n_values, panel, tile, acc, ptable, n_table,
                                  pybits, words)
            free(tile)
            free(panel)
            free(acc)
    else:
        py = RY.values
        group = max(8, min(<Py_ssize_t>DEC_GROUP, DEC_PANEL_BYTES // (64 * max(d, 1)) * 8))
        jt = max(4, min(<Py_ssize_t>DEC_TILE, DEC_SV_BYTES // (32 * max(d, 1)) * 4))
        n_groups = (n + group - 1) // group
        nt = n_threads if n_threads > 1 and n_groups > 1 else 1
        with nogil, parallel(num_threads=nt):
            panel = <double*>malloc(group * max(d, 1) * sizeof(double))
            row = <double*>calloc(max(d, 1), sizeof(double))
            nxg = <double*>malloc(group * sizeof(double))
            tile = <double*>malloc(8 * jt * sizeof(double))
            acc = <double*>malloc(group * n_values * sizeof(double))
            for g in prange(n_groups, schedule="dynamic", chunksize=1):
                if panel == NULL or row == NULL or nxg == NULL or tile == NULL or acc == NULL:
                    failed += 1
                    continue
                r0 = g * group
                _dense_group(&RX, r0, min(r0 + group, n), py, n_y, d, jt, &kp, pny, pc, pk,
                             m, po, n_values, panel, row, nxg, tile, acc)
            free(panel)
            free(row)
            free(nxg)
            free(tile)
            free(acc)
    if failed:
        raise MemoryError("decision_sums: cannot allocate a task's buffers")


# float32 -> float16 for K(X, centres) stored in float16 (--precision half).
cdef extern from "_half.h" nogil:
    int ks_float_to_half(const float* src, uint16_t* dst, Py_ssize_t n)


def float_to_half(F):
    """float32 array -> a new float16 array of its shape, rounded to nearest
    even: F16C without the GIL where the CPU has it, else numpy's cast (same bits)."""
    out = np.empty(F.shape, dtype=np.float16)
    cdef const float[::1] src = np.ascontiguousarray(F, dtype=np.float32).reshape(-1)
    cdef uint16_t[::1] dst = out.reshape(-1).view(np.uint16)
    cdef int done = 0
    if src.shape[0]:
        with nogil:
            done = ks_float_to_half(&src[0], &dst[0], src.shape[0])
    if not done:
        out[...] = F
    return out


cdef extern from "_half_products.h" nogil:
    void ks_half_products(const uint16_t* K, Py_ssize_t rows, Py_ssize_t p, const float* u,
                          Py_ssize_t c, const float* v, float* out, float* t)
    void ks_simd_baseline(int on)


def half_products(H, u, V, out, bint baseline=False):
    """One block's share of a pass over K(X, centres) kept in float16: ``t = H
    u^T + V`` (u of shape (c, p), or None: t = V; V of shape (rows, c), or
    None) and ``out += (H^T t)^T`` (out: (c, p) float32, C-contiguous), in one
    read of H's rows without the GIL (``_half_products.h``: the same bits on
    every CPU; ``baseline`` takes the scalar path, for the tests).  Returns
    t, (rows, c) float32."""
    cdef const uint16_t[:, ::1] K = np.ascontiguousarray(H).view(np.uint16)
    cdef Py_ssize_t rows = K.shape[0], p = K.shape[1]
    cdef float[:, ::1] o = out
    cdef Py_ssize_t c = o.shape[0]
    if o.shape[1] != p:
        raise ValueError("half_products: out must be (c, p) with H's p columns")
    if u is None and V is None:
        raise ValueError("half_products: u or V is needed")
    cdef const float[:, ::1] uu = u if u is not None else np.zeros((c, p), np.float32)
    cdef const float[:, ::1] vv = V if V is not None else np.zeros((rows, c), np.float32)
    if uu.shape[0] != c or uu.shape[1] != p or vv.shape[0] != rows or vv.shape[1] != c:
        raise ValueError("half_products: u must be (c, p) and V (rows, c)")
    t = np.empty((rows, c), dtype=np.float32)
    cdef float[:, ::1] tt = t
    cdef const float* up = &uu[0, 0] if (u is not None and p > 0) else NULL
    cdef const float* vp = &vv[0, 0] if (V is not None and c > 0 and rows > 0) else NULL
    if rows > 0 and p > 0 and c > 0:
        with nogil:
            if baseline:
                ks_simd_baseline(1)
            ks_half_products(&K[0, 0], rows, p, up, c, vp, &o[0, 0], &tt[0, 0])
            if baseline:
                ks_simd_baseline(0)
    else:
        t[...] = 0 if V is None else V
    return t


# scipy's dtrsm and dsyrk without the GIL, for the tasks of a thread pool:
# scipy.linalg's own wrappers (solve_triangular, blas.dsyrk, ...) hold the GIL
# through the call, so two tasks on the pool ran one after the other (two
# dsyrk of 512 x 3000 at once took twice one's time; numpy's matmul, which
# releases it, took the same).  Fetched at first use, as dgemm above.
ctypedef void (*dtrsm_t)(char* side, char* uplo, char* transa, char* diag, int* m, int* n,
                         double* alpha, double* a, int* lda, double* b,
                         int* ldb) noexcept nogil
ctypedef void (*dsyrk_t)(char* uplo, char* trans, int* n, int* k, double* alpha, double* a,
                         int* lda, double* beta, double* c, int* ldc) noexcept nogil
cdef dtrsm_t dtrsm = NULL
cdef dsyrk_t dsyrk = NULL


cdef int _load_level3() except -1:
    global dtrsm, dsyrk
    if dtrsm is NULL or dsyrk is NULL:
        from scipy.linalg import cython_blas
        capsule = cython_blas.__pyx_capi__["dtrsm"]
        dtrsm = <dtrsm_t>PyCapsule_GetPointer(capsule, PyCapsule_GetName(capsule))
        capsule = cython_blas.__pyx_capi__["dsyrk"]
        dsyrk = <dsyrk_t>PyCapsule_GetPointer(capsule, PyCapsule_GetName(capsule))
    return 0


def solve_upper(U, B, bint transpose=False):
    """X with ``U X = B`` (or ``U^T X = B``) for U upper triangular (n x n,
    float64, C or Fortran order; its upper triangle is read) and B (n x m):
    BLAS dtrsm without the GIL.  Returns X, a new Fortran-ordered array."""
    _load_level3()
    cdef bint fortran = U.flags.f_contiguous
    if not (fortran or U.flags.c_contiguous) or U.dtype != np.float64 or U.ndim != 2 \
            or U.shape[0] != U.shape[1] or B.shape[0] != U.shape[0]:
        raise ValueError("solve_upper: U must be a contiguous square float64 array with "
                         "B's rows")
    X = np.array(B, dtype=np.float64, order="F", copy=True)
    cdef double[::1, :] x = X
    cdef const double[:, :] u = U
    cdef int n = X.shape[0], m = X.shape[1]
    cdef double one = 1.0
    # in C order the memory of U is U^T in Fortran order: lower triangular
    cdef char side = b'L', diag = b'N'
    cdef char uplo = b'U' if fortran else b'L'
    cdef char trans = (b'T' if transpose else b'N') if fortran else \
        (b'N' if transpose else b'T')
    if n > 0 and m > 0:
        with nogil:
            dtrsm(&side, &uplo, &trans, &diag, &n, &m, &one, <double*>&u[0, 0], &n,
                  &x[0, 0], &n)
    return X


def add_gram_upper(S, W):
    """``S += W^T W`` in S's upper triangle (S: q x q Fortran-ordered float64,
    in place; W: k x q, Fortran-ordered float64): BLAS dsyrk without the GIL."""
    _load_level3()
    cdef double[::1, :] s = S
    cdef const double[::1, :] w = W
    if s.shape[0] != s.shape[1] or w.shape[1] != s.shape[0]:
        raise ValueError("add_gram_upper: S must be q x q and W k x q")
    cdef int q = s.shape[0], k = w.shape[0]
    cdef double one = 1.0
    cdef char uplo = b'U', trans = b'T'
    if q > 0 and k > 0:
        with nogil:
            dsyrk(&uplo, &trans, &q, &k, &one, <double*>&w[0, 0], &k, &one, &s[0, 0], &q)
