"""Two threads over one for SMO (issue 16, item 4), and the spinning team's thresholds.

For each problem (bench_smo.py's, full data), one fresh process per run that
reads the training file and then times ``kernsolve.train`` in-process: one
thread, then two threads with each ``--thresholds`` setting of the solver's
spinning team (``_smo._set_tuning(team_par_min=..., team_row_min_work=...)``:
the shortest loop and row run in parallel while the team's idle threads
spin; doc/smo.md, "Threads and speed").  The settings run interleaved, round
after round; the table gives medians of the solve's wall and the process's CPU
seconds and the ratio one thread / two threads.  Every run of a problem must
give the same iterations, rho and support vectors (the script checks).

The whole process adds Python's start-up and the file reader (serial): time
them with ``/usr/bin/time python -m kernsolve.cli.train ...``.

``--ceiling`` also runs, each round, two one-thread solves at once (two
processes sharing nothing): the most two cores give this work when nothing is
shared, as ``2 x one alone / each of the pair``.  On the 2-core VM that is
well below 2 for some problems (shared caches, memory bandwidth, the
hypervisor), and no two-thread solve can beat it.

Usage::

    python benchmarks/bench_smo_threads.py                        # a9a, ijcnn1, w8a, 3 rounds
    python benchmarks/bench_smo_threads.py --configs ijcnn1 --rounds 5 \\
        --thresholds 4096:40000,2048:8000,1024:8000
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_smo  # noqa: E402  (the problems and their data files)
from benchlib import load_average, median  # noqa: E402

CHILD = r"""
import json, sys, time
sys.path.insert(0, {path!r})
import numpy as np
import kernsolve
from kernsolve.solvers.smo import _smo
y, X = kernsolve.read_problem({train!r}, n_features={d})
if {par_min} > 0:
    _smo._set_tuning(team_par_min={par_min}, team_row_min_work={row_work})
w0, c0 = time.perf_counter(), time.process_time()
m = kernsolve.train(y, X, {opts!r}, n_jobs={threads})
w, c = time.perf_counter() - w0, time.process_time() - c0
print(json.dumps(dict(wall=w, cpu=c, n_iter=m.stats["n_iter"], rho=repr(m.rho[0]),
                      n_sv=int(m.n_sv))))
"""


def start(path, cfg, train, threads, par_min, row_work):
    opts = (f"-q -s 0 -t 2 -c {cfg['C']!r} -g {cfg['gamma']!r} -m {cfg['cache_mb']:g} "
            f"-e {bench_smo.EPS!r} -h 1")
    code = CHILD.format(path=path, train=train, d=cfg["n_features"], opts=opts,
                        threads=threads, par_min=par_min, row_work=row_work)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            text=True, env=dict(os.environ, PYTHONSAFEPATH="1"))


def finish(child):
    out, _ = child.communicate()
    if child.returncode:
        raise SystemExit(f"a child failed with exit code {child.returncode}")
    # the load as the solve ends (the child has just exited)
    return dict(json.loads(out.strip().splitlines()[-1]), load=load_average())


def run(*args):
    return finish(start(*args))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default="a9a,ijcnn1,w8a")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--thresholds", default="4096:40000,2048:8000",
                    help="team_par_min:team_row_min_work settings for two threads "
                         "(4096:40000 is the thresholds without the team)")
    ap.add_argument("--kernsolve-path", default=bench_smo.REPO)
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(),
                                                      "kernsolve-bench-data"))
    ap.add_argument("--ceiling", action="store_true",
                    help="also two one-thread solves at once, each round")
    args = ap.parse_args(argv)
    os.makedirs(args.workdir, exist_ok=True)
    settings = [(1, 0, 0)] + [(2, int(a), float(b)) for a, b in
                              (s.split(":") for s in args.thresholds.split(","))]
    print("| problem | threads | team_par_min : team_row_min_work | solve wall s | CPU s "
          "| one thread / this | load |")
    print("|---|---|---|---|---|---|---|")
    for cfg in bench_smo._configs(args.configs):
        train, _ = bench_smo.prepare(args.workdir, cfg, None)
        got = {s: [] for s in settings}
        pairs = []
        for _ in range(args.rounds):
            for s in settings:
                got[s].append(run(args.kernsolve_path, cfg, train, *s))
            if args.ceiling:
                both = [start(args.kernsolve_path, cfg, train, *settings[0]) for _ in "ab"]
                pairs.extend(finish(c) for c in both)
        answers = {(r["n_iter"], r["rho"], r["n_sv"]) for rs in got.values() for r in rs}
        assert len(answers) == 1, f"{cfg['name']}: different answers {answers}"
        one = median(r["wall"] for r in got[settings[0]])
        for s in settings:
            wall = median(r["wall"] for r in got[s])
            cpu = median(r["cpu"] for r in got[s])
            load = max(r["load"] for r in got[s])
            label = "-" if s[0] == 1 else f"{s[1]} : {s[2]:g}"
            print(f"| {cfg['name']} | {s[0]} | {label} | {wall:.2f} | {cpu:.2f} | "
                  f"{one / wall:.2f}x | {load:.1f} |", flush=True)
        if pairs:
            wall = median(r["wall"] for r in pairs)
            cpu = median(r["cpu"] for r in pairs)
            print(f"| {cfg['name']} | 1 + 1 | two one-thread solves at once (ceiling) | "
                  f"{wall:.2f} each | {cpu:.2f} | {2 * one / wall:.2f}x | "
                  f"{max(r['load'] for r in pairs):.1f} |", flush=True)


if __name__ == "__main__":
    main()
