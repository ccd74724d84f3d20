"""End-to-end tests of kernsolve-train / kernsolve-predict / kernsolve-scale.

The commands run as subprocesses (``python -m kernsolve.cli.NAME``), the way a
user's script runs them. Oracles: libsvm-official (training, prediction and
its printed lines), svm-scale's documented range-file format and formula
(expected files written by hand), and LIBSVM's own svm-scale binary when it
is installed (those comparisons skip cleanly when it is not).
"""
import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

from conftest import package_env


def run_cli(tool, *args, cwd=None, input=None):
    env = package_env()
    env.pop("KERNSOLVE_DEBUG_CLI", None)
    return subprocess.run([sys.executable, "-m", f"kernsolve.cli.{tool}", *map(str, args)],
                          cwd=cwd or tempfile.gettempdir(), env=env, capture_output=True, text=True, input=input,
                          timeout=120)


class Result:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def run_inproc(tool, *args):
    """Same entry point as the console script, without starting an interpreter."""
    import importlib
    module = importlib.import_module(f"kernsolve.cli.{tool}")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = module.cli([str(a) for a in args])
    return Result(code, out.getvalue(), err.getvalue())


def assert_user_error(proc, *needles):
    """Exit 1, no traceback, the first stderr line names the problem."""
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    first = proc.stderr.splitlines()[0] if proc.stderr else ""
    for needle in needles:
        assert needle in first, (needle, proc.stderr)
    return first


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return str(path)


def parse_libsvm(text):
    """Hand parser of LIBSVM lines -> (labels, list of {index: value})."""
    labels, rows = [], []
    for line in text.splitlines():
        fields = line.split()
        labels.append(float(fields[0]))
        rows.append({int(k): float(v) for k, v in (f.split(":") for f in fields[1:])})
    return np.array(labels), rows


@pytest.fixture
def heart(tmp_path, shared):
    return write(tmp_path / "heart", shared.lines("heart_scale").decode())


def libsvm_util():
    return pytest.importorskip("libsvm.svmutil")


def libsvm_predict_quietly(svmutil, y, x, model, options=""):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        out = svmutil.svm_predict(y, x, model, options)
    return out, buf.getvalue()


# ---------------------------------------------------------------------------
# kernsolve-scale

SMALL = "1 1:2 3:-4\n-1 2:0.5 3:4\n2 1:6 2:1.5\n"
# By hand, from svm-scale's rule: feature 1 ranges over {2, 0, 6}, feature 2
# over {0, 0.5, 1.5}, feature 3 over {-4, 4, 0} (absent features count as 0).
SMALL_RANGE = "x\n-1 1\n1 0 6\n2 0 1.5\n3 -4 4\n"
# min -> lower, max -> upper exactly, otherwise lower + (upper-lower)*(v-min)/(max-min),
# "%g" values; a scaled 0 is left out (row 3, feature 3).
SMALL_SCALED = ("1 1:-0.333333 2:-1 3:-1 \n"
                "-1 1:-1 2:-0.333333 3:1 \n"
                "2 1:1 2:1 \n")


def test_scale_small_file_by_hand(tmp_path):
    data = write(tmp_path / "small", SMALL)
    rng = tmp_path / "small.range"
    proc = run_cli("scale", "-s", rng, data)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == SMALL_SCALED
    assert rng.read_text() == SMALL_RANGE
    # 6 stored values became 8: svm-scale's warning
    assert proc.stderr == ("WARNING: original #nonzeros 6\n"
                           "       > new      #nonzeros 8\n"
                           "If feature values are non-negative and sparse, use -l 0 "
                           "rather than the default -l -1\n")


def test_scale_y_and_limits_by_hand(tmp_path):
    data = write(tmp_path / "small", SMALL)
    rng = tmp_path / "r"
    proc = run_inproc("scale", "-l", "0", "-u", "1", "-y", "0", "1", "-s", rng, data)
    assert proc.returncode == 0, proc.stderr
    # y: min -1 -> 0, max 2 -> 1, 1 -> (1+1)/3 printed with %.17g
    assert proc.stdout == ("0.66666666666666663 1:0.333333 \n"
                           "0 2:0.333333 3:1 \n"
                           "1 1:1 2:1 3:0.5 \n")
    assert rng.read_text() == "y\n0 1\n-1 2\nx\n0 1\n1 0 6\n2 0 1.5\n3 -4 4\n"
    assert proc.stderr == ""


