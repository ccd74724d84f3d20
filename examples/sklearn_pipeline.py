"""kernsolve.SVC in a scikit-learn Pipeline, tuned by GridSearchCV.

Run:  python examples/sklearn_pipeline.py  (--quick: a 2 x 2 grid, 3 folds,
one process: the setting the test suite runs)

Needs scikit-learn (kernsolve itself does not).  Uses heart_scale, the small
LIBSVM example file bundled with kernsolve (270 rows, 13 features, labels
-1/+1).  kernsolve.SVC takes the same parameters as sklearn.svm.SVC, so the
grid below would run unchanged with scikit-learn's class.
"""
import argparse

import numpy as np
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

import kernsolve


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a 2 x 2 grid, 3 folds, one process")
    args = ap.parse_args(argv)
    y, X = kernsolve.read_problem(kernsolve.dataset_path("heart_scale"))
    X = X.toarray()               # read_problem gives CSR; the scaler wants dense
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, random_state=0, stratify=y)

    pipe = Pipeline([
        ("scale", StandardScaler()),
        ("svc", kernsolve.SVC(n_jobs=1)),     # one thread per fit; the grid runs fits in parallel
    ])
    if args.quick:
        values, folds, jobs = {"svc__C": [1.0, 10.0], "svc__gamma": ["scale", 0.01]}, 3, 1
    else:
        values, folds, jobs = {"svc__C": [0.1, 1.0, 10.0],
                               "svc__gamma": ["scale", 0.01, 0.1]}, 5, 2
    grid = GridSearchCV(pipe, values, cv=folds, n_jobs=jobs)
    grid.fit(X_train, y_train)

    best = grid.best_estimator_.named_steps["svc"]
    print("best parameters :", grid.best_params_)
    print(f"cv accuracy     : {grid.best_score_:.4f}")
    print(f"test accuracy   : {grid.score(X_test, y_test):.4f}")
    print("classes         :", best.classes_)
    print("support vectors :", best.n_support_, "per class")
    print("SMO iterations  :", best.n_iter_)
    # The fitted kernsolve Model is there too: a LIBSVM model file away.
    print("model           :", best.model_.param.to_options() or "(defaults)",
          f"rho = {np.ravel(best.model_.rho)[0]:.6f}")


if __name__ == "__main__":
    main()
