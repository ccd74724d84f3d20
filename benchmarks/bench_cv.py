"""Cross-validation and grid-search benchmark (issue 7): kernsolve vs libsvm-official.

Runs, one after the other on the same machine, each in its own Python process:

1. 5-fold CV on a9a, ``-c 1 -g 0.05``, SMO:
   kernsolve ``cross_validation(n_jobs=1)``, ``cross_validation(n_jobs=2)``,
   and libsvm-official's ``svm_train(y, x, '-v 5 -c 1 -g 0.05 -q')`` with
   ``OMP_NUM_THREADS`` set before the process starts (1 and 2 by default,
   ``--libsvm-threads``; its OpenMP loops spin-wait, so on a busy machine the
   2-thread run can be much slower than the 1-thread one).
2. A 3x3 grid on a9a (``--grid-rows N``: its first N rows): log2c in {-1, 0, 1}, log2g in {-6, -5, -4}, 5 folds,
   ``kernsolve.grid_search(n_jobs=2)`` with SMO, and with SBP
   (``--solver sbp``) when ``kernsolve.train`` accepts that solver.

3. ``--only vs-grid-py`` (issue 35): the whole default grid (110 cells, 5
   folds, ``--libsvm-folds`` so the rates are comparable) on each of
   ``--datasets`` (``issue35``: issue 35's four problems, svmguide1, a9a[:5000],
   ijcnn1[:10000] and Fashion-MNIST's class 8 against the rest [:5000] as
   ``fashion8:5000``; default heart_scale, svmguide1 scaled by ``svm-scale -l -1
   -u 1``, a9a[:2000]), at 1 and 2 workers (``--workers``): ``kernsolve-grid``
   (one kernel matrix per gamma shared by its fits), ``kernsolve-grid --cold``
   (every fit computes its own kernel values), ``kernsolve-grid --warm`` (shared
   kernel and alpha seeding along C), ``kernsolve-grid --halving`` (successive
   halving over the cells: its best line may name another cell, within 0.5
   points on the test problems) and LIBSVM's ``grid.py``
   (Debian's ``svm-grid`` with ``/usr/bin/svm-train``; its worker count is
   the constant ``nr_local_worker``, set in a copy of the script), and
   ``grid.py-ks``: the same ``grid.py`` driving ``kernsolve-train`` (with
   ``--libsvm-folds --threads 1``) in place of ``svm-train``, the drop-in path
   of item 4 (a process per cell; not in the default ``--tools``).  Each run is
   a process of its own (``benchlib.run_process``: wall, CPU, peak RSS); the
   best lines are compared and a difference is reported.

Measured per run: wall time, CPU time of the process (user+sys, including
its threads; steadier than wall time on a shared machine), CV accuracy, and
for the grid the chosen cell.  The machine's load average is recorded at the
start and end of each run, since other work on the machine slows every run.

Usage::

    python benchmarks/bench_cv.py                     # full a9a (many minutes)
    python benchmarks/bench_cv.py --quick             # 3000-row slice, seconds
    python benchmarks/bench_cv.py --json out.json --markdown out.md
    python benchmarks/bench_cv.py --only cv           # or: grid
    python benchmarks/bench_cv.py --only vs-grid-py --markdown grid.md
    python benchmarks/bench_cv.py --only vs-grid-py --datasets svmguide1,a9a:5000 --workers 1
    python benchmarks/bench_cv.py --only vs-grid-py --datasets issue35 --workers 1,2
    python benchmarks/bench_cv.py --only vs-grid-py --datasets issue35 --tools warm,grid.py

(``grid.py`` on ``fashion8:5000``, each cell a ``svm-train -v 5`` that computes
784-feature kernel rows, runs far beyond the default ``--timeout`` of 1500 s at
one worker: give issue 35's runs a larger one, e.g. ``--timeout 14400``.)

``--kernsolve-path DIR`` imports kernsolve from DIR (a frozen copy of the
build, so editing the tree during a long run does not change what is measured).
"""
import argparse
import json
import lzma
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time

from benchlib import DATA, load_average, run_process, tree_env

