"""Doubly Stochastic Gradients (Dai et al., NIPS 2014, Algorithms 1 and 2) with
mini-batches and blocks of random features.

The model is f(x) = intercept + sum_b sum_f coef[b, f, :] phi_{b,f}(x), where
block b's features phi_{b,f} are regenerated from (seed, b) by _features.pxd,
never stored.  Iteration t (1-based) of Algorithm 1 on a batch of rows R:

    u_r   = f(x_r)                                  (Algorithm 2 over old blocks)
    g_r   = l'(u_r, y_r)                            (_losses.pxd)
    gamma_t = theta / (t0 + t)                      (theta times 2 for the softmax, 4
                                                     for the logistic loss with the
                                                     fitted step: losses.py, step_factor)
    old coefficients *= (1 - gamma_t lambda)        (lazily: one global scale)
    coef[new block, f, :] = -gamma_t / (|R| F) sum_r g_r phi_f(x_r)
    intercept -= gamma_t (mean_r g_r [+ lambda for the novelty offset])

The 1/F makes (1/F) sum_f phi_f(x) phi_f(.) the block's unbiased estimate of
k(x, .), so a step is the functional gradient step of the paper whatever F is.
With the fitted step (h["step_rule"] "fit", the default, or "fit-gcv") the new
block is instead -gamma_t times the ridge fit of the batch's derivatives by its
features (_ridge.pxd); the ridge is given, chosen by the following batches'
losses (the next-batch judgement, _ridge.pxd too), or by GCV.

Blocks whose directions fit the byte budget are kept in a cache (created
once, reused by every later iteration); the others are regenerated in groups
(_block_sums.pxd, the sums prediction shares).  The step loop (fit_chunk)
reads its state from a StepState and runs one batch in five steps: predict,
derivatives, the target block, the ridge fit, the step.
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
from libc.stdlib cimport malloc, free
from libc.string cimport memset
from libc.math cimport isfinite, sqrt
from libc.stdint cimport uint64_t, int64_t

from collections import namedtuple

import numpy as np
cimport numpy as cnp

from kernsolve._core._rows cimport Rows, as_rows
from kernsolve._core._random cimport rng_key, rng_integer, STREAM_SAMPLING
from kernsolve._core._features cimport FeatureMap, fm_init, fm_block
from kernsolve._core._simd cimport ks_simd_join, paths_mask
from ._losses cimport (loss_value, loss_derivative, softmax_value, softmax_gradient,
                       row_loss, loss_bound, LOSS_SOFTMAX, LOSS_NOVELTY)
from ._row_features cimport RowFeatures, RowSlabs
from ._block_sums cimport (block_stride, evaluate, scratch_blocks, block_ptr,
                           features_of_rows, add_block, make_blocks)
from ._ridge cimport (N_RIDGES, RS_HAVE, RS_STEP, RS_TARGET, RS_CHOSEN, RS_WHOLE,
                      RS_JUDGED, RS_CANDIDATES, grid_ridge, fit_block, fit_candidates,
                      judge_candidates, best_ridge, t84 as _t84,
                      ridge_state_size as _ridge_state_size)

cnp.import_array()

# Solvers of fit_chunk (h["solver"]).
cdef enum:
    SOLVER_DSG = 0
    SOLVER_UDSG = 1
    SOLVER_CDSG = 2
_SOLVERS = {"dsg": SOLVER_DSG, "udsg": SOLVER_UDSG, "cdsg": SOLVER_CDSG}
# Counter of the stream K_old below: chunk permutations use key(K_sampling, c)
# for c = 0, 1, 2, ..., so the last counter is never one of them.
cdef uint64_t OLD_BLOCK_STREAM = 0xFFFFFFFFFFFFFFFFULL
# Renormalise the stored coefficients when the lazy scale gets this small.
cdef double MIN_SCALE = 1e-100


cdef class StepState:
    """What the step loop carries from one ``fit_chunk`` call to the next: the
    settings of the run (``h``, :func:`~kernsolve.solvers.dsg.options.hyperparameters`)
    and the model so far.

    ``coef[:n_blocks] * scale`` are the true coefficients (the lazy scale),
    ``intercept`` the intercepts; ``coef`` has room for more blocks (the
    trainer grows it, and ``avg_coef`` and ``beta`` with it).  ``n_avg``
    counts the iterates averaged into ``avg_coef`` and ``avg_intercept``
    (``h["average"]``); ``beta`` holds CDSG's beta_j per block and output
    under the same lazy scale (None for DSG and UDSG); ``ridge_state`` the
    next-batch ridge choice's evidence; ``n_iter`` the iterations so far.
    """
    cdef public dict h
    cdef public object coef, intercept, avg_coef, avg_intercept, beta, ridge_state
    cdef public double scale, n_avg
    cdef public Py_ssize_t n_blocks
    cdef public long long n_iter

    def __init__(self, dict h, Py_ssize_t n_outputs, Py_ssize_t capacity):
        F, K = h["block_size"], n_outputs
        self.h = h
        self.coef = np.zeros((capacity, F, K))
        self.intercept = np.zeros(K)
        self.avg_coef = np.zeros((capacity, F, K)) if h["average"] else np.zeros((1, F, K))
        self.avg_intercept = np.zeros(K)
        self.beta = np.zeros((capacity, K)) if h["solver"] == "cdsg" else None
        self.ridge_state = np.zeros(_ridge_state_size(F, K))
        self.scale, self.n_avg = 1.0, 0.0
        self.n_blocks, self.n_iter = 0, 0


# What one fit_chunk call adds up: status 0, 1 (a prediction became non-finite:
# the step is too large) or -1 (out of memory); the feature evaluations; the
# batch losses seen (objective); the iterations that updated an old block;
# the ridges of the fitted steps.
ChunkResult = namedtuple("ChunkResult",
                         "status feature_evals objective n_old_updates ridge_sum")


cdef struct Settings:
    # the run's settings as the loop reads them (from h, once a call)
    int loss, solver
    double loss_param, lam, theta, t0, max_ratio, ridge
    bint fit_intercept, average, fitted, progressive
    long long n_new_period, n_old_period
    Py_ssize_t batch, whole


cdef struct Model:
    # StepState's arrays and numbers, as pointers and values for the loop
    double* coef
    double* intercept
    double* beta
    double* avg_coef
    double* avg_intercept
    double scale, n_avg
    Py_ssize_t n_blocks, F, K
    long long n_iter


cdef struct Work:
    # the call's data, cache and scratch, and the batch in hand
    FeatureMap fm
    const Rows* X
    const double* targets       # n_rows x tcols
    Py_ssize_t tcols
    const RowSlabs* slabs       # the rows' kept features, or NULL
    double* cache               # blocks < cache_blocks, one stride each
    Py_ssize_t cache_blocks, n_cached, stride, d_f
    double* scratch             # nb regenerated blocks, then the arrays below
    Py_ssize_t nb
    double* U                   # predictions, batch x K
    double* G                   # loss derivatives, batch x K
    double* PHI                 # the updated block's features, batch x F
    double* fresh               # its directions when not cached
    double* gbar                # mean_r g_r (CDSG), K
    double* fit                 # the fitted step's direction, F x K
    double* work                # and its scratch (fit_block)
    double* prev_phi            # last target's features, batch x F
    double* newest              # the newest block's features (progressive choice)
    double* rs                  # ridge_state (progressive choice), or NULL
    uint64_t key_old
    int n_threads
    const int64_t* rows         # the batch
    Py_ssize_t nr, n_before, phi_block


cdef struct Counts:
    long long feature_evals, n_old
    double objective, ridge_sum


cdef Settings _settings(dict h, Py_ssize_t whole_batch) except *:
    cdef Settings s
    s.batch = h["batch_size"]
    s.whole = s.batch if whole_batch <= 0 or whole_batch > s.batch else whole_batch
    s.loss, s.loss_param, s.lam = h["loss"], h["loss_param"], h["lam"]
    # the schedule's theta times the loss's fitted-step factor (losses.py,
    # step_factor; 1 unless the rule is fit: a power of two, exact)
    s.theta = h["step"] * h.get("step_factor", 1.0)
    s.t0 = h["t0"]
    s.fit_intercept, s.average = h["fit_intercept"], h["average"]
    s.solver = _SOLVERS[h.get("solver", "dsg")]
    s.n_new_period = h.get("new_blocks", 1) if s.solver == SOLVER_UDSG else 1
    s.n_old_period = h.get("old_blocks", 0) if s.solver == SOLVER_UDSG else 0
    s.max_ratio = h.get("max_step_ratio", 1.0)
    # the fitted step (--step-rule fit or fit-gcv; ridge 0: chosen by the
    # rule) or Algorithm 1's gradient step
    step_rule = h.get("step_rule", "gradient")
    s.fitted = step_rule in ("fit", "fit-gcv")
    s.ridge = h.get("ridge", 0.0)
    s.progressive = step_rule == "fit" and s.ridge <= 0.0
    if s.n_new_period < 1 or s.n_old_period < 0:
        raise ValueError("UDSG needs new_blocks >= 1 and old_blocks >= 0")
    return s


cdef int _predict(const Settings* s, Model* m, Work* w, Counts* c) noexcept nogil:
    """u_r = f(x_r) over the blocks so far (Algorithm 2) into w.U: 0, 1 when
    one is not finite, -1 out of memory.  The progressive choice judges the
    last step, whose block is (DSG) the newest: its features on the batch are
    kept in w.newest from the prediction (the same sums in the same order:
    same bits)."""
    cdef Py_ssize_t r, k, nr = w.nr, K = m.K
    cdef double* blk
    cdef int status = 0
    memset(w.U, 0, nr * K * sizeof(double))
    w.n_cached = w.cache_blocks if w.cache_blocks < m.n_blocks else m.n_blocks
    w.n_before = m.n_blocks - 1 if s.progressive and m.n_blocks > 0 else m.n_blocks
    if w.n_before > 0:
        if evaluate(&w.fm, w.X, w.rows, nr, w.n_before, m.coef, K, w.cache, w.n_cached,
                    w.scratch, w.nb, w.slabs, w.U, w.n_threads) != 0:
            return -1
    if w.n_before < m.n_blocks:
        blk = block_ptr(&w.fm, w.n_before, w.cache, w.n_cached, w.fresh)
        features_of_rows(&w.fm, w.X, w.rows, nr, blk, w.n_before, w.slabs, w.newest,
                         w.n_threads)
        if add_block(w.newest, nr, m.F, K, m.coef + w.n_before * m.F * K, w.U,
                     w.n_threads) != 0:
            return -1
    c.feature_evals += nr * m.F * m.n_blocks
    for r in range(nr):
        for k in range(K):
            w.U[r * K + k] = m.intercept[k] + m.scale * w.U[r * K + k]
            if not isfinite(w.U[r * K + k]):
                status = 1
    return status


cdef void _derivatives(const Settings* s, const Model* m, Work* w,
                       Counts* c) noexcept nogil:
    """g_r = l'(u_r, y_r) into w.G; the batch's losses added to the objective."""
    cdef Py_ssize_t r, k, K = m.K
    cdef const double* y
    for r in range(w.nr):
        y = w.targets + w.rows[r] * w.tcols
        if s.loss == LOSS_SOFTMAX:
            c.objective += softmax_value(w.U + r * K, <Py_ssize_t>y[0], K)
            softmax_gradient(w.U + r * K, <Py_ssize_t>y[0], K, w.G + r * K)
        else:
            for k in range(K):
                c.objective += loss_value(s.loss, w.U[r * K + k], y[k], s.loss_param)
                w.G[r * K + k] = loss_derivative(s.loss, w.U[r * K + k], y[k], s.loss_param)


cdef Py_ssize_t _target_block(const Settings* s, const Model* m, Work* w, Counts* c,
                              double* step) noexcept nogil:
    """The block the step sets, its features on the batch in w.PHI: a new one
    (n_blocks), or an old one: UDSG's of the period's schedule, CDSG's of
    rule (9) (which sets *step)."""
    cdef Py_ssize_t target = m.n_blocks, F = m.F
    cdef double* blk
    w.phi_block = -1                # block whose features PHI holds
    if s.solver == SOLVER_UDSG and m.n_blocks > 0:
        if (m.n_iter - 1) % (s.n_new_period + s.n_old_period) >= s.n_new_period:
            target = <Py_ssize_t>rng_integer(w.key_old, <uint64_t>m.n_iter,
                                             <uint64_t>m.n_blocks)
    elif s.solver == SOLVER_CDSG and m.n_blocks > 0:
        target = _cdsg_target(s, m, w, c, step)
    if target == m.n_blocks:
        # the new block: directions (into the cache when it has room)
        blk = w.cache + m.n_blocks * w.stride if m.n_blocks < w.cache_blocks else w.fresh
        fm_block(&w.fm, m.n_blocks, blk, blk + w.d_f)
        features_of_rows(&w.fm, w.X, w.rows, w.nr, blk, m.n_blocks, w.slabs, w.PHI,
                         w.n_threads)
        c.feature_evals += w.nr * F
    else:
        c.n_old += 1
        if target != w.phi_block:
            blk = block_ptr(&w.fm, target, w.cache, w.n_cached, w.fresh)
            features_of_rows(&w.fm, w.X, w.rows, w.nr, blk, target, w.slabs, w.PHI,
                             w.n_threads)
            c.feature_evals += w.nr * F
    return target


cdef int _progressive_fit(const Settings* s, const Model* m, Work* w, Counts* c,
                          Py_ssize_t target, double step) noexcept nogil:
    """The next-batch ridge choice into w.fit: the ridge whose fits of the past
    batches' derivatives did best on the batches that followed them (unseen
    when they were fitted).  This batch judges the last step first, if it was
    fitted on a whole batch (the short last batch of a chunk, fitted closely
    by small ridges, would count against them far beyond its size).  -1 when
    out of memory."""
    cdef Py_ssize_t j, last_target, chosen, F = m.F, K = m.K
    cdef double* rs = w.rs
    cdef const double* P
    cdef double* blk
    if rs[RS_HAVE] != 0.0 and rs[RS_WHOLE] != 0.0:
        last_target = <Py_ssize_t>rs[RS_TARGET]
        if last_target == w.n_before and w.n_before < m.n_blocks:
            P = w.newest
        else:
            blk = block_ptr(&w.fm, last_target, w.cache, w.n_cached, w.fresh)
            features_of_rows(&w.fm, w.X, w.rows, w.nr, blk, last_target, w.slabs,
                             w.prev_phi, w.n_threads)
            c.feature_evals += w.nr * F
            P = w.prev_phi
        if judge_candidates(w.U, P, w.rows, w.targets, w.tcols, w.nr, F, K, s.loss,
                            s.loss_param, rs, w.n_threads) != 0:
            return -1
        rs[RS_JUDGED] += 1.0
    chosen = best_ridge(rs)
    fit_candidates(w.PHI, w.G, w.nr, F, K, w.work, rs + RS_CANDIDATES)
    for j in range(F * K):
        w.fit[j] = rs[RS_CANDIDATES + chosen * F * K + j]
    c.ridge_sum += grid_ridge(chosen)
    rs[RS_HAVE] = 1.0
    rs[RS_STEP] = step
    rs[RS_TARGET] = <double>target
    rs[RS_CHOSEN] = <double>chosen
    rs[RS_WHOLE] = 1.0 if w.nr >= s.whole else 0.0
    return 0


cdef void _apply_step(const Settings* s, Model* m, const Work* w, Py_ssize_t target,
                      double step) noexcept nogil:
    """The step on block ``target`` (set when new, added to when old): the
    fitted direction or the functional gradient's; CDSG's beta_j and the
    intercept with it; then the lazy scale renormalised when small, and the
    running average."""
    cdef Py_ssize_t r, f, k, j, nr = w.nr, F = m.F, K = m.K
    cdef bint new = target == m.n_blocks
    cdef double* coef = m.coef + target * F * K
    cdef double a, s_
    if s.fitted:
        # the fitted step: the block's least-squares (ridge) fit of the
        # batch's loss derivatives, times -step
        a = -step / m.scale
        for f in range(F):
            for k in range(K):
                if new:
                    coef[f * K + k] = a * w.fit[f * K + k]
                else:
                    coef[f * K + k] += a * w.fit[f * K + k]
    else:
        a = -step / (<double>nr * <double>F * m.scale)
        for f in range(F):
            for k in range(K):
                s_ = 0.0
                for r in range(nr):
                    s_ = s_ + w.G[r * K + k] * w.PHI[r * F + f]
                if new:
                    coef[f * K + k] = a * s_
                else:
                    coef[f * K + k] += a * s_
    for k in range(K):
        s_ = 0.0
        for r in range(nr):
            s_ = s_ + w.G[r * K + k]
        if s.solver == SOLVER_CDSG:
            if new:
                m.beta[target * K + k] = -step * (s_ / nr) / m.scale
            else:
                m.beta[target * K + k] -= step * (s_ / nr) / m.scale
        if s.loss == LOSS_NOVELTY:
            m.intercept[k] -= step * (s_ / nr + s.lam)
        elif s.fit_intercept:
            m.intercept[k] -= step * s_ / nr
    if new:
        m.n_blocks += 1
    if m.scale < MIN_SCALE:
        for j in range(m.n_blocks * F * K):
            m.coef[j] *= m.scale
        if m.beta != NULL:
            for j in range(m.n_blocks * K):
                m.beta[j] *= m.scale
        m.scale = 1.0
    if s.average:
        m.n_avg += 1.0
        _average(m)


cdef void _average(Model* m) noexcept nogil:
    """Running mean of the iterates f_1 .. f_t (Polyak averaging): each is a
    combination of the same blocks, so the mean is one too."""
    cdef Py_ssize_t j
    cdef double w = 1.0 / m.n_avg
    for j in range(m.n_blocks * m.F * m.K):
        m.avg_coef[j] += w * (m.scale * m.coef[j] - m.avg_coef[j])
    for j in range(m.K):
        m.avg_intercept[j] += w * (m.intercept[j] - m.avg_intercept[j])


cdef Py_ssize_t _cdsg_target(const Settings* s, const Model* m, Work* w, Counts* c,
                             double* step) noexcept nogil:
    """CDSG (Algorithm 4): the old block with the largest step of rule (9) when
    it beats gamma_t = *step (then *step is that step), else n_blocks (a new
    block); the newest block's features on the batch left in w.PHI."""
    cdef Py_ssize_t k, r, nr = w.nr, K = m.K
    cdef double s_, gamma_t = step[0]
    cdef double* blk
    for k in range(K):
        s_ = 0.0
        for r in range(nr):
            s_ = s_ + w.G[r * K + k]
        w.gbar[k] = s_ / nr
    # sigma^2 from the newest block's features on this batch
    blk = block_ptr(&w.fm, m.n_blocks - 1, w.cache, w.n_cached, w.fresh)
    features_of_rows(&w.fm, w.X, w.rows, nr, blk, m.n_blocks - 1, w.slabs, w.PHI,
                     w.n_threads)
    c.feature_evals += nr * m.F
    w.phi_block = m.n_blocks - 1
    return _cdsg_choose(m.beta, m.n_blocks, K, m.scale, w.gbar, gamma_t,
                        s.max_ratio * gamma_t, loss_bound(s.loss, s.loss_param, w.G, nr, K),
                        _batch_variance(w.PHI, nr, m.F), nr, step)


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


