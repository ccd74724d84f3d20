"""The DSG model (:class:`DSGModel`): blocks of random-feature coefficients,
prediction from them (Algorithm 2) and the model file format.

The model holds one block of ``block_size`` coefficients per iteration and the
seed, never the random directions, so its size is O(iterations), independent
of the input dimension.  Its file starts with ``kernsolve_model dsg``
(``doc/dsg.md`` describes it); ``kernsolve.load_model`` dispatches on that line.
"""
import numpy as np
import scipy.sparse as sp

from . import _dsg as _c
from .losses import LOSS
from .options import _TASKS
from ..._constants import C_SVC, EPSILON_SVR, FOURIER_KERNELS, KERNEL_NAMES, ONE_CLASS
from ..._features import _check_gamma, _feature_kernel
from ..._kernels import as_canonical
from ..._model_kind import ModelKind
from ..._model_text import MAX_INDEX, ModelHeader, parse_floats
from ..._predict import _prepare_X
from ..._threads import resolve_n_jobs
from ..._validation import check_allocation
from ..._sparse import issparse

__all__ = ["DSGModel", "check_directions", "check_single_range"]

_FLOAT32_MAX = float(np.finfo(np.float32).max)


def check_single_range(X, precision, what):
    """``--precision single`` rounds every value of X to a float: refuse a
    value beyond the float range (it would become infinite), naming it."""
    if precision != "single":
        return
    values = X.data if issparse(X) else X
    if values.size:
        big = max(float(values.max()), -float(values.min()))
        if big > _FLOAT32_MAX:
            raise ValueError(f"{what}: a value of magnitude {big:g} is beyond single "
                             f"precision's range ({_FLOAT32_MAX:.7g}); use --precision double")


def check_directions(n_features, block_size, blocks, what):
    """DSG draws each block's directions densely, ``(n_features + 1) * block_size``
    doubles whatever the data hold: refuse (naming the size) before ``blocks``
    of them are allocated if that is more than kernsolve allows itself."""
    check_allocation(8 * blocks * (n_features + 1) * block_size,
                     f"{what}: the random directions, {n_features} x {block_size} "
                     f"numbers per block,",
                     "DSG draws a direction for every feature index up to the largest: "
                     "renumber the features densely, or use a smaller --block-size")


