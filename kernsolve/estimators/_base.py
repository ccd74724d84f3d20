"""The scikit-learn-compatible layer shared by kernsolve's estimators.

kernsolve's estimators (``estimators.svm``, ``estimators.dsg``,
``estimators.eigenpro``) follow scikit-learn's estimator contract without
importing scikit-learn.  This module owns what that contract needs in all of
them: ``get_params``/``set_params``/``repr`` from the ``__init__`` signature
(:class:`BaseEstimator`), the fitted-state check (its :class:`NotFittedError`
and the warnings scikit-learn users catch are kernsolve._errors's, which
makes them scikit-learn's too when the program uses scikit-learn), methods
that exist only under a condition
(:func:`available_if`), the declared parameter constraints and their one
checker (``_parameter_constraints``, :class:`Interval`, :class:`StrOptions`,
:meth:`BaseEstimator._validate_params`), and input validation with
scikit-learn's messages: X, y, sample weights, class labels, feature names.
"""
import functools
import html
import inspect
import sys
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp

# X, y, sample weights, seeds and gamma are validated by kernsolve._validation,
# the one owner shared with the solvers.
from .._params import letter_option
from .._threads import check_n_jobs
# scikit-learn's classes when the program uses scikit-learn: kernsolve._errors
from .._errors import ConvergenceWarning, NotFittedError, twin  # noqa: F401 (re-exported)
from .._validation import column_or_1d, is_number
from .._sparse import issparse

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
# parameter constraints: each estimator declares its parameters once
# --------------------------------------------------------------------------
#
# As scikit-learn's ``_parameter_constraints``: a class attribute maps every
# constructor parameter to the values it accepts, subclasses extend it or
# ``pop`` what they do not take, and one checker (``_validate_params``) runs
# at ``fit``.  A value is valid when one entry of its list accepts it.  An
# entry is None, ``callable``, ``"boolean"``, ``"no_validation"`` (the value
# is checked where it is used: by a solver's option validator, or by
# ``seed_of``, which must not draw from a RandomState twice) or one of the
# objects below.  Messages are kernsolve's, the same for every estimator:
# "<Estimator>: <parameter> must be <the alternatives>, got <value>".
# A parameter that sets a declared option (a solver's, or LIBSVM's letter)
# takes its range from that declaration (:func:`declared`), not a copy.

def _either(phrases):
    """"a", "a or b", "a, b or c"."""
    if len(phrases) == 1:
        return phrases[0]
    return ", ".join(phrases[:-1]) + " or " + phrases[-1]


class Interval:
    """Finite numbers of ``kind`` (``Real`` or ``Integral``) between two bounds.

    ``left``/``right`` None is unbounded; ``closed`` says which bounds belong
    to the interval (``right=math.inf`` closed: +inf belongs too).  ``Integral`` means an integer type unless
    ``whole_floats`` (then 3.0 counts as 3, as LIBSVM's ``-d 3.0`` does).
    ``text`` replaces the generated wording ("a finite number > 0",
    "an integer >= 1", "in (0, 1]").
    """

    def __init__(self, kind, left, right, *, closed, whole_floats=False, text=None):
        if kind not in (Real, Integral):
            raise TypeError("Interval: kind must be numbers.Real or numbers.Integral")
        if closed not in ("left", "right", "both", "neither"):
            raise ValueError(f"Interval: closed={closed!r}")
        self.kind, self.left, self.right, self.closed = kind, left, right, closed
        self.whole_floats = whole_floats
        self.text = text

    def accepts(self, value):
        if self.kind is Integral and not self.whole_floats:
            if not is_number(value, integral=True):
                return False
        elif not is_number(value):
            return False
        elif not isinstance(value, Integral) and not np.isfinite(value):
            # (a Python int is finite, even beyond float64); an infinite bound
            # that is closed admits that infinity
            return value == self.right == np.inf and self.closed in ("right", "both")
        elif self.whole_floats:
            try:
                if float(value) != int(value):
                    return False
            except OverflowError:
                return False
        if self.left is not None:
            if value < self.left or (value == self.left and self.closed in ("right", "neither")):
                return False
        if self.right is not None:
            if value > self.right or (value == self.right and self.closed in ("left", "neither")):
                return False
        return True

    def phrases(self):
        if self.text is not None:
            return [self.text]
        if self.left is not None and self.right is not None:
            opening = "[" if self.closed in ("left", "both") else "("
            closing = "]" if self.closed in ("right", "both") else ")"
            return [f"in {opening}{self.left}, {self.right}{closing}"]
        noun = "an integer" if self.kind is Integral else "a finite number"
        if self.left is not None:
            op = ">=" if self.closed in ("left", "both") else ">"
            return [f"{noun} {op} {self.left}"]
        if self.right is not None:
            op = "<=" if self.closed in ("right", "both") else "<"
            return [f"{noun} {op} {self.right}"]
        return [noun]


