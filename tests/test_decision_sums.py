"""Decision values without the kernel block (``_decision_sums.decision_sums``, behind
``kernsolve.predict`` and ``kernsolve-predict``).

Oracles: the block path it replaces (``rows_against_operand`` then
``expansion_sums``, itself checked against LIBSVM's loop in
test_expansion_sums.py), bit for bit, for any thread count, row count and
number of support vectors (tiles and groups with rows and support vectors left
over); numpy's closed form of the kernel expansion (values); and
``kernsolve-predict``'s output files at 1, 2 and 3 threads against LIBSVM's
labels (libsvm-official).
"""
import numpy as np
import pytest
import scipy.sparse as sp

from kernsolve._core._decision_sums import decision_sums, expansion_sums
from kernsolve._kernels import (as_operand, rows_against_operand, sums_against_operand,
                                transposed_operand)

KERNELS = {"rbf": 2, "linear": 0, "polynomial": 1, "sigmoid": 3}


def _columns(rng, l, k):
    """One-vs-one placement of l support vectors of k classes (as _expansion_terms)."""
    if k == 2:
        return np.zeros((l, 1), np.intp), rng.normal(size=(l, 1))
    n_pairs = k * (k - 1) // 2
    columns = np.stack([rng.permutation(n_pairs)[:k - 1] for _ in range(l)]).astype(np.intp)
    return columns, rng.normal(size=(l, k - 1))


def _block_path(X, SV, kernel, gamma, coef0, columns, coefs, start, threads):
    Yc = as_operand(SV, kernel, name="support vectors")
    K = rows_against_operand(X, Yc, kernel, gamma, 3, coef0, threads,
                             transposed_operand(Yc, kernel))
    out = start.copy()
    expansion_sums(np.ascontiguousarray(K), columns, coefs, out, threads)
    return out


def _fused(X, SV, kernel, gamma, coef0, columns, coefs, start, threads):
    Yc = as_operand(SV, kernel, name="support vectors")
    out = start.copy()
    assert sums_against_operand(X, Yc, kernel, gamma, 3, coef0, threads,
                                transposed_operand(Yc, kernel), columns, coefs, out)
    return out


def _numpy_sums(X, SV, kernel, gamma, coef0, columns, coefs, start):
    X = X.toarray() if sp.issparse(X) else X
    SV = SV.toarray() if sp.issparse(SV) else SV
    dots = X @ SV.T
    if kernel == "rbf":
        d2 = (X * X).sum(1)[:, None] + (SV * SV).sum(1)[None, :] - 2 * dots
        K = np.exp(-gamma * np.maximum(d2, 0))
    elif kernel == "polynomial":
        K = (gamma * dots + coef0) ** 3
    elif kernel == "sigmoid":
        K = np.tanh(gamma * dots + coef0)
    else:
        K = dots
    out = start.copy()
    for q in range(columns.shape[1]):
        np.add.at(out.T, columns[:, q], (K * coefs[:, q]).T)
    return out


def _data(rng, n, l, d, sparse_sv, density):
    X = rng.random((n, d)) * (rng.random((n, d)) < density)
    SV = rng.random((l, d)) * (rng.random((l, d)) < density)
    if sparse_sv:       # binary features like a9a's: the SVs stay sparse (Y^T path)
        SV = (SV > 0).astype(float)
        X = (X > 0).astype(float)
    return X, SV


# (rows, support vectors, width, SVs sparse, density): groups and tiles with
# rows / SVs left over (8-row panels, 128-row groups, 512- and 2048-SV tiles),
# narrow dense rows like ijcnn1's, wide ones, binary sparse rows like a9a's
CASES = [(1, 3, 5, False, 1.0), (9, 13, 22, False, 0.6), (131, 517, 22, False, 0.6),
         (20, 45, 300, False, 1.0), (17, 2051, 40, True, 0.05), (9, 30, 123, True, 0.1)]


