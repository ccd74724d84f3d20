"""Prediction's kernel values against support vectors that stay sparse
(``_kernels.rows_against_operand`` with ``transposed_operand``: each entry of
a test row adds a row of SV^T).

Oracles: kernsolve's exp (``_core/_exp.h``, itself checked against
``math.exp``) of whole-number distances (binary features: exact), and
``kernel_matrix`` (the gather loops) to rounding on real values; the bits do
not depend on the thread count, on the rows computed together, or on X being
CSR or dense.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from kernsolve import kernel_matrix
from kernsolve._core._kernel import _exp
from kernsolve._kernels import as_operand, rows_against_operand, transposed_operand


def sparse_rows(n, d, seed, binary):
    rng = np.random.default_rng(seed)
    M = sp.random(n, d, density=0.08, format="csr", random_state=seed)
    M.data = np.ones_like(M.data) if binary else rng.normal(size=M.nnz)
    return M


def predict_kernel(X, SV, kernel, gamma, n_jobs, degree=3, coef0=0.5):
    Yc = as_operand(SV, kernel)
    transposed = transposed_operand(Yc, kernel)
    assert transposed is not None       # the path under test
    return rows_against_operand(X, Yc, kernel, gamma, degree, coef0, n_jobs, transposed)


def test_binary_features_give_the_exact_distances_exp():
    X, SV = sparse_rows(50, 120, 1, True), sparse_rows(3000, 120, 2, True)
    d = (X.multiply(X).sum(1) + SV.multiply(SV).sum(1).T - 2 * (X @ SV.T).toarray())
    # the exact distances (binary features: integers), then kernsolve's exp
    # one value at a time (_core/_exp.h; within 1 ulp of math.exp, checked there)
    d = np.asarray(d)
    expected = _exp(-0.05 * d)[1].reshape(d.shape)
    assert np.allclose(expected, np.exp(-0.05 * d), rtol=4e-16, atol=0)
    for n_jobs in (1, 2):
        K = predict_kernel(X, SV, "rbf", 0.05, n_jobs)
        np.testing.assert_array_equal(K.view(np.int64), expected.view(np.int64))


@pytest.mark.parametrize("kernel", ["rbf", "linear", "poly", "sigmoid"])
def test_values_are_the_kernel_s_and_do_not_depend_on_how_they_are_asked(kernel):
    X, SV = sparse_rows(70, 300, 3, False), sparse_rows(2500, 300, 4, False)
    gamma = 0.01
    K = predict_kernel(X, SV, kernel, gamma, 1)
    reference = kernel_matrix(X, SV, kernel=kernel, gamma=gamma, degree=3, coef0=0.5)
    np.testing.assert_allclose(K, reference, rtol=1e-12, atol=1e-12)
    same = [predict_kernel(X, SV, kernel, gamma, 2),              # threads
            predict_kernel(X.toarray(), SV, kernel, gamma, 1),    # dense X
            np.vstack([predict_kernel(X[a:a + 9], SV, kernel, gamma, 2)
                       for a in range(0, 70, 9)])]               # rows in pieces
    for other in same:
        np.testing.assert_array_equal(other.view(np.int64), K.view(np.int64))


def test_laplacian_and_dense_support_vectors_keep_their_paths():
    SV = sparse_rows(100, 50, 5, False)
    assert transposed_operand(as_operand(SV, "laplacian"), "laplacian") is None
    assert transposed_operand(np.ones((10, 5)), "rbf") is None
