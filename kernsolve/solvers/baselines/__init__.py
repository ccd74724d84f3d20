"""The SBP paper's comparison solvers, ``--solver pegasos|sdca|perceptron``, for
C-SVC sub-problems (no bias) of LIBSVM's one-vs-one driver (``train.py``,
``_baselines.pyx``).  Their spec, read by ``kernsolve.solvers.REGISTRY``."""
from ..._constants import C_SVC
from .._spec import Option, Ref, SolverSpec

_TRAIN = __name__ + ".train"

SPEC = SolverSpec(
    names=("pegasos", "sdca", "perceptron"),
    svm_types={C_SVC},
    options={
        "iterations": Option("steps per sub-problem (instead of --epochs)", kind="int",
                             low=1),
        "epochs": Option("passes per sub-problem (steps = epochs * n)", default=10.0,
                         low=0, low_open=True),
    },
    binary=Ref(_TRAIN, "train_binary"),
    check=Ref(_TRAIN, "check_parameters"),
    planned_iterations=Ref(_TRAIN, "planned_iterations"),
    bias=False,
    estimator="SVC",
    ignores={"e": "a stopping tolerance (it runs --epochs or --iterations steps)",
             "h": "SMO's shrinking",
             "c": ("C (the Perceptron has no regularisation)", ("perceptron",))},
    maps={"c": ("lambda = 1/(C n)", ("pegasos", "sdca"))},
)
