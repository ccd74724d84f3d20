"""SMO's own thread team (kernsolve/_core/_team.h; issue 16, item 4).

Oracles: the one-thread solve (a team of any size, spinning or sleeping,
must give its bits), the process's own thread list (/proc/self/task,
the team's threads by their name: no thread outlives a solve), a forked child's answer, and hand-made evidence for
the load decision (no timing is asserted anywhere).
"""
import multiprocessing
import os
import pickle
import select
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import model_bytes, model_bytes_each, package_env
from test_smo_core import _all_formulations, _solve_case, load, run_csvc, signs

from kernsolve._core._simd import vector_paths
from kernsolve.solvers.smo import _smo

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the team is Linux-only (futex, /proc)")


@pytest.fixture
def tuning():
    """_smo._set_tuning for one test, restored afterwards."""
    old = _smo._get_tuning()
    yield _smo._set_tuning
    _smo._set_tuning(**old)


TEAM_THREAD = "kernsolve-team"      # the name the team's workers give themselves


def n_tasks():
    """The team's threads alive in this process (by their name: the other
    threads of a test process -- loky's, dask's, OpenMP's -- come and go)."""
    count = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                count += f.read().strip() == TEAM_THREAD
        except OSError:         # the thread ended while we looked
            pass
    return count


def tasks_after_joins(limit, tries=5000):
    """The process's task count once the joined threads are gone.  A joined
    thread can still be listed in /proc/self/task for a moment (the kernel
    wakes the joiner before it takes the task out of the thread group), so
    look again while the count is above ``limit``: the looks end as soon as
    it is not (the tries only bound a thread that really stayed).  A count
    taken just after a solve can thus be one too high; the tests compare with
    the lowest count seen."""
    for _ in range(tries):
        count = n_tasks()
        if count <= limit:
            break
        time.sleep(0.001)
    return count


def a9a(shared, n):
    X, labels = load(shared, "a9a", n, n_features=123)
    return X, signs(labels)


# ------------------------------------------------------------ the same bits

@pytest.mark.parametrize("team", ["spin", "sleep", "auto"])
def test_every_formulation_same_bits_on_1_2_3_threads(shared, tuning, team):
    # Every loop parallel (par_min 8, no chooser), so each WSS pass, step
    # sweep, SVR gather and row fill goes through the team (rows of any
    # length while it spins: team_row_min_work 0).
    tuning(par_min=8, adaptive=False, team=team, team_row_min_work=0)
    for case in _all_formulations(shared):
        a1, i1 = _solve_case(case, n_threads=1)
        for n in (2, 3):
            a, i = _solve_case(case, n_threads=n)
            assert a.tobytes() == a1.tobytes(), (team, n, case[-1])
            assert (i["rho"], i["obj"], i["n_iter"]) == (i1["rho"], i1["obj"], i1["n_iter"])


def test_team_and_openmp_give_the_same_bits(shared, tuning):
    X, y = a9a(shared, 3000)
    tuning(par_min=64, adaptive=False, team="off")
    a_omp, i_omp = run_csvc(X, y, 1.0, 0.05, n_threads=2)
    tuning(team="spin")
    a_team, i_team = run_csvc(X, y, 1.0, 0.05, n_threads=2)
    a_one, _ = run_csvc(X, y, 1.0, 0.05, n_threads=1)
    assert a_team.tobytes() == a_omp.tobytes() == a_one.tobytes()
    assert i_team["n_kernel_evals"] == i_omp["n_kernel_evals"]


@pytest.mark.parametrize("team", ["spin", "sleep"])
@pytest.mark.parametrize("n", [2, 3, 5])
def test_every_chunk_runs_exactly_once(team, n, tuning):
    # Near-empty jobs back to back: the race between a worker's claim and the
    # master's is as tight as it gets.  Each chunk adds 1 to its own counter.
    tuning(team_spin_us=20)          # workers fall asleep and wake up often too
    repeats = 3000
    _, counts = _smo._dispatch_seconds(n, repeats, team)
    assert counts == [repeats] * n


# ------------------------------------------------- no thread outlives a solve

