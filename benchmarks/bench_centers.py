"""EigenPro on p centres (``--solver eigenpro --centers P``, FALKON) on Fashion-MNIST.

Trains through ``kernsolve.train`` exactly as ``kernsolve-train`` does (10
classes, one-hot square loss, Gaussian kernel), predicts the test set through
``kernsolve.predict`` and prints the test error, the training wall time and
the process's peak RSS (data included).  ``--smo`` also trains SMO (``-c 10
-g GAMMA -m 1000`` on sparse rows, issue 16's setting and bench_scale.py's) on
the same rows, one after the other, and prints the time ratio and the error
gap; ``--trace`` prints the
test error after every conjugate-gradient iteration (its time not counted;
it keeps K(test, centres), 8 * n_test * p bytes more).

Usage (full size; 2 threads; the settings recommended in doc/eigenpro.md)::

    python benchmarks/bench_centers.py --centers 5000 --lam 1e-6 --epochs 10 \\
        --cache-mb 2500 --threads 2

On a slice (rows drawn by the seed, as bench_eigenpro.py does)::

    nice -n 19 python benchmarks/bench_centers.py --n-train 20000 --centers 4000 --smo

Run each configuration in its own process: the peak RSS is the process's.
"""
import argparse
import resource
import sys
import time

import numpy as np
import scipy.sparse

import kernsolve
from kernsolve.solvers.eigenpro._common import KernelBlocks
from kernsolve.solvers.eigenpro.nystrom import centre_indices
from kernsolve.solvers.eigenpro.train import train_eigenpro

from bench_eigenpro import load     # the same rows (seeded draw) and densified arrays
from benchlib import DATA


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=DATA, help="folder of fashion-mnist.scale{,.t}.xz")
    ap.add_argument("--n-train", type=int, default=60000)
    ap.add_argument("--n-test", type=int, default=10000)
    ap.add_argument("--centers", type=int, default=5000)
    ap.add_argument("--lam", type=float, default=1e-6, help="--lambda, the ridge")
    ap.add_argument("--epochs", type=int, default=10, help="conjugate-gradient iterations")
    ap.add_argument("--precision", choices=("double", "single", "half"), default="double",
                    help="--precision: K(X, centres) in double or single")
    ap.add_argument("--subsample", type=int, default=None,
                    help="q auxiliary rows of the subsampled preconditioner (no p^3)")
    ap.add_argument("--gamma", type=float, default=0.02)
    ap.add_argument("--cache-mb", type=float, default=2500.0,
                    help="-m: MB of K(X, centres) kept between iterations")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--trace", action="store_true", help="test error after each iteration")
    ap.add_argument("--trace-every", type=int, default=1, help="... every this many")
    ap.add_argument("--smo", action="store_true", help="also train SMO -c 10 on the same rows")
    args = ap.parse_args(argv)

    t = time.perf_counter()
    y, X, yt, Xt = load(args)
    print(f"Fashion-MNIST: {y.size} training rows, {yt.size} test rows, gamma {args.gamma}, "
          f"threads {args.threads} (read in {time.perf_counter() - t:.1f} s)", flush=True)
    options = (f"--solver eigenpro --centers {args.centers} --lambda {args.lam:g} "
               f"--epochs {args.epochs} -g {args.gamma:g} -m {args.cache_mb:g} "
               f"--precision {args.precision} "
               f"--threads {args.threads} --seed {args.seed}"
               + (f" --subsample {args.subsample}" if args.subsample else ""))
    callback = None
    if args.trace:
        state = {}

        def callback(it, alpha):
            if it % args.trace_every:
                return
            if "K" not in state:
                S = centre_indices(y.size, args.centers, args.seed)
                kern = KernelBlocks(X[S], 2, args.gamma, 3, 0.0, args.threads)
                state["K"] = kern.block(Xt, kern.X)
                # the outputs are in LIBSVM's label order: first appearance
                first = np.unique(y, return_index=True)[1]
                state["order"] = y[np.sort(first)]
            pred = state["order"][np.argmax(state["K"] @ alpha, axis=1)]
            print(f"  iteration {it:3d}: test error {100 * np.mean(pred != yt):.2f}%",
                  flush=True)
    print("kernsolve.train(y, X, " + repr(options) + ")", flush=True)
    t = time.perf_counter()
    cpu = time.process_time()       # all threads: a load-independent measure of the work
    if callback is None:
        model = kernsolve.train(y, X, options)
    else:       # kernsolve.train's solver entry, with the per-iteration callback
        model = train_eigenpro(y, X, kernsolve.parse_options(options), callback=callback)
    wall = time.perf_counter() - t
    cpu = time.process_time() - cpu
    train_rss = peak_rss_mb()           # before prediction's own blocks
    st = model.stats
    t = time.perf_counter()
    pred, (acc, _, _), _ = kernsolve.predict(yt, Xt, model, "-q")
    pwall = time.perf_counter() - t
    err = 100.0 - acc
    print(f"centers: test error {err:.2f}%  train wall {wall:.1f} s, CPU {cpu:.1f} s (setup "
          f"{st['setup_seconds']:.1f} s, CG {st['seconds'] - st['setup_seconds']:.1f} s of which "
          f"first pass {st['first_pass_seconds']:.1f} s, "
          f"{st['n_iter']} iterations, {st['cached_blocks']}/{st['row_blocks']} row blocks "
          f"cached, relative residual {st['relative_residual']:.3g}"
          + (f", drift {st['drift']:.2g}" if "drift" in st else "")
          + (f", refitted from {st['refitted_from']}" if "refitted_from" in st else "")
          + f")  predict {pwall:.1f} s  "
          f"peak RSS {train_rss:.0f} MB after training, {peak_rss_mb():.0f} MB after prediction",
          flush=True)
    if args.smo:
        t = time.perf_counter()
        # as bench_scale.py runs it: the reader's sparse rows, a 1000 MB cache
        # (on the dense rows with the default 100 MB it takes several times longer)
        smo = kernsolve.train(y, scipy.sparse.csr_matrix(X),
                              f"-c 10 -g {args.gamma:g} -m 1000 -q --threads {args.threads}")
        swall = time.perf_counter() - t
        _, (sacc, _, _), _ = kernsolve.predict(yt, Xt, smo, "-q")
        print(f"smo -c 10: test error {100.0 - sacc:.2f}%  train wall {swall:.1f} s; "
              f"centers / smo time {wall / swall:.3f}, error gap {err - (100.0 - sacc):+.2f} "
              f"points", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
