# kernsolve's portable counter-based RNG: Philox-4x32-10 (Salmon et al., SC'11).
#
# Every draw is a pure function of (key, counter): no state, no globals, so a
# prange loop can compute draw i for any i in any thread and get the same bits.
# The algorithm is written down completely in doc/random.md; keep the two in step
# (tests/test_random.py holds an independent pure-Python copy and golden values).
#
# Usage from another .pyx:
#     from ._random cimport rng_key, rng_u64, rng_normal, STREAM_FEATURES
#     cdef uint64_t key = rng_key(seed, STREAM_FEATURES)
#     z = rng_normal(key, counter)          # counter: any uint64 you address by
from libc.stdint cimport uint32_t, uint64_t, int64_t
from libc.math cimport log, sqrt, cos, sin, tan

# Stream numbers (the fixed table of doc/random.md).  Never renumber: model
# files and golden vectors depend on them.  New streams take the next number.
cdef enum:
    STREAM_FEATURES = 1      # DSG random-feature directions omega
    STREAM_PHASES = 2        # DSG random-feature phases b
    STREAM_SAMPLING = 3      # data sampling (SBP, DSG mini-batches, median trick)
    STREAM_FOLDS = 4         # cross-validation fold assignment
    STREAM_PROBABILITY = 5   # LIBSVM-style probability (Platt) internal CV
    STREAM_SHUFFLE = 6       # shuffles of the training order

# Philox-4x32 constants (Random123) are written inline below as literals
# (C enums cannot hold values above INT_MAX): round multipliers
# M0 = 0xD2511F53, M1 = 0xCD9E8D57 and Weyl key increments W0 = 0x9E3779B9,
# W1 = 0xBB67AE85.  Key derivation puts the tag 0x4B455953 ("KEYS" in ASCII) in
# counter word 3, so a derived key is never an ordinary draw with key = seed.

cdef struct philox_out:
    uint32_t v0
    uint32_t v1
    uint32_t v2
    uint32_t v3


cdef inline philox_out philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2,
                                     uint32_t c3, uint32_t k0,
                                     uint32_t k1) noexcept nogil:
    """Philox-4x32 with 10 rounds: the bijection of counter (c0..c3) under key (k0, k1)."""
    cdef uint64_t p0, p1
    cdef uint32_t x0 = c0, x1 = c1, x2 = c2, x3 = c3
    cdef int r
    for r in range(10):
        if r > 0:
            # uint32 arithmetic wraps mod 2**32, as the algorithm requires.
            k0 = <uint32_t>(k0 + <uint32_t>0x9E3779B9U)
            k1 = <uint32_t>(k1 + <uint32_t>0xBB67AE85U)
        p0 = <uint64_t>0xD2511F53U * x0
        p1 = <uint64_t>0xCD9E8D57U * x2
        x0 = <uint32_t>(p1 >> 32) ^ x1 ^ k0
        x1 = <uint32_t>p1
        x2 = <uint32_t>(p0 >> 32) ^ x3 ^ k1
        x3 = <uint32_t>p0
    cdef philox_out out
    out.v0 = x0
    out.v1 = x1
    out.v2 = x2
    out.v3 = x3
    return out


cdef inline philox_out rng_block(uint64_t key, uint64_t counter,
                                 uint32_t sub) noexcept nogil:
    """The 128 output bits of (key, counter, sub): Philox of (lo, hi, sub, 0)."""
    return philox4x32_10(<uint32_t>counter, <uint32_t>(counter >> 32), sub, 0,
                         <uint32_t>key, <uint32_t>(key >> 32))


cdef inline uint64_t rng_key(uint64_t seed, uint64_t stream) noexcept nogil:
    """The 64-bit key of named stream ``stream`` under user seed ``seed``."""
    cdef philox_out o = philox4x32_10(<uint32_t>stream, <uint32_t>(stream >> 32),
                                      0, <uint32_t>0x4B455953U,
                                      <uint32_t>seed, <uint32_t>(seed >> 32))
    return <uint64_t>o.v0 | (<uint64_t>o.v1 << 32)


cdef inline uint64_t rng_u64(uint64_t key, uint64_t counter) noexcept nogil:
    """Draw ``counter`` of stream ``key``: 64 uniformly random bits."""
    cdef philox_out o = rng_block(key, counter, 0)
    return <uint64_t>o.v0 | (<uint64_t>o.v1 << 32)


cdef inline double rng_uniform(uint64_t key, uint64_t counter) noexcept nogil:
    """Uniform double in [0, 1): the top 53 bits of rng_u64 times 2**-53 (exact)."""
    return <double>(rng_u64(key, counter) >> 11) * 1.1102230246251565e-16


cdef inline double rng_uniform_range(uint64_t key, uint64_t counter, double low,
                                     double high) noexcept nogil:
    """low + (high - low) * rng_uniform; can round up to ``high`` as numpy's can."""
    return low + (high - low) * rng_uniform(key, counter)


cdef inline double rng_normal(uint64_t key, uint64_t counter) noexcept nogil:
    """Standard normal by Box-Muller (cosine branch) from the 128 bits of one counter.

    u1 = (a >> 11 + 1) * 2**-53 lies in (0, 1], so log never sees 0;
    |z| <= sqrt(106 ln 2) ~ 8.57.
    """
    cdef philox_out o = rng_block(key, counter, 0)
    cdef uint64_t a = <uint64_t>o.v0 | (<uint64_t>o.v1 << 32)
    cdef uint64_t b = <uint64_t>o.v2 | (<uint64_t>o.v3 << 32)
    cdef double u1 = <double>((a >> 11) + 1) * 1.1102230246251565e-16
    cdef double u2 = <double>(b >> 11) * 1.1102230246251565e-16
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2)


