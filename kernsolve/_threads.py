"""Parallel execution: the one owner of kernsolve's threads (doc/threads.md).

* thread counts: :func:`check_n_jobs` is the one check of a thread count (an
  integer, not 0, or None; the option parser, ``kernsolve.predict``, the
  estimators and :func:`resolve_n_jobs` call it, each with its own wording),
  :func:`resolve_n_jobs` turns it into a count (scikit-learn's ``n_jobs``
  convention), with the at-fork rule below;
* the wait policy of OpenMP's threads: applied by ``_wait_policy`` (this
  module's private part, which must run before the compiled core loads),
  reported by :func:`wait_policy`;
* the BLAS limit: :func:`one_blas_thread`;
* Python worker threads: :func:`worker_pool` (EigenPro on centres),
  :func:`shared_pool` (the reader) and :func:`run_unordered` (the folds of a
  cross-validation when joblib is not needed).

The compiled layer's own thresholds (when a loop is worth threads) stay
beside their loops; doc/threads.md lists them all.
"""
import contextlib
import os
import queue
import sys
import threading
import warnings
from typing import Any

from . import _wait_policy
from ._core import _blas, _parallel

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


def wait_policy():
    """How OpenMP's idle threads wait, for ``kernsolve.show_config()``."""
    return _wait_policy.applied()


# ------------------------------------------------------------- the BLAS limit

class _BlasLimit:
    """The one owner of the process's BLAS thread count (see :func:`one_blas_thread`).

    threadpoolctl sets a library-wide count and restores, on exit, the count it
    saw on entry; two such limits in two Python threads that interleave (A
    enters, B enters and saves A's 1, A exits, B exits and restores 1) would
    leave the process at one BLAS thread.  Here the first holder sets the
    limit and the last one restores the count the first one saw.

    threadpoolctl (>= 3.7) also lets only one "controlling" Python thread
    change a process-wide OpenBLAS pool and silently ignores the others; the
    owner hands that role back after each change, so a limit set or restored
    here takes effect from whichever thread holds it, and the user's own
    ``threadpool_limits`` keeps working.
    """

    def __init__(self):
        self.lock = threading.Lock()
        self.controller = None      # made at first use (see _controller)
        self.with_scipy = False     # the controller holds scipy's BLAS
        self.holders = 0
        self.limiters = []          # the limits in force, restored by the last holder

    @staticmethod
    def _free_control():
        # imported at first use: threadpoolctl is for the dense BLAS paths only
        from threadpoolctl import OpenBLASController
        clear = getattr(OpenBLASController, "clear_controlling_thread", None)
        if clear is not None:
            clear(force=True)

    def _limit(self, controller):
        self._free_control()
        try:
            self.limiters.append(controller.limit(limits=1, user_api="blas"))
        finally:
            self._free_control()

    def _controller(self, scipy):
        """The threadpoolctl controller (the lock held), made at first use.

        Made at first use, not at import: it lists the BLAS libraries loaded
        when it is made, and making it scans the process's libraries, which
        ``import kernsolve`` should not pay for.  scipy's BLAS is loaded
        (``_core._blas.load``) only for a holder that calls it (``scipy``):
        loading it imports scipy.linalg, 0.12 s of a 1.7 s grid on two
        workers whose fits use numpy's BLAS only (issue 35).  When a holder
        needs it while others hold a limit without it, the new controller's
        libraries that the old one did not list get the limit too."""
        if self.controller is not None and (self.with_scipy or not scipy):
            return self.controller
        from threadpoolctl import ThreadpoolController    # at first use, as the controller
        if scipy:
            _blas.load()
        new = ThreadpoolController()
        if self.holders and self.controller is not None:
            known = {lib.filepath for lib in self.controller.lib_controllers}
            added = [lib.filepath for lib in new.lib_controllers if lib.filepath not in known]
            if added:
                self._limit(new.select(filepath=added))
        self.controller = new
        self.with_scipy = scipy or "scipy.linalg" in sys.modules
        return new

    def enter(self, scipy=True):
        with self.lock:
            controller = self._controller(scipy)
            if self.holders == 0:
                self._limit(controller)
            self.holders += 1

    def exit(self):
        with self.lock:
            self.holders -= 1
            if self.holders == 0:
                limiters, self.limiters = self.limiters, []
                self._free_control()
                try:
                    for limiter in reversed(limiters):
                        limiter.restore_original_limits()
                finally:
                    self._free_control()


