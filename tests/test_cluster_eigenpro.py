"""EigenPro/FALKON on centres over a Dask collection (``kernsolve._cluster_centres``,
``solvers/eigenpro/_partitioned.py``) on a ``distributed.LocalCluster`` of two
worker processes.

Oracles: ``kernsolve.train`` and the estimators' ``fit`` in one process on the
concatenated rows (alpha, centres, model file bytes: bit for bit); the sizes
of everything ``distributed.Client.gather`` brings to the client (never the
rows); ``kernsolve-train`` without ``--scheduler`` (the same model file).

The row blocks are made small (``nystrom.BLOCK_VALUES``, in this process and
in the workers) so that small data has many blocks and the partitions' grid
alignment is exercised; the one-process oracle uses the same blocks.
"""
import os

import numpy as np
import pytest
import scipy.sparse as sp

import kernsolve
from kernsolve import EigenProClassifier, EigenProRegressor
from kernsolve._cluster_centres import dask_train_centres
from kernsolve._params import parse_options
from kernsolve.cli import train as train_cli
from kernsolve.solvers.eigenpro import _partitioned, nystrom
from conftest import small_blocks_cluster

SMALL_BLOCKS = 2 ** 13          # 128 rows a block at p = 64
P = 64


def test_without_a_distributed_client_the_error_says_so():
    # (first in the file: before the module's client exists)
    da = pytest.importorskip("dask.array")
    y, X = _data(n=100)
    with pytest.raises(ValueError, match="dask.distributed"):
        EigenProClassifier(centers=8, gamma=0.5).fit(da.from_array(X, chunks=(50, -1)),
                                                     da.from_array(y, chunks=50))


def test_partitions_move_to_the_blocks_grid(monkeypatch):
    # blocks of 128 rows: the boundaries 300, 301, 301, 551 move down to 256,
    # 256, 256, 512 (at most a block's rows move); the empty partitions go
    monkeypatch.setattr(nystrom, "BLOCK_VALUES", SMALL_BLOCKS)
    assert nystrom.block_rows(P) == 128
    assert _partitioned.grid_boundaries(list(CHUNKS), P) == [0, 256, 512, 1000]
    assert _partitioned.grid_boundaries([100, 20, 8], P) == [0, 128]
    assert _partitioned.grid_boundaries([640], P) == [0, 640]


@pytest.fixture(scope="module")
def client():
    with small_blocks_cluster(SMALL_BLOCKS) as c:
        yield c


@pytest.fixture
def gathered(monkeypatch):
    """The size of each object that any client gathers (dask's own sizeof)."""
    import distributed
    from dask.sizeof import sizeof
    sizes = []
    real = distributed.Client.gather

    def gather(self, futures, *args, **kwargs):
        out = real(self, futures, *args, **kwargs)
        sizes.append(sizeof(out))
        return out

    monkeypatch.setattr(distributed.Client, "gather", gather)
    return sizes


