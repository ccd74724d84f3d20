"""The scikit-learn-compatible layer shared by kernsolve's estimators.

kernsolve's estimators (``estimators.svm``, ``estimators.dsg``,
``estimators.eigenpro``) follow scikit-learn's estimator contract without
importing scikit-learn.  This module owns what that contract needs in all of
them: ``get_params``/``set_params``/``repr`` from the ``__init__`` signature
(:class:`BaseEstimator`), the fitted-state check and :class:`NotFittedError`,
the warnings scikit-learn users catch (:class:`ConvergenceWarning`,
:class:`DataConversionWarning`), methods that exist only under a condition
(:func:`available_if`), and input validation with scikit-learn's messages:
X, y, sample weights, class labels, feature names, ``random_state`` and the
``gamma='scale'/'auto'`` rule.
"""
import functools
import inspect
import sys
import warnings

import numpy as np
import scipy.sparse as sp

# X, y, sample weights, seeds and gamma are validated by kernsolve._validation,
# the one owner shared with the solvers.
from .._validation import column_or_1d, is_number

class NotFittedError(ValueError, AttributeError):
    """Raised when an estimator is used before ``fit``.

    Both a ValueError and an AttributeError, as scikit-learn's own.
    """


_BRIDGED = {}


def not_fitted_error(message):
    """A NotFittedError that is also scikit-learn's, when scikit-learn is loaded.

    ``except sklearn.exceptions.NotFittedError`` (and scikit-learn's checks)
    then catch it too.  Nothing is imported: scikit-learn is used only if the
    program has imported it already.
    """
    module = sys.modules.get("sklearn.exceptions")
    base = getattr(module, "NotFittedError", None)
    if isinstance(base, type) and issubclass(base, BaseException) \
            and not issubclass(NotFittedError, base):
        cls = _BRIDGED.get(base)
        if cls is None:
            cls = type("NotFittedError", (NotFittedError, base), {"__module__": __name__})
            _BRIDGED[base] = cls
        return cls(message)
    return NotFittedError(message)


class ConvergenceWarning(UserWarning):
    """The solver stopped at ``max_iter`` before reaching the tolerance."""


# --------------------------------------------------------------------------
# a method that exists only when a condition holds (hasattr() is False otherwise)
# --------------------------------------------------------------------------

class _AvailableIf:
    def __init__(self, fn, check):
        self.fn = fn
        self.check = check
        functools.update_wrapper(self, fn)

    def __get__(self, obj, owner=None):
        if obj is None:
            return self.fn
        self.check(obj)          # raises AttributeError when unavailable

        @functools.wraps(self.fn)
        def bound(*args, **kwargs):
            return self.fn(obj, *args, **kwargs)
        return bound


def available_if(check):
    return lambda fn: _AvailableIf(fn, check)


# --------------------------------------------------------------------------
# the estimator base: parameters, repr, tags, fitted state
# --------------------------------------------------------------------------

class BaseEstimator:
    """get_params/set_params from the ``__init__`` signature, as scikit-learn's contract asks."""

    _estimator_type = None

    @classmethod
    def _get_param_names(cls):
        init = cls.__init__
        if init is object.__init__:
            return []
        names = []
        for p in inspect.signature(init).parameters.values():
            if p.name == "self" or p.kind == p.VAR_KEYWORD:
                continue
            if p.kind == p.VAR_POSITIONAL:
                raise RuntimeError(f"{cls.__name__}.__init__ must not take *args")
            names.append(p.name)
        return sorted(names)

    def get_params(self, deep=True):
        """The constructor parameters (and those of nested estimators when ``deep``)."""
        out = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                for key, sub in value.get_params().items():
                    out[f"{name}__{key}"] = sub
            out[name] = value
        return out

    def set_params(self, **params):
        """Set constructor parameters (``name__sub`` reaches nested estimators); returns self."""
        if not params:
            return self
        valid = self.get_params(deep=True)
        nested = {}
        for key, value in params.items():
            name, delim, sub = key.partition("__")
            if name not in valid:
                raise ValueError(f"Invalid parameter {name!r} for estimator "
                                 f"{type(self).__name__}. Valid parameters are: "
                                 f"{self._get_param_names()!r}.")
            if delim:
                nested.setdefault(name, {})[sub] = value
            else:
                setattr(self, name, value)
                valid[name] = value
        for name, sub in nested.items():
            valid[name].set_params(**sub)
        return self

    def __repr__(self):
        defaults = {name: p.default for name, p in
                    inspect.signature(type(self).__init__).parameters.items()}
        parts = []
        for name in self._get_param_names():
            value = getattr(self, name, None)
            default = defaults.get(name, inspect.Parameter.empty)
            try:
                same = value is default or (type(value) is type(default) and value == default)
                same = bool(same)
            except (TypeError, ValueError):
                same = False
            if not same:
                parts.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def __sklearn_is_fitted__(self):
        return hasattr(self, "model_")

    def __sklearn_tags__(self):
        # Called by scikit-learn only, so importing it here adds no dependency.
        from sklearn.utils import (ClassifierTags, InputTags, RegressorTags, Tags,
                                   TargetTags)
        tags = Tags(estimator_type=self._estimator_type,
                    target_tags=TargetTags(required=self._estimator_type != "outlier_detector"),
                    input_tags=InputTags(sparse=True,
                                         pairwise=self.kernel == "precomputed"))
        if self._estimator_type == "classifier":
            tags.classifier_tags = ClassifierTags()
        elif self._estimator_type == "regressor":
            tags.regressor_tags = RegressorTags()
        return tags

    # ---------------------------------------------------------------- checks

    def _check_is_fitted(self):
        if not hasattr(self, "model_"):
            raise not_fitted_error(f"This {type(self).__name__} instance is not fitted "
                                    "yet. Call 'fit' with appropriate arguments before "
                                    "using this estimator.")


