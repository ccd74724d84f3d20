"""``kernsolve-train``: LIBSVM's svm-train, reaching every kernsolve solver.

Same option letters, defaults and output lines as svm-train; the model file is
LIBSVM's format (written by :func:`kernsolve.save_model`, atomically).  The
solvers, their options and the checks made before the data is read come from
``kernsolve.solvers.REGISTRY``.
"""
import os
import sys
import textwrap

import numpy as np

from .._constants import KERNEL_TABLE, PRECOMPUTED, REGRESSION
from ._common import (STDIN, CommandError, UsageError, c_divide, check_input_path,
                      check_output_path, parse_float, parse_int, read_data,
                      end_process, regression_summary, run, split_options)
from .. import _api
from .._model import save_model
from .._params import FLAGS, parse_options
from ..model_selection.cv import cross_validation, make_folds
from ..solvers import (AUTO, DEFAULT_SOLVER, REGISTRY, median_gamma_solvers, solver_names,
                       spec_for, streaming_solvers)

PROG = "kernsolve-train"


def _wrapped(text, first_width=82):
    """``text`` on lines of at most 82 columns, continuation lines indented by a
    tab (8 columns), as the usage text is laid out."""
    first = textwrap.wrap(text, first_width, break_on_hyphens=False)[0]
    rest = textwrap.wrap(text[len(first):].strip(), 74, break_on_hyphens=False)
    return "\n\t".join([first] + rest)


def _solver_options_usage():
    """One tab-indented entry per solver family: its options, then those of
    only some of its names (``udsg: --new-blocks --old-blocks``)."""
    entries = []
    for spec in REGISTRY:
        if not spec.options:
            continue
        common = [f"--{o}" for o, opt in spec.options.items() if not opt.only]
        parts = [f"{', '.join(spec.names)}: {' '.join(common)}"]
        for name in spec.names:
            own = [f"--{o}" for o, opt in spec.options.items() if name in opt.only]
            if own:
                parts.append(f"{name}: {' '.join(own)}")
        entries.append("\t" + _wrapped("; ".join(parts), 74) + "\n")
    return "".join(entries)


def _or(names):
    return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]


_STREAMS = streaming_solvers()
_CLUSTER = [spec.names[0] for spec in REGISTRY if spec.train_cluster is not None]

# svm-train's text, then kernsolve's options (the solver lines from the registry)
USAGE = """\
Usage: kernsolve-train [options] training_set_file [model_file]
options:
-s svm_type : set type of SVM (default 0)
	0 -- C-SVC		(multi-class classification)
	1 -- nu-SVC		(multi-class classification)
	2 -- one-class SVM
	3 -- epsilon-SVR	(regression)
	4 -- nu-SVR		(regression)
-t kernel_type : set type of kernel function (default 2)
""" + "".join(f"\t{k.code} -- {k.usage}\n" for k in KERNEL_TABLE) + """\
-d degree : set degree in kernel function (default 3)
-g gamma : set gamma in kernel function (default 1/num_features)
-r coef0 : set coef0 in kernel function (default 0)
-c cost : set the parameter C of C-SVC, epsilon-SVR, and nu-SVR (default 1)
-n nu : set the parameter nu of nu-SVC, one-class SVM, and nu-SVR (default 0.5)
-p epsilon : set the epsilon in loss function of epsilon-SVR (default 0.1)
-m cachesize : set cache memory size in MB (default 100)
-e epsilon : set tolerance of termination criterion (default 0.001)
-h shrinking : whether to use the shrinking heuristics, 0 or 1 (default 1)
-b probability_estimates : whether to train a model for probability estimates, 0 or 1 (default 0)
-wi weight : set the parameter C of class i to weight*C, for C-SVC (default 1)
-v n: n-fold cross validation mode
-q : quiet mode (no outputs)
""" + f"""\
kernsolve options:
{_wrapped(f"--solver name : {_or(solver_names() + (AUTO,))} (default {DEFAULT_SOLVER}; auto: chosen from the data, doc/choosing-a-solver.md)")}
--threads n : number of threads; negative counts back from all cores (default: all cores)
--seed s : seed of the random numbers (folds, probability CV, sampling) (default 0)
--bias 0|1 : whether the decision function has a bias term (default 1)
--name value : solver options of the chosen solver (documentation: python -m kernsolve --docs):
{_solver_options_usage()}-g median : ({', '.join(median_gamma_solvers())}) gamma by the median trick
--stream : (--solver {_or(_STREAMS)}) train from the file read in byte windows, never all in memory
--libsvm-folds : draw the -v folds and the -b 1 internal folds as svm-train does on Linux
	(glibc rand()), so -v and -b 1 give svm-train's numbers
--cold : with -v, every fold computes its own kernel values (the folds share one
	kernel matrix when it fits in -m; the same results either way)
--chunk-mb n : window size in MB for --stream (default 64; implies --stream)
--scheduler address : (--centers p) train on a Dask cluster (tcp://host:8786); its workers
	read the file's byte ranges, the rows are never gathered; the same model file
--add-data file : (with --scheduler) the rows of file follow those of training_set_file;
	repeat for more files: one training set, the model of the files concatenated
--help, or -h without a value : print this usage; --version : print the version
"""


