"""The compiled SMO solver (kernsolve.solvers.smo._solve.solve) against independent oracles.

Oracles: libsvm-official (LIBSVM 3.37) run on the same data, its printed
``obj``/``rho``/``#iter`` captured from the C stdout, its model's sv_coef;
KKT conditions evaluated with a double-precision numpy kernel matrix; a
brute-force QP solve by scipy.optimize.
"""
import ctypes
import io
import os
import re
import sys
import tempfile

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.datasets import load_svmlight_file
from sklearn.metrics.pairwise import rbf_kernel

from kernsolve._kernels import as_canonical
from kernsolve.solvers.smo import _smo as _smo
from kernsolve.solvers.smo._solve import solve

# ---------------------------------------------------------------- helpers

def load(shared, name, n_rows, n_features=None):
    X, labels = load_svmlight_file(io.BytesIO(shared.lines(name, n_rows)),
                                   n_features=n_features)
    return X.tocsr(), labels


def signs(labels):
    """LIBSVM's binary encoding: +1 for the first label to appear, except that
    labels {-1, +1} always keep their own signs (LIBSVM's swap rule)."""
    if set(np.unique(labels)) == {-1.0, 1.0}:
        return np.where(labels > 0, 1, -1).astype(np.int8)
    return np.where(labels == labels[0], 1, -1).astype(np.int8)


def grouped(X, labels):
    """Rows reordered as LIBSVM's svm_group_classes feeds them to its Solver:
    the +1 class first, each class in file order.  Solving in this order makes
    kernsolve's path LIBSVM's, step for step."""
    y = signs(labels)
    order = np.concatenate([np.flatnonzero(y > 0), np.flatnonzero(y < 0)])
    return X[order], labels[order], order


def _gomp():
    try:
        return ctypes.CDLL("libgomp.so.1")
    except OSError:
        return None


def libsvm_train(labels, X, opts):
    """Train with libsvm-official; return (model, printed fields).

    Its OpenMP kernel loops run on one thread here (same numbers; on a busy
    machine two spinning threads cost seconds)."""
    gomp = _gomp()
    old = gomp.omp_get_max_threads() if gomp else None
    if gomp:
        gomp.omp_set_num_threads(1)
    try:
        return _libsvm_train(labels, X, opts)
    finally:
        if gomp:
            gomp.omp_set_num_threads(old)


def _libsvm_train(labels, X, opts):
    svmutil = pytest.importorskip("libsvm.svmutil")    # only the tests that compare skip
    sys.stdout.flush()
    with tempfile.TemporaryFile() as f:
        saved = os.dup(1)
        os.dup2(f.fileno(), 1)
        try:
            model = svmutil.svm_train(list(labels), X, opts)
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        f.seek(0)
        out = f.read().decode()
    fields = {
        "n_iter": int(re.search(r"#iter = (\d+)", out).group(1)),
        "obj": float(re.search(r"obj = (\S+),", out).group(1)),
        "rho": float(re.search(r"rho = (\S+)", out).group(1)),
        "n_sv": int(re.search(r"nSV = (\d+)", out).group(1)),
    }
    m = re.search(r"epsilon = (\S+)", out)
    if m:
        fields["epsilon"] = float(m.group(1))
    m = re.search(r"C = (\S+)", out)
    if m:
        fields["C"] = float(m.group(1))
    return model, fields


def rbf(X, gamma):
    return rbf_kernel(X, gamma=gamma)


def run_csvc(X, y, C, gamma, kernel_type=2, degree=3, coef0=0.0, **kw):
    n = X.shape[0]
    alpha = np.zeros(n)
    info = solve(as_canonical(X), kernel_type, degree, gamma, coef0, y,
                 -np.ones(n), alpha, np.full(n, float(C)), **kw)
    return alpha, info


def bias_gap(K, y, alpha, C, p):
    """m(a) - M(a) of LIBSVM's stopping rule, with a double-precision K."""
    G = (y[:, None] * y[None, :] * K) @ alpha + p
    up = ((y > 0) & (alpha < C)) | ((y < 0) & (alpha > 0))
    low = ((y > 0) & (alpha > 0)) | ((y < 0) & (alpha < C))
    return np.max(-y[up] * G[up]) - np.min(-y[low] * G[low])


