"""Benchmark kernsolve.read_problem against scikit-learn's and LIBSVM's readers.

Readers: kernsolve (1 and 2 threads), sklearn.datasets.load_svmlight_file,
libsvm.commonutil.svm_read_problem(path, return_scipy=True).

* Files: the shared fashion-mnist.scale (300 MB) and ijcnn1.t, decompressed
  once into a temporary directory before any timing.
* Time: wall clock in this process, median of --repeat runs; the readers are
  interleaved so machine load drifts hit them alike.  The CPU time of the
  process (user + system) is reported too: for the single-threaded readers
  it is what the wall time would be on an idle machine, so the 1-thread and
  LIBSVM comparisons stay meaningful on a shared, loaded machine.
* Memory: peak resident set (VmHWM, Linux; else ru_maxrss) of a fresh
  subprocess per reader and file, and the part of it the read added over the
  same subprocess's peak after its imports.
* LIBSVM's pure-Python reader takes minutes on fashion-mnist.scale, so by
  default it runs there on the first --libsvm-lines lines only (timed against
  kernsolve on the same slice); on ijcnn1.t it reads the whole file.

Usage::

    PYTHONPATH=. python benchmarks/bench_reader.py [--repeat 3] [--data DIR]

``--runtimes`` measures instead the two runtimes of kernsolve's reader threads
against each other (doc/threads.md, "The reader"): its pool of Python threads
(``KERNSOLVE_READER_RUNTIME=pool``, the default) and an OpenMP ``prange``
under kernsolve's passive wait policy (``KERNSOLVE_READER_RUNTIME=openmp``),
at 1 and 2 threads, on an idle machine and beside one busy process
(``bench_threads.Competitor``: ``while True: pass`` pinned to the last core).
Each read is a fresh process with the variable set, so the runtime is chosen
at import as a user would choose it, and the start of the pool (or of
OpenMP's threads) is timed with the read; the runs are interleaved and the
arrays of every run are compared (a difference stops the script).  Run it on
a quiet machine; on a loaded one the numbers say nothing::

    PYTHONPATH=. python benchmarks/bench_reader.py --runtimes --repeat 5 \
        [--datasets fashion-mnist.scale ijcnn1.t]
"""
import argparse
import gc
import hashlib
import json
import lzma
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

from benchlib import DATA, load_average, load_averages, median, tree_env

HERE = os.path.dirname(os.path.abspath(__file__))
RUNTIMES = ("pool", "openmp")


def _readers():
    from libsvm.commonutil import svm_read_problem
    from sklearn.datasets import load_svmlight_file

    from kernsolve import read_problem
    return {
        "kernsolve n_jobs=1": lambda p: read_problem(p, n_jobs=1),
        "kernsolve n_jobs=2": lambda p: read_problem(p, n_jobs=2),
        "sklearn": lambda p: load_svmlight_file(p),
        "libsvm": lambda p: svm_read_problem(p, return_scipy=True),
    }


