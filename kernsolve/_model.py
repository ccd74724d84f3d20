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

This module owns the header and the ``Model`` class; the support-vector lines
and the number formats are ``kernsolve._model_text`` (shared with EigenPro's
model files).
"""
import math
import os
from dataclasses import dataclass, field

import numpy as np

from ._errors import ModelFormatError
from ._fileutil import output_file
from ._constants import (CLASSIFICATION, COEF0_KERNELS, GAMMA_KERNELS,
                         KERNEL_NAMES as KERNELS, ONE_CLASS, POLY, PRECOMPUTED, REGRESSION,
                         SVM_TYPE_NAMES as SVM_TYPES)
from ._model_kind import CallableFlag, ModelKind
from ._model_text import (ModelHeader, float_text, format_sv_rows, label_text, parse_int,
                          read_vector_bytes, read_vector_lines, split_lines)
from ._params import Parameters
from ._sparse import as_csr, dense_columns, to_scipy
from ._threads import resolve_n_jobs
from ._typing import ModelFile, StrPath
from .solvers import model_kinds

N_MARKS = 10  # LIBSVM's number of one-class probability density marks


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
    prob_a: np.ndarray | None = None
    prob_b: np.ndarray | None = None
    prob_density_marks: np.ndarray | None = None
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
        """True when the model can give probabilities (LIBSVM's svm_check_probability_model).

        A :class:`~kernsolve._model_kind.CallableFlag`: ``m.is_probability_model``
        and libsvm's spelling ``m.is_probability_model()`` both work."""
        s = self.param.svm_type
        if s in CLASSIFICATION:
            flag = self.prob_a is not None and self.prob_b is not None
        elif s in REGRESSION:
            flag = self.prob_a is not None
        else:
            flag = self.prob_density_marks is not None
        return CallableFlag(flag)

    def __repr__(self):
        p = self.param
        parts = [SVM_TYPES[int(p.svm_type)], KERNELS[int(p.kernel_type)]]
        if int(p.kernel_type) in GAMMA_KERNELS and p.gamma is not None:
            parts.append("gamma=%g" % float(p.gamma))
        if int(p.svm_type) in CLASSIFICATION:
            parts.append("labels=[%s]" % ", ".join(label_text(v) for v in np.asarray(self.labels)))
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
    # rho may be infinite, as LIBSVM trains and writes it: a one-class SVM with
    # -n 1 has every coefficient at its bound and rho = inf (predicts -1)
    if not (np.all(np.isfinite(coef)) and not np.any(np.isnan(rho))):
        raise ValueError("model: dual_coef has non-finite values or rho is NaN")
    if classification and not np.all(np.isfinite(np.asarray(model.labels, dtype=np.float64))):
        raise ValueError("model: labels must be finite numbers")
    for name in ("gamma", "coef0"):
        v = getattr(param, name)
        if v is not None and not math.isfinite(float(v)):
            raise ValueError(f"model: param.{name} is not finite")
    return coef, rho


def _format_model(model):
    """The model file's text as (header, iterable of the SV lines' texts): the
    checks are made here, before anything is written, and the SV lines come
    in bounded chunks (``format_sv_rows``) for the writer to write one by one,
    never the whole text in memory."""
    coef, rho = _check_model(model)
    param = model.param
    s, t = int(param.svm_type), int(param.kernel_type)
    nr_class = model.nr_class
    lines = [f"svm_type {SVM_TYPES[s]}", f"kernel_type {KERNELS[t]}"]
    if t == POLY:
        lines.append("degree %d" % int(param.degree))
    if t in GAMMA_KERNELS:
        lines.append("gamma " + float_text(param.gamma))
    if t in COEF0_KERNELS:
        lines.append("coef0 " + float_text(param.coef0))
    sv = model.support_vectors
    l = sv.shape[0]
    lines.append("nr_class %d" % nr_class)
    lines.append("total_sv %d" % l)
    lines.append(" ".join(["rho"] + [float_text(v) for v in rho]))
    if s in CLASSIFICATION:
        lines.append(" ".join(["label"] + [label_text(v) for v in np.asarray(model.labels)]))
    if model.prob_a is not None:
        lines.append(" ".join(["probA"] + [float_text(v) for v in np.ravel(model.prob_a)]))
    if model.prob_b is not None:
        lines.append(" ".join(["probB"] + [float_text(v) for v in np.ravel(model.prob_b)]))
    if model.prob_density_marks is not None:
        lines.append(" ".join(["prob_density_marks"] +
                              [float_text(v) for v in np.ravel(model.prob_density_marks)]))
    if s in CLASSIFICATION:
        lines.append(" ".join(["nr_sv"] + ["%d" % v for v in np.ravel(model.n_support)]))
    lines.append("SV")
    if t == PRECOMPUTED:
        if sv.shape[1] == 0:
            col0 = np.zeros(l)
        else:
            col0 = dense_columns(sv, [0]).ravel()
        if not np.all(np.isfinite(col0)):
            raise ValueError("model: non-finite serial number of a precomputed-kernel SV")
        for i in range(l):
            parts = [float_text(c) for c in coef[:, i]] + ["0:%d" % int(col0[i])]
            lines.append(" ".join(parts) + " ")
        return "\n".join(lines) + "\n", ()
    csr = as_csr(sv)      # sorted, unique indices (explicit zeros are kept and written)
    bad = ~np.isfinite(csr.data)
    if bad.any():
        row = int(np.searchsorted(csr.indptr, np.flatnonzero(bad)[0], side="right"))
        raise ValueError(f"model: support vector {row} has non-finite values")
    return "\n".join(lines) + "\n", format_sv_rows(coef, csr)


def save_model(path: StrPath, model: Model | ModelKind) -> None:
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
    head, sv_lines = _format_model(model)
    with output_file(path) as f:
        f.write(head)
        for text in sv_lines:
            f.write(text)


# ---------------------------------------------------------------- reading

class _Reader:
    def __init__(self, name):
        self.name = name

    def fail(self, lineno, problem):
        raise ModelFormatError(f"{self.name}:{lineno}: {problem}")


_HEADER_KEYS = ("svm_type", "kernel_type", "degree", "gamma", "coef0", "nr_class",
                "total_sv", "rho", "label", "probA", "probB", "prob_density_marks", "nr_sv")


def is_model_start(first_word):
    """Whether a file whose first word is ``first_word`` can be a model file
    (a header keyword of LIBSVM's format, or ``kernsolve_model``)."""
    return first_word in _HEADER_KEYS or first_word == MODEL_MAGIC


def load_model(path: ModelFile, *, n_jobs: int | None = None,
               _scipy: bool = True) -> Model | ModelKind:
    """Read a LIBSVM-format model file (LIBSVM's own or kernsolve's).

    ``n_jobs``: threads that parse the support vectors of a large file
    (None = all cores); the model does not depend on it.  (``_scipy=False``,
    private: the support vectors of a LIBSVM-format model stay kernsolve's
    own CSR, ``kernsolve._sparse.Csr``, for kernsolve-predict, which does not
    import scipy.)

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
        if isinstance(raw, str):
            raw = raw.encode("utf-8", "replace")
        raw = bytearray(raw)
    else:
        with open(path, "rb") as f:
            raw = _read_all(f)
    fail = _Reader(name).fail
    model = _load_valid_libsvm_model(raw, fail, n_jobs)
    if model is not None:
        return _with_scipy_vectors(model) if _scipy else model
    # Anything else (another model kind, a precomputed kernel, any problem):
    # the careful reader, line by line, which names the line of a problem.
    if b"\0" in raw:
        lineno = raw[:raw.index(b"\0")].count(b"\n") + 1
        fail(lineno, "binary data (NUL byte) in a model file")
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError as exc:
        lineno = raw[:exc.start].count(b"\n") + 1
        fail(lineno, "non-ASCII byte in a model file")
    del raw
    if not text:
        fail(1, "empty model file")
    lines = split_lines(text, fail)
    del text
    first = lines[0].split() if lines else []
    if len(first) == 2 and first[0] == MODEL_MAGIC:
        return _load_other_kind(first[1], lines, fail)
    model = _libsvm_model(lines, fail, lambda sv_line, l, m, t: read_vector_lines(
        fail, lines, sv_line, l, m, t, "support vector"))
    return _with_scipy_vectors(model) if _scipy else model


def _with_scipy_vectors(model):
    """The model with its support vectors as scipy's csr_matrix (what
    ``load_model`` gives its callers)."""
    model.support_vectors = to_scipy(model.support_vectors)
    return model


def _read_all(f):
    """A file's bytes in one bytearray (the compiled reader parses them in place)."""
    try:
        size = os.fstat(f.fileno()).st_size
    except (OSError, AttributeError, ValueError):
        size = 0
    raw = bytearray(size + 1)
    with memoryview(raw) as view:
        filled = 0
        while filled < len(raw):
            n = f.readinto(view[filled:])
            if not n:
                break
            filled += n
    if filled == len(raw):          # the file grew (or its size is unknown)
        raw += f.read()
    else:
        del raw[filled:]
    return raw


