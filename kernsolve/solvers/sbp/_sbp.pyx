"""The kernelized Stochastic Batch Perceptron (SBP paper, Algorithm 1, and the
unregularised bias of section 3.6) on kernsolve's kernel engine.

Maximises the slack-constrained margin f(w) (problem 2.3 / 3.9) over ||w|| <= 1
by projected stochastic supergradient ascent.  Each iteration t = 1..T:

1. water-fill the responses c_j = y_j <w, x_j> to find the covered points
   (with a bias: the k lowest of each class);
2. draw i uniformly among them (with a bias: each class with mass 1/2) --
   draw t-1 of the "sampling" stream, so the path is a function of the seed;
3. alpha_i += eta_t, eta_t = eta_0 / sqrt(t), eta_0 = 1/sqrt(max_j K_jj);
   ||w||^2 += 2 eta_t c_i + eta_t^2 K_ii (tracked, no kernel evaluation);
   c_j += eta_t y_i y_j K_ij for every j (one kernel row, computed in parallel
   and cached by KernelRows);
4. if ||w|| > 1, scale alpha and c by 1/||w||.

The averages alpha_bar and c_bar of the iterates are kept alongside; at the end
the water level gamma (and bias b) of c_bar rescales the model to margin 1.

Held-out points (positions n_train .. n_total-1) get responses too, from the
same kernel rows, so the held-out error of the averaged iterate costs O(n) to
evaluate at any time: it drives the validation stopping rule.

Every loop over points is element-wise (the same arithmetic for each element
whatever the thread count) and the water filling is serial, so the result is
bit-identical for any number of threads.  Whether the update loop of step 3
runs on one thread or on all of them is measured (the serial/parallel chooser
of kernsolve/_core/_solver.pxd) once it is at least ``par_min`` long; shorter
ones stay serial.

Step 1 runs the window search of ``_waterwindow`` (a few streaming passes
over the responses; the quickselect search of ``_waterfill`` only when its
exactness checks fail), and the draw of step 2 takes covered point number u
in index order, so the path depends on the covered set, not on how a search
arranged it.  The search gets bounds per class (``bounds``) between which
ranks k and k + 1 of the class should lie: the ones the last fill certified
(at most k - margin values of the class below the lower, at least k + margin
up to the upper) moved by the smallest and the largest change one step can
make to a response of the class (the step's a y_j K_ij, then the
projection's scale), so they usually hold; when they do not, the fill looks
at every point.  The covered set and the path do not depend on them.
"""
from libc.math cimport sqrt, isfinite, INFINITY
from libc.stdint cimport uint64_t
from cython.parallel cimport prange

import time

import numpy as np

# Kernel codes by name (kernsolve/_constants.py owns them; _kernel.pxd mirrors it).
from kernsolve._core._kernel cimport KernelRows, kfloat, PRECOMPUTED
from kernsolve._core._random cimport rng_key, rng_integer, STREAM_SAMPLING
from kernsolve._core._solver cimport (
    ST_OK, ST_NOMEM, ST_ABORT, ST_NONFINITE, ST_EMPTY, monotonic, Tuning,
    tuning_dict, tuning_update, Poll, poll_init, poll_due_at, visit_python,
    Bandit, bandit_init, bandit_record, bandit_step, bandit_threads)
from ._waterfill cimport WF_OK
from ._waterwindow cimport (Bounds, Classes, WaterCut, classes_of, fill_window,
                           covered_point, min_finite, max_finite)
from ._waterwindow import class_lists

cdef enum:
    STOP_ITERATIONS = 0
    STOP_KERNEL_EVALS = 1
    STOP_TIME = 2
    STOP_VALIDATION = 3

STOP_NAMES = {STOP_ITERATIONS: "epochs", STOP_KERNEL_EVALS: "max_kernel_evals",
              STOP_TIME: "time_limit", STOP_VALIDATION: "validation"}

