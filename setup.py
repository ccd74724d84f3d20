"""Build script for kernsolve's compiled core.

Every ``kernsolve/**/*.pyx`` becomes one extension module named after its
path (the shared engines in ``_core/``, each solver's loops in its folder under
``solvers/``), so adding a solver needs no edit here.

Everything that needs a compiler happens in ``build_ext`` (``BuildExt``
below), so making an sdist needs none.  It runs in phases and prints one line
for each: the C compiler is checked (no compiler, or no ``Python.h``, is one
sentence, not a traceback); OpenMP is detected by compiling *and running* a
small program; Cython translates the ``.pyx`` files with one process per job;
the C files are compiled with parallel jobs.  The compiler's own output is
shown only for a module that fails, or with ``KERNSOLVE_BUILD_VERBOSE=1`` (or
``setup.py -v``).

Jobs: ``-j N`` / ``--parallel N`` (or ``[build_ext] parallel`` in setup.cfg)
when given, else ``KERNSOLVE_BUILD_JOBS``, else the number of cores this
process may use.  ``KERNSOLVE_OPENMP=0`` forces OpenMP off, ``=1`` forces it
on (the build then fails if the compiler cannot do it); ``KERNSOLVE_DEBUG=1``
turns Cython's bounds and wraparound checks back on and keeps the debug
information (``-g``; release builds compile with ``-g0`` and, on Linux, link
with ``-s``, so the modules carry no debug sections and no symbol table);
``KERNSOLVE_ONLY=_a,_b`` builds only those modules (by basename).
doc/install.md lists them all.

Every build keeps the modules already built in the source tree (by
``build_ext --inplace`` or ``pip install -e .``) that are newer than their
``.pyx`` and every ``.h``/``.pxd`` of the project, when the source tree's
``_build_config.py`` records the same switches: they are copied, not
compiled.  So an editable install compiles only what changed (setuptools
builds it in a fresh temporary folder, which would compile everything), and
``pip wheel --no-build-isolation`` of a built clone takes seconds.  A build
with other switches than the last one's compiles everything.
"""
import contextlib
import glob
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time

import setuptools

# pyproject.toml states its license as an SPDX expression (PEP 639), which
# older setuptools reject with a schema dump: say what to do instead.
if int(setuptools.__version__.split(".")[0]) < 77:
    sys.exit(f"kernsolve needs setuptools >= 77 to build (this Python has "
             f"{setuptools.__version__}): run 'python -m pip install -U \"setuptools>=77\"', "
             f"or build with pip or 'python -m build', which fetch it")

import numpy  # noqa: E402  (build requirements, like setuptools)
from Cython.Build import cythonize  # noqa: E402
from setuptools import Extension, setup  # noqa: E402
from setuptools.command.build_ext import build_ext  # noqa: E402
from setuptools.errors import CompileError, PlatformError  # noqa: E402

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

# What every extension includes: a compiler that builds this builds kernsolve.
HEADERS_TEST = r"""
#include <Python.h>
#include <numpy/arrayobject.h>
int kernsolve_probe(void) { return 0; }
"""

DIRECTIVES = {
    "language_level": 3,
    "cdivision": True,
    "embedsignature": True,
}

NO_COMPILER = (
    "kernsolve needs a C compiler to build its compiled core and {what}: install one "
    "(Debian/Ubuntu: apt-get install gcc python3-dev; Fedora: dnf install gcc "
    "python3-devel; macOS: xcode-select --install) or point CC at it")


def _flag(name):
    return os.environ.get(name, "").strip().lower()


def _on(name):
    return _flag(name) in ("1", "on", "true", "yes")


def _selected(path):
    # Developer switch: KERNSOLVE_ONLY=_dsg,_features rebuilds just those modules,
    # so one engineer's half-written .pyx does not stop another's build.
    only = os.environ.get("KERNSOLVE_ONLY", "").strip()
    name = os.path.splitext(os.path.basename(path))[0]
    return not only or name in {m.strip() for m in only.split(",")}


def _module_name(path):
    # kernsolve/solvers/smo/_smo.pyx -> kernsolve.solvers.smo._smo
    return os.path.splitext(path)[0].replace(os.sep, ".")


def _usable_cores():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _run(cmd):
    """Run cmd; return (ok, its combined output)."""
    try:
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except OSError as exc:
        return False, str(exc)
    return out.returncode == 0, out.stdout


def _first_error(output):
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error" in ln.lower()]
    return (errors or lines or ["no output"])[0]


@contextlib.contextmanager
def _quiet_fds(enabled):
    """Send what this process and its children write to fds 1 and 2 to a
    temporary file; show it only if the block fails."""
    if not enabled:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    with tempfile.TemporaryFile() as log:
        saved = os.dup(1), os.dup(2)
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        failed = True
        try:
            yield
            failed = False
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            if failed:
                log.seek(0)
                sys.stderr.write(log.read().decode("utf-8", "replace"))
                sys.stderr.flush()


