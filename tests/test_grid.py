"""kernsolve.grid_search and kernsolve-grid (issue 7)."""
import contextlib
import io
import lzma
import re

import numpy as np
import pytest

import kernsolve
from kernsolve import cross_validation, grid_search, predict, read_problem, train
from kernsolve.model_selection.cv import make_folds, train_rows
from kernsolve.model_selection.grid import GridSearchError, grid_order, permute_sequence, read_out_file

GRID = {"c": [0.5, 2.0, 8.0], "g": [0.5, 0.125, 2.0 ** -5]}


@pytest.fixture(scope="module")
def heart():
    return read_problem(kernsolve.dataset_path("heart_scale"))


@pytest.fixture
def german(shared):
    return read_problem(io.BytesIO(shared.lines("german.numer_scale", 300)))


def serial_rates(y, X, cells, base, k, seed=0, minimize=False):
    """Oracle: every cell cross-validated by a plain loop of train/predict."""
    folds = make_folds(y, k, seed, stratified=not minimize)
    rates = []
    for cell in cells:
        opts = base + "".join(f" -{name} {value!r}" for name, value in cell.items())
        target = np.empty(len(y))
        for i, test in enumerate(folds):
            rows = train_rows(folds, i)
            model = train(y[rows], X[rows], opts + " -q", n_jobs=1)
            target[test] = predict(None, X[test], model, "-q")[0]
        rates.append(np.mean((target - y) ** 2) if minimize else 100.0 * np.mean(target == y))
    return rates


def grid_py_best(cells, rates):
    """grid.py's update rule, applied in its job order."""
    best, best_rate = None, -1.0
    for cell, rate in zip(cells, rates):
        if rate > best_rate or (rate == best_rate and cell["g"] == best["g"]
                                and cell["c"] < best["c"]):
            best, best_rate = cell, rate
    return best, best_rate


def test_grid_py_order():
    assert permute_sequence([1, 2, 3, 4, 5]) == [3, 2, 5, 1, 4]
    cells = grid_order({"c": [1.0, 2.0, 4.0], "g": [1.0, 0.5]})
    # calculate_jobs: c_seq = [2, 1, 4], g_seq = [0.5, 1]; the resolution of C and
    # of g is raised in turn (whichever has the smaller covered fraction)
    assert [(c["c"], c["g"]) for c in cells] == [(2.0, 0.5), (1.0, 0.5), (2.0, 1.0),
                                                 (1.0, 1.0), (4.0, 0.5), (4.0, 1.0)]


def test_best_cell_equals_exhaustive_serial_loop(heart):
    y, X = heart
    r = grid_search(y, X, "-q", grid=GRID, n_folds=4, n_jobs=2)
    cells = grid_order(GRID)
    rates = serial_rates(y, X, cells, "", 4)
    assert [c["params"] for c in r.cells] == cells
    assert [c["rate"] for c in r.cells] == pytest.approx(rates, rel=0, abs=1e-9)
    best, best_rate = grid_py_best(cells, rates)
    assert r.best_params == best and r.best_rate == pytest.approx(best_rate)
    assert r.best_options == kernsolve.parse_options(
        f"-q -c {best['c']!r} -g {best['g']!r}").to_options()
    table = r.table()
    assert len(table.splitlines()) == 10 and table.count("*") == 1
    # each cell's rate is cross_validation's accuracy with that cell's options
    one = r.cells[-1]["params"]
    cv = cross_validation(y, X, f"-q -c {one['c']!r} -g {one['g']!r}", n_folds=4, n_jobs=2)
    assert r.cells[-1]["rate"] == cv.accuracy


def test_tie_rule_same_g_smaller_c(heart):
    y, X = heart
    # with a very small gamma every C predicts the majority class: all rates tie
    r = grid_search(y, X, "-q", grid={"c": [0.25, 1.0, 4.0], "g": [1e-9]}, n_folds=3,
                    n_jobs=2)
    assert len({c["rate"] for c in r.cells}) == 1
    assert r.best_params == {"c": 0.25, "g": 1e-9}


