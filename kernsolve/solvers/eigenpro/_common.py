"""What EigenPro's two modes (the kernel expansion, ``train.py``, and random
features, ``features.py``) and its models (``model.py``) share: kernel blocks
through the kernel engine, the top eigensystem of the subsample, the paper's
step size, the epoch order and the divergence check, with their constants.

It imports nothing of the package above it, so ``train`` -> ``model`` ->
``features`` -> ``_common`` only points downward.
"""
import math
import time

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from ..._constants import BOUNDED_KERNELS, KERNEL_TABLE, LINEAR
from ..._core import _kernel_matrix
from ..._kernels import as_canonical, sparse_worth_densifying
from ..._random import normal, random_u64
from ..._sparse import Csr, issparse, select_rows, to_scipy
from ..._threads import one_blas_thread

__all__ = ["KernelBlocks", "top_eigensystem", "step_size", "epoch_order", "check_diverged",
           "EpochProgress", "announce_cost", "RANK_RTOL", "AUTO_RTOL"]

DELTA = 0.1               # failure probability of the step-size bound
# An eigenvalue of K_S/M below RANK_RTOL * the largest is numerical noise: it
# cannot be lambda_{k+1} (the step would be ~1/noise).
RANK_RTOL = 1e-8
# The default k stops earlier, where the subsample's eigenvalues are still far
# from noise (an acceleration lambda_1/lambda_{k+1} up to 1e6).
AUTO_RTOL = 1e-6
DIVERGED = 1e4            # batch loss / initial loss that counts as divergence
# Randomized eigensolver (above RSVD_MIN_M): oversampling and power steps.
# Four power steps give the top k+1 eigenvalues of a Gaussian kernel matrix
# to < 1% (Fashion-MNIST, M = 4800, k = 160: 0.7%, lambda_{k+1} 0.6% low), in
# a tenth of eigh's time; tests/test_eigenpro.py checks it against eigh.
RSVD_MIN_M = 2000
RSVD_MIN_OVERSAMPLE = 20
RSVD_POWER = 4
# Evaluations (kernel values or random features) times the input width above
# which a run says what it will cost before it starts: the work of minutes,
# not seconds (a9a's kernel expansion with the default 10 epochs: 1.3e12).
ANNOUNCE_WORK = 1e10


# --------------------------------------------------------------------------
# kernel blocks through the kernel engine
# --------------------------------------------------------------------------

class KernelBlocks:
    """K(rows, centres) blocks on canonical data, bit-identical for any thread count.

    ``densify``: whether sparse rows are made dense for a BLAS kernel (None:
    as :func:`densifies` decides from X itself; a part of a larger X takes
    the whole's decision).  X None: an engine for given blocks only (``block``)."""

    def __init__(self, X, kernel_type, gamma, degree, coef0, n_threads, densify=None):
        Xc = None if X is None else as_canonical(X)
        if issparse(Xc):
            if densify is None:
                densify = densifies(Xc.nnz, Xc.shape, kernel_type)
            if densify:
                Xc = np.ascontiguousarray(Xc.toarray())
        self.X = Xc
        self.code = int(kernel_type)
        self.gamma = float(gamma)
        self.degree = int(degree)
        self.coef0 = float(coef0)
        self.n_threads = int(n_threads)
        self.n_evals = 0

    @property
    def n_rows(self):
        return self.X.shape[0]

    def rows(self, idx):
        """Canonical copy of the rows ``idx``."""
        if issparse(self.X):
            # (scipy's kind for a scipy matrix: diagonal() multiplies its rows)
            R = select_rows(self.X, idx)
            return as_canonical(R if isinstance(self.X, Csr) else to_scipy(R))
        return np.ascontiguousarray(self.X[idx])

    def row_range(self, start, stop):
        """Canonical rows ``start .. stop-1`` (a view of dense data)."""
        if issparse(self.X):
            return as_canonical(select_rows(self.X, slice(start, stop)))
        return self.X[start:stop]

    def block(self, A, B, row_independent=False):
        """K(A, B) for canonical A, B (dense: dgemm tiles; else the core's loops).

        A is the small operand (a batch or a block of queries); when its
        storage differs from B's, A is converted to B's.  ``row_independent``
        (prediction): a row's values do not depend on the other rows of A
        (``kernsolve.kernel_matrix``'s option of that name).
        """
        self.n_evals += A.shape[0] * B.shape[0]
        if issparse(A) and not issparse(B):
            A = np.ascontiguousarray(A.toarray())
        elif issparse(B) and not issparse(A):
            A = as_canonical(sp.csr_matrix(A))
        if not issparse(B) and KERNEL_TABLE[self.code].blas:
            with one_blas_thread():
                return _kernel_matrix._kernel_matrix(A, B, self.code, self.degree, self.gamma,
                                              self.coef0, self.n_threads, True,
                                              bool(row_independent))
        return _kernel_matrix._kernel_matrix(A, B, self.code, self.degree, self.gamma, self.coef0,
                                      self.n_threads)

    def diagonal(self, idx):
        """k(x_i, x_i) for the rows ``idx`` (cheap closed forms)."""
        if self.code in BOUNDED_KERNELS:      # k(x, x) = 1
            return np.ones(len(idx))
        R = self.rows(idx)
        sq = np.asarray(R.multiply(R).sum(axis=1)).ravel() if issparse(R) \
            else np.einsum("ij,ij->i", R, R)
        if self.code == LINEAR:
            return sq
        return (self.gamma * sq + self.coef0) ** self.degree


