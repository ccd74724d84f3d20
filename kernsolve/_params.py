"""Training parameters: one object, equivalent to LIBSVM's option string.

``parse_options("-s 0 -t 2 -c 10 --threads 2")`` and ``Parameters(...)`` are the
two spellings of the same thing; every solver reads a ``Parameters``.

The one-letter options, their meaning and their defaults are those of LIBSVM
3.37's ``svm-train``.  kernsolve adds long options: ``--solver NAME``,
``--threads N``, ``--seed S``, ``--bias 0|1`` and the options a solver declares
in its spec (``kernsolve.solvers.REGISTRY``; stored in ``Parameters.extra``).
The solver names, their options and ``-g median`` come from that registry,
which is plain data: importing it loads no solver and imports nothing of
kernsolve's, so this module can read it although the solvers import this one.
"""
import difflib
import math
import re
import shlex
from dataclasses import dataclass, field, fields, replace
from typing import Any, Union

from ._constants import (C_SVC, C_TYPES, EPSILON_SVR, FOURIER_KERNELS, GAMMA_KERNELS,
                         KERNEL_NAMES, NU_TYPES, POLY, SVM_TYPE_NAMES, spoken)
from ._threads import check_n_jobs
from ._validation import resolve_gamma
from .solvers import (AUTO, DEFAULT_SOLVER, known_solver, median_gamma_solvers, option_names,
                      solver_names, spec_for)
from .solvers._spec import Option, exact_number, is_real

SVM_TYPES = SVM_TYPE_NAMES   # -s 0..4 (names as in model files; owner: _constants)
KERNELS = KERNEL_NAMES       # -t 0..5

# Solver-specific long options are declared by each solver's spec; their
# values are stored in ``Parameters.extra`` under the Python spelling
# (dashes -> underscores, :func:`option_key`), typed int, float or str by
# their look.  ``Parameters.solver_options`` (which ``Parameters.check``
# calls) checks them against the spec's declarations and gives the solver
# their typed values with the declared defaults.


def option_key(name):
    """The ``Parameters.extra`` key of a solver option
    (``max-kernel-evals`` -> ``max_kernel_evals``)."""
    return name.replace("-", "_")


def option_name(key):
    """The command-line name of a ``Parameters.extra`` key
    (``max_kernel_evals`` -> ``max-kernel-evals``)."""
    return str(key).replace("_", "-")


# LIBSVM's letters, declared as the solvers declare their options (Option,
# kernsolve.solvers._spec): letter -> (field, declaration), in the order of
# the canonical option string.  Each range binds only where LIBSVM's
# svm_check_parameter checks it (C for C-SVC, epsilon-SVR and nu-SVR, ...);
# ``exact``: messages show the value as the option string writes it.
_LETTERS = {
    "s": ("svm_type", Option("SVM type", kind="index", default=0, choices=SVM_TYPES,
                             noun="svm type")),
    "t": ("kernel_type", Option("kernel type", kind="index", default=2, choices=KERNELS,
                                noun="kernel type")),
    "d": ("degree", Option("degree of the polynomial kernel", kind="int", default=3, low=0,
                           noun="degree", kernel_types=(POLY,))),
    "g": ("gamma", Option("gamma of the kernel (default 1/num_features)", low=0,
                          noun="gamma", kernel_types=tuple(GAMMA_KERNELS), exact=True)),
    "r": ("coef0", Option("coef0 of the kernel", default=0.0, exact=True)),
    "c": ("C", Option("cost of C-SVC, epsilon-SVR and nu-SVR", default=1.0, low=0,
                      low_open=True, high=math.inf, noun="C", svm_types=tuple(C_TYPES),
                      exact=True)),
    "n": ("nu", Option("nu of nu-SVC, one-class SVM and nu-SVR", default=0.5, low=0,
                       low_open=True, high=1, noun="nu", svm_types=tuple(NU_TYPES),
                       exact=True)),
    "p": ("p", Option("epsilon of epsilon-SVR", default=0.1, low=0, noun="epsilon",
                      svm_types=(EPSILON_SVR,), exact=True)),
    "m": ("cache_size", Option("kernel cache in MB", default=100.0, low=0, low_open=True,
                               noun="cache size", unit=" MB", exact=True)),
    "e": ("eps", Option("stopping tolerance", default=1e-3, low=0, low_open=True,
                        noun="eps", exact=True)),
    "h": ("shrinking", Option("shrinking heuristics", kind="bool", default=True)),
    "b": ("probability", Option("train a probability model", kind="bool", default=False)),
    "v": ("n_folds", Option("n-fold cross-validation (0: off)", kind="int", default=0,
                            low=2, off=0, noun="n-fold cross validation", verb="needs n")),
    "q": ("quiet", Option("quiet mode (no value)", kind="bool", default=False)),
}


