"""Doubly Stochastic Gradients (Dai et al., NIPS 2014, Algorithms 1 and 2) with
mini-batches and blocks of random features.

The model is f(x) = intercept + sum_b sum_f coef[b, f, :] phi_{b,f}(x), where
block b's features phi_{b,f} are regenerated from (seed, b) by _features.pxd,
never stored.  Iteration t (1-based) of Algorithm 1 on a batch of rows R:

    u_r   = f(x_r)                                  (Algorithm 2 over old blocks)
    g_r   = l'(u_r, y_r)                            (_losses.pxd)
    gamma_t = theta / (t0 + t)                      (theta times 2 for the softmax, 4
                                                     for the logistic loss with the
                                                     fitted step: FITTED_STEP_FACTOR)
    old coefficients *= (1 - gamma_t lambda)        (lazily: one global scale)
    coef[new block, f, :] = -gamma_t / (|R| F) sum_r g_r phi_f(x_r)
    intercept -= gamma_t (mean_r g_r [+ lambda for the novelty offset])

The 1/F makes (1/F) sum_f phi_f(x) phi_f(.) the block's unbiased estimate of
k(x, .), so a step is the functional gradient step of the paper whatever F is.
With the fitted step (h["step_rule"] "fit", the default, or "fit-gcv") the new
block is instead -gamma_t times the ridge fit of the batch's derivatives by its
features (_fit_block, _fit_candidates); the ridge is given, chosen by the
following batches' losses (_judge_candidates, _best_ridge), or by GCV.

Blocks whose directions fit the byte budget are kept in a cache (created
once, reused by every later iteration); the others are regenerated in groups.
Determinism: each row sums its blocks in block order on one thread, the new
block's coefficients are summed over rows in row order, so the result is the
same bits for any thread count.

UDSG and CDSG (Shi et al., "Utilize old coordinates", Algorithms 3 and 4)
replace some iterations' new block by an update of an OLD block j:

    coef[j, f, :] += -eta / (|R| F) sum_r g_r phi_{j,f}(x_r)

with the same lazy decay (1 - eta lambda) of all coefficients.  UDSG: in each
period of G + U iterations the first G create blocks, the other U update block
j = rng_integer(K_old, t, n_blocks), K_old = rng_key(rng_key(seed,
STREAM_SAMPLING), 2**64 - 1), with eta = gamma_t.  CDSG keeps beta_j (the
paper's scalar coefficient, one per output, under the same lazy scale), takes
eta_j = the largest step allowed by rule (9) (capped at max_step_ratio *
gamma_t) and updates the block with the largest eta_j when it beats gamma_t;
otherwise it creates a new block as DSG.  doc/dsg.md, "UDSG and CDSG", gives
the formulas.
"""
from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memset
from libc.math cimport isfinite, sqrt
from libc.stdint cimport uint64_t, int64_t
from cython.parallel cimport prange, parallel

import numpy as np
cimport numpy as cnp

from kernsolve._core._rows cimport Rows, as_rows
from kernsolve._core._random cimport rng_key, rng_integer, STREAM_SAMPLING
from kernsolve._core._features cimport FeatureMap, fm_init, fm_block, fm_apply_row
from kernsolve._core._simd cimport ks_simd_join, paths_mask
from ._losses cimport (loss_value, loss_derivative, softmax_value, softmax_gradient,
                       LOSS_SOFTMAX, LOSS_NOVELTY, LOSS_HINGE, LOSS_LOGISTIC,
                       LOSS_HUBER, LOSS_EPSILON_INSENSITIVE, LOSS_QUANTILE)

cnp.import_array()

# Scratch for regenerated (uncached) blocks, in doubles.
cdef Py_ssize_t SCRATCH_DOUBLES = 1 << 21      # 16 MB
# Rows that share a pass over a block's directions (cache reuse): as many as
# give each thread one tile, within these bounds.  A block's directions are
# read from the L1/L2 cache by every row of a tile after the first; with
# tiles of 16 rows Adult's 509 blocks were streamed from L3 four times a
# batch of 64.
cdef Py_ssize_t ROW_TILE_MIN = 16
cdef Py_ssize_t ROW_TILE_MAX = 256
# Renormalise the stored coefficients when the lazy scale gets this small.
cdef double MIN_SCALE = 1e-100
# Solvers of fit_chunk (h["solver"]).
cdef enum:
    SOLVER_DSG = 0
    SOLVER_UDSG = 1
    SOLVER_CDSG = 2
_SOLVERS = {"dsg": SOLVER_DSG, "udsg": SOLVER_UDSG, "cdsg": SOLVER_CDSG}
# Counter of the stream K_old below: chunk permutations use key(K_sampling, c)
# for c = 0, 1, 2, ..., so the last counter is never one of them.
cdef uint64_t OLD_BLOCK_STREAM = 0xFFFFFFFFFFFFFFFFULL


cdef inline Py_ssize_t _stride(const FeatureMap* fm) noexcept nogil:
    """Doubles per block in a cache: omega (d x F) then the phases (F)."""
    return (fm.n_features + 1) * fm.block_size


# The rows' features kept between epochs (--precision single only): there a
# feature is a float (fm_apply_row rounds it), so a kept value is the value
# a fresh evaluation gives and the model does not depend on what is kept.
# values[b] holds block b's F features of every row (n_rows x F floats),
# filled[b][i] says whether row i's are there yet.
cdef struct RowSlabs:
    Py_ssize_t n_slabs          # blocks 0 .. n_slabs-1 have a slab
    bint keep                   # store computed values (0: the last pass reads only)
    float** values
    unsigned char** filled
# Rows ahead of the one computed whose kept features are prefetched (a slab
# is read in the batch's random row order: each row's values are a miss).
cdef Py_ssize_t PREFETCH_ROWS = 4


cdef extern from *:
    """
    #include <stdlib.h>
    #ifdef __linux__
    #include <sys/mman.h>
    #endif
    /* n bytes; from 2 MB on, on 2 MB boundaries, in huge pages where Linux
       gives them: a slab is read one row at a time in random order, and with
       4 kB pages nearly every row would cost a TLB miss (and its first touch
       a page fault).  Smaller slabs as malloc gives them (an aligned
       allocation would take a mapping of n + 2 MB each). */
    static void *ks_alloc_slab(size_t n)
    {
        void *p = NULL;
        const size_t huge = (size_t)1 << 21;
        if (n < huge)
            return malloc(n > 0 ? n : 1);
        if (posix_memalign(&p, huge, n) != 0)
            return NULL;
    #if defined(__linux__) && defined(MADV_HUGEPAGE)
        madvise(p, n, MADV_HUGEPAGE);
    #endif
        return p;
    }
    """
    void* ks_alloc_slab(size_t n) nogil
    void __builtin_prefetch(const void* p) nogil


