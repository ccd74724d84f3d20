"""DSGClassifier / DSGRegressor (kernsolve.estimators.dsg).

Oracles: scikit-learn's estimator checks; ``kernsolve.train`` with the
equivalent option string and ``train_file`` over the same windows (the
estimators must reach exactly those models); the decision function rebuilt
from explicitly materialised random features (``random_features``, itself
checked against the written spec in test_features.py) and numpy's sigmoid /
softmax; scipy-free closed forms for R^2 and accuracy.
"""
import pickle
import warnings

import numpy as np
import pytest

from conftest import parametrize_with_sklearn_checks
import kernsolve
from kernsolve.solvers.dsg.stream import train_file
from kernsolve.estimators.dsg import DSGClassifier, DSGRegressor


def _a9a(shared, tmp_path, n=600):
    path = tmp_path / "a9a.part"
    path.write_bytes(shared.lines("a9a", n))
    y, X = kernsolve.read_problem(str(path))
    return str(path), X, y


def _housing(shared, n=300):
    import io
    y, X = kernsolve.read_problem(io.BytesIO(shared.lines("housing_scale", n)))
    return X, y


# --------------------------------------------------------------------------
# scikit-learn's estimator checks
# --------------------------------------------------------------------------

@parametrize_with_sklearn_checks(
    [DSGClassifier(n_jobs=1),
     DSGClassifier(loss="logistic", n_jobs=1),
     DSGClassifier(loss="softmax", kernel="laplacian", average=False, n_jobs=1),
     DSGRegressor(n_jobs=1),
     DSGRegressor(step=10, t0=10, max_iter=8, batch_size=16, n_jobs=1)])
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


# --------------------------------------------------------------------------
# the estimators train exactly the models of the option strings
# --------------------------------------------------------------------------

def test_classifier_equals_train_with_the_same_options(shared, tmp_path):
    _, X, y = _a9a(shared, tmp_path, 500)          # labels -1/+1
    est = DSGClassifier(gamma=0.05, C=10.0, batch_size=16, feature_block=8, step=2.0,
                        t0=3.0, max_iter=2, random_state=7, n_jobs=1).fit(X, y)
    m = kernsolve.train(y, X, "-q --solver dsg --loss hinge -g 0.05 -c 10 --batch-size 16 "
                              "--feature-block 8 --step 2 --t0 3 --epochs 2 --seed 7")
    # kernsolve's positive class is +1 (LIBSVM's swap); the estimator's is classes_[1] = +1
    np.testing.assert_array_equal(est.classes_, [-1.0, 1.0])
    assert np.array_equal(est.coef_, m.coef) and np.array_equal(est.intercept_, m.intercept)
    assert est.coef_.shape == (m.n_blocks, 8, 1) and est.t_ == m.stats["n_iter"]
    assert est.n_iter_ == 2 and est.lambda_ == 1.0 / (10.0 * X.shape[0])
    np.testing.assert_array_equal(est.predict(X), m.predict(X))


@pytest.mark.parametrize("params, options", [
    ({"step_rule": "gradient"}, "--step-rule gradient"),
    ({"ridge": 0.3}, "--ridge 0.3"),
    ({"step_rule": "fit_gcv"}, "--step-rule fit-gcv"),
    ({"step_rule": "fit", "solver": "cdsg"}, "--solver cdsg --step-rule fit"),
])
def test_step_rule_parameters_equal_train(shared, tmp_path, params, options):
    _, X, y = _a9a(shared, tmp_path, 300)
    est = DSGClassifier(gamma=0.05, batch_size=32, feature_block=8, max_iter=2,
                        random_state=3, n_jobs=1, **params).fit(X, y)
    m = kernsolve.train(y, X, "-q --solver dsg --loss hinge -g 0.05 --batch-size 32 "
                              f"--feature-block 8 --epochs 2 --seed 3 {options}")
    assert np.array_equal(est.coef_, m.coef) and np.array_equal(est.intercept_, m.intercept)


