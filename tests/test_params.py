"""Option grammar: LIBSVM svm-train's letters and defaults, kernsolve's long options.

Oracle: libsvm-official's own option parser (``libsvm.svm.svm_parameter``) for
every option string LIBSVM accepts, and LIBSVM's ``svm_check_parameter`` (via
``svm_train``) for which values are invalid.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from conftest import libsvm_serial
import dataclasses

import kernsolve.solvers as solvers
from kernsolve._params import (KERNELS, SVM_TYPES, Parameters,
                               check_parameters, check_parameters_or_raise,
                               parse_options, split_arguments)
from kernsolve.solvers import Option, solver_names



def libsvm_fields(options):
    """What libsvm-official's parser makes of an option string."""
    libsvm_svm = pytest.importorskip("libsvm.svm")
    p = libsvm_svm.svm_parameter(options)
    weights = {}
    for i in range(p.nr_weight):
        lab = p.weight_label[i]
        weights[lab] = weights.get(lab, 1.0) * p.weight[i]
    return dict(svm_type=int(p.svm_type), kernel_type=int(p.kernel_type), degree=p.degree,
                gamma=None if p.gamma == 0 else p.gamma, coef0=p.coef0, C=p.C, nu=p.nu,
                p=p.p, cache_size=p.cache_size, eps=p.eps, shrinking=bool(p.shrinking),
                probability=bool(p.probability), weight=weights,
                n_folds=p.nr_fold if p.cross_validation else 0)


def ours(options):
    q = parse_options(options)
    return dict(svm_type=q.svm_type, kernel_type=q.kernel_type, degree=q.degree,
                gamma=q.gamma, coef0=q.coef0, C=q.C, nu=q.nu, p=q.p,
                cache_size=q.cache_size, eps=q.eps, shrinking=q.shrinking,
                probability=q.probability, weight=q.weight, n_folds=q.n_folds)


LIBSVM_STRINGS = [
    "",
    "-s 0 -t 2 -c 100 -g 0.005",
    "-s 1 -n 0.3 -t 1 -d 2 -r 1.5 -g 0.25",
    "-s 2 -n 0.01 -t 3 -g 0.5 -r -1",
    "-s 3 -p 0.5 -c 10 -e 0.0001 -m 40 -h 0",
    "-s 4 -n 1 -b 1 -t 0",
    "-c 1 -w1 2 -w-1 0.5",
    "-w3 2 -w3 1.5",            # LIBSVM multiplies repeated weights
    "-v 5 -q -c 2",
    "-g 0",                     # LIBSVM: 0 means 1/num_features
    "-t 4",
    "-d 0 -e 1e-5 -m 0.5",
]


@pytest.mark.parametrize("options", LIBSVM_STRINGS)
def test_same_meaning_as_libsvm_parser(options):
    assert ours(options) == libsvm_fields(options)


def test_defaults_are_libsvm_defaults():
    assert ours("") == libsvm_fields("")
    p = Parameters()
    assert (p.solver, p.bias, p.n_jobs, p.seed, p.quiet, p.extra) == ("smo", True, None, 0,
                                                                      False, {})
    assert SVM_TYPES[p.svm_type] == "c_svc" and KERNELS[p.kernel_type] == "rbf"


def test_quiet_and_threads_and_long_options():
    p = parse_options("-q --threads 2 --seed 7 --bias 0 --solver sbp --epochs 3 "
                      "--max-kernel-evals 1e6 --time-limit=2.5")
    assert p.quiet and p.n_jobs == 2 and p.seed == 7 and p.bias is False
    assert p.solver == "sbp"
    assert p.extra == {"epochs": 3, "max_kernel_evals": 1e6, "time_limit": 2.5}
    # solver may come after its options
    q = parse_options("--batch-size 64 --loss hinge --solver dsg")
    assert q.extra == {"batch_size": 64, "loss": "hinge"}


def test_every_spelling_gives_the_same_parameters():
    s = "-s 1 -t 1 -d 2 -g 0.5 -r 1 -n 0.3 -w1 2 -q --threads 2 --solver sbp --epochs 5"
    a = parse_options(s)
    b = parse_options(s.split())
    c = parse_options(dict(svm_type="nu_svc", kernel="poly", degree=2, gamma=0.5, coef0=1,
                           nu=0.3, weight={1: 2}, quiet=True, n_jobs=2, solver="sbp",
                           epochs=5))
    d = parse_options(a)
    assert a == b == c == d
    assert d is not a and d.weight is not a.weight


def test_canonical_string_round_trip():
    for s in LIBSVM_STRINGS + ["--solver dsg --loss 'squared hinge' --step 0.5 --seed 3",
                               "--bias 0 --threads -1"]:
        p = parse_options(s)
        assert parse_options(p.to_options()) == p
    assert Parameters().to_options() == ""


