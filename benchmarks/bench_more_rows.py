"""Does more data beat the exact solver?  EigenPro on centres trained on
Fashion-MNIST augmented by ``make_big_file.py`` (issue 33), tested on the
real test file.

Each run is ``kernsolve-train`` in a fresh process (what a user runs) with
the README's EigenPro command, ``--solver eigenpro --centers 15000
--subsample 3000 --lambda 1e-7 --epochs 30 --precision half -g 0.02 -m
4000``, plus ``--options``; then ``kernsolve-predict`` on the real test file.
Printed: the test error, the whole training process's wall time and peak RSS
(``os.wait4``), the load, and the solver's summary line.

``--centres-from N``: the centres drawn from the first N rows only (copy 0 of
``make_big_file.py``'s output is the original data), in this process instead
of a child (the draw is patched in), to tell the centres' distribution from
the data's.

Usage::

    python benchmarks/make_big_file.py ../shared/data/fashion-mnist.scale.xz /tmp/big/aug120k --rows 120000
    python benchmarks/bench_more_rows.py /tmp/big/aug120k [--options "--seed 1"] [--centres-from 60000]
"""
import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import DATA, load_average, tree_env   # noqa: E402

COMMAND = ("--solver eigenpro --centers 15000 --subsample 3000 --lambda 1e-7 --epochs 30 "
           "--precision half -g 0.02 -m 4000")


def test_file(workdir):
    """The real Fashion-MNIST test file, decompressed once."""
    import lzma
    path = os.path.join(workdir, "fashion-mnist.scale.t")
    if not os.path.exists(path):
        with lzma.open(os.path.join(DATA, "fashion-mnist.scale.t.xz"), "rb") as f, \
                open(path, "wb") as g:
            g.write(f.read())
    return path


def error_of(test, predictions):
    truth = np.array([float(line.split(None, 1)[0]) for line in open(test, "rb")])
    return 100.0 * float(np.mean(np.loadtxt(predictions) != truth))


def in_children(train, test, options, workdir):
    model = os.path.join(workdir, "more_rows.model")
    argv = [sys.executable, "-m", "kernsolve.cli.train", *shlex.split(COMMAND),
            *shlex.split(options), train, model]
    t = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, env=tree_env())
    out = child.stdout.read().decode()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"kernsolve-train failed: {' '.join(argv)}")
    preds = os.path.join(workdir, "more_rows.pred")
    subprocess.run([sys.executable, "-m", "kernsolve.cli.predict", "-q", test, model, preds],
                   check=True, env=tree_env())
    summary = out.strip().splitlines()[-1] if out.strip() else ""
    return error_of(test, preds), wall, usage.ru_maxrss / 2 ** 20, summary


def in_process(train, test, options, first_rows):
    import kernsolve
    from kernsolve._random import permutation
    from kernsolve.solvers.eigenpro import nystrom

    def originals(n, p, seed):
        return np.sort(permutation(first_rows, seed, "sampling")[:p]).astype(np.intp)

    nystrom.centre_indices = originals
    y, X = kernsolve.read_problem(train)
    yt, Xt = kernsolve.read_problem(test, n_features=X.shape[1])
    t = time.perf_counter()
    model = kernsolve.train(y, X, f"{COMMAND} -q {options}")
    wall = time.perf_counter() - t
    _, (acc, _, _), _ = kernsolve.predict(yt, Xt, model, "-q")
    return 100.0 - acc, wall, float("nan"), \
        f"relative residual {model.stats['relative_residual']:.3g} (train wall, in process)"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("train", help="a LIBSVM training file (make_big_file.py's output)")
    ap.add_argument("--options", default="", help="appended to the command (last wins)")
    ap.add_argument("--centres-from", type=int, default=None, metavar="N",
                    help="draw the centres from the first N rows only (in this process)")
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(),
                                                      "kernsolve-more-rows"))
    args = ap.parse_args(argv)
    os.makedirs(args.workdir, exist_ok=True)
    test = test_file(args.workdir)
    rows = sum(1 for _ in open(args.train, "rb"))
    if args.centres_from:
        err, wall, rss, summary = in_process(args.train, test, args.options, args.centres_from)
    else:
        err, wall, rss, summary = in_children(args.train, test, args.options, args.workdir)
    print(f"{os.path.basename(args.train)}: {rows} rows, options [{args.options}]"
          + (f", centres from the first {args.centres_from}" if args.centres_from else "")
          + f": test error {err:.2f}%, wall {wall:.0f} s, peak RSS {rss:.1f} GB, "
          f"load {load_average():.1f}; {summary}")


if __name__ == "__main__":
    main()
