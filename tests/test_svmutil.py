"""A libsvm.svmutil script with the import swapped to kernsolve.svmutil: same results.

Oracle: libsvm-official (LIBSVM 3.37's own Python bindings), run on the same
script in this process.  Each script below takes the module (``libsvm.svmutil``
or ``kernsolve.svmutil``) and returns everything the user's script would see:
what ``svm_read_problem`` returns (types included), the bytes of every file
``svm_save_model`` writes, ``svm_train``'s ``-v`` accuracies and errors,
``svm_predict``'s labels, accuracy tuples and decision values or
probabilities.  libsvm runs after ``srand(1)`` (a fresh process's ``rand()``),
kernsolve.svmutil from its fresh ``rand()`` state; both scripts make the same
calls in the same order, so the ``-v`` and ``-b 1`` folds are the same draws.

Tolerances: labels, files and cross-validation accuracies exactly; decision
values, probabilities and regression errors to 1e-9 relative (LIBSVM prints 6
significant digits; the sums differ in the last bits of a double only); probA
and probB to 1e-9 (Platt's Newton iterations on those values).
"""
import lzma
import os

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import libsvm_serial
from test_libsvm_dropin import _glibc

import kernsolve
from kernsolve import svmutil as ks_svmutil
from kernsolve.solvers.libsvm.libsvm_rand import GlibcRand

RTOL, ATOL = 1e-9, 1e-12


@pytest.fixture(scope="module")
def heart(tmp_path_factory):
    """The bundled heart_scale as a plain file (svmutil reads plain text only)."""
    path = tmp_path_factory.mktemp("svmutil") / "heart_scale"
    with lzma.open(kernsolve.dataset_path("heart_scale"), "rb") as f:
        path.write_bytes(f.read())
    return str(path)


def run_both(script, *args):
    """``script(module, *args)`` with libsvm.svmutil, then with kernsolve.svmutil."""
    svmutil = pytest.importorskip("libsvm.svmutil")
    libc = _glibc()
    with libsvm_serial():
        libc.srand(1)                     # the rand() of a fresh process
        theirs = script(svmutil, *args)
    ks_svmutil._RAND[0] = GlibcRand(1)
    ours = script(ks_svmutil, *args)
    return theirs, ours


def assert_same(theirs, ours, where="result"):
    """Same structure and types; floats to RTOL; model files by their bytes."""
    if isinstance(theirs, ModelFile):
        assert isinstance(ours, ModelFile), where
        assert_same_model_file(theirs.data, ours.data, theirs.exact, where)
        return
    assert type(ours) is type(theirs), f"{where}: {type(ours).__name__} vs {type(theirs).__name__}"
    if isinstance(theirs, dict):
        assert list(ours) == list(theirs), where
        for k in theirs:
            assert_same(theirs[k], ours[k], f"{where}[{k!r}]")
    elif isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs), where
        for i, (a, b) in enumerate(zip(theirs, ours)):
            assert_same(a, b, f"{where}[{i}]")
    elif isinstance(theirs, float):
        if np.isnan(theirs):
            assert np.isnan(ours), where
        else:
            assert ours == pytest.approx(theirs, rel=RTOL, abs=ATOL), where
    elif isinstance(theirs, np.ndarray):
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, where
        np.testing.assert_array_equal(ours, theirs, err_msg=where)
    elif sp.issparse(theirs):
        assert ours.shape == theirs.shape, where
        for part in ("data", "indices", "indptr"):
            a, b = getattr(theirs, part), getattr(ours, part)
            assert b.dtype == a.dtype, f"{where}.{part}"
            np.testing.assert_array_equal(b, a, err_msg=f"{where}.{part}")
    else:
        assert ours == theirs, where


