"""kernsolve.train on bad input: one clear ValueError naming the problem, never a crash.

The oracle for what is "bad" is LIBSVM 3.37's svm_check_parameter and its
Python wrapper (the same messages where LIBSVM has one), plus kernsolve's own
rules for what LIBSVM lacks (sample weights, non-finite values, labels).
"""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from kernsolve._api import train

RNG = np.random.default_rng(3)
X = RNG.normal(size=(40, 3))
Y = np.where(X[:, 0] + 0.3 * RNG.normal(size=40) > 0, 1.0, -1.0)


@pytest.mark.parametrize("options,match", [
    ("-c 0", "C must be > 0"),
    ("-c -1", "C must be > 0"),
    ("-s 3 -c 0", "C must be > 0"),
    ("-s 4 -c -2", "C must be > 0"),
    ("-s 1 -n 0", r"nu must be in \(0, 1\]"),
    ("-s 1 -n 1.5", r"nu must be in \(0, 1\]"),
    ("-s 2 -n -0.1", r"nu must be in \(0, 1\]"),
    ("-s 4 -n 2", r"nu must be in \(0, 1\]"),
    ("-g -1", "gamma must be >= 0"),
    ("-t 1 -d -1", "degree must be >= 0"),
    ("-s 3 -p -0.5", "epsilon must be >= 0"),
    ("-e 0", "eps must be > 0"),
    ("-m 0", "cache size must be > 0"),
    ("-s 7", "unknown svm type"),
    ("-t 9", "unknown kernel type"),
    ("-s 1 --bias 0", "only available for C-SVC"),
    ("-w1 0", "class weight of 0"),
    ("-c abc", "expected a number"),
])
def test_invalid_parameters(options, match):
    with pytest.raises(ValueError, match=match):
        train(Y, X, options + " -q")


def test_infeasible_nu_is_refused_like_libsvm(svmutil):
    y = np.array([1.0] * 30 + [-1.0] * 10)
    # LIBSVM's rule: nu * (n1 + n2) / 2 <= min(n1, n2), here nu <= 0.5
    with pytest.raises(ValueError, match="specified nu is infeasible"):
        svmutil.svm_train(y, X, "-s 1 -n 0.6 -q")
    with pytest.raises(ValueError, match="specified nu is infeasible.*nu < 0.5"):
        train(y, X, "-s 1 -n 0.6 -q")
    # at the limit LIBSVM's check passes but its model has no SV and rho = NaN;
    # kernsolve says so
    m = svmutil.svm_train(y, X, "-s 1 -n 0.5 -q")
    assert m.get_nr_sv() == 0 and np.isnan(m.rho[0])
    with pytest.raises(ValueError, match="degenerate"):
        train(y, X, "-s 1 -n 0.5 -q")
    model = train(y, X, "-s 1 -n 0.4 -q")
    assert np.isfinite(model.rho[0]) and model.dual_coef.shape[1] > 0
    # with sample weights the class sizes are weighted
    w = np.where(y > 0, 1.0, 3.0)   # 30 vs 30 weighted: any nu is feasible
    train(y, X, "-s 1 -n 0.9 -q", sample_weight=w)


def test_one_class_only_follows_libsvm_with_a_warning(svmutil):
    y = np.ones(40)
    m = svmutil.svm_train(y, X, "-q")
    with pytest.warns(UserWarning, match="only one class"):
        model = train(y, X, "-q")
    assert list(model.labels) == [1] == list(m.get_labels())
    assert model.dual_coef.shape[1] == 0 == m.get_nr_sv()
    assert model.rho.size == 0
    import kernsolve
    labels, _, _ = kernsolve.predict(None, X[:5], model, "-q")
    assert np.all(np.asarray(labels) == 1)


@pytest.mark.parametrize("y,X_,match", [
    (np.zeros(0), np.zeros((0, 3)), "empty"),
    (np.array(["a", "b"]), np.zeros((2, 3)), "labels must be numbers"),
    (np.array([1.0, -1.0, 1.0]), np.zeros((2, 3)), "2 rows but y has 3"),
    (np.array([1.0, np.nan]), np.zeros((2, 3)), "not finite"),
    (np.array([1.0, np.inf]), np.zeros((2, 3)), "not finite"),
    (np.array([1.0, -1.0]), np.array([[0.0, np.nan], [1.0, 2.0]]), "non-finite|NaN"),
    (np.array([1.0, -1.0]), np.array([[0.0, np.inf], [1.0, 2.0]]), "non-finite|inf"),
    (np.array([1.0, -1.0]), sp.csr_matrix(np.array([[0.0, np.inf], [1.0, 2.0]])),
     "non-finite|inf"),
    (np.array([1.5, -1.0]), np.zeros((2, 3)), "labels must be integers"),
    (np.ones((2, 2)), np.zeros((2, 3)), "one-dimensional"),
    (np.array([1.0, -1.0]), np.zeros(3), "2-D|two-dimensional|dimension"),
])
def test_bad_data(y, X_, match):
    with pytest.raises(ValueError, match=match):
        train(y, X_, "-q")


