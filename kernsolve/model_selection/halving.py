"""Successive halving over the cells of a grid (scikit-learn's ``HalvingGridSearchCV``
idea, on rows): every cell is cross-validated on a subsample, the best
``1/factor`` of them on ``factor`` times more rows, and so on until the last
round, which cross-validates its cells on all the rows.

Each round is a :func:`kernsolve.model_selection.grid.grid_search` over the
cells still in, on the rows of its subsample, so kernel sharing, warm
starts along C (``--warm``) and LIBSVM's folds (``--libsvm-folds``, drawn as a
``svm-train -v`` run on that subsample would draw them) work as in the full
grid.  The subsamples are nested prefixes of one row order drawn
from the seed (stream ``"sampling"``), stratified by class for
classification, each taken in data order.
"""
import math
import time
from typing import Any, Mapping

import numpy as np

from . import cv as _cv
from .grid import (GridResult, GridSearchError, cell_label, grid_order, grid_search,
                   plot_grid, prepare_search)
from .._constants import CLASSIFICATION
from .._fileutil import output_file
from .._random import permutation
from .._typing import ArrayLike, MatrixLike, StrPath

__all__ = ["halving_grid_search", "halving_rounds", "nested_row_order"]


def nested_row_order(y, seed, stratified):
    """The rows in the order the subsamples take them: every prefix is a random
    subsample (from ``seed``, stream ``"sampling"``), with each class in about
    its share of the rows when ``stratified``."""
    order = permutation(y.shape[0], seed, "sampling")
    if not stratified:
        return order
    # each class's rows in the permutation's order, spread evenly over [0, 1):
    # the j-th of a class of m rows sits at (j + 0.5) / m
    position = np.empty(y.shape[0])
    for label in np.unique(y):
        members = order[y[order] == label]
        position[members] = (np.arange(members.size) + 0.5) / members.size
    return order[np.argsort(position[order], kind="stable")]


def halving_rounds(n_cells, n_rows, factor, min_rows):
    """The rounds as (rows, cells) pairs: the first on at least ``min_rows``
    rows with every cell, each next on ``factor`` x the rows with the best
    ``ceil(cells / factor)``, the last on all ``n_rows``.  As many rounds as
    both the cells and the rows allow."""
    by_cells = int(math.floor(math.log(n_cells, factor) + 1e-9)) if n_cells > 1 else 0
    by_rows = int(math.floor(math.log(n_rows / min_rows, factor) + 1e-9)) \
        if n_rows > min_rows else 0
    last = min(by_cells, by_rows)
    rounds, cells = [], n_cells
    for r in range(last + 1):
        rounds.append((int(math.ceil(n_rows / factor ** (last - r))), cells))
        cells = int(math.ceil(cells / factor))
    return rounds


def _check_factor(factor, min_rows, n, k):
    if isinstance(factor, bool) or not isinstance(factor, (int, np.integer)) or factor < 2:
        raise ValueError(f"halving factor must be an integer >= 2, got {factor!r}")
    if min_rows is None:
        return None
    if isinstance(min_rows, bool) or not isinstance(min_rows, (int, np.integer)) \
            or not 2 * k <= min_rows:
        raise ValueError(f"min_rows must be an integer >= 2 x n_folds = {2 * k}, "
                         f"got {min_rows!r}")
    return min(int(min_rows), n)


