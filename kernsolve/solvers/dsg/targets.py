"""DSG's targets: class labels or values -> the per-output targets of the compiled loop."""
import numpy as np

from ..._validation import group_classes
from .losses import LOSS

__all__ = ["Targets"]


class Targets:
    """Labels -> the per-output targets of the compiled loop."""

    def __init__(self, task, loss, labels=None):
        self.task, self.loss = task, loss
        self.labels = None if labels is None else np.asarray(labels)

    @classmethod
    def from_data(cls, task, loss, y):
        if task != "classification":
            return cls(task, loss)
        return cls(task, loss, group_classes(y)[0].astype(np.float64))

    @property
    def single_label(self):
        """Training data of one class: LIBSVM's case, a model predicting that label."""
        return self.labels is not None and self.labels.size == 1

    @property
    def n_outputs(self):
        if self.task != "classification":
            return 1
        k = self.labels.size
        # binary losses: one output for two classes, one-vs-rest beyond
        return k if (LOSS[self.loss].per_class or k > 2) else 1

    def encode(self, y):
        """(n, n_outputs) targets for the compiled loop (per_class losses: (n, 1)
        class indices)."""
        y = np.asarray(y, dtype=np.float64)
        if self.task != "classification":
            return np.ascontiguousarray(y.reshape(-1, 1))
        index = np.full(y.shape[0], -1, dtype=np.int64)
        for k, label in enumerate(self.labels):
            index[y == label] = k
        unknown = np.flatnonzero(index < 0)
        if unknown.size:
            raise ValueError(f"row {unknown[0] + 1} has label {y[unknown[0]]:g}, which is not "
                             f"one of the model's labels "
                             f"({', '.join('%g' % v for v in self.labels)})")
        if LOSS[self.loss].per_class:
            return index.astype(np.float64).reshape(-1, 1)
        if self.n_outputs == 1:
            return np.where(index == 0, 1.0, -1.0).reshape(-1, 1)
        out = -np.ones((y.shape[0], self.n_outputs))
        out[np.arange(y.shape[0]), index] = 1.0
        return out
