"""SMO: LIBSVM's decomposition solver for the SVM dual, on kernsolve's kernel engine.

Solves

    min_a  0.5 a'Qa + p'a   subject to  y'a = Delta,  0 <= a_i <= C_i,

with Q_ij = y_i y_j K(x_row(i), x_row(j)), following LIBSVM's ``Solver`` (and
``Solver_NU`` for the nu formulations) step for step: second-order working-set
selection (Fan, Chen & Lin 2005), the tau guard for non-PSD kernels,
shrinking every min(l, 1000) iterations with gradient reconstruction from
G_bar, and LIBSVM's rho rule.  A no-bias variant (no equality constraint,
one-variable updates) serves the SBP paper's comparisons.

Every floating-point expression that decides the path is evaluated with the
same operands in the same order as LIBSVM (the signs y_i y_j are applied by
exact multiplications by +-1), so with the same single-precision kernel values
the iterates are LIBSVM's bit for bit.  Parallel loops are either element-wise
or exact argmax reductions combined in a fixed order with LIBSVM's tie rule
(the last index wins; proof in _smo.pxd), so the result does not depend on the
thread count.  With n_threads > 1 those loops and the kernel engine's row
fills run on kernsolve's own thread team (``kernsolve/_core/_team.h``), whose
idle threads spin only while the machine has a core for them; the team lives
for one run.

This module is the solver, ``_SMO`` (declared in ``_smo.pxd``); its Python
front, ``solve()``, is ``_solve.pyx``.
"""
import os

from libc.stdlib cimport malloc, free
from libc.math cimport INFINITY
from cython.parallel cimport prange

from kernsolve._core._kernel cimport KernelRows, kfloat
from kernsolve._core._kernel_values cimport PAR_MIN_WORK
from kernsolve._core._solver cimport (
    ST_OK, ST_MAX_ITER, ST_NOMEM, ST_ABORT, monotonic, Tuning, tuning_dict,
    tuning_update, Poll, poll_init, poll_due_at, visit_python, Bandit, bandit_init,
    bandit_restart, bandit_record, bandit_step, bandit_threads)
from kernsolve._core._team cimport (
    ks_team, ks_team_start, ks_team_stop, ks_team_run, ks_team_watch, ks_team_spinning,
    ks_load, ks_load_init, ks_load_step, ks_load_remembered, ks_load_forget,
    KS_TEAM_WATCH_SECONDS)
from kernsolve._core._simd cimport ks_simd_join, paths_mask

# Every vector path of this module follows the tests' one switch (_simd.pxd).
ks_simd_join(paths_mask())

cdef double TAU = SMO_TAU
cdef int MAX_CHUNKS = 64
# Iterations between two readings of the clock for the visit to Python (a
# power of two); an iteration costs at least a few microseconds.
cdef enum:
    POLL_EVERY = 16
# par_min: below this length a loop runs serially (an OpenMP fork/join costs
# about as much as a few thousand element updates).  poll_seconds: between two
# visits to Python (progress, Ctrl-C).  adaptive False pins every loop to the
# parallel mode (tests of thread invariance).
cdef Tuning TUNING = Tuning(par_min=4096, poll_seconds=2.0, adaptive=True)
# The phase timers' default for a solve that does not say (solve(timers=None)).
cdef bint TIMERS = False

# Who runs the parallel loops of a run with n_threads > 1 (doc/install.md,
# "Threads"): kernsolve's thread team, whose idle threads spin for at most
# TEAM_SPIN_NS while the load watch finds a core free for each (auto), always
# (spin: for measurements on a machine known to be idle) or never (sleep);
# or OpenMP's threads (off).  The environment variable KERNSOLVE_SMO_TEAM
# sets it when the module loads, _set_tuning(team=...) afterwards.  Only
# speed depends on it.
cdef enum:
    TEAM_OFF = 0
    TEAM_AUTO = 1
    TEAM_SPIN = 2
    TEAM_SLEEP = 3
TEAM_NAMES = ("off", "auto", "spin", "sleep")
cdef int TEAM_MODE = TEAM_AUTO
cdef long long TEAM_SPIN_NS = 200000
# While the team's idle threads spin, a parallel region costs about a
# microsecond instead of an OpenMP fork/join's 10-40 us, so shorter loops and
# rows pay in parallel: the solver's loops from TEAM_PAR_MIN elements (not
# TUNING.par_min) and the engine's rows from TEAM_ROW_MIN_WORK multiply-adds
# (not PAR_MIN_WORK).  After shrinking most iterations of a9a and ijcnn1 have
# 1000-2000 active variables (benchmarks/history/RESULTS.md, session 8).  The
# serial/parallel chooser still measures both modes above the threshold.
# Defaults equal to the OpenMP thresholds: on the 2-core machine 2048 / 8000
# gained nothing in a quiet A/B (a9a 1.45x vs 1.46x, ijcnn1 1.57x vs 1.60x,
# w8a 1.77x vs 1.74x; bench_smo_threads.py), so they stay a knob to measure.
cdef Py_ssize_t TEAM_PAR_MIN = 4096
cdef double TEAM_ROW_MIN_WORK = 40000.0


def _team_mode(value, what):
    """The TEAM_* code of a team setting (``what`` names it in the error)."""
    name = str(value).strip().lower()
    if name not in TEAM_NAMES:
        raise ValueError(f"{what}={value!r}: expected one of {', '.join(TEAM_NAMES)}")
    return TEAM_NAMES.index(name)


# A bad KERNSOLVE_SMO_TEAM does not break the import: the first solve
# reports it (check_team_setting), as a bad option would be.
_TEAM_ERROR = None
try:
    TEAM_MODE = _team_mode(os.environ.get("KERNSOLVE_SMO_TEAM", "auto"), "KERNSOLVE_SMO_TEAM")
except ValueError as e:
    _TEAM_ERROR = str(e)


def check_team_setting():
    """Raise the ValueError of a bad KERNSOLVE_SMO_TEAM (solve() calls this first)."""
    if _TEAM_ERROR is not None:
        raise ValueError(_TEAM_ERROR)


