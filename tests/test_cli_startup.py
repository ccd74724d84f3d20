"""kernsolve-train and kernsolve-predict start without scipy, and give the same
bytes as the Python API (doc/cli.md, "Start-up time").

The commands run in a fresh interpreter, which then lists the modules it
loaded: no scipy module, neither numpy.testing nor numpy.f2py (what
``import scipy.sparse`` pulls in), nor numpy.ma or the reader's worker pool
for these small files.  Oracles: the Python API in this process
(``kernsolve.read_problem`` gives scipy matrices, ``kernsolve.train``,
``save_model``, ``predict``) and scikit-learn-style ``SVC`` on scipy input;
for kernsolve's own CSR (``kernsolve._sparse.Csr``), scipy's csr_matrix.
No timing is measured here.
"""
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

import kernsolve
from kernsolve import _sparse
from kernsolve._sparse import Csr
from conftest import package_env

# scipy and what ``import scipy.sparse`` pulls in; numpy.ma (np.unique's first
# call imports it, and a model's labels need no such thing); the reader's worker pool
# (concurrent.futures, which imports logging), which a file of one chunk does
# not need.
HEAVY = ("scipy", "numpy.testing", "numpy.f2py", "numpy.ma", "concurrent.futures", "logging")

# Runs the commands' entry points (what the console scripts call) in one
# fresh interpreter, then prints their exit codes and the heavy modules loaded.
CHILD = textwrap.dedent("""\
    import json, sys
    from kernsolve.cli import predict, train
    runs = json.loads(sys.argv[1])
    codes = [(train if tool == "train" else predict).cli(args) for tool, args in runs]
    heavy = sorted(m for m in sys.modules
                   if m.split(".")[0] == "scipy" or m in {heavy!r})
    print(json.dumps({{"codes": codes, "heavy": heavy}}))
    """).format(heavy=set(HEAVY[1:]))


def run_fresh(runs, cwd):
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(runs)], cwd=cwd,
                          env=package_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1]), proc.stderr


@pytest.fixture(scope="module")
def heart():
    y, X = kernsolve.read_problem(kernsolve.dataset_path("heart_scale"))
    return y, X


def _split_files(tmp_path, y, X, wider_test=False):
    train, test = str(tmp_path / "train"), str(tmp_path / "test")
    kernsolve.write_problem(train, y[:200], X[:200])
    Xt = X[200:]
    if wider_test:     # a feature the model never saw: LIBSVM's width rule
        extra = sp.csr_matrix(np.linspace(0.0, 1.0, Xt.shape[0]).reshape(-1, 1))
        Xt = sp.hstack([Xt, extra], format="csr")
    kernsolve.write_problem(test, y[200:], Xt)
    return train, test


def _expected(train, test, options):
    """The model file's bytes and the predictions' lines of the Python API."""
    y, X = kernsolve.read_problem(train)
    yt, Xt = kernsolve.read_problem(test)
    assert sp.issparse(X) and sp.issparse(Xt)          # the public API's matrices
    model = kernsolve.train(y, X, options + " -q")
    if "-t 4" not in options:        # (a precomputed kernel's are its serial numbers)
        assert sp.issparse(model.support_vectors)
    labels, _, _ = kernsolve.predict(yt, Xt, model, "-q")
    return model, "".join("%.17g\n" % v for v in labels.tolist())


def _commands_without_scipy_match_the_api(tmp_path, train, test, options):
    """Train and predict with the commands in a fresh interpreter: both exit 0
    with no heavy module loaded, and write the API's model bytes and labels."""
    model_path, out_path = str(tmp_path / "cli.model"), str(tmp_path / "cli.out")
    result, err = run_fresh([["train", options.split() + ["-q", train, model_path]],
                             ["predict", ["-q", test, model_path, out_path]]], tmp_path)
    assert result == {"codes": [0, 0], "heavy": []}, err
    model, predictions = _expected(train, test, options)
    ours = str(tmp_path / "api.model")
    kernsolve.save_model(ours, model)
    assert open(model_path, "rb").read() == open(ours, "rb").read()
    assert open(out_path).read() == predictions


@pytest.mark.parametrize("options,wider", [
    ("-c 4 -g 0.5", True),          # C-SVC, RBF, a test file wider than the model
    ("-s 3 -t 1 -d 2 -c 2", False),  # epsilon-SVR, polynomial
    ("-s 2 -t 5 -n 0.3", False),     # one-class, Laplacian
])
def test_train_and_predict_load_no_scipy_and_match_the_api(tmp_path, heart, options, wider):
    y, X = heart
    train, test = _split_files(tmp_path, y, X, wider_test=wider)
    _commands_without_scipy_match_the_api(tmp_path, train, test, options)


