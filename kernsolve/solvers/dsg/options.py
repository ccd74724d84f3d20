"""DSG's options: the tasks and their losses (from the table of losses.py),
the rules between options, and the settings of one run
(:func:`hyperparameters`) as the compiled loop reads them.

The options' ranges and defaults are declared in the family's spec
(``kernsolve.solvers.dsg.SPEC``) and checked by ``Parameters.solver_options``.
``check_parameters`` adds what needs no data (the loss of the task, the
kernel, ...; the command line calls it before reading a file);
:func:`hyperparameters` resolves the rest once the number of rows and
features and gamma are known.
"""
from ..._constants import C_SVC, EPSILON_SVR, FOURIER_KERNELS, ONE_CLASS
from ..._features import _feature_kernel, _check_gamma
from ..._random import _uint64
from . import SPEC
from .losses import LOSS, default_loss, names
from ..._params import Parameters
from .._spec import exact_number

__all__ = ["check_parameters", "default_batch_block", "hyperparameters", "loss_for",
           "feature_gamma"]

# The batch and feature block when the options do not give them: the paper's
# 64 and 32 (Dai et al., Adult), except for the softmax (the per_class loss of
# losses.py), whose fitted step wants larger batches and blocks, about 16
# steps a pass: one-pass test errors with the defaults before -> these
# (benchmarks/history/RESULTS.md, session 10):
# Fashion-MNIST 21.4% -> 15.9% (and 83 -> 10 s), its first 20000 rows 19.3%
# -> 15.9%, 2000 rows 26.0% -> 20.7%, MNIST's 8000 rows 10.8-12.6% -> 6.8-8.2%.
DEFAULT_BATCH_BLOCK = (64, 32)
SOFTMAX_BATCH_RANGE = (256, 2048)
SOFTMAX_BLOCK = 128


