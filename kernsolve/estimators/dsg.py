"""scikit-learn-style estimators on Doubly Stochastic Gradients (``kernsolve.solvers.dsg.train``).

``DSGClassifier`` and ``DSGRegressor`` follow the scikit-learn estimator
contract (``fit``/``partial_fit``/``predict``/``score``, ``get_params``/
``set_params``, fitted attributes with a trailing underscore) without
importing scikit-learn.  Parameter names are those of scikit-learn's
``SGDClassifier`` / ``SGDRegressor`` (``loss``, ``alpha``, ``max_iter``,
``average``, ``fit_intercept``, ``random_state``, ``epsilon``) and
``RBFSampler`` (``gamma``) where such a name exists, and the DSG option names
otherwise (``step``, ``t0``, ``feature_block``).

Every estimator parameter maps onto one option of ``kernsolve-train --solver
dsg``; :meth:`_BaseDSG._parameters` is the only place the mapping is written,
so an estimator and the command line given the same settings train the same
model, bit for bit.

Training is :class:`kernsolve.solvers.dsg.trainer.DSGTrainer`: ``fit`` starts a new trainer
and makes ``max_iter`` passes; ``partial_fit`` makes one pass over the chunk
it is given, continuing the trainer of the previous call (or of ``fit``).
Pass ``k`` (counting every pass since the trainer started) visits its rows in
the seeded order ``permutation(n_rows, stream_key(seed, "sampling"), k)``, so

* ``fit(X, y)`` with ``max_iter=E`` (an integer) equals ``E`` calls
  ``partial_fit(X, y)`` on a fresh estimator, bit for bit (with ``alpha``
  given, or with ``C`` since both map ``C`` with the same ``n_samples``),
  when X has at least ``batch_size`` rows (with fewer, ``fit`` takes them
  as one whole batch, ``partial_fit`` as a short one);
* ``partial_fit`` over the chunks ``X_1, X_2, ...`` equals
  :func:`kernsolve.solvers.dsg.stream.train_file` reading a file whose windows hold those
  chunks (same ``alpha`` (``--lambda``), numeric ``gamma``, seed and
  ``n_features``; for a binary problem whose labels are -1/+1).
"""
import copy
import warnings
from numbers import Real
from typing import Any, Literal

import numpy as np

from ._base import (CACHE_SIZE, N_JOBS, BaseEstimator, InstanceOf, Interval, Rule,
                    StrOptions, available_if, check_feature_names, check_lengths, declared,
                    encode_classes, feature_names, r2_score, regression_targets, type_name)
from .._constants import ESTIMATOR_KERNELS, FOURIER_KERNELS, SvmType
from .._kernels import Canonical
from .._params import Parameters, letter_option, option_key
from .._progress import Progress
from .._typing import RandomStateLike
from .._validation import check_X, column_or_1d, seed_of
from ..solvers.dsg.losses import LOSS, names as loss_names
from ..solvers.dsg.options import check_parameters, feature_gamma, hyperparameters, loss_for
from ..solvers.dsg.targets import Targets
from ..solvers.dsg.trainer import DSGTrainer
from ..solvers.dsg import SPEC as _DSG

# Options of UDSG/CDSG beyond DSG's (every DSG option has its own parameter),
# from the spec: those declared for some names of the family only.
_SOLVER_ONLY = {name: tuple(option_key(o) for o, opt in _DSG.options.items()
                            if name in opt.only) for name in _DSG.names}

__all__ = ["DSGClassifier", "DSGRegressor"]

# scikit-learn's names of the kernels with random Fourier features.
_KERNELS = {name: code for name, code in ESTIMATOR_KERNELS.items() if code in FOURIER_KERNELS}

