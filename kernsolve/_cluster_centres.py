"""EigenPro/FALKON on centres over a Dask collection, the rows never gathered:
the Dask side of ``kernsolve.solvers.eigenpro._partitioned``.

:func:`dask_train_centres` (``kernsolve-train --scheduler``, LIBSVM's
options) and :func:`fit_estimator` (``EigenProClassifier/Regressor(centers=p)
.fit`` on a Dask collection) load each partition where it is (a Dask array's
row chunks, or the byte windows of LIBSVM files read by the workers), make
the data's few global facts from small per-partition summaries (rows, width,
non-zeros, labels), move the boundary rows so that the partitions start on
the row blocks' grid, keep each partition as a state on its worker (made
again from its source, which the futures held here keep recomputable, when
that worker is lost), and run ``nystrom.solve_centres`` on the client with
``_partitioned.PartitionedRows``.  The model is the one ``kernsolve.train`` /
``fit`` makes in one process on the concatenated rows, bit for bit
(``doc/cluster.md``, "EigenPro on centres" and "A lost worker").

Needs a ``dask.distributed`` client (the states live in worker processes).
"""
import contextlib
import os
import time

import numpy as np
import scipy.sparse as sp

from ._cluster import LibsvmPartitions, _client, _dask, array_blocks, read_partitions
from ._constants import C_SVC, GAMMA_KERNELS
from ._kernels import as_canonical, check_kernel_params
from ._progress import Progress
from ._sparse import issparse, row_block
from ._threads import one_blas_thread, resolve_n_jobs
from ._validation import check_targets, check_X, estimator_gamma, seed_of
from .estimators._base import encode_classes, feature_names, regression_targets
from .solvers.eigenpro import SPEC as EIGENPRO, _partitioned
from .solvers.eigenpro._common import KernelBlocks, densifies
from .solvers.eigenpro.nystrom import solve_centres
from .solvers.eigenpro.train import (centres_result, check_train_param, eigenpro_model,
                                     eigenpro_options, one_class_model)

__all__ = ["dask_train_centres", "train_file_on_cluster", "fit_estimator", "is_collection"]


def is_collection(X):
    """X is a Dask collection, a partitioned LIBSVM file or a list of them
    (trained on a cluster)."""
    if isinstance(X, list) and X and all(isinstance(f, LibsvmPartitions) for f in X):
        return True
    return isinstance(X, LibsvmPartitions) or callable(getattr(X, "__dask_graph__", None))


def _require_client(what):
    client = _client()
    if client is None:
        raise ValueError(f"{what} on a Dask collection runs on a dask.distributed cluster: "
                         "start a distributed.Client first (its partitions live on the "
                         "workers)")
    return client


class _Runner:
    """``_partitioned``'s runner on a client: tasks pinned loosely to a worker
    (run elsewhere when it is gone: :class:`_partitioned.PartitionLost`), values
    shared through one worker (not broadcast: a broadcast to a worker that
    died and that the scheduler has not removed yet waits forever), results
    gathered (the largest one received kept, in bytes), a loss of data with
    its worker raised as :class:`_partitioned.WorkerLost`."""

    def __init__(self, client):
        self.client = client
        self.largest_received = 0

    def submit(self, fn, *args, where):
        return self.client.submit(fn, *args, workers=[where], allow_other_workers=True,
                                  pure=False)

    def post(self, fn, *args, where):
        """Run a task that frees memory on worker ``where`` (nobody waits for
        it): pinned strictly, so that a worker paused for memory frees its
        own when it resumes; nothing when the worker is gone."""
        from distributed import fire_and_forget    # optional (distributed): only on a cluster
        if where in self.client.nthreads():
            fire_and_forget(self.client.submit(fn, *args, workers=[where], pure=False,
                                               allow_other_workers=False))

    def share(self, value):
        try:
            return self.client.scatter(value, hash=False)
        except OSError as exc:       # (a worker unreachable: gone)
            raise _partitioned.WorkerLost(f"sharing a value: {exc}") from exc

    def gather(self, futures):
        from dask.sizeof import sizeof    # optional (dask): only on a cluster
        with _losses():
            out = self.client.gather(futures)
        self.largest_received = max(self.largest_received, sizeof(out))
        return out

    def wait(self, future):
        from distributed import wait      # optional (distributed): only on a cluster
        with _losses():
            wait(future)

    def workers(self):
        return self.client.nthreads()

    def wait_for_workers(self):
        """Wait for a worker to join, as tasks without one do (up to Dask's
        ``distributed.scheduler.no-workers-timeout``, if set)."""
        import dask      # optional (dask): only on a cluster
        self.client.wait_for_workers(
            1, timeout=dask.config.get("distributed.scheduler.no-workers-timeout", None))
        return self.client.nthreads()


