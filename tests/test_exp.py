"""The exp behind the RBF and Laplacian kernels (kernsolve/_core/_exp.h).

Oracles: the C library's exp (Python's math.exp) for accuracy; the one-value
spelling for the block spelling (AVX2 where the CPU has it, and the baseline
path forced), which must give the same bits; and the kernel matrix (one value
at a time) for the cached kernel rows (blocks).
"""
import math

import numpy as np
import pytest
import scipy.sparse as sp

from kernsolve._core._kernel import _exp
from kernsolve._kernels import kernel_matrix, kernel_rows

EDGES = np.array([0.0, -0.0, -1e-300, -5e-324, -1e-8, -0.5 * math.log(2), -math.log(2),
                  -1.0, -700.0, -708.0, -707.9999999, -708.0000001, -745.2, -1e300,
                  -np.inf, np.nan, 1e-3, 1.0, 700.0])


def _inputs(n, seed):
    rng = np.random.default_rng(seed)
    return np.concatenate([-rng.random(n) * 710, -rng.random(n // 4) * 1e-6,
                           -rng.exponential(3.0, n), EDGES])


@pytest.mark.parametrize("path", [0, 1])
def test_block_and_one_value_give_the_same_bits(vector_path, path):
    x = _inputs(200_000, seed=path)
    names = ("scalar", "avx2")
    if not vector_path(names[path]):
        pytest.skip("this CPU has no AVX2: only the scalar path exists")
    block, one, used = _exp(x)
    assert used == path
    assert block.view(np.int64).tobytes() == one.view(np.int64).tobytes()
    # and both paths agree with each other
    if vector_path(names[1 - path]):
        other, _, _ = _exp(x)
        assert other.view(np.int64).tobytes() == block.view(np.int64).tobytes()


def test_within_one_ulp_of_the_c_library():
    x = _inputs(100_000, seed=7)
    got, _, _ = _exp(x)
    ref = np.array([math.exp(v) if v < 709 else math.inf for v in x])
    normal = x >= -708.0
    err = np.abs(got[normal] - ref[normal]) / np.spacing(ref[normal])
    assert err.max() <= 1.0
    # as the kernel cache stores them (float32) the values are libm's
    kernel = normal & (x <= 0.0)                  # what the kernels pass
    assert np.array_equal(got[kernel].astype(np.float32), ref[kernel].astype(np.float32))


def test_edges():
    got, _, _ = _exp(EDGES)
    e = dict(zip(EDGES.tolist(), got.tolist()))
    assert e[0.0] == 1.0 and got[1] == 1.0
    assert e[-745.2] == 0.0 and e[-1e300] == 0.0 and e[-np.inf] == 0.0
    assert e[-708.0000001] == 0.0                 # below the cut: zero, not subnormal
    assert e[-708.0] == pytest.approx(math.exp(-708.0), rel=1e-15)
    assert math.isnan(got[np.isnan(EDGES)][0])
    assert e[1.0] == pytest.approx(math.e, rel=2.3e-16)
    assert e[700.0] == pytest.approx(math.exp(700.0), rel=1e-15)


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_kernel_rows_are_the_kernel_matrix_in_float32(kernel, sparse, n_jobs):
    """Rows go through the block exp, the matrix through the one-value exp:
    every cached value is the matrix entry rounded to float, bit for bit,
    for row lengths that end inside and on a block boundary."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((300, 7))
    X[rng.random(X.shape) < 0.4] = 0.0
    Xs = sp.csr_matrix(X) if sparse else X
    K = kernel_matrix(Xs, kernel=kernel, gamma=0.3).astype(np.float32)
    kr = kernel_rows(Xs, kernel=kernel, gamma=0.3, cache_mb=0, n_jobs=n_jobs)
    for p, length in [(0, 300), (5, 128), (17, 129), (299, 1), (42, 257)]:
        assert kr.row(p, length).tobytes() == K[p, :length].tobytes()
