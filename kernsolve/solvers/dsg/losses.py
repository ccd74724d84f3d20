"""DSG's losses: the one table of their names and properties.

Everything that names or sorts the losses reads :data:`TABLE`: the
``--loss`` choices of the spec, the estimators' ``loss`` constraints, the
loss of a task, the fitted step's factor, the loss parameter, the
probabilities.  Their values, derivatives and derivative bounds are in
``_losses.pxd``, under ``LOSS_<NAME>`` = ``code`` (``tests/test_dsg_losses.py``
checks the two agree).  A new loss is a row here and its functions there
(doc/dsg.md, "Losses").  Model files store the name, not the code.
"""
from typing import NamedTuple, Optional

__all__ = ["Loss", "TABLE", "LOSS", "names", "default_loss"]


class Loss(NamedTuple):
    name: str           # --loss, the estimators' loss=, the model files
    code: int           # LOSS_<NAME> of _losses.pxd
    task: str           # "classification", "regression" or "novelty"
    # The fitted step's scale (--step-rule fit): 1 / (a bound on the loss's
    # second derivative in u), the step that minimises the loss's quadratic
    # upper bound (a majorize-minimize, i.e. bounded-Newton, step; Boehning
    # 1992 for the softmax, whose Hessian is at most (I - 11'/K) / 2).  1 for
    # curvature 1 (squared, Huber, squared hinge) or none (hinge,
    # epsilon-insensitive, quantile, novelty).
    step_factor: float
    # the option that gives the loss's parameter: "delta" (--delta), "tau"
    # (--tau), "epsilon" (LIBSVM's -p), or None
    param: Optional[str]
    # how the outputs give class probabilities: "one-vs-rest" (sigmoids,
    # normalised), "multinomial" (the softmax), or None (no probabilities)
    probabilities: Optional[str]
    # one output per class, the target a class index (outputs coupled)
    per_class: bool
    # the loss a run takes when --loss is not given: "binary" (two classes),
    # "multiclass" (more), "task" (the task's only default), or None
    default: Optional[str]


TABLE = (
    Loss("hinge", 0, "classification", 1.0, None, None, False, "binary"),
    Loss("squared-hinge", 1, "classification", 1.0, None, None, False, None),
    Loss("logistic", 2, "classification", 4.0, None, "one-vs-rest", False, None),
    Loss("softmax", 3, "classification", 2.0, None, "multinomial", True, "multiclass"),
    Loss("squared", 4, "regression", 1.0, None, None, False, None),
    Loss("huber", 5, "regression", 1.0, "delta", None, False, None),
    Loss("epsilon-insensitive", 6, "regression", 1.0, "epsilon", None, False, "task"),
    Loss("quantile", 7, "regression", 1.0, "tau", None, False, None),
    Loss("novelty", 8, "novelty", 1.0, None, None, False, "task"),
)

# name -> Loss
LOSS = {loss.name: loss for loss in TABLE}


def names(task=None, probabilities=False):
    """The loss names in table order: all, a task's, or those with probabilities."""
    return tuple(loss.name for loss in TABLE
                 if (task is None or loss.task == task)
                 and (not probabilities or loss.probabilities is not None))


def default_loss(task, n_classes):
    """The loss of a task when none is given (two classes or more for classification)."""
    if task != "classification":
        kind = "task"
    else:
        kind = "binary" if n_classes <= 2 else "multiclass"
    return next(loss.name for loss in TABLE if loss.task == task and loss.default == kind)