def _option_tokens(options):
    """Flatten ``split_options`` pairs back into an option list for parse_options."""
    tokens = []
    for name, values in options:
        tokens.append(name)
        tokens.extend(values)
    return tokens


def _parse(tokens):
    """Validate the options with the library's own parser (one grammar for all)."""
    try:
        params = parse_options(list(tokens))
        _api.check_parameters(params)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return params


def check_solver_options(params):
    """The checks ``kernsolve.train`` makes before it looks at the data, for the
    solvers of LIBSVM's one-vs-one driver (SMO and the ``binary`` ones), made
    before the (possibly long) read of the training file; kernsolve-grid's
    pre-check.  (A whole-model solver's options may be the grid's axes: its
    cells check them.)  Raises ValueError."""
    spec = spec_for(params.solver)
    if spec is not None and spec.uses_driver:
        _api.check_parameters(params)


def check_rows_for_folds(path, n_rows):
    """Cross-validation needs two rows (a training and a test fold) at least."""
    if n_rows < 2:
        raise CommandError(f"{path}: {n_rows} data row; cross validation needs at least 2")


def default_model_path(training_path):
    """svm-train's rule: the training file's base name plus ``.model``, in the cwd."""
    return os.path.basename(training_path) + ".model"


# ---------------------------------------------------------------------------
# -v n: cross-validation, by kernsolve.cross_validation (the same folds and
# predictions as the Python API).

def cv_folds(y, n_folds, seed, classification):
    """The folds of ``-v`` (:func:`kernsolve.model_selection.cv.make_folds`), for callers of the old helper."""
    return make_folds(y, n_folds, seed, stratified=classification)


def cross_validation_targets(y, X, train_tokens, params):
    """Predicted target of every row when its fold was held out.

    With ``--libsvm-folds`` among the options, the folds svm-train draws on
    Linux (glibc ``rand()``; see :func:`kernsolve.cross_validation`) instead
    of kernsolve's seeded ones.
    """
    n = len(y)
    n_folds = params.n_folds
    if n_folds > n:
        sys.stderr.write("WARNING: # folds > # data. Will use # folds = # data instead "
                         "(i.e., leave-one-out cross validation)\n")
        n_folds = n
    result = cross_validation(y, X, list(train_tokens), n_folds=n_folds,
                              n_jobs=params.n_jobs, seed=params.seed)
    return result.target


def report_cross_validation(y, target, svm_type, out=None):
    """svm-train's summary lines (printed even with -q, as svm-train does)."""
    out = sys.stdout if out is None else out
    n = len(y)
    if svm_type in REGRESSION:
        mse, scc = regression_summary(y, target)
        out.write("Cross Validation Mean squared error = %g\n" % mse)
        out.write("Cross Validation Squared correlation coefficient = %g\n" % scc)
    else:
        correct = int(np.count_nonzero(target == y))
        out.write("Cross Validation Accuracy = %g%%\n" % c_divide(100.0 * correct, n))


# ---------------------------------------------------------------------------
# --stream / --chunk-mb: training from file windows (DSG).

_DEFAULT_CHUNK_MB = 64.0


def _stream_options(options):
    """Take ``--stream``, ``--chunk-mb``, ``--scheduler`` and ``--add-data``
    out of the options (the library's parser does not know them); returns
    (options, chunk size in MB or None, scheduler address or None, the added
    data files)."""
    kept, chunk_mb, scheduler, added = [], None, None, []
    for name, values in options:
        if name == "--scheduler":
            scheduler = values[0]
        elif name == "--add-data":
            added.append(values[0])
        elif name == "--stream":
            chunk_mb = _DEFAULT_CHUNK_MB if chunk_mb is None else chunk_mb
        elif name == "--chunk-mb":
            chunk_mb = parse_float(name, values[0])
            if chunk_mb <= 0:
                raise UsageError(f"bad value for --chunk-mb: {values[0]!r} (must be > 0)")
        else:
            kept.append((name, values))
    return kept, chunk_mb, scheduler, added


