"""Input validation shared by the training functions, the solvers and the estimators.

One owner for each check that several layers need:

* :func:`check_X` -- the data matrix (dense or sparse, real, finite, 2-D,
  non-empty), in the canonical form of :func:`kernsolve._kernels.as_canonical`,
  which owns that form and the 2**31 column limit; :func:`libsvm_rows` --
  LIBSVM's Python rows (``libsvm.svmutil``'s lists of dicts or lists) as a matrix;
* :func:`check_targets` -- LIBSVM-style targets (integral class labels for
  classification); :func:`column_or_1d` -- an estimator's y;
* :func:`check_sample_weight`;
* :func:`group_classes` -- LIBSVM's ``svm_group_classes`` (label order by
  first appearance with its -1/+1 swap), the one grouping every solver uses;
* :func:`resolve_gamma` -- the gamma a model is trained with, for every
  solver: LIBSVM's "gamma None or 0 means 1/n_features", and ``-g median``
  (the median trick, :func:`kernsolve._features.median_gamma`);
* :func:`seed_of` -- scikit-learn's ``random_state`` as kernsolve's seed.

The estimators speak scikit-learn's wording and the LIBSVM-style functions
their own; where a check serves both, an ``owner`` argument (the estimator's
class name) selects scikit-learn's wording, so both keep the messages their
users know.  Thread counts are checked by :mod:`kernsolve._threads`.
"""
import numbers
import warnings

import numpy as np

from ._constants import CLASSIFICATION, RBF
from ._errors import DataConversionWarning, twin
from ._features import median_gamma
from ._kernels import Canonical, as_canonical
from ._memory import memory_limit
from ._sparse import Csr, issparse, make_csr, scipy_sparse

__all__ = ["DataConversionWarning", "check_X", "libsvm_rows", "check_targets", "check_sample_weight",
           "column_or_1d", "group_classes", "resolve_gamma", "estimator_gamma", "seed_of",
           "is_number"]


def is_number(v, integral=False):
    """A real (or integral) number that is not a bool."""
    kind = numbers.Integral if integral else numbers.Real
    return isinstance(v, kind) and not isinstance(v, (bool, np.bool_))


def _is_real(value):
    return (isinstance(value, (int, float, np.integer, np.floating))
            and not isinstance(value, (bool, np.bool_)))


# --------------------------------------------------------------------------
# X
# --------------------------------------------------------------------------

def check_X(X, name="X", *, owner=None, n_rows=None, empty_ok=False):
    """X in canonical form (C-order float64 ndarray, or CSR as ``as_canonical``).

    Parameters
    ----------
    X : array-like, scipy sparse matrix or Canonical, shape (n_samples, n_features)
        A ``kernsolve._kernels.Canonical`` (X checked by a layer above) is
        taken without a second pass over its values.
    name : str
        The matrix's name in messages (LIBSVM-style callers).
    owner : str, optional
        An estimator's class name: scikit-learn's checks and messages
        (complex data, conversion of non-numeric arrays, "Found array with 0
        sample(s)"...).  Without it, ``as_canonical``'s.
    n_rows : int, optional
        The number of rows X must have (one per entry of y).
    empty_ok : bool
        Prediction input (``kernsolve.predict``): rows without features are
        LIBSVM's all-zero vectors (one zero column), and no rows is no
        prediction, instead of errors.

    Raises
    ------
    ValueError
        With one line naming the problem.
    """
    if isinstance(X, Canonical):
        X = as_canonical(X, name)        # checked already: no second pass
    elif owner is not None:
        X = _estimator_X(X, owner)       # the one pass over the values
        if issparse(X):
            # sorted indices, int64 row pointers, 2**31 limit
            X = as_canonical(Canonical(X), name)
    else:
        if X is None:
            raise ValueError(f"{name} is None; expected an (n_samples, n_features) matrix")
        X = libsvm_rows(X, name)
        done = False
        if empty_ok:
            X, done = _empty_X(X)
        if not done:
            X = as_canonical(X, name)
    if n_rows is not None and X.shape[0] != n_rows:
        raise ValueError(f"{name} has {X.shape[0]} rows but y has {n_rows} entries")
    return X


