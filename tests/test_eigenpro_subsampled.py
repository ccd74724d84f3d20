"""EigenPro on p centres with the subsampled preconditioner (``--subsample q``)
and float16 storage of K(X, C) (``--precision half``).

Oracles: numpy's closed-form Nystrom ridge solution
``solve(K_nM^T K_nM + n lambda K_MM, K_nM^T Y)`` on kernel matrices written
out in numpy; the preconditioner's formula ``(K~^2 / p + lambda K~)^{-1}``
with ``K~`` (Nystrom through the auxiliary rows plus the residual's diagonal
blocks) formed densely in numpy; kernsolve.kernel_matrix rounded to float16.
"""
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import kernsolve
from kernsolve.estimators.eigenpro import EigenProClassifier
from kernsolve.solvers.eigenpro import _block_ops, _subsampled, nystrom
from kernsolve.solvers.eigenpro._common import KernelBlocks
from kernsolve.solvers.eigenpro.train import fit_eigenpro


# The oracles and data makers are test_eigenpro_centers.py's (tests/ is on the path).
from test_eigenpro_centers import _classes, _one_blas_thread, _opts, _problem, _rbf  # noqa: E402,F401


def test_preconditioner_is_the_dense_formula(monkeypatch):
    monkeypatch.setattr(_subsampled, "RESIDUAL_BLOCK", 16)   # 5 blocks, a partial last one
    X, _ = _problem(n=200)
    gamma, lam, p, q = 0.7, 1e-3, 70, 25
    C, XQ = X[:p], X[p:p + q]
    kern = KernelBlocks(X, 2, gamma, 3, 0.0, 1)
    R = np.random.default_rng(1).normal(size=(p, 3))
    with ThreadPoolExecutor(2) as pool:     # it is applied on the pool too
        pre = _subsampled.SubsampledPreconditioner(kern, C, XQ, lam, pool)
        got = pre(R.copy())
    with ThreadPoolExecutor(1) as pool:
        one = _subsampled.SubsampledPreconditioner(kern, C, XQ, lam, pool)
        assert one(R.copy()).tobytes() == got.tobytes()
    blocks = pre.blocks
    assert len(blocks) == 5 and sorted(np.concatenate(blocks)) == list(range(p))
    K_MM, K_MQ, K_QQ = _rbf(C, C, gamma), _rbf(C, XQ, gamma), _rbf(XQ, XQ, gamma)
    nys = K_MQ @ np.linalg.solve(K_QQ, K_MQ.T)
    approx = nys.copy()
    for B in blocks:
        approx[np.ix_(B, B)] = K_MM[np.ix_(B, B)]       # exact on the diagonal blocks
    M = approx @ approx / p + lam * approx
    # backward error: M got = R to rounding (M's small eigenvalues make the
    # forward error depend on the jitters)
    np.testing.assert_allclose(M @ got, R, rtol=0,
                               atol=1e-9 * np.abs(M).sum(axis=1).max() * np.abs(got).max())
    ref = np.linalg.solve(M, R)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-3 * np.abs(ref).max())
    # the blocks gather the centres nearest to the same auxiliary row
    nearest = np.argmax(K_MQ, axis=1)
    assert all(np.all(np.diff(np.sort(nearest[B])) >= 0) for B in blocks)
    assert max(nearest[blocks[0]]) <= min(nearest[blocks[1]])


@pytest.mark.parametrize("p, q, lam", [(60, 30, 1e-4), (120, 80, 1e-4)])
def test_subsampled_preconditioner_converges_to_the_nystrom_solution(p, q, lam, monkeypatch):
    monkeypatch.setattr(nystrom, "BLOCK_VALUES", 37 * p)      # several row blocks
    monkeypatch.setattr(_subsampled, "RESIDUAL_BLOCK", 16)
    X, Y = _problem(n=400)
    n, gamma = X.shape[0], 0.7
    res = fit_eigenpro(X, Y, gamma=gamma, options=_opts(n, centers=p, subsample=q,
                                                        **{"lambda": lam}, epochs=200))
    assert res.stats["subsample"] == q and res.stats["row_blocks"] > 3
    S = res.centres
    K_nM, K_MM = _rbf(X, X[S], gamma), _rbf(X[S], X[S], gamma)
    ref = np.linalg.solve(K_nM.T @ K_nM + n * lam * K_MM, K_nM.T @ Y)
    np.testing.assert_allclose(K_nM @ res.alpha, K_nM @ ref, rtol=0, atol=1e-5)


