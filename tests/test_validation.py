"""kernsolve/_validation.py, the option splitter and the thread-count check.

The class grouping is LIBSVM's ``svm_group_classes``; since every solver uses
the one copy, EigenPro's outputs follow LIBSVM's label order too (it used to
skip the -1/+1 swap although its docstring promised LIBSVM's order).
"""
import numpy as np
import pytest
import scipy.sparse as sp

import kernsolve
from kernsolve._params import split_arguments, split_options
from kernsolve._predict import ovo_vote
from kernsolve._threads import check_n_jobs
from kernsolve._validation import (check_sample_weight, check_targets, check_X,
                                   class_index, group_classes, resolve_gamma)


def test_group_classes_is_libsvms():
    labels, start, count, perm = group_classes(np.array([3., 1., 3., 2., 1.]))
    assert labels.tolist() == [3, 1, 2]
    assert start.tolist() == [0, 2, 4] and count.tolist() == [2, 2, 1]
    assert perm.tolist() == [0, 2, 1, 4, 3]
    # two classes -1/+1 with -1 first: swapped, so that +1 is the positive class
    labels, start, count, perm = group_classes(np.array([-1., 1., -1., 1., 1.]))
    assert labels.tolist() == [1, -1]
    assert count.tolist() == [3, 2] and perm.tolist() == [1, 3, 4, 0, 2]
    labels, index = class_index(np.array([-1., 1., -1., 1., 1.]))
    assert labels.tolist() == [1, -1] and index.tolist() == [1, 0, 1, 0, 0]


def _first_label_minus_one(n=80, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    y[0] = -1.0
    return X, y


@pytest.mark.parametrize("options", ["--solver eigenpro --epochs 2",
                                     "--solver eigenpro --epochs 2 --features 64",
                                     "--solver kernel-sgd --epochs 2 --subsample 40"])
def test_eigenpro_label_order_matches_libsvm(options):
    X, y = _first_label_minus_one()
    smo = kernsolve.train(y, X, "-q")
    model = kernsolve.train(y, X, "-q " + options)
    assert smo.labels.tolist() == [1, -1]
    assert np.asarray(model.labels).tolist() == [1.0, -1.0]
    # output c is class labels[c]: the +1 output is the larger one on +1 rows
    values = model.decision_function(X)
    pred = model.predict(X)
    assert np.array_equal(pred, np.asarray(model.labels)[np.argmax(values, axis=1)])
    assert np.mean(pred == y) > 0.8


def test_check_X_forms_and_messages():
    X = check_X([[1, 2], [3, 4]])
    assert X.dtype == np.float64 and X.flags.c_contiguous
    S = check_X(sp.coo_matrix(np.eye(3)))
    assert sp.isspmatrix_csr(S) and S.indptr.dtype == np.int64
    with pytest.raises(ValueError, match="X is None; expected"):
        check_X(None)
    with pytest.raises(ValueError, match="X has 2 rows but y has 3 entries"):
        check_X(np.eye(2), n_rows=3)
    with pytest.raises(ValueError, match=r"Input X contains NaN or infinity; SVC needs"):
        check_X(np.array([[np.nan]]), owner="SVC")
    with pytest.raises(ValueError, match="X contains NaN or infinity"):
        check_X(np.array([[np.nan]]))
    # prediction: rows without features are LIBSVM's zero vectors
    assert check_X(np.zeros((3, 0)), empty_ok=True).shape == (3, 1)
    # the estimator wording keeps the canonical sparse form too
    S = check_X(sp.csr_matrix(np.eye(3)), owner="SVC")
    assert S.indices.dtype == np.int32 and S.indptr.dtype == np.int64


def test_targets_weights_gamma():
    with pytest.raises(ValueError, match="row 2 has 0.5"):
        check_targets([1, 0.5], 0)
    assert check_targets([1, 0.5], 3).tolist() == [1.0, 0.5]
    with pytest.raises(ValueError, match="sample_weight of row 2 is negative"):
        check_sample_weight([1.0, -1.0], 2)
    # an estimator's weight <= 0 masks its row (scikit-learn's rule, issue 14)
    assert check_sample_weight([1.0, -1.0], 2, owner="SVC").tolist() == [1.0, 0.0]
    assert check_sample_weight(2, 3, owner="SVC").tolist() == [2.0, 2.0, 2.0]
    for masked in (0.0, [-1.0, 0.0, -0.5]):
        with pytest.raises(ValueError, match="all samples have zero or negative weights"):
            check_sample_weight(masked, 3, owner="SVC")
    # one rule: None and 0 both mean 1/n_features, for SMO and EigenPro alike
    assert resolve_gamma(None, 4) == resolve_gamma(0, 4) == 0.25
    assert resolve_gamma(0.5, 4) == 0.5 and resolve_gamma(None, 0) == 0.0
    assert kernsolve.Parameters(gamma=0.0).resolved_gamma(4) == 0.25


def test_one_option_splitter():
    pairs, rest = split_options(["-c", "1", "-q", "--seed=3", "-r", "-1", "a", "b"])
    assert pairs == [("-c", ["1"]), ("-q", []), ("--seed", ["3"]), ("-r", ["-1"])]
    assert rest == ["a", "b"]
    assert split_options(["-c", "1", "--", "-file"]) == ([("-c", ["1"])], ["-file"])
    assert split_options(["-c"]) == ([("-c", None)], [])
    assert split_options(["-y", "0", "1", "f"], n_values={"-y": 2}) == \
        ([("-y", ["0", "1"])], ["f"])
    assert split_arguments(["-q", "-c"]) == (["-q", "-c"], [])


def test_one_thread_check():
    assert check_n_jobs(None) is None and check_n_jobs(np.int64(-2)) == -2
    with pytest.raises(ValueError, match="n_jobs == 0 has no meaning"):
        check_n_jobs(0)
    with pytest.raises(ValueError, match="--threads: expected an integer, got 1.5"):
        check_n_jobs(1.5, "--threads")
    with pytest.raises(ValueError, match="SVC: n_jobs must be None or a non-zero integer"):
        check_n_jobs(True, "estimator", "SVC")
    with pytest.raises(ValueError, match="--threads: must be a positive count"):
        kernsolve.Parameters(n_jobs=0).check()


def test_ovo_vote_first_maximum():
    # three classes, pairs (0,1), (0,2), (1,2): a 1-1-1 tie goes to class 0
    dec = np.array([[1.0, -1.0, 1.0], [-1.0, -1.0, -1.0], [-1.0, 1.0, 1.0]])
    assert ovo_vote(dec, 3).tolist() == [0, 2, 1]
