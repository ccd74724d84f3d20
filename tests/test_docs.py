"""The documentation builds, and its links and navigation are complete.

* ``mkdocs build --strict`` (the documented command, doc/index.md) succeeds:
  strict mode turns MkDocs' warnings -- broken links between pages, missing
  anchors, pages left out of the nav -- into a failed build.
* Every ``doc/*.md`` page is in the nav of ``mkdocs.yml`` and every nav entry
  exists (a page added without a nav entry fails here with its name).
* Every relative link in ``doc/*.md`` and ``README.md`` points at an existing
  file (MkDocs does not read the README, and a link out of ``doc/`` is only a
  warning there).
"""
import glob
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "doc")
CONFIG = os.path.join(ROOT, "mkdocs.yml")

if not os.path.exists(CONFIG):          # e.g. tests run from an installed copy
    pytest.skip("mkdocs.yml not found beside tests/", allow_module_level=True)


def doc_pages():
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(DOC, "*.md")))


def nav_pages():
    """The .md files named in the nav of mkdocs.yml (read without a YAML parser)."""
    text = open(CONFIG, encoding="utf-8").read()
    nav = text[text.index("\nnav:"):]
    return re.findall(r"^\s*-\s*(?:[^:\n]+:\s*)?([\w./-]+\.md)\s*$", nav, re.M)


_FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"""\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+("[^"]*"|'[^']*'))?\s*\)""")
_REF = re.compile(r"^\s*\[[^\]\n]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)


def relative_links(path):
    """(line number, target) of every relative link outside code."""
    text = open(path, encoding="utf-8").read()
    # blank out code, keeping line numbers
    for pattern in (_FENCE, _CODE):
        text = pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    text = "\n".join("" if re.match(r"( {4}|\t)", line) and not re.match(r"\s*[-*\d]", line)
                     else line for line in text.split("\n"))
    out = []
    for pattern in (_LINK, _REF):
        for m in pattern.finditer(text):
            target = m.group(1)
            if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
                continue                 # http:, mailto:, an anchor on the same page
            out.append((text.count("\n", 0, m.start()) + 1, target))
    return out


def test_every_page_is_in_the_nav_and_every_nav_entry_exists():
    pages, nav = doc_pages(), nav_pages()
    assert nav, "mkdocs.yml has no nav entries"
    missing = [p for p in pages if p not in nav]
    assert not missing, (f"doc pages not in the nav of mkdocs.yml: {missing}; add them "
                         "under nav: so the site links them")
    absent = [p for p in nav if not os.path.exists(os.path.join(DOC, p))]
    assert not absent, f"mkdocs.yml names pages that do not exist in doc/: {absent}"
    assert len(nav) == len(set(nav)), "a page appears twice in the nav"


def test_every_page_is_linked_from_the_index():
    index = open(os.path.join(DOC, "index.md"), encoding="utf-8").read()
    unlinked = [p for p in doc_pages() if p != "index.md" and f"]({p})" not in index]
    assert not unlinked, f"doc/index.md does not link {unlinked}"


@pytest.mark.parametrize("path", [os.path.join(ROOT, "README.md")]
                         + sorted(glob.glob(os.path.join(DOC, "*.md"))),
                         ids=lambda p: os.path.relpath(p, ROOT))
def test_relative_links_point_at_existing_files(path):
    broken = []
    for line, target in relative_links(path):
        file_part = target.split("#", 1)[0].split("?", 1)[0]
        if not file_part:
            continue
        resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
        if not os.path.exists(resolved):
            broken.append(f"{os.path.relpath(path, ROOT)}:{line}: {target}")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_link_finder_on_a_sample(tmp_path):
    """The link scanner itself: links found, code and URLs skipped."""
    sample = tmp_path / "s.md"
    sample.write_text("See [a](a.md) and [b](sub/b.md#x 'title').\n"
                      "`[not](code.md)` and\n\n    [indented](code2.md)\n\n"
                      "```\n[fenced](code3.md)\n```\n"
                      "[web](https://example.org) [here](#top)\n[ref]: c.md\n")
    assert relative_links(str(sample)) == [(1, "a.md"), (1, "sub/b.md#x"), (10, "c.md")]


def test_mkdocs_build_strict(tmp_path):
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (it is in the "
                        "'test' extra: pip install '.[test]')")
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "--config-file", CONFIG, "--site-dir", str(site)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for page in doc_pages():
        name = "index.html" if page == "index.md" else os.path.join(page[:-3], "index.html")
        assert (site / name).exists(), f"{page} was not built"
