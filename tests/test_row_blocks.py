"""Loops that go through a big sparse matrix a block of rows at a time take
their blocks by ``kernsolve._sparse.row_block`` / ``select_rows``, never by
scipy's own slicing: on kernsolve's canonical CSR (int64 row pointers, int32
column indices) scipy's ``X[a:b]`` first converts both *whole* index arrays
to one type, a copy of the whole matrix's indices for every block
(benchmarks/CURRENT.md, more-rows-1200k-sparse).

Oracles: numpy's indexing of the dense rows for the selections;
the same computation on dense numpy rows (or numpy's exact RBF kernel) for
the block loops, run with scipy's row selection made to fail."""
import io

import numpy as np
import pytest

sp = pytest.importorskip("scipy.sparse")

import kernsolve
from kernsolve import _kernels, _predict
from kernsolve._kernels import as_canonical, kernel_matrix
from kernsolve._sparse import Csr, row_block, select_rows
from kernsolve.cli import scale
from kernsolve.solvers.eigenpro import model as eigenpro_model


def _canonical(n=60, d=7, density=0.5, seed=0):
    X = as_canonical(sp.random(n, d, density=density, format="csr", random_state=seed))
    assert X.indptr.dtype == np.int64 and X.indices.dtype == np.int32
    return X


def refuse_scipy_row_selection(monkeypatch):
    """From now on in the test, scipy's row selection of a CSR matrix raises."""
    def refuse(self, key):
        raise AssertionError(f"scipy's own row selection X[{key!r}] was used")
    monkeypatch.setattr(sp.csr_matrix, "__getitem__", refuse)


@pytest.mark.parametrize("key", [
    np.array([5, 0, 59, 5, -1, -60]), np.array([], dtype=np.int64), np.int64(3), 7,
    np.arange(60) % 3 == 0, np.array([2, 1], dtype=np.uint32), slice(0, 9, 2),
    slice(None, None, -3), slice(50, 5, -7)])
def test_select_rows_equals_numpys_selection(key):
    X = _canonical()
    got = select_rows(X, key)
    assert isinstance(got, Csr)
    # numpy's selection of the dense rows is the oracle (scipy's own fails
    # on a stepped slice of this canonical form: mixed index types)
    want = X.toarray()[key]
    assert np.array_equal(got.toarray(), want.reshape(got.shape))


@pytest.mark.parametrize("key, message", [
    (np.array([0, 60]), "row 60 is out of range for 60 rows"),
    (np.array([-61]), "row -61 is out of range for 60 rows"),
    (np.ones(59, dtype=bool), "boolean row mask of shape (59,) for 60 rows"),
    (np.array([0.0, 1.0]), "rows must be selected by integers")])
def test_select_rows_refuses_what_numpy_refuses(key, message):
    X = _canonical()
    with pytest.raises(IndexError):
        np.arange(60)[key]          # numpy refuses it too (the oracle)
    with pytest.raises(IndexError, match=message.replace("(", r"\(").replace(")", r"\)")):
        select_rows(X, key)


@pytest.mark.parametrize("kind", ["array", "csr", "scipy"])
def test_row_block_keeps_the_kind_and_the_rows(kind):
    X = _canonical()
    M = {"array": X.toarray(), "csr": Csr(X.data, X.indices, X.indptr, X.shape),
         "scipy": X}[kind]
    for a, b in [(0, 60), (11, 29), (30, 30), (59, 60)]:
        got = row_block(M, a, b)
        assert type(got) is type(M)
        dense = got if kind == "array" else got.toarray()
        assert np.array_equal(dense, X[a:b].toarray())
    if kind == "csr":               # a slice shares the arrays
        assert np.shares_memory(row_block(M, 11, 29).data, M.data)


def _rbf(A, B, gamma):
    d = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2 * A @ B.T
    return np.exp(-gamma * np.maximum(d, 0.0))


def test_kernel_matrix_in_chunks_equals_numpy(monkeypatch):
    X, Y = _canonical(1000, 9, 0.6, 1), np.random.default_rng(2).normal(size=(5, 9))
    refuse_scipy_row_selection(monkeypatch)
    monkeypatch.setattr(_kernels, "_DENSE_CHUNK_BYTES", 1)     # a chunk per tile
    K = kernel_matrix(X, Y, "rbf", gamma=0.3, row_independent=True)
    np.testing.assert_allclose(K, _rbf(X.toarray(), Y, 0.3), rtol=0, atol=1e-12)


def test_smo_prediction_in_blocks_without_scipys_slicing(monkeypatch):
    rng = np.random.default_rng(3)
    X = _canonical(300, 10, 0.5, 4)
    y = np.where(X.toarray() @ rng.normal(size=10) > 0, 1.0, -1.0)
    model = kernsolve.train(y, X, "-c 4 -g 0.5 -q")
    want = kernsolve.predict(y, X.toarray(), model, "-q")[2]
    monkeypatch.setattr(_predict, "BLOCK_BYTES", 64)            # many blocks
    refuse_scipy_row_selection(monkeypatch)
    got = kernsolve.predict(y, X, model, "-q")[2]
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=0, atol=1e-12)


def test_eigenpro_prediction_in_blocks_without_scipys_slicing(monkeypatch):
    X = _canonical(400, 12, 0.6, 5)
    y = (X.toarray().sum(1) > np.median(X.toarray().sum(1))).astype(float)
    model = kernsolve.train(y, X, "--solver eigenpro --centers 50 --epochs 3 -g 0.4 -q")
    want = eigenpro_model.decision_values(X.toarray(), model)
    monkeypatch.setattr(eigenpro_model, "BLOCK_BYTES", 64)
    refuse_scipy_row_selection(monkeypatch)
    got = eigenpro_model.decision_values(X, model)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)


def test_scale_in_blocks_without_scipys_slicing(tmp_path, monkeypatch, capsys):
    X = _canonical(50, 6, 0.5, 6)
    buf = io.StringIO()
    for i in range(X.shape[0]):
        row = X[i]
        buf.write("1 " + " ".join(f"{j + 1}:{v:.6g}" for j, v in zip(row.indices, row.data))
                  + "\n")
    path = tmp_path / "d.txt"
    path.write_text(buf.getvalue())
    assert scale.cli([str(path)]) == 0
    whole = capsys.readouterr().out
    monkeypatch.setattr(scale, "_ROWS_PER_BLOCK", 7)
    refuse_scipy_row_selection(monkeypatch)
    assert scale.cli([str(path)]) == 0
    assert capsys.readouterr().out == whole
