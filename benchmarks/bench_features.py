"""DSG's random features on each vector path: one pass of training, timed.

A random feature is a row's sum ``s = sum_j x_j omega_j`` and ``sqrt(2)
cos(s + b)`` (doc/dsg.md); ``kernsolve/_core/_feature_sums.h`` sums 128
features at a time with AVX-512, 32 with AVX2, and ``_cos.h`` takes the
cosine four at a time with AVX2.  Every path gives the same bits, so this
script trains the same model on each (``_simd.vector_paths``, which holds
every compiled module to the path: DSG's other vector code too), round
after round in one process (the data read once), checks that the model files
are byte-identical, and prints the median training time of each path.

Problems: Adult (a9a, the paper's setting: hinge, batch 64, block 32, lambda
``1/(100 n)``, ``-g median``) and Fashion-MNIST (softmax with its defaults,
``-c 10 -g 0.02``, as ``bench_scale.py`` runs it), one pass each.

Usage::

    python benchmarks/bench_features.py                         # both, 1 and 2 threads
    python benchmarks/bench_features.py --problems adult --threads 1 --rounds 5
"""
import argparse
import hashlib
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_dsg import _read  # noqa: E402  (the shared data's .xz files)
from benchlib import median  # noqa: E402

PROBLEMS = {
    "adult": ("a9a", "a9a.t", 123, "--solver dsg --loss hinge -g median --batch-size 64 "
              "--feature-block 32 --lambda {lam} --epochs 1"),
    "fashion": ("fashion-mnist.scale", "fashion-mnist.scale.t", 784,
                "--solver dsg -c 10 -g 0.02 --epochs 1"),
}


def run(name, threads, rounds, workdir):
    import numpy as np
    import kernsolve
    from kernsolve._core._simd import vector_paths
    train, test, n_features, options = PROBLEMS[name]
    y, X = _read(train, n_features)
    yt, Xt = _read(test, n_features)
    options = options.format(lam=f"{1.0 / (100 * X.shape[0]):.17g}")
    paths = [p for p in ("scalar", "avx2", "avx512") if vector_paths(p)]
    times = {p: [] for p in paths}
    digests, errors = set(), set()
    try:
        for _ in range(rounds):
            for path in paths:
                vector_paths(path)
                start = time.perf_counter()
                model = kernsolve.train(y, X, f"-q {options} --threads {threads}")
                times[path].append(time.perf_counter() - start)
                file = os.path.join(workdir, "model")
                kernsolve.save_model(file, model)
                with open(file, "rb") as f:
                    digests.add(hashlib.sha256(f.read()).hexdigest())
                errors.add(100 * float(np.mean(model.predict(Xt) != yt)))
    finally:
        vector_paths(None)
    if len(digests) != 1:
        raise SystemExit(f"{name}: the vector paths trained different model files")
    base = median(times["scalar"])
    cells = [f"{p} {median(times[p]):.2f} s ({base / median(times[p]):.2f}x)"
             for p in paths]
    print(f"| {name} | {threads} | {errors.pop():.2f}% | " + " | ".join(cells) + " |",
          flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problems", default="adult,fashion")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print("| problem | threads | test error | median train time per path (speed-up "
          "over the scalar path) |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as workdir:
        for name in args.problems.split(","):
            for threads in (int(t) for t in args.threads.split(",")):
                run(name, threads, args.rounds, workdir)


if __name__ == "__main__":
    main()
