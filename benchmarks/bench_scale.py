"""Time to accuracy (issue 17 item 1): test error against wall time for every
kernsolve solver and for what users would pick instead.

Each run is its own child process (so each has its own peak RSS, GNU time's
``%M`` of that child alone, see ``benchlib.run_process``), one after the
other.  A run reads the training and test files with its tool's own reader,
trains, predicts the test file and writes its predictions; the test error
in the tables is recomputed by this script from that prediction file
against the test file's labels (the same rule for every method).

Methods (``--methods``, comma-separated; budgets are the points of a curve,
each its own run; ``--budgets METHOD=B1,B2`` changes them):

====================  ==============================================  ===================
 method               what runs (the data set's ``-c C -g G``)         budget
====================  ==============================================  ===================
 smo                  ``kernsolve.train(y, X, "-c C -g G -m 1000")``   (exact: one point)
 sbp                  ``... "--solver sbp -c C -g G -m 1000"``         ``--epochs``
 dsg, udsg, cdsg      ``... "--solver dsg -c C -g G"``                 ``--epochs``
 eigenpro             ``... "--solver eigenpro -g G"``                 ``--centers``
 svc                  scikit-learn ``SVC(C=C, gamma=G,                 (exact)
                      cache_size=1000)`` (serial)
 libsvm               libsvm-official ``svm_train(y, X,                (exact)
                      "-c C -g G -m 1000")`` (its OpenMP build)
 rbf-sgd              ``RBFSampler(gamma=G)`` + ``SGDClassifier()``    ``n_components``
 nystroem-sgd         ``Nystroem(gamma=G)`` + ``SGDClassifier()``      ``n_components``
 nystroem-linearsvc   ``Nystroem(gamma=G)`` + ``LinearSVC()``          ``n_components``
                      (liblinear: serial)
 thundersvm           ``thundersvm-train -c C -g G -o THREADS``,       (exact)
                      ``thundersvm-predict -o THREADS`` (its CPU
                      build, in ``KERNSOLVE_BENCH_THUNDERSVM``)
====================  ==============================================  ===================

``thundersvm`` is not in the default ``--methods`` (it is built apart, see
benchmarks/README.md).  Its commands read their own files, so its
``train_s`` is the whole ``thundersvm-train`` process, reading included
(seconds against its training's minutes), and it has no ``read_s``.

Chunks (issue 33 item 2).  ``rbf-sgd`` and ``nystroem-sgd`` at a million
rows: the transformed matrix (1.2M x 4000 float64 is 38 GB) does not fit, so
they run as a user with scikit-learn would run them then: the training file
read in chunks of ``--chunk-rows`` rows (byte ranges found in one pass over
the file, each parsed by ``load_svmlight_file`` when a pass needs it, so
neither the input nor its transform is ever whole), the feature map fitted
on the first chunks in file order (``Nystroem`` draws its components there,
seeded; at least ``n_components`` rows), then
``SGDClassifier(random_state=0).partial_fit`` on each transformed chunk with
every class given up front, ``--sgd-epochs`` passes (default 3), the chunks
in a new order each pass (``numpy.random.default_rng(0).permutation``).  By
default (``--chunk-rows`` unset) a run goes into chunks of 20,000 rows only
when rows x components x 8 bytes exceeds ``--peer-memory-mb`` (6000); below
that it is the in-memory ``fit`` of before (SGD's own stopping rule);
``--chunk-rows 0`` never chunks.  Fair to the peer: SGD's defaults otherwise,
the same kernel and gamma, and the parsing of the chunks is counted in
``read_s`` (``parse_s`` in the row), not in ``train_s``, as reading is for
every method; the row records ``chunk_rows`` and ``epochs``.

``--options udsg="--stream"`` (or ``--chunk-mb MB``) trains DSG/UDSG/CDSG as
``kernsolve-train --stream`` does, from the file read in windows each pass
(``train_file``): reading the training file is then inside ``train_s``.

Growth (``--train-rows N``): the first N rows of the training file, the test
file whole; the data name gets ``[train:N]`` and the row ``train_rows``.
Every row records ``n_train``; ``examples/more_rows.py`` fits an exact
solver's measured times to ``a n^b`` and extrapolates them, marked, to the
sizes where it was not run.

The kernel is the same for every method (the Gaussian kernel with the data
set's gamma).  kernsolve's solvers get the data set's C (DSG's lambda is
then its default 1/(C n)); EigenPro on centres has no C (its ridge is its
own ``--lambda`` default); every other option is the solver's default, so a
change of kernsolve's defaults shows up here without editing this script
(``--options METHOD="..."`` appends options to a kernsolve method, the last
word winning, e.g. ``--options dsg="-g median"``).  scikit-learn's linear
models run with their defaults (what a user gets from ``SGDClassifier()``
and ``LinearSVC()``; ``random_state=0``), on the same gamma.

Data sets (``--datasets``; ``--train-file PATH`` replaces one data set's
training file, e.g. Fashion-MNIST augmented by ``make_big_file.py``, and keeps
its real test file):

=======  ======================================================  ==================
 name    files (from ``KERNSOLVE_SHARED_DATA``, default            options
         ``../shared/data``)
=======  ======================================================  ==================
fashion  fashion-mnist.scale -> .t (60000 / 10000 x 784, 10 cl.)   -c 10 -g 0.02
a9a      a9a -> a9a.t (Adult, 32561 / 16281 x 123)                 -c 100 -g 0.005
ijcnn1   ijcnn1 -> ijcnn1.t (49990 / 91701 x 22)                   -c 32 -g 2
=======  ======================================================  ==================

Times (each run's JSON row; the tables and the figure use ``train_s``):

* ``train_s``: from the data in memory, as the tool's reader returned it,
  to a trained model: every conversion, feature map and fit a user pays
  for.  Reading the files is not in it.
* ``read_s``: reading the training and test files (the tool's reader).
* ``predict_s``: predicting the test rows (their feature map included).
* ``process_s``: the whole child (interpreter start, imports, reading,
  training, predicting, writing the predictions).
* ``maxrss_mb``: the child's peak resident memory (data included).

A kernsolve run's row also has the solver's work, summed over the pairs:
``n_iter``, ``n_kernel_evals`` and ``n_cache_misses`` (kernel rows computed),
DSG's ``feature_evals``, where the model's statistics have them: counts that
do not depend on the machine's load.

``--max-time S`` skips a method's remaining budgets once one took more than
S seconds to train (they are recorded as skipped); ``--timeout S`` kills a
run (recorded as a timeout, the method's larger budgets skipped).  A run that
fails is recorded with its last line of output; the next run goes on.

``--quick`` runs every data set on its first ``--rows`` (2000) training and
test rows with small budgets, in seconds per method.

``--dense`` gives every tool the rows as a dense numpy array (the files read
as usual, then ``toarray()``, counted in ``read_s``): what a user holding
numpy arrays has, and for scikit-learn's feature maps a BLAS product instead
of a sparse one (benchmarks/history/RESULTS.md, session 11).  The rows' data name gets
``+dense``; libsvm-official takes its own sparse rows only, so it is refused.

Usage::

    nice -n 19 python benchmarks/bench_scale.py --quick --json q.json --markdown q.md
    python benchmarks/bench_scale.py --datasets a9a,ijcnn1 --json scale.json --markdown scale.md
    python benchmarks/bench_scale.py --datasets fashion --methods dsg,eigenpro \\
        --budgets dsg=1 --budgets eigenpro=2000
    python examples/time_to_accuracy.py scale.json      # the figure
    python benchmarks/bench_scale.py --datasets fashion --train-file BIG --dense \
        --methods smo,thundersvm --train-rows 15000 --json more.json   # growth
    python examples/more_rows.py more.json              # the figure per size

``--json OUT`` appends one JSON object a line per run; the markdown tables
(``--markdown OUT``, and printed) are made from every row in that file, so
several invocations (one data set each) make one table.
"""
import argparse
import json
import numbers
import os
import sys
import tempfile
import time

