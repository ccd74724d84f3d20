"""The kernel engine's row cache: KernelRows, LIBSVM's LRU cache of kernel rows,
each row computed in parallel.

Kernel values come from the inline functions of ``_kernel_values.pxd``: one
function (``_pair``) produces every value whatever thread or loop shape asks
for it, so a row is bit-identical for any thread count, and equal to the
same entries of the kernel matrix (``_kernel_matrix.pyx``).
"""
from cython.parallel cimport prange
from libc.stdlib cimport malloc, calloc, realloc, free, qsort
from libc.string cimport memcpy
from libc.stdint cimport uint64_t

import numpy as np

from kernsolve._memory import memory_limit
from ._rows cimport Rows, as_rows, row_ptr, row_bits
from ._team cimport ks_team_run, ks_grab
from ._kernel_values cimport (
    SCATTER_MAX_FEATURES, PAR_MIN_WORK, VALUE_BLOCK, Query, _row_norm, _make_query,
    _clear_query, _value, _values_block, _diag_value, _finish, _chunk, _mean_cost, ks_exp,
    ks_exp_block)
from ._simd cimport KS_AVX2, ks_simd, ks_simd_join, paths_mask

# Every vector path of this module follows the tests' one switch (_simd.pxd).
ks_simd_join(paths_mask())

cdef extern from "_bits.h" nogil:
    void ks_bits_fill(const uint64_t* q, const uint64_t* rows, Py_ssize_t words,
                      Py_ssize_t start, Py_ssize_t end, int hamming,
                      const float* table, float* out)

# The cache's rows are many blocks on the heap, and glibc hands free heap pages
# back to the system only from the heap's top: after a sub-problem, its freed
# cache would stay resident under whatever is allocated next (the next pair,
# the model's support vectors).  The engine returns them when it goes.
cdef extern from *:
    """
    #if defined(__GLIBC__)
    #include <malloc.h>
    static void ks_release_free_memory(void) { malloc_trim(0); }
    #else
    static void ks_release_free_memory(void) {}
    #endif
    """
    void ks_release_free_memory() noexcept nogil

# Engines that go while a run of many short sub-problems holds this (a grid's
# chains, kernsolve.model_selection) leave the memory to the process until the
# run ends: each trim handed back the pages the next chain's cache then took
# again, and the kernel zeroed every one of them first.
cdef Py_ssize_t _trim_holders = 0
cdef bint _trim_owed = False
cdef Py_ssize_t _trims = 0     # memory handed back so far (for the tests)


cdef void _release_free_memory() noexcept:
    global _trims
    _trims += 1
    ks_release_free_memory()


def _trim_count():
    """For the tests: how many times engines handed freed memory back."""
    return _trims


class free_memory_kept:
    """A context in which a departing engine does not hand its freed memory
    back to the system; the last holder to leave does it once, if owed."""

    def __enter__(self):
        global _trim_holders
        _trim_holders += 1
        return self

    def __exit__(self, *exc):
        global _trim_holders, _trim_owed
        _trim_holders -= 1
        if _trim_holders == 0 and _trim_owed:
            _trim_owed = False
            _release_free_memory()
        return False

# Deferred column swaps held before they are applied (16 bytes each).
cdef enum:
    MAX_PENDING = 4096

# The position-ordered copy of X takes its bytes from the -m budget up to this
# share of it, and the rest in addition to -m (sparse a9a: 5.5 MB, ijcnn1:
# 8 MB, a 10-class Fashion-MNIST pair of 4000 rows: 19 MB sparse, 25 MB
# dense; of 8000 rows: 38 MB sparse).  Why not all inside -m: the copy is a
# copy of data, sized by the data, not a cache; at LIBSVM's default -m 100 a
# pair of 8000 Fashion-MNIST rows would not get it, and SMO on those rows
# took 197.6 s without it against 60.2 s with it (1 thread; bench_smo.py's
# fmnist10-40k-m100; benchmarks/CURRENT.md, smo-copy-m100).  It is left out only when its part beyond -m would
# take more than COPY_BEYOND_M_SHARE of what kernsolve allows itself
# (_memory.memory_limit: half of the machine's memory or of ulimit -v).
#
# Why dense X needs it too (issue: SMO on dense rows 3.6x slower than on the
# same rows sparse).  A one-vs-one pair's rows are interleaved with the other
# classes' rows in X, and shrinking scatters the active ones further; read
# through perm, each kernel value reads one whole row (6 KB for 784 features)
# from somewhere in the whole matrix.  Measured with one thread's CPU time in
# one process (the same evaluation count either way), 20,000 Fashion-MNIST
# rows, RBF rows of 4,053 values: the pair's rows read in place, 500 ns a
# value; the same rows copied together, 141 ns, and 141 ns too in a random
# order; 4,000 random rows of the matrix 505 ns, 2,000 of them 150 ns; the
# first 6,000 rows (38 MB, more than the 32 MB L3) 179 ns.  So what costs is
# the rows' spread, not their order nor their bytes: the likely mechanism
# (this VM has no hardware counters to confirm it) is that the prefetchers
# stream consecutive lines, so contiguous rows are one long stream while
# scattered ones start a short one per row whose first lines wait on memory
# (perf: 65% of the dense run on one load of the squared-difference loop).
# Sparse X had the copy, so its rows never paid this.  The copy holds the
# same doubles, so every kernel value keeps its bits.
cdef double BY_POSITION_SHARE = 0.25
cdef double COPY_BEYOND_M_SHARE = 0.5

# Binary rows as bit sets (_bits.h) and the position-ordered copy of X; off
# only for tests and benchmarks that compare with the general path
# (binary_rows()) or with the rows read through perm (ordered_copy()).
cdef bint _binary_rows_on = True
cdef bint _ordered_copy_on = True


def binary_rows(on=None):
    """Whether KernelRows made from now on hold binary X as bit sets; ``on``
    sets it.  Returns the setting before the call.  For the tests and the
    benchmarks: the two paths give the same bits."""
    global _binary_rows_on
    before = bool(_binary_rows_on)
    if on is not None:
        _binary_rows_on = bool(on)
    return before