class ModelFile:
    """The bytes of a saved model; ``exact``: byte-identical to LIBSVM's
    (RBF on these data: kernsolve's SMO takes LIBSVM's steps with LIBSVM's
    kernel values), else every number to RTOL (the linear and polynomial
    kernels' values may differ in the last bit, so rho and coefficients do)."""

    def __init__(self, path, exact):
        with open(path, "rb") as f:
            self.data = f.read()
        self.exact = exact


def _number(token):
    try:
        return float(token)
    except ValueError:
        return None


def assert_same_model_file(theirs, ours, exact, where):
    """Byte for byte (``exact``) but probA/probB (Platt's fit) and the one-class
    density marks (sorted decision values) to RTOL, or every
    number to RTOL and every other token equal."""
    a, b = theirs.split(b"\n"), ours.split(b"\n")
    assert len(b) == len(a), where
    for line_a, line_b in zip(a, b):
        if exact and not line_a.startswith((b"probA", b"probB", b"prob_density_marks")):
            assert line_b == line_a, where
            continue
        ta, tb = line_a.split(), line_b.split()
        assert len(tb) == len(ta), f"{where}: {line_b!r} vs {line_a!r}"
        for x, y in zip(ta, tb):
            ix, _, vx = x.rpartition(b":")
            iy, _, vy = y.rpartition(b":")
            if ix != iy or _number(vx) is None:
                assert y == x, f"{where}: {line_b!r} vs {line_a!r}"
            else:
                assert float(vy) == pytest.approx(float(vx), rel=RTOL, abs=ATOL), \
                    f"{where}: {line_b!r} vs {line_a!r}"


def saved(su, model, path, exact=True):
    su.svm_save_model(path, model)
    return ModelFile(path, exact)


# --------------------------------------------------------------------------
# the scripts
# --------------------------------------------------------------------------

def heart_script(su, path):
    """Every form of x, -v, -b 1, y=[], a failed call between draws."""
    out = {}
    y, x = su.svm_read_problem(path)
    ys, xs = su.svm_read_problem(path, return_scipy=True)
    with open(path) as f:                             # a text-mode file object
        out["read_text_object"] = su.svm_read_problem(f)
    out["read"] = (y, x)
    out["read_scipy"] = (ys, xs)
    dense = xs.toarray()
    forms = {
        "dicts": x,
        "scipy": xs,
        "numpy": dense,
        "lists": [list(r) for r in dense],
        "ragged": [list(r) + [0.0] * (i % 3) for i, r in enumerate(dense)],   # 13..15 values
        # two all-zero columns: svmutil's gamma is 1/13 (largest non-zero index)
        "numpy_wide": np.hstack([dense, np.zeros((dense.shape[0], 2))]),
        "tuples": tuple(tuple(r) for r in dense),
    }
    for name, xx in forms.items():
        m = su.svm_train(y[:200], xx[:200], "-c 4 -q")
        out[name + " model"] = saved(su, m, f"{path}.{name}.model")
        out[name + " predict"] = su.svm_predict(y[200:], xx[200:], m, "-q")
    out["linear"] = saved(su, su.svm_train(ys[:150], xs[:150], "-t 0 -c 0.5 -q"),
                          path + ".linear.model", exact=False)
    out["poly"] = saved(su, su.svm_train(y[:150], x[:150], "-t 1 -d 2 -r 1 -q"),
                        path + ".poly.model", exact=False)
    out["problem, parameter"] = saved(
        su, su.svm_train(su.svm_problem(y[:120], x[:120]), su.svm_parameter("-c 2 -q")),
        path + ".prob.model")
    out["cv"] = su.svm_train(y, x, "-c 4 -v 5 -q")
    try:                                              # infeasible nu: no draw is used
        su.svm_train(y, x, "-s 1 -n 0.95 -b 1 -q")
        out["infeasible"] = "trained"
    except ValueError:
        out["infeasible"] = "ValueError"
    out["cv -b 1"] = su.svm_train(y, x, "-c 4 -v 4 -b 1 -q")
    out["cv nu"] = su.svm_train(ys, xs, "-s 1 -n 0.4 -t 1 -d 2 -v 3 -q")
    mp = su.svm_train(y[:200], x[:200], "-c 4 -b 1 -q")
    out["-b 1 model"] = saved(su, mp, path + ".prob.model")
    out["-b 1 predict"] = su.svm_predict(y[200:], x[200:], mp, "-b 1 -q")
    out["-b 0 predict of a -b 1 model"] = su.svm_predict(y[200:], x[200:], mp, "-q")
    out["y=[]"] = su.svm_predict([], xs[200:], mp, "-q")
    out["loaded"] = su.svm_predict(y[200:], x[200:], su.svm_load_model(path + ".prob.model"),
                                   "-b 1 -q")
    out["evaluations"] = su.evaluations(y[:10], [1.0] * 10)
    return out


