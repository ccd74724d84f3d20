"""EigenPro vs plain kernel SGD on a small 1-D regression (runs in seconds).

Both solvers fit f(x) = sum_i alpha_i k(x_i, x) to noisy samples of a
wiggly function by mini-batch SGD on the square loss, for the same number of
epochs and the same mini-batches (kernel SGD is EigenPro with no
eigen-directions).  The exact kernel least-squares solution (Cholesky, tiny
ridge) is printed for reference: EigenPro gets close to it in a few epochs,
plain SGD does not.

Run:  python examples/eigenpro_vs_sgd.py  (--quick: 200 rows, 1 and 2 epochs,
the setting the test suite runs)
"""
import argparse

import numpy as np

import kernsolve


def kernel_ridge(X, y, gamma, lam):
    """alpha = (K + n lam I)^{-1} y, the minimiser of (1/2n) sum (f(x_i) - y_i)^2
    + (lam/2) ||f||^2, which EigenPro's least squares approach as lam -> 0."""
    K = kernsolve.kernel_matrix(X, X, gamma=gamma)
    K[np.diag_indices_from(K)] += X.shape[0] * lam
    return np.linalg.solve(K, y)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="200 rows, 1 and 2 epochs")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    n, gamma = (200 if args.quick else 1000), 20.0
    epoch_counts = (1, 2) if args.quick else (1, 5, 20)
    X = rng.uniform(-1, 1, (n, 1))
    target = lambda x: np.sin(8 * x[:, 0]) + 0.5 * np.sign(x[:, 0])  # noqa: E731
    y = target(X) + 0.1 * rng.standard_normal(n)
    Xt = rng.uniform(-1, 1, (500, 1))
    yt = target(Xt)

    alpha = kernel_ridge(X, y, gamma, 1e-6)
    K_test = kernsolve.kernel_matrix(Xt, X, gamma=gamma)
    print(f"exact kernel ridge (lam 1e-6):  test mse {np.mean((K_test @ alpha - yt) ** 2):.4f}")

    for solver in ("kernel-sgd", "eigenpro"):
        for epochs in epoch_counts:
            options = (f"-s 3 -g {gamma} --solver {solver} --epochs {epochs} "
                       f"--batch-size 64 --subsample {min(n, 500)} -q")
            if solver == "eigenpro":
                options += " --eigen-directions 12"
            model = kernsolve.train(y, X, options)
            pred = kernsolve.predict(None, Xt, model, "-q")[0]
            print(f"{solver:10s} {epochs:2d} epochs:  test mse {np.mean((pred - yt) ** 2):.4f}"
                  f"   (step {model.stats['step']:.3g})")


if __name__ == "__main__":
    main()
