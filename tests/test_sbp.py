"""The Stochastic Batch Perceptron (``--solver sbp``).

Oracles: the optimum of the slack-constrained problem computed from the
C-SVC optimum (Lemma 2.1: with nu = L(w*)/||w*||, the best margin is
1/||w*||, and no feasible iterate can exceed it); libsvm-official's C-SVC
solution for the C -> nu rule and its predictions of our model files;
kernsolve's SMO accuracy on the same data; a brute-force water filling of
the responses recomputed from the model; bit-identical results for 1 and 2
threads.
"""
import io

import numpy as np
import pytest
import scipy.sparse as sp

import kernsolve
from kernsolve.solvers.sbp import _sbp as core
from kernsolve._kernels import as_canonical, kernel_matrix

from conftest import libsvm_serial, shared_lines

G_HEART = 1.0 / 13


@pytest.fixture(scope="module")
def heart():
    y, X = kernsolve.read_problem(kernsolve.dataset_path("heart_scale"))
    return y, as_canonical(X)


@pytest.fixture(scope="module")
def a9a_slice():
    y, X = kernsolve.read_problem(io.BytesIO(shared_lines("a9a", 1500)), n_features=123)
    yt, Xt = kernsolve.read_problem(io.BytesIO(shared_lines("a9a.t", 1500)), n_features=123)
    return y, as_canonical(X), yt, as_canonical(Xt)


def accuracy(model, y, X):
    return kernsolve.predict(y, X, model, "-q")[1][0]


def pair_stats(model):
    return model.stats["pairs"][0]


def brute_level_bias(c, y, volume):
    a = np.sort(c[y == 1])
    b = np.sort(c[y == -1])
    d = np.sort(a[:min(a.size, b.size)] + b[:min(a.size, b.size)])
    prefix = 0.0
    for k in range(1, d.size + 1):
        prefix += d[k - 1]
        s = (volume + prefix) / k
        if k == d.size or s <= d[k]:
            return s / 2
    raise AssertionError


def smo_optimum(y, X, C, gamma, bias=True):
    """(||w*||, mean hinge loss) of the C-SVC optimum, from kernsolve's SMO."""
    opts = f"-t 2 -g {gamma} -c {C} -e 1e-6 -q" + ("" if bias else " --bias 0")
    m = kernsolve.train(y, X, opts)
    coef = m.dual_coef[0]
    K = kernel_matrix(m.support_vectors, m.support_vectors, kernel=2, gamma=gamma)
    norm = float(np.sqrt(coef @ K @ coef))
    dec = kernel_matrix(X, m.support_vectors, kernel=2, gamma=gamma) @ coef - m.rho[0]
    sign = 1.0 if m.labels[0] == 1 else -1.0
    yy = np.where(y == m.labels[0], 1.0, -1.0)
    loss = float(np.mean(np.maximum(0.0, 1.0 - yy * dec)))
    return norm, loss, sign


# ------------------------------------------------------------------ behaviour

def test_separable_toy_zero_training_error():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-2, 0.5, size=(40, 2)), rng.normal(2, 0.5, size=(40, 2))])
    y = np.r_[np.ones(40), -np.ones(40)]
    for bias in (1, 0):
        m = kernsolve.train(y, X, f"-t 2 -g 0.5 -n 0.001 --solver sbp --epochs 20 "
                                  f"--bias {bias} -q")
        assert accuracy(m, y, X) == 100.0
        st = pair_stats(m)
        assert st["gamma"] > 0           # a positive margin
        assert st["stop_reason"] == "epochs" and st["n_iter"] == 20 * 80


def test_objective_approaches_lemma_2_1_optimum(heart):
    y, X = heart
    n = y.size
    norm, loss, _ = smo_optimum(y, X, 1.0, G_HEART)
    nu = loss / norm
    gamma_star = 1.0 / norm                  # the optimum of problem 3.9 at this nu
    m = kernsolve.train(y, X, f"-t 2 -g {G_HEART} -n {nu!r} --solver sbp --epochs 40 "
                              "--seed 3 -q")
    st = pair_stats(m)
    g = st["gamma"]
    assert g <= gamma_star * (1 + 1e-4)      # no feasible w does better
    assert g >= 0.9 * gamma_star
    # recompute f(w_bar) from the model file's numbers: w_bar = gamma * w_model
    coef = m.dual_coef[0] * g
    Ksv = kernel_matrix(X, m.support_vectors, kernel=2, gamma=G_HEART)
    yy = np.where(y == m.labels[0], 1.0, -1.0)
    c = yy * (Ksv @ coef)
    Kss = kernel_matrix(m.support_vectors, m.support_vectors, kernel=2, gamma=G_HEART)
    assert coef @ Kss @ coef <= 1 + 1e-5    # ||w_bar|| <= 1
    assert brute_level_bias(c, yy, n * nu) == pytest.approx(g, rel=1e-4)
    # the bias recovered the same way
    assert -m.rho[0] * g == pytest.approx(st["rho"] * -g, rel=1e-12)


