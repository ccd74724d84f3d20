"""Doubly Stochastic Gradients: kernel machines on random features regenerated
from a seed (Dai et al., NIPS 2014, Algorithms 1 and 2).

``train(y, X, "--solver dsg --loss hinge -g median ...")`` returns a
:class:`DSGModel`; the numerical work is in ``kernsolve.solvers.dsg._dsg``.  The
model holds one block of ``block_size`` coefficients per iteration and the
seed, never the random directions, so its size is O(iterations), independent
of the input dimension.  :class:`DSGTrainer` keeps the training state between
chunks, for ``partial_fit`` and for training from a file read in byte ranges
(:func:`train_file`).
"""
import math
import os
import sys
import time

import numpy as np
import scipy.sparse as sp

from . import _dsg as _c
from ..libsvm.driver import _as_targets, _group_classes
from ..._errors import DataFormatError
from ..._features import _feature_kernel, _check_gamma, median_gamma
from ..._io import _compression, _open_read, read_problem
from ..._kernels import as_canonical
from ..._model import save_model
from ..._params import Parameters, option_number, parse_options
from ..._predict import _prepare_X      # also takes LIBSVM's list-of-dicts rows
from ..._progress import Progress
from ..._random import _uint64, permutation, stream_key
from ..._threads import resolve_n_jobs

__all__ = ["LOSSES", "DSGModel", "DSGTrainer", "train", "train_file", "train_model"]

# Loss name -> code of kernsolve/solvers/dsg/_losses.pxd.  Model files store names.
LOSSES = {
    "hinge": 0, "squared-hinge": 1, "logistic": 2, "softmax": 3,
    "squared": 4, "huber": 5, "epsilon-insensitive": 6, "quantile": 7,
    "novelty": 8,
}
CLASSIFICATION_LOSSES = ("hinge", "squared-hinge", "logistic", "softmax")
REGRESSION_LOSSES = ("squared", "huber", "epsilon-insensitive", "quantile")
# -s code -> task; DSG has no nu-SVC / nu-SVR formulation.
_TASKS = {0: "classification", 2: "novelty", 3: "regression"}
_DEFAULTS = {"batch_size": 64, "feature_block": 32, "step": 1000.0, "t0": 1000.0,
             "epochs": 1.0, "average": 0, "tau": 0.5, "delta": 1.0,
             "new_blocks": 1, "old_blocks": 1, "max_step_ratio": 2.0}
_MIN_CAPACITY = 64      # blocks allocated at first
_SLICE_BATCHES = 16     # batches per compiled call (progress and Ctrl-C between)


# --------------------------------------------------------------- options

def _number(extra, key, *, integer=False, low=None, low_open=True, high=None):
    option = "--" + key.replace("_", "-")
    value = option_number(extra.get(key, _DEFAULTS.get(key)), option[2:], integer)
    value = int(value) if integer else value
    if low is not None and (value <= low if low_open else value < low):
        raise ValueError(f"{option}: must be {'>' if low_open else '>='} {low:g}, "
                         f"got {value:g}")
    if high is not None and value > high:
        raise ValueError(f"{option}: must be <= {high:g}, got {value:g}")
    return value


def _task(param):
    if param.svm_type not in _TASKS:
        raise ValueError(f"-s {param.svm_type}: DSG trains classification (-s 0), "
                         "novelty detection (-s 2) and regression (-s 3); nu-SVC and "
                         "nu-SVR are SMO formulations")
    return _TASKS[param.svm_type]


def _loss(param, n_classes):
    task = _task(param)
    name = param.extra.get("loss")
    if name is None:
        if task == "classification":
            return "hinge" if n_classes <= 2 else "softmax"
        return "novelty" if task == "novelty" else "epsilon-insensitive"
    name = str(name).strip().lower().replace("_", "-")
    if name not in LOSSES:
        raise ValueError(f"--loss: unknown loss {name!r} (known: {', '.join(LOSSES)})")
    allowed = {"classification": CLASSIFICATION_LOSSES, "regression": REGRESSION_LOSSES,
               "novelty": ("novelty",)}[task]
    if name not in allowed:
        raise ValueError(f"--loss {name}: not a {task} loss (-s {param.svm_type} takes "
                         f"{', '.join(allowed)})")
    return name


