"""Each parameter declared once, checked once (doc/architecture.md, "Declaring a
parameter").

Oracles: the declarations themselves (``Option.check`` decides what an
estimator's derived constraint must accept), LIBSVM's svm_check_parameter
rules and kernsolve's messages as documented, numpy's ``isfinite`` (wrapped,
to count the passes over X's values) and the model's ``stats["status"]``.
"""
import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import kernsolve
from kernsolve import _params
from kernsolve._errors import ConvergenceWarning, IterationLimitWarning
from kernsolve._params import Parameters, letter_option, parse_options
from kernsolve.estimators import dsg as dsg_estimators
from kernsolve.solvers import Option, spec_for


# --------------------------------------------------------------------------
# LIBSVM's letters: declared Options, checked by Option.check
# --------------------------------------------------------------------------

def test_every_letter_is_checked_by_its_declaration(monkeypatch):
    seen = []
    original = Option.check

    def recording(self, option, value, ranged=True):
        seen.append(option)
        return original(self, option, value, ranged)

    monkeypatch.setattr(Option, "check", recording)
    Parameters(gamma=0.5).check()
    letters = {"-" + k for k in "stdgrcnpmehbvq"}
    assert set(seen) == letters | {"--bias", "--libsvm-folds", "--cold",
                                  "--warm"}
    assert len(seen) == len(set(seen))          # each once


@pytest.mark.parametrize("options, message", [
    ("-s 7", "-s: unknown svm type 7 (0..4)"),
    ("-t 9", "-t: unknown kernel type 9 (0..5)"),
    ("-t 1 -d -1", "-d: degree must be >= 0, got -1"),
    ("-g -1", "-g: gamma must be >= 0, got -1"),
    ("-c -0.1234567", "-c: C must be > 0, got -0.1234567"),
    ("-s 1 -n 1.5", "-n: nu must be in (0, 1], got 1.5"),
    ("-s 3 -p -1", "-p: epsilon must be >= 0, got -1"),
    ("-m 0", "-m: cache size must be > 0 MB, got 0"),
    ("-e 0", "-e: eps must be > 0, got 0"),
    ("-h 2", "-h: expected 0 or 1, got '2'"),
    ("-v 1", "-v: n-fold cross validation needs n >= 2, got 1"),
    ("--bias 3", "--bias: expected 0 or 1, got '3'"),
])
def test_letter_messages(options, message):
    with pytest.raises(ValueError) as info:
        parse_options(options)
    assert str(info.value) == message


def test_ranges_bind_where_libsvm_checks_them():
    # svm_check_parameter: C for C-SVC, epsilon-SVR, nu-SVR; nu for the nu
    # types and one-class; p for epsilon-SVR; degree for poly; gamma for the
    # kernels that use it
    Parameters(svm_type=1, C=-1).check()
    Parameters(svm_type=0, nu=2).check()
    Parameters(svm_type=4, p=-1).check()
    Parameters(kernel_type=2, degree=-1).check()
    Parameters(kernel_type=0, gamma=-1.0).check()
    assert Parameters(n_folds=0).check().n_folds == 0         # -v 0: off
    with pytest.raises(ValueError, match=r"^-c: C must be > 0, got 0$"):
        Parameters(svm_type=4, C=0).check()


def test_the_hard_margin_is_a_declared_bound():
    assert Parameters(C=math.inf).check().C == math.inf
    with pytest.raises(ValueError, match=r"^-c: expected a finite number, got -inf$"):
        Parameters(C=-math.inf).check()
    with pytest.raises(ValueError, match=r"C = inf \(the hard margin\) is for C-SVC"):
        Parameters(svm_type=4, C=math.inf).check()


@pytest.mark.parametrize("field", ["svm_type", "kernel_type", "degree", "n_folds"])
@pytest.mark.parametrize("value", [math.inf, math.nan])
def test_an_integer_option_refuses_a_non_finite_value_by_name(field, value):
    option = {"svm_type": "-s", "kernel_type": "-t", "degree": "-d", "n_folds": "-v"}[field]
    with pytest.raises(ValueError, match=rf"^{option}: expected an integer, got {value!r}$"):
        Parameters(**{field: value}).check()


def test_the_dash_helpers_live_with_the_parser():
    assert _params.option_key("max-kernel-evals") == "max_kernel_evals"
    assert _params.option_name("max_kernel_evals") == "max-kernel-evals"
    import kernsolve.solvers._spec as spec
    assert not hasattr(spec, "option_key") and not hasattr(spec, "option_name")


# --------------------------------------------------------------------------
# estimator constraints come from the declarations
# --------------------------------------------------------------------------

def _accepts_option(option, value):
    try:
        option.check("--x", value)
    except ValueError:
        return False
    return True


_DSG = spec_for("dsg")
_PROBES = [-2, -1, 0, 1, 2, 64, 0.5, 1.5, -0.5, 1e-300]


@pytest.mark.parametrize("name, option", [
    ("batch_size", _DSG.options["batch-size"]),
    ("feature_block", _DSG.options["feature-block"]),
    ("alpha", _DSG.options["lambda"]),
    ("max_iter", _DSG.options["epochs"]),
    ("epsilon", letter_option("p")),
    ("cache_size", letter_option("m")),
])
def test_dsg_constraints_accept_what_the_declaration_accepts(name, option):
    cls = kernsolve.DSGRegressor
    entries = cls._parameter_constraints[name]
    entries = [e for e in entries if e is not None]
    for value in _PROBES:
        if option.kind == "int" and not isinstance(value, int):
            continue            # an estimator's integer parameter takes integer types
        est = cls(**{name: value})
        assert any(e.accepts(value) for e in entries) == _accepts_option(option, value), \
            (name, value)
        if not _accepts_option(option, value):
            with pytest.raises(ValueError, match=rf"^DSGRegressor: {name} must be "):
                est._validate_params()


