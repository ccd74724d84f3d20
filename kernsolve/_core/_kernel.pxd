# The kernel engine: the kernel kinds and parameters, and KernelRows, the LRU
# cache of kernel rows shared by SMO, SBP, Pegasos, SDCA and the Perceptron.
# The kernel values themselves are the inline functions of _kernel_values.pxd.
from libc.stdint cimport int32_t, int64_t, uint64_t

from ._rows cimport Rows
from ._team cimport ks_team

# Cached kernel values are single precision, like LIBSVM's Qfloat: twice the
# rows per megabyte, and SMO follows LIBSVM's path value for value.
ctypedef float kfloat

# Kernel kinds; the numbers are LIBSVM's -t codes (LAPLACIAN is kernsolve's).
# kernsolve/_constants.py (KernelType, KERNEL_TABLE) owns the kernels; this C
# enum and kernel_traits below mirror what the compiled code reads of them,
# and tests/test_constants.py checks the two agree (_kernel.KERNEL_TRAITS).
cdef enum:
    LINEAR = 0
    POLY = 1
    RBF = 2
    SIGMOID = 3
    PRECOMPUTED = 4
    LAPLACIAN = 5
    N_KERNELS = 6       # the codes are 0 .. N_KERNELS - 1

# What a kernel's value is a function of (KernelBase in _constants.py).
cdef enum:
    NO_BASE = -1        # precomputed (or not a kernel code): no function
    BASE_DOT = 0        # <x, y>
    BASE_SQDIST = 1     # ||x - y||^2
    BASE_L1 = 2         # ||x - y||_1

cdef struct KernelTraits:
    const char* name    # in model files
    int base
    bint blas           # dense values from dot products (dgemm, ks_dots)


cdef inline KernelTraits kernel_traits(int kind) noexcept nogil:
    """A kernel's row of kernsolve/_constants.py's KERNEL_TABLE, as far as the
    compiled code reads it (the formula itself is _finish, _kernel_values.pxd)."""
    if kind == LINEAR:
        return KernelTraits(b"linear", BASE_DOT, True)
    if kind == POLY:
        return KernelTraits(b"polynomial", BASE_DOT, True)
    if kind == RBF:
        return KernelTraits(b"rbf", BASE_SQDIST, True)
    if kind == SIGMOID:
        return KernelTraits(b"sigmoid", BASE_DOT, True)
    if kind == PRECOMPUTED:
        return KernelTraits(b"precomputed", NO_BASE, False)
    if kind == LAPLACIAN:
        return KernelTraits(b"laplacian", BASE_L1, False)
    return KernelTraits(NULL, NO_BASE, False)

cdef struct KernelParams:
    int kind
    int degree
    double gamma
    double coef0


