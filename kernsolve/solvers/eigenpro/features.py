"""EigenPro on random Fourier features (``--features D``): the paper's Table 1.

The feature map is DSG's (``kernsolve._features.random_features``), scaled by
``1/sqrt(D)`` so that ``phi(x) . phi(y)`` approximates ``k(x, y)``; features
are regenerated from the seed for every mini-batch and at prediction, never
stored.  The model is linear in the features, ``f(x) = phi(x)^T W`` with
``W`` of shape (D, n_outputs), fitted on the square loss
``(1/2n) sum_i ||phi(x_i)^T W - y_i||^2`` by preconditioned mini-batch SGD:

1. The covariance ``H = (1/n) sum_i phi(x_i) phi(x_i)^T`` is estimated on the
   subsample S (M rows, stream "sampling"): top k+1 eigenpairs of
   ``Z_S^T Z_S / M`` (or, when D > M, of the M x M Gram matrix, mapped back).
2. ``P = I - E diag(1 - tau s_{k+1}/s_i) E^T`` (Table 1, line 2).
3. Each batch: ``G = Z_B^T (Z_B W - Y_B) / m``; ``W -= eta P G``.
4. ``eta`` by the same rule as in the RKHS (section 3.1), with
   ``kappa = max_j ||P^{1/2} phi(x_j)||^2`` over the subsample.

k = 0 is plain SGD on the random features (the paper's RF/DSGD column).
"""
import time

import numpy as np

from ._common import (AUTO_RTOL, RANK_RTOL, EpochProgress, announce_cost, check_diverged,
                      epoch_order, step_size, top_eigensystem, UntimedCallback)
from ..._constants import FOURIER_KERNELS
from ..._features import feature_directions
from ..._kernels import as_canonical, tiled_product
from ..._random import permutation
from ..._sparse import issparse
from ..._threads import one_blas_thread

__all__ = ["fit_features", "feature_values"]


class FeatureMap:
    """``phi(X) = sqrt(2/D) cos(X omega^T + b)``: DSG's features 0..D-1, scaled.

    The directions and phases are regenerated from the seed
    (``kernsolve._features.feature_directions``) once per map, then every
    block of rows is one dgemm (on one BLAS thread: the same bits for any
    thread count) and a cosine.  The values equal
    ``random_features(X, D) / sqrt(D)`` to rounding.
    """

    def __init__(self, n_features, D, kernel_type, gamma, seed):
        omega, phase = feature_directions(n_features, 0, D, kernel=int(kernel_type),
                                          gamma=gamma, seed=seed)
        self.omega_t = np.ascontiguousarray(omega.T)
        self.phase = phase
        self.scale = np.sqrt(2.0 / D)

    def __call__(self, X, row_independent=False):
        """phi(X); ``row_independent`` (prediction): a row's features depend on
        that row only (``kernsolve._kernels.tiled_product``)."""
        if row_independent and not issparse(X):
            Z = tiled_product(X, self.omega_t)
        else:
            with one_blas_thread():
                Z = X @ self.omega_t
        Z = np.asarray(Z)
        Z += self.phase
        np.cos(Z, out=Z)
        Z *= self.scale
        return Z


def feature_values(X, D, kernel_type, gamma, seed, n_jobs=None):
    """``phi(X)``, shape (n, D) (see :class:`FeatureMap`)."""
    return FeatureMap(X.shape[1], D, kernel_type, gamma, seed)(X)


def _rows(X, idx):
    return as_canonical(X[idx]) if issparse(X) else np.ascontiguousarray(X[idx])


def _eigensystem(Z_S, k, seed=0):
    """Top k+1 eigenvalues of Z_S^T Z_S / M and the top k unit eigenvectors (D, k)."""
    M, D = Z_S.shape
    with one_blas_thread():
        if D <= M:
            C = Z_S.T @ Z_S
            s, E = top_eigensystem(C, k, seed=seed)      # eigenvalues of C / D
            s = s * (D / M)
        else:
            s, U = top_eigensystem(Z_S @ Z_S.T, k, seed=seed)   # of G / M
            # e_i = Z_S^T u_i / sqrt(M s_i) has unit norm and C e_i = s_i e_i
            E = np.ascontiguousarray(Z_S.T @ U / np.sqrt(M * np.maximum(s[:k], 1e-300)))
    return s, E


