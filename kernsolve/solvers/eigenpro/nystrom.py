"""EigenPro's model on p << n centres (``--centers p``): Nystrom kernel ridge
regression solved by FALKON.

The model is a kernel expansion over p centres drawn from the training rows
(seeded: stream ``"sampling"``), ``f(x) = sum_j alpha_j k(c_j, x)``, fitted on
the ridge-regularised square loss over all n rows::

    (1/2n) sum_i ||f(x_i) - y_i||^2 + (lambda/2) ||f||_H^2

whose minimiser solves the p x p system (``K_nM = K(X, C)``, ``K_MM = K(C, C)``)::

    (K_nM^T K_nM / n + lambda K_MM) alpha = K_nM^T Y / n

With p = n centres it is kernel ridge regression, ``(K + n lambda I) alpha =
Y`` (``train.exact_kernel_ridge``).  The system is solved by FALKON (Rudi,
Carratino & Rosasco, "FALKON: an optimal large scale kernel method", 2017,
Algorithm 1): conjugate gradient on it, preconditioned by the Nystrom
approximation of the Hessian built from the centres alone,

    T = chol(K_MM + eps p I)      (upper, T^T T = K_MM)
    A = chol(T T^T / p + lambda I)

so that CG solves ``B^T H B beta = B^T K_nM^T Y / n`` with ``B = T^{-1} A^{-1}``
and ``alpha = B beta``; its condition number stays near 1 while the Nystrom
approximation holds, so a few iterations are enough.  Each iteration is one
pass over the data: ``K_nM^T (K_nM w)`` block of rows by block of rows.

Cost: the preconditioner ``p^3`` multiply-adds (two Cholesky factors and
``T T^T``, tiled on the thread pool: ``_tiled_cholesky``) and ``p^2`` kernel
values; each iteration ``2 n p c`` multiply-adds (c outputs) plus ``n p``
kernel values for every row block not kept in the cache (``-m`` MB: blocks of
``K(X, C)`` computed once and kept, in row order, while they fit; the others
are recomputed each iteration).  ``--precision single`` computes the blocks by
float32 GEMM, keeps them in float32 and multiplies in float32 (half the
memory; the sums, the factors and CG stay in double); ``--precision half``
keeps those values in float16 (a quarter) and multiplies in float32.
``--subsample q`` replaces the ``p^3`` factors by an approximation of
``K_MM`` through q auxiliary rows (``_subsampled``) and runs preconditioned
CG on alpha itself, ``K_MM u`` taken from the pass at the centres' rows.  The result does not
depend on the cache size nor on the thread count: the row blocks and the
factors' tiles are fixed by p, each block's kernel values come from one call
of a fixed shape (the kernel engine, or one sgemm), each block's products and
each tile run on one BLAS thread and the blocks' sums are added in row order.
"""
import hashlib
import threading
import time
import warnings
from copy import copy
from typing import Any, NamedTuple

import numpy as np
import scipy.linalg

from . import _block_ops
from ._common import UntimedCallback, announce_cost
from ._subsampled import SubsampledPreconditioner
from .centres import RESIDUAL_BLOCK, preconditioner_bytes
from ._tiled_cholesky import TILE, cholesky_upper, upper_times_transpose
from ..._constants import BOUNDED_KERNELS, KERNEL_NAMES, LINEAR, POLY, RBF, spoken
from ..._kernels import dense_enough
from ..._random import permutation
from ..._sparse import issparse
from ..._threads import one_blas_thread, worker_pool
from ..._validation import check_allocation

__all__ = ["centre_indices", "auxiliary_indices", "Centres", "distinct_rows", "fit_centres",
           "solve_centres", "block_rows", "BLOCK_VALUES", "PRECISIONS"]

BLOCK_VALUES = 2 ** 22      # kernel values per row block of K(X, C): 32 MB in double
# Storage of K(X, C); half (float16) is multiplied in float32 (_block_ops.half_products).
PRECISIONS = {"double": np.float64, "single": np.float32, "half": np.float16}
# A low precision is refitted in the next one up (FALLBACK) when its conjugate
# gradient breaks down or when the fitted values it computed on the first row
# block differ from the double kernel's by more than DRIFT_TOL of the targets'
# spread.  Measured (benchmarks/bench_precision.py; benchmarks/history/RESULTS.md,
# "EigenPro on centres: the low precisions checked"): float16 on Fashion-MNIST
# 0.01-0.035; on ijcnn1, housing, phishing, w8a, australian, abalone 0.51-11 with
# the model's test error or MSE far from double's; a9a, mushrooms 0.13-0.14 with
# double's accuracy.
DRIFT_TOL = 0.1
FALLBACK = {"half": "single", "single": "double"}
# Conjugate gradient has broken down when a relative residual grows past GROWTH
# (preconditioned CG's residual is not monotone: it rose to 1.3 on housing, and
# 10x over a few iterations near 1e-3, in double) or the operator is not positive
# definite on a direction while the residual is above the rounding level of the
# products (BREAKDOWN_FLOOR, by their dtype).
GROWTH = 10.0
BREAKDOWN_FLOOR = {np.dtype(np.float64): 1e-6, np.dtype(np.float32): 1e-3}


