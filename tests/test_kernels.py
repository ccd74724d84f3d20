"""Kernel functions and kernel_matrix against numpy formulas (LIBSVM's definitions)."""
import io

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

import kernsolve
from kernsolve._core import _kernel, _kernel_matrix
from kernsolve._kernels import as_canonical, kernel_matrix, kernel_rows

KERNELS = ["linear", "poly", "rbf", "sigmoid", "laplacian"]


def reference(X, Y, kernel, gamma, degree, coef0):
    """The kernel matrix straight from the definitions, in numpy."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    Y = Y.toarray() if sp.issparse(Y) else np.asarray(Y, dtype=np.float64)
    dot = np.einsum("ik,jk->ij", X, Y)
    diff = X[:, None, :] - Y[None, :, :]
    if kernel == "linear":
        return dot
    if kernel == "poly":
        return (gamma * dot + coef0) ** degree
    if kernel == "rbf":
        return np.exp(-gamma * np.einsum("ijk,ijk->ij", diff, diff))
    if kernel == "sigmoid":
        return np.tanh(gamma * dot + coef0)
    if kernel == "laplacian":
        return np.exp(-gamma * np.abs(diff).sum(axis=2))
    raise AssertionError(kernel)


def assert_close(K, R):
    # rtol 1e-12 on each entry; the absolute floor only matters where an
    # inner product cancels to ~0 (its error is relative to the terms).
    scale = max(1.0, float(np.abs(R).max()))
    np.testing.assert_allclose(K, R, rtol=1e-12, atol=1e-13 * scale)


def sparse_random(rng, n, d, density):
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) > density] = 0.0
    return X


@pytest.fixture(scope="module")
def a9a_slice():
    from conftest import shared_lines
    X, y = load_svmlight_file(io.BytesIO(shared_lines("a9a", 400)), n_features=123)
    return X.tocsr(), y


@pytest.fixture(scope="module")
def heart():
    from conftest import shared_lines
    X, y = load_svmlight_file(io.BytesIO(shared_lines("heart_scale")), n_features=13)
    return X.tocsr(), y


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("x_sparse,y_sparse", [(False, False), (True, True),
                                               (True, False), (False, True)])
@pytest.mark.parametrize("densify", [True, False])
def test_kernel_matrix_matches_formula(kernel, x_sparse, y_sparse, densify, monkeypatch):
    # densify=False forces the gather/merge loops even for these fairly dense inputs
    import kernsolve._kernels as kk
    monkeypatch.setattr(kk, "_DENSIFY_MIN_DENSITY", 0.15 if densify else 2.0)
    rng = np.random.default_rng(1)
    X = sparse_random(rng, 37, 11, 0.4)
    Y = sparse_random(rng, 23, 11, 0.6)
    gamma, degree, coef0 = 0.37, 3, 0.5
    R = reference(X, Y, kernel, gamma, degree, coef0)
    K = kernel_matrix(sp.csr_matrix(X) if x_sparse else X,
                      sp.csr_matrix(Y) if y_sparse else Y,
                      kernel=kernel, gamma=gamma, degree=degree, coef0=coef0, n_jobs=1)
    assert K.dtype == np.float64 and K.shape == (37, 23)
    assert_close(K, R)


@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_matrix_on_real_data(kernel, a9a_slice, heart):
    for X in (a9a_slice[0][:120], heart[0][:90]):
        gamma = 1.0 / X.shape[1]
        R = reference(X, X, kernel, gamma, 3, 0.25)
        for n_jobs in (1, 2):
            for M in (X, X.toarray()):
                K = kernel_matrix(M, kernel=kernel, coef0=0.25, n_jobs=n_jobs)
                assert_close(K, R)


def test_defaults_follow_libsvm(heart):
    X = heart[0][:50]
    # gamma None = 1/n_features, degree 3, coef0 0, rbf by default
    K = kernel_matrix(X)
    assert_close(K, reference(X, X, "rbf", 1 / 13, 3, 0.0))
    assert_close(kernel_matrix(X, kernel="poly"), reference(X, X, "poly", 1 / 13, 3, 0.0))
    # LIBSVM's integer codes
    for code, name in [(0, "linear"), (1, "poly"), (2, "rbf"), (3, "sigmoid"), (5, "laplacian")]:
        assert np.array_equal(kernel_matrix(X, kernel=code), kernel_matrix(X, kernel=name))
    assert np.array_equal(kernel_matrix(X, kernel="polynomial"), kernel_matrix(X, kernel="poly"))
    # the public name is the same function
    assert kernsolve.kernel_matrix is kernel_matrix


def test_kernel_matrix_matches_libsvm_rbf(heart):
    # Independent oracle: decision values of a LIBSVM model are sums of its
    # kernel values; recompute them with kernel_matrix.
    libsvm = pytest.importorskip("libsvm.svmutil")
    X, y = heart
    rows = [{int(k) + 1: float(v) for k, v in zip(r.indices, r.data)} for r in X]
    prob = libsvm.svm_problem(y.tolist(), rows)
    model = libsvm.svm_train(prob, libsvm.svm_parameter("-q -t 2 -g 0.2 -c 1"))
    sv_idx = np.array(model.get_sv_indices()) - 1
    coef = np.array([c[0] for c in model.get_sv_coef()])
    rho = model.rho[0]
    _, _, dec = libsvm.svm_predict(y.tolist(), rows, model, "-q")
    # LIBSVM's decision value for labels[0] vs labels[1]: sum_i coef_i K(sv_i, x) - rho
    K = kernel_matrix(X, X[sv_idx], kernel="rbf", gamma=0.2)
    np.testing.assert_allclose(K @ coef - rho, np.array(dec)[:, 0], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("densify", [True, False])
def test_one_vs_two_threads_identical_bits(a9a_slice, densify, monkeypatch):
    import kernsolve._kernels as kk
    monkeypatch.setattr(kk, "_DENSIFY_MIN_DENSITY", 0.05 if densify else 2.0)
    X = a9a_slice[0]
    from conftest import shared_lines
    W, _ = load_svmlight_file(io.BytesIO(shared_lines("a9a", 4000)), n_features=123)
    W = W.tocsr()
    rng = np.random.default_rng(3)
    D = rng.random((300, 60))
    # each shape takes a different path: row groups, columns of few rows, mixed, tiles
    for kernel in KERNELS:
        for A, B in ((X, X[:150]), (W[:2], W), (X.toarray(), X), (D, D[:2]), (D[:3], D)):
            K1 = kernel_matrix(A, B, kernel=kernel, coef0=0.1, n_jobs=1)
            K2 = kernel_matrix(A, B, kernel=kernel, coef0=0.1, n_jobs=2)
            assert K1.tobytes() == K2.tobytes()


def test_huge_feature_indices_use_merge_and_remap():
    # Columns far beyond 2**22 (sorted-merge path) and beyond 2**31 (renumbered).
    rng = np.random.default_rng(4)
    dense = sparse_random(rng, 20, 9, 0.5)
    S = sp.csr_matrix(dense)
    mid = np.array([3, 70, 5_000_000, 2**22 + 1, 2**25, 2**27, 2**29, 2**30, 2**30 + 3])
    huge = np.array([3, 70, 5_000_000, 2**30, 2**31 + 7, 2**33, 2**35, 2**36 + 1, 2**40])
    for cols, width in ((mid, 2**30 + 5), (huge, 2**41)):
        wide = sp.csr_matrix((S.data, cols[S.indices], S.indptr), shape=(20, width))
        for kernel in KERNELS:
            K = kernel_matrix(wide, wide[:7], kernel=kernel, gamma=0.3, coef0=0.2)
            assert_close(K, reference(dense, dense[:7], kernel, 0.3, 3, 0.2))
        kr = kernel_rows(wide, kernel="laplacian", gamma=0.3, cache_mb=0)
        np.testing.assert_allclose(kr.row(4), reference(dense, dense, "laplacian", 0.3, 3, 0)[4],
                                   rtol=2e-7)
    wide = sp.csr_matrix((S.data, huge[S.indices], S.indptr), shape=(20, 2**41))
    # Renumbering is only for a matrix's own Gram rows; anything that could
    # carry the new numbers into a model or a second matrix refuses the width.
    C = as_canonical(wide, renumber=True)
    assert C.shape[1] == len(np.unique(huge[S.indices]))
    assert C.indices.dtype == np.int32 and C.indptr.dtype == np.int64
    with pytest.raises(ValueError, match=r"X has 2199023255552 columns: .*below 2\*\*31"):
        as_canonical(wide)


def test_default_gamma_uses_declared_width():
    X = sp.csr_matrix(np.array([[1.0, 0, 2.0], [0, 1.0, 0]]))
    wide = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(2, 50))
    assert_close(kernel_matrix(wide), reference(X, X, "rbf", 1 / 50, 3, 0))


def test_as_canonical_forms():
    A = np.arange(12, dtype=np.int64).reshape(3, 4)[:, ::2]
    C = as_canonical(A)
    assert C.dtype == np.float64 and C.flags.c_contiguous and np.array_equal(C, A)
    # unsorted indices and duplicates become sorted, summed; the input is untouched
    M = sp.csr_matrix((np.array([1.0, 2.0, 3.0]), np.array([2, 0, 2]), np.array([0, 3])),
                      shape=(1, 3))
    before = M.indices.copy()
    C = as_canonical(M)
    assert C.indices.tolist() == [0, 2] and C.data.tolist() == [2.0, 4.0]
    assert np.array_equal(M.indices, before)
    assert C.indices.dtype == np.int32 and C.indptr.dtype == np.int64
    C = as_canonical(sp.coo_matrix(np.eye(3, dtype=np.float32)))
    assert sp.isspmatrix_csr(C) and C.dtype == np.float64


@pytest.mark.parametrize("bad,match", [
    (np.array([[1.0, np.nan]]), "NaN or infinity"),
    (np.array([[1.0, np.inf]]), "NaN or infinity"),
    (sp.csr_matrix(np.array([[0.0, -np.inf]])), "NaN or infinity"),
    (np.zeros(3), "2-D"),
    (np.zeros((2, 2, 2)), "2-D"),
    (np.zeros((0, 3)), "empty"),
    (np.zeros((3, 0)), "empty"),
    (sp.csr_matrix((0, 4)), "empty"),
    (np.array([["a", "b"]]), "real numbers"),
    (np.array([[1 + 2j]]), "real numbers"),
])
def test_bad_data(bad, match):
    with pytest.raises(ValueError, match=match):
        as_canonical(bad)
    with pytest.raises(ValueError, match=match):
        kernel_matrix(bad)


@pytest.mark.parametrize("kwargs,match", [
    (dict(kernel="gaussian"), "unknown kernel"),
    (dict(kernel=7), "unknown kernel"),
    (dict(kernel=True), "unknown kernel"),
    (dict(kernel="precomputed"), "precomputed"),
    (dict(kernel=4), "precomputed"),
    (dict(gamma=-0.1), "gamma"),
    (dict(gamma=np.nan), "gamma"),
    (dict(gamma="1"), "gamma"),
    (dict(kernel="poly", degree=-1), "degree"),
    (dict(kernel="poly", degree=2.5), "degree"),
    (dict(coef0=np.inf), "coef0"),
    (dict(n_jobs=0), "n_jobs"),
])
def test_bad_parameters(kwargs, match):
    X = np.eye(3)
    with pytest.raises(ValueError, match=match):
        kernel_matrix(X, **kwargs)


def test_mismatched_widths():
    with pytest.raises(ValueError, match="3 features but Y has 4"):
        kernel_matrix(np.eye(3), np.ones((2, 4)))
    with pytest.raises(ValueError, match="3 features but Y has 4"):
        kernel_matrix(sp.csr_matrix(np.eye(3)), np.ones((2, 4)))


def test_core_refuses_non_canonical_input():
    with pytest.raises(ValueError, match="canonical"):
        _kernel.KernelRows(np.eye(3, dtype=np.float32), 2, 3, 0.5, 0.0, 1.0, 1)
    with pytest.raises(ValueError, match="canonical"):
        _kernel.KernelRows(sp.csc_matrix(np.eye(3)), 2, 3, 0.5, 0.0, 1.0, 1)
    with pytest.raises(ValueError, match="unknown kernel type"):
        _kernel.KernelRows(np.eye(3), 9, 3, 0.5, 0.0, 1.0, 1)
    with pytest.raises(ValueError, match="gamma"):
        _kernel.KernelRows(np.eye(3), 2, 3, -0.5, 0.0, 1.0, 1)
    with pytest.raises(ValueError, match="cache"):
        _kernel.KernelRows(np.eye(3), 2, 3, 0.5, 0.0, -1.0, 1)
    with pytest.raises(ValueError, match="precomputed"):
        _kernel.KernelRows(np.ones((3, 4)), 4, 3, 0.5, 0.0, 1.0, 1)


# ------------------------------------------------------------- KernelRows rows

@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("sparse", [False, True])
def test_kernel_rows_match_formula_at_float32(kernel, sparse, a9a_slice):
    X = a9a_slice[0][:150]
    gamma = 1.0 / 123
    R = reference(X, X, kernel, gamma, 2, 0.3)
    kr = kernel_rows(X if sparse else X.toarray(), kernel=kernel, degree=2, coef0=0.3,
                     cache_mb=1, n_jobs=2)
    for p in (0, 7, 149):
        row = kr.row(p)
        assert row.dtype == np.float32
        # K computed in double then rounded once to float
        np.testing.assert_allclose(row, R[p].astype(np.float32), rtol=2e-7, atol=1e-30)
        assert kr.py_eval(p, 3) == pytest.approx(R[p, 3], rel=1e-12, abs=1e-13)
    diag = np.diag(R) if kernel not in ("rbf", "laplacian") else np.ones(150)
    np.testing.assert_allclose(kr.diagonal, diag, rtol=1e-12)


def test_precomputed_rows(heart):
    X = heart[0][:60]
    K = reference(X, X, "rbf", 0.1, 3, 0)
    kr = kernel_rows(K, kernel="precomputed", cache_mb=0)
    assert np.array_equal(kr.row(5), K[5].astype(np.float32))
    assert np.array_equal(kr.diagonal, np.diag(K))
    kr.py_swap(5, 9)
    assert kr.py_eval(5, 9) == K[9, 5]
    with pytest.raises(ValueError, match="square"):
        kernel_rows(K[:5], kernel="precomputed")


def test_kernel_rows_threads_identical_bits(a9a_slice):
    from conftest import shared_lines
    X, _ = load_svmlight_file(io.BytesIO(shared_lines("a9a", 4000)), n_features=123)
    D = np.random.default_rng(5).random((1500, 64))
    for data in (X.tocsr(), D):
        for kernel in KERNELS:
            rows = []
            for n_jobs in (1, 2):
                kr = kernel_rows(data, kernel=kernel, cache_mb=0, n_jobs=n_jobs)
                kr.py_swap(0, 17)
                rows.append(np.concatenate([kr.row(p) for p in (0, 3, 17)]))
            assert rows[0].tobytes() == rows[1].tobytes()


def test_large_dense_blocks_match_cdist_and_threads():
    # Several BLAS tiles (128 x 1024) and Y blocks; oracle: scipy's cdist.
    from scipy.spatial.distance import cdist
    rng = np.random.default_rng(9)
    X = rng.random((300, 20))
    Y = rng.random((1100, 20))
    g = 0.2
    oracle = {
        "linear": X @ Y.T,
        "rbf": np.exp(-g * cdist(X, Y, "sqeuclidean")),
        "laplacian": np.exp(-g * cdist(X, Y, "cityblock")),
        "sigmoid": np.tanh(g * (X @ Y.T) + 0.5),
        "poly": (g * (X @ Y.T) + 0.5) ** 3,
    }
    for kernel, R in oracle.items():
        K1 = kernel_matrix(X, Y, kernel=kernel, gamma=g, coef0=0.5, n_jobs=1)
        K2 = kernel_matrix(X, Y, kernel=kernel, gamma=g, coef0=0.5, n_jobs=2)
        assert K1.tobytes() == K2.tobytes()
        assert_close(K1, R)
        # the sparse path agrees with the dense one
        K3 = kernel_matrix(sp.csr_matrix(X), Y, kernel=kernel, gamma=g, coef0=0.5, n_jobs=2)
        assert_close(K3, R)


def test_core_refuses_corrupt_csr():
    good = sp.csr_matrix(np.eye(3))
    bad_col = sp.csr_matrix((good.data, good.indices.copy(), good.indptr), shape=(3, 3))
    bad_col.indices[1] = 7
    with pytest.raises(ValueError, match="column index out of range"):
        _kernel.KernelRows(bad_col, 2, 3, 0.5, 0.0, 1.0, 1)
    bad_ptr = sp.csr_matrix((good.data, good.indices, good.indptr), shape=(3, 3))
    bad_ptr.indptr = np.array([0, 2, 1, 3])
    with pytest.raises(ValueError, match="row pointers"):
        _kernel_matrix._kernel_matrix(bad_ptr, good, 2, 3, 0.5, 0.0, 1)


def test_as_operand_densifies_only_when_useful(a9a_slice):
    from kernsolve._kernels import as_operand
    rng = np.random.default_rng(11)
    dense_ish = sp.csr_matrix(sparse_random(rng, 30, 8, 0.6))
    assert isinstance(as_operand(dense_ish, "rbf"), np.ndarray)
    assert sp.issparse(as_operand(dense_ish, "laplacian"))
    assert sp.issparse(as_operand(a9a_slice[0], "rbf"))       # 11% nonzeros
    Q = rng.random((5, 8))
    np.testing.assert_array_equal(kernel_matrix(Q, as_operand(dense_ish)),
                                  kernel_matrix(Q, dense_ish))
