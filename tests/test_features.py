"""Random Fourier features (kernsolve/_features.py, _core/_features.pxd).

Oracles: a pure-Python implementation of doc/dsg.md "Random features" built
on the pure-Python Philox of tests/test_random.py (bit for bit), the exact
kernel matrix (Monte Carlo convergence at rate 1/sqrt(D)), and brute-force
numpy distances for the median trick.
"""
import io
import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

from conftest import shared_lines
from test_random import ref_key, ref_words

import kernsolve
from kernsolve import _features as KF
from kernsolve._core import _features as CF
from kernsolve._kernels import as_canonical
from kernsolve._random import permutation

SQRT2 = 1.4142135623730951
TWO_PI = 6.283185307179586


# ---------------------------------------------------------------------------
# Reference implementation, written from doc/dsg.md only.

def ref_direction(kernel, gamma, seed, g, d):
    """omega_g (length d) and b_g of global feature g."""
    ko, kp = ref_key(seed, 1), ref_key(seed, 2)
    y = ref_words(kp, g)
    b = TWO_PI * (((y[0] | (y[1] << 32)) >> 11) * 2.0 ** -53)
    w = []
    for j in range(d):
        if kernel == "rbf":
            y = ref_words(ko, g, j >> 1)
            a = y[0] | (y[1] << 32)
            c = y[2] | (y[3] << 32)
            u1 = ((a >> 11) + 1) * 2.0 ** -53
            u2 = (c >> 11) * 2.0 ** -53
            r = math.sqrt(-2.0 * math.log(u1))
            z = r * math.cos(TWO_PI * u2) if j % 2 == 0 else r * math.sin(TWO_PI * u2)
            w.append(math.sqrt(2.0 * gamma) * z)
        else:
            y = ref_words(ko, g, j)
            u = (2 * ((y[0] | (y[1] << 32)) >> 12) + 1) * 2.0 ** -53
            w.append(gamma * math.tan(3.141592653589793 * (u - 0.5)))
    return w, b


# The cosine of doc/dsg.md ("The cosine"), constant for constant.
S = {3: -0.16666666666666666, 5: 0.008333333333333333, 7: -0.0001984126984126984,
     9: 2.7557319223985893e-06, 11: -2.505210838544172e-08, 13: 1.6059043836821613e-10,
     15: -7.647163731819816e-13, 17: 2.8114572543455206e-15}
C = {4: 0.041666666666666664, 6: -0.001388888888888889, 8: 2.48015873015873e-05,
     10: -2.755731922398589e-07, 12: 2.08767569878681e-09, 14: -1.1470745597729725e-11,
     16: 4.779477332387385e-14, 18: -1.5619206968586225e-16}
P1, P2, P3 = 1.5707963267341256, 6.077100506303966e-11, 2.0222662487959506e-21


def ref_cos(a):
    if not abs(a) <= 2.0 ** 20:
        return math.cos(a) if math.isfinite(a) else math.nan     # C's cos: NaN
    t = a * 0.6366197723675814 + 6755399441055744.0
    k = t - 6755399441055744.0
    r = ((a - k * P1) - k * P2) - k * P3
    z = r * r
    z2 = z * z
    z4 = z2 * z2
    ps = ((S[5] + S[7] * z) + z2 * (S[9] + S[11] * z)) + z4 * ((S[13] + S[15] * z) + z2 * S[17])
    sn = r + (r * z) * (S[3] + z * ps)
    pc = (((C[4] + C[6] * z) + z2 * (C[8] + C[10] * z))
          + z4 * ((C[12] + C[14] * z) + z2 * (C[16] + C[18] * z)))
    w = 1.0 - 0.5 * z
    cs = w + (((1.0 - w) - 0.5 * z) + z2 * pc)
    return (cs, -sn, -cs, sn)[int(k) % 4]


def ref_features(X, kernel, gamma, seed, start, count, single=False):
    """``single``: doc/dsg.md "Single precision": the direction and each
    value rounded to float32, every product and sum a float32 operation
    (numpy's float32 scalars round each one), the sum widened for the cosine,
    the feature rounded to float32."""
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    out = np.empty((n, count))
    for f in range(count):
        w, b = ref_direction(kernel, gamma, seed, start + f, d)
        w32 = [np.float32(v) for v in w]
        for i in range(n):
            s = np.float32(0.0) if single else 0.0
            for j in range(d):          # increasing column order, zeros skipped
                if X[i, j] != 0.0:
                    if single:
                        s = s + np.float32(X[i, j]) * w32[j]
                    else:
                        s = s + X[i, j] * w[j]
            out[i, f] = SQRT2 * ref_cos(float(s) + b)
            if single:
                out[i, f] = float(np.float32(out[i, f]))
    return out


