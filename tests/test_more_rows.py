"""Issue 33 item 2's tools: bench_scale.py's chunked peers, ThunderSVM, ``--stream``
and ``--train-rows`` runs, and examples/more_rows.py's extrapolated times.

Oracles, computed here and not by the scripts: scikit-learn on the whole
slice read at once (``load_svmlight_file``), cut into the same chunks and
trained by a ``partial_fit`` loop written out here, for the chunked peers'
predictions; numpy's ``polyfit`` and the closed form ``a n^b`` for the power
law; libsvm-official on the same rows for ThunderSVM's test error; the
in-memory DSG run for the streamed one (DSG's streamed model is the
in-memory one, bit for bit: doc/dsg.md); the line counts of the files.
"""
import csv
import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import package_env, shared_path
from test_bench_scale import C, GAMMA, ROOT, ROWS, bench, load_rows, svmlight

FIGURE = os.path.join(ROOT, "examples", "more_rows.py")


def figure_module():
    spec = importlib.util.spec_from_file_location("more_rows", FIGURE)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(FIGURE))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(os.path.dirname(FIGURE))
    return module


# ------------------------------------------------------------ the chunked peers

@pytest.mark.parametrize("method", ["rbf-sgd", "nystroem-sgd"])
def test_chunked_peer_is_a_partial_fit_loop_over_the_chunks(tmp_path, method):
    from sklearn.kernel_approximation import Nystroem, RBFSampler
    from sklearn.linear_model import SGDClassifier
    shared_path("a9a")
    chunk, components, epochs = 70, 80, 2
    proc = bench(tmp_path, "--methods", method, "--budgets", f"{method}={components}",
                 "--chunk-rows", str(chunk), "--sgd-epochs", str(epochs),
                 "--json", str(tmp_path / "c.json"))
    assert proc.returncode == 0, proc.stderr
    row, = load_rows(tmp_path / "c.json")
    assert row["status"] == "ok" and row["chunk_rows"] == chunk and row["epochs"] == epochs
    assert row["n_train"] == ROWS
    # the oracle: the whole slice in memory, cut into the same chunks
    X, y = svmlight("a9a")
    Xt, _ = svmlight("a9a.t")
    cuts = list(range(0, ROWS, chunk)) + [ROWS]
    chunks = [(X[a:b], y[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]
    fmap = (RBFSampler(gamma=GAMMA, n_components=components, random_state=0)
            if method == "rbf-sgd" else
            Nystroem(gamma=GAMMA, n_components=components, random_state=0))
    fmap.fit(X[:2 * chunk])           # the first chunks in file order, >= components rows
    clf = SGDClassifier(random_state=0, n_jobs=1)
    order = np.random.default_rng(0)
    for _ in range(epochs):
        for i in order.permutation(len(chunks)):
            clf.partial_fit(fmap.transform(chunks[i][0]), chunks[i][1],
                            classes=np.unique(y))
    assert np.array_equal(np.loadtxt(row["predictions"]), clf.predict(fmap.transform(Xt)))


def test_chunks_chosen_from_the_memory_budget(tmp_path):
    """Auto: chunks when rows x components x 8 bytes exceed --peer-memory-mb,
    the whole matrix (SGDClassifier.fit, as before) when they fit."""
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.linear_model import SGDClassifier
    shared_path("a9a")
    small = ROWS * 50 * 8 / 2**20        # the transformed slice's MB
    for budget_mb, name in ((small / 2, "tight"), (small * 2, "roomy")):
        proc = bench(tmp_path, "--methods", "rbf-sgd", "--budgets", "rbf-sgd=50",
                     "--peer-memory-mb", repr(budget_mb), "--json", str(tmp_path / f"{name}.json"))
        assert proc.returncode == 0, proc.stderr
    tight, = load_rows(tmp_path / "tight.json")
    roomy, = load_rows(tmp_path / "roomy.json")
    assert tight["chunk_rows"] == 20000 and "chunk_rows" not in roomy
    X, y = svmlight("a9a")
    Xt, _ = svmlight("a9a.t")
    fmap = RBFSampler(gamma=GAMMA, n_components=50, random_state=0)
    clf = SGDClassifier(random_state=0, n_jobs=1).fit(fmap.fit_transform(X), y)
    assert np.array_equal(np.loadtxt(roomy["predictions"]), clf.predict(fmap.transform(Xt)))


# ------------------------------------------------------------ the other runs

def test_train_rows_and_stream(tmp_path):
    """--train-rows N trains on the first N rows and tests on the whole test
    slice; DSG --stream gives the in-memory run's predictions."""
    shared_path("a9a")
    proc = bench(tmp_path, "--methods", "dsg", "--budgets", "dsg=1", "--train-rows", "120",
                 "--json", str(tmp_path / "mem.json"))
    assert proc.returncode == 0, proc.stderr
    # both runs write the same prediction file (same data, method and budget)
    with open(load_rows(tmp_path / "mem.json")[0]["predictions"]) as f:
        in_memory = f.read()
    proc = bench(tmp_path, "--methods", "dsg", "--budgets", "dsg=1", "--train-rows", "120",
                 "--options", "dsg=--stream", "--json", str(tmp_path / "stream.json"))
    assert proc.returncode == 0, proc.stderr
    mem, = load_rows(tmp_path / "mem.json")
    stream, = load_rows(tmp_path / "stream.json")
    for r in (mem, stream):
        assert r["status"] == "ok" and r["n_train"] == 120 and r["train_rows"] == 120
        assert r["n_test"] == ROWS and r["data"] == f"a9a[:{ROWS}][train:120]"
    assert stream["call"].endswith("--stream")
    # the same work counted both ways (ceil(120 / 64) = 2 batches of the default size)
    assert mem["n_iter"] == stream["n_iter"] == 2
    assert mem["feature_evals"] == stream["feature_evals"] > 0
    with open(stream["predictions"]) as f:
        assert f.read() == in_memory and len(in_memory.split()) == ROWS


def test_thundersvm_run(tmp_path):
    folder = os.environ.get("KERNSOLVE_BENCH_THUNDERSVM")
    if not folder or not os.path.isfile(os.path.join(folder, "thundersvm-train")):
        pytest.skip("KERNSOLVE_BENCH_THUNDERSVM: ThunderSVM not built (benchmarks/README.md)")
    from libsvm.svmutil import svm_predict, svm_train
    proc = bench(tmp_path, "--methods", "thundersvm", "--json", str(tmp_path / "t.json"))
    assert proc.returncode == 0, proc.stderr
    row, = load_rows(tmp_path / "t.json")
    assert row["status"] == "ok" and row["exact"] and row["n_train"] == ROWS
    X, y = svmlight("a9a")
    Xt, yt = svmlight("a9a.t")
    model = svm_train(y, X, f"-c {C} -g {GAMMA} -q")
    libsvm_error = 100 - svm_predict(yt, Xt, model, "-q")[1][0]
    assert abs(row["test_error"] - libsvm_error) <= 1.0


@pytest.mark.parametrize("args, message", [
    (["--train-rows", "0"], "bench_scale.py: error: --train-rows 0: must be >= 1"),
    (["--sgd-epochs", "0"], "bench_scale.py: error: --sgd-epochs 0: must be >= 1"),
    (["--methods", "thundersvm"], "bench_scale.py: error: thundersvm: set "
     "KERNSOLVE_BENCH_THUNDERSVM to the folder holding thundersvm-train and "
     "thundersvm-predict (benchmarks/README.md says how to build them)"),
])
def test_bad_arguments(tmp_path, args, message):
    proc = bench(tmp_path, *args, env={"KERNSOLVE_BENCH_THUNDERSVM": str(tmp_path)})
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines()[-1] == message


# ------------------------------------------------------------ the figure

def test_power_law_recovers_a_and_b():
    power_law = figure_module().power_law
    ns = [15000, 30000, 60000, 120000]
    a, b = power_law(ns, [3e-7 * n ** 2.3 for n in ns])
    assert a == pytest.approx(3e-7, rel=1e-9) and b == pytest.approx(2.3, rel=1e-12)
    noisy = [3e-7 * n ** 2.3 * f for n, f in zip(ns, (1.1, 0.95, 1.04, 0.9))]
    b_ref, log_a_ref = np.polyfit(np.log(ns), np.log(noisy), 1)
    a, b = power_law(ns, noisy)
    assert b == pytest.approx(b_ref, rel=1e-12) and a == pytest.approx(np.exp(log_a_ref))
    with pytest.raises(ValueError):
        power_law([1000, 1000], [1.0, 2.0])


def _row(data, method, n, train_s, error, budget=None, train_rows=None, tool="kernsolve"):
    return {"data": data, "dataset": "fashion", "method": method, "tool": tool,
            "budget_name": None if budget is None else "centers", "budget": budget,
            "exact": budget is None, "status": "ok", "train_s": train_s, "test_error": error,
            "maxrss_mb": 1000.0 + n / 100, "n_train": n, "train_rows": train_rows,
            "threads": 2}


def test_figure_extrapolates_the_exact_solvers_only_beyond_their_runs(tmp_path):
    rows = [_row("f(big)[train:1000]", "smo", 1000, 2.0, 20.0, train_rows=1000),
            _row("f(big)[train:2000]", "smo", 2000, 8.0, 18.0, train_rows=2000),
            _row("f(4k)", "smo", 4000, 32.0, 15.0),
            _row("f(4k)", "eigenpro", 4000, 1.0, 16.0, budget=200),
            _row("f(16k)", "eigenpro", 16000, 4.0, 14.0, budget=200),
            _row("f(64k)", "eigenpro", 64000, 16.0, 13.0, budget=200),
            {"data": "f(64k)", "method": "smo", "status": "timeout"}]
    with open(tmp_path / "rows.json", "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    env = package_env(MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, FIGURE, str(tmp_path / "rows.json"), "--out-dir",
                           str(tmp_path / "out")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    with open(tmp_path / "out" / "more_rows.csv") as f:
        points = list(csv.DictReader(f))
    measured = [p for p in points if p["kind"] == "measured"]
    guessed = [p for p in points if p["kind"] == "extrapolated"]
    assert len(measured) == 6
    # smo's times grow as n^2 exactly (2, 8, 32 s at 1000, 2000, 4000 rows)
    assert [(p["method"], int(p["n_train"])) for p in guessed] == [("smo", 16000),
                                                                   ("smo", 64000)]
    for p in guessed:
        n = int(p["n_train"])
        assert float(p["train_s"]) == pytest.approx(2.0 * (n / 1000) ** 2, rel=1e-9)
        assert float(p["fit_b"]) == pytest.approx(2.0)
        assert float(p["test_error"]) == 15.0 and p["error_at_rows"] == "4000"
        assert p["maxrss_mb"] == ""
    printed = proc.stdout.split("Extrapolated (not measured)")
    assert len(printed) == 2 and "| fashion | 64000 | smo | 8192 |" in printed[1]
    assert "| 64000 | smo |" not in printed[0]
    if importlib.util.find_spec("matplotlib"):
        assert (tmp_path / "out" / "more_rows.png").stat().st_size > 0
    # rows without n_train need --n-train
    del rows[2]["n_train"]
    with open(tmp_path / "old.json", "w") as f:
        f.write(json.dumps(rows[2]) + "\n")
    proc = subprocess.run([sys.executable, FIGURE, str(tmp_path / "old.json"), "--out-dir",
                           str(tmp_path / "out")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and proc.stderr.strip() == (
        "f(4k): its rows have no n_train (written before bench_scale.py recorded it): "
        "give --n-train DATA=N")
    proc = subprocess.run([sys.executable, FIGURE, str(tmp_path / "old.json"), "--n-train",
                           "f(4k)=4000", "--out-dir", str(tmp_path / "out")], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_sbp_row_records_its_work(tmp_path):
    """An SBP run's row carries the solver's counts (the arithmetic of its cost
    at larger sizes, doc/sbp.md): T = ceil(E n) iterations on the binary slice
    (the closed form of doc/sbp.md's stopping rule), and the kernel evaluations
    and rows computed that kernsolve.train counts on the same rows here."""
    import math

    import kernsolve
    shared_path("a9a")
    epochs = 0.25
    proc = bench(tmp_path, "--methods", "sbp", "--budgets", f"sbp={epochs}",
                 "--json", str(tmp_path / "s.json"))
    assert proc.returncode == 0, proc.stderr
    row, = load_rows(tmp_path / "s.json")
    assert row["status"] == "ok" and row["n_iter"] == math.ceil(epochs * ROWS)
    X, y = svmlight("a9a")
    model = kernsolve.train(y, X, row["call"] + " -q", n_jobs=1)
    assert row["n_kernel_evals"] == model.stats["n_kernel_evals"] > 0
    assert 0 < row["n_cache_misses"] == model.stats["n_cache_misses"] <= row["n_iter"]


def test_streamed_runs_are_a_method_of_their_own(tmp_path):
    """A --stream run and an in-memory run of the same data, method and budget
    are two points (two curves), not the later one replacing the earlier."""
    memory = dict(_row("f(64k)", "dsg", 64000, 30.0, 14.0, budget=1),
                  call="--solver dsg --epochs 1 -m 3000")
    stream = dict(memory, call="--solver dsg --epochs 1 -m 3000 --stream", train_s=20.0,
                  test_error=14.5)
    with open(tmp_path / "rows.json", "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in (memory, stream))
    points = figure_module().measured([str(tmp_path / "rows.json")], {})
    assert sorted((p["method"], p["train_s"], p["test_error"]) for p in points) == [
        ("dsg", 30.0, 14.0), ("dsg --stream", 20.0, 14.5)]
