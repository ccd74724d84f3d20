"""LIBSVM-format reader and writer (kernsolve._io, kernsolve/_core/_reader.pyx,
_tokenizer.pyx, _writer.pyx).

Oracles: scikit-learn's load_svmlight_file on slices of the shared datasets, a
tiny pure-Python reference parser written below, and exact bit comparisons
for write/read round trips.
"""
import bz2
import gzip
import io
import lzma
import math
import os
import random
import re

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings, strategies as st
from sklearn.datasets import load_svmlight_file

from kernsolve import DataFormatError, read_problem, write_problem
from kernsolve import _io, _threads

DATASETS = ["a9a", "a9a.t", "ijcnn1", "ijcnn1.t", "mnist.scale.t", "w8a", "mushrooms",
            "phishing", "svmguide1", "svmguide1.t", "heart_scale", "australian_scale",
            "german.numer_scale", "housing_scale", "abalone_scale",
            "fashion-mnist.scale", "fashion-mnist.scale.t"]


# ------------------------------------------------------------ reference parser

_NUM = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_INT = re.compile(rb"[+-]?[0-9]+\Z")
_IDX = re.compile(rb"\+?[0-9]+\Z")


class RefError(Exception):
    def __init__(self, line):
        super().__init__(line)
        self.line = line


def _num(tok, line):
    if not _NUM.match(tok):
        raise RefError(line)
    v = float(tok)
    if not math.isfinite(v):
        raise RefError(line)
    return v


def ref_parse(data, zero_based="auto", n_features=None, query_id=False):
    """The format as documented, one line at a time, in plain Python."""
    ys, rows, qids = [], [], []
    for lineno, line in enumerate(data.split(b"\n"), 1):
        toks = line.split(b"#", 1)[0].split()
        if not toks:
            continue
        ys.append(_num(toks[0], lineno))
        feats = toks[1:]
        qid = None
        if feats and feats[0].startswith(b"qid:"):
            q = feats.pop(0)[4:]
            if not _INT.match(q) or abs(int(q)) > 2 ** 63 - 1:
                raise RefError(lineno)
            qid = int(q)
        if query_id and qid is None:
            raise RefError(lineno)
        qids.append(qid)
        row, prev = [], -1
        for f in feats:
            if b":" not in f:
                raise RefError(lineno)
            i, v = f.split(b":", 1)
            if not _IDX.match(i) or int(i) > 2 ** 62 or not v:
                raise RefError(lineno)
            i, v = int(i), _num(v, lineno)
            if i == 0 and zero_based is False:
                raise RefError(lineno)
            if n_features is not None and (i > n_features or (zero_based is True and i == n_features)):
                raise RefError(lineno)
            if i <= prev:
                raise RefError(lineno)
            row.append((i, v))
            prev = i
        rows.append(row)
    if not ys:
        raise RefError(1)
    nz = [i for r in rows for i, _ in r]
    one = zero_based is False or (zero_based == "auto" and (not nz or min(nz) > 0))
    if one:
        rows = [[(i - 1, v) for i, v in r] for r in rows]
    if n_features is None:
        n_features = max((i for r in rows for i, _ in r), default=-1) + 1
    elif zero_based == "auto" and not one and n_features in nz:
        raise RefError(-1)
    return np.array(ys), rows, n_features, qids


def assert_matches_ref(y, X, ref):
    ys, rows, n_features, _ = ref
    assert X.shape == (len(ys), n_features)
    np.testing.assert_array_equal(y.view(np.uint64), np.asarray(ys).view(np.uint64))
    indptr = np.cumsum([0] + [len(r) for r in rows])
    np.testing.assert_array_equal(X.indptr, indptr)
    np.testing.assert_array_equal(X.indices, [i for r in rows for i, _ in r])
    vals = np.array([v for r in rows for _, v in r], dtype=np.float64)
    np.testing.assert_array_equal(X.data.view(np.uint64), vals.view(np.uint64))


