"""A warm start's seed carried to the optimum by an active-set method (issue 35).

On a grid's large-C cells SMO crawls: svmguide1 at C = 2^15, gamma = 2 takes
two million SMO iterations for 120 free support vectors, and started from the
solution at C / 4 scaled to the new box (DeCoste and Wagstaff's seed) it still
takes more than a million.  SMO moves two variables at a time; when the free
variables' kernel block is badly conditioned, as it is at large C, those
steps are tiny.  An active-set method moves all the free variables at once:
with the variables at 0 and at C held there, the optimum over the free ones
is a linear system (the free rows of the gradient equal to ``-y b``, and
``y'alpha = 0``), and only the sets change from step to step.  Started from
the seed, whose sets are those of the previous C, it needs a few set changes
where SMO needs its million iterations; SMO then starts from its result and
stops at once when the result meets its stopping rule (it checks, with its
own kernel values, the same bits as ours).

:func:`refine` is the primal active-set method for LIBSVM's C-SVC dual
``min 1/2 a'Qa - e'a`` subject to ``y'a = 0`` and ``0 <= a <= C``, from a
feasible start.  Each step solves the free variables' system and moves toward
its solution as far as the box allows (a ratio test), so the point stays
feasible and the objective never rises: whatever it returns is a valid start,
at least as good as the seed, even when it stops at its step limit.  When the
free variables reach their system's solution, the variables at a bound whose
gradient says they should move are freed (the worst few at a time) and it goes
on; it stops when none is left.

The free variables' block is factorised once (Cholesky, with a small ridge)
and then kept up to date, not refactorised: a variable that is freed borders
the factor, one that reaches a bound has its row and column deleted
(:mod:`._cholesky_update`), O(k^2) each for k free variables where a
factorisation from scratch is O(k^3).  That is what lets it take the 600 to
1,200 free variables of a9a's large-C cells, where a solve from scratch per
step cost more than SMO's iterations.
"""
import numpy as np

from ._cholesky_update import SINGULAR, STEPS, CholeskyFactor, level_steps

__all__ = ["refine"]

_FREED_PER_STEP = 20    # bound variables freed at once (the worst first)
_BATCH = 256            # kernel rows fetched at a time for the gradient
_RIDGE = 1e-6           # the free block's least ridge (see refine)
_REFACTOR_AFTER = 200   # updates of the factor before a slow correction refactorises
_CONVERGING = 0.9      # a correction step that leaves more of the residual stops them


class _Columns:
    """Columns of Q = diag(y) K diag(y) of the variables freed so far (float64).

    Held column by column (Fortran order): a fetched column is written, and a
    joining variable's entries read, in one contiguous run; in rows (C
    order) each of its n values fell in a cache line of its own, which made
    the columns most of a refinement's time on svmguide1 (issue 35)."""

    def __init__(self, kernel_row, y):
        self._row = kernel_row
        self._signs = (y, -y)           # column i is row i times y * y[i]
        self._y = y
        self._slot = np.full(y.size, -1, dtype=np.intp)     # variable -> column of _store
        self._used = 0
        self._store = np.empty((y.size, 16), order="F")

    def slots(self, idx):
        """The columns of the variables ``idx`` in :attr:`store` (fetched if new)."""
        for i in idx[self._slot[idx] < 0]:
            self._fetch(int(i))
        return self._slot[idx]

    def slot(self, i):
        """The column of variable ``i`` (fetched if new)."""
        s = int(self._slot[i])
        return s if s >= 0 else self._fetch(i)

    def _fetch(self, i):
        if self._used == self._store.shape[1]:
            grown = np.empty((self._y.size, 2 * self._used), order="F")
            grown[:, :self._used] = self._store
            self._store = grown
        np.multiply(self._row(i), self._signs[bool(self._y[i] < 0)],
                    out=self._store[:, self._used])
        self._slot[i] = self._used
        self._used += 1
        return self._used - 1

    @property
    def store(self):
        return self._store

    def times(self, idx, step):
        """``Q[:, idx] @ step``, read in place: the fetched columns times the
        step spread over their slots (``store[:, slots]`` would copy n rows of
        the moved columns first, most of the refinement's time on 3,000 rows)."""
        slots = self.slots(idx)
        spread = np.zeros(self._used)
        spread[slots] = step
        return self._store[:, :self._used] @ spread


