"""Kernel values shared between the fits of cross-validation and grid search
(issue 35 item 1): the same models, rates and best cell as the unshared path
(``--cold``, every fit computing its own kernel values), bit for bit."""
import contextlib
import io
import lzma

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics.pairwise import polynomial_kernel, rbf_kernel

import kernsolve
from kernsolve import cross_validation, grid_search, parse_options, read_problem, train
from kernsolve._core._kernel import KernelRows, _gram_mirrored, kernel_gram
from kernsolve._kernels import as_canonical
from kernsolve.model_selection.cv import make_folds, train_rows
from kernsolve.solvers.libsvm.shared_kernel import SharedKernel

GRID = {"c": [0.5, 2.0, 8.0, 32.0], "g": [0.5, 0.125, 2.0 ** -5]}


@pytest.fixture(scope="module")
def heart():
    return read_problem(kernsolve.dataset_path("heart_scale"))


@pytest.fixture
def a9a(shared):
    """Sparse binary rows (the kernel engine's bit-set path in the unshared fits)."""
    return read_problem(io.BytesIO(shared.lines("a9a", 400)))


@pytest.fixture
def svmguide1(shared):
    """Dense rows, both classes (the file is sorted by class: every 6th row)."""
    return read_problem(io.BytesIO(b"".join(shared.lines("svmguide1").splitlines(True)[::6])))


def test_kernel_gram_is_the_engine_rows_and_the_kernel(heart):
    y, X = heart
    Xc = as_canonical(X)
    G = kernel_gram(Xc, 2, 3, 0.25, 0.0, 2)
    assert G.dtype == np.float32 and G.shape == (270, 270)
    # oracle 1: scikit-learn's kernel, to float32 rounding
    np.testing.assert_allclose(G, rbf_kernel(X.toarray(), gamma=0.25), rtol=1e-6, atol=1e-7)
    # oracle 2: the rows a KernelRows computes, bit for bit (any thread count)
    rows = KernelRows(Xc, 2, 3, 0.25, 0.0, 1.0, 1)
    for p in (0, 17, 269):
        np.testing.assert_array_equal(G[p], rows.row(p))
    np.testing.assert_array_equal(G, kernel_gram(Xc, 2, 3, 0.25, 0.0, 1))
    P = kernel_gram(Xc, 1, 2, 0.5, 1.0, 2)
    np.testing.assert_allclose(P, polynomial_kernel(X.toarray(), degree=2, gamma=0.5,
                                                    coef0=1.0), rtol=1e-6)
    with pytest.raises(ValueError, match="precomputed kernel is its own matrix"):
        kernel_gram(np.eye(3), 4, 3, 0.0, 0.0, 1)


@pytest.mark.parametrize("rows", ["dense", "same columns", "other columns"])
@pytest.mark.parametrize("kind, degree, gamma, coef0", [
    (0, 3, 0.0, 0.0), (1, 3, 0.3, 1.0), (2, 3, 0.7, 0.0), (3, 3, 0.05, -0.5),
    (5, 3, 0.4, 0.0)])
def test_kernel_gram_mirrored_or_not_is_every_engine_row(rows, kind, degree, gamma, coef0):
    """The matrix is computed above its diagonal and mirrored where each
    pair's two orders are the same bits (dense rows, sparse rows that all
    hold the same columns; kernels of <x, y> or ||x - y||^2), and whole
    otherwise: either way every row is the row a KernelRows computes for
    that data row, bit for bit (oracle: those rows, every one; the Laplacian
    and rows of other columns are the cases whose two orders differ)."""
    rng = np.random.default_rng(kind)
    A = rng.standard_normal((150, 40))
    if rows == "dense":
        X = A
    elif rows == "same columns":     # every row nonzero in the same 30 of 40 columns
        A[:, ::4] = 0.0
        X = sp.csr_matrix(A)
    else:
        A[rng.random(A.shape) < 0.4] = 0.0
        X = sp.csr_matrix(A)
    Xc = as_canonical(X)
    assert _gram_mirrored(Xc, kind) == (rows != "other columns" and kind != 5)
    G = kernel_gram(Xc, kind, degree, gamma, coef0, 1)
    engine = KernelRows(Xc, kind, degree, gamma, coef0, 100.0, 1)
    np.testing.assert_array_equal(G, np.array([engine.row(p) for p in range(150)]))


