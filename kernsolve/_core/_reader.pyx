"""LIBSVM-format tokeniser and formatter (the hot loops of kernsolve._io).

The Python front (``kernsolve/_io.py``) owns files, windows, options and the
wording of errors.  This module receives blocks of complete lines, splits each
block at newlines into chunks, and parses the chunks in parallel straight into
the output arrays:

1. a cheap counting pass gives every chunk an upper bound on its rows (newlines
   + 1) and entries (':' characters), so each chunk knows where to write before
   any parsing has happened;
2. the chunks are parsed by a pool of threads, each chunk into its own slice
   with the GIL released;
3. the slices are compacted in order (a no-op unless comments, blank lines or
   ``qid:`` fields made the bounds loose).

Output positions depend only on the bytes, never on the thread count, so any
``n_threads`` gives the same arrays.  Errors are reported as status codes with
the line counted inside the chunk; the first failing chunk wins, which is the
error a serial parse would meet first.
"""
from cython.parallel cimport prange
from cython cimport view
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport malloc, realloc, free, strtod
from libc.string cimport memchr, memmove, memcpy
from libc.stdio cimport snprintf
from libc.math cimport isfinite, copysign
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING

import numpy as np

cdef int64_t I32MAX = 2147483647
cdef int64_t I64MAX = 9223372036854775807
# Largest raw feature index accepted: n_features = index + 1 must still fit.
cdef int64_t MAX_INDEX = 4611686018427387904  # 2**62
cdef uint64_t TWO53 = 9007199254740992
cdef double TWO53D = 9007199254740992.0

# Status codes shared with kernsolve/_io.py (see _ERRORS there).
cdef enum:
    ST_OK = 0
    ST_LABEL = 1
    ST_LABEL_INF = 2
    ST_VALUE = 3
    ST_VALUE_INF = 4
    ST_COLON = 5
    ST_INDEX = 6
    ST_INDEX_ZERO = 8
    ST_INDEX_BIG = 9
    ST_INDEX_HUGE = 10
    ST_ORDER = 11
    ST_DUP = 12
    ST_QID = 13
    ST_QID_POS = 14
    ST_QID_MISSING = 15
    ST_VALUE_EMPTY = 16
    ST_LOCALE = 17
    ST_NEED_WIDE = 100

cdef enum:
    NUM_OK = 0
    NUM_BAD = 1
    NUM_INF = 2
    NUM_LOCALE = 3

# Character classes: 0 = part of a token, 1 = blank, 2 = newline, 3 = '#'.
# '\r' is a blank so CRLF files need no special case.
cdef unsigned char CLS[256]
cdef int _i
for _i in range(256):
    CLS[_i] = 0
CLS[ord(' ')] = 1
CLS[ord('\t')] = 1
CLS[ord('\r')] = 1
CLS[ord('\v')] = 1
CLS[ord('\f')] = 1
CLS[ord('\n')] = 2
CLS[ord('#')] = 3

# Powers of ten that are exact doubles (Clinger's fast path needs exactness).
cdef double POW10[23]
POW10[:] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
            1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22]

STATUS = {
    "label": ST_LABEL, "label_inf": ST_LABEL_INF, "value": ST_VALUE,
    "value_inf": ST_VALUE_INF, "colon": ST_COLON, "index": ST_INDEX,
    "index_zero": ST_INDEX_ZERO, "index_big": ST_INDEX_BIG,
    "index_huge": ST_INDEX_HUGE, "order": ST_ORDER, "dup": ST_DUP, "qid": ST_QID,
    "qid_pos": ST_QID_POS, "qid_missing": ST_QID_MISSING,
    "value_empty": ST_VALUE_EMPTY, "locale": ST_LOCALE,
}

# Index modes.
cdef enum:
    MODE_ZERO = 0   # zero_based=True
    MODE_ONE = 1    # zero_based=False
    MODE_AUTO = 2


ctypedef struct Settings:
    int mode
    int64_t limit        # largest raw index allowed
    int64_t n_features   # -1 when not given
    bint wide            # int64 indices
    bint f32             # float32 values
    bint want_qid


ctypedef struct Out:
    double* labels
    int64_t* qids
    int64_t* indptr      # indptr[0] = 0; row r ends at indptr[r + 1]
    int32_t* idx32
    int64_t* idx64
    double* val64
    float* val32


