"""Whole-process prediction time: kernsolve-predict against LIBSVM's and ThunderSVM's.

Wall time of each command as a user runs it (start-up, model load, data read,
prediction, output), medians of ``--repeat`` runs interleaved (every tool once
per round, in a rotating order) so a change of the machine's load spreads over
all of them.  Every command runs under ``nice -n 19``.  Tools are given as
``name=command prefix``; the test file, model file and output file are
appended (ThunderSVM and svm-predict take the same arguments).  The load
(``/proc/loadavg``) is printed before and after each round.

Usage::

    python benchmarks/bench_predict_peers.py --set a9a=/tmp/thr/a9a.t,/tmp/predict6/a9a.model \
        --tool "ks-1=python -m kernsolve.cli.predict --threads 1" \
        --tool "libsvm-1=/tmp/peers/libsvm/svm-predict" --repeat 3 --json out.json

``--check`` compares every tool's output file with the first tool's (they
must be byte-identical: the predicted labels).  ``--once NAME`` runs a slow
tool in the first round only.  Besides the wall time, the CPU time
(user + system, from ``wait4``) of each run is recorded: on a machine busy
with other people's work a ``nice -n 19`` process waits for the CPU, and its
wall time says more about the load than about the tool (the CPU time of a
one-thread run is about its wall time on an idle machine).
"""
import argparse
import filecmp
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

from benchlib import load_averages, median


def run_once(command, env):
    """(wall seconds, CPU seconds) of one run."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(["nice", "-n", "19"] + command, env=env,
                                stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise SystemExit(f"failed ({proc.returncode}): {shlex.join(command)}\n"
                             + err.read().decode(errors="replace")[-2000:])
    return seconds, usage.ru_utime + usage.ru_stime


def parse_tool(text):
    name, _, command = text.partition("=")
    words = shlex.split(command)
    env = dict(os.environ)
    while words and "=" in words[0] and not words[0].startswith("/"):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    return name, words, env


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", action="append", required=True,
                    help="name=test_file,model_file")
    ap.add_argument("--tool", action="append", required=True,
                    help="name=[VAR=value ...] command prefix")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--once", action="append", default=[],
                    help="a tool run in the first round only")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    tools = [parse_tool(t) for t in args.tool]
    results = {}
    out_dir = tempfile.mkdtemp(prefix="bench_predict_")
    for spec in args.set:
        set_name, _, files = spec.partition("=")
        test, model = files.split(",")
        times = {name: [] for name, _, _ in tools}
        cpu = {name: [] for name, _, _ in tools}
        for r in range(args.repeat):
            order = tools[r % len(tools):] + tools[:r % len(tools)]
            print(f"[{set_name}] round {r + 1}: load {load_averages()}", flush=True)
            for name, command, env in order:
                if r > 0 and name in args.once:
                    continue
                out = os.path.join(out_dir, f"{set_name}.{name}.out")
                seconds, cpu_seconds = run_once(command + [test, model, out], env)
                times[name].append(seconds)
                cpu[name].append(cpu_seconds)
                print(f"  {name:14s} {seconds:8.2f} s wall {cpu_seconds:8.2f} s CPU",
                      flush=True)
        print(f"[{set_name}] done: load {load_averages()}", flush=True)
        if args.check:
            first = os.path.join(out_dir, f"{set_name}.{tools[0][0]}.out")
            for name, _, _ in tools[1:]:
                other = os.path.join(out_dir, f"{set_name}.{name}.out")
                same = filecmp.cmp(first, other, shallow=False)
                print(f"  output of {name} {'==' if same else '!='} {tools[0][0]}")
        results[set_name] = {name: {"median": median(v), "runs": v,
                                    "cpu_median": median(cpu[name]),
                                    "cpu_runs": cpu[name]}
                             for name, v in times.items()}
        for name, v in times.items():
            print(f"  median {name:14s} {median(v):8.2f} s wall "
                  f"{median(cpu[name]):8.2f} s CPU ({len(v)} runs)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": results, "tools": {n: shlex.join(c) for n, c, _ in tools}},
                      f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
