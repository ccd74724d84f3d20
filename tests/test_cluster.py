"""Running on a Dask cluster (``kernsolve._cluster``), on a ``distributed.LocalCluster``.

Oracles: local ``kernsolve.predict`` on the whole data (prediction over Dask
arrays and partitioned LIBSVM files must give its bits: labels, decision
values, probabilities, for every solver's model kind); local ``partial_fit``
over the same chunks in the same order (DSG trained from partitions); the
operating system's record of which process opened the data file (the client
never reads it); the workers' own transfer logs (the data never moves between
workers while an estimator is trained from it).
"""
import contextlib
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import kernsolve
from kernsolve import DataFormatError, ModelFormatError
from kernsolve.solvers import REGISTRY
from conftest import package_env


def _dask():
    """dask and dask.array: the tests that use them skip without dask, not the
    module's others (kernel rows, imports, memory)."""
    return pytest.importorskip("dask"), pytest.importorskip("dask.array")


@pytest.fixture(scope="module")
def client():
    # two worker processes: every model, estimator and partition really is
    # pickled and sent; the client is never the default, tests opt in
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, worker_dashboard_address=None)
    c = distributed.Client(cluster, set_as_default=False)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


def _data(n, seed, k=3, d=40):
    """k-class rows with many zeros (so the CSR path is a real sparse path)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n).astype(np.float64)
    X = rng.random((n, d)) + 0.6 * y[:, None] * (np.arange(d) % k == 1)
    X[X < 0.45] = 0.0
    return y, X


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cluster")
    y, X = _data(240, 1)
    yt, Xt = _data(203, 2)
    path = str(folder / "test.svm")
    kernsolve.write_problem(path, yt, Xt)
    y_file, X_file = kernsolve.read_problem(path)
    return {"y": y, "X": X, "yt": yt, "Xt": Xt, "path": path, "X_file": X_file,
            "y_file": y_file, "folder": folder}


def _cases():
    """(train options, predict options) for every solver and SVM type it trains,
    and LIBSVM's probability models."""
    out = []
    for spec in REGISTRY:
        for name in spec.names:
            for s in sorted(spec.svm_types):
                out.append((f"-q --solver {name} -s {s}", ""))
    out += [(f"-q -s {s} -b 1", "-b 1") for s in (0, 1, 2, 3, 4)]
    out += [("-q --solver dsg --loss softmax", "-b 1"), ("-q -t 1 -d 2", ""),
            ("-q -t 0", "")]
    return out


def _train(options, data):
    y, X = data["y"], data["X"]
    s = int(options.split("-s ")[1].split()[0]) if "-s " in options else 0
    if s in (3, 4):                 # regression: a real target
        y = X @ np.arange(1.0, X.shape[1] + 1)
    if s == 1 or " -s 4" in options:
        options += " -n 0.3"
    return kernsolve.train(y, X, options)


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)


@pytest.mark.parametrize("train_options, options", _cases())
def test_prediction_equals_local_prediction(client, data, train_options, options):
    dask, da = _dask()
    model = _train(train_options, data)
    Xt = data["Xt"]
    want_labels, _, want_values = kernsolve.predict(None, Xt, model, options + " -q")
    file_labels, _, file_values = kernsolve.predict(None, data["X_file"], model,
                                                   options + " -q")
    # uneven rows (a single row too: BLAS takes another path for it), split columns
    dense = da.from_array(Xt, chunks=((1, 56, 57, 89), (25, 15)))
    sparse = da.from_array(sp.csr_matrix(Xt), chunks=((71, 1, 131), -1), asarray=False)
    parts = kernsolve.read_partitions(data["path"], npartitions=4)
    with client.as_current():
        got = dask.compute(kernsolve.dask_predict(dense, model, options),
                           kernsolve.dask_predict(sparse, model, options),
                           kernsolve.dask_predict(parts, model, options), parts.labels())
    for labels, values in got[:2]:
        assert _same(labels, want_labels) and _same(values, want_values)
    labels, values = got[2]
    assert _same(labels, file_labels) and _same(values, file_values)
    assert _same(got[3], data["y_file"])


