"""EigenPro models: the multi-output kernel expansion, its file format, prediction.

:class:`EigenProModel` holds what ``--solver eigenpro`` / ``kernel-sgd`` fit
for classification (one output per class) and any ``--features`` model; its
text format starts with ``kernsolve_model eigenpro`` and ``load_model``
dispatches on that line (the ``model_kind`` of the solver's spec).  Regression
kernel expansions are LIBSVM ``Model`` objects instead (see
``kernsolve.solvers.eigenpro.train``).  ``doc/eigenpro.md`` describes the format.
"""
from dataclasses import dataclass, field

import numpy as np

from ._common import KernelBlocks
from .features import FeatureMap
from ..._constants import (EPSILON_SVR, GAMMA_KERNELS, KERNEL_NAMES as KERNELS, POLY,
                           PSD_KERNELS, SVM_TYPE_NAMES as SVM_TYPES)
from ..._kernels import as_canonical, block_rows, tiled_product
from ..._model_text import (ModelHeader, float_text, format_sv_rows, label_text, parse_floats,
                            read_vector_lines)
from ..._model_kind import CallableFlag, ModelKind
from ..._params import Parameters
from ..._predict import _prepare_X, _widen
from ..._sparse import as_csr, issparse, row_block, to_scipy
from ..._threads import resolve_n_jobs

__all__ = ["EigenProModel", "decision_values", "format_eigenpro_model",
           "parse_eigenpro_model", "MAGIC"]

MAGIC = "kernsolve_model eigenpro"   # the first line of the file (the spec's model_kind)
BLOCK_BYTES = 32 * 2 ** 20  # kernel values per block at prediction


@dataclass
class EigenProModel(ModelKind):
    """A multi-output kernel expansion: outputs = K(x, centres) @ coef.

    With ``features = D`` it is instead linear in D random Fourier features
    regenerated from ``param.seed``: outputs = phi(x) @ coef, coef (D, n_outputs).

    Attributes
    ----------
    param : Parameters
        Training parameters (gamma resolved).  ``svm_type`` 3 (epsilon_svr)
        marks a regression model (prediction = output 0).
    labels : ndarray of shape (n_outputs,)
        The class of each output column; prediction is the label of the
        largest output (the first one on ties).
    centres : ndarray or csr_matrix, shape (n_centres, n_features), or None
    coef : ndarray of shape (n_centres, n_outputs) or (D, n_outputs)
    stats : dict
        Training statistics (not written to the file).
    features : int or None
        D for a random-feature model.
    """
    param: Parameters
    labels: np.ndarray
    centres: object
    coef: np.ndarray
    stats: dict = field(default_factory=dict)
    features: int | None = None

    kind = "eigenpro"

    @property
    def n_outputs(self):
        return int(self.coef.shape[1])

    @property
    def n_sv(self):
        return 0 if self.centres is None else int(self.centres.shape[0])

    @property
    def support_vectors(self):
        """The centres, under the name :class:`~kernsolve.Model` uses (empty for features)."""
        return np.zeros((0, 1)) if self.centres is None else self.centres

    @property
    def nr_class(self):
        return int(len(self.labels))

    @property
    def is_probability_model(self):
        return CallableFlag(False)      # as kernsolve.Model's: a property, callable too

    def __repr__(self):
        p = self.param
        parts = [KERNELS[int(p.kernel_type)]]
        if int(p.kernel_type) in GAMMA_KERNELS and p.gamma is not None:
            parts.append("gamma=%g" % float(p.gamma))
        parts.append("n_outputs=%d" % self.n_outputs)
        if self.features is not None:
            parts.append("features=%d" % self.features)
        else:
            parts.append("n_centres=%d" % self.n_sv)
        return "EigenProModel(" + ", ".join(parts) + ")"

    def to_text(self):
        """The model file's text (``save_model`` writes it atomically)."""
        return format_eigenpro_model(self)

    @classmethod
    def from_lines(cls, lines, fail):
        """The model from a file's lines (``load_model`` dispatches here)."""
        return parse_eigenpro_model(lines, fail)

    @property
    def is_regression(self):
        return int(self.param.svm_type) == EPSILON_SVR

    def predict_arrays(self, X, probability=False, n_jobs=None):
        """(labels, values) for ``kernsolve.predict``: the outputs and their labels."""
        if probability:
            raise ValueError("an EigenPro model has no probability estimates (-b 1)")
        values = decision_values(X, self, n_jobs)
        return _labels_of(values, self), values

    def decision_function(self, X, n_jobs=None):
        """The outputs ``K(X, centres) @ coef``, shape (n_samples, n_outputs)."""
        return decision_values(X, self, n_jobs)

    def predict(self, X, n_jobs=None):
        """The label of the largest output for each row (regression: output 0)."""
        return _labels_of(decision_values(X, self, n_jobs), self)


