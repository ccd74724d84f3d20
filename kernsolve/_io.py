"""Reading and writing LIBSVM-format data files (``label index:value ...``).

The compiled loops live in ``kernsolve/_core/``: ``_reader.pyx`` and
``_tokenizer.pyx`` read, ``_writer.pyx`` formats; this module owns the
data files (plain, ``.gz``, ``.bz2``, ``.xz``: the codec is chosen by
``kernsolve._fileutil``), byte windows, options and the wording of errors.  See ``doc/data-format.md`` for the accepted format.
"""
import io
import numbers
import os
import stat
from typing import Literal, overload

import numpy as np
from numpy.typing import DTypeLike

from ._core import _reader, _writer
from ._errors import DataFormatError
from ._fileutil import compression, compressor, open_read, output_file
from ._sparse import issparse, make_csr, scipy_sparse
from ._threads import resolve_n_jobs, shared_pool
from ._typing import ArrayLike, CsrMatrix, DataFile, MatrixLike, NDArray

__all__ = ["read_problem", "write_problem"]

# The file is read in blocks of this many bytes, so peak memory is the output
# arrays plus about one block.  Tests shrink these to exercise block and chunk
# boundaries on small files.
_BLOCK_SIZE = 16 << 20
# Smallest piece of a block worth handing to its own thread: a thread parses
# about 1 MB in 6 ms, and a file of one chunk is parsed without the worker
# pool (whose import, concurrent.futures and logging, takes longer than
# parsing 1 MB: kernsolve-train on mushrooms' 0.7 MB, doc/cli.md "Start-up time").
_MIN_CHUNK = 1 << 20
# Rows are formatted for writing in batches of about this many entries.
_WRITE_BATCH = 1 << 20

_INT32_MAX = 2 ** 31 - 1
# Room after the data in the read buffer for the tokeniser's end marker.
_PAD = 16
_MODE = {True: 0, False: 1, "auto": 2}
_S = _reader.STATUS


def _check_int(name, value, low):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return value


def _is_nonfinite_word(token):
    word = token.lstrip(b"+-").lower()
    return word in (b"nan", b"inf", b"infinity")


def _message(status, token, a, b, mode):
    """Text of one tokeniser error (status codes from _reader.STATUS)."""
    tok = token.decode("latin-1")
    if status in (_S["label"], _S["label_inf"]):
        if status == _S["label_inf"] or _is_nonfinite_word(token):
            return f"label {tok!r} is not finite"
        return f"label {tok!r} is not a number"
    if status in (_S["value"], _S["value_inf"]):
        if status == _S["value_inf"] or _is_nonfinite_word(token):
            return f"value {tok!r} of feature {a} is not finite"
        return f"value {tok!r} of feature {a} is not a number"
    if status == _S["value_empty"]:
        return f"feature {a} has no value ({tok!r})"
    if status == _S["colon"]:
        return f"expected 'index:value', got {tok!r} (missing ':')"
    if status in (_S["index"], _S["index_huge"]):
        idx = token.split(b":", 1)[0]
        if status == _S["index_huge"]:
            return f"feature index {idx.decode('latin-1')} is too large (limit 2**62)"
        if idx[:1] == b"-" and idx[1:].isdigit():
            return f"feature index {idx.decode('latin-1')} is negative"
        return f"feature index {idx.decode('latin-1')!r} is not an integer"
    if status == _S["index_zero"]:
        return ("feature index 0 in 1-based data (zero_based=False); "
                "pass zero_based=True or 'auto' for 0-based files")
    if status == _S["index_big"]:
        base = "0-based" if mode == 0 else "1-based"
        return f"feature index {a} is past n_features={b} ({base} indices)"
    if status == _S["order"]:
        return f"feature indices must be strictly increasing ({a} after {b})"
    if status == _S["dup"]:
        return f"duplicate feature index {a}"
    if status == _S["qid"]:
        return f"qid must be an integer, got {tok!r}"
    if status == _S["qid_pos"]:
        return f"'qid:' must come right after the label, got {tok!r}"
    if status == _S["qid_missing"]:
        return "missing 'qid:' field (query_id=True needs one on every data line)"
    if status == _S["locale"]:
        return (f"strtod could not read {tok!r}: is LC_NUMERIC set to a locale "
                "whose decimal point is not '.'?")
    return f"malformed line (status {status})"  # pragma: no cover


