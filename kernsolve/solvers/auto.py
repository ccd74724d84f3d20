"""``--solver auto``: the solver for the data at hand, at the measured crossovers.

The one owner of the rule.  ``kernsolve.train`` (and so ``kernsolve-train``
and ``kernsolve.svmutil``) calls :func:`resolve` when the options say
``--solver auto``; the SVM estimators call :func:`choose` with the solvers
they can run.  The rule reads the problem (:class:`Problem`: rows, columns,
stored values, the memory at hand) and the options, never the clock, so the
same data and options on the same machine give the same choice:

1. **SMO** for what only it trains or where no crossover was measured: the
   nu types and one-class (``-s 1, 2, 4``), ``-b 1``, class or sample
   weights, ``--bias 0``, the hard margin, a precomputed or sigmoid kernel;
   and for up to :data:`SMO_MAX_ROWS` rows, where it is the most accurate and
   among the fastest to its answer.
2. Beyond, **EigenPro on centres** (FALKON) with the measured command's
   settings and :func:`~kernsolve.solvers.eigenpro.centres.default_centres`
   centres (at most those whose K(X, C) the memory keeps, and not fewer than
   ``DEFAULT_CENTRES``), when its kernel and options apply (a positive
   semi-definite kernel; -c, -e, -h, -p at their defaults: it refuses them) and the rows
   made dense and its preconditioner fit the memory at hand.
3. Else **UDSG** (random features, from the rows as given: sparse stays
   sparse), when its kernel applies (rbf, Laplacian); else SMO.

Each choice comes with its reason, one line, printed on stderr unless
``-q`` and kept in the model's ``stats`` (``"solver"``, ``"auto"``).
"""
import math
import sys
from dataclasses import dataclass, field

import numpy as np

from . import AUTO, spec_for
from .eigenpro.centres import DEFAULT_CENTRES, default_centres, preconditioner_bytes
from .._constants import (BOUNDED_KERNELS, C_SVC, EPSILON_SVR, FOURIER_KERNELS, KERNEL_NAMES,
                          POLY, PRECOMPUTED, PSD_KERNELS, SVM_TYPE_NAMES)
from .._params import Parameters
from .._sparse import Csr, is_scipy_sparse
from .._memory import memory_limit
from .._validation import _size_text, libsvm_rows

__all__ = ["SMO_MAX_ROWS", "Problem", "Choice", "describe", "choose", "resolve"]

# Up to this many rows SMO: on full Fashion-MNIST (60,000 rows) it is the most
# accurate solver in 56.9 s (benchmarks/CURRENT.md#smo-fashion-dense), where
# EigenPro on 15000 centres is 0.5 points behind in 30 s (#eigenpro-centres), and
# on a9a and ijcnn1 it is the most accurate and among the fastest (#exact-a9a,
# #exact-ijcnn1; no approximate solver within a point of it on ijcnn1,
# #tta-ijcnn1-other).  Beyond, its time grows as about n^2.5 (#more-rows-smo:
# 69.1 / 324.4 / 1198.0 s at 60,000 / 120,000 / 180,000 Fashion-MNIST rows),
# about 3 minutes at 100,000 rows and hours at 480,000, while EigenPro takes
# 48 s at 120,000 rows 1.3 points behind (#more-rows-120k-panel): the threshold
# is where SMO passes a few minutes here, a judgement on that curve.
SMO_MAX_ROWS = 100_000

# EigenPro on centres as measured (benchmarks/CURRENT.md#eigenpro-centres: 9.99%
# on Fashion-MNIST in 30 s, K(X, C) all kept in float16): the subsampled
# preconditioner's q, lambda, iterations, and float16 where the kernel is
# bounded by 1 (else float32; the low-precision guard refits one precision up
# where it does not hold).
CENTRES_SUBSAMPLE = 3000
CENTRES_LAMBDA = 1e-7
CENTRES_ITERATIONS = 30
CENTRES_BYTES = {"half": 2, "single": 4}
# Beyond the centres whose K(X, C) the memory keeps, each of the 30 iterations
# computes K(X, C) again (n p kernel values a pass: 135 s at 1.2 million rows
# and 15000 centres, benchmarks/CURRENT.md#more-rows-1200k-panel), so the
# square-root rule's 42426 centres at 480,000 rows and 67082 at 1.2 million
# would take hours; there the rule's own base count DEFAULT_CENTRES (15000, the
# count measured at those sizes: #more-rows-480k-panel, 11.20% in 148 s;
# #more-rows-1200k-panel) and no more.  Where more than it is kept, the
# square-root rule (the 120,000-row runs: 21213 centres).