def iris_data():
    from sklearn.datasets import load_iris
    X, y = load_iris(return_X_y=True)
    X = np.round((X - X.min(0)) / (X.max(0) - X.min(0)) * 2 - 1, 4)
    order = np.random.default_rng(0).permutation(len(y))
    return (y[order] + 1).tolist(), X[order]


def multiclass_script(su, folder):
    """Three classes, one-class: decision values, probabilities, models."""
    out = {}
    y, X = iris_data()
    x = [{j + 1: float(v) for j, v in enumerate(row) if v != 0} for row in X]
    m = su.svm_train(y[:100], x[:100], "-c 10 -q")
    out["model"] = saved(su, m, os.path.join(folder, "iris.model"))
    out["predict"] = su.svm_predict(y[100:], x[100:], m, "-q")
    mp = su.svm_train(y[:100], X[:100], "-c 10 -b 1 -q")
    out["-b 1 predict"] = su.svm_predict(y[100:], X[100:], mp, "-b 1 -q")
    out["cv"] = su.svm_train(y, X, "-c 10 -v 5 -q")
    out["cv -b 1"] = su.svm_train(y, x, "-c 10 -b 1 -v 3 -q")
    nu = su.svm_train(y[:100], X[:100], "-s 1 -n 0.3 -b 1 -q")
    out["nu -b 1 predict"] = su.svm_predict(y[100:], X[100:], nu, "-b 1 -q")
    oc = su.svm_train(y[:100], x[:100], "-s 2 -n 0.2 -b 1 -q")
    out["one-class model"] = saved(su, oc, os.path.join(folder, "oc.model"))
    out["one-class predict"] = su.svm_predict(y[100:], x[100:], oc, "-q")
    out["one-class -b 1 predict"] = su.svm_predict(y[100:], x[100:], oc, "-b 1 -q")
    out["one-class cv"] = su.svm_train(y, x, "-s 2 -n 0.2 -v 4 -q")
    return out


def regression_script(su):
    """epsilon- and nu-SVR: MSE and SCC, -b 1 (no values), -v (MSE returned)."""
    rng = np.random.default_rng(7)
    X = np.round(rng.uniform(-1, 1, size=(160, 4)), 3)
    y = np.round(X @ [1.5, -2.0, 0.5, 0.0] + np.sin(3 * X[:, 0])
                 + 0.1 * rng.normal(size=160), 4)
    out = {}
    for opts in ("-s 3 -p 0.05 -c 4", "-s 4 -n 0.4 -c 2"):
        m = su.svm_train(y[:120], X[:120], opts + " -b 1 -q")
        out[opts + " predict"] = su.svm_predict(y[120:], X[120:], m, "-q")
        out[opts + " -b 1 predict"] = su.svm_predict(y[120:], X[120:], m, "-b 1 -q")
        out[opts + " cv"] = su.svm_train(y, X, opts + " -v 5 -q")
    return out