# Estimator parameter -> the kernsolve-train option it sets: the one table of
# the names.  Used to build Parameters (below), to take the parameters'
# constraints from the options' declarations (_declared) and to name the
# parameter in the messages of the DSG validator, which speaks in option names.
_OPTION = {
    "loss": "--loss", "batch_size": "--batch-size", "feature_block": "--feature-block",
    "step": "--step", "t0": "--t0", "max_iter": "--epochs", "average": "--average",
    "step_rule": "--step-rule", "ridge": "--ridge",
    "tau": "--tau", "delta": "--delta", "alpha": "--lambda", "C": "-c", "gamma": "-g",
    "epsilon": "-p", "cache_size": "-m", "random_state": "--seed", "kernel": "-t",
    "fit_intercept": "--bias", "n_jobs": "--threads", "precision": "--precision",
}


def _declared(name, **kwargs):
    """The constraint of parameter ``name`` from the declaration of the option
    it sets (the DSG spec's, or LIBSVM's letter)."""
    option = _OPTION[name]
    if option.startswith("--"):
        return declared(_DSG.options[option[2:]], **kwargs)
    return declared(letter_option(option[1:]), **kwargs)


def _renamed(message):
    """A DSG validator message with option names replaced by parameter names."""
    # longest first, so that "--t0" is not read as "-t" + "0"
    for name, option in sorted(_OPTION.items(), key=lambda kv: -len(kv[1])):
        if message.startswith(option + ":") or message.startswith(option + " "):
            return name + message[len(option):]
    return message


def _same(a, b):
    """Parameter values equal (arrays and dicts by value)."""
    try:
        return bool(np.all(a == b)) if type(a) is type(b) else a == b
    except (TypeError, ValueError):
        return a is b


