"""RBF kernel rows per second through KernelRows, 1 vs 2 threads.

Every requested row misses the cache (cache_mb=0 keeps two rows, and the
positions requested are all distinct), so this measures row computation.
Context: the same rows with scikit-learn's rbf_kernel (numpy/BLAS) one row at
a time, and a blocked rbf_kernel over 256 rows at a time.

Usage:
    PYTHONPATH=. python benchmarks/bench_kernels.py [--dense-rows 4000] [--repeat 3]
"""
import argparse
import io
import lzma
import os
import platform
import time

import numpy as np
from sklearn.datasets import load_svmlight_file
from sklearn.metrics.pairwise import rbf_kernel

from kernsolve._kernels import kernel_matrix, kernel_rows

from benchlib import DATA, load_average


def load(name, n_rows, n_features):
    lines = []
    with lzma.open(os.path.join(DATA, name + ".xz"), "rb") as f:
        for line in f:
            lines.append(line)
            if n_rows and len(lines) >= n_rows:
                break
    X, _ = load_svmlight_file(io.BytesIO(b"".join(lines)), n_features=n_features)
    return X.tocsr()


def rows_per_second(X, n_jobs, n_rows, repeat):
    best = 0.0
    for _ in range(repeat):
        kr = kernel_rows(X, kernel="rbf", cache_mb=0, n_jobs=n_jobs)
        step = max(1, X.shape[0] // n_rows)
        positions = [(k * step) % X.shape[0] for k in range(n_rows)]
        t = time.perf_counter()
        for p in positions:
            kr.row(p)
        dt = time.perf_counter() - t
        assert kr.n_cache_misses == n_rows and kr.n_cache_hits == 0
        best = max(best, n_rows / dt)
    return best


def sklearn_rows_per_second(X, n_rows, block):
    gamma = 1.0 / X.shape[1]
    t = time.perf_counter()
    done = 0
    while done < n_rows:
        rbf_kernel(X[done:done + block], X, gamma=gamma)
        done += block
    return done / (time.perf_counter() - t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dense-rows", type=int, default=4000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load average before: {load_average():.2f}")
    cases = [
        ("fashion-mnist (dense)", load("fashion-mnist.scale", args.dense_rows, 784).toarray(), 400),
        ("a9a (CSR)", load("a9a", None, 123), 1000),
    ]
    print("| data | n x d | KernelRows 1 thr (rows/s) | 2 thr (rows/s) | speed-up "
          "| sklearn rbf_kernel 1 row | sklearn 256-row blocks | kernel_matrix 1 thr / 2 thr (rows/s) |")
    print("|---|---|---|---|---|---|---|---|")
    for name, X, n_rows in cases:
        # interleaved, best of each: the machine may be shared
        r1 = r2 = 0.0
        for _ in range(args.repeat):
            r1 = max(r1, rows_per_second(X, 1, n_rows, 1))
            r2 = max(r2, rows_per_second(X, 2, n_rows, 1))
        s1 = sklearn_rows_per_second(X, min(n_rows, 200), 1)
        sb = sklearn_rows_per_second(X, 1024, 256)
        km = []
        for n_jobs in (1, 2):
            t = time.perf_counter()
            kernel_matrix(X[:512], X, kernel="rbf", n_jobs=n_jobs)
            km.append(512 / (time.perf_counter() - t))
        print(f"| {name} | {X.shape[0]} x {X.shape[1]} | {r1:.0f} | {r2:.0f} | {r2 / r1:.2f}x "
              f"| {s1:.0f} | {sb:.0f} | {km[0]:.0f} / {km[1]:.0f} |", flush=True)


    print(f"load average after: {load_average():.2f}")


if __name__ == "__main__":
    main()
