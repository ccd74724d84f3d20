"""Prediction: kernsolve.predict on LIBSVM's own models equals LIBSVM's svm_predict.

Oracle: libsvm-official trains on a slice, saves the model; kernsolve loads the
same file and predicts held-out rows.  Same model, so labels must be identical,
decision values agree to 1e-10 relative, probabilities to 1e-8, and the
accuracy tuple is LIBSVM's ``evaluations`` of LIBSVM's labels.
"""
import numpy as np
import pytest
import scipy.sparse as sp

from kernsolve._model import load_model, save_model
from kernsolve._predict import (decision_function, evaluations, multiclass_probability,
                                predict, predict_probability)
from test_model_io import data, libsvm_predict, libsvm_serial, three_class


def heart():
    return data("heart_scale", 270)


def australian():
    return data("australian_scale", 300)


def housing():
    return data("housing_scale", 300)


def fashion3():
    y, X = data("fashion-mnist.scale.t", 600, 784)
    keep = np.isin(y, [0, 2, 6])  # three similar classes: pullover, shirt, t-shirt
    return y[keep], X[keep]


def fashion4():
    y, X = data("fashion-mnist.scale.t", 600, 784)
    keep = np.isin(y, [0, 1, 2, 3])
    return y[keep], X[keep]


def fashion10():
    return data("fashion-mnist.scale.t", 400, 784)


def mushrooms3():
    """mushrooms relabelled into three classes (label x feature 5 bit)."""
    y, X = data("mushrooms", 600, 112)
    f = np.asarray(X[:, 4].todense()).ravel() > 0
    return np.where(f, 3.0, y), X


# name -> (data, n_train, options)
CASES = {
    "heart-rbf": (heart, 150, "-s 0 -t 2 -c 1"),
    "heart-rbf-prob": (heart, 150, "-s 0 -t 2 -c 4 -g 0.05 -b 1"),
    "heart-linear": (heart, 150, "-s 0 -t 0 -c 0.1"),
    "heart-poly-prob": (heart, 150, "-s 0 -t 1 -d 3 -g 0.1 -r 1 -b 1"),
    "heart-sigmoid": (heart, 150, "-s 0 -t 3 -g 0.01 -r -0.2 -c 10"),
    "australian-nu-prob": (australian, 200, "-s 1 -n 0.3 -b 1"),
    "australian-weights": (australian, 200, "-s 0 -c 2 -w1 3 -w-1 0.5"),
    "fashion3-rbf-prob": (fashion3, 120, "-s 0 -t 2 -g 0.02 -c 10 -b 1"),
    "fashion4-nu-poly-prob": (fashion4, 150, "-s 1 -t 1 -g 0.01 -n 0.2 -b 1"),
    "fashion4-linear": (fashion4, 150, "-s 0 -t 0 -c 0.05"),
    "fashion10-rbf-prob": (fashion10, 250, "-s 0 -t 2 -g 0.02 -c 4 -b 1"),  # coupling, k=10
    "mushrooms3-sigmoid-prob": (mushrooms3, 300, "-s 0 -t 3 -g 0.02 -b 1"),
    "housing-epsvr-prob": (housing, 200, "-s 3 -t 2 -c 10 -p 0.5 -b 1"),
    "housing-nusvr-poly": (housing, 200, "-s 4 -t 1 -g 0.1 -n 0.4 -c 5"),
    "housing-nusvr-prob": (housing, 200, "-s 4 -t 2 -n 0.5 -b 1"),
    "heart-oneclass": (heart, 150, "-s 2 -n 0.3"),
    "heart-oneclass-prob": (heart, 150, "-s 2 -n 0.1 -t 2 -g 0.1 -b 1"),
}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    svmutil = pytest.importorskip("libsvm.svmutil")
    folder = tmp_path_factory.mktemp("predict_models")
    out = {}
    for name, (make, n_train, options) in CASES.items():
        y, X = make()
        with libsvm_serial():
            m = svmutil.svm_train(y[:n_train], X[:n_train], options + " -q")
        path = str(folder / (name + ".model"))
        svmutil.svm_save_model(path, m)
        out[name] = (path, m, y[n_train:], X[n_train:])
    return out