class _BaseDSG(BaseEstimator):
    """What DSGClassifier and DSGRegressor share: parameters -> Parameters, the trainer."""

    _svm_type: SvmType | None = None

    # The parameters both estimators take, in the order of the checks; each
    # class adds its loss (and the regressor its epsilon, delta, tau).  The
    # step schedule and the variants' solver_options are checked by the DSG
    # option validator (as --step, --t0, ...), from _parameters.
    _parameter_constraints = {
        "solver": [StrOptions(_DSG.names)],
        # its keys are checked against the solver in _parameters
        "solver_options": Rule(None, InstanceOf(dict, "a dict of the solver's options"),
                               shown=type_name),
        "kernel": Rule(StrOptions(tuple(_KERNELS)),
                       note="(the kernels with random Fourier features)"),
        "gamma": [StrOptions(("median",)),
                  Interval(Real, 0, None, closed="neither", text="a float > 0")],
        "C": Rule(Interval(Real, 0, None, closed="neither"), note="(used when alpha is None)",
                  when=lambda est: est.alpha is None),
        "alpha": [None, _declared("alpha")],
        "batch_size": [None, _declared("batch_size")],
        "feature_block": [None, _declared("feature_block")],
        "max_iter": [None, _declared("max_iter", text="a number of passes > 0")],
        "average": ["boolean"],
        "fit_intercept": ["boolean"],
        "cache_size": [CACHE_SIZE],
        "precision": [_declared("precision")],
        "n_jobs": [N_JOBS],
        "step": ["no_validation"],
        "t0": ["no_validation"],
        "step_rule": ["no_validation"],
        "ridge": ["no_validation"],
        "random_state": ["no_validation"],     # seed_of, when the seed is drawn
        "verbose": ["no_validation"],
    }

    # ------------------------------------------------------------ parameters

    def _parameters(self):
        """The estimator's settings as ``Parameters`` (``--solver dsg`` options).

        The one place where parameter names meet option names.  ``None``
        (``step``, ``t0``, ``max_iter``, ``batch_size``, ...) leaves the option
        out, so the DSG default of ``kernsolve.solvers.dsg.options`` applies.
        """
        self._validate_params()
        # 'auto' leaves --loss out: the solver's default by number of classes
        extra = {"loss": self.loss.replace("_", "-")} if self.loss != "auto" else {}
        extra.update({"average": int(bool(self.average)),
                      "step_rule": str(self.step_rule).replace("_", "-"),
                      "precision": self.precision})
        for attr in ("step", "t0", "max_iter", "alpha", "ridge", "batch_size", "feature_block"):
            value = getattr(self, attr)
            if value is not None:
                extra[option_key(_OPTION[attr][2:])] = \
                    int(value) if attr in ("batch_size", "feature_block") else value
        for attr in ("tau", "delta"):
            if hasattr(self, attr):
                extra[attr] = getattr(self, attr)
        # UDSG's --new-blocks/--old-blocks, CDSG's --max-step-ratio
        for key, value in (self.solver_options or {}).items():
            key = option_key(str(key))
            if key not in _SOLVER_ONLY.get(self.solver, ()):
                raise ValueError(f"{type(self).__name__}: solver_options: {key!r} is not an "
                                 f"option of solver {self.solver!r} (it takes "
                                 f"{sorted(_SOLVER_ONLY.get(self.solver, ())) or 'none'})")
            extra[key] = value
        param = Parameters(
            svm_type=int(self._svm_type), kernel_type=int(_KERNELS[self.kernel]),
            gamma=self.gamma if isinstance(self.gamma, str) else float(self.gamma),
            C=float(self.C) if self.alpha is None else 1.0,
            p=float(getattr(self, "epsilon", 0.1)), cache_size=float(self.cache_size),
            quiet=not bool(self.verbose), solver=self.solver, bias=bool(self.fit_intercept),
            n_jobs=self.n_jobs, seed=seed_of(self.random_state), extra=extra)
        try:
            check_parameters(param)
        except ValueError as exc:
            raise ValueError(f"{type(self).__name__}: {_renamed(str(exc))}") from None
        return param

    # ------------------------------------------------------------ training

    def _new_trainer(self, param, X, targets, first_chunk=False):
        """A fresh DSGTrainer for data like X (gamma, lambda and width from X);
        ``first_chunk``: X is partial_fit's first chunk of a longer stream."""
        name = type(self).__name__
        if first_chunk and self.alpha is None:
            # 1 / (C n) of a chunk is the stream's lambda times its number of
            # chunks: a9a in chunks of 64 rows, 21.4% test error against 15.6%
            warnings.warn(f"{name}.partial_fit: alpha=None takes lambda = 1 / (C * "
                          f"{X.shape[0]}) from the first chunk's {X.shape[0]} rows, not from "
                          f"the whole stream's; pass alpha (1 / (C * rows of the stream)) "
                          f"when the chunks are parts of a larger data set",
                          UserWarning, stacklevel=3)
        if param.gamma == "median" and X.shape[0] < 2:
            raise ValueError(f"{name}: gamma='median' needs at least 2 samples to measure "
                             f"distances, got {X.shape[0]} sample; give a float gamma")
        try:
            gamma = feature_gamma(param, X)
            hyper = hyperparameters(param, X.shape[0], X.shape[1], targets.loss, gamma)
        except ValueError as exc:
            raise ValueError(f"{name}: {_renamed(str(exc))}") from None
        self._trained_with = self._model_parameters()
        return DSGTrainer(hyper, targets)

    # Parameters that do not change what a pass learns: the threads, the
    # messages, the feature cache (the same bits), fit's number of passes.
    _FREE_BETWEEN_CHUNKS = frozenset({"n_jobs", "verbose", "cache_size", "max_iter"})

    def _model_parameters(self):
        return {k: v for k, v in self.get_params(deep=False).items()
                if k not in self._FREE_BETWEEN_CHUNKS}

    def _check_unchanged(self):
        """partial_fit continues the model the trainer began: a parameter
        changed since (set_params) would be silently ignored, so say so."""
        before = getattr(self, "_trained_with", None)     # (a pickle of an older version)
        now = self._model_parameters()
        changed = [k for k in now if before is not None and k in before
                   and not _same(now[k], before[k])]
        if changed:
            k = changed[0]
            raise ValueError(f"{type(self).__name__}.partial_fit: {k} changed from "
                             f"{before[k]!r} to {now[k]!r} since training began; "
                             f"partial_fit continues that model with its parameters: call fit "
                             f"to train with the new ones, or set {k} back")

    def _fit_chunk(self, X, y):
        """partial_fit's pass over one chunk, then the fitted attributes."""
        self._check_unchanged()
        B = self._trainer.h["batch_size"]
        if X.shape[0] < B and not getattr(self, "_warned_small_chunk", False):
            # every call is an iteration (DSG: a block): a9a in chunks of 16 rows
            # made 2036 blocks in 8 times fit's time, in chunks of 4 8141
            # blocks in 330 times (the blocks beyond the cache regenerated)
            self._warned_small_chunk = True
            warnings.warn(f"{type(self).__name__}.partial_fit: a chunk of {X.shape[0]} rows "
                          f"is less than a batch ({B} rows) but takes an iteration of its "
                          f"own, which adds up to a block of {self._trainer.h['block_size']} "
                          f"random features: many such chunks make a large model, slow to "
                          f"train and to predict; "
                          f"pass chunks of batch_size rows or more", UserWarning, stacklevel=3)
        self._trainer.fit_rows(Canonical(X), y, n_jobs=self.n_jobs)
        self._passes += 1
        self._publish(self._passes)
        return self

    def _fit_X(self, X, reset):
        """Validated X; at ``reset`` remember its width and feature names."""
        name = type(self).__name__
        if reset:
            names = feature_names(X)
            X = check_X(X, owner=name)
            self.n_features_in_ = int(X.shape[1])
            if names is not None and len(names) == X.shape[1]:
                self.feature_names_in_ = names
            elif hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
            return X
        check_feature_names(self, X)
        X = check_X(X, owner=name)
        self._check_width(X)
        return X

    def _check_width(self, X):
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input.")

    def _run(self, trainer, X, y_codes, epochs, n_jobs):
        """``epochs`` passes (the last one partial when fractional), as ``_dsg.train``;
        the progress line on stderr with ``verbose``, as the command line's."""
        trainer.progress = Progress(self.solver) if self.verbose else None
        try:
            passes = trainer.fit_epochs(Canonical(X), y_codes, epochs, n_jobs=n_jobs)
        finally:
            if trainer.progress is not None:
                trainer.progress.close()
            trainer.progress = None      # (the fitted estimator pickles without it)
        note = trainer.kept_note("cache_size=")
        if self.verbose and note:
            print("-- " + note, end="")
        return passes

    def _publish(self, passes):
        """Fitted attributes from the trainer's current state."""
        t = self._trainer
        self.model_ = t.model()
        self.coef_ = self.model_.coef
        self.intercept_ = self.model_.intercept
        self.n_iter_ = int(passes)
        self.t_ = int(t.n_iter)
        self.gamma_ = float(t.h["gamma"])
        self.lambda_ = float(t.h["lam"])
        if self.verbose:
            print(f"-- passes {passes}, iterations {t.n_iter}, blocks {t.n_blocks}, "
                  f"mean loss {self.model_.stats['mean_loss']:g}")

    def _start_from(self, X, y, classes=None):
        """This estimator ready to train (the trainer of ``partial_fit``'s first
        call on (X, y), before its pass), or as it is when it has one: the
        start that every model of :func:`kernsolve.dask_parallel_fit` continues.
        The stream's settings that partial_fit takes from its first chunk
        (gamma='median', lambda from C, the softmax's batch) are this chunk's
        for all of them."""
        if not hasattr(self, "_trainer"):
            self._begin(X, y, **({} if classes is None else {"classes": classes}))
        return self

    def _averaged(self, ends):
        """A new estimator: the average of estimators that each continued this
        one (:meth:`DSGTrainer.averaged`, in the order of ``ends``); those
        that saw no rows are left out.  Its passes are the most any made."""
        trained = [e for e in ends if e._trainer.n_seen > self._trainer.n_seen]
        if not trained:
            return copy.deepcopy(self)
        out = copy.copy(trained[0])
        out._trainer = DSGTrainer.averaged(self._trainer, [e._trainer for e in trained])
        out._passes = max(e._passes for e in trained)
        out._publish(out._passes)
        return out

    def _values(self, X):
        """Decision values (n_samples, n_outputs) of validated X."""
        self._check_is_fitted()
        check_feature_names(self, X)
        X = check_X(X, owner=type(self).__name__)
        self._check_width(X)
        return self.model_.decision_function(X, n_jobs=self.n_jobs)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = False
        return tags


