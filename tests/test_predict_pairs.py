"""One-vs-one decision values pair by pair (issue 15, items 6 and 7).

Oracles: libsvm-official's own ``svm_predict_values`` on a precomputed kernel
(the kernel values are the test's numbers, so LIBSVM's sums must come out
bit for bit); a pure-Python transcription of LIBSVM's loop over the kernel
values; peak memory from tracemalloc (numpy reports its buffers to it) and
from a child process's maxrss, against bounds derived from the input sizes;
threadpoolctl's own report of the BLAS thread count.
"""
import os
import subprocess
import sys
import threading
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
import threadpoolctl

import kernsolve
from kernsolve import _predict
from kernsolve._kernels import kernel_matrix
from kernsolve._model import Model
from kernsolve._params import Parameters
from kernsolve._threads import one_blas_thread

from test_model_io import libsvm_predict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _model(k, n_support, d=6, kernel=2, seed=0, svm_type=0):
    """A LIBSVM model with random coefficients and n_support SVs per class."""
    rng = np.random.default_rng(seed)
    n_support = np.asarray(n_support, dtype=np.int64)
    l = int(n_support.sum())
    m = k - 1 if svm_type in (0, 1) else 1
    return Model(param=Parameters(svm_type=svm_type, kernel_type=kernel, gamma=0.3),
                 labels=np.arange(k, dtype=float) if svm_type in (0, 1) else np.empty(0),
                 support_vectors=sp.csr_matrix(rng.normal(size=(l, d))),
                 support_indices=np.zeros(l, np.int64),
                 n_support=n_support if svm_type in (0, 1) else np.empty(0, np.int64),
                 dual_coef=rng.normal(size=(m, l)),
                 rho=rng.normal(size=k * (k - 1) // 2 if svm_type in (0, 1) else 1))


def _libsvm_loop(K, model):
    """LIBSVM's svm_predict_values over given kernel values, in Python floats."""
    coef = np.asarray(model.dual_coef)
    rho = np.asarray(model.rho)
    s = int(model.param.svm_type)
    out = []
    for row in K.tolist():
        if s not in (0, 1):
            total = 0.0
            for c, kv in zip(coef[0].tolist(), row):
                total += c * kv
            out.append([total - rho[0]])
            continue
        k = model.nr_class
        start = np.concatenate([[0], np.cumsum(model.n_support)]).tolist()
        values, p = [], 0
        for i in range(k):
            for j in range(i + 1, k):
                total = 0.0
                for q in range(start[i], start[i + 1]):
                    total += coef[j - 1, q] * row[q]
                for q in range(start[j], start[j + 1]):
                    total += coef[i, q] * row[q]
                values.append(total - rho[p])
                p += 1
        out.append(values)
    return np.array(out).reshape(K.shape[0], -1)


@pytest.mark.parametrize("options", ["-c 10", "-s 1 -n 0.3", "-s 3 -p 0.05", "-s 4 -n 0.4",
                                     "-s 2 -n 0.3"])
def test_precomputed_values_are_libsvm_bits(tmp_path, options):
    # With the kernel values given, LIBSVM's sums are the only arithmetic left:
    # the decision values must be LIBSVM's own bits (multi-class, nu-SVC).
    # libsvm-official is built with OpenMP, whose reduction reorders the one
    # sum of SVR and one-class (its values vary from run to run by an ulp):
    # there, LIBSVM's serial loop is the oracle and libsvm-official a check
    # to within rounding.
    rng = np.random.default_rng(3)
    X = rng.normal(size=(90, 4))
    y = rng.integers(0, 5, 90).astype(float) if "-s 3" not in options and "-s 4" not in \
        options else X.sum(axis=1)
    Kx = np.column_stack([np.arange(1, 91), X @ X.T + 1.0])
    model = kernsolve.train(y, Kx, "-t 4 -q " + options)
    path = str(tmp_path / "m")
    kernsolve.save_model(path, model)
    from libsvm import svmutil
    _, theirs = libsvm_predict(svmutil.svm_load_model(path), Kx)
    ours = _predict.decision_function(Kx, model)
    if int(model.param.svm_type) in (0, 1):
        assert np.array_equal(ours, theirs.reshape(ours.shape))
        return
    np.testing.assert_allclose(ours, theirs.reshape(ours.shape), rtol=1e-13, atol=1e-13)
    serials = np.asarray(model.support_vectors)[:, 0].astype(int)
    assert np.array_equal(ours, _libsvm_loop(Kx[:, serials], model))


@pytest.mark.parametrize("n_support", [[7, 0, 5, 9], [1, 1], [0, 12, 3], [30]])
def test_values_follow_libsvm_loop(n_support):
    # Uneven classes, empty classes, one class: every value is LIBSVM's loop
    # over the same kernel values, bit for bit.
    model = _model(len(n_support), n_support)
    X = np.random.default_rng(1).normal(size=(25, 6))
    K = kernel_matrix(X, model.support_vectors.toarray(), gamma=0.3) \
        if model.n_sv else np.zeros((25, 0))
    assert np.array_equal(_predict.decision_function(X, model), _libsvm_loop(K, model))


@pytest.mark.parametrize("svm_type", [3, 2])
def test_regression_and_one_class_follow_libsvm_loop(svm_type):
    model = _model(2, [40], svm_type=svm_type)
    X = np.random.default_rng(2).normal(size=(15, 6))
    K = kernel_matrix(X, model.support_vectors.toarray(), gamma=0.3)
    assert np.array_equal(_predict.decision_function(X, model), _libsvm_loop(K, model))


def test_blocks_do_not_change_bits(monkeypatch):
    # Tiny blocks (one row, one SV per chunk) and one block give the same bits.
    model = _model(5, [9, 4, 0, 6, 11])
    X = np.random.default_rng(4).normal(size=(30, 6))
    whole = _predict.decision_function(X, model)
    monkeypatch.setattr(_predict, "BLOCK_BYTES", 1)
    assert np.array_equal(_predict.decision_function(X, model), whole)


def test_many_classes_memory_in_proportion():
    # 100 classes, 20 SVs each: the dense (n_SV, n_pairs) coefficient matrix
    # alone would be 2000 * 4950 * 8 = 79 MB.  Allowed: the output (rows x
    # pairs), the kernel block and the model, a few times over.
    k, per, rows = 100, 20, 40
    model = _model(k, [per] * k)
    X = np.random.default_rng(5).normal(size=(rows, 6))
    pairs, l = k * (k - 1) // 2, k * per
    bound = 4 * 8 * (rows * pairs + rows * l + l * 6) + (2 << 20)
    _predict.predict(None, X, model, "-q")         # warm-up (imports, caches)
    tracemalloc.start()
    try:
        labels, _, values = _predict.predict(None, X, model, "-q")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert values.shape == (rows, pairs)
    assert peak < bound, f"peak {peak / 2**20:.1f} MB, bound {bound / 2**20:.1f} MB"


_CHILD = r"""
import resource, sys
from kernsolve.cli import predict
code = predict.main(sys.argv[1:])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _cli_maxrss(tmp_path, model, name, rows=270):
    path = str(tmp_path / (name + ".model"))
    kernsolve.save_model(path, model)
    rng = np.random.default_rng(6)
    data = tmp_path / "test.txt"
    data.write_text("".join("0 " + " ".join(f"{j + 1}:{v:.3f}" for j, v in enumerate(r)) + "\n"
                            for r in rng.normal(size=(rows, 6))))
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", _CHILD, "-q", str(data), path,
                           str(tmp_path / (name + ".out"))], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[-1]) * 1024


def test_cli_many_classes_peak_rss(tmp_path):
    # kernsolve-predict with a 100-class model of 30 SVs per class against the
    # same command with a 2-class model: the difference is bounded by the
    # model and the output in memory (values of 270 rows x 4950 pairs), not
    # by n_SV x n_pairs (3000 * 4950 * 8 = 119 MB).
    small = _cli_maxrss(tmp_path, _model(2, [30, 30]), "small")
    big = _cli_maxrss(tmp_path, _model(100, [30] * 100), "big")
    l, pairs = 3000, 4950
    model_bytes = 8 * (l * 99 + 2 * l * 6)      # coefficients, SV values and indices
    bound = 4 * model_bytes + 3 * 8 * 270 * pairs + (16 << 20)
    print(f"peak RSS over the 2-class run: {(big - small) / 2**20:.0f} MB")
    assert big - small < bound, f"{(big - small) / 2**20:.0f} MB > {bound / 2**20:.0f} MB"


# ---------------------------------------------------------------- item 7: threads

def _blas_threads():
    return {i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"}


def test_one_blas_thread_interleaved_in_threads_restores_the_count():
    # A enters, B enters, A leaves, B leaves: the process gets its count back
    # (per-call limits would restore B's saved 1), and while B is still
    # inside, BLAS stays at one thread.
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def a():
        with one_blas_thread():
            a_in.set()
            b_in.wait(30)
        a_out.set()

    def b():
        a_in.wait(30)
        with one_blas_thread():
            b_in.set()
            a_out.wait(30)
            seen["inside"] = _blas_threads()

    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        threads = [threading.Thread(target=a), threading.Thread(target=b)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert seen["inside"] == {1}
        assert _blas_threads() == {2}


def test_one_blas_thread_nested_and_after_an_exception():
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        with pytest.raises(RuntimeError):
            with one_blas_thread():
                with one_blas_thread():
                    assert _blas_threads() == {1}
                assert _blas_threads() == {1}
                raise RuntimeError
        assert _blas_threads() == {2}


@pytest.mark.parametrize("k, per", [(5, 300), (2, 3000)])
def test_values_do_not_depend_on_blas_threads(k, per):
    # The pair sums use no BLAS product: 1 or 2 BLAS threads, same bits.
    model = _model(k, [per] * k, d=8)
    X = np.random.default_rng(7).normal(size=(300, 8))
    with threadpoolctl.threadpool_limits(1, user_api="blas"):
        one = _predict.decision_function(X, model)
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        two = _predict.decision_function(X, model)
    assert np.array_equal(one, two)


def _run_in_threads(jobs):
    results = [None] * len(jobs)
    errors = []
    start = threading.Barrier(len(jobs))

    def run(i):
        try:
            start.wait(30)
            results[i] = jobs[i]()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors
    return results


def test_concurrent_fits_and_predictions_are_serial_bits():
    # Two EigenPro fits (which hold the one-thread limit), an EigenPro and a
    # LIBSVM prediction, all at once: the same bits as one at a time, and the
    # process's BLAS thread count is back afterwards.
    rng = np.random.default_rng(8)
    X = rng.normal(size=(300, 5))
    y = (X[:, 0] + X[:, 1] > 0).astype(float) + (X[:, 2] > 0.5)
    Xt = rng.normal(size=(400, 5))
    ep_opts = "--solver eigenpro -g 0.3 --epochs 2 --seed 1 -q --threads 1"
    libsvm_model = _model(5, [300] * 5, d=5)
    ep_model = kernsolve.train(y, X, ep_opts)
    jobs = [lambda: kernsolve.train(y, X, ep_opts).coef,
            lambda: kernsolve.train(y, X, ep_opts.replace("--seed 1", "--seed 2")).coef,
            lambda: ep_model.decision_function(Xt),
            lambda: _predict.decision_function(Xt, libsvm_model)]
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        serial = [job() for job in jobs]
        for _ in range(2):
            together = _run_in_threads(jobs)
            for a, b in zip(serial, together):
                assert np.array_equal(a, b)
        assert _blas_threads() == {2}


def test_labels_only_prediction_holds_a_group_of_rows_not_rows_times_pairs(tmp_path):
    # The red team: an 80-class model on 8000 rows peaked at 343 MB where
    # svm-predict takes 12 MB (the rows x k(k-1)/2 decision matrix, for labels
    # only).  kernsolve-predict now votes a group of rows at a time.  Oracle:
    # the labels of kernsolve.predict (which returns every value); the bound is
    # half of what the full matrix alone takes, measured by tracemalloc (numpy
    # reports its buffers to it), so it does not depend on the machine.
    import tracemalloc
    import kernsolve
    from test_cli import run_inproc
    rng = np.random.default_rng(0)
    k, per_class, n_test = 80, 3, 16000
    centres = rng.uniform(-1, 1, size=(k, 2))
    y = np.repeat(np.arange(k), per_class).astype(float)
    X = centres[y.astype(int)] + 0.05 * rng.standard_normal((y.size, 2))
    model = kernsolve.train(y, X, "-c 10 -g 20 -q")
    kernsolve.save_model(str(tmp_path / "m.model"), model)
    Xt = rng.uniform(-1, 1, size=(n_test, 2))
    yt = np.zeros(n_test)
    kernsolve.write_problem(str(tmp_path / "test"), yt, Xt)
    yt, Xt = kernsolve.read_problem(str(tmp_path / "test"))
    expected, _, values = kernsolve.predict(yt, Xt, model, "-q")
    full = values.nbytes
    assert full == n_test * k * (k - 1) // 2 * 8         # 404 MB
    del values
    tracemalloc.start()
    try:
        done = run_inproc("predict", "-q", tmp_path / "test", tmp_path / "m.model",
                          tmp_path / "out")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert done.returncode == 0, done.stderr
    assert peak < full / 2, peak
    got = np.loadtxt(tmp_path / "out")
    np.testing.assert_array_equal(got, expected)
