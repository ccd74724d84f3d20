"""Fuzz the four command-line tools with broken data files, model files,
options and output paths (issue 15).

The rule for every case, whatever the input: the command ends in time with
exit 0 and a well-formed result, or with exit 1 and one line on stderr that
starts with the program's name and names the file or option at fault; never
a traceback or an "internal error", never a hang (a hang guard far above any
run's time), never memory out of proportion to the input (the child's peak
RSS from ``wait4``), never a changed file other than the named output.

The cases are drawn from a seeded generator (the same cases on every run, so
a failure reproduces); each runs in its own process, two at a time.
"""
import concurrent.futures
import hashlib
import lzma
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time

import pytest

import kernsolve
from conftest import package_env

HANG_GUARD = 120          # seconds: a case that runs this long is a hang
RSS_LIMIT_MB = 600        # the inputs are kilobytes; the interpreter and numpy/scipy ~100 MB
# Address space a child may take: a runaway allocation fails in the child
# (and the case with it) instead of taking the machine's memory.
ADDRESS_SPACE = 4 << 30
N_CASES = {"data": 36, "model": 36, "options": 28, "output": 10}


def _heart_lines():
    with lzma.open(kernsolve.dataset_path("heart_scale"), "rt") as f:
        return f.read().splitlines(keepends=True)


HEART = _heart_lines()


# ------------------------------------------------------------------ mutations

def _mutate_bytes(rng, data):
    """One random damage to a byte string."""
    kind = rng.randrange(7)
    if not data:
        return b"\x00"
    i = rng.randrange(len(data))
    if kind == 0:                                   # truncated anywhere
        return data[:i]
    if kind == 1:                                   # a random byte flipped
        return data[:i] + bytes([rng.randrange(256)]) + data[i + 1:]
    if kind == 2:                                   # random bytes inserted
        return data[:i] + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9))) + data[i:]
    if kind == 3:                                   # a chunk deleted
        return data[:i] + data[i + rng.randrange(1, 200):]
    if kind == 4:                                   # a line duplicated
        lines = data.splitlines(keepends=True)
        j = rng.randrange(len(lines))
        return b"".join(lines[:j + 1] + lines[j:])
    if kind == 5:                                   # two lines swapped
        lines = data.splitlines(keepends=True)
        a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[a], lines[b] = lines[b], lines[a]
        return b"".join(lines)
    # a number replaced by an ugly one
    tokens = data.split(b" ")
    j = rng.randrange(len(tokens))
    ugly = rng.choice([b"nan", b"-inf", b"1e308", b"-1", b"0", b"99999999999999999999",
                       b"2147483648", b"1e-320", b"", b"abc", b"1:2:3", b"-0"])
    head, sep, _ = tokens[j].partition(b":")
    tokens[j] = head + sep + ugly if sep and rng.random() < 0.5 else ugly
    return b" ".join(tokens)


def _data_case(rng):
    rows = rng.sample(HEART, rng.randrange(5, 40))
    text = "".join(rows).encode()
    kind = rng.randrange(8)
    if kind == 0:
        text = b""
    elif kind == 1:
        text = b"# only a comment\n\n"
    elif kind == 2:
        text = text.replace(b"\n", b"\r\n")
    elif kind == 3:
        text = b"+1\n-1 1:0.5\n+1 3:1 1:2\n"                  # no features; unordered
    else:
        for _ in range(rng.randrange(1, 4)):
            text = _mutate_bytes(rng, text)
    return text


# ------------------------------------------------------------------ the runner

