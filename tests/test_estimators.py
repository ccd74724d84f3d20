"""kernsolve's scikit-learn-style estimators.

Oracles: scikit-learn's own SVC/NuSVC/SVR/NuSVR/OneClassSVM (they wrap
LIBSVM's solver, so decision values agree to rounding and predictions are
equal), scikit-learn's estimator checks, libsvm-official for the model file.
scikit-learn is a test-only dependency.
"""
import pickle
import tempfile
import warnings

import joblib
import numpy as np
import pytest
import scipy.sparse as sp

from conftest import package_env, shared_path

sklearn = pytest.importorskip("sklearn")
from sklearn import svm as sk_svm  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.datasets import load_iris  # noqa: E402
from sklearn.exceptions import NotFittedError as SkNotFittedError  # noqa: E402
from sklearn.model_selection import GridSearchCV, cross_val_score  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

import kernsolve  # noqa: E402
from kernsolve.estimators.svm import (SVC, SVR, ConvergenceWarning, NotFittedError,  # noqa: E402
                                   NuSVC, NuSVR, OneClassSVM)

ATOL = 1e-6


def _heart():
    y, X = kernsolve.read_problem(kernsolve.dataset_path("heart_scale"))
    return X, y


def _housing():
    y, X = kernsolve.read_problem(shared_path("housing_scale"))
    return X[:250], y[:250]


def _iris_strings():
    """Iris, shuffled so the first class to appear is not the smallest, string labels."""
    iris = load_iris()
    rng = np.random.RandomState(3)
    order = rng.permutation(len(iris.target))
    names = np.array(["virginica", "setosa", "versicolor"])  # not sorted
    return iris.data[order], names[iris.target[order]]


# --------------------------------------------------------------------------
# scikit-learn's estimator checks
# --------------------------------------------------------------------------

_SW_REASON = ("sample_weight is not equivalent to removing/repeating samples at "
              "rtol 1e-7: weighting scales a row's box bound while repeating adds dual "
              "variables, so the two SMO runs stop at different points within tol "
              "(scikit-learn marks the same checks xfail for its own SVMs)")


_ONE_BUDGET = ("the approximate solvers (SBP, SDCA) refuse unequal sample weights and "
               "class weights with a ValueError: their problem has one budget (one "
               "lambda) for all points, and kernsolve.train refuses per-row C")


def _expected_failures(est):
    out = {"check_sample_weight_equivalence_on_dense_data": _SW_REASON,
           "check_sample_weight_equivalence_on_sparse_data": _SW_REASON}
    if isinstance(est, NuSVC):
        out["check_class_weight_classifiers"] = ("class_weight is ignored: nu-SVC's "
                                                 "dual has no C (as in LIBSVM)")
    if getattr(est, "solver", "smo") != "smo":
        for check in ("check_sample_weight_equivalence_on_dense_data",
                      "check_sample_weight_equivalence_on_sparse_data",
                      "check_sample_weights_not_overwritten"):
            out[check] = _ONE_BUDGET
        out["check_class_weight_classifiers"] = (
            _ONE_BUDGET + "; the check also sets max_iter, which is SMO's only")
    return out


# All five LIBSVM types (about 2 s each); NuSVC also xfails
# check_class_weight_classifiers (nu-SVC has no C to weight).  SVC with the
# SBP and SDCA solvers (about 1.5 s each) xfail the checks that need unequal
# sample weights or class weights, which those solvers refuse.
@parametrize_with_checks([SVC(), NuSVC(), SVR(), NuSVR(), OneClassSVM(),
                          SVC(kernel="precomputed"), SVC(solver="sbp"),
                          SVC(solver="sdca")],
                         expected_failed_checks=_expected_failures)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


# --------------------------------------------------------------------------
# same numbers as scikit-learn's LIBSVM
# --------------------------------------------------------------------------

def _dense(a):
    return a.toarray() if sp.issparse(a) else np.asarray(a)


def _assert_same_attribute(ours, theirs, atol):
    """Same type as scikit-learn's (a CSR matrix after a sparse fit, an array
    after a dense one) and the same values."""
    assert type(ours) is type(theirs), (type(ours), type(theirs))
    np.testing.assert_allclose(_dense(ours), _dense(theirs), rtol=0, atol=atol)


