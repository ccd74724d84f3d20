"""The machinery shared by the SVM estimators of :mod:`kernsolve.estimators.svm`.

``_BaseSVM`` owns what every LIBSVM-type estimator does: the parameters they
all take (declared once in ``_parameter_constraints``) turned into
:class:`~kernsolve.Parameters`, the solver and ``solver_options`` checks,
training data in LIBSVM's layout (callable and precomputed kernels), the call
of :func:`kernsolve.train` and the fitted attributes common to all.
``_BaseSVC`` adds the one-vs-one classifiers (class order, class weights,
the binary sign flip, ``ovr`` values, probabilities), ``_BaseSVR`` the
regressors; the public classes declare only their own parameters.
"""
import dataclasses
import hashlib
import sys
import warnings
from numbers import Integral

import numpy as np
import scipy.sparse as sp

from .._constants import ESTIMATOR_KERNELS as _KERNELS
from .._constants import GAMMA_KERNELS, PRECOMPUTED, SvmType
from .._kernels import Canonical
from .._api import train
from .._errors import IterationLimitWarning, twin
from .._model import _check_model
from .._params import Parameters, letter_option, option_key
from .._predict import decision_function, ovo_vote, predict_probability
from ..solvers import AUTO, DEFAULT_SOLVER, REGISTRY, auto, option_names, spec_for
from ..solvers.libsvm.formulations import WarmStart
from .._validation import (check_sample_weight, check_X, column_or_1d, estimator_gamma,
                           is_number, seed_of)
from ._base import (CACHE_SIZE, COEF0, DEGREE, N_JOBS, BaseEstimator, ConvergenceWarning,
                    Interval, InstanceOf, NotFittedError, Rule, StrOptions, available_if,
                    check_feature_names, declared, check_lengths, encode_classes, feature_names,
                    n_samples, r2_score, regression_targets, sparse_container, type_name)
from .._sparse import issparse

# LIBSVM (and kernsolve) read gamma = 0 as "1/n_features"; scikit-learn means a
# constant kernel.  The smallest positive double gives that constant kernel.
_TINY_GAMMA = float(np.nextafter(0.0, 1.0))

# C > 0, and C = inf (the hard margin) as scikit-learn accepts it: LIBSVM's
# C-SVC and epsilon-SVR on SMO train it (kernsolve.Parameters checks the rest).
C_OR_INF = declared(letter_option("c"), text="a number > 0 (or inf)")

def _status(stats):
    """A training's status: "ok", or why it stopped early ("max_iter")."""
    return stats.get("status", "ok")


# scikit-learn 1.9 deprecated SVC's and NuSVC's ``probability`` (and
# ``probA_``/``probB_``) with FutureWarnings; kernsolve keeps them and does not
# warn: a kernsolve user's probability=True keeps working (issue 36).


def _driver_solvers(svm_type):
    """The solvers these estimators run for SVM type ``svm_type`` (-s): those
    of LIBSVM's one-vs-one driver that train it (the registry's order)."""
    return tuple(name for spec in REGISTRY if spec.uses_driver and svm_type in spec.svm_types
                 for name in spec.names)


def _samples_at(X, index):
    """The samples ``index`` of X as given to a callable kernel: rows of an array
    (numbers as float64) or of a sparse matrix (CSR), items of a list."""
    if issparse(X):
        return sp.csr_matrix(X)[index]
    try:
        arr = np.asarray(X)
    except (TypeError, ValueError):      # ragged rows: not an array
        arr = None
    if arr is not None and arr.ndim == 2 and arr.dtype.kind in "biuf":
        return np.asarray(arr[index], dtype=np.float64)
    return [X[int(i)] for i in index]


# --------------------------------------------------------------------------
# the shared SVM machinery
# --------------------------------------------------------------------------

