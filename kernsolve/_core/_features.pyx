"""Random Fourier features regenerated from a seed (the algorithm: doc/dsg.md).

The cdef functions declared in _features.pxd are the feature map DSG trains
and predicts with; the Python-visible functions below fill arrays for the
front end, kernsolve/_features.py, which validates and allocates.  Every
output element is a pure function of (seed, feature index, row), computed by
one code path whatever the thread count, so results are bit-identical for any
n_jobs.
"""
from cython.parallel cimport prange
from libc.stdlib cimport malloc, free
from libc.math cimport sqrt
from libc.stdint cimport uint32_t, uint64_t, int32_t, int64_t

cimport numpy as cnp
import numpy as np

from ._random cimport (rng_key, rng_uniform, rng_normal_pair_sub, rng_cauchy_sub,
                       STREAM_FEATURES, STREAM_PHASES)
from ._rows cimport Rows, row_ptr, as_rows
from ._simd cimport KS_AVX2, ks_simd, ks_simd_join, paths_mask

cnp.import_array()

# Every vector path of this module follows the tests' one switch (_simd.pxd).
ks_simd_join(paths_mask())

# 2 pi rounded to double: the constant of doc/dsg.md (sqrt(2) is in _cos.h).
cdef double TWO_PI = 6.283185307179586
# Input columns below which direction generation stays serial: waking the
# OpenMP team costs more than a few hundred Philox calls.
cdef Py_ssize_t PAR_MIN_DRAWS = 4096
# Directions of one chunk of random_features kept within this many doubles
# (1 MB), so the rows' axpys read omega from the L2 cache.
cdef Py_ssize_t CHUNK_DOUBLES = 1 << 17

FEATURE_CODES = {"gaussian": FEATURE_GAUSSIAN, "laplacian": FEATURE_LAPLACIAN}


cdef void fm_init(FeatureMap* fm, int kernel, double gamma, Py_ssize_t n_features,
                  Py_ssize_t block_size, uint64_t seed) noexcept nogil:
    fm.kernel = kernel
    fm.gamma = gamma
    fm.n_features = n_features
    fm.block_size = block_size
    fm.key_omega = rng_key(seed, STREAM_FEATURES)
    fm.key_phase = rng_key(seed, STREAM_PHASES)
    fm.single = 0


cdef inline void _gaussian_pair(const FeatureMap* fm, int64_t g0, Py_ssize_t count,
                                Py_ssize_t p, double scale, double* omega) noexcept nogil:
    """Columns 2p and 2p+1 of count Gaussian directions: one Philox block each."""
    cdef Py_ssize_t f, j = 2 * p
    cdef double z0, z1
    cdef double* w0 = omega + j * count
    cdef double* w1 = w0 + count
    cdef bint has_odd = j + 1 < fm.n_features
    for f in range(count):
        rng_normal_pair_sub(fm.key_omega, <uint64_t>(g0 + f), <uint32_t>p, &z0, &z1)
        w0[f] = scale * z0
        if has_odd:
            w1[f] = scale * z1


cdef inline void _laplacian_column(const FeatureMap* fm, int64_t g0, Py_ssize_t count,
                                   Py_ssize_t j, double* omega) noexcept nogil:
    cdef Py_ssize_t f
    cdef double* w = omega + j * count
    for f in range(count):
        w[f] = fm.gamma * rng_cauchy_sub(fm.key_omega, <uint64_t>(g0 + f), <uint32_t>j)


cdef void fm_features(const FeatureMap* fm, int64_t g0, Py_ssize_t count,
                      double* omega, double* phase, int n_threads) noexcept nogil:
    cdef Py_ssize_t f, u, n_units
    cdef Py_ssize_t d = fm.n_features
    # sqrt(2 gamma) rounded once, then one product per draw (doc/dsg.md).
    cdef double scale = sqrt(2.0 * fm.gamma)
    for f in range(count):
        phase[f] = TWO_PI * rng_uniform(fm.key_phase, <uint64_t>(g0 + f))
    if fm.kernel == FEATURE_GAUSSIAN:
        n_units = (d + 1) // 2
    else:
        n_units = d
    if n_threads > 1 and d * count >= PAR_MIN_DRAWS:
        if fm.kernel == FEATURE_GAUSSIAN:
            for u in prange(n_units, num_threads=n_threads, schedule="static"):
                _gaussian_pair(fm, g0, count, u, scale, omega)
        else:
            for u in prange(n_units, num_threads=n_threads, schedule="static"):
                _laplacian_column(fm, g0, count, u, omega)
    elif fm.kernel == FEATURE_GAUSSIAN:
        for u in range(n_units):
            _gaussian_pair(fm, g0, count, u, scale, omega)
    else:
        for u in range(n_units):
            _laplacian_column(fm, g0, count, u, omega)


