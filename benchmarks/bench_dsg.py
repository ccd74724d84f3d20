"""DSG benchmarks (issue 5): Adult error and cost, Fashion-MNIST softmax against
scikit-learn's RBFSampler + SGDClassifier and kernsolve's SMO, and model size
and prediction time as iterations grow.

Sections (each in its own process, so peak memory is the section's own):

* ``adult``: a9a -> a9a.t, hinge loss, one pass, batch 64, feature block 32,
  lambda = 1/(100 n), median-trick bandwidth (the DSG paper's section 7.2
  setting; the paper reports 15.3% test error).  Prints test error, training
  and prediction time, peak resident memory, model file bytes.
* ``fashion``: Fashion-MNIST 10 classes, DSG with the softmax loss; then
  RBFSampler + SGDClassifier(log_loss) with growing numbers of components,
  each timed, so the one that fits in DSG's wall time can be read off; then
  kernsolve's SMO on the first ``--smo-rows`` training rows (the whole set
  takes too long on two cores for a benchmark run).
* ``compare`` (issue 17 item 3): DSG and CDSG with their default step rule
  and ``-g median`` next to RBFSampler(2000) + SGDClassifier on
  Fashion-MNIST and Adult, one table (``--compare-components`` sets the
  peer's sizes; 2000 by default).
* ``size``: a9a trained for 1/8 .. 1 epoch: blocks, model bytes, bytes per
  block (constant: O(t), not O(t d)) and prediction time on a9a.t.

Usage::

    python benchmarks/bench_dsg.py adult
    python benchmarks/bench_dsg.py fashion --epochs 1
    python benchmarks/bench_dsg.py size
    python benchmarks/bench_dsg.py compare
    python benchmarks/bench_dsg.py all --threads 2
"""
import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

from benchlib import DATA, REPO


def _data(name):
    return os.path.join(DATA, name + ".xz")


def _peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _read(name, n_features=None):
    import kernsolve
    return kernsolve.read_problem(_data(name), n_features=n_features)


def adult(args):
    import numpy as np
    import kernsolve
    y, X = _read("a9a")
    yt, Xt = _read("a9a.t", n_features=X.shape[1])
    lam = 1.0 / (100 * X.shape[0])
    for solver in args.solvers:
        errors = []
        for seed in args.seeds:
            options = (f"-q --solver {solver} --loss hinge -g median --batch-size 64 "
                       f"--feature-block 32 --lambda {lam:.17g} --epochs 1 --seed {seed} "
                       f"{args.dsg_options}")
            t = time.perf_counter()
            model = kernsolve.train(y, X, options, n_jobs=args.threads)
            train_s = time.perf_counter() - t
            t = time.perf_counter()
            _, (acc, _, _), _ = kernsolve.predict(yt, Xt, model, f"-q --threads {args.threads}")
            predict_s = time.perf_counter() - t
            with tempfile.TemporaryDirectory() as d:
                path = os.path.join(d, "a9a.dsg")
                kernsolve.save_model(path, model)
                size = os.path.getsize(path)
            errors.append(100 - acc)
            print(f"adult: '{options}' threads {args.threads}: test error {100 - acc:.2f}%, "
                  f"{model.n_blocks} blocks ({model.n_random_features} features), gamma "
                  f"{model.gamma:.4g}, train {train_s:.1f} s, predict {Xt.shape[0]} rows "
                  f"{predict_s:.1f} s, model file {size / 1024:.0f} KiB", flush=True)
        print(f"adult: {solver}: median test error over seeds {args.seeds}: "
              f"{np.median(errors):.2f}% (paper, DSG: 15.3%; target <= 15.5%)")
    print(f"adult: peak RSS of this process {_peak_mb():.0f} MB (data, models, caches)")


