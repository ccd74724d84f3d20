"""``_decision_sums.expansion_sums``: LIBSVM's running sums of the one-vs-one decision values.

Oracle: the sums written as svm_predict_values writes them, one product then
one add at a time in support-vector order (a plain Python loop over float64
scalars), bit for bit, for any number of rows (groups of rows and the rows
left over) and threads.
"""
import numpy as np
import pytest

from kernsolve._core._decision_sums import expansion_sums
from kernsolve._predict import _expansion_terms
from kernsolve._model import Model
from kernsolve._params import Parameters


def libsvm_sums(K, columns, coefs, start):
    out = start.copy()
    for r in range(K.shape[0]):
        for s in range(K.shape[1]):
            for q in range(columns.shape[1]):
                out[r, columns[s, q]] = out[r, columns[s, q]] + coefs[s, q] * K[r, s]
    return out


@pytest.mark.parametrize("n_rows", [1, 7, 8, 9, 23])
@pytest.mark.parametrize("n_support", [[5, 3, 4, 6], [9, 7]])
def test_sums_are_libsvm_s_bit_for_bit(n_rows, n_support):
    rng = np.random.default_rng(n_rows + len(n_support))
    k, l = len(n_support), sum(n_support)
    model = Model(param=Parameters(svm_type=0, kernel_type=2, gamma=1.0),
                  labels=np.arange(float(k)), support_vectors=np.zeros((l, 1)),
                  support_indices=np.zeros(l, np.int64), n_support=np.array(n_support),
                  dual_coef=rng.normal(size=(k - 1, l)) * 10.0 ** rng.integers(-8, 8, (k - 1, l)),
                  rho=np.zeros(k * (k - 1) // 2))
    columns, coefs = _expansion_terms(model, np.asarray(model.dual_coef))
    K = rng.random((n_rows, l))
    start = rng.normal(size=(n_rows, k * (k - 1) // 2))   # the sums are added to out
    expected = libsvm_sums(K, columns, coefs, start)
    for threads in (1, 2):
        out = start.copy()
        expansion_sums(K, columns, coefs, out, threads)
        np.testing.assert_array_equal(out.view(np.int64), expected.view(np.int64))


def test_shapes_are_checked():
    with pytest.raises(ValueError, match="disagree"):
        expansion_sums(np.zeros((2, 3)), np.zeros((4, 1), np.intp), np.zeros((3, 1)),
                       np.zeros((2, 1)), 1)