def assert_same(a, b):
    """Two (y, X) results are identical, bit for bit, with the same structure."""
    ya, Xa = a[0], a[1]
    yb, Xb = b[0], b[1]
    np.testing.assert_array_equal(ya.view(np.uint64), yb.view(np.uint64))
    assert Xa.shape == Xb.shape
    np.testing.assert_array_equal(Xa.indptr, Xb.indptr)
    np.testing.assert_array_equal(Xa.indices, Xb.indices)
    assert Xa.data.dtype == Xb.data.dtype
    np.testing.assert_array_equal(Xa.data.view(np.uint8), Xb.data.view(np.uint8))


@pytest.fixture
def small_blocks(monkeypatch):
    """Tiny blocks and chunks, so a few lines cross many block and thread boundaries."""
    monkeypatch.setattr(_io, "_BLOCK_SIZE", 160)
    monkeypatch.setattr(_io, "_MIN_CHUNK", 16)


# ------------------------------------------------------------ generated files

def _fmt_num(rng, v):
    choices = [repr(v), "%.17g" % v, "%g" % v, "%e" % v, "%.6f" % v]
    s = rng.choice(choices)
    if s[0] != "-" and rng.random() < 0.2:
        s = "+" + s
    if s.startswith("0.") and rng.random() < 0.3:
        s = s[1:]
    elif s.startswith("-0.") and rng.random() < 0.3:
        s = "-" + s[2:]
    return s


def odd_file(seed, n_lines=60, zero_based=False, qid=False, max_index=40):
    """A LIBSVM file using every syntax the reader must accept."""
    rng = random.Random(seed)
    ws = [" ", "  ", "\t", " \t "]
    out = []
    for _ in range(n_lines):
        r = rng.random()
        if r < 0.05:
            out.append(rng.choice(["", "   ", "\t", "\r"]))
            continue
        if r < 0.1:
            out.append("# a comment: 1:2 with colons")
            continue
        label = rng.choice(["+1", "-1", "1.0", "-1.0", "1", "0", "2.5e1", ".5", "3.",
                            "-0", "1E+2", _fmt_num(rng, rng.uniform(-100, 100))])
        parts = [label]
        if qid:
            parts.append("qid:%d" % rng.randint(-5, 10 ** 12))
        idx = -1 if zero_based else 0
        for _ in range(rng.randint(0, 8)):
            idx += rng.randint(1, 4)
            if idx > max_index:
                break
            v = rng.choice([rng.uniform(-1, 1), rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30),
                            1.0, 0.0, -0.0, 1e-300, 5e-324, 123456789.0])
            i = ("+%d" if rng.random() < 0.05 else "%d") % idx
            parts.append("%s:%s" % (i, _fmt_num(rng, v)))
        line = "".join(p + rng.choice(ws) for p in parts[:-1]) + parts[-1]
        if rng.random() < 0.3:
            line += rng.choice(ws)
        if rng.random() < 0.2:
            line += "# trailing comment 3:4"
        if rng.random() < 0.2:
            line += "\r"
        out.append(line)
    text = "\n".join(out)
    if rng.random() < 0.5:
        text += "\n"
    return text.encode()


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("zero_based", [False, True])
def test_odd_syntax_matches_reference(seed, zero_based, small_blocks):
    data = odd_file(seed, zero_based=zero_based, qid=seed % 2 == 1)
    ref = ref_parse(data)
    for n_jobs in (1, 2):
        y, X = read_problem(io.BytesIO(data), n_jobs=n_jobs)
        assert_matches_ref(y, X, ref)
        assert X.has_sorted_indices
    if seed % 2:
        y, X, q = read_problem(io.BytesIO(data), query_id=True, n_jobs=2)
        assert_matches_ref(y, X, ref)
        np.testing.assert_array_equal(q, ref[3])


