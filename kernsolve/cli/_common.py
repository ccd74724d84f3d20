"""What the four commands share: error handling, option splitting, output checks.

Every user error ends the same way: one line ``prog: what is wrong`` on stderr
(followed by the usage text when the command line itself was wrong) and exit
status 1. Ctrl-C exits with 130. No traceback reaches the user unless
``KERNSOLVE_DEBUG_CLI=1`` is set in the environment (for reporting a bug).
"""
import atexit
import contextlib
import errno
import os
import re
import stat
import sys
import threading
import warnings

import numpy as np

from .. import __version__, _fileutil, _params
from .._errors import DataFormatError
from .._io import read_problem
from .._progress import clear_active

EXIT_USER_ERROR = 1
EXIT_INTERRUPTED = 130

#: A data-file argument that means "read the data from stdin" (``cat data | kernsolve-train - m``).
STDIN = "-"


class UsageError(Exception):
    """The command line is wrong: print the message, then the usage, exit 1."""


class CommandError(Exception):
    """A user error found after the command line was parsed: one line, exit 1."""


class HelpRequested(Exception):
    """``--help`` (or ``-h``): print the usage on stdout and exit 0."""


class VersionRequested(Exception):
    """``--version``: print ``prog (kernsolve) VERSION`` on stdout and exit 0."""


def version_line(prog):
    """What ``--version`` prints: ``kernsolve-train (kernsolve) 0.1.0``
    (``kernsolve 0.1.0`` for ``python -m kernsolve``)."""
    if prog == "kernsolve":
        return f"kernsolve {__version__}\n"
    return f"{prog} (kernsolve) {__version__}\n"


def help_pointer(prog):
    """The line after a command-line error (the usage itself only when no
    argument was given, as LIBSVM's tools print it): the error stays the
    line the user sees, not one scrolled away above 45 lines of usage."""
    command = "python -m kernsolve" if prog == "kernsolve" else prog
    return f"Run '{command} --help' for the options.\n"


# an option as a usage text names it: at a word start, not inside "exp(-gamma"
_USAGE_OPTION = re.compile(r"(?<![\w(-])(--?[a-zA-Z][\w-]*)")


def _usage_error_line(exc, usage):
    """The error's one line; an unknown option gets its "did you mean" from the
    options the command's usage names (instead of the grammar's parser's)."""
    text = _one_line(exc)
    if text.startswith("unknown option: "):
        token = text[len("unknown option: "):].split()[0]
        # the command's own options too (--stream), which the grammar's do not hold
        text = "unknown option: " + token + _params.did_you_mean(
            token, _USAGE_OPTION.findall(usage))
    return text


def _one_line(text):
    """Collapse a message onto one line (messages from deep layers may wrap)."""
    return " ".join(str(text).split()) or "unknown error"


# errors that only writing gives (a full disk, a quota, a file too large)
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


def os_error_message(exc, what="open"):
    """``can't open input file NAME: No such file or directory`` for an OSError
    (``can't write NAME: ...`` for the errors only writing gives)."""
    if exc.errno in _WRITE_ERRNOS:
        what = "write"
        if exc.filename is None:    # files are named by their writer (output_file)
            exc.filename = "standard output"
    name = exc.filename if exc.filename is not None else ""
    reason = exc.strerror or str(exc)
    if name:
        return f"can't {what} {name}: {reason}"
    return f"can't {what}: {reason}"


def run(main, argv, prog, usage):
    """Call ``main(argv)`` and turn every way it can end into an exit status.

    Parameters
    ----------
    main : callable
        Takes the argument list (without the program name), returns 0 or None.
    argv : list of str or None
        Arguments; ``sys.argv[1:]`` when None.
    prog : str
        Name used as the prefix of error lines.
    usage : str
        The usage text printed after command-line errors.
    """
    if argv is None:
        argv = sys.argv[1:]
    debug = os.environ.get("KERNSOLVE_DEBUG_CLI", "") not in ("", "0")
    with warnings.catch_warnings():
        if not debug:
            # a library warning is one line for a command-line user, not a
            # source location and a code excerpt
            def show(message, category, filename, lineno, file=None, line=None):
                clear_active()         # not onto the end of a progress line
                text = _one_line(message)
                if text.lower().startswith("warning:"):
                    text = text[len("warning:"):].lstrip()
                sys.stderr.write(f"{prog}: warning: {text}\n")
            warnings.showwarning = show
        return _run(main, argv, prog, usage, debug)


