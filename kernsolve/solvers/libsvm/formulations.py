"""LIBSVM's five formulations on kernsolve's SMO core (``svm.cpp``'s
``solve_c_svc``, ``solve_nu_svc``, ``solve_one_class``, ``solve_epsilon_svr``,
``solve_nu_svr``).

Each one builds the SMO core's inputs for one sub-problem -- the +-1 labels,
the linear term ``p``, the initial alphas and the upper bounds -- exactly as
LIBSVM does, calls :func:`run_smo`, prints what LIBSVM's function prints, and
reads the solution back in LIBSVM's scaling (nu-SVC divides by ``r``).  The
driver's ``_train_one`` (LIBSVM's ``svm_train_one``) chooses one of them and
does the common bookkeeping.

Every formulation takes ``(ctx, rows, target, C)``: the driver's context
(parameters, data, threads, printing), the data rows of the sub-problem (None:
all rows, in order), the targets (+-1 for classification, the regression
target for SVR) and each row's upper bound (class C times sample weight; for
nu-SVC and one-class, the sample weight alone).
"""
import warnings
from typing import NamedTuple

import numpy as np

from ..._errors import IterationLimitWarning
from ..._core._kernel import KernelRows
from ..._threads import one_blas_thread
from ..smo._solve import solve as _smo_solve
from .active_set import refine

__all__ = ["Solution", "WarmStart", "run_smo", "solve_c_svc", "solve_nu_svc",
           "solve_one_class", "solve_epsilon_svr", "solve_nu_svr"]