def assert_close_to_libsvm(obj, rho, n_sv, ref, rho_tol=1e-4):
    # LIBSVM prints obj and rho with %f: allow its rounding on top of 1e-6.
    assert abs(obj - ref["obj"]) <= 1e-6 * abs(ref["obj"]) + 5e-7
    assert abs(rho - ref["rho"]) <= rho_tol + 5e-7
    assert abs(n_sv - ref["n_sv"]) <= max(1, 0.01 * ref["n_sv"])


# ---------------------------------------------------------------- C-SVC vs LIBSVM

@pytest.mark.parametrize("opts,kernel_type,degree,gamma,coef0,C", [
    ("-t 2 -g 0.5 -c 1", 2, 3, 0.5, 0.0, 1.0),
    ("-t 2 -g 0.05 -c 10", 2, 3, 0.05, 0.0, 10.0),
    ("-t 0 -c 0.5", 0, 3, 0.0, 0.0, 0.5),
    ("-t 1 -d 2 -g 0.1 -r 1 -c 2", 1, 2, 0.1, 1.0, 2.0),
    ("-t 3 -g 0.01 -r -0.5 -c 1", 3, 3, 0.01, -0.5, 1.0),
])
def test_csvc_heart_scale_matches_libsvm(shared, opts, kernel_type, degree, gamma,
                                         coef0, C):
    X, labels = load(shared, "heart_scale", 270)
    Xg, lg, order = grouped(X, labels)
    y = signs(lg)
    alpha, info = run_csvc(Xg, y, C, gamma, kernel_type, degree, coef0)
    model, ref = libsvm_train(labels, X, opts + " -s 0")
    assert info["status"] == "ok"
    assert_close_to_libsvm(info["obj"], info["rho"], int((alpha > 0).sum()), ref)
    # Same path as LIBSVM: same number of iterations (a kernel value that
    # rounds differently in the last float bit could cost a step or two).
    assert abs(info["n_iter"] - ref["n_iter"]) <= 2
    # The coefficients themselves: LIBSVM's sv_coef are y_i alpha_i.
    coef = np.zeros(len(y))
    sv = np.array(model.get_sv_indices()) - 1
    coef[sv] = np.array(model.get_sv_coef())[:, 0]
    np.testing.assert_allclose(y * alpha, coef[order], atol=1e-6 * C)


@pytest.mark.parametrize("shrinking", [True, False])
def test_csvc_a9a_slice_is_libsvm_bit_for_bit(shared, shrinking):
    # a9a's features are 0/1, so every kernel value is exact in both codes
    # and the whole path, shrinking included, must be LIBSVM's to the bit.
    X, labels = load(shared, "a9a", 2000, n_features=123)
    Xg, lg, order = grouped(X, labels)
    y = signs(lg)
    alpha, info = run_csvc(Xg, y, 1.0, 0.05, shrinking=shrinking)
    model, ref = libsvm_train(labels, X, f"-s 0 -t 2 -c 1 -g 0.05 -h {int(shrinking)}")
    assert info["n_iter"] == ref["n_iter"]
    assert info["rho"] == model.rho[0]
    coef = np.zeros(len(y))
    sv = np.array(model.get_sv_indices()) - 1
    coef[sv] = np.array(model.get_sv_coef())[:, 0]
    assert np.array_equal(y * alpha, coef[order])
    assert_close_to_libsvm(info["obj"], info["rho"], int((alpha > 0).sum()), ref)
    # The dual objective recomputed in double precision from the solution.
    Q = (y[:, None] * y[None, :]) * rbf(Xg, 0.05)
    ours = 0.5 * alpha @ Q @ alpha - alpha.sum()
    assert abs(ours - info["obj"]) <= 1e-6 * abs(ours)
    assert info["n_kernel_evals"] > 0
    assert info["n_cache_hits"] + info["n_cache_misses"] > 0


def test_kkt_and_equality_constraint(shared):
    X, labels = load(shared, "australian_scale", 300)
    y = signs(labels).astype(float)
    for eps in (1e-3, 1e-5):
        alpha, info = run_csvc(X, y.astype(np.int8), 5.0, 0.1, eps=eps)
        K = rbf(X, 0.1)
        assert abs(y @ alpha) < 1e-9 * len(y) * 5.0
        assert np.all(alpha >= 0) and np.all(alpha <= 5.0)
        # float32 kernel rows: the double-precision gap may exceed eps a little.
        assert bias_gap(K, y, alpha, 5.0, -np.ones(len(y))) < eps + 1e-4


