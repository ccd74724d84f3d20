"""Where kernsolve-train's and kernsolve-predict's peak memory goes (issue 16 item 6).

Runs the commands' steps in this process (the same calls as
``kernsolve.cli.train`` / ``kernsolve.cli.predict``) while a sampler thread
reads the resident set size (``VmRSS`` of ``/proc/self/status``) every few
milliseconds; each step is a phase, and the table gives each phase's highest
RSS, the RSS when it ended, and the process's high-water mark (``VmHWM``).
Training's one-vs-one pairs are phases of their own ("pair 3 (0,4)").

Usage::

    python benchmarks/mem_profile.py train  DATA MODEL -c 10 -g 0.02 -m 1000 --threads 1
    python benchmarks/mem_profile.py predict TEST MODEL OUT --threads 1

The numbers are RSS, not speed: valid on a loaded machine.  A phase shorter
than the sampling interval may be missed by the sampler; VmHWM never is.
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _status():
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                key, value = line.split(":")
                out[key] = int(value.split()[0]) / 1024.0
    return out


class Sampler:
    """RSS samples labelled by the current phase."""

    def __init__(self, interval=0.005):
        self.interval = interval
        self.phase = "start"
        self.order = []
        self.peak = {}
        self.end = {}
        self.stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _note(self, rss):
        if self.phase not in self.peak:
            self.order.append(self.phase)
            self.peak[self.phase] = rss
        elif rss > self.peak[self.phase]:
            self.peak[self.phase] = rss

    def _run(self):
        while not self.stop:
            self._note(_status()["VmRSS"])
            time.sleep(self.interval)

    def enter(self, phase):
        s = _status()
        self._note(s["VmRSS"])
        self.end[self.phase] = (s["VmRSS"], s["VmHWM"])
        self.phase = phase
        self._note(s["VmRSS"])

    def report(self, out=sys.stdout):
        self.enter("done")
        self.stop = True
        out.write("| phase | peak RSS MB (sampled) | RSS at end MB | VmHWM at end MB |\n")
        out.write("|---|---|---|---|\n")
        for phase in self.order:
            if phase == "done":
                continue
            rss, hwm = self.end.get(phase, (float("nan"), float("nan")))
            out.write(f"| {phase} | {self.peak[phase]:.0f} | {rss:.0f} | {hwm:.0f} |\n")
        out.write(f"VmHWM {_status()['VmHWM']:.0f} MB\n")


def train(argv, sampler):
    import numpy as np
    from kernsolve import _api
    from kernsolve._model import save_model
    from kernsolve.cli._common import read_data
    from kernsolve.solvers.libsvm import formulations
    *options, data_path, model_path = argv
    sampler.enter("read")
    y, X = read_data(data_path)
    y = np.asarray(y, dtype=np.float64)
    solve = formulations._smo_solve
    count = [0]

    def labelled(Xs, *args, **kwargs):
        rows = kwargs.get("rows")
        sampler.enter(f"pair {count[0]} ({Xs.shape[0] if rows is None else len(rows)} rows)")
        count[0] += 1
        try:
            return solve(Xs, *args, **kwargs)
        finally:
            sampler.enter("driver")

    formulations._smo_solve = labelled
    sampler.enter("driver")
    model = _api.train(y, X, list(options) + ["-q"])
    sampler.enter("save")
    save_model(model_path, model)


def predict(argv, sampler):
    from kernsolve.cli import predict as cli
    from kernsolve._model import load_model
    from kernsolve._predict import predict as run
    from kernsolve.cli._common import read_data
    *options, test_path, model_path, out_path = argv
    threads = options[options.index("--threads") + 1] if "--threads" in options else None
    sampler.enter("load model")
    model = load_model(model_path)
    sampler.enter("read test")
    y, X = read_data(test_path)
    sampler.enter("predict")
    labels, _, _ = run(y, X, model, ["-q"] + (["--threads", threads] if threads else []))
    sampler.enter("write")
    text = cli.format_predictions(labels)
    with open(out_path, "w") as f:
        f.write(text)


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("train", "predict"):
        print(__doc__)
        return
    sampler = Sampler()
    sampler.thread.start()
    sampler.enter("import")
    import numpy  # noqa: F401
    import kernsolve.cli.train  # noqa: F401
    command, argv = sys.argv[1], sys.argv[2:]
    {"train": train, "predict": predict}[command](argv, sampler)
    sampler.report()


if __name__ == "__main__":
    main()