@pytest.mark.parametrize("kernel", sorted(KERNELS))
@pytest.mark.parametrize("n, l, d, sparse_sv, density", CASES)
def test_fused_sums_have_the_bits_of_the_block_path(kernel, n, l, d, sparse_sv, density):
    rng = np.random.default_rng(n * 7 + l + d)
    X, SV = _data(rng, n, l, d, sparse_sv, density)
    gamma, coef0 = 0.7 / d, 0.3
    for k in (2, 4):
        columns, coefs = _columns(rng, l, k)
        start = rng.normal(size=(n, 1 if k == 2 else k * (k - 1) // 2))
        ref = _block_path(sp.csr_matrix(X), SV, kernel, gamma, coef0, columns, coefs,
                          start, 1)
        np.testing.assert_allclose(
            ref, _numpy_sums(X, SV, kernel, gamma, coef0, columns, coefs, start),
            rtol=1e-9, atol=1e-9 * max(1.0, np.abs(ref).max()))
        for Xin in (sp.csr_matrix(X), X):
            for threads in (1, 2, 3):
                got = _fused(Xin, SV, kernel, gamma, coef0, columns, coefs, start, threads)
                assert got.tobytes() == ref.tobytes(), (type(Xin), threads, k)


def test_integer_rows_take_the_table_with_the_same_bits():
    """Integer counts (not only 0/1) against sparse SVs: the RBF values of the
    integer squared distances come from a table of kernsolve's exp, with the
    block path's bits; a non-integer value anywhere takes the polynomial."""
    rng = np.random.default_rng(6)
    X = rng.integers(0, 4, (21, 60)) * (rng.random((21, 60)) < 0.08)
    SV = rng.integers(0, 4, (300, 60)) * (rng.random((300, 60)) < 0.08)
    columns, coefs = _columns(rng, 300, 3)
    start = np.zeros((21, 3))
    for Xv in (X.astype(float), X + 0.5 * (X > 0)):
        ref = _block_path(sp.csr_matrix(Xv), SV.astype(float), "rbf", 0.3, 0.0, columns,
                          coefs, start, 1)
        for threads in (1, 2):
            got = _fused(Xv, SV.astype(float), "rbf", 0.3, 0.0, columns, coefs, start,
                         threads)
            assert got.tobytes() == ref.tobytes()


@pytest.mark.parametrize("d", [40, 123, 300, 1100])
def test_binary_rows_take_bit_sets_with_the_same_bits(d):
    """0/1 rows against sparse 0/1 support vectors (a9a's case, the transposed
    path): the squared distances are popcounts of bit sets (up to 16 words;
    1100 columns are 18 and keep the products), with the bits of the block
    path and of the integer table without bit sets, at 1 to 3 threads."""
    from kernsolve._core import _decision_sums
    from kernsolve._kernels import as_canonical
    rng = np.random.default_rng(d)
    X = sp.csr_matrix((rng.random((37, d)) < 0.08).astype(float))
    SV = sp.csr_matrix((rng.random((2300, d)) < 0.08).astype(float))
    columns, coefs = _columns(rng, 2300, 3)
    start = rng.normal(size=(37, 3))
    ref = _block_path(X, SV, "rbf", 0.05, 0.0, columns, coefs, start, 1)
    Yc = as_operand(SV, "rbf", name="support vectors")
    tr = transposed_operand(Yc, "rbf")
    assert tr is not None
    for threads in (1, 2, 3):
        assert _fused(X, SV, "rbf", 0.05, 0.0, columns, coefs, start, threads).tobytes() \
            == ref.tobytes()
        for binary in (False, True):
            out = start.copy()
            _decision_sums.decision_sums(as_canonical(X), None, 2, 3, 0.05, 0.0, columns, coefs,
                                  out, threads, tr, True, binary)
            assert out.tobytes() == ref.tobytes(), (threads, binary)


def test_scalar_paths_give_the_same_bits(vector_path):
    """The one-value-at-a-time paths (C library's fma, scalar exp) and the
    AVX2 ones agree bit for bit."""
    rng = np.random.default_rng(3)
    X, SV = _data(rng, 37, 203, 22, False, 0.6)
    columns, coefs = _columns(rng, 203, 3)
    start = np.zeros((37, 3))
    fast = _fused(X, SV, "rbf", 0.1, 0.0, columns, coefs, start, 2)
    vector_path("scalar")
    slow = _fused(X, SV, "rbf", 0.1, 0.0, columns, coefs, start, 2)
    assert fast.tobytes() == slow.tobytes()


def test_paths_without_fusion_are_left_to_the_blocks():
    """The Laplacian kernel and sparse SVs without Y^T take the core's loops:
    nothing is done and the caller computes blocks."""
    rng = np.random.default_rng(4)
    X, SV = _data(rng, 5, 7, 10, True, 0.1)
    out = np.zeros((5, 1))
    cols, coefs = np.zeros((7, 1), np.intp), np.ones((7, 1))
    Yc = as_operand(SV, "laplacian")
    assert not sums_against_operand(X, Yc, "laplacian", 0.1, 3, 0.0, 1, None, cols, coefs,
                                    out)
    assert not sums_against_operand(X, sp.csr_matrix(SV), "rbf", 0.1, 3, 0.0, 1, None, cols,
                                    coefs, out)
    assert not out.any()


def test_shapes_and_kernels_are_checked():
    X, Y = np.zeros((2, 3)), np.zeros((4, 3))
    cols, coefs = np.zeros((4, 1), np.intp), np.zeros((4, 1))
    with pytest.raises(ValueError, match="disagree"):
        decision_sums(X, Y, 2, 3, 1.0, 0.0, cols, coefs, np.zeros((3, 1)), 1)
    with pytest.raises(ValueError, match="as wide"):
        decision_sums(X, np.zeros((4, 2)), 2, 3, 1.0, 0.0, cols, coefs, np.zeros((2, 1)), 1)
    with pytest.raises(ValueError, match="no fused path"):
        decision_sums(X, Y, 5, 3, 1.0, 0.0, cols, coefs, np.zeros((2, 1)), 1)


def test_predict_command_output_bytes_at_any_thread_count(tmp_path, shared):
    """kernsolve-predict on a slice of ijcnn1 (dense SVs) and of a9a (sparse SVs,
    Y^T): the same output bytes at 1, 2 and 3 threads, LIBSVM's labels."""
    from kernsolve.cli.predict import main as predict_main
    from kernsolve.cli.train import main as train_main
    svmutil = pytest.importorskip("libsvm.svmutil")
    for name, options in (("ijcnn1", ["-c", "32", "-g", "2"]),
                          ("a9a", ["-c", "100", "-g", "0.005"])):
        data = shared.lines(name, 1500)
        train, test = tmp_path / f"{name}.train", tmp_path / f"{name}.test"
        lines = data.splitlines(keepends=True)
        train.write_bytes(b"".join(lines[:1000]))
        test.write_bytes(b"".join(lines[1000:]))
        model = tmp_path / f"{name}.model"
        assert train_main(options + ["-q", str(train), str(model)]) == 0
        outputs = []
        for threads in (1, 2, 3):
            out = tmp_path / f"{name}.{threads}.out"
            assert predict_main(["-q", "--threads", str(threads), str(test), str(model),
                                 str(out)]) == 0
            outputs.append(out.read_bytes())
        assert outputs[1] == outputs[0] and outputs[2] == outputs[0]
        y, x = svmutil.svm_read_problem(str(test))
        labels, _, _ = svmutil.svm_predict(y, x, svmutil.svm_load_model(str(model)), "-q")
        ours = [float(v) for v in outputs[0].split()]
        assert ours == labels
