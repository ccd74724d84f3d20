"""SVM training: LIBSVM's five formulations on kernsolve's SMO core.

``kernsolve.train(y, X, "-s 0 -t 2 -c 10")`` runs :func:`svm_train`, which
follows LIBSVM 3.37's ``svm_train`` step by step, so that a model trained here
matches one trained by LIBSVM on the same data: the same label order
(``svm_group_classes``), the same one-vs-one sub-problems and data order inside
them, the same initial points, linear terms and scalings for each formulation
(``solve_c_svc`` ... ``solve_nu_svr``), the same bookkeeping of support vectors
and coefficients, and the same printed lines.  What LIBSVM lacks is added on
top: sample weights, the no-bias C-SVC, seeded probability folds, and training
statistics.

The numerical work is in ``kernsolve.solvers.smo._solve.solve``; the five
formulations that build its inputs and read its outputs are in
``formulations.py``, and :func:`_train_one` (LIBSVM's ``svm_train_one``)
chooses one.  This module is the rest of ``svm_train``: checks, class
grouping, the one-vs-one loop, the model's layout and the probability
folds.  Other solvers plug into the same
one-vs-one driver through their spec (``kernsolve.solvers._spec``): the driver
receives the spec from ``kernsolve.train`` (``kernsolve._api``) and calls its
``binary`` callable for each sub-problem and its ``check`` and
``planned_iterations``, so it names no solver and imports none.
"""
import sys
import time
import warnings

import numpy as np

from . import probability as _probability
from .libsvm_rand import GlibcRand, probability_folds
from .formulations import (solve_c_svc, solve_epsilon_svr, solve_nu_svc, solve_nu_svr,
                           solve_one_class)
from ..._constants import (C_SVC, CLASSIFICATION, EPSILON_SVR, NU_SVC, ONE_CLASS,
                           PRECOMPUTED, REGRESSION)
from ..._kernels import Canonical, as_canonical, kernel_matrix
from ..._model import Model
from ..._progress import Progress
from ..._random import permutation
from ..._sparse import is_scipy_sparse, issparse, scipy_sparse
from ..._threads import resolve_n_jobs
from ..._validation import (ONE_CLASS_INFO, check_sample_weight, check_targets, check_X,
                            group_classes, libsvm_rows, resolve_gamma,
                            warn_one_class)
N_PROB_FOLDS = 5          # LIBSVM's internal folds for probability models
_DECISION_BLOCK = 1 << 22  # kernel values per block when computing decision values

__all__ = ["svm_train", "check_parameters"]


# --------------------------------------------------------------------------
# entry point (kernsolve.train calls it for the solvers the driver runs)
# --------------------------------------------------------------------------

