"""The kernel contract: every kernel of KERNEL_TABLE, each property checked
where its row says it applies.

A new kernel passes by its row in ``kernsolve/_constants.py`` (KERNEL_TABLE),
its formula in the engine (``_finish`` in ``kernsolve/_core/_kernel_values.pxd``)
and its numpy transcription in FORMULAS below.  Oracles: the numpy formulas
(the kernel matrix on every path, the model's decision values), the engine's
general path (bit sets), the definitions of the properties (shift invariance,
bounds, positive semi-definiteness, what a parameter changes), and the model
file itself (saved, loaded, the same predictions).
"""
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp

import kernsolve
from kernsolve import _kernels
from kernsolve._constants import KERNEL_TABLE, PRECOMPUTED, KernelBase
from kernsolve._core import _kernel
from kernsolve._core._kernel import KernelRows
from kernsolve._predict import decision_function

PARAMS = {"gamma": 0.3, "degree": 3, "coef0": 0.5}

# K from <x, y>, ||x - y||^2 and ||x - y||_1, straight from each kernel's definition.
FORMULAS = {
    "linear": lambda q: q.dot,
    "polynomial": lambda q: (q.gamma * q.dot + q.coef0) ** q.degree,
    "rbf": lambda q: np.exp(-q.gamma * q.sqdist),
    "sigmoid": lambda q: np.tanh(q.gamma * q.dot + q.coef0),
    "laplacian": lambda q: np.exp(-q.gamma * q.l1),
}

ALL = list(KERNEL_TABLE)
FUNCTIONS = [k for k in KERNEL_TABLE if k.base != KernelBase.NONE]


def ids(kernels):
    return [k.name for k in kernels]


def numpy_kernel(kernel, X, Y, **params):
    X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    Y = Y.toarray() if sp.issparse(Y) else np.asarray(Y, dtype=np.float64)
    diff = X[:, None, :] - Y[None, :, :]
    q = SimpleNamespace(dot=X @ Y.T, sqdist=(diff ** 2).sum(axis=2),
                        l1=np.abs(diff).sum(axis=2), **{**PARAMS, **params})
    return FORMULAS[kernel.name](q)


def engine_kernel(kernel, X, Y=None, **options):
    params = {**PARAMS, **{k: v for k, v in options.items() if k in PARAMS}}
    rest = {k: v for k, v in options.items() if k not in PARAMS}
    return kernsolve.kernel_matrix(X, Y, kernel=kernel.name, n_jobs=1, **params, **rest)


def assert_close(K, R):
    scale = max(1.0, float(np.abs(R).max()))
    np.testing.assert_allclose(K, R, rtol=1e-12, atol=1e-13 * scale)


def sparse_data(n, d, density, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) > density] = 0.0
    return X


def test_every_kernel_has_a_formula_here():
    assert set(FORMULAS) == {k.name for k in FUNCTIONS}
    assert [k.code for k in KERNEL_TABLE if k.base == KernelBase.NONE] == [PRECOMPUTED]


@pytest.mark.parametrize("kernel", FUNCTIONS, ids=ids(FUNCTIONS))
def test_kernel_matrix_is_the_formula_dense_and_csr(kernel):
    # 10% dense: CSR stays sparse (the engine's gather and merge loops); dense
    # takes BLAS where the table says so; row_independent takes ks_dots there
    X = sparse_data(13, 40, 0.1, seed=1)
    Y = sparse_data(9, 40, 0.1, seed=2)
    R = numpy_kernel(kernel, X, Y)
    for x in (X, sp.csr_matrix(X)):
        for y in (Y, sp.csr_matrix(Y)):
            assert_close(engine_kernel(kernel, x, y), R)
            assert_close(engine_kernel(kernel, x, y, row_independent=True), R)
    assert_close(engine_kernel(kernel, X), numpy_kernel(kernel, X, X))