def _assert_same_model(a, b):
    np.testing.assert_array_equal(a.dual_coef, b.dual_coef)
    np.testing.assert_array_equal(a.rho, b.rho)
    np.testing.assert_array_equal(a.support_indices, b.support_indices)
    for name in ("prob_a", "prob_b", "prob_density_marks"):
        x, z = getattr(a, name), getattr(b, name)
        assert (x is None) == (z is None)
        if x is not None:
            np.testing.assert_array_equal(x, z)
    assert a.stats["n_iter"] == b.stats["n_iter"]


@pytest.mark.parametrize("options", [
    "-c 4 -g 0.5", "-s 1 -n 0.3 -g 0.2", "-s 2 -n 0.2", "-s 3 -p 0.2 -c 2",
    "-s 4 -n 0.4 -c 2", "-c 2 -b 1", "-t 1 -d 2 -c 0.5", "-t 5 -g 0.1", "--bias 0 -c 2",
])
def test_fit_on_shared_kernel_is_the_fit_that_computes_it(heart, options):
    """A fit on rows of X reading the full matrix gives the unshared fit's model."""
    y, X = heart
    rows = train_rows(make_folds(y, 5, 0), 2)
    param = parse_options(options + " -q")
    shared = SharedKernel.compute(X, param, 2)
    cold = train(y[rows], X[rows], param, n_jobs=2)
    warm = train(y[rows], X[rows], param, n_jobs=1, _shared=shared.view(rows))
    _assert_same_model(cold, warm)


def test_shared_kernel_with_sample_weights_and_sparse_binary_rows(a9a):
    y, X = a9a
    rows = train_rows(make_folds(y, 4, 0), 1)
    sw = np.linspace(0, 2, y.size)        # row 0 weighs 0: the driver drops it
    param = parse_options("-c 2 -g 0.05 -q")
    shared = SharedKernel.compute(X, param, 2)
    cold = train(y[rows], X[rows], param, sample_weight=sw[rows], n_jobs=2)
    warm = train(y[rows], X[rows], param, sample_weight=sw[rows], n_jobs=2,
                 _shared=shared.view(rows))
    _assert_same_model(cold, warm)


def test_shared_kernel_refuses_another_kernel(heart):
    y, X = heart
    shared = SharedKernel.compute(X, parse_options("-g 0.5"), 1)
    with pytest.raises(ValueError, match="is not the shared one"):
        train(y, X, "-g 0.25 -q", _shared=shared)
    with pytest.raises(ValueError, match="only for the LIBSVM driver's solvers"):
        train(y, X, "--solver dsg -q", _shared=shared)


@pytest.mark.parametrize("options", ["-c 4 -g 0.5", "-s 1 -n 0.3", "-s 2 -n 0.2",
                                     "-s 3 -p 0.2 -c 2", "-c 2 -b 1"])
def test_cross_validation_equals_cold(heart, options):
    y, X = heart
    shared = cross_validation(y, X, options + " -q", n_folds=5, n_jobs=2)
    cold = cross_validation(y, X, options + " -q --cold", n_folds=5, n_jobs=2)
    np.testing.assert_array_equal(shared.target, cold.target)
    assert [f["n_SV"] for f in shared.fold_results] == [f["n_SV"] for f in cold.fold_results]


def test_cross_validation_says_whether_it_shares(heart, capsys):
    y, X = heart
    cold = cross_validation(y, X, "-c 2 --cold", n_folds=3, n_jobs=2)
    assert capsys.readouterr().out.splitlines()[0] == (
        "cross validation: kernel values not shared (--cold): each of the 3 folds "
        "computes its own")
    # -m smaller than the 270 x 270 float32 matrix (0.28 MB): today's path, said so
    small = cross_validation(y, X, "-c 2 -m 0.2", n_folds=3, n_jobs=2)
    assert capsys.readouterr().out.splitlines()[0] == (
        "cross validation: kernel values not shared (the 270 x 270 kernel matrix (0.3 MB) "
        "does not fit in -m 0.2): each of the 3 folds computes its own")
    np.testing.assert_array_equal(cold.target, small.target)
    cross_validation(y, X, "-c 2", n_folds=3, n_jobs=2, backend="loky")
    assert "(the fits run in other processes)" in capsys.readouterr().out
    cross_validation(y, X, "-c 2 --solver sbp", n_folds=3, n_jobs=2)
    assert "(--solver sbp computes its own)" in capsys.readouterr().out


@pytest.mark.parametrize("data", ["heart", "a9a", "svmguide1"])
def test_grid_every_cell_and_best_equal_cold(data, request):
    y, X = request.getfixturevalue(data)
    shared = grid_search(y, X, "-q", grid=GRID, n_folds=5, n_jobs=2)
    cold = grid_search(y, X, "-q --cold", grid=GRID, n_folds=5, n_jobs=2)
    assert [c["label"] for c in shared.cells] == [c["label"] for c in cold.cells]
    assert [c["rate"] for c in shared.cells] == [c["rate"] for c in cold.cells]
    assert shared.best_params == cold.best_params
    assert shared.summary_line() == cold.summary_line()


