"""The kernel engine: kernel values on dense or CSR rows, KernelRows (LIBSVM's
LRU cache of kernel rows, computed in parallel), and the dense kernel matrix
used by kernel_matrix() and prediction.

Every kernel value is produced by one function (``_pair``) whatever thread or
loop shape asks for it, and the dgemm path of the kernel matrix works on fixed
tiles, so results are bit-identical for any thread count.
"""
from cython.parallel cimport prange, parallel
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.math cimport exp, tanh, fabs
from libc.stdint cimport int32_t, int64_t

cimport numpy as cnp
import numpy as np
import scipy.sparse as sp

from scipy.linalg.cython_blas cimport dgemm

from ._rows cimport Rows, row_ptr

cnp.import_array()

# Above this many columns a sparse row is no longer scattered into a dense work
# vector (n_features doubles per thread); dot products use a sorted merge.
cdef Py_ssize_t SCATTER_MAX_FEATURES = 1 << 22
# Work (multiply-adds) below which a row is computed serially: waking the
# OpenMP team costs a few microseconds.
cdef double PAR_MIN_WORK = 40000.0
# Work (multiply-adds) handed out per dynamic chunk: small enough that a
# thread the OS preempts on a busy machine holds up little, large enough that
# the shared chunk counter costs nothing.
cdef double CHUNK_WORK = 16384.0

# The C enum's numbers and names, for tests/test_constants.py to compare with
# kernsolve/_constants.py (the owner of the table).
KERNEL_NAMES = {LINEAR: "linear", POLY: "polynomial", RBF: "rbf",
                SIGMOID: "sigmoid", PRECOMPUTED: "precomputed",
                LAPLACIAN: "laplacian"}


# ---------------------------------------------------------------- primitives
# Four accumulators give the CPU independent chains; the combination order is
# fixed, so a value never depends on who computes it.

cdef inline double _dot_dense(const double* a, const double* b,
                              Py_ssize_t n) noexcept nogil:
    # Eight chains hide the add latency (gcc pairs them into SSE2 registers).
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef double s4 = 0.0, s5 = 0.0, s6 = 0.0, s7 = 0.0
    cdef Py_ssize_t k = 0
    while k + 8 <= n:
        s0 += a[k] * b[k]
        s1 += a[k + 1] * b[k + 1]
        s2 += a[k + 2] * b[k + 2]
        s3 += a[k + 3] * b[k + 3]
        s4 += a[k + 4] * b[k + 4]
        s5 += a[k + 5] * b[k + 5]
        s6 += a[k + 6] * b[k + 6]
        s7 += a[k + 7] * b[k + 7]
        k += 8
    while k < n:
        s0 += a[k] * b[k]
        k += 1
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))


cdef inline double _sqdist_dense(const double* a, const double* b,
                                 Py_ssize_t n) noexcept nogil:
    # Direct differences: exact where ||a||^2 + ||b||^2 - 2<a,b> cancels.
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef double s4 = 0.0, s5 = 0.0, s6 = 0.0, s7 = 0.0
    cdef double d0, d1, d2, d3, d4, d5, d6, d7
    cdef Py_ssize_t k = 0
    while k + 8 <= n:
        d0 = a[k] - b[k]
        d1 = a[k + 1] - b[k + 1]
        d2 = a[k + 2] - b[k + 2]
        d3 = a[k + 3] - b[k + 3]
        d4 = a[k + 4] - b[k + 4]
        d5 = a[k + 5] - b[k + 5]
        d6 = a[k + 6] - b[k + 6]
        d7 = a[k + 7] - b[k + 7]
        s0 += d0 * d0
        s1 += d1 * d1
        s2 += d2 * d2
        s3 += d3 * d3
        s4 += d4 * d4
        s5 += d5 * d5
        s6 += d6 * d6
        s7 += d7 * d7
        k += 8
    while k < n:
        d0 = a[k] - b[k]
        s0 += d0 * d0
        k += 1
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))


