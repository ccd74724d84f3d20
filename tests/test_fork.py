"""A process forked after kernsolve computed on threads works (issue 31, item 2).

GNU OpenMP's threads do not survive fork(): before the fix, a child forked after
``kernsolve.predict`` on two threads hung forever in its first parallel region.
Oracle: the parent's own predictions, which the child must give bit for bit
(results do not depend on the thread count), for every solver, after a bare
``os.fork()`` and under multiprocessing's fork start method.  Each case runs in
a fresh interpreter (the pytest process's threads are not the point), with a
timeout that only a hang reaches.
"""
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import package_env

HANG = 600      # seconds: heart_scale trains in well under one; only a hang gets here

PARENT = textwrap.dedent("""
    import os, sys, pickle, warnings
    import numpy as np
    import kernsolve
    y, X = kernsolve.read_problem(kernsolve.dataset_path("heart_scale"))
    SOLVERS = {
        "smo": "-c 4 -g 0.05",
        "sbp": "--solver sbp --epochs 2 -g 0.05",
        "dsg": "--solver dsg -g 0.05 --epochs 2",
        "eigenpro": "--solver eigenpro --centers 40 -g 0.05",
    }

    def run():
        out = {}
        for name, options in SOLVERS.items():
            model = kernsolve.train(y[:200], X[:200], options + " -q --threads 2")
            labels, _, values = kernsolve.predict(y[200:], X[200:], model, "-q --threads 2")
            out[name] = (labels.tobytes(), np.asarray(values).tobytes())
        return out

    parent = run()
""")


def _run(script, tmp_path):
    path = tmp_path / "case.py"
    path.write_text(PARENT + textwrap.dedent(script))
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          timeout=HANG, cwd=str(tmp_path), env=package_env())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() on this platform")
def test_a_bare_fork_after_predict_leaves_a_working_child(tmp_path):
    done = _run("""
        pid = os.fork()
        if pid == 0:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                child = run()
            said = [str(w.message) for w in caught if "forked" in str(w.message)]
            os._exit(0 if child == parent and len(said) == 1 else 3)
        _, status = os.waitpid(pid, 0)
        print("child exit", os.waitstatus_to_exitcode(status))
    """, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "child exit 0" in done.stdout, done.stdout + done.stderr


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() on this platform")
def test_multiprocessing_fork_workers_train_and_predict(tmp_path):
    done = _run("""
        import multiprocessing as mp

        def work(_):
            warnings.simplefilter("ignore")
            return run()

        if __name__ == "__main__":
            with mp.get_context("fork").Pool(2) as pool:
                results = pool.map(work, range(2))
            print("same", all(r == parent for r in results))
    """, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "same True" in done.stdout, done.stdout + done.stderr


def test_a_process_that_never_ran_threads_keeps_them_after_fork(tmp_path):
    # the rule applies only where a team may have started: a fork before any
    # count above one was resolved changes nothing
    path = tmp_path / "case.py"
    path.write_text(textwrap.dedent("""
        import os
        from kernsolve import _threads
        assert not _threads._state["team"]
        pid = os.fork()
        if pid == 0:
            os._exit(0 if _threads.resolve_n_jobs(2) == 2 else 3)
        _, status = os.waitpid(pid, 0)
        print("child exit", os.waitstatus_to_exitcode(status))
        assert _threads.resolve_n_jobs(2) == 2 and _threads._state["team"]
    """))
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          timeout=HANG, cwd=str(tmp_path), env=package_env())
    assert done.returncode == 0, done.stderr
    expected = 0 if hasattr(os, "fork") else None
    assert f"child exit {expected}" in done.stdout, done.stdout + done.stderr
