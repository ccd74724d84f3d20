"""How kernsolve's OpenMP threads wait between parallel regions (issue 12, item 3).

libgomp's default lets a thread that has finished its share spin for a while
(``GOMP_SPINCOUNT``, 300000 turns) before it sleeps.  On an idle machine that
saves a wake-up; beside another busy process it is ruinous: the spinning
threads take the core from the one thread with work left, and every fork/join
of the solvers waits a scheduler time slice.  Measured on 2 cores with one
competing process, default threads ran 1.4 to 26 times slower than
``--threads 1`` (benchmarks/RESULTS.md, "Threads on a busy machine").

So kernsolve asks for a short spin (``GOMP_SPINCOUNT=3000``, some tens of
microseconds) before a waiting thread sleeps, while its compiled core loads
OpenMP, unless the user chose a policy.  Sleeping at once (the passive
policy, kernsolve's choice until session 6) costs a wake-up at every parallel
region, and on an idle VM waking a thread took 37 us against 0.8 us for a
spinning one: SMO's two-thread steps on a9a, a few hundred microseconds
each, ran no faster than one thread.  A short spin bridges the gap between
one region and the next without taking a busy machine's core for long
(RESULTS.md, "SMO speed, session 6": a9a at 2 threads 11.3 s passive, 8.5 s
with the short spin idle; beside a busy process 12.6 s, one thread 12.3 s;
libgomp's 300000 turns: 20 s).  libgomp reads its environment once, when it
is loaded, and it is loaded by kernsolve's first compiled module.  The
variable is removed again afterwards, so other libraries loaded later and
child processes see the user's environment unchanged.  This only changes
speed: results are the same bits under any policy.
"""
import contextlib
import os

__all__ = ["USER_VARIABLES", "SPIN_COUNT", "openmp_loading", "applied"]

#: Variables by which a user chooses how OpenMP threads wait: when either is
#: set, kernsolve leaves the environment alone.
USER_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")

#: The spin count (libgomp's GOMP_SPINCOUNT) kernsolve asks for when the user
#: chose no policy.
SPIN_COUNT = "3000"

_applied = None


@contextlib.contextmanager
def openmp_loading(environ=os.environ):
    """Around the import that loads OpenMP: the short spin unless the user chose."""
    global _applied
    chosen = {name: environ[name] for name in USER_VARIABLES if name in environ}
    if chosen:
        _applied = "set by the user: " + ", ".join(f"{k}={v}" for k, v in chosen.items())
        yield
        return
    environ["GOMP_SPINCOUNT"] = SPIN_COUNT
    try:
        yield
    finally:
        environ.pop("GOMP_SPINCOUNT", None)
    _applied = f"short spin, GOMP_SPINCOUNT={SPIN_COUNT} (set by kernsolve at import)"


def applied():
    """The wait policy in effect, for ``kernsolve.show_config()``."""
    return _applied or "libgomp's default"
