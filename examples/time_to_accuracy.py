"""Time to accuracy: test error against training time, one panel per data set,
from the JSON rows of ``benchmarks/bench_scale.py`` (issue 17 item 1).

Each iterative method is a curve through its budgets (epochs, centres or
features), each exact solver (SMO, SVC, libsvm-official) one marker;
kernsolve's methods are solid lines, scikit-learn's and libsvm-official's
dashed.  The time axis is logarithmic: ``train_s`` by default (reading the
files excluded), ``--time process`` for the whole child process.  Runs that
failed, timed out or were skipped are left out of the figure (the table of
bench_scale.py lists them).  When a file holds the same (data, method,
budget) more than once, the last row counts.

Usage::

    python benchmarks/bench_scale.py --quick --json scale.json
    python examples/time_to_accuracy.py scale.json
    python examples/time_to_accuracy.py scale.json --time process --out-dir figs

Writes ``time_to_accuracy.csv`` (the plotted points) and, when matplotlib is
installed, ``time_to_accuracy.png`` into ``--out-dir`` (default
``./kernsolve-output``, ignored by git; never into examples/).
"""
import argparse
import csv
import os

import _output

FIELDS = ["data", "method", "tool", "budget_name", "budget", "exact", "seconds",
          "test_error", "maxrss_mb", "threads"]


def points(paths, time_key):
    """The plotted rows: the ok runs, the last of each (data, method, budget)."""
    return [{"data": r["data"], "method": r["method"], "tool": r.get("tool", ""),
             "budget_name": r.get("budget_name") or "", "budget": r.get("budget"),
             "exact": bool(r.get("exact")), "seconds": r[time_key],
             "test_error": r["test_error"], "maxrss_mb": r.get("maxrss_mb"),
             "threads": r.get("threads")}
            for r in _output.bench_rows(paths, lambda r: (r["data"], r["method"],
                                                          r.get("budget")))]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json", nargs="+", help="JSON rows written by bench_scale.py --json")
    ap.add_argument("--time", choices=["train", "process"], default="train",
                    help="train: training wall time (default); process: the whole run")
    _output.add_argument(ap)
    args = ap.parse_args(argv)
    prefix = os.path.join(_output.folder(ap, args.out_dir), "time_to_accuracy")
    for path in args.json:
        if not os.path.isfile(path):
            ap.error(f"{path}: no such file")
    rows = points(args.json, "train_s" if args.time == "train" else "process_s")
    if not rows:
        raise SystemExit(f"{', '.join(args.json)}: no successful run to plot")
    with open(prefix + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    plt = _output.pyplot(prefix + ".csv")
    if plt is None:
        return
    from matplotlib.ticker import NullFormatter
    datasets = list(dict.fromkeys(r["data"] for r in rows))
    methods = sorted({r["method"] for r in rows})      # a method's colour: the same in any file
    colours = plt.get_cmap("tab20")
    fig, axes = plt.subplots(1, len(datasets), figsize=(5.2 * len(datasets), 4.4),
                             squeeze=False)
    for ax, data in zip(axes[0], datasets):
        for i, method in enumerate(methods):
            mine = [r for r in rows if r["data"] == data and r["method"] == method]
            if not mine:
                continue
            mine.sort(key=lambda r: r["budget"] if r["budget"] is not None else 0)
            _output.draw_method(ax, [r["seconds"] for r in mine],
                                [r["test_error"] for r in mine], mine[0]["exact"],
                                mine[0]["tool"], color=colours(i % 20), label=method)
        threads = sorted({r["threads"] for r in rows if r["data"] == data})
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())     # decades only: readable
        ax.set_xlabel(f"{args.time} time (s, log scale)")
        ax.set_ylabel("test error (%)")
        ax.set_title(f"{data} ({', '.join(map(str, threads))} threads)")
        ax.grid(alpha=0.3, which="both")
    _output.legend(fig, axes[0])
    fig.savefig(prefix + ".png", dpi=110)
    print(f"wrote {prefix}.csv and {prefix}.png")


if __name__ == "__main__":
    main()