def svm_train(y, X, param, spec, *, sample_weight=None, n_jobs=None, _folds=None,
              _max_iter=None, _shared=None, _warm=None):
    """Train an SVM the way LIBSVM's ``svm-train`` does (``kernsolve.train``).

    Parameters
    ----------
    y, X, sample_weight, n_jobs
        As for :func:`kernsolve.train`.
    param : Parameters
        The options (a copy the driver may change), unchecked.
    spec : SolverSpec
        The solver's spec: ``spec.binary`` trains each sub-problem (None:
        LIBSVM's formulations on SMO), ``spec.check`` and
        ``spec.planned_iterations`` as documented there.
    _folds : private
        Explicit orders for the internal probability folds, instead of
        ``kernsolve._random.permutation(l, seed, "probability")``: one
        permutation of ``range(l_pair)`` per one-vs-one pair (in LIBSVM's pair
        order, rows of the pair in grouped order: class i's rows, then class
        j's), or one permutation of ``range(n)`` for SVR.  Fold ``f`` is
        ``perm[f*l//5:(f+1)*l//5]``, as in LIBSVM.  For comparisons with LIBSVM.
    _max_iter : private
        Iteration limit of the SMO core (default: LIBSVM's rule).
    _shared : private
        A ``shared_kernel.SharedKernel`` (a view on the rows of ``X``): the
        SMO solves read their kernel rows from it instead of computing them
        (the same values; cross-validation shares one between its fits).
        Only for the driver's own SMO formulations.
    _warm : private
        A ``formulations.WarmStart`` shared by successive fits on the same
        rows at growing C: each SMO solve of C-SVC, epsilon-SVR and nu-SVR starts from
        the previous fit's solution of the same sub-problem (alpha seeding).

    Returns
    -------
    model : Model
        With LIBSVM's layout (``labels``, ``support_vectors`` grouped by class,
        ``dual_coef`` = sv_coef, ``rho``, ``n_support``) and ``stats``.

    Raises
    ------
    ValueError
        For invalid parameters or data, with one message naming the problem.
    """
    t_start = time.perf_counter()
    if n_jobs is None:
        n_jobs = param.n_jobs
    n_threads = resolve_n_jobs(n_jobs)
    check_parameters(param, spec)
    if not spec.bias:
        param = param.copy(bias=False)      # a solver without bias: rho = 0

    y = check_targets(y, param.svm_type)
    data = _Data(X, y.shape[0], param)
    sw = check_sample_weight(sample_weight, y.shape[0])

    # LIBSVM: -g 0 (or no -g) means 1/num_features
    param = param.copy(gamma=resolve_gamma(param.gamma, data.n_features))
    data.param = param
    if _shared is not None:
        if spec.binary is not None or data.K is not None:
            raise ValueError("_shared: only for SMO with a kernel that is not precomputed")
        _shared.require_fit(param, y.shape[0], data.n_features)
        data.shared = _shared

    # Rows of weight 0 take no part (their bound would be 0).
    kept = np.flatnonzero(sw > 0) if sw is not None else None
    if kept is not None and kept.size < y.shape[0]:
        if kept.size == 0:
            raise ValueError("sample_weight is zero for every row: nothing to train on")
        data = data.take(kept)
        y = y[kept]
        sw = sw[kept]
        orig_index = kept
    else:
        orig_index = np.arange(y.shape[0])

    if param.svm_type == NU_SVC:
        _check_nu_feasible(param.nu, y, sw)
    if _folds is None and param.libsvm_folds and param.probability:
        # --libsvm-folds: the -b 1 folds of a fresh svm-train (glibc rand(), seed 1)
        _folds = probability_folds(y, param.svm_type, GlibcRand(1))

    ctx = _Context(param, n_threads, data, spec.planned_iterations, spec.binary)
    ctx.max_iter = _max_iter
    if _warm is not None and spec.binary is None:
        ctx.warm = _warm
        _warm.begin_fit()
    try:
        if param.svm_type in CLASSIFICATION:
            model = _train_classification(ctx, y, sw, orig_index, _folds)
        else:
            model = _train_single(ctx, y, sw, orig_index, _folds)
    finally:
        ctx.close()
    _check_finite(model)
    model.stats["wall_seconds"] = time.perf_counter() - t_start
    model.stats["n_threads"] = n_threads
    return model


# --------------------------------------------------------------------------
# parameters and data checks
# --------------------------------------------------------------------------

def check_parameters(param, spec):
    """The option checks (``Parameters.check``), the driver's own, and the
    solver's (``spec.check``): everything that needs no data.  Raises ValueError."""
    param.check()
    for label, w in param.weight.items():
        if w == 0:
            raise ValueError(f"-w{label} 0: a class weight of 0 makes C = 0 for class "
                             f"{label}; leave that class out of the data instead")
    if spec.check is not None:
        spec.check(param)
    if not param.bias and param.svm_type != C_SVC:
        raise ValueError("--bias 0 (the SVM without bias) is only available for C-SVC (-s 0)")


def _check_finite(model):
    """No model with NaN or infinite coefficients, or a NaN rho: values near the
    float64 limit overflow the kernel (x . y, |x - y|^2), and LIBSVM would go on
    with them.  (rho = inf stays: LIBSVM's one-class SVM with nu = 1, every
    alpha at its bound, writes it and predicts -1 everywhere.)"""
    if not (np.all(np.isfinite(np.asarray(model.dual_coef, dtype=np.float64)))
            and not np.any(np.isnan(np.asarray(model.rho, dtype=np.float64)))):
        raise ValueError("The dual coefficients or intercepts are not finite. The input "
                         "data may contain large values and need to be preprocessed.")