class _Source:
    """An opened input: the binary stream, its display name, and how to re-read it."""

    def __init__(self, source):
        self.path = None
        self.own = False
        if isinstance(source, (str, bytes, os.PathLike)):
            self.path = os.fsdecode(os.fspath(source))
            self.name = self.path
            self.f = open_read(self.path)
            self.own = True
        elif isinstance(source, numbers.Integral) and not isinstance(source, bool):
            self.f = open(int(source), "rb", buffering=0, closefd=False)
            self.name = f"<fd {int(source)}>"
            self.own = True
        elif hasattr(source, "read"):
            self.f = source
            name = getattr(source, "name", None)
            self.name = name if isinstance(name, str) else "<stream>"
        else:
            raise TypeError("source must be a path or a binary file object, "
                            f"got {type(source).__name__}")
        self._readinto = getattr(self.f, "readinto", None)
        if self._readinto is None or isinstance(self.f, io.TextIOBase):
            probe = self.f.read(0)
            if not isinstance(probe, (bytes, bytearray)):
                raise ValueError("source must be opened in binary mode ('rb')")

    def close(self):
        if self.own:
            self.f.close()

    def readinto(self, view):
        """Fill as much of ``view`` as the stream gives; 0 means end of file."""
        total = 0
        while total < len(view):
            if self._readinto is not None:
                n = self._readinto(view[total:])
            else:
                chunk = self.f.read(len(view) - total)
                if not isinstance(chunk, (bytes, bytearray)):
                    raise ValueError("source must be opened in binary mode ('rb')")
                n = len(chunk)
                view[total:total + n] = chunk
            if not n:
                break
            total += n
        return total

    def skip(self, offset):
        """Move to byte ``offset``; return the newlines skipped, or None if unknown."""
        seekable = False
        try:
            seekable = self.f.seekable()
        except (AttributeError, ValueError, OSError):
            pass
        if seekable and (self.path is None or compression(self.path) is None):
            self.f.seek(offset)
            return None
        # Compressed or non-seekable: reading forward is all a seek would do
        # anyway, and it lets us count the lines we pass.
        lines = 0
        remaining = offset
        buf = bytearray(min(offset, 1 << 22) or 1)
        view = memoryview(buf)
        while remaining > 0:
            n = self.readinto(view[:min(remaining, len(buf))])
            if not n:
                break
            lines += buf.count(b"\n", 0, n)
            remaining -= n
        return lines

    def size_hint(self):
        """Bytes in a plain regular file (None for compressed files, pipes, FIFOs,
        devices and file objects, whose size is not known in advance)."""
        if self.path is None or compression(self.path) is not None:
            return None
        try:
            st = os.fstat(self.f.fileno())
        except (OSError, AttributeError, ValueError):
            return None
        return st.st_size if stat.S_ISREG(st.st_mode) else None

    def count_lines(self, stop):
        """Newlines in bytes ``[0, stop)`` by re-reading; None if impossible."""
        try:
            if self.path is not None:
                f = open_read(self.path)
            else:
                if not self.f.seekable():
                    return None
                f = self.f
                f.seek(0)
            lines = 0
            remaining = stop
            while remaining > 0:
                chunk = f.read(min(remaining, 1 << 22))
                if not chunk:
                    break
                lines += chunk.count(b"\n")
                remaining -= len(chunk)
            if f is not self.f:
                f.close()
            return lines
        except (OSError, ValueError, AttributeError):
            return None


