"""Build script for kernsolve's compiled core.

Every ``kernsolve/**/*.pyx`` becomes one extension module named after its
path (the shared engines in ``_core/``, each solver's loops in its folder under
``solvers/``), so adding a solver needs no edit here.  OpenMP is detected by compiling *and running* a
small program; ``KERNSOLVE_OPENMP=0`` forces it off, ``KERNSOLVE_OPENMP=1``
forces it on (the build then fails loudly if the compiler cannot do it).
``KERNSOLVE_DEBUG=1`` turns Cython's bounds and wraparound checks back on.
"""
import glob
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

OPENMP_TEST = r"""
#include <omp.h>
#include <stdio.h>
int main(void) {
    int n = 0;
    #pragma omp parallel reduction(+:n)
    n += 1;
    printf("%d\n", n > 0);
    return 0;
}
"""


def _compiler():
    return os.environ.get("CC") or sysconfig.get_config_var("CC").split()[0] or "cc"


def detect_openmp():
    """Return True when the C compiler can build and run an OpenMP program."""
    tmp = tempfile.mkdtemp(prefix="kernsolve-omp-")
    try:
        src = os.path.join(tmp, "omp.c")
        exe = os.path.join(tmp, "omp")
        with open(src, "w") as f:
            f.write(OPENMP_TEST)
        subprocess.run([_compiler(), "-fopenmp", src, "-o", exe], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out = subprocess.run([exe], check=True, capture_output=True, text=True)
        return out.stdout.strip() == "1"
    except (OSError, subprocess.CalledProcessError):
        return False
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def use_openmp():
    forced = os.environ.get("KERNSOLVE_OPENMP", "").strip().lower()
    if forced in ("0", "off", "false", "no"):
        return False
    found = detect_openmp()
    if forced in ("1", "on", "true", "yes") and not found:
        sys.exit("KERNSOLVE_OPENMP=1 but the compiler cannot build an OpenMP program")
    if not found:
        print("WARNING: OpenMP not available; kernsolve will run single-threaded",
              file=sys.stderr)
    return found


OPENMP = use_openmp()
DEBUG = os.environ.get("KERNSOLVE_DEBUG", "0") not in ("", "0")
COMPILE_ARGS = ["-O3", "-fno-math-errno"] + (["-fopenmp"] if OPENMP else [])
LINK_ARGS = ["-fopenmp"] if OPENMP else []

DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "embedsignature": True,
}

# Recorded so kernsolve.show_config() can report how this copy was built.
with open(os.path.join("kernsolve", "_build_config.py"), "w") as f:
    f.write("# Written by setup.py at build time.\n")
    f.write(f"OPENMP = {OPENMP!r}\n")
    f.write(f"DEBUG = {DEBUG!r}\n")
    f.write(f"COMPILER = {_compiler()!r}\n")
    f.write(f"COMPILE_ARGS = {COMPILE_ARGS!r}\n")

def _selected(path):
    # Developer switch: KERNSOLVE_ONLY=_dsg,_features rebuilds just those modules,
    # so one engineer's half-written .pyx does not stop another's build.
    only = os.environ.get("KERNSOLVE_ONLY", "").strip()
    name = os.path.splitext(os.path.basename(path))[0]
    return not only or name in {m.strip() for m in only.split(",")}


def _module_name(path):
    # kernsolve/solvers/smo/_smo.pyx -> kernsolve.solvers.smo._smo
    return os.path.splitext(path)[0].replace(os.sep, ".")


extensions = [
    Extension(
        _module_name(path),
        [path],
        include_dirs=[numpy.get_include(), "kernsolve/_core"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=COMPILE_ARGS,
        extra_link_args=LINK_ARGS,
    )
    # the shared engines in _core/, and each solver's loops beside its Python
    for path in sorted(glob.glob(os.path.join("kernsolve", "**", "*.pyx"), recursive=True))
    if _selected(path)
]

setup(
    # include_path ".": solvers cimport the engines as kernsolve._core.NAME
    ext_modules=cythonize(extensions, compiler_directives=DIRECTIVES, include_path=["."]),
)
