"""Running on a Dask cluster: prediction over partitions, partial_fit from partitions
(in turn, or at once with the DSG models averaged).

The one owner of what kernsolve does on ``dask.distributed`` beyond
cross-validation's joblib backend (``kernsolve.model_selection.cv``) and
EigenPro's centres model, which builds on it (``_cluster_centres``):

* :func:`read_partitions` cuts a LIBSVM file into byte ranges
  (``read_problem(..., offset=, length=)`` windows); the ranges are read by the
  workers, so the file is never read by the client (even its size is asked of
  a worker).
* :func:`dask_predict` predicts a Dask array (dense or scipy.sparse chunks) or
  a partitioned file, one task per partition, with any kernsolve model
  (LIBSVM's :class:`~kernsolve.Model` or a :class:`~kernsolve._model_kind.ModelKind`).
  The model enters the graph once, one delayed object that every
  partition's task depends on (recomputable after a lost worker).  Each
  row's prediction depends on that row only, so the partitions' results,
  concatenated, are the bits of ``kernsolve.predict`` on the whole data.
* :func:`dask_partial_fit` trains an estimator with ``partial_fit`` (the DSG
  estimators, or any scikit-learn-style incremental estimator) from the
  partitions in order: the estimator travels to the worker that holds a Dask
  array's partition (a file's partition is read by the task that fits it,
  where the estimator is), is fitted there and goes on to the next partition;
  only the final estimator comes back to the client.  The bits are those of ``partial_fit`` called on the same
  chunks in the same order in one process.
* :func:`dask_parallel_fit` trains a DSG estimator on every partition at once:
  a copy of the same start per group of partitions, the same chains as
  ``dask_partial_fit``'s side by side, then one task averages the copies in
  group order (the estimators' ``_averaged``, the trainers' ``averaged``) and
  the average starts the next round.

Dask itself is an optional dependency (the ``dask`` extra): it is imported in
the functions that need it, never when kernsolve is imported.
"""
import copy
import inspect
import os
from typing import Any

import numpy as np
import scipy.sparse as sp

from ._constants import PRECOMPUTED
from ._fileutil import compression
from ._io import _INT32_MAX, read_problem
from ._model import Model, load_model
from ._model_kind import ModelKind
from ._predict import _parse_predict_options, _predict_arrays
from ._sparse import issparse

__all__ = ["LibsvmPartitions", "read_partitions", "dask_predict", "dask_partial_fit",
           "dask_parallel_fit"]

# Default partition size of read_partitions: big enough that a task's overhead
# is small, small enough that a worker holds a few partitions at once.
DEFAULT_BLOCKSIZE = 64 << 20
# Below this a partition is read faster than Dask schedules its task (about a
# millisecond): blocksize=1 made one task per byte (71,556 for a 71 KB file).
MIN_BLOCKSIZE = 64 << 10


def _dask():
    """(dask, dask.array), or ImportError saying how to get them."""
    try:    # optional (the dask extra): imported only when a Dask function is called
        import dask
        import dask.array as da
    except ImportError:
        raise ImportError("running on a Dask cluster needs dask: pip install "
                          "'kernsolve[dask]'") from None
    return dask, da


def _client():
    """The active dask.distributed client, or None (then dask's local scheduler runs)."""
    try:    # optional: distributed is only needed on a cluster
        from distributed import default_client
    except ImportError:
        return None
    try:
        return default_client()
    except ValueError:      # no client has been started
        return None


# ---------------------------------------------------------------- partitioned files

def _read_window(path, offset, length, n_features, zero_based):
    """The rows of one byte window (run on a worker): (y, X as CSR).

    Without ``n_features`` the width is the window's own largest index, as
    ``read_problem`` infers it for a whole file."""
    width = _INT32_MAX if n_features is None else n_features
    y, X = read_problem(path, n_features=width, zero_based=zero_based, offset=offset,
                        length=length)
    if n_features is None:
        used = int(X.indices.max()) + 1 if X.nnz else 0
        X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], used))
        X.has_sorted_indices = True
    return y, X


