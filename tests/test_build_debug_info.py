"""Release builds carry no debug information; KERNSOLVE_DEBUG=1 keeps it.

Oracle: binutils' ``readelf -S`` (the ELF section table: ``.debug_*``
sections are the DWARF debug information) on the compiled modules, and the
build's own record (``kernsolve._build_config``).
"""
import os
import shutil
import subprocess
import sys

import pytest

import kernsolve

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
READELF = shutil.which("readelf")
pytestmark = pytest.mark.skipif(READELF is None or not sys.platform.startswith("linux"),
                                reason="needs readelf (binutils) and ELF modules")


def debug_sections(path):
    out = subprocess.run([READELF, "-S", "-W", path], capture_output=True, text=True,
                         check=True).stdout
    return sorted({word for word in out.split() if word.startswith(".debug_")})


def _modules(folder):
    return sorted(os.path.join(d, f) for d, _, files in os.walk(folder) for f in files
                  if f.endswith(".so"))


def test_the_imported_modules_match_their_build_switch():
    from kernsolve import _build_config
    package = os.path.dirname(os.path.abspath(kernsolve.__file__))
    modules = _modules(package)
    assert modules
    for path in modules:
        if _build_config.DEBUG:
            assert ".debug_info" in debug_sections(path), path
        else:
            assert debug_sections(path) == [], path


@pytest.mark.parametrize("debug", ["0", "1"])
def test_a_build_has_debug_sections_only_with_kernsolve_debug(debug, tmp_path):
    """One small module built from a copy of the sources (so that nothing in
    this checkout is rebuilt), as a release and as a debug build."""
    if shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C compiler")
    src = tmp_path / "src"
    shutil.copytree(os.path.join(ROOT, "kernsolve"), src / "kernsolve",
                    ignore=shutil.ignore_patterns("*.so", "*.c", "__pycache__",
                                                  "_build_config.py"))
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(os.path.join(ROOT, name), src / name)
    env = dict(os.environ, KERNSOLVE_ONLY="_parallel", KERNSOLVE_DEBUG=debug,
               KERNSOLVE_BUILD_JOBS="1")
    proc = subprocess.run([sys.executable, "setup.py", "build_ext", "--build-lib",
                           str(tmp_path / "lib"), "--build-temp", str(tmp_path / "temp")],
                          cwd=src, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (module,) = _modules(tmp_path / "lib")
    config = (tmp_path / "lib" / "kernsolve" / "_build_config.py").read_text()
    assert f"DEBUG = {debug == '1'}" in config
    if debug == "1":
        assert ".debug_info" in debug_sections(module)
        assert "'-g'" in config
    else:
        assert debug_sections(module) == []
        assert "'-g0'" in config
