"""Input files that are not regular files (issue 15, item 4): FIFOs, pipes, ``-``.

``mkfifo f; cat heart > f & kernsolve-train f m`` never returned: the
command opened and closed ``f`` to check it, which took the writer's one
reader, and the real read then waited forever.  Each command now reads a FIFO
once; ``-`` reads stdin.  The commands run as subprocesses with a timeout far
above their run time (a hang guard, never a speed test); the FIFO's writer is
a thread of the test.  The oracle is the same command on the regular file.
"""
import contextlib
import errno
import importlib
import io
import lzma
import os
import subprocess
import sys
import threading

import pytest

import kernsolve

from conftest import package_env

HANG_GUARD = 120        # seconds; each command takes well under 5


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """heart_scale as a plain file, its model, and a range file."""
    root = tmp_path_factory.mktemp("regular")
    data = root / "heart"
    with lzma.open(kernsolve.dataset_path("heart_scale"), "rb") as f:
        data.write_bytes(f.read())
    assert inproc("train", "-q", data, root / "heart.model")[0] == 0
    assert inproc("scale", "-s", root / "heart.range", data)[0] == 0
    return root


def run(tool, *args):
    """The command as a subprocess (stdout, stderr as bytes), with the hang guard."""
    return subprocess.run([sys.executable, "-m", f"kernsolve.cli.{tool}", *map(str, args)],
                          env=package_env(), cwd=os.path.dirname(os.path.abspath(__file__)),
                          capture_output=True, timeout=HANG_GUARD)


def inproc(tool, *args, stdin=b""):
    """The command in this process: (exit status, stdout, stderr), ``stdin`` as its stdin."""
    cli = importlib.import_module(f"kernsolve.cli.{tool}").cli
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin
    raw = io.BytesIO(stdin)
    raw.name = "<stdin>"            # as sys.stdin.buffer is named
    sys.stdin = io.TextIOWrapper(raw)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli([str(a) for a in args])
    finally:
        sys.stdin = saved
    return code, out.getvalue().encode(), err.getvalue()


class Writer:
    """A thread that writes ``data`` into the FIFO ``path`` (as ``cat data > path &``)."""

    def __init__(self, path, data):
        self.path, self.data, self.error = str(path), data, None
        os.mkfifo(self.path)
        self.thread = threading.Thread(target=self._write, daemon=True)
        self.thread.start()

    def _write(self):
        try:
            with open(self.path, "wb") as f:       # waits for a reader
                f.write(self.data)
        except OSError as exc:                     # the reader went away (EPIPE)
            self.error = exc

    def finish(self):
        """Release a writer still waiting for a reader (the command never read)."""
        if self.thread.is_alive():
            try:
                fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
            except OSError as exc:
                assert exc.errno == errno.ENXIO
            else:
                self.thread.join(HANG_GUARD)
                os.close(fd)
        self.thread.join(HANG_GUARD)


def with_fifo(tmp_path, data, tool, *args):
    """Run ``tool`` with ``@F`` in ``args`` replaced by a FIFO that receives ``data``."""
    fifo = tmp_path / "fifo"
    writer = Writer(fifo, data)
    try:
        return run(tool, *[fifo if a == "@F" else a for a in args])
    finally:
        writer.finish()


def test_train_from_a_fifo_equals_the_file(files, tmp_path):
    r = with_fifo(tmp_path, (files / "heart").read_bytes(), "train", "-q", "@F",
                  tmp_path / "m")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "m").read_bytes() == (files / "heart.model").read_bytes()


def test_train_cross_validation_from_a_fifo(files, tmp_path):
    expect = inproc("train", "-q", "-v", "3", files / "heart")[1]
    r = with_fifo(tmp_path, (files / "heart").read_bytes(), "train", "-q", "-v", "3", "@F")
    assert r.returncode == 0, r.stderr
    assert r.stdout == expect and b"Cross Validation Accuracy" in r.stdout


