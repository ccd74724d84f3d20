"""EigenPro and plain kernel SGD (``--solver eigenpro`` / ``kernel-sgd``).

Oracles: numpy's eigenvalues of the preconditioned operator (the paper's
claim that P H has top eigenvalue lambda_{k+1}); the closed-form kernel
least-squares interpolant K^{-1} y (scipy Cholesky), with the contraction
bound of preconditioned Richardson iteration as the tolerance; a plain numpy
transcription of the paper's Table 2 on the full kernel matrix; LIBSVM's own
model reader and predictor for the regression model file.
"""

import numpy as np
import pytest
import scipy.linalg

from conftest import parametrize_with_sklearn_checks
import kernsolve
from kernsolve import Parameters, kernel_matrix
from kernsolve.solvers.eigenpro._common import KernelBlocks, epoch_order, top_eigensystem
from kernsolve.solvers.eigenpro.train import (_build_preconditioner, eigenpro_options,
                                              exact_kernel_ridge, fit_eigenpro)
from kernsolve.solvers.eigenpro.model import EigenProModel
from kernsolve._random import permutation


def _problem(n=300, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (n, d))
    return X, np.sin(3 * X.sum(axis=1)), rng.uniform(0, 1, (100, d))


@pytest.fixture(autouse=True)
def _one_blas_thread():
    # The oracles' dense linear algebra on one thread: OpenBLAS threads spin
    # badly on a busy machine, and kernsolve itself uses one BLAS thread.
    threadpoolctl = pytest.importorskip("threadpoolctl")
    with threadpoolctl.threadpool_limits(1, user_api="blas"):
        yield


def _opts(n, solver="eigenpro", **extra):
    return eigenpro_options(Parameters(solver=solver, extra=extra), n)


# --------------------------------------------------------------------------
# the preconditioner
# --------------------------------------------------------------------------

@pytest.mark.parametrize("tau", [1.0, 0.5])
def test_preconditioned_spectrum_exact_subsample(tau):
    # M = n: the eigenvectors are exact, so the full-batch operator in function
    # values, A = K (I - D K) / n, has the top k eigenvalues of K/n moved to
    # tau * lambda_{k+1} and the rest unchanged: its top eigenvalue is lambda_{k+1}.
    X, _, _ = _problem(200)
    n, k, gamma = 200, 20, 5.0
    K = kernel_matrix(X, X, gamma=gamma)
    lam = np.linalg.eigvalsh(K)[::-1] / n
    pre = _build_preconditioner(KernelBlocks(X, 2, gamma, 3, 0.0, 1),
                                _opts(n, eigen_directions=k, subsample=n, damping=tau), 0)
    np.testing.assert_allclose(pre.eigenvalues, lam[:k + 1], rtol=1e-10)
    D = pre.V @ np.diag(pre.weights) @ pre.V.T
    A = (K - K @ D @ K) / n          # symmetric: K (I - D K) / n
    a = np.linalg.eigvalsh(A)[::-1]
    assert a[0] == pytest.approx(lam[k], rel=1e-8)
    moved = np.isclose(a, tau * lam[k], rtol=1e-7, atol=0)
    assert moved.sum() == (k + 1 if tau == 1.0 else k)
    np.testing.assert_allclose(np.sort(a)[::-1][k + 1 if tau < 1 else 0:][-50:],
                               lam[-50:], rtol=1e-6, atol=1e-12)


def test_preconditioned_spectrum_from_subsample():
    # M < n: P is estimated on the subsample.  The top eigenvalue of the
    # full operator stays near lambda_{k+1} (measured 1.2x for M = n/2) and
    # far below lambda_1 (acceleration lambda_1 / lambda_{k+1} ~ 7 here).
    rng = np.random.default_rng(1)
    n, k, gamma = 1000, 20, 5.0
    X = rng.uniform(0, 1, (n, 5))
    K = kernel_matrix(X, X, gamma=gamma)
    lam = np.linalg.eigvalsh(K)[::-1] / n
    pre = _build_preconditioner(KernelBlocks(X, 2, gamma, 3, 0.0, 1),
                                _opts(n, eigen_directions=k, subsample=500), 3)
    S = pre.subsample
    D = pre.V @ np.diag(pre.weights) @ pre.V.T
    A = (K - K[:, S] @ (D @ K[S, :])) / n
    top = np.linalg.eigvalsh(A)[-1]
    assert lam[k] * 0.999 <= top <= 1.5 * lam[k]
    assert top < lam[0] / 4
    assert pre.eigenvalues[k] == pytest.approx(lam[k], rel=0.2)