@settings(max_examples=60, deadline=None)
@given(svm_type=st.integers(0, 4), kernel=st.integers(0, 5), degree=st.integers(0, 9),
       gamma=st.one_of(st.none(), st.floats(1e-6, 1e3)),
       C=st.floats(1e-6, 1e6), nu=st.floats(1e-3, 1.0), eps=st.floats(1e-9, 1.0),
       cache=st.floats(0.01, 1e4), shrink=st.booleans(), prob=st.booleans(),
       weight=st.dictionaries(st.integers(-5, 5), st.floats(0, 100), max_size=3),
       seed=st.integers(0, 2 ** 64 - 1), jobs=st.one_of(st.none(), st.integers(1, 8)))
def test_round_trip_property(svm_type, kernel, degree, gamma, C, nu, eps, cache, shrink, prob,
                             weight, seed, jobs):
    p = Parameters(svm_type=svm_type, kernel_type=kernel, degree=degree, gamma=gamma, C=C,
                   nu=nu, eps=eps, cache_size=cache, shrinking=shrink, probability=prob,
                   weight=weight, seed=seed, n_jobs=jobs)
    assert check_parameters(p) is None
    assert parse_options(p.to_options()) == parse_options(p)


# (options, message) -- every message names the option and the value.
ERRORS = [
    ("-c -1", "-c: C must be > 0, got -1"),
    ("-c 0", "-c: C must be > 0, got 0"),
    ("-s 3 -c -2.5", "-c: C must be > 0, got -2.5"),
    ("-s 1 -n 0", "-n: nu must be in (0, 1], got 0"),
    ("-s 2 -n 1.5", "-n: nu must be in (0, 1], got 1.5"),
    ("-s 4 -n -0.1", "-n: nu must be in (0, 1], got -0.1"),
    ("-e 0", "-e: eps must be > 0, got 0"),
    ("-e -1e-3", "-e: eps must be > 0, got -0.001"),
    ("-g -1", "-g: gamma must be >= 0, got -1"),
    ("-t 3 -g -0.5", "-g: gamma must be >= 0, got -0.5"),
    ("-t 1 -d -2", "-d: degree must be >= 0, got -2"),
    ("-m 0", "-m: cache size must be > 0 MB, got 0"),
    ("-s 3 -p -0.1", "-p: epsilon must be >= 0, got -0.1"),
    ("-s 5", "-s: unknown svm type 5 (0..4)"),
    ("-s -1", "-s: unknown svm type -1 (0..4)"),
    ("-t 6", "-t: unknown kernel type 6 (0..5)"),
    ("-x 1", "unknown option: -x"),
    ("-cc 1", "unknown option: -cc (did you mean -c?)"),
    ("--epoch 3", "unknown option: --epoch (did you mean --epochs?)"),
    ("--solver dsg --lamda 0.1", "unknown option: --lamda (did you mean --lambda?)"),
    ("--frobnicate 1", "unknown option: --frobnicate"),
    ("-c", "-c: missing value"),
    ("--threads", "--threads: missing value"),
    ("-w1", "-w1: missing value"),
    ("-c abc", "-c: expected a number, got 'abc'"),
    ("-c nan", "-c: expected a finite number, got 'nan'"),
    ("-g inf", "-g: expected a finite number, got 'inf'"),
    ("-d 2.5", "-d: expected an integer, got '2.5'"),
    ("-s one", "-s: expected an integer, got 'one'"),
    ("-h 2", "-h: expected 0 or 1, got '2'"),
    ("-b yes", "-b: expected 0 or 1, got 'yes'"),
    ("-v 1", "-v: n-fold cross validation needs n >= 2, got 1"),
    ("-v x", "-v: expected an integer, got 'x'"),
    ("-w 2", "-w: missing class label (write -w<label> <weight>, e.g. -w1 2)"),
    ("-wa 2", "-wa: class label must be a number, got 'a'"),
    ("-w1 x", "-w1: expected a number, got 'x'"),
    ("-w1 -2", "-w1: weight must be >= 0, got -2"),
    ("--threads 0", "--threads: must be a positive count or negative (back from all cores), got 0"),
    ("--threads two", "--threads: expected an integer, got 'two'"),
    ("--seed -1", "--seed: must be in [0, 2**64), got -1"),
    ("--bias 2", "--bias: expected 0 or 1, got '2'"),
    ("--solver foo", "--solver: unknown solver 'foo' (known: " + ", ".join(solver_names()) + ", auto)"),
    ("--validation-fraction 0.1", "--validation-fraction: not an option of solver 'smo' "
                                  "(it belongs to sbp)"),
    ("--solver sbp --loss hinge", "--loss: not an option of solver 'sbp' "
                                  "(it belongs to cdsg, dsg, udsg)"),
    ("train.txt", "unexpected argument 'train.txt' (options start with '-')"),
    ("-c 'unbalanced", "cannot split the option string: No closing quotation"),
]


