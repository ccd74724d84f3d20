"""Which rows are EigenPro's centres: how many by default (``--centers auto``),
the memory check before the preconditioner, and repeated rows replaced.

Oracles: the rule's closed form (15000 sqrt(n / 60000), the memory caps
16 p^2 and 8 p (q + 512) bytes); tracemalloc (nothing of the p x p matrices
allocated before the refusal); numpy's ``unique`` on the centre rows and
numpy's Nystrom ridge solution on them; the fit on the same distinct centres
given explicitly.
"""
import tracemalloc
import warnings

import numpy as np
import pytest

import kernsolve
from kernsolve import Parameters, _validation
from kernsolve.solvers.eigenpro import centres, nystrom
from kernsolve.solvers.eigenpro.train import eigenpro_options, fit_eigenpro

GIB = 2 ** 30


@pytest.fixture(autouse=True)
def _one_blas_thread():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    with threadpoolctl.threadpool_limits(1, user_api="blas"):
        yield


# --------------------------------------------------------------------------
# the default number of centres
# --------------------------------------------------------------------------

@pytest.mark.parametrize("n, p", [(60000, 15000), (120000, 21213), (240000, 30000),
                                  (1_200_000, 67082), (15000, 7500), (4000, 3873)])
def test_the_default_grows_as_the_root_of_n(n, p):
    """With the subsampled preconditioner (q = 100 here)."""
    assert centres.default_centres(n, subsample=100, limit=2 ** 62) == p == \
        min(n - 100, round(15000 * np.sqrt(n / 60000)))


@pytest.mark.parametrize("n, p", [(1_200_000, 2000), (60000, 2000), (2000, 2000), (500, 500),
                                  (1, 1)])
def test_the_exact_factors_keep_their_default(n, p):
    """Without --subsample: FALKON's p^3 factors, EXACT_CENTRES (at most n)."""
    assert centres.default_centres(n, limit=2 ** 62) == p == min(n, centres.EXACT_CENTRES)


def test_the_default_leaves_room_for_the_auxiliary_rows():
    assert centres.default_centres(1000, subsample=300, limit=2 ** 62) == 700


def test_the_default_is_capped_by_the_preconditioners_memory():
    # exact factors: 16 p^2 bytes; 32 MiB holds p = 1448
    assert centres.default_centres(1_200_000, limit=2 ** 25) == 1448
    assert 16 * 1448 ** 2 <= 2 ** 25 < 16 * 1449 ** 2
    # subsampled: 8 p (q + 512) bytes
    q = 3000
    p = centres.default_centres(1_200_000, subsample=q, limit=GIB)
    assert p == GIB // (8 * (q + centres.RESIDUAL_BLOCK)) == 38216
    # by default the limit is kernsolve's (half the machine's memory)
    assert centres.default_centres(10 ** 9) == \
        centres.default_centres(10 ** 9, limit=_validation.memory_limit())


def test_centers_auto_trains_the_default_number(monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 3))
    y = (X[:, 0] > 0).astype(float)
    # EXACT_CENTRES = 2000 > n: all 500 rows; with a memory limit that
    # holds 16 p^2 bytes for p = 100 only, 100 centres
    model = kernsolve.train(y, X, "--solver eigenpro --centers auto -q")
    assert model.stats["centers"] == 500
    monkeypatch.setattr(centres, "memory_limit", lambda: 16 * 100 ** 2)
    model = kernsolve.train(y, X, "--solver eigenpro --centers auto -q")
    ref = kernsolve.train(y, X, "--solver eigenpro --centers 100 -q")
    assert model.stats["centers"] == 100
    np.testing.assert_array_equal(model.coef, ref.coef)
    assert eigenpro_options(Parameters(solver="eigenpro", extra={"centers": "AUTO"}),
                            500)["centers"] == 100
    with pytest.raises(ValueError, match=r"^--centers: expected an integer or auto, "
                                         r"got 'many'$"):
        Parameters(solver="eigenpro", extra={"centers": "many"}).check()


# --------------------------------------------------------------------------
# the memory check: P, the bytes and the limit, before any allocation
# --------------------------------------------------------------------------

def test_too_many_centres_are_refused_before_anything_is_allocated(monkeypatch):
    rng = np.random.default_rng(1)
    n, p = 2100, 2000               # the p x p matrices: 16 p^2 = 64 MB (61 MiB)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] > 0).astype(float)
    monkeypatch.setattr(_validation, "memory_limit", lambda: 16 * p * p - 1)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as exc:
            kernsolve.train(y, X, f"--solver eigenpro --centers {p} -q")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(exc.value) == (
        f"--centers {p}: the preconditioner's two p x p matrices would take 61 MiB, "
        "more than the 61 MiB kernsolve allows itself (half of this machine's memory "
        "or of ulimit -v); use fewer centres, or --subsample q (no p x p matrix)")
    assert peak < 8 * p * p / 8         # not one of the matrices, nor an eighth of one


# --------------------------------------------------------------------------
# repeated rows
# --------------------------------------------------------------------------

