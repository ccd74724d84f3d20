"""The text of support-vector lines, shared by every model file kernsolve writes.

LIBSVM's model files (``kernsolve._model``) and kernsolve's EigenPro files
(``kernsolve.solvers.eigenpro.model``) hold their expansions the same way: one
line per vector, its coefficients then ``index:value`` pairs.  This module owns
that codec and its number formats:

* writing: ``%.17g`` for coefficients and parameters (:func:`float_text`),
  labels as integers when they are (:func:`label_text`), feature values as
  LIBSVM writes them when that is exact (:func:`format_sv_rows`);
* reading: a file's lines (:func:`split_lines`: a file cut inside its last
  line is refused), the header of every model kind (:class:`ModelHeader`:
  one reader and one set of checks for keys, counts, numbers, labels and
  kernel parameters), numbers with the exact grammar LIBSVM's files use
  (:func:`parse_float`, :func:`parse_int`) and the vector lines
  (:func:`read_vector_lines`), in bulk when the file is valid and line by line
  to name the problem when it is not;
* reading a model file's vector section straight from its bytes
  (:func:`read_vector_bytes`) with the compiled reader of data files
  (``kernsolve._core._reader``, which reads the coefficients as the leading
  numbers of a line): the fast path of valid files, which gives what the
  line readers give and hands anything else back to them.

The readers take ``fail(lineno, problem)``, which raises (``ModelFormatError``
with the file's name, from the caller): the protocol of
``ModelKind.from_lines``.
"""
import math
import re

import numpy as np

from ._constants import COEF0_KERNELS, GAMMA_KERNELS, POLY, PRECOMPUTED
from ._core import _reader
from ._kernels import check_kernel_params
from ._sparse import make_csr
from ._threads import shared_pool

__all__ = ["MAX_INDEX", "ModelHeader", "float_text", "label_text", "format_sv_rows",
           "parse_float", "parse_floats", "parse_int", "read_vector_bytes",
           "read_vector_lines", "split_lines"]

MAX_INDEX = 2 ** 31 - 1  # LIBSVM stores feature indices in a C int


# ---------------------------------------------------------------- writing

def float_text(x):
    """A coefficient or parameter: ``%.17g``, which reads back as the same double."""
    return "%.17g" % x


def label_text(v):
    """A class label: an integer as LIBSVM writes it (``%d``), else ``%.17g``."""
    v = float(v)
    if v.is_integer() and abs(v) <= MAX_INDEX:
        return "%d" % int(v)
    return float_text(v)


def _sv_value_format(values):
    """How to write a chunk of feature values: (format, texts or None).

    LIBSVM writes them with ``%.8g``.  A value whose ``%.8g`` text reads back
    as the same double (any value read from a LIBSVM file, which has at most
    8 significant digits) is written that way, so the file has LIBSVM's own
    bytes; any other value gets ``%.17g``, so ``load_model(save_model(m))``
    still gives back the same doubles.  Returns ``("%.8g", None)`` or
    ``("%.17g", None)`` when one format serves the whole chunk, else
    ``("%s", texts)`` with one text per value.
    """
    short = ("%.8g " * values.size) % tuple(values.tolist())
    texts = short.split()
    exact = np.array(texts, dtype=np.float64) == values
    if exact.all():
        return "%.8g", None
    if not exact.any():
        return "%.17g", None
    for i in np.flatnonzero(~exact).tolist():
        texts[i] = "%.17g" % values[i]
    return "%s", texts


#: Numbers formatted together by :func:`format_sv_rows`: each becomes a few
#: Python objects (a float, its text, list and tuple slots: about 100 bytes),
#: so a chunk takes ~6 MB whatever the model's size.
SV_CHUNK_VALUES = 1 << 16