cdef inline double _l1_dense(const double* a, const double* b,
                             Py_ssize_t n) noexcept nogil:
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef double s4 = 0.0, s5 = 0.0, s6 = 0.0, s7 = 0.0
    cdef Py_ssize_t k = 0
    while k + 8 <= n:
        s0 += fabs(a[k] - b[k])
        s1 += fabs(a[k + 1] - b[k + 1])
        s2 += fabs(a[k + 2] - b[k + 2])
        s3 += fabs(a[k + 3] - b[k + 3])
        s4 += fabs(a[k + 4] - b[k + 4])
        s5 += fabs(a[k + 5] - b[k + 5])
        s6 += fabs(a[k + 6] - b[k + 6])
        s7 += fabs(a[k + 7] - b[k + 7])
        k += 8
    while k < n:
        s0 += fabs(a[k] - b[k])
        k += 1
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))


cdef inline double _abs_sum(const double* a, Py_ssize_t n) noexcept nogil:
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef Py_ssize_t k = 0
    while k + 4 <= n:
        s0 += fabs(a[k])
        s1 += fabs(a[k + 1])
        s2 += fabs(a[k + 2])
        s3 += fabs(a[k + 3])
        k += 4
    while k < n:
        s0 += fabs(a[k])
        k += 1
    return (s0 + s1) + (s2 + s3)


cdef inline double _dot_gather(const double* w, const double* v,
                               const int32_t* ix, Py_ssize_t m) noexcept nogil:
    """<w, y> for a dense w and a sparse y = (v, ix)."""
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef Py_ssize_t t = 0
    while t + 4 <= m:
        s0 += v[t] * w[ix[t]]
        s1 += v[t + 1] * w[ix[t + 1]]
        s2 += v[t + 2] * w[ix[t + 2]]
        s3 += v[t + 3] * w[ix[t + 3]]
        t += 4
    while t < m:
        s0 += v[t] * w[ix[t]]
        t += 1
    return (s0 + s1) + (s2 + s3)


cdef inline double _l1_gather(const double* w, double w_l1, const double* v,
                              const int32_t* ix, Py_ssize_t m) noexcept nogil:
    """||w - y||_1 = ||w||_1 + sum over y's nonzeros of (|w_k - y_k| - |w_k|)."""
    cdef double s = 0.0, a
    cdef Py_ssize_t t
    for t in range(m):
        a = w[ix[t]]
        s += fabs(a - v[t]) - fabs(a)
    return w_l1 + s


cdef inline double _dot_merge(const double* v1, const int32_t* i1, Py_ssize_t m1,
                              const double* v2, const int32_t* i2,
                              Py_ssize_t m2) noexcept nogil:
    cdef double s = 0.0
    cdef Py_ssize_t a = 0, b = 0
    while a < m1 and b < m2:
        if i1[a] == i2[b]:
            s += v1[a] * v2[b]
            a += 1
            b += 1
        elif i1[a] < i2[b]:
            a += 1
        else:
            b += 1
    return s


cdef inline double _l1_merge(const double* v1, const int32_t* i1, Py_ssize_t m1,
                             const double* v2, const int32_t* i2,
                             Py_ssize_t m2) noexcept nogil:
    cdef double s = 0.0
    cdef Py_ssize_t a = 0, b = 0
    while a < m1 or b < m2:
        if b >= m2 or (a < m1 and i1[a] < i2[b]):
            s += fabs(v1[a])
            a += 1
        elif a >= m1 or i2[b] < i1[a]:
            s += fabs(v2[b])
            b += 1
        else:
            s += fabs(v1[a] - v2[b])
            a += 1
            b += 1
    return s


cdef inline double _powi(double base, int times) noexcept nogil:
    # Exponentiation by squaring: exact integer degrees, no pow() edge cases.
    cdef double result = 1.0
    while times > 0:
        if times & 1:
            result *= base
        base *= base
        times >>= 1
    return result


cdef inline double _finish(const KernelParams* kp, double base) noexcept nogil:
    """Turn <x,y> (linear, poly, sigmoid) or a distance (rbf, laplacian) into K."""
    if kp.kind == RBF or kp.kind == LAPLACIAN:
        if base < 0.0:   # rounding in the norm expansion
            base = 0.0
        return exp(-kp.gamma * base)
    if kp.kind == POLY:
        return _powi(kp.gamma * base + kp.coef0, kp.degree)
    if kp.kind == SIGMOID:
        return tanh(kp.gamma * base + kp.coef0)
    return base


cdef struct Query:
    # The left operand x_i of a batch of kernel values, prepared once.
    const double* dense      # x_i as n_features doubles (its row or a scatter); NULL: merge
    const double* vals       # x_i as stored
    const int32_t* idx       # its columns (NULL if dense)
    Py_ssize_t nnz
    Py_ssize_t n_features
    double norm              # ||x_i||^2, or ||x_i||_1 for the Laplacian kernel


