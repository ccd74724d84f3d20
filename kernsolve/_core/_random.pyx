"""Array fills and scalar probes of the portable RNG (the algorithm: _random.pxd).

The Python front, kernsolve/_random.py, validates seeds, streams and counter
ranges and allocates the outputs; these functions only fill.  Element i of an
output is draw ``start + i``, so a fill is bit-identical for any thread count.
"""
from cython.parallel cimport prange
from libc.stdint cimport uint32_t, uint64_t, int64_t

from ._random cimport (philox_out, philox4x32_10, rng_key, rng_u64, rng_uniform,
                       rng_normal, rng_normal_pair, rng_normal_pair_sub, rng_cauchy,
                       rng_cauchy_sub, rng_integer,
                       rng_permutation,
                       STREAM_FEATURES, STREAM_PHASES, STREAM_SAMPLING,
                       STREAM_FOLDS, STREAM_PROBABILITY, STREAM_SHUFFLE)

# The compiled table, so the Python front can check it agrees with its own.
STREAM_NUMBERS = {
    "features": STREAM_FEATURES,
    "phases": STREAM_PHASES,
    "sampling": STREAM_SAMPLING,
    "folds": STREAM_FOLDS,
    "probability": STREAM_PROBABILITY,
    "shuffle": STREAM_SHUFFLE,
}


def philox(ctr, key):
    """Philox-4x32-10 of four 32-bit counter words under two 32-bit key words."""
    cdef philox_out o = philox4x32_10(ctr[0], ctr[1], ctr[2], ctr[3], key[0], key[1])
    return (o.v0, o.v1, o.v2, o.v3)


def key(uint64_t seed, uint64_t stream):
    """rng_key(seed, stream)."""
    return rng_key(seed, stream)


def u64(uint64_t key, uint64_t counter):
    """rng_u64(key, counter)."""
    return rng_u64(key, counter)


def uniform1(uint64_t key, uint64_t counter):
    """rng_uniform(key, counter)."""
    return rng_uniform(key, counter)


def normal1(uint64_t key, uint64_t counter):
    """rng_normal(key, counter)."""
    return rng_normal(key, counter)


def normal_pair1(uint64_t key, uint64_t counter):
    """rng_normal_pair(key, counter) as a tuple."""
    cdef double z0, z1
    rng_normal_pair(key, counter, &z0, &z1)
    return (z0, z1)


def normal_pair_sub1(uint64_t key, uint64_t counter, uint32_t sub):
    """rng_normal_pair_sub(key, counter, sub) as a tuple."""
    cdef double z0, z1
    rng_normal_pair_sub(key, counter, sub, &z0, &z1)
    return (z0, z1)


def cauchy1(uint64_t key, uint64_t counter):
    """rng_cauchy(key, counter)."""
    return rng_cauchy(key, counter)


def cauchy_sub1(uint64_t key, uint64_t counter, uint32_t sub):
    """rng_cauchy_sub(key, counter, sub)."""
    return rng_cauchy_sub(key, counter, sub)


def integer1(uint64_t key, uint64_t counter, uint64_t n):
    """rng_integer(key, counter, n)."""
    return rng_integer(key, counter, n)


def fill_u64(uint64_t key, uint64_t start, uint64_t[::1] out, int n_threads=1):
    cdef Py_ssize_t i, n = out.shape[0]
    with nogil:
        for i in prange(n, num_threads=n_threads, schedule="static"):
            out[i] = rng_u64(key, start + <uint64_t>i)


def fill_uniform(uint64_t key, uint64_t start, double[::1] out, int n_threads=1):
    cdef Py_ssize_t i, n = out.shape[0]
    with nogil:
        for i in prange(n, num_threads=n_threads, schedule="static"):
            out[i] = rng_uniform(key, start + <uint64_t>i)


def fill_normal(uint64_t key, uint64_t start, double[::1] out, int n_threads=1):
    cdef Py_ssize_t i, n = out.shape[0]
    with nogil:
        for i in prange(n, num_threads=n_threads, schedule="static"):
            out[i] = rng_normal(key, start + <uint64_t>i)


def fill_cauchy(uint64_t key, uint64_t start, double[::1] out, int n_threads=1):
    cdef Py_ssize_t i, n = out.shape[0]
    with nogil:
        for i in prange(n, num_threads=n_threads, schedule="static"):
            out[i] = rng_cauchy(key, start + <uint64_t>i)


def fill_integers(uint64_t key, uint64_t start, uint64_t high, uint64_t[::1] out,
                  int n_threads=1):
    cdef Py_ssize_t i, n = out.shape[0]
    with nogil:
        for i in prange(n, num_threads=n_threads, schedule="static"):
            out[i] = rng_integer(key, start + <uint64_t>i, high)


def fill_permutation(uint64_t key, int64_t[::1] out):
    cdef int64_t n = out.shape[0]
    if n == 0:
        return
    with nogil:
        rng_permutation(key, &out[0], n)
