"""Kernel rows of binary data from bit sets (``_core/_bits.h``).

When every value of X is 0 or 1 the engine holds X as bit sets and a kernel
value is a popcount and a table lookup.  Oracles: the general path of the same
engine (``binary_rows(False)``), bit for bit; numpy's closed forms of the
kernels; and whole SMO models, which must not change by a byte.
"""
import numpy as np
import pytest
import scipy.sparse as sp

from conftest import model_bytes_each
from kernsolve._core import _kernel
from kernsolve._core._kernel import KernelRows

KERNELS = {0: "linear", 1: "polynomial", 2: "rbf", 3: "sigmoid", 5: "laplacian"}
GAMMA, DEGREE, COEF0 = 0.07, 3, 0.5


@pytest.fixture
def general_path():
    """Engines made inside the block take the general path."""
    before = _kernel.binary_rows(False)
    yield
    _kernel.binary_rows(before)


def binary_data(n=150, d=130, density=0.3, seed=0, sparse=True):
    rng = np.random.default_rng(seed)
    X = (rng.random((n, d)) < density).astype(np.float64)
    X[:, 5] = 0.0                              # a column nobody uses
    X[7] = 0.0                                 # an empty row
    return sp.csr_matrix(X) if sparse else X


def rows_of(X, kt, threads=1, rows=None, swaps=((3, 90), (7, 1), (0, 149)), general=False):
    before = _kernel.binary_rows(not general)
    try:
        k = KernelRows(X, kt, DEGREE, GAMMA, COEF0, 50.0, threads, rows=rows)
    finally:
        _kernel.binary_rows(before)
    n = k.n_rows
    for p, q in swaps:
        if p < n and q < n:
            k.py_swap(p, q)
    # full rows and a row grown from a shorter one (the cache's tail fill)
    short = k.row(11, length=n // 3)
    full = np.stack([k.row(p) for p in range(n)])
    return k, full, short, k.permutation


def closed_form(X, kt):
    A = X.toarray() if sp.issparse(X) else X
    dot = A @ A.T
    sq = (A * A).sum(1)
    hamming = sq[:, None] + sq[None, :] - 2 * dot
    if kt == 0:
        K = dot
    elif kt == 1:
        K = (GAMMA * dot + COEF0) ** DEGREE
    elif kt == 3:
        K = np.tanh(GAMMA * dot + COEF0)
    else:                                       # rbf and laplacian: both distances are the hamming one
        K = np.exp(-GAMMA * hamming)
    return K.astype(np.float32)


@pytest.mark.parametrize("sparse", [True, False], ids=["csr", "dense"])
@pytest.mark.parametrize("kt", sorted(KERNELS), ids=list(KERNELS.values()))
def test_rows_from_bit_sets_are_the_general_paths_bits(kt, sparse):
    X = binary_data(sparse=sparse)
    k, full, short, perm = rows_of(X, kt)
    assert k.binary
    g, g_full, g_short, g_perm = rows_of(X, kt, general=True)
    assert not g.binary
    assert np.array_equal(perm, g_perm)
    assert np.array_equal(full.view(np.int32), g_full.view(np.int32))
    assert np.array_equal(short.view(np.int32), g_short.view(np.int32))
    # and the closed form, in position order
    K = closed_form(X, kt)[np.ix_(perm, perm)]
    np.testing.assert_allclose(full, K, rtol=2e-7, atol=1e-30)


@pytest.mark.parametrize("kt", [2, 0])
def test_bit_sets_give_the_same_rows_for_any_thread_count_and_picked_rows(kt):
    X = binary_data(n=3000, d=70, density=0.2, seed=1)    # long rows: the threads split them
    picked = np.random.default_rng(2).permutation(3000)[:2200]
    ref = rows_of(X, kt, 1, rows=picked)[1]
    for threads in (2, 3):
        assert np.array_equal(rows_of(X, kt, threads, rows=picked)[1].view(np.int32),
                              ref.view(np.int32))
    assert np.array_equal(rows_of(X, kt, 1, rows=picked, general=True)[1].view(np.int32),
                          ref.view(np.int32))


def test_bit_sets_are_used_only_for_binary_data_narrower_than_its_rows():
    X = binary_data()
    assert KernelRows(X, 2, 3, 0.1, 0.0, 10.0, 1).binary
    other = X.copy()
    other.data[4] = 2.0                                  # one value that is not 0 or 1
    assert not KernelRows(other, 2, 3, 0.1, 0.0, 10.0, 1).binary
    stored_zero = X.copy()
    stored_zero.data[4] = 0.0                            # explicit zeros are still binary
    assert KernelRows(stored_zero, 2, 3, 0.1, 0.0, 10.0, 1).binary
    # 3000 columns (47 words) with ~6 nonzeros a row: the gather is cheaper
    wide = sp.random(200, 3000, density=0.002, format="csr", random_state=0)
    wide.data[:] = 1.0
    assert not KernelRows(wide, 2, 3, 0.1, 0.0, 10.0, 1).binary
    K = closed_form(X, 2).astype(np.float64)
    assert not KernelRows(K, 4, 3, 0.1, 0.0, 10.0, 1).binary    # precomputed


def test_bit_sets_count_in_the_cache_budget():
    X = binary_data(n=2000, d=100, seed=3)
    k = KernelRows(X, 2, 3, 0.1, 0.0, 1.0, 1)
    assert k.binary
    assert k.copy_bytes >= 2000 * 2 * 8                  # two words a row
    assert k.budget_bytes + k.copy_bytes <= 1 << 20
    for p in range(0, 2000, 7):
        k.row(p)
    assert k.peak_cached_bytes <= k.budget_bytes


@pytest.mark.parametrize("options", [
    "-s 0 -t 2 -c 3 -g 0.05", "-s 0 -t 0 -c 0.5", "-s 1 -t 1 -d 2 -g 0.1 -r 1 -n 0.3",
    "-s 2 -t 5 -g 0.05 -n 0.2", "-s 3 -t 2 -c 1 -g 0.05 -p 0.2", "-s 4 -t 3 -g 0.01 -r 0.1",
])
def test_smo_models_are_the_same_bytes_with_and_without_bit_sets(options):
    rng = np.random.default_rng(4)
    X = binary_data(n=400, d=90, density=0.15, seed=5)
    w = rng.standard_normal(90)
    y = np.sign(X @ w + 0.3 * rng.standard_normal(400))
    if options.startswith(("-s 3", "-s 4")):
        y = X @ w
    texts = model_bytes_each(_kernel.binary_rows, (True, False), _kernel.binary_rows(),
                             y, X, f"{options} -m 1 -q")
    assert len(texts) == 1


@pytest.fixture
def bits_cap():
    """Restores the bit-set rows' cache cap a test changes."""
    before = _kernel.bits_cache_cap()
    yield _kernel.bits_cache_cap
    _kernel.bits_cache_cap(before)


def test_bit_set_rows_keep_at_most_the_cap_a_word_of_the_budget(bits_cap):
    MB = 1 << 20
    X = binary_data(n=300, d=130, seed=6)                # 3 words a row
    per_word = bits_cap()
    big = KernelRows(X, 2, 3, 0.1, 0.0, 4.0 * per_word * 3, 1)
    assert big.binary and big.budget_bytes == int(per_word * 3 * MB) // 4 * 4
    # below the cap, -m less the bit sets as before
    small = KernelRows(X, 2, 3, 0.1, 0.0, 2.0, 1)
    assert small.budget_bytes == (2 * MB - small.copy_bytes) // 4 * 4
    # the same data with one value that is not 0 or 1 keeps all of -m
    other = X.copy()
    other.data[4] = 0.5
    general = KernelRows(other, 2, 3, 0.1, 0.0, 4.0 * per_word * 3, 1)
    assert not general.binary
    assert general.budget_bytes + general.copy_bytes > 4 * per_word * 3 * MB - 8
    bits_cap(0.5)
    assert KernelRows(X, 2, 3, 0.1, 0.0, 100.0, 1).budget_bytes == int(1.5 * MB) // 4 * 4
    bits_cap(float("inf"))
    k = KernelRows(X, 2, 3, 0.1, 0.0, 4.0 * per_word * 3, 1)
    assert k.budget_bytes == (int(4 * per_word * 3 * MB) - k.copy_bytes) // 4 * 4
    with pytest.raises(ValueError, match="mb_per_word"):
        bits_cap(0)


def test_a_binding_cap_changes_the_work_not_the_model(bits_cap):
    rng = np.random.default_rng(7)
    X = binary_data(n=600, d=64, density=0.2, seed=8)    # one word a row
    y = np.sign(X @ rng.standard_normal(64) + 0.3 * rng.standard_normal(600))
    import kernsolve
    options = "-s 0 -t 2 -c 10 -g 0.05 -m 10 -q"
    caps = (float("inf"), 0.004)                         # 4 KB: two 600-value rows
    texts = model_bytes_each(bits_cap, caps, bits_cap(), y, X, options)
    assert len(texts) == 1
    evals = []
    for per_word in caps:
        bits_cap(per_word)
        evals.append(kernsolve.train(y, X, options).stats["n_kernel_evals"])
    assert evals[1] > evals[0]                            # the cap was binding
