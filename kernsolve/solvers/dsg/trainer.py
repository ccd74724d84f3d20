"""DSG's training state (:class:`DSGTrainer`): Algorithm 1 resumed chunk by chunk.

One trainer serves the three ways of training: :func:`kernsolve.solvers.dsg.train.train`
(whole epochs in memory), ``partial_fit`` of the estimators, and
:func:`kernsolve.solvers.dsg.stream.train_file` (a file read in byte windows).
"""
import sys
import time

import numpy as np

from . import _dsg as _c
from ._row_features import RowFeatures, row_slab_bytes
from .model import DSGModel, check_directions, check_single_range
from ..._kernels import Canonical, as_canonical
from ..._random import permutation, stream_key
from ..._sparse import issparse
from ..._threads import resolve_n_jobs
from ..._validation import ONE_CLASS_INFO, warn_one_class

__all__ = ["DSGTrainer"]

_MIN_CAPACITY = 64      # blocks allocated at first
_SLICE_BATCHES = 16     # batches per compiled call (progress and Ctrl-C between)
# Rows' features are kept between passes (--precision single) only when a
# feature's sum costs more than reading it back from memory: measured between
# 32 and 65 nonzeros a row (benchmarks/history/RESULTS.md, session 13).
KEEP_MIN_NONZEROS = 64


