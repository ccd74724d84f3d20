"""Training parameters: one object, equivalent to LIBSVM's option string.

``parse_options("-s 0 -t 2 -c 10 --threads 2")`` and ``Parameters(...)`` are the
two spellings of the same thing; every solver reads a ``Parameters``.
"""
from dataclasses import dataclass, field

SVM_TYPES = ("c_svc", "nu_svc", "one_class", "epsilon_svr", "nu_svr")  # -s 0..4
KERNELS = ("linear", "polynomial", "rbf", "sigmoid", "precomputed", "laplacian")  # -t 0..5


@dataclass
class Parameters:
    svm_type: int = 0            # -s, index into SVM_TYPES
    kernel_type: int = 2         # -t, index into KERNELS
    degree: int = 3              # -d
    gamma: float = None          # -g; None means 1/num_features at training time
    coef0: float = 0.0           # -r
    C: float = 1.0               # -c
    nu: float = 0.5              # -n
    p: float = 0.1               # -p (epsilon of epsilon-SVR)
    cache_size: float = 100.0    # -m, MB
    eps: float = 1e-3            # -e
    shrinking: bool = True       # -h
    probability: bool = False    # -b
    weight: dict = field(default_factory=dict)  # -wi: {label: weight}
    quiet: bool = False          # -q
    n_folds: int = 0             # -v (0 = no cross-validation)
    solver: str = "smo"          # --solver
    bias: bool = True            # --bias 0|1 (SMO/SBP without the bias term when False)
    n_jobs: int = None           # --threads
    seed: int = 0                # --seed
    extra: dict = field(default_factory=dict)  # solver-specific long options
