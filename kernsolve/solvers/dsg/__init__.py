"""Doubly Stochastic Gradients on random features, ``--solver dsg|udsg|cdsg``
(``train.py`` and the modules it names, ``_dsg.pyx``): whole models of their own kind (``kernsolve_model
dsg`` files).  Their spec, read by ``kernsolve.solvers.REGISTRY``."""
from ..._constants import C_SVC, EPSILON_SVR, ONE_CLASS
from .._spec import Option, Ref, SolverSpec
from .losses import names as _loss_names

_TRAIN = __name__ + ".train"
_OPTIONS = __name__ + ".options"

SPEC = SolverSpec(
    names=("dsg", "udsg", "cdsg"),
    svm_types={C_SVC, ONE_CLASS, EPSILON_SVR},
    options={
        "loss": Option("loss (default: hinge, softmax beyond 2 classes, novelty for -s 2, "
                       "epsilon-insensitive for -s 3)", kind="choice", choices=_loss_names()),
        "batch-size": Option("points per step (default 64; for the softmax loss n/16 "
                             "within [256, 2048])", kind="int", low=1),
        "feature-block": Option("random features per step (default 32; 128 for the "
                                "softmax loss)", kind="int", low=1),
        "lambda": Option("regularisation (default 1/(C n); -n nu for -s 2)", low=0),
        "step": Option("step size scale (with --step-rule fit: times 2 for the softmax, 4 for "
                       "the logistic loss)", default=1000.0, low=0, low_open=True),
        "t0": Option("step size offset", default=1000.0, low=0),
        "step-rule": Option("fit (the new block fits the batch's loss derivatives; the "
                            "largest ridge within one (t-widened) standard error of the best on the "
                            "following batches), fit-gcv (the "
                            "ridge by cross-validation on each batch) or gradient "
                            "(Algorithm 1's functional gradient step)",
                            kind="choice", choices=("fit", "fit-gcv", "gradient"),
                            default="fit"),
        "ridge": Option("ridge of the fitted step, relative to the batch size "
                        "(default: chosen by the step rule)", low=0, low_open=True),
        "epochs": Option("passes over the data", default=1.0, low=0, low_open=True),
        "average": Option("average the iterates, 0 or 1", kind="flag", default=0),
        "tau": Option("quantile of the quantile loss", default=0.5, low=0, low_open=True,
                      high=1),
        "delta": Option("threshold of the Huber loss", default=1.0, low=0, low_open=True),
        "new-blocks": Option("new-block iterations per round", kind="int", default=1,
                             low=1, only=("udsg",)),
        "old-blocks": Option("old-block iterations per round", kind="int", default=1,
                             low=0, only=("udsg",)),
        "precision": Option("the random features' sums in double or single precision "
                            "(single: float32 directions, products and sums, about "
                            "twice as fast; the cosine stays in double)", kind="choice",
                            choices=("double", "single"), default="double",
                            noun="precision"),
        "max-step-ratio": Option("cap of the line-search step over the base step",
                                 default=2.0, low=1, low_open=True, only=("cdsg",)),
    },
    median_gamma=True,
    train=Ref(_TRAIN, "train_model"),
    check=Ref(_OPTIONS, "check_parameters"),
    train_file=Ref(__name__ + ".stream", "train_file"),
    streams=("dsg", "udsg", "cdsg"),
    model_kind="dsg",
    model=Ref(__name__ + ".model", "DSGModel"),
    estimator="DSGClassifier",
    ignores={"e": "a stopping tolerance (it runs --epochs passes)",
             "h": "SMO's shrinking"},
    maps={"c": "lambda = 1/(C n)", "n": "lambda = nu (one-class)"},
)
