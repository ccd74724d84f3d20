"""EigenPro on centres in double, single and half precision, with the low
precisions' guard switched off: each model's holdout accuracy (or MSE) and
its drift (``nystrom._drift``: how far the fitted values move, as a share of
the targets' spread, when the kernel is computed in double).  The table
behind ``nystrom.DRIFT_TOL`` and doc/eigenpro.md's "When a low precision does
not hold".

    python benchmarks/bench_precision.py [--centers 300] [--rows 6000]

Each LIBSVM file of ../shared/data: a seeded draw of ``--rows`` rows, the
first two thirds trained, the last third tested; default options otherwise
(gamma 1/d, lambda 1e-6, 10 iterations).
"""
import argparse
import io
import lzma
import os
import sys
import warnings

import numpy as np

import kernsolve
from kernsolve.solvers.eigenpro import nystrom

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import DATA   # noqa: E402

FILES = [("a9a", ""), ("ijcnn1", ""), ("housing_scale", "-s 3"), ("phishing", ""),
         ("w8a", ""), ("australian_scale", ""), ("mushrooms", ""), ("abalone_scale", "-s 3"),
         ("svmguide1", ""), ("german.numer_scale", "")]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--centers", type=int, default=300)
    ap.add_argument("--rows", type=int, default=6000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    nystrom.DRIFT_TOL = np.inf          # measure the low precisions as they are
    nystrom.GROWTH = np.inf
    rng = np.random.default_rng(args.seed)
    print("| file | rows | double | single (drift) | half (drift) |")
    print("|---|---|---|---|---|")
    for name, svm_type in FILES:
        with lzma.open(os.path.join(DATA, name + ".xz"), "rb") as f:
            y, X = kernsolve.read_problem(io.BytesIO(f.read()))
        idx = rng.permutation(y.size)[:args.rows]
        y, X = y[idx], X[idx]
        k = y.size * 2 // 3
        cells = []
        for precision in ("double", "single", "half"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = kernsolve.train(y[:k], X[:k], f"{svm_type} --solver eigenpro "
                                        f"--centers {min(args.centers, k)} "
                                        f"--precision {precision} -q")
            _, (acc, mse, _), _ = kernsolve.predict(y[k:], X[k:], model, "-q")
            score = f"MSE {mse:.2f}" if svm_type else f"{acc:.2f}%"
            drift = model.stats.get("drift")
            if "refitted_from" in model.stats:      # CG broke down (GROWTH is off)
                score += " (broke down, refitted in double)"
            cells.append(score if drift is None else f"{score} ({drift:.2g})")
        print(f"| {name} | {k} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
