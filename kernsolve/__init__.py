"""kernsolve: kernel machines in the LIBSVM tradition, compiled with Cython/OpenMP.

Public names are imported lazily from the private modules listed in
``_EXPORTS`` so ``import kernsolve`` stays cheap.
"""
import importlib
import os
from typing import TYPE_CHECKING

__version__ = "0.1.0"

from ._wait_policy import openmp_loading

try:  # the smallest compiled module: present in every built copy; it loads OpenMP
    with openmp_loading():
        from ._core import _parallel as _built  # noqa: F401
except ImportError:
    _here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    raise ImportError(
        f"kernsolve is being imported from its source folder {_here}, whose compiled "
        "core is not built: run 'pip install -e .' there (it builds the core in "
        "place), or start Python from another folder to use an installed copy"
    ) from None

_EXPORTS = {
    "show_config": "._config",
    "resolve_n_jobs": "._threads",
    "dataset_path": ".datasets",
    "DataFormatError": "._errors",
    "ModelFormatError": "._errors",
    "read_problem": "._io",
    "write_problem": "._io",
    "kernel_matrix": "._kernels",
    "Parameters": "._params",
    "parse_options": "._params",
    "Model": "._model",
    "save_model": "._model",
    "load_model": "._model",
    "train": "._api",
    "predict": "._predict",
    "SVC": ".estimators.svm",
    "SVR": ".estimators.svm",
    "OneClassSVM": ".estimators.svm",
    "NuSVC": ".estimators.svm",
    "NuSVR": ".estimators.svm",
    "NotFittedError": "._errors",
    "ConvergenceWarning": "._errors",
    "DSGClassifier": ".estimators.dsg",
    "DSGRegressor": ".estimators.dsg",
    "cross_validation": ".model_selection.cv",
    "grid_search": ".model_selection.grid",
    "halving_grid_search": ".model_selection.halving",
    "EigenProRegressor": ".estimators.eigenpro",
    "EigenProClassifier": ".estimators.eigenpro",
    "random_features": "._features",
    "median_gamma": "._features",
    "read_partitions": "._cluster",
    "dask_predict": "._cluster",
    "dask_partial_fit": "._cluster",
    "dask_parallel_fit": "._cluster",
}

__all__ = sorted(_EXPORTS) + ["__version__"]

if TYPE_CHECKING:  # the lazy exports above, spelled out for type checkers (py.typed)
    from ._api import train
    from ._cluster import dask_parallel_fit, dask_partial_fit, dask_predict, read_partitions
    from ._config import show_config
    from ._errors import ConvergenceWarning, DataFormatError, ModelFormatError, NotFittedError
    from ._features import median_gamma, random_features
    from ._io import read_problem, write_problem
    from ._kernels import kernel_matrix
    from ._model import Model, load_model, save_model
    from ._params import Parameters, parse_options
    from ._predict import predict
    from ._threads import resolve_n_jobs
    from .datasets import dataset_path
    from .estimators.dsg import DSGClassifier, DSGRegressor
    from .estimators.eigenpro import EigenProClassifier, EigenProRegressor
    from .estimators.svm import SVC, SVR, NuSVC, NuSVR, OneClassSVM
    from .model_selection.cv import cross_validation
    from .model_selection.grid import grid_search
    from .model_selection.halving import halving_grid_search


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kernsolve' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
