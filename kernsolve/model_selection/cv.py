"""Cross-validation, run in parallel with joblib (LIBSVM's ``-v``).

``cross_validation(y, X, "-c 1 -g 0.05", n_folds=5)`` cuts the rows into folds
as LIBSVM's ``svm_cross_validation`` does -- stratified for classification,
plain for regression and one-class -- but draws the shuffles from kernsolve's
counter-based RNG (stream ``"folds"``), so the folds depend on the seed only.
Each fold is one task: train on the other folds, predict the held-out rows.
The tasks go through joblib, so they run on local threads, local processes
or a Dask cluster (``backend="dask"`` or an enclosing
``joblib.parallel_backend("dask")``).

Thread budget: ``n_jobs`` is the number of cores for the whole run.  The
tasks are run in "waves" (:func:`plan_waves`): at any moment the threads of
the fits that run at the same time add up to at most ``n_jobs``.  Every fit
gives the same model whatever its thread count, so the result is identical
for every ``n_jobs`` and every backend, and equal to a serial run.

Kernel values: with SMO on threads, the fits share one kernel matrix over
all the rows (:func:`shared_kernel`, ``kernsolve.solvers.libsvm.shared_kernel``)
when it fits in ``-m``, so each kernel value is computed once for all the
folds (and, in a grid search, all the cells of a kernel); the values are the
same bits, so are the models.  ``--cold`` turns it off.

The same task runner serves :func:`kernsolve.grid_search` (``_grid.py``).
"""
import contextlib
import functools
import sys
import time
import warnings
from typing import Any, NamedTuple, Sequence

import numpy as np

from .._api import train
from .._constants import (C_SVC, CLASSIFICATION, KERNEL_NAMES, KERNEL_TABLE, PRECOMPUTED,
                          REGRESSION)
from .._core import _kernel, _random as _c
from .._params import OptionsLike, Parameters, parse_options
from .._predict import evaluations, predict
from .._random import permutation, stream_key
from .._sparse import issparse
from .._threads import resolve_n_jobs, run_unordered
from .._typing import ArrayLike, MatrixLike
from .._validation import (check_sample_weight, check_targets, check_X, group_classes,
                           libsvm_rows)
from ..solvers import spec_for
from ..solvers.libsvm.formulations import WarmStart
from ..solvers.libsvm.libsvm_rand import cross_validation_folds
from ..solvers.libsvm.shared_kernel import SharedKernel, gram_bytes

__all__ = ["cross_validation", "CVResult", "make_folds", "plan_waves", "shared_kernel",
           "sharing_refused"]


# --------------------------------------------------------------------------
# folds
# --------------------------------------------------------------------------