class DSGTrainer:
    """Training state of DSG between chunks of data (Algorithm 1 resumed).

    Each call of :meth:`fit_rows` visits the given rows once in a seeded
    random order: chunk ``c`` (counting every call, from 0) is ordered by
    ``permutation(n_rows, seed=stream_key(seed, "sampling"), stream=c)``, so
    ``fit`` with E epochs equals E calls on the whole data (when it has at
    least a batch of rows: ``fit_epochs`` takes fewer as one whole batch).
    """

    def __init__(self, hyper, targets):
        self.h = hyper
        self.targets = targets
        F, K = hyper["block_size"], targets.n_outputs
        # the compiled loop holds at least two blocks' directions (one new block's)
        check_directions(hyper["n_features"], F, 2,
                         f"training DSG on data with {hyper['n_features']} features")
        # the model so far and what the compiled loop carries between calls
        self.state = _c.StepState(hyper, K, _MIN_CAPACITY)
        self.n_old_updates = 0
        self.ridge_sum = 0.0        # ridges of the fitted steps, for their mean
        self.stride = (hyper["n_features"] + 1) * F
        self.cache_capacity = int(hyper["cache_mb"] * 2**20 // (8 * self.stride))
        self.cache = np.zeros(0)
        self.n_chunks = 0
        self.feature_evals = 0
        self.loss_sum = 0.0
        self.n_seen = 0
        self.seconds = 0.0
        self.sampling_key = stream_key(hyper["seed"], "sampling")
        self.progress = None        # kernsolve._progress.Progress, or None
        self.planned_iter = None    # iterations of the whole run, when known
        # (kept, wanted, MB that keep all): the rows' features -m could not keep
        self.kept_shortfall = None

    @property
    def n_blocks(self):
        return self.state.n_blocks

    @property
    def n_iter(self):
        return self.state.n_iter

    def _reserve(self, n_new, n_jobs=None):
        s = self.state
        need = s.n_blocks + n_new
        if need > s.coef.shape[0]:
            cap = max(need, 2 * s.coef.shape[0])
            s.coef = _grown(s.coef, cap)
            if self.h["average"]:
                s.avg_coef = _grown(s.avg_coef, cap)
            if s.beta is not None:
                s.beta = _grown(s.beta, cap)
        blocks = min(need, self.cache_capacity)
        if blocks * self.stride > self.cache.shape[0]:
            blocks = min(self.cache_capacity, max(blocks, 2 * self.cache.shape[0] // self.stride))
            grown = np.empty(blocks * self.stride)
            held = self.cache.shape[0] // self.stride
            grown[:self.cache.shape[0]] = self.cache
            self.cache = grown
            # the step loop reads every block below n_blocks that the cache has
            # room for: those made when it held none (a trainer that came
            # without it, __getstate__) are generated now
            _c.fill_cache(self.h, self.cache, held, min(s.n_blocks, blocks),
                          resolve_n_jobs(n_jobs))

    def __getstate__(self):
        # the cache of generated blocks can be large and is regenerable: a
        # copy or a pickle (a trainer sent to a Dask worker) goes without it,
        # and the next fit generates the blocks again (the same numbers)
        state = self.__dict__.copy()
        state["cache"] = np.zeros(0)
        return state

    def fit_epochs(self, X, y, epochs, n_jobs=None):
        """``epochs`` passes over (X, y), the last one partial when fractional
        (the first ``round(fraction * n)`` rows, at least one, of the pass's
        order): what ``train`` and the estimators' ``fit`` run.  Returns the
        number of passes begun."""
        X = as_canonical(X)            # once: the passes take it as Canonical
        full, part = int(epochs), epochs - int(epochs)
        n_part = max(1, int(round(part * X.shape[0]))) if part > 0 else 0
        B = self.h["batch_size"]
        # each pass is its own batches (the last one of a pass can be short)
        self.planned_iter = self.n_iter + full * -(-X.shape[0] // B) + -(-n_part // B)
        kept = self._row_features(X, epochs)
        for e in range(full):
            if kept is not None and e == full - 1 and not n_part:
                kept.read_only()
            self.fit_rows(Canonical(X), y, n_jobs=n_jobs, row_features=kept, whole_data=True)
        if n_part:
            if kept is not None:
                kept.read_only()
            self.fit_rows(Canonical(X), y, n_rows_used=n_part, n_jobs=n_jobs,
                          row_features=kept, whole_data=True)
        return max(1, full + (n_part > 0))

    def _row_features(self, X, epochs):
        """The rows' features kept from pass to pass (``--precision single``
        over more than one pass, rows of KEEP_MIN_NONZEROS nonzeros or more
        on average), in what ``-m`` leaves after the cache of directions, for
        the blocks made before the last pass (the ones a later pass reads);
        None when nothing would be read back, it would not pay, or nothing
        fits.  When not all fit, ``kept_shortfall`` says what -m would hold them."""
        self.kept_shortfall = None
        n_rows = X.shape[0]
        full = int(epochs)
        passes_before_last = full if epochs > full else full - 1
        if self.h["precision"] != "single" or passes_before_last <= 0 or n_rows == 0:
            return None
        nonzeros = X.nnz if issparse(X) else np.count_nonzero(X)
        if nonzeros < KEEP_MIN_NONZEROS * n_rows:
            return None
        planned_blocks = self._new_blocks(self.planned_iter - self.n_iter)
        wanted = self._new_blocks(passes_before_last * -(-n_rows // self.h["batch_size"]))
        stride_bytes = self.stride * 8
        directions = min(self.cache_capacity, planned_blocks) * stride_bytes
        slab = row_slab_bytes(n_rows, self.h["block_size"])
        capacity = max(0, min(int((self.h["cache_mb"] * 2**20 - directions) // slab), wanted))
        if capacity < wanted:
            # a larger -m caches every block's directions first
            need = -(-(planned_blocks * stride_bytes + wanted * slab) // 2**20)
            self.kept_shortfall = (capacity, wanted, need)
        return RowFeatures(n_rows, self.h["block_size"], capacity) if capacity > 0 else None

    def kept_note(self, budget):
        """The line that says what budget (``"-m "``, ``"cache_size="``) would
        keep every row's features of the last :meth:`fit_epochs`, or ""."""
        if self.kept_shortfall is None:
            return ""
        kept, wanted, need = self.kept_shortfall
        return (f"rows' features kept between passes for {kept} of up to {wanted} "
                f"blocks; {budget}{need} would keep them all\n")

    def _new_blocks(self, n_iterations):
        """The blocks there will be after n_iterations more: one a DSG
        iteration, UDSG's G of each period of G + U (its fixed schedule), at
        most one a CDSG iteration."""
        if self.h["solver"] != "udsg":
            return self.n_blocks + n_iterations
        G, P = self.h["new_blocks"], self.h["new_blocks"] + self.h["old_blocks"]

        def made(m):        # iterations t <= m with (t - 1) % P < G
            return (m // P) * G + min(m % P, G)
        return self.n_blocks + made(self.n_iter + n_iterations) - made(self.n_iter)

    def fit_rows(self, X, y, n_rows_used=None, n_jobs=None, row_features=None,
                 whole_data=False):
        """One visit of (a prefix of a seeded permutation of) the rows of X;
        ``row_features`` (:meth:`fit_epochs`) keeps their features between visits.
        A batch of fewer rows than the batch size takes its share of a step,
        unless X is ``whole_data`` (train, fit, a stream read in one window)
        with fewer rows than a batch: they make one whole batch.  A chunk of
        partial_fit or a window of a longer stream is not the whole data."""
        t = time.perf_counter()
        X = as_canonical(X)
        if X.shape[1] != self.h["n_features"]:
            raise ValueError(f"X has {X.shape[1]} features; this model was started with "
                             f"{self.h['n_features']}")
        check_single_range(X, self.h["precision"], "training with --precision single")
        targets = self.targets.encode(y)
        if self.targets.single_label:       # nothing to learn: the model predicts the label
            self.n_seen += X.shape[0] if n_rows_used is None else n_rows_used
            return self
        order = permutation(X.shape[0], self.sampling_key, self.n_chunks)
        if n_rows_used is not None:
            order = order[:n_rows_used]
        self.n_chunks += 1
        B = self.h["batch_size"]
        whole = min(B, X.shape[0]) if whole_data else B
        self._reserve(-(-order.size // B), n_jobs)
        cached = min(self.cache.shape[0] // self.stride, self.cache_capacity)
        # Slices of whole batches: the loop resumes exactly where it stopped
        # (same bits as one call), and between slices the progress line is
        # updated and Ctrl-C is seen.
        step = B * _SLICE_BATCHES
        for start in range(0, order.size, step):
            done = _c.fit_chunk(self.state, X, targets, order[start:start + step],
                                self.cache if cached else np.zeros(1), cached,
                                resolve_n_jobs(n_jobs), row_features, whole)
            if done.status == 1:
                raise ValueError(f"DSG diverged at iteration {self.n_iter} (a prediction "
                                 f"became infinite or NaN); use a smaller --step than "
                                 f"{self.h['step']:g} or a larger --t0")
            if done.status != 0:
                raise MemoryError("DSG: out of memory for per-thread scratch")
            self.feature_evals += done.feature_evals
            self.n_old_updates += done.n_old_updates
            self.ridge_sum += done.ridge_sum
            self.loss_sum += done.objective
            self.n_seen += min(step, order.size - start)
            if self.progress is not None:
                self._report()
        self.seconds += time.perf_counter() - t
        return self

    def _report(self):
        state = {"n_iter": self.n_iter, "n_feature_evals": self.feature_evals}
        if self.planned_iter:
            state["max_iter"] = self.planned_iter
            # the work of iteration t grows like t (it evaluates t blocks)
            state["fraction"] = min(1.0, (self.n_iter / self.planned_iter) ** 2)
        self.progress(state)

    def model(self):
        """The current iterate (or the running average with ``--average 1``)."""
        s, n = self.state, self.n_blocks
        if self.h["average"] and s.n_avg > 0:
            coef, intercept = s.avg_coef[:n].copy(), s.avg_intercept.copy()
        else:
            coef, intercept = s.coef[:n] * s.scale, s.intercept.copy()
        stats = {"n_iter": self.n_iter, "n_blocks": n,
                 "n_random_features": n * self.h["block_size"],
                 "feature_evals": self.feature_evals, "seconds": self.seconds,
                 "mean_loss": self.loss_sum / max(self.n_seen, 1), "lambda": self.h["lam"],
                 "n_old_updates": self.n_old_updates}
        if self.h["step_rule"] != "gradient":
            stats["mean_ridge"] = self.ridge_sum / max(self.n_iter, 1)
        return DSGModel(solver=self.h["solver"], loss=self.h["loss_name"],
                        loss_param=self.h["loss_param"], svm_type=self.h["svm_type"],
                        kernel_type=self.h["kernel_type"], gamma=self.h["gamma"],
                        seed=self.h["seed"], n_features=self.h["n_features"],
                        block_size=self.h["block_size"], labels=self.targets.labels,
                        coef=coef, intercept=intercept, stats=stats,
                        precision=self.h["precision"])

    @classmethod
    def averaged(cls, start, ends):
        """The average of trainers that each continued ``start`` on their own
        data (parameter averaging: Zinkevich, Weimer, Smola and Li, NIPS 2010;
        McDonald, Hall and Mann, NAACL 2010 over several rounds).

        Every end began at ``start``'s iteration count, so its new blocks are
        the same random features (block ``b`` is regenerated from the seed and
        ``b``): the model is ``f = mean_i f_i``, the true coefficients (lazy
        scale applied) averaged block by block, a block an end lacks counted as
        zero, then the intercepts, CDSG's beta_j (linear in the steps like the
        coefficients) and ``--average``'s running means (with equal iteration
        counts, the running mean of the averaged iterates).  The counters are
        those of parallel time: iterations and blocks the largest end's (block
        ``b`` of every end is the same features; the step schedule goes on
        from there), so are the chunks (the next chunk takes a row order no end
        used); the ridge rule's evidence (``ridge_state``: judged losses and
        their products) and the work counted (feature evaluations, losses,
        rows) are what every end added to ``start``'s; the pending judgement
        of a last step is dropped (no end's last step is the averaged model's).
        The sums run in the order of ``ends``: the bits do not depend on
        which end finished first.  One end is returned as it is."""
        if len(ends) == 1:
            return ends[0]
        first, s0 = ends[0], start.state
        states = [e.state for e in ends]
        if any(e.h != first.h for e in ends) or any(
                e.targets.labels is not None and not np.array_equal(e.targets.labels,
                                                                     first.targets.labels)
                for e in ends):
            raise ValueError("DSG models trained with other settings cannot be averaged")
        if any(st.n_iter < s0.n_iter for st in states):
            raise ValueError("every DSG model averaged must continue the same start")
        n_blocks = max(st.n_blocks for st in states)
        K = first.targets.n_outputs
        out = cls(first.h, first.targets)
        st = out.state = _c.StepState(first.h, K, max(n_blocks, _MIN_CAPACITY))
        st.coef[:n_blocks] = _mean([s.coef[:s.n_blocks] * s.scale for s in states])
        st.intercept[:] = _mean([s.intercept for s in states])
        if st.beta is not None:
            st.beta[:n_blocks] = _mean([s.beta[:s.n_blocks] * s.scale for s in states])
        if first.h["average"]:
            st.avg_coef[:n_blocks] = _mean([s.avg_coef[:s.n_blocks] for s in states])
            st.avg_intercept[:] = _mean([s.avg_intercept for s in states])
            st.n_avg = max(s.n_avg for s in states)
        st.scale, st.n_blocks = 1.0, n_blocks
        st.n_iter = max(s.n_iter for s in states)
        # the next-batch ridge choice: its evidence adds up over the batches
        # that judged (every end's are other rows); no step is pending
        judged = _c.ridge_evidence()
        st.ridge_state[judged] = s0.ridge_state[judged]
        for s in states:
            st.ridge_state[judged] += s.ridge_state[judged] - s0.ridge_state[judged]
        out.n_chunks = max(e.n_chunks for e in ends)
        for name in ("feature_evals", "loss_sum", "n_seen"):
            setattr(out, name, getattr(start, name) + sum(
                getattr(e, name) - getattr(start, name) for e in ends))
        # the mean ridge stays a mean over the iterations (of parallel time)
        out.ridge_sum = start.ridge_sum + sum(e.ridge_sum - start.ridge_sum
                                              for e in ends) / len(ends)
        out.n_old_updates = st.n_iter - n_blocks    # an iteration makes or updates a block
        out.seconds = start.seconds + max(e.seconds - start.seconds for e in ends)
        # the cached directions of the end with the most blocks are every
        # end's (an end that came in a pickle has none: the next fit makes them)
        out.cache = max(ends, key=lambda e: e.n_blocks).cache
        return out


def _mean(arrays):
    """The mean of arrays, added in their order, those of fewer rows (blocks)
    padded with zero rows (a block they do not have)."""
    total = np.zeros((max(a.shape[0] for a in arrays),) + arrays[0].shape[1:])
    for a in arrays:
        total[:a.shape[0]] += a
    return total / len(arrays)


def _grown(arr, rows):
    out = np.zeros((rows,) + arr.shape[1:])
    out[:arr.shape[0]] = arr
    return out


def _info(param, text):
    """Print a training line (``train`` and ``train_file``), unless ``-q``."""
    if not param.quiet:
        sys.stdout.write(text)
        sys.stdout.flush()


def _notice_one_class(param, targets):
    """LIBSVM's one-class notice (``train`` and ``train_file``): the model will
    predict the training data's only label, as every other solver's does."""
    if targets.single_label:
        _info(param, ONE_CLASS_INFO)
        warn_one_class(f"{targets.labels[0]:g}", stacklevel=3)