def letter_option(letter):
    """The declaration (:class:`~kernsolve.solvers._spec.Option`) of LIBSVM's
    option ``-letter``; the estimators derive their constraints from it."""
    return _LETTERS[letter][1]


# kernsolve's long options: name -> (field, parse kind).  --solver is checked
# against the registry, --threads by kernsolve._threads, --seed below, --bias
# by its declaration.
_LONG = {
    "solver": ("solver", "str"),
    "threads": ("n_jobs", "int"),
    "seed": ("seed", "int"),
    "bias": ("bias", "bool"),
}
_BIAS = Option("train with the bias term", kind="bool", default=True)
# Long options that take no value -> field (set to True).
_LONG_FLAGS = {"libsvm-folds": "libsvm_folds", "cold": "cold", "warm": "warm"}
_LIBSVM_FOLDS = Option("svm-train's glibc rand() folds (no value)", kind="bool",
                       default=False)
_COLD = Option("cross-validation: every fit computes its own kernel values (no value)",
               kind="bool", default=False)
_WARM = Option("grid search: each fold's fit at the next C starts from the previous C's "
               "solution (no value)", kind="bool", default=False)
# The options of the grammar that take no value (for the splitters).
FLAGS = ("-q",) + tuple("--" + name for name in _LONG_FLAGS)
# Field -> the option that sets it, for messages about a Parameters built in Python.
_FIELD_OPTION = {f: "-" + k for k, (f, _) in _LETTERS.items()}
_FIELD_OPTION.update({f: "--" + k for k, (f, _) in _LONG.items()})
_FIELD_OPTION["weight"] = "-w"

# The declared options in the order Parameters.check checks them (LIBSVM's
# svm_check_parameter's, then kernsolve's): (field, option as written, Option).
_CHECKED = tuple((_LETTERS[k][0], "-" + k, _LETTERS[k][1]) for k in "stdgrmecnphbq") + (
    ("bias", "--bias", _BIAS), ("libsvm_folds", "--libsvm-folds", _LIBSVM_FOLDS),
    ("cold", "--cold", _COLD), ("warm", "--warm", _WARM), ("n_folds", "-v", _LETTERS["v"][1]))

_INT_RE = re.compile(r"^[+-]?\d+$")