cdef inline double _row_norm(const Rows* X, Py_ssize_t i, int kind) noexcept nogil:
    cdef const double* v
    cdef const int32_t* ix
    cdef Py_ssize_t m = row_ptr(X, i, &v, &ix)
    if kind == LAPLACIAN:
        return _abs_sum(v, m)
    return _dot_dense(v, v, m)


cdef inline Query _make_query(const Rows* X, Py_ssize_t i, double norm,
                              double* work, bint scatter) noexcept nogil:
    # Returned by value so that, inside prange, assigning it makes it private.
    cdef Query q
    cdef Py_ssize_t t
    q.nnz = row_ptr(X, i, &q.vals, &q.idx)
    q.norm = norm
    q.n_features = X.n_features
    if q.idx == NULL:
        q.dense = q.vals
    elif scatter:
        for t in range(q.nnz):
            work[q.idx[t]] = q.vals[t]
        q.dense = work
    else:
        q.dense = NULL
    return q


cdef inline void _clear_query(const Query* q, double* work) noexcept nogil:
    """Zero the work vector again (only the entries the scatter touched)."""
    cdef Py_ssize_t t
    if q.idx != NULL and q.dense != NULL:
        for t in range(q.nnz):
            work[q.idx[t]] = 0.0


cdef inline double _pair(const KernelParams* kp, const Query* q, const double* v,
                         const int32_t* ix, Py_ssize_t m,
                         double norm_j) noexcept nogil:
    """K(x_i, x_j) with x_i prepared in q and x_j = (v, ix, m), ix NULL if dense."""
    cdef int kind = kp.kind
    cdef double base
    if ix == NULL:
        if kind == RBF:
            base = _sqdist_dense(q.dense, v, m)
        elif kind == LAPLACIAN:
            base = _l1_dense(q.dense, v, m)
        else:
            base = _dot_dense(q.dense, v, m)
    elif q.dense != NULL:
        if kind == LAPLACIAN:
            base = _l1_gather(q.dense, q.norm, v, ix, m)
        else:
            base = _dot_gather(q.dense, v, ix, m)
            if kind == RBF:
                base = q.norm + norm_j - 2.0 * base
    else:
        if kind == LAPLACIAN:
            base = _l1_merge(q.vals, q.idx, q.nnz, v, ix, m)
        else:
            base = _dot_merge(q.vals, q.idx, q.nnz, v, ix, m)
            if kind == RBF:
                base = q.norm + norm_j - 2.0 * base
    return _finish(kp, base)


cdef inline double _value(const KernelParams* kp, const Query* q, const Rows* Y,
                          Py_ssize_t j, const double* norms) noexcept nogil:
    cdef const double* v
    cdef const int32_t* ix
    cdef Py_ssize_t m = row_ptr(Y, j, &v, &ix)
    return _pair(kp, q, v, ix, m, norms[j])


cdef inline double _diag_value(const KernelParams* kp, const Rows* X, Py_ssize_t i,
                               double norm) noexcept nogil:
    if kp.kind == PRECOMPUTED:
        return X.values[i * X.n_features + i]
    if kp.kind == RBF or kp.kind == LAPLACIAN:
        return 1.0
    return _finish(kp, norm)


cdef inline Py_ssize_t _chunk(Py_ssize_t count, double cost, int nt) noexcept nogil:
    """Dynamic-schedule chunk: about CHUNK_WORK of work, at least 8 chunks a thread."""
    cdef Py_ssize_t c = <Py_ssize_t>(CHUNK_WORK / cost)
    cdef Py_ssize_t most = count // (8 * nt)
    if c > most:
        c = most
    return c if c > 0 else 1


cdef inline double _mean_cost(const Rows* X) noexcept nogil:
    """Mean multiply-adds per kernel value against a row of X."""
    if X.is_sparse:
        return 1.0 + <double>X.indptr[X.n_rows] / <double>(X.n_rows if X.n_rows > 0 else 1)
    return 1.0 + <double>X.n_features


# ---------------------------------------------------------- Python <-> Rows