def fit_chunk(StepState state, X, const double[:, ::1] targets, const int64_t[::1] order,
              double[::1] cache, Py_ssize_t cache_blocks, int n_threads=1,
              RowFeatures row_features=None, Py_ssize_t whole_batch=0):
    """Run Algorithm 1 (DSG), 3 (UDSG) or 4 (CDSG) -- ``h["solver"]`` -- over
    the rows ``order`` (consecutive batches of ``h["batch_size"]``),
    continuing from ``state`` (:class:`StepState`, updated in place), whose
    ``coef`` must have room for one new block per batch.  Returns a
    :data:`ChunkResult`.

    Blocks < cache_blocks live in ``cache`` (``cache_blocks`` strides of
    (n_features + 1) * block_size).  ``targets``: (n_rows, n_outputs) with +-1
    or real targets per output, or (n_rows, 1) class indices for the softmax.
    UDSG reads ``h["new_blocks"]`` (G) and ``h["old_blocks"]`` (U); CDSG reads
    ``h["max_step_ratio"]``.  The fitted steps (``h["step_rule"]`` "fit" or
    "fit-gcv") take ``h["ridge"]`` when > 0; else the ridge is chosen by the
    next batch's loss with "fit" (``state.ridge_state`` carrying the evidence
    between calls), by GCV per batch with "fit-gcv".  ``row_features``
    (``h["precision"]`` "single" only; made for X's rows and the block size)
    keeps the rows' features between calls: a row's features of a block are
    computed once.  A batch of ``nr`` rows, fewer than ``whole_batch``
    (default and at most ``h["batch_size"]``), takes ``nr / whole_batch`` of
    a step.
    """
    cdef Rows R
    keep = as_rows(X, &R)
    cdef dict h = state.h
    cdef Settings s = _settings(h, whole_batch)
    cdef double[:, :, ::1] coef = state.coef, avg_coef = state.avg_coef
    cdef double[::1] intercept = state.intercept, avg_intercept = state.avg_intercept
    cdef double[:, ::1] beta = state.beta
    cdef double[::1] ridge_state = state.ridge_state
    cdef Model m = Model(&coef[0, 0, 0], &intercept[0], NULL, &avg_coef[0, 0, 0],
                         &avg_intercept[0], state.scale, state.n_avg, state.n_blocks,
                         coef.shape[1], coef.shape[2], state.n_iter)
    cdef Py_ssize_t F = m.F, K = m.K, B = s.batch, n_order = order.shape[0]
    cdef Work w
    w.rs = NULL
    if s.progressive:
        if ridge_state is None or ridge_state.shape[0] < _ridge_state_size(F, K):
            raise ValueError("the next-batch ridge choice needs ridge_state "
                             "(ridge_state_size(block_size, n_outputs) doubles)")
        w.rs = &ridge_state[0]
    w.targets = &targets[0, 0] if targets.shape[0] > 0 else NULL
    w.tcols = targets.shape[1]
    if s.solver == SOLVER_CDSG:
        if beta is None or beta.shape[0] < coef.shape[0] or beta.shape[1] != K:
            raise ValueError("CDSG needs beta with a row per coef block and n_outputs columns")
        m.beta = &beta[0, 0]
    fm_init(&w.fm, h["kernel"], h["gamma"], R.n_features, F, h["seed"])
    w.fm.single = h["precision"] == "single"
    w.key_old = rng_key(rng_key(<uint64_t>h["seed"], STREAM_SAMPLING), OLD_BLOCK_STREAM)
    w.X, w.n_threads = &R, n_threads
    w.stride, w.d_f = block_stride(&w.fm), R.n_features * F
    cdef Py_ssize_t n_new = (n_order + B - 1) // B
    if coef.shape[0] < m.n_blocks + n_new:
        raise ValueError("coef has no room for the new blocks")
    if cache_blocks > 0 and cache.shape[0] < cache_blocks * w.stride:
        raise ValueError("cache is smaller than cache_blocks blocks")
    w.cache, w.cache_blocks = (&cache[0] if cache_blocks > 0 else NULL), cache_blocks
    w.slabs = NULL
    if row_features is not None:
        if not w.fm.single:
            raise ValueError("row_features keeps floats: only for precision single")
        if row_features.n_rows != R.n_rows or row_features.block_size != F:
            raise ValueError("row_features was made for other rows or another block size")
        row_features.grow(m.n_blocks + n_new)
        w.slabs = &row_features.s
    _scratch(&s, &m, &w, n_order, n_new)
    cdef Counts c = Counts(0, 0, 0.0, 0.0)
    cdef int status = 0
    cdef Py_ssize_t pos = 0, target
    cdef double step
    try:
        with nogil:
            while pos < n_order:
                w.nr = B if n_order - pos >= B else n_order - pos
                w.rows = &order[pos]
                m.n_iter += 1
                status = _predict(&s, &m, &w, &c)
                if status != 0:
                    break
                _derivatives(&s, &m, &w, &c)
                step = s.theta / (s.t0 + <double>m.n_iter)
                if w.nr < s.whole:
                    # a short batch (the end of a pass, of a fractional
                    # epoch, of a partial_fit chunk or a stream window) is
                    # nr / whole of a batch: with a whole step, one row
                    # fitted closely moved the whole model (0.8 epochs of
                    # a9a end on one row: 18-22% test error, 5 seeds of 20)
                    step = step * <double>w.nr / <double>s.whole
                target = _target_block(&s, &m, &w, &c, &step)
                # the lazy decay of the old coefficients
                m.scale *= 1.0 - step * s.lam
                if s.progressive:
                    if _progressive_fit(&s, &m, &w, &c, target, step) != 0:
                        status = -1
                        break
                elif s.fitted:
                    # the ridge given, or GCV's choice on this batch
                    c.ridge_sum += fit_block(w.PHI, w.G, w.nr, F, K, s.ridge, w.work, w.fit)
                _apply_step(&s, &m, &w, target, step)
                pos += w.nr
    finally:
        free(w.scratch)
    state.scale, state.n_avg = m.scale, m.n_avg
    state.n_blocks, state.n_iter = m.n_blocks, m.n_iter
    return ChunkResult(status, c.feature_evals, c.objective, c.n_old, c.ridge_sum)