class StrOptions:
    """One of the given strings, worded as "'a', 'b'" or, ``listed``, "one of ['a', 'b']".

    ``underscores``: ``squared_hinge`` is read as ``squared-hinge`` (the
    spelling of option names).
    """

    def __init__(self, options, *, listed=False, underscores=False):
        self.options = tuple(options)
        self.listed = listed
        self.underscores = underscores

    def accepts(self, value):
        if not isinstance(value, str):
            return False
        return (value.replace("_", "-") if self.underscores else value) in self.options

    def phrases(self):
        if self.listed:
            return [f"one of {list(self.options)}"]
        return [repr(option) for option in self.options]


class InstanceOf:
    """An instance of ``cls``, worded ``text`` ("a dict such as {'epochs': 2}")."""

    def __init__(self, cls, text):
        self.cls = cls
        self.text = text

    def accepts(self, value):
        return isinstance(value, self.cls)

    def phrases(self):
        return [self.text]


class Checked:
    """A check owned elsewhere, run by the checker: ``check(value, owner)``
    raises ValueError with its own message (thread counts: ``check_n_jobs``)."""

    def __init__(self, check):
        self.check = check

    def accepts(self, value, owner):
        self.check(value, owner)
        return True

    def phrases(self):
        return []


def declared(option, *, text=None, whole_floats=False):
    """The constraint of an estimator parameter that sets a declared option
    (an :class:`~kernsolve.solvers._spec.Option`: a solver's or LIBSVM's
    letter), made from that declaration, as scikit-learn derives
    ``StrOptions(set(loss_functions))`` from its table: :class:`StrOptions`
    of its choices, else an :class:`Interval` of its range (``text``,
    ``whole_floats``: as there)."""
    if option.kind == "choice":
        return StrOptions(option.choices)
    if option.kind not in ("int", "float"):
        raise TypeError(f"declared: no constraint for an option of kind {option.kind!r}")
    left_closed = not option.low_open
    right_closed = option.high is not None and not option.high_open
    closed = {(True, True): "both", (True, False): "left", (False, True): "right",
              (False, False): "neither"}[left_closed, right_closed]
    return Interval(Integral if option.kind == "int" else Real, option.low, option.high,
                    closed=closed, whole_floats=whole_floats, text=text)


def _accepts(entry, value, owner):
    if entry is None:
        return value is None
    if entry is callable:
        return callable(value)
    if entry == "boolean":
        return isinstance(value, (bool, np.bool_))
    if entry == "no_validation":
        return True
    if isinstance(entry, Checked):
        return entry.accepts(value, owner)
    return entry.accepts(value)


def _phrases(entry):
    if entry is None:
        return ["None"]
    if entry is callable:
        return ["a callable"]
    if entry == "boolean":
        return ["True", "False"]
    return entry.phrases()


class Rule:
    """A parameter's entries with the rest of its message, where it differs.

    ``note`` follows the alternatives ("(used when alpha is None)");
    ``named=False`` leaves the estimator's name out of the message; ``shown``
    renders the value after "got" (``repr``); ``when(est)`` False skips the
    check (a parameter that is read only when another one says so).
    """

    def __init__(self, *entries, note=None, named=True, shown=repr, when=None):
        self.entries = entries
        self.note = note
        self.named = named
        self.shown = shown
        self.when = when

    def validate(self, est, name):
        if self.when is not None and not self.when(est):
            return
        value = getattr(est, name)
        owner = type(est).__name__
        if any(_accepts(entry, value, owner) for entry in self.entries):
            return
        what = _either([p for entry in self.entries for p in _phrases(entry)])
        if self.note:
            what = f"{what} {self.note}"
        prefix = f"{owner}: " if self.named else ""
        raise ValueError(f"{prefix}{name} must be {what}, got {self.shown(value)}")


def type_name(value):
    """How a value of the wrong type is shown: its type's name."""
    return type(value).__name__