def check_parameters(param):
    """Validate the DSG options of ``param`` that do not need the data."""
    _task(param)
    _loss(param, 2)
    if param.kernel_type not in (2, 5):
        raise ValueError(f"-t {param.kernel_type}: DSG's random features exist for the "
                         "RBF (-t 2) and Laplacian (-t 5) kernels")
    if param.probability:
        raise ValueError("-b 1: DSG models give probabilities through --loss logistic "
                         "or softmax, not Platt scaling")
    if param.weight:
        raise ValueError("-w: class weights are not supported by DSG")
    if param.n_folds:
        return
    e = param.extra
    _number(e, "batch_size", integer=True, low=1, low_open=False)
    _number(e, "feature_block", integer=True, low=1, low_open=False)
    _number(e, "step", low=0)
    _number(e, "t0", low=0, low_open=False)
    _number(e, "epochs", low=0)
    _number(e, "tau", low=0, high=1)
    _number(e, "delta", low=0)
    if _number(e, "average", integer=True) not in (0, 1):
        raise ValueError("--average: expected 0 or 1")
    if "lambda" in e:
        _number(e, "lambda", low=0, low_open=False)
    if param.solver == "udsg":
        _number(e, "new_blocks", integer=True, low=1, low_open=False)
        _number(e, "old_blocks", integer=True, low=0, low_open=False)
    if param.solver == "cdsg":
        _number(e, "max_step_ratio", low=1)


def _hyper(param, n_samples, n_features, loss, gamma):
    e = param.extra
    check_parameters(param)
    task = _task(param)
    if "lambda" in e:
        lam = _number(e, "lambda", low=0, low_open=False)
    elif task == "novelty":
        lam = float(param.nu)        # the one-class nu is the paper's nu here
    else:
        lam = 1.0 / (param.C * n_samples)
    step = _number(e, "step", low=0)
    t0 = _number(e, "t0", low=0, low_open=False)
    if step * lam / (t0 + 1.0) >= 1.0:
        raise ValueError(f"--step {step:g} with lambda {lam:g} and --t0 {t0:g}: the first "
                         "step would shrink the model by a factor <= 0 "
                         "(need step * lambda < t0 + 1)")
    # UDSG's G new / U old iterations; CDSG's cap on the line-search step
    # (eta <= max_step_ratio * gamma_t: the paper's theta' = ratio * theta).
    udsg = param.solver == "udsg"
    new_blocks = _number(e, "new_blocks", integer=True, low=1, low_open=False) if udsg else 1
    old_blocks = _number(e, "old_blocks", integer=True, low=0, low_open=False) if udsg else 0
    ratio = _number(e, "max_step_ratio", low=1) if param.solver == "cdsg" else 1.0
    if ratio * step * lam / (t0 + 1.0) >= 1.0:
        raise ValueError(f"--max-step-ratio {ratio:g} with --step {step:g}, lambda {lam:g} "
                         f"and --t0 {t0:g}: a line-search step could shrink the model by a "
                         "factor <= 0 (need ratio * step * lambda < t0 + 1)")
    loss_param = {"huber": _number(e, "delta", low=0), "quantile": _number(e, "tau", low=0, high=1),
                  "epsilon-insensitive": float(param.p)}.get(loss, 0.0)
    # The settings of one run, as the compiled loop reads them.
    return dict(
        loss=LOSSES[loss], loss_name=loss, loss_param=loss_param, task=task,
        batch_size=_number(e, "batch_size", integer=True, low=1, low_open=False),
        block_size=_number(e, "feature_block", integer=True, low=1, low_open=False),
        step=step, t0=t0, epochs=_number(e, "epochs", low=0),
        average=bool(_number(e, "average", integer=True)), fit_intercept=bool(param.bias),
        kernel=_feature_kernel(param.kernel_type), kernel_type=int(param.kernel_type),
        gamma=float(gamma), seed=_uint64(param.seed, "--seed"), n_features=n_features,
        cache_mb=float(param.cache_size), solver=param.solver, svm_type=int(param.svm_type),
        lam=lam, new_blocks=new_blocks, old_blocks=old_blocks, max_step_ratio=ratio)


