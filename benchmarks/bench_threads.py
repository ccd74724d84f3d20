"""Default threads against one thread, on an idle machine and beside a busy process.

Issue 12, item 3: with the default thread count, training, prediction, ``-b 1``
and ``-v 5`` must never take much longer than ``--threads 1`` when another
CPU-bound process runs (a browser on a laptop), and keep the two-thread speed
when the machine is idle.

Each workload is a whole command (``python -m kernsolve.cli.<tool>``, a fresh
process each time, as a user runs it) timed by wall clock.  For each condition
(``idle``; ``busy``: one ``python -c "while True: pass"`` pinned to the last
core, started before and stopped after the condition's runs) the ``--threads 1``
and default runs alternate, ``--reps`` times each; the table gives the medians
and their ratio.  The outputs of the two settings are compared byte for byte
(models, predictions, printed accuracies): threads change the speed only.

``--env KEY=VALUE`` (repeatable) is added to every run's environment, e.g.
``--env OMP_WAIT_POLICY=active`` to measure libgomp's own default instead of
the wait policy kernsolve sets at import (doc/install.md, "Threads").

Usage::

    python benchmarks/bench_threads.py                   # every workload, ~25 minutes
    python benchmarks/bench_threads.py --workloads smo,predict --reps 5
    python benchmarks/bench_threads.py --quick           # slices, ~3 minutes
"""
import argparse
import lzma
import os
import shutil
import subprocess
import sys
import tempfile
import time

from benchlib import DATA, REPO, load_average, median, tree_env

# name: (tool, arguments with {data} files, description); full size / --quick rows
WORKLOADS = {
    "smo": ("train", "-q -c 1 -g 0.05 -m 1000 {a9a} {out}", "SMO, a9a{a9a} -c 1 -g 0.05"),
    "sbp": ("train", "-q --solver sbp -c 100 -g 0.005 {a9a} {out}", "SBP, a9a{a9a} -c 100 -g 0.005"),
    "dsg": ("train", "-q --solver dsg --loss softmax -g median --batch-size 256 "
                     "--feature-block 128 {fm} {out}", "DSG softmax, Fashion-MNIST{fm}"),
    "predict": ("predict", "{a9a_t} {smo_model} {out}", "prediction, a9a.t{a9a_t} with the SMO model"),
    "prob": ("train", "-q -b 1 -c 4 {fm4k} {out}", "-b 1, Fashion-MNIST{fm4k} -c 4"),
    "cv": ("train", "-q -v 5 -c 4 {fm4k}", "-v 5, Fashion-MNIST{fm4k} -c 4"),
}
ROWS = {"full": {"a9a": None, "a9a_t": None, "fm": 20000, "fm4k": 4000},
        "quick": {"a9a": 8000, "a9a_t": 4000, "fm": 4000, "fm4k": 1500}}


def extract(name, rows, folder):
    """The first ``rows`` lines (all if None) of a shared dataset, as a plain file."""
    path = os.path.join(folder, f"{name}.{rows or 'all'}")
    if not os.path.exists(path):
        with lzma.open(os.path.join(DATA, name + ".xz"), "rb") as f, open(path, "wb") as out:
            for k, line in enumerate(f):
                if rows is not None and k >= rows:
                    break
                out.write(line)
    return path


def run(tool, args, threads, env, cwd):
    """Wall seconds and stdout of one command."""
    cmd = [sys.executable, "-m", f"kernsolve.cli.{tool}"]
    if threads is not None:
        cmd += ["--threads", str(threads)]
    t = time.perf_counter()
    p = subprocess.run(cmd + args, env=env, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd + args)} failed: {p.stderr.strip()}")
    return seconds, p.stdout


class Competitor:
    """``python -c "while True: pass"`` pinned to the last core."""

    def __enter__(self):
        core = max(os.sched_getaffinity(0))
        self.p = subprocess.Popen([sys.executable, "-c", "while True: pass"],
                                  preexec_fn=lambda: os.sched_setaffinity(0, {core}))
        time.sleep(0.5)
        return self

    def __exit__(self, *exc):
        self.p.kill()
        self.p.wait()


def measure(names, files, reps, env, folder, sizes):
    labels = {k: "" if v is None else f" {v} rows" for k, v in sizes.items()}
    rows = []
    for condition in ("idle", "busy"):
        with (Competitor() if condition == "busy" else _nothing()):
            for name in names:
                tool, template, what = WORKLOADS[name]
                what = what.format(**labels)
                times = {1: [], None: []}
                outputs = {}
                for rep in range(reps):
                    for threads in (1, None):
                        out = os.path.join(folder, f"{name}.{threads}.out")
                        args = template.format(out=out, **files).split()
                        seconds, printed = run(tool, args, threads, env, folder)
                        times[threads].append(seconds)
                        data = open(out, "rb").read() if "{out}" in template else b""
                        outputs.setdefault(threads, (data, printed))
                if outputs[1] != outputs[None]:
                    raise SystemExit(f"{name}: --threads 1 and the default give different outputs")
                one, default = median(times[1]), median(times[None])
                rows.append((condition, what, one, default, default / one))
                print(f"{condition:5s} {what:48s} 1 thread {one:7.2f} s   default "
                      f"{default:7.2f} s   ratio {default / one:.2f}   "
                      f"load {load_average():.2f}", flush=True)
    return rows


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workloads", default=",".join(WORKLOADS),
                   help=f"comma-separated, from {', '.join(WORKLOADS)}")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="small slices (minutes)")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--kernsolve-path", default=REPO,
                   help="the checkout whose kernsolve is measured (built in place)")
    p.add_argument("--markdown", help="also write the table to this file")
    args = p.parse_args(argv)
    names = args.workloads.split(",")
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        p.error(f"unknown workload {unknown[0]!r}")
    env = tree_env(args.kernsolve_path, keep_pythonpath=False)
    env.pop("OMP_NUM_THREADS", None)
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep:
            p.error(f"--env {item!r}: expected KEY=VALUE")
        env[key] = value
    folder = tempfile.mkdtemp(prefix="kernsolve-bench-threads-")
    try:
        rows = ROWS["quick" if args.quick else "full"]
        files = {"a9a": extract("a9a", rows["a9a"], folder),
                 "a9a_t": extract("a9a.t", rows["a9a_t"], folder),
                 "fm": extract("fashion-mnist.scale", rows["fm"], folder),
                 "fm4k": extract("fashion-mnist.scale", rows["fm4k"], folder),
                 "smo_model": os.path.join(folder, "smo.model")}
        if "predict" in names:      # the model the prediction workload reads
            tool, template, _ = WORKLOADS["smo"]
            run(tool, template.format(out=files["smo_model"], **files).split(), None, env, folder)
        print(f"cores {len(os.sched_getaffinity(0))}, load {load_average():.2f}, "
              f"extra environment {args.env or 'none'}", flush=True)
        table = measure(names, files, args.reps, env, folder, rows)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    lines = ["| condition | workload | --threads 1 (s) | default (s) | default / 1 thread |",
             "|---|---|---|---|---|"]
    lines += [f"| {c} | {w} | {a:.2f} | {b:.2f} | {r:.2f} |" for c, w, a, b, r in table]
    print("\n".join(lines))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
