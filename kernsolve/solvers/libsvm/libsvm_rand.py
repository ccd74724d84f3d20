"""svm-train's own random folds: glibc's ``rand()`` and LIBSVM's shuffles.

kernsolve draws its folds from its portable, seeded RNG (kernsolve._random),
so ``-v`` and ``-b 1`` give the same numbers on every machine.  LIBSVM draws
them from the C library's ``rand()``, never seeded by ``svm-train``, so its
numbers depend on the C library.  ``kernsolve-train --libsvm-folds`` uses
this module to draw the folds exactly as ``svm-train`` does on Linux (glibc),
so a LIBSVM user's ``-v`` accuracies and ``-b 1`` models come out the same.

* :class:`GlibcRand` is glibc's ``rand()`` after ``srand(seed)`` (the
  additive feedback generator of ``random_r``, TYPE_3: 34 seed words from
  16807-multiplier steps, 310 discarded outputs, then
  ``r[i] = r[i-31] + r[i-3] mod 2**32`` and output ``r[i] >> 1``).  A program
  that never calls ``srand`` runs with seed 1.
* :func:`cv_folds` is ``svm_cross_validation``'s fold assignment.
* :func:`probability_folds` is the shuffle of ``svm_binary_svc_probability``
  (one per one-vs-one pair, in pair order) or ``svm_svr_probability``.
* :func:`cross_validation_folds` is what a whole ``svm-train -v`` run draws:
  the folds, then (``-b 1``) each fold's probability shuffles, in that order.
"""
import numpy as np

from ..._constants import CLASSIFICATION, REGRESSION
from ..._validation import group_classes

__all__ = ["GlibcRand", "cv_folds", "probability_folds", "cross_validation_folds"]

__all__ = ["GlibcRand", "cv_folds", "probability_folds", "cross_validation_folds"]


class GlibcRand:
    """glibc's ``rand()`` sequence after ``srand(seed)`` (seed 1 = never seeded)."""

    def __init__(self, seed=1):
        seed = int(seed) & 0xFFFFFFFF
        if seed == 0:
            seed = 1            # glibc's srandom_r replaces 0 by 1
        r = [0] * 34
        # srandom_r: r[i] = 16807 * r[i-1] mod (2**31 - 1) by Schrage's method,
        # on an int32_t word with C's truncating division.
        word = seed - (1 << 32) if seed >= 1 << 31 else seed
        r[0] = seed
        for i in range(1, 31):
            hi = abs(word) // 127773 * (1 if word >= 0 else -1)
            lo = word - hi * 127773
            word = 16807 * lo - 2836 * hi
            if word < 0:
                word += 2147483647
            r[i] = word
        for i in range(31, 34):
            r[i] = r[i - 31]
        self._r = r             # the last 34 words
        self._i = 0             # position of r[i - 34] in the ring
        for _ in range(310):
            self._step()

    def _step(self):
        r, i = self._r, self._i
        # r[i] = r[i - 31] + r[i - 3]; the ring holds r[i - 34 .. i - 1]
        value = (r[(i + 3) % 34] + r[(i + 31) % 34]) & 0xFFFFFFFF
        r[i] = value
        self._i = (i + 1) % 34
        return value

    def rand(self):
        """The next ``rand()`` value, in [0, 2**31)."""
        return self._step() >> 1

    def shuffle(self, n):
        """LIBSVM's shuffle of ``0..n-1``: ``j = i + rand() % (n - i); swap``."""
        perm = list(range(n))
        for i in range(n):
            j = i + self.rand() % (n - i)
            perm[i], perm[j] = perm[j], perm[i]
        return np.asarray(perm, dtype=np.intp)


def cv_folds(y, n_folds, svm_type, rng):
    """``svm_cross_validation``'s folds: held-out rows of each fold, in order.

    Classification (``-s 0/1``) with fewer folds than rows is stratified:
    the rows grouped by class (``svm_group_classes``), each class shuffled
    with ``rand()``, fold ``i`` = piece ``i`` of every class.  Otherwise the
    rows are shuffled and fold ``i`` is ``perm[i*l//k:(i+1)*l//k]``.  The
    training rows of fold ``i`` are the other folds in order (as
    :func:`kernsolve.model_selection.cv.train_rows` takes them).
    """
    y = np.asarray(y, dtype=np.float64)
    l = y.shape[0]
    k = int(n_folds)
    if svm_type in CLASSIFICATION and k < l:
        _, start, count, perm = group_classes(y)
        index = [int(v) for v in perm]
        for s, c in zip(start.tolist(), count.tolist()):
            for i in range(c):
                j = i + rng.rand() % (c - i)
                index[s + i], index[s + j] = index[s + j], index[s + i]
        index = np.asarray(index, dtype=np.intp)
        return [np.concatenate([index[s + f * c // k:s + (f + 1) * c // k]
                                for s, c in zip(start.tolist(), count.tolist())])
                for f in range(k)]
    perm = rng.shuffle(l)
    return [perm[f * l // k:(f + 1) * l // k] for f in range(k)]


def probability_folds(y, svm_type, rng):
    """The permutations ``svm_train`` draws for ``-b 1``, as ``train(_folds=...)`` takes them.

    C-SVC / nu-SVC: one shuffle of ``0..l_pair-1`` per one-vs-one pair, in
    LIBSVM's pair order.  SVR: one shuffle of ``0..l-1``.  One-class: none
    (its density marks use no random numbers), so None.
    """
    y = np.asarray(y, dtype=np.float64)
    if svm_type in CLASSIFICATION:
        _, _, count, _ = group_classes(y)
        k = count.size
        return [rng.shuffle(int(count[i] + count[j]))
                for i in range(k) for j in range(i + 1, k)]
    if svm_type in REGRESSION:
        return [rng.shuffle(y.shape[0])]
    return None


def cross_validation_folds(y, n_folds, svm_type, probability, rng=None):
    """The folds of a fresh ``svm-train -v n`` process (``rand()`` never seeded),
    or, given ``rng`` (a :class:`GlibcRand` in the state ``rand()`` is in), of
    ``svm_cross_validation`` called then; ``rng`` advances as ``rand()`` would.

    Returns ``(folds, probability folds)``: the held-out rows of each fold
    (:func:`cv_folds`) and, with ``probability`` (``-b 1``), one
    :func:`probability_folds` entry per fold, drawn after the folds and fold
    after fold from the same sequence, as ``svm_cross_validation`` trains
    them; otherwise None.
    """
    y = np.asarray(y, dtype=np.float64)
    if rng is None:
        rng = GlibcRand(1)
    folds = cv_folds(y, n_folds, svm_type, rng)
    if not probability:
        return folds, None
    prob = []
    for i in range(len(folds)):
        # the training rows of fold i in svm_cross_validation's order: the
        # other folds one after the other (the class order depends on it)
        rest = np.concatenate([f for j, f in enumerate(folds) if j != i])
        prob.append(probability_folds(y[rest], svm_type, rng))
    return folds, prob
