# Water filling by shrinking value windows (the SBP's per-iteration search):
# the level, bias and covered set of _waterfill's quickselect search, which it
# falls back to when its exactness checks fail.  See _waterwindow.pyx.
from libc.stdint cimport uint64_t


# The result: level, bias (0 without), covered count k (per class with a
# bias) and the covered set as a cut per class (index 0: the positives, or
# every point without a bias; 1: the negatives): the points with value below
# x[c], and the first ties[c] in index order of those with value x[c].
cdef struct WaterCut:
    double gamma
    double bias
    Py_ssize_t k
    double x[2]
    Py_ssize_t ties[2]
    bint used_fallback


# Water-fill the values scale * v[0..n) (with a bias: classes y = +1 / -1)
# at volume n * nu.  buf (n + 2 doubles) and ibuf (n indices) are scratch; key and
# *counter draw the pivots of the fallback.  Returns WF_OK or WF_EMPTY.
cdef int fill_window(const double* v, double scale, const signed char* y,
                     Py_ssize_t n, bint bias, double volume, double* buf,
                     Py_ssize_t* ibuf, uint64_t key, uint64_t* counter,
                     WaterCut* out) noexcept nogil


# Covered point number u in index order (with a bias: u < k the positives,
# k <= u < 2k the negatives) of the values v the cut was computed on (scale 1).
cdef Py_ssize_t covered_point(const double* v, const signed char* y, Py_ssize_t n,
                              bint bias, const WaterCut* cut, Py_ssize_t u) noexcept nogil
