"""kernsolve-train --solver dsg / --stream and kernsolve-predict on DSG model files.

Oracles: the test labels themselves (accuracy and mean squared error are
recomputed with numpy from the output file), numpy's sigmoid of the decision
values of the model loaded in Python, the in-memory training of the same
file (``--stream`` with one window must give the same model file byte for
byte), and the model trained on a file cut after the first window (the state
kept when the second window holds a malformed line).
"""
import lzma

import numpy as np
import pytest

import kernsolve
from kernsolve.solvers.dsg.stream import train_file
from kernsolve._errors import DataFormatError

from test_cli import assert_user_error, run_cli, run_inproc

# a schedule that learns from a 2000-row slice of a9a (the defaults, step 1 and
# t0 1, stay at the majority class there; see doc/dsg.md)
TUNED = ["-c", "100", "--step", "1000", "--t0", "1000", "--batch-size", "16"]


@pytest.fixture(scope="module")
def a9a(tmp_path_factory):
    from conftest import shared_lines
    folder = tmp_path_factory.mktemp("dsgcli")
    (folder / "train").write_bytes(shared_lines("a9a", 2000))
    (folder / "test").write_bytes(shared_lines("a9a.t", 1000))
    return folder


def _labels(path):
    return np.array([float(line.split()[0]) for line in open(path) if line.strip()])


def _accuracy_line(stdout):
    line = [s for s in stdout.splitlines() if s.startswith("Accuracy = ")]
    assert len(line) == 1, stdout
    return line[0]


def test_train_predict_end_to_end_and_probabilities(a9a):
    train, test = a9a / "train", a9a / "test"
    model, out = a9a / "log.model", a9a / "log.out"
    proc = run_cli("train", "--solver", "dsg", "--loss", "logistic", "-g", "median", *TUNED,
                   train, model)
    assert proc.returncode == 0, proc.stderr
    assert "optimization finished, #iter = 125" in proc.stdout   # ceil(2000 / 16)
    assert open(model).readline() == "kernsolve_model dsg\n"

    proc = run_inproc("predict", test, model, out)
    assert proc.returncode == 0, proc.stderr
    y, pred = _labels(test), _labels(out)
    correct = int(np.sum(pred == y))
    assert _accuracy_line(proc.stdout) == \
        "Accuracy = %g%% (%d/%d) (classification)" % (100.0 * correct / y.size, correct, y.size)
    majority = max(np.mean(y == 1), np.mean(y == -1))
    assert correct / y.size > majority + 0.01          # learns more than the class prior

    # -b 1: svm-predict's header and rows; p(+1) is the sigmoid of f(x)
    proc = run_inproc("predict", "-b", "1", test, model, out)
    assert proc.returncode == 0, proc.stderr
    lines = open(out).read().splitlines()
    assert lines[0] == "labels 1 -1"
    rows = np.array([[float(v) for v in s.split()] for s in lines[1:]])
    m = kernsolve.load_model(str(model))
    _, Xt = kernsolve.read_problem(str(test), n_features=m.n_features)
    p1 = 1.0 / (1.0 + np.exp(-m.decision_function(Xt)[:, 0]))
    np.testing.assert_allclose(rows[:, 1], p1, rtol=1e-5, atol=1e-6)     # %g digits
    np.testing.assert_allclose(rows[:, 1] + rows[:, 2], 1.0, atol=2e-6)
    np.testing.assert_array_equal(rows[:, 0], np.where(p1 >= 0.5, 1.0, -1.0))
    assert _accuracy_line(proc.stdout)


def test_probability_needs_logistic_or_softmax(a9a):
    model = a9a / "hinge.model"
    assert run_inproc("train", "-q", "--solver", "dsg", "-g", "0.05", a9a / "train",
                      model).returncode == 0
    proc = run_inproc("predict", "-b", "1", a9a / "test", model, a9a / "x.out")
    assert_user_error(proc, "does not support probability estimates", "--loss logistic")
    assert not (a9a / "x.out").exists()


