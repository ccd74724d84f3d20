"""LIBSVM's Python interface (``libsvm.svmutil``) on kernsolve.

``from kernsolve.svmutil import *`` replaces ``from libsvm.svmutil import *``
in a LIBSVM user's script: the same calls, arguments and return values
(Python lists where svmutil returns lists), with kernsolve's solvers and
readers underneath.  kernsolve's own API is ``kernsolve.train``,
``kernsolve.predict``, ``kernsolve.read_problem``, ...; this module adapts
the conventions in which LIBSVM's bindings differ from it:

* ``svm_train(y, x, '-v 5')`` returns the cross-validation accuracy (or the
  mean squared error for regression), as ``svm_train`` does;
  ``kernsolve.train`` trains models only (cross-validation is
  ``kernsolve.cross_validation``).
* The ``-v`` folds and the internal folds of ``-b 1`` are drawn as LIBSVM
  draws them in a Python process: from the C library's ``rand()`` (glibc's
  sequence, never seeded, as ``kernsolve.solvers.libsvm.libsvm_rand``
  emulates it), one sequence that continues from call to call.  A script
  that calls these functions in the same order as it called svmutil's gets
  the same folds, so the same accuracies and probability models.
* The default gamma is ``1/n`` where n is LIBSVM's ``prob.n``: the largest
  index with a non-zero value for lists and numpy arrays, the width of a
  scipy matrix.  (``kernsolve.train`` takes the width of X.)
* ``svm_predict`` returns lists; ``y=[]`` evaluates against zeros, as
  svmutil does; for an epsilon-/nu-SVR model with ``-b 1`` the values are
  empty lists, as svmutil's.
* ``svm_read_problem`` returns ``(list of float, list of dict)``, the dicts
  holding the file's indices and values (zeros included), or with
  ``return_scipy=True`` ``(ndarray, csr_matrix)`` with zeros left out and
  0-based columns, as svmutil builds them.
* Models are :class:`svm_model`: a :class:`kernsolve.Model` with libsvm's
  methods (``get_labels()``, ``get_SV()``, ...) and fields (``l``, ``nSV``,
  ``sv_coef``, ...) as Python values; ``csr_find_scale_param``/``csr_scale``
  are commonutil's.

What differs from svmutil on purpose is listed in doc/python-api.md
("Coming from libsvm's Python bindings").
"""
import copy
import dataclasses
import io
import sys
from enum import IntEnum

import numpy as np
import scipy.sparse as sp

from ._api import train
from ._constants import CLASSIFICATION, PRECOMPUTED, REGRESSION
from ._io import read_problem
from ._model import Model, load_model, save_model
from ._model_kind import ModelKind
from ._params import parse_options
from ._predict import _parse_predict_options, evaluations as _evaluations, predict
from ._validation import check_targets, libsvm_rows
from .model_selection.cv import cross_validation
from .solvers.libsvm.libsvm_rand import GlibcRand, cross_validation_folds, probability_folds
from ._sparse import issparse

__all__ = ["svm_train", "svm_predict", "svm_read_problem", "svm_load_model",
           "svm_save_model", "svm_problem", "svm_parameter", "svm_model", "evaluations",
           "csr_find_scale_param", "csr_scale", "svm_forms", "kernel_names", "print_null"]

# The C library's rand() as LIBSVM's calls in a Python process see it: never
# seeded (seed 1), advanced by every -v and -b 1 training of this module.
_RAND = [GlibcRand(1)]


class svm_forms(IntEnum):
    """LIBSVM's SVM types (``-s``), as ``libsvm.svm.svm_forms``."""
    C_SVC = 0
    NU_SVC = 1
    ONE_CLASS = 2
    EPSILON_SVR = 3
    NU_SVR = 4


class kernel_names(IntEnum):
    """LIBSVM's kernels (``-t``), as ``libsvm.svm.kernel_names``."""
    LINEAR = 0
    POLY = 1
    RBF = 2
    SIGMOID = 3
    PRECOMPUTED = 4


def print_null(s):
    """svmutil's print function that prints nothing."""


