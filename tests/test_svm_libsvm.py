"""kernsolve.train against LIBSVM 3.37 (libsvm-official) on the same data.

Each test trains both on a slice of a shared dataset and compares what LIBSVM
defines: the dual objective (computed from both models with scikit-learn's
kernels, an independent formula), rho, the support vectors, the coefficient
layout (through a numpy decision function written here), held-out
predictions, probability parameters given the same internal folds, class
weights; and, for what LIBSVM lacks, an oracle of its own: sample weights vs
LIBSVM on duplicated rows, the no-bias variant vs its KKT conditions, Platt's
fit vs scipy's optimiser.
"""
import ctypes
import io
import os
import tempfile

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file
from sklearn.metrics.pairwise import (linear_kernel, polynomial_kernel, rbf_kernel,
                                      sigmoid_kernel)

svmutil = pytest.importorskip("libsvm.svmutil")

import kernsolve  # noqa: E402
from conftest import PROB_RTOL, assert_probabilities_close, libsvm_serial  # noqa: E402
from kernsolve.solvers.libsvm import probability as _probability  # noqa: E402
from kernsolve._api import train  # noqa: E402

_CACHE = {}

# Regression predictions against LIBSVM's, relative to sum |coef| + |rho|.
PREDICT_RTOL = 1e-12


@pytest.fixture(autouse=True, scope="module")
def libsvm_single_threaded():
    """LIBSVM's OpenMP build on one thread while this module runs."""
    with libsvm_serial():
        yield


def load(shared, name, n_rows, n_features):
    key = (name, n_rows, n_features)
    if key not in _CACHE:
        X, y = load_svmlight_file(io.BytesIO(shared.lines(name, n_rows)),
                                  n_features=n_features)
        _CACHE[key] = (sp.csr_matrix(X), y)
    return _CACHE[key]


def split(X, y, n_train):
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


# ---------------------------------------------------------------- oracles

def kernel(A, B, t, gamma, degree=3, coef0=0.0):
    A = A.toarray() if sp.issparse(A) else np.asarray(A)
    B = B.toarray() if sp.issparse(B) else np.asarray(B)
    if t == 0:
        return linear_kernel(A, B)
    if t == 1:
        return polynomial_kernel(A, B, degree=degree, gamma=gamma, coef0=coef0)
    if t == 2:
        return rbf_kernel(A, B, gamma=gamma)
    if t == 3:
        return sigmoid_kernel(A, B, gamma=gamma, coef0=coef0)
    raise ValueError(t)


def libsvm_parts(m):
    """(labels, nSV, sv_coef (k-1 or 1, l), rho, 1-based sv_indices) of a LIBSVM model."""
    k = m.get_nr_class()
    l = m.get_nr_sv()
    svm_type = m.get_svm_type()
    n_rho = k * (k - 1) // 2
    coef = np.array(m.get_sv_coef(), dtype=float).reshape(l, -1).T
    labels = np.array(m.get_labels()) if svm_type in (0, 1) else np.zeros(0)
    nsv = np.array(m.nSV[:k]) if svm_type in (0, 1) else np.zeros(0, int)
    rho = np.array([m.rho[i] for i in range(n_rho)])
    return labels, nsv, coef, rho, np.array(m.get_sv_indices())


def ks_parts(model):
    return (model.labels, model.n_support, model.dual_coef, model.rho,
            model.support_indices)


def pair_coefficients(svm_type, labels, nsv, coef, sv_idx):
    """Per one-vs-one pair: (training row indices 0-based, signed coefficients)."""
    if svm_type not in (0, 1):
        return [(sv_idx - 1, coef[0])]
    k = len(labels)
    start = np.concatenate([[0], np.cumsum(nsv)[:-1]])
    out = []
    for i in range(k):
        for j in range(i + 1, k):
            si, sj = start[i], start[j]
            rows = np.concatenate([sv_idx[si:si + nsv[i]], sv_idx[sj:sj + nsv[j]]]) - 1
            c = np.concatenate([coef[j - 1, si:si + nsv[i]], coef[i, sj:sj + nsv[j]]])
            out.append((rows, c))
    return out


