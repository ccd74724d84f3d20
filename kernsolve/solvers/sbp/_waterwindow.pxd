# Water filling by shrinking value windows (the SBP's per-iteration search):
# the level, bias and covered set of _waterfill's quickselect search, which it
# falls back to when its exactness checks fail.  See _waterwindow.pyx.
from libc.stdint cimport uint64_t


# min and max of finite values as one instruction each (libm's fmin / fmax are
# calls: they handle NaN, which never reaches here)
cdef inline double min_finite(double a, double b) noexcept nogil:
    return a if a < b else b


cdef inline double max_finite(double a, double b) noexcept nogil:
    return a if a > b else b


# The points of each class (index as in WaterCut) in index order: fixed for
# a problem, so the fills need not split the points by class.
cdef struct Classes:
    const Py_ssize_t* idx[2]
    Py_ssize_t n[2]


# The Classes over the lists _waterwindow.class_lists(y, bias) gives (which
# must outlive it).
cdef Classes classes_of(Py_ssize_t[::1] lists, y, bint bias)


# Bounds of the values of each class (index as in WaterCut) that the search
# needs to keep: those below lo[c] are known to be covered, those above hi[c]
# to lie above the value after rank k.  -INFINITY / INFINITY: none.
cdef struct Bounds:
    double lo[2]
    double hi[2]


# The result: level, bias (0 without), covered count k (per class with a
# bias) and the covered set as a cut per class (index 0: the positives, or
# every point without a bias; 1: the negatives): the points with value below
# x[c], and the first ties[c] in index order of those with value x[c].
# members[c][0..n_members[c]) are the points of class c with a value at most
# the fill's upper bound, in index order (every point of the class without
# one): the covered ones are among them.  next: bounds for the next fill, the
# lower one with at most k - margin points of the class below it, the upper
# one with at least k + margin at or below it (the fill's own bounds, or
# none, where it cannot tell).
cdef struct WaterCut:
    double gamma
    double bias
    Py_ssize_t k
    double x[2]
    Py_ssize_t ties[2]
    bint used_fallback
    const Py_ssize_t* members[2]
    Py_ssize_t n_members[2]
    Bounds next


# Water-fill the values scale * v[0..n) (with a bias: classes y = +1 / -1,
# listed in *classes; without: classes lists every point as class 0) at
# volume n * nu.  bounds: NULL, or what the search may assume: it counts and
# sums the values below lo[c], keeps those from lo[c] to hi[c], and checks
# that rank k and the value after it lie among them, else it looks at every
# value (the result is the same; only the work differs).  buf (n + 4
# doubles) and ibuf (n + 2 indices) are scratch, and ibuf holds out.members;
# key and *counter draw the pivots of the fallback.  Returns WF_OK or WF_EMPTY.
cdef int fill_window(const double* v, double scale, const signed char* y,
                     Py_ssize_t n, const Classes* classes, bint bias, double volume,
                     const Bounds* bounds, double* buf, Py_ssize_t* ibuf,
                     uint64_t key, uint64_t* counter, WaterCut* out) noexcept nogil


# Covered point number u in index order (with a bias: u < k the positives,
# k <= u < 2k the negatives) of the values v the cut was computed on (scale
# 1), from the cut's members (their buffer must not have changed since).
cdef Py_ssize_t covered_point(const double* v, const WaterCut* cut,
                              Py_ssize_t u) noexcept nogil