from benchlib import (accuracy_from_files, child_env, load_average, prefix_file, prepare,
                      run_process)

CACHE_MB = 1000.0

DATASETS = {
    "fashion": dict(name="fashion", train="fashion-mnist.scale", test="fashion-mnist.scale.t",
                    n_features=784, C=10.0, gamma=0.02),
    "a9a": dict(name="a9a", train="a9a", test="a9a.t", n_features=123, C=100.0, gamma=0.005),
    "ijcnn1": dict(name="ijcnn1", train="ijcnn1", test="ijcnn1.t", n_features=22, C=32.0,
                   gamma=2.0),
}

# name: (tool, budget name or None for an exact solver, full-size budgets,
# --quick budgets, serial?)
METHODS = {
    "smo": ("kernsolve", None, [None], [None], False),
    "sbp": ("kernsolve", "epochs", [0.1, 0.25, 0.5, 1.0], [0.25, 0.5, 1.0], False),
    "dsg": ("kernsolve", "epochs", [0.25, 0.5, 1.0, 2.0], [0.5, 1.0, 2.0], False),
    "udsg": ("kernsolve", "epochs", [0.25, 0.5, 1.0, 2.0], [0.5, 1.0, 2.0], False),
    "cdsg": ("kernsolve", "epochs", [0.25, 0.5, 1.0, 2.0], [0.5, 1.0, 2.0], False),
    "eigenpro": ("kernsolve", "centers", [500, 1000, 2000, 5000], [100, 300, 1000], False),
    "svc": ("scikit-learn", None, [None], [None], True),
    "libsvm": ("libsvm-official", None, [None], [None], False),
    "rbf-sgd": ("scikit-learn", "n_components", [500, 1000, 2000, 4000], [100, 300, 1000],
                False),
    "nystroem-sgd": ("scikit-learn", "n_components", [500, 1000, 2000, 4000],
                     [100, 300, 1000], False),
    "nystroem-linearsvc": ("scikit-learn", "n_components", [500, 1000, 2000, 4000],
                           [100, 300, 1000], True),
    "thundersvm": ("thundersvm", None, [None], [None], False),
}
# the peers that can run in chunks (SGDClassifier.partial_fit)
CHUNKED = ("rbf-sgd", "nystroem-sgd")
# rows per chunk when the transformed matrix does not fit (--chunk-rows auto)
AUTO_CHUNK_ROWS = 20000
# bytes of the transformed matrix the peers may hold whole (--peer-memory-mb)
PEER_MEMORY_MB = 6000.0
# the folder of thundersvm-train and thundersvm-predict (benchmarks/README.md)
THUNDERSVM_ENV = "KERNSOLVE_BENCH_THUNDERSVM"
# Full-size budgets that differ by data set.
DATASET_BUDGETS = {"fashion": {"eigenpro": [1000, 2000, 5000, 8000]}}