def dual_objectives(svm_type, parts, X, y, t, gamma, degree=3, coef0=0.0, p=0.1,
                    K_full=None, with_scale=False):
    """LIBSVM's objective of each sub-problem, recomputed from the coefficients.

    With ``with_scale``, also the sum of the absolute values of its terms: the
    quadratic form cancels heavily (nu-SVC's coefficients are scaled by 1/r),
    so differences are measured relative to that scale.
    """
    labels, nsv, coef, rho, sv_idx = parts
    objs, scales = [], []
    for rows, c in pair_coefficients(svm_type, labels, nsv, coef, sv_idx):
        if K_full is not None:
            K = K_full[np.ix_(rows, rows)]
        else:
            K = kernel(X[rows], X[rows], t, gamma, degree, coef0)
        quad = 0.5 * c @ K @ c
        scale = 0.5 * np.abs(c) @ np.abs(K) @ np.abs(c)
        if svm_type == 0:
            objs.append(quad - np.abs(c).sum())
            scale += np.abs(c).sum()
        elif svm_type in (1, 2):
            objs.append(quad)
        elif svm_type == 3:
            objs.append(quad + p * np.abs(c).sum() - y[rows] @ c)
            scale += p * np.abs(c).sum() + np.abs(y[rows]) @ np.abs(c)
        else:
            objs.append(quad - y[rows] @ c)
            scale += np.abs(y[rows]) @ np.abs(c)
        scales.append(scale)
    if with_scale:
        return np.array(objs), np.array(scales)
    return np.array(objs)


def decision_values(model, X_train, X_test, t, gamma, degree=3, coef0=0.0):
    """Decision values of a kernsolve model, from its fields, with numpy."""
    sv = X_train[model.support_indices - 1]
    K = kernel(X_test, sv, t, gamma, degree, coef0)
    if model.param.svm_type not in (0, 1):
        return (K @ model.dual_coef[0] - model.rho[0])[:, None]
    k = len(model.labels)
    start = np.concatenate([[0], np.cumsum(model.n_support)[:-1]])
    cols = []
    p = 0
    for i in range(k):
        for j in range(i + 1, k):
            si, sj = start[i], start[j]
            ni, nj = model.n_support[i], model.n_support[j]
            d = (K[:, si:si + ni] @ model.dual_coef[j - 1, si:si + ni]
                 + K[:, sj:sj + nj] @ model.dual_coef[i, sj:sj + nj] - model.rho[p])
            cols.append(d)
            p += 1
    return np.column_stack(cols)


def vote(model, dec):
    k = len(model.labels)
    votes = np.zeros((dec.shape[0], k), dtype=int)
    p = 0
    for i in range(k):
        for j in range(i + 1, k):
            win = dec[:, p] > 0
            votes[win, i] += 1
            votes[~win, j] += 1
            p += 1
    return model.labels[np.argmax(votes, axis=1)].astype(float)


def ks_predict(model, X_train, X_test, t, gamma, degree=3, coef0=0.0):
    dec = decision_values(model, X_train, X_test, t, gamma, degree, coef0)
    s = model.param.svm_type
    if s in (0, 1):
        return vote(model, dec)
    if s == 2:
        return np.where(dec[:, 0] > 0, 1.0, -1.0)
    return dec[:, 0]


def libsvm_predict(m, X):
    """LIBSVM's predicted labels/values for the rows of X, one C call per row.

    (libsvm-official 3.37's svm_predict sizes its decision-value buffer for
    one classifier when the model is nu-SVC, which overflows for several
    classes; this calls the C library with a buffer of the right size.)
    """
    from libsvm import svm as svmc
    k = m.get_nr_class()
    n_values = k * (k - 1) // 2 if m.get_svm_type() in (0, 1) else 1
    buf = (ctypes.c_double * max(n_values, 1))()
    X = sp.csr_matrix(X)
    precomputed = m.param.kernel_type == 4
    labels = np.empty(X.shape[0])
    values = np.empty((X.shape[0], n_values))
    for i in range(X.shape[0]):
        sl = slice(X.indptr[i], X.indptr[i + 1])
        xi, _ = svmc.gen_svm_nodearray((X.indices[sl], X.data[sl]), isKernel=precomputed)
        labels[i] = svmc.libsvm.svm_predict_values(m, xi, buf)
        values[i] = buf[:n_values]
    return labels, values


def libsvm_train(y, X, options):
    """LIBSVM's model, with the objective values it printed ("obj = ...")."""
    options = options.replace("-q", "")
    holder = []
    text = _capture_libsvm_stdout(lambda: holder.append(svmutil.svm_train(y, X, options)))
    objs = [float(line.split("=")[1].split(",")[0]) for line in text.splitlines()
            if line.startswith("obj = ")]
    m = holder[0]
    m.printed_objectives = np.array(objs)
    return m


