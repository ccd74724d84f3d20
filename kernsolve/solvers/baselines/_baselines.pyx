"""The SBP paper's comparison solvers (section 4-5) on kernsolve's kernel engine:
kernelized Pegasos, SDCA (dual coordinate ascent without bias) and the online
Perceptron, all without a bias, all keeping the response vector
c_j = y_j <w, x_j> up to date with one cached kernel row per update -- the
same engine and counters as the SBP, so they compare in kernel evaluations.

* Pegasos (Shalev-Shwartz et al. 2011, kernelized): w_t = (1/(lambda t)) u,
  u = sum_j a_j y_j x_j; at step t draw i uniformly; if y_i <w_t, x_i> < 1,
  a_i += 1.  The model is the last iterate w_{T+1}.
* SDCA (Hsieh et al. 2008): dual of lambda/2 ||w||^2 + mean hinge, box
  0 <= alpha_i <= C = 1/(lambda n); draw i uniformly and solve for alpha_i
  exactly: alpha_i <- clip(alpha_i - (c_i - 1)/K_ii, 0, C).
* Perceptron: visit the points in a seeded random order, pass after pass; on
  a mistake (c_i <= 0) add y_i x_i.

Rows n_train .. n_total-1 are held out: their responses ride along, so the
held-out error can be traced every ``check_every`` steps without extra work.
Draw t-1 of the sampling stream picks the point of step t (Pegasos, SDCA);
the Perceptron's order is ``permutation(n_train, seed, "shuffle")``.

About once a second (the clock is read every ``POLL_EVERY`` steps, so steps
without an update stay a few nanoseconds) the loop takes the GIL to check for
Ctrl-C and to call the optional ``progress`` callback.  A response update at
least ``par_min`` long runs on one thread or on all of them, whichever the
serial/parallel chooser (kernsolve/_core/_solver.pxd) measures faster; it is
element-wise, so the result is the same bits either way.
"""
from libc.math cimport sqrt, isfinite
from libc.stdint cimport uint64_t, int64_t
from cython.parallel cimport prange

import numpy as np

from kernsolve._core._kernel cimport KernelRows, kfloat
from kernsolve._core._random cimport rng_key, rng_integer, rng_permutation, STREAM_SAMPLING, STREAM_SHUFFLE
from kernsolve._core._solver cimport (
    ST_OK, ST_NOMEM, ST_ABORT, monotonic, Tuning, tuning_dict, tuning_update,
    Poll, poll_init, poll_due, visit_python, Bandit, bandit_init, bandit_record,
    bandit_step, bandit_threads)

METHODS = {"pegasos": 0, "sdca": 1, "perceptron": 2}
# par_min: below this many responses an update runs serially (fork/join cost;
# above, the chooser measures).  poll_seconds: between two visits to Python
# (progress, Ctrl-C).  adaptive False keeps long updates parallel.
cdef Tuning TUNING = Tuning(par_min=32768, poll_seconds=1.0, adaptive=True)
# Steps between two readings of the clock (a power of two).
cdef enum:
    POLL_EVERY = 256


cdef inline void _add_row(double* c, const kfloat* row, const signed char* y,
                          double a, Py_ssize_t n, int nt) noexcept nogil:
    # c[j] += a y_j K_ij: the response update, on nt threads
    cdef Py_ssize_t j
    if nt > 1:
        for j in prange(n, schedule="static", num_threads=nt):
            c[j] += a * y[j] * row[j]
    else:
        for j in range(n):
            c[j] += a * y[j] * row[j]


