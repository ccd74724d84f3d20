"""SMO benchmark: kernsolve vs libsvm-official vs sklearn.svm.SVC.

Same script, same machine, one run after the other.  Each (peer, threads)
run is a separate Python process, so its peak memory (``ru_maxrss``) is its
own and libsvm-official's OpenMP team follows ``OMP_NUM_THREADS`` set before
the process starts.

Configurations (issue 3):

* a9a -> a9a.t        ``-c 100 -g 0.005`` and ``-c 1 -g 0.05``
* ijcnn1 -> ijcnn1.t  ``-c 32 -g 2``

Measured per run: training wall time, training CPU time (user+sys of the
process during training; on a shared machine it is the steadier figure),
peak RSS, kernel evaluations (kernsolve's counter; the peers do not count),
SMO iterations (kernsolve's counter, libsvm's printed ``#iter``), number of
SVs and test accuracy.

Usage::

    python benchmarks/bench_smo.py               # full datasets (minutes)
    python benchmarks/bench_smo.py --quick       # 3000-row slices, seconds
    python benchmarks/bench_smo.py --json out.json --markdown out.md
    python benchmarks/bench_smo.py --configs 1 --peers kernsolve,libsvm --repeat 3

``--repeat N`` runs every (peer, threads) N times, round by round (so a
change in the machine's load hits every peer alike), and ends with a table of
medians and ratios.  ``--label`` names the kernsolve build in the tables
(with ``--kernsolve-path``: before/after comparisons in one JSON log).

``--kernsolve-path DIR`` imports kernsolve from DIR (e.g. a frozen copy of
the build, so editing the tree during a long run does not change what is
measured).
"""
import argparse
import json
import lzma
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DATA = os.environ.get("KERNSOLVE_SHARED_DATA",
                      os.path.join(REPO, "..", "shared", "data"))

CONFIGS = [
    ("a9a", "a9a.t", 123, 100.0, 0.005),
    ("a9a", "a9a.t", 123, 1.0, 0.05),
    ("ijcnn1", "ijcnn1.t", 22, 32.0, 2.0),
]
PEERS = ["kernsolve", "libsvm", "sklearn"]


# ---------------------------------------------------------------- worker

def _cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _worker(args):
    """Train and test one peer; print one JSON line."""
    peer, train, test = args.peer, args.train, args.test
    C, gamma, n_feat, threads = args.C, args.gamma, args.n_features, args.threads
    out = {"peer": peer, "threads": threads}
    if peer == "kernsolve":
        if args.kernsolve_path:
            sys.path.insert(0, args.kernsolve_path)
        import kernsolve
        y, X = kernsolve.read_problem(train, n_features=n_feat)
        yt, Xt = kernsolve.read_problem(test, n_features=n_feat)
        t0, c0 = time.perf_counter(), _cpu()
        model = kernsolve.train(y, X, f"-s 0 -t 2 -c {C} -g {gamma} -q", n_jobs=threads)
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
                model = svm_train(y, X, f"-s 0 -t 2 -c {C} -g {gamma}")
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
        m = re.search(r"#iter = (\d+)", log)
        out["n_iter"] = int(m.group(1)) if m else None
        m = re.search(r"obj = (\S+),", log)
        out["obj"] = float(m.group(1)) if m else None
        out["n_kernel_evals"] = None
    elif peer == "sklearn":
        from sklearn.datasets import load_svmlight_file
        from sklearn.svm import SVC
        import numpy as np
        X, y = load_svmlight_file(train, n_features=n_feat)
        Xt, yt = load_svmlight_file(test, n_features=n_feat)
        # SVC wants 32-bit CSR indices.
        for M in (X, Xt):
            M.indices = M.indices.astype(np.int32)
            M.indptr = M.indptr.astype(np.int32)
        t0, c0 = time.perf_counter(), _cpu()
        clf = SVC(C=C, gamma=gamma, kernel="rbf", cache_size=100, tol=1e-3).fit(X, y)
        out["train_s"], out["train_cpu_s"] = time.perf_counter() - t0, _cpu() - c0
        t0 = time.perf_counter()
        out["accuracy"] = 100.0 * float((clf.predict(Xt) == yt).mean())
        out["predict_s"] = time.perf_counter() - t0
        out["n_sv"] = int(clf.n_support_.sum())
        out["n_iter"] = int(clf.n_iter_[0])
        out["obj"] = None
        out["n_kernel_evals"] = None
    else:
        raise SystemExit(f"unknown peer {peer}")
    out["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print("RESULT " + json.dumps(out), flush=True)


# ---------------------------------------------------------------- driver

def _prepare(workdir, name, n_rows):
    """Decompress a shared dataset (optionally its first n_rows lines)."""
    suffix = f".{n_rows}" if n_rows else ""
    dst = os.path.join(workdir, name + suffix)
    if not os.path.exists(dst):
        with lzma.open(os.path.join(DATA, name + ".xz"), "rb") as src, \
                open(dst, "wb") as f:
            if n_rows:
                for k, line in enumerate(src):
                    if k >= n_rows:
                        break
                    f.write(line)
            else:
                shutil.copyfileobj(src, f)
    return dst


def _run(peer, threads, train, test, n_feat, C, gamma, kernsolve_path, timeout,
         wait_policy=None):
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(threads)
    if wait_policy:
        env["OMP_WAIT_POLICY"] = wait_policy
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", peer,
           "--train", train, "--test", test, "--n-features", str(n_feat),
           "--C", repr(C), "--gamma", repr(gamma), "--threads", str(threads)]
    if kernsolve_path:
        cmd += ["--kernsolve-path", kernsolve_path]
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


