"""What the benchmark scripts share: where the data sets are, the machine's
load, medians, the environment and timing of child processes, the data files
made from the shared data sets, and the accuracy of a prediction file.

One owner for each; every script imports what it uses from here.  The scripts
run from the repository root (``python benchmarks/bench_X.py``), so this
folder is on ``sys.path`` and ``import benchlib`` finds this file.

* ``DATA``: the shared data sets (``KERNSOLVE_SHARED_DATA``, else
  ``../shared/data`` beside the repository).
* ``load_average``, ``load_averages``: the load to record with every number.
* ``median``: the statistic of the tables.
* ``tree_env``, ``child_env``: the environment of a child (this tree, or
  ``--kernsolve-path``, first on ``PYTHONPATH``; ``child_env`` adds the thread
  count and the OpenMP wait policy, and byte-compiles the tree once).
* ``run_process``: a child's wall time, CPU time, exit code and its own peak
  RSS (GNU time).
* ``prepare``: the training and test files of a problem (decompressed from
  ``DATA``, labels mapped, held-out split, first rows), made once in a work
  folder.
* ``accuracy_from_files``: a prediction file against the test file's labels.
"""
import compileall
import lzma
import os
import signal
import subprocess
import threading
import time
from statistics import median  # noqa: F401 (the scripts' one median)

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DATA = os.environ.get("KERNSOLVE_SHARED_DATA",
                      os.path.join(REPO, "..", "shared", "data"))
SPLIT_SEED = 16


# ---------------------------------------------------------------- the machine's load

def load_average():
    """The 1-minute load average (nan where the system keeps none)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def load_averages():
    """The 1-, 5- and 15-minute load averages as "0.52 0.61 0.70"."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# ---------------------------------------------------------------- data

def _lines(name, n_rows=None):
    with lzma.open(os.path.join(DATA, name + ".xz"), "rb") as src:
        for k, line in enumerate(src):
            if n_rows is not None and k >= n_rows:
                break
            yield line


def _map_labels(lines, label_map):
    default = label_map.get(None)
    for line in lines:
        label, sep, rest = line.partition(b" ")
        new = label_map.get(label.decode(), default)
        yield (new.encode() if new is not None else label) + sep + rest


def _write(path, lines):
    tmp = path + ".part"
    with open(tmp, "wb") as f:
        for line in lines:
            f.write(line)
    os.replace(tmp, path)