def libsvm_rows(X, name="X", *, precomputed=False):
    """LIBSVM's Python rows as a CSR matrix; any other X is returned unchanged.

    ``libsvm.svmutil`` takes x as a list (or tuple) of rows, each a dict
    ``{index: value}`` or a list of values (``[v1, v2, ...]`` is features
    1, 2, ...).  A list of equally long lists is already a matrix with the
    same columns (numpy reads it); a list with a dict or rows of different
    lengths is converted here: index k becomes column k - 1, position p of a
    list column p, and, as LIBSVM drops them, zero values are not stored, so
    the width is the largest index with a non-zero value (LIBSVM's
    ``prob.n``, the default gamma's 1/n).

    With ``precomputed`` (kernel ``-t 4``) the rows are LIBSVM's kernel
    rows: index 0 is the serial number, so index k is column k, and zeros
    are kept.

    Raises
    ------
    ValueError
        A row that is neither, an index that is not an integer >= 1 (>= 0 for
        ``precomputed``), or a value that is not a finite number, named by
        its row (1-based) and index.
    """
    if not isinstance(X, (list, tuple)) or not X:
        return X
    if not any(isinstance(r, dict) for r in X):
        if not all(isinstance(r, (list, tuple, np.ndarray)) for r in X):
            return X            # numpy's conversion (as_canonical) names the problem
        if len({len(r) for r in X}) == 1:
            return X            # a rectangular list: numpy reads it column for column
    first = 0 if precomputed else 1
    indptr = [0]
    indices, data = [], []
    for i, row in enumerate(X, 1):
        if isinstance(row, dict):
            for k in row:
                if not is_number(k, integral=True) or k < first:
                    what = ("integers >= 0 (0 holds the serial number)" if precomputed
                            else "integers >= 1")
                    raise ValueError(f"{name} row {i}: feature indices must be {what}, "
                                     f"got {k!r}")
            pairs = sorted((int(k), v) for k, v in row.items())
        elif isinstance(row, (list, tuple)) or (isinstance(row, np.ndarray)
                                                and row.ndim == 1):
            pairs = list(enumerate(row, first))
        else:
            raise ValueError(f"{name} row {i}: expected a dict {{index: value}} or a list "
                             f"of values (LIBSVM's rows), got {type(row).__name__}")
        for k, v in pairs:
            # a bool is 0 or 1, as libsvm's svm_problem and numpy read it
            if not (is_number(v) or isinstance(v, (bool, np.bool_))):
                raise ValueError(f"{name} row {i}, index {k}: value {v!r} is not a number")
            v = float(v)
            if not np.isfinite(v):
                raise ValueError(f"{name} row {i}, index {k}: value {v!r} is not finite")
            if v != 0 or precomputed:
                indices.append(k - first)
                data.append(v)
        indptr.append(len(indices))
    width = max(indices) + 1 if indices else 1
    # scipy's matrix: what the Python API's callers (libsvm.svmutil's rows) get back
    return make_csr(np.array(data, dtype=np.float64), np.array(indices, dtype=np.int64),
                    np.array(indptr, dtype=np.int64), (len(X), width), scipy=True)


def _empty_X(X):
    """(X, done): prediction's empty inputs as canonical matrices (done), other
    inputs unchanged (not done)."""
    if not issparse(X):
        arr = np.asarray(X)
        if arr.ndim == 1:
            raise ValueError(f"X must be 2-D (n_samples, n_features), got 1-D with "
                             f"shape {arr.shape}")
        if arr.ndim == 2 and arr.shape[1] == 0:
            # Rows without features: LIBSVM reads them as all-zero vectors.
            return _no_entries(arr.shape[0], 1, scipy=True), True
        if arr.ndim == 2 and arr.shape[0] == 0:
            return np.zeros((0, max(arr.shape[1], 1))), True
        return arr, False
    if X.shape[0] == 0 or X.shape[1] == 0:
        return _no_entries(X.shape[0], max(X.shape[1], 1), scipy=not isinstance(X, Csr)), True
    return X, False


