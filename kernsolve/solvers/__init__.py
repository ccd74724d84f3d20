"""The solver registry: the one place that lists every solver kernsolve has.

``REGISTRY`` is the explicit list of :class:`~kernsolve.solvers._spec.SolverSpec`,
one per family, each defined in its own folder's ``__init__.py``.  Adding a
solver is a new folder with its spec and one line here.  Everything that
names solvers reads this list: the option parser (``kernsolve._params``),
``kernsolve.train`` (``kernsolve._api``), ``kernsolve-train``'s checks and
usage text, the estimators' ``solver=`` check, ``load_model``'s model kinds
and the grid search's option names.

Importing this package imports the specs only, which are plain data (their
callables are :class:`~kernsolve.solvers._spec.Ref`: imported at the first
call), so ``kernsolve._params`` can import it at module top without a cycle
(``solvers/*/train.py`` import ``_params``) and without loading any solver.
"""
from ._spec import Option, Ref, SolverSpec
from .baselines import SPEC as _BASELINES
from .dsg import SPEC as _DSG
from .eigenpro import SPEC as _EIGENPRO
from .sbp import SPEC as _SBP
from .smo import SPEC as _SMO

__all__ = ["REGISTRY", "Option", "Ref", "SolverSpec", "DEFAULT_SOLVER", "AUTO", "spec_for",
           "known_solver",
           "solver_names", "option_names", "all_option_names", "median_gamma_solvers",
           "streaming_solvers", "model_kinds"]

# The order is the order of the names in messages ("known: smo, sbp, ...").
REGISTRY = (
    _SMO,
    _SBP,
    _DSG,
    _BASELINES,
    _EIGENPRO,
)

DEFAULT_SOLVER = REGISTRY[0].name
#: ``--solver auto``: not a solver but the rule that picks one for the data
#: (``kernsolve.solvers.auto``, which ``kernsolve.train`` runs).
AUTO = "auto"


def _by_name():
    table = {}
    for spec in REGISTRY:
        for name in spec.names:
            if name in table:
                raise RuntimeError(f"solver name {name!r} is declared twice in REGISTRY")
            table[name] = spec
    return table


_BY_NAME = _by_name()


def spec_for(name):
    """The spec of solver ``name`` (``"udsg"`` -> the DSG family's), or None."""
    return _BY_NAME.get(name) if isinstance(name, str) else None


def known_solver(name):
    """Whether ``--solver name`` is accepted: a registry name or ``auto``."""
    return name == AUTO or spec_for(name) is not None


def solver_names():
    """Every ``--solver`` name, in registry order."""
    return tuple(_BY_NAME)


def option_names(name):
    """The long options (dashed) of solver ``name``; () for an unknown name."""
    spec = spec_for(name)
    return spec.option_names(name) if spec is not None else ()


def all_option_names():
    """Every solver option name (dashed), of any solver."""
    return frozenset(o for spec in REGISTRY for o in spec.options)


def median_gamma_solvers():
    """The solver names that take ``-g median``, in registry order."""
    return tuple(n for spec in REGISTRY if spec.median_gamma for n in spec.names)


def streaming_solvers():
    """The solver names that train from a file read in byte windows (``--stream``)."""
    return tuple(n for spec in REGISTRY for n in spec.streams)


def model_kinds():
    """Model-file kind word -> the class that reads it (a Ref), for ``load_model``."""
    return {spec.model_kind: spec.model for spec in REGISTRY if spec.model_kind}
