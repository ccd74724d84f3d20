"""The types named in the public API's annotations (kernsolve ships ``py.typed``).

One place for the argument types several functions share; no behaviour, and
no import of kernsolve's own modules but ``_sparse`` (the option and model types
live with their owners: ``_params.OptionsLike``, ``_model.Model``,
``_model_kind.ModelKind``).  No import of scipy either (the command-line tools
never load it, see ``kernsolve._sparse``): type checkers see scipy's classes,
and at run time :class:`ScipySparse` stands for them.
"""
import os
from typing import IO, TYPE_CHECKING, Any, Callable, Mapping, Sequence, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._sparse import is_scipy_sparse

__all__ = ["ArrayLike", "NDArray", "StrPath", "DataFile", "ModelFile", "MatrixLike",
           "SparseMatrix", "CsrMatrix", "ScipySparse", "LibsvmRows", "RandomStateLike", "KernelLike"]

#: A file name: ``str`` or ``pathlib.Path`` (any ``os.PathLike[str]``).
StrPath = Union[str, os.PathLike[str]]

#: A data file for ``read_problem``/``write_problem``: a name or a binary file object.
DataFile = Union[str, os.PathLike[str], IO[bytes]]

#: A model file for ``load_model``: a name, or a file object (text or binary).
ModelFile = Union[str, os.PathLike[str], IO[str], IO[bytes]]


class _ScipySparseType(type):
    def __instancecheck__(cls, obj):
        return is_scipy_sparse(obj)


class ScipySparse(metaclass=_ScipySparseType):
    """At run time, scipy.sparse's matrix and array classes in the annotations
    (``isinstance(X, ScipySparse)`` is ``scipy.sparse.issparse(X)``), so that
    ``typing.get_type_hints`` works without importing scipy."""


if TYPE_CHECKING:
    import scipy.sparse as sp

    #: A scipy.sparse matrix or array; scipy's CSR matrix.
    SparseMatrix = Union[sp.spmatrix, sp.sparray]
    CsrMatrix = sp.csr_matrix

    #: Training or test data: anything ``numpy.asarray`` takes, or a sparse matrix.
    MatrixLike = Union[ArrayLike, sp.spmatrix, sp.sparray]
else:
    SparseMatrix = CsrMatrix = ScipySparse
    MatrixLike = Union[ArrayLike, ScipySparse]

#: LIBSVM's own Python rows: ``[{index: value}, ...]`` with 1-based indices.
LibsvmRows = Sequence[Mapping[int, float]]

#: scikit-learn's ``random_state``: a seed, a NumPy generator, or None (seed 0).
#: (Names, not objects, at run time: ``np.random`` would import numpy.random,
#: which the command-line tools never use; the modules that annotate with it
#: import numpy as np, so ``typing.get_type_hints`` finds them.)
if TYPE_CHECKING:
    RandomStateLike = Union[int, np.random.RandomState, np.random.Generator, None]
else:
    RandomStateLike = Union[int, "np.random.RandomState", "np.random.Generator", None]

#: An estimator's kernel: a name (``"rbf"``, ...) or a callable ``k(X, Y) -> matrix``.
KernelLike = Union[str, Callable[..., Any]]