# --------------------------------------------------------------------------
# input validation (one message style)
# --------------------------------------------------------------------------

def feature_names(X):
    """Column names of a data frame when they are all strings, else None."""
    columns = getattr(X, "columns", None)
    if columns is None or sp.issparse(X) or isinstance(X, np.ndarray):
        return None
    names = np.asarray(list(columns), dtype=object)
    if names.size == 0 or not all(isinstance(n, str) for n in names):
        return None
    return names


def check_feature_names(est, X):
    """scikit-learn's rule: names seen at fit must match those at predict."""
    seen = getattr(est, "feature_names_in_", None)
    given = feature_names(X)
    name = type(est).__name__
    if seen is None and given is not None:
        warnings.warn(f"X has feature names, but {name} was fitted without feature names",
                      UserWarning, stacklevel=4)
    elif seen is not None and given is None:
        warnings.warn(f"X does not have valid feature names, but {name} was fitted with "
                      "feature names", UserWarning, stacklevel=4)
    elif seen is not None and (len(seen) != len(given) or np.any(seen != given)):
        raise ValueError(f"The feature names should match those that were passed during "
                         f"fit: fitted with {list(seen)[:5]}..., got {list(given)[:5]}...")


def check_lengths(X, y):
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"Found input variables with inconsistent numbers of samples: "
                         f"[{X.shape[0]}, {y.shape[0]}] (X has {X.shape[0]} rows, "
                         f"y has {y.shape[0]} entries)")


def regression_targets(y, owner):
    """A regressor's y: a finite float64 vector (scikit-learn's messages)."""
    y = column_or_1d(y, owner)
    if y.dtype.kind not in "biuf":
        try:
            y = y.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{owner}: y must hold numbers, got dtype {y.dtype}") from None
    y = np.ascontiguousarray(y, dtype=np.float64)
    if not np.all(np.isfinite(y)):
        raise ValueError("Input y contains NaN or infinity.")
    return y


def r2_score(est, X, y, sample_weight=None):
    """Coefficient of determination R^2 of ``est.predict(X)`` (weighted), as
    scikit-learn's regressors score."""
    y = np.asarray(column_or_1d(y, type(est).__name__), dtype=np.float64)
    pred = est.predict(X)
    w = np.ones_like(y) if sample_weight is None else np.asarray(sample_weight, float)
    num = float(np.sum(w * (y - pred) ** 2))
    den = float(np.sum(w * (y - np.average(y, weights=w)) ** 2))
    if den == 0:
        return 1.0 if num == 0 else 0.0
    return 1.0 - num / den


def encode_classes(y, owner):
    """(classes, encoded) with classes sorted; ValueError for non-class targets."""
    y = column_or_1d(y, owner)
    if y.dtype.kind == "c":
        raise ValueError("Unknown label type: complex. Complex targets are not supported.")
    if y.dtype.kind == "O":
        values = y.tolist()
        if any(isinstance(v, (float, np.floating)) and not np.isfinite(v) for v in values):
            raise ValueError("Input y contains NaN or infinity.")
        if all(is_number(v) for v in values):
            as_float = np.asarray(values, dtype=np.float64)
            if np.any(as_float != np.round(as_float)):
                raise ValueError("Unknown label type: continuous. Maybe you are trying "
                                 "to fit a classifier, which expects discrete classes "
                                 "on a regression target with continuous values.")
        try:
            classes, encoded = np.unique(y, return_inverse=True)
        except TypeError:
            raise ValueError("Unknown label type: mix of label input types (string and "
                             "number); labels must be of one type") from None
        return classes, encoded.ravel()
    if y.dtype.kind == "f":
        if not np.all(np.isfinite(y)):
            raise ValueError("Input y contains NaN or infinity.")
        if np.any(y != np.round(y)):
            raise ValueError("Unknown label type: continuous. Maybe you are trying to fit "
                             "a classifier, which expects discrete classes on a "
                             "regression target with continuous values.")
    classes, encoded = np.unique(y, return_inverse=True)
    return classes, encoded.ravel()