@pytest.mark.parametrize("kernel", FUNCTIONS, ids=ids(FUNCTIONS))
def test_prediction_operands_follow_the_blas_column(kernel):
    # a kernel of dot products takes sparse support vectors as dense Y^T rows
    # (and a fairly dense operand dense); any other stays on the per-value loops
    Y = sp.csr_matrix(sparse_data(9, 40, 0.1, seed=3))
    X = sparse_data(5, 40, 0.3, seed=4)
    transposed = _kernels.transposed_operand(Y, kernel.name)
    assert (transposed is not None) == kernel.blas
    K = _kernels.rows_against_operand(X, Y, kernel.name, n_jobs=1, transposed=transposed,
                                      **PARAMS)
    assert_close(K, numpy_kernel(kernel, X, Y))
    dense_enough = sp.csr_matrix(sparse_data(9, 40, 0.5, seed=5))
    assert sp.issparse(_kernels.as_operand(dense_enough, kernel.name)) != kernel.blas


@pytest.mark.parametrize("kernel", FUNCTIONS, ids=ids(FUNCTIONS))
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_row_cache_is_the_matrix(kernel, sparse):
    X = sparse_data(30, 12, 0.5, seed=6)
    K = numpy_kernel(kernel, X, X)
    rows = KernelRows(sp.csr_matrix(X) if sparse else X, kernel.code, PARAMS["degree"],
                      PARAMS["gamma"], PARAMS["coef0"], 10.0, 1)
    rows.py_swap(0, 17)                  # positions, as SMO's shrinking moves them
    perm = rows.permutation
    cached = np.stack([rows.row(p) for p in range(30)])
    scale = max(1.0, float(np.abs(K).max()))
    np.testing.assert_allclose(cached, K[np.ix_(perm, perm)].astype(np.float32),
                               rtol=2e-7, atol=1e-7 * scale)
    np.testing.assert_allclose(rows.diagonal, np.diag(K)[perm], rtol=1e-12,
                               atol=1e-13 * scale)


def test_row_cache_of_precomputed_values_is_the_values():
    X = sparse_data(20, 6, 0.7, seed=7)
    K = X @ X.T
    rows = KernelRows(K, PRECOMPUTED, 3, 0.0, 0.0, 10.0, 1)
    assert np.array_equal(np.stack([rows.row(p) for p in range(20)]), K.astype(np.float32))
    assert np.array_equal(rows.diagonal, np.diag(K))


@pytest.mark.parametrize("kernel", ALL, ids=ids(ALL))
def test_bit_sets_are_the_general_path_on_binary_data(kernel):
    rng = np.random.default_rng(8)
    B = (rng.random((60, 60)) < 0.3).astype(np.float64)
    before = _kernel.binary_rows()
    try:
        made = {}
        for on in (True, False):
            _kernel.binary_rows(on)
            made[on] = KernelRows(sp.csr_matrix(B) if kernel.bit_rows else B, kernel.code,
                                  PARAMS["degree"], PARAMS["gamma"], PARAMS["coef0"], 10.0, 1)
    finally:
        _kernel.binary_rows(before)
    assert made[True].binary == kernel.bit_rows and not made[False].binary
    bits, general = (np.stack([made[on].row(p) for p in range(60)]) for on in (True, False))
    assert np.array_equal(bits.view(np.int32), general.view(np.int32))
    if kernel.bit_rows:
        np.testing.assert_allclose(bits, numpy_kernel(kernel, B, B).astype(np.float32),
                                   rtol=2e-7, atol=1e-30)


@pytest.mark.parametrize("kernel", FUNCTIONS, ids=ids(FUNCTIONS))
def test_the_parameters_it_reads(kernel):
    X = sparse_data(8, 5, 1.0, seed=9)
    K = engine_kernel(kernel, X)
    for name, other in (("gamma", 0.7), ("coef0", -0.2), ("degree", 2)):
        changed = not np.array_equal(engine_kernel(kernel, X, **{name: other}), K)
        assert changed == (name in kernel.params), name


