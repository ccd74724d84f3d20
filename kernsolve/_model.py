"""A trained kernel expansion and its LIBSVM-format model file.

The file format is LIBSVM 3.37's (``svm_save_model``/``svm_load_model``):
header lines ``svm_type``, ``kernel_type``, ``degree`` (polynomial only),
``gamma``, ``coef0``, ``nr_class``, ``total_sv``, ``rho``, ``label``,
``probA``, ``probB``, ``prob_density_marks``, ``nr_sv``, then ``SV`` and one
line per support vector: its coefficients, then ``index:value`` pairs
(``0:serial`` for a precomputed kernel).  Every float is written with
``%.17g``, except support-vector values that LIBSVM's ``%.8g`` gives back
exactly (data read from LIBSVM files): those are written as LIBSVM writes
them.  Either way save/load is exact.  LIBSVM's reader rejects unknown header
keywords, so training statistics (``Model.stats``) are not written.
"""
import math
import os
import re
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ._errors import ModelFormatError
from ._fileutil import output_file
from ._constants import (CLASSIFICATION, COEF0_KERNELS, GAMMA_KERNELS,
                         KERNEL_NAMES as KERNELS, ONE_CLASS, POLY, PRECOMPUTED, REGRESSION,
                         SVM_TYPE_NAMES as SVM_TYPES)
from ._model_kind import ModelKind
from ._params import Parameters
from .solvers import model_kinds

N_MARKS = 10  # LIBSVM's number of one-class probability density marks
_MAX_INDEX = 2 ** 31 - 1  # LIBSVM stores feature indices in a C int


@dataclass
class Model:
    """A trained model, with LIBSVM's svm_model fields under readable names.

    Attributes
    ----------
    param : Parameters
        The parameters it was trained with (gamma resolved to its value).
    labels : ndarray of shape (n_classes,)
        Class labels in LIBSVM's order (first appearance, +1/-1 swap rule);
        empty for regression and one-class.
    support_vectors : ndarray or scipy.sparse.csr_matrix, shape (n_SV, n_features)
        Grouped by class in ``labels`` order, as LIBSVM stores them.  Column j
        is feature index j+1 of the LIBSVM file; for a precomputed kernel,
        column 0 holds the serial number (the ``0:`` value) of each SV.
        ``load_model`` gives a CSR matrix.
    support_indices : ndarray of int, shape (n_SV,)
        1-based row numbers of the support vectors in the training data
        (0 when unknown, e.g. a model loaded from a file).
    n_support : ndarray of int, shape (n_classes,)
        Support vectors per class (classification only).
    dual_coef : ndarray of shape (max(n_classes - 1, 1), n_SV)
        LIBSVM's sv_coef.
    rho : ndarray of shape (n_classes * (n_classes - 1) / 2,) or (1,)
        Decision function offsets; decision = sum(coef * K) - rho.
    prob_a, prob_b : ndarray or None
        Platt sigmoid parameters (pairwise), or SVR's Laplace scale in prob_a.
    prob_density_marks : ndarray or None
        One-class probability marks (10 of them).
    stats : dict
        Training statistics: n_iter, objective, n_kernel_evals, seconds, ...
        Not written to the model file.
    """
    param: Parameters
    labels: np.ndarray
    support_vectors: object
    support_indices: np.ndarray
    n_support: np.ndarray
    dual_coef: np.ndarray
    rho: np.ndarray
    prob_a: np.ndarray = None
    prob_b: np.ndarray = None
    prob_density_marks: np.ndarray = None
    stats: dict = field(default_factory=dict)

    @property
    def n_classes(self):
        return max(len(self.labels), 2) if self.param.svm_type in CLASSIFICATION else 2

    @property
    def nr_class(self):
        """LIBSVM's nr_class: number of labels for classification, 2 otherwise."""
        return len(self.labels) if self.param.svm_type in CLASSIFICATION else 2

    @property
    def n_sv(self):
        """Total number of support vectors (LIBSVM's total_sv)."""
        return int(self.support_vectors.shape[0])

    @property
    def n_features(self):
        """Width of the support-vector matrix (largest feature index in the SVs)."""
        return int(self.support_vectors.shape[1])

    @property
    def is_probability_model(self):
        """True when the model can give probabilities (LIBSVM's svm_check_probability_model)."""
        s = self.param.svm_type
        if s in CLASSIFICATION:
            return self.prob_a is not None and self.prob_b is not None
        if s in REGRESSION:
            return self.prob_a is not None
        return self.prob_density_marks is not None

    def __repr__(self):
        p = self.param
        parts = [SVM_TYPES[int(p.svm_type)], KERNELS[int(p.kernel_type)]]
        if int(p.kernel_type) in GAMMA_KERNELS and p.gamma is not None:
            parts.append("gamma=%g" % float(p.gamma))
        if int(p.svm_type) in CLASSIFICATION:
            parts.append("labels=[%s]" % ", ".join(_label_text(v) for v in np.asarray(self.labels)))
        parts.append("n_sv=%d" % self.n_sv)
        if self.is_probability_model:
            parts.append("probability")
        return "Model(" + ", ".join(parts) + ")"

    def save(self, path):
        """Write the model in LIBSVM's format (see :func:`save_model`)."""
        save_model(path, self)

    @classmethod
    def load(cls, path):
        """Read a LIBSVM-format model file (see :func:`load_model`)."""
        return load_model(path)