class svm_model(Model):
    """A :class:`kernsolve.Model` with libsvm's ``svm_model`` methods and fields.

    ``svm_train`` and ``svm_load_model`` return these for LIBSVM's model
    types, so a script that reads a model through libsvm's interface
    (``m.get_labels()``, ``m.nSV[0]``, ``m.sv_coef[0][i]``) runs unchanged.
    The values are libsvm's: labels and counts as ints, the coefficients per
    support vector as tuples, the support vectors as ``{index: value}`` dicts
    (1-based; index 0 holds the serial number for a precomputed kernel).
    ``SV`` (ctypes ``svm_node`` arrays) is not provided: ``get_SV()`` gives it.
    """

    @classmethod
    def from_model(cls, model):
        """The same model (the same arrays, not copies) as an svm_model."""
        return cls(**{f.name: getattr(model, f.name) for f in dataclasses.fields(Model)})

    # ---- libsvm's methods
    def get_svm_type(self):
        return int(self.param.svm_type)

    def get_nr_class(self):
        return int(self.nr_class)

    def get_svr_probability(self):
        """The Laplace scale of an SVR probability model, else 0 (with libsvm's message)."""
        if int(self.param.svm_type) in REGRESSION and self.prob_a is not None:
            return float(self.prob_a[0])
        sys.stderr.write("Model doesn't contain information for SVR probability inference\n")
        return 0.0

    def get_labels(self):
        """The class labels as ints (libsvm's int labels); zeros when the model has
        none (regression, one-class), as libsvm's ``svm_get_labels`` leaves them."""
        if int(self.param.svm_type) not in CLASSIFICATION:
            return [0] * self.get_nr_class()
        return self.label

    def get_sv_indices(self):
        return self.sv_indices

    def get_nr_sv(self):
        return self.l

    def get_sv_coef(self):
        coef = self.sv_coef
        return [tuple(coef[j][i] for j in range(self.get_nr_class() - 1)) for i in range(self.l)]

    def get_SV(self):
        X = self.support_vectors
        first = 0 if int(self.param.kernel_type) == PRECOMPUTED else 1
        if issparse(X):
            X = X.tocsr()
            ind, ptr = X.indices.tolist(), X.indptr.tolist()
            val = X.data.astype(np.float64).tolist()
            return [{j + first: v for j, v in zip(ind[a:b], val[a:b])}
                    for a, b in zip(ptr[:-1], ptr[1:])]
        X = np.asarray(X, dtype=np.float64)
        return [{int(j) + first: float(row[j]) for j in np.flatnonzero(row)} for row in X]

    # ---- libsvm's fields (its C arrays, as Python lists indexed the same way)
    @property
    def l(self):                # noqa: E743 (LIBSVM's name)
        return self.n_sv

    @property
    def label(self):
        return [int(v) for v in np.asarray(self.labels)]

    @property
    def nSV(self):
        return [int(v) for v in np.asarray(self.n_support)]

    @property
    def sv_indices(self):
        return [int(v) for v in np.asarray(self.support_indices)]

    @property
    def sv_coef(self):
        return np.asarray(self.dual_coef, dtype=np.float64).tolist()

    @property
    def probA(self):
        return None if self.prob_a is None else np.asarray(self.prob_a, np.float64).tolist()

    @property
    def probB(self):
        return None if self.prob_b is None else np.asarray(self.prob_b, np.float64).tolist()


def _as_svm_model(model):
    return svm_model.from_model(model) if type(model) is Model else model


class svm_problem:
    """``svm_problem(y, x[, isKernel])``: the training data of ``svm_train(prob, ...)``.

    Attributes ``y``, ``x`` (as given) and ``l`` (the number of rows).
    """

    def __init__(self, y, x, isKernel=False):
        _check_y_type(y)
        _check_x_type(x)
        n = _n_rows(x)
        if len(y) != n:
            raise ValueError(f"svm_problem: y has {len(y)} labels but x has {n} rows")
        self.y, self.x, self.l, self.isKernel = y, x, n, bool(isKernel)


def svm_parameter(options=None):
    """``svm_parameter('-c 4 -q')``: the options as a :class:`kernsolve.Parameters`."""
    return parse_options("" if options is None else options)


