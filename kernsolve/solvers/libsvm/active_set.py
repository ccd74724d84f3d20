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
"""
import numpy as np

__all__ = ["refine"]

_FREED_PER_STEP = 20    # bound variables freed at once (the worst first)
_BATCH = 256            # kernel rows fetched at a time for the gradient


class _Columns:
    """Columns of Q = diag(y) K diag(y) of the variables freed so far (float64)."""

    def __init__(self, kernel_row, y):
        self._row = kernel_row
        self._y = y
        self._slot = np.full(y.size, -1, dtype=np.intp)     # variable -> column of _store
        self._used = 0
        self._store = np.empty((y.size, 16))

    def slots(self, idx):
        """The columns of the variables ``idx`` in :attr:`store` (fetched if new)."""
        for i in idx[self._slot[idx] < 0]:
            if self._used == self._store.shape[1]:
                grown = np.empty((self._y.size, 2 * self._used))
                grown[:, :self._used] = self._store
                self._store = grown
            self._store[:, self._used] = self._row(int(i)).astype(np.float64) * \
                (self._y * self._y[i])
            self._slot[i] = self._used
            self._used += 1
        return self._slot[idx]

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


def refine(seed, y, C, kernel_row, tol, max_steps, max_free):
    """The C-SVC dual's optimum from the feasible ``seed``, or as near as
    ``max_steps`` steps get (a new array; see the module's docstring).

    ``y``: the +-1 labels (float64); ``C``: each variable's upper bound;
    ``kernel_row(i)``: row ``i`` of the kernel matrix (float32 or float64, the
    values the SMO core will use); ``tol``: a bound variable is freed when its
    gradient (with the bias) is beyond ``tol`` on the wrong side (half of SMO's
    ``eps``: a result that stops here meets SMO's stopping rule);
    ``max_free``: give up (return the point reached) rather than solve a
    system of more free variables.
    """
    a = np.array(seed, dtype=np.float64)
    free = (a > 0) & (a < C)
    if np.count_nonzero(free) > max_free:
        return a        # (before the gradient: its kernel rows would be wasted)
    columns = _Columns(kernel_row, y)
    g_full = _gradient(kernel_row, y, a)    # Q a - 1 at a_full, every row
    a_full = a.copy()
    g = g_full.copy()                       # Q a - 1 at a, the free rows
    # A ridge on the free block keeps its system solvable when rows repeat
    # (a9a's binary rows: equal columns); it moves the gradient by at most
    # ridge * |step| <= tol / 10, within what the result is checked to.
    ridge = tol / (10 * float(C.max()))
    for _ in range(max_steps):
        F = np.flatnonzero(free)
        k = F.size
        if k > max_free:
            break
        if k:
            slots = columns.slots(F)          # (first: it may grow the store)
            QFF = columns.store[np.ix_(F, slots)]
            A = np.zeros((k + 1, k + 1))
            A[:k, :k] = QFF
            A[np.arange(k), np.arange(k)] += ridge
            A[:k, k] = A[k, :k] = y[F]
            try:
                sol = np.linalg.solve(A, np.append(-g[F], 0.0))
            except np.linalg.LinAlgError:
                break
            if not np.all(np.isfinite(sol)):
                break
            d, b = sol[:k], sol[k]
            # ratio test: the longest step toward the solution inside the box
            with np.errstate(divide="ignore", invalid="ignore"):
                room = np.where(d > 0, (C[F] - a[F]) / d, np.where(d < 0, -a[F] / d, np.inf))
            t = min(1.0, float(room.min()))
            a[F] += t * d
            g[F] += QFF @ (t * d)
            if t < 1.0:             # those that reached a bound are held there
                hit = room <= t
                a[F[hit]] = np.where(d[hit] > 0, C[F[hit]], 0.0)
                free[F[hit]] = False
                continue
        # the whole gradient, brought up to date with the moves since a_full
        moved = np.flatnonzero(a != a_full)
        if moved.size:
            g_full += columns.times(moved, a[moved] - a_full[moved])
            a_full[moved] = a[moved]
        g = g_full.copy()
        if not k:   # nothing free: the bias anywhere between LIBSVM's two bounds
            v = -y * g
            up = ((y > 0) & (a < C)) | ((y < 0) & (a > 0))
            low = ((y > 0) & (a > 0)) | ((y < 0) & (a < C))
            if not (up.any() and low.any()):
                break
            b = -(v[up].max() + v[low].min()) / 2
        gb = g + y * b
        wrong = ~free & (((a <= 0) & (gb < -tol)) | ((a >= C) & (gb > tol)))
        if not wrong.any():
            break
        worst = np.flatnonzero(wrong)
        worst = worst[np.argsort(-np.abs(gb[worst]), kind="stable")[:_FREED_PER_STEP]]
        free[worst] = True
    return np.clip(a, 0.0, C)