def _no_entries(n_rows, n_columns, scipy):
    """A CSR matrix of zeros (scipy's, or a Csr for a Csr's rows)."""
    return make_csr(np.zeros(0), np.zeros(0, dtype=np.int32),
                    np.zeros(n_rows + 1, dtype=np.int64), (n_rows, n_columns), scipy)


def _estimator_X(X, owner):
    """scikit-learn's checks of X (``check_array``'s wording): a float64 C-order
    array or CSR matrix with finite values."""
    if X is None:
        raise ValueError(f"{owner}: expected a 2-D array X, got None")
    if issparse(X):
        if X.dtype.kind == "c":
            raise ValueError("Complex data not supported")
        if X.dtype.kind not in "biuf":
            raise ValueError(f"sparse X must hold numbers, got dtype {X.dtype}")
        if len(X.shape) != 2:
            raise ValueError(f"Expected a 2D sparse matrix, got shape {X.shape}")
        X = scipy_sparse().csr_matrix(X, dtype=np.float64)    # an estimator's input: scipy's
        values = X.data
    else:
        arr = np.asarray(X)
        if arr.dtype.kind == "c":
            raise ValueError("Complex data not supported\n{}\n".format(arr[:2]))
        if arr.dtype.kind not in "biuf":
            # TypeError/ValueError of the conversion is the clearest message
            arr = arr.astype(np.float64)
        if arr.ndim < 2:
            raise ValueError(
                f"Expected 2D array, got {arr.ndim}D array instead (shape {arr.shape}). "
                "Reshape your data either using array.reshape(-1, 1) if your data has "
                "a single feature or array.reshape(1, -1) if it contains a single sample.")
        if arr.ndim > 2:
            raise ValueError(f"Found array with dim {arr.ndim}; {owner} expected <= 2.")
        X = np.ascontiguousarray(arr, dtype=np.float64)
        values = X
    if X.shape[0] == 0:
        raise ValueError(f"Found array with 0 sample(s) (shape={X.shape}) while a "
                         f"minimum of 1 is required by {owner}.")
    if X.shape[1] == 0:
        raise ValueError(f"Found array with 0 feature(s) (shape={X.shape}) while a "
                         f"minimum of 1 is required by {owner}.")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"Input X contains NaN or infinity; {owner} needs finite values.")
    return X


# --------------------------------------------------------------------------
# y and sample weights
# --------------------------------------------------------------------------

def check_targets(y, svm_type):
    """y as a finite float64 vector; integral (32-bit) labels for classification.

    LIBSVM's ``svm-train`` reads labels as doubles and stores class labels as
    C ints: a fractional or huge class label is refused rather than truncated.
    """
    arr = np.asarray(y) if not isinstance(y, np.ndarray) else y
    if arr.dtype.kind not in "biuf":
        if arr.dtype.kind == "O" and all(_is_real(v) for v in arr.ravel()):
            arr = arr.astype(np.float64)
        else:
            raise ValueError(f"labels must be numbers, got an array of dtype {arr.dtype}"
                             + (f" (first entry {arr.ravel()[:1].tolist()[0]!r})" if arr.size else ""))
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError("empty training data: y has no entries")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise ValueError(f"label of row {bad[0] + 1} is not finite ({float(arr[bad[0]])!r})")
    if svm_type in CLASSIFICATION:
        frac = np.flatnonzero(arr != np.round(arr))
        if frac.size:
            raise ValueError(f"classification labels must be integers (LIBSVM stores "
                             f"them as int); row {frac[0] + 1} has {float(arr[frac[0]])!r}")
        big = np.flatnonzero(np.abs(arr) >= 2 ** 31)
        if big.size:
            raise ValueError(f"classification label {float(arr[big[0]])!r} (row {big[0] + 1}) "
                             "does not fit a 32-bit integer")
    return arr