def test_matches_brute_force_qp(shared):
    X, labels = load(shared, "heart_scale", 40)
    y = signs(labels).astype(float)
    C, gamma = 2.0, 0.2
    Q = (y[:, None] * y[None, :]) * rbf(X, gamma)
    f = lambda a: 0.5 * a @ Q @ a - a.sum()
    res = minimize(f, np.zeros(len(y)), jac=lambda a: Q @ a - 1, method="SLSQP",
                   bounds=[(0, C)] * len(y),
                   constraints=[{"type": "eq", "fun": lambda a: y @ a,
                                 "jac": lambda a: y}],
                   options={"ftol": 1e-14, "maxiter": 1000})
    assert res.success
    alpha, info = run_csvc(X, y.astype(np.int8), C, gamma, eps=1e-8)
    assert abs(f(alpha) - res.fun) <= 1e-6 * abs(res.fun)
    assert f(alpha) <= res.fun + 1e-7 * abs(res.fun)
    np.testing.assert_allclose(alpha, res.x, atol=1e-3)


# ---------------------------------------------------------------- other formulations

def test_nu_svc_matches_libsvm(shared):
    X, labels = load(shared, "heart_scale", 270)
    X, labels, _ = grouped(X, labels)
    y = signs(labels)
    n, nu = len(y), 0.4
    # LIBSVM's solve_nu_svc starting point.
    alpha = np.zeros(n)
    sum_pos = sum_neg = nu * n / 2
    for i in range(n):
        if y[i] > 0:
            alpha[i] = min(1.0, sum_pos)
            sum_pos -= alpha[i]
        else:
            alpha[i] = min(1.0, sum_neg)
            sum_neg -= alpha[i]
    info = solve(as_canonical(X), 2, 3, 0.3, 0.0, y, np.zeros(n), alpha,
                 np.ones(n), nu=True)
    _, ref = libsvm_train(labels, X, "-s 1 -n 0.4 -t 2 -g 0.3")
    assert abs(info["n_iter"] - ref["n_iter"]) <= 2
    r = info["r"]
    assert abs(1 / r - ref["C"]) <= 1e-6 * ref["C"] + 5e-7
    assert_close_to_libsvm(info["obj"] / r**2, info["rho"] / r,
                           int((alpha > 0).sum()), ref)


def test_one_class_matches_libsvm(shared):
    X, labels = load(shared, "heart_scale", 200)
    n, nu = X.shape[0], 0.3
    alpha = np.zeros(n)
    k = int(nu * n)
    alpha[:k] = 1.0
    if k < n:
        alpha[k] = nu * n - k
    info = solve(as_canonical(X), 2, 3, 0.2, 0.0, np.ones(n, np.int8), np.zeros(n),
                 alpha, np.ones(n))
    _, ref = libsvm_train(np.ones(n), X, "-s 2 -n 0.3 -t 2 -g 0.2")
    assert abs(info["n_iter"] - ref["n_iter"]) <= 2
    assert_close_to_libsvm(info["obj"], info["rho"], int((alpha > 0).sum()), ref)
    assert abs(alpha.sum() - nu * n) < 1e-9


def _svr_setup(labels, C, p):
    n = len(labels)
    y = np.concatenate([np.ones(n), -np.ones(n)]).astype(np.int8)
    lin = np.concatenate([p - labels, p + labels])
    return y, lin, np.zeros(2 * n), np.full(2 * n, C)


def test_epsilon_svr_matches_libsvm(shared):
    X, target = load(shared, "housing_scale", 300)
    y, lin, alpha, Cv = _svr_setup(target, 10.0, 0.5)
    info = solve(as_canonical(X), 2, 3, 0.2, 0.0, y, lin, alpha, Cv, svr=True)
    model, ref = libsvm_train(target, X, "-s 3 -c 10 -p 0.5 -t 2 -g 0.2")
    assert abs(info["n_iter"] - ref["n_iter"]) <= 2
    beta = alpha[:300] - alpha[300:]
    assert_close_to_libsvm(info["obj"], info["rho"], int((beta != 0).sum()), ref)
    coef = np.zeros(300)
    sv = np.array(model.get_sv_indices()) - 1
    coef[sv] = np.array(model.get_sv_coef())[:, 0]
    np.testing.assert_allclose(beta, coef, atol=1e-3)


