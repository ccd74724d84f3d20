"""Docs that cannot drift: their Python runs, and the options they name exist.

* Every fenced block marked ```python in README.md and doc/*.md runs: the
  blocks of a page in order, in one fresh namespace per page, in a scratch
  folder that holds the data files the pages name (``a9a``, ``a9a.t``,
  ``fashion-mnist.scale.xz``, ...: the first rows of the shared data sets of
  ``../shared/data``; the bundled ``kernsolve.dataset_path("heart_scale")``
  needs nothing). A block that must not run (a signature, output, a shell
  session, a cluster address) takes another fence info: ```text, ```console.
* Every option the docs name -- ``--name`` and ``-x`` in code spans, and the
  options of kernsolve command lines in code blocks -- is one that kernsolve's
  option parsers accept. The oracle is the parsers themselves: each option is
  handed to the command that would take it (``kernsolve-train``'s parser, which
  is the library's ``_params`` grammar plus the command's own options, and the
  parsers of ``kernsolve-predict``, ``-scale``, ``-grid``, ``python -m
  kernsolve``) and must not come back as ``unknown option``. The few words
  that look like options but belong to other programs or to formulas are
  listed in NOT_KERNSOLVE with the reason.

The sample pages at the end show both checks failing on a broken page.
"""
import contextlib
import glob
import importlib
import io
import lzma
import os
import re
import shlex

import pytest

from conftest import SHARED_DATA

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "doc", "*.md")))
if not os.path.isdir(os.path.join(ROOT, "doc")):        # tests run from an installed copy
    pytest.skip("doc/ not found beside tests/", allow_module_level=True)

# Data files the pages name, as the first rows of the shared data sets (the
# snippets run as written, on fewer rows, so the suite stays fast).
DATA_FILES = {
    "a9a": ("a9a", 600, False),
    "a9a.t": ("a9a.t", 300, False),
    "big.svm": ("a9a", 600, False),
    "fashion-mnist.scale.xz": ("fashion-mnist.scale", 300, True),
    "fashion-mnist.scale.t.xz": ("fashion-mnist.scale.t", 200, True),
}

# Words in code spans that look like options but are not kernsolve's.
NOT_KERNSOLVE = {
    "-rho": "a formula (the intercept of a decision function)",
    "-obj": "a formula (smo.md)",
    "-gbar": "a formula (dsg.md)",
    "-k": "eigenpro.md names it as the letter that is NOT available",
    "--name": "placeholder: a solver's own options",
    "--NAME": "placeholder: a solver's own options",
    "-ffast-math": "a compiler flag",
    "-fopenmp": "a compiler flag",
    "-g0": "a compiler flag (install.md: release builds)",
    "-S": "an option of `readelf` (install.md)",
    "--nthreads": "an option of `dask worker`",
    "--nworkers": "an option of `dask worker`",
    "--kernsolve-path": "an option of benchmarks/bench_*.py",
    "--strict": "an option of `mkdocs build` (index.md)",
    "--parallel": "an option of `setup.py build_ext` (install.md)",
    "-j": "an option of `setup.py build_ext` (install.md)",
    "--out-dir": "an option of the examples (examples/_output.py)",
}
# Commands whose command lines are not kernsolve's (their options are theirs).
FOREIGN_COMMANDS = ("pip", "pytest", "mkdocs", "python", "python3", "dask", "git", "nice",
                    "cc", "gcc", "build_ext", "xz", "gzip", "bzip2", "head", "export", "cd")
KERNSOLVE_COMMANDS = {"kernsolve-train": "train", "kernsolve-predict": "predict",
                      "kernsolve-scale": "scale", "kernsolve-grid": "grid"}

_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)
_SPAN = re.compile(r"`([^`\n]+)`")
_OPTION = re.compile(r"^(--?[A-Za-z][A-Za-z0-9-]*)(=\S*)?$")


def fenced_blocks(text):
    """(line number, info, code) of each fenced block."""
    return [(text.count("\n", 0, m.start()) + 1, m.group(1).strip(), m.group(2))
            for m in _FENCE.finditer(text)]


