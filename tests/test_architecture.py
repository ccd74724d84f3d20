"""The package's shape, as doc/architecture.md states it.

Oracle: the package's own source, parsed (nothing is imported or run): the
import graph between kernsolve's modules has no cycle, no module imports
kernsolve's modules from inside a function, no module outside
``kernsolve/solvers/`` names a solver (they read the registry), no source
outside the kernel table and the kernels' formulas names a kernel of its own
(``LAPLACIAN``: they read the table's properties), thread machinery
(threadpoolctl, Python thread pools, the OMP_ variables, joblib) stands only in
the modules that own it, option values have one checker and the estimators
take declared ranges from their declarations, no module but DSG's loss table
names a DSG loss, and DSG's compiled modules are cut by concern (sizes).
"""
import ast
import os
import re

import pytest

import kernsolve
from kernsolve.estimators.dsg import _OPTION as _DSG_PARAMETER_OPTIONS
from kernsolve.solvers import REGISTRY, solver_names, spec_for

PACKAGE = os.path.dirname(os.path.abspath(kernsolve.__file__))


def _modules():
    """Dotted name -> (path, is package) of every Python module of kernsolve."""
    out = {}
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, os.path.dirname(PACKAGE))[:-3].replace(os.sep, ".")
                is_package = rel.endswith(".__init__")
                out[rel[:-9] if is_package else rel] = (path, is_package)
    return out


MODULES = _modules()


def _imports(module):
    """(target module, inside a function?) for each import of a kernsolve module."""
    path, is_package = MODULES[module]
    tree = ast.parse(open(path).read(), path)
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.ImportFrom):
                if child.level:
                    base = module.split(".") if is_package else module.split(".")[:-1]
                    base = base[:len(base) - child.level + 1]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                for candidate in [target] + [f"{target}.{a.name}" for a in child.names]:
                    if candidate in MODULES and candidate != module:
                        found.append((candidate, inside))
            elif isinstance(child, ast.Import):
                for a in child.names:
                    if a.name in MODULES:
                        found.append((a.name, inside))
            visit(child, inside)

    visit(tree, False)
    return found


def test_the_parser_sees_the_package():
    # the walk finds the layers named in doc/architecture.md, with imports
    for name in ("kernsolve._api", "kernsolve.solvers.libsvm.driver",
                 "kernsolve.estimators.svm", "kernsolve.cli.train"):
        assert name in MODULES
    assert ("kernsolve.solvers.libsvm.driver", False) in _imports("kernsolve._api")


def test_no_import_cycle():
    # kernsolve/__init__.py exports lazily by name (importlib), not by import
    graph = {m: {t for t, _ in _imports(m)} - {"kernsolve"} for m in MODULES}
    state, stack = {}, []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == "open":
                cycle = stack[stack.index(t):] + [t]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if t not in state:
                visit(t)
        stack.pop()
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m)


def test_imports_of_the_package_stand_at_module_top():
    inside = sorted(f"{m} imports {t}" for m in MODULES for t, f in _imports(m) if f)
    assert inside == []


def test_no_solver_named_outside_the_registry():
    # A solver's name as a string appears only in kernsolve/solvers/ (the
    # registry and each family's own folder); everything else reads REGISTRY.
    names = set(solver_names())
    assert len(names) == sum(len(spec.names) for spec in REGISTRY) >= 10
    solvers = os.path.join(PACKAGE, "solvers") + os.sep
    found = []
    for module, (path, _) in MODULES.items():
        if path.startswith(solvers):
            continue
        for node in ast.walk(ast.parse(open(path).read(), path)):
            if isinstance(node, ast.Constant) and node.value in names:
                found.append(f"{module}:{node.lineno}: {node.value!r}")
    assert found == []


