"""Water filling by shrinking value windows: the level, bias and covered set of
``_waterfill``'s quickselect search (SBP paper, Algorithms 2-3) at the cost of
a few streaming passes.

Why not only the quickselect: inside the SBP most points of a class can be
covered (most of the positives of a9a at -c 100), so water-filling only the
points below a threshold saves little, and the bisection's quickselects move
every value several times per iteration: most of the SBP's time went there.

How: the values of each class are counted in N_BUCKETS equal buckets over
their range.  At every rank r the bucket edges bound the r-th smallest value
and the sum of the r-1 smaller ones, hence the volume
vol_r = (r-1) d_r - sum_{j<r} d_j of the water filling (d_r: the r-th smallest
value; with a bias, the sum of both classes' r-th smallest).  vol_r grows
with r and the covered count is k = max{r : vol_r < V}, so the ranks whose
bounds straddle V say which few buckets hold k and k+1.  The values of those
buckets stay, the ones below are counted and summed exactly, the smallest one
above is kept; the window is bucketed again while it is large, then sorted.
Every pass streams over a class's values with no branch on them and no swap.

Exactness: the final step uses exact order statistics only (the sorted window,
the exact count and sum below it, the smallest value above it) and checks that
k lies inside the window: the volume at the window's first rank is below V and
at some later rank of the window at least V (or the window reaches the last
rank).  When a check fails (the bounds are computed in floating point), or
when V <= 0, the quickselect search of ``_waterfill`` runs instead.  The sums
are added in another order than the quickselect's, so the level can differ
from it in the last bits; k, the covered set and the bias interval are the same.

The covered set is returned as a cut per class (the k-th smallest value x and
how many points with value x are covered: the first ones in index order), so
"covered point number u" is the u-th in index order whichever search ran.

Bounds (the SBP's fills): a caller that knows, per class, a value with
fewer than k points below it and one with more than k + 1 up to it (the
solver does, from the last iteration's fill and the size of its step) passes
them.  Each class's points come from a fixed list by class; the first pass
counts and sums the values below the lower bound, keeps those from it to the
upper one (a few thousand of a9a's 32561 values once the step is short),
and records the indices of every value up to the upper bound as the members
the covered point is drawn from.  The final step's checks then also ask
that rank k and the value above it lie among the kept values; when they fail
the fill starts again without bounds.  The answer does not depend on the
bounds, only the work.  Each fill returns the bounds it can certify for the
next one: the edges of its first pass's buckets that hold ranks k - margin
and k + margin.
"""
from libc.stdint cimport uint64_t
from libc.math cimport INFINITY, isfinite

import numpy as np

from kernsolve._core._random cimport rng_key, STREAM_SAMPLING
from ._waterfill cimport find_gamma, find_gamma_and_bias, level_and_bias, WF_OK, WF_EMPTY

# Work counters of the searches (load-independent cost; read by tests and
# benchmarks through search_counts()).
cdef struct Counts:
    long long fills        # fill_window calls
    long long rounds       # histogram passes over class windows
    long long round_values # values in those windows
    long long sorted       # values sorted by the final step
    long long fallbacks    # fills answered by the quickselect search
    long long bounded      # fills given bounds
    long long members      # values at most the upper bounds, summed over those fills
    long long kept         # values between the bounds, summed over those fills
    long long widened      # bounded fills that looked at every value after all

cdef Counts COUNTS


cdef enum:
    N_BUCKETS = 1024    # buckets per histogram pass (the counts stay in L1)
    SMALL_WINDOW = 64   # a class window this small is sorted
    MAX_ROUNDS = 8      # histogram passes at most (ties stop them earlier)
    # the next bounds certify ranks k -/+ (MARGIN_MIN + k / 2**MARGIN_SHIFT):
    # room for the ranks to move in one step (on a9a the step's spread of
    # K_ij, not the margin, sets the window: a margin of 64 + k/16 kept a
    # third more values, and neither had to widen)
    MARGIN_MIN = 16
    MARGIN_SHIFT = 6


