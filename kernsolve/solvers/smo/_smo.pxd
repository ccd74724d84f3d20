# Building blocks of the SMO solver (kernsolve/solvers/smo/_smo.pyx): the per-chunk
# sweeps over the active set and the exact combination of their picks, and
# the declaration of the solver class itself (at the end).  They
# are inline so each chunk of a parallel loop runs the same code as the serial
# loop.  The serial/parallel chooser that decides between the two is shared
# with the other solvers (kernsolve/_core/_solver.pxd).
from libc.math cimport INFINITY

from kernsolve._core._kernel cimport KernelRows, kfloat
from kernsolve._core._solver cimport Bandit, Poll
from kernsolve._core._team cimport ks_team

cdef enum:
    LOWER_BOUND = 0
    UPPER_BOUND = 1
    FREE = 2

# LIBSVM's TAU (the non-PSD guard) and the rejection margin of WSS2.
cdef extern from *:
    """
    #define SMO_TAU 1e-12
    #define SMO_SKIP_MARGIN (1.0 - 1e-12)
    """
    const double SMO_TAU
    const double SMO_SKIP_MARGIN

# The two sweeps' bulk four variables at a time (AVX2 where the CPU has it,
# chosen at run time; the same picks and bits as the loops below, which finish
# each range).
cdef extern from "_wss_avx2.h" nogil:
    Py_ssize_t ks_axpy2_up_vec(double* G, const double* ys, const char* st,
                               const float* Ki, double a, const float* Kj, double b,
                               Py_ssize_t lo, Py_ssize_t hi, double* gp, Py_ssize_t* ip,
                               double* gn, Py_ssize_t* in_)
    Py_ssize_t ks_low_vec(const double* G, const double* ys, const char* st,
                          const double* QD, double gp, const float* Kp, double qdp,
                          double gn, const float* Kn, double qdn,
                          Py_ssize_t lo, Py_ssize_t hi, double tau,
                          double* g2p, double* g2n, double* obj, Py_ssize_t* j)


cdef struct UpPick:
    double gp          # max -G[t] over y_t = +1, t not at upper bound
    Py_ssize_t ip
    double gn          # max  G[t] over y_t = -1, t not at lower bound
    Py_ssize_t in_


cdef struct LowPick:
    double g2p         # max  G[t] over y_t = +1, t not at lower bound
    double g2n         # max -G[t] over y_t = -1, t not at upper bound
    double obj         # smallest second-order objective change
    Py_ssize_t j


cdef struct OnePick:
    double viol        # largest projected-gradient violation
    double obj
    Py_ssize_t i


cdef inline void _up_chunk(const double* G, const double* ys, const char* st,
                    Py_ssize_t lo, Py_ssize_t hi, UpPick* r) noexcept nogil:
    # ">=" keeps LIBSVM's rule that the last maximiser wins.
    cdef double gp = -INFINITY, gn = -INFINITY
    cdef Py_ssize_t ip = -1, in_ = -1, t
    for t in range(lo, hi):
        if ys[t] > 0:
            if st[t] != UPPER_BOUND and -G[t] >= gp:
                gp = -G[t]
                ip = t
        else:
            if st[t] != LOWER_BOUND and G[t] >= gn:
                gn = G[t]
                in_ = t
    r.gp = gp
    r.ip = ip
    r.gn = gn
    r.in_ = in_