# Thread machinery and the modules allowed to hold it (doc/threads.md, "One
# owner"): kernsolve._threads owns parallel execution, _wait_policy is its
# private part that runs before the compiled core loads, and joblib runs the
# tasks of model selection.
THREAD_OWNERS = {
    "threadpoolctl": {"kernsolve._threads"},
    "concurrent.futures": {"kernsolve._threads"},
    "ThreadPoolExecutor": {"kernsolve._threads"},
    "an OMP_ variable": {"kernsolve._threads", "kernsolve._wait_policy"},
    "joblib": {"kernsolve.model_selection.cv"},
}
_OMP_NAME = re.compile(r"G?OMP_[A-Z_]+\Z")
# the same in compiled sources (.pyx, .pxd, .h), line by line
_COMPILED_THREADS = [
    ("threadpoolctl", re.compile(r"^\s*(from|import|cimport)\s+threadpoolctl\b")),
    ("concurrent.futures", re.compile(r"^\s*(from|import)\s+concurrent\b")),
    ("ThreadPoolExecutor", re.compile(r"ThreadPoolExecutor\s*\(")),
    ("an OMP_ variable", re.compile(r"""["']G?OMP_[A-Z_]+["']|getenv\(\s*"G?OMP_""")),
    ("joblib", re.compile(r"^\s*(from|import)\s+joblib\b")),
]


def _thread_machinery(path):
    """(what, line) for each piece of THREAD_OWNERS in a Python module."""
    found = []
    for node in ast.walk(ast.parse(open(path).read(), path)):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""] + [a.name for a in node.names]
        elif isinstance(node, ast.Name):
            names = [node.id]
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and _OMP_NAME.match(node.value):
            found.append(("an OMP_ variable", node.lineno))
        for name in names:
            top = name.split(".")[0]
            what = {"threadpoolctl": "threadpoolctl", "joblib": "joblib",
                    "concurrent": "concurrent.futures"}.get(top)
            if name == "ThreadPoolExecutor":
                what = "ThreadPoolExecutor"
            if what:
                found.append((what, node.lineno))
    return found


def _compiled_sources():
    for folder, _, files in os.walk(PACKAGE):
        for name in sorted(files):
            if name.endswith((".pyx", ".pxd", ".h")):
                yield os.path.join(folder, name)


def test_thread_machinery_only_in_its_owner():
    misplaced, seen = [], set()
    for module, (path, _) in MODULES.items():
        for what, line in _thread_machinery(path):
            seen.add((what, module))
            if module not in THREAD_OWNERS[what]:
                misplaced.append(f"{module}:{line}: {what}")
    for path in _compiled_sources():
        for number, text in enumerate(open(path), 1):
            for what, pattern in _COMPILED_THREADS:
                if pattern.search(text):
                    misplaced.append(f"{os.path.relpath(path, PACKAGE)}:{number}: {what}")
    assert misplaced == [], "thread machinery outside kernsolve._threads (doc/threads.md)"
    # the scan sees the owners' own uses, so a rule that finds nothing is not blind
    for what, owners in THREAD_OWNERS.items():
        assert seen & {(what, m) for m in owners}, what


def test_thread_scan_on_a_sample(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import os\nfrom concurrent.futures import ThreadPoolExecutor\n"
                      "os.environ['OMP_NUM_THREADS'] = '1'\n"
                      "def f():\n    import threadpoolctl\n    return joblib.Parallel\n"
                      "'''OMP_WAIT_POLICY in prose is fine'''\n")
    assert sorted(_thread_machinery(str(sample))) == [
        ("ThreadPoolExecutor", 2), ("an OMP_ variable", 3), ("concurrent.futures", 2),
        ("joblib", 6), ("threadpoolctl", 5)]


def _defs_named(name):
    """``module.Class.name`` (or ``module.name``) of every def called ``name``."""
    found = []
    for module, (path, _) in MODULES.items():
        tree = ast.parse(open(path).read(), path)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                found.append(f"{module}.{name}")
            elif isinstance(node, ast.ClassDef):
                found += [f"{module}.{node.name}.{name}" for item in node.body
                          if isinstance(item, ast.FunctionDef) and item.name == name]
    return sorted(found)


def test_option_values_have_one_checker():
    # doc/architecture.md, "Declaring a parameter": every option (LIBSVM's
    # letters, kernsolve's long options, a solver's) is an Option whose
    # check is the one checker; Parameters.check is the entry that runs it.
    assert _defs_named("check") == ["kernsolve._params.Parameters.check",
                                    "kernsolve.solvers._spec.Option.check"]
    assert _defs_named("check_options") == []