@dataclass
class Parameters:
    """Training parameters (LIBSVM's ``svm_parameter`` plus kernsolve's options).

    Attributes
    ----------
    svm_type : int
        ``-s``: 0 C-SVC, 1 nu-SVC, 2 one-class SVM, 3 epsilon-SVR, 4 nu-SVR.
    kernel_type : int
        ``-t``: 0 linear, 1 polynomial, 2 RBF, 3 sigmoid, 4 precomputed,
        5 Laplacian (kernsolve's; LIBSVM cannot read such models).
    degree : int
        ``-d``, polynomial degree (default 3).
    gamma : float or None
        ``-g``; None (or ``-g 0``, as in LIBSVM) means 1/num_features at training.
    coef0 : float
        ``-r`` (default 0).
    C : float
        ``-c``, cost of C-SVC, epsilon-SVR and nu-SVR (default 1).
    nu : float
        ``-n``, nu of nu-SVC, one-class SVM and nu-SVR (default 0.5).
    p : float
        ``-p``, epsilon of epsilon-SVR (default 0.1).
    cache_size : float
        ``-m``, kernel cache in MB (default 100).
    eps : float
        ``-e``, stopping tolerance (default 0.001).
    shrinking : bool
        ``-h`` 0|1 (default 1).
    probability : bool
        ``-b`` 0|1: train a probability model (default 0).
    weight : dict
        ``-wi w``: {label: weight}; C of class ``label`` becomes ``weight * C``.
        Repeating a label multiplies the weights, as LIBSVM does.
    quiet : bool
        ``-q``.
    n_folds : int
        ``-v n``: n-fold cross-validation instead of a model (0 = off).
    solver : str
        ``--solver``: a name of ``kernsolve.solvers.REGISTRY`` (default ``"smo"``).
    bias : bool
        ``--bias 0|1``: train with the unregularised bias term (default 1).
    n_jobs : int or None
        ``--threads``: thread count, scikit-learn's ``n_jobs`` rule.
    seed : int
        ``--seed``: seed of kernsolve's counter-based RNG (default 0).
    libsvm_folds : bool
        ``--libsvm-folds`` (no value): draw the cross-validation folds and the
        ``-b 1`` internal folds from glibc's ``rand()`` as svm-train does on
        Linux (``kernsolve.solvers.libsvm.libsvm_rand``) instead of from
        ``--seed``, so ``-v`` and ``-b 1`` give svm-train's numbers.
    cold : bool
        ``--cold`` (no value): cross-validation and grid search run every
        fit on its own, computing its own kernel values, instead of sharing
        one kernel matrix between the fits of a kernel (the same results;
        doc/cross-validation.md).
    warm : bool
        ``--warm`` (no value): grid search runs the C values of each fold in
        increasing order, each fit starting from the previous C's solution
        (C-SVC, epsilon-SVR, nu-SVR; rates equal the cold ones within the
        solver's tolerance, not to the bit).  Ignored with ``--cold``.
    extra : dict
        Solver-specific options, keys in Python spelling (``max_kernel_evals``).
    """
    svm_type: int = 0            # -s, index into SVM_TYPES
    kernel_type: int = 2         # -t, index into KERNELS
    degree: int = 3              # -d
    gamma: float | None = None   # -g; None means 1/num_features at training time
    coef0: float = 0.0           # -r
    C: float = 1.0               # -c
    nu: float = 0.5              # -n
    p: float = 0.1               # -p (epsilon of epsilon-SVR)
    cache_size: float = 100.0    # -m, MB
    eps: float = 1e-3            # -e
    shrinking: bool = True       # -h
    probability: bool = False    # -b
    weight: dict = field(default_factory=dict)  # -wi: {label: weight}
    quiet: bool = False          # -q
    n_folds: int = 0             # -v (0 = no cross-validation)
    solver: str = DEFAULT_SOLVER  # --solver
    bias: bool = True            # --bias 0|1 (SMO/SBP without the bias term when False)
    n_jobs: int | None = None    # --threads
    seed: int = 0                # --seed
    libsvm_folds: bool = False   # --libsvm-folds (svm-train's glibc rand() folds)
    cold: bool = False           # --cold (cross-validation: no kernel values shared)
    warm: bool = False           # --warm (grid search: alpha seeding along C)
    extra: dict = field(default_factory=dict)  # solver-specific long options

    @property
    def svm_type_name(self):
        """LIBSVM's name of the SVM type (``"c_svc"``, ...), as in model files."""
        return SVM_TYPES[self.svm_type]

    @property
    def kernel_name(self):
        """LIBSVM's name of the kernel (``"rbf"``, ...), as in model files."""
        return KERNELS[self.kernel_type]

    def resolved_gamma(self, n_features, X=None):
        """gamma; LIBSVM's default 1/n_features when it is None or 0 (0 if no
        features); for ``median`` the median trick on the rows of ``X``
        (:func:`kernsolve._validation.resolve_gamma`, this kernel and seed)."""
        return resolve_gamma(self.gamma, n_features, X, kernel_type=self.kernel_type,
                             seed=self.seed)

    def copy(self, **changes):
        """A copy (dicts copied too) with some fields changed."""
        out = replace(self, **changes)
        if "weight" not in changes:
            out.weight = dict(self.weight)
        if "extra" not in changes:
            out.extra = dict(self.extra)
        return out

    def to_options(self):
        """The canonical option string: only non-default values, in a fixed order.

        ``parse_options(p.to_options()) == p`` for every valid ``p``.
        """
        default = Parameters()
        out = []
        for letter, (name, opt) in _LETTERS.items():
            value = getattr(self, name)
            if value == getattr(default, name) or (name == "gamma" and value is None):
                continue
            if "-" + letter in FLAGS:
                out.append("-" + letter)
            elif opt.kind == "bool":
                out.append(f"-{letter} {int(bool(value))}")
            elif opt.kind in ("int", "index"):
                out.append(f"-{letter} {int(value)}")
            elif value == "median":
                out.append(f"-{letter} median")
            else:
                out.append(f"-{letter} {exact_number(value)}")
        for label, w in self.weight.items():
            out.append(f"-w{_fmt_label(label)} {exact_number(w)}")
        for name, (attr, kind) in _LONG.items():
            value = getattr(self, attr)
            if value == getattr(default, attr):
                continue
            if kind == "bool":
                value = int(bool(value))
            out.append(f"--{name} {value}")
        for name, attr in _LONG_FLAGS.items():
            if getattr(self, attr):
                out.append(f"--{name}")
        for key in sorted(self.extra):
            value = self.extra[key]
            text = exact_number(value) if isinstance(value, float) else str(value)
            out.append(f"--{option_name(key)} {shlex.quote(text)}")
        return " ".join(out)

    def check(self, n_features=None):
        """Raise ValueError naming the problem if invalid (see :func:`check_parameters`)."""
        _check(self, n_features)
        return self

    def solver_options(self):
        """The solver's options: ``extra`` checked against the solver's spec.

        A dict with the ``extra`` key of every option the solver takes
        (``max_kernel_evals``): the value given, typed (int, float, 0/1 or a
        choice), else the spec's default (None when the solver computes it).
        Raises ValueError naming an undeclared option or a value out of its
        declared range (:meth:`Option.check <kernsolve.solvers._spec.Option.check>`,
        in declaration order).  ``extra`` keys may be in either spelling
        (``max_kernel_evals`` or ``max-kernel-evals``).
        """
        spec = spec_for(self.solver)
        if spec is None:
            raise ValueError(_unknown_solver(self.solver))
        if not isinstance(self.extra, dict):
            raise ValueError(f"extra: expected a dict of solver options, "
                             f"got {type(self.extra).__name__}")
        declared = spec.option_names(self.solver)
        given = {}
        for key, value in self.extra.items():
            dashed = option_name(key)
            if dashed not in declared:
                raise ValueError(f"--{dashed}: not an option of solver {self.solver!r}")
            given[dashed] = value
        return {option_key(o): spec.options[o].check("--" + o, given[o]) if o in given
                else spec.options[o].default for o in declared}


