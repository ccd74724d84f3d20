"""Thread-count rule shared by every solver (scikit-learn's ``n_jobs`` convention).

:func:`check_n_jobs` is the one check of a thread count (an integer, not 0,
or None); the option parser, ``kernsolve.predict``, the estimators and
:func:`resolve_n_jobs` call it, each with its own wording.
"""
import os

from ._core import _parallel


def cpu_count():
    """Cores available to this process (affinity-aware where the OS says)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


# How each layer words the two errors: (not an integer, zero).
_WORDING = {
    "n_jobs": ("n_jobs must be an integer or None, got {value!r}",
               "n_jobs == 0 has no meaning; use None for all cores or a positive count"),
    "--threads": ("--threads: expected an integer, got {value!r}",
                  "--threads: must be a positive count or negative (back from all "
                  "cores), got 0"),
    "estimator": ("{owner}: n_jobs must be None or a non-zero integer, got {value!r}",) * 2,
}


def check_n_jobs(n_jobs, wording="n_jobs", owner=None):
    """``n_jobs`` as an int (or None), or ValueError: it must be an integer and not 0.

    ``wording``: ``"n_jobs"`` (Python functions), ``"--threads"`` (option
    strings) or ``"estimator"`` (``owner`` names the estimator class).
    """
    if n_jobs is None:
        return None
    not_integer, zero = _WORDING[wording]
    if isinstance(n_jobs, bool) or not hasattr(n_jobs, "__index__"):
        raise ValueError(not_integer.format(value=n_jobs, owner=owner))
    n_jobs = n_jobs.__index__()
    if n_jobs == 0:
        raise ValueError(zero.format(value=n_jobs, owner=owner))
    return n_jobs


def resolve_n_jobs(n_jobs):
    """Turn a user's ``n_jobs`` into a positive thread count for the core.

    None means all cores (or ``OMP_NUM_THREADS`` when set); a negative count
    backs off from all cores (-1 = all, -2 = all but one); 0 is an error.
    Without OpenMP the answer is always 1.
    """
    n_jobs = check_n_jobs(n_jobs)
    if not _parallel.openmp_enabled():
        return 1
    if n_jobs is None:
        env = os.environ.get("OMP_NUM_THREADS", "").strip()
        if env.isdigit() and int(env) > 0:
            return int(env)
        return cpu_count()
    if n_jobs < 0:
        return max(1, cpu_count() + 1 + n_jobs)
    return n_jobs