# --------------------------------------------------------------------------
# convergence to the closed form, and the iteration itself
# --------------------------------------------------------------------------

def test_converges_to_kernel_least_squares():
    # Full batch, M = n, step 1/lambda_{k+1}: preconditioned Richardson iteration
    # on the residual r = K alpha - y contracts by rho = 1 - lambda_min/lambda_{k+1}
    # per step in every eigendirection, so ||r_T|| <= rho^T ||y||; and for a
    # test point |f_T(x) - f*(x)| = |k_x^T K^-1 r_T| <= sqrt(k(x,x)) ||K^-1/2 r_T||
    # <= rho^T sqrt(y^T K^-1 y).
    X, y, Xt = _problem(300)
    n, k, gamma, T = 300, 100, 30.0, 200
    K = kernel_matrix(X, X, gamma=gamma)
    lam = np.linalg.eigvalsh(K)[::-1] / n
    a_star = exact_kernel_ridge(X, y, gamma=gamma, lam=0.0)
    np.testing.assert_allclose(K @ a_star, y, atol=1e-8)
    res = fit_eigenpro(X, y, gamma=gamma, seed=0, n_jobs=1, options=_opts(
        n, eigen_directions=k, subsample=n, batch_size=n, epochs=T, step=1 / lam[k]))
    rho = 1 - lam[-1] / lam[k]
    assert rho ** T < 1e-6
    assert np.linalg.norm(K @ res.alpha - y) <= rho ** T * np.linalg.norm(y) * (1 + 1e-6)
    Kt = kernel_matrix(Xt, X, gamma=gamma)
    diff = np.max(np.abs(Kt @ res.alpha - Kt @ a_star))
    assert diff <= rho ** T * np.sqrt(y @ a_star) * (1 + 1e-6) + 1e-9
    # Plain gradient descent with its own best step 1/lambda_1 is far behind.
    sgd = fit_eigenpro(X, y, gamma=gamma, seed=0, n_jobs=1, options=_opts(
        n, "kernel-sgd", subsample=n, batch_size=n, epochs=T, step=1 / lam[0]))
    assert np.max(np.abs(Kt @ sgd.alpha - Kt @ a_star)) > 100 * diff


def _table2(K, Y, S, k, tau, eta, m, epochs, seed):
    """The paper's Table 2, transcribed with numpy on the full kernel matrix."""
    n = K.shape[0]
    w, V = scipy.linalg.eigh(K[np.ix_(S, S)])
    w, V = w[::-1], V[:, ::-1]
    Lam, lk1 = w[:k], w[k]
    D = V[:, :k] @ np.diag((1 - tau * lk1 / Lam) / Lam) @ V[:, :k].T
    alpha = np.zeros_like(Y)
    for e in range(epochs):
        order = epoch_order(n, seed, e)
        for s in range(0, n, m):
            B = order[s:s + m]
            g = (K[B] @ alpha - Y[B]) / len(B)
            alpha[B] -= eta * g
            alpha[S] += eta * D @ (K[np.ix_(B, S)].T @ g)
    return alpha


@pytest.mark.parametrize("k", [0, 15])
def test_matches_table2_transcription(k):
    X, y, _ = _problem(250, seed=2)
    Y = np.column_stack([y, np.cos(X[:, 0] * 4)])
    n, M, m, gamma, seed = 250, 120, 32, 3.0, 7
    K = kernel_matrix(X, X, gamma=gamma)
    res = fit_eigenpro(X, Y, gamma=gamma, seed=seed, n_jobs=1, options=_opts(
        n, "eigenpro", eigen_directions=k, subsample=M, batch_size=m, epochs=3, damping=0.8,
        step=5.0))
    S = np.sort(permutation(n, seed, "sampling")[:M])
    np.testing.assert_array_equal(res.subsample, S)
    ref = _table2(K, Y, S, k, 0.8, 5.0, m, 3, seed)
    np.testing.assert_allclose(res.alpha, ref, rtol=1e-9, atol=1e-12 * np.abs(ref).max())