def _wait_policy(forced):
    """How idle OpenMP threads wait in the runs (libgomp's variables)."""
    policy = forced or os.environ.get("OMP_WAIT_POLICY") or "default"
    if not forced and os.environ.get("GOMP_SPINCOUNT"):
        policy += f", GOMP_SPINCOUNT={os.environ['GOMP_SPINCOUNT']}"
    return policy


def _fmt(v, spec):
    return "-" if v is None else format(v, spec)


def markdown(rows):
    lines = ["| data | -c | -g | peer | threads | OMP wait | train s | train CPU s | "
             "peak MB | kernel evals | #iter | nSV | test acc % | load avg |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['data']} | {r['C']:g} | {r['gamma']:g} | {r['peer']} | "
                         f"{r['threads']} | {r.get('wait_policy', '-')} | "
                         f"error: {r['error']} | | | | | | | |")
            continue
        lines.append(
            f"| {r['data']} | {r['C']:g} | {r['gamma']:g} | "
            f"{r['peer'] + (' ' + r['label'] if r.get('label') else '')} | {r['threads']} | "
            f"{r.get('wait_policy', '-')} | {_fmt(r.get('train_s'), '.1f')} | {_fmt(r.get('train_cpu_s'), '.1f')} | "
            f"{_fmt(r.get('maxrss_mb'), '.0f')} | {_fmt(r.get('n_kernel_evals'), '.4g')} | "
            f"{_fmt(r.get('n_iter'), 'd')} | {_fmt(r.get('n_sv'), 'd')} | "
            f"{_fmt(r.get('accuracy'), '.2f')} | {_fmt(r.get('load_avg'), '.1f')} |")
    return "\n".join(lines)


def _median(v):
    v = sorted(v)
    m = len(v) // 2
    return v[m] if len(v) % 2 else 0.5 * (v[m - 1] + v[m])


def summary(rows):
    """Medians per (data, peer, threads, wait policy), with speed-ups from 1 to
    more threads and libsvm-official's median over each kernsolve row's."""
    groups = {}
    for r in rows:
        if "error" in r or r.get("train_s") is None:
            continue
        key = (r["data"], r["C"], r["gamma"], r.get("wait_policy", "-"),
               r["peer"] + (f" {r['label']}" if r.get("label") else ""), r["threads"])
        groups.setdefault(key, []).append(r)
    med = {k: (_median([r["train_s"] for r in v]), _median([r["train_cpu_s"] for r in v]),
               len(v), _median([r["load_avg"] for r in v])) for k, v in groups.items()}
    lines = ["| data | -c | -g | OMP wait | peer | threads | runs | median train s | "
             "median CPU s | vs 1 thread | libsvm-official / this (wall) | median load |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for k in sorted(med):
        data, C, gamma, wp, peer, t = k
        w, c, n, load = med[k]
        one = med.get(k[:5] + (1,))
        ref = med.get((data, C, gamma, wp, "libsvm", t))
        speed = f"{one[0] / w:.2f}x" if one and t != 1 else "-"
        vs = f"{ref[0] / w:.2f}x" if ref and not peer.startswith("libsvm") else "-"
        lines.append(f"| {data} | {C:g} | {gamma:g} | {wp} | {peer} | {t} | {n} | "
                     f"{w:.1f} | {c:.1f} | {speed} | {vs} | {load:.1f} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="train on the first 3000 rows, test on the first 3000")
    ap.add_argument("--rows", type=int, default=None, help="rows per slice (with --quick)")
    ap.add_argument("--threads", default="1,2", help="thread counts, e.g. 1,2")
    ap.add_argument("--peers", default=",".join(PEERS))
    ap.add_argument("--configs", default=None,
                    help="indices into the configuration list, e.g. 0,2")
    ap.add_argument("--json", default=None, help="append results (JSON lines) here")
    ap.add_argument("--markdown", default=None, help="write the table here")
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
    args = ap.parse_args(argv)
    if args.worker:
        args.peer = args.worker
        args.threads = int(args.threads)
        return _worker(args)

    os.makedirs(args.workdir, exist_ok=True)
    n_rows = (args.rows or 3000) if args.quick else None
    threads = [int(t) for t in args.threads.split(",")]
    peers = args.peers.split(",")
    configs = CONFIGS if args.configs is None else \
        [CONFIGS[int(k)] for k in args.configs.split(",")]
    rows = []
    print(f"# bench_smo: {time.strftime('%Y-%m-%d %H:%M:%S')} "
          f"{'quick ' + str(n_rows) + ' rows' if n_rows else 'full data'}; "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    for train_name, test_name, n_feat, C, gamma in configs:
        train = _prepare(args.workdir, train_name, n_rows)
        test = _prepare(args.workdir, test_name, n_rows)
        for _ in range(args.repeat):
            for peer in peers:
                # scikit-learn's SVC is single-threaded: one run.
                for t in ([1] if peer == "sklearn" else threads):
                    r = _run(peer, t, train, test, n_feat, C, gamma,
                             args.kernsolve_path, args.timeout, args.wait_policy)
                    r.update(data=train_name + (f"[:{n_rows}]" if n_rows else ""),
                             C=C, gamma=gamma, load_avg=os.getloadavg()[0],
                             wait_policy=_wait_policy(args.wait_policy))
                    if args.label and peer == "kernsolve":
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
    table = markdown(rows)
    print(table)
    print()
    print(summary(rows))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    main()
