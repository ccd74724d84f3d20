"""SMO benchmark: kernsolve against LIBSVM's and ThunderSVM's command lines,
libsvm-official and sklearn.svm.SVC.

Same script, same machine, one run after the other, each run its own process.

Peers (``--peers``, comma-separated):

* ``kernsolve-cli``: ``python -m kernsolve.cli.train`` / ``.predict`` (what a
  user runs), ``--threads N``.
* ``libsvm-cli``: LIBSVM's ``svm-train`` / ``svm-predict`` built serially, from
  the folder in ``KERNSOLVE_BENCH_LIBSVM``; one thread (run once, at 1 thread,
  and compared at every thread count: a serial program's time does not depend
  on it).
* ``libsvm-omp-cli``: the same built with OpenMP, from
  ``KERNSOLVE_BENCH_LIBSVM_OMP``; ``OMP_NUM_THREADS=N``.
* ``thundersvm``: ``thundersvm-train`` / ``thundersvm-predict`` from the folder
  in ``KERNSOLVE_BENCH_THUNDERSVM``; ``-o N``.  It has no shrinking option
  (it warns that ``-h`` is not supported), so ``-h 1`` is not passed; its
  ``-m`` is its whole memory budget.
* ``kernsolve``, ``libsvm`` (libsvm-official's ``svm_train``), ``sklearn``
  (``SVC``, single-threaded): in-process, the training call alone timed
  (reading excluded), as in issue 3's tables.

A command-line peer whose variable is unset is skipped with a printed line.
``benchmarks/README.md`` says how the peers were built.

The command-line peers are timed as whole processes: training wall time
(reading the data, training, writing the model), prediction wall time
separately, CPU time and peak RSS of each child (``os.wait4``).  Test
accuracy is computed from each peer's prediction file against the test
labels (the same rule for every peer; the printed accuracy is kept as
``printed_accuracy``), the number of SVs is the model file's ``total_sv``,
``#iter`` the sum of LIBSVM's printed ``#iter`` (ThunderSVM prints none).

Problems (``--configs``, indices or names; default: issue 16's six):

====  ==============  ==================================================  ====================
 idx  name            data                                                options
====  ==============  ==================================================  ====================
 0    a9a-m100        a9a -> a9a.t                                        -c 100 -g 0.005 -m 100
 1    a9a-c1-m100     a9a -> a9a.t                                        -c 1 -g 0.05 -m 100
 2    ijcnn1-m100     ijcnn1 -> ijcnn1.t                                  -c 32 -g 2 -m 100
 3    a9a             a9a -> a9a.t                                        -c 100 -g 0.005
 4    ijcnn1          ijcnn1 -> ijcnn1.t                                  -c 32 -g 2
 5    w8a             w8a, held-out split (below)                         -c 8 -g 0.03
 6    mushrooms       mushrooms (labels 1/2), held-out split              -c 1 -g 0.01
 7    fmnist8         Fashion-MNIST, 8 -> +1, others -> -1; test .t       -c 1000 -g 0.02
 8    fmnist10        Fashion-MNIST first 20000 rows, 10 classes; .t      -c 10 -g 0.02
 9    fmnist10-m100   as fmnist10                                         -c 10 -g 0.02 -m 100
10    fmnist10-40k-   Fashion-MNIST first 40000 rows, 10 classes; .t      -c 10 -g 0.02 -m 100
      m100
====  ==============  ==================================================  ====================

9-10 are LIBSVM's default cache on dense rows (the position-ordered copy
against ``-m``); 0-2 are issue 3's (100 MB cache, eps 1e-3, shrinking: LIBSVM's defaults);
3-8 are issue 16's, all with ``-m 1000 -e 0.001 -h 1``.  w8a and mushrooms
have no test file: the rows are split once by
``numpy.random.RandomState(16).permutation(n)``, the first ``n // 5`` of it
(in file order) are the test file, the rest (in file order) the training
file -- the same two files for every peer.

``--quick`` trains on the first 3000 rows of each training file and tests on
the first 3000 rows of each test file (``--rows`` to change), so the whole
table is checked in a few minutes.

Usage::

    python benchmarks/bench_smo.py --quick       # every configured peer, slices
    python benchmarks/bench_smo.py --repeat 3 --json smo16.json --markdown smo16.md
    python benchmarks/bench_smo.py --configs 0,2 --peers kernsolve,libsvm --threads 1
    python benchmarks/bench_smo.py --configs fmnist8 --threads 2

``--repeat N`` runs every (peer, threads) N times, round by round (so a
change in the machine's load hits every peer alike); the tables give medians.
``--label`` names the kernsolve build in the tables (with
``--kernsolve-path``: before/after comparisons in one JSON log).
``--kernsolve-path DIR`` imports kernsolve from DIR (e.g. a frozen copy of
the build, so editing the tree during a long run does not change what is
measured).

The last table ("kernsolve against the fastest peer") gives, per problem and
thread count, kernsolve's median training time, the fastest peer's, their
ratio, and each one's test accuracy and number of SVs: ``kernsolve-cli``
against the command-line peers when it ran, else the in-process
``kernsolve`` against libsvm-official and scikit-learn.
"""
import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