# One class's search state: its w values in v (in index order until the
# final sort), the count and sum of its values below them (all covered), the
# smallest value above them that it saw; partial: values above the
# threshold were not kept (above may then be larger than the smallest of them).
cdef struct ClassWindow:
    double* v
    Py_ssize_t w
    Py_ssize_t n_all
    Py_ssize_t nb
    double sb
    double above
    bint partial


# Counts by value bucket.  Bucket q holds the values x with
# floor((x - origin) * inv) = q (the last bucket also the larger ones); its
# values lie between edge(q) and edge(q + 1), padded for rounding.
cdef struct Histogram:
    int count[N_BUCKETS]
    double origin       # the smallest value when the histogram was taken
    double top          # the largest
    double inv          # buckets per unit of value (0: one bucket, all values equal)
    double width        # 1 / inv (0 with inv)
    double pad          # rounding margin of the edges
    Py_ssize_t qa, qb   # the buckets kept


# Cursor over one class's histogram, rank by rank: the current bucket's
# edges and bounds of the sum of the values in the buckets below it.
cdef struct RankCursor:
    Py_ssize_t q        # bucket holding the current rank
    Py_ssize_t before   # window values in buckets < q
    double sum_lo, sum_hi
    double lo, hi       # _edge(q), _edge_above(q)


cdef inline Py_ssize_t _bucket(const Histogram* h, double x) noexcept nogil:
    # monotone in x: (x - origin) and the product by inv >= 0 round monotonically
    return <Py_ssize_t>min_finite((x - h.origin) * h.inv, <double>(N_BUCKETS - 1))


cdef inline double _edge(const Histogram* h, Py_ssize_t q) noexcept nogil:
    """A bound below bucket q's values (q = N_BUCKETS: above the last's)."""
    if q <= 0:
        return h.origin
    if q >= N_BUCKETS or h.inv == 0.0:
        return h.top
    return min_finite(h.origin + <double>q * h.width - h.pad, h.top)


cdef inline double _edge_above(const Histogram* h, Py_ssize_t q) noexcept nogil:
    """A bound above bucket q's values."""
    if q >= N_BUCKETS - 1 or h.inv == 0.0:
        return h.top
    return min_finite(h.origin + <double>(q + 1) * h.width + h.pad, h.top)


cdef void _count(Histogram* h, const double* v, Py_ssize_t w) noexcept nogil:
    cdef Py_ssize_t i
    cdef double origin = h.origin, inv = h.inv
    cdef int* count = h.count
    for i in range(w):
        count[<Py_ssize_t>min_finite((v[i] - origin) * inv, <double>(N_BUCKETS - 1))] += 1


cdef void _clear(Histogram* h, double lo, double hi) noexcept nogil:
    cdef Py_ssize_t q
    h.origin = lo
    h.top = hi
    h.inv = <double>N_BUCKETS / (hi - lo) if hi > lo else 0.0
    if not isfinite(h.inv):
        h.inv = 0.0
    h.width = 1.0 / h.inv if h.inv > 0.0 else 0.0
    # (x - origin) * inv and q * width are each within a few ulps of exact
    h.pad = 1e-13 * (max_finite(-lo, lo) + max_finite(-hi, hi))
    for q in range(N_BUCKETS):
        h.count[q] = 0


cdef inline void _advance(RankCursor* cur, const Histogram* h,
                          Py_ssize_t local_rank) noexcept nogil:
    """Move the cursor to the bucket of the window's local_rank-th value (1-based)."""
    while cur.before + h.count[cur.q] < local_rank:
        cur.before += h.count[cur.q]
        cur.sum_lo += <double>h.count[cur.q] * cur.lo
        cur.sum_hi += <double>h.count[cur.q] * cur.hi
        cur.q += 1
        cur.lo = _edge(h, cur.q)
        cur.hi = _edge_above(h, cur.q)


