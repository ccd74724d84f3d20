"""Memory of SMO training (issue 16 item 6): the -m budget holds the kernel
engine's cached rows and its position-ordered copy of the rows up to a quarter
of -m (the rest of the copy beyond it), for every formulation and every
one-vs-one pair; a sub-problem's rows are read in place.

Oracles: the solution with a cache far too small to hold the matrix is the
solution with a cache that holds it all (the cache can change the work, never
the answer), the rows copied out of X give the same solve as the rows read in
place, the whole matrix bounds what a cache can ever hold, and a child
process's peak resident size (VmHWM) stays under a bound computed from -m
and the data, well below what the cached rows would take without the budget.
"""
import io
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file

import kernsolve
from kernsolve._kernels import as_canonical
from kernsolve.solvers.smo._solve import solve

from conftest import package_env

MB = 2 ** 20


def load(shared, name, n_rows, n_features=None):
    X, y = load_svmlight_file(io.BytesIO(shared.lines(name, n_rows)), n_features=n_features)
    return X.tocsr(), y


def assert_same_model(a, b):
    assert np.asarray(a.dual_coef).tobytes() == np.asarray(b.dual_coef).tobytes()
    assert np.asarray(a.rho).tobytes() == np.asarray(b.rho).tobytes()
    assert np.array_equal(a.support_indices, b.support_indices)


def check_budget(pairs, cache_mb, n_rows):
    """Every sub-problem kept its cached rows within the rows' budget, and the
    rows' budget plus the copy's part in it within -m: that part is the whole
    copy up to a quarter of -m, a quarter beyond (the budget is raised to two
    full rows only when -m is smaller than that, which these sizes are not)."""
    for part, l in zip(pairs, n_rows):
        assert 0 < part["cache_peak_bytes"] <= part["cache_budget_bytes"]
        assert part["cache_peak_bytes"] <= 4 * l * l          # never more than the matrix
        assert part["copy_in_budget_bytes"] == min(part["copy_bytes"], int(cache_mb * MB / 4))
        assert part["cache_budget_bytes"] + part["copy_in_budget_bytes"] <= cache_mb * MB


FORMULATIONS = [("-s 0 -c 1", "C-SVC"), ("-s 1 -n 0.3", "nu-SVC"), ("-s 2 -n 0.3", "one-class"),
                ("-s 3 -c 1 -p 0.1", "epsilon-SVR"), ("-s 4 -c 1 -n 0.3", "nu-SVR")]


@pytest.mark.parametrize("options,name", FORMULATIONS, ids=[f[1] for f in FORMULATIONS])
def test_every_formulation_keeps_the_cache_within_m(shared, options, name):
    X, y = load(shared, "a9a", 700, n_features=123)
    base = f"{options} -t 2 -g 0.05 -q --threads 2"
    small = kernsolve.train(y, X, base + " -m 0.15")       # 157 KB: 6% of the 1.96 MB matrix
    large = kernsolve.train(y, X, base + " -m 100")
    assert_same_model(small, large)
    n = X.shape[0]
    check_budget(small.stats["pairs"], 0.15, [n])
    check_budget(large.stats["pairs"], 100, [n])
    part, whole = small.stats["pairs"][0], large.stats["pairs"][0]
    # the small budget was binding: filled to within one row, rows recomputed
    assert part["cache_peak_bytes"] > part["cache_budget_bytes"] - 4 * n
    assert part["n_kernel_evals"] > whole["n_kernel_evals"]


def test_one_vs_one_pairs_each_keep_the_cache_and_copy_within_m(shared):
    X, y = load(shared, "fashion-mnist.scale", 500, n_features=784)
    base = "-c 10 -g 0.02 -q --threads 1"
    small = kernsolve.train(y, X, base + " -m 0.1")
    mid = kernsolve.train(y, X, base + " -m 4")
    assert_same_model(small, mid)
    sizes = [int(np.isin(y, part["labels"]).sum()) for part in small.stats["pairs"]]
    assert len(sizes) == 45
    check_budget(small.stats["pairs"], 0.1, sizes)
    check_budget(mid.stats["pairs"], 4, sizes)
    for part, l in zip(mid.stats["pairs"], sizes):
        # the pair's sparse rows, copied in position order (12 bytes a nonzero,
        # 16 a row), come out of the 4 MB: the rows' budget is the rest
        rows = np.flatnonzero(np.isin(y, part["labels"]))
        nnz = int(np.diff(X.indptr)[rows].sum())
        assert part["copy_bytes"] == 12 * nnz + 16 * (l + 1)
        assert part["cache_budget_bytes"] == (4 * MB - part["copy_bytes"]) // 4 * 4
    for part, l in zip(small.stats["pairs"], sizes):
        # more than a quarter of 0.1 MB: the copy is made all the same, a
        # quarter of -m from the budget and the rest beyond it
        assert part["copy_bytes"] > 0.1 * MB / 4
        assert part["cache_budget_bytes"] == int(0.1 * MB - int(0.1 * MB / 4)) // 4 * 4


