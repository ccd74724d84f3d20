"""The solver contract, checked for every solver of ``kernsolve.solvers.REGISTRY``.

Like scikit-learn's ``parametrize_with_checks`` over estimators, every check
here is parametrised over the registry, so a new solver (a folder and one
registry line) is checked without a line of this file changing:

(a) every declared option refuses a value just outside its declared range,
    and a malformed value, with a message naming the option, when the options
    are parsed (before any data is read) and when a solver trains; an option
    declared for some names of a family only is refused by the others; the
    declared choices are accepted and the declared defaults are what a solver
    reads (``Parameters.solver_options``);
(b) train -> save_model -> load_model -> predict gives the predictions of the
    trained model, on heart_scale (regression types read its labels as values);
(c) 1 and 2 threads give byte-identical model files;
(d) an exception from the progress hook (a KeyboardInterrupt, as Ctrl-C
    arrives) stops the solver: it propagates, and the next run gives the same
    model as an uninterrupted one.

Oracles: the spec's own declarations (a), the model before saving (b), the
1-thread model (c, d).  The compiled loops visit Python at every clock check
(poll interval 0), so the progress hook runs however fast the machine is.
"""
import inspect
import sys

import numpy as np
import pytest

import kernsolve
from kernsolve._params import Parameters, option_key
from kernsolve._progress import Progress
from kernsolve.solvers import REGISTRY
from kernsolve.solvers.baselines import _baselines
from kernsolve.solvers.sbp import _sbp
from kernsolve.solvers.smo import _smo

# (solver name, SVM type) for every solver and every type it trains
CASES = [(spec, name, s) for spec in REGISTRY for name in spec.names
         for s in sorted(spec.svm_types)]
IDS = [f"{name}-s{s}" for _, name, s in CASES]
OPTION_CASES = [(spec, name, s, option) for spec, name, s in CASES
                for option in spec.option_names(name)]
OPTION_IDS = [f"{name}-s{s}--{option}" for _, name, s, option in OPTION_CASES]
# (spec, option, a name of its family that does not take it)
ONLY_CASES = [(spec, option, name) for spec in REGISTRY
              for option, opt in spec.options.items() if opt.only
              for name in spec.names if name not in opt.only]
ONLY_IDS = [f"{name}--{option}" for _, option, name in ONLY_CASES]

# short runs: the contract, not the solvers' accuracy, is under test
_SHORT = {"epochs": 1}


@pytest.fixture(scope="module")
def heart():
    y, X = kernsolve.read_problem(kernsolve.dataset_path("heart_scale"))
    return y, X


def _tokens(spec, name, s, quiet=True, **options):
    tokens = ["-s", str(s), "--solver", name, "--seed", "3"] + (["-q"] if quiet else [])
    for option, value in options.items():
        tokens += [f"--{option}", str(value)]
    return tokens


def _short(spec, name):
    return {o: v for o, v in _SHORT.items() if o in spec.option_names(name)}


def _train(heart, spec, name, s, n_jobs=1, quiet=True, **options):
    y, X = heart
    opts = dict(_short(spec, name), **options)
    return kernsolve.train(y, X, _tokens(spec, name, s, quiet, **opts), n_jobs=n_jobs)


def _bad_values(opt):
    """Values the option must refuse: just outside its range, and malformed."""
    if opt.kind == "choice":
        return ["no-such-choice"]
    bad = opt.out_of_range() + ["abc"]
    if opt.kind == "int":
        bad.append(1.5)
    if opt.kind == "flag":
        bad.append(0.5)
    return bad


# --------------------------------------------------------------------------
# (a) declared ranges are the solvers' ranges

def test_registry_names_are_unique_and_every_spec_trains_somehow():
    names = [n for spec in REGISTRY for n in spec.names]
    assert len(names) == len(set(names))
    for spec in REGISTRY:
        assert spec.svm_types <= {0, 1, 2, 3, 4}
        for option, opt in spec.options.items():
            assert opt.doc and "\n" not in opt.doc, option
            assert set(opt.only) <= set(spec.names), option
            assert opt.kind in ("int", "float", "flag", "choice"), option
            assert (opt.kind == "choice") == bool(opt.choices), option
            assert opt.low is not None or opt.high is not None or \
                opt.kind in ("choice", "flag"), f"--{option}: declare its range"
            assert "\n" not in opt.noun, option