_BLAS = _BlasLimit()


@contextlib.contextmanager
def one_blas_thread(scipy=True):
    """A context that keeps numpy's and scipy's BLAS on one thread.

    Our own threads run the tiles (or there is one small product): one BLAS
    thread per call makes the bits independent of the thread count.  Safe
    under Python threads: while any thread is inside, BLAS runs on one
    thread; when the last one leaves, the count the first one found is back.
    ``scipy=False``: the code inside calls numpy's BLAS only (an SMO fit's
    products), so scipy's need not be loaded for it (it is limited too if
    it was loaded already, or when a holder inside needs it).
    """
    _BLAS.enter(scipy)
    try:
        yield
    finally:
        _BLAS.exit()


# --------------------------------------------------------- Python worker threads

def worker_pool(n_threads, name="worker"):
    """A new pool of ``n_threads`` Python threads (a ``ThreadPoolExecutor``).

    For work whose tasks release the GIL in compiled code and are handed out
    from Python (EigenPro's row blocks and Cholesky tiles): idle workers block
    on a lock, they never spin.  Use it as a context manager, so its threads
    end with the work.
    """
    # imported at first use: concurrent.futures imports logging, which a
    # reader of one chunk never needs (doc/cli.md, "Start-up time")
    from concurrent.futures import ThreadPoolExecutor
    return ThreadPoolExecutor(max_workers=n_threads, thread_name_prefix=f"kernsolve-{name}")


_SHARED_POOLS: dict[tuple, Any] = {}


def shared_pool(n_threads, name="reader"):
    """A persistent :func:`worker_pool` of ``n_threads`` threads, one per name and count.

    For work that comes in many short calls (the reader's blocks), which would
    otherwise start threads for each.  A forked child inherits the pool object
    but not its threads: keyed by pid, so a child makes its own instead of
    queueing work nobody runs.
    """
    key = (os.getpid(), name, n_threads)
    pool = _SHARED_POOLS.get(key)
    if pool is None:
        pool = _SHARED_POOLS[key] = worker_pool(n_threads, name)
    return pool


def run_unordered(calls, n_threads, name="task"):
    """Run the zero-argument ``calls``, ``n_threads`` at a time on new Python
    threads; yield their results in the order they finish (an exception a call
    raised is raised here, and the calls not started are dropped).

    Plain threads and a queue, not :func:`worker_pool`: ``concurrent.futures``
    imports logging, and the cross-validation of one ``kernsolve-train -v``
    process needs neither it nor joblib (doc/cross-validation.md).
    """
    todo, done = queue.SimpleQueue(), queue.SimpleQueue()
    for call in calls:
        todo.put(call)
    stop = threading.Event()

    def work():
        while not stop.is_set():
            try:
                call = todo.get_nowait()
            except queue.Empty:
                return
            try:
                done.put((True, call()))
            except BaseException as exc:  # handed to the caller's thread
                done.put((False, exc))

    threads = [threading.Thread(target=work, name=f"kernsolve-{name}-{i}", daemon=True)
               for i in range(max(1, min(n_threads, len(calls))))]
    for t in threads:
        t.start()
    try:
        for _ in range(len(calls)):
            ok, value = done.get()
            if not ok:
                raise value
            yield value
    finally:           # also when the caller stops early: no call starts after this
        stop.set()
        for t in threads:
            t.join()