class _Window:
    """One byte window of a file, read where a task runs (a plain object, not a tuple,
    so that dask passes it as it is)."""
    __slots__ = ("args",)

    def __init__(self, *args):
        self.args = args        # (path, offset, length, n_features, zero_based)

    def read(self):
        return _read_window(*self.args)


def _file_size(path):
    """Size of a plain LIBSVM file (run on a worker: the client need not see it)."""
    return os.stat(path).st_size


class LibsvmPartitions:
    """A LIBSVM file cut into byte ranges that the workers read (see :func:`read_partitions`).

    Attributes
    ----------
    path : str
    ranges : list of (offset, length)
        Consecutive byte windows covering the file; window ``i`` holds the lines
        whose preceding newline lies in it (``read_problem``'s rule), so the
        windows' rows, concatenated, are the file's rows.
    n_features, zero_based
        As ``read_problem`` takes them.
    """

    def __init__(self, path, ranges, n_features, zero_based):
        self.path = path
        self.ranges = list(ranges)
        self.n_features = n_features
        self.zero_based = zero_based

    @property
    def npartitions(self):
        return len(self.ranges)

    def __repr__(self):
        return f"LibsvmPartitions({self.path!r}, npartitions={self.npartitions})"

    def to_delayed(self):
        """One delayed ``(y, X)`` per partition (X a CSR matrix), read where it runs.

        The tasks are pure (their keys come from the path and the window), so
        the reads of one graph are shared by every use of a partition
        computed together (``dask.compute(parts.labels(), *dask_predict(parts, m))``
        reads each window once)."""
        dask, _ = _dask()
        read = dask.delayed(_read_window, pure=True, nout=2)
        return [read(self.path, off, n, self.n_features, self.zero_based)
                for off, n in self.ranges]

    def windows(self):
        """The partitions as plain descriptions, for tasks that read their own window."""
        return [_Window(self.path, off, n, self.n_features, self.zero_based)
                for off, n in self.ranges]

    def labels(self):
        """The labels of the file's rows as a Dask array (read on the workers)."""
        _, da = _dask()
        parts = [da.from_delayed(p[0], shape=(np.nan,), dtype=np.float64)
                 for p in self.to_delayed()]
        return da.concatenate(parts)


