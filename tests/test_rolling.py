"""The rolling scheduler of a grid's shared matrices
(kernsolve.model_selection._rolling.run_rolling), on fake groups and tasks:
every task once with its group's value, at most ``slots`` values alive, no
group waiting for another's tasks (the pools it replaced made it wait), the
values announced in group order, errors and idle threads handled.

The events below have a timeout only as a guard against a hang of a broken
scheduler; no assertion depends on how long anything takes."""
import threading

import pytest

from kernsolve.model_selection._rolling import run_rolling

GUARD = 120     # seconds: a broken scheduler fails instead of hanging


class Log:
    """What the callbacks saw; alive values counted from the worker threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.alive = 0
        self.most_alive = 0
        self.made, self.told, self.dropped, self.done = [], [], [], []
        self.make_threads = {}

    def make(self, g, threads):
        with self.lock:
            self.alive += 1
            self.most_alive = max(self.most_alive, self.alive)
            self.made.append(g)
            self.make_threads[g] = threads
        return f"value{g}"

    def run(self, task, value, threads):
        return (task, value, threads)

    def on_made(self, g, value):
        self.told.append((g, value))

    def on_done(self, g, t, result):
        self.done.append((g, t, result))

    def on_drop(self, g, value):
        with self.lock:
            self.alive -= 1
        self.dropped.append((g, value))


@pytest.mark.parametrize("workers, slots", [(1, 1), (2, 1), (2, 2), (3, 2), (4, 8)])
def test_every_task_runs_once_with_its_groups_value(workers, slots):
    groups = [[f"t{g}.{t}" for t in range(n)] for g, n in enumerate([5, 0, 3, 1, 4])]
    log = Log()
    run_rolling(groups, workers, 1, slots, log.make, log.run, log.on_made, log.on_done,
                log.on_drop)
    assert sorted((g, t) for g, t, _ in log.done) == \
        [(g, t) for g, tasks in enumerate(groups) for t in range(len(tasks))]
    for g, t, (task, value, threads) in log.done:
        assert task == groups[g][t] and value == f"value{g}" and threads == 1
    assert log.told == [(g, f"value{g}") for g in range(len(groups))]   # group order
    assert sorted(log.dropped) == log.told
    assert log.most_alive <= slots
    assert log.made == list(range(len(groups)))     # made in group order


def test_a_group_does_not_wait_for_anothers_tasks():
    """Two workers, two slots: group 2's value is made (group 1's slot freed)
    while a task of group 0 still runs; that task waits for it.  Pools of two
    groups would make group 2 only after all of group 0's tasks."""
    log = Log()
    third_made = threading.Event()

    def make(g, threads):
        value = log.make(g, threads)
        if g == 2:
            third_made.set()
        return value

    def run(task, value, threads):
        if task == "slow":
            assert third_made.wait(GUARD), "group 2 waited for group 0's task"
        return log.run(task, value, threads)

    run_rolling([["slow"], ["quick"], ["after"]], 2, 1, 2, make, run, log.on_made,
                log.on_done, log.on_drop)
    assert third_made.is_set() and len(log.done) == 3


def test_a_value_made_while_workers_idle_borrows_their_threads():
    """One slot, two workers of one thread each: nothing else can run while a
    value is made, so it is made on both threads; the tasks get one each."""
    log = Log()
    run_rolling([["a", "b"], ["c"]], 2, 1, 1, log.make, log.run, log.on_made, log.on_done,
                log.on_drop)
    assert log.make_threads == {0: 2, 1: 2}
    assert {threads for _, _, (_, _, threads) in log.done} == {1}


def test_an_error_stops_the_run_and_no_work_starts_after_it():
    log = Log()
    started = []

    def run(task, value, threads):
        started.append(task)
        if task == "bad":
            raise RuntimeError("task failed")
        return log.run(task, value, threads)

    with pytest.raises(RuntimeError, match="task failed"):
        run_rolling([["bad"], ["later"]], 1, 1, 1, log.make, run, log.on_made, log.on_done,
                    log.on_drop)
    assert started == ["bad"] and log.made == [0]

    def make(g, threads):
        raise MemoryError("no room for the matrix")
    with pytest.raises(MemoryError, match="no room"):
        run_rolling([["a"]], 2, 1, 2, make, log.run, log.on_made, log.on_done, log.on_drop)