_Problem = tuple[NDArray[np.float64], CsrMatrix]
_RankingProblem = tuple[NDArray[np.float64], CsrMatrix, NDArray[np.int64]]


@overload
def read_problem(source: DataFile, n_features: int | None = ...,
                 zero_based: bool | Literal["auto"] = ..., dtype: DTypeLike = ...,
                 offset: int = ..., length: int = ..., query_id: Literal[False] = ...,
                 n_jobs: int | None = ..., *, for_training: bool = ...,
                 _scipy: bool = ...) -> _Problem: ...
@overload
def read_problem(source: DataFile, n_features: int | None = ...,
                 zero_based: bool | Literal["auto"] = ..., dtype: DTypeLike = ...,
                 offset: int = ..., length: int = ..., *, query_id: Literal[True],
                 n_jobs: int | None = ..., for_training: bool = ...,
                 _scipy: bool = ...) -> _RankingProblem: ...
@overload
def read_problem(source: DataFile, n_features: int | None = ...,
                 zero_based: bool | Literal["auto"] = ..., dtype: DTypeLike = ...,
                 offset: int = ..., length: int = ..., query_id: bool = ...,
                 n_jobs: int | None = ..., *,
                 for_training: bool = ..., _scipy: bool = ...) -> _Problem | _RankingProblem: ...
def read_problem(source: DataFile, n_features: int | None = None,
                 zero_based: bool | Literal["auto"] = "auto", dtype: DTypeLike = np.float64,
                 offset: int = 0, length: int = -1, query_id: bool = False,
                 n_jobs: int | None = None, *,
                 for_training: bool = False, _scipy: bool = True) -> _Problem | _RankingProblem:
    """Read a LIBSVM/svmlight-format data file.

    Parameters
    ----------
    source : str, path-like or binary file object
        A path (``.gz``, ``.bz2``, ``.xz`` are decompressed by extension), or
        an object opened in binary mode.
    n_features : int, optional
        Number of columns of ``X``.  Default: inferred from the largest index.
        Required when reading a byte window (``offset``/``length``).
    zero_based : bool or "auto", default="auto"
        Whether indices start at 0.  "auto" reads the file as 1-based unless
        some index 0 occurs.  A byte window must say True or False explicitly,
        since one window cannot tell.
    dtype : numpy.float64 or numpy.float32
        Type of ``X.data``.  float32 values are the float64 values rounded.
    offset, length : int, default 0 and -1
        Read only the lines whose *preceding* newline lies in the byte range
        ``[offset, offset + length)`` (the first line counts as preceded by a
        newline at -1, so it belongs to offset 0); ``length=-1`` means to the
        end.  Consecutive windows that cover the file give, concatenated,
        exactly the whole file.  For compressed files the offsets are
        positions in the decompressed stream (every window then decompresses
        the data before it); for file objects ``offset`` is an absolute
        position (the object is seeked, or read forward if it cannot seek).
    query_id : bool, default=False
        Also return the ``qid:`` of every line (then every data line needs
        one).  When False, ``qid:`` fields are checked and ignored.
    n_jobs : int, optional
        Threads for parsing (None = all cores).  The result does not depend
        on it.
    for_training : bool, default=False
        Refuse, with the file and line, a feature index that kernsolve's
        solvers cannot use (2**31 or more columns; they number features with
        32-bit integers, as LIBSVM does).  The command-line tools set it.
    _scipy : private
        False gives X as kernsolve's own CSR (``kernsolve._sparse.Csr``), for
        the command-line tools, which do not import scipy.

    Returns
    -------
    y : ndarray of float64, shape (n_samples,)
    X : scipy.sparse.csr_matrix, shape (n_samples, n_features)
        Sorted indices; int32 indices and indptr when they fit, else int64.
    qid : ndarray of int64, shape (n_samples,)
        Only when ``query_id=True``.

    Raises
    ------
    DataFormatError
        ``<file>:<line>: <problem>`` for a malformed line, a non-finite
        value, a bad index, or a file without data lines.  Lines are counted
        from the start of the file, also for windows (when the start cannot be
        re-read, the message says which window the line number is relative to).
    """
    if n_features is not None:
        n_features = _check_int("n_features", n_features, 1)
        if for_training and n_features > _INT32_MAX:
            raise ValueError(_too_wide(n_features))
    if isinstance(zero_based, np.bool_):
        zero_based = bool(zero_based)
    if not (zero_based is True or zero_based is False or zero_based == "auto"):
        raise ValueError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise ValueError(f"dtype must be float64 or float32, got {dt}")
    offset = _check_int("offset", offset, 0)
    length = _check_int("length", length, -1)
    windowed = offset > 0 or length >= 0
    if windowed and zero_based == "auto":
        raise ValueError("zero_based='auto' cannot be decided from a byte window; "
                         "pass zero_based=False (LIBSVM files) or True")
    if windowed and n_features is None:
        raise ValueError("n_features is required when offset or length is given")
    n_threads = resolve_n_jobs(n_jobs)
    mode = _MODE[zero_based]

    src = _Source(source)
    try:
        return _read(src, n_features, mode, dt, offset, length, bool(query_id),
                     n_threads, windowed, _INT32_MAX if for_training else None, _scipy)
    finally:
        src.close()


