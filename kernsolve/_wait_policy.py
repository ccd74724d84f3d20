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

__all__ = ["USER_VARIABLES", "POLICY", "openmp_loading", "applied"]

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
