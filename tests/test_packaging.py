"""Packaging as a user meets it: the license, the metadata, the type hints, and
the sdist and wheel that ``python -m build`` makes.

Oracles: SPDX's text of BSD-3-Clause; ``inspect.signature`` (every public
parameter is annotated) and ``typing.get_type_hints`` (the annotations
resolve) against the values the functions really return; mypy, when it is
installed; and for the distributions their own file lists and metadata, a
fresh venv that installs the wheel and runs kernsolve from outside the clone,
and a build with no C compiler.

The build test compiles the whole core once (sdist, then the wheel from the
sdist, as ``pip install`` of the sdist would) and installs it in a fresh venv:
minutes, so it runs in CI (``CI`` set) or with ``KERNSOLVE_TEST_PACKAGING=1``,
and is skipped otherwise.
"""
import ast
import glob
import importlib.util
import inspect
import os
import re
import shutil
import subprocess
import sys
import tarfile
import textwrap
import typing
import zipfile

import pytest

import kernsolve

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYPROJECT = os.path.join(ROOT, "pyproject.toml")
PACKAGE = os.path.dirname(os.path.abspath(kernsolve.__file__))

PUBLIC_FUNCTIONS = ("read_problem", "write_problem", "train", "predict", "save_model",
                    "load_model", "cross_validation", "grid_search", "read_partitions",
                    "dask_predict", "dask_partial_fit", "dask_parallel_fit")
ESTIMATORS = {"SVC", "NuSVC", "SVR", "NuSVR", "OneClassSVM", "DSGClassifier",
              "DSGRegressor", "EigenProClassifier", "EigenProRegressor"}

# SPDX's BSD-3-Clause (https://spdx.org/licenses/BSD-3-Clause.html) after its
# copyright line; compared with whitespace collapsed.
BSD_3_CLAUSE = """
Redistribution and use in source and binary forms, with or without modification, are
permitted provided that the following conditions are met:
1. Redistributions of source code must retain the above copyright notice, this list of
conditions and the following disclaimer.
2. Redistributions in binary form must reproduce the above copyright notice, this list of
conditions and the following disclaimer in the documentation and/or other materials
provided with the distribution.
3. Neither the name of the copyright holder nor the names of its contributors may be used
to endorse or promote products derived from this software without specific prior written
permission.
THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS" AND ANY EXPRESS
OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE IMPLIED WARRANTIES OF
MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE ARE DISCLAIMED. IN NO EVENT SHALL THE
COPYRIGHT HOLDER OR CONTRIBUTORS BE LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL,
EXEMPLARY, OR CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF
SUBSTITUTE GOODS OR SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS INTERRUPTION)
HOWEVER CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY, OR
TORT (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE OF THIS
SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
"""

in_clone = pytest.mark.skipif(not os.path.exists(PYPROJECT),
                              reason="needs the source tree (pyproject.toml)")


def _words(text):
    return " ".join(text.split())


def _pyproject():
    import tomllib      # Python >= 3.11, as requires-python says
    with open(PYPROJECT, "rb") as f:
        return tomllib.load(f)


def _pyx_modules():
    """kernsolve/solvers/smo/_smo.pyx -> 'kernsolve/solvers/smo/_smo', for every .pyx."""
    paths = glob.glob(os.path.join(ROOT, "kernsolve", "**", "*.pyx"), recursive=True)
    return sorted(os.path.relpath(p, ROOT)[:-4].replace(os.sep, "/") for p in paths)


# ------------------------------------------------------------------ license, metadata

@in_clone
def test_license_file_is_bsd_3_clause_of_the_kernsolve_developers():
    with open(os.path.join(ROOT, "LICENSE")) as f:
        text = f.read()
    lines = [ln for ln in text.splitlines()
             if ln.strip() not in ("BSD 3-Clause License", "All rights reserved.")]
    body = "\n".join(lines)
    copyright_line = next(ln for ln in lines if ln.startswith("Copyright"))
    assert re.fullmatch(r"Copyright \(c\) \d{4}, the kernsolve developers", copyright_line)
    assert _words(body.split(copyright_line, 1)[1]) == _words(BSD_3_CLAUSE)
    project = _pyproject()["project"]
    assert project["license"] == "BSD-3-Clause"          # an SPDX expression (PEP 639)
    assert project["license-files"] == ["LICENSE"]


