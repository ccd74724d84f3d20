"""Dask benchmarks (issue 17 item 5): prediction and DSG training on a LocalCluster
against the same work in one process, bits compared.

Sections (each in its own process, so the peak resident memory printed is that
process's own: for the cluster runs, the client's):

* ``predict``: the test file predicted with a model, locally
  (``read_problem`` + ``kernsolve.predict``) and on a LocalCluster
  (``read_partitions`` + ``dask_predict``: the workers read the byte ranges,
  the client never opens the file); labels and decision values compared bit
  for bit.
* ``dsg``: a DSG estimator trained by ``partial_fit`` over the byte windows of
  the training file, locally (window after window) and on the cluster
  (``dask_partial_fit``: each worker reads and fits its window, the estimator
  travels); coefficients compared bit for bit, test error printed.
* ``dsg-parallel`` (issue 34 item 4): on one LocalCluster (2 single-thread
  workers by default), the sequential chain ``dask_partial_fit`` against
  ``dask_parallel_fit`` (one model per partition, one partition per worker by
  default): R passes of the chain against R rounds (each partition seen R
  times), R in ``--rounds``, and ``partial_fit`` in this process over the same
  windows: training wall time (medians of ``--repeats``, the runs
  interleaved) and test error (the same every repeat), on a9a or Fashion-MNIST
  from the shared data (``benchlib``).

Usage::

    python benchmarks/bench_dask.py predict --model /tmp/thr/fm.model --test /tmp/thr/fm.t
    python benchmarks/bench_dask.py dsg --train /tmp/thr/fm --test /tmp/thr/fm.t --solver cdsg
    python benchmarks/bench_dask.py dsg-parallel --set a9a --solver cdsg --rounds 1,2,3
"""
import argparse
import os
import pickle
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cluster(args):
    from distributed import Client, LocalCluster
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=args.threads_per_worker,
                           dashboard_address=None, memory_limit=0)
    return cluster, Client(cluster)


def run_predict(args, out):
    import numpy as np
    import kernsolve
    if args.where == "local":
        t0 = time.perf_counter()
        model = kernsolve.load_model(args.model)
        t1 = time.perf_counter()
        y, X = kernsolve.read_problem(args.test)
        labels, _, values = kernsolve.predict(None, X, model, f"-q --threads {args.threads}")
        t2 = time.perf_counter()
        times = {"load model": t1 - t0, "read + predict": t2 - t1}
    else:
        import dask
        cluster, client = _cluster(args)
        try:
            t0 = time.perf_counter()
            model = kernsolve.load_model(args.model)
            t1 = time.perf_counter()
            parts = kernsolve.read_partitions(args.test, npartitions=args.partitions)
            y, (labels, values) = parts.labels(), kernsolve.dask_predict(
                parts, model, f"--threads {args.threads_per_worker}")
            y, labels, values = dask.compute(y, labels, values)
            t2 = time.perf_counter()
        finally:
            client.close()
            cluster.close()
        times = {"load model": t1 - t0, "scatter + read + predict": t2 - t1}
    err = 100 * float(np.mean(labels != y))
    pickle.dump({"labels": labels, "values": values, "times": times, "error": err,
                 "rss": _rss_mb(), "rows": len(y)}, open(out, "wb"))


def run_dsg(args, out):
    import numpy as np
    import kernsolve
    classes = np.arange(10.0) if args.classes is None else np.array(args.classes)
    est = kernsolve.DSGClassifier(solver=args.solver, loss=args.loss or "softmax",
                                  gamma=0.02 if args.gamma is None else args.gamma,
                                  random_state=0, n_jobs=args.threads_per_worker)
    parts = kernsolve.read_partitions(args.train, npartitions=args.partitions or 8,
                                      n_features=args.n_features,
                                      size=os.path.getsize(args.train))
    if args.where == "local":
        t0 = time.perf_counter()
        for off, length in parts.ranges:
            y, X = kernsolve.read_problem(args.train, n_features=args.n_features,
                                          zero_based=False, offset=off, length=length)
            est.partial_fit(X, y, classes=classes)
            del X, y
        t1 = time.perf_counter()
    else:
        cluster, client = _cluster(args)
        try:
            t0 = time.perf_counter()
            est = kernsolve.dask_partial_fit(est, parts, classes=classes)
            t1 = time.perf_counter()
        finally:
            client.close()
            cluster.close()
    yt, Xt = kernsolve.read_problem(args.test, n_features=args.n_features)
    err = 100 * (1 - est.score(Xt, yt))
    pickle.dump({"coef": est.coef_, "intercept": est.intercept_, "times": {"train": t1 - t0},
                 "error": err, "rss": _rss_mb()}, open(out, "wb"))


# The problems of dsg-parallel: the shared data sets (benchlib.prepare), the
# estimator's settings (the batch and block given: partial_fit would take the
# softmax's from a partition), and C of lambda = 1 / (C n).
PARALLEL_SETS = {
    "a9a": ({"name": "a9a", "train": "a9a", "test": "a9a.t"}, 123,
            {"gamma": "median"}, 100.0),
    "fashion": ({"name": "fashion", "train": "fashion-mnist.scale",
                 "test": "fashion-mnist.scale.t"}, 784,
                {"loss": "softmax", "gamma": 0.02, "batch_size": 2048, "feature_block": 128},
                1.0),
}