def make_folds(y, n_folds, seed=0, stratified=True):
    """The held-out rows of each fold, as LIBSVM's ``svm_cross_validation`` orders them.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Labels (stratified) or targets.
    n_folds : int
        Number of folds, ``2 <= n_folds <= n_samples``.
    seed : int
        Seed of kernsolve's RNG; the shuffles use stream ``"folds"``.
    stratified : bool
        Class-stratified folds (LIBSVM does this for C-SVC and nu-SVC when
        ``n_folds < n_samples``).

    Returns
    -------
    folds : list of int arrays
        ``folds[i]`` holds the rows of fold ``i``.  Fold ``i`` is trained on
        ``concatenate(folds[:i] + folds[i+1:])``, in that order, as LIBSVM does.

    Notes
    -----
    Stratified: the rows are grouped by class (classes by first appearance,
    LIBSVM's ``svm_group_classes`` with its -1/+1 swap), then the rows of each
    class are shuffled by forward Fisher-Yates where the draw for position
    ``p`` of the grouped array is ``integers(count_c - i, seed, "folds",
    start=p)`` (``i`` = position inside the class) -- LIBSVM's loop with
    ``rand()`` replaced by draw ``p`` of the stream.  Class ``c`` is cut into
    pieces ``[i*count_c//k, (i+1)*count_c//k)`` and fold ``i`` is the union of
    the pieces ``i`` in class order.  Plain: ``perm = permutation(n, seed,
    "folds")`` and fold ``i`` is ``perm[i*n//k:(i+1)*n//k]``.
    """
    y = np.asarray(y)
    n = y.shape[0]
    k = _check_n_folds(n_folds, n)
    if stratified and k < n:
        _, start, count, grouped = group_classes(np.asarray(y, dtype=np.float64))
        index = np.array(grouped, dtype=np.intp)
        key = stream_key(_seed(seed), "folds")
        draw = _c.integer1
        for s, c in zip(start.tolist(), count.tolist()):
            for i in range(c - 1):
                j = i + draw(key, s + i, c - i)
                if j != i:
                    a, b = s + i, s + j
                    index[a], index[b] = index[b], index[a]
        folds = []
        for f in range(k):
            pieces = [index[s + f * c // k:s + (f + 1) * c // k]
                      for s, c in zip(start.tolist(), count.tolist())]
            folds.append(np.concatenate(pieces).astype(np.intp) if pieces
                         else np.empty(0, dtype=np.intp))
        return folds
    perm = np.asarray(permutation(n, _seed(seed), "folds"), dtype=np.intp)
    return [perm[f * n // k:(f + 1) * n // k] for f in range(k)]


def _seed(seed):
    if isinstance(seed, (bool, np.bool_)) or not hasattr(seed, "__index__") \
            or not 0 <= seed.__index__() < 2 ** 64:
        raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}")
    return seed.__index__()


def _check_n_folds(n_folds, n):
    if isinstance(n_folds, (bool, np.bool_)) or not hasattr(n_folds, "__index__"):
        raise ValueError(f"n_folds must be an integer, got {n_folds!r}")
    k = n_folds.__index__()
    if k < 2:
        raise ValueError(f"n_folds must be at least 2, got {k}")
    if k > n:
        raise ValueError(f"n_folds = {k} is more than the number of samples ({n}); "
                         f"use at most n_folds = {n} (leave-one-out)")
    return k


def _check_folds(folds, n):
    """Explicit folds: int arrays that together hold every row once."""
    out = [np.asarray(f, dtype=np.intp).ravel() for f in folds]
    rows = np.concatenate(out) if out else np.empty(0, dtype=np.intp)
    if rows.size != n or not np.array_equal(np.sort(rows), np.arange(n)):
        raise ValueError(f"folds must hold every row 0..{n - 1} exactly once "
                         f"(got {rows.size} entries)")
    return out


def _warn_small_classes(y, k, stacklevel=3):
    """scikit-learn's warning when a class has fewer members than folds."""
    _, counts = np.unique(y, return_counts=True)
    least = int(counts.min())
    if least < k:
        warnings.warn(f"The least populated class in y has only {least} members, "
                      f"which is less than n_folds={k}.", UserWarning,
                      stacklevel=stacklevel)


def train_rows(folds, i):
    """The training rows of fold ``i``: the other folds, in order (LIBSVM's order)."""
    rest = [f for j, f in enumerate(folds) if j != i]
    if not rest:
        return np.empty(0, dtype=np.intp)
    return np.concatenate(rest).astype(np.intp)


# --------------------------------------------------------------------------
# thread budget and the task runner (shared with grid search)
# --------------------------------------------------------------------------

def plan_waves(n_tasks, n_cores):
    """Split ``n_tasks`` equal tasks over ``n_cores`` cores.

    Returns a list of waves ``(n_tasks_in_wave, n_workers, threads)`` where
    ``threads`` lists the thread count of each task of the wave.  Inside a
    wave at most ``n_workers`` tasks run at once; their threads never add up
    to more than ``n_cores``.  The first wave runs as many tasks as divide
    evenly over ``min(n_tasks, n_cores)`` workers; the remainder runs last, on
    all cores (5 folds on 2 cores: 4 folds two at a time with 1 thread each,
    then the fifth with 2 threads).
    """
    if n_tasks <= 0:
        return []
    n_cores = max(1, int(n_cores))
    workers = min(n_tasks, n_cores)
    waves = []
    full = (n_tasks // workers) * workers
    if full == workers:
        waves.append((workers, workers, _spread(n_cores, workers)))
    else:
        waves.append((full, workers, [n_cores // workers] * full))
    rest = n_tasks - full
    if rest:
        waves.append((rest, rest, _spread(n_cores, rest)))
    return waves


def _spread(n_cores, n_tasks):
    """Threads of ``n_tasks`` tasks that all run at once on ``n_cores`` cores."""
    base, extra = divmod(n_cores, n_tasks)
    return [max(1, base + (1 if i < extra else 0)) for i in range(n_tasks)]


def _needs_joblib(backend):
    """Whether joblib runs the tasks: unless they run on this process's threads
    by default, with no backend given and joblib not imported (so no enclosing
    ``joblib.parallel_config`` can be in force).  A ``kernsolve-train -v`` run
    then never imports joblib, the largest of its imports after numpy
    (doc/cross-validation.md, "The fast path from easy.py and grid.py")."""
    return backend is not None or "joblib" in sys.modules


def _backend_context(backend):
    if backend is None:
        return contextlib.nullcontext()
    import joblib       # at first use: ~0.2 s to import, which a single training never needs
    return joblib.parallel_config(backend=backend)


def _call_indexed(index, fn, args, n_threads):
    return index, fn(*args, n_threads)


def run_tasks(fn, tasks, n_jobs, backend, on_done):
    """Run ``fn(*tasks[i], n_threads)`` for every task through joblib, or on
    threads of :func:`kernsolve._threads.run_unordered` when joblib is not
    needed (:func:`_needs_joblib`; the same tasks, threads and results).

    ``on_done(i, result)`` is called in this thread as each task finishes (in
    the order they finish).  Exceptions raised by the runner itself (a worker
    that died) propagate; ``fn`` should catch its own errors.
    Returns the waves used (see :func:`plan_waves`).
    """
    total = resolve_n_jobs(n_jobs)
    waves = plan_waves(len(tasks), total)
    with _kernel.free_memory_kept():        # the fits' freed memory for the next fits
        _run_waves(fn, tasks, waves, backend, on_done)
    return waves


def _run_waves(fn, tasks, waves, backend, on_done):
    pos = 0
    for count, workers, threads in waves:
        args = [(pos + t, fn, tasks[pos + t], threads[t]) for t in range(count)]
        if _needs_joblib(backend):
            import joblib       # at first use (see _backend_context)
            with _backend_context(backend):
                parallel = joblib.Parallel(n_jobs=workers, prefer="threads",
                                           return_as="generator_unordered")
                for index, result in parallel(joblib.delayed(_call_indexed)(*a)
                                              for a in args):
                    on_done(index, result)
        else:
            calls = [functools.partial(_call_indexed, *a) for a in args]
            for index, result in run_unordered(calls, workers, "fold"):
                on_done(index, result)
        pos += count


def fit_predict(y, X, sample_weight, param, train_idx, test_idx, probability, prob_folds,
                shared, n_threads, warm=None, split=None, defer=False):
    """One task: train on ``train_idx``, predict ``test_idx``.

    ``prob_folds``: the internal probability folds of the fit (``train``'s
    ``_folds``), or None for kernsolve's own.  ``shared``: a
    :class:`SharedKernel` over all the rows of ``X`` the fit reads its kernel
    rows from, or None.  ``warm``: a ``WarmStart`` holding the solution of
    the previous fit on these rows (see :func:`fit_predict_path`), or None.
    ``split``: a dict that keeps ``X[train_idx]`` and ``X[test_idx]`` for the
    next fit on the same rows (slicing sparse rows is a fair part of a small
    fit), or None.  ``defer``: a prediction from the shared matrix
    (:func:`_predict_from_shared`) is left to the caller: the result has
    ``"pred": None`` and the fit's ``"decision"`` (a :class:`_SharedDecision`),
    for one product with the other fits' (:func:`_predict_together`).
    Never raises: a failure comes back as
    ``{"error": "Type: message"}``, so the caller can name the fold and the
    parameters that failed.
    """
    t0 = time.perf_counter()
    try:
        if test_idx.size == 0:
            return {"pred": np.empty(0), "seconds": 0.0, "n_SV": 0, "n_iter": 0,
                    "n_threads": n_threads, "error": None}
        sw = None if sample_weight is None else sample_weight[train_idx]
        model = train(y[train_idx], _rows(X, train_idx, split, "train"), param,
                      sample_weight=sw,
                      n_jobs=n_threads, _folds=prob_folds,
                      _shared=None if shared is None else shared.view(train_idx),
                      _warm=warm)
        decision = None
        if warm is not None and shared is not None and not probability \
                and _reads_shared(model):
            decision = _SharedDecision.of(model, shared, train_idx)
            pred = None if defer else _predict_from_shared(decision, shared, test_idx)
        else:
            opts = f"-q --threads {n_threads}" + (" -b 1" if probability else "")
            pred, _, _ = predict(None, _rows(X, test_idx, split, "test"), model, opts)
        stats = model.stats
        result = {"pred": None if pred is None else np.asarray(pred, dtype=np.float64),
                  "seconds": time.perf_counter() - t0,
                  "n_SV": model.n_sv,
                  "n_iter": int(stats.get("n_iter", 0)),
                  "n_threads": n_threads, "error": None}
        if pred is None:
            result["decision"] = decision
        return result
    except Exception as exc:  # reported by the caller, with the fold named
        return _failed(exc, time.perf_counter() - t0, n_threads)


def _failed(exc, seconds, n_threads):
    return {"pred": None, "seconds": seconds, "n_threads": n_threads,
            "error": f"{type(exc).__name__}: {exc}", "error_type": type(exc).__name__}


def _rows(X, idx, split, key):
    """``X[idx]``, kept in ``split[key]`` for the next fit when ``split`` is a dict."""
    if split is None:
        return X[idx]
    if key not in split:
        split[key] = X[idx]
    return split[key]


def _reads_shared(model):
    """Whether :func:`_predict_from_shared` predicts for ``model``: a two-class
    C-SVC or an SVR (one decision function, no probabilities)."""
    svm_type = int(model.param.svm_type)
    return (svm_type == C_SVC and len(model.labels) == 2) or svm_type in REGRESSION


class _SharedDecision(NamedTuple):
    """A fit's decision function over the rows of the shared matrix:
    ``sum coef K - rho``, as LIBSVM's, with the coefficients spread over all
    the matrix's rows (zero off the support vectors)."""
    weights: np.ndarray
    rho: float
    labels: tuple | None    # a two-class C-SVC's (first, second) label; None: SVR

    @classmethod
    def of(cls, model, shared, train_idx):
        sv_rows = train_idx[model.support_indices - 1]
        weights = np.bincount(sv_rows, weights=model.dual_coef[0],
                              minlength=shared.gram.shape[1])
        regression = int(model.param.svm_type) in REGRESSION
        return cls(weights, float(model.rho[0]),
                   None if regression else (model.labels[0], model.labels[1]))

    def predict(self, sums):
        """The predictions from the held-out rows' ``K @ weights``: the decision
        value (SVR), or the first label where it is positive, else the second."""
        decision = sums - self.rho
        if self.labels is None:
            return decision
        return np.where(decision > 0, self.labels[0], self.labels[1]).astype(np.float64)


def _predict_from_shared(decision, shared, test_idx):
    """The held-out rows' predictions with the kernel values of the shared
    matrix (the float32 values the fit trained with) instead of computing
    them again: a warm grid's fits, whose rates are the cold ones within the
    solver's tolerance already (at large gamma every row is a support vector
    and the held-out rows' kernel values were most of a fit's time)."""
    return decision.predict(shared.weighted_sums(test_idx, decision.weights))


def _predict_together(results, shared, test_idx):
    """The predictions of the fits that :func:`fit_predict` deferred, filled in
    ``results``: one product of the held-out rows of the shared matrix by all
    their coefficient columns (the rows read and widened once for a chain's C
    values, not once per C; a fifth of the warm grid's held-out time on
    svmguide1, issue 35).  Its time is shared evenly in their ``seconds``."""
    t0 = time.perf_counter()
    try:
        sums = shared.weighted_sums(
            test_idx, np.column_stack([res["decision"].weights for res in results]))
    except Exception as exc:  # (a MemoryError): those fits fail, named by the caller
        for res in results:
            del res["decision"]
            res.update(_failed(exc, res["seconds"], res["n_threads"]))
        return
    share = (time.perf_counter() - t0) / len(results)
    for j, res in enumerate(results):
        res["pred"] = res.pop("decision").predict(sums[:, j])
        res["seconds"] += share


def fit_predict_path(y, X, sample_weight, params, train_idx, test_idx, probability,
                     prob_folds, shared, warm, n_threads):
    """One task of several fits on the same rows: :func:`fit_predict` for each of
    ``params`` in turn, a list of their results.  With ``warm``, each fit
    starts from the previous one's solution (alpha seeding along C: give
    ``params`` in increasing C; a fit after a quick one starts cold, see
    ``WarmStart.keep``); otherwise each solves from scratch.  The fits that
    predict from the shared matrix do it together at the end
    (:func:`_predict_together`)."""
    start = WarmStart(thrifty=True, same_rows=True) if warm else None
    split = {}        # the rows sliced once for all the fits (X[train_idx], X[test_idx])
    results = [fit_predict(y, X, sample_weight, param, train_idx, test_idx, probability,
                           prob_folds, shared, n_threads, warm=start, split=split,
                           defer=True)
               for param in params]
    deferred = [res for res in results if res.get("decision") is not None]
    if deferred:
        _predict_together(deferred, shared, test_idx)
    return results


# --------------------------------------------------------------------------
# kernel values shared by the fits
# --------------------------------------------------------------------------

def _on_threads(backend):
    """Whether the tasks will run on threads of this process (they can share memory)."""
    if not _needs_joblib(backend):
        return True
    import joblib       # at first use (see _backend_context)
    with _backend_context(backend):
        active, _ = joblib.parallel.get_active_backend(prefer="threads")
    return isinstance(active, (joblib.parallel.ThreadingBackend,
                               joblib.parallel.SequentialBackend))


def sharing_refused(X, param, backend):
    """Why the fits of ``param`` on rows of ``X`` cannot share a kernel matrix, or None.

    They share one when SMO trains them (the driver's formulations), the
    kernel is not precomputed (that is a matrix already) nor ``-g median``
    (resolved on each fit's rows), they run on threads, ``--cold`` is not
    given, and the float32 matrix over all the rows fits in ``-m``.
    """
    spec = spec_for(param.solver)
    if param.cold:
        return "--cold"
    if spec is None or spec.train is not None or spec.binary is not None:
        return f"--solver {param.solver} computes its own"
    if param.kernel_type == PRECOMPUTED:
        return "-t 4 is a kernel matrix already"
    if param.gamma == "median":
        return "-g median is resolved on each fit's rows"
    if not _on_threads(backend):
        return "the fits run in other processes"
    if _bit_set_rows(X, param.kernel_type):
        return ("binary rows: their kernel rows come from bit sets, cheaper than a row "
                "of the shared matrix")
    n = X.shape[0]
    need = gram_bytes(n)
    if need > param.cache_size * 2 ** 20:
        return (f"the {n} x {n} kernel matrix ({need / 2 ** 20:.1f} MB) does not fit "
                f"in -m {param.cache_size:g}")
    return None


def _bit_set_rows(X, kernel_type):
    """Whether the row cache would compute X's kernel rows from bit sets
    (0/1 values, a kernel of a dot product or distance base, bit sets no wider
    than the rows' nonzeros: ``KernelRows``' rule): a9a's grid took 15.4 s
    shared against 13.4 s without (benchmarks/CURRENT.md#grid-a9a2000)."""
    if not KERNEL_TABLE[kernel_type].bit_rows or not _kernel.binary_rows():
        return False
    X = getattr(X, "X", X)          # (a Canonical: the rows it wraps)
    n, words = X.shape[0], (X.shape[1] + 63) // 64
    if issparse(X):
        values = X.data[:X.indptr[-1]] if hasattr(X, "indptr") else X.data
        if n == 0 or words > values.size // n:
            return False
        return bool(np.all(values == 1.0))
    values = np.asarray(X)
    return n > 0 and bool(np.all((values == 0.0) | (values == 1.0)))


def shared_kernel(X, param, backend, n_threads, say=None, what="the fits", out=None):
    """The :class:`SharedKernel` of ``param``'s kernel over the rows of ``X`` for
    fits running on threads, or None when they cannot share one
    (:func:`sharing_refused`).  ``say(line)``, when given, is told which (for
    the verbose output); ``out``: memory for the matrix (``kernel_gram``'s)."""
    reason = sharing_refused(X, param, backend)
    if reason is not None:
        if say is not None:
            say(f"kernel values not shared ({reason}): each of {what} computes its own")
        return None
    shared = SharedKernel.compute(X, param, n_threads, out=out)
    if say is not None:
        n = X.shape[0]
        kind, _, gamma, _ = shared.kernel
        say(f"kernel values of {KERNEL_NAMES[kind]} g={gamma:g} computed once for {what}: "
            f"{n} x {n} matrix, {shared.nbytes / 2 ** 20:.1f} MB of -m {param.cache_size:g}")
    return shared


def _say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


# --------------------------------------------------------------------------
# input checks shared with grid search
# --------------------------------------------------------------------------

def prepare(y, X, options, sample_weight=None) -> tuple[np.ndarray, Any, np.ndarray | None,
                                                      Parameters]:
    """(y, X, sample_weight, Parameters) checked and in the form the tasks index."""
    param = options.copy() if isinstance(options, Parameters) else parse_options(options)
    X = check_X(libsvm_rows(X, precomputed=param.kernel_type == PRECOMPUTED))
    y = check_targets(y, param.svm_type)
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} entries")
    sw = check_sample_weight(sample_weight, y.shape[0])
    return y, X, sw, param


def fit_parameters(param):
    """The Parameters each fold trains with: quiet (fits run side by side), no -v."""
    return param.copy(quiet=True, n_folds=0)


def scores(y, target, svm_type):
    """(accuracy %, MSE, squared correlation) of LIBSVM's ``-v`` summary."""
    return evaluations(y, target)


# --------------------------------------------------------------------------
# the public function
# --------------------------------------------------------------------------

class CVResult:
    """The result of :func:`cross_validation` (attributes, or ``result["name"]``).

    Attributes
    ----------
    target : ndarray of shape (n_samples,)
        The prediction of every row by the model that did not see it
        (LIBSVM's ``svm_cross_validation`` target).
    accuracy : float
        Percentage of rows with ``target == y`` (what LIBSVM prints for
        classification and one-class).
    mean_squared_error, squared_correlation : float
        LIBSVM's regression summary (computed for every SVM type).
    score : float
        ``mean_squared_error`` for regression (-s 3, 4), else ``accuracy``.
    folds : list of int arrays
        Held-out rows of each fold (:func:`make_folds`).
    fold_results : list of dict
        Per fold: ``n_train``, ``n_test``, ``accuracy``, ``mean_squared_error``,
        ``squared_correlation``, ``n_SV``, ``n_iter``, ``seconds``, ``n_threads``.
    n_folds, seed, n_jobs : int
        As used (``n_jobs`` resolved to a core count).
    waves : list
        The schedule (:func:`plan_waves`): (tasks, workers, threads per task).
    seconds : float
        Wall time of the whole run.
    """

    _FIELDS = ("target", "accuracy", "mean_squared_error", "squared_correlation",
               "score", "folds", "fold_results", "n_folds", "seed", "n_jobs",
               "waves", "seconds", "svm_type")

    def __init__(self, **values):
        for name in self._FIELDS:
            setattr(self, name, values.get(name))

    def __getitem__(self, name):
        if name not in self._FIELDS:
            raise KeyError(name)
        return getattr(self, name)

    def keys(self):
        return list(self._FIELDS)

    def as_dict(self):
        return {name: getattr(self, name) for name in self._FIELDS}

    def __repr__(self):
        if self.svm_type in REGRESSION:
            what = (f"mean_squared_error={self.mean_squared_error:.6g}, "
                    f"squared_correlation={self.squared_correlation:.6g}")
        else:
            what = f"accuracy={self.accuracy:.6g}"
        return f"CVResult(n_folds={self.n_folds}, {what})"


def cross_validation(y: ArrayLike, X: MatrixLike, options: OptionsLike = "",
                     n_folds: int | None = None, n_jobs: int | None = None,
                     seed: int | None = None, backend: Any = None, verbose: bool | None = None,
                     sample_weight: ArrayLike | None = None,
                     folds: Sequence[ArrayLike] | None = None,
                     _probability_folds: Any = None) -> CVResult:
    """k-fold cross-validation, LIBSVM's ``svm-train -v k``, folds in parallel.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels (-s 0, 1, 2) or regression targets (-s 3, 4).
    X : ndarray or scipy.sparse matrix of shape (n_samples, n_features)
        As for :func:`kernsolve.train` (precomputed kernels included).
    options : str, list, dict or Parameters
        Training options, as for :func:`kernsolve.train`; any solver that
        ``train`` accepts.  ``-b 1`` predicts through probabilities, as LIBSVM.
    n_folds : int, optional
        Number of folds, 2..n_samples.  None: the options' ``-v``, else 5.
    n_jobs : int, optional
        Cores for the whole run (scikit-learn's rule; None = all cores).
        Folds run side by side and each fit gets a share of the cores; the
        result does not depend on it.
    seed : int, optional
        Seed of the fold shuffles (stream ``"folds"``).  None: the options'
        ``--seed`` (default 0).
    backend : str or joblib backend, optional
        joblib backend for the folds (``"threading"``, ``"loky"``, ``"dask"``
        ...).  None: the enclosing ``joblib.parallel_backend`` if any, else
        threads (the fits release the GIL).
    verbose : bool, optional
        A progress line per finished fold on stdout.  None: on unless the
        options have ``-q``.
    sample_weight : array-like of shape (n_samples,), optional
        Per-row weights, passed to each fold's ``train``.
    folds : list of int arrays, optional
        The held-out rows of each fold, instead of drawing them (e.g.
        ``kernsolve.solvers.libsvm.libsvm_rand.cv_folds``, svm-train's own folds).  Every
        row must be in exactly one fold; ``n_folds`` is then ``len(folds)``.
    _probability_folds : private
        Per fold, the ``_folds`` of its ``train`` call (the internal folds of
        ``-b 1``), e.g. svm-train's own (kernsolve.solvers.libsvm.libsvm_rand).

    Returns
    -------
    CVResult
        ``accuracy`` (or ``mean_squared_error``, ``squared_correlation``),
        ``target`` (per-row predictions), ``fold_results``, ``folds``.

    Raises
    ------
    ValueError
        Bad options or data, ``n_folds`` < 2 or > n_samples, or a fold whose
        training failed with a ValueError (the fold is named).
    RuntimeError
        A fold failed for another reason, or a worker died.

    Warns
    -----
    UserWarning
        When a class has fewer members than ``n_folds`` (as scikit-learn).
    """
    t0 = time.perf_counter()
    y, X, sw, param = prepare(y, X, options, sample_weight)
    n = y.shape[0]
    if folds is not None:
        folds = _check_folds(folds, n)
        n_folds = len(folds)
    if n_folds is None:
        n_folds = param.n_folds or 5
    k = _check_n_folds(n_folds, n)
    if seed is None:
        seed = param.seed
    seed = _seed(seed)
    if verbose is None:
        verbose = not param.quiet
    svm_type = int(param.svm_type)
    stratified = svm_type in CLASSIFICATION
    if stratified:
        _warn_small_classes(y, k)
    if folds is None and param.libsvm_folds:
        # --libsvm-folds: svm-train's folds (glibc rand()), then its -b 1 folds
        folds, libsvm_probability_folds = cross_validation_folds(y, k, svm_type,
                                                                 param.probability)
        if _probability_folds is None:
            _probability_folds = libsvm_probability_folds
    if folds is None:
        folds = make_folds(y, k, seed, stratified)
    fit_param = fit_parameters(param)
    probability = bool(param.probability) and stratified
    if _probability_folds is not None and len(_probability_folds) != k:
        raise ValueError(f"_probability_folds must hold one entry per fold ({k}), "
                         f"got {len(_probability_folds)}")
    total = resolve_n_jobs(n_jobs if n_jobs is not None else param.n_jobs)
    shared = shared_kernel(X, fit_param, backend, total,
                           (lambda line: _say("cross validation: " + line)) if verbose
                           else None, f"the {k} folds")
    tasks = [(y, X, sw, fit_param, train_rows(folds, i), folds[i], probability,
              None if _probability_folds is None else _probability_folds[i], shared)
             for i in range(k)]

    target = np.full(n, np.nan)
    fold_results = [None] * k
    done = []

    def on_done(i, res):
        if res["error"] is not None:
            fold_results[i] = res
            return
        test = folds[i]
        target[test] = res["pred"]
        acc, mse, scc = scores(y[test], res["pred"], svm_type) if test.size else \
            (float("nan"),) * 3
        fold_results[i] = {"fold": i, "n_train": int(n - test.size),
                           "n_test": int(test.size), "accuracy": acc,
                           "mean_squared_error": mse, "squared_correlation": scc,
                           "n_SV": res["n_SV"], "n_iter": res["n_iter"],
                           "seconds": res["seconds"], "n_threads": res["n_threads"]}
        done.append(i)
        if verbose:
            what = (f"mean squared error = {mse:g}" if svm_type in REGRESSION
                    else f"accuracy = {acc:g}%")
            sys.stdout.write(f"cross validation: fold {i + 1}/{k} done ({len(done)}/{k}): "
                             f"{what} on {test.size} rows, {res['seconds']:.2f} s, "
                             f"{res['n_threads']} thread(s)\n")
            sys.stdout.flush()

    try:
        waves = run_tasks(fit_predict, tasks, total, backend, on_done)
    except Exception as exc:
        missing = [i + 1 for i in range(k) if fold_results[i] is None]
        raise RuntimeError(f"cross_validation: a worker failed ({type(exc).__name__}: "
                           f"{exc}) before folds {missing} of {k} finished") from exc
    for i, res in enumerate(fold_results):
        if res is not None and res.get("error"):
            cls = ValueError if res.get("error_type") == "ValueError" else RuntimeError
            raise cls(f"cross_validation: fold {i + 1} of {k} failed: {res['error']}")

    acc, mse, scc = scores(y, target, svm_type)
    return CVResult(target=target, accuracy=acc, mean_squared_error=mse,
                    squared_correlation=scc,
                    score=mse if svm_type in REGRESSION else acc,
                    folds=folds, fold_results=fold_results, n_folds=k, seed=seed,
                    n_jobs=total, waves=waves, seconds=time.perf_counter() - t0,
                    svm_type=svm_type)