def sparse_data(rng, n, d, density):
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) > density] = 0.0
    return X


@pytest.fixture(scope="module")
def heart():
    X, _ = load_svmlight_file(io.BytesIO(shared_lines("heart_scale")), n_features=13)
    return X.toarray()


@pytest.fixture(scope="module")
def a9a():
    X, _ = load_svmlight_file(io.BytesIO(shared_lines("a9a", 500)), n_features=123)
    return X.tocsr()


# ---------------------------------------------------------------------------
# (1) bit-compatibility with the specification

@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_directions_match_reference(kernel):
    omega, phase = KF.feature_directions(7, 40, 9, kernel=kernel, gamma=0.37, seed=12)
    assert omega.shape == (9, 7) and phase.shape == (9,)
    for f in range(9):
        w, b = ref_direction(kernel, 0.37, 12, 40 + f, 7)
        np.testing.assert_array_equal(omega[f], w)
        assert phase[f] == b
    assert np.all((phase >= 0) & (phase < 2 * np.pi))


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
@pytest.mark.parametrize("sparse", [False, True])
def test_features_match_reference(kernel, sparse):
    rng = np.random.default_rng(3)
    X = sparse_data(rng, 6, 9, 0.6)
    Xin = sp.csr_matrix(X) if sparse else X
    Z = kernsolve.random_features(Xin, 11, kernel=kernel, gamma=0.25, seed=2**63 + 5,
                                  start=17, n_jobs=1)
    np.testing.assert_array_equal(Z, ref_features(X, kernel, 0.25, 2**63 + 5, 17, 11))


@pytest.mark.parametrize("kernel,code", [("rbf", 0), ("laplacian", 1)])
def test_pxd_block_contract(kernel, code):
    # fm_init / fm_block / fm_apply_row, the calls DSG makes: block b of size F
    # is features b*F .. b*F+F-1.
    rng = np.random.default_rng(4)
    X = sparse_data(rng, 5, 8, 0.5)
    for Xin in (X, sp.csr_matrix(X)):
        Zb = CF.block_features(as_canonical(Xin), code, 0.5, 9, 3, 6)
        np.testing.assert_array_equal(Zb, ref_features(X, kernel, 0.5, 9, 18, 6))


PI = Fraction("3.14159265358979323846264338327950288419716939937510582097494459230781"
              "6406286208998628034825342117067982148086513282306647")