def run_dsg_parallel(args):
    import numpy as np
    import benchlib
    import kernsolve
    cfg, width, settings, C = PARALLEL_SETS[args.set]
    train, test = benchlib.prepare(args.work, cfg, args.rows)
    with open(train, "rb") as f:
        n = sum(1 for _ in f)
    settings = dict(settings, solver=args.solver, alpha=1.0 / (C * n), random_state=0,
                    n_jobs=args.threads_per_worker)
    if args.gamma is not None:
        settings["gamma"] = args.gamma
    if args.loss is not None:
        settings["loss"] = args.loss
    yt, Xt = kernsolve.read_problem(test, n_features=width)
    classes = np.unique(kernsolve.read_problem(train, n_features=width)[0])
    n_parts = args.partitions or args.workers
    parts = kernsolve.read_partitions(train, npartitions=n_parts, n_features=width,
                                      size=os.path.getsize(train))
    rounds = [int(r) for r in args.rounds.split(",")]

    def one_process():
        est = kernsolve.DSGClassifier(**settings)
        for off, length in parts.ranges:
            y, X = kernsolve.read_problem(train, n_features=width, zero_based=False,
                                          offset=off, length=length)
            est.partial_fit(X, y, classes=classes)
        return est

    def chain(passes):
        est = kernsolve.DSGClassifier(**settings)
        for _ in range(passes):
            est = kernsolve.dask_partial_fit(est, parts, classes=classes)
        return est

    # the peer of R rounds (each partition seen R times) is R passes of the chain
    runs = {"one process, partial_fit": one_process}
    for r in rounds:
        runs[f"dask_partial_fit, {r} pass{'es' if r > 1 else ''}"] = lambda r=r: chain(r)
    for r in rounds:
        runs[f"dask_parallel_fit, {r} round{'s' if r > 1 else ''}"] = \
            lambda r=r: kernsolve.dask_parallel_fit(kernsolve.DSGClassifier(**settings),
                                                    parts, classes=classes, rounds=r)
    print(f"{args.set}: {n} training rows in {n_parts} partitions, {args.solver}, "
          f"LocalCluster {args.workers} x {args.threads_per_worker} thread(s); "
          f"load {benchlib.load_averages()}", flush=True)
    times = {name: [] for name in runs}
    errors, blocks = {}, {}
    cluster, client = _cluster(args)
    try:
        for _ in range(args.repeats):
            for name, run in runs.items():
                t0 = time.perf_counter()
                est = run()
                times[name].append(time.perf_counter() - t0)
                errors[name] = 100 * (1 - est.score(Xt, yt))
                blocks[name] = est.coef_.shape[0]
    finally:
        client.close()
        cluster.close()
    first_chain = next(name for name in runs if name.startswith("dask_partial_fit"))
    base = benchlib.median(times[first_chain])
    for name in runs:
        t = benchlib.median(times[name])
        print(f"{name:34s} train {t:7.2f} s (median of {args.repeats}; {base / t:4.2f}x "
              f"{first_chain[18:]} of the chain)  test error {errors[name]:6.2f}%  blocks {blocks[name]}")
    print(f"load after: {benchlib.load_averages()}")


def _child(args, where, folder):
    out = os.path.join(folder, f"{args.section}-{where}.pkl")
    argv = [sys.executable, os.path.abspath(__file__), args.section, "--where", where,
            "--out", out] + [a for a in sys.argv[2:]]
    subprocess.run(argv, check=True)
    return pickle.load(open(out, "rb"))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("section", choices=("predict", "dsg", "dsg-parallel"))
    p.add_argument("--model", default="/tmp/thr/fm.model")
    p.add_argument("--test", default="/tmp/thr/fm.t")
    p.add_argument("--train", default="/tmp/thr/fm")
    p.add_argument("--partitions", type=int,
                   help="partitions of the file (default 8; dsg-parallel: one per worker)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads-per-worker", type=int, default=1)
    p.add_argument("--threads", type=int, default=2, help="threads of the local run")
    p.add_argument("--solver", default="cdsg")
    p.add_argument("--loss", help="default softmax (dsg-parallel: the set's)")
    p.add_argument("--gamma", type=float, help="default 0.02 (dsg-parallel: the set's)")
    p.add_argument("--n-features", type=int, default=784)
    p.add_argument("--classes", type=float, nargs="*")
    p.add_argument("--set", choices=sorted(PARALLEL_SETS), default="a9a",
                   help="dsg-parallel: the problem")
    p.add_argument("--rows", type=int, help="dsg-parallel: the first rows of the set only")
    p.add_argument("--rounds", default="1,2", help="dsg-parallel: rounds to measure, as 1,2")
    p.add_argument("--repeats", type=int, default=3, help="dsg-parallel: runs of each")
    p.add_argument("--work", default="/tmp/bench_dask_parallel",
                   help="dsg-parallel: folder of the data files it makes")
    p.add_argument("--where", choices=("local", "dask"))
    p.add_argument("--out")
    args = p.parse_args()
    if args.section == "dsg-parallel":
        os.makedirs(args.work, exist_ok=True)
        run_dsg_parallel(args)
        return
    run = {"predict": run_predict, "dsg": run_dsg}[args.section]
    if args.where:
        run(args, args.out)
        return
    import numpy as np
    with tempfile.TemporaryDirectory() as folder:
        local = _child(args, "local", folder)
        dask_ = _child(args, "dask", folder)
    for name, r in (("local", local), (f"LocalCluster {args.workers}x"
                                       f"{args.threads_per_worker}", dask_)):
        times = ", ".join(f"{k} {v:.1f} s" for k, v in r["times"].items())
        print(f"{name:22s} {times}; test error {r['error']:.2f}%; "
              f"peak RSS of this process {r['rss']:.0f} MB")
    keys = ("labels", "values") if args.section == "predict" else ("coef", "intercept")
    same = all(np.array_equal(local[k], dask_[k]) and local[k].dtype == dask_[k].dtype
               for k in keys)
    print(f"bit-identical {' and '.join(keys)}: {same}")


if __name__ == "__main__":
    main()
