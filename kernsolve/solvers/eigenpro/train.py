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

This module owns the options, the preconditioner and the iteration; what it
shares with the random-feature mode and the model (kernel blocks, the
eigensystem, the step size, the epoch order) is in ``_common.py``.
"""
import math
import numbers
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from . import SPEC
from ._common import (AUTO_RTOL, RANK_RTOL, EpochProgress, KernelBlocks, announce_cost,
                      check_diverged, epoch_order, step_size, top_eigensystem,
                      UntimedCallback)
from .features import fit_features
from .model import EigenProModel
from .centres import default_centres
from .nystrom import fit_centres
from ..._constants import C_SVC, EPSILON_SVR, POLY, PRECOMPUTED, PSD_KERNELS, SIGMOID
from ..._kernels import check_kernel_params
from ..._model import Model
from ..._params import Parameters, option_key, option_name
from ..._progress import Progress
from ..._random import permutation
from ..._threads import one_blas_thread, resolve_n_jobs
from ..._validation import ONE_CLASS_INFO, check_targets, check_X, class_index, warn_one_class

__all__ = ["eigenpro_options", "fit_eigenpro", "exact_kernel_ridge", "train_eigenpro"]

# Paper's defaults (section 6): m = 2^8, M = 4800, k = 160, capped by n (the
# spec declares them computed); tau = 1 in the RKHS and the epochs are the spec's.
DEFAULT_BATCH = 256
DEFAULT_SUBSAMPLE = 4800
DEFAULT_K = 160
# The centres' ridge lambda: the best of 1e-8 .. 1e-4 on Fashion-MNIST slices
# (gamma 0.02, p = 4000 .. 8000, benchmarks/history/RESULTS.md); small enough not to bias,
# large enough for a well-conditioned preconditioner.
DEFAULT_LAMBDA = 1e-6


# --------------------------------------------------------------------------
# options
# --------------------------------------------------------------------------

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
    sgd = param.solver == "kernel-sgd"
    if sgd and {"eigen_directions", "damping"} & {option_key(k) for k in param.extra}:
        raise ValueError("--solver kernel-sgd has no eigen-directions; it is EigenPro "
                         "with k = 0 (use --solver eigenpro for a preconditioner)")
    opts = param.solver_options()        # each option's declared range
    n = n_samples
    # The rules between options and with n; the defaults the paper computes.
    with_centres = opts.get("centers") is not None
    # (with --centers, --subsample q is the preconditioner's, checked with p below)
    M = None if with_centres else _size(opts, "subsample", "M", DEFAULT_SUBSAMPLE, n)
    auto_k = not sgd and opts["eigen_directions"] is None
    if sgd or with_centres:
        k = 0
    elif auto_k:
        k = min(DEFAULT_K, M - 1)
    else:
        k = opts["eigen_directions"]
        if k >= M:
            raise ValueError(f"--eigen-directions: k = {k} must be smaller than the "
                             f"subsample size M = {M} (the preconditioner needs the "
                             "(k+1)-th eigenvalue of the subsample kernel matrix)")
    m = _size(opts, "batch_size", "m", DEFAULT_BATCH, n)
    # kernel-sgd takes no --damping: its tau (in the stats) is the declared default
    tau = SPEC.options["damping"].default if sgd else opts["damping"]
    given = {option_key(name) for name in param.extra}
    p = opts.get("centers")         # (kernel-sgd has neither --centers nor --lambda)
    lam = opts.get("lambda")
    if p is not None:
        # FALKON: conjugate gradient, no mini-batches, step or eigen-directions
        for key in _NOT_WITH_CENTERS:
            if key in given:
                raise ValueError(f"--centers: the centres' model is solved by conjugate "
                                 f"gradient, which takes no --{option_name(key)}")
        M = opts["subsample"]       # q auxiliary rows, or None: FALKON's exact factors
        if p == "auto":             # grows with n, capped by memory (centres.default_centres)
            p = p if n is None else default_centres(n, M)
        else:
            p = _size(opts, "centers", "p", None, n)
        lam = DEFAULT_LAMBDA if lam is None else lam
        if M is not None and n is not None and p is not None and p + M > n:
            raise ValueError(f"--subsample: the q = {M} auxiliary rows of the "
                             f"preconditioner are drawn besides the p = {p} centres, "
                             f"so p + q must be at most n = {n}")
    elif "lambda" in given:
        raise ValueError("--lambda: only the centres' model (--centers p) has a ridge "
                         "regulariser; EigenPro's kernel expansion is regularised by "
                         "its number of epochs")
    elif opts.get("precision", "double") != "double":   # (what the expansion does)
        raise ValueError(f"--precision {opts['precision']}: only the centres' model "
                         "(--centers p) stores K(X, centres); the kernel expansion "
                         "computes in double")
    return {"auto_k": auto_k, "subsample": M, "eigen_directions": k, "batch_size": m,
            "damping": tau, "epochs": opts["epochs"], "step": opts["step"],
            "features": opts["features"], "centers": p, "lambda": lam,
            "precision": opts.get("precision", "double"), "cache_mb": float(param.cache_size)}


# Options of the SGD iteration that the centres' conjugate gradient has no use for.
_NOT_WITH_CENTERS = ("eigen_directions", "batch_size", "damping", "step", "features")


def _size(opts, key, letter, default, n):
    """A count of training points (the subsample M, the batch m): the one
    given, at most n, or the paper's default capped by n."""
    value = opts[key]
    if value is None:
        return default if n is None else min(default, n)
    if n is not None and value > n:
        raise ValueError(f"--{key.replace('_', '-')}: {letter} = {value} is larger than the "
                         f"training set (n = {n}); use {letter} <= n")
    return value


