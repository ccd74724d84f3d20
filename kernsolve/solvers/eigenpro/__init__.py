"""EigenPro and plain kernel SGD for kernel least squares, ``--solver
eigenpro|kernel-sgd`` (``train.py``, ``features.py``, ``nystrom.py``, ``model.py``): whole models
(``kernsolve_model eigenpro`` files for classification).  Their spec, read by
``kernsolve.solvers.REGISTRY``.

No ``check``: beyond each option's declared range, EigenPro's rules need n
(``M <= n``, ``k < M``); ``train.eigenpro_options`` makes them when it trains.

``-c`` is refused rather than mapped: kernel least squares has no cost, and
its regularisation is ridge lambda on centres (``--lambda``) and early
stopping for the expansion (``--epochs``); a C -> lambda rule such as DSG's
would give ``-c`` a second meaning that the expansion cannot honour.
"""
from ..._constants import C_SVC, EPSILON_SVR
from .._spec import Option, Ref, SolverSpec

SPEC = SolverSpec(
    names=("eigenpro", "kernel-sgd"),
    svm_types={C_SVC, EPSILON_SVR},
    options={
        "eigen-directions": Option("eigen-directions k of the preconditioner "
                                   "(default min(160, M - 1))", kind="int", low=0,
                                   only=("eigenpro",),
                                   noun="the number of eigen-directions k"),
        "subsample": Option("subsample size M (default min(4800, n)); with --centers, "
                            "q auxiliary rows for FALKON's preconditioner instead of its "
                            "p^3 factors", kind="int", low=1,
                            noun="the subsample size M"),
        "batch-size": Option("mini-batch size m (default min(256, n))", kind="int", low=1,
                             noun="the mini-batch size"),
        "damping": Option("damping tau", default=1.0, low=0, low_open=True, high=1,
                          only=("eigenpro",), noun="tau"),
        "epochs": Option("passes over the data", kind="int", default=10, low=1,
                         noun="the number of epochs"),
        "step": Option("step size (default: the paper's rule)", low=0, low_open=True,
                       noun="the step size"),
        "features": Option("random features instead of the kernel expansion", kind="int",
                           low=1, noun="the number of random features"),
        "centers": Option("a model on p centres drawn from the rows, solved by FALKON "
                          "(Nystrom-preconditioned conjugate gradient); auto: about "
                          "15000 sqrt(n / 60000), capped by memory", kind="int", low=1,
                          only=("eigenpro",), noun="the number of centres p",
                          words=("auto",)),
        "lambda": Option("ridge regularisation with --centers (default 1e-6)", low=0,
                         only=("eigenpro",), noun="lambda"),
        "precision": Option("K(X, centres) in double, single or half precision with "
                            "--centers (single: half the memory, float32 products; half: "
                            "float16 storage, float32 products)", kind="choice",
                            choices=("double", "single", "half"), default="double",
                            only=("eigenpro",), noun="precision"),
    },
    median_gamma=True,
    train=Ref(__name__ + ".train", "train_eigenpro"),
    train_cluster=Ref("kernsolve._cluster_centres", "train_file_on_cluster"),
    model_kind="eigenpro",
    model=Ref(__name__ + ".model", "EigenProModel"),
    estimator="EigenProClassifier",
    ignores={"c": "C (kernel least squares has no cost): regularise with --lambda "
                  "(with --centers) or fewer --epochs",
             "e": "a stopping tolerance (it runs --epochs passes)",
             "h": "SMO's shrinking",
             "p": "epsilon (it fits squared errors)"},
)