def test_dsg_precision_is_the_declared_choices():
    (entry,) = kernsolve.DSGClassifier._parameter_constraints["precision"]
    assert entry.options == _DSG.options["precision"].choices


@pytest.mark.parametrize("name, letter", [("C", "c"), ("nu", "n"), ("epsilon", "p"),
                                          ("degree", "d"), ("coef0", "r"), ("tol", "e"),
                                          ("cache_size", "m")])
def test_svm_constraints_accept_what_the_letter_accepts(name, letter):
    option = letter_option(letter)
    cls = kernsolve.NuSVC if name == "nu" else kernsolve.SVR
    entries = [e for e in cls._parameter_constraints[name] if not isinstance(e, str)]
    for value in _PROBES + [math.inf, 3.0]:
        assert any(e.accepts(value) for e in entries) == _accepts_option(option, value), \
            (name, value)


def test_dsg_parameter_table_names_declared_options():
    # every option the estimator sets is declared: by the DSG spec or a letter
    for name, option in dsg_estimators._OPTION.items():
        if option.startswith("--"):
            assert option[2:] in _DSG.options or option[2:] in ("seed", "threads", "bias"), name
        else:
            assert letter_option(option[1:]) is not None, name


# --------------------------------------------------------------------------
# X is checked finite once per fit
# --------------------------------------------------------------------------

_BIG = 1000.0     # every value of X is >= _BIG; nothing else a fit checks is


def _count_x_values_checked(monkeypatch):
    """Wrap numpy's isfinite: the number of X's values (>= _BIG) it was given."""
    seen = [0]
    original = np.isfinite

    def counting(x, *args, **kwargs):
        arr = np.asarray(x)
        if arr.dtype.kind == "f":
            seen[0] += int(np.count_nonzero(np.abs(arr) >= _BIG))
        return original(x, *args, **kwargs)

    monkeypatch.setattr(np, "isfinite", counting)
    return seen


def _data(sparse=False):
    rng = np.random.default_rng(0)
    X = _BIG + rng.random((90, 4))
    y = np.repeat([0, 1, 2], 30)
    X[y == 1] += 0.5
    if sparse:
        X = sp.csr_matrix(X)
    return X, y


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("make", [lambda: kernsolve.SVC(), lambda: kernsolve.NuSVC(nu=0.3),
                                  lambda: kernsolve.SVR()])
def test_svm_fit_checks_x_once(monkeypatch, sparse, make):
    X, y = _data(sparse)
    n_values = X.nnz if sparse else X.size
    seen = _count_x_values_checked(monkeypatch)
    make().fit(X, y)
    assert seen[0] == n_values


def test_train_checks_x_once(monkeypatch):
    X, y = _data()
    seen = _count_x_values_checked(monkeypatch)
    kernsolve.train(y, X, "-q")
    assert seen[0] == X.size


def test_dsg_fit_checks_x_once(monkeypatch):
    X, y = _data()
    seen = _count_x_values_checked(monkeypatch)
    kernsolve.DSGClassifier(gamma=1.0, max_iter=3, random_state=0).fit(X, y)
    assert seen[0] == X.size


def test_rows_with_duplicates_summed_are_checked_again():
    # a CSR with duplicate entries is summed into its canonical form: a sum
    # of finite values can overflow, so that form is checked again
    from kernsolve._kernels import Canonical, as_canonical
    X = sp.csr_matrix((np.array([1e308, 1e308]), np.array([0, 0]), np.array([0, 2])),
                      shape=(1, 1))
    assert not X.has_canonical_format
    with pytest.raises(ValueError, match="contains NaN or infinity"):
        as_canonical(Canonical(X))


# --------------------------------------------------------------------------
# non-convergence is read from the status
# --------------------------------------------------------------------------

def test_an_iteration_limit_is_one_convergence_warning_from_the_status():
    X, y = _data()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = kernsolve.SVC(kernel="linear", max_iter=2).fit(X - _BIG, y)
    assert est.fit_status_ == 1
    assert len(caught) == 1 and issubclass(caught[0].category, ConvergenceWarning)
    assert str(caught[0].message).startswith("Solver terminated early (max_iter=2).")
    # the solver's own warning, for kernsolve.train's callers, says the same
    with pytest.warns(IterationLimitWarning, match="reaching max number of iterations"):
        model = kernsolve.train(y, X - _BIG, "-t 0 -q", _max_iter=2)
    assert model.stats["status"] == "max_iter"


def test_the_status_not_the_text_decides(monkeypatch):
    # a model that stopped early with no warning at all is reported, and a
    # warning that merely says the words is passed on as it is
    from kernsolve.estimators import _svm_base
    real_train = _svm_base.train

    def stopped_early(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = real_train(*args, **kwargs)
        model.stats["status"] = "max_iter"
        warnings.warn("reaching max number of iterations (a message only)", RuntimeWarning)
        return model

    monkeypatch.setattr(_svm_base, "train", stopped_early)
    X, y = _data()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = kernsolve.SVC().fit(X - _BIG, y)
    assert est.fit_status_ == 1
    assert len(caught) == 2
    assert issubclass(caught[0].category, RuntimeWarning)
    assert not issubclass(caught[0].category, IterationLimitWarning)
    assert issubclass(caught[1].category, ConvergenceWarning)
