"""benchmarks/bench_scale.py (issue 17 item 1), run for real on a tiny slice of a9a.

Oracles, all computed here and not by the script: the test labels of the
first rows of the shared a9a.t (read with scikit-learn's reader) against each
run's prediction file, with numpy, for the reported test error;
scikit-learn's ``SVC`` and libsvm-official's ``svm_train`` trained here on the
same rows with the same C and gamma, for the predictions of the ``svc`` and
``smo`` runs; the column names a reader of benchmarks/CURRENT.md sees, written out; an
option no solver accepts (``--centers 0``) for a run that fails.
"""
import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import package_env, shared_lines, shared_path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "benchmarks", "bench_scale.py")
FIGURE = os.path.join(ROOT, "examples", "time_to_accuracy.py")
if not os.path.exists(SCRIPT):                       # tests run from an installed copy
    pytest.skip("benchmarks/ not found beside tests/", allow_module_level=True)

ROWS = 300
C, GAMMA = 100.0, 0.005           # the script's a9a setting, stated in its docstring
COLUMNS = ["data", "method", "budget", "threads", "test error %", "train s", "read s",
           "predict s", "process s", "peak MB", "load", "status"]
ROW_KEYS = {"data", "dataset", "rows", "C", "gamma", "run", "method", "tool", "budget_name",
            "budget", "exact", "threads", "status"}
OK_KEYS = {"call", "test_error", "child_test_error", "read_s", "train_s", "predict_s",
           "process_s", "cpu_s", "maxrss_mb", "maxrss_source", "load_avg", "predictions",
           "n_test"}


def kernsolve_root():
    import kernsolve
    return os.path.dirname(os.path.dirname(os.path.abspath(kernsolve.__file__)))


def bench(tmp, *args, env=None):
    env = dict(package_env(), **(env or {}))
    env["KERNSOLVE_SHARED_DATA"] = os.path.dirname(shared_path("a9a"))
    return subprocess.run([sys.executable, SCRIPT, "--quick", "--rows", str(ROWS),
                           "--datasets", "a9a", "--threads", "1", "--workdir", str(tmp / "work"),
                           "--kernsolve-path", kernsolve_root(), *args],
                          cwd=tmp, env=env, capture_output=True, text=True, timeout=900)