def test_scale_matches_numpy_formula_on_heart(tmp_path, heart):
    rng = tmp_path / "heart.range"
    proc = run_cli("scale", "-l", "-1", "-u", "1", "-s", rng, heart)
    assert proc.returncode == 0, proc.stderr
    y, rows = parse_libsvm(open(heart).read())
    n_features = max(max(r) for r in rows if r)
    dense = np.zeros((len(rows), n_features))
    for i, r in enumerate(rows):
        for k, v in r.items():
            dense[i, k - 1] = v
    fmin, fmax = dense.min(axis=0), dense.max(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        scaled = -1 + 2 * (dense - fmin) / (fmax - fmin)
    scaled[dense == fmin] = -1
    scaled[dense == fmax] = 1
    lines = []
    for i in range(len(rows)):
        parts = ["%.17g " % y[i]]
        for j in range(n_features):
            if fmin[j] != fmax[j] and scaled[i, j] != 0:
                parts.append("%d:%g " % (j + 1, scaled[i, j]))
        lines.append("".join(parts) + "\n")
    assert proc.stdout == "".join(lines)
    expected_range = "x\n-1 1\n" + "".join(
        "%d %.17g %.17g\n" % (j + 1, fmin[j], fmax[j])
        for j in range(n_features) if fmin[j] != fmax[j])
    assert rng.read_text() == expected_range


def test_scale_restore_reproduces_and_warns(tmp_path, heart):
    rng = tmp_path / "heart.range"
    first = run_inproc("scale", "-l", "0", "-s", rng, heart)
    again = run_inproc("scale", "-r", rng, heart)
    assert first.returncode == 0 and again.returncode == 0, again.stderr
    assert again.stdout == first.stdout
    # a range file that lacks feature 2: svm-scale's warning, feature 2 dropped
    lines = rng.read_text().splitlines(True)
    partial = tmp_path / "partial.range"
    partial.write_text("".join(l for l in lines if not l.startswith("2 ")))
    proc = run_inproc("scale", "-r", partial, heart)
    assert proc.returncode == 0
    assert proc.stderr == (f"WARNING: feature index 2 appeared in file {heart} was not seen "
                           f"in the scaling factor file {partial}. The feature is scaled to 0.\n")
    assert " 2:" not in proc.stdout
    # a hand-written range with a y section: the restored limits are used
    data = write(tmp_path / "small", SMALL)
    hand = write(tmp_path / "hand.range", "y\n0 1\n-1 2\nx\n0 1\n1 0 6\n2 0 1.5\n3 -4 4\n")
    proc = run_inproc("scale", "-r", hand, data)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1] == "0 2:0.333333 3:1 "


@pytest.mark.parametrize("args", [["-l", "0"], ["-y", "-1", "1", "-u", "3"]])
def test_scale_same_bytes_as_svm_scale(tmp_path, shared, args):
    exe = shutil.which("svm-scale")
    if exe is None:
        pytest.skip("LIBSVM's svm-scale is not installed")
    data = write(tmp_path / "housing", shared.lines("housing_scale", 120).decode())
    runner = run_cli if args[0] == "-l" else run_inproc
    ours = runner("scale", *args, "-s", tmp_path / "ours.range", data)
    theirs = subprocess.run([exe, *args, "-s", str(tmp_path / "theirs.range"), data],
                            capture_output=True, text=True)
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == theirs.stdout
    assert ours.stderr == theirs.stderr
    assert (tmp_path / "ours.range").read_text() == (tmp_path / "theirs.range").read_text()
    # restoring LIBSVM's range file on another slice gives LIBSVM's bytes too
    other = write(tmp_path / "other", shared.lines("housing_scale", 200).decode())
    ours = run_inproc("scale", "-r", tmp_path / "theirs.range", other)
    theirs = subprocess.run([exe, "-r", str(tmp_path / "theirs.range"), other],
                            capture_output=True, text=True)
    assert ours.stdout == theirs.stdout
    assert ours.stderr == theirs.stderr


# ---------------------------------------------------------------------------
# kernsolve-train / kernsolve-predict against libsvm-official