cdef class RowFeatures:
    """Slabs of the rows' features, one a block, for blocks 0 .. capacity-1 of
    one data set (``fit_chunk``'s ``row_features``): a row's features of a
    block are computed the first time a batch needs them and read from the
    slab after that.  Slabs are allocated as blocks appear; allocation stops
    quietly at ``capacity`` or when memory runs out (later blocks are
    computed every time, as without slabs)."""
    cdef RowSlabs s
    cdef readonly Py_ssize_t n_rows, block_size, capacity

    def __cinit__(self, Py_ssize_t n_rows, Py_ssize_t block_size, Py_ssize_t capacity):
        if n_rows < 0 or block_size < 1 or capacity < 0:
            raise ValueError("RowFeatures needs n_rows >= 0, block_size >= 1, capacity >= 0")
        self.n_rows, self.block_size, self.capacity = n_rows, block_size, capacity
        self.s.n_slabs = 0
        self.s.keep = 1
        self.s.values = <float**>calloc(capacity if capacity > 0 else 1, sizeof(float*))
        self.s.filled = <unsigned char**>calloc(capacity if capacity > 0 else 1,
                                                 sizeof(unsigned char*))
        if self.s.values == NULL or self.s.filled == NULL:
            raise MemoryError("no memory for the row-feature slabs' table")

    def grow(self, Py_ssize_t n_blocks):
        """Slabs for blocks up to n_blocks - 1 (within the capacity)."""
        cdef Py_ssize_t b = self.s.n_slabs
        cdef float* v
        cdef unsigned char* f
        while b < n_blocks and b < self.capacity:
            v = <float*>ks_alloc_slab(self.n_rows * self.block_size * sizeof(float))
            f = <unsigned char*>calloc(max(self.n_rows, 1), 1)
            if v == NULL or f == NULL:
                free(v)
                free(f)
                self.capacity = b
                break
            self.s.values[b] = v
            self.s.filled[b] = f
            b += 1
        self.s.n_slabs = b

    @property
    def n_slabs(self):
        return self.s.n_slabs

    def read_only(self):
        """From now on only read the kept values (the last pass: what it
        would keep is never read again); no more slabs are made."""
        self.s.keep = 0
        self.capacity = self.s.n_slabs

    def __dealloc__(self):
        cdef Py_ssize_t b
        if self.s.values != NULL:
            for b in range(self.s.n_slabs):
                free(self.s.values[b])
                free(self.s.filled[b])
        free(self.s.values)
        free(self.s.filled)


def row_slab_bytes(Py_ssize_t n_rows, Py_ssize_t block_size):
    """Bytes of one block's slab in :class:`RowFeatures`."""
    return n_rows * (block_size * sizeof(float) + 1)


cdef inline void _row_features(const FeatureMap* fm, const double* blk, const Rows* X,
                               Py_ssize_t i, Py_ssize_t block, const RowSlabs* slabs,
                               double* z) noexcept nogil:
    """z = phi(x_i) for one block (directions blk): from the block's slab when
    row i's values are there, else computed (and kept when the block has a
    slab).  Rows of one batch are distinct, so threads never share a row."""
    cdef Py_ssize_t f, F = fm.block_size
    cdef float* v
    if slabs == NULL or block >= slabs.n_slabs:
        fm_apply_row(fm, blk, blk + fm.n_features * F, X, i, z)
        return
    v = slabs.values[block] + i * F
    if slabs.filled[block][i]:
        for f in range(F):
            z[f] = v[f]
        return
    fm_apply_row(fm, blk, blk + fm.n_features * F, X, i, z)
    if slabs.keep:
        for f in range(F):
            v[f] = <float>z[f]
        slabs.filled[block][i] = 1


cdef inline void _prefetch_row(const RowSlabs* slabs, Py_ssize_t block, Py_ssize_t i,
                               Py_ssize_t F) noexcept nogil:
    """Ask for row i's kept values of a block ahead of their use."""
    cdef Py_ssize_t off
    if slabs == NULL or block >= slabs.n_slabs:
        return
    __builtin_prefetch(slabs.filled[block] + i)
    for off in range(0, F * <Py_ssize_t>sizeof(float), 64):
        __builtin_prefetch(<char*>(slabs.values[block] + i * F) + off)


cdef void _make_blocks(const FeatureMap* fm, Py_ssize_t first, Py_ssize_t count,
                       double* out, int n_threads) noexcept nogil:
    """Generate blocks first .. first+count-1 into out (one stride each)."""
    cdef Py_ssize_t b, stride = _stride(fm)
    cdef Py_ssize_t d_f = fm.n_features * fm.block_size
    if count == 1 or n_threads == 1:
        for b in range(count):
            fm_block(fm, first + b, out + b * stride, out + b * stride + d_f)
    else:
        for b in prange(count, schedule="static", num_threads=n_threads):
            fm_block(fm, first + b, out + b * stride, out + b * stride + d_f)


cdef extern from "_block_dots.h" nogil:
    # out[r, :] += z[r, :] . coef for one block's features of n rows: the one
    # order every prediction uses (_add_group, _add_block); acc: K doubles
    void ks_block_dots(const double* z, Py_ssize_t n, Py_ssize_t F, Py_ssize_t K,
                       const double* coef, double* acc, double* out)

# Every vector path of this module follows the tests' one switch (_simd.pxd).
ks_simd_join(paths_mask())


cdef int _add_group(const FeatureMap* fm, const Rows* X, const int64_t* rows,
                    Py_ssize_t n_rows, const double* blocks, Py_ssize_t first_block,
                    Py_ssize_t n_group, const double* coef, Py_ssize_t n_outputs,
                    const RowSlabs* slabs, double* out, int n_threads) noexcept nogil:
    """out[r, :] += sum over the n_group blocks of coef[b, f, :] phi_{b,f}(x_rows[r]).

    ``blocks`` holds the group's directions (one stride each; blocks
    first_block, first_block + 1, ...), ``coef`` its coefficients; rows NULL
    means rows 0 .. n_rows-1; ``slabs`` (or NULL) the rows' kept features.
    Returns -1 if scratch memory cannot be had.
    """
    cdef Py_ssize_t F = fm.block_size, K = n_outputs, stride = _stride(fm)
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
                            _prefetch_row(slabs, first_block + b,
                                          rows[r + PREFETCH_ROWS] if rows != NULL
                                          else r + PREFETCH_ROWS, F)
                        i = rows[r] if rows != NULL else r
                        _row_features(fm, blocks + b * stride, X, i, first_block + b,
                                      slabs, z + (r - r0) * F)
                    ks_block_dots(z, r_end - r0, F, K, coef + b * F * K,
                                  z + tile_rows * F, out + r0 * K)
            free(z)
    return -1 if failed else 0


