"""The window search of the water filling (``_waterwindow``, the SBP's
per-iteration search) against independent oracles.

Oracles: a sort-then-scan numpy reference (the paired order statistics of
both classes, then the prefix scan), and the quickselect search of
``_waterfill`` (itself tested against the sort reference and the linear
program in test_waterfill.py).  The level may differ from the quickselect's
in the last bits (the sums are added in another order); the covered count,
the covered values and the bias interval may not.  The work counters show
that the window search, not its quickselect fallback, gave the answer.

With bounds (the SBP's fills): whatever the bounds, right or wrong, the cut
is the one without them (itself checked against the oracles above); the
bounds a fill returns for the next one hold rank k and the value after it
(counted with numpy), so a fill given them keeps few values and does not
look at all of them again.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from kernsolve.solvers.sbp._waterfill import water_level, water_level_bias
from kernsolve.solvers.sbp._waterwindow import search_counts, water_level_window


def sorted_level(c, volume, y=None):
    """(level, covered count per class, the counts a rounding tie allows) by
    sorting: k = max{r : vol_r < V}; where vol_r equals V to rounding (the
    water just reaches the next value) any count from the strict one to the
    wide one is exact."""
    if y is None:
        d = np.sort(c)
    else:
        a, b = np.sort(c[y == 1]), np.sort(c[y == -1])
        m = min(a.size, b.size)
        d = a[:m] + b[:m]
    r = np.arange(1, d.size + 1)
    prefix = np.concatenate([[0.0], np.cumsum(d)[:-1]])
    vol = (r - 1) * d - prefix
    k = int(np.flatnonzero(vol < volume).max()) + 1
    s = (volume + prefix[k - 1] + d[k - 1]) / k
    tol = 1e-12 * (abs(volume) + np.sum(np.abs(d)) * d.size)
    allowed = range(int(np.count_nonzero(vol < volume - tol)),
                    int(np.count_nonzero(vol < volume + tol)) + 1)
    return (s if y is None else s / 2), k, allowed


def inputs(rng, kind, n):
    if kind == "normal":
        return rng.normal(size=n)
    if kind == "ties":
        return rng.integers(-3, 3, size=n) / 7.0
    if kind == "all equal":
        return np.full(n, 0.3)
    if kind == "cluster":          # most values within 1e-6, a few far
        c = 0.9 + 1e-6 * rng.normal(size=n)
        c[rng.random(n) < 0.05] = rng.normal(size=n)[:1]
        return c
    if kind == "half zero":
        return np.r_[rng.normal(size=n - n // 2), np.zeros(n // 2)]
    raise AssertionError(kind)


KINDS = ["normal", "ties", "all equal", "cluster", "half zero"]
VOLUMES = [1e-9, 1e-3, 0.5, 13.3, 1e6]          # 1e6: more than the whole range


def check_against_quickselect(c, y, volume, lo=None, hi=None):
    g, b, covered, _, _ = water_level_window(c, volume, y, lo=lo, hi=hi)
    if y is None:
        g0, cov0 = water_level(c, volume)
        assert g == pytest.approx(g0, rel=1e-12, abs=1e-13)
        assert np.array_equal(covered[0], np.sort(cov0))       # same set
        level, k, allowed = sorted_level(c, volume)
        assert covered[0].size in allowed
    else:
        g0, b0, cp, cn = water_level_bias(c, y, volume)
        assert g == pytest.approx(g0, rel=1e-12, abs=1e-13)
        assert b == pytest.approx(b0, rel=1e-9, abs=1e-12)
        level, k, allowed = sorted_level(c, volume, y)
        assert covered[0].size == covered[1].size == cp.size
        assert covered[0].size in allowed
        # the k smallest of each class (ties: the same values, first indices)
        for cov, cov0 in ((covered[0], cp), (covered[1], cn)):
            assert np.array_equal(np.sort(c[cov]), np.sort(c[cov0]))
    assert g == pytest.approx(level, rel=1e-11, abs=1e-12)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("volume", VOLUMES)
def test_same_level_and_covered_set_as_quickselect(kind, volume):
    rng = np.random.default_rng(KINDS.index(kind) * 100 + VOLUMES.index(volume))
    search_counts(reset=True)
    for n in (1, 2, 7, 300, 5000):
        c = inputs(rng, kind, n)
        check_against_quickselect(c, None, volume)
        if n >= 2:
            for frac in (0.24, 0.5, 0.9):
                y = np.where(rng.random(n) < frac, 1, -1)
                y[0], y[-1] = 1, -1
                check_against_quickselect(c, y, volume)
    counts = search_counts()
    # the window search answered (the fallback is for rounding near-ties)
    assert counts["fallbacks"] == 0
    if kind not in ("all equal",):
        assert counts["sorted"] < counts["fills"] * 1000


def test_one_class_tiny():
    rng = np.random.default_rng(3)
    c = rng.normal(size=4000)
    y = -np.ones(4000, dtype=int)
    y[rng.choice(4000, size=2, replace=False)] = 1
    for volume in (1e-3, 1.0, 100.0, 1e5):
        check_against_quickselect(c, y, volume)


def test_small_window_after_one_pass_on_sbp_like_responses():
    # responses near the margin, as in the SBP: a dense band and two classes
    rng = np.random.default_rng(4)
    n = 12000
    y = np.where(rng.random(n) < 0.24, 1, -1)
    c = -0.93 * y + 2e-3 * rng.normal(size=n) + 0.05 * (rng.random(n) < 0.1)
    search_counts(reset=True)
    check_against_quickselect(c, y, 13.3)
    counts = search_counts()
    assert counts["fallbacks"] == 0 and counts["rounds"] <= 3
    assert counts["sorted"] <= 2 * 64 * counts["fills"]


def test_cut_takes_ties_in_index_order():
    # positives all tied at 0: the covered k positives are the first k indices
    c = np.array([0.0, 5.0, 0.0, 0.0, 1.0, 0.0, 2.0])
    y = np.array([1, -1, 1, 1, -1, 1, -1])
    g, b, covered, _, _ = water_level_window(c, 0.5, y)
    k = covered[0].size
    assert np.array_equal(covered[0], np.flatnonzero(y == 1)[:k])
    assert np.array_equal(covered[1], np.flatnonzero(y == -1)[np.argsort(c[y == -1], kind="stable")][:k])


def test_zero_volume_uses_the_quickselect():
    c = np.array([0.2, -0.1, -0.1, 0.4])
    g, b, covered, fell_back, _ = water_level_window(c, 0.0)
    assert fell_back and g == -0.1 and list(covered[0]) == [1, 2]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(-5, 5), st.booleans()), min_size=2, max_size=60),
       st.floats(1e-6, 40.0))
def test_property_against_sort(points, volume):
    c = np.array([p[0] for p in points], dtype=float) / 3
    y = np.array([1 if p[1] else -1 for p in points])
    y[0], y[1] = 1, -1
    check_against_quickselect(c, y, volume)
    check_against_quickselect(c, None, volume)


def test_a_tie_at_the_water_line():
    """The water reaches the next values exactly (vol_2 = vol_3 = V in reals):
    hypothesis's case where the sort's rounding counted 3 and the searches 1."""
    check_against_quickselect(np.array([-2.0, -2.0, -3.0]) / 3, None, 1 / 3)


def test_bad_input():
    with pytest.raises(ValueError, match="finite"):
        water_level_window([0.1, np.nan], 1.0)
    with pytest.raises(ValueError, match="volume"):
        water_level_window([0.1], -1.0)
    with pytest.raises(ValueError, match="both classes"):
        water_level_window([0.1, 0.2], 1.0, [1, 1])


def class_values(c, y):
    return [c] if y is None else [c[y == 1], c[y == -1]]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("volume", [1e-3, 0.5, 13.3])
def test_any_bounds_give_the_cut_without(kind, volume):
    rng = np.random.default_rng(KINDS.index(kind) * 10 + 7)
    n = 3000
    c = inputs(rng, kind, n)
    for y in (None, np.where(rng.random(n) < 0.3, 1, -1)):
        g, b, covered, _, (lo, hi) = water_level_window(c, volume, y)
        k = covered[0].size
        values = class_values(c, y)
        sorted_values = [np.sort(v) for v in values]
        # the k-th value of each class, a value well below, one well above
        kth = [v[k - 1] for v in sorted_values]
        far_lo = [v[max(k - 40, 0)] for v in sorted_values]
        far_hi = [v[min(k + 40, v.size - 1)] for v in sorted_values]
        nc = len(values)
        trials = [(far_lo, far_hi),                       # right
                  (lo, hi),                               # the fill's own
                  (kth, far_hi),                          # rank k below lo: wrong
                  (far_lo, kth),                          # k + 1 above hi: wrong
                  ([-np.inf] * nc, far_lo),               # nothing kept but below
                  (far_hi, [np.inf] * nc),                # lo above everything kept
                  (far_hi, far_lo)]                       # lo > hi
        for tlo, thi in trials:
            gb, bb, covered_b, _, _ = water_level_window(c, volume, y, lo=tlo, hi=thi)
            assert gb == pytest.approx(g, rel=1e-12, abs=1e-13)
            assert bb == pytest.approx(b, rel=1e-9, abs=1e-12)
            for got, want in zip(covered_b, covered):
                assert np.array_equal(got, want)
            check_against_quickselect(c, y, volume, lo=tlo, hi=thi)


def test_next_bounds_hold_rank_k_and_keep_few_values():
    rng = np.random.default_rng(11)
    n = 20000
    y = np.where(rng.random(n) < 0.24, 1, -1)
    c = -0.03 * y + 0.01 * rng.normal(size=n)
    volume = 40.0
    search_counts(reset=True)
    g, b, covered, _, (lo, hi) = water_level_window(c, volume, y)
    k = covered[0].size
    assert k > 500
    for v, low, high in zip(class_values(c, y), lo, hi):
        assert np.isfinite(low) and np.isfinite(high)
        assert np.count_nonzero(v < low) < k            # rank k is not below lo
        assert np.count_nonzero(v <= high) > k          # nor is rank k + 1 above hi
    # a small move (as an SBP step makes), bounds moved by its extremes
    shift = 1e-4 * rng.random(n)
    moved = c + shift
    lo2 = [x + shift.min() for x in lo]
    hi2 = [x + shift.max() for x in hi]
    search_counts(reset=True)
    check_against_quickselect(moved, y, volume, lo=lo2, hi=hi2)
    counts = search_counts()
    assert counts["bounded"] == 1 and counts["widened"] == 0
    assert counts["kept"] < n / 10                       # the window, not the classes
    assert counts["members"] < n / 2                     # members: up to hi only
