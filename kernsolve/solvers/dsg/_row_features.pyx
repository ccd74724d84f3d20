"""The rows' features kept between passes (``--precision single``): the slabs of
:class:`RowFeatures`, read and filled by ``row_features`` (``_row_features.pxd``)."""
from libc.stdlib cimport calloc, free

cdef extern from *:
    """
    #include <stdlib.h>
    #ifdef __linux__
    #include <sys/mman.h>
    #endif
    /* n bytes; from 2 MB on, on 2 MB boundaries, in huge pages where Linux
       gives them: a slab is read one row at a time in random order, and with
       4 kB pages nearly every row would cost a TLB miss (and its first touch
       a page fault).  Smaller slabs as malloc gives them (an aligned
       allocation would take a mapping of n + 2 MB each). */
    static void *ks_alloc_slab(size_t n)
    {
        void *p = NULL;
        const size_t huge = (size_t)1 << 21;
        if (n < huge)
            return malloc(n > 0 ? n : 1);
        if (posix_memalign(&p, huge, n) != 0)
            return NULL;
    #if defined(__linux__) && defined(MADV_HUGEPAGE)
        madvise(p, n, MADV_HUGEPAGE);
    #endif
        return p;
    }
    """
    void* ks_alloc_slab(size_t n) nogil
    void __builtin_prefetch(const void* p) nogil


cdef class RowFeatures:
    """Slabs of the rows' features, one a block, for blocks 0 .. capacity-1 of
    one data set (``fit_chunk``'s ``row_features``): a row's features of a
    block are computed the first time a batch needs them and read from the
    slab after that.  Slabs are allocated as blocks appear; allocation stops
    quietly at ``capacity`` or when memory runs out (later blocks are
    computed every time, as without slabs)."""

    def __cinit__(self, Py_ssize_t n_rows, Py_ssize_t block_size, Py_ssize_t capacity):
        if n_rows < 0 or block_size < 1 or capacity < 0:
            raise ValueError("RowFeatures needs n_rows >= 0, block_size >= 1, capacity >= 0")
        self.n_rows, self.block_size, self.capacity = n_rows, block_size, capacity
        self.s.n_slabs = 0
        self.s.keep = 1
        self.s.values = <float**>calloc(capacity if capacity > 0 else 1, sizeof(float*))
        self.s.filled = <unsigned char**>calloc(capacity if capacity > 0 else 1,
                                                 sizeof(unsigned char*))
        if self.s.values == NULL or self.s.filled == NULL:
            raise MemoryError("no memory for the row-feature slabs' table")

    def grow(self, Py_ssize_t n_blocks):
        """Slabs for blocks up to n_blocks - 1 (within the capacity)."""
        cdef Py_ssize_t b = self.s.n_slabs
        cdef float* v
        cdef unsigned char* f
        while b < n_blocks and b < self.capacity:
            v = <float*>ks_alloc_slab(self.n_rows * self.block_size * sizeof(float))
            f = <unsigned char*>calloc(max(self.n_rows, 1), 1)
            if v == NULL or f == NULL:
                free(v)
                free(f)
                self.capacity = b
                break
            self.s.values[b] = v
            self.s.filled[b] = f
            b += 1
        self.s.n_slabs = b

    @property
    def n_slabs(self):
        return self.s.n_slabs

    def read_only(self):
        """From now on only read the kept values (the last pass: what it
        would keep is never read again); no more slabs are made."""
        self.s.keep = 0
        self.capacity = self.s.n_slabs

    def __dealloc__(self):
        cdef Py_ssize_t b
        if self.s.values != NULL:
            for b in range(self.s.n_slabs):
                free(self.s.values[b])
                free(self.s.filled[b])
        free(self.s.values)
        free(self.s.filled)


def row_slab_bytes(Py_ssize_t n_rows, Py_ssize_t block_size):
    """Bytes of one block's slab in :class:`RowFeatures`."""
    return n_rows * (block_size * sizeof(float) + 1)