# Constraints that several estimator families share: LIBSVM's letters' ranges.
N_JOBS = Checked(lambda value, owner: check_n_jobs(value, "estimator", owner))
CACHE_SIZE = declared(letter_option("m"), text="> 0 (MB)")
DEGREE = declared(letter_option("d"), whole_floats=True)
COEF0 = declared(letter_option("r"))


# --------------------------------------------------------------------------
# the estimator base: parameters, repr, tags, fitted state
# --------------------------------------------------------------------------

class BaseEstimator:
    """get_params/set_params from the ``__init__`` signature, as scikit-learn's contract asks."""

    _estimator_type: str | None = None
    # parameter -> the values it accepts (see Rule); extended by each family
    _parameter_constraints: dict[str, list | Rule] = {}

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

    def _store_params(self, arguments):
        """Keep every constructor argument as given (``self._store_params(locals())``).

        scikit-learn's contract: ``__init__`` stores its parameters unchanged
        and validates nothing (``fit`` does, by :meth:`_validate_params`).
        """
        for name in self._get_param_names():
            setattr(self, name, arguments[name])

    def _validate_params(self):
        """ValueError for the first parameter outside ``_parameter_constraints``
        (checked in their declared order)."""
        for name, rule in self._parameter_constraints.items():
            if not isinstance(rule, Rule):
                rule = Rule(*rule)
            rule.validate(self, name)

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

    def _repr_html_(self):
        """The notebook's view: scikit-learn's estimator diagram when scikit-learn
        can be imported (as a scikit-learn estimator shows), else the repr."""
        try:
            # called by notebooks only, so importing it here adds no dependency
            from sklearn.utils import estimator_html_repr
        except ImportError:
            return f"<pre>{html.escape(repr(self))}</pre>"
        return estimator_html_repr(self)

    def __sklearn_is_fitted__(self):
        return hasattr(self, "model_")

    def __sklearn_tags__(self):
        # Called by scikit-learn only, so importing it here adds no dependency.
        from sklearn.utils import (ClassifierTags, InputTags, RegressorTags, Tags,
                                   TargetTags)
        tags = Tags(estimator_type=self._estimator_type,
                    target_tags=TargetTags(required=self._estimator_type != "outlier_detector"),
                    # a precomputed kernel matrix is dense, as scikit-learn's SVMs say
                    input_tags=InputTags(sparse=self.kernel != "precomputed",
                                         pairwise=self.kernel == "precomputed"))
        if self._estimator_type == "classifier":
            tags.classifier_tags = ClassifierTags()
        elif self._estimator_type == "regressor":
            tags.regressor_tags = RegressorTags()
        return tags

    # ---------------------------------------------------------------- checks

    def _check_is_fitted(self):
        if not hasattr(self, "model_"):
            raise twin(NotFittedError)(f"This {type(self).__name__} instance is not fitted "
                                    "yet. Call 'fit' with appropriate arguments before "
                                    "using this estimator.")


# --------------------------------------------------------------------------
# input validation (one message style)
# --------------------------------------------------------------------------

def feature_names(X):
    """Column names of a data frame when they are all strings, else None."""
    columns = getattr(X, "columns", None)
    if columns is None or issparse(X) or isinstance(X, np.ndarray):
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


def n_samples(X):
    """The number of samples of X as given: its rows (arrays, sparse matrices, data
    frames) or its length (a list of strings for a callable kernel)."""
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    try:
        return len(X)
    except TypeError:
        raise TypeError(f"Expected a sequence or array-like of samples, got "
                        f"{type(X).__name__}") from None


def check_lengths(X, y):
    n = n_samples(X)
    if n != y.shape[0]:
        raise ValueError(f"Found input variables with inconsistent numbers of samples: "
                         f"[{n}, {y.shape[0]}] (X has {n} rows, "
                         f"y has {y.shape[0]} entries)")


def sparse_container():
    """The CSR class of fitted sparse attributes: scikit-learn's choice.

    ``csr_array`` when scikit-learn is loaded and its ``sparse_interface``
    setting is "sparray", else ``csr_matrix`` (scikit-learn's default).  As
    :func:`kernsolve._errors.twin`, scikit-learn is read only if the program has
    imported it already.
    """
    get_config = getattr(sys.modules.get("sklearn"), "get_config", None)
    if callable(get_config) and get_config().get("sparse_interface") == "sparray":
        return sp.csr_array
    return sp.csr_matrix


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
