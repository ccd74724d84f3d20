"""Command-line conventions of the four commands and of ``python -m kernsolve``.

Oracles: the exact bytes a user expects (the usage text on stdout, the version
of ``pyproject.toml``, one error line naming the problem, exit statuses 0 and
1), LIBSVM 3.37 (libsvm-official, run after ``srand(1)`` as a fresh
``svm-train`` process starts) for the rates of ``kernsolve-grid
--libsvm-folds``, and grid.py's printing rule for its last line (svm-train
prints the rate with ``%g``; grid.py reads that text back as a float and
prints ``str`` of it).
"""
import contextlib
import importlib
import io
import lzma
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import libsvm_serial, package_env

import kernsolve
from kernsolve import __main__ as main_module
from kernsolve._params import parse_options

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMANDS = ("train", "predict", "scale", "grid")


def pyproject_version():
    text = open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8").read()
    return re.search(r'^version\s*=\s*"([^"]+)"', text, re.M).group(1)


def run_inproc(tool, *args):
    """The console script's entry point, stdout and stderr captured."""
    module = importlib.import_module(f"kernsolve.cli.{tool}")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = module.cli([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def heart(tmp_path):
    path = tmp_path / "heart"
    with lzma.open(kernsolve.dataset_path("heart_scale"), "rb") as f:
        path.write_bytes(f.read())
    return path


# --------------------------------------------------------------------------
# --help, -h, --version
# --------------------------------------------------------------------------

@pytest.mark.parametrize("tool", COMMANDS)
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_prints_the_usage_on_stdout_and_exits_0(tool, flag):
    code, out, err = run_inproc(tool, flag)
    module = importlib.import_module(f"kernsolve.cli.{tool}")
    assert (code, err) == (0, "")
    assert out == module.USAGE
    assert out.startswith(f"Usage: kernsolve-{tool} [")
    assert "--help" in out and "--version" in out


@pytest.mark.parametrize("tool", COMMANDS)
def test_version(tool):
    assert run_inproc(tool, "--version") == (
        0, f"kernsolve-{tool} (kernsolve) {pyproject_version()}\n", "")


@pytest.mark.parametrize("tool, args", [
    ("train", ["-c", "abc", "--help"]),          # --help wins over a bad value
    ("train", ["-c", "2", "-h"]),                # -h without a value: help
    ("predict", ["-b", "1", "-h", "a", "b", "c"]),
    ("scale", ["-l", "0", "--help", "data"]),
    ("grid", ["-log2c", "1,3,1", "-h"]),         # -h in the dataset's place
    ("grid", ["--help", "-v", "3", "data"]),
])
def test_help_anywhere_among_the_options(tool, args):
    code, out, err = run_inproc(tool, *args)
    assert (code, err) == (0, "") and out.startswith(f"Usage: kernsolve-{tool} ")


def test_train_h_with_a_value_is_still_svm_trains_shrinking(heart, tmp_path):
    # -h 0 trains without shrinking (LIBSVM's option), it does not print the usage
    code, out, err = run_inproc("train", "-h", "0", "-q", heart, tmp_path / "m")
    assert (code, out, err) == (0, "", "")
    assert (tmp_path / "m").read_text().startswith("svm_type c_svc\n")
    code, out, err = run_inproc("train", "-h", "2", heart, tmp_path / "m2")
    assert code == 1 and out == "" and err.startswith("kernsolve-train: -h: expected 0 or 1")
    assert not (tmp_path / "m2").exists()


def run_main_module(*args, cwd):
    return subprocess.run([sys.executable, "-m", "kernsolve", *args], cwd=cwd,
                          env=package_env(), capture_output=True, text=True, timeout=120)


def test_python_m_kernsolve_explains_itself(tmp_path):
    for flag in ("--help", "-h"):
        proc = run_main_module(flag, cwd=tmp_path)
        assert (proc.returncode, proc.stderr) == (0, "")
        assert proc.stdout == main_module.USAGE
        assert proc.stdout.startswith("Usage: python -m kernsolve [--help] [--version] [--docs]\n")
        assert "heart_scale" in proc.stdout and "kernsolve-train" in proc.stdout
    proc = run_main_module("--version", cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        0, f"kernsolve {pyproject_version()}\n", "")
    proc = run_main_module("heart_scale", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.splitlines()[0] == ("kernsolve: unexpected argument 'heart_scale' "
                                           "(it takes none)")
    assert os.listdir(tmp_path) == []


def test_python_m_kernsolve_prints_what_the_readme_shows(tmp_path):
    proc = run_main_module(cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, "")
    lines = proc.stdout.splitlines()
    assert lines[0] == "heart_scale: 270 rows, 13 features (LIBSVM's example data, bundled)"
    # the accuracy line is svm-predict's, for the same model and rows
    y, X = kernsolve.read_problem(kernsolve.dataset_path("heart_scale"))
    svmutil = pytest.importorskip("libsvm.svmutil")
    with libsvm_serial():
        m = svmutil.svm_train(y[:200].tolist(), X[:200].toarray().tolist(), "-q")
        _, (acc, _, _), _ = svmutil.svm_predict(y[200:].tolist(), X[200:].toarray().tolist(),
                                                m, "-q")
    assert lines[-1] == f"Accuracy = {acc:g}% ({round(acc * 70 / 100)}/70) (classification)"
    assert len(lines) == 3 and os.listdir(tmp_path) == []


# --------------------------------------------------------------------------
# kernsolve-predict with its arguments swapped
# --------------------------------------------------------------------------

def test_predict_with_swapped_arguments_says_so(heart, tmp_path):
    model = tmp_path / "heart.model"
    assert run_inproc("train", "-q", heart, model)[0] == 0
    out = tmp_path / "out"
    usage = "usage: kernsolve-predict [options] test_file model_file output_file\n"
    for args in ((model, heart, out), (heart, heart, out)):     # swapped; data twice
        code, stdout, err = run_inproc("predict", *args)
        assert (code, stdout) == (1, "")
        assert err == f"kernsolve-predict: {heart}:1: looks like a data file, not a model: " + usage
    code, stdout, err = run_inproc("predict", model, model, out)    # the model twice
    assert (code, stdout) == (1, "")
    assert err == f"kernsolve-predict: {model}:1: looks like a model file, not test data: " + usage
    # a compressed data file in the model's place too
    code, _, err = run_inproc("predict", heart, kernsolve.dataset_path("heart_scale"), out)
    assert code == 1 and "looks like a data file, not a model" in err.splitlines()[0]
    assert not out.exists()
    # the right order still works
    code, stdout, err = run_inproc("predict", heart, model, out)
    assert code == 0 and stdout.startswith("Accuracy = ") and out.exists()


# --------------------------------------------------------------------------
# kernsolve-grid and grid_search take every kernsolve-train option
# --------------------------------------------------------------------------

def _glibc():
    import ctypes
    if not sys.platform.startswith("linux"):
        pytest.skip("glibc's rand() is the C library's only on Linux")
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        pytest.skip("the C library is not glibc")


def _grid_py_best(rates):
    """grid.py's choice over (log2c, log2g, rate) in job order, on the rates it
    reads back from svm-train's %g text."""
    best = None
    for c, g, rate in rates:
        rate = float("%g" % rate)
        if best is None or rate > best[2] or (rate == best[2] and g == best[1] and c < best[0]):
            best = (c, g, rate)
    return best


def test_grid_with_libsvm_folds_gives_grid_pys_rates(tmp_path, shared, monkeypatch):
    libc = _glibc()
    svmutil = pytest.importorskip("libsvm.svmutil")
    data = tmp_path / "heart"
    data.write_bytes(shared.lines("heart_scale", 150))
    monkeypatch.chdir(tmp_path)
    code, out, err = run_inproc("grid", "-log2c", "-1,3,2", "-log2g", "-5,-1,2", "-v", "4",
                                "-png", "null", "--libsvm-folds", "-h", "0", "-q", data)
    assert (code, err) == (0, "")
    ours = {}
    for line in (tmp_path / "heart.out").read_text().splitlines():
        fields = dict(f.split("=") for f in line.split())
        ours[(float(fields["log2c"]), float(fields["log2g"]))] = float(fields["rate"])
    y, x = svmutil.svm_read_problem(str(data))
    theirs = []
    from kernsolve.model_selection.grid import grid_order
    for cell in grid_order({"c": [0.5, 2.0, 8.0], "g": [2.0 ** -5, 0.125, 0.5]}):
        libc.srand(1)                     # each cell: a fresh svm-train -v 4 process
        with libsvm_serial():
            rate = svmutil.svm_train(y, x, f"-c {cell['c']} -g {cell['g']} -h 0 -v 4 -q")
        theirs.append((math.log2(cell["c"]), math.log2(cell["g"]), rate))
        assert ours[(math.log2(cell["c"]), math.log2(cell["g"]))] == pytest.approx(
            rate, rel=1e-12)
    c, g, rate = _grid_py_best(theirs)
    assert out == f"{2.0 ** c} {2.0 ** g} {rate}\n"
    # the library takes the option in its option string: the same rates
    yk, Xk = kernsolve.read_problem(str(data))
    r = kernsolve.grid_search(yk, Xk, "--libsvm-folds -h 0 -q",
                              grid={"c": [0.5, 2.0, 8.0], "g": [2.0 ** -5, 0.125, 0.5]},
                              n_folds=4, n_jobs=2)
    assert r.summary_line() == out
    assert sorted(cell["rate"] for cell in r.cells) == pytest.approx(
        sorted(t[2] for t in theirs), rel=1e-12)
    # and so does cross_validation
    libc.srand(1)
    with libsvm_serial():
        expected = svmutil.svm_train(y, x, "-c 2 -g 0.125 -v 4 -q")
    cv = kernsolve.cross_validation(yk, Xk, "--libsvm-folds -c 2 -g 0.125 -q", n_folds=4)
    assert cv.accuracy == pytest.approx(expected, rel=1e-12)


def test_grid_summary_line_rounds_as_grid_py():
    from kernsolve.model_selection.grid import GridResult
    r = GridResult(best_params={"c": 2.0, "g": 0.03125}, best_rate=100 * 227 / 270)
    assert r.summary_line() == "2.0 0.03125 84.0741\n"
    r = GridResult(best_params={"c": 8.0}, best_rate=84.0)
    assert r.summary_line() == "8.0 84.0\n"


@pytest.mark.parametrize("args, message", [
    (["--stream"], "kernsolve-grid: --stream: training from file windows cannot be combined "
                   "with cross-validation (it needs the data in memory)"),
    (["--chunk-mb", "8"], "kernsolve-grid: --chunk-mb: training from file windows cannot be "
                          "combined with cross-validation (it needs the data in memory)"),
    (["--libsvm-folds=1"], "kernsolve-grid: --libsvm-folds: takes no value, got '1'"),
    (["--no-such-option", "1"], "kernsolve-grid: unknown option: --no-such-option"),
])
def test_grid_train_options_that_cannot_apply_are_named(args, message, tmp_path):
    # checked before the dataset is opened: no file is needed for a usage error
    code, out, err = run_inproc("grid", *args, tmp_path / "missing")
    assert (code, out) == (1, "")
    assert err.splitlines()[0] == message
    # the error stays in sight: a pointer to --help follows it, not the whole usage
    assert err.splitlines()[1:] == ["Run 'kernsolve-grid --help' for the options."]


def test_every_train_option_reaches_grid(heart, tmp_path, monkeypatch):
    # --libsvm-folds and -q are flags (no value taken from the next argument),
    # --seed, --bias, -wi, -b, --threads, --solver with its own options pass through
    monkeypatch.chdir(tmp_path)
    code, out, err = run_inproc("grid", "-log2c", "0,0,1", "-log2g", "-3,-3,1", "-v", "3",
                                "-png", "null", "-out", "null", "--libsvm-folds", "--seed",
                                "3", "-w1", "2", "-b", "1", "--threads", "1", "-q", heart)
    assert (code, err) == (0, "")
    assert re.fullmatch(r"1\.0 0\.125 \d+(\.\d+)?\n", out)
    code, out, err = run_inproc("grid", "-log2c", "0,0,1", "-log2g", "null", "-v", "3",
                                "-png", "null", "-out", "null", "--solver", "sdca",
                                "--epochs", "2", "--bias", "0", "-q", heart)
    assert (code, err) == (0, "") and re.fullmatch(r"1\.0 \d+(\.\d+)?\n", out)


def test_libsvm_folds_is_part_of_the_option_grammar():
    p = parse_options("-c 2 --libsvm-folds -b 1")
    assert p.libsvm_folds and p.C == 2.0 and p.probability
    assert p.to_options() == "-c 2 -b 1 --libsvm-folds"
    assert parse_options(p.to_options()) == p
    assert parse_options({"libsvm_folds": True}) == parse_options("--libsvm-folds")
    assert not parse_options("").libsvm_folds
    # a flag: it never takes the next argument as its value
    assert kernsolve._params.split_arguments("--libsvm-folds data") == (
        ["--libsvm-folds"], ["data"])


def test_train_with_libsvm_folds_in_python_gives_svm_trains_sigmoid(heart, tmp_path):
    # kernsolve.train(..., "--libsvm-folds -b 1") draws svm-train's -b 1 folds
    libc = _glibc()
    svmutil = pytest.importorskip("libsvm.svmutil")
    yl, xl = svmutil.svm_read_problem(str(heart))
    libc.srand(1)
    with libsvm_serial():
        theirs = svmutil.svm_train(yl, xl, "-c 2 -g 0.1 -b 1 -q")
    svmutil.svm_save_model(str(tmp_path / "theirs.model"), theirs)
    lines = (tmp_path / "theirs.model").read_text().splitlines()
    prob_a = float(next(s for s in lines if s.startswith("probA")).split()[1])
    y, X = kernsolve.read_problem(str(heart))
    model = kernsolve.train(y, X, "--libsvm-folds -b 1 -c 2 -g 0.1 -q")
    assert float(model.prob_a[0]) == pytest.approx(prob_a, rel=1e-9)
    other = kernsolve.train(y, X, "-b 1 -c 2 -g 0.1 -q")     # kernsolve's own folds
    assert float(other.prob_a[0]) != pytest.approx(prob_a, rel=1e-9)