class _BaseSVM(BaseEstimator):
    """What every SMO estimator shares: parameters -> Parameters, data -> train/predict."""

    _svm_type: SvmType | None = None

    # Every parameter of the LIBSVM-type estimators; each class pops those it
    # does not take (C, nu, epsilon) and the classifiers add theirs.  The
    # order is the order of the checks.
    _parameter_constraints = {
        "kernel": Rule(StrOptions(sorted(_KERNELS), listed=True), callable, named=False),
        "C": [C_OR_INF],
        "nu": [declared(letter_option("n"))],
        "epsilon": [declared(letter_option("p"))],
        "degree": [DEGREE],
        "gamma": [StrOptions(("scale", "auto")),
                  declared(letter_option("g"), text="a float >= 0")],
        "coef0": [COEF0],
        "tol": [declared(letter_option("e"), text="a number > 0")],
        "cache_size": [CACHE_SIZE],
        "max_iter": [Interval(Integral, -1, -1, closed="both", text="-1 (no limit)"),
                     Interval(Integral, 1, None, closed="left", text="a positive integer")],
        "n_jobs": [N_JOBS],
        "shrinking": ["no_validation"],
        "verbose": ["no_validation"],
    }

    # ------------------------------------------------------------ parameters

    def _kernel_code(self):
        """The kernel's LIBSVM code (a callable is trained as precomputed)."""
        return int(PRECOMPUTED) if callable(self.kernel) else int(_KERNELS[self.kernel])

    def _gamma_value(self, X, t):
        """The numeric gamma: scikit-learn's 'scale'/'auto' rules, floats as given."""
        if t not in GAMMA_KERNELS:
            return 0.0
        return estimator_gamma(self.gamma, X)

    def _parameters(self, t, gamma, weight=None, probability=False, seed=0, bias=True,
                    solver=DEFAULT_SOLVER, extra=None):
        if t in GAMMA_KERNELS:
            gamma = gamma if gamma > 0 else _TINY_GAMMA
        else:
            gamma = None
        return Parameters(
            svm_type=int(self._svm_type), kernel_type=t, degree=int(self.degree),
            gamma=gamma, coef0=float(self.coef0),
            C=float(getattr(self, "C", 1.0)), nu=float(getattr(self, "nu", 0.5)),
            p=float(getattr(self, "epsilon", 0.1)), cache_size=float(self.cache_size),
            eps=float(self.tol), shrinking=bool(self.shrinking),
            probability=bool(probability), weight=dict(weight or {}),
            quiet=not bool(getattr(self, "verbose", False)), solver=solver, bias=bool(bias),
            n_jobs=None, seed=int(seed), extra=dict(extra or {}))

    # ------------------------------------------------------------ data

    def _fit_X(self, X):
        """Validated training data, and what is handed to ``train`` (LIBSVM's layout).

        With a callable kernel X is kept as given (it may be a list of strings
        or a lil matrix: the kernel, not kernsolve, reads it) and its Gram
        matrix is trained as a precomputed kernel.
        """
        name = type(self).__name__
        self._fit_feature_names = feature_names(X)
        if callable(self.kernel):
            n = n_samples(X)
            K = self._callable_kernel(X, X, (n, n))
            return X, self._serial_matrix(K, np.arange(1, n + 1))
        if self.kernel == "precomputed" and issparse(X):
            # as scikit-learn: a kernel matrix is dense (and its tags say so)
            raise TypeError("Sparse precomputed kernels are not supported.")
        X = check_X(X, owner=name)
        if self.kernel == "precomputed":
            if X.shape[0] != X.shape[1]:
                raise ValueError(f"Precomputed matrix must be a square matrix. Input is a "
                                 f"{X.shape[0]}x{X.shape[1]} matrix.")
            K = X.toarray() if issparse(X) else X
            return X, self._serial_matrix(K, np.arange(1, X.shape[0] + 1))
        return X, Canonical(X)     # checked: kernsolve.train takes it without a second pass

    def _callable_kernel(self, A, B, shape):
        """``kernel(A, B)`` called as scikit-learn calls it: on the samples as
        given, the result (dense or sparse) as a float64 matrix of ``shape``."""
        K = self.kernel(A, B)
        K = np.asarray(K.toarray() if issparse(K) else K, dtype=np.float64)
        if K.shape != shape:
            raise ValueError(f"{type(self).__name__}: the kernel callable returned a matrix "
                             f"of shape {K.shape}; expected {shape} (one row per sample "
                             f"of its first argument, one column per sample of its second)")
        bad = np.argwhere(~np.isfinite(K))
        if bad.size:    # the kernel's fault, not X's (X is the kernel's to read)
            i, j = bad[0]
            raise ValueError(f"{type(self).__name__}: the kernel callable returned "
                             f"{float(K[i, j])} for samples {i} and {j} (and {len(bad) - 1} more "
                             "non-finite values); a kernel's values must be finite")
        return K

    @staticmethod
    def _serial_matrix(K, serial):
        """LIBSVM's precomputed layout: column 0 the serial number, then K."""
        out = np.empty((K.shape[0], K.shape[1] + 1))
        out[:, 0] = serial
        out[:, 1:] = K
        return out

    def _predict_X(self, X):
        """Validated prediction data in the layout the model reads."""
        self._check_is_fitted()
        name = type(self).__name__
        check_feature_names(self, X)
        if callable(self.kernel) and hasattr(self, "_X_fit"):
            n_in = getattr(self, "n_features_in_", None)
            shape = getattr(X, "shape", ())
            if n_in is not None and len(shape) == 2 and shape[1] != n_in:
                raise ValueError(f"X has {shape[1]} features, but {name} is expecting "
                                 f"{n_in} features as input.")
            n = n_samples(X)
            K = self._callable_kernel(X, self._X_fit, (n, n_samples(self._X_fit)))
            return self._serial_matrix(K, np.zeros(n))
        if issparse(X) and not self._sparse:
            # scikit-learn's rule (its dense and sparse LIBSVMs are two builds)
            raise ValueError(f"cannot use sparse input in {name!r} trained on dense data")
        X = check_X(X, owner=name)
        n_in = self.n_features_in_
        if X.shape[1] != n_in:
            if self._model.param.kernel_type == PRECOMPUTED:
                raise ValueError(f"X.shape[1] = {X.shape[1]} should be equal to {n_in}, "
                                 f"the number of samples at training time (X has "
                                 f"{X.shape[1]} features, but {name} is expecting "
                                 f"{n_in} features as input).")
            raise ValueError(f"X has {X.shape[1]} features, but {name} is expecting "
                             f"{n_in} features as input.")
        if self._model.param.kernel_type == PRECOMPUTED:
            K = X.toarray() if issparse(X) else X
            return self._serial_matrix(K, np.zeros(X.shape[0]))
        return X

    def _train(self, y, Xt, param, sample_weight):
        max_iter = None if self.max_iter == -1 else int(self.max_iter)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = train(y, Xt, param, sample_weight=sample_weight, n_jobs=self.n_jobs,
                          _max_iter=max_iter,
                          _warm=self._warm_start_state(y, Xt, param, sample_weight))
        # the solver's own iteration-limit warnings become scikit-learn's one
        # warning, when the model's status (or its probability fits') says so
        for w in caught:
            if not issubclass(w.category, IterationLimitWarning):
                warnings.warn(w.message, w.category, stacklevel=3)
        if _status(model.stats) != "ok" or _status(model.stats.get("probability", {})) != "ok":
            warnings.warn(f"Solver terminated early (max_iter={self.max_iter}).  "
                          "Consider pre-processing your data with StandardScaler or "
                          "MinMaxScaler.", twin(ConvergenceWarning), stacklevel=3)
        return model

    def _warm_start_state(self, y, Xt, param, sample_weight):
        """With ``warm_start=True``: the previous fit's solutions (a ``WarmStart``)
        when this fit has the same data, weights and options but C (scikit-learn's
        convention), else a new one; None without warm_start."""
        if not getattr(self, "warm_start", False):
            return None
        key = _fingerprint(y, Xt, sample_weight, param.copy(C=1.0).to_options())
        if getattr(self, "_warm_key", None) != key:
            self._warm_key, self._warm = key, WarmStart()
        return self._warm

    def _fit_one_output(self, X, y, sample_weight):
        """Fit a regressor (``y`` the targets) or the one-class SVM (``y`` None):
        one decision value, one intercept; returns the model."""
        self._validate_params()
        t = self._kernel_code()
        X, Xt = self._fit_X(X)
        n = n_samples(X)
        if y is None:
            y = np.ones(n)
        else:
            y = regression_targets(y, type(self).__name__)
            check_lengths(X, y)
        sw = check_sample_weight(sample_weight, n, owner=type(self).__name__)
        gamma = self._gamma_value(X, t)
        model = self._train(y, Xt, self._parameters(t, gamma), sw)
        self._set_common(X, model, np.asarray(model.support_indices) - 1)
        self._gamma = gamma
        # scikit-learn's layout: [n_SV, 0], of which n_support_ shows the first
        self._n_support = np.array([model.n_sv, 0], dtype=np.int32)
        coef = np.asarray(model.dual_coef, dtype=np.float64).reshape(1, -1)
        self._dual_coef_ = self.dual_coef_ = self._coef_attribute(coef)
        self.intercept_ = -np.asarray(model.rho, dtype=np.float64)
        self._intercept_ = self.intercept_.copy()
        return model

    def _set_common(self, X, model, support):
        """Fitted attributes shared by all SVM estimators.

        Fitted on sparse X (a kernel other than a callable), the support
        vectors and the coefficients are CSR matrices as scikit-learn's
        (``sparse_container``); fitted on dense X, arrays.
        """
        self._model = model
        self._sparse = issparse(X) and not callable(self.kernel)
        self.support_ = np.asarray(support, dtype=np.int32)
        if callable(self.kernel):
            self.support_vectors_ = _samples_at(X, self.support_)
        elif model.param.kernel_type == PRECOMPUTED:
            self.support_vectors_ = np.empty((0, 0))
        elif self._sparse:
            sv = sp.csr_matrix(model.support_vectors)
            self.support_vectors_ = sparse_container()(
                (sv.data.astype(np.float64), sv.indices.astype(np.int32),
                 sv.indptr.astype(np.int32)), shape=(sv.shape[0], X.shape[1]))
        else:
            self.support_vectors_ = np.asarray(model.support_vectors, dtype=np.float64)
        # a callable kernel's X may have no shape (a list of strings): scikit-learn's rule
        self.shape_fit_ = tuple(X.shape) if hasattr(X, "shape") else (n_samples(X),)
        if len(self.shape_fit_) == 2:
            self.n_features_in_ = int(self.shape_fit_[1])
        elif hasattr(self, "n_features_in_"):
            del self.n_features_in_
        names = getattr(self, "_fit_feature_names", None)
        if names is not None and len(names) == self.shape_fit_[-1] and \
                self.kernel != "precomputed":
            self.feature_names_in_ = names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.fit_status_ = 0 if _status(model.stats) == "ok" else 1
        pairs = model.stats.get("pairs", [])
        self._n_iter = np.array([int(p.get("n_iter", 0)) for p in pairs], dtype=np.int32)
        if callable(self.kernel):
            self._X_fit = X
        elif hasattr(self, "_X_fit"):
            del self._X_fit

    def _coef_attribute(self, coef):
        """A dual-coefficient matrix as the fitted attribute: ``coef`` itself
        after a dense fit; after a sparse fit, scikit-learn's CSR matrix of the
        same shape with every coefficient stored (zeros too: LIBSVM's layout)."""
        if not self._sparse:
            return coef
        rows, l = coef.shape
        indices = np.tile(np.arange(l, dtype=np.int32), rows)
        indptr = np.arange(rows + 1, dtype=np.int32) * np.int32(l)
        return sparse_container()((coef.ravel().copy(), indices, indptr), shape=(rows, l))

    # ------------------------------------------------------------ the fitted model

    @property
    def model_(self):
        """The :class:`~kernsolve.Model` the estimator predicts with.

        The trained model, with the support vectors, dual coefficients,
        intercepts and class counts of the fitted attributes
        (``support_vectors_``, ``_dual_coef_``, ``_intercept_``,
        ``_n_support``): as scikit-learn's, predictions follow a change of
        them.  Untouched, it is the trained model, field for field.
        """
        model = self._model          # AttributeError before fit: hasattr() is False
        fields = {"rho": -np.asarray(self._intercept_, dtype=np.float64)}
        coef = self._dual_coef_
        if issparse(coef):      # placed, not summed as toarray() would: -0.0 stays
            entries = coef.tocoo()
            coef = np.zeros(entries.shape)
            coef[entries.row, entries.col] = entries.data
        fields["dual_coef"] = coef
        if model.param.kernel_type != PRECOMPUTED:   # else the serial numbers, as trained
            sv = self.support_vectors_
            fields["support_vectors"] = sp.csr_matrix(sv) if issparse(sv) else sv
        if self._estimator_type == "classifier":
            fields["n_support"] = self._n_support
        return dataclasses.replace(model, **fields)

    def _predict_model(self):
        """``model_``, refused when the attributes no longer fit together
        (scikit-learn's check against CVE-2020-28975)."""
        self._check_is_fitted()
        model = self.model_
        try:
            _check_model(model)
        except ValueError as e:
            raise ValueError(f"The internal representation of {type(self).__name__} was "
                             f"altered ({e})") from None
        return model

    def _decision_values(self, X):
        """LIBSVM's decision values (n, n_values) of validated X."""
        model = self._predict_model()
        return decision_function(self._predict_X(X), model, n_jobs=self.n_jobs)

    @property
    def n_support_(self):
        """Support vectors per class (classifiers), else ``[n_SV]``."""
        self._check_is_fitted()
        if self._estimator_type == "classifier":
            return self._n_support
        return self._n_support[:1].copy()

    @property
    def coef_(self):
        """Primal weights, for ``kernel="linear"`` only (as scikit-learn's): a CSR
        matrix after a sparse fit, else an array."""
        if self.kernel != "linear":
            raise AttributeError("coef_ is only available when using a linear kernel")
        self._check_is_fitted()
        sv = self.support_vectors_
        coef = self.dual_coef_
        if getattr(self, "classes_", None) is None or len(self.classes_) <= 2:
            # a sparse fit gives scikit-learn's CSR (mutable, as its own); dense is read-only
            return coef @ sv if issparse(sv) else _read_only(np.asarray(coef @ sv).reshape(1, -1))
        k = len(self.classes_)
        start = np.concatenate([[0], np.cumsum(self.n_support_)])
        rows = []
        for i in range(k):
            for j in range(i + 1, k):
                si = slice(start[i], start[i + 1])
                sj = slice(start[j], start[j + 1])
                if issparse(sv):     # 2-D slices: a row of a sparse matrix
                    rows.append(coef[j - 1:j, si] @ sv[si] + coef[i:i + 1, sj] @ sv[sj])
                    continue
                w = coef[j - 1, si] @ sv[si] + coef[i, sj] @ sv[sj]
                rows.append(np.asarray(w).ravel())
        return sp.vstack(rows, format="csr") if issparse(sv) else _read_only(np.vstack(rows))

    @property
    def n_iter_(self):
        """SMO iterations: one per one-vs-one pair (classifiers), else a single int."""
        self._check_is_fitted()
        if self._estimator_type == "classifier":
            return self._n_iter
        return int(self._n_iter[0]) if self._n_iter.size else 0


