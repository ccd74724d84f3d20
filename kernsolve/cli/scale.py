"""``kernsolve-scale``: LIBSVM's svm-scale, with the same options, output and range files.

Each feature is mapped linearly from [min, max] (over the data, or from a
range file given with ``-r``) to [lower, upper]; optionally the target too.
The output goes to stdout exactly as svm-scale writes it: the target with
``%.17g``, then ``index:value`` pairs with ``%g`` for every feature whose scaled
value is non-zero (zeros that scale to a non-zero value become explicit, as in
svm-scale), each followed by a space. Features with min == max are dropped.
"""
import math
import os
import sys

import numpy as np
import scipy.sparse as sp

from .._fileutil import output_file
from .._model_text import MAX_INDEX
from .._sparse import row_block
from ._common import (CommandError, UsageError, check_input_path,
                      end_process, parse_float, read_data, run, split_options,
                      writing_stdout)

PROG = "kernsolve-scale"

USAGE = """\
Usage: kernsolve-scale [options] data_filename
options:
-l lower : x scaling lower limit (default -1)
-u upper : x scaling upper limit (default +1)
-y y_lower y_upper : y scaling limits (default: no y scaling)
-s save_filename : save scaling parameters to save_filename
-r restore_filename : restore scaling parameters from restore_filename
kernsolve options:
--help, -h : print this usage; --version : print the version
"""

_DBL_MAX = sys.float_info.max
_ROWS_PER_BLOCK = 2048


class RangeFile:
    """The contents of an svm-scale range file.

    ``y`` is ``(y_lower, y_upper, y_min, y_max)`` or None; ``x`` is
    ``(lower, upper)`` or None; ``features`` maps a 1-based index to
    ``(min, max)``.
    """

    def __init__(self, y=None, x=None, features=None):
        self.y = y
        self.x = x
        self.features = dict(features or {})

    @property
    def max_index(self):
        return max(self.features, default=0)