from benchlib import (REPO, TIME, accuracy_from_files, child_env,  # noqa: F401 (re-exported)
                      holdout_split, load_average, median, prepare, run_process)

# How the data of a problem is made from the shared files: a training file, a
# test file (None: a held-out split of the training file), the width, LIBSVM's
# options, and an optional label map / first rows of the training file.
_ISSUE16 = {"cache_mb": 1000.0}
CONFIGS = [
    dict(name="a9a-m100", train="a9a", test="a9a.t", n_features=123, C=100.0, gamma=0.005,
         cache_mb=100.0),
    dict(name="a9a-c1-m100", train="a9a", test="a9a.t", n_features=123, C=1.0, gamma=0.05,
         cache_mb=100.0),
    dict(name="ijcnn1-m100", train="ijcnn1", test="ijcnn1.t", n_features=22, C=32.0,
         gamma=2.0, cache_mb=100.0),
    dict(name="a9a", train="a9a", test="a9a.t", n_features=123, C=100.0, gamma=0.005,
         **_ISSUE16),
    dict(name="ijcnn1", train="ijcnn1", test="ijcnn1.t", n_features=22, C=32.0, gamma=2.0,
         **_ISSUE16),
    dict(name="w8a", train="w8a", test=None, n_features=300, C=8.0, gamma=0.03, **_ISSUE16),
    dict(name="mushrooms", train="mushrooms", test=None, n_features=112, C=1.0, gamma=0.01,
         **_ISSUE16),
    dict(name="fmnist8", train="fashion-mnist.scale", test="fashion-mnist.scale.t",
         n_features=784, C=1000.0, gamma=0.02, label_map={"8": "+1", None: "-1"},
         **_ISSUE16),
    dict(name="fmnist10", train="fashion-mnist.scale", test="fashion-mnist.scale.t",
         n_features=784, C=10.0, gamma=0.02, train_rows=20000, **_ISSUE16),
    dict(name="fmnist10-m100", train="fashion-mnist.scale", test="fashion-mnist.scale.t",
         n_features=784, C=10.0, gamma=0.02, train_rows=20000, cache_mb=100.0),
    dict(name="fmnist10-40k-m100", train="fashion-mnist.scale", test="fashion-mnist.scale.t",
         n_features=784, C=10.0, gamma=0.02, train_rows=40000, cache_mb=100.0),
]
DEFAULT_CONFIGS = ["a9a", "ijcnn1", "w8a", "mushrooms", "fmnist8", "fmnist10"]
EPS = 0.001