@pytest.mark.parametrize("form", ["sparse", "dense", "precomputed"])
def test_rows_read_in_place_solve_as_rows_copied_out(shared, form):
    X, labels = load(shared, "a9a", 500, n_features=123)
    gamma = 0.05
    rows = np.random.default_rng(3).permutation(500)[:320]
    if form == "dense":
        X = X.toarray()
    kernel = 2
    if form == "precomputed":
        from sklearn.metrics.pairwise import rbf_kernel
        X = rbf_kernel(X, gamma=gamma)
        kernel = 4
    whole = as_canonical(X)
    part = np.ascontiguousarray(X[np.ix_(rows, rows)]) if kernel == 4 \
        else as_canonical(X[rows])
    y = np.where(labels[rows] > 0, 1, -1).astype(np.int8)
    l = rows.size
    results = []
    for Xs, sub in ((part, None), (whole, rows)):
        alpha = np.zeros(l)
        info = solve(Xs, kernel, 3, gamma, 0.0, y, -np.ones(l), alpha, np.full(l, 2.0),
                     cache_mb=0.2, rows=sub)
        results.append((alpha, info))
    (a0, i0), (a1, i1) = results
    assert a0.tobytes() == a1.tobytes()
    assert (i0["rho"], i0["n_iter"], i0["n_kernel_evals"]) == \
        (i1["rho"], i1["n_iter"], i1["n_kernel_evals"])


def test_rows_are_checked(shared):
    X, _ = load(shared, "a9a", 50, n_features=123)
    Xc = as_canonical(X)
    y = np.ones(3, dtype=np.int8)
    for bad in ([0, 1, 50], [-1, 2, 3]):
        with pytest.raises(ValueError, match=r"rows must be data rows of X, in \[0, 50\)"):
            solve(Xc, 2, 3, 0.1, 0.0, y, -np.ones(3), np.zeros(3), np.ones(3), rows=bad)
    with pytest.raises(ValueError, match="rows must be a one-dimensional array"):
        solve(Xc, 2, 3, 0.1, 0.0, y, -np.ones(3), np.zeros(3), np.ones(3),
              rows=np.array([0.5, 1, 2]))


# A child process: VmHWM after the imports, the data read, the model trained.
_CHILD = textwrap.dedent("""
    import io, json, sys
    import numpy as np
    import kernsolve
    from kernsolve._io import read_problem

    def hwm():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024

    data = sys.stdin.buffer.read()
    base = hwm()
    y, X = read_problem(io.BytesIO(data))
    del data
    model = kernsolve.train(y, X, sys.argv[1])
    print(json.dumps({"base": base, "peak": hwm(), "data": X.data.nbytes + X.indices.nbytes,
                      "pairs": model.stats["pairs"]}))
""")


def test_process_peak_stays_within_m_plus_the_data(shared):
    """The whole process: what training adds to the interpreter's resident size
    stays under -m plus a few times the data plus a fixed allowance for the
    driver's arrays and the allocator, while the rows the solver asked for
    (their bytes with an unlimited cache) would take several times that."""
    lines = shared.lines("a9a", 10000)
    options = "-c 4 -g 0.05 -q --threads 1"
    runs = {}
    for m in (4, 400):
        out = subprocess.run([sys.executable, "-c", _CHILD, f"{options} -m {m}"], input=lines,
                             capture_output=True, env=package_env(), cwd="/", check=True)
        runs[m] = json.loads(out.stdout)
    bounded, free = runs[4], runs[400]
    allowance = 40 * MB
    bound = 4 * MB + 4 * bounded["data"] + allowance
    assert bounded["peak"] - bounded["base"] <= bound
    # without the budget the cache holds this much: the bound is a real limit
    assert free["pairs"][0]["cache_peak_bytes"] > bound + 20 * MB
    assert bounded["pairs"][0]["cache_peak_bytes"] <= 4 * MB


def test_model_lines_come_in_bounded_chunks_with_the_same_text():
    """save_model writes the support vectors' lines chunk by chunk: each chunk
    holds about values_per_chunk numbers (at least one row), and together they
    are the text of one chunk for the whole model, whatever mix of LIBSVM's
    %.8g values and values that need %.17g the chunks see."""
    import scipy.sparse as sp
    from kernsolve._model_text import format_sv_rows
    rng = np.random.default_rng(8)
    dense = np.round(rng.random((300, 40)), 6) * (rng.random((300, 40)) < 0.4)
    dense[rng.random(dense.shape) < 0.05] = np.pi        # needs %.17g
    dense[7] = 0.0                                       # a row without values
    csr = sp.csr_matrix(dense)
    coef = rng.standard_normal((3, 300))
    whole = list(format_sv_rows(coef, csr, values_per_chunk=10 ** 9))
    assert len(whole) == 1
    chunks = list(format_sv_rows(coef, csr, values_per_chunk=100))
    assert "".join(chunks) == whole[0]
    row_numbers = 3 + 2 * np.diff(csr.indptr)
    assert len(chunks) >= row_numbers.sum() // 100
    for text in chunks:
        lines = text.splitlines()
        numbers = sum(3 + 2 * (len(line.split()) - 3) for line in lines)
        assert numbers <= 100 or len(lines) == 1
