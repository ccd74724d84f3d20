"""A worker lost in the middle of a training on a Dask cluster (``kernsolve._cluster_centres``,
``solvers/eigenpro/_partitioned.py``, ``kernsolve._cluster.dask_partial_fit``), and several
LIBSVM files as one training set.

A ``distributed.LocalCluster`` of two worker processes (each under a nanny,
which starts a new worker when one dies); a worker is killed (``os._exit``)
at a chosen point of the training: by the solver's callback after its first
iteration (EigenPro), or by the estimator's ``partial_fit`` on a chosen
partition (DSG's chain).

Oracles: the model of one process on the concatenated rows (bit for bit: the
recovered training must give it), and, where the rows cannot be recomputed
(scattered to the lost worker only), the one-line error that names the lost
worker and partition.  Every training runs under a watchdog thread that fails
the test if it has not ended after a generous time (a regression to a hang
fails; the time asserts nothing about speed).
"""
import contextvars
import os
import threading

import numpy as np
import pytest
import scipy.sparse as sp

import kernsolve
from kernsolve._cluster_centres import dask_train_centres
from kernsolve._params import parse_options
from kernsolve.cli import train as train_cli
from kernsolve.solvers.eigenpro import _partitioned
from conftest import small_blocks_cluster

SMALL_BLOCKS = 2 ** 13          # 128 rows a block at p = 64: small data, several partitions
P = 64
HANG = 900                      # seconds: far beyond any run of these tests; only a hang meets it

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def cluster_client():
    with small_blocks_cluster(SMALL_BLOCKS) as c:
        yield c


@pytest.fixture
def client(cluster_client):
    """The client, once its cluster has two workers again (the nanny's new
    one after the last test's loss)."""
    cluster_client.wait_for_workers(2)
    return cluster_client


def _ends(fn):
    """fn() in a thread; its result, or its exception raised here.  Fails
    the test if fn has not ended after HANG seconds (a hang)."""
    out = {}
    context = contextvars.copy_context()        # (the current client, in the thread too)

    def run():
        try:
            out["value"] = fn()
        except BaseException as exc:       # (re-raised in the test's thread)
            out["error"] = exc
    thread = threading.Thread(target=lambda: context.run(run), daemon=True)
    thread.start()
    thread.join(HANG)
    assert not thread.is_alive(), "the training did not end: it hangs after the lost worker"
    if "error" in out:
        raise out["error"]
    return out["value"]


async def _exit():
    os._exit(1)


def _kill(client, address, wait=True):
    """Kill the worker process at ``address``; with ``wait``, wait until the
    scheduler has removed it (the event; the nanny then starts a new worker)."""
    import time
    client.run(_exit, workers=[address], wait=False)
    while wait and address in client.nthreads():
        time.sleep(0.05)


def _rows_made(monkeypatch):
    """The PartitionedRows of the next training (to see where its partitions live)."""
    made = []
    real = _partitioned.PartitionedRows.__init__

    def init(self, *args, **kwargs):
        made.append(self)
        real(self, *args, **kwargs)
    monkeypatch.setattr(_partitioned.PartitionedRows, "__init__", init)
    return made


def _killer(client, made, partition, after=1, wait=True):
    """A solver callback that kills the worker holding ``partition`` after
    iteration ``after``, once (``wait``: see :func:`_kill`)."""
    done = []

    def callback(epoch, coef):
        if epoch == after and not done:
            done.append(made[0].partitions[partition][1])
            _kill(client, done[0], wait)
    return callback, done