cdef class KernelRows:
    """Kernel rows of a training set, addressed by *position*.

    Positions start as data rows (perm = identity, or the sub-problem's rows
    of X given at construction, read in place). ``swap(p, q)`` exchanges two
    positions (SMO's shrinking moves inactive points to the end, as LIBSVM
    does); ``get_row(p, length)`` returns K(x[perm[p]], x[perm[k]]) for
    k < length, computing only the missing tail in parallel over k and keeping
    the row in an LRU cache whose total size stays within the byte budget.
    The budget always holds at least two full rows, so the two most recently
    returned rows stay valid together.

    ``get_row`` and ``eval`` update the counters without atomics: call them
    from one thread at a time (they parallelise internally).
    """
    cdef Rows X
    cdef KernelParams params
    cdef Py_ssize_t n                 # number of positions (rows of the problem)
    cdef Py_ssize_t* perm             # position -> data row
    cdef double* sq_norms             # ||x_i||^2 (or sum|x_i| pieces) by data row
    cdef double* diag                 # K(x[perm[p]], x[perm[p]]) by position
    cdef int n_threads
    # The thread team of the solve that owns this engine (SMO sets it for the
    # length of its run, _team.h); NULL: row fills use OpenMP.
    cdef ks_team* team
    # Rows of less work than this (values x multiply-adds) are computed by one
    # thread: PAR_MIN_WORK, lowered by SMO while its team's threads spin (a
    # job then costs about a microsecond, not an OpenMP fork/join).
    cdef double par_min_work
    cdef readonly long long n_kernel_evals     # every kernel value computed, rows and eval()
    cdef readonly long long n_cache_hits       # get_row calls fully served from the cache
    cdef readonly long long n_cache_misses     # get_row calls that computed anything
    cdef object _keepalive            # the arrays X points into

    # The cache (LIBSVM's Cache): one slot per position, a circular doubly
    # linked LRU list through the slots that hold data (index n is the list
    # head; next of the head is the oldest row).
    cdef kfloat** cache_data          # by position; NULL when nothing cached
    cdef Py_ssize_t* cache_len        # entries held by each slot
    cdef Py_ssize_t* lru_prev         # n + 1 links
    cdef Py_ssize_t* lru_next
    cdef Py_ssize_t budget            # cache budget in kfloat entries
    cdef Py_ssize_t free_entries      # budget minus entries held
    cdef Py_ssize_t peak_entries      # the most entries held at once
    cdef double* work                 # x_i scattered densely (sparse X), zero outside its nonzeros
    cdef bint use_scatter             # sparse X with few enough features to scatter
    cdef double row_cost              # mean multiply-adds per kernel value (parallel threshold)
    # Column swaps not yet applied to the cached rows (swap() defers them so a
    # run of swaps -- one shrinking pass -- walks the cache once, not per swap).
    cdef Py_ssize_t* pending          # (lo, hi) pairs, in the order swap() was called
    cdef Py_ssize_t n_pending
    cdef Py_ssize_t* swap_rows        # _flush_log's rows to catch up (n entries)
    # The log of swap batches (_kernel.pyx, before KernelRows): batch b (for
    # log_base <= b < epoch) is the permutation of the positions
    # log_touched[log_at[b - log_base] ...] (increasing), each taking the
    # value at log_touched[that start + log_source[k]]; row_epoch[p] is how
    # many batches the row cached at position p has had.  Scratch: a position
    # -> slot map (-1 where untouched; n entries) and, by row length, whether
    # a swap cuts a row (n + 2 entries).
    cdef Py_ssize_t* log_touched
    cdef Py_ssize_t* log_source
    cdef Py_ssize_t* log_at
    cdef Py_ssize_t* row_epoch
    cdef Py_ssize_t epoch, log_base, log_limit
    cdef Py_ssize_t* swap_slot
    cdef int* swap_cut
    # X's rows copied in position order (row k = data row perm[k]) so a kernel
    # row walks memory in order instead of jumping through perm.  Sparse X:
    # rebuilt after swaps, before the next row is computed; dense X: made at
    # the first row after a swap (at once for picked rows), then swap() swaps
    # its rows in place.  NULL when the copy would take more than its share
    # of the budget (it counts in it).
    cdef Rows by_pos
    cdef bint by_pos_on               # a copy is planned (made when first needed)
    cdef double* by_pos_values        # dense: n rows of n_features values
    cdef int32_t* by_pos_indices      # sparse only
    cdef int64_t* by_pos_indptr       # sparse only
    cdef double* by_pos_norms
    cdef bint by_pos_stale
    cdef int64_t by_pos_nnz           # nonzeros of the rows the positions use
    cdef Py_ssize_t by_pos_bytes      # the copy's bytes (or the bit sets')
    cdef Py_ssize_t by_pos_in_budget  # their part taken from the -m budget
    # Binary X (every value 0 or 1) as bit sets in position order, instead of
    # the copy above: a kernel value is then a popcount and a table lookup
    # (_bits.h), the same bits as the general path.  NULL when X is not binary,
    # the kernel is precomputed, or the sets would be wider than the rows'
    # nonzeros (the gather is cheaper then).
    cdef uint64_t* bits               # n * bit_words words, position p at p * bit_words
    cdef Py_ssize_t bit_words
    cdef kfloat* bit_table            # the kernel value for each count
    cdef bint bit_hamming             # count XOR (a distance base), else AND (a dot product)
    # A kernel matrix over all of X's rows, computed once and shared read-only
    # by several solves (cross-validation: every fold and C of one gamma; see
    # kernel_gram): rows are gathered from it instead of computed.  NULL: none.
    cdef const kfloat* gram
    cdef Py_ssize_t gram_stride       # X's rows: the matrix is gram_stride x gram_stride
    cdef object _gram_keepalive

    cdef const kfloat* get_row(self, Py_ssize_t p, Py_ssize_t length) noexcept nogil
    cdef void swap(self, Py_ssize_t p, Py_ssize_t q) noexcept nogil
    cdef double eval(self, Py_ssize_t p, Py_ssize_t q) noexcept nogil
    # internals
    cdef void _lru_remove(self, Py_ssize_t h) noexcept nogil
    cdef void _lru_insert(self, Py_ssize_t h) noexcept nogil
    cdef void _drop(self, Py_ssize_t h) noexcept nogil
    cdef void _apply_pending(self) noexcept nogil
    cdef void _catch_up(self, Py_ssize_t h) noexcept nogil
    cdef void _flush_log(self) noexcept nogil
    cdef void _order_by_position(self) noexcept nogil
    cdef int _make_bits(self, Py_ssize_t words) except -1
    cdef void _fill_bits(self, Py_ssize_t p, Py_ssize_t start, Py_ssize_t end,
                         kfloat* out, int nt, Py_ssize_t chunk) noexcept nogil
    cdef void _fill(self, Py_ssize_t p, Py_ssize_t start, Py_ssize_t end,
                    kfloat* out) noexcept nogil
