# The per-chunk tokeniser of LIBSVM-format text (kernsolve/_core/_tokenizer.pyx):
# what it shares with the Builder that drives it (kernsolve/_core/_reader.pyx):
# the settings of a read, the output arrays, one chunk's bounds and results,
# its status codes and the character classes.
from libc.stdint cimport int32_t, int64_t

cdef int64_t I64MAX
cdef int64_t MAX_INDEX

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

# Index modes.
cdef enum:
    MODE_ZERO = 0   # zero_based=True
    MODE_ONE = 1    # zero_based=False
    MODE_AUTO = 2

# Character classes: 0 = part of a token, 1 = blank, 2 = newline, 3 = '#'.
# '\r' is a blank so CRLF files need no special case.
cdef unsigned char CLS[256]


ctypedef struct Settings:
    int mode
    int64_t limit        # largest raw index allowed
    int64_t n_features   # -1 when not given
    bint wide            # int64 indices
    bint f32             # float32 values
    bint want_qid
    int n_lead           # numbers before the pairs (1: the label; a model's
                         # support-vector line has its coefficients there)


ctypedef struct Out:
    double* labels       # n_lead per row
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


# Count the chunk's newlines and ':' characters: its upper bounds on rows and
# entries (the first pass).
cdef void count_chunk(Chunk* ch) noexcept nogil
# Parse the chunk's lines into its slice of the output (the second pass); on
# an error, ch.status and the err_ fields say what and where.
cdef void parse_chunk(Chunk* ch, const Settings* st, Out* o) noexcept nogil