# kernsolve-train with chunks of 64 bytes (the reader's threshold lowered so
# that heart_scale's file is many chunks): whether the worker pool is loaded.
THREADS_CHILD = textwrap.dedent("""\
    import sys
    from kernsolve import _io
    from kernsolve.cli import train
    _io._MIN_CHUNK = 64
    code = train.cli(sys.argv[1:])
    print(code, "concurrent.futures" in sys.modules)
    """)


@pytest.mark.parametrize("threads,pool", [("1", False), ("2", True)])
def test_train_threads_reach_the_reader(tmp_path, heart, threads, pool):
    y, X = heart
    train = _split_files(tmp_path, y, X)[0]
    proc = subprocess.run(
        [sys.executable, "-c", THREADS_CHILD, "-q", "--threads", threads, train,
         str(tmp_path / "m")], cwd=tmp_path, env=package_env(), capture_output=True,
        text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0", str(pool)]


# kernsolve-train -v: the folds run on plain threads, without joblib (whose
# import was a fifth of the command's, doc/cross-validation.md) nor
# concurrent.futures and logging.
CV_CHILD = textwrap.dedent("""\
    import sys
    from kernsolve.cli import train
    code = train.cli(sys.argv[1:])
    print(code, sorted(m for m in sys.modules if m.split(".")[0] in
                       ("joblib", "scipy", "concurrent", "logging")))
    """)


@pytest.mark.parametrize("options", [["-c", "4", "-g", "0.5"], ["-s", "3", "--threads", "2"]])
def test_cross_validation_runs_without_joblib_and_matches_the_api(tmp_path, heart, options):
    """Oracle: kernsolve.cross_validation in this process through joblib's
    threading backend (the same folds and fits, joblib's runner)."""
    y, X = heart
    train = _split_files(tmp_path, y, X)[0]
    proc = subprocess.run([sys.executable, "-c", CV_CHILD, "-q", "-v", "5"] + options + [train],
                          cwd=tmp_path, env=package_env(), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    *lines, last = proc.stdout.splitlines()
    assert last == "0 []"
    r = kernsolve.cross_validation(*kernsolve.read_problem(train), " ".join(options) + " -q",
                                   n_folds=5, backend="threading",
                                   n_jobs=2 if "--threads" in options else None)
    if "-s" in options:
        assert lines == [f"Cross Validation Mean squared error = {r.mean_squared_error:g}",
                         f"Cross Validation Squared correlation coefficient = "
                         f"{r.squared_correlation:g}"]
    else:
        assert lines == [f"Cross Validation Accuracy = {r.accuracy:g}%"]


# kernsolve-grid on a LIBSVM file with shared kernel matrices (--warm, two
# workers): no scipy either (its rows stay kernsolve's CSR; the fits' BLAS
# limit loads only numpy's), nor joblib, concurrent.futures or logging.
GRID_CHILD = textwrap.dedent("""\
    import sys
    from kernsolve.cli import grid
    code = grid.cli(sys.argv[1:])
    print(code, sorted(m for m in sys.modules if m.split(".")[0] in
                       ("joblib", "scipy", "concurrent", "logging")))
    """)


def test_grid_runs_without_scipy_and_matches_the_api(tmp_path, heart):
    """Oracle: kernsolve.grid_search in this process on the same rows and
    options (its best line and every cell's rate in the output file)."""
    y, X = heart
    train = _split_files(tmp_path, y, X)[0]
    out = tmp_path / "grid.out"
    args = ["--warm", "--threads", "2", "-log2c", "-1,5,2", "-log2g", "-5,-1,2", "-png", "null",
            "-out", str(out), "-q", train]
    proc = subprocess.run([sys.executable, "-c", GRID_CHILD] + args, cwd=tmp_path,
                          env=package_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    *lines, last = proc.stdout.splitlines()
    assert last == "0 []"
    r = kernsolve.grid_search(*kernsolve.read_problem(train), "--warm -q", n_jobs=2,
                              grid={"c": [0.5, 2.0, 8.0, 32.0], "g": [2.0 ** -5, 2.0 ** -3, 0.5]})
    assert lines[-1] == r.summary_line().rstrip("\n")
    rates = {line.rsplit(" rate=", 1)[0]: float(line.rsplit("=", 1)[1])
             for line in out.read_text().splitlines()}
    assert rates == {c["label"]: c["rate"] for c in r.cells}


def test_precomputed_kernel_without_scipy(tmp_path, heart):
    y, X = heart
    D = X.toarray()
    K = D @ D[:150].T                              # linear kernel against 150 rows
    serial = np.arange(1, K.shape[0] + 1, dtype=np.float64).reshape(-1, 1)
    rows = np.hstack([serial, K])
    train, test = str(tmp_path / "k.train"), str(tmp_path / "k.test")
    kernsolve.write_problem(train, y[:150], rows[:150], zero_based=True)
    kernsolve.write_problem(test, y[150:], rows[150:], zero_based=True)
    _commands_without_scipy_match_the_api(tmp_path, train, test, "-t 4 -c 0.1")


def test_probability_models_match_the_api(tmp_path, heart):
    # -b 1's decision values take the dense kernel matrix (scipy's BLAS dgemm):
    # scipy is loaded then, where it is used; the files still match.
    y, X = heart
    train, test = _split_files(tmp_path, y, X)
    model_path, out_path = str(tmp_path / "p.model"), str(tmp_path / "p.out")
    result, err = run_fresh([["train", ["-b", "1", "-c", "2", "-q", train, model_path]],
                             ["predict", ["-b", "1", "-q", test, model_path, out_path]]],
                            tmp_path)
    assert result["codes"] == [0, 0], err
    model = kernsolve.train(*kernsolve.read_problem(train), "-b 1 -c 2 -q")
    ours = str(tmp_path / "api.model")
    kernsolve.save_model(ours, model)
    assert open(model_path, "rb").read() == open(ours, "rb").read()
    yt, Xt = kernsolve.read_problem(test)
    labels, _, prob = kernsolve.predict(yt, Xt, model, "-b 1 -q")
    lines = open(out_path).read().splitlines()
    assert lines[0] == "labels " + " ".join("%d" % v for v in model.labels)
    assert lines[1:] == ["%g" % v + "".join(" %g" % p for p in row)
                         for v, row in zip(labels.tolist(), prob.tolist())]


def test_the_estimator_on_scipy_input_predicts_what_the_command_does(tmp_path, heart):
    y, X = heart
    train, test = _split_files(tmp_path, y, X)
    model_path, out_path = str(tmp_path / "e.model"), str(tmp_path / "e.out")
    result, _ = run_fresh([["train", ["-c", "4", "-g", "0.5", "-q", train, model_path]],
                           ["predict", ["-q", test, model_path, out_path]]], tmp_path)
    assert result["codes"] == [0, 0]
    clf = kernsolve.SVC(C=4.0, gamma=0.5).fit(sp.csr_matrix(X[:200]), y[:200])
    for Xt in (sp.csr_matrix(X[200:]), sp.csr_array(X[200:]), X[200:].toarray()):
        assert open(out_path).read() == "".join("%.17g\n" % v
                                                for v in clf.predict(Xt).tolist())


def test_type_hints_resolve_without_scipy(tmp_path):
    code = textwrap.dedent("""\
        import sys, typing
        import kernsolve
        for f in (kernsolve.train, kernsolve.read_problem, kernsolve.predict):
            typing.get_type_hints(f)
        from kernsolve._typing import ScipySparse
        assert not isinstance([[1.0]], ScipySparse)
        print(sorted(m for m in sys.modules if m.split(".")[0] == "scipy"))
        """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=package_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
    from kernsolve._typing import ScipySparse
    assert isinstance(sp.csr_matrix((2, 2)), ScipySparse)
    assert isinstance(sp.csr_array((2, 2)), ScipySparse)


# ------------------------------------------------------------ Csr against scipy

def _random_csr(rng, shape=(9, 7), density=0.35):
    M = sp.random(*shape, density=density, format="csr", random_state=rng)
    M.sort_indices()
    return M, Csr(M.data.copy(), M.indices.astype(np.int32), M.indptr.astype(np.int64),
                  M.shape)


@pytest.mark.parametrize("key", [slice(2, 7), slice(None), slice(5, 2), slice(0, 9, 2),
                                 np.array([4, 0, 4, 8]), np.array([], dtype=int), [3],
                                 -1, 2, np.arange(9) % 3 == 0])
def test_csr_row_selection_is_scipys(key):
    M, C = _random_csr(np.random.default_rng(1))
    got, want = C[key], M[key]
    if want.ndim == 1:            # newer scipy: one integer row of a matrix is 1-D
        want = want.reshape(1, -1)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.toarray(), want.toarray())
    assert np.all(np.diff(got.indptr) >= 0) and got.nnz == want.nnz


def test_csr_conversions_are_scipys():
    rng = np.random.default_rng(2)
    M, C = _random_csr(rng)
    np.testing.assert_array_equal(C.toarray(), M.toarray())
    np.testing.assert_array_equal(_sparse.dense_transpose(C), M.T.toarray())
    np.testing.assert_array_equal(_sparse.dense_columns(C, [0, 3]), M[:, [0, 3]].toarray())
    wide = _sparse.widened(C, 11)
    assert isinstance(wide, Csr) and wide.shape == (9, 11)
    np.testing.assert_array_equal(wide.toarray()[:, :7], M.toarray())
    S = _sparse.to_scipy(C)
    assert sp.issparse(S) and S.format == "csr" and np.shares_memory(S.data, C.data)
    np.testing.assert_array_equal(S.toarray(), M.toarray())
    D = M.toarray()
    D[1] = 0.0
    for source in (D, sp.csr_matrix(D), sp.coo_matrix(D)):
        A = _sparse.as_csr(source)
        B = sp.csr_matrix(D)
        assert isinstance(A, Csr) and A.shape == B.shape
        np.testing.assert_array_equal(A.indptr, B.indptr)
        np.testing.assert_array_equal(A.indices, B.indices)
        np.testing.assert_array_equal(A.data, B.data)
    with pytest.raises(TypeError, match="rows only"):
        C[:, 0]


def test_issparse_knows_both_kinds():
    M, C = _random_csr(np.random.default_rng(3))
    assert _sparse.issparse(C) and _sparse.issparse(M)
    assert _sparse.issparse(sp.csr_array(M))
    assert not _sparse.issparse(M.toarray()) and not _sparse.issparse([[1.0]])
    assert not _sparse.is_scipy_sparse(C)


def test_public_api_keeps_scipy_matrices(tmp_path, heart):
    y, X = heart
    model = kernsolve.train(y, X, "-q")
    path = str(tmp_path / "m")
    kernsolve.save_model(path, model)
    loaded = kernsolve.load_model(path)
    assert sp.issparse(loaded.support_vectors) and loaded.support_vectors.format == "csr"
    private = kernsolve.load_model(path, _scipy=False)
    assert isinstance(private.support_vectors, Csr)
    np.testing.assert_array_equal(private.support_vectors.toarray(),
                                  loaded.support_vectors.toarray())
    # training on kernsolve's Csr gives the same model (its support vectors a Csr)
    yc, Xc = kernsolve.read_problem(kernsolve.dataset_path("heart_scale"), _scipy=False)
    assert isinstance(Xc, Csr)
    again = kernsolve.train(yc, Xc, "-q")
    assert isinstance(again.support_vectors, Csr)
    np.testing.assert_array_equal(again.support_vectors.toarray(),
                                  model.support_vectors.toarray())
    np.testing.assert_array_equal(again.dual_coef, model.dual_coef)
    # whole-model solvers and cross-validation take a Csr too
    cv = kernsolve.cross_validation(yc, Xc, "-q", n_folds=3)
    assert cv.score == kernsolve.cross_validation(y, X, "-q", n_folds=3).score
    dsg = kernsolve.train(yc, Xc, "--solver dsg --epochs 0.5 -q")
    np.testing.assert_array_equal(kernsolve.predict(yc, Xc, dsg, "-q")[0],
                                  kernsolve.predict(y, X, dsg, "-q")[0])


def test_one_blas_thread_for_numpy_alone_then_scipy_inside(tmp_path):
    # one_blas_thread(scipy=False) (a grid's fits: numpy's BLAS only) does not
    # import scipy (0.12 s of a small grid); a holder inside that needs
    # scipy's BLAS loads it, and it runs on one thread too until the last
    # holder leaves, when every count is back (oracle: threadpoolctl's report)
    code = textwrap.dedent("""\
        import sys
        import numpy   # numpy's BLAS loaded, as for any fit
        from threadpoolctl import threadpool_info
        from kernsolve._threads import one_blas_thread

        def blas():
            return {i["filepath"]: i["num_threads"] for i in threadpool_info()
                    if i["user_api"] == "blas"}

        with one_blas_thread(scipy=False):
            assert "scipy" not in sys.modules
            numpy_only = blas()
            with one_blas_thread():
                both = blas()
            after_inner = blas()
        after = blas()
        print(numpy_only, both, after_inner, after)
        assert len(numpy_only) == 1 and set(numpy_only.values()) == {1}
        assert any("scipy.libs" in path for path in both) and set(both.values()) == {1}
        assert after_inner == both
        assert set(after.values()) == {2} and set(after) == set(both)
        """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path,
                          env=package_env(OPENBLAS_NUM_THREADS="2"), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_one_blas_thread_reaches_scipys_blas_loaded_late(tmp_path):
    # scipy (and its OpenBLAS) is no longer loaded by import kernsolve: the
    # BLAS limit must still reach it, or the dense kernel matrix's dgemm would
    # run on many threads and its bits follow the machine (EigenPro's models).
    code = textwrap.dedent("""\
        import sys
        from kernsolve._threads import one_blas_thread
        assert "scipy" not in sys.modules
        with one_blas_thread():
            from threadpoolctl import threadpool_info
            blas = [(i["filepath"], i["num_threads"]) for i in threadpool_info()
                    if i["user_api"] == "blas"]
        print(blas)
        assert any("scipy.libs" in path for path, _ in blas), blas   # scipy's own OpenBLAS
        assert all(n == 1 for _, n in blas), blas
        """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path,
                          env=package_env(OPENBLAS_NUM_THREADS="2"), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