ctypedef struct Chunk:
    const unsigned char* begin
    const unsigned char* end
    int64_t ub_rows
    int64_t ub_nnz
    int64_t row_off      # where the chunk writes (bound-based positions)
    int64_t nnz_off
    int64_t n_rows
    int64_t nnz
    int64_t n_lines      # newlines inside the chunk
    int64_t min_idx
    int64_t max_idx
    int64_t eq_line      # first line (0-based, in chunk) with raw index == n_features
    int status
    int64_t err_line
    const unsigned char* err_tok
    int64_t err_a
    int64_t err_b


cdef inline bint is_digit(unsigned char c) noexcept nogil:
    return <unsigned char>(c - 48) < 10


cdef inline int parse_number(const unsigned char** pp, const unsigned char* end,
                             double* out) noexcept nogil:
    """Decimal number at *pp up to the next delimiter; correctly rounded.

    Like every scanning loop here, the digit loops do not test ``p < end``:
    a chunk either ends with a newline or is followed by a NUL written by
    ``Builder.feed``, and neither is a digit or a blank.

    Short mantissas (<= 2**53) with |exponent| <= 22 take Clinger's fast path
    (one exactly rounded multiply or divide); anything else goes to strtod,
    which glibc rounds correctly.  The grammar is validated here first so
    strtod never sees hex, nan or inf spellings.
    """
    cdef const unsigned char* p = pp[0]
    cdef const unsigned char* s = p
    cdef const unsigned char* d
    cdef char* q
    cdef bint neg = False, eneg = False
    cdef uint64_t m = 0
    cdef Py_ssize_t nd
    cdef int64_t e10 = 0, ex = 0
    cdef double v
    if p < end and (p[0] == b'+' or p[0] == b'-'):
        neg = p[0] == b'-'
        p += 1
    # Digits accumulate without checks; m may wrap when there are more than
    # 19 of them, but then the slow path below is taken and m is unused.
    d = p
    while is_digit(p[0]):
        m = m * 10 + (p[0] - 48)
        p += 1
    nd = p - d
    if p < end and p[0] == b'.':
        p += 1
        d = p
        while is_digit(p[0]):
            m = m * 10 + (p[0] - 48)
            p += 1
        e10 = -(p - d)
        nd += p - d
    if nd == 0:
        return NUM_BAD
    if p < end and (p[0] == b'e' or p[0] == b'E'):
        p += 1
        if p < end and (p[0] == b'+' or p[0] == b'-'):
            eneg = p[0] == b'-'
            p += 1
        if p >= end or not is_digit(p[0]):
            return NUM_BAD
        while is_digit(p[0]):
            if ex < 100000:
                ex = ex * 10 + (p[0] - 48)
            p += 1
        e10 += -ex if eneg else ex
    if p < end and CLS[p[0]] == 0:
        return NUM_BAD
    pp[0] = p
    if nd <= 19 and m == 0:
        out[0] = -0.0 if neg else 0.0
        return NUM_OK
    if nd <= 19 and m <= TWO53 and -22 <= e10 <= 22:
        v = <double>m
        if e10 >= 0:
            v = v * POW10[e10]
        else:
            v = v / POW10[-e10]
        out[0] = -v if neg else v
        return NUM_OK
    # The byte after the token is a delimiter or the caller's NUL sentinel,
    # so strtod stops exactly where the grammar above stopped.
    v = strtod(<const char*>s, &q)
    if <const unsigned char*>q != p:
        return NUM_LOCALE
    if not isfinite(v):
        return NUM_INF
    out[0] = v
    return NUM_OK


cdef inline void fail(Chunk* ch, int status, int64_t line, const unsigned char* tok,
                      int64_t a, int64_t b) noexcept nogil:
    ch.status = status
    ch.err_line = line
    ch.err_tok = tok
    ch.err_a = a
    ch.err_b = b