def test_identical_for_n_jobs_1_and_2_and_backends(heart):
    y, X = heart
    grid = {"c": [1.0, 4.0], "g": [0.125, 0.5]}
    ref = grid_search(y, X, "-q", grid=grid, n_folds=3, n_jobs=1)
    for n_jobs, backend in ((2, None), (-1, "threading")):
        r = grid_search(y, X, "-q", grid=grid, n_folds=3, n_jobs=n_jobs, backend=backend)
        assert [c["rate"] for c in r.cells] == [c["rate"] for c in ref.cells]
        assert r.best_params == ref.best_params


def test_regression_grid_minimises_mse(shared):
    y, X = read_problem(io.BytesIO(shared.lines("housing_scale", 120)))
    grid = {"c": [1.0, 16.0], "p": [0.1, 1.0]}
    r = grid_search(y, X, "-s 3 -q", grid=grid, n_folds=3, n_jobs=2)
    cells = grid_order({"c": [1.0, 16.0], "p": [0.1, 1.0]})
    rates = serial_rates(y, X, cells, "-s 3", 3, minimize=True)
    assert r.metric == "mean_squared_error"
    assert [c["rate"] for c in r.cells] == pytest.approx(rates, rel=1e-12)
    assert r.best_params == cells[int(np.argmin(rates))]


# ---------------------------------------------------------------- out file, resume

def test_out_file_and_resume_skips_finished_cells(heart, tmp_path):
    y, X = heart
    out = tmp_path / "heart.out"
    first = grid_search(y, X, "-q", grid={"c": [0.5, 2.0], "g": GRID["g"]}, n_folds=3,
                        n_jobs=2, out=out)
    lines = out.read_text().splitlines()
    assert len(lines) == 6
    assert all(re.fullmatch(r"log2c=-?\d+\.0 log2g=-?\d+\.0 rate=[0-9.]+", s) for s in lines)
    r = grid_search(y, X, "-q", grid=GRID, n_folds=3, n_jobs=2, out=out, resume=True)
    assert sum(c["resumed"] for c in r.cells) == 6
    assert r.n_tasks == 3 * 3  # only the three new cells x 3 folds were run
    fresh = grid_search(y, X, "-q", grid=GRID, n_folds=3, n_jobs=2)
    assert [c["rate"] for c in r.cells] == [c["rate"] for c in fresh.cells]
    assert r.best_params == fresh.best_params
    lines = out.read_text().splitlines()
    assert len(lines) == 9 and len(set(lines)) == 9
    assert {c["label"] for c in first.cells} < {s.rsplit(" ", 1)[0] for s in lines}
    # resume=False starts the file again
    grid_search(y, X, "-q", grid={"c": [1.0], "g": [0.5]}, n_folds=3, out=out, resume=False)
    assert len(out.read_text().splitlines()) == 1


def test_resume_reads_grid_py_lines(heart, tmp_path):
    y, X = heart
    out = tmp_path / "grid.out"
    out.write_text("log2c=3 log2g=-1 rate=99.5\nsome other line\n")
    assert read_out_file(out) == [({"c": ("log2", 3.0), "g": ("log2", -1.0)}, 99.5)]
    r = grid_search(y, X, "-q", grid={"c": [8.0, 1.0], "g": [0.5]}, n_folds=3, out=out)
    assert r.n_tasks == 3  # the listed cell was not recomputed
    assert r.best_params == {"c": 8.0, "g": 0.5} and r.best_rate == 99.5


# ---------------------------------------------------------------- failures

