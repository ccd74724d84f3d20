"""Dense rows in the kernel engine: the position-ordered copy of dense X (from
the -m budget, like sparse X's) and the dense RBF block (_sqdist.h, two rows
at a time with AVX2) change the speed, never a value.

Oracles: numpy's RBF kernel computed in float64 (the cached float32 values
within their rounding), the same rows given as CSR (another code path: the
norm expansion over the nonzeros, which rounds to the same float32 on these
data), the scalar path of the vector code (the reference the AVX2 path must
match bit for bit), an engine without the copy (cache_mb 0), and the
budget's arithmetic (8 bytes a value and 8 a row, at most a quarter of -m).
"""
import io

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

import kernsolve
from kernsolve._core import _kernel
from kernsolve._core._kernel import KernelRows, ordered_copy

MB = 2 ** 20
RBF = 2


def numpy_rbf(A, B, gamma):
    """exp(-gamma ||a - b||^2) in float64, from direct differences."""
    d2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(axis=2)
    return np.exp(-gamma * d2)


def random_dense(n, d, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < 0.4] = 0.0        # zeros, as pixel data has
    return X


def fashion(shared, n_rows):
    X, y = load_svmlight_file(io.BytesIO(shared.lines("fashion-mnist.scale", n_rows)),
                              n_features=784)
    return X.tocsr(), y


@pytest.mark.parametrize("path", ["scalar", "avx2"])
@pytest.mark.parametrize("d", [1, 7, 8, 13, 64, 101])
def test_dense_rows_are_numpys_kernel_and_the_same_bits_on_every_path(vector_path, path, d):
    """Picked rows (the copy made at once), then swaps (its rows swapped in
    place): every row is numpy's kernel at the positions' data rows within
    float32 rounding, and the same bits on the scalar and the AVX2 path and
    without the copy.  Odd block sizes and widths reach the AVX2 path's odd
    row out and its tail past the last multiple of 8."""
    if not vector_path(path):
        pytest.skip(f"this CPU has no {path} path")
    X = random_dense(300, d, seed=d)
    rows = np.arange(1, 300, 2)[::-1]            # interleaved, reversed
    gamma = 0.3 / d
    kr = KernelRows(X, RBF, 3, gamma, 0.0, 1.0, 1, rows)
    previous = ordered_copy(False)
    try:
        plain = KernelRows(X, RBF, 3, gamma, 0.0, 0.0, 1, rows)   # no copy: through perm
    finally:
        ordered_copy(previous)
    n = rows.size
    assert kr.copy_bytes == 8 * n * d + 8 * n and plain.copy_bytes == 0
    rng = np.random.default_rng(d)
    for step in range(6):
        for _ in range(20):
            p, q = (int(v) for v in rng.integers(n, size=2))
            kr.py_swap(p, q)
            plain.py_swap(p, q)
        p = int(rng.integers(n))
        got = kr.row(p)
        data_rows = kr.permutation            # the data row at each position
        exact = numpy_rbf(X[data_rows[p]][None, :], X[data_rows], gamma)[0]
        np.testing.assert_allclose(got, exact, rtol=2 ** -23, atol=1e-30)
        assert got.tobytes() == plain.row(p).tobytes()


def test_avx2_pairs_of_rows_give_the_scalar_bits(vector_path):
    """Blocks of every length 1 .. 2 * VALUE_BLOCK + 1 (the AVX2 path pairs a
    block's halves) against the scalar path, on rows whose distances vary by
    orders of magnitude."""
    if not vector_path("avx2"):
        pytest.skip("this CPU has no AVX2")
    rng = np.random.default_rng(5)
    X = rng.standard_normal((260, 37)) * np.exp(rng.uniform(-6, 2, size=(260, 1)))
    out = {}
    for path in ("avx2", "scalar"):
        vector_path(path)
        kr = KernelRows(X, RBF, 3, 0.05, 0.0, 0.0, 1)
        out[path] = [kr.row(p, length).tobytes() for p, length in
                     [(0, 1), (1, 2), (2, 3), (3, 129), (4, 130), (5, 257), (6, 260)]]
    assert out["avx2"] == out["scalar"]