cdef void fm_block(const FeatureMap* fm, int64_t block, double* omega,
                   double* phase) noexcept nogil:
    fm_features(fm, block * fm.block_size, fm.block_size, omega, phase, 1)
    if fm.single:
        ks_round_to_floats(omega, fm.n_features * fm.block_size)


cdef extern from "_feature_sums.h" nogil:
    void ks_feature_sums(const double* omega, Py_ssize_t count, const double* v,
                         const int32_t* ix, Py_ssize_t m, double* out)
    void ks_feature_sums_f32(const float* omega, Py_ssize_t count, const double* v,
                             const int32_t* ix, Py_ssize_t m, double* out)
    void ks_round_to_floats(double* omega, Py_ssize_t n)

cdef extern from "_cos.h" nogil:
    double ks_cos(double x)
    void ks_cos_features(double* v, const double* phase, Py_ssize_t n)



cdef void fm_apply_row_n(const double* omega, const double* phase, Py_ssize_t count,
                         const Rows* X, Py_ssize_t i, double* out) noexcept nogil:
    # The sums in increasing column order (CSR indices are sorted), then
    # sqrt(2) cos(s + b): the C headers hold the vector paths (same bits).
    cdef const double* v
    cdef const int32_t* ix
    cdef Py_ssize_t m = row_ptr(X, i, &v, &ix)
    ks_feature_sums(omega, count, v, ix, m, out)
    ks_cos_features(out, phase, count)


cdef void fm_apply_row(const FeatureMap* fm, const double* omega, const double* phase,
                       const Rows* X, Py_ssize_t i, double* out) noexcept nogil:
    cdef const double* v
    cdef const int32_t* ix
    cdef Py_ssize_t m, f
    if not fm.single:
        fm_apply_row_n(omega, phase, fm.block_size, X, i, out)
        return
    m = row_ptr(X, i, &v, &ix)
    ks_feature_sums_f32(<const float*>omega, fm.block_size, v, ix, m, out)
    ks_cos_features(out, phase, fm.block_size)
    # the value a float holds, so that kept values (DSG's row features) are
    # the values computed
    for f in range(fm.block_size):
        out[f] = <double>(<float>out[f])


# ------------------------------------------------------------ Python fills



def fill_directions(int kernel, double gamma, Py_ssize_t n_features, uint64_t seed,
                    int64_t start, double[:, ::1] omega_t, double[::1] phase,
                    int n_threads=1):
    """omega_t[j, f] = omega_{start+f, j} (shape (n_features, count)), phase[f] = b_{start+f}."""
    cdef FeatureMap fm
    cdef Py_ssize_t count = phase.shape[0]
    if omega_t.shape[0] != n_features or omega_t.shape[1] != count:
        raise ValueError("omega_t must have shape (n_features, count)")
    if count == 0 or n_features == 0:
        if count:
            fill_phase_only(seed, start, phase)
        return
    fm_init(&fm, kernel, gamma, n_features, count, seed)
    with nogil:
        fm_features(&fm, start, count, &omega_t[0, 0], &phase[0], n_threads)


cdef void fill_phase_only_c(uint64_t key, int64_t start, double* phase,
                            Py_ssize_t count) noexcept nogil:
    cdef Py_ssize_t f
    for f in range(count):
        phase[f] = TWO_PI * rng_uniform(key, <uint64_t>(start + f))


def fill_phase_only(uint64_t seed, int64_t start, double[::1] phase):
    if phase.shape[0]:
        fill_phase_only_c(rng_key(seed, STREAM_PHASES), start, &phase[0], phase.shape[0])