def fashion(args):
    import numpy as np
    import kernsolve
    y, X = _read("fashion-mnist.scale")
    yt, Xt = _read("fashion-mnist.scale.t", n_features=X.shape[1])
    if args.rows:
        y, X = y[:args.rows], X[:args.rows]
    print(f"fashion: {X.shape[0]} training rows, {Xt.shape[0]} test rows, threads {args.threads}")
    dsg_train = 0.0
    for solver in args.solvers:
        options = (f"-q --solver {solver} --loss softmax -g median --batch-size {args.batch} "
                   f"--feature-block {args.block} --epochs {args.epochs} {args.dsg_options}")
        t = time.perf_counter()
        model = kernsolve.train(y, X, options, n_jobs=args.threads)
        seconds = time.perf_counter() - t
        dsg_train = max(dsg_train, seconds)
        t = time.perf_counter()
        pred = model.predict(Xt, n_jobs=args.threads)
        dsg_pred = time.perf_counter() - t
        print(f"fashion: '{options}': test error {100 * np.mean(pred != yt):.2f}%, train "
              f"{seconds:.1f} s, predict {dsg_pred:.1f} s, {model.n_random_features} random "
              f"features, gamma {model.gamma:.4g}", flush=True)
    try:
        from sklearn.kernel_approximation import RBFSampler
        from sklearn.linear_model import SGDClassifier
        from threadpoolctl import threadpool_limits
    except ImportError:
        print("fashion: scikit-learn not installed; peer skipped")
        return
    Xd, Xtd = X.toarray(), Xt.toarray()
    with threadpool_limits(args.threads):
        for n_components in args.components:
            t = time.perf_counter()
            sampler = RBFSampler(gamma=model.gamma, n_components=n_components, random_state=0)
            Z = sampler.fit_transform(Xd)
            clf = SGDClassifier(loss="log_loss", alpha=1.0 / X.shape[0], max_iter=args.sgd_epochs,
                                tol=None, random_state=0).fit(Z, y)
            fit_s = time.perf_counter() - t
            err = 100 * np.mean(clf.predict(sampler.transform(Xtd)) != yt)
            within = "within" if fit_s <= dsg_train else "over"
            print(f"fashion: RBFSampler({n_components}) + SGDClassifier(log_loss, "
                  f"{args.sgd_epochs} epochs): test error {err:.2f}%, fit {fit_s:.1f} s "
                  f"({within} DSG's {dsg_train:.1f} s)")
    if args.smo_rows:
        n = min(args.smo_rows, X.shape[0])
        t = time.perf_counter()
        smo = kernsolve.train(y[:n], X[:n], f"-q -c 10 -g {model.gamma:.6g}", n_jobs=args.threads)
        smo_s = time.perf_counter() - t
        err = 100 * np.mean(kernsolve.predict(yt, Xt, smo, "-q")[0] != yt)
        print(f"fashion: kernsolve SMO on the first {n} rows (-c 10, same gamma): test error "
              f"{err:.2f}%, train {smo_s:.1f} s")


def _peer(X, y, Xt, yt, gamma, n_components, threads, sgd_epochs=5, alpha=None):
    """scikit-learn's RBFSampler + SGDClassifier(log_loss): test error, fit seconds."""
    import numpy as np
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.linear_model import SGDClassifier
    from threadpoolctl import threadpool_limits
    Xd = X.toarray() if hasattr(X, "toarray") else X
    Xtd = Xt.toarray() if hasattr(Xt, "toarray") else Xt
    with threadpool_limits(threads):
        t = time.perf_counter()
        sampler = RBFSampler(gamma=gamma, n_components=n_components, random_state=0)
        Z = sampler.fit_transform(Xd)
        clf = SGDClassifier(loss="log_loss", alpha=alpha or 1.0 / X.shape[0],
                            max_iter=sgd_epochs, tol=None, random_state=0).fit(Z, y)
        fit_s = time.perf_counter() - t
        err = 100 * np.mean(clf.predict(sampler.transform(Xtd)) != yt)
    return err, fit_s