def _check_kernel(kernel_type, coef0):
    if kernel_type == SIGMOID:
        raise ValueError("EigenPro needs a positive semi-definite kernel: the sigmoid "
                         "kernel (-t 3) is not PSD (its subsample kernel matrix has "
                         "negative eigenvalues); use -t 0, 1, 2 or 5")
    if kernel_type == PRECOMPUTED:
        raise ValueError("EigenPro computes kernel values between new centres and "
                         "batches; a precomputed kernel (-t 4) is not supported")
    if kernel_type == POLY and coef0 < 0:
        raise ValueError(f"EigenPro needs a positive semi-definite kernel: the polynomial "
                         f"kernel with coef0 = {coef0:g} < 0 is not PSD in general; use "
                         "-r 0 or larger")
    if kernel_type not in PSD_KERNELS:
        raise ValueError(f"unknown kernel type {kernel_type}")


# --------------------------------------------------------------------------
# the preconditioner
# --------------------------------------------------------------------------

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
    centres: np.ndarray | None = None  # (p,) row indices of the centres (--centers), else None



def centres_result(alpha, centres, stats, single, t_prep):
    """The :class:`EigenProResult` of the centres' model (``t_prep``: the
    seconds before the solve, counted in its setup)."""
    stats["setup_seconds"] += t_prep
    stats["seconds"] += t_prep
    return EigenProResult(alpha=alpha[:, 0].copy() if single else alpha,
                          eigenvalues=np.zeros(0), subsample=centres, step=math.nan,
                          kappa=math.nan, stats=stats, centres=centres)