cdef inline void rng_normal_pair_sub(uint64_t key, uint64_t counter, uint32_t sub,
                                     double* z0, double* z1) noexcept nogil:
    """Both Box-Muller branches of block (key, counter, sub): with a, b the low and
    high 64 bits, z0 = sqrt(-2 log u1) cos(2 pi u2), z1 = sqrt(-2 log u1) sin(2 pi u2).
    The one home of the pair formula (DSG's Gaussian features address normals
    by sub-counter; doc/dsg.md).
    """
    cdef philox_out o = rng_block(key, counter, sub)
    cdef uint64_t a = <uint64_t>o.v0 | (<uint64_t>o.v1 << 32)
    cdef uint64_t b = <uint64_t>o.v2 | (<uint64_t>o.v3 << 32)
    cdef double u1 = <double>((a >> 11) + 1) * 1.1102230246251565e-16
    cdef double u2 = <double>(b >> 11) * 1.1102230246251565e-16
    cdef double r = sqrt(-2.0 * log(u1))
    cdef double angle = 6.283185307179586 * u2
    z0[0] = r * cos(angle)
    z1[0] = r * sin(angle)


cdef inline void rng_normal_pair(uint64_t key, uint64_t counter, double* z0,
                                 double* z1) noexcept nogil:
    """Both Box-Muller branches of one counter: z0 = rng_normal(key, counter) and
    z1 = sqrt(-2 log u1) * sin(2 pi u2), independent of z0.  Half the libm
    work per normal, for callers that can address normals in pairs.
    """
    rng_normal_pair_sub(key, counter, 0, z0, z1)


cdef inline double rng_cauchy_sub(uint64_t key, uint64_t counter,
                                  uint32_t sub) noexcept nogil:
    """Standard Cauchy from the low 64 bits a of block (key, counter, sub):
    tan(pi * (u - 0.5)) with u = (2 (a >> 12) + 1) * 2**-53 in (0, 1).

    u is an odd multiple of 2**-53, so u - 0.5 is exact, never 0.5 in magnitude,
    and the draw is symmetric about 0 bit for bit.
    """
    cdef philox_out o = rng_block(key, counter, sub)
    cdef uint64_t a = <uint64_t>o.v0 | (<uint64_t>o.v1 << 32)
    cdef double u = <double>(((a >> 12) << 1) | 1) * 1.1102230246251565e-16
    return tan(3.141592653589793 * (u - 0.5))


cdef inline double rng_cauchy(uint64_t key, uint64_t counter) noexcept nogil:
    """Standard Cauchy draw ``counter``: rng_cauchy_sub with sub-counter 0."""
    return rng_cauchy_sub(key, counter, 0)


cdef inline uint64_t _mulhi64(uint64_t x, uint64_t y) noexcept nogil:
    """High 64 bits of the 128-bit product x*y, in portable 32-bit pieces."""
    cdef uint64_t x_lo = x & 0xFFFFFFFFU, x_hi = x >> 32
    cdef uint64_t y_lo = y & 0xFFFFFFFFU, y_hi = y >> 32
    cdef uint64_t ll = x_lo * y_lo
    cdef uint64_t lh = x_lo * y_hi
    cdef uint64_t hl = x_hi * y_lo
    cdef uint64_t hh = x_hi * y_hi
    cdef uint64_t mid = (ll >> 32) + (lh & 0xFFFFFFFFU) + (hl & 0xFFFFFFFFU)
    return hh + (lh >> 32) + (hl >> 32) + (mid >> 32)


cdef inline uint64_t rng_integer(uint64_t key, uint64_t counter,
                                 uint64_t n) noexcept nogil:
    """Uniform integer in [0, n), n >= 1, without modulo bias (Lemire 2019).

    Attempt j (j = 0, 1, ...) draws x_j = low 64 bits of rng_block(key, counter, j)
    (x_0 == rng_u64(key, counter)) and is accepted when
    (x_j * n) mod 2**64 >= 2**64 mod n; the result is floor(x_j * n / 2**64).
    Retries live in counter word 2, so they never consume another counter.
    n == 0 returns 0 (callers validate).
    """
    cdef uint64_t x, lo, t
    cdef uint32_t j = 0
    cdef philox_out o
    if n == 0:
        return 0
    x = rng_u64(key, counter)
    lo = x * n
    if lo < n:
        # Only now is the (slow) division needed: 2**64 mod n < n.
        t = (<uint64_t>0 - n) % n
        while lo < t:
            j += 1
            o = rng_block(key, counter, j)
            x = <uint64_t>o.v0 | (<uint64_t>o.v1 << 32)
            lo = x * n
    return _mulhi64(x, n)


cdef inline void rng_permutation(uint64_t key, int64_t* perm,
                                 int64_t n) noexcept nogil:
    """perm[0..n) = a uniformly random permutation of 0..n-1 (forward Fisher-Yates).

    Start from the identity; for i = 0 .. n-2 swap perm[i] with
    perm[i + rng_integer(key, i, n - i)] -- LIBSVM's loop order, with draw i
    at counter i.
    """
    cdef int64_t i, j, tmp
    for i in range(n):
        perm[i] = i
    for i in range(n - 1):
        j = i + <int64_t>rng_integer(key, <uint64_t>i, <uint64_t>(n - i))
        tmp = perm[i]
        perm[i] = perm[j]
        perm[j] = tmp
