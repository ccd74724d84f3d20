"""The progress line of long training runs: rate limit, terminal vs log, -q.

Oracles: a fake clock (what must be written when), the arithmetic of the
estimated time left, and the commands' stdout/stderr.
"""
import contextlib
import functools
import io
import re

import numpy as np
import pytest

import kernsolve
from kernsolve._progress import Progress


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_silent_at_first_then_rate_limited():
    clock, out = Clock(), io.StringIO()
    p = Progress("sdca", out, delay=2.0, interval=1.0, clock=clock)
    state = {"n_iter": 10, "max_iter": 40, "n_kernel_evals": 1000, "seconds": 1.0}
    for t in (0.5, 1.0, 1.99):
        clock.now = 100 + t
        p(state)
    assert out.getvalue() == ""             # short runs print nothing
    clock.now = 102.0
    p(state)
    clock.now = 102.5
    p(state)                                 # within a second of the last line
    clock.now = 103.0
    p(dict(state, n_iter=20))
    lines = out.getvalue().splitlines(keepends=True)
    assert len(lines) == 2 and all(line.endswith("\n") for line in lines)
    # 10 of 40 iterations in 2 s: 6 s left; 20 of 40 in 3 s: 3 s left
    assert lines[0] == ("kernsolve sdca: iter 10/40, kernel evals 1000, 2 s elapsed, "
                        "about 6 s left\n")
    assert lines[1].endswith("iter 20/40, kernel evals 1000, 3 s elapsed, about 3 s left\n")


def test_parts_evals_and_time_left_over_pairs():
    clock, out = Clock(), io.StringIO()
    p = Progress("pegasos", out, delay=0, interval=0, clock=clock)
    p.start_part(0, 3, [100, 300, 100])
    p.end_part({"n_kernel_evals": 5000})
    clock.now += 12
    p.start_part(1, 3, [100, 300, 100])      # between pairs: a line of its own
    p({"n_iter": 200, "max_iter": 300, "n_kernel_evals": 70})
    first, second = out.getvalue().splitlines()
    # done: 100 of 500 planned iterations after 12 s -> 48 s left
    assert first == "kernsolve pegasos: pair 2/3, kernel evals 5000, 12 s elapsed, about 48 s left"
    # 300 of 500 after 12 s -> 8 s left; kernel evaluations add up over pairs
    assert second == ("kernsolve pegasos: pair 2/3, iter 200/300, kernel evals 5070, "
                      "12 s elapsed, about 8 s left")
    # SMO: nothing planned, no estimate
    q = Progress("smo", io.StringIO(), delay=0, interval=0, clock=clock)
    q({"n_iter": 5, "gap": 0.5, "n_kernel_evals": 9, "seconds": 1})
    assert "left" not in q.stream.getvalue() and "gap 0.5" in q.stream.getvalue()


def test_terminal_line_is_rewritten_in_place_and_cleared():
    clock, term = Clock(), Terminal()
    p = Progress("smo", term, delay=0, interval=0, clock=clock)
    p({"n_iter": 123456, "n_kernel_evals": 10})
    p({"n_iter": 7, "n_kernel_evals": 10})
    text = term.getvalue()
    assert "\n" not in text and text.count("\r") == 2
    first, second = text.split("\r")[1:]
    assert len(second) == len(first)         # padded over the longer old line
    assert second.rstrip().startswith("kernsolve smo: iter 7,")
    p.close()
    assert term.getvalue().endswith("\r" + " " * len(first) + "\r")
    p.close()                                # nothing left to clear
    assert term.getvalue().endswith("\r" + " " * len(first) + "\r")
    # a warning of the command-line tools erases an open line first
    from kernsolve._progress import clear_active
    p({"n_iter": 8, "n_kernel_evals": 10})
    width = len(term.getvalue().rsplit("\r", 1)[1])
    clear_active()
    assert term.getvalue().endswith("\r" + " " * width + "\r")
    clear_active()                           # nothing open: nothing written
    assert term.getvalue().endswith("\r" + " " * width + "\r")


