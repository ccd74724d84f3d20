"""Doubly Stochastic Gradients: kernel machines on random features regenerated
from a seed (Dai et al., NIPS 2014, Algorithms 1 and 2).

``train(y, X, "--solver dsg --loss hinge -g median ...")`` returns a
:class:`~kernsolve.solvers.dsg.model.DSGModel`; the numerical work is in
``kernsolve.solvers.dsg._dsg``.  This module is the solver's entry point for
data in memory; the package is cut along its seams:

* ``losses``: the loss table (names, codes, tasks, properties);
* ``options``: the tasks and their losses, the rules between options, the
  settings of a run;
* ``targets``: labels -> the per-output targets of the compiled loop;
* ``model``: :class:`DSGModel`, its prediction and its file format;
* ``trainer``: :class:`DSGTrainer`, the training state kept between chunks
  (for ``partial_fit`` and for files read in byte ranges);
* ``stream``: :func:`train_file`, training from a file read window by window;
* compiled: ``_dsg.pyx`` (the step loop and prediction) over the inline
  ``_block_sums.pxd``, ``_ridge.pxd``, ``_losses.pxd`` and ``_row_features.pxd``.
"""
import time

import numpy as np
import scipy.sparse as sp

from .options import (_task, check_parameters, feature_gamma, hyperparameters, lambda_note,
                      loss_for)
from .targets import Targets
from .trainer import DSGTrainer, _info, _notice_one_class
from ..._constants import C_SVC, EPSILON_SVR
from ..._kernels import Canonical
from ..._params import Parameters, parse_options
from ..._progress import Progress
from ..._threads import resolve_n_jobs
from ..._validation import check_targets, check_X

__all__ = ["train", "train_model"]


def train(y, X, options="", n_jobs=None):
    """Train a DSG model (``--solver dsg``); see ``doc/dsg.md``.

    ``y``, ``X`` as for :func:`kernsolve.train`; ``options`` in the common
    grammar.  Returns a :class:`DSGModel`.
    """
    t = time.perf_counter()
    param = options.copy() if isinstance(options, Parameters) else parse_options(options)
    if n_jobs is None:
        n_jobs = param.n_jobs
    check_parameters(param)
    y = check_targets(y, C_SVC if _task(param) == "classification" else EPSILON_SVR)
    X = check_X(X, n_rows=y.shape[0])
    if X.shape[1] == 0:
        # rows without features (all-zero vectors): one zero column, the width
        # --stream gives them too (a model has at least one input feature)
        X = sp.csr_matrix((X.shape[0], 1), dtype=np.float64)
    targets = Targets.from_data(_task(param), None, y)
    loss = loss_for(param, 0 if targets.labels is None else targets.labels.size)
    targets.loss = loss
    _notice_one_class(param, targets)
    h = hyperparameters(param, X.shape[0], X.shape[1], loss, feature_gamma(param, X))
    trainer = DSGTrainer(h, targets)
    if not param.quiet:
        trainer.progress = Progress(param.solver)
    try:
        trainer.fit_epochs(Canonical(X), y, h["epochs"], n_jobs=n_jobs)
    finally:
        if trainer.progress is not None:
            trainer.progress.close()
    model = trainer.model()
    model.stats["wall_seconds"] = time.perf_counter() - t
    model.stats["n_threads"] = resolve_n_jobs(n_jobs)
    _info(param, f"optimization finished, #iter = {trainer.n_iter}\n"
                 f"{param.solver}: {model.n_blocks} blocks of {h['block_size']} random "
                 f"features, gamma = {h['gamma']:g}, lambda = {h['lam']:g}"
                 f"{lambda_note(param, X.shape[0])}, "
                 f"mean training loss = {model.stats['mean_loss']:g}"
                 + (f", {trainer.n_old_updates} old-block updates" if param.solver != "dsg"
                    else "") + "\n" + trainer.kept_note("-m "))
    return model


def train_model(y, X, param, *, n_jobs=None, sample_weight=None):
    """``kernsolve.train`` for ``--solver dsg|udsg|cdsg`` (the spec's ``train``):
    ``param`` is an unchecked copy of the options."""
    if sample_weight is not None:
        raise ValueError("sample_weight is not supported by the DSG solvers")
    param.check()
    return train(y, X, param, n_jobs=n_jobs)