cdef inline void _low_chunk(const double* G, const double* ys, const char* st,
                     const double* QD,
                     double gp, const kfloat* Kp, double qdp,
                     double gn, const kfloat* Kn, double qdn,
                     Py_ssize_t lo, Py_ssize_t hi, LowPick* r) noexcept nogil:
    # K rows are unsigned kernel values: for every admissible j of either
    # class, LIBSVM's quad_coef QD_i + QD_j -+ 2 y_i Q_ij equals
    # QD_i + QD_j - 2 K_ij exactly.  Kp/Kn are only read when the matching
    # G bound is finite (grad_diff > 0 is impossible otherwise).
    #
    # Most candidates cannot beat the best so far; a multiplication proves it
    # without the division: gd^2 < w * quad with w = -obj (1 - 1e-12) implies
    # that the rounded -gd^2 / quad is > obj, so skipping changes nothing.
    cdef double g2p = -INFINITY, g2n = -INFINITY, obj = INFINITY
    cdef double w = -INFINITY
    cdef double gd, gd2, quad, od
    cdef Py_ssize_t j = -1, t
    lo = ks_low_vec(G, ys, st, QD, gp, Kp, qdp, gn, Kn, qdn, lo, hi, SMO_TAU,
                    &g2p, &g2n, &obj, &j)
    if j >= 0:
        w = -obj * SMO_SKIP_MARGIN
    for t in range(lo, hi):
        if ys[t] > 0:
            if st[t] != LOWER_BOUND:
                gd = gp + G[t]
                if G[t] >= g2p:
                    g2p = G[t]
                if gd > 0:
                    quad = qdp + QD[t] - 2.0 * Kp[t]
                    gd2 = gd * gd
                    if quad > 0:
                        if gd2 < w * quad:
                            continue
                        od = -gd2 / quad
                    else:
                        od = -gd2 / SMO_TAU
                    if od <= obj:
                        obj = od
                        w = -obj * SMO_SKIP_MARGIN
                        j = t
        else:
            if st[t] != UPPER_BOUND:
                gd = gn - G[t]
                if -G[t] >= g2n:
                    g2n = -G[t]
                if gd > 0:
                    quad = qdn + QD[t] - 2.0 * Kn[t]
                    gd2 = gd * gd
                    if quad > 0:
                        if gd2 < w * quad:
                            continue
                        od = -gd2 / quad
                    else:
                        od = -gd2 / SMO_TAU
                    if od <= obj:
                        obj = od
                        w = -obj * SMO_SKIP_MARGIN
                        j = t
    r.g2p = g2p
    r.g2n = g2n
    r.obj = obj
    r.j = j


cdef inline void _one_chunk(const double* G, const char* st, const double* QD,
                     Py_ssize_t lo, Py_ssize_t hi, OnePick* r) noexcept nogil:
    # No-bias selection: the coordinate with the largest unconstrained
    # decrease G_t^2 / Q_tt among KKT violators (bounds ignored, as WSS2 does).
    cdef double viol = 0.0, obj = INFINITY, g, v, q, od
    cdef Py_ssize_t i = -1, t
    for t in range(lo, hi):
        g = G[t]
        if g < 0 and st[t] != UPPER_BOUND:
            v = -g
        elif g > 0 and st[t] != LOWER_BOUND:
            v = g
        else:
            continue
        if v >= viol:
            viol = v
        q = QD[t]
        if q > 0:
            od = -(g * g) / q
        else:
            od = -(g * g) / SMO_TAU
        if od <= obj:
            obj = od
            i = t
    r.viol = viol
    r.obj = obj
    r.i = i



cdef inline void _axpy2_up_chunk(double* G, const double* ys, const char* st,
                          const kfloat* Ki, double a, const kfloat* Kj, double b,
                          Py_ssize_t lo, Py_ssize_t hi, UpPick* r) noexcept nogil:
    """The gradient update fused with the next iteration's first WSS pass
    (statuses are already updated): one sweep over G instead of two."""
    cdef double gp = -INFINITY, gn = -INFINITY, g
    cdef Py_ssize_t ip = -1, in_ = -1, t
    lo = ks_axpy2_up_vec(G, ys, st, Ki, a, Kj, b, lo, hi, &gp, &ip, &gn, &in_)
    for t in range(lo, hi):
        g = G[t] + ys[t] * (Ki[t] * a + Kj[t] * b)
        G[t] = g
        if ys[t] > 0:
            if st[t] != UPPER_BOUND and -g >= gp:
                gp = -g
                ip = t
        else:
            if st[t] != LOWER_BOUND and g >= gn:
                gn = g
                in_ = t
    r.gp = gp
    r.ip = ip
    r.gn = gn
    r.in_ = in_


