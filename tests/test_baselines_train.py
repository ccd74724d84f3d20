"""``--solver pegasos|sdca|perceptron`` through kernsolve.train, model files and the CLI.

Oracles: SMO without bias (the optimum of the problem Pegasos and SDCA
minimise; SMO itself is checked against LIBSVM in test_svm_libsvm.py), the
primal objective recomputed with numpy from the coefficients, the Perceptron
convergence theorem on separable data, and libsvm-official loading the saved
model files.
"""
import io
import math
import subprocess
import sys
import tempfile

import numpy as np
import pytest
import scipy.sparse as sp

import kernsolve
from conftest import package_env, shared_lines

G = 0.05


@pytest.fixture(scope="module")
def a9a():
    y, X = kernsolve.read_problem(io.BytesIO(shared_lines("a9a", 800)), n_features=123)
    return y, X


@pytest.fixture(scope="module")
def fashion():
    """300 rows of Fashion-MNIST, 10 classes: 45 one-vs-one pairs."""
    y, X = kernsolve.read_problem(io.BytesIO(shared_lines("fashion-mnist.scale", 300)),
                                  n_features=784)
    return y, X


def rbf(A, B, gamma):
    A = A.toarray() if sp.issparse(A) else A
    B = B.toarray() if sp.issparse(B) else B
    d = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2 * A @ B.T
    return np.exp(-gamma * np.maximum(d, 0))


def full_coef(model, n):
    """Signed coefficients by training row of a binary model (+1 = labels[0])."""
    coef = np.zeros(n)
    coef[model.support_indices - 1] = model.dual_coef[0]
    return coef


def primal(coef, K, y_pm, C):
    """LIBSVM's C-SVC primal without bias: 1/2 ||w||^2 + C sum hinge."""
    f = K @ coef
    return 0.5 * coef @ f + C * np.maximum(0.0, 1.0 - y_pm * f).sum()


@pytest.mark.parametrize("solver, epochs, tol", [("sdca", 20, 0.005), ("pegasos", 40, 0.05)])
def test_minimises_the_no_bias_svm(a9a, solver, epochs, tol):
    y, X = a9a
    n = y.size
    smo = kernsolve.train(y, X, f"-c 1 -g {G} -e 1e-6 --bias 0 -q", n_jobs=1)
    y_pm = np.where(y == smo.labels[0], 1.0, -1.0)
    K = rbf(X, X, G)
    best = primal(full_coef(smo, n), K, y_pm, 1.0)
    m = kernsolve.train(y, X, f"-c 1 -g {G} --solver {solver} --epochs {epochs} --seed 2 -q",
                        n_jobs=1)
    assert m.rho.tolist() == [0.0]
    coef = full_coef(m, n)
    value = primal(coef, K, y_pm, 1.0)
    assert best * (1 - 1e-6) <= value <= best * (1 + tol)
    # the reported objective is the same primal, from the single-precision cache
    assert m.stats["objective"][0] == pytest.approx(value, rel=1e-4)
    # training error within a point or two of SMO's
    err = np.mean(kernsolve.predict(y, X, m, "-q")[0] != y)
    err_smo = np.mean(kernsolve.predict(y, X, smo, "-q")[0] != y)
    assert abs(err - err_smo) <= 0.02
    # counted work: the planned steps, at most one kernel row per update
    st = m.stats["pairs"][0]
    assert st["solver"] == solver and st["n_iter"] == math.ceil(epochs * n)
    assert m.stats["n_iter"] == st["n_iter"]
    assert 0 < st["n_kernel_evals"] <= st["n_updates"] * n
    assert st["seconds"] > 0 and st["lambda"] == pytest.approx(1.0 / n)


def test_perceptron_separates_separable_data():
    rng = np.random.default_rng(5)
    X = np.vstack([rng.normal(-2, 0.6, (40, 3)), rng.normal(2, 0.6, (40, 3))])
    y = np.r_[np.full(40, 3.0), np.full(40, 7.0)]
    m = kernsolve.train(y, X, "-g 0.2 --solver perceptron --epochs 20 -q", n_jobs=1)
    assert np.array_equal(kernsolve.predict(y, X, m, "-q")[0], y)
    st = m.stats["pairs"][0]
    assert st["training_errors"] == 0 and st["n_iter"] == 1600
    # --iterations sets the steps of each sub-problem directly
    m = kernsolve.train(y, X, "-g 0.2 --solver perceptron --iterations 77 -q", n_jobs=1)
    assert m.stats["n_iter"] == 77


@pytest.mark.parametrize("solver", ["pegasos", "sdca", "perceptron"])
def test_multiclass_model_file_loads_in_libsvm(tmp_path, fashion, solver):
    svmutil = pytest.importorskip("libsvm.svmutil")
    from conftest import libsvm_serial
    y, X = fashion
    cost = "" if solver == "perceptron" else "-c 10 "     # the Perceptron refuses -c
    m = kernsolve.train(y, X, f"{cost}-g 0.02 --solver {solver} --epochs 3 --seed 4 -q",
                        n_jobs=1)
    k = m.labels.size
    assert k == 10 and len(m.stats["pairs"]) == 45
    # support vectors = the rows with a nonzero coefficient in some pair
    assert m.stats["n_SV"] == m.support_indices.size == int(m.n_support.sum())
    assert np.all(np.any(m.dual_coef != 0, axis=0))
    path = str(tmp_path / f"{solver}.model")
    kernsolve.save_model(path, m)
    ours, _, values = kernsolve.predict(y, X, m, "-q")
    assert np.mean(ours == y) > 0.7
    data = tmp_path / "fashion"
    kernsolve.write_problem(str(data), y, X)
    yl, xl = svmutil.svm_read_problem(str(data))
    model = svmutil.svm_load_model(path)
    assert model.get_nr_class() == 10 and model.get_nr_sv() == m.stats["n_SV"]
    with libsvm_serial():
        theirs, _, vals = svmutil.svm_predict(yl, xl, model, "-q")
    assert np.array_equal(np.asarray(theirs), ours)
    np.testing.assert_allclose(np.asarray(vals), values, rtol=1e-6, atol=1e-9)