CV_OPTIONS = "-c 1 -g 0.05"
GRID_PY = "/usr/bin/svm-grid"          # Debian's libsvm-tools: LIBSVM's tools/grid.py
SVM_TRAIN = "/usr/bin/svm-train"
SVM_SCALE = "/usr/bin/svm-scale"
VS_GRID_PY_DATASETS = "heart_scale,svmguide1,a9a:2000"
SCALED = {"svmguide1"}                 # scaled to [-1, 1] first, as the practical guide does
# one class against the rest: name -> (shared file, the class labelled +1; the others -1)
ONE_VS_REST = {"fashion8": ("fashion-mnist.scale", 8)}
# --tools: the short names of the vs-grid-py runs
TOOL_KEYS = {"kernsolve-grid": "shared", "kernsolve-grid --cold": "cold",
             "kernsolve-grid --warm": "warm", "kernsolve-grid --halving": "halving",
             "grid.py": "grid.py", "grid.py + kernsolve-train": "grid.py-ks"}
# issue 35's four problems (item 5)
ISSUE35_DATASETS = "svmguide1,a9a:5000,ijcnn1:10000,fashion8:5000"
GRID_LOG2C = [-1.0, 0.0, 1.0]
GRID_LOG2G = [-6.0, -5.0, -4.0]


def _cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# ---------------------------------------------------------------- workers

def _worker(args):
    out = {"kind": args.worker, "threads": args.threads, "load_start": load_average()}
    if args.worker == "libsvm-cv":
        from libsvm.svmutil import svm_read_problem, svm_train
        y, x = svm_read_problem(args.data)
        c0, t0 = _cpu(), time.perf_counter()
        acc = svm_train(y, x, f"-v 5 {CV_OPTIONS} -q")
        out.update(wall=time.perf_counter() - t0, cpu=_cpu() - c0, accuracy=float(acc))
    else:
        if args.kernsolve_path:
            sys.path.insert(0, args.kernsolve_path)
        import numpy as np
        import kernsolve
        y, X = kernsolve.read_problem(args.data)
        y = np.asarray(y, dtype=np.float64)
        if args.worker == "ks-cv":
            c0, t0 = _cpu(), time.perf_counter()
            r = kernsolve.cross_validation(y, X, CV_OPTIONS + " -q", n_folds=5,
                                           n_jobs=args.threads, verbose=False)
            out.update(wall=time.perf_counter() - t0, cpu=_cpu() - c0,
                       accuracy=r.accuracy,
                       fold_seconds=[f["seconds"] for f in r.fold_results],
                       fold_threads=[f["n_threads"] for f in r.fold_results])
        elif args.worker == "ks-grid":
            base = "-q" + (f" --solver {args.solver}" if args.solver != "smo" else "")
            grid = {"c": [2.0 ** v for v in GRID_LOG2C], "g": [2.0 ** v for v in GRID_LOG2G]}
            c0, t0 = _cpu(), time.perf_counter()
            r = kernsolve.grid_search(y, X, base, grid=grid, n_folds=5, n_jobs=args.threads,
                                      verbose=False, out=args.out_file, resume=False)
            out.update(wall=time.perf_counter() - t0, cpu=_cpu() - c0, n_rows=len(y),
                       best=r.best_params, best_rate=r.best_rate,
                       cells=[[c["label"], c["rate"]] for c in r.cells],
                       solver=args.solver)
        else:
            raise SystemExit(f"unknown worker {args.worker}")
    out["load_end"] = load_average()
    print("RESULT " + json.dumps(out), flush=True)


def _sbp_available(kernsolve_path):
    code = ("import sys; sys.path.insert(0, sys.argv[1]) if sys.argv[1] else None\n"
            "import numpy as np, kernsolve\n"
            "X = np.array([[0.], [1.], [2.], [3.]]); y = np.array([-1., -1., 1., 1.])\n"
            "kernsolve.train(y, X, '-q --solver sbp')\n")
    proc = subprocess.run([sys.executable, "-c", code, kernsolve_path or ""],
                          capture_output=True, text=True)
    return proc.returncode == 0, (proc.stderr.strip().splitlines() or [""])[-1]


# ---------------------------------------------------------------- driver