def _gradient(kernel_row, y, a):
    """``Q a - 1`` from the kernel rows of the nonzero variables."""
    g = np.full(y.size, -1.0)
    nz = np.flatnonzero(a > 0)
    for lo in range(0, nz.size, _BATCH):
        part = nz[lo:lo + _BATCH]
        K = np.stack([kernel_row(int(i)) for i in part]).astype(np.float64)
        g += y * ((a[part] * y[part]) @ K)
    return g


class _FreeSystem:
    """The free variables' block ``H = Q_FF + ridge I`` and its Cholesky
    factor, updated as variables join and leave (bordered for one that joins,
    its row and column deleted for one that leaves: O(k^2) each where a
    factorisation from scratch is k^3 / 3).  The factor keeps the free
    variables in its order (``factor.variables``)."""

    def __init__(self, columns, ridge, stats):
        self._columns = columns
        self._ridge = ridge
        self._stats = stats
        self.factor = CholeskyFactor()
        self.updates = 0            # joins and leaves since the last factorisation

    def factorise(self, F):
        """Factorise the block of ``F`` from scratch (LinAlgError when it is not
        positive definite)."""
        F = np.asarray(F, dtype=np.intp)
        slots = self._columns.slots(F)      # (first: it may grow the store)
        H = self._columns.store[np.ix_(F, slots)]
        H[np.arange(F.size), np.arange(F.size)] += self._ridge
        self.factor.reset(H, F)
        self.updates = 0
        self._stats["factorisations"] += 1

    def join(self, i):
        """Add variable ``i``; False (not added) when the bordered block is
        not numerically positive definite."""
        slot = self._columns.slot(i)
        store = self._columns.store
        if not self.factor.append_column(store, slot, store[i, slot] + self._ridge, i):
            return False
        self.updates += 1
        self._stats["joins"] += 1
        return True