def test_precomputed_kernel_model(client, data):
    dask, da = _dask()
    y, X, Xt = data["y"], data["X"], data["Xt"]
    K = np.hstack([np.arange(1, len(y) + 1)[:, None], X @ X.T])
    Kt = np.hstack([np.zeros((len(Xt), 1)), Xt @ X.T])
    model = kernsolve.train(y, K, "-q -t 4")
    want = kernsolve.predict(None, Kt, model, "-q")
    with client.as_current():
        labels, values = dask.compute(*kernsolve.dask_predict(da.from_array(Kt, chunks=50),
                                                              model))
    assert _same(labels, want[0]) and _same(values, want[2])


def test_without_a_client_the_local_scheduler_gives_the_same_bits(data):
    dask, da = _dask()
    model = _train("-q -b 1", data)
    want = kernsolve.predict(None, data["Xt"], model, "-b 1 -q")
    labels, values = dask.compute(*kernsolve.dask_predict(
        da.from_array(data["Xt"], chunks=40), model, "-b 1"), scheduler="sync")
    assert _same(labels, want[0]) and _same(values, want[2])


def test_the_model_enters_the_graph_once(client, data):
    dask, da = _dask()
    model = _train("-q -b 1", data)
    size = len(pickle.dumps(model))
    X = da.from_array(data["Xt"], chunks=20)                   # 11 partitions
    # with or without a client: one task holds the model, every partition
    # depends on it (part of the graph: recomputable after a lost worker)
    for current in (None, client):
        with current.as_current() if current else contextlib.nullcontext():
            labels, values = kernsolve.dask_predict(X, model, "-b 1")
            graph = dict(values.__dask_graph__())
            holders = [k for k, v in graph.items() if len(pickle.dumps(v)) >= size]
            assert len(holders) == 1
            assert _same(values.compute(), kernsolve.predict(None, data["Xt"], model,
                                                             "-b 1 -q")[2])


_AUDIT = """
import sys, os, pickle
import numpy as np
import dask, distributed, kernsolve
path, out = sys.argv[1], sys.argv[2]
opened = []
def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes)) and \\
            os.path.basename(os.fsdecode(args[0])) == os.path.basename(path):
        opened.append(event)
if __name__ == "__main__":
    model = kernsolve.load_model(sys.argv[3])
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    client = distributed.Client(cluster)
    sys.addaudithook(hook)
    parts = kernsolve.read_partitions(path, npartitions=3)
    y, (labels, values) = parts.labels(), kernsolve.dask_predict(parts, model)
    result = dask.compute(y, labels, values)
    est = kernsolve.dask_partial_fit(kernsolve.DSGClassifier(random_state=3, gamma=0.5),
                                     parts)
    n_opened = len(opened)
    client.close(); cluster.close()
    pickle.dump((n_opened, result, est), open(out, "wb"))
"""