cdef int _scratch(const Settings* s, const Model* m, Work* w, Py_ssize_t n_order,
                  Py_ssize_t n_new) except -1:
    """w's scratch: regenerated blocks, then the batch's arrays."""
    cdef Py_ssize_t F = m.F, K = m.K, stride = w.stride
    w.nb = scratch_blocks(&w.fm, m.n_blocks + n_new)
    # A batch never holds more rows than the chunk has, so the scratch is
    # sized by those, not by a --batch-size larger than the data.
    cdef Py_ssize_t Bs = s.batch if s.batch <= n_order else max(n_order, 1)
    w.scratch = <double*>malloc((w.nb * stride + Bs * K * 2 + 2 * Bs * F + stride
                                 + K + 2 * F * F + 3 * F * K + F
                                 + (Bs * F if s.progressive else 0)) * sizeof(double))
    if w.scratch == NULL:
        raise MemoryError("no memory for DSG scratch")
    w.U = w.scratch + w.nb * stride
    w.G = w.U + Bs * K
    w.PHI = w.G + Bs * K
    w.fresh = w.PHI + Bs * F
    w.gbar = w.fresh + stride
    w.fit = w.gbar + K
    w.work = w.fit + F * K
    w.prev_phi = w.work + 2 * F * F + 2 * F * K + F
    w.newest = w.prev_phi + Bs * F
    return 0


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
    cdef Py_ssize_t nb = scratch_blocks(&fm, n_blocks)
    cdef double* scratch = <double*>malloc(nb * block_stride(&fm) * sizeof(double))
    cdef int status = 0
    cdef Py_ssize_t r, k
    if scratch == NULL:
        raise MemoryError("no memory for the random-feature blocks")
    try:
        if R.n_rows > 0 and n_blocks > 0:
            with nogil:
                status = evaluate(&fm, &R, NULL, R.n_rows, n_blocks, &coef[0, 0, 0], K,
                                  NULL, 0, scratch, nb, NULL, &o[0, 0], n_threads)
    finally:
        free(scratch)
    if status != 0:
        raise MemoryError("no memory for per-thread scratch")
    for r in range(R.n_rows):
        for k in range(K):
            o[r, k] += intercept[k]
    return out


