# Solver plumbing shared by the compiled solvers (SMO, SBP, Pegasos, SDCA and
# the Perceptron): status codes, the monotonic clock, the visit to Python
# (Ctrl-C and the progress callback) and the serial/parallel chooser.
#
# Everything here is inline, so a solver's loop compiles to the code it had
# when each solver carried its own copy: no call through a module table, no
# Python object outside the visit to Python (the only place the GIL is taken).
# Each solver module keeps its own tuning (a Tuning struct, because the
# defaults differ: SMO's loops are worth parallelising from 4096 elements, the
# response updates from 32768) and exposes it to tests through
# _get_tuning() / _set_tuning(), thin wrappers over tuning_dict /
# tuning_update below.
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC
from cpython.exc cimport PyErr_CheckSignals


# Status of a compiled run: >= 0 finished (with a result), < 0 stopped.
cdef enum:
    ST_OK = 0
    ST_MAX_ITER = 1       # stopped by the iteration limit (a result all the same)
    ST_NOMEM = -1         # the kernel engine (or a buffer) could not allocate
    ST_ABORT = -2         # Ctrl-C or an exception of the progress callback
    ST_NONFINITE = -3     # the iterate became infinite or NaN
    ST_EMPTY = -4         # nothing to work on (SBP: an empty class)


cdef inline double monotonic() noexcept nogil:
    """Seconds on the monotonic clock (a vDSO call: no system call, no GIL)."""
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + 1e-9 * ts.tv_nsec


# ------------------------------------------------------------------ tuning

cdef struct Tuning:
    Py_ssize_t par_min    # loops shorter than this run serially (fork/join cost)
    double poll_seconds   # wall-clock seconds between two visits to Python
    bint adaptive         # False pins eligible loops to the parallel mode (tests)


cdef inline dict tuning_dict(const Tuning* t):
    return {"par_min": t.par_min, "poll_seconds": t.poll_seconds,
            "adaptive": bool(t.adaptive)}


cdef inline int tuning_update(Tuning* t, par_min, poll_seconds, adaptive) except -1:
    # Checked before anything changes, so a refused value leaves the tuning as it was.
    if par_min is not None and int(par_min) < 1:
        raise ValueError("par_min must be >= 1")
    if poll_seconds is not None and not (poll_seconds >= 0):
        raise ValueError("poll_seconds must be >= 0")
    if adaptive is not None:
        t.adaptive = bool(adaptive)
    if par_min is not None:
        t.par_min = int(par_min)
    if poll_seconds is not None:
        t.poll_seconds = float(poll_seconds)
    return 0


# ------------------------------------------------------ the visit to Python

cdef struct Poll:
    double start          # the clock when the run started
    double last           # the clock at the last visit (start before the first)
    double interval       # seconds between two visits


cdef inline void poll_init(Poll* p, double interval) noexcept nogil:
    p.start = monotonic()
    p.last = p.start
    p.interval = interval


cdef inline bint poll_due_at(Poll* p, double now) noexcept nogil:
    """For loops that read the clock anyway: True, and the visit recorded,
    when ``interval`` seconds have passed since the last visit."""
    if now - p.last >= p.interval:
        p.last = now
        return True
    return False


cdef inline bint poll_due(Poll* p, long long step, long long every) noexcept nogil:
    """poll_due_at, with the clock read only when ``step`` is a multiple of
    ``every`` (a power of two): steps in between cost one AND and one branch."""
    if (step & (every - 1)) != 0:
        return False
    return poll_due_at(p, monotonic())


cdef inline object visit_python(object progress, object info):
    """Call with the GIL held: Ctrl-C, then ``progress(info)`` if a callback
    was given.  Returns the exception that stops the run (to be raised once
    the loop has left its nogil block), or None to go on."""
    try:
        PyErr_CheckSignals()
        if progress is not None:
            progress(info)
    except BaseException as e:
        return e
    return None