class _NotPlain(Exception):
    """The support vectors are not plain valid lines: read them line by line."""


def _load_valid_libsvm_model(raw, fail, n_jobs):
    """The model of a valid LIBSVM-format file, or None (then the careful
    reader reads it and names any problem).

    The header (up to the first ``SV`` line) is read by the same code as the
    careful reader's; the support vectors by the compiled data-file reader,
    straight from the bytes (``read_vector_bytes``), instead of as Python
    strings: a 10-class Fashion-MNIST model of 120 MB loads in about a
    second instead of tens of seconds, in about the memory of the file and
    the arrays.
    """
    at = raw.find(b"\nSV\n")
    if at < 0:
        return None
    head_end = at + 4
    try:
        head = raw[:head_end].decode("ascii")
    except UnicodeDecodeError:
        return None
    if "\0" in head:
        return None
    try:
        lines = split_lines(head, fail)
        first = lines[0].split() if lines else []
        if first[:1] == [MODEL_MAGIC]:
            return None

        def support_vectors(sv_line, l, m, t):
            if sv_line != len(lines) - 1 or t == PRECOMPUTED:
                raise _NotPlain
            out = read_vector_bytes(raw, head_end, l, m, resolve_n_jobs(n_jobs))
            if out is None:
                raise _NotPlain
            return out

        return _libsvm_model(lines, fail, support_vectors)
    except (_NotPlain, ModelFormatError):
        return None


