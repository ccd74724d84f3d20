"""Prediction with a trained :class:`~kernsolve.Model`, as LIBSVM's ``svm_predict``.

Decision values are LIBSVM's ``svm_predict_values``: for classification the
one-vs-one values of the pairs (0,1), (0,2), ..., (1,2), ... in label order,
each ``sum(coef * K(x, SV)) - rho``; for regression the value; for one-class
the value, whose sign is the label.  Each is LIBSVM's running sum over the
pair's two classes' SVs in LIBSVM's order (:func:`_decision_values`): the
kernel values of eight test rows and a tile of SVs are computed into a buffer
that stays in the cache and added to the sums at once
(``_core._decision_sums.decision_sums``); where that path does not apply (the
Laplacian kernel, SVs that stay sparse without their transpose, precomputed
kernels) one kernel block ``K(X_block, SV)`` for all pairs at a time, then the
sums.  Memory stays bounded however many rows are predicted, and the bits are
the same either way, whatever BLAS or the thread count.

Probabilities follow LIBSVM 3.37's ``svm_predict_probability``: Platt's
sigmoid in its cancellation-free form, clipped to [1e-7, 1 - 1e-7], the two
values directly for two classes and LIBSVM's ``multiclass_probability``
(pairwise coupling, same iteration and stopping rule) for more; one-class
probabilities from the ten density marks.
"""
import sys
from typing import Sequence

import numpy as np

from ._constants import CLASSIFICATION, ONE_CLASS, PRECOMPUTED, REGRESSION
from ._core._decision_sums import expansion_sums
from ._kernels import (as_operand, block_rows, check_kernel_params, rows_against_operand,
                       sums_against_operand, transposed_operand)
from ._model import Model, _check_model
from ._model_kind import ModelKind
from ._params import _parse_number, split_options
from ._sparse import dense_columns, issparse, row_block, to_scipy, widened
from ._threads import check_n_jobs, resolve_n_jobs
from ._typing import ArrayLike, LibsvmRows, MatrixLike, NDArray
from ._validation import check_X, libsvm_rows

# Bytes of kernel values per block (K block plus the product): bounds memory.
BLOCK_BYTES = 32 * 2 ** 20
MIN_PROB = 1e-7  # LIBSVM's clip of pairwise probabilities


# ---------------------------------------------------------------- options

def _parse_predict_options(options):
    """``-b 0|1``, ``-q``, ``--threads N`` -> (probability, quiet, n_jobs)."""
    # "--" is no end marker here: there are no positional arguments to protect.
    pairs, positional = split_options("" if options is None else options, flags=("-q",),
                                      end_marker=False)
    probability, quiet, n_jobs = False, False, None
    for name, values in pairs:
        if name == "-q":
            quiet = True
        elif name not in ("-b", "--threads"):
            raise ValueError(f"unknown option: {name}")
        elif values is None:
            raise ValueError(f"{name}: missing value")
        elif name == "-b":
            probability = _parse_number("-b", values[0], "bool")
        else:
            n_jobs = check_n_jobs(_parse_number("--threads", values[0], "int"), "--threads")
    if positional:
        raise ValueError(f"unknown option: {positional[0]}")
    return probability, quiet, n_jobs


# ---------------------------------------------------------------- kernel block

def _prepare_X(X, precomputed=False):
    """Canonical X (dense float64 or CSR) with finite values, or ValueError.

    LIBSVM's Python rows are read as ``libsvm_rows`` reads them, as kernel
    rows (index 0 = serial number) for a precomputed model."""
    if X is None:
        raise ValueError("X is None")
    X = libsvm_rows(X, precomputed=precomputed)
    return check_X(X, empty_ok=True)


def _is_precomputed(model):
    return int(model.param.kernel_type) == PRECOMPUTED


def _widen(M, width):
    """M as CSR with ``width`` columns (extra columns are zeros)."""
    return widened(M, width)