def test_no_bias_objective_and_rho(heart):
    y, X = heart
    norm, loss, _ = smo_optimum(y, X, 1.0, G_HEART, bias=False)
    nu = loss / norm
    m = kernsolve.train(y, X, f"-t 2 -g {G_HEART} -n {nu!r} --solver sbp --bias 0 "
                              "--epochs 40 -q")
    st = pair_stats(m)
    assert m.rho[0] == 0.0
    assert 0.9 / norm <= st["gamma"] <= (1 + 1e-4) / norm


def test_accuracy_close_to_smo_heart(heart):
    y, X = heart
    tr, te = np.arange(200), np.arange(200, 270)
    smo = kernsolve.train(y[tr], X[tr], f"-t 2 -g {G_HEART} -c 1 -q")
    acc_smo = accuracy(smo, y[te], X[te])
    for bias in (1, 0):
        m = kernsolve.train(y[tr], X[tr], f"-t 2 -g {G_HEART} -c 1 --solver sbp "
                                          f"--epochs 10 --bias {bias} -q")
        assert pair_stats(m)["nu_rule"] == "from C"
        assert accuracy(m, y[te], X[te]) >= acc_smo - 3.0


def test_accuracy_close_to_smo_a9a_slice(a9a_slice):
    y, X, yt, Xt = a9a_slice
    smo = kernsolve.train(y, X, "-t 2 -g 0.05 -c 1 -q")
    m = kernsolve.train(y, X, "-t 2 -g 0.05 -c 1 --solver sbp --epochs 2 --seed 1 -q")
    acc_smo, acc_sbp = accuracy(smo, yt, Xt), accuracy(m, yt, Xt)
    assert acc_sbp >= acc_smo - 1.5, (acc_sbp, acc_smo)
    st = pair_stats(m)
    # the C -> nu mapping's SMO run is counted in the work
    assert st["c_to_nu"]["n_sub"] == 1500
    assert st["n_kernel_evals"] > st["c_to_nu"]["n_kernel_evals"] > 0


def test_c_to_nu_subsample(a9a_slice):
    """More points than the subsample: SMO on a seeded subset with C * n / m."""
    from kernsolve.solvers.sbp.train import nu_from_c
    y, X, _, _ = a9a_slice
    yy = np.where(y > 0, 1, -1).astype(np.int8)
    args = (2, 3, 0.05, 0.0)
    exact, info = nu_from_c(as_canonical(X), args, yy, 1.0)
    assert info["n_sub"] == 1500 and info["C_sub"] == 1.0
    sub1, info1 = nu_from_c(as_canonical(X), args, yy, 1.0, subsample=600, seed=4)
    sub2, _ = nu_from_c(as_canonical(X), args, yy, 1.0, subsample=600, seed=4)
    assert info1["n_sub"] == 600 and info1["C_sub"] == pytest.approx(2.5)
    assert sub1 == sub2                          # seeded
    assert 0.3 * exact < sub1 < 3 * exact       # an estimate of the same quantity


def test_c_to_nu_rule_matches_libsvm(heart):
    """n <= 2000: nu = L(w*)/||w*|| of the exact C-SVC optimum (Lemma 2.1)."""
    svmutil = pytest.importorskip("libsvm.svmutil")
    y, X = heart
    Xd = X.toarray() if sp.issparse(X) else X
    rows = [{j + 1: v for j, v in enumerate(r) if v != 0} for r in Xd]
    with libsvm_serial():
        lm = svmutil.svm_train(y.tolist(), rows, f"-t 2 -g {G_HEART} -c 2 -e 1e-6 -q")
    sv_idx = np.array(lm.get_sv_indices()) - 1
    coef = np.array([c[0] for c in lm.get_sv_coef()])
    rho = lm.rho[0]
    K = kernel_matrix(Xd, Xd[sv_idx], kernel=2, gamma=G_HEART)
    dec = K @ coef - rho
    first = lm.get_labels()[0]
    yy = np.where(y == first, 1.0, -1.0)
    loss = np.mean(np.maximum(0, 1 - yy * dec))
    norm = np.sqrt(coef @ K[sv_idx] @ coef)
    m = kernsolve.train(y, X, f"-t 2 -g {G_HEART} -c 2 --solver sbp --epochs 1 -q")
    assert pair_stats(m)["nu"] == pytest.approx(loss / norm, rel=1e-3)