def _read_only(coef):
    """``coef_`` is computed from the dual coefficients on each access: writing
    into it would change nothing, so it is read-only (as scikit-learn's)."""
    (coef.data if issparse(coef) else coef).flags.writeable = False
    return coef


# --------------------------------------------------------------------------
# classifiers
# --------------------------------------------------------------------------

def _check_proba(est):
    if not est.probability:
        raise AttributeError("predict_proba is not available when probability=False")
    return True


def _shown_class_weight(value):
    return repr(value) if isinstance(value, str) else type_name(value)


class _BaseSVC(_BaseSVM):
    _estimator_type = "classifier"

    # when weights <= 0 leave rows of one class only (scikit-learn's messages)
    _one_class_message = ("Invalid input - all samples with positive weights belong to "
                          "the same class: one class left, a classifier needs two")

    _parameter_constraints = {
        **_BaseSVM._parameter_constraints,
        # The solver's name against the SVM type, and the keys of
        # solver_options against the solver: cross-parameter, _check_solver.
        "solver": ["no_validation"],
        "solver_options": Rule(None, InstanceOf(dict, "a dict such as {'epochs': 2}"),
                               shown=type_name),
        "decision_function_shape": [StrOptions(("ovr", "ovo"))],
        # the weight of each class is checked against the classes, at fit
        "class_weight": Rule(None, StrOptions(("balanced",)), InstanceOf(dict, "a dict"),
                             named=False, shown=_shown_class_weight),
        "probability": ["no_validation"],
        "break_ties": ["no_validation"],
        "random_state": ["no_validation"],     # seed_of, when the seed is drawn
    }


    def fit(self, X, y, sample_weight=None):
        """Fit the one-vs-one SVMs.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training rows; with ``kernel="precomputed"`` the (n_samples, n_samples)
            kernel matrix.
        y : array-like of shape (n_samples,)
            Class labels (numbers, strings, booleans...).
        sample_weight : array-like of shape (n_samples,), optional
            Per-row weights; the row's C becomes ``C * class_weight * weight``, and
            a weight <= 0 leaves the row out (scikit-learn's masking).

        Returns
        -------
        self
        """
        name = type(self).__name__
        self._validate_params()
        solver, extra = self._check_solver()
        t = self._kernel_code()
        X, Xt = self._fit_X(X)
        classes, y_enc = encode_classes(y, name)
        check_lengths(X, y_enc)
        k = len(classes)
        if k < 2:
            raise ValueError(f"The number of classes has to be greater than one; got "
                             f"{k} class")
        sw = check_sample_weight(sample_weight, n_samples(X), owner=type(self).__name__)
        if sw is not None and np.unique(y_enc[sw > 0]).size < 2:
            raise ValueError(self._one_class_message)
        class_weight = self._class_weight(classes, y_enc)
        weight = {float(i): float(w) for i, w in enumerate(class_weight) if w != 1.0}
        gamma = self._gamma_value(X, t)
        if solver == AUTO:
            solver = self._auto_solver(t, gamma, X, y_enc.size, weight, sw)
        if spec_for(solver).binary is not None:
            # The SBP and the comparison solvers have one budget (one lambda)
            # for every point: kernsolve.train refuses per-class or per-row C.
            if "C" in self._parameter_constraints and np.any(class_weight != 1.0):
                raise ValueError(f"{name}: solver={solver!r} does not support "
                                 f"class_weight (its problem has one budget for all "
                                 f"points); use solver='smo' or class_weight=None")
            if sw is not None and np.unique(sw[sw > 0]).size > 1:
                raise ValueError(f"{name}: solver={solver!r} does not support unequal "
                                 f"sample weights (its problem has one budget for all "
                                 f"points); use solver='smo'")
        seed = seed_of(self.random_state)

        # Rows grouped by class in sorted order (stable): kernsolve's label
        # order (first appearance) becomes the sorted order of classes_.
        order = np.argsort(y_enc, kind="stable")
        Xo = Xt[order]
        yo = y_enc[order].astype(np.float64)
        swo = sw[order] if sw is not None else None
        param = self._parameters(t, gamma, weight=weight, probability=self.probability,
                                 seed=seed, bias=getattr(self, "bias", True),
                                 solver=solver, extra=extra)
        model = self._train(yo, Xo, param, swo)
        if not np.array_equal(np.asarray(model.labels, dtype=np.float64),
                              np.arange(k, dtype=np.float64)):
            raise RuntimeError(f"internal error: model labels {model.labels} are not "
                               f"0..{k - 1} in order")

        self._set_common(X, model, order[np.asarray(model.support_indices) - 1])
        self.classes_ = classes
        self.class_weight_ = np.asarray(class_weight, dtype=np.float64)
        self._gamma = gamma
        self._n_support = np.asarray(model.n_support, dtype=np.int32)
        sv_coef = np.asarray(model.dual_coef, dtype=np.float64).reshape(k - 1, -1)
        rho = np.asarray(model.rho, dtype=np.float64)
        self._dual_coef_ = self._coef_attribute(sv_coef)
        self._intercept_ = -rho
        if k == 2:
            # positive decision means classes_[1]; LIBSVM's positive class is classes_[0]
            self.dual_coef_ = self._coef_attribute(-sv_coef)
            self.intercept_ = rho.copy()
        else:
            self.dual_coef_ = self._coef_attribute(sv_coef.copy())
            self.intercept_ = -rho
        self._probA = np.asarray(model.prob_a if model.prob_a is not None else [],
                                 dtype=np.float64)
        self._probB = np.asarray(model.prob_b if model.prob_b is not None else [],
                                 dtype=np.float64)
        return self

    def _prob_attribute(self, name):
        self._check_is_fitted()
        return getattr(self, f"_{name}")

    @property
    def probA_(self):
        """Platt scaling's A for each one-vs-one pair (empty unless ``probability=True``)."""
        return self._prob_attribute("probA")

    @property
    def probB_(self):
        """Platt scaling's B for each one-vs-one pair (empty unless ``probability=True``)."""
        return self._prob_attribute("probB")

    def _auto_solver(self, t, gamma, X, n, weight, sw):
        """``solver='auto'``: the rule of ``kernsolve.solvers.auto`` among the
        solvers this estimator runs (LIBSVM's driver: SMO where the rule
        would leave it for EigenPro or DSG, whose models are another kind);
        the choice and its reason in ``solver_choice_``, on stderr if verbose."""
        param = self._parameters(t, gamma, weight=weight, probability=self.probability,
                                 bias=getattr(self, "bias", True), solver=AUTO)
        choice = auto.choose(param, auto.describe(X, n),
                             candidates=_driver_solvers(self._svm_type),
                             weighted=sw is not None)
        self.solver_choice_ = choice.line()
        if not param.quiet:
            print(self.solver_choice_, file=sys.stderr)
        return choice.solver

    def _check_solver(self):
        """(solver, extra): the ``solver`` name and ``solver_options`` validated.

        ``extra`` holds the options under their ``Parameters.extra`` keys
        (``max_kernel_evals``); their values are checked by the solver itself
        when ``kernsolve.train`` runs, with messages naming the option.
        """
        name = type(self).__name__
        allowed = _driver_solvers(self._svm_type)
        solver = self.solver
        key = solver.strip().lower() if isinstance(solver, str) else solver
        if key == AUTO:
            if self.solver_options:
                raise ValueError(f"{name}: solver='auto' chooses the solver and its "
                                 "options; name the solver to give solver_options")
            return key, {}
        if key not in allowed:
            hint = ""
            spec = spec_for(key)
            if spec is not None and not spec.uses_driver:
                hint = (f"; solver {key!r} trains another kind of model: use "
                        f"kernsolve.{spec.estimator}")
            elif spec is not None:
                hint = f"; {key!r} does not train {name}'s problem"
            raise ValueError(f"{name}: solver must be one of {list(allowed) + [AUTO]}, "
                             f"got {solver!r}{hint}")
        options = self.solver_options or {}
        declared = option_names(key)
        extra = {}
        for option, value in options.items():
            dashed = option.replace("_", "-") if isinstance(option, str) else None
            if dashed not in declared:
                known = ", ".join(repr(option_key(o)) for o in sorted(declared)) or "none"
                raise ValueError(f"{name}: solver_options {option!r} is not an option of "
                                 f"solver {key!r} (its options: {known})")
            extra[option_key(dashed)] = value
        if spec_for(key).binary is not None and self.max_iter != -1:   # not SMO
            raise ValueError(f"{name}: max_iter is SMO's iteration limit (got "
                             f"{self.max_iter!r}); the length of a solver={key!r} run "
                             f"is set by solver_options={{'epochs': E}}")
        return key, extra

    def _class_weight(self, classes, y_enc):
        cw = self.class_weight
        k = len(classes)
        if cw is None:
            return np.ones(k)
        if cw == "balanced":
            counts = np.bincount(y_enc, minlength=k).astype(np.float64)
            return y_enc.size / (k * counts)
        out = np.ones(k)
        for label, w in cw.items():
            hit = np.flatnonzero(classes == label)
            if hit.size == 0:
                raise ValueError(f"class_weight: label {label!r} is not among the "
                                 f"classes {classes.tolist()}")
            if not is_number(w) or not np.isfinite(w) or w <= 0:
                raise ValueError(f"class_weight[{label!r}] must be a finite number > 0, "
                                 f"got {w!r}")
            out[hit[0]] = float(w)
        return out

    def decision_function(self, X):
        """Signed distances.

        Returns
        -------
        ndarray
            Binary: shape (n_samples,), positive for ``classes_[1]``.
            ``"ovo"``: (n_samples, n_classes*(n_classes-1)/2), pairs (0,1),
            (0,2), ..., (1,2), ... of ``classes_``, positive for the first.
            ``"ovr"``: (n_samples, n_classes): votes plus confidences in
            (-1/3, 1/3).
        """
        dec = self._decision_values(X)
        k = len(self.classes_)
        if k == 2:
            return -dec[:, 0]
        if self.decision_function_shape == "ovo":
            return dec
        return _ovr_from_ovo(dec, k)

    def predict(self, X):
        """Class labels (LIBSVM's one-vs-one vote; ties to the smaller class)."""
        if self.break_ties and self.decision_function_shape == "ovo":
            raise ValueError("break_ties must be False when decision_function_shape is 'ovo'")
        dec = self._decision_values(X)
        k = len(self.classes_)
        if self.break_ties and self.decision_function_shape == "ovr" and k > 2:
            index = np.argmax(_ovr_from_ovo(dec, k), axis=1)
        else:
            index = ovo_vote(dec, k)
        return self.classes_[index]

    @available_if(_check_proba)
    def predict_proba(self, X):
        """Class probabilities (Platt scaling on internal folds), columns in ``classes_`` order."""
        model = self._predict_model()
        if not model.is_probability_model:
            raise twin(NotFittedError)("predict_proba is not available when fitted with "
                                       "probability=False; fit again with probability=True")
        return predict_probability(self._predict_X(X), model, n_jobs=self.n_jobs)

    @available_if(_check_proba)
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        return np.log(self.predict_proba(X))

    def score(self, X, y, sample_weight=None):
        """Mean accuracy on (X, y), weighted by ``sample_weight``."""
        y = column_or_1d(y, type(self).__name__)
        pred = self.predict(X)
        return float(np.average(pred == y, weights=sample_weight))


