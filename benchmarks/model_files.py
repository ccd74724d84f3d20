"""Record a fixed set of model files, or compare two recorded sets byte for byte.

For refactors that must not change what kernsolve trains: record the set with
the build before the change (``--kernsolve-path`` a frozen copy of it), again
after, and compare. Every solver, every SVM type, every kernel, probability
models, class weights, no-bias, multi-class and regression, through
``kernsolve-train`` (the command users run) with fixed seeds.

Usage::

    python benchmarks/model_files.py record OUT_DIR [--kernsolve-path DIR]
    python benchmarks/model_files.py compare BEFORE_DIR AFTER_DIR

Data: heart_scale (bundled), the first 300 rows of housing_scale
(regression) and the first 400 rows of Fashion-MNIST (10 classes) from
``../shared/data``.
"""
import argparse
import contextlib
import filecmp
import io
import lzma
import os
import sys

from benchlib import DATA

# name -> (data set, options); the same options are run with --threads 1 and 2
# for the solvers whose models must not depend on the thread count.
CONFIGS = {
    "c-rbf": ("heart", "-s 0 -t 2"),
    "c-linear": ("heart", "-s 0 -t 0"),
    "c-poly": ("heart", "-s 0 -t 1 -d 3 -g 0.1 -r 1"),
    "c-sigmoid": ("heart", "-s 0 -t 3 -g 0.01 -r -0.5"),
    "c-laplacian": ("heart", "-s 0 -t 5 -g 0.05"),
    "c-prob": ("heart", "-s 0 -b 1 -c 2"),
    "c-weights": ("heart", "-s 0 -w1 2 -w-1 0.5"),
    "c-nobias": ("heart", "-s 0 --bias 0 -c 3"),
    "c-noshrink": ("heart", "-s 0 -h 0 -e 0.0001"),
    "nu-c": ("heart", "-s 1 -n 0.3"),
    "nu-c-prob": ("heart", "-s 1 -n 0.3 -b 1"),
    "one-class": ("heart", "-s 2 -n 0.2"),
    "one-class-prob": ("heart", "-s 2 -n 0.2 -b 1"),
    "eps-svr": ("housing", "-s 3 -p 0.1 -c 4"),
    "eps-svr-prob": ("housing", "-s 3 -b 1"),
    "nu-svr": ("housing", "-s 4 -n 0.4"),
    "multi-c": ("fashion", "-s 0 -c 4 -g 0.02"),
    "multi-c-prob": ("fashion", "-s 0 -b 1 -g 0.02"),
    "multi-nu": ("fashion", "-s 1 -n 0.1 -g 0.02"),
    "sbp-nu": ("heart", "--solver sbp -n 0.1"),
    "sbp-c": ("heart", "--solver sbp -c 10 --epochs 2"),
    "sbp-nobias": ("heart", "--solver sbp -n 0.2 --bias 0"),
    "sbp-multi": ("fashion", "--solver sbp -n 0.1 -g 0.02"),
    "pegasos": ("heart", "--solver pegasos --epochs 2"),
    "sdca": ("heart", "--solver sdca --epochs 2"),
    "perceptron": ("heart", "--solver perceptron"),
    "sdca-multi": ("fashion", "--solver sdca -g 0.02"),
    "dsg": ("heart", "--solver dsg"),
    "udsg": ("heart", "--solver udsg"),
    "cdsg": ("heart", "--solver cdsg"),
    "dsg-logistic": ("heart", "--solver dsg --loss logistic -g median"),
    "dsg-softmax": ("fashion", "--solver dsg --loss softmax -g 0.02 --epochs 2"),
    "dsg-svr": ("housing", "-s 3 --solver dsg --loss squared"),
    "dsg-novelty": ("heart", "-s 2 --solver dsg"),
    "eigenpro": ("heart", "--solver eigenpro --epochs 3"),
    "kernel-sgd": ("heart", "--solver kernel-sgd --epochs 2"),
    "eigenpro-multi": ("fashion", "--solver eigenpro -g 0.02 --epochs 2"),
    "eigenpro-svr": ("housing", "-s 3 --solver eigenpro --epochs 2"),
    "eigenpro-seed": ("heart", "--solver eigenpro -g 0.1 --seed 3"),
    # the model on p centres (FALKON): exact factors in single precision, and
    # the subsampled preconditioner over float16 blocks (small blocks: -m 1)
    "eigenpro-centers": ("fashion", "--solver eigenpro -g 0.02 --centers 120 --lambda 1e-5 "
                                    "--epochs 8 --precision single"),
    "eigenpro-centers-half": ("fashion", "--solver eigenpro -g 0.02 --centers 150 "
                                         "--subsample 60 --lambda 1e-5 --epochs 12 "
                                         "--precision half -m 1"),
}


def _slice(name, rows, folder):
    path = os.path.join(folder, f"{name}-{rows}")
    if not os.path.exists(path):
        with lzma.open(os.path.join(DATA, name + ".xz"), "rt") as src, open(path, "w") as out:
            for i, line in enumerate(src):
                if i == rows:
                    break
                out.write(line)
    return path


def record(out_dir):
    import kernsolve
    from kernsolve.cli.train import cli
    os.makedirs(out_dir, exist_ok=True)
    data = {"heart": kernsolve.dataset_path("heart_scale"),
            "housing": _slice("housing_scale", 300, out_dir),
            "fashion": _slice("fashion-mnist.scale", 400, out_dir)}
    print(f"kernsolve from {os.path.dirname(kernsolve.__file__)}")
    for name, (dataset, options) in CONFIGS.items():
        for threads in (1, 2):
            model = os.path.join(out_dir, f"{name}.t{threads}.model")
            err = io.StringIO()
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                code = cli(options.split() + ["-q", "--threads", str(threads),
                                              data[dataset], model])
            print(f"{name:>16} t{threads}: {'ok' if code == 0 else 'FAILED ' + err.getvalue().splitlines()[0]}")


def compare(before, after):
    names = sorted(f for f in os.listdir(before) if f.endswith(".model"))
    same = [n for n in names if os.path.exists(os.path.join(after, n))
            and filecmp.cmp(os.path.join(before, n), os.path.join(after, n), shallow=False)]
    for n in names:
        if n not in same:
            print(f"DIFFERENT or missing: {n}")
    print(f"{len(same)} of {len(names)} model files byte-identical")
    return 0 if len(same) == len(names) else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["record", "compare"])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--kernsolve-path", default=None)
    args = ap.parse_args()
    if args.kernsolve_path:
        sys.path.insert(0, args.kernsolve_path)
    if args.mode == "record":
        record(args.dirs[0])
        return 0
    return compare(*args.dirs[:2])


if __name__ == "__main__":
    sys.exit(main())
