"""Streaming beyond memory (issue 17 item 4): ``kernsolve-train --stream`` on a
file larger than the memory it may use, and the models it gives on a prefix.

Sections:

* ``big``: ``kernsolve-train --solver S --stream`` on BIG (made by
  ``make_big_file.py``, >= 2 GB) for S in ``--solvers``, each in its own
  child process: wall time and peak RSS (the child's ``VmHWM``, which
  /usr/bin/time -v reports as "Maximum resident set size").
* ``prefix``: the first ``--prefix-rows`` rows of BIG (written to a scratch
  file), for each solver:

  1. in-memory ``kernsolve-train`` and ``--stream`` with one window: the two
     model files, byte for byte;
  2. ``--stream`` with windows of ``--small-chunk-mb`` (several windows) and
     the in-memory training over the same chunks -- the prefix read whole
     with ``read_problem``, cut into the windows' rows, each chunk one
     ``DSGTrainer.fit_rows`` call as ``partial_fit`` makes it -- saved with
     ``save_model``: the two model files, byte for byte;
  3. the peak RSS of the in-memory run and of the small-window run.

Usage::

    python benchmarks/make_big_file.py fashion-mnist.scale /tmp/stream/big
    python benchmarks/bench_stream.py big /tmp/stream/big --solvers dsg cdsg udsg
    python benchmarks/bench_stream.py prefix /tmp/stream/big --prefix-rows 20000

The options of every run are ``COMMON`` plus ``--old-blocks 1`` for UDSG and
``--batch-size``: 4096 for ``big`` (one pass over 473,000 rows in about 130
iterations: DSG's iteration ``t`` evaluates ``t`` blocks, so a pass costs
``O(n^2 / B)`` and batches of 64 would take hours), 64 (the default) for
``prefix`` (313 iterations on 20000 rows).
"""
import argparse
import filecmp
import os
import subprocess
import sys
import tempfile
import time

from benchlib import tree_env

COMMON = ["-q", "-g", "0.02", "--feature-block", "32", "--threads", "2"]
EXTRA = {"udsg": ["--old-blocks", "1"], "cdsg": [], "dsg": []}

# A child that trains with kernsolve-train's entry point and prints its VmHWM.
_CHILD = """
import sys
from kernsolve.cli.train import cli
code = cli(sys.argv[1:])
print([line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM")][0])
sys.exit(code)
"""


def train(args, cwd):
    """Run kernsolve-train ARGS in a child: (seconds, peak RSS in MB)."""
    env = tree_env()
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _CHILD, *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"kernsolve-train {' '.join(map(str, args))}: {proc.stderr}")
    return seconds, int(proc.stdout.split()[-1]) / 1024


def options(solver, m, batch):
    return ["--solver", solver, *EXTRA[solver], *COMMON, "--batch-size", str(batch),
            "-m", str(m)]


def big(a):
    size = os.path.getsize(a.path)
    print(f"{a.path}: {size / 2**30:.2f} GiB; --chunk-mb {a.chunk_mb:g}, -m {a.m:g}, "
          f"--batch-size {a.big_batch}; options {' '.join(COMMON)}")
    print("| solver | wall (s) | peak RSS (MB) | blocks |")
    print("|---|---|---|---|")
    import kernsolve
    with tempfile.TemporaryDirectory(dir=a.scratch) as tmp:
        for solver in a.solvers:
            model = os.path.join(tmp, solver + ".model")
            seconds, peak = train(options(solver, a.m, a.big_batch) +
                                  ["--chunk-mb", str(a.chunk_mb), a.path, model], tmp)
            blocks = kernsolve.load_model(model).n_blocks
            print(f"| {solver} | {seconds:.0f} | {peak:.0f} | {blocks} |", flush=True)


def _chunks(path, chunk, n_features):
    """Rows per window of ``chunk`` bytes (read_problem's windows)."""
    import kernsolve
    size = os.path.getsize(path)
    for offset in range(0, size, chunk):
        y, _ = kernsolve.read_problem(path, n_features=n_features, zero_based=False,
                                      offset=offset, length=min(chunk, size - offset))
        if y.size:
            yield y.size