# Command-line peers: the environment variable naming their folder, the
# programs in it, whether they use threads, the name in the tables.
CLI_PEERS = {
    "libsvm-cli": ("KERNSOLVE_BENCH_LIBSVM", ("svm-train", "svm-predict"), False, "LIBSVM"),
    "libsvm-omp-cli": ("KERNSOLVE_BENCH_LIBSVM_OMP", ("svm-train", "svm-predict"), True,
                       "LIBSVM OpenMP"),
    "thundersvm": ("KERNSOLVE_BENCH_THUNDERSVM", ("thundersvm-train", "thundersvm-predict"),
                   True, "ThunderSVM"),
}
IN_PROCESS = ["kernsolve", "libsvm", "sklearn"]
PEERS = ["kernsolve-cli", "libsvm-cli", "libsvm-omp-cli", "thundersvm"]
SERIAL = {"libsvm-cli", "sklearn"}
DISPLAY = {"kernsolve-cli": "kernsolve", "kernsolve": "kernsolve (in-process)",
           "libsvm": "libsvm-official", "sklearn": "scikit-learn",
           **{k: v[3] for k, v in CLI_PEERS.items()}}


# ---------------------------------------------------------------- parsers

def parse_train_log(text):
    """LIBSVM's (and kernsolve-train's) training output: the SMO iterations
    summed over the sub-problems (one ``#iter`` line each), the objectives,
    and ``Total nSV``.  Missing fields are None."""
    iters = [int(v) for v in re.findall(r"#iter = (\d+)", text)]
    objs = [float(v) for v in re.findall(r"\bobj = (\S+?),", text)]
    m = re.search(r"Total nSV = (\d+)", text)
    return {"n_iter": sum(iters) if iters else None,
            "obj": objs if objs else None,
            "n_sv": int(m.group(1)) if m else None}


def parse_thundersvm_train_log(text):
    """ThunderSVM's training log: its objectives (``obj = ...``) and the total
    of its unique SVs.  Its ``global iter`` counts outer rounds of a batched
    working set, not SMO steps: no #iter."""
    objs = [float(v) for v in re.findall(r"\bobj = (\S+)", text)]
    m = re.findall(r"#total unique sv = (\d+)", text)
    return {"n_iter": None, "obj": objs if objs else None,
            "n_sv": int(m[-1]) if m else None}


def parse_predict_output(text):
    """The accuracy a prediction command printed, in percent: LIBSVM's
    ``Accuracy = 85.1237% (13859/16281) (classification)`` or ThunderSVM's
    ``Accuracy = 0.851237`` (a fraction).  None when absent."""
    m = re.search(r"Accuracy = ([0-9.eE+-]+)(%?)", text)
    if not m:
        return None
    v = float(m.group(1))
    return v if m.group(2) else 100.0 * v


def parse_model_header(path):
    """The header of a LIBSVM-format model file (LIBSVM, kernsolve and
    ThunderSVM write the same keywords): ``total_sv``, ``nr_class`` as ints,
    ``nr_sv`` as a list, ``svm_type`` and ``kernel_type`` as strings."""
    out = {}
    with open(path, "rb") as f:
        for raw in f:
            words = raw.decode("ascii", "replace").split()
            if not words:
                continue
            key, vals = words[0], words[1:]
            if key == "SV":
                break
            if key in ("total_sv", "nr_class"):
                out[key] = int(vals[0])
            elif key == "nr_sv":
                out[key] = [int(v) for v in vals]
            elif key in ("svm_type", "kernel_type"):
                out[key] = vals[0]
    return out


# ---------------------------------------------------------------- in-process worker

