"""Grid search over training options by cross-validation (LIBSVM's ``grid.py``).

Every (parameter cell, fold) pair is one task of a single joblib job list
(``_cv.run_tasks``), so a 9-cell, 5-fold grid is 45 tasks spread over the
cores (or a Dask cluster) with the thread budget of :mod:`kernsolve.model_selection.cv`.

The order of the cells, the tie rule of the best cell, and the output file
follow ``grid.py``: the ``c`` and ``g`` axes are visited middle-out
(``permute_sequence``) and interleaved as ``calculate_jobs`` does; a cell beats
the best so far when its rate is higher, or equal with the same ``g`` and a
smaller ``c``; the output file has one ``log2c=... log2g=... rate=...`` line
per finished cell, and a rerun with ``resume=True`` skips the cells it lists.
The final best cell is chosen in the job order, so it is the same whatever
order the tasks finished in.

Kernel values: when the fits can share a kernel matrix (``_cv.sharing_refused``),
the cells are run kernel by kernel (all the C values and folds of one gamma,
in job order, then the next gamma in the order it first appears), each
kernel's matrix computed once just before its tasks, shared by them on
threads and dropped after them, as many matrices at once as there are
workers and ``-m`` holds (:func:`_run_shared`, :mod:`._rolling`: a worker that
finds room makes the next kernel's matrix while the others go on); the rates
and the best cell are the same bits as the unshared run (``--cold``), only
the order of the output lines differs.
"""
import contextlib
import itertools
import math
import os
import re
import shlex
import sys
import time
from typing import Any, Mapping

import numpy as np

from . import cv as _cv
from ._rolling import run_rolling
from .._constants import C_SVC, CLASSIFICATION, EPSILON_SVR, NU_SVR, REGRESSION
from .._fileutil import output_file
from .._params import _LETTERS, _LONG, OptionsLike, parse_options
from .._core._kernel import free_memory_kept
from .._threads import one_blas_thread
from .._typing import ArrayLike, MatrixLike, StrPath
from ..solvers import all_option_names
from ..solvers.libsvm.libsvm_rand import cross_validation_folds
from ..solvers.libsvm.shared_kernel import gram_bytes, kernel_of

_MAX_FAILURES_SHOWN = 3     # failed cells named in a GridSearchError message

__all__ = ["grid_search", "GridResult", "GridSearchError", "plot_grid",
           "read_out_file", "grid_order"]

# grid keys spelled as Parameters fields -> option names
_ALIASES = {"C": "c", "cost": "c", "gamma": "g", "nu": "n", "epsilon": "p",
            "degree": "d", "coef0": "r"}
_LOG2 = ("c", "g")   # axes written as log2 in the output file (grid.py)


class GridSearchError(RuntimeError):
    """Some cells could not be evaluated.

    Attributes
    ----------
    failed : dict
        ``{cell label: reason}``.
    result : GridResult
        The cells that did finish (they are also in the output file).
    """

    def __init__(self, message, failed, result):
        super().__init__(message)
        self.failed = failed
        self.result = result


# --------------------------------------------------------------------------
# grid definition and order
# --------------------------------------------------------------------------

def permute_sequence(seq):
    """grid.py's middle-out order: the middle value, then both halves interleaved."""
    seq = list(seq)
    if len(seq) <= 1:
        return seq
    mid = len(seq) // 2
    left = permute_sequence(seq[:mid])
    right = permute_sequence(seq[mid + 1:])
    out = [seq[mid]]
    while left or right:
        if left:
            out.append(left.pop(0))
        if right:
            out.append(right.pop(0))
    return out


def _cg_order(c_seq, g_seq):
    """grid.py's ``calculate_jobs``: C and g resolution increased in turn."""
    nr_c, nr_g = len(c_seq), len(g_seq)
    i = j = 0
    out = []
    while i < nr_c or j < nr_g:
        if i / nr_c < j / nr_g:
            out.extend((c_seq[i], g_seq[k]) for k in range(j))
            i += 1
        else:
            out.extend((c_seq[k], g_seq[j]) for k in range(i))
            j += 1
    return out


