"""``python -m kernsolve --docs``: a place that exists, for a checkout and an installed copy.

Oracles: the file system (the path printed exists), MANIFEST.in (the sdist
named for an installed copy does carry doc/), and pydoc, which the message
names for an installed copy (it documents the package).
"""
import contextlib
import io
import os
import pydoc
import re

from kernsolve import __main__ as main_module

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main_module.main(list(args))
    return code, out.getvalue(), err.getvalue()


def test_docs_in_a_checkout_names_an_existing_index():
    code, out, err = _run("--docs")
    assert (code, err) == (0, "")
    path = re.search(r"documentation: (\S+index\.md)", out).group(1)
    assert os.path.isfile(path)


def test_docs_of_an_installed_copy_points_to_what_it_has(monkeypatch):
    real = os.path.isfile
    monkeypatch.setattr(os.path, "isfile", lambda p: False if p.endswith(
        os.path.join("doc", "index.md")) else real(p))
    code, out, _ = _run("--docs")
    assert code == 0 and "python -m pydoc kernsolve" in out and "under doc/" in out
    manifest = open(os.path.join(ROOT, "MANIFEST.in"), encoding="utf-8").read()
    assert re.search(r"^graft doc$", manifest, re.M)           # the sdist has the pages
    assert "kernsolve.train" in pydoc.render_doc("kernsolve", renderer=pydoc.plaintext)


def test_help_names_no_path_an_installed_copy_lacks():
    code, out, _ = _run("--help")
    assert code == 0 and "--docs" in out and "doc/" not in out