cdef int _evaluate(const FeatureMap* fm, const Rows* X, const int64_t* rows,
                   Py_ssize_t n_rows, Py_ssize_t n_blocks, const double* coef,
                   Py_ssize_t n_outputs, const double* cache, Py_ssize_t n_cached,
                   double* scratch, Py_ssize_t scratch_blocks, const RowSlabs* slabs,
                   double* out, int n_threads) noexcept nogil:
    """out[r, :] += sum_{b < n_blocks} ... : cached blocks first, then the rest
    regenerated scratch_blocks at a time (Algorithm 2); ``slabs`` (or NULL)
    the rows' kept features."""
    cdef Py_ssize_t stride = _stride(fm), per_block = fm.block_size * n_outputs
    cdef Py_ssize_t b0 = 0, g
    if n_cached > n_blocks:
        n_cached = n_blocks
    if n_cached > 0:
        if _add_group(fm, X, rows, n_rows, cache, 0, n_cached, coef, n_outputs, slabs,
                      out, n_threads) != 0:
            return -1
        b0 = n_cached
    while b0 < n_blocks:
        g = n_blocks - b0
        if g > scratch_blocks:
            g = scratch_blocks
        _make_blocks(fm, b0, g, scratch, n_threads)
        if _add_group(fm, X, rows, n_rows, scratch, b0, g, coef + b0 * per_block,
                      n_outputs, slabs, out, n_threads) != 0:
            return -1
        b0 += g
    return 0


cdef Py_ssize_t _scratch_blocks(const FeatureMap* fm, Py_ssize_t wanted) noexcept nogil:
    cdef Py_ssize_t n = SCRATCH_DOUBLES // _stride(fm)
    if n < 1:
        n = 1
    if n > wanted:
        n = wanted
    return n if n > 0 else 1


def decision_function(X, const double[:, :, ::1] coef, const double[::1] intercept,
                      int kernel, double gamma, uint64_t seed, int n_threads=1,
                      bint single=False):
    """f(x) for every row of canonical X: an (n_samples, n_outputs) array.

    ``coef`` has shape (n_blocks, block_size, n_outputs) and holds the true
    coefficients (scale applied); X has the model's number of columns.
    ``single``: the feature sums in single precision (``--precision single``).
    """
    cdef Rows R
    keep = as_rows(X, &R)
    cdef Py_ssize_t n_blocks = coef.shape[0], F = coef.shape[1], K = coef.shape[2]
    if intercept.shape[0] != K:
        raise ValueError("intercept does not match the coefficients' outputs")
    out = np.zeros((R.n_rows, K), dtype=np.float64)
    cdef double[:, ::1] o = out
    cdef FeatureMap fm
    fm_init(&fm, kernel, gamma, R.n_features, F, seed)
    fm.single = single
    cdef Py_ssize_t nb = _scratch_blocks(&fm, n_blocks)
    cdef double* scratch = <double*>malloc(nb * _stride(&fm) * sizeof(double))
    cdef int status = 0
    cdef Py_ssize_t r, k
    if scratch == NULL:
        raise MemoryError("no memory for the random-feature blocks")
    try:
        if R.n_rows > 0 and n_blocks > 0:
            with nogil:
                status = _evaluate(&fm, &R, NULL, R.n_rows, n_blocks, &coef[0, 0, 0], K,
                                   NULL, 0, scratch, nb, NULL, &o[0, 0], n_threads)
    finally:
        free(scratch)
    if status != 0:
        raise MemoryError("no memory for per-thread scratch")
    for r in range(R.n_rows):
        for k in range(K):
            o[r, k] += intercept[k]
    return out