# ---------------------------------------------------------------- writing

def _g(x):
    return "%.17g" % x


def _label_text(v):
    v = float(v)
    if v.is_integer() and abs(v) <= _MAX_INDEX:
        return "%d" % int(v)
    return _g(v)


def _check_model(model):
    """Validate the shapes before writing; raise ValueError naming the field."""
    if not isinstance(model, Model):
        raise ValueError(f"expected a Model, got {type(model).__name__}")
    param = model.param
    s, t = int(param.svm_type), int(param.kernel_type)
    if not 0 <= s < len(SVM_TYPES):
        raise ValueError(f"model: unknown svm type {s}")
    if not 0 <= t < len(KERNELS):
        raise ValueError(f"model: unknown kernel type {t}")
    if t in GAMMA_KERNELS and param.gamma is None:
        raise ValueError("model: param.gamma is None; training must resolve it")
    sv = model.support_vectors
    if sv is None or len(getattr(sv, "shape", ())) != 2:
        raise ValueError("model: support_vectors must be a 2-D array or CSR matrix")
    l = sv.shape[0]
    nr_class = model.nr_class
    classification = s in CLASSIFICATION
    if classification and nr_class < 1:
        raise ValueError("model: a classification model needs at least one label")
    m = max(nr_class - 1, 1) if not classification else nr_class - 1
    coef = np.asarray(model.dual_coef, dtype=np.float64)
    if coef.ndim == 1:
        coef = coef.reshape(1, -1)
    if l and coef.shape != (m, l):
        raise ValueError(f"model: dual_coef has shape {coef.shape}, expected {(m, l)}")
    n_pairs = nr_class * (nr_class - 1) // 2
    rho = np.atleast_1d(np.asarray(model.rho, dtype=np.float64))
    if rho.shape != (n_pairs,):
        raise ValueError(f"model: rho has {rho.size} values, expected {n_pairs}")
    if classification:
        ns = np.asarray(model.n_support, dtype=np.int64).ravel()
        if ns.shape != (nr_class,) or ns.sum() != l or (ns < 0).any():
            raise ValueError(f"model: n_support {ns.tolist()} does not match "
                             f"{nr_class} classes and {l} support vectors")
    for name, arr, want in (("prob_a", model.prob_a, n_pairs), ("prob_b", model.prob_b, n_pairs),
                            ("prob_density_marks", model.prob_density_marks, N_MARKS)):
        if arr is not None and np.asarray(arr).size != want:
            raise ValueError(f"model: {name} has {np.asarray(arr).size} values, expected {want}")
        if arr is not None and not np.all(np.isfinite(np.asarray(arr, dtype=np.float64))):
            raise ValueError(f"model: {name} has non-finite values")
    if not (np.all(np.isfinite(coef)) and np.all(np.isfinite(rho))):
        raise ValueError("model: dual_coef or rho has non-finite values")
    if classification and not np.all(np.isfinite(np.asarray(model.labels, dtype=np.float64))):
        raise ValueError("model: labels must be finite numbers")
    for name in ("gamma", "coef0"):
        v = getattr(param, name)
        if v is not None and not math.isfinite(float(v)):
            raise ValueError(f"model: param.{name} is not finite")
    return coef, rho


