"""A warm grid's chain (one fold's fits along C) keeps one kernel row cache
(issue 35, kernel values shared where the kernel matrix does not fit in -m):
``KernelRows.restart`` puts the positions back in the sub-problem's order
with the cached rows, ``solve(engine=)`` solves with it, and
``WarmStart(same_rows=True).engine`` keeps it from one C to the next.  The
cached values are the bits a fresh engine computes, so the solves, the models
and every cell's rate are those of fresh engines, with fewer kernel rows
computed."""
import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.metrics.pairwise import rbf_kernel

import kernsolve
from kernsolve import grid_search, read_problem
from kernsolve._core._kernel import KernelRows
from kernsolve._kernels import as_canonical
from kernsolve.solvers.libsvm import formulations
from kernsolve.solvers.libsvm.formulations import WarmStart
from kernsolve.solvers.smo._solve import solve


@pytest.fixture(scope="module")
def heart():
    return read_problem(kernsolve.dataset_path("heart_scale"))


def test_restart_puts_positions_back_with_the_cached_rows(heart):
    """After shrinking-like swaps and rows cached at several lengths, restart
    gives the positions of ``rows`` again; every row is the fresh engine's
    bit for bit (oracle 2: scikit-learn's RBF kernel to float32 rounding),
    and rows cached before the restart are cache hits after it."""
    y, X = heart
    Xc = as_canonical(X)
    rng = np.random.default_rng(0)
    rows = rng.permutation(y.size)[:200]
    engine = KernelRows(Xc, 2, 3, 0.25, 0.0, 0.1, 1, rows)
    for _ in range(300):
        p, q = (int(v) for v in rng.integers(0, 200, 2))
        engine.py_swap(p, q)
        if rng.random() < 0.3:
            engine.row(int(rng.integers(0, 200)), int(rng.integers(1, 201)))
    engine.restart(rows)
    assert np.array_equal(engine.permutation, rows)
    assert engine.n_kernel_evals == 0 and engine.n_cache_hits == 0     # counters zeroed
    fresh = KernelRows(Xc, 2, 3, 0.25, 0.0, 0.1, 1, rows)
    exact = rbf_kernel(X.toarray()[rows], gamma=0.25)
    for p in range(200):
        np.testing.assert_array_equal(engine.row(p), fresh.row(p))
        np.testing.assert_allclose(engine.row(p), exact[p], rtol=1e-6, atol=1e-7)
    assert engine.n_cache_hits > 0
    with pytest.raises(ValueError, match="restart: rows must be the data rows"):
        engine.restart(rows[:-1])
    with pytest.raises(ValueError, match="restart: rows must be the data rows"):
        engine.restart(np.r_[rows[:-1], [rows[0]]])


def test_solves_along_C_with_a_kept_engine_are_the_fresh_solves(heart):
    """C = 0.5, 4, 32 (each seeded with the previous solution, shrinking on):
    the solve with the kept engine gives the fresh engine's alphas, rho and
    iterations bit for bit, computes fewer kernel values, and meets LIBSVM's
    stopping rule with numpy's float64 kernel (oracle)."""
    y, X = heart
    Xc = as_canonical(X)
    rows = np.arange(0, y.size, 1)[::-1].copy()       # a sub-problem order of its own
    yp = np.where(y[rows] > 0, 1, -1).astype(np.int8)
    n = rows.size
    p = np.full(n, -1.0)
    Q = rbf_kernel(X.toarray()[rows], gamma=0.5) * np.outer(yp, yp)
    engine = KernelRows(Xc, 2, 3, 0.5, 0.0, 0.2, 1, rows)
    alpha_fresh, alpha_kept = np.zeros(n), np.zeros(n)
    evals = {"fresh": 0, "kept": 0}
    for C_prev, C in ((None, 0.5), (0.5, 4.0), (4.0, 32.0)):
        if C_prev is not None:
            alpha_fresh *= C / C_prev
            alpha_kept *= C / C_prev
        bounds = np.full(n, C)
        fresh = solve(Xc, 2, 3, 0.5, 0.0, yp, p, alpha_fresh, bounds, cache_mb=0.2,
                      rows=rows)
        kept = solve(Xc, 2, 3, 0.5, 0.0, yp, p, alpha_kept, bounds, cache_mb=0.2,
                     rows=rows, engine=engine)
        np.testing.assert_array_equal(alpha_kept, alpha_fresh)
        assert (kept["rho"], kept["n_iter"]) == (fresh["rho"], fresh["n_iter"])
        evals["fresh"] += fresh["n_kernel_evals"]
        evals["kept"] += kept["n_kernel_evals"]
        g = Q @ alpha_kept + p
        v = -yp * g
        up = ((yp > 0) & (alpha_kept < C)) | ((yp < 0) & (alpha_kept > 0))
        low = ((yp > 0) & (alpha_kept > 0)) | ((yp < 0) & (alpha_kept < C))
        assert v[up].max() - v[low].min() <= 1e-3 + 1e-4 * C
    assert evals["kept"] < evals["fresh"]
    with pytest.raises(ValueError, match="engine: 270 rows, the problem 10"):
        solve(Xc, 2, 3, 0.5, 0.0, yp[:10], p[:10], np.zeros(10), np.ones(10),
              rows=rows[:10], engine=engine)


