"""Where SMO's time goes, against the machine's limit (issue 16, item 2).

(a) **Kernel values per second per core** from kernsolve's kernel-row engine
(``KernelRows``, the LRU row cache SMO fetches its rows from; every row
requested here misses the cache, so this is row computation), RBF kernel, for
Fashion-MNIST (784 features) as a dense array and as CSR (what
``kernsolve-train`` gets from a LIBSVM file), and for the sparse a9a and
ijcnn1, with 1 thread and with 2 (per core: the rate divided by the threads).
Beside it, the practical ceiling: the machine's numpy ``float32`` matrix
product (``(256 x d) @ (d x 8192)``, the shape of 256 kernel rows computed as
one blocked product) on one core, converted to the same unit -- one RBF value
on d features is about d multiply-adds, so GEMM FLOP/s / 2 / d values per
second.  For sparse data d is the full feature count (the dense product of
the same rows), so the ratio says how much a dense blocked product would
give, not a sparse one's limit.

(b) **The share of SMO time** in kernel rows, working-set selection, gradient
updates, shrinking and synchronisation, from the solver's phase timers
(``kernsolve.solvers.smo._smo._set_tuning(timers=True)``; doc/smo.md, "Where
the time goes"), for ``kernsolve.train`` on bench_smo.py's problems at 1 and
2 threads.  ``other`` is the solve's time outside the timed phases (the loop's
bookkeeping, the serial/parallel chooser, the visits to Python, rho).  The
kernel-row phase includes the engine's own fork/join; "sync" is the waiting
at the solver's own parallel sweeps.  ``values/s/core`` is the kernel values
the solve computed over the time in kernel rows, per thread.

Usage::

    python benchmarks/profile_smo.py                  # full data (about 15 minutes)
    python benchmarks/profile_smo.py --quick          # slices, a minute
    python benchmarks/profile_smo.py --configs a9a,fmnist8 --threads 1,2 --markdown prof.md
    python benchmarks/profile_smo.py --part rows      # (a) only; --part smo: (b) only
"""
import argparse
import io
import os
import platform
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_smo  # noqa: E402  (the problems and their data files)
from benchlib import load_average  # noqa: E402

# (a): name, bench_smo problem whose training file is read, storage
ROW_CASES = [
    ("Fashion-MNIST", "fmnist8", "dense"),
    ("Fashion-MNIST", "fmnist8", "CSR"),
    ("a9a", "a9a", "CSR"),
    ("ijcnn1", "ijcnn1", "CSR"),
]
GEMM_ROWS, GEMM_COLS = 256, 8192
TIMER_KEYS = ("time_kernel_rows", "time_select", "time_gradient", "time_shrink", "time_sync")


def _load(path, n_features):
    import kernsolve
    return kernsolve.read_problem(path, n_features=n_features)


def gemm_values_per_second(d, threads, seconds=0.5, repeat=3):
    """Best float32 (256 x d) @ (d x 8192) rate on ``threads`` BLAS threads,
    as GEMM FLOP/s and as RBF values per second (FLOP/s / 2 / d)."""
    from threadpoolctl import threadpool_limits     # scikit-learn's dependency
    rng = np.random.default_rng(0)
    A = rng.random((GEMM_ROWS, d), dtype=np.float32)
    B = rng.random((d, GEMM_COLS), dtype=np.float32)
    best = 0.0
    with threadpool_limits(threads):
        A @ B
        for _ in range(repeat):
            k, t0 = 0, time.perf_counter()
            while True:
                A @ B
                k += 1
                dt = time.perf_counter() - t0
                if dt >= seconds:
                    break
            best = max(best, 2.0 * GEMM_ROWS * d * GEMM_COLS * k / dt)
    return best, best / 2.0 / d


def engine_values_per_second(X, gamma, threads, seconds=1.0, repeat=3):
    """Best kernel values per second of KernelRows over X (every row a cache miss)."""
    from kernsolve._kernels import kernel_rows
    n = X.shape[0]
    best = 0.0
    for _ in range(repeat):
        kr = kernel_rows(X, kernel="rbf", gamma=gamma, cache_mb=0, n_jobs=threads)
        step = 7919 if n > 7919 else 1        # a prime: distinct positions, spread out
        k, p, t0 = 0, 0, time.perf_counter()
        while True:
            kr.row(p)
            k += 1
            p = (p + step) % n
            dt = time.perf_counter() - t0
            if dt >= seconds or k >= n:
                break
        assert kr.n_cache_hits == 0
        best = max(best, kr.n_kernel_evals / dt)
    return best