cdef inline void _axpy1_chunk(double* out, const double* ys, const kfloat* K,
                              double a, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    # LIBSVM's out[k] += a' * Q_ik, with a = y_i a' and Q_ik = y_i y_k K_ik.
    cdef Py_ssize_t k
    for k in range(lo, hi):
        out[k] += ys[k] * (K[k] * a)


cdef struct Step:
    # Everything one SMO step writes into the O(l) vectors, done in a single
    # parallel region (one fork/join per step instead of up to three):
    # G += a Ki + b Kj over the active set (then the first WSS pass), and
    # G_bar += ci Bi, then += cj Bj, over all l variables when alpha_i /
    # alpha_j entered or left the upper bound (Bi / Bj NULL otherwise).
    # Each element sees the same operations in the same order as the
    # separate loops, so splitting the range changes no bit.  Kj NULL: the
    # one-variable step (G += a Ki only, no WSS pass).
    const kfloat* Ki
    double a
    const kfloat* Kj
    double b
    const kfloat* Bi
    double ci
    const kfloat* Bj
    double cj


cdef inline void _step_chunk(double* G, double* G_bar, const double* ys,
                             const char* st, const Step* s, Py_ssize_t act,
                             Py_ssize_t l, int c, int nc, UpPick* r) noexcept nogil:
    # Chunk c of nc: the same share of the active set and of all l variables,
    # so both parts are balanced between threads.
    if s.Kj != NULL:
        _axpy2_up_chunk(G, ys, st, s.Ki, s.a, s.Kj, s.b,
                        (act * c) // nc, (act * (c + 1)) // nc, r)
    else:
        _axpy1_chunk(G, ys, s.Ki, s.a, (act * c) // nc, (act * (c + 1)) // nc)
    if s.Bi != NULL:
        _axpy1_chunk(G_bar, ys, s.Bi, s.ci, (l * c) // nc, (l * (c + 1)) // nc)
    if s.Bj != NULL:
        _axpy1_chunk(G_bar, ys, s.Bj, s.cj, (l * c) // nc, (l * (c + 1)) // nc)


cdef inline void _gather_chunk(kfloat* b, const kfloat* data, const Py_ssize_t* index,
                               Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    # SVR: the Q row in position order from the data row (LIBSVM's SVR_Q).
    cdef Py_ssize_t k
    for k in range(lo, hi):
        b[k] = data[index[k]]


# One parallel sweep of the solver, as a job for its chunks (_smo.pyx's
# _sweep runs chunk c of nc; _SMO.chunks hands the chunks to the thread team
# or to OpenMP).  `kind` says which sweep; only its fields are read.
cdef enum:
    SW_UP = 0             # WSS pass 1 over the active set -> up[c]
    SW_LOW = 1            # WSS2 pass 2 -> low[c]
    SW_STEP = 2           # the step's G / G_bar sweep (Step) -> up[c]
    SW_ONE = 3            # the no-bias selection -> one[c]
    SW_AXPY = 4           # out[lo:hi] += ys K a (initial gradient, reconstruction)
    SW_GATHER = 5         # SVR: gath[lo:hi] = data[index[lo:hi]]

cdef struct Sweep:
    int kind
    Py_ssize_t act, l
    double* G
    double* G_bar
    const double* ys
    const char* st
    const double* QD
    const Step* step
    double gp, qdp, gn, qdn
    const kfloat* Kp
    const kfloat* Kn
    UpPick* up
    LowPick* low
    OnePick* one
    double* out           # SW_AXPY
    const kfloat* K
    double a
    Py_ssize_t lo, hi     # SW_AXPY, SW_GATHER
    kfloat* gath          # SW_GATHER
    const kfloat* data
    const Py_ssize_t* index
    double* busy          # each chunk's busy seconds (timers on), else NULL


# Why a chunked scan picks exactly what the serial scan picks.  LIBSVM's
# scans compare with ">=" (maximum) or "<=" (minimum), so among equal values
# the LAST index wins (not the first).  Each chunk is a contiguous index range
# scanned in order with the same comparison, so it returns the last optimiser
# of its range (or -1 if nothing there is admissible).  Folding the chunks in
# increasing index order with the same comparison keeps, after chunk c, the
# last optimiser of chunks 0..c: a strictly better chunk value replaces the
# running pick; an equal one also replaces it, correctly, because every index
# of chunk c is larger than every index before it; a worse one is dropped.
# Values are only compared, never combined arithmetically, so no rounding
# enters; a plain maximum (g2p, g2n, viol) is order-free anyway.  WSS2's
# skip test uses the chunk's own best so far, which is never better than the
# serial scan's at the same index, so it skips only candidates the serial
# scan cannot pick either.

cdef inline void _combine_up(const UpPick* u, int nc, UpPick* r) noexcept nogil:
    cdef int c
    r[0] = u[0]
    for c in range(1, nc):
        if u[c].ip != -1 and u[c].gp >= r.gp:
            r.gp = u[c].gp
            r.ip = u[c].ip
        if u[c].in_ != -1 and u[c].gn >= r.gn:
            r.gn = u[c].gn
            r.in_ = u[c].in_


cdef inline void _combine_low(const LowPick* w, int nc, LowPick* r) noexcept nogil:
    cdef int c
    r[0] = w[0]
    for c in range(1, nc):
        if w[c].g2p > r.g2p:
            r.g2p = w[c].g2p
        if w[c].g2n > r.g2n:
            r.g2n = w[c].g2n
        if w[c].j != -1 and w[c].obj <= r.obj:
            r.obj = w[c].obj
            r.j = w[c].j


cdef inline void _combine_one(const OnePick* o, int nc, OnePick* r) noexcept nogil:
    cdef int c
    r[0] = o[0]
    for c in range(1, nc):
        if o[c].viol > r.viol:
            r.viol = o[c].viol
        if o[c].i != -1 and o[c].obj <= r.obj:
            r.obj = o[c].obj
            r.i = o[c].i


# Phase timers (opt-in: _set_tuning(timers=True) or solve(..., timers=True)).
# Each phase is charged its *exclusive* seconds: its elapsed time minus what
# phases nested in it were charged (a kernel row fetched during the working-set
# selection counts as kernel rows, not as selection), so the slots add up to
# at most the solve's wall time.  T_SYNC is, for each of the solver's chunked
# parallel regions, its wall time minus the mean busy time of its chunks
# (fork/join and waiting for the slowest thread).  With timers off, each
# timing point costs one branch.
cdef enum:
    T_ROWS = 0            # kernel rows (the engine's fills, their fork/join, SVR gathers)
    T_SELECT = 1          # working-set selection sweeps (WSS2 pass 2, pass 1 when not fused)
    T_GRADIENT = 2        # gradient updates: the step sweep (G, the fused WSS pass 1,
                          # G_bar), the initial gradient, reconstructions
    T_SHRINK = 3          # shrinking's scans and swaps
    T_SYNC = 4            # waiting at the solver's own parallel regions
    N_TIMERS = 5

cdef struct Tic:
    double t              # the clock at the start of a phase
    double charged        # the solver's charged total then


# The solver (_smo.pyx), declared here so that its Python front (_solve.pyx)
# can set it up, run it and read its results.
cdef class _SMO:
    cdef KernelRows kr
    cdef Py_ssize_t l, n, active_size
    cdef double* G
    cdef double* G_bar
    cdef double* alpha
    cdef double* p
    cdef double* C
    cdef double* ys
    cdef double* QD
    cdef char* status
    cdef Py_ssize_t* active_set
    cdef Py_ssize_t* index        # SVR: position -> data row
    cdef kfloat* buf[2]            # SVR: Q rows gathered in position order
    cdef int next_buf
    cdef UpPick* up
    cdef UpPick next_up           # first WSS pass, computed during the G update
    cdef bint next_up_valid
    cdef LowPick* low
    cdef OnePick* one
    cdef bint svr, nu, bias, shrinking, unshrink
    cdef Py_ssize_t first_shrink     # iterations before the first shrinking (LIBSVM: 1000)
    cdef double eps
    cdef int n_threads
    # Per-iteration loops run in parallel only while that is measured to be
    # faster: on an oversubscribed machine every fork/join waits for a
    # descheduled thread.  Only speed depends on this (the reductions are
    # exact), never the result.
    cdef Bandit loops             # the solver's O(active) sweeps
    cdef Bandit rows              # the kernel engine's row fills
    cdef long long max_iter, n_iter
    cdef double rho, obj, r, gap
    cdef Poll clock               # run start and visits to Python
    cdef object progress
    cdef object error
    cdef bint timed               # phase timers on (solve(timers=...))
    # The start's gradient given by the caller (solve(gradient=...): rows G
    # and G_bar by variable), or NULL: init_gradient computes it from alpha.
    cdef const double* G_start
    cdef double timers[N_TIMERS]  # exclusive seconds per phase (T_*)
    cdef double charged           # sum of timers[] (for nesting)
    cdef double* busy             # busy seconds of each chunk of the last region
    # kernsolve's thread team for this run (_team.h), NULL: OpenMP loops.
    # Started by run() when n_threads > 1, stopped before run() returns.
    cdef ks_team* team
    cdef double next_watch        # the clock of the next load watch
    # Loops shorter than this run serially: TUNING.par_min, or the lower
    # TEAM_PAR_MIN while the team's idle threads spin (set_thresholds).
    cdef Py_ssize_t par_min

    cdef int setup(self, KernelRows kr, const signed char[::1] y,
                   const double[::1] p, const double[::1] alpha,
                   const double[::1] C, bint svr, bint nu, bint bias,
                   bint shrinking, double eps, int n_threads,
                   long long max_iter) except -1
    cdef const kfloat* krow(self, Py_ssize_t i, Py_ssize_t length) noexcept nogil
    cdef const kfloat* krow_again(self, Py_ssize_t i, Py_ssize_t length,
                                  const kfloat* prev) noexcept nogil
    cdef inline void update_status(self, Py_ssize_t i) noexcept nogil
    cdef void swap_index(self, Py_ssize_t i, Py_ssize_t j) noexcept nogil
    cdef int n_chunks(self, Py_ssize_t length) noexcept nogil
    cdef void sweep_init(self, Sweep* w, int kind) noexcept nogil
    cdef void chunks(self, Sweep* w, int nc) noexcept nogil
    cdef void axpy(self, double* out, const kfloat* K, double a,
                   Py_ssize_t lo, Py_ssize_t hi) noexcept nogil
    cdef void start_team(self) noexcept nogil
    cdef void stop_team(self) noexcept nogil
    cdef void watch(self, double now) noexcept nogil
    cdef void set_thresholds(self) noexcept nogil
    cdef inline int loop_threads(self) noexcept nogil
    cdef inline bint recorded(self, Py_ssize_t length) noexcept nogil
    cdef inline double start_clock(self, Py_ssize_t length) noexcept nogil
    cdef inline void record(self, double t0, Py_ssize_t length) noexcept nogil
    cdef void adapt(self) noexcept nogil
    cdef inline void tic(self, Tic* s) noexcept nogil
    cdef inline void toc(self, const Tic* s, int slot) noexcept nogil
    cdef void charge_sync(self, double t0, int nc) noexcept nogil
    cdef int reconstruct_gradient(self) noexcept nogil
    cdef void pick_up(self, UpPick* r) noexcept nogil
    cdef void update_G_and_pick(self, const Step* s) noexcept nogil
    cdef void pick_low(self, double gp, const kfloat* Kp, double qdp,
                       double gn, const kfloat* Kn, double qdn,
                       LowPick* r) noexcept nogil
    cdef int select_working_set(self, Py_ssize_t* out_i, Py_ssize_t* out_j) noexcept nogil
    cdef int select_working_set_nu(self, Py_ssize_t* out_i, Py_ssize_t* out_j) noexcept nogil
    cdef int select_one(self, Py_ssize_t* out_i) noexcept nogil
    cdef int select(self, Py_ssize_t* i, Py_ssize_t* j) noexcept nogil
    cdef inline bint be_shrunk(self, Py_ssize_t i, double g1, double g2,
                               double g3, double g4) noexcept nogil
    cdef int do_shrinking(self) noexcept nogil
    cdef double calculate_rho(self) noexcept nogil
    cdef double calculate_rho_nu(self) noexcept nogil
    cdef int poll(self) noexcept with gil
    cdef const kfloat* bar_row(self, Py_ssize_t i, bint was_upper, const kfloat* K,
                               const kfloat** B, double* c) noexcept nogil
    cdef int two_variable_step(self, Py_ssize_t i, Py_ssize_t j) noexcept nogil
    cdef int one_variable_step(self, Py_ssize_t i) noexcept nogil
    cdef int init_gradient(self) noexcept nogil
    cdef int iterate(self) noexcept nogil
    cdef int run(self) noexcept nogil
    cdef void put_back(self, double[::1] out) noexcept nogil
    cdef void put_back_gradient(self, double[:, ::1] out) noexcept nogil
