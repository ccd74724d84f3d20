"""scikit-learn-style estimators on EigenPro: ``EigenProRegressor``, ``EigenProClassifier``.

Both fit ``f(x) = sum_i alpha_i k(x_i, x)`` over the training points by
EigenPro-preconditioned SGD on the square loss (``kernsolve.solvers.eigenpro.train``); the
classifier fits one output per class on one-hot targets and predicts the class
of the largest output.  They follow the estimator contract of
``kernsolve.estimators.svm`` (parameters from ``__init__``, fitted attributes
with a trailing underscore, scikit-learn's messages) and do not import
scikit-learn.  By default (``centers="auto"``) they fit the model on 2000
centres by FALKON (``kernsolve.solvers.eigenpro.nystrom``) when n is larger,
which answers in seconds where the kernel expansion over all n rows costs
n^2 kernel values an epoch; on fewer rows, with an option of the SGD
iteration, or with ``centers=None``, they fit the expansion
(``eigen_directions=0`` is plain kernel SGD).
"""
from numbers import Real
from typing import Literal

import numpy as np

from ..solvers.eigenpro.centres import EXACT_CENTRES
from ..solvers.eigenpro.train import eigenpro_options, fit_eigenpro
from ..solvers.eigenpro.model import EigenProModel, decision_values
from ._base import (CACHE_SIZE, COEF0, DEGREE, N_JOBS, BaseEstimator, Interval, Rule, StrOptions,
                    check_feature_names, check_lengths, encode_classes, feature_names,
                    r2_score, regression_targets)
from .._constants import C_SVC, ESTIMATOR_KERNELS, GAMMA_KERNELS, PSD_KERNELS
from .._params import Parameters
from .._progress import Progress
from .._typing import RandomStateLike
from .._validation import check_X, column_or_1d, estimator_gamma, seed_of
from ..solvers.eigenpro import SPEC as _EIGENPRO
from .._cluster_centres import fit_estimator, is_collection

__all__ = ["EigenProRegressor", "EigenProClassifier"]

# scikit-learn's kernel names of the positive semi-definite kernels.
_KERNELS = {name: code for name, code in ESTIMATOR_KERNELS.items() if code in PSD_KERNELS}