cdef void _sweep(void* arg, int c, int nc) noexcept nogil:
    """Chunk c of nc of a solver sweep (Sweep.kind): the job the thread team
    runs, or the body of the OpenMP loop over the chunks."""
    cdef Sweep* w = <Sweep*>arg
    cdef Py_ssize_t lo = (w.act * c) // nc, hi = (w.act * (c + 1)) // nc
    cdef double tc = 0.0
    if w.busy != NULL:
        tc = monotonic()
    if w.kind == SW_UP:
        _up_chunk(w.G, w.ys, w.st, lo, hi, &w.up[c])
    elif w.kind == SW_LOW:
        _low_chunk(w.G, w.ys, w.st, w.QD, w.gp, w.Kp, w.qdp, w.gn, w.Kn, w.qdn,
                   lo, hi, &w.low[c])
    elif w.kind == SW_STEP:
        _step_chunk(w.G, w.G_bar, w.ys, w.st, w.step, w.act, w.l, c, nc, &w.up[c])
    elif w.kind == SW_ONE:
        _one_chunk(w.G, w.st, w.QD, lo, hi, &w.one[c])
    else:
        lo = w.lo + ((w.hi - w.lo) * c) // nc
        hi = w.lo + ((w.hi - w.lo) * (c + 1)) // nc
        if w.kind == SW_AXPY:
            _axpy1_chunk(w.out, w.ys, w.K, w.a, lo, hi)
        else:
            _gather_chunk(w.gath, w.data, w.index, lo, hi)
    if w.busy != NULL:
        w.busy[c] = monotonic() - tc