def _repeated(n=200, copies=3, d=3, seed=0):
    """n distinct rows, each repeated ``copies`` times (noise-free augmentation)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d))
    Y = np.column_stack([np.sin(2 * X @ rng.normal(size=d)), np.cos(X[:, 0])])
    return np.tile(X, (copies, 1)), np.tile(Y, (copies, 1))


def _opts(n, **extra):
    return eigenpro_options(Parameters(solver="eigenpro", extra=extra), n)


def _rbf(A, B, gamma):
    return np.exp(-gamma * ((A[:, None, :] - B[None, :, :]) ** 2).sum(axis=2))


def test_repeated_rows_are_replaced_and_the_fit_is_the_distinct_centres(monkeypatch):
    X, Y = _repeated()
    n, p, gamma, lam = X.shape[0], 120, 0.7, 1e-6
    opts = _opts(n, centers=p, **{"lambda": lam}, epochs=80)
    first = nystrom.centre_indices(n, p, 0)
    assert np.unique(X[first], axis=0).shape[0] < p       # the seed draws repeated rows
    with warnings.catch_warnings():
        warnings.simplefilter("error")                   # no low-precision refit, no warning
        res = fit_eigenpro(X, Y, gamma=gamma, options=opts)
    S = res.centres
    assert S.size == p and np.unique(X[S], axis=0).shape[0] == p     # numpy's unique
    assert res.stats["replaced_centres"] == p - np.unique(X[first], axis=0).shape[0]
    # the first of equal centres (in row order) is kept
    for i in first:
        equal = first[(X[first] == X[i]).all(axis=1)]
        assert equal.min() in S
    # numpy's Nystrom ridge solution on these centres
    K_nM, K_MM = _rbf(X, X[S], gamma), _rbf(X[S], X[S], gamma)
    ref = np.linalg.solve(K_nM.T @ K_nM + n * lam * K_MM, K_nM.T @ Y)
    np.testing.assert_allclose(K_nM @ res.alpha, K_nM @ ref, rtol=0, atol=1e-6)
    # the same p distinct rows given explicitly: the same fit, nothing replaced
    monkeypatch.setattr(nystrom, "centre_indices", lambda n_, p_, seed: S)
    again = fit_eigenpro(X, Y, gamma=gamma, options=opts)
    assert again.stats["replaced_centres"] == 0
    np.testing.assert_array_equal(again.alpha, res.alpha)


def test_the_replacement_makes_the_centres_kernel_matrix_regular():
    # what the replacement prevents: K_MM of repeated rows is singular (numpy's rank)
    X, Y = _repeated()
    first = nystrom.centre_indices(X.shape[0], 120, 0)
    S = fit_eigenpro(X, Y, gamma=0.7, options=_opts(X.shape[0], centers=120)).centres
    assert np.linalg.matrix_rank(_rbf(X[first], X[first], 0.7)) < 120
    assert np.linalg.matrix_rank(_rbf(X[S], X[S], 0.7)) == 120


def test_distinct_rows_without_repeats_change_nothing():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 4))
    kern = nystrom_kernel(X)
    S = nystrom.centre_indices(300, 50, 7)
    S2, _, Q, _, replaced = nystrom.distinct_rows(kern, S, 40, 7)
    np.testing.assert_array_equal(S2, S)
    np.testing.assert_array_equal(Q, nystrom.auxiliary_indices(300, 50, 40, 7))
    assert replaced == 0
    assert nystrom.distinct_rows(kern, S, None, 7).Q is None


def test_auxiliary_rows_are_distinct_and_not_centres():
    X, Y = _repeated(n=100, copies=4)
    kern = nystrom_kernel(X)
    S, _, Q, _, replaced = nystrom.distinct_rows(kern, nystrom.centre_indices(400, 60, 0),
                                                 30, 0)
    rows = np.vstack([X[S], X[Q]])
    assert S.size == 60 and Q.size == 30 and replaced > 0
    assert np.unique(rows, axis=0).shape[0] == 90
    # the subsampled preconditioner fits the repeated data too
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = fit_eigenpro(X, Y, gamma=0.7, options=_opts(400, centers=60, subsample=30))
    assert res.stats["subsample"] == 30


def test_fewer_distinct_rows_than_centres_keeps_them_all():
    X, Y = _repeated(n=40, copies=5)
    res = fit_eigenpro(X, Y, gamma=0.7, options=_opts(200, centers=60, **{"lambda": 1e-4}))
    assert res.stats["centers"] == 40 and np.unique(X[res.centres], axis=0).shape[0] == 40


def test_sparse_rows_are_compared_by_their_values():
    sp = pytest.importorskip("scipy.sparse")
    X, Y = _repeated()
    Xs = sp.csr_matrix(X)
    dense = fit_eigenpro(X, Y, gamma=0.7, options=_opts(600, centers=120))
    sparse = fit_eigenpro(Xs, Y, gamma=0.7, options=_opts(600, centers=120))
    np.testing.assert_array_equal(sparse.centres, dense.centres)


def nystrom_kernel(X):
    from kernsolve.solvers.eigenpro._common import KernelBlocks
    return KernelBlocks(X, 2, 0.5, 3, 0.0, 1)