def test_nu_selection_rules(heart):
    y, X = heart
    m = kernsolve.train(y, X, "-n 0.05 --solver sbp --epochs 1 -q")
    assert pair_stats(m)["nu"] == 0.05 and pair_stats(m)["nu_rule"] == "given"
    m = kernsolve.train(y, X, "-s 1 -n 0.5 --solver sbp --epochs 1 -q")
    assert pair_stats(m)["nu"] == 0.5
    m = kernsolve.train(y, X, "--solver sbp --epochs 1 -q")          # LIBSVM's C = 1
    assert pair_stats(m)["nu_rule"] == "from C"
    with pytest.raises(ValueError, match="not both"):
        kernsolve.train(y, X, "-c 10 -n 0.1 --solver sbp")


def test_determinism_threads_and_seed(heart):
    y, X = heart
    old = core._get_tuning()
    # run the parallel update loop on 270 rows, and keep it parallel
    core._set_tuning(par_min=16, adaptive=False)
    try:
        # one epoch: OpenMP fork/join per step is slow on a loaded machine
        opts = f"-t 2 -g {G_HEART} -n 0.05 --solver sbp --epochs 1 --seed 7 -q"
        m1 = kernsolve.train(y, X, opts + " --threads 1")
        m2 = kernsolve.train(y, X, opts + " --threads 2")
        m3 = kernsolve.train(y, X, opts + " --threads 2")
        m4 = kernsolve.train(y, X, opts.replace("--seed 7", "--seed 8") + " --threads 2")
    finally:
        core._set_tuning(**old)
    for m in (m2, m3):
        assert np.array_equal(m.dual_coef, m1.dual_coef)       # bit for bit
        assert np.array_equal(m.rho, m1.rho)
        assert np.array_equal(m.support_indices, m1.support_indices)
    assert not (m4.dual_coef.shape == m1.dual_coef.shape
                and np.array_equal(m4.dual_coef, m1.dual_coef))


def test_adaptive_update_loop_same_bits(heart):
    """The serial/parallel chooser (kernsolve/_core/_solver.pxd) switches the
    response update between one and two threads during a run (its first
    trial of the serial mode starts at update 64): the SBP and a baseline
    give the bits of a one-thread run, and the tuning hooks check their values."""
    from kernsolve.solvers.baselines import _baselines
    y, X = heart
    yy = np.where(y > 0, 1, -1).astype(np.int8)
    n = y.size
    old, old_b = core._get_tuning(), _baselines._get_tuning()
    assert old["adaptive"] and old_b["adaptive"]
    core._set_tuning(par_min=16)
    _baselines._set_tuning(par_min=16)
    try:
        opts = f"-t 2 -g {G_HEART} -n 0.05 --solver sbp --epochs 1 --seed 7 -q"
        m1 = kernsolve.train(y, X, opts + " --threads 1")
        m2 = kernsolve.train(y, X, opts + " --threads 2")
        p1, p2 = (_baselines.run(X, 2, 3, G_HEART, 0.0, yy, n, "pegasos", 1.0 / n,
                                 4 * n, seed=1, n_threads=t) for t in (1, 2))
        with pytest.raises(ValueError, match="par_min must be >= 1"):
            core._set_tuning(par_min=0, adaptive=False)
        with pytest.raises(ValueError, match="poll_seconds must be >= 0"):
            _baselines._set_tuning(poll_seconds=-1.0)
        assert core._get_tuning()["adaptive"]          # a refused call changes nothing
    finally:
        core._set_tuning(**old)
        _baselines._set_tuning(**old_b)
    assert np.array_equal(m1.dual_coef, m2.dual_coef)
    assert np.array_equal(m1.rho, m2.rho)
    assert p2["n_updates"] > 100
    assert p1["coef"].tobytes() == p2["coef"].tobytes()
    assert p1["c"].tobytes() == p2["c"].tobytes()