def ordered_copy(on=None):
    """Whether KernelRows made from now on copy X's rows in position order
    (when memory allows); ``on`` sets it.  Returns the setting before the
    call.  For the tests and the benchmarks: a value has the same bits with
    or without the copy."""
    global _ordered_copy_on
    before = bool(_ordered_copy_on)
    if on is not None:
        _ordered_copy_on = bool(on)
    return before

# With bit sets a kernel value costs about a popcount per word, while a cached
# value first costs a page fault: fresh memory is about 2.5 us a 4 KB page on
# the 2-core VM (0.2 s for every 400 MB touched), ~2.4 ns a value, more than
# computing a 2-word value.  So their rows' budget is at most this many MB a
# word: what -m allows beyond it was slower to fill than to recompute (a9a,
# 2 words, -m 1000: 3.2 s at 1 thread against 2.3 s capped at 128 MB; w8a, 5
# words: 1.12 against 0.98 s; benchmarks/history/RESULTS.md "Issue 16, session 10: a
# smaller cache for bit-set rows").  Wider bit sets cost more a value, and
# keep more of -m.
cdef double _bits_cache_mb_per_word = 64.0


def bits_cache_cap(mb_per_word=None):
    """MB of cached rows a bit-set word allows (engines made from now on hold
    at most that times their words, within -m); ``mb_per_word`` sets it
    (``float("inf")``: -m alone).  Returns the setting before the call.  For
    the tests and the benchmarks: the cache never changes a value."""
    global _bits_cache_mb_per_word
    before = _bits_cache_mb_per_word
    if mb_per_word is not None:
        if not mb_per_word > 0:
            raise ValueError(f"mb_per_word must be > 0, got {mb_per_word!r}")
        _bits_cache_mb_per_word = float(mb_per_word)
    return before

# kernel_traits (_kernel.pxd) by code, for tests/test_constants.py to compare
# with kernsolve/_constants.py's KERNEL_TABLE (the owner of the table).
KERNEL_TRAITS = {kind: {"name": kernel_traits(kind).name.decode(),
                        "base": kernel_traits(kind).base,
                        "blas": bool(kernel_traits(kind).blas)}
                 for kind in range(N_KERNELS)}
KERNEL_NAMES = {kind: traits["name"] for kind, traits in KERNEL_TRAITS.items()}


def _exp(x):
    """exp of a float64 array as the kernels take it, through ks_exp_block on
    the path the tests allow (_simd.vector_paths) and through ks_exp one value
    at a time: returns (block, one_by_one, 1 if the AVX2 path ran else 0).
    For the tests (tests/test_exp.py)."""
    cdef double[::1] a = np.array(x, dtype=np.float64, copy=True).ravel()
    cdef double[::1] b = np.array(a, copy=True)
    cdef Py_ssize_t i, n = a.shape[0]
    cdef int used
    with nogil:
        used = ks_simd(KS_AVX2)
        if n > 0:
            ks_exp_block(&a[0], n)
        for i in range(n):
            b[i] = ks_exp(b[i])
    return np.asarray(a), np.asarray(b), used


cdef inline void _gather(const kfloat* src, const Py_ssize_t* perm, Py_ssize_t start,
                         Py_ssize_t end, kfloat* out) noexcept nogil:
    """out[k] = src[perm[k]] for start <= k < end.  Four loads before their
    four stores: the compiler cannot move a load above a store to ``out``
    (they might alias), so the one-at-a-time loop waits on each; this
    spelling takes a third less time (a shared matrix's rows are most of a
    small-C fit's reads; AVX2's gather instructions are slower still on the
    EPYC we measure on)."""
    cdef Py_ssize_t k = start
    cdef kfloat a, b, c, d
    while k + 4 <= end:
        a = src[perm[k]]
        b = src[perm[k + 1]]
        c = src[perm[k + 2]]
        d = src[perm[k + 3]]
        out[k] = a
        out[k + 1] = b
        out[k + 2] = c
        out[k + 3] = d
        k += 4
    while k < end:
        out[k] = src[perm[k]]
        k += 1


cdef inline bint _grab_range(Py_ssize_t* next, Py_ssize_t step, Py_ssize_t count,
                             Py_ssize_t* first, Py_ssize_t* last) noexcept nogil:
    """The next `step` items of `count` for this thread (ks_grab): False when
    none is left, else [first, last)."""
    first[0] = ks_grab(next, step)
    if first[0] >= count:
        return False
    last[0] = first[0] + step if first[0] + step < count else count
    return True


# A row fill as a job of the solver's thread team (_team.h): every thread
# takes `step` blocks at a time until none is left, as OpenMP's dynamic
# schedule does; a value's bits do not depend on who computes it.
cdef struct FillJob:
    const KernelParams* kp
    const Query* q
    const Rows* X
    const Py_ssize_t* perm
    const double* norms
    kfloat* out
    Py_ssize_t start, end, blocks, step
    Py_ssize_t next               # the first block not taken (ks_grab)


cdef void _fill_job(void* arg, int c, int nc) noexcept nogil:
    cdef FillJob* f = <FillJob*>arg
    cdef Py_ssize_t first, last, b, lo
    while _grab_range(&f.next, f.step, f.blocks, &first, &last):
        for b in range(first, last):
            lo = f.start + b * VALUE_BLOCK
            _values_block(f.kp, f.q, f.X, f.perm, lo,
                          lo + VALUE_BLOCK if lo + VALUE_BLOCK < f.end else f.end,
                          f.norms, f.out)


# Column swaps (shrinking's swap_index) reach the cached rows lazily.  A run
# of swaps between two reads of the cache is closed into a *batch*
# (_apply_pending): the swaps composed into the permutation of the positions
# they touch (touched[k] takes the value that was at touched[source[k]]), kept
# in a log.  The rows a batch cuts (holding lo but not hi of a swap) are
# dropped at once, as LIBSVM drops them, so the cache holds the same rows with
# the same lengths as LIBSVM's; the other rows are permuted only when next
# returned (_catch_up), or all together when the log is full (_flush_log).
# Rows evicted before that are never touched: on a9a with -m 1000 the eager
# walk over every cached row at every shrinking pass was 1.3 s of a 4.3 s solve.
cdef enum:
    LOG_BATCHES = 256                  # batches the log holds
    LOG_ENTRIES = 32 * MAX_PENDING     # touched positions it holds, all batches

