"""Model files that load but lie, and sizes out of proportion (issue 15, items 8, 9).

Oracles: the exact ``file:line: problem`` a user expects; LIBSVM's own rules
(svm-train refuses gamma < 0; LIBSVM's one-class warning and a model that
predicts the one label); tracemalloc's peak against the size of the file;
the size a DSG block's directions take, (n_features + 1) x block_size doubles.
"""
import os
import subprocess
import sys
import tracemalloc
import warnings

import numpy as np
import pytest

import kernsolve
from kernsolve import ModelFormatError, load_model
from kernsolve import _validation
from kernsolve.cli import grid as grid_cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def heart():
    y, X = kernsolve.read_problem(os.path.join(ROOT, "kernsolve", "datasets", "heart_scale.xz"))
    return y[:60], X[:60]


@pytest.fixture(scope="module")
def models(heart, tmp_path_factory):
    """One model file of each kind (LIBSVM, DSG, EigenPro kernel and features)."""
    y, X = heart
    folder = tmp_path_factory.mktemp("models")
    out = {}
    for name, options in (("libsvm", "-q -g 0.1"), ("dsg", "-q --solver dsg -g 0.1"),
                          ("eigenpro", "-q --solver eigenpro -g 0.1 --epochs 1"),
                          ("features", "-q --solver eigenpro -g 0.1 --epochs 1 --features 8")):
        path = str(folder / (name + ".model"))
        kernsolve.save_model(path, kernsolve.train(y, X, options))
        out[name] = path
    return out


def _edit(tmp_path, path, old, new, name="bad.model"):
    text = open(path).read()
    assert old in text, old
    bad = tmp_path / name
    bad.write_text(text.replace(old, new, 1))
    return str(bad)


def _line_of(path, start):
    return next(i + 1 for i, ln in enumerate(open(path).read().split("\n"))
                if ln.startswith(start))


def _cli(*args, limit_bytes=None):
    prelude = "" if limit_bytes is None else (
        "import resource; resource.setrlimit(resource.RLIMIT_AS, (%d, %d)); " %
        (limit_bytes, limit_bytes))
    code = prelude + ("import runpy, sys; sys.argv[0] = 'kernsolve-%s'; "
                      "runpy.run_module('kernsolve.cli.%s', run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", code % (args[0], args[0]), *args[1:]],
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS="1"))
    return done.returncode, done.stdout, done.stderr


# ---------------------------------------------------------------- item 9

@pytest.mark.parametrize("kind, old, new, message", [
    ("dsg", "gamma 0.10000000000000001", "gamma 1e308", "gamma must be at most"),
    ("dsg", "gamma 0.10000000000000001", "gamma 0", "gamma must be a finite number > 0"),
    ("dsg", "labels 1 -1", "labels 1 1", "duplicate class labels"),
    ("eigenpro", "gamma 0.10000000000000001", "gamma -1", "gamma must be a finite number >= 0"),
    ("features", "gamma 0.10000000000000001", "gamma -1", "gamma must be a finite number >= 0"),
    ("eigenpro", "label 1 -1", "label 1 1", "duplicate class labels"),
    ("libsvm", "gamma 0.10000000000000001", "gamma -1", "gamma must be a finite number >= 0"),
    ("libsvm", "label 1 -1", "label -1 -1", "duplicate class labels"),
    ("dsg", "seed 0", "seed -1", "seed must be >= 0, got -1"),
    ("dsg", "n_features 13", "n_features 1e8", "n_features: '1e8' is not an integer"),
    ("dsg", "n_features 13", "n_features 3000000000", "n_features must be <= 2147483647"),
    ("eigenpro", "n_outputs 2", "n_outputs 2 3", "n_outputs takes one value, got 2"),
])
def test_header_lies_are_refused_at_their_line(models, tmp_path, kind, old, new, message):
    bad = _edit(tmp_path, models[kind], old, new)
    line = _line_of(bad, new.split()[0] + " ")
    with pytest.raises(ModelFormatError) as info:
        load_model(bad)
    text = str(info.value)
    assert text.startswith(f"{bad}:{line}: ") and message in text, text
    # the command line says the same in one line, exit 1, and writes nothing
    code, out, err = _cli("predict", os.path.join(ROOT, "kernsolve", "datasets", "heart_scale.xz"),
                          bad, str(tmp_path / "out"))
    assert code == 1 and err.strip().endswith(text) and len(err.strip().splitlines()) == 1, err
    assert not os.path.exists(tmp_path / "out")