class WarmStart:
    """Alpha seeding along C (DeCoste and Wagstaff 2000): the solutions of one
    fit's sub-problems start the same sub-problems of the next fit on the same
    rows, at another C.

    Sub-problems are matched by their order in the fit (the one-vs-one pairs,
    their probability folds): fits on the same rows with the same options but
    C make the same sequence.  A solution at bounds ``C_prev`` starts the
    solve at bounds ``C`` as ``alpha * C / C_prev``, a variable at its old
    bound exactly at its new one.  Every bound scales by the same ratio, so
    the start is in the new box and keeps the equality constraints scaled
    with C: ``y'alpha = 0`` (C-SVC, epsilon-SVR) and nu-SVR's
    ``sum alpha = sum alpha* = C nu l / 2``; the SMO core recomputes the
    gradient from it.  nu-SVC and one-class have no C in their constraints
    (LIBSVM ignores ``-c`` for them): nothing to scale, they start cold.

    The seed's gradient is carried too: every variable scales by the same
    ratio r, so ``Q seed + p = r (G - p) + p`` and LIBSVM's ``G_bar`` is
    ``r G_bar``, from the previous solve's (``gradient``), and the SMO core
    starts without a kernel row per nonzero alpha (the cost that made a seed
    slower than a cold start at small C, where most rows are support vectors
    and a cold solve takes few iterations: the seeded solves there take
    several times fewer).  Without a kept gradient (or with bounds not all scaled
    by one ratio) the core computes it.

    A C-SVC sub-problem whose previous solve was slow for its free variables
    (the large-C cells), or refined, has its seed carried on to the optimum
    by an active-set method first (:mod:`.active_set`); ``slow`` says whether
    the last ``start`` was one.  Slow: more than ``SLOW_ITERATIONS`` SMO
    iterations per variable, and its iterations times the variables (each
    iteration updates every variable's gradient) above the cube of its free
    variables (the refinement's cost grows so: a few O(free^2) steps per free
    variable; on a9a[:5000] an SMO iteration of a sub-problem of n variables
    cost about as much as n of those units, and at C = 2^7 a refinement
    would cost more than the SMO iterations it saves).
    """

    SLOW_ITERATIONS = 2

    def __init__(self, thrifty=False, same_rows=False):
        self._solutions = {}
        self._next = 0
        self.slow = False
        self.seeded = False         # the last start was a seed (not a cold start)
        self.thrifty = thrifty      # start cold after a quick solve (see keep)
        # (previous G and G_bar, ratio) of the last seed, or (its gradient, None)
        self._carried = None
        self.same_rows = same_rows  # every fit on the same rows of the same data
        self._engine = None         # the first sub-problem's kernel engine (see engine)

    def engine(self, make, rows):
        """The kernel engine of the sub-problem ``start`` was last called for:
        the previous fit's, with the rows it cached, or ``make()``'s; None
        (the solve makes its own) unless ``same_rows``.

        A grid's chain (``same_rows``: the fits of one fold along C, on the
        same rows of the same data) solves the same sub-problem at each C, and
        with a fresh row cache per fit recomputed the rows the last C had
        computed: on ijcnn1[:10000]'s default grid, whose kernel matrix does
        not fit in ``-m``, 245,000 rows of 8,000 values, most of them rows an
        earlier C of the chain had computed.  The engine is put back in the
        sub-problem's order (``KernelRows.restart``) with its cached rows, the
        same bits as computing them, so the solves are those of fresh
        engines.  Only the first sub-problem's engine is kept, and dropped when
        a fit has several (one-vs-one pairs, probability folds): a chain holds
        at most one engine's ``-m`` beside the running solve's."""
        if not self.same_rows:
            return None
        if self._next != 1:
            self._engine = None
            return None
        kept = self._engine
        if kept is None or not np.array_equal(kept[0], rows):
            self._engine = (np.array(rows, copy=True), make())
        return self._engine[1]

    def begin_fit(self):
        self._next = 0
        self._carried = None

    def start(self, C):
        """The starting alphas of the next sub-problem, whose bounds are ``C``;
        None (start cold) without a kept solution of the same size and finite
        bounds, or when the kept one's solve was quick (see :meth:`keep`)."""
        key, self._next = self._next, self._next + 1
        prev = self._solutions.get(key)
        self.slow = False
        self.seeded = False
        self._carried = None
        if prev is None or prev[1].shape != C.shape:
            return None
        alpha, C_prev, self.slow, worth, gradient = prev
        if not worth:
            return None
        if not (np.all(np.isfinite(C)) and np.all(np.isfinite(C_prev))):
            return None         # the hard margin (C = inf) has no ratio to scale by
        ratio = np.divide(C, C_prev, out=np.zeros(C.size), where=C_prev > 0)
        start = np.where((alpha >= C_prev) & (C_prev > 0), C, alpha * ratio)
        if gradient is not None and ratio.size and np.all(ratio == ratio[0]) \
                and ratio[0] > 0:
            self._carried = (gradient, float(ratio[0]))
        self.seeded = True
        return np.minimum(start, C)     # the ratio's rounding never leaves the box

    def gradient(self, p):
        """The last seed's gradient for the SMO core (``solve``'s ``gradient``:
        rows ``Q seed + p`` and ``G_bar``) from the kept solution's, or None
        (the core computes it): none kept, bounds not scaled by one ratio, or
        the seed moved since without one (:meth:`replace_gradient`)."""
        if self._carried is None:
            return None
        if self._carried[1] is None:        # given as it is (replace_gradient)
            return self._carried[0]
        (G, G_bar), r = self._carried
        return np.stack([r * (G - p) + p, r * G_bar])

    def replace_gradient(self, gradient):
        """The seed was moved (refined): its gradient is ``gradient`` (the
        refinement's, the same rows), or unknown (None: the core computes it)."""
        self._carried = None if gradient is None else (gradient, None)

    def keep(self, alpha, C, n_iter=None, gradient=None):
        """The solution of the sub-problem ``start`` was last called for, the
        SMO iterations its solve took (None: unknown, seed the next) and its
        gradient (``solve``'s ``gradient_out``, or None).

        A seed without its gradient costs the SMO core a kernel row per
        nonzero alpha (the gradient rebuilt from it): with ``thrifty`` (a grid
        search's chains), a solve that took fewer iterations than that (small
        C: most rows are support vectors, few iterations) and left no gradient
        makes the next one start cold, which is as fast.  With the gradient
        kept the next is always seeded.
        A slow solve (see the class), or a refined one (its few iterations
        are the refinement's doing), makes the next start slow (refined)."""
        free = np.count_nonzero((alpha > 0) & (alpha < C))
        slow = self.slow or (n_iter is not None and n_iter > self.SLOW_ITERATIONS * C.size
                             and n_iter * C.size > free ** 3)
        worth = slow or not self.thrifty or n_iter is None or gradient is not None \
            or n_iter > np.count_nonzero(alpha)
        self._solutions[self._next - 1] = (alpha.copy(), C.copy(), slow, worth,
                                           None if gradient is None else gradient.copy())
        self._carried = None