# Batches the swap log holds before every cached row catches up (at most
# LOG_BATCHES; the tests lower it to flush often, _log_batches()).
cdef Py_ssize_t _log_limit = 256


def _log_batches(Py_ssize_t k):
    """For the tests: engines made from now on flush their swap log after k
    batches (1 <= k <= 256); returns the setting before the call."""
    global _log_limit
    before = _log_limit
    if not 1 <= k <= LOG_BATCHES:
        raise ValueError(f"k must be in [1, {LOG_BATCHES}], got {k}")
    _log_limit = k
    return before


cdef void _permute_row(kfloat* data, Py_ssize_t length, const Py_ssize_t* touched,
                       const Py_ssize_t* source, Py_ssize_t u) noexcept nogil:
    """One batch on a row it does not cut: the row holds both positions of each
    swap or neither, so its touched positions below `length` (the first m of
    touched, which is increasing) trade values among themselves only."""
    cdef Py_ssize_t a = 0, b = u, m, k
    cdef kfloat buf[2 * MAX_PENDING]
    while a < b:
        m = (a + b) // 2
        if touched[m] < length:
            a = m + 1
        else:
            b = m
    m = a
    for k in range(m):
        buf[k] = data[touched[k]]
    for k in range(m):
        data[touched[k]] = buf[source[k]]


# The log's flush as a job of the thread team: rows handed out `step` at a time.
cdef struct CatchUpJob:
    kfloat** data
    const Py_ssize_t* length
    Py_ssize_t* epoch             # by position: the batches a row has had
    const Py_ssize_t* rows
    const Py_ssize_t* log_at      # batch b's entries start at log_at[b - base]
    const Py_ssize_t* touched
    const Py_ssize_t* source
    Py_ssize_t base, last, n_rows, step
    Py_ssize_t next               # the first row not taken (ks_grab)


cdef void _catch_up_rows(CatchUpJob* j, Py_ssize_t first, Py_ssize_t last) noexcept nogil:
    cdef Py_ssize_t r, h, b, at
    for r in range(first, last):
        h = j.rows[r]
        for b in range(j.epoch[h], j.last):
            at = j.log_at[b - j.base]
            _permute_row(j.data[h], j.length[h], j.touched + at, j.source + at,
                         j.log_at[b - j.base + 1] - at)
        j.epoch[h] = j.last


cdef void _catch_up_job(void* arg, int c, int nc) noexcept nogil:
    cdef CatchUpJob* j = <CatchUpJob*>arg
    cdef Py_ssize_t first, last
    while _grab_range(&j.next, j.step, j.n_rows, &first, &last):
        _catch_up_rows(j, first, last)


cdef int _compare_positions(const void* a, const void* b) noexcept nogil:
    cdef Py_ssize_t x = (<const Py_ssize_t*>a)[0], y = (<const Py_ssize_t*>b)[0]
    return (x > y) - (x < y)


# A row fill from bit sets (_bits.h) as a job of the team, `step` blocks of
# BIT_BLOCK values at a time.
cdef enum:
    BIT_BLOCK = 256

cdef struct BitsJob:
    const uint64_t* q
    const uint64_t* rows
    Py_ssize_t words
    int hamming
    const kfloat* table
    kfloat* out
    Py_ssize_t start, end, blocks, step
    Py_ssize_t next


cdef inline void _bits_blocks(BitsJob* f, Py_ssize_t first, Py_ssize_t last) noexcept nogil:
    cdef Py_ssize_t lo = f.start + first * BIT_BLOCK
    cdef Py_ssize_t hi = f.start + last * BIT_BLOCK
    ks_bits_fill(f.q, f.rows, f.words, lo, hi if hi < f.end else f.end, f.hamming,
                 f.table, f.out)


cdef void _bits_job(void* arg, int c, int nc) noexcept nogil:
    cdef BitsJob* f = <BitsJob*>arg
    cdef Py_ssize_t first, last
    while _grab_range(&f.next, f.step, f.blocks, &first, &last):
        _bits_blocks(f, first, last)


cdef bint _is_binary(const Rows* X, const Py_ssize_t* start, Py_ssize_t n) noexcept nogil:
    """Every value of the rows the positions use is 0 or 1."""
    cdef const double* v
    cdef const int32_t* ix
    cdef Py_ssize_t p, t, m
    for p in range(n):
        m = row_ptr(X, p if start == NULL else start[p], &v, &ix)
        for t in range(m):
            if v[t] != 0.0 and v[t] != 1.0:
                return False
    return True


# The position-ordered copy of X (_order_by_position) as a job: for sparse X
# the row pointers are laid out first; then chunk c copies its share of the rows.
cdef struct CopyJob:
    const Rows* X
    const Py_ssize_t* perm
    const int64_t* to             # the copy's row pointers (sparse X)
    double* values
    int32_t* indices
    Py_ssize_t n