def _row_chunks(row_len, budget):
    """Cut rows of ``row_len`` numbers into runs of about ``budget`` numbers
    (at least one row each): yields (first row, end row)."""
    ends = np.cumsum(row_len)
    a, l = 0, row_len.size
    while a < l:
        base = ends[a - 1] if a else 0
        b = int(np.searchsorted(ends, base + budget, side="right"))
        b = min(max(b, a + 1), l)
        yield a, b
        a = b


def format_sv_rows(coef, csr, values_per_chunk=SV_CHUNK_VALUES):
    """The SV lines, chunk by chunk: one %-format over many rows (no per-value
    calls), chunks of about ``values_per_chunk`` numbers so the memory of the
    texts stays bounded (write each chunk as it comes: ``save_model``)."""
    m, l = coef.shape
    indptr = csr.indptr.astype(np.int64)
    indices, data = csr.indices, csr.data
    templates = {}
    for a, b in _row_chunks(m + 2 * np.diff(indptr), values_per_chunk):
        counts = np.diff(indptr[a:b + 1])
        row_len = m + 2 * counts
        starts = np.concatenate([[0], np.cumsum(row_len)[:-1]])
        out = np.empty(int(row_len.sum()), dtype=np.float64)
        for c in range(m):
            out[starts + c] = coef[c, a:b]
        nnz = int(counts.sum())
        if nnz:
            row_of = np.repeat(np.arange(b - a), counts)
            k = np.arange(nnz) - (indptr[a:b] - indptr[a])[row_of]
            pos = starts[row_of] + m + 2 * k
            lo, hi = indptr[a], indptr[b]
            out[pos] = indices[lo:hi] + 1.0    # %d formats whole floats exactly
            out[pos + 1] = data[lo:hi]
        args = out.tolist()
        fmt = "%.8g"
        if nnz:
            fmt, texts = _sv_value_format(data[lo:hi])
            if texts is not None:
                for p, text in zip((pos + 1).tolist(), texts):
                    args[p] = text
        parts = []
        for cnt in counts.tolist():
            tpl = templates.get((cnt, fmt))
            if tpl is None:
                tpl = templates[cnt, fmt] = "%.17g " * m + ("%d:" + fmt + " ") * cnt + "\n"
            parts.append(tpl)
        yield "".join(parts) % tuple(args)


# ---------------------------------------------------------------- reading

_FLOAT_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\Z")
_INT_RE = re.compile(r"[+-]?\d+\Z")


def parse_float(fail, lineno, text, what, infinite=False):
    """``text`` as a finite float, or ``fail(lineno, ...)`` naming ``what``.

    ``infinite``: ``inf`` and ``-inf`` are values too (never ``nan``), for
    the one field LIBSVM can write them in: rho of a one-class SVM with
    ``-n 1``, whose every coefficient is at its bound (``rho inf``).
    """
    if infinite and text.lower().lstrip("+-") in ("inf", "infinity"):
        return float(text)
    if not _FLOAT_RE.match(text):
        low = text.lower().lstrip("+-")
        if low in ("inf", "infinity", "nan"):
            fail(lineno, f"{what}: {text[:40]!r} is not a finite number")
        fail(lineno, f"{what}: {text[:40]!r} is not a number")
    v = float(text)
    if not math.isfinite(v):
        fail(lineno, f"{what}: {text[:40]!r} is not a finite number")
    return v


def parse_floats(fail, lineno, tokens, what):
    """Tokens as a float64 array, with :func:`parse_float`'s grammar and errors.

    In bulk when every character is one of a decimal number's (numpy then
    parses each token with Python's grammar, which on that alphabet is
    exactly ``_FLOAT_RE``); token by token, to name the problem, otherwise.
    """
    if not "".join(tokens).translate(_NOT_NUM):
        try:
            values = np.array(tokens, dtype=np.float64)
        except ValueError:
            values = None
        if values is not None and np.all(np.isfinite(values)):
            return values
    return np.array([parse_float(fail, lineno, t, what) for t in tokens], dtype=np.float64)