cdef extern from *:
    """
    #include <stdint.h>
    #include <stddef.h>
    #ifdef __SSE2__
    #include <emmintrin.h>
    #endif
    /* Count ':' and newlines: the upper bounds that place each chunk. */
    static void ks_count_marks(const unsigned char *p, ptrdiff_t n,
                               int64_t *colons, int64_t *newlines) {
        int64_t c = 0, l = 0;
        ptrdiff_t i = 0;
    #ifdef __SSE2__
        /* Byte-wise match counters (cmpeq gives -1 per match), folded into
           64-bit sums with psadbw before any byte can overflow. */
        const __m128i colon = _mm_set1_epi8(':'), nl = _mm_set1_epi8('\\n');
        const __m128i zero = _mm_setzero_si128();
        while (i + 16 <= n) {
            __m128i ac = zero, al = zero;
            int k;
            for (k = 0; k < 255 && i + 16 <= n; k++, i += 16) {
                __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
                ac = _mm_sub_epi8(ac, _mm_cmpeq_epi8(v, colon));
                al = _mm_sub_epi8(al, _mm_cmpeq_epi8(v, nl));
            }
            ac = _mm_sad_epu8(ac, zero);
            al = _mm_sad_epu8(al, zero);
            c += _mm_cvtsi128_si64(ac) + _mm_cvtsi128_si64(_mm_unpackhi_epi64(ac, ac));
            l += _mm_cvtsi128_si64(al) + _mm_cvtsi128_si64(_mm_unpackhi_epi64(al, al));
        }
    #endif
        for (; i < n; i++) {
            c += p[i] == ':';
            l += p[i] == '\\n';
        }
        *colons = c;
        *newlines = l;
    }
    """
    void ks_count_marks(const unsigned char* p, Py_ssize_t n, int64_t* colons,
                        int64_t* newlines) noexcept nogil



cdef void count_chunk(Chunk* ch) noexcept nogil:
    cdef int64_t colons = 0, nl = 0
    ks_count_marks(ch.begin, ch.end - ch.begin, &colons, &nl)
    ch.ub_nnz = colons
    ch.ub_rows = nl + 1


