"""A LIBSVM user's script, with svm-* replaced by kernsolve-*: same files, same numbers.

Oracles:

* the C library's own ``rand()`` (glibc, through ctypes) for
  kernsolve.solvers.libsvm.libsvm_rand, and glibc's published first outputs after
  ``srand(1)``;
* libsvm-official (LIBSVM 3.37) run in this process after ``srand(1)``, which
  is what ``svm-train`` sees when it starts: its ``-v`` accuracy and its
  ``-b 1`` sigmoids against ``kernsolve-train --libsvm-folds``, its model file
  bytes against ``kernsolve-train``'s;
* Debian's LIBSVM tools (``svm-scale``, ``svm-train``, ``svm-predict``, from
  the ``libsvm-tools`` package) when they are on the PATH: the same script
  run with both sets of commands gives the same files and printed lines.
  These tests skip when the tools are not installed (CI does not install
  them); doc/cli.md lists what they check.
"""
import ctypes
import ctypes.util
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest

from conftest import libsvm_serial, package_env

from kernsolve.solvers.libsvm.libsvm_rand import GlibcRand, cv_folds, probability_folds


def _glibc():
    """glibc through ctypes, or skip (other C libraries have another rand())."""
    if not sys.platform.startswith("linux"):
        pytest.skip("glibc's rand() is the C library's only on Linux")
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.gnu_get_libc_version.restype = ctypes.c_char_p
        libc.gnu_get_libc_version()
    except (OSError, AttributeError):
        pytest.skip("the C library is not glibc")
    return libc


def run_tool(tool, *args, cwd):
    """``kernsolve-<tool>`` as a script runs it (python -m, same entry point)."""
    return subprocess.run([sys.executable, "-m", f"kernsolve.cli.{tool}", *map(str, args)],
                          cwd=cwd, env=package_env(), capture_output=True, text=True,
                          timeout=120)


# --------------------------------------------------------------------------
# glibc's rand() and LIBSVM's folds
# --------------------------------------------------------------------------

def test_glibc_rand_is_the_c_library_rand():
    # glibc's documented first outputs when srand is never called (seed 1)
    g = GlibcRand()
    assert [g.rand() for _ in range(3)] == [1804289383, 846930886, 1681692777]
    libc = _glibc()
    for seed in (1, 0, 7, 2 ** 31 + 5, 2 ** 32 - 1):
        libc.srand(ctypes.c_uint(seed))
        theirs = [libc.rand() for _ in range(2000)]
        ours = GlibcRand(seed)
        assert [ours.rand() for _ in range(2000)] == theirs, seed


def test_libsvm_folds_partition_the_rows_by_class():
    y = np.array([2, 1, 1, 2, 3, 1, 2, 1, 1, 3, 2, 1] * 3, dtype=float)
    folds = cv_folds(y, 5, 0, GlibcRand())
    rows = np.concatenate(folds)
    assert np.array_equal(np.sort(rows), np.arange(y.size))
    for label in (1, 2, 3):     # stratified: each class spread as evenly as it can be
        sizes = [int(np.sum(y[f] == label)) for f in folds]
        assert max(sizes) - min(sizes) <= 1
    plain = cv_folds(np.arange(11.0), 3, 3, GlibcRand())    # regression: plain shuffle
    assert [f.size for f in plain] == [3, 4, 4]
    assert probability_folds(y, 2, GlibcRand()) is None     # one-class draws nothing
    pairs = probability_folds(y, 0, GlibcRand())
    # classes by first appearance: 2 (12 rows), 1 (18), 3 (6); pairs (2,1), (2,3), (1,3)
    assert [p.size for p in pairs] == [30, 18, 24]


def _heart_libsvm(heart_path):
    svmutil = pytest.importorskip("libsvm.svmutil")
    y, x = svmutil.svm_read_problem(heart_path)
    return svmutil, y, x


@pytest.mark.parametrize("options", ["-c 2 -g 0.1 -v 5", "-s 1 -n 0.4 -t 1 -d 2 -v 4",
                                     "-s 3 -p 0.2 -v 5", "-s 1 -n 0.3 -b 1 -v 5"])