def test_the_dense_copy_comes_out_of_the_budget(monkeypatch):
    """The copy takes 8 bytes a value and 8 a row from -m, the rows' budget
    is the rest; above a quarter of -m the copy takes that quarter from -m
    and the rest beyond it, unless the rest is more than half of what
    kernsolve allows itself (_memory.memory_limit)."""
    X = random_dense(400, 50, seed=1)
    rows = np.arange(0, 400, 3)
    n = rows.size
    copy = 8 * n * 50 + 8 * n
    kr = KernelRows(X, RBF, 3, 0.1, 0.0, 1.0, 2, rows)
    assert kr.copy_bytes == copy
    assert kr.budget_bytes == (MB - copy) // 4 * 4
    tight = KernelRows(X, RBF, 3, 0.1, 0.0, 3.9 * copy / MB, 2, rows)
    assert tight.copy_bytes == copy             # over a quarter of -m: made all the
    quarter = int(0.25 * 3.9 * copy)            # same, a quarter of -m from the budget
    assert tight.copy_in_budget_bytes == quarter
    assert tight.budget_bytes == int((3.9 * copy - quarter) / 4) * 4
    previous = ordered_copy(False)
    try:
        plain = KernelRows(X, RBF, 3, 0.1, 0.0, 1.0, 2, rows)
    finally:
        ordered_copy(previous)
    assert plain.copy_bytes == 0 and plain.budget_bytes == MB
    beyond = copy - quarter
    monkeypatch.setattr(_kernel, "memory_limit", lambda: 2 * beyond)
    assert KernelRows(X, RBF, 3, 0.1, 0.0, 3.9 * copy / MB, 2, rows).copy_bytes == copy
    monkeypatch.setattr(_kernel, "memory_limit", lambda: 2 * beyond - 2)
    refused = KernelRows(X, RBF, 3, 0.1, 0.0, 3.9 * copy / MB, 2, rows)
    assert refused.copy_bytes == 0 and refused.budget_bytes == int(3.9 * copy) // 4 * 4
    whole = KernelRows(X, RBF, 3, 0.1, 0.0, 1.0, 2)     # all rows, in order:
    assert whole.copy_bytes == 8 * 400 * 50 + 8 * 400  # counted from the start
    whole.py_swap(0, 399)
    assert whole.row(0).tobytes() == KernelRows(X, RBF, 3, 0.1, 0.0, 0.0, 1).row(399)[
        np.r_[399, 1:399, 0]].tobytes()


def check_same_model(a, b):
    assert np.asarray(a.dual_coef).tobytes() == np.asarray(b.dual_coef).tobytes()
    assert np.asarray(a.rho).tobytes() == np.asarray(b.rho).tobytes()
    assert np.array_equal(a.support_indices, b.support_indices)


def test_fashion_dense_and_sparse_rows_train_the_same_model(shared):
    """One-vs-one on 1500 Fashion-MNIST rows (45 pairs, each with its rows
    copied in position order, then shrinking's swaps): the dense array and
    the CSR rows give the same model, and each pair's copy is 8 bytes a
    value and 8 a row out of -m.  (The two forms compute RBF's distance
    differently, direct differences against the norm expansion, and agree
    after the rounding to float32 here; on 20,000 rows a few values round
    apart and the coefficients differ in their last bits, as before the
    copy.)"""
    X, y = fashion(shared, 1500)
    opts = "-c 10 -g 0.02 -m 40 -q"
    sparse = kernsolve.train(y, X, opts, n_jobs=2)
    dense = kernsolve.train(y, X.toarray(), opts, n_jobs=2)
    check_same_model(sparse, dense)
    assert all(p["copy_bytes"] > 0 for p in dense.stats["pairs"])
    for part in dense.stats["pairs"]:
        l = int(np.isin(y, part["labels"]).sum())
        assert part["copy_bytes"] == 8 * 784 * l + 8 * l
        assert part["cache_budget_bytes"] == (40 * MB - part["copy_bytes"]) // 4 * 4


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_random_dense_rows_train_the_model_of_their_csr_form(dtype):
    """Two classes and three, float64 and float32 input (scikit-learn users
    pass float32: converted once, then the same rows): the dense array and
    its CSR form give the same model, with a copy made for the dense one."""
    rng = np.random.default_rng(7)
    X = random_dense(600, 24, seed=3).astype(dtype)
    y = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.3 * rng.standard_normal(600) > 0.4, 1.0, -1.0)
    y3 = y + (X[:, 2] > 0.8)
    for labels in (y, y3):
        opts = "-c 4 -g 0.05 -m 8 -q"
        dense = kernsolve.train(labels, X, opts)
        sparse = kernsolve.train(labels, sp.csr_matrix(X.astype(np.float64)), opts)
        check_same_model(dense, sparse)
        assert all(p["copy_bytes"] > 0 for p in dense.stats["pairs"])
