"""solve(): the Python front of the SMO solver (``_smo.pyx``).

Checks the arguments (shapes, signs, bounds, a feasible start), builds the
kernel rows, runs the solver with the GIL released, writes the solution back
into ``alpha`` and returns the result dict.  The solver itself, ``_SMO``, is
declared in ``_smo.pxd``; nothing here runs per iteration.
"""
import time

import numpy as np

# Kernel codes by name (kernsolve/_constants.py owns them; _kernel.pxd mirrors it).
from kernsolve._core._kernel cimport KernelRows, N_KERNELS, PRECOMPUTED
from kernsolve._core._solver cimport ST_OK, ST_MAX_ITER, ST_NOMEM, ST_ABORT
from kernsolve._core._simd cimport ks_simd_join, paths_mask
from ._smo cimport _SMO, T_ROWS, T_SELECT, T_GRADIENT, T_SHRINK, T_SYNC
from ._smo import check_team_setting

# Every vector path of this module follows the tests' one switch (_simd.pxd).
ks_simd_join(paths_mask())

# The phase timers' result keys (doc/smo.md, "Where the time goes").
TIMER_KEYS = {"time_kernel_rows": T_ROWS, "time_select": T_SELECT,
              "time_gradient": T_GRADIENT, "time_shrink": T_SHRINK, "time_sync": T_SYNC}


def _as_vector(name, a, dtype, m=None):
    a = np.asarray(a)
    if a.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {a.shape}")
    if m is not None and a.shape[0] != m:
        raise ValueError(f"{name} has length {a.shape[0]}, expected {m}")
    return np.ascontiguousarray(a, dtype=dtype)


def _as_gradient(name, a, m):
    """``a`` as the (2, m) float64 rows of a gradient (solve's ``gradient``)."""
    if not isinstance(a, np.ndarray) or a.dtype != np.float64 or a.shape != (2, m) \
            or not a.flags.c_contiguous:
        raise ValueError(f"{name} must be a C-contiguous float64 ndarray of shape "
                         f"(2, {m})")
    if name == "gradient_out" and not a.flags.writeable:
        raise ValueError("gradient_out must be writable")
    if name == "gradient" and not np.all(np.isfinite(a)):
        raise ValueError("gradient contains non-finite values")
    return a


