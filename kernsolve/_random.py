"""kernsolve's portable counter-based random numbers (Python front).

Every value is a pure function of ``(seed, stream, counter)``: draw ``i`` of a
stream is the same whatever was drawn before, on any platform and for any
thread count.  The generator is Philox-4x32-10 keyed by a per-stream key
derived from the seed; ``doc/random.md`` specifies it bit for bit.  Compiled
code uses the same functions through ``kernsolve/_core/_random.pxd``.

Streams are named (see ``STREAMS``) or given as integers in ``[0, 2**64)``.
Functions that take ``start`` and ``count`` return draws
``start, start + 1, ..., start + count - 1``.
"""
import numpy as np

from ._core import _random as _c

# Fixed table (doc/random.md).  Never renumber: saved models depend on it.
STREAMS = {
    "features": 1,       # DSG random-feature directions omega
    "phases": 2,         # DSG random-feature phases b
    "sampling": 3,       # data sampling (SBP, DSG mini-batches, median trick)
    "folds": 4,          # cross-validation fold assignment
    "probability": 5,    # LIBSVM-style probability (Platt) internal CV
    "shuffle": 6,        # shuffles of the training order
}

_U64 = 1 << 64

__all__ = ["STREAMS", "stream_key", "random_u64", "uniform", "normal", "cauchy",
           "integers", "permutation"]


def _uint64(value, name):
    if isinstance(value, (bool, np.bool_)) or not hasattr(value, "__index__"):
        raise ValueError(f"{name} must be an integer in [0, 2**64), got {value!r}")
    value = value.__index__()
    if not 0 <= value < _U64:
        raise ValueError(f"{name} must be an integer in [0, 2**64), got {value!r}")
    return value


def _stream(stream):
    if isinstance(stream, str):
        try:
            return STREAMS[stream]
        except KeyError:
            raise ValueError(f"unknown stream {stream!r}; known streams are "
                             f"{', '.join(sorted(STREAMS))}, or an integer "
                             f"in [0, 2**64)") from None
    return _uint64(stream, "stream")


def _range(start, count):
    start = _uint64(start, "start")
    if isinstance(count, (bool, np.bool_)) or not hasattr(count, "__index__") \
            or count.__index__() < 0:
        raise ValueError(f"count must be a non-negative integer, got {count!r}")
    count = count.__index__()
    if start + count > _U64:
        raise ValueError("start + count must not exceed 2**64 (counters do not "
                         "wrap around)")
    return start, count


def stream_key(seed, stream):
    """The 64-bit key of ``stream`` under ``seed`` (``rng_key`` in the core).

    Parameters
    ----------
    seed : int in [0, 2**64)
    stream : str (a name in ``STREAMS``) or int in [0, 2**64)

    Returns
    -------
    key : int
    """
    return _c.key(_uint64(seed, "seed"), _stream(stream))


def random_u64(seed, stream, start=0, count=1):
    """Raw 64-bit outputs, as a ``uint64`` array of length ``count``."""
    key = stream_key(seed, stream)
    start, count = _range(start, count)
    out = np.empty(count, dtype=np.uint64)
    _c.fill_u64(key, start, out)
    return out


def uniform(seed, stream, start=0, count=1, low=0.0, high=1.0):
    """Uniform doubles: ``low + (high - low) * u`` with ``u`` in [0, 1) from 53 bits.

    With the defaults the values are exactly ``(u64 >> 11) * 2**-53``.
    """
    key = stream_key(seed, stream)
    start, count = _range(start, count)
    low = float(low)
    high = float(high)
    if not (np.isfinite(low) and np.isfinite(high)) or not low < high:
        raise ValueError(f"need finite low < high, got low={low!r}, high={high!r}")
    out = np.empty(count, dtype=np.float64)
    _c.fill_uniform(key, start, out)
    if low != 0.0 or high != 1.0:
        out *= high - low
        out += low
    return out


def normal(seed, stream, start=0, count=1):
    """Standard normal doubles, Box-Muller (cosine branch), one counter per draw."""
    key = stream_key(seed, stream)
    start, count = _range(start, count)
    out = np.empty(count, dtype=np.float64)
    _c.fill_normal(key, start, out)
    return out


def cauchy(seed, stream, start=0, count=1):
    """Standard Cauchy doubles, ``tan(pi * (u - 1/2))``, one counter per draw."""
    key = stream_key(seed, stream)
    start, count = _range(start, count)
    out = np.empty(count, dtype=np.float64)
    _c.fill_cauchy(key, start, out)
    return out


def integers(high, seed, stream, start=0, count=1):
    """Uniform integers in ``[0, high)`` without modulo bias (Lemire's method).

    ``high`` is an integer in [1, 2**64).  The result is ``int64`` when
    ``high <= 2**63`` and ``uint64`` otherwise.
    """
    if isinstance(high, (bool, np.bool_)) or not hasattr(high, "__index__") \
            or not 1 <= high.__index__() < _U64:
        raise ValueError(f"high must be an integer in [1, 2**64), got {high!r}")
    high = high.__index__()
    key = stream_key(seed, stream)
    start, count = _range(start, count)
    out = np.empty(count, dtype=np.uint64)
    _c.fill_integers(key, start, high, out)
    if high <= (1 << 63):
        return out.view(np.int64)
    return out


def permutation(n, seed, stream="shuffle"):
    """A uniformly random permutation of ``0 .. n-1`` (``int64`` array).

    Forward Fisher-Yates in LIBSVM's loop order: starting from the identity,
    for ``i = 0 .. n-2`` swap positions ``i`` and
    ``i + integers(n - i, seed, stream, start=i)[0]``.

    Parameters
    ----------
    n : int >= 0
    seed : int in [0, 2**64)
    stream : str or int
        ``"folds"`` for cross-validation folds, ``"probability"`` for the
        internal CV of probability estimates, ``"shuffle"`` (default) otherwise.
    """
    if isinstance(n, (bool, np.bool_)) or not hasattr(n, "__index__") \
            or n.__index__() < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    n = n.__index__()
    if n >= (1 << 63):
        raise ValueError(f"n is too large for a permutation: {n}")
    key = stream_key(seed, stream)
    out = np.empty(n, dtype=np.int64)
    _c.fill_permutation(key, out)
    return out


def _check_tables():
    # The compiled enum and this table must agree; a mismatch is a build bug.
    if _c.STREAM_NUMBERS != STREAMS:  # pragma: no cover
        raise ImportError("kernsolve._core._random stream table differs from "
                          "kernsolve._random.STREAMS; rebuild the extension")


_check_tables()