def kernsolve_options(method, C, gamma, budget, extra=""):
    """The option string a kernsolve method trains with (``-q`` aside)."""
    if method == "smo":
        opts = f"-c {C:g} -g {gamma:g} -m {CACHE_MB:g}"
    elif method == "sbp":
        opts = f"--solver sbp -c {C:g} -g {gamma:g} -m {CACHE_MB:g} --epochs {budget:g}"
    elif method in ("dsg", "udsg", "cdsg"):
        opts = f"--solver {method} -c {C:g} -g {gamma:g} --epochs {budget:g}"
    elif method == "eigenpro":
        opts = f"--solver eigenpro -g {gamma:g} --centers {int(budget)}"
    else:
        raise ValueError(f"{method} is not a kernsolve method")
    return f"{opts} {extra}".strip()


def describe(method, C, gamma, budget, extra=""):
    """What a run trains, in words a user can type."""
    tool = METHODS[method][0]
    if tool == "kernsolve":
        return kernsolve_options(method, C, gamma, budget, extra)
    if method == "svc":
        return f"SVC(C={C:g}, gamma={gamma:g}, cache_size={CACHE_MB:g})"
    if method == "libsvm":
        return f"svm_train(y, X, '-c {C:g} -g {gamma:g} -m {CACHE_MB:g}')"
    if method == "thundersvm":
        return f"thundersvm-train -c {C:g} -g {gamma:g} -o THREADS"
    fmap = "RBFSampler" if method.startswith("rbf") else "Nystroem"
    clf = "LinearSVC()" if method.endswith("linearsvc") else "SGDClassifier()"
    return f"{fmap}(gamma={gamma:g}, n_components={int(budget)}) + {clf}"


# ---------------------------------------------------------------- the child

def _fit_kernsolve(args):
    import kernsolve
    opts = kernsolve_options(args.worker, args.C, args.gamma, args.budget, args.options)
    if "--stream" in opts.split() or "--chunk-mb" in opts.split():
        return _fit_kernsolve_streamed(args, opts)
    t = time.perf_counter()
    y, X = kernsolve.read_problem(args.train, n_features=args.n_features)
    yt, Xt = kernsolve.read_problem(args.test, n_features=args.n_features)
    if args.dense:
        X, Xt = X.toarray(), Xt.toarray()
    read_s = time.perf_counter() - t
    t = time.perf_counter()
    model = kernsolve.train(y, X, opts + " -q", n_jobs=args.threads)
    train_s = time.perf_counter() - t
    return _predict_kernsolve(args, model, yt, Xt, read_s, train_s, X.shape[0])


def _fit_kernsolve_streamed(args, opts):
    """``--stream`` (``--chunk-mb MB``): DSG's ``train_file``, what
    kernsolve-train --stream runs (the file read in windows once a pass, never
    whole), so reading the training file is in train_s."""
    import kernsolve
    from kernsolve.solvers.dsg.stream import train_file
    words, chunk_mb = opts.split(), 64.0
    if "--chunk-mb" in words:
        at = words.index("--chunk-mb")
        chunk_mb = float(words[at + 1])
        del words[at:at + 2]
    words = [w for w in words if w != "--stream"]
    t = time.perf_counter()
    model = train_file(args.train, " ".join(words + ["-q"]),
                       chunk_bytes=max(1, int(chunk_mb * 2**20)),
                       n_features=args.n_features, n_jobs=args.threads)
    train_s = time.perf_counter() - t
    t = time.perf_counter()
    yt, Xt = kernsolve.read_problem(args.test, n_features=args.n_features)
    if args.dense:
        Xt = Xt.toarray()
    read_s = time.perf_counter() - t
    return _predict_kernsolve(args, model, yt, Xt, read_s, train_s, _count_rows(args.train))