def assert_same_as_libsvm(m, model, X, y, Xt, yt, options, K_full=None):
    """doc/smo.md's claim, "Byte identity with LIBSVM": the same model, bit
    for bit (labels, nSV, support vectors, coefficients, rho), the objective
    LIBSVM printed, and the same held-out predictions.

    The objective is also recomputed in double precision from both models'
    coefficients with scikit-learn's kernels (an independent formula).
    Held-out predictions come from kernsolve.predict (precomputed kernels)
    or from this file's numpy decision function on kernsolve's coefficients,
    whose kernel values are summed in another order than LIBSVM's
    ``k_function``: regression predictions are held to PREDICT_RTOL of
    sum |coef| + |rho|.
    """
    s = model.param.svm_type
    t = model.param.kernel_type
    g, d, r = model.param.gamma, model.param.degree, model.param.coef0
    lp = libsvm_parts(m)
    kp = ks_parts(model)
    for name, a, b in zip(("labels", "nSV", "coefficients", "rho", "SV indices"), kp, lp):
        if name == "nSV" and s not in (0, 1):
            continue
        assert np.array_equal(np.asarray(a), np.asarray(b)), f"{options}: {name} differ"
    # dual objective: LIBSVM's bookkeeping, computed from both models
    o_l, scale = dual_objectives(s, lp, X, y, t, g, d, r, model.param.p, K_full, True)
    o_k = dual_objectives(s, kp, X, y, t, g, d, r, model.param.p, K_full)
    assert np.all(np.abs(o_k - o_l) <= 1e-6 * np.maximum(np.abs(o_l), scale * 1e-3)), \
        (options, o_k, o_l)
    # ... and the objective kernsolve reports is the one LIBSVM prints (%f)
    if hasattr(m, "printed_objectives"):
        assert [f"{o:f}" for o in model.stats["objective"]] == \
            [f"{o:f}" for o in m.printed_objectives], options
    # held-out predictions
    if Xt is not None and Xt.shape[0]:
        pred_l, _ = libsvm_predict(m, Xt)
        if K_full is None:
            pred_k = ks_predict(model, X, Xt, t, g, d, r)
        else:
            pred_k, _, _ = kernsolve.predict(yt, Xt, model, "-q")
        if s in (3, 4):
            scale = np.abs(model.dual_coef).sum() + np.abs(model.rho).sum()
            np.testing.assert_allclose(pred_k, pred_l, rtol=0, atol=PREDICT_RTOL * scale,
                                       err_msg=options)
        else:
            assert np.array_equal(np.asarray(pred_k), np.asarray(pred_l)), options


# ---------------------------------------------------------------- the five types

DATASETS = {
    "heart_scale": (270, 13, 216),
    "australian_scale": (690, 14, 552),
    "german.numer_scale": (1000, 24, 800),
}


@pytest.mark.parametrize("name", list(DATASETS))
@pytest.mark.parametrize("svm_type", [0, 1, 2])
@pytest.mark.parametrize("kernel_type", [0, 1, 2, 3])
def test_classification_and_one_class_match_libsvm(shared, name, svm_type, kernel_type):
    n, nf, n_train = DATASETS[name]
    X, y = load(shared, name, n, nf)
    Xtr, ytr, Xte, yte = split(X, y, n_train)
    extra = {0: "-c 2", 1: "-n 0.3", 2: "-n 0.2"}[svm_type]
    if kernel_type == 3:
        extra += " -g 0.01"        # keeps the sigmoid kernel near PSD
    options = f"-s {svm_type} -t {kernel_type} {extra} -q"
    m = libsvm_train(ytr, Xtr, options)
    model = train(ytr, Xtr, options, n_jobs=1)
    assert_same_as_libsvm(m, model, Xtr, ytr, Xte, yte, f"{name} {options}")


REGRESSION = {"housing_scale": (506, 13, 400), "abalone_scale": (1200, 8, 1000)}


