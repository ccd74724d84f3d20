"""SBP vs Pegasos, SDCA, the Perceptron and SMO, in kernel evaluations.

The shape of the SBP paper's Figure 2: test error against the number of kernel
evaluations (log axis), all solvers without a bias, on kernsolve's one kernel
engine (same cache, same counters).  Parameters of the paper's Table 2
(Adult, no bias): RBF sigma^2 = 10 (gamma = 0.05), lambda = 1/n, nu = 0.011.

Every solver runs on the training rows with the test rows held out: their
responses ride along in each kernel row, so the test error is traced at no
extra kernel evaluations; the plotted counts are scaled to training rows
(count * n_train / (n_train + n_test)).  SMO-no-bias (kernsolve.train
``--bias 0``) has no trace: it is one point, where it converged.

Usage::

    python examples/sbp_vs_baselines.py --rows 4000 --epochs 3     # a minute
    python examples/sbp_vs_baselines.py --epochs 10                # full a9a, long
    python examples/sbp_vs_baselines.py --data fashion8            # class 8 vs rest

Writes ``sbp_vs_baselines.csv`` and, when matplotlib is installed,
``sbp_vs_baselines.png`` into ``--out-dir`` (default ``./kernsolve-output``,
ignored by git; never into examples/).
"""
import argparse
import csv
import lzma
import os
import time

import numpy as np
import scipy.sparse as sp

import _output
import kernsolve
from kernsolve.solvers.baselines._baselines import run as run_baseline
from kernsolve.solvers.sbp._sbp import solve as sbp_solve
from kernsolve._kernels import as_canonical

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("KERNSOLVE_SHARED_DATA", os.path.join(HERE, "..", "..", "shared", "data"))
SETTINGS = {
    # name: (train file, test file, n_features, gamma, nu, positive label)
    "a9a": ("a9a", "a9a.t", 123, 0.05, 1.10e-2, 1),
    # the paper's MNIST "8 vs rest" (sigma^2 = 25, nu = 2.21e-4) on Fashion-MNIST
    "fashion8": ("fashion-mnist.scale", "fashion-mnist.scale.t", 784, 0.02, 2.21e-4, 8),
}


def load(name, n_features, rows):
    with lzma.open(os.path.join(DATA, name + ".xz"), "rb") as f:
        if rows:
            lines = []
            for line in f:
                lines.append(line)
                if len(lines) >= rows:
                    break
            import io
            return kernsolve.read_problem(io.BytesIO(b"".join(lines)), n_features=n_features)
        import io
        return kernsolve.read_problem(io.BytesIO(f.read()), n_features=n_features)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", choices=sorted(SETTINGS), default="a9a")
    ap.add_argument("--rows", type=int, default=None, help="first rows of train and test")
    ap.add_argument("--epochs", type=float, default=3.0)
    ap.add_argument("--checks", type=int, default=30, help="trace points per run")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--cache", type=float, default=500.0, help="kernel cache, MB")
    ap.add_argument("--seed", type=int, default=1)
    _output.add_argument(ap)
    args = ap.parse_args(argv)
    prefix = os.path.join(_output.folder(ap, args.out_dir), "sbp_vs_baselines")

    train_name, test_name, n_feat, gamma, nu, positive = SETTINGS[args.data]
    y, X = load(train_name, n_feat, args.rows)
    yt, Xt = load(test_name, n_feat, args.rows)
    y = np.where(y == positive, 1, -1).astype(np.int8)
    yt = np.where(yt == positive, 1, -1).astype(np.int8)
    n, nt = y.size, yt.size
    Xa = as_canonical(sp.vstack([sp.csr_matrix(X), sp.csr_matrix(Xt)]).tocsr())
    ya = np.r_[y, yt]
    threads = kernsolve.resolve_n_jobs(args.threads)
    T = max(1, int(args.epochs * n))
    every = max(1, T // args.checks)
    lam = 1.0 / n
    share = n / (n + nt)
    rows = []

    def record(solver, trace):
        for it, evals, sec, err in trace:
            rows.append((solver, it, evals * share, sec, err / nt))
        last = trace[-1] if trace else None
        if last:
            print(f"{solver:>10}: {last[0]} iterations, {last[1] * share:.3g} kernel "
                  f"evaluations, test error {100 * last[3] / nt:.2f}%", flush=True)

    out = sbp_solve(Xa, 2, 3, gamma, 0.0, ya, n, nu, bias=False, max_iter=T,
                    check_every=every, patience=10 ** 9, seed=args.seed,
                    cache_mb=args.cache, n_threads=threads)
    record("SBP", out["trace"])
    for method in ("pegasos", "sdca", "perceptron"):
        res = run_baseline(Xa, 2, 3, gamma, 0.0, ya, n, method, lam, T,
                           check_every=every, seed=args.seed, cache_mb=args.cache,
                           n_threads=threads)
        record(method.capitalize() if method != "sdca" else "SDCA", res["trace"])
    t0 = time.perf_counter()
    smo = kernsolve.train(y, X, f"-t 2 -g {gamma} -c {1 / (lam * n)} --bias 0 -q "
                                f"-m {args.cache:g}", n_jobs=threads)
    sec = time.perf_counter() - t0
    pred = kernsolve.predict(yt, Xt, smo, "-q")[0]
    err = float(np.mean(pred != yt))
    rows.append(("SMO (no bias)", smo.stats["n_iter"], smo.stats["n_kernel_evals"], sec, err))
    print(f"{'SMO':>10}: {smo.stats['n_iter']} iterations, {smo.stats['n_kernel_evals']:.3g} "
          f"kernel evaluations, test error {100 * err:.2f}%")

    with open(prefix + ".csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["solver", "iterations", "kernel_evals", "seconds", "test_error"])
        w.writerows(rows)
    plt = _output.pyplot(prefix + ".csv")
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    for solver in ("SBP", "Pegasos", "SDCA", "Perceptron"):
        pts = [(r[2], 100 * r[4]) for r in rows if r[0] == solver and r[2] > 0]
        if pts:
            ax.plot(*zip(*pts), label=solver)
    smo_pt = [r for r in rows if r[0] == "SMO (no bias)"][0]
    ax.plot([smo_pt[2]], [100 * smo_pt[4]], "k*", markersize=10, label="SMO (converged)")
    ax.set_xscale("log")
    ax.set_xlabel("kernel evaluations")
    ax.set_ylabel("test error (%)")
    ax.set_title(f"{args.data}: n = {n}, no bias, gamma = {gamma:g}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(prefix + ".png", dpi=120)
    print(f"wrote {prefix}.csv and {prefix}.png")


if __name__ == "__main__":
    main()