def _format_model(model):
    """The model file's text."""
    coef, rho = _check_model(model)
    param = model.param
    s, t = int(param.svm_type), int(param.kernel_type)
    nr_class = model.nr_class
    lines = [f"svm_type {SVM_TYPES[s]}", f"kernel_type {KERNELS[t]}"]
    if t == POLY:
        lines.append("degree %d" % int(param.degree))
    if t in GAMMA_KERNELS:
        lines.append("gamma " + _g(param.gamma))
    if t in COEF0_KERNELS:
        lines.append("coef0 " + _g(param.coef0))
    sv = model.support_vectors
    l = sv.shape[0]
    lines.append("nr_class %d" % nr_class)
    lines.append("total_sv %d" % l)
    lines.append(" ".join(["rho"] + [_g(v) for v in rho]))
    if s in CLASSIFICATION:
        lines.append(" ".join(["label"] + [_label_text(v) for v in np.asarray(model.labels)]))
    if model.prob_a is not None:
        lines.append(" ".join(["probA"] + [_g(v) for v in np.ravel(model.prob_a)]))
    if model.prob_b is not None:
        lines.append(" ".join(["probB"] + [_g(v) for v in np.ravel(model.prob_b)]))
    if model.prob_density_marks is not None:
        lines.append(" ".join(["prob_density_marks"] +
                              [_g(v) for v in np.ravel(model.prob_density_marks)]))
    if s in CLASSIFICATION:
        lines.append(" ".join(["nr_sv"] + ["%d" % v for v in np.ravel(model.n_support)]))
    lines.append("SV")
    if t == PRECOMPUTED:
        if sv.shape[1] == 0:
            col0 = np.zeros(l)
        elif sp.issparse(sv):
            col0 = sp.csr_matrix(sv)[:, [0]].toarray().ravel()
        else:
            col0 = np.asarray(sv, dtype=np.float64)[:, 0]
        if not np.all(np.isfinite(col0)):
            raise ValueError("model: non-finite serial number of a precomputed-kernel SV")
        for i in range(l):
            parts = [_g(c) for c in coef[:, i]] + ["0:%d" % int(col0[i])]
            lines.append(" ".join(parts) + " ")
        return "\n".join(lines) + "\n"
    csr = sp.csr_matrix(sv, dtype=np.float64)
    if not csr.has_canonical_format:
        csr = csr.copy()
        csr.sum_duplicates()  # sorted, unique indices (explicit zeros are kept and written)
    bad = ~np.isfinite(csr.data)
    if bad.any():
        row = int(np.searchsorted(csr.indptr, np.flatnonzero(bad)[0], side="right"))
        raise ValueError(f"model: support vector {row} has non-finite values")
    head = "\n".join(lines) + "\n"
    return head + "".join(_format_sv_rows(coef, csr))


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


def _format_sv_rows(coef, csr, rows_per_chunk=2000):
    """The SV lines, chunk by chunk: one %-format over many rows (no per-value calls)."""
    m, l = coef.shape
    indptr = csr.indptr.astype(np.int64)
    indices = csr.indices.astype(np.float64) + 1.0  # %d formats whole floats exactly
    data = csr.data
    templates = {}
    for a in range(0, l, rows_per_chunk):
        b = min(l, a + rows_per_chunk)
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
            out[pos] = indices[lo:hi]
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


def save_model(path, model):
    """Write ``model`` to ``path`` in LIBSVM's model file format.

    A regular file is written to a temporary file in the same directory and
    renamed over ``path``, so an interrupted save never leaves half a model;
    a symlink is followed, a device or FIFO is written in place (see
    ``doc/cli.md``, "Output paths").  LIBSVM (``svm_load_model``) reads the result;
    ``load_model(path)`` gives back the same numbers exactly.

    Raises
    ------
    ValueError
        The model's arrays are inconsistent (named in the message).
    OSError
        The file cannot be written.
    """
    if isinstance(model, ModelKind):      # DSG, EigenPro, ...: their own format
        model.save(path)
        return
    text = _format_model(model)
    with output_file(path) as f:
        f.write(text)


# ---------------------------------------------------------------- reading

class _Reader:
    def __init__(self, name):
        self.name = name

    def fail(self, lineno, problem):
        raise ModelFormatError(f"{self.name}:{lineno}: {problem}")


_FLOAT_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\Z")
_INT_RE = re.compile(r"[+-]?\d+\Z")


def _float(reader, lineno, text, what):
    if not _FLOAT_RE.match(text):
        low = text.lower().lstrip("+-")
        if low in ("inf", "infinity", "nan"):
            reader.fail(lineno, f"{what}: {text[:40]!r} is not a finite number")
        reader.fail(lineno, f"{what}: {text[:40]!r} is not a number")
    v = float(text)
    if not math.isfinite(v):
        reader.fail(lineno, f"{what}: {text[:40]!r} is not a finite number")
    return v