@pytest.mark.parametrize("name", list(REGRESSION))
@pytest.mark.parametrize("svm_type,extra", [(3, "-c 4 -p 0.5"), (4, "-c 4 -n 0.4")])
@pytest.mark.parametrize("kernel_type", [0, 1, 2, 3])
def test_regression_matches_libsvm(shared, name, svm_type, extra, kernel_type):
    n, nf, n_train = REGRESSION[name]
    X, y = load(shared, name, n, nf)
    Xtr, ytr, Xte, yte = split(X, y, n_train)
    if kernel_type == 3:
        extra += " -g 0.01"
    if kernel_type == 1:
        extra += " -r 1 -d 2"
    options = f"-s {svm_type} -t {kernel_type} {extra} -q"
    m = libsvm_train(ytr, Xtr, options)
    model = train(ytr, Xtr, options, n_jobs=1)
    assert_same_as_libsvm(m, model, Xtr, ytr, Xte, yte, f"{name} {options}")


@pytest.mark.parametrize("options", ["-c 1", "-c 100 -g 0.005"])
def test_a9a_slice_matches_libsvm(shared, options):
    X, y = load(shared, "a9a", 2500, 123)
    Xtr, ytr, Xte, yte = split(X, y, 2000)
    options += " -q"
    m = libsvm_train(ytr, Xtr, options)
    model = train(ytr, Xtr, options, n_jobs=2)
    assert_same_as_libsvm(m, model, Xtr, ytr, Xte, yte, "a9a " + options)
    # LIBSVM's SV order and row numbers, not only their count
    assert np.array_equal(model.support_indices, m.get_sv_indices())


def mushrooms_multiclass(shared, n=1200):
    X, y = load(shared, "mushrooms", n, 112)
    # four classes from the label and one feature; first appearance is not sorted
    f = X[:, 94].toarray().ravel()
    return X, y * 10 + f


@pytest.mark.parametrize("svm_type,extra", [(0, "-c 3"), (1, "-n 0.05")])
@pytest.mark.parametrize("multi", [False, True])
def test_mushrooms_binary_and_multiclass(shared, svm_type, extra, multi):
    if multi:
        X, y = mushrooms_multiclass(shared)
    else:
        X, y = load(shared, "mushrooms", 1200, 112)
    Xtr, ytr, Xte, yte = split(X, y, 1000)
    options = f"-s {svm_type} -t 2 -g 0.05 {extra} -q"
    m = libsvm_train(ytr, Xtr, options)
    model = train(ytr, Xtr, options, n_jobs=1)
    assert_same_as_libsvm(m, model, Xtr, ytr, Xte, yte, f"mushrooms {options}")
    assert np.array_equal(model.n_support, m.nSV[:len(model.labels)])
    assert np.array_equal(model.support_indices, m.get_sv_indices())
    assert model.dual_coef.shape == (len(model.labels) - 1, m.get_nr_sv())
    if multi:
        assert len(model.labels) == 4
        # first appearance, not sorted
        _, first = np.unique(ytr, return_index=True)
        assert list(model.labels) == list(np.unique(ytr)[np.argsort(first)])
        assert len(model.stats["pairs"]) == 6
        assert len(model.stats["objective"]) == 6


def test_label_order_swap_rule():
    # -1 first: LIBSVM swaps to [+1, -1]; any other pair keeps first appearance
    X = np.array([[0.0, 1], [1, 0], [0.2, 0.9], [0.9, 0.1]])
    for y, expect in (([-1, 1, -1, 1], [1, -1]), ([1, -1, 1, -1], [1, -1]),
                      ([2, 1, 2, 1], [2, 1]), ([0, 1, 0, 1], [0, 1]),
                      ([-1, 2, -1, 2], [-1, 2])):
        model = train(np.array(y, float), X, "-q")
        m = svmutil.svm_train(y, X, "-q")
        assert list(model.labels) == expect == list(m.get_labels())


def test_precomputed_kernel_matches_libsvm_and_rbf(shared):
    X, y = load(shared, "heart_scale", 270, 13)
    Xtr, ytr, Xte, yte = split(X, y, 200)
    gamma = 0.1
    K = rbf_kernel(Xtr.toarray(), gamma=gamma)
    serial = np.arange(1, K.shape[0] + 1)[:, None]
    Ktr = np.hstack([serial, K])
    Kte = np.hstack([np.ones((Xte.shape[0], 1)), rbf_kernel(Xte.toarray(), Xtr.toarray(),
                                                            gamma=gamma)])
    for s, extra in ((0, "-c 2"), (1, "-n 0.4"), (2, "-n 0.3"), (3, "-p 0.2")):
        options = f"-s {s} -t 4 {extra} -q"
        m = libsvm_train(ytr, Ktr, options)
        model = train(ytr, Ktr, options, n_jobs=1)
        assert_same_as_libsvm(m, model, Xtr, ytr, Kte, yte, options, K_full=K)
        # SVs keep the serial column; same model as the RBF kernel
        assert np.array_equal(model.support_vectors[:, 0], model.support_indices)
        rbf = train(ytr, Xtr, f"-s {s} -t 2 -g {gamma} {extra} -q", n_jobs=1)
        np.testing.assert_allclose(model.rho, rbf.rho, atol=1e-6)
        assert np.array_equal(model.support_indices, rbf.support_indices)