def resolve_gamma(param, X):
    """-g value, ``median`` (the median trick on a seeded sample) or LIBSVM's
    default 1/num_features."""
    g = param.gamma
    if isinstance(g, str):
        return median_gamma(X, kernel="rbf" if param.kernel_type == 2 else "laplacian",
                            seed=param.seed)
    if g is None or g == 0:
        return 1.0 / X.shape[1] if X.shape[1] else 1.0
    return _check_gamma(g)


# ---------------------------------------------------------------- targets

class _Targets:
    """Labels -> the per-output targets of the compiled loop."""

    def __init__(self, task, loss, labels=None):
        self.task, self.loss = task, loss
        self.labels = None if labels is None else np.asarray(labels)

    @classmethod
    def from_data(cls, task, loss, y):
        if task != "classification":
            return cls(task, loss)
        labels = _group_classes(y)[0]
        if labels.size < 2:
            raise ValueError(f"training data has only one class (label {labels[0]:g}); "
                             "DSG classification needs at least two")
        return cls(task, loss, labels.astype(np.float64))

    @property
    def n_outputs(self):
        if self.task != "classification":
            return 1
        k = self.labels.size
        # binary losses: one output for two classes, one-vs-rest beyond
        return k if (self.loss == "softmax" or k > 2) else 1

    def encode(self, y):
        """(n, n_outputs) targets for the compiled loop (softmax: (n, 1) class indices)."""
        y = np.asarray(y, dtype=np.float64)
        if self.task != "classification":
            return np.ascontiguousarray(y.reshape(-1, 1))
        index = np.full(y.shape[0], -1, dtype=np.int64)
        for k, label in enumerate(self.labels):
            index[y == label] = k
        unknown = np.flatnonzero(index < 0)
        if unknown.size:
            raise ValueError(f"row {unknown[0] + 1} has label {y[unknown[0]]:g}, which is not "
                             f"one of the model's labels "
                             f"({', '.join('%g' % v for v in self.labels)})")
        if self.loss == "softmax":
            return index.astype(np.float64).reshape(-1, 1)
        if self.n_outputs == 1:
            return np.where(index == 0, 1.0, -1.0).reshape(-1, 1)
        out = -np.ones((y.shape[0], self.n_outputs))
        out[np.arange(y.shape[0]), index] = 1.0
        return out


# ------------------------------------------------------------------ model

