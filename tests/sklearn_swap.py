"""pytest plugin: scikit-learn's own SVM tests with kernsolve's classes swapped in.

Loaded with ``-p sklearn_swap`` (tests/ on the path) by
``tests/test_sklearn_suite.py``, which runs scikit-learn's
``sklearn/svm/tests/test_svm.py`` and ``test_sparse.py`` in a child pytest.
Before the test modules are imported it replaces ``sklearn.svm.SVC, NuSVC,
SVR, NuSVR, OneClassSVM`` by kernsolve's (the modules use ``svm.SVC``), and it
marks the tests of :data:`EXPECTED_FAILURES` as strict expected failures: a
listed test that passes fails the run, so the list stays exact.

Run by hand, from a folder without a pytest configuration (scikit-learn's
``conftest.py`` provides the fixtures)::

    SK=$(python -c "import os, sklearn; print(os.path.dirname(sklearn.__file__))")/svm/tests
    PYTHONPATH=REPO:REPO/tests python -m pytest -q -p sklearn_swap -p no:cacheprovider \\
        $SK/test_svm.py $SK/test_sparse.py
"""
import re

import pytest
import sklearn.svm

import kernsolve

SWAPPED = ("SVC", "NuSVC", "SVR", "NuSVR", "OneClassSVM")

for _name in SWAPPED:
    setattr(sklearn.svm, _name, getattr(kernsolve, _name))

# The deliberate differences (doc/estimators.md, "Differences from scikit-learn").
_KEEPS_PROBABILITY = ("kernsolve keeps probability (and probA_/probB_), which "
                      "scikit-learn 1.9 deprecated: it gives no FutureWarning")
_SCALE_OVERFLOW = ("kernsolve refuses X before training when gamma='scale' needs X.var() "
                   "and it overflows float64, naming that cause; scikit-learn trains a "
                   "NaN model and refuses it afterwards ('The dual coefficients or "
                   "intercepts are not finite')")

_WRONG_SHAPE = ("kernsolve refuses at fit a callable kernel whose matrix does not have one "
                "row and one column per sample (here 1x1 for 2 samples): scikit-learn trains "
                "on it, a silent wrong model, and fails only at prediction")

#: (test file, test function, regular expression its parameter id must match
#: or None for every parametrization, reason)
EXPECTED_FAILURES = (
    ("test_svm.py", "test_probability_raises_futurewarning", None, _KEEPS_PROBABILITY),
    ("test_svm.py", "test_svc_nusvc_probA_probB_deprecated", None, _KEEPS_PROBABILITY),
    ("test_svm.py", "test_svc_nonfinite_params", None, _SCALE_OVERFLOW),
    ("test_svm.py", "test_svr_errors", None, _WRONG_SHAPE),
)


def expected_failure(item):
    """The reason ``item`` is expected to fail, or None."""
    file = item.path.name
    function = getattr(item, "originalname", item.name)
    match = re.match(r"[^\[]*\[(.*)\]$", item.name)
    params = match.group(1) if match else ""
    for entry_file, entry_function, pattern, reason in EXPECTED_FAILURES:
        if (file, function) == (entry_file, entry_function) and \
                (pattern is None or re.search(pattern, params)):
            return reason
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        reason = expected_failure(item)
        if reason is not None:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))


def pytest_sessionstart(session):
    # the swap held: the test modules will see kernsolve's classes
    for name in SWAPPED:
        assert getattr(sklearn.svm, name) is getattr(kernsolve, name), name