def _prepare(workdir, n_rows):
    return _prepare_named(workdir, "a9a", n_rows)


def _prepare_named(workdir, name, n_rows):
    path = os.path.join(workdir, name if n_rows is None else f"{name}.{n_rows}")
    with lzma.open(os.path.join(DATA, name + ".xz"), "rb") as src, open(path, "wb") as dst:
        for i, line in enumerate(src):
            if n_rows is not None and i >= n_rows:
                break
            dst.write(line)
    return path


def _run(kind, threads, data, args, solver="smo", out_file=None, timeout=None):
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(threads)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", kind, "--threads",
           str(threads), "--data", data, "--solver", solver]
    if args.kernsolve_path:
        cmd += ["--kernsolve-path", args.kernsolve_path]
    if out_file:
        cmd += ["--out-file", out_file]
    sys.stderr.write(f"running {kind} threads={threads} solver={solver} ...\n")
    sys.stderr.flush()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"kind": kind, "threads": threads, "solver": solver,
                "error": f"not finished after {timeout:.0f} s (stopped)"}
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            res = json.loads(line[7:])
            sys.stderr.write(f"  {json.dumps(res)}\n")
            return res
    return {"kind": kind, "threads": threads, "solver": solver,
            "error": (proc.stderr.strip().splitlines() or ["no output"])[-1]}


# ---------------------------------------------------------------- vs grid.py

def _grid_py_copy(workdir, workers):
    """grid.py with ``nr_local_worker = workers`` (a constant of the script)."""
    with open(GRID_PY) as f:
        text = f.read()
    if "nr_local_worker = 1" not in text:
        raise SystemExit(f"{GRID_PY}: no 'nr_local_worker = 1' line to set the workers")
    path = os.path.join(workdir, f"grid{workers}.py")
    with open(path, "w") as f:
        f.write(text.replace("nr_local_worker = 1", f"nr_local_worker = {workers}", 1))
    return path


def _kernsolve_svm_train(workdir):
    """An executable for grid.py's ``-svmtrain``: kernsolve-train (the tree's,
    through the run's environment) with LIBSVM's folds and one thread per
    grid.py worker, the drop-in path of issue 35 item 4."""
    path = os.path.join(workdir, "kernsolve-svm-train")
    with open(path, "w") as f:
        f.write(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m kernsolve.cli.train "
                "--libsvm-folds --threads 1 \"$@\"\n")
    os.chmod(path, 0o755)
    return path


def _vs_grid_py_data(workdir, spec):
    """The file of ``name`` or ``name:rows`` (svmguide1 scaled by svm-scale;
    ``fashion8``: Fashion-MNIST's class 8 against the rest, ONE_VS_REST)."""
    name, _, rows = spec.partition(":")
    if name in ONE_VS_REST:
        source, positive = ONE_VS_REST[name]
        full = _prepare_named(workdir, source, int(rows) if rows else None)
        path = os.path.join(workdir, f"{name}.{rows}" if rows else name)
        with open(full, "rb") as src, open(path, "wb") as dst:
            for line in src:
                label, _, rest = line.partition(b" ")
                dst.write((b"+1 " if float(label) == positive else b"-1 ") + rest)
        return path
    path = _prepare_named(workdir, name, int(rows) if rows else None)
    if name in SCALED:
        scaled = path + ".scale"
        with open(scaled, "wb") as out:
            subprocess.run([SVM_SCALE, "-l", "-1", "-u", "1", path], stdout=out, check=True)
        path = scaled
    return path


