"""LIBSVM-format formatter (the hot loop of kernsolve._io.write_problem).

The Python front (``kernsolve/_io.py``) owns the destination, batches of rows
and the checks on y and X.  ``format_rows`` turns a batch of CSR rows into
LIBSVM text: the rows are split among threads, each formatting its share into
its own buffer, and the pieces are joined in row order, so the bytes do not
depend on the thread count.  Each number is written in the shortest of
``%.15g``/``%.16g``/``%.17g`` that reads back to the same double (integers
exactly), which the tokeniser (``_tokenizer.pyx``) reads back bit for bit.
"""
from cython.parallel cimport prange
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport malloc, free, strtod
from libc.string cimport memcpy
from libc.stdio cimport snprintf
from libc.math cimport copysign
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING

cdef double TWO53D = 9007199254740992.0


cdef inline char* put_int(char* p, int64_t v) noexcept nogil:
    cdef char tmp[24]
    cdef int n = 0
    cdef uint64_t u
    if v < 0:
        p[0] = b'-'
        p += 1
        u = <uint64_t>(-(v + 1)) + 1
    else:
        u = <uint64_t>v
    while True:
        tmp[n] = <char>(48 + u % 10)
        n += 1
        u //= 10
        if u == 0:
            break
    while n > 0:
        n -= 1
        p[0] = tmp[n]
        p += 1
    return p


cdef inline char* put_double(char* p, double v) noexcept nogil:
    """Shortest of %.15g/%.16g/%.17g that reads back to the same bits."""
    cdef int n, prec
    cdef double back
    cdef char* q
    if (-TWO53D <= v <= TWO53D and v == <double>(<int64_t>v)
            and not (v == 0.0 and copysign(1.0, v) < 0)):
        return put_int(p, <int64_t>v)
    for prec in range(15, 18):
        n = snprintf(p, 32, "%.*g", prec, v)
        back = strtod(p, &q)
        if prec == 17 or (back == v and copysign(1.0, back) == copysign(1.0, v)):
            return p + n
    return p


cdef Py_ssize_t format_range(char* buf, Py_ssize_t lo, Py_ssize_t hi, const double* y,
                             const int64_t* qid, const double* data,
                             const int64_t* indices, const int64_t* indptr,
                             int64_t index_add) noexcept nogil:
    cdef char* p = buf
    cdef Py_ssize_t r, k
    for r in range(lo, hi):
        p = put_double(p, y[r])
        if qid != NULL:
            memcpy(p, b" qid:", 5)
            p = put_int(p + 5, qid[r])
        for k in range(indptr[r], indptr[r + 1]):
            p[0] = b' '
            p = put_int(p + 1, indices[k] + index_add)
            p[0] = b':'
            p = put_double(p + 1, data[k])
        p[0] = b'\n'
        p += 1
    return p - buf


def format_rows(const double[::1] y, const int64_t[::1] qid, const double[::1] data,
                const int64_t[::1] indices, const int64_t[::1] indptr,
                Py_ssize_t start, Py_ssize_t stop, int64_t index_add, int n_threads):
    """LIBSVM text for rows ``start:stop`` (CSR with int64 indices), as bytes.

    Rows are split among threads, each formatting into its own buffer sized by
    a hard upper bound; the pieces are joined in row order.
    """
    cdef Py_ssize_t nparts = max(1, min(<Py_ssize_t>n_threads, stop - start))
    cdef Py_ssize_t i, r, k, t
    cdef char** bufs = NULL
    cdef Py_ssize_t* lens = NULL
    cdef Py_ssize_t total = 0
    cdef bint have_qid = qid is not None and qid.shape[0] > 0
    cdef bint failed = False
    cdef char* p
    cdef Py_ssize_t lo, hi, cap
    if stop <= start:
        return b""
    bufs = <char**>malloc(nparts * sizeof(char*))
    lens = <Py_ssize_t*>malloc(nparts * sizeof(Py_ssize_t))
    if bufs == NULL or lens == NULL:
        free(bufs)
        free(lens)
        raise MemoryError()
    for t in range(nparts):
        bufs[t] = NULL
    try:
        for t in range(nparts):
            lo = start + (stop - start) * t // nparts
            hi = start + (stop - start) * (t + 1) // nparts
            # label/qid <= 32 + 26 bytes, each entry <= 21 + 1 + 32 + 1 bytes.
            cap = 64 * (hi - lo) + 56 * (indptr[hi] - indptr[lo]) + 64
            bufs[t] = <char*>malloc(cap)
            if bufs[t] == NULL:
                raise MemoryError()
        with nogil:
            for t in prange(nparts, num_threads=max(1, n_threads), schedule="static"):
                lo = start + (stop - start) * t // nparts
                hi = start + (stop - start) * (t + 1) // nparts
                lens[t] = format_range(bufs[t], lo, hi, &y[0],
                                       &qid[0] if have_qid else NULL,
                                       &data[0] if data.shape[0] else NULL,
                                       &indices[0] if indices.shape[0] else NULL,
                                       &indptr[0], index_add)
        for t in range(nparts):
            total += lens[t]
        out = PyBytes_FromStringAndSize(NULL, total)
        p = PyBytes_AS_STRING(out)
        for t in range(nparts):
            memcpy(p, bufs[t], lens[t])
            p += lens[t]
        return out
    finally:
        for t in range(nparts):
            free(bufs[t])
        free(bufs)
        free(lens)
