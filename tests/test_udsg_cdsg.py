"""UDSG and CDSG (Algorithms 3 and 4 of "utilize old coordinates", with
mini-batches and feature blocks) against independent oracles.

* Both algorithms re-implemented in numpy on the explicitly materialised
  random Fourier map (``random_features``, checked bit for bit against the
  spec in test_features.py), with the explicit decay of every coefficient
  and the true (not lazily scaled) beta_j: same blocks chosen, same
  coefficients.
* UDSG with U = 0 is DSG bit for bit.
* Fewer blocks than DSG for the same iterations; the regularised empirical
  risk (doc/dsg.md) decreases and the test error is close to DSG's on the
  DSG paper's 2-D synthetic problem.
* Thread count and seed determinism; bad options.
"""
import numpy as np
import pytest

import kernsolve
from kernsolve.solvers.dsg.options import hyperparameters
from kernsolve.solvers.dsg.targets import Targets
from kernsolve.solvers.dsg.trainer import DSGTrainer
from kernsolve._features import random_features
from kernsolve._random import integers, permutation, stream_key


@pytest.fixture(scope="module")
def heart():
    y, X = kernsolve.read_problem(kernsolve.dataset_path("heart_scale"))
    return y[:90], X[:90]


# ------------------------------------------ Algorithms 3 and 4 in numpy

def _hinge_grad(u, t):
    return np.where(t * u < 1, -t, 0.0)


def _reference(X, t_enc, solver, *, lam, step, t0, B, F, gamma, seed, epochs,
               G_new=1, U_old=0, ratio=1.0):
    """UDSG / CDSG on the hinge loss (one output), every quantity explicit."""
    n = X.shape[0]
    coef = np.zeros((0, F))
    beta = np.zeros(0)
    b0 = 0.0
    key = stream_key(seed, "sampling")
    t = 0
    chosen = []

    def phi(block, rows):
        return random_features(X[rows], F, gamma=gamma, seed=seed, start=block * F, n_jobs=1)

    for epoch in range(epochs):
        order = permutation(n, key, epoch)
        for pos in range(0, n, B):
            rows = order[pos:pos + B]
            t += 1
            m = coef.shape[0]
            Z = random_features(X[rows], m * F, gamma=gamma, seed=seed, n_jobs=1)
            u = b0 + Z @ coef.ravel()
            g = _hinge_grad(u, t_enc[rows, 0])
            gamma_t = step / (t0 + t)
            if len(rows) < min(B, n):
                gamma_t = gamma_t * len(rows) / min(B, n)     # a short batch: its share
            eta, target = gamma_t, m
            if solver == "udsg" and m > 0 and (t - 1) % (G_new + U_old) >= G_new:
                # the documented rule: integer(key(key(seed, sampling), 2**64-1), t, m)
                target = int(integers(m, key, 2**64 - 1, start=t)[0])
            elif solver == "cdsg" and m > 0:
                gbar = g.mean()
                sigma2 = phi(m - 1, rows).var(axis=0, ddof=1).mean() if len(rows) > 1 else 1.0
                M = 1.0                                   # |hinge'| <= 1
                best = gamma_t
                for j in range(m):
                    # largest eta <= ratio*gamma_t with
                    # 2 (beta_j - eta g)^2 + 2 (eta M sigma)^2 / B^2 <= beta_j^2 + (gamma_t g)^2
                    A = 2 * gbar ** 2 + 2 * M ** 2 * sigma2 / len(rows) ** 2
                    coeffs = [A, -4 * beta[j] * gbar, beta[j] ** 2 - gamma_t ** 2 * gbar ** 2]
                    disc = coeffs[1] ** 2 - 4 * coeffs[0] * coeffs[2]
                    if A <= 0 or disc < 0:
                        continue
                    lo, hi = sorted(np.roots(coeffs).real) if disc > 0 else 2 * [-coeffs[1] / (2 * A)]
                    e = min(hi, ratio * gamma_t)
                    if e >= lo and e > best:
                        best, target = e, j
                if target < m:
                    eta = best
            chosen.append(target)
            delta = -eta / (len(rows) * F) * (phi(target, rows).T @ g)
            coef = coef * (1 - eta * lam)
            beta = beta * (1 - eta * lam)
            if target == m:
                coef = np.vstack([coef, delta])
                beta = np.append(beta, -eta * g.mean())
            else:
                coef[target] += delta
                beta[target] -= eta * g.mean()
            b0 -= eta * g.mean()
    return coef, b0, chosen