def test_dsg_training_refuses_gamma_whose_features_overflow(heart):
    y, X = heart
    with pytest.raises(ValueError, match="gamma must be at most 8.98847e"):
        kernsolve.train(y, X, "-q --solver dsg -g 1e308")


def test_dsg_output_that_overflows_is_refused(models, tmp_path):
    m = load_model(_edit(tmp_path, models["dsg"], "gamma 0.10000000000000001", "gamma 8e307"))
    with pytest.raises(ValueError, match="not finite for row 2"):
        m.predict(np.array([[0.5] + [0.0] * 12, [1e300] + [0.0] * 12]))


@pytest.mark.parametrize("kind", ["libsvm", "dsg", "eigenpro", "features"])
def test_file_cut_inside_a_line_is_refused(models, tmp_path, kind):
    # Every cut of the file: at a line end it is refused by the counts, inside
    # a line (no final newline) as truncated; only the whole file loads.
    text = open(models[kind]).read()
    whole = load_model(models[kind])
    X = kernsolve.read_problem(os.path.join(ROOT, "kernsolve", "datasets",
                                            "heart_scale.xz"))[1][:20]
    cuts = sorted(set(range(len(text) - 200, len(text))) | set(range(1, len(text), 97)))
    bad = tmp_path / "cut.model"
    for cut in cuts:
        bad.write_text(text[:cut])
        with pytest.raises(ModelFormatError) as info:
            load_model(str(bad))
        if not text[:cut].endswith("\n"):
            assert "truncated model file: the last line does not end with a newline" in \
                str(info.value) or "truncated" in str(info.value)
    bad.write_text(text)
    assert np.array_equal(kernsolve.predict(None, X, load_model(str(bad)), "-q")[2],
                          kernsolve.predict(None, X, whole, "-q")[2])


def test_last_line_without_newline_names_the_line(models, tmp_path):
    text = open(models["libsvm"]).read()
    bad = tmp_path / "cut.model"
    bad.write_text(text[:-3])          # inside the last support vector's value
    n_lines = text.count("\n")
    with pytest.raises(ModelFormatError, match=f"cut.model:{n_lines}: truncated model file: "
                                               "the last line does not end with a newline"):
        load_model(str(bad))


# ---------------------------------------------------------------- item 8

def test_grid_range_with_too_many_values_is_refused():
    for text in ("0,1,1e-300", "1e20,1e20,1", "0,5000,1"):
        with pytest.raises(grid_cli.UsageError, match="-log2c: the range .* more than 1000"):
            grid_cli._parse_range("-log2c", text)
    assert len(grid_cli._parse_range("-log2c", "0,999,1")) == 1000
    code, out, err = _cli("grid", "-log2c", "0,1,1e-300", "-log2g", "null", "-v", "2",
                          os.path.join(ROOT, "kernsolve", "datasets", "heart_scale.xz"))
    assert code == 1 and "kernsolve-grid: -log2c: the range 0,1,1e-300" in err


def test_dsg_header_block_size_is_checked_before_allocating(models, tmp_path):
    bad = _edit(tmp_path, models["dsg"], "block_size 32", "block_size 1000000000")
    size = os.path.getsize(bad)
    tracemalloc.start()
    try:
        with pytest.raises(ModelFormatError, match=r"bad.model:\d+: expected 1000000000 "
                                                   "coefficients, found 32"):
            load_model(bad)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 * size + (1 << 20), peak


