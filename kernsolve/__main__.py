"""``python -m kernsolve``: train an RBF SVM on the bundled heart_scale and report accuracy.

The data is split into the first 200 rows for training and the last 70 for
testing (the file's rows are not ordered by label), then a C-SVC with LIBSVM's
defaults is trained and evaluated, and 5-fold cross-validation accuracy on the
whole file is printed as a second opinion.
"""
import sys

import kernsolve


def main(argv=None):
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


if __name__ == "__main__":
    sys.exit(main())
