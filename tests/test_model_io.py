"""Model files in LIBSVM's format: libsvm-official <-> kernsolve, exactly.

Oracle: libsvm-official 3.37 trains the models and writes them
(``svm_save_model``); kernsolve must read every number LIBSVM reads
(``svm_load_model`` of the same file), write files LIBSVM loads back with the
same numbers and the same predictions, and turn every corrupt file into a
ModelFormatError (never a crash).
"""
import io
import os

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import libsvm_serial, shared_lines
from kernsolve import ModelFormatError
from kernsolve._model import Model, load_model, save_model
from kernsolve._params import Parameters
from kernsolve._sparse import to_scipy


_CACHE = {}


def data(name, n_lines, n_features=None):
    key = (name, n_lines)
    if key not in _CACHE:
        load_svmlight_file = pytest.importorskip("sklearn.datasets").load_svmlight_file
        X, y = load_svmlight_file(io.BytesIO(shared_lines(name, n_lines)), zero_based=False,
                                  n_features=n_features)
        _CACHE[key] = (y, sp.csr_matrix(X))
    return _CACHE[key]


def three_class():
    y, X = data("fashion-mnist.scale.t", 400, 784)
    keep = np.isin(y, [0, 1, 2])
    return y[keep], X[keep]


def precomputed_heart():
    y, X = data("heart_scale", 120)
    D = X.toarray()
    K = D @ D.T
    return y, np.hstack([np.arange(1, len(y) + 1)[:, None], K])


CASES = {
    "csvc-rbf-prob": (lambda: data("heart_scale", 120), "-s 0 -t 2 -c 2 -b 1"),
    "csvc-linear": (lambda: data("heart_scale", 120), "-s 0 -t 0 -c 0.5"),
    "csvc-poly": (lambda: data("heart_scale", 120), "-s 0 -t 1 -d 2 -g 0.1 -r 1"),
    "csvc-sigmoid": (lambda: data("australian_scale", 150), "-s 0 -t 3 -g 0.01 -r -0.5"),
    "nusvc-rbf-prob": (lambda: data("australian_scale", 150), "-s 1 -n 0.4 -b 1"),
    "3class-prob": (three_class, "-s 0 -t 2 -g 0.02 -c 4 -b 1"),
    "3class-nu": (three_class, "-s 1 -t 1 -g 0.01 -n 0.2"),
    "eps-svr-prob": (lambda: data("housing_scale", 150), "-s 3 -t 2 -c 10 -p 0.5 -b 1"),
    "nu-svr": (lambda: data("housing_scale", 150), "-s 4 -t 0 -n 0.3"),
    "one-class-prob": (lambda: data("heart_scale", 120), "-s 2 -n 0.2 -b 1"),
    "precomputed": (precomputed_heart, "-s 0 -t 4 -c 0.1"),
}


@pytest.fixture(scope="module")
def libsvm_files(tmp_path_factory):
    """Each case trained and saved by libsvm-official (once per module)."""
    svmutil = pytest.importorskip("libsvm.svmutil")
    out = {}
    folder = tmp_path_factory.mktemp("libsvm_models")
    for name, (make, options) in CASES.items():
        y, X = make()
        with libsvm_serial():
            m = svmutil.svm_train(y, X, options + " -q")
        path = str(folder / (name + ".model"))
        svmutil.svm_save_model(path, m)
        out[name] = path
    return out


