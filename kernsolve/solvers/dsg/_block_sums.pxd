# The model's sums over its blocks, f(x) = sum_b sum_f coef[b, f, :] phi_{b,f}(x):
# prediction's (decision_function) and the step loop's (fit_chunk, both in
# _dsg.pyx).  Inline, so the step loop runs them once a batch without a call
# across modules.  Each row sums its blocks in block order on one thread
# (ks_block_dots, _block_dots.h): the same bits for any thread count.
from libc.stdlib cimport malloc, free
from libc.stdint cimport int64_t
from cython.parallel cimport prange, parallel

from kernsolve._core._rows cimport Rows
from kernsolve._core._features cimport FeatureMap, fm_block
from ._row_features cimport RowSlabs, row_features, prefetch_row, PREFETCH_ROWS

cdef enum:
    # Scratch for regenerated (uncached) blocks, in doubles.
    SCRATCH_DOUBLES = 1 << 21      # 16 MB
    # Rows that share a pass over a block's directions (cache reuse): as many as
    # give each thread one tile, within these bounds.  A block's directions are
    # read from the L1/L2 cache by every row of a tile after the first; with
    # tiles of 16 rows Adult's 509 blocks were streamed from L3 four times a
    # batch of 64.
    ROW_TILE_MIN = 16
    ROW_TILE_MAX = 256


cdef inline Py_ssize_t block_stride(const FeatureMap* fm) noexcept nogil:
    """Doubles per block in a cache: omega (d x F) then the phases (F)."""
    return (fm.n_features + 1) * fm.block_size


cdef inline void make_blocks(const FeatureMap* fm, Py_ssize_t first, Py_ssize_t count,
                             double* out, int n_threads) noexcept nogil:
    """Generate blocks first .. first+count-1 into out (one stride each)."""
    cdef Py_ssize_t b, stride = block_stride(fm)
    cdef Py_ssize_t d_f = fm.n_features * fm.block_size
    if count == 1 or n_threads == 1:
        for b in range(count):
            fm_block(fm, first + b, out + b * stride, out + b * stride + d_f)
    else:
        for b in prange(count, schedule="static", num_threads=n_threads):
            fm_block(fm, first + b, out + b * stride, out + b * stride + d_f)


cdef extern from "_block_dots.h" nogil:
    # out[r, :] += z[r, :] . coef for one block's features of n rows: the one
    # order every prediction uses (add_group, add_block); acc: K doubles
    void ks_block_dots(const double* z, Py_ssize_t n, Py_ssize_t F, Py_ssize_t K,
                       const double* coef, double* acc, double* out)


cdef inline int add_group(const FeatureMap* fm, const Rows* X, const int64_t* rows,
                          Py_ssize_t n_rows, const double* blocks, Py_ssize_t first_block,
                          Py_ssize_t n_group, const double* coef, Py_ssize_t n_outputs,
                          const RowSlabs* slabs, double* out, int n_threads) noexcept nogil:
    """out[r, :] += sum over the n_group blocks of coef[b, f, :] phi_{b,f}(x_rows[r]).

    ``blocks`` holds the group's directions (one stride each; blocks
    first_block, first_block + 1, ...), ``coef`` its coefficients; rows NULL
    means rows 0 .. n_rows-1; ``slabs`` (or NULL) the rows' kept features.
    Returns -1 if scratch memory cannot be had.
    """
    cdef Py_ssize_t F = fm.block_size, K = n_outputs, stride = block_stride(fm)
    cdef Py_ssize_t tile_rows = (n_rows + n_threads - 1) // n_threads
    if tile_rows < ROW_TILE_MIN:
        tile_rows = ROW_TILE_MIN
    if tile_rows > ROW_TILE_MAX:
        tile_rows = ROW_TILE_MAX
    cdef Py_ssize_t n_tiles = (n_rows + tile_rows - 1) // tile_rows
    cdef Py_ssize_t tile, r, r0, r_end, i, b
    cdef double* z
    # Written through a pointer: a plain assignment inside the parallel
    # block would make the flag thread-private.
    cdef int failed = 0
    cdef int* failed_ptr = &failed
    with parallel(num_threads=n_threads):
        z = <double*>malloc((tile_rows * F + K) * sizeof(double))
        if z == NULL:
            failed_ptr[0] = 1
        else:
            # A tile of rows passes over each block in turn, so the block's
            # directions stay in cache for tile_rows rows; every row still adds
            # its blocks in block order (the bits do not depend on tiling).
            for tile in prange(n_tiles, schedule="static"):
                r0 = tile * tile_rows
                r_end = r0 + tile_rows
                if r_end > n_rows:
                    r_end = n_rows
                for b in range(n_group):
                    for r in range(r0, r_end):
                        if r + PREFETCH_ROWS < r_end:
                            prefetch_row(slabs, first_block + b,
                                          rows[r + PREFETCH_ROWS] if rows != NULL
                                          else r + PREFETCH_ROWS, F)
                        i = rows[r] if rows != NULL else r
                        row_features(fm, blocks + b * stride, X, i, first_block + b,
                                      slabs, z + (r - r0) * F)
                    ks_block_dots(z, r_end - r0, F, K, coef + b * F * K,
                                  z + tile_rows * F, out + r0 * K)
            free(z)
    return -1 if failed else 0


