"""DSG from partitions in parallel (issue 34 item 4): ``kernsolve.dask_parallel_fit``.

The oracle of the model is an independent transcription in one process: a
copy of the estimator trained with plain ``partial_fit`` on each group of
partitions, the copies' coefficients and intercepts averaged with numpy (the
blocks a shorter copy lacks counted as zeros), and the predictions of a DSG
model made of those arrays.  The cluster is a ``LocalCluster`` of two worker
processes (the estimators really are pickled between them); the threaded
scheduler and a partitioned LIBSVM file give the same bits.
"""
import copy
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import kernsolve
from conftest import shared_lines
# the LocalCluster of two worker processes, the dask imports and the data of the
# other cluster tests
from test_cluster import _dask, _data, client  # noqa: F401 (client: a fixture)


Y, X = _data(240, 1)
YT, XT = _data(100, 2)
CHUNKS = (50, 61, 40, 89)          # unequal: the models end with other block counts


def _make(cls, solver, **kw):
    # gamma, alpha and the batch given: the start does not depend on the
    # first chunk, so every copy of the transcription starts where the cluster's do
    return getattr(kernsolve, cls)(solver=solver, random_state=5, gamma=0.5, alpha=1e-3,
                                   batch_size=16, feature_block=8, n_jobs=1, **kw)


