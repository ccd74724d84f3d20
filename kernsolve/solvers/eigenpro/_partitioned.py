"""EigenPro's centres model (``nystrom.solve_centres``) over row partitions
held by other processes: the row source :class:`PartitionedRows`, and the
tasks that run where the partitions are.

The solve touches the training rows only through its row source: the row
blocks' sums ``sum_b K_b^T (K_b u + V_b)`` (one per conjugate-gradient step),
the centres' and auxiliary rows (once) and the first block (the low
precisions' drift check, once).  Here each partition lives in a worker process
as a :class:`PartitionState` (its canonical rows, its targets' rows, a
``nystrom._RowBlocks`` over them with its cached blocks), and a step sends u
(p x c) out and brings one p x c sum back.

Same bits as one process on the concatenated rows:

* the partitions start on the grid of the row blocks (multiples of
  ``rows = BLOCK_VALUES // p``; whoever makes them moves the boundary rows),
  so each partition's blocks are one process's blocks, computed by the same
  calls of the same shapes;
* each partition computes its blocks' parts at once, in parallel with the
  others, and keeps them; then a ``nystrom.RowSum`` travels from partition to
  partition in row order and each adds its parts to it, one after the other,
  as one process adds them.

The tasks run through a *runner* (``kernsolve._cluster_centres``: Dask's
``client.submit`` pinned to the worker that holds the partition): this module
imports no Dask.  Each worker process keeps its states in ``_STATES`` (keys
unique to a training run) and its share of the ``-m`` cache in ``_BUDGETS``:
the cache budget holds per worker process, its partitions take it in turn.

A lost worker takes its partitions' states with it.  The runner pins a task
to its partition's worker loosely, so that when that worker is gone the
scheduler runs it on another one, where it finds no state and raises
:class:`PartitionLost`; the runner reports the loss of data it had sent
(a shared value, a result on the lost worker) as :class:`WorkerLost`.
Every request of :class:`PartitionedRows` is an *attempt* that depends only
on what the client holds (u, the centres), so after a loss the lost states
are made again from their sources (the Dask graph or the file's byte range,
which the scheduler recomputes on a surviving worker), set up for the
current row blocks, and the attempt is made again: the same bits, since a
state is a function of its rows.
"""
import threading
import uuid

import numpy as np
import scipy.sparse as sp

from ._common import KernelBlocks
from .nystrom import RowSum, _RowBlocks, _drift, block_rows, target_spread
from ..._kernels import as_canonical
from ..._sparse import issparse
from ..._threads import shared_pool
from ..._validation import check_allocation

__all__ = ["PartitionState", "PartitionedRows", "PartitionLost", "WorkerLost",
           "grid_boundaries"]

_STATES: dict[str, "PartitionState"] = {}   # key -> the state, in the process holding it
_BUDGETS: dict[tuple, float] = {}           # (run, generation) -> cache bytes left here
_LOCK = threading.Lock()


class PartitionLost(LookupError):
    """A task found no state of its partition in the process it ran in (the
    worker that held it was lost, and the scheduler ran the task elsewhere)."""


class WorkerLost(RuntimeError):
    """The runner lost what it had sent or computed with a worker (raised by
    the runner: a shared value or a result gone with its worker, a worker
    unreachable)."""


class SourceLost(RuntimeError):
    """A lost partition cannot be made again: its rows were only in the lost
    worker's memory."""


def _state(key, generation=None):
    """The partition's state in this process (of row blocks ``generation``, if given)."""
    state = _STATES.get(key)
    if state is None or (generation is not None and state.generation != generation):
        raise PartitionLost(key)
    return state


def grid_boundaries(sizes, p):
    """Partition boundaries on the row blocks' grid: each inner boundary of
    ``sizes`` moved down to a multiple of ``nystrom.block_rows(p)`` (so at
    most a block's rows move), empty partitions dropped.  Returns the
    boundaries ``[0, ..., n]``."""
    rows = block_rows(p)
    n = int(sum(sizes))
    cuts = np.cumsum(sizes)[:-1] // rows * rows
    return sorted({0, n} | {int(c) for c in cuts if 0 < c < n})


# ---------------------------------------------------------------- worker side

class PartitionState:
    """One partition where it lives: its rows as loaded and as the kernel
    engine takes them (the whole data's dense-or-sparse decision), its
    targets' rows Y, its first row's global index, and the current row blocks."""

    def __init__(self, X, Y, offset, kernel, densify, n_threads):
        self.raw = X                # as loaded: the model's centres are these rows
        self.kern = KernelBlocks(X, *kernel, n_threads, densify=densify)
        self.Y = Y
        self.offset = offset
        self.n_threads = n_threads
        self.blocks = None
        self.parts = None
        self.generation = None