def test_bounded_fills_same_path(a9a_slice):
    """The iterations' water fillings with the bounds the last one certified
    give the fillings without them (the window search over every point,
    tested in test_waterwindow.py against the quickselect and a sort): the
    same draws, so the same averaged model bit for bit; and the bounded
    fills answered (few widened to every point)."""
    from kernsolve.solvers.sbp._waterwindow import search_counts
    y, X, _, _ = a9a_slice
    yy = np.where(y > 0, 1, -1).astype(np.int8)
    runs = []
    previous = core._set_bounded_fills(True)
    try:
        for bounded in (True, False):
            core._set_bounded_fills(bounded)
            search_counts(reset=True)
            out = core.solve(X, 2, 3, 0.005, 0.0, yy, y.size, 0.0014, max_iter=3000,
                             seed=3, n_threads=1)
            runs.append((out, search_counts()))
    finally:
        core._set_bounded_fills(previous)
    (a, counts), (b, counts_all) = runs
    for key in ("alpha", "c"):
        assert a[key].tobytes() == b[key].tobytes()
    assert a["gamma"] == b["gamma"] and a["bias"] == b["bias"]
    assert counts_all["bounded"] == 0
    assert counts["bounded"] == 3000              # (the first one's are infinite)
    assert counts["widened"] < 30
    # the histogram passes saw a quarter of the values (a9a: most of a class
    # is covered, and the first iterations' steps are long)
    assert counts["round_values"] < 0.4 * counts_all["round_values"]


def test_multiclass_one_vs_one_and_libsvm_predicts_our_file(tmp_path):
    svmutil = pytest.importorskip("libsvm.svmutil")
    rng = np.random.default_rng(1)
    centers = np.array([[0, 0], [3, 0], [0, 3]])
    X = np.vstack([rng.normal(c, 0.7, size=(50, 2)) for c in centers])
    y = np.repeat([3, 1, 2], 50).astype(float)
    m = kernsolve.train(y, X, "-t 2 -g 0.5 -n 0.05 --solver sbp --epochs 5 -q")
    assert len(m.stats["pairs"]) == 3 and list(m.labels) == [3, 1, 2]
    pred, (acc, _, _), dec = kernsolve.predict(y, X, m, "-q")
    assert acc > 95
    path = str(tmp_path / "sbp.model")
    kernsolve.save_model(path, m)
    back = kernsolve.load_model(path)
    assert np.array_equal(kernsolve.predict(None, X, back, "-q")[0], pred)
    with libsvm_serial():
        lm = svmutil.svm_load_model(path)
        rows = [{1: a, 2: b} for a, b in X]
        lp, _, lv = svmutil.svm_predict(y.tolist(), rows, lm, "-q")
    assert np.array_equal(np.array(lp), pred)
    assert np.allclose(np.array(lv), dec, rtol=1e-10, atol=1e-10)


def test_stopping_rules(heart):
    y, X = heart
    base = f"-t 2 -g {G_HEART} -n 0.05 --solver sbp -q"
    m = kernsolve.train(y, X, base + " --epochs 100 --max-kernel-evals 5000")
    st = pair_stats(m)
    assert st["stop_reason"] == "max_kernel_evals"
    assert 5000 <= st["n_kernel_evals"] < 5000 + 270
    m = kernsolve.train(y, X, base + " --epochs 100000 --time-limit 0.05")
    st = pair_stats(m)
    assert st["stop_reason"] == "time_limit" and st["n_iter"] < 100000 * 270
    m = kernsolve.train(y, X, base + " --epochs 200 --validation-fraction 0.2 --seed 2")
    st = pair_stats(m)
    assert st["stop_reason"] == "validation"
    assert st["n_heldout"] == 54 and len(st["trace"]) >= 6
    it, evals, sec, err = zip(*st["trace"])
    assert list(it) == sorted(it) and all(0 <= e <= 54 for e in err)
    # held-out rows are not in the model
    assert m.support_vectors.shape[0] <= 216


@pytest.mark.parametrize("options, message", [
    ("-n 0 --solver sbp", r"nu must be in \(0, 1\)"),
    ("-n 1 --solver sbp", r"nu must be in \(0, 1\)"),
    ("-n 1.5 --solver sbp", r"nu must be in \(0, 1\)"),
    ("-n 0.1 --solver sbp --epochs 0", "--epochs: must be > 0"),
    ("-n 0.1 --solver sbp --epochs -2", "--epochs: must be > 0"),
    ("-n 0.1 --solver sbp --max-kernel-evals 0", "--max-kernel-evals"),
    ("-n 0.1 --solver sbp --time-limit 0", "--time-limit"),
    ("-n 0.1 --solver sbp --validation-fraction 0.9", "--validation-fraction"),
    ("-n 0.1 --solver sbp --learning-rate 3", "unknown option"),
    ("-n 0.1 --solver sbp -s 3", "-s 0"),
    ("-n 0.1 --solver sbp -w1 2", "class weights"),
])
def test_bad_options(heart, options, message):
    y, X = heart
    with pytest.raises(ValueError, match=message):
        kernsolve.train(y, X, options)