@in_clone
def test_requires_python_and_classifiers_claim_what_is_tested():
    project = _pyproject()["project"]
    floor = re.fullmatch(r">=3\.(\d+)", project["requires-python"])
    assert floor, project["requires-python"]             # a floor and no cap
    classifiers = project["classifiers"]
    versions = [int(c.rsplit(".", 1)[1]) for c in classifiers
                if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)]
    # the floor is the oldest version named, and this (tested) Python is named
    assert versions and min(versions) == int(floor.group(1))
    assert f"Programming Language :: Python :: 3.{sys.version_info.minor}" in classifiers
    assert "Typing :: Typed" in classifiers
    # PEP 639: with a license expression, no "License ::" classifier
    assert not [c for c in classifiers if c.startswith("License ::")]


# ------------------------------------------------------------------ type hints

def _annotated(obj):
    """(parameters without a hint, the hints) of a function or a class's __init__."""
    fn = obj.__init__ if isinstance(obj, type) else obj
    hints = typing.get_type_hints(fn)             # raises if a hint does not resolve
    names = [p for p in inspect.signature(fn).parameters if p != "self"]
    return [p for p in names + ["return"] if p not in hints], hints


@pytest.mark.parametrize("name", PUBLIC_FUNCTIONS)
def test_public_functions_have_resolvable_hints_on_every_parameter(name):
    missing, _ = _annotated(getattr(kernsolve, name))
    assert missing == []


def test_every_estimator_constructor_is_annotated():
    found = {n for n in kernsolve.__all__
             if isinstance(getattr(kernsolve, n), type) and hasattr(getattr(kernsolve, n),
                                                                     "get_params")}
    assert found == ESTIMATORS
    for name in sorted(found):
        missing, hints = _annotated(getattr(kernsolve, name))
        assert missing == [], name
        assert hints["return"] is type(None)


def test_hints_agree_with_what_the_functions_return(tmp_path):
    path = kernsolve.dataset_path("heart_scale")
    y, X = kernsolve.read_problem(path)
    # read_problem's overloads: two arrays, or three with query_id=True
    returns = [typing.get_type_hints(f)["return"]
               for f in typing.get_overloads(kernsolve.read_problem)]
    assert [len(typing.get_args(r)) for r in returns[:2]] == [2, 3]
    assert isinstance(X, typing.get_args(returns[0])[1])
    model = kernsolve.train(y, X, "-q")
    assert isinstance(model, typing.get_args(typing.get_type_hints(kernsolve.train)["return"]))
    kernsolve.save_model(tmp_path / "m", model)            # a pathlib.Path is a StrPath
    loaded = kernsolve.load_model(tmp_path / "m")
    assert isinstance(loaded, typing.get_args(
        typing.get_type_hints(kernsolve.load_model)["return"]))
    result = kernsolve.cross_validation(y, X, "-q", n_folds=3)
    assert isinstance(result, typing.get_type_hints(kernsolve.cross_validation)["return"])


def test_type_checkers_see_every_lazy_export():
    # kernsolve/__init__.py exports lazily (module __getattr__); its
    # TYPE_CHECKING block must name the same objects from the same modules.
    from kernsolve import _EXPORTS
    tree = ast.parse(open(os.path.join(PACKAGE, "__init__.py")).read())
    block = next(node for node in tree.body if isinstance(node, ast.If)
                 and getattr(node.test, "id", None) == "TYPE_CHECKING")
    seen = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.level == 1
        for alias in node.names:
            seen[alias.asname or alias.name] = "." + node.module
    assert seen == _EXPORTS


def test_py_typed_marker_ships_with_the_package():
    assert os.path.isfile(os.path.join(PACKAGE, "py.typed"))


USER_CODE = """\
import kernsolve
from kernsolve import SVC, DSGClassifier

path = kernsolve.dataset_path("heart_scale")
y, X = kernsolve.read_problem(path, n_jobs=1)
y2, X2, qid = kernsolve.read_problem(path, query_id=True)
model = kernsolve.train(y, X, "-q -c 2")
labels, (accuracy, mse, scc), values = kernsolve.predict(y, X, model, "-q")
kernsolve.save_model("heart.model", model)
again = kernsolve.load_model("heart.model")
cv = kernsolve.cross_validation(y, X, ["-q"], n_folds=3)
grid = kernsolve.grid_search(y, X, "-q", grid={"c": [1, 4]})
clf = SVC(C=2.0, gamma="scale", class_weight="balanced")
dsg = DSGClassifier("logistic", gamma=0.5, random_state=0)
"""

