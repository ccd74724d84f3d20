"""Output paths of every writer: regular files, symlinks, devices, FIFOs, streams.

Oracle: what ``fopen(path, "w")`` (svm-predict, svm-train, svm-scale) does to
each kind of path -- it writes *through* a symlink, a device, a FIFO and
``/dev/stdout`` -- plus kernsolve's own promise for regular files (complete or
untouched; an existing file keeps its permission bits; a new one gets
``0o666 & ~umask``). Each case is checked for all four writers: the
prediction file and the ``-s`` range file of the command-line tools,
``save_model`` and ``write_problem``.
"""
import os
import stat
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import kernsolve
from kernsolve import _fileutil
from conftest import package_env
from test_cli import assert_user_error, run_inproc

HEART = kernsolve.dataset_path("heart_scale")


@pytest.fixture(scope="module")
def heart_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "heart.model"
    assert run_inproc("train", "-q", HEART, path).returncode == 0
    return str(path)


@pytest.fixture(scope="module")
def expected(heart_model, tmp_path_factory):
    """What each writer puts in a plain new file (the oracle for the other kinds)."""
    folder = tmp_path_factory.mktemp("expected")
    y, X = kernsolve.read_problem(HEART)
    out = {}
    run_inproc("predict", HEART, heart_model, folder / "pred")
    run_inproc("scale", "-s", folder / "range", HEART)
    kernsolve.save_model(folder / "model", kernsolve.load_model(heart_model))
    kernsolve.write_problem(folder / "data", y, X)
    for name in ("pred", "range", "model", "data"):
        out[name] = (folder / name).read_bytes()
    return out


def writers(heart_model):
    """Each writer as a function of the output path."""
    y, X = kernsolve.read_problem(HEART)
    model = kernsolve.load_model(heart_model)

    def predict(path):
        assert run_inproc("predict", HEART, heart_model, path).returncode == 0

    def scale(path):
        assert run_inproc("scale", "-s", path, HEART).returncode == 0

    return {"pred": predict, "range": scale,
            "model": lambda path: kernsolve.save_model(path, model),
            "data": lambda path: kernsolve.write_problem(path, y, X)}


WRITERS = ["pred", "range", "model", "data"]


@pytest.mark.parametrize("kind", WRITERS)
def test_symlink_is_followed_and_stays_a_link(tmp_path, heart_model, expected, kind):
    real = tmp_path / "real"
    real.mkdir()
    (real / "out").write_text("old\n")
    link = tmp_path / "link"
    link.symlink_to(real / "out")
    writers(heart_model)[kind](str(link))
    assert link.is_symlink() and os.readlink(link) == str(real / "out")
    assert (real / "out").read_bytes() == expected[kind]
    assert sorted(os.listdir(real)) == ["out"] and sorted(os.listdir(tmp_path)) == ["link", "real"]


@pytest.mark.parametrize("kind", WRITERS)
def test_dangling_symlink_creates_its_target(tmp_path, heart_model, expected, kind):
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "target")
    writers(heart_model)[kind](str(link))
    assert link.is_symlink() and (tmp_path / "target").read_bytes() == expected[kind]


@pytest.mark.parametrize("kind", WRITERS)
def test_existing_file_keeps_its_mode_new_file_gets_umask(tmp_path, heart_model, expected,
                                                          kind):
    private = tmp_path / "private"
    private.write_text("old\n")
    os.chmod(private, 0o600)
    writers(heart_model)[kind](str(private))
    assert stat.S_IMODE(os.stat(private).st_mode) == 0o600
    assert private.read_bytes() == expected[kind]
    fresh = tmp_path / "fresh"
    writers(heart_model)[kind](str(fresh))
    assert stat.S_IMODE(os.stat(fresh).st_mode) == 0o666 & ~_fileutil.umask()


@pytest.mark.parametrize("kind", WRITERS)
def test_fifo_is_written_through(tmp_path, heart_model, expected, kind):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    # A reader that is already there (non-blocking, so the test cannot hang):
    # the writer's open() returns at once and the bytes arrive in the pipe.
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if len(expected[kind]) >= 60000:
            pytest.skip("more than a pipe buffer")
        writers(heart_model)[kind](str(fifo))
        got = b""
        while True:
            try:
                chunk = os.read(reader, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                break
            got += chunk
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert got == expected[kind]
    assert os.listdir(tmp_path) == ["fifo"]


@pytest.mark.parametrize("kind", WRITERS)
def test_character_device_is_written_not_replaced(tmp_path, heart_model, kind):
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    node = tmp_path / "null"
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))    # a copy of /dev/null
    before = os.stat(node)
    writers(heart_model)[kind](str(node))
    after = os.stat(node)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert after.st_ino == before.st_ino and os.listdir(tmp_path) == ["null"]


