# The fitted step (--step-rule fit and fit-gcv): the new block is the ridge fit
# of the batch's loss derivatives by its features (fit_block: the ridge given,
# or GCV's on the batch), or (fit with no --ridge) the ridge of a grid whose
# fits of past batches did best on the batches that followed them
# (fit_candidates, judge_candidates, best_ridge: the next-batch judgement).
# Inline: the step loop (_dsg.pyx) runs them once a batch, without a call
# across modules.  Every sum keeps one order: the bits do not depend on the
# thread count.
from libc.stdlib cimport malloc, free
from libc.math cimport sqrt
from libc.stdint cimport int64_t
from cython.parallel cimport prange, parallel

from ._losses cimport row_loss

# The ridges the fitted step chooses from when --ridge does not fix one:
# 10**-3 .. 10 in half decades.  Not beyond: the next-batch judgement counts
# a step's noise in full, though the following steps average it out, and
# late in a run it would take ridges that all but stop learning (100 on the
# first 2000 rows of a9a: 76% accuracy, the majority class; 10: 81%).
cdef enum:
    N_RIDGES = 9
    # the next-batch choice (--step-rule fit): the ridge taken before any
    # batch has judged one (10**(-3 + FIRST_RIDGE / 2))
    FIRST_RIDGE = 6
    # ridge_state: the last fitted step, then the scores, then the candidates
    RS_HAVE = 0         # 1 once a fitted step has been taken
    RS_STEP = 1         # its step
    RS_TARGET = 2       # the block it set or updated
    RS_CHOSEN = 3       # the grid index of its ridge
    RS_WHOLE = 4        # 1 if its batch was whole (not a short one)
    RS_JUDGED = 5       # the number of batches that have judged a step
    RS_SCORES = 6       # N_RIDGES judged losses, one per ridge
    # sum over the judging batches of L_b(i) L_b(j), the batch's judged losses
    # of ridges i and j (N_RIDGES^2): the spread of the paired differences
    RS_PAIRS = RS_SCORES + N_RIDGES
    RS_CANDIDATES = RS_PAIRS + N_RIDGES * N_RIDGES    # N_RIDGES fits (F x K each) of the last batch


cdef inline double grid_ridge(Py_ssize_t i) noexcept nogil:
    """Ridge i of the grid: 1e-3 times sqrt(10) ** i."""
    return 1e-3 * 3.1622776601683795 ** i


cdef inline Py_ssize_t ridge_state_size(Py_ssize_t block_size, Py_ssize_t n_outputs) noexcept nogil:
    """Doubles of the step loop's ridge_state (the next-batch ridge choice)."""
    return RS_CANDIDATES + N_RIDGES * block_size * n_outputs



cdef inline double gram(const double* PHI, const double* G, Py_ssize_t nr, Py_ssize_t F,
                        Py_ssize_t K, double* M, double* R) noexcept nogil:
    """M = PHI' PHI (lower triangle) and R = PHI' G, summed in row order;
    returns ||G||^2."""
    cdef Py_ssize_t r, i, j, k
    cdef double p, gg = 0.0
    for i in range(F * F):
        M[i] = 0.0
    for i in range(F * K):
        R[i] = 0.0
    for r in range(nr):
        for i in range(F):
            p = PHI[r * F + i]
            for j in range(i + 1):
                M[i * F + j] += p * PHI[r * F + j]
            for k in range(K):
                R[i * K + k] += p * G[r * K + k]
        for k in range(K):
            gg = gg + G[r * K + k] * G[r * K + k]
    return gg


cdef inline void ridge_solve(const double* M, const double* R, Py_ssize_t F, Py_ssize_t K,
                             double shift, double* A, double* sol) noexcept nogil:
    """sol = (M + shift I)^{-1} R (F x K) for positive definite M + shift I:
    Cholesky A = L L' (L left in A's lower triangle), then L y = R, L' sol = y."""
    cdef Py_ssize_t i, j, k
    cdef double s, p
    for i in range(F):
        for j in range(i + 1):
            A[i * F + j] = M[i * F + j]
        A[i * F + i] += shift
    for j in range(F):
        s = A[j * F + j]
        for k in range(j):
            s = s - A[j * F + k] * A[j * F + k]
        s = sqrt(s)
        A[j * F + j] = s
        for i in range(j + 1, F):
            p = A[i * F + j]
            for k in range(j):
                p = p - A[i * F + k] * A[j * F + k]
            A[i * F + j] = p / s
    for k in range(K):
        for i in range(F):
            s = R[i * K + k]
            for j in range(i):
                s = s - A[i * F + j] * sol[j * K + k]
            sol[i * K + k] = s / A[i * F + i]
        for i in range(F - 1, -1, -1):
            s = sol[i * K + k]
            for j in range(i + 1, F):
                s = s - A[j * F + i] * sol[j * K + k]
            sol[i * K + k] = s / A[i * F + i]