def test_predict_test_file_and_model_file_from_fifos(files, tmp_path):
    code, expect, _ = inproc("predict", files / "heart", files / "heart.model",
                             tmp_path / "expect")
    assert code == 0
    r = with_fifo(tmp_path, (files / "heart").read_bytes(), "predict", "@F",
                  files / "heart.model", tmp_path / "p1")
    assert r.returncode == 0, r.stderr
    assert r.stdout == expect
    assert (tmp_path / "p1").read_bytes() == (tmp_path / "expect").read_bytes()
    os.unlink(tmp_path / "fifo")
    r = with_fifo(tmp_path, (files / "heart.model").read_bytes(), "predict",
                  files / "heart", "@F", tmp_path / "p2")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "p2").read_bytes() == (tmp_path / "expect").read_bytes()


def test_scale_data_and_range_file_from_fifos(files, tmp_path):
    code, expect, _ = inproc("scale", "-r", files / "heart.range", files / "heart")
    assert code == 0
    r = with_fifo(tmp_path, (files / "heart").read_bytes(), "scale",
                  "-r", files / "heart.range", "@F")
    assert r.returncode == 0, r.stderr
    assert r.stdout == expect
    os.unlink(tmp_path / "fifo")
    r = with_fifo(tmp_path, (files / "heart.range").read_bytes(), "scale", "-r", "@F",
                  files / "heart")
    assert r.returncode == 0, r.stderr
    assert r.stdout == expect


def test_grid_from_a_fifo(files, tmp_path):
    args = ["-log2c", "0,1,1", "-log2g", "-3,-3,1", "-v", "3", "-out", "null", "-png",
            "null", "-q"]
    expect = inproc("grid", *args, files / "heart")[1]
    r = with_fifo(tmp_path, (files / "heart").read_bytes(), "grid", *args, "@F")
    assert r.returncode == 0, r.stderr
    assert r.stdout == expect and len(r.stdout.split()) == 3


def test_stream_from_a_fifo_is_refused_in_one_line(files, tmp_path):
    r = with_fifo(tmp_path, (files / "heart").read_bytes(), "train", "--solver", "dsg",
                  "--stream", "@F", tmp_path / "m")
    assert r.returncode == 1
    err = r.stderr.decode()
    assert err.count("\n") == 1 and str(tmp_path / "fifo") in err and "--stream" in err
    assert not (tmp_path / "m").exists()


def test_dash_reads_stdin(files, tmp_path):
    data = (files / "heart").read_bytes()
    code, _, err = inproc("train", "-q", "-", tmp_path / "m", stdin=data)
    assert code == 0, err
    assert (tmp_path / "m").read_bytes() == (files / "heart.model").read_bytes()
    assert inproc("train", "-q", "-v", "3", "-", stdin=data) == \
        inproc("train", "-q", "-v", "3", files / "heart")
    inproc("predict", files / "heart", files / "heart.model", tmp_path / "expect")
    code, _, err = inproc("predict", "-", files / "heart.model", tmp_path / "p", stdin=data)
    assert code == 0, err
    assert (tmp_path / "p").read_bytes() == (tmp_path / "expect").read_bytes()
    assert inproc("scale", "-", stdin=data) == inproc("scale", files / "heart")


def test_dash_through_a_real_pipe(files, tmp_path):
    r = subprocess.run([sys.executable, "-m", "kernsolve.cli.predict", "-",
                        files / "heart.model", tmp_path / "p"], env=package_env(),
                       cwd=os.path.dirname(os.path.abspath(__file__)), capture_output=True,
                       input=(files / "heart").read_bytes(), timeout=HANG_GUARD)
    assert r.returncode == 0, r.stderr
    inproc("predict", files / "heart", files / "heart.model", tmp_path / "expect")
    assert (tmp_path / "p").read_bytes() == (tmp_path / "expect").read_bytes()


def test_dash_errors_name_stdin_and_what_is_missing(files, tmp_path):
    code, _, err = inproc("predict", "-", files / "heart.model", tmp_path / "p",
                          stdin=b"1 1:x\n")
    assert code == 1
    assert err == "kernsolve-predict: <stdin>:1: value 'x' of feature 1 is not a number\n"
    code, _, err = inproc("train", "-q", "-", stdin=b"1 1:1\n")
    assert code == 1 and "give the model file name" in err
    code, _, err = inproc("train", "--solver", "dsg", "--stream", "-", tmp_path / "m",
                          stdin=b"1 1:1\n")
    assert code == 1 and "cannot read stdin" in err
    assert not (tmp_path / "m").exists()