@pytest.mark.parametrize("seed", range(3))
def test_block_sizes_do_not_matter(seed, monkeypatch):
    data = odd_file(seed, n_lines=300)
    whole = read_problem(io.BytesIO(data), n_jobs=1)
    for block, chunk in [(16, 1), (100, 7), (1000, 50), (1 << 20, 500)]:
        monkeypatch.setattr(_io, "_BLOCK_SIZE", block)
        monkeypatch.setattr(_io, "_MIN_CHUNK", chunk)
        for n_jobs in (1, 2):
            assert_same(read_problem(io.BytesIO(data), n_jobs=n_jobs), whole)


def test_float32_is_rounded_float64():
    data = odd_file(11)
    y, X = read_problem(io.BytesIO(data))
    y32, X32 = read_problem(io.BytesIO(data), dtype=np.float32)
    assert X32.dtype == np.float32
    np.testing.assert_array_equal(X32.data, X.data.astype(np.float32))
    np.testing.assert_array_equal(y32, y)


# ------------------------------------------------------------ sklearn on real data

@pytest.mark.parametrize("name", DATASETS)
def test_equal_to_sklearn_on_shared_slices(name, shared, tmp_path):
    data = shared.lines(name, 300)
    path = tmp_path / name
    path.write_bytes(data)
    kw = {"n_features": 123} if name == "a9a.t" else {}
    Xs, ys = load_svmlight_file(str(path), **kw)
    for n_jobs in (1, 2):
        y, X = read_problem(str(path), n_jobs=n_jobs, **kw)
        assert isinstance(X, sp.csr_matrix)
        assert X.shape == Xs.shape
        assert y.dtype == np.float64 and X.dtype == np.float64
        assert X.indices.dtype == np.int32 and X.indptr.dtype == np.int32
        np.testing.assert_array_equal(y, ys)
        np.testing.assert_array_equal(X.indptr, Xs.indptr)
        np.testing.assert_array_equal(X.indices, Xs.indices)
        np.testing.assert_array_equal(X.data, Xs.data)


def test_compressed_paths_and_file_objects(shared, tmp_path):
    data = shared.lines("heart_scale", None)
    expected = read_problem(io.BytesIO(data))
    assert_same(read_problem(shared.path("heart_scale")), expected)   # the shared .xz
    for ext, opener in [(".gz", gzip.open), (".bz2", bz2.open), (".xz", lzma.open)]:
        p = tmp_path / ("heart" + ext)
        with opener(p, "wb") as f:
            f.write(data)
        assert_same(read_problem(p), expected)
        with opener(p, "rb") as f:
            assert_same(read_problem(f), expected)
    (tmp_path / "heart").write_bytes(data)
    with open(tmp_path / "heart", "rb") as f:
        assert_same(read_problem(f), expected)


def test_a9a_t_width_and_n_features_checks(shared):
    data = shared.lines("a9a.t", 200)
    y, X = read_problem(io.BytesIO(data))
    assert X.shape[1] <= 122
    y, X = read_problem(io.BytesIO(data), n_features=123)
    assert X.shape == (200, 123)
    with pytest.raises(DataFormatError, match=r"<stream>:\d+: feature index \d+ is past n_features=50"):
        read_problem(io.BytesIO(data), n_features=50)


def test_huge_index_does_not_allocate():
    y, X = read_problem(io.BytesIO(b"1 3:1 1099511627776:2.5\n-1 7:1\n"))
    assert X.shape == (2, 2 ** 40)
    assert X.indices.dtype == np.int64 and X.indptr.dtype == np.int64
    np.testing.assert_array_equal(X.indices, [2, 2 ** 40 - 1, 6])
    np.testing.assert_array_equal(X.data, [1, 2.5, 1])
    # a declared width past int32 also needs int64 indices
    assert read_problem(io.BytesIO(b"1 1:1\n"), n_features=2 ** 33)[1].indices.dtype == np.int64
    # the largest 1-based index whose width still fits int32 stays int32
    y, X = read_problem(io.BytesIO(b"1 2147483647:1\n"))
    assert X.shape == (1, 2 ** 31 - 1) and X.indices.dtype == np.int32
    assert X.indices[0] == 2 ** 31 - 2


