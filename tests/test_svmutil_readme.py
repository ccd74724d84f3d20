"""libsvm's own Python README, run with only its import changed: the same values.

Oracle: libsvm-official.  The statements of its README (``libsvm_readme``:
the quick starts, the ``svm_model`` methods, the ``svm_train``/``svm_predict``
examples) run once with ``from libsvm.svmutil import *`` and once with
``from kernsolve.svmutil import *``, each in a fresh namespace, in a folder
whose parent holds ``heart_scale`` (the README reads ``'../heart_scale'``)
and which holds the model files the README loads.  After every statement,
every name it bound is compared: models by everything libsvm's ``svm_model``
gives (its nine methods and its fields), problems and parameters by their
fields, everything else by value and type (``test_svmutil.assert_same``:
floats to 1e-9 relative).
"""
import lzma
import re

import numpy as np
import pytest

from libsvm_readme import readme_statements
from test_svmutil import assert_same, run_both

import kernsolve

svmutil = pytest.importorskip("libsvm.svmutil")

_PARAM_FIELDS = ("svm_type", "kernel_type", "degree", "gamma", "coef0", "cache_size",
                 "eps", "C", "nu", "p", "shrinking", "probability")


def model_view(m):
    """What a script can read from libsvm's svm_model: its methods, its fields."""
    nr_class = m.get_nr_class()
    svm_type = m.get_svm_type()
    view = {
        "get_svm_type": m.get_svm_type(), "get_nr_class": nr_class,
        "get_svr_probability": m.get_svr_probability(), "get_labels": m.get_labels(),
        "get_sv_indices": m.get_sv_indices(), "get_nr_sv": m.get_nr_sv(),
        "is_probability_model": m.is_probability_model(), "get_sv_coef": m.get_sv_coef(),
        "get_SV": m.get_SV(),
        "l": m.l, "nr_class": m.nr_class,
        # rho is kernsolve.Model's ndarray: its items are np.float64, a float subclass
        "rho": [float(m.rho[i]) for i in range(max(nr_class * (nr_class - 1) // 2, 1))],
        "sv_coef": [[m.sv_coef[j][i] for i in range(m.l)] for j in range(max(nr_class - 1, 1))],
        "param": model_param_view(m.param),
    }
    if svm_type in (0, 1):                       # label and nSV: classification only
        view["label"] = [m.label[i] for i in range(nr_class)]
        view["nSV"] = [m.nSV[i] for i in range(nr_class)]
        if m.is_probability_model():
            n_pairs = nr_class * (nr_class - 1) // 2
            view["probA"] = [m.probA[i] for i in range(n_pairs)]
            view["probB"] = [m.probB[i] for i in range(n_pairs)]
    return view


def model_param_view(p):
    """A model's parameters as far as its file keeps them (libsvm zeroes the rest
    of a loaded model's svm_parameter; kernsolve keeps the defaults)."""
    full = param_view(p)
    kernel = full["kernel_type"]
    used = {"svm_type", "kernel_type"} | ({"degree"} if kernel == 1 else set()) \
        | ({"gamma"} if kernel in (1, 2, 3) else set()) | ({"coef0"} if kernel in (1, 3) else set())
    return {k: v for k, v in full.items() if k in used}


def param_view(p):
    """An svm_parameter's LIBSVM fields, as numbers (gamma 0 = LIBSVM's default)."""
    out = {}
    for name in _PARAM_FIELDS:
        value = getattr(p, name)
        out[name] = float(value or 0) if isinstance(value, float) or value is None \
            else int(value)
    return out


def view(value):
    """A value as the README's user sees it, in a form assert_same compares."""
    if hasattr(value, "get_svm_type"):
        return model_view(value)
    if type(value).__name__ == "svm_problem":
        return {"l": value.l}
    if hasattr(value, "shrinking") and hasattr(value, "C"):         # svm_parameter
        return param_view(value)
    return value


def readme_run(module_name, statements):
    """Run the README with ``from libsvm.svmutil import *`` changed to
    ``from <module_name> import *``: per statement, the names it bound."""
    def script(_su):
        namespace, seen = {}, []
        for section, statement in statements:
            code = statement.replace("from libsvm.svmutil import", f"from {module_name} import")
            before = dict(namespace)
            exec(code, namespace)                                   # noqa: S102
            if code.startswith(("from ", "import ")):
                continue                    # the import: what it binds differs by design
            bound = {k: view(v) for k, v in namespace.items()
                     if not k.startswith("__") and not callable(v) and not isinstance(v, type)
                     and not hasattr(v, "__path__") and not k.isupper()
                     and (k not in before or before[k] is not v)}
            seen.append(((section, statement), bound))
        assert len(seen) > 40
        return seen
    return script


@pytest.fixture
def readme_folder(tmp_path, monkeypatch):
    """``work/`` with ``../heart_scale`` and the model files the README loads."""
    with lzma.open(kernsolve.dataset_path("heart_scale"), "rb") as f:
        (tmp_path / "heart_scale").write_bytes(f.read())
    work = tmp_path / "work"
    work.mkdir()
    y, x = svmutil.svm_read_problem(str(tmp_path / "heart_scale"))
    model = svmutil.svm_train(y, x, "-c 4 -b 1 -q")
    for name in ("model_file_name", "model_file"):
        svmutil.svm_save_model(str(work / name), model)
    monkeypatch.chdir(work)
    return work


def test_readme_statements_cover_the_svmutil_interface():
    """The extraction finds the README's code: the quick starts, the nine
    svm_model methods, the scaling calls (a README change shows up here)."""
    code = "\n".join(s for _, s in readme_statements())
    for name in ("svm_read_problem", "svm_train", "svm_predict", "svm_problem",
                 "svm_parameter", "svm_save_model", "svm_load_model", "evaluations",
                 "csr_find_scale_param", "csr_scale", "get_svm_type", "get_nr_class",
                 "get_svr_probability", "get_labels", "get_sv_indices", "get_nr_sv",
                 "is_probability_model", "get_sv_coef", "get_SV", "isKernel=True",
                 "return_scipy", "-v 3"):
        assert name in code, name
    assert code.count("from libsvm.svmutil import *") == 2


def test_libsvm_readme_runs_unchanged_with_the_same_values(readme_folder, capsys):
    statements = readme_statements()
    theirs, ours = run_both(lambda su: readme_run(su.__name__, statements)(su))
    n_imports = sum(s.startswith(("from ", "import ")) for _, s in statements)
    assert len(ours) == len(theirs) == len(statements) - n_imports
    for (where, a), (_, b) in zip(theirs, ours):
        assert list(b) == list(a), where
        for name in a:
            assert_same(a[name], b[name], f"{where[0]}: {where[1]!r}: {name}")
    # help(svm_train) printed the function's documentation in both runs
    out = capsys.readouterr().out
    assert len(re.findall(r"svm_train\(arg1, arg2=None, arg3=None\)", out)) == 4


# ---- the model object, the scaling and the enums beyond the README's calls

def _three_classes():
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(c, 0.8, size=(25, 4)) for c in (-1.5, 0.0, 1.5)])
    X = np.round(X, 6)      # LIBSVM writes SVs with %.8g: these values survive its files
    return [float(v) for v in np.repeat([3, 1, 2], 25)], X.tolist()


@pytest.mark.parametrize("options", ["-c 4", "-c 4 -b 1", "-s 1 -n 0.3 -b 1", "-s 2 -n 0.2",
                                     "-s 2 -n 0.2 -b 1", "-s 3 -p 0.2", "-s 3 -p 0.2 -b 1",
                                     "-s 4 -t 1 -d 2 -r 1", "-t 3 -g 0.1 -r 0.5"])
@pytest.mark.parametrize("data", ["heart", "three"])
def test_model_methods_and_fields_are_libsvms(data, options, tmp_path):
    """Every svm_model method and field, trained and reloaded, multi-class too."""
    if data == "heart":
        with lzma.open(kernsolve.dataset_path("heart_scale"), "rb") as f:
            (tmp_path / "heart").write_bytes(f.read())
        y, x = svmutil.svm_read_problem(str(tmp_path / "heart"))
    else:
        y, x = _three_classes()

    def script(su):
        m = su.svm_train(y, x, options + " -q")
        path = str(tmp_path / f"{su.__name__}.model")
        su.svm_save_model(path, m)
        return model_view(m), model_view(su.svm_load_model(path))

    theirs, ours = run_both(script)
    assert_same(theirs, ours, f"{data} {options}")


def test_is_probability_model_reads_as_property_and_method():
    """kernsolve's property spelling and libsvm's call give the same bool
    (oracle: which options train a probability model, LIBSVM's -b 1)."""
    y, x = _three_classes()
    for options, expected in (("-q", False), ("-b 1 -q", True)):
        m = kernsolve.train(np.array(y), np.array(x), options)
        flag = m.is_probability_model
        assert flag() is expected and bool(flag) is expected and flag == expected
        assert repr(flag) == repr(expected)
        assert kernsolve.svmutil.svm_model.from_model(m).is_probability_model() is expected


@pytest.mark.parametrize("lower, upper", [(-1, 1), (0, 1), (0, 2.5)])
def test_csr_scaling_is_commonutils(lower, upper, tmp_path, capsys):
    from libsvm import commonutil
    with lzma.open(kernsolve.dataset_path("heart_scale"), "rb") as f:
        (tmp_path / "heart").write_bytes(f.read())
    y, x = commonutil.svm_read_problem(str(tmp_path / "heart"), return_scipy=True)
    theirs = commonutil.csr_find_scale_param(x, lower=lower, upper=upper)
    warned_theirs = "WARNING" in capsys.readouterr().err
    ours = kernsolve.svmutil.csr_find_scale_param(x, lower=lower, upper=upper)
    assert ("WARNING" in capsys.readouterr().err) == warned_theirs
    for key in ("coef", "offset"):
        np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-15)
    a = commonutil.csr_scale(x, theirs)
    warned_theirs = "WARNING" in capsys.readouterr().err
    b = kernsolve.svmutil.csr_scale(x, ours)
    assert ("WARNING" in capsys.readouterr().err) == warned_theirs
    assert_same(a, b, f"csr_scale lower={lower}")


