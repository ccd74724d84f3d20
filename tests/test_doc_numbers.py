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
    r"|[x×](?![\w-])|\s(?:times)\b"                     # a speed-up (not "n x d")
    r"|\s?(?:[kKMGT]i?B|bytes? a row)(?![\w-])"         # memory
    r")")

CITES_ROW = re.compile(r"CURRENT\.md#([a-z0-9-]+)")
CITES_HISTORY = re.compile(r"history/(?:RESULTS|\d{4}-\d\d-\d\d-[\w-]+)\.md")
CITES_SCRIPT = re.compile(r"benchmarks/(\w+\.py)")

# (page, the words that hold the numbers, why they are not measurements); only
# those words are passed over, the rest of their paragraph is still read
ALLOWED = [
    ("doc/baselines.md", "within 0.5% after 20 epochs",
     "a bound tests/test_baselines_train.py asserts"),
    ("doc/cli.md", "once training has run for 2 seconds", "the progress line's start"),
    ("doc/cli.md", "SMO about every 2 s;", "the progress callback's interval"),
    ("doc/cli.md", "for 2 seconds (see above)", "the progress line's start"),
    ("doc/training.md", "SMO about every 2 seconds", "the progress callback's interval"),
    ("doc/smo.md", "about every 2 s of wall time", "the progress callback's interval"),
    ("doc/cli.md", "as LIBSVM 3.2x and later", "a version of LIBSVM"),
    ("doc/cli.md", "at most 32 MB of them", "the prediction block's bound"),
    ("doc/cli.md", "the 404 MB the full matrix would take", "16,000 x 3,160 doubles"),
    ("doc/python-api.md", "`kernsolve._predict.BLOCK_BYTES` (32 MB)", "a constant of the code"),
    ("doc/cluster.md", "at least 64 KiB", "read_partitions' lower bound"),
    ("doc/data-format.md", "blocks of up to 16 MB, and a quarter of the file for files under "
     "64 MB", "the reader's block sizes"),
    ("doc/dsg.md", "chunks of at most about 1 MB", "a constant of the code"),
    ("doc/dsg.md", "(windows of 64 MB)", "--stream's default window"),
    ("doc/kernels.md", "at least 15 % nonzeros", "the density rule's threshold"),
    ("doc/kernels.md", "the 15 % rule", "the same threshold"),
    ("doc/kernels.md", "at most 64 MB per 64-bit word", "the bit-set cache's bound"),
    ("doc/smo.md", "at most 64 MB a word", "the bit-set cache's bound"),
    ("doc/smo.md", "a log of 2 MB", "a buffer's size"),
    ("doc/install.md", "they would add about 15 MB", "the size of the generated C files"),
    ("doc/install.md", "(measured every 20 ms", "the team's load-watch interval"),
    ("doc/threads.md", "spins for at most 200 us", "the team's spin bound"),
    ("doc/threads.md", "(every   20 ms", "the team's load-watch interval"),
    ("doc/eigenpro.md", "p = 15000 is 1.8 GB", "2 n p bytes"),
    ("doc/eigenpro.md", "2.4 GB plus the reader's CSR, about 3.2 GB; in single precision 1.2 GB "
     "of blocks, about 2 GB; p = 10000 in single precision with `-m 2500`, about 4 GB",
     "the formula above worked out (8 n d, 8 p^2, 8 n p bytes)"),
    ("doc/eigenpro.md", "`--centers 30000` on 24 GB", "an example machine's memory"),
    ("doc/cluster.md", "a step moves 1.2 MB a worker and a hop, against the 376 MB of "
     "Fashion-MNIST's rows in double", "the table's formulas worked out (8 p c, 8 n d bytes)"),
    ("doc/sbp.md", "less an allowance of 0.05 s, an option of the script",
     "bench_sbp.py --allowance's default"),
    ("doc/cross-validation.md", "within one row (classification) or 1% (MSE)",
     "a bound tests/test_grid_warm.py asserts"),
    ("doc/cross-validation.md", "less than 70% of   the full grid's training rows",
     "a bound tests/test_grid_halving.py asserts"),
]