#: What ``parse_options`` takes, and so every ``options`` argument of the API:
#: an option string, its tokens, a dict of field names, or a Parameters.
OptionsLike = Union[str, list[str], tuple[str, ...], dict[str, Any], Parameters, None]


def _fmt_label(label):
    if isinstance(label, float) and label.is_integer():
        return str(int(label))
    return str(label)


def _parse_number(option, text, kind):
    """Convert an option value (of ``kind``, an Option's or ``"str"``), or raise
    ValueError naming the option and value."""
    if kind in ("int", "index"):
        if not _INT_RE.match(text.strip()):
            raise ValueError(f"{option}: expected an integer, got {text!r}")
        return int(text)
    if kind == "bool":
        if text.strip() not in ("0", "1"):
            raise ValueError(f"{option}: expected 0 or 1, got {text!r}")
        return text.strip() == "1"
    if kind == "float":
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{option}: expected a number, got {text!r}") from None
        if not math.isfinite(value):
            raise ValueError(f"{option}: expected a finite number, got {text!r}")
        return value
    return text


def _typed_extra(text):
    """Solver option values: int, float or string, by their look."""
    t = text.strip()
    if _INT_RE.match(t):
        return int(t)
    try:
        value = float(t)
    except ValueError:
        return text
    if not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {text!r}")
    return value


def _tokens(options):
    if isinstance(options, str):
        try:
            return shlex.split(options)
        except ValueError as exc:
            raise ValueError(f"cannot split the option string: {exc}") from None
    out = []
    for tok in options:
        if not isinstance(tok, str):
            tok = str(tok)
        out.append(tok)
    return out


