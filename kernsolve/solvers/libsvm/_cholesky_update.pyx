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
"""
import numpy as np

from libc.math cimport sqrt, hypot, isfinite, INFINITY
from libc.string cimport memmove

__all__ = ["CholeskyFactor", "free_step"]


cdef class CholeskyFactor:
    """``R`` with ``H = R'R`` for the variables in the order they joined."""

    cdef double[:, ::1] _R
    cdef Py_ssize_t _k

    def __init__(self, Py_ssize_t capacity=16):
        self._R = np.zeros((max(capacity, 1), max(capacity, 1)))
        self._k = 0

    @property
    def size(self):
        return self._k

    def factor(self):
        """The upper-triangular factor (a copy)."""
        return np.asarray(self._R[:self._k, :self._k]).copy()

    def reset(self, H):
        """Factorise ``H`` from scratch (numpy's Cholesky; LinAlgError when
        ``H`` is not positive definite)."""
        H = np.asarray(H, dtype=np.float64)
        L = np.linalg.cholesky(H)
        self._room(H.shape[0])
        self._k = H.shape[0]
        np.asarray(self._R)[:self._k, :self._k] = L.T

    cdef void _room(self, Py_ssize_t k):
        cdef Py_ssize_t cap = self._R.shape[0]
        if k <= cap:
            return
        while cap < k:
            cap *= 2
        grown = np.zeros((cap, cap))
        grown[:self._k, :self._k] = np.asarray(self._R)[:self._k, :self._k]
        self._R = grown

    def append(self, double[::1] h, double diagonal):
        """Border the factor with a variable whose block column is ``h`` (its
        entries with the variables already in) and diagonal ``diagonal``.
        False (nothing changed) when the bordered block is not numerically
        positive definite."""
        cdef Py_ssize_t k = self._k, i, j
        if h.shape[0] != k:
            raise ValueError(f"the column has {h.shape[0]} entries, the block {k}")
        self._room(k + 1)
        cdef double[:, ::1] R = self._R
        cdef double[::1] r = np.array(h, dtype=np.float64)
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
        self._k = k + 1
        return True

    def remove(self, Py_ssize_t p):
        """Take out the variable at position ``p`` (the others keep their order)."""
        cdef Py_ssize_t k = self._k, i, j, col
        if not 0 <= p < k:
            raise IndexError(f"position {p} outside a block of {k}")
        cdef double[:, ::1] R = self._R
        cdef double a, b, c, s, rr, u, v
        with nogil:
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
    cdef double num = 0.0, den = 0.0, b, d, t = 1.0, r
    cdef bint finite = True
    with nogil:
        for i in range(k):
            v = F[i]
            HgHy[0, i] = g[v]
            HgHy[1, i] = y[v]
        factor._solve(&HgHy[0, 0])
        factor._solve(&HgHy[1, 0])
        for i in range(k):
            num += y[F[i]] * HgHy[0, i]
            den += y[F[i]] * HgHy[1, i]
        b = -num / den
        finite = isfinite(b)
        for i in range(k):              # d in HgHy[0]; the ratio test
            v = F[i]
            d = -(HgHy[0, i] + b * HgHy[1, i])
            HgHy[0, i] = d
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
        if finite:
            for i in range(k):
                v = F[i]
                d = HgHy[0, i]
                a[v] += t * d
                g[v] += t * (-(g[v] + y[v] * b) - ridge * d)
    if not finite:
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