def _option_name(key):
    if not isinstance(key, str) or not key.strip():
        raise ValueError(f"grid keys must be option names such as 'c' or 'g', got {key!r}")
    name = key.strip().lstrip("-")
    name = _ALIASES.get(name, name)
    if len(name) == 1:
        if name not in _LETTERS or name in ("v", "q"):
            raise ValueError(f"grid key {key!r}: not a training option letter")
        return name
    name = name.replace("_", "-")
    known = set(_LONG) | all_option_names()
    if name not in known:
        raise ValueError(f"grid key {key!r}: unknown option (letters such as 'c', 'g', "
                         f"'n', or solver options such as 'lambda')")
    return name


def _normalize_grid(grid):
    if grid is None or not hasattr(grid, "items") or len(grid) == 0:
        raise ValueError("empty grid: give at least one option with values, "
                         "e.g. grid={'c': [1, 4, 16], 'g': [0.5, 0.125]}")
    axes = {}
    for key, values in grid.items():
        name = _option_name(key)
        if name in axes:
            raise ValueError(f"grid key {key!r} repeats option {name!r}")
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            values = [values]
        values = list(values)
        if not values:
            raise ValueError(f"empty grid: option {key!r} has no values")
        clean = []
        for v in values:
            if isinstance(v, (np.integer, np.floating)):
                v = v.item()
            if name in _LOG2:
                if isinstance(v, bool) or not isinstance(v, (int, float)) \
                        or not math.isfinite(v) or v <= 0:
                    raise ValueError(f"grid values of {name!r} must be positive "
                                     f"numbers, got {v!r}")
                v = float(v)
            clean.append(v)
        axes[name] = clean
    return axes


def grid_order(axes):
    """The cells as dicts ``{option: value}``, in grid.py's job order.

    ``c`` and ``g`` are visited as ``grid.py`` does; any other axes vary
    slowest, in the order given (itertools.product).
    """
    c_seq = permute_sequence(axes["c"]) if "c" in axes else [None]
    g_seq = permute_sequence(axes["g"]) if "g" in axes else [None]
    cg = _cg_order(c_seq, g_seq)
    others = [k for k in axes if k not in _LOG2]
    cells = []
    for combo in itertools.product(*[axes[k] for k in others]):
        for c, g in cg:
            cell = {}
            if c is not None:
                cell["c"] = c
            if g is not None:
                cell["g"] = g
            cell.update(zip(others, combo))
            cells.append(cell)
    return cells


def _fmt_value(v):
    return repr(v) if isinstance(v, float) else str(v)


def cell_label(cell):
    """``log2c=3.0 log2g=-5.0`` (grid.py's spelling) plus ``name=value`` for other axes."""
    parts = []
    for k, v in cell.items():
        if k in _LOG2:
            parts.append(f"log2{k}={_fmt_value(float(math.log2(v)))}")
        else:
            parts.append(f"{k}={_fmt_value(v)}")
    return " ".join(parts)


def _cell_parameters(param, cell):
    """The base Parameters with the cell's option values (given last, so they win)."""
    extra = []
    for k, v in cell.items():
        extra += ["-" + k if len(k) == 1 else "--" + k, _fmt_value(v)]
    try:
        return parse_options(shlex.split(param.to_options()) + extra)
    except ValueError as exc:
        raise ValueError(f"grid cell {cell_label(cell)}: {exc}") from None


# --------------------------------------------------------------------------
# output file (grid.py's format) and resume
# --------------------------------------------------------------------------

_FIELD_RE = re.compile(r"(\S+?)=(\S+)")


