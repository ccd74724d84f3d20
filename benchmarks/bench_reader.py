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

(``--runtimes`` compared the reader's pool of Python threads with an OpenMP
``prange`` under the passive wait policy, session 16: a tie within 5%, so the
pool stayed and the OpenMP version went; the numbers are in
``benchmarks/history/2026-11-28-session16.md``.)
"""
import argparse
import gc
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
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return _child(*args.child)

    import kernsolve
    from kernsolve._threads import cpu_count
    tmp = tempfile.mkdtemp(prefix="kernsolve-bench-reader-")
    try:
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