@pytest.mark.parametrize("loss, extra, options", [
    ("squared", {}, ""),
    ("epsilon-insensitive", {"epsilon": 0.3}, "-p 0.3"),
    ("huber", {"delta": 0.5}, "--delta 0.5"),
    ("quantile", {"tau": 0.2}, "--tau 0.2"),
])
def test_regressor_equals_train_with_the_same_options(shared, loss, extra, options):
    X, y = _housing(shared, 200)
    est = DSGRegressor(loss, gamma="median", alpha=1e-3, batch_size=10, step=0.5,
                       average=True, fit_intercept=False, random_state=3, n_jobs=1,
                       **extra).fit(X, y)
    m = kernsolve.train(y, X, f"-q -s 3 --solver dsg --loss {loss} -g median --lambda 1e-3 "
                              f"--batch-size 10 --step 0.5 --average 1 --bias 0 --seed 3 "
                              + options)
    assert np.array_equal(est.coef_, m.coef) and np.array_equal(est.intercept_, m.intercept)
    assert est.gamma_ == m.gamma and est.intercept_[0] == 0.0
    np.testing.assert_array_equal(est.predict(X), m.predict(X))


# --------------------------------------------------------------------------
# partial_fit
# --------------------------------------------------------------------------

# partial_fit over the whole data each time: lambda from its first "chunk" is fit's
@pytest.mark.filterwarnings("ignore:.*alpha=None takes lambda:UserWarning")
def test_fit_with_E_passes_equals_E_partial_fits(shared, tmp_path):
    """What holds: pass k of a trainer uses the seeded order k, whoever calls it."""
    _, X, y = _a9a(shared, tmp_path, 300)
    kw = dict(gamma=0.05, batch_size=32, feature_block=4, random_state=1, n_jobs=1)
    for E in (1, 2):
        full = DSGClassifier(max_iter=E, **kw).fit(X, y)
        part = DSGClassifier(**kw)
        for _ in range(E):
            part.partial_fit(X, y, classes=[1, -1])
        assert np.array_equal(full.coef_, part.coef_)
        assert np.array_equal(full.intercept_, part.intercept_)
        assert part.n_iter_ == full.n_iter_ == E
    # a fractional max_iter ends with a partial pass; partial_fit after fit continues
    a = DSGClassifier(max_iter=1.5, **kw).fit(X, y)
    assert a.t_ == int(np.ceil(X.shape[0] / 32)) + int(np.ceil(round(0.5 * X.shape[0]) / 32))
    b = DSGClassifier(max_iter=1, **kw).fit(X, y).partial_fit(X, y)
    assert np.array_equal(b.coef_, DSGClassifier(max_iter=2, **kw).fit(X, y).coef_)


def test_partial_fit_over_chunks_equals_train_file_over_windows(shared, tmp_path):
    """Streaming from a file (train_file) and partial_fit over the same chunks
    are the same sequence of DSGTrainer.fit_rows calls."""
    path, X, y = _a9a(shared, tmp_path, 400)
    chunk = 6000                       # bytes per window: 5+ windows
    size = len(open(path, "rb").read())
    d = X.shape[1]
    est = DSGClassifier(gamma=0.04, alpha=1e-4, batch_size=16, feature_block=8,
                        random_state=5, n_jobs=1)
    n_chunks = 0
    for offset in range(0, size, chunk):
        yc, Xc = kernsolve.read_problem(path, n_features=d, zero_based=False, offset=offset,
                                        length=min(chunk, size - offset))
        if yc.size:
            est.partial_fit(Xc, yc, classes=[-1, 1])
            n_chunks += 1
    assert n_chunks >= 5
    m = train_file(path, "-q --solver dsg -g 0.04 --lambda 1e-4 --batch-size 16 "
                              "--feature-block 8 --seed 5", chunk_bytes=chunk)
    assert np.array_equal(est.coef_, m.coef) and np.array_equal(est.intercept_, m.intercept)


