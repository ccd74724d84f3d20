"""SBP training: ``--solver sbp`` for C-SVC / nu-SVC problems (binary sub-problems).

``kernsolve.train(y, X, "-t 2 -g 0.005 -n 0.0014 --solver sbp --seed 1")``
trains each one-vs-one sub-problem with the kernelized Stochastic Batch
Perceptron (``kernsolve.solvers.sbp._sbp``) instead of SMO.  The result is the same
kind of model -- a kernel expansion plus a bias -- so multi-class voting, model
files and prediction are SMO's.  See ``doc/sbp.md``.

Which nu
--------
SBP solves the slack-constrained problem with budget ``nu`` (total slack
``n * nu`` at margin gamma, ``||w|| <= 1``).

* ``-s 1 -n NU``: nu is NU.
* ``-s 0`` (the default) with ``-n NU`` (any value but LIBSVM's default 0.5):
  nu is NU.
* ``-s 0`` without ``-n``: nu comes from C (``-c``, default 1) by Lemma 2.1 of
  the paper, nu = L(w*) / ||w*|| for the C-SVC optimum w*, estimated by SMO on
  a subsample of at most ``C_TO_NU_SUBSAMPLE`` training points with
  C' = C * n / m (the same lambda = 1/(C n) of the regularised risk), the
  hinge loss averaged over the subsample.  With n <= C_TO_NU_SUBSAMPLE it is
  exact: the SBP then solves the same problem as C-SVC.
* ``-c`` and ``-n`` both given: an error.
"""
import math
import time
import warnings

import numpy as np

from . import SPEC
from ._sbp import solve
from ..smo._solve import solve as smo_solve
from ..._kernels import as_canonical, kernel_matrix
from ..._constants import CLASSIFICATION, NU_SVC, PRECOMPUTED
from ..._random import permutation

C_TO_NU_SUBSAMPLE = 2000      # points of the SMO run that maps C to nu
CHECKS_PER_EPOCH = 5          # held-out error evaluations per epoch
PATIENCE = 5                  # checks without improvement before stopping
DEFAULT_NU = 0.5              # LIBSVM's default -n (reads as "not given")
DEFAULT_C = 1.0

__all__ = ["check_parameters", "nu_from_c", "planned_iterations", "train_binary"]

# The SBP options (``param.solver_options()``, declared in the spec): epochs
# (float > 0), max_kernel_evals (int >= 1 or None), time_limit (seconds > 0 or
# None), validation_fraction (in (0, 0.5] or None).


def planned_iterations(param, n):
    """Iterations of a sub-problem of ``n`` points (before early stopping)."""
    opts = param.solver_options()
    frac = opts["validation_fraction"]
    n_tr = n - max(1, int(round(frac * n))) if frac is not None else n
    return max(1, int(math.ceil(opts["epochs"] * max(n_tr, 1))))


def _nu_rule(param):
    """("nu", value) when nu is given, ("C", value) when it is mapped from C."""
    if param.svm_type == NU_SVC:
        return "nu", float(param.nu)
    nu_given = float(param.nu) != DEFAULT_NU
    c_given = float(param.C) != DEFAULT_C
    if nu_given and c_given:
        raise ValueError("--solver sbp: give the slack budget -n NU or the cost -c C "
                         f"(mapped to nu), not both (got -n {param.nu:g} -c {param.C:g})")
    if nu_given:
        return "nu", float(param.nu)
    return "C", float(param.C)


def check_parameters(param):
    """Checks of ``--solver sbp`` that need no data beyond its options' declared
    ranges (``Parameters.check``): the SVM type, nu or C, no weights.  Raises
    ValueError."""
    if param.svm_type not in CLASSIFICATION:
        raise ValueError("--solver sbp trains classifiers: use -s 0 (C-SVC) or "
                         f"-s 1 (nu-SVC), got -s {param.svm_type}")
    rule, value = _nu_rule(param)
    # nu = 1 lets every point be a margin error: the problem has no content.
    if rule == "nu" and not 0 < value < 1:
        raise ValueError(f"-n: the SBP slack budget nu must be in (0, 1), got {value:g}")
    if rule == "C" and not value > 0:
        raise ValueError(f"-c: C must be > 0, got {value:g}")
    if param.weight:
        raise ValueError("--solver sbp does not support class weights (-w): the "
                         "slack-constrained problem has one budget for all points")


# --------------------------------------------------------------------------
# C -> nu (Lemma 2.1)
# --------------------------------------------------------------------------