def refine(seed, y, C, kernel_row, tol, max_steps, max_free, stats=None, gradient=None,
           gradient_out=None):
    """The C-SVC dual's optimum from the feasible ``seed``, or as near as
    ``max_steps`` steps get (a new array; see the module's docstring).

    ``y``: the +-1 labels (float64); ``C``: each variable's upper bound;
    ``kernel_row(i)``: row ``i`` of the kernel matrix (float32 or float64, the
    values the SMO core will use); ``tol``: a bound variable is freed when its
    gradient (with the bias) is beyond ``tol`` on the wrong side (half of SMO's
    ``eps``: a result that stops here meets SMO's stopping rule);
    ``max_free``: give up (return the point reached) rather than solve a
    system of more free variables; ``stats``: a dict that receives the
    counts of steps, factorisations from scratch, joins and leaves.

    ``gradient``: the seed's gradient as the SMO core keeps it, rows
    ``Q seed - 1`` and LIBSVM's ``G_bar`` (``sum C_j Q_j`` over the variables
    at their upper bound), or None (computed, a kernel row per nonzero
    variable); with it, ``gradient_out`` (2 x n) receives the result's, for
    the SMO core to start from (``solve``'s ``gradient``) instead of
    computing it again: the first row kept up to date through the steps, the
    second the seed's changed by the variables whose bound changed (all of
    them free at some step, so their columns are at hand).
    """
    stats = {} if stats is None else stats
    for name in ("steps", "factorisations", "joins", "leaves"):
        stats.setdefault(name, 0)
    a = np.array(seed, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    C = np.ascontiguousarray(C, dtype=np.float64)
    free = (a > 0) & (a < C)
    if np.count_nonzero(free) > max_free:
        return a        # (before the gradient: its kernel rows would be wasted)
    columns = _Columns(kernel_row, y)
    # Q a - 1 at a_full, every row
    g_full = _gradient(kernel_row, y, a) if gradient is None else np.array(gradient[0])
    a_full = a.copy()
    g = g_full.copy()                       # Q a - 1 at a, the free rows
    # A ridge on the free block keeps it positive definite, as its Cholesky
    # factor needs, when rows repeat (a9a's binary rows: equal columns) and
    # when the float32 kernel values' rounding (2^-24 relative) makes it
    # slightly indefinite.  The step then solves (Q_FF + ridge I) d = -(g + y b)
    # and leaves -ridge d in the free rows' gradient; further steps on the
    # same free set remove it (each multiplies it by ridge / (lambda + ridge)
    # along an eigenvector of Q_FF) until it is within tol.
    ridge = max(tol / (10 * float(C.max())), _RIDGE)
    system = _FreeSystem(columns, ridge, stats)
    try:
        system.factorise(np.flatnonzero(free))
    except np.linalg.LinAlgError:
        return a
    stuck = np.zeros(a.size, dtype=bool)    # bound variables that would break the factor
    stats["stopped"] = "steps"
    last_residual = np.inf
    steps_left = max_steps
    while steps_left > 0:
        # [H y; y' 0] [d; b] = [-g; 0] through the factor of H, and the ratio
        # test: the longest step toward the solution inside the box; the
        # variables that reach a bound are held there and leave the free
        # set, step after step until one goes all the way (one compiled
        # call, _cholesky_update.level_steps)
        steps, left, outcome, t, b = level_steps(system.factor, a, g, y, C, ridge,
                                                 free.view(np.uint8), steps_left)
        steps_left -= steps
        stats["steps"] += steps
        stats["leaves"] += left
        system.updates += left
        if outcome == SINGULAR:
            stats["stopped"] = "singular"
            break
        if outcome == STEPS:
            break
        F = system.factor.variables
        k = F.size
        # the whole gradient, brought up to date with the moves since a_full
        moved = np.flatnonzero(a != a_full)
        if moved.size:
            g_full += columns.times(moved, a[moved] - a_full[moved])
            a_full[moved] = a[moved]
        g = g_full.copy()
        residual = np.abs(g[F] + y[F] * b).max() if k else 0.0
        if residual > tol and residual < _CONVERGING * last_residual:
            # the free rows' gradient is not yet level (the ridge's share, or an
            # updated factor's rounding): another step on the same free set,
            # with a fresh factor after many updates
            last_residual = residual
            if system.updates > _REFACTOR_AFTER:
                try:
                    system.factorise(F)
                except np.linalg.LinAlgError:
                    stats["stopped"] = "singular"
                    break
            continue
        last_residual = np.inf
        if not k:   # nothing free: the bias anywhere between LIBSVM's two bounds
            v = -y * g
            up = ((y > 0) & (a < C)) | ((y < 0) & (a > 0))
            low = ((y > 0) & (a > 0)) | ((y < 0) & (a < C))
            if not (up.any() and low.any()):
                stats["stopped"] = "optimal"
                break
            b = -(v[up].max() + v[low].min()) / 2
        gb = g + y * b
        wrong = ~free & ~stuck & (((a <= 0) & (gb < -tol)) | ((a >= C) & (gb > tol)))
        if not wrong.any():
            stats["stopped"] = "stuck" if stuck.any() else "optimal"
            break
        if k + min(np.count_nonzero(wrong), _FREED_PER_STEP) > max_free:
            stats["stopped"] = "max_free"
            break
        worst = np.flatnonzero(wrong)
        worst = worst[np.argsort(-np.abs(gb[worst]), kind="stable")[:_FREED_PER_STEP]]
        columns.slots(worst)        # (fetched together: one call for the step's joins)
        for i in worst:
            if system.join(i):
                free[i] = True
            else:
                stuck[i] = True
    a = np.clip(a, 0.0, C)
    if gradient is not None and gradient_out is not None:
        moved = np.flatnonzero(a != a_full)
        gradient_out[0] = g_full + columns.times(moved, a[moved] - a_full[moved]) \
            if moved.size else g_full
        # G_bar: the seed's, plus (minus) C_j Q_j of each variable that reached
        # (left) its upper bound
        was, now = np.asarray(seed) >= C, a >= C
        changed = np.flatnonzero(was != now)
        gradient_out[1] = gradient[1] + columns.times(
            changed, np.where(now[changed], C[changed], -C[changed])) \
            if changed.size else gradient[1]
    return a