def test_csr_scaling_refuses_what_it_cannot_scale():
    import scipy.sparse as sp
    from kernsolve.svmutil import csr_find_scale_param, csr_scale
    with pytest.raises(TypeError, match="csr_find_scale_param: x must be a scipy CSR matrix"):
        csr_find_scale_param(np.eye(3))
    with pytest.raises(ValueError, match=r"lower \(1\) must be less than upper \(1\)"):
        csr_find_scale_param(sp.csr_matrix(np.eye(3)), lower=1, upper=1)
    x = sp.csr_matrix(np.array([[1.0, 2.0, 4.0], [3.0, 0.0, 8.0]]))
    param = csr_find_scale_param(x, lower=0)
    # a wider matrix: the extra column is scaled by 0 (libsvm's commonutil means
    # to pad with zeros and fails on it); the first three as before
    wide = csr_scale(sp.hstack([x, sp.csr_matrix(np.ones((2, 1)))]).tocsr(), param)
    np.testing.assert_array_equal(wide.toarray(), np.hstack([csr_scale(x, param).toarray(),
                                                             np.zeros((2, 1))]))


def test_enums_and_evaluations_are_libsvms():
    from libsvm import commonutil, svm
    for ours, theirs in ((kernsolve.svmutil.svm_forms, svm.svm_forms),
                         (kernsolve.svmutil.kernel_names, svm.kernel_names)):
        assert {k: int(v) for k, v in ours.__members__.items()} == \
            {k: int(v) for k, v in theirs.__members__.items()}
    ty, pv = np.array([1.0, 2.0, 3.0, 2.5]), np.array([1.0, 2.5, 2.0, 2.5])
    assert kernsolve.svmutil.evaluations_scipy(ty, pv) == \
        pytest.approx(commonutil.evaluations_scipy(ty, pv), rel=1e-15)
    assert set(commonutil.__all__) <= set(kernsolve.svmutil.__all__)
    assert kernsolve.svmutil.print_null("anything") is None
