"""EigenPro on centres over a Dask cluster (issue 34 item 3) against one process,
on Fashion-MNIST: the same model file, the wall times, the traffic per step.

Writes the training rows (all of Fashion-MNIST, or ``--rows`` of them drawn by
the seed as bench_eigenpro.py draws them) to one LIBSVM file, then trains on it

(a) in one process with ``--threads`` threads: ``read_problem`` + ``kernsolve.train``;
(b) on a ``LocalCluster`` of ``--workers`` single-thread worker processes:
    ``read_partitions(file, npartitions=workers)`` (the workers read the
    byte ranges) + ``dask_train_centres`` (``kernsolve-train --scheduler``'s
    path: the rows stay on the workers),

both with the README's EigenPro centres options (doc/eigenpro.md), checks that
the two model files are the same bytes, and prints for each the wall time
(reading included; the one process's training alone too) and the test error
(``kernsolve.predict`` on the test file), and for (b) the bytes that crossed
the network per conjugate-gradient step.  Those bytes are *sized*, not
sniffed: ``PartitionedBlocks.traffic``, the sizes of what the client hands
Dask in a step (u to each worker, the running p x c sum from partition to
partition on different workers, the sum back); with them, dask's own count
of the bytes the workers sent (``transfer_outgoing_bytes_total``, all of the
run: the partitions' boundary rows, the centres, every step).

``--cpu-report`` also prints the CPU seconds each process spent, by thread
(the one process; on the cluster the client, whose event loop holds the
scheduler and the nannies, and each worker): unlike the wall times, these do
not depend on the machine's load, and on 2 cores every CPU second outside the
workers' compute threads is wall time taken from them.

Usage (full size, on a quiet machine)::

    python benchmarks/bench_cluster_eigenpro.py

A slice, to check that it runs::

    python benchmarks/bench_cluster_eigenpro.py --rows 3000 --centers 500 --subsample 200 \\
        --epochs 3 --cache-mb 100
"""
import argparse
import os
import sys
import tempfile
import threading
import time

import psutil
import scipy.sparse

import kernsolve
from kernsolve._cluster_centres import dask_train_centres

from bench_eigenpro import load     # the same rows (seeded draw) as the EigenPro benchmarks
from benchlib import DATA, load_averages


def _options(args, threads):
    return (f"-q --solver eigenpro --centers {args.centers} --subsample {args.subsample} "
            f"--lambda {args.lam:g} --epochs {args.epochs} --precision {args.precision} "
            f"-g {args.gamma:g} -m {args.cache_mb:g} --seed {args.seed} --threads {threads}")


def _test_error(model, yt, Xt):
    _, (acc, _, _), _ = kernsolve.predict(yt, Xt, model, "-q")
    return 100.0 - acc


def _sent_by_workers(client):
    """Bytes the workers have sent (dask's count; None where this dask keeps none)."""
    counts = client.run(lambda dask_worker: getattr(dask_worker,
                                                    "transfer_outgoing_bytes_total", None))
    values = list(counts.values())
    return None if any(v is None for v in values) else int(sum(values))


def _cpu_by_thread():
    """This process's CPU seconds (user + system) by thread name: Python's
    threads by their names (the worker's task thread, its event loop...), the
    native ones (BLAS, OpenMP) as one "native", and the whole process ("all":
    with the threads that have ended, as a pool's do)."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    me = psutil.Process()
    times = me.cpu_times()
    out = {"all": times.user + times.system}
    for t in me.threads():
        name = names.get(t.id, "native")
        name = "task" if "Dask-Default-Threads" in name else name
        out[name] = out.get(name, 0.0) + t.user_time + t.system_time
    return out


def _cpu_since(before, after):
    """The CPU seconds between two :func:`_cpu_by_thread`, the ended threads' as "ended"."""
    spent = {k: after[k] - before.get(k, 0.0) for k in after}
    spent["ended"] = spent["all"] - sum(v for k, v in spent.items() if k != "all")
    return {k: v for k, v in spent.items() if v >= 0.005}