def holdout_split(n, seed=SPLIT_SEED):
    """(train rows, test rows) of a held-out split, each in file order: the
    first n // 5 of ``RandomState(seed).permutation(n)`` are the test rows
    (NumPy's legacy generator: its stream is frozen across versions)."""
    perm = np.random.RandomState(seed).permutation(n)
    test = np.zeros(n, dtype=bool)
    test[perm[:n // 5]] = True
    return np.flatnonzero(~test), np.flatnonzero(test)


def prepare(workdir, cfg, n_rows=None):
    """The training and test files of a problem (decompressed, labels mapped,
    split, sliced to the first n_rows lines each), made once in workdir;
    ``cfg["train_path"]``, if given, is the training file itself."""
    name = cfg["name"]
    full_train = cfg.get("train_path") or os.path.join(workdir, f"{name}.train")
    full_test = os.path.join(workdir, f"{name}.test")
    if not (os.path.exists(full_train) and os.path.exists(full_test)):
        # Streamed, so this process stays small (its peak RSS is the floor of
        # every child's ru_maxrss when /usr/bin/time is missing).
        label_map = cfg.get("label_map")

        def source(name, n=None):
            lines = _lines(name, n)
            return _map_labels(lines, label_map) if label_map else lines

        if cfg["test"] is None:
            n = sum(1 for _ in source(cfg["train"], cfg.get("train_rows")))
            tr, te = holdout_split(n)
            is_test = np.zeros(n, dtype=bool)
            is_test[te] = True
            _write(full_test, (line for k, line in enumerate(
                source(cfg["train"], cfg.get("train_rows"))) if is_test[k]))
            _write(full_train, (line for k, line in enumerate(
                source(cfg["train"], cfg.get("train_rows"))) if not is_test[k]))
        else:
            _write(full_test, source(cfg["test"]))
            if "train_path" not in cfg:     # (a training file of the caller's own)
                _write(full_train, source(cfg["train"], cfg.get("train_rows")))
    if not n_rows:
        return full_train, full_test
    return tuple(prefix_file(full, n_rows) for full in (full_train, full_test))


def prefix_file(full, n_rows, folder=None):
    """The first n_rows lines of the file ``full``, written once beside it
    (or in ``folder``) as ``NAME.n_rows``; its path."""
    path = os.path.join(folder or os.path.dirname(full), f"{os.path.basename(full)}.{n_rows}")
    if not os.path.exists(path):
        with open(full, "rb") as f:
            _write(path, (line for _, line in zip(range(n_rows), f)))
    return path


def accuracy_from_files(test_path, predictions_path):
    """Percent of the test file's labels that the prediction file repeats
    (labels compared as numbers, so ``+1``, ``1`` and ``1.0`` agree)."""
    with open(test_path, "rb") as t, open(predictions_path, "rb") as p:
        truth = [float(line.split(None, 1)[0]) for line in t if line.strip()]
        pred = [float(line.split(None, 1)[0]) for line in p if line.strip()]
    if len(pred) != len(truth) or not truth:
        raise ValueError(f"{predictions_path}: {len(pred)} predictions for "
                         f"{len(truth)} test rows")
    return 100.0 * sum(a == b for a, b in zip(truth, pred)) / len(truth)


# ---------------------------------------------------------------- child processes

_COMPILED = set()


def _byte_compile(path):
    """Compile the .py files of the kernsolve under ``path`` once, as pip does
    when it installs a wheel.  Where PYTHONDONTWRITEBYTECODE is set (as on
    our CI and dev machines) a child would otherwise compile every kernsolve
    module it imports, each run: about 30 ms of a whole command, which no
    installed copy pays."""
    if path not in _COMPILED:
        compileall.compile_dir(os.path.join(path, "kernsolve"), quiet=1)
        _COMPILED.add(path)


def tree_env(kernsolve_path=None, keep_pythonpath=True, **extra):
    """This process's environment with the kernsolve at ``kernsolve_path``
    (default: this tree) first on ``PYTHONPATH`` (alone on it when
    ``keep_pythonpath`` is false) and the variables in ``extra``."""
    path = os.path.abspath(kernsolve_path or REPO)
    if keep_pythonpath:
        path += os.pathsep + os.environ.get("PYTHONPATH", "")
    return dict(os.environ, PYTHONPATH=path, **extra)


def child_env(threads, wait_policy, kernsolve_path=None):
    """``tree_env`` with ``threads`` OpenMP threads and, if given, the wait
    policy, the tree byte-compiled first."""
    _byte_compile(kernsolve_path or REPO)
    env = tree_env(kernsolve_path, OMP_NUM_THREADS=str(threads))
    if wait_policy:
        env["OMP_WAIT_POLICY"] = wait_policy
    return env


TIME = "/usr/bin/time"


def run_process(argv, env, log_path, timeout):
    """Run argv with stdout and stderr into log_path: wall seconds, CPU
    seconds (user + system) and exit code of that child alone (``os.wait4``),
    its peak RSS in MB, and the log's text.

    The peak RSS comes from GNU time (``/usr/bin/time -f %M``) when it is
    installed: Linux carries a process's high-water mark across ``exec``, so
    the ``ru_maxrss`` of a child forked from this Python process is at least
    this process's own peak; GNU time's child is forked from a 1 MB process.
    Without it, ``maxrss_source`` says the figure is wait4's upper bound."""
    rss_path = log_path + ".rss"
    use_time = os.access(TIME, os.X_OK)
    full = [TIME, "-f", "%M", "-o", rss_path, *argv] if use_time else list(argv)
    with open(log_path, "wb") as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen(full, env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        killer = threading.Timer(timeout, os.killpg, (proc.pid, signal.SIGKILL))
        killer.start()
        try:
            _, status, ru = os.wait4(proc.pid, 0)
        finally:
            killer.cancel()
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    with open(log_path, "rb") as f:
        text = f.read().decode("utf-8", "replace")
    maxrss, source = ru.ru_maxrss / 1024.0, "wait4 (upper bound)"
    if use_time:
        try:
            with open(rss_path) as f:
                maxrss, source = int(f.read().split()[-1]) / 1024.0, "GNU time"
        except (OSError, ValueError, IndexError):
            pass
    timed_out = wall >= timeout and proc.returncode != 0
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "maxrss_mb": maxrss,
            "maxrss_source": source, "returncode": proc.returncode,
            "timed_out": timed_out, "log": text}
