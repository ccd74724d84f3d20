"""The benchmarks as a panel of current numbers (issue 32 item 5): rules that
keep benchmarks/ legible.

* No text of the repository cites a scratch script under ``/tmp`` (a script
  that was never committed cannot be rerun).  A ``/tmp/...`` path is allowed
  where it is an instruction or a folder a command writes or reads (``build
  the peers in /tmp/peers``, ``bench_stream.py big /tmp/stream/big``): a
  scratch-script reference is a ``/tmp`` path ending in a program's suffix
  (``.py``, ``.sh``, ``.c``, ``.h``, ``.pyx``, ``.diff``), or a ``/tmp`` path
  on a line that calls it scratch.
* Every ``benchmarks/*.py`` is described in ``benchmarks/README.md``, imports,
  and answers ``--help``.
* ``benchlib.py`` is the one owner of the data folder, the load and medians:
  no other script reads ``KERNSOLVE_SHARED_DATA``, ``os.getloadavg`` or
  ``/proc/loadavg``, or imports ``statistics``, itself.
* Every row of ``benchmarks/CURRENT.md`` has an id and a command naming a
  script that exists (or "as `other-id`", a row that has one); every
  ``CURRENT.md#id`` cited by README.md, ``doc/*.md`` or ``benchmarks/`` is a
  row; the dated notebook is cited where it lives now,
  ``benchmarks/history/RESULTS.md`` (frozen).
"""
import ast
import glob
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "benchmarks")
if not os.path.isdir(BENCH):                       # tests run from an installed copy
    pytest.skip("benchmarks/ not found beside tests/", allow_module_level=True)

SCRIPTS = sorted(glob.glob(os.path.join(BENCH, "*.py")))
RUNNABLE = [p for p in SCRIPTS if os.path.basename(p) != "benchlib.py"]
CURRENT = os.path.join(BENCH, "CURRENT.md")

TEXT_SUFFIXES = (".md", ".py", ".pyx", ".pxd", ".h", ".c", ".txt", ".toml", ".cfg",
                 ".yml", ".yaml", ".sh")
SKIP_DIRS = {".git", "build", "site", "kernsolve-output", "__pycache__", ".eggs"}

_TMP_PATH = re.compile(r"/tmp/[^\s`'\"(),;]*")
_SCRIPT_SUFFIX = re.compile(r"\.(py|sh|c|h|pyx|diff)$")


def scratch_references(text):
    """(line number, path) of every /tmp path that names a scratch script."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for path in _TMP_PATH.findall(line):
            path = path.rstrip(".:")
            if _SCRIPT_SUFFIX.search(path) or re.search(r"\bscratch\b", line, re.I):
                found.append((number, path))
    return found


def _text_files():
    """The repository's text files: git's list (not the build's generated C),
    or, without git, every file under the root but the build's folders."""
    try:
        names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                               check=True).stdout.decode().split("\0")
        paths = [os.path.join(ROOT, n) for n in names if n]
    except (OSError, subprocess.CalledProcessError):
        paths = []
        for folder, dirs, files in os.walk(ROOT):
            dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")]
            paths += [os.path.join(folder, name) for name in files]
    return [p for p in paths if p.endswith(TEXT_SUFFIXES) and os.path.isfile(p)]


def test_the_scratch_check_on_a_sample():
    tmp = "/" + "tmp/"            # spelled apart, so this file passes its own check
    sample = (f"timed by `{tmp}s15/prof.py`, scratch\n"
              f"a shell loop (`{tmp}s11/ab.sh`)\n"
              f"the screen (`{tmp}s15`, scratch)\n"
              f"export KERNSOLVE_BENCH_LIBSVM={tmp}peers/libsvm\n"
              f"python benchmarks/bench_stream.py big {tmp}stream/big --solvers dsg\n"
              f"--json {tmp}scale9.json; models in {tmp}predict6.\n")
    assert scratch_references(sample) == [(1, f"{tmp}s15/prof.py"), (2, f"{tmp}s11/ab.sh"),
                                          (3, f"{tmp}s15")]


def test_no_text_cites_a_scratch_script():
    bad = []
    for path in _text_files():
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        bad += [f"{os.path.relpath(path, ROOT)}:{n}: {p}" for n, p in scratch_references(text)]
    assert not bad, "scratch scripts cited (commit them or drop the number):\n" + "\n".join(bad)