def compare(ours, theirs, svm_type, probability):
    labels, acc, values = ours
    llabels, lvalues = theirs
    if svm_type in (3, 4):
        np.testing.assert_allclose(labels, llabels, rtol=1e-10, atol=1e-10)
    else:
        np.testing.assert_array_equal(labels, llabels)
    if probability and svm_type in (0, 1, 2):
        np.testing.assert_allclose(values, lvalues, rtol=0, atol=1e-8)
    elif not probability:
        np.testing.assert_allclose(values, lvalues, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_as_libsvm(trained, case):
    commonutil = pytest.importorskip("libsvm.commonutil")
    path, m, y, X = trained[case]
    model = load_model(path)
    s = model.param.svm_type
    flags = [False, True] if "-b 1" in CASES[case][2] else [False]
    for probability in flags:
        ours = predict(y, X, model, "-q -b 1" if probability else "-q")
        with libsvm_serial():
            theirs = libsvm_predict(m, X, probability)
        compare(ours, theirs, s, probability)
        expected = commonutil.evaluations(y, list(theirs[0]))
        if s in (3, 4):
            np.testing.assert_allclose(ours[1], expected, rtol=1e-10)
        else:
            np.testing.assert_array_equal(ours[1], expected)  # NaN == NaN here
        if probability and s in (0, 1):
            np.testing.assert_allclose(ours[2].sum(axis=1), 1.0, atol=1e-12)


@pytest.mark.parametrize("case", ["heart-rbf-prob", "fashion4-nu-poly-prob",
                                  "housing-epsvr-prob", "heart-oneclass-prob"])
def test_libsvm_predicts_the_same_from_our_file(svmutil, trained, case, tmp_path):
    path, m, y, X = trained[case]
    model = load_model(path)
    ours_path = str(tmp_path / "ours.model")
    save_model(ours_path, model)
    again = svmutil.svm_load_model(ours_path)
    for probability in (False, True):
        with libsvm_serial():
            theirs = libsvm_predict(again, X, probability)
        compare(predict(y, X, model, "-q -b %d" % probability), theirs,
                model.param.svm_type, probability)


def test_printed_lines_are_libsvm_s(svmutil, trained, capsys):
    for case in ("heart-rbf", "housing-epsvr-prob"):
        path, m, y, X = trained[case]
        with libsvm_serial():
            svmutil.svm_predict(y, X, m)
        theirs = capsys.readouterr().out
        predict(y, X, load_model(path))
        ours = capsys.readouterr().out
        assert ours.replace("prediction", "predicton") == theirs
    predict(y, X, load_model(path), "-q")
    assert capsys.readouterr().out == ""


def test_precomputed_kernel(svmutil, tmp_path):
    y, X = data("heart_scale", 270)
    D = X.toarray()
    train, test = D[:150], D[150:]
    gamma = 0.1
    K = np.exp(-gamma * ((train[:, None, :] - train[None, :, :]) ** 2).sum(-1))
    Kt = np.exp(-gamma * ((test[:, None, :] - train[None, :, :]) ** 2).sum(-1))
    Xtrain = np.hstack([np.arange(1, 151)[:, None], K])
    Xtest = np.hstack([np.zeros((120, 1)), Kt])  # serial of test rows is ignored
    with libsvm_serial():
        m = svmutil.svm_train(y[:150], Xtrain, "-t 4 -c 2 -b 1 -q")
    path = str(tmp_path / "pre.model")
    svmutil.svm_save_model(path, m)
    model = load_model(path)
    for probability in (False, True):
        with libsvm_serial():
            theirs = libsvm_predict(m, Xtest, probability)
        compare(predict(y[150:], Xtest, model, "-q -b %d" % probability), theirs, 0, probability)
        # CSR test rows give the same
        compare(predict(y[150:], sp.csr_matrix(Xtest), model, "-q -b %d" % probability),
                theirs, 0, probability)
    # the same model through an RBF kernel gives the same decision values
    with libsvm_serial():
        m_rbf = svmutil.svm_train(y[:150], X[:150], "-t 2 -g 0.1 -c 2 -q")
    rbf_path = str(tmp_path / "rbf.model")
    svmutil.svm_save_model(rbf_path, m_rbf)
    np.testing.assert_allclose(decision_function(Xtest, model),
                               decision_function(X[150:], load_model(rbf_path)),
                               rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="precomputed kernel: test rows have 10 columns"):
        predict(None, Xtest[:, :10], model, "-q")


def test_dense_csr_blocks_threads_agree(trained, monkeypatch):
    import kernsolve._predict as kp
    path, m, y, X = trained["fashion3-rbf-prob"]
    model = load_model(path)
    ref = predict(y, X, model, "-q -b 1 --threads 1")
    dense = predict(y, X.toarray(), model, "-q -b 1 --threads 1")
    two = predict(y, X, model, "-q -b 1 --threads 2")
    monkeypatch.setattr(kp, "BLOCK_BYTES", 3000)  # a few rows per block
    small = predict(y, X, model, "-q -b 1 --threads 2")
    for other in (dense, two, small):
        np.testing.assert_array_equal(other[0], ref[0])
        assert other[1] == ref[1]
        np.testing.assert_allclose(other[2], ref[2], rtol=1e-13, atol=1e-15)
    np.testing.assert_array_equal(two[2], ref[2])  # threads: identical bits


def test_width_rule_is_libsvm_s(trained):
    """Test rows wider or narrower than the SVs: absent features are zeros (LIBSVM)."""
    path, m, y, X = trained["heart-rbf"]
    model = load_model(path)
    rng = np.random.default_rng(0)
    extra = sp.csr_matrix(rng.uniform(-1, 1, size=(X.shape[0], 3)))
    wide = sp.hstack([X, extra]).tocsr()
    narrow = X[:, :5]
    for Xt in (wide, narrow):
        with libsvm_serial():
            theirs = libsvm_predict(m, Xt)
        compare(predict(y, Xt, model, "-q"), theirs, 0, False)


def test_libsvm_style_rows(svmutil, trained):
    """[{index: value}, ...] rows, as svmutil takes them, give the same predictions."""
    path, m, y, X = trained["heart-poly-prob"]
    rows = [{int(j) + 1: float(v) for j, v in zip(X[i].indices, X[i].data)}
            for i in range(X.shape[0])]
    model = load_model(path)
    ours = predict(y, rows, model, "-q -b 1")
    ref = predict(y, X, model, "-q -b 1")
    np.testing.assert_array_equal(ours[0], ref[0])
    np.testing.assert_array_equal(ours[2], ref[2])
    with libsvm_serial():
        theirs = svmutil.svm_predict(y, rows, m, "-q -b 1")
    np.testing.assert_array_equal(ours[0], theirs[0])
    with pytest.raises(ValueError, match="feature indices must be integers >= 1"):
        predict(None, [{0: 1.0}], model, "-q")


def test_helpers_match_predict(trained):
    path, m, y, X = trained["fashion4-nu-poly-prob"]
    model = load_model(path)
    labels, _, values = predict(None, X, model, "-q")
    np.testing.assert_array_equal(decision_function(X, model), values)
    assert values.shape == (X.shape[0], 6)
    plabels, acc, probs = predict(None, X, model, "-q -b 1")
    np.testing.assert_array_equal(predict_probability(X, model), probs)
    assert probs.shape == (X.shape[0], 4)
    assert all(np.isnan(acc))


def test_single_class_model(svmutil, tmp_path):
    commonutil = pytest.importorskip("libsvm.commonutil")
    y, X = data("heart_scale", 50)
    with libsvm_serial():
        m = svmutil.svm_train(np.ones(50), X, "-q")
    path = str(tmp_path / "one.model")
    svmutil.svm_save_model(path, m)
    labels, acc, values = predict(y, X, load_model(path), "-q")
    assert np.all(labels == 1.0) and values.shape == (50, 0)
    np.testing.assert_array_equal(acc, commonutil.evaluations(y, [1.0] * 50))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # LIBSVM's side warns on overflow
def test_evaluations_are_libsvm_s():
    commonutil = pytest.importorskip("libsvm.commonutil")
    rng = np.random.default_rng(1)
    cases = [(rng.integers(0, 3, 40).astype(float), rng.integers(0, 3, 40).astype(float)),
             (rng.normal(size=30), rng.normal(size=30)),
             (np.ones(5), np.ones(5)),           # zero variance: NaN correlation
             (np.arange(4.0), np.zeros(4)),
             (np.array([1e300, -1e300]), np.array([1e300, 1e300]))]   # overflow: NaN
    for ty, pv in cases:
        ours = evaluations(ty, pv)
        theirs = commonutil.evaluations(ty, pv)
        np.testing.assert_array_equal(np.array(ours), np.array(theirs))


def test_multiclass_probability_recovers_consistent_probabilities():
    rng = np.random.default_rng(2)
    for k in (3, 5, 8):
        p = rng.dirichlet(np.ones(k), size=20)
        r = p[:, :, None] / (p[:, :, None] + p[:, None, :])
        got = multiclass_probability(r)
        np.testing.assert_allclose(got.sum(axis=1), 1.0, atol=1e-12)
        np.testing.assert_allclose(got, p, atol=1e-3)


@pytest.mark.parametrize("X_change,options,y_change,message", [
    ("nan", "-q", None, "contains NaN or infinity"),
    ("inf-sparse", "-q", None, "contains NaN or infinity"),
    ("1d", "-q", None, "must be 2-D"),
    (None, "-q", "short", "y has 119 labels but X has 120 rows"),
    (None, "-q", "nan", "y contains NaN or infinity"),
    (None, "-x", None, "unknown option: -x"),
    (None, "-b 2", None, "-b: expected 0 or 1, got '2'"),
    (None, "-b", None, "-b: missing value"),
    (None, "--threads 0", None, "--threads: must be a positive count"),
    (None, "--threads x", None, "--threads: expected an integer, got 'x'"),
    (None, "-b 1 -q", None, "model does not support probability estimates"),
])
def test_bad_input(trained, X_change, options, y_change, message):
    path, m, y, X = trained["heart-rbf"]
    model = load_model(path)
    X = X.copy()
    if X_change == "nan":
        X = X.toarray()
        X[3, 2] = np.nan
    elif X_change == "inf-sparse":
        X.data[7] = np.inf
    elif X_change == "1d":
        X = X.toarray()[0]
    if y_change == "short":
        y = y[:-1]
    elif y_change == "nan":
        y = y.copy()
        y[0] = np.nan
    with pytest.raises(ValueError) as exc:
        predict(y, X, model, options)
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)


