"""EigenPro's model on p centres (``--solver eigenpro --centers p``, FALKON).

Oracles: numpy's closed forms -- with p = n centres, kernel ridge regression
``numpy.linalg.solve(K + n lambda I, Y)``; with p < n, the Nystrom (projected)
ridge solution ``solve(K_nM^T K_nM + n lambda K_MM, K_nM^T Y)`` -- on kernel
matrices written out in numpy; LIBSVM's own reader and predictor for the
regression model file; the exact bytes of a saved model.
"""
import contextlib
import io
import re

import numpy as np
import pytest
import scipy.sparse as sp

import kernsolve
from kernsolve import Parameters
from kernsolve.cli import train as cli_train
from kernsolve.estimators.eigenpro import EigenProClassifier, EigenProRegressor
from kernsolve.solvers.eigenpro import centres
from kernsolve.solvers.eigenpro import nystrom
from kernsolve.solvers.eigenpro.model import EigenProModel
from kernsolve.solvers.eigenpro.train import eigenpro_options, fit_eigenpro


@pytest.fixture(autouse=True)
def _one_blas_thread():
    # The oracles' dense linear algebra on one thread (a busy 2-core machine).
    threadpoolctl = pytest.importorskip("threadpoolctl")
    with threadpoolctl.threadpool_limits(1, user_api="blas"):
        yield


def _rbf(A, B, gamma):
    d2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(axis=2)
    return np.exp(-gamma * d2)


def _problem(n=240, d=4, outputs=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d))
    Y = np.column_stack([np.sin(2 * X @ rng.normal(size=d)) for _ in range(outputs)])
    return X, Y


def _opts(n, **extra):
    return eigenpro_options(Parameters(solver="eigenpro", extra=extra), n)


def _classes(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] > 0).astype(int) + 2 * (X[:, 1] > 0.3)
    return y.astype(float), X


# --------------------------------------------------------------------------
# closed forms
# --------------------------------------------------------------------------

def test_all_rows_as_centres_is_kernel_ridge():
    X, Y = _problem()
    n, gamma, lam = X.shape[0], 0.7, 1e-3
    res = fit_eigenpro(X, Y, gamma=gamma, options=_opts(n, centers=n, **{"lambda": lam},
                                                        epochs=60))
    np.testing.assert_array_equal(res.centres, np.arange(n))
    ref = np.linalg.solve(_rbf(X, X, gamma) + n * lam * np.eye(n), Y)
    np.testing.assert_allclose(res.alpha, ref, rtol=0, atol=1e-7 * np.abs(ref).max())
    assert res.stats["relative_residual"] < 1e-10


@pytest.mark.parametrize("p, lam", [(40, 1e-4), (90, 1e-7)])
def test_fewer_centres_is_the_nystrom_least_squares_solution(p, lam, monkeypatch):
    # several row blocks (and a partial last one), so the blocked sums are tested too
    monkeypatch.setattr(nystrom, "BLOCK_VALUES", 37 * p)
    X, Y = _problem()
    n, gamma = X.shape[0], 0.7
    res = fit_eigenpro(X, Y, gamma=gamma, options=_opts(n, centers=p, **{"lambda": lam},
                                                        epochs=100))
    assert res.stats["row_blocks"] == 7
    S = res.centres
    assert S.size == p and np.all(np.diff(S) > 0) and S[0] >= 0 and S[-1] < n
    K_nM, K_MM = _rbf(X, X[S], gamma), _rbf(X[S], X[S], gamma)
    ref = np.linalg.solve(K_nM.T @ K_nM + n * lam * K_MM, K_nM.T @ Y)
    # the fitted function; with a tiny lambda the coefficients are as
    # ill-conditioned as K_MM, the function is not
    np.testing.assert_allclose(K_nM @ res.alpha, K_nM @ ref, rtol=0, atol=1e-6)
    if lam >= 1e-4:
        np.testing.assert_allclose(res.alpha, ref, rtol=0, atol=1e-6 * np.abs(ref).max())


