"""SBP: the kernelized Stochastic Batch Perceptron (``--solver sbp``) for C-SVC
and nu-SVC sub-problems of LIBSVM's one-vs-one driver (``train.py``,
``_sbp.pyx``).  Its spec, read by ``kernsolve.solvers.REGISTRY``."""
from ..._constants import C_SVC, NU_SVC
from .._spec import Option, Ref, SolverSpec

_TRAIN = __name__ + ".train"

SPEC = SolverSpec(
    names=("sbp",),
    svm_types={C_SVC, NU_SVC},
    options={
        "epochs": Option("passes over the data (iterations = epochs * n)", default=2.0,
                         low=0, low_open=True),
        "max-kernel-evals": Option("stop after this many kernel evaluations", kind="int",
                                   low=1),
        "time-limit": Option("stop after this many seconds", low=0, low_open=True),
        "validation-fraction": Option("hold out this fraction of the points; stop when "
                                      "their error stops improving",
                                      low=0, low_open=True, high=0.5),
    },
    binary=Ref(_TRAIN, "train_binary"),
    check=Ref(_TRAIN, "check_parameters"),
    planned_iterations=Ref(_TRAIN, "planned_iterations"),
    estimator="SVC",
    ignores={"h": "SMO's shrinking"},
    maps={"c": "nu by Lemma 2.1, SMO on n points"},
)