cdef object as_rows(object X, Rows* out):
    """Point ``out`` at a canonical dense or CSR matrix; return what to keep alive."""
    if sp.issparse(X):
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
            for j in range(j0, j1):
                out[i * n_y + j] = _value(kp, &q, Y, j, ny)
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
    for i in range(n_x):
        q = _make_query(X, i, nx[i], work, scatter)
        if nt > 1:
            for j in prange(n_y, schedule="dynamic", chunksize=chunk, num_threads=nt):
                out[i * n_y + j] = _value(kp, &q, Y, j, ny)
        else:
            for j in range(n_y):
                out[i * n_y + j] = _value(kp, &q, Y, j, ny)
        _clear_query(&q, work)
    free(work)
    return 0


# Output tiles of the BLAS path. They are fixed, whatever the thread count, so
# every entry comes from the same dgemm call shape: identical bits for any
# n_threads (OpenBLAS's own threading does not promise that).
cdef Py_ssize_t TILE_X = 128
cdef Py_ssize_t TILE_Y = 1024


cdef int _fill_matrix_gemm(const Rows* X, const Rows* Y, const KernelParams* kp,
                           const double* nx, const double* ny, double* out,
                           int n_threads) noexcept nogil:
    """Dense X and Y, dot-product kernels: tiles of single-threaded dgemm, then K."""
    cdef Py_ssize_t n_x = X.n_rows, n_y = Y.n_rows, d = X.n_features
    cdef Py_ssize_t tiles_x = (n_x + TILE_X - 1) // TILE_X
    cdef Py_ssize_t tiles_y = (n_y + TILE_Y - 1) // TILE_Y
    cdef Py_ssize_t t, i, j, i0, j0, tx, ty
    cdef int m_, n_, k_, lda, ldc
    cdef double one = 1.0, zero = 0.0, g
    cdef char trans_t = b'T', trans_n = b'N'
    cdef double* c
    cdef int nt = n_threads
    if tiles_x * tiles_y < 2:
        nt = 1
    for t in prange(tiles_x * tiles_y, schedule="dynamic", chunksize=1, num_threads=nt):
        i0 = (t // tiles_y) * TILE_X
        j0 = (t % tiles_y) * TILE_Y
        tx = TILE_X if i0 + TILE_X <= n_x else n_x - i0
        ty = TILE_Y if j0 + TILE_Y <= n_y else n_y - j0
        # Column-major view: C^T[j, i] = sum_k Y[j, k] X[i, k], so C^T = Y^T' X^T.
        m_ = <int>ty
        n_ = <int>tx
        k_ = <int>d
        lda = <int>d
        ldc = <int>n_y
        c = out + i0 * n_y + j0
        dgemm(&trans_t, &trans_n, &m_, &n_, &k_, &one,
              <double*>(Y.values + j0 * d), &lda, <double*>(X.values + i0 * d), &lda,
              &zero, c, &ldc)
        for i in range(tx):
            for j in range(ty):
                g = c[i * n_y + j]
                if kp.kind == RBF:
                    g = nx[i0 + i] + ny[j0 + j] - 2.0 * g
                c[i * n_y + j] = _finish(kp, g)
    return 0


def _kernel_matrix(X, Y, int kernel_type, int degree, double gamma, double coef0,
                   int n_threads, bint use_blas=False):
    """Dense K(X, Y) for canonical X, Y (validated by kernsolve._kernels)."""
    cdef Rows RX, RY
    cdef KernelParams kp
    if kernel_type not in (LINEAR, POLY, RBF, SIGMOID, LAPLACIAN):
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
            and kernel_type != LAPLACIAN and RX.n_features < 2**31 - 1
            and RY.n_rows < 2**31 - 1)
    # zeros, not empty: dgemm with beta = 0 then never meets uninitialised NaNs
    out = (np.zeros if blas else np.empty)((RX.n_rows, RY.n_rows), dtype=np.float64)
    if out.size == 0:
        return out
    cdef double* o = <double*>cnp.PyArray_DATA(out)
    cdef const double* pnx = <const double*>cnp.PyArray_DATA(nx)
    cdef const double* pny = <const double*>cnp.PyArray_DATA(ny)
    cdef int status
    with nogil:
        if blas:
            status = _fill_matrix_gemm(&RX, &RY, &kp, pnx, pny, o, max(1, n_threads))
        else:
            status = _fill_matrix(&RX, &RY, &kp, pnx, pny, o, max(1, n_threads))
    if status != 0:
        raise MemoryError("kernel_matrix: cannot allocate a work vector")
    return out


