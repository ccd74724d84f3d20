"""The OpenMP wait policy kernsolve asks for at import (issue 12, item 3).

Oracle: libgomp itself.  With ``OMP_DISPLAY_ENV=verbose`` it prints the
settings it read from the environment when it was loaded, so a child Python
shows exactly which policy kernsolve's threads run under: passive (spin count
0) when the user chose nothing, the user's choice otherwise, and the user's
environment left as it was for everything loaded later.
"""
import re
import subprocess
import sys

import pytest

from conftest import package_env

from kernsolve._wait_policy import POLICY, USER_VARIABLES, openmp_loading

PROBE = ("import os, kernsolve\n"
         "from kernsolve._config import config\n"
         "print('env', os.environ.get('OMP_WAIT_POLICY'))\n"
         "print('config', config()['wait_policy'])\n")


def _child(tmp_path, **env):
    base = package_env(OMP_DISPLAY_ENV="verbose", **env)
    for name in USER_VARIABLES:
        if name not in env:
            base.pop(name, None)
    p = subprocess.run([sys.executable, "-c", PROBE], env=base, cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    spin = re.search(r"GOMP_SPINCOUNT = '(\d+)'", p.stderr)
    if spin is None:
        pytest.skip("the OpenMP runtime is not libgomp (or OpenMP is off): nothing to check")
    policy = re.search(r"OMP_WAIT_POLICY = '(\w+)'", p.stderr).group(1)
    lines = dict(line.split(" ", 1) for line in p.stdout.splitlines())
    return int(spin.group(1)), policy, lines


def test_passive_when_the_user_chose_nothing(tmp_path):
    spin, policy, lines = _child(tmp_path)
    assert (spin, policy) == (0, "PASSIVE")
    assert lines["env"] == "None"              # not left behind for other libraries
    assert lines["config"].startswith("passive")


def test_the_users_wait_policy_is_kept(tmp_path):
    spin, policy, lines = _child(tmp_path, OMP_WAIT_POLICY="active")
    assert policy == "ACTIVE" and spin > 300000
    assert lines["env"] == "active"
    assert lines["config"] == "set by the user: OMP_WAIT_POLICY=active"


def test_the_users_spin_count_is_kept(tmp_path):
    spin, _, lines = _child(tmp_path, GOMP_SPINCOUNT="1234")
    assert spin == 1234
    assert lines["env"] == "None"
    assert lines["config"] == "set by the user: GOMP_SPINCOUNT=1234"


def test_openmp_loading_sets_the_policy_only_while_loading():
    environ = {"PATH": "/bin"}
    with openmp_loading(environ):
        assert environ["OMP_WAIT_POLICY"] == POLICY
    assert environ == {"PATH": "/bin"}
    environ = {"GOMP_SPINCOUNT": "10"}
    with openmp_loading(environ):
        assert "OMP_WAIT_POLICY" not in environ
    assert environ == {"GOMP_SPINCOUNT": "10"}


def test_same_model_bytes_under_any_wait_policy(tmp_path):
    # only speed depends on the policy: libgomp's spinning default and
    # kernsolve's passive one give the same model, byte for byte
    import kernsolve
    data = kernsolve.dataset_path("heart_scale")
    models = []
    for extra in ({}, {"OMP_WAIT_POLICY": "active"}, {"GOMP_SPINCOUNT": "300000"}):
        out = tmp_path / f"m{len(models)}"
        env = package_env(**extra)
        for name in USER_VARIABLES:
            if name not in extra:
                env.pop(name, None)
        code = ("import kernsolve, sys\n"
                "y, X = kernsolve.read_problem(sys.argv[1])\n"
                "kernsolve.save_model(sys.argv[2], kernsolve.train(y, X, '-q -b 1 -c 4 --threads 2'))\n")
        subprocess.run([sys.executable, "-c", code, data, str(out)], env=env, cwd=tmp_path,
                       check=True, timeout=120)
        models.append(out.read_bytes())
    assert models[0] == models[1] == models[2]


# numpy's OpenBLAS in a command's process (issue 35 item 4): oracle, the
# library's own report of the timeout it read when it loaded
# (openblas_thread_timeout(): 0 for its default).
BLAS_PROBE = ("import os, sys, ctypes\n"
              "first = sys.argv[1]\n"
              "if first == 'numpy':\n"
              "    import numpy\n"
              "import kernsolve.cli\n"
              "import threadpoolctl\n"
              "lib = [i['filepath'] for i in threadpoolctl.threadpool_info()\n"
              "       if i['user_api'] == 'blas' and 'numpy' in i['filepath']][0]\n"
              "print(ctypes.CDLL(lib).openblas_thread_timeout(),\n"
              "      os.environ.get('OPENBLAS_THREAD_TIMEOUT'))\n")


@pytest.mark.parametrize("first, env, expected", [
    ("cli", {}, "4 None"),                                   # a command's process
    ("cli", {"OPENBLAS_THREAD_TIMEOUT": "10"}, "10 10"),     # the user's choice
    ("numpy", {}, "0 None"),                                 # numpy loaded before: untouched
])
def test_commands_tell_numpys_openblas_not_to_wait_busy(tmp_path, first, env, expected):
    pytest.importorskip("threadpoolctl")
    base = package_env(**env)
    for name in ("OPENBLAS_THREAD_TIMEOUT", "GOTO_THREAD_TIMEOUT"):
        if name not in env:
            base.pop(name, None)
    p = subprocess.run([sys.executable, "-c", BLAS_PROBE, first], env=base, cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    if "openblas" not in p.stderr and p.stdout.strip() == "":
        pytest.skip("numpy's BLAS is not OpenBLAS")
    assert p.stdout.strip() == expected