cdef inline void _cursor_start(RankCursor* cur, const Histogram* h) noexcept nogil:
    cur.q = 0
    cur.before = 0
    cur.sum_lo = cur.sum_hi = 0.0
    cur.lo = _edge(h, 0)
    cur.hi = _edge_above(h, 0)


cdef Py_ssize_t _bucket_of_rank(const Histogram* h, Py_ssize_t local_rank) noexcept nogil:
    cdef RankCursor cur
    _cursor_start(&cur, h)
    _advance(&cur, h, local_rank)
    return cur.q


# The window of one class after a pass that kept buckets qa..qb: the values
# below (counted and summed), the kept ones (counted), the smallest above.
# Accumulated value by value, then applied by _narrow.
cdef struct Narrowing:
    Py_ssize_t below, kept
    double below_sum, above


cdef inline void _start(Narrowing* nw) noexcept nogil:
    nw.below = nw.kept = 0
    nw.below_sum = 0.0
    nw.above = INFINITY


# x + ABSENT[flag]: x when flag is 1, +inf when 0; x * PRESENT[flag]: x or 0
# (selects without a branch)
cdef double ABSENT[2]
ABSENT[0] = INFINITY
ABSENT[1] = 0.0
cdef double PRESENT[2]
PRESENT[0] = 0.0
PRESENT[1] = 1.0


cdef inline int _sift(Narrowing* nw, const Histogram* h, double x) noexcept nogil:
    """Account for x; 1 when it stays in the window.  No branch on the bucket
    (it is unpredictable): flags are added and multiplied."""
    cdef Py_ssize_t q = _bucket(h, x)
    cdef int below = q < h.qa, above = q > h.qb
    cdef int keep = 1 - below - above
    nw.below += below
    nw.below_sum += x * PRESENT[below]
    nw.kept += keep
    nw.above = min_finite(nw.above, x + ABSENT[above])
    return keep


cdef inline void _narrow(ClassWindow* cw, const Narrowing* nw) noexcept nogil:
    cw.nb += nw.below
    cw.sb += nw.below_sum
    cw.above = min_finite(cw.above, nw.above)
    cw.w = nw.kept


cdef void _sort(double* v, Py_ssize_t n) noexcept nogil:
    """Heapsort, ascending (in place, O(n log n) whatever the ties)."""
    cdef Py_ssize_t start, end, root, child
    cdef double t
    if n < 2:
        return
    start = n // 2
    end = n
    while end > 1:
        if start > 0:
            start -= 1
        else:
            end -= 1
            t = v[end]
            v[end] = v[0]
            v[0] = t
        root = start
        while True:
            child = 2 * root + 1
            if child >= end:
                break
            if child + 1 < end and v[child + 1] > v[child]:
                child += 1
            if v[root] < v[child]:
                t = v[root]
                v[root] = v[child]
                v[child] = t
                root = child
            else:
                break