def _vs_grid_py(args, work, record):
    env = tree_env(args.kernsolve_path)
    datasets = ISSUE35_DATASETS if args.datasets == "issue35" else args.datasets
    for spec in datasets.split(","):
        data = _vs_grid_py_data(work, spec)
        for workers in [int(w) for w in args.workers.split(",")]:
            ours = [sys.executable, "-m", "kernsolve.cli.grid", "--libsvm-folds",
                    "--threads", str(workers), "-png", "null"]
            runs = {
                "kernsolve-grid": ours,
                "kernsolve-grid --cold": ours + ["--cold"],
                "kernsolve-grid --warm": ours + ["--warm"],
                "kernsolve-grid --halving": ours + ["--halving"],
                "grid.py": [sys.executable, _grid_py_copy(work, workers),
                            "-svmtrain", SVM_TRAIN, "-gnuplot", "null"],
                "grid.py + kernsolve-train": [sys.executable, _grid_py_copy(work, workers),
                                              "-svmtrain", _kernsolve_svm_train(work),
                                              "-gnuplot", "null"],
            }
            runs = {name: argv for name, argv in runs.items()
                    if TOOL_KEYS[name] in args.tools.split(",")}
            best = {}
            for name, argv in runs.items():
                out = os.path.join(work, f"{os.path.basename(data)}.{workers}.{len(best)}")
                argv = argv + ["-out", out + ".out"]
                sys.stderr.write(f"running {name} on {spec}, {workers} worker(s) ...\n")
                res = run_process(argv + [data], dict(env, OMP_NUM_THREADS=str(workers)),
                                  out + ".log", args.timeout)
                lines = res["log"].strip().splitlines()
                best[name] = lines[-1] if lines and res["returncode"] == 0 else None
                row = {"kind": "vs-grid-py", "tool": name, "data": spec, "threads": workers,
                       "wall": res["wall"], "cpu": res["cpu"], "maxrss_mb": res["maxrss_mb"],
                       "best_line": best[name], "load_end": load_average()}
                if res["returncode"] != 0:
                    row["error"] = (lines or ["no output"])[-1]
                record(row)
            if len(set(best.values())) != 1:
                sys.stderr.write(f"  best lines differ on {spec}: {best}\n")