def _split(argv, flags, n_values, end_marker):
    """The option splitter: (pairs, end, start) for the token list ``argv``.

    ``pairs`` are (name, values) in order, ``values`` None for a last option
    that lacks them; ``argv[:end]`` are the option tokens, ``argv[start:]``
    the positional arguments.
    """
    i = 0
    pairs = []
    while i < len(argv):
        tok = argv[i]
        if tok == "--" and end_marker:
            return pairs, i, i + 1
        if not tok.startswith("-") or tok == "-":
            break
        if tok in flags:
            pairs.append((tok, []))
            i += 1
            continue
        if tok.startswith("--") and "=" in tok:
            name, value = tok.split("=", 1)
            pairs.append((name, [value]))
            i += 1
            continue
        k = n_values.get(tok, 1)
        if i + k >= len(argv):
            pairs.append((tok, None))
            return pairs, len(argv), len(argv)
        pairs.append((tok, argv[i + 1:i + 1 + k]))
        i += 1 + k
    return pairs, i, i


def split_options(argv, flags=FLAGS, n_values=None, end_marker=True):
    """Split LIBSVM-style arguments into options and positional arguments.

    The one splitter of kernsolve's option strings and command lines.  As in
    LIBSVM's tools, options come first and every argument that starts with
    ``-`` is an option; its value is the next argument whatever it looks like
    (so ``-r -1`` works).  ``--`` ends the options (a kernsolve addition, for
    file names that start with ``-``; not when ``end_marker`` is False).
    ``--name=value`` is one token.

    Parameters
    ----------
    argv : str or list of str
    flags : iterable of str
        Options that take no value (``-q``, ``--libsvm-folds``).
    n_values : dict, optional
        Options that take more than one value (``{"-y": 2}`` for svm-scale).
    end_marker : bool
        Whether ``--`` ends the options.

    Returns
    -------
    options : list of (name, values) pairs, in command-line order
        ``values`` is a list of strings, or None for a last option whose
        value(s) are missing (the caller words that error).
    positional : list of str
    """
    argv = _tokens(argv)
    pairs, _, start = _split(argv, frozenset(flags), dict(n_values or {}), end_marker)
    return pairs, argv[start:]


def split_arguments(argv):
    """Split a command line into (option tokens, positional arguments).

    Options come first, as in LIBSVM's tools (:func:`split_options`, with
    ``-q`` and ``--libsvm-folds`` the flags); a last option without its value
    stays among the option tokens, for :func:`parse_options` to name.
    """
    argv = _tokens(argv)
    _, end, start = _split(argv, frozenset(FLAGS), {}, True)
    return argv[:end], argv[start:]


def parse_options(options=None):
    """Build :class:`Parameters` from an option string, a token list, a dict or Parameters.

    Parameters
    ----------
    options : str, list of str, dict, Parameters or None
        ``"-s 0 -t 2 -c 10 --threads 2"``; ``["-c", "10"]``;
        ``{"C": 10, "kernel_type": "rbf", "batch_size": 64}`` (field names of
        :class:`Parameters`, svm/kernel types as numbers or LIBSVM names, and
        solver options by name); a ``Parameters`` (copied).

    Returns
    -------
    Parameters
        Checked with :func:`check_parameters`.

    Raises
    ------
    ValueError
        One line naming the option and the value, e.g.
        ``-c: C must be > 0, got -1``.
    """
    if options is None:
        param = Parameters()
    elif isinstance(options, Parameters):
        param = options.copy()
    elif isinstance(options, dict):
        param = _from_dict(options)
    elif isinstance(options, (str, list, tuple)):
        param = _from_tokens(_tokens(options))
    else:
        raise ValueError(f"options must be a string, a list of tokens, a dict or "
                         f"Parameters, got {type(options).__name__}")
    param.check()
    return _normalize(param)