def _grown(buf, start, stop, block):
    """A buffer for ``block`` bytes beginning with ``buf[start:stop]``."""
    new = bytearray(block + _PAD)
    new[:stop - start] = memoryview(buf)[start:stop]
    return new, block


def _too_wide(index):
    return (f"feature index {index} is too large: kernsolve numbers features with "
            f"32-bit integers, as LIBSVM does (at most {_INT32_MAX} features)")


def _read(src, n_features, mode, dt, offset, length, query_id, n_threads, windowed,
          column_limit=None, scipy=True):
    # column_limit bounds the width without fixing it (n_features fixes it).
    limited = column_limit is not None and n_features in (None, column_limit)
    width_bound = column_limit if limited else n_features
    builder = _reader.Builder(mode, -1 if width_bound is None else width_bound,
                              dt == np.float32, query_id)
    max_block = max(int(_BLOCK_SIZE), 16)
    # The buffer stays near a quarter of the input (the output takes about as
    # many bytes as the text), so peak memory stays below scikit-learn's
    # even for mid-sized files: size/4 when the size is known, else 1 MB,
    # doubling as the bytes read pass four buffers.
    hint = src.size_hint()
    if hint is not None:
        left = max(hint - offset, 0)
        if length >= 0:
            left = min(left, length)
        block = max(16, min(max_block, max(left // 4, 1 << 20), left + 1))
    else:
        block = max(16, min(max_block, 1 << 20))
    buf = bytearray(block + _PAD)
    view = memoryview(buf)
    filled = 0
    eof = False
    pos = 0              # stream position of buf[0]
    lines_before = 0     # newlines before buf[0]; None = unknown
    limit = offset + length if length >= 0 else None
    if length == 0:
        eof = True

    if offset > 0 and not eof:
        lines_before = src.skip(offset)
        pos = offset
        # Drop the rest of the line holding byte `offset`: it belongs to the
        # window where its preceding newline lies.
        while True:
            filled = src.readinto(view[:block])
            if not filled:
                eof = True
                break
            j = buf.find(b"\n", 0, filled)
            if j >= 0:
                filled -= j + 1
                buf[:filled] = buf[j + 1:j + 1 + filled]
                pos += j + 1
                if lines_before is not None:
                    lines_before += 1
                break
            pos += filled
            filled = 0
        if limit is not None and pos - 1 >= limit:
            eof = True
            filled = 0

    def fail(line, problem):
        if lines_before is not None:
            where = f"{src.name}:{lines_before + line}"
        else:
            known = src.count_lines(pos_start)
            if known is not None:
                where = f"{src.name}:{known + line}"
            else:
                return DataFormatError(
                    f"{src.name}: line {line} of the byte range starting at "
                    f"offset {offset}: {problem}")
        return DataFormatError(f"{where}: {problem}")

    pos_start = pos
    while True:
        while filled < block and not eof:
            n = src.readinto(view[filled:block])
            if not n:
                eof = True
            filled += n
        final = False
        cut = -1
        if limit is not None and pos + filled > limit:
            j = buf.find(b"\n", max(limit - pos, 0), filled)
            if j >= 0:
                cut, final = j + 1, True
        if cut < 0:
            if eof:
                cut, final = filled, True
            else:
                j = buf.rfind(b"\n", 0, filled)
                if j < 0:
                    # One line longer than the block: grow the buffer.
                    view.release()
                    buf, block = _grown(buf, 0, filled, 2 * block)
                    view = memoryview(buf)
                    continue
                cut = j + 1
        left = 0
        if hint is not None:
            left = max(hint, pos + cut) - pos
            if limit is not None:
                left = min(left, max(limit - pos, cut))
        err = builder.feed(view, cut, n_threads, max(int(_MIN_CHUNK), 1), left,
                           pools=shared_pool)
        if err is not None:
            status, line, token, a, b = err
            if limited and status == _S["index_big"]:
                raise fail(line, _too_wide(a))
            raise fail(line, _message(status, token, a, b, mode))
        if final:
            break
        tail = filled - cut
        pos += cut
        if hint is None and block < max_block and pos - pos_start >= 4 * block:
            view.release()
            buf, block = _grown(buf, cut, filled, min(2 * block, max_block))
            view = memoryview(buf)
        else:
            buf[:tail] = buf[cut:filled]
        filled = tail
    view.release()
    del view, buf

    n_rows, nnz = builder.n_rows, builder.nnz
    if n_rows == 0 and not windowed:
        raise DataFormatError(f"{src.name}:1: no data lines (the file is empty or "
                              "has only blank and comment lines)")
    if mode == 2:
        one_based = nnz == 0 or builder.min_idx > 0
    else:
        one_based = mode == 1
    if not one_based and limited and builder.eq_line > 0:
        raise fail(builder.eq_line, _too_wide(width_bound))
    if not one_based and n_features is not None and builder.eq_line > 0:
        raise fail(builder.eq_line,
                   f"feature index {n_features} is past n_features={n_features} "
                   "(0-based indices, since the file has an index 0)")
    if nnz == 0:
        inferred = 0
    else:
        inferred = builder.max_idx if one_based else builder.max_idx + 1
    n_cols = inferred if n_features is None else n_features
    want64 = max(n_cols, n_rows, nnz) > _INT32_MAX
    y, data, indices, indptr, qid = builder.finish(one_based, want64, n_threads)
    del builder
    X = make_csr(data, indices, indptr, (n_rows, n_cols), scipy)
    if query_id:
        return y, X, qid
    return y, X


def write_problem(destination: DataFile, y: ArrayLike, X: MatrixLike, zero_based: bool = False,
                  query_id: ArrayLike | None = None, n_jobs: int | None = None) -> None:
    """Write ``(y, X)`` in LIBSVM format, so that it reads back exactly.

    Parameters
    ----------
    destination : str, path-like or binary file object
        A regular file is written atomically: to a temp file in the same
        directory, then renamed over the target (``.gz``/``.bz2``/``.xz``
        compress by extension); a symlink is followed and a device or FIFO
        is written in place.  A file object is written in place.
    y : array-like of shape (n_samples,)
        Labels (finite).  Integral values are written as integers.
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Dense zeros are omitted; stored entries of a sparse matrix are all
        written (an explicit zero as ``i:0``).
    zero_based : bool, default=False
        Write 0-based indices (LIBSVM tools expect False, 1-based).
    query_id : array-like of int, optional
        Written as ``qid:`` after each label.
    n_jobs : int, optional
        Threads for formatting numbers (the output does not depend on it).

    Notes
    -----
    Each value is written with the fewest of 15, 16 or 17 significant digits
    that read back to the same double (never fewer digits than that), so
    ``read_problem(write_problem(...))`` returns identical bits.
    """
    if not isinstance(zero_based, (bool, np.bool_)):
        raise ValueError(f"zero_based must be True or False, got {zero_based!r}")
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-dimensional, got shape {y.shape}")
    if not (np.issubdtype(y.dtype, np.number) or y.dtype == bool):
        raise ValueError(f"y must be numeric, got dtype {y.dtype}")
    y = np.ascontiguousarray(y, dtype=np.float64)
    if not np.isfinite(y).all():
        raise ValueError("y contains NaN or infinity")
    sp = scipy_sparse()      # writing converts with scipy (reading never needs it)
    sparse = issparse(X)
    if sparse:
        X = sp.csr_matrix(X)
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool) \
                or np.iscomplexobj(X.data):
            raise ValueError(f"X must be real-valued, got dtype {X.dtype}")
        if not np.isfinite(X.data).all():
            raise ValueError("X contains NaN or infinity")
    else:
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-dimensional, got shape {X.shape}")
        if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool) \
                or np.iscomplexobj(X):
            raise ValueError(f"X must be real-valued, got dtype {X.dtype}")
    n = X.shape[0]
    if y.shape[0] != n:
        raise ValueError(f"y has {y.shape[0]} labels but X has {n} rows")
    qid = None
    if query_id is not None:
        qid = np.asarray(query_id)
        if qid.shape != (n,) or not np.issubdtype(qid.dtype, np.integer):
            raise ValueError("query_id must be an integer array with one entry per row")
        qid = np.ascontiguousarray(qid, dtype=np.int64)
    n_threads = resolve_n_jobs(n_jobs)
    add = 0 if zero_based else 1

    def batches():
        if sparse:
            indptr = X.indptr
            r0 = 0
            while r0 < n:
                r1 = int(np.searchsorted(indptr, indptr[r0] + _WRITE_BATCH, "right")) - 1
                r1 = min(max(r1, r0 + 1), n)
                lo, hi = int(indptr[r0]), int(indptr[r1])
                yield (r0, r1, np.asarray(X.data[lo:hi], dtype=np.float64),
                       np.asarray(X.indices[lo:hi], dtype=np.int64),
                       np.asarray(indptr[r0:r1 + 1], dtype=np.int64) - lo)
                r0 = r1
        else:
            step = max(1, _WRITE_BATCH // max(X.shape[1], 1))
            for r0 in range(0, n, step):
                r1 = min(n, r0 + step)
                part = sp.csr_matrix(np.asarray(X[r0:r1], dtype=np.float64))
                if not np.isfinite(part.data).all():
                    raise ValueError("X contains NaN or infinity")
                yield (r0, r1, part.data, part.indices.astype(np.int64),
                       part.indptr.astype(np.int64))

    def emit(out):
        for r0, r1, data, indices, indptr in batches():
            out.write(_writer.format_rows(
                y[r0:r1], None if qid is None else qid[r0:r1],
                np.ascontiguousarray(data), np.ascontiguousarray(indices),
                np.ascontiguousarray(indptr), 0, r1 - r0, add, n_threads))

    if isinstance(destination, (str, bytes, os.PathLike)):
        path = os.fsdecode(os.fspath(destination))
        with output_file(path, binary=True) as raw:
            out = compressor(raw, path)
            if out is None:
                emit(raw)
            else:
                with out:
                    emit(out)
    elif hasattr(destination, "write"):
        emit(destination)
    else:
        raise TypeError("destination must be a path or a binary file object, "
                        f"got {type(destination).__name__}")
