"""One dispatch and join of a parallel region: SMO's thread team against OpenMP.

Issue 16, item 4 (doc/smo.md, "Threads and speed"; kernsolve/_core/_team.h).
Each setting runs in a fresh process, because libgomp reads its wait policy
once, when it is loaded:

* ``team spin``: kernsolve's team, idle threads spinning (what ``auto``
  does on an idle machine);
* ``team sleep``: the team whose idle threads sleep at once (``auto`` on a
  busy machine): the master runs whatever no worker has picked up;
* ``omp passive``: OpenMP under the policy kernsolve sets at import;
* ``omp active``: OpenMP with libgomp's spinning threads (``OMP_WAIT_POLICY=active``).

Each process times ``--repeats`` jobs of ``--threads`` chunks, each chunk
``--work`` steps of a dependent chain (about 1 ns a step; 0: an empty job,
which the team's master finishes alone before a worker can claim anything;
2000: about a WSS chunk of SMO on a9a) with ``_smo._dispatch_seconds``;
``serial`` is one thread running all the chunks.  The table gives the median
of ``--rounds`` processes, idle and beside one busy process pinned to the last core
(``bench_threads.Competitor``).  Wall time: say the load when quoting it.

Usage::

    python benchmarks/bench_team.py
    python benchmarks/bench_team.py --threads 2 --repeats 20000 --rounds 3 --kernsolve-path .
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_threads import Competitor, _nothing  # noqa: E402
from benchlib import REPO, load_average, median, tree_env  # noqa: E402

SETTINGS = {
    "serial": ("off", {}),
    "team spin": ("spin", {}),
    "team sleep": ("sleep", {}),
    "omp passive": ("off", {}),
    "omp active": ("off", {"OMP_WAIT_POLICY": "active"}),
}

PROBE = ("import sys\n"
         "from kernsolve.solvers.smo import _smo\n"
         "n, reps, team, work = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])\n"
         "if n < 0:\n"
         "    t = _smo._dispatch_seconds(1, reps, 'off', work * -n)\n"
         "else:\n"
         "    _smo._dispatch_seconds(n, reps // 10, team, work)\n"
         "    t = _smo._dispatch_seconds(n, reps, team, work)\n"
         "print(t[0])\n")


def one(setting, threads, repeats, work, path):
    team, extra = SETTINGS[setting]
    env = tree_env(path, keep_pythonpath=False, PYTHONSAFEPATH="1", **extra)
    for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):
        if name not in extra:
            env.pop(name, None)
    n = -threads if setting == "serial" else threads
    p = subprocess.run([sys.executable, "-c", PROBE, str(n), str(repeats), team, str(work)],
                       env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{setting}: {p.stderr.strip()}")
    return float(p.stdout)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", type=int, default=2000)
    ap.add_argument("--kernsolve-path", default=REPO)
    args = ap.parse_args(argv)
    print(f"threads {args.threads}, work {args.work}, {args.repeats} dispatches a process, median of "
          f"{args.rounds}; load {load_average():.2f}", flush=True)
    rows = []
    for condition in ("idle", "busy"):
        # beside a busy process a join can wait a scheduler time slice: fewer
        repeats = args.repeats if condition == "idle" else max(200, args.repeats // 20)
        with (Competitor() if condition == "busy" else _nothing()):
            times = {s: [] for s in SETTINGS}
            for _ in range(args.rounds):          # interleaved rounds
                for s in SETTINGS:
                    times[s].append(one(s, args.threads, repeats, args.work,
                                        args.kernsolve_path))
            for s in SETTINGS:
                us = 1e6 * median(times[s])
                rows.append((condition, s, us))
                print(f"{condition:5s} {s:12s} {us:9.2f} us per dispatch+join   "
                      f"load {load_average():.2f}", flush=True)
    print("| condition | setting | us per dispatch + join |\n|---|---|---|")
    for condition, s, us in rows:
        print(f"| {condition} | {s} | {us:.2f} |")


if __name__ == "__main__":
    main()
