"""FALKON's preconditioner without the ``p^3``: ``K_MM`` replaced by its
approximation through q auxiliary rows (``--subsample q`` with ``--centers p``).

FALKON preconditions the centres' system ``H = K_nM^T K_nM / n + lam K_MM`` by
``K_MM^2 / p + lam K_MM`` (the data's second moment estimated on the centres),
which costs ``p^3`` multiply-adds for its factors.  Here ``K_MM`` is replaced by

    K~ = L L^T + blockdiag(K_MM - L L^T),     L = K_MQ K_QQ^{-1/2}

the Nystrom approximation through q rows Q (drawn after the centres, so
disjoint from them) plus the exact residual ``K_MM - L L^T`` on diagonal
blocks of b centres (the "partially independent" approximation, PITC, of the
Gaussian-process literature).  The blocks gather centres near the same
auxiliary row (the largest ``k(c, q)``), where the residual's correlations are.
The preconditioner is ``M = K~^2 / p + lam K~``, applied as

    M^{-1} r = p (K~ + p lam I)^{-1} K~^{-1} r

(the two factors commute), each inverse by the Woodbury identity around the
block-diagonal part ``G_s = blockdiag(residual) + s I``:

    (G_s + L L^T)^{-1} = G_s^{-1} - G_s^{-1} L (I + L^T G_s^{-1} L)^{-1} L^T G_s^{-1}

Cost: ``p q d`` kernel values for ``K_MQ``, ``p b d`` for the blocks, about
``1.5 p q^2 + 2 p b q`` multiply-adds to set up (L by triangular solves, then
for each of the two shifts ``W^T W`` by symmetric products), ``O(p (q + b) c)``
to apply; memory ``8 p (q + 2 b)`` bytes plus ``8 q^2`` for each of the two
cores.  With q, b << p it replaces FALKON's
``p^3``.

Same bits for any thread count: the blocks are fixed by p, q and the data;
each block's factors come from calls of a fixed shape on one BLAS thread, the
block sums are added in block order; applying it, each task (a block's solve, a
tile of L's rows) runs on one BLAS thread and L^T's tiles are added in order.
"""
import numpy as np
import scipy.linalg

from . import _block_ops
from ._tiled_cholesky import cholesky_upper
from .centres import RESIDUAL_BLOCK     # centres per diagonal block of the residual: b
from ..._threads import one_blas_thread

__all__ = ["SubsampledPreconditioner", "RESIDUAL_BLOCK"]


def _jittered(K, p):
    """K plus FALKON's jitter for p centres (``eps p max diag``) on the diagonal, in place."""
    K[np.diag_indices(K.shape[0])] += np.finfo(np.float64).eps * p * max(
        float(np.max(np.diag(K))), 1e-300)
    return K


