"""scikit-learn-style estimators on kernsolve's SMO solver (and SBP, Pegasos, SDCA, Perceptron).

``SVC``, ``NuSVC``, ``SVR``, ``NuSVR`` and ``OneClassSVM`` follow the
scikit-learn estimator contract (``fit``/``predict``/``decision_function``/
``score``, ``get_params``/``set_params``, fitted attributes with a trailing
underscore) without importing scikit-learn: the only place scikit-learn is
touched is ``__sklearn_tags__``, which scikit-learn itself calls, so it is
already imported then.  Parameter names and defaults are scikit-learn's, so a
user can swap ``from sklearn.svm import SVC`` for ``from kernsolve import SVC``.

Both libraries solve the same LIBSVM dual; the estimators reproduce
scikit-learn's conventions on top of kernsolve's :class:`~kernsolve.Model`:

* Classes are ``np.unique(y)`` (sorted).  Each class is trained as the float
  label ``0, 1, ..., k-1`` and the rows are stably reordered by class before
  training, so kernsolve's label order (first appearance) is the sorted order
  and every one-vs-one sub-problem is the one scikit-learn's LIBSVM solves,
  with the rows in the same order.
* Binary problems: ``decision_function`` is positive for ``classes_[1]``, so it
  is minus LIBSVM's value (whose positive class is ``classes_[0]``);
  ``dual_coef_`` and ``intercept_`` are flipped likewise.
* ``decision_function_shape="ovr"`` turns the one-vs-one values into
  per-class votes plus bounded confidences (scikit-learn's documented
  transformation).

The machinery all of them share (parameters to :class:`~kernsolve.Parameters`,
data layout, training, fitted attributes) is ``estimators._svm_base``; this
module declares the public classes: their parameters, defaults, constraints
and documentation.
"""
from typing import Any, Literal

import numpy as np

from numbers import Real

from .._constants import SvmType
from .._errors import ConvergenceWarning, DataConversionWarning, NotFittedError
from .._typing import KernelLike, RandomStateLike
from ..solvers import DEFAULT_SOLVER
from ._base import Interval
from ._svm_base import _BaseSVC, _BaseSVM, _BaseSVR

#: ``class_weight``: {label: weight}, "balanced" (n / (k * count)), or None (all 1).
ClassWeight = dict[Any, float] | Literal["balanced"] | None

__all__ = ["SVC", "NuSVC", "SVR", "NuSVR", "OneClassSVM", "NotFittedError",
           "DataConversionWarning", "ConvergenceWarning"]


def _without(constraints, *unused):
    """The constraints of a base class but those of the parameters a class lacks."""
    out = dict(constraints)
    for name in unused:
        out.pop(name)
    return out