def _assert_same_classifier(ours, theirs, X, kept=None):
    np.testing.assert_array_equal(ours.classes_, theirs.classes_)
    # scikit-learn's support_ indexes the rows left after dropping zero weights
    their_support = theirs.support_ if kept is None else kept[theirs.support_]
    np.testing.assert_array_equal(ours.support_, their_support)
    np.testing.assert_array_equal(ours.n_support_, theirs.n_support_)
    _assert_same_attribute(ours.dual_coef_, theirs.dual_coef_, ATOL)
    np.testing.assert_allclose(ours.intercept_, theirs.intercept_, rtol=0, atol=ATOL)
    np.testing.assert_allclose(ours.decision_function(X), theirs.decision_function(X),
                               rtol=0, atol=ATOL)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
    np.testing.assert_array_equal(ours.n_iter_, theirs.n_iter_)


@pytest.mark.parametrize("params", [
    {},
    {"kernel": "linear", "C": 0.5},
    {"kernel": "poly", "degree": 2, "gamma": "auto", "coef0": 1.0},
    {"kernel": "sigmoid", "gamma": 0.05, "coef0": -0.5},
    {"C": 10.0, "gamma": 0.2, "shrinking": False},
])
def test_svc_matches_sklearn_heart_scale(params):
    X, y = _heart()
    ours = SVC(**params).fit(X, y)
    theirs = sk_svm.SVC(**params).fit(X, y)
    _assert_same_classifier(ours, theirs, X)
    dense = X.toarray()
    ours_dense = SVC(**params).fit(dense, y)
    np.testing.assert_allclose(ours_dense.decision_function(dense),
                               theirs.decision_function(dense), rtol=0, atol=ATOL)
    assert ours.score(X, y) == pytest.approx(theirs.score(X, y))


@pytest.mark.parametrize("shape", ["ovr", "ovo"])
def test_svc_multiclass_string_labels_match_sklearn(shape):
    X, y = _iris_strings()
    ours = SVC(C=3.0, decision_function_shape=shape).fit(X, y)
    theirs = sk_svm.SVC(C=3.0, decision_function_shape=shape).fit(X, y)
    assert list(ours.classes_) == ["setosa", "versicolor", "virginica"]
    _assert_same_classifier(ours, theirs, X)
    assert ours.decision_function(X).shape == (len(y), 3)
    assert ours.predict(X).dtype == y.dtype


def test_svc_break_ties_and_linear_coef_match_sklearn():
    X, y = _iris_strings()
    ours = SVC(kernel="linear", break_ties=True).fit(X, y)
    theirs = sk_svm.SVC(kernel="linear", break_ties=True).fit(X, y)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
    _assert_same_attribute(ours.coef_, theirs.coef_, 1e-6)
    Xh, yh = _heart()
    ours = SVC(kernel="linear").fit(Xh, yh)
    theirs = sk_svm.SVC(kernel="linear").fit(Xh, yh)
    _assert_same_attribute(ours.coef_, theirs.coef_, 1e-6)
    with pytest.raises(AttributeError, match="linear"):
        SVC().fit(Xh, yh).coef_
    with pytest.raises(ValueError, match="break_ties"):
        SVC(break_ties=True, decision_function_shape="ovo").fit(X, y).predict(X)