class SubsampledPreconditioner:
    """``r -> M^{-1} r`` for the centres C (p rows) from the auxiliary rows XQ.

    ``kern`` is a one-thread engine (the pool's); ``pool`` runs the row tiles
    and the blocks, here and each time the preconditioner is applied (it must
    outlive the object's use).
    """

    def __init__(self, kern, C, XQ, lam, pool):
        p, q = C.shape[0], XQ.shape[0]
        self.p, self.lam, self.pool = p, float(lam), pool
        K_QQ = _jittered(kern.block(XQ, XQ), p)
        if cholesky_upper(K_QQ, pool) != 0:
            raise ValueError(f"--subsample: the kernel matrix of the q = {q} auxiliary rows "
                             "is not numerically positive definite (duplicate rows?); "
                             "use a smaller q")
        R = K_QQ
        tiles = [(s, min(s + RESIDUAL_BLOCK, p)) for s in range(0, p, RESIDUAL_BLOCK)]
        L = np.empty((p, q))
        nearest = np.empty(p, dtype=np.intp)

        def tile(t):                        # L's rows: K_MQ R^{-1}, and each centre's nearest
            s0, s1 = t
            K = kern.block(C[s0:s1], XQ)
            nearest[s0:s1] = np.argmax(K, axis=1)
            with one_blas_thread():
                L[s0:s1] = _block_ops.solve_upper(R, K.T, transpose=True).T

        list(pool.map(tile, tiles))
        del K_QQ, R
        self.tiles = tiles
        order = np.argsort(nearest, kind="stable")
        self.blocks = [np.sort(order[s0:s1]) for s0, s1 in tiles]
        self.L = L
        shifts = (0.0, p * self.lam)

        def block(B):                       # the residual's factors, one per shift
            XB = C[B]
            E = _jittered(kern.block(XB, XB), p)
            with one_blas_thread():
                E -= L[B] @ L[B].T
                try:
                    return [scipy.linalg.cho_factor(E + s * np.eye(B.size), lower=False,
                                                    check_finite=False) for s in shifts]
                except np.linalg.LinAlgError:
                    raise ValueError("--subsample: a block of the centres' residual "
                                     "kernel matrix is not numerically positive "
                                     "definite (duplicate centres?); use fewer centres "
                                     "or a larger --lambda") from None

        self.G = [list(F) for F in zip(*pool.map(block, self.blocks))]

        def core(i):
            """Factor of ``I + L^T G_i^{-1} L``, the sum over the blocks of ``W^T W``,
            ``W = F^{-T} L_B`` (F^T F = the block of G_i), added in block order into
            one array (upper triangle, in place: a q x q temporary a block cost as
            much in page faults as the product; both without the GIL, which
            scipy's own wrappers hold: the two tasks ran one after the other)."""
            S = np.eye(q, order="F")
            with one_blas_thread():
                for B, F in zip(self.blocks, self.G[i]):
                    _block_ops.add_gram_upper(
                        S, _block_ops.solve_upper(F[0], L[B], transpose=True))
                return scipy.linalg.cho_factor(S, lower=False, overwrite_a=True,
                                               check_finite=False)

        self.core = list(pool.map(core, range(len(shifts))))   # a task per shift

    def _block_solve(self, i, r):
        out = np.empty_like(r)

        def one(b):                 # cho_solve's two triangular solves, without the GIL
            F = self.G[i][b][0]
            with one_blas_thread():
                out[self.blocks[b]] = _block_ops.solve_upper(
                    F, _block_ops.solve_upper(F, r[self.blocks[b]], transpose=True))

        list(self.pool.map(one, range(len(self.blocks))))
        return out

    # L's products by tiles of its rows, each written with the narrow (c)
    # side first: OpenBLAS takes 0.95-1.1 ms a 512 x 3000 tile so, 1.6-2.3 ms
    # as L_tile^T u and L_tile w (ten columns)
    def _L_times(self, w):
        """L w, a tile of L's rows per task."""
        out = np.empty((self.p, w.shape[1]))
        wt = np.ascontiguousarray(w.T)

        def one(tile):
            with one_blas_thread():
                out[tile[0]:tile[1]] = (wt @ self.L[tile[0]:tile[1]].T).T

        list(self.pool.map(one, self.tiles))
        return out

    def _Lt_times(self, u):
        """L^T u: the tiles' products added in tile order (the same sums for any
        thread count)."""
        def one(tile):
            with one_blas_thread():
                return np.ascontiguousarray(u[tile[0]:tile[1]].T) @ self.L[tile[0]:tile[1]]

        parts = self.pool.map(one, self.tiles)
        out = next(parts).copy()
        for part in parts:
            out += part
        return out.T

    def _solve(self, i, r):
        """(G_i + L L^T)^{-1} r by Woodbury."""
        u = self._block_solve(i, r)
        with one_blas_thread():
            w = scipy.linalg.cho_solve(self.core[i], self._Lt_times(u), check_finite=False)
        u -= self._block_solve(i, self._L_times(w))
        return u

    def __call__(self, r):
        """``M^{-1} r = p (K~ + p lam I)^{-1} K~^{-1} r`` for r of shape (p, c);
        L's products and the blocks' solves run on the pool (the application
        read the p x q matrix L four times on one thread: 0.37 s at p = 15000,
        q = 3000, more than the pass over K(X, C) in float16 takes)."""
        z = self._solve(1, self._solve(0, r))
        z *= self.p
        return z
