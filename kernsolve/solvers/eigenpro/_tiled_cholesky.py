"""FALKON's p x p factors in float64 on the thread pool, with the same bits for
any thread count: a blocked right-looking Cholesky and the product ``T T^T``
of an upper-triangular T, cut into fixed column tiles of ``TILE`` columns.

Each tile is one LAPACK/BLAS call of a shape fixed by p and TILE (never by the
thread count) on one BLAS thread, and a tile is written by one task only: the
threads only decide which tile runs when, so the result is the same bits for 1
or N threads.  With 2 threads it takes about half of LAPACK's one-thread time
(``dpotrf``/``dlauum``), which for p = 10000 is most of the setup.
"""
import numpy as np
import scipy.linalg.lapack as lapack

from . import _block_ops
from ..._threads import one_blas_thread

__all__ = ["cholesky_upper", "upper_times_transpose", "TILE"]

TILE = 256      # columns per tile: large enough for BLAS-3 speed, small enough to share


def _tiles(start, p):
    return [(c, min(c + TILE, p)) for c in range(start, p, TILE)]


def _run(pool, fn, items):
    if pool is None:
        for item in items:
            fn(item)
    else:
        for _ in pool.map(fn, items):       # exceptions surface here
            pass


def cholesky_upper(A, pool=None):
    """Factor the symmetric positive definite A (p x p, float64, C order; its
    upper triangle is read) in place into U upper with ``U^T U = A``, the
    strict lower triangle set to zero.

    Returns 0, or the 1-based index of the first non-positive pivot (as
    LAPACK's ``info``), A then being partly overwritten.
    """
    p = A.shape[0]
    for k0, k1 in _tiles(0, p):
        with one_blas_thread():
            U, info = lapack.dpotrf(A[k0:k1, k0:k1], lower=0, clean=1)
        if info != 0:
            return k0 + info
        A[k0:k1, k0:k1] = U
        if k1 == p:
            break
        rest = _tiles(k1, p)

        def panel(tile):            # U_kj = U_kk^{-T} A_kj
            c0, c1 = tile
            with one_blas_thread():
                # without the GIL (scipy's solve_triangular holds it: the
                # panels ran one at a time whatever the threads)
                A[k0:k1, c0:c1] = _block_ops.solve_upper(U, A[k0:k1, c0:c1], transpose=True)

        def update(tile):           # A_ij -= U_ki^T U_kj for the rows i <= j of tile j
            c0, c1 = tile
            with one_blas_thread():
                A[k1:c1, c0:c1] -= A[k0:k1, k1:c1].T @ A[k0:k1, c0:c1]

        _run(pool, panel, rest)
        _run(pool, update, rest)
    for r0, r1 in _tiles(0, p):     # the strict lower triangle (updates wrote in it)
        A[r0:r1, :r0] = 0.0
        A[r0:r1, r0:r1] = np.triu(A[r0:r1, r0:r1])
    return 0


def upper_times_transpose(T, pool=None):
    """``T T^T`` for T upper triangular (p x p, zero below the diagonal): a new
    array whose upper triangle holds the product (the lower one is not set)."""
    p = T.shape[0]
    W = np.empty_like(T)

    def column(tile):               # W[:c1, c0:c1] = T[:c1, c0:] T[c0:c1, c0:]^T
        c0, c1 = tile
        with one_blas_thread():
            W[:c1, c0:c1] = T[:c1, c0:] @ T[c0:c1, c0:].T

    _run(pool, column, _tiles(0, p))
    return W