def test_partial_fit_needs_classes_and_checks_chunks(shared, tmp_path):
    _, X, y = _a9a(shared, tmp_path, 200)
    est = DSGClassifier(gamma=0.05, alpha=1e-3, n_jobs=1)
    with pytest.raises(ValueError, match="classes must be passed on the first call"):
        est.partial_fit(X, y)
    est.partial_fit(X[:100], y[:100], classes=np.array([-1, 1]))
    with pytest.raises(ValueError, match="not in classes"):
        est.partial_fit(X[100:], np.where(y[100:] > 0, 2, -1))
    with pytest.raises(ValueError, match="not the same as on the first call"):
        est.partial_fit(X[100:], y[100:], classes=[-1, 1, 2])
    with pytest.raises(ValueError, match=f"X has {X.shape[1] - 1} features"):
        est.partial_fit(X[100:, :-1], y[100:])
    before = est.coef_.copy()
    est.partial_fit(X[100:], y[100:])      # still usable after the refused chunks
    assert est.coef_.shape[0] > before.shape[0] and est.n_iter_ == 2
    # a chunk with one class is fine once the classes are known
    est.partial_fit(X[y > 0], y[y > 0])


def test_partial_fit_without_alpha_warns_that_lambda_is_the_first_chunks(shared, tmp_path):
    # lambda = 1 / (C n) of the first chunk, not of the stream: a silent loss of
    # accuracy unless the user is told (a9a in chunks of 64: 21.4% against 15.6%)
    _, X, y = _a9a(shared, tmp_path, 200)
    for est, args in [(DSGClassifier(gamma=0.05, C=2.0, n_jobs=1), {"classes": [-1, 1]}),
                      (kernsolve.DSGRegressor(gamma=0.05, C=2.0, n_jobs=1), {})]:
        with pytest.warns(UserWarning, match=r"alpha=None takes lambda = 1 / \(C \* 80\) "
                                             r"from the first chunk's 80 rows"):
            est.partial_fit(X[:80], y[:80], **args)
        assert est.lambda_ == pytest.approx(1 / (2.0 * 80))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            est.partial_fit(X[80:], y[80:])                 # only the first call
            est.set_params(alpha=1e-3).fit(X, y)             # fit: lambda from all of X
            type(est)(gamma=0.05, alpha=1e-3, n_jobs=1).partial_fit(X[:80], y[:80], **args)
        assert est.lambda_ == 1e-3