def _int(reader, lineno, text, what):
    if not _INT_RE.match(text) or len(text) > 20:
        reader.fail(lineno, f"{what}: {text[:40]!r} is not an integer")
    return int(text)


_HEADER_KEYS = ("svm_type", "kernel_type", "degree", "gamma", "coef0", "nr_class",
                "total_sv", "rho", "label", "probA", "probB", "prob_density_marks", "nr_sv")


def load_model(path):
    """Read a LIBSVM-format model file (LIBSVM's own or kernsolve's).

    Returns
    -------
    Model
        Support vectors as a CSR matrix (column j = feature index j+1; for a
        precomputed kernel column 0 holds the serial numbers).

    Raises
    ------
    ModelFormatError
        ``"<file>:<line>: <problem>"`` for anything corrupt, truncated or
        inconsistent (never a crash).
    OSError
        The file cannot be opened.
    """
    name = os.fspath(path) if not hasattr(path, "read") else getattr(path, "name", "<model>")
    if hasattr(path, "read"):
        raw = path.read()
    else:
        with open(path, "rb") as f:
            raw = f.read()
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "replace")
    r = _Reader(name)
    if b"\0" in raw:
        lineno = raw[:raw.index(b"\0")].count(b"\n") + 1
        r.fail(lineno, "binary data (NUL byte) in a model file")
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError as exc:
        lineno = raw[:exc.start].count(b"\n") + 1
        r.fail(lineno, "non-ASCII byte in a model file")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
    if not lines:
        r.fail(1, "empty model file")
    first = lines[0].split()
    if len(first) == 2 and first[0] == MODEL_MAGIC:
        return _load_other_kind(first[1], lines, r)

    header = {}
    where = {}
    sv_line = None
    for k, line in enumerate(lines):
        lineno = k + 1
        tokens = line.split()
        if not tokens:
            continue  # LIBSVM's reader skips blank space between header items
        key = tokens[0]
        if key == "SV":
            if len(tokens) != 1:
                r.fail(lineno, "unexpected text after 'SV'")
            sv_line = k
            break
        if key not in _HEADER_KEYS:
            r.fail(lineno, f"unknown keyword {key[:40]!r} in the model header")
        if key in header:
            r.fail(lineno, f"{key} given twice")
        header[key] = tokens[1:]
        where[key] = lineno
    if sv_line is None:
        r.fail(len(lines), "truncated model file: no 'SV' line")

    def need(key):
        if key not in header:
            r.fail(sv_line + 1, f"missing '{key}' line in the model header")
        return header[key]

    def one(key):
        vals = need(key)
        if len(vals) != 1:
            r.fail(where[key], f"{key} takes one value, got {len(vals)}")
        return vals[0]

    svm_name = one("svm_type")
    if svm_name not in SVM_TYPES:
        r.fail(where["svm_type"], f"unknown svm_type {svm_name[:40]!r}")
    s = SVM_TYPES.index(svm_name)
    kernel_name = one("kernel_type")
    if kernel_name not in KERNELS:
        r.fail(where["kernel_type"], f"unknown kernel_type {kernel_name[:40]!r}")
    t = KERNELS.index(kernel_name)
    param = Parameters(svm_type=s, kernel_type=t)
    if t == POLY:
        d = _int(r, where.get("degree", sv_line + 1), one("degree"), "degree")
        if d < 0:
            r.fail(where["degree"], f"degree must be >= 0, got {d}")
        param.degree = d
    elif "degree" in header:
        param.degree = _int(r, where["degree"], one("degree"), "degree")
    if t in GAMMA_KERNELS:
        param.gamma = _float(r, where.get("gamma", sv_line + 1), one("gamma"), "gamma")
    elif "gamma" in header:
        param.gamma = _float(r, where["gamma"], one("gamma"), "gamma")
    if t in COEF0_KERNELS:
        param.coef0 = _float(r, where.get("coef0", sv_line + 1), one("coef0"), "coef0")
    elif "coef0" in header:
        param.coef0 = _float(r, where["coef0"], one("coef0"), "coef0")

    nr_class = _int(r, where.get("nr_class", sv_line + 1), one("nr_class"), "nr_class")
    classification = s in CLASSIFICATION
    if classification and nr_class < 1:
        r.fail(where["nr_class"], f"nr_class must be >= 1, got {nr_class}")
    if not classification and nr_class != 2:
        r.fail(where["nr_class"], f"nr_class must be 2 for {svm_name}, got {nr_class}")
    if nr_class > 65536:
        r.fail(where["nr_class"], f"nr_class {nr_class} is implausibly large")
    l = _int(r, where.get("total_sv", sv_line + 1), one("total_sv"), "total_sv")
    if l < 0:
        r.fail(where["total_sv"], f"total_sv must be >= 0, got {l}")
    n_pairs = nr_class * (nr_class - 1) // 2

    def floats(key, count):
        vals = need(key)
        if len(vals) != count:
            r.fail(where[key], f"{key} needs {count} values, got {len(vals)}")
        return np.array([_float(r, where[key], v, key) for v in vals], dtype=np.float64)

    rho = floats("rho", n_pairs)
    labels = np.empty(0, dtype=np.float64)
    n_support = np.empty(0, dtype=np.int64)
    if classification:
        vals = need("label")
        if len(vals) != nr_class:
            r.fail(where["label"], f"label needs {nr_class} values, got {len(vals)}")
        labels = np.array([_float(r, where["label"], v, "label") for v in vals])
        if len(np.unique(labels)) != nr_class:
            r.fail(where["label"], "duplicate class labels")
        vals = need("nr_sv")
        if len(vals) != nr_class:
            r.fail(where["nr_sv"], f"nr_sv needs {nr_class} values, got {len(vals)}")
        n_support = np.array([_int(r, where["nr_sv"], v, "nr_sv") for v in vals], dtype=np.int64)
        if (n_support < 0).any():
            r.fail(where["nr_sv"], "nr_sv values must be >= 0")
        if int(n_support.sum()) != l:
            r.fail(where["nr_sv"], f"nr_sv adds up to {int(n_support.sum())}, "
                                   f"but total_sv is {l}")
    else:
        for key in ("label", "nr_sv"):
            if key in header:
                r.fail(where[key], f"'{key}' is not allowed for {svm_name}")
    prob_a = prob_b = marks = None
    if "probA" in header:
        if s == ONE_CLASS:
            r.fail(where["probA"], "probA is not allowed for one_class")
        prob_a = floats("probA", n_pairs)
    if "probB" in header:
        if s not in CLASSIFICATION:
            r.fail(where["probB"], f"probB is not allowed for {svm_name}")
        prob_b = floats("probB", n_pairs)
    if "prob_density_marks" in header:
        if s != ONE_CLASS:
            r.fail(where["prob_density_marks"], "prob_density_marks is only for one_class")
        marks = floats("prob_density_marks", N_MARKS)

    # support vectors
    m = nr_class - 1 if classification else 1
    sv, coef = read_vector_lines(r, lines, sv_line, l, m, t, "support vector")
    return Model(param=param, labels=labels, support_vectors=sv,
                 support_indices=np.zeros(l, dtype=np.int64), n_support=n_support,
                 dual_coef=coef, rho=rho, prob_a=prob_a, prob_b=prob_b,
                 prob_density_marks=marks)


