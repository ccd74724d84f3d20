"""Warm starts along C (issue 35 item 2): each fold's fit at the next C starts
from the previous C's solution (alpha seeding); the solutions equal the cold
fits' within the solver's tolerance, the grid's best cell is the same."""
import io

import numpy as np
import pytest

import kernsolve
from kernsolve import grid_search, parse_options, read_problem, train
from kernsolve.model_selection.cv import make_folds, train_rows
from kernsolve.solvers.libsvm.formulations import WarmStart


@pytest.fixture(scope="module")
def heart():
    return read_problem(kernsolve.dataset_path("heart_scale"))


def test_seed_is_the_scaled_solution_in_the_new_box():
    warm = WarmStart()
    C1 = np.array([1.0, 1.0, 2.0, 2.0])
    assert np.array_equal(warm.start(C1), np.zeros(4))     # nothing kept yet: from 0
    alpha = np.array([0.0, 1.0, 0.5, 2.0])
    warm.keep(alpha, C1)
    warm.begin_fit()
    start = warm.start(4 * C1)
    np.testing.assert_array_equal(start, 4 * alpha)
    y = np.array([1, -1, 1, -1])
    assert y @ alpha == y @ start / 4                      # y'alpha kept (scaled)
    warm.begin_fit()
    assert np.all(warm.start(C1 / 8) <= C1 / 8)
    warm.begin_fit()
    assert np.array_equal(warm.start(np.ones(3)), np.zeros(3))   # another problem


@pytest.mark.parametrize("options", ["-c {} -g 0.5", "-s 3 -p 0.1 -c {} -g 0.5",
                                     "-c {} -g 0.1 -b 1", "--bias 0 -c {}"])
def test_warm_fit_equals_cold_fit_within_tolerance(heart, options):
    """Oracle: the cold fit at the same C (same optimum: the dual objective
    agrees to the stopping tolerance, the decision values to a few eps)."""
    y, X = heart
    rows = train_rows(make_folds(y, 5, 0), 0)
    warm = WarmStart()
    iterations = []
    for C in (0.5, 4.0, 32.0):
        param = parse_options(options.format(C) + " -q")
        hot = train(y[rows], X[rows], param, _warm=warm)
        cold = train(y[rows], X[rows], param)
        np.testing.assert_allclose(hot.stats["objective"], cold.stats["objective"],
                                   rtol=2e-3)
        hot_values = kernsolve.predict(None, X, hot, "-q")[2]
        cold_values = kernsolve.predict(None, X, cold, "-q")[2]
        np.testing.assert_allclose(hot_values, cold_values, atol=5e-3 * C)
        iterations.append((hot.stats["n_iter"], cold.stats["n_iter"]))
    # the first C starts from 0 (the cold path); the next ones from the seed
    assert iterations[0][0] == iterations[0][1]
    assert any(h != c for h, c in iterations[1:])


def test_warm_grid_same_best_cell_rates_within_a_row(heart):
    y, X = heart
    grid = {"c": [2.0 ** v for v in range(-5, 16, 2)], "g": [2.0 ** v for v in (-3, -5, -7)]}
    warm = grid_search(y, X, "-q --warm", grid=grid, n_folds=5, n_jobs=2)
    exact = grid_search(y, X, "-q", grid=grid, n_folds=5, n_jobs=2)
    assert warm.best_params == exact.best_params
    assert warm.summary_line() == exact.summary_line()
    one_row = 100.0 / y.size
    assert all(abs(a["rate"] - b["rate"]) <= one_row + 1e-12
               for a, b in zip(warm.cells, exact.cells))
    # --cold: the exact path, whatever --warm says
    cold = grid_search(y, X, "-q --warm --cold", grid=grid, n_folds=5, n_jobs=2)
    assert [c["rate"] for c in cold.cells] == [c["rate"] for c in exact.cells]


@pytest.mark.parametrize("name", ["SVC", "SVR"])
def test_estimator_warm_start_along_C(heart, name):
    """warm_start=True: the next fit at another C starts from the previous
    solution (fewer or other iterations), reaching the cold fit's optimum."""
    y, X = heart
    Est = getattr(kernsolve, name)
    est = Est(gamma=0.1, warm_start=True)
    for C in (0.5, 8.0, 64.0):
        est.set_params(C=C).fit(X, y)
        cold = Est(gamma=0.1, C=C).fit(X, y)
        np.testing.assert_allclose(est.decision_function(X) if name == "SVC" else
                                   est.predict(X),
                                   cold.decision_function(X) if name == "SVC" else
                                   cold.predict(X), atol=5e-3 * C)
        first = C == 0.5
        assert np.array_equal(est.n_iter_, cold.n_iter_) == first
    # other data: a fresh start (the cold fit's bits)
    est.fit(X[:200], y[:200])
    cold = Est(gamma=0.1, C=64.0).fit(X[:200], y[:200])
    np.testing.assert_array_equal(np.asarray(est.intercept_), np.asarray(cold.intercept_))
    assert np.array_equal(est.n_iter_, cold.n_iter_)