# --------------------------------------------------------------------------
# classification
# --------------------------------------------------------------------------

def _has_proba(est):
    # the loss trained; loss='auto' gives probabilities only once fitted on
    # more than two classes (the softmax)
    loss = getattr(est, "loss_", est.loss)
    probabilistic = loss_names(probabilities=True)
    if loss not in probabilistic:
        raise AttributeError(f"probability estimates are not available for loss="
                             f"{loss!r} (use loss={' or '.join(map(repr, probabilistic))})")
    return True


class DSGClassifier(_BaseDSG):
    """Kernel classifier trained by Doubly Stochastic Gradients (Dai et al., 2014).

    The decision function is a sum of random Fourier features regenerated
    from ``random_state``; each DSG iteration takes ``batch_size`` rows and
    adds one block of ``feature_block`` features.  Memory grows with the
    number of iterations, not with the data; ``partial_fit`` trains from
    chunks (out of core).

    Parameters
    ----------
    loss : {'auto', 'hinge', 'squared-hinge', 'logistic', 'softmax'}, default='auto'
        Binary losses train one output for two classes and one-vs-rest
        outputs beyond; 'softmax' is the multinomial logistic loss (one
        output per class).  'logistic' and 'softmax' give ``predict_proba``.
        'auto': 'hinge' for two classes, 'softmax' for more, as
        ``kernsolve-train`` chooses (``loss_`` tells which).
    solver : {'dsg', 'udsg', 'cdsg'}, default='dsg'
        Plain DSG, or the variants that also update old feature blocks
        (``doc/dsg.md``, "UDSG and CDSG"); CDSG usually needs far fewer
        random features for the same error.
    solver_options : dict or None, default=None
        The variant's own options: ``{"new_blocks": G, "old_blocks": U}``
        for 'udsg', ``{"max_step_ratio": r}`` for 'cdsg'.
    gamma : 'median' or float, default='median'
        Kernel parameter; 'median' is the median trick on a seeded sample of
        the (first) training data (``kernsolve.median_gamma``).
    kernel : {'rbf', 'laplacian'}, default='rbf'
        ``exp(-gamma ||x-y||^2)`` (Gaussian features) or
        ``exp(-gamma ||x-y||_1)`` (Cauchy features).
    alpha : float or None, default=None
        Regularisation lambda (``--lambda``).  None: ``1 / (C * n_samples)``
        with ``n_samples`` of ``fit``'s data (of the first chunk for
        ``partial_fit``, which warns: give ``alpha`` when streaming).
    C : float, default=1.0
        Cost, used when ``alpha`` is None (``-c``).
    batch_size : int or None, default=None
        Rows per iteration (``--batch-size``).  None: 64, or for the softmax
        loss ``n_samples // 16`` within [256, 2048] (of the first chunk for
        ``partial_fit``).
    feature_block : int or None, default=None
        Random features added per iteration (``--feature-block``).  None: 32,
        or 128 for the softmax loss.
    step : float or None, default=None
        theta of the step ``theta / (t0 + t)`` (``--step``; with the fitted
        step, times 2 for the softmax and 4 for the logistic loss); None:
        DSG's default.
    t0 : float or None, default=None
        Offset of the step schedule (``--t0``); None: DSG's default.
    max_iter : float or None, default=None
        Passes over the data in ``fit`` (``--epochs``; a fraction makes a
        last partial pass); None: DSG's default.
    average : bool, default=False
        Return the running average of the iterates (``--average 1``).
    fit_intercept : bool, default=True
        Learn an unregularised offset (``--bias``).
    random_state : int, RandomState or None, default=None
        Seed of the features, the row order and the median sample
        (``--seed``); None means seed 0 (reproducible by default).
    n_jobs : int or None, default=None
        Threads (``--threads``); results do not depend on it.
    cache_size : float, default=100
        MB of generated feature blocks kept for reuse (``-m``); results do
        not depend on it.
    precision : {'double', 'single'}, default='double'
        Precision of the random features' sums (``--precision``): 'single'
        rounds the directions and the inputs to float32 and sums in float32,
        about twice as fast for wide data; the model remembers it, and its
        predictions repeat it (doc/dsg.md, "Single precision").
    verbose : bool, default=False
        Print the training lines, and during ``fit`` the progress line on stderr.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of str, only for data frames with string column names
    model_ : kernsolve.solvers.dsg.model.DSGModel
        The trained model; its ``labels`` are indices into ``classes_``
        (``kernsolve.save_model(path, est.model_)`` writes the DSG model file).
    coef_ : ndarray of shape (n_blocks, feature_block, n_outputs)
        Coefficient of feature f of block b for each output.
    intercept_ : ndarray of shape (n_outputs,)
    n_iter_ : int
        Passes made since the trainer started: those of ``fit`` plus one per
        later ``partial_fit`` call.
    t_ : int
        DSG iterations (= feature blocks) so far.
    gamma_, lambda_ : float
        The kernel parameter and the regularisation in effect.
    loss_ : str
        The loss trained (``loss``, or what 'auto' chose).

    ``n_outputs`` is 1 for two classes with a binary loss (positive for
    ``classes_[1]``) and ``n_classes`` otherwise.
    """

    _estimator_type = "classifier"
    _svm_type = SvmType.C_SVC
    _parameter_constraints = {
        "loss": [StrOptions(("auto",) + loss_names("classification"),
                            listed=True, underscores=True)],
        **_BaseDSG._parameter_constraints,
    }

    def __init__(self, loss: str = "auto", *, solver: str = _DSG.name,
                 gamma: float | Literal["median"] = "median", kernel: str = "rbf",
                 alpha: float | None = None, C: float = 1.0,
                 batch_size: int | None = None, feature_block: int | None = None,
                 step: float | None = None, t0: float | None = None,
                 step_rule: str = "fit", ridge: float | None = None,
                 max_iter: float | None = None, average: bool = False,
                 fit_intercept: bool = True, solver_options: dict[str, Any] | None = None,
                 random_state: RandomStateLike = None, n_jobs: int | None = None,
                 cache_size: float = 100, precision: str = "double",
                 verbose: bool = False) -> None:
        self._store_params(locals())

    # -- labels
    def _loss_for(self, param, k):
        """The loss to train on k classes ('auto' resolved as the command line
        does: doc/dsg.md, "Losses"), kept as ``loss_``."""
        self.loss_ = loss_for(param, k)
        return self.loss_

    def _targets(self, loss, k):
        # Binary losses on two classes: labels [1, 0] make the single output's
        # target +1 for classes_[1], so the decision value is positive for it.
        labels = np.array([1.0, 0.0]) if (k == 2 and not LOSS[loss].per_class) \
            else np.arange(k, dtype=np.float64)
        return Targets("classification", loss, labels)

    def _codes(self, y):
        """Class indices of y in ``classes_`` (ValueError for unknown labels)."""
        y = column_or_1d(y, type(self).__name__)
        if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
            raise ValueError("Input y contains NaN or infinity.")
        try:
            index = np.searchsorted(self.classes_, y)
        except TypeError:
            raise ValueError(f"y has labels of another type than classes_ "
                             f"{self.classes_.tolist()}") from None
        index = np.clip(index, 0, len(self.classes_) - 1)
        bad = self.classes_[index] != y
        if np.any(bad):
            raise ValueError(f"y contains label {y[np.flatnonzero(bad)[0]]!r}, which is "
                             f"not in classes {self.classes_.tolist()}")
        return index.astype(np.float64)

    def fit(self, X, y):
        """Train from scratch: ``max_iter`` passes over (X, y).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels (numbers, strings, booleans...).

        Returns
        -------
        self
        """
        name = type(self).__name__
        param = self._parameters()
        X = self._fit_X(X, reset=True)
        classes, codes = encode_classes(y, name)
        check_lengths(X, codes)
        if len(classes) < 2:
            raise ValueError(f"The number of classes has to be greater than one; got "
                             f"{len(classes)} class")
        self.classes_ = classes
        loss = self._loss_for(param, len(classes))
        self._trainer = self._new_trainer(param, X, self._targets(loss, len(classes)))
        epochs = float(self._trainer.h["epochs"])
        self._passes = self._run(self._trainer, X, codes, epochs, self.n_jobs)
        self._publish(self._passes)
        return self

    def partial_fit(self, X, y, classes=None):
        """One pass over the chunk (X, y), continuing the previous training.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        classes : array-like of shape (n_classes,), optional
            Every class of the whole stream; required on the first call (as
            scikit-learn's ``SGDClassifier.partial_fit``), optional after it
            (then it must equal ``classes_``).

        Returns
        -------
        self
        """
        name = type(self).__name__
        if not hasattr(self, "_trainer"):
            X, codes = self._begin(X, y, classes)
        else:
            if classes is not None:
                given = np.unique(np.asarray(classes))
                if given.shape != self.classes_.shape or np.any(given != self.classes_):
                    raise ValueError(f"{name}: classes={given.tolist()} is not the same as "
                                     f"on the first call to partial_fit, was: "
                                     f"{self.classes_.tolist()}")
            X = self._fit_X(X, reset=False)
            codes = self._codes(y)
            check_lengths(X, codes)
        return self._fit_chunk(X, codes)

    def _begin(self, X, y, classes=None):
        """partial_fit's first call before its pass: the classes, the width
        and the trainer (gamma, lambda and the batch from this chunk);
        returns the validated chunk (X, class indices)."""
        name = type(self).__name__
        if classes is None:
            raise ValueError(f"{name}: classes must be passed on the first call to "
                             "partial_fit.")
        param = self._parameters()
        all_classes, _ = encode_classes(np.asarray(classes), name)
        if len(all_classes) < 2:
            raise ValueError(f"The number of classes has to be greater than one; "
                             f"got {len(all_classes)} class")
        X = self._fit_X(X, reset=True)
        self.classes_ = all_classes
        codes = self._codes(y)
        check_lengths(X, codes)
        loss = self._loss_for(param, len(all_classes))
        self._trainer = self._new_trainer(param, X, self._targets(loss, len(all_classes)),
                                          first_chunk=True)
        self._passes = 0
        return X, codes

    # -- prediction
    def decision_function(self, X):
        """Decision values: shape (n_samples,) for two classes (positive for
        ``classes_[1]``), else (n_samples, n_classes)."""
        v = self._values(X)
        if len(self.classes_) == 2:
            return v[:, 1] - v[:, 0] if v.shape[1] == 2 else v[:, 0]
        return v

    def predict(self, X):
        """Class labels: ``classes_[1]`` where the decision value is > 0 (two
        classes), else the class of the largest value."""
        d = self.decision_function(X)
        if d.ndim == 1:
            return self.classes_[(d > 0).astype(np.intp)]
        return self.classes_[np.argmax(d, axis=1)]

    @available_if(_has_proba)
    def predict_proba(self, X):
        """Class probabilities (loss 'logistic' or 'softmax'), columns in
        ``classes_`` order: the sigmoid of the decision value (two classes),
        normalised one-vs-rest sigmoids ('logistic'), or the softmax."""
        v = self._values(X)
        prob = self.model_.probabilities_from_values(v)     # columns in model labels order
        out = np.empty_like(prob)
        out[:, self.model_.labels.astype(np.intp)] = prob
        return out

    @available_if(_has_proba)
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def score(self, X, y, sample_weight=None):
        """Mean accuracy on (X, y), weighted by ``sample_weight``."""
        y = column_or_1d(y, type(self).__name__)
        return float(np.average(self.predict(X) == y, weights=sample_weight))