def test_half_precision_blocks_are_the_kernel_rounded():
    X, _ = _problem(n=300, d=6)
    kern = KernelBlocks(X, 2, 0.4, 3, 0.0, 1)
    C = np.ascontiguousarray(X[::7])
    blocks = nystrom._RowBlocks(kern, C, 1e9, None, np.float16)
    K = blocks._block(0)
    assert K.dtype == np.float16 and blocks.single is not None
    ref = kernsolve.kernel_matrix(X[:K.shape[0]], C, kernel="rbf", gamma=0.4)
    # float16: 11 significant bits, values in (0, 1]
    np.testing.assert_allclose(K.astype(np.float64), ref, rtol=0, atol=2.5e-4)
    assert np.abs(K.astype(np.float64) - ref).max() > 1e-6       # it is rounded


def test_half_precision_passes_reuse_their_parts_buffers(monkeypatch):
    # the parts' (c, p) buffers are given back and filled again by the next
    # pass: each pass is numpy's sum over the blocks of K16_b^T (K16_b u + V_b)
    # (nothing left over from the pass before) and the same bytes as new
    # blocks that never reused a buffer; parts kept for a while (as a
    # partition keeps them for its fold) come back as the same 8 buffers
    monkeypatch.setattr(nystrom, "BLOCK_VALUES", 40 * 23)      # 40 rows a block: 8 blocks
    X, Y = _problem(n=300, d=5)
    Y = np.ascontiguousarray(Y[:, :2])
    kern = KernelBlocks(X, 2, 0.4, 3, 0.0, 1)
    C = np.ascontiguousarray(X[::13])                          # p = 23
    rng = np.random.default_rng(3)
    us = [rng.standard_normal((C.shape[0], 2)) for _ in range(3)]

    def address(part):
        return part.__array_interface__["data"][0]

    with ThreadPoolExecutor(2) as pool:
        blocks = nystrom._RowBlocks(kern, C, 1e9, pool, np.float16, None, Y)
        kept = list(blocks.parts(None, True))
        first = {address(part) for part in kept}
        total = nystrom.RowSum()
        for part in kept:
            total.add(part)
        blocks.recycle(kept)
        got = [total.out.copy()]
        kept = list(blocks.parts(us[0], True))
        assert len(first) == len(blocks.starts) == 8
        assert {address(part) for part in kept} == first
        blocks.recycle(kept)
        got += [blocks.apply(u, targets=k == 0) for k, u in enumerate(us)]
        for k, u in enumerate(us):
            fresh = nystrom._RowBlocks(kern, C, 1e9, pool, np.float16, None, Y)
            assert fresh.apply(u, targets=k == 0).tobytes() == got[k + 1].tobytes()
    K16 = np.concatenate([blocks._block(i) for i in range(8)]).astype(np.float64)
    for k, u in enumerate([None] + us):
        t = (0 if u is None else K16 @ u.astype(np.float32)) + (Y if k < 2 else 0)
        np.testing.assert_allclose(got[k], K16.T @ t, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rows, p, c", [(37, 83, 3), (8, 16, 10), (1, 7, 1), (13, 200, 6)])
def test_half_products_are_both_products_in_float32(vector_path, rows, p, c):
    # row groups of 8 with a rest, a pair of rows and an odd one, outputs in
    # sweeps of 5, columns past the last multiple of 8: against float64
    # products, and the vector path against the scalar one bit for bit
    rng = np.random.default_rng(rows * p)
    H = rng.random((rows, p)).astype(np.float16)
    u = rng.standard_normal((c, p)).astype(np.float32)
    V = rng.standard_normal((rows, c)).astype(np.float32)
    Hd = H.astype(np.float64)
    for uu, VV in [(u, V), (u, None), (None, V)]:
        t_ref = (0 if uu is None else Hd @ uu.T.astype(np.float64)) + (0 if VV is None else VV)
        start = rng.standard_normal((c, p)).astype(np.float32)    # out is added to
        out, out0 = start.copy(), start.copy()
        vector_path(None)
        t = _block_ops.half_products(H, uu, VV, out)
        vector_path("scalar")
        t0 = _block_ops.half_products(H, uu, VV, out0)
        assert t.tobytes() == t0.tobytes() and out.tobytes() == out0.tobytes()
        scale = np.abs(t_ref).max()
        np.testing.assert_allclose(t, t_ref, rtol=0, atol=1e-5 * scale)
        np.testing.assert_allclose(out, start + (Hd.T @ t_ref).T, rtol=0,
                                   atol=1e-5 * scale * rows + 1e-6)
        if VV is not None and uu is None:
            assert t.tobytes() == VV.tobytes()


def test_half_precision_is_the_closed_form_to_float16_accuracy(monkeypatch):
    monkeypatch.setattr(nystrom, "BLOCK_VALUES", 37 * 80)
    X, Y = _problem(n=400)
    n, gamma, p, lam = X.shape[0], 0.7, 80, 1e-2
    res = fit_eigenpro(X, Y, gamma=gamma, options=_opts(n, centers=p, precision="half",
                                                        **{"lambda": lam}, epochs=100))
    assert res.stats["precision"] == "half"
    S = res.centres
    K_nM, K_MM = _rbf(X, X[S], gamma), _rbf(X[S], X[S], gamma)
    ref = np.linalg.solve(K_nM.T @ K_nM + n * lam * K_MM, K_nM.T @ Y)
    # kernel values to ~2e-4: the fitted function (scale about 1) to ~1e-2, where a
    # wrong block or sum is off by O(1)
    err = np.abs(K_nM @ res.alpha - K_nM @ ref).max()
    assert err < 2e-2
    assert np.abs(K_nM @ ref).max() > 0.5


@pytest.mark.parametrize("precision", ["half", "single", "double"])
def test_same_bits_for_threads_and_cache(precision, monkeypatch):
    monkeypatch.setattr(nystrom, "BLOCK_VALUES", 60 * 80)
    monkeypatch.setattr(_subsampled, "RESIDUAL_BLOCK", 16)
    y, X = _classes(1000)
    base = (f"-g 0.3 --solver eigenpro --centers 80 --subsample 30 --epochs 20 -q "
            f"--precision {precision}")
    one = kernsolve.train(y, X, base + " --threads 1")
    two = kernsolve.train(y, X, base + " --threads 2")
    small = kernsolve.train(y, X, base + " --threads 2 -m 0.01")
    assert small.stats["cached_blocks"] <= 1 and one.stats["cached_blocks"] == 17
    assert one.coef.tobytes() == two.coef.tobytes() == small.coef.tobytes()
    assert one.stats["subsample"] == 30
    # and it fits the training classes
    assert kernsolve.predict(y, X, one, "-q")[1][0] > 90
    est = EigenProClassifier(gamma=0.3, centers=80, subsample=30, epochs=20,
                             precision=precision, n_jobs=2).fit(X, y)
    order = [list(one.labels).index(c) for c in est.classes_]
    np.testing.assert_array_equal(est.dual_coef_, one.coef[:, order])


@pytest.mark.parametrize("options, message", [
    ("--centers 10 --subsample 0", "--subsample: the subsample size M must be >= 1, got 0"),
    ("--centers 200 --subsample 101",
     r"--subsample: the q = 101 auxiliary rows .* p \+ q must be at most n = 300"),
    ("--centers 10 --subsample 2.5", "--subsample: expected an integer, got 2.5"),
    ("--centers 10 --precision half -t 0", "--precision half: float16 keeps kernel values "
                                           "bounded by 1"),
    ("--precision half", "--precision half: only the centres' model"),
    ("--centers 10 --precision quarter",
     r"--precision: unknown precision .quarter. \(known: double, single, half\)"),
])
def test_bad_options(options, message):
    y, X = _classes(300)
    with pytest.raises(ValueError, match=message):
        kernsolve.train(y, X, "--solver eigenpro -q " + options)


def test_solves_and_gram_without_the_gil_are_scipys_bits():
    # the same dtrsm / dsyrk as scipy.linalg's wrappers (which hold the GIL)
    import scipy.linalg
    import scipy.linalg.blas
    rng = np.random.default_rng(3)
    A = rng.random((40, 40))
    U = np.linalg.cholesky(A @ A.T + 40 * np.eye(40)).T.copy()
    B = rng.random((40, 9))[:, ::2]                       # not contiguous
    for order in ("C", "F"):
        Uo = np.asarray(U, order=order)
        for transpose in (False, True):
            ref = scipy.linalg.solve_triangular(U, B, trans="T" if transpose else "N",
                                                lower=False, check_finite=False)
            got = _block_ops.solve_upper(Uo, B, transpose=transpose)
            assert np.asfortranarray(ref).tobytes() == got.tobytes()
    W = np.asfortranarray(rng.random((7, 40)))
    S = np.asfortranarray(np.eye(40))
    _block_ops.add_gram_upper(S, W)
    ref = scipy.linalg.blas.dsyrk(1.0, W, beta=1.0, c=np.asfortranarray(np.eye(40)), trans=1,
                                  lower=0)
    assert np.triu(S).tobytes() == np.triu(ref).tobytes()
    np.testing.assert_allclose(np.triu(S), np.triu(np.eye(40) + W.T @ W), rtol=1e-13)
    with pytest.raises(ValueError, match="solve_upper: U must be a contiguous square"):
        _block_ops.solve_upper(U[:, :30], B)


def test_float16_conversions_are_numpys_bits(vector_path):
    every = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    finite = np.isfinite(every)
    wide = every[finite].astype(np.float32)
    # half_products' conversions (vector and scalar) of every finite float16:
    # one row times t = 1 added to zeros is the row itself (-0.0 becomes 0.0)
    for path in (None, "scalar"):
        vector_path(path)
        out = np.zeros((1, wide.size), dtype=np.float32)
        _block_ops.half_products(every[finite][None, :], None, np.ones((1, 1), np.float32),
                                 out)
        assert out[0].tobytes() == (wide + np.float32(0)).tobytes()
    # rounding to nearest even: values around every float16, subnormals, the
    # overflow threshold, and odd lengths (the vector loop's tail)
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.random(10001, dtype=np.float32), wide,
                        (rng.normal(size=5003) * np.exp(rng.uniform(-20, 11, 5003)))
                        .astype(np.float32), np.float32([65519, 65520, -65520, 0.0, -0.0])])
    x = np.concatenate([x, np.nextafter(x, np.float32(np.inf)),
                        np.nextafter(x, np.float32(-np.inf))])
    with np.errstate(over="ignore"):
        ref = x.astype(np.float16)
    assert _block_ops.float_to_half(x).tobytes() == ref.tobytes()


