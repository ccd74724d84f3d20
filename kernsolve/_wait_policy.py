"""How kernsolve's OpenMP threads wait between parallel regions: the private
part of ``kernsolve._threads`` that must run before the compiled core loads.

Why the passive policy (threads sleep at once): doc/threads.md, "Idle threads
on a busy machine".  libgomp reads its environment once, when it is loaded,
and it is loaded by kernsolve's first compiled module; so ``kernsolve/__init__``
imports that module inside :func:`openmp_loading`, which sets
``OMP_WAIT_POLICY`` unless the user chose a policy and removes it again
afterwards, so other libraries loaded later and child processes see the
user's environment unchanged.  This only changes speed: results are the same
bits under any policy.
"""
import contextlib
import os

__all__ = ["USER_VARIABLES", "POLICY", "openmp_loading", "applied", "BLAS_TIMEOUT_VARIABLES",
           "BLAS_TIMEOUT", "blas_loading"]

#: Variables by which a user chooses how OpenMP threads wait: when either is
#: set, kernsolve leaves the environment alone.
USER_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")

#: The policy kernsolve asks for when the user chose none.
POLICY = "PASSIVE"

_applied = None


@contextlib.contextmanager
def openmp_loading(environ=os.environ):
    """Around the import that loads OpenMP: the passive policy unless the user chose."""
    global _applied
    chosen = {name: environ[name] for name in USER_VARIABLES if name in environ}
    if chosen:
        _applied = "set by the user: " + ", ".join(f"{k}={v}" for k, v in chosen.items())
        yield
        return
    environ["OMP_WAIT_POLICY"] = POLICY
    try:
        yield
    finally:
        environ.pop("OMP_WAIT_POLICY", None)
    _applied = f"{POLICY.lower()} (set by kernsolve at import)"


def applied():
    """The wait policy in effect, for ``kernsolve.show_config()``."""
    return _applied or "libgomp's default"


#: Variables by which a user chooses how long OpenBLAS's threads wait busy
#: for work before they sleep: when either is set, kernsolve leaves it alone.
BLAS_TIMEOUT_VARIABLES = ("OPENBLAS_THREAD_TIMEOUT", "GOTO_THREAD_TIMEOUT")

#: OpenBLAS's shortest wait, 2^4 cycles (its default is 2^28, about 0.1 s).
BLAS_TIMEOUT = "4"


@contextlib.contextmanager
def blas_loading(environ=os.environ):
    """Around a command's first numpy import, which loads numpy's OpenBLAS:
    its threads sleep at once after their work instead of waiting busy for
    about 0.1 s (unless the user chose).  They start waiting as the library
    loads, so every command spent about 0.1 s of CPU on another core during
    its start: on each cell of LIBSVM's grid.py run with kernsolve-train on
    two workers, beside the other worker's fits (issue 35 item 4).  kernsolve's own BLAS calls run on one BLAS thread anyway
    (``one_blas_thread``).  Only numpy's library: the variable is removed
    again after it loads, so libraries loaded later and child processes see
    the user's environment unchanged.  Speed only, never the bits."""
    if any(name in environ for name in BLAS_TIMEOUT_VARIABLES):
        yield
        return
    environ["OPENBLAS_THREAD_TIMEOUT"] = BLAS_TIMEOUT
    try:
        yield
    finally:
        environ.pop("OPENBLAS_THREAD_TIMEOUT", None)