def rows_table(workdir, n_rows, threads, repeat):
    lines = ["| data | n x d | storage | nonzeros/row | engine values/s, 1 thr | "
             + " | ".join(f"{t} thr, per core" for t in threads if t != 1)
             + " | GEMM f32 1 core, GFLOP/s (at d) | ceiling values/s/core | "
               "engine 1 thr / ceiling |",
             "|---|---|---|---|---|" + "---|" * len([t for t in threads if t != 1])
             + "---|---|---|"]
    gemm = {}
    for name, problem, storage in ROW_CASES:
        cfg = next(c for c in bench_smo.CONFIGS if c["name"] == problem)
        train, _ = bench_smo.prepare(workdir, cfg, n_rows)
        _, X = _load(train, cfg["n_features"])
        nnz = X.nnz / X.shape[0]
        if storage == "dense":
            X = np.ascontiguousarray(X.toarray())
        d = cfg["n_features"]
        rates = {t: engine_values_per_second(X, cfg["gamma"], t, repeat=repeat)
                 for t in sorted(set([1] + threads))}
        if d not in gemm:
            gemm[d] = gemm_values_per_second(d, 1, repeat=repeat)
        flops, ceiling = gemm[d]
        per_core = " | ".join(f"{rates[t] / t:.3g}" for t in threads if t != 1)
        lines.append(f"| {name} | {X.shape[0]} x {d} | {storage} | {nnz:.1f} | "
                     f"{rates[1]:.3g} | {per_core}{' | ' if per_core else ''}"
                     f"{flops / 1e9:.1f} | {ceiling:.3g} | {rates[1] / ceiling:.0%} |")
        print(lines[-1], flush=True)
    return "\n".join(lines)


def smo_profile(cfg, train, threads):
    """kernsolve.train with the phase timers on; the model's stats."""
    import kernsolve
    from kernsolve.solvers.smo import _smo
    y, X = _load(train, cfg["n_features"])
    old = _smo._get_tuning()
    _smo._set_tuning(timers=True)
    try:
        t0 = time.perf_counter()
        model = kernsolve.train(y, X, f"-q -s 0 -t 2 -c {cfg['C']!r} -g {cfg['gamma']!r} "
                                      f"-m {cfg['cache_mb']:g} -e {bench_smo.EPS!r} -h 1",
                                n_jobs=threads)
        wall = time.perf_counter() - t0
    finally:
        _smo._set_tuning(**old)
    return model.stats, wall


def smo_table(workdir, configs, n_rows, threads):
    lines = ["| problem | threads | solve s | kernel rows | selection | gradient updates | "
             "shrinking | sync | other | #iter | kernel values | values/s/core in rows | load |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for cfg in configs:
        train, _ = bench_smo.prepare(workdir, cfg, n_rows)
        for t in threads:
            st, _ = smo_profile(cfg, train, t)
            total = st["seconds"]
            parts = [st[k] for k in TIMER_KEYS]
            other = total - sum(parts)
            share = " | ".join(f"{v / total:.1%}" for v in parts + [other])
            rate = st["n_kernel_evals"] / st["time_kernel_rows"] / t \
                if st["time_kernel_rows"] > 0 else float("nan")
            data = cfg["name"] + (f"[:{n_rows}]" if n_rows else "")
            lines.append(f"| {data} `-c {cfg['C']:g} -g {cfg['gamma']:g}` | {t} | {total:.2f} | "
                         f"{share} | {st['n_iter']} | {st['n_kernel_evals']:.4g} | {rate:.3g} | "
                         f"{load_average():.1f} |")
            print(lines[-1], flush=True)
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="the first 3000 rows of each training file (--rows to change)")
    ap.add_argument("--rows", type=int, default=None)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--configs", default=None,
                    help="bench_smo.py's problems for (b), e.g. a9a,ijcnn1,fmnist8 "
                         "(default: issue 16's six)")
    ap.add_argument("--part", choices=["rows", "smo", "both"], default="both")
    ap.add_argument("--repeat", type=int, default=3, help="(a): best of this many")
    ap.add_argument("--markdown", default=None, help="write the tables here")
    ap.add_argument("--kernsolve-path", default=None)
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(),
                                                      "kernsolve-bench-data"))
    args = ap.parse_args(argv)
    # This tree's kernsolve (or --kernsolve-path's), not an installed one.
    sys.path.insert(0, args.kernsolve_path or bench_smo.REPO)
    import kernsolve
    os.makedirs(args.workdir, exist_ok=True)
    n_rows = (args.rows or 3000) if args.quick else None
    threads = [int(t) for t in args.threads.split(",")]
    out = io.StringIO()
    head = (f"# profile_smo: {time.strftime('%Y-%m-%d %H:%M:%S')}, kernsolve "
            f"{kernsolve.__version__} from {os.path.dirname(kernsolve.__file__)}, "
            f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
            f"{'first ' + str(n_rows) + ' rows' if n_rows else 'full data'}; "
            f"load average {load_average():.1f}")
    print(head, flush=True)
    out.write(head + "\n\n")
    if args.part in ("rows", "both"):
        out.write("(a) kernel values per second per core, RBF\n\n"
                  + rows_table(args.workdir, n_rows, threads, args.repeat) + "\n\n")
    if args.part in ("smo", "both"):
        out.write("(b) share of SMO time (kernsolve.train, phase timers)\n\n"
                  + smo_table(args.workdir, bench_smo._configs(args.configs), n_rows, threads)
                  + "\n")
    out.write(f"\nload average at the end {load_average():.1f}\n")
    print()
    print(out.getvalue())
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(out.getvalue())


if __name__ == "__main__":
    main()
