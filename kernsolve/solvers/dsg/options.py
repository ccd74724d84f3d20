"""DSG's options: the losses, the tasks, the option ranges and defaults, and
the settings of one run (:func:`hyperparameters`) as the compiled loop reads them.

``check_parameters`` validates what needs no data (the command line calls it
before reading a file); :func:`hyperparameters` resolves the rest once the
number of rows and features and gamma are known.
"""
from ..._constants import C_SVC, EPSILON_SVR, FOURIER_KERNELS, KERNEL_NAMES, ONE_CLASS
from ..._features import _feature_kernel, _check_gamma, median_gamma
from ..._params import option_number
from ..._random import _uint64
from ..._validation import resolve_gamma as _libsvm_gamma

__all__ = ["LOSSES", "CLASSIFICATION_LOSSES", "REGRESSION_LOSSES", "check_parameters",
           "hyperparameters", "resolve_gamma"]

# Loss name -> code of kernsolve/solvers/dsg/_losses.pxd.  Model files store names.
LOSSES = {
    "hinge": 0, "squared-hinge": 1, "logistic": 2, "softmax": 3,
    "squared": 4, "huber": 5, "epsilon-insensitive": 6, "quantile": 7,
    "novelty": 8,
}
CLASSIFICATION_LOSSES = ("hinge", "squared-hinge", "logistic", "softmax")
REGRESSION_LOSSES = ("squared", "huber", "epsilon-insensitive", "quantile")
# -s code -> task; DSG has no nu-SVC / nu-SVR formulation.
_TASKS = {C_SVC: "classification", ONE_CLASS: "novelty", EPSILON_SVR: "regression"}
_DEFAULTS = {"batch_size": 64, "feature_block": 32, "step": 1000.0, "t0": 1000.0,
             "epochs": 1.0, "average": 0, "tau": 0.5, "delta": 1.0,
             "new_blocks": 1, "old_blocks": 1, "max_step_ratio": 2.0}


def _number(extra, key, *, integer=False, low=None, low_open=True, high=None):
    option = "--" + key.replace("_", "-")
    value = option_number(extra.get(key, _DEFAULTS.get(key)), option[2:], integer)
    value = int(value) if integer else value
    if low is not None and (value <= low if low_open else value < low):
        raise ValueError(f"{option}: must be {'>' if low_open else '>='} {low:g}, "
                         f"got {value:g}")
    if high is not None and value > high:
        raise ValueError(f"{option}: must be <= {high:g}, got {value:g}")
    return value


def _task(param):
    if param.svm_type not in _TASKS:
        raise ValueError(f"-s {param.svm_type}: DSG trains classification (-s 0), "
                         "novelty detection (-s 2) and regression (-s 3); nu-SVC and "
                         "nu-SVR are SMO formulations")
    return _TASKS[param.svm_type]


def _loss(param, n_classes):
    task = _task(param)
    name = param.extra.get("loss")
    if name is None:
        if task == "classification":
            return "hinge" if n_classes <= 2 else "softmax"
        return "novelty" if task == "novelty" else "epsilon-insensitive"
    name = str(name).strip().lower().replace("_", "-")
    if name not in LOSSES:
        raise ValueError(f"--loss: unknown loss {name!r} (known: {', '.join(LOSSES)})")
    allowed = {"classification": CLASSIFICATION_LOSSES, "regression": REGRESSION_LOSSES,
               "novelty": ("novelty",)}[task]
    if name not in allowed:
        raise ValueError(f"--loss {name}: not a {task} loss (-s {param.svm_type} takes "
                         f"{', '.join(allowed)})")
    return name