def test_bad_grids(heart):
    y, X = heart
    for grid in ({}, None, {"c": []}):
        with pytest.raises(ValueError, match="empty grid"):
            grid_search(y, X, "-q", grid=grid)
    with pytest.raises(ValueError, match="grid values of 'c' must be positive"):
        grid_search(y, X, "-q", grid={"c": [1, -1]})
    with pytest.raises(ValueError, match="grid key 'zz'"):
        grid_search(y, X, "-q", grid={"zz": [1]})
    with pytest.raises(ValueError, match=r"grid cell n=1.5: -n: nu must be in \(0, 1\]"):
        grid_search(y, X, "-s 1 -q", grid={"n": [0.5, 1.5]})
    with pytest.raises(ValueError, match="n_folds must be at least 2"):
        grid_search(y, X, "-q", grid={"c": [1]}, n_folds=1)


def test_failing_cell_is_named_and_finished_cells_are_kept(german, tmp_path):
    y, X = german  # about 70/30: nu = 0.9 is infeasible, 0.3 is fine
    out = tmp_path / "nu.out"
    with pytest.raises(GridSearchError, match=r"1 of 2 cells failed.*n=0\.9: fold \d: "
                                              r"ValueError: specified nu is infeasible") as e:
        grid_search(y, X, "-s 1 -q", grid={"n": [0.3, 0.9]}, n_folds=3, n_jobs=2, out=out)
    assert list(e.value.failed) == ["n=0.9"]
    assert out.read_text().startswith("n=0.3 rate=")
    assert e.value.result.best_params == {"n": 0.3}
    # a whole failed grid: the message names the first three cells, counts the rest
    with pytest.raises(GridSearchError, match=r"5 of 5 cells failed.*; and 2 more$") as e:
        grid_search(y, X, "-s 1 -q", grid={"n": [0.8, 0.85, 0.9, 0.95, 0.99]}, n_folds=3,
                    n_jobs=1)
    assert len(e.value.failed) == 5 and str(e.value).count("infeasible") == 3


def test_worker_that_dies(heart, tmp_path, monkeypatch):
    import kernsolve.model_selection.cv as cv
    y, X = heart
    original = cv.fit_predict_path

    def dying(y, X, sw, params, tr, te, prob, prob_folds, shared, warm, n_threads):
        if params[0].C == 8.0:
            import os
            os._exit(3)  # the worker process disappears
        return original(y, X, sw, params, tr, te, prob, prob_folds, shared, warm, n_threads)

    monkeypatch.setattr(cv, "fit_predict_path", dying)
    out = tmp_path / "crash.out"
    grid = {"c": [0.5, 2.0, 8.0], "g": [0.5]}
    with pytest.raises(GridSearchError, match=r"log2c=3\.0 log2g=-1\.0: not finished "
                                              r"when the run failed") as e:
        grid_search(y, X, "-q", grid=grid, n_folds=2, n_jobs=2, backend="loky", out=out)
    kept = {c["label"] for c in e.value.result.cells if c["rate"] is not None}
    assert "log2c=3.0 log2g=-1.0" not in kept
    assert {s.rsplit(" ", 1)[0] for s in out.read_text().splitlines()} == kept
    monkeypatch.setattr(cv, "fit_predict_path", original)
    r = grid_search(y, X, "-q", grid=grid, n_folds=2, n_jobs=2, out=out)
    assert r.n_tasks == 2 * (3 - len(kept)) and all(c["rate"] is not None for c in r.cells)


# ---------------------------------------------------------------- progress, heat map

def test_progress_line_per_task_with_best(heart, capsys):
    y, X = heart
    grid_search(y, X, "", grid={"c": [1.0, 4.0], "g": [0.5]}, n_folds=3, n_jobs=2)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("kernel values of rbf g=0.5 computed once for its 2 cells x 3 folds")
    lines = out[1:]
    assert len(lines) == 6
    assert all(re.match(r"\[\d/6\] log2c=\S+ log2g=-1\.0 fold \d/3 done.* \(best: ", s)
               for s in lines)
    assert sum("-> accuracy" in s for s in lines) == 2
    grid_search(y, X, "-q", grid={"c": [1.0]}, n_folds=3, n_jobs=2)
    assert capsys.readouterr().out == ""