def read_partitions(path: str | os.PathLike, blocksize: int | None = None, *,
                    npartitions: int | None = None, n_features: int | None = None,
                    zero_based: bool = False, size: int | None = None) -> LibsvmPartitions:
    """A LIBSVM file as partitions of about ``blocksize`` bytes, read on the workers.

    Parameters
    ----------
    path : str or path-like
        A plain (uncompressed) LIBSVM file that the workers can open (on a
        cluster: the same path on a shared file system).
    blocksize : int, optional
        Bytes per partition (default 64 MiB, at least 64 KiB); or give ``npartitions``.
    npartitions : int, optional
        Number of partitions (equal byte ranges), at most the file's size in bytes.
    n_features : int, optional
        The width of every partition's X; default: each partition's largest
        index (prediction pads the narrower side with zeros, as LIBSVM does).
    zero_based : bool, default False
        Whether the indices start at 0 (LIBSVM files are 1-based).
    size : int, optional
        The file's size in bytes; default: asked of a worker (``os.stat``), so
        that the client does not need to see the file.

    Returns
    -------
    LibsvmPartitions
    """
    dask, _ = _dask()
    path = os.fsdecode(os.fspath(path))
    if compression(path) is not None:
        raise ValueError(f"{path}: a compressed file cannot be cut into byte ranges "
                         "(each would decompress everything before it); decompress it first")
    if blocksize is not None and npartitions is not None:
        raise ValueError("give blocksize or npartitions, not both")
    for name, value in (("blocksize", blocksize), ("npartitions", npartitions),
                        ("size", size), ("n_features", n_features)):
        if value is not None and (isinstance(value, bool) or not isinstance(
                value, (int, np.integer)) or value < (0 if name == "size" else 1)):
            raise ValueError(f"{name} must be an integer >= {0 if name == 'size' else 1}, "
                             f"got {value!r}")
    if not (zero_based is True or zero_based is False):
        raise ValueError(f"zero_based must be True or False, got {zero_based!r}")
    if blocksize is not None and blocksize < MIN_BLOCKSIZE:
        raise ValueError(f"blocksize: {blocksize} bytes per partition would make a Dask task "
                         f"of almost no work per {blocksize} bytes; use blocksize >= "
                         f"{MIN_BLOCKSIZE} (64 KiB), or npartitions")
    if size is None:
        size = dask.delayed(_file_size, pure=False)(path).compute()
    size = int(size)
    if npartitions is not None and npartitions > max(size, 1):
        raise ValueError(f"npartitions: {npartitions} partitions of a file of {size} bytes "
                         "would be empty byte ranges; use at most one per byte")
    if npartitions is None:
        step = int(blocksize) if blocksize is not None else DEFAULT_BLOCKSIZE
    else:
        step = max(1, -(-size // int(npartitions)))
    # the last window runs to the end (length -1): a file that grew is read whole
    starts = list(range(0, max(size, 1), step))
    ranges = [(s, step) for s in starts[:-1]] + [(starts[-1], -1)]
    return LibsvmPartitions(path, ranges, None if n_features is None else int(n_features),
                            zero_based)


# ---------------------------------------------------------------- prediction

def _predict_rows(X, model, probability, n_jobs):
    """(labels, values) of the rows of X: ``kernsolve.predict``'s arrays."""
    if isinstance(model, ModelKind):
        return model.predict_arrays(X, probability, n_jobs)
    return _predict_arrays(X, model, probability, n_jobs)


def _predict_partition(part, model, probability, n_jobs, n_values):
    """Predict one partition (run on a worker): (labels, values)."""
    X = part[1] if isinstance(part, tuple) else part
    if X.shape[0] == 0:
        return np.empty(0), np.empty((0, n_values))
    labels, values = _predict_rows(X, model, probability, n_jobs)
    return np.asarray(labels, dtype=np.float64), np.asarray(values, dtype=np.float64)


def _probe_width(model):
    """A width of test rows that the model accepts (a precomputed kernel
    needs a column for each serial number of its support vectors)."""
    if isinstance(model, Model) and int(model.param.kernel_type) == PRECOMPUTED \
            and model.n_sv:
        sv = model.support_vectors
        col0 = sv[:, [0]].toarray() if issparse(sv) else np.asarray(sv)[:, :1]
        return max(int(col0.max()) + 1, 1)
    return max(int(getattr(model, "n_features", 1) or 1), 1)


def _n_values(model, probability, n_jobs):
    """Columns of the values, from a prediction of one row of zeros on the client
    (it also raises the model's own errors, e.g. no probability estimates, at once)."""
    probe = sp.csr_matrix((1, _probe_width(model)))
    return int(np.shape(_predict_rows(probe, model, probability, n_jobs)[1])[1])


def _model_in_graph(model, dask):
    """The model as one graph input, one delayed object that every partition's
    task depends on: sent once, not per partition, and part of the graph (not
    scattered), so that a worker lost after the model left the client is
    computed again from the graph (a scattered model, once its tasks ran, is
    gone for good with its worker)."""
    return dask.delayed(model, pure=True, traverse=False)


def _row_blocks(X, da):
    """The row blocks of a 2-D Dask array (its columns in one chunk), with their sizes."""
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D Dask array, got {X.ndim} dimension(s)")
    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})
    if any(np.isnan(c) for c in X.chunks[0]):
        raise ValueError("X has unknown chunk sizes: call X.compute_chunk_sizes() first")
    return list(X.to_delayed()[:, 0]), list(X.chunks[0])