def test_step_rule():
    # Section 3.1: eta = 1 / (l + 2 (l + kappa) L / 3m + sqrt(2 l kappa L / m)),
    # L = ln(2 M / 0.1), l = lambda_{k+1}; kappa = max ||P^1/2 k(x_j, .)||^2.
    X, y, _ = _problem(300)
    n, M, m, gamma = 300, 200, 64, 5.0
    K = kernel_matrix(X, X, gamma=gamma)
    a = fit_eigenpro(X, y, gamma=gamma, n_jobs=1, options=_opts(
        n, "kernel-sgd", epochs=1, subsample=M, batch_size=m))
    b = fit_eigenpro(X, y, gamma=gamma, n_jobs=1, options=_opts(
        n, eigen_directions=40, epochs=1, subsample=M, batch_size=m))
    L = np.log(2 * M / 0.1)
    for res, k in ((a, 0), (b, 40)):
        S = res.subsample
        w, V = np.linalg.eigh(K[np.ix_(S, S)] / M)
        w, V = w[::-1], V[:, ::-1]
        lk = w[k]
        shrink = (1 - lk / w[:k]) * M * w[:k]
        kappa = max(np.max(1.0 - (V[:, :k] ** 2) @ shrink), lk)
        bound = lk + 2 * (lk + kappa) * L / (3 * m) + np.sqrt(2 * lk * kappa * L / m)
        assert res.step == pytest.approx(1 / bound, rel=1e-9)
        assert res.kappa == pytest.approx(kappa, rel=1e-9)
    assert a.kappa == 1.0 and b.stats["lambda_k1"] < b.stats["lambda_1"] / 5
    assert b.step > 2 * a.step


# --------------------------------------------------------------------------
# kernsolve.train: k = 0 is kernel SGD, determinism
# --------------------------------------------------------------------------

