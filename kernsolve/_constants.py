"""The SVM types and kernels: their codes, their names and what they use.

This module owns the numbers of LIBSVM's ``-s`` and ``-t`` options (and
kernsolve's Laplacian kernel, ``-t 5``) and every table that names them: the
names written in model files, the names users may type, scikit-learn's kernel
names.  Everything else uses these names instead of literal codes.

The compiled kernel engine has its own C enum of the kernel codes
(``kernsolve/_core/_kernel.pxd``); it mirrors :class:`KernelType`, and
``tests/test_constants.py`` checks that the two agree (through the engine's
``KERNEL_NAMES`` table).

The fields of :class:`~kernsolve.Parameters` stay plain ``int``: an
``IntEnum`` member compares and hashes as its number, so ``param.svm_type ==
SvmType.NU_SVC`` and ``param.kernel_type in GAMMA_KERNELS`` work on either.
"""
from enum import IntEnum


class SvmType(IntEnum):
    """LIBSVM's ``-s`` codes (``svm.h``: ``enum { C_SVC, NU_SVC, ... }``)."""
    C_SVC = 0
    NU_SVC = 1
    ONE_CLASS = 2
    EPSILON_SVR = 3
    NU_SVR = 4


class KernelType(IntEnum):
    """LIBSVM's ``-t`` codes; ``LAPLACIAN`` (5) is kernsolve's own."""
    LINEAR = 0
    POLY = 1
    RBF = 2
    SIGMOID = 3
    PRECOMPUTED = 4
    LAPLACIAN = 5


C_SVC, NU_SVC, ONE_CLASS, EPSILON_SVR, NU_SVR = SvmType
LINEAR, POLY, RBF, SIGMOID, PRECOMPUTED, LAPLACIAN = KernelType

# The names in LIBSVM model files (``svm_type c_svc``, ``kernel_type rbf``),
# indexed by code; also the names ``parse_options({"svm_type": "nu_svc"})`` takes.
SVM_TYPE_NAMES = ("c_svc", "nu_svc", "one_class", "epsilon_svr", "nu_svr")
KERNEL_NAMES = ("linear", "polynomial", "rbf", "sigmoid", "precomputed", "laplacian")

# The kernel names a user may give to ``kernel_matrix`` and friends: the
# model-file names plus scikit-learn's "poly".
KERNEL_CODES = {name: KernelType(code) for code, name in enumerate(KERNEL_NAMES)}
KERNEL_CODES["poly"] = POLY

# scikit-learn's ``kernel=`` names (the estimators' spelling: "poly", not
# "polynomial"), with kernsolve's "laplacian".
ESTIMATOR_KERNELS = {"linear": LINEAR, "poly": POLY, "rbf": RBF, "sigmoid": SIGMOID,
                     "precomputed": PRECOMPUTED, "laplacian": LAPLACIAN}

CLASSIFICATION = frozenset({C_SVC, NU_SVC})
REGRESSION = frozenset({EPSILON_SVR, NU_SVR})
# The SVM types whose problem has a C (LIBSVM's svm_check_parameter), and a nu.
C_TYPES = frozenset({C_SVC, EPSILON_SVR, NU_SVR})
NU_TYPES = frozenset({NU_SVC, ONE_CLASS, NU_SVR})

# The kernels that read gamma (LIBSVM's model files write it for these only),
# coef0, and the degree.
GAMMA_KERNELS = frozenset({POLY, RBF, SIGMOID, LAPLACIAN})
COEF0_KERNELS = frozenset({POLY, SIGMOID})
# The shift-invariant kernels with random Fourier features (DSG, EigenPro's
# --features): Gaussian and Laplacian.
FOURIER_KERNELS = (RBF, LAPLACIAN)
# The kernels that are positive semi-definite for every gamma (the polynomial
# one only with coef0 >= 0): the ones EigenPro's least squares accept.
PSD_KERNELS = frozenset({LINEAR, POLY, RBF, LAPLACIAN})


def is_classification(svm_type):
    """C-SVC or nu-SVC: one-vs-one models with class labels."""
    return svm_type in CLASSIFICATION


def is_regression(svm_type):
    """epsilon-SVR or nu-SVR: real-valued targets."""
    return svm_type in REGRESSION


def has_gamma(kernel_type):
    """Whether the kernel reads gamma (so gamma is checked, defaulted and written)."""
    return kernel_type in GAMMA_KERNELS


def has_coef0(kernel_type):
    """Whether the kernel reads coef0 (polynomial and sigmoid)."""
    return kernel_type in COEF0_KERNELS


def has_degree(kernel_type):
    """Whether the kernel reads the degree (polynomial only)."""
    return kernel_type == POLY
