"""Kernel values computed once and shared by many SMO solves on subsets of the rows.

Cross-validation trains every fold, and a grid search every C value, on rows
of the same data set with the same kernel: each of those solves used to
compute its own kernel values.  A :class:`SharedKernel` holds the kernel
matrix over all the rows (``kernsolve._core._kernel.kernel_gram``: the
float32 values the SMO's row cache holds, computed by the same code), and
each fit reads the rows of its own sub-problems out of it, read-only, so fits
running side by side on threads share one copy.  The values are the same
bits as a solve that computes them, so the models are too.

The driver (``driver.svm_train``'s ``_shared``) hands it to the SMO core;
``kernsolve.model_selection.cv`` decides when one is made (SMO, a kernel
that is not precomputed, fits on threads, and the matrix within ``-m``).
"""
import numpy as np

from ..._core._kernel import kernel_gram
from ..._kernels import as_canonical
from ..._validation import resolve_gamma

__all__ = ["SharedKernel", "gram_bytes"]


def gram_bytes(n_rows):
    """Bytes of the shared matrix over ``n_rows`` rows (float32, as the cache)."""
    return 4 * int(n_rows) ** 2


def kernel_of(param, n_features):
    """The (kernel_type, degree, gamma, coef0) a fit trains with (gamma resolved)."""
    return (int(param.kernel_type), int(param.degree),
            float(resolve_gamma(param.gamma, n_features)), float(param.coef0))


class SharedKernel:
    """The kernel matrix of one kernel over the rows of ``X``, for fits on subsets.

    ``SharedKernel.compute(X, param, n_threads)`` computes it; ``view(rows)``
    is the same matrix for a fit on ``X[rows]`` (its row ``r`` is row
    ``rows[r]`` of ``X``).  Read-only: any number of fits may use it at once.
    """

    def __init__(self, X, gram, kernel, index=None):
        self.X = X              # canonical rows (the SMO core's input)
        self.gram = gram        # float32, X.shape[0] x X.shape[0]
        self.kernel = kernel    # (kernel_type, degree, gamma, coef0)
        self.index = index      # the fit's rows as rows of X (None: all of X)

    @classmethod
    def compute(cls, X, param, n_threads, out=None):
        """The matrix of ``param``'s kernel over the rows of ``X`` (canonical or
        not), written in ``out`` when given (``kernel_gram``'s)."""
        Xc = as_canonical(X)
        kernel = kernel_of(param, Xc.shape[1])
        return cls(Xc, kernel_gram(Xc, *kernel, n_threads, out=out), kernel)

    @property
    def nbytes(self):
        return int(self.gram.nbytes)

    def view(self, rows):
        """The matrix for a fit whose row ``r`` is row ``rows[r]`` of this one's."""
        rows = np.asarray(rows, dtype=np.intp)
        return SharedKernel(self.X, self.gram, self.kernel,
                            rows if self.index is None else self.index[rows])

    def require_fit(self, param, n_rows, n_features):
        """Raise ValueError unless a fit of ``n_rows`` rows with ``param`` can use it."""
        expected = self.X.shape[0] if self.index is None else self.index.size
        if n_rows != expected:
            raise ValueError(f"_shared: the fit has {n_rows} rows, the shared kernel "
                             f"{expected}")
        if kernel_of(param, n_features) != self.kernel:
            raise ValueError(f"_shared: the fit's kernel {kernel_of(param, n_features)} "
                             f"is not the shared one {self.kernel}")

    def weighted_sums(self, rows, weights):
        """``K[rows] @ weights`` in float64 (``rows``: rows of ``X``; ``weights``:
        a vector or the columns of a matrix over all the matrix's columns): the
        decision values of held-out ``rows`` from coefficients spread over all
        the rows (zero off the support vectors).

        Whole rows of the matrix are taken (contiguous copies, widened to
        float64): a fancy-indexed ``K[np.ix_(rows, cols)]`` costs several times
        more (an index computed per element) and was a fifth of a warm grid's
        time.  A grid's chain gives all its C values' coefficients at once
        (``kernsolve.model_selection.cv.fit_predict_path``): the rows are then
        read and widened once for one matrix product, where a product per C
        read them once per C.
        """
        block = self.gram.take(np.asarray(rows, dtype=np.intp), axis=0).astype(np.float64)
        # on one BLAS thread: grid_search holds the limit around the fits that
        # call this (doc/cross-validation.md, "Two workers")
        return block @ weights

    def solver_rows(self, rows):
        """Rows of ``X`` (and of the matrix) of a sub-problem on the fit's ``rows``
        (None: all the fit's rows), for ``smo._solve.solve(..., rows=, gram=)``."""
        if rows is None:
            return np.arange(self.X.shape[0], dtype=np.intp) if self.index is None \
                else self.index
        rows = np.asarray(rows, dtype=np.intp)
        return rows if self.index is None else self.index[rows]