def test_one_output_and_callback():
    X, Y = _problem(outputs=1)
    seen = []
    res = fit_eigenpro(X, Y[:, 0], gamma=0.7, options=_opts(X.shape[0], centers=50, epochs=6),
                       callback=lambda it, a: seen.append((it, a.shape)) or it == 4)
    assert res.alpha.shape == (50,)
    assert seen == [(1, (50,)), (2, (50,)), (3, (50,)), (4, (50,))]
    assert res.stats["epochs"] == 4


# --------------------------------------------------------------------------
# determinism
# --------------------------------------------------------------------------

def test_same_bits_for_threads_and_cache_and_seed_draws_centres(monkeypatch):
    monkeypatch.setattr(nystrom, "BLOCK_VALUES", 60 * 80)
    y, X = _classes(1000)
    base = "-g 0.3 --solver eigenpro --centers 80 --epochs 4 -q"
    one = kernsolve.train(y, X, base + " --seed 3 --threads 1")
    two = kernsolve.train(y, X, base + " --seed 3 --threads 2")
    # -m: one of the 17 row blocks cached (the others recomputed every iteration)
    small = kernsolve.train(y, X, base + " --seed 3 --threads 2 -m 0.04")
    assert one.stats["row_blocks"] == 17 and small.stats["cached_blocks"] == 1
    assert one.stats["cached_blocks"] == 17
    assert one.coef.tobytes() == two.coef.tobytes() == small.coef.tobytes()
    assert one.centres.tobytes() == two.centres.tobytes()
    other = kernsolve.train(y, X, base + " --seed 4 --threads 2")
    assert not np.array_equal(one.centres.toarray() if sp.issparse(one.centres)
                              else one.centres, other.centres)


def test_sparse_input_gives_the_dense_model():
    y, X = _classes(300)
    opts = "-g 0.3 --solver eigenpro --centers 60 --epochs 5 -q"
    dense = kernsolve.train(y, X, opts)
    sparse = kernsolve.train(y, sp.csr_matrix(X), opts)
    np.testing.assert_allclose(sparse.coef, dense.coef, rtol=1e-9, atol=1e-9)


# --------------------------------------------------------------------------
# options
# --------------------------------------------------------------------------

@pytest.mark.parametrize("options, message", [
    ("--centers 0", "--centers: the number of centres p must be >= 1, got 0"),
    ("--centers 301", r"--centers: p = 301 is larger than the training set \(n = 300\)"),
    ("--centers 2.5", "--centers: expected an integer, got 2.5"),
    ("--centers 10 --lambda -1", "--lambda: lambda must be >= 0, got -1"),
    ("--lambda 0.1", "--lambda: only the centres' model"),
    ("--centers 10 --batch-size 10", "--centers: .* takes no --batch-size"),
    ("--centers 10 --eigen-directions 5", "--centers: .* takes no --eigen-directions"),
    ("--centers 10 --features 10", "--centers: .* takes no --features"),
])
def test_bad_options(options, message):
    y, X = _classes(300)
    with pytest.raises(ValueError, match=message):
        kernsolve.train(y, X, "--solver eigenpro -q " + options)


def test_kernel_sgd_has_no_centres():
    y, X = _classes(100)
    with pytest.raises(ValueError, match="not an option of solver 'kernel-sgd'"):
        kernsolve.train(y, X, "--solver kernel-sgd --centers 10")


@pytest.mark.parametrize("value, message", [
    ("0", "--centers: the number of centres p must be >= 1, got 0"),
    ("1000", r"--centers: p = 1000 is larger than the training set \(n = 270\)"),
    ("ten", "--centers"),
])
def test_command_line_errors(shared, tmp_path, value, message):
    err = io.StringIO()
    out = tmp_path / "m.model"
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli_train.cli(["--solver", "eigenpro", "--centers", value,
                              shared.path("heart_scale"), str(out)])
    assert code == 1
    lines = err.getvalue().splitlines()
    assert "Traceback" not in err.getvalue()
    assert re.search("^kernsolve-train: " + message, lines[0]), lines[0]
    assert not out.exists()