def test_nu_svr_matches_libsvm(shared):
    X, target = load(shared, "housing_scale", 250)
    n, C, nu = 250, 5.0, 0.4
    y = np.concatenate([np.ones(n), -np.ones(n)]).astype(np.int8)
    lin = np.concatenate([-target, target])
    alpha = np.zeros(2 * n)
    total = C * nu * n / 2
    for i in range(n):
        alpha[i] = alpha[i + n] = min(total, C)
        total -= alpha[i]
    info = solve(as_canonical(X), 2, 3, 0.1, 0.0, y, lin, alpha, np.full(2 * n, C),
                 svr=True, nu=True)
    _, ref = libsvm_train(target, X, "-s 4 -c 5 -n 0.4 -t 2 -g 0.1")
    assert abs(info["n_iter"] - ref["n_iter"]) <= 2
    beta = alpha[:n] - alpha[n:]
    assert abs(-info["r"] - ref["epsilon"]) <= 1e-5 * abs(ref["epsilon"]) + 5e-7
    assert_close_to_libsvm(info["obj"], info["rho"], int((beta != 0).sum()), ref)


def test_precomputed_equals_rbf(shared):
    X, labels = load(shared, "heart_scale", 150)
    y = signs(labels)
    K = np.ascontiguousarray(rbf(X, 0.3))
    a1, i1 = run_csvc(X, y, 3.0, 0.3)
    a2 = np.zeros(150)
    i2 = solve(K, 4, 3, 0.0, 0.0, y, -np.ones(150), a2, np.full(150, 3.0))
    assert abs(i1["obj"] - i2["obj"]) <= 1e-6 * abs(i1["obj"])
    assert abs(i1["rho"] - i2["rho"]) <= 1e-4


# ---------------------------------------------------------------- no bias

def test_no_bias_kkt_and_brute_force(shared):
    X, labels = load(shared, "heart_scale", 120)
    y = signs(labels).astype(float)
    C, gamma, eps = 2.0, 0.3, 1e-4
    alpha, info = run_csvc(X, y.astype(np.int8), C, gamma, bias=False, eps=eps)
    assert info["rho"] == 0.0
    Q = (y[:, None] * y[None, :]) * rbf(X, gamma)
    G = Q @ alpha - 1
    assert np.all(alpha >= 0) and np.all(alpha <= C)
    # Projected gradient within eps (+ float32 kernel rounding).
    pg = np.where(alpha <= 0, np.minimum(G, 0), np.where(alpha >= C, np.maximum(G, 0), G))
    assert np.max(np.abs(pg)) < eps + 1e-5
    f = lambda a: 0.5 * a @ Q @ a - a.sum()
    res = minimize(f, np.zeros(len(y)), jac=lambda a: Q @ a - 1, method="L-BFGS-B",
                   bounds=[(0, C)] * len(y),
                   options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 10000})
    assert abs(f(alpha) - res.fun) <= 1e-6 * abs(res.fun)
    assert abs(info["obj"] - f(alpha)) <= 1e-6 * abs(res.fun)


def test_no_bias_rejects_nu():
    X = np.eye(3)
    with pytest.raises(ValueError, match="bias"):
        solve(X, 2, 3, 1.0, 0.0, np.array([1, -1, 1], np.int8), np.zeros(3),
              np.zeros(3), np.ones(3), nu=True, bias=False)


# ---------------------------------------------------------------- invariances

def test_shrinking_on_off_same_solution(shared):
    X, labels = load(shared, "a9a", 1500, n_features=123)
    y = signs(labels)
    a1, i1 = run_csvc(X, y, 10.0, 0.05, shrinking=True)
    a2, i2 = run_csvc(X, y, 10.0, 0.05, shrinking=False)
    assert abs(i1["obj"] - i2["obj"]) <= 1e-5 * abs(i1["obj"])
    assert abs(i1["rho"] - i2["rho"]) <= 2e-3
    assert abs((a1 > 0).sum() - (a2 > 0).sum()) <= 0.01 * (a1 > 0).sum()


@pytest.fixture
def small_parallel_chunks():
    """Make every loop long enough to run in parallel, and keep it parallel,
    so small problems exercise the chunked reductions (restored afterwards)."""
    old = _smo._get_tuning()
    _smo._set_tuning(par_min=8, adaptive=False)
    yield
    _smo._set_tuning(**old)


