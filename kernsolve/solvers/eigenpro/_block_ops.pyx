"""EigenPro's compiled block operations, run without the GIL by the tasks of
its thread pool (nystrom.py, _subsampled.py, _tiled_cholesky.py): K(X,
centres) stored in float16 (``--precision half``) and a pass over it
(``_half.h``, ``_half_products.h``), and the triangular solves and Gram
updates of the subsampled preconditioner and the tiled Cholesky, through
scipy's BLAS (``kernsolve/_core/_blas.pyx``: scipy.linalg's own wrappers
hold the GIL through the call, so two tasks on the pool ran one after the
other; two dsyrk of 512 x 3000 at once took twice one's time).
"""
from libc.stdint cimport uint16_t

import numpy as np

from kernsolve._core._blas cimport dsyrk, dtrsm, load_blas
from kernsolve._core._simd cimport ks_simd_join, paths_mask

# Every vector path of this module follows the tests' one switch (_simd.pxd).
ks_simd_join(paths_mask())


# float32 -> float16 for K(X, centres) stored in float16 (--precision half).
cdef extern from "_half.h" nogil:
    int ks_float_to_half(const float* src, uint16_t* dst, Py_ssize_t n)


def float_to_half(F):
    """float32 array -> a new float16 array of its shape, rounded to nearest
    even: F16C without the GIL where the CPU has it, else numpy's cast (same bits)."""
    out = np.empty(F.shape, dtype=np.float16)
    cdef const float[::1] src = np.ascontiguousarray(F, dtype=np.float32).reshape(-1)
    cdef uint16_t[::1] dst = out.reshape(-1).view(np.uint16)
    cdef int done = 0
    if src.shape[0]:
        with nogil:
            done = ks_float_to_half(&src[0], &dst[0], src.shape[0])
    if not done:
        out[...] = F
    return out


cdef extern from "_half_products.h" nogil:
    void ks_half_products(const uint16_t* K, Py_ssize_t rows, Py_ssize_t p, const float* u,
                          Py_ssize_t c, const float* v, float* out, float* t)


def half_products(H, u, V, out):
    """One block's share of a pass over K(X, centres) kept in float16: ``t = H
    u^T + V`` (u of shape (c, p), or None: t = V; V of shape (rows, c), or
    None) and ``out += (H^T t)^T`` (out: (c, p) float32, C-contiguous), in one
    read of H's rows without the GIL (``_half_products.h``: the same bits on
    every CPU).  Returns t, (rows, c) float32."""
    cdef const uint16_t[:, ::1] K = np.ascontiguousarray(H).view(np.uint16)
    cdef Py_ssize_t rows = K.shape[0], p = K.shape[1]
    cdef float[:, ::1] o = out
    cdef Py_ssize_t c = o.shape[0]
    if o.shape[1] != p:
        raise ValueError("half_products: out must be (c, p) with H's p columns")
    if u is None and V is None:
        raise ValueError("half_products: u or V is needed")
    cdef const float[:, ::1] uu = u if u is not None else np.zeros((c, p), np.float32)
    cdef const float[:, ::1] vv = V if V is not None else np.zeros((rows, c), np.float32)
    if uu.shape[0] != c or uu.shape[1] != p or vv.shape[0] != rows or vv.shape[1] != c:
        raise ValueError("half_products: u must be (c, p) and V (rows, c)")
    t = np.empty((rows, c), dtype=np.float32)
    cdef float[:, ::1] tt = t
    cdef const float* up = &uu[0, 0] if (u is not None and p > 0) else NULL
    cdef const float* vp = &vv[0, 0] if (V is not None and c > 0 and rows > 0) else NULL
    if rows > 0 and p > 0 and c > 0:
        with nogil:
            ks_half_products(&K[0, 0], rows, p, up, c, vp, &o[0, 0], &tt[0, 0])
    else:
        t[...] = 0 if V is None else V
    return t


def solve_upper(U, B, bint transpose=False):
    """X with ``U X = B`` (or ``U^T X = B``) for U upper triangular (n x n,
    float64, C or Fortran order; its upper triangle is read) and B (n x m):
    BLAS dtrsm without the GIL.  Returns X, a new Fortran-ordered array."""
    load_blas()
    cdef bint fortran = U.flags.f_contiguous
    if not (fortran or U.flags.c_contiguous) or U.dtype != np.float64 or U.ndim != 2 \
            or U.shape[0] != U.shape[1] or B.shape[0] != U.shape[0]:
        raise ValueError("solve_upper: U must be a contiguous square float64 array with "
                         "B's rows")
    X = np.array(B, dtype=np.float64, order="F", copy=True)
    cdef double[::1, :] x = X
    cdef const double[:, :] u = U
    cdef int n = X.shape[0], m = X.shape[1]
    cdef double one = 1.0
    # in C order the memory of U is U^T in Fortran order: lower triangular
    cdef char side = b'L', diag = b'N'
    cdef char uplo = b'U' if fortran else b'L'
    cdef char trans = (b'T' if transpose else b'N') if fortran else \
        (b'N' if transpose else b'T')
    if n > 0 and m > 0:
        with nogil:
            dtrsm(&side, &uplo, &trans, &diag, &n, &m, &one, <double*>&u[0, 0], &n,
                  &x[0, 0], &n)
    return X


def add_gram_upper(S, W):
    """``S += W^T W`` in S's upper triangle (S: q x q Fortran-ordered float64,
    in place; W: k x q, Fortran-ordered float64): BLAS dsyrk without the GIL."""
    load_blas()
    cdef double[::1, :] s = S
    cdef const double[::1, :] w = W
    if s.shape[0] != s.shape[1] or w.shape[1] != s.shape[0]:
        raise ValueError("add_gram_upper: S must be q x q and W k x q")
    cdef int q = s.shape[0], k = w.shape[0]
    cdef double one = 1.0
    cdef char uplo = b'U', trans = b'T'
    if q > 0 and k > 0:
        with nogil:
            dsyrk(&uplo, &trans, &q, &k, &one, <double*>&w[0, 0], &k, &one, &s[0, 0], &q)