USER_MISTAKES = [         # each a mistake mypy must report on its line
    "y, X, qid = kernsolve.read_problem(path)",
    "kernsolve.train(y, X, options=2.5)",
    "SVC(C='big')",
    "kernsolve.save_model(model, 'heart.model')",
    "kernsolve.predict(y, X, model, options=1)",
]


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy not installed")
def test_mypy_checks_user_code_against_the_hints(tmp_path):
    preamble = USER_CODE.splitlines()[:7]          # imports, data, a model
    mistakes = "\n".join(preamble + USER_MISTAKES) + "\n"
    expected = set(range(len(preamble) + 1, len(preamble) + len(USER_MISTAKES) + 1))
    (tmp_path / "good.py").write_text(USER_CODE)
    (tmp_path / "bad.py").write_text(mistakes)
    env = dict(os.environ)
    parent = os.path.dirname(PACKAGE)
    if os.path.basename(parent) != "site-packages":   # a clone: show mypy the source
        env["MYPYPATH"] = parent
    base = [sys.executable, "-m", "mypy", "--follow-imports=silent", "--no-error-summary",
            "--cache-dir", str(tmp_path / "cache")]
    good = subprocess.run(base + ["good.py"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)
    assert good.returncode == 0, good.stdout + good.stderr
    bad = subprocess.run(base + ["bad.py"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=600)
    flagged = {int(m) for m in re.findall(r"^bad\.py:(\d+): error", bad.stdout, re.M)}
    assert flagged == expected, bad.stdout


# ------------------------------------------------------------------ sdist and wheel

def _packaging_enabled():
    flag = os.environ.get("KERNSOLVE_TEST_PACKAGING", "").strip().lower()
    if flag:
        return flag not in ("0", "no", "false", "off")
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


packaging = pytest.mark.skipif(
    not _packaging_enabled(),
    reason="builds and installs the sdist and wheel (minutes): runs in CI, or with "
           "KERNSOLVE_TEST_PACKAGING=1")


def _run(cmd, timeout, **kwargs):
    # The timeout is a hang guard only, far above the minutes a build takes.
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kwargs)
    return proc, proc.stdout + proc.stderr


def _clean_copy(dest):
    """The source tree as a fresh clone has it (no build products, no git)."""
    shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", "*.so", "*.c",
        "_build_config.py", ".pytest_cache", ".hypothesis", ".mypy_cache", "site", "venv"))


