"""DSG, UDSG and CDSG from a LIBSVM file read in byte windows (:func:`train_file`,
``kernsolve-train --stream``).

The data never has to be in memory at once: each window is read, visited
once by the :class:`~kernsolve.solvers.dsg.trainer.DSGTrainer`, and dropped.
"""
import errno
import math
import os

import numpy as np

from .options import _task, check_parameters, feature_gamma, hyperparameters, loss_for
from .targets import Targets
from .trainer import DSGTrainer, _info, _notice_one_class
from ..._errors import DataFormatError
from ..._fileutil import compression, open_read
from ..._io import read_problem
from ..._params import Parameters, parse_options

__all__ = ["train_file"]


def _stream_size(path):
    """Bytes of the data stream: the file size, or for a compressed file the
    decompressed size (byte windows are positions in the decompressed data).
    The file is read once per pass, so it must be a regular file."""
    if not os.path.isfile(path):
        if not os.path.exists(path):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
        raise ValueError(f"{path}: training in byte windows (--stream) reads the file "
                         f"once per pass, but a FIFO, pipe or device can be read only "
                         f"once: train without --stream, or save the data to a file")
    if compression(path) is None:
        return os.path.getsize(path)
    size = 0
    with open_read(path) as f:
        while True:
            block = f.read(1 << 20)
            if not block:
                return size
            size += len(block)


class _Unchanged:
    """The file as the first pass saw it (device, inode, size, modification
    time); :meth:`verify` before each window says if it was replaced, cut or
    appended to since, which would train on other rows than were counted."""

    def __init__(self, path):
        self.path = path
        self.seen = self._stat()

    def _stat(self):
        st = os.stat(self.path)
        return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns

    def verify(self):
        now = self._stat()
        if now != self.seen:
            what = (f"its size went from {self.seen[2]} to {now[2]} bytes"
                    if now[2] != self.seen[2] else "it was modified or replaced")
            raise ValueError(f"{self.path}: the file changed while training read it in "
                             f"byte windows (--stream): {what}; the passes would not "
                             "see the same rows. Train on a copy that stays unchanged")


class _Labels:
    """The distinct labels of the windows read so far, in order of first
    appearance: what the first pass keeps of the labels (as many numbers as
    classes, never one per row).  ``Targets.from_data`` on :meth:`first_seen`
    gives the labels it gives on the whole column: LIBSVM's order is the
    order of first appearance (with its -1/+1 swap, which ``from_data``
    applies to either)."""

    def __init__(self):
        self.order, self.known = [], set()

    def add(self, y):
        # classification labels are integers (group_classes reads them so)
        ints = y.astype(np.int64)
        _, first = np.unique(ints, return_index=True)
        for v in ints[np.sort(first)].tolist():
            if v not in self.known:
                self.known.add(v)
                self.order.append(v)

    def first_seen(self):
        return np.array(self.order, dtype=np.float64)


def train_file(path, options="", *, chunk_bytes=64 << 20, n_features=None, n_jobs=None):
    """Train DSG, UDSG or CDSG (``--solver``) from a LIBSVM file read in byte
    ranges of ``chunk_bytes``, so the data never has to be in memory at once.

    A first pass over the file collects the distinct labels (in LIBSVM's
    order; one number per class is kept, none per row), the number of rows
    (for ``-c``'s lambda = 1/(C n)) and the largest feature index; it is
    skipped for regression with ``n_features`` and ``--lambda`` given.  Each
    epoch then reads the file window by window and calls
    :meth:`DSGTrainer.fit_rows` once per window that holds lines (in a seeded
    order within it); ``--epochs`` is rounded up to whole passes.  ``-g
    median`` uses the first window that holds lines.  With one window this is
    :func:`kernsolve.solvers.dsg.train.train` on the whole file, bit for bit;
    with several, it is ``partial_fit`` of the estimators over the windows'
    rows, bit for bit.  What is in memory at once: one window's text and
    rows, the model (its coefficients and at most ``-m`` MB of cached
    feature directions), one number per class.  A malformed line raises
    ``DataFormatError`` naming the file and line; its ``trainer`` attribute
    holds the training state up to the window before it (None when the first
    pass found it).
    """
    param = options.copy() if isinstance(options, Parameters) else parse_options(options)
    if n_jobs is None:
        n_jobs = param.n_jobs
    opts = check_parameters(param)
    chunk_bytes = int(chunk_bytes)
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be >= 1, got {chunk_bytes}")
    unchanged = _Unchanged(path)      # before the size: any change from here on is seen
    size = _stream_size(path)
    windows = [(o, min(chunk_bytes, size - o)) for o in range(0, max(size, 1), chunk_bytes)]
    task = _task(param)
    width, n_rows = 0, 0
    # classification needs the labels; regression and novelty none (their
    # values are not collected: they can be as many as the rows)
    labels = _Labels() if task == "classification" else None
    if n_features is None or task == "classification" or "lambda" not in param.extra:
        for offset, length in windows:
            unchanged.verify()
            try:
                y, X = read_problem(path, n_features=n_features or 2**31 - 1,
                                    zero_based=False, offset=offset, length=length,
                                    n_jobs=n_jobs, for_training=True)
            except DataFormatError as exc:
                exc.trainer = None
                raise
            if n_features is None:
                width = max(width, int(X.indices.max()) + 1 if X.nnz else 0)
            if labels is not None:
                labels.add(y)
            n_rows += y.shape[0]
            del y, X        # the next window is parsed without this one (see below)
        if n_rows == 0:
            raise DataFormatError(f"{path}: no data lines")
    n_features = int(n_features or max(width, 1))
    targets = Targets.from_data(task, None, None if labels is None else labels.first_seen())
    loss = loss_for(param, 0 if targets.labels is None else targets.labels.size)
    targets.loss = loss
    _notice_one_class(param, targets)
    trainer = None
    for epoch in range(max(1, math.ceil(opts["epochs"]))):
        for offset, length in windows:
            unchanged.verify()
            try:
                y, X = read_problem(path, n_features=n_features, zero_based=False,
                                    offset=offset, length=length, n_jobs=n_jobs)
            except DataFormatError as exc:
                exc.trainer = trainer
                raise
            if y.shape[0] == 0:         # a window inside one long line
                continue
            if trainer is None:
                if param.gamma == "median" and y.shape[0] < 2:
                    raise ValueError(f"{path}: -g median takes the median distance of the "
                                     f"first window of --stream that holds lines (bytes "
                                     f"{offset} to {offset + length}; windows of --chunk-mb "
                                     f"= {chunk_bytes} bytes), and it holds 1 row; the median "
                                     "needs 2: use a larger --chunk-mb or a -g value")
                gamma = feature_gamma(param, X)
                trainer = DSGTrainer(hyperparameters(param, n_rows or y.shape[0], n_features,
                                                     loss, gamma), targets)
            # one window is the whole data, as in train; one of several is not
            trainer.fit_rows(X, y, n_jobs=n_jobs, whole_data=len(windows) == 1)
            # Drop the window before reading the next one: ``y, X = read_problem(...)``
            # rebinds only once the next window is parsed, so keeping the
            # names would hold two windows at the peak instead of one.
            del y, X
    if trainer is None:
        raise DataFormatError(f"{path}: no data lines")
    model = trainer.model()
    _info(param, f"optimization finished, #iter = {trainer.n_iter}\n")
    return model