def test_many_solves_leave_no_thread(shared, tuning):
    X, y = a9a(shared, 1000)
    tuning(par_min=64, adaptive=False, poll_seconds=0.0)
    run_csvc(X, y, 1.0, 0.05, n_threads=2)          # warm-up (imports, pools)
    before = n_tasks()
    seen = []

    def progress(info):
        seen.append(n_tasks())

    for team, n in [("spin", 2), ("auto", 2), ("sleep", 3), ("spin", 3)] * 5:
        tuning(team=team)
        run_csvc(X, y, 1.0, 0.05, n_threads=n, progress=progress)
        # no thread left behind (fewer: the last team was still leaving
        # when `before` was counted)
        after = tasks_after_joins(before)
        assert after <= before, (team, n)
        before = after
        # while the solve ran, its team was there: n - 1 workers
        assert seen and seen[-1] == before + n - 1, (team, n, seen)


def test_an_interrupted_solve_leaves_no_thread(shared, tuning):
    X, y = a9a(shared, 1000)
    tuning(poll_seconds=0.0, team="spin")
    run_csvc(X, y, 1.0, 0.05, n_threads=2)
    before = n_tasks()

    def stop(info):
        raise KeyboardInterrupt

    for _ in range(5):
        with pytest.raises(KeyboardInterrupt):
            run_csvc(X, y, 10.0, 0.05, n_threads=2, progress=stop)
        after = tasks_after_joins(before)
        assert after <= before
        before = after


def test_one_thread_starts_no_team(shared, tuning):
    X, y = a9a(shared, 600)
    tuning(poll_seconds=0.0, team="spin")
    run_csvc(X, y, 1.0, 0.05, n_threads=1)
    before = n_tasks()
    counts = []
    run_csvc(X, y, 1.0, 0.05, n_threads=1, progress=lambda info: counts.append(n_tasks()))
    assert counts and set(counts) == {before}


# ------------------------------------------------------------------- fork

def _solve_in_child(X, y):
    alpha, _ = run_csvc(X, y, 1.0, 0.05, n_threads=2)
    return alpha


def test_a_forked_child_solves_on_its_own_team(shared, tuning):
    X, y = a9a(shared, 1500)
    tuning(par_min=64, adaptive=False, team="spin")
    expected, _ = run_csvc(X, y, 1.0, 0.05, n_threads=2)   # the parent's team first
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        alpha = pool.apply_async(_solve_in_child, (X, y)).get(timeout=300)
    assert alpha.tobytes() == expected.tobytes()


