"""Shared fixtures: the real datasets of ../shared/data, read in small slices."""
import lzma
import os

import pytest

SHARED_DATA = os.environ.get(
    "KERNSOLVE_SHARED_DATA",
    os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))


def shared_path(name):
    """Path of ``name.xz`` in the shared data folder; skip the test if absent."""
    path = os.path.join(SHARED_DATA, name + ".xz")
    if not os.path.exists(path):
        pytest.skip(f"shared dataset {name} not found at {path}")
    return path


def shared_lines(name, n_lines=None):
    """The first ``n_lines`` lines of a shared dataset, as bytes."""
    out = []
    with lzma.open(shared_path(name), "rb") as f:
        for line in f:
            out.append(line)
            if n_lines is not None and len(out) >= n_lines:
                break
    return b"".join(out)


@pytest.fixture
def shared():
    """Access to the shared datasets: ``shared.path(name)``, ``shared.lines(name, n)``."""
    class Shared:
        path = staticmethod(shared_path)
        lines = staticmethod(shared_lines)
    return Shared


def package_env(**extra):
    """Environment for a child Python that must import *this* kernsolve.

    In development that is the in-place build in the repository; in CI it is
    the installed copy, and the repository's source folder (which has no
    compiled modules) must not shadow it. Run such children with a working
    directory outside the repository for the same reason.
    """
    import kernsolve
    root = os.path.dirname(os.path.dirname(os.path.abspath(kernsolve.__file__)))
    env = dict(os.environ, **extra)
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return env
