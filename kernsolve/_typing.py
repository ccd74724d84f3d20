"""The types named in the public API's annotations (kernsolve ships ``py.typed``).

One place for the argument types several functions share; no behaviour, and
no import of kernsolve's own modules (the option and model types live with
their owners: ``_params.OptionsLike``, ``_model.Model``, ``_model_kind.ModelKind``).
"""
import os
from typing import IO, Any, Callable, Mapping, Sequence, Union

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

__all__ = ["ArrayLike", "NDArray", "StrPath", "DataFile", "ModelFile", "MatrixLike",
           "SparseMatrix", "LibsvmRows", "RandomStateLike", "KernelLike"]

#: A file name: ``str`` or ``pathlib.Path`` (any ``os.PathLike[str]``).
StrPath = Union[str, os.PathLike[str]]

#: A data file for ``read_problem``/``write_problem``: a name or a binary file object.
DataFile = Union[str, os.PathLike[str], IO[bytes]]

#: A model file for ``load_model``: a name, or a file object (text or binary).
ModelFile = Union[str, os.PathLike[str], IO[str], IO[bytes]]

# scipy.sparse.sparray (the csr_array family) exists from SciPy 1.11 on.
_SPARRAY = getattr(sp, "sparray", sp.spmatrix)

#: A scipy.sparse matrix or array.
SparseMatrix = Union[sp.spmatrix, _SPARRAY]

#: Training or test data: anything ``numpy.asarray`` takes, or a sparse matrix.
MatrixLike = Union[ArrayLike, sp.spmatrix, _SPARRAY]

#: LIBSVM's own Python rows: ``[{index: value}, ...]`` with 1-based indices.
LibsvmRows = Sequence[Mapping[int, float]]

#: scikit-learn's ``random_state``: a seed, a NumPy generator, or None (seed 0).
RandomStateLike = Union[int, np.random.RandomState, np.random.Generator, None]

#: An estimator's kernel: a name (``"rbf"``, ...) or a callable ``k(X, Y) -> matrix``.
KernelLike = Union[str, Callable[..., Any]]