def test_no_text_cites_the_old_results_file():
    bad = []
    for path in _text_files():
        if os.path.dirname(path) == os.path.join(BENCH, "history"):
            continue                  # the history's own folder names its file plainly
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                if re.search(r"(?<!history/)RESULTS\.md", line):
                    bad.append(f"{os.path.relpath(path, ROOT)}:{n}")
    assert not bad, "cite benchmarks/history/RESULTS.md or benchmarks/CURRENT.md:\n" + \
        "\n".join(bad)


def test_every_script_is_in_the_readme():
    readme = open(os.path.join(BENCH, "README.md"), encoding="utf-8").read()
    table = readme.split("## The scripts, one line each", 1)[1].split("\n## ", 1)[0]
    missing = [os.path.basename(p) for p in SCRIPTS if os.path.basename(p) not in table]
    assert not missing, f"benchmarks/README.md does not describe {missing}"


def _own_reads(path):
    """What a script reads itself that benchlib owns."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "getloadavg":
            found.append("os.getloadavg")
        elif isinstance(node, ast.Constant) and node.value in ("KERNSOLVE_SHARED_DATA",
                                                                "/proc/loadavg"):
            found.append(node.value)
        elif isinstance(node, ast.Import) and any(a.name == "statistics" for a in node.names):
            found.append("import statistics")
        elif isinstance(node, ast.ImportFrom) and node.module == "statistics":
            found.append("from statistics")
    return found


def test_benchlib_owns_the_data_folder_the_load_and_medians():
    assert set(_own_reads(os.path.join(BENCH, "benchlib.py"))) >= {
        "KERNSOLVE_SHARED_DATA", "os.getloadavg", "from statistics"}
    bad = {os.path.basename(p): _own_reads(p) for p in RUNNABLE if _own_reads(p)}
    assert not bad, f"take these from benchlib: {bad}"


def test_every_script_imports_and_answers_help():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    failed = []
    for path in RUNNABLE:
        proc = subprocess.run([sys.executable, path, "--help"], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=300)
        if proc.returncode != 0 or len(proc.stdout.strip()) < 40:
            failed.append(f"{os.path.basename(path)}: exit {proc.returncode}, "
                          f"{(proc.stderr.strip().splitlines() or [''])[-1]}")
    assert not failed, "\n".join(failed)


def current_rows(text):
    """{id: command cell} of every table row of CURRENT.md."""
    rows = {}
    for line in text.splitlines():
        m = re.match(r"\| `([a-z0-9-]+)` \|", line)
        if m:
            assert m.group(1) not in rows, f"row id {m.group(1)} twice"
            rows[m.group(1)] = line.rstrip().rstrip("|").rsplit("|", 1)[1]
    return rows


def _script_of(rows, row_id, seen=()):
    command = rows[row_id]
    named = re.findall(r"benchmarks/(\w+\.(?:py|sh))", command)
    if named:
        return named
    m = re.search(r"as `([a-z0-9-]+)`", command)
    if m and m.group(1) in rows and m.group(1) not in seen:
        return _script_of(rows, m.group(1), seen + (row_id,))
    return []


def test_every_current_row_has_a_command_naming_a_script():
    rows = current_rows(open(CURRENT, encoding="utf-8").read())
    assert len(rows) >= 30
    bad = []
    for row_id in rows:
        scripts = _script_of(rows, row_id)
        if not scripts or not all(os.path.exists(os.path.join(BENCH, s)) for s in scripts):
            bad.append(f"{row_id}: {rows[row_id].strip()[:80]}")
    assert not bad, "rows without a command naming a script of benchmarks/:\n" + "\n".join(bad)


def test_every_cited_row_exists():
    rows = current_rows(open(CURRENT, encoding="utf-8").read())
    pages = [os.path.join(ROOT, "README.md"), *glob.glob(os.path.join(ROOT, "doc", "*.md")),
             *glob.glob(os.path.join(BENCH, "*.md"))]
    cited, bad = 0, []
    for page in pages:
        for row_id in re.findall(r"CURRENT\.md#([a-z0-9-]+)", open(page, encoding="utf-8").read()):
            cited += 1
            if row_id not in rows:
                bad.append(f"{os.path.relpath(page, ROOT)}: {row_id}")
    assert cited >= 10 and not bad, f"cited rows that CURRENT.md does not have: {bad}"