@contextlib.contextmanager
def _losses():
    """Dask's signs of data lost with a worker, as :class:`_partitioned.WorkerLost`:
    a future cancelled (its input gone for good), a connection closed."""
    from distributed.client import FutureCancelledError    # optional: only on a cluster
    from distributed.comm import CommClosedError
    try:
        yield
    except (FutureCancelledError, CommClosedError) as exc:
        raise _partitioned.WorkerLost(f"{type(exc).__name__}: {exc}") from exc


# ---------------------------------------------------------------- on the workers

def _load(X, y, rule):
    """A partition's rows and targets as one process checks them (``rule``:
    ``("libsvm", svm_type)`` or ``("estimator", owner, classifier)``)."""
    if X.shape[0] == 0:
        return X, np.asarray(y)
    if rule[0] == "libsvm":
        y = check_targets(y, rule[1])
        return check_X(X, n_rows=y.shape[0]), y
    owner, classifier = rule[1], rule[2]
    y = np.asarray(y).ravel() if classifier else regression_targets(y, owner)
    if classifier:
        encode_classes(y, owner)          # (its checks: continuous, NaN, mixed labels)
    X = check_X(X, owner=owner)
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"Found input variables with inconsistent numbers of samples: "
                         f"[{X.shape[0]}, {y.shape[0]}]")
    return X, y


def _load_window(window, rule):
    y, X = window.read()
    return _load(X, y, rule)


def _summary(piece, rule):
    """(rows, width, stored values or None, the labels): the labels in order of
    first appearance as LIBSVM's integers, or the distinct labels (estimator)."""
    X, y = piece
    labels = None
    if rule[0] == "libsvm" and rule[1] == C_SVC:
        ints = y.astype(np.int64)
        uniq, first = np.unique(ints, return_index=True)
        labels = uniq[np.argsort(first, kind="stable")]
    elif rule[0] == "estimator" and rule[2]:
        labels = np.unique(y)
    return X.shape[0], X.shape[1], X.nnz if issparse(X) else None, labels


def _slice(piece, lo, hi):
    X, y = piece
    return row_block(X, lo, hi), y[lo:hi]


def _join(width, *pieces):
    """One grid-aligned partition from its slices (in row order), ``width`` columns."""
    Xs = [X for X, _ in pieces]
    if issparse(Xs[0]):
        Xs = [sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], width))
              for X in Xs]
        X = as_canonical(sp.vstack(Xs, format="csr")) if len(Xs) > 1 else as_canonical(Xs[0])
    else:
        X = np.concatenate(Xs) if len(Xs) > 1 else Xs[0]
    return X, np.concatenate([y for _, y in pieces])


class OneHot:
    """Targets of a classification: one-hot over ``labels`` (LIBSVM's order of
    the integer labels, or the estimator's sorted classes)."""

    def __init__(self, labels, as_int):
        self.labels, self.as_int = labels, as_int

    def __call__(self, y):
        keys = y.astype(np.int64) if self.as_int else y
        order = np.argsort(self.labels, kind="stable")
        index = order[np.searchsorted(self.labels[order], keys)]
        Y = np.zeros((index.size, self.labels.size))
        Y[np.arange(index.size), index] = 1.0
        return Y


def _column(y):
    """Targets of a regression: one column of float64."""
    return np.ascontiguousarray(np.asarray(y, dtype=np.float64).reshape(-1, 1))


# ---------------------------------------------------------------- on the client

class _Loaded:
    """The loaded partitions (futures on the workers) and their global facts."""

    def __init__(self, client, pieces, rule):
        self.client, self.pieces = client, pieces
        # (run where each piece is; a partition's errors, as its worker raised them, here)
        found = client.gather([client.submit(_summary, f, rule, pure=False) for f in pieces])
        where = client.who_has(pieces)
        self.where = [sorted(where[f.key])[0] for f in pieces]
        self.sizes = [s[0] for s in found]
        self.n = int(sum(self.sizes))
        self.width = max([s[1] for s in found], default=0)
        nnz = [s[2] for s in found]
        self.nnz = None if any(v is None for v in nnz) else int(sum(nnz))
        self.labels = [s[3] for s in found if s[0]]
        if self.n == 0:
            raise ValueError("the Dask collection has no rows")


def _load_collection(client, X, y, rule):
    """The partitions of X (a Dask array, with y, or LIBSVM files: a path, a
    LibsvmPartitions, or a list of them, one training set), loaded where they
    are computed or read."""
    dask, da = _dask()
    if isinstance(X, (str, os.PathLike, LibsvmPartitions)):
        X = [X]
    if isinstance(X, list):         # LIBSVM files, one training set: their rows in order
        if y is not None:
            raise ValueError("y is read from the LIBSVM file; do not pass it")
        if not X:
            raise ValueError("X is an empty list of LIBSVM files")
        pieces = [client.submit(_load_window, w, rule, pure=False)
                  for f in X for w in _file_windows(f)]
    elif isinstance(X, da.Array):
        blocks, y_blocks = array_blocks(X, y, da)
        pieces = client.compute([dask.delayed(_load, pure=True)(b, yb, rule)
                                 for b, yb in zip(blocks, y_blocks)])
    else:
        raise ValueError(f"X must be a dask.array.Array, LibsvmPartitions, or a list of "
                         f"LIBSVM files, got {type(X).__name__}")
    return _Loaded(client, pieces, rule)