class _KernelBlocks:
    """K(X_block, SV) for blocks of rows, with LIBSVM's width rule.

    LIBSVM's kernels run over the union of the indices of the two sparse
    vectors, so a feature that only the test data has still counts (RBF) and
    one that only the SVs have counts too: both sides are padded with zero
    columns to the common width.
    """

    def __init__(self, X, model, n_jobs):
        self.model = model
        self.param = model.param
        self.n_jobs = n_jobs
        self.l = model.support_vectors.shape[0]
        t = int(self.param.kernel_type)
        if t == PRECOMPUTED:
            sv = model.support_vectors
            col0 = dense_columns(sv, [0]).ravel()
            self.serials = col0.astype(np.int64)
            if self.l and (self.serials < 0).any():
                raise ValueError("precomputed kernel: negative serial number in the model")
            need = int(self.serials.max()) + 1 if self.l else 1
            if X.shape[1] < need:
                raise ValueError(
                    f"precomputed kernel: test rows have {X.shape[1]} columns (index 0 is "
                    f"the serial number) but a support vector has serial number {need - 1}")
            self.X = X
            self.SV = None
            return
        sv = model.support_vectors
        if not issparse(sv):
            sv = np.asarray(sv, dtype=np.float64)
        width = max(X.shape[1], sv.shape[1], 1)
        if X.shape[1] != width:
            X = _widen(X, width)
        if sv.shape[1] != width:
            sv = _widen(sv, width)
        self.X = X
        # Converted once (densified when kernel_matrix would do it per block).
        self.SV = as_operand(sv, int(self.param.kernel_type),
                             name="support vectors") if self.l else None
        p = self.param
        self.gamma, self.degree, self.coef0 = check_kernel_params(
            p.gamma, int(p.degree), float(p.coef0), width, int(p.kernel_type))
        # support vectors that stay sparse: Y^T dense, made once
        self.transposed = transposed_operand(self.SV, t) if self.l else None

    def sums(self, start, stop, columns, coefs, out):
        """``expansion_sums`` of the kernel values of rows ``start .. stop-1``
        into ``out``, without kernel blocks
        (:func:`~kernsolve._kernels.sums_against_operand`, the same bits);
        False, having done nothing, where that path does not apply (then
        :meth:`block`)."""
        if self.l == 0 or int(self.param.kernel_type) == PRECOMPUTED:
            return False
        p = self.param
        return sums_against_operand(row_block(self.X, start, stop), self.SV, int(p.kernel_type),
                                    self.gamma, self.degree, self.coef0, self.n_jobs,
                                    self.transposed, columns, coefs, out)

    def block(self, start, stop):
        Xb = row_block(self.X, start, stop)
        if self.l == 0:
            return np.zeros((stop - start, 0))
        p = self.param
        if int(p.kernel_type) == PRECOMPUTED:
            return dense_columns(Xb, self.serials)
        return rows_against_operand(Xb, self.SV, int(p.kernel_type), self.gamma,
                                    self.degree, self.coef0, self.n_jobs, self.transposed)


def _pair_column(i, j, k):
    """The column of pair (i, j), i < j, in LIBSVM's order (0,1), (0,2), ..., (1,2), ..."""
    return i * (2 * k - i - 1) // 2 + (j - i - 1)


def _expansion_terms(model, coef):
    """Where each support vector's products go: ``(columns, coefs)``, both (n_SV, m).

    LIBSVM's ``svm_predict_values``: in pair (i, j) class i's SVs carry
    ``sv_coef[j-1]`` and class j's ``sv_coef[i]``, so an SV of class i adds
    ``coef[q, s] * K(x, SV_s)`` to the k-1 pairs (0,i), ..., (i-1,i), (i,i+1),
    ..., (i,k-1), ``coef`` row q for the q-th of them.  Added in SV order,
    each pair's sum runs over class i's SVs and then class j's, LIBSVM's own
    order.  Regression and one-class: one column, ``coef[0]``.  The arrays are
    the size of the model's coefficients, never n_SV x n_pairs.
    """
    l = model.support_vectors.shape[0]
    if int(model.param.svm_type) not in CLASSIFICATION:
        return np.zeros((l, 1), dtype=np.intp), np.ascontiguousarray(coef[:1].T)
    k = model.nr_class
    ns = np.asarray(model.n_support, dtype=np.int64).ravel()
    columns = np.empty((l, k - 1), dtype=np.intp)
    start = np.concatenate([[0], np.cumsum(ns)])
    for i in range(k):
        columns[start[i]:start[i + 1]] = np.concatenate(
            [_pair_column(np.arange(i), i, k), _pair_column(i, np.arange(i + 1, k), k)])
    return columns, np.ascontiguousarray(coef.T)


def _decision_values(X, model, n_jobs):
    """Decision values of every row of X (see :func:`_row_values`)."""
    return next(_row_values(X, model, n_jobs, X.shape[0]))[2]