def test_regression_mean_squared_error_line(tmp_path, shared):
    data = tmp_path / "housing"
    data.write_bytes(shared.lines("housing_scale", 300))
    model, out = tmp_path / "h.model", tmp_path / "h.out"
    proc = run_inproc("train", "-q", "-s", "3", "--solver", "dsg", "--loss", "huber",
                      "--delta", "5", "-g", "median", "--step", "100", "--t0", "100",
                      "--epochs", "3", "--batch-size", "16", data, model)
    assert proc.returncode == 0, proc.stderr
    proc = run_inproc("predict", data, model, out)
    assert proc.returncode == 0, proc.stderr
    y, pred = _labels(data), _labels(out)
    mse = np.mean((y - pred) ** 2)
    first = proc.stdout.splitlines()[0]
    assert first.startswith("Mean squared error = ") and first.endswith(" (regression)")
    assert float(first.split()[4]) == pytest.approx(mse, rel=1e-5)
    assert mse < 0.75 * np.var(y)                # clearly better than the mean


# --------------------------------------------------------------------------
# --stream
# --------------------------------------------------------------------------

def test_stream_one_window_is_the_in_memory_model(a9a):
    memory, streamed = a9a / "mem.model", a9a / "stream.model"
    args = ["-q", "--solver", "dsg", "-g", "median", "--epochs", "2", "--batch-size", "32"]
    assert run_inproc("train", *args, a9a / "train", memory).returncode == 0
    assert run_inproc("train", *args, "--stream", a9a / "train", streamed).returncode == 0
    assert open(memory).read() == open(streamed).read()


def test_stream_compressed_file_is_the_plain_file(a9a, tmp_path):
    """Windows are positions in the decompressed stream, so an .xz file gives
    the model of its plain text (with the same windows)."""
    text = (a9a / "train").read_bytes()[:60000].rsplit(b"\n", 1)[0] + b"\n"
    xz = tmp_path / "train.xz"
    xz.write_bytes(lzma.compress(text))
    plain = tmp_path / "train"
    plain.write_bytes(text)
    opts = "-q --solver dsg -g 0.05 --batch-size 16"
    a = train_file(str(xz), opts, chunk_bytes=20000)
    b = train_file(str(plain), opts, chunk_bytes=20000)
    y, X = kernsolve.read_problem(str(plain))
    assert a.n_blocks == b.n_blocks >= int(np.ceil(y.size / 16))
    assert np.array_equal(a.coef, b.coef) and np.array_equal(a.intercept, b.intercept)