def test_partial_fit_warns_once_about_chunks_smaller_than_a_batch(shared, tmp_path):
    _, X, y = _a9a(shared, tmp_path, 200)
    est = DSGClassifier(gamma=0.05, alpha=1e-3, batch_size=32, n_jobs=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est.partial_fit(X[:32], y[:32], classes=[-1, 1])      # a whole batch: quiet
    with pytest.warns(UserWarning, match=r"a chunk of 5 rows is less than a batch \(32 rows\) "
                                         r"but takes an iteration of its own"):
        est.partial_fit(X[32:37], y[32:37])
    assert est.t_ == 2                                         # one iteration each
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est.partial_fit(X[37:40], y[37:40])                   # said once
    # pickled and restored, the estimator remembers it said so
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pickle.loads(pickle.dumps(est)).partial_fit(X[40:43], y[40:43])


# --------------------------------------------------------------------------
# prediction against materialised random features
# --------------------------------------------------------------------------

def _values_by_hand(est, X):
    Z = kernsolve.random_features(X, est.coef_.shape[0] * est.coef_.shape[1],
                                  kernel=est.kernel, gamma=est.gamma_,
                                  seed=est.random_state or 0)
    return Z @ est.coef_.reshape(-1, est.coef_.shape[2]) + est.intercept_


def test_binary_logistic_values_and_probabilities(shared, tmp_path):
    _, X, y = _a9a(shared, tmp_path, 300)
    labels = np.where(y > 0, ">50K", "<=50K")
    est = DSGClassifier("logistic", gamma=0.05, step=3, random_state=2, n_jobs=1).fit(X, labels)
    np.testing.assert_array_equal(est.classes_, ["<=50K", ">50K"])
    v = _values_by_hand(est, X[:50])[:, 0]
    np.testing.assert_allclose(est.decision_function(X[:50]), v, rtol=0, atol=1e-12)
    p1 = 1.0 / (1.0 + np.exp(-v))
    np.testing.assert_allclose(est.predict_proba(X[:50]), np.column_stack([1 - p1, p1]),
                               rtol=0, atol=1e-12)
    np.testing.assert_array_equal(est.predict(X[:50]), np.where(v > 0, ">50K", "<=50K"))
    np.testing.assert_allclose(est.predict_log_proba(X[:50]),
                               np.log(est.predict_proba(X[:50])), rtol=1e-12)


def test_multiclass_softmax_and_one_vs_rest():
    rng = np.random.RandomState(0)
    centers = np.array([[0, 0], [3, 0], [0, 3]])
    yi = rng.randint(3, size=240)
    X = centers[yi] + 0.6 * rng.randn(240, 2)
    names = np.array(["b", "c", "a"])[yi]            # classes_ is sorted: a, b, c
    for loss in ("softmax", "logistic", "hinge"):
        est = DSGClassifier(loss, gamma=0.5, step=5, max_iter=4, random_state=4,
                            n_jobs=1).fit(X, names)
        np.testing.assert_array_equal(est.classes_, ["a", "b", "c"])
        v = _values_by_hand(est, X)
        np.testing.assert_allclose(est.decision_function(X), v, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(est.predict(X), est.classes_[np.argmax(v, axis=1)])
        assert est.score(X, names) > 0.9
        if loss == "softmax":
            z = np.exp(v - v.max(axis=1, keepdims=True))
            np.testing.assert_allclose(est.predict_proba(X), z / z.sum(axis=1, keepdims=True),
                                       rtol=0, atol=1e-12)
        elif loss == "logistic":
            s = 1 / (1 + np.exp(-v))
            np.testing.assert_allclose(est.predict_proba(X), s / s.sum(axis=1, keepdims=True),
                                       rtol=0, atol=1e-12)
        else:
            assert not hasattr(est, "predict_proba") and not hasattr(est, "predict_log_proba")


def test_auto_loss_is_the_command_lines_choice():
    """loss='auto' (the default) trains what kernsolve-train trains without
    --loss: the hinge for two classes, the softmax (and its batch and block)
    beyond; probabilities only once fitted with the softmax."""
    rng = np.random.RandomState(1)
    centers = np.array([[0, 0], [3, 0], [0, 3]])
    yi = rng.randint(3, size=300)
    X = centers[yi] + 0.6 * rng.randn(300, 2)
    assert not hasattr(DSGClassifier(), "predict_proba")
    for k, loss in ((3, "softmax"), (2, "hinge")):
        keep = yi < k
        # two classes as -1/+1: kernsolve's positive output is +1 = classes_[1]
        Xk, yk = X[keep], (yi[keep] if k > 2 else 2 * yi[keep] - 1).astype(np.float64)
        est = DSGClassifier(gamma=0.5, max_iter=3, random_state=2, n_jobs=1).fit(Xk, yk)
        m = kernsolve.train(yk, Xk, "-q --solver dsg -g 0.5 --epochs 3 --seed 2")
        assert est.loss_ == loss == m.loss
        # the model's outputs follow its labels (first appearance), the
        # estimator's classes_ (sorted)
        order = [list(m.labels).index(c) for c in est.classes_] if k > 2 else [0]
        assert np.array_equal(est.coef_, m.coef[:, :, order])
        assert np.array_equal(est.intercept_, m.intercept[order])
        assert hasattr(est, "predict_proba") == (loss == "softmax")
        assert est.score(Xk, yk) > 0.9
        chunked = DSGClassifier(gamma=0.5, random_state=2, n_jobs=1)
        chunked.partial_fit(Xk, yk, classes=np.unique(yk))
        assert chunked.loss_ == loss


def test_regressor_score_is_r2(shared):
    X, y = _housing(shared, 300)
    est = DSGRegressor(gamma="median", step=0.5, max_iter=3, n_jobs=1).fit(X, y)
    p = est.predict(X)
    assert est.score(X, y) == pytest.approx(1 - np.sum((y - p) ** 2) / np.sum((y - y.mean()) ** 2))
    assert not hasattr(est, "decision_function") and not hasattr(est, "predict_proba")


# --------------------------------------------------------------------------
# clone, pickle, threads, grid search
# --------------------------------------------------------------------------

def test_pickle_predicts_identically_and_resumes(shared, tmp_path):
    _, X, y = _a9a(shared, tmp_path, 300)
    est = DSGClassifier("logistic", gamma=0.05, alpha=1e-3, n_jobs=1)
    est.partial_fit(X[:150], y[:150], classes=[-1, 1])
    blob = pickle.dumps(est)
    back = pickle.loads(blob)
    np.testing.assert_array_equal(back.predict_proba(X), est.predict_proba(X))
    # the block cache is left out of the pickle: the copy regenerates blocks,
    # so resuming gives the same model as the original
    assert back._trainer.cache.size == 0 and est._trainer.cache.size > 0
    made = est._trainer.n_blocks * est._trainer.stride     # the old blocks' directions
    back.partial_fit(X[150:], y[150:])
    est.partial_fit(X[150:], y[150:])
    assert np.array_equal(back.coef_, est.coef_)
    # and the copy's cache holds them again: generated at once, as the step
    # loop made them block by block
    assert np.array_equal(back._trainer.cache[:made], est._trainer.cache[:made])
    # the cache size never changes the numbers
    tiny = DSGClassifier("logistic", gamma=0.05, alpha=1e-3, cache_size=1e-3, n_jobs=1)
    tiny.partial_fit(X[:150], y[:150], classes=[-1, 1]).partial_fit(X[150:], y[150:])
    assert np.array_equal(tiny.coef_, est.coef_)


def test_threads_and_clone(shared, tmp_path):
    clone = pytest.importorskip("sklearn.base").clone
    NotFittedError = pytest.importorskip("sklearn.exceptions").NotFittedError
    _, X, y = _a9a(shared, tmp_path, 300)
    one = DSGClassifier(gamma=0.05, n_jobs=1).fit(X, y)
    two = clone(one).set_params(n_jobs=2).fit(X, y)
    assert np.array_equal(one.coef_, two.coef_)
    np.testing.assert_array_equal(one.decision_function(X), two.decision_function(X))
    c = clone(one)
    assert c.get_params() == one.get_params() and not hasattr(c, "model_")
    with pytest.raises(NotFittedError):
        c.predict(X)


def test_grid_search_two_jobs(shared):
    GridSearchCV = pytest.importorskip("sklearn.model_selection").GridSearchCV
    X, y = _housing(shared, 200)
    grid = GridSearchCV(DSGRegressor(step=0.5, max_iter=2, n_jobs=1),
                        {"gamma": [0.1, "median"]}, cv=2, n_jobs=2)
    grid.fit(X, y)
    assert len(grid.cv_results_["params"]) == 2
    best = DSGRegressor(step=0.5, max_iter=2, n_jobs=1, **grid.best_params_).fit(X, y)
    np.testing.assert_array_equal(grid.best_estimator_.predict(X), best.predict(X))


# --------------------------------------------------------------------------
# bad parameters: one ValueError naming the parameter
# --------------------------------------------------------------------------

@pytest.mark.parametrize("params, needle", [
    ({"loss": "squared"}, "loss must be one of"),
    ({"loss": "nope"}, "loss must be one of"),
    ({"batch_size": 0}, "batch_size"),
    ({"feature_block": 0}, "feature_block"),
    ({"step": 0}, "step: must be > 0"),
    ({"step": -1.0}, "step: must be > 0"),
    ({"t0": -1.0}, "t0: must be >= 0"),
    ({"gamma": 0.0}, "gamma must be 'median' or a float > 0"),
    ({"gamma": "scale"}, "gamma must be 'median'"),
    ({"kernel": "poly"}, "kernel must be 'rbf' or 'laplacian'"),
    ({"alpha": -1.0}, "alpha must be None or a finite number >= 0"),
    ({"C": 0.0}, "C must be a finite number > 0"),
    ({"max_iter": 0}, "max_iter"),
    ({"n_jobs": 0}, "n_jobs"),
    ({"random_state": -1}, "random_state"),
    ({"alpha": 10.0, "step": 1.0, "t0": 0.0}, "shrink the model"),
    ({"ridge": 0.0}, "ridge: must be > 0"),
    ({"step_rule": "newton"}, "step_rule: unknown"),
])
def test_bad_parameters(shared, tmp_path, params, needle):
    _, X, y = _a9a(shared, tmp_path, 50)
    with pytest.raises(ValueError, match=needle.replace("(", r"\(")):
        DSGClassifier(**params).fit(X, y)
    # partial_fit validates the same way
    with pytest.raises(ValueError, match=needle.replace("(", r"\(")):
        DSGClassifier(**params).partial_fit(X, y, classes=[-1, 1])


@pytest.mark.parametrize("params, needle", [
    ({"tau": 2.0}, "tau: must be <= 1"),
    ({"tau": 0.0}, "tau: must be > 0"),
    ({"delta": 0.0}, "delta: must be > 0"),
    ({"epsilon": -1.0}, "epsilon must be a finite number >= 0"),
    ({"loss": "hinge"}, "loss must be one of"),
])
def test_bad_regressor_parameters(params, needle):
    X = np.arange(20.0).reshape(10, 2)
    with pytest.raises(ValueError, match=needle):
        DSGRegressor(**params).fit(X, X[:, 0])


@pytest.mark.parametrize("solver,options", [
    ("udsg", {"old_blocks": 2}), ("cdsg", {"max-step-ratio": 3}), ("cdsg", None)])
def test_solver_variants_equal_train(solver, options):
    import kernsolve
    y, X = kernsolve.read_problem(kernsolve.dataset_path("heart_scale"))
    est = DSGClassifier(solver=solver, solver_options=options, gamma=0.1, step=10, t0=10,
                        max_iter=2, n_jobs=1).fit(X, y)
    extra = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in (options or {}).items())
    model = kernsolve.train(y, X, f"-q --solver {solver} -g 0.1 --step 10 --t0 10 "
                            f"--epochs 2 {extra}")
    assert np.array_equal(est.model_.coef, model.coef)
    assert np.array_equal(est.decision_function(X).ravel(), model.decision_function(X).ravel())


@pytest.mark.parametrize("kwargs,match", [
    ({"solver": "smo"}, "solver must be"),
    ({"solver": "dsg", "solver_options": {"old_blocks": 1}}, "not an option of solver 'dsg'"),
    ({"solver": "udsg", "solver_options": {"max_step_ratio": 2}}, "not an option"),
    ({"solver": "udsg", "solver_options": [1]}, "must be None or a dict"),
    ({"solver": "udsg", "solver_options": {"new_blocks": 0}}, "new-blocks"),
])
def test_solver_variant_errors(kwargs, match):
    X = np.random.default_rng(0).normal(size=(20, 3))
    y = np.arange(20) % 2
    with pytest.raises(ValueError, match=match):
        DSGClassifier(**kwargs).fit(X, y)


@pytest.mark.parametrize("Estimator, y_kind", [("DSGClassifier", "labels"),
                                               ("DSGRegressor", "values")])
def test_set_params_between_partial_fits_is_not_silently_ignored(Estimator, y_kind):
    # The red team: set_params between partial_fit calls was ignored while
    # get_params reported the new value.  A parameter that changes the model
    # is refused by name; the ones that do not (threads, cache, fit's passes)
    # may change, and the model is then the same bits as without the change.
    import kernsolve
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 5))
    y = np.sign(X[:, 0]) if y_kind == "labels" else X[:, 0] + 0.1 * X[:, 1]
    kw = {"classes": [-1.0, 1.0]} if y_kind == "labels" else {}
    make = getattr(kernsolve, Estimator)
    est = make(gamma=0.5, alpha=1e-3, random_state=0).partial_fit(X[:200], y[:200], **kw)
    est.set_params(gamma=2.0)
    with pytest.raises(ValueError, match=rf"{Estimator}.partial_fit: gamma changed from 0.5 "
                                         r"to 2.0 since training began; .*call fit"):
        est.partial_fit(X[200:], y[200:])
    est.set_params(gamma=0.5, n_jobs=1, cache_size=10, max_iter=7)
    est.partial_fit(X[200:], y[200:])
    ref = make(gamma=0.5, alpha=1e-3, random_state=0).partial_fit(X[:200], y[:200], **kw)
    ref.partial_fit(X[200:], y[200:])
    np.testing.assert_array_equal(est.predict(X), ref.predict(X))
    # fit starts again with the parameters of the moment
    est.set_params(gamma=2.0).fit(X, y)
    est.partial_fit(X[:100], y[:100])