def fit_chunk(X, const double[:, ::1] targets, const int64_t[::1] order, dict h,
              double[:, :, ::1] coef, double[::1] intercept, double[::1] scalars,
              double[::1] cache, Py_ssize_t cache_blocks,
              double[:, :, ::1] avg_coef, double[::1] avg_intercept,
              Py_ssize_t n_blocks, long long n_iter, int n_threads=1,
              double[:, ::1] beta=None, double[::1] ridge_state=None,
              RowFeatures row_features=None, Py_ssize_t whole_batch=0):
    """Run Algorithm 1 (DSG), 3 (UDSG) or 4 (CDSG) -- ``h["solver"]`` -- over
    the rows ``order`` (consecutive batches of ``h["batch_size"]``),
    continuing from ``n_blocks`` blocks and ``n_iter`` iterations.

    ``coef[:n_blocks] * scalars[0]`` are the true coefficients (the lazy
    scale); ``scalars[1]`` counts the averaged iterates.  ``coef`` must have
    room for one new block per batch.  Blocks < cache_blocks live in
    ``cache`` (``cache_blocks`` strides of (n_features + 1) * block_size).
    ``targets``: (n_rows, n_outputs) with +-1 or real targets per output, or
    (n_rows, 1) class indices for the softmax.  UDSG reads ``h["new_blocks"]``
    (G) and ``h["old_blocks"]`` (U); CDSG reads ``h["max_step_ratio"]`` and
    needs ``beta`` (rows like ``coef``, n_outputs columns; the paper's
    beta_j under the same lazy scale).

    Returns (n_blocks, n_iter, feature_evals, status, objective_sum,
    n_old_updates, ridge_sum) where status is 0, 1 (a prediction became non-finite: the
    step is too large) or -1 (out of memory); objective_sum adds the batch
    losses seen; n_old_updates counts iterations that updated an old block;
    ridge_sum adds the ridges of the fitted steps (``h["step_rule"]`` "fit" or
    "fit-gcv"; ``h["ridge"]`` > 0 fixes the ridge, 0 chooses it: by the next
    batch's loss with "fit", ``ridge_state`` (``ridge_state_size`` doubles,
    zeros at the start of a run) carrying the evidence between calls; by GCV
    per batch with "fit-gcv").  ``row_features`` (``h["precision"]``
    "single" only; made for X's rows and the block size) keeps the rows'
    features between calls: a row's features of a block are computed once.
    A batch of ``nr`` rows, fewer than ``whole_batch`` (default and at most
    ``h["batch_size"]``), takes ``nr / whole_batch`` of a step.
    """
    cdef Rows R
    keep = as_rows(X, &R)
    cdef Py_ssize_t F = coef.shape[1], K = coef.shape[2]
    cdef Py_ssize_t B = h["batch_size"]
    cdef Py_ssize_t whole = B if whole_batch <= 0 or whole_batch > B else whole_batch
    cdef int loss = h["loss"]
    cdef double loss_param = h["loss_param"], lam = h["lam"]
    # the schedule's theta times the loss's fitted-step factor (options.py,
    # FITTED_STEP_FACTOR; 1 unless the rule is fit: a power of two, exact)
    cdef double theta = h["step"] * h.get("step_factor", 1.0), t0 = h["t0"]
    cdef bint fit_intercept = h["fit_intercept"], average = h["average"]
    cdef int solver = _SOLVERS[h.get("solver", "dsg")]
    cdef long long n_new_period = h.get("new_blocks", 1) if solver == SOLVER_UDSG else 1
    cdef long long n_old_period = h.get("old_blocks", 0) if solver == SOLVER_UDSG else 0
    cdef double max_ratio = h.get("max_step_ratio", 1.0)
    # the fitted step (--step-rule fit or fit-gcv; ridge 0: chosen by the
    # rule) or Algorithm 1's gradient step
    cdef str step_rule = h.get("step_rule", "gradient")
    cdef bint fitted = step_rule in ("fit", "fit-gcv")
    cdef double ridge = h.get("ridge", 0.0)
    cdef double ridge_sum = 0.0
    cdef bint progressive = step_rule == "fit" and ridge <= 0.0
    cdef double* rs = NULL
    if progressive:
        if ridge_state is None or ridge_state.shape[0] < ridge_state_size(F, K):
            raise ValueError("the next-batch ridge choice needs ridge_state "
                             "(ridge_state_size(block_size, n_outputs) doubles)")
        rs = &ridge_state[0]
    cdef const double* tg = &targets[0, 0] if targets.shape[0] > 0 else NULL
    cdef Py_ssize_t tcols = targets.shape[1]
    if n_new_period < 1 or n_old_period < 0:
        raise ValueError("UDSG needs new_blocks >= 1 and old_blocks >= 0")
    if solver == SOLVER_CDSG and (beta is None or beta.shape[0] < coef.shape[0]
                                  or beta.shape[1] != K):
        raise ValueError("CDSG needs beta with a row per coef block and n_outputs columns")
    cdef FeatureMap fm
    fm_init(&fm, h["kernel"], h["gamma"], R.n_features, F, h["seed"])
    fm.single = h["precision"] == "single"
    cdef uint64_t key_old = rng_key(rng_key(<uint64_t>h["seed"], STREAM_SAMPLING),
                                    OLD_BLOCK_STREAM)
    cdef Py_ssize_t stride = _stride(&fm), d_f = R.n_features * F
    cdef Py_ssize_t n_order = order.shape[0]
    cdef Py_ssize_t n_new = (n_order + B - 1) // B
    if coef.shape[0] < n_blocks + n_new:
        raise ValueError("coef has no room for the new blocks")
    if cache_blocks > 0 and cache.shape[0] < cache_blocks * stride:
        raise ValueError("cache is smaller than cache_blocks blocks")
    cdef const RowSlabs* slabs = NULL
    if row_features is not None:
        if not fm.single:
            raise ValueError("row_features keeps floats: only for precision single")
        if row_features.n_rows != R.n_rows or row_features.block_size != F:
            raise ValueError("row_features was made for other rows or another block size")
        row_features.grow(n_blocks + n_new)
        slabs = &row_features.s
    cdef Py_ssize_t nb = _scratch_blocks(&fm, n_blocks + n_new)
    # A batch never holds more rows than the chunk has (nr below), so the
    # scratch is sized by those, not by a --batch-size larger than the data.
    cdef Py_ssize_t Bs = B if B <= n_order else max(n_order, 1)
    cdef double* scratch = <double*>malloc((nb * stride + Bs * K * 2 + 2 * Bs * F + stride
                                            + K + 2 * F * F + 3 * F * K + F
                                            + (Bs * F if progressive else 0))
                                           * sizeof(double))
    if scratch == NULL:
        raise MemoryError("no memory for DSG scratch")
    cdef double* U = scratch + nb * stride      # predictions, Bs x K
    cdef double* G = U + Bs * K                 # loss derivatives, Bs x K
    cdef double* PHI = G + Bs * K               # the updated block's features, Bs x F
    cdef double* fresh = PHI + Bs * F           # its directions when not cached
    cdef double* gbar = fresh + stride          # mean_r g_r (CDSG), K
    cdef double* fit = gbar + K                 # the fitted step's direction, F x K
    cdef double* work = fit + F * K             # and its scratch (_fit_block)
    cdef double* prev_phi = work + 2 * F * F + 2 * F * K + F   # last target's features, Bs x F
    # the newest block's features on the batch (the progressive choice), Bs x F
    cdef double* newest = prev_phi + Bs * F
    cdef Py_ssize_t n_before = 0, last_target
    cdef const double* P
    cdef double* cache_ptr = &cache[0] if cache_blocks > 0 else NULL
    cdef double* beta_ptr = &beta[0, 0] if solver == SOLVER_CDSG else NULL
    cdef double* blk
    cdef double scale = scalars[0], n_avg = scalars[1]
    cdef double step, decay, s, w, objective = 0.0, gamma_t
    cdef long long feature_evals = 0, n_old = 0
    cdef Py_ssize_t pos, nr, r, f, k, j, n_cached, target, phi_block, chosen
    cdef int status = 0
    cdef const int64_t* rows
    try:
        with nogil:
            pos = 0
            while pos < n_order:
                nr = B if n_order - pos >= B else n_order - pos
                rows = &order[pos]
                n_iter += 1
                # u_r = f(x_r) over the blocks so far (Algorithm 2)
                memset(U, 0, nr * K * sizeof(double))
                n_cached = cache_blocks if cache_blocks < n_blocks else n_blocks
                # the progressive choice judges the last step, whose block is
                # (DSG) the newest: its features on the batch are kept from
                # the prediction (the same sums in the same order: same bits)
                n_before = n_blocks - 1 if progressive and n_blocks > 0 else n_blocks
                if n_before > 0:
                    if _evaluate(&fm, &R, rows, nr, n_before, &coef[0, 0, 0], K,
                                 cache_ptr, n_cached, scratch, nb, slabs, U,
                                 n_threads) != 0:
                        status = -1
                        break
                if n_before < n_blocks:
                    blk = _block_ptr(&fm, n_before, cache_ptr, n_cached, fresh)
                    _features_of_rows(&fm, &R, rows, nr, blk, n_before, slabs, newest,
                                      n_threads)
                    if _add_block(newest, nr, F, K, &coef[n_before, 0, 0], U,
                                  n_threads) != 0:
                        status = -1
                        break
                feature_evals += nr * F * n_blocks
                for r in range(nr):
                    for k in range(K):
                        U[r * K + k] = intercept[k] + scale * U[r * K + k]
                        if not isfinite(U[r * K + k]):
                            status = 1
                if status != 0:
                    break
                # g_r = l'(u_r, y_r)
                for r in range(nr):
                    j = rows[r]
                    if loss == LOSS_SOFTMAX:
                        objective += softmax_value(U + r * K, <Py_ssize_t>targets[j, 0], K)
                        softmax_gradient(U + r * K, <Py_ssize_t>targets[j, 0], K, G + r * K)
                    else:
                        for k in range(K):
                            objective += loss_value(loss, U[r * K + k], targets[j, k],
                                                    loss_param)
                            G[r * K + k] = loss_derivative(loss, U[r * K + k],
                                                           targets[j, k], loss_param)
                step = theta / (t0 + <double>n_iter)
                if nr < whole:
                    # a short batch (the end of a pass, of a fractional
                    # epoch, of a partial_fit chunk or a stream window) is
                    # nr / whole of a batch: with a whole step, one row
                    # fitted closely moved the whole model (0.8 epochs of
                    # a9a end on one row: 18-22% test error, 5 seeds of 20)
                    step = step * <double>nr / <double>whole
                # which block: a new one (target == n_blocks) or an old one
                target = n_blocks
                phi_block = -1              # block whose features PHI holds
                if solver == SOLVER_UDSG and n_blocks > 0:
                    if (n_iter - 1) % (n_new_period + n_old_period) >= n_new_period:
                        target = <Py_ssize_t>rng_integer(key_old, <uint64_t>n_iter,
                                                         <uint64_t>n_blocks)
                elif solver == SOLVER_CDSG and n_blocks > 0:
                    for k in range(K):
                        s = 0.0
                        for r in range(nr):
                            s = s + G[r * K + k]
                        gbar[k] = s / nr
                    # sigma^2 from the newest block's features on this batch
                    blk = _block_ptr(&fm, n_blocks - 1, cache_ptr, n_cached, fresh)
                    _features_of_rows(&fm, &R, rows, nr, blk, n_blocks - 1, slabs, PHI,
                                      n_threads)
                    feature_evals += nr * F
                    phi_block = n_blocks - 1
                    gamma_t = step
                    target = _cdsg_choose(beta_ptr, n_blocks, K, scale, gbar, gamma_t,
                                          max_ratio * gamma_t,
                                          _loss_bound(loss, loss_param, G, nr, K),
                                          _batch_variance(PHI, nr, F), nr, &step)
                if target == n_blocks:
                    # the new block: directions (into the cache when it has room)
                    if n_blocks < cache_blocks:
                        blk = cache_ptr + n_blocks * stride
                    else:
                        blk = fresh
                    fm_block(&fm, n_blocks, blk, blk + d_f)
                    _features_of_rows(&fm, &R, rows, nr, blk, n_blocks, slabs, PHI,
                                      n_threads)
                    feature_evals += nr * F
                else:
                    n_old += 1
                    if target != phi_block:
                        blk = _block_ptr(&fm, target, cache_ptr, n_cached, fresh)
                        _features_of_rows(&fm, &R, rows, nr, blk, target, slabs, PHI,
                                          n_threads)
                        feature_evals += nr * F
                # step, lazy decay of the old coefficients, the new ones
                decay = 1.0 - step * lam
                scale *= decay
                if progressive:
                    # the ridge whose fits of the past batches' derivatives
                    # did best on the batches that followed them (unseen when
                    # they were fitted); this batch judges the last step
                    # first, if it was fitted on a whole batch (the short last
                    # batch of a chunk, fitted closely by small ridges, would
                    # count against them far beyond its size)
                    if rs[RS_HAVE] != 0.0 and rs[RS_WHOLE] != 0.0:
                        last_target = <Py_ssize_t>rs[RS_TARGET]
                        if last_target == n_before and n_before < n_blocks:
                            P = newest
                        else:
                            blk = _block_ptr(&fm, last_target, cache_ptr, n_cached, fresh)
                            _features_of_rows(&fm, &R, rows, nr, blk, last_target, slabs,
                                              prev_phi, n_threads)
                            feature_evals += nr * F
                            P = prev_phi
                        if _judge_candidates(U, P, rows, tg, tcols, nr, F, K, loss,
                                             loss_param, rs, n_threads) != 0:
                            status = -1
                            break
                        rs[RS_JUDGED] += 1.0
                    chosen = _best_ridge(rs)
                    _fit_candidates(PHI, G, nr, F, K, work, rs + RS_CANDIDATES)
                    for j in range(F * K):
                        fit[j] = rs[RS_CANDIDATES + chosen * F * K + j]
                    ridge_sum += _grid_ridge(chosen)
                    rs[RS_HAVE] = 1.0
                    rs[RS_STEP] = step
                    rs[RS_TARGET] = <double>target
                    rs[RS_CHOSEN] = <double>chosen
                    rs[RS_WHOLE] = 1.0 if nr >= whole else 0.0
                elif fitted:
                    # the ridge given, or GCV's choice on this batch
                    ridge_sum += _fit_block(PHI, G, nr, F, K, ridge, work, fit)
                if fitted:
                    # the fitted step: the block's least-squares (ridge) fit
                    # of the batch's loss derivatives, times -step
                    w = -step / scale
                    for f in range(F):
                        for k in range(K):
                            if target == n_blocks:
                                coef[target, f, k] = w * fit[f * K + k]
                            else:
                                coef[target, f, k] += w * fit[f * K + k]
                else:
                    w = -step / (<double>nr * <double>F * scale)
                    for f in range(F):
                        for k in range(K):
                            s = 0.0
                            for r in range(nr):
                                s = s + G[r * K + k] * PHI[r * F + f]
                            if target == n_blocks:
                                coef[target, f, k] = w * s
                            else:
                                coef[target, f, k] += w * s
                if solver == SOLVER_CDSG:
                    for k in range(K):
                        s = 0.0
                        for r in range(nr):
                            s = s + G[r * K + k]
                        if target == n_blocks:
                            beta_ptr[target * K + k] = -step * (s / nr) / scale
                        else:
                            beta_ptr[target * K + k] -= step * (s / nr) / scale
                for k in range(K):
                    s = 0.0
                    for r in range(nr):
                        s = s + G[r * K + k]
                    if loss == LOSS_NOVELTY:
                        intercept[k] -= step * (s / nr + lam)
                    elif fit_intercept:
                        intercept[k] -= step * s / nr
                if target == n_blocks:
                    n_blocks += 1
                if scale < MIN_SCALE:
                    _rescale(coef, n_blocks, scale)
                    if beta_ptr != NULL:
                        for j in range(n_blocks * K):
                            beta_ptr[j] *= scale
                    scale = 1.0
                if average:
                    n_avg += 1.0
                    _average(coef, intercept, scale, avg_coef, avg_intercept,
                             n_blocks, n_avg)
                pos += nr
    finally:
        free(scratch)
    scalars[0] = scale
    scalars[1] = n_avg
    return n_blocks, n_iter, feature_evals, status, objective, n_old, ridge_sum


