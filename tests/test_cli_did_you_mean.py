"""An unknown option: "did you mean" the nearest known one, and the error in sight.

Oracle: difflib's close matches (``difflib.get_close_matches``, cutoff 0.75)
against the options each command's ``--help`` text names, computed here from
the usage the command prints; the error is the first of two lines, the second
a pointer to ``--help``.
"""
import contextlib
import difflib
import importlib
import io
import re

import pytest

from kernsolve import __main__ as main_module

CASES = [
    ("train", "--epoch", "--epochs"), ("train", "--strem", "--stream"),
    ("train", "--lamda", "--lambda"), ("train", "--thread", "--threads"),
    ("train", "--centres", "--centers"), ("predict", "-bb", "-b"),
    ("scale", "-ll", "-l"), ("grid", "--solvr", "--solver"), ("grid", "-log2cc", "-log2c"),
    ("train", "-z", None), ("train", "--frobnicate", None),
]


def _run(tool, *args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        if tool == "main":
            code = main_module.main(list(args))
        else:
            code = importlib.import_module(f"kernsolve.cli.{tool}").cli(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("tool, typo, meant", CASES)
def test_unknown_option_suggests_the_nearest(tool, typo, meant, tmp_path):
    _, usage, _ = _run(tool, "--help")
    known = set(re.findall(r"(?<![\w(-])(--?[a-zA-Z][\w-]*)", usage))
    oracle = difflib.get_close_matches(typo, sorted(known), n=1, cutoff=0.75)
    assert oracle == ([meant] if meant else [])
    code, out, err = _run(tool, typo, "1", str(tmp_path / "data"))
    suffix = f" (did you mean {meant}?)" if meant else ""
    assert (code, out) == (1, "")
    assert err.splitlines() == [f"kernsolve-{tool}: unknown option: {typo}{suffix}",
                                f"Run 'kernsolve-{tool} --help' for the options."]


def test_python_m_kernsolve_names_an_unknown_option():
    code, out, err = _run("main", "--vesion")
    assert (code, out) == (1, "")
    assert err.splitlines() == ["kernsolve: unknown option: --vesion (did you mean --version?)",
                                "Run 'python -m kernsolve --help' for the options."]