def test_not_a_model():
    with pytest.raises(ValueError, match="model must be a kernsolve Model"):
        predict(None, np.zeros((2, 2)), "model.txt")


def test_laplacian_model_against_numpy(tmp_path):
    """kernsolve's own kernel (-t 5): a hand-built model, numpy formula as oracle."""
    from kernsolve._model import Model
    from kernsolve._params import Parameters
    rng = np.random.default_rng(4)
    sv = rng.normal(size=(6, 4))
    coef = np.array([[0.5, -0.2, 0.1, 0.3, -0.4, -0.3], [0.2, 0.1, -0.6, 0.4, 0.3, -0.1]])
    model = Model(param=Parameters(kernel_type=5, gamma=0.7), labels=np.array([3.0, 1.0, 2.0]),
                  support_vectors=sv, support_indices=np.arange(1, 7),
                  n_support=np.array([2, 2, 2]), dual_coef=coef, rho=np.array([0.1, -0.2, 0.3]))
    path = str(tmp_path / "lap.model")
    save_model(path, model)
    back = load_model(path)
    X = rng.normal(size=(9, 4))
    K = np.exp(-0.7 * np.abs(X[:, None, :] - sv[None, :, :]).sum(-1))
    expected = np.column_stack([
        K[:, 0:2] @ coef[0, 0:2] + K[:, 2:4] @ coef[0, 2:4] - 0.1,    # pair (0, 1)
        K[:, 0:2] @ coef[1, 0:2] + K[:, 4:6] @ coef[0, 4:6] + 0.2,    # pair (0, 2)
        K[:, 2:4] @ coef[1, 2:4] + K[:, 4:6] @ coef[1, 4:6] - 0.3])   # pair (1, 2)
    for m in (model, back):
        labels, _, values = predict(None, X, m, "-q")
        np.testing.assert_allclose(values, expected, rtol=1e-12, atol=1e-14)
        votes = np.zeros((9, 3), int)
        for p, (i, j) in enumerate([(0, 1), (0, 2), (1, 2)]):
            votes[:, i] += expected[:, p] > 0
            votes[:, j] += expected[:, p] <= 0
        np.testing.assert_array_equal(labels, np.array([3.0, 1.0, 2.0])[votes.argmax(1)])


def test_kernsolve_trained_models_in_libsvm(svmutil, tmp_path):
    """kernsolve.train's models, saved by kernsolve, predict the same in LIBSVM."""
    from kernsolve._api import train
    y, X = data("heart_scale", 270)
    for options in ("-c 2 -b 1", "-s 1 -t 1 -g 0.1 -n 0.3", "-s 2 -n 0.2 -b 1"):
        model = train(y[:150], X[:150], options + " -q")
        path = str(tmp_path / "ks.model")
        save_model(path, model)
        m = svmutil.svm_load_model(path)
        for probability in (False, True) if "-b 1" in options else (False,):
            with libsvm_serial():
                theirs = libsvm_predict(m, X[150:], probability)
            compare(predict(y[150:], X[150:], model, "-q -b %d" % probability), theirs,
                    model.param.svm_type, probability)
    y, X = data("housing_scale", 300)
    model = train(y[:200], X[:200], "-s 3 -c 10 -q")
    save_model(str(tmp_path / "svr.model"), model)
    with libsvm_serial():
        theirs = libsvm_predict(svmutil.svm_load_model(str(tmp_path / "svr.model")), X[200:])
    compare(predict(y[200:], X[200:], model, "-q"), theirs, 3, False)