def default_batch_block(loss, n_samples):
    """(batch size, feature block) of a run that sets neither."""
    if not LOSS[loss].per_class:
        return DEFAULT_BATCH_BLOCK
    low, high = SOFTMAX_BATCH_RANGE
    return min(high, max(low, n_samples // 16)), SOFTMAX_BLOCK


# -s code -> task; DSG has no nu-SVC / nu-SVR formulation.
_TASKS = {C_SVC: "classification", ONE_CLASS: "novelty", EPSILON_SVR: "regression"}


def _task(param):
    if param.svm_type not in _TASKS:
        raise ValueError(f"-s {param.svm_type}: DSG trains classification (-s 0), "
                         "novelty detection (-s 2) and regression (-s 3); nu-SVC and "
                         "nu-SVR are SMO formulations")
    return _TASKS[param.svm_type]


def loss_for(param, n_classes):
    """The loss ``param`` trains on ``n_classes`` classes: ``--loss``, or by
    task (two classes hinge, more softmax; novelty; epsilon-insensitive)."""
    task = _task(param)
    name = param.solver_options()["loss"]      # a declared loss, or None
    if name is None:
        return default_loss(task, n_classes)
    allowed = names(task)
    if name not in allowed:
        raise ValueError(f"--loss {name}: not a {task} loss (-s {param.svm_type} takes "
                         f"{', '.join(allowed)})")
    return name


def check_parameters(param):
    """Validate the DSG options of ``param`` that do not need the data.

    Returns ``param.solver_options()``: the options checked against their
    declared ranges, with the declared defaults.
    """
    opts = param.solver_options()
    _task(param)
    loss_for(param, 2)
    if param.kernel_type not in FOURIER_KERNELS:
        raise ValueError(f"-t {param.kernel_type}: DSG's random features exist for the "
                         "RBF (-t 2) and Laplacian (-t 5) kernels")
    if param.probability:
        raise ValueError("-b 1: DSG models give probabilities through --loss logistic "
                         "or softmax, not Platt scaling")
    if param.weight:
        raise ValueError("-w: class weights are not supported by DSG")
    letter = _lambda_letter(param)
    if opts["lambda"] is not None and letter is not None:
        field_name = "nu" if letter == "n" else "C"
        if getattr(param, field_name) != getattr(Parameters, field_name):
            raise ValueError(f"-{letter} {exact_number(getattr(param, field_name))}: "
                             f"--solver {param.solver} takes lambda from --lambda when it "
                             f"is given; give -{letter} ({SPEC.maps[letter]}) or --lambda")
    return opts


def _lambda_letter(param):
    """The LIBSVM letter lambda comes from when --lambda is not given: -n for
    novelty detection (the paper's nu), -c otherwise (1/(C n))."""
    return "n" if _task(param) == "novelty" else "c"


def lambda_note(param, n_samples):
    """The summary's note on where lambda came from (``(from -c 4: lambda =
    1/(C n), n = 270)``), or "" when --lambda gave it."""
    if param.solver_options()["lambda"] is not None:
        return ""
    if _lambda_letter(param) == "n":
        return " " + SPEC.mapping_note("n", param.nu)
    return " " + SPEC.mapping_note("c", param.C, n=n_samples)


def hyperparameters(param, n_samples, n_features, loss, gamma):
    """The settings of one run (a dict the compiled loop reads), every option checked."""
    opts = check_parameters(param)
    task = _task(param)
    if opts["lambda"] is not None:
        lam = opts["lambda"]
    elif _lambda_letter(param) == "n":
        lam = float(param.nu)        # the one-class nu is the paper's nu here
    else:
        lam = 1.0 / (param.C * n_samples)
    step, t0 = opts["step"], opts["t0"]
    # the fitted step's scale for the loss (1 for the other rules: fit-gcv
    # keeps session 5's steps, gradient is Algorithm 1's)
    factor = LOSS[loss].step_factor if opts["step_rule"] == "fit" else 1.0
    if factor * step * lam / (t0 + 1.0) >= 1.0:
        scaled = f" (times {factor:g} for the {loss} loss's fitted step)" if factor != 1 else ""
        raise ValueError(f"--step {step:g}{scaled} with lambda {lam:g} and --t0 {t0:g}: the "
                         "first step would shrink the model by a factor <= 0 "
                         "(need step * lambda < t0 + 1)")
    # UDSG's G new / U old iterations; CDSG's cap on the line-search step
    # (eta <= max_step_ratio * gamma_t: the paper's theta' = ratio * theta).
    # The other names run DSG's Algorithm 1: one new block, no old ones, no cap.
    new_blocks = opts.get("new_blocks", 1)
    old_blocks = opts.get("old_blocks", 0)
    ratio = opts.get("max_step_ratio", 1.0)
    if ratio * factor * step * lam / (t0 + 1.0) >= 1.0:
        raise ValueError(f"--max-step-ratio {ratio:g} with --step {step:g}, lambda {lam:g} "
                         f"and --t0 {t0:g}: a line-search step could shrink the model by a "
                         "factor <= 0 (need ratio * step * lambda < t0 + 1)")
    batch, block = default_batch_block(loss, n_samples)
    source = LOSS[loss].param       # the option that gives the loss's parameter
    loss_param = (0.0 if source is None else float(param.p) if source == "epsilon"
                  else opts[source])
    # The settings of one run, as the compiled loop reads them.
    return dict(
        loss=LOSS[loss].code, loss_name=loss, loss_param=loss_param, task=task,
        batch_size=opts["batch_size"] or batch, block_size=opts["feature_block"] or block,
        step=step, step_factor=factor, t0=t0, epochs=opts["epochs"],
        average=bool(opts["average"]), fit_intercept=bool(param.bias),
        kernel=_feature_kernel(param.kernel_type), kernel_type=int(param.kernel_type),
        gamma=float(gamma), seed=_uint64(param.seed, "--seed"), n_features=n_features,
        cache_mb=float(param.cache_size), solver=param.solver, svm_type=int(param.svm_type),
        lam=lam, new_blocks=new_blocks, old_blocks=old_blocks, max_step_ratio=ratio,
        step_rule=opts["step_rule"], ridge=0.0 if opts["ridge"] is None else opts["ridge"],
        precision=opts["precision"])


def feature_gamma(param, X):
    """gamma of the features: :meth:`Parameters.resolved_gamma` (the one rule
    of every solver, ``kernsolve._validation.resolve_gamma``: ``-g`` value,
    ``median``, or LIBSVM's 1/num_features), then the features' range: a
    value given must be > 0 (random features have no constant kernel) and
    keep sqrt(2 gamma) finite."""
    gamma = param.resolved_gamma(X.shape[1], X)
    return gamma if param.gamma is None or param.gamma == 0 else _check_gamma(gamma)
