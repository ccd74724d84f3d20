"""``kernsolve-grid``: LIBSVM's grid.py on kernsolve, without gnuplot or svm-train.

The (C, gamma) cells and their folds run as one parallel job list
(:func:`kernsolve.grid_search`); the output file and the last line are
grid.py's, the heat map is drawn with matplotlib.
"""
import os
import shutil
import sys

import numpy as np

from ._common import (CommandError, HelpRequested, UsageError, VersionRequested,
                      check_input_path, check_output_path, end_process, parse_float,
                      parse_int, run)
from .train import check_rows_for_folds, check_solver_options
from .._io import read_problem
from .._params import FLAGS, parse_options
from ..model_selection.grid import GridSearchError, grid_search
from ..model_selection.halving import halving_grid_search

PROG = "kernsolve-grid"

USAGE = """\
Usage: kernsolve-grid [grid_options] [svm_options] dataset
grid_options :
-log2c {begin,end,step | "null"} : set the range of c (default -5,15,2)
    begin,end,step -- c_range = 2^{begin,...,begin+k*step,...,end}
    "null"         -- do not grid with c
-log2g {begin,end,step | "null"} : set the range of g (default 3,-15,-2)
    begin,end,step -- g_range = 2^{begin,...,begin+k*step,...,end}
    "null"         -- do not grid with g
-v n : n-fold cross validation (default 5)
-out {pathname | "null"} : set output file path and name (default dataset.out)
-png {pathname | "null"} : set heat map (PNG) path and name (default dataset.png;
    needs matplotlib: pip install 'kernsolve[plot]')
-resume [pathname] : resume the grid task using an existing output file
    (default pathname is dataset.out)
-svmtrain pathname, -gnuplot pathname : accepted for grid.py's callers (easy.py)
    and not used: kernsolve-grid trains and draws the heat map itself
--grid name=v1,v2,... : also search solver option `name` over these values
--halving : successive halving: every cell on a subsample of the rows, the best
    1/factor of them on factor x more rows, ... the last round on all rows
--halving-factor n : with --halving, keep 1/n of the cells per round (default 3)
--halving-min-rows n : with --halving, rows of the first round at least
    (default 10 x folds x max(classes, 2))
--backend name : joblib backend (threading, loky, dask; default threads)
--scheduler address : run on a Dask cluster (tcp://host:8786); implies --backend dask
--threads n : cores for the whole search (default: all)
-q : no progress lines
--help, -h (as the last argument) : print this usage; --version : print the version
svm_options : any option of kernsolve-train (-s, -t, -b, -wi, --solver, --seed,
    --libsvm-folds ...), except -c/-g when they are searched; --libsvm-folds gives
    every cell svm-train's folds, so the rates are grid.py's; --cold makes every fit
    compute its own kernel values (by default the cells of one gamma share one kernel
    matrix when it fits in -m: the same rates and best cell, cells run gamma by gamma);
    --warm starts each fold's fit at the next C from the previous C's solution
    (C-SVC, epsilon-SVR, nu-SVR; slow C-SVC solves refined by an active-set method
    first; after a quick solve the next starts cold: rates within the solver's
    tolerance, not to the bit)
The last line is grid.py's: the best C and gamma, then the rate (as svm-train prints it).
"""

_DEFAULT_C = (-5.0, 15.0, 2.0)
_DEFAULT_G = (3.0, -15.0, -2.0)


# Values of one begin,end,step range at most (grid.py's are a few dozen).
MAX_RANGE_VALUES = 1000


def range_f(begin, end, step, name="a range"):
    """grid.py's float range: begin, begin+step, ... while not past end.

    At most MAX_RANGE_VALUES values: a longer range (a tiny step, or one that
    no longer moves begin) is refused naming ``name``, before it is built.
    """
    if step == 0:
        raise UsageError(f"{name}: the step of a range must not be 0")
    span = (end - begin) / step
    if span > MAX_RANGE_VALUES:
        raise UsageError(f"{name}: the range {begin:g},{end:g},{step:g} has about {span:.3g} "
                         f"values, more than {MAX_RANGE_VALUES}; use a larger step")
    out = []
    while True:
        if step > 0 and begin > end:
            break
        if step < 0 and begin < end:
            break
        if len(out) == MAX_RANGE_VALUES:
            raise UsageError(f"{name}: the range {out[0]:g},{end:g},{step:g} has more than "
                             f"{MAX_RANGE_VALUES} values (adding the step {step:g} does not "
                             f"move {begin:g} far enough); use a larger step")
        out.append(begin)
        begin = begin + step
    return out