# par_min: below this many responses the update loop runs serially (fork/join
# cost; above, the chooser measures).  poll_seconds: between two visits to
# Python (progress, Ctrl-C).  adaptive False keeps long update loops parallel.
cdef Tuning TUNING = Tuning(par_min=32768, poll_seconds=1.0, adaptive=True)
# Pivot draws of the water filling use counters from 2**63 up in the sampling
# stream; the index draws use counters 0, 1, ... (draw t-1 at iteration t).
cdef uint64_t PIVOT_COUNTER0 = (<uint64_t>1) << 63
# Whether the iterations' fills get bounds (tests compare with fills without).
cdef bint BOUNDED_FILLS = True


# The smallest and largest of a kernel row: four at a time with SSE's minps /
# maxps on x86-64 (its baseline; GCC does not vectorize a min of floats
# without -ffinite-math-only).  Exact either way: no rounding.
cdef extern from *:
    """
    #include <stddef.h>
    #if defined(__x86_64__) && defined(__GNUC__)
    #include <xmmintrin.h>
    #endif
    static void sbp_float_range(const float *x, ptrdiff_t n, float *lo, float *hi)
    {
        ptrdiff_t j = 0;
        float a = x[0], b = x[0];
    #if defined(__x86_64__) && defined(__GNUC__)
        if (n >= 4) {
            __m128 mn = _mm_loadu_ps(x), mx = mn;
            float lanes[4];
            int q;
            for (j = 4; j + 4 <= n; j += 4) {
                __m128 v = _mm_loadu_ps(x + j);
                mn = _mm_min_ps(mn, v);
                mx = _mm_max_ps(mx, v);
            }
            _mm_storeu_ps(lanes, mn);
            for (q = 0; q < 4; q++)
                a = lanes[q] < a ? lanes[q] : a;
            _mm_storeu_ps(lanes, mx);
            for (q = 0; q < 4; q++)
                b = lanes[q] > b ? lanes[q] : b;
        }
    #endif
        for (; j < n; j++) {
            a = x[j] < a ? x[j] : a;
            b = x[j] > b ? x[j] : b;
        }
        *lo = a;
        *hi = b;
    }
    """
    void sbp_float_range(const float* x, Py_ssize_t n, float* lo, float* hi) nogil


