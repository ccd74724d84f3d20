import io

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