def _all_formulations(shared):
    X, labels = load(shared, "heart_scale", 270)
    Xc = as_canonical(X)
    y = signs(labels)
    n = len(y)
    H, target = load(shared, "housing_scale", 200)
    Hc = as_canonical(H)
    ys, lin, _, Cs = _svr_setup(target, 10.0, 0.5)
    nu_alpha = np.zeros(n)
    nu_alpha[np.flatnonzero(y > 0)[:50]] = 1.0
    nu_alpha[np.flatnonzero(y < 0)[:50]] = 1.0
    return [
        (Xc, 2, 0.5, y, -np.ones(n), np.zeros(n), np.full(n, 2.0), {}),
        (Xc, 1, 0.1, y, -np.ones(n), np.zeros(n), np.full(n, 2.0), {}),
        (Xc, 2, 0.5, y, np.zeros(n), nu_alpha, np.ones(n), {"nu": True}),
        (Xc, 2, 0.5, y, -np.ones(n), np.zeros(n), np.full(n, 2.0), {"bias": False}),
        (Hc, 2, 0.2, ys, lin, np.zeros(400), Cs, {"svr": True}),
    ]


def _solve_case(case, **kw):
    X, kt, g, y, p, a0, C, extra = case
    alpha = a0.copy()
    info = solve(X, kt, 3, g, 1.0 if kt == 1 else 0.0, y, p, alpha, C, **extra, **kw)
    return alpha, info


def test_threads_bit_identical(shared, small_parallel_chunks):
    for case in _all_formulations(shared):
        a1, i1 = _solve_case(case, n_threads=1)
        a2, i2 = _solve_case(case, n_threads=2)
        assert a1.tobytes() == a2.tobytes()
        assert (i1["rho"], i1["obj"], i1["n_iter"]) == (i2["rho"], i2["obj"], i2["n_iter"])


def test_threads_bit_identical_a9a(shared, small_parallel_chunks):
    # Long enough for the kernel engine's parallel rows; the solver's own
    # loops are made parallel by the fixture.
    X, labels = load(shared, "a9a", 3000, n_features=123)
    y = signs(labels)
    a1, i1 = run_csvc(X, y, 1.0, 0.05, n_threads=1)
    a2, i2 = run_csvc(X, y, 1.0, 0.05, n_threads=2)
    assert a1.tobytes() == a2.tobytes()
    assert (i1["rho"], i1["obj"], i1["n_iter"]) == (i2["rho"], i2["obj"], i2["n_iter"])


def test_tiny_cache_same_answer(shared):
    for case in _all_formulations(shared):
        a1, i1 = _solve_case(case, cache_mb=100.0)
        a2, i2 = _solve_case(case, cache_mb=0.001)
        assert a1.tobytes() == a2.tobytes()
        assert i1["rho"] == i2["rho"]
        assert i2["n_kernel_evals"] >= i1["n_kernel_evals"]


# ---------------------------------------------------------------- control

def test_max_iter_leaves_feasible_point(shared):
    X, labels = load(shared, "heart_scale", 270)
    y = signs(labels)
    alpha, info = run_csvc(X, y, 1.0, 0.5, max_iter=7)
    assert info["status"] == "max_iter"
    assert info["n_iter"] == 7
    assert abs(y.astype(float) @ alpha) < 1e-12
    assert np.all(alpha >= 0) and np.all(alpha <= 1.0)


def test_progress_called_and_can_stop(shared):
    X, labels = load(shared, "a9a", 1000, n_features=123)
    y = signs(labels)
    old = _smo._get_tuning()
    _smo._set_tuning(poll_seconds=0.0)
    try:
        seen = []

        def progress(d):
            seen.append(d)
            if len(seen) % 3 == 0:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            run_csvc(X, y, 10.0, 0.05, progress=progress)
        alpha = np.zeros(len(y))
        with pytest.raises(KeyboardInterrupt):
            solve(as_canonical(X), 2, 3, 0.05, 0.0, y, -np.ones(len(y)), alpha,
                  np.full(len(y), 10.0), progress=progress, shrinking=False)
    finally:
        _smo._set_tuning(**old)
    assert set(seen[0]) == {"n_iter", "gap", "active_size", "n_kernel_evals", "seconds"}
    assert 0 < seen[0]["active_size"] <= len(y)
    assert seen[1]["n_iter"] > seen[0]["n_iter"]
    # Interrupted, alpha is a feasible point with progress made.
    assert abs(y.astype(float) @ alpha) < 1e-9
    assert np.all(alpha >= 0) and np.all(alpha <= 10.0) and alpha.sum() > 0


# ---------------------------------------------------------------- bad input

