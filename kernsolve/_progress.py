"""The progress line of long training runs (stderr; ``-q`` turns it off).

The compiled solvers call back about once a second (SMO about every 2 s) from
the point where they already take the GIL to check for Ctrl-C, so reporting
costs the hot loops nothing.  :class:`Progress` turns those calls into one
status line::

    kernsolve sdca: pair 3/45, iter 1200/5400, kernel evals 3.1e+08, 14 s elapsed, about 40 s left
    kernsolve eigenpro: epoch 2/10, iter 150/1280, kernel evals 4.9e+09, 31 s elapsed, about 3 min left

A solver whose work is large enough to matter before its first line says
what it will cost with :meth:`Progress.announce`, at once.

It writes nothing during the first ``delay`` seconds (short runs stay
silent) and at most once per ``interval`` seconds after that.  On a terminal
the line is rewritten in place (``\\r``); elsewhere (a pipe, a log file) each
report is a line of its own.
"""
import sys
import time

__all__ = ["Progress", "clear_active"]

# The Progress whose line is open on a terminal, so that other writers to
# stderr (the command-line tools' warnings) can erase it first.
_ACTIVE: list["Progress"] = []


def clear_active():
    """Erase the open progress line on the terminal, if there is one."""
    for p in list(_ACTIVE):
        p.clear()


def _seconds(s):
    if s < 100:
        return f"{s:.0f} s"
    if s < 6000:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