def read_range_file(path):
    """Parse a range file written by svm-scale ``-s`` (or by this command).

    Layout: an optional ``y`` section (a line ``y``, then ``y_lower y_upper``,
    then ``y_min y_max``), then an ``x`` section (a line ``x``, then
    ``lower upper``, then one ``index min max`` line per feature).
    """
    try:
        with open(path, "r", encoding="ascii", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as exc:
        raise CommandError(f"can't open file {path}: {exc.strerror or exc}") from None
    pos = 0

    def bad(what):
        return CommandError(f"{path}:{pos + 1}: failed to read scaling parameters: {what}")

    def numbers(count):
        nonlocal pos
        if pos >= len(lines):
            pos = len(lines) - 1 if lines else 0
            raise bad(f"expected {count} numbers, found the end of the file")
        fields = lines[pos].split()
        if len(fields) != count:
            raise bad(f"expected {count} numbers, found {lines[pos]!r}")
        try:
            values = [float(v) for v in fields]
        except ValueError:
            raise bad(f"expected {count} numbers, found {lines[pos]!r}") from None
        finite(fields, values)
        pos += 1
        return values

    def finite(fields, values):
        for text, v in zip(fields, values):
            if not math.isfinite(v):
                raise bad(f"{text[:40]!r} is not a finite number")

    result = RangeFile()
    while pos < len(lines) and not lines[pos].strip():
        pos += 1
    if pos < len(lines) and lines[pos].strip() == "y":
        pos += 1
        y_lower, y_upper = numbers(2)
        y_min, y_max = numbers(2)
        result.y = (y_lower, y_upper, y_min, y_max)
    if pos < len(lines) and lines[pos].strip() == "x":
        pos += 1
        lower, upper = numbers(2)
        result.x = (lower, upper)
        while pos < len(lines):
            if not lines[pos].strip():
                pos += 1
                continue
            fields = lines[pos].split()
            try:
                index = int(fields[0])
                fmin, fmax = float(fields[1]), float(fields[2])
                if len(fields) != 3:
                    raise ValueError
            except (ValueError, IndexError):
                raise bad(f"expected 'index min max', found {lines[pos]!r}") from None
            if index < 1:
                raise bad(f"feature index {index} is smaller than 1")
            if index > MAX_INDEX:
                raise bad(f"feature index {fields[0][:40]} is too large: feature indices "
                          f"are 32-bit integers, as in LIBSVM (at most {MAX_INDEX})")
            finite(fields[1:], (fmin, fmax))
            result.features[index] = (fmin, fmax)
            pos += 1
    elif pos < len(lines):
        raise bad(f"expected a line 'x' or 'y', found {lines[pos]!r}")
    if result.y is None and result.x is None:
        raise bad("the file has neither an 'x' nor a 'y' section")
    return result


def format_range_file(lower, upper, feature_min, feature_max, y_params=None):
    """The text svm-scale ``-s`` writes (``%.17g``; constant features left out)."""
    out = []
    if y_params is not None:
        y_lower, y_upper, y_min, y_max = y_params
        out.append("y\n%.17g %.17g\n%.17g %.17g\n" % (y_lower, y_upper, y_min, y_max))
    out.append("x\n%.17g %.17g\n" % (lower, upper))
    for i in range(len(feature_min)):
        if feature_min[i] != feature_max[i]:
            out.append("%d %.17g %.17g\n" % (i + 1, feature_min[i], feature_max[i]))
    return "".join(out)


def column_min_max(X):
    """Per-column min and max of a CSR matrix, counting the implicit zeros.

    svm-scale treats an absent feature as the value 0, so a column that is
    not stored in every row has 0 in its range.
    """
    n_rows, n_cols = X.shape
    fmin = np.full(n_cols, _DBL_MAX)
    fmax = np.full(n_cols, -_DBL_MAX)
    if n_rows == 0 or n_cols == 0:
        return fmin, fmax
    csc = X.tocsc()
    csc.sort_indices()
    counts = np.diff(csc.indptr)
    stored = counts > 0
    if csc.nnz:
        starts = csc.indptr[:-1][stored]
        fmin[stored] = np.minimum.reduceat(csc.data, starts)
        fmax[stored] = np.maximum.reduceat(csc.data, starts)
    has_zero = counts < n_rows
    fmin[has_zero] = np.minimum(fmin[has_zero], 0.0)
    fmax[has_zero] = np.maximum(fmax[has_zero], 0.0)
    return fmin, fmax


def scale_values(values, fmin, fmax, lower, upper):
    """svm-scale's per-value rule, elementwise (same operations, same bits).

    The minimum maps to ``lower`` and the maximum to ``upper`` exactly; the
    rest by ``lower + (upper-lower)*(v-min)/(max-min)`` in that order.
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = lower + (upper - lower) * (values - fmin) / (fmax - fmin)
    out = np.where(values == fmax, upper, out)
    out = np.where(values == fmin, lower, out)
    return out


def scale_target(y, y_params):
    """svm-scale's target rule (y_min -> y_lower, y_max -> y_upper)."""
    y_lower, y_upper, y_min, y_max = y_params
    return scale_values(np.asarray(y, dtype=np.float64), y_min, y_max, y_lower, y_upper)


def iter_scaled_lines(y, X, fmin, fmax, lower, upper, y_params=None, counter=None):
    """Yield svm-scale's output, one block of lines at a time.

    ``X`` is CSR with column ``j`` holding feature ``j + 1`` and at least as
    many columns as ``fmin``. ``counter`` (a one-element list), if given,
    receives the number of non-zeros written.
    """
    n_rows = X.shape[0]
    n_cols = len(fmin)
    active = fmin != fmax
    active_cols = np.flatnonzero(active)
    fmin_a, fmax_a = fmin[active_cols], fmax[active_cols]
    # the scaled value of an absent feature is the same in every row
    zero_scaled = scale_values(np.zeros(len(active_cols)), fmin_a, fmax_a, lower, upper)
    prefixes = [f"{j + 1}:" for j in active_cols]
    targets = y if y_params is None else scale_target(y, y_params)
    written = 0
    for start in range(0, n_rows, _ROWS_PER_BLOCK):
        stop = min(start + _ROWS_PER_BLOCK, n_rows)
        block = row_block(X, start, stop)
        if block.shape[1] > n_cols:
            block = block[:, :n_cols]
        elif block.shape[1] < n_cols:
            block = sp.csr_matrix((block.data, block.indices, block.indptr),
                                  shape=(block.shape[0], n_cols))
        dense = np.empty((stop - start, len(active_cols)))
        dense[:] = zero_scaled
        block = block.tocoo()
        col_pos = np.full(n_cols, -1, dtype=np.intp)
        col_pos[active_cols] = np.arange(len(active_cols))
        keep = col_pos[block.col] >= 0
        rows, cols, vals = block.row[keep], col_pos[block.col[keep]], block.data[keep]
        dense[rows, cols] = scale_values(vals, fmin_a[cols], fmax_a[cols], lower, upper)
        lines = []
        for r in range(stop - start):
            row = dense[r]
            nz = np.flatnonzero(row)
            written += len(nz)
            parts = ["%.17g " % targets[start + r]]
            parts.extend(f"{prefixes[k]}{v:g} " for k, v in zip(nz.tolist(), row[nz].tolist()))
            parts.append("\n")
            lines.append("".join(parts))
        yield "".join(lines)
    if counter is not None:
        counter[0] = written


def _read_data(path):
    check_input_path(path, "file")
    y, X = read_data(path, scipy=True)
    return np.asarray(y, dtype=np.float64), sp.csr_matrix(X)


def main(argv):
    options, positional = split_options(argv, n_values={"-y": 2})
    lower, upper = -1.0, 1.0
    y_scaling = None
    save_path = restore_path = None
    for name, values in options:
        if name == "-l":
            lower = parse_float(name, values[0])
        elif name == "-u":
            upper = parse_float(name, values[0])
        elif name == "-y":
            y_scaling = (parse_float(name, values[0]), parse_float(name, values[1]))
        elif name == "-s":
            save_path = values[0]
        elif name == "-r":
            restore_path = values[0]
        else:
            raise UsageError(f"unknown option: {name}")
    # svm-scale's words, after the options they are about
    if not upper > lower:
        raise CommandError(f"-l {lower:g} -u {upper:g}: inconsistent lower/upper specification")
    if y_scaling is not None and not y_scaling[1] > y_scaling[0]:
        raise CommandError(f"-y {y_scaling[0]:g} {y_scaling[1]:g}: inconsistent lower/upper "
                           "specification")
    if restore_path is not None and save_path is not None:
        raise CommandError("cannot use -r and -s simultaneously")
    if len(positional) != 1:
        raise UsageError("expected one data file" if not positional
                         else f"unexpected arguments after the data file: {' '.join(positional[1:])}")
    data_path = positional[0]
    if save_path is not None and os.path.isdir(save_path):
        raise CommandError(f"can't open file {save_path}: Is a directory")

    restore = read_range_file(restore_path) if restore_path is not None else None
    y, X = _read_data(data_path)
    n_rows = X.shape[0]
    n_data_cols = X.shape[1]
    n_cols = max(n_data_cols, restore.max_index if restore is not None else 0)
    if n_cols > n_data_cols:
        X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(n_rows, n_cols))
    fmin, fmax = column_min_max(X)
    num_nonzeros = X.nnz
    if n_rows:
        y_min, y_max = float(np.min(y)), float(np.max(y))
    else:
        y_min, y_max = _DBL_MAX, -_DBL_MAX
    y_params = None if y_scaling is None else (y_scaling[0], y_scaling[1], y_min, y_max)

    warnings = []
    if restore is not None:
        if restore.y is not None:
            y_params = restore.y
        if restore.x is not None:
            lower, upper = restore.x
            for j in range(n_cols):
                if j + 1 in restore.features:
                    fmin[j], fmax[j] = restore.features[j + 1]
                elif fmin[j] != fmax[j]:
                    warnings.append(
                        f"WARNING: feature index {j + 1} appeared in file {data_path} was not "
                        f"seen in the scaling factor file {restore_path}. "
                        "The feature is scaled to 0.\n")
                    fmin[j] = fmax[j] = 0.0
    for w in warnings:
        sys.stderr.write(w)

    if save_path is not None:
        try:
            with output_file(save_path) as f:
                f.write(format_range_file(lower, upper, fmin, fmax, y_params))
        except OSError as exc:
            raise CommandError(f"can't open file {save_path}: {exc.strerror or exc}") from None

    counter = [0]
    with writing_stdout() as out:
        for text in iter_scaled_lines(y, X, fmin, fmax, lower, upper, y_params, counter):
            out.write(text)
        out.flush()
    if counter[0] > num_nonzeros:
        sys.stderr.write(
            f"WARNING: original #nonzeros {num_nonzeros}\n"
            f"       > new      #nonzeros {counter[0]}\n"
            "If feature values are non-negative and sparse, use -l 0 rather than "
            "the default -l -1\n")
    return 0


def cli(argv=None):
    """The command in this process: returns its exit status."""
    return run(main, argv, PROG, USAGE)


def console():
    """Console-script entry point: the command, then the process's end."""
    end_process(cli())


if __name__ == "__main__":
    console()