def test_libsvm_folds_cross_validation_equals_libsvm(tmp_path, shared, options):
    libc = _glibc()
    name = "housing_scale" if "-s 3" in options else "heart_scale"
    path = tmp_path / name
    path.write_bytes(shared.lines(name, 200))
    svmutil, y, x = _heart_libsvm(str(path))
    libc.srand(1)             # what svm-train starts with
    with libsvm_serial():
        theirs = svmutil.svm_train(y, x, options + " -q")
    ours = run_tool("train", "--libsvm-folds", *options.split(), "-q", path, cwd=tmp_path)
    assert ours.returncode == 0, ours.stderr
    if "-s 3" in options:
        mse = float(ours.stdout.split("Mean squared error = ")[1].split()[0])
        assert mse == pytest.approx(theirs, rel=1e-5)      # printed with %g
    else:
        assert ours.stdout == f"Cross Validation Accuracy = {theirs:g}%\n"
        # kernsolve's own folds (the default) are another draw
        default = run_tool("train", *options.split(), "-q", path, cwd=tmp_path)
        assert default.returncode == 0 and default.stdout.startswith("Cross Validation")


def test_libsvm_folds_probability_model_equals_libsvm(tmp_path, shared):
    libc = _glibc()
    path = tmp_path / "heart"
    path.write_bytes(shared.lines("heart_scale"))
    svmutil, y, x = _heart_libsvm(str(path))
    libc.srand(1)
    with libsvm_serial():
        theirs = svmutil.svm_train(y, x, "-c 2 -g 0.1 -b 1 -q")
    svmutil.svm_save_model(str(tmp_path / "theirs.model"), theirs)
    ours = run_tool("train", "--libsvm-folds", "-c", 2, "-g", 0.1, "-b", 1, "-q", path,
                    tmp_path / "ours.model", cwd=tmp_path)
    assert ours.returncode == 0, ours.stderr
    a = (tmp_path / "theirs.model").read_text().splitlines()
    b = (tmp_path / "ours.model").read_text().splitlines()
    assert len(a) == len(b)
    for line_a, line_b in zip(a, b):
        if line_a.startswith(("probA", "probB")):
            # Platt's Newton iterations on decision values equal to ~1e-15
            key, va = line_a.split()
            _, vb = line_b.split()
            assert float(vb) == pytest.approx(float(va), rel=1e-9, abs=1e-12), key
        else:
            assert line_a == line_b


def test_model_file_has_libsvm_bytes(tmp_path, shared):
    """Support-vector values are written as LIBSVM writes them (%.8g) when exact."""
    path = tmp_path / "heart"
    path.write_bytes(shared.lines("heart_scale"))
    svmutil, y, x = _heart_libsvm(str(path))
    with libsvm_serial():
        theirs = svmutil.svm_train(y, x, "-c 2 -g 0.1 -q")
    svmutil.svm_save_model(str(tmp_path / "theirs.model"), theirs)
    ours = run_tool("train", "-c", 2, "-g", 0.1, "-q", path, tmp_path / "ours.model",
                    cwd=tmp_path)
    assert ours.returncode == 0, ours.stderr
    assert (tmp_path / "ours.model").read_bytes() == (tmp_path / "theirs.model").read_bytes()