cdef inline double fit_block(const double* PHI, const double* G, Py_ssize_t nr, Py_ssize_t F,
                             Py_ssize_t K, double ridge, double* work, double* out) noexcept nogil:
    """The fitted step's direction: out = (PHI' PHI + rho * nr * I)^{-1} PHI' G.

    PHI is the batch's features of the block (nr x F), G the loss derivatives
    (nr x K); out (F x K) holds the coefficients whose block values on the
    batch best fit G in the ridge sense.  rho is ``ridge`` when it is > 0;
    otherwise (``--step-rule fit-gcv``) the rho of the grid 1e-3, 10**-2.5,
    ..., 10 with the smallest generalised cross-validation score

        GCV(rho) = (||G - PHI out||^2 / nr) / (1 - df / nr)^2,
        df = tr(PHI (PHI'PHI + rho nr I)^{-1} PHI') = F - rho nr tr(A^{-1})

    (Golub, Heath, Wahba 1979: the leave-one-out error of the fit, rotation
    invariant), the first on ties; a rho with df >= nr is not a candidate
    (the largest is kept when none is).  Returns rho.  ``work`` holds
    2 F^2 + 2 F K + F doubles.  Serial, in a fixed order, so the bits do not
    depend on the thread count.
    """
    cdef Py_ssize_t i, j, k, c, n_try
    cdef double s, rho, gg, cr, cc, tr_inv, df, score, best_score = 0.0
    cdef double best_rho = 0.0
    cdef double* M = work                  # PHI' PHI (lower triangle)
    cdef double* A = M + F * F             # its Cholesky factor for one rho
    cdef double* R = A + F * F             # PHI' G, F x K
    cdef double* sol = R + F * K           # the solution for one rho, F x K
    cdef double* v = sol + F * K           # a column of L^{-1}
    gg = gram(PHI, G, nr, F, K, M, R)
    n_try = 1 if ridge > 0.0 else N_RIDGES
    for c in range(n_try):
        rho = ridge if ridge > 0.0 else grid_ridge(c)
        ridge_solve(M, R, F, K, rho * nr, A, sol)
        if n_try > 1:
            # tr(A^{-1}) = ||L^{-1}||_F^2, column by column
            tr_inv = 0.0
            for j in range(F):
                for i in range(F):
                    if i < j:
                        v[i] = 0.0
                        continue
                    s = 1.0 if i == j else 0.0
                    for k in range(j, i):
                        s = s - A[i * F + k] * v[k]
                    v[i] = s / A[i * F + i]
                    tr_inv = tr_inv + v[i] * v[i]
            df = F - rho * nr * tr_inv
            # ||G - PHI x||^2 = ||G||^2 - x.R - rho nr ||x||^2   (A x = R)
            cr = 0.0
            cc = 0.0
            for i in range(F * K):
                cr = cr + sol[i] * R[i]
                cc = cc + sol[i] * sol[i]
            if df >= nr:
                if c < n_try - 1 or best_rho > 0.0:
                    continue
                score = 0.0         # no candidate: the largest ridge
            else:
                score = (gg - cr - rho * nr * cc) / nr / ((1.0 - df / nr) * (1.0 - df / nr))
                if best_rho > 0.0 and not (score < best_score):
                    continue
            best_score = score
            best_rho = rho
        else:
            best_rho = rho
        for i in range(F * K):
            out[i] = sol[i]
    return best_rho


cdef inline void fit_candidates(const double* PHI, const double* G, Py_ssize_t nr, Py_ssize_t F,
                                Py_ssize_t K, double* work, double* cands) noexcept nogil:
    """cands[i] (F x K each) = (PHI'PHI + rho_i nr I)^{-1} PHI'G for every
    ridge rho_i of the grid: the candidate directions of the next-batch choice.
    ``work``: 2 F^2 + F K doubles.  Serial, fixed order."""
    cdef Py_ssize_t i
    cdef double* M = work
    cdef double* A = M + F * F
    cdef double* R = A + F * F
    gram(PHI, G, nr, F, K, M, R)
    for i in range(N_RIDGES):
        ridge_solve(M, R, F, K, grid_ridge(i) * nr, A, cands + i * F * K)