def test_train_model_loads_in_libsvm_and_predicts_like_libsvm(tmp_path, heart):
    svmutil = libsvm_util()
    model_path = tmp_path / "heart.model"
    proc = run_cli("train", "-c", "4", "-g", "0.1", heart, model_path)
    assert proc.returncode == 0, proc.stderr
    assert "optimization finished, #iter = " in proc.stdout
    y, x = svmutil.svm_read_problem(heart)
    ours = svmutil.svm_load_model(str(model_path))
    theirs = svmutil.svm_train(y, x, "-c 4 -g 0.1 -q")
    (p_ours, _, _), _ = libsvm_predict_quietly(svmutil, y, x, ours)
    (p_theirs, _, _), _ = libsvm_predict_quietly(svmutil, y, x, theirs)
    # doc/smo.md, "Byte identity with LIBSVM": LIBSVM's own model file
    svmutil.svm_save_model(str(tmp_path / "libsvm.model"), theirs)
    assert model_path.read_bytes() == (tmp_path / "libsvm.model").read_bytes()
    assert p_ours == p_theirs


def test_predict_accuracy_line_and_output_like_libsvm(tmp_path, heart):
    svmutil = libsvm_util()
    y, x = svmutil.svm_read_problem(heart)
    model_path = str(tmp_path / "libsvm.model")
    svmutil.svm_save_model(model_path, svmutil.svm_train(y[:150], x[:150], "-c 2 -q"))
    test = write(tmp_path / "test", "".join(open(heart).readlines()[150:]))
    out = tmp_path / "out"
    proc = run_cli("predict", test, model_path, out)
    assert proc.returncode == 0, proc.stderr
    (labels, _, _), printed = libsvm_predict_quietly(
        svmutil, y[150:], x[150:], svmutil.svm_load_model(model_path))
    assert proc.stdout == printed
    assert re.fullmatch(r"Accuracy = [0-9.]+% \(\d+/120\) \(classification\)\n", proc.stdout)
    assert out.read_text() == "".join("%.17g\n" % v for v in labels)
    # -q: nothing on stdout, same file
    out_q = tmp_path / "out_q"
    quiet = run_inproc("predict", "-q", test, model_path, out_q)
    assert quiet.returncode == 0 and quiet.stdout == "" and quiet.stderr == ""
    assert out_q.read_text() == out.read_text()


def test_predict_probability_output_like_libsvm(tmp_path, heart):
    svmutil = libsvm_util()
    y, x = svmutil.svm_read_problem(heart)
    # the model comes from kernsolve-train -b 1; the oracle is libsvm's prediction
    # from that same file
    model_path = str(tmp_path / "prob.model")
    trained = run_inproc("train", "-b", "1", "-q", heart, model_path)
    assert trained.returncode == 0, trained.stderr
    out = tmp_path / "out"
    proc = run_cli("predict", "-b", "1", heart, model_path, out)
    assert proc.returncode == 0, proc.stderr
    model = svmutil.svm_load_model(model_path)
    (labels, _, probs), printed = libsvm_predict_quietly(svmutil, y, x, model, "-b 1")
    assert proc.stdout == printed
    lines = out.read_text().splitlines()
    assert lines[0] == "labels " + " ".join("%d" % l for l in model.get_labels())
    body = np.array([[float(v) for v in line.split()] for line in lines[1:]])
    assert np.array_equal(body[:, 0], labels)
    np.testing.assert_allclose(body[:, 1:], np.array(probs), atol=2e-5)
    # without -b the model's probability support is mentioned, as svm-predict does
    plain = run_inproc("predict", heart, model_path, tmp_path / "plain")
    assert plain.stdout.startswith("Model supports probability estimates, but disabled "
                                   "in prediction.\n")


def test_predict_regression_lines_like_libsvm(tmp_path, shared):
    svmutil = libsvm_util()
    data = write(tmp_path / "housing", shared.lines("housing_scale", 200).decode())
    y, x = svmutil.svm_read_problem(data)
    model_path = str(tmp_path / "svr.model")
    svmutil.svm_save_model(model_path, svmutil.svm_train(y, x, "-s 3 -c 10 -p 0.5 -q"))
    out = tmp_path / "out"
    proc = run_inproc("predict", data, model_path, out)
    assert proc.returncode == 0, proc.stderr
    (labels, _, _), printed = libsvm_predict_quietly(
        svmutil, y, x, svmutil.svm_load_model(model_path))
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("Mean squared error = ") and lines[0].endswith(" (regression)")
    assert lines[1].startswith("Squared correlation coefficient = ")
    text = out.read_text().split()
    assert text[0] == "%.17g" % float(text[0])  # full precision, as svm-predict >= 3.2x
    np.testing.assert_allclose([float(v) for v in text], labels, rtol=1e-9, atol=1e-9)
    expected = printed.splitlines()
    for mine, theirs in zip(lines, expected):
        a = float(mine.split("=")[1].split()[0])
        b = float(theirs.split("=")[1].split()[0])
        assert a == pytest.approx(b, rel=1e-5)