@pytest.mark.parametrize("precision", ["half", "single"])
def test_sparse_rows_too_big_to_densify_are_made_dense_a_block_at_a_time(precision, monkeypatch):
    """Sparse rows the kernel engine keeps sparse (the whole too big to make
    dense) get their float32 blocks from dense copies of each block: blocks
    equal to numpy's Gaussian kernel to float32 accuracy, and the model of
    the same rows given dense (the oracle) to float64 rounding."""
    import scipy.sparse as sp
    from kernsolve import _kernels
    monkeypatch.setattr(nystrom, "BLOCK_VALUES", 37 * 60)      # several blocks, a partial one
    X, Y = _problem(n=300, d=6)
    X[np.abs(X) < 0.5] = 0.0                                    # half the values zero
    Xs = sp.csr_matrix(X)
    opts = dict(centers=60, precision=precision, subsample=40, epochs=5)
    dense = fit_eigenpro(X, Y, gamma=0.7, options=_opts(300, **opts))
    monkeypatch.setattr(_kernels, "_DENSIFY_MAX_BYTES", 0)     # kept sparse
    kern = KernelBlocks(Xs, 2, 0.7, 3, 0.0, 1)
    assert sp.issparse(kern.X)
    single = nystrom._SingleKernel(kern, Xs[:60])
    np.testing.assert_allclose(single.block(0, 300), _rbf(X, X[:60], 0.7), rtol=0, atol=2e-6)
    assert nystrom._SingleKernel.applies(kern)
    very_sparse = sp.random(300, 60, density=0.05, format="csr", random_state=0)
    assert not nystrom._SingleKernel.applies(KernelBlocks(very_sparse, 2, 0.7, 3, 0.0, 1))
    sparse = fit_eigenpro(Xs, Y, gamma=0.7, options=_opts(300, **opts))
    # the passes' blocks are the dense rows' bits; the preconditioner's
    # float64 kernel values come from the engine's sparse loops, which round
    # differently from dgemm: the same model to float64 rounding, not bits
    K = _rbf(X, X[dense.centres], 0.7)
    assert np.array_equal(sparse.centres, dense.centres)
    np.testing.assert_allclose(K @ sparse.alpha, K @ dense.alpha, rtol=0, atol=1e-9)


def test_select_rows_shares_the_arrays_and_equals_scipys_selection():
    """kernsolve._sparse.select_rows against scipy's own selection (the
    oracle), on the canonical form (int64 row pointers, int32 column
    indices) whose scipy selection copies both whole arrays first."""
    import scipy.sparse as sp
    from kernsolve._kernels import as_canonical
    from kernsolve._sparse import select_rows
    X = as_canonical(sp.random(50, 8, density=0.4, format="csr", random_state=1))
    assert X.indptr.dtype == np.int64 and X.indices.dtype == np.int32
    for a, b in [(0, 50), (3, 17), (20, 20), (49, 50)]:
        got = select_rows(X, slice(a, b))
        assert got.shape == (b - a, 8)
        assert np.array_equal(got.toarray(), X[a:b].toarray())
        if b > a:
            assert np.shares_memory(got.data, X.data)
    idx = np.array([7, 0, 49, 7, 12])
    assert np.array_equal(select_rows(X, idx).toarray(), X[idx].toarray())