@pytest.mark.parametrize("spec, name, s, option", OPTION_CASES, ids=OPTION_IDS)
def test_option_out_of_range_is_refused_naming_it(heart, spec, name, s, option):
    opt = spec.options[option]
    for value in _bad_values(opt):
        with pytest.raises(ValueError, match=f"--{option}\\b") as info:
            _train(heart, spec, name, s, **{option: value})
        assert f"--{option}" in str(info.value)


@pytest.mark.parametrize("spec, name, s, option", OPTION_CASES, ids=OPTION_IDS)
def test_option_out_of_range_is_refused_before_the_data(spec, name, s, option):
    """The options are checked when they are parsed (the command line does so
    before it reads the data), and ``Parameters.check`` makes the same check
    on options set in Python."""
    opt = spec.options[option]
    for value in _bad_values(opt):
        with pytest.raises(ValueError, match=f"^--{option}: ") as parsed:
            kernsolve.parse_options(_tokens(spec, name, s, **{option: value}))
        param = Parameters(svm_type=s, solver=name, extra={option_key(option): value})
        with pytest.raises(ValueError, match=f"^--{option}: ") as checked:
            param.check()
        if not isinstance(value, str):       # the parser types "1.5"; Python gives 1.5
            assert str(checked.value) == str(parsed.value)


@pytest.mark.parametrize("spec, option, name", ONLY_CASES, ids=ONLY_IDS)
def test_option_of_other_names_of_the_family_is_refused(spec, option, name):
    s = min(spec.svm_types)
    value = spec.options[option].default
    value = 1 if value is None else value
    with pytest.raises(ValueError, match=f"^--{option}: not an option of solver {name!r}"):
        kernsolve.parse_options(_tokens(spec, name, s, **{option: value}))
    with pytest.raises(ValueError, match=f"^--{option}: not an option of solver {name!r}"):
        Parameters(svm_type=s, solver=name, extra={option_key(option): value}).check()


@pytest.mark.parametrize("spec, name, s", CASES, ids=IDS)
def test_solver_options_are_the_declared_defaults_and_choices(spec, name, s):
    """What a solver reads: every option it takes, the declared default when
    not given; a declared choice in any of its spellings is that choice."""
    expected = {option_key(o): spec.options[o].default for o in spec.option_names(name)}
    assert Parameters(svm_type=s, solver=name).solver_options() == expected
    for option in spec.option_names(name):
        for choice in spec.options[option].choices:
            for spelled in (choice, choice.upper().replace("-", "_")):
                param = kernsolve.parse_options(_tokens(spec, name, s, **{option: spelled}))
                assert param.solver_options()[option_key(option)] == choice


@pytest.mark.parametrize("spec, name, s", CASES, ids=IDS)
def test_declared_defaults_are_accepted(heart, spec, name, s):
    """Giving each option its declared default trains (one option at a time)."""
    for option in spec.option_names(name):
        default = spec.options[option].default
        if default is not None:
            _train(heart, spec, name, s, **{option: default})


# --------------------------------------------------------------------------
# (b) train -> save -> load -> predict

@pytest.mark.parametrize("spec, name, s", CASES, ids=IDS)
def test_save_load_predict_round_trip(heart, tmp_path, spec, name, s):
    y, X = heart
    model = _train(heart, spec, name, s)
    path = str(tmp_path / "model")
    kernsolve.save_model(path, model)
    loaded = kernsolve.load_model(path)
    assert type(loaded) is type(model)
    before = kernsolve.predict(y, X, model, "-q")
    after = kernsolve.predict(y, X, loaded, "-q")
    for got, expected in zip(after, before):      # labels, (accuracy, mse, scc), values
        np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))
    # saving the loaded model writes the same file
    kernsolve.save_model(str(tmp_path / "again"), loaded)
    assert (tmp_path / "again").read_bytes() == (tmp_path / "model").read_bytes()