def svm_train(arg1, arg2=None, arg3=None):
    """``svm_train(y, x[, options])`` or ``svm_train(prob[, options])`` -> model | ACC | MSE.

    y : list, tuple or ndarray of labels (targets for regression).
    x : list or tuple of rows (dicts ``{index: value}`` or lists of values),
        a numpy array or a scipy sparse matrix.
    options : LIBSVM's option string (``'-c 4 -b 1 -q'``; kernsolve's long
        options too), or an ``svm_parameter``.

    Returns a :class:`kernsolve.Model`, or with ``-v n`` the cross-validation
    accuracy in percent (classification, one-class) or mean squared error
    (regression), printing svmutil's lines.
    """
    if isinstance(arg1, svm_problem):
        y, x, options = arg1.y, arg1.x, arg2
    else:
        _check_y_type(arg1, "svm_train(y, x[, options]) or svm_train(prob[, options])")
        if arg2 is None:
            raise TypeError("svm_train(y, x[, options]): x is missing")
        y, x, options = arg1, arg2, arg3
        _check_x_type(x)
    param = parse_options("" if options is None else options)
    X = libsvm_rows(x, precomputed=param.kernel_type == PRECOMPUTED)
    y = check_targets(y, param.svm_type)
    if y.shape[0] != _n_rows(X):
        raise ValueError(f"svm_train: y has {y.shape[0]} labels but x has {_n_rows(X)} rows")
    if param.kernel_type != PRECOMPUTED and not param.gamma:
        n = _problem_width(x, X)
        if n > 0:                          # svmutil: param.gamma = 1.0 / prob.n
            param = param.copy(gamma=1.0 / n)
    rng = copy.deepcopy(_RAND[0])          # advanced only if training succeeds
    if param.n_folds:
        result = _cross_validate(y, X, param, rng)
    else:
        folds = probability_folds(y, param.svm_type, rng) if param.probability else None
        result = _as_svm_model(train(y, X, param, _folds=folds))
        if param.kernel_type == PRECOMPUTED and isinstance(result, Model) and result.l:
            # libsvm's trained model points into the training rows, so get_SV()
            # gives whole kernel rows (the model file keeps the 0:serial only)
            rows = np.asarray(result.support_indices) - 1
            result.support_vectors = X[rows] if issparse(X) or isinstance(X, np.ndarray) \
                else np.asarray([X[i] for i in rows], dtype=np.float64)
    _RAND[0] = rng
    return result


def _cross_validate(y, X, param, rng):
    """svmutil's ``-v``: LIBSVM's folds from ``rng``, the summary printed (even with -q)."""
    k = param.n_folds
    if k > y.shape[0]:
        sys.stderr.write("WARNING: # folds > # data. Will use # folds = # data instead "
                         "(i.e., leave-one-out cross validation)\n")
        k = y.shape[0]
    folds, prob_folds = cross_validation_folds(y, k, param.svm_type, param.probability, rng)
    cv = cross_validation(y, X, param.copy(n_folds=0), folds=folds,
                          _probability_folds=prob_folds, verbose=False)
    if param.svm_type in REGRESSION:
        print("Cross Validation Mean squared error = %g" % cv.mean_squared_error)
        print("Cross Validation Squared correlation coefficient = %g" % cv.squared_correlation)
        return cv.mean_squared_error
    print("Cross Validation Accuracy = %g%%" % cv.accuracy)
    return cv.accuracy


def svm_predict(y, x, m, options=""):
    """``svm_predict(y, x, m[, options])`` -> (p_labels, (ACC, MSE, SCC), p_vals).

    Lists, as svmutil returns them: the predicted labels (floats); the
    accuracy in percent, mean squared error and squared correlation against
    ``y`` (``y=[]``: against zeros, as svmutil); per row the k(k-1)/2
    decision values, or with ``-b 1`` the k probabilities in ``m.labels``
    order (one-class: 2; epsilon-/nu-SVR: none).  Options: ``-b 0|1``,
    ``-q`` (and ``--threads N``).
    """
    _check_x_type(x)
    _check_y_type(y, "svm_predict(y, x, m[, options])")
    if not isinstance(m, (Model, ModelKind)):
        raise TypeError("svm_predict: m must be a model from svm_train or svm_load_model, "
                        f"got {type(m).__name__}")
    probability = _parse_predict_options(options)[0]
    if len(y) == 0:
        y = np.zeros(_n_rows(x))
    if isinstance(m, Model) and int(m.param.kernel_type) == PRECOMPUTED:
        x = _kernel_values_by_position(x)
    labels, acc, values = predict(y, x, m, options)
    if isinstance(m, Model) and probability and int(m.param.svm_type) in REGRESSION:
        p_vals = [[] for _ in range(labels.shape[0])]
    elif isinstance(m, Model) and not probability and m.nr_class == 1:
        p_vals = [[1] for _ in range(labels.shape[0])]     # svmutil's value for one class
    else:
        p_vals = np.asarray(values, dtype=np.float64).tolist()
    return labels.tolist(), tuple(float(v) for v in acc), p_vals