# Estimator parameters that set one of LIBSVM's letters with the letter's own
# range.  (C and gamma have ranges of their own in some estimators: nu-SVR's
# and DSG's C is finite, random features need gamma > 0.)
_LETTER_PARAMETERS = {"nu", "epsilon", "degree", "coef0", "tol", "cache_size"}
# The DSG estimators' loss names are StrOptions of DSG's loss table (losses.names,
# one task's losses each), not of the spec's --loss choices (all tasks).
_OWN_TABLES = {"loss"}


def _declared_parameters(filename):
    """The parameters of the estimators of ``estimators/filename`` whose
    options are declared (by LIBSVM's letters; in dsg.py by the DSG spec)."""
    if filename != "dsg.py":
        return _LETTER_PARAMETERS
    dsg = spec_for("dsg")
    solver_backed = {name for name, option in _DSG_PARAMETER_OPTIONS.items()
                     if option.startswith("--") and option[2:] in dsg.options}
    return (solver_backed - _OWN_TABLES) | _LETTER_PARAMETERS


def test_estimators_derive_declared_ranges():
    # a parameter whose option is declared (a solver's spec, LIBSVM's letters
    # in kernsolve._params) takes its constraint from the declaration
    # (estimators._base.declared), never from a second Interval/StrOptions
    assert {"batch_size", "feature_block", "precision", "alpha", "max_iter"} \
        <= _declared_parameters("dsg.py")
    found = []
    folder = os.path.join(PACKAGE, "estimators")
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".py"):
            continue
        declared = _declared_parameters(name)
        path = os.path.join(folder, name)
        for node in ast.walk(ast.parse(open(path).read(), path)):
            if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) and any(
                    isinstance(t, ast.Name) and t.id == "_parameter_constraints"
                    for t in node.targets)):
                continue
            for key, value in zip(node.value.keys, node.value.values):
                if not (isinstance(key, ast.Constant) and key.value in declared):
                    continue
                for call in ast.walk(value):
                    if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) \
                            and call.func.id in ("Interval", "StrOptions"):
                        found.append(f"{name}:{call.lineno}: {key.value}")
    assert found == []


def test_dsg_loss_names_are_typed_once():
    # A DSG loss's name as a string appears only in its table
    # (solvers/dsg/losses.py); the spec, the options, the model, the targets
    # and the estimators read the table.  Names that are also task names
    # ("novelty") are not counted; DSGRegressor's default loss is its own
    # choice, read by scikit-learn from the signature.
    from kernsolve.solvers.dsg.losses import TABLE
    names = {loss.name for loss in TABLE} - {"classification", "regression", "novelty"}
    allowed = {("kernsolve.estimators.dsg", "squared")}
    table = os.path.join(PACKAGE, "solvers", "dsg", "losses.py")
    found = []
    for module, (path, _) in MODULES.items():
        if path == table:
            continue
        for node in ast.walk(ast.parse(open(path).read(), path)):
            if isinstance(node, ast.Constant) and node.value in names \
                    and (module, node.value) not in allowed:
                found.append(f"{module}:{node.lineno}: {node.value!r}")
    assert found == []


def test_dsg_compiled_modules_are_cut_by_concern():
    # doc/architecture.md: no compiled module over 800 lines, and the step
    # loop (fit_chunk) under 150: its helpers are functions of their own
    folder = os.path.join(PACKAGE, "solvers", "dsg")
    sizes = {name: len(open(os.path.join(folder, name)).read().splitlines())
             for name in os.listdir(folder) if name.endswith((".pyx", ".pxd"))}
    assert {"_dsg.pyx", "_ridge.pxd", "_row_features.pyx", "_block_sums.pxd"} <= set(sizes)
    assert {name: n for name, n in sizes.items() if n > 800} == {}
    text = open(os.path.join(folder, "_dsg.pyx")).read()
    loop = text[text.index("\ndef fit_chunk("):]
    end = re.search(r"\n(?=\S)", loop[1:])
    assert len(loop[:end.start() + 1].splitlines()) < 150