def test_model_header_counts_checked_before_allocating(models, tmp_path):
    # n_outputs 65536 with two-value lines: the W matrix is not allocated.
    bad = _edit(tmp_path, models["features"], "n_outputs 2", "n_outputs 65536")
    label_line = next(ln for ln in open(bad).read().split("\n") if ln.startswith("label "))
    bad = _edit(tmp_path, bad, label_line, "label " + " ".join(str(i) for i in range(65536)),
                "bad2.model")
    tracemalloc.start()
    try:
        with pytest.raises(ModelFormatError, match="expected 65536 coefficients, got 2"):
            load_model(bad)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 * os.path.getsize(bad) + (1 << 20), peak


def test_check_allocation_names_the_size(monkeypatch):
    monkeypatch.setattr(_validation, "memory_limit", lambda: 2 ** 30)
    _validation.check_allocation(2 ** 30, "a thing")
    with pytest.raises(ValueError, match=r"a thing would take 1.5 GiB, more than the 1 GiB"):
        _validation.check_allocation(3 * 2 ** 29, "a thing")


def test_dsg_directions_out_of_proportion_are_refused(models, tmp_path):
    # A 3-line file with index 5e7 under --solver dsg; a DSG model claiming
    # 1e8 features: refused with the size, in a process limited to 4 GiB of
    # address space (so the refusal does not depend on this machine's memory).
    data = tmp_path / "wide"
    data.write_text("1 1:1\n-1 50000000:1\n1 2:1\n")
    limit = 4 << 30
    code, out, err = _cli("train", "--solver", "dsg", "-q", str(data), str(tmp_path / "m"),
                          limit_bytes=limit)
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    need = 8 * 2 * (50000000 + 1) * 32
    assert f"would take {need / 2**30:.3g} GiB, more than the 2 GiB" in err, err
    assert not os.path.exists(tmp_path / "m")
    bad = _edit(tmp_path, models["dsg"], "n_features 13", "n_features 100000000")
    code, out, err = _cli("predict", os.path.join(ROOT, "kernsolve", "datasets", "heart_scale.xz"),
                          bad, str(tmp_path / "out"), limit_bytes=limit)
    need = 8 * (100000000 + 1) * 32
    assert code == 1 and f"would take {need / 2**30:.3g} GiB" in err, err
    # what fits is trained and predicts
    data.write_text("1 1:1\n-1 50000:1\n1 2:1\n")
    code, out, err = _cli("train", "--solver", "dsg", "-q", str(data), str(tmp_path / "m"),
                          limit_bytes=limit)
    assert code == 0, err


def test_eigenpro_one_class_returns_at_once_as_libsvm(capsys):
    # LIBSVM's warning, no kernel work, a model that predicts the one label;
    # the SMO solver's answer is the oracle.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5000, 3))
    y = np.full(5000, 7.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = kernsolve.train(y, X, "--solver eigenpro -g 0.5")
    printed = capsys.readouterr().out
    assert "WARNING: training data in only one class. See README for details." in printed
    assert any("only one class (label 7" in str(w.message) for w in caught), caught
    assert model.n_sv == 0 and model.stats.get("n_kernel_evals", 0) == 0
    Xt = rng.normal(size=(30, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        libsvm_like = kernsolve.train(y[:50], X[:50], "-q -g 0.5")
    assert np.array_equal(model.predict(Xt), kernsolve.predict(None, Xt, libsvm_like, "-q")[0])


@pytest.mark.parametrize("kind", ["libsvm", "dsg", "eigenpro"])
def test_carriage_return_line_ends_are_named_not_called_truncated(models, tmp_path, kind):
    # The red team: a model with CR-only line ends was called "truncated".
    bad = tmp_path / "cr.model"
    bad.write_bytes(open(models[kind], "rb").read().replace(b"\n", b"\r"))
    with pytest.raises(ModelFormatError, match=r"cr\.model:1: the lines end with a carriage "
                                               r"return alone .*tr '\\r' '\\n'"):
        load_model(str(bad))
    # CR LF (Windows) line ends still load
    crlf = tmp_path / "crlf.model"
    crlf.write_bytes(open(models[kind], "rb").read().replace(b"\n", b"\r\n"))
    load_model(str(crlf))