class Progress:
    """A rate-limited progress line for one training run.

    Parameters
    ----------
    solver : str
        Name shown after ``kernsolve`` (``"smo"``, ``"sdca"``, ...).
    stream : file, optional
        Where to write; ``sys.stderr`` (looked up at each write) by default.
    delay : float
        Seconds after creation before the first line.
    interval : float
        Least seconds between two lines.
    clock : callable
        Monotonic clock in seconds (tests pass a fake one).

    Notes
    -----
    The caller announces each sub-problem with :meth:`start_part` (its index,
    the number of parts and, when the solver's work is known in advance, the
    planned iterations of every part), feeds the solver's callback dicts to
    the object itself, and reports finished parts with :meth:`end_part`.  The
    estimated time left is shown only when every part's iterations are known
    (SBP, Pegasos, SDCA, Perceptron: the callback's ``max_iter``, or the
    ``planned`` list over several parts) and ``estimate`` is true (the caller
    clears it when hidden extra runs, such as probability folds, follow);
    SMO's iteration count cannot be known in advance.
    """

    def __init__(self, solver, stream=None, *, delay=2.0, interval=1.0,
                 clock=time.monotonic):
        self.solver = solver
        self._stream = stream
        self.delay = float(delay)
        self.interval = float(interval)
        self.clock = clock
        self.t0 = clock()
        self.last = None           # time of the last line written
        self.open_width = 0        # length of an unterminated line on a terminal
        self.part = 0
        self.n_parts = 1
        self.planned = None        # planned iterations of every part, or None
        self._done_before = None   # their prefix sums
        self.done_evals = 0        # kernel evaluations of finished parts
        self.estimate = True       # False: never show a time left (extra hidden runs)
        self.n_lines = 0

    @property
    def stream(self):
        return self._stream if self._stream is not None else sys.stderr

    def _tty(self):
        try:
            return bool(self.stream.isatty())
        except (AttributeError, ValueError, OSError):
            return False

    # -- what the training loop calls ------------------------------------

    def plan(self, planned):
        """The planned iterations of all parts (a sequence of ints), or None
        when they cannot be known.  Set once, before the first part."""
        if planned is None:
            self.planned = self._done_before = None
            return
        self.planned = [max(1, int(p)) for p in planned]
        # iterations planned before each part, and in total
        self._done_before = [0]
        for p in self.planned:
            self._done_before.append(self._done_before[-1] + p)

    def start_part(self, part, n_parts, planned=None):
        """Sub-problem ``part`` (0-based) of ``n_parts`` begins.

        ``planned``: as for :meth:`plan` (which it calls), or None to keep the
        plan already set.
        """
        if planned is not None:
            self.plan(planned)
        self.part = int(part)
        self.n_parts = max(1, int(n_parts))
        if part > 0:
            self({})

    def end_part(self, stats):
        """A sub-problem finished; ``stats`` holds its ``n_kernel_evals``."""
        self.done_evals += int(stats.get("n_kernel_evals", 0))

    def __call__(self, state):
        """The solvers' callback: a dict with n_iter, max_iter, gap, n_kernel_evals..."""
        now = self.clock()
        if now - self.t0 < self.delay:
            return
        if self.last is not None and now - self.last < self.interval:
            return
        self.last = now
        self._write(self.line(state, now - self.t0))

    # -- formatting and output --------------------------------------------

    def fraction_done(self, state):
        """Share of the planned work done (0..1), or None when unknown."""
        if not self.estimate:
            return None
        if "fraction" in state:         # the solver knows its share of the work
            return state["fraction"]
        if self.planned is None:
            if self.n_parts == 1 and state.get("max_iter"):
                return min(1.0, int(state.get("n_iter", 0)) / int(state["max_iter"]))
            return None
        if len(self.planned) != self.n_parts:
            return None
        total = self._done_before[-1]
        done = self._done_before[self.part]
        if "n_iter" in state:
            done += min(int(state["n_iter"]), self.planned[self.part])
        return done / total if total > 0 else None

    def line(self, state, elapsed):
        parts = []
        if self.n_parts > 1:
            parts.append(f"pair {self.part + 1}/{self.n_parts}")
        if "phase" in state:            # where in the run: "epoch 2/10", "fold 3/5"
            parts.append(state["phase"])
        if "n_iter" in state:
            if "max_iter" in state:
                parts.append(f"iter {state['n_iter']}/{state['max_iter']}")
            else:
                parts.append(f"iter {state['n_iter']}")
        if "gap" in state:
            parts.append(f"gap {state['gap']:.4g}")
        if "n_feature_evals" in state:   # solvers on random features (DSG)
            parts.append(f"feature evals {state['n_feature_evals']:.4g}")
        else:
            evals = self.done_evals + int(state.get("n_kernel_evals", 0))
            parts.append(f"kernel evals {evals:.4g}")
        parts.append(f"{_seconds(elapsed)} elapsed")
        frac = self.fraction_done(state)
        if frac is not None and frac > 0:
            parts.append(f"about {_seconds(elapsed * (1 - frac) / frac)} left")
        return f"kernsolve {self.solver}: " + ", ".join(parts)

    def announce(self, text):
        """Write ``kernsolve <solver>: text`` now, whatever the delay and the
        rate limit (what the run will cost, said before the work).  A line of
        its own, on a terminal too: it stays above the progress line."""
        self.clear()
        try:
            self.stream.write(f"kernsolve {self.solver}: {text}\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass           # a closed or broken stderr must not stop training

    def _write(self, text):
        stream = self.stream
        try:
            if self._tty():
                pad = max(0, self.open_width - len(text))
                stream.write("\r" + text + " " * pad)
                self.open_width = len(text) + pad
                if self not in _ACTIVE:
                    _ACTIVE.append(self)
            else:
                stream.write(text + "\n")
            stream.flush()
            self.n_lines += 1
        except (OSError, ValueError):
            pass           # a closed or broken stderr must not stop training

    def clear(self):
        """Erase an unterminated terminal line (before other output is printed)."""
        if self.open_width:
            try:
                self.stream.write("\r" + " " * self.open_width + "\r")
                self.stream.flush()
            except (OSError, ValueError):
                pass
            self.open_width = 0
        if self in _ACTIVE:
            _ACTIVE.remove(self)

    def close(self):
        """End the run: erase the terminal line (a log keeps its lines)."""
        self.clear()