def test_nusvc_matches_libsvm_official():
    # scikit-learn bundles an older LIBSVM whose nu-SVC starts from another
    # point (dual coefficients differ ~1e-3); LIBSVM 3.37 is the oracle here.
    svmutil = pytest.importorskip("libsvm.svmutil")
    X, y = _iris_strings()
    ours = NuSVC(nu=0.3).fit(X, y)
    codes = np.searchsorted(ours.classes_, y)
    order = np.argsort(codes, kind="stable")
    rows = [{j + 1: float(v) for j, v in enumerate(r)} for r in X[order]]
    m = svmutil.svm_train(codes[order].astype(float).tolist(), rows,
                          f"-s 1 -n 0.3 -g {float(ours._gamma)!r} -q")
    assert m.get_labels() == [0, 1, 2]
    np.testing.assert_allclose(ours.dual_coef_, np.array(m.get_sv_coef()).T, rtol=0, atol=ATOL)
    np.testing.assert_allclose(ours.intercept_, -np.array(m.rho[:3]), rtol=0, atol=ATOL)
    np.testing.assert_array_equal(ours.support_,
                                  order[np.array(m.get_sv_indices()) - 1])
    # (libsvm-official 3.37's svm_predict dies with SIGBUS on multi-class
    # nu-SVC models here, so its decision values are rebuilt from its model)
    sv = X[order][np.array(m.get_sv_indices()) - 1]
    K = np.exp(-ours._gamma * ((X[:, None, :] - sv[None, :, :]) ** 2).sum(-1))
    coef = np.array(m.get_sv_coef()).T
    start = np.concatenate([[0], np.cumsum(np.bincount(codes[order][
        np.array(m.get_sv_indices()) - 1], minlength=3))])
    values = []
    for p, (i, j) in enumerate([(0, 1), (0, 2), (1, 2)]):
        si, sj = slice(start[i], start[i + 1]), slice(start[j], start[j + 1])
        values.append(K[:, si] @ coef[j - 1, si] + K[:, sj] @ coef[i, sj] - m.rho[p])
    ours.set_params(decision_function_shape="ovo")
    np.testing.assert_allclose(ours.decision_function(X), np.column_stack(values),
                               rtol=0, atol=ATOL)
    theirs = sk_svm.NuSVC(nu=0.3).fit(X, y)
    assert np.mean(ours.predict(X) == theirs.predict(X)) > 0.98


def test_class_weight_and_sample_weight_match_sklearn():
    X, y = _heart()
    rng = np.random.RandomState(0)
    sw = rng.uniform(0.2, 3.0, size=len(y))
    sw[:10] = 0.0                              # zero weight: row left out
    for params in ({"class_weight": {1: 3.0}}, {"class_weight": "balanced"}, {}):
        ours = SVC(**params).fit(X, y, sample_weight=sw)
        theirs = sk_svm.SVC(**params).fit(X, y, sample_weight=sw)
        _assert_same_classifier(ours, theirs, X, kept=np.flatnonzero(sw > 0))
        if "class_weight" in params:
            np.testing.assert_allclose(ours.class_weight_, theirs.class_weight_)
    Xi, yi = _iris_strings()
    cw = {"setosa": 0.5, "virginica": 4.0}
    ours = SVC(class_weight=cw).fit(Xi, yi)
    theirs = sk_svm.SVC(class_weight=cw).fit(Xi, yi)
    _assert_same_classifier(ours, theirs, Xi)
    with pytest.raises(ValueError, match="not among the classes"):
        SVC(class_weight={"nope": 2.0}).fit(Xi, yi)


@pytest.mark.parametrize("params", [
    {},
    {"kernel": "linear", "C": 2.0, "epsilon": 0.5},
    {"kernel": "poly", "degree": 3, "gamma": 0.3, "coef0": 1.0, "C": 5.0},
])
def test_svr_matches_sklearn_housing_scale(params):
    X, y = _housing()
    ours = SVR(**params).fit(X, y)
    theirs = sk_svm.SVR(**params).fit(X, y)
    np.testing.assert_array_equal(ours.support_, theirs.support_)
    _assert_same_attribute(ours.dual_coef_, theirs.dual_coef_, ATOL)
    np.testing.assert_allclose(ours.intercept_, theirs.intercept_, rtol=0, atol=ATOL)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=0, atol=ATOL)
    assert ours.n_iter_ == theirs.n_iter_
    np.testing.assert_array_equal(ours.n_support_, theirs.n_support_)
    assert ours.score(X, y) == pytest.approx(theirs.score(X, y), abs=1e-9)


def test_svr_sample_weight_and_nusvr_match_sklearn():
    X, y = _housing()
    sw = np.random.RandomState(1).uniform(0.1, 2.0, size=len(y))
    ours = SVR(C=3.0).fit(X, y, sample_weight=sw)
    theirs = sk_svm.SVR(C=3.0).fit(X, y, sample_weight=sw)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=0, atol=ATOL)
    ours = NuSVR(nu=0.3, C=4.0).fit(X, y)
    theirs = sk_svm.NuSVR(nu=0.3, C=4.0).fit(X, y)
    np.testing.assert_array_equal(ours.support_, theirs.support_)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=0, atol=ATOL)