def _kernel_values_by_position(x):
    """Precomputed-kernel rows as LIBSVM reads them: the kernel value of the SV
    with serial number s is the row's s-th stored entry (its node array's
    position s), whatever its index.  For a complete row (0:serial 1:K(x,x_1)
    ... as the format asks) position and index agree; for a sparse row (zeros
    left out, as scipy and svm_read_problem(..., return_scipy=True) store
    them) they do not, and svmutil gives LIBSVM's values."""
    X = libsvm_rows(x, precomputed=True)
    if not issparse(X):
        return x
    X = X.tocsr()
    X.sort_indices()
    counts = np.diff(X.indptr)
    positions = np.arange(X.nnz) - np.repeat(X.indptr[:-1], counts)
    width = int(counts.max()) if counts.size else 0
    return sp.csr_matrix((X.data, positions, X.indptr), shape=(X.shape[0], width))


def svm_read_problem(data_source, return_scipy=False):
    """``svm_read_problem(path or file object[, return_scipy])`` -> (y, x).

    Without ``return_scipy``: y a list of floats, x a list of dicts
    ``{index: value}`` as the file has them (zeros kept).  With it: y a
    float64 ndarray, x a csr_matrix without the zero values, columns 0-based
    (index 1 is column 0, unless the file has an index 0).  Read by
    :func:`kernsolve.read_problem` (so ``.gz``/``.bz2``/``.xz`` and comment
    lines work, and a malformed line is named by file and line).
    """
    source = data_source
    if hasattr(data_source, "read"):
        probe = data_source.read(0)
        if isinstance(probe, str):          # svmutil reads text-mode file objects
            source = io.BytesIO(data_source.read().encode("utf-8"))
    y, X = read_problem(source, zero_based=True)      # column j = the file's index j
    if not return_scipy:
        ind, val, ptr = X.indices.tolist(), X.data.tolist(), X.indptr.tolist()
        return y.tolist(), [dict(zip(ind[a:b], val[a:b])) for a, b in zip(ptr[:-1], ptr[1:])]
    start = 0 if np.any(X.indices == 0) else 1    # svmutil: 0-based once it sees index 0
    keep = X.data != 0
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    counts = np.bincount(rows[keep], minlength=X.shape[0])
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    indices = X.indices[keep].astype(np.int64) - start
    return y, sp.csr_matrix((X.data[keep], indices, indptr))   # shape as svmutil infers it


def svm_load_model(model_file_name):
    """``svm_load_model(path)`` -> model (LIBSVM's files and kernsolve's).

    Raises (where svmutil prints "can't open model file" and returns None).
    """
    return _as_svm_model(load_model(model_file_name))


def svm_save_model(model_file_name, model):
    """``svm_save_model(path, model)``: LIBSVM's model file format."""
    if not isinstance(model, (Model, ModelKind)):
        raise TypeError(f"svm_save_model: model must be a model from svm_train or "
                        f"svm_load_model, got {type(model).__name__}")
    save_model(model_file_name, model)


def evaluations(ty, pv, useScipy=True):
    """``evaluations(ty, pv)`` -> (ACC, MSE, SCC), as ``libsvm.commonutil`` computes them."""
    return _evaluations(ty, pv)


def evaluations_scipy(ty, pv):
    """``evaluations_scipy(ty, pv)`` -> (ACC, MSE, SCC) of two ndarrays (``libsvm.commonutil``)."""
    if not (isinstance(ty, np.ndarray) and isinstance(pv, np.ndarray)):
        raise TypeError("evaluations_scipy: ty and pv must be numpy arrays")
    return _evaluations(ty, pv)