def compare(args):
    """Issue 17 item 3: DSG/CDSG with the default step rule (the fitted step)
    and -g median against RBFSampler(2000) + SGDClassifier, side by side, on
    Fashion-MNIST and Adult; one table."""
    import numpy as np
    import kernsolve
    rows = []
    sets = {"fashion": ("fashion-mnist.scale", "--loss softmax "
                        f"--batch-size {args.compare_batch} --feature-block {args.block}"),
            "adult": ("a9a", "--loss hinge --batch-size 64 --feature-block 32")}
    for name in args.sets:
        stem, extra = sets[name]
        y, X = _read(stem)
        yt, Xt = _read(stem + ".t", n_features=X.shape[1])
        for solver in args.solvers:
            options = f"-q --solver {solver} -g median {extra} {args.compare_options}"
            t = time.perf_counter()
            model = kernsolve.train(y, X, options, n_jobs=args.threads)
            seconds = time.perf_counter() - t
            err = 100 * np.mean(model.predict(Xt, n_jobs=args.threads) != yt)
            rows.append((name, options[3:].strip(), err, seconds,
                         model.n_random_features))
            print(f"compare: {rows[-1]}", flush=True)
        try:
            for n_components in args.compare_components:
                err, fit_s = _peer(X, y, Xt, yt, model.gamma, n_components, args.threads)
                rows.append((name, f"RBFSampler({n_components}) + SGDClassifier(log_loss, "
                             "5 epochs)", err, fit_s, n_components))
                print(f"compare: {rows[-1]}", flush=True)
        except ImportError:
            print("compare: scikit-learn not installed; peer skipped")
    print(f"\n| data | method | test error | train s ({args.threads} threads) | random features |")
    print("|---|---|---|---|---|")
    for name, method, err, seconds, feats in rows:
        print(f"| {name} | {method} | {err:.2f}% | {seconds:.1f} | {feats} |")


def size(args):
    import kernsolve
    y, X = _read("a9a")
    yt, Xt = _read("a9a.t", n_features=X.shape[1])
    print("epochs  blocks  model_bytes  bytes_per_block  predict_s (a9a.t)")
    for epochs in (0.125, 0.25, 0.5, 1.0):
        model = kernsolve.train(y, X, f"-q --solver dsg -g median --epochs {epochs} "
                                f"{args.dsg_options}", n_jobs=args.threads)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.dsg")
            kernsolve.save_model(path, model)
            nbytes = os.path.getsize(path)
        t = time.perf_counter()
        model.decision_function(Xt, n_jobs=args.threads)
        pred = time.perf_counter() - t
        print(f"{epochs:6g}  {model.n_blocks:6d}  {nbytes:11d}  {nbytes / model.n_blocks:15.0f}"
              f"  {pred:9.2f}")


SECTIONS = {"adult": adult, "fashion": fashion, "size": size, "compare": compare}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("section", choices=list(SECTIONS) + ["all"])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--dsg-options", default="",
                   help="extra options for every DSG run (default none: the solvers' "
                        "own defaults)")
    p.add_argument("--solvers", type=lambda s: s.split(","), default=["dsg", "cdsg"],
                   help="adult, fashion: solvers to run")
    p.add_argument("--seeds", type=lambda s: [int(v) for v in s.split(",")], default=[0, 1, 2],
                   help="adult: seeds (the median error is reported)")
    p.add_argument("--rows", type=int, default=0, help="fashion: use the first N training rows")
    p.add_argument("--epochs", type=float, default=1.0, help="fashion: DSG epochs")
    p.add_argument("--batch", type=int, default=256, help="fashion: DSG batch size")
    p.add_argument("--block", type=int, default=128, help="fashion: DSG feature block")
    p.add_argument("--components", type=lambda s: [int(v) for v in s.split(",")],
                   default=[1000, 2000, 4000, 8000], help="fashion: RBFSampler sizes")
    p.add_argument("--sgd-epochs", type=int, default=5)
    p.add_argument("--sets", type=lambda s: s.split(","), default=["fashion", "adult"],
                   help="compare: data sets")
    p.add_argument("--compare-batch", type=int, default=2048,
                   help="compare: DSG batch size on Fashion-MNIST")
    p.add_argument("--compare-components", type=lambda s: [int(v) for v in s.split(",")],
                   default=[2000], help="compare: RBFSampler sizes")
    p.add_argument("--compare-options", default="",
                   help="compare: extra options for the DSG runs (none: the defaults)")
    p.add_argument("--smo-rows", type=int, default=10000)
    args = p.parse_args()
    if args.section == "all":
        for name in SECTIONS:
            subprocess.run([sys.executable, __file__, name] + sys.argv[2:], check=True)
        return
    sys.path.insert(0, REPO)
    SECTIONS[args.section](args)


if __name__ == "__main__":
    main()