cdef inline int evaluate(const FeatureMap* fm, const Rows* X, const int64_t* rows,
                         Py_ssize_t n_rows, Py_ssize_t n_blocks, const double* coef,
                         Py_ssize_t n_outputs, const double* cache, Py_ssize_t n_cached,
                         double* scratch, Py_ssize_t scratch_blocks, const RowSlabs* slabs,
                         double* out, int n_threads) noexcept nogil:
    """out[r, :] += sum_{b < n_blocks} ... : cached blocks first, then the rest
    regenerated scratch_blocks at a time (Algorithm 2); ``slabs`` (or NULL)
    the rows' kept features."""
    cdef Py_ssize_t stride = block_stride(fm), per_block = fm.block_size * n_outputs
    cdef Py_ssize_t b0 = 0, g
    if n_cached > n_blocks:
        n_cached = n_blocks
    if n_cached > 0:
        if add_group(fm, X, rows, n_rows, cache, 0, n_cached, coef, n_outputs, slabs,
                      out, n_threads) != 0:
            return -1
        b0 = n_cached
    while b0 < n_blocks:
        g = n_blocks - b0
        if g > scratch_blocks:
            g = scratch_blocks
        make_blocks(fm, b0, g, scratch, n_threads)
        if add_group(fm, X, rows, n_rows, scratch, b0, g, coef + b0 * per_block,
                      n_outputs, slabs, out, n_threads) != 0:
            return -1
        b0 += g
    return 0


cdef inline Py_ssize_t scratch_blocks(const FeatureMap* fm, Py_ssize_t wanted) noexcept nogil:
    cdef Py_ssize_t n = SCRATCH_DOUBLES // block_stride(fm)
    if n < 1:
        n = 1
    if n > wanted:
        n = wanted
    return n if n > 0 else 1


cdef inline double* block_ptr(FeatureMap* fm, Py_ssize_t block, double* cache_ptr,
                              Py_ssize_t n_cached, double* fresh) noexcept nogil:
    """Directions of an existing block: its cache slot, or regenerated into fresh."""
    if block < n_cached:
        return cache_ptr + block * block_stride(fm)
    fm_block(fm, block, fresh, fresh + fm.n_features * fm.block_size)
    return fresh


cdef inline void features_of_rows(const FeatureMap* fm, const Rows* X, const int64_t* rows,
                                  Py_ssize_t n_rows, const double* blk, Py_ssize_t block,
                                  const RowSlabs* slabs, double* out,
                                  int n_threads) noexcept nogil:
    """out[r, :] = phi(x_rows[r]) for one block (directions blk; rows in
    parallel); ``slabs`` (or NULL) the rows' kept features."""
    cdef Py_ssize_t r, F = fm.block_size
    if n_threads == 1 or n_rows < 8:
        for r in range(n_rows):
            row_features(fm, blk, X, rows[r], block, slabs, out + r * F)
    else:
        for r in prange(n_rows, schedule="static", num_threads=n_threads):
            row_features(fm, blk, X, rows[r], block, slabs, out + r * F)


cdef inline int add_block(const double* Z, Py_ssize_t nr, Py_ssize_t F, Py_ssize_t K,
                          const double* coef, double* out, int n_threads) noexcept nogil:
    """out[r, :] += Z[r, :] . coef (one block's features Z, nr x F, and its
    coefficients, F x K): the sums of add_group (ks_block_dots), rows
    shared out in slices.  Returns -1 if scratch memory cannot be had."""
    cdef Py_ssize_t s, r0, n, n_slices = (nr + ROW_TILE_MIN - 1) // ROW_TILE_MIN
    cdef double* acc
    cdef int failed = 0
    cdef int* failed_ptr = &failed
    with parallel(num_threads=n_threads if nr >= 8 else 1):
        acc = <double*>malloc(K * sizeof(double))
        if acc == NULL:
            failed_ptr[0] = 1
        else:
            for s in prange(n_slices, schedule="static"):
                r0 = s * ROW_TILE_MIN
                n = nr - r0 if nr - r0 < ROW_TILE_MIN else ROW_TILE_MIN
                ks_block_dots(Z + r0 * F, n, F, K, coef, acc, out + r0 * K)
            free(acc)
    return -1 if failed else 0
