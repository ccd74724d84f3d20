# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The Cholesky factor of a symmetric positive definite block kept up to date
as variables join and leave it (the active-set refinement's free block,
active_set.py).

Refactorising a k x k block costs k^3 / 3; bordering it for an added variable
and deleting a removed one's row and column cost O(k^2) each, and a solve with
the factor O(k^2).  The factor is kept upper triangular, ``H = R'R``, in a
row-major buffer with room to grow: every loop below runs along rows, which
are contiguous.  Removing variable ``p`` drops column ``p`` of ``R``; the rows
below ``p`` then have one entry under the diagonal, which Givens rotations of
neighbouring rows clear (the QR column-delete update; Golub and Van Loan,
section 6.5).

:func:`free_step` is the refinement's step on the free variables in one
compiled call (the solve, the bias, the ratio test and the moves): a step
made of numpy calls on 100-odd free variables spent most of its time in
their overheads, and svmguide1's grid takes some 9,000 of them (issue 35).
:func:`level_steps`, what the refinement calls, takes those steps one after
the other while variables reach a bound and leave the factor, until one
step goes all the way (most of the steps are such).
"""
import numpy as np

from libc.math cimport sqrt, hypot, isfinite, INFINITY, NAN
from libc.string cimport memmove

__all__ = ["CholeskyFactor", "free_step", "level_steps", "LEVEL", "SINGULAR", "STEPS"]


cdef class CholeskyFactor:
    """``R`` with ``H = R'R`` for the variables in the order they joined, and
    those variables (the refinement's indices; -1 where none was given)."""

    cdef double[:, ::1] _R
    cdef Py_ssize_t[::1] _vars
    cdef Py_ssize_t _k

    def __init__(self, Py_ssize_t capacity=16):
        self._R = np.zeros((max(capacity, 1), max(capacity, 1)))
        self._vars = np.full(max(capacity, 1), -1, dtype=np.intp)
        self._k = 0

    @property
    def size(self):
        return self._k

    @property
    def variables(self):
        """The variables in the factor's order (a copy)."""
        return np.asarray(self._vars[:self._k]).copy()

    def factor(self):
        """The upper-triangular factor (a copy)."""
        return np.asarray(self._R[:self._k, :self._k]).copy()

    def reset(self, H, variables=None):
        """Factorise ``H`` from scratch (numpy's Cholesky; LinAlgError when
        ``H`` is not positive definite), of ``variables`` (or none named)."""
        H = np.asarray(H, dtype=np.float64)
        L = np.linalg.cholesky(H)
        self._room(H.shape[0])
        self._k = H.shape[0]
        np.asarray(self._R)[:self._k, :self._k] = L.T
        np.asarray(self._vars)[:self._k] = -1 if variables is None else variables

    cdef void _room(self, Py_ssize_t k):
        cdef Py_ssize_t cap = self._R.shape[0]
        if k <= cap:
            return
        while cap < k:
            cap *= 2
        grown = np.zeros((cap, cap))
        grown[:self._k, :self._k] = np.asarray(self._R)[:self._k, :self._k]
        self._R = grown
        names = np.full(cap, -1, dtype=np.intp)
        names[:self._k] = np.asarray(self._vars)[:self._k]
        self._vars = names

    def append(self, double[::1] h, double diagonal, Py_ssize_t variable=-1):
        """Border the factor with a variable whose block column is ``h`` (its
        entries with the variables already in) and diagonal ``diagonal``.
        False (nothing changed) when the bordered block is not numerically
        positive definite."""
        if h.shape[0] != self._k:
            raise ValueError(f"the column has {h.shape[0]} entries, the block {self._k}")
        return self._append(np.array(h, dtype=np.float64), diagonal, variable)

    def append_column(self, const double[::1, :] store, Py_ssize_t slot,
                      double diagonal, Py_ssize_t variable):
        """:meth:`append` for ``variable``, its column ``h`` read from column
        ``slot`` of ``store`` (n x m, Fortran order: the refinement's kernel
        columns) at the rows of the variables in the factor, without a round
        trip through Python (svmguide1's grid borders the factor 16,000 times)."""
        cdef Py_ssize_t k = self._k, i
        if not 0 <= slot < store.shape[1]:
            raise IndexError(f"slot {slot} outside {store.shape[1]} columns")
        h_array = np.empty(k)
        cdef double[::1] h = h_array
        with nogil:
            for i in range(k):
                h[i] = store[self._vars[i], slot]
        return self._append(h_array, diagonal, variable)

    cdef bint _append(self, double[::1] r, double diagonal, Py_ssize_t variable):
        """append with ``r`` the column (overwritten)."""
        cdef Py_ssize_t k = self._k, i, j
        self._room(k + 1)
        cdef double[:, ::1] R = self._R
        cdef double zi, rest = diagonal
        with nogil:
            for i in range(k):                 # R' r = h, column by column
                zi = r[i] / R[i, i]
                r[i] = zi
                rest -= zi * zi
                for j in range(i + 1, k):
                    r[j] -= zi * R[i, j]
        if not rest > 0.0:
            return False
        for i in range(k):
            R[i, k] = r[i]
        for j in range(k + 1):
            R[k, j] = 0.0
        R[k, k] = sqrt(rest)
        self._vars[k] = variable
        self._k = k + 1
        return True

    def remove(self, Py_ssize_t p):
        """Take out the variable at position ``p`` (the others keep their order)."""
        if not 0 <= p < self._k:
            raise IndexError(f"position {p} outside a block of {self._k}")
        with nogil:
            self._remove(p)

    cdef void _remove(self, Py_ssize_t p) noexcept nogil:
        cdef Py_ssize_t k = self._k, i, j, col
        cdef double[:, ::1] R = self._R
        cdef double a, b, c, s, rr, u, v
        memmove(&self._vars[p], &self._vars[p + 1], (k - p - 1) * sizeof(Py_ssize_t))
        for i in range(min(p + 1, k)):      # drop column p (rows > p start right of it)
            memmove(&R[i, p], &R[i, p + 1], (k - p - 1) * sizeof(double))
        for i in range(p + 1, k):
            memmove(&R[i, i - 1], &R[i, i], (k - i) * sizeof(double))
        for j in range(p, k - 1):           # rotate rows j, j+1 to clear R[j+1, j]
            a = R[j, j]
            b = R[j + 1, j]
            rr = hypot(a, b)
            c = a / rr
            s = b / rr
            R[j, j] = rr
            R[j + 1, j] = 0.0
            for col in range(j + 1, k - 1):
                u = R[j, col]
                v = R[j + 1, col]
                R[j, col] = c * u + s * v
                R[j + 1, col] = c * v - s * u
        for j in range(k):
            R[k - 1, j] = 0.0
        for i in range(k - 1):
            R[i, k - 1] = 0.0
        self._k = k - 1

    def solve(self, b):
        """``H^-1 b`` for a vector or the columns of a matrix (a new array)."""
        x = np.array(b, dtype=np.float64, order="F", ndmin=1)
        if x.shape[0] != self._k:
            raise ValueError(f"the right side has {x.shape[0]} rows, the block {self._k}")
        if x.size == 0:
            return x
        cdef double[::1, :] X = x.reshape(self._k, -1, order="F")
        cdef Py_ssize_t m
        with nogil:
            for m in range(X.shape[1]):
                self._solve(&X[0, m])
        return x

    cdef void _solve(self, double* x) noexcept nogil:
        """``x = H^-1 x`` in place (``k`` entries): ``R' z = x``, then ``R x = z``."""
        cdef double[:, ::1] R = self._R
        cdef Py_ssize_t k = self._k, i, j
        cdef double zi, acc
        for i in range(k):
            zi = x[i] / R[i, i]
            x[i] = zi
            for j in range(i + 1, k):
                x[j] -= zi * R[i, j]
        for i in range(k - 1, -1, -1):
            acc = x[i]
            for j in range(i + 1, k):
                acc -= R[i, j] * x[j]
            x[i] = acc / R[i, i]


cdef bint _step(CholeskyFactor factor, const Py_ssize_t* F, Py_ssize_t k, double* a,
               double* g, const double* y, const double* C, double ridge, double* hg,
               double* hy, double* room, double* t_out, double* b_out) noexcept nogil:
    """:func:`free_step`'s arithmetic (``hg``, ``hy``, ``room``: k doubles of
    work; ``hg`` ends holding ``d``); False when singular (nothing moved)."""
    cdef Py_ssize_t i, v
    cdef double num = 0.0, den = 0.0, b, d, t = 1.0, r
    cdef bint finite = True
    for i in range(k):
        v = F[i]
        hg[i] = g[v]
        hy[i] = y[v]
    factor._solve(hg)
    factor._solve(hy)
    for i in range(k):
        num += y[F[i]] * hg[i]
        den += y[F[i]] * hy[i]
    b = -num / den
    finite = isfinite(b)
    for i in range(k):              # d in hg; the ratio test
        v = F[i]
        d = -(hg[i] + b * hy[i])
        hg[i] = d
        if not isfinite(d):
            finite = False
        if d > 0:
            r = (C[v] - a[v]) / d
        elif d < 0:
            r = -a[v] / d
        else:
            r = INFINITY
        room[i] = r
        if r < t:
            t = r
    if not finite:
        return False
    for i in range(k):
        v = F[i]
        d = hg[i]
        a[v] += t * d
        g[v] += t * (-(g[v] + y[v] * b) - ridge * d)
    t_out[0] = t
    b_out[0] = b
    return True


def free_step(CholeskyFactor factor, const Py_ssize_t[::1] F, double[::1] a, double[::1] g,
              const double[::1] y, const double[::1] C, double ridge):
    """One step of the active-set refinement (active_set.refine) on the free
    variables ``F`` (the factor's variables, in its order), ``a`` and ``g``
    (the free rows of ``Q a - 1``) moved in place.

    Solves ``[H y; y' 0] [d; b] = [-g; 0]`` through the factor of ``H``
    (``d = -H^-1 (g + y b)``, ``b`` from ``y'd = 0``), moves ``a`` toward
    ``a + d`` as far as the box allows (``t = min(1, ratio test)``) and the
    gradient with it (``Q_FF d = H d - ridge d = -(g + y b) - ridge d``); the
    variables that reach a bound are set to it exactly.  Returns ``(t, b,
    hit)``, ``hit`` the positions in ``F`` of those variables (empty when
    ``t = 1``), or None when the system is singular (``b`` or ``d`` not finite).
    """
    cdef Py_ssize_t k = F.shape[0], i, v
    if k != factor._k or k == 0:
        raise ValueError(f"{k} free variables, the factor {factor._k} (at least one)")
    hg_hy = np.empty((2, k))
    room_array = np.empty(k)
    cdef double[:, ::1] HgHy = hg_hy
    cdef double[::1] room = room_array
    cdef double t, b
    cdef bint ok
    with nogil:
        ok = _step(factor, &F[0], k, &a[0], &g[0], &y[0], &C[0], ridge, &HgHy[0, 0],
                   &HgHy[1, 0], &room[0], &t, &b)
    if not ok:
        return None
    if not t < 1.0:
        return t, b, np.empty(0, dtype=np.intp)
    hit = np.flatnonzero(room_array <= t)
    cdef Py_ssize_t[::1] h = hit
    with nogil:
        for i in range(h.shape[0]):     # held at the bound it reached
            v = F[h[i]]
            a[v] = C[v] if HgHy[0, h[i]] > 0 else 0.0
    return t, b, hit


# level_steps' outcomes
cdef enum:
    _LEVEL = 0      # a step moved the free variables all the way (t = 1), or none is free
    _SINGULAR = 1   # the free block's system is singular
    _STEPS = 2      # the step budget ran out while variables kept reaching bounds
LEVEL, SINGULAR, STEPS = _LEVEL, _SINGULAR, _STEPS


def level_steps(CholeskyFactor factor, double[::1] a, double[::1] g, const double[::1] y,
                const double[::1] C, double ridge, unsigned char[::1] free,
                Py_ssize_t max_steps):
    """:func:`free_step` on the factor's variables, again and again while some
    reach a bound (each taken out of the factor and of ``free``, the others
    keeping their order, as the refinement did step by step in Python: most
    of its steps on svmguide1's grid were such), at most ``max_steps`` steps.

    Returns ``(steps, left, outcome, t, b)``: the steps taken (the last one
    included), the variables taken out, :data:`LEVEL` (the last step had
    ``t = 1``, or no variable is free: ``t`` and ``b`` are then NaN; the
    caller goes on with that step), :data:`SINGULAR` or :data:`STEPS`."""
    cdef Py_ssize_t steps = 0, left = 0, k, p, v
    cdef double t = NAN, b = NAN
    cdef int outcome = _STEPS
    work_array = np.empty((3, max(factor._R.shape[0], 1)))
    cdef double[:, ::1] work = work_array
    with nogil:
        while steps < max_steps:
            steps += 1
            k = factor._k
            if k == 0:
                t = NAN
                b = NAN
                outcome = _LEVEL
                break
            if not _step(factor, &factor._vars[0], k, &a[0], &g[0], &y[0], &C[0], ridge,
                         &work[0, 0], &work[1, 0], &work[2, 0], &t, &b):
                outcome = _SINGULAR
                break
            if not t < 1.0:
                outcome = _LEVEL
                break
            # held at the bound it reached, and out (the last position first,
            # so that the positions still to look at do not move)
            for p in range(k - 1, -1, -1):
                if work[2, p] <= t:
                    v = factor._vars[p]
                    a[v] = C[v] if work[0, p] > 0 else 0.0
                    free[v] = 0
                    factor._remove(p)
                    left += 1
    return steps, left, outcome, t, b