def test_labels_as_objects_and_regression_targets():
    with pytest.raises(ValueError, match="labels must be numbers"):
        train([1, "x", 1], np.zeros((3, 2)), "-q")
    # real-valued targets are fine for regression, not for classification
    train(np.linspace(0, 1, 40), X, "-s 3 -q")
    with pytest.raises(ValueError, match="integers"):
        train(np.linspace(0, 1, 40), X, "-s 0 -q")


@pytest.mark.parametrize("w,match", [
    (-np.ones(40), "negative"),
    (np.ones(39), "expected \\(40,\\)"),
    (np.full(40, np.nan), "not finite"),
    (np.zeros(40), "zero for every row"),
    (np.array(["a"] * 40), "must be numbers"),
])
def test_bad_sample_weights(w, match):
    with pytest.raises(ValueError, match=match):
        train(Y, X, "-q", sample_weight=w)


def test_precomputed_kernel_serial_numbers():
    K = X @ X.T
    good = np.hstack([np.arange(1, 41)[:, None], K])
    train(Y, good, "-t 4 -q")
    for bad_serial, what in ((0, "serial"), (41, "serial"), (2.5, "serial")):
        bad = good.copy()
        bad[3, 0] = bad_serial
        with pytest.raises(ValueError, match=what):
            train(Y, bad, "-t 4 -q")
    with pytest.raises(ValueError, match="rows"):
        train(Y[:10], good, "-t 4 -q")


def test_unknown_weight_label_warns_like_libsvm():
    with pytest.warns(UserWarning, match="class label 7 specified in weight is not found"):
        train(Y, X, "-w7 2 -q")


def test_svr_probability_needs_two_rows():
    with pytest.raises(ValueError, match="at least 2"):
        train(np.array([1.0]), X[:1], "-s 3 -b 1 -q")


def test_bad_private_folds():
    with pytest.raises(ValueError, match="permutation"):
        train(Y, X, "-b 1 -q", _folds=[np.zeros(40, dtype=int)])
    with pytest.raises(ValueError, match="one permutation per pair"):
        train(Y, X, "-b 1 -q", _folds=[np.arange(40), np.arange(40)])


def test_bad_options_type_and_threads():
    with pytest.raises(ValueError):
        train(Y, X, 3.5)
    with pytest.raises(ValueError, match="n_jobs"):
        train(Y, X, "-q", n_jobs=0)


def test_no_crash_on_degenerate_but_valid_data():
    # all rows identical: every kernel value equal, the problem is degenerate
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Xs = np.ones((20, 2))
        ys = np.array([1.0, -1.0] * 10)
        for options in ("-s 0", "-s 2", "-s 3", "-s 4", "-s 0 -b 1",
                        "-s 0 --bias 0", "-t 0 -s 0"):
            model = train(ys, Xs, options + " -q")
            assert np.all(np.isfinite(model.rho))
            assert np.all(np.isfinite(model.dual_coef))
        # LIBSVM returns C = inf and rho = nan for nu-SVC here; kernsolve refuses
        with pytest.raises(ValueError, match="r = 0"):
            train(ys, Xs, "-s 1 -n 0.5 -q")
        # no features at all (a LIBSVM file of labels only): all-zero vectors, which
        # LIBSVM trains on (issue 15; svm-train's model file: test_unclear_errors.py)
        model = train(ys, sp.csr_matrix((20, 0)), "-q")
        assert np.all(np.isfinite(model.rho)) and np.all(np.isfinite(model.dual_coef))
        # no rows at all, or a dense matrix without columns, stays an error
        with pytest.raises(ValueError, match="empty"):
            train(ys[:0], sp.csr_matrix((0, 2)), "-q")
        with pytest.raises(ValueError, match="empty"):
            train(ys, np.zeros((20, 0)), "-q")
