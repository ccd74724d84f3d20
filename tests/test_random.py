"""The portable counter-based RNG (kernsolve/_random.py, _core/_random.pxd).

An independent pure-Python implementation of doc/random.md lives here; the
compiled generator must agree with it bit for bit on integers and uniforms,
and to a few ulp on normals and Cauchy draws (those go through libm).  Literal
golden values catch any change of algorithm, constants or stream table.
"""
import itertools
import math

import numpy as np
import pytest
from scipy import stats

from kernsolve import _random as R
from kernsolve._core import _random as C

MASK32 = (1 << 32) - 1
MASK64 = (1 << 64) - 1


# ---------------------------------------------------------------------------
# Reference implementation, written from doc/random.md only.

def ref_philox(ctr, key):
    x = list(ctr)
    k0, k1 = key
    for rnd in range(10):
        if rnd:
            k0 = (k0 + 0x9E3779B9) & MASK32
            k1 = (k1 + 0xBB67AE85) & MASK32
        a = 0xD2511F53 * x[0]
        b = 0xCD9E8D57 * x[2]
        x = [(b >> 32) ^ x[1] ^ k0, b & MASK32, (a >> 32) ^ x[3] ^ k1, a & MASK32]
    return tuple(x)


def ref_words(key, counter, sub=0):
    return ref_philox((counter & MASK32, counter >> 32, sub, 0),
                      (key & MASK32, key >> 32))


def ref_key(seed, stream):
    y = ref_philox((stream & MASK32, stream >> 32, 0, 0x4B455953),
                   (seed & MASK32, seed >> 32))
    return y[0] | (y[1] << 32)


def ref_u64(key, counter, sub=0):
    y = ref_words(key, counter, sub)
    return y[0] | (y[1] << 32)


def ref_uniform(key, counter):
    return (ref_u64(key, counter) >> 11) * 2.0 ** -53


def ref_normal(key, counter):
    y = ref_words(key, counter)
    a = y[0] | (y[1] << 32)
    b = y[2] | (y[3] << 32)
    u1 = ((a >> 11) + 1) * 2.0 ** -53
    u2 = (b >> 11) * 2.0 ** -53
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


def ref_cauchy(key, counter):
    u = (2 * (ref_u64(key, counter) >> 12) + 1) * 2.0 ** -53
    return math.tan(math.pi * (u - 0.5))


def ref_integer(key, counter, n):
    threshold = (1 << 64) % n
    sub = 0
    while True:
        product = ref_u64(key, counter, sub) * n
        if product & MASK64 >= threshold:
            return product >> 64
        sub += 1


def ref_permutation(n, key):
    perm = list(range(n))
    for i in range(n - 1):
        j = i + ref_integer(key, i, n - i)
        perm[i], perm[j] = perm[j], perm[i]
    return perm


CASES = [(0, "features"), (0, "folds"), (1, "features"), (42, "sampling"),
         (2**64 - 1, "shuffle"), (123456789012345, 7), (5, 2**64 - 1)]


# ---------------------------------------------------------------------------
# Golden vectors

