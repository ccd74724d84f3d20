"""The SMO solver's phase timers (issue 16, item 2; doc/smo.md, "Where the time goes").

Properties: with the timers on, the result carries the five ``time_*`` keys,
each >= 0, summing to at most the solve's own wall time (``seconds``, the
clock around the whole solve); the solution is bit for bit the one without
timers (the oracle: the same solve with the timers off, on every formulation
-- plain, nu, SVR, no-bias -- with every parallel sweep forced on 2 threads,
where the chunk timers run); a trained model's file is byte-identical; with
the timers off (the default) no ``time_*`` key appears.
"""
import io
import os

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file

import kernsolve
from kernsolve._kernels import as_canonical
from kernsolve.solvers.smo import _smo
from kernsolve.solvers.smo._solve import solve

KEYS = ("time_kernel_rows", "time_select", "time_gradient", "time_shrink", "time_sync")


@pytest.fixture
def tuning():
    """Every loop parallel on small problems (chunk timers and sync run), restored after."""
    old = _smo._get_tuning()
    _smo._set_tuning(par_min=16, adaptive=False)
    try:
        yield
    finally:
        _smo._set_tuning(**old)


def _a9a(shared, n):
    X, labels = load_svmlight_file(io.BytesIO(shared.lines("a9a", n)), n_features=123)
    return as_canonical(X.tocsr()), np.where(labels > 0, 1, -1).astype(np.int8)


def _check_timers(info):
    assert all(k in info for k in KEYS), sorted(info)
    parts = [info[k] for k in KEYS]
    assert all(v >= 0 for v in parts), parts
    # The phases are disjoint stretches of the solve: at most its wall time.
    assert sum(parts) <= info["seconds"], (parts, info["seconds"])
    assert info["time_kernel_rows"] > 0


# formulation -> (svr, nu, bias, p, alpha start, C) on l = n or 2n variables
def _problem(kind, y, n):
    if kind == "svr":
        target = np.linspace(-1, 1, n)
        p = np.concatenate([0.1 - target, 0.1 + target])
        ys = np.concatenate([np.ones(n), -np.ones(n)]).astype(np.int8)
        return dict(svr=True), ys, p, np.zeros(2 * n), np.full(2 * n, 2.0)
    if kind == "nu":
        # Solver_NU's feasible start: sum alpha = nu*l/2 in each class.
        nu = 0.3
        alpha = np.zeros(n)
        for cls in (1, -1):
            idx = np.flatnonzero(y == cls)
            total = nu * n / 2
            alpha[idx[:int(total)]] = 1.0
            alpha[idx[int(total)]] = total - int(total)
        return dict(nu=True), y, np.zeros(n), alpha, np.ones(n)
    if kind == "nobias":
        return dict(bias=False), y, -np.ones(n), np.zeros(n), np.full(n, 4.0)
    return {}, y, -np.ones(n), np.zeros(n), np.full(n, 4.0)


@pytest.mark.parametrize("kind", ["c", "nu", "svr", "nobias"])
@pytest.mark.parametrize("threads", [1, 2])
def test_timers_add_up_and_change_nothing(shared, tuning, kind, threads):
    X, y = _a9a(shared, 600)
    n = X.shape[0]
    opts, ys, p, alpha0, C = _problem(kind, y, n)
    runs = {}
    for timers in (False, True):
        alpha = alpha0.copy()
        info = solve(X, 2, 3, 0.05, 0.0, ys, p, alpha, C, n_threads=threads,
                     cache_mb=1.0, timers=timers, **opts)
        runs[timers] = (alpha, info)
    (a_off, off), (a_on, on) = runs[False], runs[True]
    assert not any(k in off for k in KEYS)
    _check_timers(on)
    assert a_on.tobytes() == a_off.tobytes()
    for key in ("rho", "obj", "n_iter", "n_kernel_evals", "gap"):
        assert np.array_equal(on[key], off[key]), key
    if threads == 1:
        assert on["time_sync"] == 0.0       # no parallel region ran
    if threads == 2 and kind != "svr":
        assert on["time_sync"] > 0.0        # every sweep was a parallel region


def test_model_stats_and_file_unchanged(shared, tuning, tmp_path):
    """kernsolve.train: the model's stats carry the sums over the one-vs-one
    pairs, and the model file is byte-identical with the timers on."""
    text = shared.lines("fashion-mnist.scale", 300)
    y, X = kernsolve.read_problem(io.BytesIO(text), n_features=784)
    assert len(np.unique(y)) >= 3
    assert _smo._get_tuning()["timers"] is False
    files = {}
    for timers in (False, True):
        _smo._set_tuning(timers=timers)
        model = kernsolve.train(y, X, "-q -c 10 -g 0.02", n_jobs=2)
        path = os.path.join(tmp_path, f"m{int(timers)}")
        kernsolve.save_model(path, model)
        files[timers] = open(path, "rb").read()
        pairs = model.stats["pairs"]
        if timers:
            _check_timers(model.stats)
            for key in KEYS:
                assert model.stats[key] == pytest.approx(sum(p[key] for p in pairs))
            for pair in pairs:
                _check_timers(pair)
        else:
            assert not any(k in model.stats for k in KEYS)
            assert not any(k in pair for pair in pairs for k in KEYS)
    assert files[True] == files[False]


def test_timers_follow_the_tuning_default(shared):
    X, y = _a9a(shared, 200)
    old = _smo._get_tuning()
    try:
        _smo._set_tuning(timers=True)
        assert _smo._get_tuning()["timers"] is True
        alpha = np.zeros(y.size)
        info = solve(X, 2, 3, 0.05, 0.0, y, -np.ones(y.size), alpha, np.ones(y.size))
        _check_timers(info)
        info = solve(X, 2, 3, 0.05, 0.0, y, -np.ones(y.size), np.zeros(y.size),
                     np.ones(y.size), timers=False)
        assert not any(k in info for k in KEYS)
    finally:
        _smo._set_tuning(**old)
    assert _smo._get_tuning()["timers"] is False