def _print_cpu(label, by_thread):
    parts = ", ".join(f"{k} {v:.2f}" for k, v in sorted(by_thread.items(),
                                                        key=lambda kv: -kv[1]) if k != "all")
    print(f"    CPU seconds, {label}: {by_thread.get('all', 0.0):.2f} ({parts})", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=DATA, help="folder of fashion-mnist.scale{,.t}.xz")
    ap.add_argument("--rows", type=int, default=60000, help="training rows (a seeded draw)")
    ap.add_argument("--n-test", type=int, default=10000)
    ap.add_argument("--centers", type=int, default=15000)
    ap.add_argument("--subsample", type=int, default=3000)
    ap.add_argument("--lam", type=float, default=1e-7)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--precision", default="half", choices=("double", "single", "half"))
    ap.add_argument("--gamma", type=float, default=0.02)
    ap.add_argument("--cache-mb", type=float, default=1800.0,
                    help="-m: of the one process; of each worker on the cluster")
    ap.add_argument("--threads", type=int, default=2, help="threads of the one process")
    ap.add_argument("--workers", type=int, default=2, help="single-thread workers")
    ap.add_argument("--client-threads", type=int, default=2,
                    help="threads of the client (the preconditioner, made while the "
                         "workers wait)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--cpu-report", action="store_true",
                    help="print the CPU seconds of each process, by thread")
    args = ap.parse_args(argv)

    print(f"load average {load_averages()}", flush=True)
    read_args = argparse.Namespace(data=args.data, n_train=args.rows, n_test=args.n_test,
                                   threads=args.threads, seed=args.seed)
    y, X, yt, Xt = load(read_args)
    work = args.workdir or tempfile.mkdtemp(prefix="bench_cluster_eigenpro_")
    train = os.path.join(work, f"fashion.{y.size}.svm")
    if not os.path.exists(train):
        kernsolve.write_problem(train, y, scipy.sparse.csr_matrix(X))    # (no zeros written)
    del X
    print(f"Fashion-MNIST: {y.size} training rows ({os.path.getsize(train) / 2**20:.0f} MB "
          f"file), {yt.size} test rows; {_options(args, args.threads)}", flush=True)

    # (a) one process
    cpu = _cpu_by_thread()
    t = time.perf_counter()
    y1, X1 = kernsolve.read_problem(train)
    t_read = time.perf_counter() - t
    one = kernsolve.train(y1, X1, _options(args, args.threads))
    wall_one = time.perf_counter() - t
    cpu_one = _cpu_since(cpu, _cpu_by_thread())
    del X1
    err_one = _test_error(one, yt, Xt)
    print(f"(a) one process, {args.threads} threads: wall {wall_one:.1f} s (read "
          f"{t_read:.1f} s, train {wall_one - t_read:.1f} s: setup "
          f"{one.stats['setup_seconds']:.1f} s, first pass "
          f"{one.stats['first_pass_seconds']:.1f} s), test error {err_one:.2f}%",
          flush=True)

    # (b) the cluster
    import dask
    from distributed import Client, LocalCluster
    # the settings doc/cluster.md recommends ("The workers' settings"): the
    # workers' statistical profiler off (its sampling takes CPU from the passes)
    dask.config.set({"distributed.worker.profile.enabled": False})
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        client.run(lambda: None)                        # the workers are up
        before = _sent_by_workers(client)
        cpu, cpu_workers = _cpu_by_thread(), client.run(_cpu_by_thread)
        t = time.perf_counter()
        parts = kernsolve.read_partitions(os.path.abspath(train), npartitions=args.workers)
        # the client's threads: the preconditioner's setup and its solves,
        # made on the client while the workers wait
        many = dask_train_centres(parts, kernsolve.parse_options(
            _options(args, args.client_threads)))
        wall_many = time.perf_counter() - t
        cpu_client = _cpu_since(cpu, _cpu_by_thread())
        cpu_workers = {w: _cpu_since(cpu_workers[w], now)
                       for w, now in client.run(_cpu_by_thread).items()}
        after = _sent_by_workers(client)
    err_many = _test_error(many, yt, Xt)
    a, b = os.path.join(work, "one.model"), os.path.join(work, "many.model")
    kernsolve.save_model(a, one)
    kernsolve.save_model(b, many)
    same = open(a, "rb").read() == open(b, "rb").read()
    traffic = many.stats["traffic_per_pass"]
    step = sum(traffic.values())
    st = many.stats
    print(f"(b) LocalCluster, {args.workers} single-thread workers, the client "
          f"{args.client_threads} threads: wall {wall_many:.1f} s "
          f"(reading included; setup {st['setup_seconds']:.1f} s, first pass "
          f"{st['first_pass_seconds']:.1f} s, the whole solve {st['seconds']:.1f} s), "
          f"test error {err_many:.2f}%; model file "
          f"{'the same bytes' if same else 'DIFFERENT'}; speed {wall_one / wall_many:.2f}x "
          f"of (a)", flush=True)
    rows_bytes = y.size * 784 * 8
    print(f"    per conjugate-gradient step (sized): {step} bytes = "
          + ", ".join(f"{k} {v}" for k, v in traffic.items())
          + f"; the rows in double: {rows_bytes} bytes ({rows_bytes / max(step, 1):.0f}x)",
          flush=True)
    if before is not None and after is not None:
        print(f"    dask's count, all of the run: the workers sent {after - before} bytes "
              f"({many.stats['n_iter'] + 1} passes)", flush=True)
    if args.cpu_report:
        _print_cpu("(a) the one process", cpu_one)
        _print_cpu("(b) the client (its event loop: the scheduler and the nannies)",
                   cpu_client)
        for i, (w, by_thread) in enumerate(sorted(cpu_workers.items())):
            _print_cpu(f"(b) worker {i}", by_thread)
        total = cpu_client["all"] + sum(v["all"] for v in cpu_workers.values())
        print(f"    CPU seconds, (b) in all: {total:.2f}", flush=True)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
