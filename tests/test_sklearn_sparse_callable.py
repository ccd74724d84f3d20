"""kernsolve's SVMs as a drop-in for scikit-learn's: sparse in, sparse out;
callable kernels; predictions that follow the fitted attributes.

Oracle: scikit-learn's own SVC/NuSVC/SVR/OneClassSVM (LIBSVM underneath) on
small data: the attribute types, dtypes and shapes it gives, its values and
predictions, its errors.  scikit-learn is a test-only dependency.
"""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp

sklearn = pytest.importorskip("sklearn")
from sklearn import svm as sk_svm  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.datasets import load_iris  # noqa: E402

import kernsolve  # noqa: E402
from kernsolve import SVC, SVR  # noqa: E402

ATOL = 1e-9

X6 = np.array([[-2, -1], [-1, -1], [-1, -2], [1, 1], [1, 2], [2, 1]], dtype=float)
Y6 = np.array([1, 1, 1, 2, 2, 2])
T3 = np.array([[-1, -1], [2, 2], [3, 2]], dtype=float)


def _iris():
    """Iris, shuffled, with a column of zeros (a feature no row has in CSR)."""
    X, y = load_iris(return_X_y=True)
    order = np.random.RandomState(0).permutation(len(y))
    X = X[order].copy()
    X[:, 1] = 0.0
    return X, y[order]


def _dense(a):
    return a.toarray() if sp.issparse(a) else np.asarray(a)


def _same_attribute(ours, theirs, atol=ATOL):
    """Same container class, dtype, shape (and CSR index dtype) as scikit-learn's,
    and the same values."""
    assert type(ours) is type(theirs), (type(ours), type(theirs))
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    if sp.issparse(theirs):
        assert ours.indices.dtype == np.int32 and ours.indptr.dtype == np.int32
    np.testing.assert_allclose(_dense(ours), _dense(theirs), rtol=0, atol=atol)


def _pair(name, **params):
    return getattr(kernsolve, name)(**params), getattr(sk_svm, name)(**params)


# --------------------------------------------------------------------------
# sparse in, sparse out
# --------------------------------------------------------------------------

@pytest.mark.parametrize("name, params, classes", [
    ("SVC", {"kernel": "linear"}, 2),
    ("SVC", {"kernel": "linear"}, 3),
    ("SVC", {"kernel": "rbf", "gamma": 0.5}, 3),
    ("SVC", {"kernel": "poly", "degree": 2, "gamma": 0.5, "coef0": 1.0}, 3),
    ("SVR", {"kernel": "linear", "C": 3.0}, 0),
    ("OneClassSVM", {"kernel": "rbf", "gamma": 0.1, "nu": 0.5}, 0),
])
@pytest.mark.parametrize("container", [sp.csr_matrix, sp.csr_array, sp.lil_matrix])
def test_sparse_fit_gives_scikit_learns_sparse_attributes(name, params, classes, container):
    X, y = _iris()
    if classes == 2:
        X, y = X[y < 2], y[y < 2]
    fit_args = (y,) if name != "OneClassSVM" else ()
    ours, theirs = _pair(name, **params)
    ours.fit(container(X), *fit_args)
    theirs.fit(container(X), *fit_args)
    _same_attribute(ours.support_vectors_, theirs.support_vectors_)
    _same_attribute(ours.dual_coef_, theirs.dual_coef_, atol=1e-6)
    np.testing.assert_array_equal(ours.support_, theirs.support_)
    assert ours.support_.dtype == theirs.support_.dtype
    np.testing.assert_array_equal(ours.n_support_, theirs.n_support_)
    if params["kernel"] == "linear":
        _same_attribute(ours.coef_, theirs.coef_, atol=1e-6)
    # predictions of a sparse fit, on sparse and on dense rows, are scikit-learn's
    predict = "predict" if name == "SVR" else "decision_function"
    for rows in (container(X), X):
        np.testing.assert_allclose(getattr(ours, predict)(rows), getattr(theirs, predict)(rows),
                                   rtol=0, atol=1e-6)
        compare = np.testing.assert_allclose if name == "SVR" else \
            np.testing.assert_array_equal
        compare(ours.predict(rows), theirs.predict(rows))