cdef class _SMO:
    """Working state of one solve (LIBSVM's Solver members), by position."""

    def __cinit__(self):
        self.G = NULL
        self.G_bar = NULL
        self.G_start = NULL
        self.alpha = NULL
        self.p = NULL
        self.C = NULL
        self.ys = NULL
        self.QD = NULL
        self.status = NULL
        self.active_set = NULL
        self.index = NULL
        self.buf[0] = NULL
        self.buf[1] = NULL
        self.up = NULL
        self.low = NULL
        self.one = NULL
        self.busy = NULL
        self.team = NULL

    def __dealloc__(self):
        ks_team_stop(self.team)         # run() stops it; this is only a safety net
        free(self.G)
        free(self.G_bar)
        free(self.alpha)
        free(self.p)
        free(self.C)
        free(self.ys)
        free(self.QD)
        free(self.status)
        free(self.active_set)
        free(self.index)
        free(self.buf[0])
        free(self.buf[1])
        free(self.up)
        free(self.low)
        free(self.one)
        free(self.busy)

    cdef int setup(self, KernelRows kr, const signed char[::1] y,
                   const double[::1] p, const double[::1] alpha,
                   const double[::1] C, bint svr, bint nu, bint bias,
                   bint shrinking, double eps, int n_threads,
                   long long max_iter) except -1:
        cdef Py_ssize_t l = y.shape[0], i, n = kr.n
        cdef size_t dsz = l * sizeof(double)
        self.kr = kr
        self.l = l
        self.n = n
        self.svr = svr
        self.nu = nu
        self.bias = bias
        self.shrinking = shrinking
        self.first_shrink = 1000
        self.eps = eps
        self.n_threads = n_threads if n_threads > 0 else 1
        self.max_iter = max_iter
        self.unshrink = False
        self.G = <double*>malloc(dsz)
        self.G_bar = <double*>malloc(dsz)
        self.alpha = <double*>malloc(dsz)
        self.p = <double*>malloc(dsz)
        self.C = <double*>malloc(dsz)
        self.ys = <double*>malloc(dsz)
        self.QD = <double*>malloc(dsz)
        self.status = <char*>malloc(l * sizeof(char))
        self.active_set = <Py_ssize_t*>malloc(l * sizeof(Py_ssize_t))
        self.up = <UpPick*>malloc(MAX_CHUNKS * sizeof(UpPick))
        self.low = <LowPick*>malloc(MAX_CHUNKS * sizeof(LowPick))
        self.one = <OnePick*>malloc(MAX_CHUNKS * sizeof(OnePick))
        self.busy = <double*>malloc(MAX_CHUNKS * sizeof(double))
        if (self.G == NULL or self.G_bar == NULL or self.alpha == NULL
                or self.p == NULL or self.C == NULL or self.ys == NULL
                or self.QD == NULL or self.status == NULL
                or self.active_set == NULL or self.up == NULL
                or self.low == NULL or self.one == NULL or self.busy == NULL):
            raise MemoryError("SMO: cannot allocate the solver state "
                              f"for {l} variables")
        if svr:
            self.index = <Py_ssize_t*>malloc(l * sizeof(Py_ssize_t))
            self.buf[0] = <kfloat*>malloc(l * sizeof(kfloat))
            self.buf[1] = <kfloat*>malloc(l * sizeof(kfloat))
            if self.index == NULL or self.buf[0] == NULL or self.buf[1] == NULL:
                raise MemoryError("SMO: cannot allocate the SVR row buffers")
        self.next_buf = 0
        for i in range(l):
            self.alpha[i] = alpha[i]
            self.p[i] = p[i]
            self.C[i] = C[i]
            self.ys[i] = 1.0 if y[i] > 0 else -1.0
            self.active_set[i] = i
            if svr:
                self.index[i] = i % n
                self.QD[i] = kr.diag[i % n]
            else:
                self.QD[i] = kr.diag[i]
            self.update_status(i)
        self.active_size = l
        self.next_up_valid = False
        self.par_min = TUNING.par_min
        bandit_init(&self.loops, 64)
        bandit_init(&self.rows, 96)
        self.n_iter = 0
        self.rho = 0.0
        self.obj = 0.0
        self.r = float("nan")
        self.gap = INFINITY
        self.timed = TIMERS
        for i in range(N_TIMERS):
            self.timers[i] = 0.0
        self.charged = 0.0
        return 0

    # ------------------------------------------------------------------
    # rows, swaps, bookkeeping

    cdef const kfloat* krow(self, Py_ssize_t i, Py_ssize_t length) noexcept nogil:
        """Unsigned kernel values K(row(i), row(k)) for positions k < length.

        Q_ik = y_i y_k krow(i)[k].  For SVR the data row is fetched whole and
        gathered into one of two alternating buffers (LIBSVM's SVR_Q), so the
        two most recent rows stay valid together.
        """
        cdef const kfloat* data
        cdef kfloat* b
        cdef const Py_ssize_t* index = self.index
        cdef Sweep w
        cdef int nt = self.loop_threads()
        cdef long long evals = self.kr.n_kernel_evals
        cdef double t0 = 0.0
        cdef Tic tic
        self.tic(&tic)
        if self.n_threads > 1:
            t0 = monotonic()
        if not self.svr:
            data = self.kr.get_row(i, length)
        else:
            data = self.kr.get_row(index[i], self.n)
        if self.n_threads > 1 and self.kr.n_kernel_evals > evals:
            bandit_record(&self.rows, monotonic() - t0,
                           <double>(self.kr.n_kernel_evals - evals))
        if data != NULL and self.svr:
            b = self.buf[self.next_buf]
            self.next_buf = 1 - self.next_buf
            if nt > 1 and length >= self.par_min:
                self.sweep_init(&w, SW_GATHER)
                w.busy = NULL
                w.gath = b
                w.data = data
                w.index = index
                w.lo = 0
                w.hi = length
                self.chunks(&w, nt if nt < MAX_CHUNKS else MAX_CHUNKS)
            else:
                _gather_chunk(b, data, index, 0, length)
            data = b
        self.toc(&tic, T_ROWS)
        return data

    cdef const kfloat* krow_again(self, Py_ssize_t i, Py_ssize_t length,
                                  const kfloat* prev) noexcept nogil:
        """krow(i, length) for a row fetched before as prev; for SVR the row
        goes back into prev's buffer, so the other recent row stays valid."""
        if self.svr:
            self.next_buf = 0 if prev == self.buf[0] else 1
        return self.krow(i, length)

    cdef inline void update_status(self, Py_ssize_t i) noexcept nogil:
        if self.alpha[i] >= self.C[i]:
            self.status[i] = UPPER_BOUND
        elif self.alpha[i] <= 0:
            self.status[i] = LOWER_BOUND
        else:
            self.status[i] = FREE

    cdef void swap_index(self, Py_ssize_t i, Py_ssize_t j) noexcept nogil:
        if self.svr:
            self.index[i], self.index[j] = self.index[j], self.index[i]
        else:
            self.kr.swap(i, j)
        self.ys[i], self.ys[j] = self.ys[j], self.ys[i]
        self.G[i], self.G[j] = self.G[j], self.G[i]
        self.status[i], self.status[j] = self.status[j], self.status[i]
        self.alpha[i], self.alpha[j] = self.alpha[j], self.alpha[i]
        self.p[i], self.p[j] = self.p[j], self.p[i]
        self.C[i], self.C[j] = self.C[j], self.C[i]
        self.QD[i], self.QD[j] = self.QD[j], self.QD[i]
        self.active_set[i], self.active_set[j] = self.active_set[j], self.active_set[i]
        self.G_bar[i], self.G_bar[j] = self.G_bar[j], self.G_bar[i]

    cdef int n_chunks(self, Py_ssize_t length) noexcept nogil:
        cdef int c = self.n_threads
        if c <= 1 or length < self.par_min or not self.loops.par:
            return 1
        if c > MAX_CHUNKS:
            c = MAX_CHUNKS
        return c

    cdef void sweep_init(self, Sweep* w, int kind) noexcept nogil:
        """A sweep of this solver's vectors over the active set."""
        w.kind = kind
        w.act = self.active_size
        w.l = self.l
        w.G = self.G
        w.G_bar = self.G_bar
        w.ys = self.ys
        w.st = self.status
        w.QD = self.QD
        w.up = self.up
        w.low = self.low
        w.one = self.one
        w.busy = self.busy if self.timed else NULL

    cdef void chunks(self, Sweep* w, int nc) noexcept nogil:
        """Run chunks 0..nc-1 of sweep w on the thread team, or on OpenMP's
        threads when the run has no team."""
        cdef int c
        if self.team != NULL:
            ks_team_run(self.team, _sweep, <void*>w, nc)
        else:
            for c in prange(nc, num_threads=nc, schedule='static', chunksize=1):
                _sweep(<void*>w, c, nc)

    cdef void axpy(self, double* out, const kfloat* K, double a,
                   Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
        """out[k] += y_k * K[k] * a over [lo, hi): LIBSVM's ``out[k] += a' * Q_ik``
        with a = y_i a' (the initial gradient and the reconstruction)."""
        cdef Sweep w
        cdef int nc = self.n_threads if self.n_threads < MAX_CHUNKS else MAX_CHUNKS
        if nc <= 1 or hi - lo < self.par_min:
            _axpy1_chunk(out, self.ys, K, a, lo, hi)
            return
        self.sweep_init(&w, SW_AXPY)
        w.busy = NULL
        w.out = out
        w.K = K
        w.a = a
        w.lo = lo
        w.hi = hi
        self.chunks(&w, nc)

    cdef void start_team(self) noexcept nogil:
        """The thread team of this run (n_threads > 1 and the team not off);
        without one (or on a system without it) the loops use OpenMP."""
        cdef int n = self.n_threads if self.n_threads < MAX_CHUNKS else MAX_CHUNKS
        self.team = NULL
        if n < 2 or TEAM_MODE == TEAM_OFF:
            return
        self.team = ks_team_start(n, 0 if TEAM_MODE == TEAM_SLEEP else TEAM_SPIN_NS,
                                  TEAM_MODE == TEAM_AUTO)
        if self.team == NULL:
            return
        self.kr.team = self.team
        self.next_watch = monotonic() + KS_TEAM_WATCH_SECONDS
        self.set_thresholds()
        if TUNING.adaptive and not ks_team_spinning(self.team):
            # The machine is busy (or was, at the last solve): start serial
            # and let the chooser measure the parallel mode.
            bandit_restart(&self.loops, 0, False)
            bandit_restart(&self.rows, 0, False)
            self.kr.n_threads = 1

    cdef void stop_team(self) noexcept nogil:
        """Join the team's threads (none outlives the run)."""
        if self.team != NULL:
            self.kr.team = NULL
            ks_team_stop(self.team)
            self.team = NULL
            self.set_thresholds()

    cdef void watch(self, double now) noexcept nogil:
        """The team's load watch (_team.h): its idle threads spin or sleep.
        When that changes, the serial/parallel choosers start over: their
        costs were measured under the other regime."""
        cdef bint spin
        self.next_watch = now + KS_TEAM_WATCH_SECONDS
        if not ks_team_watch(self.team, now):
            return
        self.set_thresholds()
        if TUNING.adaptive:
            spin = ks_team_spinning(self.team)
            bandit_restart(&self.loops, self.n_iter, spin)
            bandit_restart(&self.rows, self.n_iter, spin)
            self.kr.n_threads = bandit_threads(&self.rows, self.n_threads)

    cdef void set_thresholds(self) noexcept nogil:
        """The shortest parallel loop and row: lower while the team spins."""
        cdef bint spin = self.team != NULL and ks_team_spinning(self.team)
        self.par_min = TUNING.par_min
        if spin and TEAM_PAR_MIN < self.par_min:
            self.par_min = TEAM_PAR_MIN
        self.kr.par_min_work = TEAM_ROW_MIN_WORK if spin else PAR_MIN_WORK

    cdef inline int loop_threads(self) noexcept nogil:
        return bandit_threads(&self.loops, self.n_threads)

    cdef inline bint recorded(self, Py_ssize_t length) noexcept nogil:
        """Whether a loop over ``length`` variables is timed for the serial or
        parallel choice (:meth:`record`)."""
        return self.n_threads > 1 and length >= self.par_min

    cdef inline double start_clock(self, Py_ssize_t length) noexcept nogil:
        """The clock for :meth:`record` and the phase timers, read only when
        one of them will use it: one thread's short loops read none (four
        readings an iteration were 3% of a grid's small solves)."""
        return monotonic() if self.timed or self.recorded(length) else 0.0

    cdef inline void record(self, double t0, Py_ssize_t length) noexcept nogil:
        """A loop over ``length`` variables that started at ``t0`` (start_clock)."""
        if self.recorded(length):
            bandit_record(&self.loops, monotonic() - t0, <double>length)

    cdef inline void tic(self, Tic* s) noexcept nogil:
        """Start a timed phase (nothing when the timers are off)."""
        if self.timed:
            s.t = monotonic()
            s.charged = self.charged

    cdef inline void toc(self, const Tic* s, int slot) noexcept nogil:
        """End a phase: charge its time, less what nested phases were charged."""
        cdef double ex
        if self.timed:
            ex = (monotonic() - s.t) - (self.charged - s.charged)
            self.timers[slot] += ex
            self.charged += ex

    cdef void charge_sync(self, double t0, int nc) noexcept nogil:
        """After a chunked parallel region that started at t0 and whose chunks
        left their busy seconds in busy[]: charge its wall time minus the
        chunks' mean busy time to T_SYNC (the rest stays with the phase)."""
        cdef double mean = 0.0, ex
        cdef int c
        for c in range(nc):
            mean += self.busy[c]
        ex = (monotonic() - t0) - mean / nc
        self.timers[T_SYNC] += ex
        self.charged += ex

    cdef void adapt(self) noexcept nogil:
        if self.n_threads <= 1 or not TUNING.adaptive:
            return
        bandit_step(&self.loops, self.n_iter)
        bandit_step(&self.rows, self.n_iter)
        self.kr.n_threads = bandit_threads(&self.rows, self.n_threads)

    cdef int reconstruct_gradient(self) noexcept nogil:
        """Rebuild G of the inactive variables from G_bar and the free alphas."""
        cdef Py_ssize_t l = self.l, act = self.active_size, i, j, nr_free = 0
        cdef double* G = self.G
        cdef const double* ys = self.ys
        cdef const double* alpha = self.alpha
        cdef const kfloat* Ki
        cdef double s, yi
        cdef Tic tic
        if act == l:
            return 0
        self.tic(&tic)
        for j in range(act, l):
            G[j] = self.G_bar[j] + self.p[j]
        for j in range(act):
            if self.status[j] == FREE:
                nr_free += 1
        if <double>nr_free * l > 2.0 * act * (l - act):
            for i in range(act, l):
                Ki = self.krow(i, act)
                if Ki == NULL:
                    return ST_NOMEM
                # alpha_j Q_ij = y_i (y_j alpha_j K_ij) exactly; summed in j order.
                s = G[i]
                yi = ys[i]
                for j in range(act):
                    if self.status[j] == FREE:
                        s += yi * (ys[j] * (alpha[j] * Ki[j]))
                G[i] = s
        else:
            for i in range(act):
                if self.status[i] == FREE:
                    Ki = self.krow(i, l)
                    if Ki == NULL:
                        return ST_NOMEM
                    self.axpy(G, Ki, ys[i] * alpha[i], act, l)
        self.toc(&tic, T_GRADIENT)
        return 0

    # ------------------------------------------------------------------
    # working-set selection

    cdef void pick_up(self, UpPick* r) noexcept nogil:
        """First pass of WSS: the maximal violators of each class."""
        cdef int nc = self.n_chunks(self.active_size)
        cdef double t0 = 0.0
        cdef Sweep w
        if self.next_up_valid:
            self.next_up_valid = False
            r[0] = self.next_up
            return
        if nc == 1:
            _up_chunk(self.G, self.ys, self.status, 0, self.active_size, r)
            return
        if self.timed:
            t0 = monotonic()
        self.sweep_init(&w, SW_UP)
        self.chunks(&w, nc)
        if self.timed:
            self.charge_sync(t0, nc)
        _combine_up(self.up, nc, r)

    cdef void update_G_and_pick(self, const Step* s) noexcept nogil:
        cdef Py_ssize_t act = self.active_size, l = self.l
        cdef Py_ssize_t work = act + l * ((s.Bi != NULL) + (s.Bj != NULL))
        cdef int nc = self.n_chunks(work)
        cdef Sweep w
        cdef double t0 = self.start_clock(work)
        if nc == 1:
            _step_chunk(self.G, self.G_bar, self.ys, self.status, s, act, l, 0, 1,
                        &self.next_up)
        else:
            self.sweep_init(&w, SW_STEP)
            w.step = s
            self.chunks(&w, nc)
            if self.timed:
                self.charge_sync(t0, nc)
            if s.Kj != NULL:
                _combine_up(self.up, nc, &self.next_up)
        self.record(t0, work)
        self.next_up_valid = s.Kj != NULL

    cdef void pick_low(self, double gp, const kfloat* Kp, double qdp,
                       double gn, const kfloat* Kn, double qdn,
                       LowPick* r) noexcept nogil:
        """Second pass of WSS: the partner with the best second-order decrease."""
        cdef Py_ssize_t act = self.active_size
        cdef int nc = self.n_chunks(act)
        cdef Sweep w
        cdef double t0 = self.start_clock(act)
        if nc == 1:
            _low_chunk(self.G, self.ys, self.status, self.QD, gp, Kp, qdp, gn, Kn, qdn,
                       0, act, r)
            self.record(t0, act)
            return
        self.sweep_init(&w, SW_LOW)
        w.gp = gp
        w.Kp = Kp
        w.qdp = qdp
        w.gn = gn
        w.Kn = Kn
        w.qdn = qdn
        self.chunks(&w, nc)
        self.record(t0, act)
        if self.timed:
            self.charge_sync(t0, nc)
        _combine_low(self.low, nc, r)

    cdef int select_working_set(self, Py_ssize_t* out_i, Py_ssize_t* out_j) noexcept nogil:
        """LIBSVM's WSS2; returns 1 when optimal, 0 with a pair, <0 on error."""
        cdef UpPick u
        cdef LowPick w
        cdef double gmax
        cdef Py_ssize_t i
        cdef const kfloat* Ki = NULL
        cdef double qdi = 0.0
        self.pick_up(&u)
        if u.gp > u.gn or (u.gp == u.gn and u.ip > u.in_):
            gmax = u.gp
            i = u.ip
        else:
            gmax = u.gn
            i = u.in_
        if i != -1:
            Ki = self.krow(i, self.active_size)
            if Ki == NULL:
                return ST_NOMEM
            qdi = self.QD[i]
        self.pick_low(gmax, Ki, qdi, gmax, Ki, qdi, &w)
        if w.g2n > w.g2p:
            w.g2p = w.g2n
        self.gap = gmax + w.g2p
        if gmax + w.g2p < self.eps or w.j == -1:
            return 1
        out_i[0] = i
        out_j[0] = w.j
        return 0

    cdef int select_working_set_nu(self, Py_ssize_t* out_i, Py_ssize_t* out_j) noexcept nogil:
        """Solver_NU's WSS: both variables from one class."""
        cdef UpPick u
        cdef LowPick w
        cdef const kfloat* Kp = NULL
        cdef const kfloat* Kn = NULL
        cdef double qdp = 0.0, qdn = 0.0, gp, gn
        self.pick_up(&u)
        if u.ip != -1:
            Kp = self.krow(u.ip, self.active_size)
            if Kp == NULL:
                return ST_NOMEM
            qdp = self.QD[u.ip]
        if u.in_ != -1:
            Kn = self.krow(u.in_, self.active_size)
            if Kn == NULL:
                return ST_NOMEM
            qdn = self.QD[u.in_]
        self.pick_low(u.gp, Kp, qdp, u.gn, Kn, qdn, &w)
        gp = u.gp + w.g2p
        gn = u.gn + w.g2n
        self.gap = gp if gp > gn else gn
        if self.gap < self.eps or w.j == -1:
            return 1
        out_i[0] = u.ip if self.ys[w.j] > 0 else u.in_
        out_j[0] = w.j
        return 0

    cdef int select_one(self, Py_ssize_t* out_i) noexcept nogil:
        """No-bias selection; returns 1 when every |projected gradient| < eps."""
        cdef int nc = self.n_chunks(self.active_size)
        cdef OnePick r
        cdef Sweep w
        cdef double t0 = 0.0
        if nc == 1:
            _one_chunk(self.G, self.status, self.QD, 0, self.active_size, &r)
        else:
            if self.timed:
                t0 = monotonic()
            self.sweep_init(&w, SW_ONE)
            self.chunks(&w, nc)
            if self.timed:
                self.charge_sync(t0, nc)
            _combine_one(self.one, nc, &r)
        self.gap = r.viol
        if r.viol < self.eps or r.i == -1:
            return 1
        out_i[0] = r.i
        return 0

    cdef int select(self, Py_ssize_t* i, Py_ssize_t* j) noexcept nogil:
        if not self.bias:
            return self.select_one(i)
        if self.nu:
            return self.select_working_set_nu(i, j)
        return self.select_working_set(i, j)

    # ------------------------------------------------------------------
    # shrinking

    cdef inline bint be_shrunk(self, Py_ssize_t i, double g1, double g2,
                               double g3, double g4) noexcept nogil:
        # g1..g4 as in Solver_NU; the plain solver passes g3 = g2, g4 = g1 and
        # the no-bias solver g1 = g2 = g3 = g4 = the largest violation.
        cdef double g = self.G[i]
        if self.status[i] == UPPER_BOUND:
            if self.ys[i] > 0:
                return -g > g1
            return -g > g4
        if self.status[i] == LOWER_BOUND:
            if self.ys[i] > 0:
                return g > g2
            return g > g3
        return False

    cdef int do_shrinking(self) noexcept nogil:
        cdef double g1 = -INFINITY, g2 = -INFINITY, g3 = -INFINITY, g4 = -INFINITY
        cdef double gap, g
        cdef Py_ssize_t i, act = self.active_size
        cdef const double* G = self.G
        cdef OnePick one
        cdef int rc
        cdef Tic tic
        self.tic(&tic)
        if not self.bias:
            _one_chunk(G, self.status, self.QD, 0, act, &one)
            g1 = g2 = g3 = g4 = one.viol
            gap = one.viol
        else:
            for i in range(act):
                g = G[i]
                if self.ys[i] > 0:
                    if self.status[i] != UPPER_BOUND and -g >= g1:
                        g1 = -g
                    if self.status[i] != LOWER_BOUND and g >= g2:
                        g2 = g
                else:
                    if self.status[i] != UPPER_BOUND and -g >= g4:
                        g4 = -g
                    if self.status[i] != LOWER_BOUND and g >= g3:
                        g3 = g
            if self.nu:
                gap = g1 + g2
                if g3 + g4 > gap:
                    gap = g3 + g4
            else:
                # Solver's Gmax1 / Gmax2 pool both classes.
                if g3 > g1:
                    g1 = g3
                if g4 > g2:
                    g2 = g4
                g3 = g1
                g4 = g2
                gap = g1 + g2
        if not self.unshrink and gap <= self.eps * 10:
            self.unshrink = True
            rc = self.reconstruct_gradient()
            if rc < 0:
                return rc
            self.active_size = self.l
        i = 0
        while i < self.active_size:
            if self.be_shrunk(i, g1, g2, g3, g4):
                self.active_size -= 1
                while self.active_size > i:
                    if not self.be_shrunk(self.active_size, g1, g2, g3, g4):
                        self.swap_index(i, self.active_size)
                        break
                    self.active_size -= 1
            i += 1
        self.toc(&tic, T_SHRINK)
        return 0

    # ------------------------------------------------------------------
    # rho

    cdef double calculate_rho(self) noexcept nogil:
        cdef double ub = INFINITY, lb = -INFINITY, sum_free = 0.0, yG
        cdef Py_ssize_t i, nr_free = 0
        for i in range(self.active_size):
            yG = self.ys[i] * self.G[i]
            if self.status[i] == UPPER_BOUND:
                if self.ys[i] < 0:
                    ub = min(ub, yG)
                else:
                    lb = max(lb, yG)
            elif self.status[i] == LOWER_BOUND:
                if self.ys[i] > 0:
                    ub = min(ub, yG)
                else:
                    lb = max(lb, yG)
            else:
                nr_free += 1
                sum_free += yG
        if nr_free > 0:
            return sum_free / nr_free
        return (ub + lb) / 2

    cdef double calculate_rho_nu(self) noexcept nogil:
        cdef double ub1 = INFINITY, ub2 = INFINITY, lb1 = -INFINITY, lb2 = -INFINITY
        cdef double s1 = 0.0, s2 = 0.0, r1, r2, g
        cdef Py_ssize_t i, nf1 = 0, nf2 = 0
        for i in range(self.active_size):
            g = self.G[i]
            if self.ys[i] > 0:
                if self.status[i] == UPPER_BOUND:
                    lb1 = max(lb1, g)
                elif self.status[i] == LOWER_BOUND:
                    ub1 = min(ub1, g)
                else:
                    nf1 += 1
                    s1 += g
            else:
                if self.status[i] == UPPER_BOUND:
                    lb2 = max(lb2, g)
                elif self.status[i] == LOWER_BOUND:
                    ub2 = min(ub2, g)
                else:
                    nf2 += 1
                    s2 += g
        r1 = s1 / nf1 if nf1 > 0 else (ub1 + lb1) / 2
        r2 = s2 / nf2 if nf2 > 0 else (ub2 + lb2) / 2
        self.r = (r1 + r2) / 2
        return (r1 - r2) / 2

    # ------------------------------------------------------------------
    # Python visits (progress, Ctrl-C): the only places the GIL is taken

    cdef int poll(self) noexcept with gil:
        self.error = visit_python(
            self.progress, {"n_iter": self.n_iter, "gap": self.gap,
                            "active_size": self.active_size,
                            "n_kernel_evals": self.kr.n_kernel_evals,
                            "seconds": self.clock.last - self.clock.start})
        return 0 if self.error is None else -1

    # ------------------------------------------------------------------
    # the solver

    cdef const kfloat* bar_row(self, Py_ssize_t i, bint was_upper, const kfloat* K,
                               const kfloat** B, double* c) noexcept nogil:
        """Row i of the step, extended to all l variables (B, with G_bar's
        coefficient c) when alpha_i entered or left the upper bound; returns
        where row i now is (NULL: no memory).  Extending row i keeps the other
        row of the step valid: the two most recent rows always are."""
        B[0] = NULL
        if was_upper == (self.status[i] == UPPER_BOUND):
            return K
        K = self.krow_again(i, self.l, K)
        B[0] = K
        c[0] = -self.C[i] * self.ys[i] if was_upper else self.C[i] * self.ys[i]
        return K

    cdef int two_variable_step(self, Py_ssize_t i, Py_ssize_t j) noexcept nogil:
        cdef double* alpha = self.alpha
        cdef double* G = self.G
        cdef const kfloat* Ki
        cdef const kfloat* Kj
        cdef double C_i = self.C[i], C_j = self.C[j]
        cdef double old_i = alpha[i], old_j = alpha[j]
        cdef double quad, delta, diff, total
        cdef bint ui, uj
        cdef Step s
        Ki = self.krow(i, self.active_size)
        if Ki == NULL:
            return ST_NOMEM
        Kj = self.krow(j, self.active_size)
        if Kj == NULL:
            return ST_NOMEM
        # Q_ij = -K_ij when the labels differ, +K_ij otherwise.
        if self.ys[i] != self.ys[j]:
            quad = self.QD[i] + self.QD[j] - 2.0 * Ki[j]
            if quad <= 0:
                quad = TAU
            delta = (-G[i] - G[j]) / quad
            diff = alpha[i] - alpha[j]
            alpha[i] += delta
            alpha[j] += delta
            if diff > 0:
                if alpha[j] < 0:
                    alpha[j] = 0
                    alpha[i] = diff
            else:
                if alpha[i] < 0:
                    alpha[i] = 0
                    alpha[j] = -diff
            if diff > C_i - C_j:
                if alpha[i] > C_i:
                    alpha[i] = C_i
                    alpha[j] = C_i - diff
            else:
                if alpha[j] > C_j:
                    alpha[j] = C_j
                    alpha[i] = C_j + diff
        else:
            quad = self.QD[i] + self.QD[j] - 2.0 * Ki[j]
            if quad <= 0:
                quad = TAU
            delta = (G[i] - G[j]) / quad
            total = alpha[i] + alpha[j]
            alpha[i] -= delta
            alpha[j] += delta
            if total > C_i:
                if alpha[i] > C_i:
                    alpha[i] = C_i
                    alpha[j] = total - C_i
            else:
                if alpha[j] < 0:
                    alpha[j] = 0
                    alpha[i] = total
            if total > C_j:
                if alpha[j] > C_j:
                    alpha[j] = C_j
                    alpha[i] = total - C_j
            else:
                if alpha[i] < 0:
                    alpha[i] = 0
                    alpha[j] = total
        ui = self.status[i] == UPPER_BOUND
        uj = self.status[j] == UPPER_BOUND
        self.update_status(i)
        self.update_status(j)
        s.a = self.ys[i] * (alpha[i] - old_i)
        s.b = self.ys[j] * (alpha[j] - old_j)
        # The rows are fetched in the same order as by separate G and G_bar
        # updates, so the cache (and the kernel count) behave as before.
        s.Ki = self.bar_row(i, ui, Ki, &s.Bi, &s.ci)
        if s.Ki == NULL:
            return ST_NOMEM
        s.Kj = self.bar_row(j, uj, Kj, &s.Bj, &s.cj)
        if s.Kj == NULL:
            return ST_NOMEM
        self.update_G_and_pick(&s)
        return 0

    cdef int one_variable_step(self, Py_ssize_t i) noexcept nogil:
        cdef const kfloat* Ki
        cdef double quad = self.QD[i], old = self.alpha[i], a
        cdef bint ui
        cdef Step s
        Ki = self.krow(i, self.active_size)
        if Ki == NULL:
            return ST_NOMEM
        if quad <= 0:
            quad = TAU
        a = old - self.G[i] / quad
        if a < 0:
            a = 0
        elif a > self.C[i]:
            a = self.C[i]
        self.alpha[i] = a
        ui = self.status[i] == UPPER_BOUND
        self.update_status(i)
        s.a = self.ys[i] * (a - old)
        s.Kj = NULL
        s.Bj = NULL
        s.Ki = self.bar_row(i, ui, Ki, &s.Bi, &s.ci)
        if s.Ki == NULL:
            return ST_NOMEM
        self.update_G_and_pick(&s)
        return 0

    cdef int init_gradient(self) noexcept nogil:
        cdef Py_ssize_t i, l = self.l
        cdef const kfloat* Ki
        cdef Tic tic
        self.tic(&tic)
        if self.G_start != NULL:      # the caller's (a warm start's, carried)
            for i in range(l):
                self.G[i] = self.G_start[i]
                self.G_bar[i] = self.G_start[l + i]
            self.toc(&tic, T_GRADIENT)
            return 0
        for i in range(l):
            self.G[i] = self.p[i]
            self.G_bar[i] = 0.0
        for i in range(l):
            if self.status[i] != LOWER_BOUND:
                Ki = self.krow(i, l)
                if Ki == NULL:
                    return ST_NOMEM
                self.axpy(self.G, Ki, self.ys[i] * self.alpha[i], 0, l)
                if self.status[i] == UPPER_BOUND:
                    self.axpy(self.G_bar, Ki, self.ys[i] * self.C[i], 0, l)
        self.toc(&tic, T_GRADIENT)
        return 0

    cdef int run(self) noexcept nogil:
        """iterate(), with the thread team around it: no thread outlives the run."""
        cdef int status
        self.start_team()
        status = self.iterate()
        self.stop_team()
        return status

    cdef int iterate(self) noexcept nogil:
        cdef Py_ssize_t i = 0, j = 0, l = self.l, k
        cdef long long counter
        cdef int rc, status = ST_OK
        cdef double v, now
        cdef Tic tic
        poll_init(&self.clock, TUNING.poll_seconds)
        rc = self.init_gradient()
        if rc < 0:
            return rc
        counter = min(l, self.first_shrink) + 1
        while self.n_iter < self.max_iter:
            counter -= 1
            if counter == 0:
                counter = min(l, 1000)
                if self.shrinking:
                    self.next_up_valid = False
                    rc = self.do_shrinking()
                    if rc < 0:
                        return rc
            self.tic(&tic)
            rc = self.select(&i, &j)
            self.toc(&tic, T_SELECT)
            if rc < 0:
                return rc
            if rc != 0:
                # Optimal on the active set: check it on all variables.
                self.next_up_valid = False
                rc = self.reconstruct_gradient()
                if rc < 0:
                    return rc
                self.active_size = l
                self.tic(&tic)
                rc = self.select(&i, &j)
                self.toc(&tic, T_SELECT)
                if rc < 0:
                    return rc
                if rc != 0:
                    break
                counter = 1
            self.n_iter += 1
            self.adapt()
            if (self.n_iter & (POLL_EVERY - 1)) == 0:
                now = monotonic()
                if self.team != NULL and now >= self.next_watch:
                    self.watch(now)
                if poll_due_at(&self.clock, now):
                    if self.poll() != 0:
                        return ST_ABORT
            self.tic(&tic)
            if self.bias:
                rc = self.two_variable_step(i, j)
            else:
                rc = self.one_variable_step(i)
            self.toc(&tic, T_GRADIENT)
            if rc < 0:
                return rc
        if self.n_iter >= self.max_iter:
            if self.active_size < l:
                rc = self.reconstruct_gradient()
                if rc < 0:
                    return rc
                self.active_size = l
            status = ST_MAX_ITER
        if not self.bias:
            self.rho = 0.0
        elif self.nu:
            self.rho = self.calculate_rho_nu()
        else:
            self.rho = self.calculate_rho()
        v = 0.0
        for k in range(l):
            v += self.alpha[k] * (self.G[k] + self.p[k])
        self.obj = v / 2
        return status

    cdef void put_back(self, double[::1] out) noexcept nogil:
        cdef Py_ssize_t k
        for k in range(self.l):
            out[self.active_set[k]] = self.alpha[k]

    cdef void put_back_gradient(self, double[:, ::1] out) noexcept nogil:
        """G and G_bar by variable (rows 0 and 1 of ``out``); whole after a
        finished run (iterate reconstructs the shrunk variables' G)."""
        cdef Py_ssize_t k
        for k in range(self.l):
            out[0, self.active_set[k]] = self.G[k]
            out[1, self.active_set[k]] = self.G_bar[k]


def _get_tuning():
    """The parallel threshold, the polling interval, the adaptive switch (for
    tests), the phase timers' default (for benchmarks/profile_smo.py) and the
    thread team's setting and spin time."""
    out = tuning_dict(&TUNING)
    out["timers"] = bool(TIMERS)
    out["team"] = TEAM_NAMES[TEAM_MODE]
    out["team_spin_us"] = TEAM_SPIN_NS / 1000.0
    out["team_par_min"] = TEAM_PAR_MIN
    out["team_row_min_work"] = TEAM_ROW_MIN_WORK
    return out


def _set_tuning(par_min=None, poll_seconds=None, adaptive=None, timers=None,
                team=None, team_spin_us=None, team_par_min=None, team_row_min_work=None):
    """Change the parallel threshold / polling interval / adaptive choice of
    parallel loops; tests use this to run the chunked reductions and the
    progress path on small problems.  ``timers=True`` turns the phase timers
    on for every later solve that does not say otherwise (``solve(timers=)``),
    so ``kernsolve.train``'s ``model.stats`` carries the ``time_*`` keys.
    ``team``: "auto", "spin", "sleep" or "off" (KERNSOLVE_SMO_TEAM's values);
    ``team_spin_us``: how long an idle thread of the team spins;
    ``team_par_min`` / ``team_row_min_work``: the shortest parallel loop
    (elements) and row (multiply-adds) while the team spins."""
    global TIMERS, TEAM_MODE, TEAM_SPIN_NS, _TEAM_ERROR, TEAM_PAR_MIN, TEAM_ROW_MIN_WORK
    mode = TEAM_MODE if team is None else _team_mode(team, "team")
    if team_spin_us is not None and not (0 <= team_spin_us <= 1e6):
        raise ValueError(f"team_spin_us must be in [0, 1e6], got {team_spin_us!r}")
    if team_par_min is not None and int(team_par_min) < 1:
        raise ValueError(f"team_par_min must be >= 1, got {team_par_min!r}")
    if team_row_min_work is not None and not (team_row_min_work >= 0):
        raise ValueError(f"team_row_min_work must be >= 0, got {team_row_min_work!r}")
    tuning_update(&TUNING, par_min, poll_seconds, adaptive)
    if team_par_min is not None:
        TEAM_PAR_MIN = int(team_par_min)
    if team_row_min_work is not None:
        TEAM_ROW_MIN_WORK = float(team_row_min_work)
    if timers is not None:
        TIMERS = bool(timers)
    TEAM_MODE = mode
    if team is not None:
        _TEAM_ERROR = None
    if team_spin_us is not None:
        TEAM_SPIN_NS = <long long>(team_spin_us * 1000.0)


def _team_memory(forget=False):
    """The thread team's remembered load decision (_team.h): True (spin),
    False (sleep) or None (no team has run in this process yet, or
    ``forget=True``, which also forgets it)."""
    if forget:
        ks_load_forget()
    spin = ks_load_remembered()
    return None if spin < 0 else bool(spin)


cdef struct Touch:
    double* slots
    long long work


cdef void _touch(void* arg, int c, int nc) noexcept nogil:
    # Each chunk counts its runs in its own cache line, after `work` steps of
    # a dependent chain (about 1 ns each): a job of known size.
    cdef Touch* t = <Touch*>arg
    cdef double x = t.slots[8 * c + 1]
    cdef long long k
    for k in range(t.work):
        x = x * 0.999999 + 1e-9
    t.slots[8 * c + 1] = x
    t.slots[8 * c] += 1.0


def _dispatch_seconds(int n_threads, long long repeats, team, long long work=0):
    """Time ``repeats`` dispatches and joins of a job of n_threads chunks, each
    ``work`` steps of a dependent chain (0: next to nothing), on a thread team
    (``team`` "spin" or "sleep": its idle threads' wait) or on OpenMP's
    threads ("off": the wait policy of OMP_WAIT_POLICY / GOMP_SPINCOUNT,
    passive unless set).  Returns (wall seconds per dispatch, the times each
    chunk ran): for benchmarks/bench_team.py, and for the tests (every chunk
    runs exactly once per job)."""
    cdef int mode = _team_mode(team, "team")
    cdef double slots[512]
    cdef Touch job
    cdef ks_team* t = NULL
    cdef long long r
    cdef int c, n = min(max(n_threads, 1), 64)
    cdef double t0, dt
    if mode == TEAM_AUTO:
        raise ValueError("team: 'spin', 'sleep' or 'off' (auto has no fixed wait)")
    for c in range(512):
        slots[c] = 0.0
    job.slots = slots
    job.work = max(work, 0)
    if mode != TEAM_OFF:
        t = ks_team_start(n, 0 if mode == TEAM_SLEEP else TEAM_SPIN_NS, 0)
        if t == NULL:
            raise RuntimeError("no thread team on this system")
    with nogil:
        t0 = monotonic()
        for r in range(repeats):
            if t != NULL:
                ks_team_run(t, _touch, <void*>&job, n)
            else:
                for c in prange(n, num_threads=n, schedule='static', chunksize=1):
                    _touch(<void*>&job, c, n)
        dt = monotonic() - t0
        ks_team_stop(t)
    return dt / max(repeats, 1), [int(slots[8 * c]) for c in range(n)]


def _load_decisions(evidence, int n_threads=2, int cpus=2):
    """The team's load decision fed ``evidence``, a sequence of (time, wait,
    others) (_team.h, ks_load_step: wait < 0 or others < 0 mean unmeasured),
    from the initial state: the spin decision after each (for tests)."""
    cdef ks_load s
    ks_load_init(&s)
    out = []
    for now, wait, others in evidence:
        out.append(bool(ks_load_step(&s, now, wait, others, n_threads, cpus)))
    return out


def _first_pair(X, int kernel_type, double gamma, y, p, alpha, C, int n_threads,
                bint nu=False):
    """The working set SMO's first iteration selects from the start alpha
    (positions are the variables: nothing is shrunk yet), every sweep split as
    the solver splits it for n_threads (set par_min=1, adaptive=False to
    split the shortest ones): (i, j, gap), or (-1, -1, gap) when the start is
    optimal.  For tests against a brute-force selection (tests/test_smo_team.py)."""
    cdef KernelRows kr = KernelRows(X, kernel_type, 3, gamma, 0.0, 100.0, n_threads)
    cdef _SMO s = _SMO()
    cdef Py_ssize_t i = -1, j = -1
    cdef int rc
    import numpy as np
    y8 = np.ascontiguousarray(y, dtype=np.int8)
    a = np.array(alpha, dtype=np.float64)
    s.setup(kr, y8, np.ascontiguousarray(p, dtype=np.float64), a,
            np.ascontiguousarray(C, dtype=np.float64), False, nu, True, False,
            1e-3, n_threads, 1)
    with nogil:
        s.start_team()
        rc = s.init_gradient()
        if rc == 0:
            rc = s.select(&i, &j)
        s.stop_team()
    if rc < 0:
        raise MemoryError("SMO: the kernel engine could not allocate a row")
    if rc != 0:
        return -1, -1, s.gap
    return int(i), int(j), s.gap
