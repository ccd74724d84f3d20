"""The examples write into an output folder, never over the tracked files of examples/.

Oracles: the files on disk (the tracked files of examples/ byte for byte
unchanged, the outputs in the folder given or in ./kernsolve-output) and git
itself (``git check-ignore`` says the default folder is ignored).
"""
import glob
import os
import shutil
import subprocess
import sys

import pytest

from conftest import SHARED_DATA, package_env, shared_path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")
if not os.path.isdir(EXAMPLES):          # tests run from an installed copy
    pytest.skip("examples/ not found beside tests/", allow_module_level=True)

# the writing examples, with arguments that make them quick
RUNS = {
    "sbp_vs_baselines.py": (["--rows", "300", "--epochs", "1", "--checks", "2",
                             "--threads", "1"], "a9a", "sbp_vs_baselines"),
    "dsg_udsg_cdsg.py": (["--rows", "300", "--test-rows", "200", "--objective-rows", "100",
                          "--epochs", "1", "--checkpoints", "1", "--threads", "1"], "a9a",
                         "dsg_udsg_cdsg"),
    # plots the JSON rows tracked beside it (no data set)
    "time_to_accuracy.py": ([os.path.join(EXAMPLES, "time_to_accuracy.json")], None,
                            "time_to_accuracy"),
    # plots bench_scale.py's rows of a small run at 1000, 2000, 4000 rows (with
    # growth runs of SMO and ThunderSVM at 250, 500, 1000), kept beside the tests
    "more_rows.py": ([os.path.join(ROOT, "tests", "more_rows_fixture.json")], None,
                     "more_rows"),
}
# the printing examples (they write no file), with their quick settings
PRINTS = {"eigenpro_vs_sgd.py": ["--quick"], "sklearn_pipeline.py": ["--quick"],
          "cluster_training.py": ["--quick"]}


def snapshot():
    return {p: open(p, "rb").read() for p in glob.glob(os.path.join(EXAMPLES, "*"))
            if os.path.isfile(p)}


def run_example(script, args, cwd):
    env = package_env(MPLBACKEND="Agg")
    env.setdefault("KERNSOLVE_SHARED_DATA", os.path.abspath(SHARED_DATA))
    return subprocess.run([sys.executable, os.path.join(EXAMPLES, script), *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("script", sorted(RUNS))
def test_example_writes_into_its_output_folder(script, tmp_path):
    args, data, stem = RUNS[script]
    if data is not None:
        shared_path(data)
    if script in ("time_to_accuracy.py", "more_rows.py"):
        pytest.importorskip("matplotlib")
    before = snapshot()
    proc = run_example(script, args, cwd=tmp_path)         # the default folder
    assert proc.returncode == 0, proc.stderr
    assert os.listdir(tmp_path) == ["kernsolve-output"]
    assert f"{stem}.csv" in os.listdir(tmp_path / "kernsolve-output")
    proc = run_example(script, args + ["--out-dir", str(tmp_path / "mine" / "run1")],
                       cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"{stem}.csv" in os.listdir(tmp_path / "mine" / "run1")
    # the examples folder itself is refused, before any work
    proc = run_example(script, args + ["--out-dir", EXAMPLES], cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines()[-1].endswith(
        f"error: --out-dir {EXAMPLES}: that is the examples folder, whose files are tracked; "
        "give another folder")
    assert snapshot() == before


@pytest.mark.parametrize("script", sorted(PRINTS))
def test_printing_example_runs_quick(script, tmp_path):
    """The examples that only print, on their quick settings: they run, write
    nothing (not even in the folder they run in), and print what they say."""
    if script == "sklearn_pipeline.py":
        pytest.importorskip("sklearn")
    if script == "cluster_training.py":
        pytest.importorskip("distributed")
    before = snapshot()
    proc = run_example(script, PRINTS[script], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert os.listdir(tmp_path) == [] and snapshot() == before
    if script == "eigenpro_vs_sgd.py":
        # the exact solution's line, then each solver at each epoch count
        lines = proc.stdout.splitlines()
        assert lines[0].startswith("exact kernel ridge") and len(lines) == 5, proc.stdout
    elif script == "cluster_training.py":
        # the cluster's EigenPro model against one process's (compared in the
        # script with np.array_equal), and both models far above chance
        assert "the same model, bit for bit: True" in proc.stdout, proc.stdout
        accuracies = [float(line.split("test accuracy ")[1].rstrip("%"))
                      for line in proc.stdout.splitlines() if "test accuracy" in line]
        assert len(accuracies) == 2 and min(accuracies) >= 60, proc.stdout
    else:
        # heart_scale held out: far above the majority class's 56 %
        accuracy = float(proc.stdout.split("test accuracy   :")[1].split()[0])
        assert accuracy >= 0.7, proc.stdout


def test_every_example_runs_in_the_suite():
    scripts = {os.path.basename(p) for p in glob.glob(os.path.join(EXAMPLES, "*.py"))}
    assert scripts - {"_output.py"} == set(RUNS) | set(PRINTS)


def test_default_output_folder_is_ignored_by_git(tmp_path):
    if shutil.which("git") is None or not os.path.isdir(os.path.join(ROOT, ".git")) and \
            not os.path.isfile(os.path.join(ROOT, ".git")):
        pytest.skip("not a git checkout")
    for where in ("kernsolve-output/x.png", "examples/kernsolve-output/x.csv"):
        proc = subprocess.run(["git", "check-ignore", "-q", where], cwd=ROOT)
        assert proc.returncode == 0, f"{where} is not ignored by .gitignore"


def test_every_writing_example_takes_out_dir():
    # a script that opens files for writing or saves figures has --out-dir
    for path in glob.glob(os.path.join(EXAMPLES, "*.py")):
        text = open(path, encoding="utf-8").read()
        writes = "savefig(" in text or ', "w"' in text or "save_model(" in text
        if writes:
            assert "_output.add_argument" in text, f"{path} writes files without --out-dir"


# --------------------------------------------------------------------------
# every example answers --help and uses kernsolve's public API only
# --------------------------------------------------------------------------

SCRIPTS = sorted(os.path.basename(p) for p in glob.glob(os.path.join(EXAMPLES, "*.py"))
                 if not os.path.basename(p).startswith("_"))
# Still on internals: their figures trace the test error at every check of
# one run through the compiled solvers' own traces, which no public call gives.
ON_INTERNALS = {"sbp_vs_baselines.py", "dsg_udsg_cdsg.py"}


@pytest.mark.parametrize("script", SCRIPTS)
def test_example_answers_help(script, tmp_path):
    proc = subprocess.run([sys.executable, os.path.join(EXAMPLES, script), "--help"],
                          cwd=tmp_path, env=package_env(MPLBACKEND="Agg"),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"usage: {script} ")
    assert os.listdir(tmp_path) == []            # --help runs nothing, writes nothing


def _private_imports(path):
    """The kernsolve modules a script imports that are not public: a name
    part with a leading underscore, or the solvers' packages."""
    import ast
    tree = ast.parse(open(path, encoding="utf-8").read())
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return sorted({n for n in names if n.split(".")[0] == "kernsolve" and (
        any(part.startswith("_") for part in n.split(".")) or n.startswith("kernsolve.solvers"))})


@pytest.mark.parametrize("script", [
    pytest.param(s, marks=pytest.mark.xfail(strict=True, reason="per-check traces of the "
                                            "compiled solvers: not on the public API yet"))
    if s in ON_INTERNALS else s for s in SCRIPTS])
def test_example_uses_the_public_api_only(script):
    assert _private_imports(os.path.join(EXAMPLES, script)) == []