def python_blocks(text):
    return [(line, code) for line, info, code in fenced_blocks(text)
            if info.split()[:1] == ["python"]]


def rel(path):
    return os.path.relpath(path, ROOT)


# --------------------------------------------------------------------------
# the Python blocks run
# --------------------------------------------------------------------------

def make_data_files(folder, needed):
    for name in needed:
        source, rows, compressed = DATA_FILES[name]
        path = os.path.join(SHARED_DATA, source + ".xz")
        if not os.path.exists(path):
            pytest.skip(f"shared dataset {source} not found at {path}")
        lines = []
        with lzma.open(path, "rb") as f:
            for line in f:
                lines.append(line)
                if len(lines) >= rows:
                    break
        opener = lzma.open if compressed else open
        with opener(os.path.join(folder, name), "wb") as f:
            f.write(b"".join(lines))


def run_page(path, folder):
    """Run the page's python blocks in order in one namespace; raise with the
    page and line of the block that failed."""
    text = open(path, encoding="utf-8").read()
    needed = [name for name in DATA_FILES if re.search(r"[\"']" + re.escape(name) + r"[\"']",
                                                       text)]
    make_data_files(folder, needed)
    namespace = {"__name__": "__doc_snippet__"}
    old = os.getcwd()
    os.chdir(folder)
    try:
        for line, code in python_blocks(text):
            where = f"{rel(path)}:{line}"
            out = io.StringIO()
            try:
                with contextlib.redirect_stdout(out):
                    exec(compile(code, where, "exec"), namespace)
            except Exception as exc:
                raise AssertionError(f"the python block at {where} fails: "
                                     f"{type(exc).__name__}: {exc}") from exc
    finally:
        os.chdir(old)


PAGES_WITH_PYTHON = [p for p in PAGES if python_blocks(open(p, encoding="utf-8").read())]


@pytest.mark.parametrize("path", PAGES_WITH_PYTHON, ids=rel)
def test_python_blocks_run(path, tmp_path):
    run_page(path, str(tmp_path))


# --------------------------------------------------------------------------
# every option named is one the parsers accept
# --------------------------------------------------------------------------

def _probe(tool, option, folder):
    """What the command's parser says about ``option`` (with a value, and file
    names that do not exist): None if it knows it, else the message."""
    missing = os.path.join(folder, "no-such-file")
    module = importlib.import_module(f"kernsolve.cli.{tool}")
    # a solver's option given to another solver is "not an option of solver
    # 'smo' (it belongs to sbp)": known, only not there
    files = [missing] * {"train": 1, "predict": 3, "scale": 1, "grid": 1}[tool]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        module.cli([option, "1"] + files)
    first = err.getvalue().splitlines()[0] if err.getvalue() else ""
    return first if "unknown option" in first else None


_known = {}


def known(tool, option, folder):
    key = (tool, re.sub(r"^-w.*", "-w", option))     # -w1, -w-1, -wi: one option
    if key not in _known:
        _known[key] = _probe(tool, "-w1" if key[1] == "-w" else option, folder) is None
    return _known[key]


def known_anywhere(option, folder):
    if option in ("--help", "-h", "--version"):
        return True
    return any(known(tool, option, folder) for tool in KERNSOLVE_COMMANDS.values())


def _options_of(words):
    return [m.group(1) for m in map(_OPTION.match, words) if m]