def _snapshot(folder):
    out = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if os.path.isfile(path) and not os.path.islink(path):
            with open(path, "rb") as f:
                out[name] = hashlib.sha256(f.read()).hexdigest()
        else:
            out[name] = os.readlink(path) if os.path.islink(path) else "special"
    return out


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def _run(folder, tool, args, output=None):
    """Run one command; return (exit code, stdout, stderr, peak RSS in MB)."""
    env = package_env()
    env.pop("KERNSOLVE_DEBUG_CLI", None)
    env["OMP_NUM_THREADS"] = "1"
    before = _snapshot(folder)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-m", f"kernsolve.cli.{tool}", *args],
                                cwd=folder, env=env, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err, start_new_session=True,
                                preexec_fn=_limit_memory)
        # wait4, not wait: it also gives the child's own peak memory
        deadline = time.monotonic() + HANG_GUARD
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                os.wait4(proc.pid, 0)
                proc.returncode = -9
                pytest.fail(f"{tool} {' '.join(args)}: still running after {HANG_GUARD} s")
            time.sleep(0.02)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    rss_mb = usage.ru_maxrss / 1024.0           # kilobytes on Linux
    assert rss_mb < RSS_LIMIT_MB, (tool, args, f"peak RSS {rss_mb:.0f} MB")
    after = _snapshot(folder)
    changed = {n for n in set(before) | set(after) if before.get(n) != after.get(n)}
    allowed = {os.path.basename(output)} if output else set()
    assert changed <= allowed, (tool, args, "changed files:", changed - allowed)
    return proc.returncode, stdout, stderr, rss_mb


def _check(tool, args, code, out, err, names):
    prog = f"kernsolve-{tool}"
    assert "Traceback" not in err and "Traceback" not in out, (args, err)
    assert "internal error" not in err, (args, err)
    assert code in (0, 1), (args, code, err)
    if code == 1:
        first = err.splitlines()[0] if err else ""
        assert first.startswith(prog + ": "), (args, err)
        assert any(n in first for n in names), (args, first, names)


# ------------------------------------------------------------------ fixtures

@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """One model file of each kind, trained on heart_scale."""
    folder = tmp_path_factory.mktemp("models")
    data = folder / "heart"
    data.write_text("".join(HEART))
    out = {}
    for name, options in (("libsvm", ["-b", "1"]), ("dsg", ["--solver", "dsg"]),
                          ("eigenpro", ["--solver", "eigenpro", "--epochs", "2"])):
        path = folder / f"{name}.model"
        proc = subprocess.run([sys.executable, "-m", "kernsolve.cli.train", "-q", *options,
                               str(data), str(path)], env=package_env(),
                              capture_output=True, timeout=HANG_GUARD)
        assert proc.returncode == 0, proc.stderr
        out[name] = path.read_bytes()
    return out


def _parallel(cases, fn):
    """Run every case (two processes at a time); report all the failures."""
    failures = []

    def guarded(case):
        try:
            fn(case)
        except BaseException as exc:          # AssertionError, pytest's Failed
            failures.append(f"case {case[0]}: {exc}")

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(guarded, cases))
    assert not failures, "\n".join(sorted(failures))


# ------------------------------------------------------------------ the cases

def test_fuzz_data_files(tmp_path):
    rng = random.Random(15)
    cases = []
    for i in range(N_CASES["data"]):
        tool = ["train", "scale", "predict"][i % 3]
        cases.append((i, tool, _data_case(rng)))
    model = tmp_path / "good.model"
    data = tmp_path / "good"
    data.write_text("".join(HEART))
    subprocess.run([sys.executable, "-m", "kernsolve.cli.train", "-q", str(data), str(model)],
                   env=package_env(), check=True, timeout=HANG_GUARD)

    def one(case):
        i, tool, text = case
        folder = tmp_path / f"c{i}"
        folder.mkdir()
        path = folder / "data"
        path.write_bytes(text)
        (folder / "in.model").write_bytes(model.read_bytes())
        if tool == "train":
            args, output = ["-q", "data", "out.model"], "out.model"
        elif tool == "scale":
            args, output = ["-s", "range", "data"], "range"
        else:
            args, output = ["data", "in.model", "out"], "out"
        code, out, err, _ = _run(folder, tool, args, output)
        _check(tool, args, code, out, err, ["data"])
        if code == 0 and tool == "predict":
            n_rows = sum(1 for line in text.decode("latin-1").splitlines()
                         if line.split("#")[0].strip())
            assert len((folder / "out").read_text().splitlines()) == n_rows

    _parallel(cases, one)


