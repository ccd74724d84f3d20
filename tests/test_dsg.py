"""DSG (kernsolve.solvers.dsg, its _dsg.pyx) against independent oracles.

* Algorithm 1 re-implemented in numpy (dsg_reference.py: the explicitly
  materialised random Fourier map, the fitted step from its definition):
  same coefficients, for the functional gradient and the fitted steps.
* Each loss's derivative against a central finite difference of its value,
  and values against the formulas of the DSG paper written here in numpy.
* Kernel ridge regression on the paper's section 7.1 generator converges to
  the closed-form solution with error O(1/t).
* Save/load exact, thread count and cache size do not change a bit.
"""
import re

import numpy as np
import pytest

import kernsolve
from kernsolve.solvers.dsg.model import DSGModel
from kernsolve.solvers.dsg.losses import LOSS
from kernsolve.solvers.dsg.options import _TASKS, hyperparameters
from kernsolve.solvers.dsg.targets import Targets
from kernsolve.solvers.dsg.trainer import DSGTrainer
from kernsolve.solvers.dsg import trainer as trainer_module
from kernsolve.solvers.dsg import _dsg as _c
from kernsolve.solvers.dsg._row_features import row_slab_bytes
from kernsolve._features import random_features
from kernsolve._random import permutation, stream_key

from dsg_reference import FIT_STEP_FACTOR, numpy_loss, reference_fit, t84


@pytest.fixture(scope="module")
def heart():
    y, X = kernsolve.read_problem(kernsolve.dataset_path("heart_scale"))
    return y, X


# ------------------------------------------------------------------ losses

@pytest.mark.parametrize("name,param", [
    ("hinge", 0), ("squared-hinge", 0), ("logistic", 0), ("squared", 0),
    ("huber", 0.7), ("epsilon-insensitive", 0.3), ("quantile", 0.8), ("novelty", 0)])