def test_model_file_keeps_values_that_need_17_digits(tmp_path):
    import kernsolve
    rng = np.random.default_rng(3)
    X = np.round(rng.normal(size=(40, 3)), 4)
    X[:, 2] = rng.normal(size=40)           # needs all 17 digits
    y = np.where(X[:, 0] + X[:, 1] > 0, 1.0, -1.0)
    model = kernsolve.train(y, X, "-c 10 -t 0 -q")
    path = tmp_path / "mixed.model"
    kernsolve.save_model(str(path), model)
    back = kernsolve.load_model(str(path))
    sv = np.asarray(model.support_vectors.toarray() if hasattr(model.support_vectors,
                                                                 "toarray")
                    else model.support_vectors)
    sv_back = back.support_vectors
    sv_back = sv_back.toarray() if hasattr(sv_back, "toarray") else np.asarray(sv_back)
    np.testing.assert_array_equal(sv_back, sv)            # exact round trip
    first = path.read_text().split("SV\n")[1].splitlines()[0].split()[1:]
    v1, v2, v3 = (float(t.split(":")[1]) for t in first)
    assert first[0] == "1:%.8g" % v1 and first[1] == "2:%.8g" % v2   # LIBSVM's text
    assert first[2] == "3:%.17g" % v3                      # full precision


# --------------------------------------------------------------------------
# Debian's libsvm-tools: the same script with both sets of commands
# --------------------------------------------------------------------------

_TOOLS = ("svm-scale", "svm-train", "svm-predict")


def _debian_tools():
    missing = [t for t in _TOOLS if shutil.which(t) is None]
    if missing:
        pytest.skip(f"LIBSVM's command-line tools are not installed ({', '.join(missing)}; "
                    "apt-get install libsvm-tools): the script comparison needs them")


def _script(tools, workdir, data, test):
    """A LIBSVM user's script: scale, train (CV, plain, -b 1), predict (-b 0/1).

    ``tools`` holds the command prefix of scale, train and predict.  ``-g``
    is a float32 number: Debian's svm-train (3.24) rounds -g to float32,
    LIBSVM 3.37 and kernsolve do not, so a float32 value is the same for all.
    Returns the (stdout, stderr) of every step and the bytes of every file.
    """
    scale, train, predict = tools

    def run(prefix, *args):
        out = subprocess.run([*prefix, *args], cwd=workdir, capture_output=True,
                             text=True, env=package_env(), timeout=120)
        assert out.returncode == 0, (prefix, args, out.stderr)
        return out.stdout, out.stderr

    printed = [run(scale, "-l", "-1", "-u", "1", "-s", "range", data),
               run(scale, "-r", "range", test),
               run(scale, "-l", "0", "-u", "1", "-y", "-1", "1", data)]
    (workdir / "train.scaled").write_text(printed[0][0])
    (workdir / "test.scaled").write_text(printed[1][0])
    g = ("-c", "2", "-g", "0.0625")
    printed += [run(train, *g, "-v", "5", "-q", "train.scaled"),
                run(train, *g, "train.scaled", "plain.model"),
                run(train, *g, "-b", "1", "-q", "train.scaled", "prob.model"),
                run(predict, "test.scaled", "plain.model", "plain.out"),
                run(predict, "-b", "1", "test.scaled", "prob.model", "prob.out"),
                run(predict, "-b", "0", "test.scaled", "prob.model", "prob0.out")]
    files = {name: (workdir / name).read_bytes()
             for name in ("range", "train.scaled", "test.scaled", "plain.model",
                          "prob.model", "plain.out", "prob.out", "prob0.out")}
    return printed, files


