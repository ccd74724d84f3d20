"""``--solver auto`` (kernsolve.solvers.auto): the choice, its line, its records.

Oracles: the thresholds' own definitions (the problems are described with a
fake number of rows through ``auto.Problem``, the function-level seam, rather
than big data); LIBSVM's ``svm-train`` (Debian's libsvm-tools) and the explicit
``--solver smo`` for the model file auto writes on a small problem; the
explicit command auto prints, trained as given, for what auto trains.
"""
import math
import shutil
import subprocess

import numpy as np
import pytest
import scipy.sparse as sp

import kernsolve
from kernsolve import parse_options
from kernsolve.cli import train as cli_train
from kernsolve.solvers import auto
from kernsolve.solvers.eigenpro.model import EigenProModel
from kernsolve.solvers.eigenpro.centres import default_centres

GIB = 2 ** 30


def _problem(n, d=784, sparse=False, stored=None, memory=8 * GIB):
    return auto.Problem(n, d, n * d if stored is None else stored, sparse, memory)


def _choice(options, problem):
    return auto.choose(parse_options("--solver auto " + options), problem)


def _classes(n=300, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return (X[:, 0] + 0.3 * X[:, 1] > 0).astype(float), X


# --------------------------------------------------------------------------
# the rule
# --------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 300, 60000, auto.SMO_MAX_ROWS])
def test_up_to_the_crossover_smo(n):
    choice = _choice("-c 10 -g 0.02", _problem(n))
    assert choice.solver == "smo" and choice.options == {} and choice.cache_mb is None
    assert f"n = {n} rows <= {auto.SMO_MAX_ROWS}" in choice.reason


def test_beyond_the_crossover_eigenpro_on_default_centres():
    n = auto.SMO_MAX_ROWS + 20000           # 120,000 rows: the measured more-rows case
    choice = _choice("-g 0.02", _problem(n, memory=8 * GIB))
    p = default_centres(n, auto.CENTRES_SUBSAMPLE, 8 * GIB)
    assert p == round(15000 * np.sqrt(n / 60000)) == 21213
    assert choice.solver == "eigenpro"
    assert choice.options == {"centers": p, "subsample": 3000, "lambda": 1e-7,
                              "epochs": 30, "precision": "half"}
    # -m not given: K(X, C) in float16 (2 n p bytes) where it fits beside the rows
    assert choice.cache_mb == 2 * n * p // 2 ** 20
    # a kernel not bounded by 1 keeps float32 blocks
    assert _choice("-t 1", _problem(n)).options["precision"] == "single"
    # -m given is kept
    assert _choice("-m 500", _problem(n)).cache_mb is None


@pytest.mark.parametrize("n", [240000, 480000, 1_200_000])
def test_no_more_centres_than_the_memory_keeps_k_for(n):
    """Beyond the centres whose K(X, C) (2 n p bytes in half precision) fits
    beside the dense rows and the preconditioner, every iteration would
    compute it again: the most that fit, but not below the 15000 measured at
    480,000 and 1.2 million rows."""
    from kernsolve.solvers.eigenpro.centres import preconditioner_bytes
    memory = 12 * GIB
    root = round(15000 * np.sqrt(n / 60000))
    beside = memory - 8 * n * 784 - preconditioner_bytes(root, 3000)
    kept = beside // (2 * n)
    choice = _choice("-g 0.02", _problem(n, memory=memory))
    assert choice.solver == "eigenpro"
    p = choice.options["centers"]
    assert p == max(kept, 15000) < root
    assert f"not the square-root rule's {root}" in choice.reason
    assert f"beyond the {kept} whose K(X, C) the memory keeps" in choice.reason
    # K(X, C) kept as far as it fits
    assert choice.cache_mb == min(2 * n * p, beside) // 2 ** 20


def test_options_eigenpro_refuses_leave_it_to_random_features():
    # -c is SMO's and DSG's (lambda = 1/(C n)); EigenPro refuses it, so auto does not pick it
    choice = _choice("-c 10 -g 0.02", _problem(200000))
    assert choice.solver == "udsg"
    assert "-c 10: --solver eigenpro does not use C" in choice.reason


def test_sparse_rows_too_large_to_make_dense_go_to_random_features():
    # 2 million rows, a million columns, 50 values a row: the dense rows would take
    # 8 n d bytes, far more than the memory at hand; UDSG reads the rows as given
    problem = _problem(2_000_000, d=1_000_000, sparse=True, stored=2_000_000 * 50)
    choice = auto.choose(parse_options("--solver auto"), problem)
    assert choice.solver == "udsg"
    assert "made dense take" in choice.reason
    # a kernel without random features: SMO, with both reasons
    choice = auto.choose(parse_options("--solver auto -t 1"), problem)
    assert choice.solver == "smo" and "made dense" in choice.reason and "-t 1" in choice.reason


@pytest.mark.parametrize("options, words", [
    ("-s 2", "-s 2 (one_class)"), ("-s 1", "-s 1 (nu_svc)"), ("-s 4", "-s 4 (nu_svr)"),
    ("-b 1", "-b 1"), ("-w1 2", "weights"), ("--bias 0", "--bias 0"),
    ("-t 3", "sigmoid"), ("-t 4", "precomputed"),
])
def test_what_only_smo_trains_is_smo_at_any_size(options, words):
    choice = _choice(options, _problem(10 ** 7))
    assert choice.solver == "smo" and words in choice.reason


def test_the_hard_margin_is_smos():
    param = kernsolve.Parameters(solver="auto", C=math.inf).check()
    choice = auto.choose(param, _problem(10 ** 7))
    assert choice.solver == "smo" and "hard margin" in choice.reason


def test_regression_beyond_the_crossover():
    assert _choice("-s 3 -g 0.02", _problem(500000, d=20)).solver == "eigenpro"
    # -p is epsilon-SVR's: EigenPro fits squared errors and refuses it, DSG takes it
    choice = _choice("-s 3 -p 0.5", _problem(500000, d=20))
    assert choice.solver == "udsg" and "-p 0.5" in choice.reason


def test_sample_weights_are_smos():
    choice = auto.choose(parse_options("--solver auto"), _problem(10 ** 6), weighted=True)
    assert choice.solver == "smo"


def test_memory_caps_the_centres_and_decides():
    n = 10 ** 6
    # the default p at a million rows is 61237; 1 GiB less the rows (8 n d = 160 MB
    # at d = 20) holds 8 p (3000 + 512) bytes of the preconditioner for p = 32522 at most
    beside_rows = GIB - 8 * n * 20
    assert default_centres(n, 3000, beside_rows) == beside_rows // (8 * (3000 + 512)) == 32522
    # and nothing is left for K(X, C): the 15000 centres measured at such sizes
    choice = _choice("", _problem(n, d=20, memory=GIB))
    assert choice.options["centers"] == 15000 and "beyond the 0 whose" in choice.reason
    # the rows made dense do not fit: random features
    assert _choice("", _problem(n, d=200, memory=GIB)).solver == "udsg"


def test_the_same_problem_the_same_choice():
    problem = _problem(150000)
    first = _choice("-g 0.02", problem)
    assert all(_choice("-g 0.02", problem) == first for _ in range(3))


def test_describe_reads_rows_columns_and_stored_values():
    X = sp.random(50, 30, density=0.1, format="csr", random_state=0)
    assert auto.describe(X, 50, memory=1) == auto.Problem(50, 30, X.nnz, True, 1)
    assert auto.describe(np.zeros((7, 3)), 7, memory=1) == auto.Problem(7, 3, 21, False, 1)


# --------------------------------------------------------------------------
# kernsolve.train, the command line, the estimators
# --------------------------------------------------------------------------

def test_train_prints_the_choice_on_stderr_and_keeps_it(capfd):
    y, X = _classes()
    model = kernsolve.train(y, X, "--solver auto")
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and err.startswith("--solver auto: smo (n = 300 rows <= ")
    assert model.stats["solver"] == "smo" and model.stats["auto"] == err.strip()


def test_quiet_prints_nothing(capfd):
    y, X = _classes()
    kernsolve.train(y, X, "--solver auto -q")
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_auto_on_a_small_problem_writes_smos_model_file(tmp_path, capfd):
    y, X = _classes(n=200)
    X = np.round(X, 5)      # values svm-train's %.8g writes back as read
    data = tmp_path / "train.txt"
    _write(data, y, X)
    files = {}
    for name, options in (("auto", ["--solver", "auto"]), ("smo", [])):
        files[name] = tmp_path / f"{name}.model"
        assert cli_train.cli(options + ["-c", "4", "-g", "0.25", str(data),
                                        str(files[name])]) == 0
    assert "--solver auto: smo (" in capfd.readouterr().err
    assert files["auto"].read_bytes() == files["smo"].read_bytes()
    if shutil.which("svm-train"):       # LIBSVM's own tool writes the same bytes
        ref = tmp_path / "libsvm.model"
        subprocess.run(["svm-train", "-q", "-c", "4", "-g", "0.25", str(data), str(ref)],
                       check=True)
        assert files["auto"].read_bytes() == ref.read_bytes()


def _write(path, y, X):
    with open(path, "w") as f:
        for label, row in zip(y, X):
            f.write(f"{label:g} " + " ".join(f"{j + 1}:{v:.17g}" for j, v in
                                              enumerate(row)) + "\n")


def test_beyond_the_crossover_auto_trains_what_it_printed(monkeypatch, capfd):
    # the seam: a crossover of 100 rows, so 300 rows are "beyond" it
    monkeypatch.setattr(auto, "SMO_MAX_ROWS", 100)
    monkeypatch.setattr(auto, "CENTRES_SUBSAMPLE", 40)
    y, X = _classes()
    model = kernsolve.train(y, X, "--solver auto -g 0.5")
    line = capfd.readouterr().err.strip()
    assert isinstance(model, EigenProModel) and model.stats["solver"] == "eigenpro"
    assert line.startswith("--solver auto: eigenpro --centers 260 --subsample 40 ")
    command = line[len("--solver auto: "):line.index(" (")]
    ref = kernsolve.train(y, X, "-q -g 0.5 --solver " + command)
    np.testing.assert_array_equal(model.coef, ref.coef)
    assert model.param.solver == "eigenpro"


def test_solver_options_with_auto_are_refused():
    with pytest.raises(ValueError, match=r"^--epochs: --solver auto chooses the solver and "
                                         r"its options; name the solver to set it \(it "
                                         r"belongs to .*eigenpro"):
        parse_options("--solver auto --epochs 3")
    with pytest.raises(ValueError, match=r"^--centers: --solver auto chooses the solver and "
                                         r"its options; name the solver to set it \(it "
                                         r"belongs to eigenpro\)$"):
        kernsolve.Parameters(solver="auto", extra={"centers": 5}).check()
    assert cli_train.cli(["--solver", "auto", "--epochs", "3", "x", "y"]) != 0


def test_svc_auto_is_smo_and_says_why():
    y, X = _classes(n=120)
    est = kernsolve.SVC(solver="auto").fit(X, y)
    ref = kernsolve.SVC().fit(X, y)
    np.testing.assert_array_equal(est.dual_coef_, ref.dual_coef_)
    assert est.solver_choice_.startswith("--solver auto: smo (n = 120 rows")
    with pytest.raises(ValueError, match="solver='auto' chooses the solver"):
        kernsolve.SVC(solver="auto", solver_options={"epochs": 2}).fit(X, y)


def test_svc_auto_beyond_the_crossover_stays_with_the_drivers_solvers(monkeypatch):
    monkeypatch.setattr(auto, "SMO_MAX_ROWS", 100)
    y, X = _classes(n=120)
    est = kernsolve.SVC(solver="auto").fit(X, y)
    assert "the approximate solvers are not among smo" in est.solver_choice_