# --------------------------------------------------------------------------
# model files
# --------------------------------------------------------------------------

def test_classification_model_round_trip(tmp_path, shared):
    y, X = kernsolve.read_problem(shared.path("heart_scale"))
    model = kernsolve.train(y, X, "-g 0.1 --solver eigenpro --centers 50 --epochs 8 -q")
    assert isinstance(model, EigenProModel) and model.centres.shape[0] == 50
    path = tmp_path / "c.model"
    model.save(str(path))
    text = path.read_text().splitlines()
    assert text[0] == "kernsolve_model eigenpro" and "total_sv 50" in text
    loaded = kernsolve.load_model(str(path))
    np.testing.assert_array_equal(loaded.coef, model.coef)
    a, b = kernsolve.predict(y, X, model, "-q"), kernsolve.predict(y, X, loaded, "-q")
    np.testing.assert_array_equal(a[2], b[2])
    np.testing.assert_array_equal(a[0], b[0])
    # the outputs are K(x, centres) @ coef with the centres the model holds
    C = model.centres.toarray() if sp.issparse(model.centres) else model.centres
    Xd = X.toarray()
    np.testing.assert_allclose(a[2], _rbf(Xd, C, 0.1) @ model.coef, rtol=1e-9, atol=1e-9)
    assert a[1][0] > 80


def test_regression_model_is_libsvm_readable(tmp_path, shared):
    y, X = kernsolve.read_problem(shared.path("housing_scale"))
    model = kernsolve.train(y, X, "-s 3 -g 0.5 --solver eigenpro --centers 100 "
                                  "--lambda 1e-4 --epochs 15 -q")
    assert isinstance(model, kernsolve.Model) and model.support_vectors.shape[0] == 100
    path = str(tmp_path / "housing.model")
    kernsolve.save_model(path, model)
    ours = kernsolve.predict(y, X, model, "-q")[0]
    np.testing.assert_array_equal(kernsolve.predict(y, X, kernsolve.load_model(path),
                                                    "-q")[0], ours)
    svmutil = pytest.importorskip("libsvm.svmutil")
    rows = [{j + 1: v for j, v in zip(r.indices, r.data)} for r in X.tocsr()]
    lib_pred, _, _ = svmutil.svm_predict(y.tolist(), rows, svmutil.svm_load_model(path), "-q")
    np.testing.assert_allclose(lib_pred, ours, rtol=1e-9, atol=1e-9)
    # and it fits: training R^2 well above the mean predictor's 0
    assert np.mean((ours - y) ** 2) < 0.3 * np.var(y)


# --------------------------------------------------------------------------
# estimators
# --------------------------------------------------------------------------

def test_estimators_match_train():
    y, X = _classes(300)
    est = EigenProClassifier(gamma=0.3, centers=40, lam=1e-4, epochs=5,
                             random_state=2).fit(X, y)
    model = kernsolve.train(y, X, "-g 0.3 --solver eigenpro --centers 40 --lambda 1e-4 "
                                  "--epochs 5 --seed 2 -q")
    # the estimator orders classes as sorted labels; LIBSVM's order here is first appearance
    order = [list(model.labels).index(c) for c in est.classes_]
    np.testing.assert_array_equal(est.dual_coef_, model.coef[:, order])
    np.testing.assert_array_equal(est.centres_, model.centres)
    assert est.centre_indices_.shape == (40,) and est.n_iter_ == 5
    X1, Y1 = _problem(outputs=1)
    reg = EigenProRegressor(gamma=0.7, centers=X1.shape[0], lam=1e-3, epochs=60)
    reg.fit(X1, Y1[:, 0])
    n = X1.shape[0]
    ref = np.linalg.solve(_rbf(X1, X1, 0.7) + n * 1e-3 * np.eye(n), Y1[:, 0])
    np.testing.assert_allclose(reg.dual_coef_, ref, rtol=0, atol=1e-7 * np.abs(ref).max())
    with pytest.raises(ValueError, match="--centers: .* takes no --batch-size"):
        EigenProClassifier(centers=10, batch_size=5).fit(X, y)
    with pytest.raises(ValueError, match="--lambda: only the centres' model"):
        EigenProClassifier(lam=0.1).fit(X, y)