def _check_stream_options(params, chunk_mb):
    """``--stream``: a solver that streams, and no -v."""
    if chunk_mb is not None:
        if params.solver not in _STREAMS:
            raise UsageError(f"--stream: training from file windows is available to "
                             f"--solver {_or(_STREAMS)}, not {params.solver!r}")
        if params.n_folds:
            raise UsageError("--stream cannot be combined with -v (cross-validation "
                             "needs the data in memory)")


def _save(model_path, model):
    """Write the model as svm-train does (after the training lines); exit status 0."""
    sys.stdout.flush()
    try:
        save_model(model_path, model)
    except OSError as exc:
        raise CommandError(f"can't save model to file {model_path}: "
                           f"{exc.strerror or exc}") from None
    return 0


def _train_on_cluster(data_paths, model_path, params, scheduler):
    """``--scheduler``: the solver's ``train_cluster`` (EigenPro's on centres)
    on that scheduler's workers, which read the files (one training set)."""
    spec = spec_for(params.solver)
    if spec is None or spec.train_cluster is None:
        raise UsageError(f"--scheduler: --solver {params.solver} does not train on a "
                         f"cluster; --solver {_or(_CLUSTER)} (with --centers) does")
    try:        # optional (the dask extra), needed for --scheduler only
        from distributed import Client
    except ImportError:
        raise CommandError("--scheduler needs dask.distributed: pip install "
                           "'kernsolve[dask]'") from None
    with Client(scheduler, set_as_default=False) as client, client.as_current():
        model = spec.train_cluster([os.path.abspath(p) for p in data_paths], params)
    return _save(model_path, model)


def _train_streamed(data_path, model_path, params, tokens, chunk_mb):
    """``--stream``: the solver's ``train_file`` (DSG's), windows of ``chunk_mb`` MB."""
    train_file = spec_for(params.solver).train_file
    model = train_file(data_path, list(tokens), chunk_bytes=max(1, int(chunk_mb * 2**20)))
    return _save(model_path, model)


def main(argv):
    if not argv:
        raise UsageError("no training set file given")
    options, positional = split_options(argv, flags=FLAGS + ("--stream",), own_h=True)
    options, chunk_mb, scheduler, added = _stream_options(options)
    tokens = _option_tokens(options)
    for name, values in options:
        if name == "-v":
            n_folds = parse_int(name, values[0])
            if n_folds < 2:
                raise UsageError("n-fold cross validation: n must >= 2")
    params = _parse(tokens)
    _check_stream_options(params, chunk_mb)
    if not positional:
        raise UsageError("no training set file given")
    if len(positional) > 2:
        raise UsageError(f"unexpected arguments after the model file: "
                         f"{' '.join(positional[2:])}")
    data_path = positional[0]
    if scheduler is not None and (chunk_mb is not None or params.n_folds
                                  or data_path == STDIN):
        raise UsageError("--scheduler trains from a file the workers read: not with "
                         "--stream, -v or stdin ('-')")
    if added and scheduler is None:
        raise UsageError(f"--add-data {added[0]}: several files train as one set on a "
                         "cluster only; give --scheduler (or concatenate the files)")
    if data_path == STDIN and chunk_mb is not None:
        raise UsageError("--stream reads the training file once per pass; it cannot "
                         "read stdin ('-')")
    if data_path == STDIN and len(positional) < 2 and not params.n_folds:
        raise UsageError("the training set comes from stdin ('-'): give the model file name")
    model_path = positional[1] if len(positional) > 1 else default_model_path(data_path)

    for path in [data_path] + added:
        check_input_path(path)
    if not params.n_folds:
        check_output_path(model_path)

    if scheduler is not None:
        return _train_on_cluster([data_path] + added, model_path, params, scheduler)
    if chunk_mb is not None:
        return _train_streamed(data_path, model_path, params, tokens, chunk_mb)

    y, X = read_data(data_path, precomputed=params.kernel_type == PRECOMPUTED,
                     n_jobs=params.n_jobs)
    y = np.asarray(y, dtype=np.float64)

    if params.n_folds:
        check_rows_for_folds(data_path, len(y))
        train_tokens = []
        skip = False
        for tok in tokens:
            if skip:
                skip = False
                continue
            if tok == "-v":
                skip = True
                continue
            train_tokens.append(tok)
        target = cross_validation_targets(y, X, train_tokens, params)
        sys.stdout.flush()
        report_cross_validation(y, target, params.svm_type)
        return 0

    model = _api.train(y, X, list(tokens))
    return _save(model_path, model)


def cli(argv=None):
    """The command in this process: returns its exit status."""
    return run(main, argv, PROG, USAGE)


def console():
    """Console-script entry point: the command, then the process's end."""
    end_process(cli())


if __name__ == "__main__":
    console()