def _grid_with_and_without_kept_engines(y, X, options, grid, n_jobs, monkeypatch):
    """The warm grid twice, with the chains' engines kept and without (every
    solve a fresh engine), and the kernel row misses of each."""
    real_solve = formulations._smo_solve
    misses = []

    def counting(*args, **kwargs):
        info = real_solve(*args, **kwargs)
        misses.append(info["n_cache_misses"])
        return info
    monkeypatch.setattr(formulations, "_smo_solve", counting)
    kept = grid_search(y, X, options, grid=grid, n_folds=5, n_jobs=n_jobs)
    kept_misses, misses[:] = sum(misses), []
    monkeypatch.setattr(WarmStart, "engine", lambda self, make, rows: None)
    fresh = grid_search(y, X, options, grid=grid, n_folds=5, n_jobs=n_jobs)
    return kept, fresh, kept_misses, sum(misses)


@pytest.mark.parametrize("options", ["-q -m 0.2 --warm", "-q -m 0.2 --warm -s 3 -p 0.1"])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_warm_grid_with_chain_row_caches_is_the_fresh_engines_grid(heart, options, n_jobs,
                                                                   monkeypatch):
    """heart_scale's 270 x 270 matrix (0.28 MB) does not fit in -m 0.2, so
    the fits compute their own rows: with the chains' caches kept every cell's
    rate and the best line are the grid's with fresh engines, exactly, and
    fewer rows are computed; oracle for the optimum: the cold grid's best cell."""
    y, X = heart
    grid = {"c": [0.5, 2.0, 8.0, 32.0, 128.0], "g": [0.5, 0.125, 2.0 ** -5]}
    kept, fresh, kept_misses, fresh_misses = _grid_with_and_without_kept_engines(
        y, X, options, grid, n_jobs, monkeypatch)
    assert [c["rate"] for c in kept.cells] == [c["rate"] for c in fresh.cells]
    assert kept.summary_line() == fresh.summary_line()
    assert kept_misses < fresh_misses
    cold = grid_search(y, X, options.replace("--warm", "--cold"), grid=grid, n_folds=5,
                       n_jobs=n_jobs)
    assert kept.best_params == cold.best_params


def test_multiclass_chains_keep_no_engine(monkeypatch):
    """Three classes, three one-vs-one pairs a fit: a chain keeps no engine
    (at most one engine's -m beside the running solve), and the rates are
    the fresh engines' exactly."""
    iris = load_iris()
    X, y = iris.data, iris.target.astype(float)
    grid = {"c": [1.0, 8.0, 64.0], "g": [0.5, 2.0]}
    made = []
    real_engine = WarmStart.engine

    def spy(self, make, rows):
        engine = real_engine(self, make, rows)
        made.append((self._next, engine is not None, self._engine is not None))
        return engine
    monkeypatch.setattr(WarmStart, "engine", spy)
    kept = grid_search(y, X, "-q -m 0.05 --warm", grid=grid, n_folds=5, n_jobs=1)
    assert {pair for pair, _, _ in made} == {1, 2, 3}
    # the first pair gets the kept engine; the others none, and none stays kept
    assert all(got and held for pair, got, held in made if pair == 1)
    assert not any(got or held for pair, got, held in made if pair > 1)
    monkeypatch.setattr(WarmStart, "engine", lambda self, make, rows: None)
    fresh = grid_search(y, X, "-q -m 0.05 --warm", grid=grid, n_folds=5, n_jobs=1)
    assert [c["rate"] for c in kept.cells] == [c["rate"] for c in fresh.cells]