class SVC(_BaseSVC):
    """C-Support Vector Classification on kernsolve's SMO solver (LIBSVM's C-SVC).

    Drop-in for ``sklearn.svm.SVC``: same parameters, defaults, fitted
    attributes, decision values (to the solver's tolerance) and predictions.

    Parameters
    ----------
    C : float, default=1.0
        Regularisation (box constraint of the dual), > 0; ``inf`` is the hard
        margin (solver 'smo' only).
    kernel : {'linear', 'poly', 'rbf', 'sigmoid', 'laplacian', 'precomputed'} or callable, default='rbf'
        ``'laplacian'`` is kernsolve's ``exp(-gamma |x - y|_1)``.  A callable
        ``kernel(A, B)`` returns the kernel matrix (trained as precomputed).
    degree : int, default=3
        Polynomial degree.
    gamma : {'scale', 'auto'} or float, default='scale'
        'scale': ``1 / (n_features * X.var())``; 'auto': ``1 / n_features``.
    coef0 : float, default=0.0
        Independent term of 'poly' and 'sigmoid'.
    shrinking : bool, default=True
    probability : bool, default=False
        Fit Platt sigmoids on 5 internal folds (drawn from kernsolve's seeded
        RNG with ``random_state``) so ``predict_proba`` is available.
        scikit-learn 1.9 deprecated the parameter (and ``probA_``,
        ``probB_``); kernsolve keeps them, without a warning.
    tol : float, default=1e-3
        Stopping tolerance (LIBSVM's ``-e``).
    cache_size : float, default=200
        Kernel cache in MB.
    class_weight : dict or 'balanced', default=None
        ``C`` of class ``c`` becomes ``class_weight[c] * C``; 'balanced' uses
        ``n_samples / (n_classes * count(c))``.
    verbose : bool, default=False
        Print LIBSVM's training lines.
    max_iter : int, default=-1
        SMO iteration limit (-1: LIBSVM's rule).
    decision_function_shape : {'ovr', 'ovo'}, default='ovr'
    break_ties : bool, default=False
        With 'ovr' and more than two classes, predict the argmax of
        ``decision_function`` instead of the vote.
    random_state : int, RandomState or None, default=None
        Seed of the probability folds (None means seed 0: kernsolve is
        reproducible by default).
    solver : {'smo', 'sbp', 'pegasos', 'sdca', 'perceptron', 'auto'}, default='smo'
        kernsolve's solver (``--solver``).  'smo' is LIBSVM's exact solver;
        'sbp' the Kernelized Stochastic Batch Perceptron, whose slack budget
        nu is mapped from ``C`` (doc/sbp.md); 'pegasos', 'sdca' and
        'perceptron' the SBP paper's comparison solvers, which have no bias
        (``intercept_`` is 0; doc/baselines.md).  Each one-vs-one pair is
        trained by the solver; prediction is the same for all.  The
        approximate solvers take neither ``class_weight`` nor unequal
        ``sample_weight``, and ``max_iter`` is SMO's only.  'auto' applies
        ``kernsolve-train --solver auto``'s rule (doc/choosing-a-solver.md)
        among these solvers, which picks 'smo' (the rule's other choices,
        EigenPro on centres and UDSG, train other kinds of model: their
        estimators are ``EigenProClassifier`` and ``DSGClassifier(solver='udsg')``); the
        choice and its reason are in ``solver_choice_``.
    solver_options : dict or None, default=None
        The solver's long options, by name (dashes or underscores):
        'sbp': ``epochs``, ``max_kernel_evals``, ``time_limit``,
        ``validation_fraction``; 'pegasos'/'sdca'/'perceptron':
        ``epochs`` or ``iterations``; 'smo': none.  ``{"epochs": 2}`` is
        ``--epochs 2``.
    bias : bool, default=True
        False trains the SVM without the unregularised bias term (rho = 0).
    n_jobs : int, default=None
        Threads for kernel computations (None: all cores).
    warm_start : bool, default=False
        Start each fit from the previous fit's solution when the data, the
        weights and every parameter but ``C`` are unchanged (scikit-learn's
        convention; alpha seeding along C, doc/cross-validation.md): the
        same optimum within ``tol``, not the same bits.

    Attributes
    ----------
    classes_, support_, support_vectors_, n_support_, dual_coef_, intercept_,
    probA_, probB_, class_weight_, fit_status_, shape_fit_, n_features_in_,
    n_iter_ : as scikit-learn's SVC.  After a fit on sparse X,
        ``support_vectors_`` and ``dual_coef_`` are CSR matrices (as
        scikit-learn's; doc/estimators.md).
    coef_ : ndarray (CSR matrix after a sparse fit), linear kernel only.
    model_ : kernsolve.Model
        The model it predicts with, built from the fitted attributes: the
        trained model unless they were changed (``kernsolve.save_model(path,
        est.model_)`` writes a LIBSVM model file; its labels are the class
        indices 0..k-1).
    """

    _svm_type = SvmType.C_SVC
    _parameter_constraints = {**_without(_BaseSVC._parameter_constraints, "nu", "epsilon"),
                              "bias": ["no_validation"], "warm_start": ["boolean"]}

    def __init__(self, *, C: float = 1.0, kernel: KernelLike = "rbf", degree: int = 3,
                 gamma: float | Literal["scale", "auto"] = "scale", coef0: float = 0.0,
                 shrinking: bool = True, probability: bool = False, tol: float = 1e-3,
                 cache_size: float = 200, class_weight: ClassWeight = None,
                 verbose: bool = False, max_iter: int = -1,
                 decision_function_shape: Literal["ovr", "ovo"] = "ovr",
                 break_ties: bool = False, random_state: RandomStateLike = None,
                 solver: str = DEFAULT_SOLVER, solver_options: dict[str, Any] | None = None,
                 bias: bool = True, n_jobs: int | None = None,
                 warm_start: bool = False) -> None:
        self._store_params(locals())


class NuSVC(_BaseSVC):
    """Nu-Support Vector Classification (LIBSVM's nu-SVC); see :class:`SVC`.

    ``nu`` in (0, 1] bounds the fraction of margin errors from above and of
    support vectors from below.  As in LIBSVM, ``class_weight`` has no effect
    on nu-SVC (its dual has no C); sample weights scale each row's bound.

    ``solver='sbp'`` trains each pair with the Stochastic Batch Perceptron at
    slack budget ``nu`` (then in (0, 1)); ``solver_options`` as in
    :class:`SVC` ('sbp': ``epochs``, ``max_kernel_evals``, ``time_limit``,
    ``validation_fraction``).
    """

    _svm_type = SvmType.NU_SVC
    _parameter_constraints = _without(_BaseSVC._parameter_constraints, "C", "epsilon")
    # one class left is nu-SVC's infeasible case: nu * (n1 + n2) / 2 > min(n1, n2) = 0
    _one_class_message = ("specified nu is infeasible: all samples with positive weights "
                          "belong to the same class")

    def __init__(self, *, nu: float = 0.5, kernel: KernelLike = "rbf", degree: int = 3,
                 gamma: float | Literal["scale", "auto"] = "scale", coef0: float = 0.0,
                 shrinking: bool = True, probability: bool = False, tol: float = 1e-3,
                 cache_size: float = 200, class_weight: ClassWeight = None,
                 verbose: bool = False, max_iter: int = -1,
                 decision_function_shape: Literal["ovr", "ovo"] = "ovr",
                 break_ties: bool = False, random_state: RandomStateLike = None,
                 solver: str = DEFAULT_SOLVER, solver_options: dict[str, Any] | None = None,
                 n_jobs: int | None = None) -> None:
        self._store_params(locals())