cdef class _SBP:
    cdef KernelRows kr
    cdef Py_ssize_t n            # training points (positions 0..n-1)
    cdef Py_ssize_t n_total      # with the held-out points
    cdef bint bias
    cdef double volume           # n * nu
    cdef int n_threads
    # The update loop: measured and chosen (serial / parallel) when it is at
    # least par_min long and there are threads; serial otherwise.
    cdef bint timed
    cdef int loop_threads
    cdef Bandit loops
    cdef uint64_t key
    cdef uint64_t pivot_counter
    # state, by position
    cdef double[::1] c           # responses of the current iterate
    cdef double[::1] cbar        # sum over iterations of c
    cdef double[::1] alpha       # coefficients of the current iterate
    cdef double[::1] abar        # sum over iterations of alpha
    cdef const signed char[::1] y
    cdef Py_ssize_t[::1] support # positions with alpha != 0, in order of arrival
    cdef Py_ssize_t n_support
    cdef unsigned char[::1] in_support
    # water-filling scratch
    cdef double[::1] buf
    cdef Py_ssize_t[::1] ibuf
    cdef WaterCut cut            # the last water filling of the current iterate
    cdef Bounds bounds           # what the next filling may assume, by class
    cdef Py_ssize_t[::1] by_class
    cdef Classes classes         # the training points of each class (by_class)
    cdef long long n_fallback    # fillings answered by the quickselect search
    # run
    cdef long long n_iter
    cdef double r2
    cdef double eta0
    cdef public object error

    def __init__(self, KernelRows kr, y, Py_ssize_t n_train, double nu, bint bias,
                 uint64_t seed, int n_threads):
        self.kr = kr
        self.n = n_train
        self.n_total = kr.n
        self.bias = bias
        self.volume = nu * <double>n_train
        self.n_threads = n_threads
        self.timed = n_threads > 1 and self.n_total >= TUNING.par_min
        self.loop_threads = n_threads if self.timed else 1
        bandit_init(&self.loops, 64)
        self.key = rng_key(seed, STREAM_SAMPLING)
        self.pivot_counter = PIVOT_COUNTER0
        self.y = y
        self.c = np.zeros(self.n_total)
        self.cbar = np.zeros(self.n_total)
        self.alpha = np.zeros(n_train)
        self.abar = np.zeros(n_train)
        self.support = np.zeros(n_train, dtype=np.intp)
        self.in_support = np.zeros(n_train, dtype=np.uint8)
        self.n_support = 0
        self.buf = np.zeros(n_train + 4)
        self.ibuf = np.zeros(n_train + 2, dtype=np.intp)
        self.bounds.lo[0] = self.bounds.lo[1] = -INFINITY
        self.bounds.hi[0] = self.bounds.hi[1] = INFINITY
        self.by_class = class_lists(np.asarray(y)[:n_train], bias)
        self.classes = classes_of(self.by_class, np.asarray(y)[:n_train], bias)
        self.n_iter = 0
        self.r2 = 0.0
        self.n_fallback = 0
        cdef double kmax = 0.0
        cdef Py_ssize_t j
        for j in range(n_train):
            if kr.diag[j] > kmax:
                kmax = kr.diag[j]
        self.eta0 = 1.0 / sqrt(kmax) if kmax > 0.0 else 0.0

    # ------------------------------------------------------------ water
    cdef int _fill(self, const double* v, double scale, const Bounds* bounds,
                   WaterCut* cut) noexcept nogil:
        """Water-fill the training responses scale * v into *cut (bounds: what
        the search may assume, or NULL)."""
        cdef int st = fill_window(v, scale, &self.y[0], self.n, &self.classes, self.bias,
                                  self.volume, bounds, &self.buf[0], &self.ibuf[0],
                                  self.key, &self.pivot_counter, cut)
        if cut.used_fallback:
            self.n_fallback += 1
        return ST_OK if st == WF_OK else ST_EMPTY

    # ------------------------------------------------------------ step
    cdef int step(self) noexcept nogil:
        cdef long long t = self.n_iter + 1
        cdef double eta = self.eta0 / sqrt(<double>t)
        cdef Py_ssize_t i, j, u, s, n_total = self.n_total
        cdef double scale, a, cj, r, t0 = 0.0
        cdef const kfloat* row
        cdef int st = self._fill(&self.c[0], 1.0,
                                 &self.bounds if BOUNDED_FILLS else NULL, &self.cut)
        if st != ST_OK:
            return st
        u = <Py_ssize_t>rng_integer(self.key, <uint64_t>(t - 1),
                                    <uint64_t>((2 if self.bias else 1) * self.cut.k))
        i = covered_point(&self.c[0], &self.cut, u)
        if i < 0:
            return ST_EMPTY
        self.r2 = self.r2 + 2.0 * eta * self.c[i] + eta * eta * self.kr.diag[i]
        if not isfinite(self.r2):
            return ST_NONFINITE
        row = self.kr.get_row(i, n_total)
        if row == NULL:
            return ST_NOMEM
        scale = 1.0
        if self.r2 > 1.0:
            r = sqrt(self.r2)
            scale = 1.0 / r
            self.r2 = 1.0
        a = eta * self.y[i]
        cdef double* c = &self.c[0]
        cdef double* cbar = &self.cbar[0]
        cdef const signed char* y = &self.y[0]
        if self.timed:
            t0 = monotonic()
        if self.loop_threads > 1:
            for j in prange(n_total, schedule="static", num_threads=self.loop_threads):
                cj = (c[j] + a * y[j] * row[j]) * scale
                c[j] = cj
                cbar[j] += cj
        else:
            for j in range(n_total):
                cj = (c[j] + a * y[j] * row[j]) * scale
                c[j] = cj
                cbar[j] += cj
        if self.timed:
            bandit_record(&self.loops, monotonic() - t0, <double>n_total)
            if TUNING.adaptive:
                bandit_step(&self.loops, t)
                self.loop_threads = bandit_threads(&self.loops, self.n_threads)
        self._next_bounds(row, a, scale)
        if not self.in_support[i]:
            self.in_support[i] = 1
            self.support[self.n_support] = i
            self.n_support += 1
        self.alpha[i] += eta
        for s in range(self.n_support):
            j = self.support[s]
            self.alpha[j] *= scale
            self.abar[j] += self.alpha[j]
        self.n_iter = t
        return ST_OK

    cdef void _next_bounds(self, const kfloat* row, double a, double scale) noexcept nogil:
        """The bounds for the next fill: a point of class c with value x <=
        next.hi (>= next.lo) now has at most (next.hi + the largest a y_c K_ij
        of the step) * scale after it (at least (next.lo + the smallest) *
        scale), so the certified ranks stay inside."""
        cdef float k_min, k_max
        cdef double rise[2]
        cdef double fall[2]
        cdef int c
        sbp_float_range(row, self.n, &k_min, &k_max)
        rise[0] = max_finite(a * k_max, a * k_min)     # the positives' largest change
        fall[0] = min_finite(a * k_max, a * k_min)     # and smallest
        rise[1] = -fall[0]                             # the negatives'
        fall[1] = -rise[0]
        if not self.bias:
            rise[0] = max_finite(rise[0], rise[1])
            fall[0] = min_finite(fall[0], fall[1])
        for c in range(2):
            self.bounds.lo[c] = (self.cut.next.lo[c] + fall[c]) * scale
            self.bounds.hi[c] = (self.cut.next.hi[c] + rise[c]) * scale

    cdef int heldout_errors(self, Py_ssize_t* errors) noexcept nogil:
        """Held-out errors of the averaged iterate (its level and bias from c_bar)."""
        cdef Py_ssize_t j, e = 0
        cdef WaterCut avg
        cdef double inv = 1.0 / <double>self.n_iter
        cdef int st = self._fill(&self.cbar[0], inv, NULL, &avg)
        if st != ST_OK:
            return st
        for j in range(self.n, self.n_total):
            # y (<w, x> + b) <= 0 is an error (LIBSVM predicts the second label at 0)
            if self.cbar[j] * inv + self.y[j] * avg.bias <= 0.0:
                e += 1
        errors[0] = e
        return ST_OK