def column_or_1d(y, owner, what="y"):
    """An estimator's y as a 1-D array (a column vector is raveled, with a warning)."""
    if y is None:
        raise ValueError(f"{owner} requires y to be passed, but the target y is None")
    if issparse(y):
        raise ValueError(f"{what} must be a 1-D array, not a sparse matrix")
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        warnings.warn("A column-vector y was passed when a 1d array was expected. "
                      "Please change the shape of y to (n_samples,), for example "
                      "using ravel().", twin(DataConversionWarning), stacklevel=3)
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"{what} should be a 1d array, got an array of shape "
                         f"{y.shape} instead.")
    return y


def check_sample_weight(sample_weight, n, *, owner=None):
    """Per-row weights as a finite float64 vector >= 0 of length ``n`` (None stays None).

    With ``owner`` (an estimator), scikit-learn's rules and wording: a scalar
    is one weight for every row, a weight <= 0 masks its row (returned as 0,
    so the row is left out, as scikit-learn's LIBSVM drops it), and weights
    that mask every row are refused here.  Without it, the training
    functions' (``kernsolve.train``): a negative weight is refused, every
    message names the first bad row, and zero rows are left out by the caller.
    """
    if sample_weight is None:
        return None
    if owner is not None and is_number(sample_weight):
        return _positive_somewhere(np.full(n, float(sample_weight)))
    arr = np.asarray(sample_weight)
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"sample_weight must be numbers, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if owner is not None:
        if arr.ndim != 1:
            raise ValueError(f"Sample weights must be 1D array or scalar, got shape {arr.shape}")
        if arr.shape[0] != n:
            raise ValueError(f"sample_weight.shape == ({arr.shape[0]},), expected ({n},): "
                             "one weight per row of X")
        if not np.all(np.isfinite(arr)):
            raise ValueError("sample_weight contains NaN or infinity")
        return _positive_somewhere(np.maximum(arr, 0.0))
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"sample_weight has shape {arr.shape}; expected ({n},), "
                         "one weight per row")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise ValueError(f"sample_weight of row {bad[0] + 1} is not finite ({float(arr[bad[0]])!r})")
    neg = np.flatnonzero(arr < 0)
    if neg.size:
        raise ValueError(f"sample_weight of row {neg[0] + 1} is negative ({float(arr[neg[0]])!r}); "
                         "weights must be >= 0")
    return arr


def _positive_somewhere(sw):
    if not (sw > 0).any():
        raise ValueError("Invalid input - all samples have zero or negative weights. "
                         "(A row of sample_weight <= 0 is left out: nothing is left "
                         "to train on.)")
    return sw


# --------------------------------------------------------------------------
# classes, gamma, seeds
# --------------------------------------------------------------------------

def group_classes(y):
    """LIBSVM's ``svm_group_classes``: labels by first appearance, +1/-1 swap.

    Returns
    -------
    labels : int64 ndarray
        The classes in LIBSVM's order: first appearance, except that two
        classes -1 and +1 with -1 first are swapped, so that the binary SVM's
        positive class is +1 (LIBSVM 3.37).
    start, count : intp/int64 ndarrays
        Where each class's rows start in the grouped order, and how many.
    perm : intp ndarray
        The data rows grouped by class (stable inside a class).
    """
    ints = y.astype(np.int64)
    uniq, first, inverse = np.unique(ints, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")        # classes by first appearance
    labels = uniq[order]
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    data_label = rank[inverse.ravel()]
    if labels.size == 2 and labels[0] == -1 and labels[1] == 1:
        labels = labels[::-1].copy()
        data_label = 1 - data_label
    count = np.bincount(data_label, minlength=labels.size)
    start = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.intp)
    perm = np.argsort(data_label, kind="stable").astype(np.intp)
    return labels, start, count, perm


def class_index(y):
    """(labels, index): LIBSVM's label order (:func:`group_classes`) and, for
    each row, the position of its label in it."""
    labels, start, count, perm = group_classes(y)
    index = np.empty(perm.size, dtype=np.intp)
    for c in range(labels.size):
        index[perm[start[c]:start[c] + count[c]]] = c
    return labels, index