class _BaseEigenPro(BaseEstimator):
    """Shared parameters, validation, fit and prediction of the EigenPro estimators."""

    # The estimator's own parameters, in the order of the checks.  The solver's
    # (eigen_directions ... features) are checked by eigenpro_options, with
    # defaults that depend on n.
    _parameter_constraints = {
        "kernel": Rule(StrOptions(sorted(_KERNELS), listed=True),
                       note="(EigenPro needs a positive semi-definite kernel function)"),
        "gamma": [StrOptions(("scale", "auto")),
                  Interval(Real, 0, None, closed="neither", text="a float > 0")],
        "degree": [DEGREE],
        "coef0": [COEF0],
        "n_jobs": [N_JOBS],
        "cache_size": [CACHE_SIZE],
        **{name: ["no_validation"] for name in (
            "eigen_directions", "subsample", "batch_size", "damping", "epochs", "step",
            "features", "centers", "lam", "precision")},
        "random_state": ["no_validation"],     # seed_of, when the seed is drawn
        "verbose": ["no_validation"],
    }

    # The options of the SGD iteration: one of them given, centers="auto"
    # fits the kernel expansion they belong to (the centres' model takes none).
    _SGD_OPTIONS = ("eigen_directions", "subsample", "batch_size", "step", "features")

    def __init__(self, *, kernel: str = "rbf",
                 gamma: float | Literal["scale", "auto"] = "scale", degree: int = 3,
                 coef0: float = 0.0, eigen_directions: int | None = None,
                 subsample: int | None = None, batch_size: int | None = None,
                 damping: float = 1.0, epochs: int = 10, step: float | None = None,
                 features: int | None = None,
                 centers: int | Literal["auto"] | None = "auto",
                 lam: float | None = None, precision: str | None = None,
                 cache_size: float = 100.0,
                 random_state: RandomStateLike = None, n_jobs: int | None = None,
                 verbose: bool = False) -> None:
        self._store_params(locals())

    # ------------------------------------------------------------ parameters

    def _centres(self, n):
        """p for the solver, or None for the kernel expansion: ``centers``, or
        with "auto" the command line's ``--centers auto`` (``centres.default_centres``:
        EXACT_CENTRES without ``subsample``) when n is larger and no SGD option is given.
        (Up to that n the expansion is cheap, n^2 kernel values an epoch, and
        all n rows as centres would make K_MM singular at duplicate rows.)"""
        if not (isinstance(self.centers, str) and self.centers == "auto"):
            return self.centers
        sgd = [key for key in self._SGD_OPTIONS if getattr(self, key) is not None]
        if sgd or self.damping != 1.0 or n <= EXACT_CENTRES:
            return None
        return "auto"

    def _options(self, n):
        """The solver options (validated by ``eigenpro_options``) and the kernel code."""
        self._validate_params()
        if self.kernel == "poly" and self.coef0 < 0:
            raise ValueError(f"{type(self).__name__}: the polynomial kernel with coef0 < 0 "
                             f"is not positive semi-definite; EigenPro needs coef0 >= 0, "
                             f"got {self.coef0!r}")
        extra = {"epochs": self.epochs, "damping": self.damping}
        for key in self._SGD_OPTIONS + ("lam", "precision"):
            value = getattr(self, key)
            if value is not None:
                extra["lambda" if key == "lam" else key] = value
        centers = self._centres(n)
        if centers is not None:             # damping has a default; CG has no damping
            extra["centers"] = centers
            del extra["damping"]
        # Defaults adapt to n: M = min(4800, n), m = min(256, n), k = min(160, M - 1).
        param = Parameters(solver=_EIGENPRO.name, cache_size=float(self.cache_size))
        param.extra = extra
        return int(_KERNELS[self.kernel]), eigenpro_options(param, n)

    # ------------------------------------------------------------ fit / predict

    def _fit_outputs(self, X, Y):
        """Validate, fit alpha (n, n_outputs); set the shared fitted attributes."""
        t, opts = self._options(X.shape[0])
        gamma = estimator_gamma(self.gamma, X) if t in GAMMA_KERNELS else 0.0
        if t in GAMMA_KERNELS and not gamma > 0:
            gamma = 1.0
        progress = Progress(_EIGENPRO.name) if self.verbose else None
        try:
            res = fit_eigenpro(X, Y, kernel_type=t, gamma=gamma, degree=int(self.degree),
                               coef0=float(self.coef0), options=opts,
                               seed=seed_of(self.random_state), n_jobs=self.n_jobs,
                               progress=progress)
        finally:
            if progress is not None:
                progress.close()
        centres = X if res.centres is None else X[res.centres]
        self._fitted(res, centres, gamma, t, opts, X.shape[1],
                     getattr(self, "_fit_feature_names", None))
        return res

    def _fitted(self, res, centres, gamma, t, opts, n_features, names):
        """The fitted attributes shared by both estimators (``centres``: the
        expansion's rows; ``names``: the columns' names, or None)."""
        param = Parameters(svm_type=int(C_SVC), kernel_type=t, degree=int(self.degree),
                           gamma=gamma if t in GAMMA_KERNELS else None, coef0=float(self.coef0),
                           solver=_EIGENPRO.name, seed=seed_of(self.random_state))
        D = opts["features"]
        alpha = res.alpha.reshape(centres.shape[0] if D is None else D, -1)
        self.model_ = EigenProModel(param=param, labels=np.arange(alpha.shape[1],
                                                                  dtype=np.float64),
                                    centres=centres if D is None else None, coef=alpha,
                                    stats=res.stats, features=D)
        self.n_features_in_ = int(n_features)
        if names is not None and len(names) == n_features:
            self.feature_names_in_ = names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.centres_ = centres if D is None else None
        self.centre_indices_ = res.centres
        self.eigenvalues_ = res.eigenvalues
        self.subsample_indices_ = res.subsample
        self.step_ = float(res.step)
        self.n_iter_ = int(res.stats["epochs"])
        self.n_steps_ = int(res.stats["n_iter"])
        self._gamma = gamma

    def _validated_X(self, X, fit=False):
        name = type(self).__name__
        if fit:
            self._fit_feature_names = feature_names(X)
        else:
            self._check_is_fitted()
            check_feature_names(self, X)
        X = check_X(X, owner=name)
        if not fit and X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {name} is expecting "
                             f"{self.n_features_in_} features as input.")
        return X

    def _outputs(self, X):
        X = self._validated_X(X)
        return decision_values(X, self.model_, self.n_jobs)

    def fit(self, X, y):
        """Fit the kernel expansion: one output (regressor) or one per class
        on one-hot targets (classifier).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Targets (regressor) or class labels: numbers, strings, booleans...
            (classifier).

        X may also be a Dask collection (``dask.array`` with numpy or
        scipy.sparse chunks, ``dask.dataframe``) with ``centers=p`` and a
        ``dask.distributed`` client: the rows stay on the workers and the
        fitted attributes are those of ``fit`` on the concatenated rows
        (``doc/cluster.md``).

        Returns
        -------
        self
        """
        if is_collection(X):
            return fit_estimator(self, X, y)
        X = self._validated_X(X, fit=True)
        Y, fitted = self._fit_targets(X, y)
        res = self._fit_outputs(X, Y)
        alpha = np.asarray(res.alpha, dtype=np.float64)
        self.dual_coef_ = alpha.ravel() if Y.ndim == 1 else alpha
        for name, value in fitted.items():
            setattr(self, name, value)
        return self


