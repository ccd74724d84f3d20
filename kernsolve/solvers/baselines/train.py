"""The SBP paper's comparison solvers as training solvers: ``--solver pegasos|sdca|perceptron``.

``kernsolve.train(y, X, "-c 1 -g 0.05 --solver sdca --epochs 10 --seed 1")``
trains each one-vs-one sub-problem of a C-SVC (``-s 0``) with kernelized
Pegasos, SDCA or the online Perceptron (``kernsolve.solvers.baselines._baselines``)
instead of SMO.  None of the three has a bias, so every sub-problem's rho is
0; the model is otherwise an ordinary C-SVC model (support vectors = rows
with a non-zero coefficient), so prediction, model files and LIBSVM's own
tools treat it like any other.  See ``doc/baselines.md``.

Which problem
-------------
Pegasos and SDCA minimise ``lambda/2 ||w||^2 + (1/n) sum_i hinge(y_i <w, x_i>)``
over the ``n`` points of the sub-problem, with ``lambda = 1/(C n)``: the
C-SVC without bias, ``1/2 ||w||^2 + C sum_i hinge``, divided by ``C n``.  The
Perceptron minimises nothing in particular; ``-c`` does not affect it.

How long
--------
``--iterations N`` steps per sub-problem, or ``--epochs E`` (steps =
``ceil(E n)``); not both.  Default: the spec's ``--epochs`` (10).  A step draws
one point (Pegasos, SDCA: uniformly, from the seeded sampling stream; the
Perceptron: the next point of a seeded random order); a step that changes
the point's coefficient costs one kernel row.
"""
import math

import numpy as np

from . import SPEC
from ._baselines import run
from ..._constants import C_SVC
from ..._params import option_key

BASELINES = SPEC.names          # ("pegasos", "sdca", "perceptron")
_NAMES = {"pegasos": "Pegasos", "sdca": "SDCA", "perceptron": "Perceptron"}

__all__ = ["BASELINES", "check_parameters", "planned_iterations", "train_binary"]


def planned_iterations(param, n):
    """Steps of a sub-problem of ``n`` points: ``--iterations`` (int >= 1) if
    given, else ``ceil(epochs * n)`` (``--epochs``, float > 0)."""
    opts = param.solver_options()
    if opts["iterations"] is not None:
        return opts["iterations"]
    return max(1, int(math.ceil(opts["epochs"] * n)))


def check_parameters(param):
    """Checks of ``--solver pegasos|sdca|perceptron`` that need no data beyond
    their options' declared ranges (``Parameters.check``); raises ValueError."""
    name = param.solver
    if param.svm_type != C_SVC:
        raise ValueError(f"--solver {name} trains C-SVC (-s 0) only, got -s {param.svm_type}")
    if param.weight:
        raise ValueError(f"--solver {name} does not support class weights (-w): its "
                         "regularised risk has one lambda = 1/(C n) for all points")
    if not param.C > 0:
        raise ValueError(f"-c: C must be > 0, got {param.C:g}")
    # the one rule between the two options (each one's range is declared)
    if {"iterations", "epochs"} <= {option_key(k) for k in param.extra}:
        raise ValueError(f"--solver {name}: give --iterations or --epochs, not both")


def train_binary(ctx, rows, target, C):
    """One binary sub-problem: the data rows ``rows``, labels ``target`` (> 0 is +1).

    Returns (coef, rho, stats) like the driver's ``_train_one``: coef by row
    (the signed kernel-expansion coefficients), rho = 0.
    """
    param = ctx.param
    name = param.solver
    l = rows.size if rows is not None else ctx.data.n_rows
    all_rows = np.arange(ctx.data.n_rows, dtype=np.intp) if rows is None else rows
    y_pm = np.where(np.asarray(target) > 0, 1, -1).astype(np.int8)
    C = np.asarray(C, dtype=np.float64)
    if C.size and not np.all(C == C[0]):
        raise ValueError(f"--solver {name} does not support class or sample weights: "
                         "its regularised risk has one lambda = 1/(C n) for all points")
    Cval = float(C[0]) if C.size else float(param.C)
    lam = 1.0 / (Cval * l)
    max_iter = planned_iterations(param, l)
    Xs = ctx.data.solver_input(all_rows)
    out = run(Xs, int(param.kernel_type), int(param.degree), float(param.gamma),
              float(param.coef0), y_pm, l, name, lam, max_iter, seed=param.seed,
              cache_mb=float(param.cache_size), n_threads=ctx.n_threads,
              progress=ctx.progress())
    coef = np.asarray(out["coef"], dtype=np.float64)
    # The responses y_i <w, x_i> come with the run: ||w||^2 = sum_i coef_i y_i r_i.
    resp = np.asarray(out["c"], dtype=np.float64)
    norm2 = max(float(np.dot(coef * y_pm, resp)), 0.0)
    hinge = np.maximum(0.0, 1.0 - resp)
    primal = 0.5 * norm2 + Cval * float(hinge.sum())      # LIBSVM's C-SVC scaling
    n_sv = int(np.count_nonzero(coef))
    n_bsv = int(np.count_nonzero(np.abs(coef) >= Cval)) if name == "sdca" else 0
    ctx.info(f"{_NAMES[name]}: {out['n_iter']} iterations, {out['n_updates']} updates, "
             f"{out['n_kernel_evals']} kernel evaluations, lambda = {lam:.6g}"
             + (f" {SPEC.mapping_note('c', Cval, n=l)}" if "c" in SPEC.mapped(name) else "")
             + "\n")
    ctx.info(f"obj = {primal:f}, rho = {0.0:f}\nnSV = {n_sv}, nBSV = {n_bsv}\n")
    stats = {
        "solver": name,
        "n_iter": int(out["n_iter"]),
        "n_updates": int(out["n_updates"]),
        "objective": primal,          # 1/2 ||w||^2 + C sum hinge, the C-SVC primal
        "rho": 0.0,
        "n_SV": n_sv,
        "n_BSV": n_bsv,
        "n_kernel_evals": int(out["n_kernel_evals"]),
        "n_cache_hits": int(out["n_cache_hits"]),
        "n_cache_misses": int(out["n_cache_misses"]),
        "seconds": float(out["seconds"]),
        "status": "ok",
        "lambda": lam,
        "norm_w": math.sqrt(norm2),
        "hinge_loss": float(hinge.mean()),
        "training_errors": int(np.count_nonzero(resp <= 0)),
    }
    return coef, 0.0, stats