def test_heat_map_png(heart, tmp_path):
    pytest.importorskip("matplotlib")
    y, X = heart
    png = tmp_path / "grid.png"
    grid_search(y, X, "-q", grid={"c": [1.0, 4.0], "g": [0.5, 0.125]}, n_folds=3,
                n_jobs=2, png=png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_heat_map_without_matplotlib(heart, tmp_path, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    y, X = heart
    with pytest.raises(ImportError, match=r"pip install 'kernsolve\[plot\]'"):
        grid_search(y, X, "-q", grid={"c": [1.0]}, png=tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()


# ---------------------------------------------------------------- CLI

def run_grid(*args):
    from kernsolve.cli import grid as cli_grid
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_grid.cli([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def test_cli_equals_api(heart, tmp_path, monkeypatch):
    y, X = heart
    data = tmp_path / "heart"
    with lzma.open(kernsolve.dataset_path("heart_scale"), "rb") as f:
        data.write_bytes(f.read())
    monkeypatch.chdir(tmp_path)
    code, out, err = run_grid("-log2c", "-1,3,2", "-log2g", "-5,-1,2", "-v", "3", "-png",
                              "null", "--threads", "2", "-q", data)
    assert code == 0, err
    api = grid_search(y, X, "-q", grid={"c": [0.5, 2.0, 8.0], "g": [2.0 ** -5, 0.125, 0.5]},
                      n_folds=3, n_jobs=2)
    # grid.py's last line: the rate as svm-train prints it (%g), read back as a float
    assert out == f"{api.best_params['c']} {api.best_params['g']} {float('%g' % api.best_rate)}\n"
    assert len((tmp_path / "heart.out").read_text().splitlines()) == 9
    # -log2g null: only C is searched; -resume reuses the file
    code, out, err = run_grid("-log2c", "-1,1,2", "-log2g", "null", "-v", "3", "-png", "null",
                              "-out", "c.out", "-q", data)
    assert code == 0, err
    assert len(out.split()) == 2  # best C and rate
    assert all(s.startswith("log2c=") and "log2g" not in s
               for s in (tmp_path / "c.out").read_text().splitlines())
    code, out2, err = run_grid("-log2c", "-1,1,2", "-log2g", "null", "-v", "3", "-png",
                               "null", "-out", "c.out", "-resume", "-q", data)
    assert code == 0 and out2 == out
    assert len((tmp_path / "c.out").read_text().splitlines()) == 2
    code, _, err = run_grid("-log2c", "null", "-log2g", "null", data)
    assert code == 1 and "can't both be null" in err


# ---------------------------------------------------------------- Dask

def test_dask_local_cluster_equals_local(heart):
    distributed = pytest.importorskip("dask.distributed")
    import joblib
    y, X = heart
    grid = {"c": [1.0, 4.0], "g": [0.125]}
    local_cv = cross_validation(y, X, "-q", n_folds=4, n_jobs=1)
    local_grid = grid_search(y, X, "-q", grid=grid, n_folds=3, n_jobs=1)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        r = cross_validation(y, X, "-q", n_folds=4, n_jobs=2, backend="dask")
        with joblib.parallel_backend("dask"):
            g = grid_search(y, X, "-q", grid=grid, n_folds=3, n_jobs=2)
        # the tasks really ran in the worker processes
        assert len(client.scheduler_info()["workers"]) == 2
        done = client.run(lambda: __import__("sys").modules.get("kernsolve.solvers.libsvm.driver") is not None)
        assert all(done.values())
    np.testing.assert_array_equal(r.target, local_cv.target)
    assert [c["rate"] for c in g.cells] == [c["rate"] for c in local_grid.cells]
    assert g.best_params == local_grid.best_params