def _predict_kernsolve(args, model, yt, Xt, read_s, train_s, n_train):
    import kernsolve
    t = time.perf_counter()
    pred = kernsolve.predict(yt, Xt, model, f"-q --threads {args.threads}")[0]
    predict_s = time.perf_counter() - t
    info = {}
    if getattr(model, "n_support", None) is not None:
        info["n_sv"] = int(sum(model.n_support))
    for key in ("n_random_features", "gamma"):
        v = getattr(model, key, None)
        if isinstance(v, (int, float)):
            info[key] = v
    # the work, summed over the one-vs-one pairs: counts a machine's load
    # does not change, for a run's cost at other sizes (SBP's arithmetic)
    stats = getattr(model, "stats", None) or {}
    for key in ("n_iter", "n_kernel_evals", "n_cache_misses", "feature_evals"):
        if isinstance(stats.get(key), numbers.Integral):
            info[key] = int(stats[key])
    info["n_train"] = int(n_train)
    return yt, pred, read_s, train_s, predict_s, info


def _count_rows(path):
    """The data lines of a LIBSVM file (blank lines and comments aside)."""
    with open(path, "rb") as f:
        return sum(1 for line in f if line.split(b"#", 1)[0].strip())


def _fit_libsvm(args):
    from libsvm.svmutil import svm_predict, svm_read_problem, svm_train
    t = time.perf_counter()
    y, X = svm_read_problem(args.train, return_scipy=True)
    yt, Xt = svm_read_problem(args.test, return_scipy=True)
    read_s = time.perf_counter() - t
    t = time.perf_counter()
    model = svm_train(y, X, f"-c {args.C!r} -g {args.gamma!r} -m {CACHE_MB:g} -q")
    train_s = time.perf_counter() - t
    t = time.perf_counter()
    pred = svm_predict(yt, Xt, model, "-q")[0]
    predict_s = time.perf_counter() - t
    return yt, pred, read_s, train_s, predict_s, {"n_sv": model.get_nr_sv(),
                                                   "n_train": len(y)}


def _fit_thundersvm(args):
    """ThunderSVM's CPU build as a user runs it: its own commands, each a
    process that reads its file (so its train_s includes reading the
    training file; read_s is not measured)."""
    import subprocess
    folder = os.environ.get(THUNDERSVM_ENV)
    model_path = args.predictions + ".model"
    out_path = args.predictions + ".thundersvm"
    train = [os.path.join(folder, "thundersvm-train"), "-c", repr(args.C), "-g",
             repr(args.gamma), "-o", str(args.threads), args.train, model_path]
    predict = [os.path.join(folder, "thundersvm-predict"), "-o", str(args.threads), args.test,
               model_path, out_path]
    times = []
    for argv in (train, predict):
        t = time.perf_counter()
        subprocess.run(argv, check=True, stdout=sys.stderr)   # its log in the run's log
        times.append(time.perf_counter() - t)
    with open(out_path) as f:
        pred = [float(line) for line in f if line.strip()]
    with open(args.test, "rb") as f:
        yt = [float(line.split(None, 1)[0]) for line in f if line.strip()]
    return yt, pred, None, times[0], times[1], {"n_train": _count_rows(args.train)}


def chunk_offsets(path, chunk_rows):
    """(byte offsets of the chunks' first lines and of the end, number of rows,
    the sorted labels): one pass over a LIBSVM file, never held whole."""
    starts, labels, n, pos = [0], set(), 0, 0
    with open(path, "rb") as f:
        for line in f:
            if line.split(b"#", 1)[0].strip():
                if n and n % chunk_rows == 0:
                    starts.append(pos)
                labels.add(float(line.split(None, 1)[0]))
                n += 1
            pos += len(line)
    return starts + [pos], n, sorted(labels)


def _peer_parts(args):
    """The feature map and the classifier of a scikit-learn peer."""
    from sklearn.kernel_approximation import Nystroem, RBFSampler
    from sklearn.linear_model import SGDClassifier
    from sklearn.svm import LinearSVC
    n = int(args.budget)
    fmap = (RBFSampler(gamma=args.gamma, n_components=n, random_state=0)
            if args.worker.startswith("rbf") else
            Nystroem(gamma=args.gamma, n_components=n, random_state=0))
    clf = (LinearSVC(random_state=0) if args.worker.endswith("linearsvc") else
           SGDClassifier(random_state=0, n_jobs=args.threads))
    return fmap, clf


def fit_in_chunks(read_chunk, n_chunks, fmap, clf, classes, epochs, map_rows, seed=0):
    """The chunked peer: ``fmap`` fitted on the first chunks in file order (at
    least ``map_rows`` rows: Nystroem draws its components there, seeded), then
    ``clf.partial_fit`` on each transformed chunk, ``epochs`` passes, the chunks
    in the order ``numpy.random.default_rng(seed).permutation`` draws anew for
    every pass.  ``read_chunk(i)`` gives chunk i's (X, y)."""
    import numpy as np
    import scipy.sparse as sp
    first, rows = [], 0
    while rows < map_rows and len(first) < n_chunks:
        first.append(read_chunk(len(first))[0])
        rows += first[-1].shape[0]
    fmap.fit(sp.vstack(first) if sp.issparse(first[0]) else np.vstack(first))
    del first
    rng = np.random.default_rng(seed)
    for _ in range(epochs):
        for i in rng.permutation(n_chunks):
            X, y = read_chunk(int(i))
            clf.partial_fit(fmap.transform(X), y, classes=classes)
    return fmap, clf