class EigenProRegressor(_BaseEigenPro):
    """Kernel least-squares regression by EigenPro (preconditioned mini-batch SGD).

    By default (``centers="auto"``), on more than 2000 rows, a kernel
    expansion over p = 2000 centres drawn from the rows, fitted to the
    ridge-regularised square loss by FALKON's preconditioned conjugate
    gradient: seconds on a9a and Fashion-MNIST.  On at most 2000 rows, with
    ``centers=None``, or with any of ``eigen_directions``, ``subsample``,
    ``batch_size``, ``step``, ``features`` or a ``damping`` other than 1, it
    minimises ``(1/2n) sum_i (f(x_i) - y_i)^2`` over
    ``f(x) = sum_i alpha_i k(x_i, x)`` on all n rows without a regulariser:
    the epochs are the regularisation (early stopping), as in Ma & Belkin's
    EigenPro; that costs n^2 kernel values an epoch.  See ``doc/eigenpro.md``.

    Parameters
    ----------
    kernel : {"rbf", "laplacian", "linear", "poly"}, default="rbf"
        A positive semi-definite kernel.
    gamma : {"scale", "auto"} or float, default="scale"
        scikit-learn's rules: "scale" is 1 / (n_features * X.var()).
    degree : int, default=3
    coef0 : float, default=0.0
        Polynomial kernel offset (>= 0).
    eigen_directions : int or None, default=None
        k, the preconditioner's eigen-directions; 0 is plain kernel SGD.  None:
        min(160, M - 1), capped by the numerical rank of the subsample matrix.
    subsample : int or None, default=None
        M, the subsample that estimates the eigensystem; None: min(4800, n).
        With ``centers``: q auxiliary rows from which FALKON's preconditioner
        is approximated (no ``p^3`` factors); None: the exact factors.
    batch_size : int or None, default=None
        m; None: min(256, n).
    damping : float in (0, 1], default=1.0
        tau of the preconditioner.
    epochs : int, default=10
    step : float or None, default=None
        Step size; None: the paper's rule from lambda_{k+1} and m.
    features : int or None, default=None
        D: fit a linear model on D random Fourier features (rbf, laplacian)
        instead of the kernel expansion (the paper's Table 1).
    centers : int, "auto" or None, default="auto"
        p: fit a kernel expansion over p centres drawn from the rows (seeded)
        on the ridge-regularised square loss, by FALKON's preconditioned
        conjugate gradient (``--centers``); ``epochs`` are then its
        iterations.  Takes none of eigen_directions, batch_size, step,
        features.  "auto": p = 2000 when n > 2000, unless one of those, or
        ``subsample``, or a ``damping`` other than 1 is given; otherwise the
        kernel expansion over all rows.  None: the kernel expansion.
    lam : float or None, default=None
        The ridge lambda with ``centers`` (``--lambda``, as
        ``exact_kernel_ridge``'s ``lam``); None: 1e-6.
    precision : {"double", "single", "half"} or None, default=None
        ``K(X, centres)`` stored and multiplied in double or single precision,
        or stored in float16 and multiplied in float32 (rbf, laplacian), with
        ``centers`` (``--precision``); None: double.
    cache_size : float, default=100
        MB of ``K(X, centres)`` row blocks kept between iterations (``-m``,
        with ``centers``); the result does not depend on it.
    random_state : int, RandomState or None, default=None
        Seed of the subsample and of the batch order (None means 0).
    n_jobs : int or None, default=None
        Threads of the kernel engine; results do not depend on it.
    verbose : bool, default=False
        The progress line on stderr during ``fit`` (as the command line's,
        without ``-q``), and what a long fit will cost, said before it starts.

    Attributes
    ----------
    dual_coef_ : ndarray of shape (n_samples,) or (features,) or (centers,)
        alpha, one coefficient per training point (centre), or W on the
        random features.
    centres_ : ndarray or sparse matrix, shape (n_centres, n_features), or None
        The p centres, or the training points (the kernel expansion).
    centre_indices_ : ndarray of shape (centers,) or None
        Rows of X that are the centres (``centers=p``).
    eigenvalues_ : ndarray of shape (k + 1,)
        Top eigenvalues of the subsample kernel matrix divided by M (empty
        with ``centers``).
    step_ : float
        nan with ``centers``.
    n_iter_ : int
        Epochs (conjugate-gradient iterations with ``centers``) run.
    model_ : EigenProModel
    """

    _estimator_type = "regressor"

    def _fit_targets(self, X, y):
        """(y as float64, no further fitted attributes)."""
        y = regression_targets(y, type(self).__name__)
        check_lengths(X, y)
        return y, {}

    def predict(self, X):
        """Predicted targets, shape (n_samples,)."""
        return self._outputs(X)[:, 0]

    def score(self, X, y):
        """Coefficient of determination R^2."""
        return r2_score(self, X, y)


