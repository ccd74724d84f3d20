# The rows' features of a block kept between passes (RowFeatures, for
# --precision single) and the inline read of one row's features through them
# (row_features), which every loop over rows of DSG (_dsg.pyx) runs without a call.
from kernsolve._core._rows cimport Rows
from kernsolve._core._features cimport FeatureMap, fm_apply_row

# The rows' features kept between epochs (--precision single only): there a
# feature is a float (fm_apply_row rounds it), so a kept value is the value
# a fresh evaluation gives and the model does not depend on what is kept.
# values[b] holds block b's F features of every row (n_rows x F floats),
# filled[b][i] says whether row i's are there yet.
cdef struct RowSlabs:
    Py_ssize_t n_slabs          # blocks 0 .. n_slabs-1 have a slab
    bint keep                   # store computed values (0: the last pass reads only)
    float** values
    unsigned char** filled
# Rows ahead of the one computed whose kept features are prefetched (a slab
# is read in the batch's random row order: each row's values are a miss).
cdef enum:
    PREFETCH_ROWS = 4


cdef extern from *:
    void __builtin_prefetch(const void* p) nogil


cdef class RowFeatures:
    cdef RowSlabs s
    cdef readonly Py_ssize_t n_rows, block_size, capacity


cdef inline void row_features(const FeatureMap* fm, const double* blk, const Rows* X,
                              Py_ssize_t i, Py_ssize_t block, const RowSlabs* slabs,
                              double* z) noexcept nogil:
    """z = phi(x_i) for one block (directions blk): from the block's slab when
    row i's values are there, else computed (and kept when the block has a
    slab).  Rows of one batch are distinct, so threads never share a row."""
    cdef Py_ssize_t f, F = fm.block_size
    cdef float* v
    if slabs == NULL or block >= slabs.n_slabs:
        fm_apply_row(fm, blk, blk + fm.n_features * F, X, i, z)
        return
    v = slabs.values[block] + i * F
    if slabs.filled[block][i]:
        for f in range(F):
            z[f] = v[f]
        return
    fm_apply_row(fm, blk, blk + fm.n_features * F, X, i, z)
    if slabs.keep:
        for f in range(F):
            v[f] = <float>z[f]
        slabs.filled[block][i] = 1


cdef inline void prefetch_row(const RowSlabs* slabs, Py_ssize_t block, Py_ssize_t i,
                              Py_ssize_t F) noexcept nogil:
    """Ask for row i's kept values of a block ahead of their use."""
    cdef Py_ssize_t off
    if slabs == NULL or block >= slabs.n_slabs:
        return
    __builtin_prefetch(slabs.filled[block] + i)
    for off in range(0, F * <Py_ssize_t>sizeof(float), 64):
        __builtin_prefetch(<char*>(slabs.values[block] + i * F) + off)