@pytest.mark.parametrize("solver,extra,kw", [
    ("udsg", "--new-blocks 1 --old-blocks 1", dict(G_new=1, U_old=1)),
    ("udsg", "--new-blocks 2 --old-blocks 3", dict(G_new=2, U_old=3)),
    ("cdsg", "", dict(ratio=2.0)),
    ("cdsg", "--max-step-ratio 5", dict(ratio=5.0)),
])
def test_matches_numpy_algorithms_3_and_4(heart, solver, extra, kw):
    y, X = heart
    opts = (f"-q --solver {solver} --loss hinge -g 0.3 --batch-size 7 --feature-block 5 "
            f"--step 2 --t0 3 --epochs 2 --seed 11 --threads 1 --lambda 0.01 "
            f"--step-rule gradient {extra}")
    model = kernsolve.train(y, X, opts)
    enc = Targets.from_data("classification", "hinge", y).encode(y)
    coef, b0, chosen = _reference(X, enc, solver, lam=0.01, step=2, t0=3, B=7, F=5,
                                  gamma=0.3, seed=11, epochs=2, **kw)
    assert len(chosen) == model.stats["n_iter"]
    assert model.n_blocks == coef.shape[0] < model.stats["n_iter"]
    assert model.stats["n_old_updates"] == model.stats["n_iter"] - coef.shape[0] > 0
    np.testing.assert_allclose(model.coef[:, :, 0], coef, rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(model.intercept[0], b0, rtol=1e-9, atol=1e-13)


def test_udsg_without_old_blocks_is_dsg(heart):
    y, X = heart
    base = "-q -g median --batch-size 8 --feature-block 6 --step 4 --epochs 2 --seed 5"
    dsg = kernsolve.train(y, X, base + " --solver dsg")
    udsg = kernsolve.train(y, X, base + " --solver udsg --new-blocks 1 --old-blocks 0")
    assert udsg.solver == "udsg" and dsg.solver == "dsg"
    assert np.array_equal(dsg.coef, udsg.coef)
    assert np.array_equal(dsg.intercept, udsg.intercept)
    assert udsg.stats["n_old_updates"] == 0


# ------------------------------------- behaviour on a 2-D synthetic problem

def _synthetic(n, rng):
    """Two classes split by the DSG paper's section 7.1 radial function."""
    X = rng.uniform(-5, 5, size=(n, 2))
    r = np.linalg.norm(X, axis=1)
    f = np.cos(0.5 * np.pi * r) * np.exp(-0.1 * np.pi * r)
    return X, np.where(f + 0.05 * rng.normal(size=n) > 0, 1.0, -1.0)


def _objective(model, X, y, lam):
    """Regularised empirical risk of doc/dsg.md: mean hinge loss plus
    lam/2 * D * sum of squared coefficients (D = number of random features)."""
    f = model.decision_function(X)[:, 0]
    t = np.where(y == model.labels[0], 1.0, -1.0)
    return (np.mean(np.maximum(0, 1 - t * f))
            + 0.5 * lam * model.n_random_features * np.sum(model.coef ** 2))


@pytest.fixture(scope="module")
def synthetic():
    rng = np.random.default_rng(0)
    X, y = _synthetic(1500, rng)
    Xt, yt = _synthetic(1000, rng)
    return X, y, Xt, yt


def test_fewer_blocks_lower_objective_similar_error(synthetic):
    X, y, Xt, yt = synthetic
    lam = 1e-5
    base = (f"-q -g 0.5 --loss hinge --lambda {lam} --step 200 --t0 20 --batch-size 32 "
            "--feature-block 16 --seed 2 --threads 2 --step-rule gradient")
    start = kernsolve.train(y, X, base + " --solver dsg --epochs 0.03")
    results = {}
    for solver in ("dsg", "udsg", "cdsg"):
        m = kernsolve.train(y, X, base + f" --solver {solver} --epochs 3")
        results[solver] = (m.n_blocks, _objective(m, X, y, lam), np.mean(m.predict(Xt) != yt))
    n_iter = int(np.ceil(1500 / 32)) * 3
    assert results["dsg"][0] == n_iter
    assert results["udsg"][0] == (n_iter + 1) // 2          # G = U = 1
    assert results["cdsg"][0] < n_iter
    first = _objective(start, X, y, lam)
    for solver, (_, obj, err) in results.items():
        assert obj < 0.5 * first, (solver, obj, first)
        assert err < results["dsg"][2] + 0.05, (solver, results)
    assert results["dsg"][2] < 0.25          # the problem is learnt at all


def test_threads_and_seed(heart):
    y, X = heart
    for solver in ("udsg --old-blocks 2", "cdsg --max-step-ratio 3"):
        base = f"-q --solver {solver} -g median --epochs 3 --batch-size 8 --step 5 --seed 3"
        one = kernsolve.train(y, X, base + " --threads 1")
        two = kernsolve.train(y, X, base + " --threads 2 -m 0.001")   # blocks regenerated
        again = kernsolve.train(y, X, base + " --threads 1")
        assert one.stats["n_old_updates"] > 0
        for m in (two, again):
            assert np.array_equal(one.coef, m.coef) and np.array_equal(one.intercept, m.intercept)
        other = kernsolve.train(y, X, base.replace("--seed 3", "--seed 4") + " --threads 1")
        assert not np.array_equal(one.coef, other.coef)


def test_chunks_continue_the_run(heart):
    """Two DSGTrainer calls (partial_fit-style) are one two-epoch run: the
    iteration counter, beta and the lazy scale carry over."""
    y, X = heart
    for solver in ("udsg --old-blocks 2", "cdsg"):
        opts = f"-q --solver {solver} -g 0.2 --batch-size 8 --step 5 --seed 7"
        whole = kernsolve.train(y, X, opts + " --epochs 2")
        param = kernsolve.parse_options(opts)
        targets = Targets.from_data("classification", "hinge", y)
        trainer = DSGTrainer(hyperparameters(param, X.shape[0], X.shape[1], "hinge", 0.2),
                                  targets)
        trainer.fit_rows(X, y).fit_rows(X, y)
        part = trainer.model()
        assert part.stats["n_old_updates"] == whole.stats["n_old_updates"] > 0
        assert np.array_equal(part.coef, whole.coef)
        assert np.array_equal(part.intercept, whole.intercept)


def test_model_file_records_solver(heart, tmp_path):
    y, X = heart
    m = kernsolve.train(y, X, "-q --solver cdsg -g median --step 5")
    path = tmp_path / "cdsg.model"
    kernsolve.save_model(path, m)
    back = kernsolve.load_model(path)
    assert back.solver == "cdsg" and "solver cdsg" in path.read_text()
    assert np.array_equal(back.coef, m.coef)
    assert np.array_equal(back.predict(X), m.predict(X))


@pytest.mark.parametrize("options,match", [
    ("--solver udsg --old-blocks -1", "--old-blocks"),
    ("--solver udsg --new-blocks 0", "--new-blocks"),
    ("--solver udsg --new-blocks 1.5", "--new-blocks"),
    ("--solver cdsg --max-step-ratio 1", "--max-step-ratio"),
    ("--solver cdsg --max-step-ratio 10 --lambda 0.5 --step 1 --t0 1", "--max-step-ratio"),
    ("--solver dsg --old-blocks 1", "old-blocks"),
    ("--solver cdsg --new-blocks 2", "new-blocks"),
])
def test_bad_options(heart, options, match):
    y, X = heart
    with pytest.raises(ValueError, match=match):
        kernsolve.train(y, X, "-q " + options)
