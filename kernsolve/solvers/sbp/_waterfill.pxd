# Water filling of the Stochastic Batch Perceptron (Cotter, Shalev-Shwartz &
# Srebro 2012, Algorithms 2 and 3): the water level gamma (and bias b) of the
# slack-constrained problem for given responses, in expected linear time by
# random-pivot partitioning (no sort).
#
# Both functions rearrange (vals, idx) in place, pairwise, so that the covered
# points come first: a uniform draw among them is one rng_integer call.
# Pivot draws use the counters *counter, *counter + 1, ... of ``key`` (the
# caller advances one counter it owns), so the rearrangement is a pure
# function of the input, the key and the counter.
from libc.stdint cimport uint64_t

cdef enum:
    WF_OK = 0
    WF_EMPTY = -1         # no points (or one class empty, with bias)


# No bias (Algorithm 2).  The level gamma solves sum_i (gamma - v_i)_+ = volume
# (volume = n*nu); for volume <= 0 it is min_i v_i.  On return the first
# n_covered entries of (vals, idx) are the points with v_i < gamma (volume > 0,
# n_covered >= 1), or every point at the minimum (volume <= 0).
cdef int find_gamma(double* vals, Py_ssize_t* idx, Py_ssize_t n, double volume,
                    uint64_t key, uint64_t* counter, double* gamma,
                    Py_ssize_t* n_covered) noexcept nogil


# With an unregularised bias (Algorithm 3): two basins, positives (vp, ip, npos)
# at height v + b and negatives (vn, in_, nneg) at height v - b.  gamma and b
# maximise the common level; b is the midpoint of the optimal interval.  On
# return the first k entries of each class array are its k smallest values,
# the covered points (equal mass per class, uniform within a class is a
# minimax-optimal distribution).  k >= 1.
cdef int find_gamma_and_bias(double* vp, Py_ssize_t* ip, Py_ssize_t npos,
                             double* vn, Py_ssize_t* in_, Py_ssize_t nneg,
                             double volume, uint64_t key, uint64_t* counter,
                             double* gamma, double* bias,
                             Py_ssize_t* k) noexcept nogil


# The level and bias of Algorithm 3 once the covered count k is known: s =
# g+ + g- (volume plus the sums of the k smallest of each class, over k), ap /
# an the k-th smallest value of each class, next_p / next_n the (k+1)-th
# (INFINITY when the class has k points).  b is the midpoint of the optimal
# interval (the paper's lines 40-43).
cdef void level_and_bias(double s, double ap, double an, double next_p,
                         double next_n, double* gamma, double* bias) noexcept nogil