cdef bint _choose(ClassWindow* cls, int nc, Py_ssize_t m, double volume,
                  Histogram* hist, Py_ssize_t* below_k, Py_ssize_t* above_k) noexcept nogil:
    """From the histograms of the class windows, the buckets qa..qb of each
    class that hold ranks k and k + 1 (all of them where the bounds do not
    tell), and ranks *below_k <= k < *above_k (0: not known).  False when
    every class keeps all its buckets."""
    cdef RankCursor cur[2]
    cdef Py_ssize_t r, r_start = 0, r_end = m, r_a = 0, r_b = 0, first, last, local, part
    cdef double dlo, dhi, slo, shi, vol_lo, vol_hi, elo, ehi
    cdef int c
    cdef bint narrower = False
    for c in range(nc):
        _cursor_start(&cur[c], &hist[c])
        if cls[c].nb > r_start:
            r_start = cls[c].nb
        if cls[c].nb + cls[c].w < r_end:
            r_end = cls[c].nb + cls[c].w
    # Ranks r with every class's r-th value inside its window: bounds of
    # vol_r from the buckets' counts and edges.
    for r in range(r_start + 1, r_end + 1):
        dlo = dhi = slo = shi = 0.0
        for c in range(nc):
            local = r - cls[c].nb
            _advance(&cur[c], &hist[c], local)
            part = local - 1 - cur[c].before      # ranks of this bucket below r
            elo = cur[c].lo
            ehi = cur[c].hi
            dlo += elo
            dhi += ehi
            slo += cls[c].sb + cur[c].sum_lo + <double>part * elo
            shi += cls[c].sb + cur[c].sum_hi + <double>part * ehi
        vol_lo = <double>(r - 1) * dlo - shi
        vol_hi = <double>(r - 1) * dhi - slo
        if vol_hi < volume:
            r_a = r                   # k >= r
        if vol_lo >= volume:
            r_b = r                   # k < r: ranks above r are not needed
            break
    below_k[0] = r_a
    above_k[0] = r_b
    for c in range(nc):
        # keep ranks r_a .. r_b (k and k + 1 lie there); unknown ends: keep
        # all (rank m + 1 of the larger class is the room above k = m)
        first = r_a - cls[c].nb if r_a > 0 else 1
        last = r_b - cls[c].nb if r_b > 0 else m + 1 - cls[c].nb
        if last > cls[c].w:
            last = cls[c].w
        if first < 1 or first > last:
            first = 1
        hist[c].qa = _bucket_of_rank(&hist[c], first)
        hist[c].qb = _bucket_of_rank(&hist[c], last)
        if hist[c].qa > 0 or hist[c].qb < N_BUCKETS - 1:
            narrower = True
    return narrower


cdef bint _refine(ClassWindow* cls, int nc, Py_ssize_t m, double volume,
                  Histogram* hist, Py_ssize_t* below_k, Py_ssize_t* above_k) noexcept nogil:
    """One histogram pass over each class window (already in v) and the
    shrink it allows (*below_k, *above_k: as _choose's).  False when no
    window shrank."""
    cdef Py_ssize_t i, j
    cdef int c
    cdef bint shrunk = False
    cdef Narrowing nw
    cdef double x, lo, hi
    COUNTS.rounds += 1
    for c in range(nc):
        COUNTS.round_values += cls[c].w
        lo = INFINITY
        hi = -INFINITY
        for i in range(cls[c].w):
            lo = min_finite(lo, cls[c].v[i])
            hi = max_finite(hi, cls[c].v[i])
        _clear(&hist[c], lo, hi)
        _count(&hist[c], cls[c].v, cls[c].w)
    if not _choose(cls, nc, m, volume, hist, below_k, above_k):
        return False
    for c in range(nc):
        _start(&nw)
        j = 0
        for i in range(cls[c].w):
            x = cls[c].v[i]
            cls[c].v[j] = x
            j += _sift(&nw, &hist[c], x)
        if j < cls[c].w:
            shrunk = True
        _narrow(&cls[c], &nw)
    return shrunk