def fit_features(Xc, Y, *, kernel_type, gamma, options, seed, n_jobs, n_threads,
                 callback=None, progress=None):
    """Fit W (D, n_outputs) by EigenPro (k > 0) or plain SGD (k = 0) on random features.

    ``progress``: the progress line (a ``kernsolve._progress.Progress``), or None.

    Returns
    -------
    W : ndarray (D, n_outputs) or (D,) for 1-D Y
    eigenvalues : ndarray (k+1,)
    subsample : ndarray (M,)
    stats : dict
    """
    t0 = time.perf_counter()
    if int(kernel_type) not in FOURIER_KERNELS:
        raise ValueError("--features: random Fourier features exist for the rbf (-t 2) "
                         "and laplacian (-t 5) kernels only")
    n = Xc.shape[0]
    D = options["features"]
    M, m, tau = options["subsample"], options["batch_size"], options["damping"]
    k = options["eigen_directions"]
    if k >= D:
        if options.get("auto_k"):
            k = D - 1
        else:
            raise ValueError(f"--eigen-directions: k = {k} must be smaller than the number "
                             f"of features D = {D}")
    Y = np.asarray(Y, dtype=np.float64)
    single = Y.ndim == 1
    Y = np.ascontiguousarray(Y.reshape(n, -1))

    epochs = options["epochs"]
    evals = (M + epochs * n) * D
    announce_cost(progress, evals, Xc.shape[1],
                  f"{D} random features on n = {n} rows: {epochs} epochs, about {evals:.2g} "
                  f"feature evaluations of {Xc.shape[1]} features")
    report = EpochProgress(progress, epochs, n, m, "n_feature_evals")
    feature_map = FeatureMap(Xc.shape[1], D, kernel_type, gamma, seed)

    def phi(idx):
        return feature_map(_rows(Xc, idx))

    S = np.sort(permutation(n, seed, "sampling")[:M]).astype(np.intp)
    Z_S = phi(S)
    s, E = _eigensystem(Z_S, k, seed)
    if options.get("auto_k"):
        rank = int(np.count_nonzero(s > AUTO_RTOL * max(s[0], 0.0)))
        if rank < k + 1:
            k = max(rank - 1, 0)
            s, E = s[:k + 1], E[:, :k]
    if not s[0] > 0 or not s[k] > RANK_RTOL * s[0]:
        raise ValueError(f"--eigen-directions: k = {k} reaches the numerical rank of the "
                         f"feature covariance on the subsample (eigenvalue {k + 1} is "
                         f"{s[k]:.3g}, largest {s[0]:.3g}); use a smaller k")
    lam = float(s[k])
    shrink = 1.0 - tau * lam / s[:k]
    proj = Z_S @ E
    kappa = float(max(np.max(np.einsum("ij,ij->i", Z_S, Z_S) - (proj * proj) @ shrink), lam))
    t_setup = time.perf_counter() - t0
    steps = {}

    def eta_for(b):
        if options["step"] is not None:
            return options["step"]
        if b not in steps:
            steps[b] = step_size(lam, kappa, b, M)
        return steps[b]

    W = np.zeros((D, Y.shape[1]))
    start_loss = max(float(np.mean(Y * Y)), np.finfo(float).tiny)
    n_steps, epochs_run = 0, 0
    user = UntimedCallback(callback)
    n_seen = 0
    for epoch in range(epochs):
        order = epoch_order(n, seed, epoch)
        worst = 0.0
        for start in range(0, n, m):
            B = order[start:start + m]
            n_seen += B.size
            Z = phi(B)
            with one_blas_thread():
                R = Z @ W
                R -= Y[B]
                G = Z.T @ R
                G *= 1.0 / B.size
                if k:
                    G -= E @ (shrink[:, None] * (E.T @ G))
            W -= eta_for(B.size) * G
            n_steps += 1
            worst = max(worst, float(np.einsum("ij,ij->", R, R)) / R.size)
            report(epoch, n_steps, (M + n_seen) * D)
        check_diverged(worst, start_loss, W, epoch, eta_for(m))
        epochs_run = epoch + 1
        if user.stop(epoch + 1, lambda: W[:, 0] if single else W):
            break
    stats = {
        "n_iter": n_steps, "epochs": epochs_run, "eigen_directions": k, "subsample": M,
        "batch_size": m, "damping": tau, "step": eta_for(m),
        "step_rule": options["step"] is None, "kappa": kappa, "lambda_1": float(s[0]),
        "lambda_k1": lam, "features": D,
        "n_feature_evals": int((M + n * epochs_run) * D),
        "setup_seconds": t_setup,
        "seconds": time.perf_counter() - t0 - user.seconds,
        "n_threads": n_threads, "gamma": gamma,
    }
    return (W[:, 0].copy() if single else W), s.copy(), S, stats