def _run(main, argv, prog, usage, debug):
    try:
        status = main(list(argv))
        _flush_stdout()
        return 0 if status is None else int(status)
    except HelpRequested:
        sys.stdout.write(usage)
        _flush_stdout()
        return 0
    except VersionRequested:
        sys.stdout.write(version_line(prog))
        _flush_stdout()
        return 0
    except UsageError as exc:
        _flush_stdout_quietly()
        sys.stderr.write(f"{prog}: {_usage_error_line(exc, usage)}\n"
                         + (usage if not argv else help_pointer(prog)))
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        _flush_stdout_quietly()
        sys.stderr.write(f"{prog}: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader of our stdout went away (e.g. ``| head``): nothing to report
        _silence_stdout()
        return EXIT_USER_ERROR
    except (CommandError, ValueError, OSError, MemoryError, NotImplementedError) as exc:
        if debug:
            raise
        _flush_stdout_quietly()
        if isinstance(exc, MemoryError):
            msg = "out of memory"
        elif isinstance(exc, OSError) and not isinstance(exc, CommandError):
            msg = os_error_message(exc)
        else:
            msg = _one_line(exc)
        sys.stderr.write(f"{prog}: {msg}\n")
        return EXIT_USER_ERROR
    except Exception as exc:  # a bug in kernsolve: still no traceback by default
        if debug:
            raise
        _flush_stdout_quietly()
        sys.stderr.write(f"{prog}: internal error: {type(exc).__name__}: "
                         f"{_one_line(exc)} (set KERNSOLVE_DEBUG_CLI=1 for details)\n")
        return EXIT_USER_ERROR


def end_process(status):
    """End a command's process with ``status`` (what the console scripts and
    ``python -m kernsolve.cli.X`` call after ``cli()``; never ``cli()`` itself,
    which the tests call in-process).

    The output is flushed; then, when nothing is left to clean up (only the
    main thread runs and no ``atexit`` handler is registered: joblib's
    workers, for one, register theirs), the process ends at once instead of
    tearing the interpreter down: freeing every module and numpy's and
    OpenBLAS's threads took 15-30 ms of a 0.18 s ``kernsolve-train`` run on
    mushrooms (benchmarks/history/RESULTS.md, session 10).  Files were already closed
    by the commands (``_fileutil.output_file``)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            if stream is sys.stdout:
                _silence_stdout()
    handlers = getattr(atexit, "_ncallbacks", None)
    if handlers is not None and handlers() == 0 and threading.active_count() == 1:
        os._exit(status)
    sys.exit(status)


def _flush_stdout():
    with writing_stdout():
        sys.stdout.flush()


@contextlib.contextmanager
def writing_stdout():
    """Errors of writing standard output (a full disk) name it, as errors of
    writing a file name the file; a closed pipe stays a BrokenPipeError."""
    try:
        yield sys.stdout
    except BrokenPipeError:
        raise
    except OSError as exc:
        if exc.filename is None:
            exc.filename = "standard output"
        raise


def _flush_stdout_quietly():
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass


def _silence_stdout():
    # Python flushes stdout again at exit; point it at /dev/null so that flush
    # cannot raise a second BrokenPipeError.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def split_options(argv, flags=(), n_values=None, own_h=False):
    """Split LIBSVM-style arguments into option tokens and positional arguments.

    As in LIBSVM's tools, options come first and every argument that starts
    with ``-`` is an option; its value is the next argument whatever it looks
    like (so ``-r -1`` works). ``--`` ends the options (a kernsolve addition,
    for file names that start with ``-``). ``--name=value`` is one token.
    ``--help`` and ``--version`` end the command (HelpRequested,
    VersionRequested), and so does ``-h``: anywhere when the command has no
    ``-h`` option of its own, and without a value when it has one
    (``own_h``: svm-train's ``-h 0|1``).

    Parameters
    ----------
    argv : list of str
    flags : iterable of str
        Options that take no value (``-q``).
    n_values : dict, optional
        Options that take more than one value (``{"-y": 2}`` for svm-scale).
    own_h : bool
        Whether ``-h`` is one of the command's options (it takes a value).

    Returns
    -------
    options : list of (name, values) pairs, in command-line order
    positional : list of str
    """
    # kernsolve._params.split_options is the splitter; the commands add --help,
    # --version and their wording of a missing value.
    flags = tuple(flags) + ("--help", "--version") + (() if own_h else ("-h",))
    options, positional = _params.split_options(list(argv), flags=flags, n_values=n_values)
    for tok, values in options:
        if tok in ("--help", "-h") and (values is None or tok in flags):
            raise HelpRequested()
        if tok == "--version":
            raise VersionRequested()
        if values is None:
            k = dict(n_values or {}).get(tok, 1)
            raise UsageError(f"option {tok} needs {'a value' if k == 1 else f'{k} values'}")
    return options, positional


def parse_float(name, text):
    """A finite float option value, or a UsageError naming the option."""
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"bad value for {name}: {text!r} is not a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise UsageError(f"bad value for {name}: {text!r} is not a finite number")
    return value


def parse_int(name, text):
    """An integer option value, or a UsageError naming the option."""
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"bad value for {name}: {text!r} is not an integer") from None


def check_output_path(path):
    """Fail early (before any long computation) if ``path`` cannot be written."""
    reason = _fileutil.check_output_path(path)
    if reason is not None:
        raise CommandError(f"can't open output file {path}: {reason}")


def check_input_path(path, what="input file"):
    """Fail with ``can't open input file NAME: reason`` if ``path`` is not readable.

    Looks without reading: a regular file is opened and closed at once, but a
    FIFO, a pipe (``/dev/stdin``, ``<(...)``) or a device is only looked up,
    since opening and closing a FIFO would take the one reader its writer
    waits for, and the real read would then wait forever.  ``-`` (stdin) is
    always there.
    """
    if path == STDIN:
        return
    try:
        st = os.stat(path)
    except OSError as exc:
        raise CommandError(f"can't open {what} {path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise CommandError(f"can't open {what} {path}: Is a directory")
    if stat.S_ISREG(st.st_mode):
        try:
            with open(path, "rb"):
                pass
        except OSError as exc:
            raise CommandError(f"can't open {what} {path}: {exc.strerror or exc}") from None
    elif not os.access(path, os.R_OK):
        raise CommandError(f"can't open {what} {path}: {os.strerror(errno.EACCES)}")


def read_data(path, precomputed=False, n_jobs=None, scipy=False):
    """Read a LIBSVM data file for a command, with command-line wording in errors.

    LIBSVM files are 1-based; only a precomputed kernel (``-t 4``) has the
    index 0 (the serial number), so only then may indices start at 0.
    ``-`` reads stdin (errors then name ``<stdin>``).  ``n_jobs``: parsing
    threads (the command's ``--threads``; None: all cores).  X is kernsolve's
    own CSR (``kernsolve._sparse.Csr``: training and prediction never import
    scipy), or scipy's csr_matrix with ``scipy`` (kernsolve-scale's arithmetic).
    """
    check_input_path(path)
    source = sys.stdin.buffer if path == STDIN else path
    try:
        return read_problem(source, zero_based="auto" if precomputed else False,
                            n_jobs=n_jobs, for_training=True, _scipy=scipy)
    except DataFormatError as exc:
        msg = str(exc)
        marker = ": feature index 0 in 1-based data"
        if marker in msg:
            where = msg.split(marker, 1)[0]
            raise DataFormatError(f"{where}: feature index 0 (LIBSVM data files are "
                                  "1-based; index 0 appears only with -t 4, a "
                                  "precomputed kernel)") from None
        raise


def c_divide(a, b):
    """C's double division: x/0 is inf or nan instead of an exception."""
    try:
        return a / b
    except ZeroDivisionError:
        if a != a or a == 0:
            return float("nan")
        return float("inf") if a > 0 else float("-inf")


def regression_summary(y, predicted):
    """(mean squared error, squared correlation) summed in row order, as
    svm-train and svm-predict accumulate them, so printed digits agree."""
    error = sump = sumt = sumpp = sumtt = sumpt = 0.0
    total = 0
    for p, t in zip(np.asarray(predicted, dtype=np.float64).tolist(),
                    np.asarray(y, dtype=np.float64).tolist()):
        error += (p - t) * (p - t)
        sump += p
        sumt += t
        sumpp += p * p
        sumtt += t * t
        sumpt += p * t
        total += 1
    mse = c_divide(error, total)
    scc = c_divide((total * sumpt - sump * sumt) * (total * sumpt - sump * sumt),
                   (total * sumpp - sump * sump) * (total * sumtt - sumt * sumt))
    return mse, scc
