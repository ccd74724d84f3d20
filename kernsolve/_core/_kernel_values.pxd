# Kernel values on Rows: the inline functions behind every loop of the kernel
# engine, the row cache (KernelRows, _kernel.pyx) and the kernel matrix
# (_kernel_matrix.pyx).  Every kernel value is produced by one function (_pair)
# whatever thread or loop shape asks for it, so the two agree bit for bit and
# neither depends on the thread count.  Inline, so each loop runs them without
# a call.
from libc.math cimport tanh, fabs
from libc.stdint cimport int32_t

from ._rows cimport Rows, row_ptr
from ._kernel cimport (KernelParams, kfloat, kernel_traits, BASE_DOT, BASE_SQDIST, BASE_L1,
                      POLY, RBF, SIGMOID, PRECOMPUTED, LAPLACIAN)

# exp for RBF/Laplacian values, one value (ks_exp) or many in place
# (ks_exp_block, AVX2 where the CPU has it): the same bits either way.
cdef extern from "_exp.h" nogil:
    double ks_exp(double x)
    void ks_exp_block(double* v, Py_ssize_t n)

# ||x - y||^2 of dense rows as direct differences (exact where the norm
# expansion cancels), one value (ks_sqdist) or a block of rows against one
# query (ks_sqdist_rows, two rows at a time with AVX2): the same bits either way.
cdef extern from "_sqdist.h" nogil:
    double ks_sqdist(const double* a, const double* b, Py_ssize_t n)
    void ks_sqdist_rows(const double* q, const double* Y, Py_ssize_t d,
                        const Py_ssize_t* rows, Py_ssize_t start, Py_ssize_t end,
                        double* out)

cdef extern from *:
    """
    #define KS_SCATTER_MAX_FEATURES ((Py_ssize_t)1 << 22)
    #define KS_PAR_MIN_WORK 40000.0
    #define KS_CHUNK_WORK 16384.0
    """
    # Above this many columns a sparse row is no longer scattered into a dense work
    # vector (n_features doubles per thread); dot products use a sorted merge.
    const Py_ssize_t SCATTER_MAX_FEATURES "KS_SCATTER_MAX_FEATURES"
    # Work (multiply-adds) below which a row is computed serially: waking the
    # OpenMP team costs a few microseconds.
    const double PAR_MIN_WORK "KS_PAR_MIN_WORK"
    # Work (multiply-adds) handed out per dynamic chunk: small enough that a
    # thread the OS preempts on a busy machine holds up little, large enough that
    # the shared chunk counter costs nothing.
    const double CHUNK_WORK "KS_CHUNK_WORK"


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


cdef inline double _exponent(const KernelParams* kp, double base) noexcept nogil:
    """RBF/Laplacian: K = exp of this."""
    if base < 0.0:   # rounding in the norm expansion
        base = 0.0
    return -kp.gamma * base


cdef inline bint _exponential(int kind) noexcept nogil:
    """Whether K = exp(-gamma * base): then a block's exponentials are taken
    together (ks_exp_block, _kernel_block)."""
    return kind == RBF or kind == LAPLACIAN


# The kernels' formulas: K from its base (kernel_traits(kind).base, _kernel.pxd).
cdef inline double _finish(const KernelParams* kp, double base) noexcept nogil:
    """Turn <x,y> (linear, poly, sigmoid) or a distance (rbf, laplacian) into K."""
    if _exponential(kp.kind):
        return ks_exp(_exponent(kp, base))
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
    double norm              # ||x_i||^2, or ||x_i||_1 for an L1 base


cdef inline double _sum_squares(const double* a, Py_ssize_t n) noexcept nogil:
    """sum of a[k]^2 in index order, one chain: LIBSVM's ``dot(x, x)`` (its
    sparse merge of a row with itself), so K(x, x) of the dot-product kernels
    (the SMO's diagonal, kept in double) and RBF's ``x_square`` have LIBSVM's
    bits; a zero adds nothing, so dense and sparse rows give the same sum.
    Once per row, so one chain costs nothing that matters."""
    cdef double s = 0.0
    cdef Py_ssize_t k
    for k in range(n):
        s += a[k] * a[k]
    return s


cdef inline double _row_norm(const Rows* X, Py_ssize_t i, int kind) noexcept nogil:
    cdef const double* v
    cdef const int32_t* ix
    cdef Py_ssize_t m = row_ptr(X, i, &v, &ix)
    if kernel_traits(kind).base == BASE_L1:
        return _abs_sum(v, m)
    return _sum_squares(v, m)


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


cdef inline double _sqdist_scatter(const Query* q, const double* v, const int32_t* ix,
                                   Py_ssize_t m, double norm_j) noexcept nogil:
    """||x_i - x_j||^2 for x_i scattered in q and a sparse x_j = (v, ix)."""
    return q.norm + norm_j - 2.0 * _dot_gather(q.dense, v, ix, m)