def _ovr_from_ovo(dec, k):
    """One-vs-one values -> (n, k): votes + confidence / (3 (|confidence| + 1)).

    The confidence of class i sums the pair values in its favour (+dec for
    pairs (i, j), -dec for pairs (j, i)); squashing it into (-1/3, 1/3) keeps
    the vote count decisive and only breaks ties.
    """
    n = dec.shape[0]
    votes = np.zeros((n, k))
    conf = np.zeros((n, k))
    p = 0
    for i in range(k):
        for j in range(i + 1, k):
            d = dec[:, p]
            win_j = d < 0
            votes[:, i] += ~win_j
            votes[:, j] += win_j
            conf[:, i] += d
            conf[:, j] -= d
            p += 1
    return votes + conf / (3 * (np.abs(conf) + 1))


# --------------------------------------------------------------------------
# regression
# --------------------------------------------------------------------------

class _BaseSVR(_BaseSVM):
    _estimator_type = "regressor"

    def fit(self, X, y, sample_weight=None):
        """Fit the support vector regression.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Real-valued targets.
        sample_weight : array-like of shape (n_samples,), optional

        Returns
        -------
        self
        """
        self._fit_one_output(X, y, sample_weight)
        return self

    def predict(self, X):
        """Predicted targets."""
        return self._decision_values(X)[:, 0]

    def score(self, X, y, sample_weight=None):
        """Coefficient of determination R^2 of the prediction (weighted)."""
        return r2_score(self, X, y, sample_weight)


def _fingerprint(y, Xt, sample_weight, options):
    """A digest of a fit's data and options (warm_start: is it the previous fit's?)."""
    h = hashlib.sha256(options.encode())
    X = Xt.X if isinstance(Xt, Canonical) else Xt
    parts = [y, sample_weight]
    parts += [X.data, X.indices, X.indptr] if issparse(X) else [X]
    for a in parts:
        if a is not None:
            a = np.ascontiguousarray(a)
            h.update(str((a.dtype, a.shape)).encode())
            h.update(a.tobytes())
    return h.hexdigest()