def read_out_file(path):
    """Cells and rates of a grid output file: a list of (dict of fields, rate).

    Lines look like ``log2c=3.0 log2g=-5.0 rate=84.25``; ``log2c``/``log2g``
    become ``c``/``g`` (as 2**x); lines without ``rate=`` are skipped.
    """
    out = []
    with open(path, "r", encoding="utf-8", errors="replace") as f:
        for line in f:
            fields = dict(_FIELD_RE.findall(line))
            if "rate" not in fields:
                continue
            try:
                rate = float(fields.pop("rate"))
            except ValueError:
                continue
            cell = {}
            ok = True
            for k, v in fields.items():
                if k.startswith("log2") and len(k) == 5:
                    try:
                        cell[k[4:]] = ("log2", float(v))
                    except ValueError:
                        ok = False
                else:
                    cell[k] = ("raw", v)
            if ok:
                out.append((cell, rate))
    return out


def _matches(cell, fields):
    if set(cell) != set(fields):
        return False
    for k, v in cell.items():
        kind, text = fields[k]
        if kind == "log2":
            if k not in _LOG2 or abs(math.log2(v) - text) > 1e-9:
                return False
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            try:
                x = float(text)
            except ValueError:
                return False
            if not math.isclose(x, float(v), rel_tol=1e-12, abs_tol=0.0):
                return False
        elif str(v) != text:
            return False
    return True


# --------------------------------------------------------------------------
# best cell
# --------------------------------------------------------------------------

def _better(rate, cell, best_rate, best_cell, minimize):
    """grid.py's update rule (``rate > best`` or equal, same g, smaller c)."""
    if rate is None or rate != rate:
        return False
    if best_cell is None:
        return True
    if (rate < best_rate) if minimize else (rate > best_rate):
        return True
    if rate == best_rate and "c" in cell and "c" in best_cell:
        same_rest = all(cell.get(k) == best_cell.get(k) for k in cell if k != "c")
        return same_rest and cell["c"] < best_cell["c"]
    return False


# --------------------------------------------------------------------------
# result
# --------------------------------------------------------------------------

class GridResult:
    """The result of :func:`grid_search`.

    Attributes
    ----------
    cells : list of dict
        In grid.py's job order; each has ``params`` (``{option: value}``),
        ``label`` (``log2c=... log2g=...``), ``rate`` (accuracy %, or MSE for
        regression), ``resumed`` (read from the output file) and, when
        computed here, ``accuracy``, ``mean_squared_error``,
        ``squared_correlation`` and ``seconds`` (summed over folds).
    best_params : dict
        ``{option: value}`` of the best cell.
    best_rate : float
    best_options : str
        The base options with the best cell's values (for ``kernsolve.train``).
    metric : str
        ``"accuracy"`` (higher is better) or ``"mean_squared_error"`` (lower).
    n_folds, seed, n_jobs : int
    n_tasks : int
        (cell, fold) tasks run here (resumed cells excluded).
    seconds : float
        Wall time.
    """

    def __init__(self, **values):
        self.__dict__.update(values)

    def __getitem__(self, name):
        return getattr(self, name)

    def table(self):
        """The results as text: one row per cell, best marked with ``*``."""
        keys = list(self.axes)
        subsampled = any("rows" in cell for cell in self.cells)    # successive halving
        head = [f"log2{k}" if k in _LOG2 else k for k in keys] + \
            ["rows"] * subsampled + [self.metric, ""]
        rows = []
        for cell in self.cells:
            vals = [_fmt_value(float(math.log2(cell["params"][k]))) if k in _LOG2
                    else _fmt_value(cell["params"][k]) for k in keys]
            rate = cell.get("rate")
            mark = "*" if cell["params"] == self.best_params else ""
            rows.append(vals + [str(cell.get("rows") or "")] * subsampled +
                        ["" if rate is None else f"{rate:.6g}", mark])
        widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
        lines = ["  ".join(str(v).rjust(w) for v, w in zip(r, widths)).rstrip()
                 for r in [head] + rows]
        return "\n".join(lines) + "\n"

    def summary_line(self):
        """grid.py's last line: the best cell's values, then its rate.

        ``2.0 0.03125 84.2593``: C and gamma as values (``c``, ``g``, then any
        other axis, as ``str`` prints them), and the rate rounded as grid.py
        sees it: svm-train prints it with ``%g`` and grid.py reads that text
        back as a float.  Empty values and ``-1`` when no cell finished
        (grid.py's start value).
        """
        values = [str(v) for v in (self.best_params or {}).values()]
        rate = -1 if self.best_rate is None else float("%g" % self.best_rate)
        return " ".join(values + [str(rate)]) + "\n"

    def plot(self, path):
        """Write the heat map PNG (see :func:`plot_grid`)."""
        plot_grid(self, path)

    def __repr__(self):
        return (f"GridResult(best_params={self.best_params}, best_rate={self.best_rate!r}, "
                f"n_cells={len(self.cells)})")


