"""EigenPro: preconditioned mini-batch SGD for kernel least squares.

``kernsolve.train(y, X, "--solver eigenpro ...")`` fits a kernel expansion
``f(x) = sum_i alpha_i k(x_i, x)`` over the training points (``alpha`` has one
column per output: one-hot columns for classification, one for regression) by
minimising the square loss ``(1/2n) sum_i ||f(x_i) - y_i||^2`` without a
regulariser, with the EigenPro iteration of Ma & Belkin, "Diving into the
shallows" (``papers/eigenpro-diving-into-the-shallows.md``, Table 2).
``--solver kernel-sgd`` is the same code with no eigen-directions (k = 0):
plain mini-batch kernel SGD, the paper's Pegasos baseline, so the two can be
compared batch for batch.

The iteration (notation of Table 2, with H = (1/n) sum_i k(x_i,.) (x) k(x_i,.)):

1. A subsample S of M training points (seeded, stream ``"sampling"``); the
   top k+1 eigenpairs of ``K_S / M`` (``scipy.linalg.eigh``), eigenvalues
   ``s_1 >= ... >= s_{k+1}`` (estimates of H's) and unit eigenvectors V.
2. The preconditioner ``P = I - sum_{i<=k} (1 - tau s_{k+1}/s_i) e_i (x) e_i``
   with e_i the eigenfunctions of the subsample covariance.  On the
   coefficients it acts through the subsample only:
   ``D = V diag((1 - tau s_{k+1}/s_i) / (M s_i)) V^T``.
3. Each step, a batch B of m rows (the epoch's seeded permutation, stream
   ``"shuffle"``): ``G = K(B, all) alpha - Y_B``; ``alpha_B -= eta/m G``;
   ``alpha_S += eta/m D K(B, S)^T G``.  The kernel block comes from the kernel
   engine (tiles of single-threaded dgemm run by ``prange``), so the result is
   bit-identical for any thread count; the small products run on one BLAS
   thread for the same reason.
4. The step size (section 3.1, Theorem 1): ``eta = 1 / bound(m)`` with
   ``bound(m) = l + 2 (l + kappa) L / (3 m) + sqrt(2 l kappa L / m)``,
   ``l = s_{k+1}``, ``L = ln(2 M / delta)`` (delta = 0.1; M stands for the
   dimension the subsample resolves) and ``kappa`` the largest
   ``||P^{1/2} k(x_j, .)||^2`` over the subsample (the theorem applied to the
   preconditioned feature map, as the paper does).  With k = 0 it is the same
   rule with ``l = s_1`` and ``kappa = max k(x_j, x_j)``.

``exact_kernel_ridge`` solves ``(K + n lam I) alpha = Y`` by Cholesky: the
closed form the iteration approaches (lam = 0) and the reference of the
benchmark.

Models: regression gives a LIBSVM epsilon-SVR-shaped :class:`~kernsolve.Model`
(centres as SVs, ``sv_coef = alpha``, ``rho = 0``) that LIBSVM's tools read;
classification gives an :class:`EigenProModel` written in kernsolve's small
text format (first line ``kernsolve_model eigenpro``, see ``doc/eigenpro.md``).
"""
import math
import numbers
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from ._params import KERNELS, SVM_TYPES, Parameters, option_key

__all__ = ["EigenProModel", "eigenpro_options", "fit_eigenpro", "exact_kernel_ridge",
           "step_size", "train_eigenpro", "decision_values", "predict_eigenpro",
           "format_eigenpro_model", "parse_eigenpro_model", "MAGIC"]

MAGIC = "kernsolve_model eigenpro"

# Paper's defaults (section 6): m = 2^8, M = 4800, k = 160; tau = 1 in the RKHS.
DEFAULT_BATCH = 256
DEFAULT_SUBSAMPLE = 4800
DEFAULT_K = 160
DEFAULT_DAMPING = 1.0
DEFAULT_EPOCHS = 10
DELTA = 0.1               # failure probability of the step-size bound
# An eigenvalue of K_S/M below RANK_RTOL * the largest is numerical noise: it
# cannot be lambda_{k+1} (the step would be ~1/noise).
RANK_RTOL = 1e-8
# The default k stops earlier, where the subsample's eigenvalues are still far
# from noise (an acceleration lambda_1/lambda_{k+1} up to 1e6).
AUTO_RTOL = 1e-6
BLOCK_BYTES = 32 * 2 ** 20  # kernel values per block at prediction
DIVERGED = 1e4            # batch loss / initial loss that counts as divergence
# Randomized eigensolver (above RSVD_MIN_M): oversampling and power steps.
# Four power steps give the top k+1 eigenvalues of a Gaussian kernel matrix
# to < 1% (Fashion-MNIST, M = 4800, k = 160: 0.7%, lambda_{k+1} 0.6% low), in
# a tenth of eigh's time; tests/test_eigenpro.py checks it against eigh.
RSVD_MIN_M = 2000
RSVD_MIN_OVERSAMPLE = 20
RSVD_POWER = 4

C_SVC, EPSILON_SVR = 0, 3
_PSD_KERNELS = (0, 1, 2, 5)   # linear, polynomial (coef0 >= 0), rbf, laplacian


# --------------------------------------------------------------------------
# options
# --------------------------------------------------------------------------