# A seeded solve (alpha seeding along C), and every fit of a warm grid's
# chain, shrinks after this many iterations, not LIBSVM's min(l, 1000): a
# seed is near its optimum, so most variables can leave the active set at
# once, and the small-C fits of a chain, which take a few hundred
# iterations, no longer sweep all l variables at every one (svmguide1's
# default grid: 100 to 200 iterations did best, 50 and 400 less well; three
# of its 110 cells' rates moved by one row, within the solver's tolerance;
# benchmarks/CURRENT.md#grid-s23-svmguide1 for the grid with it).  Any other
# cold solve keeps LIBSVM's schedule, so its model is LIBSVM's.
_EARLY_SHRINK = 100

# the active-set refinement's limits: steps, and free variables in its system
# (its factor is updated, not recomputed, so a step costs O(free^2): a9a's
# large-C cells have 1,300 to 1,500 free variables)
_REFINE_STEPS = 2000
_REFINE_MAX_FREE = 2000


def _start(ctx, C, cold, rows=None, y_pm=None):
    """The solve's starting alphas: the warm seed if there is one, else ``cold``.
    With ``y_pm`` (C-SVC), a seed whose sub-problem was slow to solve is carried
    to the optimum by the active-set method first (:class:`WarmStart`)."""
    seed = None if ctx.warm is None else ctx.warm.start(C)
    if seed is None:
        return cold
    if y_pm is not None and ctx.warm.slow:
        kernel = _kernel_rows(ctx, rows)
        # the seed's gradient, when carried, starts the refinement, and the
        # refinement's result's starts the SMO core (C-SVC: p = -1)
        carried = ctx.warm.gradient(np.full(seed.size, -1.0))
        gradient = None if carried is None else np.empty_like(carried)
        # small systems: OpenBLAS's threads only wait; numpy's BLAS only (no
        # scipy.linalg import for it)
        with one_blas_thread(scipy=False):
            refined = refine(seed, y_pm.astype(np.float64), C, kernel.row,
                             float(ctx.param.eps) / 2, _REFINE_STEPS, _REFINE_MAX_FREE,
                             gradient=carried, gradient_out=gradient)
        if not np.array_equal(refined, seed):   # (it gives up at once on too many free)
            ctx.warm.replace_gradient(gradient)
        seed = refined
    return seed


def _keep(ctx, alpha, C, info):
    if ctx.warm is not None:
        ctx.warm.keep(alpha, C, info.get("n_iter"), info.get("gradient"))


def _solver_input(ctx, rows):
    """``(X, gram, rows)`` of the SMO core for the sub-problem on ``rows``: the
    fit's rows read in place (no copy), or those of a matrix shared by fits."""
    shared = ctx.data.shared
    if shared is not None:      # kernel rows read from a matrix shared by several fits
        return shared.X, shared.gram, shared.solver_rows(rows)
    return ctx.data.solver_input(None), None, rows


def _chain_engine(ctx, X, gram, rows):
    """The kernel engine a grid chain's fits keep for this sub-problem
    (:meth:`WarmStart.engine`, its cached rows reused), or None (the solve
    makes its own; a shared matrix has every row already).  ``X, gram, rows``:
    :func:`_solver_input`'s."""
    if ctx.warm is None or gram is not None:
        return None
    param = ctx.param
    return ctx.warm.engine(
        lambda: KernelRows(X, int(param.kernel_type), int(param.degree), float(param.gamma),
                           float(param.coef0), float(param.cache_size), ctx.n_threads, rows),
        np.arange(X.shape[0]) if rows is None else rows)


def _kernel_rows(ctx, rows):
    """The kernel rows of the sub-problem on ``rows``, as the SMO core computes them
    (the chain's engine when it keeps one: the rows the last C computed)."""
    param = ctx.param
    X, gram, rows = _solver_input(ctx, rows)
    engine = _chain_engine(ctx, X, gram, rows)
    if engine is not None:
        engine.restart(np.arange(X.shape[0]) if rows is None else rows)
        return engine
    return KernelRows(X, int(param.kernel_type), int(param.degree), float(param.gamma),
                      float(param.coef0), 0.0, ctx.n_threads, rows, gram)