cdef bint _exact(ClassWindow* cls, int nc, Py_ssize_t m, double volume,
                 WaterCut* out) noexcept nogil:
    """Sort the windows and find k, the level and the cut from exact order
    statistics.  False when k is not provably inside the windows."""
    cdef Py_ssize_t r, r0 = 0, r1 = m, k = 0, local, i, t
    cdef double total = 0.0, d, d_prev = INFINITY, vol, x
    cdef double nxt[2]
    cdef int c
    cdef bint found_upper = False
    for c in range(nc):
        COUNTS.sorted += cls[c].w
        _sort(cls[c].v, cls[c].w)
        if cls[c].nb > r0:
            r0 = cls[c].nb
        if cls[c].nb + cls[c].w < r1:
            r1 = cls[c].nb + cls[c].w
    r0 += 1                           # the first rank known in every class
    if r0 > r1:
        return False
    for c in range(nc):
        total += cls[c].sb
        for i in range(r0 - 1 - cls[c].nb):
            total += cls[c].v[i]
    for r in range(r0, r1 + 1):
        d = 0.0
        for c in range(nc):
            d += cls[c].v[r - 1 - cls[c].nb]
        # equal d: the same volume as the rank before (covered, as its ties
        # are in the quickselect), whatever the rounding of the sums
        if d != d_prev:
            vol = <double>(r - 1) * d - total
            if vol >= volume:
                found_upper = True
                break
        k = r
        total += d
        d_prev = d
    if k == 0 or (not found_upper and r1 < m):
        return False
    for c in range(nc):
        local = k - cls[c].nb                      # 1-based rank k in the window
        x = cls[c].v[local - 1]
        if local == cls[c].w and cls[c].partial and cls[c].above == INFINITY:
            return False                           # the value above k was not kept
        nxt[c] = cls[c].v[local] if local < cls[c].w else cls[c].above
        # ties of x all lie in the window (lower buckets hold smaller values)
        t = 0
        while local - 1 - t >= 0 and cls[c].v[local - 1 - t] == x:
            t += 1
        out.x[c] = x
        out.ties[c] = t
    out.k = k
    if nc == 1:
        out.gamma = (volume + total) / <double>k
        out.bias = 0.0
    else:
        level_and_bias((volume + total) / <double>k, out.x[0], out.x[1], nxt[0], nxt[1],
                       &out.gamma, &out.bias)
    return True


cdef int _fallback(const double* v, double scale, const signed char* y, Py_ssize_t n,
                   bint bias, double volume, double* buf, Py_ssize_t* ibuf,
                   uint64_t key, uint64_t* counter, WaterCut* out) noexcept nogil:
    """The quickselect search of _waterfill, its covered set turned into a cut."""
    cdef Py_ssize_t j, np_ = 0, nn = 0, k = 0, below, i
    cdef int st, c
    cdef double x
    cdef double* vc[2]
    cdef Py_ssize_t nc_[2]
    if not bias:
        for j in range(n):
            buf[j] = v[j] * scale
            ibuf[j] = j
        st = find_gamma(buf, ibuf, n, volume, key, counter, &out.gamma, &k)
        out.bias = 0.0
        vc[0] = buf
        nc_[0] = n
    else:
        for j in range(n):
            if y[j] == 1:
                np_ += 1
        for j in range(n):
            if y[j] == 1:
                buf[nn] = v[j] * scale
                ibuf[nn] = j
                nn += 1
            else:
                buf[np_ + j - nn] = v[j] * scale
                ibuf[np_ + j - nn] = j
        st = find_gamma_and_bias(buf, ibuf, np_, buf + np_, ibuf + np_, n - np_, volume,
                                 key, counter, &out.gamma, &out.bias, &k)
        vc[0] = buf
        nc_[0] = np_
        vc[1] = buf + np_
        nc_[1] = n - np_
    if st != WF_OK:
        return st
    out.k = k
    for c in range(2 if bias else 1):
        # the covered points are the first k: the cut is their largest value
        x = -INFINITY
        for i in range(k):
            if vc[c][i] > x:
                x = vc[c][i]
        below = 0
        for i in range(nc_[c]):
            if vc[c][i] < x:
                below += 1
        out.x[c] = x
        out.ties[c] = k - below
    return WF_OK


cdef Bounds NO_BOUNDS
NO_BOUNDS.lo[0] = NO_BOUNDS.lo[1] = -INFINITY
NO_BOUNDS.hi[0] = NO_BOUNDS.hi[1] = INFINITY


