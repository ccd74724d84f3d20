"""Train kernel machines on a Dask cluster: EigenPro on centres, then DSG in parallel.

By default the script starts a LocalCluster of 2 single-thread workers on
this machine; ``--scheduler tcp://HOST:8786`` connects to a running cluster
instead (started with ``dask scheduler`` and ``dask worker``, dask-jobqueue
or Kubernetes: see doc/cluster.md, "Running it for real").

The training rows are made on the workers, partition by partition (a seeded
generator per partition, as a real data set would be read by them from
storage), and never gathered: only the centres, a vector per step and the
models cross the network.  The problem is two classes in ``--features``
dimensions whose boundary is a smooth curve (a kernel's job, not a linear
model's).  With ``--check`` the rows are also made on the client and the
EigenPro model trained in one process, to show that the cluster's is the same
bits (leave it off for rows that do not fit the client).

Run:  python examples/cluster_training.py [--rows 200000] [--scheduler ADDRESS]
(--quick: 3000 rows and --check, the setting the test suite runs)
"""
import argparse
import time

import numpy as np


def make_rows(seed, start, rows, features):
    """Rows ``start .. start + rows`` of the problem: a pure function of the
    seed and the row range, so a worker makes its partition alone."""
    rng = np.random.default_rng([seed, start])
    X = rng.uniform(-1.0, 1.0, (rows, features))
    y = np.where(np.sin(3.0 * X[:, 0]) + X[:, 1] * X[:, 2 % features] > 0.2 * X[:, -1],
                 1.0, -1.0)
    return X, y


def dask_rows(seed, rows, features, partitions):
    """X and y as Dask arrays whose blocks are made on the workers."""
    import dask
    import dask.array as da
    edges = np.linspace(0, rows, partitions + 1).astype(int)
    blocks = [dask.delayed(make_rows)(seed, int(a), int(b - a), features)
              for a, b in zip(edges[:-1], edges[1:])]
    X = da.concatenate([da.from_delayed(b[0], (int(e - s), features), float)
                        for b, s, e in zip(blocks, edges[:-1], edges[1:])])
    y = da.concatenate([da.from_delayed(b[1], (int(e - s),), float)
                        for b, s, e in zip(blocks, edges[:-1], edges[1:])])
    return X, y


def local_rows(seed, rows, features, partitions):
    """The same rows in this process (``--check``)."""
    edges = np.linspace(0, rows, partitions + 1).astype(int)
    parts = [make_rows(seed, int(a), int(b - a), features) for a, b in zip(edges[:-1], edges[1:])]
    return np.vstack([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scheduler", default=None, metavar="ADDRESS",
                    help="a running scheduler (default: a LocalCluster of 2 workers here)")
    ap.add_argument("--rows", type=int, default=200000)
    ap.add_argument("--features", type=int, default=10)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--centers", type=int, default=2000)
    ap.add_argument("--check", action="store_true",
                    help="also train in one process and compare the models")
    ap.add_argument("--quick", action="store_true", help="3000 rows, 300 centres, --check")
    args = ap.parse_args(argv)
    if args.quick:
        args.rows, args.centers, args.check = 3000, 300, True

    import dask
    from dask.distributed import Client, LocalCluster

    import kernsolve

    if args.scheduler:
        client = Client(args.scheduler)
    else:
        # the workers' statistical profiler off: its sampling takes CPU from
        # the passes on a machine the workers fill (doc/cluster.md, "The
        # workers' settings"); a LocalCluster's nannies pass it on to them
        dask.config.set({"distributed.worker.profile.enabled": False})
        client = Client(LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     dashboard_address=None))
    print(f"cluster: {len(client.nthreads())} workers, "
          f"{sum(client.nthreads().values())} threads ({client.scheduler.address})")
    X, y = dask_rows(0, args.rows, args.features, args.partitions)
    Xt, yt = make_rows(1, 0, 5000, args.features)        # a test set, made here

    # EigenPro on centres: each worker keeps its partitions and their kernel
    # blocks; a step sends a p x 1 vector out and a sum back
    eigenpro = kernsolve.EigenProClassifier(centers=args.centers, gamma=1.0, lam=1e-6,
                                            epochs=20, random_state=0)
    t = time.perf_counter()
    on_cluster = eigenpro.fit(X, y)
    print(f"EigenPro on {args.centers} centres, {args.rows} rows on the cluster: "
          f"{time.perf_counter() - t:.1f} s, test accuracy {100 * on_cluster.score(Xt, yt):.2f}%")
    if args.check:
        X_local, y_local = local_rows(0, args.rows, args.features, args.partitions)
        local = kernsolve.EigenProClassifier(centers=args.centers, gamma=1.0, lam=1e-6,
                                             epochs=20, random_state=0).fit(X_local, y_local)
        same = np.array_equal(on_cluster.dual_coef_, local.dual_coef_)
        print(f"  one process on the same rows: the same model, bit for bit: {same}")
        if not same:
            raise SystemExit("the cluster's model differs from one process's")

    # DSG in parallel: every partition trains a copy at once, the copies are
    # averaged (two rounds)
    dsg = kernsolve.DSGClassifier(solver="cdsg", gamma=1.0, alpha=1.0 / args.rows,
                                  random_state=0)
    t = time.perf_counter()
    averaged = kernsolve.dask_parallel_fit(dsg, X, y, rounds=2)
    print(f"CDSG in parallel, 2 rounds: {time.perf_counter() - t:.1f} s, "
          f"test accuracy {100 * averaged.score(Xt, yt):.2f}%")
    client.close()


if __name__ == "__main__":
    main()
