"""The estimators' weights, warnings and errors are scikit-learn's (issue 14).

Oracle: scikit-learn's own SVC/NuSVC/SVR/NuSVR/OneClassSVM on the same small
data (same models, same exception and warning classes, same refusals), and,
for kernsolve without scikit-learn, a child Python that cannot import it.
"""
import math
import re
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import package_env

sklearn = pytest.importorskip("sklearn")
from sklearn import svm as sk_svm  # noqa: E402
from sklearn.datasets import make_classification, make_regression  # noqa: E402
from sklearn.exceptions import ConvergenceWarning as SkConvergenceWarning  # noqa: E402
from sklearn.exceptions import DataConversionWarning as SkDataConversionWarning  # noqa: E402
from sklearn.exceptions import NotFittedError as SkNotFittedError  # noqa: E402

import kernsolve  # noqa: E402
from kernsolve import _errors  # noqa: E402

ATOL = 1e-6
X6 = np.array([[-2, -1], [-1, -1], [-1, -2], [1, 1], [1, 2], [2, 1]], dtype=float)
Y6 = np.array([1, 1, 1, 2, 2, 2])


def _classification(n=60, seed=0):
    X, y = make_classification(n_samples=n, n_features=5, random_state=seed)
    return X, y


def _quiet_fit(est, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return est.fit(*args, **kwargs)


# --------------------------------------------------------------------------
# negative sample weights mask rows
# --------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["SVC", "NuSVC", "SVR", "NuSVR", "OneClassSVM"])
def test_negative_weights_mask_rows_as_sklearn(name):
    X, y = _classification()
    sw = np.random.RandomState(1).uniform(0.5, 2.0, size=len(y))
    sw[[3, 10, 11]] = [-0.5, -2.0, 0.0]
    ours = getattr(kernsolve, name)(kernel="linear")
    theirs = getattr(sk_svm, name)(kernel="linear")
    args = (X,) if name == "OneClassSVM" else (X, y)
    ours.fit(*args, sample_weight=sw)
    theirs.fit(*args, sample_weight=sw)
    f = "predict" if name in ("SVR", "NuSVR") else "decision_function"
    np.testing.assert_allclose(getattr(ours, f)(X), getattr(theirs, f)(X), rtol=0, atol=ATOL)
    # masked is the same as left out (kernsolve's support_ indexes the X given)
    kept = sw > 0
    args_kept = (X[kept],) if name == "OneClassSVM" else (X[kept], y[kept])
    subset = getattr(kernsolve, name)(kernel="linear").fit(*args_kept,
                                                             sample_weight=sw[kept])
    np.testing.assert_allclose(getattr(ours, f)(X), getattr(subset, f)(X), rtol=0, atol=ATOL)
    np.testing.assert_array_equal(ours.support_, np.flatnonzero(kept)[subset.support_])


@pytest.mark.parametrize("name", ["SVC", "NuSVC", "SVR", "NuSVR", "OneClassSVM"])
@pytest.mark.parametrize("weight", [0.0, -0.3])
def test_every_row_masked_is_refused_as_sklearn(name, weight):
    message = "Invalid input - all samples have zero or negative weights."
    for cls in (getattr(kernsolve, name), getattr(sk_svm, name)):
        if cls is sk_svm.NuSVC:
            continue            # scikit-learn's may say "nu is infeasible" instead
        with pytest.raises(ValueError, match=message):
            cls(kernel="linear").fit(X6, Y6, sample_weight=[weight] * 6)


@pytest.mark.parametrize("sw", [[0, -0.5, 0, 1, 1, 1], [1, 1, 1, 0, -0.1, -0.3]])
def test_one_class_left_is_refused_as_sklearn(sw):
    for svc in (kernsolve.SVC, sk_svm.SVC):
        with pytest.raises(ValueError, match="Invalid input - all samples with positive "
                                             "weights belong to the same class"):
            svc(kernel="linear").fit(X6, Y6, sample_weight=sw)
    for nusvc in (kernsolve.NuSVC, sk_svm.NuSVC):
        with pytest.raises(ValueError, match="specified nu is infeasible"):
            nusvc(kernel="linear").fit(X6, Y6, sample_weight=sw)


def test_kernsolve_train_still_refuses_negative_weights():
    # the estimators follow scikit-learn; kernsolve.train keeps LIBSVM's -W rule
    with pytest.raises(ValueError, match="sample_weight of row 2 is negative"):
        kernsolve.train(Y6, X6, "-q", sample_weight=[1, -1, 1, 1, 1, 1])


# --------------------------------------------------------------------------
# scikit-learn's classes when the program uses scikit-learn, kernsolve's without
# --------------------------------------------------------------------------

def test_warnings_and_errors_are_sklearns_classes():
    X, y = _classification()
    with pytest.warns(SkConvergenceWarning,
                      match=r"Solver terminated early \(max_iter=2\).  Consider "
                            r"pre-processing your data with StandardScaler or MinMaxScaler."):
        est = kernsolve.SVC(kernel="linear", max_iter=2).fit(X, y)
    assert np.all(est.n_iter_ == 2)
    with pytest.warns(kernsolve.ConvergenceWarning):       # kernsolve's own still catches it
        kernsolve.SVC(kernel="linear", max_iter=2).fit(X, y)
    with pytest.raises(SkNotFittedError):
        kernsolve.SVC().predict(X)
    with pytest.raises(kernsolve.NotFittedError):
        kernsolve.SVC().predict(X)
    with pytest.warns(SkDataConversionWarning):
        kernsolve.SVR().fit(X, y.reshape(-1, 1).astype(float))
    # one class per pair, made once
    assert _errors.twin(kernsolve.NotFittedError) is _errors.twin(kernsolve.NotFittedError)


def test_without_sklearn_the_classes_are_kernsolves():
    code = (
        "import sys, warnings\n"
        "sys.modules['sklearn'] = None   # as if it were not installed\n"
        "import numpy as np, kernsolve\n"
        "from kernsolve import _errors\n"
        "X = np.random.RandomState(0).randn(40, 3); y = (X[:, 0] > 0).astype(int)\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    kernsolve.SVC(kernel='linear', max_iter=2, probability=True).fit(X, y)\n"
        "assert {x.category for x in w} == {kernsolve.ConvergenceWarning}, w\n"
        "try:\n"
        "    kernsolve.SVC().predict(X)\n"
        "except kernsolve.NotFittedError as e:\n"
        "    assert type(e) is kernsolve.NotFittedError, type(e).__mro__\n"
        "assert _errors.sklearn_version() is None\n")
    subprocess.run([sys.executable, "-c", code], check=True, env=package_env(),
                   cwd=tempfile.gettempdir(), timeout=120)


# --------------------------------------------------------------------------
# C = inf, non-finite models
# --------------------------------------------------------------------------

@pytest.mark.parametrize("name,make", [("SVC", make_classification),
                                       ("SVR", make_regression)])
def test_C_inf_is_the_hard_margin_as_sklearn(name, make):
    X, y = make(n_samples=60, n_features=5, random_state=0)
    ours = getattr(kernsolve, name)(C=math.inf).fit(X, y)
    large = getattr(kernsolve, name)(C=1e10).fit(X, y)
    theirs = getattr(sk_svm, name)(C=np.inf).fit(X, y)
    np.testing.assert_allclose(ours.predict(X), large.predict(X))
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ours.dual_coef_, theirs.dual_coef_, rtol=1e-6, atol=1e-6)


