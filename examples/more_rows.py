"""More rows: test error against training time and peak memory at each training
size, from the JSON rows of ``benchmarks/bench_scale.py`` (issue 33 item 2).

One column per training size (the sizes of the rows, e.g. 120,000, 480,000
and 1,200,000 augmented Fashion-MNIST rows), two panels each: test error
against ``train_s`` (log scale), and against the run's peak RSS.  kernsolve's
methods are solid lines, the peers' dashed, exact solvers stars (as in
``time_to_accuracy.py``).

An exact solver that was not run at a size (SMO, ThunderSVM: hours there)
gets an **extrapolated** time: ``t = a n^b`` fitted by least squares on the
logs of its measured (rows, train_s), every size it ran at, the growth runs
included (``bench_scale.py --train-rows N``: the first N rows of a big file,
the test file whole); drawn as a hollow marker at that time with the error it
reached at the largest size it ran, and labelled so.  Extrapolated times are
never mixed with measured ones: the CSV's ``kind`` column and the printed
tables keep them apart.  Rows with ``train_rows`` (the growth runs) feed the
fit only; the columns are the sizes of the other rows.  A run that read its
rows from the file as it trained (``--stream`` in its call) is a method of
its own (``dsg --stream``), beside the same method's in-memory runs.

Usage::

    python benchmarks/bench_scale.py --datasets fashion --train-file BIG --json more.json ...
    python examples/more_rows.py more.json [other.json ...] [--n-train DATA=N]

``--n-train DATA=N`` gives the training rows of a data name whose rows were
written before bench_scale.py recorded ``n_train``.  Writes ``more_rows.csv``
(every point, measured and extrapolated) and, with matplotlib,
``more_rows.png`` into ``--out-dir`` (default ``./kernsolve-output``; never
into examples/), and prints the tables.
"""
import argparse
import csv
import math
import os

import _output

FIELDS = ["dataset", "n_train", "kind", "method", "tool", "budget_name", "budget", "exact",
          "train_s", "test_error", "maxrss_mb", "error_at_rows", "fit_a", "fit_b"]


def power_law(ns, ts):
    """(a, b) of ``t = a n^b``, least squares on log t against log n."""
    if len(set(ns)) < 2:
        raise ValueError("a power law needs two sizes or more")
    xs, ys = [math.log(n) for n in ns], [math.log(t) for t in ts]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    b = (sum((x - mx) * (y - my) for x, y in zip(xs, ys)) /
         sum((x - mx) ** 2 for x in xs))
    return math.exp(my - b * mx), b


def method_name(row):
    """The method of a row, ``METHOD --stream`` when it read its rows from the
    file as it trained: a curve of its own beside the in-memory runs."""
    streamed = "--stream" in (row.get("call") or "").split()
    return row["method"] + (" --stream" if streamed else "")


def measured(paths, n_train_of):
    """The measured points: the last ok row of each (data, method, budget)."""
    out = []
    for r in _output.bench_rows(paths, lambda r: (r["data"], method_name(r), r.get("budget"))):
        n = r.get("n_train") or n_train_of.get(r["data"])
        if not n:
            raise SystemExit(f"{r['data']}: its rows have no n_train (written before "
                             "bench_scale.py recorded it): give --n-train DATA=N")
        out.append({"dataset": r.get("dataset", r["data"]), "n_train": int(n),
                    "kind": "measured", "growth": bool(r.get("train_rows")),
                    "method": method_name(r), "tool": r.get("tool", ""),
                    "budget_name": r.get("budget_name") or "", "budget": r.get("budget"),
                    "exact": bool(r.get("exact")), "train_s": r["train_s"],
                    "test_error": r["test_error"], "maxrss_mb": r.get("maxrss_mb"),
                    "error_at_rows": int(n), "fit_a": None, "fit_b": None})
    return out


def extrapolated(points):
    """An exact solver's time at each panel size beyond the largest it ran at,
    from the power law of its measured (n_train, train_s)."""
    out = []
    for dataset in dict.fromkeys(p["dataset"] for p in points):
        mine = [p for p in points if p["dataset"] == dataset]
        sizes = sorted({p["n_train"] for p in mine if not p["growth"]})
        for method in dict.fromkeys(p["method"] for p in mine if p["exact"]):
            runs = [p for p in mine if p["method"] == method]
            if len({p["n_train"] for p in runs}) < 2:
                continue
            a, b = power_law([p["n_train"] for p in runs], [p["train_s"] for p in runs])
            largest = max(runs, key=lambda p: (p["n_train"], not p["growth"]))
            for n in sizes:
                if n > largest["n_train"]:
                    out.append(dict(largest, n_train=n, kind="extrapolated", growth=False,
                                    train_s=a * n ** b, maxrss_mb=None,
                                    error_at_rows=largest["n_train"], fit_a=a, fit_b=b))
    return out