def read_vector_lines(r, lines, sv_line, l, m, t, what):
    """The ``l`` lines after the ``SV`` line (index ``sv_line``): ``m``
    coefficients then ``index:value`` pairs each, nothing but blank lines after
    them; ``what`` names a line in the messages.  Returns (rows, coef)."""
    body = lines[sv_line + 1:]
    if len(body) < l:
        r.fail(len(lines) + 1, f"truncated model file: total_sv is {l} but only "
                               f"{len(body)} {what} lines follow")
    for k in range(l, len(body)):
        if body[k].strip():
            r.fail(sv_line + 2 + k, f"unexpected text after the {l} {what}s")
    return _read_support_vectors(r, body[:l], sv_line + 2, m, t)


def _read_support_vectors(r, lines, first_lineno, m, t, bulk=True):
    """The SV section -> (CSR support vectors, (m, l) coefficients).

    Valid files (nearly all) are converted in bulk; any problem sends the
    reader through the lines one by one, which names the line and the problem.
    """
    l = len(lines)
    if bulk and t != PRECOMPUTED:
        out = _bulk_support_vectors(lines, m)
        if out is not None:
            return out
    coef = np.empty((m, l), dtype=np.float64)
    indptr = np.zeros(l + 1, dtype=np.int64)
    all_idx, all_val = [], []
    width = 1 if t == PRECOMPUTED else 0
    for i, line in enumerate(lines):
        lineno = first_lineno + i
        tokens = line.split()
        if len(tokens) < m:
            r.fail(lineno, f"expected {m} coefficient(s), got {len(tokens)}")
        for c in range(m):
            coef[c, i] = _float(r, lineno, tokens[c], "coefficient")
        pairs = tokens[m:]
        idx, val = _slow_pairs(r, lineno, pairs, t)
        if t == PRECOMPUTED and len(pairs) != 1:
            r.fail(lineno, "a precomputed-kernel support vector needs its '0:serial' pair")
        if len(idx):
            width = max(width, int(idx[-1]) + 1)
        all_idx.append(idx)
        all_val.append(val)
        indptr[i + 1] = indptr[i] + len(idx)
    indices = np.concatenate(all_idx) if all_idx else np.empty(0, np.int64)
    data = np.concatenate(all_val) if all_val else np.empty(0, np.float64)
    return _csr(data, indices, indptr, l, width), coef


