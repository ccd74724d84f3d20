"""The exp() memo of the kernel matrix (``_kernel_values.pxd``, ``ExpMemo``).

Binary features give few distinct distances, and the kernel matrix takes the
repeated ones from a small table instead of calling exp() again.  Oracle:
``math.exp`` (the C library's exp, which the kernels call) of the distances,
which are whole numbers here and so exact in numpy: the values must be the
same bits, on the sparse and the BLAS paths, with 1 and 2 threads.
"""
import math

import numpy as np
import pytest
import scipy.sparse as sp

from kernsolve import kernel_matrix


def binary(n, d, seed):
    rng = np.random.default_rng(seed)
    return (rng.random((n, d)) < 0.2).astype(np.float64)


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
@pytest.mark.parametrize("form", ["sparse", "dense"])
def test_repeated_distances_give_exp_s_bits(kernel, form):
    X, Y = binary(200, 60, 1), binary(3000, 60, 2)
    gamma = 0.37
    diff = X[:, None, :] - Y[None, :, :]
    dist = (diff ** 2 if kernel == "rbf" else np.abs(diff)).sum(axis=2)   # whole numbers
    expected = np.vectorize(lambda t: math.exp(-gamma * t))(dist)
    if form == "sparse":
        X, Y = sp.csr_matrix(X), sp.csr_matrix(Y)
    for row_independent in (False, True):
        for n_jobs in (1, 2):
            K = kernel_matrix(X, Y, kernel=kernel, gamma=gamma, n_jobs=n_jobs,
                              row_independent=row_independent)
            np.testing.assert_array_equal(K.view(np.int64), expected.view(np.int64))