def test_fuzz_model_files(tmp_path, models):
    rng = random.Random(16)
    data = tmp_path / "heart"
    data.write_text("".join(HEART[:30]))
    cases = []
    for i in range(N_CASES["model"]):
        kind = ["libsvm", "dsg", "eigenpro"][i % 3]
        text = models[kind]
        for _ in range(rng.randrange(1, 3)):
            text = _mutate_bytes(rng, text)
        cases.append((i, kind, text))

    def one(case):
        i, kind, text = case
        folder = tmp_path / f"m{i}"
        folder.mkdir()
        (folder / "test").write_bytes(data.read_bytes())
        (folder / "bad.model").write_bytes(text)
        args = ["-b", "1", "test", "bad.model", "out"] if kind == "libsvm" and i % 2 \
            else ["test", "bad.model", "out"]
        code, out, err, _ = _run(folder, "predict", args, "out")
        _check("predict", args, code, out, err, ["bad.model", "-b"])
        if code == 0:
            lines = (folder / "out").read_text().splitlines()
            assert len(lines) in (30, 31)                 # -b 1 adds a header line

    _parallel(cases, one)


OPTION_POOL = [
    ("-s", ["0", "1", "2", "3", "4", "5", "-1", "x"]),
    ("-t", ["0", "1", "2", "3", "5", "6", "4"]),
    ("-c", ["1", "0", "-1", "1e308", "inf", "nan", "abc"]),
    ("-g", ["0.1", "0", "-1", "median", "1e308"]),
    ("-d", ["3", "0", "-1", "1e9", "2.5"]),
    ("-n", ["0.5", "0", "1", "1.5"]),
    ("-e", ["0.001", "0", "-1"]),
    ("-m", ["100", "0", "1e12"]),
    ("-b", ["0", "1", "2"]),
    ("-h", ["0", "1", "2"]),
    ("-v", ["2", "5", "1", "1000"]),
    ("-w1", ["2", "-1", "x"]),
    ("--solver", ["smo", "sbp", "dsg", "udsg", "cdsg", "pegasos", "sdca", "perceptron",
                  "eigenpro", "kernel-sgd", "nope"]),
    ("--epochs", ["1", "0", "-1", "1e9"]),
    ("--threads", ["1", "2", "0", "-1", "x"]),
    ("--seed", ["0", "-1", "18446744073709551616"]),
    ("--batch-size", ["8", "0", "1e12"]),
    ("--bias", ["0", "1", "2"]),
    ("--nonsense", ["1"]),
]


def test_fuzz_options(tmp_path):
    rng = random.Random(17)
    data = tmp_path / "heart"
    data.write_text("".join(HEART[:60]))
    cases = []
    for i in range(N_CASES["options"]):
        chosen = rng.sample(OPTION_POOL, rng.randrange(1, 5))
        args = []
        for name, values in chosen:
            args += [name, rng.choice(values)]
        # long runs are not the point: bound the work of the iterative solvers
        if "--epochs" not in args and any(a in args for a in ("sbp", "dsg", "udsg", "cdsg",
                                                             "eigenpro", "kernel-sgd")):
            args += ["--epochs", "1"]
        cases.append((i, args))

    def one(case):
        i, args = case
        folder = tmp_path / f"o{i}"
        folder.mkdir()
        (folder / "heart").write_bytes(data.read_bytes())
        code, out, err, _ = _run(folder, "train", ["-q", *args, "heart", "out.model"],
                                 "out.model")
        names = [a for a in args if a.startswith("-")] + ["heart"]
        if "-v" in args:
            names.append("n-fold cross validation")      # svm-train's own words
        _check("train", args, code, out, err, names)
        if code == 0 and "-v" not in args:
            kernsolve.load_model(folder / "out.model")    # what was written loads back

    _parallel(cases, one)