def create(key, piece, offset, kernel, densify, targets, n_threads):
    """Make partition ``key``'s state from its loaded piece ``(X, y)``:
    ``targets(y)`` its Y (built here, as one process builds it).  Returns its rows."""
    X, y = piece
    _STATES[key] = PartitionState(X, targets(y), offset, kernel, densify, n_threads)
    return X.shape[0]


def rows_of(key, idx, raw):
    """The partition's rows ``idx`` (local, sorted): as the kernel engine
    takes them (``KernelBlocks.rows``), or as loaded (``raw``)."""
    state = _state(key)
    return state.raw[idx] if raw else state.kern.rows(idx)


def setup(key, C, dtype, rows_at, cache_bytes, run, generation):
    """New row blocks over this partition for the centres C (a new precision
    or solve), with the centres' rows among its own (``rows_at``, global,
    sorted, or None) and as many cached blocks as this process's share of the
    cache left for the run allows.  Returns the blocks kept."""
    state = _state(key)
    local = None
    if rows_at is not None:
        lo, hi = np.searchsorted(rows_at, [state.offset, state.offset + state.kern.n_rows])
        local = rows_at[lo:hi] - state.offset
    blocks = _RowBlocks(state.kern, C, 0, shared_pool(state.n_threads, "eigenpro"), dtype,
                        local, state.Y)
    block_bytes = blocks.dtype.itemsize * blocks.rows * blocks.p
    with _LOCK:         # the partitions of one process share its budget, first come first kept
        left = _BUDGETS.setdefault((run, generation), cache_bytes)
        blocks.keep = min(len(blocks.starts), int(left // block_bytes))
        _BUDGETS[(run, generation)] = left - blocks.keep * block_bytes
    state.blocks, state.generation = blocks, generation
    return blocks.keep


def compute(key, generation, u, targets, first=False):
    """This partition's blocks' parts of a pass (``_RowBlocks.parts``), kept
    for :func:`fold`; returns the kernel values computed.  The ``first``
    partition (rows from 0) has no sum to wait for: it adds its parts as they
    come, in row order, and returns the chain's first link, ``fold``'s result."""
    state = _state(key, generation)
    blocks = state.blocks
    before = blocks.n_evals
    if first:
        total = RowSum()
        for part in blocks.parts(u, targets):
            total.add(part)
            blocks.recycle([part])
        return total, blocks.n_evals - before
    c = (state.Y.shape[1] if u is None else u.shape[1])
    check_allocation(len(blocks.starts) * blocks.p * c * blocks.work.itemsize,
                     f"a partition's {len(blocks.starts)} p x c parts of a pass",
                     "use more partitions (or fewer centres)")
    state.parts = list(blocks.parts(u, targets))
    return blocks.n_evals - before


def fold(key, carried, evals):
    """Add this partition's parts, in row order, to the sum carried from the
    partitions before it: ``(RowSum, kernel values so far)``."""
    total, count = carried
    state = _state(key)
    if state.parts is None:     # (a rerun after a loss: its parts were added already)
        raise PartitionLost(key)
    for part in state.parts:
        total.add(part)
    state.blocks.recycle(state.parts)      # (the next pass's parts fill them again)
    state.parts = None
    return total, count + evals


def first_block_error(key, generation, alpha):
    """``_RowBlocks.first_block_error`` of the partition that starts at row 0."""
    return _state(key, generation).blocks.first_block_error(alpha)


def targets_of(key):
    """The partition's targets' rows Y (for the spread of the drift check)."""
    return _state(key).Y


def spread(*Ys):
    """``target_spread`` of the targets, concatenated in row order as one process holds them."""
    return target_spread(np.concatenate(Ys))


def release(key, run, generation):
    """Free the partition's row blocks of a generation and the run's budget entry."""
    state = _STATES.get(key)
    if state is not None and state.generation == generation:
        state.blocks.close()
        state.blocks = state.parts = None
    with _LOCK:
        _BUDGETS.pop((run, generation), None)


def drop(key):
    """Forget the partition (the end of the training run)."""
    _STATES.pop(key, None)


# ---------------------------------------------------------------- client side

class PartitionedRows:
    """The row source of ``nystrom.solve_centres`` over partitions in worker
    processes.

    Per partition in row order: ``sources`` its rows and targets ``(X, y)``
    as the runner hands them to a task (a Dask future, recomputable: the
    state is made from it, and made again from it after a loss), ``places``
    the worker to hold it, ``sizes`` its row count (the partitions start on
    the blocks' grid); ``recipe`` is :func:`create`'s ``(kernel, densify,
    targets)``.  ``rows(idx)`` gathers rows by global index as one process's
    ``KernelBlocks.rows`` gives them (the centres, the auxiliary rows, the
    rows that replace repeated ones), ``raw_rows(idx)`` as loaded (the
    model's centres).

    ``runner`` submits a task to a worker (``submit(fn, *args, where=)``,
    pinned loosely: run elsewhere if that worker is gone), shares a value
    with the workers (``share``), runs one that frees memory where it is,
    if that worker is still there (``post``), gathers results (``gather``, raising
    :class:`WorkerLost` for data lost with a worker), waits for one
    (``wait``), lists the current workers and their threads (``workers()``)
    and, when there is none, waits for one to join (``wait_for_workers()``,
    as the tasks would).  ``partitions`` holds ``(key, where)`` per partition,
    as remade after losses; ``restored`` counts the partitions remade."""

    def __init__(self, runner, sources, places, sizes, n_features, n_outputs, recipe):
        self.runner = runner
        self.sources = list(sources)
        self.sizes = list(sizes)
        self.offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        self.n_rows = int(sum(sizes))
        self.n_features, self.n_outputs = n_features, n_outputs
        self.recipe = recipe
        self.run = uuid.uuid4().hex
        self.generations = 0
        self.live = {}          # generation -> its PartitionedBlocks, for a restore
        self.restored = 0
        self.traffic = None     # the last pass's bytes (PartitionedBlocks.apply)
        self.partitions = [None] * len(self.sources)
        self.known = set(runner.workers())  # the workers at the last look (for a loss)
        self._retrying(lambda: self._create(range(len(self.sources)), list(places)))

    def _create(self, parts, places):
        """Make the states of ``parts`` on the workers ``places`` (new keys)."""
        threads = self.runner.workers()
        made = []
        for j, where in zip(parts, places):
            key = f"{self.run}-{j}-{self.restored}"
            made.append(self.runner.submit(create, key, self.sources[j], int(self.offsets[j]),
                                           *self.recipe, threads.get(where, 1), where=where))
            self.partitions[j] = (key, where)
        self.runner.gather(made)    # (then released: a lost one is not made again elsewhere)

    def _retrying(self, attempt):
        """``attempt()``, made again after each loss of workers, once their
        partitions are made again (:meth:`_restore`)."""
        while True:
            try:
                return attempt()
            except (PartitionLost, WorkerLost) as lost:
                self._restore(lost)

    def _restore(self, lost):
        """Make the partitions lost with their workers again, on the workers
        holding the fewest, from their sources; set them up for the live row
        blocks.  Raises ``lost`` again when no worker was lost since the last
        look (nothing to restore), :class:`SourceLost` when a lost partition's
        rows cannot be recomputed."""
        now = self.runner.workers() or self.runner.wait_for_workers()
        named = lost.args[0] if isinstance(lost, PartitionLost) and lost.args else None
        parts = [j for j, (key, where) in enumerate(self.partitions)
                 if where not in now or key == named]
        before, self.known = self.known, set(now)
        if not parts and before <= self.known:
            raise lost
        held = {w: 0 for w in now}
        for j, (_, where) in enumerate(self.partitions):
            if j not in parts and where in held:
                held[where] += 1
        places = []
        for _ in parts:
            where = min(held, key=lambda w: (held[w], w))
            held[where] += 1
            places.append(where)
        gone = [self.partitions[j] for j in parts]
        self.restored += 1
        try:
            self._create(parts, places)
            for blocks in self.live.values():
                blocks.set_up(parts)
        except (PartitionLost, WorkerLost) as again:
            if isinstance(again, WorkerLost) and set(self.runner.workers()) >= self.known:
                # no other loss meanwhile: a source is gone with the lost worker
                workers = " and ".join(sorted({where for _, where in gone}))
                lost_rows = ", ".join(f"{j} (rows {self.offsets[j]}.."
                                      f"{self.offsets[j] + self.sizes[j] - 1})" for j in parts)
                raise SourceLost(
                    f"EigenPro on a Dask cluster: worker {workers} was lost with partition "
                    f"{lost_rows}, whose rows cannot all be recomputed (they were only in "
                    f"that worker's memory, e.g. scattered to it): train again, from a Dask "
                    f"graph or LIBSVM files that the scheduler can compute again") from again
            return self._restore(again)     # another loss meanwhile
        for key, where in gone:     # (a state left on a live worker: freed)
            self.runner.post(drop, key, where=where)

    def rows(self, idx):
        return self._retrying(lambda: self._gather(idx, False))

    def raw_rows(self, idx):
        return self._retrying(lambda: self._gather(idx, True))

    def _gather(self, idx, raw):
        """Rows ``idx`` (global, any order) from the partitions that hold them."""
        idx = np.asarray(idx, dtype=np.intp)
        order = np.argsort(idx, kind="stable")
        ordered = idx[order]
        bounds = np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.intp)
        cut = np.searchsorted(ordered, bounds)
        got = self.runner.gather([
            self.runner.submit(rows_of, key, ordered[cut[j]:cut[j + 1]] - bounds[j], raw,
                               where=where)
            for j, (key, where) in enumerate(self.partitions) if cut[j + 1] > cut[j]])
        if issparse(got[0]):
            rows = got[0] if len(got) == 1 else as_canonical(sp.vstack(got, format="csr"))
        else:
            rows = got[0] if len(got) == 1 else np.concatenate(got)
        if np.array_equal(order, np.arange(idx.size)):
            return rows
        back = np.empty_like(order)
        back[order] = np.arange(idx.size)
        return as_canonical(rows[back]) if issparse(rows) else np.ascontiguousarray(rows[back])

    def blocks(self, C, cache_bytes, pool, dtype, rows_at=None):
        self.generations += 1
        return PartitionedBlocks(self, C, cache_bytes, dtype, rows_at, self.generations)

    def drift(self, blocks, alpha):
        def attempt():
            submit, (key0, where0) = self.runner.submit, self.partitions[0]
            error = submit(first_block_error, key0, blocks.generation, alpha, where=where0)
            Ys = [submit(targets_of, key, where=where) for key, where in self.partitions]
            return self.runner.gather([error, submit(spread, *Ys, where=where0)])
        return _drift(*self._retrying(attempt))


class PartitionedBlocks:
    """``_RowBlocks``' interface over the partitions (``PartitionedRows.blocks``).

    Each pass sets the source's ``traffic``: the bytes it sent and received,
    sized from what it hands the runner: u to each worker, the carried sum
    from partition to partition when they are on different workers, the sum
    back."""

    def __init__(self, source, C, cache_bytes, dtype, rows_at, generation):
        self.source = source
        self.runner = source.runner
        self.generation = generation
        self.C, self.cache_bytes, self.rows_at = C, cache_bytes, rows_at
        self.dtype = np.dtype(dtype)
        self.work = np.dtype(np.float32) if self.dtype == np.float16 else self.dtype
        self.p = C.shape[0]
        self.rows = block_rows(self.p)
        self.n = source.n_rows
        self.starts = list(range(0, self.n, self.rows))
        self.gathers = rows_at is not None
        self.kept = [0] * len(source.partitions)
        source.live[generation] = self
        source._retrying(lambda: self.set_up(range(len(source.partitions))))
        self.n_evals = 0
        self.passes = 0
        self.report = None

    @property
    def keep(self):
        return int(sum(self.kept))

    def set_up(self, parts):
        """These row blocks on the partitions ``parts`` (all, or those made again)."""
        runner, partitions = self.runner, self.source.partitions
        shared = runner.share(self.C)
        kept = runner.gather([
            runner.submit(setup, partitions[j][0], shared, self.dtype, self.rows_at,
                          self.cache_bytes, self.source.run, self.generation,
                          where=partitions[j][1])
            for j in parts])
        for j, k in zip(parts, kept):
            self.kept[j] = k

    def apply(self, u, targets=False):
        return self.source._retrying(lambda: self._pass(u, targets))

    def _pass(self, u, targets):
        runner, parts = self.runner, self.source.partitions
        shared = None if u is None else runner.share(u)
        computed = [runner.submit(compute, key, self.generation, shared, targets, i == 0,
                                  where=where)
                    for i, (key, where) in enumerate(parts)]
        carried, done, hops = computed[0], 0, 0      # the first partition's sum
        chain = [carried]
        for i in range(1, len(parts)):
            (key, where), evals = parts[i], computed[i]
            carried = runner.submit(fold, key, carried, evals, where=where)
            chain.append(carried)
            hops += where != parts[i - 1][1]
        for i, link in enumerate(chain):        # the progress line, partition by partition
            if self.report is not None:
                runner.wait(link)
                done += -(-self.source.sizes[i] // self.rows)
                self.report(self.passes, done / len(self.starts))
        total, evals = runner.gather(chain[-1])
        self.n_evals += evals
        self.passes += 1
        result = total.result(u is not None and self.gathers)
        sum_bytes = total.out.nbytes + sum(a.nbytes for a in total.at)
        self.source.traffic = {"u_out": 0 if u is None else u.nbytes * len({w for _, w in parts}),
                               "between_partitions": hops * sum_bytes, "sum_back": sum_bytes}
        return result

    def close(self):
        self.source.live.pop(self.generation, None)
        for key, where in self.source.partitions:
            self.runner.post(release, key, self.source.run, self.generation, where=where)
        self.kept = [0] * len(self.kept)