# Where a kernel may be named: its row (kernsolve/_constants.py), the engine's
# enum and mirror of the row (_core/_kernel.pxd), its formula
# (_core/_kernel_values.pxd).  Elsewhere code asks KERNEL_TABLE's properties.
KERNEL_OWNERS = {"_constants.py", os.path.join("_core", "_kernel.pxd"),
                 os.path.join("_core", "_kernel_values.pxd")}
SOURCE_ENDINGS = (".py", ".pyx", ".pxd", ".pxi", ".h", ".tp")


def test_kernels_named_only_in_their_table_and_formula():
    found = []
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            path = os.path.join(folder, name)
            if not name.endswith(SOURCE_ENDINGS) or os.path.relpath(path, PACKAGE) in KERNEL_OWNERS:
                continue
            for number, line in enumerate(open(path, encoding="utf-8"), 1):
                if re.search(r"\bLAPLACIAN\b", line):
                    found.append(f"{os.path.relpath(path, PACKAGE)}:{number}: {line.strip()}")
    assert found == []


# ------------------------------------------------ the compiled layer

CORE = os.path.join(PACKAGE, "_core")
# The two compiled modules allowed past COMPILED_MAX_LINES: each is one loop
# nest with its state (the SMO solver, the row cache), not several concerns.
COMPILED_MAX_LINES = 800
LONG_COMPILED = {os.path.join("solvers", "smo", "_smo.pyx"), os.path.join("_core", "_kernel.pyx")}


def _compiled_files():
    """Path relative to the package -> text, of every .pyx, .pxd and .h."""
    out = {}
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith((".pyx", ".pxd", ".h")):
                path = os.path.join(folder, name)
                out[os.path.relpath(path, PACKAGE)] = open(path).read()
    return out


COMPILED = _compiled_files()


def _core_item(rel):
    """The _core/ item a file of _core/ is part of: its module (X.pyx and X.pxd
    are one) or its header; None outside _core/."""
    folder, name = os.path.split(rel)
    if folder != "_core":
        return None
    return name if name.endswith(".h") else os.path.splitext(name)[0]


def _owner(rel):
    """Who a file of the package serves: its solver family, or the shared
    services (every module outside _core/ and solvers/)."""
    parts = rel.split(os.sep)
    if parts[0] == "solvers" and len(parts) > 2:
        return parts[1]
    return None if parts[0] == "_core" else "services"