def load_rows(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def svmlight(name):
    from sklearn.datasets import load_svmlight_file
    X, y = load_svmlight_file(io.BytesIO(shared_lines(name, ROWS)), n_features=123)
    return X, y


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    shared_path("a9a")
    shared_path("a9a.t")
    tmp = tmp_path_factory.mktemp("scale")
    proc = bench(tmp, "--methods", "smo,eigenpro,dsg,svc,rbf-sgd",
                 "--budgets", "eigenpro=0,100", "--budgets", "dsg=0.5,1",
                 "--budgets", "rbf-sgd=50,100",
                 "--json", str(tmp / "out.json"), "--markdown", str(tmp / "out.md"))
    return tmp, proc


def test_every_run_recorded_with_its_schema(run):
    tmp, proc = run
    assert proc.returncode == 0, proc.stderr
    rows = load_rows(tmp / "out.json")
    got = [(r["method"], r["budget"], r["status"]) for r in rows]
    assert got == [("smo", None, "ok"), ("eigenpro", 0, "error"), ("eigenpro", 100, "ok"),
                   ("dsg", 0.5, "ok"), ("dsg", 1.0, "ok"), ("svc", None, "ok"),
                   ("rbf-sgd", 50, "ok"), ("rbf-sgd", 100, "ok")]
    for r in rows:
        assert ROW_KEYS <= set(r), ROW_KEYS - set(r)
        assert r["data"] == f"a9a[:{ROWS}]" and r["C"] == C and r["gamma"] == GAMMA
        assert r["threads"] == 1 and r["exact"] == (r["method"] in ("smo", "svc"))
        if r["status"] == "ok":
            assert OK_KEYS <= set(r), OK_KEYS - set(r)
            assert r["n_test"] == ROWS and r["maxrss_mb"] > 0
            assert 0 < r["train_s"] <= r["process_s"]
    # a failing run is recorded with the solver's own message; the next budget ran
    bad = rows[1]
    assert bad["error"].startswith("exit 1: ") and "--centers" in bad["error"]
    assert "test_error" not in bad


def test_reported_error_is_the_predictions_error(run):
    """The test error in the JSON rows is the error of the prediction file on the
    test slice, recomputed here from the shared a9a.t's first rows."""
    tmp, proc = run
    _, yt = svmlight("a9a.t")
    checked = 0
    for r in load_rows(tmp / "out.json"):
        if r["status"] != "ok":
            continue
        pred = np.loadtxt(r["predictions"])
        assert pred.shape == yt.shape
        err = 100.0 * np.count_nonzero(pred != yt) / yt.size
        assert r["test_error"] == pytest.approx(err, abs=1e-9)
        assert r["child_test_error"] == pytest.approx(err, abs=1e-9)
        checked += 1
    assert checked == 7


def test_exact_solvers_match_independent_training(run):
    """svc's predictions are scikit-learn SVC's, smo's libsvm-official's (the
    same problem: LIBSVM's C-SVC with C and gamma of the a9a setting)."""
    from libsvm.svmutil import svm_predict, svm_train
    from sklearn.svm import SVC
    tmp, _ = run
    rows = {r["method"]: r for r in load_rows(tmp / "out.json") if r["status"] == "ok"}
    X, y = svmlight("a9a")
    Xt, yt = svmlight("a9a.t")
    X.indices, X.indptr = X.indices.astype(np.int32), X.indptr.astype(np.int32)
    Xt.indices, Xt.indptr = Xt.indices.astype(np.int32), Xt.indptr.astype(np.int32)
    svc = SVC(C=C, gamma=GAMMA, cache_size=1000).fit(X, y).predict(Xt)
    assert np.array_equal(np.loadtxt(rows["svc"]["predictions"]), svc)
    model = svm_train(y, X, f"-c {C} -g {GAMMA} -q")
    libsvm = np.array(svm_predict(yt, Xt, model, "-q")[0])
    assert np.array_equal(np.loadtxt(rows["smo"]["predictions"]), libsvm)


def test_markdown_tables(run):
    tmp, proc = run
    rows = load_rows(tmp / "out.json")
    text = open(tmp / "out.md").read()
    table, summary = text.split("\n\n", 1)
    lines = table.splitlines()
    assert lines[0] == "| " + " | ".join(COLUMNS) + " |"
    assert lines[1] == "|" + "---|" * len(COLUMNS)
    body = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    assert len(body) == len(rows)
    for cells, r in zip(body, rows):
        assert len(cells) == len(COLUMNS)
        assert cells[:2] == [r["data"], r["method"]]
        if r["status"] == "ok":
            assert cells[4] == f"{r['test_error']:.2f}" and cells[-1] == "ok"
        else:
            assert cells[4] == "-" and cells[-1].startswith("error: exit 1")
    assert body[0][2] == "exact" and body[2][2] == "centers 100" and body[3][2] == "epochs 0.5"
    # the summary's reference is kernsolve SMO's error, the target one point above
    smo = rows[0]["test_error"]
    assert f"| a9a[:{ROWS}] | (reference: smo) | {smo:.2f} |" in summary
    assert f"target {smo + 1:.2f}" in summary
    assert proc.stdout.rstrip().endswith(text.rstrip())
    # --tables-only: the same tables from the JSON rows, nothing run
    again = bench(tmp, "--tables-only", "--json", str(tmp / "out.json"))
    assert again.returncode == 0, again.stderr
    assert again.stdout == text and load_rows(tmp / "out.json") == rows


def test_max_time_skips_the_larger_budgets(tmp_path):
    shared_path("a9a")
    proc = bench(tmp_path, "--methods", "dsg", "--budgets", "dsg=0.5,1,2",
                 "--max-time", "0", "--json", str(tmp_path / "t.json"))
    assert proc.returncode == 0, proc.stderr
    rows = load_rows(tmp_path / "t.json")
    assert [r["status"] for r in rows] == ["ok", "skipped", "skipped"]
    assert rows[1]["error"].startswith("budget 0.5 took ") and "--max-time 0" in rows[1]["error"]


def test_dense_rows_give_dsg_the_same_predictions(run, tmp_path):
    """--dense hands every tool numpy rows; DSG's features skip zeros, so its
    predictions are the CSR run's, byte for byte, under the data name +dense."""
    tmp, _ = run
    proc = bench(tmp_path, "--dense", "--methods", "dsg", "--budgets", "dsg=0.5",
                 "--json", str(tmp_path / "d.json"))
    assert proc.returncode == 0, proc.stderr
    dense, = load_rows(tmp_path / "d.json")
    sparse, = [r for r in load_rows(tmp / "out.json")
               if r["method"] == "dsg" and r["budget"] == 0.5]
    assert dense["status"] == "ok" and dense["data"] == sparse["data"] + "+dense"
    with open(dense["predictions"]) as a, open(sparse["predictions"]) as b:
        assert a.read() == b.read()


@pytest.mark.parametrize("args, message", [
    (["--methods", "smo,nope"], "--methods: unknown name 'nope' (known: smo, sbp, dsg, udsg, "
     "cdsg, eigenpro, svc, libsvm, rbf-sgd, nystroem-sgd, nystroem-linearsvc, thundersvm)"),
    (["--budgets", "smo=1"], "--budgets 'smo=1': smo is an exact solver: it has no budget"),
    (["--options", "svc=-x"], "--options 'svc=-x': extra options are for kernsolve's methods"),
    (["--dense", "--methods", "smo,libsvm"], "bench_scale.py: error: --dense: libsvm-official "
     "takes its own sparse rows; leave libsvm out of --methods"),
])
def test_bad_arguments(tmp_path, args, message):
    proc = bench(tmp_path, *args)
    assert proc.returncode != 0 and proc.stdout == ""
    assert proc.stderr.strip().splitlines()[-1] == message


def test_figure_from_the_json(run, tmp_path):
    tmp, _ = run
    rows = [r for r in load_rows(tmp / "out.json") if r["status"] == "ok"]
    proc = subprocess.run([sys.executable, FIGURE, str(tmp / "out.json"),
                           "--out-dir", str(tmp_path / "fig")], cwd=tmp_path,
                          env=package_env(MPLBACKEND="Agg"), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    import csv
    with open(tmp_path / "fig" / "time_to_accuracy.csv") as f:
        plotted = list(csv.DictReader(f))
    assert [(p["method"], float(p["seconds"]), float(p["test_error"])) for p in plotted] == \
        [(r["method"], r["train_s"], r["test_error"]) for r in rows]
    pytest.importorskip("matplotlib")
    assert (tmp_path / "fig" / "time_to_accuracy.png").stat().st_size > 0