# --------------------------------------------------------------------------
# regression
# --------------------------------------------------------------------------

class DSGRegressor(_BaseDSG):
    """Kernel regression trained by Doubly Stochastic Gradients (Dai et al., 2014).

    Parameters as :class:`DSGClassifier`, except:

    loss : {'squared', 'huber', 'epsilon-insensitive', 'quantile'}, default='squared'
        'squared' is kernel ridge regression, 'epsilon-insensitive' SVR.
    epsilon : float, default=0.1
        Width of the insensitive tube of 'epsilon-insensitive' (``-p``).
    delta : float, default=1.0
        Huber's threshold between the quadratic and linear parts (``--delta``).
    tau : float, default=0.5
        Quantile of the 'quantile' (pinball) loss, in (0, 1] (``--tau``).

    Attributes
    ----------
    n_features_in_, feature_names_in_, model_, n_iter_, t_, gamma_, lambda_ :
        as :class:`DSGClassifier`.
    coef_ : ndarray of shape (n_blocks, feature_block, 1)
    intercept_ : ndarray of shape (1,)
    """

    _estimator_type = "regressor"
    _svm_type = SvmType.EPSILON_SVR
    _parameter_constraints = {
        "loss": [StrOptions(loss_names("regression"), listed=True, underscores=True)],
        **_BaseDSG._parameter_constraints,
        "epsilon": [_declared("epsilon")],
        "tau": ["no_validation"],      # the DSG option validator, as --tau and --delta
        "delta": ["no_validation"],
    }

    def __init__(self, loss: str = "squared", *, solver: str = _DSG.name,
                 epsilon: float = 0.1, delta: float = 1.0, tau: float = 0.5,
                 gamma: float | Literal["median"] = "median", kernel: str = "rbf",
                 alpha: float | None = None, C: float = 1.0,
                 batch_size: int | None = None, feature_block: int | None = None,
                 step: float | None = None, t0: float | None = None,
                 step_rule: str = "fit", ridge: float | None = None,
                 max_iter: float | None = None, average: bool = False,
                 fit_intercept: bool = True, solver_options: dict[str, Any] | None = None,
                 random_state: RandomStateLike = None, n_jobs: int | None = None,
                 cache_size: float = 100, precision: str = "double",
                 verbose: bool = False) -> None:
        self._store_params(locals())

    def _y(self, y):
        return regression_targets(y, type(self).__name__)

    def fit(self, X, y):
        """Train from scratch: ``max_iter`` passes over (X, y).

        Returns
        -------
        self
        """
        param = self._parameters()
        X = self._fit_X(X, reset=True)
        y = self._y(y)
        check_lengths(X, y)
        targets = Targets("regression", param.extra["loss"])
        self._trainer = self._new_trainer(param, X, targets)
        self._passes = self._run(self._trainer, X, y, float(self._trainer.h["epochs"]),
                                 self.n_jobs)
        self._publish(self._passes)
        return self

    def partial_fit(self, X, y):
        """One pass over the chunk (X, y), continuing the previous training.

        Returns
        -------
        self
        """
        if not hasattr(self, "_trainer"):
            X, y = self._begin(X, y)
        else:
            X = self._fit_X(X, reset=False)
            y = self._y(y)
            check_lengths(X, y)
        return self._fit_chunk(X, y)

    def _begin(self, X, y):
        """partial_fit's first call before its pass: the width and the trainer
        (gamma and lambda from this chunk); returns the validated chunk."""
        param = self._parameters()
        X = self._fit_X(X, reset=True)
        y = self._y(y)
        check_lengths(X, y)
        self._trainer = self._new_trainer(param, X, Targets("regression", param.extra["loss"]),
                                          first_chunk=True)
        self._passes = 0
        return X, y

    def predict(self, X):
        """Predicted targets."""
        return self._values(X)[:, 0]

    def score(self, X, y, sample_weight=None):
        """Coefficient of determination R^2 of the prediction (weighted)."""
        return r2_score(self, X, y, sample_weight)