def precomputed_script(su, path):
    """-t 4: kernel rows as [serial, K...] lists, {0: serial, ...} dicts, an array."""
    ys, xs = su.svm_read_problem(path, return_scipy=True)
    X = xs.toarray()[:150]
    y = ys[:150].tolist()
    K = np.round(X @ X[:100].T, 6)              # linear kernel against the 100 training rows
    serial = np.arange(1, 151, dtype=float)[:, None]
    full = np.hstack([serial, K])
    forms = {"lists": [list(r) for r in full],
             "dicts": [{j: float(v) for j, v in enumerate(r)} for r in full],
             "numpy": full}
    out = {}
    for name, xx in forms.items():
        m = su.svm_train(y[:100], xx[:100], "-t 4 -c 0.5 -q")
        out[name + " model"] = saved(su, m, f"{path}.pre.{name}.model")
        out[name + " predict"] = su.svm_predict(y[100:], xx[100:], m, "-q")
    return out


def one_label_script(su, folder):
    """Training labels all equal: LIBSVM's one-class-label model, predicting that label."""
    y, x = [1, 1, 1], [{1: 0.5}, {1: 1.0}, {2: 0.3}]
    out = {"model": saved(su, su.svm_train(y, x, "-q"), os.path.join(folder, "one.model"))}
    m = su.svm_train(y, x, "-b 1 -q")
    out["predict"] = su.svm_predict([1, 2], [{1: 0.1}, {2: 1}], m, "-q")
    out["-b 1 predict"] = su.svm_predict([1, 2], [{1: 0.1}, {2: 1}], m, "-b 1 -q")
    return out


def test_one_label_model_gives_libsvm_results(tmp_path):
    with pytest.warns(UserWarning, match="only one class"):       # kernsolve's notice
        theirs, ours = run_both(one_label_script, str(tmp_path))
    assert theirs["predict"][2] == [[1], [1]]
    assert_same(theirs, ours)


def test_heart_script_gives_libsvm_results(heart):
    theirs, ours = run_both(heart_script, heart)
    assert theirs["infeasible"] == "ValueError"
    assert_same(theirs, ours)


def test_multiclass_and_one_class_give_libsvm_results(tmp_path):
    theirs, ours = run_both(multiclass_script, str(tmp_path))
    assert len(theirs["predict"][2][0]) == 3 and len(theirs["-b 1 predict"][2][0]) == 3
    assert_same(theirs, ours)


def test_regression_gives_libsvm_results():
    theirs, ours = run_both(regression_script)
    assert theirs["-s 3 -p 0.05 -c 4 -b 1 predict"][2][0] == []    # svmutil's SVR -b 1
    assert_same(theirs, ours)


def test_precomputed_kernel_rows_give_libsvm_results(heart):
    theirs, ours = run_both(precomputed_script, heart)
    assert_same(theirs, ours)


def test_nu_svc_returns_every_decision_value(svmutil):
    # svmutil 3.37 sizes its buffer for one value with nu-SVC, and LIBSVM writes
    # k(k-1)/2 into it (it crashes on three classes); kernsolve returns all of
    # them.  Oracle: LIBSVM's svm_predict_values with a buffer of the right size.
    from ctypes import c_double
    from libsvm.svm import gen_svm_nodearray, libsvm as clib
    y, X = iris_data()
    with libsvm_serial():
        m = svmutil.svm_train(y[:100], X[:100], "-s 1 -n 0.3 -q")
        theirs_labels, theirs_values = [], []
        for row in X[100:]:
            xi, _ = gen_svm_nodearray(row)
            buf = (c_double * 3)()
            theirs_labels.append(clib.svm_predict_values(m, xi, buf))
            theirs_values.append(buf[:3])
    ours = ks_svmutil.svm_predict(y[100:], X[100:],
                                  ks_svmutil.svm_train(y[:100], X[:100], "-s 1 -n 0.3 -q"), "-q")
    assert_same(theirs_labels, ours[0])
    assert_same(theirs_values, ours[2])


