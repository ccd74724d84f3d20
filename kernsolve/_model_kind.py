"""What every kernsolve model kind that LIBSVM's format cannot hold provides.

LIBSVM's :class:`~kernsolve.Model` is a kernel expansion in LIBSVM's layout,
read and written by ``kernsolve._model`` in LIBSVM's own file format.  The
other model kinds (DSG's random-feature blocks,
``kernsolve.solvers.dsg.model.DSGModel``; EigenPro's multi-output
expansions, ``kernsolve.solvers.eigenpro.model.EigenProModel``) own their
file format and their prediction, and derive from :class:`ModelKind`:

* ``save_model`` writes ``to_text()``; the text's first line is
  ``kernsolve_model <kind>``, and ``load_model`` hands the lines of such a file
  to the ``from_lines`` of the class registered for that kind
  (``kernsolve._model.MODEL_KINDS``);
* ``kernsolve.predict`` and ``decision_function`` call ``predict_arrays`` and
  ``decision_function``; ``predict`` reports accuracy or regression errors by
  ``is_regression``, as LIBSVM's svm-predict does;
* cross-validation and grid search (``kernsolve.model_selection``) train and
  predict through ``kernsolve.train`` and ``kernsolve.predict`` and read the
  model's size from ``n_sv`` and its training statistics from ``stats``, the
  two attributes every model (LIBSVM's :class:`~kernsolve.Model` too) has.
"""
from abc import ABC, abstractmethod

from ._fileutil import output_file

__all__ = ["ModelKind", "CallableFlag"]


class CallableFlag(int):
    """A yes/no answer that reads both as a property and as libsvm's method.

    ``model.is_probability_model`` has been kernsolve's property (a bool);
    libsvm's ``svm_model.is_probability_model()`` is a method.  The flag is an
    int equal to 0 or 1, true or false under ``if`` and ``==``, and calling it
    gives the plain bool, so both spellings work (``flag is True`` does not:
    it is not the bool object).
    """

    def __new__(cls, value):
        return super().__new__(cls, bool(value))

    def __call__(self):
        return bool(self)

    def __repr__(self):
        return repr(bool(self))

    __str__ = __repr__


class ModelKind(ABC):
    """A trained model with its own file format (first line ``kernsolve_model <kind>``)."""

    #: The word after ``kernsolve_model`` on the first line of the model file.
    kind: str | None = None

    @abstractmethod
    def to_text(self):
        """The model file's text, starting with the line ``kernsolve_model <kind>``."""

    @classmethod
    @abstractmethod
    def from_lines(cls, lines, fail):
        """The model from a file's lines (line endings removed).

        ``fail(lineno, problem)`` raises ``ModelFormatError``
        (``"<file>:<line>: <problem>"``); it is called for anything corrupt or
        truncated.
        """

    @abstractmethod
    def decision_function(self, X, n_jobs=None):
        """The model's outputs for the rows of X, shape (n_samples, n_values)."""

    @abstractmethod
    def predict_arrays(self, X, probability=False, n_jobs=None):
        """(labels, values) for ``kernsolve.predict``: the predicted labels (or
        values) and the decision values, or with ``probability`` the class
        probabilities (ValueError if the model has none)."""

    @property
    @abstractmethod
    def n_sv(self):
        """The training rows the model keeps (support vectors, kernel centres),
        as :attr:`kernsolve.Model.n_sv`; 0 for a model linear in random
        features, which keeps none."""

    @property
    @abstractmethod
    def is_regression(self):
        """True when predictions are real values (evaluated by squared error)."""

    def save(self, path):
        """Write the model file (as ``kernsolve.save_model``: atomically, see
        ``kernsolve._fileutil.output_file``)."""
        text = self.to_text()       # a model that cannot be written leaves the file alone
        with output_file(path) as f:
            f.write(text)