def nu_from_c(X, kernel_args, y_pm, C, *, bias=True, seed=0, eps=1e-3,
              cache_mb=100.0, n_threads=1, subsample=C_TO_NU_SUBSAMPLE):
    """The slack budget nu matching C-SVC with cost C (paper, Lemma 2.1).

    u = the C-SVC optimum (w, b) on at most ``subsample`` training points (a
    seeded random subset when there are more, with C scaled by n / m so that
    the regularised risk lambda/2 ||w||^2 + mean hinge keeps lambda = 1/(C n));
    nu = L(u) / ||u|| with L the average hinge loss over *all* the training
    points.  Lemma 2.1 holds for any u: the SBP optimum at this nu, rescaled,
    has norm <= ||u|| and training hinge loss <= L(u).  With n <= subsample,
    u is the C-SVC optimum w* itself and the two problems are equivalent.

    Parameters
    ----------
    X : canonical data (or a precomputed kernel matrix), training rows only.
    kernel_args : (kernel_type, degree, gamma, coef0)
    y_pm : +1/-1 labels.
    C : float > 0.

    Returns
    -------
    nu : float
    info : dict (n_sub, C_sub, loss, norm, n_kernel_evals, seconds)
    """
    t0 = time.perf_counter()
    n = y_pm.shape[0]
    kernel_type, degree, gamma, coef0 = kernel_args
    if n > subsample:
        perm = permutation(n, seed, "shuffle")
        sub = np.sort(perm[:subsample]).astype(np.intp)
        if np.all(y_pm[sub] == y_pm[sub[0]]):       # one class only: take all
            sub = np.arange(n, dtype=np.intp)
    else:
        sub = np.arange(n, dtype=np.intp)
    m = sub.size
    C_sub = C * n / m
    ys = np.ascontiguousarray(y_pm[sub], dtype=np.int8)
    if kernel_type == PRECOMPUTED:
        Xs = np.ascontiguousarray(X[np.ix_(sub, sub)])
    else:
        Xs = as_canonical(X[sub])
    alpha = np.zeros(m)
    info = smo_solve(Xs, kernel_type, degree, gamma, coef0, ys, np.full(m, -1.0), alpha,
                     np.full(m, C_sub), eps=eps, bias=bias, cache_mb=cache_mb,
                     n_threads=n_threads)
    sv = np.flatnonzero(alpha > 0)
    if sv.size == 0:
        raise ValueError("cannot map C to nu: the C-SVC solution is w = 0; give -n")
    coef = alpha[sv] * ys[sv]
    rows_sv = sub[sv]
    rho = float(info["rho"]) if bias else 0.0

    def kernel(rows_a, rows_b):
        if kernel_type == PRECOMPUTED:
            return X[np.ix_(rows_a, rows_b)]
        return kernel_matrix(as_canonical(X[rows_a]), as_canonical(X[rows_b]),
                             kernel=kernel_type, gamma=gamma, degree=degree,
                             coef0=coef0, n_jobs=n_threads)

    norm = float(np.sqrt(max(coef @ (kernel(rows_sv, rows_sv) @ coef), 0.0)))
    if not norm > 0:
        raise ValueError("cannot map C to nu: the C-SVC solution has ||w|| = 0; give -n")
    # Hinge loss of u over every training point, in blocks of rows.
    step = max(1, (1 << 22) // max(rows_sv.size, 1))
    total = 0.0
    for start in range(0, n, step):
        block = np.arange(start, min(n, start + step), dtype=np.intp)
        dec = kernel(block, rows_sv) @ coef - rho
        total += float(np.maximum(0.0, 1.0 - y_pm[block] * dec).sum())
    loss = total / n
    nu = loss / norm
    if not nu > 0:
        # u separates the data with margin 1: any small budget is equivalent
        nu = 1e-6
    evals = int(info["n_kernel_evals"]) + (n + rows_sv.size) * rows_sv.size
    return nu, {"n_sub": int(m), "C_sub": float(C_sub), "loss": loss, "norm": norm,
                "n_kernel_evals": evals, "seconds": time.perf_counter() - t0}


# --------------------------------------------------------------------------
# one binary sub-problem
# --------------------------------------------------------------------------

def train_binary(ctx, rows, target, C):
    """SBP on the data rows ``rows`` with labels ``target`` (> 0 is +1).

    Returns (coef, rho, stats) like the driver's ``_train_one``: coef by
    row (y_i * alpha_i / gamma), rho = -b / gamma.
    """
    started = time.perf_counter()
    param = ctx.param
    opts = param.solver_options()
    l = rows.size if rows is not None else ctx.data.n_rows
    all_rows = np.arange(ctx.data.n_rows, dtype=np.intp) if rows is None else rows
    y_pm = np.where(np.asarray(target) > 0, 1, -1).astype(np.int8)
    C = np.asarray(C, dtype=np.float64)
    if C.size and not np.all(C == C[0]):
        raise ValueError("--solver sbp does not support class or sample weights: the "
                         "slack-constrained problem has one budget for all points")
    if np.all(y_pm == 1) or np.all(y_pm == -1):
        raise ValueError("SBP needs training points of both classes")

    # held-out rows for the validation stopping rule
    frac = opts["validation_fraction"]
    if frac is not None:
        perm = permutation(l, param.seed, "shuffle").astype(np.intp)
        n_val = max(1, int(round(frac * l)))
        held = np.sort(perm[:n_val])
        train_pos = np.sort(perm[n_val:])
        if train_pos.size == 0 or np.all(y_pm[train_pos] == y_pm[train_pos[0]]):
            raise ValueError(f"--validation-fraction {frac:g} leaves too few training "
                             f"points of one class ({l} points in this sub-problem)")
    else:
        held = np.zeros(0, dtype=np.intp)
        train_pos = np.arange(l, dtype=np.intp)
    n_tr = train_pos.size
    order = np.concatenate([train_pos, held])
    Xs = ctx.data.solver_input(all_rows[order])
    kernel_args = (int(param.kernel_type), int(param.degree), float(param.gamma),
                   float(param.coef0))

    rule, value = _nu_rule(param)
    nu_info = None
    if rule == "nu":
        nu = value
    else:
        Xtr = Xs if held.size == 0 else (
            np.ascontiguousarray(Xs[:n_tr, :n_tr]) if kernel_args[0] == 4
            else as_canonical(Xs[:n_tr]))
        nu, nu_info = nu_from_c(Xtr, kernel_args, y_pm[train_pos], value,
                                bias=bool(param.bias), seed=param.seed, eps=param.eps,
                                cache_mb=param.cache_size, n_threads=ctx.n_threads)
        ctx.info(f"SBP: nu = {nu:.6g} {SPEC.mapping_note('c', value, n=nu_info['n_sub'])}\n")

    max_iter = max(1, int(math.ceil(opts["epochs"] * n_tr)))
    check_every = max(1, n_tr // CHECKS_PER_EPOCH) if held.size else 0
    time_limit = opts["time_limit"] or 0.0
    if time_limit:
        # the budget covers this sub-problem's preparation and C -> nu SMO
        # too (at least one SBP step runs)
        time_limit = max(time_limit - (time.perf_counter() - started), 1e-9)
    out = solve(Xs, *kernel_args, y_pm[order], n_tr, nu, bias=bool(param.bias),
                max_iter=max_iter, max_kernel_evals=opts["max_kernel_evals"] or 0,
                time_limit=time_limit, check_every=check_every,
                patience=PATIENCE, seed=param.seed, cache_mb=param.cache_size,
                n_threads=ctx.n_threads, progress=ctx.progress())
    gamma = out["gamma"]
    if gamma > 0:
        scale = 1.0 / gamma
    else:
        warnings.warn(f"SBP: the averaged iterate has no positive margin (gamma = "
                      f"{gamma:.3g} after {out['n_iter']} iterations); the model is not "
                      "rescaled. Train longer or raise nu", RuntimeWarning, stacklevel=4)
        scale = 1.0
    coef = np.zeros(l)
    coef[train_pos] = y_pm[train_pos] * out["alpha"] * scale
    rho = -out["bias"] * scale if param.bias else 0.0
    c = out["c"][:n_tr]
    margins = (c + y_pm[train_pos] * out["bias"]) * scale
    loss = float(np.mean(np.maximum(0.0, 1.0 - margins)))
    n_sv = int(np.count_nonzero(coef))
    ctx.info(f"SBP: {out['n_iter']} iterations ({out['stop_reason']}), "
             f"{out['n_kernel_evals']} kernel evaluations, gamma = {gamma:.6g}\n")
    ctx.info(f"obj = {gamma:f}, rho = {rho:f}\nnSV = {n_sv}, nBSV = 0\n")

    evals = out["n_kernel_evals"] + (nu_info["n_kernel_evals"] if nu_info else 0)
    seconds = out["seconds"] + (nu_info["seconds"] if nu_info else 0.0)
    stats = {
        "solver": "sbp",
        "n_iter": int(out["n_iter"]),
        "objective": float(gamma),         # the slack-constrained margin f(w_bar)
        "rho": float(rho),
        "n_SV": n_sv,
        "n_BSV": 0,
        "n_kernel_evals": int(evals),
        "n_cache_hits": int(out["n_cache_hits"]),
        "n_cache_misses": int(out["n_cache_misses"]),
        "seconds": float(seconds),
        "status": "ok",
        "stop_reason": out["stop_reason"],
        "nu": float(nu),
        "nu_rule": "given" if rule == "nu" else "from C",
        "gamma": float(gamma),
        "norm_w": float(out["norm"] * scale),
        "hinge_loss": loss,
        "n_heldout": int(held.size),
        "trace": out["trace"],
    }
    if nu_info is not None:
        stats["c_to_nu"] = nu_info
    return coef, float(rho), stats
