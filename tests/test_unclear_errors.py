"""Cases of issue 15, item 10: errors that were unclear, and inputs LIBSVM takes.

The oracles: libsvm-official (the model file byte for byte, its predictions)
and the exact one-line message a user expects.
"""
import bz2
import contextlib
import gzip
import io
import lzma

import numpy as np
import pytest

import kernsolve
from kernsolve import DataFormatError, load_model, predict, read_problem, save_model, train
from kernsolve.solvers import REGISTRY


@pytest.fixture(scope="module")
def heart_bytes():
    with lzma.open(kernsolve.dataset_path("heart_scale"), "rb") as f:
        return f.read()


@pytest.fixture(scope="module")
def heart_path(tmp_path_factory, heart_bytes):
    path = tmp_path_factory.mktemp("data") / "heart"
    path.write_bytes(heart_bytes)
    return path


def run(tool, *args):
    from importlib import import_module
    cli = import_module(f"kernsolve.cli.{tool}").cli
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


# ------------------------------------------------ corrupt or truncated compressed data

CODECS = {"gz": (gzip.compress, "gzip"), "bz2": (bz2.compress, "bzip2"),
          "xz": (lzma.compress, "xz")}


def _damaged(heart_bytes, ext, how):
    packed = CODECS[ext][0](heart_bytes)
    if how == "truncated":
        return packed[:len(packed) // 2]
    if how == "garbage":
        return b"this is not compressed data at all\n" * 4
    mid = len(packed) // 2                      # a flipped byte inside the stream
    return packed[:mid] + bytes([packed[mid] ^ 0xFF]) + packed[mid + 1:]


@pytest.mark.parametrize("ext", sorted(CODECS))
@pytest.mark.parametrize("how", ["truncated", "garbage", "flipped"])
def test_damaged_compressed_data_is_a_data_format_error_naming_the_file(
        tmp_path, heart_bytes, heart_path, ext, how):
    path = tmp_path / f"heart.{ext}"
    path.write_bytes(_damaged(heart_bytes, ext, how))
    codec = CODECS[ext][1]
    prefix = f"{path}: corrupt or truncated {codec} data ("
    with pytest.raises(DataFormatError) as info:
        read_problem(path)
    assert str(info.value).startswith(prefix)
    model = tmp_path / "m"
    train(*read_problem(heart_path), "-q").save(model)
    for tool, args in (("train", ["-q", path, tmp_path / "out.model"]),
                       ("train", ["-q", "-v", "3", path]),
                       ("train", ["-q", "--solver", "dsg", "--stream", path,
                                  tmp_path / "out.model"]),
                       ("predict", [path, model, tmp_path / "out"]),
                       ("scale", [path]),
                       ("grid", ["-log2c", "0,0,1", "-log2g", "0,0,1", "-out", "null",
                                 "-png", "null", "-q", path])):
        code, out, err = run(tool, *args)
        assert code == 1, (tool, err)
        assert err.startswith(f"kernsolve-{tool}: {prefix}") and err.count("\n") == 1, err
        assert "internal error" not in err
    assert not (tmp_path / "out.model").exists() and not (tmp_path / "out").exists()


@pytest.mark.parametrize("ext", sorted(CODECS))
def test_intact_compressed_data_reads_as_the_plain_file(tmp_path, heart_bytes, heart_path, ext):
    path = tmp_path / f"heart.{ext}"
    path.write_bytes(CODECS[ext][0](heart_bytes))
    y, X = read_problem(path)
    y0, X0 = read_problem(heart_path)
    np.testing.assert_array_equal(y, y0)
    assert (X != X0).nnz == 0


# ------------------------------------------------ -s 2 -n 1: rho = inf, as LIBSVM

@pytest.mark.parametrize("probability", [0, 1])
def test_one_class_nu_1_writes_rho_inf_and_predicts_minus_one_as_libsvm(
        tmp_path, heart_path, probability, svmutil):
    options = f"-s 2 -n 1 -b {probability}"
    code, _, err = run("train", "-q", *options.split(), heart_path, tmp_path / "ours")
    assert code == 0, err
    y, x = svmutil.svm_read_problem(str(heart_path))
    theirs = svmutil.svm_train(y, x, options + " -q")
    svmutil.svm_save_model(str(tmp_path / "theirs"), theirs)
    assert (tmp_path / "ours").read_bytes() == (tmp_path / "theirs").read_bytes()
    assert b"\nrho inf\n" in (tmp_path / "ours").read_bytes()
    their_labels = svmutil.svm_predict(y, x, theirs, "-q")[0]
    for model in ("ours", "theirs"):           # kernsolve reads both files
        code, _, err = run("predict", heart_path, tmp_path / model, tmp_path / "pred")
        assert code == 0, err
        assert [float(v) for v in (tmp_path / "pred").read_text().split()] == their_labels
    assert set(their_labels) == {-1.0}
    # the API: train, save, load, predict
    Y, X = read_problem(heart_path)
    model = train(Y, X, options + " -q")
    assert np.isinf(model.rho).all()
    save_model(tmp_path / "api", model)
    assert (tmp_path / "api").read_bytes() == (tmp_path / "theirs").read_bytes()
    labels, _, _ = predict(None, X, load_model(tmp_path / "api"), "-q")
    assert labels.tolist() == their_labels


def test_rho_nan_is_still_refused(tmp_path, heart_path):
    Y, X = read_problem(heart_path)
    save_model(tmp_path / "m", train(Y, X, "-q -s 2 -n 1"))
    (tmp_path / "m").write_bytes((tmp_path / "m").read_bytes().replace(b"rho inf",
                                                                        b"rho nan"))
    with pytest.raises(kernsolve.ModelFormatError, match=r"m:\d+: rho: 'nan' is not a finite"):
        load_model(tmp_path / "m")


# ------------------------------------------------ -d -1 with a kernel that has no degree

KERNELS_WITHOUT_DEGREE = [0, 2, 3, 5]


@pytest.mark.parametrize("kernel", KERNELS_WITHOUT_DEGREE)
def test_negative_degree_is_ignored_by_kernels_without_one_as_svm_train(
        tmp_path, heart_path, kernel, svmutil):
    code, _, err = run("train", "-q", "-t", kernel, "-d", "-1", heart_path, tmp_path / "ours")
    assert code == 0, err
    assert run("train", "-q", "-t", kernel, heart_path, tmp_path / "default")[0] == 0
    assert (tmp_path / "ours").read_bytes() == (tmp_path / "default").read_bytes()
    if kernel == 2:         # svm-train's file, byte for byte (the other kernels differ
        y, x = svmutil.svm_read_problem(str(heart_path))     # from it in the last digits)
        svmutil.svm_save_model(str(tmp_path / "theirs"),
                               svmutil.svm_train(y, x, f"-t {kernel} -d -1 -q"))
        assert (tmp_path / "ours").read_bytes() == (tmp_path / "theirs").read_bytes()


@pytest.mark.parametrize("name", [n for spec in REGISTRY for n in spec.names])
def test_negative_degree_with_rbf_for_every_solver(heart_path, name):
    y, X = read_problem(heart_path)
    a = train(y, X, f"-q --solver {name} -d -1", n_jobs=1)
    b = train(y, X, f"-q --solver {name}", n_jobs=1)
    np.testing.assert_array_equal(predict(None, X, a, "-q")[0], predict(None, X, b, "-q")[0])


def test_negative_degree_of_the_polynomial_kernel_is_refused_before_reading(tmp_path):
    code, _, err = run("train", "-t", "1", "-d", "-1", tmp_path / "missing")
    assert code == 1 and err.startswith("kernsolve-train: -d: degree must be >= 0, got -1\n")
    with pytest.raises(ValueError, match="degree must be >= 0"):
        kernsolve.kernel_matrix(np.eye(2), kernel="poly", degree=-1)
    np.testing.assert_array_equal(kernsolve.kernel_matrix(np.eye(2), kernel="rbf", degree=-1,
                                                          gamma=0.5),
                                  kernsolve.kernel_matrix(np.eye(2), kernel="rbf", gamma=0.5))


# ------------------------------------------------ kernsolve-scale range files

@pytest.mark.parametrize("text,line,problem", [
    ("x\n-1 1\n1 0 1\n99999999999999999999 0 1\n", 4,
     "feature index 99999999999999999999 is too large: feature indices are 32-bit "
     "integers, as in LIBSVM (at most 2147483647)"),
    ("x\n-1 1\n2147483648 0 1\n", 3,
     "feature index 2147483648 is too large: feature indices are 32-bit integers, as in "
     "LIBSVM (at most 2147483647)"),
    ("x\n-1 1\n1 nan 1\n", 3, "'nan' is not a finite number"),
    ("x\n-1 1\n1 0 -inf\n", 3, "'-inf' is not a finite number"),
    ("x\nnan 1\n1 0 1\n", 2, "'nan' is not a finite number"),
    ("y\n0 1\n-1 NaN\nx\n-1 1\n1 0 1\n", 3, "'NaN' is not a finite number"),
])
def test_scale_range_file_with_a_huge_index_or_non_finite_bounds(tmp_path, heart_path,
                                                                text, line, problem):
    path = tmp_path / "range"
    path.write_text(text)
    code, out, err = run("scale", "-r", path, heart_path)
    assert (code, out) == (1, "")
    assert err == f"kernsolve-scale: {path}:{line}: failed to read scaling parameters: " \
                  f"{problem}\n"


# ------------------------------------------------ rows with a label and no features

NO_FEATURES = b"1\n-1\n1 \n-1\n1\n"


@pytest.mark.parametrize("svm_type", [0, 2, 3])
def test_rows_without_features_train_as_zero_vectors_as_libsvm(tmp_path, svm_type, svmutil):
    data = tmp_path / "labels-only"
    data.write_bytes(NO_FEATURES)
    code, _, err = run("train", "-q", "-s", svm_type, data, tmp_path / "ours")
    assert code == 0, err
    y, x = svmutil.svm_read_problem(str(data))
    theirs = svmutil.svm_train(y, x, f"-s {svm_type} -q")
    svmutil.svm_save_model(str(tmp_path / "theirs"), theirs)
    assert (tmp_path / "ours").read_bytes() == (tmp_path / "theirs").read_bytes()
    code, _, err = run("predict", data, tmp_path / "ours", tmp_path / "pred")
    assert code == 0, err
    assert [float(v) for v in (tmp_path / "pred").read_text().split()] == \
        svmutil.svm_predict(y, x, theirs, "-q")[0]
    Y, X = read_problem(data)
    assert X.shape == (5, 0)
    save_model(tmp_path / "api", train(Y, X, f"-q -s {svm_type}"))
    assert (tmp_path / "api").read_bytes() == (tmp_path / "theirs").read_bytes()


@pytest.mark.parametrize("name", [n for spec in REGISTRY for n in spec.names])
def test_rows_without_features_for_every_solver(tmp_path, name):
    """Each solver trains as on one all-zero column (or refuses in one line)."""
    data = tmp_path / "labels-only"
    data.write_bytes(NO_FEATURES)
    y, X = read_problem(data)
    zero_column = kernsolve.read_problem(io.BytesIO(b"1 1:0\n-1 1:0\n1 1:0\n-1 1:0\n1 1:0\n"))[1]
    options = f"-q --solver {name} -g 1"
    try:
        expect = predict(None, X, train(y, zero_column, options, n_jobs=1), "-q")[0]
    except ValueError as exc:       # SBP: ||w|| = 0 cannot be mapped to nu
        code, _, err = run("train", *options.split(), data, tmp_path / "m")
        assert code == 1 and err == f"kernsolve-train: {exc}\n"
        return
    code, _, err = run("train", *options.split(), data, tmp_path / "m")
    assert code == 0, err
    code, _, err = run("predict", data, tmp_path / "m", tmp_path / "pred")
    assert code == 0, err
    assert [float(v) for v in (tmp_path / "pred").read_text().split()] == expect.tolist()