def resolve_gamma(gamma, n_features, X=None, *, kernel_type=RBF, seed=0):
    """The gamma a model is trained with (every solver resolves it here).

    ``"median"``: the median trick on a seeded sample of the rows of ``X``
    (:func:`kernsolve._features.median_gamma` for ``kernel_type``, rbf or
    laplacian, with ``seed``).  None or 0: LIBSVM's 1/n_features (0 when
    there are no features).  Other values as given.

    (``kernel_matrix`` is a kernel function, not a training option: there
    gamma=0 is the constant kernel and only None means 1/n_features.)
    """
    if isinstance(gamma, str) and gamma == "median":
        if X is None:
            raise ValueError("-g median: the median trick needs the training data")
        return median_gamma(X, kernel=int(kernel_type), seed=seed)
    if gamma is None or gamma == 0:
        return 1.0 / n_features if n_features and n_features > 0 else 0.0
    return float(gamma)


def estimator_gamma(gamma, X):
    """scikit-learn's ``gamma=``: 'scale' is ``1 / (n_features * X.var())`` (1 when
    X is constant), 'auto' ``1 / n_features``, a number as given."""
    n_features = X.shape[1]
    if gamma == "auto":
        return 1.0 / n_features
    if gamma == "scale":
        with np.errstate(over="ignore", invalid="ignore"):
            if issparse(X):
                mean = X.mean()
                var = X.multiply(X).mean() - mean * mean
            else:
                var = X.var()
        if not np.isfinite(var):
            # 1 / inf would be gamma 0: a constant kernel where the distances
            # are finite, exp(-0 * inf) where they overflow too
            raise ValueError("gamma='scale' is 1 / (n_features * X.var()), but X.var() "
                             "overflows float64: the input data may contain large values "
                             "and need to be preprocessed (StandardScaler, MinMaxScaler)")
        return 1.0 / (n_features * var) if var != 0 else 1.0
    return float(gamma)


def seed_of(random_state):
    """An integer seed for kernsolve's RNG from scikit-learn's ``random_state``."""
    if random_state is None:
        return 0          # kernsolve is reproducible by default
    if is_number(random_state, integral=True):
        if not 0 <= int(random_state) < 2 ** 64:
            raise ValueError(f"random_state must be in [0, 2**64), got {random_state}")
        return int(random_state)
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(np.iinfo(np.int32).max))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2 ** 63))
    raise ValueError(f"random_state must be None, an int or a numpy RandomState, "
                     f"got {random_state!r}")


# ---------------------------------------------------------------- sizes and one class

def _size_text(n_bytes):
    for unit, size in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if n_bytes >= size:
            return f"{n_bytes / size:.3g} {unit}"
    return f"{n_bytes} bytes"


def check_allocation(n_bytes, what, fix=""):
    """The one check of a size before it is allocated.

    Refuses (ValueError) when ``what`` would take more than
    :func:`memory_limit`: the message says how much it would take, and
    ``fix`` what to change.  Callers size ``n_bytes`` from what the input
    asks for (a header's counts, a data file's largest index) before any
    allocation that follows from it.
    """
    limit = memory_limit()
    if n_bytes > limit:
        raise ValueError(f"{what} would take {_size_text(n_bytes)}, more than the "
                         f"{_size_text(limit)} kernsolve allows itself (half of this "
                         f"machine's memory or of ulimit -v)" + (f"; {fix}" if fix else ""))


#: LIBSVM's line for training data with one class (svm_train's info).
ONE_CLASS_INFO = "WARNING: training data in only one class. See README for details.\n"


def warn_one_class(label, stacklevel=3):
    """LIBSVM's one-class case as a Python warning: the model predicts ``label``."""
    warnings.warn(f"training data has only one class (label {label}); like "
                  "LIBSVM, the model predicts that label for every input and has "
                  "no decision values", UserWarning, stacklevel=stacklevel + 1)
