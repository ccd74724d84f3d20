"""kernsolve: kernel machines in the LIBSVM tradition, compiled with Cython/OpenMP."""
__version__ = "0.1.0"

from ._config import show_config
from ._threads import resolve_n_jobs
from .datasets import dataset_path

__all__ = ["show_config", "resolve_n_jobs", "dataset_path", "__version__"]
