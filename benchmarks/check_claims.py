"""Check the headline accuracy claims on their full data, coarsely.

Each claim is a row of benchmarks/CURRENT.md (its id) whose test error
README.md or doc/ cite: this script trains with the row's options on the
row's full data, predicts the real test file and compares the test error
with the recorded one, within ``--tolerance`` points (0.3 by default: the
errors are the same bits on any machine with the same numpy and BLAS, so a
difference beyond that is a change of the method, not noise).  It prints one
line per claim and exits 1 if any claim fails; the wall times it prints are
not measurements (use the row's own command on a quiet machine for those).

    python benchmarks/check_claims.py                   # every claim (about 15 minutes)
    python benchmarks/check_claims.py --only adult-dsg,tta-a9a-dsg
    python benchmarks/check_claims.py --list

``--rows N`` trains on the first N rows only, to try the script quickly; the
errors are then not compared (the claims are for the full data).
"""
import argparse
import os
import sys
import time
from dataclasses import dataclass

import kernsolve

from benchlib import DATA, median

FASHION = ("fashion-mnist.scale", "fashion-mnist.scale.t", 784)


@dataclass(frozen=True)
class Claim:
    row: str            # the id of its row in benchmarks/CURRENT.md
    data: tuple         # (training file, test file, n_features or None) in DATA
    options: str        # kernsolve.train's options, as the row's command trains
    error: float        # the test error % the row records
    dense: bool = False
    seeds: tuple = ()   # the median over these seeds (options' {seed})


ADULT = "--loss hinge -g median --batch-size 64 --feature-block 32 --epochs 1 --seed {seed}"
CLAIMS = [
    Claim("tta-fashion-udsg", FASHION,
          "--solver udsg -c 10 -g 0.02 --epochs 6 --precision single -m 3000", 13.48,
          dense=True),
    Claim("tta-fashion-cdsg", FASHION,
          "--solver cdsg -c 10 -g 0.02 --epochs 3.5 --precision single -m 3000", 14.49,
          dense=True),
    Claim("tta-fashion-dsg", FASHION, "--solver dsg -c 10 -g 0.02 --epochs 1", 15.93,
          dense=True),
    Claim("eigenpro-centres", FASHION,
          "--solver eigenpro --centers 15000 --subsample 3000 --lambda 1e-7 --epochs 30 "
          "-g 0.02 -m 1800 --precision half --seed 0", 9.99, dense=True),
    Claim("eigenpro-centres-smo", FASHION, "-c 10 -g 0.02 -m 1000", 9.49),
    Claim("adult-dsg", ("a9a", "a9a.t", None), "--solver dsg " + ADULT, 15.60,
          seeds=(0, 1, 2, 3, 4)),
    Claim("adult-udsg", ("a9a", "a9a.t", None), "--solver udsg " + ADULT, 15.48,
          seeds=(0, 1, 2, 3, 4)),
    Claim("adult-cdsg", ("a9a", "a9a.t", None), "--solver cdsg " + ADULT, 15.53,
          seeds=(0, 1, 2, 3, 4)),
    Claim("tta-a9a-dsg", ("a9a", "a9a.t", None), "--solver dsg -c 100 -g 0.005 --epochs 1",
          15.25),
    Claim("tta-ijcnn1-dsg", ("ijcnn1", "ijcnn1.t", None),
          "--solver dsg -c 32 -g 2 --epochs 1", 8.32),
]


def _read(name, n_features, rows=None):
    y, X = kernsolve.read_problem(os.path.join(DATA, name + ".xz"), n_features=n_features)
    return (y, X) if rows is None else (y[:rows], X[:rows])


def test_error(claim, threads, rows=None):
    """The claim's test error % (the median over its seeds) and the train wall s."""
    train, test, d = claim.data
    y, X = _read(train, d, rows)
    yt, Xt = _read(test, d or X.shape[1])
    if claim.dense:
        X, Xt = X.toarray(), Xt.toarray()
    if claim.row.startswith("adult"):        # the paper's lambda, 1 / (100 n)
        options = claim.options + f" --lambda {1.0 / (100 * X.shape[0]):.17g}"
    else:
        options = claim.options
    errors, wall = [], 0.0
    for seed in claim.seeds or (None,):
        t = time.perf_counter()
        model = kernsolve.train(y, X, f"-q --threads {threads} " + options.format(seed=seed))
        wall += time.perf_counter() - t
        _, (acc, _, _), _ = kernsolve.predict(yt, Xt, model, f"-q --threads {threads}")
        errors.append(100.0 - acc)
    return median(errors), wall


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", type=lambda s: s.split(","), help="claims (row ids) to check")
    ap.add_argument("--tolerance", type=float, default=0.3, help="points of test error")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rows", type=int, help="train on the first N rows (no comparison)")
    ap.add_argument("--list", action="store_true", help="print the claims and exit")
    args = ap.parse_args(argv)
    known = {c.row: c for c in CLAIMS}
    unknown = sorted(set(args.only or ()) - set(known))
    if unknown:
        ap.error(f"--only: no claim {', '.join(unknown)} (--list shows them)")
    claims = [known[r] for r in args.only] if args.only else CLAIMS
    if args.list:
        for c in claims:
            print(f"{c.row}: {c.error:.2f}% test error, {c.data[0]}, '{c.options}'"
                  + (f", median of seeds {list(c.seeds)}" if c.seeds else ""))
        return 0
    failed = 0
    for c in claims:
        err, wall = test_error(c, args.threads, args.rows)
        if args.rows is not None:
            verdict = f"(first {args.rows} rows: not compared)"
        elif abs(err - c.error) <= args.tolerance:
            verdict = "ok"
        else:
            verdict = "FAILED"
            failed += 1
        print(f"{c.row}: test error {err:.2f}% (recorded {c.error:.2f}%, tolerance "
              f"{args.tolerance:g}) {verdict}; train {wall:.1f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
