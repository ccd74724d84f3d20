"""DSG's loss table (kernsolve/solvers/dsg/losses.py) against the compiled
losses (_losses.pxd) and against what derives from it."""
import re
from pathlib import Path

import numpy as np
import pytest

import kernsolve
from kernsolve.solvers.dsg import SPEC, _dsg as _c
from kernsolve.solvers.dsg.losses import LOSS, TABLE, default_loss, names

PXD = Path(kernsolve.__file__).parent / "solvers" / "dsg" / "_losses.pxd"


def _enum():
    """LOSS_* name -> value of the enum in _losses.pxd."""
    text = PXD.read_text()
    block = re.search(r"^cdef enum:\n((?:    .*\n)+)", text, re.M).group(1)
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^\s+(LOSS_\w+)\s*=\s*(\d+)", block, re.M)}


def test_the_table_is_the_compiled_enum():
    want = {"LOSS_" + loss.name.upper().replace("-", "_"): loss.code for loss in TABLE}
    assert _enum() == want
    assert len({loss.code for loss in TABLE}) == len(TABLE)


def test_the_spec_and_the_estimators_take_the_table_s_names():
    assert SPEC.options["loss"].choices == tuple(loss.name for loss in TABLE)
    clf = kernsolve.DSGClassifier._parameter_constraints["loss"][0]
    reg = kernsolve.DSGRegressor._parameter_constraints["loss"][0]
    assert tuple(clf.options) == ("auto",) + names("classification")
    assert tuple(reg.options) == names("regression")
    assert set(names()) == set(names("classification") + names("regression")
                               + names("novelty"))


def test_every_task_has_its_defaults():
    assert default_loss("classification", 2) == "hinge"
    assert default_loss("classification", 5) == "softmax"
    for task in ("regression", "novelty"):
        assert LOSS[default_loss(task, 0)].task == task


def _second_derivative(code, u, y, param, h=1e-5):
    g = lambda v: _c.loss_derivatives(code, v, y, param)[:, 0]
    return (g(u + h) - g(u - h)) / (2 * h)


@pytest.mark.parametrize("loss", [x for x in TABLE if not x.per_class], ids=lambda x: x.name)
def test_step_factor_bounds_the_curvature(loss):
    """step_factor * l''(u) <= 1 (the fitted step's majorizer), tight where the
    factor is not 1 (finite differences of the compiled derivative)."""
    u = np.linspace(-6, 6, 4001).reshape(-1, 1)
    y = np.ones_like(u) * (0.3 if loss.task == "regression" else 1.0)
    param = 0.5 if loss.param else 0.0
    curv = _second_derivative(loss.code, u, y, param)
    # away from the kinks (a jump of the derivative between grid points),
    # where finite differences blow up
    jump = np.abs(np.diff(_c.loss_derivatives(loss.code, u, y, param)[:, 0])) > 1e-2
    near = np.zeros(u.shape[0], bool)
    near[:-1] |= jump
    near[1:] |= jump
    smooth = ~near
    assert smooth.sum() > 3900
    assert loss.step_factor * curv[smooth].max() <= 1 + 1e-6
    if loss.step_factor != 1:
        assert loss.step_factor * curv[smooth].max() > 0.999


def test_softmax_factor_bounds_its_hessian():
    (loss,) = [x for x in TABLE if x.per_class]
    rng = np.random.default_rng(0)
    label = np.array([[1.0]])
    top = 0.0
    for _ in range(200):
        u = rng.normal(scale=2, size=(1, 4))
        H = np.empty((4, 4))
        for c in range(4):
            e = np.zeros_like(u)
            e[0, c] = 1e-5
            H[:, c] = (_c.loss_derivatives(loss.code, u + e, label)
                       - _c.loss_derivatives(loss.code, u - e, label))[0] / 2e-5
        top = max(top, np.linalg.eigvalsh((H + H.T) / 2).max())
    assert loss.step_factor * top <= 1 + 1e-6


@pytest.mark.parametrize("loss", [x for x in TABLE if not x.per_class], ids=lambda x: x.name)
def test_param_column_is_the_loss_s_parameter(loss):
    """A loss reads its parameter exactly when the table names one."""
    u = np.linspace(-3, 3, 61).reshape(-1, 1)
    y = np.full_like(u, 0.2 if loss.task == "regression" else 1.0)
    a = _c.loss_values(loss.code, u, y, 0.3)
    b = _c.loss_values(loss.code, u, y, 0.7)
    assert (loss.param is not None) == (not np.array_equal(a, b))


def test_probabilities_column_is_what_predict_proba_offers(tmp_path):
    y, X = kernsolve.read_problem(kernsolve.dataset_path("heart_scale"))
    for loss in names("classification"):
        m = kernsolve.train(y, X, f"-q --solver dsg -g 0.1 --loss {loss}")
        assert m.has_probability == (LOSS[loss].probabilities is not None)