def array_blocks(X, y, da):
    """The row blocks of a 2-D Dask array X and the targets' blocks, y (a Dask
    array, or an array) cut as X's rows: two lists of delayed objects."""
    if y is None:
        raise ValueError("y (a Dask array of the targets) is required with a Dask array X")
    blocks, sizes = _row_blocks(X, da)
    y = y if isinstance(y, da.Array) else da.from_array(np.asarray(y), chunks=-1)
    if y.ndim != 1 or y.shape[0] != sum(sizes):
        raise ValueError(f"y must be 1-D with {sum(sizes)} values, got shape {y.shape}")
    return blocks, list(y.rechunk((tuple(sizes),)).to_delayed())


def dask_predict(X: Any, model: Any, options: str | list[str] | None = "") -> tuple[Any, Any]:
    """Predict a Dask array or a partitioned LIBSVM file on a Dask cluster.

    Parameters
    ----------
    X : dask.array.Array, LibsvmPartitions, or str
        A 2-D Dask array with numpy or scipy.sparse chunks (columns as
        ``read_problem`` gives them), the partitions of a LIBSVM file
        (:func:`read_partitions`), or the path of one (default partitions).
    model : Model, a kernsolve model kind, or str
        Any trained kernsolve model (every solver's), or its file (read on the
        client, then sent to the workers once).
    options : str or list of str
        ``-b 1`` probability estimates, ``--threads N`` threads per task, as
        ``kernsolve.predict`` (``-q`` is accepted; nothing is printed).

    Returns
    -------
    labels : dask.array.Array of float64, shape (n_samples,)
    values : dask.array.Array of float64, shape (n_samples, n_values)
        The decision values or probabilities of ``kernsolve.predict``: their
        computed bits are those of ``kernsolve.predict(None, X, model, options)``
        on the whole data.  For a file the row counts are unknown until computed.
    """
    dask, da = _dask()
    probability, _, n_jobs = _parse_predict_options(options)
    if isinstance(model, (str, bytes, os.PathLike)):
        model = load_model(os.fsdecode(model))
    if not isinstance(model, (Model, ModelKind)):
        raise ValueError(f"model must be a kernsolve model or a model file, "
                         f"got {type(model).__name__}")
    n_values = _n_values(model, bool(probability), n_jobs)
    if isinstance(X, (str, os.PathLike)):
        X = read_partitions(X)
    if isinstance(X, LibsvmPartitions):
        blocks, sizes = X.to_delayed(), [np.nan] * X.npartitions
    elif isinstance(X, da.Array):
        blocks, sizes = _row_blocks(X, da)
    else:
        raise ValueError(f"X must be a dask.array.Array or LibsvmPartitions, "
                         f"got {type(X).__name__} (use kernsolve.predict for local data)")
    held = _model_in_graph(model, dask)
    run = dask.delayed(_predict_partition, pure=True, nout=2)
    labels, values = [], []
    for block, n in zip(blocks, sizes):
        lab, val = run(block, held, bool(probability), n_jobs, n_values)
        labels.append(da.from_delayed(lab, shape=(n,), dtype=np.float64))
        values.append(da.from_delayed(val, shape=(n, n_values), dtype=np.float64))
    return da.concatenate(labels), da.concatenate(values)


# ---------------------------------------------------------------- training

def _takes_classes(estimator):
    try:
        return "classes" in inspect.signature(estimator.partial_fit).parameters
    except (TypeError, ValueError):
        return False