def _int_option(value, name, low, what):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) \
            or not math.isfinite(float(value)) or float(value) != int(value):
        raise ValueError(f"--{name}: expected an integer, got {value!r}")
    value = int(value)
    if value < low:
        raise ValueError(f"--{name}: {what}, got {value}")
    return value


def _float_option(value, name):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) \
            or not math.isfinite(float(value)):
        raise ValueError(f"--{name}: expected a finite number, got {value!r}")
    return float(value)


def eigenpro_options(param, n_samples=None):
    """The EigenPro / kernel-SGD options of ``param`` (validated, defaults filled).

    Parameters
    ----------
    param : Parameters
        ``--solver eigenpro`` or ``kernel-sgd``; options in ``param.extra``.
    n_samples : int, optional
        Training set size: checks ``M <= n`` and caps the defaults.

    Returns
    -------
    dict
        ``eigen_directions`` (int k >= 0), ``subsample`` (M), ``batch_size``
        (m), ``damping`` (tau in (0, 1]), ``epochs`` (int >= 1), ``step``
        (float > 0 or None for the paper's rule), ``features`` (int or None),
        ``auto_k`` (True when k was not given: it is then capped by M and by
        the numerical rank of the subsample kernel matrix).

    Raises
    ------
    ValueError
        One message naming the option: k >= M, M > n, step <= 0, damping
        outside (0, 1], ...
    """
    extra = {option_key(k): v for k, v in param.extra.items()}
    sgd = param.solver == "kernel-sgd"
    out = {"auto_k": False}
    n = n_samples
    if "subsample" in extra:
        M = _int_option(extra["subsample"], "subsample", 1, "the subsample size M must be >= 1")
        if n is not None and M > n:
            raise ValueError(f"--subsample: M = {M} is larger than the training set "
                             f"(n = {n}); use M <= n")
    else:
        M = DEFAULT_SUBSAMPLE if n is None else min(DEFAULT_SUBSAMPLE, n)
    out["subsample"] = M
    if sgd:
        if "eigen_directions" in extra or "damping" in extra:
            raise ValueError("--solver kernel-sgd has no eigen-directions; it is EigenPro "
                             "with k = 0 (use --solver eigenpro for a preconditioner)")
        k = 0
    elif "eigen_directions" in extra:
        k = _int_option(extra["eigen_directions"], "eigen-directions", 0,
                        "the number of eigen-directions k must be >= 0")
        if k >= M:
            raise ValueError(f"--eigen-directions: k = {k} must be smaller than the subsample "
                             f"size M = {M} (the preconditioner needs the (k+1)-th "
                             "eigenvalue of the subsample kernel matrix)")
    else:
        k = min(DEFAULT_K, M - 1)
        out["auto_k"] = True
    out["eigen_directions"] = k
    if "batch_size" in extra:
        m = _int_option(extra["batch_size"], "batch-size", 1, "the mini-batch size must be >= 1")
        if n is not None and m > n:
            raise ValueError(f"--batch-size: m = {m} is larger than the training set "
                             f"(n = {n})")
    else:
        m = DEFAULT_BATCH if n is None else min(DEFAULT_BATCH, n)
    out["batch_size"] = m
    tau = DEFAULT_DAMPING
    if "damping" in extra:
        tau = _float_option(extra["damping"], "damping")
        if not 0 < tau <= 1:
            raise ValueError(f"--damping: tau must be in (0, 1], got {tau:g}")
    out["damping"] = tau
    epochs = DEFAULT_EPOCHS
    if "epochs" in extra:
        epochs = _int_option(extra["epochs"], "epochs", 1, "the number of epochs must be >= 1")
    out["epochs"] = epochs
    step = None
    if "step" in extra:
        step = _float_option(extra["step"], "step")
        if not step > 0:
            raise ValueError(f"--step: the step size must be > 0, got {step:g}")
    out["step"] = step
    features = None
    if "features" in extra:
        features = _int_option(extra["features"], "features", 1,
                               "the number of random features must be >= 1")
    out["features"] = features
    return out


def _check_kernel(kernel_type, coef0):
    if kernel_type == 3:
        raise ValueError("EigenPro needs a positive semi-definite kernel: the sigmoid "
                         "kernel (-t 3) is not PSD (its subsample kernel matrix has "
                         "negative eigenvalues); use -t 0, 1, 2 or 5")
    if kernel_type == 4:
        raise ValueError("EigenPro computes kernel values between new centres and "
                         "batches; a precomputed kernel (-t 4) is not supported")
    if kernel_type == 1 and coef0 < 0:
        raise ValueError(f"EigenPro needs a positive semi-definite kernel: the polynomial "
                         f"kernel with coef0 = {coef0:g} < 0 is not PSD in general; use "
                         "-r 0 or larger")
    if kernel_type not in _PSD_KERNELS:
        raise ValueError(f"unknown kernel type {kernel_type}")


# --------------------------------------------------------------------------
# kernel blocks through the kernel engine
# --------------------------------------------------------------------------