def _file_windows(f):
    """The byte windows of a LIBSVM file: its path (default partitions) or its
    LibsvmPartitions."""
    if isinstance(f, (str, os.PathLike)):
        f = read_partitions(f)
    if not isinstance(f, LibsvmPartitions):
        raise ValueError(f"a list of LIBSVM files holds paths or LibsvmPartitions, "
                         f"got {type(f).__name__}")
    return f.windows()


def _fit_partitioned(loaded, p, *, kernel, targets, n_outputs, opts, seed, n_jobs, progress,
                     callback=None):
    """FALKON on the loaded partitions: (alpha (p, c), centre indices, stats,
    the centres' rows as one process's X holds them)."""
    runner = _Runner(loaded.client)
    bounds = _partitioned.grid_boundaries(loaded.sizes, p)
    ends = np.cumsum(loaded.sizes)
    starts = ends - loaded.sizes
    densify = loaded.nnz is not None and densifies(loaded.nnz, (loaded.n, loaded.width),
                                                   kernel[0])
    sources, places = [], []    # (the sources stay held: a lost state is made again from them)
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        slices, most = [], (0, None)
        for i in np.flatnonzero((starts < hi) & (ends > lo)):
            a, b = max(lo, starts[i]) - starts[i], min(hi, ends[i]) - starts[i]
            piece, where = loaded.pieces[i], loaded.where[i]
            whole = a == 0 and b == loaded.sizes[i]
            slices.append(piece if whole else runner.submit(_slice, piece, a, b, where=where))
            most = max(most, (b - a, where), key=lambda m: m[0])
        sources.append(runner.submit(_join, loaded.width, *slices, where=most[1]))
        places.append(most[1])
    rows = _partitioned.PartitionedRows(runner, sources, places, np.diff(bounds),
                                        loaded.width, n_outputs, (kernel, densify, targets))
    engine = KernelBlocks(None, *kernel, resolve_n_jobs(n_jobs))
    try:
        # BLAS on one thread in the client: its calls run between the passes,
        # and OpenBLAS's threads would spin on after each one, taking the
        # cores from the workers' passes (the pool's tasks run on one BLAS
        # thread anyway, so the bits are the same)
        with one_blas_thread():
            alpha, S, stats = solve_centres(rows, engine, p=p, lam=opts["lambda"],
                                            iterations=opts["epochs"], seed=seed,
                                            cache_mb=opts["cache_mb"],
                                            n_threads=resolve_n_jobs(n_jobs),
                                            precision=opts["precision"],
                                            subsample=opts["subsample"], callback=callback,
                                            progress=progress)
        centre_rows = rows.raw_rows(S)
    finally:
        for key, where in rows.partitions:
            runner.post(_partitioned.drop, key, where=where)
    stats["partitions"] = len(rows.partitions)
    stats["restored_partitions"] = rows.restored
    stats["traffic_per_pass"] = rows.traffic
    stats["largest_received_bytes"] = runner.largest_received
    return alpha, S, stats, centre_rows


def _libsvm_labels(found):
    """LIBSVM's label order over the partitions: first appearance, -1/+1 swapped."""
    seen = {}
    for labels in found:
        for v in labels.tolist():
            seen.setdefault(v, None)
    labels = np.array(list(seen), dtype=np.int64)
    if labels.size == 2 and labels[0] == -1 and labels[1] == 1:
        labels = labels[::-1].copy()
    return labels