# The ridges the fitted step chooses from when --ridge does not fix one:
# 10**-3 .. 10 in half decades.  Not beyond: the next-batch judgement counts
# a step's noise in full, though the following steps average it out, and
# late in a run it would take ridges that all but stop learning (100 on the
# first 2000 rows of a9a: 76% accuracy, the majority class; 10: 81%).
cdef enum:
    N_RIDGES = 9
    # the next-batch choice (--step-rule fit): the ridge taken before any
    # batch has judged one (10**(-3 + FIRST_RIDGE / 2))
    FIRST_RIDGE = 6
    # ridge_state: the last fitted step, then the scores, then the candidates
    RS_HAVE = 0         # 1 once a fitted step has been taken
    RS_STEP = 1         # its step
    RS_TARGET = 2       # the block it set or updated
    RS_CHOSEN = 3       # the grid index of its ridge
    RS_WHOLE = 4        # 1 if its batch was whole (not a short one)
    RS_JUDGED = 5       # the number of batches that have judged a step
    RS_SCORES = 6       # N_RIDGES judged losses, one per ridge
    # sum over the judging batches of L_b(i) L_b(j), the batch's judged losses
    # of ridges i and j (N_RIDGES^2): the spread of the paired differences
    RS_PAIRS = RS_SCORES + N_RIDGES
    RS_CANDIDATES = RS_PAIRS + N_RIDGES * N_RIDGES    # N_RIDGES fits (F x K each) of the last batch