class _Kernel:
    """K(rows, centres) blocks on canonical data, bit-identical for any thread count."""

    def __init__(self, X, kernel_type, gamma, degree, coef0, n_threads):
        from ._kernels import _worth_densifying, as_canonical
        Xc = as_canonical(X)
        if sp.issparse(Xc) and kernel_type != 5 and _worth_densifying(Xc, None):
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
        from ._kernels import as_canonical
        if sp.issparse(self.X):
            return as_canonical(self.X[idx])
        return np.ascontiguousarray(self.X[idx])

    def block(self, A, B):
        """K(A, B) for canonical A, B (dense: dgemm tiles; else the core's loops).

        A is the small operand (a batch or a block of queries); when its
        storage differs from B's, A is converted to B's.
        """
        from ._core import _kernel
        from ._kernels import _blas_controller, as_canonical
        self.n_evals += A.shape[0] * B.shape[0]
        if sp.issparse(A) and not sp.issparse(B):
            A = np.ascontiguousarray(A.toarray())
        elif sp.issparse(B) and not sp.issparse(A):
            A = as_canonical(sp.csr_matrix(A))
        if not sp.issparse(B) and self.code != 5:
            controller = _blas_controller()
            if controller is not None:
                with controller.limit(limits=1, user_api="blas"):
                    return _kernel._kernel_matrix(A, B, self.code, self.degree, self.gamma,
                                                  self.coef0, self.n_threads, True)
        return _kernel._kernel_matrix(A, B, self.code, self.degree, self.gamma, self.coef0,
                                      self.n_threads)

    def diagonal(self, idx):
        """k(x_i, x_i) for the rows ``idx`` (cheap closed forms)."""
        if self.code in (2, 5):
            return np.ones(len(idx))
        R = self.rows(idx)
        sq = np.asarray(R.multiply(R).sum(axis=1)).ravel() if sp.issparse(R) \
            else np.einsum("ij,ij->i", R, R)
        if self.code == 0:
            return sq
        return (self.gamma * sq + self.coef0) ** self.degree


def _one_blas_thread():
    """A context that keeps numpy/scipy BLAS on one thread (determinism), or a no-op."""
    from ._kernels import _blas_controller
    controller = _blas_controller()
    if controller is None:  # pragma: no cover - threadpoolctl ships with scikit-learn
        import contextlib
        return contextlib.nullcontext()
    return controller.limit(limits=1, user_api="blas")


# --------------------------------------------------------------------------
# the preconditioner and the step size
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
    with _one_blas_thread():
        if method == "randomized":
            from ._random import normal
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


@dataclass
class _Preconditioner:
    subsample: np.ndarray     # (M,) row indices
    eigenvalues: np.ndarray   # (k+1,) of K_S / M, descending
    V: np.ndarray             # (M, k)
    weights: np.ndarray       # (k,) (1 - tau s_{k+1}/s_i) / (M s_i)
    kappa: float

    @property
    def k(self):
        return self.V.shape[1]

    def correction(self, K_BS, G):
        """``D K(B, S)^T G``: the coefficient change on the subsample (M, c)."""
        if self.k == 0:
            return None
        T = self.V.T @ (K_BS.T @ G)
        T *= self.weights[:, None]
        return self.V @ T


def _build_preconditioner(kern, opts, seed):
    from ._random import permutation
    n = kern.n_rows
    M, k, tau = opts["subsample"], opts["eigen_directions"], opts["damping"]
    S = np.sort(permutation(n, seed, "sampling")[:M]).astype(np.intp)
    XS = kern.rows(S)
    K_S = kern.block(XS, XS)
    if not np.all(np.isfinite(K_S)):
        raise ValueError("the kernel matrix of the subsample has non-finite values "
                         "(gamma too large for the data?)")
    s, V = top_eigensystem(K_S, k, opts.get("eigensolver", "auto"), seed)
    if opts.get("auto_k"):
        # Default k: capped by the numerical rank of the subsample kernel matrix.
        rank = int(np.count_nonzero(s > AUTO_RTOL * max(s[0], 0.0)))
        if rank == 0:
            raise ValueError("the subsample kernel matrix is zero: no direction to fit "
                             "(all-zero data with a linear kernel?)")
        if rank < k + 1:
            k = rank - 1
            s, V = s[:k + 1], V[:, :k]
    if not s[0] > 0:
        raise ValueError(f"the subsample kernel matrix has no positive eigenvalue "
                         f"(largest {s[0]:.3g}): the kernel is not positive semi-definite "
                         "on this data")
    if not s[k] > RANK_RTOL * s[0]:
        rank = int(np.count_nonzero(s > RANK_RTOL * s[0]))
        raise ValueError(f"--eigen-directions: k = {k} reaches the numerical rank of the "
                         f"subsample kernel matrix (eigenvalue {k + 1} is {s[k]:.3g}, "
                         f"largest {s[0]:.3g}); use k <= {max(rank - 1, 0)}")
    lam = float(s[k])
    w = (1.0 - tau * lam / s[:k]) / (M * s[:k])
    # kappa: largest ||P^{1/2} k(x_j, .)||^2 over the subsample.  With
    # e_i(x_j) = sqrt(M s_i) V_ji this is K_jj - sum_i (1 - tau l/s_i) M s_i V_ji^2.
    diag = np.diag(K_S).copy()
    if k:
        diag -= (V * V) @ ((1.0 - tau * lam / s[:k]) * M * s[:k])
    kappa = float(max(np.max(diag), lam))
    return _Preconditioner(S, s, V, w, kappa)


# --------------------------------------------------------------------------
# the iteration
# --------------------------------------------------------------------------

@dataclass
class EigenProResult:
    """What :func:`fit_eigenpro` returns."""
    alpha: np.ndarray          # (n, n_outputs)
    eigenvalues: np.ndarray    # (k+1,) of K_S / M
    subsample: np.ndarray      # (M,) row indices
    step: float                # eta for a full batch
    kappa: float
    stats: dict = field(default_factory=dict)