def test_fork_while_the_team_runs(shared, tuning):
    # Forked from inside a solve (its progress callback, the team alive): the
    # child goes on with its copy of the solve, where no worker exists; the
    # master must run every chunk itself and finish with the same bits.
    X, y = a9a(shared, 1500)
    tuning(par_min=64, adaptive=False, team="spin", poll_seconds=0.0)
    expected, _ = run_csvc(X, y, 1.0, 0.05, n_threads=1)
    read_end, write_end = os.pipe()
    state = {"pid": None, "calls": 0}

    def progress(info):
        state["calls"] += 1
        if state["calls"] == 3 and state["pid"] is None:
            state["pid"] = os.fork()

    try:
        alpha, _ = run_csvc(X, y, 1.0, 0.05, n_threads=2, progress=progress)
    except BaseException:
        if state["pid"] == 0:
            os._exit(3)
        raise
    if state["pid"] == 0:                        # the child: report and leave
        try:
            os.close(read_end)
            with os.fdopen(write_end, "wb") as f:
                f.write(pickle.dumps(alpha))
        finally:
            os._exit(0)
    os.close(write_end)
    assert state["pid"], "the solve made too few visits to Python to fork"
    chunks = []
    with os.fdopen(read_end, "rb") as f:
        while True:
            ready, _, _ = select.select([f], [], [], 300)
            if not ready:                        # a hang guard, not a timing assertion
                os.kill(state["pid"], 9)
                os.waitpid(state["pid"], 0)
                pytest.fail("the forked child hung")
            data = os.read(f.fileno(), 1 << 20)
            if not data:
                break
            chunks.append(data)
    _, status = os.waitpid(state["pid"], 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    child_alpha = pickle.loads(b"".join(chunks))
    assert alpha.tobytes() == expected.tobytes()
    assert child_alpha.tobytes() == expected.tobytes()


# ------------------------------------------------------- the load decision

def test_an_idle_machine_keeps_spinning():
    assert _smo._load_decisions([(0.0, -1, 0), (0.02, 0.01, 0), (0.04, 0.0, 0),
                                 (0.06, 0.09, 1)]) == [True] * 4


def test_a_busy_machine_at_the_start_sleeps_until_a_core_is_free():
    # one other runnable task on 2 cores: no room for 2 spinning threads
    evidence = [(0.0, -1, 1)] + [(0.02 * k, 0.0, 1) for k in range(1, 391)]
    assert not any(_smo._load_decisions(evidence))
    # ... but a blind trial after 8 s (the other task may have a lower priority)
    assert _smo._load_decisions(evidence + [(8.1, 0.0, 1)])[-1]
    # the other task gone, after the back-off (0.5 s: the failed start doubles
    # 0.25): a trial of spinning
    out = _smo._load_decisions([(0.0, -1, 1), (0.4, 0.0, 0), (0.6, 0.0, 0)])
    assert out == [False, False, True]


def test_the_count_drops_only_an_unconfirmed_spin():
    # confirmed by two clean windows, a spin survives a busy count at the
    # next solve's start; the windows decide
    out = _smo._load_decisions([(0.0, -1, 0), (0.02, 0.0, 0), (0.04, 0.0, 0),
                                (1.0, -1, 1), (1.02, 0.3, 1)])
    assert out == [True, True, True, True, False]


def test_more_threads_than_cores_never_spin_at_the_start():
    assert _smo._load_decisions([(0.0, -1, 0)], n_threads=3, cpus=2) == [False]
    assert _smo._load_decisions([(0.0, -1, 0)], n_threads=3, cpus=4) == [True]


def test_waiting_for_a_cpu_stops_the_spin():
    # a third of the runnable time waiting (3 threads on 2 cores): at once
    assert _smo._load_decisions([(0.0, -1, 0), (0.02, 0.33, -1)]) == [True, False]
    # a moderate share: only two windows in a row
    assert _smo._load_decisions([(0.0, -1, 0), (0.02, 0.15, 0), (0.04, 0.05, 0),
                                 (0.06, 0.15, 0), (0.08, 0.15, 0)]) == [True] * 4 + [False]


def test_failed_trials_back_off_and_a_clean_one_resets():
    # spin, then stop: the first spin was a trial, so the back-off doubles to
    # 0.5 s; the trial at 0.53 fails (-> 1 s), the one at 1.56 too (-> 2 s)
    evidence = [(0.0, -1, 0), (0.02, 0.3, 0),
                (0.3, 0.0, 0), (0.53, 0.0, 0), (0.55, 0.3, 0),
                (1.5, 0.0, 0), (1.56, 0.0, 0), (1.58, 0.3, 0),
                (3.0, 0.0, 0), (3.6, 0.0, 0)]
    expected = [True, False, False, True, False, False, True, False, False, True]
    assert _smo._load_decisions(evidence) == expected
    # a trial that stays clean for two windows is confirmed: the back-off
    # returns to 0.25 s after the next failure
    evidence = [(0.0, -1, 0), (0.02, 0.3, 0), (0.53, 0.0, 0), (0.55, 0.0, 0),
                (0.57, 0.0, 0), (0.59, 0.3, 0), (0.80, 0.0, 0), (0.85, 0.0, 0)]
    assert _smo._load_decisions(evidence) == [True, False, True, True, True, False,
                                              False, True]


def test_unknown_counts_fall_back_on_the_back_off_alone():
    out = _smo._load_decisions([(0.0, -1, -1), (0.02, 0.3, -1), (0.3, -1, -1),
                                (0.53, -1, -1)])
    assert out == [True, False, False, True]


@pytest.mark.skipif(not os.path.exists("/proc/thread-self/schedstat"),
                    reason="no schedstat: the team never spins and keeps no decision")
def test_a_solve_remembers_the_decision(shared, tuning):
    X, y = a9a(shared, 600)
    tuning(team="auto")
    _smo._team_memory(forget=True)
    assert _smo._team_memory() is None
    run_csvc(X, y, 1.0, 0.05, n_threads=2)
    assert _smo._team_memory() in (True, False)      # which one depends on the machine
    run_csvc(X, y, 1.0, 0.05, n_threads=1)           # no team, nothing changes
    assert _smo._team_memory() in (True, False)


# ------------------------------------- the selection against brute force

TAU = 1e-12


def _last_best(values, mask, largest):
    """LIBSVM's scan: the best value over mask and the LAST index that has it."""
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return -1, (-np.inf if largest else np.inf)
    v = values[idx]
    best = v.max() if largest else v.min()
    return int(idx[v == best][-1]), best


def _second_order(G_max, i, y, G, QD, K, low):
    """WSS's second pass for a first index i: the partner j with the smallest
    -(grad_diff^2)/quad (TAU when quad <= 0), that smallest value, and the
    largest y_t G_t over low."""
    gd = G_max + y * G
    _, g2 = _last_best(y * G, low, True)
    if i < 0:
        return -1, np.inf, g2
    quad = QD[i] + QD - 2.0 * K[i]
    with np.errstate(divide="ignore", invalid="ignore"):
        obj = np.where(quad > 0, -(gd * gd) / np.where(quad > 0, quad, 1.0), -(gd * gd) / TAU)
    j, best = _last_best(obj, low & (gd > 0), False)
    return j, best, g2


def brute_force_wss(K, y, p, alpha, C, nu=False, eps=1e-3):
    """LIBSVM's working-set selection (WSS3 of Fan, Chen & Lin 2005; Solver_NU's
    for nu), written from its definition over whole numpy vectors: (i, j, gap)."""
    yK = K * np.outer(y, y)
    G = p + yK @ alpha                   # exact here: small dyadic values only
    QD = np.diag(K).astype(np.float64)
    upper, lower = alpha >= C, alpha <= 0
    pos = y > 0
    up = np.where(pos, ~upper, ~lower)       # may move up (I_up)
    low = np.where(pos, ~lower, ~upper)      # may move down (I_low)
    if not nu:
        i, g_max = _last_best(-y * G, up, True)
        j, _, g2 = _second_order(g_max, i, y, G, QD, K, low)
        gap = g_max + g2
    else:
        ip, gp = _last_best(-G, up & pos, True)
        in_, gn = _last_best(G, up & ~pos, True)
        jp, op, gp2 = _second_order(gp, ip, y, G, QD, K, low & pos)
        jn, on, gn2 = _second_order(gn, in_, y, G, QD, K, low & ~pos)
        # one scan over both classes: the smaller objective, the later index on a tie
        if jn >= 0 and (jp < 0 or on < op or (on == op and jn > jp)):
            i, j = in_, jn
        else:
            i, j = ip, jp
        gap = max(gp + gp2, gn + gn2)
    if gap < eps or j < 0:
        return -1, -1, gap
    return i, j, gap


def _tied_problem(rng, m, copies):
    """A precomputed integer kernel B B' of m points, each `copies` times in a
    shuffled order (equal rows: ties everywhere, and quad = 0 for two copies),
    labels, linear terms and alphas from a few values each (ties in G)."""
    B = rng.integers(0, 2, size=(m, 3)).astype(np.float64)
    rows = rng.permutation(np.repeat(np.arange(m), copies))
    K = B[rows] @ B[rows].T
    n = len(rows)
    y = np.where(rng.random(n) < 0.5, 1, -1).astype(np.int8)
    y[:2] = (1, -1)
    p = rng.choice([-1.0, -0.5, 0.0, 0.5], size=n)
    alpha = rng.choice([0.0, 1.0, 2.0], size=n, p=[0.5, 0.3, 0.2])
    return K, y, p, alpha, np.full(n, 2.0)


@pytest.fixture(params=[None, "scalar"], ids=["vector", "scalar"])
def sweeps(request, vector_path):
    """The sweeps' AVX2 bulk (_wss_avx2.h) on where the CPU has it, or off."""
    vector_path(request.param)
    yield request.param


@pytest.mark.parametrize("nu", [False, True])
def test_parallel_selection_picks_the_brute_force_pair(tuning, nu, sweeps):
    # Every sweep split in 1, 2 and 3 chunks of a few variables each (par_min
    # 1): the chunks' picks, combined, must be the serial scan's, ties included
    # (of signed zeros too: G = 0 gives -y G = -0.0), four lanes at a time or not.
    tuning(par_min=1, adaptive=False, team="spin")
    rng = np.random.default_rng(16)
    checked = 0
    for case in range(40):
        K, y, p, alpha, C = _tied_problem(rng, m=int(rng.integers(3, 12)),
                                          copies=int(rng.integers(2, 6)))
        want = brute_force_wss(K, y.astype(np.float64), p, alpha, C, nu=nu)
        for n in (1, 2, 3):
            got = _smo._first_pair(K, 4, 0.0, y, p, alpha, C, n, nu=nu)
            assert got[:2] == want[:2], (case, n, got, want)
            assert got[2] == want[2] or (np.isnan(got[2]) and np.isnan(want[2])), (case, n)
        checked += want[0] >= 0
    assert checked >= 20          # most cases select a pair (not optimal at the start)


@pytest.mark.parametrize("options", [
    "-s 0 -c 2", "-s 1 -n 0.4", "-s 2 -n 0.3", "-s 3 -c 2 -p 0.5", "-s 4 -n 0.5 -c 2",
    "-s 0 -c 2 --bias 0"])
def test_vector_sweeps_solve_as_the_scalar_loops(tuning, options):
    # Whole solves, which also run the fused gradient update + first WSS pass:
    # the same model bytes with the AVX2 bulk and without, at 1 and 2 threads
    # (chunks of any length: par_min 1), on data full of ties (rows repeated).
    tuning(par_min=1, adaptive=False)
    rng = np.random.default_rng(7)
    base = rng.integers(0, 3, size=(40, 5)).astype(np.float64)
    X = base[rng.integers(0, 40, size=301)]
    y = np.where(X @ np.array([1.0, -1.0, 0.5, 0.0, 1.0]) > 1.5, 1.0, -1.0)
    if options.startswith(("-s 3", "-s 4")):
        y = X[:, 0] - X[:, 1]
    texts = model_bytes_each(vector_paths, (None, "scalar"), None, y, X,
                             f"{options} -t 2 -g 0.3 -q")
    assert len(texts) == 1


@pytest.mark.parametrize("threads", [1, 2])
def test_swap_log_flushed_after_every_batch_solves_the_same(shared, tuning, threads):
    # Shrinking's swaps reach the cached rows lazily through a log of batches
    # (_kernel.pyx); flushing it after every batch (every cached row caught up
    # at once, shared out to the team at 2 threads) must train the same model,
    # byte for byte, as the default log of 256 (which a9a's 3000 rows never fill).
    from kernsolve._core import _kernel
    tuning(par_min=1, adaptive=False, team="spin")
    X, y = a9a(shared, 3000)
    texts = []
    for k in (256, 1):
        before = _kernel._log_batches(k)
        try:
            texts.append(model_bytes(y, X, f"-c 10 -g 0.05 -m 40 -q --threads {threads}"))
        finally:
            _kernel._log_batches(before)
    assert texts[0] == texts[1]
    with pytest.raises(ValueError, match="k must be in"):
        _kernel._log_batches(0)


# ----------------------------------------------------------------- settings

def test_team_setting_checked(tuning):
    with pytest.raises(ValueError, match="team='fast': expected one of off, auto, spin, sleep"):
        _smo._set_tuning(team="fast")
    with pytest.raises(ValueError, match="team_spin_us"):
        _smo._set_tuning(team_spin_us=-1)
    assert _smo._get_tuning()["team"] in ("off", "auto", "spin", "sleep")


@pytest.mark.parametrize("value,expected", [("off", "off"), (" Spin ", "spin"), ("bogus", None)])
def test_the_environment_variable(tmp_path, value, expected):
    probe = ("from kernsolve.solvers.smo import _smo; print(_smo._get_tuning()['team'])\n"
             "import kernsolve, numpy as np\n"
             "kernsolve.train(np.array([1.0, -1.0, 1.0]), np.eye(3), '-q')\n")
    p = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True,
                       text=True, env=package_env(KERNSOLVE_SMO_TEAM=value), timeout=120)
    if expected is None:
        # the import works; the first solve stops with the variable named
        assert p.returncode != 0
        assert "ValueError: KERNSOLVE_SMO_TEAM='bogus': expected one of off, auto, spin, sleep" \
            in p.stderr
    else:
        assert p.returncode == 0, p.stderr
        assert p.stdout.splitlines()[0] == expected
