"""LIBSVM-format reader: the Builder behind kernsolve._io.read_problem.

The Python front (``kernsolve/_io.py``) owns files, windows, options and the
wording of errors.  This module receives blocks of complete lines, splits each
block at newlines into chunks, and parses the chunks in parallel straight into
the output arrays (the per-chunk tokeniser is ``_tokenizer.pyx``):

1. a cheap counting pass gives every chunk an upper bound on its rows (newlines
   + 1) and entries (':' characters), so each chunk knows where to write before
   any parsing has happened;
2. the chunks are parsed in parallel, each into its own slice with the GIL
   released, by the caller's pool of Python threads (``pools``; doc/threads.md,
   "The reader");
3. the slices are compacted in order (a no-op unless comments, blank lines or
   ``qid:`` fields made the bounds loose).

Output positions depend only on the bytes, never on the thread count, so any
``n_threads`` gives the same arrays.  Errors are reported as status codes with
the line counted inside the chunk; the first failing chunk wins, which is the
error a serial parse would meet first.
"""
from cython cimport view
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memchr, memmove

import numpy as np

from ._tokenizer cimport (
    I64MAX, MAX_INDEX, ST_OK, ST_LABEL, ST_LABEL_INF, ST_VALUE, ST_VALUE_INF, ST_COLON,
    ST_INDEX, ST_INDEX_ZERO, ST_INDEX_BIG, ST_INDEX_HUGE, ST_ORDER, ST_DUP, ST_QID,
    ST_QID_POS, ST_QID_MISSING, ST_VALUE_EMPTY, ST_LOCALE, ST_NEED_WIDE, MODE_ZERO, CLS,
    Settings, Out, Chunk, count_chunk, parse_chunk)

STATUS = {
    "label": ST_LABEL, "label_inf": ST_LABEL_INF, "value": ST_VALUE,
    "value_inf": ST_VALUE_INF, "colon": ST_COLON, "index": ST_INDEX,
    "index_zero": ST_INDEX_ZERO, "index_big": ST_INDEX_BIG,
    "index_huge": ST_INDEX_HUGE, "order": ST_ORDER, "dup": ST_DUP, "qid": ST_QID,
    "qid_pos": ST_QID_POS, "qid_missing": ST_QID_MISSING,
    "value_empty": ST_VALUE_EMPTY, "locale": ST_LOCALE,
}


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

    def __cinit__(self, int mode, int64_t n_features, bint f32, bint want_qid,
                  int n_lead=1):
        # n_lead: numbers before the index:value pairs of a line, kept n_lead
        # per row in the labels array (1 for data files; a model file's
        # support-vector lines have their coefficients there)
        if n_lead < 1:
            raise ValueError("n_lead must be >= 1")
        self.st.n_lead = n_lead
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
            p = realloc(self.o.labels, cap * self.st.n_lead * sizeof(double))
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
             Py_ssize_t min_chunk, int64_t bytes_left=0, *, pools):
        """Parse ``buf[:n]``, which holds whole lines (the last may lack '\\n').

        Unless ``buf[n - 1]`` is a newline, ``buf[n]`` must exist: a NUL is
        written there so the scanning loops and strtod stop at the end.
        ``bytes_left`` (optional) is how many input bytes remain, this block
        included; it lets the first block size the output for the whole file.
        ``pools(k)`` gives a pool of k Python threads (an executor: ``map``)
        for the chunks when ``n_threads`` > 1.
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
            self._on_chunks(False, n_chunks, nt, pools)
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
                self._on_chunks(True, n_chunks, nt, pools)
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
                        memmove(&self.o.labels[row_dst * self.st.n_lead],
                                &self.o.labels[ch[i].row_off * self.st.n_lead],
                                ch[i].n_rows * self.st.n_lead * sizeof(double))
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

    cdef int _on_chunks(self, bint parse, Py_ssize_t n_chunks, int nt, pools) except -1:
        """Count (``parse`` False) or parse every chunk of ``self._ch``: on the
        ``nt`` threads of ``pools(nt)``, or on this one.  Each chunk writes only
        its own slice, so the threads change no bit."""
        cdef Py_ssize_t i
        cdef Chunk* ch = self._ch
        cdef Settings* st = &self.st
        cdef Out* o = &self.o
        if nt > 1:
            list(pools(nt).map(self._parse_one if parse else self._count_one,
                               range(n_chunks)))
            return 0
        with nogil:
            for i in range(n_chunks):
                if parse:
                    parse_chunk(&ch[i], st, o)
                else:
                    count_chunk(&ch[i])
        return 0

    def _count_one(self, Py_ssize_t i):
        with nogil:
            count_chunk(&self._ch[i])

    def _parse_one(self, Py_ssize_t i):
        with nogil:
            parse_chunk(&self._ch[i], &self.st, &self.o)

    def finish(self, bint shift, bint want64, int n_threads):
        """Return ``(y, data, indices, indptr, qid)`` and give up the buffers.

        ``y`` holds ``n_lead`` numbers per row, row after row.

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
        y = _wrap(self.o.labels, nr * self.st.n_lead, 8, "d")
        self.o.labels = NULL
        qid = None
        if self.st.want_qid:
            qid = _wrap(self.o.qids, nr, 8, "q")
            self.o.qids = NULL
        return y, data, indices, indptr, qid
