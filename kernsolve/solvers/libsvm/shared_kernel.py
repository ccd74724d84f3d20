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
    def compute(cls, X, param, n_threads):
        """The matrix of ``param``'s kernel over the rows of ``X`` (canonical or not)."""
        Xc = as_canonical(X)
        kernel = kernel_of(param, Xc.shape[1])
        return cls(Xc, kernel_gram(Xc, *kernel, n_threads), kernel)

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

    def weighted_sums(self, rows, cols, weights, kept=None):
        """``K[rows][:, cols] @ weights`` in float64 (``rows``, ``cols``: rows of
        ``X``): the decision values of held-out ``rows`` from the coefficients
        ``weights`` of the support vectors ``cols``.

        Whole rows of the matrix are taken (contiguous copies, widened to
        float64) and multiplied by the weights spread over all the columns
        (zero off ``cols``): a fancy-indexed ``K[np.ix_(rows, cols)]`` costs
        several times more (an index computed per element) and was a fifth of
        a warm grid's time.  ``kept``: a dict in which the widened rows are
        kept for the next call with the same ``rows`` (a fold's fits along C:
        then each is one matrix-vector product; they take ``8 len(rows) n``
        bytes, beside the float32 matrix's ``4 n^2``).
        """
        block = None if kept is None else kept.get("held_out_rows")
        if block is None:
            block = self.gram.take(np.asarray(rows, dtype=np.intp), axis=0).astype(np.float64)
            if kept is not None:
                kept["held_out_rows"] = block
        spread = np.bincount(np.asarray(cols, dtype=np.intp), weights=weights,
                             minlength=self.gram.shape[1])
        # on one BLAS thread: grid_search holds the limit around the fits that
        # call this (doc/cross-validation.md, "Two workers")
        return block @ spread

    def solver_rows(self, rows):
        """Rows of ``X`` (and of the matrix) of a sub-problem on the fit's ``rows``
        (None: all the fit's rows), for ``smo._solve.solve(..., rows=, gram=)``."""
        if rows is None:
            return np.arange(self.X.shape[0], dtype=np.intp) if self.index is None \
                else self.index
        rows = np.asarray(rows, dtype=np.intp)
        return rows if self.index is None else self.index[rows]