# The random-feature solver beyond: UDSG gave the lowest error of the three on
# Fashion-MNIST (benchmarks/CURRENT.md#tta-fashion-udsg) and is within 0.3
# points of the others on a9a (#tta-a9a-dsg).
FEATURES_SOLVER = "udsg"


@dataclass(frozen=True)
class Problem:
    """What the rule reads of the data: rows, columns, stored values (all
    of them for a dense array) and the bytes one allocation may take."""
    n_rows: int
    n_features: int
    n_stored: int
    sparse: bool
    memory: int

    @property
    def dense_bytes(self):
        """The rows as a dense float64 array (EigenPro's kernel blocks)."""
        return 8 * self.n_rows * self.n_features


@dataclass(frozen=True)
class Choice:
    """A solver, the options it adds (dashed names), the ``-m`` it sets
    (None: the user's) and why, in one line."""
    solver: str
    reason: str
    options: dict = field(default_factory=dict)
    cache_mb: float | None = None

    def command(self):
        """The choice as options: ``eigenpro --centers 21213 ... -m 4500``."""
        words = [self.solver] + [f"--{k} {v:g}" if isinstance(v, float) else f"--{k} {v}"
                                 for k, v in self.options.items()]
        if self.cache_mb is not None:
            words.append(f"-m {self.cache_mb:g}")
        return " ".join(words)

    def line(self):
        """What ``kernsolve-train --solver auto`` prints on stderr."""
        return f"--solver auto: {self.command()} ({self.reason})"


def describe(X, n_rows, memory=None):
    """The :class:`Problem` of training rows X (an array, a sparse matrix or
    LIBSVM's Python rows, already read by ``libsvm_rows``)."""
    memory = memory_limit() if memory is None else memory
    if isinstance(X, Csr) or is_scipy_sparse(X):
        return Problem(n_rows, int(X.shape[1]), int(X.nnz), True, memory)
    shape = np.shape(X)
    d = int(shape[1]) if len(shape) == 2 else 0
    return Problem(n_rows, d, n_rows * d, False, memory)


def _only_smo(param, weighted):
    """Why only SMO applies to these options (None: others may)."""
    s, t = int(param.svm_type), int(param.kernel_type)
    if s not in (C_SVC, EPSILON_SVR):
        return f"-s {s} ({SVM_TYPE_NAMES[s]}) is trained by SMO only here (no crossover measured)"
    if param.probability:
        return "-b 1 (probability estimates) is SMO's"
    if param.weight or weighted:
        return "class or sample weights are SMO's"
    if not param.bias:
        return "--bias 0 is SMO's"
    if param.C == math.inf:
        return "the hard margin (-c inf) is SMO's"
    if t == PRECOMPUTED or t not in PSD_KERNELS and t not in FOURIER_KERNELS:
        return f"the {KERNEL_NAMES[t]} kernel (-t {t}) is SMO's"
    return None


def _refused(param, name):
    """How solver ``name`` refuses these options (its own check's message:
    ``-c 10: --solver eigenpro does not use C ...``), or None."""
    candidate = param.copy(solver=name, extra={})
    check = spec_for(name).check
    try:
        candidate.check()
        if check is not None:
            check(candidate)
    except ValueError as exc:
        return str(exc)
    return None