def test_single_output_losses(name, param):
    rng = np.random.default_rng(1)
    u = rng.normal(scale=2, size=(400, 1))
    y = rng.choice([-1.0, 1.0], size=(400, 1)) if name in (
        "hinge", "squared-hinge", "logistic") else rng.normal(size=(400, 1))
    code = LOSS[name].code
    value = _c.loss_values(code, u, y, param)
    grad = _c.loss_derivatives(code, u, y, param)
    ref_value, ref_grad = numpy_loss(name, u, y, param)
    np.testing.assert_allclose(value, ref_value[:, 0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-12, atol=1e-14)
    # central finite differences, away from the kinks
    h = 1e-6
    fd = (_c.loss_values(code, u + h, y, param) - _c.loss_values(code, u - h, y, param)) / (2 * h)
    kinks = {"hinge": [1], "squared-hinge": [1], "huber": [param, -param],
             "epsilon-insensitive": [param, -param], "quantile": [0], "novelty": [0]}
    where = (y * u)[:, 0] if name in ("hinge", "squared-hinge") else (
        u[:, 0] if name == "novelty" else (u - y)[:, 0])
    smooth = np.ones(len(u), bool)
    for k in kinks.get(name, []):
        smooth &= np.abs(where - k) > 1e-4
    assert smooth.sum() > 300
    np.testing.assert_allclose(fd[smooth], grad[smooth, 0], atol=1e-6)


def test_softmax_loss():
    rng = np.random.default_rng(2)
    u = rng.normal(scale=3, size=(50, 4))
    label = rng.integers(0, 4, size=50).astype(float).reshape(-1, 1)
    code = LOSS["softmax"].code
    value = _c.loss_values(code, u, label)
    idx = label[:, 0].astype(int)
    ref = -u[np.arange(50), idx] + np.log(np.exp(u).sum(axis=1))
    np.testing.assert_allclose(value, ref, rtol=1e-12)
    grad = _c.loss_derivatives(code, u, label)
    h = 1e-6
    for c in range(4):
        e = np.zeros_like(u)
        e[:, c] = h
        fd = (_c.loss_values(code, u + e, label) - _c.loss_values(code, u - e, label)) / (2 * h)
        np.testing.assert_allclose(fd, grad[:, c], atol=1e-7)
    # large margins do not overflow
    big = np.array([[1000.0, -1000.0]])
    assert np.isfinite(_c.loss_values(code, big, np.array([[1.0]]))).all()


# ------------------------------------------------- Algorithm 1 in numpy

def test_t_quantiles_of_the_ridge_rule_match_scipy():
    """The compiled width is the doc's constants, bit for bit, and those are
    Student's t at Phi(1) to 4e-4 (scipy the oracle)."""
    from scipy.stats import norm, t
    from kernsolve.solvers.dsg._dsg import t84 as compiled_t84
    for df in range(1, 200):
        assert compiled_t84(df) == t84(df), df
        assert abs(t84(df) - t.ppf(norm.cdf(1.0), df)) < 4e-4, df


def _task_data(heart, task):
    y, X = heart
    X = X[:90]
    y = y[:90]
    if task == "classification":
        return y, X, 0
    if task == "multiclass":
        return np.digitize(X[:, 0].toarray().ravel(), [-0.3, 0.3]).astype(float), X, 0
    if task == "regression":
        return X[:, 1].toarray().ravel() + 0.5 * X[:, 2].toarray().ravel(), X, 3
    return y, X, 2


@pytest.mark.parametrize("task,loss,extra", [
    ("classification", "hinge", ""),
    ("classification", "logistic", "--average 1"),
    ("classification", "squared-hinge", "--bias 0"),
    ("multiclass", "softmax", ""),
    ("multiclass", "hinge", ""),              # one-vs-rest outputs
    ("regression", "squared", ""),
    ("regression", "huber", "--delta 0.5"),
    ("regression", "epsilon-insensitive", "-p 0.2"),
    ("regression", "quantile", "--tau 0.3"),
    ("novelty", "novelty", "-n 0.2"),
    # the fitted step (the default rule): a given ridge, the next-batch
    # choice, and session 5's GCV choice
    ("classification", "hinge", "--step-rule fit --ridge 0.5"),
    ("multiclass", "softmax", "--step-rule fit"),
    ("classification", "hinge", "--step-rule fit"),
    ("regression", "squared", "--step-rule fit --ridge 0.05"),
    ("regression", "huber", "--step-rule fit --delta 0.5"),
    ("classification", "logistic", "--step-rule fit --average 1"),
    ("multiclass", "softmax", "--step-rule fit --ridge 0.2"),
    ("multiclass", "softmax", "--step-rule fit-gcv"),
    ("classification", "hinge", "--step-rule fit-gcv"),
])
def test_matches_numpy_algorithm_1(heart, task, loss, extra):
    y, X, s = _task_data(heart, task)
    rule = extra.split("--step-rule ")[1].split()[0] if "--step-rule" in extra else "gradient"
    opts = (f"-s {s} -q --solver dsg --loss {loss} -g 0.3 --batch-size 7 --feature-block 5 "
            f"--step 2 --t0 3 --epochs 2 --seed 11 --threads 1 -c 4 --step-rule {rule} "
            f"{extra.replace('--step-rule ' + rule, '')}")
    model = kernsolve.train(y, X, opts)
    param = kernsolve.parse_options(opts)
    targets = Targets.from_data(_TASKS[s], loss, y)
    lam = param.extra.get("lambda", param.nu if s == 2 else 1 / (param.C * X.shape[0]))
    loss_param = {"huber": 0.5, "epsilon-insensitive": 0.2, "quantile": 0.3}.get(loss, 0)
    step = 2 * (FIT_STEP_FACTOR.get(loss, 1.0) if rule == "fit" else 1.0)
    coef, intercept, _ = reference_fit(
        X, targets.encode(y), targets.n_outputs, loss, loss_param, lam=lam, step=step, t0=3,
        B=7, F=5,
        gamma=0.3, seed=11, epochs=2, average="--average 1" in extra,
        fit_intercept="--bias 0" not in extra, rule=rule,
        ridge=param.extra.get("ridge"))
    assert model.coef.shape == coef.shape
    np.testing.assert_allclose(model.coef, coef, rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(model.intercept, intercept, rtol=1e-9, atol=1e-13)
    # Algorithm 2 on the explicit map
    Z = random_features(X, model.n_random_features, gamma=0.3, seed=11)
    f = Z @ model.coef.reshape(-1, model.n_outputs) + model.intercept
    np.testing.assert_allclose(model.decision_function(X), f, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------- kernel ridge, O(1/t)

def _synthetic(n, rng):
    """The DSG paper's section 7.1 generator."""
    X = rng.uniform(-5, 5, size=(n, 2))
    r = np.linalg.norm(X, axis=1)
    return X, np.cos(0.5 * np.pi * r) * np.exp(-0.1 * np.pi * r) + 0.1 * rng.normal(size=n)


def test_kernel_ridge_converges_at_rate_1_over_t():
    rng = np.random.default_rng(0)
    X, y = _synthetic(400, rng)
    Xt, _ = _synthetic(200, rng)
    gamma, lam = 0.5, 0.05
    # closed form: f* = argmin (1/n) sum 1/2 (f(x_i) - y_i)^2 + lam/2 ||f||^2
    K = kernsolve.kernel_matrix(X, X, kernel="rbf", gamma=gamma)
    alpha = np.linalg.solve(K + lam * len(y) * np.eye(len(y)), y)
    f_star = kernsolve.kernel_matrix(Xt, X, kernel="rbf", gamma=gamma) @ alpha
    errors, iters = [], []
    for epochs in (1, 2, 4, 8, 16):
        m = kernsolve.train(y, X, f"-s 3 -q --solver dsg --loss squared -g {gamma} "
                            f"--lambda {lam} --step {1.5 / lam} --t0 40 --batch-size 32 "
                            "--step-rule gradient "
                            f"--feature-block 32 --epochs {epochs} --bias 0 --threads 2")
        errors.append(np.mean((m.decision_function(Xt)[:, 0] - f_star) ** 2))
        iters.append(m.stats["n_iter"])
    slope = np.polyfit(np.log(iters), np.log(errors), 1)[0]
    assert errors[-1] < errors[0] / 6
    assert -1.6 < slope < -0.6, (slope, errors)


# ------------------------------------------------ determinism, files, size

def test_threads_cache_and_seed(heart):
    y, X = heart
    base = "-q --solver dsg -g median --epochs 2 --batch-size 16 --step 5 --seed 3"
    one = kernsolve.train(y, X, base + " --threads 1")
    two = kernsolve.train(y, X, base + " --threads 2")
    # -m tiny: most blocks regenerated instead of cached; same bits
    small = kernsolve.train(y, X, base + " --threads 2 -m 0.001")
    for m in (two, small):
        assert np.array_equal(one.coef, m.coef) and np.array_equal(one.intercept, m.intercept)
    assert np.array_equal(one.decision_function(X, n_jobs=1), two.decision_function(X, n_jobs=2))
    other = kernsolve.train(y, X, base.replace("--seed 3", "--seed 4") + " --threads 1")
    assert not np.array_equal(one.coef, other.coef)


@pytest.mark.parametrize("solver", ["dsg", "udsg", "cdsg"])
def test_single_precision_threads_file_and_the_double_model(heart, tmp_path, solver):
    """--precision single: the same bits for any thread count and cache, in
    the file and back, and within float rounding of the double model (the
    oracle): decision values to 1e-5 of their scale, the same labels."""
    y, X = heart
    base = f"-q --solver {solver} -g median --epochs 2 --batch-size 16 --seed 3"
    double = kernsolve.train(y, X, base)
    one = kernsolve.train(y, X, base + " --precision single --threads 1")
    for m in (kernsolve.train(y, X, base + " --precision single --threads 2"),
              kernsolve.train(y, X, base + " --precision single --threads 2 -m 0.001")):
        assert np.array_equal(one.coef, m.coef) and np.array_equal(one.intercept, m.intercept)
    assert not np.array_equal(one.coef, double.coef)
    want = double.decision_function(X)
    got = one.decision_function(X, n_jobs=2)
    assert np.array_equal(got, one.decision_function(X, n_jobs=1))
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()
    assert np.array_equal(one.predict(X), double.predict(X))
    path = tmp_path / "single.model"
    kernsolve.save_model(path, one)
    assert "\nprecision single\n" in path.read_text()
    assert "precision" not in double.to_text()        # double files as before
    back = kernsolve.load_model(path)
    assert back.precision == "single" and np.array_equal(back.decision_function(X), got)
    est = kernsolve.DSGClassifier(solver=solver, gamma="median", max_iter=2, batch_size=16,
                                  random_state=3, precision="single").fit(X, y)
    assert np.array_equal(est.model_.coef, one.coef)


@pytest.mark.parametrize("solver", ["dsg", "udsg", "cdsg"])
@pytest.mark.parametrize("classes", [2, 3])
@pytest.mark.parametrize("epochs", [2.5, 3])
def test_kept_row_features_are_the_computed_ones(heart, solver, classes, epochs,
                                                 monkeypatch):
    """--precision single over several passes keeps the rows' features in -m
    (RowFeatures): the model is the bits of the run that computes every
    feature each time (-m too small to keep any), for 1 and 2 threads,
    whatever the kept blocks, with a partial last pass or a whole one."""
    monkeypatch.setattr(trainer_module, "KEEP_MIN_NONZEROS", 0)    # heart's 13 columns
    y, X = heart
    if classes == 3:        # softmax: several outputs a block
        y = np.where(y > 0, 1.0, 0.0) + (np.asarray(X[:, 0].todense()).ravel() > 0)
    base = (f"-q --solver {solver} -g median --epochs {epochs} --batch-size 24 "
            f"--feature-block 8 --seed 5 --precision single")
    computed = kernsolve.train(y, X, base + " -m 0.001 --threads 1")
    for opts in (" --threads 1", " --threads 2", " --threads 2 -m 0.3"):
        kept = kernsolve.train(y, X, base + opts)
        assert np.array_equal(kept.coef, computed.coef), opts
        assert np.array_equal(kept.intercept, computed.intercept), opts


def test_row_features_budget_and_reuse(heart, monkeypatch):
    """What -m keeps: the directions first, then row slabs (one a block, as
    many as fit); none for double precision, one pass, rows of fewer than
    KEEP_MIN_NONZEROS nonzeros on average, or a budget the directions fill;
    after a pass the slabs hold what the next one reads."""
    y, X = heart
    X = X.toarray()
    n, d = X.shape
    monkeypatch.setattr(trainer_module, "KEEP_MIN_NONZEROS", np.count_nonzero(X) / n)
    targets = Targets.from_data("classification", None, y)
    targets.loss = "hinge"

    def trainer(opts=""):
        p = kernsolve.parse_options("-q --solver dsg -g 0.1 --batch-size 30 "
                                    "--feature-block 8" + opts)
        t = DSGTrainer(hyperparameters(p, n, d, "hinge", 0.1), targets)
        t.planned_iter = 3 * -(-n // 30)
        return t

    slab = row_slab_bytes(n, 8)
    assert slab == n * (8 * 4 + 1)
    t = trainer(" --precision single")
    kept = t._row_features(X, 3)
    # the blocks made before the last pass: two passes' batches
    assert kept.capacity == -(-2 * n // 30) and kept.n_slabs == 0 and t.kept_shortfall is None
    assert trainer(" --precision single")._row_features(X, 2.5).capacity == -(-2 * n // 30)
    # the budget after the directions ((d + 1) * F doubles a block, all 27 planned)
    directions = 27 * (d + 1) * 8 * 8
    mb = (directions + 5 * slab + 10) / 2**20
    t = trainer(f" --precision single -m {mb!r}")
    assert t._row_features(X, 3).capacity == 5
    # the note names a budget that keeps them all, and it does
    suggested = float(re.search(r"for 5 of up to 18 blocks; -m (\d+) would keep them all",
                                t.kept_note("-m ")).group(1))
    t = trainer(f" --precision single -m {suggested!r}")
    assert t._row_features(X, 3).capacity == 18 and t.kept_note("-m ") == ""
    assert trainer(f" --precision single -m {directions / 2**20!r}")._row_features(X, 3) is None
    assert trainer(" --precision single")._row_features(X, 1) is None
    assert trainer()._row_features(X, 3) is None
    monkeypatch.setattr(trainer_module, "KEEP_MIN_NONZEROS", np.count_nonzero(X) / n + 0.01)
    assert trainer(" --precision single")._row_features(X, 3) is None
    monkeypatch.setattr(trainer_module, "KEEP_MIN_NONZEROS", 0)
    # one pass fills slabs for every block the pass made; read_only freezes them
    t = trainer(" --precision single")
    rf = t._row_features(X, 3)
    t.fit_rows(X, y, row_features=rf)
    assert rf.n_slabs == t.n_blocks == -(-n // 30)
    rf.read_only()
    t.fit_rows(X, y, row_features=rf)
    assert rf.n_slabs == rf.capacity == -(-n // 30) < t.n_blocks
    with pytest.raises(ValueError, match="other rows"):
        t.fit_rows(X[:100], y[:100], row_features=rf)


@pytest.mark.parametrize("epochs", [1, 2, 2.5, 3.01])
def test_planned_iterations_are_the_iterations_run(heart, epochs):
    """The progress line's total: each pass is its own batches (the last one
    short), so 270 rows in batches of 32 are 9 iterations a pass, not 8.44."""
    y, X = heart
    p = kernsolve.parse_options(f"-q --solver dsg -g 0.1 --batch-size 32")
    targets = Targets.from_data("classification", None, y)
    targets.loss = "hinge"
    t = DSGTrainer(hyperparameters(p, X.shape[0], X.shape[1], "hinge", 0.1), targets)
    t.fit_epochs(X, y, epochs)
    assert t.n_iter == t.planned_iter


@pytest.mark.parametrize("solver,options", [("dsg", ""), ("udsg", ""),
                                            ("udsg", " --new-blocks 3 --old-blocks 2")])
def test_row_features_are_wanted_for_the_blocks_before_the_last_pass(heart, solver, options,
                                                                     monkeypatch):
    """The slabs asked for are the blocks the passes before the last one make
    (UDSG: its fixed schedule of new and old blocks), no more."""
    monkeypatch.setattr(trainer_module, "KEEP_MIN_NONZEROS", 0)
    y, X = heart
    n, d = X.shape
    p = kernsolve.parse_options(f"-q --solver {solver} -g 0.1 --batch-size 32 "
                                f"--precision single{options}")
    targets = Targets.from_data("classification", None, y)
    targets.loss = "hinge"
    t = DSGTrainer(hyperparameters(p, n, d, "hinge", 0.1), targets)
    t.planned_iter = 3 * -(-n // 32)
    rf = t._row_features(X, 3)
    assert t.kept_shortfall is None
    t.fit_rows(X, y, row_features=rf)
    t.fit_rows(X, y, row_features=rf)
    assert rf.capacity == rf.n_slabs == t.n_blocks


def test_training_summary_says_what_m_keeps_all_rows_features(heart, capsys, monkeypatch):
    monkeypatch.setattr(trainer_module, "KEEP_MIN_NONZEROS", 0)
    y, X = heart
    opts = "--solver dsg -g 0.1 --precision single --epochs 3 --feature-block 8"
    kernsolve.train(y, X, opts + " -m 0.01")
    note = re.search(r"rows' features kept between passes for 0 of up to (\d+) blocks; "
                     r"-m (\d+) would keep them all", capsys.readouterr().out)
    assert note is not None
    kernsolve.train(y, X, opts + f" -m {note.group(2)}")
    assert "rows' features kept" not in capsys.readouterr().out
    # the estimators say it with verbose, in their own words
    est = kernsolve.DSGClassifier(gamma=0.1, max_iter=3, precision="single", cache_size=0.01,
                                  feature_block=8, verbose=True).fit(X, y)
    out = capsys.readouterr().out
    assert f"-- rows' features kept between passes for 0 of up to {note.group(1)} blocks; " \
           f"cache_size={note.group(2)} would keep them all\n" in out
    est.set_params(cache_size=float(note.group(2))).fit(X, y)
    assert "rows' features kept" not in capsys.readouterr().out


@pytest.mark.parametrize("path", ["scalar", "avx2", "avx512"])
@pytest.mark.parametrize("classes", [2, 3, 10])
def test_prediction_sums_same_bits_on_every_path(heart, vector_path, path, classes):
    """The blocks' dot products (_block_dots.h: several outputs a register,
    several rows at once) give the baseline's bits on each vector path the
    CPU has, for 1, 3 and 10 outputs (masked lanes) and any row count."""
    y, X = heart
    y = np.arange(y.size) % classes if classes > 2 else y
    opts = "-q --solver dsg -g median --epochs 1 --batch-size 13 --feature-block 11 --seed 2"
    vector_path("scalar")
    want = kernsolve.train(y, X, opts + " --threads 2")
    want_dec = want.decision_function(X[:37])
    if not vector_path(path):
        pytest.skip(f"this CPU has no {path} path")
    got = kernsolve.train(y, X, opts + " --threads 2")
    assert np.array_equal(got.coef, want.coef)
    assert np.array_equal(got.decision_function(X[:37]), want_dec)


def test_single_precision_refuses_values_beyond_the_float_range(heart):
    y, X = heart
    wide = X.toarray()
    wide[5, 2] = -1e39
    with pytest.raises(ValueError, match="training with --precision single: a value of "
                                         "magnitude 1e.39 is beyond single precision"):
        kernsolve.train(y, wide, "-q --solver dsg -g 0.1 --precision single")
    m = kernsolve.train(y, X, "-q --solver dsg -g 0.1 --precision single")
    with pytest.raises(ValueError, match="predicting with a --precision single DSG model"):
        m.predict(wide)
    assert kernsolve.train(y, wide, "-q --solver dsg -g 0.1").n_blocks > 0   # double: fine


def test_save_load_round_trip_and_size(heart, tmp_path):
    y, X = heart
    m = kernsolve.train(y, X, "-q --solver dsg --loss logistic -g median --step 5")
    path = tmp_path / "dsg.model"
    kernsolve.save_model(path, m)
    back = kernsolve.load_model(path)
    assert isinstance(back, DSGModel)
    assert np.array_equal(back.coef, m.coef) and np.array_equal(back.intercept, m.intercept)
    assert np.array_equal(kernsolve.predict(y, X, back, "-b 1 -q")[2],
                          kernsolve.predict(y, X, m, "-b 1 -q")[2])
    # O(t) numbers, independent of the input dimension: a 100x wider input
    # with the same blocks gives a file of the same shape
    wide = np.hstack([X.toarray(), np.zeros((X.shape[0], 100 * X.shape[1]))])
    mw = kernsolve.train(y, wide, "-q --solver dsg --loss logistic -g 0.05 --step 5")
    assert mw.coef.shape == m.coef.shape
    text = mw.to_text()
    assert len(text.split()) == len(m.to_text().split())


def test_declared_losses_are_the_compiled_loops():
    """--loss is checked against the spec's choices; the loop knows them by code."""
    from kernsolve.solvers.dsg import SPEC
    assert SPEC.options["loss"].choices == tuple(LOSS)


@pytest.mark.parametrize("options,match", [
    ("--loss nope", "unknown loss"),
    ("--loss squared", "not a classification loss"),
    ("--batch-size 0", "--batch-size"),
    ("--feature-block 0", "--feature-block"),
    ("--step 0", "--step"),
    ("--step -1", "--step"),
    ("-t 0", "RBF"),
    ("-s 1", "nu-SVC"),
    ("--lambda 2 --step 10 --t0 1", "shrink"),
    # hinge: 0.1 * 5 / 2 < 1; the logistic loss's fitted step is 4 times that
    ("--loss logistic --lambda 0.1 --step 5 --t0 1", "times 4 for the logistic"),
    ("--epochs 0", "--epochs"),
    ("--step-rule newton", "--step-rule"),
    ("--ridge 0", "--ridge"),
    ("--ridge -1", "--ridge"),
    ("--precision half", "unknown precision 'half'"),
])
def test_bad_options(heart, options, match):
    y, X = heart
    with pytest.raises(ValueError, match=match):
        kernsolve.train(y, X, "-q --solver dsg " + options)


def test_prediction_dimension_mismatch(heart):
    y, X = heart
    m = kernsolve.train(y, X, "-q --solver dsg -g 0.1")
    wider = np.hstack([X.toarray(), np.ones((X.shape[0], 1))])
    with pytest.raises(ValueError, match="trained on 13 features"):
        m.predict(wider)
    # fewer columns (absent trailing features are zeros) is fine, as in LIBSVM
    assert m.predict(X[:, :10]).shape == (X.shape[0],)


@pytest.mark.parametrize("edit,match", [
    (lambda t: t.replace("n_blocks ", "n_blocks 9"), "coefficient lines"),
    (lambda t: t.replace("loss hinge", "loss nope"), "loss"),
    (lambda t: t.rsplit("\n", 2)[0] + "\n", "coefficient lines"),
    (lambda t: t.replace("gamma ", "gamma -"), "gamma"),
    (lambda t: t.replace("\ncoef\n", "\n"), "no 'coef'"),
    (lambda t: t.replace("\nn_features", "\nprecision half\nn_features"), "precision"),
])
def test_corrupt_model_files(heart, tmp_path, edit, match):
    y, X = heart
    m = kernsolve.train(y[:40], X[:40], "-q --solver dsg -g 0.1")
    path = tmp_path / "bad.model"
    path.write_text(edit(m.to_text()))
    with pytest.raises(kernsolve.ModelFormatError, match=match):
        kernsolve.load_model(path)


def test_progress_line_and_quiet(heart, capsys):
    from kernsolve._progress import Progress
    y, X = heart
    param = kernsolve.parse_options("--solver dsg -g 0.1 --batch-size 4")
    targets = Targets.from_data("classification", "hinge", y)
    trainer = DSGTrainer(hyperparameters(param, X.shape[0], X.shape[1], "hinge", 0.1), targets)
    trainer.planned_iter = -(-X.shape[0] // 4)
    trainer.progress = Progress("dsg", delay=0, interval=0)
    trainer.fit_rows(X, y, n_jobs=1)
    lines = capsys.readouterr().err.strip().splitlines()
    # one line per slice of 16 batches, with the feature evaluations so far
    assert len(lines) == -(-trainer.planned_iter // 16)
    assert lines[-1].startswith(f"kernsolve dsg: iter {trainer.n_iter}/{trainer.planned_iter}")
    assert f"feature evals {trainer.feature_evals:.4g}" in lines[-1]
    kernsolve.train(y, X, "-q --solver dsg -g 0.1")
    assert capsys.readouterr() == ("", "")


def test_batch_larger_than_the_data_is_one_batch_of_every_row(heart):
    # Found by tests/test_cli_fuzz.py: --batch-size 1e12 allocated scratch for
    # 1e12 rows (MemoryError).  A batch holds at most the rows there are, so it
    # trains exactly as a batch of n rows does, in memory for n rows.
    y, X = heart
    n = X.shape[0]
    # three passes: the second and third judge the ridges (their batches are whole)
    huge = kernsolve.train(y, X, "-q --solver dsg -g 0.1 --epochs 3 --batch-size 1000000000000")
    whole = kernsolve.train(y, X, f"-q --solver dsg -g 0.1 --epochs 3 --batch-size {n}")
    assert huge.n_blocks == whole.n_blocks == 3
    assert huge.stats["mean_ridge"] == whole.stats["mean_ridge"] != 1.0
    assert huge.coef.tobytes() == whole.coef.tobytes()
    assert huge.intercept.tobytes() == whole.intercept.tobytes()


@pytest.mark.parametrize("options", [
    "--solver dsg", "--solver dsg --step-rule gradient --loss logistic",
    "--solver dsg --ridge 0.01", "--solver udsg", "--solver cdsg",
    "--solver cdsg --step-rule gradient"])
def test_a_short_last_batch_takes_its_share_of_a_step(shared, options):
    """A pass that ends on one row (here 641 of 2000 rows, batches of 64)
    takes 1/64 of a step there: one row fitted with a whole step moved every
    decision value by up to 1.7-2.0 (a9a at 0.8 epochs: 18-22% test error on
    5 seeds of 20, benchmarks/history/RESULTS.md, session 14)."""
    import io
    y, X = kernsolve.read_problem(io.BytesIO(shared.lines("a9a", 2000)))
    base = f"-q -g median --batch-size 64 --feature-block 32 --seed 3 {options}"
    ten = kernsolve.train(y, X, f"{base} --epochs {640 / 2000!r}")
    eleven = kernsolve.train(y, X, f"{base} --epochs {641 / 2000!r}")
    assert (ten.stats["n_iter"], eleven.stats["n_iter"]) == (10, 11)
    assert np.abs(ten.decision_function(X) - eleven.decision_function(X)).max() < 0.1


# ------------------------------------- the fitted step (issue 17 item 3)

def test_default_fitted_step_one_pass_near_svc():
    """One pass with the defaults (the fitted step, ridge chosen per batch)
    on sklearn's digits (10 classes, 1200 training rows: 5 iterations) comes
    within 7 points of scikit-learn's exact-kernel SVC with the same gamma;
    Algorithm 1's gradient step with the same schedule is far behind (its
    steps are limited by the kernel's top eigenvalue: doc/dsg.md)."""
    from sklearn.datasets import load_digits
    from sklearn.svm import SVC
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    Xtr, ytr, Xte, yte = X[:1200], y[:1200].astype(float), X[1200:], y[1200:].astype(float)
    fit = kernsolve.train(ytr, Xtr, "-q --solver dsg -g median --threads 2")
    grad = kernsolve.train(ytr, Xtr, "-q --solver dsg -g median --step-rule gradient")
    svc = SVC(gamma=fit.gamma, C=10).fit(Xtr, ytr)
    err_fit = np.mean(fit.predict(Xte) != yte)
    err_grad = np.mean(grad.predict(Xte) != yte)
    err_svc = np.mean(svc.predict(Xte) != yte)
    assert err_fit <= err_svc + 0.07, (err_fit, err_svc)
    assert err_fit < 0.6 * err_grad, (err_fit, err_grad)     # 7.5% against 14.1%
    assert 1e-3 <= fit.stats["mean_ridge"] <= 10


def test_fitted_step_same_bits_for_any_thread_count_and_ridge_option(heart):
    y, X = heart
    base = "-q --solver dsg -g 0.3 --batch-size 40 --feature-block 24 --epochs 2 --seed 5"
    for extra in ("", " --ridge 0.2", " --solver udsg", " --solver cdsg",
                  " --step-rule fit-gcv", " --solver cdsg --loss logistic",
                  # batches of 64 rows and more: the ridges are judged on
                  # the threads (_judge_candidates), over many epochs
                  " --batch-size 72 --epochs 6", " --batch-size 72 --epochs 6 --loss logistic"):
        one = kernsolve.train(y, X, base + extra + " --threads 1 -m 0.001")
        two = kernsolve.train(y, X, base + extra + " --threads 2")
        assert np.array_equal(one.coef, two.coef) and np.array_equal(one.intercept,
                                                                      two.intercept)
    fixed = kernsolve.train(y, X, base + " --ridge 0.2")
    assert fixed.stats["mean_ridge"] == pytest.approx(0.2)


def test_ridge_one_until_a_batch_has_judged_a_step(heart):
    """The progressive choice takes ridge 1 until a batch has judged a step:
    a first partial_fit chunk shorter than a batch is a step nobody judges
    (doc/dsg.md, "The step rule"), so the next step takes ridge 1 too, not
    the smallest ridge of the grid (scores all still zero)."""
    from kernsolve.estimators.dsg import DSGClassifier
    y, X = heart
    clf = DSGClassifier(batch_size=16, feature_block=8, gamma=0.3, n_jobs=1)
    clf.partial_fit(X[:5], y[:5], classes=np.unique(y))       # one short batch
    clf.partial_fit(X[5:21], y[5:21])                         # one whole batch, unjudged
    assert clf.model_.stats["n_iter"] == 2
    assert clf.model_.stats["mean_ridge"] == pytest.approx(1.0, rel=1e-12)   # (old: 0.5005)
    clf.partial_fit(X[21:53], y[21:53])        # judged from here: the ridge of the scores
    assert clf.model_.stats["n_iter"] == 4


@pytest.mark.parametrize("loss,n,expected", [
    ("hinge", 60000, (64, 32)), ("logistic", 500, (64, 32)), ("squared", 9000, (64, 32)),
    ("novelty", 100, (64, 32)), ("softmax", 100, (256, 128)), ("softmax", 8000, (500, 128)),
    ("softmax", 20000, (1250, 128)), ("softmax", 60000, (2048, 128)),
])
def test_batch_and_block_defaults_by_loss(loss, n, expected):
    from kernsolve.solvers.dsg.options import default_batch_block
    assert default_batch_block(loss, n) == expected


def test_unset_batch_and_block_train_as_the_rule_written_out():
    """The defaults are the documented numbers: a run without --batch-size and
    --feature-block writes the model of the run that gives them."""
    from conftest import model_bytes
    rng = np.random.default_rng(11)
    X = rng.standard_normal((700, 6))
    y3 = np.argmax(X[:, :3] + 0.5 * rng.standard_normal((700, 3)), axis=1).astype(float)
    y2 = np.sign(X[:, 0] + X[:, 1] + 0.3 * rng.standard_normal(700))
    base = "--solver dsg -g 0.3 -q --threads 2"
    # three classes: the softmax, 700 // 16 = 43 -> 256 rows and 128 features a step
    assert (model_bytes(y3, X, base)
            == model_bytes(y3, X, base + " --batch-size 256 --feature-block 128"))
    assert (model_bytes(y3, X, base)
            != model_bytes(y3, X, base + " --batch-size 64 --feature-block 32"))
    # two classes: the hinge, the paper's 64 and 32
    assert (model_bytes(y2, X, base)
            == model_bytes(y2, X, base + " --batch-size 64 --feature-block 32"))
    est = kernsolve.DSGClassifier(loss="softmax", gamma=0.3, random_state=0).fit(X, y3)
    explicit = kernsolve.DSGClassifier(loss="softmax", gamma=0.3, random_state=0,
                                       batch_size=256, feature_block=128).fit(X, y3)
    assert np.array_equal(est.decision_function(X), explicit.decision_function(X))
