"""``python -m kernsolve``: train an RBF SVM on the bundled heart_scale and report accuracy.

The data is split into the first 200 rows for training and the last 70 for
testing (the file's rows are not ordered by label), then a C-SVC with LIBSVM's
defaults is trained on the 200 rows and the 70 are predicted: three lines (the
data, the model, svm-predict's accuracy line), a check that the package works.
``--help`` says so; ``--version`` prints the version.
"""
import os
import sys

import kernsolve
from .cli._common import UsageError, run, split_options

PROG = "kernsolve"

USAGE = """\
Usage: python -m kernsolve [--help] [--version] [--docs]
Trains a C-SVC with LIBSVM's defaults (RBF kernel, C=1, gamma=1/num_features) on
the first 200 rows of heart_scale (LIBSVM's example data, bundled with kernsolve),
predicts the other 70 rows and prints svm-predict's accuracy line: a check that
kernsolve is installed and works. It takes no files and writes none.
The commands: kernsolve-train, kernsolve-predict, kernsolve-scale, kernsolve-grid
(each with --help); in Python: import kernsolve, help(kernsolve.train).
--docs prints where the documentation of this installation is.
"""


def docs_location():
    """Where this installation's documentation is, as ``--docs`` prints it: the
    Markdown pages of a source checkout (``doc/index.md`` beside the package),
    else what an installed copy has (the pages travel in the sdist only)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(kernsolve.__file__)))
    index = os.path.join(root, "doc", "index.md")
    if os.path.isfile(index):
        return (f"kernsolve documentation: {index} (Markdown pages; 'mkdocs build' "
                f"in {root} makes them a website)")
    return (f"kernsolve documentation: this installation has no doc/ pages (they are in "
            f"the source distribution, kernsolve-{kernsolve.__version__}.tar.gz, under "
            f"doc/); here: 'python -m pydoc kernsolve', help(kernsolve.train) in Python, "
            f"and each command's --help")


def demo(argv):
    """The demo run, for :func:`main` (``argv``: only --help, --version or --docs)."""
    # every option is a flag here: --vesion is an unknown option, not one missing a value
    options, positional = split_options(argv, flags=[a for a in argv if a.startswith("-")])
    unknown = [name for name, _ in options if name != "--docs"]
    if unknown:
        raise UsageError(f"unknown option: {unknown[0]}")
    if positional:
        raise UsageError(f"unexpected argument {positional[0]!r} (it takes none)")
    if options:
        print(docs_location())
        return 0
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