cdef double RIDGE_LOW = 1e-3
cdef double RIDGE_RATIO = 3.1622776601683795      # sqrt(10)


cdef inline double _grid_ridge(Py_ssize_t i) noexcept nogil:
    return RIDGE_LOW * RIDGE_RATIO ** i


def t84(double df):
    """The width of the ridge rule's one-SE test, in standard errors, with
    ``df`` degrees of freedom (``_t84``; for the tests)."""
    return _t84(df)


def ridge_grid():
    """The ridges the fitted step chooses from (``--step-rule fit`` and
    ``fit-gcv``), smallest first."""
    return np.array([_grid_ridge(i) for i in range(N_RIDGES)])


def ridge_state_size(Py_ssize_t block_size, Py_ssize_t n_outputs):
    """Doubles of ``fit_chunk``'s ``ridge_state`` (the next-batch ridge choice)."""
    return RS_CANDIDATES + N_RIDGES * block_size * n_outputs


cdef double _gram(const double* PHI, const double* G, Py_ssize_t nr, Py_ssize_t F,
                  Py_ssize_t K, double* M, double* R) noexcept nogil:
    """M = PHI' PHI (lower triangle) and R = PHI' G, summed in row order;
    returns ||G||^2."""
    cdef Py_ssize_t r, i, j, k
    cdef double p, gg = 0.0
    for i in range(F * F):
        M[i] = 0.0
    for i in range(F * K):
        R[i] = 0.0
    for r in range(nr):
        for i in range(F):
            p = PHI[r * F + i]
            for j in range(i + 1):
                M[i * F + j] += p * PHI[r * F + j]
            for k in range(K):
                R[i * K + k] += p * G[r * K + k]
        for k in range(K):
            gg = gg + G[r * K + k] * G[r * K + k]
    return gg


cdef void _ridge_solve(const double* M, const double* R, Py_ssize_t F, Py_ssize_t K,
                       double shift, double* A, double* sol) noexcept nogil:
    """sol = (M + shift I)^{-1} R (F x K) for positive definite M + shift I:
    Cholesky A = L L' (L left in A's lower triangle), then L y = R, L' sol = y."""
    cdef Py_ssize_t i, j, k
    cdef double s, p
    for i in range(F):
        for j in range(i + 1):
            A[i * F + j] = M[i * F + j]
        A[i * F + i] += shift
    for j in range(F):
        s = A[j * F + j]
        for k in range(j):
            s = s - A[j * F + k] * A[j * F + k]
        s = sqrt(s)
        A[j * F + j] = s
        for i in range(j + 1, F):
            p = A[i * F + j]
            for k in range(j):
                p = p - A[i * F + k] * A[j * F + k]
            A[i * F + j] = p / s
    for k in range(K):
        for i in range(F):
            s = R[i * K + k]
            for j in range(i):
                s = s - A[i * F + j] * sol[j * K + k]
            sol[i * K + k] = s / A[i * F + i]
        for i in range(F - 1, -1, -1):
            s = sol[i * K + k]
            for j in range(i + 1, F):
                s = s - A[j * F + i] * sol[j * K + k]
            sol[i * K + k] = s / A[i * F + i]


cdef double _fit_block(const double* PHI, const double* G, Py_ssize_t nr, Py_ssize_t F,
                       Py_ssize_t K, double ridge, double* work, double* out) noexcept nogil:
    """The fitted step's direction: out = (PHI' PHI + rho * nr * I)^{-1} PHI' G.

    PHI is the batch's features of the block (nr x F), G the loss derivatives
    (nr x K); out (F x K) holds the coefficients whose block values on the
    batch best fit G in the ridge sense.  rho is ``ridge`` when it is > 0;
    otherwise (``--step-rule fit-gcv``) the rho of the grid 1e-3, 10**-2.5,
    ..., 10 with the smallest generalised cross-validation score

        GCV(rho) = (||G - PHI out||^2 / nr) / (1 - df / nr)^2,
        df = tr(PHI (PHI'PHI + rho nr I)^{-1} PHI') = F - rho nr tr(A^{-1})

    (Golub, Heath, Wahba 1979: the leave-one-out error of the fit, rotation
    invariant), the first on ties; a rho with df >= nr is not a candidate
    (the largest is kept when none is).  Returns rho.  ``work`` holds
    2 F^2 + 2 F K + F doubles.  Serial, in a fixed order, so the bits do not
    depend on the thread count.
    """
    cdef Py_ssize_t i, j, k, c, n_try
    cdef double s, rho, gg, cr, cc, tr_inv, df, score, best_score = 0.0
    cdef double best_rho = 0.0
    cdef double* M = work                  # PHI' PHI (lower triangle)
    cdef double* A = M + F * F             # its Cholesky factor for one rho
    cdef double* R = A + F * F             # PHI' G, F x K
    cdef double* sol = R + F * K           # the solution for one rho, F x K
    cdef double* v = sol + F * K           # a column of L^{-1}
    gg = _gram(PHI, G, nr, F, K, M, R)
    n_try = 1 if ridge > 0.0 else N_RIDGES
    for c in range(n_try):
        rho = ridge if ridge > 0.0 else _grid_ridge(c)
        _ridge_solve(M, R, F, K, rho * nr, A, sol)
        if n_try > 1:
            # tr(A^{-1}) = ||L^{-1}||_F^2, column by column
            tr_inv = 0.0
            for j in range(F):
                for i in range(F):
                    if i < j:
                        v[i] = 0.0
                        continue
                    s = 1.0 if i == j else 0.0
                    for k in range(j, i):
                        s = s - A[i * F + k] * v[k]
                    v[i] = s / A[i * F + i]
                    tr_inv = tr_inv + v[i] * v[i]
            df = F - rho * nr * tr_inv
            # ||G - PHI x||^2 = ||G||^2 - x.R - rho nr ||x||^2   (A x = R)
            cr = 0.0
            cc = 0.0
            for i in range(F * K):
                cr = cr + sol[i] * R[i]
                cc = cc + sol[i] * sol[i]
            if df >= nr:
                if c < n_try - 1 or best_rho > 0.0:
                    continue
                score = 0.0         # no candidate: the largest ridge
            else:
                score = (gg - cr - rho * nr * cc) / nr / ((1.0 - df / nr) * (1.0 - df / nr))
                if best_rho > 0.0 and not (score < best_score):
                    continue
            best_score = score
            best_rho = rho
        else:
            best_rho = rho
        for i in range(F * K):
            out[i] = sol[i]
    return best_rho


cdef void _fit_candidates(const double* PHI, const double* G, Py_ssize_t nr, Py_ssize_t F,
                          Py_ssize_t K, double* work, double* cands) noexcept nogil:
    """cands[i] (F x K each) = (PHI'PHI + rho_i nr I)^{-1} PHI'G for every
    ridge rho_i of the grid: the candidate directions of the next-batch choice.
    ``work``: 2 F^2 + F K doubles.  Serial, fixed order."""
    cdef Py_ssize_t i
    cdef double* M = work
    cdef double* A = M + F * F
    cdef double* R = A + F * F
    _gram(PHI, G, nr, F, K, M, R)
    for i in range(N_RIDGES):
        _ridge_solve(M, R, F, K, _grid_ridge(i) * nr, A, cands + i * F * K)


