"""The SVM-type and kernel tables of kernsolve/_constants.py.

They mirror LIBSVM's svm.h enums; the compiled kernel engine's C enum and
``kernel_traits`` (kernsolve/_core/_kernel.pxd) mirror KERNEL_TABLE's columns
it reads, exposed in ``_kernel.KERNEL_TRAITS``, so the Python and Cython
tables are compared here.
"""
from kernsolve import _constants as c
from kernsolve._core import _kernel
from kernsolve._params import KERNELS, SVM_TYPES


def test_codes_are_libsvms():
    assert [int(s) for s in c.SvmType] == [0, 1, 2, 3, 4]
    assert (c.C_SVC, c.NU_SVC, c.ONE_CLASS, c.EPSILON_SVR, c.NU_SVR) == (0, 1, 2, 3, 4)
    assert (c.LINEAR, c.POLY, c.RBF, c.SIGMOID, c.PRECOMPUTED, c.LAPLACIAN) == tuple(range(6))


def test_python_and_cython_kernel_tables_agree():
    assert _kernel.KERNEL_TRAITS == {
        int(k.code): {"name": k.name, "base": int(k.base), "blas": k.blas}
        for k in c.KERNEL_TABLE}
    assert _kernel.KERNEL_NAMES == {int(k): c.KERNEL_NAMES[k] for k in c.KernelType}


def test_the_table_is_indexed_by_code():
    assert [k.code for k in c.KERNEL_TABLE] == list(c.KernelType)
    assert [int(b) for b in c.KernelBase] == [-1, 0, 1, 2]      # the engine's BASE_*


def test_name_tables():
    assert SVM_TYPES is c.SVM_TYPE_NAMES and KERNELS is c.KERNEL_NAMES
    assert len(c.SVM_TYPE_NAMES) == len(c.SvmType)
    assert len(c.KERNEL_NAMES) == len(c.KernelType)
    assert c.KERNEL_CODES["poly"] == c.KERNEL_CODES["polynomial"] == c.POLY
    # scikit-learn's names, and kernsolve's own kernels under their model-file names
    assert {"linear", "poly", "rbf", "sigmoid", "precomputed"} <= set(c.ESTIMATOR_KERNELS)
    assert len(c.ESTIMATOR_KERNELS) == len(c.KernelType)
    assert all(c.KERNEL_CODES[name] == code for name, code in c.ESTIMATOR_KERNELS.items())


def test_predicates():
    assert [c.is_classification(s) for s in range(5)] == [True, True, False, False, False]
    assert [c.is_regression(s) for s in range(5)] == [False, False, False, True, True]
    assert [c.has_gamma(t) for t in range(6)] == [False, True, True, True, False, True]
    assert [c.has_coef0(t) for t in range(6)] == [False, True, False, True, False, False]
    assert [c.has_degree(t) for t in range(6)] == [False, True, False, False, False, False]
    assert [c.spoken("a"), c.spoken("ab"), c.spoken("abc")] == ["a", "a and b", "a, b and c"]
    # LIBSVM's svm_check_parameter: C for C-SVC, epsilon-SVR, nu-SVR; nu for the nu types
    assert sorted(c.C_TYPES) == [0, 3, 4] and sorted(c.NU_TYPES) == [1, 2, 4]