def test_same_seed_same_model_any_threads(a9a):
    y, X = a9a
    opts = f"-c 2 -g {G} --solver sdca --epochs 2 -q"
    a = kernsolve.train(y, X, opts + " --seed 7", n_jobs=1)
    b = kernsolve.train(y, X, opts + " --seed 7", n_jobs=2)
    c = kernsolve.train(y, X, opts + " --seed 8", n_jobs=1)
    assert np.array_equal(a.dual_coef, b.dual_coef)
    assert np.array_equal(a.support_indices, b.support_indices)
    assert not (a.dual_coef.shape == c.dual_coef.shape
                and np.array_equal(a.dual_coef, c.dual_coef))
    p1 = kernsolve.train(y, X, f"-g {G} --solver perceptron --seed 3 --epochs 1 -q")
    p2 = kernsolve.train(y, X, f"-g {G} --solver perceptron --seed 3 --epochs 1 -q")
    assert np.array_equal(p1.dual_coef, p2.dual_coef)


def test_probability_model_from_a_baseline(a9a):
    y, X = a9a
    m = kernsolve.train(y[:300], X[:300], f"-g {G} -b 1 --solver pegasos --seed 1 -q")
    assert m.prob_a is not None and m.prob_a[0] < 0   # larger decision value, larger P(+)
    _, _, prob = kernsolve.predict(y[:300], X[:300], m, "-b 1 -q")
    assert np.allclose(prob.sum(axis=1), 1.0)


@pytest.mark.parametrize("options, match", [
    ("-s 1 --solver sdca", "C-SVC"),
    ("-s 3 --solver pegasos", "C-SVC"),
    ("-w1 2 --solver sdca", "class weights"),
    ("--solver sdca --epochs 2 --iterations 5", "not both"),
    ("--solver pegasos --iterations 0", "--iterations"),
    ("--solver perceptron --iterations 2.5", "--iterations"),
    ("--solver sdca --epochs -1", "--epochs"),
    ("--solver sdca --epochs abc", "--epochs"),
    ("--solver sdca --batch-size 4", "--batch-size"),
])
def test_bad_options(options, match):
    X = np.eye(4)
    y = np.array([1.0, -1, 1, -1])
    with pytest.raises(ValueError, match=match):
        kernsolve.train(y, X, options + " -q")


def test_sample_weights_refused():
    with pytest.raises(ValueError, match="weights"):
        kernsolve.train([1, -1, 1, -1], np.eye(4), "--solver sdca -q",
                        sample_weight=[1, 2, 1, 1])


def test_cli_sdca_end_to_end(tmp_path, shared):
    heart = tmp_path / "heart"
    heart.write_bytes(shared_lines("heart_scale"))
    model = tmp_path / "heart.model"
    env = package_env()

    def cli(tool, *args):
        return subprocess.run([sys.executable, "-m", f"kernsolve.cli.{tool}", *map(str, args)],
                              cwd=tempfile.gettempdir(), env=env, capture_output=True,
                              text=True, timeout=120)

    proc = cli("train", "--solver", "sdca", "--epochs", "20", "--seed", "3", "-c", "1",
               "-g", "0.05", heart, model)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("SDCA: 5400 iterations, ")
    assert "rho = 0.000000\n" in proc.stdout and "Total nSV = " in proc.stdout
    assert proc.stderr == ""
    text = model.read_text()
    assert text.startswith("svm_type c_svc\nkernel_type rbf\ngamma 0.05")  # %.17g
    assert "\nrho 0\n" in text
    pred = cli("predict", heart, model, tmp_path / "out")
    assert pred.returncode == 0, pred.stderr
    acc = float(pred.stdout.split("=")[1].split("%")[0])
    y, X = kernsolve.read_problem(str(heart))
    smo = kernsolve.train(y, X, "-c 1 -g 0.05 --bias 0 -q")
    acc_smo = 100 * np.mean(kernsolve.predict(y, X, smo, "-q")[0] == y)
    assert abs(acc - acc_smo) < 2.5
    again = cli("train", "-q", "--solver", "sdca", "--epochs", "20", "--seed", "3", "-c", "1",
                "-g", "0.05", heart, tmp_path / "again.model")
    assert again.returncode == 0 and again.stdout == "" and again.stderr == ""
    assert (tmp_path / "again.model").read_text() == text       # same seed, same file
    bad = cli("train", "-s", "2", "--solver", "sdca", heart, tmp_path / "x.model")
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert bad.stderr.startswith("kernsolve-train: --solver sdca trains C-SVC (-s 0) only")