def solve(X, int kernel_type, int degree, double gamma, double coef0, y,
          Py_ssize_t n_train, double nu, *, bint bias=True, long long max_iter=1,
          long long max_kernel_evals=0, double time_limit=0.0,
          long long check_every=0, int patience=5, seed=0,
          double cache_mb=100.0, int n_threads=1, progress=None):
    """Run the SBP on the first ``n_train`` rows of X; the rest are held out.

    Parameters
    ----------
    X : ndarray or CSR matrix, canonical (``kernsolve._kernels.as_canonical``)
        Training rows first, then held-out rows (for a precomputed kernel,
        the (n_total x n_total) kernel matrix in that order).
    kernel_type, degree, gamma, coef0 : LIBSVM's -t, -d, -g (resolved), -r.
    y : int8 array of +1/-1, one per row of X.
    n_train : number of training rows.
    nu : float > 0, the slack budget per point (total slack n_train * nu).
    bias : bool, train with the unregularised bias (section 3.6).
    max_iter : iterations T (>= 1).
    max_kernel_evals : stop once this many kernel values were computed (0: no limit).
    time_limit : stop after this many seconds (0: no limit).
    check_every : evaluate the held-out error every this many iterations
        (0: never); needs held-out rows.
    patience : stop when that many consecutive checks did not improve on the
        best held-out error.
    seed : seed of the sampling stream.
    cache_mb, n_threads : kernel cache budget and threads.
    progress : callable or None
        Called about once a second with a dict (``n_iter``, ``max_iter``,
        ``n_kernel_evals``, ``seconds``); an exception it raises (or Ctrl-C)
        stops the run and is raised here.

    Returns
    -------
    dict with ``alpha`` (the averaged coefficients, by training row),
    ``c`` (the averaged responses, every row), ``gamma`` and ``bias`` (water
    level and bias of the averaged responses), ``norm`` (||w_bar||),
    ``n_iter``, ``n_kernel_evals``, ``n_cache_hits``, ``n_cache_misses``,
    ``seconds``, ``stop_reason``, ``trace`` (list of (n_iter, n_kernel_evals,
    seconds, held-out errors)), ``n_heldout``, ``n_support``,
    ``n_fallback_fills`` (water fillings the quickselect search answered).
    """
    if X is None or not hasattr(X, "shape") or len(X.shape) != 2:
        raise ValueError("X must be a two-dimensional array or CSR matrix")
    if progress is not None and not callable(progress):
        raise ValueError("progress must be None or a callable")
    n_total = X.shape[0]
    yy = np.ascontiguousarray(y, dtype=np.int8)
    if yy.ndim != 1 or yy.shape[0] != n_total:
        raise ValueError(f"y has shape {yy.shape}, expected ({n_total},)")
    if not np.all((yy == 1) | (yy == -1)):
        raise ValueError("y must contain only +1 and -1")
    if not 1 <= n_train <= n_total:
        raise ValueError(f"n_train must be in [1, {n_total}], got {n_train}")
    if not (nu > 0.0 and nu < INFINITY):
        raise ValueError(f"nu must be a finite number > 0, got {nu}")
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    if max_kernel_evals < 0:
        raise ValueError(f"max_kernel_evals must be >= 0, got {max_kernel_evals}")
    if not (time_limit >= 0.0):
        raise ValueError(f"time_limit must be >= 0, got {time_limit}")
    if check_every < 0 or patience < 1:
        raise ValueError("check_every must be >= 0 and patience >= 1")
    if check_every > 0 and n_train == n_total:
        raise ValueError("check_every needs held-out rows (n_train < number of rows)")
    if n_threads < 1:
        raise ValueError(f"n_threads must be >= 1, got {n_threads}")
    n_pos = int(np.count_nonzero(yy[:n_train] == 1))
    if bias and (n_pos == 0 or n_pos == n_train):
        raise ValueError("SBP with a bias needs training points of both classes")
    if kernel_type == PRECOMPUTED and X.shape[1] != n_total:
        raise ValueError(f"a precomputed kernel must be n x n, got {X.shape}")
    cdef KernelRows kr = KernelRows(X, kernel_type, degree, gamma, coef0, cache_mb,
                                    n_threads)
    cdef _SBP s = _SBP(kr, yy, n_train, nu, bias, <uint64_t>int(seed), n_threads)
    if not (s.eta0 > 0.0 and s.eta0 < INFINITY):
        raise ValueError("every training point has K(x, x) <= 0, so the SBP step "
                         "size eta_0 = 1/sqrt(max K(x, x)) is undefined")

    max_checks = (max_iter // check_every + 1) if check_every > 0 else 0
    cdef long long[::1] tr_iter = np.zeros(max(max_checks, 1), dtype=np.int64)
    cdef long long[::1] tr_evals = np.zeros(max(max_checks, 1), dtype=np.int64)
    cdef double[::1] tr_sec = np.zeros(max(max_checks, 1))
    cdef Py_ssize_t[::1] tr_err = np.zeros(max(max_checks, 1), dtype=np.intp)
    cdef Py_ssize_t n_checks = 0, errors = 0, best = -1, since_best = 0
    cdef int status = ST_OK, stop = STOP_ITERATIONS
    cdef Poll clock
    poll_init(&clock, TUNING.poll_seconds)
    cdef double t0 = clock.start, now
    cdef bint done = False
    with nogil:
        while not done:
            status = s.step()
            if status != ST_OK:
                break
            if s.n_iter >= max_iter:
                stop = STOP_ITERATIONS
                done = True
            if max_kernel_evals > 0 and kr.n_kernel_evals >= max_kernel_evals:
                stop = STOP_KERNEL_EVALS
                done = True
            now = monotonic()
            if time_limit > 0.0 and now - t0 >= time_limit:
                stop = STOP_TIME
                done = True
            if check_every > 0 and s.n_iter % check_every == 0 and not done:
                status = s.heldout_errors(&errors)
                if status != ST_OK:
                    break
                tr_iter[n_checks] = s.n_iter
                tr_evals[n_checks] = kr.n_kernel_evals
                tr_sec[n_checks] = now - t0
                tr_err[n_checks] = errors
                n_checks += 1
                if best < 0 or errors < best:
                    best = errors
                    since_best = 0
                else:
                    since_best += 1
                    if since_best >= patience:
                        stop = STOP_VALIDATION
                        done = True
            if poll_due_at(&clock, now):
                with gil:
                    s.error = visit_python(
                        progress, {"n_iter": int(s.n_iter), "max_iter": int(max_iter),
                                   "n_kernel_evals": int(kr.n_kernel_evals),
                                   "seconds": now - t0})
                    if s.error is not None:
                        status = ST_ABORT
                if status != ST_OK:
                    break
    if status == ST_ABORT:
        raise s.error
    if status == ST_NOMEM:
        raise MemoryError(f"SBP: the kernel engine could not allocate a row "
                          f"(cache_mb={cache_mb})")
    if status == ST_NONFINITE:
        raise FloatingPointError("SBP: the responses became non-finite (check the "
                                 "kernel parameters: K(x, x) must be finite)")
    if status == ST_EMPTY:
        raise ValueError("SBP: water filling found no points (one class empty)")

    cdef double inv = 1.0 / <double>s.n_iter
    alpha = np.asarray(s.abar) * inv
    c = np.asarray(s.cbar) * inv
    cdef int st
    cdef WaterCut avg
    with nogil:
        st = s._fill(&s.cbar[0], inv, NULL, &avg)
    if st != ST_OK:
        raise ValueError("SBP: water filling found no points (one class empty)")
    if not np.all(np.isfinite(c)):
        raise FloatingPointError("SBP: the averaged responses are not finite")
    # ||w_bar||^2 = sum_j alpha_j y_j <w_bar, x_j> = sum_j alpha_j c_j
    norm2 = float(np.dot(alpha, c[:n_train]))
    trace = [(int(tr_iter[q]), int(tr_evals[q]), float(tr_sec[q]), int(tr_err[q]))
             for q in range(n_checks)]
    return {
        "alpha": alpha,
        "c": c,
        "gamma": float(avg.gamma),
        "bias": float(avg.bias),
        "norm": float(np.sqrt(max(norm2, 0.0))),
        "n_iter": int(s.n_iter),
        "n_kernel_evals": int(kr.n_kernel_evals),
        "n_cache_hits": int(kr.n_cache_hits),
        "n_cache_misses": int(kr.n_cache_misses),
        "seconds": monotonic() - t0,
        "stop_reason": STOP_NAMES[stop],
        "trace": trace,
        "n_heldout": int(n_total - n_train),
        "n_support": int(s.n_support),
        "n_fallback_fills": int(s.n_fallback),
    }


def _set_bounded_fills(bint bounded):
    """Tests: whether the iterations' water fillings get bounds; returns the
    previous setting."""
    global BOUNDED_FILLS
    previous = BOUNDED_FILLS
    BOUNDED_FILLS = bounded
    return bool(previous)


def _get_tuning():
    """The parallel threshold, the polling interval and the adaptive switch (for tests)."""
    return tuning_dict(&TUNING)


def _set_tuning(par_min=None, poll_seconds=None, adaptive=None):
    """Tests: run the parallel update loop on small problems (adaptive=False
    keeps it parallel), or poll Python at an interval they control."""
    tuning_update(&TUNING, par_min, poll_seconds, adaptive)