def _check_nu_feasible(nu, y, sw):
    """LIBSVM's nu-SVC feasibility test, on weighted class sizes."""
    labels, inverse = np.unique(y, return_inverse=True)
    sizes = np.bincount(inverse, weights=sw, minlength=labels.size)
    for a in range(labels.size):
        for b in range(a + 1, labels.size):
            n1, n2 = sizes[a], sizes[b]
            if nu * (n1 + n2) / 2 > min(n1, n2):
                raise ValueError(
                    f"specified nu is infeasible: nu = {nu:g} needs "
                    f"nu * (n1 + n2) / 2 <= min(n1, n2) for every pair of classes, "
                    f"but classes {labels[a]:g} and {labels[b]:g} have "
                    f"{n1:g} and {n2:g} rows; use nu < {2 * min(n1, n2) / (n1 + n2):.6g}")


# --------------------------------------------------------------------------
# training data: rows for the solver, kernel blocks for decision values
# --------------------------------------------------------------------------

class _Data:
    """The training rows in canonical form, and kernel values between them."""

    def __init__(self, X, n_rows, param):
        self.param = param
        if X is None:
            raise ValueError("X is None; expected an (n_samples, n_features) matrix")
        if param.kernel_type == PRECOMPUTED:
            self._init_precomputed(X, n_rows)
            return
        Xc = check_X(X, n_rows=n_rows)
        self.X = Xc
        self.shared = None      # a SharedKernel the solves read their rows from
        self.K = None
        self.serial = None
        self.n_features = Xc.shape[1]

    def _init_precomputed(self, X, n_rows):
        X = libsvm_rows(X, precomputed=True)
        try:
            Xd = X.toarray() if issparse(X) else np.asarray(X)
            Xd = np.ascontiguousarray(Xd, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"precomputed kernel rows must be numbers: {exc}") from None
        if Xd.ndim != 2:
            raise ValueError(f"X must be two-dimensional, got shape {Xd.shape}")
        if Xd.shape[0] != n_rows:
            raise ValueError(f"X has {Xd.shape[0]} rows but y has {n_rows} entries")
        if not np.all(np.isfinite(Xd)):
            raise ValueError("X contains non-finite values (NaN or infinity)")
        n_cols = Xd.shape[1] - 1
        serial = Xd[:, 0]
        bad = np.flatnonzero((serial != np.round(serial)) | (serial < 1) | (serial > n_cols))
        if bad.size:
            raise ValueError(
                f"precomputed kernel (-t 4): column 0 must hold the sample serial number "
                f"1..{n_cols}; row {bad[0] + 1} has {float(serial[bad[0]]):g}")
        serial = serial.astype(np.intp)
        # LIBSVM: K(x_i, x_j) = x_i[serial of x_j]
        self.K = np.ascontiguousarray(Xd[:, serial])
        self.shared = None
        self.serial = Xd[:, :1].copy()
        self.X = None
        self.n_features = n_cols

    def take(self, rows):
        """The same data restricted to ``rows`` (for dropped zero-weight rows)."""
        out = _Data.__new__(_Data)
        out.param = self.param
        out.n_features = self.n_features
        out.shared = None if self.shared is None else self.shared.view(rows)
        if self.K is not None:
            out.K = np.ascontiguousarray(self.K[np.ix_(rows, rows)])
            out.serial = self.serial[rows]
            out.X = None
        else:
            out.K = None
            out.serial = None
            out.X = as_canonical(Canonical(self.X)[rows])
        return out

    @property
    def n_rows(self):
        return self.K.shape[0] if self.K is not None else self.X.shape[0]

    def solver_input(self, rows):
        """What the SMO core takes for the sub-problem on ``rows`` (in that order)."""
        if rows is None:
            return self.K if self.K is not None else self.X
        if self.K is not None:
            return np.ascontiguousarray(self.K[np.ix_(rows, rows)])
        return as_canonical(Canonical(self.X)[rows])

    def support_vectors(self, rows):
        """Support vectors as stored in the model (precomputed: the serial column)."""
        if self.K is not None:
            return self.serial[rows]
        return _csr_rows(self.X, rows)

    def kernel(self, rows_a, rows_b, n_threads):
        if self.K is not None:
            return self.K[np.ix_(rows_a, rows_b)]
        return _kernel_block(self.X[rows_a], self.X[rows_b], self.param, n_threads)

    def decision(self, rows_q, rows_sv, coef, rho, n_threads):
        """``sum_j coef_j K(x_q, x_sv_j) - rho`` for each query row."""
        rows_q = np.asarray(rows_q, dtype=np.intp)
        out = np.empty(rows_q.size)
        if rows_sv.size == 0:
            out.fill(-rho)
            return out
        step = max(1, _DECISION_BLOCK // rows_sv.size)
        for s in range(0, rows_q.size, step):
            block = self.kernel(rows_q[s:s + step], rows_sv, n_threads)
            out[s:s + step] = block @ coef - rho
        return out


def _csr_rows(X, rows):
    """``X[rows]``; for CSR X, gathered through 32-bit row pointers when they
    fit: scipy gathers with the row pointers' integer type, and from int64
    ones (canonical X's) it writes int64 column indices, then narrows them --
    twice the gathered columns' bytes on top of the result.  (kernsolve's own
    Csr gathers with int64 positions into int32 columns: nothing to do.)"""
    if is_scipy_sparse(X) and X.nnz < 2 ** 31 and X.indptr.dtype != np.int32:
        X = scipy_sparse().csr_matrix((X.data, X.indices, X.indptr.astype(np.int32)),
                                      shape=X.shape, copy=False)
    return X[rows]


def _kernel_block(A, B, param, n_threads):
    return kernel_matrix(A, B, kernel=int(param.kernel_type), gamma=float(param.gamma),
                         degree=int(param.degree), coef0=float(param.coef0),
                         n_jobs=n_threads)


# --------------------------------------------------------------------------
# one sub-problem: its context, and LIBSVM's svm_train_one
# --------------------------------------------------------------------------

class _Context:
    """What every sub-problem needs: parameters, threads, printing, totals.

    ``planned_iterations`` and ``binary`` come from the solver's spec (None:
    SMO, whose iterations are unknown until it converges).
    """

    def __init__(self, param, n_threads, data, planned_iterations=None, binary=None):
        self.param = param
        self.planned_iterations = planned_iterations
        self.binary = binary
        self.n_threads = n_threads
        self.data = data
        self.quiet = bool(param.quiet)
        self.max_iter = None
        self.warm = None        # a WarmStart (alpha seeding), or None: solves from 0
        # the progress line on stderr (kernsolve._progress), off with -q
        self.reporter = None if self.quiet else Progress(param.solver)
        if self.reporter is not None and param.probability:
            self.reporter.estimate = False    # the probability folds are extra runs

    def info(self, text):
        # LIBSVM's info(): stdout, silenced by -q
        if not self.quiet:
            if self.reporter is not None:
                self.reporter.clear()
            sys.stdout.write(text)
            sys.stdout.flush()

    def progress(self):
        """The solvers' progress callback (rate-limited line on stderr), or None if quiet."""
        return self.reporter

    def plan(self, sizes):
        """Tell the progress line the points of every sub-problem (once)."""
        if self.reporter is not None and not self.param.probability:
            plan = None
            if self.planned_iterations is not None:
                plan = [self.planned_iterations(self.param, n) for n in sizes]
            self.reporter.plan(plan)

    def start_part(self, part, n_parts):
        """Announce sub-problem ``part`` of ``n_parts``."""
        if self.reporter is not None:
            self.reporter.start_part(part, n_parts)

    def end_part(self, stats):
        if self.reporter is not None:
            self.reporter.end_part(stats)

    def close(self):
        if self.reporter is not None:
            self.reporter.close()


def _train_one(ctx, rows, target, C, cp=None, cn=None):
    """LIBSVM's ``svm_train_one`` on the data rows ``rows`` (in that order).

    ``target`` is +-1 for classification, the regression target for SVR;
    ``C`` is each row's upper bound (class C times sample weight; for nu-SVC
    and one-class, the sample weight alone); ``cp``, ``cn`` are the pair's
    class C's (C-SVC prints nu when they agree).  Returns the signed
    coefficients, rho and the solver's statistics (objective in LIBSVM's
    scaling).
    """
    if ctx.binary is not None:     # the solver's own sub-problem trainer (its spec)
        return ctx.binary(ctx, rows, target, C)
    svm_type = ctx.param.svm_type
    if svm_type == C_SVC:
        solution = solve_c_svc(ctx, rows, target, C, cp, cn)
    elif svm_type == NU_SVC:
        solution = solve_nu_svc(ctx, rows, target, C)
    elif svm_type == ONE_CLASS:
        solution = solve_one_class(ctx, rows, target, C)
    elif svm_type == EPSILON_SVR:
        solution = solve_epsilon_svr(ctx, rows, target, C)
    else:  # NU_SVR
        solution = solve_nu_svr(ctx, rows, target, C)
    coef, rho, obj, upper, info = solution

    ctx.info(f"obj = {obj:f}, rho = {rho:f}\n")
    nz = coef != 0
    n_sv = int(np.count_nonzero(nz))
    n_bsv = int(np.count_nonzero(nz & (np.abs(coef) >= upper)))
    ctx.info(f"nSV = {n_sv}, nBSV = {n_bsv}\n")
    stats = {
        "n_iter": int(info.get("n_iter", 0)),
        "objective": float(obj),
        "rho": float(rho),
        "n_SV": n_sv,
        "n_BSV": n_bsv,
        "n_kernel_evals": int(info.get("n_kernel_evals", 0)),
        "n_cache_hits": int(info.get("n_cache_hits", 0)),
        "n_cache_misses": int(info.get("n_cache_misses", 0)),
        "seconds": float(info.get("seconds", 0.0)),
        "status": info.get("status", "ok"),
    }
    if "r" in info:
        stats["r"] = float(info["r"])
    # what the -m budget held (per sub-problem: not summed over them)
    stats.update({key: int(info[key]) for key in _MEMORY if key in info})
    # The SMO core's phase timers, when they were asked for (doc/smo.md).
    stats.update({key: float(v) for key, v in info.items() if key.startswith("time_")})
    return coef, float(rho), stats


_COUNTERS = ("n_iter", "n_kernel_evals", "n_cache_hits", "n_cache_misses", "seconds")
_MEMORY = ("cache_peak_bytes", "cache_budget_bytes", "copy_bytes", "copy_in_budget_bytes")


def _counters(part):
    """The keys summed over sub-problems: the counters and any phase timers."""
    return _COUNTERS + tuple(key for key in part if key.startswith("time_"))


def _summed(parts):
    total = {key: sum(part[key] for part in parts) for key in _counters(parts[0])}
    total["status"] = "ok" if all(p["status"] == "ok" for p in parts) else "max_iter"
    return total


class _ProbabilityWork:
    """Totals of the solver work spent on the internal probability folds."""

    def __init__(self):
        self.parts = []

    def stats(self):
        out = _summed(self.parts) if self.parts else {k: 0 for k in _COUNTERS}
        out["n_fits"] = len(self.parts)
        return out


# --------------------------------------------------------------------------
# classification: C-SVC and nu-SVC, one-vs-one
# --------------------------------------------------------------------------

def _train_classification(ctx, y, sw, orig_index, folds):
    param = ctx.param
    labels, start, count, perm = group_classes(y)
    k = labels.size
    if k == 1:
        ctx.info(ONE_CLASS_INFO)
        warn_one_class(labels[0])

    weighted_C = np.full(k, float(param.C))
    for wlabel, w in param.weight.items():
        hit = np.flatnonzero(labels == float(wlabel))
        if hit.size == 0:
            warnings.warn(f"WARNING: class label {wlabel} specified in weight is not found",
                          UserWarning, stacklevel=3)
        else:
            weighted_C[hit[0]] *= w
    # (nu-SVC ignores weighted_C below, as LIBSVM's solve_nu_svc ignores C.)

    n_pairs = k * (k - 1) // 2
    if folds is not None and param.probability and len(folds) != n_pairs:
        raise ValueError(f"_folds must hold one permutation per pair ({n_pairs}), "
                         f"got {len(folds)}")

    l = y.size
    nonzero = np.zeros(l, dtype=bool)          # by grouped position
    coefs, rhos, pair_stats = [], [], []
    prob_a = np.empty(n_pairs) if param.probability else None
    prob_b = np.empty(n_pairs) if param.probability else None
    prob_work = _ProbabilityWork()
    sw_grouped = sw[perm] if sw is not None else None

    ctx.plan([int(count[i] + count[j]) for i in range(k) for j in range(i + 1, k)])
    p = 0
    for i in range(k):
        for j in range(i + 1, k):
            ctx.start_part(p, n_pairs)
            si, sj, ci, cj = start[i], start[j], count[i], count[j]
            pos = np.concatenate([np.arange(si, si + ci), np.arange(sj, sj + cj)])
            rows = perm[pos]
            target = np.concatenate([np.ones(ci), -np.ones(cj)])
            C = np.where(target > 0, weighted_C[i], weighted_C[j])
            if param.svm_type == NU_SVC:
                C = np.ones(ci + cj)
            if sw_grouped is not None:
                C = C * sw_grouped[pos]
            if param.probability:
                fold_perm = None if folds is None else _check_perm(folds[p], ci + cj)
                prob_a[p], prob_b[p] = _binary_probability(
                    ctx, rows, target, weighted_C[i], weighted_C[j],
                    None if sw_grouped is None else sw_grouped[pos], fold_perm, prob_work)
            coef, rho, stats = _train_one(ctx, rows, target, C, weighted_C[i], weighted_C[j])
            ctx.end_part(stats)
            stats["labels"] = (int(labels[i]), int(labels[j]))
            nonzero[si:si + ci] |= coef[:ci] != 0
            nonzero[sj:sj + cj] |= coef[ci:] != 0
            coefs.append(coef)
            rhos.append(rho)
            pair_stats.append(stats)
            p += 1

    n_support = np.array([int(np.count_nonzero(nonzero[start[c]:start[c] + count[c]]))
                          for c in range(k)], dtype=np.int64)
    total_sv = int(n_support.sum())
    ctx.info(f"Total nSV = {total_sv}\n")

    sv_pos = np.flatnonzero(nonzero)
    sv_rows = perm[sv_pos]
    nz_start = np.concatenate([[0], np.cumsum(n_support)[:-1]]).astype(np.intp)
    dual_coef = np.zeros((k - 1, total_sv)) if k > 1 else np.zeros((0, 0))
    p = 0
    for i in range(k):
        for j in range(i + 1, k):
            si, sj, ci, cj = start[i], start[j], count[i], count[j]
            coef = coefs[p]
            # classifier (i, j): class i's coefficients go to row j-1,
            # class j's to row i (LIBSVM's sv_coef layout)
            sel_i = nonzero[si:si + ci]
            dual_coef[j - 1, nz_start[i]:nz_start[i] + n_support[i]] = coef[:ci][sel_i]
            sel_j = nonzero[sj:sj + cj]
            dual_coef[i, nz_start[j]:nz_start[j] + n_support[j]] = coef[ci:][sel_j]
            p += 1

    stats = _summed(pair_stats) if pair_stats else {key: 0 for key in _COUNTERS}
    if not pair_stats:
        stats["status"] = "ok"
    stats.update({
        "objective": [s["objective"] for s in pair_stats],
        "n_SV": total_sv,
        "pairs": pair_stats,
    })
    if param.probability:
        stats["probability"] = prob_work.stats()

    return Model(
        param=ctx.param,
        labels=labels.astype(np.int64),
        support_vectors=ctx.data.support_vectors(sv_rows),
        support_indices=(orig_index[sv_rows] + 1).astype(np.int64),
        n_support=n_support,
        dual_coef=dual_coef,
        rho=np.array(rhos, dtype=np.float64),
        prob_a=prob_a,
        prob_b=prob_b,
        prob_density_marks=None,
        stats=stats,
    )


def _check_perm(perm, n):
    perm = np.asarray(perm)
    if perm.shape != (n,) or not np.array_equal(np.sort(perm), np.arange(n)):
        raise ValueError(f"_folds entry must be a permutation of 0..{n - 1}")
    return perm.astype(np.intp)


def _fold_permutation(ctx, n):
    return permutation(n, ctx.param.seed, "probability").astype(np.intp)


def _binary_probability(ctx, rows, target, cp, cn, sw, perm, work):
    """LIBSVM's ``svm_binary_svc_probability``: 5-fold decision values, then Platt.

    ``perm`` orders the pair's rows; fold ``f`` is ``perm[f*l//5:(f+1)*l//5]``.
    """
    l = rows.size
    if perm is None:
        perm = _fold_permutation(ctx, l)
    dec = np.empty(l)
    for f in range(N_PROB_FOLDS):
        begin, end = f * l // N_PROB_FOLDS, (f + 1) * l // N_PROB_FOLDS
        train_pos = np.concatenate([perm[:begin], perm[end:]])
        held = perm[begin:end]
        positive = target[train_pos] > 0
        n_pos = int(np.count_nonzero(positive))
        n_neg = train_pos.size - n_pos
        if n_pos == 0 and n_neg == 0:
            dec[held] = 0.0
        elif n_neg == 0:
            dec[held] = 1.0
        elif n_pos == 0:
            dec[held] = -1.0
        else:
            # LIBSVM trains the fold with svm_train, which groups the rows by
            # class (+1 first, by the swap rule) with weights Cp, Cn.
            order = np.concatenate([train_pos[positive], train_pos[~positive]])
            t = target[order]
            if ctx.param.svm_type == NU_SVC:
                C = np.ones(order.size)
            else:
                C = np.where(t > 0, cp, cn)
            if sw is not None:
                C = C * sw[order]
            coef, rho, stats = _train_one(ctx, rows[order], t, C, cp, cn)
            work.parts.append(stats)
            sv = coef != 0
            ctx.info(f"Total nSV = {int(np.count_nonzero(sv))}\n")
            dec[held] = ctx.data.decision(rows[held], rows[order][sv], coef[sv], rho,
                                          ctx.n_threads)
    return _probability.sigmoid_train(dec, target, ctx.info)


# --------------------------------------------------------------------------
# one-class SVM and regression
# --------------------------------------------------------------------------

def _train_single(ctx, y, sw, orig_index, folds):
    param = ctx.param
    l = y.size
    if param.svm_type == ONE_CLASS:
        C = np.ones(l)
    else:
        C = np.full(l, float(param.C))
    if sw is not None:
        C = C * sw
    all_rows = np.arange(l, dtype=np.intp)
    coef, rho, stats = _train_one(ctx, None, y, C)
    sv = np.flatnonzero(coef != 0)

    prob_a = None
    marks = None
    prob_work = _ProbabilityWork()
    if param.probability and param.svm_type in REGRESSION:
        perm = None if folds is None else _check_perm(
            folds[0] if isinstance(folds, (list, tuple)) else folds, l)
        prob_a = np.array([_svr_probability(ctx, y, C, perm, prob_work)])
    elif param.probability and param.svm_type == ONE_CLASS:
        dec = ctx.data.decision(all_rows, sv, coef[sv], rho, ctx.n_threads)
        marks = _probability.one_class_density_marks(dec)
        if marks is None:
            warnings.warn(
                f"WARNING: number of positive or negative decision values "
                f"<{_probability.N_MARKS // 2}; too few to do a probability estimation.",
                UserWarning, stacklevel=3)

    out_stats = {key: stats[key] for key in _counters(stats)}
    out_stats.update({"status": stats["status"], "objective": [stats["objective"]],
                      "n_SV": int(sv.size), "pairs": [stats]})
    if param.probability and param.svm_type in REGRESSION:
        out_stats["probability"] = prob_work.stats()

    return Model(
        param=param,
        labels=np.zeros(0, dtype=np.int64),
        support_vectors=ctx.data.support_vectors(sv),
        support_indices=(orig_index[sv] + 1).astype(np.int64),
        n_support=np.zeros(0, dtype=np.int64),
        dual_coef=coef[sv].reshape(1, -1),
        rho=np.array([rho]),
        prob_a=prob_a,
        prob_b=None,
        prob_density_marks=marks,
        stats=out_stats,
    )


def _svr_probability(ctx, y, C, perm, work):
    """LIBSVM's ``svm_svr_probability``: 5-fold residuals, Laplace scale."""
    l = y.size
    if l < 2:
        raise ValueError("probability estimates (-b 1) for SVR need at least 2 "
                         "training rows for the internal cross-validation")
    nr_fold = N_PROB_FOLDS
    if nr_fold > l:
        warnings.warn(f"WARNING: # folds ({nr_fold}) > # data ({l}). Will use # folds = "
                      "# data instead (i.e., leave-one-out cross validation)",
                      UserWarning, stacklevel=4)
        nr_fold = l
    if perm is None:
        perm = _fold_permutation(ctx, l)
    pred = np.empty(l)
    for f in range(nr_fold):
        begin, end = f * l // nr_fold, (f + 1) * l // nr_fold
        train_rows = np.concatenate([perm[:begin], perm[end:]])
        held = perm[begin:end]
        coef, rho, stats = _train_one(ctx, train_rows, y[train_rows], C[train_rows])
        work.parts.append(stats)
        sv = coef != 0
        pred[held] = ctx.data.decision(held, train_rows[sv], coef[sv], rho, ctx.n_threads)
    sigma = _probability.svr_laplace_scale(y - pred)
    ctx.info("Prob. model for test data: target value = predicted value + z,\n"
             f"z: Laplace distribution e^(-|z|/sigma)/(2sigma),sigma= {sigma:g}\n")
    return sigma