def _ok_args(n=4):
    X = np.arange(2.0 * n).reshape(n, 2)
    return [X, 2, 3, 0.5, 0.0, np.array([1, -1] * (n // 2), np.int8),
            -np.ones(n), np.zeros(n), np.ones(n)]


@pytest.mark.parametrize("change,message", [
    (lambda a: a.__setitem__(5, np.array([1, -1, 1], np.int8)), "y has shape"),
    (lambda a: a.__setitem__(5, np.array([1, 0, 1, -1], np.int8)), r"\+1 and -1"),
    (lambda a: a.__setitem__(6, -np.ones(3)), "p has length"),
    (lambda a: a.__setitem__(8, np.ones(5)), "C has length"),
    (lambda a: a.__setitem__(8, np.array([1.0, 0.0, 1.0, 1.0])), "C_i"),
    (lambda a: a.__setitem__(6, np.array([1.0, np.nan, 1.0, 1.0])), "non-finite"),
    (lambda a: a.__setitem__(7, np.array([0.0, 2.0, 0.0, 0.0])), "feasible"),
    (lambda a: a.__setitem__(7, np.zeros(4, np.float32)), "float64"),
    (lambda a: a.__setitem__(7, [0.0] * 4), "float64"),
    (lambda a: a.__setitem__(1, 9), "kernel_type"),
    (lambda a: a.__setitem__(0, np.zeros((0, 2))), "rows"),
])
def test_bad_input(change, message):
    args = _ok_args()
    change(args)
    with pytest.raises(ValueError, match=message):
        solve(*args)


@pytest.mark.parametrize("kw,message", [
    ({"eps": 0.0}, "eps"), ({"cache_mb": -1.0}, "cache_mb"),
    ({"n_threads": 0}, "n_threads"), ({"max_iter": 0}, "max_iter"),
    ({"svr": True}, "expected 8"), ({"progress": 3}, "progress"),
])
def test_bad_options(kw, message):
    with pytest.raises(ValueError, match=message):
        solve(*_ok_args(), **kw)


def test_precomputed_must_be_square():
    args = _ok_args()
    args[1] = 4
    with pytest.raises(ValueError, match="n x n"):
        solve(*args)


def test_read_only_alpha_rejected():
    args = _ok_args()
    args[7].setflags(write=False)
    with pytest.raises(ValueError, match="writable"):
        solve(*args)


def test_threads_bit_identical_at_default_thresholds(shared):
    # Long enough that, at the default parallel threshold, every solver loop
    # (WSS passes, the fused G / G_bar step) runs in two chunks and the kernel
    # rows in parallel; adaptive=False keeps them parallel on a busy machine.
    n = 6000
    old = _smo._get_tuning()
    assert old["par_min"] < n
    X, labels = load(shared, "a9a", n, n_features=123)
    y = signs(labels)
    _smo._set_tuning(adaptive=False)
    try:
        a1, i1 = run_csvc(X, y, 1.0, 0.05, n_threads=1)
        a2, i2 = run_csvc(X, y, 1.0, 0.05, n_threads=2)
    finally:
        _smo._set_tuning(**old)
    assert a1.tobytes() == a2.tobytes()
    assert (i1["rho"], i1["obj"], i1["n_iter"]) == (i2["rho"], i2["obj"], i2["n_iter"])
    # Same rows fetched in the same order: the cache does the same work.
    assert i1["n_kernel_evals"] == i2["n_kernel_evals"]


def test_ties_across_chunks_pick_what_libsvm_picks(shared, small_parallel_chunks):
    # Four copies of the same 300 points: every gradient value occurs at least
    # four times, in different chunks of the parallel scans, so each selection
    # is decided by the tie rule (LIBSVM's: the last index wins).  Two threads
    # with tiny chunks must still follow libsvm-official's path to the bit.
    X, labels = load(shared, "a9a", 300, n_features=123)
    X = type(X)(np.vstack([X.toarray()] * 4))
    labels = np.tile(labels, 4)
    Xg, lg, order = grouped(X, labels)
    y = signs(lg)
    alpha, info = run_csvc(Xg, y, 1.0, 0.05, n_threads=2)
    model, ref = libsvm_train(labels, X, "-s 0 -t 2 -c 1 -g 0.05")
    assert info["n_iter"] == ref["n_iter"]
    assert info["rho"] == model.rho[0]
    coef = np.zeros(len(y))
    sv = np.array(model.get_sv_indices()) - 1
    coef[sv] = np.array(model.get_sv_coef())[:, 0]
    assert np.array_equal(y * alpha, coef[order])