cdef inline int judge_candidates(const double* U, const double* P, const int64_t* rows,
                                 const double* targets, Py_ssize_t tcols, Py_ssize_t nr,
                                 Py_ssize_t F, Py_ssize_t K, int loss, double param,
                                 double* rs, int n_threads) noexcept nogil:
    """Add to each ridge's score the loss this batch would have had if the
    last fitted step had used that ridge's candidate: the batch's predictions
    U moved by step * P (c_chosen - c_i), with P the last target block's
    features on this batch's rows (rows the last fit did not see).

    Every sum keeps one order (over f for a row's move, over the rows in
    order for a ridge's total), so the bits do not depend on the threads:
    rows are shared out, each row's N_RIDGES x K moves summed side by side
    (the inner loops vectorise), and the totals added serially.  Returns -1
    if scratch memory cannot be had."""
    cdef Py_ssize_t i, j, r, k, f, chosen = <Py_ssize_t>rs[RS_CHOSEN]
    cdef Py_ssize_t NK = N_RIDGES * K
    cdef double step = rs[RS_STEP], p, total
    cdef double tot[N_RIDGES]
    cdef const double* best = rs + RS_CANDIDATES + chosen * F * K
    cdef double* D = <double*>malloc((F * NK + nr * N_RIDGES) * sizeof(double))
    cdef double* L
    cdef double* acc
    cdef int failed = 0
    cdef int* failed_ptr = &failed
    if D == NULL:
        return -1
    L = D + F * NK
    # D[f, i, k] = c_chosen[f, k] - c_i[f, k]
    for f in range(F):
        for i in range(N_RIDGES):
            for k in range(K):
                D[(f * N_RIDGES + i) * K + k] = (best[f * K + k]
                                                 - rs[RS_CANDIDATES + (i * F + f) * K + k])
    with parallel(num_threads=n_threads if nr >= 64 else 1):
        acc = <double*>malloc((NK + K) * sizeof(double))
        if acc == NULL:
            failed_ptr[0] = 1
        else:
            for r in prange(nr, schedule="static"):
                for j in range(NK):
                    acc[j] = 0.0
                for f in range(F):
                    p = P[r * F + f]
                    for j in range(NK):
                        acc[j] = acc[j] + p * D[f * NK + j]
                for i in range(N_RIDGES):
                    for k in range(K):
                        acc[NK + k] = U[r * K + k] + step * acc[i * K + k]
                    L[r * N_RIDGES + i] = row_loss(loss, param, acc + NK,
                                                    targets + rows[r] * tcols, K)
            free(acc)
    if failed:
        free(D)
        return -1
    for i in range(N_RIDGES):
        total = 0.0
        for r in range(nr):
            total = total + L[r * N_RIDGES + i]
        rs[RS_SCORES + i] += total
        tot[i] = total
    for i in range(N_RIDGES):
        for j in range(N_RIDGES):
            rs[RS_PAIRS + i * N_RIDGES + j] += tot[i] * tot[j]
    free(D)
    return 0


cdef inline double t84(double df) noexcept nogil:
    """Student's t quantile at Phi(1) = 0.8413 (one standard error of a normal
    mean), df degrees of freedom: a table to df 5, then the Cornish-Fisher
    series 1 + 1/(2 df) + 1/(4 df^2) (within 4e-4 of the exact quantile)."""
    if df < 1.5:
        return 1.8373
    if df < 2.5:
        return 1.3213
    if df < 3.5:
        return 1.1969
    if df < 4.5:
        return 1.1416
    if df < 5.5:
        return 1.1105
    return 1.0 + 0.5 / df + 0.25 / (df * df)


cdef inline Py_ssize_t best_ridge(const double* rs) noexcept nogil:
    """The ridge of the next-batch choice: the largest ridge whose judged loss
    so far is within one standard error of the smallest (the one-standard-
    error rule of Breiman, Friedman, Olshen and Stone, 1984), the error being
    that of the sum of the n paired per-batch differences (RS_PAIRS), its
    width Student's t quantile (t84) because the spread is itself estimated
    from n batches.  FIRST_RIDGE before any judging batch; after one (no
    spread to measure) the largest ridge: a single batch cannot tell the
    ridges apart, and a small ridge taken early on its word is a noisy step
    that stays in the model (Adult's worst seeds)."""
    cdef Py_ssize_t i, best = 0
    cdef double n = rs[RS_JUDGED], diff, var
    if n == 0.0:
        return FIRST_RIDGE
    if n < 2.0:
        return N_RIDGES - 1
    for i in range(1, N_RIDGES):
        if rs[RS_SCORES + i] < rs[RS_SCORES + best]:
            best = i
    for i in range(N_RIDGES - 1, best, -1):
        # the n paired differences d_b: their sum, and n times their sample
        # variance, (n sum d^2 - (sum d)^2) / (n - 1)
        diff = rs[RS_SCORES + i] - rs[RS_SCORES + best]
        var = (n * (rs[RS_PAIRS + i * N_RIDGES + i] - 2.0 * rs[RS_PAIRS + i * N_RIDGES + best]
                    + rs[RS_PAIRS + best * N_RIDGES + best]) - diff * diff) / (n - 1.0)
        if diff <= t84(n - 1.0) * sqrt(var if var > 0.0 else 0.0):
            return i
    return best