# --------------------------------------------------------------------------
# heat map
# --------------------------------------------------------------------------

def _require_matplotlib():
    try:        # optional (the plot extra)
        import matplotlib  # noqa: F401
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("the heat map needs matplotlib, an optional extra: "
                          "pip install 'kernsolve[plot]' (or pip install matplotlib); "
                          "without it, leave png out (kernsolve-grid: -png null)") from None
    return Figure, FigureCanvasAgg


def plot_grid(result, path):
    """Heat map of the rate over log2(C) x log2(gamma), best cell marked, as PNG.

    With other axes too, each (C, gamma) square shows the best rate over them.
    With a single c or g axis, a line plot.  Needs matplotlib (extra ``plot``);
    uses the Agg canvas directly, so no display and no pyplot state.
    """
    Figure, FigureCanvasAgg = _require_matplotlib()
    axes = [k for k in ("c", "g") if k in result.axes]
    if not axes:
        raise ValueError("the heat map needs a c or g axis in the grid")
    minimize = result.metric == "mean_squared_error"
    best = {}
    for cell in result.cells:
        rate = cell.get("rate")
        if rate is None or rate != rate:
            continue
        key = tuple(math.log2(cell["params"][k]) for k in axes)
        if key not in best or (rate < best[key] if minimize else rate > best[key]):
            best[key] = rate
    fig = Figure(figsize=(6.4, 4.8))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    label = "CV accuracy (%)" if not minimize else "CV mean squared error"
    bp = result.best_params
    if len(axes) == 2:
        xs = sorted({k[0] for k in best} | {math.log2(v) for v in result.axes["c"]})
        ys = sorted({k[1] for k in best} | {math.log2(v) for v in result.axes["g"]})
        Z = np.full((len(ys), len(xs)), np.nan)
        for (x, yv), rate in best.items():
            Z[ys.index(yv), xs.index(x)] = rate
        im = ax.imshow(Z, origin="lower", aspect="auto", cmap="viridis",
                       extent=_extent(xs) + _extent(ys), interpolation="nearest")
        fig.colorbar(im, ax=ax, label=label)
        if len(xs) * len(ys) <= 225:
            mid = (np.nanmin(Z) + np.nanmax(Z)) / 2
            for i, yv in enumerate(ys):
                for j, x in enumerate(xs):
                    if Z[i, j] == Z[i, j]:
                        ax.text(x, yv, f"{Z[i, j]:.4g}", ha="center", va="center",
                                fontsize=7,
                                color="black" if Z[i, j] > mid else "white")
        if bp and "c" in bp and "g" in bp:
            ax.plot([math.log2(bp["c"])], [math.log2(bp["g"])], marker="s",
                    markersize=22, markerfacecolor="none", markeredgecolor="red",
                    markeredgewidth=2)
        ax.set_xlabel("log2(C)")
        ax.set_ylabel("log2(gamma)")
    else:
        pts = sorted((k[0], r) for k, r in best.items())
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o")
        ax.set_xlabel("log2(C)" if axes[0] == "c" else "log2(gamma)")
        ax.set_ylabel(label)
    ax.set_title(f"{result.n_folds}-fold cross-validation; best: {_best_text(result)}")
    fig.savefig(path, format="png", dpi=100)


def _extent(vals):
    if len(vals) == 1:
        return [vals[0] - 0.5, vals[0] + 0.5]
    step = min(b - a for a, b in zip(vals, vals[1:]))
    return [vals[0] - step / 2, vals[-1] + step / 2]