def _fit_partition(estimator, part, y, classes, first):
    """``partial_fit`` on one partition (run on a worker).

    ``part`` is an X block (then ``y`` is its targets) or a file's window
    (:class:`_Window`, read here: the rows are read where they are fitted).
    The first step fits a copy (the estimator given, or scattered, stays as it
    was); the later ones continue the previous step's estimator in place, so
    that an estimator that stays on one worker keeps what it caches (DSG's
    random directions) from partition to partition, as ``partial_fit`` in one
    process does.  A step's input is only ever used by that step."""
    if isinstance(part, _Window):
        y, X = part.read()
    else:
        X = part
    if first:
        estimator = copy.deepcopy(estimator)
    if X.shape[0] == 0:
        return estimator
    if classes is not None:
        estimator.partial_fit(X, np.asarray(y), classes=classes)
    else:
        estimator.partial_fit(X, np.asarray(y))
    return estimator


def _scan(part):
    """(distinct labels, width) of an X block's targets or of a file's window."""
    if isinstance(part, _Window):
        y, X = part.read()
        return np.unique(y), X.shape[1]
    return np.unique(np.asarray(part)), 0


def _scan_stream(parts, dask):
    """The classes and the width of the whole stream, from one pass on the workers
    (only the distinct labels and the widths come back)."""
    found = dask.compute(*[dask.delayed(_scan, pure=True)(p) for p in parts])
    classes = np.unique(np.concatenate([c for c, _ in found])) if found else np.empty(0)
    return classes, max([w for _, w in found], default=0)


def _placed(client, parts, y_blocks):
    """A Dask array's blocks computed on the workers (persisted) and where each
    X block is, so that a step can run where its block is: (parts, y_blocks,
    where).  A file's windows are read by the steps themselves: nothing to place."""
    from distributed import futures_of, wait    # optional (distributed): only with a client
    if y_blocks is None:
        return parts, [None] * len(parts), {}
    parts = [futures_of(p)[0] for p in client.persist(parts)]
    y_blocks = [futures_of(b)[0] for b in client.persist(y_blocks)]
    wait(parts)             # computed (where they are is known) before pinning
    return parts, y_blocks, client.who_has(parts)


def _pin(where, part):
    """submit's keywords that run a step on a worker holding ``part``."""
    workers = where.get(getattr(part, "key", None))
    # loosely: if that worker is lost, the scheduler runs the step elsewhere
    # (from the graph) instead of waiting for it
    return {"workers": list(workers), "allow_other_workers": True} if workers else {}


def _pinned_chain(client, current, parts, y_blocks, where, classes):
    """The steps of a chain on a distributed cluster, from ``current`` (the
    estimator itself, or a task's future): each step on a worker that holds
    its X block (a file's step reads its own window where the estimator is;
    the windows are read one at a time and never held together).  The estimator moves, the data stays.  Returns
    the future of the last step's estimator.

    A lost worker: the steps are pinned loosely and the start is part of the
    first step's task (never scattered), so the scheduler computes the lost
    steps again on the other workers, from the graph.  A step continues its
    input in place, and its result is that same object in the same process,
    so a step that must run again (its result lost) finds its input lost with
    it, and takes a fresh copy from the step before (or the start): never an
    input that it continued."""
    for i, (part, yb) in enumerate(zip(parts, y_blocks)):
        current = client.submit(_fit_partition, current, part, yb, classes, i == 0,
                                pure=False, **_pin(where, part))
    return current


def _local_chain(dask, current, parts, y_blocks, classes):
    """The steps of a chain for dask's local scheduler, from ``current`` (a
    delayed estimator): the last step's delayed estimator."""
    step = dask.delayed(_fit_partition, pure=False)
    for i, part in enumerate(parts):
        current = step(current, part, None if y_blocks is None else y_blocks[i], classes,
                       i == 0)
    return current