def test_compiled_solvers_call_back_and_can_be_stopped():
    """About once a second the loops call progress; an exception there stops them."""
    from kernsolve.solvers.baselines._baselines import run
    from kernsolve.solvers.sbp import _sbp as _sbp
    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal(-2, 0.5, (30, 2)), rng.normal(2, 0.5, (30, 2))])
    y = np.r_[np.ones(30), -np.ones(30)].astype(np.int8)

    class Stop(Exception):
        pass

    seen = []

    def progress(state):
        seen.append(state)
        raise Stop

    with pytest.raises(Stop):
        run(X, 2, 3, 0.5, 0.0, y, 60, "perceptron", 0.0, 10 ** 12, progress=progress)
    assert seen[0]["max_iter"] == 10 ** 12 and 0 < seen[0]["n_iter"] < 10 ** 12
    assert seen[0]["seconds"] >= 1.0
    seen.clear()
    with pytest.raises(Stop):
        _sbp.solve(X, 2, 3, 0.5, 0.0, y, 60, 0.1, max_iter=10 ** 12, progress=progress)
    assert seen[0]["max_iter"] == 10 ** 12 and seen[0]["n_iter"] > 0
    with pytest.raises(ValueError, match="progress"):
        run(X, 2, 3, 0.5, 0.0, y, 60, "sdca", 0.1, 10, progress=3)


@pytest.fixture
def separable(tmp_path):
    rng = np.random.default_rng(2)
    X = np.vstack([rng.normal(-2, 0.5, (30, 2)), rng.normal(2, 0.5, (30, 2))])
    y = np.r_[np.ones(30), -np.ones(30)]
    path = str(tmp_path / "sep")
    kernsolve.write_problem(path, y, X)
    return path


def cli_train(*args):
    from kernsolve.cli.train import cli
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def poll_every_check():
    """The compiled loops visit Python at every clock check, not once a second,
    so a progress line appears however fast the machine runs the training."""
    from kernsolve.solvers.baselines import _baselines as _baselines
    old = _baselines._get_tuning()
    _baselines._set_tuning(poll_seconds=0.0)
    yield
    _baselines._set_tuning(**old)


def test_train_progress_on_stderr_and_quiet(tmp_path, separable, monkeypatch,
                                            poll_every_check):
    # no initial delay and no rate limit: every callback of the solver is a line
    import kernsolve.solvers.libsvm.driver as svm
    monkeypatch.setattr(svm, "Progress", functools.partial(Progress, delay=0.0,
                                                           interval=0.0))
    args = ["--solver", "perceptron", "--iterations", "20000", "-g", "0.5",
            separable, tmp_path / "m"]
    code, out, err = cli_train(*args)
    assert code == 0, err
    assert out.startswith("Perceptron: 20000 iterations")
    lines = err.splitlines()
    # the loop reads the clock every 256 steps and now calls back each time
    assert len(lines) == 20000 // 256, lines[:3]
    for line in lines:
        assert re.fullmatch(r"kernsolve perceptron: iter \d+/20000, kernel evals \d+, "
                            r"\d+ s elapsed, about \d+ s left", line), line
    # -q: nothing at all on stdout or stderr, for the same run
    code, out, err = cli_train("-q", *args)
    assert (code, out, err) == (0, "", "")


@pytest.mark.parametrize("solver", [[], ["--solver", "sbp", "-n", "0.2"],
                                    ["--solver", "pegasos"], ["--solver", "sdca"],
                                    ["--solver", "perceptron"], ["-b", "1"]],
                         ids=["smo", "sbp", "pegasos", "sdca", "perceptron", "smo-b1"])
def test_quiet_run_prints_nothing(tmp_path, separable, solver):
    code, out, err = cli_train("-q", *solver, separable, tmp_path / "m")
    assert (code, out, err) == (0, "", "")
    assert (tmp_path / "m").exists()