@in_clone
@packaging
def test_build_makes_an_sdist_and_a_wheel_that_install_and_run(tmp_path):
    assert importlib.util.find_spec("build"), "pip install -e '.[test]' installs 'build'"
    src, dist = tmp_path / "src", tmp_path / "dist"
    _clean_copy(src)
    # python -m build: the sdist, then the wheel built from the unpacked sdist
    # (what pip install does with the sdist)
    proc, out = _run([sys.executable, "-m", "build", "--outdir", str(dist), str(src)],
                     timeout=3600)
    assert proc.returncode == 0, out[-5000:]
    modules = _pyx_modules()
    assert len(modules) >= 10

    # the build said what it was doing, one line a phase, without the compiler's output
    phases = [ln.strip() for ln in out.splitlines() if ln.strip().startswith("kernsolve build:")]
    assert [p.split(":")[1].split()[0] for p in phases] == ["C", "Cython", "compiling", "built"]
    assert f"compiling {len(modules)} extension modules with" in phases[2]
    assert not [ln for ln in out.splitlines()
                if re.search(r" -c \S+\.c\b|\.c:\d+:\d+: (warning|note)", ln)]

    (sdist,) = glob.glob(str(dist / "*.tar.gz"))
    with tarfile.open(sdist) as tar:
        sdist_files = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for needed in ["LICENSE", "README.md", "PKG-INFO", "pyproject.toml", "setup.py",
                   "MANIFEST.in", "doc/install.md", "kernsolve/py.typed",
                   "kernsolve/_core/_solver.pxd", "kernsolve/_core/_omp_shim.h"] \
            + [m + ".pyx" for m in modules]:
        assert needed in sdist_files, needed
    assert [f for f in sdist_files if f.endswith((".c", ".so"))] == []
    assert "kernsolve/_build_config.py" not in sdist_files

    (wheel,) = glob.glob(str(dist / "*.whl"))
    with zipfile.ZipFile(wheel) as whl:
        wheel_files = set(whl.namelist())
        (metadata_name,) = [n for n in wheel_files if n.endswith(".dist-info/METADATA")]
        metadata = whl.read(metadata_name).decode()
    assert [f for f in wheel_files if f.endswith(".c")] == []
    for module in modules:
        assert [f for f in wheel_files if f.startswith(module + ".") and f.endswith(".so")], \
            module
    assert "kernsolve/py.typed" in wheel_files
    assert "kernsolve/_build_config.py" in wheel_files
    assert [f for f in wheel_files if f.endswith(".dist-info/licenses/LICENSE")]
    project = _pyproject()["project"]
    assert "License-Expression: BSD-3-Clause" in metadata.splitlines()
    assert f"Requires-Python: {project['requires-python']}" in metadata.splitlines()
    for classifier in project["classifiers"]:
        assert f"Classifier: {classifier}" in metadata.splitlines()

    # a fresh venv installs the wheel and runs kernsolve from outside the clone
    venv = tmp_path / "venv"
    proc, out = _run([sys.executable, "-m", "venv", str(venv)], timeout=600)
    assert proc.returncode == 0, out
    python = str(venv / "bin" / "python")
    proc, out = _run([python, "-m", "pip", "install", "--quiet", wheel], timeout=1800)
    assert proc.returncode == 0, out[-5000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc, out = _run([python, "-m", "kernsolve"], timeout=600, cwd=elsewhere)
    assert proc.returncode == 0, out
    assert re.search(r"^Accuracy = [\d.]+% \(\d+/70\) \(classification\)$", proc.stdout, re.M)
    check = textwrap.dedent("""\
        import os, typing, kernsolve
        from kernsolve import _config
        assert kernsolve.__file__.startswith(os.environ["VENV"]), kernsolve.__file__
        typing.get_type_hints(kernsolve.train)
        here = os.path.dirname(kernsolve.__file__)
        assert os.path.isfile(os.path.join(here, "py.typed"))
        print(_config.config()["compile_args"])
        """)
    proc, out = _run([python, "-c", check], timeout=600, cwd=elsewhere,
                     env=dict(os.environ, VENV=str(venv)))
    assert proc.returncode == 0, out
    assert "-O3" in proc.stdout
    model = elsewhere / "heart.model"
    proc, out = _run([str(venv / "bin" / "kernsolve-train"), "-q",
                      kernsolve.dataset_path("heart_scale"), str(model)], timeout=600,
                     cwd=elsewhere)
    assert proc.returncode == 0, out
    assert model.read_text().startswith("svm_type c_svc\n")

    # no C compiler: one sentence that says so, no traceback
    proc, out = _run([sys.executable, "-m", "build", "--wheel", "--outdir",
                      str(tmp_path / "nocc"), sdist], timeout=1800,
                     env=dict(os.environ, CC=str(tmp_path / "no-such-cc")))
    assert proc.returncode != 0
    assert "kernsolve needs a C compiler to build its compiled core and found none" in out
    assert "Traceback" not in out


# ------------------------------------------------------------------ the wheel of a built clone

def _built_in_place():
    """This checkout's modules as ``build_ext --inplace`` (or ``pip install -e .``)
    left them, with the record of their switches, or None."""
    record = os.path.join(ROOT, "kernsolve", "_build_config.py")
    modules = glob.glob(os.path.join(ROOT, "kernsolve", "**", "*.so"), recursive=True)
    if not os.path.exists(record) or len(modules) != len(_pyx_modules()):
        return None
    return [record] + modules + glob.glob(os.path.join(ROOT, "kernsolve", "**", "*.c"),
                                          recursive=True)


@in_clone
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the Linux wheel")
def test_wheel_of_a_built_clone_keeps_its_modules_and_installs_in_a_fresh_venv(tmp_path):
    """``pip wheel --no-deps --no-build-isolation`` of a clone built in place
    compiles nothing (every module is kept, in seconds), and the wheel installs
    in a fresh venv and runs from outside the clone.  The full build from a
    clean sdist is the slow test above (CI)."""
    built = _built_in_place()
    if built is None:
        pytest.skip("this checkout has no complete in-place build (python setup.py "
                    "build_ext --inplace, or pip install -e .)")
    src, dist = tmp_path / "src", tmp_path / "dist"
    _clean_copy(src)
    for path in built:               # copy2: the build's times, newer than the sources
        shutil.copy2(path, src / os.path.relpath(path, ROOT))
    proc, out = _run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps",
                      "--no-build-isolation", "--no-index", "-w", str(dist), str(src)],
                     timeout=600)
    assert proc.returncode == 0, out[-5000:]
    modules = _pyx_modules()
    (compiling,) = [ln.strip() for ln in out.splitlines() if "kernsolve build: compiling" in ln]
    assert compiling.startswith("kernsolve build: compiling 0 extension modules with"), compiling
    assert f"({len(modules)} already built in the source tree and unchanged: kept)" in compiling
    assert not re.search(r"^\s*(gcc|cc|x86_64-linux-gnu-gcc)\b.* -c ", out, re.M)

    (wheel,) = glob.glob(str(dist / "*.whl"))
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
        (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = whl.read(metadata_name).decode().splitlines()
        config = whl.read("kernsolve/_build_config.py").decode()
    for module in modules:
        assert [n for n in names if n.startswith(module + ".") and n.endswith(".so")], module
    assert [n for n in names if n.endswith(".c")] == []
    project = _pyproject()["project"]
    assert f"Name: {project['name']}" in metadata and f"Version: {project['version']}" in metadata
    assert "License-Expression: BSD-3-Clause" in metadata
    # the wheel says how its modules were built: the in-place build's record
    with open(os.path.join(ROOT, "kernsolve", "_build_config.py")) as f:
        assert config == f.read()

    # a fresh venv; NumPy, SciPy, joblib and threadpoolctl come from this
    # environment's site-packages through a .pth file (no network needed), the
    # package only from the wheel
    venv = tmp_path / "venv"
    proc, out = _run([sys.executable, "-m", "venv", str(venv)], timeout=600)
    assert proc.returncode == 0, out
    python = str(venv / "bin" / "python")
    proc, out = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     timeout=120)
    site = proc.stdout.strip()
    deps = {os.path.dirname(os.path.dirname(importlib.util.find_spec(name).origin))
            for name in ("numpy", "scipy", "joblib", "threadpoolctl")}
    with open(os.path.join(site, "kernsolve-test-deps.pth"), "w") as f:
        f.write("\n".join(sorted(deps)) + "\n")
    proc, out = _run([python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                      wheel], timeout=600)
    assert proc.returncode == 0, out[-5000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc, out = _run([python, "-c", "import kernsolve; print(kernsolve.__file__)"],
                     timeout=120, cwd=elsewhere)
    assert proc.returncode == 0, out
    assert proc.stdout.strip().startswith(site), proc.stdout
    proc, out = _run([python, "-m", "kernsolve"], timeout=300, cwd=elsewhere)
    assert proc.returncode == 0, out
    assert re.search(r"^Accuracy = [\d.]+% \(\d+/70\) \(classification\)$", proc.stdout, re.M)
    # --docs names a place that exists for this installed user
    proc, out = _run([python, "-m", "kernsolve", "--docs"], timeout=120, cwd=elsewhere)
    assert proc.returncode == 0 and "python -m pydoc kernsolve" in proc.stdout, out


@in_clone
def test_cibuildwheel_configuration_builds_what_is_claimed():
    """The [tool.cibuildwheel] table against the project's own claims:
    CPython versions from requires-python, 64-bit only, a test command that runs
    the installed package, and OpenMP settled on each platform."""
    project = _pyproject()["project"]
    cibw = _pyproject()["tool"]["cibuildwheel"]
    oldest = re.fullmatch(r">=3\.(\d+)", project["requires-python"]).group(1)
    built = cibw["build"].split()
    assert built[0] == f"cp3{oldest}-*"
    assert all(re.fullmatch(r"cp3\d+-\*", b) for b in built)
    assert f"Programming Language :: Python :: 3.{oldest}" in project["classifiers"]
    assert {"*-win32", "*_i686"} <= set(cibw["skip"].split())
    tests = cibw["test-command"]
    assert tests[0] == "python -m kernsolve"
    assert any("{package}/kernsolve/datasets/heart_scale.xz" in t for t in tests)
    assert os.path.exists(os.path.join(ROOT, "kernsolve", "datasets", "heart_scale.xz"))
    assert set(cibw["linux"]["archs"]) == {"x86_64", "aarch64"}
    assert cibw["macos"]["environment"]["KERNSOLVE_OPENMP"] == "1"
    assert "libomp" in cibw["macos"]["before-all"]
    assert cibw["windows"]["environment"]["KERNSOLVE_OPENMP"] == "0"
    # cibuildwheel itself, when installed, reads the table and lists the wheels
    exe = shutil.which("cibuildwheel")
    if exe is None:
        return
    proc, out = _run([exe, "--print-build-identifiers", "--platform", "linux", ROOT],
                     timeout=300)
    assert proc.returncode == 0, out
    ids = proc.stdout.split()
    assert f"cp3{oldest}-manylinux_x86_64" in ids and not [i for i in ids if "i686" in i]
