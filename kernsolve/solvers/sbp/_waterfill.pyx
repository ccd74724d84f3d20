"""Water filling for the Stochastic Batch Perceptron (SBP paper, Algorithms 2-3).

Given responses v_1..v_n and a volume V = n*nu, the water level gamma is the
common surface when V units of water are poured over columns of heights v_i:
``sum_i (gamma - v_i)_+ = V``.  The minimax-optimal distribution of the SBP is
uniform over the covered points (v_i < gamma).

No bias (Algorithm 2): a quickselect-style search on values.  A random pivot
splits the open range three ways (<, ==, >); the volume needed to fill up to
the pivot, ``count_below * pivot - sum_below``, says on which side gamma lies.
Expected O(n), no sort.

Bias (Algorithm 3, two basins): with positives raised by b and negatives
lowered by b, write g+ = gamma - b and g- = gamma + b for the levels over the
raw responses.  Maximising gamma = (g+ + g-)/2 at total volume V forces equal
covered counts k in both basins (the paper's appendix B), and with a_(j), b_(j)
the j-th smallest response of each class and d_j = a_(j) + b_(j), the volume
at s = g+ + g- is ``sum_j (s - d_j)_+`` -- again one water filling, over the
paired order statistics.  We find k = max{k : (k-1) d_k - sum_{j<k} d_j < V}
by bisection on the rank, each probe a quickselect of rank r in both classes
restricted to the still-open rank range, so the work halves each round:
expected O(n) in total.  b is the midpoint of the interval of optimal biases
(the paper's lines 40-43).

The rearrangement of the arrays depends only on the input values, their order
and the pivot draws (counter-based, from the caller's key and counter), so it
is reproducible bit for bit.
"""
from libc.stdint cimport uint64_t
from libc.stdlib cimport malloc, free
from libc.math cimport INFINITY, isfinite

import numpy as np

from kernsolve._core._random cimport rng_integer, rng_key, STREAM_SAMPLING


cdef inline void _swap(double* v, Py_ssize_t* ix, Py_ssize_t i,
                       Py_ssize_t j) noexcept nogil:
    cdef double tv = v[i]
    cdef Py_ssize_t ti = ix[i]
    v[i] = v[j]
    v[j] = tv
    ix[i] = ix[j]
    ix[j] = ti


cdef inline double _pivot(const double* v, Py_ssize_t lo, Py_ssize_t hi,
                          uint64_t key, uint64_t* counter) noexcept nogil:
    cdef uint64_t r = rng_integer(key, counter[0], <uint64_t>(hi - lo))
    counter[0] += 1
    return v[lo + <Py_ssize_t>r]


cdef inline void _partition3(double* v, Py_ssize_t* ix, Py_ssize_t lo,
                             Py_ssize_t hi, double p, Py_ssize_t* a_out,
                             Py_ssize_t* b_out, double* sum_less) noexcept nogil:
    """Dijkstra's three-way partition of [lo, hi) around p.

    Afterwards [lo, a) < p, [a, b) == p, [b, hi) > p; sum_less is the sum of
    [lo, a) accumulated in visiting order.
    """
    cdef Py_ssize_t a = lo, i = lo, b = hi
    cdef double x, s = 0.0
    while i < b:
        x = v[i]
        if x < p:
            s += x
            if i != a:
                _swap(v, ix, i, a)
            a += 1
            i += 1
        elif x > p:
            b -= 1
            _swap(v, ix, i, b)
        else:
            i += 1
    a_out[0] = a
    b_out[0] = b
    sum_less[0] = s


cdef void _select(double* v, Py_ssize_t* ix, Py_ssize_t lo, Py_ssize_t hi,
                  Py_ssize_t r, uint64_t key, uint64_t* counter,
                  double* sum_before) noexcept nogil:
    """Quickselect: put the element of rank r (lo <= r < hi) at position r.

    Requires every element of [0, lo) <= every element of [lo, hi) <= every
    element of [hi, n).  Afterwards [lo, r) <= v[r] <= [r + 1, hi);
    sum_before is the sum of [lo, r).
    """
    cdef double acc = 0.0, s, p
    cdef Py_ssize_t a, b
    while True:
        p = _pivot(v, lo, hi, key, counter)
        _partition3(v, ix, lo, hi, p, &a, &b, &s)
        if r < a:
            hi = a
        elif r < b:
            sum_before[0] = acc + s + <double>(r - a) * p
            return
        else:
            acc += s + <double>(b - a) * p
            lo = b