def parse_int(fail, lineno, text, what):
    """``text`` as an integer (at most 20 characters), or ``fail(lineno, ...)``."""
    if not _INT_RE.match(text) or len(text) > 20:
        fail(lineno, f"{what}: {text[:40]!r} is not an integer")
    return int(text)


def split_lines(text, fail):
    """A model file's text as lines (line ends removed), or ``fail``.

    kernsolve and LIBSVM end every model file with a newline: a file whose
    last line has none was cut short (a number may have lost digits), so it
    is refused rather than read.
    """
    lines = text.split("\n")
    if len(lines) == 1 and "\r" in text:
        fail(1, "the lines end with a carriage return alone (classic Mac OS line ends), "
                "not a newline: convert them, e.g. tr '\\r' '\\n' < FILE > NEW")
    if lines[-1] != "":
        fail(len(lines), "truncated model file: the last line does not end with a newline "
                         "(kernsolve and LIBSVM end every model file with one)")
    lines.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


class ModelHeader:
    """The ``key value ...`` lines of a model file's header, and their checks.

    One reader for the headers of every model kind (LIBSVM's, DSG's,
    EigenPro's): the lines from ``start`` up to the first line that is one of
    ``sections`` (``SV``, ``W``, ``coef``); blank lines are skipped, an
    unknown or repeated key is an error.  The accessors check what they
    return and report any problem as ``fail(line, problem)`` at the key's
    line (a missing key at the section line).
    """

    def __init__(self, lines, fail, keys, sections, start=1):
        self.fail = fail
        self.tokens, self.where = {}, {}
        self.end = self.section = None
        for k in range(start, len(lines)):
            tokens = lines[k].split()
            if not tokens:
                continue
            if tokens[0] in sections:
                if len(tokens) != 1:
                    fail(k + 1, f"unexpected text after {tokens[0]!r}")
                self.end, self.section = k, tokens[0]
                return
            if tokens[0] not in keys:
                later = any(ln.split()[:1] == [name] for ln in lines[k + 1:] for name in sections)
                fail(k + 1, f"unknown keyword {tokens[0][:40]!r} in the model header"
                     + ("" if later else f" (and no {self._names(sections)} line before it)"))
            if tokens[0] in self.tokens:
                fail(k + 1, f"{tokens[0]} given twice")
            self.tokens[tokens[0]] = tokens[1:]
            self.where[tokens[0]] = k + 1
        fail(max(len(lines), 1), f"truncated model file: no {self._names(sections)} line")

    @staticmethod
    def _names(sections):
        return " or ".join(repr(name) for name in sections)

    def __contains__(self, key):
        return key in self.tokens

    def line(self, key):
        """The key's line number (the section line when the key is missing)."""
        return self.where.get(key, self.end + 1)

    def values(self, key, count=None):
        """The key's value texts (exactly ``count`` of them when given)."""
        if key not in self.tokens:
            self.fail(self.end + 1, f"missing '{key}' line in the model header")
        vals = self.tokens[key]
        if count is not None and len(vals) != count:
            self.fail(self.where[key], f"{key} needs {count} values, got {len(vals)}")
        return vals

    def one(self, key):
        """The key's single value text."""
        vals = self.values(key)
        if len(vals) != 1:
            self.fail(self.where[key], f"{key} takes one value, got {len(vals)}")
        return vals[0]

    def word(self, key, choices):
        """One of ``choices`` (a sequence of names)."""
        value = self.one(key)
        if value not in choices:
            self.fail(self.where[key], f"unknown {key} {value[:40]!r}")
        return value

    def integer(self, key, low=None, high=None):
        """An integer in [low, high]."""
        v = parse_int(self.fail, self.line(key), self.one(key), key)
        if low is not None and v < low:
            self.fail(self.where[key], f"{key} must be >= {low}, got {v}")
        if high is not None and v > high:
            self.fail(self.where[key], f"{key} must be <= {high}, got {v}")
        return v

    def number(self, key, check=None):
        """A finite number; ``check(value)`` may raise ValueError with the problem."""
        v = parse_float(self.fail, self.line(key), self.one(key), key)
        if check is not None:
            try:
                check(v)
            except ValueError as exc:
                self.fail(self.where[key], str(exc))
        return v

    def numbers(self, key, count, infinite=False):
        """``count`` finite numbers (``infinite``: +-inf too, see parse_float)."""
        vals = self.values(key, count)
        return np.array([parse_float(self.fail, self.where[key], v, key, infinite)
                         for v in vals], dtype=np.float64)

    def labels(self, key, count):
        """``count`` distinct finite class labels."""
        labels = self.numbers(key, count)
        # a set, not np.unique: NumPy 2's unique imports numpy.ma at its first
        # call (10 ms of kernsolve-predict's start-up), and labels are few
        if len(set(labels.tolist())) != labels.size:
            self.fail(self.where[key], "duplicate class labels")
        return labels

    def kernel_parameters(self, param, t):
        """degree, gamma and coef0 of kernel ``t`` into ``param``, checked as
        the kernel function checks them (gamma >= 0, as LIBSVM's svm-train
        requires); any of them may also stand where kernel ``t`` has no use
        for it (LIBSVM's and EigenPro's files)."""
        if t == POLY or "degree" in self:
            param.degree = self.integer("degree", low=0 if t == POLY else None,
                                        high=MAX_INDEX)
        if t in GAMMA_KERNELS or "gamma" in self:
            param.gamma = self.number("gamma", check=_kernel_gamma if t in GAMMA_KERNELS
                                      else None)
        if t in COEF0_KERNELS or "coef0" in self:
            param.coef0 = self.number("coef0")


