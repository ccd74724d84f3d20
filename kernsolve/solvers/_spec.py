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

The option ranges here are declarations (shown in the usage text and tested by
``tests/test_solver_contract.py`` against the solvers' own checks, which still
raise the messages); the solvers validate their values when they run.
"""
import importlib
import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Mapping, Optional

__all__ = ["Option", "Ref", "SolverSpec"]


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
    """One long option of a solver (``--epochs``), as declared in its spec.

    ``kind`` is ``"int"``, ``"float"`` or ``"choice"`` (one of ``choices``).
    The range of a number is ``low``/``high`` (None: unbounded), each bound
    open or closed.  ``only`` restricts the option to some names of the family
    (UDSG's ``--new-blocks``); empty means every name.
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

    def range_text(self):
        """The range as it is written in messages and the usage text (``> 0``)."""
        if self.kind == "choice":
            return "|".join(str(c) for c in self.choices)
        word = "integer " if self.kind == "int" else ""
        if self.low is not None and self.high is not None:
            return (f"{word}in {'(' if self.low_open else '['}{_g(self.low)}, "
                    f"{_g(self.high)}{')' if self.high_open else ']'}")
        if self.low is not None:
            return f"{word}{'>' if self.low_open else '>='} {_g(self.low)}"
        if self.high is not None:
            return f"{word}{'<' if self.high_open else '<='} {_g(self.high)}"
        return word.strip() or "number"

    def out_of_range(self):
        """Values just outside the range (for tests), each refused by the solver."""
        step = 1 if self.kind == "int" else 0.5
        out = []
        if self.low is not None:
            out.append(self.low if self.low_open else self.low - step)
        if self.high is not None:
            out.append(self.high if self.high_open else self.high + step)
        return [int(v) if self.kind == "int" and float(v).is_integer() else v for v in out]


def _g(value):
    return str(int(value)) if float(value).is_integer() and math.isfinite(value) else f"{value:g}"


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
        ``check(param)``: its checks that need no data (cross-option rules and
        ranges), raising ValueError; run before the data is read.
    planned_iterations : Ref or None
        ``planned_iterations(param, n)``: the iterations of a sub-problem of
        ``n`` points when the solver fixes them in advance (progress line).
    train_file : Ref or None
        ``train_file(path, param, *, chunk_bytes)``: training from a data file
        read in byte windows (``kernsolve-train --stream``), for the names in
        ``streams``.
    bias : bool
        False when the solver has no bias term: the driver trains ``--bias 0``.
    model_kind : str or None
        The kind word of its model files (``kernsolve_model <kind>``); None for
        LIBSVM model files.  ``model`` is the class that reads them
        (``from_lines``).
    estimator : str or None
        The public estimator class that runs it (``"DSGClassifier"``), named
        in messages that send a user there.
    """
    names: tuple
    svm_types: frozenset
    options: Mapping = field(default_factory=_no_options)
    median_gamma: bool = False
    binary: Optional[Callable] = None
    train: Optional[Callable] = None
    check: Optional[Callable] = None
    planned_iterations: Optional[Callable] = None
    train_file: Optional[Callable] = None
    streams: tuple = ()
    bias: bool = True
    model_kind: Optional[str] = None
    model: Optional[Ref] = None
    estimator: Optional[str] = None

    def __post_init__(self):
        # frozen: the tables are read-only too
        object.__setattr__(self, "names", tuple(self.names))
        object.__setattr__(self, "svm_types", frozenset(self.svm_types))
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))
        if self.binary is not None and self.train is not None:
            raise ValueError(f"solver {self.names[0]!r}: give binary or train, not both")

    @property
    def name(self):
        return self.names[0]

    @property
    def uses_driver(self):
        """True when LIBSVM's one-vs-one driver trains it (SMO, or a ``binary``)."""
        return self.train is None

    def option_names(self, name):
        """The option names (dashed) that solver ``name`` of this family takes."""
        return tuple(o for o, opt in self.options.items() if not opt.only or name in opt.only)