def _normalize(param):
    """Give every field its canonical Python type (after the checks passed)."""
    for attr in ("svm_type", "kernel_type", "degree", "n_folds"):
        setattr(param, attr, int(getattr(param, attr)))
    for attr in ("coef0", "C", "nu", "p", "cache_size", "eps"):
        setattr(param, attr, float(getattr(param, attr)))
    if param.gamma is not None and param.gamma != "median":
        param.gamma = float(param.gamma)
    for attr in ("shrinking", "probability", "quiet", "bias", "libsvm_folds", "cold",
                 "warm"):
        setattr(param, attr, bool(getattr(param, attr)))
    if param.n_jobs is not None:
        param.n_jobs = int(param.n_jobs)
    param.seed = int(param.seed)
    param.weight = {_label_key(float(k) if not isinstance(k, int) else k): float(w)
                    for k, w in param.weight.items()}
    return param


def _from_tokens(argv):
    param = Parameters()
    long_values = {}
    i = 0
    n = len(argv)
    while i < n:
        tok = argv[i]
        if tok.startswith("--") and len(tok) > 2:
            name, eq, value = tok[2:].partition("=")
            if name in _LONG_FLAGS:
                if eq:
                    raise ValueError(f"--{name}: takes no value, got {value!r}")
                setattr(param, _LONG_FLAGS[name], True)
                i += 1
                continue
            if not eq:
                if i + 1 >= n:
                    raise ValueError(f"--{name}: missing value")
                value = argv[i + 1]
                i += 2
            else:
                i += 1
            long_values[name] = value
            continue
        if not tok.startswith("-") or len(tok) < 2:
            raise ValueError(f"unexpected argument {tok!r} (options start with '-')")
        letter = tok[1]
        if letter == "q" and tok == "-q":
            param.quiet = True
            i += 1
            continue
        if letter == "w":
            label_text = tok[2:]
            if i + 1 >= n:
                raise ValueError(f"{tok}: missing value")
            label = _parse_label(tok, label_text)
            w = _parse_number(tok, argv[i + 1], "float")
            key = _label_key(label)
            param.weight[key] = param.weight.get(key, 1.0) * w
            i += 2
            continue
        if letter not in _LETTERS or len(tok) != 2:
            raise ValueError(unknown_option(tok))
        name, opt = _LETTERS[letter]
        if i + 1 >= n:
            raise ValueError(f"{tok}: missing value")
        if name == "gamma" and argv[i + 1].strip().lower() == "median":
            param.gamma = "median"   # the median trick (solvers on random features)
            i += 2
            continue
        value = _parse_number(tok, argv[i + 1], opt.kind)
        if name == "gamma" and value == 0:
            value = None  # LIBSVM: -g 0 means 1/num_features
        setattr(param, name, value)
        i += 2
    # --solver first, so that the solver's options are known.
    if "solver" in long_values:
        param.solver = long_values.pop("solver").strip().lower()
        if not known_solver(param.solver):
            raise ValueError(_unknown_solver(param.solver))
    for name, value in long_values.items():
        if name in _LONG:
            attr, kind = _LONG[name]
            setattr(param, attr, _parse_number("--" + name, value, kind))
            continue
        _set_extra(param, name, value)
    return param


def did_you_mean(token, known):
    """`` (did you mean --epochs?)`` for an option close to one of ``known``
    (difflib's ratio >= 0.75: a letter or two mistyped, left out or added),
    else "".  Single letters are never close to each other (``-z`` is not
    ``-s``)."""
    match = difflib.get_close_matches(token, sorted(set(known)), n=1, cutoff=0.75)
    return f" (did you mean {match[0]}?)" if match else ""


def grammar_option_names():
    """Every option the grammar knows: LIBSVM's letters, kernsolve's long
    options and every solver's options."""
    names = ["-" + k for k in _LETTERS] + ["--" + k for k in _LONG] + \
        ["--" + k for k in _LONG_FLAGS]
    return names + ["--" + o for s in solver_names() for o in option_names(s)]


def unknown_option(token):
    """``unknown option: --epoch (did you mean --epochs?)``."""
    return f"unknown option: {token}{did_you_mean(token, grammar_option_names())}"


def _unknown_solver(name):
    return (f"--solver: unknown solver {name!r} "
            f"(known: {', '.join(solver_names() + (AUTO,))})")


def _auto_takes_no_option(dashed):
    """``--epochs: --solver auto chooses the solver and its options; ...``."""
    owners = sorted(s for s in solver_names() if dashed in option_names(s))
    return (f"--{dashed}: --solver auto chooses the solver and its options; name the "
            f"solver to set it" + (f" (it belongs to {', '.join(owners)})" if owners else ""))