class Solution(NamedTuple):
    """What a formulation returns: LIBSVM's alpha and ``SolutionInfo``."""
    coef: np.ndarray      # signed coefficients (y_i alpha_i; SVR: alpha_i - alpha_i*)
    rho: float
    obj: float
    upper: np.ndarray     # each row's upper bound (counts the bounded SVs)
    info: dict            # the SMO core's statistics


def run_smo(ctx, rows, y_pm, p, alpha, C, *, svr=False, nu=False):
    """One call of the SMO core on the rows ``rows``; ``alpha`` is solved in place.

    Prints LIBSVM's dots and ``optimization finished`` line, and warns when
    the iteration limit was reached.  Returns the core's statistics (a dict).
    """
    param = ctx.param
    Xs, gram, rows = _solver_input(ctx, rows)
    p = np.ascontiguousarray(p, dtype=np.float64)
    # a warm start's seed comes with its gradient; the solution's is kept
    # for the next seed (WarmStart)
    start_gradient = None if ctx.warm is None else ctx.warm.gradient(p)
    end_gradient = None if ctx.warm is None else np.empty((2, alpha.size))
    engine = _chain_engine(ctx, Xs, gram, rows)
    # a seed, or any fit of a grid's chain (its first one too: its CV rate is
    # the warm grid's, within the solver's tolerance, not a LIBSVM model)
    early = ctx.warm is not None and (ctx.warm.seeded or ctx.warm.same_rows)
    info = _smo_solve(Xs, int(param.kernel_type), int(param.degree), float(param.gamma),
                      float(param.coef0), np.ascontiguousarray(y_pm, dtype=np.int8),
                      p, alpha, np.ascontiguousarray(C, dtype=np.float64),
                      svr=svr, eps=float(param.eps), shrinking=bool(param.shrinking), nu=nu,
                      bias=bool(param.bias), cache_mb=float(param.cache_size),
                      n_threads=ctx.n_threads, max_iter=ctx.max_iter,
                      progress=ctx.progress(), rows=rows, gram=gram,
                      gradient=start_gradient, gradient_out=end_gradient, engine=engine,
                      first_shrink=_EARLY_SHRINK if early else 1000)
    info = dict(info)
    if end_gradient is not None:
        info["gradient"] = end_gradient
    n_iter = int(info.get("n_iter", 0))
    # LIBSVM prints a dot every min(l, 1000) iterations, then the summary.
    ctx.info("." * (n_iter // max(1, min(alpha.size, 1000)))
             + f"\noptimization finished, #iter = {n_iter}\n")
    if info.get("status", "ok") != "ok":
        # stacklevel: run_smo, the formulation, _train_one, its caller, then
        # the caller's caller (the driver's entry for a user's call)
        warnings.warn(f"WARNING: reaching max number of iterations ({n_iter}); "
                      "the solution may not be optimal", IterationLimitWarning, stacklevel=5)
    return info


def _n_rows(ctx, rows):
    return rows.size if rows is not None else ctx.data.n_rows


def _uniform(C):
    """True when every row has the same bound (no sample weights): LIBSVM's case."""
    return bool(np.all(C == C[0])) if C.size else True


def solve_c_svc(ctx, rows, target, C, cp=None, cn=None):
    """C-SVC: ``p = -1``, alpha from 0 (or the warm seed); prints nu when the two
    class C's agree."""
    param = ctx.param
    l = _n_rows(ctx, rows)
    y_pm = np.where(target > 0, 1, -1).astype(np.int8)
    alpha = _start(ctx, C, np.zeros(l), rows, y_pm)
    info = run_smo(ctx, rows, y_pm, np.full(l, -1.0), alpha, C)
    _keep(ctx, alpha, C, info)
    if cp is not None and cp == cn:
        ctx.info(f"nu = {alpha.sum() / C.sum():f}\n")
    coef = alpha * y_pm
    rho, obj = info["rho"], info["obj"]
    if not param.bias:
        rho = 0.0
    return Solution(coef, rho, obj, C, info)


def solve_nu_svc(ctx, rows, target, C):
    """nu-SVC: alphas filled up to nu*l/2 per class, then rescaled by 1/r."""
    param = ctx.param
    l = _n_rows(ctx, rows)
    y_pm = np.where(target > 0, 1, -1).astype(np.int8)
    alpha = np.empty(l)
    sum_pos = sum_neg = param.nu * (l if _uniform(C) and C[0] == 1 else C.sum()) / 2
    for i in range(l):
        if y_pm[i] == 1:
            alpha[i] = min(C[i], sum_pos)
            sum_pos -= alpha[i]
        else:
            alpha[i] = min(C[i], sum_neg)
            sum_neg -= alpha[i]
    info = run_smo(ctx, rows, y_pm, np.zeros(l), alpha, C, nu=True)
    r = info["r"]
    if r == 0 or not np.isfinite(r):
        # LIBSVM goes on with C = 1/r = inf or 0 and rho = nan; refuse instead.
        # (r < 0 does happen with a non-PSD sigmoid kernel; LIBSVM keeps it.)
        raise ValueError(
            f"nu-SVC is degenerate on this data: the solver found r = {float(r)!r}, "
            "where LIBSVM reports C = 1/r and returns a model with rho = NaN "
            "(nu at its feasibility limit, or identical rows with different "
            "labels); try a smaller nu")
    ctx.info(f"C = {1 / r:f}\n")
    coef = alpha * (y_pm / r)     # LIBSVM's alpha[i] *= y[i]/r: y/r rounded first
    rho, obj = info["rho"] / r, info["obj"] / (r * r)
    return Solution(coef, rho, obj, C / r, info)


def solve_one_class(ctx, rows, target, C):
    """One-class SVM: the first nu*l alphas at their bound, ``p = 0``."""
    param = ctx.param
    l = _n_rows(ctx, rows)
    alpha = np.zeros(l)
    if _uniform(C) and C[0] == 1:
        n = int(param.nu * l)            # alphas at the upper bound
        alpha[:n] = 1.0
        if n < l:
            alpha[n] = param.nu * l - n
    else:
        rest = param.nu * C.sum()
        for i in range(l):
            alpha[i] = min(C[i], rest)
            rest -= alpha[i]
    info = run_smo(ctx, rows, np.ones(l, dtype=np.int8), np.zeros(l), alpha, C)
    return Solution(alpha, info["rho"], info["obj"], C, info)


def solve_epsilon_svr(ctx, rows, target, C):
    """epsilon-SVR: 2l variables, ``p = epsilon -+ y``, alpha from 0 (or the warm seed)."""
    param = ctx.param
    l = _n_rows(ctx, rows)
    C2 = np.concatenate([C, C])
    alpha2 = _start(ctx, C2, np.zeros(2 * l))
    p = np.concatenate([param.p - target, param.p + target])
    y_pm = np.concatenate([np.ones(l, np.int8), -np.ones(l, np.int8)])
    info = run_smo(ctx, rows, y_pm, p, alpha2, C2, svr=True)
    _keep(ctx, alpha2, C2, info)
    coef = alpha2[:l] - alpha2[l:]
    ctx.info(f"nu = {np.abs(coef).sum() / C.sum():f}\n")
    return Solution(coef, info["rho"], info["obj"], C, info)


def solve_nu_svr(ctx, rows, target, C):
    """nu-SVR: 2l variables filled up to C*nu*l/2, ``p = -+ y``; prints epsilon."""
    param = ctx.param
    l = _n_rows(ctx, rows)
    C2 = np.concatenate([C, C])
    alpha2 = _start(ctx, C2, _nu_svr_start(param, C))
    p = np.concatenate([-target, target])
    y_pm = np.concatenate([np.ones(l, np.int8), -np.ones(l, np.int8)])
    info = run_smo(ctx, rows, y_pm, p, alpha2, C2, svr=True, nu=True)
    _keep(ctx, alpha2, C2, info)
    ctx.info(f"epsilon = {-info['r']:f}\n")
    coef = alpha2[:l] - alpha2[l:]
    return Solution(coef, info["rho"], info["obj"], C, info)


def _nu_svr_start(param, C):
    """LIBSVM's nu-SVR start: alpha = alpha* filled in row order up to C nu l / 2."""
    l = C.size
    alpha2 = np.empty(2 * l)
    if _uniform(C):
        total = C[0] * param.nu * l / 2
    else:
        total = param.nu * C.sum() / 2
    for i in range(l):
        alpha2[i] = alpha2[i + l] = min(total, C[i])
        total -= alpha2[i]
    return alpha2