def test_read_problem_types_with_zeros_and_index_zero(svmutil, tmp_path):
    path = tmp_path / "z.txt"
    path.write_text("1 1:0 3:2.5\n-1 2:1.5 4:0\n2\n")
    assert_same(svmutil.svm_read_problem(str(path)), ks_svmutil.svm_read_problem(str(path)))
    assert_same(svmutil.svm_read_problem(str(path), return_scipy=True),
                ks_svmutil.svm_read_problem(str(path), return_scipy=True))
    path.write_text("1 0:1 1:0.5 2:0\n2 0:2 1:0.25 2:1\n")     # a precomputed kernel file
    assert_same(svmutil.svm_read_problem(str(path), return_scipy=True),
                ks_svmutil.svm_read_problem(str(path), return_scipy=True))
    with open(path, "rb") as f:                     # binary file objects too
        assert_same(svmutil.svm_read_problem(str(path)), ks_svmutil.svm_read_problem(f))


# --------------------------------------------------------------------------
# kernsolve's own API takes the same arguments
# --------------------------------------------------------------------------

def test_kernsolve_train_and_predict_take_libsvm_rows(svmutil, heart):
    y, x = svmutil.svm_read_problem(heart)
    ys, xs = kernsolve.read_problem(heart)
    a = kernsolve.train(y[:200], x[:200], "-c 4 -g 0.1 -q")
    b = kernsolve.train(ys[:200], xs[:200], "-c 4 -g 0.1 -q")
    assert np.array_equal(a.dual_coef, b.dual_coef) and np.array_equal(a.rho, b.rho)
    la, acc, va = kernsolve.predict(y[200:], x[200:], a, "-q")
    lb, _, vb = kernsolve.predict(ys[200:], xs[200:], b, "-q")
    assert np.array_equal(la, lb) and np.array_equal(va, vb)
    dense = xs[200:].toarray()
    ragged = [list(r) + [0.0] * (i % 3) for i, r in enumerate(dense)]    # 13..15 values
    assert len({len(r) for r in ragged}) > 1
    assert np.array_equal(kernsolve.predict(None, ragged, a, "-q")[0], la)
    # y=[] is "no true labels", as in svm_predict: no evaluation
    labels, scores, _ = kernsolve.predict([], x[200:], a, "-q")
    assert np.array_equal(labels, la) and all(np.isnan(scores))


def test_kernsolve_predict_reads_precomputed_dict_rows():
    rng = np.random.default_rng(1)
    X = np.round(rng.normal(size=(30, 3)), 3)
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    K = np.hstack([np.arange(1, 31)[:, None], X @ X.T])
    model = kernsolve.train(y, K, "-t 4 -q")
    dicts = [{j: float(v) for j, v in enumerate(r)} for r in K]
    np.testing.assert_array_equal(kernsolve.predict(y, dicts, model, "-q")[2],
                                  kernsolve.predict(y, K, model, "-q")[2])
    again = kernsolve.train(y, dicts, "-t 4 -q")
    assert np.array_equal(again.dual_coef, model.dual_coef)


def test_kernsolve_train_refuses_v_with_a_pointer():
    with pytest.raises(ValueError, match=r"^-v 5: kernsolve.train trains one model; "
                                         r"cross-validate with kernsolve.cross_validation"):
        kernsolve.train([1, -1, 1, -1], [[0.0], [1.0], [0.1], [0.9]], "-v 5 -q")


# --------------------------------------------------------------------------
# bad arguments: one line that names the problem
# --------------------------------------------------------------------------

X4 = [{1: 0.5}, {2: 1.0}, {1: -0.5}, {2: -1.0}]