cdef Py_ssize_t _split_class(const double* v, double scale, const Py_ssize_t* idx,
                             Py_ssize_t n_c, double lo, double hi, ClassWindow* cw,
                             Py_ssize_t* members) noexcept nogil:
    """The class's values from lo to hi into its window (the front of cw.v),
    the ones below lo counted and summed (kept at the back of cw.v on the
    way), the indices of those at most hi into members, in index order;
    returns their number.  No branch on the value: each value and index is
    written and kept or overwritten next (cw.v has n_c + 2 places, members
    n_c + 1)."""
    cdef Py_ssize_t q, j, m = 0, w = 0, nb = 0
    cdef double x, s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef double* window = cw.v
    cdef double* back = cw.v + n_c + 1          # the values below lo, from the end
    cdef const double* below_values
    cdef bint inside, below
    for q in range(n_c):
        j = idx[q]
        x = v[j] * scale
        inside = x <= hi
        below = inside & (x < lo)
        members[m] = j
        m += inside
        window[w] = x
        w += inside & (not below)
        back[-nb] = x
        nb += below
    # four partial sums (the values below are many: k - margin)
    below_values = back - nb + 1
    q = 0
    while q + 4 <= nb:
        s0 += below_values[q]
        s1 += below_values[q + 1]
        s2 += below_values[q + 2]
        s3 += below_values[q + 3]
        q += 4
    while q < nb:
        s0 += below_values[q]
        q += 1
    cw.w = w
    cw.nb = nb
    cw.sb = (s0 + s1) + (s2 + s3)
    cw.above = INFINITY
    cw.partial = m < n_c
    return m


cdef void _split(const double* v, double scale, const Classes* classes, int nc,
                 const Bounds* bounds, ClassWindow* cls, Py_ssize_t* ibuf,
                 WaterCut* out) noexcept nogil:
    """Every class's window and members (_split_class)."""
    cdef int c
    cdef Py_ssize_t* members = ibuf
    for c in range(nc):
        out.members[c] = members
        out.n_members[c] = _split_class(v, scale, classes.idx[c], classes.n[c],
                                        bounds.lo[c], bounds.hi[c], &cls[c], members)
        members += classes.n[c] + 1


cdef inline Py_ssize_t _margin(Py_ssize_t k) noexcept nogil:
    return MARGIN_MIN + (k >> MARGIN_SHIFT)


cdef bint _search(ClassWindow* cls, int nc, Py_ssize_t m, double volume,
                  WaterCut* out) noexcept nogil:
    """The window search over the split windows; out.next from the first
    pass's histogram (or the sorted windows) where it certifies more than the
    bounds the fill had.  False when the final step's checks fail."""
    cdef Histogram hist[2]
    cdef Py_ssize_t above_k = 0, below_k = 0, local
    # the windows before the first pass narrows them
    cdef Py_ssize_t split_nb[2]
    cdef Py_ssize_t split_w[2]
    cdef int c, rounds = 0
    cdef bint shrunk
    for c in range(nc):
        if cls[c].w == 0:
            return False
        split_nb[c] = cls[c].nb
        split_w[c] = cls[c].w
    while rounds < MAX_ROUNDS and (cls[0].w > SMALL_WINDOW
                                   or (nc == 2 and cls[1].w > SMALL_WINDOW)):
        rounds += 1
        shrunk = _refine(cls, nc, m, volume, hist, &below_k, &above_k)
        if rounds == 1:
            # a bucket's edges bound the ranks it holds: hi above rank
            # above_k + margin, lo below rank below_k - margin
            for c in range(nc):
                local = above_k + _margin(above_k) - split_nb[c]
                if above_k > 0 and 1 <= local <= split_w[c]:
                    out.next.hi[c] = _edge_above(&hist[c], _bucket_of_rank(&hist[c], local))
                local = below_k - _margin(below_k) - split_nb[c]
                if below_k > 0 and 1 <= local <= split_w[c]:
                    out.next.lo[c] = _edge(&hist[c], _bucket_of_rank(&hist[c], local))
        if not shrunk:
            break
    if not _exact(cls, nc, m, volume, out):
        return False
    if rounds == 0:                   # the whole windows were sorted
        for c in range(nc):
            local = out.k + _margin(out.k) - split_nb[c]
            if 1 <= local <= split_w[c]:
                out.next.hi[c] = cls[c].v[local - 1]
            local = out.k - _margin(out.k) - split_nb[c]
            if 1 <= local <= split_w[c]:
                out.next.lo[c] = cls[c].v[local - 1]
    return True


