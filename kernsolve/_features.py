"""Random Fourier features regenerated from a seed, and the median trick.

Feature ``g`` (a global index) of a shift-invariant kernel is
``phi_g(x) = sqrt(2) cos(omega_g . x + b_g)`` with ``E[phi_g(x) phi_g(y)] =
k(x, y)``; ``omega_g`` and ``b_g`` are pure functions of ``(seed, g)``, drawn
from kernsolve's portable generator.  Doubly Stochastic Gradients trains and
predicts with them without ever storing them.  ``doc/dsg.md`` (section
"Random features") specifies them bit for bit; the compiled map is
``kernsolve/_core/_features.pxd``.
"""
import numbers
import sys

import numpy as np

from ._constants import KERNEL_TABLE
from ._core import _features
from ._kernels import as_canonical, kernel_code
from ._random import _uint64, permutation
from ._sparse import issparse, scipy_sparse, to_scipy
from ._threads import resolve_n_jobs

__all__ = ["random_features", "feature_directions", "median_gamma"]

_INT32_MAX = 2**31 - 1
_INT64_LIMIT = 2**63
# Dense copy of the median-trick sample allowed up to this many bytes; past it
# distances are computed row by row on the sparse sample.
_MEDIAN_DENSE_BYTES = 1 << 28


def _feature_kernel(kernel):
    """The compiled feature code (0 Gaussian, 1 Laplacian) of an rbf/laplacian
    kernel (KERNEL_TABLE's ``features``)."""
    features = KERNEL_TABLE[kernel_code(kernel, allow_precomputed=True)].features
    if features:
        return _features.FEATURE_CODES[features]
    raise ValueError(f"random Fourier features exist for the 'rbf' and 'laplacian' "
                     f"kernels only (codes 2 and 5), got kernel {kernel!r}")


# The largest gamma whose frequency scale sqrt(2 gamma) is finite.
GAMMA_MAX = sys.float_info.max / 2


def _check_gamma(gamma):
    if isinstance(gamma, (bool, np.bool_)) or not isinstance(gamma, numbers.Real):
        raise ValueError(f"gamma must be a real number > 0, got {gamma!r}; "
                         "median_gamma(X) gives a data-driven value")
    gamma = float(gamma)
    if not np.isfinite(gamma) or gamma <= 0:
        raise ValueError(f"gamma must be a finite number > 0, got {gamma!r}")
    if gamma > GAMMA_MAX:
        raise ValueError(f"gamma must be at most {GAMMA_MAX:.6g}, got {gamma!r}: the "
                         "random features' frequency scale sqrt(2 gamma) overflows")
    return gamma


def _count(value, name):
    if isinstance(value, (bool, np.bool_)) or not hasattr(value, "__index__") \
            or value.__index__() < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return value.__index__()


def _feature_range(start, count):
    start = _count(start, "start")
    if start + count > _INT64_LIMIT:
        raise ValueError(f"start + n_components must not exceed 2**63, got "
                         f"start={start}, n_components={count}")
    return start


def random_features(X, n_components, *, kernel="rbf", gamma, seed=0, start=0,
                    n_jobs=None):
    """Random Fourier features ``phi_g(x_i)`` for ``g = start .. start+n_components-1``.

    ``phi_g(x) = sqrt(2) cos(omega_g . x + b_g)`` (no ``1/sqrt(D)`` factor), so
    ``Z @ Z.T / n_components`` approximates the kernel matrix of X.

    Parameters
    ----------
    X : array-like or scipy sparse matrix, shape (n_samples, n_features)
        Finite real values; sparse input is read as CSR without densifying.
    n_components : int >= 0
        Number of features D.
    kernel : {"rbf", "laplacian"} or int
        ``"rbf"`` (code 2): ``exp(-gamma ||x-y||^2)``, Gaussian directions;
        ``"laplacian"`` (code 5): ``exp(-gamma ||x-y||_1)``, Cauchy directions.
    gamma : float > 0
        Kernel width (required; see ``median_gamma``).
    seed : int in [0, 2**64)
        The features are a pure function of ``(seed, g)``.
    start : int >= 0
        Global index of the first feature: the columns of a call with
        ``start=s`` are columns ``s ..`` of a call with ``start=0``.
    n_jobs : int or None
        Threads (scikit-learn's rule); the result has the same bits for any value.

    Returns
    -------
    ndarray of float64, shape (n_samples, n_components)

    Raises
    ------
    ValueError
        Unknown kernel, gamma not finite and > 0, negative n_components or
        start, non-finite or empty X.
    """
    code = _feature_kernel(kernel)
    gamma = _check_gamma(gamma)
    n_components = _count(n_components, "n_components")
    start = _feature_range(start, n_components)
    seed = _uint64(seed, "seed")
    n_threads = resolve_n_jobs(n_jobs)
    Xc = as_canonical(X)
    out = np.empty((Xc.shape[0], n_components), dtype=np.float64)
    _features.fill_features(Xc, code, gamma, seed, start, out, n_threads)
    return out