def _cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _worker(args):
    """Train and test one in-process peer; print one JSON line."""
    peer, train, test = args.peer, args.train, args.test
    C, gamma, n_feat, threads = args.C, args.gamma, args.n_features, args.threads
    cache = args.cache_mb
    out = {"peer": peer, "threads": threads}
    if peer == "kernsolve":
        if args.kernsolve_path:
            sys.path.insert(0, args.kernsolve_path)
        import kernsolve
        y, X = kernsolve.read_problem(train, n_features=n_feat)
        yt, Xt = kernsolve.read_problem(test, n_features=n_feat)
        t0, c0 = time.perf_counter(), _cpu()
        model = kernsolve.train(y, X, f"-s 0 -t 2 -c {C} -g {gamma} -m {cache} -q",
                                n_jobs=threads)
        out["train_s"], out["train_cpu_s"] = time.perf_counter() - t0, _cpu() - c0
        t0 = time.perf_counter()
        _, (acc, _, _), _ = kernsolve.predict(yt, Xt, model, f"-q --threads {threads}")
        out["predict_s"] = time.perf_counter() - t0
        out["accuracy"] = acc
        out["n_sv"] = int(sum(model.n_support)) if hasattr(model, "n_support") else None
        out["n_iter"] = model.stats.get("n_iter")
        out["n_kernel_evals"] = model.stats.get("n_kernel_evals")
        out["obj"] = model.stats.get("objective", model.stats.get("obj"))
    elif peer == "libsvm":
        from libsvm.svmutil import svm_predict, svm_read_problem, svm_train
        y, X = svm_read_problem(train)
        yt, Xt = svm_read_problem(test)
        # LIBSVM prints to the C stdout: capture it for #iter and obj.
        sys.stdout.flush()
        with tempfile.TemporaryFile() as f:
            saved = os.dup(1)
            os.dup2(f.fileno(), 1)
            try:
                t0, c0 = time.perf_counter(), _cpu()
                model = svm_train(y, X, f"-s 0 -t 2 -c {C} -g {gamma} -m {cache}")
                out["train_s"], out["train_cpu_s"] = time.perf_counter() - t0, _cpu() - c0
            finally:
                os.dup2(saved, 1)
                os.close(saved)
            f.seek(0)
            log = f.read().decode()
        t0 = time.perf_counter()
        _, (acc, _, _), _ = svm_predict(yt, Xt, model, "-q")
        out["predict_s"] = time.perf_counter() - t0
        out["accuracy"] = acc
        out["n_sv"] = model.get_nr_sv()
        parsed = parse_train_log(log)
        out["n_iter"] = parsed["n_iter"]
        out["obj"] = parsed["obj"][0] if parsed["obj"] and len(parsed["obj"]) == 1 \
            else parsed["obj"]
        out["n_kernel_evals"] = None
    elif peer == "sklearn":
        from sklearn.datasets import load_svmlight_file
        from sklearn.svm import SVC
        X, y = load_svmlight_file(train, n_features=n_feat)
        Xt, yt = load_svmlight_file(test, n_features=n_feat)
        # SVC wants 32-bit CSR indices.
        for M in (X, Xt):
            M.indices = M.indices.astype(np.int32)
            M.indptr = M.indptr.astype(np.int32)
        t0, c0 = time.perf_counter(), _cpu()
        clf = SVC(C=C, gamma=gamma, kernel="rbf", cache_size=cache, tol=EPS).fit(X, y)
        out["train_s"], out["train_cpu_s"] = time.perf_counter() - t0, _cpu() - c0
        t0 = time.perf_counter()
        out["accuracy"] = 100.0 * float((clf.predict(Xt) == yt).mean())
        out["predict_s"] = time.perf_counter() - t0
        out["n_sv"] = int(clf.n_support_.sum())
        out["n_iter"] = int(sum(clf.n_iter_))
        out["obj"] = None
        out["n_kernel_evals"] = None
    else:
        raise SystemExit(f"unknown peer {peer}")
    out["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print("RESULT " + json.dumps(out), flush=True)


# ---------------------------------------------------------------- runs

def _run(peer, threads, train, test, cfg, kernsolve_path, timeout, wait_policy=None):
    """One in-process peer, in its own Python process."""
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", peer,
           "--train", train, "--test", test, "--n-features", str(cfg["n_features"]),
           "--C", repr(cfg["C"]), "--gamma", repr(cfg["gamma"]),
           "--cache-mb", repr(cfg["cache_mb"]), "--threads", str(threads)]
    if kernsolve_path:
        cmd += ["--kernsolve-path", kernsolve_path]
    env = child_env(threads, wait_policy)
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"peer": peer, "threads": threads, "error": f"timeout {timeout}s"}
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return {"peer": peer, "threads": threads,
            "error": (proc.stderr or proc.stdout).strip().splitlines()[-1:]}