def _parse_range(name, text):
    if text == "null":
        return None
    parts = text.split(",")
    if len(parts) != 3:
        raise UsageError(f"{name}: expected begin,end,step or null, got {text!r}")
    begin, end, step = (parse_float(name, p) for p in parts)
    seq = range_f(begin, end, step, name)
    if not seq:
        raise UsageError(f"{name}: the range {text} is empty")
    return seq


def _parse_values(text):
    out = []
    for v in text.split(","):
        v = v.strip()
        if not v:
            continue
        try:
            out.append(int(v))
        except ValueError:
            try:
                out.append(float(v))
            except ValueError:
                out.append(v)
    return out


def parse_command_line(argv):
    """(settings dict, svm option tokens, dataset path)."""
    settings = {"log2c": list(range_f(*_DEFAULT_C)), "log2g": list(range_f(*_DEFAULT_G)),
                "fold": 5, "out": None, "out_null": False, "png": None,
                "png_null": False, "resume": None, "grid": {}, "backend": None,
                "scheduler": None, "quiet": False, "halving": False,
                "halving_factor": None, "halving_min_rows": None}
    svm = []
    if "--help" in argv or argv[-1:] == ["-h"]:
        raise HelpRequested()
    if "--version" in argv:
        raise VersionRequested()
    if not argv:
        raise UsageError("no dataset given")
    dataset = argv[-1]
    args = argv[:-1]
    if dataset.startswith("-") and dataset != "-":
        raise UsageError("the last argument must be the dataset file")
    i = 0

    def value():
        if i + 1 >= len(args):
            raise UsageError(f"option {args[i]} needs a value")
        return args[i + 1]

    while i < len(args):
        tok = args[i]
        if tok == "-log2c":
            settings["log2c"] = _parse_range(tok, value())
            i += 2
        elif tok == "-log2g":
            settings["log2g"] = _parse_range(tok, value())
            i += 2
        elif tok == "-v":
            settings["fold"] = parse_int(tok, value())
            if settings["fold"] < 2:
                raise UsageError("-v: n-fold cross validation needs n >= 2")
            i += 2
        elif tok == "-out":
            v = value()
            settings["out_null"] = v == "null"
            settings["out"] = None if v == "null" else v
            i += 2
        elif tok == "-png":
            v = value()
            settings["png_null"] = v == "null"
            settings["png"] = None if v == "null" else v
            i += 2
        elif tok == "-resume":
            if i + 1 < len(args) and not args[i + 1].startswith("-"):
                settings["resume"] = args[i + 1]
                i += 2
            else:
                settings["resume"] = ""
                i += 1
        elif tok in ("-svmtrain", "-gnuplot"):
            # grid.py's; LIBSVM's easy.py passes both: accepted, not used
            # (kernsolve-grid trains and plots itself)
            value()
            i += 2
        elif tok == "--grid" or tok.startswith("--grid="):
            spec = tok.split("=", 1)[1] if tok.startswith("--grid=") else value()
            i += 1 if tok.startswith("--grid=") else 2
            name, eq, vals = spec.partition("=")
            if not eq or not name or not vals:
                raise UsageError(f"--grid: expected name=v1,v2,..., got {spec!r}")
            settings["grid"][name] = _parse_values(vals)
        elif tok in ("--backend", "--scheduler") or tok.startswith(("--backend=",
                                                                     "--scheduler=")):
            name, eq, v = tok.partition("=")
            if not eq:
                v = value()
                i += 2
            else:
                i += 1
            settings[name[2:]] = v
        elif tok == "--halving":
            settings["halving"] = True
            i += 1
        elif tok in ("--halving-factor", "--halving-min-rows"):
            settings[tok[2:].replace("-", "_")] = parse_int(tok, value())
            i += 2
        elif tok == "-q":
            settings["quiet"] = True
            svm.append(tok)
            i += 1
        elif tok in ("--stream", "--chunk-mb") or tok.startswith("--chunk-mb="):
            raise UsageError(f"{tok.partition('=')[0]}: training from file windows cannot be "
                             "combined with cross-validation (it needs the data in memory)")
        elif tok in FLAGS:           # kernsolve-train's options without a value
            svm.append(tok)
            i += 1
        elif tok.startswith("-"):
            if tok.startswith("--") and "=" in tok:
                svm.append(tok)
                i += 1
            else:
                svm += [tok, value()]
                i += 2
        else:
            raise UsageError(f"unexpected argument {tok!r} before the dataset")
    if settings["log2c"] is None and settings["log2g"] is None and not settings["grid"]:
        raise UsageError("-log2c and -log2g can't both be null")
    for name in ("halving_factor", "halving_min_rows"):
        if settings[name] is not None and not settings["halving"]:
            raise UsageError(f"--{name.replace('_', '-')}: only with --halving")
    if settings["halving_factor"] is not None and settings["halving_factor"] < 2:
        raise UsageError("--halving-factor: must be an integer >= 2")
    if settings["halving_min_rows"] is not None and \
            settings["halving_min_rows"] < 2 * settings["fold"]:
        raise UsageError(f"--halving-min-rows: must be at least 2 x the folds "
                         f"(-v {settings['fold']}): {2 * settings['fold']}")
    if settings["halving"] and settings["resume"] is not None:
        raise UsageError("-resume: not with --halving (its rounds run on subsamples; "
                         "the output file is written anew)")
    return settings, svm, dataset