def _training_input(estimator, X, y, classes, dask, da):
    """The partitions of a training call (X blocks or a file's windows), the
    targets' blocks (None for a file: its labels) and the classes of the
    stream (None for a regressor or a fitted classifier)."""
    if isinstance(X, (str, os.PathLike)):
        X = read_partitions(X)
    if isinstance(X, LibsvmPartitions):
        if y is not None:
            raise ValueError("y is read from the LIBSVM file; do not pass it")
        if X.n_features is None and not hasattr(estimator, "n_features_in_"):
            # the windows must all have the stream's width: find it first
            classes_found, width = _scan_stream(X.windows(), dask)
            X = LibsvmPartitions(X.path, X.ranges, max(width, 1), X.zero_based)
            if classes is None and _takes_classes(estimator) \
                    and not hasattr(estimator, "classes_"):
                classes = classes_found
        elif X.n_features is None:
            X = LibsvmPartitions(X.path, X.ranges, int(estimator.n_features_in_),
                                 X.zero_based)
        parts, y_blocks = X.windows(), None
    elif isinstance(X, da.Array):
        parts, y_blocks = array_blocks(X, y, da)
    else:
        raise ValueError(f"X must be a dask.array.Array or LibsvmPartitions, "
                         f"got {type(X).__name__}")
    if classes is None and _takes_classes(estimator) and not hasattr(estimator, "classes_"):
        classes = _scan_stream(parts if y_blocks is None else y_blocks, dask)[0]
    elif classes is not None and not _takes_classes(estimator):
        raise ValueError(f"{type(estimator).__name__}.partial_fit takes no classes")
    return parts, y_blocks, None if classes is None else np.asarray(classes)


def dask_partial_fit(estimator: Any, X: Any, y: Any = None, classes: Any = None) -> Any:
    """Train ``estimator`` with ``partial_fit`` on the partitions of X, in order.

    Parameters
    ----------
    estimator : an estimator with ``partial_fit``
        kernsolve's ``DSGClassifier`` / ``DSGRegressor`` (any ``solver=``), or
        any scikit-learn-style incremental estimator; it may already be fitted
        (training continues).  It is not modified.
    X : dask.array.Array, LibsvmPartitions, or str
        The data, partition by partition (a Dask array's row chunks), or a
        partitioned LIBSVM file (its labels are the targets).
    y : dask.array.Array, optional
        The targets of a Dask array X (rechunked to X's row chunks).
    classes : array-like, optional
        Every class of the stream, for a classifier's first ``partial_fit``;
        default: the distinct labels, computed on the workers.

    Returns
    -------
    estimator
        A new estimator: ``partial_fit`` called on the partitions in order, bit
        for bit as in one process.  The data is never gathered: each partition
        is fitted where it is (with a ``dask.distributed`` client, the estimator
        is sent to the worker holding the partition), and only the final
        estimator comes back to the client.
    """
    dask, da = _dask()
    if not callable(getattr(estimator, "partial_fit", None)):
        raise ValueError(f"{type(estimator).__name__} has no partial_fit")
    parts, y_blocks, classes = _training_input(estimator, X, y, classes, dask, da)
    client = _client()
    if client is not None:
        parts, y_blocks, where = _placed(client, parts, y_blocks)
        return _pinned_chain(client, estimator, parts, y_blocks, where, classes).result()
    return _local_chain(dask, dask.delayed(estimator, traverse=False), parts, y_blocks,
                        classes).compute()


# ---------------------------------------------------------------- parallel DSG

def _start_model(estimator, part, y, classes):
    """The start of every model of dask_parallel_fit (run on a worker): a copy
    of the estimator ready to train, its stream settings from the first
    partition (the ones ``partial_fit`` takes from its first chunk), or the
    fitted estimator as it is."""
    estimator = copy.deepcopy(estimator)
    if hasattr(estimator, "_trainer"):
        return estimator
    if isinstance(part, _Window):
        y, X = part.read()
    else:
        X = part
    if X.shape[0] == 0:
        raise ValueError("the first partition has no rows: dask_parallel_fit takes the "
                         "settings partial_fit takes from its first chunk (gamma='median', "
                         "lambda from C, the batch size) from it; drop empty partitions")
    return estimator._start_from(X, np.asarray(y), classes)