def _kernel_gamma(gamma):
    check_kernel_params(gamma, 0, 0.0, 1)


def read_vector_lines(fail, lines, sv_line, l, m, t, what):
    """The ``l`` lines after the ``SV`` line (index ``sv_line``): ``m``
    coefficients then ``index:value`` pairs each, nothing but blank lines after
    them; ``what`` names a line in the messages, ``fail(lineno, problem)``
    raises.  Returns (CSR rows, (m, l) coefficients)."""
    body = lines[sv_line + 1:]
    if len(body) < l:
        fail(len(lines) + 1, f"truncated model file: total_sv is {l} but only "
                             f"{len(body)} {what} lines follow")
    for k in range(l, len(body)):
        if body[k].strip():
            fail(sv_line + 2 + k, f"unexpected text after the {l} {what}s")
    return _read_support_vectors(fail, body[:l], sv_line + 2, m, t)


def _read_support_vectors(fail, lines, first_lineno, m, t, bulk=True):
    """The SV section -> (CSR support vectors, (m, l) coefficients).

    Valid files (nearly all) are converted in bulk; any problem sends the
    reader through the lines one by one, which names the line and the problem.
    """
    l = len(lines)
    if bulk and t != PRECOMPUTED:
        out = _bulk_support_vectors(lines, m)
        if out is not None:
            return out
    for i, line in enumerate(lines):   # the counts first: coef holds only numbers the file has
        found = len(line.split())
        if found < m:
            fail(first_lineno + i, f"expected {m} coefficient(s), got {found}")
    coef = np.empty((m, l), dtype=np.float64)
    indptr = np.zeros(l + 1, dtype=np.int64)
    all_idx, all_val = [], []
    width = 1 if t == PRECOMPUTED else 0
    for i, line in enumerate(lines):
        lineno = first_lineno + i
        tokens = line.split()
        if len(tokens) < m:
            fail(lineno, f"expected {m} coefficient(s), got {len(tokens)}")
        for c in range(m):
            coef[c, i] = parse_float(fail, lineno, tokens[c], "coefficient")
        pairs = tokens[m:]
        idx, val = _slow_pairs(fail, lineno, pairs, t)
        if t == PRECOMPUTED and len(pairs) != 1:
            fail(lineno, "a precomputed-kernel support vector needs its '0:serial' pair")
        if len(idx):
            width = max(width, int(idx[-1]) + 1)
        all_idx.append(idx)
        all_val.append(val)
        indptr[i + 1] = indptr[i] + len(idx)
    indices = np.concatenate(all_idx) if all_idx else np.empty(0, np.int64)
    data = np.concatenate(all_val) if all_val else np.empty(0, np.float64)
    return _csr(data, indices, indptr, l, width), coef


