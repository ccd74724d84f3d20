"""Release builds carry no debug information and are stripped (no symbol
table); KERNSOLVE_DEBUG=1 keeps both.

Oracle: binutils' ``readelf -S`` (the ELF section table: ``.debug_*``
sections are the DWARF debug information, ``.symtab`` the symbol table that
``strip`` removes; ``.dynsym``, which loading needs, stays) on the compiled
modules, and the build's own record (``kernsolve._build_config``).
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


def sections(path):
    out = subprocess.run([READELF, "-S", "-W", path], capture_output=True, text=True,
                         check=True).stdout
    return {word for word in out.split() if word.startswith(".")}


def debug_sections(path):
    return sorted(name for name in sections(path) if name.startswith(".debug_"))


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
            assert ".symtab" not in sections(path) and ".dynsym" in sections(path), path


def _sources(tmp_path):
    """A copy of the sources with no build products, so that nothing in this
    checkout is rebuilt (skips without a C compiler)."""
    if shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C compiler")
    src = tmp_path / "src"
    shutil.copytree(os.path.join(ROOT, "kernsolve"), src / "kernsolve",
                    ignore=shutil.ignore_patterns("*.so", "*.c", "__pycache__",
                                                  "_build_config.py"))
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(os.path.join(ROOT, name), src / name)
    return src


@pytest.mark.parametrize("debug", ["0", "1"])
def test_a_build_has_debug_sections_only_with_kernsolve_debug(debug, tmp_path):
    """One small module built from a copy of the sources (so that nothing in
    this checkout is rebuilt), as a release and as a debug build."""
    src = _sources(tmp_path)
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
        assert ".symtab" in sections(module)
        assert "'-g'" in config and "'-s'" not in config
    else:
        assert debug_sections(module) == []
        assert ".symtab" not in sections(module)
        assert "'-g0'" in config and "'-s'" in config
    # either way the module can be loaded: its PyInit_ is in the dynamic symbols
    dynamic = subprocess.run([READELF, "-W", "--dyn-syms", str(module)], capture_output=True,
                             text=True, check=True).stdout
    assert "PyInit__parallel" in dynamic


def _build_in_place(src, tmp_path, run, **env):
    """``setup.py build_ext --inplace`` of the _parallel module with fresh build
    folders (as every editable install has): the build's phase lines."""
    env = dict(os.environ, KERNSOLVE_ONLY="_parallel", KERNSOLVE_BUILD_JOBS="1", **env)
    proc = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace",
                           "--build-lib", str(tmp_path / f"lib{run}"),
                           "--build-temp", str(tmp_path / f"temp{run}")],
                          cwd=src, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("kernsolve build: compiling")]
    return line


def test_an_in_place_build_keeps_what_is_built_until_a_source_or_a_switch_changes(tmp_path):
    """The editable install's case: each build in fresh folders; the module in
    the source tree is copied while its sources and the switches are the
    same, compiled again when the .pyx changes or when KERNSOLVE_DEBUG does."""
    src = _sources(tmp_path)
    assert _build_in_place(src, tmp_path, 1).startswith("kernsolve build: compiling 1 ")
    (built,) = _modules(src / "kernsolve")
    first = os.stat(built).st_mtime_ns
    line = _build_in_place(src, tmp_path, 2)
    assert line.startswith("kernsolve build: compiling 0 ")
    assert "(1 already built in the source tree and unchanged: kept)" in line
    assert os.stat(built).st_mtime_ns == first             # the same file, not rebuilt
    pyx = src / "kernsolve" / "_core" / "_parallel.pyx"
    os.utime(pyx, ns=(first + 10 ** 9, first + 10 ** 9))   # edited after the build
    assert _build_in_place(src, tmp_path, 3).startswith("kernsolve build: compiling 1 ")
    assert _build_in_place(src, tmp_path, 4).startswith("kernsolve build: compiling 0 ")
    # another switch: compiled again, and its record kept for the next build
    assert _build_in_place(src, tmp_path, 5, KERNSOLVE_DEBUG="1").startswith(
        "kernsolve build: compiling 1 ")
    assert ".debug_info" in debug_sections(built)
    assert "DEBUG = True" in (src / "kernsolve" / "_build_config.py").read_text()
