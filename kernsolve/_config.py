"""``kernsolve.show_config()``: how this copy was built and how it will run."""
import platform
import sys
from types import ModuleType

from . import __version__
from ._core import _parallel
from ._threads import cpu_count, resolve_n_jobs, wait_policy

_build: ModuleType | None
try:  # written by setup.py when it builds the core
    from . import _build_config as _build
except ImportError:  # pragma: no cover - built without setup.py
    _build = None


def config():
    """Return the build and runtime configuration as a dict."""
    if _build is not None:
        compiler, args, debug = _build.COMPILER, _build.COMPILE_ARGS, _build.DEBUG
    else:  # pragma: no cover - built without setup.py
        compiler, args, debug = "unknown", [], False
    return {
        "version": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "openmp": _parallel.openmp_enabled(),
        "cores": cpu_count(),
        "default_threads": resolve_n_jobs(None),
        "wait_policy": wait_policy(),
        "compiler": compiler,
        "compile_args": " ".join(args),
        "debug_checks": debug,
    }


def show_config(file=None):
    """Print version, OpenMP on/off, thread count and compiler flags."""
    for key, value in config().items():
        print(f"{key:>16}: {value}", file=file or sys.stdout)