def run(X, int kernel_type, int degree, double gamma, double coef0, y,
        Py_ssize_t n_train, str method, double lam, long long max_iter, *,
        long long check_every=0, seed=0, double cache_mb=100.0, int n_threads=1,
        progress=None):
    """Run one comparison solver; see the module docstring.

    ``progress``, if given, is called about once a second with a dict
    (``n_iter``, ``max_iter``, ``n_updates``, ``n_kernel_evals``, ``seconds``);
    an exception it raises (or Ctrl-C) stops the run and is raised here.

    Returns a dict: ``coef`` (signed kernel-expansion coefficients by
    training row), ``c`` (the responses y_j <w, x_j> of that model, by
    training row, from the single-precision cached kernel rows), ``n_iter``,
    ``n_updates``, ``n_kernel_evals``, ``n_cache_hits``, ``n_cache_misses``,
    ``seconds``, ``trace`` (n_iter, n_kernel_evals, seconds, held-out errors).
    """
    if progress is not None and not callable(progress):
        raise ValueError("progress must be None or a callable")
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r} (known: {', '.join(METHODS)})")
    cdef Py_ssize_t n_total = X.shape[0]
    yy = np.ascontiguousarray(y, dtype=np.int8)
    if yy.shape != (n_total,) or not np.all((yy == 1) | (yy == -1)):
        raise ValueError(f"y must hold {n_total} values, each +1 or -1")
    if not 1 <= n_train <= n_total:
        raise ValueError(f"n_train must be in [1, {n_total}]")
    if method != "perceptron" and not (lam > 0 and isfinite(lam)):
        raise ValueError(f"lambda must be a finite number > 0, got {lam}")
    if max_iter < 1 or check_every < 0:
        raise ValueError("max_iter must be >= 1 and check_every >= 0")
    cdef KernelRows kr = KernelRows(X, kernel_type, degree, gamma, coef0, cache_mb, n_threads)
    cdef int m = METHODS[method]
    cdef double[::1] c = np.zeros(n_total)
    cdef double[::1] a = np.zeros(n_train)
    cdef const signed char[::1] ys = yy
    cdef int64_t[::1] order = np.zeros(max(n_train, 1), dtype=np.int64)
    cdef uint64_t key = rng_key(<uint64_t>int(seed), STREAM_SAMPLING)
    if m == 2:
        rng_permutation(rng_key(<uint64_t>int(seed), STREAM_SHUFFLE), &order[0], n_train)
    cdef Py_ssize_t n_checks = (max_iter // check_every + 1) if check_every > 0 else 1
    cdef long long[::1] tr = np.zeros(4 * n_checks, dtype=np.int64)
    cdef double[::1] tr_sec = np.zeros(n_checks)
    cdef Py_ssize_t n_tr = 0, i, j, e
    cdef long long t, n_updates = 0
    cdef double Cbox = 1.0 / (lam * n_train) if m == 1 else 0.0
    cdef double margin, new, delta, scale, t0, t_add = 0.0
    cdef Poll clock
    poll_init(&clock, TUNING.poll_seconds)
    t0 = clock.start
    # The update loop is measured and chosen (serial / parallel) when it is at
    # least par_min long and there are threads; serial otherwise.
    cdef bint timed = n_threads > 1 and n_total >= TUNING.par_min
    cdef int add_threads = n_threads if timed else 1
    cdef Bandit adds
    bandit_init(&adds, 64)
    cdef const kfloat* row
    cdef int status = ST_OK
    error = None
    with nogil:
        t = 0
        while t < max_iter:
            t += 1
            if m == 2:
                i = <Py_ssize_t>order[(t - 1) % n_train]
            else:
                i = <Py_ssize_t>rng_integer(key, <uint64_t>(t - 1), <uint64_t>n_train)
            delta = 0.0
            if m == 0:
                # Pegasos: c holds the responses of u; w_t = u / (lambda t)
                if c[i] / (lam * <double>t) < 1.0:
                    delta = 1.0
            elif m == 1:
                if kr.diag[i] > 0.0:
                    new = a[i] - (c[i] - 1.0) / kr.diag[i]
                    if new < 0.0:
                        new = 0.0
                    elif new > Cbox:
                        new = Cbox
                    delta = new - a[i]
            elif c[i] <= 0.0:
                delta = 1.0
            if delta != 0.0:
                row = kr.get_row(i, n_total)
                if row == NULL:
                    status = ST_NOMEM
                    break
                a[i] += delta
                if timed:
                    t_add = monotonic()
                _add_row(&c[0], row, &ys[0], delta * ys[i], n_total, add_threads)
                n_updates += 1
                if timed:
                    bandit_record(&adds, monotonic() - t_add, <double>n_total)
                    if TUNING.adaptive:
                        bandit_step(&adds, n_updates)
                        add_threads = bandit_threads(&adds, n_threads)
            if check_every > 0 and t % check_every == 0 and n_tr < n_checks:
                e = 0
                for j in range(n_train, n_total):
                    if c[j] <= 0.0:
                        e += 1
                tr[4 * n_tr] = t
                tr[4 * n_tr + 1] = kr.n_kernel_evals
                tr[4 * n_tr + 2] = e
                tr_sec[n_tr] = monotonic() - t0
                n_tr += 1
            if poll_due(&clock, t, POLL_EVERY):
                with gil:
                    error = visit_python(
                        progress, {"n_iter": int(t), "max_iter": int(max_iter),
                                   "n_updates": int(n_updates),
                                   "n_kernel_evals": int(kr.n_kernel_evals),
                                   "seconds": clock.last - t0})
                    if error is not None:
                        status = ST_ABORT
                if status != ST_OK:
                    break
    if status == ST_ABORT:
        raise error
    if status == ST_NOMEM:
        raise MemoryError("the kernel engine could not allocate a row")
    coef = np.asarray(a) * yy[:n_train]
    resp = np.asarray(c)[:n_train].copy()
    if m == 0:
        coef = coef / (lam * <double>t)          # w_{T+1} = u / (lambda T)
        resp = resp / (lam * <double>t)
    return {
        "coef": coef,
        "c": resp,
        "n_iter": int(t),
        "n_updates": int(n_updates),
        "n_kernel_evals": int(kr.n_kernel_evals),
        "n_cache_hits": int(kr.n_cache_hits),
        "n_cache_misses": int(kr.n_cache_misses),
        "seconds": monotonic() - t0,
        "trace": [(int(tr[4 * q]), int(tr[4 * q + 1]), float(tr_sec[q]), int(tr[4 * q + 2]))
                  for q in range(n_tr)],
    }


def _get_tuning():
    """The parallel threshold, the polling interval and the adaptive switch (for tests)."""
    return tuning_dict(&TUNING)


def _set_tuning(par_min=None, poll_seconds=None, adaptive=None):
    """Tests: poll Python at an interval they control (0: every POLL_EVERY
    steps), or run the parallel update on small problems."""
    tuning_update(&TUNING, par_min, poll_seconds, adaptive)
