"""Thread-count rule shared by every solver (scikit-learn's ``n_jobs`` convention).

:func:`check_n_jobs` is the one check of a thread count (an integer, not 0,
or None); the option parser, ``kernsolve.predict``, the estimators and
:func:`resolve_n_jobs` call it, each with its own wording.
"""
import os
import warnings

from ._core import _parallel

# GNU OpenMP (libgomp) keeps its pool of threads with the thread that started a
# parallel region; a child made by fork() inherits that bookkeeping but not the
# threads, and its first parallel region of more than one thread waits for them
# forever (a one-thread region works).  So once this process has resolved a
# count above one, a child forked from it computes on one thread.
_state = {"team": False, "forked": False, "warned": False}


def _after_fork_in_child():
    _state["forked"] = _state["team"]


if _parallel.openmp_enabled() and _parallel.openmp_is_gnu() and hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


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
    Without OpenMP the answer is always 1, and in a process forked after a
    count above one was resolved (GNU OpenMP, above) it is 1 with a warning.
    """
    n_jobs = check_n_jobs(n_jobs)
    if not _parallel.openmp_enabled():
        return 1
    if n_jobs is None:
        env = os.environ.get("OMP_NUM_THREADS", "").strip()
        n = int(env) if env.isdigit() and int(env) > 0 else cpu_count()
    elif n_jobs < 0:
        n = max(1, cpu_count() + 1 + n_jobs)
    else:
        n = n_jobs
    if n > 1 and _state["forked"]:
        if not _state["warned"]:
            _state["warned"] = True
            warnings.warn("kernsolve: this process was forked from one that ran GNU OpenMP "
                          "threads, which do not survive a fork; computing on one thread "
                          "here (start workers with multiprocessing's 'spawn' or "
                          "'forkserver' method to use threads in them)", RuntimeWarning,
                          stacklevel=3)
        return 1
    if n > 1:
        _state["team"] = True
    return n