def cli_commands(peer, threads, cfg, train, model, test, predictions, folder=None):
    """(train argv, predict argv) of a command-line peer."""
    opts = ["-s", "0", "-t", "2", "-c", repr(cfg["C"]), "-g", repr(cfg["gamma"]),
            "-m", f"{cfg['cache_mb']:g}", "-e", repr(EPS)]
    if peer == "kernsolve-cli":
        py = [sys.executable, "-m"]
        return ([*py, "kernsolve.cli.train", *opts, "-h", "1", "--threads", str(threads),
                 train, model],
                [*py, "kernsolve.cli.predict", "--threads", str(threads),
                 test, model, predictions])
    exe_train, exe_predict = (os.path.join(folder, p) for p in CLI_PEERS[peer][1])
    if peer == "thundersvm":
        return ([exe_train, *opts, "-o", str(threads), train, model],
                [exe_predict, "-o", str(threads), test, model, predictions])
    return ([exe_train, *opts, "-h", "1", train, model],
            [exe_predict, test, model, predictions])


def peer_folder(peer):
    """The folder of a command-line peer's programs, or (None, why not)."""
    var, programs, _, _ = CLI_PEERS[peer]
    folder = os.environ.get(var)
    if not folder:
        return None, f"{var} is not set"
    for p in programs:
        if not os.access(os.path.join(folder, p), os.X_OK):
            return None, f"{os.path.join(folder, p)} is not an executable ({var})"
    return folder, None


def _run_cli(peer, threads, train, test, cfg, folder, workdir, kernsolve_path, timeout,
             wait_policy=None):
    """One command-line peer: training, then prediction, each a timed process."""
    tag = f"{os.path.basename(train)}.{peer}.{threads}"
    model = os.path.join(workdir, tag + ".model")
    predictions = os.path.join(workdir, tag + ".out")
    for path in (model, predictions):
        if os.path.exists(path):
            os.unlink(path)
    tr_argv, pr_argv = cli_commands(peer, threads, cfg, train, model, test, predictions,
                                    folder)
    env = child_env(threads, wait_policy, kernsolve_path)
    # `python -m kernsolve.cli...` puts the working directory first on
    # sys.path: run from a checkout, that checkout's kernsolve would be
    # measured instead of kernsolve_path's (it happened, session 6).
    env["PYTHONSAFEPATH"] = "1"
    out = {"peer": peer, "threads": threads, "timing": "process"}
    tr = run_process(tr_argv, env, os.path.join(workdir, tag + ".train.log"), timeout)
    if tr["returncode"] != 0 or not os.path.exists(model):
        why = f"timeout {timeout}s" if tr["timed_out"] else \
            f"exit {tr['returncode']}: " + " | ".join(tr["log"].strip().splitlines()[-2:])
        return {**out, "error": "train " + why}
    parsed = (parse_thundersvm_train_log if peer == "thundersvm" else parse_train_log)(tr["log"])
    header = parse_model_header(model)
    out.update(train_s=tr["wall"], train_cpu_s=tr["cpu"], maxrss_mb=tr["maxrss_mb"],
               maxrss_source=tr["maxrss_source"],
               n_sv=header.get("total_sv"), n_iter=parsed["n_iter"], obj=parsed["obj"],
               n_kernel_evals=None)
    pr = run_process(pr_argv, env, os.path.join(workdir, tag + ".predict.log"), timeout)
    if pr["returncode"] != 0 or not os.path.exists(predictions):
        why = f"timeout {timeout}s" if pr["timed_out"] else f"exit {pr['returncode']}"
        return {**out, "error": "predict " + why}
    out.update(predict_s=pr["wall"], predict_cpu_s=pr["cpu"], predict_maxrss_mb=pr["maxrss_mb"],
               accuracy=accuracy_from_files(test, predictions),
               printed_accuracy=parse_predict_output(pr["log"]))
    return out


def _wait_policy(forced):
    """How idle OpenMP threads wait in the runs (libgomp's variables)."""
    policy = forced or os.environ.get("OMP_WAIT_POLICY") or "default"
    if not forced and os.environ.get("GOMP_SPINCOUNT"):
        policy += f", GOMP_SPINCOUNT={os.environ['GOMP_SPINCOUNT']}"
    return policy


# ---------------------------------------------------------------- tables