# Every vector path of this module (the step loop's and prediction's sums,
# _block_sums.pxd) follows the tests' one switch (_core/_simd.pxd).
ks_simd_join(paths_mask())


def t84(double df):
    """The width of the ridge rule's one-SE test, in standard errors, with
    ``df`` degrees of freedom (``_ridge.pxd``; for the tests)."""
    return _t84(df)


def ridge_grid():
    """The ridges the fitted step chooses from (``--step-rule fit`` and
    ``fit-gcv``), smallest first."""
    return np.array([grid_ridge(i) for i in range(N_RIDGES)])


def ridge_state_size(Py_ssize_t block_size, Py_ssize_t n_outputs):
    """Doubles of :class:`StepState`'s ``ridge_state`` (the next-batch ridge choice)."""
    return _ridge_state_size(block_size, n_outputs)


def fill_cache(dict h, double[::1] cache, Py_ssize_t first, Py_ssize_t stop,
               int n_threads=1):
    """The directions of blocks first .. stop-1 into ``cache`` (one stride
    each), as the step loop writes a block's when it creates it: for a trainer
    whose cache was left out of its pickle (``DSGTrainer.__getstate__``)."""
    cdef FeatureMap fm
    fm_init(&fm, h["kernel"], h["gamma"], h["n_features"], h["block_size"], h["seed"])
    fm.single = h["precision"] == "single"
    cdef Py_ssize_t stride = block_stride(&fm)
    if first < 0 or stop * stride > cache.shape[0]:
        raise ValueError("cache is smaller than the blocks to fill")
    if stop > first:
        with nogil:
            make_blocks(&fm, first, stop - first, &cache[first * stride], n_threads)


def ridge_evidence():
    """The slice of ``ridge_state`` that holds the next-batch ridge choice's
    evidence (the batches that judged, their judged losses and products):
    sums over the judging batches, which add up (``DSGTrainer.averaged``).
    Before it, the last fitted step waiting for its judgement; after it,
    that step's candidate fits."""
    return slice(RS_JUDGED, RS_CANDIDATES)


def loss_values(int loss, const double[:, ::1] u, const double[:, ::1] targets,
                double param=0.0):
    """Per-row losses l(u_r, y_r) (summed over outputs) -- for tests and objectives."""
    cdef Py_ssize_t r, n = u.shape[0], K = u.shape[1]
    out = np.zeros(n, dtype=np.float64)
    cdef double[::1] o = out
    for r in range(n):
        o[r] = row_loss(loss, param, &u[r, 0], &targets[r, 0], K)
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