def _row_values(X, model, n_jobs, max_rows=None):
    """Decision values in LIBSVM's summation order: ``(start, stop, values)``
    for consecutive groups of at most ``max_rows`` rows (default: as many as
    keep the values within BLOCK_BYTES), so that a caller that keeps only
    labels holds one group's values, never rows x k(k-1)/2 of them.

    Each value is LIBSVM's ``sum += coef * K`` over the pair's SVs in file
    order (class i's then class j's), then ``sum -= rho``, computed by the
    compiled ``expansion_sums``: products rounded, then added one by one,
    no BLAS product, so the bits depend neither on BLAS, nor on the thread
    count, nor on the groups (each row's sums are its own).
    Memory: the kernel block and the sums of its rows, within BLOCK_BYTES,
    plus the model-sized placement arrays of :func:`_expansion_terms`.
    """
    coef, rho = _check_model(model)
    l = model.support_vectors.shape[0]
    n_values = rho.size if int(model.param.svm_type) in CLASSIFICATION else 1
    n = X.shape[0]
    if max_rows is None:
        max_rows = max(1, BLOCK_BYTES // (8 * max(n_values, 1)))
    max_rows = max(1, int(max_rows))
    if l == 0:
        for start in range(0, max(n, 1), max_rows):
            stop = min(n, start + max_rows)
            yield start, stop, np.tile(-rho, (stop - start, 1))
        return
    columns, coefs = _expansion_terms(model, coef)
    if columns.size and (columns.min() < 0 or columns.max() >= n_values):
        raise ValueError("the model's support vectors do not fit its one-vs-one pairs")
    blocks = _KernelBlocks(X, model, n_jobs)
    rows = block_rows(BLOCK_BYTES // (8 * (l + n_values)))
    threads = resolve_n_jobs(n_jobs)
    for first in range(0, max(n, 1), max_rows):
        last = min(n, first + max_rows)
        out = np.zeros((last - first, n_values))
        if not blocks.sums(first, last, columns, coefs, out):
            for start in range(first, last, rows):
                stop = min(last, start + rows)
                K = np.ascontiguousarray(blocks.block(start, stop), dtype=np.float64)
                expansion_sums(K, columns, coefs, out[start - first:stop - first], threads)
                del K   # before the next block is made: one block in memory, not two
        out -= rho
        yield first, last, out


# ---------------------------------------------------------------- probabilities

def _sigmoid_predict(f, A, B):
    """LIBSVM's sigmoid_predict: 1/(1+exp(fA+B)) without cancellation."""
    fApB = f * A + B
    with np.errstate(over="ignore"):
        e_neg = np.exp(-fApB)
        e_pos = np.exp(fApB)
    return np.where(fApB >= 0, e_neg / (1.0 + e_neg), 1.0 / (1.0 + e_pos))


def multiclass_probability(r):
    """LIBSVM's ``multiclass_probability`` (Wu, Lin and Weng 2004, method 2), vectorised.

    Parameters
    ----------
    r : ndarray of shape (n, k, k)
        ``r[:, i, j]`` estimates P(class i | class i or j).

    Returns
    -------
    ndarray of shape (n, k)
        Each sample follows LIBSVM's iteration on its own: the same updates in
        the same order, stopping when ``max |Qp - pQp| < 0.005 / k`` or after
        ``max(100, k)`` rounds.
    """
    r = np.asarray(r, dtype=np.float64)
    n, k = r.shape[0], r.shape[1]
    Q = np.empty((n, k, k))
    for t in range(k):
        diag = np.zeros(n)
        for j in range(t):
            diag += r[:, j, t] * r[:, j, t]
            Q[:, t, j] = Q[:, j, t]
        for j in range(t + 1, k):
            diag += r[:, j, t] * r[:, j, t]
            Q[:, t, j] = -r[:, j, t] * r[:, t, j]
        Q[:, t, t] = diag
    p = np.full((n, k), 1.0 / k)
    eps = 0.005 / k
    active = np.arange(n)
    for _ in range(max(100, k)):
        if active.size == 0:
            break
        Qa = Q[active]
        pa = p[active]
        Qp = np.zeros((active.size, k))
        pQp = np.zeros(active.size)
        for t in range(k):
            for j in range(k):
                Qp[:, t] += Qa[:, t, j] * pa[:, j]
            pQp += pa[:, t] * Qp[:, t]
        max_error = np.zeros(active.size)
        for t in range(k):
            max_error = np.maximum(max_error, np.abs(Qp[:, t] - pQp))
        go = ~(max_error < eps)
        if not go.all():
            active, Qa, pa, Qp, pQp = (active[go], Qa[go], pa[go], Qp[go], pQp[go])
            if active.size == 0:
                break
        for t in range(k):
            Qtt = Qa[:, t, t]
            diff = (-Qp[:, t] + pQp) / Qtt
            pa[:, t] += diff
            pQp = (pQp + diff * (diff * Qtt + 2 * Qp[:, t])) / (1 + diff) / (1 + diff)
            for j in range(k):
                Qp[:, j] = (Qp[:, j] + diff * Qa[:, t, j]) / (1 + diff)
                pa[:, j] /= (1 + diff)
        p[active] = pa
    return p


def _classification_probabilities(dec, model):
    k = model.nr_class
    n = dec.shape[0]
    if k == 1:
        return np.ones((n, 1))
    A = np.asarray(model.prob_a, dtype=np.float64).ravel()
    B = np.asarray(model.prob_b, dtype=np.float64).ravel()
    s = np.minimum(np.maximum(_sigmoid_predict(dec, A, B), MIN_PROB), 1 - MIN_PROB)
    if k == 2:
        return np.column_stack([s[:, 0], 1 - s[:, 0]])
    first, second = np.triu_indices(k, 1)       # the pairs in LIBSVM's order
    out = np.empty((n, k))
    rows = max(1, BLOCK_BYTES // (8 * 5 * k * k))  # r, Q and the iteration's copies
    for a in range(0, n, rows):
        b = min(n, a + rows)
        r = np.zeros((b - a, k, k))
        r[:, first, second] = s[a:b]
        r[:, second, first] = 1 - s[a:b]
        out[a:b] = multiclass_probability(r)
    return out


def _one_class_probability(dec, marks):
    """LIBSVM 3.37's predict_one_class_probability, element by element."""
    marks = np.asarray(marks, dtype=np.float64).ravel()
    nr_marks = marks.size
    out = np.zeros(dec.shape)
    low = dec < marks[0]
    high = ~low & (dec > marks[nr_marks - 1])
    out[low] = 0.001
    out[high] = 0.999
    todo = ~low & ~high
    for i in range(1, nr_marks):
        hit = todo & (dec < marks[i])
        out[hit] = i / nr_marks
        todo &= ~hit
    return out


# ---------------------------------------------------------------- public API

def ovo_vote(dec, k):
    """LIBSVM's one-vs-one vote: the index of each row's winning class.

    Pair (i, j) (LIBSVM's pair order) votes for i when its value is > 0, else
    for j; the first class with the most votes wins, as in ``svm_predict_values``.
    """
    n = dec.shape[0]
    first, second = np.triu_indices(k, 1)      # the pairs in LIBSVM's order
    votes = np.empty((n, k), dtype=np.int64)
    rows = max(1, BLOCK_BYTES // (8 * max(first.size, 1)))
    for a in range(0, n, rows):
        b = min(n, a + rows)
        winner = np.where(dec[a:b] > 0, first, second) + k * np.arange(b - a)[:, None]
        votes[a:b] = np.bincount(winner.ravel(), minlength=(b - a) * k).reshape(b - a, k)
    return np.argmax(votes, axis=1)      # argmax takes the first maximum, as LIBSVM


def _labels_from_values(dec, model):
    s = int(model.param.svm_type)
    if s in REGRESSION:
        return dec[:, 0].copy()
    if s == ONE_CLASS:
        return np.where(dec[:, 0] > 0, 1.0, -1.0)
    labels = np.asarray(model.labels, dtype=np.float64)
    return labels[ovo_vote(dec, model.nr_class)]


def _check_predictable(model):
    if not isinstance(model, Model):
        raise ValueError(f"model must be a kernsolve Model, got {type(model).__name__}")
    _check_model(model)


def _predict_arrays(X, model, probability=False, n_jobs=None, keep_values=True):
    """(labels, values) for canonical-able X; values as ``predict`` describes,
    or None with ``keep_values=False`` and no ``probability`` (labels only:
    the decision values are made and voted a group of rows at a time)."""
    _check_predictable(model)
    Xc = _prepare_X(X, _is_precomputed(model))
    if probability and not model.is_probability_model:
        raise ValueError("model does not support probability estimates (train it with -b 1)")
    n = Xc.shape[0]
    keep = keep_values or probability
    labels, values = np.empty(n), None
    for start, stop, dec in _row_values(Xc, model, n_jobs,
                                        n if keep_values and not probability else None):
        part_labels, part = _labels_and_values(dec, model, probability)
        labels[start:stop] = part_labels
        if not keep:
            continue
        if stop - start == n:               # one group: its values are the result
            values = part
        else:
            if values is None:
                values = np.empty((n, part.shape[1]))
            values[start:stop] = part
    return labels, values


def _labels_and_values(dec, model, probability):
    """One group of rows: labels and, with ``probability``, the probabilities
    (else the decision values themselves)."""
    s = int(model.param.svm_type)
    if not probability:
        return _labels_from_values(dec, model), dec
    if s in CLASSIFICATION:
        prob = _classification_probabilities(dec, model)
        labels = np.asarray(model.labels, dtype=np.float64)[np.argmax(prob, axis=1)]
        return labels, prob
    if s == ONE_CLASS:
        p1 = _one_class_probability(dec[:, 0], model.prob_density_marks)
        return _labels_from_values(dec, model), np.column_stack([p1, 1 - p1])
    return dec[:, 0].copy(), dec


def decision_function(X, model, n_jobs=None):
    """LIBSVM's decision values of every row of X.

    Returns
    -------
    ndarray of shape (n_samples, n_values)
        Classification: the k(k-1)/2 one-vs-one values in LIBSVM's pair order
        ((0,1), (0,2), ..., (1,2), ...; positive favours the first class of the
        pair, classes in ``model.labels`` order).  Regression and one-class:
        one column.
    """
    if isinstance(model, ModelKind):
        return model.decision_function(X, n_jobs=n_jobs)
    _check_predictable(model)
    return _decision_values(_prepare_X(X, _is_precomputed(model)), model, n_jobs)


def predict_probability(X, model, n_jobs=None):
    """Probability estimates of every row of X.

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
        Classification: one column per class in ``model.labels`` order.
        One-class: [P(normal), 1 - P(normal)].  SVR: the predicted value (the
        Laplace scale of the noise is ``model.prob_a[0]``).
    """
    return _predict_arrays(X, model, probability=True, n_jobs=n_jobs)[1]


def evaluations(y, predicted):
    """(accuracy in %, mean squared error, squared correlation), as LIBSVM's.

    Computed exactly like ``libsvm.commonutil.evaluations`` (numpy path):
    the squared correlation is NaN when it is undefined.
    """
    ty = np.asarray(y, dtype=np.float64)
    pv = np.asarray(predicted, dtype=np.float64)
    if ty.shape != pv.shape:
        raise ValueError(f"y has {ty.size} values but there are {pv.size} predictions")
    if ty.size == 0:
        return float("nan"), float("nan"), float("nan")
    with np.errstate(all="ignore"):  # overflow gives inf/NaN, as in LIBSVM, silently
        acc = 100.0 * (ty == pv).mean()
        mse = ((ty - pv) ** 2).mean()
        n = len(ty)
        sumv, sumy = pv.sum(), ty.sum()
        sumvy, sumvv, sumyy = (pv * ty).sum(), (pv * pv).sum(), (ty * ty).sum()
    with np.errstate(all="raise"):
        try:
            scc = ((n * sumvy - sumv * sumy) * (n * sumvy - sumv * sumy)) / \
                  ((n * sumvv - sumv * sumv) * (n * sumyy - sumy * sumy))
        except FloatingPointError:
            scc = float("nan")
    return float(acc), float(mse), float(scc)


def predict(y: ArrayLike | None, X: MatrixLike | LibsvmRows, model: Model | ModelKind,
            options: str | Sequence[str] | None = "") -> tuple[
                NDArray[np.float64], tuple[float, float, float], NDArray[np.float64]]:
    """Predict the rows of X, like ``libsvm.svmutil.svm_predict``.

    Parameters
    ----------
    y : array-like of shape (n_samples,), None or []
        True labels or targets, for the accuracy tuple (None or empty: no
        evaluation, the tuple is NaNs).
    X : array-like, scipy sparse matrix or list of dicts, shape (n_samples, n_features)
        Columns as ``read_problem`` gives them (column j = feature j+1); or
        LIBSVM's Python rows ``[{index: value}, ...]`` with 1-based indices.  Extra
        columns and missing ones are treated as LIBSVM treats them: absent
        features are zeros.  For a precomputed kernel, column 0 is the serial
        number and column s holds K(x, training row s).
    model : Model
    options : str or list of str
        ``-b 1`` probability estimates (the model must have them);
        ``-q`` quiet; ``--threads N`` threads for the kernel values.

    Returns
    -------
    labels : ndarray of float64, shape (n_samples,)
    (accuracy, mse, scc) : tuple of float
        Accuracy in percent (classification), mean squared error and squared
        correlation coefficient (regression), as LIBSVM computes them; NaNs
        when ``y`` is None.
    values : ndarray of shape (n_samples, n_values)
        Decision values (see :func:`decision_function`) or, with ``-b 1``,
        probabilities (see :func:`predict_probability`).
    """
    return predict_rows(y, X, model, options)


def predict_rows(y, X, model, options="", keep_values=True):
    """:func:`predict`; with ``keep_values=False`` (kernsolve-predict, which
    writes labels only) the values are None unless ``-b 1`` asks for
    probabilities, and the decision values are voted a group of rows at a
    time: memory bounded for any number of classes, as svm-predict's."""
    if isinstance(model, ModelKind):
        return _predict_other_kind(y, X, model, options)
    probability, quiet, n_jobs = _parse_predict_options(options)
    _check_predictable(model)
    info = (lambda *a: None) if quiet else (lambda s: print(s, file=sys.stdout))
    Xc = _prepare_X(X, _is_precomputed(model))
    y = _as_true_values(y, Xc.shape[0])
    s = int(model.param.svm_type)
    if probability:
        if not model.is_probability_model:
            raise ValueError("model does not support probability estimates (train it with -b 1)")
        if s in REGRESSION:
            info("Prob. model for test data: target value = predicted value + z,\n"
                 "z: Laplace distribution e^(-|z|/sigma)/(2sigma),sigma=%g"
                 % float(np.ravel(model.prob_a)[0]))
    elif model.is_probability_model:
        info("Model supports probability estimates, but disabled in prediction.")
    labels, values = _predict_arrays(Xc, model, probability, n_jobs, keep_values)
    if y is None:
        return labels, (float("nan"),) * 3, values
    return labels, _evaluate(y, labels, s in REGRESSION, info), values


def _as_true_values(y, n):
    """y as a checked float64 vector of n values (None stays None)."""
    if y is None:
        return None
    y = np.asarray(y, dtype=np.float64).ravel() if not issparse(y) else None
    if y is None:
        raise ValueError("y must be a 1-D array of labels, not a sparse matrix")
    if y.size == 0:
        return None             # svm_predict's [] : no true labels
    if y.size != n:
        raise ValueError(f"y has {y.size} labels but X has {n} rows")
    if not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinity")
    return y


def _evaluate(y, labels, regression, info):
    """LIBSVM's evaluation tuple, printing its lines through ``info``."""
    acc, mse, scc = evaluations(y, labels)
    n = len(y)
    if regression:
        info("Mean squared error = %g (regression)" % mse)
        info("Squared correlation coefficient = %g (regression)" % scc)
    else:
        info("Accuracy = %g%% (%d/%d) (classification)" % (acc, int(round(n * acc / 100)), n))
    return acc, mse, scc


def _predict_other_kind(y, X, model, options):
    """``predict`` for kernsolve's model kinds that LIBSVM cannot hold (DSG, ...):
    the :class:`~kernsolve._model_kind.ModelKind` supplies ``predict_arrays(X,
    probability, n_jobs)`` -> (labels, values) and ``is_regression``; evaluation
    and printing are LIBSVM's."""
    probability, quiet, n_jobs = _parse_predict_options(options)
    info = (lambda *a: None) if quiet else (lambda s: print(s, file=sys.stdout))
    # the model kinds compute with scipy's matrices (kernsolve-predict reads a Csr)
    labels, values = model.predict_arrays(to_scipy(X), probability, n_jobs)
    y = _as_true_values(y, labels.shape[0])
    if y is None:
        return labels, (float("nan"),) * 3, values
    return labels, _evaluate(y, labels, model.is_regression, info), values
