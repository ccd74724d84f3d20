"""LIBSVM's letters that a solver does not use are refused; mapped ones are printed.

Derived from the solver specs (``SolverSpec.ignored``/``mapped``), never from
a list kept here:

* every solver x every letter its spec says it ignores: refused before any
  data is read, the message naming the option and the solver;
* the oracle that the specs are complete: every other letter, changed from
  its default, changes the trained model (its decision values on the
  training rows), or is refused by a message naming it;
* every mapped letter: the training summary says where the setting came
  from, with the value the closed form gives (lambda = 1/(C n)), and -q
  silences it.
"""
import contextlib
import io
import re

import numpy as np
import pytest

import kernsolve
from kernsolve.cli import train as cli_train
from kernsolve.solvers import REGISTRY

# A value other than the default, per letter; the SVM type where the letter acts.
CHANGED = {"c": ("7", 0), "e": ("0.3", 0), "h": ("0", 0), "p": ("0.6", 3), "n": ("0.2", 2)}
ALL_NAMES = [name for spec in REGISTRY for name in spec.names]


def _spec(name):
    return next(spec for spec in REGISTRY if name in spec.names)


def _heart():
    y, X = kernsolve.read_problem(kernsolve.dataset_path("heart_scale"))
    return y, X


def _options(name, letter, value, svm_type):
    return f"-q -s {svm_type} --solver {name} --threads 1 -{letter} {value}"


IGNORED = [(name, letter) for name in ALL_NAMES for letter in _spec(name).ignored(name)]


def test_the_specs_declare_ignored_and_mapped_letters():
    # the cases the issue names: EigenPro's -c, DSG's and the baselines' mapped -c
    assert "c" in _spec("eigenpro").ignored("eigenpro")
    assert _spec("dsg").mapped("dsg")["c"] == "lambda = 1/(C n)"
    assert "c" in _spec("sdca").mapped("sdca") and "c" in _spec("perceptron").ignored("perceptron")
    assert not _spec("smo").ignored("smo")           # SMO is LIBSVM: it uses every letter
    assert set(CHANGED) >= {letter for _, letter in IGNORED}


@pytest.mark.parametrize("name, letter", IGNORED)
def test_an_ignored_letter_is_refused_naming_option_and_solver(name, letter):
    value, _ = CHANGED[letter]
    svm_type = 3 if letter == "p" else 0
    y, X = _heart()
    with pytest.raises(ValueError) as err:
        kernsolve.train(y, X, _options(name, letter, value, svm_type))
    message = str(err.value)
    assert message.startswith(f"-{letter} {value}: --solver {name} does not use ")
    assert "\n" not in message
    # the command line says the same, on one line, before reading the data file
    out, errs = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(errs):
        code = cli_train.cli(["--solver", name, f"-{letter}", value, "-s", str(svm_type),
                              "no-such-file"])
    assert code == 1
    assert f"-{letter} {value}: --solver {name} does not use " in errs.getvalue()


def _used_cases():
    """(name, letter, svm_type) of every letter a solver's spec does not ignore,
    with an SVM type the solver trains where LIBSVM's letter acts."""
    out = []
    for name in ALL_NAMES:
        spec = _spec(name)
        for letter, (value, svm_type) in CHANGED.items():
            if letter in spec.ignored(name):
                continue
            if letter == "h" and name == "smo":
                continue    # shrinking: a speed heuristic, LIBSVM's model either way
            types = [svm_type] if letter != "n" else [1, 2, 4]     # where nu acts
            types = [t for t in types if t in spec.svm_types]
            if letter == "n" and name == "sbp":
                types = [0]           # SBP's slack budget, given for C-SVC too
            if types:
                out.append((name, letter, types[0]))
    return out


@pytest.mark.parametrize("name, letter, svm_type", _used_cases())
def test_every_letter_not_declared_ignored_changes_the_model(name, letter, svm_type):
    """Oracle of completeness: a letter the spec does not list as ignored is
    used: the decision values differ from the default's (or it is refused)."""
    y, X = _heart()
    if svm_type == 2:
        y = np.ones_like(y)
    value, _ = CHANGED[letter]
    base = f"-q -s {svm_type} --solver {name} --threads 1"
    extra = " --epochs 1" if name in ("eigenpro", "kernel-sgd") else ""
    try:
        changed = kernsolve.train(y, X, f"{base} -{letter} {value}{extra}")
    except ValueError as exc:
        assert str(exc).startswith(f"-{letter}"), exc
        return
    default = kernsolve.train(y, X, base + extra)
    a = kernsolve.predict(None, X, default, "-q")[2]
    b = kernsolve.predict(None, X, changed, "-q")[2]
    assert not np.array_equal(np.asarray(a), np.asarray(b)), \
        f"-{letter} {value} changes nothing for --solver {name}: declare it in its spec"


MAPPED = [(name, letter) for name in ALL_NAMES for letter in _spec(name).mapped(name)]


@pytest.mark.parametrize("name, letter", MAPPED)
def test_a_mapped_letter_is_printed_in_the_summary(name, letter, tmp_path):
    import lzma
    data = tmp_path / "heart"
    with lzma.open(kernsolve.dataset_path("heart_scale"), "rb") as f:
        data.write_bytes(f.read())
    svm_type = 2 if letter == "n" else 0
    value = "0.2" if letter == "n" else "4"
    argv = ["--solver", name, f"-{letter}", value, "-s", str(svm_type), "--threads", "1",
            str(data), str(tmp_path / "m")]
    rule = _spec(name).mapped(name)[letter]
    printed = {}
    for quiet in (False, True):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            assert cli_train.cli((["-q"] if quiet else []) + argv) == 0, err.getvalue()
        printed[quiet] = out.getvalue() + err.getvalue()
    note = f"(from -{letter} {value}: {rule}"
    assert note not in printed[True]
    lines = [line for line in printed[False].splitlines() if note in line]
    assert lines, printed[False]
    if letter == "c":                       # two classes: one problem of all 270 rows
        assert f"{note}, n = 270)" in lines[0], lines[0]
    if rule == "lambda = 1/(C n)":          # the printed lambda is the closed form's
        lam = float(re.search(r"lambda = ([0-9.e+-]+) \(from", lines[0]).group(1))
        assert lam == pytest.approx(1.0 / (float(value) * 270), rel=1e-5)


def test_dsg_refuses_c_with_lambda_naming_both():
    y, X = _heart()
    with pytest.raises(ValueError, match=r"^-c 4: --solver dsg takes lambda from --lambda "
                                         r"when it is given; give -c \(lambda = 1/\(C n\)\) "
                                         r"or --lambda$"):
        kernsolve.train(y, X, "-q --solver dsg -c 4 --lambda 0.01")
    kernsolve.train(y, X, "-q --solver dsg --lambda 0.01")     # alone: fine


def test_the_docs_table_is_the_specs():
    """doc/training.md's table of letters per solver says what the specs say."""
    import pathlib
    text = (pathlib.Path(__file__).parent.parent / "doc" / "training.md").read_text()
    table = text.split("<!-- solver-letters -->\n", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    seen = set()
    for row in table:
        names_cell, refused_cell, maps_cell = [c.strip() for c in row.strip("|").split("|")]
        for name in re.findall(r"`([a-z-]+)`", names_cell):
            seen.add(name)
            spec = _spec(name)
            assert set(re.findall(r"`-(\w)`", refused_cell)) == set(spec.ignored(name)), name
            maps = dict(re.findall(r"`-(\w)`: ([^;]+)", maps_cell))
            assert {k: v.strip() for k, v in maps.items()} == spec.mapped(name), name
    assert seen == set(ALL_NAMES)
