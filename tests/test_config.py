import io
import os

import pytest

import kernsolve
from kernsolve import resolve_n_jobs
from kernsolve._threads import cpu_count
from kernsolve._core import _parallel


def test_show_config_reports_openmp_and_threads():
    buf = io.StringIO()
    kernsolve.show_config(file=buf)
    text = buf.getvalue()
    assert kernsolve.__version__ in text
    assert f"openmp: {_parallel.openmp_enabled()}" in text
    assert "compile_args" in text


def test_n_jobs_rule(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    if not _parallel.openmp_enabled():
        assert resolve_n_jobs(None) == resolve_n_jobs(4) == 1
        return
    assert resolve_n_jobs(None) == cpu_count()
    assert resolve_n_jobs(-1) == cpu_count()
    assert resolve_n_jobs(-cpu_count() - 5) == 1
    assert resolve_n_jobs(3) == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert resolve_n_jobs(None) == 1


@pytest.mark.parametrize("bad", [0, 1.5, "two", True])
def test_n_jobs_rejects_nonsense(bad):
    with pytest.raises(ValueError, match="n_jobs"):
        resolve_n_jobs(bad)


def test_bundled_dataset_exists():
    assert kernsolve.dataset_path("heart_scale").endswith("heart_scale.xz")
    with pytest.raises(ValueError, match="available"):
        kernsolve.dataset_path("nope")


def test_unbuilt_source_tree_says_what_to_do(tmp_path):
    # Python started in a clone after a plain `pip install .` imports the
    # source folder, which has no compiled core: one sentence, not a bare
    # "cannot import name" from deep inside the package.
    import shutil
    import subprocess
    import sys
    import kernsolve
    src = os.path.dirname(os.path.abspath(kernsolve.__file__))
    shutil.copytree(src, tmp_path / "kernsolve",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for args in (["-c", "import kernsolve"], ["-m", "kernsolve"]):
        proc = subprocess.run([sys.executable, *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 1
        last = proc.stderr.strip().splitlines()[-1]
        assert last == (f"ImportError: kernsolve is being imported from its source folder "
                        f"{tmp_path}, whose compiled core is not built: run 'pip install -e .' "
                        "there (it builds the core in place), or start Python from another "
                        "folder to use an installed copy"), proc.stderr