# --------------------------------------------------------------------------
# --precision single and the tiled factors
# --------------------------------------------------------------------------

@pytest.mark.parametrize("kernel, t, extra", [("rbf", 2, {}), ("linear", 0, {}),
                                              ("poly", 1, {"degree": 2, "coef0": 1.0}),
                                              ("laplacian", 5, {})])
def test_single_precision_blocks_are_the_kernel_rounded(kernel, t, extra):
    # float32 sgemm blocks (rbf, linear, poly) or the engine's, rounded (laplacian)
    from kernsolve.solvers.eigenpro._common import KernelBlocks
    X, _ = _problem(n=300, d=6)
    gamma = 0.4
    kern = KernelBlocks(X, t, gamma, extra.get("degree", 3), extra.get("coef0", 0.0), 1)
    C = np.ascontiguousarray(X[::7])
    blocks = nystrom._RowBlocks(kern, C, 1e9, None, np.float32)
    assert (blocks.single is not None) == (kernel != "laplacian")
    K = blocks._block(0)
    assert K.dtype == np.float32 and K.shape == (min(300, blocks.rows), C.shape[0])
    ref = kernsolve.kernel_matrix(X[:K.shape[0]], C, kernel=kernel, gamma=gamma, **extra)
    np.testing.assert_allclose(K, ref, rtol=2e-6, atol=2e-6 * np.abs(ref).max())


@pytest.mark.parametrize("p, lam", [(40, 1e-4), (240, 1e-3)])
def test_single_precision_is_the_closed_form_to_float32_accuracy(p, lam, monkeypatch):
    monkeypatch.setattr(nystrom, "BLOCK_VALUES", 37 * p)
    X, Y = _problem()
    n, gamma = X.shape[0], 0.7
    res = fit_eigenpro(X, Y, gamma=gamma, options=_opts(n, centers=p, precision="single",
                                                        **{"lambda": lam}, epochs=60))
    assert res.stats["precision"] == "single" and res.stats["row_blocks"] > 1
    S = res.centres
    K_nM, K_MM = _rbf(X, X[S], gamma), _rbf(X[S], X[S], gamma)
    ref = np.linalg.solve(K_nM.T @ K_nM + n * lam * K_MM, K_nM.T @ Y)
    # float32 kernel values and products: the fitted function to ~1e-5 of its
    # scale (about 1), where a wrong block or sum is off by O(1)
    np.testing.assert_allclose(K_nM @ res.alpha, K_nM @ ref, rtol=0, atol=1e-4)
    assert res.stats["relative_residual"] < 1e-3


def test_single_precision_same_bits_for_threads_and_cache(monkeypatch):
    monkeypatch.setattr(nystrom, "BLOCK_VALUES", 60 * 80)
    y, X = _classes(1000)
    base = "-g 0.3 --solver eigenpro --centers 80 --epochs 4 -q --precision single"
    one = kernsolve.train(y, X, base + " --threads 1")
    two = kernsolve.train(y, X, base + " --threads 2")
    small = kernsolve.train(y, X, base + " --threads 2 -m 0.02")   # one float32 block
    assert small.stats["cached_blocks"] == 1 and one.stats["cached_blocks"] == 17
    assert one.coef.tobytes() == two.coef.tobytes() == small.coef.tobytes()
    double = kernsolve.train(y, X, base.replace("single", "double") + " --threads 1")
    assert double.coef.tobytes() != one.coef.tobytes()
    # lambda 1e-6 and 4 iterations: the coefficients are ill-conditioned and the
    # iterates sensitive to rounding, the outputs close (the closed-form test above
    # measures the converged accuracy)
    single_out, double_out = (kernsolve.predict(y, X, m, "-q") for m in (one, double))
    np.testing.assert_allclose(single_out[2], double_out[2], rtol=0, atol=2e-2)
    assert np.mean(single_out[0] == double_out[0]) > 0.98
    est = EigenProClassifier(gamma=0.3, centers=80, epochs=4, precision="single",
                             n_jobs=2).fit(X, y)
    order = [list(one.labels).index(c) for c in est.classes_]
    np.testing.assert_array_equal(est.dual_coef_, one.coef[:, order])