def test_grid_regression_equals_cold(shared):
    y, X = read_problem(io.BytesIO(shared.lines("housing_scale", 200)))
    grid = {"c": [1.0, 16.0], "g": [0.5, 0.125], "p": [0.1, 0.5]}
    a = grid_search(y, X, "-s 3 -q", grid=grid, n_folds=3, n_jobs=2)
    b = grid_search(y, X, "-s 3 -q --cold", grid=grid, n_folds=3, n_jobs=2)
    assert [c["rate"] for c in a.cells] == [c["rate"] for c in b.cells]
    assert a.summary_line() == b.summary_line()


def run_grid(*args):
    from kernsolve.cli import grid as cli_grid
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_grid.cli([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def test_cli_best_line_and_out_file_equal_cold(heart, tmp_path, monkeypatch):
    data = tmp_path / "heart"
    with lzma.open(kernsolve.dataset_path("heart_scale"), "rb") as f:
        data.write_bytes(f.read())
    monkeypatch.chdir(tmp_path)
    common = ["-log2c", "-1,5,2", "-log2g", "-5,-1,2", "-v", "4", "-png", "null",
              "--threads", "2"]
    code, out, err = run_grid(*common, "-out", "shared.out", data)
    assert code == 0, err
    lines = out.splitlines()
    assert sum(s.startswith("kernel values of rbf g=") for s in lines) == 3   # 3 gammas
    code, cold_out, err = run_grid(*common, "-out", "cold.out", "-q", "--cold", data)
    assert code == 0, err
    assert lines[-1] + "\n" == cold_out       # grid.py's best line
    # every cell's rate, with every digit (the lines come in another order)
    assert sorted((tmp_path / "shared.out").read_text().splitlines()) == \
        sorted((tmp_path / "cold.out").read_text().splitlines())


def test_binary_rows_keep_their_bit_sets_instead_of_sharing(a9a, heart):
    # a9a's 0/1 rows: the row cache computes kernel rows from bit sets, cheaper
    # than copying a row of the shared matrix (the grid took 15.4 s shared, 13.4
    # s without: benchmarks/CURRENT.md#grid-a9a2000); other data still share
    from kernsolve._core import _kernel
    from kernsolve.model_selection.cv import sharing_refused
    y, X = a9a
    assert "bit sets" in sharing_refused(X, parse_options("-q"), None)
    assert sharing_refused(heart[1], parse_options("-q"), None) is None
    assert sharing_refused(X, parse_options("-q -t 4"), None) != sharing_refused(
        X, parse_options("-q"), None)
    before = _kernel.binary_rows(False)          # without bit sets, sharing pays
    try:
        assert sharing_refused(X, parse_options("-q"), None) is None
    finally:
        _kernel.binary_rows(before)


def test_weighted_sums_are_the_decision_values_of_the_exact_kernel(heart):
    """``SharedKernel.weighted_sums``: held-out rows' sums of weighted kernel
    values read from whole rows of the float32 matrix, for one weight vector
    and for the columns of a matrix of them (a warm chain's C values in one
    product).  Oracle: scikit-learn's float64 RBF kernel on the same rows and
    columns, within float32 rounding."""
    y, X = heart
    Xd = X.toarray()
    shared = SharedKernel.compute(X, parse_options("-g 0.5"), 1)
    exact = rbf_kernel(Xd, Xd, gamma=0.5)
    rng = np.random.default_rng(3)
    rows = np.sort(rng.choice(y.size, 50, replace=False))
    spread = np.zeros((y.size, 3))          # weights over all the rows, zero off `cols`
    for j, n_cols in enumerate((120, 30, 75)):
        cols = rng.choice(np.setdiff1d(np.arange(y.size), rows), n_cols, replace=False)
        spread[cols, j] = rng.standard_normal(n_cols) * 8
        expected = exact[np.ix_(rows, cols)] @ spread[cols, j]
        bound = 1e-6 * np.abs(spread[:, j]).sum()
        np.testing.assert_allclose(shared.weighted_sums(rows, spread[:, j]), expected,
                                   rtol=0, atol=bound)
    expected = exact[rows] @ spread
    together = shared.weighted_sums(rows, spread)
    assert together.shape == (rows.size, 3)
    np.testing.assert_allclose(together, expected, rtol=0,
                               atol=1e-6 * np.abs(spread).sum(axis=0).max())
