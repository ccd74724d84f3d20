"""How many centres EigenPro's model on centres (``--centers``) takes, and
what their preconditioner costs in memory: arithmetic only, no solver code,
so that ``--solver auto`` reads it without loading the solvers (the command
line starts without scipy).
"""
import math

from ..._memory import memory_limit

__all__ = ["RESIDUAL_BLOCK", "DEFAULT_CENTRES", "DEFAULT_CENTRES_ROWS", "EXACT_CENTRES",
           "preconditioner_bytes", "default_centres"]

# centres per diagonal block of the subsampled preconditioner's residual (_subsampled)
RESIDUAL_BLOCK = 512

# The default number of centres, p = DEFAULT_CENTRES sqrt(n / DEFAULT_CENTRES_ROWS)
# (at most n and what the preconditioner's memory allows): 15000 centres on the
# 60,000 rows of Fashion-MNIST is the measured good point
# (benchmarks/CURRENT.md#eigenpro-centres: 9.99%, where 5000 and 8000 gave
# 11.41% and 10.89%, #tta-fashion-eigenpro), and on 120,000 rows more centres
# lowered the error (benchmarks/CURRENT.md#more-rows-120k-p25k: 25000 centres
# 10.18% against 15000's 10.52%); the square root gives 21213 there.  The
# root (not n/4, the share that reached SMO's accuracy at 60,000 rows) because
# the p^3 factors and the n p kernel values a pass grow faster than the rows.
DEFAULT_CENTRES = 15000
DEFAULT_CENTRES_ROWS = 60000
# ... with the subsampled preconditioner (--subsample q) only: FALKON's exact
# factors cost p^3 multiply-adds (p = 15000: a few minutes; 2000: a second),
# so without it the default is EXACT_CENTRES (at most n).  It is also the
# estimators' default (centers="auto" above that many rows): single runs of
# EigenProClassifier on the loaded 2-core machine (session 17) gave a9a 85.16% /
# 84.92% test accuracy with 1000 / 2000 centres (SMO 85.09%) and Fashion-MNIST
# 87.11% with 2000, in seconds (doc/eigenpro.md, "Defaults").
EXACT_CENTRES = 2000


def preconditioner_bytes(p, subsample=None):
    """The preconditioner's memory for p centres: ``16 p^2`` bytes for
    FALKON's exact factors (K_MM and T T^T while they are built), ``8 p (q +
    RESIDUAL_BLOCK)`` with ``--subsample q`` (K_MQ and the residual's
    diagonal blocks); ``nystrom.fit_centres`` checks it before allocating."""
    if subsample is None:
        return 16 * p * p
    return 8 * p * (subsample + RESIDUAL_BLOCK)


def default_centres(n, subsample=None, limit=None):
    """The number of centres when none is given (``--centers auto``): with
    ``--subsample q`` about ``DEFAULT_CENTRES * sqrt(n / DEFAULT_CENTRES_ROWS)``,
    without it (FALKON's exact factors) EXACT_CENTRES; at most n (less the
    ``subsample`` auxiliary rows, which are drawn besides the centres) and at
    most the largest p whose :func:`preconditioner_bytes` fit ``limit``
    bytes (default: :func:`~kernsolve._validation.memory_limit`, the limit of
    the check before the allocation)."""
    limit = memory_limit() if limit is None else limit
    if subsample is None:       # the largest p with preconditioner_bytes(p) <= limit
        p = EXACT_CENTRES
        cap = math.isqrt(limit // 16)
    else:
        p = int(round(DEFAULT_CENTRES * math.sqrt(n / DEFAULT_CENTRES_ROWS)))
        cap = limit // preconditioner_bytes(1, subsample)
    return max(1, min(p, n - (subsample or 0), cap))