def test_index_past_int32_in_a_later_chunk(small_blocks):
    # indices already stored as int32 are widened in place mid-read
    data = GOOD * 30 + b"2 5:1 3000000000:-4\n" + GOOD * 30
    ref = ref_parse(data)
    for n_jobs in (1, 2):
        y, X = read_problem(io.BytesIO(data), n_jobs=n_jobs)
        assert X.indices.dtype == np.int64
        assert_matches_ref(y, X, ref)


def test_auto_zero_based_and_explicit_bases():
    one = b"1 1:1 3:2\n2 2:5\n"
    zero = b"1 0:1 3:2\n2 2:5\n"
    assert read_problem(io.BytesIO(one))[1].shape == (2, 3)
    assert read_problem(io.BytesIO(zero))[1].shape == (2, 4)
    assert read_problem(io.BytesIO(one), zero_based=True)[1].shape == (2, 4)
    np.testing.assert_array_equal(read_problem(io.BytesIO(zero))[1].indices, [0, 3, 2])
    # a 0-based file whose index == n_features is past the end, found after the read
    with pytest.raises(DataFormatError, match=r"<stream>:2: feature index 3 is past n_features=3"):
        read_problem(io.BytesIO(b"1 0:1\n2 3:1\n"), n_features=3)
    assert read_problem(io.BytesIO(b"1 1:1\n2 3:1\n"), n_features=3)[1].shape == (2, 3)


# ------------------------------------------------------------ errors

GOOD = b"+1 1:0.5 3:-1 # fine\n-1 2:1e-3\n"
BAD_CASES = [
    (b"1 3:1 2:1", {}, "feature indices must be strictly increasing (2 after 3)"),
    (b"1 3:1 3:1", {}, "duplicate feature index 3"),
    (b"abc 1:1", {}, "label 'abc' is not a number"),
    (b"nan 1:1", {}, "label 'nan' is not finite"),
    (b"1 1:x", {}, "value 'x' of feature 1 is not a number"),
    (b"1 1:inf", {}, "value 'inf' of feature 1 is not finite"),
    (b"1 1:-Infinity", {}, "value '-Infinity' of feature 1 is not finite"),
    (b"1 1:1e400", {}, "value '1e400' of feature 1 is not finite"),
    (b"1 1:0x10", {}, "value '0x10' of feature 1 is not a number"),
    (b"1 1:1,5", {}, "value '1,5' of feature 1 is not a number"),
    (b"1 0:1", {"zero_based": False}, "feature index 0 in 1-based data"),
    (b"1 -2:1", {}, "feature index -2 is negative"),
    (b"1 a:1", {}, "feature index 'a' is not an integer"),
    (b"1 :1", {}, "feature index '' is not an integer"),
    (b"1 99:1", {"n_features": 10}, "feature index 99 is past n_features=10"),
    (b"1 10:1", {"n_features": 10, "zero_based": True}, "feature index 10 is past n_features=10"),
    (b"1 2 3", {}, "expected 'index:value', got '2' (missing ':')"),
    (b"1 4:", {}, "feature 4 has no value"),
    (b"1 4: 5", {}, "feature 4 has no value"),
    (b"1 99999999999999999999:1", {}, "feature index 99999999999999999999 is too large"),
    (b"1 qid:x 1:1", {}, "qid must be an integer, got 'qid:x'"),
    (b"1 1:1 qid:3", {}, "'qid:' must come right after the label"),
    (b"1 1:1", {"query_id": True}, "missing 'qid:' field"),
]


