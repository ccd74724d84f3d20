"""Thread-count rule shared by every solver (scikit-learn's ``n_jobs`` convention)."""
import os

from ._core import _parallel


def cpu_count():
    """Cores available to this process (affinity-aware where the OS says)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def resolve_n_jobs(n_jobs):
    """Turn a user's ``n_jobs`` into a positive thread count for the core.

    None means all cores (or ``OMP_NUM_THREADS`` when set); a negative count
    backs off from all cores (-1 = all, -2 = all but one); 0 is an error.
    Without OpenMP the answer is always 1.
    """
    if n_jobs is not None:
        if isinstance(n_jobs, bool) or not hasattr(n_jobs, "__index__"):
            raise ValueError(f"n_jobs must be an integer or None, got {n_jobs!r}")
        n_jobs = n_jobs.__index__()
    if n_jobs == 0:
        raise ValueError("n_jobs == 0 has no meaning; use None for all cores or a "
                         "positive count")
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