@pytest.mark.parametrize("options, message", [
    ("--precision single", "--precision single: only the centres' model"),
    ("--centers 10 --precision quad",
     r"--precision: unknown precision .quad. \(known: double, single, half\)"),
])
def test_bad_precision(options, message):
    y, X = _classes(100)
    with pytest.raises(ValueError, match=message):
        kernsolve.train(y, X, "--solver eigenpro -q " + options)


@pytest.mark.parametrize("p", [1, 7, 50, 64])
def test_tiled_cholesky_and_product_match_numpy_with_same_bits_for_threads(p, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor
    from kernsolve.solvers.eigenpro import _tiled_cholesky as tc
    monkeypatch.setattr(tc, "TILE", 8)         # several tiles and a partial last one
    rng = np.random.default_rng(p)
    Z = rng.normal(size=(p, p + 3))
    S = Z @ Z.T / p + 0.1 * np.eye(p)
    out = {}
    for threads in (1, 2):
        with ThreadPoolExecutor(threads) as pool:
            U = S.copy()
            assert tc.cholesky_upper(U, pool) == 0
            out[threads] = (U, np.triu(tc.upper_times_transpose(U, pool)))
    U, W = out[1]
    assert out[2][0].tobytes() == U.tobytes() and out[2][1].tobytes() == W.tobytes()
    np.testing.assert_allclose(U, np.linalg.cholesky(S).T, rtol=0, atol=1e-12 * p)
    assert np.all(np.tril(U, -1) == 0)
    np.testing.assert_allclose(W, np.triu(U @ U.T), rtol=0, atol=1e-12 * p)
    if p > 10:       # a negative pivot: the 1-based column, as LAPACK's info
        bad = S.copy()
        bad[10, 10] = -1.0
        assert tc.cholesky_upper(bad) == 11


def test_the_preconditioners_memory_is_checked_before_it_is_allocated(monkeypatch):
    # The red team: --centers 30000 grew to 7.1 GB before a generic "out of
    # memory"; the p x p factors take 16 p^2 bytes, the subsampled one
    # 8 p (q + RESIDUAL_BLOCK).  Here the limit is set just below each.
    from kernsolve import _validation
    from kernsolve.solvers.eigenpro import _subsampled
    X, Y = _problem(n=300)
    y = np.argmax(Y, axis=1).astype(float)
    p, q = 120, 60
    monkeypatch.setattr(_validation, "memory_limit", lambda: 16 * p * p - 1)
    with pytest.raises(ValueError, match=rf"--centers {p}: the preconditioner's two p x p "
                                         r"matrices would take 225 KiB.*--subsample q"):
        kernsolve.train(y, X, f"--solver eigenpro --centers {p} -q")
    block = _subsampled.RESIDUAL_BLOCK
    monkeypatch.setattr(_validation, "memory_limit", lambda: 8 * p * (q + block) - 1)
    with pytest.raises(ValueError, match=rf"--centers {p} --subsample {q}: .* would take"):
        kernsolve.train(y, X, f"--solver eigenpro --centers {p} --subsample {q} -q")
    monkeypatch.setattr(_validation, "memory_limit", lambda: 8 * p * (q + block))
    kernsolve.train(y, X, f"--solver eigenpro --centers {p} --subsample {q} -q")  # (just fits)


def test_every_pass_is_reported_with_its_share_of_the_run(monkeypatch):
    # "Long runs talk": the red team's 239,000-row run printed nothing for 21
    # minutes.  A fake clock that advances a second a call: every block of
    # every pass (the first pass and one per CG iteration) reports, the last
    # with the whole run's share done, and the time left counts down to 0.
    import io
    from kernsolve._progress import Progress
    monkeypatch.setattr(nystrom, "BLOCK_VALUES", 40 * 30)       # several row blocks
    X, Y = _problem(n=200)
    ticks = iter(range(10 ** 6))
    out = io.StringIO()
    progress = Progress("eigenpro", out, delay=0, interval=0, clock=lambda: next(ticks))
    res = fit_eigenpro(X, Y, gamma=0.5, options=_opts(200, centers=30, epochs=4),
                       progress=progress)
    lines = out.getvalue().splitlines()
    blocks = res.stats["row_blocks"]
    assert blocks > 1 and len(lines) == blocks * (res.stats["n_iter"] + 1)
    assert lines[0].startswith("kernsolve eigenpro: iter 0/4, kernel evals")
    assert lines[-1].startswith(f"kernsolve eigenpro: iter {res.stats['n_iter']}/4")
    assert lines[-1].endswith("about 0 s left")
    # and nothing with -q (train_eigenpro makes no Progress then)
    y = np.argmax(Y, axis=1).astype(float)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        kernsolve.train(y, X, "--solver eigenpro --centers 30 -g 0.5 -q")
    assert err.getvalue() == ""


# ---------------------------------------------------------------- the estimators' default

def test_default_centres_above_the_threshold_and_the_expansion_below(monkeypatch):
    """centers="auto" (the default): EXACT_CENTRES centres when n is larger,
    else the kernel expansion; an option of the SGD iteration selects the
    expansion.  Oracle: the same estimator with the choice spelled out."""
    import kernsolve.estimators.eigenpro as estimators
    monkeypatch.setattr(estimators, "EXACT_CENTRES", 50)
    monkeypatch.setattr(centres, "EXACT_CENTRES", 50)
    y, X = _classes(n=200)
    _, Xt = _classes(n=60, seed=1)

    def same(a, b):
        outputs = "decision_function" if hasattr(a, "decision_function") else "predict"
        np.testing.assert_array_equal(getattr(a.fit(X, y), outputs)(Xt),
                                      getattr(b.fit(X, y), outputs)(Xt))
        return a

    # n = 200 > 50: the centres' model on 50 centres
    est = same(EigenProClassifier(gamma=0.5), EigenProClassifier(gamma=0.5, centers=50))
    assert est.centre_indices_.shape == (50,) and est.eigenvalues_.size == 0
    # an SGD option, or centers=None: the expansion over all 200 rows
    est = same(EigenProClassifier(gamma=0.5, batch_size=64),
               EigenProClassifier(gamma=0.5, batch_size=64, centers=None))
    assert est.centre_indices_ is None and est.centres_.shape[0] == 200
    same(EigenProRegressor(gamma=0.5, damping=0.5), EigenProRegressor(gamma=0.5, damping=0.5,
                                                                     centers=None))
    # n <= EXACT_CENTRES: the expansion
    monkeypatch.setattr(estimators, "EXACT_CENTRES", 200)
    est = same(EigenProClassifier(gamma=0.5), EigenProClassifier(gamma=0.5, centers=None))
    assert est.centre_indices_ is None


def test_default_classifier_on_an_a9a_slice_is_as_accurate_as_svc(shared):
    """The default no longer fits the n^2 expansion on a9a-sized data; on 8000
    rows (2000 centres) its test accuracy is within a point and a half of
    scikit-learn's SVC with its defaults (the same gamma="scale").  Oracle:
    sklearn.svm.SVC on the same rows."""
    sklearn_svm = pytest.importorskip("sklearn.svm")
    y, X = kernsolve.read_problem(shared.path("a9a"))
    Xtr, ytr, Xte, yte = X[:8000], y[:8000], X[-4000:], y[-4000:]
    est = EigenProClassifier().fit(Xtr, ytr)
    assert est.centre_indices_.shape == (2000,)
    svc = sklearn_svm.SVC().fit(Xtr, ytr)
    assert est.score(Xte, yte) >= svc.score(Xte, yte) - 0.015