def fit_eigenpro(X, Y, *, kernel_type=2, gamma=None, degree=3, coef0=0.0, options=None,
                 seed=0, n_jobs=None, callback=None, progress=None, _kernel=None):
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
    progress : kernsolve._progress.Progress, optional
        The progress line on stderr: the epoch and batch step (the kernel
        expansion, random features) or the pass (the centres' model); a long
        run first says what it will cost (``_common.announce_cost``).

    Returns
    -------
    EigenProResult
    """
    t0 = time.perf_counter()
    n_threads = resolve_n_jobs(n_jobs)
    _check_kernel(int(kernel_type), float(coef0))
    if _kernel is None:
        kern = KernelBlocks(X, kernel_type, 0.0, degree, coef0, n_threads)
        gamma, degree, coef0 = check_kernel_params(gamma, degree, coef0, kern.X.shape[1],
                                                   int(kernel_type))
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
    if M is not None and M > n:
        raise ValueError(f"--subsample: M = {M} is larger than the training set (n = {n})")
    if m > n:
        raise ValueError(f"--batch-size: m = {m} is larger than the training set (n = {n})")

    if opts.get("centers") is not None:
        t_prep = time.perf_counter() - t0
        each = None if callback is None or not single else \
            (lambda it, coef: callback(it, coef[:, 0]))
        alpha, centres, stats = fit_centres(kern, Y, p=opts["centers"], lam=opts["lambda"],
                                            iterations=opts["epochs"], seed=seed,
                                            cache_mb=opts.get("cache_mb", 100.0),
                                            n_threads=n_threads,
                                            precision=opts.get("precision", "double"),
                                            subsample=opts["subsample"],
                                            callback=each or callback, progress=progress)
        return centres_result(alpha, centres, stats, single, t_prep)
    if opts.get("features") is not None:
        W, s, S, stats = fit_features(kern.X, Y[:, 0] if single else Y,
                                      kernel_type=kern.code, gamma=kern.gamma, options=opts,
                                      seed=seed, n_jobs=n_jobs, n_threads=n_threads,
                                      callback=callback, progress=progress)
        return EigenProResult(alpha=W, eigenvalues=s, subsample=S, step=stats["step"],
                              kappa=stats["kappa"], stats=stats)
    epochs = opts["epochs"]
    evals = M * M + epochs * n * n      # the subsample's matrix, then K(B, X) each batch
    announce_cost(progress, evals, kern.X.shape[1],
                  f"the kernel expansion on n = {n} rows: {epochs} epochs of n^2 kernel "
                  f"values, about {evals:.2g} kernel evaluations of {kern.X.shape[1]} "
                  f"features (the centres' model, --centers p, costs n p a pass)")
    report = EpochProgress(progress, epochs, n, m, "n_kernel_evals")
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
    user = UntimedCallback(callback)
    for epoch in range(epochs):
        order = epoch_order(n, seed, epoch)
        worst = 0.0
        for start in range(0, n, m):
            B = order[start:start + m]
            K_B = kern.block(kern.rows(B), Xall)           # (b, n) kernel engine
            with one_blas_thread():
                G = K_B @ alpha
                G -= Y[B]
                scale = eta_for(B.size) / B.size
                corr = pre.correction(np.ascontiguousarray(K_B[:, S]), G)
            alpha[B] -= scale * G
            if corr is not None:
                alpha[S] += scale * corr
            n_steps += 1
            worst = max(worst, float(np.einsum("ij,ij->", G, G)) / G.size)
            report(epoch, n_steps, kern.n_evals)
        check_diverged(worst, start_loss, alpha, epoch, eta_for(m))
        epochs_run = epoch + 1
        if user.stop(epoch + 1, lambda: alpha if not single else alpha[:, 0]):
            break
    seconds = time.perf_counter() - t0 - user.seconds
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
    if isinstance(lam, bool) or not isinstance(lam, numbers.Real) or not math.isfinite(lam) \
            or lam < 0:
        raise ValueError(f"lam must be a finite number >= 0, got {lam!r}")
    kern = KernelBlocks(X, kernel_type, 0.0, degree, coef0, resolve_n_jobs(n_jobs))
    kern.gamma, kern.degree, kern.coef0 = check_kernel_params(gamma, degree, coef0,
                                                              kern.X.shape[1],
                                                              int(kernel_type))
    n = kern.n_rows
    K = kern.block(kern.X, kern.X)
    K[np.diag_indices(n)] += n * lam
    Y = np.asarray(Y, dtype=np.float64)
    try:
        with one_blas_thread():
            factor = scipy.linalg.cho_factor(K, lower=True, overwrite_a=True,
                                             check_finite=False)
            return scipy.linalg.cho_solve(factor, Y, check_finite=False)
    except np.linalg.LinAlgError:
        raise ValueError(f"the kernel matrix plus n*lam*I (lam = {lam:g}) is not "
                         "numerically positive definite (duplicate rows or a very flat "
                         "kernel); use a larger lam") from None


# --------------------------------------------------------------------------
# kernsolve.train / kernsolve.predict entry points
# --------------------------------------------------------------------------

def check_train_param(param, sample_weight=None):
    """The checks of ``kernsolve.train`` before the data: returns the SVM type."""
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
    return s


def one_hot(index, n_classes):
    """The one-hot targets of rows whose classes are at ``index``."""
    Y = np.zeros((index.size, n_classes))
    Y[np.arange(index.size), index] = 1.0
    return Y


def one_class_model(param, gamma, labels, n_features, t0):
    """LIBSVM's one-class case, before any kernel work: a model with no centres."""
    if not param.quiet:
        print(ONE_CLASS_INFO, end="")
    warn_one_class(labels[0])
    return EigenProModel(param=param.copy(gamma=float(gamma)), labels=labels.astype(np.float64),
                         centres=sp.csr_matrix((0, n_features)), coef=np.zeros((0, 1)),
                         stats={"n_SV": 0, "wall_seconds": time.perf_counter() - t0})


def train_eigenpro(y, X, param, n_jobs=None, sample_weight=None, callback=None):
    """``kernsolve.train`` for ``--solver eigenpro`` and ``--solver kernel-sgd``.

    ``-s 0`` (default): classification, one output per class (one-hot targets,
    labels in LIBSVM's order: first appearance, -1/+1 swapped); returns an
    :class:`EigenProModel`.  ``-s 3``: regression; returns a LIBSVM
    epsilon-SVR-shaped :class:`~kernsolve.Model` (rho = 0).
    """
    t0 = time.perf_counter()
    s = check_train_param(param, sample_weight)
    y = check_targets(y, s)
    Xc = check_X(X, n_rows=y.shape[0])
    n = y.shape[0]
    opts = eigenpro_options(param, n)
    gamma = param.resolved_gamma(Xc.shape[1], Xc)
    if n_jobs is None:
        n_jobs = param.n_jobs
    labels = None
    if s == C_SVC:
        # One output per class, in LIBSVM's label order (with its -1/+1 swap).
        labels, index = class_index(y)
        if labels.size == 1:
            return one_class_model(param, gamma, labels, Xc.shape[1], t0)
        Y = one_hot(index, labels.size)
    else:
        Y = y
    progress = None if param.quiet else Progress(param.solver)
    try:
        res = fit_eigenpro(Xc, Y, kernel_type=int(param.kernel_type), gamma=gamma,
                           degree=int(param.degree), coef0=float(param.coef0), options=opts,
                           seed=int(param.seed), n_jobs=n_jobs, callback=callback,
                           progress=progress)
    finally:
        if progress is not None:
            progress.close()
    centres = Xc if res.centres is None else Xc[res.centres]
    return eigenpro_model(param, gamma, labels, res, opts, n, centres, t0)


def eigenpro_model(param, gamma, labels, res, opts, n, centres, t0):
    """The model of a fit (``labels`` None: regression) and its summary line;
    ``centres`` the rows of the expansion (X, or its rows at ``res.centres``)."""
    s = int(param.svm_type)
    fitted = param.copy(gamma=float(gamma))
    stats = dict(res.stats)
    idx = res.centres if res.centres is not None else np.arange(n, dtype=np.intp)
    stats["n_SV"] = 0 if opts["features"] is not None else idx.size   # (cross_validation)
    stats["wall_seconds"] = time.perf_counter() - t0
    if not param.quiet and res.centres is not None:
        replaced = stats["replaced_centres"]
        print(f"{param.solver}: n = {n}, centres p = {idx.size}"
              + (f" ({replaced} repeated rows replaced)" if replaced else "")
              + f", lambda = {stats['lambda']:g}, iterations = {stats['n_iter']}, relative "
              f"residual = {stats['relative_residual']:.3g}, kernel evaluations = "
              f"{stats['n_kernel_evals']}")
    elif not param.quiet:
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
        return Model(param=fitted, labels=np.zeros(0, dtype=np.int64), support_vectors=centres,
                     support_indices=idx.astype(np.int64) + 1,
                     n_support=np.zeros(0, dtype=np.int64), dual_coef=alpha.reshape(1, -1),
                     rho=np.zeros(1), stats=stats)
    return EigenProModel(param=fitted, labels=labels.astype(np.float64), centres=centres,
                         coef=res.alpha, stats=stats)
