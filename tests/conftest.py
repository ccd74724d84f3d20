"""Shared fixtures: the real datasets of ../shared/data, read in small slices."""
import contextlib
import ctypes
import lzma
import os

import pytest

SHARED_DATA = os.environ.get(
    "KERNSOLVE_SHARED_DATA",
    os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))


def shared_path(name):
    """Path of ``name.xz`` in the shared data folder; skip the test if absent."""
    path = os.path.join(SHARED_DATA, name + ".xz")
    if not os.path.exists(path):
        pytest.skip(f"shared dataset {name} not found at {path}")
    return path


def shared_lines(name, n_lines=None):
    """The first ``n_lines`` lines of a shared dataset, as bytes."""
    out = []
    with lzma.open(shared_path(name), "rb") as f:
        for line in f:
            out.append(line)
            if n_lines is not None and len(out) >= n_lines:
                break
    return b"".join(out)


@pytest.fixture
def vector_path():
    """The one switch of the compiled modules' vector paths
    (``kernsolve._core._simd.vector_paths``: "scalar", "avx2", "avx512"; it
    returns whether the CPU has the path), set back to the CPU's choice after
    the test."""
    from kernsolve._core._simd import vector_paths
    yield vector_paths
    vector_paths(None)


def parametrize_with_sklearn_checks(estimators):
    """scikit-learn's ``parametrize_with_checks(estimators)``; without
    scikit-learn, a skip of the one test it decorates (not of its module)."""
    try:
        from sklearn.utils.estimator_checks import parametrize_with_checks
    except ImportError:
        return pytest.mark.skip(reason="scikit-learn's estimator checks need scikit-learn")
    return parametrize_with_checks(estimators)


@pytest.fixture
def svmutil():
    """libsvm-official's ``svmutil`` (the LIBSVM oracle): the test that asks
    for it skips without it, not its whole module."""
    return pytest.importorskip("libsvm.svmutil")


@pytest.fixture
def shared():
    """Access to the shared datasets: ``shared.path(name)``, ``shared.lines(name, n)``."""
    class Shared:
        path = staticmethod(shared_path)
        lines = staticmethod(shared_lines)
    return Shared


def package_env(**extra):
    """Environment for a child Python that must import *this* kernsolve.

    In development that is the in-place build in the repository; in CI it is
    the installed copy, and the repository's source folder (which has no
    compiled modules) must not shadow it. Run such children with a working
    directory outside the repository for the same reason.
    """
    import kernsolve
    root = os.path.dirname(os.path.dirname(os.path.abspath(kernsolve.__file__)))
    env = dict(os.environ, **extra)
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return env


@contextlib.contextmanager
def libsvm_serial():
    """Run libsvm-official's OpenMP loops on one thread, restoring the setting after.

    Its small parallel loops spin for seconds when the cores are busy; one
    thread gives the same numbers quickly. kernsolve always receives an
    explicit thread count, so this does not change what kernsolve runs.
    """
    try:
        gomp = ctypes.CDLL("libgomp.so.1")
    except OSError:
        yield
        return
    previous = gomp.omp_get_max_threads()
    gomp.omp_set_num_threads(1)
    try:
        yield
    finally:
        gomp.omp_set_num_threads(previous)


def model_bytes(y, X, options):
    """The model file kernsolve.train(y, X, options) writes, as bytes: what
    the tests compare when a switch must not change a single bit."""
    import tempfile

    import kernsolve
    model = kernsolve.train(y, X, options)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model")
        kernsolve.save_model(path, model)
        with open(path, "rb") as f:
            return f.read()


def model_bytes_each(setting, values, restore, y, X, options, threads=(1, 2)):
    """The model files kernsolve.train writes with ``setting(value)`` for each
    of ``values`` and each thread count, as a set of bytes (one element: the
    switch changes no bit); ``setting(restore)`` afterwards, whatever happens."""
    texts = set()
    try:
        for value in values:
            setting(value)
            for n in threads:
                texts.add(model_bytes(y, X, f"{options} --threads {n}"))
    finally:
        setting(restore)
    return texts


# doc/smo.md, "Byte identity with LIBSVM": -b 1's probability numbers against
# LIBSVM's with the same folds.  Each within PROB_RTOL of its scale: a pair's
# |probA| + |probB| (B alone can be near 0 while A f is not), SVR's |probA|,
# the largest |mark| of the one-class density marks.
PROB_RTOL = 1e-10


def assert_probabilities_close(ours, theirs, what=""):
    """``ours``/``theirs``: dicts of "probA", "probB", "prob_density_marks"
    (absent or None when the model has none), each an array."""
    import numpy as np
    present = {k for k, v in theirs.items() if v is not None}
    assert present == {k for k, v in ours.items() if v is not None}, what
    a, b = np.asarray(theirs.get("probA", 0.0)), np.asarray(theirs.get("probB", 0.0))
    for key in present:
        x, ref = np.asarray(ours[key], float), np.asarray(theirs[key], float)
        assert x.shape == ref.shape, (what, key)
        if key == "prob_density_marks":
            scale = np.max(np.abs(ref))
        else:
            scale = np.abs(a) + (np.abs(b) if "probB" in present else 0.0)
        assert np.all(np.abs(x - ref) <= PROB_RTOL * scale), (what, key, x, ref)


@contextlib.contextmanager
def small_blocks_cluster(block_values):
    """A ``distributed.LocalCluster`` of two worker processes of one thread
    (each under a nanny) and its client, made current, with EigenPro's row
    blocks of ``block_values`` values in this process and in every worker,
    also one that a nanny starts after a loss (a worker plugin): small data
    gets many blocks."""
    distributed = pytest.importorskip("distributed")
    pytest.importorskip("dask.array")
    from kernsolve.solvers.eigenpro import nystrom

    class BlockValues(distributed.WorkerPlugin):
        def setup(self, worker):
            from kernsolve.solvers.eigenpro import nystrom as here     # (in the worker)
            here.BLOCK_VALUES = block_values

    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, worker_dashboard_address=None)
    client = distributed.Client(cluster, set_as_default=False)
    client.register_plugin(BlockValues())
    saved = nystrom.BLOCK_VALUES
    nystrom.BLOCK_VALUES = block_values
    try:
        with client.as_current():
            yield client
    finally:
        nystrom.BLOCK_VALUES = saved
        client.close()
        cluster.close()
