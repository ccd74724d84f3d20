"""SMO on binary data with kernel rows from bit sets against the general path.

For each problem (bench_smo.py's, full data, issue 16's options), one process
reads the training file once and then trains, round after round, with the bit
sets (``_kernel.binary_rows(True)``, the default) and without them, timing
``kernsolve.train``; the two must write the same model file byte for byte (the
script checks).  Prints the median solve time of each and the ratio.

``--switch cap`` compares instead the bit-set rows' cache cap (the default,
``_kernel.bits_cache_cap()`` MB a word) with no cap (all of ``-m``).  Every
solve starts from memory the process has given back (the solver trims the
heap when it ends), so each pays its own first touch, as a command does.

Usage::

    python benchmarks/bench_binary_rows.py                       # mushrooms, w8a, a9a; 1 and 2 threads
    python benchmarks/bench_binary_rows.py --configs a9a --threads 1 --rounds 5
    python benchmarks/bench_binary_rows.py --switch cap
"""
import argparse
import hashlib
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_smo  # noqa: E402  (the problems and their data files)
from benchlib import median, prepare  # noqa: E402


def run(cfg, train_path, threads, rounds, workdir, switch="bits"):
    import kernsolve
    from kernsolve._core import _kernel
    # setting True is the default, False the one compared with it
    if switch == "bits":
        setting = _kernel.binary_rows
        values = {True: True, False: False}
    else:
        setting = _kernel.bits_cache_cap
        values = {True: _kernel.bits_cache_cap(), False: float("inf")}
    y, X = kernsolve.read_problem(train_path, n_features=cfg["n_features"])[:2]
    options = (f"-c {cfg['C']} -g {cfg['gamma']} -m {cfg['cache_mb']} -e {bench_smo.EPS} "
               f"-h 1 -q --threads {threads}")
    times = {True: [], False: []}
    digests = set()
    before = setting()
    try:
        for _ in range(rounds):
            for bits in (True, False):
                setting(values[bits])
                start = time.perf_counter()
                model = kernsolve.train(y, X, options)
                times[bits].append(time.perf_counter() - start)
                path = os.path.join(workdir, "model")
                kernsolve.save_model(path, model)
                with open(path, "rb") as f:
                    digests.add(hashlib.sha256(f.read()).hexdigest())
    finally:
        setting(before)
    if len(digests) != 1:
        raise SystemExit(f"{cfg['name']}: --switch {switch} changed the model file")
    return median(times[True]), median(times[False])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default="mushrooms,w8a,a9a")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--switch", choices=["bits", "cap"], default="bits",
                    help="bits: bit sets vs the general path; cap: the bit-set rows' "
                         "cache cap vs all of -m")
    ap.add_argument("--workdir", default=None, help="where the data files are made (kept)")
    args = ap.parse_args()
    by_name = {c["name"]: c for c in bench_smo.CONFIGS}
    workdir = args.workdir or tempfile.mkdtemp(prefix="ks-binary-")
    names = ("bit sets", "general path") if args.switch == "bits" else ("capped", "all of -m")
    print(f"| problem | threads | {names[0]} | {names[1]} | ratio |")
    print(f"|---|---|---|---|---|")
    for name in args.configs.split(","):
        cfg = by_name[name]
        train_path = prepare(workdir, cfg)[0]
        for threads in (int(t) for t in args.threads.split(",")):
            bits, general = run(cfg, train_path, threads, args.rounds, workdir,
                                args.switch)
            print(f"| {name} | {threads} | {bits:.3f} s | {general:.3f} s | "
                  f"{general / bits:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
