"""kernsolve.cross_validation (issue 7): folds, oracles, thread budget, CLI -v."""
import contextlib
import io
import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import kernsolve
from kernsolve import cross_validation, predict, read_problem, train
from kernsolve.model_selection.cv import make_folds, plan_waves, train_rows
from kernsolve._random import integers, permutation

from conftest import libsvm_serial


def _problem(shared, name, n_rows=None):
    return read_problem(io.BytesIO(shared.lines(name, n_rows)))


@pytest.fixture(scope="module")
def heart():
    return read_problem(kernsolve.dataset_path("heart_scale"))


@pytest.fixture
def german(shared):
    return _problem(shared, "german.numer_scale", 400)


@pytest.fixture
def housing(shared):
    return _problem(shared, "housing_scale", 200)


def hand_loop(y, X, folds, options, predict_options="-q"):
    """The oracle: train on the other folds (in order), predict the held-out fold."""
    target = np.full(len(y), np.nan)
    for i, test in enumerate(folds):
        rows = train_rows(folds, i)
        model = train(y[rows], X[rows], options, n_jobs=1)
        pred, _, _ = predict(None, X[test], model, predict_options)
        target[test] = pred
    return target


# ---------------------------------------------------------------- folds

def libsvm_scheme(y, k, seed):
    """LIBSVM's svm_cross_validation stratification, written from doc/cross-validation.md:
    classes by first appearance (-1/+1 swapped to +1 first), Fisher-Yates inside each
    class with draw number = position in the grouped array, pieces i*count//k."""
    labels = list(dict.fromkeys(y.tolist()))
    if sorted(labels) == [-1.0, 1.0] and labels[0] == -1.0:
        labels = [1.0, -1.0]
    grouped, starts = [], []
    for c in labels:
        starts.append(len(grouped))
        grouped += [i for i in range(len(y)) if y[i] == c]
    for c, s in zip(labels, starts):
        count = int(np.sum(y == c))
        for i in range(count - 1):
            j = i + int(integers(count - i, seed, "folds", start=s + i)[0])
            grouped[s + i], grouped[s + j] = grouped[s + j], grouped[s + i]
    folds = []
    for f in range(k):
        fold = []
        for c, s in zip(labels, starts):
            count = int(np.sum(y == c))
            fold += grouped[s + f * count // k:s + (f + 1) * count // k]
        folds.append(fold)
    return folds


def test_folds_stratified_deterministic_and_libsvm_scheme(german):
    y, _ = german
    for k in (2, 5, 7):
        folds = make_folds(y, k, seed=3)
        again = make_folds(y, k, seed=3)
        assert all(np.array_equal(a, b) for a, b in zip(folds, again))
        assert sorted(np.concatenate(folds).tolist()) == list(range(len(y)))
        for c in np.unique(y):  # stratified: each fold holds count_c/k of class c (+-1)
            share = np.sum(y == c) / k
            assert all(abs(np.sum(y[f] == c) - share) < 1 for f in folds)
        assert [f.tolist() for f in folds] == libsvm_scheme(y, k, 3)
    other = make_folds(y, 5, seed=4)
    assert not all(np.array_equal(a, b) for a, b in zip(make_folds(y, 5, seed=3), other))


def test_plain_folds_for_regression_and_leave_one_out(housing):
    y, _ = housing
    n = len(y)
    perm = permutation(n, 9, "folds")
    folds = make_folds(y, 6, seed=9, stratified=False)
    assert [f.tolist() for f in folds] == [perm[i * n // 6:(i + 1) * n // 6].tolist()
                                           for i in range(6)]
    # n_folds == n: LIBSVM's plain branch even for classification
    ys = np.array([1.0, -1.0, 1.0, -1.0])
    loo = make_folds(ys, 4, seed=0)
    assert [f.tolist() for f in loo] == [[int(i)] for i in permutation(4, 0, "folds")]


def test_thread_budget_never_exceeds_the_cores():
    for cores in range(1, 9):
        for n_tasks in range(0, 50):
            waves = plan_waves(n_tasks, cores)
            assert sum(w[0] for w in waves) == n_tasks
            for count, workers, threads in waves:
                assert len(threads) == count and min(threads) >= 1
                # any `workers` tasks of the wave may run together
                assert sum(sorted(threads)[-workers:]) <= cores
    assert plan_waves(5, 2) == [(4, 2, [1, 1, 1, 1]), (1, 1, [2])]


# ---------------------------------------------------------------- oracles

def test_accuracy_equals_hand_written_loop(german):
    y, X = german
    r = cross_validation(y, X, "-c 2 -g 0.05 -q", n_folds=5, n_jobs=2, seed=1)
    target = hand_loop(y, X, r.folds, "-c 2 -g 0.05 -q")
    np.testing.assert_array_equal(r.target, target)
    assert r.accuracy == pytest.approx(100.0 * np.mean(target == y), rel=0, abs=1e-12)
    assert r["accuracy"] == r.accuracy == r.score
    assert [f["n_test"] for f in r.fold_results] == [len(f) for f in r.folds]
    for fr, f in zip(r.fold_results, r.folds):
        assert fr["accuracy"] == pytest.approx(100.0 * np.mean(target[f] == y[f]))


def test_regression_mse_and_squared_correlation(housing):
    y, X = housing
    r = cross_validation(y, X, "-s 3 -c 4 -p 0.5 -q", n_folds=4, n_jobs=2)
    target = hand_loop(y, X, r.folds, "-s 3 -c 4 -p 0.5 -q")
    np.testing.assert_array_equal(r.target, target)
    assert r.mean_squared_error == pytest.approx(np.mean((target - y) ** 2), rel=1e-12)
    assert r.squared_correlation == pytest.approx(np.corrcoef(target, y)[0, 1] ** 2,
                                                  rel=1e-9)
    assert r.score == r.mean_squared_error


def test_probability_targets_follow_predict_b1(heart):
    y, X = heart
    r = cross_validation(y, X, "-b 1 -q", n_folds=3, n_jobs=2)
    np.testing.assert_array_equal(r.target, hand_loop(y, X, r.folds, "-b 1 -q", "-q -b 1"))


def test_same_folds_in_libsvm_official_give_the_same_predictions(heart):
    svmutil = pytest.importorskip("libsvm.svmutil")
    y, X = heart
    r = cross_validation(y, X, "-c 4 -q", n_folds=5, n_jobs=1)
    with libsvm_serial():
        Xd = X.toarray()
        target = np.empty(len(y))
        for i, test in enumerate(r.folds):
            rows = train_rows(r.folds, i)
            rows_x = [{j + 1: v for j, v in enumerate(Xd[q]) if v != 0} for q in rows]
            model = svmutil.svm_train(y[rows].tolist(), rows_x, "-c 4 -q")
            test_x = [{j + 1: v for j, v in enumerate(Xd[q]) if v != 0} for q in test]
            with contextlib.redirect_stdout(io.StringIO()):
                pred, _, _ = svmutil.svm_predict(y[test].tolist(), test_x, model, "-q")
            target[test] = pred
    assert np.sum(target != r.target) <= 1


# ---------------------------------------------------------------- invariance

def test_identical_for_any_n_jobs_and_backend(german):
    y, X = german
    opts = "-c 1 -g 0.1 -q"
    serial = cross_validation(y, X, opts, n_folds=5, n_jobs=1)
    assert serial.waves == [(5, 1, [1] * 5)]
    # (process backends: the loky and Dask tests of test_grid.py)
    for n_jobs, backend in ((2, None), (-1, None), (2, "threading")):
        r = cross_validation(y, X, opts, n_folds=5, n_jobs=n_jobs, backend=backend)
        np.testing.assert_array_equal(r.target, serial.target)
        assert r.accuracy == serial.accuracy
    # sparse and dense X: the same folds and predictions
    dense = cross_validation(y, X.toarray(), opts, n_folds=5, n_jobs=2)
    np.testing.assert_array_equal(dense.target, serial.target)


def test_seed_argument_and_options_seed(german):
    y, X = german
    a = cross_validation(y, X, "-q --seed 7", n_folds=3, n_jobs=2)
    b = cross_validation(y, X, "-q", n_folds=3, n_jobs=2, seed=7)
    assert all(np.array_equal(f, g) for f, g in zip(a.folds, b.folds))
    np.testing.assert_array_equal(a.target, b.target)


def test_progress_lines_and_quiet(heart, capsys):
    y, X = heart
    cross_validation(y, X, "", n_folds=4, n_jobs=2)
    first, *lines = capsys.readouterr().out.splitlines()
    assert first.startswith("cross validation: kernel values of rbf g=0.0769231 computed "
                            "once for the 4 folds: 270 x 270 matrix")
    assert len(lines) == 4
    assert all(re.match(r"cross validation: fold [1-4]/4 done \([1-4]/4\): accuracy = ", s)
               for s in lines)
    cross_validation(y, X, "-q", n_folds=4, n_jobs=2)
    cross_validation(y, X, "", n_folds=4, n_jobs=2, verbose=False)
    assert capsys.readouterr().out == ""


# ---------------------------------------------------------------- CLI -v

def test_cli_v_equals_the_api(tmp_path, shared):
    from kernsolve.cli import train as cli_train
    path = tmp_path / "german"
    path.write_bytes(shared.lines("german.numer_scale", 300))
    y, X = read_problem(str(path))
    api = cross_validation(y, X, "-c 2 -q --seed 5", n_folds=4, n_jobs=2)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_train.cli(["-v", "4", "-c", "2", "-q", "--seed", "5", "--threads", "2",
                              str(path)])
    assert code == 0, err.getvalue()
    assert out.getvalue() == "Cross Validation Accuracy = %g%%\n" % api.accuracy
    params = kernsolve.parse_options("-v 4 -c 2 -q --seed 5")
    target = cli_train.cross_validation_targets(y, X, ["-c", "2", "-q", "--seed", "5"], params)
    np.testing.assert_array_equal(target, api.target)


# ---------------------------------------------------------------- bad input

def test_bad_fold_counts(heart):
    y, X = heart
    with pytest.raises(ValueError, match="n_folds must be at least 2, got 1"):
        cross_validation(y, X, "-q", n_folds=1)
    with pytest.raises(ValueError, match=r"n_folds = 271 is more than the number of "
                                         r"samples \(270\)"):
        cross_validation(y, X, "-q", n_folds=271)
    with pytest.raises(ValueError, match="n_folds must be an integer"):
        cross_validation(y, X, "-q", n_folds=2.5)
    with pytest.raises(ValueError, match="X has 270 rows but y has 269"):
        cross_validation(y[:-1], X, "-q")
    with pytest.raises(ValueError, match="-c: C must be > 0"):
        cross_validation(y, X, "-c -1 -q")


def test_small_class_warns_like_scikit_learn(heart):
    y, X = heart
    y = y.copy()
    y[:3] = 7  # a third class with 3 members, 5 folds
    with pytest.warns(UserWarning, match="least populated class in y has only 3 members, "
                                         "which is less than n_folds=5"):
        r = cross_validation(y, X, "-q", n_folds=5, n_jobs=2)
    assert np.all(np.isfinite(r.target))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cross_validation(y[3:], X[3:], "-q", n_folds=5, n_jobs=2)


def test_a_failing_fold_is_named(german):
    y, X = german  # 2 classes, about 70/30: nu = 0.9 is infeasible in every fold
    with pytest.raises(ValueError, match=r"fold \d of 3 failed: ValueError: specified nu "
                                         r"is infeasible"):
        cross_validation(y, X, "-s 1 -n 0.9 -q", n_folds=3, n_jobs=2)


def test_sample_weight_passed_to_each_fold(german):
    y, X = german
    w = np.linspace(0.5, 2.0, len(y))
    r = cross_validation(y, X, "-q", n_folds=3, n_jobs=2, sample_weight=w)
    target = np.empty(len(y))
    for i, test in enumerate(r.folds):
        rows = train_rows(r.folds, i)
        model = train(y[rows], X[rows], "-q", sample_weight=w[rows], n_jobs=1)
        target[test] = predict(None, X[test], model, "-q")[0]
    np.testing.assert_array_equal(r.target, target)
    assert sp.issparse(X)


def test_precomputed_kernel_gives_the_same_predictions(heart):
    from kernsolve import kernel_matrix
    y, X = heart
    K = kernel_matrix(X, X, kernel=2, gamma=0.1)
    Xp = np.hstack([np.arange(1, len(y) + 1)[:, None], K])  # LIBSVM's serial column
    rbf = cross_validation(y, X, "-g 0.1 -q", n_folds=4, n_jobs=2)
    pre = cross_validation(y, Xp, "-t 4 -q", n_folds=4, n_jobs=2)
    np.testing.assert_array_equal(pre.target, rbf.target)


def test_runner_without_joblib_gives_joblib_results(heart, monkeypatch):
    """The plain-thread runner (used when joblib is not imported) against joblib's
    threading backend: the same predictions for every fold, the same grid."""
    import kernsolve.model_selection.cv as cv
    y, X = heart
    oracle = cross_validation(y, X, "-c 2 -g 0.3 -q", n_folds=5, n_jobs=2,
                              backend="threading")
    grid_oracle = kernsolve.grid_search(y, X, "-q", grid={"c": [1, 8], "g": [0.1, 0.5]},
                                        n_folds=3, n_jobs=2, backend="threading")
    monkeypatch.setattr(cv, "_needs_joblib", lambda backend: False)
    ours = cross_validation(y, X, "-c 2 -g 0.3 -q", n_folds=5, n_jobs=2)
    assert np.array_equal(ours.target, oracle.target) and ours.waves == oracle.waves
    grid = kernsolve.grid_search(y, X, "-q", grid={"c": [1, 8], "g": [0.1, 0.5]},
                                 n_folds=3, n_jobs=2)
    assert [c["rate"] for c in grid.cells] == [c["rate"] for c in grid_oracle.cells]


def test_run_unordered_hands_over_results_and_errors():
    from kernsolve._threads import run_unordered
    assert sorted(run_unordered([lambda i=i: i * i for i in range(7)], 3)) == \
        [i * i for i in range(7)]

    def boom():
        raise KeyError("fold 3")

    with pytest.raises(KeyError, match="fold 3"):
        list(run_unordered([lambda: 1, boom, lambda: 2], 1))