def _epoch_order(n, seed, epoch):
    """The epoch's row order: sort by 64-bit draws of the "shuffle" stream.

    A pure function of (seed, epoch); draws n*epoch .. n*(epoch+1)-1, so
    every epoch has its own independent permutation.
    """
    from ._random import random_u64
    keys = random_u64(seed, "shuffle", start=n * epoch, count=n)
    return np.argsort(keys, kind="stable").astype(np.intp)


def fit_eigenpro(X, Y, *, kernel_type=2, gamma=None, degree=3, coef0=0.0, options=None,
                 seed=0, n_jobs=None, callback=None, _kernel=None):
    """Fit ``alpha`` (n, n_outputs) by EigenPro (k > 0) or plain kernel SGD (k = 0).

    Parameters
    ----------
    X : array-like or sparse matrix, shape (n, d)
        Training points; they are also the centres of the expansion.
    Y : ndarray, shape (n,) or (n, n_outputs)
        Targets (one-hot columns for classification).
    kernel_type, gamma, degree, coef0 : kernel, LIBSVM codes (gamma None = 1/d)
    options : dict
        From :func:`eigenpro_options` (defaults when None).
    seed : int
        Seed of the subsample ("sampling") and of the batch order ("shuffle").
    n_jobs : int or None
        Threads of the kernel engine.
    callback : callable, optional
        ``callback(epoch, alpha)`` after each epoch (1-based); not timed.  If
        it returns True, training stops after that epoch.

    Returns
    -------
    EigenProResult
    """
    from ._kernels import check_kernel_params
    from ._threads import resolve_n_jobs
    t0 = time.perf_counter()
    n_threads = resolve_n_jobs(n_jobs)
    _check_kernel(int(kernel_type), float(coef0))
    if _kernel is None:
        kern = _Kernel(X, kernel_type, 0.0, degree, coef0, n_threads)
        gamma, degree, coef0 = check_kernel_params(gamma, degree, coef0, kern.X.shape[1])
        kern.gamma, kern.degree, kern.coef0 = gamma, degree, coef0
    else:
        kern = _kernel
    n = kern.n_rows
    Y = np.asarray(Y, dtype=np.float64)
    single = Y.ndim == 1
    Y = np.ascontiguousarray(Y.reshape(n, -1))
    if Y.shape[0] != n:
        raise ValueError(f"X has {n} rows but y has {Y.shape[0]}")
    if not np.all(np.isfinite(Y)):
        raise ValueError("y contains NaN or infinity")
    opts = options if options is not None else eigenpro_options(
        Parameters(solver="eigenpro"), n)
    M, m = opts["subsample"], opts["batch_size"]
    if M > n:
        raise ValueError(f"--subsample: M = {M} is larger than the training set (n = {n})")
    if m > n:
        raise ValueError(f"--batch-size: m = {m} is larger than the training set (n = {n})")

    if opts.get("features") is not None:
        from ._eigenpro_features import fit_features
        W, s, S, stats = fit_features(kern.X, Y[:, 0] if single else Y,
                                      kernel_type=kern.code, gamma=kern.gamma, options=opts,
                                      seed=seed, n_jobs=n_jobs, n_threads=n_threads,
                                      callback=callback)
        return EigenProResult(alpha=W, eigenvalues=s, subsample=S, step=stats["step"],
                              kappa=stats["kappa"], stats=stats)
    pre = _build_preconditioner(kern, opts, seed)
    t_setup = time.perf_counter() - t0
    lam = float(pre.eigenvalues[pre.k])
    steps = {}

    def eta_for(b):
        if opts["step"] is not None:
            return opts["step"]
        if b not in steps:
            steps[b] = step_size(lam, pre.kappa, b, M)
        return steps[b]

    alpha = np.zeros_like(Y)
    start_loss = max(float(np.mean(Y * Y)), np.finfo(float).tiny)
    S = pre.subsample
    Xall = kern.X
    n_steps = 0
    epochs_run = 0
    callback_seconds = 0.0
    for epoch in range(opts["epochs"]):
        order = _epoch_order(n, seed, epoch)
        worst = 0.0
        for start in range(0, n, m):
            B = order[start:start + m]
            K_B = kern.block(kern.rows(B), Xall)           # (b, n) kernel engine
            with _one_blas_thread():
                G = K_B @ alpha
                G -= Y[B]
                scale = eta_for(B.size) / B.size
                corr = pre.correction(np.ascontiguousarray(K_B[:, S]), G)
            alpha[B] -= scale * G
            if corr is not None:
                alpha[S] += scale * corr
            n_steps += 1
            worst = max(worst, float(np.einsum("ij,ij->", G, G)) / G.size)
        # A converging run keeps the batch loss near or below its start,
        # mean(Y^2); DIVERGED times that (or NaN) means the step is too large.
        if not (worst <= DIVERGED * start_loss) or not np.all(np.isfinite(alpha)):
            raise ValueError(f"EigenPro diverged in epoch {epoch + 1} (batch loss "
                             f"{worst:.3g}, initial {start_loss:.3g}); use a smaller --step "
                             f"(was {eta_for(m):.4g}) or a larger --batch-size")
        epochs_run = epoch + 1
        if callback is not None:
            tc = time.perf_counter()
            stop = callback(epoch + 1, alpha if not single else alpha[:, 0])
            callback_seconds += time.perf_counter() - tc
            if stop is True:
                break
    seconds = time.perf_counter() - t0 - callback_seconds
    stats = {
        "n_iter": n_steps,
        "epochs": epochs_run,
        "eigen_directions": pre.k,
        "subsample": M,
        "batch_size": m,
        "damping": opts["damping"],
        "step": eta_for(m),
        "step_rule": opts["step"] is None,
        "kappa": pre.kappa,
        "lambda_1": float(pre.eigenvalues[0]),
        "lambda_k1": lam,
        "n_kernel_evals": int(kern.n_evals),
        "setup_seconds": t_setup,
        "seconds": seconds,
        "n_threads": n_threads,
        "gamma": kern.gamma,
    }
    return EigenProResult(alpha=alpha[:, 0].copy() if single else alpha,
                          eigenvalues=pre.eigenvalues.copy(), subsample=S.copy(),
                          step=eta_for(m), kappa=pre.kappa, stats=stats)


