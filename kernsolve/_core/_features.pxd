# Random Fourier features regenerated from a seed (DSG, Dai et al. 2014).
#
# Feature g (a global index, independent of the block size F and of the input
# dimension d) is phi_g(x) = sqrt(2) cos(omega_g . x + b_g) with omega_g and
# b_g pure functions of (seed, g); doc/dsg.md, section "Random features",
# specifies them bit for bit and tests/test_features.py holds an independent
# pure-Python copy.  Nothing is stored: a model keeps the seed and replays.
from libc.stdint cimport uint64_t, int64_t
from ._rows cimport Rows

cdef enum:
    FEATURE_GAUSSIAN = 0     # k(x,y) = exp(-gamma ||x-y||^2),  omega ~ N(0, 2 gamma I)
    FEATURE_LAPLACIAN = 1    # k(x,y) = exp(-gamma ||x-y||_1), omega_j ~ Cauchy(0, gamma) iid

cdef struct FeatureMap:
    int kernel
    double gamma
    Py_ssize_t n_features    # d, input dimension
    Py_ssize_t block_size    # F, features per block
    uint64_t key_omega       # rng_key(seed, STREAM_FEATURES)
    uint64_t key_phase       # rng_key(seed, STREAM_PHASES)
    bint single              # fm_block rounds omega to floats, fm_apply_row sums in
                             # float and rounds each feature to a float (DSG's
                             # --precision single); fm_init sets 0

cdef void fm_init(FeatureMap* fm, int kernel, double gamma, Py_ssize_t n_features,
                  Py_ssize_t block_size, uint64_t seed) noexcept nogil

# Block `block` = global features g = block*F .. block*F+F-1.
# omega is written TRANSPOSED: omega[j*F + f] = omega_{g, j}, j < d  (d x F, so a row
# x contributes x_j * omega[j, 0:F] as one contiguous axpy for dense and CSR rows);
# phase[f] = b_g.  With fm.single, omega's d*F doubles hold d*F floats (the
# directions rounded) in their first half.
cdef void fm_block(const FeatureMap* fm, int64_t block, double* omega,
                   double* phase) noexcept nogil

# out[f] = sqrt(2) * cos(sum_j x_ij omega_{g,j} + b_g)  for f < F, for row i of X
# (dense or CSR through row_ptr); columns j >= fm.n_features must not occur (caller checks).
cdef void fm_apply_row(const FeatureMap* fm, const double* omega, const double* phase,
                       const Rows* X, Py_ssize_t i, double* out) noexcept nogil

# ---- additions beyond the contract above --------------------------------

# Any run of features: g = g0 .. g0+count-1 into omega (d x count, transposed
# as in fm_block, leading dimension count) and phase (count).  fm_block is
# fm_features(fm, block*F, F, ...).  n_threads > 1 splits the work over the
# input columns (disjoint outputs: bit-identical for any thread count); call
# it with n_threads = 1 from inside a prange.
cdef void fm_features(const FeatureMap* fm, int64_t g0, Py_ssize_t count,
                      double* omega, double* phase, int n_threads) noexcept nogil

# fm_apply_row for a run of `count` features made by fm_features (the block
# size is taken from `count`, not from fm).
cdef void fm_apply_row_n(const double* omega, const double* phase, Py_ssize_t count,
                         const Rows* X, Py_ssize_t i, double* out) noexcept nogil
