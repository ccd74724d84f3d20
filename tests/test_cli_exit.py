"""How a command's process ends (``kernsolve.cli._common.end_process``).

After the command, the output is flushed and, when nothing is left to clean
up (only the main thread, no ``atexit`` handler), the process ends at once
instead of tearing the interpreter down.  Oracles: the same command run
in-process through ``cli()`` (its stdout and model bytes), the status it
returns, and ``atexit`` / thread semantics of a normal ``sys.exit``.
No timing is measured here.
"""
import os
import subprocess
import sys
import textwrap
import threading

import pytest

import kernsolve
from conftest import package_env
from kernsolve.cli import _common, predict, train


class FastExit(Exception):
    """Stands in for os._exit in this process."""


@pytest.fixture
def fake_exit(monkeypatch):
    def _exit(status):
        raise FastExit(status)
    monkeypatch.setattr(_common.os, "_exit", _exit)
    return monkeypatch


def test_nothing_left_to_clean_up_ends_at_once(fake_exit):
    fake_exit.setattr(_common.atexit, "_ncallbacks", lambda: 0)
    # only the main thread, whatever earlier tests left running in this
    # process (scikit-learn's estimator checks leave loky's manager thread)
    fake_exit.setattr(_common.threading, "active_count", lambda: 1)
    with pytest.raises(FastExit) as info:
        _common.end_process(3)
    assert info.value.args == (3,)


def test_an_atexit_handler_gets_a_normal_exit(fake_exit):
    fake_exit.setattr(_common.atexit, "_ncallbacks", lambda: 1)
    with pytest.raises(SystemExit) as info:
        _common.end_process(4)
    assert info.value.code == 4


def test_another_thread_gets_a_normal_exit(fake_exit):
    fake_exit.setattr(_common.atexit, "_ncallbacks", lambda: 0)
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        with pytest.raises(SystemExit) as info:
            _common.end_process(0)
        assert info.value.code == 0
    finally:
        release.set()
        other.join()


def test_without_the_count_of_handlers_a_normal_exit(fake_exit):
    fake_exit.delattr(_common.atexit, "_ncallbacks")
    with pytest.raises(SystemExit):
        _common.end_process(0)


# A child that writes more than a pipe's buffer without a newline, keeps an
# object whose finaliser would speak at teardown, and ends with end_process.
CHILD = textwrap.dedent("""\
    import atexit, sys
    from kernsolve.cli._common import end_process
    class Loud:
        def __del__(self):
            sys.stderr.write("teardown ran\\n")
    keep = Loud()
    if sys.argv[1] == "handler":
        atexit.register(lambda: sys.stderr.write("handler ran\\n"))
    sys.stdout.write("x" * 200000)
    end_process(int(sys.argv[2]))
    """)


@pytest.mark.parametrize("handler", [False, True])
def test_the_output_survives_and_the_status_is_kept(handler):
    proc = subprocess.run([sys.executable, "-c", CHILD, "handler" if handler else "none", "5"],
                          env=package_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 5
    assert proc.stdout == "x" * 200000
    if handler:
        assert "handler ran" in proc.stderr
    else:
        # the process ended before the interpreter's teardown
        assert "teardown ran" not in proc.stderr
        assert proc.stderr == ""


def test_the_commands_as_processes_match_their_in_process_runs(tmp_path, capsys):
    data = kernsolve.dataset_path("heart_scale")
    model_here, model_there = str(tmp_path / "here"), str(tmp_path / "there")
    out_here, out_there = str(tmp_path / "out.here"), str(tmp_path / "out.there")
    options = ["-c", "4", "-g", "0.05", "-b", "1"]
    assert train.cli([*options, data, model_here]) == 0
    assert predict.cli(["-b", "1", data, model_here, out_here]) == 0
    printed = capsys.readouterr().out
    env = package_env()
    trained = subprocess.run([sys.executable, "-m", "kernsolve.cli.train", *options, data,
                              model_there], env=env, capture_output=True, text=True,
                             timeout=300)
    predicted = subprocess.run([sys.executable, "-m", "kernsolve.cli.predict", "-b", "1", data,
                                model_there, out_there], env=env, capture_output=True,
                               text=True, timeout=300)
    assert trained.returncode == predicted.returncode == 0
    assert trained.stdout + predicted.stdout == printed
    for here, there in ((model_here, model_there), (out_here, out_there)):
        with open(here, "rb") as a, open(there, "rb") as b:
            assert a.read() == b.read()
    missing = subprocess.run([sys.executable, "-m", "kernsolve.cli.train", data,
                              os.path.join(str(tmp_path), "no", "such", "folder", "m")],
                             env=env, capture_output=True, text=True, timeout=300)
    assert missing.returncode == 1
    assert missing.stderr.startswith("kernsolve-train: ")
