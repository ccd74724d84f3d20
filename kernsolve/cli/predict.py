"""``kernsolve-predict``: LIBSVM's svm-predict, for LIBSVM and kernsolve model files.

The output file is svm-predict's: one predicted label per line (``%.17g``); with
``-b 1`` a header (``labels L1 L2 ...`` for classification, ``label normal
outlier`` for one-class) and then the label and one probability per class.
It is written to a temporary file and renamed, so it is never half-written.
"""
import os
import sys

import numpy as np

from .._constants import CLASSIFICATION, ONE_CLASS, REGRESSION
from .._fileutil import open_read, output_file
from .._model import is_model_start, load_model
from .._model_kind import CallableFlag
from .._predict import predict_rows
from ._common import (CommandError, UsageError, c_divide, check_input_path,
                      check_output_path, end_process, parse_int, read_data, regression_summary,
                      run, split_options)

PROG = "kernsolve-predict"

USAGE = """\
Usage: kernsolve-predict [options] test_file model_file output_file
options:
-b probability_estimates: whether to predict probability estimates, 0 or 1 (default 0)
-q : quiet mode (no outputs)
kernsolve options:
--threads n : number of threads; negative counts back from all cores (default: all cores)
--help, -h : print this usage; --version : print the version
"""


def _model_type(model, attr):
    """``svm_type`` / ``kernel_type`` of a LIBSVM-style Model (``model.param``) or
    of a model kind that carries them itself (DSG)."""
    param = getattr(model, "param", None)
    return int(getattr(param if param is not None else model, attr))


def supports_probability(model):
    """LIBSVM's svm_check_probability_model on a kernsolve Model."""
    if getattr(model, "param", None) is None:      # DSG: logistic / softmax losses
        return bool(getattr(model, "has_probability", False))
    flag = getattr(model, "is_probability_model", None)
    if isinstance(flag, (bool, CallableFlag)):
        return bool(flag)
    svm_type = model.param.svm_type
    if svm_type in CLASSIFICATION:
        return model.prob_a is not None and model.prob_b is not None \
            and len(model.prob_a) > 0
    if svm_type in REGRESSION:
        return model.prob_a is not None and len(model.prob_a) > 0
    if svm_type == ONE_CLASS:
        return model.prob_density_marks is not None and len(model.prob_density_marks) > 0
    return False


def format_predictions(labels, probabilities=None, header=None):
    """The output file's text, svm-predict's lines.

    Plain predictions are written with ``%.17g`` (LIBSVM >= 3.2x; a class
    label prints as ``1``, a regression value keeps every digit); rows with
    probabilities use ``%g`` for the label and the probabilities.
    """
    lines = []
    if header is not None:
        lines.append(header + "\n")
    if probabilities is None:
        values = np.ascontiguousarray(labels, dtype=np.float64)
        # Class labels take few values: each distinct one (by its bits, so 0
        # and -0 stay apart) is formatted once.
        distinct, where = np.unique(values.view(np.int64), return_inverse=True)
        texts = np.array(["%.17g\n" % v for v in distinct.view(np.float64).tolist()],
                         dtype=object)
        lines.extend(texts[where.ravel()].tolist())
    else:
        probabilities = np.asarray(probabilities, dtype=np.float64)
        for v, row in zip(np.asarray(labels, dtype=np.float64).tolist(),
                          probabilities.tolist()):
            lines.append("%g" % v + "".join(" %g" % p for p in row) + "\n")
    return "".join(lines)


def summary_lines(y, labels, svm_type):
    """svm-predict's Accuracy / Mean squared error / Squared correlation lines.

    Sums run in row order, as svm-predict accumulates them, so the printed
    numbers are the same to the last digit.
    """
    if svm_type in REGRESSION:
        mse, scc = regression_summary(y, labels)
        return ["Mean squared error = %g (regression)\n" % mse,
                "Squared correlation coefficient = %g (regression)\n" % scc]
    total = len(y)
    correct = int(np.count_nonzero(np.asarray(labels, dtype=np.float64)
                                   == np.asarray(y, dtype=np.float64)))
    return ["Accuracy = %g%% (%d/%d) (classification)\n"
            % (c_divide(float(correct), total) * 100, correct, total)]


def _first_word(path):
    """(first word, its line number) of the file, decompressed by its
    extension; ('', 0) if none can be read: enough to tell a model file from a
    data file.  Only a regular file is peeked at: a FIFO or stdin can be read
    once, by the reader that uses it."""
    if not os.path.isfile(path):
        return "", 0
    try:
        with open_read(path) as f:
            head = f.read(4096)
    except (OSError, EOFError, ValueError):      # includes bad gzip/xz/bz2 data
        return "", 0
    words = head.split(None, 1)
    if not words:
        return "", 0
    line = head[:len(head) - len(head.lstrip())].count(b"\n") + 1
    return words[0].decode("ascii", "replace"), line