def _fit_sklearn_chunked(args, offsets, n_train, classes):
    """``rbf-sgd``/``nystroem-sgd`` in chunks of ``args.chunk_rows`` rows, each
    read from the file when a pass needs it (parsing counted in read_s)."""
    import io

    import numpy as np
    from sklearn.datasets import load_svmlight_file
    from threadpoolctl import threadpool_limits
    parse = [0.0]
    f = open(args.train, "rb")

    def read_chunk(i):
        t = time.perf_counter()
        f.seek(offsets[i])
        X, y = load_svmlight_file(io.BytesIO(f.read(offsets[i + 1] - offsets[i])),
                                  n_features=args.n_features)
        if args.dense:
            X = X.toarray()
        parse[0] += time.perf_counter() - t
        return X, y

    t = time.perf_counter()
    Xt, yt = load_svmlight_file(args.test, n_features=args.n_features)
    if args.dense:
        Xt = Xt.toarray()
    read_s = time.perf_counter() - t
    with threadpool_limits(args.threads), f:
        fmap, clf = _peer_parts(args)
        t = time.perf_counter()
        fit_in_chunks(read_chunk, len(offsets) - 1, fmap, clf, np.array(classes),
                      args.sgd_epochs, int(args.budget))
        train_s = time.perf_counter() - t - parse[0]
        t = time.perf_counter()
        pred = clf.predict(fmap.transform(Xt))
        predict_s = time.perf_counter() - t
    return yt, pred, read_s + parse[0], train_s, predict_s, {
        "n_train": n_train, "chunk_rows": args.chunk_rows, "epochs": args.sgd_epochs,
        "parse_s": parse[0]}


def _fit_sklearn(args):
    import numpy as np
    from sklearn.datasets import load_svmlight_file
    from threadpoolctl import threadpool_limits
    if args.worker in CHUNKED and args.chunk_rows != 0:
        # --chunk-rows N: chunks; auto (-1): chunks when the transformed matrix
        # (rows x components x 8 bytes) exceeds --peer-memory-mb
        rows = args.chunk_rows if args.chunk_rows > 0 else AUTO_CHUNK_ROWS
        t = time.perf_counter()
        offsets, n_train, classes = chunk_offsets(args.train, rows)
        scan_s = time.perf_counter() - t
        if args.chunk_rows > 0 or n_train * int(args.budget) * 8 > args.peer_memory_mb * 2**20:
            args.chunk_rows = rows
            out = _fit_sklearn_chunked(args, offsets, n_train, classes)
            return out[:2] + (out[2] + scan_s,) + out[3:]
    t = time.perf_counter()
    X, y = load_svmlight_file(args.train, n_features=args.n_features)
    Xt, yt = load_svmlight_file(args.test, n_features=args.n_features)
    if args.dense:
        X, Xt = X.toarray(), Xt.toarray()
    elif args.worker == "svc":          # SVC takes 32-bit CSR indices only
        for M in (X, Xt):
            M.indices = M.indices.astype(np.int32)
            M.indptr = M.indptr.astype(np.int32)
    read_s = time.perf_counter() - t
    info = {}
    with threadpool_limits(args.threads):
        t = time.perf_counter()
        if args.worker == "svc":
            from sklearn.svm import SVC
            clf = SVC(C=args.C, gamma=args.gamma, cache_size=CACHE_MB).fit(X, y)
            fmap = None
            info["n_sv"] = int(clf.n_support_.sum())
        else:
            fmap, clf = _peer_parts(args)
            clf.fit(fmap.fit_transform(X), y)
            info["n_iter"] = int(np.max(clf.n_iter_))
        train_s = time.perf_counter() - t
        t = time.perf_counter()
        pred = clf.predict(Xt if fmap is None else fmap.transform(Xt))
        predict_s = time.perf_counter() - t
    info["n_train"] = X.shape[0]
    return yt, pred, read_s, train_s, predict_s, info


def _worker(args):
    """One run: read, train, predict, write the predictions; one RESULT line."""
    tool = METHODS[args.worker][0]
    fit = {"kernsolve": _fit_kernsolve, "libsvm-official": _fit_libsvm,
           "scikit-learn": _fit_sklearn, "thundersvm": _fit_thundersvm}[tool]
    yt, pred, read_s, train_s, predict_s, info = fit(args)
    wrong = sum(float(a) != float(b) for a, b in zip(yt, pred))
    with open(args.predictions, "w") as f:
        f.writelines(f"{float(p):.17g}\n" for p in pred)
    out = {"read_s": read_s, "train_s": train_s, "predict_s": predict_s,
           "child_test_error": 100.0 * wrong / len(yt), "n_test": len(yt), **info}
    print("RESULT " + json.dumps(out), flush=True)