def test_dev_null_and_dev_stdout_reach_the_device(tmp_path, heart_model, expected):
    env = package_env()
    before = os.stat("/dev/null")
    for target in ("/dev/null", "/dev/stdout"):
        proc = subprocess.run([sys.executable, "-m", "kernsolve.cli.predict", HEART,
                               heart_model, target], capture_output=True, env=env,
                              cwd=tempfile.gettempdir(), timeout=120)
        assert proc.returncode == 0, proc.stderr
        if target == "/dev/stdout":
            # the accuracy line comes after the predictions, all on stdout
            assert proc.stdout.startswith(expected["pred"])
            assert proc.stdout[len(expected["pred"]):].startswith(b"Accuracy = ")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino


def test_leftover_temporaries_of_dead_processes_are_removed(tmp_path, heart_model):
    # A SIGKILL-ed writer leaves its temporary file; the next write of the same
    # name removes it, but never one of a process that still runs.
    dead = tmp_path / ".out.999999999.abcdef.tmp"         # beyond any pid_max
    alive = tmp_path / f".out.{os.getppid()}.abcdef.tmp"
    other = tmp_path / ".other.999999999.abcdef.tmp"
    for p in (dead, alive, other):
        p.write_text("partial")
    writers(heart_model)["model"](str(tmp_path / "out"))
    assert sorted(os.listdir(tmp_path)) == sorted(["out", alive.name, other.name])


def test_killed_writer_leaves_target_untouched(tmp_path):
    target = tmp_path / "out"
    target.write_text("old\n")
    with pytest.raises(RuntimeError):
        with _fileutil.output_file(target) as f:
            f.write("half")
            raise RuntimeError("stop")
    assert target.read_text() == "old\n" and os.listdir(tmp_path) == ["out"]


def test_output_checks_before_work(tmp_path, heart_model):
    # the early check accepts what the writer can write and names what it cannot
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert _fileutil.check_output_path(fifo) is None
    assert _fileutil.check_output_path("/dev/null") is None
    assert _fileutil.check_output_path(tmp_path) == "Is a directory"
    assert _fileutil.check_output_path(tmp_path / "no" / "x") == "No such file or directory"
    proc = run_inproc("predict", HEART, heart_model, tmp_path / "no" / "x")
    assert_user_error(proc, "can't open output file", "No such file or directory")
    assert np.all(np.array(os.listdir(tmp_path)) == ["fifo"])


# ------------------------------------------- feature indices of 2**31 or more
#
# The core numbers features with 32-bit integers (as LIBSVM does). Renumbering
# the used columns of one matrix silently changed models and predictions; now
# every path that trains or predicts refuses such an index, naming the line.

def test_train_file_with_huge_index_names_the_line(tmp_path):
    data = tmp_path / "big"
    data.write_text("1 1:1 2:1\n1 1:1 1099511627776:2\n-1 2:1\n")
    for solver in ([], ["--solver", "sbp"], ["--solver", "dsg"], ["--solver", "eigenpro"]):
        proc = run_inproc("train", *solver, data, tmp_path / "m")
        first = assert_user_error(proc, f"{data}:2: feature index 1099511627776 is too large",
                                  "32-bit")
        assert not (tmp_path / "m").exists(), first
    proc = run_inproc("scale", data)
    assert_user_error(proc, f"{data}:2: feature index 1099511627776 is too large")


def test_predict_file_with_huge_index_is_refused_not_renumbered(tmp_path, heart_model):
    # the report's case: a zero at index 2**31 on each test row changed 56 of
    # 270 predictions; the largest index that fits still predicts as before
    import lzma
    with lzma.open(HEART, "rt") if HEART.endswith(".xz") else open(HEART) as f:
        lines = f.read().splitlines()
    wide = tmp_path / "wide"
    wide.write_text("".join(line + " 2147483648:0\n" for line in lines))
    proc = run_inproc("predict", wide, heart_model, tmp_path / "out")
    assert_user_error(proc, f"{wide}:1: feature index 2147483648 is too large")
    assert not (tmp_path / "out").exists()
    fits = tmp_path / "fits"
    fits.write_text("".join(line + " 2147483647:0\n" for line in lines))
    assert run_inproc("predict", fits, heart_model, tmp_path / "a").returncode == 0
    assert run_inproc("predict", HEART, heart_model, tmp_path / "b").returncode == 0
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()