cdef int find_gamma(double* vals, Py_ssize_t* idx, Py_ssize_t n, double volume,
                    uint64_t key, uint64_t* counter, double* gamma,
                    Py_ssize_t* n_covered) noexcept nogil:
    cdef Py_ssize_t lo = 0, hi = n, a, b, i, k
    cdef double below = 0.0, s, p, vmin
    if n <= 0:
        return WF_EMPTY
    if not (volume > 0.0):
        # Separable case: the level is the minimum; every minimiser is covered.
        vmin = vals[0]
        for i in range(1, n):
            if vals[i] < vmin:
                vmin = vals[i]
        k = 0
        for i in range(n):
            if vals[i] == vmin:
                if i != k:
                    _swap(vals, idx, i, k)
                k += 1
        gamma[0] = vmin
        n_covered[0] = k
        return WF_OK
    # Invariant: [0, lo) are covered (all below gamma), their sum is `below`;
    # [hi, n) are not; [0, lo) <= [lo, hi) <= [hi, n).
    while lo < hi:
        p = _pivot(vals, lo, hi, key, counter)
        _partition3(vals, idx, lo, hi, p, &a, &b, &s)
        # Water needed to fill every column below p up to p.
        if <double>a * p - (below + s) >= volume:
            hi = a                 # gamma <= p: nothing from p upwards is covered
        else:
            below += s + <double>(b - a) * p
            lo = b                 # gamma > p: everything up to p is covered
    # volume > 0 guarantees lo >= 1 (the first probe covers the minimum).
    gamma[0] = (volume + below) / <double>lo
    n_covered[0] = lo
    return WF_OK


cdef inline double _min_from(const double* v, Py_ssize_t start,
                             Py_ssize_t n) noexcept nogil:
    cdef double m = INFINITY
    cdef Py_ssize_t i
    for i in range(start, n):
        if v[i] < m:
            m = v[i]
    return m


cdef int find_gamma_and_bias(double* vp, Py_ssize_t* ip, Py_ssize_t npos,
                             double* vn, Py_ssize_t* in_, Py_ssize_t nneg,
                             double volume, uint64_t key, uint64_t* counter,
                             double* gamma, double* bias,
                             Py_ssize_t* k_out) noexcept nogil:
    cdef Py_ssize_t m, lo, hi, r, k
    cdef double sp, sn, sum_p, sum_n, ap, an, d, s, vol_r
    if npos <= 0 or nneg <= 0:
        return WF_EMPTY
    if volume < 0.0:
        volume = 0.0
    m = npos if npos < nneg else nneg
    # Ranks >= m of the larger class never pair up: move its m smallest first.
    if npos > m:
        _select(vp, ip, 0, npos, m - 1, key, counter, &sp)
    if nneg > m:
        _select(vn, in_, 0, nneg, m - 1, key, counter, &sn)
    # Rank 1 (the minimum of each class) is always covered.
    _select(vp, ip, 0, m, 0, key, counter, &sp)
    _select(vn, in_, 0, m, 0, key, counter, &sn)
    # Invariant: k* in [lo, hi] (1-based ranks); positions [0, lo) of each
    # class hold its lo smallest, sums sum_p / sum_n, largest ap / an; the
    # positions [hi, m) hold values no smaller than [0, hi).
    lo = 1
    hi = m
    ap = vp[0]
    an = vn[0]
    sum_p = ap
    sum_n = an
    while lo < hi:
        r = (lo + hi + 1) // 2
        # rank r sits at position r - 1; search only the open range [lo, hi)
        _select(vp, ip, lo, hi, r - 1, key, counter, &sp)
        _select(vn, in_, lo, hi, r - 1, key, counter, &sn)
        d = vp[r - 1] + vn[r - 1]
        # Volume at s = d_r: sum_{j<r} (d_r - d_j) = (r-1) d_r - sum_{j<r} d_j.
        vol_r = <double>(r - 1) * d - ((sum_p + sp) + (sum_n + sn))
        if vol_r < volume:
            sum_p += sp + vp[r - 1]
            sum_n += sn + vn[r - 1]
            ap = vp[r - 1]
            an = vn[r - 1]
            lo = r
        else:
            hi = r - 1
    k = lo
    s = (volume + sum_p + sum_n) / <double>k          # g+ + g-
    level_and_bias(s, ap, an, _min_from(vp, k, npos) if k < npos else INFINITY,
                   _min_from(vn, k, nneg) if k < nneg else INFINITY, gamma, bias)
    k_out[0] = k
    return WF_OK