@pytest.mark.parametrize("call, error, message", [
    (lambda: ks_svmutil.svm_train("1 -1", X4), TypeError,
     r"y must be a list, tuple or numpy array of labels, got str"),
    (lambda: ks_svmutil.svm_train([1, -1, 1, -1], "1:0.5"), TypeError,
     r"x must be a list of rows .*got str"),
    (lambda: ks_svmutil.svm_train([1, -1, 1], X4), ValueError,
     r"y has 3 labels but x has 4 rows"),
    (lambda: ks_svmutil.svm_train([1, -1], [{1: 1.0}, {"a": 2.0}]), ValueError,
     r"X row 2: feature indices must be integers >= 1, got 'a'"),
    (lambda: ks_svmutil.svm_train([1, -1], [{1: 1.0}, {0: 2.0}]), ValueError,
     r"X row 2: feature indices must be integers >= 1, got 0"),
    (lambda: ks_svmutil.svm_train([1, -1], [{1: 1.0}, {2: "x"}]), ValueError,
     r"X row 2, index 2: value 'x' is not a number"),
    (lambda: ks_svmutil.svm_train([1, -1], [[1.0], [2.0, float("nan")]]), ValueError,
     r"X row 2, index 2: value nan is not finite"),
    (lambda: ks_svmutil.svm_train([1, -1], [{1: 1.0}, "2:1"]), ValueError,
     r"X row 2: expected a dict \{index: value\} or a list of values"),
    (lambda: ks_svmutil.svm_train([1, -1, 1, -1], X4, "-c -1"), ValueError,
     r"-c: C must be > 0, got -1"),
    (lambda: ks_svmutil.svm_train([1.5, -1, 1, -1], X4), ValueError,
     r"classification labels must be integers"),
    (lambda: ks_svmutil.svm_predict([1], X4[:1], "model"), TypeError,
     r"m must be a model from svm_train or svm_load_model, got str"),
    (lambda: ks_svmutil.svm_predict([1], X4[:1], kernsolve.train([1, -1, 1, -1], X4, "-q"),
                                    "-x"), ValueError, r"unknown option: -x"),
    (lambda: ks_svmutil.svm_predict([1, 2], X4[:1], kernsolve.train([1, -1, 1, -1], X4, "-q")),
     ValueError, r"y has 2 labels but X has 1 rows"),
    (lambda: ks_svmutil.svm_save_model(os.devnull, "model"), TypeError,
     r"model must be a model from svm_train or svm_load_model"),
    (lambda: ks_svmutil.svm_load_model("/nonexistent/m.model"), OSError, r"m.model"),
])
def test_bad_arguments_get_one_line_errors(call, error, message):
    with pytest.raises(error, match=message) as info:
        call()
    assert "\n" not in str(info.value)


def test_from_kernsolve_svmutil_import_star_has_the_svmutil_names(svmutil):
    namespace = {}
    exec("from kernsolve.svmutil import *", namespace)
    for name in ("svm_train", "svm_predict", "svm_read_problem", "svm_load_model",
                 "svm_save_model", "svm_problem", "svm_parameter", "evaluations"):
        assert name in namespace and name in svmutil.__all__


def test_bools_in_rows_are_zeros_and_ones_as_libsvm_reads_them():
    # The red team: svm_train refused True/False that libsvm's svm_problem and
    # numpy take as 1/0.  Oracle: the same rows written with 1.0/0.0.
    y = [1, -1] * 6
    rows_bool = [{1: True, 2: 0.5}, {1: False, 2: 0.1}, {1: np.True_, 2: 0.3}] * 4
    rows_num = [{1: 1.0, 2: 0.5}, {1: 0.0, 2: 0.1}, {1: 1.0, 2: 0.3}] * 4
    test = [{1: 1.0, 2: 0.4}, {1: 0.0, 2: 0.2}]
    with_bools = ks_svmutil.svm_train(y, rows_bool, "-q")
    with_numbers = ks_svmutil.svm_train(y, rows_num, "-q")
    assert ks_svmutil.svm_predict([1, -1], test, with_bools, "-q")[2] == \
        ks_svmutil.svm_predict([1, -1], test, with_numbers, "-q")[2]
    with pytest.raises(ValueError, match=r"row 1, index 1: value 'a' is not a number"):
        ks_svmutil.svm_train([1, -1], [{1: "a"}, {1: 0.0}], "-q")