def test_api_refuses_wide_matrices():
    import scipy.sparse as sp
    y, X = kernsolve.read_problem(HEART)
    wide = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], 2**31))
    model = kernsolve.train(y, X, "-q")
    with pytest.raises(ValueError, match="2147483648 columns"):
        kernsolve.train(y, wide, "-q")
    with pytest.raises(ValueError, match="2147483648 columns"):
        kernsolve.predict(y, wide, model)
    with pytest.raises(ValueError, match="2147483648 columns"):
        kernsolve.SVC().fit(wide, y)
    with pytest.raises(ValueError, match="2147483648 columns"):
        kernsolve.DSGClassifier().fit(wide, y)
    with pytest.raises(ValueError, match="32-bit"):
        kernsolve.read_problem(HEART, n_features=2**31, for_training=True)


# ---------------------------------------------------------------- a full disk
# /dev/full fails every write with ENOSPC: the red team's full disk said
# "can't open: No space left on device", naming no file, and kernsolve-grid's
# half-written results file replaced the old one.

def _cli(tool, args, stdout, tmp_path, limit=None):
    """A command in a child process; ``limit``: the largest file it may write
    (RLIMIT_FSIZE: writing past it fails with EFBIG, as on a full quota)."""
    def set_limit():
        import resource
        import signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return subprocess.run([sys.executable, "-m", f"kernsolve.cli.{tool}", *map(str, args)],
                          stdout=stdout, stderr=subprocess.PIPE, text=True,
                          cwd=str(tmp_path), env=package_env(),
                          preexec_fn=None if limit is None else set_limit)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
@pytest.mark.parametrize("tool, args", [
    ("scale", ["HEART"]),
    ("train", ["HEART", "m.model"]),
    ("predict", ["HEART", "MODEL", "out.txt"]),
    ("grid", ["-log2c", "1,1,1", "-log2g", "-1,-1,1", "-png", "null", "-out", "g.out", "HEART"]),
])
def test_a_full_standard_output_is_named(tool, args, heart_model, tmp_path):
    heart = kernsolve.dataset_path("heart_scale")
    args = [heart if a == "HEART" else heart_model if a == "MODEL" else a for a in args]
    with open("/dev/full", "w") as full:
        proc = _cli(tool, args, full, tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"kernsolve-{tool}: can't write standard output: No space left on device" \
        in proc.stderr, proc.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_grid_names_its_full_results_file(tmp_path):
    heart = kernsolve.dataset_path("heart_scale")
    proc = _cli("grid", ["-log2c", "1,1,1", "-log2g", "-1,-1,1", "-png", "null",
                         "-out", "/dev/full", heart], subprocess.DEVNULL, tmp_path)
    assert proc.returncode == 1
    assert "kernsolve-grid: can't write /dev/full: No space left on device" in proc.stderr


@pytest.mark.skipif(not hasattr(os, "fork"), reason="RLIMIT_FSIZE needs a POSIX child")
def test_grid_keeps_the_old_results_when_writing_them_fails(tmp_path):
    # the results file cannot grow past 20 bytes (EFBIG): the old one stays whole
    heart = kernsolve.dataset_path("heart_scale")
    old = "log2c=1.0 log2g=-1.0 rate=50.0\n"
    (tmp_path / "g.out").write_text(old)
    proc = _cli("grid", ["-log2c", "1,2,1", "-log2g", "-1,-1,1", "-png", "null",
                         "-out", "g.out", heart], subprocess.DEVNULL, tmp_path, limit=20)
    assert proc.returncode == 1
    assert "kernsolve-grid: can't write g.out: File too large" in proc.stderr, proc.stderr
    assert (tmp_path / "g.out").read_text() == old
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_a_read_only_file_system_is_named_so(tmp_path, monkeypatch):
    # (no read-only mount here: the file system's flag is what is asked)
    class ReadOnly:
        f_flag = os.ST_RDONLY
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    monkeypatch.setattr(os, "statvfs", lambda path: ReadOnly)
    assert _fileutil.check_output_path(str(tmp_path / "m.model")) == "Read-only file system"
    monkeypatch.setattr(os, "statvfs", lambda path: type("RW", (), {"f_flag": 0}))
    assert _fileutil.check_output_path(str(tmp_path / "m.model")) == "Permission denied"