def _centres(param, problem):
    """EigenPro on centres for this problem: (options, -m or None, what it
    takes), or (None, why not)."""
    t = int(param.kernel_type)
    if t not in PSD_KERNELS or t == POLY and param.coef0 < 0:
        return None, f"EigenPro needs a positive semi-definite kernel, not -t {t}"
    refused = _refused(param, "eigenpro")
    if refused is not None:
        return None, refused
    n, q = problem.n_rows, CENTRES_SUBSAMPLE
    beside_rows = problem.memory - problem.dense_bytes
    p = default_centres(n, q, beside_rows) if beside_rows > 0 else 0
    precision = "half" if t in BOUNDED_KERNELS else "single"
    fixed = problem.dense_bytes + preconditioner_bytes(p, q)   # the rows, the preconditioner
    if p == 0 or fixed > problem.memory:
        return None, (f"EigenPro's rows made dense take {_size_text(problem.dense_bytes)} "
                      f"of the {_size_text(problem.memory)} at hand")
    root, kept = p, (problem.memory - fixed) // (CENTRES_BYTES[precision] * n)
    p = min(root, max(kept, DEFAULT_CENTRES))
    why = f"{p} centres = 15000 sqrt(n / 60000) capped by memory"
    if p < root:
        why = (f"{p} centres, not the square-root rule's {root}: beyond the {kept} whose "
               "K(X, C) the memory keeps, every iteration would compute it again; " +
               ("the most it keeps" if p == kept else
                f"{DEFAULT_CENTRES} as measured at 480,000 and 1.2 million rows"))
    options = {"centers": p, "subsample": q, "lambda": CENTRES_LAMBDA,
               "epochs": CENTRES_ITERATIONS, "precision": precision}
    cache_mb = None
    if param.cache_size == Parameters().cache_size:   # -m not given: what fits
        blocks = CENTRES_BYTES[precision] * n * p
        cache_mb = float(max(param.cache_size, min(blocks, problem.memory - fixed) // 2 ** 20))
    return (options, cache_mb), why


def choose(param, problem, candidates=None, weighted=False):
    """The :class:`Choice` for ``param`` (``--solver auto``) on ``problem``,
    among the solver names ``candidates`` (None: every solver)."""
    allowed = (lambda name: candidates is None or name in candidates)
    n = problem.n_rows
    only = _only_smo(param, weighted)
    if only is not None:
        return Choice("smo", only)
    if n <= SMO_MAX_ROWS:
        return Choice("smo", f"n = {n} rows <= {SMO_MAX_ROWS}: the exact solver is the most "
                      "accurate and among the fastest there")
    beyond = f"n = {n} rows > {SMO_MAX_ROWS}, where SMO's time grows as n^2"
    why_not = []
    if allowed("eigenpro"):
        centres, why = _centres(param, problem)
        if centres is not None:
            options, cache_mb = centres
            return Choice("eigenpro", f"{beyond}; {why}", options, cache_mb)
        why_not.append(why)
    if allowed(FEATURES_SOLVER):
        refused = _refused(param, FEATURES_SOLVER)
        if refused is None:
            return Choice(FEATURES_SOLVER, "; ".join([beyond] + why_not) +
                          "; random features from the rows as given")
        why_not.append(refused)
    if candidates is not None and not why_not:
        why_not.append(f"the approximate solvers are not among {', '.join(candidates)}")
    return Choice("smo", "; ".join([beyond] + why_not))


def resolve(param, y, X, sample_weight=None):
    """``--solver auto`` made concrete for ``kernsolve.train``: the options
    with the chosen solver (and its options), X as read, and the Choice.
    Prints the choice on stderr unless ``param.quiet``."""
    precomputed = int(param.kernel_type) == PRECOMPUTED
    X = libsvm_rows(X, precomputed=precomputed)
    choice = choose(param, describe(X, len(y)), weighted=sample_weight is not None)
    resolved = param.copy(solver=choice.solver)
    resolved.extra = {k.replace("-", "_"): v for k, v in choice.options.items()}
    if choice.cache_mb is not None:
        resolved.cache_size = choice.cache_mb
    if spec_for(choice.solver) is None:     # (the rule names registry solvers only)
        raise RuntimeError(f"--solver {AUTO}: chose an unknown solver {choice.solver!r}")
    if not param.quiet:
        sys.stderr.write(choice.line() + "\n")
        sys.stderr.flush()
    return resolved, X, choice
