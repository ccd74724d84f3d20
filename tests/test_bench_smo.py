"""benchmarks/bench_smo.py's parts that need no peer (issue 16, item 1).

Oracles: the numbers written in real outputs of LIBSVM 3.37's ``svm-train`` /
``svm-predict`` and ThunderSVM 0.3.4's ``thundersvm-train`` /
``thundersvm-predict`` (fixtures below, trimmed of timestamps only where
marked), counted by hand; NumPy's legacy ``RandomState`` for the held-out
split; hand-computed medians and ratios for the final table; the kernel's
own accounting (a child that touches N MB) for the peak-RSS measurement.
"""
import importlib.util
import json
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATH = os.path.join(ROOT, "benchmarks", "bench_smo.py")
if not os.path.exists(PATH):                       # tests run from an installed copy
    pytest.skip("benchmarks/ not found beside tests/", allow_module_level=True)


@pytest.fixture(scope="module")
def bench():
    # the scripts import their shared helpers (benchmarks/benchlib.py) from their folder
    if os.path.dirname(PATH) not in sys.path:
        sys.path.insert(0, os.path.dirname(PATH))
    spec = importlib.util.spec_from_file_location("bench_smo", PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# svm-train on three classes (three one-vs-one pairs), verbatim.
LIBSVM_TRAIN = """\
.*
optimization finished, #iter = 64
nu = 0.068503
obj = -12.331715, rho = -0.002024
nSV = 32, nBSV = 0
*.*
optimization finished, #iter = 59
nu = 0.055391
obj = -12.186133, rho = -0.217441
nSV = 28, nBSV = 0
*.*
optimization finished, #iter = 56
nu = 0.039531
obj = -7.905545, rho = -0.338612
nSV = 27, nBSV = 0
Total nSV = 46
"""

# thundersvm-train on the same data, verbatim.
THUNDER_TRAIN = """\
2026-11-23 20:54:03,031 INFO [default] loading dataset from file "f3"
2026-11-23 20:54:03,050 INFO [default] #instances = 60, #features = 784
2026-11-23 20:54:03,053 INFO [default] training C-SVC
2026-11-23 20:54:03,053 INFO [default] C = 10
2026-11-23 20:54:03,053 INFO [default] gamma = 0.02
2026-11-23 20:54:03,053 INFO [default] #classes = 3
2026-11-23 20:54:03,053 INFO [default] working set size = 32
2026-11-23 20:54:03,053 INFO [default] training start
2026-11-23 20:54:03,054 INFO [default] global iter = 0, total local iter = 21, diff = 2
2026-11-23 20:54:03,055 INFO [default] global iter = 4, total local iter = 77, diff = 0.00097945
2026-11-23 20:54:03,055 INFO [default] training finished
2026-11-23 20:54:03,055 INFO [default] obj = -12.3317
2026-11-23 20:54:03,055 INFO [default] rho = -0.00222098
2026-11-23 20:54:03,055 INFO [default] #sv = 32
2026-11-23 20:54:03,055 INFO [default] working set size = 32
2026-11-23 20:54:03,055 INFO [default] training start
2026-11-23 20:54:03,061 INFO [default] global iter = 5, total local iter = 66, diff = 0.00093943
2026-11-23 20:54:03,061 INFO [default] training finished
2026-11-23 20:54:03,061 INFO [default] obj = -12.1861
2026-11-23 20:54:03,061 INFO [default] rho = -0.217381
2026-11-23 20:54:03,061 INFO [default] #sv = 28
2026-11-23 20:54:03,061 INFO [default] working set size = 32
2026-11-23 20:54:03,061 INFO [default] training start
2026-11-23 20:54:03,063 INFO [default] global iter = 4, total local iter = 66, diff = 0.000890515
2026-11-23 20:54:03,063 INFO [default] training finished
2026-11-23 20:54:03,063 INFO [default] obj = -7.90553
2026-11-23 20:54:03,063 INFO [default] rho = -0.338579
2026-11-23 20:54:03,063 INFO [default] #sv = 27
2026-11-23 20:54:03,063 INFO [default] #total unique sv = 46
2026-11-23 20:54:03,063 INFO [default] training finished
"""

THUNDER_MODEL = """\
svm_type c_svc
kernel_type rbf
gamma 0.02
nr_class 3
total_sv 46
rho -0.00222098 -0.217381 -0.338579 
label 0 2 1 
nr_sv 17 16 13 
SV 
1 0 1:0.5 
"""


def test_libsvm_train_log(bench):
    got = bench.parse_train_log(LIBSVM_TRAIN)
    assert got == {"n_iter": 64 + 59 + 56, "obj": [-12.331715, -12.186133, -7.905545],
                   "n_sv": 46}
    # kernsolve-train prints the same lines (without LIBSVM's dots)
    binary = ("\noptimization finished, #iter = 165\nnu = 0.426440\n"
              "obj = -98.177309, rho = 0.379003\nnSV = 133, nBSV = 101\nTotal nSV = 133\n")
    assert bench.parse_train_log(binary) == {"n_iter": 165, "obj": [-98.177309], "n_sv": 133}
    assert bench.parse_train_log("") == {"n_iter": None, "obj": None, "n_sv": None}


def test_thundersvm_train_log(bench):
    got = bench.parse_thundersvm_train_log(THUNDER_TRAIN)
    assert got == {"n_iter": None, "obj": [-12.3317, -12.1861, -7.90553], "n_sv": 46}


@pytest.mark.parametrize("text, percent", [
    ("Accuracy = 87.037% (235/270) (classification)\n", 87.037),            # svm-predict
    ("2026-11-23 20:41:25,782 INFO [default] Accuracy = 0.87037\n", 87.037),  # thundersvm
    ("2026-11-23 20:54:03,145 INFO [default] Accuracy = 1\n", 100.0),
    ("Mean squared error = 0.1 (regression)\n", None),
])
def test_predict_output(bench, text, percent):
    got = bench.parse_predict_output(text)
    assert got == (None if percent is None else pytest.approx(percent))


def test_model_header(bench, tmp_path):
    path = tmp_path / "m"
    path.write_text(THUNDER_MODEL)
    assert bench.parse_model_header(path) == {
        "svm_type": "c_svc", "kernel_type": "rbf", "nr_class": 3, "total_sv": 46,
        "nr_sv": [17, 16, 13]}


def test_accuracy_from_files(bench, tmp_path):
    test = tmp_path / "t"
    test.write_text("+1 1:1\n-1 2:1\n1.0 3:1\n-1\n")
    out = tmp_path / "o"
    out.write_text("1\n-1\n-1\n-1.0\n")          # 3 of 4 right; +1, 1, 1.0 are one label
    assert bench.accuracy_from_files(test, out) == 75.0
    out.write_text("1\n-1\n")
    with pytest.raises(ValueError, match="2 predictions for 4 test rows"):
        bench.accuracy_from_files(test, out)


def test_holdout_split(bench):
    n = 1003
    train, test = bench.holdout_split(n)
    perm = np.random.RandomState(16).permutation(n)
    assert np.array_equal(test, np.sort(perm[:n // 5]))
    assert np.array_equal(np.sort(np.concatenate([train, test])), np.arange(n))
    assert test.size == 200 and np.all(np.diff(train) > 0)


def test_prepare_maps_labels_and_splits(bench, tmp_path, monkeypatch):
    """fmnist8's label map and w8a's split, on a small fake data folder."""
    import lzma
    data = tmp_path / "data"
    data.mkdir()
    rows = [f"{k % 10} 1:{k}\n".encode() for k in range(50)]
    for name in ("fashion-mnist.scale", "fashion-mnist.scale.t", "w8a"):
        with lzma.open(data / (name + ".xz"), "wb") as f:
            f.write(b"".join(rows))
    monkeypatch.setattr(sys.modules["benchlib"], "DATA", str(data))
    work = tmp_path / "work"
    work.mkdir()
    cfg = next(c for c in bench.CONFIGS if c["name"] == "fmnist8")
    train, test = bench.prepare(str(work), cfg)
    labels = [line.split()[0] for line in open(train)]
    assert labels == ["+1" if k % 10 == 8 else "-1" for k in range(50)]
    assert [line.split()[1] for line in open(test)] == [f"1:{k}" for k in range(50)]
    train, test = bench.prepare(str(work), cfg, n_rows=7)       # --quick slices
    assert len(open(train).readlines()) == 7 and len(open(test).readlines()) == 7
    cfg = next(c for c in bench.CONFIGS if c["name"] == "w8a")
    train, test = bench.prepare(str(work), cfg)
    tr, te = bench.holdout_split(50)
    assert open(test, "rb").read() == b"".join(rows[k] for k in te)
    assert open(train, "rb").read() == b"".join(rows[k] for k in tr)


def test_cli_commands(bench):
    cfg = next(c for c in bench.CONFIGS if c["name"] == "ijcnn1")
    tr, pr = bench.cli_commands("thundersvm", 2, cfg, "TR", "M", "TE", "O", "/bin")
    assert tr == ["/bin/thundersvm-train", "-s", "0", "-t", "2", "-c", "32.0", "-g", "2.0",
                  "-m", "1000", "-e", "0.001", "-o", "2", "TR", "M"]
    assert pr == ["/bin/thundersvm-predict", "-o", "2", "TE", "M", "O"]
    tr, pr = bench.cli_commands("libsvm-cli", 1, cfg, "TR", "M", "TE", "O", "/l")
    assert tr[-4:] == ["-h", "1", "TR", "M"] and pr == ["/l/svm-predict", "TE", "M", "O"]
    tr, pr = bench.cli_commands("kernsolve-cli", 2, cfg, "TR", "M", "TE", "O")
    assert tr[1:3] == ["-m", "kernsolve.cli.train"] and tr[-4:] == ["--threads", "2", "TR", "M"]


def test_versus_picks_the_fastest_peer(bench):
    base = dict(data="a9a", C=100.0, gamma=0.005, cache_mb=1000.0, wait_policy="default",
                load_avg=0.5)

    def row(peer, threads, train_s, acc, n_sv):
        return dict(base, peer=peer, threads=threads, train_s=train_s, train_cpu_s=train_s,
                    predict_s=1.0, maxrss_mb=100.0, accuracy=acc, n_sv=n_sv)

    rows = [row("kernsolve-cli", 1, 40.0, 85.12, 11346), row("kernsolve-cli", 1, 44.0, 85.12,
                                                              11346),
            row("kernsolve-cli", 2, 20.0, 85.12, 11346),
            row("libsvm-cli", 1, 60.0, 85.12, 11346),
            row("libsvm-omp-cli", 1, 62.0, 85.12, 11346),
            row("libsvm-omp-cli", 2, 35.0, 85.12, 11346),
            row("thundersvm", 1, 41.0, 85.11, 11340),
            row("thundersvm", 2, 28.0, 85.11, 11340),
            row("kernsolve", 1, 1.0, 85.12, 11346)]     # in-process: not in this table
    lines = bench.versus(rows).splitlines()[2:]
    assert len(lines) == 2
    one, two = ([c.strip() for c in line.strip("|").split("|")] for line in lines)
    # 1 thread: kernsolve median 42.0; ThunderSVM 41.0 is the fastest peer
    assert one[1:8] == ["1", "42.0", "ThunderSVM", "41.0", "0.98x", "85.12", "85.11"]
    assert one[8:10] == ["11346", "11340"]
    # 2 threads: ThunderSVM 28.0 beats LIBSVM OpenMP 35.0 and serial LIBSVM's 60.0
    assert two[1:6] == ["2", "20.0", "ThunderSVM", "28.0", "1.40x"]
    assert "LIBSVM (1 thr) 85.12 / 11346 / 60.0" in two[10]
    # without kernsolve-cli, the in-process kernsolve against the in-process peers
    lines = bench.versus([rows[-1], row("libsvm", 1, 3.0, 85.12, 11346)]).splitlines()[2:]
    cells = [c.strip() for c in lines[0].strip("|").split("|")]
    assert cells[3:6] == ["libsvm-official", "3.0", "3.00x"]


def test_run_process_peak_rss_is_the_childs(bench, tmp_path):
    """The child's own peak, not this (larger) test process's: Linux carries
    the high-water mark across exec, so a plain wait4 would report at least
    pytest's RSS for /bin/true."""
    if not os.access(bench.TIME, os.X_OK):
        pytest.skip("GNU time not installed: the peak RSS is wait4's upper bound")
    ballast = np.ones(64 * 2**20 // 8)          # make this process clearly bigger
    log = str(tmp_path / "log")
    small = bench.run_process(["true"], dict(os.environ), log, timeout=600)
    assert small["returncode"] == 0 and small["maxrss_source"] == "GNU time"
    assert small["maxrss_mb"] < 32
    big = bench.run_process([sys.executable, "-c", "b = bytearray(96 * 2**20)"],
                            dict(os.environ), log, timeout=600)
    assert big["maxrss_mb"] >= 96
    bad = bench.run_process([sys.executable, "-c", "print('out'); raise SystemExit(3)"],
                            dict(os.environ), log, timeout=600)
    assert bad["returncode"] == 3 and bad["log"].startswith("out")
    del ballast


def test_json_rows_round_trip(bench):
    """The tables read rows as --json writes them (one JSON object a line)."""
    r = dict(data="w8a[:3000]", C=8.0, gamma=0.03, cache_mb=1000.0, peer="libsvm-cli",
             threads=1, train_s=0.25, train_cpu_s=0.25, maxrss_mb=38.8, n_sv=1190,
             n_iter=4233, accuracy=90.2, predict_s=0.2, load_avg=5.0, wait_policy="default")
    r = json.loads(json.dumps(r))
    assert "| w8a[:3000] | 8 | 0.03 | libsvm-cli | 1 |" in bench.markdown([r])
    assert "| w8a[:3000] | 8 | 0.03 | 1000 | default | libsvm-cli | 1 | 1 |" in bench.summary([r])
