"""Dot products of dense rows for row-independent kernel matrices
(kernsolve/_core/_dots.h, used by prediction).

Oracles: numpy's product (values), the one-value path with the C library's
fma() (bits of the AVX2 path), and the same rows computed alone or among
others (a row's bits must not depend on the rows computed with it -- dgemm's
can, which is why prediction does not use it).
"""
import numpy as np
import pytest

from kernsolve._core._kernel_matrix import _dots
from kernsolve._kernels import kernel_matrix

SHAPES = [(1, 1, 1), (3, 5, 7), (4, 8, 784), (9, 17, 13), (130, 1030, 40), (7, 3, 0)]


@pytest.mark.parametrize("m, n, d", SHAPES)
def test_paths_give_the_same_bits_and_numpys_values(vector_path, m, n, d):
    rng = np.random.default_rng(m * 1000 + n + d)
    A, B = rng.standard_normal((m, d)), rng.standard_normal((n, d))
    vector_path("scalar")
    scalar, used0 = _dots(A, B)
    has_avx2 = vector_path("avx2")
    simd, used1 = _dots(A, B)
    assert used0 == 0 and used1 == has_avx2
    assert simd.tobytes() == scalar.tobytes()          # the same bits on every path
    scale = np.abs(A) @ np.abs(B).T + 1e-300
    assert np.all(np.abs(scalar - A @ B.T) <= 4 * d * 2.2e-16 * scale)
    if not has_avx2:
        pytest.skip("no AVX2/FMA on this CPU: one path only")


def test_a_row_alone_or_among_others_has_the_same_bits():
    rng = np.random.default_rng(5)
    A, B = rng.random((203, 40)), rng.random((230, 40))
    whole, _ = _dots(A, B)
    for start, stop in [(0, 1), (120, 121), (1, 57), (57, 114), (114, 203), (200, 203)]:
        part, _ = _dots(A[start:stop], B)
        assert part.tobytes() == whole[start:stop].tobytes()


@pytest.mark.parametrize("kernel", ["rbf", "linear", "polynomial", "sigmoid"])
def test_row_independent_kernel_matrix_in_pieces(kernel):
    """kernel_matrix(..., row_independent=True) on dense rows: uneven pieces,
    single rows and any thread count give the bits of the whole."""
    rng = np.random.default_rng(9)
    X = rng.random((300, 40))
    for n_y in (230, 1100):        # (230: OpenBLAS's AVX-512 dgemm failed this)
        Y = rng.random((n_y, 40))
        whole = kernel_matrix(X, Y, kernel=kernel, gamma=0.05, row_independent=True,
                              n_jobs=2)
        for n_jobs in (1, 2):
            pieces = [kernel_matrix(X[a:b], Y, kernel=kernel, gamma=0.05,
                                    row_independent=True, n_jobs=n_jobs)
                      for a, b in [(0, 1), (1, 57), (57, 128), (128, 129), (129, 300)]]
            assert np.vstack(pieces).tobytes() == whole.tobytes()
            for r in range(0, 300, 7):
                alone = kernel_matrix(X[r:r + 1], Y, kernel=kernel, gamma=0.05,
                                      row_independent=True, n_jobs=n_jobs)
                assert alone.tobytes() == whole[r:r + 1].tobytes(), r
        ref = kernel_matrix(X, Y, kernel=kernel, gamma=0.05)
        np.testing.assert_allclose(whole, ref, rtol=1e-12, atol=1e-12)