def check_parameters(param):
    """Validate the DSG options of ``param`` that do not need the data."""
    _task(param)
    _loss(param, 2)
    if param.kernel_type not in FOURIER_KERNELS:
        raise ValueError(f"-t {param.kernel_type}: DSG's random features exist for the "
                         "RBF (-t 2) and Laplacian (-t 5) kernels")
    if param.probability:
        raise ValueError("-b 1: DSG models give probabilities through --loss logistic "
                         "or softmax, not Platt scaling")
    if param.weight:
        raise ValueError("-w: class weights are not supported by DSG")
    if param.n_folds:
        return
    e = param.extra
    _number(e, "batch_size", integer=True, low=1, low_open=False)
    _number(e, "feature_block", integer=True, low=1, low_open=False)
    _number(e, "step", low=0)
    _number(e, "t0", low=0, low_open=False)
    _number(e, "epochs", low=0)
    _number(e, "tau", low=0, high=1)
    _number(e, "delta", low=0)
    if _number(e, "average", integer=True) not in (0, 1):
        raise ValueError("--average: expected 0 or 1")
    if "lambda" in e:
        _number(e, "lambda", low=0, low_open=False)
    if param.solver == "udsg":
        _number(e, "new_blocks", integer=True, low=1, low_open=False)
        _number(e, "old_blocks", integer=True, low=0, low_open=False)
    if param.solver == "cdsg":
        _number(e, "max_step_ratio", low=1)


def hyperparameters(param, n_samples, n_features, loss, gamma):
    """The settings of one run (a dict the compiled loop reads), every option checked."""
    e = param.extra
    check_parameters(param)
    task = _task(param)
    if "lambda" in e:
        lam = _number(e, "lambda", low=0, low_open=False)
    elif task == "novelty":
        lam = float(param.nu)        # the one-class nu is the paper's nu here
    else:
        lam = 1.0 / (param.C * n_samples)
    step = _number(e, "step", low=0)
    t0 = _number(e, "t0", low=0, low_open=False)
    if step * lam / (t0 + 1.0) >= 1.0:
        raise ValueError(f"--step {step:g} with lambda {lam:g} and --t0 {t0:g}: the first "
                         "step would shrink the model by a factor <= 0 "
                         "(need step * lambda < t0 + 1)")
    # UDSG's G new / U old iterations; CDSG's cap on the line-search step
    # (eta <= max_step_ratio * gamma_t: the paper's theta' = ratio * theta).
    udsg = param.solver == "udsg"
    new_blocks = _number(e, "new_blocks", integer=True, low=1, low_open=False) if udsg else 1
    old_blocks = _number(e, "old_blocks", integer=True, low=0, low_open=False) if udsg else 0
    ratio = _number(e, "max_step_ratio", low=1) if param.solver == "cdsg" else 1.0
    if ratio * step * lam / (t0 + 1.0) >= 1.0:
        raise ValueError(f"--max-step-ratio {ratio:g} with --step {step:g}, lambda {lam:g} "
                         f"and --t0 {t0:g}: a line-search step could shrink the model by a "
                         "factor <= 0 (need ratio * step * lambda < t0 + 1)")
    loss_param = {"huber": _number(e, "delta", low=0), "quantile": _number(e, "tau", low=0, high=1),
                  "epsilon-insensitive": float(param.p)}.get(loss, 0.0)
    # The settings of one run, as the compiled loop reads them.
    return dict(
        loss=LOSSES[loss], loss_name=loss, loss_param=loss_param, task=task,
        batch_size=_number(e, "batch_size", integer=True, low=1, low_open=False),
        block_size=_number(e, "feature_block", integer=True, low=1, low_open=False),
        step=step, t0=t0, epochs=_number(e, "epochs", low=0),
        average=bool(_number(e, "average", integer=True)), fit_intercept=bool(param.bias),
        kernel=_feature_kernel(param.kernel_type), kernel_type=int(param.kernel_type),
        gamma=float(gamma), seed=_uint64(param.seed, "--seed"), n_features=n_features,
        cache_mb=float(param.cache_size), solver=param.solver, svm_type=int(param.svm_type),
        lam=lam, new_blocks=new_blocks, old_blocks=old_blocks, max_step_ratio=ratio)


def resolve_gamma(param, X):
    """-g value, ``median`` (the median trick on a seeded sample) or LIBSVM's
    default 1/num_features."""
    g = param.gamma
    if isinstance(g, str):
        return median_gamma(X, kernel=KERNEL_NAMES[param.kernel_type], seed=param.seed)
    if g is None or g == 0:
        return _libsvm_gamma(g, X.shape[1])     # 1/num_features
    return _check_gamma(g)