cdef inline double _row_loss(int loss, double param, const double* u, const double* target,
                             Py_ssize_t K) noexcept nogil:
    """l(u, y) of one row, summed over the outputs (the softmax: one value)."""
    cdef Py_ssize_t k
    cdef double s = 0.0
    if loss == LOSS_SOFTMAX:
        return softmax_value(u, <Py_ssize_t>target[0], K)
    for k in range(K):
        s = s + loss_value(loss, u[k], target[k], param)
    return s


cdef int _judge_candidates(const double* U, const double* P, const int64_t* rows,
                           const double* targets, Py_ssize_t tcols, Py_ssize_t nr,
                           Py_ssize_t F, Py_ssize_t K, int loss, double param,
                           double* rs, int n_threads) noexcept nogil:
    """Add to each ridge's score the loss this batch would have had if the
    last fitted step had used that ridge's candidate: the batch's predictions
    U moved by step * P (c_chosen - c_i), with P the last target block's
    features on this batch's rows (rows the last fit did not see).

    Every sum keeps one order (over f for a row's move, over the rows in
    order for a ridge's total), so the bits do not depend on the threads:
    rows are shared out, each row's N_RIDGES x K moves summed side by side
    (the inner loops vectorise), and the totals added serially.  Returns -1
    if scratch memory cannot be had."""
    cdef Py_ssize_t i, j, r, k, f, chosen = <Py_ssize_t>rs[RS_CHOSEN]
    cdef Py_ssize_t NK = N_RIDGES * K
    cdef double step = rs[RS_STEP], p, total
    cdef double tot[N_RIDGES]
    cdef const double* best = rs + RS_CANDIDATES + chosen * F * K
    cdef double* D = <double*>malloc((F * NK + nr * N_RIDGES) * sizeof(double))
    cdef double* L
    cdef double* acc
    cdef int failed = 0
    cdef int* failed_ptr = &failed
    if D == NULL:
        return -1
    L = D + F * NK
    # D[f, i, k] = c_chosen[f, k] - c_i[f, k]
    for f in range(F):
        for i in range(N_RIDGES):
            for k in range(K):
                D[(f * N_RIDGES + i) * K + k] = (best[f * K + k]
                                                 - rs[RS_CANDIDATES + (i * F + f) * K + k])
    with parallel(num_threads=n_threads if nr >= 64 else 1):
        acc = <double*>malloc((NK + K) * sizeof(double))
        if acc == NULL:
            failed_ptr[0] = 1
        else:
            for r in prange(nr, schedule="static"):
                for j in range(NK):
                    acc[j] = 0.0
                for f in range(F):
                    p = P[r * F + f]
                    for j in range(NK):
                        acc[j] = acc[j] + p * D[f * NK + j]
                for i in range(N_RIDGES):
                    for k in range(K):
                        acc[NK + k] = U[r * K + k] + step * acc[i * K + k]
                    L[r * N_RIDGES + i] = _row_loss(loss, param, acc + NK,
                                                    targets + rows[r] * tcols, K)
            free(acc)
    if failed:
        free(D)
        return -1
    for i in range(N_RIDGES):
        total = 0.0
        for r in range(nr):
            total = total + L[r * N_RIDGES + i]
        rs[RS_SCORES + i] += total
        tot[i] = total
    for i in range(N_RIDGES):
        for j in range(N_RIDGES):
            rs[RS_PAIRS + i * N_RIDGES + j] += tot[i] * tot[j]
    free(D)
    return 0


cdef inline double _t84(double df) noexcept nogil:
    """Student's t quantile at Phi(1) = 0.8413 (one standard error of a normal
    mean), df degrees of freedom: a table to df 5, then the Cornish-Fisher
    series 1 + 1/(2 df) + 1/(4 df^2) (within 4e-4 of the exact quantile)."""
    if df < 1.5:
        return 1.8373
    if df < 2.5:
        return 1.3213
    if df < 3.5:
        return 1.1969
    if df < 4.5:
        return 1.1416
    if df < 5.5:
        return 1.1105
    return 1.0 + 0.5 / df + 0.25 / (df * df)


cdef Py_ssize_t _best_ridge(const double* rs) noexcept nogil:
    """The ridge of the next-batch choice: the largest ridge whose judged loss
    so far is within one standard error of the smallest (the one-standard-
    error rule of Breiman, Friedman, Olshen and Stone, 1984), the error being
    that of the sum of the n paired per-batch differences (RS_PAIRS), its
    width Student's t quantile (_t84) because the spread is itself estimated
    from n batches.  FIRST_RIDGE before any judging batch; after one (no
    spread to measure) the largest ridge: a single batch cannot tell the
    ridges apart, and a small ridge taken early on its word is a noisy step
    that stays in the model (Adult's worst seeds)."""
    cdef Py_ssize_t i, best = 0
    cdef double n = rs[RS_JUDGED], diff, var
    if n == 0.0:
        return FIRST_RIDGE
    if n < 2.0:
        return N_RIDGES - 1
    for i in range(1, N_RIDGES):
        if rs[RS_SCORES + i] < rs[RS_SCORES + best]:
            best = i
    for i in range(N_RIDGES - 1, best, -1):
        # the n paired differences d_b: their sum, and n times their sample
        # variance, (n sum d^2 - (sum d)^2) / (n - 1)
        diff = rs[RS_SCORES + i] - rs[RS_SCORES + best]
        var = (n * (rs[RS_PAIRS + i * N_RIDGES + i] - 2.0 * rs[RS_PAIRS + i * N_RIDGES + best]
                    + rs[RS_PAIRS + best * N_RIDGES + best]) - diff * diff) / (n - 1.0)
        if diff <= _t84(n - 1.0) * sqrt(var if var > 0.0 else 0.0):
            return i
    return best


cdef inline double* _block_ptr(FeatureMap* fm, Py_ssize_t block, double* cache_ptr,
                               Py_ssize_t n_cached, double* fresh) noexcept nogil:
    """Directions of an existing block: its cache slot, or regenerated into fresh."""
    if block < n_cached:
        return cache_ptr + block * _stride(fm)
    fm_block(fm, block, fresh, fresh + fm.n_features * fm.block_size)
    return fresh


cdef double _batch_variance(const double* PHI, Py_ssize_t nr, Py_ssize_t F) noexcept nogil:
    """sigma^2 of rule (9): (1/F) sum_f of the sample variance over the batch
    rows of phi_f(x_r) (divisor nr - 1); 1 (= E phi^2) for a batch of one."""
    cdef Py_ssize_t r, f
    cdef double m, v, total = 0.0
    if nr < 2:
        return 1.0
    for f in range(F):
        m = 0.0
        for r in range(nr):
            m = m + PHI[r * F + f]
        m = m / nr
        v = 0.0
        for r in range(nr):
            v = v + (PHI[r * F + f] - m) * (PHI[r * F + f] - m)
        total = total + v / (nr - 1)
    return total / F