# --------------------------------------------------------------------------
# (c) thread count does not change the model

_REFERENCE = {}


def _model_bytes(model, tmp_path, tag):
    path = tmp_path / tag
    kernsolve.save_model(str(path), model)
    return path.read_bytes()


def _reference(heart, tmp_path, spec, name, s):
    key = (name, s)
    if key not in _REFERENCE:
        _REFERENCE[key] = _model_bytes(_train(heart, spec, name, s, n_jobs=1), tmp_path, "ref")
    return _REFERENCE[key]


@pytest.mark.parametrize("spec, name, s", CASES, ids=IDS)
def test_one_and_two_threads_give_the_same_model_file(heart, tmp_path, spec, name, s):
    one = _reference(heart, tmp_path, spec, name, s)
    two = _model_bytes(_train(heart, spec, name, s, n_jobs=2), tmp_path, "two")
    assert two == one


# --------------------------------------------------------------------------
# (d) Ctrl-C through the progress hook

class _Interrupting(Progress):
    """The progress line of a run the user interrupts at its first report."""

    calls = 0

    def __call__(self, state):
        type(self).calls += 1
        raise KeyboardInterrupt


@pytest.fixture
def interrupt_at_first_report(monkeypatch):
    """Every kernsolve module's progress line interrupts; the compiled loops
    report at every clock check."""
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("kernsolve.") and \
                getattr(module, "Progress", None) is Progress:
            monkeypatch.setattr(module, "Progress", _Interrupting)
    old = [(m, m._get_tuning()) for m in (_smo, _sbp, _baselines)]
    for m, _ in old:
        m._set_tuning(poll_seconds=0.0)
    _Interrupting.calls = 0
    yield _Interrupting
    for m, tuning in old:
        m._set_tuning(poll_seconds=tuning["poll_seconds"])


def _epoch_hook():
    def hook(epoch, alpha):
        _Interrupting.calls += 1
        raise KeyboardInterrupt
    return hook


@pytest.mark.parametrize("spec, name, s", CASES, ids=IDS)
def test_interrupt_through_progress_stops_cleanly(heart, tmp_path, capsys, spec, name, s,
                                                  interrupt_at_first_report):
    reference = _reference(heart, tmp_path, spec, name, s)
    y, X = heart
    tokens = _tokens(spec, name, s, quiet=False, **_short(spec, name))
    with pytest.raises(KeyboardInterrupt):
        if spec.train is not None and \
                "callback" in inspect.signature(spec.train.resolve()).parameters:
            # a whole-model trainer without a progress line: its epoch hook
            param = kernsolve.parse_options(tokens)
            spec.train(y, X, param, n_jobs=1, callback=_epoch_hook())
        else:
            kernsolve.train(y, X, tokens, n_jobs=1)
    assert interrupt_at_first_report.calls == 1
    capsys.readouterr()
    # nothing left behind: the next run is the uninterrupted one, bit for bit
    again = kernsolve.train(y, X, _tokens(spec, name, s, **_short(spec, name)), n_jobs=1)
    assert _model_bytes(again, tmp_path, "again") == reference


# --------------------------------------------------------------------------
# the documentation's tables list what the registry declares

def test_python_api_doc_lists_every_solver_and_its_options():
    import os
    import re
    doc = os.path.join(os.path.dirname(__file__), "..", "doc", "python-api.md")
    text = open(doc, encoding="utf-8").read()
    solver_row = next(line for line in text.splitlines() if line.startswith("| `--solver NAME`"))
    listed = re.findall(r"`([a-z-]+)`", solver_row.split("|")[4])
    assert listed == [n for spec in REGISTRY for n in spec.names]
    for spec in REGISTRY:
        if not spec.options:
            continue
        head = "| " + ", ".join(f"`{n}`" for n in spec.names) + " |"
        row = next(line for line in text.splitlines() if line.startswith(head))
        assert set(re.findall(r"`--([a-z0-9-]+)`", row)) == set(spec.options), head
