"""Probability models fitted at training time, as LIBSVM 3.37 fits them.

* ``sigmoid_train``: Platt's sigmoid ``P(y=1|f) = 1 / (1 + exp(A f + B))`` fitted
  to decision values by the Newton method with backtracking of Lin, Lin and Weng
  (2007), with LIBSVM's targets, stopping rule and limits.
* ``svr_laplace_scale``: the scale of a Laplace model of SVR residuals, with
  LIBSVM's rule that drops residuals beyond five standard deviations.
* ``one_class_density_marks``: LIBSVM 3.37's ten density marks for one-class
  probabilities (binning of training decision values, Que and Lin).

Their use at prediction time (the sigmoid, pairwise coupling, the density
bins) is in ``kernsolve/_predict.py``.

Everything here is vectorised numpy on arrays of decision values: the loops
are over at most a few hundred Newton iterations, never over kernel rows.
"""
import numpy as np

N_MARKS = 10  # one-class density marks, as in LIBSVM 3.37


def _sigmoid_loss(f, t, A, B):
    """Cross-entropy of targets ``t`` under the sigmoid, written the stable way."""
    fApB = f * A + B
    pos = fApB >= 0
    # Both branches are finite: log1p(exp(-|z|)) never overflows.
    return float(np.sum(np.where(pos, t * fApB, (t - 1.0) * fApB)
                        + np.log1p(np.exp(-np.abs(fApB)))))


def sigmoid_train(dec_values, labels, info=None):
    """Fit Platt's sigmoid to decision values (LIBSVM's ``sigmoid_train``).

    Parameters
    ----------
    dec_values : ndarray of shape (n,)
        Decision values, oriented so that positive means the ``+1`` class.
    labels : ndarray of shape (n,)
        Targets; ``> 0`` is the positive class.
    info : callable or None
        Receives LIBSVM's two diagnostic lines (line search failure, iteration
        limit), or nothing when None.

    Returns
    -------
    A, B : float
        ``P(+1 | f) = 1 / (1 + exp(A * f + B))``.
    """
    f = np.asarray(dec_values, dtype=np.float64)
    pos_label = np.asarray(labels, dtype=np.float64) > 0
    prior1 = float(np.count_nonzero(pos_label))
    prior0 = float(f.size) - prior1

    max_iter = 100
    min_step = 1e-10
    sigma = 1e-12          # keeps the Hessian strictly positive definite
    eps = 1e-5
    # Regularised targets of Platt's paper: never exactly 0 or 1.
    hi_target = (prior1 + 1.0) / (prior1 + 2.0)
    lo_target = 1.0 / (prior0 + 2.0)
    t = np.where(pos_label, hi_target, lo_target)

    A = 0.0
    B = float(np.log((prior0 + 1.0) / (prior1 + 1.0)))
    fval = _sigmoid_loss(f, t, A, B)

    iteration = 0
    while iteration < max_iter:
        fApB = f * A + B
        e = np.exp(-np.abs(fApB))
        # p = 1/(1+exp(fApB)), q = 1 - p, each computed without overflow.
        p = np.where(fApB >= 0, e / (1.0 + e), 1.0 / (1.0 + e))
        q = np.where(fApB >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
        d2 = p * q
        h11 = sigma + float(np.sum(f * f * d2))
        h22 = sigma + float(np.sum(d2))
        h21 = float(np.sum(f * d2))
        d1 = t - p
        g1 = float(np.sum(f * d1))
        g2 = float(np.sum(d1))

        if abs(g1) < eps and abs(g2) < eps:
            break

        det = h11 * h22 - h21 * h21
        dA = -(h22 * g1 - h21 * g2) / det
        dB = -(-h21 * g1 + h11 * g2) / det
        gd = g1 * dA + g2 * dB

        stepsize = 1.0
        while stepsize >= min_step:
            newA = A + stepsize * dA
            newB = B + stepsize * dB
            newf = _sigmoid_loss(f, t, newA, newB)
            if newf < fval + 0.0001 * stepsize * gd:
                A, B, fval = newA, newB, newf
                break
            stepsize /= 2.0

        if stepsize < min_step:
            if info is not None:
                info("Line search fails in two-class probability estimates\n")
            break
        iteration += 1

    if iteration >= max_iter and info is not None:
        info("Reaching maximal iterations in two-class probability estimates\n")
    return A, B


def svr_laplace_scale(residuals):
    """LIBSVM's Laplace scale sigma of SVR residuals ``y - f_cv``.

    The mean absolute residual gives a first scale; residuals beyond
    ``5 * sqrt(2) * mae`` are dropped as outliers and the mean absolute value
    of the rest is returned.
    """
    z = np.abs(np.asarray(residuals, dtype=np.float64))
    mae = float(np.sum(z)) / z.size
    std = np.sqrt(2.0 * mae * mae)
    keep = ~(z > 5.0 * std)
    return float(np.sum(z[keep])) / int(np.count_nonzero(keep))


def one_class_density_marks(dec_values):
    """LIBSVM 3.37's one-class density marks, or None when there are too few values.

    The sorted training decision values are split at the first one ``>= 0``;
    each side (at least ``N_MARKS/2`` values) is cut into ``N_MARKS/2`` bins of
    equal count, and the marks are the midpoints between consecutive cut values
    (with 0 as the middle cut).
    """
    d = np.sort(np.asarray(dec_values, dtype=np.float64), kind="stable")
    n = d.size
    nonneg = np.flatnonzero(d >= 0)
    # LIBSVM leaves the split at 0 when no value is >= 0.
    neg_counter = int(nonneg[0]) if nonneg.size else 0
    pos_counter = n - neg_counter
    mid = N_MARKS // 2
    if neg_counter < mid or pos_counter < mid:
        return None
    tmp = np.empty(N_MARKS + 1)
    for i in range(mid):
        tmp[i] = d[i * neg_counter // mid]
    tmp[mid] = 0.0
    for i in range(mid + 1, N_MARKS + 1):
        tmp[i] = d[neg_counter - 1 + (i - mid) * pos_counter // mid]
    return (tmp[:-1] + tmp[1:]) / 2.0
