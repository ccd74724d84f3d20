"""KernelRows' cache (LRU order, byte budget, counters, swap).

Oracles: a brute-force Python model of LIBSVM's Cache (get_data and
swap_index semantics) and freshly computed rows of an unswapped engine.
"""
import io

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

from kernsolve._core._kernel import KernelRows, ordered_copy
from kernsolve._kernels import kernel_rows

KFLOAT = 4  # bytes per cached kernel value


class CacheModel:
    """LIBSVM's Cache, written plainly: per-position lengths and an LRU list."""

    def __init__(self, n, budget_entries):
        self.n = n
        self.length = [0] * n
        self.lru = []          # oldest first
        self.free = budget_entries
        self.perm = list(range(n))
        self.evals = self.hits = self.misses = 0

    def _drop(self, h):
        self.lru.remove(h)
        self.free += self.length[h]
        self.length[h] = 0

    def get(self, p, length):
        length = min(max(length, 1), self.n)
        old = self.length[p]
        if old:
            self.lru.remove(p)
        if length <= old:
            self.hits += 1
        else:
            more = length - old
            while self.free < more:
                self._drop(self.lru[0])
            self.length[p] = length
            self.free -= more
            self.evals += more
            self.misses += 1
        self.lru.append(p)

    def swap(self, p, q):
        if p == q:
            return
        self.perm[p], self.perm[q] = self.perm[q], self.perm[p]
        for h in (p, q):
            if self.length[h]:
                self.lru.remove(h)
        self.length[p], self.length[q] = self.length[q], self.length[p]
        for h in (p, q):
            if self.length[h]:
                self.lru.append(h)
        lo, hi = min(p, q), max(p, q)
        for h in list(self.lru):
            if lo < self.length[h] <= hi:
                self._drop(h)