@pytest.mark.parametrize("nu", [0.1, 0.5])
def test_one_class_svm_matches_sklearn(nu):
    X, _ = _heart()
    ours = OneClassSVM(nu=nu, gamma=0.1).fit(X)
    theirs = sk_svm.OneClassSVM(nu=nu, gamma=0.1).fit(X)
    np.testing.assert_array_equal(ours.support_, theirs.support_)
    _assert_same_attribute(ours.dual_coef_, theirs.dual_coef_, ATOL)
    np.testing.assert_allclose(ours.intercept_, theirs.intercept_, rtol=0, atol=ATOL)
    assert ours.offset_ == pytest.approx(theirs.offset_[0] if np.ndim(theirs.offset_)
                                         else theirs.offset_, abs=ATOL)
    np.testing.assert_allclose(ours.decision_function(X), theirs.decision_function(X),
                               rtol=0, atol=ATOL)
    np.testing.assert_allclose(ours.score_samples(X), theirs.score_samples(X),
                               rtol=0, atol=ATOL)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
    np.testing.assert_array_equal(ours.fit_predict(X), theirs.fit_predict(X))


def test_precomputed_and_callable_kernels_match_sklearn():
    X, y = _heart()
    Xd = X.toarray()
    train, test = slice(0, 200), slice(200, None)
    K = Xd[train] @ Xd[train].T
    Kt = Xd[test] @ Xd[train].T
    ours = SVC(kernel="precomputed").fit(K, y[train])
    theirs = sk_svm.SVC(kernel="precomputed").fit(K, y[train])
    np.testing.assert_array_equal(ours.support_, theirs.support_)
    np.testing.assert_allclose(ours.decision_function(Kt), theirs.decision_function(Kt),
                               rtol=0, atol=ATOL)
    assert ours.n_features_in_ == 200 and ours.support_vectors_.shape == (0, 0)
    with pytest.raises(ValueError, match="200"):
        ours.predict(Kt[:, :50])

    def kern(A, B):
        return (A @ B.T + 1.0) ** 2

    ours = SVC(kernel=kern).fit(Xd[train], y[train])
    theirs = sk_svm.SVC(kernel=kern).fit(Xd[train], y[train])
    np.testing.assert_allclose(ours.decision_function(Xd[test]),
                               theirs.decision_function(Xd[test]), rtol=0, atol=ATOL)
    np.testing.assert_array_equal(ours.support_vectors_, Xd[train][ours.support_])
    np.testing.assert_array_equal(ours.support_, theirs.support_)


def test_max_iter_stops_like_sklearn():
    X, y = _heart()
    with pytest.warns(ConvergenceWarning):
        ours = SVC(kernel="linear", C=100.0, max_iter=20).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = sk_svm.SVC(kernel="linear", C=100.0, max_iter=20).fit(X, y)
    assert ours.fit_status_ == 1
    np.testing.assert_array_equal(ours.n_iter_, theirs.n_iter_)
    np.testing.assert_allclose(ours.decision_function(X), theirs.decision_function(X),
                               rtol=0, atol=ATOL)


# --------------------------------------------------------------------------
# probabilities
# --------------------------------------------------------------------------