def _data(n=1000, d=24, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    X[rng.random((n, d)) > 0.6] = 0.0
    y = (X[:, 0] + X[:, 1] > 0.6).astype(np.float64) * 2 - 1 + (X[:, 2] > 0.5) * 5
    return y, X


OPTIONS = f"-q --solver eigenpro --centers {P} -g 0.5 --epochs 4 --subsample 40"


def _files(tmp_path, y, X, cuts):
    """The rows cut at ``cuts`` into LIBSVM files (absolute paths)."""
    paths = []
    for i, (lo, hi) in enumerate(zip([0] + cuts, cuts + [len(y)])):
        paths.append(str(tmp_path / f"part{i}.svm"))
        kernsolve.write_problem(paths[-1], y[lo:hi], sp.csr_matrix(X[lo:hi]))
    return paths


@pytest.mark.parametrize("source, partition, wait", [
    ("array", 1, True), ("array", 0, True), ("files", 2, True),
    ("array", 1, False)])       # the next step sent while the worker dies
def test_a_lost_worker_is_recovered_with_the_same_model(client, monkeypatch, tmp_path, source,
                                                         partition, wait):
    # the lost partitions are made again on the other worker from the Dask
    # graph or the files' byte ranges, and the pass is made again: the model
    # of one process, bit for bit
    import dask.array as da
    y, X = _data()
    want = kernsolve.train(y, X, OPTIONS)
    if source == "array":
        data = (da.from_array(X, chunks=((300, 1, 0, 250, 449), -1)),
                da.from_array(y, chunks=((300, 1, 0, 250, 449),)))
    else:
        data = [kernsolve.read_partitions(p) for p in _files(tmp_path, y, X, [300, 700])]
    made = _rows_made(monkeypatch)
    callback, killed = _killer(client, made, partition, wait=wait)
    got = _ends(lambda: dask_train_centres(data, parse_options(OPTIONS.split()),
                                           callback=callback))
    assert killed
    assert got.stats["restored_partitions"] >= 1
    assert np.array_equal(got.coef, want.coef)
    kernsolve.save_model(str(tmp_path / "got"), got)
    kernsolve.save_model(str(tmp_path / "want"), want)
    assert open(tmp_path / "got", "rb").read() == open(tmp_path / "want", "rb").read()


def test_rows_only_in_the_lost_worker_stop_with_a_clear_error(client, monkeypatch):
    # the rows were scattered to one worker (no graph to recompute them): its
    # loss stops the training with one line naming the worker and the partition
    import dask.array as da
    y, X = _data(n=600, seed=3)
    victim = sorted(client.nthreads())[0]
    cuts = [(0, 300), (300, 600)]
    Xs = [da.from_delayed(client.scatter(X[a:b], workers=[victim], hash=False),
                          shape=(b - a, X.shape[1]), dtype=X.dtype) for a, b in cuts]
    ys = [da.from_delayed(client.scatter(y[a:b], workers=[victim], hash=False),
                          shape=(b - a,), dtype=y.dtype) for a, b in cuts]
    made = _rows_made(monkeypatch)
    callback, killed = _killer(client, made, 0)
    with pytest.raises(_partitioned.SourceLost) as caught:
        _ends(lambda: dask_train_centres((da.concatenate(Xs), da.concatenate(ys)),
                                         parse_options(OPTIONS.split()), callback=callback))
    message = str(caught.value)
    assert killed == [victim]
    assert f"worker {victim} was lost with partition" in message
    assert "train again" in message and "\n" not in message


def test_several_files_are_one_training_set(client, tmp_path):
    # kernsolve-train --add-data, and a list of files in Python: the model
    # of one process on the concatenated file, byte for byte
    y, X = _data(seed=5)
    paths = _files(tmp_path, y, X, [200, 201, 650])         # (a file of one row)
    whole = str(tmp_path / "whole.svm")
    kernsolve.write_problem(whole, y, sp.csr_matrix(X))
    common = OPTIONS.split()
    assert train_cli.cli(common + [whole, str(tmp_path / "one.model")]) == 0
    added = [a for p in paths[1:] for a in ("--add-data", p)]
    assert train_cli.cli(common + ["--scheduler", client.scheduler.address] + added
                         + [paths[0], str(tmp_path / "many.model")]) == 0
    one = open(tmp_path / "one.model", "rb").read()
    assert open(tmp_path / "many.model", "rb").read() == one
    got = _ends(lambda: dask_train_centres(paths, parse_options(common)))
    kernsolve.save_model(str(tmp_path / "list.model"), got)
    assert open(tmp_path / "list.model", "rb").read() == one
    # the estimators take a list of partitioned files
    est = kernsolve.EigenProClassifier(centers=P, gamma=0.5, epochs=3)
    many = est.fit([kernsolve.read_partitions(p) for p in paths], None)
    local = kernsolve.EigenProClassifier(centers=P, gamma=0.5, epochs=3).fit(X, y)
    assert np.array_equal(many.dual_coef_, local.dual_coef_)


def test_add_data_without_a_scheduler_says_what_to_do(tmp_path, capsys):
    y, X = _data(n=50)
    paths = _files(tmp_path, y, X, [20])
    assert train_cli.cli(["--add-data", paths[1], paths[0]]) != 0
    err = capsys.readouterr().err
    assert "--add-data" in err and "--scheduler" in err


class _DiesOnce:
    """An incremental estimator (DSG inside) whose worker dies (os._exit) at
    its ``die_at``-th partial_fit, the first time only (a marker file)."""

    def __init__(self, inner, die_at, marker):
        self.inner, self.die_at, self.marker, self.calls = inner, die_at, marker, 0

    def partial_fit(self, X, y, classes=None):
        self.calls += 1
        if self.calls == self.die_at and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            os._exit(1)
        self.inner.partial_fit(X, y, classes=classes)
        return self


def test_dask_partial_fit_recovers_a_lost_worker(client, tmp_path):
    # the worker running the third partition's step dies: the scheduler runs
    # the lost steps again from the graph on the other workers, and the
    # estimator is the one of partial_fit in one process
    import cloudpickle
    import sys
    import dask.array as da
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        y, X = _data(n=800, seed=7)
        params = dict(solver="cdsg", gamma=0.5, random_state=0)
        est = _DiesOnce(kernsolve.DSGClassifier(**params), 3, str(tmp_path / "died"))
        fitted = _ends(lambda: kernsolve.dask_partial_fit(
            est, da.from_array(X, chunks=(200, -1)), da.from_array(y, chunks=200)))
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert os.path.exists(tmp_path / "died")
    local = kernsolve.DSGClassifier(**params)
    for start in range(0, 800, 200):
        local.partial_fit(X[start:start + 200], y[start:start + 200], classes=np.unique(y))
    assert fitted.calls == 4
    assert np.array_equal(fitted.inner.coef_, local.coef_)


def test_dask_predict_recomputes_what_a_lost_worker_held(client):
    # predictions computed and held on the workers (persist), one worker
    # killed: Dask computes its partitions again from the graph (the model
    # was sent to every worker), the bits of kernsolve.predict
    import dask
    import dask.array as da
    y, X = _data(n=600, seed=9)
    model = kernsolve.train(y, X, "-q -c 4 -g 0.5")
    labels, values = kernsolve.dask_predict(da.from_array(X, chunks=(100, -1)), model)
    labels, values = client.persist([labels, values])
    distributed.wait([labels, values])
    held = client.who_has([labels, values])
    victim = sorted({w for ws in held.values() for w in ws})[0]
    _kill(client, victim)
    got_labels, got_values = _ends(lambda: dask.compute(labels, values))
    want_labels, _, want_values = kernsolve.predict(y, X, model, "-q")
    assert np.array_equal(got_labels, want_labels)
    assert np.array_equal(got_values, want_values)