# ------------------------------------------------ the serial/parallel chooser

cdef enum:
    TRIAL_ITERS = 16     # iterations of a trial of the other mode
    TRIAL_WARMUP = 2     # of which the first ones are not measured
    MAX_GAP = 4096       # iterations between trials of a losing mode, at most


cdef struct Bandit:
    # Parallel or serial, whichever is measured cheaper.  Now and then the
    # other mode is tried for a few iterations; a mode that keeps losing is
    # tried less and less often (but at least every MAX_GAP iterations, so a
    # machine that becomes free is noticed).  A trial's first iterations are
    # not measured: after a stretch in serial mode, the sleeping OpenMP
    # threads must be woken and their caches refilled once, which is no cost
    # of the parallel mode in steady state.  Only speed depends on the
    # choice: a loop it governs must give the same bits either way
    # (element-wise updates, exact reductions combined in a fixed order).
    # Loops shorter than the solver's par_min stay serial and are not
    # measured: the chooser only decides above that floor.
    bint par
    double cost[2]       # seconds per unit of work (EMA), serial / parallel
    double t_trial       # the trial's measured seconds and units
    double u_trial
    long long next_probe
    long long gap
    int probing          # iterations left in the current trial


cdef inline void bandit_init(Bandit* b, long long first) noexcept nogil:
    """Start in the parallel mode; the first trial of serial at iteration ``first``."""
    b.par = True
    b.cost[0] = -1.0
    b.cost[1] = -1.0
    b.t_trial = 0.0
    b.u_trial = 0.0
    b.next_probe = first
    b.gap = 256
    b.probing = 0


cdef inline void bandit_restart(Bandit* b, long long it, bint par) noexcept nogil:
    """Forget the measured costs (the machine changed under them: SMO's thread
    team went from spinning to sleeping or back) and go on in mode ``par``,
    with a trial of the other mode soon after iteration ``it``."""
    b.par = par
    b.cost[0] = -1.0
    b.cost[1] = -1.0
    b.t_trial = 0.0
    b.u_trial = 0.0
    b.next_probe = it + 2 * TRIAL_ITERS
    b.gap = 256
    b.probing = 0


cdef inline int bandit_threads(const Bandit* b, int n_threads) noexcept nogil:
    """Threads of the current mode."""
    return n_threads if b.par else 1


cdef inline void bandit_record(Bandit* b, double seconds, double units) noexcept nogil:
    """Account ``seconds`` spent on ``units`` of work in the current mode."""
    cdef int m = 1 if b.par else 0
    cdef double v
    if units <= 0:
        return
    if b.probing > 0:
        if b.probing <= TRIAL_ITERS - TRIAL_WARMUP:
            b.t_trial += seconds
            b.u_trial += units
        return
    v = seconds / units
    if b.cost[m] < 0:
        b.cost[m] = v
    else:
        b.cost[m] = 0.9 * b.cost[m] + 0.1 * v


cdef inline void bandit_step(Bandit* b, long long it) noexcept nogil:
    """Once per iteration ``it`` (increasing): end a trial, or start one."""
    cdef bint tried
    if b.probing > 0:
        b.probing -= 1
        if b.probing > 0:
            return
        tried = b.par
        b.cost[1 if tried else 0] = b.t_trial / b.u_trial if b.u_trial > 0 else -1.0
        if b.cost[0] >= 0 and b.cost[1] >= 0:
            b.par = b.cost[1] < b.cost[0]
        elif b.cost[1 if tried else 0] < 0:
            # Nothing measured in the trial (no long loop, no row computed):
            # go back and try again later.
            b.par = not tried
        if b.par == tried:
            b.gap = 256
        elif b.gap < MAX_GAP:
            b.gap *= 2
        b.next_probe = it + b.gap
        return
    if it >= b.next_probe:
        b.par = not b.par
        b.t_trial = 0.0
        b.u_trial = 0.0
        b.probing = TRIAL_ITERS