def dask_train_centres(X, param, *, n_jobs=None, callback=None):
    """``kernsolve.train`` of ``--solver eigenpro --centers p`` on a Dask cluster.

    Parameters
    ----------
    X : LibsvmPartitions, str, a list of them, or a pair (dask.array X, dask.array y)
        A partitioned LIBSVM file (or its path), several as one training set
        (their rows in the list's order), or a Dask array and its targets.
    param : Parameters
        LIBSVM's options with ``--solver eigenpro --centers p``.

    Returns
    -------
    The model ``kernsolve.train`` returns on the concatenated rows, bit for bit.
    """
    t0 = time.perf_counter()
    client = _require_client("--scheduler: EigenPro")
    s = check_train_param(param)
    if param.solver != EIGENPRO.name or param.extra.get("centers") is None:
        raise ValueError("--scheduler: only the centres' model trains on a cluster "
                         "(its steps are sums over the rows); give --centers p")
    if isinstance(param.gamma, str):
        raise ValueError(f"-g {param.gamma}: the median trick samples rows of the whole "
                         "data; give -g a number (or leave it out: 1/num_features) with "
                         "--scheduler")
    X, y = X if isinstance(X, tuple) else (X, None)
    loaded = _load_collection(client, X, y, ("libsvm", s))
    opts = eigenpro_options(param, loaded.n)
    gamma = param.resolved_gamma(loaded.width)
    kernel = (int(param.kernel_type),) + check_kernel_params(
        gamma, int(param.degree), float(param.coef0), loaded.width, int(param.kernel_type))
    labels = None
    if s == C_SVC:
        labels = _libsvm_labels(loaded.labels)
        if labels.size == 1:
            return one_class_model(param, gamma, labels, loaded.width, t0)
        targets, c = OneHot(labels, True), labels.size
    else:
        targets, c = _column, 1
    progress = None if param.quiet else Progress(param.solver)
    t_prep = time.perf_counter() - t0
    try:
        alpha, S, stats, centres = _fit_partitioned(
            loaded, opts["centers"], kernel=kernel, targets=targets, n_outputs=c, opts=opts,
            seed=int(param.seed), n_jobs=param.n_jobs if n_jobs is None else n_jobs,
            progress=progress, callback=callback)
    finally:
        if progress is not None:
            progress.close()
    res = centres_result(alpha, S, stats, s != C_SVC, t_prep)
    return eigenpro_model(param, gamma, labels, res, opts, loaded.n, centres, t0)


def train_file_on_cluster(paths, param):
    """``kernsolve-train --scheduler``: :func:`dask_train_centres` on a LIBSVM
    file, or several as one training set (a list: their rows in order), cut
    into byte ranges (64 MiB, and at least one per worker of the active
    client), read by the workers."""
    client = _require_client("--scheduler: EigenPro")
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    parts = [read_partitions(path) for path in paths]
    workers = len(client.scheduler_info()["workers"])
    if sum(f.npartitions for f in parts) < workers:
        parts = [read_partitions(path, npartitions=-(-workers // len(paths)))
                 for path in paths]
    return dask_train_centres(parts, param)


def fit_estimator(est, X, y):
    """``EigenProClassifier/Regressor.fit`` on a Dask collection (``centers=p``):
    the fitted attributes of ``fit`` on the concatenated rows."""
    _dask()
    name = type(est).__name__
    client = _require_client(f"{name}.fit")
    if est.centers is None:
        raise ValueError(f"{name}: a Dask collection is fitted on centres: give centers=p "
                         "(the other modes need every row in one process)")
    if est.gamma == "scale":
        raise ValueError(f"{name}: gamma='scale' needs the variance of all of X, which a "
                         "sum over partitions does not give bit for bit; give "
                         "gamma='auto' or a number")
    names = feature_names(X)
    if hasattr(X, "to_dask_array"):          # a dask.dataframe
        X = X.to_dask_array(lengths=True)
    if hasattr(y, "to_dask_array"):
        y = y.to_dask_array(lengths=True)
    classifier = est._estimator_type == "classifier"
    loaded = _load_collection(client, X, y, ("estimator", name, classifier))
    t, opts = est._options(loaded.n)
    if opts["centers"] is None:     # centers="auto" chose the expansion (small n, SGD options)
        raise ValueError(f"{name}: a Dask collection is fitted on centres: give centers=p "
                         f"(centers='auto' takes the kernel expansion on these {loaded.n} "
                         "rows, which needs every row in one process)")
    gamma = estimator_gamma(est.gamma, np.empty((0, loaded.width))) \
        if t in GAMMA_KERNELS else 0.0
    if t in GAMMA_KERNELS and not gamma > 0:
        gamma = 1.0
    kernel = (t,) + check_kernel_params(gamma, int(est.degree), float(est.coef0),
                                        loaded.width, t)
    if classifier:
        classes = np.unique(np.concatenate(loaded.labels))
        if len(classes) < 2:
            raise ValueError(f"The number of classes has to be greater than one; got "
                             f"{len(classes)} class")
        targets, c = OneHot(classes, False), classes.size
    else:
        targets, c = _column, 1
    alpha, S, stats, centres = _fit_partitioned(
        loaded, opts["centers"], kernel=kernel, targets=targets, n_outputs=c, opts=opts,
        seed=seed_of(est.random_state), n_jobs=est.n_jobs, progress=None)
    res = centres_result(alpha, S, stats, not classifier, 0.0)
    est._fitted(res, centres, gamma, t, opts, loaded.width, names)
    est.dual_coef_ = np.asarray(res.alpha, dtype=np.float64)
    if classifier:
        est.classes_ = classes
    return est