def test_gamma_default_and_statistics(shared):
    X, y = load(shared, "heart_scale", 270, 13)
    model = train(y, X, "-q")
    assert model.param.gamma == 1.0 / 13
    st = model.stats
    assert st["n_iter"] > 0 and st["n_kernel_evals"] > 0
    assert st["n_SV"] == model.dual_coef.shape[1]
    assert st["n_cache_hits"] + st["n_cache_misses"] > 0
    assert st["seconds"] >= 0 and st["wall_seconds"] >= st["seconds"] * 0.5
    assert st["status"] == "ok"
    assert sum(p["n_iter"] for p in st["pairs"]) == st["n_iter"]


# ---------------------------------------------------------------- weights

def test_class_weights_match_libsvm_wi(shared):
    X, y = mushrooms_multiclass(shared, 800)
    Xtr, ytr, Xte, yte = split(X, y, 700)
    options = "-c 2 -g 0.05 -w10 4 -w21 0.5 -w11 2.5 -q"
    m = libsvm_train(ytr, Xtr, options)
    model = train(ytr, Xtr, options, n_jobs=1)
    assert_same_as_libsvm(m, model, Xtr, ytr, Xte, yte, options)
    X, y = load(shared, "german.numer_scale", 1000, 24)
    Xtr, ytr, Xte, yte = split(X, y, 800)
    options = "-c 1 -w1 3 -w-1 0.7 -q"
    m = libsvm_train(ytr, Xtr, options)
    model = train(ytr, Xtr, options, n_jobs=1)
    assert_same_as_libsvm(m, model, Xtr, ytr, Xte, yte, options)
    unweighted = train(ytr, Xtr, "-c 1 -q", n_jobs=1)
    assert not np.allclose(unweighted.rho, model.rho)
    # nu-SVC: LIBSVM ignores -wi (its bound is 1), and so does kernsolve
    options = "-s 1 -n 0.4 -w1 3 -w-1 0.7 -q"
    m = libsvm_train(ytr, Xtr, options)
    model = train(ytr, Xtr, options, n_jobs=1)
    assert_same_as_libsvm(m, model, Xtr, ytr, Xte, yte, options)
    plain = train(ytr, Xtr, "-s 1 -n 0.4 -q", n_jobs=1)
    np.testing.assert_array_equal(plain.dual_coef, model.dual_coef)


