"""DSG, UDSG and CDSG written out in numpy from the papers, the oracle of
test_dsg.py and test_udsg_cdsg.py.

* Algorithm 1 of Dai et al. (DSG, NIPS 2014) with mini-batches and feature
  blocks; Algorithms 3 (UDSG: G new, U old) and 4 with rule (9) (CDSG) of
  Shi et al. ("Utilize old coordinates", UAI 2016), as doc/dsg.md reads them.
* Every quantity explicit: the random Fourier map materialised
  (``random_features``, itself checked bit for bit against a pure-Python copy
  of its spec in test_features.py), the decay of every old coefficient and of
  CDSG's beta_j applied, not kept as a lazy scale.
* The fitted step (``--step-rule fit``, the default) from its definition, the
  minimiser of ``||Phi c - G||^2 / B + rho ||c||^2``, by a least-squares
  solve of the stacked system ``[Phi / sqrt(B); sqrt(rho) I] c = [G / sqrt(B); 0]``
  (numpy's SVD-based lstsq), not by the normal equations the code solves; the
  ridge given, chosen by GCV, or by the next batches' losses with the
  one-standard-error rule (Breiman et al. 1984) and Student's t width.
* The losses' values and derivatives from the DSG paper's section 4.
"""
import numpy as np

from kernsolve._features import random_features
from kernsolve._random import integers, permutation, stream_key

# The fitted step's ridges (doc/dsg.md, "The step rule"), for fit and fit-gcv.
RIDGES = 10.0 ** np.arange(-3, 1.01, 0.5)
FIRST_RIDGE = 6            # fit's ridge before any batch has judged one: 1
# fit's step scale: 1 / the loss's curvature bound (softmax 1/2, logistic 1/4)
FIT_STEP_FACTOR = {"softmax": 2.0, "logistic": 4.0}


def numpy_loss(name, u, y, param):
    """Value and derivative of each loss, from the paper's section 4 formulas."""
    if name == "hinge":
        return np.maximum(0, 1 - y * u), np.where(y * u < 1, -y, 0.0)
    if name == "squared-hinge":
        m = np.maximum(0, 1 - y * u)
        return 0.5 * m ** 2, np.where(y * u < 1, u - y, 0.0)
    if name == "logistic":
        return np.log1p(np.exp(-y * u)), -y * np.exp(-y * u) / (1 + np.exp(-y * u))
    if name == "squared":
        return 0.5 * (u - y) ** 2, u - y
    if name == "huber":
        r = u - y
        return (np.where(np.abs(r) <= param, 0.5 * r ** 2, param * (np.abs(r) - param / 2)),
                np.clip(r, -param, param))
    if name == "epsilon-insensitive":
        r = u - y
        return np.maximum(0, np.abs(r) - param), np.where(np.abs(r) > param, np.sign(r), 0.0)
    if name == "quantile":
        return (np.maximum(param * (y - u), (1 - param) * (u - y)),
                np.where(u >= y, 1 - param, -param))
    if name == "novelty":
        return np.maximum(0, -u), np.where(u < 0, -1.0, 0.0)
    raise AssertionError(name)


def ridge_fit(phi, G, rho):
    """argmin_c ||phi c - G||^2 / B + rho ||c||^2, as the least-squares
    solution of the stacked system (the definition, not the normal equations)."""
    B, F = phi.shape
    A = np.vstack([phi / np.sqrt(B), np.sqrt(rho) * np.eye(F)])
    b = np.vstack([G / np.sqrt(B), np.zeros((F, G.shape[1]))])
    return np.linalg.lstsq(A, b, rcond=None)[0]


def gcv_direction(phi, G):
    """fit-gcv's direction: the ridge of the smallest GCV score."""
    B, F = phi.shape
    best = None
    for rho in RIDGES:
        A = phi.T @ phi + rho * B * np.eye(F)
        c = ridge_fit(phi, G, rho)
        df = np.trace(np.linalg.solve(A, phi.T @ phi))
        if df >= B:
            continue
        score = np.sum((G - phi @ c) ** 2) / B / (1 - df / B) ** 2
        if best is None or score < best[0]:
            best = (score, c)
    return best[1]