def _best_text(result):
    bp = result.best_params or {}
    parts = []
    for k, v in bp.items():
        parts.append(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}")
    rate = result.best_rate
    parts.append(f"rate={rate:.6g}" if rate is not None else "rate=?")
    return ", ".join(parts)


# --------------------------------------------------------------------------
# cells grouped by kernel (kernel values shared within a group)
# --------------------------------------------------------------------------

def _kernel_groups(X, todo, cell_params, backend, say):
    """The cells to run, grouped by kernel: ``{kernel: [cell index, ...]}``.

    When every cell's fits can share a kernel matrix, one group per kernel
    (the kernel as :func:`kernel_of` gives it), in the order the kernels first
    appear in the job order, the cells of each in job order.  Otherwise the
    single group ``{None: todo}`` (today's job order, nothing shared), and
    ``say`` is told why.
    """
    for ci in todo:
        reason = _cv.sharing_refused(X, cell_params[ci], backend)
        if reason is not None:
            if say is not None:
                say(f"kernel values not shared ({reason}): each fit computes its own")
            return {None: list(todo)}
    groups = {}
    for ci in todo:
        groups.setdefault(kernel_of(cell_params[ci], X.shape[1]), []).append(ci)
    return groups


def _run_shared(X, groups, group_cells, group_tasks, cell_params, n_cores, backend, say,
                n_folds, on_done):
    """Run the tasks of kernel groups that share matrices (``group_tasks(group,
    kernel)``: ``(arguments of fit_predict_path, [(cell, fold), ...])`` each,
    the pairs ``group_cells(group)``'s, known before the matrix is),
    a group's matrix computed just before its tasks and dropped after them, as
    many matrices at once as there are workers and ``-m`` holds
    (:func:`kernsolve.model_selection._rolling.run_rolling`); a dropped
    matrix's memory is the next one's.  ``on_done(cell, fold, result)`` as each
    fit finishes; returns the waves (one: every task, one worker each).
    """
    n = X.shape[0]
    chain_cells = [group_cells(group) for group in groups]
    n_tasks = sum(len(tasks) for tasks in chain_cells)
    n_workers = max(1, min(n_cores, n_tasks))
    n_threads = max(1, n_cores // n_workers)
    room = int(cell_params[groups[0][0]].cache_size * 2 ** 20 // gram_bytes(n))
    spare = []          # the memory of dropped matrices, for the next ones

    def make(g, threads):
        lines = []
        try:
            out = spare.pop()
        except IndexError:
            out = None
        kernel = _cv.shared_kernel(X, cell_params[groups[g][0]], backend, threads,
                                   lines.append, f"its {len(groups[g])} cells x {n_folds} folds",
                                   out=out)
        return kernel, group_tasks(groups[g], kernel), lines

    def run(t, made, threads):
        return _cv.fit_predict_path(*made[1][t][0], threads)

    def on_made(g, made):
        for line in made[2] if say is not None else ():
            say(line)

    def chain_done(g, t, results):
        for (ci, f), res in zip(chain_cells[g][t], results):
            on_done(ci, f, res)

    def on_drop(g, made):
        if made[0] is not None:
            spare.append(made[0].gram)

    # the fits' held-out products on shared matrices
    # (SharedKernel.weighted_sums) keep numpy's BLAS on one thread: the fits
    # run side by side, each on its share of the cores, and OpenBLAS's own
    # threads would take the other fit's core and spin after each product;
    # held for the whole run, so that its thread count does not toggle and
    # wake its workers ("Two workers", doc/cross-validation.md); numpy's BLAS
    # only: scipy's is not loaded for it
    with one_blas_thread(scipy=False), free_memory_kept():
        run_rolling([list(range(len(tasks))) for tasks in chain_cells], n_workers,
                    n_threads, min(n_workers, room), make, run, on_made, chain_done,
                    on_drop)
    return [(n_tasks, n_workers, [n_threads] * n_tasks)]


def _c_chains(group, cells):
    """The cells of ``group`` as chains of cells that differ in ``c`` only, each
    in increasing C (for alpha seeding along C), in the order the chains first
    appear."""
    chains = {}
    for ci in group:
        rest = tuple(sorted((k, repr(v)) for k, v in cells[ci].items() if k != "c"))
        chains.setdefault(rest, []).append(ci)
    return [sorted(chain, key=lambda ci: cells[ci].get("c", 0.0)) for chain in chains.values()]


# --------------------------------------------------------------------------
# the public function
# --------------------------------------------------------------------------

def prepare_search(y, X, base_options, grid, n_folds, seed, png, sample_weight
                   ) -> tuple[np.ndarray, Any, np.ndarray | None, Any, dict, int, int]:
    """A search's inputs checked before any work (also successive halving's):
    ``(y, X, sample_weight, Parameters, axes, n_folds, seed)``."""
    y, X, sw, param = _cv.prepare(y, X, base_options, sample_weight)
    axes = _normalize_grid(grid)
    if png is not None:
        _require_matplotlib()
    k = _cv._check_n_folds(n_folds, y.shape[0])
    seed = _cv._seed(param.seed if seed is None else seed)
    return y, X, sw, param, axes, k, seed


@contextlib.contextmanager
def _writing(name, state):
    """An error of writing ``name`` (a full disk) stops the run with the file
    named, instead of passing for a worker's failure."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None:
            exc.filename = name
        state["write_error"] = exc
        raise


def grid_search(y: ArrayLike, X: MatrixLike, base_options: OptionsLike = "",
                grid: Mapping[str, Any] | None = None, n_folds: int = 5,
                n_jobs: int | None = None, seed: int | None = None, out: StrPath | None = None,
                resume: bool = True, backend: Any = None, verbose: bool | None = None,
                png: StrPath | None = None, sample_weight: ArrayLike | None = None,
                _cells: list[dict] | None = None) -> GridResult:
    """Cross-validate every cell of a parameter grid, all (cell, fold) tasks in parallel.

    Parameters
    ----------
    y, X : as for :func:`kernsolve.cross_validation`
    base_options : str, list, dict or Parameters
        Options shared by all cells (kernel, solver, ``-b``, weights ...).
    grid : dict
        ``{option: [values]}``: option letters (``"c"``, ``"g"``, ``"n"``, ``"p"``
        ...; ``"C"``, ``"gamma"``, ``"nu"`` also accepted) or solver options
        (``"lambda"``, ``"loss"`` ...).  Values are the option values (C itself,
        not log2 C).  ``c`` and ``g`` are written as log2 in the output file.
    n_folds : int
        Folds per cell (default 5); the same folds for every cell.
    n_jobs : int, optional
        Cores for the whole search (None: all); tasks run side by side with a
        share of the cores each, as in :func:`kernsolve.cross_validation`.
    seed : int, optional
        Seed of the folds; None: the options' ``--seed`` (default 0).
    out : str or path, optional
        Output file, grid.py's format: a ``log2c=... log2g=... rate=...`` line is
        appended as each cell finishes.
    resume : bool
        With ``out`` existing: skip the cells it lists and use their rates
        (otherwise the file is overwritten).
    backend : str or joblib backend, optional
        As in :func:`kernsolve.cross_validation` (``"dask"`` for a cluster).
    verbose : bool, optional
        A line per finished (cell, fold) task with the best so far, on stdout.
        None: on unless the options have ``-q``.
    png : str or path, optional
        Write the heat map there (needs matplotlib).
    sample_weight : array-like, optional
        Per-row weights for every fit.
    _cells : private
        The cells to run, a part of the grid's in its job order (successive
        halving's rounds, :mod:`kernsolve.model_selection.halving`).

    Returns
    -------
    GridResult

    Raises
    ------
    ValueError
        Bad data or options, an empty grid, a cell whose options are invalid,
        bad ``n_folds``.
    GridSearchError
        Some cells failed (their labels and errors are named); the finished
        cells are in ``error.result`` and in ``out``.
    ImportError
        ``png`` given without matplotlib (checked before any work).
    """
    t0 = time.perf_counter()
    y, X, sw, param, axes, k, seed = prepare_search(y, X, base_options, grid, n_folds, seed,
                                                    png, sample_weight)
    n = y.shape[0]
    if verbose is None:
        verbose = not param.quiet
    svm_type = int(param.svm_type)
    minimize = svm_type in REGRESSION
    metric = "mean_squared_error" if minimize else "accuracy"
    cells = grid_order(axes) if _cells is None else _cells
    cell_params = [_cv.fit_parameters(_cell_parameters(param, c)) for c in cells]
    stratified = svm_type in CLASSIFICATION
    if stratified:
        _cv._warn_small_classes(y, k)
    prob_folds = None
    if param.libsvm_folds:
        # --libsvm-folds: each cell is a fresh svm-train -v run, as in grid.py
        folds, prob_folds = cross_validation_folds(y, k, svm_type, param.probability)
    else:
        folds = _cv.make_folds(y, k, seed, stratified)
    probability = bool(param.probability) and stratified
    total = _cv.resolve_n_jobs(n_jobs if n_jobs is not None else param.n_jobs)

    records = [{"params": dict(c), "label": cell_label(c), "rate": None,
                "resumed": False} for c in cells]
    if out is not None and resume and os.path.exists(out):
        finished = read_out_file(out)
        for rec in records:
            for fields, rate in finished:
                if _matches(rec["params"], fields):
                    rec["rate"] = rate
                    rec["resumed"] = True
    todo = [i for i, rec in enumerate(records) if not rec["resumed"]]

    # The results file is replaced when the run ends (with the cells that
    # finished, for -resume, also after a failure or Ctrl-C), never cut short
    # by a write that failed (a full disk): output_file(keep_partial=True).
    out_writer = contextlib.nullcontext() if out is None else \
        output_file(out, keep_partial=True)

    state: dict[str, Any] = {"best": None, "best_rate": None, "done": 0}

    def say(line):
        with _writing("standard output", state):
            _cv._say(line)

    groups = _kernel_groups(X, todo, cell_params, backend, say if verbose and todo else None)
    # alpha seeding scales a solution with C: the types whose constraints have C
    # (nu-SVC and one-class have none: LIBSVM ignores -c for them)
    warm = bool(param.warm) and not param.cold and svm_type in (C_SVC, EPSILON_SVR, NU_SVR)
    n_tasks = len(todo) * k         # (cell, fold) pairs; a task runs a chain of cells

    def group_chains(group):
        """A kernel's cells as chains: one cell each, or with --warm the cells
        that differ in C only, C increasing."""
        return _c_chains(group, cells) if warm else [[ci] for ci in group]

    def group_cells(group):
        """The (cell, fold) pairs of each of a kernel's tasks: a chain of cells
        on one fold each."""
        return [[(ci, f) for ci in chain] for chain in group_chains(group) for f in range(k)]

    def group_tasks(group, shared):
        """The tasks of a kernel's cells: (arguments of fit_predict_path,
        group_cells' pairs) each."""
        return [((y, X, sw, [cell_params[ci] for ci, _ in pairs],
                  _cv.train_rows(folds, pairs[0][1]), folds[pairs[0][1]], probability,
                  None if prob_folds is None else prob_folds[pairs[0][1]], shared, warm), pairs)
                for pairs in group_cells(group)]
    targets = {ci: np.full(n, np.nan) for ci in todo}
    remaining = {ci: k for ci in todo}
    fold_seconds = {ci: 0.0 for ci in todo}
    errors: dict[int, str] = {}
    for rec in records:  # resumed cells count for the best so far, as in grid.py
        if rec["resumed"] and _better(rec["rate"], rec["params"], state["best_rate"],
                                      state["best"], minimize):
            state["best"], state["best_rate"] = rec["params"], rec["rate"]

    def on_done(ci, f, res):
        rec = records[ci]
        state["done"] += 1
        if res["error"] is not None:
            errors.setdefault(ci, f"fold {f + 1}: {res['error']}")
        else:
            targets[ci][folds[f]] = res["pred"]
            fold_seconds[ci] += res["seconds"]
        remaining[ci] -= 1
        finished = ""
        if remaining[ci] == 0 and ci not in errors:
            acc, mse, scc = _cv.scores(y, targets[ci], svm_type)
            rec.update(rate=mse if minimize else acc, accuracy=acc,
                       mean_squared_error=mse, squared_correlation=scc,
                       seconds=fold_seconds[ci])
            if out_file is not None:
                with _writing(out, state):
                    out_file.write(f"{rec['label']} rate={rec['rate']!r}\n")
                    out_file.flush()
            if _better(rec["rate"], rec["params"], state["best_rate"], state["best"],
                       minimize):
                state["best"], state["best_rate"] = rec["params"], rec["rate"]
            finished = f" -> {metric} {rec['rate']:.6g}"
        if verbose:
            best = ("none yet" if state["best"] is None else
                    f"{cell_label(state['best'])} rate={state['best_rate']:.6g}")
            status = "FAILED " + errors[ci] if ci in errors and res["error"] else "done"
            with _writing("standard output", state):
                sys.stdout.write(f"[{state['done']}/{n_tasks}] {rec['label']} fold "
                                 f"{f + 1}/{k} {status}{finished} (best: {best})\n")
                sys.stdout.flush()

    crash = None
    waves = []
    with out_writer as out_file:
        if out_file is not None and out is not None and resume and os.path.exists(out):
            with open(out, encoding="utf-8") as old:    # grid.py appends to it
                out_file.write(old.read())
        try:
            if None in groups:      # nothing shared: one list of tasks, as cross_validation's
                tasks = group_tasks(groups[None], None)

                def chain_done(t, results):
                    for (ci, f), res in zip(tasks[t][1], results):
                        on_done(ci, f, res)
                waves += _cv.run_tasks(_cv.fit_predict_path, [t[0] for t in tasks], total,
                                       backend, chain_done)
            else:
                waves += _run_shared(X, list(groups.values()), group_cells, group_tasks,
                                     cell_params, total, backend, say if verbose else None, k,
                                     on_done)
        except Exception as exc:  # a worker died: name the cells that did not finish
            if "write_error" in state:      # not a worker: our own output failed
                raise state["write_error"] from None
            crash = exc

    best, best_rate = None, None
    for rec in records:   # final choice in job order: independent of finishing order
        if rec["rate"] is not None and _better(rec["rate"], rec["params"], best_rate, best,
                                               minimize):
            best, best_rate = rec["params"], rec["rate"]
    best_options = None
    if best is not None:
        best_options = _cell_parameters(param, best).to_options()
    result = GridResult(cells=records, axes=axes, best_params=dict(best) if best else None,
                        best_rate=best_rate, best_options=best_options, metric=metric,
                        n_folds=k, seed=seed, n_jobs=total, n_tasks=n_tasks,
                        folds=folds, waves=waves, seconds=time.perf_counter() - t0)

    failed = {}
    for ci, msg in errors.items():
        failed[records[ci]["label"]] = msg
    if crash is not None:
        for ci in todo:
            if records[ci]["rate"] is None and records[ci]["label"] not in failed:
                failed[records[ci]["label"]] = (f"not finished when the run failed "
                                                f"({type(crash).__name__}: {crash})")
    if failed:
        kept = sum(1 for r in records if r["rate"] is not None)
        where = f"; the {kept} finished cells are in {out}" if out is not None else ""
        # the first few, so that a message about a whole failed grid stays short
        shown = list(failed.items())[:_MAX_FAILURES_SHOWN]
        names = "; ".join(f"{label}: {msg}" for label, msg in shown)
        if len(failed) > len(shown):
            names += f"; and {len(failed) - len(shown)} more"
        raise GridSearchError(f"grid_search: {len(failed)} of {len(records)} cells failed"
                              f"{where}. Failed: {names}", failed, result) from crash
    if png is not None:
        plot_grid(result, png)
    return result