cdef void _copy_rows_job(void* arg, int c, int nc) noexcept nogil:
    cdef CopyJob* j = <CopyJob*>arg
    cdef Py_ssize_t k, t, r, d = j.X.n_features
    cdef int64_t a, at
    for k in range((j.n * c) // nc, (j.n * (c + 1)) // nc):
        r = j.perm[k]
        if not j.X.is_sparse:
            memcpy(j.values + k * d, j.X.values + r * d, d * sizeof(double))
            continue
        a = j.X.indptr[r]
        at = j.to[k]
        for t in range(j.X.indptr[r + 1] - a):
            j.values[at + t] = j.X.values[a + t]
            j.indices[at + t] = j.X.indices[a + t]


cdef inline double _copy_bytes(const Rows* X, Py_ssize_t n, int64_t nnz) noexcept nogil:
    """The position-ordered copy's bytes for n rows of X: sparse, 8 a stored
    value and 4 its column, 8 a row pointer and 8 a norm (and one pointer
    more); dense, 8 a value and 8 a norm."""
    if X.is_sparse:
        return 12.0 * nnz + 16.0 * (n + 1)
    return 8.0 * n * X.n_features + 8.0 * n


cdef inline void _swap_dense_rows(double* values, double* norms, Py_ssize_t d,
                                  Py_ssize_t p, Py_ssize_t q) noexcept nogil:
    """Rows p and q of the dense position-ordered copy trade places (one
    of shrinking's swaps: O(d), where rebuilding the copy is O(n d))."""
    cdef Py_ssize_t t
    cdef double x
    cdef double* a = values + p * d
    cdef double* b = values + q * d
    for t in range(d):
        x = a[t]; a[t] = b[t]; b[t] = x
    x = norms[p]; norms[p] = norms[q]; norms[q] = x


# --------------------------------------------------------------- KernelRows

cdef class KernelRows:
    """KernelRows(X, kernel_type, degree, gamma, coef0, cache_mb, n_threads, rows=None)

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
        Byte budget in MB (2**20 bytes) of the cached rows and of the
        position-ordered copy of X (when it is made: at most a quarter of the
        budget); the rows' part is raised to at least two full rows.
    n_threads : int
        Threads used to compute a row.
    rows : array of int, optional
        The data rows of X the positions start as (a sub-problem's rows,
        without copying them out of X); default all of X, in order.
    gram : float32 ndarray of shape (N, N), optional
        ``kernel_gram(X, ...)`` with the same kernel: the rows are gathered
        from it (the values the engine would compute, to the bit) instead of
        computed; it is read, never written, so solves running side by side
        share one.  The cache then keeps only its minimum of two rows (a
        gathered row costs as little as a cached one).
    """

    def __init__(self, X, int kernel_type, int degree, double gamma, double coef0,
                 double cache_mb, int n_threads, rows=None, gram=None):
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
        cdef Py_ssize_t n = self.X.n_rows, i, p
        if kernel_type == PRECOMPUTED and (self.X.is_sparse or self.X.n_features != n):
            raise ValueError("a precomputed kernel must be a dense n x n matrix, "
                             f"got shape {X.shape}")
        cdef const Py_ssize_t* start = NULL
        cdef const Py_ssize_t[::1] picked
        if rows is not None:
            rows = np.ascontiguousarray(rows, dtype=np.intp)
            if rows.ndim != 1:
                raise ValueError(f"rows must be one-dimensional, got shape {rows.shape}")
            if rows.shape[0] and (rows.min() < 0 or rows.max() >= n):
                raise ValueError(f"rows must be data rows of X, in [0, {n})")
            n = rows.shape[0]
            if n:
                picked = rows
                start = &picked[0]
        if n < 1:
            raise ValueError("X has no rows")
        cdef const kfloat[:, ::1] shared
        if gram is not None:
            if kernel_type == PRECOMPUTED:
                raise ValueError("gram: a precomputed kernel is its own matrix")
            shared = gram
            if shared.shape[0] != self.X.n_rows or shared.shape[1] != self.X.n_rows:
                raise ValueError(f"gram must be {self.X.n_rows} x {self.X.n_rows} "
                                 f"(X's rows), got {tuple(gram.shape)}")
            self._gram_keepalive = gram
            self.gram = &shared[0, 0]
            self.gram_stride = self.X.n_rows
            cache_mb = 0.0          # the minimum: two rows (see above)
        self.n = n
        self.params.kind = kernel_type
        self.params.degree = degree
        self.params.gamma = gamma
        self.params.coef0 = coef0
        self.n_threads = n_threads
        self.par_min_work = PAR_MIN_WORK

        self.perm = <Py_ssize_t*>malloc(n * sizeof(Py_ssize_t))
        # by data row: X's rows, of which the positions use n
        self.sq_norms = <double*>malloc(max(self.X.n_rows, 1) * sizeof(double))
        self.diag = <double*>malloc(n * sizeof(double))
        self.cache_data = <kfloat**>calloc(n, sizeof(kfloat*))
        self.cache_len = <Py_ssize_t*>calloc(n, sizeof(Py_ssize_t))
        self.lru_prev = <Py_ssize_t*>malloc((n + 1) * sizeof(Py_ssize_t))
        self.lru_next = <Py_ssize_t*>malloc((n + 1) * sizeof(Py_ssize_t))
        self.use_scatter = (self.X.is_sparse and kernel_type != PRECOMPUTED
                            and self.X.n_features <= SCATTER_MAX_FEATURES)
        if self.use_scatter:
            self.work = <double*>calloc(max(self.X.n_features, 1), sizeof(double))
        self.pending = <Py_ssize_t*>malloc(2 * MAX_PENDING * sizeof(Py_ssize_t))
        self.n_pending = 0
        self.swap_rows = <Py_ssize_t*>malloc(n * sizeof(Py_ssize_t))
        self.log_touched = <Py_ssize_t*>malloc(LOG_ENTRIES * sizeof(Py_ssize_t))
        self.log_source = <Py_ssize_t*>malloc(LOG_ENTRIES * sizeof(Py_ssize_t))
        self.log_at = <Py_ssize_t*>malloc((LOG_BATCHES + 1) * sizeof(Py_ssize_t))
        self.row_epoch = <Py_ssize_t*>calloc(n, sizeof(Py_ssize_t))
        self.swap_slot = <Py_ssize_t*>malloc(n * sizeof(Py_ssize_t))
        self.swap_cut = <int*>malloc((n + 2) * sizeof(int))
        if (self.perm == NULL or self.sq_norms == NULL or self.diag == NULL
                or self.cache_data == NULL or self.cache_len == NULL
                or self.lru_prev == NULL or self.lru_next == NULL
                or (self.use_scatter and self.work == NULL) or self.pending == NULL
                or self.swap_rows == NULL
                or self.log_touched == NULL or self.log_source == NULL
                or self.log_at == NULL or self.row_epoch == NULL
                or self.swap_slot == NULL or self.swap_cut == NULL):
            raise MemoryError("KernelRows: cannot allocate the kernel cache tables")
        self.lru_prev[n] = n
        for i in range(n):
            self.swap_slot[i] = -1
        self.log_at[0] = 0          # an empty log: batches base .. epoch - 1, none
        self.log_limit = _log_limit
        self.lru_next[n] = n
        cdef int64_t nnz = 0
        with nogil:
            for p in range(n):
                i = p if start == NULL else start[p]
                self.perm[p] = i
                if kernel_type == PRECOMPUTED:
                    self.sq_norms[i] = 0.0
                else:
                    self.sq_norms[i] = _row_norm(&self.X, i, kernel_type)
                self.diag[p] = _diag_value(&self.params, &self.X, i, self.sq_norms[i])
                if self.X.is_sparse:
                    nnz += self.X.indptr[i + 1] - self.X.indptr[i]
        self.by_pos_nnz = nnz
        cdef double entries = cache_mb * 1048576.0 / <double>sizeof(kfloat)
        # Binary X as bit sets in position order when they are narrower than
        # the rows' nonzeros and fit in the copy's share of the budget.
        cdef Py_ssize_t words = (self.X.n_features + 63) // 64
        cdef double bits_bytes = 8.0 * words * n + sizeof(kfloat) * (64.0 * words + 1)
        cdef double share = BY_POSITION_SHARE * entries * sizeof(kfloat)
        cdef double beyond_limit = COPY_BEYOND_M_SHARE * memory_limit()
        cdef bint binary = False
        cdef double cap
        if (_binary_rows_on and kernel_type != PRECOMPUTED and self.gram == NULL and words > 0
                and (not self.X.is_sparse or words <= nnz // n)
                and bits_bytes - min(bits_bytes, share) <= beyond_limit):
            with nogil:
                binary = _is_binary(&self.X, start, n)
        if binary:
            self._make_bits(words)
            self.by_pos_bytes = <Py_ssize_t>bits_bytes
            self.by_pos_in_budget = <Py_ssize_t>min(bits_bytes, share)
            entries -= self.by_pos_in_budget / <double>sizeof(kfloat)
            cap = _bits_cache_mb_per_word * words * 1048576.0 / <double>sizeof(kfloat)
            if entries > cap:
                entries = cap
        # The position-ordered copy of X (sparse: nonzeros, row pointers and
        # norms; dense: rows and norms): its bytes come out of the budget up
        # to a quarter of it, the rest is taken beyond -m (within a share of
        # memory_limit()).
        cdef double copy_bytes = _copy_bytes(&self.X, n, nnz)
        if (_ordered_copy_on and kernel_type != PRECOMPUTED and not binary and self.gram == NULL
                and copy_bytes - min(copy_bytes, share) <= beyond_limit):
            self.by_pos_in_budget = <Py_ssize_t>min(copy_bytes, share)
            entries -= self.by_pos_in_budget / <double>sizeof(kfloat)
            self.by_pos_on = True
            self.by_pos = self.X      # n_features, is_sparse; arrays set when built
            self.by_pos.n_rows = n
            self.by_pos.values = NULL
            self.by_pos_bytes = <Py_ssize_t>copy_bytes
            # rows picked out of X: copied in their order before the first
            # row is computed (the copy a sub-problem would otherwise make)
            self.by_pos_stale = start != NULL
        cdef double min_entries = 2.0 * <double>n
        self.budget = <Py_ssize_t>(entries if entries > min_entries else min_entries)
        self.free_entries = self.budget
        if kernel_type == PRECOMPUTED:
            self.row_cost = 1.0
        elif binary:
            self.row_cost = 1.0 + words
        elif self.X.is_sparse:
            self.row_cost = 1.0 + <double>nnz / <double>n      # as _mean_cost, on the rows used
        else:
            self.row_cost = _mean_cost(&self.X)

    cdef int _make_bits(self, Py_ssize_t words) except -1:
        """The bit sets of the positions' rows and the value of each count."""
        cdef Py_ssize_t p, b, n_table = 64 * words + 1
        self.bits = <uint64_t*>malloc(self.n * words * sizeof(uint64_t))
        self.bit_table = <kfloat*>malloc(n_table * sizeof(kfloat))
        if self.bits == NULL or self.bit_table == NULL:
            raise MemoryError("KernelRows: cannot allocate the bit sets of binary X")
        self.bit_words = words
        self.bit_hamming = kernel_traits(self.params.kind).base != BASE_DOT
        with nogil:
            for p in range(self.n):
                row_bits(&self.X, self.perm[p], self.bits + p * words, words)
            for b in range(n_table):
                # the general path's value for the base b (an integer there too)
                self.bit_table[b] = <kfloat>_finish(&self.params, <double>b)
        return 0

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
        free(self.pending)
        free(self.swap_rows)
        free(self.log_touched)
        free(self.log_source)
        free(self.log_at)
        free(self.row_epoch)
        free(self.swap_slot)
        free(self.swap_cut)
        free(self.by_pos_values)
        free(self.by_pos_indices)
        free(self.by_pos_indptr)
        free(self.by_pos_norms)
        free(self.bits)
        free(self.bit_table)
        global _trim_owed
        if self.peak_entries * sizeof(kfloat) + self.by_pos_bytes > (4 << 20):   # > 4 MB held
            if _trim_holders:
                _trim_owed = True
            else:
                _release_free_memory()

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
        if <double>(end - start) * self.row_cost < self.par_min_work:
            nt = 1
        cdef Py_ssize_t chunk = _chunk(end - start, self.row_cost, nt)
        if kp.kind == PRECOMPUTED:
            pre = X.values + i * X.n_features
            for k in range(start, end):
                out[k] = <kfloat>pre[perm[k]]
            return
        if self.gram != NULL:
            _gather(self.gram + i * self.gram_stride, perm, start, end, out)
            return
        if self.bits != NULL:
            self._fill_bits(p, start, end, out, nt, chunk)
            return
        q = _make_query(X, i, norms[i], self.work, self.use_scatter)
        if self.by_pos_stale:
            self._order_by_position()
        if self.by_pos.values != NULL:
            # the same rows, stored in position order: read in order
            X = &self.by_pos
            perm = NULL
            norms = self.by_pos_norms
        # Blocks of VALUE_BLOCK values (their exponentials taken together); a
        # value's bits do not depend on its block, so not on the threads either.
        cdef Py_ssize_t blocks = (end - start + VALUE_BLOCK - 1) // VALUE_BLOCK, b, lo
        cdef FillJob job
        chunk = (chunk + VALUE_BLOCK - 1) // VALUE_BLOCK
        if nt > 1 and self.team != NULL:
            job.kp = kp
            job.q = &q
            job.X = X
            job.perm = perm
            job.norms = norms
            job.out = out
            job.start = start
            job.end = end
            job.blocks = blocks
            job.step = chunk
            job.next = 0
            ks_team_run(self.team, _fill_job, <void*>&job, nt)
        elif nt > 1:
            for b in prange(blocks, schedule="dynamic", chunksize=chunk, num_threads=nt):
                lo = start + b * VALUE_BLOCK
                _values_block(kp, &q, X, perm, lo,
                              lo + VALUE_BLOCK if lo + VALUE_BLOCK < end else end,
                              norms, out)
        else:
            for b in range(blocks):
                lo = start + b * VALUE_BLOCK
                _values_block(kp, &q, X, perm, lo,
                              lo + VALUE_BLOCK if lo + VALUE_BLOCK < end else end,
                              norms, out)
        _clear_query(&q, self.work)

    cdef void _fill_bits(self, Py_ssize_t p, Py_ssize_t start, Py_ssize_t end,
                         kfloat* out, int nt, Py_ssize_t chunk) noexcept nogil:
        """_fill from the bit sets: the same values, a popcount each."""
        cdef BitsJob job
        cdef Py_ssize_t b
        job.q = self.bits + p * self.bit_words
        job.rows = self.bits
        job.words = self.bit_words
        job.hamming = self.bit_hamming
        job.table = self.bit_table
        job.out = out
        job.start = start
        job.end = end
        job.blocks = (end - start + BIT_BLOCK - 1) // BIT_BLOCK
        job.step = (chunk + BIT_BLOCK - 1) // BIT_BLOCK
        job.next = 0
        if nt > 1 and self.team != NULL:
            ks_team_run(self.team, _bits_job, <void*>&job, nt)
        elif nt > 1:
            for b in prange(job.blocks, schedule="dynamic", chunksize=job.step,
                            num_threads=nt):
                _bits_blocks(&job, b, b + 1)
        else:
            _bits_blocks(&job, 0, job.blocks)

    cdef const kfloat* get_row(self, Py_ssize_t p, Py_ssize_t length) noexcept nogil:
        cdef Py_ssize_t old, more, h
        cdef kfloat* data
        if self.n_pending > 0:
            self._apply_pending()
        if length > self.n:
            length = self.n
        if length < 1:
            length = 1
        old = self.cache_len[p]
        if old > 0:
            self._lru_remove(p)
            if self.row_epoch[p] < self.epoch:
                self._catch_up(p)
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
        self.row_epoch[p] = self.epoch
        self.free_entries -= more
        if self.budget - self.free_entries > self.peak_entries:
            self.peak_entries = self.budget - self.free_entries
        self._fill(p, old, length, data)
        self.n_kernel_evals += more
        self.n_cache_misses += 1
        self._lru_insert(p)
        return data

    cdef void swap(self, Py_ssize_t p, Py_ssize_t q) noexcept nogil:
        cdef Py_ssize_t tmp_i
        cdef double tmp_d
        cdef kfloat* tmp_row
        if p == q:
            return
        tmp_i = self.perm[p]; self.perm[p] = self.perm[q]; self.perm[q] = tmp_i
        tmp_d = self.diag[p]; self.diag[p] = self.diag[q]; self.diag[q] = tmp_d
        cdef Py_ssize_t w
        cdef uint64_t tmp_w
        if self.bits != NULL:
            for w in range(self.bit_words):
                tmp_w = self.bits[p * self.bit_words + w]
                self.bits[p * self.bit_words + w] = self.bits[q * self.bit_words + w]
                self.bits[q * self.bit_words + w] = tmp_w
        if self.cache_len[p] > 0:
            self._lru_remove(p)
        if self.cache_len[q] > 0:
            self._lru_remove(q)
        tmp_row = self.cache_data[p]; self.cache_data[p] = self.cache_data[q]
        self.cache_data[q] = tmp_row
        tmp_i = self.cache_len[p]; self.cache_len[p] = self.cache_len[q]
        self.cache_len[q] = tmp_i
        tmp_i = self.row_epoch[p]; self.row_epoch[p] = self.row_epoch[q]
        self.row_epoch[q] = tmp_i
        if self.cache_len[p] > 0:
            self._lru_insert(p)
        if self.cache_len[q] > 0:
            self._lru_insert(q)
        # Columns lo and hi trade places in every cached row (LIBSVM's
        # swap_index): _apply_pending, at the next read of the cache, closes
        # the run of swaps into a batch (see the log above).
        if self.by_pos.values != NULL and not self.by_pos.is_sparse:
            _swap_dense_rows(self.by_pos_values, self.by_pos_norms, self.X.n_features, p, q)
        elif self.by_pos_on:
            self.by_pos_stale = True
        if self.n_pending == MAX_PENDING:
            self._apply_pending()
        self.pending[2 * self.n_pending] = p if p < q else q
        self.pending[2 * self.n_pending + 1] = q if p < q else p
        self.n_pending += 1

    cdef void _apply_pending(self) noexcept nogil:
        """Close the swaps made since the last read into a batch of the log:
        drop the rows it cuts now (a row's fate depends only on its length
        and the swaps, so this ends in the state swapping one pair at a time
        would, tests/test_kernel_cache.py) and leave the others' values to
        _catch_up."""
        cdef Py_ssize_t count = self.n_pending, t, h, k, u = 0, x, a, b, at
        cdef Py_ssize_t first_lo, last_hi, nb
        if count == 0:
            return
        self.n_pending = 0
        nb = self.epoch - self.log_base
        if nb >= self.log_limit or self.log_at[nb] + 2 * count > LOG_ENTRIES:
            self._flush_log()
            nb = 0
        at = self.log_at[nb]
        first_lo = self.pending[0]
        last_hi = self.pending[1]
        for t in range(1, count):
            if self.pending[2 * t] < first_lo:
                first_lo = self.pending[2 * t]
            if self.pending[2 * t + 1] > last_hi:
                last_hi = self.pending[2 * t + 1]
        # The touched positions, increasing, and the swaps composed over them.
        for t in range(2 * count):
            x = self.pending[t]
            if self.swap_slot[x] < 0:
                self.swap_slot[x] = u
                self.log_touched[at + u] = x
                u += 1
        qsort(self.log_touched + at, u, sizeof(Py_ssize_t), _compare_positions)
        for k in range(u):
            self.swap_slot[self.log_touched[at + k]] = k
            self.log_source[at + k] = k
        for t in range(count):
            a = self.swap_slot[self.pending[2 * t]]
            b = self.swap_slot[self.pending[2 * t + 1]]
            x = self.log_source[at + a]
            self.log_source[at + a] = self.log_source[at + b]
            self.log_source[at + b] = x
        for k in range(u):
            self.swap_slot[self.log_touched[at + k]] = -1
        self.log_at[nb + 1] = at + u
        self.epoch += 1
        # Drop the rows of a length L that some swap cuts (lo < L <= hi):
        # cut[L - first_lo] counts those swaps, for L in first_lo + 1 .. last_hi.
        for x in range(last_hi - first_lo + 2):
            self.swap_cut[x] = 0
        for t in range(count):
            self.swap_cut[self.pending[2 * t] + 1 - first_lo] += 1
            self.swap_cut[self.pending[2 * t + 1] + 1 - first_lo] -= 1
        for x in range(1, last_hi - first_lo + 2):
            self.swap_cut[x] += self.swap_cut[x - 1]
        h = self.lru_next[self.n]
        while h != self.n:
            x = self.lru_next[h]
            if first_lo < self.cache_len[h] <= last_hi and \
                    self.swap_cut[self.cache_len[h] - first_lo] > 0:
                self._drop(h)
            h = x

    cdef void _catch_up(self, Py_ssize_t h) noexcept nogil:
        """Give the cached row at position h the batches it has not had."""
        cdef Py_ssize_t b, at
        for b in range(self.row_epoch[h], self.epoch):
            at = self.log_at[b - self.log_base]
            _permute_row(self.cache_data[h], self.cache_len[h], self.log_touched + at,
                         self.log_source + at, self.log_at[b - self.log_base + 1] - at)
        self.row_epoch[h] = self.epoch

    cdef void _flush_log(self) noexcept nogil:
        """Catch every cached row up (shared out to the team), then empty the log."""
        cdef Py_ssize_t h, n_rows = 0
        cdef CatchUpJob job
        h = self.lru_next[self.n]
        while h != self.n:
            if self.row_epoch[h] < self.epoch:
                self.swap_rows[n_rows] = h
                n_rows += 1
            h = self.lru_next[h]
        job.data = self.cache_data
        job.length = self.cache_len
        job.epoch = self.row_epoch
        job.rows = self.swap_rows
        job.log_at = self.log_at
        job.touched = self.log_touched
        job.source = self.log_source
        job.base = self.log_base
        job.last = self.epoch
        job.n_rows = n_rows
        job.step = 16
        job.next = 0
        if self.team != NULL and self.n_threads > 1 and n_rows >= 64:
            ks_team_run(self.team, _catch_up_job, <void*>&job, self.n_threads)
        else:
            _catch_up_rows(&job, 0, n_rows)
        self.log_base = self.epoch
        self.log_at[0] = 0

    cdef void _order_by_position(self) noexcept nogil:
        """Copy X's rows in position order (made at the first swap or for
        picked rows; sparse X's is refreshed after swaps: O(nonzeros), once
        per shrinking pass, dense X's rows are swapped in place by swap()).
        Out of memory: rows are read through perm, as before."""
        cdef bint sparse = self.X.is_sparse
        cdef Py_ssize_t n = self.n, k, r
        cdef Py_ssize_t values = self.by_pos_nnz if sparse else n * self.X.n_features
        cdef int64_t at = 0
        cdef CopyJob job
        self.by_pos_stale = False
        if self.by_pos_values == NULL:
            self.by_pos_values = <double*>malloc((values if values > 0 else 1) * sizeof(double))
            self.by_pos_norms = <double*>malloc(n * sizeof(double))
            if sparse:
                self.by_pos_indices = <int32_t*>malloc((values if values > 0 else 1)
                                                       * sizeof(int32_t))
                self.by_pos_indptr = <int64_t*>malloc((n + 1) * sizeof(int64_t))
            if (self.by_pos_values == NULL or self.by_pos_norms == NULL
                    or (sparse and (self.by_pos_indices == NULL or self.by_pos_indptr == NULL))):
                free(self.by_pos_values)
                free(self.by_pos_indices)
                free(self.by_pos_indptr)
                free(self.by_pos_norms)
                self.by_pos_values = NULL
                self.by_pos_indices = NULL
                self.by_pos_indptr = NULL
                self.by_pos_norms = NULL
                self.by_pos_on = False     # no copy: never try again
                self.by_pos.values = NULL
                return
        if sparse:
            self.by_pos_indptr[0] = 0
        for k in range(n):
            r = self.perm[k]
            if sparse:
                at += self.X.indptr[r + 1] - self.X.indptr[r]
                self.by_pos_indptr[k + 1] = at
            self.by_pos_norms[k] = self.sq_norms[r]
        job.X = &self.X
        job.perm = self.perm
        job.to = self.by_pos_indptr
        job.values = self.by_pos_values
        job.indices = self.by_pos_indices
        job.n = n
        if self.team != NULL and self.n_threads > 1 and <double>values >= PAR_MIN_WORK:
            ks_team_run(self.team, _copy_rows_job, <void*>&job, self.n_threads)
        else:
            _copy_rows_job(<void*>&job, 0, 1)
        self.by_pos.values = self.by_pos_values
        self.by_pos.indices = self.by_pos_indices
        self.by_pos.indptr = self.by_pos_indptr

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

    def restart(self, rows):
        """Put the positions back in the order of ``rows`` (data rows of X: the
        ones the positions hold now, in any order), keeping the cached rows,
        and zero the counters: the next solve of the same sub-problem starts
        as on a new engine but finds the rows the last one computed.  A warm
        grid's chain (the fits of one fold along C) solves the same
        sub-problem at each C and reuses one engine so (``WarmStart``).  The
        swaps are shrinking's own (:meth:`swap`), so every cached value keeps
        its bits.  ValueError unless ``rows`` holds the positions' rows."""
        want_arr = np.ascontiguousarray(rows, dtype=np.intp)
        cdef Py_ssize_t n = self.n, p, q, r
        now = np.array(<Py_ssize_t[:n]> self.perm) if n else np.empty(0, dtype=np.intp)
        if want_arr.ndim != 1 or not np.array_equal(np.sort(want_arr), np.sort(now)):
            raise ValueError("restart: rows must be the data rows the positions hold")
        at_arr = np.full(self.X.n_rows, -1, dtype=np.intp)
        at_arr[now] = np.arange(n, dtype=np.intp)
        cdef const Py_ssize_t[::1] want = want_arr
        cdef Py_ssize_t[::1] at = at_arr
        with nogil:
            for p in range(n):
                r = want[p]
                q = at[r]
                if q != p:
                    at[self.perm[p]] = q
                    self.swap(p, q)
                    at[r] = p
        self.reset_counters()

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
        self._apply_pending()
        return (self.budget - self.free_entries) * sizeof(kfloat)

    @property
    def budget_bytes(self):
        """The cached rows' budget in bytes: cache_mb less the position-ordered
        copy's part taken from it (``copy_in_budget_bytes``), raised to two
        full rows."""
        return self.budget * sizeof(kfloat)

    @property
    def peak_cached_bytes(self):
        """The most bytes of kernel values the cache has held at once."""
        return self.peak_entries * sizeof(kfloat)

    @property
    def copy_bytes(self):
        """Bytes of the position-ordered copy of X (0 when none is made):
        binary X's bit sets, held from the start, or X's copy (sparse: 12
        bytes a stored value and 16 a row; dense: 8 a value and 8 a row),
        held once the first row is computed after a swap (at once for
        ``rows`` picked out of X)."""
        return self.by_pos_bytes if self.by_pos_on or self.bits != NULL else 0

    @property
    def copy_in_budget_bytes(self):
        """The part of ``copy_bytes`` taken from cache_mb: all of it up to a
        quarter of cache_mb; the rest is held beyond it."""
        return self.by_pos_in_budget if self.by_pos_on or self.bits != NULL else 0

    @property
    def binary(self):
        """Whether kernel rows come from bit sets of binary X (_bits.h)."""
        return self.bits != NULL

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
        self._apply_pending()
        return np.array(<Py_ssize_t[:self.n]>self.cache_len, dtype=np.intp)

    def lru_positions(self):
        """Positions holding a cached row, least recently used first."""
        self._apply_pending()
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


# ------------------------------------------------------------ kernel_gram

def kernel_gram(X, int kernel_type, int degree, double gamma, double coef0, int n_threads,
                out=None):
    """The float32 kernel matrix over all rows of X, as ``KernelRows`` rows hold it.

    Row ``i`` is what a ``KernelRows`` over X computes for data row ``i``
    (the same code, ``_fill``), so a solve that gathers its rows from this
    matrix (``KernelRows(..., gram=G)``) sees the same bits as one that
    computes them.  Cross-validation computes it once for all the folds and
    C values of a kernel (``kernsolve.solvers.libsvm.shared_kernel``).
    ``out``: an n x n C-contiguous float32 array to write it in (a grid's
    matrix of the last kernel, whose pages are already the process's: a new
    one of svmguide1's 36 MB costs the kernel's page zeroing first), or None
    for a new one.
    """
    if kernel_type == PRECOMPUTED:
        raise ValueError("kernel_gram: a precomputed kernel is its own matrix")
    cdef KernelRows kr = KernelRows(X, kernel_type, degree, gamma, coef0, 0.0, n_threads)
    cdef Py_ssize_t n = kr.n, p
    if out is None:
        out = np.empty((n, n), dtype=np.float32)
    elif not (isinstance(out, np.ndarray) and out.shape == (n, n)
              and out.dtype == np.float32 and out.flags.c_contiguous and out.flags.writeable):
        raise ValueError(f"kernel_gram: out must be a writeable C-contiguous {n} x {n} "
                         f"float32 array")
    cdef kfloat[:, ::1] G = out
    cdef bint mirror = _mirror_safe(kr)
    with nogil:
        for p in range(n):
            # a symmetric computation: the upper triangle, mirrored below
            kr._fill(p, p if mirror else 0, n, &G[p, 0])
        if mirror:
            _mirror_lower(&G[0, 0], n)
    return out


def _gram_mirrored(X, int kernel_type):
    """For the tests: whether kernel_gram computes this kernel's matrix over X
    above its diagonal and mirrors it (:func:`_mirror_safe`)."""
    return bool(_mirror_safe(KernelRows(X, kernel_type, 3, 1.0, 0.0, 0.0, 1)))


cdef bint _mirror_safe(KernelRows kr):
    """Whether K(x_i, x_j) and K(x_j, x_i), each computed as a row of ``kr``
    computes it, are the same bits for every pair, so that the kernel matrix
    may be computed above its diagonal and mirrored (half the values).  They
    are when the kernel is a function of <x, y> or ||x - y||^2 and the two
    rows' values meet position by position in the same order: dense rows,
    or sparse rows that all hold the same columns (svmguide1's four): the
    products (or squared differences) are the same numbers summed in the
    same order, and the norms' sum is commutative.  Not for sparse rows of
    different columns (the sums run in the order of one row's nonzeros: of
    3000 random sparse rows of 784 columns, 2 of the 4.5 million pairs then
    differ in float32), the Laplacian's L1 sums (they start from the first
    row's norm) or bit sets."""
    cdef const Rows* X = &kr.X
    cdef Py_ssize_t i, k, m
    if kernel_traits(kr.params.kind).base not in (BASE_DOT, BASE_SQDIST) \
            or kr.params.kind == PRECOMPUTED or kr.bits != NULL:
        return False
    if not X.is_sparse:
        return True
    m = X.indptr[1] - X.indptr[0] if X.n_rows else 0
    for i in range(1, X.n_rows):
        if X.indptr[i + 1] - X.indptr[i] != m:
            return False
        for k in range(m):
            if X.indices[X.indptr[i] + k] != X.indices[k]:
                return False
    return True


cdef enum:
    MIRROR_TILE = 64


cdef void _mirror_lower(kfloat* G, Py_ssize_t n) noexcept nogil:
    """G[j, i] = G[i, j] for i < j, in tiles (both sides stay in cache)."""
    cdef Py_ssize_t bi = 0, bj, i, j
    while bi < n:
        bj = bi
        while bj < n:
            for i in range(bi, min(bi + MIRROR_TILE, n)):
                for j in range(max(bj, i + 1), min(bj + MIRROR_TILE, n)):
                    G[j * n + i] = G[i * n + j]
            bj += MIRROR_TILE
        bi += MIRROR_TILE