def test_fuzz_output_paths(tmp_path):
    data = tmp_path / "heart"
    data.write_text("".join(HEART[:40]))
    model = tmp_path / "m.model"
    subprocess.run([sys.executable, "-m", "kernsolve.cli.train", "-q", str(data), str(model)],
                   env=package_env(), check=True, timeout=HANG_GUARD)
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "heart").write_bytes(data.read_bytes())
    (folder / "m.model").write_bytes(model.read_bytes())
    (folder / "adir").mkdir()
    (folder / "target").write_text("old\n")
    os.symlink("target", folder / "link")
    os.symlink("missing/x", folder / "dangling-in-missing-dir")
    for output, ok in (("adir", False), ("no/such/dir/out", False), ("link", True),
                       ("dangling-in-missing-dir", False), ("/dev/null", True),
                       ("out", True), ("", False)):
        args = ["heart", "m.model", output] if output else ["heart", "m.model"]
        changed = "target" if output == "link" else output
        code, out, err, _ = _run(folder, "predict", args,
                                 changed if ok and not changed.startswith("/") else None)
        _check("predict", args, code, out, err, [output or "Usage", "output", "usage"])
        assert (code == 0) == ok, (output, err)
        assert os.path.islink(folder / "link")


def test_fuzz_scale_predict_and_grid_options(tmp_path, models):
    # the other three commands' own options, good and bad, on a small file
    data = tmp_path / "heart"
    data.write_text("".join(HEART[:40]))
    (tmp_path / "m.model").write_bytes(models["libsvm"])
    (tmp_path / "range").write_text("x\n-1 1\n1 0 1\n2 -1 1\n")
    (tmp_path / "badrange").write_text("x\n-1 1\n99999999999999999999 0 1\n")
    cases = [
        ("scale", ["-l", "0", "-u", "1", "heart"], True),
        ("scale", ["-l", "1", "-u", "0", "heart"], False),
        ("scale", ["-l", "x", "heart"], False),
        ("scale", ["-y", "0", "1", "heart"], True),
        ("scale", ["-r", "range", "heart"], True),
        ("scale", ["-r", "badrange", "heart"], False),
        ("scale", ["-r", "missing", "heart"], False),
        ("scale", ["-s", "r2", "-r", "range", "heart"], False),
        ("predict", ["-b", "2", "heart", "m.model", "out"], False),
        ("predict", ["-q", "heart", "m.model", "out"], True),
        ("predict", ["--threads", "0", "heart", "m.model", "out"], False),
        ("predict", ["-z", "heart", "m.model", "out"], False),
        ("grid", ["-log2c", "0,1,1", "-log2g", "-3,-2,1", "-v", "2", "-out", "null",
                  "-png", "null", "heart"], True),
        ("grid", ["-log2c", "0,1,0", "-v", "2", "heart"], False),
        ("grid", ["-log2c", "0,1,1e-300", "-v", "2", "heart"], False),
        ("grid", ["-v", "1", "heart"], False),
    ]

    def one(case):
        i, (tool, args, ok) = case
        folder = tmp_path / f"s{i}"
        folder.mkdir()
        for name in ("heart", "m.model", "range", "badrange"):
            (folder / name).write_bytes((tmp_path / name).read_bytes())
        output = {"predict": "out", "scale": "r2" if "r2" in args else None}.get(tool)
        if tool == "grid":
            output = "heart.out"
        code, out, err, _ = _run(folder, tool, args, output)
        names = [a for a in args if a.startswith("-")] + ["heart", "range", "badrange",
                                                          "missing", "m.model"]
        _check(tool, args, code, out, err, names)
        assert (code == 0) == ok, (tool, args, err)

    _parallel(list(enumerate(cases)), one)
