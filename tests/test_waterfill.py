"""Water filling (SBP paper, Algorithms 2 and 3) against independent oracles.

Oracles: a sort-then-scan reference for each case, the linear program that
defines the water level (scipy's HiGHS), and the defining properties (the
poured volume equals n*nu; the covered points are those strictly below the
level; with a bias, equal counts in both basins).
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.optimize import linprog

from kernsolve.solvers.sbp._waterfill import water_level, water_level_bias


# ------------------------------------------------------------------ oracles

def brute_level(c, volume):
    """Sort, then scan the prefixes: the level at which `volume` fills the basin."""
    s = np.sort(np.asarray(c, dtype=float))
    if volume <= 0:
        return s[0]
    prefix = 0.0
    for k in range(1, s.size + 1):
        prefix += s[k - 1]
        g = (volume + prefix) / k
        if k == s.size or g <= s[k]:
            return g
    raise AssertionError("unreachable")


def brute_level_bias(c, y, volume):
    """Pair the order statistics of both classes, then fill d_j = a_(j) + b_(j)."""
    a = np.sort(c[y == 1])
    b = np.sort(c[y == -1])
    m = min(a.size, b.size)
    d = a[:m] + b[:m]
    s = brute_level(d, volume) if volume > 0 else d[0]
    return s / 2


def lp_level(c, volume, y=None):
    """max gamma s.t. gamma <= c_i + y_i b + xi_i, xi >= 0, sum xi <= volume."""
    n = c.size
    bias = y is not None
    # variables: gamma, [b], xi_1..xi_n
    nv = 1 + int(bias) + n
    cost = np.zeros(nv)
    cost[0] = -1.0
    A = np.zeros((n + 1, nv))
    ub = np.zeros(n + 1)
    A[:n, 0] = 1.0
    if bias:
        A[:n, 1] = -y
    A[np.arange(n), 1 + int(bias) + np.arange(n)] = -1.0
    ub[:n] = c
    A[n, 1 + int(bias):] = 1.0
    ub[n] = volume
    bounds = [(None, None)] * (1 + int(bias)) + [(0, None)] * n
    res = linprog(cost, A_ub=A, b_ub=ub, bounds=bounds, method="highs")
    assert res.status == 0
    return -res.fun


def poured(c, level):
    return np.maximum(level - c, 0.0).sum()


# ------------------------------------------------------------------ no bias

@pytest.mark.parametrize("n", [1, 2, 5, 50, 1000])
@pytest.mark.parametrize("nu", [0.0, 1e-4, 0.01, 0.3, 1.0, 5.0])
def test_level_matches_sort_reference(n, nu):
    rng = np.random.default_rng(n * 7 + int(nu * 1000))
    c = rng.normal(size=n)
    volume = nu * n
    g, covered = water_level(c, volume, seed=3)
    assert g == pytest.approx(brute_level(c, volume), rel=1e-12, abs=1e-12)
    if volume > 0:
        # defining property: the volume poured is n*nu
        assert poured(c, g) == pytest.approx(volume, rel=1e-10, abs=1e-12)
        assert np.array_equal(np.sort(covered), np.flatnonzero(c < g))
    else:
        assert g == c.min()
        assert np.array_equal(np.sort(covered), np.flatnonzero(c == c.min()))


def test_level_matches_lp():
    rng = np.random.default_rng(0)
    for trial in range(5):
        n = 40
        c = rng.uniform(-1, 1, size=n)
        volume = rng.uniform(0.01, 3.0)
        g, _ = water_level(c, volume)
        assert g == pytest.approx(lp_level(c, volume), abs=1e-7)


def test_ties_and_all_equal():
    c = np.array([0.5, 0.1, 0.1, 0.1, 0.7, 0.1, 0.5, 0.5])
    for volume in [0.0, 1e-9, 0.1, 0.4, 0.8, 1.2, 2.0, 10.0]:
        g, covered = water_level(c, volume, seed=11)
        assert g == pytest.approx(brute_level(c, volume), rel=1e-13, abs=1e-15)
        if volume > 0:
            assert np.array_equal(np.sort(covered), np.flatnonzero(c < g))
    # all equal: any positive volume covers every point, equally
    c = np.full(17, -0.25)
    g, covered = water_level(c, 1.7)
    assert g == pytest.approx(-0.25 + 0.1)
    assert covered.size == 17
    g, covered = water_level(c, 0.0)
    assert g == -0.25 and covered.size == 17


def test_volume_covering_everything_and_single_point():
    c = np.array([0.3, -0.2, 0.9])
    g, covered = water_level(c, 100.0)
    assert g == pytest.approx((100.0 + c.sum()) / 3)
    assert covered.size == 3
    g, covered = water_level([0.42], 0.5)
    assert g == pytest.approx(0.92)
    assert list(covered) == [0]


def test_seed_changes_order_not_result():
    rng = np.random.default_rng(5)
    c = rng.normal(size=500)
    g1, cov1 = water_level(c, 12.0, seed=1)
    g2, cov2 = water_level(c, 12.0, seed=2)
    assert g1 == pytest.approx(g2, rel=1e-13)
    assert np.array_equal(np.sort(cov1), np.sort(cov2))
    g3, cov3 = water_level(c, 12.0, seed=1)
    assert g3 == g1 and np.array_equal(cov3, cov1)    # reproducible bit for bit


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-6, 6), min_size=1, max_size=40),
       st.floats(0.0, 30.0), st.integers(0, 2**32))
def test_level_property(values, volume, seed):
    c = np.array(values, dtype=float) / 4          # many ties
    g, covered = water_level(c, volume, seed=seed)
    assert g == pytest.approx(brute_level(c, volume), rel=1e-12, abs=1e-12)
    if volume > 0:
        assert poured(c, g) == pytest.approx(volume, rel=1e-10, abs=1e-10)
        # covered: every point below the level, none above it (a volume
        # below the rounding of the level leaves the level at the value)
        assert set(np.flatnonzero(c < g)) <= set(covered)
        assert np.all(c[covered] <= g)


# ------------------------------------------------------------------ with bias

def check_bias_solution(c, y, volume, g, b, cov_p, cov_n):
    # equal counts, covered are the smallest of each class
    assert cov_p.size == cov_n.size >= 1
    assert np.all(y[cov_p] == 1) and np.all(y[cov_n] == -1)
    for cov, cls in ((cov_p, 1), (cov_n, -1)):
        others = np.setdiff1d(np.flatnonzero(y == cls), cov)
        if others.size:
            assert c[cov].max() <= c[others].min()
    assert g == pytest.approx(brute_level_bias(c, y, volume), rel=1e-11, abs=1e-12)
    # heights c_i + y_i b, level g: the poured volume is `volume` ...
    h = c + y * b
    if volume > 0:
        assert poured(h, g) == pytest.approx(volume, rel=1e-9, abs=1e-10)
        # ... and every point strictly below the level is covered
        below = np.flatnonzero(h < g - 1e-12)
        assert set(below) <= set(cov_p) | set(cov_n)
        # covered points are not above the level
        assert np.all(h[np.concatenate([cov_p, cov_n])] <= g + 1e-9)


@pytest.mark.parametrize("n_pos,n_neg", [(1, 1), (1, 7), (6, 2), (40, 60), (500, 300)])
@pytest.mark.parametrize("nu", [0.0, 0.001, 0.05, 0.5, 3.0])
def test_bias_matches_references(n_pos, n_neg, nu):
    rng = np.random.default_rng(n_pos * 31 + n_neg + int(nu * 100))
    y = np.concatenate([np.ones(n_pos), -np.ones(n_neg)])
    rng.shuffle(y)
    c = rng.normal(size=y.size) + 0.3 * y
    volume = nu * y.size
    g, b, cp, cn = water_level_bias(c, y, volume, seed=9)
    check_bias_solution(c, y, volume, g, b, cp, cn)


def test_bias_matches_lp():
    rng = np.random.default_rng(1)
    for trial in range(6):
        n = 30
        y = np.where(rng.random(n) < 0.4, 1.0, -1.0)
        y[0], y[1] = 1, -1
        c = rng.uniform(-1, 1, size=n)
        volume = rng.uniform(0.0, 4.0)
        g, b, cp, cn = water_level_bias(c, y, volume)
        assert g == pytest.approx(lp_level(c, volume, y), abs=1e-7)
        check_bias_solution(c, y, volume, g, b, cp, cn)


def test_bias_is_the_midpoint_of_the_optimal_interval():
    # positives {0, 10}, negatives {0, 1}: with volume 1, k = 1, s = 1, and
    # g+ can be anything in [0, 1] (g- = 1 - g+): midpoint g+ = 0.5, b = 0.
    c = np.array([0.0, 10.0, 0.0, 1.0])
    y = np.array([1, 1, -1, -1])
    g, b, cp, cn = water_level_bias(c, y, 1.0)
    assert g == pytest.approx(0.5) and b == pytest.approx(0.0)
    # shift the negatives up by 2: the level rises by 1 and b follows
    g, b, cp, cn = water_level_bias(c + 2 * (y == -1), y, 1.0)
    assert g == pytest.approx(1.5) and b == pytest.approx(1.0)


def test_bias_ties_all_equal():
    y = np.array([1, -1] * 10)
    c = np.zeros(20)
    g, b, cp, cn = water_level_bias(c, y, 2.0)
    assert g == pytest.approx(0.1) and b == pytest.approx(0.0)
    assert cp.size == cn.size == 10
    g, b, cp, cn = water_level_bias(c, y, 0.0)
    assert g == 0.0 and cp.size == cn.size == 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-5, 5), st.booleans()), min_size=2, max_size=40),
       st.floats(0.0, 20.0), st.integers(0, 2**32))
def test_bias_property(points, volume, seed):
    c = np.array([p[0] for p in points], dtype=float) / 3
    y = np.array([1.0 if p[1] else -1.0 for p in points])
    y[0], y[1] = 1.0, -1.0
    g, b, cp, cn = water_level_bias(c, y, volume, seed=seed)
    check_bias_solution(c, y, volume, g, b, cp, cn)


def test_bad_input():
    with pytest.raises(ValueError, match="both classes"):
        water_level_bias([0.1, 0.2], [1, 1], 1.0)
    with pytest.raises(ValueError, match="finite"):
        water_level([0.1, np.nan], 1.0)
    with pytest.raises(ValueError, match="volume"):
        water_level([0.1], -1.0)
    with pytest.raises(ValueError, match="at least one"):
        water_level([], 1.0)
    with pytest.raises(ValueError, match=r"\+1 and -1"):
        water_level_bias([0.1, 0.2], [1, 0], 1.0)