def exact_kernel_ridge(X, Y, *, kernel_type=2, gamma=None, degree=3, coef0=0.0, lam=0.0,
                       n_jobs=None):
    """Kernel ridge regression by Cholesky: ``alpha = (K + n lam I)^{-1} Y``.

    The minimiser of ``(1/2n) sum_i ||f(x_i) - y_i||^2 + (lam/2) ||f||_H^2``;
    with ``lam = 0`` the kernel least-squares interpolant that EigenPro and
    kernel SGD converge to.  For small n (the full n x n matrix is formed).

    Raises
    ------
    ValueError
        ``lam < 0``, or K + n lam I is not numerically positive definite
        (duplicate points, a flat kernel): the message suggests ``lam > 0``.
    """
    from ._kernels import check_kernel_params
    from ._threads import resolve_n_jobs
    if isinstance(lam, bool) or not isinstance(lam, numbers.Real) or not math.isfinite(lam) \
            or lam < 0:
        raise ValueError(f"lam must be a finite number >= 0, got {lam!r}")
    kern = _Kernel(X, kernel_type, 0.0, degree, coef0, resolve_n_jobs(n_jobs))
    kern.gamma, kern.degree, kern.coef0 = check_kernel_params(gamma, degree, coef0,
                                                              kern.X.shape[1])
    n = kern.n_rows
    K = kern.block(kern.X, kern.X)
    K[np.diag_indices(n)] += n * lam
    Y = np.asarray(Y, dtype=np.float64)
    try:
        with _one_blas_thread():
            factor = scipy.linalg.cho_factor(K, lower=True, overwrite_a=True,
                                             check_finite=False)
            return scipy.linalg.cho_solve(factor, Y, check_finite=False)
    except np.linalg.LinAlgError:
        raise ValueError(f"the kernel matrix plus n*lam*I (lam = {lam:g}) is not "
                         "numerically positive definite (duplicate rows or a very flat "
                         "kernel); use a larger lam") from None


# --------------------------------------------------------------------------
# models
# --------------------------------------------------------------------------

@dataclass
class EigenProModel:
    """A multi-output kernel expansion: outputs = K(x, centres) @ coef.

    With ``features = D`` it is instead linear in D random Fourier features
    regenerated from ``param.seed``: outputs = phi(x) @ coef, coef (D, n_outputs).

    Attributes
    ----------
    param : Parameters
        Training parameters (gamma resolved).  ``svm_type`` 3 (epsilon_svr)
        marks a regression model (prediction = output 0).
    labels : ndarray of shape (n_outputs,)
        The class of each output column; prediction is the label of the
        largest output (the first one on ties).
    centres : ndarray or csr_matrix, shape (n_centres, n_features), or None
    coef : ndarray of shape (n_centres, n_outputs) or (D, n_outputs)
    stats : dict
        Training statistics (not written to the file).
    features : int or None
        D for a random-feature model.
    """
    param: Parameters
    labels: np.ndarray
    centres: object
    coef: np.ndarray
    stats: dict = field(default_factory=dict)
    features: int = None

    @property
    def n_outputs(self):
        return int(self.coef.shape[1])

    @property
    def n_sv(self):
        return 0 if self.centres is None else int(self.centres.shape[0])

    @property
    def support_vectors(self):
        """The centres, under the name :class:`~kernsolve.Model` uses (empty for features)."""
        return np.zeros((0, 1)) if self.centres is None else self.centres

    @property
    def nr_class(self):
        return int(len(self.labels))

    @property
    def is_probability_model(self):
        return False

    def __repr__(self):
        p = self.param
        parts = [KERNELS[int(p.kernel_type)]]
        if int(p.kernel_type) in (1, 2, 3, 5) and p.gamma is not None:
            parts.append("gamma=%g" % float(p.gamma))
        parts.append("n_outputs=%d" % self.n_outputs)
        if self.features is not None:
            parts.append("features=%d" % self.features)
        else:
            parts.append("n_centres=%d" % self.n_sv)
        return "EigenProModel(" + ", ".join(parts) + ")"

    def save(self, path):
        """Write the model (see :func:`format_eigenpro_model`)."""
        from ._model import save_model
        save_model(path, self)

    def to_text(self):
        """The model file's text (``save_model`` writes it atomically)."""
        return format_eigenpro_model(self)

    @classmethod
    def from_lines(cls, lines, fail):
        """The model from a file's lines (``load_model`` dispatches here)."""
        return parse_eigenpro_model(lines, fail)

    def predict_tuple(self, y, X, options=""):
        """``kernsolve.predict(y, X, model, options)`` for this model."""
        return predict_eigenpro(y, X, self, options)

    def decision_function(self, X, n_jobs=None):
        """The outputs ``K(X, centres) @ coef``, shape (n_samples, n_outputs)."""
        return decision_values(X, self, n_jobs)

    def predict(self, X, n_jobs=None):
        """The label of the largest output for each row (regression: output 0)."""
        return _labels_of(decision_values(X, self, n_jobs), self)