_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
_SPAN = re.compile(r"`[^`\n]*`")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
# a default is a setting, not a measurement: "(default 64 MiB", "100 MB by default"
_DEFAULT = re.compile(r"\bdefault:?\s+" + _NUMBER + r"\s?\S+|" + _NUMBER + r"\s?\S+ by default\b")


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
    return _DEFAULT.sub("", _LINK_TARGET.sub("]", _SPAN.sub("``", paragraph)))


def _is_option_table_row(row):
    """A row of a table of options or defaults: its first cell is an option."""
    first = row.strip().strip("|").split("|", 1)[0].strip()
    return first.startswith("`")


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
    bad, caption = [], ""
    for number, para in paragraphs(text):
        in_table = para.lstrip().startswith("|")
        if not in_table:
            caption = para              # a table's rows share the citation above them
        elif _is_option_table_row(para):
            continue
        found = MEASURED.findall(prose(_without(para, allowed)))
        if found and not cites(para, rows, scripts) \
                and not (in_table and cites(caption, rows, scripts)):
            bad.append((number, found, para))
    return bad


def _without(paragraph, pieces):
    for piece in pieces:
        paragraph = paragraph.replace(piece, "")
    return paragraph


def _context():
    rows = current_rows(open(CURRENT, encoding="utf-8").read())
    scripts = {os.path.basename(p) for p in glob.glob(os.path.join(BENCH, "*.py"))}
    return rows, scripts


def _allowed_on(page):
    return [piece for name, piece, _ in ALLOWED if name == os.path.relpath(page, ROOT)]


def test_every_measured_number_cites_its_command():
    rows, scripts = _context()
    bad = []
    for page in PAGES:
        text = open(page, encoding="utf-8").read()
        for number, found, para in uncited(text, rows, scripts, _allowed_on(page)):
            bad.append(f"{os.path.relpath(page, ROOT)}:{number}: {', '.join(found)}: "
                       f"{para.strip()[:100]}")
    assert not bad, ("measured numbers without a CURRENT.md row or a history section "
                     "with its benchmarks/ command (cite one, or drop the number):\n"
                     + "\n".join(bad))


def test_every_allowed_entry_still_stands():
    # an entry whose paragraph changed or lost its numbers goes, so the list stays short
    stale = []
    for name, piece, _ in ALLOWED:
        text = open(os.path.join(ROOT, name), encoding="utf-8").read()
        if not any(piece in p and MEASURED.search(prose(piece)) for _, p in paragraphs(text)):
            stale.append(f"{name}: {piece}")
    assert not stale, f"allow-list entries that match nothing: {stale}"


SAMPLE = """# A page

SMO takes 12.5 s for 9.49% (`benchmarks/CURRENT.md#row-a`, whole process).

UDSG: 13.5% in 17 s.

A row that is not there: 3.1x (benchmarks/CURRENT.md#no-such-row).

Historical, no command: 4.2 s -> 2.4 s (benchmarks/history/RESULTS.md, session 12).

Historical with its command: 1.45x (benchmarks/history/RESULTS.md, "Threads";
`python benchmarks/bench_a.py --reps 3`).

Code is not prose: `-m 100` and `--chunk-mb 64`; a 60000 x 784 matrix; the
window (default 64 MB); a cache, 100 MB by default.

```sh
kernsolve-train -m 400 a9a   # 85.1% in 2.5 s
```

    Accuracy = 78.7% (787/1000) (classification)

| data | error |
|---|---|
| a9a | 14.88% |

The table below is cited (`benchmarks/CURRENT.md#row-a`):

| data | error |
|---|---|
| ijcnn1 | 1.30% |

| option | default |
|---|---|
| `--cache-mb` | 64 MB |

The progress line comes every 2 s.
"""


def test_the_check_on_a_sample():
    rows, scripts = {"row-a": " `python benchmarks/bench_a.py`"}, {"bench_a.py"}
    found = {n: numbers for n, numbers, _ in uncited(SAMPLE, rows, scripts)}
    assert found == {5: ["13.5%", "17 s"], 7: ["3.1x"], 9: ["4.2 s", "2.4 s"],
                     25: ["14.88%"], 37: ["2 s"]}
    assert 37 not in {n for n, _, _ in uncited(SAMPLE, rows, scripts, ["every 2 s"])}


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