# ---------------------------------------------------------------- the runs

def _child_env(threads, wait_policy=None, kernsolve_path=None):
    env = child_env(threads, wait_policy, kernsolve_path)
    for var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(threads)
    return env


def _last_line(text):
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def run_one(method, budget, cfg, train, test, args, tag):
    """One child process: its JSON row (status ok / error / timeout)."""
    predictions = os.path.join(args.workdir, tag + ".pred")
    if os.path.exists(predictions):
        os.unlink(predictions)
    extra = args.extra.get(method, "")
    argv = [sys.executable, os.path.abspath(__file__), "--worker", method,
            "--train", train, "--test", test, "--n-features", str(cfg["n_features"]),
            "--C", repr(cfg["C"]), "--gamma", repr(cfg["gamma"]),
            "--threads", str(args.threads), "--predictions", predictions,
            "--options=" + extra, "--chunk-rows", str(args.chunk_rows),
            "--peer-memory-mb", repr(args.peer_memory_mb),
            "--sgd-epochs", str(args.sgd_epochs)] + (["--dense"] if args.dense else [])
    if budget is not None:
        argv += ["--budget", repr(budget)]
    row = {"method": method, "tool": METHODS[method][0], "budget_name": METHODS[method][1],
           "budget": budget, "call": describe(method, cfg["C"], cfg["gamma"], budget, extra),
           "exact": METHODS[method][1] is None, "threads": args.threads,
           "serial": METHODS[method][4], "train_rows": args.train_rows,
           "wait_policy": args.wait_policy or os.environ.get("OMP_WAIT_POLICY") or "default"}
    load = load_average()
    r = run_process(argv, _child_env(args.threads, args.wait_policy, args.kernsolve_path),
                    os.path.join(args.workdir, tag + ".log"),
                    args.timeout)
    row.update(process_s=r["wall"], cpu_s=r["cpu"], maxrss_mb=r["maxrss_mb"],
               maxrss_source=r["maxrss_source"], load_avg=max(load, load_average()))
    result = None
    for line in r["log"].splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT "):])
    if r["timed_out"]:
        return {**row, "status": "timeout", "error": f"killed after --timeout {args.timeout:g} s"}
    if r["returncode"] != 0 or result is None or not os.path.exists(predictions):
        return {**row, "status": "error",
                "error": f"exit {r['returncode']}: {_last_line(r['log'])}"}
    row.update(result)
    row.update(status="ok", predictions=predictions,
               test_error=100.0 - accuracy_from_files(test, predictions))
    return row


def budgets_for(method, dataset, quick, overrides):
    if method in overrides:
        return overrides[method]
    tool, name, full, small, _ = METHODS[method]
    if quick:
        return small
    return DATASET_BUDGETS.get(dataset, {}).get(method, full)


def run_method(method, cfg, train, test, args, data, n_rows):
    """Every budget of one method on one data set, smallest first; the rows."""
    rows, stop = [], None
    for budget in budgets_for(method, cfg["name"], args.quick, args.budgets):
        base = dict(data=data, dataset=cfg["name"], rows=n_rows, C=cfg["C"],
                    gamma=cfg["gamma"], run=args.run_id)
        if stop:
            row = {"method": method, "tool": METHODS[method][0],
                   "budget_name": METHODS[method][1], "budget": budget,
                   "threads": args.threads, "exact": METHODS[method][1] is None,
                   "status": "skipped", "error": stop}
        else:
            tag = f"{data}.{method}.{budget}.{args.threads}".replace("[", "").replace(
                "]", "").replace(":", "")
            row = run_one(method, budget, cfg, train, test, args, tag)
            # An exact method's one run has no budget (None) to name.
            which = "the run" if budget is None else f"budget {budget:g}"
            if row["status"] == "timeout":
                stop = f"{which} timed out"
            elif (row["status"] == "ok" and args.max_time is not None
                  and row["train_s"] > args.max_time):
                stop = f"{which} took {row['train_s']:.1f} s > --max-time {args.max_time:g}"
        row = {**base, **row}
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(row) + "\n")
    return rows


# ---------------------------------------------------------------- tables

COLUMNS = ["data", "method", "budget", "threads", "test error %", "train s", "read s",
           "predict s", "process s", "peak MB", "load", "status"]


def _fmt(v, spec):
    return "-" if v is None else format(v, spec)


def _budget(r):
    if r.get("budget") is None:
        return "exact"
    return f"{r['budget_name']} {r['budget']:g}"