cdef void parse_chunk(Chunk* ch, const Settings* st, Out* o) noexcept nogil:
    cdef const unsigned char* p = ch.begin
    cdef const unsigned char* end = ch.end
    cdef const unsigned char* s
    cdef const unsigned char* q
    cdef const unsigned char* ls
    cdef int64_t row = ch.row_off
    cdef int64_t k = ch.nnz_off
    cdef int64_t line = 0
    cdef int64_t idx, prev, first_idx, qv
    cdef double v = 0.0
    cdef int rc, nd
    cdef bint first, has_qid, big, qneg
    cdef unsigned char c
    # Local copies: stores through the output pointers could alias st/o,
    # which would force the compiler to reload them for every entry.
    cdef int mode = st.mode
    cdef int64_t limit = st.limit, n_features = st.n_features
    cdef int64_t eq_line = -1, min_idx = I64MAX, max_idx = -1
    cdef bint wide = st.wide, f32 = st.f32, want_qid = st.want_qid
    cdef double* labels = o.labels
    cdef int64_t* qids = o.qids
    cdef int64_t* indptr = o.indptr
    cdef int32_t* idx32 = o.idx32
    cdef int64_t* idx64 = o.idx64
    cdef double* val64 = o.val64
    cdef float* val32 = o.val32
    cdef int64_t nnz_off = ch.nnz_off
    ch.min_idx = I64MAX
    ch.max_idx = -1
    ch.eq_line = -1
    ch.status = ST_OK
    while p < end:
        c = p[0]
        if CLS[c] == 1:
            p += 1
            continue
        if c == b'\n':
            line += 1
            p += 1
            continue
        if c == b'#':
            q = <const unsigned char*>memchr(p, b'\n', end - p)
            p = end if q == NULL else q
            continue
        # A data line: label, optional qid, then index:value pairs.
        s = p
        ls = p
        rc = parse_number(&p, end, &labels[row])
        if rc != NUM_OK:
            fail(ch, ST_LOCALE if rc == NUM_LOCALE else
                 (ST_LABEL_INF if rc == NUM_INF else ST_LABEL), line, s, 0, 0)
            return
        prev = -1
        first_idx = -1
        first = True
        has_qid = False
        while True:
            while CLS[p[0]] == 1:
                p += 1
            if p >= end or CLS[p[0]] != 0:
                break
            s = p
            if (first and end - p >= 4 and p[0] == b'q' and p[1] == b'i'
                    and p[2] == b'd' and p[3] == b':'):
                # qid must be an integer (svmlight's ranking files).
                p += 4
                qneg = False
                if p < end and (p[0] == b'+' or p[0] == b'-'):
                    qneg = p[0] == b'-'
                    p += 1
                qv = 0
                nd = 0
                big = False
                while is_digit(p[0]):
                    if qv > (I64MAX - (p[0] - 48)) // 10:
                        big = True
                    else:
                        qv = qv * 10 + (p[0] - 48)
                    nd += 1
                    p += 1
                if nd == 0 or big or (p < end and CLS[p[0]] == 0):
                    fail(ch, ST_QID, line, s, 0, 0)
                    return
                has_qid = True
                if want_qid:
                    qids[row] = -qv if qneg else qv
                first = False
                continue
            first = False
            q = p
            if q[0] == b'+':
                q += 1
            idx = 0
            nd = 0
            big = False
            while is_digit(q[0]):
                if idx > MAX_INDEX // 10:
                    big = True
                else:
                    idx = idx * 10 + (q[0] - 48)
                nd += 1
                q += 1
            if q >= end or q[0] != b':' or nd == 0:
                # Either no ':' at all in the token, or a malformed index.
                while q < end and CLS[q[0]] == 0 and q[0] != b':':
                    q += 1
                if q < end and q[0] == b':':
                    if (end - s >= 4 and s[0] == b'q' and s[1] == b'i'
                            and s[2] == b'd' and s[3] == b':'):
                        fail(ch, ST_QID_POS, line, s, 0, 0)
                    else:
                        fail(ch, ST_INDEX, line, s, 0, 0)
                else:
                    fail(ch, ST_COLON, line, s, 0, 0)
                return
            if big or idx > MAX_INDEX:
                fail(ch, ST_INDEX_HUGE, line, s, 0, 0)
                return
            p = q + 1
            if p >= end or CLS[p[0]] != 0:
                fail(ch, ST_VALUE_EMPTY, line, s, idx, 0)
                return
            q = p
            if f32:
                rc = parse_number(&p, end, &v)
            else:
                rc = parse_number(&p, end, &val64[k])
            if rc != NUM_OK:
                fail(ch, ST_LOCALE if rc == NUM_LOCALE else
                     (ST_VALUE_INF if rc == NUM_INF else ST_VALUE), line, q, idx, 0)
                return
            if idx == 0 and mode == MODE_ONE:
                fail(ch, ST_INDEX_ZERO, line, s, 0, 0)
                return
            if idx > limit:
                fail(ch, ST_INDEX_BIG, line, s, idx, n_features)
                return
            if idx <= prev:
                fail(ch, ST_DUP if idx == prev else ST_ORDER, line, s, idx, prev)
                return
            if not wide and idx >= I32MAX:
                ch.status = ST_NEED_WIDE
                return
            if idx == n_features and eq_line < 0:
                eq_line = line
            if wide:
                idx64[k] = idx
            else:
                idx32[k] = <int32_t>idx
            if f32:
                val32[k] = <float>v
            if first_idx < 0:
                first_idx = idx
            prev = idx
            k += 1
        if want_qid and not has_qid:
            fail(ch, ST_QID_MISSING, line, ls, 0, 0)
            return
        if first_idx >= 0:
            if first_idx < min_idx:
                min_idx = first_idx
            if prev > max_idx:
                max_idx = prev
        row += 1
        indptr[row] = k - nnz_off
    ch.min_idx = min_idx
    ch.max_idx = max_idx
    ch.eq_line = eq_line
    ch.n_lines = line
    ch.n_rows = row - ch.row_off
    ch.nnz = k - nnz_off


_POOLS = {}


def _pool(int n_threads):
    """A persistent pool of worker threads for the chunks of a block.

    Plain threads rather than an OpenMP team: idle workers block instead of
    spinning, which on a loaded machine (other processes, joblib workers)
    made OpenMP's 2-thread parse about twice as slow as its 1-thread parse.
    Each task releases the GIL for the whole chunk.
    """
    import os
    from concurrent.futures import ThreadPoolExecutor
    # A forked child inherits the pool object but not its threads: keyed by
    # pid, so a child makes its own instead of queueing work nobody runs.
    key = (os.getpid(), n_threads)
    pool = _POOLS.get(key)
    if pool is None:
        pool = _POOLS[key] = ThreadPoolExecutor(
            max_workers=n_threads, thread_name_prefix="kernsolve-reader")
    return pool