class DSGModel:
    """A DSG model: blocks of random-feature coefficients plus what regenerates
    the features (kernel, gamma, seed, block size).

    Attributes
    ----------
    solver : str
        ``"dsg"``, ``"udsg"`` or ``"cdsg"``.
    loss : str
        A name of :data:`LOSSES`.
    loss_param : float
        Huber's delta, the epsilon of the epsilon-insensitive loss, or the
        quantile tau (0 otherwise).
    svm_type : int
        0 classification, 2 novelty detection, 3 regression.
    kernel_type : int
        2 (RBF) or 5 (Laplacian); ``gamma`` its parameter.
    seed : int
        Seed of the random features (``--seed``).
    n_features : int
        Input dimension the model was trained on.
    block_size : int
        Random features per block.
    labels : ndarray or None
        Class labels in LIBSVM's order (classification only).
    coef : ndarray of shape (n_blocks, block_size, n_outputs)
        Coefficient of feature f of block b for each output.
    intercept : ndarray of shape (n_outputs,)
        The unregularised offset (for novelty detection, minus the learned
        threshold rho).
    stats : dict
        Training statistics (not saved): n_iter, n_blocks, feature_evals,
        seconds, mean_loss, n_threads.
    """

    kind = "dsg"

    def __init__(self, *, solver, loss, loss_param, svm_type, kernel_type, gamma, seed,
                 n_features, block_size, labels, coef, intercept, stats=None):
        self.solver, self.loss, self.loss_param = solver, loss, float(loss_param)
        self.svm_type, self.kernel_type = int(svm_type), int(kernel_type)
        self.gamma, self.seed = float(gamma), int(seed)
        self.n_features, self.block_size = int(n_features), int(block_size)
        self.labels = None if labels is None else np.asarray(labels, dtype=np.float64)
        self.coef = np.ascontiguousarray(coef, dtype=np.float64)
        self.intercept = np.ascontiguousarray(intercept, dtype=np.float64)
        self.stats = dict(stats or {})

    @property
    def n_blocks(self):
        return self.coef.shape[0]

    @property
    def n_outputs(self):
        return self.coef.shape[2]

    @property
    def n_random_features(self):
        return self.coef.shape[0] * self.coef.shape[1]

    def __repr__(self):
        return (f"DSGModel(solver={self.solver}, loss={self.loss}, "
                f"kernel={'rbf' if self.kernel_type == 2 else 'laplacian'}, "
                f"gamma={self.gamma:g}, n_blocks={self.n_blocks}, "
                f"block_size={self.block_size}, n_outputs={self.n_outputs})")

    # -- prediction (Algorithm 2)
    def _check_X(self, X):
        X = as_canonical(_prepare_X(X))
        d = X.shape[1]
        if d > self.n_features:
            extra = X[:, self.n_features:]
            nonzero = int(np.count_nonzero(extra.data if sp.issparse(extra) else extra))
            if nonzero:
                raise ValueError(f"X has {d} columns with values beyond column "
                                 f"{self.n_features}, but the model was trained on "
                                 f"{self.n_features} features")
            X = X[:, :self.n_features]
            X = as_canonical(X.tocsr() if sp.issparse(X) else np.ascontiguousarray(X))
        elif d < self.n_features:
            if sp.issparse(X):
                X = sp.csr_matrix((X.data, X.indices, X.indptr),
                                  shape=(X.shape[0], self.n_features))
            else:
                X = np.hstack([X, np.zeros((X.shape[0], self.n_features - d))])
            X = as_canonical(X)
        return X

    def decision_function(self, X, n_jobs=None):
        """f(x): shape (n_samples, n_outputs)."""
        X = self._check_X(X)
        return _c.decision_function(X, self.coef, self.intercept,
                                    _feature_kernel(self.kernel_type), self.gamma,
                                    self.seed, resolve_n_jobs(n_jobs))

    def labels_from_values(self, values):
        """Predicted labels (classification), values (regression) or +1/-1 (novelty)."""
        if self.svm_type == 3:
            return values[:, 0].copy()
        if self.svm_type == 2:
            return np.where(values[:, 0] >= 0, 1.0, -1.0)
        if values.shape[1] == 1:
            return np.where(values[:, 0] > 0, self.labels[0], self.labels[1])
        return self.labels[np.argmax(values, axis=1)]

    def predict(self, X, n_jobs=None):
        return self.labels_from_values(self.decision_function(X, n_jobs))

    @property
    def is_regression(self):
        return self.svm_type == 3

    def predict_arrays(self, X, probability=False, n_jobs=None):
        """(labels, values) for ``kernsolve.predict``: decision values, or with
        ``probability`` the class probabilities (logistic and softmax losses)."""
        values = self.decision_function(X, n_jobs)
        labels = self.labels_from_values(values)
        if probability:
            prob = self.probabilities_from_values(values)
            return self.labels[np.argmax(prob, axis=1)], prob
        return labels, values

    @property
    def has_probability(self):
        return self.loss in ("logistic", "softmax")

    def probabilities_from_values(self, values):
        """Class probabilities (n_samples, n_classes) in ``labels`` order; only
        for the logistic and softmax losses, whose model is a likelihood."""
        if not self.has_probability:
            raise ValueError(f"a DSG model with loss {self.loss!r} gives no probabilities "
                             "(train with --loss logistic or softmax)")
        if values.shape[1] == 1:
            p = 1.0 / (1.0 + np.exp(-values[:, 0]))
            return np.column_stack([p, 1.0 - p])
        if self.loss == "logistic":       # one-vs-rest: normalise the sigmoids
            p = 1.0 / (1.0 + np.exp(-values))
            return p / p.sum(axis=1, keepdims=True)
        z = np.exp(values - values.max(axis=1, keepdims=True))
        return z / z.sum(axis=1, keepdims=True)

    # -- the model file
    def to_text(self):
        """The model file: a header of ``key value`` lines, then ``coef`` and
        one line per block (block_size * n_outputs numbers, feature-major)."""
        g = lambda v: "%.17g" % v
        lines = [f"kernsolve_model {self.kind}",
                 f"solver {self.solver}",
                 f"svm_type {self.svm_type}",
                 f"loss {self.loss}",
                 f"loss_param {g(self.loss_param)}",
                 f"kernel_type {self.kernel_type}",
                 f"gamma {g(self.gamma)}",
                 f"seed {self.seed}",
                 f"n_features {self.n_features}",
                 f"block_size {self.block_size}",
                 f"n_blocks {self.n_blocks}",
                 f"n_outputs {self.n_outputs}"]
        if self.labels is not None:
            lines.append("labels " + " ".join(g(v) for v in self.labels))
        lines.append("intercept " + " ".join(g(v) for v in self.intercept))
        lines.append("coef")
        flat = self.coef.reshape(self.n_blocks, -1)
        lines.extend(" ".join(g(v) for v in row) for row in flat)
        return "\n".join(lines) + "\n"

    def save(self, path):
        save_model(path, self)

    @classmethod
    def from_lines(cls, lines, fail):
        """Parse a model file's lines; ``fail(lineno, problem)`` raises."""
        header, where = {}, {}
        k = 1
        while k < len(lines) and lines[k].strip() != "coef":
            tokens = lines[k].split()
            if tokens:
                if tokens[0] in header:
                    fail(k + 1, f"{tokens[0]} given twice")
                header[tokens[0]] = tokens[1:]
                where[tokens[0]] = k + 1
            k += 1
        if k >= len(lines):
            fail(len(lines), "truncated DSG model: no 'coef' line")
        known = {"solver", "svm_type", "loss", "loss_param", "kernel_type", "gamma", "seed",
                 "n_features", "block_size", "n_blocks", "n_outputs", "labels", "intercept"}
        for key in header:
            if key not in known:
                fail(where[key], f"unknown keyword {key[:40]!r} in a DSG model header")

        def one(key, convert, what, check=lambda v: True):
            if key not in header:
                fail(k + 1, f"DSG model header has no {key!r}")
            if len(header[key]) != 1:
                fail(where[key], f"{key}: expected one value")
            try:
                value = convert(header[key][0])
            except ValueError:
                fail(where[key], f"{key}: {header[key][0][:40]!r} is not {what}")
            if not check(value):
                fail(where[key], f"{key}: invalid value {header[key][0][:40]!r}")
            return value

        def floats(key, count):
            values = header.get(key)
            if values is None or len(values) != count:
                fail(where.get(key, k + 1), f"{key}: expected {count} numbers")
            try:
                arr = np.array([float(v) for v in values])
            except ValueError:
                fail(where[key], f"{key}: not a list of numbers")
            if not np.all(np.isfinite(arr)):
                fail(where[key], f"{key}: non-finite value")
            return arr

        solver = one("solver", str, "a solver", lambda v: v in ("dsg", "udsg", "cdsg"))
        svm_type = one("svm_type", int, "an integer", lambda v: v in _TASKS)
        loss = one("loss", str, "a loss", lambda v: v in LOSSES)
        loss_param = one("loss_param", float, "a number", math.isfinite)
        kernel_type = one("kernel_type", int, "an integer", lambda v: v in (2, 5))
        gamma = one("gamma", float, "a number", lambda v: math.isfinite(v) and v > 0)
        seed = one("seed", int, "an integer", lambda v: 0 <= v < 2**64)
        n_features = one("n_features", int, "an integer", lambda v: v >= 1)
        block_size = one("block_size", int, "an integer", lambda v: v >= 1)
        n_blocks = one("n_blocks", int, "an integer", lambda v: v >= 0)
        n_outputs = one("n_outputs", int, "an integer", lambda v: v >= 1)
        labels = None
        if svm_type == 0:
            if "labels" not in header:
                fail(k + 1, "classification DSG model without 'labels'")
            labels = floats("labels", len(header["labels"]))
            if labels.size < 2 or n_outputs not in (1, labels.size):
                fail(where["labels"], f"{labels.size} labels do not fit {n_outputs} outputs")
        intercept = floats("intercept", n_outputs)
        body = lines[k + 1:]
        if len(body) != n_blocks:
            fail(min(len(lines), k + 2 + n_blocks),
                 f"expected {n_blocks} coefficient lines, found {len(body)}")
        width = block_size * n_outputs
        coef = np.empty((n_blocks, width))
        for b, line in enumerate(body):
            tokens = line.split()
            if len(tokens) != width:
                fail(k + 2 + b, f"expected {width} coefficients, found {len(tokens)}")
            try:
                coef[b] = [float(t) for t in tokens]
            except ValueError:
                fail(k + 2 + b, "coefficient is not a number")
            if not np.all(np.isfinite(coef[b])):
                fail(k + 2 + b, "non-finite coefficient")
        return cls(solver=solver, loss=loss, loss_param=loss_param, svm_type=svm_type,
                   kernel_type=kernel_type, gamma=gamma, seed=seed, n_features=n_features,
                   block_size=block_size, labels=labels,
                   coef=coef.reshape(n_blocks, block_size, n_outputs), intercept=intercept)