cdef int fill_window(const double* v, double scale, const signed char* y,
                     Py_ssize_t n, const Classes* classes, bint bias, double volume,
                     const Bounds* bounds, double* buf, Py_ssize_t* ibuf,
                     uint64_t key, uint64_t* counter, WaterCut* out) noexcept nogil:
    cdef ClassWindow cls[2]
    cdef Py_ssize_t m
    cdef int nc = 2 if bias else 1, c, st
    out.used_fallback = False
    COUNTS.fills += 1
    for c in range(nc):
        if classes.n[c] <= 0:
            return WF_EMPTY
    # class 0 at buf[0..n_0 + 2), class 1 at buf[n_0 + 2..n + 4)
    cls[0].v = buf
    cls[0].n_all = classes.n[0]
    cls[1].v = buf + classes.n[0] + 2
    cls[1].n_all = classes.n[1] if bias else 0
    m = m_of(cls, nc)
    if volume > 0.0:
        if bounds != NULL:
            COUNTS.bounded += 1
            _split(v, scale, classes, nc, bounds, cls, ibuf, out)
            COUNTS.members += out.n_members[0] + (out.n_members[1] if bias else 0)
            COUNTS.kept += cls[0].w + (cls[1].w if bias else 0)
            out.next = bounds[0]
            if _search(cls, nc, m, volume, out):
                return WF_OK
            COUNTS.widened += 1
        _split(v, scale, classes, nc, &NO_BOUNDS, cls, ibuf, out)
        out.next = NO_BOUNDS
        if _search(cls, nc, m, volume, out):
            return WF_OK
        COUNTS.fallbacks += 1
    out.used_fallback = True
    out.next = NO_BOUNDS
    st = _fallback(v, scale, y, n, bias, volume, buf, ibuf, key, counter, out)
    # the quickselect rearranged buf and ibuf: every point is a member again
    _split(v, scale, classes, nc, &NO_BOUNDS, cls, ibuf, out)
    return st


cdef inline Py_ssize_t m_of(const ClassWindow* cls, int nc) noexcept nogil:
    """Ranks that pair up: the size of the smaller class (with a bias)."""
    if nc == 2 and cls[1].n_all < cls[0].n_all:
        return cls[1].n_all
    return cls[0].n_all


cdef Py_ssize_t covered_point(const double* v, const WaterCut* cut,
                              Py_ssize_t u) noexcept nogil:
    cdef int c = 0
    cdef Py_ssize_t q, j, seen = 0, ties = 0
    cdef const Py_ssize_t* members
    cdef double x, cx
    cdef bint tie
    if u >= cut.k:                    # with a bias: the negatives
        c = 1
        u -= cut.k
    members = cut.members[c]
    cx = cut.x[c]
    # counted without a branch on the value (unpredictable)
    for q in range(cut.n_members[c]):
        j = members[q]
        x = v[j]
        tie = x == cx
        ties += tie
        seen += (x < cx) | (tie & (ties <= cut.ties[c]))
        if seen > u:
            return j
    return -1


def class_lists(y, bint bias):
    """The indices of the positives, then of the negatives (with a bias), or
    of every point (without): the lists of a Classes (classes_of)."""
    y = np.asarray(y)
    if not bias:
        return np.arange(y.size, dtype=np.intp)
    return np.concatenate([np.flatnonzero(y == 1), np.flatnonzero(y != 1)]).astype(np.intp)


cdef Classes classes_of(Py_ssize_t[::1] lists, y, bint bias):
    """The Classes over class_lists(y, bias) (which must outlive it)."""
    cdef Classes out
    out.n[0] = np.count_nonzero(np.asarray(y) == 1) if bias else lists.shape[0]
    out.n[1] = lists.shape[0] - out.n[0]
    out.idx[0] = &lists[0]
    out.idx[1] = &lists[0] + out.n[0]
    return out