def test_laplacian_kernel_equals_precomputed_sklearn_kernel(shared):
    # -t 5 is kernsolve's (LIBSVM has none): same model as -t 4 with
    # scikit-learn's laplacian_kernel matrix
    from sklearn.metrics.pairwise import laplacian_kernel
    X, y = load(shared, "australian_scale", 690, 14)
    X, y = X[:300], y[:300]
    gamma = 0.2
    K = laplacian_kernel(X.toarray(), gamma=gamma)
    Kx = np.hstack([np.arange(1, 301)[:, None], K])
    for options in ("-s 0 -c 3", "-s 4 -c 2"):
        a = train(y, X, f"{options} -t 5 -g {gamma} -q", n_jobs=1)
        b = train(y, Kx, f"{options} -t 4 -q", n_jobs=1)
        assert np.array_equal(a.support_indices, b.support_indices)
        np.testing.assert_allclose(a.dual_coef, b.dual_coef, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(a.rho, b.rho, atol=1e-6)


@pytest.mark.parametrize("svm_type,extra", [(0, "-c 2"), (1, "-n 0.4"), (2, "-n 0.3"),
                                            (3, "-c 2 -p 0.3"), (4, "-c 2 -n 0.4")])
def test_integer_sample_weights_equal_duplicated_rows(shared, svm_type, extra):
    X, y = load(shared, "heart_scale", 270, 13)
    X, y = X[:150], y[:150]
    w = (np.arange(150) % 3) + 1                 # weights 1, 2, 3
    rows = np.repeat(np.arange(150), w)
    options = f"-s {svm_type} -t 2 {extra} -e 1e-7 -q"
    m = svmutil.svm_train(y[rows], X[rows], options)
    model = train(y, X, options, sample_weight=w.astype(float), n_jobs=1)
    np.testing.assert_allclose(model.rho, libsvm_parts(m)[3], atol=1e-4)
    # same decision function: duplicated SVs share the weighted row's coefficient
    Xt = load(shared, "heart_scale", 270, 13)[0][150:]
    dec_k = decision_values(model, X, Xt, 2, 1.0 / 13)
    _, dec_l = libsvm_predict(m, Xt)
    if svm_type in (0, 1) and m.get_labels()[0] != model.labels[0]:
        dec_l = -dec_l
    np.testing.assert_allclose(dec_k, dec_l, atol=1e-4)
    # and the same dual objective value
    lp = libsvm_parts(m)
    o_l, scale = dual_objectives(svm_type, lp, X[rows], y[rows], 2, 1.0 / 13,
                                 p=model.param.p, with_scale=True)
    o_k = dual_objectives(svm_type, ks_parts(model), X, y, 2, 1.0 / 13, p=model.param.p)
    assert np.all(np.abs(o_k - o_l) <= 1e-6 * np.maximum(np.abs(o_l), scale * 1e-3))


def test_zero_sample_weight_drops_the_row(shared):
    X, y = load(shared, "heart_scale", 270, 13)
    w = np.ones(270)
    w[::4] = 0
    model = train(y, X, "-q", sample_weight=w, n_jobs=1)
    keep = np.flatnonzero(w > 0)
    ref = train(y[keep], X[keep], "-q", n_jobs=1)
    np.testing.assert_array_equal(model.rho, ref.rho)
    np.testing.assert_array_equal(model.dual_coef, ref.dual_coef)
    np.testing.assert_array_equal(model.support_indices, keep[ref.support_indices - 1] + 1)


# ---------------------------------------------------------------- probabilities

def _libc():
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.rand.restype = ctypes.c_int
        return libc
    except OSError:
        pytest.skip("glibc not available to reproduce LIBSVM's rand() folds")


def libsvm_fold_perms(libc, seed, sizes):
    """The permutations LIBSVM's probability code draws with rand() after srand(seed)."""
    libc.srand(seed)
    perms = []
    for l in sizes:
        perm = np.arange(l)
        for i in range(l):
            j = i + libc.rand() % (l - i)
            perm[i], perm[j] = perm[j], perm[i]
        perms.append(perm)
    return perms


@pytest.mark.parametrize("svm_type", [0, 1])
@pytest.mark.parametrize("multi", [False, True])
def test_platt_probabilities_match_libsvm_with_same_folds(shared, svm_type, multi):
    libc = _libc()
    if multi:
        X, y = mushrooms_multiclass(shared, 700)
    else:
        X, y = load(shared, "australian_scale", 690, 14)
    Xtr, ytr, Xte, yte = split(X, y, 600)
    options = f"-s {svm_type} -b 1 -g 0.05 {'-n 0.1' if svm_type else '-c 2'} -q"
    model0 = train(ytr, Xtr, options.replace("-b 1", "-b 0"), n_jobs=1)
    counts = {lab: np.count_nonzero(ytr == lab) for lab in model0.labels}
    labs = list(model0.labels)
    sizes = [counts[a] + counts[b] for i, a in enumerate(labs) for b in labs[i + 1:]]
    perms = libsvm_fold_perms(libc, 12345, sizes)
    libc.srand(12345)
    m = svmutil.svm_train(ytr, Xtr, options)
    model = train(ytr, Xtr, options, n_jobs=1, _folds=perms)
    n_pairs = len(sizes)
    assert_probabilities_close({"probA": model.prob_a, "probB": model.prob_b},
                               {"probA": [m.probA[i] for i in range(n_pairs)],
                                "probB": [m.probB[i] for i in range(n_pairs)]}, options)
    _, _, p_l = svmutil.svm_predict(yte, Xte, m, "-b 1 -q")
    _, _, p_k = kernsolve.predict(yte, Xte, model, "-b 1 -q")
    np.testing.assert_allclose(np.asarray(p_k), np.asarray(p_l), rtol=0, atol=PROB_RTOL)
    # the main model is the one trained without -b
    np.testing.assert_array_equal(model.dual_coef, model0.dual_coef)


@pytest.mark.parametrize("svm_type", [3, 4])
def test_svr_laplace_scale_matches_libsvm_with_same_folds(shared, svm_type):
    libc = _libc()
    X, y = load(shared, "housing_scale", 506, 13)
    X, y = X[:300], y[:300]
    perm = libsvm_fold_perms(libc, 99, [300])[0]
    libc.srand(99)
    options = f"-s {svm_type} -c 10 -b 1 -q"
    m = svmutil.svm_train(y, X, options)
    model = train(y, X, options, n_jobs=1, _folds=[perm])
    assert_probabilities_close({"probA": model.prob_a}, {"probA": [m.probA[0]]}, options)


def test_one_class_density_marks_match_libsvm(shared):
    X, y = load(shared, "german.numer_scale", 1000, 24)
    X = X[:500]
    m = svmutil.svm_train(y[:500], X, "-s 2 -n 0.3 -b 1 -q")
    model = train(y[:500], X, "-s 2 -n 0.3 -b 1 -q", n_jobs=1)
    assert_probabilities_close({"prob_density_marks": model.prob_density_marks},
                               {"prob_density_marks": [m.prob_density_marks[i]
                                                       for i in range(10)]})


def test_seeded_folds_are_reproducible_and_seed_dependent(shared):
    X, y = load(shared, "heart_scale", 270, 13)
    a = train(y, X, "-b 1 -q --seed 5", n_jobs=1)
    b = train(y, X, "-b 1 -q --seed 5", n_jobs=1)
    c = train(y, X, "-b 1 -q --seed 6", n_jobs=1)
    assert (a.prob_a[0], a.prob_b[0]) == (b.prob_a[0], b.prob_b[0])
    assert (a.prob_a[0], a.prob_b[0]) != (c.prob_a[0], c.prob_b[0])
    assert a.stats["probability"]["n_fits"] == 5


def test_sigmoid_fit_is_the_regularised_likelihood_minimum():
    rng = np.random.default_rng(0)
    f = rng.normal(size=400) * 2
    labels = np.where(rng.random(400) < 1 / (1 + np.exp(-1.5 * f + 0.3)), 1, -1)
    A, B = _probability.sigmoid_train(f, labels)
    n1 = np.count_nonzero(labels > 0)
    n0 = labels.size - n1
    t = np.where(labels > 0, (n1 + 1) / (n1 + 2), 1 / (n0 + 2))

    def loss(ab):
        z = f * ab[0] + ab[1]
        return np.sum(t * z + np.logaddexp(0, -z))

    ref = scipy.optimize.minimize(loss, [0.0, 0.0], method="BFGS", options={"gtol": 1e-10})
    np.testing.assert_allclose([A, B], ref.x, atol=1e-4)


# ---------------------------------------------------------------- threads, no-bias, output

def test_threads_1_and_2_give_identical_models(shared):
    X, y = mushrooms_multiclass(shared, 600)
    a = train(y, X, "-g 0.05 -b 1 -q", n_jobs=1)
    b = train(y, X, "-g 0.05 -b 1 -q --threads 2")
    assert b.stats["n_threads"] in (1, 2)
    for field in ("labels", "n_support", "support_indices", "dual_coef", "rho",
                  "prob_a", "prob_b"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
    X, y = load(shared, "housing_scale", 506, 13)
    a = train(y, X, "-s 4 -q", n_jobs=1)
    b = train(y, X, "-s 4 -q", n_jobs=2)
    np.testing.assert_array_equal(a.dual_coef, b.dual_coef)
    np.testing.assert_array_equal(a.rho, b.rho)


def test_python_n_jobs_wins_over_threads_option(shared):
    X, y = load(shared, "heart_scale", 270, 13)
    model = train(y, X, "-q --threads 2", n_jobs=1)
    assert model.stats["n_threads"] == 1


@pytest.mark.parametrize("kernel_type", [0, 2])
def test_no_bias_satisfies_kkt(shared, kernel_type):
    X, y = load(shared, "australian_scale", 690, 14)
    X, y = X[:400], y[:400]
    C, eps = 2.0, 1e-3
    model = train(y, X, f"-t {kernel_type} -c {C} --bias 0 -q", n_jobs=1)
    assert np.all(model.rho == 0)
    # full alpha vector in training order, with y_i alpha_i = coef_i
    coef = np.zeros(400)
    coef[model.support_indices - 1] = model.dual_coef[0]
    ypm = np.where(y == model.labels[0], 1.0, -1.0)
    alpha = coef * ypm
    assert np.all(alpha >= 0) and np.all(alpha <= C * (1 + 1e-12))
    K = kernel(X, X, kernel_type, model.param.gamma)
    grad = ypm * (K @ coef) - 1.0          # gradient of 0.5 a'Qa - e'a
    at_zero = alpha <= 0
    at_C = alpha >= C
    free = ~at_zero & ~at_C
    tol = eps + 1e-6
    assert np.all(grad[at_zero] >= -tol)
    assert np.all(grad[at_C] <= tol)
    assert np.all(np.abs(grad[free]) <= tol)
    # and it is a different problem from the SVM with bias
    with_bias = train(y, X, f"-t {kernel_type} -c {C} -q", n_jobs=1)
    assert with_bias.rho[0] != 0


def _capture_libsvm_stdout(fn):
    """Run fn, returning what LIBSVM's C code wrote to fd 1."""
    libc = ctypes.CDLL(None)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        libc.fflush(None)
        saved = os.dup(1)
        os.dup2(tmp.fileno(), 1)
        try:
            fn()
        finally:
            libc.fflush(None)
            os.dup2(saved, 1)
            os.close(saved)
        tmp.seek(0)
        return tmp.read().decode()


def _line_heads(text):
    heads = []
    for line in text.splitlines():
        line = line.strip(".*")
        if line:
            heads.append(line.split("=")[0].strip() if "=" in line else line)
    return heads


@pytest.mark.parametrize("options", ["-s 0 -c 2", "-s 1 -n 0.3", "-s 2", "-s 3", "-s 4",
                                     "-s 0 -c 2 -b 1", "-s 3 -b 1"])
def test_printed_lines_follow_libsvm(shared, capsys, options):
    X, y = mushrooms_multiclass(shared, 300) if options.startswith("-s 0") else \
        load(shared, "heart_scale", 270, 13)
    folds = None
    if "-b 1" in options:
        # the same internal folds for both, so the fold trainings print the same
        libc = _libc()
        if options.startswith("-s 3"):
            sizes = [len(y)]
        else:
            labs = list(train(y, X, "-q", n_jobs=1).labels)
            counts = {a: np.count_nonzero(y == a) for a in labs}
            sizes = [counts[a] + counts[b] for i, a in enumerate(labs) for b in labs[i + 1:]]
        folds = libsvm_fold_perms(libc, 4321, sizes)
        libc.srand(4321)
    out_l = _capture_libsvm_stdout(lambda: svmutil.svm_train(y, X, options))
    capsys.readouterr()
    train(y, X, options, n_jobs=1, _folds=folds)
    out_k = capsys.readouterr().out
    # kernsolve's SMO core does not report LIBSVM's shrinking hint
    heads_l = [h for h in _line_heads(out_l) if h != "WARNING: using -h 0 may be faster"]
    assert _line_heads(out_k) == heads_l
    # the numbers of the nSV lines agree too
    pick = [ln for ln in out_k.splitlines() if ln.startswith(("nSV", "Total nSV"))]
    pick_l = [ln for ln in out_l.splitlines() if ln.startswith(("nSV", "Total nSV"))]
    assert pick == pick_l
    capsys.readouterr()
    train(y, X, options + " -q", n_jobs=1, _folds=folds)
    assert capsys.readouterr().out == ""


def test_max_iter_warns_and_is_recorded(shared):
    X, y = load(shared, "heart_scale", 270, 13)
    with pytest.warns(RuntimeWarning, match="max number of iterations"):
        model = train(y, X, "-c 100 -q", n_jobs=1, _max_iter=5)
    assert model.stats["status"] == "max_iter"
    assert model.stats["n_iter"] <= 5


def test_progress_callback_prints_to_stderr_unless_quiet(capsys):
    """The solvers' callback is the rate-limited progress line (tests/test_progress.py)."""
    from kernsolve._params import parse_options
    from kernsolve._progress import Progress
    from kernsolve.solvers.libsvm.driver import _Context
    ctx = _Context(parse_options(""), 1, None)
    report = ctx.progress()
    assert isinstance(report, Progress) and report.solver == "smo"
    report.t0 -= report.delay           # as if the run had been going for a while
    report({"n_iter": 120000, "gap": 0.01321, "n_kernel_evals": 312345678, "seconds": 14.2})
    err = capsys.readouterr().err
    assert err.startswith("kernsolve smo: iter 120000, gap 0.01321, kernel evals 3.123e+08, ")
    assert err.endswith(" elapsed\n")
    assert _Context(parse_options("-q"), 1, None).progress() is None
