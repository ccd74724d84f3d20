"""The solver contract: what kernsolve knows about a solver family, as data.

A :class:`SolverSpec` describes one family (``("dsg", "udsg", "cdsg")``): its
names, the SVM types it trains, its long options (:class:`Option`: a one-line
doc, the default and the range), whether it takes ``-g median``, and how it
trains.  Every consumer -- the option parser, ``kernsolve.train``, the CLI,
the estimators, ``load_model``, the grid search -- reads the specs in
``kernsolve.solvers.REGISTRY`` instead of naming solvers itself.

How a family trains is one of two shapes:

* ``binary``: a callable ``(ctx, rows, target, C) -> (coef, rho, stats)`` that
  LIBSVM's one-vs-one driver (``kernsolve.solvers.libsvm.driver``) calls for
  each binary sub-problem, as SBP and the baselines do.  ``binary=None`` with
  ``train=None`` is SMO: the driver's own LIBSVM formulations.
* ``train``: a callable ``(y, X, param, *, n_jobs, sample_weight) -> model``
  that trains the whole model, as DSG and EigenPro do.

The callables are :class:`Ref` objects, a module and an attribute imported at
the first call.  That keeps this module and the specs plain data that any
layer can import at module top (``kernsolve._params`` reads the registry to
know the solvers and their options) while the solvers' own modules import
``_params`` at their top: the specs never import a solver's code, so there is
no import cycle, and reading the registry loads no compiled solver.

The options are declared here once, each an :class:`Option`, whose
:meth:`Option.check` is the one checker of option values: LIBSVM's letters
(declared in ``kernsolve._params``) and the solvers' long options alike.
``Parameters.solver_options`` (which ``Parameters.check`` calls, before any
data is read) refuses an undeclared option, a value of the wrong type or
outside its range, with one message format, and returns the typed values with
the declared defaults filled in.  A solver reads its options from there and
checks only the rules a single range cannot express (``step * lambda < t0 +
1``) in its spec's ``check``.
"""
import importlib
import math
import numbers
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import AbstractSet, Callable, Mapping, Optional

__all__ = ["Option", "Ref", "SolverSpec", "exact_number", "is_real"]


class Ref:
    """``module:attribute``, imported at first use; calling it calls the attribute."""

    __slots__ = ("module", "name", "_target")

    def __init__(self, module, name):
        self.module = module
        self.name = name
        self._target = None

    def resolve(self):
        """The attribute itself (a function or a class)."""
        if self._target is None:
            self._target = getattr(importlib.import_module(self.module), self.name)
        return self._target

    def __call__(self, *args, **kwargs):
        return self.resolve()(*args, **kwargs)

    def __repr__(self):
        return f"Ref({self.module!r}, {self.name!r})"