def _csr(data, indices, indptr, l, width):
    """The vectors as kernsolve's Csr (``load_model`` gives its callers scipy's)."""
    index_dtype = np.int32 if max(width, len(data)) < 2 ** 31 else np.int64
    return make_csr(data, indices.astype(index_dtype, copy=False),
                    indptr.astype(index_dtype, copy=False), (l, width))


#: Bytes of the vector section per parsing task of the compiled reader (its
#: result does not depend on the cut): below this, one thread reads it all.
_MIN_CHUNK_BYTES = 1 << 18
_ONE_BASED = 1      # kernsolve._core._tokenizer's MODE_ONE: indices start at 1


def read_vector_bytes(buf, start, l, m, n_threads=1):
    """The ``l`` vector lines of a model file that begin at byte ``start`` of
    ``buf`` (a bytearray holding the whole file; the text after them must be
    blank), read by the compiled reader of data files; ``m`` coefficients per
    line.  Returns what :func:`read_vector_lines` returns, or None when the
    section is anything but plain valid lines (a blank or comment line, a
    ``qid:``, a bad number, an index out of order, a line too many or too
    few ...): the caller then reads the lines with :func:`read_vector_lines`,
    which names the problem and its line.  The bytes are parsed in place; the
    memory is the result's (``n_threads`` tasks, same result for any count).
    """
    if m < 1 or l < 1:
        return None
    end = len(buf)
    while end > start and buf[end - 1] in b" \t\r\n\v\f":  # trailing blank lines
        end -= 1
    end = buf.find(b"\n", end)
    if end < 0:                  # the last line has no newline: a truncated file
        return None
    end += 1
    # The data reader skips comments, blank lines and qid: fields, which a
    # model file has none of.
    if buf.find(b"#", start, end) >= 0 or buf.find(b"q", start, end) >= 0:
        return None
    builder = _reader.Builder(_ONE_BASED, MAX_INDEX, False, False, m)
    with memoryview(buf) as view, view[start:end] as section:
        err = builder.feed(section, end - start, n_threads, _MIN_CHUNK_BYTES, 0,
                           pools=shared_pool)
    if err is not None or builder.n_rows != l or builder.n_lines != l:
        return None
    width = int(builder.max_idx) if builder.nnz else 0
    coef, data, indices, indptr, _ = builder.finish(True, builder.nnz > MAX_INDEX, 1)
    coef = np.ascontiguousarray(coef.reshape(l, m).T)
    return _csr(data, indices, indptr, l, width), coef


#: SV lines converted together: their tokens are Python strings (about 60
#: bytes each), so a chunk bounds the reader's memory, not the file's size.
_BULK_LINES = 2048


