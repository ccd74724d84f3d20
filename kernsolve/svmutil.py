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

What differs from svmutil on purpose is listed in doc/python-api.md
("Coming from libsvm's Python bindings").
"""
import copy
import io
import sys

import numpy as np
import scipy.sparse as sp

from ._api import train
from ._constants import PRECOMPUTED, REGRESSION
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
           "svm_save_model", "svm_problem", "svm_parameter", "evaluations"]

# The C library's rand() as LIBSVM's calls in a Python process see it: never
# seeded (seed 1), advanced by every -v and -b 1 training of this module.
_RAND = [GlibcRand(1)]


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
        result = train(y, X, param, _folds=folds)
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
    labels, acc, values = predict(y, x, m, options)
    if isinstance(m, Model) and probability and int(m.param.svm_type) in REGRESSION:
        p_vals = [[] for _ in range(labels.shape[0])]
    elif isinstance(m, Model) and not probability and m.nr_class == 1:
        p_vals = [[1] for _ in range(labels.shape[0])]     # svmutil's value for one class
    else:
        p_vals = np.asarray(values, dtype=np.float64).tolist()
    return labels.tolist(), tuple(float(v) for v in acc), p_vals


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
    return load_model(model_file_name)


def svm_save_model(model_file_name, model):
    """``svm_save_model(path, model)``: LIBSVM's model file format."""
    if not isinstance(model, (Model, ModelKind)):
        raise TypeError(f"svm_save_model: model must be a model from svm_train or "
                        f"svm_load_model, got {type(model).__name__}")
    save_model(model_file_name, model)


def evaluations(ty, pv, useScipy=True):
    """``evaluations(ty, pv)`` -> (ACC, MSE, SCC), as ``libsvm.commonutil`` computes them."""
    return _evaluations(ty, pv)


# --------------------------------------------------------------------------

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