def _core_uses(rel, text):
    """The _core/ items (module stems, header names) a file imports, cimports
    or includes."""
    package = ["kernsolve"] + rel.split(os.sep)[:-1]
    used = set()
    if rel.endswith(".py"):
        for node in ast.walk(ast.parse(text, rel)):
            if isinstance(node, ast.ImportFrom):
                base = package[:len(package) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                if target == "kernsolve._core":
                    used |= {a.name for a in node.names}
                elif target.startswith("kernsolve._core."):
                    used.add(target.split(".")[2])
            elif isinstance(node, ast.Import):
                used |= {a.name.split(".")[2] for a in node.names
                         if a.name.startswith("kernsolve._core.")}
        return used
    for m in re.finditer(r"^\s*from\s+(\.*)([\w.]*)\s+c?import\s+([\w, (]+)", text, re.M):
        dots, module, names = m.groups()
        base = package[:len(package) - len(dots) + 1] if dots else []
        target = ".".join(base + ([module] if module else []))
        if target == "kernsolve._core":
            used |= {n.strip() for n in names.strip("( ").split(",")}
        elif target.startswith("kernsolve._core."):
            used.add(target.split(".")[2])
    for header in re.findall(r'(?:extern from|#include)\s+"(\w+\.h)"', text):
        beside = os.path.join(os.path.dirname(rel), header)
        if beside not in COMPILED and os.path.join("_core", header) in COMPILED:
            used.add(header)
        elif os.path.dirname(rel) == "_core":
            used.add(header)
    return used


def _core_users():
    """_core/ item -> the owners (families, "services") that use it, directly or
    through other _core/ items."""
    sources = dict(COMPILED)
    sources.update({os.path.relpath(path, PACKAGE): open(path).read()
                    for path, _ in MODULES.values()})
    direct = {}
    for rel, text in sources.items():
        user = _core_item(rel) or _owner(rel)
        for item in _core_uses(rel, text) - {user}:
            direct.setdefault(item, set()).add(user)
    items = {_core_item(rel) for rel in COMPILED} - {None}

    def owners(item, seen):
        found = set()
        for user in direct.get(item, ()):
            if user in items:
                if user not in seen:
                    found |= owners(user, seen | {user})
            else:
                found.add(user)
        return found

    return {item: owners(item, {item}) for item in items}


def test_no_compiled_module_is_too_long():
    long = {rel: text.count("\n") for rel, text in COMPILED.items()
            if rel.endswith(".pyx") and text.count("\n") > COMPILED_MAX_LINES}
    assert set(long) <= LONG_COMPILED, long


def test_the_scan_sees_the_compiled_layer():
    users = _core_users()
    assert users["_rows"] >= {"services", "smo", "dsg"}
    assert users["_blas"] == {"services", "eigenpro"}       # via _kernel_matrix, and direct
    assert users["_simd.h"] >= {"services", "smo", "dsg", "eigenpro"}
    assert users["_decision_sums"] == {"services"}


def test_core_holds_only_what_is_shared():
    # A _core/ module or header serves two solver families or the shared
    # services; what one solver alone uses lives in its folder.
    alone = {item: owners for item, owners in _core_users().items()
             if "services" not in owners and len(owners) < 2}
    assert not alone, alone


def test_solver_headers_are_included_only_by_their_solver():
    for rel, text in COMPILED.items():
        for header in re.findall(r'(?:extern from|#include)\s+"(\w+\.h)"', text):
            beside = os.path.join(os.path.dirname(rel), header)
            if beside in COMPILED and _owner(beside) not in (None, "services"):
                assert _owner(rel) == _owner(beside), (rel, header)


def _c_headers(rel, seen=None):
    """The headers in the C of a compiled file: those it declares or includes,
    those of the .pxd files it cimports (and its own .pxd), transitively."""
    seen = set() if seen is None else seen
    if rel in seen or rel not in COMPILED:
        return set()
    seen.add(rel)
    text, folder = COMPILED[rel], os.path.dirname(rel)
    found = set()
    for header in re.findall(r'(?:extern from|#include)\s+"(\w+\.h)"', text):
        beside = os.path.join(folder, header)
        path = beside if beside in COMPILED else os.path.join("_core", header)
        found |= {header} | _c_headers(path, seen)
    package = ["kernsolve"] + rel.split(os.sep)[:-1]
    targets = [os.path.splitext(rel)[0] + ".pxd"]
    for dots, module in re.findall(r"^\s*from\s+(\.*)([\w.]*)\s+cimport", text, re.M):
        base = package[:len(package) - len(dots) + 1] if dots else []
        parts = (base + module.split(".")) if module else base
        if parts[0] == "kernsolve":
            targets.append(os.path.join(*parts[1:]) + ".pxd")
    for pxd in targets:
        found |= _c_headers(pxd, seen)
    return found


def test_every_module_with_vector_paths_follows_the_one_switch():
    # _simd.h's mask is per module unless the module joins the process's one
    # (owned by _core/_simd.pyx): the tests' switch must reach every path.
    modules = [rel for rel in COMPILED if rel.endswith(".pyx") and "_simd.h" in _c_headers(rel)]
    assert {os.path.join("solvers", "smo", "_smo.pyx"),
            os.path.join("_core", "_decision_sums.pyx")} <= set(modules)
    assert [rel for rel in modules if "\nks_simd_join(paths_mask())\n" not in COMPILED[rel]] == []


def test_vector_paths_are_named_by_one_rule():
    # ks_<op>_scalar, ks_<op>_avx2, ... : no other spelling of the scalar path
    # (_block_dots.h keeps its own until the DSG split moves it).
    old = re.compile(r"\bks_\w+_(?:base|baseline|plain)\b")
    found = {rel: old.findall(text) for rel, text in COMPILED.items()
             if rel.endswith(".h")}
    assert {rel: names for rel, names in found.items() if names} == {}