def test_script_with_debian_tools_gives_the_same_files(tmp_path, shared):
    _debian_tools()
    data, test = tmp_path / "a9a", tmp_path / "a9a.t"
    data.write_bytes(shared.lines("a9a", 600))
    test.write_bytes(shared.lines("a9a.t", 300))
    (tmp_path / "libsvm").mkdir()
    (tmp_path / "kernsolve").mkdir()
    p_theirs, f_theirs = _script([[t] for t in _TOOLS], tmp_path / "libsvm",
                                 str(data), str(test))
    module = [sys.executable, "-m"]
    ours_tools = [module + ["kernsolve.cli.scale"],
                  module + ["kernsolve.cli.train", "--libsvm-folds"],
                  module + ["kernsolve.cli.predict"]]
    p_ours, f_ours = _script(ours_tools, tmp_path / "kernsolve", str(data), str(test))
    for name in ("range", "train.scaled", "test.scaled", "plain.model", "plain.out",
                 "prob0.out"):
        assert f_ours[name] == f_theirs[name], name
    # -b 1: the model's probA/probB agree to ~1e-13 (not always to the last
    # bit), the probabilities are printed with %g
    theirs_prob = f_theirs["prob.out"].decode().splitlines()
    ours_prob = f_ours["prob.out"].decode().splitlines()
    assert ours_prob[0] == theirs_prob[0]                   # the labels header
    a = np.array([line.split() for line in theirs_prob[1:]], dtype=float)
    b = np.array([line.split() for line in ours_prob[1:]], dtype=float)
    np.testing.assert_array_equal(a[:, 0], b[:, 0])
    np.testing.assert_allclose(a[:, 1:], b[:, 1:], rtol=0, atol=2e-6)
    for i in (0, 1, 2):             # svm-scale's output and warnings
        assert p_ours[i] == p_theirs[i], i
    for i in (3, 5, 6, 7, 8):       # the -v line, the Accuracy lines
        assert p_ours[i] == p_theirs[i], i
    # svm-train's verbose lines: the same numbers; kernsolve prints only the
    # dots of the progress line, not LIBSVM's '*' marks (doc/cli.md)
    assert p_ours[4][0].replace("*", "").split("\n")[1:] == \
        p_theirs[4][0].replace("*", "").split("\n")[1:]


def _easy_py():
    path = shutil.which("svm-easy")
    if path is None:
        pytest.skip("LIBSVM's easy.py (Debian's svm-easy, libsvm-tools) is not installed")
    return path


def test_easy_py_runs_with_kernsolve_grid(tmp_path):
    """LIBSVM's easy.py with kernsolve's four commands in its path lines
    (kernsolve-grid where grid.py stands, doc/cross-validation.md): it runs
    to the end, and its 'Best c=..., g=... CV rate=...' line is kernsolve-grid's
    last line on the scaled file.  Oracle for the line: kernsolve.grid_search
    in this process with the same options."""
    import kernsolve
    from kernsolve import grid_search, read_problem
    easy = _easy_py()
    tools = {}
    for name, module, extra in (("svmscale_exe", "scale", ""), ("svmtrain_exe", "train", ""),
                                ("svmpredict_exe", "predict", ""),
                                ("grid_py", "grid", " --libsvm-folds -log2c -1,5,2 "
                                                    "-log2g -1,-7,-2")):
        script = tmp_path / f"kernsolve-{module}"
        script.write_text(f"#!/bin/sh\nexec {sys.executable} -m kernsolve.cli.{module}"
                          f"{extra} \"$@\"\n")
        script.chmod(0o755)
        tools[name] = str(script)
    tools["gnuplot_exe"] = shutil.which("true")
    lines = open(easy).read().splitlines(True)
    for i, line in enumerate(lines):
        for name, path in tools.items():
            if line.strip().startswith(name + " =") and "win" not in line:
                lines[i] = line[:len(line) - len(line.lstrip())] + f'{name} = "{path}"\n'
                break
    (tmp_path / "easy.py").write_text("".join(lines))
    y, X = read_problem(kernsolve.dataset_path("heart_scale"))
    kernsolve.write_problem(str(tmp_path / "heart"), y, X)
    kernsolve.write_problem(str(tmp_path / "heart.t"), y[::3], X[::3])
    out = subprocess.run([sys.executable, "easy.py", "heart", "heart.t"], cwd=tmp_path,
                         env=package_env(), capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    best = next(line for line in out.stdout.splitlines() if line.startswith("Best c="))
    ys, Xs = read_problem(str(tmp_path / "heart.scale"))
    r = grid_search(ys, Xs, "--libsvm-folds -q", grid={
        "c": [2.0 ** v for v in (-1, 1, 3, 5)], "g": [2.0 ** v for v in (-1, -3, -5, -7)]})
    c, g, rate = map(float, r.summary_line().split())
    assert best == f"Best c={c}, g={g} CV rate={rate}"
    assert "Accuracy = " in out.stdout and (tmp_path / "heart.t.predict").exists()