@pytest.mark.parametrize("name", ["SVC", "SVR", "OneClassSVM"])
def test_dense_fit_keeps_dense_attributes(name):
    X, y = _iris()
    fit_args = (y,) if name != "OneClassSVM" else ()
    ours, theirs = _pair(name, kernel="linear")
    ours.fit(X, *fit_args)
    theirs.fit(X, *fit_args)
    for attribute in ("support_vectors_", "dual_coef_", "coef_"):
        _same_attribute(getattr(ours, attribute), getattr(theirs, attribute), atol=1e-6)
    # sparse rows for a dense fit are refused with scikit-learn's message
    with pytest.raises(ValueError) as theirs_error:
        theirs.predict(sp.csr_matrix(X))
    with pytest.raises(ValueError) as ours_error:
        ours.predict(sp.csr_matrix(X))
    assert str(ours_error.value) == str(theirs_error.value)


def test_sparse_interface_setting_selects_csr_array():
    """scikit-learn's ``sparse_interface="sparray"`` gives csr_array attributes."""
    X, y = _iris()
    with sklearn.config_context(sparse_interface="sparray"):
        ours = SVC(kernel="linear").fit(sp.csr_matrix(X), y)
        theirs = sk_svm.SVC(kernel="linear").fit(sp.csr_matrix(X), y)
        coefs = ours.coef_, theirs.coef_
    for a, b in ((ours.support_vectors_, theirs.support_vectors_),
                 (ours.dual_coef_, theirs.dual_coef_), coefs):
        assert type(a) is type(b) is sp.csr_array
        np.testing.assert_allclose(a.toarray(), b.toarray(), rtol=0, atol=1e-6)


def test_sparse_fit_without_support_vectors():
    """A linear SVR whose targets all lie in the tube has no SVs: empty CSR matrices
    of scikit-learn's shapes (scikit-learn's regression test #14893)."""
    X = sp.csr_matrix([[0, 1, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0], [0, 0, 0, 1]])
    y = np.array([0.04, 0.04, 0.10, 0.16])
    ours = SVR(kernel="linear").fit(X, y)
    theirs = sk_svm.SVR(kernel="linear").fit(X, y)
    assert ours.support_vectors_.shape == theirs.support_vectors_.shape == (0, 4)
    assert ours.dual_coef_.shape == theirs.dual_coef_.shape == (1, 0)
    assert sp.issparse(ours.support_vectors_) and sp.issparse(ours.dual_coef_)
    assert ours.coef_.shape == theirs.coef_.shape and sp.issparse(ours.coef_)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=0, atol=ATOL)


def test_unsorted_csr_indices_give_the_sorted_result():
    X, y = _iris()
    X = X + 1.0                 # no zeros: every row has all its indices
    S = sp.csr_matrix(X)
    reversed_rows = sp.csr_matrix(
        (np.concatenate([S.data[a:b][::-1] for a, b in zip(S.indptr, S.indptr[1:])]),
         np.concatenate([S.indices[a:b][::-1] for a, b in zip(S.indptr, S.indptr[1:])]),
         S.indptr), shape=S.shape)
    assert not reversed_rows.has_sorted_indices
    theirs = sk_svm.SVC(kernel="linear").fit(S, y)
    ours = SVC(kernel="linear").fit(reversed_rows, y)
    _same_attribute(ours.coef_, theirs.coef_, atol=1e-6)
    np.testing.assert_array_equal(ours.predict(reversed_rows), theirs.predict(S))


