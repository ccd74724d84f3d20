# The kernel engine: kernel functions on Rows, and KernelRows, the LRU cache of
# kernel rows shared by SMO, SBP, Pegasos, SDCA and the Perceptron.
from ._rows cimport Rows

# Cached kernel values are single precision, like LIBSVM's Qfloat: twice the
# rows per megabyte, and SMO follows LIBSVM's path value for value.
ctypedef float kfloat

# Kernel kinds; the numbers are LIBSVM's -t codes (LAPLACIAN is kernsolve's).
cdef enum:
    LINEAR = 0
    POLY = 1
    RBF = 2
    SIGMOID = 3
    PRECOMPUTED = 4
    LAPLACIAN = 5

cdef struct KernelParams:
    int kind
    int degree
    double gamma
    double coef0


cdef class KernelRows:
    """Kernel rows of a training set, addressed by *position*.

    Positions start as data rows (perm = identity). ``swap(p, q)`` exchanges two
    positions (SMO's shrinking moves inactive points to the end, as LIBSVM
    does); ``get_row(p, length)`` returns K(x[perm[p]], x[perm[k]]) for
    k < length, computing only the missing tail in parallel over k and keeping
    the row in an LRU cache whose total size stays within the byte budget.
    The budget always holds at least two full rows, so the two most recently
    returned rows stay valid together.
    """
    cdef Rows X
    cdef KernelParams params
    cdef Py_ssize_t n                 # number of training rows
    cdef Py_ssize_t* perm             # position -> data row
    cdef double* sq_norms             # ||x_i||^2 (or sum|x_i| pieces) by data row
    cdef double* diag                 # K(x[perm[p]], x[perm[p]]) by position
    cdef int n_threads
    cdef long long n_kernel_evals     # every kernel value computed, rows and eval()
    cdef long long n_cache_hits       # get_row calls fully served from the cache
    cdef long long n_cache_misses     # get_row calls that computed anything
    cdef object _keepalive            # the arrays X points into

    cdef const kfloat* get_row(self, Py_ssize_t p, Py_ssize_t length) noexcept nogil
    cdef void swap(self, Py_ssize_t p, Py_ssize_t q) noexcept nogil
    cdef double eval(self, Py_ssize_t p, Py_ssize_t q) noexcept nogil
