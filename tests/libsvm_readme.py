"""The code of libsvm-official's Python README, as a script to run.

The README is the package's own long description (``importlib.metadata``), so
the code run is the installed version's, never a copy.  Its ``>>>`` lines are
taken from the sections that use ``libsvm.svmutil``: the two quick starts (up
to "The low-level use", which calls the ctypes library ``libsvm.svm``
directly), the ``svm_model`` methods, and the ``svm_train``/``svm_predict``/
``svm_load_model`` examples.  Left out, by the patterns in ``_NOT_RUNNABLE``:
the ctypes level (``libsvm.``, ``gen_svm_nodearray``, ``toPyModel``), the
download example (needs the network), and signature lines with placeholders
(``[, ...]``, ``'training_options'``, ``useScipy``).
"""
import importlib.metadata
import re

# Sections (by heading) and, inside "Data Structures" and "Utility Functions",
# the entries ("- class svm_model:", "- Function: svm_train") whose code runs.
_SECTIONS = ("Quick Start", "Quick Start with Scipy", "Data Structures", "Utility Functions")
_ENTRIES = ("class svm_model", "Function: svm_train", "Function: svm_predict",
            "Functions: svm_load_model/svm_save_model")
_NOT_RUNNABLE = re.compile(r"libsvm\.svm_|from libsvm\.svm import|gen_svm_nodearray|toPyModel|"
                           r"\[,|training_options|useScipy|urllib|bz2|svm_read_problem\(f\)")


def readme_text():
    """libsvm-official's README (its package metadata's description: the body
    of METADATA after the headers; read as text, since a parsed message's
    payload can come back empty once other packages have used ``email``)."""
    text = importlib.metadata.distribution("libsvm-official").read_text("METADATA")
    return text.split("\n\n", 1)[1]


def _sections(text):
    """{heading: body} of a README whose headings are underlined with '='."""
    lines = text.splitlines()
    out, name = {}, None
    for i, line in enumerate(lines):
        if i + 1 < len(lines) and re.fullmatch(r"=+", lines[i + 1].strip()) and line.strip():
            name = line.strip()
            out[name] = []
        elif name is not None and not re.fullmatch(r"=+", line.strip()):
            out[name].append(line)
    return out


def _entries(lines):
    """The '- class ...:' / '- Function: ...' entries of a section, by title."""
    out, name = {}, None
    for line in lines:
        m = re.match(r"- (.+?):?\s*$", line)
        if m and not line.startswith(" "):
            name = m.group(1)
            out[name] = []
        elif name is not None:
            out[name].append(line)
    return out


def _code(lines):
    """The runnable ``>>>`` statements of some README lines, in order."""
    out = []
    for line in lines:
        if line.strip().startswith("The low-level use"):
            break
        stripped = line.strip()
        if stripped.startswith(">>> ") and not _NOT_RUNNABLE.search(stripped):
            out.append(stripped[4:])
    return out


def readme_statements(text=None):
    """[(section, statement)]: the README's svmutil code, one statement a line,
    in the README's order (the quick starts, then the entries of _ENTRIES)."""
    sections = _sections(readme_text() if text is None else text)
    out = []
    for name in _SECTIONS:
        body = sections[name]
        if name in ("Quick Start", "Quick Start with Scipy"):
            out += [(name, s) for s in _code(body)]
            continue
        entries = _entries(body)
        for entry in _ENTRIES:
            if entry in entries:
                out += [(entry, s) for s in _code(entries[entry])]
    return out