@dataclass(frozen=True)
class Option:
    """One option (``--epochs``, LIBSVM's ``-c``), as declared: its doc, kind,
    default and range, and :meth:`check`, the one checker of option values.

    Solvers declare their long options in their spec; ``kernsolve._params``
    declares LIBSVM's letters and kernsolve's common long options the same way.

    ``kind`` is ``"int"``, ``"float"``, ``"flag"`` (0 or 1), ``"bool"`` (0 or
    1, True or False: LIBSVM's ``-h``, ``-b``), ``"choice"`` (one of
    ``choices``, spelled with dashes) or ``"index"`` (an integer that picks
    one of ``choices`` by position: ``-s``, ``-t``).  The range of a number is
    ``low``/``high`` (None: unbounded), each bound open or closed; a closed
    ``high=math.inf`` admits +inf (``-c``'s hard margin).  ``off`` is a value
    outside the range that means "not used" (``-v 0``).  The range binds for
    the SVM types ``svm_types`` and the kernels ``kernel_types`` only (empty:
    all), as LIBSVM checks C, nu, p, degree and gamma only where they are used
    (:meth:`binds`).  ``only`` restricts the option to some names of the
    family (UDSG's ``--new-blocks``); empty means every name.  See
    :meth:`check` for how ``noun``, ``verb``, ``unit`` and ``exact`` word the
    messages.
    """
    doc: str
    kind: str = "float"
    default: object = None          # None: no default, or one computed (see doc)
    low: Optional[float] = None
    low_open: bool = False
    high: Optional[float] = None
    high_open: bool = False
    choices: tuple = ()
    only: tuple = ()
    noun: str = ""
    verb: str = "must be"
    unit: str = ""
    off: object = None
    svm_types: tuple = ()
    kernel_types: tuple = ()
    exact: bool = False
    words: tuple = ()               # words a number may be instead (``--centers auto``)

    def bounds_text(self):
        """The range of a number as messages state it (``> 0``, ``in (0, 1]``)."""
        high = self.high if self.high is not None and math.isfinite(self.high) else None
        if self.low is not None and high is not None:
            return (f"in {'(' if self.low_open else '['}{_g(self.low)}, "
                    f"{_g(high)}{')' if self.high_open else ']'}")
        if self.low is not None:
            return self._low_text()
        if high is not None:
            return self._high_text()
        return ""

    def _low_text(self):
        return f"{'>' if self.low_open else '>='} {_g(self.low)}"

    def _high_text(self):
        return f"{'<' if self.high_open else '<='} {_g(self.high)}"

    def range_text(self):
        """The range as the usage text and the docs write it (``integer >= 1``)."""
        if self.kind == "choice":
            return "|".join(str(c) for c in self.choices)
        if self.words:
            return "|".join((self._number_text(),) + self.words)
        return self._number_text()

    def _number_text(self):
        if self.kind in ("flag", "bool"):
            return "0|1"
        if self.kind == "index":
            return f"0..{len(self.choices) - 1}"
        word = "integer" if self.kind == "int" else ""
        return " ".join(w for w in (word, self.bounds_text()) if w) or "number"

    def out_of_range(self):
        """Values just outside the range (for tests), each refused by :meth:`check`."""
        if self.kind in ("flag", "bool"):
            return [-1, 2]
        if self.kind == "index":
            return [-1, len(self.choices)]
        step = 1 if self.kind == "int" else 0.5
        out = []
        if self.low is not None:
            out.append(self.low if self.low_open else self.low - step)
        if self.high is not None and math.isfinite(self.high):
            out.append(self.high if self.high_open else self.high + step)
        return [int(v) if self.kind == "int" and float(v).is_integer() else v for v in out]

    def binds(self, svm_type, kernel_type):
        """Whether the range applies to a model of this SVM type and kernel."""
        return (not self.svm_types or svm_type in self.svm_types) and \
            (not self.kernel_types or kernel_type in self.kernel_types)

    def check(self, option, value, ranged=True):
        """``value`` of ``option`` (as written: ``--epochs``, ``-c``), typed
        (int, float, 0/1, bool or a choice), or a ValueError in the one format
        of options; ``ranged=False`` checks the type only (:meth:`binds`).

        * a value of the wrong type: ``--name: expected an integer, got 2.5``
          (``a number``, ``a finite number``, ``0 or 1`` by kind);
        * an unknown choice: ``--loss: unknown loss 'nope' (known: hinge, ...)``;
          an index out of range: ``-s: unknown svm type 7 (0..4)``;
        * a number out of range: ``--tau: must be <= 1, got 2``, the bound it
          breaks; with a ``noun``, the whole range:
          ``--damping: tau must be in (0, 1], got 0``, and ``verb`` and
          ``unit`` around it: ``-m: cache size must be > 0 MB, got 0``.

        The value after "got" is shown as given and a float out of range as
        ``%g``; ``exact`` (LIBSVM's letters) shows floats converted and written
        as the option string writes them (``-c: C must be > 0, got -0.1234567``).
        """
        if self.kind == "choice":
            # the words of a choice, in any case, joined by -, _ or spaces
            # ("squared_hinge", "Squared hinge"): the spelling with dashes
            text = "-".join(str(value).lower().replace("_", " ").split())
            if text not in self.choices:
                raise ValueError(f"{option}: unknown {self.noun or option.lstrip('-')} "
                                 f"{text!r} (known: {', '.join(self.choices)})")
            return text
        if isinstance(value, str) and value.strip().lower() in self.words:
            return value.strip().lower()
        if self.kind == "bool":
            if not (isinstance(value, bool) or is_real(value) and value in (0, 1)):
                raise ValueError(f"{option}: expected 0 or 1, got {value!r}")
            return bool(value)
        integral = self.kind in ("int", "flag", "index")
        if not is_real(value) or not math.isfinite(value) and integral:
            expected = " or ".join((_KIND_WORDS[self.kind],) + self.words)
            raise ValueError(f"{option}: expected {expected}, got {value!r}")
        if not math.isfinite(value) and not (value == self.high == math.inf
                                             and not self.high_open):
            shown = float(value) if self.exact else value
            raise ValueError(f"{option}: expected a finite number, got {shown!r}")
        if integral:
            if not isinstance(value, numbers.Integral) and not float(value).is_integer():
                raise ValueError(f"{option}: expected {_KIND_WORDS[self.kind]}, "
                                 f"got {value!r}")
            value = int(value)
            if self.kind == "flag" and value not in (0, 1):
                raise ValueError(f"{option}: expected 0 or 1, got {value!r}")
            if self.kind == "index" and not 0 <= value < len(self.choices):
                raise ValueError(f"{option}: unknown {self.noun} {value} "
                                 f"(0..{len(self.choices) - 1})")
            if self.kind != "int":
                return value
        else:
            value = float(value)
        if not ranged or value == self.off:
            return value
        low_bad = self.low is not None and (value <= self.low if self.low_open
                                            else value < self.low)
        high_bad = self.high is not None and (value >= self.high if self.high_open
                                              else value > self.high)
        if low_bad or high_bad:
            if self.noun:
                rule = f"{self.noun} {self.verb} {self.bounds_text()}{self.unit}"
            else:
                rule = f"{self.verb} {self._low_text() if low_bad else self._high_text()}"
            if integral:
                shown = str(value)
            else:
                shown = exact_number(value) if self.exact else f"{value:g}"
            raise ValueError(f"{option}: {rule}, got {shown}")
        return value