@pytest.mark.parametrize("bad,kw,message", BAD_CASES)
def test_malformed_line_names_file_and_line(bad, kw, message, small_blocks, tmp_path):
    # the bad line is preceded by many good lines, so with tiny blocks and two
    # threads it sits in a later block and a later chunk
    good = GOOD if not kw.get("query_id") else b""
    lines_before = 40 if good else 0
    data = good * (lines_before // 2) + bad + b"\n" + GOOD
    path = tmp_path / "data.txt"
    path.write_bytes(data)
    for n_jobs in (1, 2):
        with pytest.raises(DataFormatError) as e:
            read_problem(str(path), n_jobs=n_jobs, **kw)
        assert str(e.value).startswith(f"{path}:{lines_before + 1}: ")
        assert message in str(e.value)
        with pytest.raises(DataFormatError) as e:
            read_problem(io.BytesIO(data), n_jobs=n_jobs, **kw)
        assert str(e.value).startswith(f"<stream>:{lines_before + 1}: ")
    assert isinstance(e.value, ValueError)


def test_error_line_in_a_window_is_absolute(tmp_path, monkeypatch):
    monkeypatch.setattr(_io, "_BLOCK_SIZE", 32)
    data = GOOD * 20 + b"1 5:1 4:1\n" + GOOD * 5
    bad_line = 41
    path = tmp_path / "w.txt"
    path.write_bytes(data)
    offset = data.index(b"1 5:1 4:1") - 7
    for src in (str(path), io.BytesIO(data)):
        with pytest.raises(DataFormatError, match=rf":{bad_line}: feature indices must be"):
            read_problem(src, n_features=10, zero_based=False, offset=offset, n_jobs=2)
    xz = tmp_path / "w.txt.xz"
    with lzma.open(xz, "wb") as f:
        f.write(data)
    with pytest.raises(DataFormatError, match=rf"w.txt.xz:{bad_line}: "):
        read_problem(str(xz), n_features=10, zero_based=False, offset=offset)


class _NoSeek(io.RawIOBase):
    def __init__(self, data):
        self._f = io.BytesIO(data)

    def readable(self):
        return True

    def readinto(self, b):
        return self._f.readinto(b)


def test_window_on_unseekable_stream_counts_lines():
    data = GOOD * 10 + b"1 x\n"
    with pytest.raises(DataFormatError, match=r"<stream>:21: expected 'index:value'"):
        read_problem(_NoSeek(data), n_features=5, zero_based=False, offset=15)


@pytest.mark.parametrize("data", [b"", b"\n\n", b"# only a comment\n", b"  \r\n\t\n"])
def test_empty_file_is_an_error(data):
    with pytest.raises(DataFormatError, match=r"<stream>:1: no data lines"):
        read_problem(io.BytesIO(data))


def test_bad_arguments():
    with pytest.raises(ValueError, match="zero_based"):
        read_problem(io.BytesIO(GOOD), zero_based="yes")
    with pytest.raises(ValueError, match="dtype"):
        read_problem(io.BytesIO(GOOD), dtype=np.int32)
    with pytest.raises(ValueError, match="n_features"):
        read_problem(io.BytesIO(GOOD), n_features=0)
    with pytest.raises(ValueError, match="n_features is required"):
        read_problem(io.BytesIO(GOOD), offset=3, zero_based=False)
    with pytest.raises(ValueError, match="cannot be decided"):
        read_problem(io.BytesIO(GOOD), offset=3, n_features=4)
    with pytest.raises(ValueError, match="length"):
        read_problem(io.BytesIO(GOOD), length=-2, n_features=4, zero_based=False)
    with pytest.raises(ValueError, match="binary mode"):
        read_problem(io.StringIO("1 1:1\n"))
    with pytest.raises(TypeError):
        read_problem(3.5)


def test_threads_work_in_a_forked_child(small_blocks):
    # the worker pool is per process: a fork after a parallel read must not hang
    import multiprocessing
    data = odd_file(2, n_lines=100)
    expected = read_problem(io.BytesIO(data), n_jobs=2)
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        y, X = pool.apply_async(read_problem, (io.BytesIO(data),), {"n_jobs": 2}).get(timeout=60)
    assert_same((y, X), expected)


def test_one_and_two_threads_give_the_same_arrays(shared, tmp_path, monkeypatch):
    # a real slice in many chunks: the same bits on 1 and 2 threads, and what
    # scikit-learn reads
    monkeypatch.setattr(_io, "_BLOCK_SIZE", 1 << 14)
    monkeypatch.setattr(_io, "_MIN_CHUNK", 1 << 10)
    path = tmp_path / "ijcnn1"
    path.write_bytes(shared.lines("ijcnn1", 2000))
    Xs, ys = load_svmlight_file(str(path))
    first = read_problem(str(path), n_jobs=1)
    assert_same(read_problem(str(path), n_jobs=2), first)
    np.testing.assert_array_equal(first[0], ys)
    assert (first[1] != Xs).nnz == 0


def test_the_reader_parses_on_the_shared_pool(monkeypatch):
    # two threads: the process's shared pool, made once (doc/threads.md, "The
    # reader"); one thread starts no Python thread
    data = odd_file(1, n_lines=200)
    monkeypatch.setattr(_io, "_MIN_CHUNK", 64)
    pools = {}
    monkeypatch.setattr(_threads, "_SHARED_POOLS", pools)
    read_problem(io.BytesIO(data), n_jobs=1)
    assert pools == {}
    read_problem(io.BytesIO(data), n_jobs=2)
    read_problem(io.BytesIO(data), n_jobs=2)
    assert list(pools) == [(os.getpid(), "reader", 2)]


# ------------------------------------------------------------ windows

def _windows(data, cuts, **kw):
    bounds = [0] + sorted(cuts) + [len(data) + 1]
    parts = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        parts.append(read_problem(io.BytesIO(data), offset=a, length=b - a, **kw))
    return parts


def _concat(parts):
    y = np.concatenate([p[0] for p in parts])
    X = sp.vstack([p[1] for p in parts], format="csr")
    return y, X


@pytest.mark.parametrize("seed", range(4))
def test_windows_concatenate_to_whole(seed, monkeypatch):
    monkeypatch.setattr(_io, "_BLOCK_SIZE", 50)
    monkeypatch.setattr(_io, "_MIN_CHUNK", 10)
    data = odd_file(seed, n_lines=80)
    whole = read_problem(io.BytesIO(data), zero_based=False, n_features=40)
    rng = random.Random(seed)
    nl = [i for i, c in enumerate(data) if c == 10]
    cuts = set(rng.sample(range(1, len(data)), 6))
    cuts |= {nl[3], nl[4] + 1, nl[10] - 1}     # exactly on, after and before a newline
    parts = _windows(data, cuts, zero_based=False, n_features=40, n_jobs=2)
    y, X = _concat(parts)
    np.testing.assert_array_equal(y, whole[0])
    assert (X != whole[1]).nnz == 0
    np.testing.assert_array_equal(X.indptr, whole[1].indptr)


def test_windows_match_sklearn(shared, tmp_path):
    data = shared.lines("ijcnn1", 400)
    path = tmp_path / "ijcnn1"
    path.write_bytes(data)
    n = len(data)
    # sklearn agrees whenever the window holds a newline; a window without one
    # gets no line here (its line belongs to the window holding the newline
    # before it), while sklearn would return that line twice.
    for offset, length in [(0, 1000), (1000, 5000), (137, 80), (n // 2, n), (n - 3, 100)]:
        Xs, ys = load_svmlight_file(str(path), n_features=22, zero_based=False,
                                    offset=offset, length=length)
        y, X = read_problem(str(path), n_features=22, zero_based=False,
                            offset=offset, length=length)
        np.testing.assert_array_equal(y, ys)
        np.testing.assert_array_equal(X.toarray(), Xs.toarray())
    assert read_problem(str(path), n_features=22, zero_based=False, length=0)[1].shape == (0, 22)
    inside = data.index(b"\n") + 3
    assert read_problem(str(path), n_features=22, zero_based=False, offset=inside,
                        length=2)[1].shape == (0, 22)


# ------------------------------------------------------------ writing

def _random_doubles(rng, n):
    bits = rng.integers(0, 2 ** 64, size=n, dtype=np.uint64)
    v = bits.view(np.float64)
    v = v[np.isfinite(v)]
    special = np.array([1e-300, -0.0, 0.0, 5e-324, -5e-324, 2.2250738585072014e-308,
                        1.7976931348623157e308, 0.1, 1 / 3, 2 ** 53, 2 ** 53 + 2.0,
                        -1.0, 1e22, 1e23, 123456789012345678.0])
    return np.concatenate([special, v, rng.standard_normal(n)])


@pytest.mark.parametrize("zero_based", [False, True])
def test_round_trip_is_exact(zero_based, tmp_path):
    rng = np.random.default_rng(0)
    vals = _random_doubles(rng, 400)
    n_rows, n_cols = 60, 30
    X = sp.random(n_rows, n_cols, density=0.4, format="csr", random_state=1)
    X.sort_indices()
    X.data = vals[:X.nnz].copy()
    y = np.concatenate([vals[-n_rows // 2:], [1, -1, 0, 2, 3.5] * 6])[:n_rows]
    qid = rng.integers(-2 ** 62, 2 ** 62, size=n_rows)
    path = tmp_path / "rt.txt"
    write_problem(path, y, X, zero_based=zero_based, query_id=qid)
    y2, X2, q2 = read_problem(path, n_features=n_cols, zero_based=zero_based, query_id=True)
    assert_same((y2, X2), (y, X))
    np.testing.assert_array_equal(q2, qid)
    # read(write(read(f))) == read(f)
    path2 = tmp_path / "rt2.txt"
    write_problem(path2, y2, X2, zero_based=zero_based)
    assert_same(read_problem(path2, n_features=n_cols, zero_based=zero_based), (y2, X2))


def test_round_trip_shared_slice_and_integer_labels(shared, tmp_path):
    data = shared.lines("svmguide1", 200)
    first = read_problem(io.BytesIO(data))
    out = io.BytesIO()
    write_problem(out, *first)
    text = out.getvalue()
    assert text.split(b" ", 1)[0] in (b"0", b"1")
    assert_same(read_problem(io.BytesIO(text)), first)
    for ext in (".gz", ".xz", ".bz2"):
        p = tmp_path / ("s" + ext)
        write_problem(p, *first)
        assert_same(read_problem(p), first)


def test_write_dense_and_float32(tmp_path):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((20, 7))
    X[X < 0.3] = 0.0
    y = rng.integers(0, 3, 20).astype(float)
    p = tmp_path / "d.txt"
    write_problem(p, y, X)
    y2, X2 = read_problem(p, n_features=7)
    np.testing.assert_array_equal(X2.toarray(), X)
    np.testing.assert_array_equal(y2, y)
    write_problem(p, y, X.astype(np.float32))
    assert np.array_equal(read_problem(p, n_features=7, dtype=np.float32)[1].toarray(),
                          X.astype(np.float32))


def test_write_is_atomic_and_refuses_bad_input(tmp_path):
    p = tmp_path / "keep.txt"
    p.write_bytes(b"old\n")
    X = sp.csr_matrix(np.array([[1.0, np.nan]]))
    with pytest.raises(ValueError, match="NaN or infinity"):
        write_problem(p, [1.0], X)
    with pytest.raises(ValueError, match="labels but X has"):
        write_problem(p, [1.0, 2.0], np.ones((1, 2)))
    with pytest.raises(ValueError, match="y contains"):
        write_problem(p, [np.inf], np.ones((1, 2)))

    class Boom(Exception):
        pass

    def exploding_batches(*a, **k):
        raise Boom()

    original = _io._writer.format_rows
    try:
        _io._writer.format_rows = exploding_batches
        with pytest.raises(Boom):
            write_problem(p, [1.0], np.ones((1, 2)))
    finally:
        _io._writer.format_rows = original
    assert p.read_bytes() == b"old\n"
    assert sorted(os.listdir(tmp_path)) == ["keep.txt"]
    write_problem(p, [1.0], np.ones((1, 2)))
    assert p.read_bytes() == b"1 1:1 2:1\n"
    assert sorted(os.listdir(tmp_path)) == ["keep.txt"]


def test_write_threads_give_identical_bytes(monkeypatch):
    monkeypatch.setattr(_io, "_WRITE_BATCH", 37)
    rng = np.random.default_rng(5)
    X = sp.random(300, 50, density=0.2, format="csr", random_state=2)
    X.data = rng.standard_normal(X.nnz) * 10.0 ** rng.integers(-20, 20, X.nnz)
    y = rng.standard_normal(300)
    outs = []
    for n_jobs in (1, 2):
        f = io.BytesIO()
        write_problem(f, y, X, n_jobs=n_jobs)
        outs.append(f.getvalue())
    assert outs[0] == outs[1]
    assert_same(read_problem(io.BytesIO(outs[0]), n_features=50), (y, X))


# ------------------------------------------------------------ fuzz

def _outcome(data, **kw):
    try:
        ref = ref_parse(data, **kw)
    except RefError as e:
        ref = e
    for n_jobs in (1, 2):
        try:
            got = read_problem(io.BytesIO(data), n_jobs=n_jobs, **kw)
        except DataFormatError as e:
            assert isinstance(ref, RefError), (data, str(e))
            assert str(e).startswith(f"<stream>:{ref.line}:"), (data, str(e), ref.line)
            continue
        assert not isinstance(ref, RefError), (data, got)
        assert_matches_ref(got[0], got[1], ref)


ALPHABET = b"0123456789 :.-+eE#\n\r\tqid:xn\x00\xff"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=120))
def test_fuzz_arbitrary_bytes(data):
    saved = _io._BLOCK_SIZE, _io._MIN_CHUNK
    _io._BLOCK_SIZE, _io._MIN_CHUNK = 24, 4
    try:
        _outcome(data)
    finally:
        _io._BLOCK_SIZE, _io._MIN_CHUNK = saved


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=[chr(c) for c in ALPHABET], max_size=80).map(lambda s: s.encode("latin-1")))
def test_fuzz_format_alphabet(data):
    saved = _io._BLOCK_SIZE, _io._MIN_CHUNK
    _io._BLOCK_SIZE, _io._MIN_CHUNK = 24, 4
    try:
        _outcome(data)
        _outcome(data, zero_based=False)
    finally:
        _io._BLOCK_SIZE, _io._MIN_CHUNK = saved


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 50), st.lists(st.tuples(st.integers(0, 10 ** 6),
                                              st.sampled_from(list(ALPHABET)),
                                              st.sampled_from(["set", "insert", "delete"])),
                                    min_size=1, max_size=4))
def test_fuzz_mutations_of_valid_file(seed, edits):
    data = bytearray(odd_file(seed, n_lines=12, qid=seed % 3 == 0))
    for pos, byte, op in edits:
        pos %= len(data) + 1
        if op == "insert" or pos == len(data):
            data[pos:pos] = bytes([byte])
        elif op == "set":
            data[pos] = byte
        else:
            del data[pos]
    saved = _io._BLOCK_SIZE, _io._MIN_CHUNK
    _io._BLOCK_SIZE, _io._MIN_CHUNK = 40, 8
    try:
        _outcome(bytes(data))
    finally:
        _io._BLOCK_SIZE, _io._MIN_CHUNK = saved