class SVR(_BaseSVR):
    """Epsilon-Support Vector Regression on kernsolve's SMO solver (LIBSVM's epsilon-SVR).

    Drop-in for ``sklearn.svm.SVR``; parameters as :class:`SVC` plus
    ``epsilon`` (width of the insensitive tube, >= 0).  Attributes:
    ``support_``, ``support_vectors_``, ``n_support_``, ``dual_coef_``
    (alpha - alpha*), ``intercept_``, ``fit_status_``, ``shape_fit_``,
    ``n_features_in_``, ``n_iter_``, ``model_``; ``warm_start`` as :class:`SVC`.
    """

    _svm_type = SvmType.EPSILON_SVR
    _parameter_constraints = {**_without(_BaseSVR._parameter_constraints, "nu"),
                              "warm_start": ["boolean"]}

    def __init__(self, *, kernel: KernelLike = "rbf", degree: int = 3,
                 gamma: float | Literal["scale", "auto"] = "scale", coef0: float = 0.0,
                 tol: float = 1e-3, C: float = 1.0, epsilon: float = 0.1,
                 shrinking: bool = True, cache_size: float = 200, verbose: bool = False,
                 max_iter: int = -1, n_jobs: int | None = None,
                 warm_start: bool = False) -> None:
        self._store_params(locals())


class NuSVR(_BaseSVR):
    """Nu-Support Vector Regression (LIBSVM's nu-SVR); see :class:`SVR`.

    ``nu`` in (0, 1] replaces ``epsilon``: the tube width is found by the solver.
    ``warm_start`` as :class:`SVC` (nu-SVR's constraints scale with C).
    """

    _svm_type = SvmType.NU_SVR
    # nu-SVR starts from alpha = C * nu * n / 2: C = inf has no meaning there
    _parameter_constraints = {**_without(_BaseSVR._parameter_constraints, "epsilon"),
                              "C": [Interval(Real, 0, None, closed="neither")],
                              "warm_start": ["boolean"]}

    def __init__(self, *, nu: float = 0.5, C: float = 1.0, kernel: KernelLike = "rbf",
                 degree: int = 3, gamma: float | Literal["scale", "auto"] = "scale",
                 coef0: float = 0.0, shrinking: bool = True, tol: float = 1e-3,
                 cache_size: float = 200, verbose: bool = False, max_iter: int = -1,
                 n_jobs: int | None = None, warm_start: bool = False) -> None:
        self._store_params(locals())


# --------------------------------------------------------------------------
# novelty detection
# --------------------------------------------------------------------------

class OneClassSVM(_BaseSVM):
    """Unsupervised outlier detection (LIBSVM's one-class SVM, Schölkopf et al.).

    Drop-in for ``sklearn.svm.OneClassSVM``.  ``predict`` gives +1 (inlier)
    or -1 (outlier); ``decision_function`` is LIBSVM's value (positive for
    inliers); ``score_samples`` is ``decision_function + offset_``.
    Attributes: ``support_``, ``support_vectors_``, ``n_support_``,
    ``dual_coef_``, ``intercept_``, ``offset_`` (= rho), ``fit_status_``,
    ``shape_fit_``, ``n_features_in_``, ``n_iter_``, ``model_``.
    """

    _estimator_type = "outlier_detector"
    _svm_type = SvmType.ONE_CLASS
    _parameter_constraints = _without(_BaseSVM._parameter_constraints, "C", "epsilon")

    def __init__(self, *, kernel: KernelLike = "rbf", degree: int = 3,
                 gamma: float | Literal["scale", "auto"] = "scale", coef0: float = 0.0,
                 tol: float = 1e-3, nu: float = 0.5, shrinking: bool = True,
                 cache_size: float = 200, verbose: bool = False, max_iter: int = -1,
                 n_jobs: int | None = None) -> None:
        self._store_params(locals())

    def fit(self, X, y=None, sample_weight=None):
        """Learn the support of the data distribution (``y`` is ignored)."""
        model = self._fit_one_output(X, None, sample_weight)
        self.offset_ = float(np.asarray(model.rho, dtype=np.float64)[0])   # = -intercept_
        return self

    def decision_function(self, X):
        """Signed distance to the separating hyperplane; positive for inliers."""
        return self._decision_values(X)[:, 0]

    def score_samples(self, X):
        """Unshifted scoring function: ``decision_function(X) + offset_``."""
        return self.decision_function(X) + self.offset_

    def predict(self, X):
        """+1 for inliers, -1 for outliers (LIBSVM's sign rule: 0 is an outlier)."""
        return np.where(self.decision_function(X) > 0, 1, -1)

    def fit_predict(self, X, y=None, sample_weight=None):
        """``fit(X)`` then ``predict(X)``."""
        return self.fit(X, sample_weight=sample_weight).predict(X)
