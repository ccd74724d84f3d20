"""DSG vs UDSG vs CDSG: training objective and test error against training
time and against the number of random features.

The shape of Figure 1 of "utilize old coordinates" (the UDSG/CDSG paper):
the three solvers on the same data, batch size, feature block, step and
lambda; UDSG with G = U = 1 (the paper's setting), CDSG with rule (9) and
``--max-step-ratio``.  Each solver trains through :class:`DSGTrainer` in
``--checkpoints`` pieces per epoch (``fit_rows`` on consecutive slices of
the training rows, each visited in its seeded order); after each piece the
script records the training seconds so far (the evaluation is not timed),
the number of blocks, the regularised empirical risk of doc/dsg.md

    mean_i l(f(x_i), y_i) + lambda/2 * D * sum_g c_g^2     (D = random features)

on ``--objective-rows`` training rows, and the test error.

Usage::

    nice -n 10 python examples/dsg_udsg_cdsg.py                 # a9a, 10000 rows
    python examples/dsg_udsg_cdsg.py --rows 3000 --epochs 2     # a quick look
    python examples/dsg_udsg_cdsg.py --data ijcnn1

Writes ``dsg_udsg_cdsg.csv`` and, when matplotlib is installed,
``dsg_udsg_cdsg.png`` into ``--out-dir`` (default ``./kernsolve-output``,
ignored by git; never into examples/, whose figure doc/dsg.md shows).
"""
import argparse
import csv
import io
import lzma
import os

import numpy as np

import _output
import kernsolve
from kernsolve.solvers.dsg.options import feature_gamma, hyperparameters
from kernsolve.solvers.dsg.targets import Targets
from kernsolve.solvers.dsg.trainer import DSGTrainer
from kernsolve._params import parse_options

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("KERNSOLVE_SHARED_DATA", os.path.join(HERE, "..", "..", "shared", "data"))
SETTINGS = {"a9a": ("a9a", "a9a.t", 123), "ijcnn1": ("ijcnn1", "ijcnn1.t", 22)}
SOLVERS = {"DSG": "--solver dsg",
           "UDSG (G=1, U=1)": "--solver udsg --new-blocks 1 --old-blocks 1",
           "CDSG": "--solver cdsg"}


def load(name, n_features, rows):
    lines = []
    with lzma.open(os.path.join(DATA, name + ".xz"), "rb") as f:
        for line in f:
            lines.append(line)
            if rows and len(lines) >= rows:
                break
    return kernsolve.read_problem(io.BytesIO(b"".join(lines)), n_features=n_features)


def objective(model, X, y, lam):
    """(risk, mean loss, error) of ``model`` on (X, y): logistic or hinge loss."""
    f = model.decision_function(X)[:, 0]
    t = np.where(y == model.labels[0], 1.0, -1.0)
    loss = np.logaddexp(0, -t * f) if model.loss == "logistic" else np.maximum(0, 1 - t * f)
    reg = 0.5 * lam * model.n_random_features * float(np.sum(model.coef ** 2))
    return loss.mean() + reg, loss.mean(), float(np.mean(np.sign(f) != t))


def run(name, solver_options, common, X, y, Xo, yo, Xt, yt, epochs, pieces, threads):
    param = parse_options(f"{common} {solver_options}")
    targets = Targets.from_data("classification", param.extra["loss"], y)
    h = hyperparameters(param, X.shape[0], X.shape[1], param.extra["loss"], feature_gamma(param, X))
    trainer = DSGTrainer(h, targets)
    edges = np.linspace(0, X.shape[0], pieces + 1).astype(int)
    rows = []
    for epoch in range(epochs):
        for a, b in zip(edges[:-1], edges[1:]):
            trainer.fit_rows(X[a:b], y[a:b], n_jobs=threads)
            m = trainer.model()
            risk, loss, _ = objective(m, Xo, yo, h["lam"])
            test_error = objective(m, Xt, yt, h["lam"])[2]
            rows.append(dict(solver=name, epoch=epoch + (b / X.shape[0]),
                             seconds=trainer.seconds, n_iter=trainer.n_iter,
                             n_blocks=m.n_blocks, n_random_features=m.n_random_features,
                             objective=risk, mean_loss=loss, test_error=test_error))
        print(f"{name:16s} epoch {epoch + 1}: {trainer.seconds:7.2f} s, "
              f"{m.n_blocks:5d} blocks, objective {risk:.4f}, test error {test_error:.4f}",
              flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="a9a", choices=sorted(SETTINGS))
    ap.add_argument("--rows", type=int, default=10000, help="training rows (0 = all)")
    ap.add_argument("--test-rows", type=int, default=3000)
    ap.add_argument("--objective-rows", type=int, default=3000,
                    help="training rows the objective is measured on")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--checkpoints", type=int, default=3, help="points per epoch")
    ap.add_argument("--loss", default="logistic", choices=["logistic", "hinge"])
    ap.add_argument("--options", default="-g median --batch-size 64 --feature-block 32 "
                    "--lambda 1e-6 --step 300 --t0 100 --seed 1",
                    help="options shared by the three solvers")
    ap.add_argument("--threads", type=int, default=2)
    _output.add_argument(ap)
    args = ap.parse_args(argv)
    out = os.path.join(_output.folder(ap, args.out_dir), "dsg_udsg_cdsg")

    train_file, test_file, d = SETTINGS[args.data]
    y, X = load(train_file, d, args.rows)
    yt, Xt = load(test_file, d, args.test_rows)
    Xo, yo = X[:args.objective_rows], y[:args.objective_rows]
    common = f"-q --loss {args.loss} {args.options}"
    print(f"{args.data}: {X.shape[0]} training rows, {Xt.shape[0]} test rows, "
          f"options '{common}', {args.threads} threads")
    rows = []
    for name, opts in SOLVERS.items():
        rows += run(name, opts, common, X, y, Xo, yo, Xt, yt, args.epochs,
                    args.checkpoints, args.threads)
    with open(out + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    plt = _output.pyplot(out + ".csv")
    if plt is None:
        return
    fig, axes = plt.subplots(2, 2, figsize=(10, 7.5))
    for name in SOLVERS:
        r = [row for row in rows if row["solver"] == name]
        for i, key in enumerate(("objective", "test_error")):
            for j, x in enumerate(("seconds", "n_random_features")):
                axes[i, j].plot([q[x] for q in r], [q[key] for q in r], marker="o",
                                markersize=3, label=name)
    for i, key in enumerate(("training objective", "test error")):
        axes[i, 0].set_ylabel(key)
        for j, x in enumerate(("training time (s)", "random features")):
            axes[i, j].set_xlabel(x)
            axes[i, j].grid(alpha=0.3)
    axes[0, 0].legend()
    fig.suptitle(f"{args.data} ({X.shape[0]} rows), {args.loss} loss, {args.epochs} epochs, "
                 f"{args.threads} threads\n{args.options}", fontsize=9)
    fig.tight_layout()
    fig.savefig(out + ".png", dpi=110)
    print(f"wrote {out}.csv and {out}.png")


if __name__ == "__main__":
    main()
