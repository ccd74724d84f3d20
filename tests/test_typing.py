"""The "Typed" claim (kernsolve ships ``py.typed``): mypy, configured in
pyproject.toml's ``[tool.mypy]``, passes on the package, as a user's
``mypy`` would run it; and every compiled module has its stub."""
import glob
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_mypy_passes_on_the_package(tmp_path):
    pytest.importorskip("mypy", reason="mypy is in the test extra: pip install -e .[test]")
    # a fresh cache (a stale one has hidden errors), outside the clone
    proc = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("Success: no issues found"), proc.stdout


def test_every_compiled_module_has_a_stub():
    """mypy reads no extension module: each .pyx has a .pyi beside it (its
    names typed Any), and no .pyi outlives its .pyx."""
    pyx = {p[:-4] for p in glob.glob(os.path.join(ROOT, "kernsolve", "**", "*.pyx"),
                                     recursive=True)}
    pyi = {p[:-4] for p in glob.glob(os.path.join(ROOT, "kernsolve", "**", "*.pyi"),
                                     recursive=True)}
    assert pyx == pyi, {"without a stub": sorted(pyx - pyi), "stale": sorted(pyi - pyx)}
    for stem in pyi:
        with open(stem + ".pyi", encoding="utf-8") as f:
            assert "def __getattr__(name: str) -> Any: ..." in f.read(), stem