def test_C_inf_refused_where_it_has_no_meaning():
    X, y = _classification()
    with pytest.raises(ValueError, match="NuSVR: C must be a finite number > 0, got inf"):
        kernsolve.NuSVR(C=math.inf).fit(X, y.astype(float))
    with pytest.raises(ValueError, match="C = inf"):
        kernsolve.SVC(C=math.inf, solver="sbp").fit(X, y)
    for bad in (math.nan, -math.inf):
        with pytest.raises(ValueError, match="C must be"):
            kernsolve.SVC(C=bad).fit(X, y)
        with pytest.raises(ValueError):
            sk_svm.SVC(C=bad).fit(X, y)
    # kernsolve.train: the same rule (LIBSVM's svm_train takes C = inf too)
    model = kernsolve.train(y, X, {"C": math.inf, "quiet": True})
    assert np.all(np.isfinite(model.dual_coef))
    with pytest.raises(ValueError, match="C = inf"):
        kernsolve.train(y.astype(float), X, {"svm_type": 4, "C": math.inf, "quiet": True})


def test_non_finite_model_refused_as_sklearn():
    # x . y overflows: LIBSVM's SMO goes on with inf kernel values
    rng = np.random.RandomState(0)
    X = 1e200 * rng.uniform(size=(10, 2))
    y = np.arange(10) % 2
    message = "The dual coefficients or intercepts are not finite"
    for svc in (kernsolve.SVC, sk_svm.SVC):
        with pytest.raises(ValueError, match=message):
            svc(kernel="linear").fit(X, y)
    with pytest.raises(ValueError, match=message):
        kernsolve.train(y, X, "-t 0 -q")