def named_options(text):
    """(line, command or None, option) for every option the page names."""
    found = []
    blocks = fenced_blocks(text)
    # command lines: fenced blocks other than python, and indented blocks
    code_lines = []
    for line, info, code in blocks:
        if info.split()[:1] != ["python"]:
            code_lines += [(line + 1 + i, s) for i, s in enumerate(code.split("\n"))]
    blanked = _FENCE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    for i, s in enumerate(blanked.split("\n")):
        if re.match(r"( {4}|\t)\S", s):
            code_lines.append((i + 1, s))
    for line, s in code_lines:
        s = s.strip()
        s = re.sub(r"^\$ ", "", s)
        try:
            words = shlex.split(s, comments=True)
        except ValueError:
            continue
        if words and words[0] in KERNSOLVE_COMMANDS:
            tool = KERNSOLVE_COMMANDS[words[0]]
            found += [(line, tool, o) for o in _options_of(words[1:])]
        elif words[:3] == ["python", "-m", "kernsolve"] or words[:3] == ["python3", "-m",
                                                                          "kernsolve"]:
            found += [(line, "kernsolve", o) for o in _options_of(words[3:])]
        elif words[:2] in (["python", "-m"], ["python3", "-m"]) and len(words) > 2 and \
                words[2].startswith("kernsolve.cli."):
            tool = words[2].rsplit(".", 1)[1]
            found += [(line, tool, o) for o in _options_of(words[3:])]
    # code spans in the prose
    prose = blanked
    for m in _SPAN.finditer(prose):
        line = prose.count("\n", 0, m.start()) + 1
        words = m.group(1).split()
        if not words or words[0] in FOREIGN_COMMANDS:
            continue
        if words[0] in KERNSOLVE_COMMANDS:
            found += [(line, KERNSOLVE_COMMANDS[words[0]], o) for o in _options_of(words[1:])]
            continue
        found += [(line, None, o) for o in _options_of(words)]
    return found


def unknown_options(path, folder):
    text = open(path, encoding="utf-8").read()
    bad = []
    for line, tool, option in named_options(text):
        if option in NOT_KERNSOLVE or option in ("--help", "-h", "--version"):
            continue
        if tool == "kernsolve":
            ok = False            # python -m kernsolve takes only --help and --version
        elif tool is not None:
            ok = known(tool, option, folder)
        else:
            ok = known_anywhere(option, folder)
        if not ok:
            where = f"kernsolve-{tool}" if tool and tool != "kernsolve" else (
                "python -m kernsolve" if tool else "any kernsolve parser")
            bad.append(f"{rel(path)}:{line}: {option} (unknown to {where})")
    return bad


@pytest.mark.parametrize("path", PAGES, ids=rel)
def test_every_option_named_is_known_to_the_parsers(path, tmp_path):
    bad = unknown_options(path, str(tmp_path))
    assert not bad, "options the parsers do not know:\n" + "\n".join(bad)


def test_the_option_check_sees_the_docs():
    # the scanner finds the options of command lines and of code spans
    everything = set()
    for path in PAGES:
        everything |= {(tool, o) for _, tool, o in named_options(open(path).read())}
    for expected in [("train", "--libsvm-folds"), (None, "--eigen-directions"),
                     ("grid", "-log2c"), ("scale", "-l"), ("predict", "-b")]:
        assert expected in everything, expected


# --------------------------------------------------------------------------
# a broken sample page fails both checks
# --------------------------------------------------------------------------

SAMPLE = '''# A sample page

```python
import kernsolve
y, X = kernsolve.read_problem(kernsolve.dataset_path("heart_scale"))
model = kernsolve.train(y, X, "-c 4 -q")
```

Train with `--solver dsg --block-size 64`, or

    kernsolve-train --iterations 5 -c 2 data.txt
    kernsolve-predict -c 2 test.txt model out

```python
labels = kernsolve.predict(y, X, modle)[0]
```

```text
kernsolve.read_problem(source, n_features=None)   # a signature: not run
```
'''


def test_a_broken_snippet_fails(tmp_path):
    page = tmp_path / "sample.md"
    page.write_text(SAMPLE)
    with pytest.raises(AssertionError, match=r"the python block at .*sample\.md:14 fails: "
                                             r"NameError: name 'modle' is not defined"):
        run_page(str(page), str(tmp_path))
    page.write_text(SAMPLE.replace("modle", "model"))
    run_page(str(page), str(tmp_path))          # fixed: it runs


def test_an_unknown_option_fails(tmp_path):
    page = tmp_path / "sample.md"
    page.write_text(SAMPLE)
    bad = sorted(b.split(": ", 1)[1] for b in unknown_options(str(page), str(tmp_path)))
    assert bad == ["--block-size (unknown to any kernsolve parser)",
                   "-c (unknown to kernsolve-predict)"]
    # --iterations is an option of the baselines' solvers: known to kernsolve-train
    assert known("train", "--iterations", str(tmp_path))
    assert not known("train", "--no-such-option", str(tmp_path))