def block_rows(p):
    """Rows of a row block of K(X, C) for p centres (the blocks' fixed grid)."""
    return max(1, BLOCK_VALUES // p)


def centre_indices(n, p, seed):
    """The p centres: the first p of the seed's "sampling" permutation, sorted."""
    return np.sort(permutation(n, seed, "sampling")[:p]).astype(np.intp)


def auxiliary_indices(n, p, q, seed):
    """The q auxiliary rows of the subsampled preconditioner: the q rows after
    the centres in the same permutation (so none is a centre), sorted."""
    return np.sort(permutation(n, seed, "sampling")[p:p + q]).astype(np.intp)


def _row_keys(R):
    """One key per row of R (dense or canonical CSR): equal keys for rows of
    equal values (-0.0 is 0.0; a stored zero is no entry), a 128-bit digest of
    the row's values (and, sparse, their columns)."""
    if issparse(R):
        R = R.tocsr(copy=True)
        R.data = R.data + 0.0
        R.eliminate_zeros()
        R.sort_indices()
        rows = ((R.indices[a:b].tobytes(), R.data[a:b].tobytes())
                for a, b in zip(R.indptr[:-1], R.indptr[1:]))
        return [hashlib.blake2b(i + b"|" + v, digest_size=16).digest() for i, v in rows]
    R = np.ascontiguousarray(R, dtype=np.float64) + 0.0
    return [hashlib.blake2b(row.tobytes(), digest_size=16).digest() for row in R]


class Centres(NamedTuple):
    """The centres' row indices S and rows C, the auxiliary rows' indices Q
    and rows XQ (None without ``--subsample``), and how many repeated rows
    were replaced as centres: fetched once, for every solve of a fit."""
    S: np.ndarray
    C: Any
    Q: np.ndarray | None
    XQ: Any
    replaced: int


def distinct_rows(rows, S, q, seed):
    """The centres S (sorted row indices) and the q auxiliary rows without
    repeated rows, with their rows: a :class:`Centres`; ``rows`` has
    ``n_rows`` and ``rows(idx)`` (a row source, or the kernel engine's blocks).

    Equal rows as centres make ``K_MM`` singular (noise-free augmentation
    repeats rows), and equal auxiliary rows ``K_QQ``.  Of equal centres the
    first (in row order) is kept; the others are replaced by the next rows of
    the seed's "sampling" permutation that are not centres and repeat no
    kept row, so p stays p while the data have p distinct rows (else the
    centres are all the distinct rows); then the q auxiliary rows are the
    next such rows.  ``replaced`` counts the repeated centres.  Without
    repeated rows among them the result is ``S``, :func:`auxiliary_indices`
    (None when q is None) and 0: the centres as before, their rows fetched
    once (a cluster gathers them from the partitions).
    """
    n, p = rows.n_rows, len(S)
    C = rows.rows(S)
    keys = _row_keys(C)
    Q = None if q is None else auxiliary_indices(n, p, q, seed)
    XQ = None if Q is None else rows.rows(Q)
    q_keys = [] if Q is None else _row_keys(XQ)
    if len(set(keys)) == p and len(set(keys).union(q_keys)) == p + len(q_keys):
        return Centres(S, C, Q, XQ, 0)
    seen, kept = set(), []
    for i, key in zip(S, keys):
        if key not in seen:
            seen.add(key)
            kept.append(i)
    replaced = p - len(kept)
    taken = set(int(i) for i in S)
    order = [int(i) for i in permutation(n, seed, "sampling") if int(i) not in taken]
    aux, at, chunk = [], 0, max(64, replaced + (q or 0))
    while (len(kept) < p or q is not None and len(aux) < q) and at < len(order):
        batch = order[at:at + chunk]
        at += len(batch)
        for i, key in zip(batch, _row_keys(rows.rows(np.asarray(batch, dtype=np.intp)))):
            if key in seen:
                continue
            seen.add(key)
            if len(kept) < p:
                kept.append(i)
            elif q is not None and len(aux) < q:
                aux.append(i)
    S = np.sort(np.asarray(kept, dtype=np.intp))
    if q is not None:
        if not aux:
            raise ValueError(f"--subsample: the data have no rows besides the p = {len(S)} "
                             "distinct centres to draw the auxiliary rows from; use fewer "
                             "centres or no --subsample")
        Q = np.sort(np.asarray(aux, dtype=np.intp))
    return Centres(S, rows.rows(S), Q, None if Q is None else rows.rows(Q), replaced)


class _SingleKernel:
    """K(rows, C) in float32 for the kernels of a dot product (rbf, linear,
    polynomial): one sgemm ``rows . C^T`` on one BLAS thread, then in place
    ``exp(-gamma (|x|^2 + |c|^2 - 2 x.c))`` (rbf, the squared distance
    clipped at 0) or ``(gamma x.c + coef0)^degree``.  The squared norms are
    summed in float64 and rounded once.  A block's values depend on its rows
    and C only (one call of a fixed shape), not on the thread.

    Sparse rows dense enough to densify but kept sparse because the whole
    matrix made dense would be too big (``_kernels.sparse_worth_densifying``)
    are made dense a block at a time, and the centres once: the same values
    as dense rows, and the float32 GEMM's speed instead of the engine's
    double loops.  Sparser rows (text, one-hot) stay on the engine's loops:
    made dense, their blocks and centres could be many times their size."""

    def __init__(self, kern, C):
        self.kern = kern
        C = C.toarray() if issparse(C) else C
        self.C = np.ascontiguousarray(C, dtype=np.float32)
        self.cc = np.einsum("ij,ij->i", C, C).astype(np.float32)
        self.scratch = threading.local()    # each thread's block, for temporary blocks

    @staticmethod
    def applies(kern):
        X = kern.X
        return (kern.code in (RBF, LINEAR, POLY)
                and (not issparse(X) or dense_enough(X.nnz, X.shape)))

    def _scratch(self, rows):
        """This thread's (rows, p) float32 array, made once: a block that is
        only rounded to float16 is computed in it, not in a new 17 MB array
        (at p = 15000) whose pages each block would fault in again where
        every large allocation is a fresh mmap (a Dask nanny's worker)."""
        K = getattr(self.scratch, "K", None)
        if K is None or K.shape[0] < rows:
            K = self.scratch.K = np.empty((rows, self.C.shape[0]), np.float32)
        return K[:rows]

    def block(self, start, stop, temporary=False):
        """K(rows start..stop, C) in float32; ``temporary``: in this thread's
        scratch array, overwritten by its next temporary block."""
        R = self.kern.row_range(start, stop)
        if issparse(R):
            R = R.toarray()
        R32 = np.ascontiguousarray(R, dtype=np.float32)
        if temporary:
            K = np.matmul(R32, self.C.T, out=self._scratch(R32.shape[0]))
        else:
            K = R32 @ self.C.T
        code, g = self.kern.code, np.float32(self.kern.gamma)
        if code == RBF:
            K *= np.float32(-2.0)
            K += np.einsum("ij,ij->i", R, R).astype(np.float32)[:, None]
            K += self.cc[None, :]
            np.maximum(K, 0, out=K)
            K *= -g
            np.exp(K, out=K)
        elif code == POLY:
            K *= g
            K += np.float32(self.kern.coef0)
            K **= np.float32(self.kern.degree)
        return K


class _RowBlocks:
    """``K(X, C)`` in fixed row blocks (rows = BLOCK_VALUES // p), the first
    ones kept while they fit the cache; ``apply`` runs the blocks on the
    thread pool, one kernel-engine thread and one BLAS thread per block.

    ``dtype`` float32 (``--precision single``) stores the blocks in half the
    memory, computes them by :class:`_SingleKernel` where it applies (else by
    the engine, rounded) and runs the products in float32; float16
    (``--precision half``) stores those float32 values rounded to float16 and
    makes a block's two products in float32 in one read of each row
    (``_block_ops.half_products``).  The blocks' sums are added in float64.

    ``rows_at`` (sorted row indices, optional): ``apply`` also returns
    ``K(X, C) u`` at those rows (with the centres, ``K_MM u`` for free)."""

    def __init__(self, kern, C, cache_bytes, pool, dtype=np.float64, rows_at=None, Y=None):
        self.kern = copy(kern)              # the pool's engine: one thread per block
        self.Y = Y                          # the targets' rows, V of apply(u, targets=True)
        self.kern.n_threads = 1
        self.C = C
        self.dtype = np.dtype(dtype)
        self.work = np.dtype(np.float32) if self.dtype == np.float16 else self.dtype
        self.single = None
        if self.work == np.float32 and _SingleKernel.applies(kern):
            self.single = _SingleKernel(self.kern, C)
        self.rows_at = rows_at
        self.n, self.p = kern.n_rows, C.shape[0]
        self.rows = block_rows(self.p)
        self.starts = list(range(0, self.n, self.rows))
        block_bytes = self.dtype.itemsize * self.rows * self.p
        self.keep = min(len(self.starts), int(cache_bytes // block_bytes))
        self.cache = {}
        self.n_evals = 0
        self.pool = pool
        self.passes = 0         # apply() calls made
        self.report = None      # report(passes before this one, share of this one done)
        self.spare = []         # float16 blocks: the parts' buffers given back (recycle)

    def _block(self, i):
        K = self.cache.get(i)
        if K is None:
            start = self.starts[i]
            with one_blas_thread():
                if self.single is not None:     # (float16: only rounded from float32)
                    K = self.single.block(start, start + self.rows,
                                          temporary=self.dtype == np.float16)
                else:
                    K = self.kern.block(self.kern.row_range(start, start + self.rows),
                                        self.C)
                K = _block_ops.float_to_half(K) if self.dtype == np.float16 else \
                    K.astype(self.dtype, copy=False)
            if i < self.keep:
                self.cache[i] = K
        return K

    def values(self, i, u):
        """``K_i u`` for block i as the passes compute it (float64 result)."""
        K = self._block(i)
        u = u.astype(self.work, copy=False)
        if K.dtype == np.float16:
            out = np.zeros((u.shape[1], self.p), np.float32)
            t = _block_ops.half_products(K, np.ascontiguousarray(u.T), None, out)
        else:
            with one_blas_thread():
                t = K @ u
        return t.astype(np.float64)

    def parts(self, u, targets=False):
        """Each block's ``K_b^T (K_b u + V_b)`` (V the targets, or none), in row
        order, computed on the pool; with ``rows_at`` and u, each a pair with
        the block's ``(K u)`` at those rows.  Add them with :class:`RowSum`,
        then give them back (:meth:`recycle`)."""
        V = self.Y if targets else None
        if u is not None:
            u = u.astype(self.work, copy=False)
        gather = u is not None and self.rows_at is not None
        # float16 blocks: both products in one read of each row (_half_products.h)
        u_rows = None if u is None or self.dtype != np.float16 else np.ascontiguousarray(u.T)

        def one(i):
            K, start = self._block(i), self.starts[i]
            stop = start + K.shape[0]
            Vb = None if V is None else V[start:stop]
            if K.dtype == np.float16:
                out = self._buffer(V.shape[1] if u is None else u.shape[1])
                t = _block_ops.half_products(K, u_rows, None if Vb is None else
                                          np.ascontiguousarray(Vb, dtype=np.float32), out)
                part = out.T
            else:
                with one_blas_thread():
                    if u is None:
                        return K.T @ Vb.astype(self.work, copy=False)
                    t = K @ u
                    if Vb is not None:
                        t += Vb
                    part = K.T @ t
            if not gather:
                return part
            lo, hi = np.searchsorted(self.rows_at, [start, stop])
            return part, t[self.rows_at[lo:hi] - start]

        computed = sum(min(self.rows, self.n - self.starts[i]) for i in range(len(self.starts))
                       if i not in self.cache)
        self.n_evals += computed * self.p
        return self.pool.map(one, range(len(self.starts)))      # row order

    def apply(self, u, targets=False):
        """``sum_b K_b^T (K_b u + V_b)`` over the row blocks b (V the targets
        when ``targets``; u may be None); with ``rows_at``, also
        ``(K u)[rows_at]`` (u given): a pair."""
        total = RowSum()
        for i, part in enumerate(self.parts(u, targets)):
            total.add(part)
            self.recycle([part])
            if self.report is not None:
                self.report(self.passes, (i + 1) / len(self.starts))
        self.passes += 1
        return total.result(u is not None and self.rows_at is not None)

    def first_block_error(self, alpha):
        """On the first row block, rms over its rows of ``K alpha - K~ alpha``
        per output: K in double from the kernel engine, K~ alpha as the passes
        compute it (the low precisions' drift, :func:`_drift`)."""
        stop = min(self.rows, self.n)
        seen = self.values(0, alpha)
        with one_blas_thread():
            exact = self.kern.block(self.kern.row_range(0, stop), self.C) @ alpha
        return np.sqrt(np.mean((exact - seen) ** 2, axis=0))

    # A float16 block's part is a (c, p) float32 buffer that its products add
    # into.  Made new for each block (0.6 MB at p = 15000, c = 10), each one
    # cost its page faults: with the kept parts of a partition, or where every
    # allocation above 128 kB is a fresh mmap (a Dask nanny's worker:
    # MALLOC_TRIM_THRESHOLD_ fixes glibc's mmap threshold): on Fashion-MNIST's
    # 107 blocks a worker, 21,000-32,000 page faults and 12-30% more CPU a pass
    # (the workers' CPU seconds: benchmarks/bench_cluster_eigenpro.py
    # --cpu-report).  Reused, a pass allocates none after the first.
    def _buffer(self, c):
        """A zeroed (c, p) float32 buffer for a part: a spare one, else new."""
        try:
            out = self.spare.pop()      # (atomic: the pool's threads take them)
        except IndexError:
            return np.zeros((c, self.p), np.float32)
        if out.shape[0] != c:
            return np.zeros((c, self.p), np.float32)
        out.fill(0)
        return out

    def recycle(self, parts):
        """Give back the buffers of parts already added (float16 blocks: the
        next pass fills them again)."""
        if self.dtype == np.float16:
            self.spare.extend((part[0] if isinstance(part, tuple) else part).T
                              for part in parts)

    def close(self):
        """Free the cached blocks (a refit's blocks replace these)."""
        self.cache.clear()
        self.spare.clear()
        self.keep = 0


class RowSum:
    """The blocks' parts added in row order, in float64 (the first part
    converted, each next one added to it): the one order of the sum, so that
    a sum continued elsewhere (over partitions, ``_partitioned``) has the
    bits of one process's.  With ``rows_at``, also the blocks' ``(K u)`` rows."""

    def __init__(self):
        self.out = None
        self.at = []

    def add(self, part):
        if isinstance(part, tuple):
            part, rows = part
            self.at.append(rows)
        if self.out is None:
            self.out = part.astype(np.float64)
        else:
            self.out += part

    def result(self, gathered):
        if gathered:
            return self.out, np.concatenate(self.at).astype(np.float64)
        return self.out


class _Factors:
    """FALKON's factors in float64, packed in one p x p array (``8 p^2`` bytes,
    not 16): T upper with T^T T = K_MM + eps p I (K_MM's place, upper triangle
    and diagonal), A upper with A^T A = T T^T / p + lam I stored as the unit
    lower triangle ``L = A^T diag(A)^{-1}`` (the strict lower triangle) and
    ``diag(A)``.  Built on the pool (``_tiled_cholesky``: the same bits for any
    thread count); the solves run on one BLAS thread."""

    def __init__(self, K_MM, lam, pool):
        p = K_MM.shape[0]
        jitter = np.finfo(np.float64).eps * p * max(float(np.max(np.diag(K_MM))), 1e-300)
        K_MM[np.diag_indices(p)] += jitter
        if cholesky_upper(K_MM, pool) != 0:
            raise ValueError(f"--centers: the kernel matrix of the p = {p} centres is not "
                             "numerically positive definite (nearly equal centres, or a linear "
                             "or polynomial kernel with more centres than its feature "
                             "space has dimensions); use fewer centres")
        A = upper_times_transpose(K_MM, pool)
        A /= p
        A[np.diag_indices(p)] += lam
        if cholesky_upper(A, pool) != 0:  # positive definite when T is regular
            raise ValueError(f"--centers: the preconditioner of the p = {p} centres is "
                             "singular; use fewer centres or a larger --lambda")
        self.dA = np.diag(A).copy()
        for r0 in range(0, p, TILE):      # L's rows r0..r1 into K_MM's strict lower part
            r1 = min(r0 + TILE, p)
            K_MM[r0:r1, :r0] = A[:r0, r0:r1].T / self.dA[:r0]
            diag = K_MM[r0:r1, r0:r1]
            diag[...] = np.triu(diag) + np.tril(A[r0:r1, r0:r1].T / self.dA[r0:r1], -1)
        self.F = K_MM

    def _tri(self, u, lower, trans):
        return scipy.linalg.solve_triangular(self.F, u, lower=lower, trans=trans,
                                             unit_diagonal=lower, check_finite=False)

    def solve_T(self, u, trans="N"):
        """T^{-1} u, or T^{-T} u."""
        with one_blas_thread():
            return self._tri(u, False, trans)

    def solve_A(self, u):
        """A^{-1} u = L^{-T} diag(A)^{-1} u."""
        with one_blas_thread():
            return self._tri(u / self.dA[:, None], True, "T")

    def solve_At(self, u):
        """A^{-T} u = diag(A)^{-1} L^{-1} u."""
        with one_blas_thread():
            return self._tri(u, True, "N") / self.dA[:, None]


def _conjugate_gradient(op, r, iterations, user, coef, precondition=None, floor=1e-6):
    """Conjugate gradient on ``op(x) = r`` from x = 0, one independent
    recurrence per column of r (overwritten: the residual); ``precondition``
    applies M^{-1} (None: the identity).  ``user.stop(done, coef(x))`` after
    each iteration.

    Returns x, the relative (preconditioned) residual norm (a column that
    stopped keeps its last residual), the iterations run and ``breakdown``:
    None, or why the recurrence stopped making sense (the operator not
    positive definite on a direction while the residual is above ``floor``, or
    a residual above GROWTH), in which case the loop stops there.
    """
    x = np.zeros_like(r)
    z = r if precondition is None else precondition(r)
    P = z.copy()
    rz = np.einsum("ij,ij->j", r, z)
    rz0 = np.where(rz > 0, rz, 1.0)
    last = np.where(rz > 0, 1.0, 0.0)    # each column's relative residual squared
    done, breakdown = 0, None
    for it in range(iterations):
        live = rz > 0
        AP = op(P)
        pAp = np.einsum("ij,ij->j", P, AP)
        if np.any(live & ~(pAp > 0) & (last > floor ** 2)):
            breakdown = f"the operator is not positive definite at iteration {it + 1}"
            break
        live &= pAp > 0
        a = np.where(live, rz / np.where(live, pAp, 1.0), 0.0)
        x += a * P
        r -= a * AP
        z = r if precondition is None else precondition(r)
        rz_new = np.einsum("ij,ij->j", r, z)
        P = z + np.where(live, rz_new / np.where(live, rz, 1.0), 0.0) * P
        last = np.where(live, np.abs(rz_new) / rz0, last)
        rz = np.where(live, rz_new, 0.0)
        done = it + 1
        if not np.all(last <= GROWTH ** 2):          # (NaN included)
            breakdown = (f"the relative residual grew to {np.sqrt(np.max(last)):.3g} at "
                         f"iteration {done}")
            break
        if user.stop(done, lambda: coef(x)):
            break
    residual = float(np.sqrt(np.max(last))) if last.size else 0.0
    return x, residual, done, breakdown


def fit_centres(kern, Y, *, p, lam, iterations, seed=0, cache_mb=100.0, n_threads=1,
                precision="double", subsample=None, callback=None, progress=None):
    """Fit ``alpha`` (p, c) on the centres by FALKON; see the module docstring.

    The rows are ``kern``'s, in this process (:class:`LocalRows`); over
    partitions held elsewhere, :func:`solve_centres` with a
    ``_partitioned.PartitionedRows``.

    Parameters
    ----------
    kern : KernelBlocks
        The training rows and the kernel (gamma resolved).
    Y : ndarray of shape (n, c)
    p : int
        Number of centres, 1 <= p <= n.
    lam : float >= 0
        The ridge lambda.
    iterations : int
        Conjugate-gradient iterations (each one pass over the data).
    cache_mb : float
        Budget of the cached row blocks of K(X, C), MB.
    precision : "double", "single" or "half"
        Storage and products of K(X, C) (``--precision``); the preconditioner
        and the conjugate-gradient recurrences are in double either way.  A
        low precision that does not hold for this problem (conjugate gradient
        breaks down, or the fitted values on the first row block move by more
        than DRIFT_TOL of the targets' spread when the kernel values are
        computed in double) is refitted in the next precision up with a
        warning (``stats["refitted_from"]``); in double, a breakdown raises
        ValueError.
    subsample : int, optional
        q: FALKON's preconditioner with ``K_MM`` approximated through q
        auxiliary rows (``_subsampled``, no ``p^3``); None: the exact factors.
    callback : callable, optional
        ``callback(iteration, alpha)`` after each iteration (not timed); True stops.
    progress : kernsolve._progress.Progress, optional
        Told after every row block of every pass (the first pass, then one
        an iteration): the pass, the share of the passes done, the kernel
        values computed.

    Returns
    -------
    alpha : ndarray (p, c)
    centres : ndarray (p,) of row indices
    stats : dict
    """
    return solve_centres(LocalRows(kern, Y), kern, p=p, lam=lam, iterations=iterations,
                         seed=seed, cache_mb=cache_mb, n_threads=n_threads,
                         precision=precision, subsample=subsample, callback=callback,
                         progress=progress)


class LocalRows:
    """The training rows of :func:`solve_centres` in this process: ``kern``'s
    rows and the targets Y, passed over by :class:`_RowBlocks`.

    A row source has ``n_rows``, ``n_features``, ``n_outputs``, ``rows(idx)``
    (canonical rows by global index), ``blocks(C, cache_bytes, pool, dtype,
    rows_at)`` (an object with ``_RowBlocks``'s ``apply``, ``starts``,
    ``keep``, ``n_evals``, ``report``, ``close``) and ``drift(blocks, alpha)``."""

    def __init__(self, kern, Y):
        self.kern, self.Y = kern, Y
        self.n_rows, self.n_features, self.n_outputs = kern.n_rows, kern.X.shape[1], Y.shape[1]

    def rows(self, idx):
        return self.kern.rows(idx)

    def blocks(self, C, cache_bytes, pool, dtype, rows_at=None):
        return _RowBlocks(self.kern, C, cache_bytes, pool, dtype, rows_at, self.Y)

    def drift(self, blocks, alpha):
        return _drift(blocks.first_block_error(alpha), target_spread(self.Y))


def solve_centres(rows, kern, *, p, lam, iterations, seed=0, cache_mb=100.0, n_threads=1,
                  precision="double", subsample=None, callback=None, progress=None):
    """:func:`fit_centres` on a row source (``rows``: :class:`LocalRows`, or
    ``_partitioned.PartitionedRows``); ``kern`` is the kernel engine of the
    centres' own blocks (its rows are not used).  The same bits for any row
    source that gives the same rows, blocks and sums."""
    t0 = time.perf_counter()
    n = rows.n_rows
    # float16 holds values up to 65504 with 11 significant bits: kernels bounded by 1 only
    if precision == "half" and kern.code not in BOUNDED_KERNELS:
        bounded = spoken(f"{KERNEL_NAMES[t]} (-t {t})" for t in sorted(BOUNDED_KERNELS))
        raise ValueError(f"--precision half: float16 keeps kernel values bounded by 1, "
                         f"those of the {bounded} kernels; use --precision single")
    if subsample is not None and p + subsample > n:
        raise ValueError(f"--subsample: the q = {subsample} auxiliary rows are drawn "
                         f"besides the p = {p} centres, so p + q must be at most n = {n}")
    if subsample is None:       # K_MM and T T^T while factoring (_Factors)
        check_allocation(preconditioner_bytes(p), f"--centers {p}: the preconditioner's two "
                         "p x p matrices", "use fewer centres, or --subsample q (no p x p "
                         "matrix)")
    else:                       # K_MQ, and the residual's diagonal blocks (_subsampled)
        check_allocation(preconditioner_bytes(p, subsample), f"--centers {p} --subsample "
                         f"{subsample}: the preconditioner's p x (q + {RESIDUAL_BLOCK}) values",
                         "use fewer centres or a smaller --subsample")
    evals = (iterations + 1) * n * p      # the first pass and one a CG iteration
    d = rows.n_features
    announce_cost(progress, evals, d,
                  f"the centres' model on n = {n} rows: p = {p} centres, up to {iterations} "
                  f"iterations, at most {evals:.2g} kernel evaluations of {d} "
                  f"features (fewer when K(X, centres) fits in -m)")
    # repeated rows would make K_MM (or K_QQ) singular: replaced (distinct_rows)
    centres = distinct_rows(rows, centre_indices(n, p, seed), subsample, seed)
    user = UntimedCallback(callback)
    with worker_pool(n_threads, "eigenpro") as pool:
        fitted = precision
        while True:
            alpha, stats = _solve(rows, kern, centres, lam, iterations, cache_mb, pool,
                                  fitted, user, progress)
            blocks = stats.pop("blocks")
            if fitted == "double":
                break
            why = stats["breakdown"]
            if why is None:
                stats["drift"] = drift = rows.drift(blocks, alpha)
                if drift > DRIFT_TOL:
                    why = (f"the fitted values move by {drift:.2g} of the targets' spread "
                           "with the kernel in double")
            if why is None:
                break
            blocks.close()      # the refit's blocks replace these, not join them
            blocks = None
            fitted = FALLBACK[fitted]
            warnings.warn(f"EigenPro --centers: --precision {stats['precision']} does not "
                          f"hold here ({why}); refitting in {fitted} precision (a larger "
                          "--lambda keeps low precisions usable)", stacklevel=3)
        blocks.close()
        del blocks
        if fitted != precision:
            stats["refitted_from"] = precision
        if stats["breakdown"] is not None:
            raise ValueError(f"EigenPro --centers: conjugate gradient broke down "
                             f"({stats['breakdown']}): the system is numerically singular "
                             f"at --lambda {lam:g}; use a larger --lambda or fewer centres")
    stats.update({
        "centers": len(centres.S),
        "replaced_centres": centres.replaced,
        "lambda": float(lam),
        "subsample": None if centres.Q is None else len(centres.Q),
        "seconds": time.perf_counter() - t0 - user.seconds,
        "n_threads": n_threads,
        "gamma": kern.gamma,
    })
    return alpha, centres.S, stats


def _solve(rows, kern, centres, lam, iterations, cache_mb, pool, precision, user,
           progress=None):
    """One FALKON solve in the given precision on the :class:`Centres` (with
    auxiliary rows: the subsampled preconditioner): alpha and the stats (with
    the row blocks, for the drift check, and the CG breakdown, if any)."""
    t0 = time.perf_counter()
    S, C = centres.S, centres.C
    n, p = rows.n_rows, C.shape[0]
    subsample = None if centres.Q is None else len(centres.Q)
    if subsample is None:
        K_MM = kern.block(C, C)
        if not np.all(np.isfinite(K_MM)):
            raise ValueError("the kernel matrix of the centres has non-finite values "
                             "(gamma too large for the data?)")
        fac = _Factors(K_MM, lam, pool)
        del K_MM
        blocks = rows.blocks(C, cache_mb * 2 ** 20, pool, PRECISIONS[precision])
    else:
        one = copy(kern)
        one.n_threads = 1
        pre = SubsampledPreconditioner(one, C, centres.XQ, lam, pool)
        blocks = rows.blocks(C, cache_mb * 2 ** 20, pool, PRECISIONS[precision], rows_at=S)
    t_setup = time.perf_counter() - t0
    if progress is not None:       # the first pass, then one a CG iteration
        share_of_run = _share_of_run(blocks, rows.n_features, rows.n_outputs, iterations)
        blocks.report = lambda done, share: progress(
            {"n_iter": done, "max_iter": iterations, "fraction": share_of_run(done, share),
             "n_kernel_evals": blocks.n_evals})
    floor = BREAKDOWN_FLOOR[blocks.work]
    r = blocks.apply(None, True) / n
    if not np.all(np.isfinite(r)):
        raise ValueError("the kernel values of the rows and the centres are not "
                         "finite (gamma too large for the data?)")
    if subsample is None:
        # CG on B^T H B beta = B^T K_nM^T Y / n, alpha = B beta (B = T^{-1} A^{-1})
        def B(u):                        # T^{-1} A^{-1} u
            return fac.solve_T(fac.solve_A(u))

        def BHB(u):
            v = fac.solve_A(u)
            z = blocks.apply(fac.solve_T(v), None)
            z /= n
            return fac.solve_At(fac.solve_T(z, "T") + lam * v)

        r = fac.solve_At(fac.solve_T(r, "T"))
        t_first = time.perf_counter() - t0 - t_setup     # the blocks that are kept
        beta, residual, done, breakdown = _conjugate_gradient(BHB, r, iterations, user, B,
                                                              floor=floor)
        alpha = B(beta)
    else:
        # preconditioned CG on H alpha = K_nM^T Y / n; K_MM u is (K_nM u) at the centres
        def H(u):
            z, at = blocks.apply(u, None)
            z /= n
            z += lam * at
            return z

        t_first = time.perf_counter() - t0 - t_setup
        alpha, residual, done, breakdown = _conjugate_gradient(H, r, iterations, user,
                                                               lambda a: a, pre, floor)
    blocks.report = None        # (the closure refers to the blocks: no cycle kept)
    return alpha, {
        "n_iter": done,
        "epochs": done,
        "relative_residual": residual,
        "breakdown": breakdown,
        "cached_blocks": blocks.keep,
        "row_blocks": len(blocks.starts),
        "n_kernel_evals": int(blocks.n_evals + (p * p if subsample is None else
                                                 subsample * (subsample + p)
                                                 + p * RESIDUAL_BLOCK)),
        "setup_seconds": t_setup,
        "first_pass_seconds": t_first,
        "precision": precision,
        "blocks": blocks,
    }


def _share_of_run(blocks, d, c, iterations):
    """The share of a run's work done after ``share`` of pass ``done`` (0:
    the first pass), for the time left: a kernel value costs about d
    multiply-adds to compute, c to use in a product.  The first pass computes
    every block and makes one product; each iteration makes two and computes
    the blocks the cache does not keep (so its ETA is not the first pass's)."""
    n = len(blocks.starts)
    first = n * (d + c)
    later = n * 2 * c + (n - blocks.keep) * d
    total = first + iterations * later

    def share_of_run(done, share):
        work = share * first if done == 0 else first + (done - 1 + share) * later
        return min(1.0, work / total)
    return share_of_run


def target_spread(Y):
    """Each output's spread (its standard deviation; else its rms, at least 1),
    the scale of the drift check."""
    spread = np.std(Y, axis=0)
    return np.where(spread > 0, spread, np.maximum(np.sqrt(np.mean(Y * Y, axis=0)), 1.0))


def _drift(error, spread):
    """How far the low precision moved the fit: the largest over outputs of
    the first row block's rms(K alpha - K~ alpha) (``_RowBlocks.first_block_error``)
    over the target's spread (:func:`target_spread`)."""
    return float(np.max(error / spread))