def _csr(data, indices, indptr, l, width):
    index_dtype = np.int32 if max(width, len(data)) < 2 ** 31 else np.int64
    return sp.csr_matrix((data, indices.astype(index_dtype), indptr.astype(index_dtype)),
                         shape=(l, width))


def _bulk_support_vectors(lines, m):
    """All SV lines at once, or None if anything at all is off."""
    l = len(lines)
    coef_tokens, pair_tokens = [], []
    counts = np.empty(l, dtype=np.int64)
    for i, line in enumerate(lines):
        tokens = line.split()
        if len(tokens) < m:
            return None
        coef_tokens.extend(tokens[:m])
        pair_tokens.extend(tokens[m:])
        counts[i] = len(tokens) - m
    if m and l:
        if "".join(coef_tokens).translate(_NOT_NUM):
            return None
        try:
            coef = np.array(coef_tokens, dtype=np.float64).reshape(l, m).T.copy()
        except ValueError:
            return None
        if not np.all(np.isfinite(coef)):
            return None
    else:
        coef = np.empty((m, l), dtype=np.float64)
    pairs = _fast_pairs(pair_tokens)
    if pairs is None:
        return None
    idx, val = pairs
    indptr = np.zeros(l + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    if len(idx):
        if idx.min() < 1 or idx.max() > _MAX_INDEX:
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
    if joined.count(":") != n:
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


def _slow_pairs(r, lineno, pairs, t):
    idx = np.empty(len(pairs), dtype=np.int64)
    val = np.empty(len(pairs), dtype=np.float64)
    prev = -1
    for q, tok in enumerate(pairs):
        a, colon, b = tok.partition(":")
        if not colon:
            r.fail(lineno, f"expected index:value, got {tok[:40]!r}")
        j = _int(r, lineno, a, "feature index")
        v = _float(r, lineno, b, "feature value")
        if j > _MAX_INDEX:
            r.fail(lineno, f"feature index {j} is too large")
        if t == PRECOMPUTED:
            if q > 0 or j != 0:
                r.fail(lineno, "a precomputed-kernel support vector is one '0:serial' pair")
            if v < 0 or not float(v).is_integer():
                r.fail(lineno, f"serial number must be a non-negative integer, got {b!r}")
        else:
            if j < 1:
                r.fail(lineno, f"feature indices start at 1, got {j}")
            if j <= prev:
                r.fail(lineno, f"feature indices must be strictly increasing ({j} after {prev})")
            prev = j
            j -= 1
        idx[q] = j
        val[q] = v
    return idx, val


# ------------------------------------------------- models LIBSVM cannot hold
# Solvers whose models are not kernel expansions in LIBSVM's layout (DSG's
# random-feature blocks, ...) write files whose first line is
# "kernsolve_model <kind>"; each solver's spec names its kind and the class
# that reads it (``model_kind``, ``model``): a ModelKind (kernsolve._model_kind)
# whose classmethod ``from_lines(lines, fail)`` reads the file
# (``fail(lineno, problem)`` raises ModelFormatError).  Imported at first use:
# loading a LIBSVM model needs none.
MODEL_MAGIC = "kernsolve_model"


def _load_other_kind(kind, lines, reader):
    kinds = model_kinds()
    if kind not in kinds:
        reader.fail(1, f"unknown kernsolve model kind {kind[:40]!r} "
                       f"(known: {', '.join(sorted(kinds))})")
    return kinds[kind].resolve().from_lines(lines, reader.fail)
