"""Warm starts along C (issue 35 item 2): each fold's fit at the next C starts
from the previous C's solution (alpha seeding); the solutions equal the cold
fits' within the solver's tolerance, the grid's best cell is the same."""
import io
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import kernsolve
from kernsolve import grid_search, parse_options, read_problem, train
from kernsolve.model_selection.cv import make_folds, train_rows
from kernsolve.solvers.libsvm._cholesky_update import CholeskyFactor, free_step
from kernsolve.solvers.libsvm.active_set import _Columns, refine
from kernsolve.solvers.libsvm.formulations import WarmStart
from conftest import package_env
from test_grid_halving import _svmguide1


@pytest.fixture(scope="module")
def heart():
    return read_problem(kernsolve.dataset_path("heart_scale"))


def test_seed_is_the_scaled_solution_in_the_new_box():
    warm = WarmStart()
    C1 = np.array([1.0, 1.0, 2.0, 2.0])
    assert warm.start(C1) is None                          # nothing kept yet: cold
    alpha = np.array([0.0, 0.3, 0.5, 2.0])
    warm.keep(alpha, C1)
    warm.begin_fit()
    start = warm.start(3 * C1)
    np.testing.assert_allclose(start, 3 * alpha, rtol=1e-15)
    assert start[3] == 6.0                                 # at the old bound: at the new
    y = np.array([1, -1, 1, -1])
    assert abs(y @ start - 3 * (y @ alpha)) <= 1e-15       # y'alpha scaled with C
    warm.begin_fit()
    assert np.all(warm.start(C1 / 7) <= C1 / 7)
    warm.begin_fit()
    assert warm.start(np.ones(3)) is None                  # another problem: cold
    warm.begin_fit()
    assert warm.start(np.full(4, np.inf)) is None          # the hard margin: cold


