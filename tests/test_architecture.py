"""The package's shape, as doc/architecture.md states it.

Oracle: the package's own source, parsed (nothing is imported or run): the
import graph between kernsolve's modules has no cycle, no module imports
kernsolve's modules from inside a function, no module outside
``kernsolve/solvers/`` names a solver: they read the registry, and no source
outside the kernel table and the kernels' formulas names a kernel of its own
(``LAPLACIAN``): they read the table's properties.
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