def _set_extra(param, name, value):
    dashed = option_name(name)
    if dashed not in option_names(param.solver):
        owners = sorted(s for s in solver_names() if dashed in option_names(s))
        if owners and param.solver == AUTO:
            raise ValueError(_auto_takes_no_option(dashed))
        if owners:
            raise ValueError(f"--{dashed}: not an option of solver {param.solver!r} "
                             f"(it belongs to {', '.join(owners)})")
        raise ValueError(unknown_option(f"--{dashed}"))
    if isinstance(value, str):
        try:
            value = _typed_extra(value)
        except ValueError as exc:
            raise ValueError(f"--{dashed}: {exc}") from None
    param.extra[option_key(dashed)] = value


def _parse_label(option, text):
    if not text:
        raise ValueError(f"{option}: missing class label (write -w<label> <weight>, e.g. -w1 2)")
    t = text.strip()
    if _INT_RE.match(t):
        return int(t)
    try:
        value = float(t)
    except ValueError:
        raise ValueError(f"{option}: class label must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"{option}: class label must be finite, got {text!r}")
    return value


def _label_key(label):
    if isinstance(label, float) and label.is_integer():
        return int(label)
    return label


_NAMED = {"svm_type": SVM_TYPES, "kernel_type": KERNELS}
_ALIASES = {"kernel": "kernel_type", "threads": "n_jobs", "cache": "cache_size",
            "c": "C", "epsilon": "p", "tol": "eps", "class_weight": "weight",
            "n_fold": "n_folds", "nr_fold": "n_folds"}


def _from_dict(d):
    param = Parameters()
    names = {f.name for f in fields(Parameters)}
    pending = dict(d)
    if "solver" in pending:
        param.solver = str(pending.pop("solver")).strip().lower()
        if not known_solver(param.solver):
            raise ValueError(_unknown_solver(param.solver))
    for key, value in pending.items():
        if not isinstance(key, str):
            raise ValueError(f"option names must be strings, got {key!r}")
        attr = _ALIASES.get(key, key)
        if attr == "kernel_type" and key == "kernel" and value == "poly":
            value = "polynomial"
        if attr in _NAMED and isinstance(value, str):
            table = _NAMED[attr]
            v = value.strip().lower()
            if v == "poly":
                v = "polynomial"
            if v not in table:
                raise ValueError(f"{_FIELD_OPTION[attr]}: unknown {attr.replace('_', ' ')} "
                                 f"{value!r} (known: {', '.join(table)})")
            value = table.index(v)
        if attr == "extra":
            for k, v in dict(value).items():
                _set_extra(param, k, v)
            continue
        if attr == "weight":
            value = {_label_key(k): v for k, v in dict(value or {}).items()}
        elif attr == "gamma" and value is not None and not isinstance(value, str) \
                and is_real(value) and float(value) == 0:
            value = None
        if attr in names:
            setattr(param, attr, value)
        else:
            _set_extra(param, key, value)
    return param


def check_parameters(param, n_features=None):
    """Return None if ``param`` is valid, else a one-line message naming the problem.

    The checks are LIBSVM 3.37's ``svm_check_parameter`` (C, nu, p only for the
    SVM types that use them) plus kernsolve's: finite numbers, the solver
    name, thread count, seed, fold count, ``n_features`` and the solver
    options against their declarations in the solver's spec (names, types,
    ranges); the solver's own rules between options are its spec's ``check``.
    Data-dependent checks (infeasible nu, one class only) belong to training.

    This is LIBSVM's message-returning contract, kept for this public
    function; :meth:`Parameters.check` (and every solver) raises ValueError
    with the same message.
    """
    try:
        _check(param, n_features)
    except ValueError as exc:
        return str(exc)
    return None


def _check(param, n_features=None):
    """The checks of :func:`check_parameters`; raise ValueError with its message."""
    if not isinstance(param, Parameters):
        raise ValueError(f"expected Parameters, got {type(param).__name__}")

    checked = {}
    for attr, option, opt in _CHECKED:
        value = getattr(param, attr)
        if attr == "gamma" and (value is None or value == "median"):
            if value == "median":
                _check_median_gamma(param, checked["kernel_type"])
            continue
        checked[attr] = opt.check(option, value, ranged=opt.binds(checked.get("svm_type"),
                                                                  checked.get("kernel_type")))
        if attr == "C" and checked[attr] == math.inf:
            _check_hard_margin(param, checked["svm_type"])
    if not isinstance(param.weight, dict):
        raise ValueError(f"-w: weights must be a dict {{label: weight}}, "
                         f"got {type(param.weight).__name__}")
    for label, w in param.weight.items():
        if isinstance(label, bool) or not is_real(label) or not math.isfinite(float(label)):
            raise ValueError(f"-w: class label must be a finite number, got {label!r}")
        if isinstance(w, bool) or not is_real(w) or not math.isfinite(float(w)):
            raise ValueError(f"-w{_fmt_label(label)}: weight must be a finite number, got {w!r}")
        if float(w) < 0:
            raise ValueError(f"-w{_fmt_label(label)}: weight must be >= 0, got {exact_number(w)}")
    if not known_solver(param.solver):
        raise ValueError(_unknown_solver(param.solver))
    check_n_jobs(param.n_jobs, "--threads")
    seed = param.seed
    if isinstance(seed, bool) or not hasattr(seed, "__index__"):
        raise ValueError(f"--seed: expected an integer, got {seed!r}")
    if not 0 <= int(seed) < 2 ** 64:
        raise ValueError(f"--seed: must be in [0, 2**64), got {seed}")
    if param.solver == AUTO:      # the chosen solver's options are checked when it trains
        if param.extra:
            raise ValueError(_auto_takes_no_option(option_name(next(iter(param.extra)))))
        return _check_n_features(n_features)
    param.solver_options()        # declared, typed and in range (the spec's check)
    _check_used_letters(param)
    _check_n_features(n_features)


def _check_n_features(n_features):
    if n_features is not None:
        if isinstance(n_features, bool) or not hasattr(n_features, "__index__") \
                or n_features < 0:
            raise ValueError(f"n_features must be a non-negative integer, got {n_features!r}")


def _check_used_letters(param):
    """Refuse a LIBSVM letter the solver does not use (its spec's ``ignores``)
    when given a value other than its default: it would change nothing."""
    spec = spec_for(param.solver)
    for letter, what in spec.ignored(param.solver).items():
        field_name, opt = _LETTERS[letter]
        value = getattr(param, field_name)
        if value != opt.default:
            shown = int(value) if opt.kind == "bool" else exact_number(value)
            raise ValueError(f"-{letter} {shown}: --solver {param.solver} does not use {what}")


def _check_median_gamma(param, t):
    if param.solver not in median_gamma_solvers():
        raise ValueError(f"-g median: the median trick is available to the solvers "
                         f"{', '.join(median_gamma_solvers())}, not {param.solver!r}")
    if t not in FOURIER_KERNELS:    # its distance is that of the random features
        raise ValueError(f"-g median: the median trick sets gamma for the "
                         f"{spoken(KERNELS[k] for k in FOURIER_KERNELS)} kernels "
                         f"({', '.join(f'-t {k}' for k in FOURIER_KERNELS)}), "
                         f"not for -t {t} ({KERNELS[t]})")


def _check_hard_margin(param, s):
    """C = inf: SMO's C-SVC and epsilon-SVR take an unbounded box (as LIBSVM
    and scikit-learn do); nu-SVR's starting point (C * nu * l / 2) and the
    other solvers' step sizes need a finite C."""
    spec = spec_for(param.solver)
    if param.solver == AUTO and s in (C_SVC, EPSILON_SVR):    # auto chooses SMO for it
        return
    if s not in (C_SVC, EPSILON_SVR) or spec is None or not spec.uses_driver \
            or spec.binary is not None:
        raise ValueError(f"-c: C = inf (the hard margin) is for C-SVC and epsilon-SVR "
                         f"with solver {DEFAULT_SOLVER!r} only; give a finite C")


def check_parameters_or_raise(param, n_features=None):
    """:func:`check_parameters`, raising ValueError with its message."""
    _check(param, n_features)
    return param