@pytest.mark.parametrize("options", ["-c {} -g 0.5", "-s 3 -p 0.1 -c {} -g 0.5",
                                     "-s 4 -n 0.4 -c {} -g 0.5",
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


# A child with numpy's BLAS on two threads runs a warm grid on two cores and
# records, as each fit's held-out product starts, the BLAS thread count that
# threadpoolctl reports (the oracle), then the rates of the one-core run.
_BLAS_THREADS_CHILD = r"""
import sys
import numpy as np
import threadpoolctl
from kernsolve import grid_search
from kernsolve.solvers.libsvm.shared_kernel import SharedKernel

def blas_threads():
    return max(i["num_threads"] for i in threadpoolctl.threadpool_info()
               if i["user_api"] == "blas")

seen, inner = [], SharedKernel.weighted_sums
def spy(self, *args, **kwargs):
    seen.append(blas_threads())
    return inner(self, *args, **kwargs)
SharedKernel.weighted_sums = spy

data = np.load(sys.argv[1])
grid = {"c": [2.0, 8.0, 32.0], "g": [1.0]}
before = blas_threads()
two = grid_search(data["y"], data["X"], "-q --warm", grid=grid, n_jobs=2)
after = blas_threads()
in_two = sorted(set(seen))
one = grid_search(data["y"], data["X"], "-q --warm", grid=grid, n_jobs=1)
print(before, after, len(seen), ",".join(map(str, in_two)),
      [c["rate"] for c in two.cells] == [c["rate"] for c in one.cells])
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="BLAS threads as configured")
def test_warm_grid_on_two_cores_keeps_blas_on_one_thread(shared, tmp_path):
    """The fits of a warm grid on two cores run side by side, one thread each:
    their held-out rows' products (``SharedKernel.weighted_sums``) must run
    with numpy's BLAS on one thread, held for the whole run of fits, or its
    workers spin beside them (issue 35: the second worker doubled the CPU time
    on svmguide1 and gained nothing; per product, the limit's toggling still
    woke them).  Oracle: threadpoolctl's report of the BLAS thread count as
    each product starts (1 at every product of the two-core grid, 2 before and
    after it); the rates are the one-core run's."""
    pytest.importorskip("threadpoolctl")
    y, X = _svmguide1(shared, every=1)      # held-out blocks of 618 x 3,089 values
    data = tmp_path / "rows.npz"
    np.savez(data, y=y, X=X)
    done = subprocess.run([sys.executable, "-c", _BLAS_THREADS_CHILD, str(data)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600,
                          env=package_env(OPENBLAS_NUM_THREADS="2", OMP_NUM_THREADS="2"))
    assert done.returncode == 0, done.stderr
    before, after, n_products, in_two, same_rates = done.stdout.split()
    if int(before) < 2:
        pytest.skip("numpy's BLAS runs on one thread here")
    assert int(after) == int(before)        # the count is back after the grid
    assert int(n_products) > 0
    assert in_two == "1"                    # every product of the two-core grid
    assert same_rates == "True"


def test_two_cores_compute_two_matrices_side_by_side(heart, capsys, monkeypatch):
    """On two cores the first two gammas' shared matrices are computed on the
    two workers at once (one thread each), not one after the other, and every
    matrix on a worker (kernsolve.model_selection._rolling); the matrices, so
    every rate, are the one-core run's (oracle: that run's), and the verbose
    lines come in the gammas' order."""
    import threading
    from kernsolve.solvers.libsvm.shared_kernel import SharedKernel
    y, X = heart
    grid = {"c": [0.5, 2.0, 8.0], "g": [0.125, 0.5, 2.0]}
    seen, real = [], SharedKernel.compute.__func__
    together = threading.Barrier(2, timeout=120)    # passed only by two at once

    def compute(cls, X, param, n_threads, out=None):
        seen.append((threading.current_thread().name, n_threads))
        if two_cores and len(seen) <= 2:
            together.wait()
        return real(cls, X, param, n_threads, out=out)
    monkeypatch.setattr(SharedKernel, "compute", classmethod(compute))
    two_cores = True
    two = grid_search(y, X, "--warm", grid=grid, n_jobs=2)
    lines_two = [line for line in capsys.readouterr().out.splitlines()
                 if "computed once" in line]
    in_two, seen[:], two_cores = list(seen), [], False
    one = grid_search(y, X, "--warm", grid=grid, n_jobs=1)
    lines_one = [line for line in capsys.readouterr().out.splitlines()
                 if "computed once" in line]
    assert len(in_two) == 3
    assert sorted(in_two[:2]) == [("kernsolve-grid-0", 1), ("kernsolve-grid-1", 1)]
    assert not together.broken
    # the third: on one thread beside the other worker's fits, or on both
    # when that worker had nothing left to do
    assert in_two[2][0].startswith("kernsolve-grid-") and in_two[2][1] in (1, 2)
    assert seen == [("kernsolve-grid-0", 1)] * 3
    assert lines_two == lines_one and len(lines_one) == 3
    assert [c["rate"] for c in two.cells] == [c["rate"] for c in one.cells]


def test_warm_grid_on_two_cores_runs_every_chain_on_one_thread(heart):
    """With --warm on two cores each gamma has five chains (one per fold): the
    fifteen chains of three gammas run on two workers of one thread each,
    without a pause between gammas, and every rate is the one-core run's
    (oracle: that run, itself checked against the cold grid above)."""
    y, X = heart
    grid = {"c": [2.0 ** v for v in range(-1, 8, 2)], "g": [2.0 ** v for v in (-3, -5, -7)]}
    two = grid_search(y, X, "-q --warm", grid=grid, n_folds=5, n_jobs=2)
    one = grid_search(y, X, "-q --warm", grid=grid, n_folds=5, n_jobs=1)
    assert two.waves == [(15, 2, [1] * 15)]
    assert one.waves == [(15, 1, [1] * 15)]
    assert {c["label"]: c["rate"] for c in two.cells} == {c["label"]: c["rate"] for c in one.cells}
    assert two.summary_line() == one.summary_line()


@pytest.mark.parametrize("name", ["SVC", "SVR", "NuSVR"])
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
    # another kernel: a fresh start (the cold fit's bits)
    est.set_params(gamma=0.2).fit(X, y)
    cold = Est(gamma=0.2, C=64.0).fit(X, y)
    np.testing.assert_array_equal(np.asarray(est.intercept_), np.asarray(cold.intercept_))
    assert np.array_equal(est.n_iter_, cold.n_iter_)
    est.set_params(gamma=0.1)
    # other data: a fresh start (the cold fit's bits)
    est.fit(X[:200], y[:200])
    cold = Est(gamma=0.1, C=64.0).fit(X[:200], y[:200])
    np.testing.assert_array_equal(np.asarray(est.intercept_), np.asarray(cold.intercept_))
    assert np.array_equal(est.n_iter_, cold.n_iter_)


def _rbf(A, B, gamma):
    """The RBF kernel in float64 with numpy (the oracle's own kernel values)."""
    d = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2 * A @ B.T
    return np.exp(-gamma * np.maximum(d, 0.0))


def _c_svc_kkt(model, y, X, bounds, gamma):
    """LIBSVM's stopping gap and dual objective of a binary C-SVC model, from
    numpy: alpha from the model's coefficients, the gradient from an exact
    float64 kernel.  Returns (gap, objective, sum of |coef|)."""
    y_pm = np.where(y == model.labels[0], 1.0, -1.0)
    coef = np.zeros(y.size)
    coef[model.support_indices - 1] = model.dual_coef[0]
    alpha = np.abs(coef)
    f = _rbf(X, X, gamma) @ coef                 # sum_j y_j alpha_j K_ij
    grad = y_pm * f - 1.0                        # (Q alpha - e)_i
    minus_yg = -y_pm * grad
    up = ((y_pm > 0) & (alpha < bounds)) | ((y_pm < 0) & (alpha > 0))
    low = ((y_pm > 0) & (alpha > 0)) | ((y_pm < 0) & (alpha < bounds))
    gap = minus_yg[up].max() - minus_yg[low].min()
    objective = 0.5 * coef @ f - alpha.sum()
    assert np.all(alpha <= bounds * (1 + 1e-12)) and abs(y_pm @ alpha) < 1e-9 * bounds.max()
    return gap, objective, alpha.sum()


@pytest.mark.parametrize("weights", ["", "-w-1 3"])
def test_warm_solution_is_an_optimum_of_the_new_problem(heart, weights):
    """Oracle: numpy.  The warm fit's alphas are feasible for the new box and
    y'alpha = 0, satisfy the KKT conditions to the stopping tolerance (eps,
    plus the float32 kernel values' rounding), and reach the cold fit's dual
    objective."""
    y, X = heart
    rows = train_rows(make_folds(y, 5, 0), 1)
    ys, Xs = y[rows], X[rows].toarray() if hasattr(X, "toarray") else X[rows]
    warm = WarmStart()
    gamma, eps = 0.2, 1e-3
    for C in (0.25, 2.0, 16.0, 128.0):
        param = parse_options(f"-c {C} -g {gamma} -e {eps} {weights} -q")
        hot = train(ys, Xs, param, _warm=warm)
        cold = train(ys, Xs, param)
        # each row's bound: C, times the class weight of -1 rows
        bounds = C * np.where((ys < 0) & (weights != ""), 3.0, 1.0)
        gap_hot, obj_hot, size = _c_svc_kkt(hot, ys, Xs, bounds, gamma)
        gap_cold, obj_cold, _ = _c_svc_kkt(cold, ys, Xs, bounds, gamma)
        rounding = 1e-6 * size       # float32 kernel values in the solver's gradient
        assert gap_hot <= eps + rounding and gap_cold <= eps + rounding
        # two eps-optimal points of one dual: their objectives differ by at most
        # the gap times the distance the alphas can move (sum of |coef|)
        assert abs(obj_hot - obj_cold) <= (eps + rounding) * size
        np.testing.assert_allclose(hot.stats["objective"], obj_hot, rtol=1e-4)


@pytest.mark.parametrize("options", ["-s 3 -p 0.2", "-s 4 -n 0.5"])
def test_warm_grid_regression_same_best_cell(heart, options):
    """epsilon-SVR and nu-SVR in the grid: --warm finds the cold grid's best
    cell, every cell's MSE within 1% of the cold one's."""
    y, X = heart
    grid = {"c": [2.0 ** v for v in range(-5, 10, 2)], "g": [2.0 ** v for v in (-3, -5, -7)]}
    warm = grid_search(y, X, options + " -q --warm", grid=grid, n_folds=5, n_jobs=2)
    exact = grid_search(y, X, options + " -q", grid=grid, n_folds=5, n_jobs=2)
    assert warm.best_params == exact.best_params
    for a, b in zip(warm.cells, exact.cells):
        np.testing.assert_allclose(a["rate"], b["rate"], rtol=1e-2)


def test_nu_svc_and_one_class_grids_ignore_warm(heart):
    """nu-SVC and one-class have no C in their constraints: --warm leaves them on
    the exact path (the same rates to the bit)."""
    y, X = heart
    grid = {"n": [0.3, 0.5], "g": [0.1, 0.5]}
    for options in ("-s 1", "-s 2"):
        warm = grid_search(y, X, options + " -q --warm", grid=grid, n_folds=3, n_jobs=2)
        exact = grid_search(y, X, options + " -q", grid=grid, n_folds=3, n_jobs=2)
        assert [c["rate"] for c in warm.cells] == [c["rate"] for c in exact.cells]


# ---------------------------------------------------------------- active-set refinement

def test_refinement_columns_times_a_step(heart):
    """``_Columns.times``: the fetched columns of Q = diag(y) K diag(y) times a
    step, read in place; oracle: numpy's Q[:, idx] @ step."""
    y, X = heart
    Xd = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    K = _rbf(Xd, Xd, 0.5)
    yp = np.where(y > 0, 1.0, -1.0)
    Q = K * np.outer(yp, yp)
    columns = _Columns(lambda i: K[i], yp)
    rng = np.random.default_rng(0)
    for size in (5, 40, 3):                 # the store grows past 16 columns
        idx = rng.choice(y.size, size, replace=False)
        step = rng.standard_normal(size)
        np.testing.assert_allclose(columns.times(idx, step), Q[:, idx] @ step,
                                   rtol=1e-12, atol=1e-12)


def test_updated_factor_solves_as_numpy(heart):
    """The refinement's Cholesky factor, bordered for variables that join and
    updated by Givens rotations for those that leave, in random order, solves
    the block's systems as numpy.linalg.solve does on the same block (random
    SPD blocks, and an RBF kernel block of heart_scale with a small ridge)."""
    rng = np.random.default_rng(1)
    y, X = heart
    Xd = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    A = rng.standard_normal((80, 80))
    blocks = [A @ A.T + 80 * np.eye(80), A @ A.T + 1e-3 * np.eye(80),
              _rbf(Xd[:80], Xd[:80], 0.5) + 1e-6 * np.eye(80)]
    for H in blocks:
        factor, order = CholeskyFactor(4), []          # (grows past 4, 8, ...)
        for step in range(500):
            if order and (rng.random() < 0.45 or len(order) == H.shape[0]):
                p = int(rng.integers(len(order)))
                factor.remove(p)
                del order[p]
            else:
                i = int(rng.choice(np.setdiff1d(np.arange(H.shape[0]), order)))
                assert factor.append(H[order, i].copy(), H[i, i])
                order.append(i)
            assert factor.size == len(order)
            if order:
                block = H[np.ix_(order, order)]
                rhs = rng.standard_normal((len(order), 2))
                np.testing.assert_allclose(factor.solve(rhs), np.linalg.solve(block, rhs),
                                           rtol=1e-7, atol=1e-9 * np.abs(rhs).max())
                R = factor.factor()
                assert np.array_equal(R, np.triu(R))
                np.testing.assert_allclose(R.T @ R, block, atol=1e-10 * H.max())


def _free_block(heart, seed, k, share, box, ridge=1e-6):
    """heart_scale's C-SVC block: (y, Q, k free variables F, bounds C, a point
    a inside them at ``share`` of the box, a gradient g, ridge)."""
    y, X = heart
    Xd = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    yp = np.where(y > 0, 1.0, -1.0)
    Q = _rbf(Xd, Xd, 0.5) * np.outer(yp, yp)
    rng = np.random.default_rng(seed)
    F = np.sort(rng.choice(yp.size, k, replace=False)).astype(np.intp)
    a = rng.uniform(share[0], share[1], yp.size) * box
    return yp, Q, F, np.full(yp.size, box), a, rng.standard_normal(yp.size), ridge


@pytest.mark.parametrize("box", [1e3, 0.5])
def test_free_step_is_the_bordered_systems_solution_cut_by_the_box(heart, box):
    """``free_step``, the refinement's compiled step: ``d`` and ``b`` solve
    the bordered system ``[H y; y' 0] [d; b] = [-g; 0]`` (oracle:
    numpy.linalg.solve on the whole bordered matrix), the move is the
    longest inside the box (numpy's ratio test), the variables that reach a
    bound are exactly at it, and the free rows' gradient moves by
    ``t Q_FF d`` (numpy's product with the block less its ridge).  A wide box
    takes the whole step (t = 1), a narrow one cuts it."""
    yp, Q, F, C, a, g, ridge = _free_block(heart, 4, 40, (0.2, 0.8), box)
    n = yp.size
    H = Q[np.ix_(F, F)] + ridge * np.eye(F.size)
    factor = CholeskyFactor()
    factor.reset(H)
    K = np.zeros((F.size + 1, F.size + 1))
    K[:-1, :-1], K[:-1, -1], K[-1, :-1] = H, yp[F], yp[F]
    db = np.linalg.solve(K, np.concatenate([-g[F], [0.0]]))
    d, b = db[:-1], db[-1]
    with np.errstate(divide="ignore"):
        room = np.where(d > 0, (C[F] - a[F]) / d, np.where(d < 0, -a[F] / d, np.inf))
    t_expected = min(1.0, room.min())
    a_new, g_new = a.copy(), g.copy()
    t, b_step, hit = free_step(factor, F, a_new, g_new, yp, C, ridge)
    assert t == pytest.approx(t_expected, rel=1e-9)
    assert b_step == pytest.approx(b, rel=1e-9, abs=1e-12)
    assert (t < 1.0) == (box < 1.0)
    np.testing.assert_array_equal(hit, np.flatnonzero(room <= t))
    moved = a[F] + t * d
    moved[hit] = np.where(d[hit] > 0, box, 0.0)
    np.testing.assert_allclose(a_new[F], moved, rtol=0, atol=1e-9 * box)
    assert np.all((a_new[F] >= 0) & (a_new[F] <= box))
    assert np.all(np.isin(a_new[F[hit]], [0.0, box]))
    np.testing.assert_allclose(g_new[F], g[F] + t * (Q[np.ix_(F, F)] @ d),
                               rtol=0, atol=1e-8 * max(1.0, np.abs(g).max()))
    rest = np.setdiff1d(np.arange(n), F)
    assert np.array_equal(a_new[rest], a[rest]) and np.array_equal(g_new[rest], g[rest])
    with pytest.raises(ValueError, match="free variables"):    # none, or not the factor's
        free_step(CholeskyFactor(), np.empty(0, dtype=np.intp), a, g, yp, C, ridge)
    with pytest.raises(ValueError, match="free variables"):
        free_step(factor, F[:-1], a, g, yp, C, ridge)


@pytest.mark.parametrize("box, budget", [(0.5, 1000), (0.5, 3), (1e3, 1000)])
def test_level_steps_are_free_steps_until_one_goes_all_the_way(heart, box, budget):
    """``level_steps`` (the refinement's run of steps in one compiled call) is
    ``free_step`` repeated in Python, the variables that reach a bound taken
    out of the factor (last position first) and of the free set, until a step
    goes all the way or the budget ends (oracle: that loop, as the refinement
    ran it before; the same bits, the same factor)."""
    from kernsolve.solvers.libsvm._cholesky_update import LEVEL, STEPS, level_steps
    yp, Q, F, C, a0, g0, ridge = _free_block(heart, 5, 60, (0.05, 0.95), box)
    n = yp.size

    def factor_of():
        factor = CholeskyFactor()
        factor.reset(Q[np.ix_(F, F)] + ridge * np.eye(F.size), F)
        return factor

    ours, a, g = factor_of(), a0.copy(), g0.copy()
    free = np.zeros(n, dtype=bool)
    free[F] = True
    steps, left, outcome, t, b = level_steps(ours, a, g, yp, C, ridge, free.view(np.uint8),
                                             budget)
    oracle, a_o, g_o, order = factor_of(), a0.copy(), g0.copy(), list(F)
    free_o = np.zeros(n, dtype=bool)
    free_o[F] = True
    taken = gone = 0
    while taken < budget:
        taken += 1
        t_o, b_o, hit = free_step(oracle, np.asarray(order, dtype=np.intp), a_o, g_o, yp, C,
                                  ridge)
        if not t_o < 1.0:
            break
        free_o[np.asarray(order)[hit]] = False
        for p in sorted(hit, reverse=True):
            oracle.remove(int(p))
            del order[p]
            gone += 1
    assert (steps, left) == (taken, gone) and left > 0 or box > 1
    assert outcome == (LEVEL if t_o == 1.0 else STEPS)
    if outcome == LEVEL:
        assert (t, b) == (t_o, b_o)
    assert np.array_equal(a, a_o) and np.array_equal(g, g_o) and np.array_equal(free, free_o)
    assert np.array_equal(ours.variables, np.asarray(order)) and ours.size == oracle.size
    assert np.array_equal(ours.factor(), oracle.factor())


def test_updated_factor_refuses_a_dependent_column():
    """A column in the span of the block's (a repeated row, no ridge): the
    bordered pivot is not positive; append says so and changes nothing."""
    B = np.random.default_rng(2).standard_normal((6, 4))
    H = B @ B.T                                     # rank 4: columns 4, 5 dependent
    factor = CholeskyFactor()
    for i in range(4):
        assert factor.append(H[:i, i].copy(), H[i, i])
    before = factor.factor()
    assert not factor.append(H[:4, 4].copy(), H[4, 4] * (1 - 1e-9))
    assert factor.size == 4 and np.array_equal(factor.factor(), before)


@pytest.mark.parametrize("C", [2.0 ** 11, 2.0 ** 15])
def test_refined_seed_meets_libsvms_rule_at_large_C(svmutil, shared, C):
    """The refinement as the grid runs it (float32 kernel rows, SMO's tol, the
    factor updated rather than recomputed) from the seed at C / 4 on 600
    rows of svmguide1 at large C: LIBSVM's optimality rule holds (numpy's
    gap on the same float32 kernel values, which SMO checks, within SMO's
    eps) and the dual objective is libsvm-official's (svm_train to -e 1e-7)."""
    y, X = _svmguide1(shared)
    y, X = y[:600], X[:600]
    gamma, eps = 2.0, 1e-3
    K = _rbf(X, X, gamma)
    yp = np.where(y == y[0], 1.0, -1.0)
    Q = K * np.outer(yp, yp)
    old = train(y, X, f"-q -c {C / 4} -g {gamma}")
    alpha_old = np.zeros(y.size)
    alpha_old[old.support_indices - 1] = np.abs(old.dual_coef[0])
    seed = np.where(alpha_old >= C / 4, C, alpha_old * 4)
    K32 = K.astype(np.float32)
    stats = {}
    a = refine(seed, yp, np.full(y.size, C), lambda i: K32[i], eps / 2, 2000, 2000, stats)
    assert stats["stopped"] == "optimal"
    assert stats["factorisations"] < stats["joins"] + stats["leaves"]     # updated, mostly
    assert np.all((a >= 0) & (a <= C)) and abs(yp @ a) <= 1e-9 * C
    v = -yp * ((K32 * np.outer(yp, yp)) @ a - 1.0)
    up = ((yp > 0) & (a < C)) | ((yp < 0) & (a > 0))
    low = ((yp > 0) & (a > 0)) | ((yp < 0) & (a < C))
    assert v[up].max() - v[low].min() <= eps               # SMO stops at once
    model = svmutil.svm_train(list(y), [list(map(float, r)) for r in X],
                                     f"-q -c {C} -g {gamma} -e 1e-7")
    ref = np.zeros(y.size)
    ref[np.array(model.get_sv_indices()) - 1] = np.abs([c[0] for c in model.get_sv_coef()])
    objective = lambda alpha: 0.5 * alpha @ Q @ alpha - alpha.sum()  # noqa: E731
    assert objective(a) == pytest.approx(objective(ref), rel=1e-4)


@pytest.mark.skipif(shutil.which("svm-train") is None, reason="needs LIBSVM's svm-train")
@pytest.mark.parametrize("C", [64.0, 4096.0])
def test_refined_seed_is_libsvms_optimum(heart, tmp_path, C):
    """The active-set method from the seed at C / 4 (scaled to the new box)
    reaches the optimum of the C-SVC dual.  Oracles: numpy (feasibility, the
    KKT gap from an exact float64 kernel) and LIBSVM's svm-train run to a
    tight tolerance (its dual objective)."""
    y, X = heart
    gamma = 0.5
    Xd = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    K = _rbf(Xd, Xd, gamma)
    yp = np.where(y > 0, 1.0, -1.0)
    Q = K * np.outer(yp, yp)
    old = train(y, X, f"-q -c {C / 4} -g {gamma}")
    alpha_old = np.zeros(y.size)
    alpha_old[old.support_indices - 1] = np.abs(old.dual_coef[0])
    seed = np.where(alpha_old >= C / 4, C, alpha_old * 4)
    tol = 1e-6
    a = refine(seed, yp, np.full(y.size, C), lambda i: K[i], tol, 2000, y.size)
    assert np.all((a >= 0) & (a <= C)) and abs(yp @ a) <= 1e-9 * C
    g = Q @ a - 1.0
    v = -yp * g
    up = ((yp > 0) & (a < C)) | ((yp < 0) & (a > 0))
    low = ((yp > 0) & (a > 0)) | ((yp < 0) & (a < C))
    assert v[up].max() - v[low].min() <= 2 * tol + 1e-9 * C      # an optimum
    objective = 0.5 * a @ Q @ a - a.sum()
    assert objective <= 0.5 * seed @ Q @ seed - seed.sum()          # never worse
    path = tmp_path / "heart"
    kernsolve.write_problem(str(path), y, X)
    out = subprocess.run(["svm-train", "-c", repr(C), "-g", repr(gamma), "-e", "1e-7",
                          str(path), str(tmp_path / "m")], capture_output=True, text=True,
                         check=True).stdout
    libsvm_obj = float(re.search(r"obj = (\S+),", out).group(1))
    assert objective == pytest.approx(libsvm_obj, rel=1e-6)


@pytest.mark.parametrize("C", [4.0, 16.0, 64.0])
def test_refinement_takes_and_gives_the_smo_cores_gradient(heart, C):
    """Given the seed's gradient (rows ``Q seed - 1`` and LIBSVM's ``G_bar``),
    the refinement starts from it instead of kernel rows and gives the
    result's, which the SMO core then starts from.  Oracles: numpy's
    ``Q a - 1`` and ``sum C_j Q_j`` over the variables at their upper bound,
    from an exact float64 kernel, and the refinement without a gradient
    (the same optimum)."""
    y, X = heart
    Xd = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    K = _rbf(Xd, Xd, 0.5)
    yp = np.where(y > 0, 1.0, -1.0)
    Q = K * np.outer(yp, yp)
    old = train(y, X, f"-q -c {C / 4} -g 0.5")
    alpha_old = np.zeros(y.size)
    alpha_old[old.support_indices - 1] = np.abs(old.dual_coef[0])
    bounds = np.full(y.size, C)
    seed = np.where(alpha_old >= C / 4, C, alpha_old * 4)

    def exact_gradient(a):
        return np.stack([Q @ a - 1.0, Q[:, a >= bounds] @ bounds[a >= bounds]])

    rows, real_row = [], (lambda i: rows.append(i) or K[i])
    given, out, stats = exact_gradient(seed), np.full((2, y.size), np.nan), {}
    a = refine(seed, yp, bounds, real_row, 1e-6, 2000, y.size, stats, gradient=given,
               gradient_out=out)
    assert stats["joins"] + stats["leaves"] > 0         # the free set changed
    assert np.count_nonzero((a >= bounds) != (seed >= bounds)) > 0    # and G_bar's
    # kernel rows only for the variables that joined (their columns), none
    # for the gradient of every nonzero variable
    assert len(rows) <= stats["joins"] + np.count_nonzero((seed > 0) & (seed < C))
    scale = np.abs(Q).sum(axis=1).max() * C
    np.testing.assert_allclose(out, exact_gradient(a), rtol=0, atol=1e-10 * scale)
    computed = refine(seed, yp, bounds, lambda i: K[i], 1e-6, 2000, y.size)
    objective = lambda v: 0.5 * v @ Q @ v - v.sum()     # noqa: E731
    assert objective(a) == pytest.approx(objective(computed), rel=1e-9)


def test_warm_grid_with_refinement_same_rates_as_cold_within_a_row(shared):
    """Large-C cells whose previous C took many SMO iterations are refined
    (WarmStart.slow); on svmguide1's every 5th row (scaled) with LIBSVM's folds
    the grid's best line is the cold grid's and every rate within one row."""
    y, X = _svmguide1(shared)
    grid = {"c": [2.0 ** v for v in range(5, 16, 2)], "g": [2.0 ** v for v in (3, 1, -1)]}
    refined = []
    real_start = WarmStart.start

    def spy(self, C):
        seed = real_start(self, C)
        refined.append(self.slow)
        return seed
    WarmStart.start = spy
    try:
        warm = grid_search(y, X, "-q --warm --libsvm-folds", grid=grid, n_jobs=1)
    finally:
        WarmStart.start = real_start
    assert any(refined)                     # the refinement did run
    cold = grid_search(y, X, "-q --cold --libsvm-folds", grid=grid, n_jobs=1)
    assert warm.summary_line() == cold.summary_line()
    one_row = 100.0 / y.size
    cold_rates = {c["label"]: c["rate"] for c in cold.cells}
    assert all(abs(c["rate"] - cold_rates[c["label"]]) <= one_row + 1e-12 for c in warm.cells)


@pytest.mark.parametrize("options", ["-c 8 -g 0.5", "-c 8 -g 0.5 -w-1 3",
                                     "-s 3 -p 0.1 -c 8 -g 0.5"])
def test_warm_fits_predict_from_the_shared_matrix(heart, options):
    """A warm grid's held-out predictions come from the shared matrix's float32
    values; oracle: the decision values from numpy's float64 RBF kernel and
    the model's coefficients (LIBSVM's decision function)."""
    from kernsolve.model_selection.cv import fit_predict
    from kernsolve.solvers.libsvm.shared_kernel import SharedKernel
    y, X = heart
    Xd = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    param = parse_options(options + " -q")
    folds = make_folds(y, 5, 0)
    shared = SharedKernel.compute(X, param, 1)
    for f in range(5):
        rows, test = train_rows(folds, f), folds[f]
        res = fit_predict(y, X, None, param, rows, test, False, None, shared, 1,
                          warm=WarmStart())
        model = train(y[rows], X[rows], param)     # the same fit (cold: no seed yet)
        _assert_libsvm_predictions(res["pred"], model, Xd, rows, test)


def _assert_libsvm_predictions(pred, model, Xd, rows, test):
    """``pred`` are LIBSVM's predictions of the rows ``test`` by ``model``
    (trained on ``rows``, RBF with gamma 0.5), from numpy's float64 kernel:
    the decision values (SVR), or its label rule where the decision value is
    not within float32 rounding of zero."""
    sv = rows[model.support_indices - 1]
    decision = _rbf(Xd[test], Xd[sv], 0.5) @ model.dual_coef[0] - model.rho[0]
    if model.param.svm_type == 3:
        np.testing.assert_allclose(pred, decision, atol=1e-5)
    else:
        sure = np.abs(decision) > 1e-5
        expected = np.where(decision > 0, model.labels[0], model.labels[1])
        np.testing.assert_array_equal(pred[sure], expected[sure])
        assert sure.mean() > 0.9


@pytest.mark.parametrize("options", ["-g 0.5", "-g 0.5 -w-1 3", "-s 3 -p 0.1 -g 0.5"])
def test_warm_chain_predicts_its_fits_in_one_product(heart, options, monkeypatch):
    """A warm chain (``fit_predict_path``) leaves its fits' held-out
    predictions to one product of the held-out rows by all their
    coefficients.  Oracle: each of the chain's models (the same fits, caught
    as ``train`` returns them) and numpy's float64 RBF kernel: LIBSVM's
    decision function, then its label rule."""
    from kernsolve.model_selection import cv
    from kernsolve.solvers.libsvm.shared_kernel import SharedKernel
    y, X = heart
    Xd = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    params = [parse_options(f"{options} -c {C} -q") for C in (0.5, 2.0, 8.0, 32.0)]
    folds = make_folds(y, 5, 0)
    shared = SharedKernel.compute(X, params[0], 1)
    models, real_train = [], cv.train
    monkeypatch.setattr(cv, "train", lambda *a, **k: models.append(real_train(*a, **k))
                        or models[-1])
    products, real_sums = [], SharedKernel.weighted_sums
    monkeypatch.setattr(SharedKernel, "weighted_sums",
                        lambda self, rows, w: products.append(np.shape(w)) or
                        real_sums(self, rows, w))
    rows, test = train_rows(folds, 1), folds[1]
    results = cv.fit_predict_path(y, X, None, params, rows, test, False, None, shared,
                                  True, 1)
    assert products == [(y.size, len(params))]         # one product for the chain
    assert len(models) == len(params)
    for res, model in zip(results, models):
        assert res["error"] is None and "decision" not in res
        _assert_libsvm_predictions(res["pred"], model, Xd, rows, test)


# ---------------------------------------------------------------- carried gradient

def _heart_problem(heart, gamma=0.5):
    from kernsolve._kernels import as_canonical
    y, X = heart
    Xd = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    yp = np.where(y > 0, 1.0, -1.0)
    Q = _rbf(Xd, Xd, gamma) * np.outer(yp, yp)
    return as_canonical(X), yp, Q


@pytest.mark.parametrize("C", [0.5, 64.0])
def test_smo_gives_the_solutions_gradient(heart, C):
    """``solve(gradient_out=)``: row 0 is ``Q alpha + p`` and row 1 LIBSVM's
    G_bar (``sum C_i Q_i`` over the variables at C), whole after shrinking;
    oracle: numpy's float64 RBF kernel (within the float32 kernel values')."""
    from kernsolve.solvers.smo._solve import solve
    Xc, yp, Q = _heart_problem(heart)
    n = yp.size
    alpha, out = np.zeros(n), np.empty((2, n))
    p = np.full(n, -1.0)
    solve(Xc, 2, 3, 0.5, 0.0, yp.astype(np.int8), p, alpha, np.full(n, C),
          gradient_out=out)
    scale = 1e-6 * (1 + C * n)
    np.testing.assert_allclose(out[0], Q @ alpha + p, rtol=0, atol=scale)
    at_c = alpha >= C
    np.testing.assert_allclose(out[1], Q[:, at_c] @ np.full(at_c.sum(), C), rtol=0,
                               atol=scale)


def test_carried_gradient_is_the_seeds_and_skips_its_kernel_rows(heart):
    """A seed at C = 4 from the solution at 1 (every alpha times 4): its carried
    gradient ``4 (G - p) + p`` is numpy's ``Q seed + p``, and the solve started
    with it reaches the optimum the solve that computes it reaches (the dual
    objective within the stopping tolerance; LIBSVM's gap from numpy's exact
    kernel below eps) while computing fewer kernel values."""
    from kernsolve.solvers.smo._solve import solve
    Xc, yp, Q = _heart_problem(heart)
    n = yp.size
    p, y8 = np.full(n, -1.0), yp.astype(np.int8)
    alpha, out = np.zeros(n), np.empty((2, n))
    solve(Xc, 2, 3, 0.5, 0.0, y8, p, alpha, np.ones(n), gradient_out=out)
    warm = WarmStart()
    assert warm.start(np.ones(n)) is None          # the first fit: cold
    warm.keep(alpha, np.ones(n), 1000, out)
    warm.begin_fit()
    C = np.full(n, 4.0)
    seed = warm.start(C)
    carried = warm.gradient(p)
    np.testing.assert_allclose(carried[0], Q @ seed + p, rtol=0, atol=1e-4)
    runs = {}
    for name, gradient in (("carried", carried), ("computed", None)):
        a = seed.copy()
        info = solve(Xc, 2, 3, 0.5, 0.0, y8, p, a, C, gradient=gradient)
        g = Q @ a + p
        v = -yp * g
        up = ((yp > 0) & (a < C)) | ((yp < 0) & (a > 0))
        low = ((yp > 0) & (a > 0)) | ((yp < 0) & (a < C))
        assert v[up].max() - v[low].min() <= 1e-3 + 1e-4
        runs[name] = (0.5 * a @ Q @ a + p @ a, info["n_kernel_evals"])
    assert runs["carried"][0] == pytest.approx(runs["computed"][0], rel=1e-3)
    assert runs["carried"][1] < runs["computed"][1]


def test_no_carried_gradient_without_one_ratio_or_after_refinement():
    warm = WarmStart()
    C1 = np.array([1.0, 1.0, 2.0])
    warm.start(C1)
    warm.keep(np.array([0.5, 1.0, 2.0]), C1, 10, np.ones((2, 3)))
    warm.begin_fit()
    warm.start(np.array([4.0, 4.0, 4.0]))     # ratios 4, 4, 2: no single one
    assert warm.gradient(np.full(3, -1.0)) is None
    warm.begin_fit()
    warm.start(3 * C1)
    assert warm.gradient(np.full(3, -1.0)) is not None
    warm.replace_gradient(None)               # the seed was refined, no gradient given
    assert warm.gradient(np.full(3, -1.0)) is None
    warm.replace_gradient(np.full((2, 3), 7.0))   # refined, with the refinement's
    assert np.array_equal(warm.gradient(np.full(3, -1.0)), np.full((2, 3), 7.0))
    with pytest.raises(ValueError, match="gradient must be"):
        from kernsolve.solvers.smo._solve import solve
        solve(np.eye(3), 2, 3, 0.5, 0.0, np.array([1, -1, 1], np.int8), np.full(3, -1.0),
              np.zeros(3), np.ones(3), gradient=np.zeros(3))