def _peak_rss_mb():
    """Peak resident set of this process, in MB.

    VmHWM belongs to the address space, so it starts afresh at exec; ru_maxrss
    would carry over the parent's peak (Linux keeps it across fork + exec).
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(reader, path):
    readers = _readers()            # all imports happen before the baseline
    base = _peak_rss_mb()
    out = readers[reader](path)
    peak = _peak_rss_mb()
    del out
    print(json.dumps({"peak_mb": peak, "added_mb": peak - base}))


def peak_memory(reader, path):
    env = tree_env()
    res = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", reader, path],
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def timed(fn, path):
    """(wall seconds, CPU seconds of this process) of one read."""
    gc.collect()
    c = os.times()
    t = time.perf_counter()
    out = fn(path)
    wall = time.perf_counter() - t
    c2 = os.times()
    del out
    return wall, (c2.user + c2.system) - (c.user + c.system)


def _runtime_child(path, n_jobs):
    """One read in this fresh process: wall and CPU seconds, and a digest of the arrays."""
    from kernsolve import read_problem
    got = []
    wall, cpu = timed(lambda p: got.append(read_problem(p, n_jobs=n_jobs)), path)
    y, X = got.pop()
    digest = hashlib.sha256()
    for a in (y, X.indptr, X.indices, X.data):
        digest.update(a.tobytes())
    print(json.dumps({"wall": wall, "cpu": cpu, "digest": digest.hexdigest()}))


def runtimes(paths, repeat):
    """The reader's pool against OpenMP, idle and busy, 1 and 2 threads (--runtimes)."""
    sys.path.insert(0, HERE)
    from bench_threads import Competitor, _nothing
    print(f"# reader runtimes, median of {repeat} fresh processes, load average at start "
          f"{load_averages()}")
    rows, digests = [], {}
    for condition in ("idle", "busy"):
        with (Competitor() if condition == "busy" else _nothing()):
            for label, path in paths:
                runs = {(r, n): [] for r in RUNTIMES for n in (1, 2)}
                for _ in range(repeat):               # interleaved
                    for runtime, n_jobs in runs:
                        env = tree_env(KERNSOLVE_READER_RUNTIME=runtime)
                        out = subprocess.run(
                            [sys.executable, os.path.abspath(__file__), "--runtime-child", path,
                             str(n_jobs)], capture_output=True, text=True, env=env, check=True)
                        got = json.loads(out.stdout.strip().splitlines()[-1])
                        if digests.setdefault(label, got["digest"]) != got["digest"]:
                            raise SystemExit(f"{label}: {runtime} on {n_jobs} threads read "
                                             "different arrays")
                        runs[runtime, n_jobs].append((got["wall"], got["cpu"]))
                for (runtime, n_jobs), times in runs.items():
                    wall = median(t[0] for t in times)
                    cpu = median(t[1] for t in times)
                    rows.append((condition, label, runtime, n_jobs, wall, cpu))
                    print(f"{condition:5s} {label:24s} {runtime:7s} {n_jobs} thread(s) "
                          f"{wall:8.3f} s wall {cpu:8.3f} s CPU  (load {load_average():.1f})",
                          flush=True)
    print()
    print("| condition | file | runtime | threads | wall (s) | CPU (s) | its 1 thread / this "
          "| pool / this |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    wall_of = {(c, f, r, n): w for c, f, r, n, w, _ in rows}
    for c, f, r, n, wall, cpu in rows:
        print(f"| {c} | {f} | {r} | {n} | {wall:.3f} | {cpu:.3f} | "
              f"{wall_of[c, f, r, 1] / wall:.2f} | {wall_of[c, f, 'pool', n] / wall:.2f} |")


def decompress(src, dst, n_lines=None):
    with lzma.open(src, "rb") as f, open(dst, "wb") as g:
        if n_lines is None:
            shutil.copyfileobj(f, g, 1 << 24)
        else:
            for i, line in enumerate(f):
                if i >= n_lines:
                    break
                g.write(line)
    return dst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=DATA, help="folder with the .xz files")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--datasets", nargs="+", default=["fashion-mnist.scale", "ijcnn1.t"])
    ap.add_argument("--libsvm-lines", type=int, default=5000,
                    help="lines of fashion-mnist.scale for LIBSVM's reader (0 = whole file)")
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--runtimes", action="store_true",
                    help="compare the reader's pool of Python threads with OpenMP "
                         "(KERNSOLVE_READER_RUNTIME), idle and beside a busy process")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--runtime-child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return _child(*args.child)
    if args.runtime_child:
        return _runtime_child(args.runtime_child[0], int(args.runtime_child[1]))

    import kernsolve
    from kernsolve._threads import cpu_count
    tmp = tempfile.mkdtemp(prefix="kernsolve-bench-reader-")
    try:
        if args.runtimes:
            return runtimes([(name, decompress(os.path.join(args.data, name + ".xz"),
                                               os.path.join(tmp, name)))
                             for name in args.datasets], args.repeat)
        readers = _readers()
        print(f"# machine: {cpu_count()} cores, Python {sys.version.split()[0]}, "
              f"kernsolve {kernsolve.__version__}, median of {args.repeat}, "
              f"load average at start {load_averages()}")
        rows = []
        for name in args.datasets:
            path = decompress(os.path.join(args.data, name + ".xz"), os.path.join(tmp, name))
            mb = os.path.getsize(path) / 1e6
            jobs = [(name, path, mb, list(readers))]
            if name.startswith("fashion") and args.libsvm_lines:
                jobs[0][3].remove("libsvm")
                sl = decompress(os.path.join(args.data, name + ".xz"),
                                os.path.join(tmp, f"{name}.head{args.libsvm_lines}"),
                                args.libsvm_lines)
                jobs.append((f"{name} (first {args.libsvm_lines} lines)", sl,
                             os.path.getsize(sl) / 1e6,
                             ["kernsolve n_jobs=1", "kernsolve n_jobs=2", "sklearn", "libsvm"]))
            for label, p, size, names in jobs:
                walls = {r: [] for r in names}
                cpus = {r: [] for r in names}
                for _ in range(args.repeat):      # interleaved repetitions
                    for r in names:
                        w, c = timed(readers[r], p)
                        walls[r].append(w)
                        cpus[r].append(c)
                med = {r: median(t) for r, t in walls.items()}
                cpu = {r: median(t) for r, t in cpus.items()}
                for r in names:
                    mem = None if args.no_memory else peak_memory(r, p)
                    rows.append((label, size, r, med, cpu, mem))
                    m = "" if mem is None else f"  peak {mem['peak_mb']:.0f} MB (+{mem['added_mb']:.0f})"
                    print(f"{label:40s} {r:20s} {med[r]:8.3f} s wall {cpu[r]:8.3f} s CPU{m}"
                          f"  (load {load_average():.1f})", flush=True)
        print()
        print(f"load average at the end: {load_averages()}")
        print()
        print("| file | MB | reader | wall (s) | x sklearn | x libsvm | CPU (s) | x sklearn | x libsvm"
              " | peak RSS MB (added by the read) |")
        print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
        for label, size, r, med, cpu, mem in rows:
            cells = []
            for d in (med, cpu):
                cells.append(f"{d[r]:.3f}")
                cells.append(f"{d['sklearn'] / d[r]:.2f}" if "sklearn" in d else "")
                cells.append(f"{d['libsvm'] / d[r]:.1f}" if "libsvm" in d else "")
            m = "" if mem is None else f"{mem['peak_mb']:.0f} (+{mem['added_mb']:.0f})"
            print(f"| {label} | {size:.1f} | {r} | " + " | ".join(cells) + f" | {m} |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