def solve(X, int kernel_type, int degree, double gamma, double coef0, y, p, alpha, C,
          *, bint svr=False, double eps=1e-3, bint shrinking=True, bint nu=False,
          bint bias=True, double cache_mb=100.0, int n_threads=1, max_iter=None,
          progress=None, timers=None, rows=None, gram=None, gradient=None,
          gradient_out=None, KernelRows engine=None, Py_ssize_t first_shrink=1000):
    """Solve LIBSVM's dual problem with SMO.

    Minimises ``0.5 a'Qa + p'a`` subject to ``y'a = Delta`` (the initial
    ``y'alpha``) and ``0 <= a_i <= C_i``, where ``Q_ij = y_i y_j K(x_row(i),
    x_row(j))``.

    Parameters
    ----------
    X : ndarray or scipy.sparse.csr_matrix
        Canonical training data (``kernsolve._kernels.as_canonical``); for
        ``kernel_type == 4`` the dense n x n kernel matrix itself.  With
        ``rows``, the data the sub-problem's rows are taken from.
    kernel_type, degree, gamma, coef0
        LIBSVM's ``-t``, ``-d``, ``-g`` (resolved) and ``-r``.
    y : ndarray of int8, shape (m,)
        +1 / -1 for each variable.
    p : ndarray of float64, shape (m,)
        The linear term.
    alpha : ndarray of float64, shape (m,)
        A feasible starting point; overwritten in place with the solution
        (also when the solve is interrupted).
    C : ndarray of float64, shape (m,)
        Upper bound of each variable (LIBSVM's ``get_C(i)``); +inf is the hard
        margin (no upper bound: the variable is never at its bound).
    svr : bool
        False: m = n and row(i) = i.  True: m = 2n and row(i) = i mod n
        (LIBSVM's SVR_Q).
    eps : float
        Stopping tolerance on the maximal violating pair (LIBSVM's ``-e``).
    shrinking : bool
        LIBSVM's ``-h``.
    nu : bool
        Use Solver_NU (two equality constraints); fills ``r``.
    bias : bool
        False solves without the equality constraint (one-variable updates,
        stopping when every projected gradient is below eps; rho = 0).
    cache_mb : float
        Kernel cache budget in MB (LIBSVM's ``-m``): the cached rows and the
        kernel engine's position-ordered copy of sparse rows, if it makes one.
    n_threads : int
        Threads for kernel rows, gradient updates and selection; the result
        is bit-identical for any value.
    max_iter : int or None
        None uses LIBSVM's ``max(10_000_000, 100 * m)``.
    progress : callable or None
        Called with a dict (n_iter, gap, active_size, n_kernel_evals, seconds) about
        every 2 s; an exception it raises (or Ctrl-C) stops the solve.
    rows : array of int or None
        The sub-problem's rows of X, in its order (read in place, not copied
        out); None: all of X.  n below is their number.
    gram : float32 ndarray or None
        ``kernsolve._core._kernel.kernel_gram`` of X with this kernel: the
        kernel rows are read from it (the same values) instead of computed,
        and the cache keeps its minimum; ``rows`` index its rows too.
    gradient : float64 ndarray of shape (2, m), optional
        The start's gradient, trusted: row 0 ``Q alpha + p``, row 1 LIBSVM's
        ``G_bar`` (``sum C_i Q_i`` over the variables at their upper bound).
        Without it the solve computes them from ``alpha``, a kernel row per
        nonzero alpha; a warm start along C carries them from the previous
        solve instead (every alpha scaled by C's ratio r: ``r (G - p) + p``
        and ``r G_bar``).
    gradient_out : writable C-contiguous float64 ndarray of shape (2, m), optional
        Receives the solution's gradient (the rows of ``gradient``).
    engine : KernelRows or None
        A kernel engine over the same X, kernel, ``cache_mb`` and rows (in any
        order) from an earlier solve: put back in ``rows``' order
        (``KernelRows.restart``) and used with the rows it has cached, so a
        row the earlier solve computed is a cache hit (a warm grid's chain
        along C).  None: a new engine.
    first_shrink : int
        Iterations before the first shrinking (then every ``min(m, 1000)``, as
        LIBSVM's).  LIBSVM waits ``min(m, 1000)``; a warm start along C, whose
        seed is near its optimum, gains by shrinking sooner (its first
        iterations then sweep the active set, not all m variables).
    timers : bool or None
        True adds the phase timers' seconds to the result (``time_kernel_rows``,
        ``time_select``, ``time_gradient``, ``time_shrink``, ``time_sync``);
        None follows ``_smo._set_tuning(timers=...)`` (off by default).  The
        solution does not depend on it.

    Returns
    -------
    dict
        rho, obj, r, n_iter, n_kernel_evals, n_cache_hits, n_cache_misses,
        seconds, status ("ok" or "max_iter"), gap; cache_peak_bytes (the most
        bytes of cached rows held at once), cache_budget_bytes (the rows'
        budget), copy_bytes (the position-ordered copy's bytes) and
        copy_in_budget_bytes (their part taken from cache_mb: up to a
        quarter of it); with timers, the time_* keys.
    """
    check_team_setting()
    if not isinstance(alpha, np.ndarray) or alpha.dtype != np.float64 \
            or alpha.ndim != 1 or not alpha.flags.c_contiguous \
            or not alpha.flags.writeable:
        raise ValueError("alpha must be a writable one-dimensional C-contiguous "
                         "float64 ndarray (it receives the solution in place)")
    m = alpha.shape[0]
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != m:
        raise ValueError(f"y has shape {y.shape}, expected ({m},)")
    if not np.all((y == 1) | (y == -1)):
        raise ValueError("y must contain only +1 and -1")
    y = np.ascontiguousarray(y, dtype=np.int8)
    p = _as_vector("p", p, np.float64, m)
    C = _as_vector("C", C, np.float64, m)
    if not np.all(np.isfinite(p)):
        raise ValueError("p contains non-finite values")
    if not np.all(C > 0) or np.any(np.isnan(C)):
        raise ValueError("every C_i must be > 0 (+inf: no upper bound)")
    if not np.all(np.isfinite(alpha)) or np.any(alpha < 0) or np.any(alpha > C):
        raise ValueError("alpha must be a feasible start: 0 <= alpha_i <= C_i")
    if not (eps > 0):
        raise ValueError(f"eps must be > 0, got {eps}")
    if not (cache_mb > 0):
        raise ValueError(f"cache_mb must be > 0, got {cache_mb}")
    if n_threads < 1:
        raise ValueError(f"n_threads must be >= 1, got {n_threads}")
    if nu and not bias:
        raise ValueError("bias=False is only available with nu=False")
    if not 0 <= kernel_type < N_KERNELS:
        raise ValueError(f"unknown kernel_type {kernel_type} (expected 0..{N_KERNELS - 1})")
    if progress is not None and not callable(progress):
        raise ValueError("progress must be None or a callable")
    if max_iter is None:
        max_iter = max(10_000_000, min(100 * m, 2**31 - 1))
    else:
        if isinstance(max_iter, bool) or not hasattr(max_iter, "__index__") \
                or max_iter.__index__() < 1:
            raise ValueError(f"max_iter must be a positive integer or None, got {max_iter!r}")
        max_iter = max_iter.__index__()
    if not hasattr(X, "shape") or len(X.shape) != 2:
        raise ValueError("X must be a two-dimensional array or CSR matrix")
    n = X.shape[0]
    if kernel_type == PRECOMPUTED and X.shape[1] != n:
        raise ValueError(f"a precomputed kernel must be n x n, got {X.shape}")
    if rows is not None:
        rows = np.asarray(rows)
        if rows.ndim != 1 or not (rows.dtype.kind in "iu" or rows.size == 0):
            raise ValueError("rows must be a one-dimensional array of row numbers")
        n = rows.shape[0]
    if n == 0:
        raise ValueError("X has no rows")
    expected = 2 * n if svr else n
    if m != expected:
        raise ValueError(f"{m} variables for {n} rows: expected {expected} "
                         f"({'2n for svr' if svr else 'n'})")

    cdef const double[:, ::1] start_gradient
    cdef double[:, ::1] end_gradient
    cdef bint give_gradient = gradient_out is not None
    if gradient is not None:
        start_gradient = _as_gradient("gradient", gradient, m)
    if gradient_out is not None:
        end_gradient = _as_gradient("gradient_out", gradient_out, m)

    cdef KernelRows kr
    if engine is None:
        kr = KernelRows(X, kernel_type, degree, gamma, coef0, cache_mb, n_threads, rows, gram)
    else:       # the caller's engine over the same rows and kernel, its cache kept
        if engine.n != n:
            raise ValueError(f"engine: {engine.n} rows, the problem {n}")
        engine.restart(np.arange(n, dtype=np.intp) if rows is None else rows)
        kr = engine
    cdef _SMO s = _SMO()
    s.setup(kr, y, p, alpha, C, svr, nu, bias, shrinking, eps, n_threads, max_iter)
    if first_shrink < 1:
        raise ValueError(f"first_shrink must be >= 1, got {first_shrink}")
    s.first_shrink = first_shrink
    if gradient is not None:
        s.G_start = &start_gradient[0, 0]
    s.progress = progress
    if timers is not None:
        s.timed = bool(timers)
    cdef double[::1] out = alpha
    cdef int status
    t0 = time.perf_counter()
    with nogil:
        status = s.run()
        s.put_back(out)
        if give_gradient and (status == ST_OK or status == ST_MAX_ITER):
            s.put_back_gradient(end_gradient)
    seconds = time.perf_counter() - t0
    if status == ST_NOMEM:
        raise MemoryError("SMO: the kernel engine could not allocate a row "
                          f"(cache_mb={cache_mb})")
    if status == ST_ABORT:
        raise s.error
    result = {
        "rho": s.rho,
        "obj": s.obj,
        "r": s.r,
        "n_iter": int(s.n_iter),
        "n_kernel_evals": int(kr.n_kernel_evals),
        "n_cache_hits": int(kr.n_cache_hits),
        "n_cache_misses": int(kr.n_cache_misses),
        "seconds": seconds,
        "status": "max_iter" if status == ST_MAX_ITER else "ok",
        "gap": s.gap,
        # what the -m budget held (doc/smo.md, "Memory")
        "cache_peak_bytes": int(kr.peak_cached_bytes),
        "cache_budget_bytes": int(kr.budget_bytes),
        "copy_bytes": int(kr.copy_bytes),
        "copy_in_budget_bytes": int(kr.copy_in_budget_bytes),
    }
    if s.timed:
        for key, slot in TIMER_KEYS.items():
            result[key] = s.timers[slot]
    return result
