# The losses of the DSG paper's section 4 (extended version), as value and
# derivative with respect to the prediction u, and the bound on the
# derivative CDSG's rule (9) needs.  One output per call except the softmax,
# which couples the K outputs of a row.  The names, tasks and parameters are
# in kernsolve/solvers/dsg/losses.py (TABLE), whose codes are these
# (tests/test_dsg_losses.py checks the two agree); saved models store the
# name, not the code.
#
# Targets: hinge, squared hinge and logistic take y in {-1, +1}; the regression
# losses take real y; the softmax takes the class index; novelty ignores y and
# is written for u = f(x) - rho (the learned offset sits in the intercept), so
# l(u) = max(0, -u) = max(0, rho - f(x)).
from libc.math cimport exp, log, log1p, fabs, sqrt

cdef enum:
    LOSS_HINGE = 0
    LOSS_SQUARED_HINGE = 1
    LOSS_LOGISTIC = 2
    LOSS_SOFTMAX = 3
    LOSS_SQUARED = 4
    LOSS_HUBER = 5
    LOSS_EPSILON_INSENSITIVE = 6
    LOSS_QUANTILE = 7
    LOSS_NOVELTY = 8


cdef inline double loss_value(int loss, double u, double y, double param) noexcept nogil:
    """l(u, y) for the single-output losses; ``param`` is Huber's delta,
    epsilon of the epsilon-insensitive loss, or tau of the quantile loss."""
    cdef double m, r
    if loss == LOSS_HINGE:
        m = 1.0 - y * u
        return m if m > 0.0 else 0.0
    if loss == LOSS_SQUARED_HINGE:
        m = 1.0 - y * u
        return 0.5 * m * m if m > 0.0 else 0.0
    if loss == LOSS_LOGISTIC:
        m = -y * u
        # log(1 + e^m) without overflow for large m
        return m + log1p(exp(-m)) if m > 0.0 else log1p(exp(m))
    if loss == LOSS_SQUARED:
        r = u - y
        return 0.5 * r * r
    if loss == LOSS_HUBER:
        r = fabs(u - y)
        return 0.5 * r * r if r <= param else param * (r - 0.5 * param)
    if loss == LOSS_EPSILON_INSENSITIVE:
        r = fabs(u - y) - param
        return r if r > 0.0 else 0.0
    if loss == LOSS_QUANTILE:
        r = y - u
        return param * r if r >= 0.0 else (param - 1.0) * r
    if loss == LOSS_NOVELTY:
        return -u if u < 0.0 else 0.0
    return 0.0


cdef inline double loss_derivative(int loss, double u, double y, double param) noexcept nogil:
    """dl/du (a subgradient where l has a kink, the one the DSG paper uses)."""
    cdef double m, r, e
    if loss == LOSS_HINGE:
        return -y if y * u < 1.0 else 0.0
    if loss == LOSS_SQUARED_HINGE:
        m = 1.0 - y * u
        return -y * m if m > 0.0 else 0.0
    if loss == LOSS_LOGISTIC:
        m = -y * u
        # -y * sigmoid(m), written so that exp never overflows
        if m > 0.0:
            return -y / (1.0 + exp(-m))
        e = exp(m)
        return -y * e / (1.0 + e)
    if loss == LOSS_SQUARED:
        return u - y
    if loss == LOSS_HUBER:
        r = u - y
        if r > param:
            return param
        if r < -param:
            return -param
        return r
    if loss == LOSS_EPSILON_INSENSITIVE:
        r = u - y
        if r > param:
            return 1.0
        if r < -param:
            return -1.0
        return 0.0
    if loss == LOSS_QUANTILE:
        return 1.0 - param if u >= y else -param
    if loss == LOSS_NOVELTY:
        return -1.0 if u < 0.0 else 0.0
    return 0.0


cdef inline double softmax_value(const double* u, Py_ssize_t label,
                                 Py_ssize_t n_outputs) noexcept nogil:
    """-u[label] + log sum_c exp(u[c]), shifted by max u for stability."""
    cdef Py_ssize_t c
    cdef double top = u[0], s = 0.0
    for c in range(1, n_outputs):
        if u[c] > top:
            top = u[c]
    for c in range(n_outputs):
        s += exp(u[c] - top)
    return top + log(s) - u[label]


cdef inline void softmax_gradient(const double* u, Py_ssize_t label,
                                  Py_ssize_t n_outputs, double* grad) noexcept nogil:
    """grad[c] = softmax(u)[c] - [c == label]."""
    cdef Py_ssize_t c
    cdef double top = u[0], s = 0.0
    for c in range(1, n_outputs):
        if u[c] > top:
            top = u[c]
    for c in range(n_outputs):
        grad[c] = exp(u[c] - top)
        s += grad[c]
    for c in range(n_outputs):
        grad[c] /= s
    grad[label] -= 1.0


cdef inline double row_loss(int loss, double param, const double* u, const double* target,
                            Py_ssize_t K) noexcept nogil:
    """l(u, y) of one row, summed over the outputs (the softmax: one value)."""
    cdef Py_ssize_t k
    cdef double s = 0.0
    if loss == LOSS_SOFTMAX:
        return softmax_value(u, <Py_ssize_t>target[0], K)
    for k in range(K):
        s = s + loss_value(loss, u[k], target[k], param)
    return s


cdef inline double loss_bound(int loss, double param, const double* G, Py_ssize_t nr,
                              Py_ssize_t K) noexcept nogil:
    """M of rule (9): a bound on ||l'(u, y)||_2 over the outputs.  The
    Lipschitz losses have one (1 per output, Huber's delta, the quantile's
    max(tau, 1 - tau), sqrt(2) for the softmax); for the squared and squared
    hinge losses, whose derivative is unbounded, the largest ||g_r|| of the batch."""
    cdef Py_ssize_t r, k
    cdef double m = 0.0, s
    if loss == LOSS_SOFTMAX:
        return sqrt(2.0)
    if loss == LOSS_HINGE or loss == LOSS_LOGISTIC or loss == LOSS_EPSILON_INSENSITIVE \
            or loss == LOSS_NOVELTY:
        return sqrt(<double>K)
    if loss == LOSS_HUBER:
        return param * sqrt(<double>K)
    if loss == LOSS_QUANTILE:
        return (param if param > 0.5 else 1.0 - param) * sqrt(<double>K)
    for r in range(nr):
        s = 0.0
        for k in range(K):
            s = s + G[r * K + k] * G[r * K + k]
        if s > m:
            m = s
    return sqrt(m)