def test_train_then_predict_end_to_end_quiet_and_default_name(tmp_path, heart):
    work = tmp_path / "cwd"
    work.mkdir()
    proc = run_cli("train", "-q", "-c", "2", heart, cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr == ""
    model = work / (os.path.basename(heart) + ".model")
    assert model.exists()
    assert model.read_text().startswith("svm_type c_svc\nkernel_type rbf\n")
    proc = run_inproc("predict", heart, model, work / "pred")
    assert proc.returncode == 0, proc.stderr
    acc = float(re.match(r"Accuracy = ([0-9.]+)%", proc.stdout).group(1))
    assert acc > 85


def test_train_cross_validation_lines(tmp_path, heart, shared):
    first = run_cli("train", "-v", "5", "-q", heart, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    m = re.fullmatch(r"Cross Validation Accuracy = ([0-9.]+)%\n", first.stdout)
    assert m and 70 < float(m.group(1)) <= 100
    assert not any(p.suffix == ".model" for p in tmp_path.iterdir())
    again = run_inproc("train", "-v", "5", "-q", heart)
    assert again.stdout == first.stdout  # seeded folds: reproducible
    # oracle: libsvm-official trained and tested on the same folds
    svmutil = libsvm_util()
    from kernsolve.cli.train import cv_folds
    y, x = svmutil.svm_read_problem(heart)
    y = np.array(y)
    folds = cv_folds(y, 5, 0, classification=True)
    assert sorted(np.concatenate(folds).tolist()) == list(range(len(y)))
    for c in (-1, 1):  # stratified: every fold holds its share of each class
        share = np.sum(y == c) / 5
        assert all(abs(np.sum(y[f] == c) - share) < 1 for f in folds)
    correct = 0
    for i, test in enumerate(folds):
        rows = np.concatenate([f for k, f in enumerate(folds) if k != i])
        model = svmutil.svm_train(y[rows].tolist(), [x[r] for r in rows], "-q")
        (pred, _, _), _ = libsvm_predict_quietly(
            svmutil, y[test].tolist(), [x[r] for r in test], model, "-q")
        correct += int(np.sum(np.array(pred) == y[test]))
    assert float(m.group(1)) == pytest.approx(100.0 * correct / len(y), abs=100.0 / len(y))
    data = write(tmp_path / "housing", shared.lines("housing_scale", 150).decode())
    reg = run_inproc("train", "-s", "3", "-v", "3", "-q", data)
    assert reg.returncode == 0, reg.stderr
    lines = reg.stdout.splitlines()
    assert re.fullmatch(r"Cross Validation Mean squared error = \S+", lines[0])
    assert re.fullmatch(r"Cross Validation Squared correlation coefficient = \S+", lines[1])


# ---------------------------------------------------------------------------
# user errors: exit 1, one line naming the problem, never a traceback.
# A few run as real subprocesses; the rest call the same entry point in-process
# (run() catches everything, so a traceback would fail the test either way).

def test_errors_in_a_real_process(tmp_path, heart):
    proc = run_cli("train")
    assert_user_error(proc)
    assert "Usage: kernsolve-train [options] training_set_file [model_file]" in proc.stderr
    first = assert_user_error(run_cli("train", "-z", "1", heart), "-z")
    assert "unknown option" in first
    bad = write(tmp_path / "bad", "1 1:0.5\n+1 2:abc\n")
    first = assert_user_error(run_cli("scale", bad), "bad")
    assert ":2" in first  # file:line


def test_usage_without_arguments():
    for tool, text in (("train", "Usage: kernsolve-train [options] training_set_file"),
                       ("predict", "Usage: kernsolve-predict [options] test_file"),
                       ("scale", "Usage: kernsolve-scale [options] data_filename")):
        proc = run_inproc(tool)
        assert_user_error(proc)
        assert text in proc.stderr
        helped = run_inproc(tool, "--help")
        assert helped.returncode == 0 and helped.stdout.startswith(text)


def test_option_errors_name_the_option_and_point_to_the_usage(tmp_path, heart):
    proc = run_inproc("train", "-c", "abc", heart)
    assert_user_error(proc, "-c", "abc")
    assert proc.stderr.splitlines()[-1] == "Run 'kernsolve-train --help' for the options."
    assert_user_error(run_inproc("train", "-c", "-1", heart), "-c")
    assert_user_error(run_inproc("train", "-v", "1", heart), "n must >= 2")
    assert_user_error(run_inproc("train", "--solver", "nope", heart), "nope")
    assert_user_error(run_inproc("train", "-c"), "-c", "value")
    assert_user_error(run_inproc("predict", "-b", "2", heart, "m", "o"), "-b")
    assert_user_error(run_inproc("predict", "-z", heart, "m", "o"), "-z")
    assert_user_error(run_inproc("predict", heart, "m"), "test_file model_file output_file")
    assert_user_error(run_inproc("scale", "-x", "1", heart), "unknown option")
    assert_user_error(run_inproc("scale", "-y", "0"), "-y", "2 values")
    assert_user_error(run_inproc("scale", "-l", "one", heart), "-l", "one")
    assert_user_error(run_inproc("scale", "-l", "1", "-u", "0", heart),
                      "inconsistent lower/upper specification")
    assert_user_error(run_inproc("scale", "-s", "a", "-r", "b", heart),
                      "cannot use -r and -s simultaneously")


def test_file_errors(tmp_path, heart):
    missing = tmp_path / "missing"
    assert_user_error(run_inproc("train", missing), "can't open", str(missing))
    assert_user_error(run_inproc("scale", missing), "can't open", str(missing))
    assert_user_error(run_inproc("train", tmp_path), "can't open")  # a directory
    bad = write(tmp_path / "bad", "1 1:0.5\n+1 2:abc\n")
    first = assert_user_error(run_inproc("train", bad, tmp_path / "m"), "bad")
    assert ":2" in first
    assert not (tmp_path / "m").exists()
    bad_range = write(tmp_path / "bad.range", "x\n-1 1\n1 zero 2\n")
    assert_user_error(run_inproc("scale", "-r", bad_range, heart), "bad.range:3")
    assert_user_error(run_inproc("scale", "-r", missing, heart), "can't open", str(missing))
    assert_user_error(run_inproc("train", heart, tmp_path / "no" / "such" / "dir.model"),
                      "can't open output file")
    assert_user_error(run_inproc("predict", heart, "m", tmp_path / "no" / "out"),
                      "can't open output file")


def test_model_errors_leave_no_output(tmp_path, heart):
    out = tmp_path / "out"
    out.write_text("previous contents\n")
    corrupt = write(tmp_path / "corrupt.model", "svm_type c_svc\nkernel_type banana\n")
    assert_user_error(run_cli("predict", heart, corrupt, out), "corrupt.model")
    truncated = write(tmp_path / "trunc.model",
                      "svm_type c_svc\nkernel_type rbf\ngamma 0.5\nnr_class 2\n"
                      "total_sv 3\nrho 0.1\nlabel 1 -1\nnr_sv 2 1\nSV\n1 1:0.5\n")
    assert_user_error(run_inproc("predict", heart, truncated, out), "trunc.model")
    assert_user_error(run_inproc("predict", heart, tmp_path / "none.model", out),
                      "none.model")
    assert out.read_text() == "previous contents\n"
    plain = str(tmp_path / "plain.model")
    assert run_inproc("train", "-q", heart, plain).returncode == 0
    assert_user_error(run_inproc("predict", "-b", "1", heart, plain, out), "probability")
    assert out.read_text() == "previous contents\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


# ---------------------------------------------------------------------------
# every user-error path of the four commands, in one table: exit 1, one line
# "prog: what is wrong" naming the problem, then the usage exactly when the
# command line itself is wrong (as LIBSVM's tools print their usage), nothing
# on stdout, no traceback, no output file left behind.  (Unreadable files are
# represented by directories: the tests may run as root, who reads anything.)

ERROR_FILES = {
    "badvalue": "1 1:0.5\n+1 2:abc\n",
    "badlabel": "1 1:0.5\nfoo 2:1\n",
    "order": "1 3:0.5 2:1\n",
    "dupindex": "1 1:0.5 1:0.7\n",
    "nan": "1 1:nan\n-1 1:1\n",
    "negindex": "1 -1:0.5\n",
    "empty": "",
    "onerow": "1 1:1\n",
    "badserial": "1 0:1 1:0.5\n-1 0:2 1:1\n",
    "corrupt.model": "svm_type c_svc\nkernel_type banana\n",
    "empty.model": "",
    "keyword.model": "svm_type c_svc\nkernel_type rbf\ncolour blue\n",
    "trunc.model": ("svm_type c_svc\nkernel_type rbf\ngamma 0.5\nnr_class 2\ntotal_sv 3\n"
                    "rho 0.1\nlabel 1 -1\nnr_sv 2 1\nSV\n1 1:0.5\n"),
    "header.range": "q\n",
    "empty.range": "",
    "line.range": "x\n-1 1\n1 zero 2\n",
}

USER_ERRORS = [
    # tool, arguments, words the first line must hold, usage follows?
    # -- kernsolve-train: the command line
    ("train", ["-z", "1", "heart"], ["unknown option: -z"], True),
    ("train", ["-c"], ["-c", "needs a value"], True),
    ("train", ["--seed"], ["--seed", "needs a value"], True),
    ("train", ["-c", "abc", "heart"], ["-c", "'abc'"], True),
    ("train", ["-t", "9", "heart"], ["-t", "9"], True),
    ("train", ["--threads", "0", "heart"], ["--threads", "0"], True),
    ("train", ["--seed", "-1", "heart"], ["--seed", "-1"], True),
    ("train", ["--solver", "nope", "heart"], ["--solver", "'nope'"], True),
    ("train", ["--epochs", "3", "heart"], ["--epochs", "not an option of solver 'smo'"], True),
    ("train", ["--solver", "sdca", "--iterations", "0", "heart"], ["--iterations", "0"], True),
    ("train", ["--solver", "sdca", "-s", "2", "heart"], ["--solver sdca", "C-SVC"], True),
    ("train", ["--solver", "sbp", "-n", "2", "heart"], ["-n", "nu", "2"], True),
    ("train", ["-wx", "1", "heart"], ["-wx", "'x'"], True),
    ("train", ["-v", "1", "heart"], ["n must >= 2"], True),
    ("train", ["heart", "m", "extra"], ["unexpected arguments", "extra"], True),
    # -- kernsolve-train: files
    ("train", ["missing"], ["can't open input file missing", "No such file"], False),
    ("train", ["."], ["can't open input file .", "Is a directory"], False),
    ("train", ["badvalue"], ["badvalue:2", "'abc'"], False),
    ("train", ["badlabel"], ["badlabel:2", "label 'foo'"], False),
    ("train", ["order"], ["order:1", "increasing"], False),
    ("train", ["dupindex"], ["dupindex:1", "duplicate"], False),
    ("train", ["nan"], ["nan:1", "not finite"], False),
    ("train", ["negindex"], ["negindex:1", "negative"], False),
    ("train", ["empty"], ["empty:1", "no data lines"], False),
    ("train", ["-v", "3", "onerow"], ["onerow", "at least 2"], False),
    ("train", ["-t", "4", "badserial"], ["-t 4", "serial number", "row 2 has 2"], False),
    ("train", ["heart", "nodir/x.model"], ["can't open output file nodir/x.model",
                                           "No such file"], False),
    ("train", ["heart", "."], ["can't open output file .", "Is a directory"], False),
    # -- kernsolve-predict
    ("predict", [], ["test_file model_file output_file"], True),
    ("predict", ["-z", "heart", "good.model", "out"], ["unknown option: -z"], True),
    ("predict", ["-b"], ["-b", "needs a value"], True),
    ("predict", ["-b", "x", "heart", "good.model", "out"], ["-b", "'x'"], True),
    ("predict", ["-b", "2", "heart", "good.model", "out"], ["-b", "2"], True),
    ("predict", ["heart", "good.model"], ["test_file model_file output_file"], True),
    ("predict", ["missing", "good.model", "out"], ["can't open input file missing"], False),
    ("predict", ["heart", "missing.model", "out"], ["can't open model file missing.model"],
     False),
    ("predict", ["heart", ".", "out"], ["can't open model file .", "Is a directory"], False),
    ("predict", ["badvalue", "good.model", "out"], ["badvalue:2"], False),
    ("predict", ["empty", "good.model", "out"], ["empty:1", "no data lines"], False),
    ("predict", ["heart", "corrupt.model", "out"], ["corrupt.model"], False),
    ("predict", ["heart", "empty.model", "out"], ["empty.model:1", "empty"], False),
    ("predict", ["heart", "keyword.model", "out"], ["keyword.model:3", "colour"], False),
    ("predict", ["heart", "trunc.model", "out"], ["trunc.model"], False),
    ("predict", ["heart", "heart", "out"], ["heart:1"], False),          # data, not a model
    ("predict", ["-b", "1", "heart", "good.model", "out"], ["probability"], False),
    ("predict", ["heart", "good.model", "nodir/out"], ["can't open output file nodir/out"],
     False),
    ("predict", ["heart", "good.model", "."], ["can't open output file .", "Is a directory"],
     False),
    # -- kernsolve-scale
    ("scale", [], ["expected one data file"], True),
    ("scale", ["-x", "1", "heart"], ["unknown option: -x"], True),
    ("scale", ["-l"], ["-l", "needs a value"], True),
    ("scale", ["-l", "x", "heart"], ["-l", "'x'"], True),
    ("scale", ["-y", "0"], ["-y", "2 values"], True),
    ("scale", ["heart", "extra"], ["unexpected arguments", "extra"], True),
    ("scale", ["-l", "1", "-u", "0", "heart"], ["inconsistent lower/upper"], False),
    ("scale", ["-s", "a", "-r", "b", "heart"], ["cannot use -r and -s"], False),
    ("scale", ["missing"], ["can't open file missing"], False),
    ("scale", ["."], ["can't open file .", "Is a directory"], False),
    ("scale", ["badvalue"], ["badvalue:2"], False),
    ("scale", ["empty"], ["empty:1", "no data lines"], False),
    ("scale", ["-r", "missing", "heart"], ["can't open file missing"], False),
    ("scale", ["-r", "header.range", "heart"], ["header.range:1", "'x' or 'y'"], False),
    ("scale", ["-r", "empty.range", "heart"], ["empty.range:1"], False),
    ("scale", ["-r", "line.range", "heart"], ["line.range:3", "index min max"], False),
    ("scale", ["-r", "heart", "heart"], ["heart:1", "scaling parameters"], False),
    ("scale", ["-s", "nodir/r", "heart"], ["can't open file nodir/r", "No such file"], False),
    ("scale", ["-s", ".", "heart"], ["can't open file .", "Is a directory"], False),
    # -- kernsolve-grid
    ("grid", [], ["no dataset given"], True),
    ("grid", ["-z", "1", "heart"], ["unknown option: -z"], True),
    ("grid", ["-log2c"], ["dataset"], True),
    ("grid", ["-log2c", "1,2", "heart"], ["-log2c", "'1,2'"], True),
    ("grid", ["-log2c", "a,b,c", "heart"], ["-log2c", "'a'"], True),
    ("grid", ["-log2c", "1,2,0", "heart"], ["step", "0"], True),
    ("grid", ["-v", "x", "heart"], ["-v", "'x'"], True),
    ("grid", ["-v", "1", "heart"], ["-v", "n >= 2"], True),
    ("grid", ["-c", "abc", "heart"], ["-c", "'abc'"], True),
    ("grid", ["--grid", "x", "heart"], ["--grid", "'x'"], True),
    ("grid", ["-log2c", "null", "-log2g", "null", "heart"], ["both be null"], True),
    ("grid", ["--solver", "sdca", "--iterations", "0", "heart"], ["--iterations", "0"], True),
    ("grid", ["missing"], ["can't open input file missing"], False),
    ("grid", ["."], ["can't open input file .", "Is a directory"], False),
    ("grid", ["badvalue"], ["badvalue:2"], False),
    ("grid", ["empty"], ["empty:1", "no data lines"], False),
    ("grid", ["-log2c", "1,1,1", "-log2g", "1,1,1", "-png", "null", "onerow"],
     ["onerow", "at least 2"], False),
    ("grid", ["-resume", "missing", "heart"], ["-resume", "missing"], False),
    ("grid", ["-log2c", "1,1,1", "-log2g", "1,1,1", "-png", "null", "-out", "nodir/o",
              "heart"], ["nodir/o", "No such file"], False),
    ("grid", ["-log2c", "1,1,1", "-log2g", "1,1,1", "-png", "null", "-out", ".", "heart"],
     [".", "Is a directory"], False),
]


@pytest.fixture(scope="module")
def error_dir(tmp_path_factory):
    from conftest import shared_lines
    folder = tmp_path_factory.mktemp("errors")
    (folder / "heart").write_bytes(shared_lines("heart_scale"))
    for name, text in ERROR_FILES.items():
        (folder / name).write_text(text)
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        assert run_inproc("train", "-q", "heart", "good.model").returncode == 0
    finally:
        os.chdir(cwd)
    return folder


@pytest.mark.parametrize("tool, args, needles, usage", USER_ERRORS,
                         ids=[f"{t}:{' '.join(a) or '(none)'}" for t, a, _, _ in USER_ERRORS])
def test_user_errors(error_dir, monkeypatch, tool, args, needles, usage):
    import importlib
    monkeypatch.chdir(error_dir)
    before = sorted(p.name for p in error_dir.iterdir())
    proc = run_inproc(tool, *args)
    first = assert_user_error(proc, *needles)
    prog = f"kernsolve-{tool}"
    assert first.startswith(prog + ": "), first
    usage_text = importlib.import_module(f"kernsolve.cli.{tool}").USAGE
    # the usage itself when no argument was given (as LIBSVM's tools), else a
    # pointer to it, so that the error line is not scrolled away
    pointer = f"Run '{prog} --help' for the options.\n"
    assert proc.stderr == first + "\n" + ((usage_text if not args else pointer) if usage
                                          else "")
    assert proc.stdout == ""
    assert sorted(p.name for p in error_dir.iterdir()) == before   # nothing written


# ---------------------------------------------------------------------------
# the shared error handling

# kernsolve-train whose progress lines start at the solver's first visit to
# Python (no 2 s of silence, a visit every iteration): the test, not the
# machine's speed, decides when training is under way.
EAGER_TRAIN = textwrap.dedent("""\
    import sys
    from kernsolve._progress import Progress
    from kernsolve.solvers.smo import _smo
    Progress.__init__.__kwdefaults__["delay"] = 0.0
    _smo._set_tuning(poll_seconds=0.0)
    from kernsolve.cli import train
    sys.exit(train.cli(sys.argv[1:]))
    """)


def test_ctrl_c_during_training_exits_130_without_a_model(tmp_path, shared):
    """SIGINT once training is under way (its first progress line): exit 130, no file."""
    import signal
    env = package_env(PYTHONUNBUFFERED="1")
    model = tmp_path / "a9a.model"
    proc = subprocess.Popen([sys.executable, "-c", EAGER_TRAIN, "-c", "100",
                             "-g", "0.005", shared.path("a9a"), str(model)],
                            env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    try:
        # the solver's progress line on stderr says training has started
        line = proc.stderr.readline()
        assert line, "no progress line"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert err.splitlines()[-1] == "kernsolve-train: interrupted"
    assert list(tmp_path.iterdir()) == []


def test_interrupt_exits_130_and_partial_output_is_removed(tmp_path, capsys):
    from kernsolve import _fileutil
    from kernsolve.cli import _common

    target = tmp_path / "out"

    def main(argv):
        with _fileutil.output_file(str(target)) as f:
            f.write("half a file")
            raise KeyboardInterrupt

    assert _common.run(main, [], "prog", "usage\n") == 130
    assert not target.exists() and list(tmp_path.iterdir()) == []
    err = capsys.readouterr().err
    assert err == "prog: interrupted\n"

    def warns(argv):
        import warnings
        warnings.warn("WARNING: reaching max number of iterations", RuntimeWarning)
        return 0

    assert _common.run(warns, [], "prog", "usage\n") == 0
    assert capsys.readouterr().err == "prog: warning: reaching max number of iterations\n"

    def buggy(argv):
        raise TypeError("oops\nsecond line")

    assert _common.run(buggy, [], "prog", "usage\n") == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