def fill_features(X, int kernel, double gamma, uint64_t seed, int64_t start,
                  double[:, ::1] out, int n_threads=1):
    """out[i, c] = phi_{start+c}(x_i) for canonical X (dense C-order or sorted CSR).

    Features are made in chunks of at most ~1 MB of directions; each chunk's
    directions are generated once (in parallel over input columns), then rows
    are mapped in parallel.  Chunking changes no value: a feature depends only
    on its global index.
    """
    cdef Rows R
    keep = as_rows(X, &R)
    cdef Py_ssize_t n = R.n_rows, d = R.n_features, total = out.shape[1]
    cdef Py_ssize_t chunk, c0, cnt, i
    cdef FeatureMap fm
    cdef double* omega = NULL
    cdef double* phase = NULL
    if out.shape[0] != n:
        raise ValueError("out must have one row per row of X")
    if n == 0 or total == 0:
        return
    chunk = CHUNK_DOUBLES // (d if d > 0 else 1)
    if chunk < 16:
        chunk = 16
    if chunk > 1024:
        chunk = 1024
    if chunk > total:
        chunk = total
    fm_init(&fm, kernel, gamma, d, chunk, seed)
    omega = <double*>malloc(max(d, 1) * chunk * sizeof(double))
    phase = <double*>malloc(chunk * sizeof(double))
    if omega == NULL or phase == NULL:
        free(omega)
        free(phase)
        raise MemoryError("cannot allocate the random-feature directions")
    try:
        with nogil:
            c0 = 0
            while c0 < total:
                cnt = chunk if c0 + chunk <= total else total - c0
                fm_features(&fm, start + c0, cnt, omega, phase, n_threads)
                for i in prange(n, num_threads=n_threads, schedule="static"):
                    fm_apply_row_n(omega, phase, cnt, &R, i, &out[i, c0])
                c0 = c0 + cnt
    finally:
        free(omega)
        free(phase)


def block_features(X, int kernel, double gamma, uint64_t seed, int64_t block,
                   Py_ssize_t block_size, bint single=False):
    """phi_g(x_i) of block ``block`` through fm_init / fm_block / fm_apply_row,
    the exact calls DSG makes (for tests of the .pxd contract); serial.
    ``single``: as ``--precision single`` trains and predicts."""
    cdef Rows R
    keep = as_rows(X, &R)
    cdef FeatureMap fm
    cdef Py_ssize_t i, F = block_size, d = R.n_features
    out = np.empty((R.n_rows, F), dtype=np.float64)
    omega_arr = np.empty(max(d, 1) * max(F, 1), dtype=np.float64)
    phase_arr = np.empty(max(F, 1), dtype=np.float64)
    cdef double[:, ::1] o = out
    cdef double[::1] om = omega_arr
    cdef double[::1] ph = phase_arr
    if R.n_rows == 0 or F == 0:
        return out
    fm_init(&fm, kernel, gamma, d, F, seed)
    fm.single = single
    with nogil:
        fm_block(&fm, block, &om[0], &ph[0])
        for i in range(R.n_rows):
            fm_apply_row(&fm, &om[0], &ph[0], &R, i, &o[i, 0])
    return out


# ------------------------------------------------------------ for the tests


def _cos(x, phase):
    """sqrt(2) cos(x + phase) for float64 arrays through ks_cos_features on
    the path the tests allow (_simd.vector_paths) and through ks_cos one
    value at a time: (block, one_by_one, 1 if the AVX2 path ran else 0).
    For tests/test_features.py."""
    cdef double[::1] a = np.array(x, dtype=np.float64, copy=True).ravel()
    cdef double[::1] p = np.array(phase, dtype=np.float64, copy=True).ravel()
    cdef double[::1] b = np.array(a, copy=True)
    cdef Py_ssize_t i, n = a.shape[0]
    cdef int used
    if p.shape[0] != n:
        raise ValueError("x and phase differ in length")
    with nogil:
        used = ks_simd(KS_AVX2)
        if n > 0:
            ks_cos_features(&a[0], &p[0], n)
        for i in range(n):
            b[i] = 1.4142135623730951 * ks_cos(b[i] + p[i])
    return np.asarray(a), np.asarray(b), used
