"""``python -m kernsolve``: train an RBF SVM on the bundled heart_scale and report accuracy.

The data is split into the first 200 rows for training and the last 70 for
testing (the file's rows are not ordered by label), then a C-SVC with LIBSVM's
defaults is trained on the 200 rows and the 70 are predicted: three lines (the
data, the model, svm-predict's accuracy line), a check that the package works.
``--help`` says so; ``--version`` prints the version.
"""
import sys

import kernsolve
from .cli._common import UsageError, run, split_options

PROG = "kernsolve"

USAGE = """\
Usage: python -m kernsolve [--help] [--version]
Trains a C-SVC with LIBSVM's defaults (RBF kernel, C=1, gamma=1/num_features) on
the first 200 rows of heart_scale (LIBSVM's example data, bundled with kernsolve),
predicts the other 70 rows and prints svm-predict's accuracy line: a check that
kernsolve is installed and works. It takes no files and writes none.
The commands: kernsolve-train, kernsolve-predict, kernsolve-scale, kernsolve-grid
(each with --help); in Python: import kernsolve (doc/python-api.md).
"""


def demo(argv):
    """The demo run, for :func:`main` (``argv``: only --help or --version)."""
    # every option is a flag here: --vesion is an unknown option, not one missing a value
    options, positional = split_options(argv, flags=[a for a in argv if a.startswith("-")])
    if options:
        raise UsageError(f"unknown option: {options[0][0]}")
    if positional:
        raise UsageError(f"unexpected argument {positional[0]!r} (it takes none)")
    path = kernsolve.dataset_path("heart_scale")
    y, X = kernsolve.read_problem(path)
    n_train = 200
    print(f"heart_scale: {X.shape[0]} rows, {X.shape[1]} features "
          f"(LIBSVM's example data, bundled)")
    model = kernsolve.train(y[:n_train], X[:n_train], "-s 0 -t 2 -c 1 -q")
    print(f"trained C-SVC (RBF, C=1, gamma=1/{X.shape[1]}) on {n_train} rows: "
          f"{model.dual_coef.shape[1]} support vectors, "
          f"{model.stats.get('n_kernel_evals', 0)} kernel evaluations")
    _, (accuracy, _, _), _ = kernsolve.predict(y[n_train:], X[n_train:], model, "-q")
    n_test = X.shape[0] - n_train
    print(f"Accuracy = {accuracy:g}% ({round(accuracy * n_test / 100)}/{n_test}) "
          "(classification)")
    return 0


def main(argv=None):
    """Run the demo (or answer --help / --version); returns the exit status."""
    return run(demo, argv, PROG, USAGE)


if __name__ == "__main__":
    sys.exit(main())