def test_stream_several_windows_trains_and_predicts(a9a):
    model, out = a9a / "win.model", a9a / "win.out"
    proc = run_inproc("train", "--solver", "dsg", "-g", "median", *TUNED, "--chunk-mb", "0.03",
                      a9a / "train", model)
    assert proc.returncode == 0, proc.stderr
    m = kernsolve.load_model(str(model))
    size = (a9a / "train").stat().st_size
    windows = -(-size // int(0.03 * 2**20))
    assert windows >= 4
    # each window is one fit_rows call: ceil(rows in window / 16) iterations each,
    # so at least as many as in memory and at most one more per window
    n = _labels(a9a / "train").size
    assert -(-n // 16) <= m.n_blocks <= -(-n // 16) + windows
    proc = run_inproc("predict", a9a / "test", model, out)
    y, pred = _labels(a9a / "test"), _labels(out)
    assert np.mean(pred == y) > max(np.mean(y == 1), np.mean(y == -1)) + 0.01


def _with_bad_line(src, dst, lineno):
    lines = src.read_bytes().splitlines(keepends=True)
    lines.insert(lineno - 1, b"1 3:1 x:2\n")
    dst.write_bytes(b"".join(lines))
    return dst


def test_stream_malformed_line_in_second_window(a9a, tmp_path):
    bad = _with_bad_line(a9a / "train", tmp_path / "bad", 1500)
    chunk = 60000
    first_window_lines = bad.read_bytes()[:chunk].count(b"\n")
    assert first_window_lines < 1500 < 2 * first_window_lines       # in window 2

    # classification: the first pass (labels, width) finds it, nothing trained yet
    with pytest.raises(DataFormatError, match=r"bad:1500: ") as info:
        train_file(str(bad), "-q --solver dsg -g 0.05", chunk_bytes=chunk)
    assert info.value.trainer is None

    # regression with the width and lambda given has no first pass: the state
    # kept is exactly the model of the first window alone
    opts = "-q -s 3 --solver dsg --loss squared -g 0.05 --lambda 1e-4 --batch-size 16"
    with pytest.raises(DataFormatError, match=r"bad:1500: ") as info:
        train_file(str(bad), opts, chunk_bytes=chunk, n_features=123)
    kept = info.value.trainer.model()
    head = tmp_path / "head"
    data = bad.read_bytes()        # window 1: the lines whose preceding newline is < chunk
    head.write_bytes(data[:data.find(b"\n", chunk) + 1])
    alone = train_file(str(head), opts, chunk_bytes=chunk, n_features=123)
    assert kept.n_blocks == alone.n_blocks > 0
    assert np.array_equal(kept.coef, alone.coef)

    # the command: one line naming file:line, exit 1, no model file
    proc = run_cli("train", "--solver", "dsg", "--chunk-mb", str(chunk / 2**20), bad,
                   tmp_path / "bad.model", cwd=tmp_path)
    first = assert_user_error(proc, "bad:1500:")
    assert proc.stderr == first + "\n"
    assert not (tmp_path / "bad.model").exists()


# --------------------------------------------------------------------------
# user errors
# --------------------------------------------------------------------------

@pytest.mark.parametrize("args, needle", [
    (["--loss", "nope"], "--loss: unknown loss 'nope'"),
    (["--loss", "squared"], "not a classification loss"),
    (["--batch-size", "0"], "--batch-size: must be >= 1"),
    (["--feature-block", "0"], "--feature-block: must be >= 1"),
    (["--step", "0"], "--step: must be > 0"),
    (["--step", "-2"], "--step: must be > 0"),
    (["-t", "1"], "-t 1: DSG's random features exist for the RBF"),
    (["--chunk-mb", "0"], "--chunk-mb"),
    (["--stream", "-v", "3"], "--stream cannot be combined with -v"),
])
def test_option_errors_exit_1_with_usage_before_reading(tmp_path, args, needle):
    # the training file does not even exist: options are checked first
    proc = run_inproc("train", "--solver", "dsg", *args, tmp_path / "missing", tmp_path / "m")
    first = assert_user_error(proc, needle)
    assert proc.stderr == first + "\nRun 'kernsolve-train --help' for the options.\n"


def test_stream_needs_solver_dsg(tmp_path):
    proc = run_inproc("train", "--stream", tmp_path / "missing", tmp_path / "m")
    assert_user_error(proc, "--stream", "--solver dsg")


def test_test_file_wider_than_the_model(a9a, tmp_path):
    model = a9a / "hinge2.model"
    assert run_inproc("train", "-q", "--solver", "dsg", "-g", "0.05", a9a / "train",
                      model).returncode == 0
    width = kernsolve.load_model(str(model)).n_features
    wide = tmp_path / "wide"
    wide.write_text(f"1 1:1 {width + 5}:1\n-1 2:1\n")
    proc = run_cli("predict", wide, model, tmp_path / "out")
    first = assert_user_error(proc, f"test file {wide}", f"{width} features")
    assert proc.stderr == first + "\n"
    assert not (tmp_path / "out").exists()
    # columns beyond the model that are all zero are fine (LIBSVM's rule)
    (tmp_path / "zero").write_text(f"1 1:1 {width + 5}:0\n")
    assert run_inproc("predict", tmp_path / "zero", model, tmp_path / "out").returncode == 0