def test_gamma_scale_of_overflowing_data_is_refused():
    rng = np.random.RandomState(42)
    X = np.finfo(np.float64).max * rng.uniform(size=(10, 2))
    y = np.arange(10) % 2
    for data in (X, sp.csr_matrix(X)):
        with pytest.raises(ValueError, match=r"X.var\(\) overflows float64"):
            kernsolve.SVC().fit(data, y)
    with pytest.raises(ValueError):           # scikit-learn refuses it too (after training)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            sk_svm.SVC().fit(X, y)


# --------------------------------------------------------------------------
# coef_, predict_proba, FutureWarnings
# --------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["SVC", "NuSVC", "SVR", "NuSVR", "OneClassSVM"])
def test_coef_is_read_only_as_sklearn(name):
    X, y = _classification(seed=2)
    args = (X,) if name == "OneClassSVM" else (X, y)
    for est in (getattr(kernsolve, name)(kernel="linear"), getattr(sk_svm, name)(kernel="linear")):
        est.fit(*args)
        with pytest.raises(AttributeError):
            est.coef_ = np.zeros_like(est.coef_)
        with pytest.raises(ValueError, match="read-only"):
            est.coef_[0, 0] = 0.0
    # three classes: one row per pair, read-only too
    X3 = np.vstack([X, X[:20] + 3.0])
    y3 = np.concatenate([y, np.full(20, 2)])
    with pytest.raises(ValueError, match="read-only"):
        kernsolve.SVC(kernel="linear").fit(X3, y3).coef_[1, 0] = 0.0


def test_predict_proba_availability_as_sklearn():
    X, y = _classification()
    for svc in (kernsolve.SVC, sk_svm.SVC):
        assert hasattr(svc(probability=True), "predict_proba")
        assert not hasattr(svc(probability=False), "predict_proba")
        est = _quiet_fit(svc(probability=False), X, y)
        assert not hasattr(est, "predict_proba")
        est.probability = True
        assert hasattr(est, "predict_proba")
        with pytest.raises(SkNotFittedError, match="predict_proba is not available when "
                                                   "fitted with probability=False"):
            est.predict_proba(X)


def _future_warnings(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught if issubclass(w.category, FutureWarning)]


@pytest.mark.parametrize("name", ["SVC", "NuSVC"])
def test_probability_true_gives_no_deprecation_warning(name):
    """kernsolve keeps ``probability`` and ``probA_``/``probB_``: no warning,
    whatever scikit-learn (1.9 and later) deprecated; the same attributes and
    shapes as scikit-learn's estimator (the oracle for the values elsewhere)."""
    X, y = _classification()
    ours, theirs = getattr(kernsolve, name), getattr(sk_svm, name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # any warning fails the test
        est = ours(probability=True).fit(X, y)
        probabilities = est.predict_proba(X)
        a, b = est.probA_, est.probB_
    their_est = _quiet_fit(theirs(probability=True), X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        assert a.shape == their_est.probA_.shape == b.shape == (1,)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-12)


# --------------------------------------------------------------------------
# refused as scikit-learn refuses: sparse precomputed kernels, sparse input
# to a model fitted on dense data
# --------------------------------------------------------------------------

def test_sparse_precomputed_and_sparse_on_dense_refused_as_sklearn():
    X, y = _classification()
    K = sp.csr_matrix(X @ X.T)
    for svc in (kernsolve.SVC, sk_svm.SVC):
        with pytest.raises(TypeError, match="Sparse precomputed kernels are not supported."):
            svc(kernel="precomputed").fit(K, y)
        est = svc().fit(X, y)
        with pytest.raises(ValueError, match="cannot use sparse input in 'SVC' trained "
                                             "on dense data"):
            est.predict(sp.csr_matrix(X))
        assert not svc(kernel="precomputed").__sklearn_tags__().input_tags.sparse
        assert svc().__sklearn_tags__().input_tags.sparse
    # fitted on sparse data, dense input is fine (as in scikit-learn)
    est = kernsolve.SVC().fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(est.predict(X), est.predict(sp.csr_matrix(X)))