cdef inline double _pair_base(const KernelParams* kp, const Query* q, const double* v,
                              const int32_t* ix, Py_ssize_t m,
                              double norm_j) noexcept nogil:
    """What _finish turns into K(x_i, x_j): <x_i, x_j> or their distance, with
    x_i prepared in q and x_j = (v, ix, m), ix NULL if dense."""
    cdef int measure = kernel_traits(kp.kind).base    # what K is a function of
    cdef double base
    if ix == NULL:
        if measure == BASE_SQDIST:
            base = ks_sqdist(q.dense, v, m)
        elif measure == BASE_L1:
            base = _l1_dense(q.dense, v, m)
        else:
            base = _dot_dense(q.dense, v, m)
    elif q.dense != NULL:
        if measure == BASE_L1:
            base = _l1_gather(q.dense, q.norm, v, ix, m)
        elif measure == BASE_SQDIST:
            base = _sqdist_scatter(q, v, ix, m, norm_j)
        else:
            base = _dot_gather(q.dense, v, ix, m)
    else:
        if measure == BASE_L1:
            base = _l1_merge(q.vals, q.idx, q.nnz, v, ix, m)
        else:
            base = _dot_merge(q.vals, q.idx, q.nnz, v, ix, m)
            if measure == BASE_SQDIST:
                base = q.norm + norm_j - 2.0 * base
    return base


cdef inline double _pair(const KernelParams* kp, const Query* q, const double* v,
                         const int32_t* ix, Py_ssize_t m,
                         double norm_j) noexcept nogil:
    """K(x_i, x_j) with x_i prepared in q and x_j = (v, ix, m), ix NULL if dense."""
    return _finish(kp, _pair_base(kp, q, v, ix, m, norm_j))



cdef inline double _value_base(const KernelParams* kp, const Query* q, const Rows* Y,
                               Py_ssize_t j, const double* norms) noexcept nogil:
    cdef const double* v
    cdef const int32_t* ix
    cdef Py_ssize_t m = row_ptr(Y, j, &v, &ix)
    return _pair_base(kp, q, v, ix, m, norms[j])


cdef inline double _value(const KernelParams* kp, const Query* q, const Rows* Y,
                          Py_ssize_t j, const double* norms) noexcept nogil:
    return _finish(kp, _value_base(kp, q, Y, j, norms))


cdef enum:
    # Kernel values per block: _values_block's (on its stack) and the kernel
    # matrix's pieces of a row.
    VALUE_BLOCK = 128


cdef inline void _kernel_block(const KernelParams* kp, const Query* q, const Rows* Y,
                               const Py_ssize_t* rows, Py_ssize_t start, Py_ssize_t end,
                               const double* norms, double* out) noexcept nogil:
    """out[k - start] = K(x_i, Y[rows[k]]) for start <= k < end (rows NULL: Y[k]):
    the same bits as _value, the exponentials of an RBF/Laplacian block taken
    together (ks_exp_block)."""
    cdef Py_ssize_t k, j
    cdef bint exponential = _exponential(kp.kind)
    cdef const double* v
    cdef const int32_t* ix
    cdef Py_ssize_t m
    if kp.kind == RBF and Y.is_sparse and q.dense != NULL:
        # _pair_base's RBF-with-scatter case without its dispatch per value
        # (gcc does not inline _value_base): the same operations, the same bits.
        for k in range(start, end):
            j = rows[k] if rows != NULL else k
            m = row_ptr(Y, j, &v, &ix)
            out[k - start] = _exponent(kp, _sqdist_scatter(q, v, ix, m, norms[j]))
        ks_exp_block(out, end - start)
        return
    if kp.kind == RBF and not Y.is_sparse and q.dense != NULL:
        # _pair_base's dense RBF case, a block at a time (ks_sqdist_rows: two
        # rows at once where the CPU has AVX2): the same operations, the same bits.
        ks_sqdist_rows(q.dense, Y.values, Y.n_features, rows, start, end, out)
        for k in range(end - start):
            out[k] = _exponent(kp, out[k])
        ks_exp_block(out, end - start)
        return
    for k in range(start, end):
        j = rows[k] if rows != NULL else k
        if exponential:
            out[k - start] = _exponent(kp, _value_base(kp, q, Y, j, norms))
        else:
            out[k - start] = _value(kp, q, Y, j, norms)
    if exponential:
        ks_exp_block(out, end - start)


cdef inline void _values_block(const KernelParams* kp, const Query* q, const Rows* Y,
                               const Py_ssize_t* rows, Py_ssize_t start, Py_ssize_t end,
                               const double* norms, kfloat* out) noexcept nogil:
    """out[k] = <kfloat>K(x_i, Y[rows[k]]) for start <= k < end, at most
    VALUE_BLOCK of them (a kernel row's block for the cache)."""
    cdef double e[VALUE_BLOCK]
    cdef Py_ssize_t k
    _kernel_block(kp, q, Y, rows, start, end, norms, e)
    for k in range(start, end):
        out[k] = <kfloat>e[k - start]


cdef inline double _diag_value(const KernelParams* kp, const Rows* X, Py_ssize_t i,
                               double norm) noexcept nogil:
    if kp.kind == PRECOMPUTED:
        return X.values[i * X.n_features + i]
    if kernel_traits(kp.kind).base != BASE_DOT:
        return _finish(kp, 0.0)     # a distance kernel: K(x, x) = its value at 0
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