def _chunks(X, y, sizes=CHUNKS):
    bounds = np.cumsum((0,) + tuple(sizes))
    return [(X[a:b], y[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]


def _groups(n_parts, n_models):
    return [list(g) for g in np.array_split(np.arange(n_parts), n_models)]


def _average(ends):
    """The numpy average of the models' coefficients and intercepts, added in
    the models' order, shorter ones padded with zero blocks."""
    n_blocks = max(e.coef_.shape[0] for e in ends)
    coef = np.zeros((n_blocks,) + ends[0].coef_.shape[1:])
    intercept = np.zeros(ends[0].intercept_.shape)
    for e in ends:
        coef[:e.coef_.shape[0]] += e.coef_
        intercept += e.intercept_
    return coef / len(ends), intercept / len(ends)


def _transcription(start, parts, n_models):
    """One round by hand: a copy of ``start`` per group, plain partial_fit on
    its partitions in order; the average of the copies as numpy arrays."""
    ends = []
    for group in _groups(len(parts), n_models):
        end = copy.deepcopy(start)
        for i in group:
            Xp, yp = parts[i]
            kw = {"classes": np.unique(Y)} if isinstance(end, kernsolve.DSGClassifier) else {}
            end.partial_fit(Xp, yp, **kw)
        ends.append(end)
    return ends, _average(ends)


def _model_of(arrays, like):
    """A DSG model of the averaged arrays (the transcription's predictions)."""
    model = copy.copy(like.model_)
    model.coef, model.intercept = np.ascontiguousarray(arrays[0]), arrays[1]
    return model


def _dask_xy(da, sparse=False):
    Xd = da.from_array(sp.csr_matrix(X) if sparse else X, chunks=(CHUNKS, -1),
                       asarray=not sparse, name=False)
    return Xd, da.from_array(Y, chunks=100)


ESTIMATORS = [("DSGClassifier", "dsg", {}), ("DSGClassifier", "udsg", {}),
              ("DSGClassifier", "cdsg", {}), ("DSGClassifier", "cdsg", {"average": True}),
              ("DSGRegressor", "dsg", {}), ("DSGRegressor", "cdsg", {})]


@pytest.mark.parametrize("cls, solver, kw", ESTIMATORS)
@pytest.mark.parametrize("n_models", [None, 2])
def test_the_model_is_the_average_of_partial_fits_in_one_process(client, cls, solver, kw,
                                                                 n_models):
    dask, da = _dask()
    parts = _chunks(X, Y)
    ends, arrays = _transcription(_make(cls, solver, **kw), parts, n_models or len(parts))
    original = _make(cls, solver, **kw)
    with client.as_current():
        fitted = kernsolve.dask_parallel_fit(original, *_dask_xy(da, sparse=True),
                                             n_models=n_models)
    assert not hasattr(original, "coef_")       # the estimator given is kept
    assert np.array_equal(fitted.coef_, arrays[0]) and np.array_equal(fitted.intercept_,
                                                                      arrays[1])
    # the copies' new blocks are the same features: as many as the longest copy's
    assert fitted.coef_.shape[0] == max(e.coef_.shape[0] for e in ends)
    assert fitted.t_ == max(e.t_ for e in ends)
    assert np.array_equal(fitted.model_.decision_function(XT),
                          _model_of(arrays, ends[0]).decision_function(XT))
    # and the averaged function is the mean of the copies' functions
    mean = sum(e.model_.decision_function(XT) for e in ends) / len(ends)
    np.testing.assert_allclose(fitted.model_.decision_function(XT), mean, rtol=0, atol=1e-12)


@pytest.mark.parametrize("kw", [{}, {"average": True}])
def test_a_second_round_continues_from_the_average(client, kw):
    dask, da = _dask()
    parts = _chunks(X, Y)
    with client.as_current():
        one = kernsolve.dask_parallel_fit(_make("DSGClassifier", "cdsg", **kw),
                                          *_dask_xy(da), n_models=2)
        two = kernsolve.dask_parallel_fit(_make("DSGClassifier", "cdsg", **kw),
                                          *_dask_xy(da), n_models=2, rounds=2)
    # round 2 by hand: copies of round 1's average, each on its group again
    ends, arrays = _transcription(one, parts, 2)
    assert np.array_equal(two.coef_, arrays[0]) and np.array_equal(two.intercept_, arrays[1])
    assert two.t_ == max(e.t_ for e in ends) > one.t_
    assert two.n_iter_ == 4         # partial_fit calls of the longest chain: 2 a round


def test_without_a_client_and_from_a_file_the_same_bits(client, tmp_path):
    dask, da = _dask()
    path = str(tmp_path / "train.svm")
    kernsolve.write_problem(path, Y, X)
    parts = kernsolve.read_partitions(path, npartitions=3, n_features=X.shape[1])
    windows = []
    for off, length in parts.ranges:
        yw, Xw = kernsolve.read_problem(path, n_features=X.shape[1], zero_based=False,
                                        offset=off, length=length)
        windows.append((Xw, yw))
    ends, arrays = _transcription(_make("DSGClassifier", "udsg"), windows, 3)
    with client.as_current():
        on_cluster = kernsolve.dask_parallel_fit(_make("DSGClassifier", "udsg"), parts)
    with dask.config.set(scheduler="threads"):
        threaded = kernsolve.dask_parallel_fit(_make("DSGClassifier", "udsg"), parts)
    for fitted in (on_cluster, threaded):
        assert np.array_equal(fitted.coef_, arrays[0])
        assert np.array_equal(fitted.intercept_, arrays[1])


def test_one_model_is_the_sequential_chain(client):
    dask, da = _dask()
    make = lambda: kernsolve.DSGClassifier(solver="cdsg", random_state=1, gamma=0.5,
                                           alpha=1e-3, n_jobs=1)
    with client.as_current():
        seq = kernsolve.dask_partial_fit(make(), *_dask_xy(da))
        one = kernsolve.dask_parallel_fit(make(), *_dask_xy(da), n_models=1)
        # one partition, one round: the sequential path too
        Xd1, yd1 = da.from_array(X, chunks=(240, -1)), da.from_array(Y, chunks=240)
        seq1 = kernsolve.dask_partial_fit(make(), Xd1, yd1)
        par1 = kernsolve.dask_parallel_fit(make(), Xd1, yd1)
        # and rounds of one model are passes of the chain
        again = kernsolve.dask_parallel_fit(make(), Xd1, yd1, rounds=2)
    assert np.array_equal(one.coef_, seq.coef_) and np.array_equal(one.intercept_,
                                                                   seq.intercept_)
    assert np.array_equal(par1.coef_, seq1.coef_)
    seq1.partial_fit(X, Y)
    assert np.array_equal(again.coef_, seq1.coef_)


def test_the_settings_partial_fit_takes_from_its_first_chunk_come_from_the_first_partition():
    dask, da = _dask()
    with dask.config.set(scheduler="threads"), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)    # lambda from the first chunk's rows
        fitted = kernsolve.dask_parallel_fit(
            kernsolve.DSGClassifier(random_state=4, gamma="median", C=2.0, n_jobs=1),
            *_dask_xy(da))
    # gamma='median' of the first partition's rows (kernsolve.median_gamma),
    # lambda = 1 / (C n) of its 50 rows, for every model
    assert fitted.gamma_ == kernsolve.median_gamma(X[:50], seed=4)
    assert fitted.lambda_ == 1 / (2.0 * 50)


def test_a_partition_without_rows():
    dask, da = _dask()
    sizes = (60, 0, 90, 90)
    Xd = da.from_array(X, chunks=(sizes, -1))
    yd = da.from_array(Y, chunks=(sizes,))
    with dask.config.set(scheduler="threads"):
        fitted = kernsolve.dask_parallel_fit(_make("DSGClassifier", "dsg"), Xd, yd)
        # the empty model is left out of the average (it did not train)
        ends, arrays = _transcription(_make("DSGClassifier", "dsg"),
                                      [p for p in _chunks(X, Y, sizes) if p[0].shape[0]], 3)
        assert np.array_equal(fitted.coef_, arrays[0])
        with pytest.raises(ValueError, match="^the first partition has no rows"):
            kernsolve.dask_parallel_fit(_make("DSGClassifier", "dsg"),
                                        da.from_array(X, chunks=((0, 240), -1)),
                                        da.from_array(Y, chunks=((0, 240),)))


def test_bad_arguments_get_one_line_errors(tmp_path):
    dask, da = _dask()
    Xd, yd = _dask_xy(da)
    est = _make("DSGClassifier", "dsg")
    cases = [({"rounds": 0}, "rounds must be an integer >= 1, got 0"),
             ({"rounds": 1.5}, "rounds must be an integer >= 1, got 1.5"),
             ({"rounds": True}, "rounds must be an integer >= 1, got True"),
             ({"n_models": 0}, "n_models must be an integer from 1 to 4, got 0"),
             ({"n_models": 5}, "n_models must be an integer from 1 to 4, got 5")]
    for kw, message in cases:
        with pytest.raises(ValueError) as info:
            kernsolve.dask_parallel_fit(est, Xd, yd, **kw)
        assert str(info.value) == message and "\n" not in message
    linear_model = pytest.importorskip("sklearn.linear_model")
    with pytest.raises(ValueError, match="^dask_parallel_fit averages DSG models .* got "
                                         "SGDClassifier; use dask_partial_fit"):
        kernsolve.dask_parallel_fit(linear_model.SGDClassifier(), Xd, yd)
    with pytest.raises(ValueError, match="^X must be a dask.array.Array or LibsvmPartitions, "
                                         "got ndarray$"):
        kernsolve.dask_parallel_fit(est, X, Y)
    path = str(tmp_path / "t.svm")
    kernsolve.write_problem(path, Y, X)
    with pytest.raises(ValueError, match="^y is read from the LIBSVM file; do not pass it$"):
        kernsolve.dask_parallel_fit(est, kernsolve.read_partitions(path, npartitions=2), yd)
    with pytest.raises(ValueError, match="^DSGRegressor.partial_fit takes no classes$"):
        kernsolve.dask_parallel_fit(_make("DSGRegressor", "dsg"), Xd, yd, classes=[0, 1])


def _a9a(tmp_path, name, rows):
    path = str(tmp_path / name)
    with open(path, "wb") as f:
        f.write(shared_lines(name, rows))
    return path


@pytest.mark.parametrize("solver", ["dsg", "cdsg"])
def test_test_error_on_adult_is_close_to_the_sequential_models(tmp_path, solver):
    """8000 rows of a9a in 2 partitions (2 models), the first 4000 test rows:
    one round within 1.5 points of the sequential chain's test error, two
    rounds (each partition seen twice) within 1 point."""
    dask, da = _dask()
    y, X_ = kernsolve.read_problem(_a9a(tmp_path, "a9a", 8000), n_features=123)
    yt, Xt = kernsolve.read_problem(_a9a(tmp_path, "a9a.t", 4000), n_features=123)
    make = lambda: kernsolve.DSGClassifier(solver=solver, random_state=0,
                                           alpha=1 / (100 * 8000), n_jobs=1)
    Xd, yd = da.from_array(X_, chunks=(4000, -1), asarray=False), da.from_array(y, chunks=4000)
    with dask.config.set(scheduler="threads"):
        seq = kernsolve.dask_partial_fit(make(), Xd, yd)
        one = kernsolve.dask_parallel_fit(make(), Xd, yd)
        two = kernsolve.dask_parallel_fit(make(), Xd, yd, rounds=2)
    error = lambda m: 100 * (1 - m.score(Xt, yt))
    assert error(seq) < 17.5                    # (a model that learned: 24% is the majority)
    assert abs(error(one) - error(seq)) <= 1.5, (error(one), error(seq))
    assert abs(error(two) - error(seq)) <= 1.0, (error(two), error(seq))
    assert 2 * one.t_ == seq.t_ == two.t_        # iterations: each model saw half the rows
