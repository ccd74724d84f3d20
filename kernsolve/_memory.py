"""How much memory kernsolve allows itself: the one owner of that limit.

A leaf module (only the standard library), so the compiled kernel engine can
read it as well as the validation of sizes (:func:`kernsolve._validation.check_allocation`),
the solver choice (``solvers/auto.py``) and the centres' guard.
"""
import os
from types import ModuleType

resource: ModuleType | None
try:
    import resource
except ImportError:  # pragma: no cover - not Unix
    resource = None


def memory_limit():
    """Bytes one allocation may take: half of this machine's memory, or of the
    process's address-space limit (``ulimit -v``) when that is lower."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if resource is not None:
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            total = min(total, soft)
    return total // 2