def densifies(nnz, shape, kernel_type):
    """Whether sparse training rows of this shape and nnz are made dense (a
    BLAS kernel, dense enough, small enough): the kernel engine's rule."""
    return bool(KERNEL_TABLE[kernel_type].blas) and sparse_worth_densifying((nnz, shape))


# --------------------------------------------------------------------------
# the eigensystem of the subsample and the step size
# --------------------------------------------------------------------------

def top_eigensystem(K_S, k, method="auto", seed=0):
    """Top k+1 eigenvalues (descending) of ``K_S / M`` and the top k eigenvectors.

    Parameters
    ----------
    K_S : ndarray of shape (M, M)
        The subsample kernel matrix (symmetric).
    k : int
    method : {"auto", "eigh", "randomized"}
        ``"eigh"``: LAPACK's symmetric eigensolver on the requested index
        range (exact, ``O(M^3)``).  ``"randomized"``: subspace iteration
        (Halko, Martinsson & Tropp, the paper's RSVD) on ``k + 1 + p`` random
        directions with ``RSVD_POWER`` power steps and a Rayleigh-Ritz
        projection, ``O(M^2 (k + p))``; the directions are normal draws of
        the seed's "sampling" stream, so it is reproducible.  ``"auto"``:
        randomized when ``M > RSVD_MIN_M`` and ``k + 1 + p < M / 4``.
    seed : int
        Seed of the random directions.

    Returns
    -------
    s : ndarray of shape (k+1,)
    V : ndarray of shape (M, k), orthonormal columns
    """
    M = K_S.shape[0]
    width = k + 1 + max(RSVD_MIN_OVERSAMPLE, (k + 1) // 2)
    if method == "auto":
        method = "randomized" if M > RSVD_MIN_M and 4 * width < M else "eigh"
    with one_blas_thread():
        if method == "randomized":
            # Counters past 2**40 of the "sampling" stream: disjoint from the
            # subsample's draws (which use counters below n).
            Q = normal(seed, "sampling", start=1 << 40, count=M * width).reshape(M, width)
            for _ in range(RSVD_POWER + 1):
                Q, _r = np.linalg.qr(K_S @ Q)
            B = Q.T @ (K_S @ Q)
            w, U = np.linalg.eigh((B + B.T) / 2)
            w, U = w[::-1][:k + 1], U[:, ::-1]
            V = np.ascontiguousarray((Q @ U)[:, :k])
        elif method == "eigh":
            w, V = scipy.linalg.eigh(K_S, subset_by_index=[M - k - 1, M - 1], driver="evr",
                                     check_finite=False)
            w = w[::-1]
            V = np.ascontiguousarray(V[:, ::-1][:, :k])
        else:
            raise ValueError(f"unknown eigensolver {method!r} (use 'eigh' or 'randomized')")
    return w / M, V


def step_size(lam, kappa, m, M, delta=DELTA):
    """The paper's step size: 1 / (Theorem 1's high-probability bound on ||P H_m||).

    Parameters
    ----------
    lam : float
        lambda_{k+1} of the (preconditioned) covariance, estimated on the subsample.
    kappa : float
        Largest squared RKHS norm of a (preconditioned) feature vector.
    m : int
        Mini-batch size.
    M : int
        Subsample size (the dimension in the bound's logarithm).
    """
    L = math.log(2.0 * M / delta)
    bound = lam + 2.0 * (lam + kappa) * L / (3.0 * m) + math.sqrt(2.0 * lam * kappa * L / m)
    return 1.0 / bound


# --------------------------------------------------------------------------
# the iteration's order and its divergence check
# --------------------------------------------------------------------------

def epoch_order(n, seed, epoch):
    """The epoch's row order: sort by 64-bit draws of the "shuffle" stream.

    A pure function of (seed, epoch); draws n*epoch .. n*(epoch+1)-1, so
    every epoch has its own independent permutation.
    """
    keys = random_u64(seed, "shuffle", start=n * epoch, count=n)
    return np.argsort(keys, kind="stable").astype(np.intp)


def check_diverged(worst, start_loss, weights, epoch, step):
    """Raise when an epoch's largest batch loss ran away from the start.

    A converging run keeps the batch loss near or below its start, mean(Y^2);
    DIVERGED times that (or NaN) means the step is too large.
    """
    if not (worst <= DIVERGED * start_loss) or not np.all(np.isfinite(weights)):
        raise ValueError(f"EigenPro diverged in epoch {epoch + 1} (batch loss "
                         f"{worst:.3g}, initial {start_loss:.3g}); use a smaller --step "
                         f"(was {step:.4g}) or a larger --batch-size")


class UntimedCallback:
    """The user's per-epoch callback, called outside the solver's clock.

    ``stop(epoch, coef)`` calls ``callback(epoch, coef())`` when a callback
    was given (``coef`` is a function, so the coefficients are only formed
    for a caller) and says whether it asked to stop (returned True);
    ``seconds`` is the time spent in it, which the solvers leave out of their
    own ``seconds``.
    """

    def __init__(self, callback):
        self.callback = callback
        self.seconds = 0.0

    def stop(self, epoch, coef):
        if self.callback is None:
            return False
        t = time.perf_counter()
        answer = self.callback(epoch, coef())
        self.seconds += time.perf_counter() - t
        return answer is True


# --------------------------------------------------------------------------
# the progress line and the cost said before the work
# --------------------------------------------------------------------------

class EpochProgress:
    """The progress line of the SGD loops (the kernel expansion, the random
    features): the epoch, the batch step out of all planned steps, and the
    evaluations so far.  Called after every batch; :class:`Progress` keeps
    only about one a second, so a call costs a clock read.

    ``progress``: a :class:`kernsolve._progress.Progress`, or None (quiet);
    ``counter``: ``"n_kernel_evals"`` or ``"n_feature_evals"``.
    """

    def __init__(self, progress, epochs, n, m, counter):
        self.progress = progress
        self.epochs = int(epochs)
        self.max_iter = self.epochs * -(-int(n) // int(m))   # ceil(n / m) batches an epoch
        self.counter = counter

    def __call__(self, epoch, n_steps, evals):
        if self.progress is not None:
            self.progress({"phase": f"epoch {epoch + 1}/{self.epochs}", "n_iter": n_steps,
                           "max_iter": self.max_iter, self.counter: int(evals)})


def announce_cost(progress, evals, width, text):
    """Say ``text`` (what the run will cost) before the work when the run is
    long: ``evals`` evaluations of ``width`` input features reach
    ANNOUNCE_WORK.  Nothing when quiet (``progress`` None)."""
    if progress is not None and float(evals) * max(int(width), 1) >= ANNOUNCE_WORK:
        progress.announce(text)