cdef double _loss_bound(int loss, double param, const double* G, Py_ssize_t nr,
                        Py_ssize_t K) noexcept nogil:
    """M of rule (9): a bound on ||l'(u, y)||_2 over the outputs.  The
    Lipschitz losses have one (1 per output, Huber's delta, the quantile's
    max(tau, 1 - tau), sqrt(2) for the softmax); for the squared and squared
    hinge losses, whose derivative is unbounded, the largest ||g_r|| of the batch."""
    cdef Py_ssize_t r, k
    cdef double m = 0.0, s
    if loss == LOSS_SOFTMAX:
        return sqrt(2.0)
    if loss == LOSS_HINGE or loss == LOSS_LOGISTIC or loss == LOSS_EPSILON_INSENSITIVE \
            or loss == LOSS_NOVELTY:
        return sqrt(<double>K)
    if loss == LOSS_HUBER:
        return param * sqrt(<double>K)
    if loss == LOSS_QUANTILE:
        return (param if param > 0.5 else 1.0 - param) * sqrt(<double>K)
    for r in range(nr):
        s = 0.0
        for k in range(K):
            s = s + G[r * K + k] * G[r * K + k]
        if s > m:
            m = s
    return sqrt(m)


cdef Py_ssize_t _cdsg_choose(const double* beta, Py_ssize_t n_blocks, Py_ssize_t K,
                             double scale, const double* gbar, double gamma_t,
                             double eta_max, double M, double sigma2, Py_ssize_t nr,
                             double* step) noexcept nogil:
    """Rule (9) for every old block j, with beta_j = scale * beta[j] and
    g = gbar (vectors over the outputs): the largest eta <= eta_max with

        2 ||beta_j - eta g||^2 + 2 (eta M sigma)^2 / B^2 <= ||beta_j||^2 + gamma_t^2 ||g||^2,

    i.e. A eta^2 - 4 p eta + c <= 0 with A = 2||g||^2 + 2 M^2 sigma^2 / B^2,
    p = beta_j . g, c = ||beta_j||^2 - gamma_t^2 ||g||^2.  Returns the block
    with the largest such eta (the first on ties) and sets *step to it when it
    exceeds gamma_t; otherwise returns n_blocks (create a new block)."""
    cdef Py_ssize_t j, k, best = n_blocks
    cdef double gg = 0.0, A, p, bb, c, disc, root, lo, hi, eta, best_eta = gamma_t, b
    for k in range(K):
        gg = gg + gbar[k] * gbar[k]
    A = 2.0 * gg + 2.0 * M * M * sigma2 / (<double>nr * <double>nr)
    if not (A > 0.0):
        return n_blocks
    for j in range(n_blocks):
        p = 0.0
        bb = 0.0
        for k in range(K):
            b = scale * beta[j * K + k]
            p = p + b * gbar[k]
            bb = bb + b * b
        c = bb - gamma_t * gamma_t * gg
        disc = 4.0 * p * p - A * c
        if disc < 0.0:
            continue
        root = sqrt(disc)
        lo = (2.0 * p - root) / A
        hi = (2.0 * p + root) / A
        eta = hi if hi < eta_max else eta_max
        if eta < lo:
            continue            # the feasible interval lies beyond the cap
        if eta > best_eta:
            best_eta = eta
            best = j
    if best < n_blocks:
        step[0] = best_eta
    return best


cdef void _features_of_rows(const FeatureMap* fm, const Rows* X, const int64_t* rows,
                            Py_ssize_t n_rows, const double* blk, Py_ssize_t block,
                            const RowSlabs* slabs, double* out,
                            int n_threads) noexcept nogil:
    """out[r, :] = phi(x_rows[r]) for one block (directions blk; rows in
    parallel); ``slabs`` (or NULL) the rows' kept features."""
    cdef Py_ssize_t r, F = fm.block_size
    if n_threads == 1 or n_rows < 8:
        for r in range(n_rows):
            _row_features(fm, blk, X, rows[r], block, slabs, out + r * F)
    else:
        for r in prange(n_rows, schedule="static", num_threads=n_threads):
            _row_features(fm, blk, X, rows[r], block, slabs, out + r * F)


cdef int _add_block(const double* Z, Py_ssize_t nr, Py_ssize_t F, Py_ssize_t K,
                    const double* coef, double* out, int n_threads) noexcept nogil:
    """out[r, :] += Z[r, :] . coef (one block's features Z, nr x F, and its
    coefficients, F x K): the sums of _add_group (ks_block_dots), rows
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


cdef void _rescale(double[:, :, ::1] coef, Py_ssize_t n_blocks, double scale) noexcept nogil:
    cdef Py_ssize_t b, f, k
    for b in range(n_blocks):
        for f in range(coef.shape[1]):
            for k in range(coef.shape[2]):
                coef[b, f, k] *= scale


cdef void _average(double[:, :, ::1] coef, double[::1] intercept, double scale,
                   double[:, :, ::1] avg_coef, double[::1] avg_intercept,
                   Py_ssize_t n_blocks, double n_avg) noexcept nogil:
    """Running mean of the iterates f_1 .. f_t (Polyak averaging): each is a
    combination of the same blocks, so the mean is one too."""
    cdef Py_ssize_t b, f, k
    cdef double w = 1.0 / n_avg
    for b in range(n_blocks):
        for f in range(coef.shape[1]):
            for k in range(coef.shape[2]):
                avg_coef[b, f, k] += w * (scale * coef[b, f, k] - avg_coef[b, f, k])
    for k in range(intercept.shape[0]):
        avg_intercept[k] += w * (intercept[k] - avg_intercept[k])


def loss_values(int loss, const double[:, ::1] u, const double[:, ::1] targets,
                double param=0.0):
    """Per-row losses l(u_r, y_r) (summed over outputs) -- for tests and objectives."""
    cdef Py_ssize_t r, n = u.shape[0], K = u.shape[1]
    out = np.zeros(n, dtype=np.float64)
    cdef double[::1] o = out
    for r in range(n):
        o[r] = _row_loss(loss, param, &u[r, 0], &targets[r, 0], K)
    return out


def loss_derivatives(int loss, const double[:, ::1] u, const double[:, ::1] targets,
                     double param=0.0):
    """dl/du per row and output -- for tests (finite differences)."""
    cdef Py_ssize_t r, k, n = u.shape[0], K = u.shape[1]
    out = np.zeros((n, K), dtype=np.float64)
    cdef double[:, ::1] o = out
    for r in range(n):
        if loss == LOSS_SOFTMAX:
            softmax_gradient(&u[r, 0], <Py_ssize_t>targets[r, 0], K, &o[r, 0])
        else:
            for k in range(K):
                o[r, k] = loss_derivative(loss, u[r, k], targets[r, k], param)
    return out