class EigenProClassifier(_BaseEigenPro):
    """Multi-class kernel least squares by EigenPro: one-hot targets, argmax prediction.

    One output per class (``classes_`` order), fitted to the one-hot encoding
    of y by EigenPro-preconditioned SGD on the square loss; the predicted class
    is the one with the largest output.  Parameters as
    :class:`EigenProRegressor`.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    dual_coef_ : ndarray of shape (n_samples, n_classes)
        alpha, one column per class.
    centres_, eigenvalues_, step_, n_iter_, model_ :
        As :class:`EigenProRegressor`.
    """

    _estimator_type = "classifier"

    def _fit_targets(self, X, y):
        """(one-hot targets, {"classes_": the sorted classes})."""
        classes, y_enc = encode_classes(y, type(self).__name__)
        check_lengths(X, y_enc)
        if len(classes) < 2:
            raise ValueError(f"The number of classes has to be greater than one; got "
                             f"{len(classes)} class")
        Y = np.zeros((y_enc.size, len(classes)))
        Y[np.arange(y_enc.size), y_enc] = 1.0
        return Y, {"classes_": classes}

    def decision_function(self, X):
        """Outputs per class (n_samples, n_classes); binary: output 1 minus output 0."""
        out = self._outputs(X)
        if out.shape[1] == 2:
            return out[:, 1] - out[:, 0]
        return out

    def predict(self, X):
        """The class of the largest output (the first one on ties)."""
        out = self._outputs(X)
        return self.classes_[np.argmax(out, axis=1)]

    def score(self, X, y):
        """Mean accuracy."""
        y = column_or_1d(y, type(self).__name__)
        return float(np.mean(self.predict(X) == y))