def test_bad_data():
    X = np.zeros((4, 4))
    Xp = np.hstack([np.arange(1, 5)[:, None], X])        # precomputed K = 0
    y = np.array([1, -1, 1, -1.0])
    with pytest.raises(ValueError, match="eta_0"):
        kernsolve.train(y, Xp, "-t 4 -n 0.1 --solver sbp")
    with pytest.raises(ValueError, match="weights"):
        kernsolve.train(y, np.eye(4), "-n 0.1 --solver sbp",
                        sample_weight=[1, 2, 1, 1])
    with pytest.raises(ValueError, match="both classes"):
        core.solve(np.eye(3), 2, 3, 1.0, 0.0, np.array([1, 1, 1], np.int8), 3, 0.1)
    with pytest.raises(ValueError, match="nu"):
        core.solve(np.eye(3), 2, 3, 1.0, 0.0, np.array([1, -1, 1], np.int8), 3, 0.0)


# ------------------------------------------------------- comparison solvers

def test_baselines_reach_the_no_bias_svm_optimum(heart):
    """Pegasos and SDCA minimise lambda/2 ||w||^2 + mean hinge: compare the
    primal value with SMO-no-bias's optimum (C = 1/(lambda n))."""
    from kernsolve.solvers.baselines._baselines import run
    y, X = heart
    yy = np.where(y > 0, 1, -1).astype(np.int8)
    n = y.size
    K = kernel_matrix(X, X, kernel=2, gamma=G_HEART)

    def primal(coef, lam):
        return lam / 2 * coef @ K @ coef + np.mean(np.maximum(0, 1 - yy * (K @ coef)))

    lam = 1.0 / n
    m = kernsolve.train(y, X, f"-t 2 -g {G_HEART} -c 1 -e 1e-8 --bias 0 -q")
    coef_smo = np.zeros(n)
    coef_smo[m.support_indices - 1] = m.dual_coef[0] * (1 if m.labels[0] == 1 else -1)
    best = primal(coef_smo, lam)
    sdca = run(X, 2, 3, G_HEART, 0.0, yy, n, "sdca", lam, 40 * n, seed=1)
    assert best <= primal(sdca["coef"], lam) <= best * 1.002
    peg = run(X, 2, 3, G_HEART, 0.0, yy, n, "pegasos", lam, 40 * n, seed=1)
    assert best <= primal(peg["coef"], lam) <= best * 1.05
    # every update costs one kernel row (or a cache hit), counted
    assert 0 < peg["n_kernel_evals"] <= peg["n_updates"] * n


def test_perceptron_separable_and_trace():
    from kernsolve.solvers.baselines._baselines import run
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(-2, 0.5, size=(30, 2)), rng.normal(2, 0.5, size=(30, 2))])
    y = np.r_[np.ones(30), -np.ones(30)].astype(np.int8)
    Xa = np.vstack([X, X])              # the second copy is the held-out set
    ya = np.r_[y, y]
    out = run(Xa, 2, 3, 0.5, 0.0, ya, 60, "perceptron", 0.0, 5 * 60, check_every=60)
    assert len(out["trace"]) == 5
    assert out["trace"][-1][3] == 0      # no held-out (= training) mistakes left
    a = run(Xa, 2, 3, 0.5, 0.0, ya, 60, "perceptron", 0.0, 120, seed=5)
    b = run(Xa, 2, 3, 0.5, 0.0, ya, 60, "perceptron", 0.0, 120, seed=5, n_threads=2)
    assert np.array_equal(a["coef"], b["coef"])


def test_determinism_parallel_kernel_rows():
    """Rows long enough for the kernel engine's parallel path (and the update loop)."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(600, 100))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=600) > 0, 1.0, -1.0)
    old = core._get_tuning()
    core._set_tuning(par_min=16, adaptive=False)
    try:
        opts = "-t 2 -g 0.01 -n 0.05 --solver sbp --epochs 0.25 --seed 4 -q"
        m1 = kernsolve.train(y, X, opts + " --threads 1")
        m2 = kernsolve.train(y, X, opts + " --threads 2")
    finally:
        core._set_tuning(**old)
    assert np.array_equal(m1.dual_coef, m2.dual_coef)
    assert np.array_equal(m1.rho, m2.rho)
    assert m1.stats["n_kernel_evals"] == m2.stats["n_kernel_evals"]
