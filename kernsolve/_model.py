"""A trained kernel expansion and its LIBSVM-format model file."""
from dataclasses import dataclass, field

import numpy as np

from ._params import Parameters


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
        Grouped by class in ``labels`` order, as LIBSVM stores them.
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
        One-class probability marks.
    stats : dict
        Training statistics: n_iter, objective, n_kernel_evals, seconds, ...
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
        return max(len(self.labels), 2) if self.param.svm_type in (0, 1) else 2
