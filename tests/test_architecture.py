"""The package's shape, as doc/architecture.md states it.

Oracle: the package's own source, parsed (nothing is imported or run): the
import graph between kernsolve's modules has no cycle, no module imports
kernsolve's modules from inside a function, no module outside
``kernsolve/solvers/`` names a solver (they read the registry), no module
but DSG's loss table names a DSG loss, and DSG's compiled modules are cut
by concern (sizes).
"""
import ast
import os
import re

import pytest

import kernsolve
from kernsolve.solvers import REGISTRY, solver_names

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