def libsvm_predict(m, X, probability=False):
    """LIBSVM's labels and values row by row through its C API.

    (svmutil.svm_predict sizes its buffer for one value for nu-SVC, which
    overflows for more than two classes, so the C functions are called with a
    buffer large enough for every pair.)
    """
    import ctypes
    from libsvm import svm as lsvm
    k = m.get_nr_class()
    buf = (ctypes.c_double * max(k * k, 1))()
    kernel = m.param.kernel_type == 4
    n_values = (k if probability else k * (k - 1) // 2) if m.get_svm_type() in (0, 1) else \
        (2 if probability and m.get_svm_type() == 2 else 1)
    labels, values = [], []
    X = np.asarray(X) if kernel else sp.csr_matrix(X)
    for i in range(X.shape[0]):
        if kernel:
            xi, _ = lsvm.gen_svm_nodearray(np.ascontiguousarray(X[i]), isKernel=True)
        else:
            sl = slice(X.indptr[i], X.indptr[i + 1])
            xi, _ = lsvm.gen_svm_nodearray((X.indices[sl], X.data[sl]))
        if probability:
            labels.append(lsvm.libsvm.svm_predict_probability(m, xi, buf))
        else:
            labels.append(lsvm.libsvm.svm_predict_values(m, xi, buf))
        values.append(buf[:n_values])
    return np.array(labels), np.array(values)


def libsvm_fields(m):
    """Every number of a libsvm-official model, via its own accessors."""
    k = m.get_nr_class()
    n_pairs = k * (k - 1) // 2
    s = m.get_svm_type()
    out = dict(svm_type=s, kernel=m.param.kernel_type, nr_class=k, l=m.l,
               rho=[m.rho[i] for i in range(n_pairs)],
               coef=np.array(m.get_sv_coef()).reshape(m.l, -1).T if m.l else None,
               sv=m.get_SV())
    if m.param.kernel_type in (1, 2, 3):
        out["gamma"] = m.param.gamma
    if m.param.kernel_type == 1:
        out["degree"] = m.param.degree
    if m.param.kernel_type in (1, 3):
        out["coef0"] = m.param.coef0
    if s in (0, 1):
        out["labels"] = m.get_labels()
        out["nSV"] = [m.nSV[i] for i in range(k)]
    out["probA"] = [m.probA[i] for i in range(n_pairs)] if m.probA else None
    out["probB"] = [m.probB[i] for i in range(n_pairs)] if m.probB else None
    out["marks"] = [m.prob_density_marks[i] for i in range(10)] if m.prob_density_marks else None
    return out


def our_fields(model):
    p = model.param
    k = model.nr_class
    sv = sp.csr_matrix(model.support_vectors)
    svs = []
    for i in range(sv.shape[0]):
        row = sv[i]
        if p.kernel_type == 4:
            svs.append({0: row[0, 0]})
        else:
            svs.append({int(j) + 1: float(v) for j, v in zip(row.indices, row.data)})
    out = dict(svm_type=p.svm_type, kernel=p.kernel_type, nr_class=k, l=model.n_sv,
               rho=list(model.rho), coef=model.dual_coef if model.n_sv else None, sv=svs)
    if p.kernel_type in (1, 2, 3):
        out["gamma"] = p.gamma
    if p.kernel_type == 1:
        out["degree"] = p.degree
    if p.kernel_type in (1, 3):
        out["coef0"] = p.coef0
    if p.svm_type in (0, 1):
        out["labels"] = [int(v) for v in model.labels]
        out["nSV"] = [int(v) for v in model.n_support]
    out["probA"] = None if model.prob_a is None else list(model.prob_a)
    out["probB"] = None if model.prob_b is None else list(model.prob_b)
    out["marks"] = None if model.prob_density_marks is None else list(model.prob_density_marks)
    return out


def assert_same_fields(a, b):
    assert a.keys() == b.keys()
    for key in a:
        if key == "coef":
            np.testing.assert_array_equal(a[key], b[key])
        else:
            assert a[key] == b[key], key


@pytest.mark.parametrize("case", sorted(CASES))
def test_reads_every_number_libsvm_reads(svmutil, libsvm_files, case):
    path = libsvm_files[case]
    ours = load_model(path)
    assert_same_fields(our_fields(ours), libsvm_fields(svmutil.svm_load_model(path)))
    assert np.all(ours.support_indices == 0)
    assert ours.stats == {}


@pytest.mark.parametrize("case", sorted(CASES))
def test_libsvm_reads_our_files(svmutil, libsvm_files, case, tmp_path):
    path = libsvm_files[case]
    ours = load_model(path)
    out = str(tmp_path / "ours.model")
    save_model(out, ours)
    theirs = svmutil.svm_load_model(path)
    again = svmutil.svm_load_model(out)
    assert again is not None
    assert_same_fields(libsvm_fields(again), libsvm_fields(theirs))
    # and LIBSVM's predictions with our file are its predictions with its own file
    make, options = CASES[case]
    y, X = make()
    probability = "-b 1" in options
    with libsvm_serial():
        a = libsvm_predict(theirs, X, probability)
        b = libsvm_predict(again, X, probability)
    # LIBSVM's OpenMP build sums the SVR/one-class expansion in a parallel
    # reduction, so it only agrees with itself to rounding there (one thread
    # here, but keep the tolerance for a runtime that ignores the setting).
    np.testing.assert_allclose(a[1], b[1], rtol=1e-12, atol=1e-12)
    if m_type(theirs) in (0, 1, 2):
        np.testing.assert_array_equal(a[0], b[0])
    else:
        np.testing.assert_allclose(a[0], b[0], rtol=1e-12)


def m_type(m):
    return m.get_svm_type()


@pytest.mark.parametrize("case", sorted(CASES))
def test_round_trip_is_exact(libsvm_files, case, tmp_path):
    m1 = load_model(libsvm_files[case])
    p1 = str(tmp_path / "a.model")
    p2 = str(tmp_path / "b.model")
    save_model(p1, m1)
    m2 = load_model(p1)
    save_model(p2, m2)
    assert_same_fields(our_fields(m1), our_fields(m2))
    with open(p1, "rb") as f1, open(p2, "rb") as f2:
        assert f1.read() == f2.read()


def test_header_layout_is_libsvm_s(libsvm_files, tmp_path):
    """Same header lines, in the same order, as svm_save_model writes."""
    for case in ("csvc-poly", "nusvc-rbf-prob", "eps-svr-prob", "one-class-prob", "precomputed"):
        path = libsvm_files[case]
        out = str(tmp_path / "x.model")
        save_model(out, load_model(path))

        def header(p):
            with open(p) as f:
                lines = f.read().split("\n")
            return [ln.split()[0] for ln in lines[:lines.index("SV") + 1]]
        assert header(out) == header(path)


def test_precomputed_serials(libsvm_files, tmp_path):
    m = load_model(libsvm_files["precomputed"])
    assert m.param.kernel_type == 4
    serials = m.support_vectors.toarray()[:, 0]
    assert serials.min() >= 1 and serials.max() <= 120
    assert np.all(serials == np.round(serials))
    out = str(tmp_path / "p.model")
    save_model(out, m)
    with open(out) as f:
        body = f.read().split("SV\n")[1].splitlines()
    assert all(ln.split()[-1] == "0:%d" % s for ln, s in zip(body, serials))


def test_model_built_in_python_saves_and_libsvm_predicts(svmutil, tmp_path):
    """A Model assembled from arrays (as training does) is a valid LIBSVM model."""
    sv = np.array([[1.0, 0.0, -0.5], [0.0, 2.0, 0.0], [0.25, 0.0, 1.0]])
    model = Model(param=Parameters(kernel_type=2, gamma=0.5), labels=np.array([1.0, -1.0]),
                  support_vectors=sv, support_indices=np.array([1, 4, 7]),
                  n_support=np.array([1, 2]), dual_coef=np.array([[0.7, -0.3, -0.4]]),
                  rho=np.array([0.1]), stats={"n_iter": 12, "seconds": 0.01})
    path = str(tmp_path / "py.model")
    model.save(path)
    m = svmutil.svm_load_model(path)
    x = {1: 0.5, 3: 0.25}
    with libsvm_serial():
        _, _, vals = svmutil.svm_predict([1], [x], m, "-q")
    d = np.array([0.5, 0.0, 0.25])
    k = np.exp(-0.5 * ((sv - d) ** 2).sum(axis=1))
    assert vals[0][0] == pytest.approx(float(k @ [0.7, -0.3, -0.4] - 0.1), rel=1e-12)
    back = Model.load(path)
    np.testing.assert_array_equal(back.support_vectors.toarray(), sv)
    assert back.stats == {}  # statistics are not part of LIBSVM's file


def test_save_rejects_inconsistent_models(tmp_path):
    good = dict(param=Parameters(kernel_type=0), labels=np.array([1.0, -1.0]),
                support_vectors=np.eye(2), support_indices=np.zeros(2),
                n_support=np.array([1, 1]), dual_coef=np.array([[1.0, -1.0]]),
                rho=np.array([0.0]))
    save_model(str(tmp_path / "ok.model"), Model(**good))
    bad = [
        (dict(rho=np.array([0.0, 1.0])), "rho has 2 values, expected 1"),
        (dict(n_support=np.array([2, 1])), "n_support"),
        (dict(dual_coef=np.ones((2, 2))), "dual_coef has shape"),
        (dict(param=Parameters(kernel_type=2)), "gamma is None"),
        (dict(prob_a=np.ones(3)), "prob_a has 3 values"),
        (dict(prob_a=np.array([np.nan]), prob_b=np.ones(1)), "prob_a has non-finite values"),
        # rho = inf is LIBSVM's one-class -n 1 model and is written (test_unclear_errors.py)
        (dict(rho=np.array([np.nan])), "dual_coef has non-finite values or rho is NaN"),
        (dict(dual_coef=np.array([[np.inf, -1.0]])),
         "dual_coef has non-finite values or rho is NaN"),
        (dict(labels=np.array([1.0, np.nan])), "labels must be finite"),
        (dict(support_vectors=np.array([[np.nan, 0], [0, 1]])), "support vector 1 has non-finite"),
    ]
    for change, message in bad:
        with pytest.raises(ValueError, match=message):
            save_model(str(tmp_path / "bad.model"), Model(**{**good, **change}))
    assert not os.path.exists(tmp_path / "bad.model")


def test_interrupted_save_leaves_old_file(libsvm_files, tmp_path, monkeypatch):
    import kernsolve._model as km
    path = str(tmp_path / "keep.model")
    model = load_model(libsvm_files["3class-prob"])
    with open(libsvm_files["csvc-linear"], "rb") as f:
        old = f.read()
    with open(path, "wb") as f:
        f.write(old)

    def broken_fsync(fd):
        raise OSError("disk full")
    monkeypatch.setattr(km.os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="disk full"):
        save_model(path, model)
    with open(path, "rb") as f:
        assert f.read() == old
    assert sorted(os.listdir(tmp_path)) == ["keep.model"]  # no temp file left


# ------------------------------------------------------------ corrupt files

def write(tmp_path, text, name="bad.model"):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(path)


GOOD = """svm_type c_svc
kernel_type rbf
gamma 0.5
nr_class 3
total_sv 3
rho 0.1 0.2 0.3
label 1 2 3
nr_sv 1 1 1
SV
1 0.5 1:1 3:0.5
-1 0.25 2:1
-0.5 -0.25 1:-1 2:2
"""


def test_good_hand_written_model(svmutil, tmp_path):
    m = load_model(write(tmp_path, GOOD))
    assert m.nr_class == 3 and m.n_sv == 3 and m.n_features == 3
    np.testing.assert_array_equal(m.dual_coef, [[1, -1, -0.5], [0.5, 0.25, -0.25]])
    assert svmutil.svm_load_model(write(tmp_path, GOOD, "g.model")) is not None
    # blank space between header items is fine for LIBSVM, so for us too
    spaced = GOOD.replace("nr_class 3\n", "\nnr_class 3\n\n")
    assert svmutil.svm_load_model(write(tmp_path, spaced, "s.model")) is not None
    assert_same_fields(our_fields(load_model(write(tmp_path, spaced, "s2.model"))), our_fields(m))


@pytest.mark.parametrize("edit,line,message", [
    (("svm_type c_svc", "svm_type c_svm"), 1, "unknown svm_type 'c_svm'"),
    (("kernel_type rbf", "kernel_type gaussian"), 2, "unknown kernel_type 'gaussian'"),
    (("gamma 0.5", "gamma abc"), 3, "gamma: 'abc' is not a number"),
    (("gamma 0.5", "gamma nan"), 3, "gamma: 'nan' is not a finite number"),
    (("nr_class 3", "nr_class -3"), 4, "nr_class must be >= 1, got -3"),
    (("nr_class 3", "nr_class 3.5"), 4, "nr_class: '3.5' is not an integer"),
    (("total_sv 3", "total_sv -1"), 5, "total_sv must be >= 0, got -1"),
    (("total_sv 3", "total_sv 4"), 8, "nr_sv adds up to 3, but total_sv is 4"),
    (("rho 0.1 0.2 0.3", "rho 0.1 0.2"), 6, "rho needs 3 values, got 2"),
    (("label 1 2 3", "label 1 2"), 7, "label needs 3 values, got 2"),
    (("label 1 2 3", "label 1 2 2"), 7, "duplicate class labels"),
    (("nr_sv 1 1 1", "nr_sv 1 1 -1"), 8, "nr_sv values must be >= 0"),
    (("label 1 2 3\n", "label 1 2 3\nstats {}\n"), 8, "unknown keyword 'stats'"),
    (("gamma 0.5\n", "gamma 0.5\ngamma 0.5\n"), 4, "gamma given twice"),
    (("gamma 0.5\n", ""), 8, "missing 'gamma' line"),
    (("nr_sv 1 1 1\n", ""), 8, "missing 'nr_sv' line"),
    (("SV\n", ""), 9, "unknown keyword '1' in the model header"),
    (("SV\n1 0.5 1:1 3:0.5\n-1 0.25 2:1\n-0.5 -0.25 1:-1 2:2\n", ""), 8, "no 'SV' line"),
    (("1 0.5 1:1 3:0.5", "1 0.5x 1:1 3:0.5"), 10, "coefficient: '0.5x' is not a number"),
    (("1 0.5 1:1 3:0.5", "1 0.5 3:1 1:0.5"), 10, "strictly increasing (1 after 3)"),
    (("1 0.5 1:1 3:0.5", "1 0.5 0:1 3:0.5"), 10, "feature indices start at 1, got 0"),
    (("1 0.5 1:1 3:0.5", "1 0.5 1:1 3"), 10, "expected index:value, got '3'"),
    (("1 0.5 1:1 3:0.5", "1 0.5 1:1 x:0.5"), 10, "feature index: 'x' is not an integer"),
    (("1 0.5 1:1 3:0.5", "1 0.5 1:1 3:inf"), 10, "feature value: 'inf' is not a finite number"),
    (("1 0.5 1:1 3:0.5", "1"), 10, "expected 2 coefficient(s), got 1"),
    (("-0.5 -0.25 1:-1 2:2\n", ""), 12, "truncated model file: total_sv is 3 but only 2"),
    (("-0.5 -0.25 1:-1 2:2\n", "-0.5 -0.25 1:-1 2:2\n1 1 1:1\n"), 13,
     "unexpected text after the 3 support vectors"),
])
def test_corrupt_file_messages(tmp_path, edit, line, message):
    old, new = edit
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(ModelFormatError) as exc:
        load_model(path)
    text = str(exc.value)
    assert text.startswith(f"{path}:{line}: "), text
    assert message in text, text
    assert "\n" not in text
    assert isinstance(exc.value, ValueError)


def test_other_svm_types_checked(tmp_path):
    svr = ("svm_type epsilon_svr\nkernel_type linear\nnr_class 2\ntotal_sv 1\nrho 0.5\n"
           "SV\n0.25 1:1\n")
    assert load_model(write(tmp_path, svr)).nr_class == 2
    with pytest.raises(ModelFormatError, match=":3: nr_class must be 2 for epsilon_svr"):
        load_model(write(tmp_path, svr.replace("nr_class 2", "nr_class 3")))
    with pytest.raises(ModelFormatError, match=":6: 'label' is not allowed"):
        load_model(write(tmp_path, svr.replace("rho 0.5\n", "rho 0.5\nlabel 1 2\n")))
    with pytest.raises(ModelFormatError, match="prob_density_marks needs 10 values, got 2"):
        load_model(write(tmp_path, svr.replace("epsilon_svr", "one_class").replace(
            "rho 0.5\n", "rho 0.5\nprob_density_marks 1 2\n")))
    pre = ("svm_type c_svc\nkernel_type precomputed\nnr_class 2\ntotal_sv 1\nrho 0.5\n"
           "label 1 -1\nnr_sv 1 0\nSV\n0.25 0:3\n")
    assert load_model(write(tmp_path, pre)).support_vectors[0, 0] == 3
    with pytest.raises(ModelFormatError, match="one '0:serial' pair"):
        load_model(write(tmp_path, pre.replace("0:3", "1:3")))
    with pytest.raises(ModelFormatError, match="serial number must be a non-negative integer"):
        load_model(write(tmp_path, pre.replace("0:3", "0:2.5")))


def test_binary_and_empty_files(tmp_path):
    with pytest.raises(ModelFormatError, match=":1: empty model file"):
        load_model(write(tmp_path, b""))
    with pytest.raises(ModelFormatError, match=r":5: binary data \(NUL byte\)"):
        load_model(write(tmp_path, GOOD.encode()[:40] + b"\n\n\0\0garbage"))
    with pytest.raises(ModelFormatError, match="non-ASCII byte"):
        load_model(write(tmp_path, "svm_type c_svc\nkernel_type rbf\u00e9\n"))
    with pytest.raises(ModelFormatError, match="no 'SV' line"):
        load_model(write(tmp_path, "\n\n  \n"))
    with pytest.raises(FileNotFoundError):
        load_model(str(tmp_path / "absent.model"))


def _load_or_error(path):
    """Load; return the model, or None on ModelFormatError; anything else fails."""
    try:
        m = load_model(path)
    except ModelFormatError as exc:
        assert str(exc).startswith(path + ":")
        return None
    return m


def test_truncation_anywhere_never_crashes(libsvm_files, tmp_path):
    from kernsolve._predict import predict
    with open(libsvm_files["3class-prob"], "rb") as f:
        blob = f.read()
    y, X = three_class()
    path = str(tmp_path / "t.model")
    n_ok = 0
    cuts = sorted(set(np.linspace(0, len(blob) - 1, 150).astype(int)) | {len(blob) - 1})
    for cut in cuts:
        with open(path, "wb") as f:
            f.write(blob[:cut])
        m = _load_or_error(path)
        if m is not None:
            n_ok += 1
            labels, _, _ = predict(None, X[:5], m, "-q")  # a valid model predicts
            assert labels.shape == (5,)
    assert n_ok < len(cuts)  # most cuts are detected
    full = _load_or_error(libsvm_files["3class-prob"])
    assert full is not None


def test_byte_flips_and_junk_never_crash(libsvm_files, tmp_path):
    from kernsolve._predict import predict
    rng = np.random.default_rng(3)
    with open(libsvm_files["nusvc-rbf-prob"], "rb") as f:
        blob = bytearray(f.read())
    y, X = data("australian_scale", 150)
    path = str(tmp_path / "f.model")
    for trial in range(200):
        b = bytearray(blob)
        for pos in rng.integers(0, len(b), size=rng.integers(1, 4)):
            b[pos] = int(rng.choice([rng.integers(0, 256), ord(":"), ord(" "), ord("\n"),
                                     ord("-"), ord("9"), ord("e")]))
        with open(path, "wb") as f:
            f.write(bytes(b))
        m = _load_or_error(path)
        if m is not None:
            try:
                predict(None, X[:3], m, "-q")
            except ValueError:
                pass  # e.g. a flipped label made the model inconsistent: an error, no crash
    for trial in range(30):
        junk = rng.integers(0, 256, size=int(rng.integers(1, 2000)), dtype=np.uint8).tobytes()
        with open(path, "wb") as f:
            f.write(junk)
        assert _load_or_error(path) is None


def test_reads_file_objects_and_crlf(libsvm_files):
    with open(libsvm_files["csvc-linear"], "rb") as f:
        blob = f.read()
    a = load_model(libsvm_files["csvc-linear"])
    b = load_model(io.BytesIO(blob.replace(b"\n", b"\r\n")))
    assert_same_fields(our_fields(a), our_fields(b))


def test_bulk_reader_equals_line_by_line_reader(libsvm_files, monkeypatch, tmp_path):
    """The bulk SV conversion (fast path) gives what the careful per-line reader gives."""
    import kernsolve._model_text as mt
    text = GOOD.replace("-1 0.25 2:1", "-1 0.25 2:1 3:4e-3") + ""
    paths = [libsvm_files[c] for c in sorted(CASES)] + [write(tmp_path, text)]
    fast = [load_model(p) for p in paths]
    monkeypatch.setattr(mt, "_bulk_support_vectors", lambda lines, m: None)
    slow = [load_model(p) for p in paths]
    for a, b in zip(fast, slow):
        assert_same_fields(our_fields(a), our_fields(b))
        assert a.support_vectors.shape == b.support_vectors.shape


def test_why_stats_stay_out_of_the_file(svmutil, libsvm_files, tmp_path, capfd):
    """LIBSVM's reader refuses an unknown header keyword, so statistics cannot go there."""
    with open(libsvm_files["csvc-linear"]) as f:
        text = f.read()
    path = write(tmp_path, text.replace("nr_class", "n_iter 17\nnr_class", 1))
    assert svmutil.svm_load_model(path) is None
    capfd.readouterr()
    with pytest.raises(ModelFormatError, match="unknown keyword 'n_iter'"):
        load_model(path)


_TOKEN = None
try:
    from hypothesis import given, settings, strategies as st
    _NUMBERISH = st.text(alphabet="0123456789+-.eE", min_size=0, max_size=6)
    _TOKEN = st.one_of(_NUMBERISH, st.builds(lambda a, b: a + ":" + b, _NUMBERISH, _NUMBERISH),
                       st.sampled_from(["1:0.5", "2:1e-3", "3:-4", "10:.5", "+2:1.", "1:1:1"]))
except ImportError:  # pragma: no cover
    pass


@pytest.mark.parametrize("lines,m", [(["0.5 1:1:1", "0.5 0"], 1), (["1:1:1", "0"], 0),
                                     (["0.5 1:2 3::4", "0.5 5"], 1)])
def test_bulk_reader_refuses_tokens_with_two_colons(lines, m):
    # Found by the property test below: the colons of the lines were counted
    # as a whole, so one token with two and another with none read as pairs.
    import kernsolve._model as km
    import kernsolve._model_text as mt
    assert mt._bulk_support_vectors(lines, m) is None
    with pytest.raises(ModelFormatError):
        mt._read_support_vectors(km._Reader("x").fail, lines, 1, m, 2, bulk=False)


@pytest.mark.skipif(_TOKEN is None, reason="hypothesis not installed")
def test_bulk_reader_accepts_exactly_what_the_careful_reader_accepts():
    import kernsolve._model as km
    import kernsolve._model_text as mt

    @settings(max_examples=300, deadline=None)
    @given(rows=st.lists(st.lists(_TOKEN, max_size=5), min_size=1, max_size=4),
           m=st.integers(0, 2))
    def check(rows, m):
        lines = [" ".join(r) for r in rows]
        bulk = mt._bulk_support_vectors(lines, m)
        try:
            careful = mt._read_support_vectors(km._Reader("x").fail, lines, 1, m, 2,
                                               bulk=False)
        except ModelFormatError:
            careful = None
        if bulk is None:
            return  # the careful reader decides (and names the problem)
        assert careful is not None, lines
        np.testing.assert_array_equal(bulk[1], careful[1])
        assert (to_scipy(bulk[0]) != to_scipy(careful[0])).nnz == 0 \
            and bulk[0].shape == careful[0].shape
    check()


def test_support_vectors_read_in_chunks_equal_the_line_by_line_reader(monkeypatch):
    # The bulk reader converts the SV lines a chunk at a time (its token lists
    # bound the memory: a 119 MB 10-class model took 2.6 GB to load when every
    # token of the file was a Python string at once).  Oracle: the
    # line-by-line reader, on a 4-class model whose chunks end mid-class.
    from kernsolve import _model_text
    rng = np.random.default_rng(3)
    l, m = 37, 3
    coef = rng.normal(size=(m, l))
    rows = sp.random(l, 60, density=0.2, format="csr", random_state=4)
    rows.data = np.round(rows.data, 6)
    lines = [" ".join(["%.17g" % c for c in coef[:, i]] +
                      [f"{j + 1}:{v:.17g}" for j, v in zip(rows[i].indices, rows[i].data)])
             for i in range(l)]
    slow = _model_text._read_support_vectors(None, lines, 1, m, 2, bulk=False)
    for chunk in (1, 5, 36, 37, 2048):
        monkeypatch.setattr(_model_text, "_BULK_LINES", chunk)
        fast = _model_text._bulk_support_vectors(lines, m)
        assert fast is not None
        assert (to_scipy(fast[0]) != to_scipy(slow[0])).nnz == 0 and fast[0].shape == slow[0].shape
        np.testing.assert_array_equal(fast[1], slow[1])
    # a bad token in a later chunk still sends the file to the line-by-line reader
    lines[30] = lines[30] + " 99:x"
    monkeypatch.setattr(_model_text, "_BULK_LINES", 5)
    assert _model_text._bulk_support_vectors(lines, m) is None
