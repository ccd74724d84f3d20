"""EigenPro vs plain kernel SGD on Fashion-MNIST: the shape of the paper's Table 3.

10-class one-hot square loss, Gaussian kernel, mini-batch m = 256, EigenPro
with a subsample of M = 4800 and k = 160 eigen-directions (the paper's
settings).  Both solvers run on the same code path (kernel SGD is EigenPro
with k = 0), with the same seed, so they see the same mini-batches.  The
reference is the exact kernel least-squares solution (Cholesky,
``kernsolve.solvers.eigenpro.train.exact_kernel_ridge`` with a tiny ridge ``--lam``) when
n is small enough; each iterative method stops at the first epoch whose test
error reaches the reference, else at ``--max-epochs``, and reports its best
error.  Test errors are measured after every epoch; that time is not counted.

Usage::

    nice -n 10 python benchmarks/bench_eigenpro.py --n-train 5000 --threads 2

The full 60000 rows are heavy on 2 cores: every step computes the kernel
between the batch and all n centres (n * m * 784 multiply-adds).
"""
import argparse
import os
import sys
import time

import numpy as np

import kernsolve
from kernsolve.solvers.eigenpro._common import KernelBlocks
from kernsolve.solvers.eigenpro.train import eigenpro_options, exact_kernel_ridge, fit_eigenpro

from benchlib import DATA


def load(args):
    from kernsolve._random import permutation
    y, X = kernsolve.read_problem(os.path.join(args.data, "fashion-mnist.scale.xz"),
                                  n_features=784, n_jobs=args.threads)
    yt, Xt = kernsolve.read_problem(os.path.join(args.data, "fashion-mnist.scale.t.xz"),
                                    n_features=784, n_jobs=args.threads)
    if args.n_train < y.size:
        rows = np.sort(permutation(y.size, args.seed, "sampling")[:args.n_train])
        y, X = y[rows], X[rows]
    if args.n_test < yt.size:
        yt, Xt = yt[:args.n_test], Xt[:args.n_test]
    X = np.ascontiguousarray(X.toarray())
    Xt = np.ascontiguousarray(Xt.toarray())
    return y.astype(int), X, yt.astype(int), Xt


def one_hot(y, k=10):
    Y = np.zeros((y.size, k))
    Y[np.arange(y.size), y] = 1.0
    return Y


class TestError:
    """Test error of an expansion over the training points, K(test, train) in blocks."""

    def __init__(self, X, Xt, yt, gamma, threads, block=2000):
        self.kern = KernelBlocks(X, 2, gamma, 3, 0.0, threads)
        self.Xt, self.yt, self.block = Xt, yt, block

    def __call__(self, alpha):
        wrong = 0
        for s in range(0, self.yt.size, self.block):
            K = self.kern.block(self.Xt[s:s + self.block], self.kern.X)
            wrong += int(np.count_nonzero(np.argmax(K @ alpha, axis=1)
                                          != self.yt[s:s + self.block]))
        return 100.0 * wrong / self.yt.size


class TestErrorRF:
    """Test error of a model linear in D random features (phi(test) computed once)."""

    def __init__(self, Xt, yt, D, gamma, seed, threads):
        from kernsolve.solvers.eigenpro.features import FeatureMap
        self.Zt = FeatureMap(Xt.shape[1], D, 2, gamma, seed)(Xt)
        self.yt = yt

    def __call__(self, W):
        return 100.0 * np.mean(np.argmax(self.Zt @ W, axis=1) != self.yt)