def _libsvm_model(lines, fail, support_vectors):
    """The Model of a LIBSVM-format file: its header from ``lines`` (which
    reach at least its ``SV`` line), its support vectors from
    ``support_vectors(sv_line, total_sv, n_coefficients, kernel_type)``, which
    returns (CSR rows, coefficients)."""
    header = ModelHeader(lines, fail, _HEADER_KEYS, ("SV",), start=0)
    sv_line = header.end
    s = SVM_TYPES.index(header.word("svm_type", SVM_TYPES))
    svm_name = SVM_TYPES[s]
    t = KERNELS.index(header.word("kernel_type", KERNELS))
    param = Parameters(svm_type=s, kernel_type=t)
    header.kernel_parameters(param, t)

    classification = s in CLASSIFICATION
    nr_class = header.integer("nr_class")
    if classification and nr_class < 1:
        fail(header.where["nr_class"], f"nr_class must be >= 1, got {nr_class}")
    if not classification and nr_class != 2:
        fail(header.where["nr_class"], f"nr_class must be 2 for {svm_name}, got {nr_class}")
    if nr_class > 65536:
        fail(header.where["nr_class"], f"nr_class {nr_class} is implausibly large")
    l = header.integer("total_sv", low=0)
    n_pairs = nr_class * (nr_class - 1) // 2

    rho = header.numbers("rho", n_pairs, infinite=True)   # LIBSVM writes "rho inf" (-s 2 -n 1)
    labels = np.empty(0, dtype=np.float64)
    n_support = np.empty(0, dtype=np.int64)
    if classification:
        labels = header.labels("label", nr_class)
        n_support = np.array([parse_int(fail, header.line("nr_sv"), v, "nr_sv")
                              for v in header.values("nr_sv", nr_class)], dtype=np.int64)
        if (n_support < 0).any():
            fail(header.where["nr_sv"], "nr_sv values must be >= 0")
        if int(n_support.sum()) != l:
            fail(header.where["nr_sv"], f"nr_sv adds up to {int(n_support.sum())}, "
                                        f"but total_sv is {l}")
    else:
        for key in ("label", "nr_sv"):
            if key in header:
                fail(header.where[key], f"'{key}' is not allowed for {svm_name}")
    prob_a = prob_b = marks = None
    if "probA" in header:
        if s == ONE_CLASS:
            fail(header.where["probA"], "probA is not allowed for one_class")
        prob_a = header.numbers("probA", n_pairs)
    if "probB" in header:
        if s not in CLASSIFICATION:
            fail(header.where["probB"], f"probB is not allowed for {svm_name}")
        prob_b = header.numbers("probB", n_pairs)
    if "prob_density_marks" in header:
        if s != ONE_CLASS:
            fail(header.where["prob_density_marks"], "prob_density_marks is only for one_class")
        marks = header.numbers("prob_density_marks", N_MARKS)

    # support vectors
    m = nr_class - 1 if classification else 1
    sv, coef = support_vectors(sv_line, l, m, t)
    return Model(param=param, labels=labels, support_vectors=sv,
                 support_indices=np.zeros(l, dtype=np.int64), n_support=n_support,
                 dual_coef=coef, rho=rho, prob_a=prob_a, prob_b=prob_b,
                 prob_density_marks=marks)


# ------------------------------------------------- models LIBSVM cannot hold
# Solvers whose models are not kernel expansions in LIBSVM's layout (DSG's
# random-feature blocks, ...) write files whose first line is
# "kernsolve_model <kind>"; each solver's spec names its kind and the class
# that reads it (``model_kind``, ``model``): a ModelKind (kernsolve._model_kind)
# whose classmethod ``from_lines(lines, fail)`` reads the file
# (``fail(lineno, problem)`` raises ModelFormatError).  Imported at first use:
# loading a LIBSVM model needs none.
MODEL_MAGIC = "kernsolve_model"


def _load_other_kind(kind, lines, fail):
    kinds = model_kinds()
    if kind not in kinds:
        fail(1, f"unknown kernsolve model kind {kind[:40]!r} "
                f"(known: {', '.join(sorted(kinds))})")
    return kinds[kind].resolve().from_lines(lines, fail)