def csr_find_scale_param(x, lower=-1, upper=1):
    """``csr_find_scale_param(x[, lower, upper])`` -> ``{'coef': ..., 'offset': ...}``.

    The scaling of every column of the CSR matrix x to [lower, upper], as
    ``libsvm.commonutil`` computes it: ``x * diag(coef) + ones(l, 1) * offset'``
    (a constant column gets coef 0 and offset 0).  Warns, as commonutil does,
    when the scaled matrix would be more than three times as dense.
    """
    x = _csr_argument(x, "csr_find_scale_param")
    if not lower < upper:
        raise ValueError(f"csr_find_scale_param: lower ({lower}) must be less than "
                         f"upper ({upper})")
    feat_min = np.asarray(x.min(axis=0).toarray()).ravel()
    feat_max = np.asarray(x.max(axis=0).toarray()).ravel()
    coef = (feat_max - feat_min) / (upper - lower)
    coef[coef != 0] = 1.0 / coef[coef != 0]
    offset = -feat_min * coef + lower
    offset[coef == 0] = 0
    if np.count_nonzero(offset) * x.shape[0] > 3 * x.nnz:
        sys.stderr.write("WARNING: the scaled data would have more than 3 times the non-zeros "
                         "of x; for non-negative sparse features, set lower=0\n")
    return {"coef": coef, "offset": offset}


def csr_scale(x, scale_param):
    """``csr_scale(x, scale_param)`` -> the CSR matrix ``x * diag(coef) + offset``.

    ``scale_param`` from :func:`csr_find_scale_param`.  When its length differs
    from x's width, a warning, then the parameters cut or padded with zeros
    (libsvm's commonutil means to, but fails there).
    """
    x = _csr_argument(x, "csr_scale")
    coef = np.asarray(scale_param["coef"], dtype=np.float64)
    offset = np.asarray(scale_param["offset"], dtype=np.float64)
    if coef.shape != offset.shape:
        raise ValueError(f"csr_scale: scale_param has {coef.size} coef and "
                         f"{offset.size} offset values")
    l, n = x.shape
    if coef.size != n:
        sys.stderr.write(f"WARNING: csr_scale: scale_param has {coef.size} features, x has "
                         f"{n}: extra ones dropped, missing ones zero\n")
        coef, offset = np.resize(np.pad(coef, (0, max(n - coef.size, 0))), n), \
            np.resize(np.pad(offset, (0, max(n - offset.size, 0))), n)
    # offset' on every row, stored as its non-zeros only (as commonutil's vstack)
    cols = np.flatnonzero(offset)
    offsets = sp.csr_matrix((np.tile(offset[cols], l).astype(x.dtype), np.tile(cols, l),
                             np.arange(l + 1) * cols.size), shape=(l, n))
    scaled = x.dot(sp.diags(coef, 0, shape=(n, n))) + offsets
    if scaled.nnz > x.nnz:
        sys.stderr.write(f"WARNING: csr_scale: {x.nnz} non-zeros became {scaled.nnz}; for "
                         f"non-negative sparse features, find scale_param with lower=0\n")
    return scaled


# --------------------------------------------------------------------------

def _csr_argument(x, call):
    if not (issparse(x) and x.format == "csr"):
        raise TypeError(f"{call}: x must be a scipy CSR matrix, got {type(x).__name__}")
    return x


def _check_y_type(y, call="svm_problem(y, x)"):
    if not isinstance(y, (list, tuple, np.ndarray)):
        raise TypeError(f"{call}: y must be a list, tuple or numpy array of labels, "
                        f"got {type(y).__name__}")


def _check_x_type(x):
    if not (isinstance(x, (list, tuple, np.ndarray)) or issparse(x)):
        raise TypeError("x must be a list of rows (dicts {index: value} or lists), a numpy "
                        f"array or a scipy sparse matrix, got {type(x).__name__}")


def _n_rows(x):
    return x.shape[0] if (issparse(x) or isinstance(x, np.ndarray)) else len(x)


def _problem_width(x, X):
    """LIBSVM's ``prob.n`` for ``svm_problem(y, x)``: a scipy matrix's width, else
    the largest index holding a non-zero value (0 if none).  ``X`` is ``x`` after
    ``libsvm_rows`` (whose sparse form stores the non-zeros only)."""
    if issparse(x):
        return x.shape[1]
    if issparse(X):
        return int(X.indices.max()) + 1 if X.nnz else 0
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        return 0                            # train names the problem
    if arr.ndim != 2:
        return 0
    used = np.flatnonzero(np.any(arr != 0, axis=0))
    return int(used[-1]) + 1 if used.size else 0
