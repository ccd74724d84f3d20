"""The exceptions and warnings kernsolve raises, and their scikit-learn twins.

* :class:`DataFormatError`, :class:`ModelFormatError`: malformed data and
  model files (ValueErrors naming the file and line).
* :class:`NotFittedError`, :class:`ConvergenceWarning`,
  :class:`DataConversionWarning`: the estimators' (scikit-learn's names).

This module is the one owner of kernsolve's relation to scikit-learn's classes
and version.  kernsolve never imports scikit-learn (it must work without it,
and ``import kernsolve`` stays cheap); a program that catches scikit-learn's
classes (``except sklearn.exceptions.NotFittedError``,
``pytest.warns(sklearn.exceptions.ConvergenceWarning)``, a ``-W`` filter) or
follows its deprecations has imported scikit-learn, and then:

* :func:`twin` gives the class to raise or warn with: a subclass of
  kernsolve's class and of scikit-learn's class of the same name, so both
  ``except`` clauses catch it;
* :func:`sklearn_version` gives the version of the scikit-learn in use, for
  the deprecation warnings scikit-learn's own classes emit from that version on.
"""
import re
import sys

__all__ = ["DataFormatError", "ModelFormatError", "NotFittedError", "ConvergenceWarning",
           "IterationLimitWarning", "DataConversionWarning", "twin", "sklearn_version"]


class DataFormatError(ValueError):
    """A LIBSVM-format data file is malformed; the message is ``file:line: problem``."""


class ModelFormatError(ValueError):
    """A model file is corrupt or truncated; the message names the file and line."""


class NotFittedError(ValueError, AttributeError):
    """Raised when an estimator is used before ``fit``.

    Both a ValueError and an AttributeError, as scikit-learn's own.
    """


class ConvergenceWarning(UserWarning):
    """The solver stopped at ``max_iter`` before reaching the tolerance."""


class IterationLimitWarning(RuntimeWarning):
    """A solver stopped at its iteration limit (LIBSVM's "reaching max number
    of iterations"); its model's ``stats["status"]`` says so too."""


class DataConversionWarning(UserWarning):
    """The input had to be reshaped or converted (e.g. a column-vector y)."""


_TWINS: dict[type, type] = {}


def twin(cls):
    """The class to raise or warn with instead of kernsolve's ``cls``.

    ``cls`` itself, or, when the program has imported scikit-learn, a subclass
    of ``cls`` and of ``sklearn.exceptions.<cls.__name__>`` (made once).
    """
    module = sys.modules.get("sklearn.exceptions")
    theirs = getattr(module, cls.__name__, None)
    if not isinstance(theirs, type) or not issubclass(theirs, BaseException) \
            or issubclass(cls, theirs):
        return cls
    both = _TWINS.get((cls, theirs))
    if both is None:
        both = type(cls.__name__, (cls, theirs), {"__module__": cls.__module__,
                                                  "__doc__": cls.__doc__})
        _TWINS[(cls, theirs)] = both
    return both


def sklearn_version():
    """(major, minor) of the scikit-learn the program has imported, else None."""
    module = sys.modules.get("sklearn")
    match = re.match(r"(\d+)\.(\d+)", str(getattr(module, "__version__", "")))
    return (int(match.group(1)), int(match.group(2))) if match else None
