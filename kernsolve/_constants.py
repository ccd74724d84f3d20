"""The SVM types and kernels: their codes, their names and what they use.

This module owns the numbers of LIBSVM's ``-s`` and ``-t`` options (and
kernsolve's Laplacian kernel, ``-t 5``) and every table that names them: the
names written in model files, the names users may type, scikit-learn's kernel
names.  Everything else uses these names instead of literal codes.

Each kernel's properties (what its value is a function of, which fast paths
and uses apply) are one row of :data:`KERNEL_TABLE`; the sets other modules
test (``GAMMA_KERNELS``, ``FOURIER_KERNELS``, ...) are derived from it, so
code asks a property, never a list of kernels.  The compiled kernel engine
has its own C enum of the kernel codes and a mirror of the columns it reads
(``kernel_traits`` in ``kernsolve/_core/_kernel.pxd``), which
``tests/test_constants.py`` checks against the table.

The fields of :class:`~kernsolve.Parameters` stay plain ``int``: an
``IntEnum`` member compares and hashes as its number, so ``param.svm_type ==
SvmType.NU_SVC`` and ``param.kernel_type in GAMMA_KERNELS`` work on either.
"""
from dataclasses import dataclass
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


class KernelBase(IntEnum):
    """What a kernel's value is a function of; the numbers are the compiled
    engine's ``BASE_*`` (``kernsolve/_core/_kernel.pxd``)."""
    NONE = -1       # precomputed: the values are given, not computed
    DOT = 0         # <x, y>
    SQDIST = 1      # ||x - y||^2
    L1 = 2          # ||x - y||_1


@dataclass(frozen=True)
class Kernel:
    """One kernel's row of :data:`KERNEL_TABLE`: its names and what it uses."""
    code: KernelType
    name: str                 # in model files (``kernel_type rbf``), LIBSVM's spelling
    estimator_name: str       # scikit-learn's ``kernel=`` spelling
    usage: str                # its line in svm-train's usage text (``-t``)
    params: frozenset         # which of "gamma", "coef0", "degree" it reads
    base: KernelBase
    # Its values on dense rows come from dot products (and squared norms): BLAS
    # dgemm tiles, ks_dots, rows of Y^T; sparse data dense enough is made dense
    # for them.  Else every value comes from the engine's per-value loops.
    blas: bool
    # 0 <= k(x, y) <= k(x, x) = 1: float16 holds its values (EigenPro's half
    # precision) and its diagonal is 1.
    bounded: bool
    # Its random Fourier features (the name in ``_core/_features.pyx``'s
    # FEATURE_CODES; DSG, EigenPro's --features), which also give the median
    # trick (``-g median``) its distance; None: none.
    features: str | None = None
    # Positive semi-definite for every gamma (the polynomial kernel only with
    # coef0 >= 0): the kernels EigenPro's least squares accept.
    psd: bool = False

    @property
    def bit_rows(self):
        """Binary rows may be held as bit sets (``_core/_bits.h``): every base
        is an integer count on 0/1 data, of common bits (a dot product) or of
        differing bits (a distance)."""
        return self.base != KernelBase.NONE


# The kernels, by code: the one place a kernel's properties are written.  The
# compiled engine mirrors the columns it reads (``kernel_traits`` in
# ``_core/_kernel.pxd``); tests/test_constants.py checks the mirror and
# tests/test_kernel_contract.py checks every row against its formula.
_G, _R, _D = "gamma", "coef0", "degree"
KERNEL_TABLE = (
    Kernel(LINEAR, "linear", "linear", "linear: u'*v", frozenset(),
           KernelBase.DOT, blas=True, bounded=False, psd=True),
    Kernel(POLY, "polynomial", "poly", "polynomial: (gamma*u'*v + coef0)^degree",
           frozenset({_G, _R, _D}), KernelBase.DOT, blas=True, bounded=False, psd=True),
    Kernel(RBF, "rbf", "rbf", "radial basis function: exp(-gamma*|u-v|^2)",
           frozenset({_G}), KernelBase.SQDIST, blas=True, bounded=True,
           features="gaussian", psd=True),
    Kernel(SIGMOID, "sigmoid", "sigmoid", "sigmoid: tanh(gamma*u'*v + coef0)",
           frozenset({_G, _R}), KernelBase.DOT, blas=True, bounded=False),
    Kernel(PRECOMPUTED, "precomputed", "precomputed",
           "precomputed kernel (kernel values in training_set_file)", frozenset(),
           KernelBase.NONE, blas=False, bounded=False),
    Kernel(LAPLACIAN, "laplacian", "laplacian", "laplacian: exp(-gamma*|u-v|_1) (kernsolve)",
           frozenset({_G}), KernelBase.L1, blas=False, bounded=True,
           features="laplacian", psd=True),
)

# The names in LIBSVM model files (``svm_type c_svc``, ``kernel_type rbf``),
# indexed by code; also the names ``parse_options({"svm_type": "nu_svc"})`` takes.
SVM_TYPE_NAMES = ("c_svc", "nu_svc", "one_class", "epsilon_svr", "nu_svr")
KERNEL_NAMES = tuple(k.name for k in KERNEL_TABLE)

# The kernel names a user may give to ``kernel_matrix`` and friends: the
# model-file names plus scikit-learn's spelling ("poly").
KERNEL_CODES = {**{k.estimator_name: k.code for k in KERNEL_TABLE},
                **{k.name: k.code for k in KERNEL_TABLE}}

# scikit-learn's ``kernel=`` names (the estimators' spelling: "poly", not
# "polynomial"), with kernsolve's "laplacian".
ESTIMATOR_KERNELS = {k.estimator_name: k.code for k in KERNEL_TABLE}

CLASSIFICATION = frozenset({C_SVC, NU_SVC})
REGRESSION = frozenset({EPSILON_SVR, NU_SVR})
# The SVM types whose problem has a C (LIBSVM's svm_check_parameter), and a nu.
C_TYPES = frozenset({C_SVC, EPSILON_SVR, NU_SVR})
NU_TYPES = frozenset({NU_SVC, ONE_CLASS, NU_SVR})

# The kernels that read gamma (LIBSVM's model files write it for these only),
# coef0, and the degree.
GAMMA_KERNELS = frozenset(k.code for k in KERNEL_TABLE if _G in k.params)
COEF0_KERNELS = frozenset(k.code for k in KERNEL_TABLE if _R in k.params)
# The shift-invariant kernels with random Fourier features (DSG, EigenPro's
# --features) and the median trick.
FOURIER_KERNELS = tuple(k.code for k in KERNEL_TABLE if k.features)
# The kernels EigenPro's least squares accept (see Kernel.psd).
PSD_KERNELS = frozenset(k.code for k in KERNEL_TABLE if k.psd)
# The kernels whose values float16 holds (see Kernel.bounded).
BOUNDED_KERNELS = frozenset(k.code for k in KERNEL_TABLE if k.bounded)


def spoken(words):
    """``words`` joined for a message: 'a', 'a and b', 'a, b and c'."""
    words = list(words)
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


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
    return _D in KERNEL_TABLE[kernel_type].params