def feature_directions(n_features, start, count, *, kernel="rbf", gamma, seed=0):
    """The directions and phases of features ``start .. start+count-1``.

    Parameters
    ----------
    n_features : int >= 0
        Input dimension d (feature g's first d direction entries do not
        depend on d).
    start, count : int >= 0
        Global index of the first feature, number of features.
    kernel : {"rbf", "laplacian"} or int
    gamma : float > 0
    seed : int in [0, 2**64)

    Returns
    -------
    omega : ndarray of float64, shape (count, n_features)
        ``omega[f]`` is the direction of feature ``start + f``.
    phase : ndarray of float64, shape (count,)
        The phases ``b_g`` in [0, 2 pi).
    """
    code = _feature_kernel(kernel)
    gamma = _check_gamma(gamma)
    n_features = _count(n_features, "n_features")
    if n_features > _INT32_MAX:
        raise ValueError(f"n_features must be below 2**31, got {n_features}")
    count = _count(count, "count")
    start = _feature_range(start, count)
    seed = _uint64(seed, "seed")
    omega_t = np.empty((n_features, count), dtype=np.float64)
    phase = np.empty(count, dtype=np.float64)
    _features.fill_directions(code, gamma, n_features, seed, start, omega_t, phase)
    return np.ascontiguousarray(omega_t.T), phase


def median_gamma(X, *, kernel="rbf", seed=0, n_samples=1000, factor=1.0):
    """The median trick: gamma from the median pairwise distance of a sample.

    ``m = min(n_rows, n_samples)`` distinct rows are drawn with the
    ``"sampling"`` stream: rows ``permutation(n_rows, seed, "sampling")[:m]``.
    ``sigma = factor * median`` of the ``m (m - 1) / 2`` distances between
    distinct sampled rows (Euclidean for rbf, L1 for laplacian; ``np.median``,
    so the mean of the two middle values for an even count).

    Parameters
    ----------
    X : array-like or scipy sparse matrix, shape (n_rows, n_features)
        At least 2 rows, finite values.
    kernel : {"rbf", "laplacian"} or int
    seed : int in [0, 2**64)
    n_samples : int >= 2
        Largest sample size (cost is quadratic in it).
    factor : float > 0
        Multiplies the median distance.

    Returns
    -------
    gamma : float
        ``1 / (2 sigma**2)`` for rbf (so ``k = exp(-||x-y||^2 / (2 sigma^2))``),
        ``1 / sigma`` for laplacian (``k = exp(-||x-y||_1 / sigma)``).

    Raises
    ------
    ValueError
        Fewer than 2 rows, bad parameters, non-finite X, or a median distance of
        0 (the sampled rows are mostly identical).
    """
    code = _feature_kernel(kernel)
    seed = _uint64(seed, "seed")
    n_samples = _count(n_samples, "n_samples")
    if n_samples < 2:
        raise ValueError(f"n_samples must be >= 2 (distances need pairs), got {n_samples}")
    if isinstance(factor, (bool, np.bool_)) or not isinstance(factor, numbers.Real) \
            or not np.isfinite(factor) or factor <= 0:
        raise ValueError(f"factor must be a finite number > 0, got {factor!r}")
    Xc = as_canonical(X)
    if Xc.shape[0] < 2:
        raise ValueError(f"the median trick needs X with at least 2 rows, got "
                         f"{Xc.shape[0]}")
    m = min(Xc.shape[0], n_samples)
    rows = permutation(Xc.shape[0], seed, "sampling")[:m]
    dist = _pairwise_distances(Xc[rows], l1=(code == _features.FEATURE_CODES["laplacian"]))
    median = float(np.median(dist))
    if median == 0.0:
        if not np.any(dist):
            raise ValueError(f"all {m} sampled rows of X are identical (every pairwise "
                             "distance is 0); the median trick cannot set gamma")
        raise ValueError("the median pairwise distance of the sampled rows is 0 (most "
                         "sampled rows are duplicates); pass gamma explicitly or "
                         "deduplicate X")
    sigma = float(factor) * median
    return 1.0 / (2.0 * sigma * sigma) if code == _features.FEATURE_CODES["gaussian"] else 1.0 / sigma


def _pairwise_distances(S, l1):
    """Distances between distinct rows of S (i < j, row-major order)."""
    from scipy.spatial.distance import pdist   # at first use: ~0.3 s to import
    metric = "cityblock" if l1 else "euclidean"
    if issparse(S):
        S = to_scipy(S)         # column selection and row arithmetic are scipy's
        sp = scipy_sparse()
        used = np.unique(S.indices)
        if S.shape[0] * max(len(used), 1) * 8 <= _MEDIAN_DENSE_BYTES:
            # Only the columns the sample uses matter for its distances.
            return pdist(S[:, used].toarray(), metric)
        parts = []
        for i in range(S.shape[0] - 1):
            rest = S[i + 1:]
            diff = rest - sp.csr_matrix(np.ones((rest.shape[0], 1))) @ S[i]
            if l1:
                parts.append(np.asarray(abs(diff).sum(axis=1)).ravel())
            else:
                parts.append(np.sqrt(np.asarray(diff.multiply(diff).sum(axis=1)).ravel()))
        return np.concatenate(parts)
    return pdist(S, metric)