def test_predict_proba_columns_follow_classes():
    X, y = _heart()
    est = SVC(probability=True, random_state=7).fit(X, y)
    proba = est.predict_proba(X)
    assert proba.shape == (len(y), 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(est.predict_log_proba(X), np.log(proba))
    # Platt's sigmoid is monotone: the classes_[1] column rises with the decision value
    dec = est.decision_function(X)
    p1 = proba[np.argsort(dec), 1]
    assert np.all(np.diff(p1) >= -1e-12)
    assert p1[-1] > 0.5 > p1[0]
    again = SVC(probability=True, random_state=7).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(proba, again)        # seeded folds: reproducible
    # close to scikit-learn's (its internal folds differ, so not equal)
    theirs = sk_svm.SVC(probability=True, random_state=7).fit(X, y).predict_proba(X)
    assert np.abs(proba - theirs).mean() < 0.05

    Xi, yi = _iris_strings()
    est = SVC(probability=True).fit(Xi, yi)
    proba = est.predict_proba(Xi)
    assert proba.shape == (len(yi), 3)
    agree = np.mean(est.classes_[np.argmax(proba, axis=1)] == est.predict(Xi))
    assert agree > 0.95
    assert not hasattr(SVC(), "predict_proba")
    assert not hasattr(SVC().fit(Xi, yi), "predict_log_proba")


# --------------------------------------------------------------------------
# scikit-learn tooling: clone, Pipeline, GridSearchCV, cross_val_score, pickle
# --------------------------------------------------------------------------

def test_pipeline_grid_search_and_cross_val_score():
    X, y = _heart()
    Xd = X.toarray()
    grid = {"svc__C": [0.5, 2.0], "svc__gamma": ["scale", 0.01]}
    ours = GridSearchCV(make_pipeline(StandardScaler(), SVC(n_jobs=1)), grid, cv=3, n_jobs=2)
    # threads, not processes: spawning loky workers costs tens of seconds on
    # the shared test machine; pickling is tested on its own below
    with joblib.parallel_backend("threading", n_jobs=2):
        ours.fit(Xd, y)
    theirs = GridSearchCV(make_pipeline(StandardScaler(), sk_svm.SVC()), grid, cv=3).fit(Xd, y)
    assert ours.best_params_ == theirs.best_params_
    np.testing.assert_allclose(ours.cv_results_["mean_test_score"],
                               theirs.cv_results_["mean_test_score"])
    np.testing.assert_array_equal(ours.predict(Xd), theirs.predict(Xd))
    Xh, yh = _housing()
    scores = cross_val_score(SVR(C=5.0), Xh, yh, cv=3)
    np.testing.assert_allclose(scores, cross_val_score(sk_svm.SVR(C=5.0), Xh, yh, cv=3),
                               rtol=0, atol=1e-8)


def test_pickle_clone_and_model_file(tmp_path):
    X, y = _heart()
    est = SVC(C=2.0, probability=True).fit(X, y)
    back = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(back.decision_function(X), est.decision_function(X))
    np.testing.assert_array_equal(back.predict_proba(X), est.predict_proba(X))
    fresh = clone(est)
    assert fresh.get_params() == est.get_params()
    assert not hasattr(fresh, "model_")
    # model_ is a kernsolve Model: LIBSVM reads it; its labels are class indices
    path = str(tmp_path / "heart.model")
    kernsolve.save_model(path, est.model_)
    svmutil = pytest.importorskip("libsvm.svmutil")
    m = svmutil.svm_load_model(path)
    Xd = X.toarray()
    rows = [{j + 1: v for j, v in enumerate(r) if v != 0} for r in Xd]
    labels, _, values = svmutil.svm_predict([0] * len(rows), rows, m, "-q")
    np.testing.assert_array_equal(est.classes_[np.asarray(labels, dtype=int)], est.predict(X))
    np.testing.assert_allclose(-np.asarray(values)[:, 0], est.decision_function(X),
                               rtol=0, atol=1e-9)


def test_params_repr_and_threads():
    est = SVC(C=3.0, kernel="poly", n_jobs=1)
    assert est.get_params()["C"] == 3.0 and est.get_params()["solver"] == "smo"
    assert repr(est) == "SVC(C=3.0, kernel='poly', n_jobs=1)"
    assert est.set_params(C=5.0, gamma=0.1) is est and est.C == 5.0
    with pytest.raises(ValueError, match="Invalid parameter"):
        est.set_params(bogus=1)
    X, y = _heart()
    one = SVC(n_jobs=1).fit(X, y).decision_function(X)
    two = SVC(n_jobs=2).fit(X, y).decision_function(X)
    np.testing.assert_array_equal(one, two)


# --------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------

def test_bad_input_messages():
    X, y = _heart()
    est = SVC()
    with pytest.raises(NotFittedError) as info:
        est.predict(X)
    assert isinstance(info.value, ValueError) and isinstance(info.value, AttributeError)
    assert isinstance(info.value, SkNotFittedError)
    Xd = X.toarray()
    bad = Xd.copy()
    bad[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        SVC().fit(bad, y)
    est.fit(Xd, y)
    with pytest.raises(ValueError, match="X has 5 features, but SVC is expecting 13"):
        est.predict(Xd[:, :5])
    with pytest.raises(ValueError, match="infinity"):
        est.predict(np.full((2, 13), np.inf))
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        SVC().fit(Xd, y + 0.5)
    with pytest.raises(ValueError, match="greater than one"):
        SVC().fit(Xd, np.ones(len(y)))
    with pytest.raises(ValueError, match="C must be"):
        SVC(C=-1.0).fit(Xd, y)                 # checked in fit, not in __init__
    with pytest.raises(ValueError, match="nu must be"):
        OneClassSVM(nu=1.5).fit(Xd)
    with pytest.raises(ValueError, match="kernel must be"):
        SVR(kernel="cubic").fit(Xd, y)
    with pytest.raises(ValueError, match="one class"):
        SVC().fit(Xd, y, sample_weight=(y > 0).astype(float))
    assert SVC(kernel="linear").fit(sp.csr_matrix(Xd).tolil(), list(y)).score(Xd, y) > 0.8


def test_no_bias_and_kernsolve_api_agree():
    X, y = _heart()
    est = SVC(C=2.0, gamma=0.1, bias=False).fit(X, y)
    np.testing.assert_array_equal(est.intercept_, [0.0])
    # labels as the estimator trains them: class indices, rows grouped by class
    codes = np.searchsorted(est.classes_, y)
    order = np.argsort(codes, kind="stable")
    model = kernsolve.train(codes[order], X[order], "-c 2 -g 0.1 -m 200 --bias 0 -q")
    from kernsolve._predict import decision_function
    np.testing.assert_array_equal(est.decision_function(X),
                                  -decision_function(X, model)[:, 0])
    with pytest.raises(ValueError, match="solver"):
        SVC(solver="nope").fit(X, y)


def test_one_class_sample_weight_matches_sklearn():
    X, _ = _heart()
    sw = np.random.RandomState(5).uniform(0.5, 2.0, size=X.shape[0])
    ours = OneClassSVM(nu=0.2, gamma="auto").fit(X, sample_weight=sw)
    theirs = sk_svm.OneClassSVM(nu=0.2, gamma="auto").fit(X, sample_weight=sw)
    np.testing.assert_allclose(ours.decision_function(X), theirs.decision_function(X),
                               rtol=0, atol=ATOL)


def test_kernsolve_does_not_import_sklearn():
    import subprocess
    import sys
    code = ("import sys, numpy as np, kernsolve\n"
            "X = np.random.RandomState(0).randn(40, 3); y = (X[:, 0] > 0).astype(int)\n"
            "kernsolve.SVC(probability=True).fit(X, y).predict_proba(X)\n"
            "kernsolve.SVR().fit(X, X[:, 1]).score(X, X[:, 1])\n"
            "kernsolve.OneClassSVM().fit(X).predict(X)\n"
            "assert not any(m.split('.')[0] == 'sklearn' for m in sys.modules), 'sklearn'\n")
    subprocess.run([sys.executable, "-c", code], check=True, env=package_env(),
                   cwd=tempfile.gettempdir(), timeout=120)


def test_precomputed_multiclass_zero_weights_equal_linear_kernel():
    # scikit-learn 1.9 gets this case wrong (its precomputed kernel and its
    # dropping of zero-weight rows disagree on row numbers), so the oracles are
    # the linear kernel on the raw rows and a fit without the zero-weight rows.
    X, y = _iris_strings()
    K = X @ X.T
    sw = np.random.RandomState(0).uniform(0.1, 2.0, size=len(y))
    sw[:7] = 0.0
    kept = sw > 0
    ours = SVC(kernel="precomputed").fit(K, y, sample_weight=sw)
    linear = SVC(kernel="linear").fit(X, y, sample_weight=sw)
    np.testing.assert_allclose(ours.decision_function(K), linear.decision_function(X),
                               rtol=0, atol=ATOL)
    np.testing.assert_array_equal(ours.support_, linear.support_)
    subset = sk_svm.SVC(kernel="precomputed").fit(K[np.ix_(kept, kept)], y[kept],
                                                  sample_weight=sw[kept])
    np.testing.assert_allclose(ours.decision_function(K), subset.decision_function(K[:, kept]),
                               rtol=0, atol=ATOL)


class _Frame:
    """The parts of a data frame that scikit-learn's feature-name rule reads."""

    def __init__(self, values, columns):
        self.values = np.asarray(values)
        self.columns = list(columns)
        self.shape = self.values.shape

    def __array__(self, dtype=None, copy=None):
        return self.values if dtype is None else self.values.astype(dtype)


def test_feature_names():
    X, y = _iris_strings()
    cols = ["sl", "sw", "pl", "pw"]
    est = SVC().fit(_Frame(X, cols), y)
    np.testing.assert_array_equal(est.feature_names_in_, cols)
    np.testing.assert_array_equal(est.predict(_Frame(X, cols)),
                                  SVC().fit(X, y).predict(X))
    with pytest.raises(ValueError, match="feature names should match"):
        est.predict(_Frame(X, ["a", "b", "c", "d"]))
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        est.predict(X)
    est.fit(X, y)
    assert not hasattr(est, "feature_names_in_")
    with pytest.warns(UserWarning, match="fitted without feature names"):
        est.predict(_Frame(X, cols))


# --------------------------------------------------------------------------
# solver= and solver_options= (SBP, Pegasos, SDCA, Perceptron)
# --------------------------------------------------------------------------

def _grouped(est, X, y):
    """(labels, rows) as the estimator trains them: class indices, rows grouped by class."""
    codes = np.searchsorted(est.classes_, y)
    order = np.argsort(codes, kind="stable")
    return codes[order].astype(float), X[order]


@pytest.mark.parametrize("cls, params, options", [
    (SVC, {"solver": "sbp", "C": 2.0, "solver_options": {"epochs": 1.5}},
     "-c 2 --solver sbp --epochs 1.5"),
    (SVC, {"solver": "sbp", "bias": False, "solver_options": {"max-kernel-evals": 20000}},
     "--solver sbp --bias 0 --max-kernel-evals 20000"),
    (NuSVC, {"solver": "sbp", "nu": 0.3, "solver_options": {"validation_fraction": 0.2}},
     "-s 1 -n 0.3 --solver sbp --validation-fraction 0.2"),
    (SVC, {"solver": "sdca", "C": 0.5, "solver_options": {"epochs": 3}},
     "-c 0.5 --solver sdca --epochs 3"),
    (SVC, {"solver": "pegasos", "solver_options": {"iterations": 300}},
     "--solver pegasos --iterations 300"),
    (SVC, {"solver": "perceptron"}, "--solver perceptron"),
])
def test_solver_predictions_equal_kernsolve_train(cls, params, options):
    """The estimator is kernsolve.train with --solver and the same long options."""
    X, y = _heart()
    X, y = X[:160], y[:160]
    est = cls(gamma=0.1, random_state=7, n_jobs=1, **params).fit(X, y)
    labels, rows = _grouped(est, X, y)
    model = kernsolve.train(labels, rows, f"{options} -g 0.1 --seed 7 -q", n_jobs=1)
    assert model.stats["pairs"][0].get("solver") == params["solver"]
    predicted, _, values = kernsolve.predict(np.zeros(X.shape[0]), X, model)
    np.testing.assert_array_equal(est.predict(X), est.classes_[predicted.astype(int)])
    np.testing.assert_array_equal(est.decision_function(X), -values[:, 0])
    if params["solver"] != "sbp":
        np.testing.assert_array_equal(est.intercept_, [0.0])     # no bias


def test_solver_grid_search_clone_and_params():
    X, y = _heart()
    Xd = X.toarray()[:150]
    y = y[:150]
    est = SVC(solver="sbp", solver_options={"epochs": 3}, n_jobs=1)
    params = est.get_params()
    assert params["solver"] == "sbp" and params["solver_options"] == {"epochs": 3}
    assert "solver_options={'epochs': 3}" in repr(est)
    fresh = clone(est)
    assert fresh.get_params() == params
    assert fresh.solver_options is not est.solver_options        # clone copies the dict
    assert est.set_params(solver="sdca", solver_options={"iterations": 50}) is est
    assert est.get_params()["solver_options"] == {"iterations": 50}
    # GridSearchCV over the solver: each cell equals the same estimator scored by hand
    grid = {"solver": ["smo", "sbp", "sdca"], "C": [1.0, 4.0]}
    search = GridSearchCV(SVC(gamma=0.05, n_jobs=1), grid, cv=3).fit(Xd, y)
    assert len(search.cv_results_["params"]) == 6
    for p, score in zip(search.cv_results_["params"], search.cv_results_["mean_test_score"]):
        by_hand = cross_val_score(SVC(gamma=0.05, n_jobs=1, **p), Xd, y, cv=3).mean()
        assert score == pytest.approx(by_hand, abs=1e-12), p
    assert search.best_estimator_.solver in grid["solver"]
    # pickling keeps a fitted SBP model
    back = pickle.loads(pickle.dumps(search.best_estimator_))
    np.testing.assert_array_equal(back.decision_function(Xd),
                                  search.best_estimator_.decision_function(Xd))


def test_solver_errors_name_the_problem():
    X, y = _heart()
    Xd = X.toarray()[:100]
    y = y[:100]
    cases = [
        (SVC(solver="dsg"), "use kernsolve.DSGClassifier"),
        (SVC(solver="eigenpro"), "use kernsolve.EigenProClassifier"),
        (SVC(solver="newton"), r"solver must be one of \['smo', 'sbp', 'pegasos'"),
        (NuSVC(solver="sdca"), "'sdca' does not train NuSVC's problem"),
        (SVC(solver_options={"epochs": 2}), "not an option of solver 'smo'"),
        (SVC(solver="sdca", solver_options={"time_limit": 1}),
         "'time_limit' is not an option of solver 'sdca' .its options: 'epochs', "
         "'iterations'"),
        (SVC(solver="sbp", solver_options=[("epochs", 2)]), "solver_options must be None or a dict"),
        (SVC(solver="sbp", solver_options={"epochs": 0}), "--epochs: must be > 0"),
        (SVC(solver="pegasos", solver_options={"epochs": 1, "iterations": 5}),
         "not both"),
        (SVC(solver="sbp", class_weight="balanced"), "does not support class_weight"),
        (SVC(solver="sdca", max_iter=100), "max_iter is SMO's iteration limit"),
        (NuSVC(solver="sbp", nu=1.0), "nu must be in .0, 1."),
    ]
    for est, message in cases:
        with pytest.raises(ValueError, match=message):
            est.fit(Xd, y)
    with pytest.raises(ValueError, match="does not support unequal sample weights"):
        SVC(solver="sbp").fit(Xd, y, sample_weight=np.linspace(1, 2, len(y)))
    # equal weights (rows of weight 0 left out) are the unweighted problem
    w = np.ones(len(y))
    w[:10] = 0
    a = SVC(solver="sbp", gamma=0.1, n_jobs=1).fit(Xd, y, sample_weight=w)
    b = SVC(solver="sbp", gamma=0.1, n_jobs=1).fit(Xd[10:], y[10:])
    np.testing.assert_array_equal(a.decision_function(Xd), b.decision_function(Xd))


@pytest.mark.parametrize("cls", [SVC, NuSVC, SVR, NuSVR, OneClassSVM, kernsolve.DSGClassifier,
                                 kernsolve.DSGRegressor, kernsolve.EigenProRegressor,
                                 kernsolve.EigenProClassifier])
def test_every_parameter_is_declared(cls):
    # scikit-learn's rule: _parameter_constraints names each constructor
    # parameter (those checked elsewhere say "no_validation"), and no other
    assert sorted(cls._parameter_constraints) == cls._get_param_names()


def test_constraint_wording_and_checks():
    from numbers import Integral, Real

    from kernsolve.estimators._base import BaseEstimator, Interval, Rule, StrOptions

    assert Interval(Real, 0, None, closed="neither").phrases() == ["a finite number > 0"]
    assert Interval(Integral, 1, None, closed="left").phrases() == ["an integer >= 1"]
    assert Interval(Real, 0, 1, closed="right").phrases() == ["in (0, 1]"]
    degree = Interval(Integral, 0, None, closed="left", whole_floats=True)
    assert degree.accepts(3) and degree.accepts(3.0) and not degree.accepts(2.5)
    assert not degree.accepts(np.nan) and not degree.accepts(np.inf)
    assert not degree.accepts(True) and not Interval(Integral, 1, None, closed="left").accepts(2.0)
    c = Interval(Real, 0, None, closed="neither")
    assert c.accepts(10 ** 30) and not c.accepts(0) and not c.accepts(np.inf)
    assert StrOptions(("a-b",), underscores=True).accepts("a_b")

    class Est(BaseEstimator):
        _parameter_constraints = {
            "mode": Rule(StrOptions(("x", "y")), None, note="(a note)"),
            "size": Rule(Interval(Real, 0, None, closed="left"), when=lambda e: e.mode is None),
        }

        def __init__(self, mode=None, size=1.0):
            self._store_params(locals())

    Est(mode="x", size=-1)._validate_params()     # size is read only when mode is None
    with pytest.raises(ValueError, match=r"^Est: mode must be 'x', 'y' or None \(a note\), "
                                         r"got 'z'$"):
        Est(mode="z")._validate_params()
    with pytest.raises(ValueError, match=r"^Est: size must be a finite number >= 0, got -1$"):
        Est(size=-1)._validate_params()