class DSGModel(ModelKind):
    """A DSG model: blocks of random-feature coefficients plus what regenerates
    the features (kernel, gamma, seed, block size).

    Attributes
    ----------
    solver : str
        ``"dsg"``, ``"udsg"`` or ``"cdsg"``.
    loss : str
        A name of :data:`~kernsolve.solvers.dsg.losses.LOSS`.
    loss_param : float
        Huber's delta, the epsilon of the epsilon-insensitive loss, or the
        quantile tau (0 otherwise).
    svm_type : int
        0 classification, 2 novelty detection, 3 regression.
    kernel_type : int
        2 (RBF) or 5 (Laplacian); ``gamma`` its parameter.
    seed : int
        Seed of the random features (``--seed``).
    precision : str
        ``"double"`` or ``"single"``: the precision of the features' sums
        (``--precision``), which prediction repeats.
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
                 n_features, block_size, labels, coef, intercept, stats=None,
                 precision="double"):
        self.solver, self.loss, self.loss_param = solver, loss, float(loss_param)
        self.precision = precision
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

    @property
    def n_sv(self):
        """0: a DSG model is linear in its random features and keeps no training row."""
        return 0

    def __repr__(self):
        return (f"DSGModel(solver={self.solver}, loss={self.loss}, "
                f"kernel={KERNEL_NAMES[self.kernel_type]}, "
                f"gamma={self.gamma:g}, n_blocks={self.n_blocks}, "
                f"block_size={self.block_size}, n_outputs={self.n_outputs})")

    # -- prediction (Algorithm 2)
    def _check_X(self, X):
        X = as_canonical(_prepare_X(X))         # also takes LIBSVM's list-of-dicts rows
        d = X.shape[1]
        if d > self.n_features:
            extra = X[:, self.n_features:]
            nonzero = int(np.count_nonzero(extra.data if issparse(extra) else extra))
            if nonzero:
                raise ValueError(f"X has {d} columns with values beyond column "
                                 f"{self.n_features}, but the model was trained on "
                                 f"{self.n_features} features")
            X = X[:, :self.n_features]
            X = as_canonical(X.tocsr() if issparse(X) else np.ascontiguousarray(X))
        elif d < self.n_features:
            if issparse(X):
                X = sp.csr_matrix((X.data, X.indices, X.indptr),
                                  shape=(X.shape[0], self.n_features))
            else:
                X = np.hstack([X, np.zeros((X.shape[0], self.n_features - d))])
            X = as_canonical(X)
        return X

    def decision_function(self, X, n_jobs=None):
        """f(x): shape (n_samples, n_outputs)."""
        check_directions(self.n_features, self.block_size, 1,
                         f"predicting with this DSG model ({self.n_features} features)")
        X = self._check_X(X)
        check_single_range(X, self.precision, "predicting with a --precision single DSG model")
        values = _c.decision_function(X, self.coef, self.intercept,
                                      _feature_kernel(self.kernel_type), self.gamma,
                                      self.seed, resolve_n_jobs(n_jobs),
                                      self.precision == "single")
        bad = ~np.isfinite(values).all(axis=1)
        if bad.any():
            raise ValueError(f"the DSG model's output is not finite for row "
                             f"{int(np.flatnonzero(bad)[0]) + 1}: w.x overflows for its "
                             f"random features (gamma {self.gamma:g}) with this row's values")
        return values

    def labels_from_values(self, values):
        """Predicted labels (classification), values (regression) or +1/-1 (novelty)."""
        if self.svm_type == EPSILON_SVR:
            return values[:, 0].copy()
        if self.svm_type == ONE_CLASS:
            return np.where(values[:, 0] >= 0, 1.0, -1.0)
        if self.labels.size == 1:       # trained on one class, as LIBSVM's model
            return np.full(values.shape[0], self.labels[0])
        if values.shape[1] == 1:
            return np.where(values[:, 0] > 0, self.labels[0], self.labels[1])
        return self.labels[np.argmax(values, axis=1)]

    def predict(self, X, n_jobs=None):
        return self.labels_from_values(self.decision_function(X, n_jobs))

    @property
    def is_regression(self):
        return self.svm_type == EPSILON_SVR

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
        return LOSS[self.loss].probabilities is not None

    def probabilities_from_values(self, values):
        """Class probabilities (n_samples, n_classes) in ``labels`` order; only
        for the logistic and softmax losses, whose model is a likelihood."""
        if not self.has_probability:
            raise ValueError(f"a DSG model with loss {self.loss!r} gives no probabilities "
                             "(train with --loss logistic or softmax)")
        if self.labels.size == 1:
            return np.ones((values.shape[0], 1))
        if values.shape[1] == 1:
            p = 1.0 / (1.0 + np.exp(-values[:, 0]))
            return np.column_stack([p, 1.0 - p])
        if LOSS[self.loss].probabilities == "one-vs-rest":     # normalise the sigmoids
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
                 *([f"precision {self.precision}"] if self.precision != "double" else []),
                 f"n_features {self.n_features}",
                 f"block_size {self.block_size}",
                 f"n_blocks {self.n_blocks}",
                 f"n_outputs {self.n_outputs}"]
        if self.labels is not None:
            lines.append("labels " + " ".join(g(v) for v in self.labels))
        lines.append("intercept " + " ".join(g(v) for v in self.intercept))
        lines.append("coef")
        flat = self.coef.reshape(self.n_blocks, self.block_size * self.n_outputs)
        lines.extend(" ".join(g(v) for v in row) for row in flat)
        return "\n".join(lines) + "\n"

    @classmethod
    def from_lines(cls, lines, fail):
        """Parse a model file's lines; ``fail(lineno, problem)`` raises.

        The header is checked (``ModelHeader``), then the number of values on
        each coefficient line, before the coefficients are allocated: the
        array is never larger than the numbers the file holds.
        """
        header = ModelHeader(lines, fail, _HEADER, ("coef",))
        k = header.end
        solver = header.word("solver", ("dsg", "udsg", "cdsg"))
        svm_type = header.integer("svm_type")
        if svm_type not in _TASKS:
            fail(header.where["svm_type"], f"svm_type {svm_type} is not a DSG task")
        loss = header.word("loss", LOSS)
        loss_param = header.number("loss_param")
        kernel_type = header.integer("kernel_type")
        if kernel_type not in FOURIER_KERNELS:
            fail(header.where["kernel_type"], f"kernel_type {kernel_type} is not a DSG kernel")
        gamma = header.number("gamma", check=_check_gamma)
        seed = header.integer("seed", low=0, high=2 ** 64 - 1)
        # absent in files before it existed and in double-precision models
        precision = (header.word("precision", ("double", "single"))
                     if "precision" in header else "double")
        n_features = header.integer("n_features", low=1, high=MAX_INDEX)
        block_size = header.integer("block_size", low=1)
        n_blocks = header.integer("n_blocks", low=0)
        n_outputs = header.integer("n_outputs", low=1)
        labels = None
        if svm_type == C_SVC:
            if "labels" not in header:
                fail(k + 1, "classification DSG model without 'labels'")
            labels = header.labels("labels", len(header.values("labels")))
            if n_outputs not in (1, labels.size) or (labels.size == 1 and n_blocks):
                fail(header.where["labels"],
                     f"{labels.size} labels do not fit {n_outputs} outputs")
        intercept = header.numbers("intercept", n_outputs)
        body = lines[k + 1:]
        if len(body) != n_blocks:
            fail(min(len(lines), k + 2 + n_blocks),
                 f"expected {n_blocks} coefficient lines, found {len(body)}")
        width = block_size * n_outputs
        for b, line in enumerate(body):
            found = len(line.split())
            if found != width:
                fail(k + 2 + b, f"expected {width} coefficients, found {found}")
        coef = np.empty((n_blocks, width))
        for b, line in enumerate(body):
            coef[b] = parse_floats(fail, k + 2 + b, line.split(), "coefficient")
        return cls(solver=solver, loss=loss, loss_param=loss_param, svm_type=svm_type,
                   kernel_type=kernel_type, gamma=gamma, seed=seed, n_features=n_features,
                   block_size=block_size, labels=labels,
                   coef=coef.reshape(n_blocks, block_size, n_outputs), intercept=intercept,
                   precision=precision)


_HEADER = ("solver", "svm_type", "loss", "loss_param", "kernel_type", "gamma", "seed",
           "precision", "n_features", "block_size", "n_blocks", "n_outputs", "labels", "intercept")