def _labels_of(values, model):
    if int(model.param.svm_type) == EPSILON_SVR:
        return values[:, 0].copy()
    if values.shape[0] == 0:
        return np.empty(0)
    return np.asarray(model.labels, dtype=np.float64)[np.argmax(values, axis=1)]


def decision_values(X, model, n_jobs=None):
    """``K(X, centres) @ coef`` block by block (width rule as LIBSVM's predict)."""
    p = model.param
    Xc = _prepare_X(X)
    coef = np.asarray(model.coef, dtype=np.float64)
    if model.features is not None:
        out = np.empty((Xc.shape[0], coef.shape[1]))
        rows = block_rows(BLOCK_BYTES // (8 * model.features))
        phi = FeatureMap(Xc.shape[1], model.features, int(p.kernel_type), float(p.gamma),
                         int(p.seed))
        for start in range(0, Xc.shape[0], rows):
            Z = phi(row_block(Xc, start, start + rows), row_independent=True)
            out[start:start + rows] = tiled_product(Z, coef)
        return out
    C = model.centres
    if C.shape[0] == 0:             # trained on one class: every output is 0
        return np.zeros((Xc.shape[0], coef.shape[1]))
    width = max(Xc.shape[1], C.shape[1], 1)
    if Xc.shape[1] != width:
        Xc = _widen(Xc, width)
    if C.shape[1] != width:
        C = _widen(C, width)
    kern = KernelBlocks(C, int(p.kernel_type), float(p.gamma or 0.0), int(p.degree),
                   float(p.coef0), resolve_n_jobs(n_jobs))
    coef = np.asarray(model.coef, dtype=np.float64)
    n = Xc.shape[0]
    out = np.empty((n, coef.shape[1]))
    rows = block_rows(BLOCK_BYTES // (8 * max(coef.shape[0], 1)))
    for start in range(0, n, rows):
        stop = min(n, start + rows)
        Xb = row_block(Xc, start, stop)
        K = kern.block(_canonical_block(Xb), kern.X, row_independent=True)
        out[start:stop] = tiled_product(K, coef)
    return out


def _canonical_block(Xb):
    return as_canonical(Xb) if issparse(Xb) else np.ascontiguousarray(Xb, dtype=np.float64)


def format_eigenpro_model(model):
    """The text of kernsolve's EigenPro model file.

    ::

        kernsolve_model eigenpro
        svm_type c_svc
        kernel_type rbf
        degree 3            (polynomial only)
        gamma 0.02          (polynomial, rbf, laplacian)
        coef0 0             (polynomial)
        n_outputs 10
        label 0 1 2 ...     (one label per output column)
        total_sv 60000
        SV
        c_1 ... c_{n_outputs} index:value index:value ...

    Each centre line is LIBSVM's SV line with ``n_outputs`` coefficients;
    numbers are written with ``%.17g`` so a round trip is exact.  A
    random-feature model has ``features D`` and ``seed S`` instead of
    ``total_sv``, then ``W`` and D lines of ``n_outputs`` coefficients.
    """
    p = model.param
    t = int(p.kernel_type)
    coef = np.asarray(model.coef, dtype=np.float64)
    C = model.centres
    rows = model.features if model.features is not None else C.shape[0]
    if coef.ndim != 2 or coef.shape[0] != rows:
        raise ValueError(f"model: coef has shape {coef.shape}, expected "
                         f"({rows}, n_outputs)")
    if len(model.labels) != coef.shape[1]:
        raise ValueError(f"model: {len(model.labels)} labels for {coef.shape[1]} outputs")
    if not np.all(np.isfinite(coef)):
        raise ValueError("model: coef has non-finite values")
    lines = [MAGIC, f"svm_type {SVM_TYPES[int(p.svm_type)]}", f"kernel_type {KERNELS[t]}"]
    if t == POLY:
        lines.append("degree %d" % int(p.degree))
    if t in GAMMA_KERNELS:      # (EigenPro's kernels exclude the sigmoid)
        lines.append("gamma " + float_text(float(p.gamma)))
    if t == POLY:
        lines.append("coef0 " + float_text(float(p.coef0)))
    lines.append("n_outputs %d" % coef.shape[1])
    lines.append(" ".join(["label"] + [label_text(v) for v in np.asarray(model.labels)]))
    if model.features is not None:
        lines += ["features %d" % model.features, "seed %d" % int(p.seed), "W"]
        return "\n".join(lines + [" ".join(float_text(v) for v in row) for row in coef]) + "\n"
    lines.append("total_sv %d" % C.shape[0])
    lines.append("SV")
    csr = as_csr(C)
    if not np.all(np.isfinite(csr.data)):
        raise ValueError("model: a centre has non-finite values")
    return "\n".join(lines) + "\n" + "".join(format_sv_rows(coef.T.copy(), csr))


_HEADER = ("svm_type", "kernel_type", "degree", "gamma", "coef0", "n_outputs", "label",
           "total_sv", "features", "seed")


def parse_eigenpro_model(lines, fail):
    """An :class:`EigenProModel` from the lines of a file whose first line is MAGIC.

    ``fail(lineno, problem)`` raises ModelFormatError
    (``"<file>:<line>: <problem>"``); it is called for anything corrupt or
    truncated.
    """
    if not lines or lines[0].strip() != MAGIC:
        fail(1, f"expected {MAGIC!r} on the first line")
    header = ModelHeader(lines, fail, _HEADER, ("SV", "W"))
    sv_line, section = header.end, header.section
    svm_name = header.word("svm_type", SVM_TYPES)
    kname = header.one("kernel_type")
    if kname not in KERNELS or KERNELS.index(kname) not in PSD_KERNELS:
        fail(header.where["kernel_type"], f"kernel_type {kname[:40]!r} is not an EigenPro kernel")
    t = KERNELS.index(kname)
    param = Parameters(svm_type=SVM_TYPES.index(svm_name), kernel_type=t, solver="eigenpro")
    header.kernel_parameters(param, t)
    n_out = header.integer("n_outputs", low=1, high=65536)
    labels = header.labels("label", n_out)
    if ("features" in header) != (section == "W"):
        fail(sv_line + 1, "a random-feature model has a 'features' line and a 'W' "
                          "section; a kernel expansion has 'total_sv' and 'SV'")
    if section == "W":
        D = header.integer("features", low=1)
        param.seed = header.integer("seed", low=0, high=2 ** 64 - 1)
        body = lines[sv_line + 1:]
        if len(body) < D or any(body[j].strip() for j in range(D, len(body))):
            fail(min(len(lines), sv_line + 2 + D), f"expected exactly {D} coefficient "
                                                   "lines after 'W'")
        for j in range(D):      # the counts first: W holds only numbers the file has
            found = len(body[j].split())
            if found != n_out:
                fail(sv_line + 2 + j, f"expected {n_out} coefficients, got {found}")
        W = np.empty((D, n_out))
        for j in range(D):
            W[j] = parse_floats(fail, sv_line + 2 + j, body[j].split(), "coefficient")
        return EigenProModel(param=param, labels=labels, centres=None, coef=W, features=D)
    l = header.integer("total_sv", low=0)
    centres, coef = read_vector_lines(fail, lines, sv_line, l, n_out, t, "centre")
    return EigenProModel(param=param, labels=labels, centres=to_scipy(centres),
                         coef=np.ascontiguousarray(coef.T))
