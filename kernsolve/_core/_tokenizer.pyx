"""LIBSVM-format tokeniser: one chunk of complete lines into its slice of the arrays.

The Builder (``_reader.pyx``) cuts each block at newlines into chunks and runs
the two passes of this module on them, one chunk per task with the GIL
released: ``count_chunk`` bounds a chunk's rows and entries, ``parse_chunk``
parses its lines into the slice those bounds reserve.  Numbers are read
correctly rounded (Clinger's fast path, else strtod), indices are checked
against the read's settings, and an error stops the chunk with a status code,
the line counted inside the chunk and the offending token
(``_tokenizer.pxd`` declares what the two modules share).
"""
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport strtod
from libc.string cimport memchr
from libc.math cimport isfinite

cdef int64_t I32MAX = 2147483647
cdef int64_t I64MAX = 9223372036854775807
# Largest raw feature index accepted: n_features = index + 1 must still fit.
cdef int64_t MAX_INDEX = 4611686018427387904  # 2**62
cdef uint64_t TWO53 = 9007199254740992

cdef enum:
    NUM_OK = 0
    NUM_BAD = 1
    NUM_INF = 2
    NUM_LOCALE = 3

# Character classes: 0 = part of a token, 1 = blank, 2 = newline, 3 = '#'.
# '\r' is a blank so CRLF files need no special case.
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
    cdef int n_lead = st.n_lead, lead
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
        rc = parse_number(&p, end, &labels[row * n_lead])
        lead = 1
        while rc == NUM_OK and lead < n_lead:
            # more leading numbers (a support vector's coefficients)
            while CLS[p[0]] == 1:
                p += 1
            s = p
            if p >= end or CLS[p[0]] != 0:
                rc = NUM_BAD
                break
            rc = parse_number(&p, end, &labels[row * n_lead + lead])
            lead += 1
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
