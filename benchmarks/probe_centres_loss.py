"""Is the centres' model limited by its loss or by its centres?  A research
probe for issue 33 (more augmented rows made EigenPro on centres *worse*,
while SMO gained from them).

On the same p centres (drawn as ``--solver eigenpro --centers p`` draws them:
a seeded permutation), one-vs-rest models fitted to the rows of a LIBSVM
file, tested on the real Fashion-MNIST test file:

* the square loss (what ``--solver eigenpro --centers`` fits: kernel ridge
  regression on the one-hot targets), ``--square-iterations`` of
  conjugate gradient;
* then the squared hinge, ``1/(2n) sum max(0, 1 - y f)^2 + lam/2 a^T K_MM a``
  per class, by primal Newton steps (Chapelle, "Training a support vector
  machine in the primal", 2007): each step a weighted kernel ridge on the rows
  inside the margin (y f < 1), warm-started from the previous step.

Both solve with FALKON's preconditioner (T^T T = K_MM, A^T A = rho T T^T / p +
lam I, rho the share of rows in the margin).  Everything is in numpy, in
memory, in float32 (K(X, C): 4 n p bytes; the factors 16 p^2 bytes); not the
product's solver: a probe of which loss the model needs.

Usage::

    python benchmarks/make_big_file.py ../shared/data/fashion-mnist.scale.xz /tmp/big/aug120k --rows 120000
    python benchmarks/probe_centres_loss.py /tmp/big/aug120k [--rows 60000] [--centres 15000] \
        [--lam 1e-6] [--newton 3] [--cg 20]
"""
import argparse
import lzma
import os
import sys
import time

import numpy as np
import scipy.linalg as sl

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from benchlib import DATA, load_average   # noqa: E402

import kernsolve   # noqa: E402
from kernsolve.solvers.eigenpro.nystrom import centre_indices   # noqa: E402

BLOCK = 4096


def dense(path, n_features, rows=None):
    y, X = kernsolve.read_problem(path, n_features=n_features)
    if rows is not None:
        y, X = y[:rows], X[:rows]
    return np.asarray(y), np.asarray(X.toarray() if hasattr(X, "toarray") else X,
                                     dtype=np.float32)


def rbf(X, C, gamma):
    """K(X, C) in float32, block by block."""
    K = np.empty((X.shape[0], C.shape[0]), np.float32)
    cc = (C * C).sum(1)
    for s in range(0, X.shape[0], BLOCK):
        A = X[s:s + BLOCK]
        d = (A * A).sum(1)[:, None] + cc[None, :] - 2 * (A @ C.T)
        np.maximum(d, 0, out=d)
        d *= -gamma
        K[s:s + BLOCK] = np.exp(d, out=d)
    return K


class Problem:
    """K(X, C), the one-vs-rest targets and T (T^T T = K_MM)."""

    def __init__(self, K, Y, T, lam):
        self.K, self.Y, self.T, self.lam = K, Y, T, lam
        self.n, self.p = K.shape
        self.TTt = T @ T.T

    def preconditioner(self, rho):
        M = self.TTt * (rho / self.p)
        M[np.diag_indices(self.p)] += self.lam
        return sl.cholesky(M, lower=False, overwrite_a=True)

    def solve(self, mask, alpha, iterations, A):
        """(K^T D K / n + lam K_MM) alpha = K^T D Y / n (D = diag(mask), None:
        all rows) by CG on alpha = T^{-1} A^{-1} beta, from ``alpha``."""
        K, T, n = self.K, self.T, self.n

        def B(u):
            return sl.solve_triangular(T, sl.solve_triangular(A, u, check_finite=False),
                                       check_finite=False)

        def Bt(u):
            return sl.solve_triangular(A, sl.solve_triangular(T, u, trans="T",
                                                              check_finite=False),
                                       trans="T", check_finite=False)

        def H(a):
            f = K @ a.astype(np.float32)
            if mask is not None:
                f *= mask
            return (K.T @ f).astype(np.float64) / n + self.lam * (T.T @ (T @ a))

        Yd = self.Y if mask is None else self.Y * mask
        r = Bt((K.T @ Yd).astype(np.float64) / n - H(alpha))
        x = np.zeros_like(r)
        P = r.copy()
        rr = rr0 = (r * r).sum(0)
        for _ in range(iterations):
            AP = Bt(H(B(P)))
            step = rr / (P * AP).sum(0)
            x += step * P
            r -= step * AP
            rr_new = (r * r).sum(0)
            P = r + (rr_new / rr) * P
            rr = rr_new
        return alpha + B(x), float(np.sqrt(np.max(rr / rr0)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("train", help="a LIBSVM file of Fashion-MNIST rows (make_big_file.py's)")
    ap.add_argument("--rows", type=int, default=None, help="the first ROWS rows only")
    ap.add_argument("--centres", type=int, default=15000)
    ap.add_argument("--gamma", type=float, default=0.02)
    ap.add_argument("--lam", type=float, default=1e-6)
    ap.add_argument("--square-iterations", type=int, default=25)
    ap.add_argument("--newton", type=int, default=3, help="squared-hinge Newton steps")
    ap.add_argument("--cg", type=int, default=20, help="CG iterations a Newton step")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()

    def say(what):
        print(f"[{time.perf_counter() - t0:6.0f} s, load {load_average():.1f}] {what}",
              flush=True)

    y, X = dense(args.train, 784, args.rows)
    with lzma.open(os.path.join(DATA, "fashion-mnist.scale.t.xz"), "rb") as f:
        yt, Xt = dense(f, 784)
    classes = np.unique(y)
    Y = np.where(y[:, None] == classes, 1.0, -1.0).astype(np.float32)
    S = centre_indices(len(y), args.centres, args.seed)
    C = X[S]
    K, Kt = rbf(X, C, args.gamma), rbf(Xt, C, args.gamma)
    K_MM = K[S].astype(np.float64)
    K_MM[np.diag_indices(len(S))] += 1e-10 * len(S)
    pb = Problem(K, Y, sl.cholesky(K_MM, lower=False, overwrite_a=True), args.lam)
    del K_MM
    say(f"{len(y)} rows, {len(S)} centres, lambda {args.lam:g}: kernel and factor done")

    def error(alpha):
        return 100.0 * np.mean(classes[(Kt @ alpha.astype(np.float32)).argmax(1)] != yt)

    alpha, res = pb.solve(None, np.zeros((len(S), len(classes))), args.square_iterations,
                          pb.preconditioner(1.0))
    say(f"square loss: test error {error(alpha):.2f}% (relative residual {res:.2g})")
    for step in range(1, args.newton + 1):
        mask = (Y * (K @ alpha.astype(np.float32)) < 1).astype(np.float32)
        rho = float(mask.mean())
        alpha, res = pb.solve(mask, alpha, args.cg, pb.preconditioner(rho))
        say(f"squared hinge, Newton step {step} ({rho:.1%} of the rows' outputs in the "
            f"margin): test error {error(alpha):.2f}% (relative residual {res:.2g})")


if __name__ == "__main__":
    main()