def _classes(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    y = (X[:, 0] > 0).astype(int) + 2 * (X[:, 1] > 0.3)
    return y, X


def test_k0_is_kernel_sgd_bit_for_bit():
    y, X = _classes()
    a = kernsolve.train(y, X, "-g 0.2 --solver eigenpro --eigen-directions 0 --subsample 200 "
                              "--batch-size 50 --epochs 3 --seed 4 -q")
    b = kernsolve.train(y, X, "-g 0.2 --solver kernel-sgd --subsample 200 --batch-size 50 "
                              "--epochs 3 --seed 4 -q")
    assert isinstance(a, EigenProModel)
    np.testing.assert_array_equal(a.coef, b.coef)
    assert a.stats["step"] == b.stats["step"]


def test_threads_and_seed_determinism():
    y, X = _classes(1500)
    opts = "-g 0.2 --solver eigenpro --eigen-directions 20 --subsample 300 --batch-size 200 " \
           "--epochs 2 -q"
    one = kernsolve.train(y, X, opts + " --seed 5 --threads 1")
    two = kernsolve.train(y, X, opts + " --seed 5 --threads 2")
    again = kernsolve.train(y, X, opts + " --seed 5 --threads 2")
    other = kernsolve.train(y, X, opts + " --seed 6 --threads 2")
    assert one.coef.tobytes() == two.coef.tobytes() == again.coef.tobytes()
    assert not np.array_equal(one.coef, other.coef)


def test_classification_accuracy_and_labels():
    y, X = _classes()
    y = np.where(y == 3, 7, y)          # labels 0, 1, 2, 7
    model = kernsolve.train(y, X, "-g 0.2 --solver eigenpro --epochs 5 -q")
    assert sorted(model.labels.tolist()) == [0, 1, 2, 7]
    labels, (acc, _, _), values = kernsolve.predict(y, X, model, "-q")
    assert values.shape == (600, 4)
    np.testing.assert_array_equal(labels, model.labels[np.argmax(values, axis=1)])
    assert acc > 95


# --------------------------------------------------------------------------
# model files
# --------------------------------------------------------------------------

def test_regression_model_is_libsvm_readable(tmp_path, shared):
    y, X = kernsolve.read_problem(shared.path("housing_scale"))
    model = kernsolve.train(y, X, "-s 3 -g 0.5 --solver eigenpro --epochs 5 -q")
    assert isinstance(model, kernsolve.Model) and float(model.rho[0]) == 0.0
    path = str(tmp_path / "housing.model")
    kernsolve.save_model(path, model)
    loaded = kernsolve.load_model(path)
    ours = kernsolve.predict(y, X, model, "-q")[0]
    np.testing.assert_array_equal(kernsolve.predict(y, X, loaded, "-q")[0], ours)
    svmutil = pytest.importorskip("libsvm.svmutil")
    lib_model = svmutil.svm_load_model(path)
    rows = [{j + 1: v for j, v in zip(r.indices, r.data)} for r in X.tocsr()]
    lib_pred, _, _ = svmutil.svm_predict(y.tolist(), rows, lib_model, "-q")
    np.testing.assert_allclose(lib_pred, ours, rtol=1e-9, atol=1e-9)


def test_classification_model_round_trip(tmp_path):
    y, X = _classes(300)
    model = kernsolve.train(y, X, "-t 1 -d 2 -g 0.1 -r 1 --solver eigenpro --epochs 2 -q")
    path = str(tmp_path / "ep.model")
    model.save(path)
    with open(path) as f:
        assert f.readline().strip() == "kernsolve_model eigenpro"
    loaded = kernsolve.load_model(path)
    assert isinstance(loaded, EigenProModel)
    np.testing.assert_array_equal(loaded.coef, model.coef)
    a = kernsolve.predict(y, X, model, "-q")
    b = kernsolve.predict(y, X, loaded, "-q")
    np.testing.assert_array_equal(a[2], b[2])
    np.testing.assert_array_equal(a[0], b[0])
    # a truncated file is an error naming the file and line, not a crash
    text = open(path).read().splitlines()
    bad = str(tmp_path / "bad.model")
    with open(bad, "w") as f:
        f.write("\n".join(text[:-5]) + "\n")
    with pytest.raises(kernsolve.ModelFormatError, match="bad.model:.*truncated"):
        kernsolve.load_model(bad)


# --------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------

@pytest.mark.parametrize("options, message", [
    ("--eigen-directions 50 --subsample 50", "k = 50 must be smaller than the subsample"),
    ("--subsample 500", "M = 500 is larger than the training set"),
    ("--step 0", "step size must be > 0"),
    ("--step -1", "step size must be > 0"),
    ("--damping 0", r"tau must be in \(0, 1\]"),
    ("--damping 1.5", r"tau must be in \(0, 1\]"),
    ("--epochs 0", "epochs must be >= 1"),
    ("--batch-size 0", "mini-batch size must be >= 1"),
    ("-t 3", "sigmoid kernel .* not PSD"),
    ("-t 1 -r -1", "coef0 = -1 < 0 is not PSD"),
    ("-s 2", "solves least squares"),
    ("-t 0 --eigen-directions 20 --subsample 100", "numerical rank"),
])
def test_bad_input(options, message):
    y, X = _classes(300)
    with pytest.raises(ValueError, match=message):
        kernsolve.train(y, X, "--solver eigenpro -q " + options)


def test_bad_input_kernel_sgd_and_exact():
    y, X = _classes(100)
    with pytest.raises(ValueError, match="not an option of solver 'kernel-sgd'"):
        kernsolve.train(y, X, {"solver": "kernel-sgd", "eigen_directions": 3})
    with pytest.raises(ValueError, match="kernel-sgd has no eigen-directions"):
        eigenpro_options(Parameters(solver="kernel-sgd", extra={"eigen_directions": 3}))
    with pytest.raises(ValueError, match="not an option of solver 'kernel-sgd'"):
        kernsolve.parse_options("--solver kernel-sgd --damping 0.5")
    with pytest.raises(ValueError, match="use a larger lam"):
        exact_kernel_ridge(np.vstack([X, X]), np.r_[y, y], gamma=0.1, lam=0.0)
    with pytest.raises(ValueError, match="lam must be"):
        exact_kernel_ridge(X, y, lam=-1.0)


def test_divergence_is_reported():
    y, X = _classes(200)
    with pytest.raises(ValueError, match="diverged"):
        kernsolve.train(y, X, "-g 0.2 --solver kernel-sgd --step 1e6 --epochs 3 -q")


# --------------------------------------------------------------------------
# estimators
# --------------------------------------------------------------------------

@parametrize_with_sklearn_checks([kernsolve.EigenProRegressor(), kernsolve.EigenProClassifier(),
                          kernsolve.EigenProClassifier(features=64, damping=0.25)])
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def test_estimators_match_train_and_k0():
    y, X = _classes(400)
    clf = kernsolve.EigenProClassifier(gamma=0.2, eigen_directions=0, epochs=2,
                                       random_state=3).fit(X, y)
    model = kernsolve.train(y, X, "-g 0.2 --solver kernel-sgd --epochs 2 --seed 3 -q")
    # train() orders outputs by first appearance; the estimator by sorted class
    order = np.argsort(model.labels)
    np.testing.assert_array_equal(clf.dual_coef_, model.coef[:, order])
    assert clf.n_iter_ == 2 and clf.eigenvalues_.shape == (1,)
    reg = kernsolve.EigenProRegressor(gamma=0.2, batch_size=32, epochs=10).fit(X, X[:, 0] ** 2)
    assert reg.score(X, X[:, 0] ** 2) > 0.9
    with pytest.raises(ValueError, match="positive semi-definite"):
        kernsolve.EigenProRegressor(kernel="sigmoid").fit(X, y)
    with pytest.raises(ValueError, match="larger than the training set"):
        kernsolve.EigenProRegressor(subsample=1000).fit(X, y)


# --------------------------------------------------------------------------
# EigenPro on random features (Table 1)
# --------------------------------------------------------------------------

def _phi(X, D, gamma, seed):
    from kernsolve._features import random_features
    return random_features(X, D, kernel="rbf", gamma=gamma, seed=seed) / np.sqrt(D)


def test_features_preconditioned_spectrum():
    # M = n: P H with H = Z^T Z / n has top eigenvalue lambda_{k+1}(H), the top k
    # moved to tau * lambda_{k+1} (Table 1, line 2).
    from kernsolve.solvers.eigenpro.features import _eigensystem
    X, _, _ = _problem(300)
    Z = _phi(X, 150, 5.0, 2)
    lam = np.linalg.eigvalsh(Z.T @ Z / 300)[::-1]
    s, E = _eigensystem(Z, 30)
    np.testing.assert_allclose(s, lam[:31], rtol=1e-9)
    P = np.eye(150) - E @ np.diag(1 - 0.25 * s[30] / s[:30]) @ E.T
    a = np.sort(np.linalg.eigvals(P @ (Z.T @ Z / 300)).real)[::-1]
    assert a[0] == pytest.approx(lam[30], rel=1e-8)
    assert np.isclose(a, 0.25 * lam[30], rtol=1e-7).sum() == 30


@pytest.mark.parametrize("k", [0, 12])
def test_features_match_table1_transcription(k):
    X, y, _ = _problem(250, seed=4)
    Y = np.column_stack([y, np.cos(4 * X[:, 1])])
    n, D, M, m, gamma, seed, eta, tau = 250, 120, 100, 32, 3.0, 9, 4.0, 0.25
    res = fit_eigenpro(X, Y, gamma=gamma, seed=seed, n_jobs=1, options=_opts(
        n, eigen_directions=k, subsample=M, batch_size=m, epochs=3, damping=tau, step=eta,
        features=D))
    Z = _phi(X, D, gamma, seed)
    S = np.sort(permutation(n, seed, "sampling")[:M])
    w, V = np.linalg.eigh(Z[S].T @ Z[S] / M)
    w, V = w[::-1], V[:, ::-1]
    P = np.eye(D) - V[:, :k] @ np.diag(1 - tau * w[k] / w[:k]) @ V[:, :k].T
    W = np.zeros((D, 2))
    for e in range(3):
        order = epoch_order(n, seed, e)
        for s in range(0, n, m):
            B = order[s:s + m]
            g = Z[B].T @ (Z[B] @ W - Y[B]) / len(B)
            W -= eta * P @ g
    np.testing.assert_allclose(res.alpha, W, rtol=1e-8, atol=1e-12 * np.abs(W).max())


def test_features_model_k0_threads_round_trip(tmp_path):
    y, X = _classes(500)
    opts = "-g 0.2 --features 200 --subsample 200 --batch-size 64 --epochs 2 --seed 3 -q"
    a = kernsolve.train(y, X, "--solver eigenpro --eigen-directions 0 " + opts)
    b = kernsolve.train(y, X, "--solver kernel-sgd --threads 2 " + opts)
    np.testing.assert_array_equal(a.coef, b.coef)
    c = kernsolve.train(y, X, "--solver eigenpro --eigen-directions 20 --threads 1 " + opts)
    d = kernsolve.train(y, X, "--solver eigenpro --eigen-directions 20 --threads 2 " + opts)
    assert c.coef.tobytes() == d.coef.tobytes() and c.features == 200
    path = str(tmp_path / "rf.model")
    kernsolve.save_model(path, c)
    loaded = kernsolve.load_model(path)
    assert loaded.features == 200 and loaded.param.seed == 3
    np.testing.assert_array_equal(kernsolve.predict(y, X, loaded, "-q")[2],
                                  kernsolve.predict(y, X, c, "-q")[2])
    # a kernel expansion predicting from the same coefficients over phi is the
    # same function: outputs = phi(X) @ W
    np.testing.assert_allclose(kernsolve.predict(None, X, c, "-q")[2],
                               _phi(X, 200, 0.2, 3) @ c.coef, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="rbf .* and laplacian"):
        kernsolve.train(y, X, "-t 1 --solver eigenpro " + opts)


def test_cross_validation_runs_eigenpro():
    y, X = _classes(300)
    out = kernsolve.cross_validation(y, X, "-g 0.2 --solver kernel-sgd --epochs 3 -q -v 3")
    assert out.accuracy == pytest.approx(100 * np.mean(out.target == y))
    held = np.asarray(out.folds[0])
    rest = np.setdiff1d(np.arange(300), held)
    model = kernsolve.train(y[rest], X[rest], "-g 0.2 --solver kernel-sgd --epochs 3 -q")
    np.testing.assert_array_equal(kernsolve.predict(None, X[held], model, "-q")[0],
                                  out.target[held])


def test_randomized_eigensolver_matches_eigh():
    # The subspace iteration (used for M > 2000) against LAPACK's eigh.
    rng = np.random.default_rng(5)
    X = rng.uniform(0, 1, (800, 8))
    K = kernel_matrix(X, X, gamma=2.0)
    s_exact, V_exact = top_eigensystem(K, 40, "eigh")
    s, V = top_eigensystem(K, 40, "randomized", seed=1)
    np.testing.assert_allclose(s, s_exact, rtol=1e-2)
    assert np.all(s <= s_exact * (1 + 1e-12))          # Ritz values from below
    np.testing.assert_allclose(V.T @ V, np.eye(40), atol=1e-10)
    # the well-separated top directions agree
    np.testing.assert_allclose(np.abs(np.sum(V[:, :10] * V_exact[:, :10], axis=0)), 1,
                               atol=1e-6)
    with pytest.raises(ValueError, match="unknown eigensolver"):
        top_eigensystem(K, 4, "lanczos")


@pytest.mark.parametrize("kernel", [2, 5])
def test_feature_map_is_dsg_feature_map(kernel):
    # dgemm + cos on regenerated directions == DSG's compiled features / sqrt(D)
    import scipy.sparse as sp
    from kernsolve.solvers.eigenpro.features import FeatureMap
    from kernsolve._features import random_features
    rng = np.random.default_rng(8)
    X = rng.normal(size=(60, 12)) * (rng.uniform(size=(60, 12)) < 0.4)
    ref = random_features(X, 90, kernel=kernel, gamma=0.3, seed=11) / np.sqrt(90)
    phi = FeatureMap(12, 90, kernel, 0.3, 11)
    np.testing.assert_allclose(phi(X), ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(phi(sp.csr_matrix(X)), ref, rtol=0, atol=1e-12)