def t84(df):
    """Student's t quantile at Phi(1), as doc/dsg.md writes it: a table to 5
    degrees of freedom, then 1 + 1/(2 df) + 1/(4 df^2)."""
    table = {1: 1.8373, 2: 1.3213, 3: 1.1969, 4: 1.1416, 5: 1.1105}
    return table.get(df, 1.0 + 0.5 / df + 0.25 / df ** 2)


def one_se_ridge(scores, pairs, n):
    """fit's choice after n judging batches: the largest ridge whose total is
    within one standard error of the smallest total (the sum of n paired
    per-batch differences: sqrt(n) times their sample deviation), widened by
    Student's t; the largest ridge after one batch."""
    if n < 2:
        return len(scores) - 1
    best = int(np.argmin(scores))
    for i in range(len(scores) - 1, best, -1):
        diff = scores[i] - scores[best]
        var = (n * (pairs[i, i] - 2 * pairs[i, best] + pairs[best, best]) - diff ** 2) / (n - 1)
        if diff <= t84(n - 1) * np.sqrt(max(var, 0.0)):
            return i
    return best


def row_losses(loss, U, T, param):
    """l(u_r, y_r) per row: the softmax's, or the binary/regression loss summed over outputs."""
    if loss == "softmax":
        m = U.max(axis=1)
        return m + np.log(np.exp(U - m[:, None]).sum(axis=1)) - U[np.arange(len(U)),
                                                                  T[:, 0].astype(int)]
    return numpy_loss(loss, U, T, param)[0].sum(axis=1)