def markdown(rows, args):
    out = []
    vs = [r for r in rows if r["kind"] == "vs-grid-py"]
    if vs:
        out.append("| data | workers | tool | wall s | CPU s | peak RSS MB | vs grid.py "
                   "| best line (C gamma rate) |")
        out.append("|---|---|---|---|---|---|---|---|")
        for r in vs:
            ref = next((g for g in vs if g["tool"] == "grid.py" and g["data"] == r["data"]
                        and g["threads"] == r["threads"] and "error" not in g), None)
            if "error" in r:
                out.append(f"| {r['data']} | {r['threads']} | {r['tool']} | error: "
                           f"{r['error']} | | | | |")
                continue
            ratio = f"{ref['wall'] / r['wall']:.2f}x" if ref else ""
            out.append(f"| {r['data']} | {r['threads']} | {r['tool']} | {r['wall']:.1f} | "
                       f"{r['cpu']:.1f} | {r['maxrss_mb']:.0f} | {ratio} | "
                       f"{r['best_line']} |")
        out.append("")
    cv = [r for r in rows if r["kind"] in ("ks-cv", "libsvm-cv")]
    if cv:
        base = next((r for r in cv if r["kind"] == "ks-cv" and r.get("threads") == 1
                     and "wall" in r), None)
        out.append("| run | cores | wall s | CPU s | CV accuracy % | vs kernsolve n_jobs=1 "
                   "| load avg start/end |")
        out.append("|---|---|---|---|---|---|---|")
        for r in cv:
            name = ("kernsolve `cross_validation`" if r["kind"] == "ks-cv"
                    else "libsvm-official `svm_train('-v 5')`")
            if "error" in r:
                out.append(f"| {name} | {r['threads']} | error: {r['error']} | | | | |")
                continue
            ratio = f"{base['wall'] / r['wall']:.2f}x" if base else ""
            out.append(f"| {name} | {r['threads']} | {r['wall']:.1f} | {r['cpu']:.1f} | "
                       f"{r['accuracy']:.4f} | {ratio} | "
                       f"{r['load_start']:.1f} / {r['load_end']:.1f} |")
        out.append("")
    grid = [r for r in rows if r["kind"] == "ks-grid"]
    if grid:
        out.append("| 3x3 grid, 5 folds (45 fits) | rows | cores | wall s | CPU s | best cell "
                   "| best CV accuracy % | load avg start/end |")
        out.append("|---|---|---|---|---|---|---|---|")
        for r in grid:
            if "error" in r:
                out.append(f"| {r.get('solver')} | | {r['threads']} | error: {r['error']} "
                           "| | | | |")
                continue
            b = r["best"]
            cell = ", ".join(f"{k}={v:g}" for k, v in b.items()) if b else "-"
            out.append(f"| {r['solver']} | {r['n_rows']} | {r['threads']} | {r['wall']:.1f} | "
                       f"{r['cpu']:.1f} | {cell} | {r['best_rate']:.4f} | "
                       f"{r['load_start']:.1f} / {r['load_end']:.1f} |")
        out.append("")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--solver", default="smo", help=argparse.SUPPRESS)
    ap.add_argument("--out-file", help=argparse.SUPPRESS)
    ap.add_argument("--kernsolve-path", default=None)
    ap.add_argument("--quick", action="store_true", help="3000-row slice of a9a")
    ap.add_argument("--only", choices=["cv", "grid", "vs-grid-py"], default=None,
                    help="one part (vs-grid-py runs only when asked for)")
    ap.add_argument("--datasets", default=VS_GRID_PY_DATASETS,
                    help="vs-grid-py: comma-separated name or name:rows of the shared data "
                         "(fashion8: Fashion-MNIST's class 8 against the rest), or issue35 "
                         f"for {ISSUE35_DATASETS} (default {VS_GRID_PY_DATASETS})")
    ap.add_argument("--tools", default=",".join(v for v in TOOL_KEYS.values()
                                                if v != "grid.py-ks"),
                    help="vs-grid-py: the runs, comma-separated among "
                         f"{','.join(TOOL_KEYS.values())} (default all but grid.py-ks)")
    ap.add_argument("--workers", default="1,2",
                    help="vs-grid-py: comma-separated worker counts (default 1,2)")
    ap.add_argument("--grid-rows", type=int, default=None,
                    help="run the grids on the first N rows of a9a (default: all)")
    ap.add_argument("--libsvm-threads", default="1,2",
                    help="comma-separated OMP_NUM_THREADS values for libsvm-official "
                         "(the first runs with the kernsolve CV runs, the others at the end)")
    ap.add_argument("--timeout", type=float, default=1500.0,
                    help="seconds before a run is stopped and reported as unfinished")
    ap.add_argument("--json", default=None)
    ap.add_argument("--markdown", default=None)
    args = ap.parse_args(argv)
    unknown = set(args.tools.split(",")) - set(TOOL_KEYS.values())
    if unknown:
        ap.error(f"--tools: unknown {', '.join(sorted(unknown))}; "
                 f"expected some of {','.join(TOOL_KEYS.values())}")
    if args.worker:
        return _worker(args)

    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_cv_") as work:
        if args.only != "vs-grid-py":
            data = _prepare(work, 3000 if args.quick else None)
            grid_data = data
            if args.grid_rows and not args.quick:
                grid_data = _prepare(work, args.grid_rows)

        def record(res):
            rows.append(res)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump(rows, f, indent=1)

        if args.only == "vs-grid-py":
            _vs_grid_py(args, work, record)
        if args.only in (None, "cv"):
            for threads in (1, 2):
                record(_run("ks-cv", threads, data, args))
        lib_threads = [int(t) for t in args.libsvm_threads.split(",") if t]
        if args.only in (None, "cv") and lib_threads:
            record(_run("libsvm-cv", lib_threads[0], data, args, timeout=args.timeout))
        if args.only in (None, "grid"):
            record(_run("ks-grid", 2, grid_data, args, "smo", os.path.join(work, "smo.out"),
                        timeout=args.timeout))
            ok, why = _sbp_available(args.kernsolve_path)
            if ok:
                record(_run("ks-grid", 2, grid_data, args, "sbp",
                            os.path.join(work, "sbp.out"), timeout=args.timeout))
            else:
                record({"kind": "ks-grid", "threads": 2, "solver": "sbp",
                        "error": f"--solver sbp not available in train: {why}"})
        # slow on a busy machine (spinning OpenMP threads): last, with a time limit
        if args.only in (None, "cv"):
            for threads in lib_threads[1:]:
                record(_run("libsvm-cv", threads, data, args, timeout=args.timeout))
    text = markdown(rows, args)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
