"""How long a new user's install takes: the README's two install commands in a
fresh clone and a fresh venv, and ``python -m build``.

Clones this repository (its committed HEAD) into a scratch folder, makes a
venv there (pip upgraded, not timed), then times, each a whole shell command
from the clone's root:

1. ``pip install -e . && python -m kernsolve`` (the README's main command:
   the dependencies from the package index or pip's cache, the compiled core
   built);
2. ``pip install -e ".[test]"`` (the install half of the README's test
   command, right after: the modules built by 1 are kept);
3. with ``--build``, ``python -m build`` (sdist and wheel, in build isolation).

Usage (a quiet machine; the times include pip's downloads, or its cache)::

    python benchmarks/bench_install.py --build
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

from benchlib import REPO, load_average

STEPS = [("main command", "pip install -q -e . && python -m kernsolve > /dev/null"),
         ("test extra", "pip install -q -e '.[test]'")]
BUILD = ("python -m build", "pip install -q build && python -m build > /dev/null")


def _run(command, cwd, env):
    t = time.perf_counter()
    subprocess.run(["bash", "-c", command], cwd=cwd, env=env, check=True)
    return time.perf_counter() - t


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", action="store_true", help="also time python -m build")
    ap.add_argument("--workdir", default=None, help="scratch folder (default: a new temporary one)")
    args = ap.parse_args(argv)
    work = args.workdir or tempfile.mkdtemp(prefix="bench_install_")
    clone = os.path.join(work, "kernsolve")
    subprocess.run(["git", "clone", "-q", REPO, clone], check=True)
    venv = os.path.join(work, "venv")
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    env = dict(os.environ, VIRTUAL_ENV=venv, PATH=os.path.join(venv, "bin") + os.pathsep +
               os.environ.get("PATH", ""))
    env.pop("PYTHONPATH", None)
    _run("python -m pip install -q --upgrade pip", clone, env)
    print(f"load average {load_average():.2f}; clone of {REPO} in {clone}", flush=True)
    steps = STEPS + ([BUILD] if args.build else [])
    for name, command in steps:
        print(f"{name}: {_run(command, clone, env):.1f} s  ({command})", flush=True)
    print(f"load average {load_average():.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