cdef object _wrap(void* ptr, Py_ssize_t n, Py_ssize_t itemsize, str fmt):
    """Hand a malloc'd buffer to numpy without copying; numpy frees it."""
    cdef void* shrunk
    cdef view.array a
    if n == 0 or ptr == NULL:
        free(ptr)
        return np.empty(0, dtype=fmt)
    shrunk = realloc(ptr, n * itemsize)
    if shrunk != NULL:
        ptr = shrunk
    a = view.array(shape=(n,), itemsize=itemsize, format=fmt, mode="c",
                   allocate_buffer=False)
    a.data = <char*>ptr
    a.callback_free_data = free
    return np.asarray(a)


cdef class Builder:
    """Accumulates the CSR arrays of one read, block after block.

    Buffers are plain malloc/realloc memory: glibc grows large blocks with
    mremap, so growing the output never holds two copies of it.
    """
    cdef Settings st
    cdef Out o
    cdef int64_t cap_rows, cap_nnz
    cdef readonly int64_t n_rows, nnz, n_lines, min_idx, max_idx, eq_line
    cdef readonly bint wide
    cdef Chunk* _ch

    def __cinit__(self, int mode, int64_t n_features, bint f32, bint want_qid):
        self.st.mode = mode
        self.st.n_features = n_features
        if n_features < 0:
            self.st.limit = MAX_INDEX
        elif mode == MODE_ZERO:
            self.st.limit = n_features - 1
        else:
            self.st.limit = n_features
        self.st.wide = False
        self.st.f32 = f32
        self.st.want_qid = want_qid
        self.min_idx = I64MAX
        self.max_idx = -1
        self.eq_line = -1
        self.o.indptr = <int64_t*>malloc(sizeof(int64_t))
        if self.o.indptr == NULL:
            raise MemoryError()
        self.o.indptr[0] = 0

    def __dealloc__(self):
        free(self.o.labels)
        free(self.o.qids)
        free(self.o.indptr)
        free(self.o.idx32)
        free(self.o.idx64)
        free(self.o.val64)
        free(self.o.val32)

    cdef int _grow(self, int64_t need_rows, int64_t need_nnz,
                   int64_t want_rows=0, int64_t want_nnz=0) except -1:
        """Capacity for ``need`` rows/entries; ``want`` is a projected total."""
        cdef int64_t cap
        cdef void* p
        if need_rows > self.cap_rows:
            cap = max(need_rows, 2 * self.cap_rows, want_rows)
            p = realloc(self.o.labels, cap * sizeof(double))
            if p == NULL:
                raise MemoryError()
            self.o.labels = <double*>p
            if self.st.want_qid:
                p = realloc(self.o.qids, cap * sizeof(int64_t))
                if p == NULL:
                    raise MemoryError()
                self.o.qids = <int64_t*>p
            p = realloc(self.o.indptr, (cap + 1) * sizeof(int64_t))
            if p == NULL:
                raise MemoryError()
            self.o.indptr = <int64_t*>p
            self.cap_rows = cap
        if need_nnz > self.cap_nnz:
            cap = max(need_nnz, 2 * self.cap_nnz, 1024, want_nnz)
            if self.st.wide:
                p = realloc(self.o.idx64, cap * sizeof(int64_t))
                if p == NULL:
                    raise MemoryError()
                self.o.idx64 = <int64_t*>p
            else:
                p = realloc(self.o.idx32, cap * sizeof(int32_t))
                if p == NULL:
                    raise MemoryError()
                self.o.idx32 = <int32_t*>p
            if self.st.f32:
                p = realloc(self.o.val32, cap * sizeof(float))
                if p == NULL:
                    raise MemoryError()
                self.o.val32 = <float*>p
            else:
                p = realloc(self.o.val64, cap * sizeof(double))
                if p == NULL:
                    raise MemoryError()
                self.o.val64 = <double*>p
            self.cap_nnz = cap
        return 0

    cdef int _widen(self) except -1:
        """Switch the stored indices to int64 in place (backwards, no copy)."""
        cdef int64_t i, t, cap = max(self.cap_nnz, 1)
        cdef void* p = realloc(self.o.idx32, cap * sizeof(int64_t))
        if p == NULL:
            raise MemoryError()
        self.o.idx32 = NULL
        self.o.idx64 = <int64_t*>p
        with nogil:
            i = self.nnz - 1
            while i >= 0:
                t = (<int32_t*>p)[i]
                self.o.idx64[i] = t
                i -= 1
        self.st.wide = True
        return 0

    def feed(self, unsigned char[::1] buf, Py_ssize_t n, int n_threads,
             Py_ssize_t min_chunk, int64_t bytes_left=0):
        """Parse ``buf[:n]``, which holds whole lines (the last may lack '\\n').

        Unless ``buf[n - 1]`` is a newline, ``buf[n]`` must exist: a NUL is
        written there so the scanning loops and strtod stop at the end.
        ``bytes_left`` (optional) is how many input bytes remain, this block
        included; it lets the first block size the output for the whole file.
        Returns None, or ``(status, line, token, a, b)`` for the first error
        (``line`` 1-based, counted from the first fed byte).
        """
        cdef const unsigned char* base
        cdef Py_ssize_t n_chunks, i, j, target
        cdef const unsigned char* q
        cdef Chunk* ch
        cdef int64_t rows_at, nnz_at, row_dst, nnz_dst, lines, r, add
        cdef int nt
        if n <= 0:
            return None
        if n > buf.shape[0]:
            raise ValueError("n exceeds the buffer")
        if buf[n - 1] != b'\n':
            if n >= buf.shape[0]:
                raise ValueError("no room for the end sentinel after the last line")
            buf[n] = 0
        base = &buf[0]
        n_chunks = 1
        if n_threads > 1:
            n_chunks = max(1, min(n // max(min_chunk, 1), 4 * n_threads))
        ch = <Chunk*>malloc(n_chunks * sizeof(Chunk))
        if ch == NULL:
            raise MemoryError()
        try:
            # Chunk boundaries: just after the first newline at or past each
            # equal-size cut, so every chunk starts at a line start.
            j = 0
            ch[0].begin = base
            for i in range(1, n_chunks):
                target = (n * i) // n_chunks
                if target <= ch[j].begin - base:
                    continue
                q = <const unsigned char*>memchr(base + target - 1, b'\n',
                                                 n - (target - 1))
                if q == NULL or q + 1 >= base + n:
                    break
                ch[j].end = q + 1
                j += 1
                ch[j].begin = q + 1
            ch[j].end = base + n
            n_chunks = j + 1
            nt = <int>min(<Py_ssize_t>n_threads, n_chunks)

            self._ch = ch
            if nt > 1:
                list(_pool(nt).map(self._count_one, range(n_chunks)))
            else:
                with nogil:
                    count_chunk(&ch[0])
            rows_at = self.n_rows
            nnz_at = self.nnz
            for i in range(n_chunks):
                ch[i].row_off = rows_at
                ch[i].nnz_off = nnz_at
                rows_at += ch[i].ub_rows
                nnz_at += ch[i].ub_nnz
            # With the input's remaining size known, project the final size
            # from this block so the arrays are sized once, not regrown
            # (a regrow below glibc's mmap threshold is a copy).
            if bytes_left > n:
                self._grow(rows_at, nnz_at,
                           rows_at + <int64_t>((rows_at - self.n_rows) * 1.05 * (bytes_left - n) / n),
                           nnz_at + <int64_t>((nnz_at - self.nnz) * 1.05 * (bytes_left - n) / n))
            else:
                self._grow(rows_at, nnz_at)

            while True:
                if nt > 1:
                    list(_pool(nt).map(self._parse_one, range(n_chunks)))
                else:
                    with nogil:
                        parse_chunk(&ch[0], &self.st, &self.o)
                lines = 0
                for i in range(n_chunks):
                    if ch[i].status != ST_OK:
                        break
                    lines += ch[i].n_lines
                else:
                    break
                if ch[i].status == ST_NEED_WIDE:
                    self._widen()
                    self._grow(rows_at, nnz_at)
                    continue
                q = ch[i].err_tok
                j = 0
                while q + j < base + n and CLS[q[j]] == 0 and j < 200:
                    j += 1
                return (ch[i].status, self.n_lines + lines + ch[i].err_line + 1,
                        bytes(q[:j]), ch[i].err_a, ch[i].err_b)

            # Compact in order: destinations never overtake later sources.
            with nogil:
                row_dst = self.n_rows
                nnz_dst = self.nnz
                lines = self.n_lines
                for i in range(n_chunks):
                    if ch[i].nnz and nnz_dst != ch[i].nnz_off:
                        if self.st.wide:
                            memmove(&self.o.idx64[nnz_dst], &self.o.idx64[ch[i].nnz_off],
                                    ch[i].nnz * sizeof(int64_t))
                        else:
                            memmove(&self.o.idx32[nnz_dst], &self.o.idx32[ch[i].nnz_off],
                                    ch[i].nnz * sizeof(int32_t))
                        if self.st.f32:
                            memmove(&self.o.val32[nnz_dst], &self.o.val32[ch[i].nnz_off],
                                    ch[i].nnz * sizeof(float))
                        else:
                            memmove(&self.o.val64[nnz_dst], &self.o.val64[ch[i].nnz_off],
                                    ch[i].nnz * sizeof(double))
                    if ch[i].n_rows and row_dst != ch[i].row_off:
                        memmove(&self.o.labels[row_dst], &self.o.labels[ch[i].row_off],
                                ch[i].n_rows * sizeof(double))
                        memmove(&self.o.indptr[row_dst + 1],
                                &self.o.indptr[ch[i].row_off + 1],
                                ch[i].n_rows * sizeof(int64_t))
                        if self.st.want_qid:
                            memmove(&self.o.qids[row_dst], &self.o.qids[ch[i].row_off],
                                    ch[i].n_rows * sizeof(int64_t))
                    add = nnz_dst
                    for r in range(row_dst + 1, row_dst + 1 + ch[i].n_rows):
                        self.o.indptr[r] += add
                    if ch[i].eq_line >= 0 and self.eq_line < 0:
                        self.eq_line = lines + ch[i].eq_line + 1
                    if ch[i].min_idx < self.min_idx:
                        self.min_idx = ch[i].min_idx
                    if ch[i].max_idx > self.max_idx:
                        self.max_idx = ch[i].max_idx
                    row_dst += ch[i].n_rows
                    nnz_dst += ch[i].nnz
                    lines += ch[i].n_lines
                self.n_rows = row_dst
                self.nnz = nnz_dst
                self.n_lines = lines
            return None
        finally:
            self._ch = NULL
            free(ch)

    def _count_one(self, Py_ssize_t i):
        with nogil:
            count_chunk(&self._ch[i])

    def _parse_one(self, Py_ssize_t i):
        with nogil:
            parse_chunk(&self._ch[i], &self.st, &self.o)

    def finish(self, bint shift, bint want64, int n_threads):
        """Return ``(y, data, indices, indptr, qid)`` and give up the buffers.

        ``shift`` subtracts 1 from every index (1-based files); ``want64``
        asks for int64 indices and indptr (else int32, which must fit).
        """
        cdef int64_t i, n = self.nnz, nr = self.n_rows
        cdef int32_t* ip32
        if want64 and not self.st.wide:
            self._widen()
        if shift:
            # A vectorised pass at memory speed; not worth a thread team.
            with nogil:
                if self.st.wide:
                    for i in range(n):
                        self.o.idx64[i] -= 1
                else:
                    for i in range(n):
                        self.o.idx32[i] -= 1
        if want64:
            indices = _wrap(self.o.idx64, n, 8, "q")
            indptr = _wrap(self.o.indptr, nr + 1, 8, "q")
        else:
            if self.st.wide:
                # Indices went wide for a raw index that fits after all.
                ip32 = <int32_t*>self.o.idx64
                for i in range(n):
                    ip32[i] = <int32_t>self.o.idx64[i]
                self.o.idx32 = ip32
                self.o.idx64 = NULL
            indices = _wrap(self.o.idx32, n, 4, "i")
            ip32 = <int32_t*>self.o.indptr
            for i in range(nr + 1):
                ip32[i] = <int32_t>self.o.indptr[i]
            indptr = _wrap(ip32, nr + 1, 4, "i")
        self.o.idx32 = NULL
        self.o.idx64 = NULL
        self.o.indptr = NULL
        if self.st.f32:
            data = _wrap(self.o.val32, n, 4, "f")
        else:
            data = _wrap(self.o.val64, n, 8, "d")
        self.o.val32 = NULL
        self.o.val64 = NULL
        y = _wrap(self.o.labels, nr, 8, "d")
        self.o.labels = NULL
        qid = None
        if self.st.want_qid:
            qid = _wrap(self.o.qids, nr, 8, "q")
            self.o.qids = NULL
        return y, data, indices, indptr, qid


# ---------------------------------------------------------------- writing

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