cdef void level_and_bias(double s, double ap, double an, double next_p,
                         double next_n, double* gamma, double* bias) noexcept nogil:
    cdef double delta, room_p, room_n, dp, dn, gp, gn
    delta = s - ap - an                                # >= 0 up to rounding
    if delta < 0.0:
        delta = 0.0
    # Room above the k-th value before the (k+1)-th gets wet, per class.
    room_p = next_p - ap
    room_n = next_n - an
    dp = delta if delta < room_p else room_p
    dn = delta if delta < room_n else room_n
    # g+ ranges over [ap + delta - dn, ap + dp]; take the midpoint.
    gp = ap + 0.5 * (delta + dp - dn)
    gn = an + 0.5 * (delta - dp + dn)
    gamma[0] = 0.5 * (gp + gn)
    bias[0] = 0.5 * (gn - gp)


# ------------------------------------------------------------ Python access

def _check_values(values, name="values"):
    v = np.array(values, dtype=np.float64, copy=True).ravel()
    if v.size and not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be finite")
    return v


def _check_volume(volume):
    volume = float(volume)
    if not (volume >= 0.0) or volume == INFINITY:
        raise ValueError(f"volume must be a finite number >= 0, got {volume!r}")
    return volume


def water_level(values, double volume, seed=0):
    """Water level of Algorithm 2 (no bias).

    Parameters
    ----------
    values : array of float, shape (n,)
        The responses c_i.
    volume : float >= 0
        n * nu, the total slack.
    seed : int
        Seeds the pivot draws (the result does not depend on it, only the
        order of the covered indices).

    Returns
    -------
    gamma : float
    covered : ndarray of intp
        Indices i with c_i < gamma (volume > 0), or every minimiser (volume 0).
    """
    cdef double[::1] v = _check_values(values)
    volume = _check_volume(volume)
    cdef Py_ssize_t n = v.shape[0], i, k = 0
    if n == 0:
        raise ValueError("water filling needs at least one value")
    ix_arr = np.arange(n, dtype=np.intp)
    cdef Py_ssize_t[::1] ix = ix_arr
    cdef uint64_t key = rng_key(<uint64_t>seed, STREAM_SAMPLING)
    cdef uint64_t counter = 0
    cdef double g = 0.0
    with nogil:
        find_gamma(&v[0], &ix[0], n, volume, key, &counter, &g, &k)
    return g, ix_arr[:k].copy()


def water_level_bias(values, y, double volume, seed=0):
    """Water level and bias of Algorithm 3 (two basins).

    Parameters
    ----------
    values : array of float, shape (n,)
        The responses c_i = y_i <w, x_i> (without the bias).
    y : array of +1/-1, shape (n,)
    volume : float >= 0
    seed : int
        Seeds the pivot draws.

    Returns
    -------
    gamma, bias : float
        The level and the bias b (heights c_i + y_i b).
    covered_pos, covered_neg : ndarray of intp
        The k covered indices of each class (k >= 1, the same for both).
    """
    vv = _check_values(values)
    yy = np.asarray(y).ravel()
    if yy.shape != vv.shape:
        raise ValueError(f"y has {yy.size} entries, values {vv.size}")
    if not np.all((yy == 1) | (yy == -1)):
        raise ValueError("y must contain only +1 and -1")
    volume = _check_volume(volume)
    pos = np.flatnonzero(yy == 1).astype(np.intp)
    neg = np.flatnonzero(yy == -1).astype(np.intp)
    if pos.size == 0 or neg.size == 0:
        raise ValueError("water filling with a bias needs points of both classes "
                         f"(got {pos.size} positive, {neg.size} negative)")
    cdef double[::1] vp = vv[pos].copy()
    cdef double[::1] vn = vv[neg].copy()
    cdef Py_ssize_t[::1] ip = pos
    cdef Py_ssize_t[::1] in_ = neg
    cdef uint64_t key = rng_key(<uint64_t>seed, STREAM_SAMPLING)
    cdef uint64_t counter = 0
    cdef double g = 0.0, b = 0.0
    cdef Py_ssize_t k = 0
    with nogil:
        find_gamma_and_bias(&vp[0], &ip[0], vp.shape[0], &vn[0], &in_[0],
                            vn.shape[0], volume, key, &counter, &g, &b, &k)
    return g, b, pos[:k].copy(), neg[:k].copy()