def test_sparse_and_dense_fits_write_the_same_model_file(tmp_path):
    """A sparse fit is the same model as a dense one: the same LIBSVM file."""
    X, y = _iris()
    texts = []
    for rows in (X, sp.csr_matrix(X)):
        path = str(tmp_path / "m")
        est = SVC(kernel="poly", gamma=0.5, probability=True).fit(rows, y)
        kernsolve.save_model(path, est.model_)
        with open(path, "rb") as f:
            texts.append(f.read())
    assert texts[0] == texts[1]


# --------------------------------------------------------------------------
# callable kernels
# --------------------------------------------------------------------------

def _count_kernel(A, B):
    """A kernel on strings: the dot product of their counts of 'A' and 'B'."""
    assert isinstance(A[0], str) and isinstance(B[0], str)
    ca = np.array([[s.count("A"), s.count("B")] for s in A], dtype=float)
    cb = np.array([[s.count("A"), s.count("B")] for s in B], dtype=float)
    return ca @ cb.T


def _linear_kernel(A, B):
    """Module level, so that an estimator holding it pickles; on sparse rows its
    Gram matrix is sparse."""
    return A @ B.T


@pytest.mark.parametrize("name", ["SVC", "SVR"])
def test_callable_kernel_on_strings(name):
    data = ["A A", "A", "B", "B B", "A B", "A A B"]
    y = np.array([1, 1, 2, 2, 1, 1])
    ours, theirs = _pair(name, kernel=_count_kernel)
    ours.fit(data, y)
    theirs.fit(data, y)
    test = ["B A", "A A A", "B B B"]
    values = "decision_function" if name == "SVC" else "predict"
    np.testing.assert_allclose(getattr(ours, values)(test), getattr(theirs, values)(test),
                               rtol=0, atol=ATOL)
    np.testing.assert_array_equal(ours.predict(test), theirs.predict(test))
    np.testing.assert_array_equal(ours.support_, theirs.support_)
    assert ours.shape_fit_ == theirs.shape_fit_ == (6,)
    assert ours.support_vectors_ == [data[i] for i in ours.support_]


@pytest.mark.parametrize("container", [sp.lil_matrix, sp.lil_array])
def test_callable_kernel_gets_the_rows_as_given(container):
    seen = []

    def kernel(A, B):
        seen.append((type(A), type(B)))
        return A @ B.T          # a sparse Gram matrix

    X = container(X6)
    ours = SVC(kernel=kernel, probability=True, random_state=0).fit(X, Y6)
    theirs = sk_svm.SVC(kernel="linear").fit(X6, Y6)
    assert seen == [(container, container)]
    np.testing.assert_allclose(ours.decision_function(container(T3)),
                               theirs.decision_function(T3), rtol=0, atol=ATOL)
    assert seen[-1] == (container, container)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X6))
    assert ours.predict_proba(X).shape == (6, 2)


def test_callable_kernel_clone_and_pickle():
    """scikit-learn's test_sparse_svc_clone_with_callable_kernel, and a pickle."""
    X, y = _iris()
    est = SVC(kernel=_linear_kernel, C=0.5)
    theirs = sk_svm.SVC(kernel="linear", C=0.5).fit(X, y)
    fitted = clone(est).fit(sp.lil_matrix(X), y)
    assert clone(fitted).kernel is _linear_kernel
    back = pickle.loads(pickle.dumps(fitted))
    for rows in (sp.lil_matrix(X), sp.csr_matrix(X)):
        np.testing.assert_allclose(back.decision_function(rows), theirs.decision_function(X),
                                   rtol=0, atol=1e-6)
        np.testing.assert_array_equal(back.predict(rows), theirs.predict(X))


