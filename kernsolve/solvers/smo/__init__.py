"""SMO: LIBSVM's solver (``--solver smo``, the default) for all five SVM types.

The spec says "no ``binary`` and no ``train``": LIBSVM's one-vs-one driver
(``kernsolve.solvers.libsvm.driver``) runs its own formulations
(``solve_c_svc`` ... ``solve_nu_svr``) on the core in ``_smo.pyx``, through
its Python front ``_solve.solve``.
"""
from ..._constants import SvmType
from .._spec import SolverSpec

SPEC = SolverSpec(
    names=("smo",),
    svm_types=frozenset(SvmType),
    estimator="SVC",
)