def test_cosine_constants_are_the_exact_values_rounded():
    for n, c in S.items():
        assert c == float(Fraction((-1) ** ((n - 1) // 2), math.factorial(n)))
    for n, c in C.items():
        assert c == float(Fraction((-1) ** (n // 2), math.factorial(n)))
    assert 0.6366197723675814 == float(2 / PI)
    # P1 and P2 have 33 significant bits (k * P exact for |k| < 2**20), and
    # the three add up to pi/2 far beyond a double's precision
    for p in (P1, P2):
        assert Fraction(p).denominator <= 2 ** (33 - math.frexp(p)[1])
    assert abs(Fraction(P1) + Fraction(P2) + Fraction(P3) - PI / 2) < Fraction(1, 10 ** 36)


def _cos_inputs(n, seed):
    rng = np.random.default_rng(seed)
    edges = [0.0, -0.0, math.pi / 2, -math.pi / 2, math.pi, math.pi / 4, 3 * math.pi / 4,
             1e-300, 2.0 ** 20, -(2.0 ** 20), 2.0 ** 20 + 1, 1e300, np.inf, -np.inf, np.nan]
    return np.concatenate([rng.normal(0, 3, n), rng.uniform(-2.0 ** 20, 2.0 ** 20, n // 4),
                           rng.uniform(-1e-3, 1e-3, n // 8),
                           np.pi / 2 * rng.integers(-1000, 1000, n // 8), edges])


@pytest.mark.parametrize("path", [0, 1])
def test_cosine_block_one_value_and_reference_agree(vector_path, path):
    x = _cos_inputs(40_000, seed=path)
    phase = np.random.default_rng(9).uniform(0, TWO_PI, x.size)
    if not vector_path(("scalar", "avx2")[path]):
        pytest.skip("this CPU has no AVX2: only the scalar path exists")
    block, one, used = CF._cos(x, phase)
    assert used == path
    np.testing.assert_array_equal(block, one)
    assert block[np.isfinite(block)].tobytes() == one[np.isfinite(one)].tobytes()
    ref = np.array([SQRT2 * ref_cos(a + b) for a, b in zip(x.tolist(), phase.tolist())])
    np.testing.assert_array_equal(block, ref)        # NaN where x is


def test_cosine_within_two_ulp_of_the_c_library():
    x = _cos_inputs(100_000, seed=7)
    x = x[np.isfinite(x)]
    got, _, _ = CF._cos(x, np.zeros_like(x))
    got = got / SQRT2                  # exact but for the rounding of the product
    ref = np.cos(x)
    ulp = np.spacing(np.abs(ref))
    err = np.abs(got - ref) / ulp
    assert err.max() <= 3.0            # 2 ulp, plus the division's rounding
    # beyond 2**20 the C library's cos itself
    big = np.abs(x) > 2.0 ** 20
    assert big.any() and np.all(got[big] * SQRT2 == SQRT2 * ref[big])
    nan, _, _ = CF._cos(np.array([np.nan, np.inf]), np.zeros(2))
    assert np.isnan(nan).all()


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_every_vector_path_gives_the_scalar_bits(vector_path, kernel):
    """The sums by 128, 32, 4 and 1 features (AVX-512, AVX2) and the cosine
    four at a time give the scalar path's bits, dense and CSR, odd sizes too."""
    rng = np.random.default_rng(11)
    X = sparse_data(rng, 23, 61, 0.4)
    X[3] = 0.0                                  # a row without a nonzero
    S = sp.csr_matrix(X)
    counts = [1, 3, 4, 7, 32, 37, 128, 133, 300]
    want = {}
    assert vector_path("scalar") is True
    for count in counts:
        want[count] = kernsolve.random_features(X, count, kernel=kernel, gamma=0.3,
                                                seed=5, n_jobs=1)
    np.testing.assert_array_equal(want[7], ref_features(X, kernel, 0.3, 5, 0, 7))
    tried = 0
    for path in ("avx2", "avx512"):
        if not vector_path(path):
            continue
        tried += 1
        for count in counts:
            for Xin in (X, S):
                got = kernsolve.random_features(Xin, count, kernel=kernel, gamma=0.3,
                                                seed=5, n_jobs=2)
                assert got.tobytes() == want[count].tobytes(), (path, count)
    if not tried:
        pytest.skip("this CPU has no vector path")


@pytest.mark.parametrize("kernel,code", [("rbf", 0), ("laplacian", 1)])
def test_single_precision_block_on_every_path(vector_path, kernel, code):
    """--precision single (fm.single): the sums of the float32 reference, on
    the scalar and every vector path, dense and CSR; block sizes that take
    the 128-, 64- and 8-feature runs and the one-at-a-time tail.  Within
    float32's rounding of the double features."""
    rng = np.random.default_rng(12)
    X = sparse_data(rng, 5, 61, 0.4)
    X[2] = 0.0
    X[4, 7] = 1e-300                    # rounds to float32 zero: adds +-0, nothing
    S = as_canonical(sp.csr_matrix(X))
    sizes = [1, 9, 43, 75, 133, 203]
    want = {F: ref_features(X, kernel, 0.3, 5, 2 * F, F, single=True) for F in sizes}
    paths = [p for p in ("scalar", "avx2", "avx512") if vector_path(p)]
    for path in paths:
        vector_path(path)
        for F in sizes:
            for Xin in (as_canonical(X), S):
                got = CF.block_features(Xin, code, 0.3, 5, 2, F, single=True)
                assert got.tobytes() == want[F].tobytes(), (path, F)
    vector_path(None)
    double = CF.block_features(as_canonical(X), code, 0.3, 5, 2, 75)
    single = want[75]
    assert not np.array_equal(double, single)
    np.testing.assert_allclose(single, double, rtol=0, atol=1e-4 if kernel == "rbf" else 1e-3)


# ---------------------------------------------------------------------------
# (2) dense == CSR, (3) regrouping and zero columns, (5) threads

@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_dense_equals_csr(kernel):
    rng = np.random.default_rng(5)
    X = sparse_data(rng, 40, 30, 0.3)
    # an explicitly stored zero must not matter either
    c = int(np.flatnonzero(X[0] == 0.0)[0])
    X2 = X.copy()
    X2[0, c] = 1.0
    S = sp.csr_matrix(X2)
    S.data[S.indptr[0] + np.searchsorted(S.indices[S.indptr[0]:S.indptr[1]], c)] = 0.0
    assert S.nnz == np.count_nonzero(X) + 1
    Zd = kernsolve.random_features(X, 300, kernel=kernel, gamma=0.1, seed=1)
    Zs = kernsolve.random_features(S, 300, kernel=kernel, gamma=0.1, seed=1)
    np.testing.assert_array_equal(Zd, Zs)


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_regrouping_and_zero_columns(kernel):
    rng = np.random.default_rng(6)
    X = sparse_data(rng, 20, 5000, 0.01)    # wide: small internal chunks
    Z = kernsolve.random_features(X, 300, kernel=kernel, gamma=0.01, seed=4)
    for start, count in [(0, 1), (123, 50), (299, 1), (7, 293)]:
        part = kernsolve.random_features(X, count, kernel=kernel, gamma=0.01, seed=4,
                                         start=start)
        np.testing.assert_array_equal(part, Z[:, start:start + count])
    wider = np.hstack([X, np.zeros((20, 7))])
    np.testing.assert_array_equal(
        kernsolve.random_features(wider, 300, kernel=kernel, gamma=0.01, seed=4), Z)
    om, ph = KF.feature_directions(5000, 0, 300, kernel=kernel, gamma=0.01, seed=4)
    om2, ph2 = KF.feature_directions(5003, 0, 300, kernel=kernel, gamma=0.01, seed=4)
    np.testing.assert_array_equal(om2[:, :5000], om)
    np.testing.assert_array_equal(ph2, ph)
    # the materialised directions give the same features (numpy's sum order
    # differs, hence the tolerance)
    np.testing.assert_allclose(SQRT2 * np.cos(X @ om.T + ph), Z, rtol=0, atol=1e-9)


def test_different_seeds_differ(a9a):
    Z0 = kernsolve.random_features(a9a[:5], 8, gamma=0.1, seed=0)
    Z1 = kernsolve.random_features(a9a[:5], 8, gamma=0.1, seed=1)
    assert not np.any(Z0 == Z1)


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_threads_identical_bits(a9a, kernel):
    Z1 = kernsolve.random_features(a9a, 700, kernel=kernel, gamma=0.05, seed=3, n_jobs=1)
    Z2 = kernsolve.random_features(a9a, 700, kernel=kernel, gamma=0.05, seed=3, n_jobs=2)
    np.testing.assert_array_equal(Z1, Z2)
    Zd = kernsolve.random_features(a9a.toarray(), 700, kernel=kernel, gamma=0.05,
                                   seed=3, n_jobs=2)
    np.testing.assert_array_equal(Zd, Z1)


# ---------------------------------------------------------------------------
# (4) (1/D) Z Z^T -> K at the Monte Carlo rate

@pytest.mark.parametrize("kernel,gamma", [("rbf", 0.2), ("laplacian", 0.1)])
def test_kernel_approximation_rate(heart, kernel, gamma):
    K = kernsolve.kernel_matrix(heart, kernel=kernel, gamma=gamma)
    Ds = np.array([256, 1024, 4096, 16384])
    errors = np.zeros(len(Ds))
    seeds = (0, 1, 2)
    for seed in seeds:
        Z = kernsolve.random_features(heart, Ds[-1], kernel=kernel, gamma=gamma,
                                      seed=seed, n_jobs=2)
        for t, D in enumerate(Ds):
            errors[t] += np.abs(Z[:, :D] @ Z[:, :D].T / D - K).max() / len(seeds)
    slope = np.polyfit(np.log(Ds), np.log(errors), 1)[0]
    assert -0.7 < slope < -0.3, (slope, errors)
    # the level too, not only the rate: max error about 4 / sqrt(D) on 270 rows
    assert errors[-1] < 0.05


# ---------------------------------------------------------------------------
# (6) the median trick

def brute_median(X, rows, l1):
    S = X[rows]
    d = []
    for i in range(len(rows)):
        for j in range(i + 1, len(rows)):
            diff = S[i] - S[j]
            d.append(np.abs(diff).sum() if l1 else np.sqrt((diff * diff).sum()))
    return np.median(d)


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
@pytest.mark.parametrize("n_samples", [40, 1000])
def test_median_gamma_brute_force(a9a, kernel, n_samples, monkeypatch):
    X = a9a[:120]
    Xd = X.toarray()
    m = min(120, n_samples)
    rows = permutation(120, 8, "sampling")[:m]
    sigma = 0.5 * brute_median(Xd, rows, kernel == "laplacian")
    want = 1 / (2 * sigma**2) if kernel == "rbf" else 1 / sigma
    for Xin in (Xd, X):
        got = kernsolve.median_gamma(Xin, kernel=kernel, seed=8, n_samples=n_samples,
                                     factor=0.5)
        assert got == pytest.approx(want, rel=1e-12)
    # the row-by-row path for samples too wide to densify
    monkeypatch.setattr(KF, "_MEDIAN_DENSE_BYTES", 0)
    got = kernsolve.median_gamma(X, kernel=kernel, seed=8, n_samples=n_samples,
                                 factor=0.5)
    assert got == pytest.approx(want, rel=1e-12)


# ---------------------------------------------------------------------------
# (7) bad input

X_OK = np.array([[0.0, 1.0], [1.0, 0.5], [2.0, 0.0]])


@pytest.mark.parametrize("kwargs,match", [
    (dict(n_components=-1), "n_components must be a non-negative integer"),
    (dict(n_components=2.5), "n_components must be a non-negative integer"),
    (dict(gamma=0.0), "gamma must be a finite number > 0"),
    (dict(gamma=-1.0), "gamma must be a finite number > 0"),
    (dict(gamma=np.nan), "gamma must be a finite number > 0"),
    (dict(gamma=np.inf), "gamma must be a finite number > 0"),
    (dict(gamma=None), "gamma must be a real number > 0"),
    (dict(gamma="scale"), "gamma must be a real number > 0"),
    (dict(kernel="linear"), "'rbf' and 'laplacian' kernels only"),
    (dict(kernel=1), "'rbf' and 'laplacian' kernels only"),
    (dict(kernel="precomputed"), "'rbf' and 'laplacian' kernels only"),
    (dict(kernel="gauss"), "unknown kernel"),
    (dict(seed=-1), "seed must be an integer"),
    (dict(start=-3), "start must be a non-negative integer"),
    (dict(start=2**63), "must not exceed 2\\*\\*63"),
    (dict(n_jobs=0), "n_jobs == 0"),
    (dict(X=np.array([[0.0, np.nan]])), "NaN or infinity"),
    (dict(X=sp.csr_matrix(np.array([[0.0, np.inf]]))), "NaN or infinity"),
    (dict(X=np.zeros((0, 3))), "empty"),
    (dict(X=np.zeros(3)), "2-D"),
])
def test_random_features_bad_input(kwargs, match):
    args = dict(X=X_OK, n_components=4, gamma=1.0)
    args.update(kwargs)
    X = args.pop("X")
    n = args.pop("n_components")
    with pytest.raises(ValueError, match=match):
        kernsolve.random_features(X, n, **args)


def test_zero_components_and_codes():
    assert kernsolve.random_features(X_OK, 0, gamma=1.0).shape == (3, 0)
    np.testing.assert_array_equal(
        kernsolve.random_features(X_OK, 5, kernel=5, gamma=1.0),
        kernsolve.random_features(X_OK, 5, kernel="laplacian", gamma=1.0))
    np.testing.assert_array_equal(
        kernsolve.random_features(X_OK, 5, kernel=2, gamma=1.0),
        kernsolve.random_features(X_OK, 5, gamma=1.0))


@pytest.mark.parametrize("X,kwargs,match", [
    (X_OK[:1], {}, "at least 2 rows"),
    (np.ones((5, 3)), {}, "every pairwise distance is 0"),
    (np.vstack([np.ones((5, 3)), [[0.0, 0.0, 0.0]]]), {}, "median pairwise distance"),
    (X_OK, dict(n_samples=1), "n_samples must be >= 2"),
    (X_OK, dict(factor=0.0), "factor must be a finite number > 0"),
    (X_OK, dict(factor=np.nan), "factor must be a finite number > 0"),
    (X_OK, dict(kernel="sigmoid"), "'rbf' and 'laplacian' kernels only"),
    (np.array([[1.0, np.nan], [0.0, 1.0]]), {}, "NaN or infinity"),
])
def test_median_gamma_bad_input(X, kwargs, match):
    with pytest.raises(ValueError, match=match):
        kernsolve.median_gamma(X, **kwargs)


@pytest.mark.parametrize("kwargs,match", [
    (dict(n_features=-1), "n_features must be a non-negative integer"),
    (dict(count=-2), "count must be a non-negative integer"),
    (dict(gamma=0), "gamma must be a finite number > 0"),
    (dict(kernel="poly"), "'rbf' and 'laplacian' kernels only"),
])
def test_feature_directions_bad_input(kwargs, match):
    args = dict(n_features=3, start=0, count=2, gamma=1.0)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        KF.feature_directions(args.pop("n_features"), args.pop("start"),
                              args.pop("count"), **args)