def _average_models(start, *ends):
    """The average of the models that continued ``start``, in partition order
    (run on a worker)."""
    return start._averaged(list(ends))


def _positive_int(name, value, high=None):
    """value as an int in [1, high], or a one-line ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1 \
            or (high is not None and value > high):
        within = f"from 1 to {high}" if high is not None else ">= 1"
        raise ValueError(f"{name} must be an integer {within}, got {value!r}")
    return int(value)


def dask_parallel_fit(estimator: Any, X: Any, y: Any = None, classes: Any = None, *,
                      rounds: int = 1, n_models: int | None = None) -> Any:
    """Train a DSG estimator on the partitions of X at once, averaging the models.

    Iterative parameter mixing (Zinkevich, Weimer, Smola and Li, "Parallelized
    stochastic gradient descent", NIPS 2010; McDonald, Hall and Mann, NAACL
    2010): the partitions are cut into ``n_models`` consecutive groups; in
    each round every group trains its own copy of the same start with
    ``partial_fit`` on its partitions in order (the groups at the same time,
    each where its data is), then the models are averaged in group order and
    the average is the next round's start.  The copies share the seed and the
    iteration count, so their new blocks are the same random features and
    their coefficients average block by block (``doc/cluster.md``, "DSG in
    parallel").

    Parameters
    ----------
    estimator : DSGClassifier or DSGRegressor
        Any ``solver=``; it may already be fitted (training continues from
        it).  It is not modified.  Unfitted, the settings that ``partial_fit``
        takes from its first chunk (``gamma='median'``, lambda from ``C``, the
        softmax's batch size) are taken from the first partition for all the
        models.
    X : dask.array.Array, LibsvmPartitions, or str
        As :func:`dask_partial_fit`.
    y : dask.array.Array, optional
        The targets of a Dask array X.
    classes : array-like, optional
        Every class of the stream (default: found on the workers).
    rounds : int, default 1
        Rounds of training and averaging; each visits every partition once.
    n_models : int, optional
        Models trained at once (groups of consecutive partitions), from 1 to
        the number of partitions; default: one per partition.  One model is
        :func:`dask_partial_fit`'s chain, bit for bit.

    Returns
    -------
    estimator
        A new estimator whose model is the last round's average; the same
        bits whichever worker runs which partition.
    """
    dask, da = _dask()
    if not callable(getattr(estimator, "_averaged", None)):     # DSGClassifier, DSGRegressor
        raise ValueError(f"dask_parallel_fit averages DSG models (DSGClassifier, "
                         f"DSGRegressor), got {type(estimator).__name__}; use "
                         f"dask_partial_fit for other incremental estimators")
    rounds = _positive_int("rounds", rounds)
    parts, y_blocks, classes = _training_input(estimator, X, y, classes, dask, da)
    n_models = _positive_int("n_models", len(parts) if n_models is None else n_models,
                             len(parts))
    groups = [list(g) for g in np.array_split(np.arange(len(parts)), n_models)]
    client = _client()
    if client is not None:
        parts, y_blocks, where = _placed(client, parts, y_blocks)
        model = client.submit(_start_model, estimator, parts[0], y_blocks[0], classes,
                              pure=False, **_pin(where, parts[0]))
        for _ in range(rounds):
            ends = [_pinned_chain(client, model, [parts[i] for i in g],
                                  [y_blocks[i] for i in g], where, classes) for g in groups]
            model = client.submit(_average_models, model, *ends, pure=False)
        return model.result()
    y_blocks = [None] * len(parts) if y_blocks is None else y_blocks
    model = dask.delayed(_start_model, pure=False)(dask.delayed(estimator, traverse=False),
                                                   parts[0], y_blocks[0], classes)
    for _ in range(rounds):
        ends = [_local_chain(dask, model, [parts[i] for i in g], [y_blocks[i] for i in g],
                             classes) for g in groups]
        model = dask.delayed(_average_models, pure=False)(model, *ends)
    return model.compute()