# ---------------------------------------------------------------- training

class DSGTrainer:
    """Training state of DSG between chunks of data (Algorithm 1 resumed).

    Each call of :meth:`fit_rows` visits the given rows once in a seeded
    random order: chunk ``c`` (counting every call, from 0) is ordered by
    ``permutation(n_rows, seed=stream_key(seed, "sampling"), stream=c)``, so
    ``fit`` with E epochs equals E calls on the whole data.
    """

    def __init__(self, hyper, targets):
        self.h = hyper
        self.targets = targets
        F, K = hyper["block_size"], targets.n_outputs
        self.coef = np.zeros((_MIN_CAPACITY, F, K))
        self.intercept = np.zeros(K)
        self.avg_coef = np.zeros((_MIN_CAPACITY, F, K)) if hyper["average"] else np.zeros((1, F, K))
        self.avg_intercept = np.zeros(K)
        self.scalars = np.array([1.0, 0.0])       # lazy scale, iterates averaged
        # CDSG's beta_j per block and output, under the same lazy scale
        self.beta = np.zeros((_MIN_CAPACITY, K)) if hyper["solver"] == "cdsg" else None
        self.n_old_updates = 0
        self.stride = (hyper["n_features"] + 1) * F
        self.cache_capacity = int(hyper["cache_mb"] * 2**20 // (8 * self.stride))
        self.cache = np.zeros(0)
        self.n_blocks = 0
        self.n_iter = 0
        self.n_chunks = 0
        self.feature_evals = 0
        self.loss_sum = 0.0
        self.n_seen = 0
        self.seconds = 0.0
        self.sampling_key = stream_key(hyper["seed"], "sampling")
        self.progress = None        # kernsolve._progress.Progress, or None
        self.planned_iter = None    # iterations of the whole run, when known

    def _reserve(self, n_new):
        need = self.n_blocks + n_new
        if need > self.coef.shape[0]:
            cap = max(need, 2 * self.coef.shape[0])
            self.coef = _grown(self.coef, cap)
            if self.h["average"]:
                self.avg_coef = _grown(self.avg_coef, cap)
            if self.beta is not None:
                self.beta = _grown(self.beta, cap)
        blocks = min(need, self.cache_capacity)
        if blocks * self.stride > self.cache.shape[0]:
            blocks = min(self.cache_capacity, max(blocks, 2 * self.cache.shape[0] // self.stride))
            grown = np.empty(blocks * self.stride)
            grown[:self.cache.shape[0]] = self.cache
            self.cache = grown

    def fit_rows(self, X, y, n_rows_used=None, n_jobs=None):
        """One visit of (a prefix of a seeded permutation of) the rows of X."""
        t = time.perf_counter()
        X = as_canonical(X)
        if X.shape[1] != self.h["n_features"]:
            raise ValueError(f"X has {X.shape[1]} features; this model was started with "
                             f"{self.h['n_features']}")
        targets = self.targets.encode(y)
        order = permutation(X.shape[0], self.sampling_key, self.n_chunks)
        if n_rows_used is not None:
            order = order[:n_rows_used]
        self.n_chunks += 1
        B = self.h["batch_size"]
        self._reserve(-(-order.size // B))
        cached = min(self.cache.shape[0] // self.stride, self.cache_capacity)
        # Slices of whole batches: the loop resumes exactly where it stopped
        # (same bits as one call), and between slices the progress line is
        # updated and Ctrl-C is seen.
        step = B * _SLICE_BATCHES
        for start in range(0, order.size, step):
            n_blocks, n_iter, evals, status, loss_sum, n_old = _c.fit_chunk(
                X, targets, order[start:start + step], self.h, self.coef, self.intercept,
                self.scalars, self.cache if cached else np.zeros(1), cached,
                self.avg_coef, self.avg_intercept, self.n_blocks, self.n_iter,
                resolve_n_jobs(n_jobs), self.beta)
            if status == 1:
                raise ValueError(f"DSG diverged at iteration {n_iter} (a prediction became "
                                 f"infinite or NaN); use a smaller --step than "
                                 f"{self.h['step']:g} or a larger --t0")
            if status != 0:
                raise MemoryError("DSG: out of memory for per-thread scratch")
            self.n_blocks, self.n_iter = n_blocks, n_iter
            self.feature_evals += evals
            self.n_old_updates += n_old
            self.loss_sum += loss_sum
            self.n_seen += min(step, order.size - start)
            if self.progress is not None:
                self._report()
        self.seconds += time.perf_counter() - t
        return self

    def _report(self):
        state = {"n_iter": self.n_iter, "n_feature_evals": self.feature_evals}
        if self.planned_iter:
            state["max_iter"] = self.planned_iter
            # the work of iteration t grows like t (it evaluates t blocks)
            state["fraction"] = min(1.0, (self.n_iter / self.planned_iter) ** 2)
        self.progress(state)

    def model(self):
        """The current iterate (or the running average with ``--average 1``)."""
        n = self.n_blocks
        if self.h["average"] and self.scalars[1] > 0:
            coef, intercept = self.avg_coef[:n].copy(), self.avg_intercept.copy()
        else:
            coef, intercept = self.coef[:n] * self.scalars[0], self.intercept.copy()
        stats = {"n_iter": self.n_iter, "n_blocks": n,
                 "n_random_features": n * self.h["block_size"],
                 "feature_evals": self.feature_evals, "seconds": self.seconds,
                 "mean_loss": self.loss_sum / max(self.n_seen, 1), "lambda": self.h["lam"],
                 "n_old_updates": self.n_old_updates}
        return DSGModel(solver=self.h["solver"], loss=self.h["loss_name"],
                        loss_param=self.h["loss_param"], svm_type=self.h["svm_type"],
                        kernel_type=self.h["kernel_type"], gamma=self.h["gamma"],
                        seed=self.h["seed"], n_features=self.h["n_features"],
                        block_size=self.h["block_size"], labels=self.targets.labels,
                        coef=coef, intercept=intercept, stats=stats)


def _grown(arr, rows):
    out = np.zeros((rows,) + arr.shape[1:])
    out[:arr.shape[0]] = arr
    return out


def _info(param, text):
    if not param.quiet:
        sys.stdout.write(text)
        sys.stdout.flush()


def train(y, X, options="", n_jobs=None):
    """Train a DSG model (``--solver dsg``); see ``doc/dsg.md``.

    ``y``, ``X`` as for :func:`kernsolve.train`; ``options`` in the common
    grammar.  Returns a :class:`DSGModel`.
    """
    t = time.perf_counter()
    param = options.copy() if isinstance(options, Parameters) else parse_options(options)
    if n_jobs is None:
        n_jobs = param.n_jobs
    check_parameters(param)
    y = _as_targets(y, 0 if _task(param) == "classification" else 3)
    X = as_canonical(X)
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} entries")
    if X.shape[1] == 0:
        raise ValueError("X has no features")
    targets = _Targets.from_data(_task(param), None, y)
    loss = _loss(param, 0 if targets.labels is None else targets.labels.size)
    targets.loss = loss
    h = _hyper(param, X.shape[0], X.shape[1], loss, resolve_gamma(param, X))
    trainer = DSGTrainer(h, targets)
    epochs = h["epochs"]
    full, part = int(epochs), epochs - int(epochs)
    n_part = max(1, int(round(part * X.shape[0]))) if part > 0 else 0
    B = h["batch_size"]
    trainer.planned_iter = -(-(full * X.shape[0] + n_part) // B)
    if not param.quiet:
        trainer.progress = Progress(param.solver)
    try:
        for _ in range(full):
            trainer.fit_rows(X, y, n_jobs=n_jobs)
        if n_part:
            trainer.fit_rows(X, y, n_rows_used=n_part, n_jobs=n_jobs)
    finally:
        if trainer.progress is not None:
            trainer.progress.close()
    model = trainer.model()
    model.stats["wall_seconds"] = time.perf_counter() - t
    model.stats["n_threads"] = resolve_n_jobs(n_jobs)
    _info(param, f"optimization finished, #iter = {trainer.n_iter}\n"
                 f"{param.solver}: {model.n_blocks} blocks of {h['block_size']} random "
                 f"features, gamma = {h['gamma']:g}, lambda = {h['lam']:g}, "
                 f"mean training loss = {model.stats['mean_loss']:g}"
                 + (f", {trainer.n_old_updates} old-block updates" if param.solver != "dsg"
                    else "") + "\n")
    return model


def train_model(y, X, param, *, n_jobs=None, sample_weight=None):
    """``kernsolve.train`` for ``--solver dsg|udsg|cdsg`` (the spec's ``train``):
    ``param`` is an unchecked copy of the options."""
    if sample_weight is not None:
        raise ValueError("sample_weight is not supported by the DSG solvers")
    param.check()
    return train(y, X, param, n_jobs=n_jobs)


def _stream_size(path):
    """Bytes of the data stream: the file size, or for a compressed file the
    decompressed size (byte windows are positions in the decompressed data)."""
    if _compression(path) is None:
        return os.path.getsize(path)
    size = 0
    with _open_read(path) as f:
        while True:
            block = f.read(1 << 20)
            if not block:
                return size
            size += len(block)


def train_file(path, options="", *, chunk_bytes=64 << 20, n_features=None, n_jobs=None):
    """Train DSG from a LIBSVM file read in byte ranges of ``chunk_bytes``, so
    the data never has to be in memory at once.

    A first pass over the file collects the labels (in LIBSVM's order), the
    number of rows (for ``-c``'s lambda = 1/(C n)) and the largest feature
    index; it is skipped for regression with ``n_features`` and ``--lambda``
    given.  Each epoch then reads the file window by window and calls
    :meth:`DSGTrainer.fit_rows` once per window that holds lines (in a seeded
    order within it); ``--epochs`` is rounded up to whole passes.  ``-g
    median`` uses the first window that holds lines.  With one window this is
    :func:`train` on the whole file, bit for bit.  A malformed line raises
    ``DataFormatError`` naming the file and line; its ``trainer`` attribute
    holds the training state up to the window before it (None when the first
    pass found it).
    """
    param = options.copy() if isinstance(options, Parameters) else parse_options(options)
    if n_jobs is None:
        n_jobs = param.n_jobs
    check_parameters(param)
    chunk_bytes = int(chunk_bytes)
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be >= 1, got {chunk_bytes}")
    size = _stream_size(path)
    windows = [(o, min(chunk_bytes, size - o)) for o in range(0, max(size, 1), chunk_bytes)]
    task = _task(param)
    width, n_rows, y_all = 0, 0, None
    if n_features is None or task == "classification" or "lambda" not in param.extra:
        seen = []
        for offset, length in windows:
            try:
                y, X = read_problem(path, n_features=n_features or 2**31 - 1,
                                    zero_based=False, offset=offset, length=length,
                                    n_jobs=n_jobs, for_training=True)
            except DataFormatError as exc:
                exc.trainer = None
                raise
            if n_features is None:
                width = max(width, int(X.indices.max()) + 1 if X.nnz else 0)
            seen.append(y)
            n_rows += y.shape[0]
        if n_rows == 0:
            raise DataFormatError(f"{path}: no data lines")
        y_all = np.concatenate(seen)
    n_features = int(n_features or max(width, 1))
    targets = _Targets.from_data(task, None, y_all)
    loss = _loss(param, 0 if targets.labels is None else targets.labels.size)
    targets.loss = loss
    trainer = None
    for epoch in range(max(1, math.ceil(_number(param.extra, "epochs", low=0)))):
        for offset, length in windows:
            try:
                y, X = read_problem(path, n_features=n_features, zero_based=False,
                                    offset=offset, length=length, n_jobs=n_jobs)
            except DataFormatError as exc:
                exc.trainer = trainer
                raise
            if y.shape[0] == 0:         # a window inside one long line
                continue
            if trainer is None:
                gamma = resolve_gamma(param, X)
                trainer = DSGTrainer(_hyper(param, n_rows or y.shape[0], n_features, loss,
                                            gamma), targets)
            trainer.fit_rows(X, y, n_jobs=n_jobs)
    if trainer is None:
        raise DataFormatError(f"{path}: no data lines")
    model = trainer.model()
    _info(param, f"optimization finished, #iter = {trainer.n_iter}\n")
    return model
