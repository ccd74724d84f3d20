"""Where the examples write their files: an output folder, never examples/ itself;
their figures' matplotlib, when it is installed; and what the figures of
``benchmarks/bench_scale.py``'s JSON rows share (reading the rows, drawing a
method's points, one legend).

Every example that writes files takes ``--out-dir DIR`` (default
``kernsolve-output`` under the current directory, a folder ``.gitignore``
ignores). The examples folder is refused: its files (the scripts, the figure
that doc/dsg.md shows) are tracked and must not be overwritten by a run.
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = "kernsolve-output"


def add_argument(parser):
    """``--out-dir DIR`` on an argparse parser."""
    parser.add_argument("--out-dir", default=DEFAULT,
                        help=f"folder for the output files, created if needed (default: "
                             f"./{DEFAULT}; not the examples folder, whose files are tracked)")


def folder(parser, path):
    """The output folder ``path``, created; a parser error if it is examples/."""
    if os.path.realpath(path) == os.path.realpath(HERE):
        parser.error(f"--out-dir {path}: that is the examples folder, whose files are "
                     "tracked; give another folder")
    os.makedirs(path, exist_ok=True)
    return path


def pyplot(written):
    """``matplotlib.pyplot`` on the Agg backend, or None (after saying that only
    ``written`` was written) when matplotlib is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"wrote {written} (install matplotlib for the figure)")
        return None
    return plt


def bench_rows(paths, key):
    """The successful rows of bench_scale.py's JSON files, the last row of each
    ``key(row)``, in the order they first appear; a SystemExit naming the file
    and line of a row that is not JSON."""
    last = {}
    for path in paths:
        with open(path) as f:
            for k, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                except ValueError as e:
                    raise SystemExit(f"{path}:{k}: not a JSON row of bench_scale.py ({e})")
                if r.get("status") == "ok":
                    last[key(r)] = r
    return list(last.values())


def draw_method(ax, xs, ys, exact, tool, **style):
    """One method's points: an exact solver a star, an iterative method a curve
    through its budgets, kernsolve's solid and the peers' dashed."""
    if exact:
        ax.plot(xs, ys, linestyle="none", marker="*", markersize=12, **style)
    else:
        ax.plot(xs, ys, marker="o", markersize=4,
                linestyle="-" if tool == "kernsolve" else "--", **style)


def legend(fig, axes):
    """One legend under the panels, each label once; the panels laid out above it."""
    handles = {}
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, h)
    # (long labels, such as an extrapolated point's, need fewer to a row to fit)
    per_row = 6 if max(map(len, handles), default=0) <= 24 else 3
    fig.legend(handles.values(), handles.keys(), loc="lower center",
               ncol=min(per_row, len(handles)), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.06 * ((len(handles) + per_row - 1) // per_row), 1, 1))
