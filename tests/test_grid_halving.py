"""Successive halving over the cells of a grid (issue 35 item 3): the cell it
finds is within 0.5 points of the full grid's best, with fewer fold solves on
all the rows and less training work; the output file and the last line keep
grid.py's format."""
import io
import sys

import numpy as np
import pytest

import kernsolve
from kernsolve import grid_search, halving_grid_search, read_problem
from kernsolve.cli.grid import cli
from kernsolve.model_selection import cv
from kernsolve.model_selection.grid import cell_label, read_out_file
from kernsolve.model_selection.halving import halving_rounds, nested_row_order

# grid.py's default grid: 11 C x 10 gamma
DEFAULT_GRID = {"c": [2.0 ** v for v in range(-5, 16, 2)],
                "g": [2.0 ** v for v in range(3, -16, -2)]}


def _heart():
    return read_problem(kernsolve.dataset_path("heart_scale"))


def _a9a(shared):
    y, X = read_problem(io.BytesIO(shared.lines("a9a", 600)))
    return y, X


def _svmguide1(shared, every=5):
    """Every 5th row (``every``) of svmguide1, scaled to [-1, 1] per feature
    (svm-scale's default)."""
    y, X = read_problem(io.BytesIO(b"".join(shared.lines("svmguide1").splitlines(True)[::every])))
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    lo, hi = X.min(0), X.max(0)
    return y, 2 * (X - lo) / np.where(hi > lo, hi - lo, 1) - 1


def test_rounds_closed_form():
    # 110 cells, 270 rows, factor 3, at least 30 rows: 30 -> 90 -> 270 rows
    assert halving_rounds(110, 270, 3, 30) == [(30, 110), (90, 37), (270, 13)]
    # the cells run out first: 9 cells -> 3 -> 1, the last round on all rows
    assert halving_rounds(9, 10000, 3, 50) == [(1112, 9), (3334, 3), (10000, 1)]
    # too few rows for a second round: the full grid
    assert halving_rounds(110, 100, 3, 50) == [(100, 110)]


def test_nested_order_is_a_stratified_permutation():
    y = np.array([1.0] * 30 + [-1.0] * 90)
    order = nested_row_order(y, 7, stratified=True)
    assert sorted(order) == list(range(120))
    for m in range(4, 121):
        positives = int((y[order[:m]] == 1).sum())
        assert abs(positives - m / 4) <= 1          # each prefix keeps the 1:3 share
    assert not np.array_equal(order, nested_row_order(y, 8, stratified=True))
    assert np.array_equal(order, nested_row_order(y, 7, stratified=True))


@pytest.mark.parametrize("problem", ["heart", "a9a", "svmguide1"])
def test_halving_finds_a_cell_within_half_a_point_of_the_full_grid(shared, problem,
                                                                   monkeypatch):
    """Oracle: the full grid (every cell on all rows, the same folds)."""
    y, X = {"heart": _heart, "a9a": lambda: _a9a(shared),
            "svmguide1": lambda: _svmguide1(shared)}[problem]()
    solves = []
    original = cv.fit_predict

    def counting(y, X, sw, param, train_idx, *rest, **kw):
        solves.append(len(train_idx))
        return original(y, X, sw, param, train_idx, *rest, **kw)

    monkeypatch.setattr(cv, "fit_predict", counting)
    full = grid_search(y, X, "-q", grid=DEFAULT_GRID, n_folds=5, n_jobs=2)
    full_solves, solves[:] = list(solves), []
    halving = halving_grid_search(y, X, "-q", grid=DEFAULT_GRID, n_folds=5, n_jobs=2)
    assert len(full_solves) == full.n_tasks == 110 * 5
    assert len(solves) == halving.n_tasks
    # the found cell: its rate on all rows is the full grid's rate of that cell
    # (the last round is the full grid's cross-validation of it) ...
    full_rates = {c["label"]: c["rate"] for c in full.cells}
    assert halving.best_rate == full_rates[cell_label(halving.best_params)]
    # ... within 0.5 points of the best
    assert halving.best_rate >= full.best_rate - 0.5
    # fewer solves on all the rows, and less training work: the rows the fold
    # solves train on, summed (every cell is solved once in the first round,
    # so the count of solves of all sizes is not what halving saves)
    n_train = max(full_solves)
    assert sum(s >= n_train - 5 for s in solves) <= len(full_solves) / 2
    assert sum(solves) < 0.7 * sum(full_solves)
    assert halving.rounds[-1][0] == y.size and len(halving.rounds) >= 2


def test_output_file_and_resume_of_the_full_grid(tmp_path):
    """Cells left out early carry rows=N: a full grid resumed from the file takes
    only the rates on all rows and recomputes the others."""
    y, X = _heart()
    grid = {"c": [2.0 ** v for v in range(-1, 12, 2)], "g": [2.0 ** v for v in (-3, -7, -11)]}
    out = tmp_path / "heart.out"
    h = halving_grid_search(y, X, "-q", grid=grid, factor=3, min_rows=30, out=out)
    lines = out.read_text().splitlines()
    assert len(lines) == 21
    on_all_rows = [line for line in lines if "rows=" not in line]
    assert len(on_all_rows) == h.rounds[-1][1]
    for (fields, rate), cell in zip(read_out_file(out), h.cells):
        assert rate == cell["rate"] and ("rows" in fields) == (cell["rows"] < y.size)
    resumed = grid_search(y, X, "-q", grid=grid, out=out)
    assert resumed.n_tasks == (21 - len(on_all_rows)) * 5
    cold = grid_search(y, X, "-q", grid=grid)
    assert [c["rate"] for c in resumed.cells] == [c["rate"] for c in cold.cells]


def test_command_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    data = kernsolve.dataset_path("heart_scale")
    args = ["-log2c", "-1,11,2", "-log2g", "-3,-11,-4", "-png", "null", "-q"]
    assert cli(["--halving", "--halving-factor", "2", "--halving-min-rows", "40"]
               + args + [data]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    y, X = _heart()
    grid = {"c": [2.0 ** v for v in range(-1, 12, 2)], "g": [2.0 ** v for v in (-3, -7, -11)]}
    h = halving_grid_search(y, X, "-q", grid=grid, factor=2, min_rows=40)
    assert last + "\n" == h.summary_line()
    assert len((tmp_path / "heart_scale.xz.out").read_text().splitlines()) == 21
    for bad, message in ((["--halving-factor", "3"], "--halving-factor: only with --halving"),
                         (["--halving", "--halving-factor", "1"], "integer >= 2"),
                         (["--halving", "--halving-min-rows", "4"], "at least 2 x the folds"),
                         (["--halving", "-resume"], "-resume: not with --halving")):
        assert cli(bad + args + [data]) != 0
        assert message in capsys.readouterr().err


def test_bad_arguments():
    y, X = _heart()
    with pytest.raises(ValueError, match="halving factor must be an integer >= 2"):
        halving_grid_search(y, X, "-q", grid={"c": [1, 2]}, factor=1)
    with pytest.raises(ValueError, match="min_rows must be an integer >= 2 x n_folds = 10"):
        halving_grid_search(y, X, "-q", grid={"c": [1, 2]}, min_rows=5)