def test_callable_kernel_of_the_wrong_shape_is_refused():
    X = np.array([[0.0], [1.0]])
    y = [0.0, 0.5]
    # At prediction, as scikit-learn: a ValueError.
    calls = []

    def shrinking(A, B):
        calls.append(1)
        return A @ B.T if len(calls) == 1 else np.array([[1.0]])

    est = SVR(kernel=shrinking).fit(X, y)
    with pytest.raises(ValueError, match=r"returned a matrix of shape \(1, 1\); expected "
                                         r"\(2, 2\)"):
        est.predict(X)
    # At fit too (scikit-learn trains on the 1x1 matrix and predicts nothing sensible).
    with pytest.raises(ValueError, match=r"SVR: the kernel callable returned a matrix of "
                                         r"shape \(1, 1\); expected \(2, 2\)"):
        SVR(kernel=lambda A, B: np.array([[1.0]])).fit(X, y)


# --------------------------------------------------------------------------
# predictions follow the fitted attributes
# --------------------------------------------------------------------------

@pytest.mark.parametrize("sparse_fit", [False, True])
def test_predictions_follow_changed_internal_attributes(sparse_fit):
    """scikit-learn's test_tweak_params: a changed ``_dual_coef_`` or
    ``_intercept_`` changes the predictions, the same way in both libraries."""
    X, y = _iris()
    rows = sp.csr_matrix(X) if sparse_fit else X
    ours = SVC(kernel="linear", C=0.1).fit(rows, y)
    theirs = sk_svm.SVC(kernel="linear", C=0.1).fit(rows, y)
    before = ours.decision_function(X)
    factors = np.random.RandomState(0).uniform(0.0, 2.0, theirs._dual_coef_.shape)
    for est in (ours, theirs):
        if sparse_fit:   # every coefficient is stored, row by row, in both libraries
            est._dual_coef_ = est._dual_coef_.copy()
            est._dual_coef_.data *= factors.ravel()
        else:
            est._dual_coef_ = est._dual_coef_ * factors
        est._intercept_ = est._intercept_ + 0.25
    after = ours.decision_function(X)
    assert np.abs(after - before).max() > 0.1
    np.testing.assert_allclose(after, theirs.decision_function(X), rtol=0, atol=1e-6)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
    # model_ is the model the estimator predicts with
    labels, _, _ = kernsolve.predict(None, X, ours.model_, "-q")
    np.testing.assert_array_equal(ours.classes_[labels.astype(int)], theirs.predict(X))


@pytest.mark.parametrize("sparse_fit", [False, True])
def test_altered_internal_representation_is_refused(sparse_fit):
    """scikit-learn's check for CVE-2020-28975: class counts that no longer
    match the support vectors raise its ValueError (kernsolve checks a sparse
    fit too) instead of reading past the arrays."""
    rows = sp.csr_matrix(X6) if sparse_fit else X6
    ours = SVC(kernel="linear").fit(rows, Y6)
    theirs = sk_svm.SVC(kernel="linear").fit(X6, Y6)
    ours._n_support[0] = 1000000
    theirs._n_support[0] = 1000000
    message = "The internal representation of SVC was altered"
    for est in ([ours] if sparse_fit else [ours, theirs]):
        with pytest.raises(ValueError, match=message):
            est.predict(X6)
    with pytest.raises(ValueError, match=message):
        ours.decision_function(X6)
    ours = SVC(kernel="linear", probability=True).fit(rows, Y6)
    ours._dual_coef_ = np.zeros((1, 1))
    with pytest.raises(ValueError, match=message + r" \(model: dual_coef has shape"):
        ours.predict_proba(X6)



def test_a_kernel_callable_that_returns_nan_is_blamed_not_x():
    # The red team: a callable kernel returning NaN was reported as "X
    # contains non-finite values"; X is the kernel's to read, not kernsolve's.
    X, y = _iris()

    def broken(A, B):
        K = np.asarray(A) @ np.asarray(B).T
        K[3, 5] = np.nan
        return K

    with pytest.raises(ValueError, match=r"SVC: the kernel callable returned nan for "
                                         r"samples 3 and 5 \(and 0 more"):
        SVC(kernel=broken).fit(X, y)
