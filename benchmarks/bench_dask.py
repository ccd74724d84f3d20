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

Usage::

    python benchmarks/bench_dask.py predict --model /tmp/thr/fm.model --test /tmp/thr/fm.t
    python benchmarks/bench_dask.py dsg --train /tmp/thr/fm --test /tmp/thr/fm.t --solver cdsg
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
    est = kernsolve.DSGClassifier(solver=args.solver, loss=args.loss, gamma=args.gamma,
                                  random_state=0, n_jobs=args.threads_per_worker)
    parts = kernsolve.read_partitions(args.train, npartitions=args.partitions,
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


def _child(args, where, folder):
    out = os.path.join(folder, f"{args.section}-{where}.pkl")
    argv = [sys.executable, os.path.abspath(__file__), args.section, "--where", where,
            "--out", out] + [a for a in sys.argv[2:]]
    subprocess.run(argv, check=True)
    return pickle.load(open(out, "rb"))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("section", choices=("predict", "dsg"))
    p.add_argument("--model", default="/tmp/thr/fm.model")
    p.add_argument("--test", default="/tmp/thr/fm.t")
    p.add_argument("--train", default="/tmp/thr/fm")
    p.add_argument("--partitions", type=int, default=8)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads-per-worker", type=int, default=1)
    p.add_argument("--threads", type=int, default=2, help="threads of the local run")
    p.add_argument("--solver", default="cdsg")
    p.add_argument("--loss", default="softmax")
    p.add_argument("--gamma", type=float, default=0.02)
    p.add_argument("--n-features", type=int, default=784)
    p.add_argument("--classes", type=float, nargs="*")
    p.add_argument("--where", choices=("local", "dask"))
    p.add_argument("--out")
    args = p.parse_args()
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