def _is_number(word):
    try:
        float(word)
    except ValueError:
        return False
    return True


def check_argument_order(test_path, model_path):
    """svm-predict's arguments in the wrong order (``model test out``, or the
    data file twice): say so instead of a parse error deep in the wrong file."""
    usage = "usage: kernsolve-predict [options] test_file model_file output_file"
    (model_word, model_line), (test_word, test_line) = (_first_word(model_path),
                                                        _first_word(test_path))
    if not is_model_start(model_word) and _is_number(model_word):
        raise CommandError(f"{model_path}:{model_line}: looks like a data file, not a "
                           f"model: {usage}")
    if is_model_start(test_word):
        raise CommandError(f"{test_path}:{test_line}: looks like a model file, not test "
                           f"data: {usage}")


def main(argv):
    if not argv:
        raise UsageError("expected test_file model_file output_file")
    options, positional = split_options(argv, flags=("-q",))
    probability = False
    quiet = False
    threads = None
    for name, values in options:
        if name == "-b":
            b = parse_int(name, values[0])
            if b not in (0, 1):
                raise UsageError(f"bad value for -b: {values[0]!r} (must be 0 or 1)")
            probability = b == 1
        elif name == "-q":
            quiet = True
        elif name == "--threads":
            threads = parse_int(name, values[0])
            if threads == 0:
                raise UsageError("bad value for --threads: 0 (use a positive count, "
                                 "or a negative one to count back from all cores)")
        else:
            raise UsageError(f"unknown option: {name}")
    if len(positional) != 3:
        raise UsageError("expected test_file model_file output_file"
                         + (f", got {len(positional)} file names" if positional else ""))
    test_path, model_path, output_path = positional

    check_input_path(test_path)
    check_output_path(output_path)
    check_input_path(model_path, "model file")
    check_argument_order(test_path, model_path)

    model = load_model(model_path, n_jobs=threads, _scipy=False)   # no scipy import
    svm_type = _model_type(model, "svm_type")
    has_probability = supports_probability(model)

    def say(text):
        if not quiet:
            sys.stdout.write(text)

    if probability:
        if not has_probability:
            hint = ("train it with --loss logistic or softmax"
                    if getattr(model, "param", None) is None else "train it with -b 1")
            raise CommandError(f"model file {model_path} does not support probability "
                               f"estimates ({hint})")
    elif has_probability:
        say("Model supports probability estimates, but disabled in prediction.\n")

    y, X = read_data(test_path, precomputed=_model_type(model, "kernel_type") == 4,
                     n_jobs=threads)
    y = np.asarray(y, dtype=np.float64)
    # predict() applies LIBSVM's width rule: features only one side has are zeros
    predict_options = ["-q"]
    if probability:
        predict_options += ["-b", "1"]
    if threads is not None:
        predict_options += ["--threads", str(threads)]
    try:
        labels, _, values = predict_rows(y, X, model, predict_options, keep_values=False)
    except ValueError as exc:
        if getattr(model, "param", None) is not None:
            raise
        # DSG: a test file with values in columns the model never saw
        raise CommandError(f"test file {test_path}: {exc}") from None

    header = None
    probabilities = None
    if probability:
        if svm_type in REGRESSION:
            say("Prob. model for test data: target value = predicted value + z,\n"
                "z: Laplace distribution e^(-|z|/sigma)/(2sigma),sigma=%g\n"
                % float(np.ravel(model.prob_a)[0]))
        else:
            probabilities = values
            if svm_type == ONE_CLASS:
                header = "label normal outlier"
            else:
                header = "labels" + "".join(" %d" % int(l) for l in
                                            np.asarray(model.labels).tolist())

    text = format_predictions(labels, probabilities, header)
    try:
        with output_file(output_path) as f:
            f.write(text)
    except OSError as exc:
        raise CommandError(f"can't open output file {output_path}: "
                           f"{exc.strerror or exc}") from None

    for line in summary_lines(y, labels, svm_type):
        say(line)
    return 0


def cli(argv=None):
    """The command in this process: returns its exit status."""
    return run(main, argv, PROG, USAGE)


def console():
    """Console-script entry point: the command, then the process's end."""
    end_process(cli())


if __name__ == "__main__":
    console()
