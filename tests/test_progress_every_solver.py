"""The progress line of the solvers that used to run silent: EigenPro's kernel
expansion, kernel SGD and random features, the estimators' ``verbose``
(EigenPro, DSG), and the cost a long EigenPro run announces before its work.

Oracles: the closed forms of the work (batches per epoch ``ceil(n/m)``; kernel
evaluations ``M^2 + epochs n^2`` for the expansion, ``(M + epochs n) D``
feature evaluations on random features, ``(iterations + 1) n p`` for the
centres' model) against the lines and against the kernel engine's own count
in the model's statistics; ``-q`` and ``verbose=False`` against empty
streams.  Every Progress is made with no delay and no rate limit, so each
report of the solver is a line however fast the machine runs it.
"""
import contextlib
import functools
import io
import math
import re

import numpy as np
import pytest

import kernsolve
from kernsolve._progress import Progress
from kernsolve.solvers.eigenpro import _common
from kernsolve.solvers.eigenpro import train as eigenpro_train

N = 200


@pytest.fixture
def two_blobs(tmp_path):
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(-1, 0.7, (N // 2, 3)), rng.normal(1, 0.7, (N // 2, 3))])
    y = np.r_[np.ones(N // 2), -np.ones(N // 2)]
    path = str(tmp_path / "blobs")
    kernsolve.write_problem(path, y, X)
    return path, y, X


@pytest.fixture
def every_report(monkeypatch):
    """Progress lines at every report, in every module that makes one."""
    eager = functools.partial(Progress, delay=0.0, interval=0.0)
    import kernsolve.estimators.dsg as dsg_estimators
    import kernsolve.estimators.eigenpro as eigenpro_estimators
    for module in (eigenpro_train, eigenpro_estimators, dsg_estimators):
        monkeypatch.setattr(module, "Progress", eager)


def cli_train(*args):
    from kernsolve.cli.train import cli
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def _evals(line, what):
    return float(re.search(rf"{what} evals ([0-9.e+]+),", line).group(1))


@pytest.mark.parametrize("solver", ["eigenpro", "kernel-sgd"])
def test_kernel_expansion_reports_every_batch_and_q_silences(tmp_path, two_blobs, solver,
                                                              every_report, monkeypatch):
    path, _, _ = two_blobs
    monkeypatch.setattr(_common, "ANNOUNCE_WORK", 0)    # announce even this small run
    m, epochs = 64, 3
    args = ["--solver", solver, "--batch-size", m, "--epochs", epochs, "-g", "0.5",
            path, tmp_path / "m"]
    code, out, err = cli_train(*args)
    assert code == 0, err
    announce, *lines = err.splitlines()
    M = N                        # the default subsample min(4800, n)
    total = M * M + epochs * N * N
    assert announce == (f"kernsolve {solver}: the kernel expansion on n = {N} rows: "
                        f"{epochs} epochs of n^2 kernel values, about {total:.2g} kernel "
                        f"evaluations of 3 features (the centres' model, --centers p, "
                        f"costs n p a pass)")
    per_epoch = math.ceil(N / m)
    assert len(lines) == epochs * per_epoch
    for i, line in enumerate(lines):
        epoch = i // per_epoch + 1
        assert re.fullmatch(rf"kernsolve {solver}: epoch {epoch}/{epochs}, iter {i + 1}/"
                            rf"{epochs * per_epoch}, kernel evals [0-9.e+]+, \d+ s elapsed, "
                            r"about \d+ s left", line), line
    # the evaluations grow batch by batch to the engine's own count
    counts = [_evals(line, "kernel") for line in lines]
    assert counts == sorted(counts) and counts[-1] == float(f"{total:.4g}")
    stats = kernsolve.train(*two_blobs[1:], " ".join(map(str, args[:-2])) + " -q").stats
    assert stats["n_kernel_evals"] == total
    # -q: nothing on stdout or stderr for the same run
    assert cli_train("-q", *args) == (0, "", "")


def test_random_features_report_feature_evaluations(tmp_path, two_blobs, every_report,
                                                    monkeypatch):
    path, y, X = two_blobs
    monkeypatch.setattr(_common, "ANNOUNCE_WORK", 0)
    D, m, epochs = 32, 50, 2
    args = ["--solver", "eigenpro", "--features", D, "--batch-size", m, "--epochs", epochs,
            "-g", "0.5", path, tmp_path / "m"]
    code, out, err = cli_train(*args)
    assert code == 0, err
    announce, *lines = err.splitlines()
    total = (N + epochs * N) * D
    assert announce == (f"kernsolve eigenpro: {D} random features on n = {N} rows: "
                        f"{epochs} epochs, about {total:.2g} feature evaluations of 3 features")
    assert len(lines) == epochs * math.ceil(N / m)
    assert lines[0].startswith("kernsolve eigenpro: epoch 1/2, iter 1/8, feature evals ")
    # the first batch: the subsample's M rows and m rows of features
    assert _evals(lines[0], "feature") == (N + m) * D
    assert _evals(lines[-1], "feature") == total
    stats = kernsolve.train(y, X, " ".join(map(str, args[:-2])) + " -q").stats
    assert stats["n_feature_evals"] == total
    assert cli_train("-q", *args) == (0, "", "")


def test_centres_announce_their_cost_only_when_long(tmp_path, two_blobs, every_report,
                                                    monkeypatch):
    path, _, _ = two_blobs
    p, iterations = 40, 4
    args = ["--solver", "eigenpro", "--centers", p, "--epochs", iterations, "-g", "0.5",
            path, tmp_path / "m"]
    # small: the progress lines, no announcement
    code, out, err = cli_train(*args)
    assert code == 0, err
    assert err.startswith("kernsolve eigenpro: iter 0/4, ")
    # the same work above the threshold: said first, with (iterations + 1) n p
    monkeypatch.setattr(_common, "ANNOUNCE_WORK", (iterations + 1) * N * p * 3)
    code, out, err = cli_train(*args)
    assert err.splitlines()[0] == (
        f"kernsolve eigenpro: the centres' model on n = {N} rows: p = {p} centres, up to "
        f"{iterations} iterations, at most {(iterations + 1) * N * p:.2g} kernel evaluations "
        f"of 3 features (fewer when K(X, centres) fits in -m)")
    monkeypatch.setattr(_common, "ANNOUNCE_WORK", (iterations + 1) * N * p * 3 + 1)
    code, out, err = cli_train(*args)
    assert err.startswith("kernsolve eigenpro: iter 0/4, ")


def test_announce_is_a_line_of_its_own_on_a_terminal():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    term = Terminal()
    p = Progress("eigenpro", term, delay=0, interval=0, clock=lambda: 0.0)
    p({"n_iter": 3, "n_kernel_evals": 10})               # an open line, rewritten in place
    p.announce("the plan")
    p({"n_iter": 4, "n_kernel_evals": 20})
    text = term.getvalue()
    open_line = "kernsolve eigenpro: iter 3, kernel evals 10, 0 s elapsed"
    # the open line is erased, the announcement ends with a newline, the line goes on
    assert text.startswith("\r" + open_line + "\r" + " " * len(open_line) + "\r"
                           + "kernsolve eigenpro: the plan\n\r")
    assert text.endswith("iter 4, kernel evals 20, 0 s elapsed")


@pytest.mark.parametrize("make", [
    lambda verbose: kernsolve.EigenProClassifier(gamma=0.5, epochs=3, centers=40,
                                                 verbose=verbose),
    lambda verbose: kernsolve.EigenProClassifier(gamma=0.5, epochs=2, batch_size=64,
                                                 verbose=verbose),
    lambda verbose: kernsolve.DSGClassifier(gamma=0.5, max_iter=2, verbose=verbose),
], ids=["eigenpro-centres", "eigenpro-expansion", "dsg"])
def test_estimators_verbose_prints_the_progress_line(two_blobs, every_report, capsys, make):
    _, y, X = two_blobs
    make(False).fit(X, y)
    assert capsys.readouterr().err == ""
    est = make(True).fit(X, y)
    lines = capsys.readouterr().err.splitlines()
    assert lines, "verbose=True printed no progress line"
    name = "dsg" if isinstance(est, kernsolve.DSGClassifier) else "eigenpro"
    for line in lines:
        assert re.fullmatch(rf"kernsolve {name}: (epoch \d+/\d+, )?iter \d+/\d+, "
                            r"(kernel|feature) evals [0-9.e+]+, \d+ s elapsed, "
                            r"about \d+ s left", line), line
    if name == "eigenpro":      # the last line: the last batch step, or CG iteration
        steps = est.n_steps_ if est.eigenvalues_.size else est.n_iter_
        assert f"iter {steps}/" in lines[-1]
    assert getattr(est, "_trainer", None) is None or est._trainer.progress is None
