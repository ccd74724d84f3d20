"""Every measured number in README.md and doc/*.md carries its command (issue 31 item 5).

A paragraph (or a table row) that states a measurement, a percentage, a time
("N s", "N ms"), a speed-up ("N.Nx", "N times") or an amount of memory ("N MB"),
must cite where it was measured, in the same paragraph:

* a row of ``benchmarks/CURRENT.md`` (``CURRENT.md#<id>``, an id the table has;
  the row gives the command, date, commit, load and machine), or
* a dated section of ``benchmarks/history/`` together with the command that
  measured it, a script of ``benchmarks/`` that exists.

Numbers that are not measurements (defaults, formulas, option values, sizes,
byte layouts) are mostly out of the pattern's reach: code spans, fenced and
indented code blocks and option tables are not read.  The few the pattern
still catches are in ``ALLOWED``, each with its reason.
"""
import glob
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "benchmarks")
if not os.path.isdir(BENCH):                       # tests run from an installed copy
    pytest.skip("benchmarks/ not found beside tests/", allow_module_level=True)

from test_bench_panel import CURRENT, current_rows  # noqa: E402  (the one reader of the table)

PAGES = [os.path.join(ROOT, "README.md"), *sorted(glob.glob(os.path.join(ROOT, "doc", "*.md")))]

_NUMBER = r"(?<![\w.-])\d[\d,]*(?:\.\d+)?"
MEASURED = re.compile(
    _NUMBER + r"(?:"
    r"\s?%"                                             # an error, an accuracy, a share
    r"|\s?(?:s|ms|us|µs|seconds?|minutes?|min|hours?)(?![\w-])"   # a time
    r"|\s?[x×](?![\w-])|\s(?:times)\b"                  # a speed-up
    r"|\s?(?:[kKMGT]i?B|bytes? a row)(?![\w-])"         # memory
    r")")

CITES_ROW = re.compile(r"CURRENT\.md#([a-z0-9-]+)")
CITES_HISTORY = re.compile(r"history/(?:RESULTS|\d{4}-\d\d-\d\d-[\w-]+)\.md")
CITES_SCRIPT = re.compile(r"benchmarks/(\w+\.py)")

# (page, a piece of the paragraph, why its numbers are not measurements)
ALLOWED = [
]

_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
_SPAN = re.compile(r"`[^`\n]*`")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")


def paragraphs(text):
    """(first line number, text) of every paragraph and table row of a Markdown
    page, without fenced or indented code blocks."""
    text = _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    found, block, start, in_list = [], [], 0, False

    def close():
        if block:
            found.append((start, " ".join(block)))
        block.clear()

    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            close()
            continue
        if line.lstrip().startswith("|"):               # a table row stands alone
            close()
            found.append((number, line))
            in_list = False
            continue
        if not block and line.startswith(("    ", "\t")) and not in_list:
            continue                                    # an indented code block
        if not block:
            start = number
            in_list = bool(re.match(r"\s*([*+-]|\d+\.)\s", line)) or (
                in_list and line.startswith("  "))
        block.append(line)
    close()
    return found


def prose(paragraph):
    """The paragraph without its code spans and link targets (commands, options
    and addresses are not measurements)."""
    return _LINK_TARGET.sub("]", _SPAN.sub("``", paragraph))


def _is_option_table_row(row):
    """A row of a table of options or defaults: its first cell is an option."""
    first = row.strip().strip("|").split("|", 1)[0].strip()
    return re.match(r"`?-{1,2}\w", first) is not None


def cites(paragraph, rows, scripts):
    """Whether the paragraph cites a row of CURRENT.md, or a history section
    together with the script of benchmarks/ that measured it."""
    if any(r in rows for r in CITES_ROW.findall(paragraph)):
        return True
    return bool(CITES_HISTORY.search(paragraph)) and any(
        s in scripts for s in CITES_SCRIPT.findall(paragraph))


def uncited(text, rows, scripts, allowed=()):
    """(line, numbers, paragraph) of every paragraph stating a measured number
    without a citation."""
    bad = []
    for number, para in paragraphs(text):
        if para.lstrip().startswith("|") and _is_option_table_row(para):
            continue
        found = MEASURED.findall(prose(para))
        if found and not any(piece in para for piece in allowed) \
                and not cites(para, rows, scripts):
            bad.append((number, found, para))
    return bad


def _context():
    rows = current_rows(open(CURRENT, encoding="utf-8").read())
    scripts = {os.path.basename(p) for p in glob.glob(os.path.join(BENCH, "*.py"))}
    return rows, scripts


if __name__ == "__main__":                      # the audit list, page by page
    rows, scripts = _context()
    total = 0
    for page in PAGES:
        for number, found, para in uncited(open(page, encoding="utf-8").read(), rows, scripts,
                                           [piece for pg, piece, _ in ALLOWED
                                            if pg == os.path.relpath(page, ROOT)]):
            total += 1
            print(f"{os.path.relpath(page, ROOT)}:{number}: {found}\n    {para[:300]}")
    print(total)
