"""Cross-validation and grid search for every solver of the registry (issue 15, item 3).

``kernsolve-train --solver dsg -v 5`` failed with "'DSGModel' object has no
attribute 'support_vectors'": the folds read LIBSVM's model layout.  They now
go through what every model kind provides (``kernsolve._model_kind.ModelKind``:
``n_sv``, ``stats``, prediction by ``kernsolve.predict``).  The oracle of every
test is the plain loop: train on the other folds, predict the held-out fold.
"""
import contextlib
import io
import lzma

import numpy as np
import pytest

import kernsolve
from kernsolve import cross_validation, grid_search, predict, read_problem, train
from kernsolve.model_selection.cv import make_folds, train_rows
from kernsolve.solvers import REGISTRY, spec_for

from test_cv import hand_loop

# every --solver name with every SVM type its family trains
SOLVER_TYPES = [(name, s) for spec in REGISTRY for name in spec.names
                for s in sorted(spec.svm_types)]
SOLVERS = [name for spec in REGISTRY for name in spec.names]
N_FOLDS = 3


@pytest.fixture(scope="module")
def heart():
    return read_problem(kernsolve.dataset_path("heart_scale"))


@pytest.fixture(scope="module")
def heart_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "heart"
    with lzma.open(kernsolve.dataset_path("heart_scale"), "rb") as f:
        path.write_bytes(f.read())
    return path


def _options(name, svm_type):
    return f"-q -s {svm_type} --solver {name}"


def _stratified(svm_type):
    return svm_type in (0, 1)


@pytest.mark.parametrize("name,svm_type", SOLVER_TYPES)
def test_cross_validation_equals_the_hand_loop_for_every_solver(heart, name, svm_type):
    y, X = heart
    options = _options(name, svm_type)
    r = cross_validation(y, X, options, n_folds=N_FOLDS, n_jobs=2)
    folds = make_folds(y, N_FOLDS, 0, stratified=_stratified(svm_type))
    assert [f.tolist() for f in r.folds] == [f.tolist() for f in folds]
    target = hand_loop(y, X, folds, options)
    np.testing.assert_array_equal(r.target, target)
    for i, test in enumerate(folds):
        fold = r.fold_results[i]
        assert fold["accuracy"] == 100.0 * np.mean(target[test] == y[test])
        model = train(y[train_rows(folds, i)], X[train_rows(folds, i)], options, n_jobs=1)
        assert fold["n_SV"] == model.n_sv
    assert r.accuracy == 100.0 * np.mean(target == y)


@pytest.mark.parametrize("name", SOLVERS)
def test_cli_v_prints_the_api_accuracy_for_every_solver(heart, heart_file, name):
    from kernsolve.cli import train as cli_train
    y, X = heart
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_train.cli(["--solver", name, "-v", str(N_FOLDS), "-q", str(heart_file)])
    assert code == 0, err.getvalue()
    api = cross_validation(y, X, _options(name, 0), n_folds=N_FOLDS)
    assert out.getvalue() == "Cross Validation Accuracy = %g%%\n" % api.accuracy


@pytest.mark.parametrize("name", SOLVERS)
def test_grid_search_rates_equal_the_hand_loop_for_every_solver(heart, name):
    y, X = heart
    # -c where the solver uses it; gamma for those that refuse -c (EigenPro, the Perceptron)
    axis = "g" if "c" in spec_for(name).ignored(name) else "c"
    grid = {axis: [0.125, 0.5] if axis == "g" else [1.0, 4.0]}
    r = grid_search(y, X, _options(name, 0), grid=grid, n_folds=N_FOLDS, n_jobs=2)
    folds = make_folds(y, N_FOLDS, 0)
    for cell in r.cells:
        target = hand_loop(y, X, folds,
                           _options(name, 0) + f" -{axis} {cell['params'][axis]!r}")
        assert cell["rate"] == 100.0 * np.mean(target == y)
    assert r.best_rate == max(cell["rate"] for cell in r.cells)


def test_kernsolve_grid_runs_dsg(heart, heart_file, tmp_path, monkeypatch):
    from kernsolve.cli import grid as cli_grid
    y, X = heart
    monkeypatch.chdir(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_grid.cli(["-log2c", "0,2,2", "-log2g", "-3,-3,1", "-v", str(N_FOLDS),
                             "-png", "null", "-out", "null", "--solver", "udsg", "-q",
                             str(heart_file)])
    assert code == 0, err.getvalue()
    api = grid_search(y, X, "-q --solver udsg", grid={"c": [1.0, 4.0], "g": [0.125]},
                      n_folds=N_FOLDS)
    # the command prints grid.py's rounded last line (GridResult.summary_line)
    assert out.getvalue().strip() == api.summary_line().strip()
    assert out.getvalue().split()[:2] == [str(api.best_params["c"]), str(api.best_params["g"])]
    assert float(out.getvalue().split()[2]) == float("%g" % api.best_rate)


CLASSIFIERS = [name for name, s in SOLVER_TYPES if s == 0]


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_one_class_training_data_gives_libsvms_one_label_model(heart, name, tmp_path):
    # LIBSVM (libsvm-official) is the oracle: training data of one class gives a
    # model that predicts that label for every row, with a warning, for every solver.
    from libsvm import svmutil
    y, X = heart
    rows = np.flatnonzero(y == -1)[:40]
    with pytest.warns(UserWarning, match=r"only one class \(label -1"):
        model = train(y[rows], X[rows], f"-q --solver {name}")
    theirs = svmutil.svm_train(y[rows].tolist(), X[rows], "-q")
    expected, _, _ = svmutil.svm_predict(y.tolist(), X, theirs, "-q")
    assert set(expected) == {-1.0}
    np.testing.assert_array_equal(predict(None, X, model, "-q")[0], expected)
    kernsolve.save_model(str(tmp_path / "m"), model)
    np.testing.assert_array_equal(
        predict(None, X, kernsolve.load_model(str(tmp_path / "m")), "-q")[0], expected)


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_cross_validation_with_a_one_class_training_fold(name):
    # 5 rows of class 1 and one of class -1 in 5 stratified folds: the fold
    # holding the -1 row trains on class 1 alone (svm-train predicts 1 there).
    # Oracle: the hand loop, and that fold's rows all predicted as class 1.
    X = np.arange(1.0, 7.0).reshape(-1, 1)
    y = np.array([1.0, 1.0, 1.0, 1.0, 1.0, -1.0])
    options = f"-q --solver {name}"
    with pytest.warns(UserWarning):
        r = cross_validation(y, X, options, n_folds=5)
        folds = make_folds(y, 5, 0, stratified=True)
        target = hand_loop(y, X, folds, options)
    one_class = [f for i, f in enumerate(folds) if np.all(y[train_rows(folds, i)] == 1)]
    assert one_class, "the folds should leave one training set with class 1 alone"
    for test in one_class:
        assert np.all(r.target[test] == 1.0)
    np.testing.assert_array_equal(r.target, target)
    assert r.accuracy == 100.0 * np.mean(target == y)