def tables(points):
    """The measured points by size, then the extrapolated ones, as markdown."""
    head = ("| data | rows | method | budget | test error % | train s | peak MB |\n"
            "|---|---|---|---|---|---|---|")
    def line(p):
        budget = "exact" if p["budget"] is None else f"{p['budget_name']} {p['budget']:g}"
        rss = "-" if p["maxrss_mb"] is None else f"{p['maxrss_mb']:.0f}"
        rows = f"{p['n_train']}" + (" (growth run)" if p["growth"] else "")
        return (f"| {p['dataset']} | {rows} | {p['method']} | {budget} | "
                f"{p['test_error']:.2f} | {p['train_s']:.1f} | {rss} |")
    key = lambda p: (p["dataset"], p["n_train"], p["method"], p["budget"] or 0)  # noqa: E731
    shown = sorted((p for p in points if p["kind"] == "measured"), key=key)
    text = "Measured:\n\n" + "\n".join([head] + [line(p) for p in shown])
    guessed = sorted((p for p in points if p["kind"] == "extrapolated"), key=key)
    if guessed:
        text += ("\n\nExtrapolated (not measured): t = a n^b fitted to each exact solver's "
                 "measured times; the error is the one it reached at the largest size it "
                 "ran\n\n| data | rows | method | extrapolated train s | a | b | "
                 "error % (at rows) |\n|---|---|---|---|---|---|---|\n")
        text += "\n".join(f"| {p['dataset']} | {p['n_train']} | {p['method']} | "
                          f"{p['train_s']:.0f} | {p['fit_a']:.3g} | {p['fit_b']:.2f} | "
                          f"{p['test_error']:.2f} ({p['error_at_rows']}) |" for p in guessed)
    return text


def _pairs(items, ap):
    out = {}
    for item in items or ():
        data, sep, n = item.rpartition("=")
        if not sep or not n.isdigit() or int(n) < 1:
            ap.error(f"--n-train {item!r}: expected DATA=N with N a number of rows")
        out[data] = int(n)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json", nargs="+", help="JSON rows written by bench_scale.py --json")
    ap.add_argument("--n-train", action="append", metavar="DATA=N",
                    help="the training rows of a data name whose rows lack n_train")
    _output.add_argument(ap)
    args = ap.parse_args(argv)
    n_train_of = _pairs(args.n_train, ap)
    prefix = os.path.join(_output.folder(ap, args.out_dir), "more_rows")
    for path in args.json:
        if not os.path.isfile(path):
            ap.error(f"{path}: no such file")
    points = measured(args.json, n_train_of)
    if not any(not p["growth"] for p in points):
        raise SystemExit(f"{', '.join(args.json)}: no successful run at a full size to plot")
    points += extrapolated(points)
    with open(prefix + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        w.writerows(points)
    print(tables(points))
    plt = _output.pyplot(prefix + ".csv")
    if plt is None:
        return
    from matplotlib.ticker import NullFormatter
    columns = sorted({(p["dataset"], p["n_train"]) for p in points if not p["growth"]})
    methods = sorted({p["method"] for p in points})
    # a method's colour, fixed by name: the dark shade of a tab20 pair, its
    # --stream runs the light shade of the same pair
    bases = sorted({m.removesuffix(" --stream") for m in methods})
    shade = {m: 2 * bases.index(m.removesuffix(" --stream")) + m.endswith(" --stream")
             for m in methods}
    colours = plt.get_cmap("tab20")
    fig, axes = plt.subplots(2, len(columns), figsize=(4.8 * len(columns), 8.0),
                             squeeze=False)
    for k, (dataset, n) in enumerate(columns):
        top, bottom = axes[0][k], axes[1][k]
        for method in methods:
            here = [p for p in points if (p["dataset"], p["n_train"], p["method"]) ==
                    (dataset, n, method) and not p["growth"]]
            runs = sorted((p for p in here if p["kind"] == "measured"),
                          key=lambda p: p["budget"] or 0)
            style = dict(color=colours(shade[method] % 20), label=method)
            if runs:
                errors = [p["test_error"] for p in runs]
                _output.draw_method(top, [p["train_s"] for p in runs], errors,
                                    runs[0]["exact"], runs[0]["tool"], **style)
                _output.draw_method(bottom, [p["maxrss_mb"] / 1024 for p in runs], errors,
                                    runs[0]["exact"], runs[0]["tool"], **style)
            for p in here:
                if p["kind"] == "extrapolated":
                    top.plot([p["train_s"]], [p["test_error"]], linestyle="none",
                             marker="*", markersize=13, markerfacecolor="none",
                             color=colours(shade[method] % 20),
                             label=f"{method} (time extrapolated; error at "
                                   f"{p['error_at_rows']:,} rows)")
        top.set_xscale("log")
        top.xaxis.set_minor_formatter(NullFormatter())     # decades only: readable
        top.set_xlabel("train time (s, log scale)")
        top.set_title(f"{dataset}, {n:,} training rows")
        bottom.set_xlabel("peak RSS (GB)")
        for ax in (top, bottom):
            ax.set_ylabel("test error (%)")
            ax.grid(alpha=0.3, which="both")
    _output.legend(fig, list(axes[0]) + list(axes[1]))
    fig.savefig(prefix + ".png", dpi=110)
    print(f"wrote {prefix}.csv and {prefix}.png")


if __name__ == "__main__":
    main()