@pytest.mark.parametrize("kernel", FUNCTIONS, ids=ids(FUNCTIONS))
def test_a_distance_base_is_shift_invariant(kernel):
    X = sparse_data(10, 6, 1.0, seed=10)
    Y = sparse_data(7, 6, 1.0, seed=11)
    shift = np.linspace(-2.0, 3.0, 6)
    moved = engine_kernel(kernel, X + shift, Y + shift)
    K = engine_kernel(kernel, X, Y)
    if kernel.base == KernelBase.DOT:
        assert not np.allclose(moved, K, rtol=1e-6)
    else:
        np.testing.assert_allclose(moved, K, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kernel", FUNCTIONS, ids=ids(FUNCTIONS))
def test_bounded_kernels_lie_in_0_1_with_a_unit_diagonal(kernel):
    X = 3.0 * sparse_data(25, 6, 1.0, seed=12)
    K = engine_kernel(kernel, X)
    diagonal = KernelRows(X, kernel.code, PARAMS["degree"], PARAMS["gamma"],
                          PARAMS["coef0"], 10.0, 1).diagonal
    # (K(x, x) by dot products, x'x + x'x - 2 x'x, may round a little below 1)
    bounded = (K.min() >= 0.0 and K.max() <= 1.0 and np.allclose(np.diag(K), 1.0, rtol=1e-12)
               and np.all(diagonal == 1.0))
    assert bounded == kernel.bounded


@pytest.mark.parametrize("kernel", FUNCTIONS, ids=ids(FUNCTIONS))
def test_psd_kernels_give_psd_matrices(kernel):
    # gamma 1, coef0 -1: the sigmoid kernel's matrix has a negative eigenvalue
    # here; the PSD ones must not (the polynomial one with coef0 >= 0)
    X = sparse_data(40, 4, 1.0, seed=13)
    coef0 = 0.5 if "degree" in kernel.params else -1.0
    K = numpy_kernel(kernel, X, X, gamma=1.0, coef0=coef0)
    lowest = np.linalg.eigvalsh(K).min()
    assert (lowest >= -1e-10 * np.abs(K).max()) == kernel.psd


@pytest.mark.parametrize("kernel", FUNCTIONS, ids=ids(FUNCTIONS))
def test_random_features_and_the_median_trick(kernel):
    X = 0.3 * sparse_data(6, 4, 1.0, seed=14)
    if not kernel.features:
        with pytest.raises(ValueError, match="random Fourier features"):
            kernsolve.random_features(X, 10, kernel=kernel.name, gamma=0.3)
        with pytest.raises(ValueError, match="random Fourier features"):
            kernsolve.median_gamma(X, kernel=kernel.name)
        return
    Z = kernsolve.random_features(X, 20000, kernel=kernel.name, gamma=0.3, seed=1)
    np.testing.assert_allclose(Z @ Z.T / 20000, numpy_kernel(kernel, X, X), atol=0.05)
    assert kernsolve.median_gamma(X, kernel=kernel.name) > 0


def _problem(kernel):
    rng = np.random.default_rng(15)
    X = rng.standard_normal((40, 5))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 > 0.3, 1.0, -1.0)
    T = rng.standard_normal((11, 5))
    if kernel.base == KernelBase.NONE:      # the linear kernel's values, with serial numbers
        return y, np.hstack([np.arange(1, 41)[:, None], X @ X.T]), \
            np.hstack([np.zeros((11, 1)), T @ X.T]), None
    return y, X, T, X


@pytest.mark.parametrize("kernel", ALL, ids=ids(ALL))
def test_model_file_round_trip(kernel, tmp_path):
    y, X, T, features = _problem(kernel)
    model = kernsolve.train(y, X, f"-s 0 -t {kernel.code} -c 2 -g 0.3 -d 2 -r 0.5 -q")
    first, second = str(tmp_path / "first"), str(tmp_path / "second")
    kernsolve.save_model(first, model)
    loaded = kernsolve.load_model(first)
    assert loaded.param.kernel_type == kernel.code
    kernsolve.save_model(second, loaded)
    assert open(first, "rb").read() == open(second, "rb").read()
    values = decision_function(T, loaded)
    assert np.array_equal(decision_function(T, kernsolve.load_model(second)), values)
    # (the trained model's support vectors may be dense where the file's are
    # sparse: the same values up to the order of a sum)
    np.testing.assert_allclose(decision_function(T, model), values, rtol=1e-12, atol=1e-14)
    if features is None:
        return
    # and the model's kernel is the formula: sum_i coef_i K(sv_i, t) - rho
    sv = loaded.support_vectors
    sv = sv.toarray() if sp.issparse(sv) else np.asarray(sv)
    expected = numpy_kernel(kernel, T, sv, gamma=0.3, degree=2, coef0=0.5) \
        @ loaded.dual_coef[0] - loaded.rho[0]
    np.testing.assert_allclose(values[:, 0], expected, rtol=1e-9, atol=1e-9)