def data(n=60, d=5, seed=0, sparse=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    if sparse:
        X[rng.random((n, d)) < 0.5] = 0.0
        return sp.csr_matrix(X)
    return X


def engine(X, cache_mb, n_jobs=1, kernel="rbf"):
    return kernel_rows(X, kernel=kernel, gamma=0.5, coef0=0.1, cache_mb=cache_mb,
                       n_jobs=n_jobs)


def rows_budget(kr, X, budget_entries):
    """The cached rows' budget in entries: -m less the position-ordered copy of
    the rows (sparse, 12 bytes a stored value and 16 a row; dense, 8 a value
    and 8 a row) up to a quarter of -m (the rest of it is held beyond -m), at
    least two full rows."""
    n = X.shape[0]
    if sp.issparse(X):
        copy = 12 * X.nnz + 16 * (n + 1)
    else:
        copy = 8 * X.size + 8 * n
    assert kr.copy_bytes == copy
    in_budget = min(copy, int(0.25 * budget_entries * KFLOAT))
    assert kr.copy_in_budget_bytes == in_budget
    return max(int(budget_entries - in_budget / KFLOAT), 2 * n)


def check_state(kr, model):
    assert kr.lru_positions() == model.lru
    assert kr.cached_lengths().tolist() == model.length
    assert kr.permutation.tolist() == model.perm
    assert kr.n_kernel_evals == model.evals
    assert kr.n_cache_hits == model.hits
    assert kr.n_cache_misses == model.misses
    assert kr.cached_bytes == KFLOAT * sum(model.length)
    assert kr.cached_bytes <= kr.budget_bytes


def read_and_compare(kr, model, fresh, p, length, step=None):
    """Row p over positions < length from the engine and from the model; its
    values against a fresh, unswapped engine gathered through the model's
    permutation (the oracle for the values)."""
    row = kr.row(p, length)
    model.get(p, length)
    expected = fresh.row(model.perm[p])[model.perm[:length]]
    assert row.tobytes() == expected.tobytes(), step


def test_lru_eviction_order_by_hand():
    n = 10
    # 25 entries: two full rows plus five (no position-ordered copy, which
    # would take a quarter of them)
    previous = ordered_copy(False)
    try:
        kr = engine(data(n), cache_mb=100 / 2**20)
    finally:
        ordered_copy(previous)
    assert kr.budget_bytes == 100
    kr.row(0, 10)
    kr.row(1, 5)
    kr.row(2, 5)
    assert kr.lru_positions() == [0, 1, 2] and kr.cached_bytes == 80
    kr.row(1, 3)                       # hit: 1 becomes the newest
    assert kr.lru_positions() == [0, 2, 1] and kr.n_cache_hits == 1
    kr.row(3, 10)                      # needs 10, 5 free: the oldest (0) goes
    assert kr.lru_positions() == [2, 1, 3]
    assert kr.cached_lengths().tolist() == [0, 5, 5, 10, 0, 0, 0, 0, 0, 0]
    kr.row(1, 10)                      # extend 1 by 5 into the last 5 free entries
    assert kr.lru_positions() == [2, 3, 1] and kr.cached_bytes == 100
    kr.row(4, 6)                       # needs 6, none free: evicts 2, then 3
    assert kr.lru_positions() == [1, 4]
    assert kr.cached_lengths().tolist() == [0, 10, 0, 0, 6, 0, 0, 0, 0, 0]
    assert kr.n_kernel_evals == 10 + 5 + 5 + 10 + 5 + 6
    assert kr.n_cache_misses == 6 and kr.n_cache_hits == 1
    # the two most recent full rows always fit together
    kr.row(5)
    kr.row(6)
    assert kr.lru_positions() == [5, 6]


def test_budget_raised_to_two_rows_and_respected():
    X = data(40)
    kr = engine(X, cache_mb=0)
    assert kr.budget_bytes == 2 * 40 * KFLOAT
    kr = engine(X, cache_mb=1)
    assert kr.copy_bytes == 8 * 40 * 5 + 8 * 40     # the dense rows in position order
    assert kr.budget_bytes == 2**20 - kr.copy_bytes
    kr = engine(X, cache_mb=0.5 / 1024)     # 512 bytes = 128 entries: the copy
    assert kr.copy_in_budget_bytes == 128    # takes a quarter, the rest beyond -m
    assert kr.budget_bytes == 512 - 128
    kr = engine(X, cache_mb=0.3 / 1024)     # 307 bytes: 230 left, under two rows
    assert kr.budget_bytes == 2 * 40 * KFLOAT


def test_extension_computes_only_the_missing_tail():
    X = data(30, seed=1)
    kr = engine(X, cache_mb=1)
    short = kr.row(4, 7)
    assert kr.n_kernel_evals == 7 and kr.n_cache_misses == 1
    full = kr.row(4, 30)
    assert kr.n_kernel_evals == 30 and kr.n_cache_misses == 2
    assert np.array_equal(full[:7], short)
    kr.row(4, 12)
    assert kr.n_kernel_evals == 30 and kr.n_cache_hits == 1
    kr.py_eval(1, 2)
    assert kr.n_kernel_evals == 31
    kr.reset_counters()
    assert (kr.n_kernel_evals, kr.n_cache_hits, kr.n_cache_misses) == (0, 0, 0)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("budget_entries", [0, 150, 400, 10_000])
def test_random_operations_match_model(sparse, budget_entries):
    n = 50
    X = data(n, seed=2, sparse=sparse)
    kr = engine(X, cache_mb=budget_entries * KFLOAT / 2**20)
    fresh = engine(X, cache_mb=0)
    model = CacheModel(n, rows_budget(kr, X, budget_entries))
    assert kr.budget_bytes == KFLOAT * model.free
    rng = np.random.default_rng(budget_entries + sparse)
    for step in range(400):
        if rng.random() < 0.25:
            p, q = rng.integers(n, size=2)
            kr.py_swap(p, q)
            model.swap(p, q)
        else:
            p = int(rng.integers(n))
            read_and_compare(kr, model, fresh, p, int(rng.integers(1, n + 1)), step)
        check_state(kr, model)
    diag_fresh = fresh.diagonal
    assert np.array_equal(kr.diagonal, diag_fresh[model.perm])


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("budget_entries", [0, 400, 10_000])
def test_runs_of_swaps_match_one_at_a_time(budget_entries, sparse):
    """swap() defers the cached rows' column swaps until the cache is next read
    (one walk per shrinking pass): runs of up to 40 swaps, some repeating a
    pair or undoing the last one, then a read, against the one-swap-at-a-time
    model.  Rows are then computed from the copy of X in position order:
    sparse X's rebuilt after each run of swaps, dense X's rows swapped in
    place."""
    n = 50
    X = data(n, seed=4, sparse=sparse)
    kr = engine(X, cache_mb=budget_entries * KFLOAT / 2**20)
    fresh = engine(X, cache_mb=0)
    model = CacheModel(n, rows_budget(kr, X, budget_entries))
    rng = np.random.default_rng(11 + budget_entries)
    for step in range(120):
        for _ in range(int(rng.integers(0, 41))):
            p, q = (int(v) for v in rng.integers(n, size=2))
            kr.py_swap(p, q)
            model.swap(p, q)
            if rng.random() < 0.2:          # the same pair again: back where it was
                kr.py_swap(q, p)
                model.swap(q, p)
        p = int(rng.integers(n))
        read_and_compare(kr, model, fresh, p, int(rng.integers(1, n + 1)), step)
        check_state(kr, model)


def test_rows_left_behind_by_many_runs_of_swaps():
    """The cached rows are permuted only when next returned, each run of swaps
    kept as one batch of a log of 256: 700 short runs, each followed by a
    read of one row, so most rows fall hundreds of batches behind and the
    full log is flushed twice; every row then matches the model."""
    n = 50
    X = data(n, seed=8)
    kr = engine(X, cache_mb=1)
    fresh = engine(X, cache_mb=0)
    model = CacheModel(n, max(int(1 * 2**20 / KFLOAT), 2 * n))
    rng = np.random.default_rng(9)
    for p in range(n):
        kr.row(p, n)
        model.get(p, n)
    for step in range(700):
        for _ in range(int(rng.integers(1, 4))):
            p, q = (int(v) for v in rng.integers(n, size=2))
            kr.py_swap(p, q)
            model.swap(p, q)
        p = int(rng.integers(n))
        read_and_compare(kr, model, fresh, p, int(rng.integers(1, n + 1)), step)
    check_state(kr, model)
    for p in range(n):
        if model.length[p]:
            read_and_compare(kr, model, fresh, p, model.length[p])


def test_more_swaps_than_the_pending_buffer():
    """More swaps between two reads than the deferred list holds (4096): the
    list is applied when full, and the rows still match the model."""
    n = 200
    X = data(n, seed=5)
    kr = engine(X, cache_mb=1)
    fresh = engine(X, cache_mb=0)
    model = CacheModel(n, max(int(1 * 2**20 / KFLOAT), 2 * n))
    for p in range(0, n, 3):
        kr.row(p, n - p)
        model.get(p, n - p)
    rng = np.random.default_rng(6)
    for _ in range(10_000):
        p, q = (int(v) for v in rng.integers(n, size=2))
        kr.py_swap(p, q)
        model.swap(p, q)
    check_state(kr, model)
    for p in range(n):
        if model.length[p]:
            read_and_compare(kr, model, fresh, p, model.length[p])


def test_swap_keeps_rows_consistent_like_libsvm():
    n = 8
    X = data(n, seed=3)
    kr = engine(X, cache_mb=1)
    kr.row(0, 8)   # long enough for both 2 and 5
    kr.row(1, 4)   # holds 2 but not 5: dropped by swap(2, 5)
    kr.row(2, 2)   # holds neither: kept
    kr.row(5, 6)   # slot 5 moves to slot 2
    kr.py_swap(2, 5)
    assert kr.cached_lengths().tolist() == [8, 0, 6, 0, 0, 2, 0, 0]
    # LIBSVM re-inserts the two swapped slots as the newest, in order (2 then 5)
    assert kr.lru_positions() == [0, 2, 5]
    ref = engine(X, cache_mb=0)
    perm = np.arange(n)
    perm[[2, 5]] = [5, 2]
    assert np.array_equal(kr.row(0), ref.row(0)[perm])
    assert np.array_equal(kr.row(2, 6), ref.row(5)[perm[:6]])
    assert kr.n_cache_hits == 2


def test_real_data_rows_and_counters(shared):
    X, _ = load_svmlight_file(io.BytesIO(shared.lines("a9a", 600)), n_features=123)
    kr = engine(X.tocsr(), cache_mb=600 * 600 * KFLOAT / 2**20 / 4, n_jobs=2)
    model = CacheModel(600, 600 * 600 // 4)
    rng = np.random.default_rng(8)
    for _ in range(300):
        p = int(rng.integers(600))
        length = int(rng.integers(1, 601))
        kr.row(p, length)
        model.get(p, length)
    check_state(kr, model)
    assert kr.n_cache_hits > 0


def test_position_checks():
    kr = engine(data(5), cache_mb=1)
    with pytest.raises(IndexError):
        kr.row(5)
    with pytest.raises(IndexError):
        kr.py_swap(-1, 2)
    with pytest.raises(ValueError, match="length"):
        kr.row(0, 0)
    with pytest.raises(ValueError, match="length"):
        kr.row(0, 6)
    with pytest.raises(TypeError):
        KernelRows(np.eye(3), 2, 3, 0.5, 0.0, 1.0)