def _fmt(v, spec):
    return "-" if v is None else format(v, spec)


def _cache(r):
    """The run's -m (logs of issue 3 have none: 100 MB, LIBSVM's default)."""
    return r.get("cache_mb", 100.0)


def _peer_name(r):
    return r["peer"] + (f" {r['label']}" if r.get("label") else "")


def markdown(rows):
    lines = ["| data | -c | -g | peer | threads | OMP wait | train s | train CPU s | "
             "peak MB | kernel evals | #iter | nSV | test acc % | predict s | load avg |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['data']} | {r['C']:g} | {r['gamma']:g} | {_peer_name(r)} | "
                         f"{r['threads']} | {r.get('wait_policy', '-')} | "
                         f"error: {r['error']} | | | | | | | | |")
            continue
        lines.append(
            f"| {r['data']} | {r['C']:g} | {r['gamma']:g} | {_peer_name(r)} | {r['threads']} | "
            f"{r.get('wait_policy', '-')} | {_fmt(r.get('train_s'), '.1f')} | "
            f"{_fmt(r.get('train_cpu_s'), '.1f')} | "
            f"{_fmt(r.get('maxrss_mb'), '.0f')} | {_fmt(r.get('n_kernel_evals'), '.4g')} | "
            f"{_fmt(r.get('n_iter'), 'd')} | {_fmt(r.get('n_sv'), 'd')} | "
            f"{_fmt(r.get('accuracy'), '.2f')} | {_fmt(r.get('predict_s'), '.2f')} | "
            f"{_fmt(r.get('load_avg'), '.1f')} |")
    return "\n".join(lines)