def derivatives(loss, U, T, param):
    """G: the loss's derivative in u, a row per batch row, a column per output."""
    if loss == "softmax":
        p = np.exp(U - U.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        p[np.arange(len(U)), T[:, 0].astype(int)] -= 1
        return p
    return numpy_loss(loss, U, T, param)[1]


def derivative_bound(loss, param, G):
    """M of rule (9), the paper's bound on ||l'||_2 over the outputs (doc/dsg.md)."""
    K = G.shape[1]
    if loss == "softmax":
        return np.sqrt(2.0)
    if loss in ("squared", "squared-hinge"):      # unbounded: the batch's largest
        return float(np.max(np.sqrt(np.sum(G * G, axis=1))))
    scale = {"huber": param, "quantile": max(param, 1 - param)}.get(loss, 1.0)
    return scale * np.sqrt(K)


def _cdsg_choice(beta, gbar, gamma_t, ratio, M, sigma2, B):
    """Rule (9): the old block with the largest step, and the step, if that
    step beats gamma_t (the first on ties); else None."""
    A = 2 * gbar @ gbar + 2 * M ** 2 * sigma2 / B ** 2
    best, target = gamma_t, None
    if not A > 0:
        return None
    for j in range(beta.shape[0]):
        p = beta[j] @ gbar
        c = beta[j] @ beta[j] - gamma_t ** 2 * (gbar @ gbar)
        disc = 4 * p * p - A * c
        if disc < 0:
            continue
        lo, hi = (2 * p - np.sqrt(disc)) / A, (2 * p + np.sqrt(disc)) / A
        e = min(hi, ratio * gamma_t)
        if e >= lo and e > best:
            best, target = e, j
    return None if target is None else (target, best)


def reference_fit(X, targets, K, loss, param, *, lam, step, t0, B, F, gamma, seed, epochs,
                  solver="dsg", rule="gradient", ridge=None, average=False,
                  fit_intercept=True, new_blocks=1, old_blocks=1, ratio=2.0):
    """Train by the papers' algorithms; returns (coef (blocks, F, K),
    intercept (K,), the block each iteration updated).

    ``step`` is theta (times the loss's factor for ``rule="fit"``: the
    caller's); each iteration t takes ``gamma_t = step / (t0 + t)`` (a short
    batch its share) on a new block (DSG), on UDSG's scheduled old block, or
    on CDSG's rule (9) block with its larger step.  The block's update is the
    functional gradient (``rule="gradient"``: Algorithm 1) or -eta times the
    ridge fit of the batch's derivatives by the block's features."""
    n = X.shape[0]
    coef = np.zeros((0, F, K))
    beta = np.zeros((0, K))
    intercept = np.zeros(K)
    avg_coef, avg_int = np.zeros((0, F, K)), np.zeros(K)
    key = stream_key(seed, "sampling")
    t = 0
    chosen_blocks = []
    scores = np.zeros(len(RIDGES))     # fit: each ridge's loss on the batches that followed
    pairs = np.zeros((len(RIDGES), len(RIDGES)))  # fit: sum_b L_b(i) L_b(j)
    last = None     # fit: (step, block, chosen ridge, candidates, whole batch)
    judged = 0      # fit: the number of batches that have judged a step

    def phi(block, rows):
        return random_features(X[rows], F, gamma=gamma, seed=seed, start=block * F, n_jobs=1)

    for epoch in range(epochs):
        order = permutation(n, key, epoch)
        for pos in range(0, n, B):
            rows = order[pos:pos + B]
            t += 1
            m = coef.shape[0]
            Z = random_features(X[rows], m * F, gamma=gamma, seed=seed, n_jobs=1)
            U = intercept + Z @ coef.reshape(m * F, K)
            T = targets[rows]
            G = derivatives(loss, U, T, param)
            gamma_t = step / (t0 + t)
            if len(rows) < min(B, n):
                gamma_t = gamma_t * len(rows) / min(B, n)     # a short batch: its share
            eta, target = gamma_t, m
            if solver == "udsg" and m > 0 and (t - 1) % (new_blocks + old_blocks) >= new_blocks:
                # the documented rule: integer(key(key(seed, sampling), 2**64-1), t, m)
                target = int(integers(m, key, 2**64 - 1, start=t)[0])
            elif solver == "cdsg" and m > 0:
                newest = phi(m - 1, rows)
                sigma2 = newest.var(axis=0, ddof=1).mean() if len(rows) > 1 else 1.0
                choice = _cdsg_choice(beta, G.mean(axis=0), gamma_t, ratio,
                                      derivative_bound(loss, param, G), sigma2, len(rows))
                if choice is not None:
                    target, eta = choice
            chosen_blocks.append(target)
            P = phi(target, rows)
            if rule == "gradient":
                delta = -eta / (len(rows) * F) * P.T @ G
            elif ridge is not None:
                delta = -eta * ridge_fit(P, G, ridge)
            elif rule == "fit-gcv":
                delta = -eta * gcv_direction(P, G)
            else:
                # judge the last step's candidates on this batch (if that
                # step's batch was whole), then take the one-SE ridge of the
                # totals so far (ridge 1 before any judgement)
                if last is not None:
                    eta_past, block, chosen, cands, whole = last
                    if whole:
                        batch = np.array([row_losses(
                            loss, U + eta_past * phi(block, rows) @ (cands[chosen] - c), T,
                            param).sum() for c in cands])
                        scores += batch
                        pairs += np.outer(batch, batch)
                        judged += 1
                chosen = one_se_ridge(scores, pairs, judged) if judged else FIRST_RIDGE
                cands = [ridge_fit(P, G, rho) for rho in RIDGES]
                delta = -eta * cands[chosen]
                last = (eta, target, chosen, cands, len(rows) >= min(B, n))
            coef = coef * (1 - eta * lam)
            beta = beta * (1 - eta * lam)
            if target == m:
                coef = np.concatenate([coef, delta[None]])
                beta = np.vstack([beta, -eta * G.mean(axis=0)])
            else:
                coef[target] += delta
                beta[target] -= eta * G.mean(axis=0)
            if loss == "novelty":
                intercept = intercept - eta * (G.mean(axis=0) + lam)
            elif fit_intercept:
                intercept = intercept - eta * G.mean(axis=0)
            if average:
                if target == m:
                    avg_coef = np.concatenate([avg_coef, np.zeros((1, F, K))])
                avg_coef += (coef - avg_coef) / t
                avg_int += (intercept - avg_int) / t
    if average:
        return avg_coef, avg_int, chosen_blocks
    return coef, intercept, chosen_blocks