def test_the_client_never_opens_the_partitioned_file(data, tmp_path):
    # a fresh client process whose every open() is audited: the workers (other
    # processes) read the file, the client only builds the graph
    pytest.importorskip("distributed")       # the audited process runs a cluster
    model = _train("-q", data)
    kernsolve.save_model(tmp_path / "m", model)
    script = tmp_path / "audit.py"
    script.write_text(_AUDIT)
    out = tmp_path / "out.pkl"
    subprocess.run([sys.executable, str(script), data["path"], str(out), str(tmp_path / "m")],
                   check=True, env=package_env(), cwd=str(tmp_path), timeout=300,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    n_opened, (y, labels, values), est = pickle.load(open(out, "rb"))
    assert n_opened == 0
    want = kernsolve.predict(None, data["X_file"], model, "-q")
    assert _same(y, data["y_file"]) and _same(labels, want[0]) and _same(values, want[2])
    local = kernsolve.DSGClassifier(random_state=3, gamma=0.5)
    for X, y in _windows(data["path"], 3, data["X_file"].shape[1]):
        local.partial_fit(X, y, classes=np.unique(data["y_file"]))
    assert _same(est.coef_, local.coef_)


def test_kernel_rows_do_not_depend_on_the_rows_computed_with_them():
    # the root of the bit-identity above: with row_independent, K(X[s:e], Y)
    # is K(X, Y)[s:e] for any piece (BLAS on tiles of a fixed shape, the last
    # one padded), also for single rows, which BLAS computes another way
    rng = np.random.default_rng(0)
    X, Y = rng.random((300, 64)), rng.random((500, 64))
    Xs = sp.csr_matrix(np.where(X < 0.8, 0.0, X))          # 20% dense: densified or not
    Ys = sp.csr_matrix(np.where(Y < 0.5, 0.0, Y))
    for A, B in ((X, Y), (Xs, Ys), (Xs, Y), (X, Ys)):
        for kernel in ("rbf", "poly", "linear"):
            K = kernsolve.kernel_matrix(A, B, kernel, gamma=0.1, row_independent=True)
            for s, e in ((0, 1), (1, 2), (5, 133), (130, 300), (7, 299), (128, 129)):
                piece = kernsolve.kernel_matrix(A[s:e], B, kernel, gamma=0.1,
                                                row_independent=True)
                assert _same(piece, K[s:e]), (kernel, s, e)


# ---------------------------------------------------------------- DSG from partitions

def _windows(path, n, width):
    """The windows of read_partitions(path, npartitions=n), read locally."""
    for off, length in kernsolve.read_partitions(path, npartitions=n,
                                                 size=os.path.getsize(path)).ranges:
        y, X = kernsolve.read_problem(path, n_features=width, zero_based=False,
                                      offset=off, length=length)
        yield X, y


def _incoming_keys(client):
    logs = client.run(lambda dask_worker: [dict(e["keys"]) for e in
                                           dask_worker.transfer_incoming_log])
    return {str(k) for entries in logs.values() for e in entries for k in e}


ESTIMATORS = [("DSGClassifier", "dsg"), ("DSGClassifier", "udsg"), ("DSGClassifier", "cdsg"),
              ("DSGRegressor", "dsg"), ("DSGRegressor", "cdsg")]


@pytest.mark.parametrize("cls, solver", ESTIMATORS)
def test_dsg_from_dask_array_partitions_equals_local_partial_fit(client, data, cls, solver):
    dask, da = _dask()
    y, X = data["y"], data["X"]
    make = lambda: getattr(kernsolve, cls)(solver=solver, random_state=5, gamma=0.5,
                                           batch_size=16, feature_block=8)
    chunks = (50, 61, 40, 89)
    local = make()
    start = 0
    for n in chunks:
        kw = {"classes": np.unique(y)} if cls == "DSGClassifier" else {}
        local.partial_fit(X[start:start + n], y[start:start + n], **kw)
        start += n
    for Xd in (da.from_array(X, chunks=(chunks, -1), name=False),
               da.from_array(sp.csr_matrix(X), chunks=(chunks, -1), asarray=False,
                             name=False)):
        original = make()
        with client.as_current():
            client.run(lambda dask_worker: dask_worker.transfer_incoming_log.clear())
            Xd = Xd.persist()
            fitted = kernsolve.dask_partial_fit(original, Xd, da.from_array(y, chunks=100))
            moved = _incoming_keys(client)
        assert not hasattr(original, "coef_")               # the estimator given is kept
        assert _same(fitted.coef_, local.coef_) and _same(fitted.intercept_, local.intercept_)
        assert fitted.n_iter_ == local.n_iter_ == len(chunks)
        # the estimator travelled between the workers, the X blocks never did
        x_keys = {str(k) for k in dict(Xd.__dask_graph__())}
        assert len(x_keys) == len(chunks) and not moved & x_keys
        holders = {w for ws in client.who_has(Xd).values() for w in ws}
        if len(holders) == 2:
            assert any("_fit_partition" in k for k in moved)


def test_dsg_from_a_partitioned_file_equals_local_partial_fit(client, data):
    path, width = data["path"], data["X_file"].shape[1]
    local = kernsolve.DSGClassifier(solver="cdsg", random_state=2, gamma=0.5)
    for X, y in _windows(path, 5, width):
        local.partial_fit(X, y, classes=np.unique(data["y_file"]))
    with client.as_current():
        fitted = kernsolve.dask_partial_fit(
            kernsolve.DSGClassifier(solver="cdsg", random_state=2, gamma=0.5),
            kernsolve.read_partitions(path, npartitions=5))
        # continuing a fitted estimator: its width and classes are kept
        more = kernsolve.dask_partial_fit(fitted, kernsolve.read_partitions(path,
                                                                           npartitions=2))
    assert _same(fitted.coef_, local.coef_)
    for X, y in _windows(path, 2, width):
        local.partial_fit(X, y)
    assert _same(more.coef_, local.coef_)


def test_without_a_client_partial_fit_gives_the_same_bits(data):
    dask, da = _dask()
    y, X = data["y"], data["X"]
    local = kernsolve.DSGClassifier(random_state=1, gamma=0.5)
    for i in range(0, 240, 80):
        local.partial_fit(X[i:i + 80], y[i:i + 80], classes=np.unique(y))
    with dask.config.set(scheduler="sync"):
        fitted = kernsolve.dask_partial_fit(kernsolve.DSGClassifier(random_state=1, gamma=0.5),
                                            da.from_array(X, chunks=80), y)
    assert _same(fitted.coef_, local.coef_)


def test_a_scikit_learn_incremental_estimator_works_too(data):
    dask, da = _dask()
    linear_model = pytest.importorskip("sklearn.linear_model")
    y, X = data["y"], data["X"]
    local = linear_model.SGDClassifier(random_state=0)
    for i in range(0, 240, 60):
        local.partial_fit(X[i:i + 60], y[i:i + 60], classes=np.unique(y))
    with dask.config.set(scheduler="sync"):    # (workers importing scikit-learn: slow)
        fitted = kernsolve.dask_partial_fit(linear_model.SGDClassifier(random_state=0),
                                            da.from_array(X, chunks=(60, -1)),
                                            da.from_array(y, chunks=60))
    assert _same(fitted.coef_, local.coef_) and _same(fitted.intercept_, local.intercept_)


# ---------------------------------------------------------------- bad input

def test_a_missing_model_file_is_named(data, tmp_path):
    dask, da = _dask()
    missing = str(tmp_path / "no.model")
    with pytest.raises(FileNotFoundError, match="no.model"):
        kernsolve.dask_predict(da.from_array(data["Xt"]), missing)


def test_a_corrupt_model_file_is_named_with_its_line(data, tmp_path):
    dask, da = _dask()
    bad = tmp_path / "bad.model"
    bad.write_text("svm_type c_svc\nkernel_type rbf\nnr_class two\n")
    with pytest.raises(ModelFormatError, match=r"bad\.model:3"):
        kernsolve.dask_predict(da.from_array(data["Xt"]), str(bad))


def test_a_file_not_in_libsvm_format_is_named_with_its_line(client, data, tmp_path):
    dask, da = _dask()
    lines = open(data["path"], "rb").read().splitlines(keepends=True)
    lines[150] = b"1 3:0.5 this is not libsvm\n"
    bad = tmp_path / "bad.svm"
    bad.write_bytes(b"".join(lines))
    model = _train("-q", data)
    with client.as_current():
        parts = kernsolve.read_partitions(bad, npartitions=4)
        with pytest.raises(DataFormatError, match=r"bad\.svm:151: "):
            dask.compute(*kernsolve.dask_predict(parts, model))
        with pytest.raises(DataFormatError, match=r"bad\.svm:151: "):
            kernsolve.dask_partial_fit(kernsolve.DSGClassifier(gamma=0.5), parts)


def test_bad_arguments_get_clear_errors(data, tmp_path):
    dask, da = _dask()
    model = _train("-q", data)
    X = da.from_array(data["Xt"], chunks=50)
    with pytest.raises(ValueError, match="probability"):
        kernsolve.dask_predict(X, model, "-b 1")            # at the call, not at compute
    with pytest.raises(ValueError, match="unknown option: -z"):
        kernsolve.dask_predict(X, model, "-z")
    with pytest.raises(ValueError, match="kernsolve.predict for local data"):
        kernsolve.dask_predict(data["Xt"], model)
    with pytest.raises(ValueError, match="compressed"):
        kernsolve.read_partitions(str(tmp_path / "data.xz"))
    with pytest.raises(ValueError, match="blocksize or npartitions"):
        kernsolve.read_partitions(data["path"], 100, npartitions=2)
    with pytest.raises(ValueError, match="npartitions must be an integer >= 1"):
        kernsolve.read_partitions(data["path"], npartitions=0)
    # a task per byte (the red team's blocksize=1: 71,556 tasks, no result after minutes)
    with pytest.raises(ValueError, match=r"blocksize: 1 bytes .* blocksize >= 65536"):
        kernsolve.read_partitions(data["path"], 1)
    size = os.path.getsize(data["path"])
    with pytest.raises(ValueError, match=f"npartitions: {size + 1} partitions of a file "
                                         f"of {size} bytes"):
        kernsolve.read_partitions(data["path"], npartitions=size + 1)
    assert len(kernsolve.read_partitions(data["path"], 65536).ranges) == max(1, -(-size // 65536))
    with dask.config.set(scheduler="sync"), pytest.raises(FileNotFoundError, match="nothere"):
        kernsolve.read_partitions(str(tmp_path / "nothere"))
    with pytest.raises(ValueError, match="y .* is required"):
        kernsolve.dask_partial_fit(kernsolve.DSGClassifier(), X)
    with pytest.raises(ValueError, match="y must be 1-D with 203 values"):
        kernsolve.dask_partial_fit(kernsolve.DSGClassifier(), X, da.ones(5, chunks=5))
    with pytest.raises(ValueError, match="has no partial_fit"):
        kernsolve.dask_partial_fit(model, X, da.ones(203, chunks=50))


def test_kernsolve_does_not_import_dask_until_asked(tmp_path):
    code = ("import sys, kernsolve, kernsolve._cluster\n"
            "assert not [m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')]\n"
            "sys.modules['dask'] = None\n"        # as if dask were not installed
            "try:\n"
            "    kernsolve.read_partitions('x')\n"
            "except ImportError as e:\n"
            "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], env=package_env(), cwd=str(tmp_path),
                         capture_output=True, text=True, timeout=120, check=True).stdout
    assert "pip install 'kernsolve[dask]'" in out


def test_row_independent_kernel_rows_stay_within_memory_for_wide_sparse_rows(monkeypatch):
    # sparse test rows against dense support vectors are made dense a bounded
    # chunk at a time (or not at all when one tile of them would be too wide):
    # the same bits as the whole, whatever the chunk
    from kernsolve import _kernels
    rng = np.random.default_rng(3)
    X = sp.random(700, 300, density=0.05, random_state=4, format="csr")
    Y = rng.random((40, 300))
    want = kernsolve.kernel_matrix(X, Y, gamma=0.2, row_independent=True)
    for chunk in (128 * 300 * 8, 3 * 128 * 300 * 8, 128 * 300 * 8 - 1):
        monkeypatch.setattr(_kernels, "_DENSE_CHUNK_BYTES", chunk)
        got = kernsolve.kernel_matrix(X, Y, gamma=0.2, row_independent=True)
        assert _same(got, want) or chunk < 128 * 300 * 8
        for s, e in ((0, 1), (5, 600)):
            assert _same(kernsolve.kernel_matrix(X[s:e], Y, gamma=0.2, row_independent=True),
                         got[s:e])