def halving_grid_search(y: ArrayLike, X: MatrixLike, base_options: Any = "",
                        grid: Mapping[str, Any] | None = None, factor: int = 3,
                        min_rows: int | None = None, n_folds: int = 5,
                        n_jobs: int | None = None, seed: int | None = None,
                        out: StrPath | None = None, backend: Any = None,
                        verbose: bool | None = None, png: StrPath | None = None,
                        sample_weight: ArrayLike | None = None) -> GridResult:
    """Successive halving over the cells of ``grid`` (doc/cross-validation.md).

    Parameters are those of :func:`~kernsolve.model_selection.grid.grid_search`
    (without ``resume``: the output file is written anew), and

    factor : int >= 2
        Each round keeps the best ``ceil(cells / factor)`` cells (grid.py's
        tie rule: the job order breaks ties) and gives them ``factor`` x the rows.
    min_rows : int, optional
        Rows of the first round at least (>= 2 x n_folds); default
        ``10 x n_folds x max(classes, 2)``, at most ``n / factor`` (100 for
        two classes and 5 folds:
        on a9a's first 2000 rows a first round of 50 found a cell 0.55 points
        below the full grid's best, 100 and 200 one 0.25 points below; on
        svmguide1 50 and 100 found one 0.16 below; 20 lost 1.7 points on a9a).

    Returns
    -------
    GridResult
        As the full grid's: ``best_params``, ``best_rate`` and the summary
        line come from the last round (all rows); every cell of ``cells`` has
        the rate and the ``rows`` of the last round it was in; ``n_tasks``
        counts the fold solves of all rounds; ``rounds`` lists ``(rows,
        cells)``.  ``out`` gets one line per cell: ``rows=N`` before the rate
        for a cell left out before the last round (so that a resume of the
        full grid never takes it for a rate on all rows).
    """
    t0 = time.perf_counter()
    y, X, sw, param, axes, k, seed = prepare_search(y, X, base_options, grid, n_folds, seed,
                                                    png, sample_weight)
    n = y.shape[0]
    min_rows = _check_factor(factor, min_rows, n, k)
    stratified = int(param.svm_type) in CLASSIFICATION
    if min_rows is None:        # (on small data a factor's share, so that there are two rounds)
        classes = np.unique(y).size if stratified else 1
        min_rows = max(2 * k, min(n, 10 * k * max(classes, 2), n // int(factor)))
    if verbose is None:
        verbose = not param.quiet
    cells = grid_order(axes)
    records = [{"params": dict(c), "label": cell_label(c), "rate": None, "rows": None,
                "resumed": False} for c in cells]
    rounds = halving_rounds(len(cells), n, int(factor), min_rows)
    order = nested_row_order(y, seed, stratified)
    alive = list(range(len(cells)))
    n_tasks = 0
    result: Any = None     # the last round's GridResult (attributes set at run time)
    for r, (rows, _) in enumerate(rounds):
        last = r == len(rounds) - 1
        sub = np.sort(order[:rows])
        if verbose:
            _cv._say(f"halving round {r + 1} of {len(rounds)}: {len(alive)} cells on "
                     f"{rows} of {n} rows")
        try:
            result = grid_search(y[sub], X[sub], param, grid=axes, n_folds=k, n_jobs=n_jobs,
                                 seed=seed, backend=backend, verbose=verbose,
                                 sample_weight=None if sw is None else sw[sub],
                                 _cells=[cells[ci] for ci in alive])
        except GridSearchError as exc:
            if last:
                raise
            result = exc.result     # a cell failing on a subsample is left out
            if verbose:
                _cv._say(f"halving round {r + 1}: left out: {'; '.join(exc.failed)}")
        n_tasks += result.n_tasks
        for ci, cell in zip(alive, result.cells):
            records[ci].update(cell, rows=rows)
        if not last:
            alive = _best_share(alive, records, result.metric, int(factor))
    assert result is not None
    final = GridResult(cells=records, axes=axes, best_params=result.best_params,
                       best_rate=result.best_rate, best_options=result.best_options,
                       metric=result.metric, n_folds=k, seed=seed, n_jobs=result.n_jobs,
                       n_tasks=n_tasks, folds=result.folds, waves=result.waves,
                       rounds=rounds, seconds=time.perf_counter() - t0)
    if out is not None:
        _write_out(out, records, n)
    if png is not None:
        plot_grid(final, png)
    return final


def _best_share(alive, records, metric, factor):
    """The best ``ceil(len(alive) / factor)`` cells of ``alive``, in job order;
    ties broken by the job order (a failed cell ranks last)."""
    keep = int(math.ceil(len(alive) / factor))
    sign = 1.0 if metric == "mean_squared_error" else -1.0

    def rank(ci):
        rate = records[ci]["rate"]
        return math.inf if rate is None or rate != rate else sign * rate

    return sorted(sorted(alive, key=rank)[:keep])


def _write_out(out, records, n):
    """grid.py's output file, one line per cell: its rate in the last round it
    was in, with ``rows=N`` when that round had fewer than all ``n`` rows."""
    with output_file(out) as f:
        for rec in records:
            if rec["rate"] is None:
                continue
            rows = "" if rec["rows"] == n else f" rows={rec['rows']}"
            f.write(f"{rec['label']}{rows} rate={rec['rate']!r}\n")