def in_memory_chunks(path, solver, m, batch, chunk):
    """The model of fit_rows over the windows' rows, cut from the file read whole."""
    import kernsolve
    from kernsolve._params import parse_options
    from kernsolve.solvers.dsg.options import _loss, feature_gamma, hyperparameters
    from kernsolve.solvers.dsg.targets import Targets
    from kernsolve.solvers.dsg.trainer import DSGTrainer
    y, X = kernsolve.read_problem(path)
    param = parse_options(" ".join(options(solver, m, batch)))
    targets = Targets.from_data("classification", None, y)
    targets.loss = _loss(param, targets.labels.size)
    trainer = DSGTrainer(hyperparameters(param, y.size, X.shape[1], targets.loss,
                                         feature_gamma(param, X)), targets)
    start = 0
    for rows in _chunks(path, chunk, X.shape[1]):
        trainer.fit_rows(X[start:start + rows], y[start:start + rows], n_jobs=2)
        start += rows
    assert start == y.size
    return trainer.model()


def prefix(a):
    import kernsolve
    with tempfile.TemporaryDirectory(dir=a.scratch) as tmp:
        head = os.path.join(tmp, "prefix")
        with open(a.path, "rb") as src, open(head, "wb") as out:
            for _ in range(a.prefix_rows):
                out.write(src.readline())
        size = os.path.getsize(head)
        small = max(1, int(a.small_chunk_mb * 2**20))
        n_windows = -(-size // small)
        print(f"prefix: the first {a.prefix_rows} rows of {a.path} ({size / 2**20:.0f} MB); "
              f"one window: --chunk-mb {a.one_chunk_mb:g}; several: --chunk-mb "
              f"{a.small_chunk_mb:g} ({n_windows} windows); -m {a.m:g}, --batch-size "
              f"{a.prefix_batch}; options {' '.join(COMMON)}")
        print("| solver | in memory = --stream, one window | in memory over the windows' "
              "chunks = --stream, several windows | peak RSS in memory / stream (MB) |")
        print("|---|---|---|---|")
        for solver in a.solvers:
            f = {k: os.path.join(tmp, f"{solver}.{k}") for k in ("mem", "one", "many", "ref")}
            opts = options(solver, a.m, a.prefix_batch)
            _, peak_mem = train(opts + [head, f["mem"]], tmp)
            train(opts + ["--chunk-mb", str(a.one_chunk_mb), head, f["one"]], tmp)
            _, peak_many = train(opts +
                                 ["--chunk-mb", str(a.small_chunk_mb), head, f["many"]], tmp)
            kernsolve.save_model(f["ref"], in_memory_chunks(head, solver, a.m, a.prefix_batch,
                                                          small))
            same_one = filecmp.cmp(f["mem"], f["one"], shallow=False)
            same_many = filecmp.cmp(f["ref"], f["many"], shallow=False)
            differs = not filecmp.cmp(f["mem"], f["many"], shallow=False)
            print(f"| {solver} | {'identical' if same_one else 'DIFFERENT'} "
                  f"({os.path.getsize(f['one'])} bytes) | "
                  f"{'identical' if same_many else 'DIFFERENT'} "
                  f"({os.path.getsize(f['many'])} bytes; "
                  f"{'differs from' if differs else 'same as'} the one-window model) | "
                  f"{peak_mem:.0f} / {peak_many:.0f} |", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("section", choices=("big", "prefix"))
    ap.add_argument("path", help="the big file (make_big_file.py)")
    ap.add_argument("--solvers", nargs="+", default=["dsg", "cdsg", "udsg"],
                    choices=sorted(EXTRA))
    ap.add_argument("--chunk-mb", type=float, default=64.0, help="windows of the big runs")
    ap.add_argument("-m", type=float, default=100.0, help="-m of every run (MB)")
    ap.add_argument("--big-batch", type=int, default=4096, help="--batch-size of big")
    ap.add_argument("--prefix-rows", type=int, default=20000)
    ap.add_argument("--prefix-batch", type=int, default=64, help="--batch-size of prefix")
    ap.add_argument("--one-chunk-mb", type=float, default=1024.0)
    ap.add_argument("--small-chunk-mb", type=float, default=16.0)
    ap.add_argument("--scratch", default=None,
                    help="folder for the scratch files (default: the system's temporary one)")
    a = ap.parse_args(argv)
    {"big": big, "prefix": prefix}[a.section](a)


if __name__ == "__main__":
    main()