def run(name, solver, extra, X, Y, error, args, target):
    param = kernsolve.Parameters(solver=solver, extra=dict(extra))
    opts = eigenpro_options(param, X.shape[0])
    trace = []
    t_start, c_start = time.perf_counter(), time.process_time()
    pause, cpu_pause = [0.0], [0.0]

    def callback(epoch, alpha):
        t, c = time.perf_counter(), time.process_time()
        err = error(alpha)
        # (epoch, wall s, test error %, process CPU s), evaluation excluded
        trace.append((epoch, t - t_start - pause[0], err, c - c_start - cpu_pause[0]))
        print(f"  {name:10s} epoch {epoch:3d}  train time {trace[-1][1]:8.1f} s "
              f"(CPU {trace[-1][3]:8.1f} s)  test error {err:6.2f}%", flush=True)
        pause[0] += time.perf_counter() - t
        cpu_pause[0] += time.process_time() - c
        return target is not None and err <= target

    res = fit_eigenpro(X, Y, kernel_type=2, gamma=args.gamma, options=opts, seed=args.seed,
                       n_jobs=args.threads, callback=callback)
    stats = res.stats
    print(f"  {name}: {stats['epochs']} epochs in {stats['seconds']:.1f} s, "
          f"k = {stats['eigen_directions']}, lambda_1 = {stats['lambda_1']:.4g}, "
          f"lambda_k+1 = {stats['lambda_k1']:.4g}, kappa = {stats['kappa']:.4g}, "
          f"step = {stats['step']:.4g}, setup {stats['setup_seconds']:.1f} s", flush=True)
    best = min(trace, key=lambda r: (r[2], r[0]))
    reached = [r for r in trace if target is not None and r[2] <= target]
    stop = reached[0] if reached else best
    return {"name": name, "stop_epoch": stop[0], "stop_time": stop[1], "stop_error": stop[2],
            "stop_cpu": stop[3],
            "reached": bool(reached), "best_error": best[2], "best_epoch": best[0],
            "trace": trace, "stats": stats}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=DATA, help="folder of fashion-mnist.scale{,.t}.xz")
    ap.add_argument("--n-train", type=int, default=60000)
    ap.add_argument("--n-test", type=int, default=10000)
    ap.add_argument("--gamma", type=float, default=0.02,
                    help="Gaussian kernel exp(-gamma ||x-y||^2) (0.02: bandwidth 5)")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--subsample", type=int, default=4800)
    ap.add_argument("--eigen-directions", type=int, default=160)
    ap.add_argument("--max-epochs-sgd", type=int, default=100)
    ap.add_argument("--max-epochs-eigenpro", type=int, default=30)
    ap.add_argument("--lam", type=float, default=1e-8,
                    help="ridge of the exact reference, (K + n lam I) alpha = Y")
    ap.add_argument("--exact-max-n", type=int, default=12000,
                    help="largest n for the exact (Cholesky) reference")
    ap.add_argument("--features", type=int, default=0,
                    help="also run SGD and EigenPro (tau = 1/4) on D random features "
                         "(the paper's 'Random' columns; 0 = skip)")
    ap.add_argument("--no-kernel", action="store_true",
                    help="skip the kernel-expansion columns (with --features: RF only)")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    t = time.perf_counter()
    y, X, yt, Xt = load(args)
    threads = kernsolve.resolve_n_jobs(args.threads)
    print(f"Fashion-MNIST: {y.size} training rows, {yt.size} test rows, gamma {args.gamma}, "
          f"threads {threads} (read in {time.perf_counter() - t:.1f} s)", flush=True)
    Y = one_hot(y)
    error = TestError(X, Xt, yt, args.gamma, args.threads)
    if args.no_kernel and not args.features:
        ap.error("--no-kernel needs --features D")

    target = None
    if y.size <= args.exact_max_n:
        t = time.perf_counter()
        alpha = exact_kernel_ridge(X, Y, gamma=args.gamma, lam=args.lam, n_jobs=args.threads)
        exact_seconds = time.perf_counter() - t
        target = error(alpha)
        print(f"exact kernel least squares (Cholesky, lam {args.lam:g}): test error "
              f"{target:.2f}% in {exact_seconds:.1f} s", flush=True)
    M = min(args.subsample, y.size)
    common = {"batch_size": args.batch_size, "subsample": M}
    results = []
    if not args.no_kernel:
        results.append(run("kernel-sgd", "kernel-sgd", dict(common, epochs=args.max_epochs_sgd),
                           X, Y, error, args, target))
        results.append(run("eigenpro", "eigenpro",
                           dict(common, epochs=args.max_epochs_eigenpro,
                                eigen_directions=args.eigen_directions),
                           X, Y, error, args, target))
    if args.features:
        rf_error = TestErrorRF(Xt, yt, args.features, args.gamma, args.seed, args.threads)
        rf = dict(common, features=args.features)
        results.append(run("rf-sgd", "kernel-sgd", dict(rf, epochs=args.max_epochs_sgd),
                           X, Y, rf_error, args, target))
        results.append(run("rf-eigenpro", "eigenpro",
                           dict(rf, epochs=args.max_epochs_eigenpro, damping=0.25,
                                eigen_directions=args.eigen_directions),
                           X, Y, rf_error, args, target))
    print()
    print("| method | epochs | train time (s) | train CPU (s) | test error | reached exact? "
          "| best error (epoch) |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['name']} | {r['stop_epoch']} | {r['stop_time']:.1f} | {r['stop_cpu']:.1f} | "
              f"{r['stop_error']:.2f}% | {'yes' if r['reached'] else 'no'} | "
              f"{r['best_error']:.2f}% ({r['best_epoch']}) |")
    if target is not None:
        print(f"| exact (Cholesky) | - | {exact_seconds:.1f} | - | {target:.2f}% | - | - |")
    pairs = [(results[i], results[i + 1]) for i in range(0, len(results), 2)]
    for a, b in pairs:
        if a["reached"]:
            print(f"\n{a['name']} / {b['name']} to the exact error: epochs "
                  f"{a['stop_epoch'] / b['stop_epoch']:.1f}x, wall time "
                  f"{a['stop_time'] / b['stop_time']:.1f}x")
        else:
            print(f"\n{a['name']} did not reach the exact error in {a['trace'][-1][0]} epochs "
                  f"({a['trace'][-1][1]:.1f} s): ratios at least "
                  f"{a['trace'][-1][0] / b['stop_epoch']:.1f}x in epochs, "
                  f"{a['trace'][-1][1] / b['stop_time']:.1f}x in wall time")
        # Equal error: the first epoch at which b reaches a's best error.
        level = a["best_error"]
        first = next((r for r in b["trace"] if r[2] <= level), None)
        if first is not None:
            print(f"{b['name']} reaches {a['name']}'s best error {level:.2f}% (epoch "
                  f"{a['best_epoch']}, {a['trace'][a['best_epoch'] - 1][1]:.1f} s) at epoch "
                  f"{first[0]} ({first[1]:.1f} s): {a['best_epoch'] / first[0]:.1f}x fewer "
                  f"epochs, {a['trace'][a['best_epoch'] - 1][1] / first[1]:.1f}x less time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
