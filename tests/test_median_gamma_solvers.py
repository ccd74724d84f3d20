"""``-g median`` for every solver whose spec says ``median_gamma`` (issue 15, item 5).

eigenpro and kernel-sgd failed with "could not convert string to float:
'median'" although the usage offered ``-g median``.  Every solver now
resolves gamma through one rule (``kernsolve._validation.resolve_gamma``,
the median trick by ``kernsolve.median_gamma``).  The oracle: the same
training with ``-g <the value median_gamma computes>`` gives the same model
file, byte for byte.
"""
import contextlib
import io
import lzma

import numpy as np
import pytest

import kernsolve
from kernsolve import median_gamma, read_problem, save_model, train
from kernsolve.solvers import REGISTRY, median_gamma_solvers, solver_names

# every solver name that takes -g median, with every SVM type and Fourier kernel
MEDIAN = [(name, s, t) for spec in REGISTRY if spec.median_gamma for name in spec.names
          for s in sorted(spec.svm_types) for t in (2, 5)]
OTHERS = [name for name in solver_names() if name not in median_gamma_solvers()]


@pytest.fixture(scope="module")
def heart():
    return read_problem(kernsolve.dataset_path("heart_scale"))


def _model_bytes(model, path):
    save_model(path, model)
    return path.read_bytes()


def test_the_registry_offers_median_to_eigenpro_and_dsg():
    assert {"dsg", "udsg", "cdsg", "eigenpro", "kernel-sgd"} <= set(median_gamma_solvers())


@pytest.mark.parametrize("name,svm_type,kernel", MEDIAN)
def test_median_equals_the_median_trick_value(heart, tmp_path, name, svm_type, kernel):
    y, X = heart
    base = f"-q --solver {name} -s {svm_type} -t {kernel} --seed 3"
    gamma = median_gamma(X, kernel={2: "rbf", 5: "laplacian"}[kernel], seed=3)
    a = _model_bytes(train(y, X, base + " -g median", n_jobs=1), tmp_path / "a")
    b = _model_bytes(train(y, X, base + f" -g {gamma!r}", n_jobs=1), tmp_path / "b")
    assert a == b
    assert f"gamma {gamma!r}".encode() in a or f"gamma {gamma:.17g}".encode() in a


@pytest.mark.parametrize("name", sorted({n for n, _, _ in MEDIAN}))
def test_cli_median_writes_the_median_trick_gamma(heart, tmp_path, name):
    from kernsolve.cli import train as cli_train
    y, X = heart
    data = tmp_path / "heart"
    with lzma.open(kernsolve.dataset_path("heart_scale"), "rb") as f:
        data.write_bytes(f.read())
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = cli_train.cli(["-q", "--solver", name, "-g", "median", str(data),
                              str(tmp_path / "m")])
    assert code == 0, err.getvalue()
    expect = _model_bytes(train(y, X, f"-q --solver {name} -g {median_gamma(X)!r}"),
                          tmp_path / "expect")
    assert (tmp_path / "m").read_bytes() == expect


@pytest.mark.parametrize("name", ["eigenpro", "kernel-sgd"])
def test_median_in_cross_validation_is_per_fold(heart, name):
    """-v with -g median: each fold's gamma is the median trick on its training rows."""
    y, X = heart
    r = kernsolve.cross_validation(y, X, f"-q --solver {name} -g median", n_folds=3, n_jobs=1)
    for i, test in enumerate(r.folds):
        rows = np.concatenate([f for j, f in enumerate(r.folds) if j != i])
        g = median_gamma(X[rows])
        model = train(y[rows], X[rows], f"-q --solver {name} -g {g!r}", n_jobs=1)
        pred = kernsolve.predict(None, X[test], model, "-q")[0]
        np.testing.assert_array_equal(r.target[test], pred)


@pytest.mark.parametrize("name", OTHERS)
def test_solvers_without_median_refuse_it_before_reading_data(name):
    with pytest.raises(ValueError, match=r"-g median: the median trick is available to "
                                         r"the solvers dsg, .*not '" + name):
        kernsolve.parse_options(f"--solver {name} -g median")


@pytest.mark.parametrize("kernel", [0, 1])
def test_median_with_a_kernel_without_its_gamma_is_refused(kernel):
    with pytest.raises(ValueError, match=r"-g median: .*rbf and laplacian kernels "
                                         rf"\(-t 2, -t 5\), not for -t {kernel}"):
        kernsolve.parse_options(f"--solver eigenpro -t {kernel} -g median")