class BuildExt(build_ext):
    """setuptools' build_ext, in announced phases, with parallel jobs by default."""

    def run(self):
        self._into_source = self.inplace      # setuptools resets it while building
        self._kept = set()                    # modules built in place already, kept
        super().run()

    def _say(self, text):
        if self.verbose:
            print(f"kernsolve build: {text}", flush=True)

    def _jobs(self):
        """The user's -j/--parallel or KERNSOLVE_BUILD_JOBS, else the usable cores."""
        jobs = self.parallel
        if jobs in (None, False, 0):
            env = os.environ.get("KERNSOLVE_BUILD_JOBS", "").strip()
            if env:
                try:
                    jobs = int(env)
                except ValueError:
                    jobs = 0
                if jobs < 1:
                    raise PlatformError(f"KERNSOLVE_BUILD_JOBS must be a positive integer, "
                                        f"got {env!r}")
            else:
                jobs = _usable_cores()
        elif jobs is True:
            jobs = _usable_cores()
        return max(1, min(int(jobs), len(self.extensions)))

    def _compiler_command(self):
        """The compiler as setuptools will call it (argv list), or None (MSVC)."""
        command = getattr(self.compiler, "compiler_so", None)
        return list(command) if command else None

    def _check_compiler(self, command):
        exe = command[0]
        if shutil.which(exe) is None:
            raise PlatformError(NO_COMPILER.format(
                what=f"found none ('{exe}' is not installed)"))
        tmp = tempfile.mkdtemp(prefix="kernsolve-cc-")
        try:
            src = os.path.join(tmp, "probe.c")
            with open(src, "w") as f:
                f.write(HEADERS_TEST)
            folders = [sysconfig.get_paths()["include"], numpy.get_include()]
            includes = [f"-I{d}" for d in folders + list(self.include_dirs or [])]
            obj = os.path.join(tmp, "probe.o")
            ok, output = _run(command + includes + ["-c", src, "-o", obj])
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        if not ok:
            raise PlatformError(NO_COMPILER.format(
                what=f"'{exe}' cannot compile a file that includes Python.h and NumPy's "
                     f"headers ({_first_error(output)})"))

    @staticmethod
    def _detect_openmp(exe):
        """True when the compiler can build and run an OpenMP program."""
        tmp = tempfile.mkdtemp(prefix="kernsolve-omp-")
        try:
            src = os.path.join(tmp, "omp.c")
            prog = os.path.join(tmp, "omp")
            with open(src, "w") as f:
                f.write(OPENMP_TEST)
            ok, _ = _run([exe, "-fopenmp", src, "-o", prog])
            if not ok:
                return False
            ok, output = _run([prog])
            return ok and output.strip() == "1"
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _use_openmp(self, exe):
        forced = _flag("KERNSOLVE_OPENMP")
        if forced in ("0", "off", "false", "no"):
            return False
        found = self._detect_openmp(exe)
        if _on("KERNSOLVE_OPENMP") and not found:
            raise PlatformError("KERNSOLVE_OPENMP=1 but the compiler cannot build an "
                                "OpenMP program")
        if not found:
            print("WARNING: OpenMP not available; kernsolve will run single-threaded",
                  file=sys.stderr)
        return found

    @staticmethod
    def _built_with(folder):
        """The record of the build that made the modules in ``folder``, or None."""
        try:
            with open(os.path.join(folder, "_build_config.py")) as f:
                text = f.read()
        except OSError:
            return None
        record = {}
        try:
            exec(compile(text, "_build_config.py", "exec"), {}, record)
        except Exception:     # a hand-edited or truncated record: build again
            return None
        return record

    def _in_source(self, ext):
        """Where the module of ``ext`` sits in the source tree."""
        name = os.path.basename(self.get_ext_filename(ext.name))
        return os.path.join(*ext.name.split(".")[:-1], name)

    def _up_to_date_in_source(self, ext):
        """True when the source tree has this module, built after its .pyx and
        every header and declaration file of the project (the switches are
        checked by the caller)."""
        target = self._in_source(ext)
        if not os.path.exists(target):
            return False
        built = os.path.getmtime(target)
        return all(os.path.getmtime(dep) <= built
                   for dep in list(ext.sources) + list(ext.depends or [])
                   if os.path.exists(dep))

    def build_extension(self, ext):
        if ext.name in self._kept:       # the source tree's module, unchanged
            target = self.get_ext_fullpath(ext.name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(self._in_source(ext), target)
            return
        super().build_extension(ext)

    def _config_folder(self):
        # beside the built modules: the source tree for --inplace and editable installs
        if getattr(self, "_into_source", self.inplace):
            return "kernsolve"
        return os.path.join(self.build_lib, "kernsolve")

    def _write_build_config(self, record):
        # Read by kernsolve.show_config(), and by the next build (its flags).
        text = "# Written by setup.py at build time.\n" + "".join(
            f"{key} = {value!r}\n" for key, value in record.items())
        folder = self._config_folder()
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "_build_config.py"), "w") as f:
            f.write(text)

    def build_extensions(self):
        start = time.perf_counter()
        jobs = self._jobs()
        loud = self.verbose > 1 or _on("KERNSOLVE_BUILD_VERBOSE")
        command = self._compiler_command()
        exe = command[0] if command else (os.environ.get("CC") or "cc")
        if command:
            self._check_compiler(command)
        openmp = self._use_openmp(exe)
        debug = _flag("KERNSOLVE_DEBUG") not in ("", "0")
        # Release builds carry no debug info (Python's own CFLAGS often hold -g,
        # which a later -g0 cancels): a third of the size of the modules with it.
        # KERNSOLVE_DEBUG=1 keeps it, with Cython's bounds checks.
        compile_args = ["-O3", "-fno-math-errno", "-g" if debug else "-g0"] + \
            (["-fopenmp"] if openmp else [])
        # ... and on Linux are stripped at link (GNU ld's -s: no symbol table;
        # the module's exported PyInit_ stays in the dynamic one).  macOS's and
        # Windows' linkers spell it differently: there the modules keep their
        # symbol table (-g0 still leaves out the debug information).
        link_args = (["-fopenmp"] if openmp else []) + \
            (["-s"] if not debug and sys.platform.startswith("linux") else [])
        self._say(f"C compiler {os.path.basename(exe)} works; OpenMP "
                  f"{'on' if openmp else 'off'}; flags {' '.join(compile_args)}; "
                  f"link {' '.join(link_args) or '(no flags)'}")
        for ext in self.extensions:
            ext.extra_compile_args = list(compile_args)
            ext.extra_link_args = list(link_args)
        # (NumPy's major version too: a module built against NumPy 1 does not
        # load under NumPy 2, so another major version builds again)
        record = {"OPENMP": openmp, "DEBUG": debug, "COMPILER": exe,
                  "COMPILE_ARGS": compile_args, "LINK_ARGS": link_args,
                  "NUMPY_MAJOR": int(numpy.__version__.split(".")[0])}
        previous = self._built_with(self._config_folder())
        if previous is not None and previous != record:
            # built before with other switches: every module again, since
            # setuptools compares only the files' times
            self.force = True

        # The modules the source tree has, built with these switches after
        # every project source they come from: neither translated nor compiled
        # (a fresh Cython or NumPy under pip's build isolation would otherwise
        # make their C "newer" than the module).
        if not self.force and self._built_with("kernsolve") == record:
            self._kept = {ext.name for ext in self.extensions
                          if self._up_to_date_in_source(ext)}
        kept = len(self._kept)
        work = [ext for ext in self.extensions if ext.name not in self._kept]

        n = len(self.extensions)
        self._say(f"Cython: translating {len(work)} .pyx modules to C with {jobs} "
                  f"process{'es' if jobs > 1 else ''} (unchanged ones are skipped)")
        directives = dict(DIRECTIVES, boundscheck=debug, wraparound=debug,
                          initializedcheck=debug)
        # include_path ".": solvers cimport the engines as kernsolve._core.NAME
        translated = cythonize(work, compiler_directives=directives,
                               include_path=["."], nthreads=jobs if jobs > 1 else 0,
                               force=self.force, quiet=not loud) if work else []
        sources = {ext.name: ext.sources for ext in translated}
        for ext in work:
            ext.sources = sources[ext.name]

        self._say(f"compiling {n - kept} extension modules with {jobs} parallel "
                  f"job{'s' if jobs > 1 else ''}"
                  + (f" ({kept} already built in the source tree and unchanged: kept)"
                     if kept else "")
                  + ("" if loud else " (compiler output shown only if one fails; "
                                     "KERNSOLVE_BUILD_VERBOSE=1 shows it all)"))
        self.parallel = jobs
        with _quiet_fds(not loud):
            super().build_extensions()
        # written once the modules are built, so that it never speaks for a
        # failed or an older build
        self._write_build_config(record)
        self._say(f"built {n - kept} modules in {time.perf_counter() - start:.0f} s"
                  + (f" ({kept} kept)" if kept else ""))


# Every hand-written header and declaration file: a change to one rebuilds the
# modules (setuptools compares only the sources with the built module otherwise,
# so an edited header left the old code in place).
_HEADERS = sorted(glob.glob(os.path.join("kernsolve", "**", "*.h"), recursive=True)
                  + glob.glob(os.path.join("kernsolve", "**", "*.pxd"), recursive=True))

extensions = [
    Extension(
        _module_name(path),
        [path],
        include_dirs=[numpy.get_include(), "kernsolve/_core"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        depends=_HEADERS,
    )
    # the shared engines in _core/, and each solver's loops beside its Python
    for path in sorted(glob.glob(os.path.join("kernsolve", "**", "*.pyx"), recursive=True))
    if _selected(path)
]

setup(ext_modules=extensions, cmdclass={"build_ext": BuildExt})
