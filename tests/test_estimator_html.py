"""The estimators' notebook view (``_repr_html_``) and ``probability=True`` without warnings.

Oracle: scikit-learn's own ``estimator_html_repr`` on the same estimator
(the same HTML once its per-call element ids are numbered alike), and the
plain repr in a ``<pre>`` when scikit-learn cannot be imported.
"""
import html
import re
import sys

import numpy as np
import pytest

import kernsolve

ESTIMATORS = [kernsolve.SVC(C=3, gamma=0.5), kernsolve.NuSVR(nu=0.3),
              kernsolve.OneClassSVM(), kernsolve.DSGClassifier(alpha=0.01),
              kernsolve.EigenProClassifier(epochs=3)]


def _ids_alike(text):
    return re.sub(r"sk-(container-id|estimator-id)-\d+", r"sk-\1-N", text)


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_html_is_scikit_learns_diagram(est):
    from sklearn.utils import estimator_html_repr
    ours = est._repr_html_()
    assert _ids_alike(ours) == _ids_alike(estimator_html_repr(est))
    assert html.escape(repr(est)) in ours


def test_html_of_a_fitted_estimator_in_a_pipeline():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    X = np.random.default_rng(0).normal(size=(30, 3))
    y = (X[:, 0] > 0).astype(int)
    pipe = make_pipeline(StandardScaler(), kernsolve.SVC()).fit(X, y)
    text = pipe._repr_html_()
    assert "SVC" in text and "fitted" in text.lower()


def test_html_without_scikit_learn_is_the_repr(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn.utils", None)     # import fails
    est = kernsolve.SVC(C=3, kernel="linear")
    assert est._repr_html_() == f"<pre>{html.escape(repr(est))}</pre>"