def _data(n=1000, d=24, seed=0, density=1.0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    y = (X[:, 0] + X[:, 1] > 1).astype(np.float64) * 2 - 1 + (X[:, 2] > 0.8) * 5
    if density < 1:
        X[rng.random((n, d)) > density] = 0.0
    return y, X


# uneven partitions: a row alone, an empty one, boundaries off the blocks' grid
CHUNKS = (300, 1, 0, 250, 449)


def _dask_pair(X, y, sparse):
    import dask.array as da
    Xs = sp.csr_matrix(X) if sparse else X
    return (da.from_array(Xs, chunks=(CHUNKS, -1), asarray=not sparse),
            da.from_array(y, chunks=(CHUNKS,)))


def _model_bytes(model, path):
    kernsolve.save_model(str(path), model)
    return open(path, "rb").read()


CASES = [
    # options, sparse, density, regression
    ("-g 0.5 --epochs 4", False, 1.0, False),
    ("-g 0.5 --epochs 4 --precision half --subsample 40", False, 1.0, False),
    ("-g 0.5 --epochs 4 --precision single", True, 0.9, True),      # sparse, made dense
    ("-g 0.5 --epochs 4 --subsample 40", True, 0.1, False),         # sparse, repeated rows
    ("-t 1 -d 2 -g 0.1 -r 1 --epochs 3 --precision single", False, 1.0, True),
    ("-t 5 -g 0.2 --epochs 3 --precision half", True, 0.3, False),    # laplacian
]


@pytest.mark.parametrize("options, sparse, density, regression", CASES)
def test_model_equals_one_process_bit_for_bit(client, gathered, tmp_path, options, sparse,
                                              density, regression):
    y, X = _data(density=density)
    if regression:
        y = X @ np.linspace(-1, 1, X.shape[1])
        options += " -s 3"
    options = f"-q --solver eigenpro --centers {P} " + options
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # a low precision's refit, if any: on both sides
        want = kernsolve.train(y, sp.csr_matrix(X) if sparse else X, options)
        got = dask_train_centres(_dask_pair(X, y, sparse), parse_options(options.split()))
    coef = "dual_coef" if regression else "coef"
    assert np.array_equal(getattr(got, coef), getattr(want, coef))
    assert got.stats["precision"] == want.stats["precision"]
    # repeated rows among the centres are replaced alike (the sparsest data has them)
    assert got.stats["replaced_centres"] == want.stats["replaced_centres"]
    assert (want.stats["replaced_centres"] > 0) == (density < 0.2)
    assert got.stats["partitions"] == 3          # (0..256, 256..512, 512..1000)
    assert _model_bytes(got, tmp_path / "a") == _model_bytes(want, tmp_path / "b")
    # the client never received the rows: at most the centres (a CSR value
    # takes 12 bytes) or a p x c sum
    rows_bytes = X.size * 8
    assert max(gathered) <= P * X.shape[1] * 12 + 4096 < rows_bytes / 4


def test_estimator_on_dask_arrays(client):
    y, X = _data(seed=1)
    Xd, yd = _dask_pair(X, y, False)
    one = EigenProClassifier(centers=P, gamma=0.5, epochs=4, subsample=40).fit(X, y)
    many = EigenProClassifier(centers=P, gamma=0.5, epochs=4, subsample=40).fit(Xd, yd)
    assert np.array_equal(many.dual_coef_, one.dual_coef_)
    assert np.array_equal(many.classes_, one.classes_)
    assert np.array_equal(many.centres_, one.centres_)
    assert np.array_equal(many.centre_indices_, one.centre_indices_)
    assert np.array_equal(many.decision_function(X), one.decision_function(X))


def test_estimator_on_a_dask_dataframe(client):
    # a regressor on a dask.dataframe: the columns' names kept
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    y, X = _data(seed=1)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    target = X @ np.linspace(-1, 1, X.shape[1])
    ddf = dd.from_pandas(frame, npartitions=3)
    ys = dd.from_pandas(pd.Series(target), npartitions=3)
    one = EigenProRegressor(centers=P, gamma="auto", epochs=3).fit(frame, target)
    many = EigenProRegressor(centers=P, gamma="auto", epochs=3).fit(ddf, ys)
    assert np.array_equal(many.dual_coef_, one.dual_coef_)
    assert list(many.feature_names_in_) == list(one.feature_names_in_)
    assert np.array_equal(many.predict(frame), one.predict(frame))


def test_cli_scheduler_writes_the_one_process_model_file(client, tmp_path, capsys):
    y, X = _data(seed=2, density=0.5)
    data = str(tmp_path / "train.svm")
    kernsolve.write_problem(data, y, sp.csr_matrix(X))
    common = ["-q", "--solver", "eigenpro", "--centers", str(P), "--epochs", "3",
              "--precision", "half", "-g", "0.3"]
    assert train_cli.cli(common + [data, str(tmp_path / "one.model")]) == 0
    address = client.scheduler.address
    assert train_cli.cli(common + ["--scheduler", address, data,
                                   str(tmp_path / "many.model")]) == 0
    one = open(tmp_path / "one.model", "rb").read()
    assert open(tmp_path / "many.model", "rb").read() == one
    # not quiet: the summary line of one process on stdout, progress on stderr
    capsys.readouterr()
    assert train_cli.cli(common[1:] + ["--scheduler", address, data,
                                       str(tmp_path / "loud.model")]) == 0
    out = capsys.readouterr().out
    assert f"centres p = {P}" in out
    assert open(tmp_path / "loud.model", "rb").read() == one


def test_bad_cases_say_what_to_change(client, tmp_path, capsys):
    y, X = _data(n=300)
    import dask.array as da
    Xd, yd = da.from_array(X, chunks=(100, -1)), da.from_array(y, chunks=100)
    with pytest.raises(ValueError, match="give centers=p"):
        EigenProClassifier(gamma=0.5).fit(Xd, yd)
    with pytest.raises(ValueError, match="gamma='scale'"):
        EigenProClassifier(centers=P).fit(Xd, yd)
    with pytest.raises(ValueError, match="give --centers p"):
        dask_train_centres((Xd, yd), parse_options("--solver eigenpro".split()))
    with pytest.raises(ValueError, match="-g median"):
        dask_train_centres((Xd, yd), parse_options(
            f"--solver eigenpro --centers {P} -g median".split()))
    with pytest.raises(ValueError, match="y .* is required"):
        dask_train_centres((Xd, None), parse_options(f"--solver eigenpro --centers {P}".split()))
    data = str(tmp_path / "t.svm")
    kernsolve.write_problem(data, y, X)
    assert train_cli.cli(["--solver", "eigenpro", "--centers", "8", "-v", "3",
                          "--scheduler", client.scheduler.address, data]) != 0
    assert "--scheduler" in capsys.readouterr().err