def _bulk_support_vectors(lines, m):
    """All SV lines, a chunk of lines at a time, or None if anything at all is off."""
    l = len(lines)
    coef = np.empty((m, l), dtype=np.float64)
    counts = np.empty(l, dtype=np.int64)
    idx_parts, val_parts = [], []
    for start in range(0, l, _BULK_LINES):
        chunk = lines[start:start + _BULK_LINES]
        coef_tokens, pair_tokens = [], []
        for i, line in enumerate(chunk, start):
            tokens = line.split()
            if len(tokens) < m:
                return None
            coef_tokens.extend(tokens[:m])
            pair_tokens.extend(tokens[m:])
            counts[i] = len(tokens) - m
        if m:
            if "".join(coef_tokens).translate(_NOT_NUM):
                return None
            try:
                values = np.array(coef_tokens, dtype=np.float64).reshape(len(chunk), m)
            except ValueError:
                return None
            if not np.all(np.isfinite(values)):
                return None
            coef[:, start:start + len(chunk)] = values.T
        pairs = _fast_pairs(pair_tokens)
        if pairs is None:
            return None
        idx_parts.append(pairs[0])
        val_parts.append(pairs[1])
    idx = np.concatenate(idx_parts) if idx_parts else np.empty(0, np.int64)
    val = np.concatenate(val_parts) if val_parts else np.empty(0, np.float64)
    indptr = np.zeros(l + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    if len(idx):
        if idx.min() < 1 or idx.max() > MAX_INDEX:
            return None
        rising = idx[1:] > idx[:-1]
        rising[indptr[1:-1][(indptr[1:-1] > 0) & (indptr[1:-1] < len(idx))] - 1] = True
        if not rising.all():
            return None
        idx = idx - 1
    width = int(idx.max()) + 1 if len(idx) else 0
    return _csr(val, idx, indptr, l, width), coef


_NOT_NUM = str.maketrans("", "", "0123456789+-.eE")  # deletes the characters of numbers
_NOT_INT = str.maketrans("", "", "0123456789+-")


def _fast_pairs(pairs):
    """index:value tokens -> (int64 indices, float64 values) in bulk, or None.

    None means "something is off": the caller re-reads the line token by token
    to name the problem.  Accepts exactly what the token-by-token reader accepts.
    """
    n = len(pairs)
    if n == 0:
        return np.empty(0, np.int64), np.empty(0, np.float64)
    joined = " ".join(pairs)
    # Exactly one colon in every token and only number characters around it
    # (counting the colons of the whole line let "1:1:1 0" through as two pairs).
    if joined.translate(_NOT_NUM) != ": " * (n - 1) + ":":
        return None
    parts = joined.replace(":", " ").split(" ")
    if len(parts) != 2 * n:
        return None
    # Only the characters of decimal numbers; numpy then parses each token with
    # Python's grammar, which on this alphabet is exactly _FLOAT_RE / _INT_RE.
    if "".join(parts[0::2]).translate(_NOT_INT) or "".join(parts[1::2]).translate(_NOT_NUM):
        return None
    try:
        idx = np.array(parts[0::2], dtype=np.int64)
        val = np.array(parts[1::2], dtype=np.float64)
    except (ValueError, OverflowError):
        return None
    if not np.all(np.isfinite(val)):
        return None
    return idx, val


def _slow_pairs(fail, lineno, pairs, t):
    idx = np.empty(len(pairs), dtype=np.int64)
    val = np.empty(len(pairs), dtype=np.float64)
    prev = -1
    for q, tok in enumerate(pairs):
        a, colon, b = tok.partition(":")
        if not colon:
            fail(lineno, f"expected index:value, got {tok[:40]!r}")
        j = parse_int(fail, lineno, a, "feature index")
        v = parse_float(fail, lineno, b, "feature value")
        if j > MAX_INDEX:
            fail(lineno, f"feature index {j} is too large")
        if t == PRECOMPUTED:
            if q > 0 or j != 0:
                fail(lineno, "a precomputed-kernel support vector is one '0:serial' pair")
            if v < 0 or not float(v).is_integer():
                fail(lineno, f"serial number must be a non-negative integer, got {b!r}")
        else:
            if j < 1:
                fail(lineno, f"feature indices start at 1, got {j}")
            if j <= prev:
                fail(lineno, f"feature indices must be strictly increasing ({j} after {prev})")
            prev = j
            j -= 1
        idx[q] = j
        val[q] = v
    return idx, val