def test_philox_known_answers():
    # Random123's published known-answer vectors for Philox-4x32-10.
    kat = [
        ((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
        ((MASK32,) * 4, (MASK32,) * 2, (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
        ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
         (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)),
    ]
    for ctr, key, want in kat:
        assert ref_philox(ctr, key) == want
        assert C.philox(ctr, key) == want


def test_literal_golden_values():
    # Pasted from this implementation; any change of algorithm, constant,
    # key derivation or stream number breaks them.
    assert R.STREAMS == {"features": 1, "phases": 2, "sampling": 3, "folds": 4,
                         "probability": 5, "shuffle": 6}
    assert R.stream_key(0, "folds") == 0x96d6522511e6fac5
    assert R.random_u64(0, "folds", 0, 3).tolist() == [
        2106442105224794993, 6745785997888583683, 12320325253159776530]
    assert R.permutation(10, 0, "folds").tolist() == [1, 4, 7, 0, 3, 5, 9, 6, 2, 8]
    assert R.integers(10, 0, "sampling", 0, 10).tolist() == [4, 4, 6, 0, 2, 4, 0, 7, 7, 3]
    assert R.uniform(1, "features", 0, 3).tolist() == GOLDEN_UNIFORM
    np.testing.assert_allclose(R.normal(1, 2, 5, 3), GOLDEN_NORMAL, rtol=1e-13)
    np.testing.assert_allclose(R.cauchy(3, "phases", 0, 3), GOLDEN_CAUCHY, rtol=1e-13)


def test_doc_table_values():
    # The seed-0 table of doc/random.md.
    table = {
        "features": (0x9c671392b5e36cb0, 0x1dcb34c1594f170e, 0x5aad153e907ba8dc),
        "phases": (0xd7cef4b1549ef64f, 0xbd9b12434722a066, 0xdea23b7465053d58),
        "sampling": (0x61215257ed55cc9d, 0x68dd105159f516c6, 0x6ed1ee9a3b741205),
        "folds": (0x96d6522511e6fac5, 0x1d3b95ef2dd99371, 0x5d9dd89fd6f3f803),
        "probability": (0x226a0b198ae13f9a, 0x4886964e0ba458de, 0x0c769bfdcabafb40),
        "shuffle": (0x82fb071ed92a32c3, 0xe4c343752f2af7eb, 0x8c752af58aa7ce33),
    }
    for name, (key, d0, d1) in table.items():
        assert R.stream_key(0, name) == key == ref_key(0, R.STREAMS[name])
        assert R.random_u64(0, name, 0, 2).tolist() == [d0, d1]
    assert R.stream_key(2**64 - 1, "features") == 0x79ca8376e79bf275
    assert R.uniform(0, "features", 0, 2).tolist() == [0.11638192863875596,
                                                       0.35420353677225924]
    np.testing.assert_allclose(R.normal(0, "features", 0, 2),
                               [0.7119845920990621, 1.4062702244475687], rtol=1e-13)
    np.testing.assert_allclose(R.cauchy(0, "features", 0, 2),
                               [-2.612070590852846, -0.49300143421841347], rtol=1e-13)
    assert R.integers(10, 0, "features", 0, 2).tolist() == [1, 3]
    assert R.permutation(10, 0, "probability").tolist() == [2, 1, 3, 8, 5, 9, 0, 4, 7, 6]


GOLDEN_UNIFORM = [0.3783838284126869, 0.810039029146712, 0.19595139114631221]
GOLDEN_NORMAL = [-0.8401132330897794, 0.1612727521180534, -2.3819381145432077]
GOLDEN_CAUCHY = [-0.8880314038470162, 2.853001236607216, 6.0144216883537]


@pytest.mark.parametrize("seed,stream", CASES)
def test_matches_reference(seed, stream):
    key = ref_key(seed, R.STREAMS.get(stream, stream))
    assert R.stream_key(seed, stream) == key
    for start in (0, 2**32 - 3, 2**64 - 8):
        counters = range(start, start + 8)
        assert R.random_u64(seed, stream, start, 8).tolist() == [
            ref_u64(key, c) for c in counters]
        assert R.uniform(seed, stream, start, 8).tolist() == [
            ref_uniform(key, c) for c in counters]
        np.testing.assert_array_max_ulp(
            R.normal(seed, stream, start, 8),
            np.array([ref_normal(key, c) for c in counters]), maxulp=4)
        np.testing.assert_array_max_ulp(
            R.cauchy(seed, stream, start, 8),
            np.array([ref_cauchy(key, c) for c in counters]), maxulp=4)
        for high in (1, 2, 7, 1000, 2**32 + 1, 2**63 + 1, 2**64 - 1):
            got = R.integers(high, seed, stream, start, 8).tolist()
            assert got == [ref_integer(key, c, high) for c in counters]
    for n in (0, 1, 2, 13):
        assert R.permutation(n, seed, stream).tolist() == ref_permutation(n, key)


def test_rejection_path_matches_reference():
    # high = 2**63 + 1 rejects almost half of the first attempts, so the
    # deterministic retries (sub-counter word) are exercised many times.
    high = 2**63 + 1
    key = ref_key(9, 3)
    threshold = (1 << 64) % high
    first = [ref_u64(key, c) * high & MASK64 for c in range(200)]
    n_rejected = sum(lo < threshold for lo in first)
    assert 60 < n_rejected < 140
    got = R.integers(high, 9, 3, 0, 200)
    assert got.dtype == np.uint64
    assert got.tolist() == [ref_integer(key, c, high) for c in range(200)]


def test_compiled_scalar_and_array_paths_agree():
    # The cdef inline functions called one at a time vs the array fills.
    key = R.stream_key(17, "sampling")
    start = 2**40
    n = 64
    assert [C.u64(key, start + i) for i in range(n)] == \
        R.random_u64(17, "sampling", start, n).tolist()
    assert [C.uniform1(key, start + i) for i in range(n)] == \
        R.uniform(17, "sampling", start, n).tolist()
    assert [C.normal1(key, start + i) for i in range(n)] == \
        R.normal(17, "sampling", start, n).tolist()
    assert [C.cauchy1(key, start + i) for i in range(n)] == \
        R.cauchy(17, "sampling", start, n).tolist()
    assert [C.integer1(key, start + i, 1000) for i in range(n)] == \
        R.integers(1000, 17, "sampling", start, n).tolist()


def test_normal_pair():
    key = R.stream_key(4, "features")
    pairs = np.array([C.normal_pair1(key, c) for c in range(20_000)])
    # The cosine branch is rng_normal itself, bit for bit.
    np.testing.assert_array_equal(pairs[:, 0], R.normal(4, "features", 0, 20_000))
    ref_sin = []
    for c in range(50):
        y = ref_words(key, c)
        u1 = (((y[0] | (y[1] << 32)) >> 11) + 1) * 2.0 ** -53
        u2 = ((y[2] | (y[3] << 32)) >> 11) * 2.0 ** -53
        ref_sin.append(math.sqrt(-2.0 * math.log(u1)) * math.sin(2.0 * math.pi * u2))
    np.testing.assert_array_max_ulp(pairs[:50, 1], np.array(ref_sin), maxulp=4)
    z1 = pairs[:, 1]
    n = len(z1)
    assert abs(z1.mean()) < 5 / math.sqrt(n)
    assert abs(z1.var() - 1) < 5 * math.sqrt(2 / n)
    assert abs(np.corrcoef(pairs[:, 0], z1)[0, 1]) < 5 / math.sqrt(n)
    # Independent, not merely uncorrelated: z0**2 and z1**2 are uncorrelated too.
    assert abs(np.corrcoef(pairs[:, 0] ** 2, z1 ** 2)[0, 1]) < 5 / math.sqrt(n)


def test_counter_addressing_is_stateless():
    whole = R.random_u64(3, "features", 100, 50)
    parts = np.concatenate([R.random_u64(3, "features", 100 + s, 10)
                            for s in range(0, 50, 10)])
    np.testing.assert_array_equal(whole, parts)


def test_thread_count_does_not_change_bits():
    key = R.stream_key(11, "features")
    for fill, dtype in ((C.fill_u64, np.uint64), (C.fill_uniform, np.float64),
                        (C.fill_normal, np.float64), (C.fill_cauchy, np.float64)):
        one = np.empty(10001, dtype=dtype)
        two = np.empty(10001, dtype=dtype)
        fill(key, 5, one, 1)
        fill(key, 5, two, 2)
        assert one.tobytes() == two.tobytes()
    one = np.empty(10001, dtype=np.uint64)
    two = np.empty(10001, dtype=np.uint64)
    C.fill_integers(key, 5, 12345, one, 1)
    C.fill_integers(key, 5, 12345, two, 2)
    assert one.tobytes() == two.tobytes()


# ---------------------------------------------------------------------------
# Statistics (fixed seeds; bounds of about 5 standard deviations)

N = 1_000_000


def test_uniform_moments_and_chi_square():
    u = R.uniform(2024, "sampling", 0, N)
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 5 * math.sqrt(1 / 12 / N)
    assert abs(u.var() - 1 / 12) < 5 * math.sqrt(1 / 180 / N)
    counts = np.bincount((u * 100).astype(np.int64), minlength=100)
    chi2 = ((counts - N / 100) ** 2 / (N / 100)).sum()
    # chi-square with 99 degrees of freedom: mean 99, sd 14.
    assert 99 - 5 * 14 < chi2 < 99 + 5 * 14
    assert stats.chi2.sf(chi2, 99) > 1e-4
    # Serial pairs (u_i, u_{i+1}) fill a 10x10 grid evenly.
    pairs = (u[:-1:2] * 10).astype(np.int64) * 10 + (u[1::2] * 10).astype(np.int64)
    counts = np.bincount(pairs, minlength=100)
    expected = len(pairs) / 100
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert 99 - 5 * 14 < chi2 < 99 + 5 * 14


def test_raw_bits_balanced():
    # Uniforms only see the top 53 bits; integers and keys use all 64.
    n = 200_000
    x = R.random_u64(77, "shuffle", 0, n)
    bits = (x[:, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)
    ones = bits.sum(axis=0)
    assert np.all(np.abs(ones - n / 2) < 5.5 * math.sqrt(n / 4))
    for shift in (0, 24, 56):
        byte = ((x >> np.uint64(shift)) & np.uint64(255)).astype(np.int64)
        counts = np.bincount(byte, minlength=256)
        chi2 = ((counts - n / 256) ** 2 / (n / 256)).sum()
        assert stats.chi2.sf(chi2, 255) > 1e-4


def test_uniform_interval():
    u = R.uniform(5, "phases", 0, 100_000, low=0.0, high=2 * math.pi)
    assert u.min() >= 0.0 and u.max() < 2 * math.pi
    assert abs(u.mean() - math.pi) < 5 * 2 * math.pi * math.sqrt(1 / 12 / 100_000)
    base = R.uniform(5, "phases", 0, 100_000)
    np.testing.assert_array_equal(u, 0.0 + (2 * math.pi - 0.0) * base)


def test_normal_distribution():
    z = R.normal(7, "features", 0, N)
    assert np.isfinite(z).all() and np.abs(z).max() < 8.6
    assert abs(z.mean()) < 5 / math.sqrt(N)
    assert abs(z.var() - 1) < 5 * math.sqrt(2 / N)
    assert abs(stats.kurtosis(z)) < 5 * math.sqrt(24 / N)
    assert stats.kstest(z, "norm").pvalue > 1e-4


def test_cauchy_distribution():
    x = R.cauchy(8, "features", 0, 200_000)
    assert np.isfinite(x).all()
    # Quartiles of the standard Cauchy are -1, 0, 1.
    q = np.quantile(x, [0.25, 0.5, 0.75])
    np.testing.assert_allclose(q, [-1, 0, 1], atol=0.02)
    assert stats.kstest(x, "cauchy").pvalue > 1e-4


def test_integers_unbiased():
    k = R.integers(7, 31, "sampling", 0, 700_000)
    assert k.dtype == np.int64 and k.min() == 0 and k.max() == 6
    counts = np.bincount(k, minlength=7)
    chi2 = ((counts - 100_000) ** 2 / 100_000).sum()
    assert stats.chi2.sf(chi2, 6) > 1e-4
    # For high = 3 * 2**62, reducing a 64-bit word modulo high would put half of
    # the mass below 2**62 instead of a third.
    big = R.integers(3 * 2**62, 31, "folds", 0, 60_000)
    assert big.dtype == np.uint64
    share = np.mean(big < 2**62)
    assert abs(share - 1 / 3) < 5 * math.sqrt(2 / 9 / 60_000)
    assert big.max() < 3 * 2**62


def test_permutation_is_a_permutation():
    for n in (0, 1, 2, 3, 10, 1000):
        p = R.permutation(n, 99, "folds")
        assert p.dtype == np.int64
        assert sorted(p.tolist()) == list(range(n))
    assert R.permutation(5, 1).tolist() == R.permutation(5, 1, "shuffle").tolist()


def test_permutation_uniform():
    n, trials = 5, 24_000
    position_counts = np.zeros((n, n))
    perm_counts = {}
    for seed in range(trials):
        p = R.permutation(n, seed, "folds")
        position_counts[np.arange(n), p] += 1
        perm_counts[tuple(p)] = perm_counts.get(tuple(p), 0) + 1
    expected = trials / n
    chi2 = ((position_counts - expected) ** 2 / expected).sum()
    assert stats.chi2.sf(chi2, (n - 1) ** 2) > 1e-4
    assert len(perm_counts) == 120
    observed = np.array([perm_counts[p] for p in itertools.permutations(range(n))])
    chi2 = ((observed - trials / 120) ** 2 / (trials / 120)).sum()
    assert stats.chi2.sf(chi2, 119) > 1e-4


def test_streams_independent():
    n = 100_000
    keys = {R.stream_key(s, name) for s in (0, 1) for name in R.STREAMS}
    assert len(keys) == 2 * len(R.STREAMS)
    series = [R.uniform(0, name, 0, n) for name in R.STREAMS]
    series += [R.uniform(1, "features", 0, n), R.uniform(2, "features", 0, n)]
    bound = 5 / math.sqrt(n)
    for a, b in itertools.combinations(series, 2):
        assert not np.array_equal(a, b)
        assert abs(np.corrcoef(a, b)[0, 1]) < bound
    # A stream is not its neighbour shifted by one counter.
    u = series[0]
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < bound


def test_bad_input():
    for seed in (-1, 2**64, 1.5, True, "3", None):
        with pytest.raises(ValueError, match="seed"):
            R.uniform(seed, "folds")
    with pytest.raises(ValueError, match="unknown stream 'feature'"):
        R.normal(0, "feature")
    with pytest.raises(ValueError, match="stream"):
        R.normal(0, -2)
    with pytest.raises(ValueError, match="count"):
        R.random_u64(0, 1, 0, -1)
    with pytest.raises(ValueError, match="2\\*\\*64"):
        R.random_u64(0, 1, 2**64 - 2, 3)
    for high in (0, -3, 2**64, 2.0):
        with pytest.raises(ValueError, match="high"):
            R.integers(high, 0, 1)
    with pytest.raises(ValueError, match="low < high"):
        R.uniform(0, 1, 0, 3, low=1.0, high=1.0)
    for n in (-1, 2.5):
        with pytest.raises(ValueError, match="n must be"):
            R.permutation(n, 0, "folds")
    assert R.random_u64(0, 1, 2**64 - 3, 3).shape == (3,)
    assert R.permutation(np.int64(4), np.uint64(2**64 - 1), "folds").shape == (4,)