def main(argv):
    settings, svm, dataset = parse_command_line(argv)
    try:        # the command line first, then the files (as kernsolve-train)
        params = parse_options(list(svm))
        check_solver_options(params)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    check_input_path(dataset)
    title = os.path.split(dataset)[1]
    out = settings["out"]
    if out is None and not settings["out_null"]:
        out = title + ".out"
    png = settings["png"]
    if png is None and not settings["png_null"]:
        png = title + ".png"
    for path in (out, png):     # before any work, as kernsolve-train does
        if path is not None:
            check_output_path(path)
    resume = settings["resume"] is not None
    if resume:
        path = settings["resume"] or out or title + ".out"
        if not os.path.exists(path):
            raise CommandError(f"-resume: can't open {path}: No such file or directory")
        if out is None:
            out = path
        elif os.path.abspath(path) != os.path.abspath(out):
            # grid.py reads the resume file and appends to the output file
            shutil.copyfile(path, out)

    grid = {}
    if settings["log2c"] is not None:
        grid["c"] = [2.0 ** v for v in settings["log2c"]]
    if settings["log2g"] is not None:
        grid["g"] = [2.0 ** v for v in settings["log2g"]]
    grid.update(settings["grid"])

    if png is not None:
        try:        # optional (the plot extra): without it, no heat map
            import matplotlib  # noqa: F401
        except ImportError:
            sys.stderr.write(f"{PROG}: no heat map: matplotlib is not installed "
                             "(pip install 'kernsolve[plot]'); use -png null to silence "
                             "this\n")
            png = None

    backend = settings["backend"]
    client = None
    if settings["scheduler"]:
        try:        # optional (the dask extra), needed for --scheduler only
            from dask.distributed import Client
        except ImportError:
            raise CommandError("--scheduler needs dask.distributed: pip install "
                               "'kernsolve[dask]'") from None
        client = Client(settings["scheduler"])
        backend = "dask"

    # kernsolve's own CSR rows, as kernsolve-train's: no scipy import (doc/cli.md, "Start-up time")
    y, X = read_problem(dataset, for_training=True, _scipy=False)
    y = np.asarray(y, dtype=np.float64)
    check_rows_for_folds(dataset, len(y))
    try:
        common = dict(grid=grid, n_folds=min(settings["fold"], len(y)), n_jobs=params.n_jobs,
                      out=out, backend=backend, verbose=not settings["quiet"], png=png)
        if settings["halving"]:
            result = halving_grid_search(y, X, params, factor=settings["halving_factor"] or 3,
                                         min_rows=settings["halving_min_rows"], **common)
        else:
            result = grid_search(y, X, params, resume=resume, **common)
    except GridSearchError as exc:
        raise CommandError(str(exc)) from None
    finally:
        if client is not None:
            client.close()
    if not settings["quiet"]:
        sys.stdout.write(result.table())
    sys.stdout.write(result.summary_line())       # grid.py's last line
    return 0


def cli(argv=None):
    """The command in this process: returns its exit status."""
    return run(main, argv, PROG, USAGE)


def console():
    """Console-script entry point: the command, then the process's end."""
    end_process(cli())


if __name__ == "__main__":
    console()