def _labels_of(values, model):
    if int(model.param.svm_type) == EPSILON_SVR:
        return values[:, 0].copy()
    if values.shape[0] == 0:
        return np.empty(0)
    return np.asarray(model.labels, dtype=np.float64)[np.argmax(values, axis=1)]


def decision_values(X, model, n_jobs=None):
    """``K(X, centres) @ coef`` block by block (width rule as LIBSVM's predict)."""
    from ._predict import _prepare_X, _widen
    from ._threads import resolve_n_jobs
    p = model.param
    Xc = _prepare_X(X)
    coef = np.asarray(model.coef, dtype=np.float64)
    if model.features is not None:
        from ._eigenpro_features import FeatureMap
        out = np.empty((Xc.shape[0], coef.shape[1]))
        rows = max(1, BLOCK_BYTES // (8 * model.features))
        phi = FeatureMap(Xc.shape[1], model.features, int(p.kernel_type), float(p.gamma),
                         int(p.seed))
        for start in range(0, Xc.shape[0], rows):
            Z = phi(Xc[start:start + rows])
            with _one_blas_thread():
                out[start:start + rows] = Z @ coef
        return out
    C = model.centres
    width = max(Xc.shape[1], C.shape[1], 1)
    if Xc.shape[1] != width:
        Xc = _widen(Xc, width)
    if C.shape[1] != width:
        C = _widen(C, width)
    kern = _Kernel(C, int(p.kernel_type), float(p.gamma or 0.0), int(p.degree),
                   float(p.coef0), resolve_n_jobs(n_jobs))
    coef = np.asarray(model.coef, dtype=np.float64)
    n = Xc.shape[0]
    out = np.empty((n, coef.shape[1]))
    rows = max(1, BLOCK_BYTES // (8 * max(coef.shape[0], 1)))
    for start in range(0, n, rows):
        stop = min(n, start + rows)
        Xb = Xc[start:stop]
        K = kern.block(_canonical_block(Xb), kern.X)
        with _one_blas_thread():
            out[start:stop] = K @ coef
    return out


def _canonical_block(Xb):
    from ._kernels import as_canonical
    return as_canonical(Xb) if sp.issparse(Xb) else np.ascontiguousarray(Xb, dtype=np.float64)


def _g(x):
    return "%.17g" % x


def format_eigenpro_model(model):
    """The text of kernsolve's EigenPro model file.

    ::

        kernsolve_model eigenpro
        svm_type c_svc
        kernel_type rbf
        degree 3            (polynomial only)
        gamma 0.02          (polynomial, rbf, laplacian)
        coef0 0             (polynomial)
        n_outputs 10
        label 0 1 2 ...     (one label per output column)
        total_sv 60000
        SV
        c_1 ... c_{n_outputs} index:value index:value ...

    Each centre line is LIBSVM's SV line with ``n_outputs`` coefficients;
    numbers are written with ``%.17g`` so a round trip is exact.  A
    random-feature model has ``features D`` and ``seed S`` instead of
    ``total_sv``, then ``W`` and D lines of ``n_outputs`` coefficients.
    """
    from ._model import _format_sv_rows, _label_text
    p = model.param
    t = int(p.kernel_type)
    coef = np.asarray(model.coef, dtype=np.float64)
    C = model.centres
    rows = model.features if model.features is not None else C.shape[0]
    if coef.ndim != 2 or coef.shape[0] != rows:
        raise ValueError(f"model: coef has shape {coef.shape}, expected "
                         f"({rows}, n_outputs)")
    if len(model.labels) != coef.shape[1]:
        raise ValueError(f"model: {len(model.labels)} labels for {coef.shape[1]} outputs")
    if not np.all(np.isfinite(coef)):
        raise ValueError("model: coef has non-finite values")
    lines = [MAGIC, f"svm_type {SVM_TYPES[int(p.svm_type)]}", f"kernel_type {KERNELS[t]}"]
    if t == 1:
        lines.append("degree %d" % int(p.degree))
    if t in (1, 2, 5):
        lines.append("gamma " + _g(float(p.gamma)))
    if t == 1:
        lines.append("coef0 " + _g(float(p.coef0)))
    lines.append("n_outputs %d" % coef.shape[1])
    lines.append(" ".join(["label"] + [_label_text(v) for v in np.asarray(model.labels)]))
    if model.features is not None:
        lines += ["features %d" % model.features, "seed %d" % int(p.seed), "W"]
        return "\n".join(lines + [" ".join(_g(v) for v in row) for row in coef]) + "\n"
    lines.append("total_sv %d" % C.shape[0])
    lines.append("SV")
    csr = sp.csr_matrix(C, dtype=np.float64)
    if not csr.has_canonical_format:
        csr = csr.copy()
        csr.sum_duplicates()
    if not np.all(np.isfinite(csr.data)):
        raise ValueError("model: a centre has non-finite values")
    return "\n".join(lines) + "\n" + "".join(_format_sv_rows(coef.T.copy(), csr))


_HEADER = ("svm_type", "kernel_type", "degree", "gamma", "coef0", "n_outputs", "label",
           "total_sv", "features", "seed")


class _FailOnly:
    """The reader interface of ``kernsolve._model``'s helpers around a ``fail``."""

    def __init__(self, fail):
        self.fail = fail


def parse_eigenpro_model(lines, fail):
    """An :class:`EigenProModel` from the lines of a file whose first line is MAGIC.

    ``fail(lineno, problem)`` raises ModelFormatError
    (``"<file>:<line>: <problem>"``); it is called for anything corrupt or
    truncated.
    """
    from ._model import _float, _int, _read_support_vectors
    r = _FailOnly(fail)
    if not lines or lines[0].strip() != MAGIC:
        r.fail(1, f"expected {MAGIC!r} on the first line")
    header, where, sv_line, section = {}, {}, None, None
    for k in range(1, len(lines)):
        tokens = lines[k].split()
        if not tokens:
            continue
        if tokens[0] in ("SV", "W"):
            if len(tokens) != 1:
                r.fail(k + 1, f"unexpected text after {tokens[0]!r}")
            sv_line = k
            section = tokens[0]
            break
        if tokens[0] not in _HEADER:
            r.fail(k + 1, f"unknown keyword {tokens[0][:40]!r} in the model header")
        if tokens[0] in header:
            r.fail(k + 1, f"{tokens[0]} given twice")
        header[tokens[0]] = tokens[1:]
        where[tokens[0]] = k + 1
    if sv_line is None:
        r.fail(len(lines), "truncated model file: no 'SV' (or 'W') line")

    def one(key):
        if key not in header:
            r.fail(sv_line + 1, f"missing '{key}' line in the model header")
        if len(header[key]) != 1:
            r.fail(where[key], f"{key} takes one value, got {len(header[key])}")
        return header[key][0]

    svm_name = one("svm_type")
    if svm_name not in SVM_TYPES:
        r.fail(where["svm_type"], f"unknown svm_type {svm_name[:40]!r}")
    kname = one("kernel_type")
    if kname not in KERNELS or KERNELS.index(kname) in (3, 4):
        r.fail(where["kernel_type"], f"kernel_type {kname[:40]!r} is not an EigenPro kernel")
    t = KERNELS.index(kname)
    param = Parameters(svm_type=SVM_TYPES.index(svm_name), kernel_type=t, solver="eigenpro")
    if t == 1:
        param.degree = _int(r, where.get("degree", sv_line + 1), one("degree"), "degree")
        if param.degree < 0:
            r.fail(where["degree"], f"degree must be >= 0, got {param.degree}")
        param.coef0 = _float(r, where.get("coef0", sv_line + 1), one("coef0"), "coef0")
    if t in (1, 2, 5):
        param.gamma = _float(r, where.get("gamma", sv_line + 1), one("gamma"), "gamma")
    n_out = _int(r, where.get("n_outputs", sv_line + 1), one("n_outputs"), "n_outputs")
    if not 1 <= n_out <= 65536:
        r.fail(where["n_outputs"], f"n_outputs must be in 1..65536, got {n_out}")
    if "label" not in header:
        r.fail(sv_line + 1, "missing 'label' line in the model header")
    if len(header["label"]) != n_out:
        r.fail(where["label"], f"label needs {n_out} values, got {len(header['label'])}")
    labels = np.array([_float(r, where["label"], v, "label") for v in header["label"]])
    if ("features" in header) != (section == "W"):
        r.fail(sv_line + 1, "a random-feature model has a 'features' line and a 'W' "
                            "section; a kernel expansion has 'total_sv' and 'SV'")
    if section == "W":
        D = _int(r, where["features"], one("features"), "features")
        if D < 1:
            r.fail(where["features"], f"features must be >= 1, got {D}")
        seed = _int(r, where.get("seed", sv_line + 1), one("seed"), "seed")
        if not 0 <= seed < 2 ** 64:
            r.fail(where["seed"], f"seed must be in [0, 2**64), got {seed}")
        param.seed = seed
        body = lines[sv_line + 1:]
        if len(body) < D or any(body[j].strip() for j in range(D, len(body))):
            r.fail(min(len(lines), sv_line + 2 + D), f"expected exactly {D} coefficient "
                                                     "lines after 'W'")
        W = np.empty((D, n_out))
        for j in range(D):
            tokens = body[j].split()
            if len(tokens) != n_out:
                r.fail(sv_line + 2 + j, f"expected {n_out} coefficients, got {len(tokens)}")
            W[j] = [_float(r, sv_line + 2 + j, v, "coefficient") for v in tokens]
        return EigenProModel(param=param, labels=labels, centres=None, coef=W, features=D)
    l = _int(r, where.get("total_sv", sv_line + 1), one("total_sv"), "total_sv")
    if l < 0:
        r.fail(where["total_sv"], f"total_sv must be >= 0, got {l}")
    body = lines[sv_line + 1:]
    if len(body) < l:
        r.fail(len(lines) + 1, f"truncated model file: total_sv is {l} but only "
                               f"{len(body)} centre lines follow")
    for k in range(l, len(body)):
        if body[k].strip():
            r.fail(sv_line + 2 + k, f"unexpected text after the {l} centres")
    centres, coef = _read_support_vectors(r, body[:l], sv_line + 2, n_out, t)
    return EigenProModel(param=param, labels=labels, centres=centres,
                         coef=np.ascontiguousarray(coef.T))


# --------------------------------------------------------------------------
# kernsolve.train / kernsolve.predict entry points
# --------------------------------------------------------------------------

def train_eigenpro(y, X, param, n_jobs=None, sample_weight=None, callback=None):
    """``kernsolve.train`` for ``--solver eigenpro`` and ``--solver kernel-sgd``.

    ``-s 0`` (default): classification, one output per class (one-hot targets,
    labels in order of first appearance, as LIBSVM); returns an
    :class:`EigenProModel`.  ``-s 3``: regression; returns a LIBSVM
    epsilon-SVR-shaped :class:`~kernsolve.Model` (rho = 0).
    """
    from ._model import Model
    from ._svm import _as_targets
    t0 = time.perf_counter()
    param.check()
    if sample_weight is not None:
        raise ValueError(f"--solver {param.solver} does not take sample weights")
    s = int(param.svm_type)
    if s not in (C_SVC, EPSILON_SVR):
        raise ValueError(f"--solver {param.solver} solves least squares: use -s 0 "
                         "(classification, one-hot outputs) or -s 3 (regression), "
                         f"not -s {s}")
    if param.probability:
        raise ValueError(f"--solver {param.solver} has no probability model (-b 1)")
    if param.weight:
        raise ValueError(f"--solver {param.solver} does not take class weights (-w)")
    if param.n_folds:
        raise ValueError("-v (cross-validation) is handled by kernsolve.cross_validation")
    _check_kernel(int(param.kernel_type), float(param.coef0))
    y = _as_targets(y, s)
    if X is None:
        raise ValueError("X is None; expected an (n_samples, n_features) matrix")
    from ._kernels import as_canonical
    Xc = as_canonical(X)
    if Xc.shape[0] != y.shape[0]:
        raise ValueError(f"X has {Xc.shape[0]} rows but y has {y.shape[0]} entries")
    n = y.shape[0]
    opts = eigenpro_options(param, n)
    gamma = param.resolved_gamma(Xc.shape[1])
    if n_jobs is None:
        n_jobs = param.n_jobs
    if s == C_SVC:
        ints = y.astype(np.int64)
        uniq, first, inverse = np.unique(ints, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")
        labels = uniq[order]
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        Y = np.zeros((n, labels.size))
        Y[np.arange(n), rank[inverse.ravel()]] = 1.0
    else:
        Y = y
    res = fit_eigenpro(Xc, Y, kernel_type=int(param.kernel_type), gamma=gamma,
                       degree=int(param.degree), coef0=float(param.coef0), options=opts,
                       seed=int(param.seed), n_jobs=n_jobs, callback=callback)
    fitted = param.copy(gamma=float(gamma))
    stats = dict(res.stats)
    stats["n_SV"] = 0 if opts["features"] is not None else n   # centres (cross_validation)
    stats["wall_seconds"] = time.perf_counter() - t0
    if not param.quiet:
        print(f"{param.solver}: n = {n}, k = {stats['eigen_directions']}, "
              f"M = {stats['subsample']}, m = {stats['batch_size']}, "
              f"step = {stats['step']:.6g}, epochs = {stats['epochs']}, "
              + (f"features = {stats['features']}, feature evaluations = "
                 f"{stats['n_feature_evals']}" if "features" in stats else
                 f"kernel evaluations = {stats['n_kernel_evals']}"))
    if opts["features"] is not None:
        labels = np.zeros(1) if s == EPSILON_SVR else labels.astype(np.float64)
        coef = res.alpha.reshape(opts["features"], -1)
        return EigenProModel(param=fitted, labels=labels, centres=None, coef=coef,
                             stats=stats, features=opts["features"])
    if s == EPSILON_SVR:
        alpha = res.alpha
        return Model(param=fitted, labels=np.zeros(0, dtype=np.int64), support_vectors=Xc,
                     support_indices=np.arange(1, n + 1, dtype=np.int64),
                     n_support=np.zeros(0, dtype=np.int64), dual_coef=alpha.reshape(1, -1),
                     rho=np.zeros(1), stats=stats)
    return EigenProModel(param=fitted, labels=labels.astype(np.float64), centres=Xc,
                         coef=res.alpha, stats=stats)


def predict_eigenpro(y, X, model, options=""):
    """``kernsolve.predict`` for an :class:`EigenProModel` (same return values)."""
    import sys
    from ._predict import _parse_predict_options, evaluations
    probability, quiet, n_jobs = _parse_predict_options(options)
    if probability:
        raise ValueError("an EigenPro model has no probability estimates (-b 1)")
    values = decision_values(X, model, n_jobs)
    labels = _labels_of(values, model)
    if y is None:
        return labels, (float("nan"),) * 3, values
    y = np.asarray(y, dtype=np.float64).ravel()
    if y.size != labels.size:
        raise ValueError(f"y has {y.size} labels but X has {labels.size} rows")
    acc, mse, scc = evaluations(y, labels)
    if not quiet:
        n = y.size
        if int(model.param.svm_type) == EPSILON_SVR:
            print("Mean squared error = %g (regression)" % mse, file=sys.stdout)
            print("Squared correlation coefficient = %g (regression)" % scc, file=sys.stdout)
        else:
            print("Accuracy = %g%% (%d/%d) (classification)"
                  % (acc, int(round(n * acc / 100)), n), file=sys.stdout)
    return labels, (acc, mse, scc), values
