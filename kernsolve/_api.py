"""``kernsolve.train``: the front door of every solver.

It parses the options, looks the solver up in ``kernsolve.solvers.REGISTRY``
and hands the work to the solver's spec: a whole-model solver (DSG, EigenPro)
trains through ``spec.train``; the others run LIBSVM's one-vs-one driver
(``kernsolve.solvers.libsvm.driver.svm_train``), which receives the spec and
calls its ``binary`` sub-problem trainer.  No solver is named here.
"""
from typing import Any

from ._model import Model
from ._model_kind import ModelKind
from ._params import OptionsLike, Parameters, parse_options
from ._sparse import to_scipy
from ._typing import ArrayLike, MatrixLike
from .solvers import AUTO, auto, spec_for
from .solvers.libsvm import driver

__all__ = ["train", "check_parameters"]


def train(y: ArrayLike, X: MatrixLike, options: OptionsLike = "", *,
          sample_weight: ArrayLike | None = None, n_jobs: int | None = None,
          _folds: Any = None, _max_iter: int | None = None,
          _shared: Any = None, _warm: Any = None) -> Model | ModelKind:
    """Train a model with any of kernsolve's solvers (``--solver``, default SMO;
    ``--solver auto`` picks one for the data: ``kernsolve.solvers.auto``).

    With SMO, SBP and the baselines it trains the way LIBSVM's ``svm-train``
    does; see :func:`kernsolve.solvers.libsvm.driver.svm_train`.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Targets: class labels (integers) for ``-s 0/1``, real values for
        ``-s 3/4``; ignored (but still required) for one-class ``-s 2``.
    X : ndarray, scipy.sparse matrix or LIBSVM's rows, shape (n_samples, n_features)
        Training data; also ``libsvm.svmutil``'s lists of rows (dicts
        ``{index: value}`` with 1-based indices, or lists of values), read as
        :func:`kernsolve._validation.libsvm_rows` reads them.  For a precomputed kernel (``-t 4``), column 0 holds the
        1-based serial number of each row and column ``k`` holds
        ``K(x, x_k)``, LIBSVM's convention.
    options : str, list of str, dict or Parameters
        LIBSVM's option letters (``"-s 0 -t 2 -c 10 -g 0.5 -b 1 -w1 2 -q"``),
        plus kernsolve's long options (``--solver NAME``, ``--threads N``,
        ``--bias 0``, ``--seed S``, the solver's own); see
        ``kernsolve.parse_options``.  Not ``-v``: cross-validation is
        :func:`kernsolve.cross_validation` (or ``kernsolve.svmutil.svm_train``).
    sample_weight : array-like of shape (n_samples,), optional
        Per-row weights >= 0: the row's bound becomes ``C_class * weight``
        (LIBSVM has no sample weights).  Rows of weight 0 are left out.
    n_jobs : int, optional
        Threads for the kernel computations; overrides ``--threads``.  None
        means ``--threads`` if given, else all cores (``resolve_n_jobs``).
    _folds, _max_iter, _shared, _warm : private
        Explicit probability folds, the SMO iteration limit, a kernel matrix
        shared between fits and the previous fit's solution to start from,
        for the LIBSVM driver (see ``svm_train``).

    Returns
    -------
    model : Model, DSGModel or EigenProModel
        For the driver's solvers, a :class:`~kernsolve.Model` with LIBSVM's
        layout (``labels``, ``support_vectors`` grouped by class,
        ``dual_coef`` = sv_coef, ``rho``, ``n_support``) and ``stats``.

    Raises
    ------
    ValueError
        For invalid parameters or data, with one message naming the problem
        (``-v`` included).
    """
    param = options.copy() if isinstance(options, Parameters) else parse_options(options)
    if param.n_folds:
        raise ValueError(
            f"-v {param.n_folds}: kernsolve.train trains one model; cross-validate with "
            "kernsolve.cross_validation(y, X, options) (its .score is what svm_train -v "
            "returns), or call kernsolve.svmutil.svm_train, which returns it")
    choice = None
    if param.solver == AUTO:        # the solver for this data (kernsolve.solvers.auto)
        param.check()
        param, X, choice = auto.resolve(param, y, X, sample_weight)
    spec = _spec(param)
    if spec.train is not None:
        if _shared is not None:
            raise ValueError("_shared: only for the LIBSVM driver's solvers")
        # whole-model solvers compute with scipy's matrices (kernsolve-train reads a Csr)
        model = spec.train(y, to_scipy(X), param, n_jobs=n_jobs, sample_weight=sample_weight)
    else:
        model = driver.svm_train(y, X, param, spec, sample_weight=sample_weight,
                                 n_jobs=n_jobs, _folds=_folds, _max_iter=_max_iter,
                                 _shared=_shared, _warm=_warm)
    if choice is not None:          # (LIBSVM's model files do not keep it: the stats do)
        model.stats.update(solver=choice.solver, auto=choice.line())
    return model


def check_parameters(param):
    """The checks ``train`` makes before it looks at the data (for the command
    line, which makes them before the long read of the data file):
    ``Parameters.check`` (with every solver option against its declaration
    in the spec), then the driver's and the solver's own rules.

    Raises ValueError.
    """
    if param.solver == AUTO:        # the chosen solver's rules are checked when it trains
        param.check()
        return
    spec = _spec(param)
    if spec.uses_driver:
        driver.check_parameters(param, spec)      # Parameters.check first
        return
    param.check()
    if spec.check is not None:
        spec.check(param)


def _spec(param):
    spec = spec_for(param.solver)
    if spec is None:
        param.check()          # raises the parser's "unknown solver" message
    return spec