@pytest.mark.parametrize("options,message", ERRORS)
def test_error_messages(options, message):
    with pytest.raises(ValueError) as exc:
        parse_options(options)
    assert str(exc.value) == message
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("options", ["-c -1", "-c 0", "-s 1 -n 0", "-s 2 -n 1.5", "-e 0",
                                     "-g -1", "-t 1 -d -2", "-m 0", "-s 3 -p -0.1"])
def test_libsvm_rejects_what_we_reject(options, svmutil):
    """LIBSVM's svm_check_parameter (through svm_train) refuses the same values."""
    y = [1, -1, 1, -1]
    x = [{1: 0.1}, {1: -0.2}, {1: 0.3}, {1: -0.4}]
    with pytest.raises(ValueError), libsvm_serial():
        svmutil.svm_train(y, x, options + " -q")


@pytest.mark.parametrize("options", ["-s 0 -n 7", "-s 1 -c -1", "-s 2 -p -1", "-s 3 -n 0",
                                     "-s 1 -b 1", "-s 2 -b 1", "-t 0 -g -1", "-t 2 -d -2"])
def test_accepted_like_libsvm(options, svmutil):
    """Values that a given SVM type ignores are not checked, as in LIBSVM; one-class
    probabilities are allowed (LIBSVM 3.37); gamma and degree are checked only for
    the kernels that use them."""
    assert check_parameters(parse_options(options)) is None
    y = [1, -1, 1, -1, 1, -1]
    x = [{1: 0.1}, {1: -0.2}, {1: 0.3}, {1: -0.4}, {1: 0.5}, {1: -0.6}]
    with libsvm_serial():
        svmutil.svm_train(y, x, options + " -q")


def test_check_parameters_returns_message_and_wrapper_raises():
    p = Parameters(C=-1.0)
    assert check_parameters(p) == "-c: C must be > 0, got -1"
    with pytest.raises(ValueError, match=r"^-c: C must be > 0, got -1$"):
        check_parameters_or_raise(p)
    with pytest.raises(ValueError, match="-c: C must be > 0"):
        p.check()
    assert check_parameters(Parameters()) is None
    assert check_parameters(Parameters(), n_features=13) is None
    assert "n_features" in check_parameters(Parameters(), n_features=-1)
    assert check_parameters(Parameters(C="big")) == "-c: expected a number, got 'big'"
    assert check_parameters(Parameters(kernel_type=1.5)) == "-t: expected an integer, got 1.5"
    assert check_parameters(Parameters(extra={"epochs": 3})) == \
        "--epochs: not an option of solver 'smo'"
    assert check_parameters("-c 1").startswith("expected Parameters")


def test_dict_errors():
    with pytest.raises(ValueError, match=r"^-t: unknown kernel type 'cubic'"):
        parse_options({"kernel": "cubic"})
    with pytest.raises(ValueError, match=r"^-s: unknown svm type 'svc'"):
        parse_options({"svm_type": "svc"})
    with pytest.raises(ValueError, match=r"^unknown option: --colour$"):
        parse_options({"colour": "red"})
    with pytest.raises(ValueError, match=r"^-c: C must be > 0, got -3$"):
        parse_options({"C": -3})
    with pytest.raises(ValueError, match="options must be"):
        parse_options(3.5)


def test_gamma_resolution_and_names():
    p = parse_options("-t 1 -s 3")
    assert p.svm_type_name == "epsilon_svr" and p.kernel_name == "polynomial"
    assert p.resolved_gamma(13) == 1 / 13
    assert p.resolved_gamma(0) == 0.0
    assert parse_options("-g 0.5").resolved_gamma(13) == 0.5


def test_split_arguments_like_svm_train():
    opts, rest = split_arguments("-c 1 -q -g 2 --threads 2 train.txt model.txt")
    assert opts == ["-c", "1", "-q", "-g", "2", "--threads", "2"]
    assert rest == ["train.txt", "model.txt"]
    opts, rest = split_arguments(["-r", "-1", "--seed=3", "data"])
    assert opts == ["-r", "-1", "--seed=3"] and rest == ["data"]
    assert parse_options(opts).coef0 == -1.0


def test_weights_and_float_labels():
    p = parse_options("-w1 2 -w-1 0.5 -w2.5 3")
    assert p.weight == {1: 2.0, -1: 0.5, 2.5: 3.0}
    assert parse_options(p.to_options()) == p


def test_registry_is_extensible(monkeypatch):
    # the parser reads the solvers' options from the registry at each call
    smo = solvers.spec_for("smo")
    extended = dataclasses.replace(smo, options={"test-only-option": Option("test")})
    with monkeypatch.context() as patch:
        patch.setitem(solvers._BY_NAME, "smo", extended)
        p = parse_options("--test-only-option 4")
        assert p.extra == {"test_only_option": 4}
    with pytest.raises(ValueError):
        parse_options("--test-only-option 4")


def test_parse_is_checked_and_typed():
    p = parse_options({"C": 10, "degree": 2.0, "shrinking": 0, "n_jobs": np.int64(2)})
    assert type(p.C) is float and type(p.degree) is int and p.shrinking is False
    assert type(p.n_jobs) is int