# ------------------------------------------------------------ Python access

def search_counts(reset=False):
    """The work counters (fills, rounds, round_values, sorted, fallbacks,
    bounded, members, kept, widened) since the last reset; ``reset=True``
    zeroes them after reading."""
    out = dict(COUNTS)
    if reset:
        COUNTS.fills = COUNTS.rounds = COUNTS.round_values = 0
        COUNTS.sorted = COUNTS.fallbacks = 0
        COUNTS.bounded = COUNTS.members = COUNTS.kept = COUNTS.widened = 0
    return out


def water_level_window(values, double volume, y=None, seed=0, lo=None, hi=None):
    """Water level (and bias, with ``y``) by the window search, for tests.

    ``lo``, ``hi``: None, or the bounds (one per class: positives, negatives;
    one without ``y``) the fill may assume (see ``fill_window``).

    Returns
    -------
    gamma, bias : float (bias 0.0 without y)
    covered : list of ndarray of intp
        The covered indices of each class in index order (positives, then
        negatives, with y; all points without): ``covered_point`` for every
        draw u.
    used_fallback : bool
        Whether the quickselect search of _waterfill gave the answer.
    next_bounds : (list of float, list of float)
        The bounds (lo, hi) by class that the fill certified for a next fill.
    """
    vv = np.array(values, dtype=np.float64, copy=True).ravel()
    if vv.size == 0 or not np.all(np.isfinite(vv)):
        raise ValueError("values must be finite and not empty")
    if not (volume >= 0.0 and isfinite(volume)):
        raise ValueError(f"volume must be a finite number >= 0, got {volume!r}")
    cdef bint bias = y is not None
    yy = (np.where(np.asarray(y).ravel() == 1, 1, -1) if bias
          else np.ones(vv.size)).astype(np.int8)
    if yy.shape != vv.shape:
        raise ValueError(f"y has {yy.size} entries, values {vv.size}")
    if bias and (np.all(yy == 1) or np.all(yy == -1)):
        raise ValueError("water filling with a bias needs points of both classes")
    cdef int nc = 2 if bias else 1
    cdef Bounds given
    for name, limits, default in (("lo", lo, -np.inf), ("hi", hi, np.inf)):
        limits = np.full(nc, default) if limits is None else \
            np.array(limits, dtype=np.float64).ravel()
        if limits.size != nc or np.any(np.isnan(limits)):
            raise ValueError(f"{name} must hold {nc} bounds (not NaN), got {limits!r}")
        for c in range(2):
            bound = limits[c] if c < nc else default
            if name == "lo":
                given.lo[c] = bound
            else:
                given.hi[c] = bound
    cdef double[::1] v = vv
    cdef const signed char[::1] ys = yy
    cdef double[::1] buf = np.empty(vv.size + 4)
    cdef Py_ssize_t[::1] ibuf = np.empty(vv.size + 2, dtype=np.intp)
    cdef uint64_t key = rng_key(<uint64_t>seed, STREAM_SAMPLING)
    cdef uint64_t counter = 0
    cdef Py_ssize_t[::1] by_class = class_lists(yy, bias)
    cdef Classes classes = classes_of(by_class, yy, bias)
    cdef const Bounds* assume = NULL if lo is None and hi is None else &given
    cdef WaterCut cut
    cdef int st
    with nogil:
        st = fill_window(&v[0], 1.0, &ys[0], v.shape[0], &classes, bias, volume, assume,
                         &buf[0], &ibuf[0], key, &counter, &cut)
    if st != WF_OK:
        raise ValueError("water filling found no points")
    covered = [np.array([covered_point(&v[0], &cut, c * cut.k + u) for u in range(cut.k)],
                        dtype=np.intp) for c in range(nc)]
    return (cut.gamma, cut.bias, covered, bool(cut.used_fallback),
            ([cut.next.lo[c] for c in range(nc)], [cut.next.hi[c] for c in range(nc)]))