def test_engines_keep_freed_memory_for_the_next_while_held():
    """An engine that held more than 4 MB hands its freed memory back to the
    system as it goes (``malloc_trim``), except inside ``free_memory_kept``
    (a grid's or cross-validation's run of fits, where the next fit's cache
    would take those pages again, zeroed): then once, when the last holder
    leaves, and only if owed.  Oracle: the module's count of hand-backs."""
    from kernsolve._core._kernel import _trim_count, free_memory_kept
    X = as_canonical(np.random.default_rng(1).random((1200, 5)))

    def engine_gone():
        engine = KernelRows(X, 2, 3, 0.5, 0.0, 100.0, 1)
        for p in range(1200):       # 1200 rows of 1200 float32 values: 5.8 MB
            engine.row(p)
        del engine

    before = _trim_count()
    engine_gone()
    assert _trim_count() == before + 1
    with free_memory_kept():
        with free_memory_kept():
            for _ in range(3):
                engine_gone()
        assert _trim_count() == before + 1
    assert _trim_count() == before + 2
    with free_memory_kept():
        pass
    assert _trim_count() == before + 2


@pytest.mark.parametrize("C", [0.5, 32.0])
def test_early_shrinking_reaches_the_optimum_of_libsvms_schedule(heart, C):
    """``first_shrink`` (a warm grid's fits shrink after 100 iterations, not
    LIBSVM's min(l, 1000)): from a cold start and from a seed (the solution at
    C / 8 scaled), the solve meets LIBSVM's stopping rule with numpy's float64
    kernel (oracle) and reaches LIBSVM's schedule's objective to the solver's
    tolerance; 1000 is LIBSVM's schedule itself, bit for bit; below 1 is refused."""
    y, X = heart
    Xc = as_canonical(X)
    yp = np.where(y > 0, 1, -1).astype(np.int8)
    n = yp.size
    p = np.full(n, -1.0)
    Q = rbf_kernel(X.toarray(), gamma=0.5) * np.outer(yp, yp)
    bounds = np.full(n, C)
    seed = np.zeros(n)
    solve(Xc, 2, 3, 0.5, 0.0, yp, p, seed, np.full(n, C / 8))
    seed *= 8
    for start in (np.zeros(n), seed):
        libsvm, default, early = start.copy(), start.copy(), start.copy()
        ref = solve(Xc, 2, 3, 0.5, 0.0, yp, p, libsvm, bounds, first_shrink=1000)
        same = solve(Xc, 2, 3, 0.5, 0.0, yp, p, default, bounds)
        np.testing.assert_array_equal(default, libsvm)
        assert (same["rho"], same["n_iter"]) == (ref["rho"], ref["n_iter"])
        solve(Xc, 2, 3, 0.5, 0.0, yp, p, early, bounds, first_shrink=5)
        g = Q @ early + p
        v = -yp * g
        up = ((yp > 0) & (early < C)) | ((yp < 0) & (early > 0))
        low = ((yp > 0) & (early > 0)) | ((yp < 0) & (early < C))
        assert v[up].max() - v[low].min() <= 1e-3 + 1e-4 * C
        objective = lambda a: 0.5 * a @ Q @ a + p @ a      # noqa: E731
        assert objective(early) == pytest.approx(objective(libsvm), rel=1e-4, abs=1e-6)
    with pytest.raises(ValueError, match="first_shrink must be >= 1"):
        solve(Xc, 2, 3, 0.5, 0.0, yp, p, np.zeros(n), bounds, first_shrink=0)