# --------------------------------------------------------------- KernelRows

cdef class KernelRows:
    """KernelRows(X, kernel_type, degree, gamma, coef0, cache_mb, n_threads)

    Parameters
    ----------
    X : ndarray or csr_matrix
        Canonical training data (see ``kernsolve._kernels.as_canonical``); for
        ``kernel_type == 4`` (precomputed) the dense n x n kernel matrix.
    kernel_type : int
        LIBSVM's code: 0 linear, 1 polynomial, 2 rbf, 3 sigmoid,
        4 precomputed, 5 laplacian.
    degree, gamma, coef0 : parameters of the kernel (LIBSVM's definitions).
    cache_mb : float
        Byte budget of the row cache in MB (2**20 bytes), raised to at least
        two full rows.
    n_threads : int
        Threads used to compute a row.
    """

    def __init__(self, X, int kernel_type, int degree, double gamma, double coef0,
                 double cache_mb, int n_threads):
        if self.perm != NULL:
            raise RuntimeError("KernelRows is already initialised")
        if kernel_type not in KERNEL_NAMES:
            raise ValueError(f"unknown kernel type {kernel_type}; expected one of "
                             f"{sorted(KERNEL_NAMES)}")
        if not (gamma >= 0.0 and gamma < float("inf")):
            raise ValueError(f"gamma must be a finite number >= 0, got {gamma}")
        if kernel_type == POLY and degree < 0:      # only the polynomial kernel uses it
            raise ValueError(f"degree must be >= 0, got {degree}")
        if not (coef0 == coef0) or abs(coef0) == float("inf"):
            raise ValueError(f"coef0 must be finite, got {coef0}")
        if not (cache_mb >= 0.0 and cache_mb < float("inf")):
            raise ValueError(f"cache size must be a finite number of MB >= 0, got {cache_mb}")
        if n_threads < 1:
            raise ValueError(f"n_threads must be >= 1, got {n_threads}")
        self._keepalive = as_rows(X, &self.X)
        cdef Py_ssize_t n = self.X.n_rows, i
        if n < 1:
            raise ValueError("X has no rows")
        if kernel_type == PRECOMPUTED and (self.X.is_sparse or self.X.n_features != n):
            raise ValueError("a precomputed kernel must be a dense n x n matrix, "
                             f"got shape {X.shape}")
        self.n = n
        self.params.kind = kernel_type
        self.params.degree = degree
        self.params.gamma = gamma
        self.params.coef0 = coef0
        self.n_threads = n_threads

        self.perm = <Py_ssize_t*>malloc(n * sizeof(Py_ssize_t))
        self.sq_norms = <double*>malloc(n * sizeof(double))
        self.diag = <double*>malloc(n * sizeof(double))
        self.cache_data = <kfloat**>calloc(n, sizeof(kfloat*))
        self.cache_len = <Py_ssize_t*>calloc(n, sizeof(Py_ssize_t))
        self.lru_prev = <Py_ssize_t*>malloc((n + 1) * sizeof(Py_ssize_t))
        self.lru_next = <Py_ssize_t*>malloc((n + 1) * sizeof(Py_ssize_t))
        self.use_scatter = (self.X.is_sparse and kernel_type != PRECOMPUTED
                            and self.X.n_features <= SCATTER_MAX_FEATURES)
        if self.use_scatter:
            self.work = <double*>calloc(max(self.X.n_features, 1), sizeof(double))
        if (self.perm == NULL or self.sq_norms == NULL or self.diag == NULL
                or self.cache_data == NULL or self.cache_len == NULL
                or self.lru_prev == NULL or self.lru_next == NULL
                or (self.use_scatter and self.work == NULL)):
            raise MemoryError("KernelRows: cannot allocate the kernel cache tables")
        self.lru_prev[n] = n
        self.lru_next[n] = n
        with nogil:
            for i in range(n):
                self.perm[i] = i
                if kernel_type == PRECOMPUTED:
                    self.sq_norms[i] = 0.0
                else:
                    self.sq_norms[i] = _row_norm(&self.X, i, kernel_type)
                self.diag[i] = _diag_value(&self.params, &self.X, i, self.sq_norms[i])
        cdef double budget_bytes = cache_mb * 1048576.0
        cdef double min_entries = 2.0 * <double>n
        cdef double entries = budget_bytes / <double>sizeof(kfloat)
        self.budget = <Py_ssize_t>(entries if entries > min_entries else min_entries)
        self.free_entries = self.budget
        self.row_cost = 1.0 if kernel_type == PRECOMPUTED else _mean_cost(&self.X)

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self.cache_data != NULL:
            for i in range(self.n):
                free(self.cache_data[i])
        free(self.cache_data)
        free(self.cache_len)
        free(self.lru_prev)
        free(self.lru_next)
        free(self.perm)
        free(self.sq_norms)
        free(self.diag)
        free(self.work)

    # ------------------------------------------------------------ LRU list
    cdef void _lru_remove(self, Py_ssize_t h) noexcept nogil:
        self.lru_next[self.lru_prev[h]] = self.lru_next[h]
        self.lru_prev[self.lru_next[h]] = self.lru_prev[h]

    cdef void _lru_insert(self, Py_ssize_t h) noexcept nogil:
        # Newest at the tail, just before the head node n.
        self.lru_next[h] = self.n
        self.lru_prev[h] = self.lru_prev[self.n]
        self.lru_next[self.lru_prev[h]] = h
        self.lru_prev[self.n] = h

    cdef void _drop(self, Py_ssize_t h) noexcept nogil:
        self._lru_remove(h)
        free(self.cache_data[h])
        self.cache_data[h] = NULL
        self.free_entries += self.cache_len[h]
        self.cache_len[h] = 0

    # ------------------------------------------------------------- compute
    cdef void _fill(self, Py_ssize_t p, Py_ssize_t start, Py_ssize_t end,
                    kfloat* out) noexcept nogil:
        """out[k] = K(position p, position k) for start <= k < end."""
        cdef Py_ssize_t i = self.perm[p], k
        cdef const Py_ssize_t* perm = self.perm
        cdef const KernelParams* kp = &self.params
        cdef const Rows* X = &self.X
        cdef const double* norms = self.sq_norms
        cdef const double* pre
        cdef Query q
        cdef int nt = self.n_threads
        if <double>(end - start) * self.row_cost < PAR_MIN_WORK:
            nt = 1
        cdef Py_ssize_t chunk = _chunk(end - start, self.row_cost, nt)
        if kp.kind == PRECOMPUTED:
            pre = X.values + i * X.n_features
            for k in range(start, end):
                out[k] = <kfloat>pre[perm[k]]
            return
        q = _make_query(X, i, norms[i], self.work, self.use_scatter)
        if nt > 1:
            for k in prange(start, end, schedule="dynamic", chunksize=chunk,
                            num_threads=nt):
                out[k] = <kfloat>_value(kp, &q, X, perm[k], norms)
        else:
            for k in range(start, end):
                out[k] = <kfloat>_value(kp, &q, X, perm[k], norms)
        _clear_query(&q, self.work)

    cdef const kfloat* get_row(self, Py_ssize_t p, Py_ssize_t length) noexcept nogil:
        cdef Py_ssize_t old, more, h
        cdef kfloat* data
        if length > self.n:
            length = self.n
        if length < 1:
            length = 1
        old = self.cache_len[p]
        if old > 0:
            self._lru_remove(p)
        if length <= old:
            self.n_cache_hits += 1
            self._lru_insert(p)
            return self.cache_data[p]
        more = length - old
        while self.free_entries < more:
            h = self.lru_next[self.n]
            if h == self.n:      # cannot happen: the budget holds two full rows
                if old > 0:
                    self._lru_insert(p)
                return NULL
            self._drop(h)
        data = <kfloat*>realloc(self.cache_data[p], length * sizeof(kfloat))
        if data == NULL:
            if old > 0:
                self._lru_insert(p)
            return NULL
        self.cache_data[p] = data
        self.cache_len[p] = length
        self.free_entries -= more
        self._fill(p, old, length, data)
        self.n_kernel_evals += more
        self.n_cache_misses += 1
        self._lru_insert(p)
        return data

    cdef void swap(self, Py_ssize_t p, Py_ssize_t q) noexcept nogil:
        cdef Py_ssize_t tmp_i, h, nxt, lo, hi
        cdef double tmp_d
        cdef kfloat* tmp_row
        cdef kfloat tmp_f
        if p == q:
            return
        tmp_i = self.perm[p]; self.perm[p] = self.perm[q]; self.perm[q] = tmp_i
        tmp_d = self.diag[p]; self.diag[p] = self.diag[q]; self.diag[q] = tmp_d
        if self.cache_len[p] > 0:
            self._lru_remove(p)
        if self.cache_len[q] > 0:
            self._lru_remove(q)
        tmp_row = self.cache_data[p]; self.cache_data[p] = self.cache_data[q]
        self.cache_data[q] = tmp_row
        tmp_i = self.cache_len[p]; self.cache_len[p] = self.cache_len[q]
        self.cache_len[q] = tmp_i
        if self.cache_len[p] > 0:
            self._lru_insert(p)
        if self.cache_len[q] > 0:
            self._lru_insert(q)
        lo = p if p < q else q
        hi = q if p < q else p
        # Columns lo and hi trade places in every cached row; a row that holds
        # lo but not hi cannot be kept consistent, so it goes.
        h = self.lru_next[self.n]
        while h != self.n:
            nxt = self.lru_next[h]
            if self.cache_len[h] > lo:
                if self.cache_len[h] > hi:
                    tmp_f = self.cache_data[h][lo]
                    self.cache_data[h][lo] = self.cache_data[h][hi]
                    self.cache_data[h][hi] = tmp_f
                else:
                    self._drop(h)
            h = nxt

    cdef double eval(self, Py_ssize_t p, Py_ssize_t q) noexcept nogil:
        cdef Py_ssize_t i = self.perm[p], j = self.perm[q]
        cdef Query qq
        cdef double value
        self.n_kernel_evals += 1
        if self.params.kind == PRECOMPUTED:
            return self.X.values[i * self.X.n_features + j]
        qq = _make_query(&self.X, i, self.sq_norms[i], self.work, self.use_scatter)
        value = _value(&self.params, &qq, &self.X, j, self.sq_norms)
        _clear_query(&qq, self.work)
        return value

    # ------------------------------------------------- Python-visible helpers
    def _check_position(self, Py_ssize_t p):
        if p < 0 or p >= self.n:
            raise IndexError(f"position {p} out of range for {self.n} rows")

    def row(self, Py_ssize_t p, length=None):
        """Kernel row of position p over positions < length, as a float32 copy."""
        self._check_position(p)
        cdef Py_ssize_t m = self.n if length is None else length
        if m < 1 or m > self.n:
            raise ValueError(f"length must be in [1, {self.n}], got {m}")
        cdef const kfloat* r
        with nogil:
            r = self.get_row(p, m)
        if r == NULL:
            raise MemoryError("KernelRows: cannot allocate a cache row")
        out = np.empty(m, dtype=np.float32)
        cdef float[::1] o = out
        cdef Py_ssize_t k
        for k in range(m):
            o[k] = r[k]
        return out

    def py_swap(self, Py_ssize_t p, Py_ssize_t q):
        """Exchange positions p and q (data, diagonal and cache), as SMO's shrinking does."""
        self._check_position(p)
        self._check_position(q)
        with nogil:
            self.swap(p, q)

    def py_eval(self, Py_ssize_t p, Py_ssize_t q):
        """K(position p, position q) in double precision (counted, not cached)."""
        self._check_position(p)
        self._check_position(q)
        return self.eval(p, q)

    @property
    def n_rows(self):
        return self.n

    @property
    def cached_bytes(self):
        """Bytes of kernel values held by the cache now."""
        return (self.budget - self.free_entries) * sizeof(kfloat)

    @property
    def budget_bytes(self):
        """The cache budget in bytes (cache_mb, raised to two full rows)."""
        return self.budget * sizeof(kfloat)

    @property
    def diagonal(self):
        """K(p, p) by position (a copy)."""
        return np.array(<double[:self.n]>self.diag, dtype=np.float64)

    @property
    def permutation(self):
        """The data row at each position (a copy)."""
        return np.array(<Py_ssize_t[:self.n]>self.perm, dtype=np.intp)

    def cached_lengths(self):
        """Entries cached for each position (0 when none)."""
        return np.array(<Py_ssize_t[:self.n]>self.cache_len, dtype=np.intp)

    def lru_positions(self):
        """Positions holding a cached row, least recently used first."""
        out = []
        cdef Py_ssize_t h = self.lru_next[self.n]
        while h != self.n:
            out.append(h)
            h = self.lru_next[h]
        return out

    def reset_counters(self):
        self.n_kernel_evals = 0
        self.n_cache_hits = 0
        self.n_cache_misses = 0