def markdown(rows):
    """One line per run, in the order of the rows."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        status = r["status"] if r["status"] == "ok" else f"{r['status']}: {r.get('error', '')}"
        lines.append(
            f"| {r['data']} | {r['method']} | {_budget(r)} | {r['threads']}"
            f"{' (serial)' if r.get('serial') else ''}"
            f"{'' if r.get('wait_policy', 'default') == 'default' else ', ' + r['wait_policy']}"
            f" | {_fmt(r.get('test_error'), '.2f')} | "
            f"{_fmt(r.get('train_s'), '.1f')} | {_fmt(r.get('read_s'), '.1f')} | "
            f"{_fmt(r.get('predict_s'), '.1f')} | {_fmt(r.get('process_s'), '.1f')} | "
            f"{_fmt(r.get('maxrss_mb'), '.0f')} | {_fmt(r.get('load_avg'), '.1f')} | "
            f"{status.replace('|', '/')} |")
    return "\n".join(lines)


SUMMARY_COLUMNS = ["data", "method", "best test error %", "its train s", "its peak MB",
                   "first within 1 point of the reference: train s (budget)"]


def summary(rows):
    """Per data set: each method's best error and the first budget (least
    training time) within one point of the reference error, kernsolve SMO's
    (else the best exact solver's)."""
    lines = ["| " + " | ".join(SUMMARY_COLUMNS) + " |", "|" + "---|" * len(SUMMARY_COLUMNS)]
    by_data = {}
    for r in rows:
        if r["status"] == "ok":
            by_data.setdefault(r["data"], []).append(r)
    for data, rs in by_data.items():
        exact = [r for r in rs if r.get("exact")]
        smo = [r for r in exact if r["method"] == "smo"]
        ref = min(smo or exact, key=lambda r: r["test_error"], default=None)
        methods = []
        for r in rs:
            if r["method"] not in methods:
                methods.append(r["method"])
        for m in methods:
            mine = [r for r in rs if r["method"] == m]
            best = min(mine, key=lambda r: (r["test_error"], r["train_s"]))
            reach = "-"
            if ref is not None:
                ok = [r for r in mine if r["test_error"] <= ref["test_error"] + 1.0]
                if ok:
                    first = min(ok, key=lambda r: r["train_s"])
                    reach = f"{first['train_s']:.1f} ({_budget(first)})"
                else:
                    reach = "not reached"
            lines.append(f"| {data} | {m} | {best['test_error']:.2f} ({_budget(best)}) | "
                         f"{best['train_s']:.1f} | {_fmt(best.get('maxrss_mb'), '.0f')} | "
                         f"{reach} |")
        if ref is not None:
            lines.append(f"| {data} | (reference: {ref['method']}) | {ref['test_error']:.2f} | "
                         f"{ref['train_s']:.1f} | {_fmt(ref.get('maxrss_mb'), '.0f')} | "
                         f"target {ref['test_error'] + 1.0:.2f} |")
    return "\n".join(lines)


# ---------------------------------------------------------------- driver

def _names(spec, known, option):
    names = [s.strip() for s in spec.split(",") if s.strip()]
    for s in names:
        if s not in known:
            raise SystemExit(f"{option}: unknown name {s!r} (known: {', '.join(known)})")
    return names


def _pairs(items, option, parse):
    out = {}
    for item in items or ():
        method, sep, value = item.partition("=")
        if not sep or method not in METHODS:
            raise SystemExit(f"{option} {item!r}: expected METHOD=VALUE with METHOD one of "
                             f"{', '.join(METHODS)}")
        try:
            out[method] = parse(method, value)
        except ValueError as e:
            raise SystemExit(f"{option} {item!r}: {e}")
    return out


def _parse_budgets(method, value):
    if METHODS[method][1] is None:
        raise ValueError(f"{method} is an exact solver: it has no budget")
    return [float(v) if METHODS[method][1] == "epochs" else int(v) for v in value.split(",")]


def _parse_extra(method, value):
    if METHODS[method][0] != "kernsolve":
        raise ValueError("extra options are for kernsolve's methods")
    return value


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default=",".join(DATASETS),
                    help=f"comma-separated, from {', '.join(DATASETS)}")
    ap.add_argument("--methods", default=",".join(m for m in METHODS if m != "thundersvm"),
                    help=f"comma-separated, from {', '.join(METHODS)} (default: all but "
                         "thundersvm, a peer built apart)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--train-file", default=None,
                    help="a LIBSVM file that replaces the data set's training file "
                         "(benchmarks/make_big_file.py's augmented rows); the test file stays")
    ap.add_argument("--quick", action="store_true",
                    help="first --rows training and test rows, small budgets")
    ap.add_argument("--dense", action="store_true",
                    help="give every tool dense numpy rows (libsvm-official refused)")
    ap.add_argument("--rows", type=int, default=None, help="rows per slice (default 2000 "
                    "with --quick, all without)")
    ap.add_argument("--train-rows", type=int, default=None,
                    help="train on the first N rows of the training file only (the test "
                         "file whole): an exact solver's growth for the extrapolated times")
    ap.add_argument("--chunk-rows", type=int, default=-1,
                    help="rbf-sgd, nystroem-sgd: partial_fit over chunks of N rows read from "
                         "the file (default: chunks of %d when the transformed matrix "
                         "exceeds --peer-memory-mb; 0: always whole)" % AUTO_CHUNK_ROWS)
    ap.add_argument("--peer-memory-mb", type=float, default=PEER_MEMORY_MB,
                    help="the transformed matrix (rows x components x 8 bytes) a "
                         "scikit-learn peer may hold whole (default %(default)g)")
    ap.add_argument("--sgd-epochs", type=int, default=3,
                    help="passes of partial_fit over the chunks (default %(default)d)")
    ap.add_argument("--budgets", action="append", metavar="METHOD=B1,B2",
                    help="the budgets of a method (epochs, centres or components)")
    ap.add_argument("--options", action="append", metavar="METHOD=OPTIONS", dest="extra",
                    help="options appended to a kernsolve method's (the last word wins)")
    ap.add_argument("--max-time", type=float, default=None,
                    help="skip a method's larger budgets once one trained for longer (s)")
    ap.add_argument("--timeout", type=float, default=3600.0,
                    help="kill a run after this many seconds")
    ap.add_argument("--json", default=None, help="append one JSON row per run here")
    ap.add_argument("--markdown", default=None, help="write the tables here")
    ap.add_argument("--tables-only", action="store_true",
                    help="run nothing: the tables of the rows already in --json")
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(),
                                                      "kernsolve-bench-data"),
                    help="the data files and each run's log and predictions")
    ap.add_argument("--wait-policy", default=None, choices=["active", "passive"],
                    help="OMP_WAIT_POLICY of the runs (passive: idle OpenMP threads sleep "
                         "instead of spinning; libsvm-official's OpenMP build is many times "
                         "slower on a busy machine without it)")
    ap.add_argument("--kernsolve-path", default=None,
                    help="import kernsolve from DIR in the runs (default: this tree)")
    # the child (internal)
    ap.add_argument("--worker", default=None, choices=list(METHODS), help=argparse.SUPPRESS)
    ap.add_argument("--train", help=argparse.SUPPRESS)
    ap.add_argument("--test", help=argparse.SUPPRESS)
    ap.add_argument("--n-features", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--C", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--gamma", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--budget", type=float, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--predictions", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        args.options = args.extra[0] if args.extra else ""
        return _worker(args)
    if args.threads < 1:
        ap.error(f"--threads {args.threads}: must be >= 1")
    for option, value, least in (("--train-rows", args.train_rows, 1),
                                 ("--chunk-rows", args.chunk_rows, -1),
                                 ("--sgd-epochs", args.sgd_epochs, 1)):
        if value is not None and value < least:
            ap.error(f"{option} {value}: must be >= {least}")
    datasets = _names(args.datasets, list(DATASETS), "--datasets")
    methods = _names(args.methods, list(METHODS), "--methods")
    if "thundersvm" in methods and not os.path.isfile(
            os.path.join(os.environ.get(THUNDERSVM_ENV, ""), "thundersvm-train")):
        ap.error(f"thundersvm: set {THUNDERSVM_ENV} to the folder holding thundersvm-train "
                 "and thundersvm-predict (benchmarks/README.md says how to build them)")
    if args.dense and "libsvm" in methods:
        ap.error("--dense: libsvm-official takes its own sparse rows; leave libsvm out "
                 "of --methods")
    args.budgets = _pairs(args.budgets, "--budgets", _parse_budgets)
    args.extra = _pairs(args.extra, "--options", _parse_extra)
    if args.tables_only and not args.json:
        ap.error("--tables-only needs --json FILE (the rows to tabulate)")
    n_rows = args.rows or (2000 if args.quick else None)
    args.run_id = time.strftime("%Y-%m-%dT%H:%M:%S")
    os.makedirs(args.workdir, exist_ok=True)
    if not args.tables_only:
        what = f"first {n_rows} rows" if n_rows else "full data"
        print(f"# bench_scale: {args.run_id} {what}, {args.threads} threads; load average "
              f"{load_average():.1f}", flush=True)
    rows = []
    if args.train_file and len(datasets) != 1:
        ap.error("--train-file replaces one data set's training file: give one --datasets")
    for name in ([] if args.tables_only else datasets):
        cfg = DATASETS[name]
        if args.train_file:     # e.g. make_big_file.py's rows; the test file stays
            cfg = dict(cfg, train_path=os.path.abspath(args.train_file))
        train, test = prepare(args.workdir, cfg, n_rows)
        if args.train_rows:         # a prefix of the training rows; the test file whole
            train = prefix_file(train, args.train_rows, args.workdir)
        data = name + (f"[:{n_rows}]" if n_rows else "") + ("+dense" if args.dense else "")
        if args.train_file:
            data += f"({os.path.basename(args.train_file)})"
        if args.train_rows:
            data += f"[train:{args.train_rows}]"
        for method in methods:
            rows += run_method(method, cfg, train, test, args, data, n_rows)
    if args.json:
        with open(args.json) as f:
            rows = [json.loads(x) for x in f if x.strip()]
    tables = [markdown(rows), "Best error and time to within one point of the reference "
              "(train s):\n\n" + summary(rows)]
    print("\n\n".join(tables))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n\n".join(tables) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