def summary(rows):
    """Medians per (data, peer, threads, wait policy), with speed-ups from 1 to
    more threads and libsvm-official's median over each in-process row's."""
    groups = {}
    for r in rows:
        if "error" in r or r.get("train_s") is None:
            continue
        key = (r["data"], r["C"], r["gamma"], _cache(r), r.get("wait_policy", "-"),
               _peer_name(r), r["threads"])
        groups.setdefault(key, []).append(r)
    med = {k: (median([r["train_s"] for r in v]), median([r["train_cpu_s"] for r in v]),
               len(v), median([r["load_avg"] for r in v])) for k, v in groups.items()}
    lines = ["| data | -c | -g | -m | OMP wait | peer | threads | runs | median train s | "
             "median CPU s | vs 1 thread | libsvm-official / this (wall) | median load |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for k in sorted(med):
        data, C, gamma, cache, wp, peer, t = k
        w, c, n, load = med[k]
        one = med.get(k[:6] + (1,))
        ref = med.get((data, C, gamma, cache, wp, "libsvm", t))
        speed = f"{one[0] / w:.2f}x" if one and t != 1 else "-"
        vs = f"{ref[0] / w:.2f}x" if ref and peer.split()[0] in ("kernsolve", "sklearn") \
            else "-"
        lines.append(f"| {data} | {C:g} | {gamma:g} | {cache:g} | {wp} | {peer} | {t} | {n} | "
                     f"{w:.1f} | {c:.1f} | {speed} | {vs} | {load:.1f} |")
    return "\n".join(lines)


def _medians(rs):
    """Median of each measured field over repeated runs (n_sv, accuracy: of the
    runs, which agree unless the peer is not deterministic)."""
    out = {"runs": len(rs)}
    for key in ("train_s", "predict_s", "maxrss_mb", "accuracy", "n_sv", "load_avg"):
        v = [r[key] for r in rs if r.get(key) is not None]
        out[key] = median(v) if v else None
    return out


def versus(rows):
    """Per problem and thread count: kernsolve's median training time, the
    fastest peer and its, their ratio, each one's accuracy and #SV.

    Like is compared with like: ``kernsolve-cli`` against the command-line
    peers (whole processes); without it, the in-process ``kernsolve`` against
    libsvm-official and scikit-learn.  A serial peer's one-thread runs stand
    at every thread count."""
    groups = {}
    for r in rows:
        if "error" in r or r.get("train_s") is None:
            continue
        groups.setdefault((r["data"], r["C"], r["gamma"], _cache(r),
                           r.get("wait_policy", "-")), []).append(r)
    lines = ["| problem | threads | kernsolve s | fastest peer | its s | peer / kernsolve "
             "| kernsolve acc % | peer acc % | kernsolve #SV | peer #SV "
             "| every peer: acc % / #SV / train s | predict s kernsolve / fastest peer "
             "| peak MB kernsolve / peer | load |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for key in groups:
        rs = groups[key]
        has_cli = any(r["peer"] == "kernsolve-cli" for r in rs)
        ours = {"kernsolve-cli"} if has_cli else {"kernsolve"}
        theirs = set(CLI_PEERS) if has_cli else {"libsvm", "sklearn"}
        threads = sorted({r["threads"] for r in rs if r["peer"] in ours})
        for t in threads:
            mine = [r for r in rs if r["peer"] in ours and r["threads"] == t]
            by_label = {}
            for r in mine:
                by_label.setdefault(_peer_name(r), []).append(r)
            peers = {}
            for r in rs:
                if r["peer"] in theirs and (r["threads"] == t or
                                            (r["peer"] in SERIAL and r["threads"] == 1)):
                    peers.setdefault(r["peer"], []).append(r)
            pm = {p: _medians(v) for p, v in peers.items()}
            best = min(pm, key=lambda p: pm[p]["train_s"]) if pm else None
            each = "; ".join(
                f"{DISPLAY.get(p, p)}{' (1 thr)' if p in SERIAL and t != 1 else ''} "
                f"{_fmt(m['accuracy'], '.2f')} / {_fmt(m['n_sv'], '.0f')} / "
                f"{_fmt(m['train_s'], '.1f')}"
                for p, m in sorted(pm.items()))
            for name, rk in sorted(by_label.items()):
                k = _medians(rk)
                if best is None:
                    b = {"train_s": None, "accuracy": None, "n_sv": None, "predict_s": None,
                         "maxrss_mb": None}
                    ratio = "-"
                else:
                    b = pm[best]
                    ratio = f"{b['train_s'] / k['train_s']:.2f}x"
                best_name = DISPLAY.get(best, best) if best else "-"
                pred = (f"{_fmt(k['predict_s'], '.2f')} / {_fmt(b['predict_s'], '.2f')}"
                        + (f" ({b['predict_s'] / k['predict_s']:.2f}x)"
                           if k["predict_s"] and b["predict_s"] else ""))
                label = name.replace("kernsolve-cli", "kernsolve")
                lines.append(
                    f"| {key[0]} `-c {key[1]:g} -g {key[2]:g}`"
                    f"{'' if key[4] in ('-', 'default') else ' (' + key[4] + ')'} | {t} | "
                    f"{_fmt(k['train_s'], '.1f')}{'' if label == 'kernsolve' else ' (' + label + ')'}"
                    f" | {best_name} | {_fmt(b['train_s'], '.1f')} | {ratio} | "
                    f"{_fmt(k['accuracy'], '.2f')} | {_fmt(b['accuracy'], '.2f')} | "
                    f"{_fmt(k['n_sv'], '.0f')} | {_fmt(b['n_sv'], '.0f')} | {each} | {pred} | "
                    f"{_fmt(k['maxrss_mb'], '.0f')} / {_fmt(b['maxrss_mb'], '.0f')} | "
                    f"{_fmt(k['load_avg'], '.1f')} |")
    return "\n".join(lines)


# ---------------------------------------------------------------- driver

def _configs(spec):
    if spec is None:
        names = DEFAULT_CONFIGS
    else:
        names = [s.strip() for s in spec.split(",") if s.strip()]
    by_name = {c["name"]: c for c in CONFIGS}
    out = []
    for s in names:
        if s.isdigit() and int(s) < len(CONFIGS):
            out.append(CONFIGS[int(s)])
        elif s in by_name:
            out.append(by_name[s])
        else:
            raise SystemExit(f"--configs: unknown problem {s!r} (indices 0..{len(CONFIGS) - 1} "
                             f"or names {', '.join(by_name)})")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="train on the first 3000 rows, test on the first 3000")
    ap.add_argument("--rows", type=int, default=None, help="rows per slice (with --quick)")
    ap.add_argument("--threads", default="1,2", help="thread counts, e.g. 1,2")
    ap.add_argument("--peers", default=",".join(PEERS),
                    help=f"comma-separated, from {', '.join(PEERS + IN_PROCESS)}")
    ap.add_argument("--configs", default=None,
                    help="indices or names of problems, e.g. 0,2 or a9a,fmnist8")
    ap.add_argument("--json", default=None, help="append results (JSON lines) here")
    ap.add_argument("--markdown", default=None, help="write the tables here")
    ap.add_argument("--kernsolve-path", default=None)
    ap.add_argument("--timeout", type=float, default=3600.0)
    ap.add_argument("--wait-policy", default=None, choices=["active", "passive"],
                    help="OMP_WAIT_POLICY for every peer (passive: idle OpenMP threads "
                         "sleep instead of spinning, which matters on a busy machine)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs per (peer, threads), round by round; prints medians")
    ap.add_argument("--label", default=None,
                    help="name of this kernsolve build in the tables (e.g. a commit)")
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(),
                                                      "kernsolve-bench-data"))
    # worker mode (internal)
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--peer", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--train", help=argparse.SUPPRESS)
    ap.add_argument("--test", help=argparse.SUPPRESS)
    ap.add_argument("--n-features", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--C", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--gamma", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--cache-mb", type=float, default=100.0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        args.peer = args.worker
        args.threads = int(args.threads)
        return _worker(args)

    os.makedirs(args.workdir, exist_ok=True)
    n_rows = (args.rows or 3000) if args.quick else None
    threads = [int(t) for t in args.threads.split(",")]
    configs = _configs(args.configs)
    peers, folders = [], {}
    for peer in args.peers.split(","):
        if peer in CLI_PEERS:
            folder, why = peer_folder(peer)
            if folder is None:
                print(f"# skipped {peer}: {why}", flush=True)
                continue
            folders[peer] = folder
        elif peer not in IN_PROCESS and peer != "kernsolve-cli":
            raise SystemExit(f"--peers: unknown peer {peer!r} "
                             f"(known: {', '.join(PEERS + IN_PROCESS)})")
        peers.append(peer)
    rows = []
    print(f"# bench_smo: {time.strftime('%Y-%m-%d %H:%M:%S')} "
          f"{'quick ' + str(n_rows) + ' rows' if n_rows else 'full data'}; "
          f"load average {load_average():.1f}", flush=True)
    for cfg in configs:
        train, test = prepare(args.workdir, cfg, n_rows)
        for _ in range(args.repeat):
            for peer in peers:
                # Serial peers: one run, at one thread.
                for t in ([1] if peer in SERIAL else threads):
                    if peer in IN_PROCESS:
                        r = _run(peer, t, train, test, cfg, args.kernsolve_path,
                                 args.timeout, args.wait_policy)
                    else:
                        r = _run_cli(peer, t, train, test, cfg, folders.get(peer),
                                     args.workdir, args.kernsolve_path, args.timeout,
                                     args.wait_policy)
                    r.update(data=cfg["name"] + (f"[:{n_rows}]" if n_rows else ""),
                             C=cfg["C"], gamma=cfg["gamma"], cache_mb=cfg["cache_mb"],
                             load_avg=load_average(),
                             wait_policy=_wait_policy(args.wait_policy))
                    if args.label and peer.startswith("kernsolve"):
                        r["label"] = args.label
                    rows.append(r)
                    print(json.dumps(r), flush=True)
                    if args.json:
                        with open(args.json, "a") as f:
                            f.write(json.dumps(r) + "\n")
    if args.json:
        # The tables of everything recorded in the JSON file so far.
        with open(args.json) as f:
            rows = [json.loads(x) for x in f if x.strip()]
    tables = [markdown(rows), summary(rows),
              "kernsolve against the fastest peer (medians):\n\n" + versus(rows)]
    print("\n\n".join(tables))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n\n".join(tables) + "\n")


if __name__ == "__main__":
    main()
