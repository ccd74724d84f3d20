"""Groups of tasks on threads, each group's shared value made just before its
tasks and dropped after them, at most a few groups' values alive at once.

A grid whose fits share kernel matrices (:mod:`kernsolve.model_selection.grid`)
is a list of groups, one per kernel: the group's matrix (its *value*), then
its tasks (the chains of C values, one per fold), which all read it.  Only
``slots`` matrices fit in ``-m`` together.  Run pool after pool (compute a
few matrices, run their tasks, drop them, compute the next), a pool's last
task ran alone while the other cores waited for it, and every matrix was
computed while no task ran (issue 35, svmguide1 on two workers).  Here a
worker that finds a free slot makes the next group's value at once, while
the other workers go on with the tasks of the groups already made, and a
slot is free again as soon as its group's last task ends: no core waits for
a pool.

A free worker takes, in this order: the next group's value, when a slot is
free; else the next task of the earliest group whose value is made.  A value
made while other workers have nothing to do borrows their threads (its
``n_threads``), and they wait for it.  The results are the same whatever the
order (each task's bits depend on its inputs and value only); ``on_made`` is
told of the values in group order, so that what it prints does not depend on
which finished first.
"""
import queue
import threading

__all__ = ["run_rolling"]


class _Plan:
    """The dispatcher's state, changed only in the caller's thread."""

    def __init__(self, groups, slots):
        self.groups = groups
        self.slots = slots
        self.next_group = 0             # the next group whose value is to be made
        self.made = {}                  # group -> its value, while alive
        self.making = set()             # groups whose value is being made
        self.next_task = {}             # group (made) -> index of its next task
        self.left = {}                  # group (alive) -> tasks not finished
        self.told = 0                   # groups whose value on_made was told of

    def alive(self):
        return len(self.made) + len(self.making)

    def take(self):
        """The next piece of work, ``("make", g, None)`` or ``("task", g, t)``, or None."""
        if self.next_group < len(self.groups) and self.alive() < self.slots:
            g = self.next_group
            self.next_group += 1
            self.making.add(g)
            self.left[g] = len(self.groups[g])
            return ("make", g, None)
        for g in sorted(self.next_task):
            t = self.next_task[g]
            if t < len(self.groups[g]):
                self.next_task[g] = t + 1
                return ("task", g, t)
        return None

    def done(self):
        return self.next_group == len(self.groups) and not self.left


def run_rolling(groups, n_workers, n_threads, slots, make, run, on_made, on_done,
                on_drop, name="grid"):
    """Run every task of every group on ``n_workers`` threads.

    ``groups``: lists of tasks.  ``make(g, threads)`` makes group ``g``'s
    value (on a worker, on ``threads`` threads); ``run(task, value, threads)``
    runs a task (on a worker, ``n_threads`` threads); in the caller's thread:
    ``on_made(g, value)`` for each value in group order, ``on_done(g, t,
    result)`` as each task finishes, ``on_drop(g, value)`` when group ``g``'s
    tasks have all finished (its slot is free again; the value is no longer
    read).  At most ``slots`` (at least 1) groups are alive at once.  An
    exception raised by ``make`` or ``run`` is raised here, after the running
    work ends, and no work starts after it (nor after Ctrl-C).
    """
    plan = _Plan(groups, max(1, int(slots)))
    todo, finished = queue.SimpleQueue(), queue.SimpleQueue()
    stop = threading.Event()
    waiting = {}        # values made whose on_made waits for an earlier group's

    def work():
        while True:
            item = todo.get()
            if item is None or stop.is_set():
                return
            kind, g, t, threads, _ = item
            try:
                value = make(g, threads) if kind == "make" else \
                    run(groups[g][t], plan.made[g], threads)
                finished.put((item, True, value))
            except BaseException as exc:    # handed to the caller's thread
                finished.put((item, False, exc))

    workers = [threading.Thread(target=work, name=f"kernsolve-{name}-{i}", daemon=True)
               for i in range(max(1, int(n_workers)))]
    for w in workers:
        w.start()
    idle = len(workers)
    try:
        while not plan.done():
            started = []
            while idle and (piece := plan.take()) is not None:
                started.append(piece)
                idle -= 1
            for kind, g, t in started:
                # workers left with nothing to do lend their threads to a
                # value made now (the first), and wait for it
                lent, idle = (idle, 0) if kind == "make" else (0, idle)
                todo.put((kind, g, t, n_threads * (1 + lent), lent))
            (kind, g, t, _, lent), ok, value = finished.get()
            if not ok:
                raise value
            idle += 1 + lent
            if kind == "make":
                plan.making.discard(g)
                plan.made[g] = value
                plan.next_task[g] = 0
                waiting[g] = value
                while plan.told in waiting:
                    on_made(plan.told, waiting.pop(plan.told))
                    plan.told += 1
            else:
                on_done(g, t, value)
                plan.left[g] -= 1
            if plan.left[g] == 0:
                _drop(plan, g, on_drop)
    finally:        # also after an error or Ctrl-C: no work starts after this
        stop.set()
        for _ in workers:
            todo.put(None)
        for w in workers:
            w.join()


def _drop(plan, g, on_drop):
    value = plan.made.pop(g)
    del plan.left[g], plan.next_task[g]
    on_drop(g, value)