_KIND_WORDS = {"int": "an integer", "index": "an integer", "float": "a number",
               "flag": "0 or 1"}


def is_real(value):
    """A real number, not a bool: a Python or numpy number or numeric array."""
    if isinstance(value, bool):
        return False
    dtype = getattr(value, "dtype", None)
    return isinstance(value, numbers.Real) or \
        dtype is not None and getattr(dtype, "kind", "") in ("i", "u", "f")


def exact_number(value):
    """A number as option strings write it: whole numbers without ``.0``,
    others by their shortest exact ``repr``."""
    value = float(value)
    if value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(value)


def _g(value):
    return str(int(value)) if float(value).is_integer() and math.isfinite(value) else f"{value:g}"


def _for_name(table, name):
    """{letter: text} of a spec's ``ignores``/``maps`` for one solver name."""
    out = {}
    for letter, entry in table.items():
        text, names = (entry, ()) if isinstance(entry, str) else entry
        if not names or name in names:
            out[letter] = text
    return out


def _no_options():
    return MappingProxyType({})


@dataclass(frozen=True)
class SolverSpec:
    """One solver family: everything kernsolve lists about it, in one place.

    Attributes
    ----------
    names : tuple of str
        The ``--solver`` names of the family, the first one its main name.
    svm_types : frozenset of int
        The ``-s`` values it trains.
    options : mapping of str to Option
        Its long options, spelled as on the command line (``max-kernel-evals``).
    median_gamma : bool
        Whether it takes ``-g median`` (gamma by the median trick).
    binary, train : Ref or None
        How it trains (see the module docstring).
    check : Ref or None
        ``check(param)``: its checks that need no data beyond the options'
        ranges (``Parameters.solver_options`` checks those): rules between
        options and the SVM type, kernel, ... (``step * lambda < t0 + 1``),
        raising ValueError; run before the data is read.
    planned_iterations : Ref or None
        ``planned_iterations(param, n)``: the iterations of a sub-problem of
        ``n`` points when the solver fixes them in advance (progress line).
    train_file : Ref or None
        ``train_file(path, param, *, chunk_bytes)``: training from a data file
        read in byte windows (``kernsolve-train --stream``), for the names in
        ``streams``.
    train_cluster : Ref or None
        ``train_cluster(paths, param)``: training on the active Dask cluster
        from data files its workers read, one training set (``kernsolve-train
        --scheduler``, ``--add-data``).
    bias : bool
        False when the solver has no bias term: the driver trains ``--bias 0``.
    model_kind : str or None
        The kind word of its model files (``kernsolve_model <kind>``); None for
        LIBSVM model files.  ``model`` is the class that reads them
        (``from_lines``).
    estimator : str or None
        The public estimator class that runs it (``"DSGClassifier"``), named
        in messages that send a user there.
    ignores : mapping of str to str or (str, tuple)
        LIBSVM's letters (``"c"``) the solver does not use, each with what
        ends the sentence "-c: --solver eigenpro does not use ...": the
        setting and what to give instead; ``(text, names)`` when only some
        names of the family ignore it.  A value other than the letter's
        default is refused (``Parameters.check``), so no option is silently
        without effect.  :meth:`ignored` reads it for one name.
    maps : mapping of str to str or (str, tuple)
        LIBSVM's letters the solver turns into a setting of its own, each with
        the rule (``"lambda = 1/(C n)"``), ``(rule, names)`` as above; its
        training summary prints it (:meth:`mapping_note`).  :meth:`mapped`.
    """
    names: tuple
    svm_types: AbstractSet[int]   # any set; kept as a frozenset of ints
    options: Mapping = field(default_factory=_no_options)
    median_gamma: bool = False
    binary: Optional[Callable] = None
    train: Optional[Callable] = None
    check: Optional[Callable] = None
    planned_iterations: Optional[Callable] = None
    train_file: Optional[Callable] = None
    train_cluster: Optional[Callable] = None
    streams: tuple = ()
    bias: bool = True
    model_kind: Optional[str] = None
    model: Optional[Ref] = None
    estimator: Optional[str] = None
    ignores: Mapping = field(default_factory=_no_options)
    maps: Mapping = field(default_factory=_no_options)

    def __post_init__(self):
        # frozen: the tables are read-only too
        object.__setattr__(self, "names", tuple(self.names))
        # plain ints (SvmType members are ints), so messages print "0", not a name
        object.__setattr__(self, "svm_types", frozenset(int(s) for s in self.svm_types))
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))
        object.__setattr__(self, "ignores", MappingProxyType(dict(self.ignores)))
        object.__setattr__(self, "maps", MappingProxyType(dict(self.maps)))
        for name in self.names:
            if set(self.ignored(name)) & set(self.mapped(name)):
                raise ValueError(f"solver {name!r}: a letter is ignored or mapped, not both")

    def ignored(self, name):
        """{letter: what} of the LIBSVM letters solver ``name`` does not use."""
        return _for_name(self.ignores, name)

    def mapped(self, name):
        """{letter: rule} of the LIBSVM letters solver ``name`` maps."""
        return _for_name(self.maps, name)
        if self.binary is not None and self.train is not None:
            raise ValueError(f"solver {self.names[0]!r}: give binary or train, not both")

    @property
    def name(self):
        return self.names[0]

    @property
    def uses_driver(self):
        """True when LIBSVM's one-vs-one driver trains it (SMO, or a ``binary``)."""
        return self.train is None

    def mapping_note(self, letter, value, **sizes):
        """How LIBSVM's ``-letter`` became the solver's setting, for its summary
        line: ``(from -c 4: lambda = 1/(C n), n = 270)``."""
        rule = self.maps[letter]
        rule = rule if isinstance(rule, str) else rule[0]
        where = "".join(f", {k} = {v}" for k, v in sizes.items())
        return f"(from -{letter} {exact_number(value)}: {rule}{where})"

    def option_names(self, name):
        """The option names (dashed) that solver ``name`` of this family takes."""
        return tuple(o for o, opt in self.options.items() if not opt.only or name in opt.only)
