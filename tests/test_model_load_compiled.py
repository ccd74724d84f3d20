"""Model files read by the compiled reader (``_model_text.read_vector_bytes``).

``load_model`` reads the support vectors of a valid LIBSVM-format file from
its bytes with the compiled data-file reader, and hands anything else to the
careful line-by-line reader.  Oracles: that careful reader (the compiled path
switched off) for the arrays, bit for bit, and for the error messages;
LIBSVM (libsvm-official) for the model files themselves; ``save_model`` for
the round trip.
"""
import io
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import libsvm_serial, shared_lines
import kernsolve._model as km
import kernsolve._model_text as mt
from kernsolve import ModelFormatError
from kernsolve._model import load_model, save_model

def careful_load(path, monkeypatch):
    with monkeypatch.context() as mp:
        mp.setattr(km, "_load_valid_libsvm_model", lambda raw, fail, n_jobs: None)
        return load_model(path)


def same_model(a, b):
    """Equal to the bit: arrays, dtypes, shapes and header fields."""
    sa, sb = a.support_vectors, b.support_vectors
    assert sa.shape == sb.shape and sa.indices.dtype == sb.indices.dtype
    assert sa.indptr.dtype == sb.indptr.dtype
    np.testing.assert_array_equal(sa.indptr, sb.indptr)
    np.testing.assert_array_equal(sa.indices, sb.indices)
    np.testing.assert_array_equal(sa.data.view(np.int64), sb.data.view(np.int64))
    assert a.dual_coef.shape == b.dual_coef.shape and a.dual_coef.flags.c_contiguous
    np.testing.assert_array_equal(a.dual_coef.view(np.int64), b.dual_coef.view(np.int64))
    for name in ("rho", "labels", "n_support", "prob_a", "prob_b", "prob_density_marks"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            np.testing.assert_array_equal(x, y)
    assert vars(a.param) == vars(b.param)


def libsvm_model_file(tmp_path, name, n_lines, options, n_features=None):
    """A model file LIBSVM wrote (the tests that use it skip without
    libsvm-official or scikit-learn's reader)."""
    svmutil = pytest.importorskip("libsvm.svmutil")
    load_svmlight_file = pytest.importorskip("sklearn.datasets").load_svmlight_file
    X, y = load_svmlight_file(io.BytesIO(shared_lines(name, n_lines)), zero_based=False,
                              n_features=n_features)
    X = sp.csr_matrix(X)
    rows = [{int(j) + 1: float(v) for j, v in zip(X[i].indices, X[i].data)}
            for i in range(X.shape[0])]
    with libsvm_serial():
        m = svmutil.svm_train(list(y), rows, options + " -q")
    path = str(tmp_path / f"{name}.model")
    svmutil.svm_save_model(path, m)
    return path


CASES = {
    "binary": ("heart_scale", 200, "-s 0 -t 2 -c 2 -b 1", None),
    "ten-class": ("fashion-mnist.scale.t", 300, "-s 0 -t 2 -g 0.02 -c 10", 784),
    "nu-svr": ("housing_scale", 150, "-s 4 -t 0 -n 0.3", None),
    "one-class": ("heart_scale", 120, "-s 2 -n 0.2 -b 1", None),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_libsvm_files_load_as_the_careful_reader_loads_them(case, tmp_path, monkeypatch):
    path = libsvm_model_file(tmp_path, *CASES[case])
    assert km._load_valid_libsvm_model(bytearray(open(path, "rb").read()),
                                       km._Reader(path).fail, 1) is not None
    careful = careful_load(path, monkeypatch)
    for n_jobs in (1, 2):
        same_model(load_model(path, n_jobs=n_jobs), careful)
    # several parsing tasks (the cut between them does not change the model)
    monkeypatch.setattr(mt, "_MIN_CHUNK_BYTES", 1)
    same_model(load_model(path, n_jobs=2), careful)
    # round trip: kernsolve writes back LIBSVM's bytes
    save_model(tmp_path / "again.model", load_model(path))
    assert open(tmp_path / "again.model", "rb").read() == open(path, "rb").read()


def test_kernsolve_written_values_read_back_exactly(tmp_path, monkeypatch):
    # %.17g values, explicit zeros, -0.0, exponents, wide indices, empty rows
    rng = np.random.default_rng(5)
    l, m = 40, 3
    sv = sp.random(l, 3000, density=0.01, format="csr", random_state=6)
    sv.data = rng.normal(size=sv.nnz) * 10.0 ** rng.integers(-300, 300, size=sv.nnz)
    sv.data[:2] = [1e-320, 1.7976931348623157e308]
    sv = sp.csr_matrix(sp.diags(np.r_[np.ones(3), 0.0, np.ones(l - 4)]) @ sv)  # row 3 empty
    sv.data[:3] = [0.0, -0.0, 5e-324]     # explicit zeros are kept
    model = km.Model(param=km.Parameters(svm_type=0, kernel_type=2, gamma=0.5),
                     labels=np.array([3.0, -1.0, 7.0, 2.5]), support_vectors=sv,
                     support_indices=np.zeros(l, np.int64),
                     n_support=np.array([10, 10, 10, 10]),
                     dual_coef=rng.normal(size=(m, l)), rho=rng.normal(size=6))
    path = tmp_path / "k.model"
    save_model(path, model)
    loaded = load_model(path, n_jobs=2)
    same_model(loaded, careful_load(path, monkeypatch))
    width = loaded.support_vectors.shape[1]       # the largest index in the file
    assert sv[:, width:].nnz == 0
    np.testing.assert_array_equal(loaded.support_vectors.toarray(), sv[:, :width].toarray())
    assert loaded.support_vectors.nnz == sv.nnz


# Files the careful reader refuses or reads differently from a data file: the
# compiled path must hand them all back (the message is the careful reader's,
# one line naming the file and the line).
HEADER = ("svm_type c_svc\nkernel_type rbf\ngamma 0.5\nnr_class 3\ntotal_sv 3\n"
          "rho 0.1 0.2 0.3\nlabel 1 2 3\nnr_sv 1 1 1\nSV\n")
GOOD = ["0.5 -1 1:0.25 3:1 ", "1 0.5 2:-0.5 ", "-1 -0.5 1:1e-3 4:2 "]
BAD = {
    "bad-number": (1, "0.5 -1 1:0.25 3:x "),
    "nan-coefficient": (0, "nan -1 1:0.25 "),
    "one-coefficient": (2, "-1 1:1e-3 4:2 "),
    "order": (1, "1 0.5 3:1 2:-0.5 "),
    "duplicate": (1, "1 0.5 2:1 2:-0.5 "),
    "index-zero": (0, "0.5 -1 0:0.25 "),
    "index-too-large": (0, "0.5 -1 2147483648:1 "),
    "comment": (1, "1 0.5 2:-0.5 # note"),
    "qid": (1, "1 0.5 qid:3 2:-0.5 "),
    "blank-line": (1, ""),
    "no-colon": (2, "-1 -0.5 1:1e-3 4 "),
    "empty-value": (2, "-1 -0.5 1: "),
    "inf-value": (2, "-1 -0.5 1:inf "),
    "non-ascii": (0, "0.5 -1 1:0.25\xe9 "),
    "nul": (0, "0.5 -1 1:0.25\0 "),
}


def write(tmp_path, text, name="m.model"):
    path = tmp_path / name
    path.write_bytes(text.encode("latin-1"))
    return str(path)


def test_good_file_takes_the_compiled_path(tmp_path, monkeypatch):
    path = write(tmp_path, HEADER + "\n".join(GOOD) + "\n\n  \n")
    raw = bytearray(open(path, "rb").read())
    assert km._load_valid_libsvm_model(raw, km._Reader(path).fail, 1) is not None
    same_model(load_model(path), careful_load(path, monkeypatch))


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_support_vector_lines_get_the_careful_reader_s_message(case, tmp_path,
                                                                   monkeypatch):
    row, line = BAD[case]
    lines = list(GOOD)
    lines[row] = line
    path = write(tmp_path, HEADER + "\n".join(lines) + "\n")
    raw = bytearray(open(path, "rb").read())
    assert km._load_valid_libsvm_model(raw, km._Reader(path).fail, 1) is None
    with pytest.raises(ModelFormatError) as careful:
        careful_load(path, monkeypatch)
    with pytest.raises(ModelFormatError) as ours:
        load_model(path)
    message = str(ours.value)
    assert message == str(careful.value)
    assert message.startswith(f"{path}:") and "\n" not in message
    assert int(message[len(path) + 1:].split(":")[0]) >= 10   # a support-vector line


@pytest.mark.parametrize("text, line", [
    (HEADER + "\n".join(GOOD) + "\n1 1 1:1 \n", 13),            # a line too many
    (HEADER + "\n".join(GOOD[:2]) + "\n", 12),                  # a line too few
    (HEADER + "\n".join(GOOD), 12),                             # no final newline
    (HEADER.replace("total_sv 3", "total_sv x") + "\n".join(GOOD) + "\n", 5),
    (HEADER.replace("SV\n", "SV extra\nSV\n") + "\n".join(GOOD) + "\n", 9),
])
def test_bad_sections_and_headers_get_the_careful_reader_s_message(text, line, tmp_path,
                                                                   monkeypatch):
    path = write(tmp_path, text)
    with pytest.raises(ModelFormatError) as careful:
        careful_load(path, monkeypatch)
    with pytest.raises(ModelFormatError) as ours:
        load_model(path)
    assert str(ours.value) == str(careful.value)
    assert str(ours.value).startswith(f"{path}:{line}: ")


def test_values_the_careful_reader_accepts_read_the_same(tmp_path, monkeypatch):
    # CRLF line ends, tabs, '+' signs, leading zeros, exponents, ".5" and "5."
    lines = ["+0.5\t-1 01:.25 3:1E+2\r", "1. 0.5 +2:-5.e-1 ", "-1 -0.5\t1:1e-3\t4:2"]
    for text in (HEADER + "\n".join(lines) + "\n",
                 HEADER.replace("\n", "\r\n") + "\r\n".join(lines) + "\r\n"):
        path = write(tmp_path, text)
        same_model(load_model(path), careful_load(path, monkeypatch))


def test_precomputed_and_other_kinds_keep_their_readers(tmp_path, monkeypatch):
    text = HEADER.replace("kernel_type rbf\ngamma 0.5\n", "kernel_type precomputed\n")
    path = write(tmp_path, text + "0.5 -1 0:1 \n1 0.5 0:2 \n-1 -0.5 0:3 \n")
    raw = bytearray(open(path, "rb").read())
    assert km._load_valid_libsvm_model(raw, km._Reader(path).fail, 1) is None
    model = load_model(path)
    np.testing.assert_array_equal(model.support_vectors[:, 0].toarray().ravel(), [1, 2, 3])


_PEAK_SCRIPT = """
import sys
import numpy as np
from kernsolve._model import load_model

def peak():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024

before = peak()
model = load_model(sys.argv[1], n_jobs=1)
assert model.support_vectors.nnz > 0
print(before, peak())
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc (Linux)")
def test_loading_takes_about_the_file_and_the_arrays(tmp_path):
    # The peak memory of a load grows by the file's bytes plus the arrays
    # (12 bytes a value here, less than the text's): about twice the file,
    # never the Python strings of every token (a 119 MB 10-class model took
    # 2.6 GB that way).  The child's own peak (VmHWM) after importing.
    rng = np.random.default_rng(0)
    l, m, width = 4000, 9, 784
    sv = sp.random(l, width, density=0.5, format="csr", random_state=1)
    sv.data = np.round(sv.data, 6)
    model = km.Model(param=km.Parameters(svm_type=0, kernel_type=2, gamma=0.02),
                     labels=np.arange(10.0), support_vectors=sv,
                     support_indices=np.zeros(l, np.int64),
                     n_support=np.full(10, l // 10), dual_coef=rng.normal(size=(m, l)),
                     rho=rng.normal(size=45))
    path = tmp_path / "big.model"
    save_model(path, model)
    size = os.path.getsize(path)
    assert size > 15 << 20
    root = os.path.dirname(os.path.dirname(km.__file__))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", _PEAK_SCRIPT, str(path)], env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    before, after = int(out[0]), int(out[1])
    arrays = sv.nnz * 12 + l * m * 8
    # (the line reader, for comparison, takes about 2.5 times as much)
    assert after - before < 1.4 * (size + arrays) + (16 << 20), (after - before, size, arrays)
