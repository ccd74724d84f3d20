"""Prediction's decision sums: LIBSVM's running sums of the one-vs-one
decision values over kernel values, with (expansion_sums) or without
(decision_sums) a kernel block K(X, SV) written to memory.

The kernel values of decision_sums are made by the operations of the kernel
matrix (``_kernel_matrix.pyx``: ks_dots' chains, ks_axpy_rows, the same
_exponent and ks_exp), with 0/1 rows as bit sets (``_bits.h``), so both ways
give the same bits, for any thread count.
"""
from cython.parallel cimport prange, parallel
from libc.stdint cimport int32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc

cimport numpy as cnp
import numpy as np

from ._axpy_rows cimport AXPY_COLS, ks_axpy_rows
from ._rows cimport Rows, as_rows, row_ptr, row_bits
from ._kernel cimport KernelParams, LINEAR, POLY, RBF, SIGMOID
from ._kernel_values cimport (
    _sum_squares, _exponent, _finish, ks_exp, ks_exp_block)
from ._simd cimport ks_simd_join, paths_mask

from ._kernel_matrix import row_norms

cnp.import_array()

# Every vector path of this module follows the tests' one switch (_simd.pxd).
ks_simd_join(paths_mask())


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
            nx[sub * 8 + t] = _sum_squares(src, d)
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
